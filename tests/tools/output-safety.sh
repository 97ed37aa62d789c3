#!/bin/sh
# Your files are safe: for every subcommand that writes (the table in
# output-table.sh), before any work and with exit 2 and one line naming
# both files, shardplan refuses an output that is
#   - the input itself, a hard link to it, a symbolic link to it, or the
#     input given through a symbolic link;
#   - another output of the same command (import-nccl-tests -o/--plan-out);
#   - in a directory that does not exist, or a directory;
# and leaves the input byte for byte as it was.  Outputs honour the umask
# (022 → 0644, 077 → 0600), whichever way they are written, and every
# command that wrote a file ends with one line on stderr naming it.
SP_TEST_NAME=output-safety
. "$SP_SRCDIR/tests/tools/cli-testlib.sh"
. "$SP_SRCDIR/tests/tools/output-table.sh"

# refused WHAT COMMAND… : exit 2, one line on stderr containing every
# string in $want (newline-separated), fast (no work was done).
refused () {
  what=$1
  shift
  "$SHARDPLAN" "$@" >"$tmp/out" 2>"$tmp/err"
  st=$?
  [ "$st" -eq 2 ] || { fail "$what: exit $st, expected 2: $(cat "$tmp/err")"; return; }
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$what: stderr is not one line: $(cat "$tmp/err")"
  echo "$want" | while read -r w; do
    [ -z "$w" ] || grep -qF -- "$w" "$tmp/err" || echo "$w"
  done >"$tmp/missing"
  [ ! -s "$tmp/missing" ] || fail "$what: message does not name $(cat "$tmp/missing"): $(cat "$tmp/err")"
}

# same_file_row: the same-file refusals of one row (see for_each_row).
same_file_row () {
  name=$1 src=$(fixture "$2") inname=$3 outname=$4 writes=$5 cmd=$6
  if [ "$writes" = no ] && [ "${cmd#run }" != "$cmd" ] && [ "$HAVE_MPI" = no ]; then
    return # `run` without MPI stops at "this build has no MPI"
  fi
  d="$tmp/$name"
  mkdir -p "$d/dir-$outname"
  in="$d/$inname"
  cp "$src" "$in"
  cp "$src" "$d/pristine"
  # the output is the input
  want="$in
same file"
  # shellcheck disable=SC2046
  refused "$name: output = input" $(command_line "$cmd" "$in" "$in")
  cmp -s "$in" "$d/pristine" || fail "$name: output = input: the input changed"
  # a hard link to the input, a symbolic link to it
  ln "$in" "$d/hard-$inname"
  ln -s "$in" "$d/sym-$inname"
  for alias in hard sym; do
    want="$in
$d/$alias-$inname"
    # shellcheck disable=SC2046
    refused "$name: output = $alias link to the input" \
      $(command_line "$cmd" "$in" "$d/$alias-$inname")
    cmp -s "$in" "$d/pristine" || fail "$name: output = $alias link: the input changed"
  done
  # the input read through a symbolic link, the output its target
  want="$in
$d/sym-$inname"
  # shellcheck disable=SC2046
  refused "$name: input through a symbolic link" $(command_line "$cmd" "$d/sym-$inname" "$in")
  cmp -s "$in" "$d/pristine" || fail "$name: input through a link: the input changed"
  # where the output cannot go: a missing directory, a directory
  want="$d/nodir/
does not exist"
  # shellcheck disable=SC2046
  refused "$name: missing directory" $(command_line "$cmd" "$in" "$d/nodir/$outname")
  want="$d/dir-$outname
is a directory"
  # shellcheck disable=SC2046
  refused "$name: output is a directory" $(command_line "$cmd" "$in" "$d/dir-$outname")
  ls "$d" | grep -q 'tmp-' && fail "$name: a temporary file was left: $(ls "$d")"
  cmp -s "$in" "$d/pristine" || fail "$name: the input changed"
}
for_each_row same_file_row

# Two outputs of one command: import-nccl-tests -o and --plan-out, as the
# same name, the same file through a hard or symbolic link, and when the
# file does not exist yet.
imp () {
  refused "$1" trace import-nccl-tests "$LOG" --topology p3dn -o "$2" --plan-out "$3"
}
d="$tmp/two-outputs"
mkdir -p "$d"
want="$d/a.h5
--plan-out
same file"
imp "-o = --plan-out (new file)" "$d/a.h5" "$d/a.h5"
want="$d/a.h5
$d/./a.h5"
imp "-o = --plan-out (another spelling)" "$d/a.h5" "$d/./a.h5"
[ ! -e "$d/a.h5" ] || fail "two outputs: a file was written"
printf 'keep\n' >"$d/a.h5"
ln "$d/a.h5" "$d/hard.h5"
ln -s "$d/a.h5" "$d/sym.h5"
for alias in hard sym; do
  want="$d/a.h5
$d/$alias.h5"
  imp "-o = --plan-out ($alias link)" "$d/a.h5" "$d/$alias.h5"
done
[ "$(cat "$d/a.h5")" = keep ] || fail "two outputs: the existing file changed"

# The sweep (or any long command) fails at once on a plot it cannot write,
# not after the whole sweep: well under the time of the sweep itself.
want="$tmp/nodir/x.png"
refused "sweep --plot nodir/x.png" sweep -m gpt-13b -t dgx-h100 -n 16,32 --plot "$tmp/nodir/x.png"

# umask_row: a row that runs writes its output with 0666 & ~umask.
umask_row () {
  name=$1 src=$(fixture "$2") outname=$4 writes=$5 cmd=$6
  [ "$writes" = yes ] || return 0
  d="$tmp/umask-$name"
  mkdir -p "$d"
  for m in 022:644 077:600; do
    # shellcheck disable=SC2046
    (umask "${m%:*}" && "$SHARDPLAN" $(command_line "$cmd" "$src" "$d/$outname")) \
      >/dev/null 2>"$tmp/err" || { fail "$name: exit $?: $(cat "$tmp/err")"; continue; }
    mode=$(stat -c %a "$d/$outname")
    [ "$mode" = "${m#*:}" ] || fail "$name: umask ${m%:*} gave mode $mode, expected ${m#*:}"
    rm -f "$d/$outname"
  done
}
for_each_row umask_row

# wrote_row: a row that runs ends with one line on stderr naming what it
# wrote: "shardplan <cmd>: wrote OUT (what it holds, size)".
wrote_row () {
  name=$1 src=$(fixture "$2") outname=$4 writes=$5 cmd=$6
  [ "$writes" = yes ] || return 0
  d="$tmp/wrote-$name"
  mkdir -p "$d"
  # shellcheck disable=SC2046
  "$SHARDPLAN" $(command_line "$cmd" "$src" "$d/$outname") >/dev/null 2>"$tmp/err" \
    || { fail "$name: exit $?: $(cat "$tmp/err")"; return; }
  sub=$(echo "$cmd" | awk '{ print ($1 == "trace") ? $1 " " $2 : $1 }')
  grep -Eq "^shardplan $sub: wrote $d/$outname \(.*, [0-9.]+ (bytes|KiB|MiB|GiB)\)\$" "$tmp/err" \
    || fail "$name: no 'wrote $d/$outname (…, SIZE)' line: $(cat "$tmp/err")"
  tail -n 1 "$tmp/err" | grep -q "^shardplan $sub: wrote " \
    || fail "$name: the last line on stderr is not what it wrote: $(tail -n 1 "$tmp/err")"
}
for_each_row wrote_row

# run's per-rank spill files (OUTPUT.rank<r>.spill, opened as the run
# starts) are outputs too: an input named like one is refused
if [ "$HAVE_MPI" = yes ]; then
  cp "$TOPO" "$tmp/t.h5.rank1.spill"
  want="rank 1's file of -o/--output (spill files)
refusing to overwrite an input"
  refused "run: --topology is a spill file" run --plan "$PLAN" -o "$tmp/t.h5" --topology "$tmp/t.h5.rank1.spill"
  cmp -s "$TOPO" "$tmp/t.h5.rank1.spill" || fail "run: the topology named like a spill file changed"
fi
finish
