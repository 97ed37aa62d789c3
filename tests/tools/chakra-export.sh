#!/bin/sh
# `shardplan chakra export` read by an independent reader: Python's protobuf
# package with classes that protoc --python_out compiles from the project's
# tools/chakra/et_def.proto (chakra_check.py), on a MiCS hierarchical plan
# and a ZeRO++ (qwZ + qgZ + hpZ) plan: node counts, collective sizes and
# groups against the plan and against `shardplan groups`.
# Skips (77) without the chakra command (no protobuf-c), without protoc or
# without a python3 that imports google.protobuf.
. "$SP_SRCDIR/tests/tools/chakra-testlib.sh"
chakra_require_python
for p in mics zpp; do
  chakra_plan $p "$tmp/$p.json" || exit 1
  "$SHARDPLAN" chakra export -q --plan "$tmp/$p.json" --topology dgx-h100 -o "$tmp/et/$p" || exit 1
  chakra_groups_json "$tmp/$p.json" > "$tmp/$p.groups-ds.json" || exit 1
  "$py" "$SP_SRCDIR/tests/tools/chakra_check.py" "$tmp/py" "$tmp/$p.json" "$tmp/et/$p" \
    "$tmp/$p.groups-ds.json" || { echo "FAIL: $p export does not match its plan" >&2; exit 1; }
done
