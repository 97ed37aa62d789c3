#!/bin/sh
# tests/gpu-checks.sh — the checks that need a GPU, run on a GPU machine
# from a kit made by tests/gpu-kit.sh (which copies this file as KIT/run.sh).
# From the repository root on that machine:
#
#   sh KIT/run.sh KIT [LOGDIR]       (LOGDIR defaults to $OUT, else /tmp/gpu-checks)
#
#   0. the machine: GPUs, C library, any library the kit still lacks there
#   1. kernels bit-exact against the CPU references on random data
#      (SP_TEST_REQUIRE_GPU=1 tests/kernels/test_kernels_gpu)
#   2. kernel throughput against the device's copy bandwidth (bench-kernels)
#   3. the NCCL backend end to end on a one-rank communicator, both modes,
#      trace checked row by row (tests/exec/run-nccl.sh, GPU required)
#   4. one such run kept: `trace show` and its rows as CSV (nccl_est_ns:
#      NCCL's own estimate, -1 where NCCL gave none)
# Each step's output goes to LOGDIR/<n>-<name>.log; the summary says which
# passed.  Exit status: 0 all passed, 1 one failed, 77 no GPU visible.
set -u
K=$(cd "${1:?usage: run.sh KIT [LOGDIR]}" && pwd)
LOG=${2:-${OUT:-/tmp/gpu-checks}}
mkdir -p "$LOG"
src=$(pwd)
[ -f "$src/tests/exec/run-nccl.sh" ] || { echo "run.sh: run me from the repository root" >&2; exit 1; }

# NCCL: the system's, CUDA's, or the one PyTorch's wheels bring.
nccl_dir=
for d in $(ldconfig -p 2>/dev/null | sed -n 's/.*libnccl\.so\.2 .*=> \(.*\)\/libnccl\.so\.2$/\1/p') \
         /usr/local/cuda/lib64 /usr/local/cuda/lib \
         $(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null); do
  if [ -e "$d/libnccl.so.2" ]; then nccl_dir=$d; break; fi
done
export LD_LIBRARY_PATH="$K/lib${nccl_dir:+:$nccl_dir}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$K/bin:$PATH"
# Open MPI from the kit: its plugins and help texts, not the paths it was built with.
export OPAL_PKGLIBDIR="$K/lib/openmpi" OPAL_PKGDATADIR="$K/share/openmpi"
export OMPI_MCA_mca_base_component_path="$K/lib/openmpi"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export SHARDPLAN="$K/build/tools/shardplan" SP_BUILDDIR="$K/build" SP_SRCDIR="$src" MPIRUN="$K/bin/mpirun"

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi -L 2>&1
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv 2>&1
  ldd --version 2>&1 | head -1
  echo "libnccl.so.2 from: ${nccl_dir:-(not found)} $(readlink -f "$nccl_dir/libnccl.so.2" 2>/dev/null)"
  # What the machine lacks for the kit: libraries, C library versions, symbols.
  for f in "$K"/build/*/* "$K"/build/*/*/* "$K"/bin/*; do
    [ -f "$f" ] && [ -x "$f" ] || continue
    ldd -r "$f" 2>&1 | grep -E "not found|undefined symbol" | sed "s|^|$f: |"
  done
  "$SHARDPLAN" info 2>&1
} >"$LOG/0-machine.log" 2>&1
cat "$LOG/0-machine.log"
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "run.sh: no GPU visible: nothing to check" >&2
  exit 77
fi

failed=0
step () {
  name=$1; shift
  echo "== $name: $*"
  "$@" >"$LOG/$name.log" 2>&1
  rc=$?
  tail -n 25 "$LOG/$name.log"
  echo "== $name: exit $rc"
  [ "$rc" -eq 0 ] || failed=1
  echo "$name $rc" >>"$LOG/summary"
}
: >"$LOG/summary"
export SP_TEST_REQUIRE_GPU=1
step 1-kernels "$K/build/tests/kernels/test_kernels_gpu"
step 2-bench-kernels "$K/build/bench/bench-kernels"
step 3-run-nccl sh "$src/tests/exec/run-nccl.sh"
"$K/build/tests/exec/make-plan" one "$LOG/one.json" >/dev/null 2>&1
step 4-nccl-run "$MPIRUN" --oversubscribe -np 1 "$SHARDPLAN" run --plan "$LOG/one.json" -o "$LOG/nccl-one.h5" \
  --backend nccl --iters 5 --warmup 2 --timeout 60
"$SHARDPLAN" trace show "$LOG/nccl-one.h5" >"$LOG/4-trace-show.txt" 2>&1
"$SHARDPLAN" trace export "$LOG/nccl-one.h5" --format csv >"$LOG/4-rows.csv" 2>&1
head -n 12 "$LOG/4-rows.csv"
echo "== summary (step exit):"
cat "$LOG/summary"
exit "$failed"
