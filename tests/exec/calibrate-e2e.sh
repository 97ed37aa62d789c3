#!/bin/sh
# The simulated-vs-measured loop end to end on this machine (issue 6):
# the MPI backend runs a plan of fp32 all-reduces at 11 sizes (8 KiB ..
# 256 KiB, powers of two and the sizes half-way between them) on 4 ranks,
# 30 timed iterations -> measured trace -> `shardplan calibrate` against
# cpu-shm with the in-between sizes held out (size:=…: the calibration must
# predict sizes it did not see) -> `shardplan sim` with the calibrated file
# and with the plain preset -> `shardplan compare` of each against the
# measurement.
#
# Asserted: every step works and writes what it should; the calibrated
# simulation beats the uncalibrated one over all ops and on the held-out
# sizes; the calibrated one is within 25 % median |error| on the held-out
# sizes (issue 6); calibrate's own hold-out error equals the one compare
# computes from the traces.
#
# Noise: this runs 4 ranks on a 2-core CI machine.  Each op's time is the
# median over 30 iterations × 4 ranks (compare joins the one simulated
# iteration against every measured one), which keeps a preempted rank from
# moving it much.  If a number misses (calibrated not better than
# uncalibrated, or the held-out bound), the measurement is taken again (at
# most 3 attempts); every attempt's numbers, and a missed attempt's
# calibrate report and per-op comparison, are printed to the log.
# Observed on the development VM under a load average of 3.5 (2026-11-21,
# five runs): held-out median |error| 5.5-16 % calibrated, 44-70 %
# uncalibrated.
#
# Why all-reduce only: Open MPI's shared-memory all-gather and
# reduce-scatter are not the ring algorithms the model costs (measured on
# this machine, all-gather runs at ~0.3x the all-reduce time where a ring
# takes 0.5x), so one set of link parameters cannot fit every kind within
# 25 %; the model's error on a mix is what `shardplan compare` reports.
# Why 8-256 KiB: below 8 KiB Open MPI's all-reduce is another algorithm
# (~10 us at 512 B-2 KiB, ~30 us at 4 KiB), an upward step that a model
# which picks its fastest protocol cannot follow; above ~1 MiB one
# all-reduce spans scheduler ticks on an oversubscribed 2-core machine.
. "$SP_SRCDIR/tests/exec/exec-testlib.sh"

SIZES="8192 12288 16384 24576 32768 49152 65536 98304 131072 196608 262144"
HELD="12288,24576,49152,98304,196608"

# the plan: one fp32 sum all-reduce over the world per size
{
  printf '{"schema": "shardplan-plan", "schema_version": 1, "world_size": 4,\n'
  printf ' "groups": {"world_size": 4, "devices_per_node": 4},\n'
  printf ' "meta": {"created_by": "tests/exec/calibrate-e2e.sh"},\n "ops": [\n'
  id=0
  for b in $SIZES; do
    [ "$id" -gt 0 ] && printf ',\n'
    printf '  {"id": %d, "name": "all_reduce.%s", "kind": "all_reduce", ' "$id" "$b"
    printf '"family": "world", "bytes": %s, "dtype": "float32", "redop": "sum"}' "$b"
    id=$((id + 1))
  done
  printf '\n]}\n'
} >"$tmp/plan.json"

# sim TOPOLOGY NAME: simulate the plan, compare with the measurement -> cmp-NAME.csv
# (op_id,name,kind,family,bytes,size_band,samples,measured_ns,sim_ns,error)
sim_compare () {
  "$SHARDPLAN" sim --plan "$tmp/plan.json" --topology "$1" --sim-model analytic \
    -o "$tmp/sim-$2.h5" >/dev/null 2>"$tmp/sim.err" || { fail "sim ($2): $(cat "$tmp/sim.err")"; return 1; }
  "$SHARDPLAN" compare "$tmp/sim-$2.h5" "$tmp/measured.h5" --format csv >"$tmp/cmp-$2.csv" \
    2>"$tmp/cmp.err" || { fail "compare ($2): $(cat "$tmp/cmp.err")"; return 1; }
}

# median of the numbers on standard input
median () {
  sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan";
    else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# median |error| of a compare CSV over the ops whose size is (held = 1) or
# is not (held = 0) in $HELD
median_abs () {
  awk -F, -v held="$2" -v list="$HELD" 'BEGIN { n = split(list, h, ","); for (i = 1; i <= n; i++) H[h[i]] = 1 }
    NR > 1 && (($5 in H) == held) { e = $NF; if (e < 0) e = -e; print e }' "$1" | median
}

lt () { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }

for attempt in 1 2 3; do
  failures_before=$failures
  mpi 4 --plan "$tmp/plan.json" -o "$tmp/measured.h5" --iters 30 --warmup 5 --backend mpi \
    --topology cpu-shm --timeout 60
  [ "$status" -eq 0 ] || { fail "shardplan run: exit $status: $(cat "$tmp/err")"; finish; }
  rm -f "$tmp/calibrated.ini"
  "$SHARDPLAN" calibrate "$tmp/measured.h5" --topology cpu-shm --holdout "size:=$HELD" \
    -o "$tmp/calibrated.ini" --format json >"$tmp/report.json" 2>"$tmp/cal.err" \
    || { fail "calibrate: $(cat "$tmp/cal.err")"; finish; }
  grep -q '^\[calibration\]' "$tmp/calibrated.ini" || fail "no [calibration] section: $(cat "$tmp/calibrated.ini")"
  grep -q '^# Calibrated by shardplan calibrate' "$tmp/calibrated.ini" || fail "no comment block"
  sim_compare cpu-shm raw || finish
  sim_compare "$tmp/calibrated.ini" cal || finish
  [ "$(awk 'END { print NR - 1 }' "$tmp/cmp-cal.csv")" -eq 11 ] || fail "compare did not report the 11 ops"

  raw_fit=$(median_abs "$tmp/cmp-raw.csv" 0)
  cal_fit=$(median_abs "$tmp/cmp-cal.csv" 0)
  raw_held=$(median_abs "$tmp/cmp-raw.csv" 1)
  cal_held=$(median_abs "$tmp/cmp-cal.csv" 1)
  echo "attempt $attempt: median |error| on the fitted sizes $raw_fit uncalibrated, $cal_fit calibrated;" \
    "on the held-out sizes $raw_held uncalibrated, $cal_held calibrated"

  # calibrate's own hold-out numbers are the same join seen from the other
  # side (the same analytic model, the same per-op medians): they must agree
  rep_held=$(tr -d ' \n' <"$tmp/report.json" \
    | sed 's/.*"holdout":{"before":{[^}]*},"after":{"ops":[0-9]*,"median_abs_error":\([-0-9.e]*\).*/\1/')
  awk -v a="$rep_held" -v b="$cal_held" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < 1e-3) }' \
    || fail "calibrate reports $rep_held median |error| on the hold-out, compare $cal_held"
  [ "$failures" -eq "$failures_before" ] || finish
  # the numbers: on a machine this loaded a measurement can be off, so a
  # miss is measured again (the calibrate report goes to the log)
  ok=yes
  lt "$cal_fit" "$raw_fit" || { ok=no; echo "calibrated ($cal_fit) does not beat uncalibrated ($raw_fit) on the fitted sizes"; }
  lt "$cal_held" "$raw_held" || { ok=no; echo "calibrated ($cal_held) does not beat uncalibrated ($raw_held) on the held-out sizes"; }
  lt "$cal_held" 0.25 || { ok=no; echo "held-out sizes not within 25 % median |error| ($cal_held)"; }
  if [ "$ok" = yes ]; then
    echo "calibrated beats uncalibrated; held-out sizes within 25 % median |error| ($cal_held)"
    finish
  fi
  "$SHARDPLAN" calibrate "$tmp/measured.h5" --topology cpu-shm --holdout "size:=$HELD" \
    -o "$tmp/calibrated.ini"
  cat "$tmp/cmp-cal.csv"
  echo "measuring again"
done
fail "3 measurements in a row missed (see above)"
finish
