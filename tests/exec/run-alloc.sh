#!/bin/sh
# The executor's buffer allocator hook on 2 ranks (tests/exec/exec-alloc.c):
# the buffers asked for, in order and size; each handed back once; the ops
# correct on the hook's memory; an allocator that runs out fails the run
# on every rank with no trace written.
. "$SP_SRCDIR/tests/exec/exec-testlib.sh"

timeout 300 "$MPIRUN" $MPIFLAGS -np 2 "$SP_BUILDDIR/tests/exec/exec-alloc" "$tmp" >"$tmp/out" 2>"$tmp/err"
status=$?
[ "$status" -eq 0 ] || fail "exec-alloc: exit $status: $(cat "$tmp/err")"
grep -qx ok "$tmp/out" || fail "exec-alloc printed no ok: $(cat "$tmp/out" "$tmp/err")"
finish
