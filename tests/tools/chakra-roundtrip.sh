#!/bin/sh
# export → import gives the plan back: on a MiCS hierarchical plan and a
# ZeRO++ (qwZ + qgZ + hpZ) plan, `shardplan chakra import` of the exported
# files writes the same plan JSON, byte for byte, and `shardplan sim` of the
# two gives the same step, summary for summary.
. "$SP_SRCDIR/tests/tools/chakra-testlib.sh"
for p in mics zpp; do
  chakra_plan $p "$tmp/$p.json" || exit 1
  "$SHARDPLAN" chakra export -q --plan "$tmp/$p.json" --topology dgx-h100 -o "$tmp/et/$p" || exit 1
  "$SHARDPLAN" chakra import "$tmp/et/$p" -o "$tmp/$p.back.json" 2>"$tmp/err" || {
    cat "$tmp/err" >&2; exit 1; }
  grep -q 'exact: written by shardplan' "$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
  cmp "$tmp/$p.json" "$tmp/$p.back.json" || { echo "FAIL: $p: plan differs after the round trip" >&2; exit 1; }
  for f in "$p" "$p.back"; do
    "$SHARDPLAN" sim --plan "$tmp/$f.json" --topology dgx-h100 --nodes 4 --format json \
      > "$tmp/$f.sim.json" || exit 1
  done
  cmp "$tmp/$p.sim.json" "$tmp/$p.back.sim.json" || { echo "FAIL: $p: simulated step differs" >&2; exit 1; }
  echo "$p: plan and simulated step identical after export -> import"
done
