#!/usr/bin/env python3
"""Checks `shardplan trace export --format chakra` with Python's protobuf
(classes compiled by protoc from tools/chakra/et_def.proto): every node of
every rank's file has as duration_micros the mean duration the trace has for
that op on that rank — the rows of `shardplan trace export --format csv`,
timed iterations with status ok, (sum // count + 500) // 1000 — and
composites none; the receive half of a send / recv op (id = ops + op id)
has its op's.  A kernel the trace has no rows for (a measured run times
communication only) must have a modelled duration: > 0 when it has FLOPs.

usage: chakra_durations.py ET_PY_DIR PLAN.json PREFIX ROWS.csv
"""
import csv
import json
import sys

sys.path.insert(0, sys.argv[1])
import et_def_pb2 as et  # noqa: E402

COMPOSITES = {"hier_all_gather", "reduce_scatter_coalesced", "all_to_all_quant_reduce"}
KERNELS = {"compute", "quantize", "dequantize", "quant_reduce"}


def main():
    _, _, plan_path, prefix, rows_path = sys.argv
    plan = json.load(open(plan_path))
    ops = plan["ops"]
    acc = {}
    for row in csv.DictReader(open(rows_path)):
        if row["status"] != "ok" or int(row["iter"]) < 0:
            continue
        k = (int(row["rank"]), int(row["op_id"]))
        s, n = acc.get(k, (0, 0))
        acc[k] = (s + int(row["dur_ns"]), n + 1)
    checked = modelled = 0
    for r in range(plan["world_size"]):
        buf = open(f"{prefix}.{r}.et", "rb").read()
        pos, first = 0, True
        while pos < len(buf):
            n = shift = 0
            while True:
                b = buf[pos]
                pos += 1
                n |= (b & 0x7F) << shift
                shift += 7
                if not b & 0x80:
                    break
            msg = buf[pos:pos + n]
            pos += n
            if first:
                first = False
                continue
            node = et.Node()
            node.ParseFromString(msg)
            op_id = node.id if node.id < len(ops) else node.id - len(ops)
            op = ops[op_id]
            where = f"{prefix}.{r}.et: node {node.id}"
            if op["kind"] in COMPOSITES:
                assert node.duration_micros == 0, f"{where}: a composite has a duration"
                continue
            if (r, op_id) not in acc:
                assert op["kind"] in KERNELS, f"{where}: the trace has no row for op {op_id} on rank {r}"
                assert node.duration_micros > 0 or op["flops"] == 0, \
                    f"{where}: a kernel without rows and without a modelled duration"
                modelled += 1
                continue
            s, c = acc[(r, op_id)]
            want = (s // c + 500) // 1000
            assert node.duration_micros == want, \
                f"{where}: duration_micros {node.duration_micros}, the trace's mean {want}"
            checked += 1
    print(f"{checked} nodes: duration_micros = the trace's mean duration on that rank; "
          f"{modelled} kernels without rows: modelled")


if __name__ == "__main__":
    main()
