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
assert set(d) == {"model", "cluster", "rows", "recommendation"}, d.keys()
assert d["model"] == "gpt-1b" and d["cluster"] == "small"
keys = {"nodes", "world_size", "shard_size", "hierarchical", "comm_us", "exposed_comm_us",
        "step_us", "memory_gib", "fits"}
rows = d["rows"]
# divisors of 8 flat, hierarchical only for S = 8 (S // 4 = 2, 8 % 2 == 0)
assert [(r["shard_size"], r["hierarchical"]) for r in rows] == \
    [(1, False), (2, False), (4, False), (8, False), (8, True)], rows
for r in rows:
    assert set(r) == keys, r.keys()
    assert r["fits"] == (r["memory_gib"] <= 12), r
    assert r["fits"] == (r["shard_size"] >= 4), r
    assert 0 <= r["exposed_comm_us"] <= r["step_us"] and r["comm_us"] > 0
fit = [r for r in rows if r["fits"]]
best = min(fit, key=lambda r: r["step_us"])
rec = d["recommendation"]
assert set(rec) == keys | {"why"}
assert {k: rec[k] for k in keys} == best, (rec, best)
assert rec["why"].startswith("fastest step that fits")
PY
else
  echo "python3 not found: JSON contract not checked" >&2
fi

"$SHARDPLAN" sweep -m gpt-1b -t "$topo" --nodes 2 --sim-model analytic >"$tmp/t" 2>"$tmp/e" \
  || fail "text sweep exited $?"
tail -n 1 "$tmp/t" | grep -q '^recommended: ' || fail "text: last line is not 'recommended:'"
"$SHARDPLAN" sweep -m gpt-1b -t "$topo" --nodes 2 --sim-model analytic -f csv >"$tmp/c" 2>/dev/null \
  || fail "csv sweep exited $?"
head -n 1 "$tmp/c" | grep -q '^nodes,world_size,shard_size,hierarchical,comm_us,exposed_comm_us,step_us,memory_gib,fits$' \
  || fail "csv header"
[ "$(wc -l <"$tmp/c")" -eq 6 ] || fail "csv: expected 5 rows"

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

# Contention: the des default is step; family may only be faster or equal
# (it ignores contention between ops that overlap in time), same memory.
"$SHARDPLAN" sweep -m gpt-1b -t "$topo" --nodes 2 -f csv >"$tmp/step" 2>/dev/null || fail "step sweep"
"$SHARDPLAN" sweep -m gpt-1b -t "$topo" --nodes 2 --contention family -f csv >"$tmp/fam" 2>/dev/null \
  || fail "family sweep"
"$SHARDPLAN" sweep -m gpt-1b -t "$topo" --nodes 2 | head -n 1 | grep -q 'contention step$' \
  || fail "text header: contention"
paste -d, "$tmp/step" "$tmp/fam" | tail -n +2 | awk -F, '
  $5 + 0.001 < $14 || $7 + 0.001 < $16 || $8 != $17 { bad = 1; print "row " NR ": " $0 }
  END { exit bad }' >&2 || fail "step faster than family, or memory differs"

# Bad input: exit 2, one line.
for args in "--sim-model foo" "--contention x" "--sim-model analytic --contention family" "--nodes 0" "--nodes 2,x" "--format xml" "--plot out.jpg" "--model nosuch"; do
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
[ "$failures" -eq 0 ]
