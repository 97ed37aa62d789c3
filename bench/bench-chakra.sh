#!/bin/sh
# bench-chakra.sh — `shardplan chakra export` and `import` of a 16,384-GPU
# plan (issue 13: export in seconds, streamed, not held whole in memory):
#   shardplan plan --model gpt-13b --topology dgx-h100 --nodes 2048 \
#     --shard-size 64 --hierarchical --one-micro-step -o plan.json
#   shardplan chakra export --plan plan.json --topology dgx-h100 -o DIR/step
#   shardplan chakra import DIR/step -o back.json   (then cmp with plan.json)
#   shardplan plan ... --chakra DIR2/step            (the issue's spelling: plan and export
#                                                    in one run; diff -r with DIR)
#
# Usage: bench/bench-chakra.sh [SHARDPLAN] [NODES]
#   SHARDPLAN  the built binary (default: $SHARDPLAN, else ./tools/shardplan)
#   NODES      DGX H100 nodes (default 2048 = 16,384 GPUs)
# The files go under $TMPDIR (default /tmp): about 150 KB per rank
# (2.4 GB at 16,384 ranks, twice while the two exports are compared),
# removed at the end.  Prints wall, user and
# system seconds and max RSS of each step (GNU time).
set -u
bin=${1:-${SHARDPLAN:-./tools/shardplan}}
nodes=${2:-2048}
[ -x "$bin" ] || { echo "bench-chakra: $bin is not an executable" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench-chakra: /usr/bin/time is missing (apt-get install time)" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-chakra-XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
fmt='%e s wall, %U s user, %S s sys, %M KB max RSS'
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC')"
/usr/bin/time -f "plan:   $fmt" "$bin" plan --model gpt-13b --topology dgx-h100 --nodes "$nodes" \
  --shard-size 64 --hierarchical --one-micro-step -o "$tmp/plan.json" >/dev/null || exit 1
echo "ops:    $(grep -c '"id"' "$tmp/plan.json")"
mkdir "$tmp/et"
/usr/bin/time -f "export: $fmt" "$bin" chakra export --plan "$tmp/plan.json" --topology dgx-h100 \
  -o "$tmp/et/step" || exit 1
echo "files:  $(ls "$tmp/et" | wc -l), $(du -sm "$tmp/et" | cut -f1) MiB on disk"
/usr/bin/time -f "import: $fmt" "$bin" chakra import "$tmp/et/step" -o "$tmp/back.json" || exit 1
cmp "$tmp/plan.json" "$tmp/back.json" && echo "round trip: the same plan, byte for byte"
mkdir "$tmp/et2"
/usr/bin/time -f "plan --chakra: $fmt" "$bin" plan --model gpt-13b --topology dgx-h100 --nodes "$nodes" \
  --shard-size 64 --hierarchical --one-micro-step --chakra "$tmp/et2/step" >/dev/null || exit 1
diff -rq "$tmp/et" "$tmp/et2" >/dev/null && echo "plan --chakra: the files of chakra export, byte for byte"
