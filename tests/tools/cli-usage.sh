#!/bin/sh
# Exit codes and error lines of `shardplan`, `shardplan info` and
# `shardplan groups`: 0 on success and --help, 2 and exactly one line on
# stderr naming the bad value for every kind of bad input, and warnings that
# do not stop the output.  (JSON contents are checked by test_cli_groups.)
SP_TEST_NAME=cli
. "$SP_SRCDIR/tests/tools/cli-testlib.sh"
checks=0

# run ARGS…: runs shardplan, leaves $status, $tmp/out, $tmp/err.
run () {
  checks=$((checks + 1))
  "$SHARDPLAN" "$@" >"$tmp/out" 2>"$tmp/err"
  status=$?
}

# expect STATUS ARGS…
expect () {
  want=$1
  shift
  run "$@"
  if [ "$status" -ne "$want" ]; then
    fail "shardplan $* exited $status, expected $want; stderr: $(cat "$tmp/err")"
    return 1
  fi
  return 0
}

# usage_error TEXT ARGS…: exit 2, one line on stderr that contains TEXT,
# starts with "shardplan", and nothing on stdout.
usage_error () {
  text=$1
  shift
  expect 2 "$@" || return
  lines=$(wc -l <"$tmp/err")
  [ "$lines" -eq 1 ] || fail "shardplan $*: $lines lines on stderr, expected 1: $(cat "$tmp/err")"
  grep -qF -- "$text" "$tmp/err" || fail "shardplan $*: stderr does not name '$text': $(cat "$tmp/err")"
  grep -q '^shardplan' "$tmp/err" || fail "shardplan $*: stderr does not start with 'shardplan'"
  [ -s "$tmp/out" ] && fail "shardplan $*: printed to stdout on a usage error"
  return 0
}

# ---- the dispatcher -------------------------------------------------------
usage_error "bogus" bogus
expect 2
expect 0 --help
grep -q 'groups' "$tmp/out" || fail "shardplan --help does not list groups"
expect 0 --version

# --help on every subcommand the dispatcher lists.
"$SHARDPLAN" --help | sed -n '/^Subcommands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }' >"$tmp/cmds"
grep -qx info "$tmp/cmds" && grep -qx groups "$tmp/cmds" || fail "subcommand list: $(cat "$tmp/cmds")"
while read -r cmd; do
  expect 0 "$cmd" --help && grep -q "shardplan $cmd" "$tmp/out" ||
    fail "shardplan $cmd --help does not describe 'shardplan $cmd'"
  usage_error "--no-such-option" "$cmd" --no-such-option
done <"$tmp/cmds"

# --help is text, not a format string: no "%%" left over from printf.
while read -r cmd; do
  "$SHARDPLAN" "$cmd" --help 2>&1 | grep -qF '%%' && fail "shardplan $cmd --help prints a literal %%"
done <"$tmp/cmds"
for cmd in "trace show" "trace export" "trace import-nccl-tests" "trace recover"; do
  # shellcheck disable=SC2086
  "$SHARDPLAN" $cmd --help 2>&1 | grep -qF '%%' && fail "shardplan $cmd --help prints a literal %%"
done

# One meaning and one letter per flag across the subcommands (issue 16): a
# subcommand that has the flag spells it this way in --help, and --model is
# the workload wherever it appears (the simulator's is --sim-model).
{ cat "$tmp/cmds"
  for sub in "trace show" "trace export" "trace import-nccl-tests" "trace import-chakra" \
             "trace recover" "chakra export" "chakra import"; do
    echo "$sub"
  done
} >"$tmp/all-cmds"
while read -r cmd; do
  # shellcheck disable=SC2086
  "$SHARDPLAN" $cmd --help >"$tmp/help" 2>&1
  for pair in "t topology" "n nodes" "f format" "o output" "p plan" "m model" "q quiet"; do
    letter=${pair%% *} long=${pair#* }
    if grep -Eq -- "^ +(-., )?--$long[ =]" "$tmp/help" \
       && ! grep -Eq -- "^ +-$letter, --$long[ =]" "$tmp/help"; then
      fail "shardplan $cmd --help: --$long is not -$letter, --$long"
    fi
  done
  if grep -Eq -- "^ +-m, --model=" "$tmp/help" && ! grep -Eq -- "^ +-m, --model=NAME\|FILE" "$tmp/help"; then
    fail "shardplan $cmd: --model is not the workload model"
  fi
done <"$tmp/all-cmds"
for cmd in "trace show" "trace export" "chakra export" "chakra import"; do
  # shellcheck disable=SC2086
  "$SHARDPLAN" $cmd --help 2>&1 | grep -Eq -- "^ +--format[ =]" && fail "shardplan $cmd: --format has no -f"
done

# ---- "did you mean" for names a user types (lib/error.c sp_did_you_mean)
usage_error "did you mean sweep?" swep
usage_error "did you mean estimate?" estimat -t dgx-h100
usage_error "did you mean show?" trace shw
usage_error "did you mean gpt-13b?" sweep --model gpt-13
usage_error "did you mean gpt-70b?" plan --model gpt-70
usage_error "did you mean dgx-h100?" estimate -t dgx-h10 -c all_reduce -b 1M
usage_error "did you mean p4d?" plan -t p4
# nothing close: no guess
usage_error "bogus" bogus
grep -q 'did you mean' "$tmp/err" && fail "'bogus' got a suggestion: $(cat "$tmp/err")"

# ---- info -----------------------------------------------------------------
expect 0 info && grep -q '^shardplan ' "$tmp/out" || fail "info text has no version line"
grep -q 'dgx-h100' "$tmp/out" || fail "info text does not list the dgx-h100 preset"
expect 0 info --format json && grep -q '"presets"' "$tmp/out" || fail "info json has no presets"
expect 0 info --format text
usage_error "xml" info --format xml
usage_error "extra" info extra

# ---- groups: bad values ----------------------------------------------------
for value in -5 0 abc 1e3 4294967297 3000000000 12abc; do
  usage_error "--world-size" groups --world-size "$value" --shard-size 8
  grep -qF -- "$value" "$tmp/err" || fail "--world-size $value: message does not name the value"
  usage_error "$value" groups --world-size="$value"
  for opt in --devices-per-node --shard-size --tensor-parallel --expert-parallel \
             --zero-param-group-size; do
    usage_error "$opt" groups --world-size 16 "$opt" "$value"
    grep -qF -- "$value" "$tmp/err" || fail "$opt $value: message does not name the value"
  done
  usage_error "--pipeline-parallel" groups --world-size 16 --expert-parallel 2 --pipeline-parallel "$value"
  grep -qF -- "$value" "$tmp/err" || fail "--pipeline-parallel $value: message does not name the value"
  usage_error "--nodes" groups --topology dgx-h100 --nodes "$value" --shard-size 8
  grep -qF -- "$value" "$tmp/err" || fail "--nodes $value: message does not name the value"
done
usage_error "--world-size" groups --world-size=
# the largest world with every family would need ~480 GiB: refused at once,
# naming the value and the memory, instead of running into the OOM killer
usage_error "needs about" groups --world-size 2147483648 --devices-per-node 8 --shard-size 16 \
  --hierarchical --tensor-parallel 2 --expert-parallel 2 --zero-param-group-size 8 --local-all-to-all
grep -qF -- "--world-size 2147483648: building 12 process-group families" "$tmp/err" \
  || fail "groups at 2^31 ranks: $(cat "$tmp/err")"
usage_error "xml" groups --world-size 16 --format xml
usage_error "csv" groups --world-size 16 --format csv

# ---- groups: missing or conflicting options --------------------------------
usage_error "--world-size" groups
usage_error "--world-size" groups --shard-size 8
usage_error "--hierarchical" groups --world-size 16 --hierarchical
usage_error "--data-before-expert" groups --world-size 16 --data-before-expert
usage_error "--pipeline-parallel" groups --world-size 16 --pipeline-parallel 2
usage_error "--topology" groups --topology dgx-h100 --world-size 16
usage_error "--topology" groups --topology dgx-h100 --devices-per-node 4
usage_error "--nodes" groups --world-size 16 --nodes 2
usage_error "extra" groups --world-size 16 extra
usage_error "$tmp/missing.ini" groups --topology "$tmp/missing.ini" --shard-size 8
# a topology file: W = nodes x gpus_per_node, D = gpus_per_node
write_ini () { # NODES GPUS_PER_NODE FILE
  cat >"$3" <<EOF
[cluster]
name = test
nodes = $1
gpus_per_node = $2
[gpu]
model = test-gpu
memory_gib = 80
tflops = 989
[intra]
kind = nvswitch
bandwidth_gbs = 450
latency_us = 0.6
[inter]
nics_per_node = 8
nic_gbps = 400
latency_us = 2.7
fabric = rail
oversubscription = 1
EOF
}
write_ini 2 4 "$tmp/good.ini"
expect 0 groups --topology "$tmp/good.ini" --shard-size 8 --hierarchical --local-all-to-all --format json &&
  mv "$tmp/out" "$tmp/from-file.json"
expect 0 groups --world-size 8 --devices-per-node 4 --shard-size 8 --hierarchical --local-all-to-all --format json
cmp -s "$tmp/out" "$tmp/from-file.json" || fail "--topology FILE (2 x 4) differs from --world-size 8 --devices-per-node 4"
expect 0 groups --topology "$tmp/good.ini" --nodes 4 --shard-size 8 --format json
grep -q '^{"world_size": 16,' "$tmp/out" || fail "--topology FILE --nodes 4: world size is not 16"
write_ini 2 eight "$tmp/bad.ini"
usage_error "eight" groups --topology "$tmp/bad.ini" --shard-size 8
write_ini 0 8 "$tmp/zero.ini"
usage_error "zero.ini" groups --topology "$tmp/zero.ini" --shard-size 8
printf '\000\001\002binary' >"$tmp/binary.ini"
usage_error "binary.ini" groups --topology "$tmp/binary.ini" --shard-size 8

# ---- groups: configurations DeepSpeed rejects ------------------------------
usage_error "24" groups --world-size 64 --shard-size 24
grep -qF 64 "$tmp/err" || fail "S=24 W=64: message does not name the world size"
# span = S // D = 24 // 16 = 1: "sharding spans a single node"
usage_error "24" groups --world-size 48 --devices-per-node 16 --shard-size 24 --hierarchical
# span 2, 9 % 2 != 0
usage_error "9" groups --world-size 36 --devices-per-node 4 --shard-size 9 --hierarchical
usage_error "3" groups --world-size 16 --expert-parallel 3
usage_error "3" groups --world-size 16 --tensor-parallel 3
usage_error "3" groups --world-size 16 --zero-param-group-size 3
# one node of 8 with W=12: DeepSpeed's local all-to-all asserts
usage_error "12" groups --world-size 12 --devices-per-node 8 --local-all-to-all

# ---- groups: accepted, with and without warnings ----------------------------
expect 0 groups --world-size 16 --devices-per-node 4 --shard-size 8 --hierarchical
[ -s "$tmp/err" ] && fail "W=16 D=4 S=8: unexpected stderr: $(cat "$tmp/err")"
grep -q '^shard_intra_node' "$tmp/out" || fail "text output has no shard_intra_node rows"
expect 0 groups --world-size 16 --shard-size 8 --format=json
# S=20, D=8: "intra-node" groups of 10 straddle nodes; DeepSpeed builds them.
expect 0 groups --world-size 40 --devices-per-node 8 --shard-size 20 --hierarchical --format json
grep -q '^shardplan groups: warning: ' "$tmp/err" || fail "S=20 D=8: no warning: $(cat "$tmp/err")"
grep -q '"shard_intra_node"' "$tmp/out" || fail "S=20 D=8: no output after the warning"
# W=20, D=8: ranks 16..19 are left out of the local all-to-all groups.
expect 0 groups --world-size 20 --devices-per-node 8 --local-all-to-all
grep -q '^shardplan groups: warning: ' "$tmp/err" || fail "W=20 D=8 a2a: no warning: $(cat "$tmp/err")"
expect 0 groups --topology dgx-h100 --nodes 2 --shard-size 16 --hierarchical
# the largest world accepted is 2^31; 3000 does not divide it
usage_error "3000" groups --world-size 2147483648 --shard-size 3000

echo "$checks checks, $failures failures"
[ "$failures" -eq 0 ]
