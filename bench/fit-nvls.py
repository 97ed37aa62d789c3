#!/usr/bin/env python3
"""bench/fit-nvls.py -- the fit behind sim/model.c's SP_NVLS_EFF and
SP_NVLS_CHUNK_US (sim/README-model.md section 4, the nvls row).

Reads `bench/fidelity --rows` (CSV on stdin) for every data file, keeps the
rows the model runs as NVLS, and grid-searches the two constants of

    T = L + S / (e * intra * K/(K+1)) + t_chunk * S / (C * chunk(S))

(L = NCCL's NVLS latency, 25 us; intra = NCCL's NVLink rate per GPU; K the
GPUs of the node or NVLink domain; C NCCL's nvlsChannels; chunk(S) NCCL's
NVLS chunk rule, its thresholds applied in order to the chunk as it
shrinks) for the lowest mean |T / measured - 1|, then prints the
per-dataset medians.  Usage:

  ./_build/bench/fidelity --rows --data bench/data/nccl-tests/dev.json \\
      --data bench/data/nccl-tests/nvl72.json | python3 bench/fit-nvls.py
"""
import csv
import statistics
import sys

# per dataset id prefix: (K, NCCL's NVLink GB/s per GPU, nvlsChannels)
SHAPES = [("h100_cluster01_1node_8gpu", (8, 450 * 20.6 / 25, 16)),
          ("h100_cluster01_1node_4gpu", (4, 450 * 20.6 / 25, 16)),
          ("coreweave_gb200_nvl72_18x4", (72, 900 * 40.1 / 50, 24)),
          ("oci_oke_gb200_2n", (8, 900 * 40.1 / 50, 24))]
LATENCY_US = 25.0


def shape(ds):
    for prefix, sh in SHAPES:
        if ds.startswith(prefix):
            return sh
    return None


def chunk(size, channels, heads):
    # src/enqueue.cc: each test against the chunk as already reduced
    c = 131072
    for factor, smaller in ((64, 65536), (8, 32768), (2, 16384)):
        if size < factor * channels * heads * c and c > smaller:
            c = smaller
    return c


def predict(row, eff, t_chunk):
    k, intra, channels = shape(row["dataset"])
    size = int(row["bytes"])
    bw = eff * intra * k / (k + 1) * 1000.0  # bytes per us
    return LATENCY_US + size / bw + t_chunk * size / (channels * chunk(size, channels, k))


def main():
    rows = [r for r in csv.DictReader(sys.stdin)
            if r["des_choice"] == "nvls/simple" and shape(r["dataset"])]
    if not rows:
        sys.exit("fit-nvls: no NVLS rows on stdin (see the usage)")
    best = None
    for e100 in range(60, 111):
        for t20 in range(0, 41):
            eff, t_chunk = e100 / 100, t20 / 20
            errs = [abs(predict(r, eff, t_chunk) / float(r["measured_us"]) - 1) for r in rows]
            mean = sum(errs) / len(errs)
            if best is None or mean < best[0]:
                best = (mean, eff, t_chunk)
    mean, eff, t_chunk = best
    print("%d NVLS rows: eff %.2f, %.2f us per chunk (mean |error| %.1f %%)"
          % (len(rows), eff, t_chunk, 100 * mean))
    for ds in sorted({r["dataset"] for r in rows}):
        e = [abs(predict(r, eff, t_chunk) / float(r["measured_us"]) - 1)
             for r in rows if r["dataset"] == ds]
        print("  %-40s %3d rows  median %.1f %%" % (ds, len(e), 100 * statistics.median(e)))


if __name__ == "__main__":
    main()
