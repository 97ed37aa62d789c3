#!/bin/sh
# Read a trace the way a user would: h5py + pandas (trace_h5py.py); then
# check that a file of a later minor version (an extra trailing field, as
# h5py would write it) still reads: `shardplan trace export --format csv`
# gives the same CSV as for the original; and that the schema 1.0 fixture
# (the sample before nccl_est_ns) exports the same columns, with -1 in
# nccl_est_ns.
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
  echo "schema 1.4 file with an extra field does not read" >&2; exit 1; }
cmp "$tmp/sample.csv" "$tmp/future.csv" || { echo "1.4 file reads differently" >&2; exit 1; }
"$SHARDPLAN" trace show "$tmp/future.h5" | grep -q '(schema 1.4)' || exit 1
echo "a later minor version reads the same"
"$SHARDPLAN" trace export --format csv "$SP_SRCDIR/tests/fixtures/trace/sample-v1.0.h5" \
  > "$tmp/v10.csv" || { echo "schema 1.0 file does not read" >&2; exit 1; }
head -n 1 "$tmp/v10.csv" | grep -q ',busbw_gbs,nccl_est_ns$' || exit 1
# Every column but the last as this version writes them; the last all -1.
cut -d, -f1-21 "$tmp/sample.csv" > "$tmp/a" && cut -d, -f1-21 "$tmp/v10.csv" > "$tmp/b" || exit 1
cmp "$tmp/a" "$tmp/b" || { echo "1.0 file reads differently" >&2; exit 1; }
[ "$(tail -n +2 "$tmp/v10.csv" | cut -d, -f22 | sort -u)" = "-1" ] || {
  echo "nccl_est_ns of a 1.0 file is not -1" >&2; exit 1; }
"$SHARDPLAN" trace show "$SP_SRCDIR/tests/fixtures/trace/sample-v1.0.h5" | grep -q '(schema 1.0)' || exit 1
echo "a 1.0 file reads, nccl_est_ns = -1"
