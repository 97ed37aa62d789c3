#!/bin/sh
# tests/fuzz/fuzz-smoke.sh TARGET… — `make fuzz-smoke`: run each libFuzzer
# target (tests/fuzz/fuzz-TARGET) for $FUZZ_SECONDS seconds (default 30),
# one after the other on one core, from a seed corpus made of the project's
# fixtures (tests/fixtures/**) plus the corpus earlier runs grew
# (tests/fuzz/corpus/TARGET in the build tree), with its dictionary.
# A crash, a sanitizer report, a leak, an input running over 10 s or over
# 2 GiB fails the target: its reproducer is kept under tests/fuzz/out/ and
# the command replaying it is printed.  Exit 1 if any target failed, except
# those listed in tests/fuzz/known-findings (findings recorded, fixes
# pending): they are reported but do not fail the run.
set -u
: "${SP_SRCDIR:?}" "${SP_BUILDDIR:?}"
secs=${FUZZ_SECONDS:-30}
fx=$SP_SRCDIR/tests/fixtures
fz=$SP_BUILDDIR/tests/fuzz
mkdir -p "$fz/out" "$fz/seeds" "$fz/corpus"
# libhdf5's own leaks on corrupt files (tests/fuzz/lsan.supp)
LSAN_OPTIONS=${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$SP_SRCDIR/tests/fuzz/lsan.supp
export LSAN_OPTIONS

# known TARGET: the line of tests/fuzz/known-findings for TARGET, if any
known () {
  sed -n "s/^$1[[:space:]][[:space:]]*//p" "$SP_SRCDIR/tests/fuzz/known-findings"
}

# put DIR FILE…: copy fixtures into DIR as FIXTUREDIR-NAME
put () {
  d=$1
  shift
  for f in "$@"; do
    p=${f%/*}
    cp "$f" "$d/${p##*/}-${f##*/}" || return 1
  done
}

# seeds TARGET DIR: fill DIR with the target's seed inputs
seeds () {
  case $1 in
    json-scan) put "$2" "$fx"/plan/*.json "$fx"/workload/*.json ;;
    plan) put "$2" "$fx"/plan/*.json "$fx"/chakra/*.plan.json ;;  # the latter: send / recv / p2p
    topo) put "$2" "$fx"/topo/*.ini ;;
    estimate) # the 8-byte request block (fuzz-estimate.c), then a topology
      n=0
      for f in "$fx"/topo/valid*.ini "$fx"/topo/datasheet-only.ini; do
        for req in '\000\000\000\000\000\000\001\036' '\001\001\000\000\002\000\377\024' \
                   '\000\003\006\000\000\000\001\020' '\002\000\004\003\000\000\001\032' \
                   '\000\006\000\000\000\000\001\014'; do
          n=$((n + 1))
          { printf "$req"; cat "$f"; } >"$2/seed-$n"
        done
      done ;;
    model) for f in "$fx"/workload/*.json; do
             case ${f##*/} in ds-*|*-ds.json) ;; *) put "$2" "$f" ;; esac
           done ;;
    deepspeed) put "$2" "$fx"/workload/ds-*.json "$fx"/workload/*-ds.json ;;
    nccltests) put "$2" "$fx"/nccltests/*.txt "$fx"/hostile/nccltests-*.txt ;;
    fidelity) # the published form (datasheet blocks) and the project's (INIs)
      put "$2" "$fx"/fidelity/*.json "$SP_SRCDIR"/bench/data/nccl-tests/nvl72.json ;;
    trace) put "$2" "$fx"/trace/*.h5 "$fx"/trace/not-a-trace.txt ;;
    spill) # spill files in this build's row layout, from the spill writer
      ms=$SP_BUILDDIR/tests/exec/make-spill
      "$ms" ok "$2/ok.spill" && "$ms" marks "$2/marks.spill" 3 \
        && "$ms" fields "$2/fields.spill" && "$ms" clock "$2/clock.spill" \
        && "$ms" world "$2/world.spill" 4 ;;
    options) # one seed a line: the selector byte, then the text
      n=0
      while IFS= read -r line; do
        n=$((n + 1))
        printf '%s' "$line" >"$2/seed-$n"
      done <"$SP_SRCDIR/tests/fuzz/options.seeds" ;;
    argv) # one command line a line, words split at blanks, joined by NULs
      n=0
      while IFS= read -r line; do
        n=$((n + 1))
        printf '%s' "$line" | tr ' ' '\000' >"$2/seed-$n"
      done <"$SP_SRCDIR/tests/fuzz/argv.seeds" ;;
    chakra) # each fixture trace's rank files joined by %%rank%%, then
      # %%groups%% and its groups file; the exported one also with %%topo%%
      for g in "$fx"/chakra/*.groups.json; do
        p=${g%.groups.json}
        s=$2/${p##*/}
        r=0
        : >"$s"
        while [ -f "$p.$r.et" ]; do
          [ $r -eq 0 ] || printf '%%%%rank%%%%' >>"$s"
          cat "$p.$r.et" >>"$s"
          r=$((r + 1))
        done
        cp "$s" "$s-nogroups"
        { printf '%%%%groups%%%%'; cat "$g"; } >>"$s"
        { printf '%%%%topo%%%%'; cat "$s"; } >"$s-topo"
      done
      # and plans as `shardplan chakra export` writes them (read back
      # exactly): a small one, and a pipeline of p2p ops (sp_src / sp_dst,
      # sp_deps, a receiver's own node)
      sp=$SP_BUILDDIR/tools/shardplan
      ex=$2/export.d
      for pl in "$fx/plan/golden-small.json" "$fx/chakra/pipe.plan.json"; do
        rm -rf "$ex"
        mkdir -p "$ex"
        "$sp" chakra export -q --plan "$pl" -o "$ex/x" || return 1
        s=$2/export-$(basename "$pl" .json)
        : >"$s"
        r=0
        while [ -f "$ex/x.$r.et" ]; do
          [ $r -eq 0 ] || printf '%%%%rank%%%%' >>"$s"
          cat "$ex/x.$r.et" >>"$s"
          r=$((r + 1))
        done
        { printf '%%%%groups%%%%'; cat "$ex/x.groups.json"; } >>"$s"
      done
      rm -rf "$ex" ;;
    *) echo "fuzz-smoke: unknown target '$1'" >&2; return 1 ;;
  esac
}

failed=
knownfail=
for t in "$@"; do
  prog=$fz/fuzz-$t
  rm -rf "$fz/seeds/$t"
  mkdir -p "$fz/seeds/$t" "$fz/corpus/$t"
  if ! seeds "$t" "$fz/seeds/$t"; then
    failed="$failed $t"
    continue
  fi
  log=$fz/out/$t.log
  rm -f "$fz/out/$t"-crash-* "$fz/out/$t"-leak-* "$fz/out/$t"-timeout-* "$fz/out/$t"-oom-*
  # -timeout: an input running 10 s is a hang; -rss_limit_mb: 2 GiB (with
  # ASan's shadow) is runaway memory; no forks, one job: CI has 2 cores
  # trace: the whole stack of every allocation, so that the suppressions
  # see libhdf5's functions (it has no frame pointers)
  opts=${ASAN_OPTIONS:-}
  [ "$t" = trace ] && opts=${opts:+$opts:}fast_unwind_on_malloc=0
  ASAN_OPTIONS=$opts "$prog" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -dict="$SP_SRCDIR/tests/fuzz/$t.dict" -artifact_prefix="$fz/out/$t-" \
    "$fz/corpus/$t" "$fz/seeds/$t" >"$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
  if [ $rc -eq 0 ]; then
    printf 'fuzz-smoke: %-10s ok   %8s runs in %s s (%s)\n' "$t" "${execs:-?}" "$secs" "${cov:-cov: ?}"
  else
    why=$(known "$t")
    if [ -n "$why" ]; then
      knownfail="$knownfail $t"
      printf 'fuzz-smoke: %-10s FAILED, a known finding (%s) — not counted; the end of %s:\n' \
        "$t" "$why" "$log"
    else
      failed="$failed $t"
      printf 'fuzz-smoke: %-10s FAILED (exit %s); the end of %s:\n' "$t" "$rc" "$log"
    fi
    tail -n 60 "$log" | sed 's/^/  | /'
    for a in "$fz/out/$t"-*; do
      case $a in *.log) continue ;; esac
      [ -f "$a" ] || continue
      echo "  reproducer: $a"
      echo "  replay it:  $prog $a"
    done
  fi
done
if [ -n "$failed" ]; then
  echo "fuzz-smoke: FAILED:$failed (logs and reproducers in $fz/out/)"
  exit 1
fi
if [ -n "$knownfail" ]; then
  echo "fuzz-smoke: ${secs} s a target; no new finding; known findings (tests/fuzz/known-findings):$knownfail"
else
  echo "fuzz-smoke: all $# targets ran ${secs} s each without a finding"
fi
