#!/bin/sh
# bench-import.sh — issue 15, finding 5: `shardplan trace import-nccl-tests`
# on a log at the importer's size limit (64 MiB) must take seconds, not the
# hours a quadratic scan of its "#  Rank" and "NCCL_x set by environment"
# lines would.
#
# Usage: bench/bench-import.sh [SHARDPLAN] [RANKS] [RUNS] [BYTES]
#   SHARDPLAN  the built binary (default: $SHARDPLAN, else ./tools/shardplan)
#   RANKS      "#  Rank" lines, a multiple of 8 (default 262144); the rest of
#              the log is filled with distinct NCCL_x environment lines
#   RUNS       repetitions (default 3)
#   BYTES      the log's size (default 67108864, the importer's limit;
#              smaller logs show how a slow importer scales)
# The synthetic log (generated with awk, nccl-tests' line formats) is an
# all_reduce_perf run of RANKS ranks on 8-GPU nodes, one size, out-of-place
# and in-place: 2 points, 2 x RANKS trace rows.  Prints the machine, the date,
# the command, one line per run (wall seconds, CPU seconds = user + system,
# max RSS, MB/s of log) and appends the same as tab-separated values (date,
# bytes, ranks, env lines, wall, cpu, MB, MB/s) to $BENCH_TSV (default
# bench-import.tsv).
# Measured with GNU time (`/usr/bin/time -v`; apt-get install time).
set -u
bin=${1:-${SHARDPLAN:-./tools/shardplan}}
ranks=${2:-262144}
runs=${3:-3}
limit=${4:-67108864}
tsv=${BENCH_TSV:-bench-import.tsv}

[ -x "$bin" ] || { echo "bench-import: $bin is not an executable (build tools/shardplan first)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench-import: /usr/bin/time is missing (apt-get install time)" >&2; exit 2; }
[ $((ranks % 8)) -eq 0 ] && [ "$ranks" -gt 0 ] || { echo "bench-import: RANKS must be a positive multiple of 8" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-import-XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
log=$tmp/all_reduce.log

# Header, RANKS rank lines, env lines up to the limit less room for the
# table, then the table (1 MiB float all-reduce in 100 us: algbw 10.49 GB/s,
# busbw 2 (n-1)/n of it).
awk -v ranks="$ranks" -v limit="$limit" 'BEGIN {
  out = "";
  n = 0;
  line = "# nccl-tests version 2.13.11 nccl-headers=22105 nccl-library=22105";
  print line; n += length(line) + 1;
  line = "# Collective test starting: all_reduce_perf"; print line; n += length(line) + 1;
  line = sprintf("# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0");
  print line; n += length(line) + 1;
  print "#"; print "# Using devices"; n += 18;
  for (r = 0; r < ranks; r++) {
    line = sprintf("#  Rank %6d Group  0 Pid %7d on node%06d device %2d [0x%02x] NVIDIA H100 80GB HBM3",
                   r, 100000 + r, int(r / 8), r % 8, 16 + (r % 8) * 17);
    print line; n += length(line) + 1;
  }
  busbw = 10.49 * 2 * (ranks - 1) / ranks;
  table[0] = "#";
  table[1] = "#                                                              out-of-place                       in-place          ";
  table[2] = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong";
  table[3] = "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       ";
  table[4] = sprintf("     1048576        262144     float     sum      -1   100.00   10.49  %6.2f      0   100.00   10.49  %6.2f      0", busbw, busbw);
  table[5] = "# Out of bounds values : 0 OK";
  table[6] = sprintf("# Avg bus bandwidth    : %.4f ", busbw);
  room = 0;
  for (i = 0; i <= 6; i++) room += length(table[i]) + 1;
  for (e = 0; ; e++) {
    line = sprintf("node%06d:%d:%d [0] NCCL INFO NCCL_BENCH_KEY_%07d set by environment to %d",
                   e % (ranks / 8), 100000 + e % ranks, 100000 + e % ranks, e, e);
    if (n + length(line) + 1 + room > limit) break;
    print line; n += length(line) + 1;
  }
  for (i = 0; i <= 6; i++) print table[i];
  printf "%d %d\n", e, n + room > "/dev/stderr";
}' >"$log" 2>"$tmp/counts" || { echo "bench-import: awk failed" >&2; exit 2; }
read -r env_lines bytes <"$tmp/counts"
actual=$(wc -c <"$log")

set -- trace import-nccl-tests "$log" -o "$tmp/measured.h5" --topology dgx-h100

echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "binary:  $bin ($("$bin" --version))"
echo "log:     $actual bytes (of $limit): $ranks '#  Rank' lines, $env_lines environment lines, 2 points"
echo "command: shardplan trace import-nccl-tests LOG -o measured.h5 --topology dgx-h100"

printf '%-4s %10s %10s %12s %10s\n' run seconds cpu_s max_rss_MB log_MB/s
i=1
while [ "$i" -le "$runs" ]; do
  rm -f "$tmp/measured.h5"
  /usr/bin/time -v "$bin" "$@" >"$tmp/out" 2>"$tmp/time" || { cat "$tmp/time" >&2; exit 1; }
  s=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, t, ":"); v = 0;
        for (k = 1; k <= n; k++) v = v * 60 + t[k]; printf "%.3f", v }' "$tmp/time")
  cpu=$(awk -F': ' '/User time|System time/ { v += $2 } END { printf "%.2f", v }' "$tmp/time")
  mb=$(awk -F': ' '/Maximum resident set size/ { printf "%.1f", $2 * 1024 / 1e6 }' "$tmp/time")
  rate=$(awk -v b="$actual" -v s="$s" 'BEGIN { printf "%.1f", (s > 0 ? b / 1e6 / s : 0) }')
  printf '%-4s %10s %10s %12s %10s\n' "$i" "$s" "$cpu" "$mb" "$rate"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u '+%Y-%m-%dT%H:%MZ')" "$actual" "$ranks" \
    "$env_lines" "$s" "$cpu" "$mb" "$rate" >>"$tsv"
  i=$((i + 1))
done
grep -q " $ranks ranks, 2 points" "$tmp/out" || { echo "bench-import: unexpected output:" >&2; cat "$tmp/out" >&2; exit 1; }
echo "output:  $(cat "$tmp/out" | sed "s|$tmp/||g")"
