#!/bin/sh
# `trace export --format chakra` of a measured trace: `shardplan run` (MPI,
# 4 ranks on cpu-shm, 5 timed iterations) of a plan with a compute op, a
# world all-reduce and send / recv in the tensor pairs; every node of the
# export carries the mean duration the trace measured for it on that rank
# (Python's protobuf, chakra_durations.py), the send / recv halves theirs,
# and `trace import-chakra` gives the plan back.  Skips (77) without MPI
# (exec-testlib.sh), without protobuf-c, protoc or python3-protobuf.
. "$SP_SRCDIR/tests/exec/exec-testlib.sh"
if ! "$SHARDPLAN" info 2>/dev/null | grep -q 'protobuf-c=yes'; then
  echo "shardplan chakra not built (configure found no protobuf-c): skipped"; exit 77
fi
py=
for cand in "${PYTHON:-}" python3 /usr/bin/python3; do
  [ -n "$cand" ] || continue
  if "$cand" -c 'import google.protobuf' >/dev/null 2>&1; then py=$cand; break; fi
done
[ -n "$py" ] && command -v protoc >/dev/null 2>&1 || { echo "python3-protobuf or protoc missing: skipped"; exit 77; }
mkdir -p "$tmp/py" "$tmp/et"
protoc --proto_path="$SP_SRCDIR/tools/chakra" --python_out="$tmp/py" \
  "$SP_SRCDIR/tools/chakra/et_def.proto" || exit 1
cat > "$tmp/plan.json" <<'J'
{"schema": "shardplan-plan", "schema_version": 1, "world_size": 4,
 "groups": {"world_size": 4, "devices_per_node": 4, "tensor_parallel": 2},
 "ops": [
  {"id": 0, "name": "fwd", "kind": "compute", "family": "none", "bytes": 0, "dtype": "none", "flops": 1000000000},
  {"id": 1, "name": "grads", "kind": "all_reduce", "family": "world", "bytes": 65536, "dtype": "float32", "redop": "sum", "stream": 1, "deps": [0]},
  {"id": 2, "name": "act.send", "kind": "send", "family": "tensor", "bytes": 32768, "dtype": "float32", "stream": 1, "deps": [1]},
  {"id": 3, "name": "grad.recv", "kind": "recv", "family": "tensor", "bytes": 16384, "dtype": "float32", "stream": 1, "deps": [2]}
 ]}
J
mpi 4 --plan "$tmp/plan.json" -o "$tmp/m.h5" --iters 5 --warmup 1 --backend mpi --topology cpu-shm --timeout 60
[ "$status" -eq 0 ] || { cat "$tmp/err" >&2; echo "FAIL: shardplan run: exit $status" >&2; exit 1; }
"$SHARDPLAN" trace export --format chakra -o "$tmp/et/m" "$tmp/m.h5" 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
"$SHARDPLAN" trace export --format csv -o "$tmp/m.csv" "$tmp/m.h5" || exit 1
"$SHARDPLAN" trace import-chakra "$tmp/et/m" -o "$tmp/back.json" 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
"$py" "$SP_SRCDIR/tests/tools/chakra_durations.py" "$tmp/py" "$tmp/back.json" "$tmp/et/m" "$tmp/m.csv" \
  || { echo "FAIL: the measured durations" >&2; exit 1; }
grep -q '"kind": "send"' "$tmp/back.json" && grep -q '"kind": "recv"' "$tmp/back.json" \
  || { echo "FAIL: send / recv lost on the way back" >&2; exit 1; }
echo "measured trace -> Chakra with its durations -> the plan back"
