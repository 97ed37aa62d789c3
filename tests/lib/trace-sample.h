/* tests/lib/trace-sample.h — a small, fully deterministic trace that the
 * trace tests, the CLI tests and the h5py script all read.
 *
 * 8 ranks on 2 nodes of 4 (preset cpu-shm), groups: shard size 4 (shard
 * groups {0-3} {4-7} = group_id 0, 1; replicate {0,4} {1,5} {2,6} {3,7} =
 * 2..5; world = 6), a plan of three ops, 2 timed iterations (1 warm-up),
 * so 3 × 2 × 8 = 48 rows:
 *   op 0 "L0.fwd.allgather"      all_gather     shard      8 MiB bf16, dur 100 µs
 *   op 1 "L0.bwd.reduce_scatter" reduce_scatter shard      8 MiB bf16 sum, 110 µs
 *   op 2 "step.allreduce"        all_reduce     replicate  2 MiB bf16 sum, 120 µs
 * Row (iter i, op o, rank r): t_start = i·1e6 + o·2e5 + r·10 ns, t_enqueue =
 * t_start − 500, dur = 1e5 + o·1e4, t_end = t_start + dur; status ok, flags
 * SP_TRACE_FLAG_CHECKED; nccl_est_ns = 9e4 + o·1e4 for ops 0 and 1, -1 for op 2.
 *
 * tests/fixtures/trace/sample-v1.0.h5 is this sample as the schema 1.0
 * writer wrote it (before nccl_est_ns), kept to check that 1.0 files read.
 */
#pragma once
#include "shardplan/shardplan.h"
#include "shardplan/trace.h"

#define SP_SAMPLE_RUN_ID "00000000-0000-4000-8000-000000000000"
#define SP_SAMPLE_CREATED "2026-01-01T00:00:00Z"
#define SP_SAMPLE_WORLD 8
#define SP_SAMPLE_ITERS 2
#define SP_SAMPLE_OPS 3
#define SP_SAMPLE_ROWS (SP_SAMPLE_OPS * SP_SAMPLE_ITERS * SP_SAMPLE_WORLD)

/* Write the sample trace to `path`.  `partial`: mark it partial. */
gboolean sp_sample_trace_write (const char *path, gboolean partial, GError **error);

/* An ok row of plan op `op_id` (`op`) on `rank`, iteration `iter`, from
 * t = 0 for `dur_ns`: the op's kind, dtype, redop, bytes and count, and
 * the rank's group of the op's family (no group for a family-less op). */
void sp_sample_op_row (SpTraceRow *row, const SpGroups *groups, guint32 op_id, const SpOp *op,
                       guint32 rank, gint32 iter, gint64 dur_ns);

/* Build the sample's groups / plan (free with the matching _free). */
SpGroups *sp_sample_groups (void);
SpPlan *sp_sample_plan (const SpGroups *groups);
