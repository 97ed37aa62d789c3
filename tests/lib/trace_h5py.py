"""Read the sample trace (tests/lib/trace-sample.h) as a user would, with
h5py and pandas, and check its columns and values against the numbers the
sample is defined with.  Usage: trace_h5py.py TRACE.h5

trace_h5py.py --future IN.h5 OUT.h5 writes OUT as a later minor version
would: schema_version 1.4 and an extra trailing /ops/ops field, so the
shell test can check that this version's reader still reads it."""
import json
import shutil
import sys

import h5py
import numpy as np
import pandas as pd

if sys.argv[1] == "--future":
    shutil.copy(sys.argv[2], sys.argv[3])
    with h5py.File(sys.argv[3], "r+") as f:
        old = f["ops/ops"][:]
        # keep the enum types: take each field's dtype object, metadata included
        dt = np.dtype([(n, old.dtype.fields[n][0]) for n in old.dtype.names]
                      + [("future_ns", "<i8")])
        new = np.zeros(len(old), dtype=dt)
        for n in old.dtype.names:
            new[n] = old[n]
        new["future_ns"] = 12345
        del f["ops/ops"]
        f.create_dataset("ops/ops", data=new, maxshape=(None,), chunks=True)
        f.attrs["schema_version"] = "1.4"
        assert h5py.check_enum_dtype(f["ops/ops"].dtype["coll"]) is not None
    sys.exit(0)

COLUMNS = ["op_id", "parent_op_id", "iter", "rank", "group_id", "group_rank", "group_size",
           "seq_in_group", "coll", "dtype", "redop", "flags", "status", "count", "bytes",
           "t_enqueue_ns", "t_start_ns", "t_end_ns", "dur_ns", "algbw_gbs", "busbw_gbs",
           "nccl_est_ns"]

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


with h5py.File(sys.argv[1], "r") as f:
    attrs = f.attrs
    check(attrs["schema"] == "shardplan-trace", "schema attr: %r" % attrs["schema"])
    check(attrs["schema_version"] == "1.3", "schema_version: %r" % attrs["schema_version"])
    check(attrs.get("check_policy") == "after", "check_policy: %r" % attrs.get("check_policy"))
    check(attrs["source"] == "measured", "source")
    check(attrs["time_unit"] == "ns", "time_unit")
    check(int(attrs["iters"]) == 2 and int(attrs["world_size"]) == 8, "iters/world_size")
    check(int(attrs["complete"]) == 1, "complete")

    ops = f["ops/ops"]
    check(ops.maxshape == (None,), "ops not unlimited: %r" % (ops.maxshape,))
    check(ops.compression == "gzip" and ops.shuffle, "ops not shuffled+deflated")
    coll_enum = h5py.check_enum_dtype(ops.dtype["coll"])
    check(coll_enum is not None and coll_enum["all_gather"] == 2
          and coll_enum["reduce_scatter"] == 7, "coll enum: %r" % coll_enum)
    status_enum = h5py.check_enum_dtype(ops.dtype["status"])
    check(status_enum == {"ok": 0, "wrong": 1, "timeout": 2, "error": 3, "not_run": 4},
          "status enum: %r" % status_enum)

    df = pd.DataFrame(ops[:])
    check(list(df.columns) == COLUMNS, "columns: %r" % list(df.columns))
    check(len(df) == 48, "rows: %d" % len(df))
    check(df.set_index(["op_id", "iter", "rank"]).index.is_unique, "(op_id, iter, rank) not unique")
    # Row iter 1, op 0, rank 5 (see trace-sample.h).
    r = df[(df.op_id == 0) & (df.iter == 1) & (df["rank"] == 5)].iloc[0]
    check(int(r.t_start_ns) == 1000050 and int(r.t_end_ns) == 1100050, "times of (0,1,5)")
    check(int(r.group_id) == 1 and int(r.group_rank) == 1 and int(r.group_size) == 4, "group")
    check(abs(float(r.algbw_gbs) - 83.88608) < 1e-9, "algbw %r" % r.algbw_gbs)
    check(abs(float(r.busbw_gbs) - 62.91456) < 1e-9, "busbw %r" % r.busbw_gbs)
    check(int(r.coll) == coll_enum["all_gather"], "coll value")
    # Totals per op kind: 16 rows each; 8 MiB, 8 MiB, 2 MiB per row.
    by = df.groupby("coll").agg(rows=("bytes", "size"), bytes=("bytes", "sum"),
                                dur=("dur_ns", "sum"))
    check(by.loc[coll_enum["all_gather"]].tolist() == [16, 16 * 8388608, 16 * 100000], "ag totals")
    check(by.loc[coll_enum["all_reduce"]].tolist() == [16, 16 * 2097152, 16 * 120000], "ar totals")
    check((df.dur_ns == df.t_end_ns - df.t_start_ns).all(), "dur != end - start")
    # nccl_est_ns (schema 1.1): 90 µs, 100 µs for ops 0, 1; -1 (none) for op 2.
    check(df.nccl_est_ns.dtype == np.int64, "nccl_est_ns dtype %r" % df.nccl_est_ns.dtype)
    est = df.groupby("op_id").nccl_est_ns.agg(["min", "max"])
    check(est.values.tolist() == [[90000, 90000], [100000, 100000], [-1, -1]],
          "nccl_est_ns per op %r" % est.values.tolist())

    # Groups (CSR) and the plan text.
    groups = pd.DataFrame(f["groups/groups"][:])
    members = f["groups/members"][:]
    g4 = groups.iloc[4]
    off, n = int(g4.members_offset), int(g4.members_count)
    check(members[off:off + n].tolist() == [2, 6], "members of group 4")
    fams = {int(row["family_id"]): row["name"].decode() for row in f["groups/families"][:]}
    check(fams == {0: "shard", 1: "replicate", 11: "world"}, "families %r" % fams)
    plan = json.loads(f["meta/plan"][()])
    check([op["name"] for op in plan["ops"]] ==
          ["L0.fwd.allgather", "L0.bwd.reduce_scatter", "step.allreduce"], "plan names")
    check(len(f["meta/plan"].attrs["digest"]) == 64, "plan digest")
    env = {k.decode(): v.decode() for k, v in f["meta/env"][:]}
    check(env == {"NCCL_DEBUG": "WARN", "OMPI_COMM_WORLD_SIZE": "8"}, "env %r" % env)
    ranks = pd.DataFrame(f["meta/cluster/ranks"][:])
    check(ranks.node_id.tolist() == [0, 0, 0, 0, 1, 1, 1, 1], "rank nodes")
    check(f["meta/software"].attrs["mpi"] == "test-mpi 1.0", "software mpi")

if failures:
    for what in failures:
        print("FAIL:", what)
    sys.exit(1)
print("h5py/pandas view of the trace: all checks passed")
