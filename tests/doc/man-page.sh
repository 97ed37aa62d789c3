#!/bin/sh
# The man page (doc/shardplan.1, made by doc/gen-man.sh at build time)
# against the binary's own --help texts, read here independently: a
# subsection "shardplan PATH" for every subcommand that `shardplan --help`
# lists and every command of a subcommand that dispatches (trace, chakra),
# and in it every option, long and short, of that command's --help; the
# page is ASCII, is what gen-man.sh makes from this binary now, and passes
# `groff -man -z -wall` and `mandoc -T lint` where those are installed.
SP_TEST_NAME=man-page
. "$SP_SRCDIR/tests/tools/cli-testlib.sh"
: "${SP_BUILDDIR:?SP_BUILDDIR must name the build tree}"
page=$SP_BUILDDIR/doc/shardplan.1
[ -s "$page" ] || { echo "FAIL: $page was not built" >&2; exit 1; }

# The commands, from the help texts: PATH per line ("plan", "trace export").
"$SHARDPLAN" --help | sed -n '/^Subcommands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }' >"$tmp/top"
[ "$(wc -l <"$tmp/top")" -ge 8 ] || fail "shardplan --help lists $(wc -l <"$tmp/top") subcommands"
: >"$tmp/paths"
while read -r cmd; do
  "$SHARDPLAN" "$cmd" --help >"$tmp/help" 2>&1 || fail "shardplan $cmd --help failed"
  if [ "$(head -n 1 "$tmp/help")" = "Usage:" ]; then
    echo "$cmd" >>"$tmp/paths"
  else
    echo "$cmd" >>"$tmp/groups"
    awk '/^  [a-z][a-z0-9-]* / { print $1 }' "$tmp/help" | while read -r sub; do
      echo "$cmd $sub" >>"$tmp/paths"
    done
  fi
done <"$tmp/top"
grep -qx 'trace export' "$tmp/paths" || fail "the test found no 'trace export': $(cat "$tmp/paths")"

# section PATH: the lines of the page's subsection for PATH.
section () {
  awk -v want=".SS \"shardplan $(printf '%s' "$1" | sed 's/-/\\\\-/g')\"" '
    $0 == want { on = 1; next }
    /^\.S[SH] / { on = 0 }
    on' "$page"
}

checked=0
for f in "$tmp/top" "$tmp/groups"; do
  [ -f "$f" ] || continue
  while read -r cmd; do
    section "$cmd" >"$tmp/sec"
    [ -s "$tmp/sec" ] || fail "no subsection 'shardplan $cmd' in the man page"
  done <"$f"
done
while read -r path; do
  section "$path" >"$tmp/sec"
  if [ ! -s "$tmp/sec" ]; then
    fail "no subsection 'shardplan $path' in the man page"
    continue
  fi
  # shellcheck disable=SC2086 # PATH is words on purpose
  "$SHARDPLAN" $path --help | sed -n '/^Application Options:/,/^$/p' |
    grep -o '^  \(-[A-Za-z], \)\{0,1\}--[a-z0-9-]*' | tr ',' '\n' | sed 's/^ *//' >"$tmp/opts"
  [ -s "$tmp/opts" ] || fail "shardplan $path --help: the test found no option"
  while read -r opt; do
    checked=$((checked + 1))
    esc=$(printf '%s' "$opt" | sed 's/-/\\-/g')
    grep -qF -- "\\fB$esc\\fR" "$tmp/sec" ||
      fail "the man page's 'shardplan $path' does not list $opt"
  done <"$tmp/opts"
done <"$tmp/paths"
[ "$checked" -ge 50 ] || fail "only $checked options checked"

for s in NAME SYNOPSIS DESCRIPTION COMMANDS FILES ENVIRONMENT "EXIT STATUS" "SEE ALSO"; do
  grep -q "^\.SH \"\{0,1\}$s\"\{0,1\}\$" "$page" || fail "no section $s"
done
grep -q 'SP_CHROME_WARN_BYTES' "$page" || fail "ENVIRONMENT does not name SP_CHROME_WARN_BYTES"
grep -q '^\.B 2$' "$page" || fail "EXIT STATUS does not give 2"
if LC_ALL=C grep -n '[^ -~]' "$page" >"$tmp/nonascii"; then
  fail "non-ASCII in the man page (add it to gen-man.sh's sed): $(head -n 3 "$tmp/nonascii")"
fi
sh "$SP_SRCDIR/doc/gen-man.sh" "$SHARDPLAN" >"$tmp/again.1" || fail "gen-man.sh failed"
cmp -s "$tmp/again.1" "$page" || fail "gen-man.sh now makes another page than $page"

# Lint, where a formatter is installed.
if command -v groff >/dev/null 2>&1; then
  groff -man -z -wall "$page" >"$tmp/lint" 2>&1 || fail "groff failed: $(head -n 5 "$tmp/lint")"
  [ -s "$tmp/lint" ] && fail "groff -man -z -wall warns: $(head -n 5 "$tmp/lint")"
else
  echo "groff not installed: its lint skipped"
fi
if command -v mandoc >/dev/null 2>&1; then
  mandoc -T lint -W warning "$page" >"$tmp/lint" 2>&1 ||
    fail "mandoc -T lint: $(head -n 5 "$tmp/lint")"
else
  echo "mandoc not installed: its lint skipped"
fi
finish
