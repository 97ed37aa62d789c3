#!/bin/sh
# Import of a small hand-built trace in Chakra's layout (tests/fixtures/chakra/
# small.*, written by make_fixtures.py): 8 ranks, process groups named by id,
# a METADATA_NODE, compute by duration_micros.  The plan is the expected one
# (shard size 4 found from the groups; the metadata nodes counted, their
# deps bridged) and simulates, compute 250 + 500 us.
. "$SP_SRCDIR/tests/tools/chakra-testlib.sh"
fx=$SP_SRCDIR/tests/fixtures/chakra
"$SHARDPLAN" chakra import "$fx/small" --topology dgx-h100 --nodes 1 -o "$tmp/small.json" \
  2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
cat "$tmp/err"
grep -q '8 metadata node(s) not modelled' "$tmp/err" || { echo "FAIL: metadata nodes not reported" >&2; exit 1; }
# the closing line names the file written, as every command's does
grep -Eq "^shardplan chakra import: wrote $tmp/small.json \(plan of [0-9]+ ops from 8 files, [0-9]+ nodes, mapped from Chakra; " "$tmp/err" \
  || { echo "FAIL: closing line: $(tail -n 1 "$tmp/err")" >&2; exit 1; }
# -q: no closing line, the notes on what was mapped stay
"$SHARDPLAN" chakra import -q "$fx/small" -t dgx-h100 -n 1 -o "$tmp/small-q.json" 2>"$tmp/err" \
  || { cat "$tmp/err" >&2; exit 1; }
grep -q 'wrote' "$tmp/err" && { echo "FAIL: -q printed $(cat "$tmp/err")" >&2; exit 1; }
grep -q '8 metadata node(s) not modelled' "$tmp/err" || { echo "FAIL: -q dropped a note" >&2; exit 1; }
cmp -s "$tmp/small.json" "$tmp/small-q.json" || { echo "FAIL: -q changed the plan" >&2; exit 1; }
# the fixture's source path differs between trees: compare without it
sed 's/"source": "[^"]*"/"source": ""/' "$fx/small.plan.json" > "$tmp/want.json"
sed 's/"source": "[^"]*"/"source": ""/' "$tmp/small.json" > "$tmp/got.json"
cmp "$tmp/want.json" "$tmp/got.json" || { diff "$tmp/want.json" "$tmp/got.json" >&2; exit 1; }
"$SHARDPLAN" sim --plan "$tmp/small.json" --topology dgx-h100 --nodes 1 > "$tmp/sim.txt" || exit 1
grep -Eq '^compute-only path: *750\.0 (µs|us)$' "$tmp/sim.txt" || { cat "$tmp/sim.txt" >&2; exit 1; }
echo "hand-built Chakra trace imports and simulates"
# duration_micros without a topology: no peak to turn time into FLOPs
"$SHARDPLAN" chakra import "$fx/small" -o "$tmp/x.json" 2>"$tmp/err"
[ $? -eq 2 ] && grep -q 'duration_micros.*--topology' "$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
[ ! -e "$tmp/x.json" ] || { echo "FAIL: output written after an error" >&2; exit 1; }
echo "no topology: refused, nothing written"
