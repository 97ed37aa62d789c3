#!/bin/sh
# `shardplan sim`: trace rows, byte-identical reruns, summary, bad input.
SP_TEST_NAME=sim
. "$SP_SRCDIR/tests/tools/cli-testlib.sh"
topo="$SP_SRCDIR/tests/sim/sweep-small.ini"

"$SHARDPLAN" plan -m gpt-1b -t "$topo" -s 4 -o "$tmp/plan.json" >/dev/null || exit 99
n_ops=$(grep -c '"id": ' "$tmp/plan.json")
"$SHARDPLAN" sim --plan "$tmp/plan.json" -t "$topo" -o "$tmp/a.h5" >"$tmp/out" 2>"$tmp/e" \
  || fail "sim exited $?: $(cat "$tmp/e")"
grep -q '^step time: ' "$tmp/out" || fail "no step time"
grep -q '^exposed communication: ' "$tmp/out" || fail "no exposed communication"
grep -q '^longest ops (top 20 of ' "$tmp/out" || fail "no top-20 list"
# times for people: s/ms/µs with 4 significant digits, "1 node"; the
# longest op name sets the name column (every time ends in one column)
grep -Eq '^step time: +[0-9]+\.[0-9]+ (s|ms|µs|us)$' "$tmp/out" || fail "step time: $(grep '^step time' "$tmp/out")"
awk '/^step time:/ { v = $3; sub(/\./, "", v); if (length(v) != 4) bad = 1 } END { exit bad }' "$tmp/out" \
  || fail "step time is not 4 significant digits: $(grep '^step time' "$tmp/out")"
sed -n '/^longest ops/,$p' "$tmp/out" | tail -n +2 | grep -v '^note:' | awk '{ print length($0) }' | sort -u >"$tmp/widths"
[ "$(wc -l <"$tmp/widths")" -le 2 ] || fail "longest ops: ragged rows: $(tr '\n' ' ' <"$tmp/widths")"
"$SHARDPLAN" plan -m gpt-1b -t dgx-h100 -n 1 -o "$tmp/one.json" >"$tmp/one-plan" || fail "plan 1 node"
grep -q ' on dgx-h100: 1 node x 8 GPUs = 8 ranks$' "$tmp/one-plan" || fail "plan: $(head -n 1 "$tmp/one-plan")"
"$SHARDPLAN" sim --plan "$tmp/one.json" -t dgx-h100 -n 1 >"$tmp/one-sim" || fail "sim 1 node"
grep -q ': 1 node x 8 GPUs' "$tmp/one-sim" || fail "sim: $(head -n 1 "$tmp/one-sim")"

# Without --topology, sim takes the preset and node count the plan records;
# a node count that does not fit the plan names the --nodes that does.
"$SHARDPLAN" sim --plan "$tmp/one.json" >"$tmp/one-sim2" 2>"$tmp/e" || fail "sim without -t: $(cat "$tmp/e")"
cmp -s "$tmp/one-sim" "$tmp/one-sim2" || fail "sim without -t is not sim -t dgx-h100 -n 1"
"$SHARDPLAN" plan -m gpt-1b -t dgx-h100 -n 2 -o "$tmp/two.json" >/dev/null || fail "plan 2 nodes"
"$SHARDPLAN" sim --plan "$tmp/two.json" -f json >"$tmp/two-j" 2>"$tmp/e" || fail "sim 2 nodes without -t: $(cat "$tmp/e")"
grep -q '"topology":"dgx-h100","world_size":16' "$tmp/two-j" || fail "sim without -t: $(head -c 80 "$tmp/two-j")"
# --topology naming the plan's own preset takes its node count too.
"$SHARDPLAN" sim --plan "$tmp/two.json" -t dgx-h100 -f json >"$tmp/two-j2" 2>"$tmp/e" \
  || fail "sim 2 nodes with -t dgx-h100 and no --nodes: $(cat "$tmp/e")"
cmp -s "$tmp/two-j" "$tmp/two-j2" || fail "sim -t dgx-h100 (the plan's preset) is not sim without -t"
# A plan made on a file that shares a preset's name never runs on the
# preset: the topology_sha256 it records differs, so --topology is needed.
sed 's/^name = .*/name = p4d/' "$topo" >"$tmp/named-p4d.ini"
"$SHARDPLAN" plan -m gpt-1b -t "$tmp/named-p4d.ini" -o "$tmp/np.json" >/dev/null 2>&1 || fail "plan on named-p4d.ini"
grep -q '"topology_sha256": "[0-9a-f]\{64\}"' "$tmp/np.json" || fail "plan: no topology_sha256 in meta"
"$SHARDPLAN" sim --plan "$tmp/np.json" -o "$tmp/np.h5" >/dev/null 2>"$tmp/e"
st=$?
[ "$st" -eq 2 ] || fail "sim of a plan made on a file named like a preset: exit $st, expected 2"
grep -qF "was planned on a topology named 'p4d' whose recorded topology_sha256 is not this build's preset of that name" "$tmp/e" \
  || fail "sim of a plan made on named-p4d.ini: $(cat "$tmp/e")"
[ "$(wc -l <"$tmp/e")" -eq 1 ] || fail "sim of a plan made on named-p4d.ini: more than one line"
[ ! -e "$tmp/np.h5" ] || fail "sim of a plan made on named-p4d.ini: left an output file"
"$SHARDPLAN" sim --plan "$tmp/np.json" -t "$tmp/named-p4d.ini" >/dev/null 2>"$tmp/e" \
  || fail "sim with the plan's own file: $(cat "$tmp/e")"
# A plan that records no digest (older, or written by hand) still runs on
# the preset it names, with a warning that it may not be its topology.
sed 's/, "topology_sha256": "[0-9a-f]*"//' "$tmp/two.json" >"$tmp/two-old.json"
grep -q topology_sha256 "$tmp/two-old.json" && fail "could not strip topology_sha256"
"$SHARDPLAN" sim --plan "$tmp/two-old.json" -f json >"$tmp/two-j3" 2>"$tmp/e" || fail "sim of a plan without digest: $(cat "$tmp/e")"
grep -q "warning: .*records no topology_sha256" "$tmp/e" || fail "no warning for a plan without digest: $(cat "$tmp/e")"
# nccl-tests' plan (--plan-out) records its topology: sim needs no --topology.
"$SHARDPLAN" trace import-nccl-tests "$SP_SRCDIR/tests/fixtures/nccltests/all_reduce-2019.txt" \
  --topology p3dn -o "$tmp/ar.h5" --plan-out "$tmp/ar.json" >/dev/null 2>&1 || fail "import-nccl-tests"
"$SHARDPLAN" sim --plan "$tmp/ar.json" -f json >"$tmp/ar-j" 2>"$tmp/e" \
  || fail "sim of an imported nccl-tests plan without -t: $(cat "$tmp/e")"
grep -q '"topology":"p3dn"' "$tmp/ar-j" || fail "sim of the imported plan: $(head -c 80 "$tmp/ar-j")"
"$SHARDPLAN" plan -m gpt-1b -t "$topo" -n 1 -o "$tmp/four.json" >/dev/null || fail "plan 4 ranks"
for case in "--plan $tmp/one.json --nodes 3|has 8 ranks but dgx-h100 with 3 nodes x 8 GPUs has 24: --nodes 1 matches" \
            "--plan $tmp/two.json -t p4d|has 16 ranks but p4d with 1 node x 8 GPUs has 8: --nodes 2 matches" \
            "--plan $tmp/four.json -t dgx-h100|no --nodes matches: 4 is not a multiple of 8 GPUs per node" \
            "--plan $tmp/plan.json|planned on topology 'small' (small x 2 nodes), which is not a preset: give its INI file"; do
  args=${case%%|*}
  want=${case#*|}
  # shellcheck disable=SC2086
  "$SHARDPLAN" sim $args -o "$tmp/bad.h5" >/dev/null 2>"$tmp/e"
  st=$?
  [ "$st" -eq 2 ] || fail "sim $args: exit $st, expected 2"
  grep -qF -- "$want" "$tmp/e" || fail "sim $args: '$(cat "$tmp/e")' lacks '$want'"
  [ ! -e "$tmp/bad.h5" ] || fail "sim $args: left an output file"
done
# Every family of an S = 4 layout on 8 ranks covers every rank: one row per
# (op, rank) = ops x 8.
"$SHARDPLAN" trace show "$tmp/a.h5" >"$tmp/show" 2>&1 || fail "trace show exited $?"
grep -q "ops: *$n_ops distinct op ids, $((n_ops * 8)) rows" "$tmp/show" \
  || fail "row count: $(grep '^ops:' "$tmp/show"), expected $n_ops ops x 8"
grep -q 'source: *simulated, by shardplan sim' "$tmp/show" || fail "source/producer"
grep -q '^timing: .*, 1 iteration after 0 warm-up$' "$tmp/show" || fail "trace show: $(grep '^timing' "$tmp/show")"
grep -Eq '^span: +[0-9]+\.[0-9]+ (s|ms|µs|us) \(first' "$tmp/show" || fail "trace show: $(grep '^span' "$tmp/show")"
"$SHARDPLAN" estimate -t dgx-h100 -c all_reduce -b 1M >"$tmp/est" || fail "estimate"
grep -q '^# shardplan estimate: dgx-h100, 1 node x 8 ranks = 8 ranks' "$tmp/est" || fail "estimate: $(head -n 1 "$tmp/est")"
# The GPU model by name, case-insensitively; a model the simulator does not
# know gets a note saying how it is costed (once), a known one none.
gpu_ini () {
  printf '[cluster]\nname = g\nnodes = 2\ngpus_per_node = 8\n[gpu]\nmodel = %s\nmemory_gib = 80\ntflops = 989\n[intra]\nkind = nvswitch\nbandwidth_gbs = 450\n[inter]\nnics_per_node = 8\nnic_gbps = 400\n' "$1" >"$tmp/g.ini"
}
gpu_ini H100-SXM5-80GB
"$SHARDPLAN" estimate -t "$tmp/g.ini" -c all_reduce -b 1G >"$tmp/upper" 2>"$tmp/err" || fail "estimate H100"
[ -s "$tmp/err" ] && fail "estimate H100: stderr: $(cat "$tmp/err")"
gpu_ini h100-sxm5-80gb
"$SHARDPLAN" estimate -t "$tmp/g.ini" -c all_reduce -b 1G >"$tmp/lower" 2>"$tmp/err" || fail "estimate h100"
[ -s "$tmp/err" ] && fail "estimate h100: stderr: $(cat "$tmp/err")"
cmp -s "$tmp/upper" "$tmp/lower" || fail "model h100 is not costed as H100: $(tail -n 1 "$tmp/lower") vs $(tail -n 1 "$tmp/upper")"
gpu_ini MI300X
"$SHARDPLAN" sweep -t "$tmp/g.ini" --nodes 1,2 >/dev/null 2>"$tmp/err" || fail "sweep MI300X: $(cat "$tmp/err")"
[ "$(grep -c "note: \[gpu\] model 'MI300X' is not a GPU the simulator knows by name (GB200, GB300, B100, B200, B300, GH200, H100, H800, H200, H20, A100, A800, V100, L40S, L40, L4, A10G, A10, A40, A30, T4, P100, RTX PRO 6000): it is costed with the A100's generation constants, and kernels without FLOPs at 1000 GB/s of memory bandwidth (\[gpu\] memory_bandwidth_gbs sets it)" "$tmp/err")" -eq 1 ] \
  || fail "unknown GPU model: not one note: $(head -c 600 "$tmp/err")"
"$SHARDPLAN" sim --plan "$tmp/plan.json" -t "$topo" -o "$tmp/b.h5" >/dev/null 2>&1
cmp -s "$tmp/a.h5" "$tmp/b.h5" || fail "two runs are not byte-identical"
"$SHARDPLAN" sim --plan "$tmp/plan.json" -t "$topo" -f json >"$tmp/j" 2>/dev/null || fail "json"
grep -q '"step_us"' "$tmp/j" || fail "json: no step_us"
# fixed units, shortest round-trip decimals: no "%.17g" tails like 51676.296000000002
grep -Eq '[0-9]\.[0-9]*(0000000|9999999)[0-9]' "$tmp/j" && fail "json: %.17g digits: $(grep -Eo '[0-9]+\.[0-9]*(0000000|9999999)[0-9]+' "$tmp/j" | head -n 1)"

# Contention models: step is the des default, family and none on request.
grep -q 'model des, contention step$' "$tmp/out" || fail "default contention: $(head -n 1 "$tmp/out")"
grep -q '"contention":"step"' "$tmp/j" || fail "json: contention"
for c in family none; do
  "$SHARDPLAN" sim --plan "$tmp/plan.json" -t "$topo" --contention $c >"$tmp/c" 2>"$tmp/e" \
    || fail "--contention $c exited $?: $(cat "$tmp/e")"
  grep -q "contention $c\$" "$tmp/c" || fail "--contention $c: $(head -n 1 "$tmp/c")"
done
"$SHARDPLAN" sim --plan "$tmp/plan.json" -t "$topo" --sim-model analytic >"$tmp/c" 2>/dev/null \
  && grep -q 'model analytic, contention none$' "$tmp/c" || fail "analytic: contention none"

# Bad input: exit 2, one line, no output file.
for args in "" "--plan $tmp/plan.json" "--plan $tmp/plan.json -t $topo --sim-model x" \
            "--plan $tmp/plan.json -t $topo --contention fabric" \
            "--plan $tmp/plan.json -t $topo --contention default" \
            "--plan $tmp/plan.json -t $topo --sim-model analytic --contention step" \
            "--plan $tmp/plan.json -t dgx-h100 --nodes 3"; do
  # shellcheck disable=SC2086
  "$SHARDPLAN" sim $args -o "$tmp/bad.h5" >/dev/null 2>"$tmp/e"
  st=$?
  [ "$st" -eq 2 ] || fail "sim $args: exit $st, expected 2"
  [ "$(wc -l <"$tmp/e")" -eq 1 ] || fail "sim $args: stderr is not one line: $(cat "$tmp/e")"
  [ ! -e "$tmp/bad.h5" ] || fail "sim $args: left an output file"
done
# A missing plan file is bad input (exit 2), one line.
"$SHARDPLAN" sim --plan "$tmp/nosuch.json" -t "$topo" -o "$tmp/bad.h5" >/dev/null 2>"$tmp/e"
[ $? -eq 2 ] || fail "missing plan: expected exit 2"
[ "$(wc -l <"$tmp/e")" -eq 1 ] || fail "missing plan: stderr is not one line"
"$SHARDPLAN" sim --help >/dev/null || fail "--help"

# send and recv around every group: a recv's flows run the other way round.
# 16 ranks on 2 dgx-h100 nodes, 64 MiB around the world group, where the
# NICs bind: a send and a recv at the same time (two streams) cross the
# network in opposite directions and each takes what it takes alone; two
# sends share their NICs' direction and take about twice as long.  (Inside
# a node a send and a recv do share each GPU's port out, one flow to each
# neighbour, and the model charges that.)
p2p_plan () {  # p2p_plan KIND1 KIND2
  printf '{"schema": "shardplan-plan", "schema_version": 1, "world_size": 16, "groups": {"world_size": 16, "devices_per_node": 8}, "meta": {}, "ops": [%s, %s]}\n' \
    "{\"id\": 0, \"name\": \"a\", \"kind\": \"$1\", \"family\": \"world\", \"bytes\": 67108864, \"count\": 67108864, \"dtype\": \"uint8\", \"redop\": \"none\", \"stream\": 1, \"deps\": []}" \
    "{\"id\": 1, \"name\": \"b\", \"kind\": \"$2\", \"family\": \"world\", \"bytes\": 67108864, \"count\": 67108864, \"dtype\": \"uint8\", \"redop\": \"none\", \"stream\": 2, \"deps\": []}"
}
dur () {  # dur PLAN CONTENTION OP: the op's duration, µs
  "$SHARDPLAN" sim --plan "$1" -t dgx-h100 --nodes 2 --contention "$2" --format json \
    | sed -n "s/.*\"id\":$3,[^}]*\"duration_us\":\([0-9.]*\).*/\1/p"
}
p2p_plan send recv > "$tmp/sr.json"
p2p_plan send send > "$tmp/ss.json"
alone=$(dur "$tmp/sr.json" none 0)
[ -n "$alone" ] && [ "$(dur "$tmp/sr.json" none 1)" = "$alone" ] || fail "send / recv alone differ"
for c in step family; do
  for o in 0 1; do
    got=$(dur "$tmp/sr.json" $c $o)
    [ -n "$got" ] && [ "$got" = "$alone" ] || fail "send + recv, $c: op $o $got us, alone $alone us"
  done
done
both=$(dur "$tmp/ss.json" step 0)
awk -v a="$alone" -v b="$both" 'BEGIN { exit !(b > 1.8 * a) }' \
  || fail "two sends at once: $both us, alone $alone us (they share the NICs' direction)"

# a topology's [nccl] (NCCL_ALGO / NCCL_PROTO of its jobs) is named in the header
nt="$SP_SRCDIR/tests/fixtures/topo/valid-nccl.ini"
"$SHARDPLAN" plan -m gpt-1b -t "$nt" -s 8 -o "$tmp/nccl.json" >/dev/null || fail "plan on [nccl] topology"
"$SHARDPLAN" sim --plan "$tmp/nccl.json" -t "$nt" >"$tmp/nccl-sim" 2>"$tmp/e" || fail "sim on [nccl]: $(cat "$tmp/e")"
head -n 1 "$tmp/nccl-sim" | grep -q ', contention step, NCCL_ALGO=.AllGather:^PAT;AllReduce:Tree,Ring., NCCL_PROTO=^LL128$' \
  || fail "sim header: $(head -n 1 "$tmp/nccl-sim")"
head -n 1 "$tmp/one-sim" | grep -q 'NCCL_' && fail "sim header without [nccl]: $(head -n 1 "$tmp/one-sim")"

# --std-error on a calibrated topology: the step time's standard error
# (JSON calibration.std_error), checked against an independent one
# (tests/tools/calib_delta.py: each fitted value moved in the INI, the step
# read back, the quadratic form in the INI's std_errors and correlations by
# hand); "undetermined" where the
# step depends on the fixture's undetermined LL overhead (one node); a
# hint without the option; refused without errors or with NCCL's model
cal="$SP_SRCDIR/tests/fixtures/topo/valid-calibrated.ini"
sed 's/ll_overhead_us undetermined/ll_overhead_us 1.5/' "$cal" >"$tmp/cal-finite.ini"
"$SHARDPLAN" plan -m gpt-1b -t "$cal" -o "$tmp/cal.json" >/dev/null || fail "plan on the calibrated fixture"
"$SHARDPLAN" sim --plan "$tmp/cal.json" -t "$tmp/cal-finite.ini" --std-error -q >"$tmp/t" 2>"$tmp/e" \
  || fail "sim --std-error exited $?: $(cat "$tmp/e")"
grep -Eq '^± \(calibration\): +±[0-9.]+% \(±[0-9.]+ (s|ms|µs|us|ns)\)$' "$tmp/t" \
  || fail "sim --std-error: no ± line: $(cat "$tmp/t")"
grep -q 'scattered by ±2.1% around the model' "$tmp/t" || fail "sim --std-error: no residual_sd: $(cat "$tmp/t")"
grep -q '^  not in the ±: the step depends on \[calibration\] ll128_overhead_us' "$tmp/t" \
  || fail "sim --std-error: no not-fitted line: $(cat "$tmp/t")"
if command -v python3 >/dev/null 2>&1; then
  python3 - "$SHARDPLAN" "$tmp/cal-finite.ini" "$tmp/cal.json" "$tmp" "$SP_SRCDIR/tests/tools" <<'PY' || fail "sim --std-error against an independent computation"
import json, math, subprocess, sys
sp, path, plan, tmp = sys.argv[1:5]
sys.path.insert(0, sys.argv[5])
from calib_delta import std_error
ini = open(path).read()
def sim(text, extra=()):
    p = tmp + "/moved.ini"
    open(p, "w").write(text)
    out = subprocess.run([sp, "sim", "--plan", plan, "-t", p, "-f", "json", "-q", *extra],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)
d0 = sim(ini, ["--std-error"])
want = std_error(ini, lambda text: math.log(sim(text)["step_us"]))
got = d0["calibration"]["std_error"]
assert got > 0 and abs(got - want) <= 1e-3 * want, (got, want)
assert d0["calibration"]["residual_sd"] == 0.021, d0["calibration"]
assert d0["calibration"]["undetermined"] == [], d0["calibration"]
assert d0["calibration"]["not_fitted"] == ["[calibration] ll128_overhead_us"], d0["calibration"]
PY
fi
# beyond 10 %: a factor and the range, its lower end the compute-only path
# where the factor would take the step below it; no residual_sd, no scatter
sed -e 's/inter_latency_us 0.4/inter_latency_us 400/' -e 's/intra_latency_us 0.05;/intra_latency_us 90;/' \
  -e '/^residual_sd/d' "$tmp/cal-finite.ini" >"$tmp/cal-wide.ini"
"$SHARDPLAN" sim --plan "$tmp/cal.json" -t "$tmp/cal-wide.ini" --std-error -q >"$tmp/t" 2>"$tmp/e" \
  || fail "sim --std-error, wide: $(cat "$tmp/e")"
floor=$(sed -n 's/^compute-only path: *//p' "$tmp/t")
grep -Eq "^± \(calibration\): +×÷1\.[0-9]+ \($floor to [0-9.]+ ms; the lower end is the compute-only path\)$" "$tmp/t" \
  || fail "sim --std-error, wide: $(cat "$tmp/t")"
grep -q "scattered" "$tmp/t" && fail "sim --std-error without residual_sd: a scatter: $(cat "$tmp/t")"
"$SHARDPLAN" plan -m gpt-1b -t "$cal" -n 1 -o "$tmp/cal1.json" >/dev/null || fail "plan on one calibrated node"
"$SHARDPLAN" sim --plan "$tmp/cal1.json" -t "$cal" -n 1 --std-error -f json -q >"$tmp/j" 2>"$tmp/e" \
  || fail "sim --std-error, one node: $(cat "$tmp/e")"
grep -q '"calibration":{"std_error":"undetermined","residual_sd":0.021,"undetermined":\["\[calibration\] ll_overhead_us"\]' "$tmp/j" \
  || fail "sim --std-error, one node: $(head -c 300 "$tmp/j")"
"$SHARDPLAN" sim --plan "$tmp/cal1.json" -t "$cal" -n 1 --std-error -q >"$tmp/t" 2>"$tmp/e" || fail "sim --std-error text, one node"
grep -Eq '^± \(calibration\): +undetermined$' "$tmp/t" || fail "sim --std-error text, one node: $(cat "$tmp/t")"
grep -q '^  undetermined: the step depends on \[calibration\] ll_overhead_us' "$tmp/t" \
  || fail "sim --std-error text, one node: $(cat "$tmp/t")"
"$SHARDPLAN" sim --plan "$tmp/cal.json" -t "$cal" -q >"$tmp/t" 2>"$tmp/e" || fail "sim on the calibrated fixture"
tail -n 1 "$tmp/t" | grep -q '^note: the topology carries its calibration.s standard errors: --std-error gives' \
  || fail "sim on a calibrated topology: no hint at the end: $(cat "$tmp/t")"
grep -q 'calibration' "$tmp/one-sim" && fail "sim without calibration mentions one: $(cat "$tmp/one-sim")"
"$SHARDPLAN" sim --plan "$tmp/one.json" -t dgx-h100 -n 1 --std-error >"$tmp/t" 2>"$tmp/e"
st=$?
[ "$st" -eq 2 ] && grep -q "topology 'dgx-h100' carries no \[calibration\] std_errors" "$tmp/e" \
  || fail "sim --std-error without errors: exit $st: $(cat "$tmp/e")"
[ -s "$tmp/t" ] && fail "sim --std-error without errors wrote a summary"
"$SHARDPLAN" sim --plan "$tmp/cal.json" -t "$cal" --sim-model nccl --std-error >"$tmp/t" 2>"$tmp/e"
st=$?
[ "$st" -eq 2 ] && grep -q "NCCL's own model (--sim-model nccl) reads no calibration" "$tmp/e" \
  || fail "sim --std-error --sim-model nccl: exit $st: $(cat "$tmp/e")"
[ "$failures" -eq 0 ]
