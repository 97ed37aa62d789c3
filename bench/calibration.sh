#!/bin/sh
# bench/calibration.sh — the "Calibration that fits" checks of issue 10 on
# the development set (bench/data/nccl-tests/dev.json):
#
#   a. `shardplan calibrate` on each core dataset alone: median
#      |simulated / measured - 1| on its own points (target <= 5 %);
#   b. calibrated on ALCF Polaris' 2- and 8-node runs, the other Polaris dev
#      runs are predicted no worse than uncalibrated;
#   c. calibrated on the H100 cluster's 1-node (8 GPUs) and 10-node x 1-GPU
#      runs, its 10-node x 8-GPU runs are predicted within 10 % (median):
#      c on all four collectives at once, c2 one collective at a time.
#
# Every dataset becomes a topology INI (its datasheet-only `topology_ini`)
# and an nccl-tests log (its timed out-of-place rows; rows without time_us
# or with time_derived are left out), imported with `shardplan trace
# import-nccl-tests`.  Errors before / after are scored the way the issue
# scores the simulator: `shardplan estimate --topology INI --collective C
# --bytes B [--ranks-per-node K] [--nodes N] --format json` per row against
# the row's time_us, median of |sim / measured - 1|.  The calibrate
# report's own figures are shown beside them.
#
# Runs that used fewer GPUs per node (K) than the topology has (G): the
# importer needs a topology whose world size is the log's rank count, and
# calibrate places a trace's ranks on the topology's first ranks, so such a
# run is imported and calibrated on a "sub-node" INI: gpus_per_node = K and
# nics_per_node scaled by K / G (the same per-GPU NIC share).  The script
# checks, row by row, that `estimate --ranks-per-node K` on the datasheet
# INI gives the same time as `estimate` on the sub-node INI.
#
# Usage: bench/calibration.sh [DEV.json]
# Environment: SHARDPLAN   the shardplan binary (default: _build/tools/shardplan
#                          of the source tree, else `shardplan` on PATH; a libtool
#                          wrapper is bypassed for the many estimate calls)
#              JOBS        estimate calls run at a time (default 2)
#              LOSS        calibrate's --loss (default least-squares; soft-l1, trimmed)
#              MODELS      forward models to run (default "analytic des")
#              KEEP        a directory to keep the work files in (default: a
#                          temporary directory, removed at the end)
# Nothing is written into the source tree.  Needs python3 (a test dependency).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
data=${1:-$here/data/nccl-tests/dev.json}
models=${MODELS:-analytic des}
loss=${LOSS:-least-squares}
if [ -z "${SHARDPLAN:-}" ]; then
  if [ -x "$top/_build/tools/shardplan" ]; then
    SHARDPLAN=$top/_build/tools/shardplan
  else
    SHARDPLAN=shardplan
  fi
fi
export SHARDPLAN

if [ -n "${KEEP:-}" ]; then
  work=$KEEP
  mkdir -p "$work"
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/sp-calibration.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  trap 'exit 130' INT TERM
fi

py=$work/calibration.py
cat >"$py" <<'PYEOF'
import json, math, os, re, shlex, statistics, subprocess, sys

SP = os.environ["SHARDPLAN"]
COLL = {"allreduce": "all_reduce", "allgather": "all_gather",
        "reducescatter": "reduce_scatter", "alltoall": "all_to_all"}
BINARY = {"allreduce": "all_reduce_perf", "allgather": "all_gather_perf",
          "reducescatter": "reduce_scatter_perf", "alltoall": "alltoall_perf"}


def load(path):
    return {d["id"]: d for d in json.load(open(path))}


def ini_int(text, key):
    m = re.search(r"^\s*%s\s*=\s*(\d+)" % key, text, re.M)
    return int(m.group(1)) if m else None


def ini_set(text, key, value):
    return re.sub(r"^(\s*%s\s*=\s*).*$" % key, lambda m: m.group(1) + str(value), text,
                  count=1, flags=re.M)


def timed(d):
    return [r for r in d["rows"] if r.get("time_us") is not None and not r.get("time_derived")]


def shape(d):
    ini = d["topology_ini"]
    return ini_int(ini, "nodes"), ini_int(ini, "gpus_per_node"), d.get("ranks_per_node") \
        or ini_int(ini, "gpus_per_node")


def sub_ini(d):
    """The INI a K-of-G-GPUs-per-node run is imported and calibrated on."""
    ini = d["topology_ini"]
    nodes, g, k = shape(d)
    if k == g:
        return ini, None
    nics = ini_int(ini, "nics_per_node") or 0
    ini = ini_set(ini, "gpus_per_node", k)
    note = "gpus_per_node %d -> %d" % (g, k)
    if nics:
        share = nics * k / g
        if share == int(share) and share >= 1:
            ini = ini_set(ini, "nics_per_node", int(share))
            note += ", nics_per_node %d -> %d" % (nics, int(share))
        else:  # keep the per-GPU bandwidth with one NIC
            m = re.search(r"^\s*nic_gbps\s*=\s*([0-9.]+)", ini, re.M)
            gbps = float(m.group(1)) * share
            ini = ini_set(ini_set(ini, "nics_per_node", 1), "nic_gbps", "%g" % gbps)
            note += ", nics_per_node %d -> 1 x %g Gb/s" % (nics, gbps)
    return ini, note


def log_text(d):
    nodes, g, k = shape(d)
    hw = d.get("hardware", {})
    gpu = hw.get("gpu", "GPU")
    rows = timed(d)
    out = ["# nccl-tests log written by bench/calibration.sh from dev.json entry %s" % d["id"],
           "# (timed out-of-place rows only; source: %s)" % json.dumps(d.get("source", {})),
           "# Collective test starting: %s" % BINARY[d["collective"]],
           "# nThread 1 nGpus 1 minBytes %d maxBytes %d step: 2(factor) warmup iters: 5 "
           "iters: 20 agg iters: 1 validation: 1 graph: 0"
           % (min(r["bytes"] for r in rows), max(r["bytes"] for r in rows)),
           "#", "# Using devices"]
    rank = 0
    for node in range(nodes):
        for dev in range(k):
            out.append("#  Rank %2d Group  0 Pid %7d on    node%03d device %2d [0x%02x] %s"
                       % (rank, 100000 + rank, node, dev, dev, gpu))
            rank += 1
    out += ["#",
            "#                                                              out-of-place",
            "#       size         count      type   redop    root     time   algbw   busbw #wrong",
            "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       "]
    redop = "sum" if d["collective"] in ("allreduce", "reducescatter") else "none"
    esize = {"int8": 1, "uint8": 1, "half": 2, "float16": 2, "bfloat16": 2, "float": 4,
             "float32": 4, "int32": 4, "double": 8, "float64": 8, "int64": 8}
    for r in rows:
        # nvl72.json's rows carry no count column: the size in elements
        count = r.get("count_per_rank_or_total_elems")
        if count is None:
            count = r["bytes"] // esize.get(r["dtype"], 4)
        out.append("%12d  %12d  %8s  %6s  %6d  %7s  %6.2f  %6.2f  %6d"
                   % (r["bytes"], count, r["dtype"], redop, -1,
                      repr(float(r["time_us"])), r.get("algbw") or 0, r.get("busbw") or 0, 0))
    out += ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 0", "#", "",
            "# Collective test concluded: %s" % BINARY[d["collective"]], ""]
    return "\n".join(out)


def cmd_prep(path, work):
    """<work>/<id>/{topo.ini,import.ini,log.txt}; prints 'id core sub' lines."""
    for i, d in load(path).items():
        os.makedirs(os.path.join(work, i), exist_ok=True)
        open(os.path.join(work, i, "topo.ini"), "w").write(d["topology_ini"])
        ini, note = sub_ini(d)
        open(os.path.join(work, i, "import.ini"), "w").write(ini)
        open(os.path.join(work, i, "log.txt"), "w").write(log_text(d))
        print(i, 1 if d.get("core", True) else 0, 1 if note else 0, note or "-")


CACHE = {}
CACHE_FILE = None


def cache_open(work):
    global CACHE_FILE
    CACHE_FILE = os.path.join(work, "estimates.json")
    if os.path.exists(CACHE_FILE):
        CACHE.update(json.load(open(CACHE_FILE)))


def cache_save():
    if CACHE_FILE:
        tmp = CACHE_FILE + ".tmp"
        json.dump(CACHE, open(tmp, "w"))
        os.replace(tmp, CACHE_FILE)


def direct_binary():
    """(program, env) that runs SHARDPLAN without its libtool wrapper script when it is
    one (a build tree's tools/shardplan): a few thousand estimate calls start faster."""
    env = dict(os.environ)
    try:
        head = open(SP, "rb").read(65536).decode("utf-8", "replace")
    except OSError:
        return SP, env
    if not head.startswith("#!") or "libtool" not in head:
        return SP, env
    real = os.path.join(os.path.dirname(SP), ".libs", os.path.basename(SP))
    m = re.search(r'LD_LIBRARY_PATH="([^"$]*):\$LD_LIBRARY_PATH"', head)
    if not os.access(real, os.X_OK) or not m:
        return SP, env
    env["LD_LIBRARY_PATH"] = m.group(1) + (":" + env["LD_LIBRARY_PATH"]
                                           if env.get("LD_LIBRARY_PATH") else "")
    return real, env


PROG, PROG_ENV = direct_binary()
JOBS = max(1, int(os.environ.get("JOBS", "2")))


def est_args(ini, coll, nbytes, model, k=None, nodes=None):
    a = ["estimate", "--topology", ini, "--collective", coll, "--bytes", str(nbytes),
         "--model", model, "--format", "json"]
    if k:
        a += ["--ranks-per-node", str(k)]
    if nodes:
        a += ["--nodes", str(nodes)]
    return a


def run_estimate(args):
    p = subprocess.run([PROG] + args, capture_output=True, text=True, env=PROG_ENV)
    if p.returncode != 0:
        e = p.stderr.strip().splitlines()
        return [None, e[-1] if e else "exit %d" % p.returncode]
    return [json.loads(p.stdout), None]


def prefetch(arglists):
    """Run the estimates not cached yet, JOBS at a time."""
    todo, seen = [], set()
    for a in arglists:
        key = " ".join(a)
        if key not in CACHE and key not in seen:
            seen.add(key)
            todo.append(a)
    if not todo:
        return
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(JOBS) as pool:
        for a, res in zip(todo, pool.map(run_estimate, todo)):
            CACHE[" ".join(a)] = res


def estimate(ini, coll, nbytes, model, k=None, nodes=None):
    """shardplan estimate ... --format json (memoised per run: INI files do not change)."""
    a = est_args(ini, coll, nbytes, model, k, nodes)
    key = " ".join(a)
    if key not in CACHE:
        CACHE[key] = run_estimate(a)
    return CACHE[key]


def score_args(d, ini, model, use_k=True, nodes=None):
    """The estimate calls score() makes."""
    n, g, k = shape(d)
    return [est_args(ini, COLL[d["collective"]], r["bytes"], model,
                     k if use_k and k != g else None, nodes) for r in timed(d)]


def score(d, ini, model, use_k=True, nodes=None):
    """Per-row errors of `estimate` on `ini` for dataset d: list of dicts."""
    n, g, k = shape(d)
    out = []
    for r in timed(d):
        j, err = estimate(ini, COLL[d["collective"]], r["bytes"], model,
                          k if use_k and k != g else None, nodes)
        if j is None:
            out.append({"bytes": r["bytes"], "measured": r["time_us"], "sim": None, "err": None,
                        "why": err})
            continue
        c = j.get("calibration")
        # the estimate's standard error from the calibration (log time), with the
        # fit's own scatter: sqrt(std_error^2 + residual_sd^2)
        sigma = None if c is None else float("inf") if isinstance(c["std_error"], str) \
            else (c["std_error"] ** 2 + c["residual_sd"] ** 2) ** 0.5
        out.append({"bytes": r["bytes"], "measured": r["time_us"], "sim": j["time_us"],
                    "err": j["time_us"] / r["time_us"] - 1, "algo": j.get("algorithm"),
                    "proto": j.get("protocol"), "sigma": sigma})
    return out


def med(errs):
    v = [abs(e["err"]) for e in errs if e["err"] is not None]
    return statistics.median(v) if v else float("nan")


def fails(errs):
    return [e for e in errs if e["err"] is None]


def pct(x):
    return "   n/a" if x != x else "%5.1f%%" % (100 * x)


def fmt_bytes(b):
    for unit, s in ((1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")):
        if b >= unit:
            return "%g%s" % (round(b / unit, 2), s)
    return "%d" % b


def cmd_score(path, work, spec):
    """spec: JSON {"label", "model", "cal": INI or null, "items": [{"id", "ini" (uncal.),
    "use_k", "nodes"}], "report": calibrate json or null, "threshold"}.
    Writes the row into <work>/summary.jsonl and prints the per-dataset table."""
    s = json.load(open(spec))
    ds = load(path)
    want = []
    for it in s["items"] + s.get("fit_items", []):
        d = ds[it["id"]]
        want += score_args(d, it["ini"], s["model"], it.get("use_k", True), it.get("nodes"))
        if s["cal"]:
            want += score_args(d, s["cal"], s["model"], it.get("cal_use_k", True),
                               it.get("nodes"))
    prefetch(want)
    before_all, after_all, lines, details = [], [], [], []
    for it in s["items"]:
        d = ds[it["id"]]
        b = score(d, it["ini"], s["model"], it.get("use_k", True), it.get("nodes"))
        a = score(d, s["cal"], s["model"], it.get("cal_use_k", True),
                  it.get("nodes")) if s["cal"] else []
        before_all += b
        after_all += a
        line = "    %-44s %3d pts  before %s  after %s" % (it["id"], len(b), pct(med(b)),
                                                            pct(med(a)) if a else "   n/a")
        lines.append(line)
        if s.get("detail"):
            details.append({"check": s["check"] + ".", "label": "  " + it["id"], "model": s["model"],
                            "points": len(b), "before": med(b), "after": med(a),
                            "target": "(detail)", "ok": bool(med(a) <= s["threshold"])})
        seen = set()
        for e in fails(b) + fails(a):
            if (e["bytes"], e["why"]) not in seen:
                seen.add((e["bytes"], e["why"]))
                lines.append("      ! %s B left out: estimate failed: %s" % (e["bytes"], e["why"]))
        if s.get("show_rows"):
            worst = sorted([x for x in a if x["err"] is not None], key=lambda x: -abs(x["err"]))
            bad = [x for x in worst if abs(x["err"]) > s["threshold"]]
            if bad:
                lines.append("      points over %s after: %s" % (
                    pct(s["threshold"]).strip(),
                    ", ".join("%s %+.0f%%" % (fmt_bytes(x["bytes"]), 100 * x["err"])
                              for x in sorted(bad, key=lambda x: x["bytes"]))))
    print("\n".join(lines))
    mb, ma = med(before_all), med(after_all)
    print("    %-44s %3d pts  before %s  after %s" % ("ALL", len(before_all), pct(mb), pct(ma)))
    # how honest the calibrated estimates' +- is on the points scored: the share
    # whose measured time lies within 1 and 2 sigma (a normal error: 68 %, 95 %)
    # points whose sigma is beyond a factor of 10 (the table's "x/>10", or
    # undetermined) are not determined by the calibration: counted apart, not as
    # "within"
    scored = [e for e in after_all if e["err"] is not None and e.get("sigma") is not None
              and e["err"] > -1]
    undet = [e for e in scored if not e["sigma"] <= math.log(10)]
    zs = [abs(math.log(1 + e["err"])) / e["sigma"] if e["sigma"] else float("inf")
          for e in scored if e["sigma"] <= math.log(10)]
    if scored:
        sig = statistics.median(e["sigma"] for e in scored)
        print("    estimate's +- (cal.): median sigma %s; measured within 1 sigma %d of %d, "
              "within 2 sigma %d of %d; not determined (sigma beyond x/10) %d"
              % ("%.3g" % sig if sig <= math.log(10) else ">ln 10", sum(z <= 1 for z in zs),
                 len(zs), sum(z <= 2 for z in zs), len(zs), len(undet)))
    # the fit set scored by estimate, to compare with calibrate's own figures
    fb, fa = [], []
    for it in s.get("fit_items", []):
        d = ds[it["id"]]
        fb += score(d, it["ini"], s["model"], it.get("use_k", True), it.get("nodes"))
        if s["cal"]:
            fa += score(d, s["cal"], s["model"], it.get("cal_use_k", True), it.get("nodes"))
    if s.get("fit_items"):
        print("    %-44s %3d pts  before %s  after %s" % ("fit set (estimate)", len(fb),
                                                        pct(med(fb)), pct(med(fa))))
    rep = s.get("report")
    if rep and os.path.exists(rep) and os.path.getsize(rep) > 0:
        r = json.load(open(rep))
        f = r["errors"]["fit"]
        print("    calibrate's report: fit set %d ops: %s -> %s; rms log error %.3f -> %.3f"
              % (f["before"]["ops"], pct(f["before"]["median_abs_error"]).strip(),
                 pct(f["after"]["median_abs_error"]).strip(), r["rms_log_error_before"],
                 r["rms_log_error_after"]))
        # (only where estimate scored every op calibrate fitted: the all-to-alls
        # below one element per peer, which estimate refuses, are in calibrate's set)
        if s.get("fit_items") and not fails(fb) \
                and abs(med(fb) - f["before"]["median_abs_error"]) > 0.005:
            print("    WARNING: calibrate's fit-set error before calibration (%s) is not estimate's"
                  " (%s) on the same runs: calibrate did not simulate the runs as they ran"
                  " (rank placement?); its fit is not a fit of these runs"
                  % (pct(f["before"]["median_abs_error"]).strip(), pct(med(fb)).strip()))
        def se(p):
            e = p.get("std_error")
            return "" if e is None else " (undetermined)" if isinstance(e, str) else " ±%.3g" % e
        moved = ["%s %.4g -> %.4g%s" % (p["name"], p["before"], p["after"], se(p))
                 for p in r["parameters"] if p["moved"]]
        kept = ["%s (%s)" % (p["name"], p["reason"] or "fitted, unchanged: the median guard or the fit kept it") for p in r["parameters"] if not p["moved"]]
        print("      moved: " + ("; ".join(moved) or "none"))
        corr = ["%s ~ %s %+.2f" % (c["a"], c["b"], c["r"]) for c in r.get("correlations", [])
                if abs(c["r"]) >= 0.95]
        if corr:
            print("      correlated: " + "; ".join(corr))
        print("      kept:  " + ("; ".join(kept) or "none"))
    ok = ma == ma and ma <= s["threshold"] if s.get("kind") != "no-worse" else \
        (ma == ma and mb == mb and ma <= mb)
    with open(os.path.join(work, "summary.jsonl"), "a") as out:
        out.write(json.dumps({"check": s["check"], "label": s["label"], "model": s["model"],
                              "points": len(before_all), "before": mb, "after": ma,
                              "target": s["target"], "ok": bool(ok)}) + "\n")
        for r in details:
            out.write(json.dumps(r) + "\n")


def cmd_same(path, work, ident, model):
    """estimate -k K on the datasheet INI == estimate on the sub-node INI?"""
    d = load(path)[ident]
    prefetch(score_args(d, os.path.join(work, ident, "topo.ini"), model, True)
             + score_args(d, os.path.join(work, ident, "import.ini"), model, False))
    a = score(d, os.path.join(work, ident, "topo.ini"), model, True)
    b = score(d, os.path.join(work, ident, "import.ini"), model, False)
    worst = max([abs(x["sim"] / y["sim"] - 1) for x, y in zip(a, b)
                 if x["sim"] and y["sim"]] or [0])
    print("%.2g" % worst)


def cmd_summary(work):
    rows = [json.loads(l) for l in open(os.path.join(work, "summary.jsonl"))]
    models = []
    for r in rows:
        if r["model"] not in models:
            models.append(r["model"])
    groups = {}
    for r in rows:
        groups.setdefault((r["check"], r["label"]), {})[r["model"]] = r
    head = "%-5s %-46s %4s" % ("check", "calibrated on -> scored on", "pts")
    for m in models:
        head += "  %-17s" % (m + " before->after")
    print(head + "  %-16s %s" % ("target", "status"))
    for (check, label), by in groups.items():
        r0 = next(iter(by.values()))
        line = "%-5s %-46s %4d" % (check, label[:46], r0["points"])
        for m in models:
            r = by.get(m)
            line += "  %-17s" % ("%s -> %s" % (pct(r["before"]).strip(), pct(r["after"]).strip())
                                 if r else "-")
        oks = [r["ok"] for r in by.values()]
        status = "-" if r0["target"] == "(reference)" else \
            ", ".join("%s %s" % (m, "within" if by[m]["ok"] else "OVER") for m in models
                      if m in by) if r0["target"] == "(detail)" else \
            "ok" if all(oks) else "FAIL" if not any(oks) else "FAIL (" + ", ".join(
                m for m in models if m in by and not by[m]["ok"]) + ")"
        print(line + "  %-16s %s" % (r0["target"], status))
    for check in sorted(set(c for c, _ in groups)):
        for m in models:
            rs = [r for (c, _), by in groups.items() if c == check for mm, r in by.items()
                  if mm == m and r["target"] not in ("(reference)", "(detail)")]
            if rs:
                print("check %s, %s: %d of %d pass" % (check, m, sum(r["ok"] for r in rs),
                                                       len(rs)))


if __name__ == "__main__":
    c = sys.argv[1]
    if c in ("score", "same"):
        cache_open(sys.argv[3])
    if c == "prep":
        cmd_prep(sys.argv[2], sys.argv[3])
    elif c == "score":
        cmd_score(sys.argv[2], sys.argv[3], sys.argv[4])
    elif c == "same":
        cmd_same(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
    elif c == "summary":
        cmd_summary(sys.argv[2])
    cache_save()
PYEOF

say () { printf '%s\n' "$*"; }
run () {  # run OUT ERR CMD...: print CMD ($W: the work dir), run it, stdout to OUT, stderr to ERR
  run_out=$1 run_err=$2
  shift 2
  say "  \$ $*" | sed "s|$work/|\$W/|g; s|$SHARDPLAN|shardplan|g"
  "$@" >"$run_out" 2>"$run_err"
}

say "shardplan: $SHARDPLAN"
say "data:      $data"
say "work dir:  \$W = $work"
say "models:    $models; calibrate --loss $loss"
say ""

# ---- 1. topology INIs and nccl-tests logs, imported as measured traces
say "== 1. import: one nccl-tests log and topology per dataset"
python3 "$py" prep "$data" "$work" >"$work/datasets.txt"
: >"$work/summary.jsonl"
while read -r id core sub note; do
  if "$SHARDPLAN" trace import-nccl-tests "$work/$id/log.txt" --topology "$work/$id/import.ini" \
       -o "$work/$id/m.h5" >"$work/$id/import.out" 2>"$work/$id/import.err"; then
    status=ok
  else
    status="FAILED: $(tail -n 1 "$work/$id/import.err")"
  fi
  nwarn=$(grep -c 'warning' "$work/$id/import.err" || true)
  extra=""
  [ "$sub" = 1 ] && extra=" [sub-node INI: $note]"
  say "  $id: $status${extra}$( [ "$nwarn" -gt 0 ] && echo " ($nwarn importer warnings, see \$W/$id/import.err)")"
done <"$work/datasets.txt"
say "  command, per dataset:"
say "  \$ shardplan trace import-nccl-tests \$W/ID/log.txt --topology \$W/ID/import.ini -o \$W/ID/m.h5"
say "  (\$W/ID/import.ini is the dataset's topology_ini, or its sub-node form for runs on"
say "   fewer GPUs per node than the node has; see the comment at the top of this script)"
say ""

# sub-node equivalence: estimate -k K on the datasheet INI vs the sub-node INI
say "  check: estimate --ranks-per-node K on the datasheet INI vs estimate on the sub-node INI"
say "  (every timed row of one dataset per node count and K)"
shapes=""
while read -r id core sub note; do
  [ "$sub" = 1 ] || continue
  # one dataset per shape (nodes, K): the collective does not change the topology
  shp=$(echo "$id" | sed 's/_[a-z]*$//')
  case " $shapes " in *" $shp "*) continue;; esac
  shapes="$shapes $shp"
  m=${models%% *}
  w=$(python3 "$py" same "$data" "$work" "$id" "$m")
  say "    $id ($m): largest relative difference $w"
done <"$work/datasets.txt"
say ""

# spec writer: spec FILE CHECK KIND TARGET THRESHOLD LABEL MODEL CAL REPORT ITEMS... [-- FIT_ITEMS...]
#   ITEMS: ID:INI:USE_K:NODES[:CAL_USE_K] (INI: the uncalibrated one; USE_K: pass
#   --ranks-per-node K for runs on K < G GPUs per node; CAL_USE_K: the same with the
#   calibrated INI, false when that is a sub-node INI).  FIT_ITEMS: the runs the
#   calibration was fitted on, scored the same way (compared with calibrate's report)
spec () {
  f=$1 chk=$2 kind=$3 target=$4 thr=$5 label=$6 model=$7 cal=$8 rep=$9
  shift 9
  {
    printf '{"check": "%s", "kind": "%s", "target": "%s", "threshold": %s, "label": "%s",' \
      "$chk" "$kind" "$target" "$thr" "$label"
    printf ' "model": "%s", "cal": %s, "report": "%s", "show_rows": true, "detail": %s,' \
      "$model" "$( [ -n "$cal" ] && printf '"%s"' "$cal" || echo null)" "$rep" "$DETAIL"
    printf ' "items": [' 
    sep=""
    for it in "$@"; do
      if [ "$it" = -- ]; then printf '], "fit_items": ['; sep=""; continue; fi
      iid=${it%%:*}; r=${it#*:}; iini=${r%%:*}; r=${r#*:}; usek=${r%%:*}; r=${r#*:}
      nn=${r%%:*}; calk=true
      case $r in *:*) calk=${r#*:};; esac
      printf '%s{"id": "%s", "ini": "%s", "use_k": %s, "cal_use_k": %s, "nodes": %s}' "$sep" \
        "$iid" "$iini" "$usek" "$calk" "${nn:-null}"
      sep=", "
    done
    printf ']}\n'
  } >"$f"
}

DETAIL=false  # spec: one summary row per dataset too

# ---- 2a. each core dataset alone
say "== 2a. calibrate on each core dataset alone; median error on its own points (target <= 5 %)"
for m in $models; do
  say "  -- model $m"
  while read -r id core sub note; do
    [ "$core" = 1 ] || continue
    [ -s "$work/$id/m.h5" ] || { say "    $id: no trace (import failed)"; continue; }
    cal=$work/$id/cal-$m.ini
    run "$work/$id/cal-$m.json" "$work/$id/cal-$m.err" \
      "$SHARDPLAN" calibrate "$work/$id/m.h5" --topology "$work/$id/import.ini" --sim-model "$m" \
      --loss "$loss" -o "$cal" --format json || { say "    calibrate FAILED: $(tail -n 1 "$work/$id/cal-$m.err")"; rm -f "$cal"; }
    # scored on the INI it was calibrated on (the sub-node form when K < G)
    spec "$work/spec.json" a bound "<= 5 %" 0.05 "$id" "$m" "$( [ -s "$cal" ] && echo "$cal")" \
      "$work/$id/cal-$m.json" "$id:$work/$id/topo.ini:true::false"
    python3 "$py" score "$data" "$work" "$work/spec.json"
  done <"$work/datasets.txt"
done
say ""

# ---- 2b. Polaris
# dev.json has Polaris runs on 2 and 8 nodes only, of all_reduce, all_gather and
# all_to_all.  "Its other dev runs" are therefore read two ways:
#   b1: leave one collective out: calibrated on the 2- and 8-node runs of the two
#       other collectives, predict the held-out collective's 2- and 8-node runs;
#   b2: node count: calibrated on the 2-node runs (all collectives), predict the
#       8-node runs (the dev-set analogue of "2 and 8 nodes -> 128-540 nodes");
#   b0: all six together, scored on themselves (for reference).
# One topology for all: polaris_a100_8node_*'s INI (2-node traces sit on its
# first 2 nodes); predictions of 2-node runs use --nodes 2.
say "== 2b. Polaris: calibrated on 2- and 8-node runs, predict the others (target: no worse)"
pol=$(grep '^polaris_' "$work/datasets.txt" | awk '$2 == 1 {print $1}')
pini=$work/polaris.ini
for id in $pol; do case $id in *8node*) cp "$work/$id/topo.ini" "$pini"; break;; esac; done
pitem () { case $1 in *2node*) echo "$1:$pini:true:2";; *) echo "$1:$pini:true:";; esac; }
for m in $models; do
  say "  -- model $m"
  for c in allreduce allgather alltoall; do
    fit="" items="" fitems=""
    for id in $pol; do
      case $id in
        *_$c) items="$items $(pitem "$id")";;
        *) fit="$fit $work/$id/m.h5" fitems="$fitems $(pitem "$id")";;
      esac
    done
    [ -n "$items" ] || continue
    cal=$work/pol-no-$c-$m.ini
    # shellcheck disable=SC2086
    run "$work/pol-no-$c-$m.json" "$work/pol-no-$c-$m.err" \
      "$SHARDPLAN" calibrate $fit --topology "$pini" --sim-model "$m" --loss "$loss" -o "$cal" --format json \
      || { say "    calibrate FAILED: $(tail -n 1 "$work/pol-no-$c-$m.err")"; rm -f "$cal"; }
    # shellcheck disable=SC2086
    spec "$work/spec.json" b1 no-worse "<= uncalibrated" 0.10 "polaris other colls -> $c" "$m" \
      "$( [ -s "$cal" ] && echo "$cal")" "$work/pol-no-$c-$m.json" $items
    python3 "$py" score "$data" "$work" "$work/spec.json"
  done
  fit="" items="" fitems=""
  for id in $pol; do
    case $id in
      *2node*) fit="$fit $work/$id/m.h5" fitems="$fitems $(pitem "$id")";;
      *) items="$items $(pitem "$id")";;
    esac
  done
  cal=$work/pol-2node-$m.ini
  # shellcheck disable=SC2086
  run "$work/pol-2node-$m.json" "$work/pol-2node-$m.err" \
    "$SHARDPLAN" calibrate $fit --topology "$pini" --sim-model "$m" --loss "$loss" -o "$cal" --format json \
    || { say "    calibrate FAILED: $(tail -n 1 "$work/pol-2node-$m.err")"; rm -f "$cal"; }
  # shellcheck disable=SC2086
  spec "$work/spec.json" b2 no-worse "<= uncalibrated" 0.10 "polaris 2-node -> 8-node" "$m" \
    "$( [ -s "$cal" ] && echo "$cal")" "$work/pol-2node-$m.json" $items
  python3 "$py" score "$data" "$work" "$work/spec.json"
  fit="" items=""
  for id in $pol; do fit="$fit $work/$id/m.h5"; items="$items $(pitem "$id")"; done
  cal=$work/pol-all-$m.ini
  # shellcheck disable=SC2086
  run "$work/pol-all-$m.json" "$work/pol-all-$m.err" \
    "$SHARDPLAN" calibrate $fit --topology "$pini" --sim-model "$m" --loss "$loss" -o "$cal" --format json \
    || { say "    calibrate FAILED: $(tail -n 1 "$work/pol-all-$m.err")"; rm -f "$cal"; }
  # shellcheck disable=SC2086
  spec "$work/spec.json" b0 bound "(reference)" 0.10 "polaris all 6 -> themselves" "$m" \
    "$( [ -s "$cal" ] && echo "$cal")" "$work/pol-all-$m.json" $items -- $items
  python3 "$py" score "$data" "$work" "$work/spec.json"
done
say ""

# ---- 2c. H100 cluster: 1 node x 8 + 10 nodes x 1 -> 10 nodes x 8
say "== 2c. H100 cluster: calibrated on 1 node x 8 GPUs and 10 nodes x 1 GPU, predict 10 nodes x 8 GPUs (target <= 10 %)"
hini=$work/h100-10x8.ini
h8=$(awk '$2 == 1 && $1 ~ /^h100_cluster01_10node_8gpn_/ {print $1}' "$work/datasets.txt")
for id in $h8; do cp "$work/$id/topo.ini" "$hini"; break; done
fit="" fitems=""
for id in $(awk '$2 == 1 && ($1 ~ /^h100_cluster01_1node_8gpu_/ || $1 ~ /^h100_cluster01_10node_1gpn_/) {print $1}' "$work/datasets.txt"); do
  fit="$fit $work/$id/m.h5"
  case $id in *_1node_*) fitems="$fitems $id:$hini:true:1";; *) fitems="$fitems $id:$hini:true:";; esac
done
items=""
for id in $h8; do items="$items $id:$hini:true:"; done
for m in $models; do
  say "  -- model $m"
  cal=$work/h100-$m.ini
  # shellcheck disable=SC2086
  run "$work/h100-$m.json" "$work/h100-$m.err" \
    "$SHARDPLAN" calibrate $fit --topology "$hini" --sim-model "$m" --loss "$loss" -o "$cal" --format json \
    || { say "    calibrate FAILED: $(tail -n 1 "$work/h100-$m.err")"; rm -f "$cal"; }
  DETAIL=true
  # shellcheck disable=SC2086
  spec "$work/spec.json" c bound "<= 10 %" 0.10 "h100 1x8 + 10x1 -> 10x8" "$m" \
    "$( [ -s "$cal" ] && echo "$cal")" "$work/h100-$m.json" $items -- $fitems
  DETAIL=false
  python3 "$py" score "$data" "$work" "$work/spec.json"
  # c2: the same, one collective at a time
  for c in allreduce allgather reducescatter alltoall; do
    one=h100_cluster01_1node_8gpu_$c ten=h100_cluster01_10node_1gpn_$c
    tgt=h100_cluster01_10node_8gpn_$c
    [ -s "$work/$one/m.h5" ] && [ -s "$work/$ten/m.h5" ] && [ -d "$work/$tgt" ] || continue
    cal=$work/h100-$c-$m.ini
    run "$work/h100-$c-$m.json" "$work/h100-$c-$m.err" \
      "$SHARDPLAN" calibrate "$work/$one/m.h5" "$work/$ten/m.h5" --topology "$hini" --sim-model "$m" \
      --loss "$loss" -o "$cal" --format json \
      || { say "    calibrate FAILED: $(tail -n 1 "$work/h100-$c-$m.err")"; rm -f "$cal"; }
    spec "$work/spec.json" c2 bound "<= 10 %" 0.10 "h100 1x8 + 10x1 -> 10x8, $c only" "$m" \
      "$( [ -s "$cal" ] && echo "$cal")" "$work/h100-$c-$m.json" "$tgt:$hini:true:" -- \
      "$one:$hini:true:1" "$ten:$hini:true:"
    python3 "$py" score "$data" "$work" "$work/spec.json"
  done
done
say ""

say "== summary (median |simulated / measured - 1|; before = datasheet INI, after = calibrated)"
python3 "$py" summary "$work"
