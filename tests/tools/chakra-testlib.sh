# Shared by the chakra tests (sourced): a temporary directory, the SKIP
# when the command was not built, the two plans of the round-trip tests.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/et" "$tmp/py"
if ! "$SHARDPLAN" info 2>/dev/null | grep -q 'protobuf-c=yes'; then
  echo "shardplan chakra not built (configure found no protobuf-c): skipped"; exit 77
fi

# python3 with google.protobuf and protoc, the .proto compiled into $tmp/py
chakra_require_python () {
  py=
  for cand in "$PYTHON" python3 /usr/bin/python3; do
    [ -n "$cand" ] || continue
    if "$cand" -c 'import google.protobuf' >/dev/null 2>&1; then py=$cand; break; fi
  done
  [ -n "$py" ] || { echo "python3 with google.protobuf (python3-protobuf) not found: skipped"; exit 77; }
  command -v protoc >/dev/null 2>&1 || { echo "protoc (protobuf-compiler) not found: skipped"; exit 77; }
  protoc --proto_path="$SP_SRCDIR/tools/chakra" --python_out="$tmp/py" \
    "$SP_SRCDIR/tools/chakra/et_def.proto" || exit 1
}

# chakra_plan mics|zpp OUT: a 32-rank plan of one micro-step (4 DGX H100 nodes)
chakra_plan () {
  case $1 in
    mics) set -- "$2" --shard-size 16 --hierarchical ;;
    zpp) set -- "$2" --qwz --qgz --hpz 8 ;;
  esac
  out=$1; shift
  "$SHARDPLAN" plan --model gpt-1b --topology dgx-h100 --nodes 4 --one-micro-step "$@" -o "$out" >/dev/null
}

# `shardplan groups --format json` for a plan's groups options
chakra_groups_json () {
  "$py" - "$1" <<'PY' | xargs "$SHARDPLAN" groups --format json
import json, sys
g = json.load(open(sys.argv[1]))["groups"]
a = ["--world-size", g["world_size"], "--devices-per-node", g["devices_per_node"]]
if g["shard_size"]: a += ["--shard-size", g["shard_size"]]
if g["hierarchical"]: a += ["--hierarchical"]
if g["zero_param_group_size"]: a += ["--zero-param-group-size", g["zero_param_group_size"]]
if g["local_all_to_all"]: a += ["--local-all-to-all"]
if g["tensor_parallel"]: a += ["--tensor-parallel", g["tensor_parallel"]]
print(" ".join(str(x) for x in a))
PY
}
