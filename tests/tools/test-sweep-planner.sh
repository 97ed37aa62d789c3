#!/bin/sh
# `shardplan sweep` as a planner (issue 11): the MoE expert-parallel axis and
# `--deepspeed-config`.  A 12-expert model on 2 nodes x 4 GPUs (W = 8):
# DeepSpeed takes ep = 1, 2, 4 (ep divides the experts and the world; 8 does
# not divide 12), and every row is the simulation of the plan that
# `shardplan plan --expert-parallel ep` builds.  Then a user's DeepSpeed
# config: its step-model settings reach every row and the emitted config,
# the keys the grid varies are overridden with one note.
SP_TEST_NAME=sweep-planner
. "$SP_SRCDIR/tests/tools/cli-testlib.sh"
topo="$SP_SRCDIR/tests/sim/sweep-small.ini"
cat >"$tmp/moe12.json" <<'EOF'
{"name": "moe-12", "layers": 4, "hidden": 64, "heads": 4, "vocab": 256, "seq_len": 32,
 "moe": {"experts": 12, "every": 2, "top_k": 2}}
EOF
have_py=false
command -v python3 >/dev/null 2>&1 && have_py=true
sweep () { "$SHARDPLAN" sweep -m "$tmp/moe12.json" -t "$topo" -n 2 --sim-model analytic --quiet "$@"; }

# -- the grid: ep in {1, 2, 4}, each with the whole sharding grid ----------
sweep -f json >"$tmp/j" 2>"$tmp/e" || fail "moe sweep exited $?: $(cat "$tmp/e")"
sweep --zeropp none -f csv >"$tmp/c" 2>"$tmp/e" || fail "moe csv sweep exited $?: $(cat "$tmp/e")"
if $have_py; then
  python3 - "$tmp/j" <<'PY' || fail "moe grid"
import json, sys
d = json.load(open(sys.argv[1]))
rows = d["rows"]
eps = sorted({r["expert_parallel_size"] for r in rows})
assert eps == [1, 2, 4], eps
# the same sharding grid for every ep
grid = lambda e: sorted((r["shard_size"], r["hierarchical"], r["hpz_partition_size"],
                         r["quantized_weights"], r["quantized_gradients"])
                        for r in rows if r["expert_parallel_size"] == e)
assert grid(1) == grid(2) == grid(4) and len(grid(1)) > 5, (grid(1), grid(2))
for r in rows:
    e = r["expert_parallel_size"]
    assert (" ep=%d" % e in r["config"]) == (e > 1), r["config"]
ns = {n["reason"]: n for n in d["not_swept"]}
k = "expert-parallel size must divide the number of experts (moe/layer.py)"
assert ns[k]["count"] == 1 and ns[k]["deepspeed"] == "rejects", ns
assert "expert_parallel_size" in d["recommendation"]
PY
fi
head -n 1 "$tmp/c" | grep -q ',expert_parallel_size$' || fail "csv: no expert_parallel_size column last"
[ "$(tail -n +2 "$tmp/c" | awk -F, '{ print $NF }' | sort -u | tr '\n' ' ')" = "1 2 4 " ] \
  || fail "csv: expert-parallel sizes $(tail -n +2 "$tmp/c" | awk -F, '{ print $NF }' | sort -u | tr '\n' ' ')"
sweep --zeropp none >"$tmp/t" 2>/dev/null || fail "moe text sweep"
grep -q '^moe: 12 experts; ep = .*ep_size=ep) argument (not a config key)' "$tmp/t" || fail "text: no moe line"
grep -q ' hierarchical    ep  mb ' "$tmp/t" || fail "text: no ep column"
# a dense model's text has no ep column (the default output is unchanged)
"$SHARDPLAN" sweep -m gpt-1b -t "$topo" -n 2 --sim-model analytic --zeropp none --quiet 2>/dev/null \
  | grep -q ' hierarchical    ep ' && fail "dense model: an ep column"

# narrowing: --expert-parallel 4 (and the --ep alias), 1,2; 3 and 8 are counted, not swept
[ "$(sweep --zeropp none --expert-parallel 4 -f csv | tail -n +2 | awk -F, '{ print $NF }' | sort -u)" = 4 ] \
  || fail "--expert-parallel 4"
[ "$(sweep --zeropp none --ep 1,2 -f csv | tail -n +2 | awk -F, '{ print $NF }' | sort -u | tr '\n' ' ')" = "1 2 " ] \
  || fail "--ep 1,2"
sweep --zeropp none --expert-parallel 2,3,8 >"$tmp/t" 2>/dev/null || fail "--expert-parallel 2,3,8"
grep -q '^not swept: 1 (DeepSpeed rejects): expert-parallel size must divide the world' "$tmp/t" \
  || fail "ep 3: not counted as rejected for the world"
grep -q '^not swept: 1 (DeepSpeed rejects): expert-parallel size must divide the number of experts' "$tmp/t" \
  || fail "ep 8: not counted as rejected for the experts"
[ "$(sweep --zeropp none --expert-parallel all -f csv | md5sum)" = "$(md5sum <"$tmp/c")" ] || fail "--expert-parallel all is not the default"

# each row's plan is plan --expert-parallel ep's: the same step in the
# simulator, the expert family of ep ranks in the plan's groups
if $have_py; then
  for ep in 1 2 4; do
    "$SHARDPLAN" plan -m "$tmp/moe12.json" -t "$topo" -n 2 --expert-parallel "$ep" -o "$tmp/p$ep.json" \
      >/dev/null 2>"$tmp/e" || fail "plan --expert-parallel $ep: $(cat "$tmp/e")"
    "$SHARDPLAN" sim --plan "$tmp/p$ep.json" -t "$topo" -n 2 --sim-model analytic -f json >"$tmp/s$ep.json" \
      2>"$tmp/e" || fail "sim ep $ep: $(cat "$tmp/e")"
  done
  python3 - "$tmp" <<'PY' || fail "rows against plan + sim"
import json, sys
t = sys.argv[1]
rows = json.load(open(t + "/j"))["rows"]
steps = {}
for ep in (1, 2, 4):
    p = json.load(open("%s/p%d.json" % (t, ep)))
    assert p["groups"]["expert_parallel"] == (ep if ep > 1 else 0) or (ep == 1 and p["groups"]["expert_parallel"] in (0, 1)), p["groups"]
    a2a = [o for o in p["ops"] if o["family"] == "expert"]
    assert (len(a2a) > 0) == (ep > 1), (ep, len(a2a))
    s = json.load(open("%s/s%d.json" % (t, ep)))
    z3 = [r for r in rows if r["config"] == "ZeRO-3" + (" ep=%d" % ep if ep > 1 else "")]
    assert len(z3) == 1, z3
    assert abs(z3[0]["step_us"] - s["step_us"]) <= 1e-6 * s["step_us"], (ep, z3[0]["step_us"], s["step_us"])
    steps[ep] = s["step_us"]
assert len(set(steps.values())) == 3, steps  # ep changes the step
PY
  "$SHARDPLAN" groups -t "$topo" -n 2 --expert-parallel 4 -f json >"$tmp/g" 2>"$tmp/e" || fail "groups: $(cat "$tmp/e")"
  python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["families"]["expert"]; assert all(len(g)==4 for g in f) and len(f)==2, f' "$tmp/g" \
    || fail "expert family of ep = 4: not 2 groups of 4"
fi

# the recommendation with ep > 1: the emitted file + the printed command
# (which carries --expert-parallel: ep_size is a layer argument, not a
# config key) rebuild the plan of the row
sweep --zeropp none --expert-parallel 4 --emit-deepspeed-config "$tmp/ds-ep.json" >"$tmp/t" 2>"$tmp/e" \
  || fail "emit with ep: $(cat "$tmp/e")"
grep -q "^deepspeed config: ep_size is not a config key: build the MoE layers with deepspeed.moe.layer.MoE(..., ep_size=4)$" "$tmp/t" \
  || fail "emit: no ep_size line"
cmd=$(sed -n "s/^deepspeed config: written; this command rebuilds its plan: \(.*\)$/\1/p" "$tmp/t")
case $cmd in *" --expert-parallel 4 --deepspeed-config $tmp/ds-ep.json") ;; *) fail "rebuild command: '$cmd'" ;; esac
grep -q 'ep_size\|expert' "$tmp/ds-ep.json" && fail "the emitted config has an expert key DeepSpeed does not read"
if $have_py && [ -n "$cmd" ]; then
  sweep --zeropp none --expert-parallel 4 -f json >"$tmp/j4" 2>/dev/null
  flags=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["recommendation"]
f = ["-s", str(r["shard_size"]), "--micro-batch", str(r["micro_batch"]), "--grad-accum", str(r["grad_accum"]),
     "--expert-parallel", str(r["expert_parallel_size"])]
if r["hierarchical"]: f.append("--hierarchical")
print(" ".join(f))' "$tmp/j4")
  # shellcheck disable=SC2086
  "$SHARDPLAN" plan -m "$tmp/moe12.json" -t "$topo" -n 2 $flags -f json >"$tmp/pf.json" 2>"$tmp/e" || fail "plan flags: $(cat "$tmp/e")"
  # the printed command, with its -m/-t as given and -f json
  cmd=$(echo "$cmd" | sed "s|^shardplan |\"$SHARDPLAN\" |")
  eval "$cmd -f json" >"$tmp/pc.json" 2>"$tmp/e" || fail "rebuild command failed: $(cat "$tmp/e")"
  [ ! -s "$tmp/e" ] || fail "rebuild command warns: $(cat "$tmp/e")"
  cmp -s "$tmp/pf.json" "$tmp/pc.json" || fail "ep round trip: the plans differ"
fi

# -- --deepspeed-config: the user's step-model settings ---------------------
cat >"$tmp/user.json" <<'EOF'
{"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2,
 "zero_optimization": {"stage": 2, "mics_shard_size": 2, "zero_quantized_weights": true,
   "overlap_comm": false, "contiguous_gradients": false, "reduce_bucket_size": 1e5,
   "stage3_prefetch_bucket_size": 0, "stage3_max_live_parameters": 3e8,
   "stage3_max_reuse_distance": 0, "stage3_param_persistence_threshold": 0}}
EOF
g1="-m gpt-1b -t $topo -n 2 --sim-model analytic --zeropp none -s 8 --quiet"
# shellcheck disable=SC2086
"$SHARDPLAN" sweep $g1 --deepspeed-config "$tmp/user.json" -f json >"$tmp/du" 2>"$tmp/e" || fail "sweep -c: $(cat "$tmp/e")"
[ "$(wc -l <"$tmp/e")" -eq 1 ] || fail "sweep -c: stderr is not one note: $(cat "$tmp/e")"
grep -q "^shardplan sweep: note: $tmp/user.json sets train_micro_batch_size_per_gpu, gradient_accumulation_steps, zero_optimization.stage, zero_optimization.mics_shard_size, zero_optimization.zero_quantized_weights: the sweep varies these itself" "$tmp/e" \
  || fail "sweep -c: the note: $(cat "$tmp/e")"
# shellcheck disable=SC2086
"$SHARDPLAN" sweep $g1 -f json >"$tmp/dd" 2>/dev/null || fail "sweep without -c"
# shellcheck disable=SC2086
"$SHARDPLAN" sweep $g1 -c "$tmp/user.json" --emit-deepspeed-config "$tmp/emit.json" >"$tmp/t" 2>/dev/null \
  || fail "sweep -c text"
grep -q "^deepspeed settings (from $tmp/user.json): overlap_comm false, contiguous_gradients false, reduce_bucket_size 100000, stage3_prefetch_bucket_size 0, stage3_max_live_parameters 300000000, stage3_max_reuse_distance 0, stage3_param_persistence_threshold 0$" "$tmp/t" \
  || fail "sweep -c: the header does not name the settings"
# shellcheck disable=SC2086
"$SHARDPLAN" sweep $g1 | grep -q "^deepspeed settings (DeepSpeed's defaults; --deepspeed-config FILE): overlap_comm true, contiguous_gradients true, reduce_bucket_size 500000000," \
  || fail "sweep: the header does not name DeepSpeed's defaults"
if $have_py; then
  python3 - "$tmp/du" "$tmp/dd" "$tmp/emit.json" "$tmp/user.json" <<'PY' || fail "sweep -c: rows and emitted config"
import json, sys
du, dd, emit = (json.load(open(f)) for f in sys.argv[1:4])
assert du["deepspeed_config"] == sys.argv[4] and dd["deepspeed_config"] is None
s = du["deepspeed_settings"]
assert s == {"overlap_comm": False, "contiguous_gradients": False, "reduce_bucket_size": 100000,
             "allgather_bucket_size": 500000000, "stage3_prefetch_bucket_size": 0,
             "stage3_max_live_parameters": 300000000, "stage3_max_reuse_distance": 0,
             "stage3_param_persistence_threshold": 0}, s
# the grid, not the file, decides layout and batch: the same rows as without -c
key = lambda r: (r["shard_size"], r["hierarchical"], r["micro_batch"], r["grad_accum"], r["quantized_weights"])
assert [key(r) for r in du["rows"]] == [key(r) for r in dd["rows"]]
assert all(r["micro_batch"] == 1 and r["grad_accum"] == 1 for r in du["rows"])
# overlap_comm off and no prefetch: every step slower; a 1e5 bucket and no
# contiguous buffer: less memory (the flat buffer was 5e8 x 2 B)
for a, b in zip(du["rows"], dd["rows"]):
    assert a["step_us"] > b["step_us"], (a, b)
    assert a["memory_gib"] < b["memory_gib"] - 0.9, (a["memory_gib"], b["memory_gib"])
z = emit["zero_optimization"]
for k in ("overlap_comm", "contiguous_gradients", "reduce_bucket_size", "stage3_prefetch_bucket_size",
          "stage3_max_live_parameters", "stage3_max_reuse_distance", "stage3_param_persistence_threshold"):
    assert z[k] == s[k], (k, z[k], s[k])
assert z["stage"] == 3 and emit["train_micro_batch_size_per_gpu"] == du["recommendation"]["micro_batch"]
PY
  # the emitted config rebuilds the recommended row's plan: its simulated step is the row's
  "$SHARDPLAN" plan -m gpt-1b -t "$topo" -n 2 -c "$tmp/emit.json" -o "$tmp/pe.json" >/dev/null 2>"$tmp/e" \
    || fail "plan -c emitted: $(cat "$tmp/e")"
  grep -q warning "$tmp/e" && fail "plan -c emitted warns: $(cat "$tmp/e")"
  "$SHARDPLAN" sim --plan "$tmp/pe.json" -t "$topo" -n 2 --sim-model analytic -f json >"$tmp/se" 2>/dev/null
  python3 -c '
import json, sys
rec = json.load(open(sys.argv[1]))["recommendation"]; s = json.load(open(sys.argv[2]))
assert abs(rec["step_us"] - s["step_us"]) <= 1e-6 * s["step_us"], (rec["step_us"], s["step_us"])' "$tmp/du" "$tmp/se" \
    || fail "sweep -c: the emitted config does not rebuild the recommended row"
fi

# bad input: exit 2, one line
for args in "--expert-parallel 0" "--expert-parallel x" "-m gpt-1b --expert-parallel 2"; do
  # shellcheck disable=SC2086
  "$SHARDPLAN" sweep -m "$tmp/moe12.json" -t "$topo" -n 2 $args >/dev/null 2>"$tmp/e"
  st=$?
  [ "$st" -eq 2 ] || fail "sweep $args: exit $st, expected 2"
  [ "$(wc -l <"$tmp/e")" -eq 1 ] || fail "sweep $args: stderr is not one line: $(cat "$tmp/e")"
done
# every size asked for rejected: the reason, not the batch (12 experts, 8 GPUs)
"$SHARDPLAN" sweep -m "$tmp/moe12.json" -t "$topo" -n 2 --expert-parallel 8,5 -q >/dev/null 2>"$tmp/e"
st=$?
{ [ "$st" -eq 2 ] && [ "$(wc -l <"$tmp/e")" -eq 1 ] \
  && grep -q "DeepSpeed accepts none of the expert-parallel sizes --expert-parallel 8,5 .* (12 experts) .*(8: expert-parallel size must divide the number of experts" "$tmp/e"; } \
  || fail "sweep --expert-parallel 8,5: exit $st, $(cat "$tmp/e")"
# an unreadable file is bad input: as plan -c, exit 2, one line naming it
"$SHARDPLAN" sweep -t "$topo" -n 2 -c "$tmp/nosuch.json" >/dev/null 2>"$tmp/e"
st=$?
{ [ "$st" -eq 2 ] && [ "$(wc -l <"$tmp/e")" -eq 1 ] && grep -q "nosuch.json" "$tmp/e"; } \
  || fail "missing --deepspeed-config: exit $st, $(cat "$tmp/e")"
printf '{"zero_optimization": {"overlap_comm": "yes"}}' >"$tmp/bad.json"
"$SHARDPLAN" sweep -m gpt-1b -t "$topo" -n 2 -c "$tmp/bad.json" >/dev/null 2>"$tmp/e"
st=$?
{ [ "$st" -eq 2 ] && grep -q 'overlap_comm' "$tmp/e"; } || fail "bad overlap_comm: exit $st, $(cat "$tmp/e")"
finish
