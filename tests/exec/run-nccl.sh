#!/bin/sh
# The NCCL backend with a one-rank communicator, end to end.  Skips (77)
# when the NCCL backend is not built or no GPU is visible, unless
# SP_TEST_REQUIRE_GPU=1, which turns a missing GPU into a failure.
set -u
: "${SHARDPLAN:?}" "${SP_SRCDIR:?}" "${SP_BUILDDIR:?}"
if ! "$SHARDPLAN" info 2>/dev/null | grep -q "^ *nccl"; then
  echo "SKIP: the NCCL backend is not built"
  exit 77
fi
if ! nvidia-smi -L >/dev/null 2>&1; then
  if [ "${SP_TEST_REQUIRE_GPU:-0}" = 1 ]; then
    echo "FAIL: SP_TEST_REQUIRE_GPU=1 but no GPU is visible" >&2
    exit 1
  fi
  echo "SKIP: no GPU"
  exit 77
fi
. "$SP_SRCDIR/tests/exec/exec-testlib.sh"
plan="$tmp/one.json"
"$MAKE_PLAN" one "$plan" || exit 99
for mode in isolated replay; do
  mpi 1 --plan "$plan" -o "$tmp/nccl-$mode.h5" --backend nccl --mode "$mode" --iters 3 --warmup 1 --timeout 60
  [ "$status" -eq 0 ] || fail "nccl $mode: exit $status: $(cat "$tmp/err")"
  "$CHECK_TRACE" "$tmp/nccl-$mode.h5" "$plan" "$mode" 3 1 || fail "nccl $mode: trace check"
done
finish
