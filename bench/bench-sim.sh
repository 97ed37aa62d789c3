#!/bin/sh
# bench-sim.sh [path/to/bench-sim] — the simulator's speed targets (issue 4):
# 1 GiB all-reduce, 8 GPUs/node, rail fabric 2:1, des model, one process per
# rank count so peak RSS is per size.  Wall time from GNU time; the program
# prints its own estimate time too.
B=${1:-./bench/bench-sim}
for algo in auto ring; do
  for ranks in 1024 16384 131072; do
    /usr/bin/time -f "  [/usr/bin/time] %e s wall, %M KiB max RSS" "$B" --algorithm "$algo" "$ranks"
  done
done
