#!/bin/sh
# tests/tools/test-hostile-inputs.sh — issue 15: corrupt and hostile input
# files replayed through the commands a user runs.  Each must end with exit 2
# and one message naming the file and what is wrong — never a signal, never
# more than $secs seconds, never more than a bounded address space (4 GiB,
# `ulimit -v`; not under sanitizers, whose shadow memory needs more) — or,
# for the inputs that are only large, succeed within the same time.
#
# Fixtures: tests/fixtures/hostile/ (small files: the fuzz findings' inputs
# among them), or generated here
# (deep JSON, large logs) and by tests/exec/make-spill (spill files in this
# build's row layout).
SP_TEST_NAME=hostile-inputs
. "$SP_SRCDIR/tests/tools/cli-testlib.sh"
fx=$SP_SRCDIR/tests/fixtures/hostile
make_spill=$SP_BUILDDIR/tests/exec/make-spill
secs=10

[ -x "$make_spill" ] || { echo "test-hostile-inputs: $make_spill is not built" >&2; exit 99; }
if "$SHARDPLAN" info | grep -q 'sanitizers=no'; then
  limit_kb=4194304
else
  limit_kb=unlimited
fi

# run WHAT ARGS…: the command under the limits; sets $rc, $tmp/out, $tmp/err
run () {
  what=$1
  shift
  (ulimit -v "$limit_kb" && exec timeout "$secs" "$SHARDPLAN" "$@") >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if grep -q 'CRITICAL\|WARNING \*\*' "$tmp/err"; then
    fail "$what: GLib criticals or warnings on stderr: $(head -c 300 "$tmp/err")"
  fi
}

# refused WHAT TEXT ARGS…: exit 2 and TEXT on stderr
refused () {
  what=$1
  text=$2
  shift 2
  run "$what" "$@"
  case $rc in
    2) grep -qF -- "$text" "$tmp/err" || fail "$what: stderr lacks '$text': $(head -c 300 "$tmp/err")" ;;
    124) fail "$what: still running after $secs s" ;;
    *) fail "$what: exit $rc, expected 2 ($(head -c 300 "$tmp/err"))" ;;
  esac
}

# The libhdf5 this build runs, as MAJOR * 100 + MINOR (`shardplan info`:
# "HDF5 1.10.8" gives 110).
h5ver=$("$SHARDPLAN" info | sed -n 's/.*HDF5 \([0-9]*\)\.\([0-9]*\)\..*/\1 \2/p' \
  | { read -r major minor && echo $((major * 100 + minor)); })

# refused_h5 WHAT TEXT ARGS…: as refused; but libhdf5 1.12 and later refuse
# some of this damage themselves, with their own message, before this
# reader's check sees it (1.14.5 does so for four fixtures below): there,
# exit 2 with a message naming the file (TEXT up to its first ": ") is it
refused_h5 () {
  if [ "${h5ver:-0}" -ge 112 ]; then
    what=$1
    text=${2%%: *}
    shift 2
    refused "$what" "$text" "$@"
  else
    refused "$@"
  fi
}

# accepted WHAT ARGS…: exit 0 within the time
accepted () {
  what=$1
  shift
  run "$what" "$@"
  case $rc in
    0) ;;
    124) fail "$what: still running after $secs s" ;;
    *) fail "$what: exit $rc, expected 0 ($(head -c 300 "$tmp/err"))" ;;
  esac
}

# repeat CHAR N: CHAR N times, no newline
repeat () {
  head -c "$2" /dev/zero | tr '\0' "$1"
}

topo="--topology dgx-h100"

## nccl-tests logs (lib/nccltests.c): findings 1 and 5
f=$fx/nccltests-count-2-63.txt
refused "count 2^63" "$f:4: cannot tell the rank count: no '#  Rank' lines, no '# nThread … nGpus' header, and size 16 is not count 9223372036854775808 x 2 B" \
  trace import-nccl-tests "$f" -o "$tmp/t.h5" $topo
f=$fx/nccltests-count-2-63-nthread.txt
refused "count 2^63, nThread x nGpus" "$f:5: size 16 is not count 9223372036854775808 x 2 B x 8 ranks" \
  trace import-nccl-tests "$f" -o "$tmp/t.h5" $topo
f=$fx/nccltests-ranks-2-27.txt
refused "2^27 ranks implied" "$f:4: cannot tell the rank count" \
  trace import-nccl-tests "$f" -o "$tmp/t.h5" $topo
f=$fx/nccltests-time-inf.txt
refused "time inf" "$f:5: time 'inf' us is more than 1000000000 us" \
  trace import-nccl-tests "$f" -o "$tmp/t.h5" $topo
refused "log from /dev/zero" "/dev/zero: more than 67108864 bytes: larger than any nccl-tests log" \
  trace import-nccl-tests /dev/zero -o "$tmp/t.h5" $topo
truncate -s 67108865 "$tmp/sparse.log"
refused "log over 64 MiB" "$tmp/sparse.log: 67108865 bytes is larger than any nccl-tests log" \
  trace import-nccl-tests "$tmp/sparse.log" -o "$tmp/t.h5" $topo
rm -f "$tmp/sparse.log"
[ -e "$tmp/t.h5" ] && fail "a refused log left $tmp/t.h5"

# bytes that are not UTF-8 in a hostname and a GPU name: imported as
# U+FFFD (the trace declares its strings UTF-8), so the JSON exports of the
# trace stay valid JSON
bad=$(printf '\377\376') bad2=$(printf '\303(')
LC_ALL=C sed -e "s/dgx1 device/dgx1$bad device/" -e "s/Tesla V100/Tesla ${bad2}V100/" \
  "$SP_SRCDIR/tests/fixtures/nccltests/all_reduce-2019.txt" >"$tmp/latin.log"
LC_ALL=C grep -q "$bad" "$tmp/latin.log" || fail "latin.log: the sed made no invalid UTF-8"
accepted "hostname not UTF-8" trace import-nccl-tests "$tmp/latin.log" -o "$tmp/latin.h5" $topo
py=
for cand in "${PYTHON:-}" python3 /usr/bin/python3; do
  [ -n "$cand" ] && "$cand" -c 'import h5py' >/dev/null 2>&1 && { py=$cand; break; }
done
if [ -n "$py" ]; then
  "$py" -c 'import h5py, sys
for n in h5py.File(sys.argv[1], "r")["meta/cluster/nodes"]["hostname"]:
    (n if isinstance(n, bytes) else n.encode()).decode("utf-8", "strict")' "$tmp/latin.h5" \
    || fail "hostname not UTF-8: the trace holds strings that are not UTF-8"
fi
accepted "hostname not UTF-8, exported" trace export --format chrome "$tmp/latin.h5" -o "$tmp/latin.json"
for f in "$tmp/latin.json"; do
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json, sys; json.load(open(sys.argv[1], encoding="utf-8", errors="strict"))' "$f" \
      || fail "hostname not UTF-8: $f is not valid UTF-8 JSON"
  fi
  LC_ALL=C grep -q "$(printf '\357\277\275')" "$f" || fail "hostname not UTF-8: no U+FFFD in $f"
done

# 60,000 distinct rank lines and environment keys: linear (the quadratic
# scans took 28 s here)
awk -v n=60000 'BEGIN {
  print "# Collective test starting: all_reduce_perf";
  for (r = 0; r < n; r++)
    printf "#  Rank %d Group  0 Pid %d on node%d device %d [0x18] NVIDIA H100 80GB HBM3\n", r, r, int(r / 8), r % 8;
  for (e = 0; e < n; e++)
    printf "node0:1:1 [0] NCCL INFO NCCL_K%d set by environment to %d\n", e, e;
  print "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong";
  print "1024 256 float sum -1 10.00 0.10 0.20 0 10.00 0.10 0.20 0";
  print "# Avg bus bandwidth : 0.2" }' >"$tmp/many.log"
accepted "60,000 rank and environment lines" trace import-nccl-tests "$tmp/many.log" -o "$tmp/many.h5" $topo
grep -q "60000 ranks, 2 points" "$tmp/out" || fail "many.log: unexpected output: $(cat "$tmp/out")"
rm -f "$tmp/many.log" "$tmp/many.h5"

## model files and DeepSpeed configs (lib/workload.c): finding 6
{ printf '{"moe": '; repeat '[' 200000; repeat ']' 200000; printf '}\n'; } >"$tmp/model-deep.json"
refused "model nested 200,000 deep" "$tmp/model-deep.json:1:136: objects and arrays nested deeper than 128 levels" \
  plan --model "$tmp/model-deep.json" --nodes 1 -o "$tmp/p.json"
awk 'BEGIN { for (i = 0; i < 100000; i++) printf "{\"a\":"; printf "1";
             for (i = 0; i < 100000; i++) printf "}"; print "" }' >"$tmp/ds-deep.json"
refused "DeepSpeed config nested 100,000 deep" "$tmp/ds-deep.json:1:641: objects and arrays nested deeper than 128 levels" \
  plan --model gpt-1b --deepspeed-config "$tmp/ds-deep.json" --nodes 1 -o "$tmp/p.json"
refused "model from /dev/zero" "/dev/zero: more than 16777216 bytes: larger than any model file" \
  plan --model /dev/zero --nodes 1 -o "$tmp/p.json"
[ -e "$tmp/p.json" ] && fail "a refused model left $tmp/p.json"
rm -f "$tmp/model-deep.json" "$tmp/ds-deep.json"
# fuzz finding M1 (tests/fuzz, the model target's round trip): a lone
# surrogate decodes to bytes that are not UTF-8 (refused before json-glib
# sees it, as \u0000 is, which json-glib would cut the string at)
refused "model name with a lone surrogate" "model-fuzz-name-lone-surrogate.json:2:25: unpaired UTF-16 surrogate in a \\u escape" \
  plan --model "$fx/model-fuzz-name-lone-surrogate.json" --nodes 1 -o "$tmp/p.json"

# what json-glib takes silently: a key twice (DeepSpeed refuses its
# config's duplicates; the last value won here) and integers outside 64
# bits (wrapped: 2^64 read as -1)
printf '{"zero_optimization": {"stage": 3,\n  "mics_shard_size": 8, "mics_shard_size": 16}}\n' \
  >"$tmp/ds-dup.json"
refused "DeepSpeed config with a key twice" \
  "$tmp/ds-dup.json:2:43: the key \"mics_shard_size\" a second time in one object" \
  plan --model gpt-1b --deepspeed-config "$tmp/ds-dup.json" --nodes 1 -o "$tmp/p.json"
sed 's/"layers": [0-9]*/"layers": 18446744073709551616/' "$SP_SRCDIR/examples/model-tiny.json" \
  >"$tmp/model-2p64.json"
refused "model with 2^64 layers" "the integer 18446744073709551616 is outside the 64-bit range" \
  plan --model "$tmp/model-2p64.json" --nodes 1 -o "$tmp/p.json"
sed 's/"layers": [0-9]*/"layers": 8, "layers": 9/' "$SP_SRCDIR/examples/model-tiny.json" \
  >"$tmp/model-dup.json"
refused "model with a key twice" "the key \"layers\" a second time in one object" \
  plan --model "$tmp/model-dup.json" --nodes 1 -o "$tmp/p.json"
# fuzz finding I1 (tests/fuzz/README): invalid backslash escapes in a value
# made GLib's key file parser set its error twice; a backslash is refused
refused "topology value with backslash escapes" "topo-fuzz-backslash-escapes.ini: [gpu] model (line 7): a backslash in the value" \
  estimate -t "$fx/topo-fuzz-backslash-escapes.ini" -c all_reduce -b 1M
grep -q 'GError set over the top' "$tmp/err" && fail "backslash escapes: GLib's double error"
printf '{"name": "a\\u0000b", "layers": 2, "hidden": 512, "heads": 8}\n' >"$tmp/model-nul.json"
refused "model name with \\u0000" "model-nul.json:1:18: \\u0000 in a string is not supported" \
  plan --model "$tmp/model-nul.json" --nodes 1 -o "$tmp/p.json"
[ -e "$tmp/p.json" ] && fail "a refused model left $tmp/p.json"

## spill files (exec/spill.c, exec/recover.c): finding 8
for kind in ok deep fields software clock; do
  "$make_spill" "$kind" "$tmp/$kind.spill" || fail "make-spill $kind failed"
done
"$make_spill" world "$tmp/world.spill" 134217728 || fail "make-spill world failed"
"$make_spill" marks "$tmp/marks.spill" 40000 || fail "make-spill marks failed"
accepted "a valid spill file" trace recover "$tmp/ok.spill" -o "$tmp/ok.h5"
refused "spill header nested 100,000 deep" "$tmp/deep.spill: the header record nests objects and arrays deeper than 128 levels" \
  trace recover "$tmp/deep.spill" -o "$tmp/r.h5"
refused "spill world_size 2^27" "$tmp/world.spill: header member 'world_size' 134217728 is more than the 16777216 ranks" \
  trace recover "$tmp/world.spill" -o "$tmp/r.h5"
refused "spill row_fields of wrong types" "$tmp/fields.spill: written with another row layout (row field 0 is ? ?" \
  trace recover "$tmp/fields.spill" -o "$tmp/r.h5"
refused "spill clock near gint64's ends" "$tmp/clock.spill: epoch 9223372036854775806 ns minus clock offset -9223372036854775807 ns overflows" \
  trace recover "$tmp/clock.spill" -o "$tmp/r.h5"
refused "spill software entry with an empty name" "software' has a member with an empty name" \
  trace recover "$tmp/software.spill" -o "$tmp/r.h5"
refused "spill from /dev/zero" "/dev/zero: not a regular file, so not a spill file" \
  trace recover /dev/zero -o "$tmp/r.h5"
# fuzz finding S1 (the spill target): an empty record payload, no json-glib critical
refused "spill with an empty record" "record is not a JSON object" \
  trace recover "$fx/spill-fuzz-run-record-empty.spill" -o "$tmp/r.h5"
grep -q CRITICAL "$tmp/err" && fail "empty spill record: json-glib complained: $(head -c 300 "$tmp/err")"
[ -e "$tmp/r.h5" ] && fail "a refused spill file left $tmp/r.h5"
# a crash that tore the file's end (zeros where its last records were): the
# rows before them are recovered, with a warning and a note in the trace
"$make_spill" ok "$tmp/torn.spill" || fail "make-spill ok failed"
torn_at=$(wc -c <"$tmp/torn.spill")
head -c 8192 /dev/zero >>"$tmp/torn.spill"
accepted "a spill file ending in zeros" trace recover "$tmp/torn.spill" -o "$tmp/torn.h5"
grep -qF "warning: $tmp/torn.spill: damaged at byte $torn_at (8192 zero bytes to its end (a crash before the data reached the disk)): kept the 4 rows before it, dropped the 8192 bytes from there" "$tmp/err" \
  || fail "torn spill file: $(head -c 400 "$tmp/err")"
grep -q "partial trace of 4 rows" "$tmp/out" || fail "torn spill file: $(cat "$tmp/out")"
"$SHARDPLAN" trace show "$tmp/torn.h5" | grep -qF "rank 0's file damaged at byte $torn_at (8192 bytes dropped)" \
  || fail "torn spill file: the trace does not say so: $("$SHARDPLAN" trace show "$tmp/torn.h5" | head -3)"
accepted "40,000 rows and 40,000 marks" trace recover "$tmp/marks.spill" -o "$tmp/marks.h5"
grep -q "40000 rows" "$tmp/out" || fail "marks.spill: unexpected output: $(cat "$tmp/out")"

## plans (lib/plan-json.c sp_plan_load, exec/recover.c --plan): read whole,
## so bounded by SP_PLAN_MAX_FILE_BYTES before anything is allocated
truncate -s 1073741825 "$tmp/huge-plan.json"
refused "plan over 1 GiB (sim)" "$tmp/huge-plan.json: 1073741825 bytes is larger than any plan (limit 1073741824)" \
  sim --plan "$tmp/huge-plan.json" --topology dgx-h100
refused "plan over 1 GiB (trace recover --plan)" "$tmp/huge-plan.json: 1073741825 bytes is larger than any plan (limit 1073741824)" \
  trace recover "$tmp/ok.spill" --plan "$tmp/huge-plan.json" -o "$tmp/r.h5"
[ -e "$tmp/r.h5" ] && fail "a refused plan left $tmp/r.h5"
rm -f "$tmp/huge-plan.json"
head -c 300 "$SP_SRCDIR/tests/fixtures/plan/golden-small.json" >"$tmp/cut-plan.json"
refused "plan cut short" "$tmp/cut-plan.json: plan is not valid JSON at 5:" \
  sim --plan "$tmp/cut-plan.json" --topology dgx-h100
refused "plan is a directory" "$tmp: is a directory, not a plan" \
  sim --plan "$tmp" --topology dgx-h100
# a file whose size stat() does not tell (a FIFO says 0 bytes) is read as it comes
if mkfifo "$tmp/plan.fifo" 2>/dev/null; then
  cat "$SP_SRCDIR/tests/fixtures/plan/golden-small.json" >"$tmp/plan.fifo" &
  accepted "plan from a FIFO" sim --plan "$tmp/plan.fifo" --topology dgx-h100 --nodes 1
  wait
  rm -f "$tmp/plan.fifo"
fi

## traces: the fuzz findings T1-T7 (tests/fuzz/README), each saved as the
## input that crashed, hung or ran out of memory in libhdf5 or the reader
for cmd in "trace show" "trace export --format csv"; do
  # shellcheck disable=SC2086 # $cmd is words on purpose
  refused "T1 /meta/env string of 4 GiB ($cmd)" "trace-fuzz-env-vlen-4gib.h5: /meta/env row 0 refers to a string that is not in the file's global heap" \
    $cmd "$fx/trace-fuzz-env-vlen-4gib.h5"
  # shellcheck disable=SC2086
  refused "T2 global heap memcpy overlap ($cmd)" "trace-fuzz-hg-memcpy-overlap.h5: damaged HDF5 global heap at byte 2048" \
    $cmd "$fx/trace-fuzz-hg-memcpy-overlap.h5"
  # shellcheck disable=SC2086
  refused "T3 H5Aexists overflow ($cmd)" "trace-fuzz-aexists-overflow.h5: damaged HDF5 global heap at byte 2048" \
    $cmd "$fx/trace-fuzz-aexists-overflow.h5"
  # shellcheck disable=SC2086
  refused "T4 global heap hang ($cmd)" "trace-fuzz-hg-hang.h5: damaged HDF5 global heap at byte 2048: object 0 at offset 192 claims 0 bytes" \
    $cmd "$fx/trace-fuzz-hg-hang.h5"
  # shellcheck disable=SC2086
  refused "T5 libhdf5 leak ($cmd)" "trace-fuzz-hdf5-leak.h5: /meta/cluster/ranks is not a readable dataset" \
    $cmd "$fx/trace-fuzz-hdf5-leak.h5"
  # shellcheck disable=SC2086
  refused_h5 "T6 table of 128 GiB ($cmd)" "trace-fuzz-table-128gib.h5: /meta/cluster/ranks declares 3724541960 elements, more than the 268435456 a trace allows" \
    $cmd "$fx/trace-fuzz-table-128gib.h5"
  # shellcheck disable=SC2086
  refused "T7 compound conversion use-after-free ($cmd)" "trace-fuzz-conv-struct-uaf.h5: damaged HDF5 global heap at byte 18675" \
    $cmd "$fx/trace-fuzz-conv-struct-uaf.h5"
  # the second long run (tests/fuzz/README): object headers that libhdf5
  # decodes past their end, or whose attributes' string references the
  # walk did not reach
  # shellcheck disable=SC2086
  refused "T8 enum attribute type, strdup past the header ($cmd)" "trace-fuzz-attr-enum-strdup.h5: attribute schema of / has a damaged datatype or one no trace attribute has" \
    $cmd "$fx/trace-fuzz-attr-enum-strdup.h5"
  # shellcheck disable=SC2086
  refused_h5 "T9 continuation message of size 0 ($cmd)" "trace-fuzz-oh-continuation-short.h5: the object header of / has a continuation message too short for its address and length (at byte 112)" \
    $cmd "$fx/trace-fuzz-oh-continuation-short.h5"
  # shellcheck disable=SC2086
  # (libhdf5's H5Oget_info could not read this header; the walk now reads
  # it first, from the address in /meta's links, and names the damage)
  refused "T10 object header H5Oget_info cannot read ($cmd)" "trace-fuzz-oh-info-fails.h5: attribute hdf5 of /meta/software refers to a string that is not in the file's global heap (a damaged reference)" \
    $cmd "$fx/trace-fuzz-oh-info-fails.h5"
  # shellcheck disable=SC2086
  refused "T11 attribute data past its message ($cmd)" "trace-fuzz-attr-data-overrun.h5: attribute complete of / is a damaged attribute message (its data overrun it)" \
    $cmd "$fx/trace-fuzz-attr-data-overrun.h5"
  # shellcheck disable=SC2086
  refused_h5 "T12 compact table of 0 bytes ($cmd)" "trace-fuzz-compact-layout-empty.h5: /meta/cluster/ranks stores 0 bytes in its object header for its 8 elements (a damaged layout" \
    $cmd "$fx/trace-fuzz-compact-layout-empty.h5"
  # shellcheck disable=SC2086
  refused "T13 chunk dimension of 0 ($cmd)" "trace-fuzz-chunk-dim-zero.h5: the object header of /ops/ops has a chunked layout with a chunk dimension of 0 (at byte 12104)" \
    $cmd "$fx/trace-fuzz-chunk-dim-zero.h5"
  # T15: a chunk whose filters do not give back a chunk: libhdf5 1.10.8
  # copied a whole chunk out of the shorter buffer (heap over-read in
  # H5VM_memcpyvv under H5Dread) -- the fuzzer's, whose chunk index marks
  # its deflate as skipped, and one whose deflate stream is valid but short
  # shellcheck disable=SC2086
  refused "T15 chunk with its deflate marked skipped ($cmd)" "trace-fuzz-chunk-filter-skipped.h5: chunk 0 of /ops/ops does not give back its 950272 bytes once its filters are undone (damaged storage or filters)" \
    $cmd "$fx/trace-fuzz-chunk-filter-skipped.h5"
  # shellcheck disable=SC2086
  refused "T15 chunk deflating to fewer bytes ($cmd)" "trace-deflate-short-chunk.h5: chunk 0 of /ops/ops does not give back its 950272 bytes once its filters are undone" \
    $cmd "$fx/trace-deflate-short-chunk.h5"
done
# the same through a 5-byte version-4 dimension of 2^32, which libhdf5 cuts
# to its low 32 bits (helper review), and a committed datatype whose
# compound claims 65535 members (libhdf5 decodes it opening the dataset)
for cmd in "trace show" "trace export --format csv"; do
  # shellcheck disable=SC2086
  refused "T13 chunk dimension of 2^32 ($cmd)" "trace-chunk-dim-wide.h5: the object header of /ops/ops has a chunked layout with a chunk dimension over 2^32 - 1" \
    $cmd "$fx/trace-chunk-dim-wide.h5"
  # shellcheck disable=SC2086
  refused "T14 committed datatype ($cmd)" "trace-committed-dtype-overrun.h5: the object header of /meta/cluster/ranks's committed datatype has a damaged or unsupported datatype message" \
    $cmd "$fx/trace-committed-dtype-overrun.h5"
done
# and what the walk must not refuse: a committed (named) datatype, an
# opaque field whose 8-byte tag has no NUL (libhdf5 writes it so)
accepted "committed datatype" trace show "$SP_SRCDIR/tests/fixtures/trace/committed-type.h5"
accepted "opaque tag of 8 bytes" trace show "$SP_SRCDIR/tests/fixtures/trace/opaque-tag8.h5"
# version 2 object headers (libver "latest"), the root's attributes in a
# fractal heap whose root block is indirect (the walk reads them there)
accepted "version 2 headers, dense attributes" trace show "$SP_SRCDIR/tests/fixtures/trace/v2-dense.h5"
# libhdf5 1.10.8 divided by it opening the table (SIGFPE): calibrate reads
# traces the same way
refused "T13 chunk dimension of 0 (calibrate)" "trace-fuzz-chunk-dim-zero.h5: the object header of /ops/ops has a chunked layout with a chunk dimension of 0" \
  calibrate "$fx/trace-fuzz-chunk-dim-zero.h5" --topology dgx-h100 -o "$tmp/t13.ini"
[ -e "$tmp/t13.ini" ] && fail "T13: calibrate wrote its output"
refused "T15 chunk deflating to fewer bytes (calibrate)" "trace-deflate-short-chunk.h5: chunk 0 of /ops/ops does not give back its 950272 bytes" \
  calibrate "$fx/trace-deflate-short-chunk.h5" --topology dgx-h100 -o "$tmp/t15.ini"
[ -e "$tmp/t15.ini" ] && fail "T15: calibrate wrote its output"

## traces: the third long run's inputs (tests/fuzz/README, run 3), one of
## each kind of the 212 it saved.  All stopped inside libhdf5 1.10.8, not in
## the project's code: its metadata cache allocating a damaged object
## header's size (H5C_protect; ASan refuses the allocation, a normal build
## gets NULL and libhdf5 reports it; the walk now checks every header
## first, the root's before H5Fopen loads it), and a damaged dataset datatype
## message that H5O_msg_read_oh decodes past its end (which the reader now
## refuses before libhdf5 decodes it: T14).  What the user gets is the
## point: exit 2 and a reason, no signal.  Under the sanitizers a failed
## allocation must return NULL as it does without them
## (allocator_may_return_null).  libhdf5's reason for the
## header sizes depends on whether the allocation succeeds (the address
## space left: "memory allocation failed for on disk image buffer" or, when
## it does, "addr overflow" once it reads), so only the file and the part
## that names the damage are checked.
old_asan_options=${ASAN_OPTIONS-}
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1
export ASAN_OPTIONS
for cmd in "trace show" "trace export --format csv"; do
  # (the root's header: the walk reads it before H5Fopen, from the
  # superblock read raw, so libhdf5 allocates nothing for it)
  # shellcheck disable=SC2086 # $cmd is words on purpose
  refused "R3 cache allocates a damaged header's size ($cmd)" \
    "trace-fuzz-cache-alloc-header.h5: the object header of / continues outside the file" \
    $cmd "$fx/trace-fuzz-cache-alloc-header.h5"
  # (these two the walk now refuses before libhdf5 loads the header: it
  # takes the header's address from the link in /meta, where it took it
  # from H5Oget_info_by_name, which had libhdf5 allocate the damaged size)
  # shellcheck disable=SC2086
  refused "R3 /meta/software's header of a damaged size ($cmd)" \
    "trace-fuzz-cache-alloc-software.h5: the object header of /meta/software continues outside the file (at byte 12392)" \
    $cmd "$fx/trace-fuzz-cache-alloc-software.h5"
  # shellcheck disable=SC2086
  refused "R3 cache ring mismatch ($cmd)" \
    "trace-fuzz-cache-ring-mismatch.h5: the object header of /meta/software has a continuation message too short for its address and length (at byte 12632)" \
    $cmd "$fx/trace-fuzz-cache-ring-mismatch.h5"
  # shellcheck disable=SC2086
  refused "R3 header address past the end ($cmd)" \
    "trace-fuzz-addr-overflow.h5: the object header of / continues outside the file (at byte 800)" \
    $cmd "$fx/trace-fuzz-addr-overflow.h5"
  # refused before libhdf5 decodes it (T14), so under the sanitizers too
  # shellcheck disable=SC2086
  refused "R3 damaged datatype message ($cmd)" \
    "trace-fuzz-dtype-message-overrun.h5: the object header of /ops/ops has a damaged or unsupported datatype message (a member name or part runs past it, or an unknown class) (at byte 10168)" \
    $cmd "$fx/trace-fuzz-dtype-message-overrun.h5"
done
ASAN_OPTIONS=$old_asan_options

# An input file that does not exist, or is a directory, is bad input: exit 2
# from every reader, one line naming it, no output left behind.
no=$tmp/no-such
mkdir -p "$tmp/no-such.d" || exit 99
for c in "sim --plan $no.json -o $tmp/x.h5" "chakra export --plan $no.json -o $tmp/et/x" \
         "chakra import $no -o $tmp/x.json" "trace import-chakra $no -o $tmp/x.json" \
         "plan --deepspeed-config $no.json -o $tmp/x.json" "sweep --deepspeed-config $no.json" \
         "trace show $no.h5" "trace export $no.h5 --format csv -o $tmp/x.csv" \
         "trace recover $no.h5 -o $tmp/x.h5" "compare $no.h5 $no.h5" \
         "calibrate $no.h5 --topology p3dn -o $tmp/x.ini" "run --plan $no.json -o $tmp/x.h5" \
         "trace import-nccl-tests $no.txt --topology p3dn -o $tmp/x.h5" \
         "estimate --topology $no.ini -c all_reduce -b 1M" "plan --model $no.json -o $tmp/x.json" \
         "plan --model $tmp/no-such.d -o $tmp/x.json" "sweep --model $tmp/no-such.d" \
         "plan --deepspeed-config $tmp/no-such.d -o $tmp/x.json"; do
  # shellcheck disable=SC2086
  refused "missing input ($c)" "no-such" $c
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "missing input ($c): more than one line"
  for f in "$tmp/x.h5" "$tmp/x.json" "$tmp/x.csv" "$tmp/x.ini" "$tmp/et/x.0.et"; do
    [ ! -e "$f" ] || fail "missing input ($c): left $f"
  done
done

## Valid inputs the simulator cannot follow: a link rate or a peak near
## zero (the INI takes any positive number) makes a time past 2^62 ns (146
## years), which des wrapped (a hang), the closed form saturated (printed
## 2^63 ns as an answer) and a plan's schedule turned into "a negative
## duration"; a collective whose des run needs more flows than it holds
## aborted on allocation (524,288 nodes: 4 GiB)
cat >"$tmp/slow.ini" <<INI
[cluster]
name = slow
nodes = 2
gpus_per_node = 8
[gpu]
model = H100
memory_gib = 80
tflops = 989
[intra]
kind = nvswitch
bandwidth_gbs = 1e-12
[inter]
nics_per_node = 8
nic_gbps = 400
INI
sed 's/^bandwidth_gbs = .*/bandwidth_gbs = 450/; s/^tflops = .*/tflops = 1e-300/' "$tmp/slow.ini" >"$tmp/flopless.ini"
horizon="horizon of 2^62 ns (146 years)"
for m in des analytic nccl; do
  refused "rate near zero, estimate $m" "$horizon" \
    estimate -t "$tmp/slow.ini" -c all_reduce -b 1G --sim-model $m
done
"$SHARDPLAN" plan -m gpt-1b -t "$tmp/flopless.ini" --one-micro-step -o "$tmp/p.json" 2>/dev/null \
  || fail "plan on flopless.ini: exit $?"
for m in des analytic; do
  refused "rate near zero, sim $m" "$horizon" sim -p "$tmp/p.json" -t "$tmp/slow.ini" --sim-model $m
  refused "peak near zero, sim $m" "$horizon" sim -p "$tmp/p.json" -t "$tmp/flopless.ini" --sim-model $m
done
refused "peak near zero, sweep" "$horizon" sweep -m gpt-1b -t "$tmp/flopless.ini" -n 1
if "$SHARDPLAN" info | grep -q 'protobuf-c=yes'; then
  mkdir -p "$tmp/et"
  refused "peak near zero, plan --chakra" "its compute time passes the simulator's horizon of 2^62 ns" \
    plan -m gpt-1b -t "$tmp/flopless.ini" --one-micro-step --chakra "$tmp/et/r" -o "$tmp/p2.json"
  [ -z "$(ls "$tmp/et")" ] || fail "plan --chakra past the horizon wrote $(ls "$tmp/et")"
fi
refused "des flows past the limit" "needs 25165824 flows, more than the des model's limit of 16777216 for one collective; use the analytic model" \
  estimate -t dgx-h100 --nodes 524288 -c all_reduce -b 1G
accepted "the same with the analytic model" estimate -t dgx-h100 --nodes 524288 -c all_reduce -b 1G --sim-model analytic

finish
