#!/bin/sh
# `shardplan sweep`: a small sweep whose answer is known.  gpt-1b (1.316e9
# parameters) on 2 nodes x 4 GPUs with 12 GiB each: mixed-precision Adam
# needs 16 B per parameter over S ranks (ZeRO paper), so S = 1 (19.6 GiB of
# model states) and S = 2 (9.8 GiB + the 2 GiB reserve + buffers) cannot
# fit, S = 4 and S = 8 can; the recommendation is the fastest of those.
SP_TEST_NAME=sweep
. "$SP_SRCDIR/tests/tools/cli-testlib.sh"
topo="$SP_SRCDIR/tests/sim/sweep-small.ini"

"$SHARDPLAN" sweep -m gpt-1b -t "$topo" --nodes 2 --sim-model analytic -f json >"$tmp/j" 2>"$tmp/e" \
  || fail "json sweep exited $?: $(cat "$tmp/e")"
if command -v python3 >/dev/null 2>&1; then
  python3 - "$tmp/j" <<'PY' || fail "json contract"
import json, sys
d = json.load(open(sys.argv[1]))
# DESIGN.md's contract: these keys, rows with these keys (more may be added)
assert {"model", "cluster", "rows", "recommendation"} <= set(d), d.keys()
assert d["model"] == "gpt-1b" and d["cluster"] == "small"
keys = {"nodes", "world_size", "shard_size", "hierarchical", "comm_us", "exposed_comm_us",
        "step_us", "memory_gib", "fits"}
rows = d["rows"]
for r in rows:
    assert keys <= set(r), r.keys()
    assert r["fits"] == (r["memory_gib"] <= 12), r
    assert r["fits"] == (r["shard_size"] >= 4), r
    assert 0 <= r["exposed_comm_us"] <= r["step_us"] and r["comm_us"] > 0
# without ZeRO++: divisors of 8 flat, hierarchical only for S = 8 (S // 4 = 2, 8 % 2 == 0)
plain = [r for r in rows if not r["config"].startswith("ZeRO++")]
assert [(r["shard_size"], r["hierarchical"]) for r in plain] == \
    [(1, False), (2, False), (4, False), (8, False), (8, True)], plain
# ZeRO++ only on ZeRO-3 (S = W flat): qwZ x hpZ {off, 2, 4} x qgZ, less all-off = 11
zpp = [r for r in rows if r["config"].startswith("ZeRO++")]
assert all(r["shard_size"] == 8 and not r["hierarchical"] for r in zpp)
combos = {(r["quantized_weights"], r["hpz_partition_size"], r["quantized_gradients"]) for r in zpp}
assert len(zpp) == len(combos) == 11, combos
assert {z for _, z, _ in combos} == {1, 2, 4}
# the ZeRO++-with-MiCS combinations are counted, not swept: 3 flat S < 8 + S = 8
# hierarchical = 4 layouts x 11 = 44
ns = {n["reason"].split(":")[0]: n for n in d["not_swept"]}
assert ns["ZeRO++ with MiCS"]["count"] == 44 and ns["ZeRO++ with MiCS"]["deepspeed"] == "falls back", ns
assert ns["hierarchical MiCS needs S // D >= 2 and S % (S // D) == 0 (D GPUs per node)"]["count"] == 3
# throughput columns: 8 sequences x 2048 tokens per step (the model's batch x W)
assert d["global_batch"] == 8 and d["seq_len"] == 2048
for r in rows:
    assert r["micro_batch"] == 1 and r["grad_accum"] == 1
    assert abs(r["tokens_per_s"] - 8 * 2048 / (r["step_us"] / 1e6)) <= 1e-6 * r["tokens_per_s"]
    tf = d["model_flops_per_token"] * r["tokens_per_s"] / 8 / 1e12
    assert abs(r["tflops_per_gpu"] - tf) <= 1e-6 * tf, (r, tf)
    assert abs(r["mfu"] - r["tflops_per_gpu"] / 989) <= 1e-9, r
    assert r["inter_node_gb"] > 0
fit = [r for r in rows if r["fits"]]
best = min(fit, key=lambda r: (r["step_us"], r["memory_gib"]))
rec = d["recommendation"]
assert keys | {"why"} <= set(rec)
assert {k: rec[k] for k in best} == best, (rec, best)
assert rec["why"].startswith("fastest step that fits")
second = sorted(fit, key=lambda r: (r["step_us"], r["memory_gib"]))[1]
assert abs(rec["margin_pct"] - (second["step_us"] / best["step_us"] - 1) * 100) < 1e-9
near = [r for r in fit if r is not best and r["step_us"] <= best["step_us"] * 1.1]
assert rec["within_uncertainty"] == len(near) and d["uncertainty_pct"] == 10
PY
else
  echo "python3 not found: JSON contract not checked" >&2
fi

"$SHARDPLAN" sweep -m gpt-1b -t "$topo" --nodes 2 --sim-model analytic >"$tmp/t" 2>"$tmp/e" \
  || fail "text sweep exited $?"
tail -n 1 "$tmp/t" | grep -q '^recommended: ' || fail "text: last line is not 'recommended:'"
"$SHARDPLAN" sweep -m gpt-1b -t "$topo" --nodes 2 --sim-model analytic -f csv >"$tmp/c" 2>/dev/null \
  || fail "csv sweep exited $?"
head -n 1 "$tmp/c" | grep -q '^nodes,world_size,shard_size,hierarchical,comm_us,exposed_comm_us,step_us,memory_gib,fits,' \
  || fail "csv header: the first nine columns"
[ "$(wc -l <"$tmp/c")" -eq 17 ] || fail "csv: expected 16 rows"
"$SHARDPLAN" sweep -m gpt-1b -t "$topo" --nodes 2 --sim-model analytic --zeropp none -f csv 2>/dev/null \
  | cut -d, -f3,4 | tr '\n' ' ' | grep -qx 'shard_size,hierarchical 1,false 2,false 4,false 8,false 8,true ' \
  || fail "--zeropp none: the five MiCS / ZeRO-3 rows"

# Nothing fits: recommendation null / "recommended: none".
sed 's/^memory_gib = 12$/memory_gib = 1/' "$topo" >"$tmp/tiny.ini"
"$SHARDPLAN" sweep -m gpt-1b -t "$tmp/tiny.ini" --nodes 2 --sim-model analytic >"$tmp/t2" 2>/dev/null \
  || fail "tiny sweep exited $?"
tail -n 1 "$tmp/t2" | grep -q '^recommended: none' || fail "tiny: expected 'recommended: none'"
"$SHARDPLAN" sweep -m gpt-1b -t "$tmp/tiny.ini" --nodes 2 --sim-model analytic -f json 2>/dev/null \
  | grep -q '"recommendation" : null' || fail "tiny: recommendation not null"

# Deterministic whatever the thread count.
"$SHARDPLAN" sweep -m gpt-1b -t "$topo" --nodes 1,2 --jobs 1 -f csv >"$tmp/a" 2>/dev/null
"$SHARDPLAN" sweep -m gpt-1b -t "$topo" --nodes 1,2 --jobs 3 -f csv >"$tmp/b" 2>/dev/null
cmp -s "$tmp/a" "$tmp/b" || fail "--jobs changes the output"
# the default global batch (1 x 1 x lcm(4, 8) = 8) suits both node counts:
# 1 node, micro-batch 1 x 2 and 2 x 1; 2 nodes, 1 x 1
[ "$(tail -n +2 "$tmp/a" | cut -d, -f1,14,15 | sort -u | tr '\n' ' ')" = "1,1,2 1,2,1 2,1,1 " ] \
  || fail "--nodes 1,2: node count x micro-batch x accumulation: $(tail -n +2 "$tmp/a" | cut -d, -f1,14,15 | sort -u | tr '\n' ' ')"

# A repeated value is swept once: --nodes 2,2 (and 1,2,1) is --nodes 2
# (1,2), micro-batch 1,1 is 1.
"$SHARDPLAN" sweep -m gpt-1b -t "$topo" --nodes 2,2 --micro-batch 1,1 --jobs 1 -f csv >"$tmp/dup" 2>/dev/null \
  || fail "--nodes 2,2 exited $?"
"$SHARDPLAN" sweep -m gpt-1b -t "$topo" --nodes 2 --micro-batch 1 --jobs 1 -f csv >"$tmp/one" 2>/dev/null
cmp -s "$tmp/dup" "$tmp/one" || fail "--nodes 2,2 --micro-batch 1,1 is not --nodes 2 --micro-batch 1"
"$SHARDPLAN" sweep -m gpt-1b -t "$topo" --nodes 1,2,1 --jobs 1 -f csv >"$tmp/dup" 2>/dev/null
cmp -s "$tmp/dup" "$tmp/a" || fail "--nodes 1,2,1 is not --nodes 1,2"

# Contention: the des default is step; family may only be faster or equal
# (it ignores contention between ops that overlap in time), same memory.
"$SHARDPLAN" sweep -m gpt-1b -t "$topo" --nodes 2 -f csv >"$tmp/step" 2>/dev/null || fail "step sweep"
"$SHARDPLAN" sweep -m gpt-1b -t "$topo" --nodes 2 --contention family -f csv >"$tmp/fam" 2>/dev/null \
  || fail "family sweep"
"$SHARDPLAN" sweep -m gpt-1b -t "$topo" --nodes 2 | head -n 1 | grep -q 'contention step$' \
  || fail "text header: contention"
paste -d, "$tmp/step" "$tmp/fam" | tail -n +2 | awk -F, '
  { h = NF / 2 }
  $5 + 0.001 < $(h + 5) || $7 + 0.001 < $(h + 7) || $8 != $(h + 8) { bad = 1; print "row " NR ": " $0 }
  END { exit bad }' >&2 || fail "step faster than family, or memory differs"

# Micro-batch and accumulation keep the global batch: 16 sequences on 8
# GPUs are micro-batch 1 x 2 steps or 2 x 1; 4 x 8 > 16 is not swept.
"$SHARDPLAN" sweep -m gpt-1b -t "$topo" --nodes 2 --sim-model analytic --zeropp none \
  --global-batch 16 --micro-batch 1,2,4 -f csv >"$tmp/mb" 2>"$tmp/e" || fail "micro-batch sweep: $(cat "$tmp/e")"
[ "$(cut -d, -f14,15 "$tmp/mb" | sort -u | tr '\n' ' ')" = "1,2 2,1 micro_batch,grad_accum " ] \
  || fail "micro-batch x accumulation: $(cut -d, -f14,15 "$tmp/mb" | sort -u | tr '\n' ' ')"
awk -F, 'NR > 1 && $11 != 1 { bad = 1 } NR > 1 { t = 16 * 2048 / ($7 / 1e6); if ($16 < t * 0.9999 || $16 > t * 1.0001) bad = 1 }
  END { exit bad }' "$tmp/mb" || fail "tokens_per_s is not 16 x 2048 / step"
"$SHARDPLAN" sweep -m gpt-1b -t "$topo" --nodes 2 --sim-model analytic --zeropp none \
  --global-batch 16 --micro-batch 1,2,4 | grep -q '^not swept: 1: micro-batch' || fail "micro-batch 4: not counted"

# A listed shard size that does not divide the world (3 of 8 ranks) or
# exceeds it (16) is counted, flat and hierarchical, never dropped silently.
"$SHARDPLAN" sweep -m gpt-1b -t "$topo" --nodes 2 --sim-model analytic --zeropp none \
  --shard-sizes 3,4,16 >"$tmp/t" 2>"$tmp/e" || fail "--shard-sizes 3,4,16: $(cat "$tmp/e")"
grep -q '^not swept: 2 (DeepSpeed rejects): MiCS shard size 3 does not divide the world 8$' "$tmp/t" \
  || fail "--shard-sizes 3: not counted: $(grep '^not swept' "$tmp/t")"
grep -q '^not swept: 2 (DeepSpeed rejects): MiCS shard size 16 does not divide the world 8$' "$tmp/t" \
  || fail "--shard-sizes 16: not counted: $(grep '^not swept' "$tmp/t")"

# Closer than the uncertainty: a note before the recommendation; none at 0 %.
"$SHARDPLAN" sweep -m gpt-1b -t "$topo" --nodes 2 --sim-model analytic >"$tmp/t" 2>/dev/null
grep -q '^note: .* within 10 % of the best step time' "$tmp/t" || fail "no uncertainty note"
grep -q '^runner-up: #' "$tmp/t" || fail "no runner-up line"
# at 0 % only exact ties are left (hpZ changes nothing here but memory)
n10=$(sed -n 's/.*"within_uncertainty" : \([0-9]*\).*/\1/p' "$tmp/j")
n0=$("$SHARDPLAN" sweep -m gpt-1b -t "$topo" --nodes 2 --sim-model analytic --uncertainty 0 -f json 2>/dev/null \
  | sed -n 's/.*"within_uncertainty" : \([0-9]*\).*/\1/p')
[ -n "$n0" ] && [ "$n0" -lt "$n10" ] || fail "--uncertainty 0: $n0 ties, not fewer than $n10 at 10 %"

# --emit-deepspeed-config: the recommendation as a DeepSpeed config that
# `plan --deepspeed-config` reads back into the identical plan (the plan
# built from the recommended row's options).
"$SHARDPLAN" sweep -m gpt-1b -t "$topo" --nodes 2 --sim-model analytic --global-batch 16 \
  --emit-deepspeed-config "$tmp/ds.json" -f json >"$tmp/j2" 2>"$tmp/e" || fail "emit: $(cat "$tmp/e")"
if command -v python3 >/dev/null 2>&1; then
  flags=$(python3 - "$tmp/j2" "$tmp/ds.json" <<'PY'
import json, sys
rec = json.load(open(sys.argv[1]))["recommendation"]
ds = json.load(open(sys.argv[2]))
z = ds["zero_optimization"]
assert z["stage"] == 3
assert z["mics_shard_size"] == (-1 if rec["shard_size"] == rec["world_size"] and not rec["hierarchical"] else rec["shard_size"])
assert z["mics_hierarchical_params_gather"] == rec["hierarchical"]
assert z["zero_quantized_weights"] == rec["quantized_weights"]
assert z["zero_quantized_gradients"] == rec["quantized_gradients"]
assert z["zero_hpz_partition_size"] == rec["hpz_partition_size"]
assert ds["train_micro_batch_size_per_gpu"] == rec["micro_batch"]
assert ds["gradient_accumulation_steps"] == rec["grad_accum"]
assert rec["micro_batch"] * rec["grad_accum"] * rec["world_size"] == 16
f = ["-s", str(rec["shard_size"]), "--micro-batch", str(rec["micro_batch"]), "--grad-accum", str(rec["grad_accum"])]
if rec["hierarchical"]: f.append("--hierarchical")
if rec["quantized_weights"]: f.append("--qwz")
if rec["quantized_gradients"]: f.append("--qgz")
if rec["hpz_partition_size"] > 1: f += ["--hpz", str(rec["hpz_partition_size"])]
print(" ".join(f))
PY
) || fail "emitted config does not match the recommendation"
  # shellcheck disable=SC2086
  "$SHARDPLAN" plan -m gpt-1b -t "$topo" -n 2 $flags -f json >"$tmp/p-flags.json" 2>"$tmp/e" \
    || fail "plan from flags: $(cat "$tmp/e")"
  "$SHARDPLAN" plan -m gpt-1b -t "$topo" -n 2 --deepspeed-config "$tmp/ds.json" -f json >"$tmp/p-ds.json" 2>"$tmp/e" \
    || fail "plan --deepspeed-config: $(cat "$tmp/e")"
  [ ! -s "$tmp/e" ] || fail "plan --deepspeed-config warns: $(cat "$tmp/e")"
  cmp -s "$tmp/p-flags.json" "$tmp/p-ds.json" || fail "round trip: the plans differ"
fi
# Nothing fits: no config, exit 1, no file.
"$SHARDPLAN" sweep -m gpt-1b -t "$tmp/tiny.ini" --nodes 2 --sim-model analytic \
  --emit-deepspeed-config "$tmp/none.json" >/dev/null 2>"$tmp/e"
[ $? -eq 1 ] || fail "emit with nothing fitting: expected exit 1"
[ ! -e "$tmp/none.json" ] || fail "emit with nothing fitting wrote a file"
"$SHARDPLAN" sweep -m gpt-1b -t "$topo" --nodes 2 --sim-model analytic --quiet >/dev/null 2>"$tmp/e" \
  && [ ! -s "$tmp/e" ] || fail "--quiet"

# Defaults agree with plan's (issue 16): a named topology keeps its own node
# count (a preset: 1 host; the NVL72 rack: 18), no topology is dgx-h100 x 16
for case in "-t dgx-h100:1" "-t gb200-nvl72:18" ":16"; do
  args=${case%%:*} want=${case##*:}
  # shellcheck disable=SC2086
  "$SHARDPLAN" sweep $args --zeropp none -s 1 --sim-model analytic --quiet -f csv >"$tmp/d" 2>"$tmp/e" \
    || fail "sweep $args: exit $?: $(cat "$tmp/e")"
  got=$(awk -F, 'NR == 2 { print $1 }' "$tmp/d")
  [ "$got" = "$want" ] || fail "sweep $args: $got nodes, expected $want"
  # shellcheck disable=SC2086
  "$SHARDPLAN" plan $args >"$tmp/d" 2>"$tmp/e" || fail "plan $args: exit $?"
  grep -q ": $want nodes\? x" "$tmp/d" || fail "plan $args: not $want nodes: $(head -1 "$tmp/d")"
done

# Bad input: exit 2, one line.
for args in "--sim-model foo" "--contention x" "--sim-model analytic --contention family" "--nodes 0" "--nodes 2,x" "--format xml" "--plot out.jpg" "--model nosuch" \
  "--global-batch 0" "--global-batch 12" "--micro-batch x" "--micro-batch 0" "--zeropp some" "--hpz 1" "--shard-sizes 3,x" \
  "--uncertainty -1" "--compute-efficiency 0"; do
  # shellcheck disable=SC2086
  "$SHARDPLAN" sweep -t "$topo" $args >/dev/null 2>"$tmp/e"
  st=$?
  [ "$st" -eq 2 ] || fail "sweep $args: exit $st, expected 2"
  [ "$(wc -l <"$tmp/e")" -eq 1 ] || fail "sweep $args: stderr is not one line"
  grep -q '^shardplan sweep: ' "$tmp/e" || fail "sweep $args: stderr prefix"
done
"$SHARDPLAN" sweep --help >/dev/null || fail "--help"

if "$SHARDPLAN" info 2>/dev/null | grep -qi 'cairo.*yes'; then
  "$SHARDPLAN" sweep -m gpt-1b -t "$topo" --nodes 2 --sim-model analytic --plot "$tmp/p.svg" >/dev/null 2>&1 \
    || fail "plot exited $?"
  grep -q '<svg' "$tmp/p.svg" || fail "plot is not an SVG"
fi
# rack-scale NVLink (issue 17): on 2 GB200 NVL72 racks the grid has the
# domain-aligned S = 72 and S = 144; the rows say whether their parameter
# all-gathers stay inside one domain, and the text says it of the
# recommendation
"$SHARDPLAN" sweep -t gb200-nvl72 --nodes 36 --zeropp none -s 16,72 --sim-model analytic \
  --quiet -f json >"$tmp/n" 2>"$tmp/e" || fail "nvl72 sweep exited $?: $(cat "$tmp/e")"
if command -v python3 >/dev/null 2>&1; then
  python3 - "$tmp/n" <<'PY' || fail "nvl72 param_gather_fabric"
import json, sys
d = json.load(open(sys.argv[1]))
f = {(r["shard_size"], r["hierarchical"]): r["param_gather_fabric"] for r in d["rows"]}
assert f[(72, False)] == "nvlink" and f[(16, False)] == "mixed" and f[(144, False)] == "network", f
PY
fi
"$SHARDPLAN" sweep -t gb200-nvl72 --nodes 36 --zeropp none -s 144 --sim-model analytic --quiet \
  >"$tmp/t" 2>"$tmp/e" || fail "nvl72 text sweep exited $?"
grep -q "^nvlink: domains of 72 GPUs (18 nodes); the recommendation's parameter all-gathers cross domains (0 of 1 groups inside one); no fitting configuration of the grid keeps them inside one$" "$tmp/t" \
  || fail "nvl72 text sweep: no nvlink line: $(cat "$tmp/t")"

# a topology's [nccl] is named in the header
"$SHARDPLAN" sweep -t "$SP_SRCDIR/tests/fixtures/topo/valid-nccl.ini" --zeropp none --sim-model analytic \
  --quiet >"$tmp/t" 2>"$tmp/e" || fail "sweep on [nccl] exited $?: $(cat "$tmp/e")"
head -n 1 "$tmp/t" | grep -q ', contention none, NCCL_ALGO=.AllGather:^PAT;AllReduce:Tree,Ring., NCCL_PROTO=^LL128$' \
  || fail "sweep header: $(head -n 1 "$tmp/t")"
# on a calibrated topology: the calibration's standard error of the
# runner-up's margin (JSON margin_std_error), "undetermined" where the two
# steps move differently with a value the fit left undetermined (the
# fixture's LL overhead, on one node without ZeRO++), null without
# calibrated errors
cal="$SP_SRCDIR/tests/fixtures/topo/valid-calibrated.ini"
sed 's/ll_overhead_us undetermined/ll_overhead_us 1.5/' "$cal" >"$tmp/cal-finite.ini"
for t in "$tmp/cal-finite.ini:2:number" "$cal:1:undetermined" "$topo:2:null"; do
  file=${t%%:*} nodes=${t#*:} want=${t##*:}
  nodes=${nodes%:*}
  "$SHARDPLAN" sweep -m gpt-1b -t "$file" --nodes "$nodes" --zeropp none --sim-model analytic -f json \
    >"$tmp/j3" 2>"$tmp/e" || fail "calibrated sweep ($file) exited $?: $(cat "$tmp/e")"
  if command -v python3 >/dev/null 2>&1; then
    python3 - "$tmp/j3" "$want" <<'PY' || fail "margin_std_error ($want): $(head -c 300 "$tmp/e")"
import json, math, sys
se = json.load(open(sys.argv[1]))["recommendation"]["margin_std_error"]
want = sys.argv[2]
if want == "number":
    assert isinstance(se, float) and math.isfinite(se) and se > 0, se
elif want == "undetermined":
    assert se == "undetermined", se
else:
    assert se is None, se
PY
  fi
done
# the number against an independent one: each fitted value moved in the
# INI, the two rows' steps read back, the quadratic form by hand
if command -v python3 >/dev/null 2>&1; then
  python3 - "$SHARDPLAN" "$tmp/cal-finite.ini" "$tmp" "$SP_SRCDIR/tests/tools" <<'PY' || fail "margin_std_error against an independent computation"
import json, math, subprocess, sys
sp, path, tmp = sys.argv[1:4]
sys.path.insert(0, sys.argv[4])
from calib_delta import std_error
ini = open(path).read()
def sweep(text):
    p = tmp + "/moved.ini"
    open(p, "w").write(text)
    out = subprocess.run([sp, "sweep", "-m", "gpt-1b", "-t", p, "--nodes", "2", "--zeropp", "none",
                          "--sim-model", "analytic", "-f", "json"], capture_output=True, text=True,
                         check=True)
    d = json.loads(out.stdout)
    return d, {r["config"]: r["step_us"] for r in d["rows"]}
d0, _ = sweep(ini)
rec = d0["recommendation"]
best, runner = rec["config"], rec["runner_up"]
def log_margin(text):
    t = sweep(text)[1]
    return math.log(t[runner] / t[best])
want = std_error(ini, log_margin)
got = rec["margin_std_error"]
assert abs(got - want) <= 1e-3 * want, (got, want)
PY
fi
"$SHARDPLAN" sweep -m gpt-1b -t "$tmp/cal-finite.ini" --nodes 2 --zeropp none --sim-model analytic \
  --quiet >"$tmp/t" 2>"$tmp/e" || fail "calibrated text sweep exited $?"
grep -q "^note: the calibration's standard error of that margin: [0-9.]* % (the fitted values' errors, not the model's, which may still reverse it); the margin is beyond two of them" "$tmp/t" \
  || fail "calibrated text sweep: no margin note: $(cat "$tmp/t")"
"$SHARDPLAN" sweep -m gpt-1b -t "$cal" --nodes 1 --zeropp none --sim-model analytic --quiet \
  >"$tmp/t" 2>"$tmp/e" || fail "undetermined text sweep exited $?"
grep -q "^note: the calibration does not determine that margin" "$tmp/t" \
  || fail "undetermined text sweep: $(cat "$tmp/t")"
# two steps that move alike (ZeRO++ qwZ and qwZ+hpZ=8 on 2 nodes: equal)
"$SHARDPLAN" sweep -m gpt-1b -t "$cal" --nodes 2 --sim-model analytic --quiet \
  >"$tmp/t" 2>"$tmp/e" || fail "alike text sweep exited $?"
grep -q "^note: the calibration's values move both steps alike" "$tmp/t" \
  || fail "alike text sweep: $(cat "$tmp/t")"
"$SHARDPLAN" sweep -m gpt-1b -t "$cal" --nodes 2 --zeropp none --sim-model nccl --quiet \
  >"$tmp/t" 2>"$tmp/e" || fail "nccl-model sweep exited $?"
grep -q "calibration" "$tmp/t" && fail "the nccl model reads no calibration: $(cat "$tmp/t")"
[ "$failures" -eq 0 ]
