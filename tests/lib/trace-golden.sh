#!/bin/sh
# The schema cannot drift silently: `h5dump -H` of the sample trace
# (tests/lib/trace-sample.h) must equal tests/fixtures/trace/small.h5dump-H.txt.
# The header dump shows groups, datasets, types and attribute names but no
# values, so run_id and created_utc do not matter; the first line (the file
# name) is normalised.  SP_UPDATE_GOLDEN=1 rewrites the fixture (for a
# deliberate schema change, with the minor version bumped).
set -e
command -v h5dump >/dev/null 2>&1 || { echo "h5dump not found: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$SP_BUILDDIR/tests/lib/test_trace" --write-sample "$tmp/small.h5"
h5dump -H "$tmp/small.h5" | sed '1s/.*/HDF5 "small.h5" {/' > "$tmp/dump.txt"
golden="$SP_SRCDIR/tests/fixtures/trace/small.h5dump-H.txt"
if [ -n "$SP_UPDATE_GOLDEN" ]; then
  cp "$tmp/dump.txt" "$golden"
fi
if ! diff -u "$golden" "$tmp/dump.txt"; then
  echo "h5dump -H of the sample trace differs from $golden: the trace schema changed" >&2
  exit 1
fi
