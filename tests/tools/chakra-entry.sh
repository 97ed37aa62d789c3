#!/bin/sh
# The issue's entry points run the one export and import of `shardplan
# chakra`: `plan --chakra PREFIX` writes the same files as `chakra export`
# of that plan; `trace export --format chakra` of a simulated trace gives
# every node the trace's duration (checked by Python's protobuf against the
# trace's rows as `trace export --format csv` lists them); `trace
# import-chakra` (PREFIX, or the .et files) gives the exact plan back; each
# refuses an output that is an input, and a partial list of rank files.
. "$SP_SRCDIR/tests/tools/chakra-testlib.sh"
chakra_require_python
cd "$tmp" || exit 1
plan="--model gpt-1b --topology dgx-h100 --nodes 1 --shard-size 4 --one-micro-step"
"$SHARDPLAN" plan $plan -o p.json --chakra et/p >/dev/null 2>err || { cat err >&2; exit 1; }
"$SHARDPLAN" chakra export -q --plan p.json --topology dgx-h100 -o et/q || exit 1
for f in et/p.*; do
  cmp "$f" "et/q.${f#et/p.}" || { echo "FAIL: plan --chakra: $f differs from chakra export's" >&2; exit 1; }
done
echo "plan --chakra: the files of chakra export, byte for byte"

# a plan output that is one of the Chakra outputs: refused before any work
"$SHARDPLAN" plan $plan -o et/r.groups.json --chakra et/r >/dev/null 2>err
[ $? -eq 2 ] && grep -q 'et/r.groups.json' err || { cat err >&2; echo "FAIL: plan --chakra clash" >&2; exit 1; }
[ ! -e et/r.0.et ] && [ ! -e et/r.groups.json ] || { echo "FAIL: written after a refusal" >&2; exit 1; }
# ... any rank's file, not only the first and the last (8 ranks: 3 is
# neither): as the -o, or as an input (directly or through a link), which
# the atomic rename would have replaced
"$SHARDPLAN" plan $plan -o et/r.3.et --chakra et/r >/dev/null 2>err
[ $? -eq 2 ] && grep -q "output 'et/r.3.et' is rank 3's file of --chakra" err \
  || { cat err >&2; echo "FAIL: plan --chakra: -o rank 3's file" >&2; exit 1; }
cp "$SP_SRCDIR/examples/model-tiny.json" et/r.5.et
ln -s et/r.5.et link.json
for m in et/r.5.et link.json; do
  "$SHARDPLAN" plan --model $m --topology dgx-h100 --nodes 1 --chakra et/r -o m.json >/dev/null 2>err
  [ $? -eq 2 ] && grep -q "model '$m' is rank 5's file of --chakra .*refusing to overwrite an input" err \
    && cmp -s "$SP_SRCDIR/examples/model-tiny.json" et/r.5.et \
    || { cat err >&2; echo "FAIL: plan --chakra over its --model $m" >&2; exit 1; }
done
rm et/r.5.et link.json
[ ! -e et/r.0.et ] && [ ! -e m.json ] || { echo "FAIL: written after a refusal" >&2; exit 1; }
# rank files that are symbolic links are names the export replaces: rank
# 0's pointing at a short name (which crashed the name check), rank 3's at
# a file outside, named as -o (refused: the plan JSON would land in the trace)
echo x >x
ln -s ../x et/r.0.et
echo '{}' >out.json
ln -s ../out.json et/r.3.et
"$SHARDPLAN" plan $plan -o et/r.3.et --chakra et/r >/dev/null 2>err
[ $? -eq 2 ] && grep -q "output 'et/r.3.et' is rank 3's file of --chakra" err && [ "$(cat out.json)" = '{}' ] \
  || { cat err >&2; echo "FAIL: plan --chakra -o a rank file that is a link" >&2; exit 1; }
rm et/r.3.et
"$SHARDPLAN" chakra export -q --plan p.json --topology dgx-h100 -o et/r 2>err \
  || { cat err >&2; echo "FAIL: chakra export over a rank file that is a link" >&2; exit 1; }
[ ! -L et/r.0.et ] && [ "$(cat x)" = x ] || { echo "FAIL: the link's target was written" >&2; exit 1; }
rm -f et/r.*

# a simulated trace -> Chakra with its durations
"$SHARDPLAN" sim --plan p.json --topology dgx-h100 --nodes 1 -o s.h5 >/dev/null || exit 1
"$SHARDPLAN" trace export --format chakra -o et/s s.h5 2>err || { cat err >&2; exit 1; }
"$SHARDPLAN" trace export --format csv -o s.csv s.h5 || exit 1
"$py" "$SP_SRCDIR/tests/tools/chakra_durations.py" "$tmp/py" p.json et/s s.csv \
  || { echo "FAIL: trace export --format chakra durations" >&2; exit 1; }
# ... and back: the trace's plan, exactly, from PREFIX or from the files
"$SHARDPLAN" trace import-chakra et/s -o s.back.json 2>err || { cat err >&2; exit 1; }
cmp p.json s.back.json || { echo "FAIL: trace import-chakra PREFIX: not the plan" >&2; exit 1; }
"$SHARDPLAN" trace import-chakra et/s.*.et -o s.back2.json 2>err || { cat err >&2; exit 1; }
cmp p.json s.back2.json || { echo "FAIL: trace import-chakra FILES: not the plan" >&2; exit 1; }
echo "trace import-chakra: the exact plan back, from PREFIX and from the files"
"$SHARDPLAN" trace import-chakra et/s.0.et et/s.1.et -o x.json 2>err
[ $? -eq 2 ] && grep -q '2 rank files named' err && [ ! -e x.json ] || { cat err >&2; exit 1; }
"$SHARDPLAN" trace import-chakra et/s.0.et et/p.1.et -o x.json 2>err
[ $? -eq 2 ] && grep -q 'different traces' err || { cat err >&2; exit 1; }
"$SHARDPLAN" trace import-chakra et/s -o et/s.0.et 2>err
[ $? -eq 2 ] && grep -q 'refusing to overwrite an input' err || { cat err >&2; exit 1; }
# any rank's file, not only rank 0's, named or found from PREFIX
cp et/s.1.et keep.1.et
"$SHARDPLAN" trace import-chakra et/s -o et/s.1.et 2>err
[ $? -eq 2 ] && grep -q "input PREFIX (rank 1) 'et/s.1.et': refusing to overwrite an input" err \
  && cmp keep.1.et et/s.1.et || { cat err >&2; exit 1; }
"$SHARDPLAN" chakra import et/s.*.et -o et/s.1.et 2>err
[ $? -eq 2 ] && grep -q 'refusing to overwrite an input' err && cmp keep.1.et et/s.1.et \
  || { cat err >&2; exit 1; }
cp et/s.0.et t.0.et
"$SHARDPLAN" trace export --format chakra -o t t.0.et 2>err
[ $? -eq 2 ] || { cat err >&2; echo "FAIL: trace export over its input" >&2; exit 1; }
"$SHARDPLAN" trace export --format chakra s.h5 2>err
[ $? -eq 2 ] && grep -q 'give -o PREFIX' err || { cat err >&2; exit 1; }
# a rank file that is a pipe: refused, not read forever
if mkfifo fifo.0.et 2>/dev/null; then
  "$SHARDPLAN" trace import-chakra fifo -o x.json 2>err
  [ $? -eq 2 ] && grep -q 'fifo.0.et: not a regular file' err || { cat err >&2; exit 1; }
fi
"$SHARDPLAN" trace import-chakra --help | grep -q 'import-chakra' || exit 1
"$SHARDPLAN" trace --help | grep -q 'import-chakra' || exit 1
echo "bad arguments refused, nothing written"
