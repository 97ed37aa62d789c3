#!/bin/sh
# bench-chakra-p2p.sh — `shardplan chakra import` of other producers' send /
# receive nodes at scale, in Chakra's layout, written with
# tests/fixtures/chakra/make_fixtures.py's helpers.  Two shapes:
#   exchange (default)  2 ranks, N exchanges chained through compute
#                       (compute -> send + receive -> compute -> …): every
#                       pair must map to a send op;
#   pipe                2 stages of W / 2 ranks each (rank r in stage
#                       r / (W / 2)), N steps of: compute on every rank ->
#                       activations stage 0 -> 1 (one way) -> compute ->
#                       gradients stage 1 -> 0: every pair must map to a p2p
#                       op (2 N of them, on the replicate groups {r, r + W/2}).
# The time should grow linearly with N (and, for pipe, with the node count).
#
# Usage: bench/bench-chakra-p2p.sh [SHARDPLAN] [N ...]   (default N: 1000 4000 8000)
#        MODE=pipe RANKS=W bench/bench-chakra-p2p.sh [SHARDPLAN] [N ...]   (W even, default 256)
# Needs python3 with google.protobuf and protoc (as make_fixtures.py does).
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-${SHARDPLAN:-./tools/shardplan}}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- 1000 4000 8000
mode=${MODE:-exchange}
ranks=${RANKS:-256}
[ -x "$bin" ] || { echo "bench-chakra-p2p: $bin is not an executable" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench-chakra-p2p: /usr/bin/time is missing" >&2; exit 2; }
case $mode in
  exchange) ;;
  pipe) [ "$ranks" -ge 2 ] && [ $((ranks % 2)) -eq 0 ] \
          || { echo "bench-chakra-p2p: RANKS must be an even number >= 2" >&2; exit 2; } ;;
  *) echo "bench-chakra-p2p: MODE must be exchange or pipe, not '$mode'" >&2; exit 2 ;;
esac
py=${PYTHON:-python3}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-chakra-p2p-XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); date: $(date -u '+%Y-%m-%d %H:%M UTC'); mode $mode$( [ "$mode" = pipe ] && echo ", $ranks ranks")"
for n in "$@"; do
  "$py" - "$here/../tests/fixtures/chakra/make_fixtures.py" "$tmp" "$n" "$mode" "$ranks" <<'PY' || exit 1
import importlib.util, json, os, sys
spec = importlib.util.spec_from_file_location("mf", sys.argv[1])
mf = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mf)
out, n, mode, W = sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
et = mf.et
if mode == "exchange":
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
else:
    D = W // 2
    with open(os.path.join(out, "chain%d.groups.json" % n), "w") as f:
        json.dump({}, f)
    for r in range(W):
        stage, nodes, prev = r // D, [], None
        for i in range(n):
            b = 4 * i + 1
            # compute; activations 0 -> 1; compute; gradients 1 -> 0
            nodes.append(mf.node(b, "f%d" % i, et.COMP_NODE, data=[prev] if prev else [],
                                 num_ops=1 << 20, is_cpu_op=False))
            if stage == 0:
                nodes.append(mf.p2p(b + 1, "act%d" % i, True, r, r + D, 1 << 20, data=[b]))
            else:
                nodes.append(mf.p2p(b + 1, "act%d" % i, False, r - D, r, 1 << 20, data=[b]))
            nodes.append(mf.node(b + 2, "b%d" % i, et.COMP_NODE, data=[b + 1],
                                 num_ops=1 << 20, is_cpu_op=False))
            if stage == 1:
                nodes.append(mf.p2p(b + 3, "grad%d" % i, True, r, r - D, 1 << 20, data=[b + 2]))
            else:
                nodes.append(mf.p2p(b + 3, "grad%d" % i, False, r + D, r, 1 << 20, data=[b + 2]))
            prev = b + 3
        mf.write(out, "chain%d" % n, r, nodes)
PY
  want=$n
  [ "$mode" = pipe ] && want=$((2 * n))
  /usr/bin/time -f "N=$n: %e s wall, %U s user, %M KB max RSS" "$bin" chakra import "$tmp/chain$n" \
    -o "$tmp/chain$n.json" 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
  grep -q "^shardplan chakra import: $want send / receive node pair(s) mapped" "$tmp/err" \
    || { cat "$tmp/err" >&2; echo "bench-chakra-p2p: N=$n: not every pair mapped" >&2; exit 1; }
  if [ "$mode" = pipe ]; then
    [ "$(grep -c '"kind": "p2p", "family": "replicate"' "$tmp/chain$n.json")" -eq "$want" ] \
      || { echo "bench-chakra-p2p: N=$n: not every pair a replicate p2p op" >&2; exit 1; }
  fi
  tail -n 1 "$tmp/err"
done
