#!/bin/sh
# bench-groups.sh — the issue-2 speed target of `shardplan groups`:
#   shardplan groups --world-size 1048576 --devices-per-node 8 --shard-size 64 \
#     --hierarchical --format json >/dev/null
# must take <= 1 s wall time and <= 300 MB peak resident memory.
#
# Usage: bench/bench-groups.sh [SHARDPLAN] [RUNS]
#   SHARDPLAN  the built binary (default: $SHARDPLAN, else ./tools/shardplan)
#   RUNS       repetitions (default 5)
# Prints the machine, the date, the command, one line per run (seconds, max
# RSS) and the worst run against the targets; exits 1 if a target is missed.
# Measured with GNU time (`/usr/bin/time -v`; apt-get install time).
set -u
bin=${1:-${SHARDPLAN:-./tools/shardplan}}
runs=${2:-5}
world=1048576
limit_s=1.0
limit_mb=300

[ -x "$bin" ] || { echo "bench-groups: $bin is not an executable (build tools/shardplan first)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench-groups: /usr/bin/time is missing (apt-get install time)" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-groups-XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT

set -- groups --world-size "$world" --devices-per-node 8 --shard-size 64 --hierarchical --format json

echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "binary:  $bin ($("$bin" --version))"
echo "command: shardplan $* >/dev/null"

# The output itself, once: its size, and that it is the whole object.
"$bin" "$@" >"$tmp/out.json" || { echo "bench-groups: the command failed" >&2; exit 1; }
bytes=$(wc -c <"$tmp/out.json")
tail -c 3 "$tmp/out.json" | grep -q ']}' || { echo "bench-groups: output is truncated" >&2; exit 1; }
echo "output:  $bytes bytes of JSON"
rm -f "$tmp/out.json"

printf '%-4s %10s %12s\n' run seconds max_rss_MB
worst_s=0
worst_mb=0
i=1
while [ "$i" -le "$runs" ]; do
  /usr/bin/time -v "$bin" "$@" >/dev/null 2>"$tmp/time" || { cat "$tmp/time" >&2; exit 1; }
  # "Elapsed (wall clock) time (h:mm:ss or m:ss): 0:00.41" and
  # "Maximum resident set size (kbytes): 123456"
  s=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, t, ":"); v = 0;
        for (k = 1; k <= n; k++) v = v * 60 + t[k]; printf "%.3f", v }' "$tmp/time")
  mb=$(awk -F': ' '/Maximum resident set size/ { printf "%.1f", $2 * 1024 / 1e6 }' "$tmp/time")
  printf '%-4s %10s %12s\n' "$i" "$s" "$mb"
  worst_s=$(awk -v a="$worst_s" -v b="$s" 'BEGIN { print (b > a) ? b : a }')
  worst_mb=$(awk -v a="$worst_mb" -v b="$mb" 'BEGIN { print (b > a) ? b : a }')
  i=$((i + 1))
done

verdict=$(awk -v s="$worst_s" -v m="$worst_mb" -v ls="$limit_s" -v lm="$limit_mb" \
  'BEGIN { print (s <= ls && m <= lm) ? "PASS" : "FAIL" }')
echo "worst:   $worst_s s, $worst_mb MB (targets: <= $limit_s s, <= $limit_mb MB; MB = 1e6 bytes): $verdict"
[ "$verdict" = PASS ]
