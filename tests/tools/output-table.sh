# tests/tools/output-table.sh — sourced by output-safety.sh and
# output-signals.sh after cli-testlib.sh: every option of every subcommand
# that writes a file, as one table, and the inputs it needs (made in $tmp).
#
# One row per (subcommand, input it reads):
#   name | input fixture | input's name | output's name | writes | command
# In the command IN is the input under test and OUT the output; PLAN, TOPO,
# TRACE, LOG and SPILL are the shared inputs below (CSIM and CMEASURED: a
# simulated and a measured trace of one plan, for compare), SIDE another output
# next to OUT.  "writes": yes when the
# command runs to completion here (umask and signal checks), mpi when that
# needs spill files from an MPI run, no when it can only be refused (run).
# Input names end in .png/.svg where the output is a plot, so that the
# suffix check passes and the same-file check is what refuses.
OUTPUT_TABLE='
sim-plan        |plan    |plan.json        |o.h5   |yes|sim --plan IN -t TOPO -o OUT
sim-topo        |topo    |topo.ini         |o.h5   |yes|sim --plan PLAN -t IN -o OUT
plan-model      |model   |model.json       |o.json |yes|plan -m IN -t TOPO -s 4 -o OUT
plan-ds         |ds      |ds.json          |o.json |yes|plan -m gpt-1b -c IN -t TOPO -s 4 -o OUT
plan-topo       |topo    |topo.ini         |o.json |yes|plan -m gpt-1b -t IN -s 4 -o OUT
sweep-model     |model   |model.png        |o.png  |yes|sweep -m IN -t TOPO -n 1 --plot OUT
sweep-topo      |topo    |topo.svg         |o.svg  |yes|sweep -m MODEL -t IN -n 1 --plot OUT
sweep-ds-model  |model   |model.json       |o.json |yes|sweep -m IN -t TOPO -n 1 --emit-deepspeed-config OUT
sweep-ds-topo   |topo    |topo.ini         |o.json |yes|sweep -m MODEL -t IN -n 1 --emit-deepspeed-config OUT
compare-sim     |csim    |sim.png          |o.png  |yes|compare IN CMEASURED --plot OUT
compare-measured|cmeas   |measured.svg     |o.svg  |yes|compare CSIM IN --plot OUT
calibrate       |measured|measured.h5      |o.ini  |yes|calibrate IN -t p3dn -o OUT
calibrate-hold  |held    |held.h5          |o.ini  |yes|calibrate MEASURED -t p3dn --holdout file:IN -o OUT
export-csv      |trace   |t.h5             |o.csv  |yes|trace export --format csv IN -o OUT
export-chrome   |trace   |t.h5             |o.json |yes|trace export --format chrome IN -o OUT
import          |log     |log.txt          |o.h5   |yes|trace import-nccl-tests IN --topology p3dn -o OUT
import-plan-out |log     |log.txt          |o.json |yes|trace import-nccl-tests IN --topology p3dn -o SIDE --plan-out OUT
recover         |spill   |r.h5.rank0.spill |o.h5   |mpi|trace recover IN -o OUT
recover-plan    |plan    |plan.json        |o.h5   |no |trace recover SPILL --plan IN -o OUT
run-plan        |plan    |plan.json        |o.h5   |no |run --plan IN -o OUT
run-topo        |topo    |topo.ini         |o.h5   |no |run --plan PLAN -t IN -o OUT
'

# The shared inputs.
fx="$SP_SRCDIR/tests/fixtures"
mkdir -p "$tmp/fx"
TOPO="$SP_SRCDIR/tests/sim/sweep-small.ini"
MODEL="$fx/workload/small.json"
LOG="$fx/nccltests/all_reduce-2019.txt"
PLAN="$tmp/fx/plan.json"
TRACE="$tmp/fx/sim.h5"
MEASURED="$tmp/fx/measured.h5"
SPILL="$tmp/fx/r.h5.rank0.spill"
"$SHARDPLAN" plan -m "$MODEL" -t "$TOPO" -s 4 -o "$PLAN" >/dev/null 2>&1 || exit 99
"$SHARDPLAN" sim --plan "$PLAN" -t "$TOPO" -o "$TRACE" >/dev/null 2>&1 || exit 99
"$SHARDPLAN" trace import-nccl-tests "$LOG" --topology p3dn -o "$MEASURED" >/dev/null 2>&1 || exit 99
"$SHARDPLAN" trace import-nccl-tests "$fx/nccltests/reduce_scatter-nocheck.txt" --topology p3dn \
  -o "$tmp/fx/held.h5" >/dev/null 2>&1 || exit 99
printf 'not a spill file, but a file\n' >"$SPILL"
CSIM="$tmp/fx/cmp/sim.h5"
CMEASURED="$tmp/fx/cmp/measured-nccl.h5"
mkdir -p "$tmp/fx/cmp"
"$SP_BUILDDIR/tests/lib/test_compare" --write-nccl "$tmp/fx/cmp" >/dev/null 2>&1 || exit 99
HAVE_MPI=yes
"$SHARDPLAN" run --plan /nonexistent -o /nonexistent 2>&1 | grep -q "has no MPI" && HAVE_MPI=no

# fixture NAME: the file a row's "input fixture" column names.
fixture () {
  case $1 in
    plan) echo "$PLAN" ;;
    topo) echo "$TOPO" ;;
    model) echo "$MODEL" ;;
    ds) echo "$fx/workload/small-ds.json" ;;
    trace) echo "$TRACE" ;;
    csim) echo "$CSIM" ;;
    cmeas) echo "$CMEASURED" ;;
    measured) echo "$MEASURED" ;;
    held) echo "$tmp/fx/held.h5" ;;
    log) echo "$LOG" ;;
    spill) echo "$SPILL" ;;
  esac
}

# command_line COMMAND IN OUT: the row's command with its placeholders
# filled in (paths have no spaces: they are under $tmp).
command_line () {
  echo "$1" | sed -e "s|\bIN\b|$2|g" -e "s|\bOUT\b|$3|g" -e "s|\bPLAN\b|$PLAN|g" \
    -e "s|\bTOPO\b|$TOPO|g" -e "s|\bMODEL\b|$MODEL|g" -e "s|\bTRACE\b|$TRACE|g" \
    -e "s|\bMEASURED\b|$MEASURED|g" -e "s|\bCSIM\b|$CSIM|g" -e "s|\bCMEASURED\b|$CMEASURED|g" -e "s|\bSIDE\b|$(dirname "$3")/side.h5|g" \
    -e "s|\bSPILL\b|$SPILL|g"
}

# for_each_row FUNCTION: calls FUNCTION NAME FIXTURE INPUT_NAME OUTPUT_NAME
# WRITES COMMAND for every row (fields trimmed).
# (A redirected loop, not a pipeline: it runs in this shell, so fail()
# counts.)
for_each_row () {
  while IFS='|' read -r name src inname outname writes cmd; do
    [ -n "$name" ] || continue
    # shellcheck disable=SC2086
    "$1" "$(echo $name)" "$(echo $src)" "$(echo $inname)" "$(echo $outname)" "$(echo $writes)" "$cmd" \
      </dev/null
  done <<EOF
$OUTPUT_TABLE
EOF
}
