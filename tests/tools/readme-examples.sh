#!/bin/sh
# The README runs: every fenced block of README.md whose info string has the
# word `runnable` is run here, in order, in one scratch directory (with
# `examples/` linked in and the built `shardplan` first on PATH), so a README
# that drifts from the program fails `make check`.
#   ```console runnable      lines "$ CMD" (a trailing \ continues them) are
#                            run with sh and must exit 0; the other lines are
#                            their output as shown to the reader: each one
#                            must be a line of what the command printed
#                            (stdout or stderr, trailing blanks ignored),
#                            except lines with "…" (elisions); so a number
#                            the model moves must be moved in the README too
#   ```console runnable unchecked   the same, output not compared: for output
#                            that depends on the build (info) or is reflowed
#                            for reading (one-line JSON)
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
# the calibrate example's nccl-tests log (a hand-made fixture, as it says)
ln -s "$SP_SRCDIR/tests/fixtures/nccltests/all_reduce-2019.txt" "$work/" || exit 99
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
          else if ($i == "unchecked") print "" > (out ".unchecked")
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
  case $block in *.line|*.file|*.unchecked) continue ;; esac
  n_blocks=$((n_blocks + 1))
  line=$(cat "$block.line")
  file=
  [ -f "$block.file" ] && file=$(cat "$block.file")
  case $block in
    *.console)
      # "$ CMD" lines, continuations joined, into NNN.cmd; the output lines
      # shown after each into NNN.shown (its README line in NNN.at)
      rm -f "$tmp"/c.*
      awk -v dir="$tmp" -v first="$line" '
        function start(c) { n++; f = sprintf("%s/c.%03d", dir, n); print c > (f ".cmd"); close(f ".cmd");
                            printf "" > (f ".shown") }
        cont { cmd = cmd " " $0; if (!sub(/\\$/, "", cmd)) { start(cmd); cont = 0 }; next }
        /^\$ / { cmd = substr($0, 3); if (sub(/\\$/, "", cmd)) cont = 1; else start(cmd); next }
        n > 0 && $0 !~ /…/ && $0 !~ /^[ \t]*$/ { sub(/[ \t]+$/, ""); print (first + NR - 1) "\t" $0 >> (f ".shown") }
      ' "$block"
      ls "$tmp"/c.*.cmd >/dev/null 2>&1 || fail "README.md:$line: a runnable console block with no '\$ ' command"
      for c in "$tmp"/c.*.cmd; do
        [ -f "$c" ] || continue
        run "$line" "$(cat "$c")"
        [ -f "$block.unchecked" ] && continue
        cat "$tmp/out" "$tmp/err" | sed 's/[ \t]*$//' >"$tmp/printed"
        while IFS="$(printf '\t')" read -r at shown; do
          grep -qxF -- "$shown" "$tmp/printed" \
            || fail "README.md:$at: '$shown' is not in what '$(cat "$c")' printed"
        done <"${c%.cmd}.shown"
      done ;;
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
