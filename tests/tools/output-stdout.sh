#!/bin/sh
# What a command prints must arrive: with standard output on a full device
# (/dev/full), every subcommand that prints its result to stdout exits
# non-zero with "cannot write to standard output" on stderr — large outputs
# (which fail inside fputs / printf, leaving only the stream's error flag)
# and small ones (which fail when flushed) alike, --help and --version too.
SP_TEST_NAME=output-stdout
. "$SP_SRCDIR/tests/tools/cli-testlib.sh"
[ -w /dev/full ] || { echo "SKIP: no /dev/full"; exit 77; }
. "$SP_SRCDIR/tests/tools/output-table.sh"

# full WHAT ARGS…: exit non-zero, the message on stderr, no crash
full () {
  what=$1
  shift
  "$SHARDPLAN" "$@" >/dev/full 2>"$tmp/err"
  st=$?
  [ "$st" -ne 0 ] && [ "$st" -lt 128 ] || { fail "$what: exit $st with stdout on /dev/full"; return; }
  grep -q 'cannot write.* standard output' "$tmp/err" \
    || { fail "$what: exit $st, but stderr does not say so: $(head -c 300 "$tmp/err")"; return; }
  echo "ok: $what (exit $st)"
}
# the same command with stdout writable succeeds (the failure above is the
# device's, not the command's)
ok () {
  what=$1
  shift
  "$SHARDPLAN" "$@" >"$tmp/out" 2>"$tmp/err" \
    || { fail "$what: exit $? with stdout writable: $(cat "$tmp/err")"; return 1; }
  [ -s "$tmp/out" ] || { fail "$what: printed nothing on stdout"; return 1; }
}

while IFS='|' read -r what args; do
  [ -n "$what" ] || continue
  what=$(echo $what)
  # shellcheck disable=SC2086
  set -- $(command_line "$args" "" "$tmp/o" | sed "s|\bLOG\b|$LOG|g")
  ok "$what" "$@" && full "$what" "$@"
done <<ROWS
help              |--help
version           |--version
estimate-help     |estimate --help
info              |info
groups            |groups -t TOPO
estimate          |estimate -t TOPO -c all_reduce -b 8:1G
estimate-json     |estimate -t TOPO -c all_reduce -b 8:1G --format json
plan-text         |plan -m MODEL -t TOPO -s 4
plan-json         |plan -m MODEL -t TOPO -s 4 --format json
sim               |sim --plan PLAN -t TOPO
sweep             |sweep -m MODEL -t TOPO -n 1
trace-show        |trace show TRACE
trace-show-json   |trace show TRACE --format json
trace-export-csv  |trace export --format csv TRACE
import            |trace import-nccl-tests LOG --topology p3dn -o SIDE
compare           |compare CSIM CMEASURED
compare-csv       |compare CSIM CMEASURED --format csv
compare-json      |compare CSIM CMEASURED --format json
calibrate         |calibrate MEASURED -t p3dn -o OUT.ini
ROWS

# A closed pipe (`| head`): SIGPIPE ends the command as any filter
# (status 141), with nothing on stderr; where SIGPIPE is ignored, the write
# fails and the command says so with exit 1.  groups of 2^16 ranks prints
# ~1 MB, far more than a pipe holds once head has gone.
if env --default-signal=PIPE true 2>/dev/null && env --ignore-signal=PIPE true 2>/dev/null; then
  for mode in default ignore; do
    ( env --$mode-signal=PIPE "$SHARDPLAN" groups --world-size 65536 --shard-size 2 2>"$tmp/pipe-err"
      echo $? >"$tmp/pipe-st" ) | head -c 10 >/dev/null
    st=$(cat "$tmp/pipe-st")
    if [ $mode = default ]; then
      [ "$st" -eq 141 ] || fail "closed pipe: exit $st, expected 141 (SIGPIPE): $(cat "$tmp/pipe-err")"
      [ -s "$tmp/pipe-err" ] && fail "closed pipe: stderr: $(cat "$tmp/pipe-err")"
    else
      [ "$st" -eq 1 ] || fail "closed pipe, SIGPIPE ignored: exit $st, expected 1"
      grep -q "shardplan groups: cannot write to standard output" "$tmp/pipe-err" \
        || fail "closed pipe, SIGPIPE ignored: $(cat "$tmp/pipe-err")"
    fi
  done
fi
finish
