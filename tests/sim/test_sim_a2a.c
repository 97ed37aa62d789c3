/* The des model's all-to-all without n(n−1) flows (sim/des-a2a.c): the
 * same-path merge (PATHS) and the symmetry classes (CLASSES) give the time
 * of the original per-pair enumeration (PAIRS) — to the ns, tolerance 1 ns
 * for floating-point summation order — on single-switch, fat-tree (with and
 * without oversubscription, NIC counts that do and do not divide a leaf),
 * rail, NVLink mesh and multi-NIC GPUs, with 1/2/4/8 ranks per node and
 * non-uniform groups; PATHS stays exact under contention; the engine's
 * checks still fire; 16,384 and 131,072 ranks run.  Relations only: no
 * absolute time of the cost model is pinned. */
#include "config.h"
#include "testutil.h"
#include "plan-testutil.h"
#include "sim-internal.h"
#include "sim-testing.h"

#include <math.h>

/* des time of a direct all_to_all in layout `mode`; G_MAXUINT64 when refused. */
static guint64
a2a_ns (const SpTopoSpec *s, SpSimA2aMode mode, guint64 bytes, const guint32 *ranks, guint32 n,
        guint32 rpn)
{
  g_autoptr (SpTopo) topo = sp_topo_new (s, NULL);
  ck_assert (topo != NULL);
  SpCollRequest r;
  sp_coll_request_init (&r);
  r.coll = SP_COLL_ALL_TO_ALL;
  r.bytes = bytes;
  r.ranks = ranks;
  r.n_ranks = n;
  r.ranks_per_node = rpn;
  SpCollEstimate e;
  GError *error = NULL;
  sp_sim_testing_a2a = mode;
  gboolean ok = sp_sim_estimate (topo, SP_SIM_DES, &r, &e, &error);
  sp_sim_testing_a2a = SP_SIM_A2A_AUTO;
  if (!ok && error->code == SP_ERROR_UNSUPPORTED)
    {
      g_clear_error (&error);
      return G_MAXUINT64;
    }
  SP_ASSERT_NO_ERROR (error);
  ck_assert (e.algo == SP_ALGO_DIRECT);
  return e.time_ns;
}

static guint64
absdiff (guint64 a, guint64 b)
{
  return a > b ? a - b : b - a;
}

/* PAIRS, PATHS, CLASSES agree on one group. */
static guint
check_modes (const SpTopoSpec *s, guint64 bytes, const guint32 *ranks, guint32 n, guint32 rpn,
             const char *what)
{
  guint64 pairs = a2a_ns (s, SP_SIM_A2A_PAIRS, bytes, ranks, n, rpn);
  guint64 paths = a2a_ns (s, SP_SIM_A2A_PATHS, bytes, ranks, n, rpn);
  guint64 classes = a2a_ns (s, SP_SIM_A2A_CLASSES, bytes, ranks, n, rpn);
  guint64 autom = a2a_ns (s, SP_SIM_A2A_AUTO, bytes, ranks, n, rpn);
  ck_assert_msg (pairs != G_MAXUINT64, "%s: per-pair refused", what);
  ck_assert_msg (absdiff (pairs, paths) <= 1 && absdiff (pairs, classes) <= 1
                   && absdiff (pairs, autom) <= 1,
                 "%s: pairs %" G_GUINT64_FORMAT " paths %" G_GUINT64_FORMAT
                 " classes %" G_GUINT64_FORMAT " auto %" G_GUINT64_FORMAT " ns",
                 what, pairs, paths, classes, autom);
  return 1;
}

static SpTopoSpec
topo_case (guint t, guint32 nodes)
{
  switch (t)
    {
    case 0: /* one switch */
      return sp_test_spec ("H100-SXM5-80GB", nodes, 8, SP_INTRA_NVSWITCH, 450, 8, 400,
                        SP_FABRIC_SINGLE_SWITCH, 1);
    case 1: /* fat-tree 1:1, 4 nodes per leaf */
      return sp_test_spec ("H100-SXM5-80GB", nodes, 8, SP_INTRA_NVSWITCH, 450, 8, 400,
                        SP_FABRIC_FAT_TREE, 1);
    case 2: /* fat-tree 2:1 */
      return sp_test_spec ("A100-SXM4-40GB", nodes, 8, SP_INTRA_NVSWITCH, 300, 4, 200,
                        SP_FABRIC_FAT_TREE, 2);
    case 3: /* rail 2:1, 32 nodes per rail switch */
      return sp_test_spec ("H100-SXM5-80GB", nodes, 8, SP_INTRA_NVSWITCH, 450, 8, 400,
                        SP_FABRIC_RAIL, 2);
    case 4: /* NVLink hybrid cube-mesh: non-neighbours over PCIe; 3 NICs straddle leaves */
      return sp_test_spec ("V100-SXM2-32GB", nodes, 8, SP_INTRA_NVLINK, 150, 3, 100,
                        SP_FABRIC_FAT_TREE, 3);
    default: /* 2 NICs per GPU (each transfer split in two), rail 1.5:1 */
      return sp_test_spec ("H100-SXM5-80GB", nodes, 4, SP_INTRA_NVSWITCH, 450, 8, 200,
                        SP_FABRIC_RAIL, 1.5);
    }
}

START_TEST (uniform_groups_agree)
{
  static const guint32 nodes[] = { 1, 2, 9, 40, 70 };
  static const guint32 rpns[] = { 1, 2, 4, 8 };
  static const guint64 sizes[] = { 1 << 16, (guint64) 1 << 30 };
  guint checked = 0;
  for (guint t = 0; t < 6; t++)
    for (guint i = 0; i < G_N_ELEMENTS (nodes); i++)
      for (guint k = 0; k < G_N_ELEMENTS (rpns); k++)
        for (guint z = 0; z < G_N_ELEMENTS (sizes); z++)
          {
            SpTopoSpec s = topo_case (t, nodes[i]);
            if (rpns[k] > s.gpus_per_node || nodes[i] * rpns[k] < 2)
              continue;
            char what[96];
            g_snprintf (what, sizeof what, "topology %u, %u nodes x %u, %" G_GUINT64_FORMAT " B", t,
                        nodes[i], rpns[k], sizes[z]);
            checked += check_modes (&s, sizes[z], NULL, 0, rpns[k], what);
          }
  ck_assert_uint_ge (checked, 200);
}
END_TEST

/* Groups whose nodes hold different local ranks, skip nodes, or list
 * ranks out of order. */
START_TEST (non_uniform_groups_agree)
{
  for (guint t = 0; t < 6; t++)
    {
      SpTopoSpec s = topo_case (t, 72);
      guint32 g = s.gpus_per_node;
      GArray *r = g_array_new (FALSE, FALSE, sizeof (guint32));
      /* (a) every node, locals depending on the node */
      for (guint32 v = 0; v < 72; v++)
        for (guint32 l = 0; l < g; l++)
          if ((l + v) % 3 != 0)
            {
              guint32 x = v * g + l;
              g_array_append_val (r, x);
            }
      check_modes (&s, (guint64) 1 << 28, (guint32 *) r->data, r->len, 0, "locals vary by node");
      /* (b) some nodes, two kinds of them, in reverse order */
      g_array_set_size (r, 0);
      static const guint32 pick[] = { 0, 3, 4, 7, 31, 33, 34, 40, 65, 71 };
      for (gint i = G_N_ELEMENTS (pick) - 1; i >= 0; i--)
        for (guint32 l = 0; l < (pick[i] % 2 ? g : MAX (1u, g / 2)); l++)
          {
            guint32 x = pick[i] * g + l;
            g_array_append_val (r, x);
          }
      check_modes (&s, (guint64) 1 << 30, (guint32 *) r->data, r->len, 0, "scattered nodes");
      /* (c) one rank on each of a few nodes, odd locals */
      g_array_set_size (r, 0);
      for (guint32 v = 0; v < 72; v += 5)
        {
          guint32 x = v * g + (v % g);
          g_array_append_val (r, x);
        }
      check_modes (&s, (guint64) 1 << 30, (guint32 *) r->data, r->len, 0, "one rank per node");
      g_array_free (r, TRUE);
    }
}
END_TEST

/* Two all-to-alls of different groups on one engine, sharing NICs and leaf
 * uplinks asymmetrically: the same-path merge is exact under any
 * contention (end times of both jobs to 1 ns). */
static void
two_jobs (SpSimA2aMode mode, guint64 out_end[2])
{
  SpTopoSpec s = topo_case (2, 24);
  g_autoptr (SpTopo) topo = sp_topo_new (&s, NULL);
  SpNet *net = sp_net_new (&s);
  SpEngine *eng = sp_engine_new (net, NULL, NULL);
  guint32 a[40], b[36];
  guint na = 0, nb = 0;
  for (guint32 v = 0; v < 10; v++)
    for (guint32 l = 0; l < 4; l++)
      a[na++] = v * 8 + l;
  for (guint32 v = 6; v < 24; v += 1)
    for (guint32 l = 3; l < 5 && nb < 36; l++)
      b[nb++] = v * 8 + l;
  SpDesColl *dc[2];
  sp_sim_testing_a2a = mode;
  for (int j = 0; j < 2; j++)
    {
      const guint32 *m = j ? b : a;
      guint32 n = j ? nb : na;
      SpShape sh;
      SpCost cost;
      GError *error = NULL;
      ck_assert (sp_shape_init (&sh, &s, m, n, &error));
      ck_assert (sp_cost_choose (&sh, SP_COLL_ALL_TO_ALL, (guint64) 1 << 28, SP_ALGO_AUTO,
                                 SP_PROTO_AUTO, &cost, &error));
      dc[j] = sp_des_coll_new (eng, net, &sh, &cost, SP_COLL_ALL_TO_ALL, (guint64) 1 << 28, m, n,
                               j * 1000, j ? "b" : "a", &error);
      SP_ASSERT_NO_ERROR (error);
    }
  sp_sim_testing_a2a = SP_SIM_A2A_AUTO;
  GError *error = NULL;
  ck_assert (sp_engine_run (eng, &error));
  SP_ASSERT_NO_ERROR (error);
  for (int j = 0; j < 2; j++)
    {
      out_end[j] = sp_engine_job_end (eng, sp_des_coll_job (dc[j]));
      sp_des_coll_free (dc[j]);
    }
  sp_engine_free (eng);
  sp_net_free (net);
}

START_TEST (paths_exact_under_contention)
{
  guint64 pairs[2], paths[2], alone_a;
  two_jobs (SP_SIM_A2A_PAIRS, pairs);
  two_jobs (SP_SIM_A2A_PATHS, paths);
  ck_assert_msg (absdiff (pairs[0], paths[0]) <= 1 && absdiff (pairs[1], paths[1]) <= 1,
                 "pairs %" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT " paths %" G_GUINT64_FORMAT
                 "/%" G_GUINT64_FORMAT,
                 pairs[0], pairs[1], paths[0], paths[1]);
  /* and they did contend: job a is slower than alone */
  SpTopoSpec s = topo_case (2, 24);
  guint32 a[40];
  for (guint32 i = 0; i < 40; i++)
    a[i] = (i / 4) * 8 + i % 4;
  alone_a = a2a_ns (&s, SP_SIM_A2A_PAIRS, (guint64) 1 << 28, a, 40, 0);
  ck_assert_uint_gt (pairs[0], alone_a);
}
END_TEST

/* The engine's checks see the members of merged flows. */
static void
expect_fault (SpSimA2aMode mode, SpSimFault fault, guint32 nodes, guint32 rpn, const char *needle)
{
  SpTopoSpec s = topo_case (3, nodes);
  g_autoptr (SpTopo) topo = sp_topo_new (&s, NULL);
  SpCollRequest r;
  sp_coll_request_init (&r);
  r.coll = SP_COLL_ALL_TO_ALL;
  r.bytes = (guint64) 1 << 30;
  r.ranks_per_node = rpn;
  SpCollEstimate e;
  GError *error = NULL;
  sp_sim_testing_a2a = mode;
  sp_sim_testing_fault = fault;
  gboolean ok = sp_sim_estimate (topo, SP_SIM_DES, &r, &e, &error);
  sp_sim_testing_fault = SP_SIM_FAULT_NONE;
  ck_assert (!ok);
  SP_ASSERT_ERROR (error, SP_ERROR_SIMULATION);
  ck_assert_msg (strstr (error->message, needle) != NULL, "message: %s", error->message);
  g_clear_error (&error);
  ck_assert (sp_sim_estimate (topo, SP_SIM_DES, &r, &e, &error));
  sp_sim_testing_a2a = SP_SIM_A2A_AUTO;
}

START_TEST (checks_fire_on_merged_flows)
{
  for (SpSimA2aMode m = SP_SIM_A2A_PATHS; m <= SP_SIM_A2A_CLASSES; m++)
    {
      expect_fault (m, SP_SIM_FAULT_LOSE_BYTES, 40, 0, "received");
      expect_fault (m, SP_SIM_FAULT_DROP_JOB, 40, 0, "did not finish");
      /* one member per class: twice its link's rate beats the bound */
      expect_fault (m, SP_SIM_FAULT_OVERSPEED, 2, 1, "lower bound");
    }
}
END_TEST

/* Large groups: the symmetry classes agree with the same-path merge on 2,048
 * ranks of a rail 2:1 fabric (8 rail blocks), and 16,384 / 131,072 ranks
 * run (issue 10: the des model refused above ~2,048 ranks). */
START_TEST (large_groups)
{
  SpTopoSpec s = topo_case (3, 256);
  guint64 paths = a2a_ns (&s, SP_SIM_A2A_PATHS, (guint64) 1 << 30, NULL, 0, 0);
  guint64 classes = a2a_ns (&s, SP_SIM_A2A_CLASSES, (guint64) 1 << 30, NULL, 0, 0);
  ck_assert_msg (absdiff (paths, classes) <= 1, "paths %" G_GUINT64_FORMAT " classes %"
                 G_GUINT64_FORMAT, paths, classes);
  s = topo_case (1, 300); /* fat-tree 1:1, 75 leaves, the last one full */
  paths = a2a_ns (&s, SP_SIM_A2A_PATHS, (guint64) 1 << 30, NULL, 0, 4);
  classes = a2a_ns (&s, SP_SIM_A2A_CLASSES, (guint64) 1 << 30, NULL, 0, 4);
  ck_assert_msg (absdiff (paths, classes) <= 1, "fat-tree: paths %" G_GUINT64_FORMAT " classes %"
                 G_GUINT64_FORMAT, paths, classes);
  s = topo_case (4, 200); /* 3 NICs per node: islands of 32 nodes over 3 leaves */
  paths = a2a_ns (&s, SP_SIM_A2A_PATHS, (guint64) 1 << 30, NULL, 0, 0);
  classes = a2a_ns (&s, SP_SIM_A2A_CLASSES, (guint64) 1 << 30, NULL, 0, 0);
  ck_assert_msg (absdiff (paths, classes) <= 1, "3 NICs: paths %" G_GUINT64_FORMAT " classes %"
                 G_GUINT64_FORMAT, paths, classes);
  for (guint32 nodes = 2048; nodes <= 16384; nodes *= 8)
    {
      s = topo_case (3, nodes);
      guint64 t = a2a_ns (&s, SP_SIM_A2A_AUTO, (guint64) 1 << 30, NULL, 0, 0);
      ck_assert_msg (t != G_MAXUINT64, "%u ranks refused", nodes * 8);
      ck_assert_uint_gt (t, 0);
    }
  s = topo_case (4, 16384); /* 131,072 V100s, 3 NICs per node, fat-tree 3:1 */
  ck_assert_uint_ne (a2a_ns (&s, SP_SIM_A2A_AUTO, (guint64) 1 << 30, NULL, 0, 0), G_MAXUINT64);
}
END_TEST


/* Whole plans: two all-to-alls of one group on two streams (they overlap
 * and contend).  Returns each op's duration (longest span) and the
 * fallback count. */
static void
plan_a2a (const SpTopoSpec *s, guint32 world, SpSimContention contention, SpSimA2aMode mode,
          guint64 out_dur[2], guint32 *out_fallbacks)
{
  g_autoptr (SpTopo) topo = sp_topo_new (s, NULL);
  SpGroupsOptions g;
  sp_groups_options_init (&g);
  g.world_size = world;
  g.devices_per_node = s->gpus_per_node;
  g.shard_size = world;
  g_autoptr (SpPlan) p = sp_plan_new (&g);
  sp_plan_set_meta (p, "compute_efficiency", "1");
  guint32 a = sp_test_plan_add (p, SP_COLL_ALL_TO_ALL, SP_FAMILY_SHARD, 64u << 20, 1, 0, NULL, 0,
                                -1, SP_ALGO_AUTO);
  guint32 b = sp_test_plan_add (p, SP_COLL_ALL_TO_ALL, SP_FAMILY_SHARD, 16u << 20, 2, 0, NULL, 0,
                                -1, SP_ALGO_AUTO);
  GError *error = NULL;
  SpGroups *groups = sp_groups_build (sp_plan_groups_options (p), &error);
  SP_ASSERT_NO_ERROR (error);
  SpSimPlanOptions o;
  sp_sim_plan_options_init (&o);
  o.contention = contention;
  sp_sim_testing_a2a = mode;
  SpSimResult *res = sp_sim_run_plan_full (topo, SP_SIM_DES, p, groups, &o, &error);
  sp_sim_testing_a2a = SP_SIM_A2A_AUTO;
  SP_ASSERT_NO_ERROR (error);
  ck_assert (res != NULL);
  out_dur[0] = sp_sim_result_op_duration (res, a);
  out_dur[1] = sp_sim_result_op_duration (res, b);
  *out_fallbacks = sp_sim_result_contention_fallbacks (res);
  sp_sim_result_free (res);
  sp_groups_free (groups);
}

/* Contention step and family use the same layouts: same times as the
 * per-pair enumeration, and a 16,384-rank all-to-all now runs inside the
 * step's engine instead of falling back to its alone duration. */
START_TEST (plans_use_the_layouts)
{
  SpTopoSpec s = topo_case (3, 64);
  for (SpSimContention c = SP_SIM_CONTENTION_FAMILY; c <= SP_SIM_CONTENTION_STEP; c++)
    {
      guint64 pairs[2], autom[2], classes[2];
      guint32 fb_pairs, fb_auto, fb_classes;
      plan_a2a (&s, 512, c, SP_SIM_A2A_PAIRS, pairs, &fb_pairs);
      plan_a2a (&s, 512, c, SP_SIM_A2A_AUTO, autom, &fb_auto);
      /* two all-to-alls of one group contend symmetrically: classes exact too */
      plan_a2a (&s, 512, c, SP_SIM_A2A_CLASSES, classes, &fb_classes);
      ck_assert_uint_eq (fb_pairs + fb_auto + fb_classes, 0);
      for (int i = 0; i < 2; i++)
        ck_assert_msg (absdiff (pairs[i], autom[i]) <= 1 && absdiff (pairs[i], classes[i]) <= 1,
                       "contention %d op %d: pairs %" G_GUINT64_FORMAT " auto %" G_GUINT64_FORMAT
                       " classes %" G_GUINT64_FORMAT,
                       (int) c, i, pairs[i], autom[i], classes[i]);
    }
  s = topo_case (3, 2048);
  guint64 step[2];
  guint32 fb;
  plan_a2a (&s, 16384, SP_SIM_CONTENTION_STEP, SP_SIM_A2A_AUTO, step, &fb);
  ck_assert_uint_eq (fb, 0);
  /* they overlapped: each slower than alone */
  guint64 alone = a2a_ns (&s, SP_SIM_A2A_AUTO, 64u << 20, NULL, 0, 0);
  ck_assert_uint_gt (step[0], alone);
  alone = a2a_ns (&s, SP_SIM_A2A_AUTO, 16u << 20, NULL, 0, 0);
  ck_assert_uint_gt (step[1], alone);
}
END_TEST

/* How many engine entries the layouts take (the point of it all). */
START_TEST (layout_sizes)
{
  SpTopoSpec s = topo_case (3, 2048);
  SpNet *net = sp_net_new (&s);
  guint32 n = 16384;
  guint32 *ranks = g_new (guint32, n);
  for (guint32 i = 0; i < n; i++)
    ranks[i] = i;
  SpA2a *a = sp_a2a_new (net, &s, ranks, n);
  ck_assert_int_eq (sp_a2a_mode (a), SP_SIM_A2A_CLASSES);
  /* 16,384 × 7 intra pairs and a few dozen classes of inter-node members */
  ck_assert_uint_le (sp_a2a_flows (a), 16384 * 7 + 20000);
  sp_a2a_free (a);
  g_free (ranks);
  sp_net_free (net);
}
END_TEST

int
main (void)
{
  Suite *s = suite_create ("sim_a2a");
  TCase *tc = tcase_create ("core");
  tcase_set_timeout (tc, 300);
  tcase_add_test (tc, uniform_groups_agree);
  tcase_add_test (tc, non_uniform_groups_agree);
  tcase_add_test (tc, paths_exact_under_contention);
  tcase_add_test (tc, checks_fire_on_merged_flows);
  tcase_add_test (tc, large_groups);
  tcase_add_test (tc, layout_sizes);
  tcase_add_test (tc, plans_use_the_layouts);
  suite_add_tcase (s, tc);
  return sp_test_run (s);
}
