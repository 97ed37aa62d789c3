/* tests/sim/plan-testutil.h — building small plans op by op in the plan
 * simulation tests (test_sim_plan.c, test_sim_overlap.c). */
#pragma once
#include "testutil.h"
#include "shardplan/plan.h"

/* Add one op to `p` and return its id: bf16 payload of `bytes` (none when
 * 0), sum for all_reduce / reduce_scatter, the given stream, FLOPs,
 * dependencies, parent (-1: none) and algorithm hint. */
static inline guint32
sp_test_plan_add (SpPlan *p, SpColl kind, SpFamily fam, guint64 bytes, guint32 stream,
                  guint64 flops, const guint32 *deps, guint32 n_deps, gint64 parent, SpAlgo algo)
{
  SpOp op = { 0 };
  op.parent = parent;
  op.name = "op";
  op.layer = -1;
  op.kind = kind;
  op.family = fam;
  op.bytes = bytes;
  op.dtype = bytes ? SP_DTYPE_BFLOAT16 : SP_DTYPE_NONE;
  op.count = bytes / 2;
  op.redop = kind == SP_COLL_ALL_REDUCE || kind == SP_COLL_REDUCE_SCATTER ? SP_REDOP_SUM
                                                                           : SP_REDOP_NONE;
  op.algorithm = algo;
  op.stream = stream;
  op.flops = flops;
  op.deps = deps;
  op.n_deps = n_deps;
  guint32 id;
  GError *error = NULL;
  ck_assert (sp_plan_add_op (p, &op, &id, &error));
  SP_ASSERT_NO_ERROR (error);
  return id;
}
