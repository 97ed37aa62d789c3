#!/bin/sh
# `shardplan sweep --plot` (issue 16), read back through the layout that
# SHARDPLAN_PLOT_DEBUG=1 prints (cairo writes text as glyph outlines, so
# the SVG alone does not say what the labels read) and through the SVG's
# own paths.  The sweep is test-sweep-cli.sh's: gpt-1b on 2 nodes x 4 GPUs
# of 12 GiB (tests/sim/sweep-small.ini), whose rows need 8 … 40 GiB.
SP_TEST_NAME=sweep-plot
. "$SP_SRCDIR/tests/tools/cli-testlib.sh"
topo="$SP_SRCDIR/tests/sim/sweep-small.ini"

if ! "$SHARDPLAN" info 2>/dev/null | grep -q 'cairo=yes'; then
  echo "built without cairo: no plots to check"
  exit 77
fi

SHARDPLAN_PLOT_DEBUG=1 "$SHARDPLAN" sweep -m gpt-1b -t "$topo" --nodes 2 --sim-model analytic \
  --plot "$tmp/p.svg" >"$tmp/out" 2>"$tmp/err" || fail "sweep --plot exited $?: $(cat "$tmp/err")"
grep -q '<svg' "$tmp/p.svg" || fail "not an SVG"
grep '^plot: ' "$tmp/err" >"$tmp/layout"
[ -s "$tmp/layout" ] || fail "SHARDPLAN_PLOT_DEBUG=1 printed no layout"
rows=$(grep -c '^ *[0-9][0-9]* ' "$tmp/out")
best=$(sed -n 's/^recommended: #\([0-9]*\) .*/\1/p' "$tmp/out")
[ -n "$best" ] || fail "no recommendation in the text output"

# the GPU's capacity: a line at 12 GiB in the memory panel, labelled with
# the GPU's model and size, and drawn: a dashed horizontal path in the SVG
# at the height the layout gives
line=$(grep '^plot: panel=1 hline ' "$tmp/layout")
echo "$line" | grep -q 'value=12 .*label="H100-SXM5-80GB: 12 GiB"' \
  || fail "capacity line: '$line'"
y=$(echo "$line" | sed -n 's/.* y=\([0-9.]*\) label=.*/\1/p')
awk -v y="$y" '
  /stroke-dasharray/ && match ($0, /d="M [0-9.]+ [0-9.]+ L [0-9.]+ [0-9.]+ "/) {
    split (substr ($0, RSTART + 3, RLENGTH - 4), d, " ")
    if (d[3] == d[6] && d[3] - y < 0.01 && y - d[3] < 0.01) found = 1
  }
  END { exit !found }' "$tmp/p.svg" || fail "no dashed line at y=$y in the SVG"

# the memory axis is log, labelled at decades only (8 … 40 GiB and the
# 12 GiB line: 10 and 100)
grep -q '^plot: panel=1 axis=y kind=log ticks=10|100$' "$tmp/layout" \
  || fail "memory axis: $(grep 'panel=1 axis=y' "$tmp/layout")"
grep '^plot: panel=1 axis=y ' "$tmp/layout" | sed 's/.*ticks=//' | tr '|' '\n' >"$tmp/mem-ticks"
grep -Evq '^(10*|0\.0*1|1e-?[0-9]+)$' "$tmp/mem-ticks" && fail "memory axis: a label that is not a decade"

# the count axes (row numbers) carry integers only, none outside 1 … rows
for p in 0 1; do
  ticks=$(sed -n "s/^plot: panel=$p axis=x kind=integer ticks=//p" "$tmp/layout")
  [ -n "$ticks" ] || fail "panel $p: the row axis is not an integer axis"
  for t in $(echo "$ticks" | tr '|' ' '); do
    case $t in
      *[!0-9]*) fail "panel $p: row tick '$t' is not an integer" ;;
      *) [ "$t" -ge 1 ] && [ "$t" -le "$rows" ] || fail "panel $p: row tick $t outside 1 … $rows" ;;
    esac
  done
done

# the recommendation is marked in both panels, labelled with its number,
# on the marker of its row (the row numbers' x, the same in both panels)
for p in 0 1; do
  mark=$(grep "^plot: panel=$p mark " "$tmp/layout")
  [ -n "$mark" ] || fail "panel $p: the recommendation is not marked"
  grep -q "^plot: panel=$p mark-label label=\"recommended: #$best\"" "$tmp/layout" \
    || fail "panel $p: no label 'recommended: #$best'"
  mx=$(echo "$mark" | sed 's/.* x=\([0-9.]*\) y=\([0-9.]*\) .*/\1 \2/')
  grep "^plot: panel=$p marker " "$tmp/layout" | awk -v m="$mx" '
    BEGIN { split (m, c, " ") }
    { for (i = 1; i <= NF; i++) { split ($i, kv, "="); v[kv[1]] = kv[2] }
      if (v["x"] - c[1] < 0.01 && c[1] - v["x"] < 0.01 && v["y"] - c[2] < 0.01 && c[2] - v["y"] < 0.01) found = 1 }
    END { exit !found }' || fail "panel $p: the mark at $mx is on no marker"
done

# every row has a marker in each panel, and a series' markers share one
# shape and fill that no other series of the panel has
for p in 0 1; do
  n=$(grep -c "^plot: panel=$p marker " "$tmp/layout")
  [ "$n" -eq "$rows" ] || fail "panel $p: $n markers for $rows rows"
  styles=$(grep "^plot: panel=$p marker " "$tmp/layout" \
           | sed 's/.*series="\([^"]*\)" shape=\([a-z-]*\) filled=\([01]\).*/\1|\2 \3/' | sort -u)
  [ "$(echo "$styles" | cut -d'|' -f1 | sort | uniq -d)" = "" ] \
    || fail "panel $p: a series with two marker styles: $styles"
  [ "$(echo "$styles" | cut -d'|' -f2 | sort | uniq -d)" = "" ] \
    || fail "panel $p: two series share a marker style: $styles"
done

# the legends cover no marker, mark or label (boxes in points)
for p in 0 1; do
  legend=$(grep "^plot: panel=$p legend " "$tmp/layout")
  [ -n "$legend" ] || fail "panel $p: no legend"
  grep "^plot: panel=$p \(marker\|mark\|mark-label\|hline\) " "$tmp/layout" | awk -v l="$legend" '
    function val (line, key,   i, n, f, kv) {
      n = split (line, f, " ")
      for (i = 1; i <= n; i++) { split (f[i], kv, "="); if (kv[1] == key) return kv[2] + 0 }
      return "none"
    }
    BEGIN { lx = val (l, "x"); ly = val (l, "y"); lw = val (l, "w"); lh = val (l, "h") }
    / marker | mark / {   # a circle of radius r round (x, y): its bounding box
      x = val ($0, "x") - val ($0, "r"); y = val ($0, "y") - val ($0, "r")
      w = h = 2 * val ($0, "r")
    }
    / mark-label | hline / {
      sub (/.*box /, ""); x = val ($0, "x"); y = val ($0, "y"); w = val ($0, "w"); h = val ($0, "h")
    }
    x < lx + lw && lx < x + w && y < ly + lh && ly < y + h { print "overlap: " $0; bad = 1 }
    END { exit bad }' || fail "panel $p: the legend ($legend) covers a marker or a label"
done

# without the variable nothing is printed but the usual line
"$SHARDPLAN" sweep -m gpt-1b -t "$topo" --nodes 2 --sim-model analytic --plot "$tmp/q.svg" \
  >/dev/null 2>"$tmp/err2" || fail "second sweep exited $?"
grep -q '^plot: ' "$tmp/err2" && fail "layout printed without SHARDPLAN_PLOT_DEBUG"

# the extension in either case: p.SVG is an SVG (it was refused)
"$SHARDPLAN" sweep -m gpt-1b -t "$topo" --nodes 2 --sim-model analytic --plot "$tmp/r.SVG" \
  >/dev/null 2>"$tmp/err3" || fail "--plot r.SVG exited $?: $(cat "$tmp/err3")"
grep -q '<svg' "$tmp/r.SVG" || fail "r.SVG is not an SVG"
finish
