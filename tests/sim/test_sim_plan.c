/* sp_sim_run_plan on hand-built plans, against hand-computed schedules
 * (collective costs taken from sp_sim_estimate of the same group alone). */
#include "config.h"
#include "shardplan/sim.h"
#include "shardplan/error.h"
#include "testutil.h"
#include "plan-testutil.h"

/* 2 nodes × 4 GPUs of a DGX-H100-like machine, 1 TFLOP/s so that with
 * compute_efficiency 1 a kernel of F FLOPs takes F / 1000 ns. */
static SpTopo *
topo_2x4 (void)
{
  SpTopo *base = sp_topo_new_preset ("dgx-h100", 2, NULL);
  ck_assert (base != NULL);
  SpTopoSpec s = *sp_topo_spec (base);
  sp_topo_free (base);
  s.gpus_per_node = 4;
  s.nics_per_node = 4;
  s.gpu_tflops = 1.0;
  GError *error = NULL;
  SpTopo *t = sp_topo_new (&s, &error);
  SP_ASSERT_NO_ERROR (error);
  return t;
}

static SpPlan *
new_plan (gboolean hierarchical)
{
  SpGroupsOptions g;
  sp_groups_options_init (&g);
  g.world_size = 8;
  g.devices_per_node = 4;
  g.shard_size = 8;
  g.hierarchical = hierarchical;
  SpPlan *p = sp_plan_new (&g);
  sp_plan_set_meta (p, "compute_efficiency", "1");
  return p;
}

static guint32
add (SpPlan *p, SpColl kind, SpFamily fam, guint64 bytes, guint32 stream, guint64 flops,
     const guint32 *deps, guint32 n_deps, gint64 parent)
{
  return sp_test_plan_add (p, kind, fam, bytes, stream, flops, deps, n_deps, parent,
                           SP_ALGO_AUTO);
}

static guint64
alone (const SpTopo *t, SpSimModel m, SpColl coll, guint64 bytes, const guint32 *ranks,
       guint32 n)
{
  SpCollRequest r;
  sp_coll_request_init (&r);
  r.coll = coll;
  r.bytes = bytes;
  r.ranks = ranks;
  r.n_ranks = n;
  SpCollEstimate e;
  GError *error = NULL;
  ck_assert (sp_sim_estimate (t, m, &r, &e, &error));
  return e.time_ns;
}

static SpSimResult *
run (const SpTopo *t, SpSimModel m, const SpPlan *p, SpGroups **out_groups)
{
  GError *error = NULL;
  *out_groups = sp_groups_build (sp_plan_groups_options (p), &error);
  SP_ASSERT_NO_ERROR (error);
  SpSimResult *res = sp_sim_run_plan (t, m, p, *out_groups, &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert (res != NULL);
  return res;
}

START_TEST (test_compute_serializes)
{
  g_autoptr (SpTopo) t = topo_2x4 ();
  g_autoptr (SpPlan) p = new_plan (FALSE);
  add (p, SP_COLL_COMPUTE, SP_FAMILY_NONE, 0, 0, 1000000, NULL, 0, -1); /* 1000 ns */
  add (p, SP_COLL_COMPUTE, SP_FAMILY_NONE, 0, 0, 2000000, NULL, 0, -1); /* 2000 ns */
  SpGroups *g;
  SpSimResult *res = run (t, SP_SIM_ANALYTIC, p, &g);
  guint64 s, e;
  for (guint32 r = 0; r < 8; r++)
    {
      ck_assert (sp_sim_result_op_time (res, p, 0, r, &s, &e));
      ck_assert_uint_eq (s, 0);
      ck_assert_uint_eq (e, 1000);
      ck_assert (sp_sim_result_op_time (res, p, 1, r, &s, &e));
      ck_assert_uint_eq (s, 1000);
      ck_assert_uint_eq (e, 3000);
    }
  ck_assert_uint_eq (sp_sim_result_step_ns (res), 3000);
  ck_assert_uint_eq (sp_sim_result_compute_only_ns (res), 3000);
  ck_assert_uint_eq (sp_sim_result_exposed_comm_ns (res), 0);
  ck_assert_uint_eq (sp_sim_result_kind_ns (res, SP_COLL_COMPUTE), 3000);
  ck_assert_uint_eq (sp_sim_result_comm_ns (res), 0);
  sp_sim_result_free (res);
  sp_groups_free (g);
}
END_TEST

/* compute A (stream 0) ‖ all-gather G (stream 1); compute B needs A
 * (stream) and G (dep).  B starts at max(A, G); exposed = what G sticks
 * out beyond A. */
static void
overlap_case (SpSimModel m, guint64 flops_a)
{
  g_autoptr (SpTopo) t = topo_2x4 ();
  g_autoptr (SpPlan) p = new_plan (FALSE);
  const guint64 bytes = 64u << 20;
  guint32 a = add (p, SP_COLL_COMPUTE, SP_FAMILY_NONE, 0, 0, flops_a, NULL, 0, -1);
  guint32 gid = add (p, SP_COLL_ALL_GATHER, SP_FAMILY_SHARD, bytes, 1, 0, NULL, 0, -1);
  guint32 deps[] = { gid };
  guint32 b = add (p, SP_COLL_COMPUTE, SP_FAMILY_NONE, 0, 0, 500000, deps, 1, -1); /* 500 ns */
  guint32 all[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
  guint64 c = alone (t, m, SP_COLL_ALL_GATHER, bytes, all, 8);
  guint64 ta = flops_a / 1000;
  SpGroups *g;
  SpSimResult *res = run (t, m, p, &g);
  guint64 s, e;
  ck_assert (sp_sim_result_op_time (res, p, gid, 5, &s, &e));
  ck_assert_uint_eq (s, 0);
  ck_assert_uint_eq (e, c);
  ck_assert (sp_sim_result_op_time (res, p, b, 5, &s, &e));
  ck_assert_uint_eq (s, MAX (ta, c));
  ck_assert_uint_eq (e, MAX (ta, c) + 500);
  ck_assert_uint_eq (sp_sim_result_step_ns (res), MAX (ta, c) + 500);
  ck_assert_uint_eq (sp_sim_result_compute_only_ns (res), ta + 500);
  ck_assert_uint_eq (sp_sim_result_exposed_comm_ns (res), MAX (ta, c) - ta);
  ck_assert_uint_eq (sp_sim_result_comm_ns (res), c);
  ck_assert_uint_eq (sp_sim_result_family_ns (res, SP_FAMILY_SHARD), c);
  ck_assert_uint_eq (sp_sim_result_op_duration (res, a), ta);
  sp_sim_result_free (res);
  sp_groups_free (g);
}

START_TEST (test_overlap_hidden)
{
  overlap_case (SP_SIM_ANALYTIC, G_GUINT64_CONSTANT (10000000000)); /* A = 10 ms, G hidden */
  overlap_case (SP_SIM_DES, G_GUINT64_CONSTANT (10000000000));
}
END_TEST

START_TEST (test_overlap_exposed)
{
  overlap_case (SP_SIM_ANALYTIC, 100000); /* A = 100 ns, G sticks out */
  overlap_case (SP_SIM_DES, 100000);
}
END_TEST

/* Hierarchical all-gather: inter (rank r with r ± 4) then intra (4 ranks);
 * the composite spans both. */
START_TEST (test_composite_span)
{
  g_autoptr (SpTopo) t = topo_2x4 ();
  g_autoptr (SpPlan) p = new_plan (TRUE);
  const guint64 bytes = 32u << 20;
  guint32 comp = add (p, SP_COLL_HIER_ALL_GATHER, SP_FAMILY_SHARD, bytes, 1, 0, NULL, 0, -1);
  guint32 s1 = add (p, SP_COLL_ALL_GATHER, SP_FAMILY_SHARD_INTER_NODE, bytes / 4, 1, 0, NULL, 0,
                    comp);
  guint32 d1[] = { s1 };
  add (p, SP_COLL_ALL_GATHER, SP_FAMILY_SHARD_INTRA_NODE, bytes, 1, 0, d1, 1, comp);
  guint32 d2[] = { comp };
  guint32 after = add (p, SP_COLL_COMPUTE, SP_FAMILY_NONE, 0, 0, 1000000, d2, 1, -1);
  SpGroups *g;
  SpSimResult *res = run (t, SP_SIM_ANALYTIC, p, &g);
  guint32 n1, n2;
  const guint32 *inter = sp_groups_members (g, SP_FAMILY_SHARD_INTER_NODE, 0, &n1);
  const guint32 *intra = sp_groups_members (g, SP_FAMILY_SHARD_INTRA_NODE, 0, &n2);
  ck_assert_uint_eq (n1, 2);
  ck_assert_uint_eq (n2, 4);
  guint64 c1 = alone (t, SP_SIM_ANALYTIC, SP_COLL_ALL_GATHER, bytes / 4, inter, n1);
  guint64 c2 = alone (t, SP_SIM_ANALYTIC, SP_COLL_ALL_GATHER, bytes, intra, n2);
  guint64 s, e;
  for (guint32 r = 0; r < 8; r++)
    {
      ck_assert (sp_sim_result_op_time (res, p, comp, r, &s, &e));
      ck_assert_uint_eq (s, 0);
      ck_assert_uint_eq (e, c1 + c2);
      ck_assert (sp_sim_result_op_time (res, p, after, r, &s, &e));
      ck_assert_uint_eq (s, c1 + c2);
    }
  ck_assert_uint_eq (sp_sim_result_op_duration (res, comp), c1 + c2);
  ck_assert_uint_eq (sp_sim_result_step_ns (res), c1 + c2 + 1000);
  ck_assert_uint_eq (sp_sim_result_compute_only_ns (res), 1000);
  /* the composite is not counted twice */
  ck_assert_uint_eq (sp_sim_result_kind_ns (res, SP_COLL_ALL_GATHER), c1 + c2);
  ck_assert_uint_eq (sp_sim_result_kind_ns (res, SP_COLL_HIER_ALL_GATHER), 0);
  sp_sim_result_free (res);
  sp_groups_free (g);
}
END_TEST

START_TEST (test_deterministic)
{
  g_autoptr (SpTopo) t = topo_2x4 ();
  g_autoptr (SpPlan) p = new_plan (FALSE);
  guint32 prev = add (p, SP_COLL_COMPUTE, SP_FAMILY_NONE, 0, 0, 3000000, NULL, 0, -1);
  for (int i = 0; i < 6; i++)
    {
      guint32 d[] = { prev };
      guint32 ag = add (p, SP_COLL_ALL_GATHER, SP_FAMILY_SHARD, (guint64) (i + 1) << 20, 1, 0, d,
                        1, -1);
      guint32 d2[] = { ag };
      prev = add (p, SP_COLL_COMPUTE, SP_FAMILY_NONE, 0, 0, 2000000, d2, 1, -1);
      guint32 d3[] = { prev };
      add (p, SP_COLL_REDUCE_SCATTER, SP_FAMILY_SHARD, 8u << 20, 2, 0, d3, 1, -1);
    }
  SpGroups *g1, *g2;
  SpSimResult *a = run (t, SP_SIM_DES, p, &g1);
  SpSimResult *b = run (t, SP_SIM_DES, p, &g2);
  ck_assert_uint_eq (sp_sim_result_step_ns (a), sp_sim_result_step_ns (b));
  for (guint32 o = 0; o < sp_plan_n_ops (p); o++)
    for (guint32 r = 0; r < 8; r++)
      {
        guint64 s1, e1, s2, e2;
        ck_assert (sp_sim_result_op_time (a, p, o, r, &s1, &e1));
        ck_assert (sp_sim_result_op_time (b, p, o, r, &s2, &e2));
        ck_assert_uint_eq (s1, s2);
        ck_assert_uint_eq (e1, e2);
      }
  ck_assert_uint_gt (sp_sim_result_exposed_comm_ns (a), 0);
  sp_sim_result_free (a);
  sp_sim_result_free (b);
  sp_groups_free (g1);
  sp_groups_free (g2);
}
END_TEST

/* A byte-only kernel (quantize) costs bytes / the HBM bandwidth: the H100's
 * datasheet 3350 GB/s unless [gpu] memory_bandwidth_gbs says otherwise. */
START_TEST (test_quantize_memory_bandwidth)
{
  const guint64 bytes = 67000000; /* 20,000 ns at 3350 GB/s, 33,500 at 2000 */
  for (guint k = 0; k < 2; k++)
    {
      g_autoptr (SpTopo) base = topo_2x4 ();
      SpTopoSpec s = *sp_topo_spec (base);
      s.gpu_memory_bandwidth_gbs = k == 0 ? 0 : 2000;
      GError *error = NULL;
      g_autoptr (SpTopo) t = sp_topo_new (&s, &error);
      SP_ASSERT_NO_ERROR (error);
      g_autoptr (SpPlan) p = new_plan (FALSE);
      guint32 q = add (p, SP_COLL_QUANTIZE, SP_FAMILY_NONE, bytes, 0, 0, NULL, 0, -1);
      SpGroups *g = NULL;
      SpSimResult *res = run (t, SP_SIM_DES, p, &g);
      guint64 want = k == 0 ? 20000 : 33500;
      ck_assert_uint_eq (sp_sim_result_op_duration (res, q), want);
      ck_assert_uint_eq (sp_sim_kernel_ns (t, 1.0, sp_plan_op (p, q)), want);
      sp_sim_result_free (res);
      sp_groups_free (g);
    }
}
END_TEST

START_TEST (test_fail_loud)
{
  g_autoptr (SpTopo) t = topo_2x4 ();
  g_autoptr (SpTopo) t16 = sp_topo_new_preset ("dgx-h100", 2, NULL);
  g_autoptr (SpPlan) p = new_plan (FALSE);
  add (p, SP_COLL_BARRIER, SP_FAMILY_SHARD, 0, 0, 0, NULL, 0, -1);
  add (p, SP_COLL_GATHER, SP_FAMILY_SHARD, 1024, 0, 0, NULL, 0, -1);
  GError *error = NULL;
  g_autoptr (SpGroups) g = sp_groups_build (sp_plan_groups_options (p), &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert (sp_sim_run_plan (t16, SP_SIM_ANALYTIC, p, g, &error) == NULL);
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_ARGUMENT);
  g_clear_error (&error);
  ck_assert (sp_sim_run_plan (t, SP_SIM_DES, p, g, &error) == NULL);
  SP_ASSERT_ERROR (error, SP_ERROR_UNSUPPORTED);
  ck_assert (strstr (error->message, "gather") != NULL);
  g_clear_error (&error);
  sp_plan_set_meta (p, "compute_efficiency", "2");
  ck_assert (sp_sim_run_plan (t, SP_SIM_DES, p, g, &error) == NULL);
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_PLAN);
  g_clear_error (&error);
}
END_TEST

/* A p2p op (shard groups {0..3}, {4..7}; group rank 1 sends to 2): only
 * ranks 1, 2, 5, 6 run it, for the time the pair alone takes (a send
 * between the same two ranks costs the same: one flow each way, no
 * contention); rank 0's next op does not wait for it, rank 2's does.  In
 * every model and contention mode.  Plus: a dst beyond the groups refused. */
START_TEST (test_p2p_two_ranks)
{
  g_autoptr (SpTopo) t = topo_2x4 ();
  SpGroupsOptions o;
  sp_groups_options_init (&o);
  o.world_size = 8;
  o.devices_per_node = 4;
  o.shard_size = 4;
  g_autoptr (SpPlan) p = sp_plan_new (&o);
  sp_plan_set_meta (p, "compute_efficiency", "1");
  const guint64 bytes = 64u << 20;
  guint32 a = add (p, SP_COLL_COMPUTE, SP_FAMILY_NONE, 0, 0, 1000000, NULL, 0, -1); /* 1000 ns */
  SpOp op = { .parent = -1, .name = "act", .layer = -1, .kind = SP_COLL_P2P,
              .family = SP_FAMILY_SHARD, .bytes = bytes, .count = bytes / 2,
              .dtype = SP_DTYPE_BFLOAT16, .redop = SP_REDOP_NONE, .algorithm = SP_ALGO_AUTO,
              .stream = 1, .n_deps = 1, .deps = &a, .src = 1, .dst = 2 };
  guint32 x;
  GError *error = NULL;
  ck_assert (sp_plan_add_op (p, &op, &x, &error));
  guint32 deps[] = { x };
  guint32 b = add (p, SP_COLL_COMPUTE, SP_FAMILY_NONE, 0, 0, 500000, deps, 1, -1); /* 500 ns */
  const guint32 pair[] = { 1, 2 };
  const SpSimContention modes[] = { SP_SIM_CONTENTION_NONE, SP_SIM_CONTENTION_FAMILY,
                                    SP_SIM_CONTENTION_STEP, SP_SIM_CONTENTION_NONE };
  for (guint k = 0; k < G_N_ELEMENTS (modes); k++)
    {
      SpSimModel m = k == 3 ? SP_SIM_ANALYTIC : SP_SIM_DES;
      guint64 c = alone (t, m, SP_COLL_P2P, bytes, pair, 2);
      ck_assert_uint_gt (c, 0);
      ck_assert_uint_eq (c, alone (t, m, SP_COLL_SEND, bytes, pair, 2));
      SpSimPlanOptions opts;
      sp_sim_plan_options_init (&opts);
      opts.contention = modes[k];
      g_autoptr (SpGroups) g = sp_groups_build (&o, &error);
      SP_ASSERT_NO_ERROR (error);
      SpSimResult *res = sp_sim_run_plan_full (t, m, p, g, &opts, &error);
      SP_ASSERT_NO_ERROR (error);
      guint64 s, e;
      for (guint32 r = 0; r < 8; r++)
        {
          gboolean runs = r == 1 || r == 2 || r == 5 || r == 6;
          ck_assert_int_eq (sp_sim_result_op_time (res, p, x, r, &s, &e), runs);
          if (runs)
            {
              ck_assert_uint_eq (s, 1000);
              ck_assert_uint_eq (e, 1000 + c);
            }
          ck_assert (sp_sim_result_op_time (res, p, b, r, &s, &e));
          ck_assert_uint_eq (s, runs ? 1000 + c : 1000);
        }
      ck_assert_uint_eq (sp_sim_result_step_ns (res), 1000 + c + 500);
      ck_assert_uint_eq (sp_sim_result_kind_ns (res, SP_COLL_P2P), c);
      sp_sim_result_free (res);
    }
  /* the estimate of a p2p takes exactly its two ranks */
  SpCollRequest r;
  sp_coll_request_init (&r);
  r.coll = SP_COLL_P2P;
  r.bytes = bytes;
  const guint32 three[] = { 1, 2, 3 };
  r.ranks = three;
  r.n_ranks = 3;
  SpCollEstimate est;
  ck_assert (!sp_sim_estimate (t, SP_SIM_DES, &r, &est, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_ARGUMENT);
  g_clear_error (&error);
  /* dst 5 is no member of a group of 4: refused when the groups are known */
  g_autoptr (SpPlan) bad = sp_plan_new (&o);
  op.dst = 5;
  op.n_deps = 0;
  ck_assert (sp_plan_add_op (bad, &op, NULL, &error));
  g_autoptr (SpGroups) g = sp_groups_build (&o, &error);
  ck_assert (sp_sim_run_plan (t, SP_SIM_DES, bad, g, &error) == NULL);
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_PLAN);
  ck_assert_msg (strstr (error->message, "dst 5 is not a member of shard group 0, which has 4 ranks"),
                 "%s", error->message);
  g_clear_error (&error);
}
END_TEST

static Suite *
suite (void)
{
  Suite *s = suite_create ("sim_plan");
  TCase *tc = tcase_create ("run_plan");
  tcase_set_timeout (tc, 60);
  tcase_add_test (tc, test_compute_serializes);
  tcase_add_test (tc, test_overlap_hidden);
  tcase_add_test (tc, test_overlap_exposed);
  tcase_add_test (tc, test_composite_span);
  tcase_add_test (tc, test_deterministic);
  tcase_add_test (tc, test_fail_loud);
  tcase_add_test (tc, test_quantize_memory_bandwidth);
  tcase_add_test (tc, test_p2p_two_ranks);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  return sp_test_run (suite ());
}
