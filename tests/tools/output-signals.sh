#!/bin/sh
# Ctrl-C, SIGTERM, SIGHUP and SIGPIPE (a closed pipe on standard output)
# during a write leave no temporary file: for every subcommand that writes
# (the table in output-table.sh), the write is stopped with its temporary
# file open (test hook SP_TEST_TEMP_PAUSE in lib/file.c), the signal is
# sent, and then the process must have died of that signal (status 130,
# 143, 129, 141), no temporary PATH.tmp-* file may be left and no output
# written.  With MPI, an interrupted `shardplan run` keeps its
# spill files and says that `shardplan trace recover` turns them into a
# trace.
SP_TEST_NAME=output-signals
. "$SP_SRCDIR/tests/tools/cli-testlib.sh"
. "$SP_SRCDIR/tests/tools/output-table.sh"

# A background job of a script starts with SIGINT ignored, and shardplan
# (rightly) leaves an ignored signal ignored: start it with the default.
if env --default-signal=INT true 2>/dev/null; then
  DEFAULT_SIGNALS="env --default-signal=INT,TERM,HUP,PIPE"
elif command -v perl >/dev/null 2>&1; then
  DEFAULT_SIGNALS="perl -e \$SIG{INT}=\$SIG{TERM}=\$SIG{HUP}=\$SIG{PIPE}=q(DEFAULT);exec(@ARGV)or(die)"
else
  echo "SKIP: cannot start a background process with SIGINT at its default"
  exit 77
fi

# wait_for_temp DIR: until a temporary file appears in DIR (at most 10 s).
wait_for_temp () {
  i=0
  while [ $i -lt 100 ]; do
    ls "$1" | grep -q '\.tmp-' && return 0
    sleep 0.1
    i=$((i + 1))
  done
  return 1
}

# signal_row: every signal on one row that runs (see for_each_row).
signal_row () {
  name=$1 src=$(fixture "$2") outname=$4 writes=$5 cmd=$6
  [ "$writes" = yes ] || return 0
  for s in INT:130 TERM:143 HUP:129 PIPE:141; do
    sig=${s%:*} want=${s#*:}
    d="$tmp/$name-$sig"
    mkdir -p "$d"
    # shellcheck disable=SC2046
    SP_TEST_TEMP_PAUSE=60 $DEFAULT_SIGNALS "$SHARDPLAN" $(command_line "$cmd" "$src" "$d/$outname") \
      >/dev/null 2>"$tmp/err" &
    pid=$!
    if ! wait_for_temp "$d"; then
      fail "$name: no temporary file appeared in $d: $(cat "$tmp/err")"
      kill -KILL $pid 2>/dev/null
      wait $pid
      continue
    fi
    kill -"$sig" $pid
    wait $pid
    st=$?
    [ "$st" -eq "$want" ] || fail "$name: SIG$sig: exit $st, expected $want: $(cat "$tmp/err")"
    ls "$d" | grep -q '\.tmp-' && fail "$name: SIG$sig left $(ls "$d")"
    [ ! -e "$d/$outname" ] || fail "$name: SIG$sig: the output was written"
  done
}
for_each_row signal_row

# `shardplan run` under mpirun, its ranks ended by SIGTERM while rank 1
# is stuck (as a batch system ends a job, or mpirun on Ctrl-C — whose
# forwarding of the ranks' last output is best-effort, hence the direct
# signal here): the spill files stay, and rank 0 says what turns them into
# a trace.
if [ "$HAVE_MPI" = yes ] && [ -n "${MPIRUN:-}" ] && [ -x "$SP_BUILDDIR/tests/exec/make-plan" ]; then
  OMPI_ALLOW_RUN_AS_ROOT=1; OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
  MPIFLAGS=
  "$MPIRUN" --version 2>&1 | grep -q "Open MPI" && MPIFLAGS="--oversubscribe -x SP_TEST_STALL_RANK -x SP_TEST_STALL_OP"
  if timeout 60 "$MPIRUN" $MPIFLAGS -np 1 true >/dev/null 2>&1; then
    "$SP_BUILDDIR/tests/exec/make-plan" replicate "$tmp/rep.json" || exit 99
    d="$tmp/run"
    mkdir -p "$d"
    SP_TEST_STALL_RANK=1 SP_TEST_STALL_OP=1; export SP_TEST_STALL_RANK SP_TEST_STALL_OP
    "$MPIRUN" $MPIFLAGS -np 4 "$SHARDPLAN" run --plan "$tmp/rep.json" -o "$d/r.h5" --iters 2 \
      --warmup 0 --timeout 100 >/dev/null 2>"$tmp/run-err" &
    pid=$!
    unset SP_TEST_STALL_RANK SP_TEST_STALL_OP
    i=0
    while [ $i -lt 300 ] && [ ! -s "$d/r.h5.rank3.spill" ]; do
      sleep 0.1
      i=$((i + 1))
    done
    sleep 1 # rank 1 is stuck in op 1 by now
    # the shardplan processes among the launcher's descendants (Open MPI
    # forks them itself, MPICH's hydra through a proxy)
    ranks=$(ps -e -o pid=,ppid=,comm= 2>/dev/null | awk -v root=$pid '
      { parent[$1] = $2; comm[$1] = $3 }
      END { for (p in parent) { q = p
              while (q in parent && q != root && q > 1) q = parent[q]
              if (q == root && comm[p] ~ /shardplan/) print p } }')
    if [ -z "$ranks" ]; then
      fail "run: no rank process found under mpirun ($pid)"
      kill -KILL $pid
    else
      # Rank 0 (the one that writes the note) first, the others a second
      # later: when every rank gets SIGTERM at once, mpirun sometimes ends
      # rank 0 before it forwards what rank 0 wrote (1 of 14 runs here).
      r0=
      rest=
      for p in $ranks; do
        if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null \
            | grep -qx 'OMPI_COMM_WORLD_RANK=0\|PMI_RANK=0'; then
          r0=$p
        else
          rest="$rest $p"
        fi
      done
      if [ -n "$r0" ]; then
        kill -TERM "$r0"
        sleep 1
        # shellcheck disable=SC2086
        kill -TERM $rest 2>/dev/null
      else
        # shellcheck disable=SC2086
        kill -TERM $ranks
      fi
    fi
    wait $pid
    st=$?
    [ "$st" -ne 0 ] || fail "run: ended by SIGTERM, yet exit 0"
    ls "$d"/r.h5.rank*.spill >/dev/null 2>&1 || fail "run: the spill files were not kept: $(ls "$d")"
    grep -q "interrupted: the spill files $d/r.h5.rank\*.spill are kept; 'shardplan trace recover" \
      "$tmp/run-err" || fail "run: no word on trace recover: $(cat "$tmp/run-err")"
    # `trace recover` needs real spill files: those this run left.  Its
    # signals here, and its umask (the other rows' is in output-safety.sh).
    if [ -s "$d/r.h5.rank0.spill" ]; then
      SPILL="$d/r.h5.rank0.spill"
      mpi_row () {
        [ "$5" = mpi ] || return 0
        signal_row "$1" "$2" "$3" "$4" yes "$6"
        for m in 022:644 077:600; do
          # shellcheck disable=SC2046
          (umask "${m%:*}" && "$SHARDPLAN" $(command_line "$6" "$SPILL" "$tmp/rec.h5")) \
            >/dev/null 2>"$tmp/err" || { fail "$1: exit $?: $(cat "$tmp/err")"; continue; }
          mode=$(stat -c %a "$tmp/rec.h5")
          [ "$mode" = "${m#*:}" ] || fail "$1: umask ${m%:*} gave mode $mode, expected ${m#*:}"
          rm -f "$tmp/rec.h5"
        done
      }
      for_each_row mpi_row
    else
      fail "run: no spill file of rank 0 to recover from"
    fi
  else
    echo "note: $MPIRUN cannot start a job here: the run check is skipped"
  fi
fi
finish
