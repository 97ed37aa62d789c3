# tests/tools/cli-testlib.sh — sourced by the command-line tests after they
# set SP_TEST_NAME: checks $SHARDPLAN and $SP_SRCDIR, makes $tmp (removed at
# exit) and provides `fail MESSAGE` (counts in $failures) and `finish`
# (exit 1 after any failure, else 0).
set -u
: "${SHARDPLAN:?SHARDPLAN must name the built shardplan binary}"
: "${SP_SRCDIR:?SP_SRCDIR must name the source tree}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/shardplan-${SP_TEST_NAME:-test}-XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
failures=0

fail () {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

finish () {
  if [ "$failures" -ne 0 ]; then
    echo "$failures failure(s)" >&2
    exit 1
  fi
  exit 0
}
