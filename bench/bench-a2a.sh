#!/bin/sh
# bench-a2a.sh [path/to/bench-sim] — issue 10: a 1 GiB all-to-all over
# 16,384 ranks (2,048 nodes x 8 H100, rail fabric 2:1) with the des model
# (contention: max-min over the network) in <= 10 s and <= 4 GB.  One
# process per rank count, so GNU time -v's wall clock and maximum resident
# set size are per size; bench-sim prints the simulated time and its own
# wall time of the estimate.  Run from the build directory.
B=${1:-./bench/bench-sim}
tmp=$(mktemp); trap 'rm -f "$tmp"' EXIT
for ranks in 2048 16384 131072; do
  /usr/bin/time -v "$B" --collective all_to_all --bytes 1G --fabric rail --oversubscription 2 "$ranks" 2>"$tmp" || cat "$tmp"
  sed -n 's/^[[:space:]]*\(Elapsed (wall clock) time.*\|Maximum resident set size.*\)/  [time -v] \1/p' "$tmp"
done
