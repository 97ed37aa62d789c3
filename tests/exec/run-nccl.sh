#!/bin/sh
# The NCCL backend with a one-rank communicator, end to end: the one-rank
# plan (every plain collective, send, barrier, the quantize kernels and a
# reduce_scatter_coalesced) in both timing modes and under --check every,
# each trace checked row by row (tests/exec/check-trace.c: status ok,
# CHECKED, times, and nccl_est_ns -1 — NCCL runs a one-rank collective as
# a local copy and gives no estimate for it); device-timed rows have a
# positive duration; a wrong result fails the run.  Skips (77) when the
# NCCL backend is not built, no GPU is visible or MPI cannot start a job,
# unless SP_TEST_REQUIRE_GPU=1, which turns each of those into a failure.
set -u
: "${SHARDPLAN:?}" "${SP_SRCDIR:?}" "${SP_BUILDDIR:?}"
require=${SP_TEST_REQUIRE_GPU:-0}
skip () {
  if [ "$require" = 1 ]; then
    echo "FAIL: SP_TEST_REQUIRE_GPU=1 but $1" >&2
    exit 1
  fi
  echo "SKIP: $1"
  exit 77
}
"$SHARDPLAN" info 2>/dev/null | grep -q "^ *nccl" || skip "the NCCL backend is not built"
nvidia-smi -L >/dev/null 2>&1 || skip "no GPU is visible (nvidia-smi -L)"
# exec-testlib.sh exits 77 without a usable MPI launcher: try it first in
# a subshell, so that SP_TEST_REQUIRE_GPU=1 can fail instead.
(. "$SP_SRCDIR/tests/exec/exec-testlib.sh" >/dev/null 2>&1; exit 0)
[ $? -eq 77 ] && skip "no MPI launcher can start a job (see tests/exec/exec-testlib.sh)"
. "$SP_SRCDIR/tests/exec/exec-testlib.sh"
plan="$tmp/one.json"
"$MAKE_PLAN" one "$plan" || exit 99

for mode in isolated replay; do
  mpi 1 --plan "$plan" -o "$tmp/nccl-$mode.h5" --backend nccl --mode "$mode" --iters 3 --warmup 1 --timeout 60
  [ "$status" -eq 0 ] || fail "nccl $mode: exit $status: $(cat "$tmp/err")"
  "$CHECK_TRACE" "$tmp/nccl-$mode.h5" "$plan" "$mode" 3 1 after || fail "nccl $mode: trace check"
done

# --check every: inputs (and the broadcast root's buffer) staged to the GPU
# and results read back around every op of every iteration.
mpi 1 --plan "$plan" -o "$tmp/nccl-every.h5" --backend nccl --iters 2 --warmup 1 --timeout 60 --check every
[ "$status" -eq 0 ] || fail "nccl --check every: exit $status: $(cat "$tmp/err")"
"$CHECK_TRACE" "$tmp/nccl-every.h5" "$plan" isolated 2 1 every || fail "nccl --check every: trace check"

# Device-timed rows: CUDA events around a 256 KiB all_reduce (a device
# copy on one rank), the quantize kernels and the composite's four stages
# take more than 0 ns.  CSV columns: 9 coll, 19 dur_ns.
"$SHARDPLAN" trace export "$tmp/nccl-isolated.h5" --format csv >"$tmp/iso.csv" ||
  fail "trace export failed"
n_timed=$(awk -F, 'NR > 1 && ($9 == "all_reduce" || $9 == "quantize" || $9 == "dequantize" ||
                   $9 == "reduce_scatter_coalesced")' "$tmp/iso.csv" | wc -l)
[ "$n_timed" -eq 12 ] || fail "expected 12 device-timed rows (4 ops x 3 iterations), found $n_timed"
awk -F, 'NR > 1 && ($9 == "all_reduce" || $9 == "quantize" || $9 == "dequantize" ||
         $9 == "reduce_scatter_coalesced") && $19 <= 0' "$tmp/iso.csv" | head -1 | grep -q . &&
  fail "a device-timed row with dur_ns <= 0: $(awk -F, '$19 <= 0' "$tmp/iso.csv" | head -3)"

# A wrong result (the test hook flips a byte of op 3's, the broadcast's,
# result after it is read back from the GPU) fails the run.
SP_TEST_CORRUPT_RANK=0 SP_TEST_CORRUPT_OP=3; export SP_TEST_CORRUPT_RANK SP_TEST_CORRUPT_OP
mpi 1 --plan "$plan" -o "$tmp/nccl-wrong.h5" --backend nccl --iters 1 --warmup 0 --timeout 60
unset SP_TEST_CORRUPT_RANK SP_TEST_CORRUPT_OP
[ "$status" -ne 0 ] || fail "nccl: a wrong result did not fail the run"
grep -q "op 3 (bcast).*wrong result" "$tmp/err" || fail "nccl: wrong result message: $(cat "$tmp/err")"
finish
