#!/bin/sh
# tests/gpu-kit.sh — pack this build's GPU checks, with the shared
# libraries and the Open MPI runtime they need, into one folder that can be
# carried to a GPU machine which has the CUDA driver, CUDA 13 and NCCL but
# none of GLib, HDF5, json-glib, Check or Open MPI (the project's device
# machines).  Run from a build directory configured with CUDA, NCCL and MPI
# and built (`make && make check` builds the test programs):
#
#   ../tests/gpu-kit.sh KIT        (e.g. ../.gpukit, a path git ignores)
#
# KIT gets build/ (the real executables behind libtool's wrappers, where
# the tests look for them: tools/shardplan, tests/kernels/test_kernels_gpu,
# bench/bench-kernels, tests/exec/check-trace, tests/exec/make-plan), bin/
# (Open MPI's mpirun and orted), lib/ (every library they and Open MPI's
# plugins load, CUDA's runtime included, except the C library,
# libstdc++/libgcc_s, the driver's libcuda and NCCL — 200 MB: the GPU
# machine's own is used, so it must be at least as new as the NCCL this
# build was compiled against), lib/openmpi/ (Open MPI's plugins), share/openmpi/ (its
# help texts), and run.sh (tests/gpu-checks.sh), which runs the checks
# there.  Prints the kit's size; exits 1 when something it needs is not
# built or a library cannot be found.
set -eu
kit=${1:?usage: gpu-kit.sh KIT}
[ -f config.status ] || { echo "gpu-kit: run me from a configured build directory" >&2; exit 1; }
srcdir=$(cd "$(dirname "$0")/.." && pwd)

# The real ELF of a program libtool may have wrapped.
real () {
  d=$(dirname "$1"); b=$(basename "$1")
  if [ -x "$d/.libs/$b" ]; then echo "$d/.libs/$b"; elif [ -x "$1" ]; then echo "$1"; else
    echo "gpu-kit: $1 is not built (make && make check first)" >&2; return 1
  fi
}

LD_LIBRARY_PATH=$(pwd)/lib/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
rm -rf "$kit"
mkdir -p "$kit/bin" "$kit/lib/openmpi" "$kit/share"
# The programs, where the tests look for them (SP_BUILDDIR=KIT/build).
for p in tools/shardplan tests/kernels/test_kernels_gpu bench/bench-kernels tests/exec/check-trace \
         tests/exec/make-plan; do
  mkdir -p "$kit/build/$(dirname "$p")"
  cp "$(real "$p")" "$kit/build/$p"
done
"$kit/build/tools/shardplan" info 2>/dev/null | grep -q "^ *nccl" ||
  { echo "gpu-kit: this build has no NCCL backend (configure found no NCCL, CUDA and MPI)" >&2; exit 1; }

# Open MPI: the launcher, its daemon, the plugins and help texts.
mpirun=$(command -v mpirun) || { echo "gpu-kit: no mpirun on PATH" >&2; exit 1; }
cp "$(readlink -f "$mpirun")" "$kit/bin/mpirun"
orted=$(command -v orted || true)
[ -z "$orted" ] || cp "$(readlink -f "$orted")" "$kit/bin/orted"
plugins=$(ompi_info --path pkglibdir --parsable 2>/dev/null | sed -n 's/^path:pkglibdir://p')
[ -d "$plugins" ] || { echo "gpu-kit: Open MPI's plugin folder not found (ompi_info)" >&2; exit 1; }
cp -a "$plugins"/. "$kit/lib/openmpi/"
helpdir=$(ompi_info --path pkgdatadir --parsable 2>/dev/null | sed -n 's/^path:pkgdatadir://p')
[ ! -d "$helpdir" ] || cp -a "$helpdir" "$kit/share/openmpi"

# Every library loaded (this build's own libraries first, above).
skip='^(libc|libm|libdl|libpthread|librt|libutil|libresolv|ld-linux.*|libstdc\+\+|libgcc_s|libcuda|libnccl|libnvidia.*)\.'
: >"$kit/missing"
find "$kit/build" "$kit/bin" "$kit/lib/openmpi" -type f \( -perm -u+x -o -name '*.so' \) |
while read -r f; do
  ldd "$f" 2>/dev/null | while read -r name arrow path rest; do
    [ "$arrow" = "=>" ] || continue
    ! echo "$name" | grep -Eq "$skip" || continue
    if [ "$path" = "not" ]; then echo "$f needs $name" >>"$kit/missing"; continue; fi
    [ -e "$kit/lib/$name" ] || cp -L "$path" "$kit/lib/$name"
  done
done
if [ -s "$kit/missing" ]; then
  echo "gpu-kit: libraries not found here:" >&2; cat "$kit/missing" >&2; exit 1
fi
rm -f "$kit/missing"
cp "$srcdir/tests/gpu-checks.sh" "$kit/run.sh"
chmod +x "$kit/run.sh"
echo "gpu-kit: $kit: $(du -sh "$kit" | cut -f1), $(ls "$kit/lib" | grep -c '\.so') libraries"
