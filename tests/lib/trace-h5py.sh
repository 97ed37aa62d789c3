#!/bin/sh
# Read a trace the way a user would: h5py + pandas (trace_h5py.py).
# Skips (77) when no python3 with h5py and pandas is found.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
py=
for cand in "$PYTHON" python3 /usr/bin/python3; do
  [ -n "$cand" ] || continue
  if "$cand" -c 'import h5py, pandas' >/dev/null 2>&1; then py=$cand; break; fi
done
[ -n "$py" ] || { echo "python3 with h5py and pandas not found: skipped"; exit 77; }
"$SP_BUILDDIR/tests/lib/test_trace" --write-sample "$tmp/sample.h5" || exit 1
exec "$py" "$SP_SRCDIR/tests/lib/trace_h5py.py" "$tmp/sample.h5"
