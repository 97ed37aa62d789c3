#!/bin/sh
# bench-export.sh — issue 16: `shardplan trace export` of a large trace,
# whole and filtered (--ranks), as Chrome JSON and CSV: time, memory, size.
# Filters read the rows twice (a counting pass, then the writing pass), so
# a filtered export costs about one extra read of the trace; the Chrome
# size estimate (280 B a row) is compared with the file written.
#
# Usage: bench/bench-export.sh [SHARDPLAN] [NODES] [GRAD_ACCUM]
#   SHARDPLAN   the built binary (default: $SHARDPLAN, else ./tools/shardplan)
#   NODES       dgx-h100 nodes of the simulated run (default 64)
#   GRAD_ACCUM  micro-steps of gpt-13b's step (default 8)
# The trace: `shardplan plan --model gpt-13b --topology dgx-h100 --nodes
# NODES --grad-accum GRAD_ACCUM`, simulated with `sim --sim-model analytic
# -o` (the analytic model: the trace's rows, not the simulator, are what
# is timed).  Prints the machine, the date, the commands and one line per
# export: wall s, CPU s (user + system), max RSS, rows written, bytes
# written.  Measured with GNU time (`/usr/bin/time`; apt-get install time).
set -u
bin=${1:-${SHARDPLAN:-./tools/shardplan}}
nodes=${2:-64}
accum=${3:-8}

[ -x "$bin" ] || { echo "bench-export: $bin is not an executable (build tools/shardplan first)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench-export: /usr/bin/time is missing (apt-get install time)" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-export-XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT

echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
"$bin" plan --model gpt-13b --topology dgx-h100 --nodes "$nodes" --grad-accum "$accum" \
  -o "$tmp/p.json" >/dev/null 2>&1 || { echo "bench-export: plan failed" >&2; exit 1; }
"$bin" sim --plan "$tmp/p.json" --sim-model analytic -q -o "$tmp/t.h5" >/dev/null \
  || { echo "bench-export: sim failed" >&2; exit 1; }
rows=$("$bin" trace show "$tmp/t.h5" 2>/dev/null | sed -n 's/^ops:.* \([0-9]*\) rows$/\1/p' | head -n 1)
echo "trace: gpt-13b on $nodes x dgx-h100, grad-accum $accum: ${rows:-?} rows, $(stat -c %s "$tmp/t.h5") bytes"
printf '%-44s %8s %8s %9s %12s %14s\n' "export" "wall_s" "cpu_s" "rss_MB" "rows" "bytes"

# one WHAT ARGS…: time `trace export ARGS… -o OUT`
one () {
  what=$1
  shift
  /usr/bin/time -f '%e %U %S %M' -o "$tmp/time" "$bin" trace export "$@" "$tmp/t.h5" \
    -o "$tmp/out" 2>"$tmp/err" || { echo "bench-export: $what failed: $(cat "$tmp/err")" >&2; return 1; }
  read -r wall user sys rss <"$tmp/time"
  sel=$(sed -n 's/.*(\([A-Za-z ]*\), \([0-9]*\) \(of [0-9]* \)\{0,1\}rows.*/\2/p' "$tmp/err" | tail -n 1)
  printf '%-44s %8s %8.2f %9.1f %12s %14s\n' "$what" "$wall" "$(echo "$user $sys" | awk '{print $1 + $2}')" \
    "$(echo "$rss" | awk '{print $1 / 1024}')" "${sel:-?}" "$(stat -c %s "$tmp/out")"
  grep -i warning "$tmp/err" | sed 's/^/  /'
  rm -f "$tmp/out"
}
one "chrome, whole trace" -f chrome
one "chrome, --ranks 0-7" -f chrome --ranks 0-7
one "chrome, --ranks 0-7 --iters 0" -f chrome --ranks 0-7 --iters 0
one "csv, whole trace" -f csv
one "csv, --ranks 0-7" -f csv --ranks 0-7
