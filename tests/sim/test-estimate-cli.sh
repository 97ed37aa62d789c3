#!/bin/sh
# `shardplan estimate`: the DESIGN.md contract (JSON keys, exit codes, the
# nccl-tests-like table).  Run by `make check` with SHARDPLAN set.
set -u
SP=${SHARDPLAN:?SHARDPLAN is not set}
fail=0
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
ok () { printf 'ok   %s\n' "$1"; }
bad () { printf 'FAIL %s\n' "$1"; fail=1; }

expect_status () { # want, description, command...
  want=$1; what=$2; shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"; got=$?
  if [ "$got" -eq "$want" ]; then ok "$what (exit $got)"; else bad "$what: exit $got, wanted $want"; cat "$tmp/err"; fi
}

# JSON: one object with the contract's keys, in order, numbers where numbers go
expect_status 0 "json estimate" "$SP" estimate --topology dgx-h100 --nodes 2 --collective all_reduce --bytes 1G --format json
if command -v python3 >/dev/null 2>&1; then
  python3 - "$tmp/out" <<'PY' && ok "json parses with the contract keys" || bad "json contract"
import json, sys
d = json.load(open(sys.argv[1]))
keys = ["collective", "bytes", "ranks", "time_us", "algbw_gbs", "busbw_gbs", "algorithm"]
assert list(d)[:7] == keys, list(d)
assert d["collective"] == "all_reduce" and d["bytes"] == 1 << 30 and d["ranks"] == 16
assert d["time_us"] > 0 and abs(d["algbw_gbs"] - d["bytes"] / (d["time_us"] * 1e3)) / d["algbw_gbs"] < 1e-3
assert abs(d["busbw_gbs"] - d["algbw_gbs"] * 2 * 15 / 16) < 1e-2
PY
else
  grep -q '"collective": "all_reduce", "bytes": 1073741824, "ranks": 16, "time_us": ' "$tmp/out" \
    && ok "json keys (no python3: grep)" || bad "json keys"
fi

# the two models agree on an uncontended collective (within 5 %)
a=$("$SP" estimate -t dgx-a100 -n 4 -c all_gather -b 256M --sim-model analytic -f json | sed 's/.*"time_us": \([0-9.]*\).*/\1/')
d=$("$SP" estimate -t dgx-a100 -n 4 -c all_gather -b 256M --sim-model des -f json | sed 's/.*"time_us": \([0-9.]*\).*/\1/')
# the flags' old spellings (-N, -m / --model) still work, hidden from --help
o=$("$SP" estimate -t dgx-a100 -N 4 -c all_gather -b 256M -m analytic -f json | sed 's/.*"time_us": \([0-9.]*\).*/\1/')
[ "$o" = "$a" ] && ok "-N / -m are -n / --sim-model" || bad "-N -m gave $o, -n --sim-model $a"
"$SP" estimate --help | grep -q -- '--sim-model' && ! "$SP" estimate --help | grep -q -- '-m, --model' \
  && ok "--help names --sim-model only" || bad "--help still shows --model"
awk -v a="$a" -v d="$d" 'BEGIN { r = (d - a) / a; if (r < 0) r = -r; exit !(r <= 0.05) }' \
  && ok "analytic $a us vs des $d us" || bad "analytic $a vs des $d"

# a sweep prints one row per power of two, nccl-tests columns
expect_status 0 "table sweep" "$SP" estimate --topology dgx-a100 --nodes 2 --collective all_gather --bytes 1K:1M
rows=$(grep -vc '^#' "$tmp/out")
[ "$rows" -eq 11 ] && ok "11 rows for 1K:1M" || bad "rows: $rows"
grep -q '^#       size         count      type   redop    root     time   algbw   busbw' "$tmp/out" \
  && ok "nccl-tests header" || bad "header"
expect_status 0 "json sweep" "$SP" estimate -t dgx-a100 -c broadcast -b 8:64 -f json
[ "$(grep -c '"collective"' "$tmp/out")" -eq 4 ] && ok "json array of 4" || bad "json sweep rows"

# overrides are honoured or refused with exit 2
expect_status 0 "--algorithm ring --protocol ll128" "$SP" estimate -t dgx-h100 -c all_reduce -b 1M -a ring -p ll128 -f json
grep -q '"algorithm": "ring", "protocol": "ll128"' "$tmp/out" && ok "override kept" || bad "override"
expect_status 2 "nvls on A100" "$SP" estimate -t dgx-a100 -c all_reduce -b 1M -a nvls
grep -q '^shardplan estimate: .*nvls' "$tmp/err" && ok "one-line reason" || bad "reason: $(cat "$tmp/err")"

# bad input: exit 2, one line on stderr
expect_status 2 "no topology" "$SP" estimate -c all_reduce -b 1M
expect_status 2 "unknown collective" "$SP" estimate -t dgx-a100 -c all_scatter -b 1M
expect_status 2 "bad bytes" "$SP" estimate -t dgx-a100 -c all_reduce -b 12Q
expect_status 2 "non-power-of-two range" "$SP" estimate -t dgx-a100 -c all_reduce -b 3:64
expect_status 2 "too many ranks per node" "$SP" estimate -t dgx-a100 -c all_reduce -b 1M -k 9
expect_status 2 "unknown model" "$SP" estimate -t dgx-a100 -c all_reduce -b 1M -m exact
expect_status 2 "unknown topology" "$SP" estimate -t no-such-cluster -c all_reduce -b 1M
[ "$(wc -l <"$tmp/err")" -eq 1 ] && ok "one line" || bad "stderr has $(wc -l <"$tmp/err") lines"
expect_status 0 "--help" "$SP" estimate --help

# sizes follow nccl-tests' count arithmetic (issue 10, issue 16): a size that
# gives a rank (peer) less than one element is refused with the smallest
# valid size, never costed 0
for c in all_reduce broadcast; do
  expect_status 2 "$c -b 3 (float32)" "$SP" estimate -t dgx-h100 -c $c -b 3 -f json
  grep -q 'moves nothing.*smallest size is 4 bytes' "$tmp/err" && ok "$c: smallest size named" \
    || bad "$c -b 3: $(cat "$tmp/err")"
done
expect_status 2 "all_to_all -b 16 over 8 ranks" "$SP" estimate -t dgx-h100 -c all_to_all -b 16 -f json
grep -q "each peer less than one element.*smallest size is 32 bytes" "$tmp/err" \
  && ok "a2a: smallest size named" || bad "a2a -b 16: $(cat "$tmp/err")"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && [ ! -s "$tmp/out" ] && ok "one line, no output" || bad "a2a -b 16 output"
for c in all_gather reduce_scatter; do
  expect_status 2 "$c -b 32 over 16 ranks" "$SP" estimate -t dgx-h100 -N 2 -c $c -b 32
  grep -q "smallest size is 64 bytes" "$tmp/err" && ok "$c: smallest size named" || bad "$c: $(cat "$tmp/err")"
done
# a size column of whole elements per peer is what that nccl-tests moved:
# Polaris' older nccl-tests print 32 B (1 float per peer) over 8 ranks, and
# 1600 B is 200 B per peer, not the 192 current nccl-tests would round it to
expect_status 0 "all_to_all -b 32 over 8 ranks (1 float a peer)" "$SP" estimate -t dgx-h100 -c all_to_all -b 32 -f json
grep -q '"bytes": 32,' "$tmp/out" && [ ! -s "$tmp/err" ] && ok "a2a 32 B as it is" \
  || bad "a2a -b 32: $(cat "$tmp/out" "$tmp/err")"
expect_status 0 "all_to_all -b 1600 over 8 ranks" "$SP" estimate -t dgx-h100 -c all_to_all -b 1600 -f json
grep -q '"bytes": 1600,' "$tmp/out" && ok "a2a 1600 B as it is" || bad "a2a -b 1600: $(cat "$tmp/out")"
# other sizes are rounded as current nccl-tests do, or where that moves
# nothing, to whole elements (40 B over 8 ranks: 4 B a peer, 32 B)
expect_status 0 "all_to_all -b 40 over 8 ranks" "$SP" estimate -t dgx-h100 -c all_to_all -b 40 -f json
grep -q '"bytes": 32,' "$tmp/out" && grep -q 'runs as 32 bytes' "$tmp/err" \
  && ok "a2a 40 B runs as 32" || bad "a2a -b 40: $(cat "$tmp/out" "$tmp/err")"
expect_status 2 "-b 0" "$SP" estimate -t dgx-h100 -c all_reduce -b 0
expect_status 2 "-b 1 bfloat16" "$SP" estimate -t dgx-h100 -c all_reduce -b 1 -d bfloat16
grep -q 'smallest size is 2 bytes' "$tmp/err" && ok "bfloat16: 2 bytes" || bad "bf16: $(cat "$tmp/err")"
expect_status 0 "a2a -b 1K int8: count is per peer" "$SP" estimate -t dgx-h100 -c all_to_all -b 1K -d int8
grep -q '^        1024           128      int8' "$tmp/out" && ok "a2a count 128 per peer" || bad "a2a count: $(cat "$tmp/out")"
# rounded sizes cost the rounded bytes and say so on stderr
expect_status 0 "-b 5 (float32)" "$SP" estimate -t dgx-h100 -c all_reduce -b 5 -f json
grep -q '"bytes": 4,' "$tmp/out" && grep -q 'note: --bytes 5 runs as 4 bytes' "$tmp/err" \
  && ok "5 B runs as 4 B, with a note" || bad "-b 5: $(cat "$tmp/out" "$tmp/err")"
expect_status 0 "all_gather 32M over 80 ranks" "$SP" estimate -t dgx-h100 -N 10 -c all_gather -b 32M -f json
grep -q '"bytes": 33553920,' "$tmp/out" && grep -q 'runs as 33553920 bytes' "$tmp/err" \
  && ok "33553920 as nccl-tests" || bad "AG 32M: $(cat "$tmp/out" "$tmp/err")"
expect_status 0 "no note when nothing is rounded" "$SP" estimate -t dgx-h100 -c all_reduce -b 1M
[ ! -s "$tmp/err" ] && ok "stderr empty" || bad "stderr: $(cat "$tmp/err")"
# a sweep leaves out the rows that would move nothing, with a note (80
# ranks: 320 B is one float each; 512 runs as 320, 1K as 960, 2K as 1280)
expect_status 0 "sweep 8:4K all_gather over 80 ranks" "$SP" estimate -t dgx-h100 -N 10 -c all_gather -b 8:4K
[ "$(grep -vc '^#' "$tmp/out")" -eq 4 ] && grep -q '6 sizes below 320 bytes left out' "$tmp/err" \
  && ok "4 rows, 6 left out" || bad "sweep: $(cat "$tmp/out" "$tmp/err")"
grep -q '^ *320 ' "$tmp/out" && grep -q '^ *960 ' "$tmp/out" && grep -q '^ *1280 ' "$tmp/out" \
  && ok "rows 320, 960, 1280" || bad "sweep rows: $(cat "$tmp/out")"
grep -q '^ *0 ' "$tmp/out" && bad "a 0-byte row" || ok "no 0-byte row"
expect_status 2 "sweep entirely below the smallest size" "$SP" estimate -t dgx-h100 -c all_to_all -b 8:16
# negative sizes are named as negative
expect_status 2 "--bytes -1" "$SP" estimate -t dgx-h100 -c all_reduce --bytes -1
grep -q "'-1' is negative" "$tmp/err" && ok "named negative" || bad "-1: $(cat "$tmp/err")"
expect_status 2 "--bytes=-4K" "$SP" estimate -t dgx-h100 -c all_reduce --bytes=-4K
grep -q "is negative" "$tmp/err" && ok "named negative (suffix)" || bad "-4K: $(cat "$tmp/err")"

# the des model simulates all-to-all over 16,384 ranks (issue 10: refused
# above ~2,048 before)
expect_status 0 "des all_to_all 16384 ranks" "$SP" estimate -t dgx-h100 -N 2048 -c all_to_all -b 1G -f json
grep -q '"ranks": 16384' "$tmp/out" && ok "16384 ranks answered" || bad "16384: $(cat "$tmp/out")"

# send / sendrecv: nccl-tests' sendrecv_perf, every rank to the next around
# all of them; busbw = algbw; des and the closed form agree; one rank has no
# peer and is refused
expect_status 0 "sendrecv" "$SP" estimate -t dgx-h100 -N 2 -c sendrecv -b 64M -f json
grep -q '"collective": "send"' "$tmp/out" && ok "sendrecv is send" || bad "sendrecv: $(cat "$tmp/out")"
alg=$(sed -n 's/.*"algbw_gbs": \([0-9.]*\).*/\1/p' "$tmp/out")
bus=$(sed -n 's/.*"busbw_gbs": \([0-9.]*\).*/\1/p' "$tmp/out")
[ -n "$alg" ] && [ "$alg" = "$bus" ] && ok "send busbw = algbw" || bad "send: algbw $alg busbw $bus"
des=$(sed -n 's/.*"time_us": \([0-9.]*\).*/\1/p' "$tmp/out")
expect_status 0 "send analytic" "$SP" estimate -t dgx-h100 -N 2 -c send -b 64M -f json --sim-model analytic
ana=$(sed -n 's/.*"time_us": \([0-9.]*\).*/\1/p' "$tmp/out")
awk -v a="$des" -v b="$ana" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0 && d <= 1e-4 * a) }' \
  && ok "send: des $des = analytic $ana" || bad "send: des $des, analytic $ana"
expect_status 2 "send over one rank" "$SP" estimate -t dgx-h100 -N 1 --ranks-per-node 1 -c send -b 1M
grep -q "send needs at least 2 ranks" "$tmp/err" && ok "one rank refused" || bad "one rank: $(cat "$tmp/err")"
# a collective over one rank moves nothing: time 0, and a note says why
# (not silently)
expect_status 0 "all_reduce over one rank" "$SP" estimate -t dgx-h100 -N 1 --ranks-per-node 1 -c all_reduce -b 1M -f json
grep -q '"time_us": 0.000' "$tmp/out" && ok "one rank: time 0" || bad "one rank: $(cat "$tmp/out")"
grep -q "note: one rank: nothing crosses a link" "$tmp/err" && ok "one rank: note" \
  || bad "one rank, no note: $(cat "$tmp/err")"
expect_status 0 "all_reduce over two ranks" "$SP" estimate -t dgx-h100 -N 1 --ranks-per-node 2 -c all_reduce -b 1M
[ ! -s "$tmp/err" ] && ok "two ranks: no note" || bad "two ranks: $(cat "$tmp/err")"
# [nccl] algo / proto: NCCL_ALGO / NCCL_PROTO narrow the choice; the header
# says so; nothing left is refused with the restriction named
sed 's/^algo = .*/algo = allreduce:ring;allgather:^ring/; s/^proto = .*/proto = Simple/' \
  "$SP_SRCDIR/tests/fixtures/topo/valid-nccl.ini" >"$tmp/env.ini"
expect_status 0 "[nccl] algo=ring" "$SP" estimate -t "$tmp/env.ini" -c all_reduce -b 1K
grep -q "^# shardplan estimate: .*, NCCL_ALGO='AllGather:^Ring;AllReduce:Ring', NCCL_PROTO=Simple\$" "$tmp/out" \
  && ok "header names the restriction" || bad "header: $(head -1 "$tmp/out")"
tail -1 "$tmp/out" | grep -q ' ring   simple$' && ok "ring / simple at 1 KiB" || bad "row: $(tail -1 "$tmp/out")"
expect_status 0 "no [nccl]" "$SP" estimate -t dgx-h100 -N 2 -c all_reduce -b 1K
grep -q 'NCCL_' "$tmp/out" && bad "header without [nccl]: $(head -1 "$tmp/out")" || ok "no NCCL_ in the header"
tail -1 "$tmp/out" | grep -q ' ll$' && ok "unrestricted: ll at 1 KiB" || bad "row: $(tail -1 "$tmp/out")"
expect_status 2 "[nccl] leaves all_gather nothing" "$SP" estimate -t "$tmp/env.ini" -c all_gather -b 1M
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "^shardplan estimate: NCCL_ALGO=AllGather:^Ring;AllReduce:Ring NCCL_PROTO=Simple leave all_gather " "$tmp/err" \
  && ok "one line naming [nccl]" || bad "reason: $(cat "$tmp/err")"
# NCCL_ALGO=Tree leaves an all-gather nothing NCCL has: it fails the call
sed 's/^algo = .*/algo = Tree/' "$tmp/env.ini" >"$tmp/tree.ini"
expect_status 2 "NCCL_ALGO=Tree all_gather" "$SP" estimate -t "$tmp/tree.ini" -c all_gather -b 1M
grep -q "(NCCL would fail the call; all_gather can run here as ring/ll, ring/ll128, ring/simple)\$" "$tmp/err" \
  && ok "NCCL would fail" || bad "Tree all_gather: $(cat "$tmp/err")"
sed 's/^proto = Simple$/proto = LL256/' "$tmp/env.ini" >"$tmp/bad-env.ini"
expect_status 2 "bad [nccl] proto" "$SP" estimate -t "$tmp/bad-env.ini" -c all_reduce -b 1M
grep -q "\[nccl\] proto 'LL256': 'LL256' is not an NCCL protocol" "$tmp/err" && ok "bad proto named" \
  || bad "bad proto: $(cat "$tmp/err")"
# [nccl] version: NCCL 2.16 had no NVLS (2.17), so a 1 GiB all-reduce on
# one H100 node runs a ring; the header says the version; a bad one is named
sed '/^\[nccl\]/,$d; s/^nodes = .*/nodes = 1/' "$SP_SRCDIR/tests/fixtures/topo/valid-nccl.ini" >"$tmp/v0.ini"
{ cat "$tmp/v0.ini"; printf '[nccl]\nversion = 2.16.5\n'; } >"$tmp/v216.ini"
expect_status 0 "no version: nvls" "$SP" estimate -t "$tmp/v0.ini" -c all_reduce -b 1G
tail -1 "$tmp/out" | grep -q ' nvls   simple$' && ok "NVLS today" || bad "row: $(tail -1 "$tmp/out")"
expect_status 0 "[nccl] version 2.16.5" "$SP" estimate -t "$tmp/v216.ini" -c all_reduce -b 1G
grep -q "^# shardplan estimate: .*, NCCL 2.16.5\$" "$tmp/out" && ok "header names the version" \
  || bad "header: $(head -1 "$tmp/out")"
tail -1 "$tmp/out" | grep -q ' nvls ' && bad "NVLS on NCCL 2.16: $(tail -1 "$tmp/out")" || ok "no NVLS on 2.16"
sed 's/^version = .*/version = 22105/' "$tmp/v216.ini" >"$tmp/vbad.ini"
expect_status 2 "bad [nccl] version" "$SP" estimate -t "$tmp/vbad.ini" -c all_reduce -b 1M
grep -q "\[nccl\] version '22105' is not an NCCL version" "$tmp/err" && ok "bad version named" \
  || bad "bad version: $(cat "$tmp/err")"
exit $fail
