#!/bin/sh
# Speed of `shardplan sim` and `shardplan sweep` (issue 4 targets: a full
# gpt-13b step plan on 1,024 GPUs in <= 1 s; the whole default sweep for
# 4,096 GPUs in <= 10 s on 2 cores), with the default contention model
# (step: the whole step on one flow network) and, for comparison, the
# family model.  Usage: bench/bench-sweep.sh [BUILDDIR]
set -eu
b=${1:-.}
sp="$b/tools/shardplan"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/shardplan-bench-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
t () { /usr/bin/time -f "%e s wall, %U s user, %M KB peak" "$@"; }
"$sp" plan -n 128 -o "$tmp/p1024.json" >/dev/null
for c in step family; do
  echo "== [$c] default sweep (gpt-13b on 16 x dgx-h100, des)"
  t "$sp" sweep --contention $c >/dev/null
  echo "== [$c] sim: gpt-13b step plan on 1,024 GPUs (128 x dgx-h100, des), summary only"
  t "$sp" sim --plan "$tmp/p1024.json" -t dgx-h100 -n 128 --contention $c >/dev/null
  echo "== [$c] sim: the same with the trace written (-o)"
  t "$sp" sim --plan "$tmp/p1024.json" -t dgx-h100 -n 128 --contention $c -o "$tmp/s.h5" >/dev/null
  echo "== [$c] sweep: gpt-13b on 512 x dgx-h100 (4,096 GPUs, des), 2 threads"
  t "$sp" sweep --nodes 512 --jobs 2 --contention $c >/dev/null
  echo "== [$c] the same, 1 thread"
  t "$sp" sweep --nodes 512 --jobs 1 --contention $c >/dev/null
done
