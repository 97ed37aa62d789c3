#!/bin/sh
# PyTorch's process-group ids: a trace in the layout of Chakra's PyTorch
# converter (tests/fixtures/chakra/pt.*, make_fixtures.py) names groups by
# PyTorch's ids ("0" = the default group of every rank, "1" ..), and the
# groups come as PyTorch records them: torch.distributed's pg_config_info
# list (pt.pg_config.json) or a PyTorch execution trace whose
# "## process_group:init ##" node holds it (pt.et.json).  Both give the plan
# of the same trace with ASTRA-sim's group file (small.*), and it simulates;
# a broken group file is refused naming the file and the group.
. "$SP_SRCDIR/tests/tools/chakra-testlib.sh"
fx=$SP_SRCDIR/tests/fixtures/chakra
cd "$tmp" || exit 1
sed 's/"source": "[^"]*"/"source": ""/' "$fx/small.plan.json" > want.json
for g in pt.pg_config.json pt.et.json; do
  "$SHARDPLAN" trace import-chakra "$fx/pt" --groups "$fx/$g" --topology dgx-h100 --nodes 1 \
    -o pt.json 2>err || { cat err >&2; exit 1; }
  sed 's/"source": "[^"]*"/"source": ""/' pt.json > got.json
  cmp want.json got.json || { diff want.json got.json >&2; echo "FAIL: --groups $g" >&2; exit 1; }
  echo "--groups $g: the plan of the same trace with ASTRA-sim's group file"
done
"$SHARDPLAN" sim --plan pt.json --topology dgx-h100 --nodes 1 > sim.txt || exit 1
grep -Eq '^compute-only path: *750\.0 (µs|us)$' sim.txt || { cat sim.txt >&2; exit 1; }
# the default group file may be PyTorch's too
for r in 0 1 2 3 4 5 6 7; do cp "$fx/pt.$r.et" "pt.$r.et"; done
cp "$fx/pt.pg_config.json" pt.groups.json
"$SHARDPLAN" chakra import pt --topology dgx-h100 --nodes 1 -o pt2.json 2>err || { cat err >&2; exit 1; }
cmp pt.json pt2.json >/dev/null || [ "$(sed 's/"source": "[^"]*"//' pt.json)" = "$(sed 's/"source": "[^"]*"//' pt2.json)" ] \
  || { echo "FAIL: PREFIX.groups.json in PyTorch's form" >&2; exit 1; }
rm pt.groups.json
echo "PREFIX.groups.json in PyTorch's form: the same plan"

refuse () {  # refuse GROUPS-FILE PATTERN
  "$SHARDPLAN" trace import-chakra pt --groups "$1" --topology dgx-h100 --nodes 1 -o x.json 2>err
  rc=$?
  [ $rc -ne 0 ] && [ $rc -ne 139 ] && grep -q "$2" err && [ ! -e x.json ] || {
    cat err >&2; echo "FAIL: --groups $1 (exit $rc): expected '$2'" >&2; exit 1; }
  head -n 1 err
}
"$SHARDPLAN" trace import-chakra pt --topology dgx-h100 --nodes 1 -o x.json 2>err
[ $? -eq 2 ] && grep -q "pt.0.et: node 1: field pg_name '1' but there is no group file" err \
  || { cat err >&2; exit 1; }
echo '[{"pg_name": "0", "ranks": []}, {"pg_name": "1"}]' > no-ranks.json
refuse no-ranks.json "no-ranks.json: process group '1': no \"ranks\" list"
echo '[{"pg_name": "1", "ranks": [0, 1]}, {"pg_name": "1", "ranks": [2, 3]}]' > twice.json
refuse twice.json "twice.json: group '1' twice"
echo '[{"pg_name": "1", "ranks": [0, -3]}]' > neg.json
refuse neg.json "neg.json: group '1': element 1 is not a rank"
echo '{"schema": "1.1.1-chakra.0.0.4", "nodes": [{"id": 1, "name": "aten::mm"}]}' > no-init.json
refuse no-init.json "no-init.json: a PyTorch execution trace without"
echo '{"nodes": [{"name": "## process_group:init ##", "inputs": {"values": ["[{"]}}]}' > bad-init.json
refuse bad-init.json "bad-init.json: node '## process_group:init ##': its input is not JSON"
printf '[{"pg_name": ' > cut.json
refuse cut.json "cut.json: not JSON"
# groups missing from the file: the first node that names one
echo '[{"pg_name": "0", "ranks": []}, {"pg_name": "1", "ranks": [0, 1, 2, 3]}]' > few.json
refuse few.json "pt.0.et: node 5: field pg_name '3' is not a group of few.json"
refuse missing.json "missing.json"
mkfifo fifo.json 2>/dev/null && refuse fifo.json "fifo.json: not a regular file"
# odd JSON types where strings belong: refused with one line, no GLib criticals
cat > odd.json <<'J'
{"nodes": [{"name": 5}, {"name": null}, {"name": {}}, 7,
  {"name": "## process_group:init ##", "inputs": {"values": [{}, "[{\"pg_name\": 1, \"ranks\": [0]}]"]}}]}
J
refuse odd.json "odd.json: node '## process_group:init ##': process group 0: no \"pg_name\" string"
! grep -q CRITICAL err || { cat err >&2; echo "FAIL: GLib critical" >&2; exit 1; }

# send / recv in Chakra's layout (ring.*, make_fixtures.py): the exchange
# around each group of 4 becomes a send op on the shard family, the one the
# other way round a recv op, the pipeline's one-way sends (ranks 0-3 to
# 4-7) a p2p op on the replicate groups ({r, r + 4}: group rank 0 to 1).
# The plan simulates, exports and imports
# back exactly, and its recv costs what the same exchange as a send does
# (every link of the model has one rate both ways), on one node and across
# nodes, with each contention mode.
"$SHARDPLAN" chakra import "$fx/ring" --topology dgx-h100 --nodes 1 -o ring.json 2>err \
  || { cat err >&2; exit 1; }
grep -qF "3 send / receive node pair(s) mapped to send / recv / p2p ops" err \
  && ! grep -q "not modelled" err || { cat err >&2; echo "FAIL: ring: every pair mapped" >&2; exit 1; }
sed 's/"source": "[^"]*"/"source": ""/' ring.json > got.json
sed 's/"source": "[^"]*"/"source": ""/' "$fx/ring.plan.json" > want.json
cmp want.json got.json || { diff want.json got.json >&2; echo "FAIL: ring: plan" >&2; exit 1; }
grep -q '"name": "nccl:send kv".*"kind": "send", "family": "shard"' ring.json \
  && grep -q '"name": "nccl:send grad".*"kind": "recv", "family": "shard"' ring.json \
  && grep -q '"name": "nccl:send act".*"kind": "p2p", "family": "replicate".*"src": 0, "dst": 1}' ring.json \
  || { cat ring.json >&2; echo "FAIL: ring: send / recv ops" >&2; exit 1; }
"$SHARDPLAN" sim --plan ring.json --topology dgx-h100 --nodes 1 > sim.txt || exit 1
grep -Eq '^compute-only path: *300\.0 (µs|us)$' sim.txt || { cat sim.txt >&2; exit 1; }
"$SHARDPLAN" chakra export -q --plan ring.json --topology dgx-h100 --nodes 1 -o et/ring || exit 1
"$SHARDPLAN" chakra import et/ring -o ring.back.json 2>/dev/null || exit 1
cmp ring.json ring.back.json || { echo "FAIL: ring: export -> import" >&2; exit 1; }
echo "send / recv in Chakra's layout: exchanges and one-way sends mapped, round trip exact"
cat > x4.ini <<'INI'
[cluster]
nodes = 4
gpus_per_node = 2
[gpu]
model = H100
memory_gib = 80
tflops = 989
[intra]
kind = nvswitch
bandwidth_gbs = 450
[inter]
nics_per_node = 1
nic_gbps = 400
INI
sed 's/"kind": "recv"/"kind": "send"/' ring.json > ring-send.json
for t in "--topology dgx-h100 --nodes 1" "--topology x4.ini"; do
  for m in "--sim-model des --contention step" "--sim-model des --contention family" \
           "--sim-model analytic"; do
    # shellcheck disable=SC2086
    for p in ring ring-send; do
      "$SHARDPLAN" sim --plan $p.json $t $m --format json > $p.sim || exit 1
    done
    a=$(grep -o '"id":5,[^}]*' ring.sim) b=$(grep -o '"id":5,[^}]*' ring-send.sim)
    [ -n "$a" ] && [ "${a#*duration}" = "${b#*duration}" ] \
      || { echo "FAIL: recv vs send ($t $m): $a / $b" >&2; exit 1; }
  done
done
echo "recv: the same time as send on the same groups ($(grep -o '"id":5,[^}]*' ring.sim))"
# an exchange around 4 ranks on 2 nodes: des (each member's flow, alone or
# with the other group's) and the closed form (the slowest pair) agree.
# The p2p op (ranks 0, 1 on node 0 to 4, 5 on node 2; 2, 3 to 6, 7): one
# flow per group, des alone = analytic; with the family at once (des
# family) the two groups of a node share its one NIC and take longer.
for m in "--sim-model des --contention none" "--sim-model des --contention family" "--sim-model analytic"; do
  # shellcheck disable=SC2086
  "$SHARDPLAN" sim --plan ring.json --topology x4.ini $m --format json > m.sim || exit 1
  grep -o '"id":[15],[^}]*' m.sim >> modes.txt
  grep -o '"id":3,[^}]*' m.sim | sed 's/.*"duration_us"://' >> p2p.txt
done
[ "$(sort -u modes.txt | wc -l)" -eq 2 ] || { cat modes.txt >&2; echo "FAIL: des vs analytic on send / recv" >&2; exit 1; }
echo "send / recv over 2 nodes: des and analytic agree ($(sort -u modes.txt | tr '\n' ' '))"
awk 'NR == 1 { a = $1 } NR == 2 { f = $1 } NR == 3 { c = $1 }
     END { d = a - c; if (d < 0) d = -d; exit !(NR == 3 && d < 0.01 && f > 1.5 * a) }' p2p.txt \
  || { cat p2p.txt >&2; echo "FAIL: p2p: des alone / family / analytic" >&2; exit 1; }
echo "p2p over 2 nodes: des alone = analytic, 2 groups on one NIC slower ($(tr '\n' ' ' < p2p.txt)us)"
# a send on rank 0 and a receive on rank 1 with one node id (an SPMD
# program's dist.send / dist.recv): a one-way send, a p2p op, not a clash
"$SHARDPLAN" chakra import "$fx/oneway" -o oneway.json 2>err || { cat err >&2; exit 1; }
grep -qF "1 send / receive node pair(s) mapped" err && ! grep -q "not modelled" err \
  && grep -q '"name": "nccl:send".*"kind": "p2p", "family": "world".*"deps": \[0\].*"src": 0, "dst": 1}' oneway.json \
  && grep -q '"name": "bwd".*"deps": \[1\]' oneway.json \
  || { cat err oneway.json >&2; echo "FAIL: oneway" >&2; exit 1; }
echo "a one-way send sharing its id with the receive: a p2p op, the deps kept"
# two ranks exchanging, in three orders (make_fixtures.py orders()):
# the receive depending on its send is one op; with a compute node between
# them they cannot be one op and are bridged (no false cycle); send nodes
# of one id and different sizes on the two ranks are no exchange: bridged
ops_of () { sed -n 's/.*"name": "\([^"]*\)".*"kind": "\([^"]*\)".*"deps": \[\([0-9, ]*\)\].*/\1:\2:\3/p' "$1" | tr '\n' ' '; }
"$SHARDPLAN" chakra import "$fx/sendfirst" -o o.json 2>err || { cat err >&2; exit 1; }
[ "$(ops_of o.json)" = "fwd:compute: send:send:0 bwd:compute:1 " ] && grep -qF "1 send / receive node pair(s) mapped" err \
  || { cat err o.json >&2; echo "FAIL: sendfirst: $(ops_of o.json)" >&2; exit 1; }
"$SHARDPLAN" chakra import "$fx/between" -o o.json 2>err || { cat err >&2; exit 1; }
[ "$(ops_of o.json)" = "fwd:compute: mid:compute:0 bwd:compute:1 " ] && grep -qF "2 comm_send node(s) not modelled" err \
  || { cat err o.json >&2; echo "FAIL: between: $(ops_of o.json)" >&2; exit 1; }
"$SHARDPLAN" chakra import "$fx/mixed" -o o.json 2>err || { cat err >&2; exit 1; }
[ "$(ops_of o.json)" = "fwd:compute: bwd:compute:0 " ] && grep -qF "2 comm_recv node(s) not modelled" err \
  || { cat err o.json >&2; echo "FAIL: mixed: $(ops_of o.json)" >&2; exit 1; }
"$SHARDPLAN" chakra import "$fx/layers" -o o.json 2>err || { cat err >&2; exit 1; }
[ "$(ops_of o.json)" = "mid1:compute: sb:send:0 c6:compute:1 mid2:compute:2 end:compute:3 " ] \
  && grep -qF "1 send / receive node pair(s) mapped" err \
  || { cat err o.json >&2; echo "FAIL: layers: $(ops_of o.json)" >&2; exit 1; }
rm -f o.json
"$SHARDPLAN" chakra import "$fx/cycpair" -o o.json 2>err
[ $? -eq 2 ] && [ ! -e o.json ] && grep -q "cycpair.0.et: node 1: field data_deps: a cycle across the files" err \
  || { cat err >&2; echo "FAIL: cycpair" >&2; exit 1; }
echo "send before receive: one op; work between them, or sizes that differ: bridged; real cycles reported"
