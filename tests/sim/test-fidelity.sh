#!/bin/sh
# The simulator against the published nccl-tests runs of the development
# set (bench/data/nccl-tests/dev.json): the median error of the default
# model must not grow past the bounds recorded here.  Measured when they
# were set (bench/RESULTS.md, "Fidelity"): des 5.0 % for >= 1 MiB and
# 14.4 % for < 1 MiB (11.7 % since LL pays its per-message cost, 2026-11-27:
# the bound moved down with it; 4.6 % for >= 1 MiB since Slingshot's step
# floor, 2026-11-28, and that bound with it; 8.5 % for < 1 MiB since
# Slingshot's small sends pay the inject copy, 2026-12-07, and that bound
# with it); the bounds leave about a
# point and a half of room so
# an honest model change that moves a few rows does not fail, and a
# regression does.  The analytic model is held to the same bounds.  The
# GB200 NVL72 runs (nvl72.json: des 4.8 % / 21.1 % when set) are held to
# issue 17's targets, 10 % and 25 %.
set -eu
FIDELITY="${SP_BUILDDIR:-.}/bench/fidelity"
DATA="${SP_SRCDIR:-..}/bench/data/nccl-tests/dev.json"
[ -x "$FIDELITY" ] || { echo "no $FIDELITY"; exit 99; }
for model in des analytic; do
  "$FIDELITY" --data "$DATA" --models "$model" --max-ge 6.0 --max-lt 10.0
  "$FIDELITY" --data "${DATA%dev.json}nvl72.json" --models "$model" --max-ge 10 --max-lt 25
done
# and it beats NCCL's own model on both size classes
out=$("$FIDELITY" --data "$DATA" --models des,nccl)
echo "$out" | awk '/^all core datasets/ {
  if (!($5 + 0 < $6 + 0) || !($8 + 0 < $9 + 0)) { print "des does not beat nccl: " $0; exit 1 } }'

# Data files as others publish them.  nvl72.json as shared/data carries a
# datasheet block and no topology_ini, core or ranks_per_node: the INI its
# datasheet gives must score every row exactly as the INI the project
# wrote by hand for it (bench/data/nccl-tests/nvl72.json).
FIX="${SP_SRCDIR:-..}/tests/fixtures/fidelity"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$FIDELITY" --rows --data "$FIX/nvl72-datasheet.json" > "$tmp/sheet.csv"
"$FIDELITY" --rows --data "${DATA%dev.json}nvl72.json" > "$tmp/ini.csv"
[ "$(wc -l < "$tmp/ini.csv")" -gt 30 ] || { echo "nvl72.json scored $(wc -l < "$tmp/ini.csv") lines"; exit 1; }
cmp "$tmp/sheet.csv" "$tmp/ini.csv" || { echo "the datasheet's INI scores differently"; exit 1; }
# and is the same INI, keys the one NVLink domain never uses (fabric, NICs) too
"$FIDELITY" --ini --data "$FIX/nvl72-datasheet.json" | grep -v '^# ' > "$tmp/sheet.ini"
"$FIDELITY" --ini --data "${DATA%dev.json}nvl72.json" | grep -v '^# ' > "$tmp/hand.ini"
grep -q '^fabric = rail$' "$tmp/hand.ini"
cmp "$tmp/sheet.ini" "$tmp/hand.ini" || { echo "the datasheet's INI differs"; exit 1; }

# refused: exit 2 and a message naming what is wrong; nothing scored is
# never a target met
refused () { # DATA-TEXT PATTERN
  printf '%s' "$1" > "$tmp/bad.json"
  rc=0
  "$FIDELITY" --data "$tmp/bad.json" > "$tmp/out" 2> "$tmp/err" || rc=$?
  [ "$rc" -eq 2 ] || { echo "exit status $rc for: $1"; exit 1; }
  grep -q -- "$2" "$tmp/err" || { echo "no '$2' in: $(cat "$tmp/err")"; exit 1; }
}
part='"gpu": "H100", "transport": "ib", "gpus_per_host": 8, "memory_gib": 80,
  "tflops_bf16_dense": 989, "nvlink_gbs_per_gpu_one_direction": 450, "nics_per_host": 8,
  "nic_gbps": 400'
sheet="$part, \"hosts\": 2"
refused '[]' 'no timed row to score'
refused '[{"id": "a", "collective": "allreduce", "rows": [{"bytes": 8, "time_us": 20}]}]' \
  'dataset a has no topology_ini and no datasheet block'
refused "[{\"id\": \"a\", \"collective\": \"allreduce\", \"rows\": [],
  \"datasheet\": {$sheet, \"intra_kind\": \"nvswitch\n[inter]\"}}]" "datasheet key 'intra_kind'"
for v in 'H100 ;x' 'H100 #x' 'H1[00' 'H100=x'; do # each would change what the INI says
  refused "[{\"id\": \"a\", \"collective\": \"allreduce\", \"rows\": [],
    \"datasheet\": {$sheet, \"intra_kind\": \"nvswitch\", \"fabric\": \"$v\"}}]" "datasheet key 'fabric'"
done
refused "[{\"id\": \"a\", \"collective\": \"allreduce\", \"rows\": [], \"datasheet\": {$sheet}}]" \
  'does not say how a host'"'"'s GPUs connect'
# an NVLink domain of one host is no domain across hosts: the kind must be given
refused "[{\"id\": \"a\", \"collective\": \"allreduce\", \"rows\": [],
  \"datasheet\": {$sheet, \"nvlink_domain_gpus\": 8}}]" 'does not say how a host'"'"'s GPUs connect'
refused "[{\"id\": \"a\", \"collective\": \"allreduce\", \"rows\": [{\"bytes\": 8, \"time_us\": 5e-324}],
  \"datasheet\": {$sheet, \"intra_kind\": \"nvswitch\"}}]" "row 1: 'time_us'"
refused "[{\"id\": \"a\", \"collective\": \"allreduce\", \"rows\": [{\"bytes\": 0, \"time_us\": 1}],
  \"datasheet\": {$sheet, \"intra_kind\": \"nvswitch\"}}]" "row 1: 'bytes'"
refused "[{\"id\": \"a\", \"collective\": \"allreduce\", \"rows\": [{\"bytes\": 8, \"time_us\": \"9\"}],
  \"datasheet\": {$sheet, \"intra_kind\": \"nvswitch\"}}]" "row 1: 'time_us'"
refused "[{\"id\": \"a\", \"collective\": \"allreduce\", \"rows\": [],
  \"datasheet\": {$part, \"hosts\": 2.5, \"intra_kind\": \"nvswitch\"}}]" "datasheet key 'hosts' must be a whole"
refused "[{\"id\": \"a\", \"collective\": \"allreduce\", \"rows\": [], \"datasheet\": {$sheet, \"hosts\": 3}}]" \
  'the key "hosts" a second time'
refused "[{\"id\": \"a\", \"collective\": \"allreduce\", \"rows\": [],
  \"datasheet\": {\"gpu\": \"H100\", \"transport\": \"ib\", \"intra_kind\": \"nvswitch\"}}]" \
  "datasheet key 'hosts' is missing"
# what the datasheet says goes into the INI as it says it: a given kind and
# fabric; whole numbers written as 2.0; one host may leave out its NICs
printf '%s' "[{\"id\": \"a\", \"collective\": \"allreduce\", \"rows\": [{\"bytes\": 8, \"time_us\": 30}],
  \"datasheet\": {$part, \"hosts\": 2.0, \"intra_kind\": \"nvlink\", \"fabric\": \"fat-tree\"}},
 {\"id\": \"b\", \"collective\": \"allgather\", \"rows\": [{\"bytes\": 1048576, \"time_us\": 30}],
  \"datasheet\": {\"gpu\": \"H100\", \"hosts\": 1, \"gpus_per_host\": 8, \"memory_gib\": 80,
   \"tflops_bf16_dense\": 989, \"nvlink_gbs_per_gpu_one_direction\": 450, \"intra_kind\": \"nvswitch\"}}]" \
  > "$tmp/given.json"
"$FIDELITY" --ini --data "$tmp/given.json" > "$tmp/given.ini"
for line in 'nodes = 2' 'kind = nvlink' 'fabric = fat-tree' 'transport = ib' 'nic_gbps = 400'; do
  grep -qx "$line" "$tmp/given.ini" || { echo "no '$line' in: $(cat "$tmp/given.ini")"; exit 1; }
done
[ "$(grep -c '^\[inter\]' "$tmp/given.ini")" -eq 1 ] || { echo "one host got an [inter]"; exit 1; }
[ "$("$FIDELITY" --rows --data "$tmp/given.json" | wc -l)" -eq 3 ]

# a bound is held to rows: a class with no core row fails it
printf '%s' "[{\"id\": \"a\", \"collective\": \"allreduce\", \"rows\": [{\"bytes\": 8, \"time_us\": 30}],
  \"datasheet\": {$sheet, \"intra_kind\": \"nvswitch\"}}]" > "$tmp/small.json"
"$FIDELITY" --data "$tmp/small.json" --max-lt 1000 > /dev/null
if "$FIDELITY" --data "$tmp/small.json" --max-ge 1000 > /dev/null 2> "$tmp/err"; then
  echo "--max-ge passed with no row of 1 MiB or more"; exit 1
fi
grep -q 'no core row >= 1 MiB' "$tmp/err"

# an id with a comma or a quote stays one CSV field in --rows (RFC 4180)
printf '%s' "[{\"id\": \"a,\\\"b\", \"collective\": \"allreduce\", \"rows\": [{\"bytes\": 8, \"time_us\": 30}],
  \"datasheet\": {$sheet, \"intra_kind\": \"nvswitch\"}}]" > "$tmp/csv.json"
"$FIDELITY" --rows --data "$tmp/csv.json" | grep -q '^"a,""b",all_reduce,'
