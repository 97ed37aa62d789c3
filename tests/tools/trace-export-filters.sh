#!/bin/sh
# `shardplan trace export --ranks / --iters / --steps / --ops` (issue 16) on
# the sample trace (tests/lib/trace-sample.c: 8 ranks, 2 timed iterations,
# 3 ops, 48 rows): each filtered CSV must be exactly the rows of the full CSV
# that awk selects from its op_id, iter and rank columns, the Chrome JSON
# must hold one slice per selected row and one track per selected rank, the
# closing line must say "N of 48 rows selected"; values outside the trace,
# malformed lists, an empty selection (a partial trace from `trace recover`
# that lacks rank 1) and filters with --format chakra exit 2 and write
# nothing; a Chrome JSON estimated over SP_CHROME_WARN_BYTES gets a warning
# and is still written.
SP_TEST_NAME=trace-export-filters
. "$SP_SRCDIR/tests/tools/cli-testlib.sh"

trace=$tmp/sample.h5
"$SP_BUILDDIR/tests/lib/test_trace" --write-sample "$trace" || exit 99
"$SHARDPLAN" trace export --format csv "$trace" -o "$tmp/all.csv" 2>/dev/null || exit 99
total=$(($(wc -l <"$tmp/all.csv") - 1))
[ "$total" -eq 48 ] || fail "the sample trace has $total rows, expected 48"
head -n 1 "$tmp/all.csv" | grep -q '^op_id,parent_op_id,iter,rank,' ||
  fail "CSV columns changed: $(head -n 1 "$tmp/all.csv")"

# The op ids whose plan name matches, from the full Chrome export's slices.
"$SHARDPLAN" trace export --format chrome "$trace" >"$tmp/all.json" 2>/dev/null || exit 99
sed -n 's/.*"name":"\([^"]*\)".*"ph":"X".*"args":{"op_id":\([0-9]*\),.*/\2 \1/p' \
  "$tmp/all.json" | sort -u >"$tmp/names"
[ "$(wc -l <"$tmp/names")" -eq 3 ] || fail "op names of the sample: $(cat "$tmp/names")"
allgather_id=$(awk '$2 ~ /\.allgather$/ { print $1 }' "$tmp/names")
[ -n "$allgather_id" ] || fail "no op named *.allgather in the sample: $(cat "$tmp/names")"

# case NAME AWK-CONDITION FILTER-ARGS…: the filtered CSV equals the rows of
# the full one for which AWK-CONDITION (on $1 op_id, $3 iter, $4 rank) holds,
# and the Chrome JSON of the same selection has one slice per row.
case_csv () {
  name=$1 cond=$2
  shift 2
  awk -F, "NR == 1 || ($cond)" "$tmp/all.csv" >"$tmp/want.csv"
  want=$(($(wc -l <"$tmp/want.csv") - 1))
  [ "$want" -gt 0 ] || fail "$name: the condition selects no row (test error)"
  if ! "$SHARDPLAN" trace export --format csv "$@" "$trace" -o "$tmp/got.csv" 2>"$tmp/err"; then
    fail "$name: trace export --format csv $* failed: $(cat "$tmp/err")"
    return
  fi
  cmp -s "$tmp/want.csv" "$tmp/got.csv" ||
    fail "$name: $* gave $(($(wc -l <"$tmp/got.csv") - 1)) rows, expected the $want rows where $cond"
  grep -qF "(CSV, $want of $total rows selected," "$tmp/err" ||
    fail "$name: closing line does not say '$want of $total rows selected': $(cat "$tmp/err")"
  "$SHARDPLAN" trace export --format chrome "$@" "$trace" >"$tmp/got.json" 2>"$tmp/err" ||
    fail "$name: trace export --format chrome $* failed: $(cat "$tmp/err")"
  slices=$(grep -c '"ph":"X"' "$tmp/got.json")
  [ "$slices" -eq "$want" ] || fail "$name: chrome $* has $slices slices, expected $want"
}

case_csv ranks-range  '$4 <= 3'                  --ranks 0-3
case_csv ranks-list   '$4 == 0 || $4 == 5 || $4 == 6 || $4 == 7' --ranks 0,5-7
case_csv ranks-merge  '$4 <= 4'                  --ranks 3-4,0-2,1
case_csv iters        '$3 == 1'                  --iters 1
case_csv steps        '$3 == 0'                  --steps 0
case_csv ops-id       '$1 == 2'                  --ops 2
case_csv ops-glob     "\$1 == $allgather_id"     --ops '*.allgather'
case_csv ops-mixed    "\$1 == $allgather_id || \$1 == 2" --ops '2,*.allgather'
case_csv all-three    '$4 >= 6 && $3 == 0 && $1 <= 1' --ranks 6-7 --iters 0 --ops 0-1
case_csv everything   '1'                        --ranks 0-7 --iters 0-1

# Tracks: --ranks 2,4 gives exactly the tracks of ranks 2 and 4.
"$SHARDPLAN" trace export --format chrome --ranks 2,4 "$trace" 2>/dev/null |
  sed -n 's/.*"thread_name".*"args":{"name":"rank \([0-9]*\)"}}.*/\1/p' | tr '\n' ' ' >"$tmp/tracks"
[ "$(cat "$tmp/tracks")" = "2 4 " ] || fail "--ranks 2,4: chrome tracks of ranks $(cat "$tmp/tracks")"

# Without filters the closing line is unchanged: "48 rows".
"$SHARDPLAN" trace export --format csv "$trace" -o "$tmp/x.csv" 2>"$tmp/err" || fail "plain export"
grep -qF "(CSV, 48 rows," "$tmp/err" || fail "plain export's closing line: $(cat "$tmp/err")"

# refused TEXT ARGS…: exit 2, one line naming TEXT, no output file, nothing
# on stdout.
refused () {
  text=$1
  shift
  rm -f "$tmp/out.csv"
  "$SHARDPLAN" trace export "$@" -o "$tmp/out.csv" >"$tmp/stdout" 2>"$tmp/err"
  status=$?
  if [ "$status" -ne 2 ]; then
    fail "trace export $*: exit $status, expected 2: $(cat "$tmp/err")"
  elif [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -qF -- "$text" "$tmp/err"; then
    fail "trace export $*: stderr does not say '$text' in one line: $(cat "$tmp/err")"
  fi
  [ -e "$tmp/out.csv" ] && fail "trace export $*: wrote $tmp/out.csv on an error"
  [ -s "$tmp/stdout" ] && fail "trace export $*: printed to stdout on an error"
  ls "$tmp" | grep -q 'tmp-' && fail "trace export $*: left a temporary file"
  return 0
}

refused '--ranks 8: the trace has ranks 0-7'             --format csv --ranks 8 "$trace"
refused '--ranks 6-9: the trace has ranks 0-7'           --format csv --ranks 0,6-9 "$trace"
refused '--ranks 99999999999: the trace has ranks 0-7'   --format chrome --ranks 99999999999 "$trace"
refused '--iters 2: the trace has timed iterations 0-1'  --format csv --iters 2 "$trace"
refused '--iters 2: the trace has timed iterations 0-1'  --format chrome --steps 2 "$trace"
refused '--ops 3: the trace has op ids 0-2'              --format csv --ops 3 "$trace"
refused "--ops 'nosuch*' matches no op name"             --format csv --ops 'nosuch*' "$trace"
refused "--ranks '1,,2': an empty item"                  --format csv --ranks 1,,2 "$trace"
refused "--ops '': an empty list"                       --format csv --ops '' "$trace"
refused "'-1' is not a number N or a range A-B"          --format csv --ranks -1 "$trace"
refused "'x' is not a number N or a range A-B"           --format csv --iters x "$trace"
refused "the range 5-2 runs backwards"                   --format csv --ranks 5-2 "$trace"
refused "--steps '1' and --iters '0'"                    --format csv --iters 0 --steps 1 "$trace"
refused "--ops: --format chakra takes no row filters"    --format chakra --ops 1 "$trace"
refused "--ranks: --format chakra takes no row filters"  --format chakra --ranks 1 "$trace"

# An empty selection: a partial trace of a 2-rank run that has only rank 0.
"$SP_BUILDDIR/tests/exec/make-spill" ok "$tmp/r.spill" || exit 99
"$SHARDPLAN" trace recover "$tmp/r.spill" -o "$tmp/partial.h5" 2>/dev/null || exit 99
refused "the selection --ranks 1 matches none of the trace's 4 rows; nothing written" \
  --format csv --ranks 1 "$tmp/partial.h5"
refused "the selection --ranks 1 --iters 0 matches none" \
  --format chrome --ranks 1 --iters 0 "$tmp/partial.h5"
refused '--ranks 2: the trace has ranks 0-1' --format csv --ranks 2 "$tmp/partial.h5"

# The size warning: the sample's whole Chrome JSON is about 13 KiB.
size=$(wc -c <"$tmp/all.json")
# warn LIMIT EXPECT ARGS…: EXPECT yes|no warning with SP_CHROME_WARN_BYTES=LIMIT.
warn () {
  limit=$1 expect=$2
  shift 2
  rm -f "$tmp/w.json"
  SP_CHROME_WARN_BYTES=$limit "$SHARDPLAN" trace export --format chrome "$@" "$trace" \
    -o "$tmp/w.json" 2>"$tmp/err"
  status=$?
  [ "$status" -eq 0 ] || fail "warn $limit $*: exit $status: $(cat "$tmp/err")"
  [ -s "$tmp/w.json" ] || fail "warn $limit $*: no JSON written"
  if grep -q 'warning: the Chrome JSON of' "$tmp/err"; then got=yes; else got=no; fi
  [ "$got" = "$expect" ] || fail "SP_CHROME_WARN_BYTES=$limit $*: warning $got, expected $expect: $(cat "$tmp/err")"
  if [ "$got" = yes ]; then
    grep -q 'select fewer with --ranks, --iters or --ops' "$tmp/err" ||
      fail "the warning does not suggest the filters: $(cat "$tmp/err")"
    grep -q 'wrote ' "$tmp/err" || fail "warned, but no closing line: $(cat "$tmp/err")"
  fi
}
# The estimate is within a factor 1.5 of the real size: no warning at 1.5 x
# the size, one at 2/3 of it; the filters bring it under the threshold.
warn $((size * 3 / 2)) no
warn $((size * 2 / 3)) yes
warn $((size * 2 / 3)) no --ranks 0-3
warn 0 no
warn 1K yes --ops 0
# The default (512 MiB) does not warn for 13 KiB.
"$SHARDPLAN" trace export --format chrome "$trace" -o "$tmp/d.json" 2>"$tmp/err" || fail "default"
grep -q warning "$tmp/err" && fail "default threshold warned: $(cat "$tmp/err")"
# A bad threshold is bad input.
SP_CHROME_WARN_BYTES=lots "$SHARDPLAN" trace export --format chrome "$trace" -o "$tmp/b.json" \
  2>"$tmp/err"
[ $? -eq 2 ] && grep -q "SP_CHROME_WARN_BYTES 'lots'" "$tmp/err" && [ ! -e "$tmp/b.json" ] ||
  fail "SP_CHROME_WARN_BYTES=lots: $(cat "$tmp/err")"

finish
