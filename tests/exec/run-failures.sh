#!/bin/sh
# Failures during a run: a wrong result, a stuck rank (per-op deadline) and
# a rank killed with SIGKILL.  Every rank must exit non-zero (mpirun's
# status), within 30 s for the stuck and killed cases, and no complete
# trace may exist; where rank 0 survives it leaves a readable partial trace.
. "$SP_SRCDIR/tests/exec/exec-testlib.sh"

"$MAKE_PLAN" replicate "$tmp/rep.json" || exit 99

# partial FILE TEXT: FILE is a readable partial trace whose reason says TEXT.
partial () {
  "$SHARDPLAN" trace show "$1" >"$tmp/show" 2>&1 || { fail "$1 is not a readable trace: $(cat "$tmp/show")"; return; }
  grep -q "^state: *partial" "$tmp/show" || fail "$1 is not partial: $(head -3 "$tmp/show")"
  grep -qF -- "$2" "$tmp/show" || fail "$1: reason does not say '$2': $(head -3 "$tmp/show")"
}

# 1. A wrong result on rank 2 (test hook): every rank agrees, exit 1.
SP_TEST_CORRUPT_RANK=2 SP_TEST_CORRUPT_OP=1; export SP_TEST_CORRUPT_RANK SP_TEST_CORRUPT_OP
mpi 4 --plan "$tmp/rep.json" -o "$tmp/wrong.h5" --iters 2 --warmup 0 --timeout 30
unset SP_TEST_CORRUPT_RANK SP_TEST_CORRUPT_OP
[ "$status" -ne 0 ] || fail "a wrong result did not fail the run"
grep -q "rank 2: op 1 (rs.shard).*wrong result" "$tmp/err" || fail "wrong result message: $(cat "$tmp/err")"
partial "$tmp/wrong.h5" "wrong result"
"$SHARDPLAN" trace export "$tmp/wrong.h5" --format csv | grep -q ",wrong," || fail "no row with status wrong"

# 2. Rank 1 stops before op 1 (test hook): the others hit the deadline.
start=$(date +%s)
SP_TEST_STALL_RANK=1 SP_TEST_STALL_OP=1; export SP_TEST_STALL_RANK SP_TEST_STALL_OP
mpi 4 --plan "$tmp/rep.json" -o "$tmp/stall.h5" --iters 2 --warmup 0 --timeout 3
unset SP_TEST_STALL_RANK SP_TEST_STALL_OP
took=$(( $(date +%s) - start ))
[ "$status" -ne 0 ] || fail "a stuck rank did not fail the run"
[ "$took" -le 30 ] || fail "a stuck rank: the job took $took s (> 30 s)"
grep -q "deadline\|sync" "$tmp/err" || fail "stuck rank: no deadline message: $(cat "$tmp/err")"
partial "$tmp/stall.h5" "rank 0:"
# Rank 0 shares op 1's group with the stuck rank: it waits inside the
# blocking collective, and the watchdog thread records the op as timed out.
"$SHARDPLAN" trace export "$tmp/stall.h5" --format csv | grep -q "^1,-1,0,0,.*,timeout," ||
  fail "stuck rank: no timeout row for op 1 on rank 0"

# 3. SIGKILL one rank of a long run; the rest must be gone within 30 s.
mpi_bg_out="$tmp/kill.h5"
OMPI_ALLOW_RUN_AS_ROOT=1 timeout 300 "$MPIRUN" $MPIFLAGS -np 4 "$SHARDPLAN" run --plan "$tmp/rep.json" \
  -o "$mpi_bg_out" --iters 100000 --warmup 0 --timeout 10 >"$tmp/kout" 2>"$tmp/kerr" &
job=$!
i=0
while [ "$i" -lt 300 ] && [ "$(ls "$tmp" | grep -c 'kill.h5.rank.*spill')" -lt 4 ]; do
  sleep 0.1; i=$((i + 1))
done
sleep 1
victim=$(pgrep -f -- "-o $mpi_bg_out" | while read -r p; do
  [ "$(cat /proc/"$p"/comm 2>/dev/null)" = shardplan ] && echo "$p"; done | tail -n 1)
if [ -z "$victim" ]; then
  fail "kill test: no rank process found"
  kill "$job" 2>/dev/null
else
  start=$(date +%s)
  kill -9 "$victim"
  wait "$job"
  kstatus=$?
  took=$(( $(date +%s) - start ))
  [ "$kstatus" -ne 0 ] || fail "kill test: mpirun exited 0"
  [ "$took" -le 30 ] || fail "kill test: the job took $took s after the kill (> 30 s)"
  sleep 1
  left=$(pgrep -f -- "-o $mpi_bg_out" | while read -r p; do
    [ "$(cat /proc/"$p"/comm 2>/dev/null)" = shardplan ] && echo "$p"; done)
  [ -z "$left" ] || fail "kill test: ranks still running: $left"
  if [ -e "$mpi_bg_out" ]; then
    "$SHARDPLAN" trace show "$mpi_bg_out" 2>/dev/null | grep -q "^state: *complete" &&
      fail "kill test: a complete-looking trace exists"
  fi
fi
finish
