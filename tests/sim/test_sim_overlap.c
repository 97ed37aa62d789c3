/* Contention between ops that overlap in time (sp_sim_run_plan_full,
 * contention step) against hand-computed max-min sharing.
 *
 * Reference numbers: a NIC moves nic_gbps / 8 × 0.96 B/ns (README-model §2:
 * 400 Gbit/s → C = 48 B/ns); a ring edge carries S (n−1)/n bytes for
 * all_gather, 2 S (n−1)/n for all_reduce; flows of equal weight crossing
 * one bottleneck link share it equally.  The latency L of a collective is
 * backed out of its alone time: L = T_alone − edge / rate_alone. */
#include "config.h"
#include "shardplan/sim.h"
#include "shardplan/error.h"
#include "testutil.h"
#include "plan-testutil.h"
#include "sim-testing.h"

#include <math.h>
#include <string.h>

#define NIC_GBPS 400.0
#define NIC_BNS (NIC_GBPS / 8 * 0.96) /* 48 B/ns */

/* `nodes` × `gpus` GPUs (DGX-H100 numbers otherwise), `nics` NICs per node,
 * one non-blocking switch, 1 TFLOP/s so that a kernel of F FLOPs takes
 * F / 1000 ns at compute_efficiency 1. */
static SpTopo *
topo_new (guint32 nodes, guint32 gpus, guint32 nics)
{
  SpTopo *base = sp_topo_new_preset ("dgx-h100", nodes, NULL);
  ck_assert (base != NULL);
  SpTopoSpec s = *sp_topo_spec (base);
  sp_topo_free (base);
  s.gpus_per_node = gpus;
  s.nics_per_node = nics;
  s.nic_gbps = NIC_GBPS;
  s.cal_nic_efficiency = 0.96; /* the NIC rate the reference numbers use */
  s.fabric = SP_FABRIC_SINGLE_SWITCH;
  s.oversubscription = 1;
  s.gpu_tflops = 1.0;
  GError *error = NULL;
  SpTopo *t = sp_topo_new (&s, &error);
  SP_ASSERT_NO_ERROR (error);
  return t;
}

static SpPlan *
plan_new (guint32 world, guint32 per_node, guint32 shard, gboolean hierarchical)
{
  SpGroupsOptions g;
  sp_groups_options_init (&g);
  g.world_size = world;
  g.devices_per_node = per_node;
  g.shard_size = shard;
  g.hierarchical = hierarchical;
  SpPlan *p = sp_plan_new (&g);
  sp_plan_set_meta (p, "compute_efficiency", "1");
  return p;
}

static guint32
add (SpPlan *p, SpColl kind, SpFamily fam, guint64 bytes, guint32 stream, guint64 flops,
     const guint32 *deps, guint32 n_deps)
{
  return sp_test_plan_add (p, kind, fam, bytes, stream, flops, deps, n_deps, -1,
                           fam == SP_FAMILY_NONE ? SP_ALGO_AUTO : SP_ALGO_RING);
}

/* One group alone (des, ring): its time; out_channels its channel count. */
static guint64
alone (const SpTopo *t, SpColl coll, guint64 bytes, const guint32 *ranks, guint32 n,
       guint32 *out_channels)
{
  SpCollRequest r;
  sp_coll_request_init (&r);
  r.coll = coll;
  r.bytes = bytes;
  r.ranks = ranks;
  r.n_ranks = n;
  r.algo = SP_ALGO_RING;
  SpCollEstimate e;
  GError *error = NULL;
  ck_assert (sp_sim_estimate (t, SP_SIM_DES, &r, &e, &error));
  SP_ASSERT_NO_ERROR (error);
  ck_assert_int_eq (e.proto, SP_PROTO_SIMPLE); /* no per-flow caps */
  if (out_channels)
    *out_channels = e.n_channels;
  return e.time_ns;
}

static SpSimResult *
run (const SpTopo *t, const SpPlan *p, SpSimContention contention, SpGroups **out_groups)
{
  GError *error = NULL;
  *out_groups = sp_groups_build (sp_plan_groups_options (p), &error);
  SP_ASSERT_NO_ERROR (error);
  SpSimPlanOptions o;
  sp_sim_plan_options_init (&o);
  o.contention = contention;
  SpSimResult *res = sp_sim_run_plan_full (t, SP_SIM_DES, p, *out_groups, &o, &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert (res != NULL);
  ck_assert_int_eq (sp_sim_result_contention (res), contention);
  return res;
}

static void
span (const SpSimResult *res, const SpPlan *p, guint32 op, guint32 rank, guint64 *s, guint64 *e)
{
  ck_assert_msg (sp_sim_result_op_time (res, p, op, rank, s, e), "op %u rank %u", op, rank);
}

#define ASSERT_NEAR(x, want, tol)                                                           \
  ck_assert_msg (fabs ((double) (x) - (double) (want)) <= (double) (tol),                   \
                 "%s = %.1f, expected %.1f +- %.1f", #x, (double) (x), (double) (want),     \
                 (double) (tol))

/* Two all-gathers of S on streams 1 and 2 over the same group {0, 1}: two
 * nodes of one GPU and one NIC each.  Alone: one flow per NIC direction
 * with edge x = S/2 at C, T = L + x/C.  Together: two flows per NIC
 * direction at C/2 from the same instant L: both end at L + 2x/C = T + x/C
 * (≈ 2 T, the transfer dominates).  Contention family does not see it. */
START_TEST (test_same_nic_two_streams)
{
  g_autoptr (SpTopo) t = topo_new (2, 1, 1);
  g_autoptr (SpPlan) p = plan_new (2, 1, 2, FALSE);
  const guint64 S = 256u << 20;
  guint32 a = add (p, SP_COLL_ALL_GATHER, SP_FAMILY_SHARD, S, 1, 0, NULL, 0);
  guint32 b = add (p, SP_COLL_ALL_GATHER, SP_FAMILY_SHARD, S, 2, 0, NULL, 0);
  const guint32 g[] = { 0, 1 };
  guint64 T = alone (t, SP_COLL_ALL_GATHER, S, g, 2, NULL);
  double x = S / 2.0;
  double L = T - x / NIC_BNS;
  ck_assert (L > 0 && L < 100e3);
  SpGroups *groups;
  SpSimResult *res = run (t, p, SP_SIM_CONTENTION_STEP, &groups);
  guint64 s, e;
  for (guint32 r = 0; r < 2; r++)
    for (guint32 op = a; op <= b; op++)
      {
        span (res, p, op, r, &s, &e);
        ck_assert_uint_eq (s, 0);
        ASSERT_NEAR (e, T + x / NIC_BNS, 3);
        ck_assert (e >= 1.95 * T);
      }
  ASSERT_NEAR (sp_sim_result_step_ns (res), T + x / NIC_BNS, 3);
  ASSERT_NEAR (sp_sim_result_comm_ns (res), 2 * (T + x / NIC_BNS), 6);
  ck_assert_uint_eq (sp_sim_result_exposed_comm_ns (res), sp_sim_result_step_ns (res));
  ck_assert_uint_eq (sp_sim_result_contention_fallbacks (res), 0);
  sp_sim_result_free (res);
  sp_groups_free (groups);
  /* contention family: each op as if alone */
  res = run (t, p, SP_SIM_CONTENTION_FAMILY, &groups);
  span (res, p, b, 0, &s, &e);
  ck_assert_uint_eq (s, 0);
  ck_assert_uint_eq (e, T);
  sp_sim_result_free (res);
  sp_groups_free (groups);
}
END_TEST

/* The same two all-gathers on ONE stream: the second waits for the first,
 * so neither is slowed: [0, T] and [T, 2T]. */
START_TEST (test_same_stream_serializes)
{
  g_autoptr (SpTopo) t = topo_new (2, 1, 1);
  g_autoptr (SpPlan) p = plan_new (2, 1, 2, FALSE);
  const guint64 S = 64u << 20;
  guint32 a = add (p, SP_COLL_ALL_GATHER, SP_FAMILY_SHARD, S, 1, 0, NULL, 0);
  guint32 b = add (p, SP_COLL_ALL_GATHER, SP_FAMILY_SHARD, S, 1, 0, NULL, 0);
  const guint32 g[] = { 0, 1 };
  guint64 T = alone (t, SP_COLL_ALL_GATHER, S, g, 2, NULL);
  SpGroups *groups;
  SpSimResult *res = run (t, p, SP_SIM_CONTENTION_STEP, &groups);
  guint64 s, e;
  span (res, p, a, 1, &s, &e);
  ck_assert_uint_eq (s, 0);
  ck_assert_uint_eq (e, T);
  span (res, p, b, 1, &s, &e);
  ck_assert_uint_eq (s, T);
  ck_assert_uint_eq (e, 2 * T);
  sp_sim_result_free (res);
  sp_groups_free (groups);
}
END_TEST

/* Disjoint links: MiCS hierarchical S = 4 on 2 nodes × 2 GPUs, 2 NICs per
 * node (GPU i owns NIC i).  The inter-node all-gather (groups {0,2} on NIC
 * 0, {1,3} on NIC 1) on stream 1 and the intra-node all-gather (groups
 * {0,1}, {2,3} over NVLink ports) on stream 2 share no link: every group
 * takes exactly its alone time. */
START_TEST (test_disjoint_links)
{
  g_autoptr (SpTopo) t = topo_new (2, 2, 2);
  g_autoptr (SpPlan) p = plan_new (4, 2, 4, TRUE);
  const guint64 S = 128u << 20;
  guint32 a = add (p, SP_COLL_ALL_GATHER, SP_FAMILY_SHARD_INTER_NODE, S / 2, 1, 0, NULL, 0);
  guint32 b = add (p, SP_COLL_ALL_GATHER, SP_FAMILY_SHARD_INTRA_NODE, S, 2, 0, NULL, 0);
  SpGroups *groups;
  SpSimResult *res = run (t, p, SP_SIM_CONTENTION_STEP, &groups);
  const SpFamily fam[2] = { SP_FAMILY_SHARD_INTER_NODE, SP_FAMILY_SHARD_INTRA_NODE };
  const guint32 ops[2] = { a, b };
  const guint64 bytes[2] = { S / 2, S };
  for (int k = 0; k < 2; k++)
    for (guint32 gi = 0; gi < 2; gi++)
      {
        guint32 n;
        const guint32 *m = sp_groups_members (groups, fam[k], gi, &n);
        ck_assert_uint_eq (n, 2);
        guint64 T = alone (t, SP_COLL_ALL_GATHER, bytes[k], m, n, NULL);
        guint64 s, e;
        for (guint32 i = 0; i < n; i++)
          {
            span (res, p, ops[k], m[i], &s, &e);
            ck_assert_uint_eq (s, 0);
            ck_assert_uint_eq (e, T);
          }
      }
  sp_sim_result_free (res);
  sp_groups_free (groups);
}
END_TEST

/* A kernel overlapping a collective changes nothing: compute A (stream 0,
 * 10 ms) ‖ all-gather G (stream 1) over 2 nodes × 4 GPUs; G takes its alone
 * time, A its 10 ms, and B (after A and G) starts at max of both. */
START_TEST (test_compute_does_not_slow_comm)
{
  g_autoptr (SpTopo) t = topo_new (2, 4, 4);
  g_autoptr (SpPlan) p = plan_new (8, 4, 8, FALSE);
  const guint64 S = 64u << 20;
  guint32 a = add (p, SP_COLL_COMPUTE, SP_FAMILY_NONE, 0, 0, G_GUINT64_CONSTANT (10000000000),
                   NULL, 0);
  guint32 gid = add (p, SP_COLL_ALL_GATHER, SP_FAMILY_SHARD, S, 1, 0, NULL, 0);
  guint32 d[] = { gid };
  guint32 b = add (p, SP_COLL_COMPUTE, SP_FAMILY_NONE, 0, 0, 500000, d, 1);
  const guint32 all[] = { 0, 1, 2, 3, 4, 5, 6, 7 };
  guint64 T = alone (t, SP_COLL_ALL_GATHER, S, all, 8, NULL);
  ck_assert (T < 10000000); /* hidden under A */
  SpGroups *groups;
  SpSimResult *res = run (t, p, SP_SIM_CONTENTION_STEP, &groups);
  guint64 s, e;
  for (guint32 r = 0; r < 8; r++)
    {
      span (res, p, gid, r, &s, &e);
      ck_assert_uint_eq (s, 0);
      ck_assert_uint_eq (e, T);
      span (res, p, a, r, &s, &e);
      ck_assert_uint_eq (e, 10000000);
      span (res, p, b, r, &s, &e);
      ck_assert_uint_eq (s, 10000000);
      ck_assert_uint_eq (e, 10000500);
    }
  ck_assert_uint_eq (sp_sim_result_exposed_comm_ns (res), 0);
  sp_sim_result_free (res);
  sp_groups_free (groups);
}
END_TEST

/* Different families through the same NICs: 2 nodes × 2 GPUs, ONE NIC per
 * node, MiCS hierarchical S = 4.  A: all_reduce of S_A on shard_inter_node
 * (groups {0,2} and {1,3}: a 2-rank ring, edge S_A, both groups through the
 * node's one NIC).  B: all_gather of S_B on shard = {0,1,2,3} (ring edges
 * 1→2 and 3→0 cross nodes, edge x = 3 S_B / 4).  With S_A = x every NIC
 * direction carries three flows of x bytes and equal weight:
 *   A alone (its two groups): L_A + 2x/C;  B alone: L_B + x/C;
 *   together (step), the flows starting D = |L_A − L_B| apart:
 *   L_B ≤ L_A: B alone at C for D, then three flows at C/3 until B is done,
 *     then A's two at C/2:  B ends at L_A + 3x/C − 3D, A at L_A + 3x/C − D;
 *   L_A < L_B: A's two at C/2 for D, then three at C/3 until A is done,
 *     then B at C:  A ends at L_B + 3x/C − 1.5D, B at L_B + 3x/C − D. */
START_TEST (test_families_share_nics)
{
  g_autoptr (SpTopo) t = topo_new (2, 2, 1);
  g_autoptr (SpPlan) p = plan_new (4, 2, 4, TRUE);
  const guint64 SB = 256u << 20, SA = 3 * SB / 4;
  const double x = (double) SA;
  guint32 a = add (p, SP_COLL_ALL_REDUCE, SP_FAMILY_SHARD_INTER_NODE, SA, 2, 0, NULL, 0);
  guint32 b = add (p, SP_COLL_ALL_GATHER, SP_FAMILY_SHARD, SB, 1, 0, NULL, 0);
  GError *error = NULL;
  g_autoptr (SpGroups) gr = sp_groups_build (sp_plan_groups_options (p), &error);
  SP_ASSERT_NO_ERROR (error);
  guint32 n;
  const guint32 *ga = sp_groups_members (gr, SP_FAMILY_SHARD_INTER_NODE, 0, &n);
  ck_assert_uint_eq (n, 2);
  ck_assert_uint_eq (ga[0], 0);
  ck_assert_uint_eq (ga[1], 2);
  const guint32 *gb = sp_groups_members (gr, SP_FAMILY_SHARD, 0, &n);
  ck_assert_uint_eq (n, 4);
  for (guint32 i = 0; i < 4; i++)
    ck_assert_uint_eq (gb[i], i);
  guint32 cha, chb;
  guint64 TA1 = alone (t, SP_COLL_ALL_REDUCE, SA, ga, 2, &cha); /* one group: L_A + x/C */
  guint64 TB = alone (t, SP_COLL_ALL_GATHER, SB, gb, 4, &chb);
  ck_assert_uint_eq (cha, chb); /* equal fairness weights */
  double LA = TA1 - x / NIC_BNS, LB = TB - x / NIC_BNS;
  ck_assert (LA > 0 && LA < 100e3 && LB > 0 && LB < 100e3);
  double D = fabs (LA - LB), c3 = 3 * x / NIC_BNS, want_a, want_b;
  if (LB <= LA)
    {
      want_b = LA + c3 - 3 * D;
      want_a = LA + c3 - D;
    }
  else
    {
      want_a = LB + c3 - 1.5 * D;
      want_b = LB + c3 - D;
    }

  SpGroups *groups;
  SpSimResult *res = run (t, p, SP_SIM_CONTENTION_FAMILY, &groups);
  guint64 s, e;
  span (res, p, a, 0, &s, &e);
  ASSERT_NEAR (e, LA + 2 * x / NIC_BNS, 3);
  span (res, p, b, 0, &s, &e);
  ck_assert_uint_eq (e, TB);
  sp_sim_result_free (res);
  sp_groups_free (groups);

  res = run (t, p, SP_SIM_CONTENTION_STEP, &groups);
  for (guint32 r = 0; r < 4; r++)
    {
      span (res, p, a, r, &s, &e);
      ck_assert_uint_eq (s, 0);
      ASSERT_NEAR (e, want_a, 10);
      span (res, p, b, r, &s, &e);
      ck_assert_uint_eq (s, 0);
      ASSERT_NEAR (e, want_b, 10);
      ck_assert (e > 2.9 * TB);
    }
  sp_sim_result_free (res);
  sp_groups_free (groups);
}
END_TEST

/* A composite (hierarchical all-gather: inter then intra) and a kernel
 * after it, step mode: on 2 nodes × 4 GPUs with a NIC per GPU the four
 * inter groups use four NICs, so the composite spans c1 + c2 of the
 * groups alone. */
START_TEST (test_composite_step)
{
  g_autoptr (SpTopo) t = topo_new (2, 4, 4);
  g_autoptr (SpPlan) p = plan_new (8, 4, 8, TRUE);
  const guint64 S = 32u << 20;
  SpOp op = { 0 };
  op.parent = -1;
  op.name = "hier";
  op.layer = -1;
  op.kind = SP_COLL_HIER_ALL_GATHER;
  op.redop = SP_REDOP_NONE;
  op.family = SP_FAMILY_SHARD;
  op.bytes = S;
  op.dtype = SP_DTYPE_BFLOAT16;
  op.count = S / 2;
  op.algorithm = SP_ALGO_AUTO;
  op.stream = 1;
  guint32 comp, s1, s2, after;
  GError *error = NULL;
  ck_assert_msg (sp_plan_add_op (p, &op, &comp, &error), "%s", error ? error->message : "");
  op.parent = comp;
  op.kind = SP_COLL_ALL_GATHER;
  op.family = SP_FAMILY_SHARD_INTER_NODE;
  op.bytes = S / 4;
  op.count = S / 8;
  op.algorithm = SP_ALGO_RING;
  ck_assert_msg (sp_plan_add_op (p, &op, &s1, &error), "%s", error ? error->message : "");
  guint32 d1[] = { s1 };
  op.family = SP_FAMILY_SHARD_INTRA_NODE;
  op.bytes = S;
  op.count = S / 2;
  op.deps = d1;
  op.n_deps = 1;
  ck_assert (sp_plan_add_op (p, &op, &s2, &error));
  SP_ASSERT_NO_ERROR (error);
  guint32 d2[] = { comp };
  after = add (p, SP_COLL_COMPUTE, SP_FAMILY_NONE, 0, 0, 1000000, d2, 1);
  SpGroups *groups;
  SpSimResult *res = run (t, p, SP_SIM_CONTENTION_STEP, &groups);
  guint32 n1, n2;
  const guint32 *inter = sp_groups_members (groups, SP_FAMILY_SHARD_INTER_NODE, 0, &n1);
  const guint32 *intra = sp_groups_members (groups, SP_FAMILY_SHARD_INTRA_NODE, 0, &n2);
  guint64 c1 = alone (t, SP_COLL_ALL_GATHER, S / 4, inter, n1, NULL);
  guint64 c2 = alone (t, SP_COLL_ALL_GATHER, S, intra, n2, NULL);
  guint64 s, e;
  for (guint32 r = 0; r < 8; r++)
    {
      span (res, p, s1, r, &s, &e);
      ck_assert_uint_eq (e, c1);
      span (res, p, s2, r, &s, &e);
      ck_assert_uint_eq (s, c1);
      span (res, p, comp, r, &s, &e);
      ck_assert_uint_eq (s, 0);
      ck_assert_uint_eq (e, c1 + c2);
      span (res, p, after, r, &s, &e);
      ck_assert_uint_eq (s, c1 + c2);
      ck_assert_uint_eq (e, c1 + c2 + 1000);
    }
  ck_assert_uint_eq (sp_sim_result_kind_ns (res, SP_COLL_ALL_GATHER), c1 + c2);
  ck_assert_uint_eq (sp_sim_result_kind_ns (res, SP_COLL_HIER_ALL_GATHER), 0);
  sp_sim_result_free (res);
  sp_groups_free (groups);
}
END_TEST

/* The flow limit: with room for one 2-rank ring (2 flows) but not two, the
 * second all-gather of test_same_nic_two_streams runs for its alone time
 * as a fixed delay (counted), and the first, alone on the network, too. */
START_TEST (test_flow_limit_fallback)
{
  g_autoptr (SpTopo) t = topo_new (2, 1, 1);
  g_autoptr (SpPlan) p = plan_new (2, 1, 2, FALSE);
  const guint64 S = 64u << 20;
  guint32 a = add (p, SP_COLL_ALL_GATHER, SP_FAMILY_SHARD, S, 1, 0, NULL, 0);
  guint32 b = add (p, SP_COLL_ALL_GATHER, SP_FAMILY_SHARD, S, 2, 0, NULL, 0);
  const guint32 g[] = { 0, 1 };
  guint64 T = alone (t, SP_COLL_ALL_GATHER, S, g, 2, NULL);
  sp_sim_testing_max_flows = 3;
  SpGroups *groups;
  SpSimResult *res = run (t, p, SP_SIM_CONTENTION_STEP, &groups);
  sp_sim_testing_max_flows = 0;
  guint64 s, e;
  span (res, p, a, 0, &s, &e);
  ck_assert_uint_eq (e, T);
  span (res, p, b, 0, &s, &e);
  ck_assert_uint_eq (e, T);
  ck_assert_uint_eq (sp_sim_result_contention_fallbacks (res), 1);
  sp_sim_result_free (res);
  sp_groups_free (groups);
}
END_TEST

/* Deterministic, and fail loud: the engine's own checks fire inside a step
 * run; bad options are refused. */
START_TEST (test_determinism_and_fail_loud)
{
  g_autoptr (SpTopo) t = topo_new (2, 4, 4);
  g_autoptr (SpPlan) p = plan_new (8, 4, 4, FALSE);
  guint32 prev = add (p, SP_COLL_COMPUTE, SP_FAMILY_NONE, 0, 0, 3000000, NULL, 0);
  for (int i = 0; i < 5; i++)
    {
      guint32 d[] = { prev };
      guint32 ag = add (p, SP_COLL_ALL_GATHER, SP_FAMILY_SHARD, (guint64) (i + 1) << 22, 1, 0, d,
                        1);
      guint32 d2[] = { ag };
      prev = add (p, SP_COLL_COMPUTE, SP_FAMILY_NONE, 0, 0, 200000, d2, 1);
      guint32 d3[] = { prev };
      guint32 rs = add (p, SP_COLL_REDUCE_SCATTER, SP_FAMILY_SHARD, 16u << 20, 2, 0, d3, 1);
      guint32 d4[] = { rs };
      add (p, SP_COLL_ALL_REDUCE, SP_FAMILY_REPLICATE, 8u << 20, 2, 0, d4, 1);
    }
  SpGroups *g1, *g2;
  SpSimResult *x = run (t, p, SP_SIM_CONTENTION_STEP, &g1);
  SpSimResult *y = run (t, p, SP_SIM_CONTENTION_STEP, &g2);
  for (guint32 o = 0; o < sp_plan_n_ops (p); o++)
    for (guint32 r = 0; r < 8; r++)
      {
        guint64 s1, e1, s2, e2;
        span (x, p, o, r, &s1, &e1);
        span (y, p, o, r, &s2, &e2);
        ck_assert_uint_eq (s1, s2);
        ck_assert_uint_eq (e1, e2);
      }
  ck_assert_uint_eq (sp_sim_result_step_ns (x), sp_sim_result_step_ns (y));
  ck_assert_uint_gt (sp_sim_result_exposed_comm_ns (x), 0);
  /* contention can only slow communication down: ≥ the family model's sum */
  SpGroups *g3;
  SpSimResult *f = run (t, p, SP_SIM_CONTENTION_FAMILY, &g3);
  ck_assert_uint_ge (sp_sim_result_comm_ns (x), sp_sim_result_comm_ns (f));
  ck_assert_uint_ge (sp_sim_result_step_ns (x), sp_sim_result_step_ns (f));
  ck_assert_uint_eq (sp_sim_result_compute_only_ns (x), sp_sim_result_compute_only_ns (f));
  sp_sim_result_free (x);
  sp_sim_result_free (y);
  sp_sim_result_free (f);
  sp_groups_free (g2);
  sp_groups_free (g3);

  SpSimPlanOptions o;
  sp_sim_plan_options_init (&o);
  GError *error = NULL;
  const SpSimFault faults[] = { SP_SIM_FAULT_DROP_JOB, SP_SIM_FAULT_LOSE_BYTES,
                                SP_SIM_FAULT_OVERSPEED };
  for (guint i = 0; i < G_N_ELEMENTS (faults); i++)
    {
      sp_sim_testing_fault = faults[i];
      SpSimResult *bad = sp_sim_run_plan_full (t, SP_SIM_DES, p, g1, &o, &error);
      sp_sim_testing_fault = SP_SIM_FAULT_NONE;
      ck_assert (bad == NULL);
      SP_ASSERT_ERROR (error, SP_ERROR_SIMULATION);
      g_clear_error (&error);
    }
  o.contention = SP_SIM_CONTENTION_STEP;
  ck_assert (sp_sim_run_plan_full (t, SP_SIM_ANALYTIC, p, g1, &o, &error) == NULL);
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_ARGUMENT);
  ck_assert (strstr (error->message, "step") != NULL);
  g_clear_error (&error);
  o.contention = (SpSimContention) 42;
  ck_assert (sp_sim_run_plan_full (t, SP_SIM_DES, p, g1, &o, &error) == NULL);
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_ARGUMENT);
  g_clear_error (&error);
  sp_groups_free (g1);
}
END_TEST

START_TEST (test_names)
{
  SpSimContention c;
  const char *names[] = { "default", "none", "family", "step" };
  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    {
      ck_assert (sp_sim_contention_from_name (names[i], &c));
      ck_assert_int_eq (c, (int) i);
      ck_assert_str_eq (sp_sim_contention_name (c), names[i]);
    }
  ck_assert (!sp_sim_contention_from_name ("fabric", &c));
  ck_assert (!sp_sim_contention_from_name (NULL, &c));
  ck_assert (sp_sim_contention_name ((SpSimContention) 9) == NULL);
  SpSimPlanOptions o;
  sp_sim_plan_options_init (&o);
  ck_assert_int_eq (o.contention, SP_SIM_CONTENTION_DEFAULT);
  ck_assert_int_eq (sp_sim_contention_default (SP_SIM_DES), SP_SIM_CONTENTION_STEP);
  ck_assert_int_eq (sp_sim_contention_default (SP_SIM_ANALYTIC), SP_SIM_CONTENTION_NONE);
}
END_TEST

static Suite *
suite (void)
{
  Suite *s = suite_create ("sim_overlap");
  TCase *tc = tcase_create ("step");
  tcase_set_timeout (tc, 60);
  tcase_add_test (tc, test_same_nic_two_streams);
  tcase_add_test (tc, test_same_stream_serializes);
  tcase_add_test (tc, test_disjoint_links);
  tcase_add_test (tc, test_compute_does_not_slow_comm);
  tcase_add_test (tc, test_families_share_nics);
  tcase_add_test (tc, test_composite_step);
  tcase_add_test (tc, test_flow_limit_fallback);
  tcase_add_test (tc, test_determinism_and_fail_loud);
  tcase_add_test (tc, test_names);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  return sp_test_run (suite ());
}
