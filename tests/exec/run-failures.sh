#!/bin/sh
# Failures during a run: a wrong result, a stuck rank (per-op deadline), a
# rank killed with SIGKILL, and rank 0 killed.  Every rank must exit
# non-zero (mpirun's status), within 30 s for the stuck and killed cases,
# and no complete trace may exist; where rank 0 survives it leaves a
# readable partial trace, and where it does not, `shardplan trace recover`
# rebuilds one from the other ranks' spill files.
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
# That was the default check policy (after): the wrong result is found in
# the untimed validation pass, whose failure marks op 1's timed rows on
# rank 2 wrong (both iterations).
grep -q "rank 2: op 1 (rs.shard) in the validation pass: wrong result" "$tmp/err" ||
  fail "--check after: message does not name the validation pass: $(cat "$tmp/err")"
n_wrong=$("$SHARDPLAN" trace export "$tmp/wrong.h5" --format csv | grep -c "^1,-1,[01],2,.*,wrong,")
[ "$n_wrong" -eq 2 ] || fail "--check after: $n_wrong rows of op 1 on rank 2 are wrong, expected 2"
# 1c. The validation pass's verdicts reach the spill files as they are
# given: rank 1 stops at op 2 of that pass (timed iterations 0 and 1 done,
# ops 0 and 1 validated on every rank), the run ends on the deadline and
# leaves its spill files, and `trace recover` from them has the CHECKED
# flag on every row of ops 0 and 1 and on no row of the ops after.
# (A wrong verdict fails the run at the next sync, where every rank agrees
# and rank 0 writes the partial trace itself; the MARK record's status is
# read back in tests/exec/test_spill.c.)
SP_TEST_STALL_RANK=1 SP_TEST_STALL_OP=2 SP_TEST_STALL_ITER=2
export SP_TEST_STALL_RANK SP_TEST_STALL_OP SP_TEST_STALL_ITER
mpi 4 --plan "$tmp/rep.json" -o "$tmp/vstall.h5" --iters 2 --warmup 0 --timeout 3
unset SP_TEST_STALL_RANK SP_TEST_STALL_OP SP_TEST_STALL_ITER
[ "$status" -ne 0 ] || fail "validation stall: the run did not fail"
grep -q "validation pass" "$tmp/err" || fail "validation stall: message: $(cat "$tmp/err")"
"$SHARDPLAN" trace recover "$tmp"/vstall.h5.rank*.spill -o "$tmp/vstall-rec.h5" >/dev/null 2>"$tmp/rerr" ||
  fail "recover after a stall in the validation pass: $(cat "$tmp/rerr")"
"$SHARDPLAN" trace export "$tmp/vstall-rec.h5" --format csv >"$tmp/vstall-rec.csv"
# columns by name: op_id, parent_op_id, flags; CHECKED is bit 2 (4).
verdicts=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
  { op = $c["op_id"]; if ($c["parent_op_id"] >= 0) op = $c["parent_op_id"]
    chk = int($c["flags"] / 4) % 2
    if (op <= 1) { early++; early_chk += chk } else late_chk += chk }
  END { printf "%d %d %d", early, early_chk, late_chk }' "$tmp/vstall-rec.csv")
set -- $verdicts
[ "$1" -gt 0 ] && [ "$1" -eq "$2" ] && [ "$3" -eq 0 ] ||
  fail "recovered verdicts: $2 of $1 rows of ops 0-1 CHECKED (all expected), $3 later rows CHECKED (none expected)"
# The policy itself is in the spill header, so in the recovered trace too.
"$SHARDPLAN" trace show "$tmp/vstall-rec.h5" | grep -q "^checked: *after (" ||
  fail "recovered trace does not say its check policy: $("$SHARDPLAN" trace show "$tmp/vstall-rec.h5" | head -6)"

# 1b. The same with --check every: found in the first iteration that runs
# op 1 (timed iteration 0, no warm-up).
SP_TEST_CORRUPT_RANK=2 SP_TEST_CORRUPT_OP=1; export SP_TEST_CORRUPT_RANK SP_TEST_CORRUPT_OP
mpi 4 --plan "$tmp/rep.json" -o "$tmp/wrong-every.h5" --iters 2 --warmup 0 --timeout 30 --check every
unset SP_TEST_CORRUPT_RANK SP_TEST_CORRUPT_OP
[ "$status" -ne 0 ] || fail "--check every: a wrong result did not fail the run"
grep -q "rank 2: op 1 (rs.shard) in timed iteration 0: wrong result" "$tmp/err" ||
  fail "--check every: wrong result message: $(cat "$tmp/err")"
partial "$tmp/wrong-every.h5" "wrong result"
"$SHARDPLAN" trace export "$tmp/wrong-every.h5" --format csv | grep -q "^1,-1,0,2,.*,wrong," ||
  fail "--check every: no wrong row for op 1 on rank 2"

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
# The spill files are left; `trace recover` from all four gives the rows
# rank 0 wrote, exactly (same epoch and clock offsets).
"$SHARDPLAN" trace recover "$tmp"/stall.h5.rank*.spill -o "$tmp/stall-rec.h5" >/dev/null 2>"$tmp/rerr" ||
  fail "recover after a stuck rank: $(cat "$tmp/rerr")"
partial "$tmp/stall-rec.h5" "recovered from spill files of ranks 0, 1, 2, 3 (the run did not finish)"
"$SHARDPLAN" trace export "$tmp/stall.h5" --format csv | sort >"$tmp/stall.csv"
"$SHARDPLAN" trace export "$tmp/stall-rec.h5" --format csv | sort >"$tmp/stall-rec.csv"
[ "$(wc -l <"$tmp/stall.csv")" -gt 1 ] && cmp -s "$tmp/stall.csv" "$tmp/stall-rec.csv" ||
  fail "recovered rows differ from rank 0's partial trace: $(diff "$tmp/stall.csv" "$tmp/stall-rec.csv" | head -4)"

# Helpers of the two kill cases.
# start_long OUT: a long 4-rank run writing OUT in the background ($job),
# back once every rank's spill file exists.
start_long () {
  OMPI_ALLOW_RUN_AS_ROOT=1 timeout 300 "$MPIRUN" $MPIFLAGS -np 4 "$SHARDPLAN" run \
    --plan "$tmp/rep.json" -o "$1" --iters 100000 --warmup 0 --timeout 10 \
    >"$1.out" 2>"$1.err" &
  job=$!
  i=0
  while [ "$i" -lt 300 ] && [ "$(ls "$tmp" | grep -c "$(basename "$1").rank.*spill")" -lt 4 ]; do
    sleep 0.1; i=$((i + 1))
  done
  sleep 1
}
# ranks_of OUT: the pids of the shardplan ranks writing OUT
ranks_of () {
  pgrep -f -- "-o $1" | while read -r p; do
    [ "$(cat /proc/"$p"/comm 2>/dev/null)" = shardplan ] && echo "$p"; done
}
# kill_and_wait WHAT PID OUT: SIGKILL PID; the job must exit non-zero
# within 30 s and leave no rank running.
kill_and_wait () {
  start=$(date +%s)
  kill -9 "$2"
  wait "$job"
  kstatus=$?
  took=$(( $(date +%s) - start ))
  [ "$kstatus" -ne 0 ] || fail "$1: mpirun exited 0"
  [ "$took" -le 30 ] || fail "$1: the job took $took s after the kill (> 30 s)"
  sleep 1
  left=$(ranks_of "$3")
  [ -z "$left" ] || fail "$1: ranks still running: $left"
}

# 3. SIGKILL one rank of a long run; the rest must be gone within 30 s.
mpi_bg_out="$tmp/kill.h5"
start_long "$mpi_bg_out"
victim=$(ranks_of "$mpi_bg_out" | tail -n 1)
if [ -z "$victim" ]; then
  fail "kill test: no rank process found"
  kill "$job" 2>/dev/null
else
  kill_and_wait "kill test" "$victim" "$mpi_bg_out"
  if [ -e "$mpi_bg_out" ]; then
    "$SHARDPLAN" trace show "$mpi_bg_out" 2>/dev/null | grep -q "^state: *complete" &&
      fail "kill test: a complete-looking trace exists"
  fi
fi
# 4. SIGKILL rank 0 itself (found by the spill file it holds open): no
# trace is written; the other ranks exit non-zero within 30 s and leave
# their spill files, from which `trace recover` builds the partial trace.
out0="$tmp/kill0.h5"
start_long "$out0"
rank0=
for p in $(ranks_of "$out0"); do
  ls -l /proc/"$p"/fd 2>/dev/null | grep -q "kill0.h5.rank0.spill" && rank0=$p
done
if [ -z "$rank0" ]; then
  fail "kill rank 0: no process holds kill0.h5.rank0.spill"
  kill "$job" 2>/dev/null
else
  kill_and_wait "kill rank 0" "$rank0" "$out0"
  [ -e "$out0" ] && fail "kill rank 0: a trace was written without rank 0"
  for r in 1 2 3; do
    [ -s "$out0.rank$r.spill" ] || fail "kill rank 0: rank $r left no spill file"
  done
  # Rank 0's file lost too (say its node is gone): ranks 1-3 only.
  "$SHARDPLAN" trace recover "$out0.rank1.spill" "$out0.rank2.spill" "$out0.rank3.spill" \
    -o "$tmp/rec0.h5" >"$tmp/rout" 2>"$tmp/rerr" || fail "recover: $(cat "$tmp/rerr")"
  partial "$tmp/rec0.h5" "recovered from spill files of ranks 1, 2, 3; rank(s) 0 missing"
  "$SHARDPLAN" trace export "$tmp/rec0.h5" --format csv | tail -n +2 | cut -d, -f4 | sort -u \
    | tr '\n' ' ' >"$tmp/rranks"
  [ "$(cat "$tmp/rranks")" = "1 2 3 " ] || fail "recovered rows are of ranks '$(cat "$tmp/rranks")', not 1 2 3"
  grep -q "^ranks: *3 (world size 4)" "$tmp/show" || fail "recovered trace: $(grep ranks "$tmp/show")"
  grep -q "^plan: *sha256" "$tmp/show" || fail "recovered trace has no plan"
  # With rank 0's own file, its rows are back; the plan may be given.
  "$SHARDPLAN" trace recover "$out0".rank*.spill --plan "$tmp/rep.json" -o "$tmp/rec4.h5" \
    >/dev/null 2>"$tmp/rerr" || fail "recover with rank 0: $(cat "$tmp/rerr")"
  "$SHARDPLAN" trace export "$tmp/rec4.h5" --format csv | tail -n +2 | cut -d, -f4 | sort -u \
    | tr '\n' ' ' >"$tmp/rranks"
  [ "$(cat "$tmp/rranks")" = "0 1 2 3 " ] || fail "recovered rows (all files) are of ranks '$(cat "$tmp/rranks")'"

  # Bad input: exit 2, one line, nothing written.
  bad_recover () {
    what=$1; shift
    "$SHARDPLAN" trace recover "$@" -o "$tmp/bad.h5" >/dev/null 2>"$tmp/rerr"
    st=$?
    [ "$st" -eq 2 ] || fail "recover $what: exit $st, not 2"
    [ "$(wc -l <"$tmp/rerr")" -eq 1 ] || fail "recover $what: not one line: $(cat "$tmp/rerr")"
    ls "$tmp" | grep -q "^bad.h5" && fail "recover $what: left $(ls "$tmp" | grep bad.h5)"
  }
  bad_recover "of a plan file" "$tmp/rep.json"
  grep -q "not a shardplan spill file (bad magic)" "$tmp/rerr" || fail "bad magic: $(cat "$tmp/rerr")"
  bad_recover "of two runs" "$out0.rank1.spill" "$tmp/kill.h5.rank2.spill"
  grep -q "from run" "$tmp/rerr" || fail "two runs: $(cat "$tmp/rerr")"
  bad_recover "of one rank twice" "$out0.rank1.spill" "$out0.rank1.spill"
  "$MAKE_PLAN" all "$tmp/all.json" || exit 99
  bad_recover "with another plan" "$out0.rank1.spill" --plan "$tmp/all.json"
  "$SHARDPLAN" trace recover --help | grep -q "spill" || fail "trace recover --help"
fi

# 6. Rank 0 cannot write the trace (here: the output's name becomes a
# directory while rank 0 holds its temporary file; in practice a full
# disk): the run fails, and every rank keeps its spill file, the only copy
# of the measurements, which `trace recover` turns into the trace (every
# rank deleted its file, as after a written trace)
( SP_TEST_TEMP_PAUSE=4; export SP_TEST_TEMP_PAUSE
  mpi 4 --plan "$tmp/rep.json" -o "$tmp/nowrite.h5" --iters 2 --warmup 0 --timeout 30
  echo "$status" >"$tmp/nowrite.status" ) &
i=0
while [ $i -lt 600 ] && ! ls "$tmp" | grep -q '^nowrite\.h5\.tmp-'; do sleep 0.1; i=$((i + 1)); done
mkdir "$tmp/nowrite.h5"
wait
[ "$(cat "$tmp/nowrite.status")" -ne 0 ] || fail "a trace that could not be written: exit 0"
grep -q "spill files $tmp/nowrite.h5.rank\*.spill are kept" "$tmp/err" \
  || fail "unwritable trace: the message does not say the spill files are kept: $(cat "$tmp/err")"
n_spill=$(ls "$tmp" | grep -c '^nowrite\.h5\.rank[0-3]\.spill$')
[ "$n_spill" -eq 4 ] || fail "unwritable trace: $n_spill spill files left, expected 4"
"$SHARDPLAN" trace recover "$tmp"/nowrite.h5.rank*.spill -o "$tmp/nowrite-rec.h5" >/dev/null 2>"$tmp/rerr" \
  || fail "recover after an unwritable trace: $(cat "$tmp/rerr")"
# ... and running again with the same -o does not truncate them: refused
# before the first op, the files as they were
rmdir "$tmp/nowrite.h5"
cat "$tmp"/nowrite.h5.rank*.spill | cksum >"$tmp/spill.sum"
mpi 4 --plan "$tmp/rep.json" -o "$tmp/nowrite.h5" --iters 2 --warmup 0 --timeout 30
[ "$status" -ne 0 ] || fail "a run over an earlier run's spill files: exit 0"
grep -q "the spill file $tmp/nowrite.h5.rank[0-3].spill exists: an earlier run with this -o did not finish" \
  "$tmp/err" || fail "rerun over spill files: message: $(cat "$tmp/err")"
cat "$tmp"/nowrite.h5.rank*.spill | cksum | cmp -s - "$tmp/spill.sum" \
  || fail "rerun over spill files: the earlier run's spill files changed"
[ ! -e "$tmp/nowrite.h5" ] || fail "rerun over spill files: wrote a trace"
finish
