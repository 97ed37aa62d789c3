# tests/exec/exec-testlib.sh — sourced by the executor's shell tests.
# Skips (exit 77) when this build has no MPI or the launcher cannot start
# a one-rank job; provides `mpi N ARGS…` (runs `shardplan run ARGS…` on N
# ranks), `fail`, `finish`, and $tmp (removed at exit).
set -u
: "${SHARDPLAN:?SHARDPLAN must name the built shardplan binary}"
: "${SP_BUILDDIR:?}" "${SP_SRCDIR:?}"
MPIRUN=${MPIRUN:-}
if [ -z "$MPIRUN" ]; then
  echo "SKIP: no MPI launcher in this build (MPIRUN is empty)"
  exit 77
fi
if "$SHARDPLAN" run --plan /nonexistent -o /nonexistent 2>&1 | grep -q "has no MPI"; then
  echo "SKIP: this build has no MPI"
  exit 77
fi
# Open MPI refuses root and more ranks than cores unless told otherwise.
OMPI_ALLOW_RUN_AS_ROOT=1; OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_ALLOW_RUN_AS_ROOT OMPI_ALLOW_RUN_AS_ROOT_CONFIRM
MPIFLAGS=
if "$MPIRUN" --version 2>&1 | grep -q "Open MPI"; then
  MPIFLAGS="--oversubscribe"
fi
if ! timeout 60 "$MPIRUN" $MPIFLAGS -np 1 true >/dev/null 2>&1; then
  echo "SKIP: $MPIRUN cannot start a job here"
  exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/shardplan-exec-XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
MAKE_PLAN="$SP_BUILDDIR/tests/exec/make-plan"
CHECK_TRACE="$SP_BUILDDIR/tests/exec/check-trace"
failures=0

fail () {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# mpi N ARGS…: `shardplan run ARGS…` on N ranks; $status, $tmp/out, $tmp/err.
mpi () {
  n=$1
  shift
  timeout 300 "$MPIRUN" $MPIFLAGS -np "$n" "$SHARDPLAN" run "$@" >"$tmp/out" 2>"$tmp/err"
  status=$?
}

# run_lines: the lines shardplan itself printed on stderr (not mpirun's).
run_lines () {
  grep -c '^shardplan run' "$tmp/err"
}

finish () {
  if [ "$failures" -ne 0 ]; then
    echo "$failures failure(s)" >&2
    exit 1
  fi
  exit 0
}
