#!/bin/sh
# Bad input to `shardplan run`: one clear line from rank 0, every rank
# exits non-zero, and no output file (nor spill file) is left.
. "$SP_SRCDIR/tests/exec/exec-testlib.sh"

"$MAKE_PLAN" all "$tmp/all.json" || exit 99

# bad N TEXT ARGS…: run on N ranks, expect failure, one shardplan line with TEXT.
bad () {
  n=$1
  text=$2
  shift 2
  rm -f "$tmp/o.h5"
  mpi "$n" "$@" -o "$tmp/o.h5"
  [ "$status" -ne 0 ] || fail "run $* on $n ranks succeeded"
  lines=$(run_lines)
  [ "$lines" -eq 1 ] || fail "run $*: $lines lines from shardplan, expected 1: $(cat "$tmp/err")"
  grep -qF -- "$text" "$tmp/err" || fail "run $*: stderr does not say '$text': $(cat "$tmp/err")"
  [ -e "$tmp/o.h5" ] && fail "run $*: wrote $tmp/o.h5"
  ls "$tmp" | grep -q spill && fail "run $*: left spill files: $(ls "$tmp")"
}

bad 2 "is for world size 4 but this run has 2 ranks" --plan "$tmp/all.json"
bad 2 "cannot read plan $tmp/nope.json: no such file" --plan "$tmp/nope.json"
bad 2 "not-json.json" --plan "$SP_SRCDIR/tests/fixtures/plan/not-json.json"
# a plan larger than any plan: refused from its size, nothing read or sent
truncate -s 1073741825 "$tmp/huge.json"
bad 2 "$tmp/huge.json: 1073741825 bytes is larger than any plan (limit 1073741824)" --plan "$tmp/huge.json"
truncate -s 1048577 "$tmp/huge.ini"
bad 4 "$tmp/huge.ini: 1048577 bytes is larger than any topology (limit 1048576)" --plan "$tmp/all.json" \
  --topology "$tmp/huge.ini"
rm -f "$tmp/huge.json" "$tmp/huge.ini"
bad 4 "needs --topology" --plan "$tmp/all.json" --mode replay
# a peak near zero: replay's modelled compute would sleep for ages (the
# sleep was llround (inf): a negative time, so no time at all)
sed 's/^tflops = .*/tflops = 1e-300/' "$SP_SRCDIR/examples/cpu-shm.ini" >"$tmp/flopless.ini"
bad 4 "TFLOP/s take" --plan "$tmp/all.json" --mode replay --topology "$tmp/flopless.ini"
bad 4 "--topology nosuch" --plan "$tmp/all.json" --topology nosuch
bad 4 "--mode 'bogus'" --plan "$tmp/all.json" --mode bogus
bad 4 "--iters" --plan "$tmp/all.json" --iters 0
if "$SHARDPLAN" info 2>/dev/null | grep -q "nccl"; then
  if ! nvidia-smi -L >/dev/null 2>&1; then
    bad 4 "--backend nccl: " --plan "$tmp/all.json" --backend nccl
  fi
else
  bad 4 "this build has no NCCL backend" --plan "$tmp/all.json" --backend nccl
fi
# A directory that cannot hold the output: exit 1, no file.
mpi 4 --plan "$tmp/all.json" -o "$tmp/no/such/dir/o.h5" --iters 1 --warmup 0
[ "$status" -ne 0 ] || fail "an unwritable output directory succeeded"
finish
