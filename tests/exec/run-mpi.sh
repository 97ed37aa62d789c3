#!/bin/sh
# The MPI backend end to end on 4 ranks: a plan with every group family and
# every op kind (both composites run for real), in both timing modes, the
# trace checked row by row against the plan (tests/exec/check-trace.c);
# and the shard/replicate plan with a padded reduce_scatter_coalesced.
# Check policies: the default (after: one untimed validation pass), every
# (around every op) and none (--check none, --no-check) all give the same
# rows; CHECKED is on every checked op's rows except under none.
. "$SP_SRCDIR/tests/exec/exec-testlib.sh"

"$MAKE_PLAN" all "$tmp/all.json" || exit 99
"$MAKE_PLAN" sim "$tmp/sim.json" || exit 99
"$MAKE_PLAN" replicate "$tmp/rep.json" || exit 99

for mode in isolated replay; do
  mpi 4 --plan "$tmp/all.json" -o "$tmp/all-$mode.h5" --mode "$mode" --iters 3 --warmup 1 \
    --timeout 60 --topology dgx-h100 --backend mpi
  [ "$status" -eq 0 ] || fail "all.json $mode: exit $status: $(cat "$tmp/err")"
  "$CHECK_TRACE" "$tmp/all-$mode.h5" "$tmp/all.json" "$mode" 3 1 after || fail "all.json $mode: trace check"
  mpi 4 --plan "$tmp/all.json" -o "$tmp/every-$mode.h5" --mode "$mode" --iters 2 --warmup 1 \
    --timeout 60 --topology dgx-h100 --backend mpi --check every
  [ "$status" -eq 0 ] || fail "all.json $mode --check every: exit $status: $(cat "$tmp/err")"
  "$CHECK_TRACE" "$tmp/every-$mode.h5" "$tmp/all.json" "$mode" 2 1 every ||
    fail "all.json $mode --check every: trace check"
  mpi 4 --plan "$tmp/rep.json" -o "$tmp/rep-$mode.h5" --mode "$mode" --iters 2 --warmup 0 --timeout 60
  [ "$status" -eq 0 ] || fail "rep.json $mode: exit $status: $(cat "$tmp/err")"
  "$CHECK_TRACE" "$tmp/rep-$mode.h5" "$tmp/rep.json" "$mode" 2 0 || fail "rep.json $mode: trace check"
done
mpi 4 --plan "$tmp/all.json" -o "$tmp/none-replay.h5" --mode replay --iters 2 --warmup 0 \
  --timeout 60 --topology dgx-h100 --backend mpi --check none
[ "$status" -eq 0 ] || fail "--check none replay: exit $status: $(cat "$tmp/err")"
"$CHECK_TRACE" "$tmp/none-replay.h5" "$tmp/all.json" replay 2 0 none || fail "--check none replay: trace check"

# Rank 0 ends with one line naming what it wrote, rows and backend.
grep -Eq "^shardplan run: wrote $tmp/none-replay.h5 \([^,]*, [0-9]+ rows, mpi backend, [0-9.]+ (bytes|KiB|MiB)\)\$" "$tmp/err" \
  || fail "run: no 'wrote' line naming rows and the backend: $(cat "$tmp/err")"
[ "$(grep -c 'wrote' "$tmp/err")" -eq 1 ] || fail "run: more than rank 0 said what it wrote: $(cat "$tmp/err")"

# --no-check (each op on its own buffers, inputs filled once): every op
# kind still runs and records its rows, none flagged CHECKED.
mpi 4 --plan "$tmp/all.json" -o "$tmp/nochk.h5" --iters 2 --warmup 1 --no-check --timeout 60 \
  --topology dgx-h100 --backend mpi
[ "$status" -eq 0 ] || fail "--no-check: exit $status: $(cat "$tmp/err")"
"$CHECK_TRACE" "$tmp/nochk.h5" "$tmp/all.json" isolated 2 1 none || fail "--no-check: trace check"

# A bad --check, or one --no-check contradicts: exit 2, one line, no trace.
for bad in "--check sometimes" "--check every --no-check"; do
  # shellcheck disable=SC2086
  mpi 1 --plan "$tmp/all.json" -o "$tmp/badchk.h5" $bad
  [ "$status" -eq 2 ] || fail "$bad: exit $status, not 2"
  [ "$(run_lines)" -eq 1 ] || fail "$bad: not one line: $(cat "$tmp/err")"
  grep -q "check" "$tmp/err" || fail "$bad: message: $(cat "$tmp/err")"
  [ -e "$tmp/badchk.h5" ] && fail "$bad: a trace was written"
done
"$SHARDPLAN" trace export "$tmp/nochk.h5" --format csv | tail -n +2 >"$tmp/nochk.csv"
"$SHARDPLAN" trace export "$tmp/all-isolated.h5" --format csv | tail -n +2 >"$tmp/iso.csv"
n_nochk=$(wc -l <"$tmp/nochk.csv"); n_iso=$(wc -l <"$tmp/iso.csv")
[ "$n_nochk" -gt 0 ] && [ $((n_nochk * 3)) -eq $((n_iso * 2)) ] ||
  fail "--no-check: $n_nochk rows for 2 iterations, checked run $n_iso for 3"
grep -v ",ok," "$tmp/nochk.csv" | head -1 | grep -q . && fail "--no-check: a row not ok"

# DeepSpeed's qgZ value (D x mean) is checked against its own expectation.
mpi 4 --plan "$tmp/all.json" -o "$tmp/compat.h5" --iters 1 --warmup 0 --deepspeed-compat
[ "$status" -eq 0 ] || fail "--deepspeed-compat: exit $status: $(cat "$tmp/err")"

# seq_in_group (the op's place on its group's communicator) is what the
# simulator writes, op by op and rank by rank, for an isolated run: p2p ops
# count on their sender and receiver only, composites as the executor
# issues them.  Compute ops do not run in isolated mode (no rows).
mpi 4 --plan "$tmp/sim.json" -o "$tmp/seq-m.h5" --mode isolated --iters 1 --warmup 0 --timeout 60
[ "$status" -eq 0 ] || fail "sim.json: exit $status: $(cat "$tmp/err")"
printf '[cluster]\nnodes = 2\ngpus_per_node = 2\n[gpu]\nmodel = H100\nmemory_gib = 80\ntflops = 989\n[intra]\nkind = nvswitch\nbandwidth_gbs = 450\n[inter]\nnics_per_node = 1\nnic_gbps = 400\n' >"$tmp/2x2.ini"
"$SHARDPLAN" sim --plan "$tmp/sim.json" --topology "$tmp/2x2.ini" -q -o "$tmp/seq-s.h5" >/dev/null \
  || fail "sim of sim.json failed"
"$SHARDPLAN" trace export "$tmp/seq-m.h5" --format csv | awk -F, 'NR > 1 && $3 == 0 { print $1 "," $4 "," $8 }' \
  | sort >"$tmp/seq-m"
"$SHARDPLAN" trace export "$tmp/seq-s.h5" --format csv | awk -F, 'NR > 1 && $9 != "compute" { print $1 "," $4 "," $8 }' \
  | sort >"$tmp/seq-s"
[ -s "$tmp/seq-m" ] && cmp -s "$tmp/seq-m" "$tmp/seq-s" \
  || fail "seq_in_group: measured and simulated differ: $(diff "$tmp/seq-m" "$tmp/seq-s" | head -5)"
grep -q "p2p" "$tmp/sim.json" || fail "sim.json has no p2p op"

# Spill files are removed after a complete run; nothing else is left.
ls "$tmp" | grep -q spill && fail "spill files left: $(ls "$tmp")"

# The trace says what ran: backend, MPI library, mode, cluster.
"$SHARDPLAN" trace show "$tmp/all-replay.h5" >"$tmp/show" 2>&1 || fail "trace show failed"
grep -q "replay" "$tmp/show" || fail "trace show does not say replay: $(cat "$tmp/show")"
grep -q "ranks: *4" "$tmp/show" || fail "trace show: not 4 ranks: $(cat "$tmp/show")"

# The topology's [nccl] is what the run lets NCCL choose: exported as
# NCCL_ALGO / NCCL_PROTO (and so recorded in /meta/env), unless the
# environment sets them, which wins with a note (the same value in other
# words is no conflict).
unset NCCL_ALGO NCCL_PROTO NCCL_NVLS_ENABLE NCCL_CONF_FILE
mpi 4 --plan "$tmp/all.json" -o "$tmp/nccl-env.h5" --iters 1 --warmup 0 --timeout 60 \
  --topology "$SP_SRCDIR/tests/fixtures/topo/valid-nccl.ini" --backend mpi
[ "$status" -eq 0 ] || fail "[nccl] topology: exit $status: $(cat "$tmp/err")"
grep -q "note: NCCL" "$tmp/err" && fail "[nccl] topology: a note without NCCL_* set: $(cat "$tmp/err")"
NCCL_PROTO=LL # the ranks are local: they inherit it
export NCCL_PROTO
mpi 4 --plan "$tmp/all.json" -o "$tmp/nccl-env2.h5" --iters 1 \
  --warmup 0 --timeout 60 --topology "$SP_SRCDIR/tests/fixtures/topo/valid-nccl.ini" --backend mpi
unset NCCL_PROTO
[ "$status" -eq 0 ] || fail "[nccl] topology, NCCL_PROTO set: exit $status: $(cat "$tmp/err")"
[ "$(grep -c "^shardplan run: note: NCCL_PROTO=LL in the environment, not the topology's \[nccl\] proto = ^LL128: NCCL runs with the environment's\$" "$tmp/err")" -eq 1 ] \
  || fail "[nccl] topology, NCCL_PROTO set: no single note: $(cat "$tmp/err")"
NCCL_PROTO=^ll128
export NCCL_PROTO
mpi 4 --plan "$tmp/all.json" -o "$tmp/nccl-env3.h5" --iters 1 --warmup 0 --timeout 60 \
  --topology "$SP_SRCDIR/tests/fixtures/topo/valid-nccl.ini" --backend mpi
unset NCCL_PROTO
[ "$status" -eq 0 ] || fail "[nccl] topology, NCCL_PROTO=^ll128: exit $status: $(cat "$tmp/err")"
grep -q "note: NCCL" "$tmp/err" && fail "^ll128 is ^LL128, yet a note: $(cat "$tmp/err")"
# NCCL's configuration file: what it sets where neither the environment
# nor the topology does is recorded too (NCCL would set it at init)
printf '# NCCL configuration\nNCCL_PROTO=Simple\nNCCL_NVLS_ENABLE=0\nNCCL_ALGO=Tree\n' >"$tmp/nccl.conf"
NCCL_CONF_FILE="$tmp/nccl.conf"
export NCCL_CONF_FILE
mpi 4 --plan "$tmp/all.json" -o "$tmp/nccl-conf.h5" --iters 1 --warmup 0 --timeout 60 \
  --topology dgx-h100 --backend mpi
[ "$status" -eq 0 ] || fail "NCCL_CONF_FILE: exit $status: $(cat "$tmp/err")"
mpi 4 --plan "$tmp/all.json" -o "$tmp/nccl-conf2.h5" --iters 1 --warmup 0 --timeout 60 \
  --topology "$SP_SRCDIR/tests/fixtures/topo/valid-nccl.ini" --backend mpi
[ "$status" -eq 0 ] || fail "NCCL_CONF_FILE and [nccl]: exit $status: $(cat "$tmp/err")"
unset NCCL_CONF_FILE
py=
for cand in "${PYTHON:-}" python3 /usr/bin/python3; do
  [ -n "$cand" ] || continue
  if "$cand" -c 'import h5py' >/dev/null 2>&1; then py=$cand; break; fi
done
if [ -z "$py" ]; then
  echo "python3 with h5py not found: /meta/env of the [nccl] runs not read"
else
  "$py" - "$tmp/nccl-env.h5" "$tmp/nccl-env2.h5" "$tmp/nccl-conf.h5" "$tmp/nccl-conf2.h5" <<'PY' \
    || fail "[nccl] not in /meta/env as run"
import sys, h5py
def env(path):
    with h5py.File(path, "r") as f:
        return {k.decode(): v.decode() for k, v in f["meta/env"][:]
                if k.decode() in ("NCCL_ALGO", "NCCL_PROTO", "NCCL_NVLS_ENABLE")}
algo = "AllGather:^PAT;AllReduce:Tree,Ring"
want = [{"NCCL_ALGO": algo, "NCCL_PROTO": "^LL128"},
        {"NCCL_ALGO": algo, "NCCL_PROTO": "LL"},
        {"NCCL_ALGO": "Tree", "NCCL_PROTO": "Simple", "NCCL_NVLS_ENABLE": "0"},
        {"NCCL_ALGO": algo, "NCCL_PROTO": "^LL128", "NCCL_NVLS_ENABLE": "0"}]
got = [env(p) for p in sys.argv[1:]]
if got != want:
    sys.exit("env %r, expected %r" % (got, want))
PY
fi
finish
