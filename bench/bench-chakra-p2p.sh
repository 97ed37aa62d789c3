#!/bin/sh
# bench-chakra-p2p.sh — `shardplan chakra import` of other producers' send /
# receive nodes at scale: 2 ranks, N exchanges chained through compute
# (compute -> send + receive -> compute -> …), in Chakra's layout, written
# with tests/fixtures/chakra/make_fixtures.py's helpers.  Every pair must
# map to a send op; the time should grow linearly with N.
#
# Usage: bench/bench-chakra-p2p.sh [SHARDPLAN] [N ...]   (default N: 1000 4000 8000)
# Needs python3 with google.protobuf and protoc (as make_fixtures.py does).
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-${SHARDPLAN:-./tools/shardplan}}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- 1000 4000 8000
[ -x "$bin" ] || { echo "bench-chakra-p2p: $bin is not an executable" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench-chakra-p2p: /usr/bin/time is missing" >&2; exit 2; }
py=${PYTHON:-python3}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-chakra-p2p-XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); date: $(date -u '+%Y-%m-%d %H:%M UTC')"
for n in "$@"; do
  "$py" - "$here/../tests/fixtures/chakra/make_fixtures.py" "$tmp" "$n" <<'PY' || exit 1
import importlib.util, sys
spec = importlib.util.spec_from_file_location("mf", sys.argv[1])
mf = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mf)
out, n = sys.argv[2], int(sys.argv[3])
et = mf.et
per = []
for r in range(2):
    o, nodes, prev = 1 - r, [], None
    for i in range(n):
        b = 3 * i + 1
        nodes.append(mf.node(b, "c%d" % i, et.COMP_NODE, data=[prev] if prev else [],
                             num_ops=1 << 20, is_cpu_op=False))
        nodes.append(mf.p2p(b + 1, "s%d" % i, True, r, o, 4096, data=[b]))
        nodes.append(mf.p2p(b + 2, "r%d" % i, False, o, r, 4096, data=[b]))
        prev = b + 2
    per.append(nodes)
mf.two(out, "chain%d" % n, per)
PY
  /usr/bin/time -f "N=$n: %e s wall, %U s user, %M KB max RSS" "$bin" chakra import "$tmp/chain$n" \
    -o "$tmp/chain$n.json" 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
  grep -q "^shardplan chakra import: $n send / receive node pair(s) mapped" "$tmp/err" \
    || { cat "$tmp/err" >&2; echo "bench-chakra-p2p: N=$n: not every pair mapped" >&2; exit 1; }
  tail -n 1 "$tmp/err"
done
