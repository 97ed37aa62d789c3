#!/bin/sh
# Point-to-point: a plan's send / recv ops (tests/fixtures/chakra/p2p.plan.json:
# pipeline-like pairs in the tensor groups, a ring in the data groups)
# export as a COMM_SEND_NODE and a COMM_RECV_NODE per rank with the peers
# and sizes ASTRA-sim reads (checked by Python's protobuf, chakra_check.py),
# import back to the same plan byte for byte, and a send-only plan (what
# `sim` simulates) to the same simulated step.  A pipeline's one-way p2p
# ops (pipe.plan.json: 4 stages x 2 replicas, activations forward and
# gradients back) export as a send on the sender and a receive on the
# receiver only, and come back to the same plan and the same simulated
# step.  A receive half whose peer or size is not the plan's is refused,
# naming the file, node and field.
. "$SP_SRCDIR/tests/tools/chakra-testlib.sh"
chakra_require_python
fx=$SP_SRCDIR/tests/fixtures/chakra
cd "$tmp" || exit 1
for p in p2p p2p-send pipe; do
  "$SHARDPLAN" chakra export -q --plan "$fx/$p.plan.json" --topology dgx-h100 -o et/$p || exit 1
  chakra_groups_json "$fx/$p.plan.json" > groups-ds.json || exit 1
  "$py" "$SP_SRCDIR/tests/tools/chakra_check.py" "$tmp/py" "$fx/$p.plan.json" et/$p groups-ds.json \
    || { echo "FAIL: $p: the send / recv export does not match its plan" >&2; exit 1; }
  "$SHARDPLAN" chakra import et/$p -o $p.back.json 2>err || { cat err >&2; exit 1; }
  grep -q 'exact: written by shardplan' err || { cat err >&2; exit 1; }
  # the fixture's "source" is the path it was made from: compare without it
  sed 's/"source": "[^"]*"/"source": ""/' "$fx/$p.plan.json" > want.json
  sed 's/"source": "[^"]*"/"source": ""/' $p.back.json > got.json
  cmp want.json got.json || { diff want.json got.json >&2; echo "FAIL: $p: plan differs after the round trip" >&2; exit 1; }
done
echo "send / recv: exported with their peers, imported back to the same plan"
# sim takes send on pairs (not recv): the send-only plan gives the same step
for f in "$fx/p2p-send.plan.json" p2p-send.back.json; do
  "$SHARDPLAN" sim --plan "$f" --topology dgx-h100 --nodes 1 --format json > "$(basename "$f").sim" || exit 1
done
cmp p2p-send.plan.json.sim p2p-send.back.json.sim || { echo "FAIL: send plan: simulated step differs" >&2; exit 1; }
echo "send: the same simulated step after export -> import"
for f in "$fx/pipe.plan.json" pipe.back.json; do
  "$SHARDPLAN" sim --plan "$f" --topology dgx-h100 --nodes 1 --format json > "$(basename "$f").sim" || exit 1
done
cmp pipe.plan.json.sim pipe.back.json.sim || { echo "FAIL: pipe plan: simulated step differs" >&2; exit 1; }
grep -q '"name":"act.0to1","kind":"p2p"' pipe.back.json.sim || { cat pipe.back.json.sim >&2; exit 1; }
echo "p2p: the same simulated step after export -> import"

# set_comm_src FILE VALUE [ID]: every COMM_RECV_NODE of FILE (or the one
# of node id ID) claims comm_src VALUE (Python's protobuf rewrites it)
set_comm_src () {
  "$py" - "$tmp/py" "$@" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import et_def_pb2 as et
path, value = sys.argv[2], int(sys.argv[3])
only = int(sys.argv[4]) if len(sys.argv) > 4 else None
def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F; n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n: return bytes(out)
buf = open(path, "rb").read()
pos, out, k = 0, bytearray(), 0
while pos < len(buf):
    n = shift = 0
    while True:
        b = buf[pos]; pos += 1
        n |= (b & 0x7F) << shift; shift += 7
        if not b & 0x80: break
    msg = buf[pos:pos + n]; pos += n
    if k > 0:
        node = et.Node(); node.ParseFromString(msg)
        if node.type == et.COMM_RECV_NODE and only in (None, node.id):
            for a in node.attr:
                if a.name == "comm_src":
                    a.int32_val = value
            msg = node.SerializeToString()
    out += varint(len(msg)) + msg
    k += 1
open(path, "wb").write(out)
PY
}

# hostile p2p: the receiver's node of act.1to2 (rank 4, group rank 2 of
# replicate group 0) claims another sender
set_comm_src et/pipe.4.et 0 3 || exit 1
"$SHARDPLAN" chakra import et/pipe -o bad.json 2>err
[ $? -eq 2 ] && grep -q 'et/pipe.4.et: node 3: field comm_src is 0 (-1: missing), not 2: in the plan.s replicate group 0, the p2p op goes from 2 to 4' err && [ ! -e bad.json ] || {
  cat err >&2; echo "FAIL: a p2p receiver with a wrong peer was not refused" >&2; exit 1; }
cat err

# hostile: the receive half of rank 2's first send claims another peer
set_comm_src et/p2p.2.et 5 || exit 1
"$SHARDPLAN" chakra import et/p2p -o bad.json 2>err
[ $? -eq 2 ] && grep -q 'et/p2p.2.et: node 7: field comm_src is 5' err && [ ! -e bad.json ] || {
  cat err >&2; echo "FAIL: a wrong peer was not refused" >&2; exit 1; }
cat err
