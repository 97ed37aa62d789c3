#!/bin/sh
# A short fuzz of `shardplan chakra import`: random byte flips (a fixed
# seed, SP_FUZZ_SEED to change it; SP_FUZZ_ITERS rounds, default 225) in
# one rank file of the hand-built Chakra trace, of a shardplan export and of
# a shardplan export with send / recv (their two nodes per op).
# Every run must end with status 0 or 2 (accepted, or one error line) and
# never with a crash, a sanitizer report or any other status.  Configure
# with --enable-sanitizers to run it under ASan and UBSan.
. "$SP_SRCDIR/tests/tools/chakra-testlib.sh"
iters=${SP_FUZZ_ITERS:-225}
seed=${SP_FUZZ_SEED:-13}
fx=$SP_SRCDIR/tests/fixtures/chakra
mkdir -p "$tmp/a" "$tmp/b" "$tmp/c"
for r in 0 1 2 3 4 5 6 7; do cp "$fx/small.$r.et" "$tmp/a/t.$r.et"; done
cp "$fx/small.groups.json" "$tmp/a/t.groups.json"
"$SHARDPLAN" plan --model "$SP_SRCDIR/examples/model-tiny.json" \
  --topology "$SP_SRCDIR/examples/cpu-shm.ini" --shard-size 8 --hierarchical --one-micro-step \
  -o "$tmp/tiny.json" >/dev/null || exit 1
"$SHARDPLAN" chakra export -q --plan "$tmp/tiny.json" -o "$tmp/b/t" || exit 1
"$SHARDPLAN" chakra export -q --plan "$fx/p2p.plan.json" -o "$tmp/c/t" || exit 1
# the flips: "dir rank offset byte" lines from awk's seeded generator
sizes_a=$(wc -c < "$tmp/a/t.3.et")
sizes_b=$(wc -c < "$tmp/b/t.3.et")
sizes_c=$(wc -c < "$tmp/c/t.3.et")
awk -v n="$iters" -v seed="$seed" -v sa="$sizes_a" -v sb="$sizes_b" -v sc="$sizes_c" 'BEGIN {
  srand(seed);
  for (i = 0; i < n; i++) {
    d = (i % 3 == 0) ? "a" : (i % 3 == 1) ? "b" : "c";
    size = (d == "a") ? sa : (d == "b") ? sb : sc;
    k = 1 + int(rand() * 4);               # 1 to 4 flips in one file
    line = d " " int(rand() * 8);
    for (j = 0; j < k; j++) line = line " " int(rand() * size) ":" int(rand() * 256);
    print line;
  }
}' > "$tmp/plan"
bad=0
i=0
while read -r d r flips; do
  i=$((i + 1))
  cp "$tmp/$d/t.$r.et" "$tmp/keep"
  for f in $flips; do
    off=${f%%:*}; val=${f##*:}
    printf "\\$(printf %03o "$val")" | dd of="$tmp/$d/t.$r.et" bs=1 seek="$off" conv=notrunc 2>/dev/null
  done
  "$SHARDPLAN" chakra import "$tmp/$d/t" --topology "$SP_SRCDIR/examples/cpu-shm.ini" \
    -o "$tmp/out.json" >/dev/null 2>"$tmp/err"
  rc=$?
  if { [ $rc -ne 0 ] && [ $rc -ne 2 ]; } || grep -q 'Sanitizer\|runtime error\|CRITICAL' "$tmp/err"; then
    echo "FAIL: round $i ($d rank $r, flips $flips): exit $rc" >&2
    head -n 20 "$tmp/err" >&2
    bad=$((bad + 1))
  fi
  cp "$tmp/keep" "$tmp/$d/t.$r.et"
done < "$tmp/plan"
echo "$i rounds of byte flips (seed $seed): $bad failures"
[ $bad -eq 0 ]
