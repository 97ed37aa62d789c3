#!/bin/sh
# The README runs: every fenced block of README.md whose info string has the
# word `runnable` is run here, in order, in one scratch directory (with
# `examples/` linked in and the built `shardplan` first on PATH), so a README
# that drifts from the program fails `make check`.
#   ```console runnable      lines "$ CMD" (a trailing \ continues them) are
#                            run with sh and must exit 0; the other lines are
#                            output, shown to the reader, not compared (the
#                            simulator's numbers move with its model)
#   ```sh runnable           the block is one sh -e script
#   ```ini runnable file=F   written to F, then read as a topology
#                            (shardplan estimate --topology F)
#   ```json runnable file=F  written to F, then read as a model
#                            (shardplan plan --model F)
SP_TEST_NAME=readme
. "$SP_SRCDIR/tests/tools/cli-testlib.sh"
readme="$SP_SRCDIR/README.md"
work="$tmp/work"
blocks="$tmp/blocks"
mkdir -p "$work" "$blocks" || exit 99
ln -s "$SP_SRCDIR/examples" "$work/examples" || exit 99
bindir=$(cd "$(dirname "$SHARDPLAN")" && pwd) || exit 99
PATH="$bindir:$PATH"
export PATH
limit=
command -v timeout >/dev/null 2>&1 && limit="timeout 300"

# One file per runnable block: NNN.LANG, its first line in NNN.line and its
# file= in NNN.file.
awk -v dir="$blocks" '
  /^```/ {
    if (state == 0) {
      state = 1
      if ($0 ~ /[ \t]runnable([ \t]|$)/) {
        state = 2; n++
        lang = substr($1, 4)
        out = sprintf("%s/%03d.%s", dir, n, lang)
        printf "" > out
        print NR + 1 > (out ".line")
        for (i = 2; i <= NF; i++)
          if ($i ~ /^file=/) print substr($i, 6) > (out ".file")
      }
    } else {
      if (state == 2) close(out)
      state = 0
    }
    next
  }
  state == 2 { print > out }
' "$readme" || exit 99

n_blocks=0
n_commands=0
# run WHERE COMMAND: COMMAND under sh in $work; fails naming WHERE.
run () {
  n_commands=$((n_commands + 1))
  (cd "$work" && $limit sh -c "$2") </dev/null >"$tmp/out" 2>"$tmp/err"
  st=$?
  [ "$st" -eq 0 ] || fail "README.md:$1: '$2' exited $st: $(tail -n 3 "$tmp/err")"
}

for block in "$blocks"/*.*; do
  case $block in *.line|*.file) continue ;; esac
  n_blocks=$((n_blocks + 1))
  line=$(cat "$block.line")
  file=
  [ -f "$block.file" ] && file=$(cat "$block.file")
  case $block in
    *.console)
      # "$ CMD" lines, continuations joined; output lines dropped
      awk '
        cont { cmd = cmd " " $0; if (!sub(/\\$/, "", cmd)) { print cmd; cont = 0 }; next }
        /^\$ / { cmd = substr($0, 3); if (sub(/\\$/, "", cmd)) cont = 1; else print cmd }
      ' "$block" >"$tmp/cmds"
      [ -s "$tmp/cmds" ] || fail "README.md:$line: a runnable console block with no '\$ ' command"
      while IFS= read -r cmd; do
        run "$line" "$cmd"
      done <"$tmp/cmds" ;;
    *.sh)
      run "$line" "sh -e '$block'" ;;
    *.ini|*.json)
      if [ -z "$file" ]; then
        fail "README.md:$line: a runnable ini/json block needs file=NAME"
        continue
      fi
      cp "$block" "$work/$file" || exit 99
      case $file in
        *.ini) run "$line" "shardplan estimate --topology '$file' --collective all_reduce --bytes 1M" ;;
        *.json) run "$line" "shardplan plan --model '$file' --topology dgx-h100 --nodes 1" ;;
      esac ;;
    *)
      fail "README.md:$line: runnable block of unknown kind '${block##*.}' (console, sh, ini, json)" ;;
  esac
done

# the markers themselves must not drift away
[ "$n_blocks" -ge 10 ] || fail "only $n_blocks runnable blocks in README.md (expected at least 10)"
echo "$n_blocks runnable blocks, $n_commands commands, $failures failures"
finish
