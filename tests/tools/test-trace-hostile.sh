#!/bin/sh
# Hostile HDF5 traces (issue 15, findings 2, 3, 4 and 7), made at test time
# by trace_hostile.py from the sample trace, through the commands a user
# would run: `shardplan trace show FILE`, `shardplan trace export --format
# csv FILE` and `shardplan compare GOOD FILE`.  Each must exit 2 with one
# line naming the file and what is wrong: never a signal, never more than
# TIME_LIMIT seconds, never more than MEM_LIMIT_KB of address space (ulimit
# -v; not under ASan, which reserves terabytes of shadow memory).
# Skips (77) when no python3 with h5py is found.
SP_TEST_NAME=trace-hostile
. "$SP_SRCDIR/tests/tools/cli-testlib.sh"
TIME_LIMIT=30
MEM_LIMIT_KB=4194304

py=
for cand in "${PYTHON:-}" python3 /usr/bin/python3; do
  [ -n "$cand" ] || continue
  if "$cand" -c 'import h5py, numpy' >/dev/null 2>&1; then py=$cand; break; fi
done
[ -n "$py" ] || { echo "python3 with h5py not found: skipped"; exit 77; }

"$SP_BUILDDIR/tests/lib/test_trace" --write-sample "$tmp/good.h5" || exit 99
"$py" "$SP_SRCDIR/tests/tools/trace_hostile.py" "$tmp/good.h5" "$tmp" || exit 99

limit_mem=yes
"$SHARDPLAN" info 2>/dev/null | grep -q 'sanitizers=yes' && limit_mem=no
have_timeout=yes
command -v timeout >/dev/null 2>&1 || have_timeout=no

# run FILE ARGS…: shardplan ARGS under the limits; $status, $tmp/err.
run () {
  (
    [ "$limit_mem" = no ] || ulimit -v "$MEM_LIMIT_KB"
    if [ "$have_timeout" = yes ]; then
      exec timeout "$TIME_LIMIT" "$SHARDPLAN" "$@"
    else
      exec "$SHARDPLAN" "$@"
    fi
  ) >"$tmp/out" 2>"$tmp/err"
  status=$?
}

# refused NAME TEXT: every command exits 2 on $tmp/NAME.h5 with one line on
# stderr naming the file and containing TEXT.
refused () {
  file="$tmp/$1.h5"
  if [ ! -f "$file" ]; then
    echo "$1: not made (the sample's layout differs under this libhdf5): skipped"
    return
  fi
  for cmd in "trace show" "trace export --format csv" "compare $tmp/good.h5"; do
    # shellcheck disable=SC2086 # $cmd is words on purpose
    run $cmd "$file"
    if [ "$status" -eq 124 ]; then
      fail "$1: shardplan $cmd ran past $TIME_LIMIT s"
    elif [ "$status" -gt 128 ]; then
      fail "$1: shardplan $cmd killed by signal $((status - 128)): $(tail -n 3 "$tmp/err")"
    elif [ "$status" -ne 2 ]; then
      fail "$1: shardplan $cmd exited $status, expected 2: $(cat "$tmp/err")"
    elif [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -qF "$file: " "$tmp/err" \
        || ! grep -qF "$2" "$tmp/err"; then
      fail "$1: shardplan $cmd: expected one line naming $file and '$2', got: $(cat "$tmp/err")"
    fi
  done
}

# The good trace itself passes every command (the checks refuse no real file).
for cmd in "trace show" "trace export --format csv" "compare $tmp/good.h5"; do
  # shellcheck disable=SC2086
  run $cmd "$tmp/good.h5"
  [ "$status" -eq 0 ] || fail "good trace: shardplan $cmd exited $status: $(cat "$tmp/err")"
done

# The same trace written with version 2 object headers (libver "latest",
# creation order tracked on the datasets, one header continued in an
# "OCHK" block, the root's attributes in dense storage: a fractal heap
# whose root block is direct, or indirect; an index of more than one
# node; a /meta/software attribute over 4 KiB, kept outside the heap; a
# user block before the superblock; over 512 KiB of root attributes, in
# heap blocks under a nested indirect block) reads as well.
# accepted NAME [WHY]: every command reads $tmp/NAME.h5 (exit 0); when
# trace_hostile.py could not make it, WHY is said and it is skipped.
accepted () {
  if [ ! -f "$tmp/$1.h5" ]; then
    echo "$1: not made (${2:-?}): skipped"
    return
  fi
  for cmd in "trace show" "trace export --format csv" "compare $tmp/good.h5"; do
    # shellcheck disable=SC2086
    run $cmd "$tmp/$1.h5"
    [ "$status" -eq 0 ] || fail "$1: shardplan $cmd exited $status: $(cat "$tmp/err")"
  done
}
for f in ok-userblock ok-v2-latest ok-v2-dense-indirect ok-v2-many-attrs ok-v2-huge-attr \
    ok-v2-userblock ok-v2-nested; do
  accepted "$f"
done

# Attributes shared through a shared-message table (made where
# trace_hostile.py finds the libhdf5 h5py runs on, to call
# H5Pset_shared_mesg_*), in version 1 headers and in dense storage; with
# datatypes and dataspaces shared too.
for f in ok-sohm-v1 ok-sohm-v2 ok-sohm-types; do
  accepted "$f" "no libhdf5 found to call"
done

# Superblocks of versions 0 to 3 behind user blocks of 1 to 4 KiB: the
# reader reads each raw to walk the root group's header before H5Fopen.
for f in ok-superblock-0 ok-superblock-2 ok-superblock-3; do
  accepted "$f"
done
accepted ok-superblock-1 "no libhdf5 found to call"

# Extreme but valid values read, and nothing summing them overflows (the
# sanitizer build reports "runtime error" on stderr).
for cmd in "trace show" "trace export --format csv" "trace export --format chrome" \
    "compare $tmp/good.h5"; do
  # shellcheck disable=SC2086
  run $cmd "$tmp/ok-extreme-values.h5"
  [ "$status" -eq 0 ] && ! grep -q "runtime error" "$tmp/err" \
    || fail "extreme values: shardplan $cmd exited $status: $(cat "$tmp/err")"
done

# JSON output stays JSON: the sums of 2^64 - 1 bytes per row are no
# negative number; NaN and infinite rates are null; a hostname that is not
# UTF-8 comes out as U+FFFD; a header claiming 2^32 - 1 ranks without a
# ranks table names a Chrome track per rank that has a row (the file stays
# small and quick, where it wrote two events per claimed rank, 600 GiB).
json_ok () {
  what=$1 file=$2
  shift 2
  run "$@" "$file"
  [ "$status" -eq 0 ] || { fail "$what: shardplan $* exited $status: $(cat "$tmp/err")"; return; }
  out=$tmp/out
  case "$*" in *"-o "*) out=$tmp/o.json ;; esac
  "$py" -c 'import json, sys; json.load(open(sys.argv[1], encoding="utf-8", errors="strict"))' \
    "$out" 2>"$tmp/pyerr" || fail "$what: shardplan $* wrote no valid JSON: $(cat "$tmp/pyerr")"
}
json_ok "extreme values" "$tmp/ok-extreme-values.h5" trace show --format json
grep -q '"bytes" : -' "$tmp/out" && fail "extreme values: trace show --format json: a negative byte total"
for f in ok-extreme-values ok-nonfinite-rates ok-hostname-not-utf8 ok-world-huge; do
  json_ok "$f" "$tmp/$f.h5" trace export --format chrome -o "$tmp/o.json"
done
json_ok ok-hostname-not-utf8 "$tmp/ok-hostname-not-utf8.h5" trace show --format json
[ "$(wc -c <"$tmp/o.json")" -lt 1000000 ] \
  || fail "ok-world-huge: a Chrome trace of $(wc -c <"$tmp/o.json") bytes for 48 rows"

# 2: attributes that are not one value.
refused f2-producer-vlen-array "attribute producer of / is an array of 64 strings, expected one string"
refused f2-producer-fixed-array "attribute producer of / is an array of 64 strings, expected one string"
refused f2-world-size-array "attribute world_size is an array of 4096 integers, expected one integer"
refused f2-check-policy-empty "attribute check_policy of / is empty (a null dataspace), expected one string"
# 3: 2^32 + 1 elements.
refused f3-members-2p32 "/groups/members declares 4294967297 elements, more than the 268435456 a trace allows"
refused f3-env-2p32 "/meta/env declares 4294967297 elements, more than the 268435456 a trace allows"
# 4: more than the schema allows or the file can hold.
refused f4-members-512M "/groups/members declares 536870912 elements, more than the 268435456 a trace allows"
refused f4-members-100M "/groups/members declares 104857600 elements of 4 bytes, more than the file"
refused f4-ops-rows "/ops/ops declares 1400000000 elements of"
# 7: structure the schema does not have.
refused f7-groups-type "field group_id of /groups/groups is an unsigned 16-bit big-endian integer, expected an unsigned 32-bit little-endian integer"
refused f7-ops-vlen-field "field note of /ops/ops holds variable-length data"
refused f7-members-2d "/groups/members has 2 dimensions, expected 1"
refused f7-members-filter "/groups/members uses HDF5 filter 6 ('scaleoffset')"
refused f7-plan-array "/meta/plan is an array of 8 values, expected a single value"
# 7: a damaged global heap (libhdf5 1.10.8 crashes or loops on it).
refused f7-heap-object-size "damaged HDF5 global heap at byte"
refused f7-heap-free-size-0 "damaged HDF5 global heap at byte"
refused f7-string-ref "/meta/cluster/nodes row 0 refers to a string that is not in the file's global heap"
refused f7-filters-dropped "/ops/ops stores"
refused f7-attr-ref "attribute producer of / refers to a string that is not in the file's global heap"
refused f7-attr-type "attribute producer of / has a damaged string type"
refused f7-attr-message "of / is a damaged attribute message (its parts overrun it)"
# T13/T14 in version 2 object headers, their checksums recomputed (libhdf5
# 1.10.8: SIGFPE, SIGSEGV before the walk read them).
refused v2-chunk-dim-zero "the object header of /ops/ops has a chunked layout with a chunk dimension of 0"
refused v2-dtype-overrun "the object header of /ops/ops has a damaged or unsupported datatype message"
refused v2-attr-ref-continued "attribute kernel of /meta/software refers to a string that is not in the file's global heap"
refused v2-dense-attr-ref "attribute producer of / refers to a string that is not in the file's global heap"
refused v2-dense-indirect-attr-ref "attribute producer of / refers to a string that is not in the file's global heap"
refused v2-many-attrs-attr-ref "attribute producer of / refers to a string that is not in the file's global heap"
refused v2-huge-attr-attr-ref "of /meta/software refers to a string that is not in the file's global heap"
refused userblock-attr-ref "attribute producer of / refers to a string that is not in the file's global heap"
refused superblock-1-root-size "the object header of / continues outside the file"
refused v2-userblock-attr-ref "attribute producer of / refers to a string that is not in the file's global heap"
refused v2-shared-record "attribute (dense storage) of / has a shared message in a file without a shared-message table"
refused v2-index-total "of / has a B-tree index whose record count is not its records'"
refused v2-huge-index "attribute (dense storage) of / names a huge-object index but holds no huge object"
refused v2-block-offset "attribute (dense storage) of / has a fractal heap block that is not where its heap puts it"
refused v2-second-attr-info "the object header of / has a second attribute or link info message"
refused v2-link-heap "the object header of / names a link heap that is not one"
# Attributes under a nested indirect heap block (SIGSEGV in every command
# before the walk followed such blocks).
refused v2-nested-attr-ref "attribute producer of / refers to a string that is not in the file's global heap"
refused v2-nested-block-offset "attribute (dense storage) of / has a fractal heap indirect block that is not where its heap puts it"
# A damaged string reference in a shared attribute, kept in the
# shared-message table's heap, or behind a shared datatype; the table's
# heap naming a huge-object index without huge objects (SIGSEGV before
# the walk followed them); a shared compound type claiming more members
# than it has.
refused sohm-v1-attr-ref "attribute producer of / refers to a string that is not in the file's global heap"
refused sohm-v2-attr-ref "attribute producer of / refers to a string that is not in the file's global heap"
refused sohm-types-attr-ref "attribute producer of / refers to a string that is not in the file's global heap"
refused sohm-heap-huge-index "the shared-message heap names a huge-object index but holds no huge object"
refused sohm-types-compound "the object header of /ops/ops has a damaged or unsupported shared datatype message"
refused sohm-types-space-rank "has a damaged shared dataspace message"
# Version 1 groups' storage libhdf5 trusts on every name lookup (SIGSEGV,
# heap corruption, unbounded memory, stack overflow before the walk read
# it), and links other than hard ones.
refused v1-heap-data-undef "the object header of / has a local heap whose data lies outside the file"
refused v1-heap-size-huge "the object header of / has a local heap whose data lies outside the file"
refused v1-heap-freelist-loop "the object header of / has a local heap whose free list runs past its data or loops"
refused v1-tree-self-child "the object header of / has a group B-tree node whose level is not one below its parent's"
refused v1-tree-child-undef "the object header of / has a group B-tree child at the undefined address"
refused link-external "the object header of /meta has an external link: a trace is one file"
refused link-soft "/meta/env is a soft link; a trace is one file of hard links"
finish
