#!/bin/sh
# Hostile Chakra input: every defect is exit status 2 with one line naming
# the file, the node id and the field, and no output written.  Fixtures from
# tests/fixtures/chakra/make_fixtures.py; the stream defects (truncation,
# bad varint, garbage, missing rank, bad group file) are made here.
. "$SP_SRCDIR/tests/tools/chakra-testlib.sh"
fx=$SP_SRCDIR/tests/fixtures/chakra
fails=0
# expect PREFIX REGEX: exit 2, the message matches, no -o file, no crash
expect () {
  rm -f "$tmp/out.json"
  "$SHARDPLAN" chakra import "$1" -o "$tmp/out.json" 2>"$tmp/err"
  rc=$?
  if [ $rc -ne 2 ] || ! grep -Eq "$2" "$tmp/err" || [ -e "$tmp/out.json" ] \
     || grep -q 'Sanitizer\|runtime error' "$tmp/err"; then
    echo "FAIL: $1 (exit $rc): wanted /$2/, got:" >&2; cat "$tmp/err" >&2; fails=$((fails + 1))
  else
    echo "ok: $(cat "$tmp/err")"
  fi
}
expect "$fx/bad-node-type" 'bad-node-type\.0\.et: node 1: field type 12 is not a NodeType'
expect "$fx/bad-comm-type" 'bad-comm-type\.0\.et: node 2: field comm_type 42'
expect "$fx/bad-missing-dep" 'bad-missing-dep\.0\.et: node 2: field data_deps: node 99 is not in the file'
expect "$fx/bad-cycle" 'bad-cycle\.0\.et: node [12]: .*cycle'
expect "$fx/bad-cross-cycle" 'bad-cross-cycle\.[01]\.et: node [12]: field data_deps: a cycle across'
expect "$fx/bad-size" 'bad-size\.1\.et: node 2: field comm_size is 2097152 but 1048576 in .*bad-size\.0\.et'
expect "$fx/bad-group" 'bad-group\.1\.et: node 2: field pg_name .4. disagrees'
expect "$fx/bad-pg-missing" 'bad-pg-missing\.0\.et: node 2: field pg_name .7. is not a group'
# send / recv in Chakra's layout: rings that are no family's groups, a ring
# over a family's group in another order, a send without its peer, a peer
# beyond the rank files, one-way sends no family holds one to a group
expect "$fx/bad-p2p-rings" 'bad-p2p-rings\.0\.et: node 1 .*fields comm_src / comm_dst: the rings .* not the groups of any DeepSpeed family'
expect "$fx/bad-p2p-order" "bad-p2p-order\\.0\\.et: node 1 .*field comm_dst 2: the exchange runs on world's groups but not around them: rank 0's neighbours in world group 0 are 1 \\(next\\) and 3"
expect "$fx/bad-p2p-nodst" 'bad-p2p-nodst\.0\.et: node 1: field comm_dst missing on a COMM_SEND_NODE'
expect "$fx/bad-p2p-far" 'bad-p2p-far\.0\.et: node 1: field comm_dst 5: the rank files stop at .*bad-p2p-far\.1\.et'
expect "$fx/bad-p2p-oneway" 'bad-p2p-oneway\.0\.et: node 1 .*fields comm_src / comm_dst: its one-way sends \(2, from rank 0 to 3 first\) are not one in each group of any DeepSpeed family'

# stream defects, on a copy of the hand-built trace
for r in 0 1 2 3 4 5 6 7; do cp "$fx/small.$r.et" "$tmp/s.$r.et"; done
cp "$fx/small.groups.json" "$tmp/s.groups.json"
cp "$tmp/s.3.et" "$tmp/keep"
size=$(wc -c < "$tmp/keep")
head -c $((size - 20)) "$tmp/keep" > "$tmp/s.3.et"
expect "$tmp/s" 's\.3\.et: truncated: message 7 \(node\) at byte [0-9]+ says [0-9]+ bytes, [0-9]+ are left'
head -c 1 "$tmp/keep" > "$tmp/s.3.et"
expect "$tmp/s" 's\.3\.et: truncated: message 0 \(GlobalMetadata\) at byte 1 says'
printf '\377\377\377\377\377\377\377\377\377\377\001' > "$tmp/s.3.et"
expect "$tmp/s" 's\.3\.et: bad varint: the length of message 0 \(GlobalMetadata\) at byte 0'
printf '\202' > "$tmp/s.3.et"
expect "$tmp/s" 's\.3\.et: truncated: the file ends inside the length of message 0'
: > "$tmp/s.3.et"
expect "$tmp/s" 's\.3\.et: empty file'
{ cat "$tmp/keep"; printf '\005\377\377\377\377\377'; } > "$tmp/s.3.et"
expect "$tmp/s" 's\.3\.et: message 8 at byte [0-9]+ \(after node 6\) is not a Node'
cp "$tmp/keep" "$tmp/s.3.et"
printf '{"1": [0, 1, 2, 3], "x": [4]}\n' > "$tmp/s.groups.json"
expect "$tmp/s" 's\.groups\.json: group key .x. is not a decimal integer > 0'
printf '{"1": [0, 1, 2' > "$tmp/s.groups.json"
expect "$tmp/s" 's\.groups\.json: not JSON'
# nested past json-glib's stack (it recurses per level): refused before it
# parses, in the group file and in a PyTorch trace's process-group string
awk 'BEGIN { for (i = 0; i < 100000; i++) printf "["; print "" }' > "$tmp/s.groups.json"
expect "$tmp/s" 's\.groups\.json:1:129: objects and arrays nested deeper than 128 levels'
awk 'BEGIN { printf "{\"nodes\": [{\"name\": \"## process_group:init ##\", \"inputs\": {\"values\": [\"";
             for (i = 0; i < 100000; i++) printf "["; print "\"]}}]}" }' > "$tmp/s.groups.json"
expect "$tmp/s" 's\.groups\.json: node .## process_group:init ##.: its input nests objects and arrays deeper than 128 levels'
cp "$fx/small.groups.json" "$tmp/s.groups.json"
rm "$tmp/s.5.et"
expect "$tmp/s" 's\.5\.et: missing, but .*s\.6\.et exists'
rm "$tmp/s.6.et" "$tmp/s.7.et"
expect "$tmp/s" 's\.groups\.json: group 2: rank 5, but the rank files stop at .*s\.4\.et'

# a shardplan export with a rank file gone, and with a file from another plan
chakra_plan mics "$tmp/mics.json" || exit 1
"$SHARDPLAN" chakra export -q --plan "$tmp/mics.json" -o "$tmp/et/m" || exit 1
mv "$tmp/et/m.31.et" "$tmp/m31"
expect "$tmp/et/m" 'm: 31 rank files, but the plan in their GlobalMetadata has 32 ranks'
chakra_plan zpp "$tmp/zpp.json" || exit 1
"$SHARDPLAN" chakra export -q --plan "$tmp/zpp.json" -o "$tmp/et/z" || exit 1
cp "$tmp/et/z.31.et" "$tmp/et/m.31.et"
expect "$tmp/et/m" 'm\.31\.et: GlobalMetadata attribute shardplan_plan differs'
exit $((fails > 0))
