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
