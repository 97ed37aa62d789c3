#!/bin/sh
# The progress line of the long commands (tools/progress.h): sim, trace
# export, compare, calibrate, sweep, chakra export and run (rank 0, when MPI
# is built and a launcher runs).
#   (a) stderr into a file: no progress text at all (no carriage return, no
#       terminal code, no "N/M unit"), even with SP_TEST_PROGRESS=nodelay,
#       which takes the 1 s delay away — so a non-terminal really is what
#       keeps it off;
#   (b) stderr on a pseudo-terminal (util-linux `script`): each command
#       draws "shardplan CMD: … N/M UNIT" (calibrate: "N UNIT", its total is
#       not known), ends on the full count, clears the line ("\r" + erase)
#       before its closing line, and its standard output is byte for byte
#       the one of (a); a sim long enough to pass the real 1 s delay draws
#       without the hook;
#   (c) -q/--quiet: nothing drawn on the terminal, even with
#       SP_TEST_PROGRESS=tty (which draws into a file without --quiet), and
#       no closing "wrote" line.
# Without `script`, (b) runs with SP_TEST_PROGRESS=tty into a file instead.
SP_TEST_NAME=progress
. "$SP_SRCDIR/tests/tools/cli-testlib.sh"
fx="$SP_SRCDIR/tests/fixtures/nccltests"
ESC=$(printf '\033')
CR=$(printf '\r')

have_script=no
if script -qec true /dev/null >/dev/null 2>&1; then
  have_script=yes
fi

# quote ARG: ARG as one shell word.
quote () {
  printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}

# on_tty OUT TS ARGS…: `shardplan ARGS…` with stdout into OUT and stderr on
# a pseudo-terminal recorded in TS (or, without script, into TS with the
# test hook making it draw).  Leaves $status.
on_tty () {
  tty_out=$1 tty_ts=$2
  shift 2
  if [ "$have_script" = yes ]; then
    tty_line="$(quote "$SHARDPLAN")"
    for a in "$@"; do
      tty_line="$tty_line $(quote "$a")"
    done
    script -qec "$tty_line >$(quote "$tty_out")" /dev/null >"$tty_ts" 2>&1 </dev/null
    status=$?
  else
    SP_TEST_PROGRESS=tty "$SHARDPLAN" "$@" >"$tty_out" 2>"$tty_ts"
    status=$?
  fi
}

# no_progress WHAT FILE: FILE holds no progress text.
no_progress () {
  if grep -q "$CR\|$ESC" "$2" || grep -Eq '[0-9]+/[0-9,]+ [a-z]' "$2" \
     || grep -q 'collective estimates' "$2"; then
    fail "$1: progress text where there must be none: $(od -c "$2" | head -5)"
  fi
}

# drew WHAT TS CMD PATTERN: TS has a progress line of `shardplan CMD`
# matching PATTERN (a grep -E regular expression after "CMD: "), its last
# line ends on the full count, and it was cleared.
drew () {
  tr '\r' '\n' <"$2" >"$tmp/lines"
  grep -Eq "^shardplan $3: .*$4" "$tmp/lines" \
    || fail "$1: no progress line 'shardplan $3: … $4': $(od -c "$2" | head -8)"
  last=$(grep -E "^shardplan $3: .*$4" "$tmp/lines" | tail -n 1)
  case $last in
    *"100% "*) ;;
    *"%"*) fail "$1: the last progress line is not the full count: $last" ;;
  esac
  grep -q "$CR$ESC\\[K" "$2" || fail "$1: the progress line was not cleared"
}

# ----------------------------------------------------------------- inputs
"$SHARDPLAN" plan -t dgx-h100 -n 2 -o "$tmp/p.json" >/dev/null 2>&1 \
  || { echo "FAIL: cannot make a plan"; exit 1; }
"$SHARDPLAN" sim --plan "$tmp/p.json" -o "$tmp/s.h5" >/dev/null 2>&1 \
  || { echo "FAIL: cannot simulate the plan"; exit 1; }
"$SHARDPLAN" trace import-nccl-tests "$fx/all_gather-new.txt" -o "$tmp/ag.h5" --topology dgx-h100 \
  >/dev/null 2>&1 || { echo "FAIL: cannot import the fixture"; exit 1; }
awk 'BEGIN { OFS = "  " }
     /^ *[0-9]/ && NF == 13 { $6 = sprintf ("%.2f", $6 * 2); $10 = sprintf ("%.2f", $10 * 2) }
     { print }' "$fx/all_gather-new.txt" >"$tmp/doubled.txt"
"$SHARDPLAN" trace import-nccl-tests "$tmp/doubled.txt" -o "$tmp/ag2.h5" --topology dgx-h100 \
  >/dev/null 2>&1 || { echo "FAIL: cannot import the doubled fixture"; exit 1; }
"$SHARDPLAN" trace import-nccl-tests "$fx/all_reduce-2019.txt" --topology p3dn -o "$tmp/ar.h5" \
  >/dev/null 2>&1 || { echo "FAIL: cannot import the fixture"; exit 1; }
chakra=no
"$SHARDPLAN" chakra export --help >/dev/null 2>&1 && chakra=yes
sweep_topo="$SP_SRCDIR/tests/sim/sweep-small.ini"

# Each command: NAME|COMMAND|UNIT PATTERN|ARGS (stdout is compared between
# runs; the arguments name no file that differs between the runs).
i=0
while IFS='|' read -r name cmd unit args; do
  [ -n "$name" ] || continue
  [ "$name" = chakra ] && [ "$chakra" = no ] && continue
  i=$((i + 1))
  # shellcheck disable=SC2086
  set -- $args
  # (a) stderr into a file, the delay taken away: nothing
  SP_TEST_PROGRESS=nodelay "$SHARDPLAN" "$@" >"$tmp/a$i.out" 2>"$tmp/a$i.err"
  [ $? -eq 0 ] || fail "$name: exited non-zero: $(cat "$tmp/a$i.err")"
  no_progress "$name, stderr in a file" "$tmp/a$i.err"
  # (b) on a terminal: drawn, cleared, same stdout
  SP_TEST_PROGRESS=nodelay on_tty "$tmp/b$i.out" "$tmp/b$i.ts" "$@"
  [ "$status" -eq 0 ] || fail "$name on a terminal: exited $status: $(cat "$tmp/b$i.ts")"
  drew "$name" "$tmp/b$i.ts" "$cmd" "$unit"
  if [ "$name" = calibrate ]; then
    # the report says how long the fit took: compare the rest
    grep -v '^fit:' "$tmp/a$i.out" >"$tmp/a$i.cmp"
    grep -v '^fit:' "$tmp/b$i.out" >"$tmp/b$i.cmp"
  else
    cp "$tmp/a$i.out" "$tmp/a$i.cmp"
    cp "$tmp/b$i.out" "$tmp/b$i.cmp"
  fi
  cmp -s "$tmp/a$i.cmp" "$tmp/b$i.cmp" || fail "$name: standard output differs with progress"
  # (c) --quiet: nothing, on a terminal or with the hook drawing into a file
  SP_TEST_PROGRESS=nodelay on_tty "$tmp/c$i.out" "$tmp/c$i.ts" "$@" --quiet
  [ "$status" -eq 0 ] || fail "$name --quiet: exited $status: $(cat "$tmp/c$i.ts")"
  no_progress "$name --quiet on a terminal" "$tmp/c$i.ts"
  grep -q 'wrote' "$tmp/c$i.ts" && fail "$name --quiet: a closing line: $(cat "$tmp/c$i.ts")"
  SP_TEST_PROGRESS=tty "$SHARDPLAN" "$@" -q >"$tmp/d$i.out" 2>"$tmp/d$i.err"
  no_progress "$name -q with SP_TEST_PROGRESS=tty" "$tmp/d$i.err"
  SP_TEST_PROGRESS=tty "$SHARDPLAN" "$@" >"$tmp/e$i.out" 2>"$tmp/e$i.err"
  drew "$name with SP_TEST_PROGRESS=tty" "$tmp/e$i.err" "$cmd" "$unit"
done <<EOF
sim|sim|[0-9,]+/[0-9,]+ op instances|sim --plan $tmp/p.json
sim -o|sim|[0-9,]+/[0-9,]+ ops written|sim --plan $tmp/p.json -o $tmp/s2.h5
trace export|trace export|[0-9,]+/[0-9,]+ rows|trace export -f csv $tmp/s.h5
compare|compare|[0-9,]+/[0-9,]+ rows read and joined|compare $tmp/ag2.h5 $tmp/ag.h5
calibrate|calibrate|[0-9,]+ collective estimates|calibrate $tmp/ar.h5 --topology p3dn -o $tmp/cal.ini
sweep|sweep|[0-9,]+/[0-9,]+ configurations|sweep -m gpt-1b -t $sweep_topo --nodes 2 --sim-model analytic
chakra|chakra export|[0-9,]+/[0-9,]+ files|chakra export --plan $tmp/p.json -o $tmp/et
EOF
[ "$i" -ge 6 ] || fail "only $i commands ran"

# The trace export's rows: all of them, on the full line.
tr '\r' '\n' <"$tmp/b3.ts" | grep -q "^shardplan trace export: .*100% [0-9,]*/[0-9,]* rows" \
  || fail "trace export: no line at 100 %"

# A simulation that runs past the real delay (no hook) draws too.
if [ "$have_script" = yes ]; then
  "$SHARDPLAN" plan -t dgx-h100 -n 2 --grad-accum 1500 -o "$tmp/long.json" >/dev/null 2>&1 \
    || fail "cannot make the long plan"
  start=$(date +%s%N)
  on_tty "$tmp/long.out" "$tmp/long.ts" sim --plan "$tmp/long.json"
  end=$(date +%s%N)
  [ "$status" -eq 0 ] || fail "long sim: exited $status"
  "$SHARDPLAN" sim --plan "$tmp/long.json" >"$tmp/long-ref.out" 2>"$tmp/long-ref.err"
  no_progress "long sim, stderr in a file" "$tmp/long-ref.err"
  cmp -s "$tmp/long.out" "$tmp/long-ref.out" || fail "long sim: standard output differs"
  # the line needs the simulation itself (after the plan is read) to run
  # past the 1 s delay: ask for it only when the whole command took 2.5 s
  # (whole seconds of `date +%s` made a 1.1 s run look like 2)
  if [ $(((end - start) / 1000000)) -ge 2500 ]; then
    drew "long sim" "$tmp/long.ts" sim "[0-9,]+/[0-9,]+ op instances"
  else
    echo "note: the long sim took under 2.5 s here: its line is not required"
  fi
fi

# run: rank 0 draws (its stderr is a pipe to mpirun, whose stderr is the
# terminal), the other ranks never do.
if [ "$have_script" = yes ] && [ -n "${MPIRUN:-}" ] \
   && ! "$SHARDPLAN" run --plan /nonexistent -o /nonexistent 2>&1 | grep -q "has no MPI"; then
  OMPI_ALLOW_RUN_AS_ROOT=1; OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
  flags=
  "$MPIRUN" --version 2>&1 | grep -q "Open MPI" && flags=--oversubscribe
  if timeout 60 "$MPIRUN" $flags -np 1 true >/dev/null 2>&1; then
    "$SP_BUILDDIR/tests/exec/make-plan" all "$tmp/all.json" || fail "make-plan"
    runargs="--plan $tmp/all.json -o $tmp/r.h5 --iters 2 --warmup 1 --timeout 60 --backend mpi"
    # shellcheck disable=SC2086
    SP_TEST_PROGRESS=nodelay timeout 300 "$MPIRUN" $flags -np 4 "$SHARDPLAN" run $runargs \
      >/dev/null 2>"$tmp/run.err" || fail "run: $(cat "$tmp/run.err")"
    no_progress "run, stderr in a file" "$tmp/run.err"
    SP_TEST_PROGRESS=nodelay script -qec "timeout 300 $MPIRUN $flags -np 4 $(quote "$SHARDPLAN") run $runargs" \
      /dev/null >"$tmp/run.ts" 2>&1 </dev/null || fail "run on a terminal: $(cat "$tmp/run.ts")"
    drew "run" "$tmp/run.ts" run "[0-9,]+/[0-9,]+ op steps"
    # one reporter (rank 0): its counts never go back, as those of ranks
    # drawing over each other would
    tr '\r' '\n' <"$tmp/run.ts" | sed -n 's|^shardplan run: .* \([0-9,]*\)/[0-9,]* op steps.*|\1|p' \
      | tr -d , | awk 'NR > 1 && $1 < last { bad = 1 } { last = $1 } END { exit bad }' \
      || fail "run: the count went back (several ranks drew): $(tr '\r' '\n' <"$tmp/run.ts")"
    SP_TEST_PROGRESS=nodelay script -qec "timeout 300 $MPIRUN $flags -np 4 $(quote "$SHARDPLAN") run $runargs -q" \
      /dev/null >"$tmp/runq.ts" 2>&1 </dev/null || fail "run -q: $(cat "$tmp/runq.ts")"
    no_progress "run -q on a terminal" "$tmp/runq.ts"
    grep -q wrote "$tmp/runq.ts" && fail "run -q: a closing line"
  fi
fi
finish
