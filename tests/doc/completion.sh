#!/bin/sh
# The bash completion (doc/bash-completion/shardplan, made by
# doc/gen-completion.sh at build time), run in bash as readline would:
# COMP_WORDS / COMP_CWORD set, _shardplan called, COMPREPLY read.  Checked
# against the binary's own --help texts, read here independently: every
# subcommand completes from nothing and from its prefix, every command of
# trace and chakra, every option (long and short) of every command's --help;
# the values of preset- and list-taking options are the presets `shardplan
# info` lists (each then accepted by `shardplan estimate`), the model presets
# (each accepted by `shardplan plan`), the --format, --sim-model and
# --contention words of the help; --opt=value too.  Skips (77) without bash.
SP_TEST_NAME=completion
. "$SP_SRCDIR/tests/tools/cli-testlib.sh"
: "${SP_BUILDDIR:?SP_BUILDDIR must name the build tree}"
command -v bash >/dev/null 2>&1 || { echo "bash not found: skipped"; exit 77; }
script=$SP_BUILDDIR/doc/bash-completion/shardplan
[ -s "$script" ] || { echo "FAIL: $script was not built" >&2; exit 1; }
bash -n "$script" || fail "$script: bash syntax error"
sh "$SP_SRCDIR/doc/gen-completion.sh" "$SHARDPLAN" >"$tmp/again" || fail "gen-completion.sh failed"
cmp -s "$tmp/again" "$script" || fail "gen-completion.sh now makes another script than $script"

# complete WORD…: the completions of the last WORD (may be ""), one a line.
complete () {
  bash -c '. "$1"; shift; COMP_WORDS=(shardplan "$@"); COMP_CWORD=$#; _shardplan
           printf "%s\n" "${COMPREPLY[@]}"' complete "$script" "$@" 2>"$tmp/cerr" | sort -u
  [ -s "$tmp/cerr" ] && fail "completing '$*' wrote on stderr: $(cat "$tmp/cerr")"
}
# expect "WANT" WORD…: the completions, sorted and space-separated, are WANT.
expect () {
  want=$1
  shift
  got=$(complete "$@" | tr '\n' ' ' | sed 's/ $//')
  [ "$got" = "$want" ] || fail "completing 'shardplan $*': got '$got', expected '$want'"
}
# has WORD WORD…: WORD is among the completions of the rest.
has () {
  word=$1
  shift
  complete "$@" | grep -qxF -- "$word" || fail "completing 'shardplan $*' does not offer $word"
}

mkdir "$tmp/empty" && cd "$tmp/empty" || exit 99   # no file names among the completions

"$SHARDPLAN" --help | sed -n '/^Subcommands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }' >"$tmp/top"
[ "$(wc -l <"$tmp/top")" -ge 8 ] || fail "shardplan --help lists $(wc -l <"$tmp/top") subcommands"
: >"$tmp/paths"
while read -r cmd; do
  has "$cmd" ""
  prefix=$(printf '%s' "$cmd" | cut -c1-2)
  has "$cmd" "$prefix"
  "$SHARDPLAN" "$cmd" --help >"$tmp/help" 2>&1 || fail "shardplan $cmd --help failed"
  if [ "$(head -n 1 "$tmp/help")" = "Usage:" ]; then
    echo "$cmd" >>"$tmp/paths"
  else
    awk '/^  [a-z][a-z0-9-]* / { print $1 }' "$tmp/help" | while read -r sub; do
      echo "$cmd $sub" >>"$tmp/paths"
    done
  fi
done <"$tmp/top"
expect "sweep" sw
expect "export" trace ex
grep -qx 'trace export' "$tmp/paths" || fail "the test found no 'trace export': $(cat "$tmp/paths")"

# Every option of every command, completed from "-".
checked=0
while read -r path; do
  # shellcheck disable=SC2086 # PATH is words on purpose
  "$SHARDPLAN" $path --help | sed -n '/^Application Options:/,/^$/p' |
    grep -o '^  \(-[A-Za-z], \)\{0,1\}--[a-z0-9-]*' | tr ',' '\n' | sed 's/^ *//' >"$tmp/opts"
  [ -s "$tmp/opts" ] || fail "shardplan $path --help: the test found no option"
  # shellcheck disable=SC2086
  complete $path - >"$tmp/offered"
  while read -r opt; do
    checked=$((checked + 1))
    grep -qxF -- "$opt" "$tmp/offered" || fail "completing 'shardplan $path -' does not offer $opt"
  done <"$tmp/opts"
done <"$tmp/paths"
[ "$checked" -ge 50 ] || fail "only $checked options checked"
expect "--ops --output" trace export --o

# Topology presets: exactly those of `shardplan info`, each a valid --topology.
"$SHARDPLAN" info | sed -n '/^topology presets/,/^$/p' | awk 'NR > 1 && NF { print $1 }' |
  sort >"$tmp/presets"
[ "$(wc -l <"$tmp/presets")" -ge 3 ] || fail "shardplan info lists no presets"
complete plan --topology "" >"$tmp/offered"
cmp -s "$tmp/presets" "$tmp/offered" ||
  fail "plan --topology offers $(tr '\n' ' ' <"$tmp/offered"), info lists $(tr '\n' ' ' <"$tmp/presets")"
complete estimate -t "" >"$tmp/offered2"
cmp -s "$tmp/offered" "$tmp/offered2" || fail "estimate -t offers other presets than plan --topology"
while read -r preset; do
  "$SHARDPLAN" estimate -t "$preset" -c all_reduce -b 1M >/dev/null 2>"$tmp/err" ||
    fail "completed preset $preset: shardplan estimate -t $preset fails: $(cat "$tmp/err")"
done <"$tmp/presets"
expect "dgx-a100 dgx-b200 dgx-h100 dgx-h200" plan --topology dgx
expect "dgx-a100 dgx-b200 dgx-h100 dgx-h200" plan --topology = dgx

# Model presets: each one shardplan plan accepts.
complete plan --model "" >"$tmp/models"
[ "$(wc -l <"$tmp/models")" -ge 2 ] || fail "plan --model offers $(cat "$tmp/models")"
complete sweep -m "" | cmp -s - "$tmp/models" || fail "sweep -m offers other models than plan --model"
while read -r model; do
  "$SHARDPLAN" plan --model "$model" --topology cpu-shm --nodes 1 >/dev/null 2>"$tmp/err" ||
    fail "completed model $model: shardplan plan --model $model fails: $(cat "$tmp/err")"
done <"$tmp/models"
# and the model names of the help text are all offered
"$SHARDPLAN" plan --help | grep -e '--model=' | grep -o 'preset ([^)]*)' | sed 's/.*(//; s/)//' |
  tr -d ' ' | tr ',' '\n' | sort >"$tmp/helpmodels"
cmp -s "$tmp/helpmodels" "$tmp/models" || fail "plan --help names models $(cat "$tmp/helpmodels")"

# List values, from the metavar or the start of the description.
expect "chakra chrome csv" trace export --format ""
expect "chakra chrome" trace export -f ch
expect "json text" info --format ""
expect "json" plan --format = j
expect "csv json text" sweep -f ""
expect "analytic des nccl" estimate --sim-model ""
expect "analytic des nccl" sim --sim-model ""
expect "family none step" sim --contention ""
expect "after every none" run --check ""
expect "csv json text" compare --format ""
# Each offered value is one the command takes.
for f in $(complete trace export --format ""); do
  "$SHARDPLAN" trace export --format "$f" 2>&1 | grep -q "is not one of" &&
    fail "trace export --format $f is offered but refused"
done
# After a flag that takes no value, options again; after a value, nothing.
expect "--hpz" plan --hierarchical --hp
expect "" plan --nodes 4
finish
