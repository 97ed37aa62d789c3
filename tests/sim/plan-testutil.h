/* tests/sim/plan-testutil.h — what the simulator tests share: a test
 * topology spec, and small plans built op by op (test_sim_plan.c,
 * test_sim_overlap.c, test_sim_des.c, test_sim_a2a.c). */
#pragma once
#include "testutil.h"
#include "shardplan/plan.h"
#include "shardplan/topo.h"

/* A test topology: `nodes` × `gpn` GPUs of `gpu`, the intra fabric and the
 * NICs given, NCCL's Ring/LL hop latencies (NVLink 0.6, otherwise 1.0; net
 * 2.7 µs), the transport's step floor, 80 GiB and 300 TFLOP/s per GPU. */
static inline SpTopoSpec
sp_test_spec (const char *gpu, guint32 nodes, guint32 gpn, SpIntraKind kind, double intra_gbs,
              guint32 nics, double nic_gbps, SpFabric fabric, double oversub)
{
  SpTopoSpec s = { 0 };
  g_strlcpy (s.name, "test", sizeof s.name);
  g_strlcpy (s.gpu_model, gpu, sizeof s.gpu_model);
  s.nodes = nodes;
  s.gpus_per_node = gpn;
  s.gpu_memory_gib = 80;
  s.gpu_tflops = 300;
  s.intra_kind = kind;
  s.intra_bandwidth_gbs = intra_gbs;
  s.intra_latency_us = kind == SP_INTRA_NVSWITCH || kind == SP_INTRA_NVLINK ? 0.6 : 1.0;
  s.nics_per_node = nics;
  s.nic_gbps = nic_gbps;
  s.inter_latency_us = 2.7;
  s.inter_step_floor_us = SP_TOPO_LATENCY_UNSET; /* the transport's */
  s.inter_inject_copy_us = SP_TOPO_LATENCY_UNSET;
  s.fabric = fabric;
  s.oversubscription = oversub;
  return s;
}

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
