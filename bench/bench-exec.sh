#!/bin/sh
# bench/bench-exec.sh — executor overhead vs a bare MPI loop (bench-exec.c).
# Usage (from the build directory): ../bench/bench-exec.sh [NP] [ITERS] [SIZES…]
# Writes bench-exec-np<NP>.csv next to the printed table.
set -eu
np=${1:-2}
iters=${2:-100}
shift 2 2>/dev/null || true
sizes=${*:-1M 4M 16M}
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
flags=
mpirun --version 2>&1 | grep -q "Open MPI" && flags=--oversubscribe
# shellcheck disable=SC2086
mpirun $flags -np "$np" bench/bench-exec --iters "$iters" --warmup 10 --csv "bench-exec-np$np.csv" $sizes
