#!/bin/sh
# `shardplan trace import-nccl-tests` and `shardplan compare` end to end on
# the nccl-tests fixtures: every layout imports, bad logs and bad usage exit
# 2 with one line on stderr and leave no file, and a log compared with a
# copy whose times are doubled shows +100 % on every op in every format;
# NCCL's own estimate shows as a third series only when the measured trace
# has it (traces written by tests/lib/test_compare --write-nccl).
# (Exact parsed values and statistics are checked by tests/lib.)
SP_TEST_NAME=compare
. "$SP_SRCDIR/tests/tools/cli-testlib.sh"
fx="$SP_SRCDIR/tests/fixtures/nccltests"
checks=0

# run ARGS…: runs shardplan, leaves $status, $tmp/out, $tmp/err.
run () {
  checks=$((checks + 1))
  "$SHARDPLAN" "$@" >"$tmp/out" 2>"$tmp/err"
  status=$?
}

expect_ok () {
  run "$@"
  [ "$status" -eq 0 ] || fail "shardplan $* exited $status: $(cat "$tmp/err")"
}

# usage_error TEXT ARGS…: exit 2, exactly one line on stderr that starts with
# "shardplan" and contains TEXT, nothing on stdout.
usage_error () {
  text=$1
  shift
  run "$@"
  if [ "$status" -ne 2 ]; then
    fail "shardplan $* exited $status, expected 2; stderr: $(cat "$tmp/err")"
    return
  fi
  lines=$(wc -l <"$tmp/err")
  [ "$lines" -eq 1 ] || fail "shardplan $*: $lines lines on stderr: $(cat "$tmp/err")"
  grep -q '^shardplan ' "$tmp/err" || fail "shardplan $*: stderr does not start with 'shardplan'"
  grep -qF -- "$text" "$tmp/err" || fail "shardplan $*: stderr lacks '$text': $(cat "$tmp/err")"
  [ -s "$tmp/out" ] && fail "shardplan $*: wrote to stdout on error"
}

import () {
  "$SHARDPLAN" trace import-nccl-tests "$@" 2>"$tmp/import-err" >/dev/null
}

# ---------------------------------------------------------------- import
expect_ok trace import-nccl-tests --help
expect_ok trace import-nccl-tests "$fx/all_reduce-2019.txt" -o "$tmp/ar.h5" --topology p3dn
expect_ok trace import-nccl-tests "$fx/all_gather-new.txt" -o "$tmp/ag.h5" --topology dgx-h100 \
  --plan-out "$tmp/ag-plan.json"
grep -q 'all_gather_perf, 16 ranks, 22 points' "$tmp/out" || fail "import summary: $(cat "$tmp/out")"
grep -q '"schema": "shardplan-plan"' "$tmp/ag-plan.json" || fail "--plan-out wrote no plan"
n_ops=$(grep -c '"kind": "all_gather"' "$tmp/ag-plan.json")
[ "$n_ops" -eq 22 ] || fail "--plan-out: $n_ops all_gather ops, expected 22"
expect_ok trace import-nccl-tests "$fx/reduce_scatter-nocheck.txt" -o "$tmp/rs.h5" --topology dgx-h100
expect_ok trace import-nccl-tests "$fx/alltoall-oop.txt" -o "$tmp/a2a.h5" --topology dgx-h100
expect_ok trace import-nccl-tests "$fx/broadcast-root.txt" -o "$tmp/bc.h5" --topology cpu-shm
cat >"$tmp/two.ini" <<'EOF'
[cluster]
nodes = 1
gpus_per_node = 2
[gpu]
model = test
memory_gib = 16
tflops = 100
[intra]
kind = nvlink
bandwidth_gbs = 100
latency_us = 1
EOF
expect_ok trace import-nccl-tests "$fx/sendrecv-ranks.txt" -o "$tmp/sr.h5" --topology "$tmp/two.ini"
grep -q 'warning: no .#  Rank. lines' "$tmp/err" || fail "sendrecv: no rank-count warning"
expect_ok trace import-nccl-tests "$fx/truncated.txt" -o "$tmp/tr.h5" --topology dgx-h100
grep -q 'marked partial' "$tmp/err" || fail "truncated log: no partial warning: $(cat "$tmp/err")"
[ -s "$tmp/tr.h5" ] || fail "truncated log: no trace"

for bad in garbage no-collective wrong-ranks mid-row-cut two-collectives; do
  usage_error "$bad.txt" trace import-nccl-tests "$fx/$bad.txt" -o "$tmp/bad.h5" --topology dgx-h100
  [ -e "$tmp/bad.h5" ] && fail "$bad: left $tmp/bad.h5"
done
usage_error "no-such.txt" trace import-nccl-tests "$tmp/no-such.txt" -o "$tmp/bad.h5" --topology dgx-h100
usage_error "--output" trace import-nccl-tests "$fx/all_gather-new.txt" --topology dgx-h100
usage_error "--topology is required" trace import-nccl-tests "$fx/all_gather-new.txt" -o "$tmp/bad.h5"
usage_error "the log has 4 ranks" trace import-nccl-tests "$fx/broadcast-root.txt" -o "$tmp/bad.h5" \
  --topology dgx-h100
usage_error "the log has 16 ranks" trace import-nccl-tests "$fx/all_gather-new.txt" -o "$tmp/bad.h5" \
  --topology dgx-h100 --nodes 3
usage_error "--nodes" trace import-nccl-tests "$fx/all_gather-new.txt" -o "$tmp/bad.h5" \
  --topology dgx-h100 --nodes x
usage_error "one nccl-tests log" trace import-nccl-tests -o "$tmp/bad.h5" --topology dgx-h100
[ -e "$tmp/bad.h5" ] && fail "a failed import left $tmp/bad.h5"

# --------------------------------------------------------------- compare
# The same log with every time doubled: the same plan, error +100 % per op.
awk 'BEGIN { OFS = "  " }
     /^ *[0-9]/ && NF == 13 { $6 = sprintf ("%.2f", $6 * 2); $10 = sprintf ("%.2f", $10 * 2) }
     { print }' "$fx/all_gather-new.txt" >"$tmp/doubled.txt"
import "$tmp/doubled.txt" -o "$tmp/ag2.h5" --topology dgx-h100 \
  || fail "import of the doubled log: $(cat "$tmp/import-err")"

expect_ok compare --help
# a measured run with NCCL variables the simulator does not model: compare
# says which (judged on the first trace's topology, dgx-h100: 18 channels,
# 8 NICs a node), and only those.
# compare_env NAME: compare ag2.h5 with the log $tmp/NAME.txt imported;
# its stderr in $tmp/err
compare_env () {
  import "$tmp/$1.txt" -o "$tmp/ag-$1.h5" --topology dgx-h100 \
    || fail "import of $1.txt: $(cat "$tmp/import-err")"
  "$SHARDPLAN" compare "$tmp/ag2.h5" "$tmp/ag-$1.h5" >/dev/null 2>"$tmp/err" \
    || fail "compare with $1.txt: $(cat "$tmp/err")"
}
awk 'NR == 1 { print; print "n1:1:1 [0] NCCL INFO NCCL_MAX_NCHANNELS set by environment to 2";
               print "n1:1:1 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 0"; next } { print }' \
  "$fx/all_gather-new.txt" >"$tmp/env.txt"
compare_env env
grep -q "^shardplan compare: warning: .*ag-env.h5 ran with NCCL_MAX_NCHANNELS=2 (caps the channels below the model's 18), which the simulator does not model .*: part of the error may be theirs$" "$tmp/err" \
  || fail "compare: no warning naming NCCL_MAX_NCHANNELS: $(cat "$tmp/err")"
grep -q "IB_DISABLE" "$tmp/err" && fail "compare named a value the model assumes: $(cat "$tmp/err")"
# the log's own NCCL_IB_HCA names the 8 HCAs of dgx-h100; four of them is
# a run on half its NICs
sed 's/NCCL_IB_HCA set by environment to .*/NCCL_IB_HCA set by environment to mlx5_0,mlx5_3,mlx5_4,mlx5_5/' \
  "$fx/all_gather-new.txt" >"$tmp/hca.txt"
compare_env hca
grep -q "^shardplan compare: warning: .*ag-hca.h5 ran with NCCL_IB_HCA=mlx5_0,mlx5_3,mlx5_4,mlx5_5 (the NICs: 4 HCAs named, the topology has 8 per node), which" "$tmp/err" \
  || fail "compare: no warning naming NCCL_IB_HCA: $(cat "$tmp/err")"
expect_ok compare "$tmp/ag2.h5" "$tmp/ag.h5" --top 3
grep -Eq '^all +22 +100\.0 % +100\.0 % +100\.0 % +100\.0 %' "$tmp/out" \
  || fail "text: no 'all 22 100.0 %' line: $(cat "$tmp/out")"
grep -q '^worst 3 ops:' "$tmp/out" || fail "text: no worst-ops table"
grep -q '352 joined, 352 compared (22 ops)' "$tmp/out" || fail "text: counts"
grep -q '^left out: .* 0 composite, 0 in groups of one rank (not costed), 0 zero measured time$' \
  "$tmp/out" || fail "text: the left-out line: $(grep '^left out' "$tmp/out")"

expect_ok compare "$tmp/ag2.h5" "$tmp/ag.h5" --format csv
[ "$(head -n 1 "$tmp/out")" = "op_id,name,kind,family,bytes,size_band,samples,measured_ns,sim_ns,error" ] \
  || fail "csv header: $(head -n 1 "$tmp/out")"
rows=$(awk -F, 'NR > 1' "$tmp/out" | wc -l)
[ "$rows" -eq 22 ] || fail "csv: $rows rows, expected 22"
bad_rows=$(awk -F, 'NR > 1 && ($10 != 1 || $9 != 2 * $8 || $7 != 16)' "$tmp/out" | wc -l)
[ "$bad_rows" -eq 0 ] || fail "csv: $bad_rows rows are not sim = 2 x measured over 16 samples"
grep -q '^10,all_gather 1048576 B out-of-place,all_gather,world,1048576,1-64 MiB,16,45370,90740,1$' \
  "$tmp/out" || fail "csv: op 10 row"

expect_ok compare "$tmp/ag2.h5" "$tmp/ag.h5" --format json --top 2
if command -v jq >/dev/null 2>&1; then
  [ "$(jq '.stats.all.median_abs_error' "$tmp/out")" = "1" ] || fail "json: median"
  [ "$(jq '.worst | length' "$tmp/out")" = "2" ] || fail "json: worst length"
  [ "$(jq '.ops | length' "$tmp/out")" = "22" ] || fail "json: ops length"
  [ "$(jq -r '.stats.size[0].label' "$tmp/out")" = "<64 KiB" ] || fail "json: size band"
else
  grep -q '"median_abs_error" : 1' "$tmp/out" || fail "json: median"
  grep -q '"samples" : 352' "$tmp/out" || fail "json: samples"
fi

# Without NCCL's estimate (imported logs have none) nothing about it is shown.
expect_ok compare "$tmp/ag2.h5" "$tmp/ag.h5"
grep -qi 'nccl' "$tmp/out" && fail "text mentions NCCL without an estimate: $(cat "$tmp/out")"
expect_ok compare "$tmp/ag2.h5" "$tmp/ag.h5" --format json
grep -q '"nccl[_"]' "$tmp/out" && fail "json has nccl members without an estimate"

# NCCL's own estimate as a third series: the traces of tests/lib/test_compare
# (hand-computed values in its header comment).
if "$SP_BUILDDIR/tests/lib/test_compare" --write-nccl "$tmp" >"$tmp/write-out" 2>&1; then
  expect_ok compare "$tmp/sim.h5" "$tmp/measured-nccl.h5" --top 3
  grep -q "NCCL's own estimate (ncclGroupSimulateEnd, in the measured trace): 68 of 92 samples" \
    "$tmp/out" || fail "nccl text: no sample count: $(cat "$tmp/out")"
  grep -Eq '^all +6 +15\.0 % +40\.0 % +50\.0 % +5\.0 % +op 2$' "$tmp/out" \
    || fail "nccl text: the simulator's 'all' row changed"
  grep -Eq '^all +5 +20\.0 % +68\.0 % +80\.0 % +0\.0 % +op 3 +10\.0 %$' "$tmp/out" \
    || fail "nccl text: no NCCL 'all' row: $(cat "$tmp/out")"
  grep -Eq '^  compute +0 +- +- +- +- +- +-$' "$tmp/out" || fail "nccl text: compute row"
  grep -Eq 'error +NCCL est +NCCL err$' "$tmp/out" || fail "nccl text: worst-ops header"
  # times in text as people read them: 4 significant digits, µs (us outside UTF-8)
  grep -Eq '^ +2  step\.allreduce .* 107\.0 (µs|us) +160\.5 (µs|us) +\+50\.0 % +107\.0 (µs|us) +\+0\.0 %$' "$tmp/out" \
    || fail "nccl text: op 2 row: $(grep step.allreduce "$tmp/out")"
  grep -Eq '^ +1  L0\.bwd\.reduce_scatter .* 85\.60 (µs|us) +-20\.0 % +53\.50 (µs|us) ' "$tmp/out" \
    || fail "nccl text: op 1 row: $(grep L0.bwd.reduce_scatter "$tmp/out")"
  grep -q '^worst 3 ops:$' "$tmp/out" || fail "nccl text: worst header"
  grep -Eq '^ +5  L0\.fwd\.compute .* \+30\.0 % +- +-$' "$tmp/out" || fail "nccl text: op 5 row"
  expect_ok compare "$tmp/sim.h5" "$tmp/measured-nccl.h5" --format csv
  [ "$(head -n 1 "$tmp/out")" = "op_id,name,kind,family,bytes,size_band,samples,measured_ns,sim_ns,error,nccl_samples,nccl_ns,nccl_error" ] \
    || fail "nccl csv header: $(head -n 1 "$tmp/out")"
  grep -q '^5,L0.fwd.compute,.*,0,,$' "$tmp/out" || fail "nccl csv: op 5 has no estimate"
  grep -q '^1,L0.bwd.reduce_scatter,.*,15,53500,-0.5$' "$tmp/out" || fail "nccl csv: op 1"
  expect_ok compare "$tmp/sim.h5" "$tmp/measured-nccl.h5" --format json
  if command -v jq >/dev/null 2>&1; then
    [ "$(jq '.stats.all.nccl.ops' "$tmp/out")" = "5" ] || fail "nccl json: ops"
    [ "$(jq '.stats.all.nccl.worst_op_id' "$tmp/out")" = "3" ] || fail "nccl json: worst op"
    [ "$(jq '.counts.nccl_samples' "$tmp/out")" = "68" ] || fail "nccl json: samples"
    [ "$(jq '.ops[5].nccl_error' "$tmp/out")" = "null" ] || fail "nccl json: op 5 not null"
    [ "$(jq '.stats.kind[3].nccl' "$tmp/out")" = "null" ] || fail "nccl json: compute not null"
  else
    grep -q '"nccl_samples" : 68' "$tmp/out" || fail "nccl json: samples"
  fi
  # each trace records what it is: swapped arguments and two simulations
  # are refused, naming which is which
  usage_error "measured-nccl.h5 is measured and $tmp/sim.h5 is simulated: the arguments are swapped" \
    compare "$tmp/measured-nccl.h5" "$tmp/sim.h5"
  usage_error "$tmp/sim.h5 and $tmp/sim.h5 are both simulated" compare "$tmp/sim.h5" "$tmp/sim.h5"
  if "$SHARDPLAN" info | grep -q 'cairo=yes'; then
    expect_ok compare "$tmp/sim.h5" "$tmp/measured-nccl.h5" --plot "$tmp/nccl.svg" --format csv
    grep -q '<svg' "$tmp/nccl.svg" || fail "nccl plot: not an SVG"
  fi
else
  fail "test_compare --write-nccl failed: $(cat "$tmp/write-out")"
fi

# different plans, missing files, non-traces, bad options
usage_error "ran different plans" compare "$tmp/rs.h5" "$tmp/ag.h5"
grep -q "rs.h5 (plan [0-9a-f]\{64\}) and .*ag.h5 (plan [0-9a-f]\{64\})" "$tmp/err" \
  || fail "different plans: message does not name both files and digests: $(cat "$tmp/err")"
usage_error "no-such.h5" compare "$tmp/no-such.h5" "$tmp/ag.h5"
usage_error "all_gather-new.txt" compare "$tmp/ag.h5" "$fx/all_gather-new.txt"
usage_error "expected two traces" compare "$tmp/ag.h5"
usage_error "--format" compare "$tmp/ag2.h5" "$tmp/ag.h5" --format xml
usage_error "--top" compare "$tmp/ag2.h5" "$tmp/ag.h5" --top -1

# a one-GPU nccl-tests run against its simulation: every row is a
# collective on one rank, left out, and the error says so
import "$fx/one-gpu.txt" -o "$tmp/one.h5" --topology "$fx/one-gpu.ini" --plan-out "$tmp/one.json" \
  && "$SHARDPLAN" sim --plan "$tmp/one.json" --topology "$fx/one-gpu.ini" -o "$tmp/one-sim.h5" -q \
  || fail "one-rank import and sim: $(cat "$tmp/import-err")"
usage_error "have no row left to compare (4 joined; excluded: 0 by status, 0 composite, 4 in groups of one rank" \
  compare "$tmp/one-sim.h5" "$tmp/one.h5"

# plots (only with cairo)
if "$SHARDPLAN" info | grep -q 'cairo=yes'; then
  expect_ok compare "$tmp/ag2.h5" "$tmp/ag.h5" --plot "$tmp/cmp.png"
  [ "$(head -c 4 "$tmp/cmp.png" | tail -c 3)" = "PNG" ] || fail "--plot png: not a PNG"
  expect_ok compare "$tmp/ag2.h5" "$tmp/ag.h5" --plot "$tmp/cmp.svg" --format csv
  grep -q '<svg' "$tmp/cmp.svg" || fail "--plot svg: not an SVG"
  usage_error ".gif" compare "$tmp/ag2.h5" "$tmp/ag.h5" --plot "$tmp/cmp.gif"
  [ -e "$tmp/cmp.gif" ] && fail "--plot gif left a file"
else
  echo "built without cairo: plot checks skipped"
fi

echo "$checks runs, $failures failures"
[ "$failures" -eq 0 ]
