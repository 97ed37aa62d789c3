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
