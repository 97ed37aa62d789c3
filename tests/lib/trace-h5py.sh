#!/bin/sh
# Read a trace the way a user would: h5py + pandas (trace_h5py.py); then
# check that a file of a later minor version (an extra trailing field, as
# h5py would write it) still reads: `shardplan trace export --format csv`
# gives the same CSV as for the original.
# Skips (77) when no python3 with h5py and pandas is found.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
py=
for cand in "$PYTHON" python3 /usr/bin/python3; do
  [ -n "$cand" ] || continue
  if "$cand" -c 'import h5py, pandas' >/dev/null 2>&1; then py=$cand; break; fi
done
[ -n "$py" ] || { echo "python3 with h5py and pandas not found: skipped"; exit 77; }
script="$SP_SRCDIR/tests/lib/trace_h5py.py"
"$SP_BUILDDIR/tests/lib/test_trace" --write-sample "$tmp/sample.h5" || exit 1
"$py" "$script" "$tmp/sample.h5" || exit 1
"$py" "$script" --future "$tmp/sample.h5" "$tmp/future.h5" || exit 1
"$SHARDPLAN" trace export --format csv "$tmp/sample.h5" > "$tmp/sample.csv" || exit 1
"$SHARDPLAN" trace export --format csv "$tmp/future.h5" > "$tmp/future.csv" || {
  echo "schema 1.1 file with an extra field does not read" >&2; exit 1; }
cmp "$tmp/sample.csv" "$tmp/future.csv" || { echo "1.1 file reads differently" >&2; exit 1; }
"$SHARDPLAN" trace show "$tmp/future.h5" | grep -q '(schema 1.1)' || exit 1
echo "a later minor version reads the same"
