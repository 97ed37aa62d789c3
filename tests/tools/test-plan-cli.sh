#!/bin/sh
# `shardplan plan`: exit codes, one-line errors, atomic -o output, the text
# summary and --format json.  (Plan contents are checked by test_workload.)
SP_TEST_NAME=plan
. "$SP_SRCDIR/tests/tools/cli-testlib.sh"
fx="$SP_SRCDIR/tests/fixtures/workload"

run () {
  "$SHARDPLAN" plan "$@" >"$tmp/out" 2>"$tmp/err"
  status=$?
}

# ok ARGS…: exit 0
ok () {
  run "$@"
  [ "$status" -eq 0 ] || fail "plan $* exited $status: $(cat "$tmp/err")"
}

# bad TEXT ARGS…: exit 2, exactly one stderr line containing TEXT, no stdout
bad () {
  text=$1
  shift
  run "$@"
  [ "$status" -eq 2 ] || fail "plan $* exited $status, expected 2"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "plan $*: stderr is not one line: $(cat "$tmp/err")"
  grep -q "^shardplan plan: .*$text" "$tmp/err" || fail "plan $*: stderr lacks '$text': $(cat "$tmp/err")"
  [ ! -s "$tmp/out" ] || fail "plan $*: wrote to stdout on error"
}

# defaults: gpt-13b on 16 dgx-h100 nodes, ZeRO-3
ok
grep -q '^plan: gpt-13b .* 16 nodes x 8 GPUs = 128 ranks' "$tmp/out" || fail "default summary: $(head -1 "$tmp/out")"
grep -q '^sharding: zero3 S=128 (ZeRO-3)' "$tmp/out" || fail "default sharding line"
grep -q '^  total .*: fits' "$tmp/out" || fail "default memory verdict"
ok --help
grep -q -- '--deepspeed-config' "$tmp/out" || fail "--help lacks --deepspeed-config"

# -o: the plan file plus the text summary
ok --model gpt-1b --nodes 4 --shard-size 16 --hierarchical -o "$tmp/p.json"
[ -s "$tmp/p.json" ] || fail "-o wrote nothing"
grep -q '"schema" *: *"shardplan-plan"' "$tmp/p.json" || fail "-o output is not a plan"
grep -q 'shard_inter_node' "$tmp/out" || fail "hierarchical summary lacks shard_inter_node"
# -o with --format json: file only
ok --model gpt-1b --nodes 2 -o "$tmp/q.json" --format json
[ ! -s "$tmp/out" ] || fail "-o --format json printed to stdout"
# no -o, --format json: the plan on stdout
ok --model gpt-1b --nodes 1 --format json
grep -q '"schema" *: *"shardplan-plan"' "$tmp/out" || fail "--format json did not print the plan"
# a DeepSpeed config: warnings on stderr, still exit 0
ok --model "$fx/small.json" --deepspeed-config "$fx/ds-unknown-keys.json" --nodes 1
grep -q "warning: .*'optimizer'" "$tmp/err" || fail "no warning for the unknown key optimizer"
ok --model "$SP_SRCDIR/examples/model-gpt-7b.json" --deepspeed-config "$SP_SRCDIR/examples/deepspeed-mics.json" --nodes 4
ok --model gpt-1b --nodes 2 --qwz --qgz --hpz 8 --one-micro-step --grad-accum 4
grep -q 'all_to_all_quant_reduce' "$tmp/out" || fail "qgZ summary lacks all_to_all_quant_reduce"
# which fabric each family crosses (issue 17): on 2 GB200 NVL72 racks MiCS
# S=72 keeps the shard all-gathers on NVLink, S=144 (ZeRO-3) crosses racks
ok --topology gb200-nvl72 --nodes 36 --shard-size 72 -o "$tmp/s72.json"
grep -q '"fabric.shard" *: *"nvlink"' "$tmp/s72.json" || fail "S=72: fabric.shard is not nvlink"
grep -q '"fabric.replicate" *: *"network"' "$tmp/s72.json" || fail "S=72: fabric.replicate is not network"
grep -q '"nvlink_domain" *: *"72"' "$tmp/s72.json" || fail "S=72: no nvlink_domain 72"
grep -q 'shard .* ops, fabric: nvlink' "$tmp/out" || fail "S=72: the summary does not say nvlink"
# CPU ranks over shared memory are neither GPUs nor NVLink
ok --topology cpu-shm -m gpt-1b -o "$tmp/shm.json"
grep -q '"fabric.shard" *: *"shm"' "$tmp/shm.json" || fail "cpu-shm: fabric.shard is not shm"
grep -q '^plan: .* on cpu-shm: 1 node x 4 CPU ranks = 4 ranks$' "$tmp/out" \
  || fail "cpu-shm: $(grep '^plan:' "$tmp/out")"
grep -q 'shard .* ops, fabric: shm$' "$tmp/out" || fail "cpu-shm: the summary does not say shm"
# one GPU: "1 GPU = 1 rank", and the closing line "on 1 rank"
ok --topology "$SP_SRCDIR/tests/fixtures/nccltests/one-gpu.ini" -m "$SP_SRCDIR/examples/model-tiny.json" \
  -o "$tmp/one.json"
grep -q '^plan: .* 1 node x 1 GPU = 1 rank$' "$tmp/out" || fail "one GPU: $(grep '^plan:' "$tmp/out")"
grep -q 'wrote .*one.json (plan of [0-9]* ops on 1 rank,' "$tmp/err" || fail "one GPU: $(cat "$tmp/err")"
ok --topology gb200-nvl72 --nodes 36 -o "$tmp/s144.json"
grep -q '"fabric.shard" *: *"network"' "$tmp/s144.json" || fail "S=144: fabric.shard is not network"
ok --topology gb200-nvl72 --nodes 36 --hpz 16 -o "$tmp/z16.json"
grep -q '"fabric.zero_param" *: *"mixed: 8 of 9 groups inside one NVLink domain"' "$tmp/z16.json" \
  || fail "hpZ=16: fabric.zero_param is not mixed 8 of 9"

# bad input: exit 2, one line
bad "neither a preset" --model no-such-model
bad "unknown key 'hiden'" --model "$fx/bad-unknown-key.json"
bad "stage is 2" --deepspeed-config "$fx/ds-stage2.json"
bad "zero_quantized_weights" --deepspeed-config "$fx/ds-bad-type.json"
bad "does not divide world size 128" --shard-size 24
bad "spanning at least 2 nodes" --shard-size 8 --hierarchical
bad "ZeRO++" --shard-size 8 --qwz
bad "compute-efficiency" --compute-efficiency 1.5
bad "nodes" --nodes 0
bad "format" --format csv
bad "unexpected argument" extra
# --reserve takes the one size syntax: G is GiB, GB is 10^9 B; a plain
# number under 1 MiB is a missing unit, not a reserve of a few bytes
reserve_gib () {
  run --model gpt-1b --nodes 2 --reserve "$1"
  sed -n 's/^  reserve (estimate) *//p' "$tmp/out"
}
[ "$(reserve_gib 2G)" = "2.000" ] || fail "--reserve 2G: $(reserve_gib 2G) GiB, expected 2.000"
[ "$(reserve_gib 2GiB)" = "2.000" ] || fail "--reserve 2GiB: $(reserve_gib 2GiB) GiB"
[ "$(reserve_gib 2GB)" = "1.863" ] || fail "--reserve 2GB: $(reserve_gib 2GB) GiB, expected 1.863"
[ "$(reserve_gib 0)" = "0.000" ] || fail "--reserve 0: $(reserve_gib 0) GiB"
bad "--reserve '2' is 2 bytes, less than 1 MiB: give a unit (2G for GiB" --reserve 2
bad "--reserve '-1' is negative" --reserve -1
bad "unknown unit 'GB2'" --reserve 2GB2
# a failed run leaves no output file
run --shard-size 24 -o "$tmp/never.json"
[ ! -e "$tmp/never.json" ] || fail "a failed run left $tmp/never.json"

finish
