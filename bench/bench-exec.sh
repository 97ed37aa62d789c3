#!/bin/sh
# bench/bench-exec.sh — executor overhead vs a bare MPI loop (bench-exec.c).
# Usage (from the build directory): ../bench/bench-exec.sh [NP] [ITERS] [PASSES] [SIZES…]
# ITERS timed iterations per pass and configuration (bare, executor with
# --check none, executor with its default --check after; bare and executor
# on the same buffers), PASSES passes in rotated order.  Prints the load
# average before and after (the numbers mean little on a loaded machine)
# and writes bench-exec-np<NP>.csv.
# SP_BENCH_PLACEMENT=1: also run the bare loop on a second set of buffers
# ("moved"), to see what the memory alone does to an op's time.
# SP_BENCH_PRIORITY=1 (root only): run in a new session whose scheduler
# autogroup gets nice -19, so that other sessions' builds on a shared
# machine take less CPU from the ranks (bare and executor alike).
set -eu
if [ "${SP_BENCH_PRIORITY:-0}" = 1 ] && [ -z "${SP_BENCH_RAISED:-}" ]; then
  SP_BENCH_RAISED=1; export SP_BENCH_RAISED
  exec setsid sh -c 'echo -19 >/proc/self/autogroup && exec nice -n -19 "$0" "$@"' "$0" "$@"
fi
np=${1:-2}
iters=${2:-20}
passes=${3:-6}
shift 3 2>/dev/null || shift $#
sizes=${*:-1M 4M 16M}
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
flags=
placement=
[ "${SP_BENCH_PLACEMENT:-0}" = 1 ] && placement=--placement
mpirun --version 2>&1 | grep -q "Open MPI" && flags=--oversubscribe
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime)"
[ -r /proc/self/autogroup ] && echo "# scheduler: $(cat /proc/self/autogroup), nice $(nice)"
# shellcheck disable=SC2086
mpirun $flags -np "$np" bench/bench-exec --iters "$iters" --warmup 10 --passes "$passes" \
  $placement --csv "bench-exec-np$np.csv" $sizes
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime)"
