/* tests/exec/make-plan.c — writes the executor's test plans with the plan
 * API (so they always follow plan.h's current rules):
 *
 *   make-plan all OUT.json     4 ranks, 2 devices per node: every family but
 *                              replicate (shard = world, hierarchical), every
 *                              op kind (p2p too), both composites run for real (qgZ with
 *                              G = 64 groups of 64), deps and two streams.
 *   make-plan replicate OUT    4 ranks, shard 2: the shard and replicate
 *                              families, reduce_scatter_coalesced with padding.
 *   make-plan sim OUT.json     the all plan without the kinds `shardplan sim`
 *                              does not simulate (barrier,
 *                              reduce_scatter_block): both the executor and
 *                              the simulator run it.
 *   make-plan one OUT.json     1 rank: the NCCL backend's one-rank test.
 *   make-plan bench OUT BYTES… 4 ranks: one all_reduce, all_gather and
 *                              reduce_scatter (fp32, world) per size.
 */
#include "config.h"
#include "shardplan/shardplan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static SpPlan *plan;
static gboolean sim_only; /* leave out what sim does not simulate */

static guint32
add_op (const SpOp *op)
{
  guint32 id;
  GError *e = NULL;
  if (!sp_plan_add_op (plan, op, &id, &e))
    {
      fprintf (stderr, "make-plan: %s\n", e->message);
      exit (1);
    }
  return id;
}

static guint32
add (const char *name, SpColl kind, SpFamily fam, SpDtype dt, guint64 count, SpRedop redop,
     guint32 stream, gint64 parent, guint64 flops, guint32 n_deps, const guint32 *deps)
{
  guint bits = sp_dtype_bits (dt);
  if (sim_only && (kind == SP_COLL_BARRIER || kind == SP_COLL_REDUCE_SCATTER_BLOCK))
    return G_MAXUINT32; /* nothing depends on these */
  SpOp op = { .parent = parent, .name = name, .layer = 0, .phase = SP_PHASE_BACKWARD, .kind = kind,
              .family = fam, .bytes = bits ? count * bits / 8 : 0, .count = count, .dtype = dt,
              .redop = redop, .algorithm = SP_ALGO_AUTO, .stream = stream, .flops = flops,
              .n_deps = n_deps, .deps = deps };
  return add_op (&op);
}

/* A p2p op: group rank src sends `count` floats to group rank dst. */
static guint32
add_p2p (const char *name, SpFamily fam, guint32 src, guint32 dst, guint64 count, guint32 stream,
         guint32 n_deps, const guint32 *deps)
{
  SpOp op = { .parent = -1, .name = name, .layer = 0, .phase = SP_PHASE_FORWARD,
              .kind = SP_COLL_P2P, .family = fam, .bytes = count * 4, .count = count,
              .dtype = SP_DTYPE_FLOAT32, .redop = SP_REDOP_NONE, .algorithm = SP_ALGO_AUTO,
              .stream = stream, .n_deps = n_deps, .deps = deps, .src = src, .dst = dst };
  return add_op (&op);
}

#define N SP_REDOP_NONE
#define S SP_REDOP_SUM

static void
plan_all (void)
{
  SpGroupsOptions o;
  sp_groups_options_init (&o);
  o.world_size = 4;
  o.devices_per_node = 2;
  o.shard_size = 4;
  o.hierarchical = TRUE;
  o.tensor_parallel = 2;
  o.expert_parallel = 2;
  o.zero_param_group_size = 2;
  o.local_all_to_all = TRUE;
  plan = sp_plan_new (&o);
  sp_plan_set_meta (plan, "created_by", "tests/exec/make-plan all");
  guint32 a = add ("ag.shard", SP_COLL_ALL_GATHER, SP_FAMILY_SHARD, SP_DTYPE_BFLOAT16, 8192, N, 1, -1, 0, 0, NULL);
  guint32 h = add ("ag.hier", SP_COLL_HIER_ALL_GATHER, SP_FAMILY_SHARD, SP_DTYPE_BFLOAT16, 8192, N, 1, -1, 0, 1, &a);
  guint32 hi = add ("ag.hier.inter", SP_COLL_ALL_GATHER, SP_FAMILY_SHARD_INTER_NODE, SP_DTYPE_BFLOAT16, 4096, N, 1, h, 0, 1, &a);
  add ("ag.hier.intra", SP_COLL_ALL_GATHER, SP_FAMILY_SHARD_INTRA_NODE, SP_DTYPE_BFLOAT16, 8192, N, 1, h, 0, 1, &hi);
  guint32 c = add ("mm", SP_COLL_COMPUTE, SP_FAMILY_NONE, SP_DTYPE_NONE, 0, N, 0, -1, 2000000000ull, 1, &h);
  add ("rs.shard", SP_COLL_REDUCE_SCATTER, SP_FAMILY_SHARD, SP_DTYPE_BFLOAT16, 8192, S, 2, -1, 0, 1, &c);
  add ("rsb.world", SP_COLL_REDUCE_SCATTER_BLOCK, SP_FAMILY_WORLD, SP_DTYPE_FLOAT32, 4096, SP_REDOP_MAX, 2, -1, 0, 0, NULL);
  add ("ar.tensor", SP_COLL_ALL_REDUCE, SP_FAMILY_TENSOR, SP_DTYPE_FLOAT32, 5000, S, 1, -1, 0, 0, NULL);
  add ("ar.data.avg", SP_COLL_ALL_REDUCE, SP_FAMILY_DATA, SP_DTYPE_FLOAT16, 3000, SP_REDOP_AVG, 1, -1, 0, 0, NULL);
  add ("ar.world.prod", SP_COLL_ALL_REDUCE, SP_FAMILY_WORLD, SP_DTYPE_FLOAT64, 1000, SP_REDOP_PROD, 1, -1, 0, 0, NULL);
  add ("ar.world.min", SP_COLL_ALL_REDUCE, SP_FAMILY_WORLD, SP_DTYPE_INT8, 1000, SP_REDOP_MIN, 1, -1, 0, 0, NULL);
  add ("ar.world.u64", SP_COLL_ALL_REDUCE, SP_FAMILY_WORLD, SP_DTYPE_UINT64, 1000, S, 1, -1, 0, 0, NULL);
  add ("a2a.expert", SP_COLL_ALL_TO_ALL, SP_FAMILY_EXPERT, SP_DTYPE_BFLOAT16, 6000, N, 1, -1, 0, 0, NULL);
  add ("ag.expert_data", SP_COLL_ALL_GATHER, SP_FAMILY_EXPERT_DATA, SP_DTYPE_BFLOAT16, 2000, N, 1, -1, 0, 0, NULL);
  add ("ag.zero_param", SP_COLL_ALL_GATHER, SP_FAMILY_ZERO_PARAM, SP_DTYPE_FLOAT16, 2000, N, 1, -1, 0, 0, NULL);
  add ("bcast.world", SP_COLL_BROADCAST, SP_FAMILY_WORLD, SP_DTYPE_UINT8, 777, N, 1, -1, 0, 0, NULL);
  add ("reduce.world", SP_COLL_REDUCE, SP_FAMILY_WORLD, SP_DTYPE_INT32, 999, SP_REDOP_MAX, 1, -1, 0, 0, NULL);
  add ("send.data", SP_COLL_SEND, SP_FAMILY_DATA, SP_DTYPE_FLOAT32, 1024, N, 3, -1, 0, 0, NULL);
  add ("recv.tensor", SP_COLL_RECV, SP_FAMILY_TENSOR, SP_DTYPE_FLOAT32, 1024, N, 3, -1, 0, 0, NULL);
  /* one way: in each data group member 1 sends to member 0; in the world,
   * rank 0 to rank 3 (ranks 1 and 2 skip it) */
  guint32 pd = add_p2p ("p2p.data", SP_FAMILY_DATA, 1, 0, 1024, 3, 0, NULL);
  add_p2p ("p2p.world", SP_FAMILY_WORLD, 0, 3, 3000, 3, 1, &pd);
  add ("a2a.local", SP_COLL_ALL_TO_ALL, SP_FAMILY_A2A_LOCAL, SP_DTYPE_UINT8, 4096, N, 1, -1, 0, 0, NULL);
  add ("a2a.global", SP_COLL_ALL_TO_ALL, SP_FAMILY_A2A_GLOBAL, SP_DTYPE_UINT8, 4096, N, 1, -1, 0, 0, NULL);
  add ("barrier", SP_COLL_BARRIER, SP_FAMILY_WORLD, SP_DTYPE_NONE, 0, N, 0, -1, 0, 0, NULL);
  guint32 q = add ("qwz.quantize", SP_COLL_QUANTIZE, SP_FAMILY_NONE, SP_DTYPE_FLOAT16, 4096, N, 1, -1, 0, 0, NULL);
  add ("qwz.dequantize", SP_COLL_DEQUANTIZE, SP_FAMILY_NONE, SP_DTYPE_INT8, 4096, N, 1, -1, 0, 1, &q);
  /* reduce_scatter_coalesced over the world: buffer W·Σc = 4·1500 */
  guint32 rc = add ("rsc", SP_COLL_REDUCE_SCATTER_COALESCED, SP_FAMILY_SHARD, SP_DTYPE_FLOAT16, 6000, S, 2, -1, 0, 0, NULL);
  add ("rsc.reduce_scatter", SP_COLL_REDUCE_SCATTER, SP_FAMILY_SHARD, SP_DTYPE_FLOAT16, 6000, S, 2, rc, 0, 0, NULL);
  /* qgZ: numel 4096, G 64, W 4, D 2 */
  guint32 g = add ("qgz", SP_COLL_ALL_TO_ALL_QUANT_REDUCE, SP_FAMILY_WORLD, SP_DTYPE_FLOAT16, 4096, S, 2, -1, 0, 0, NULL);
  guint32 p = add ("qgz.quantize", SP_COLL_QUANTIZE, SP_FAMILY_NONE, SP_DTYPE_FLOAT16, 4096, N, 2, g, 0, 0, NULL);
  p = add ("qgz.local", SP_COLL_ALL_TO_ALL, SP_FAMILY_A2A_LOCAL, SP_DTYPE_INT4, 4096, N, 2, g, 0, 1, &p);
  p = add ("qgz.local.scales", SP_COLL_ALL_TO_ALL, SP_FAMILY_A2A_LOCAL, SP_DTYPE_FLOAT32, 64, N, 2, g, 0, 1, &p);
  p = add ("qgz.quant_reduce", SP_COLL_QUANT_REDUCE, SP_FAMILY_NONE, SP_DTYPE_INT4, 4096, S, 2, g, 0, 1, &p);
  p = add ("qgz.global", SP_COLL_ALL_TO_ALL, SP_FAMILY_A2A_GLOBAL, SP_DTYPE_INT4, 2048, N, 2, g, 0, 1, &p);
  p = add ("qgz.global.scales", SP_COLL_ALL_TO_ALL, SP_FAMILY_A2A_GLOBAL, SP_DTYPE_FLOAT32, 32, N, 2, g, 0, 1, &p);
  add ("qgz.dequantize", SP_COLL_DEQUANTIZE, SP_FAMILY_NONE, SP_DTYPE_INT4, 2048, N, 2, g, 0, 1, &p);
}

static void
plan_replicate (void)
{
  SpGroupsOptions o;
  sp_groups_options_init (&o);
  o.world_size = 4;
  o.devices_per_node = 2;
  o.shard_size = 2;
  plan = sp_plan_new (&o);
  guint32 a = add ("ag.shard", SP_COLL_ALL_GATHER, SP_FAMILY_SHARD, SP_DTYPE_BFLOAT16, 10000, N, 1, -1, 0, 0, NULL);
  add ("rs.shard", SP_COLL_REDUCE_SCATTER, SP_FAMILY_SHARD, SP_DTYPE_FLOAT32, 10000, S, 2, -1, 0, 1, &a);
  add ("ar.replicate", SP_COLL_ALL_REDUCE, SP_FAMILY_REPLICATE, SP_DTYPE_BFLOAT16, 7777, SP_REDOP_AVG, 2, -1, 0, 0, NULL);
  guint32 rc = add ("rsc", SP_COLL_REDUCE_SCATTER_COALESCED, SP_FAMILY_SHARD, SP_DTYPE_BFLOAT16, 2 * 777, S, 1, -1, 0, 1, &a);
  add ("rsc.reduce_scatter", SP_COLL_REDUCE_SCATTER, SP_FAMILY_SHARD, SP_DTYPE_BFLOAT16, 2 * 777, S, 1, rc, 0, 0, NULL);
  add ("rsc1", SP_COLL_REDUCE_SCATTER_COALESCED, SP_FAMILY_REPLICATE, SP_DTYPE_FLOAT32, 2, S, 1, -1, 0, 0, NULL);
  add ("rsc1.reduce_scatter", SP_COLL_REDUCE_SCATTER, SP_FAMILY_REPLICATE, SP_DTYPE_FLOAT32, 2, S, 1, rc + 2, 0, 0, NULL);
}

static void
plan_one (void)
{
  SpGroupsOptions o;
  sp_groups_options_init (&o);
  o.world_size = 1;
  o.devices_per_node = 1;
  plan = sp_plan_new (&o);
  guint32 a = add ("ar", SP_COLL_ALL_REDUCE, SP_FAMILY_WORLD, SP_DTYPE_FLOAT32, 65536, S, 1, -1, 0, 0, NULL);
  add ("ag", SP_COLL_ALL_GATHER, SP_FAMILY_WORLD, SP_DTYPE_BFLOAT16, 65536, N, 1, -1, 0, 1, &a);
  add ("rs", SP_COLL_REDUCE_SCATTER, SP_FAMILY_WORLD, SP_DTYPE_FLOAT16, 65536, SP_REDOP_AVG, 2, -1, 0, 0, NULL);
  add ("bcast", SP_COLL_BROADCAST, SP_FAMILY_WORLD, SP_DTYPE_UINT8, 1000, N, 2, -1, 0, 0, NULL);
  add ("a2a", SP_COLL_ALL_TO_ALL, SP_FAMILY_WORLD, SP_DTYPE_INT32, 1000, N, 2, -1, 0, 0, NULL);
  add ("send", SP_COLL_SEND, SP_FAMILY_WORLD, SP_DTYPE_FLOAT32, 1000, N, 2, -1, 0, 0, NULL);
  add ("barrier", SP_COLL_BARRIER, SP_FAMILY_WORLD, SP_DTYPE_NONE, 0, N, 2, -1, 0, 0, NULL);
  guint32 q = add ("quantize", SP_COLL_QUANTIZE, SP_FAMILY_NONE, SP_DTYPE_FLOAT16, 8192, N, 1, -1, 0, 0, NULL);
  add ("dequantize", SP_COLL_DEQUANTIZE, SP_FAMILY_NONE, SP_DTYPE_INT8, 8192, N, 1, -1, 0, 1, &q);
  guint32 rc = add ("rsc", SP_COLL_REDUCE_SCATTER_COALESCED, SP_FAMILY_WORLD, SP_DTYPE_BFLOAT16, 3000, S, 1, -1, 0, 0, NULL);
  add ("rsc.reduce_scatter", SP_COLL_REDUCE_SCATTER, SP_FAMILY_WORLD, SP_DTYPE_BFLOAT16, 3000, S, 1, rc, 0, 0, NULL);
}

static void
plan_bench (int n, char **sizes)
{
  SpGroupsOptions o;
  sp_groups_options_init (&o);
  o.world_size = 4;
  o.devices_per_node = 4;
  plan = sp_plan_new (&o);
  for (int i = 0; i < n; i++)
    {
      guint64 bytes = g_ascii_strtoull (sizes[i], NULL, 10);
      g_autofree char *ar = g_strdup_printf ("all_reduce.%s", sizes[i]);
      g_autofree char *ag = g_strdup_printf ("all_gather.%s", sizes[i]);
      g_autofree char *rs = g_strdup_printf ("reduce_scatter.%s", sizes[i]);
      add (ar, SP_COLL_ALL_REDUCE, SP_FAMILY_WORLD, SP_DTYPE_FLOAT32, bytes / 4, S, 0, -1, 0, 0, NULL);
      add (ag, SP_COLL_ALL_GATHER, SP_FAMILY_WORLD, SP_DTYPE_FLOAT32, bytes / 4, N, 0, -1, 0, 0, NULL);
      add (rs, SP_COLL_REDUCE_SCATTER, SP_FAMILY_WORLD, SP_DTYPE_FLOAT32, bytes / 4, S, 0, -1, 0, 0, NULL);
    }
}

int
main (int argc, char **argv)
{
  if (argc < 3)
    {
      fprintf (stderr, "usage: make-plan all|sim|replicate|one|bench OUT.json [BYTES…]\n");
      return 2;
    }
  if (strcmp (argv[1], "all") == 0)
    plan_all ();
  else if (strcmp (argv[1], "sim") == 0)
    {
      sim_only = TRUE;
      plan_all ();
    }
  else if (strcmp (argv[1], "replicate") == 0)
    plan_replicate ();
  else if (strcmp (argv[1], "one") == 0)
    plan_one ();
  else if (strcmp (argv[1], "bench") == 0)
    plan_bench (argc - 3, argv + 3);
  else
    return 2;
  GError *e = NULL;
  if (!sp_plan_save (plan, argv[2], &e))
    {
      fprintf (stderr, "make-plan: %s\n", e->message);
      return 1;
    }
  sp_plan_free (plan);
  return 0;
}
