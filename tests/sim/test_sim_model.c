/* The analytic model against hand-computed numbers: NCCL's worked examples
 * (reference/nccl-cost-model.md §1.9), the topology-derived bandwidths, the
 * automatic choice and the refusals. */
#include "config.h"
#include "testutil.h"
#include "sim-internal.h"

#include <math.h>

static SpTopoSpec
spec_h100 (guint32 nodes)
{
  SpTopoSpec s = { 0 };
  g_strlcpy (s.name, "h100", sizeof s.name);
  g_strlcpy (s.gpu_model, "H100-SXM5-80GB", sizeof s.gpu_model);
  s.nodes = nodes;
  s.gpus_per_node = 8;
  s.gpu_memory_gib = 80;
  s.gpu_tflops = 989;
  s.intra_kind = SP_INTRA_NVSWITCH;
  s.intra_bandwidth_gbs = 450;
  s.intra_latency_us = 0.6; /* NCCL NVLINK Ring LL */
  s.nics_per_node = 8;
  s.nic_gbps = 400;
  s.inter_latency_us = 2.7; /* NCCL NET Ring LL */
  s.fabric = SP_FABRIC_RAIL;
  s.oversubscription = 1;
  return s;
}

static SpShape
shape_all (const SpTopoSpec *s)
{
  guint32 n = s->nodes * s->gpus_per_node;
  g_autofree guint32 *r = g_new (guint32, n);
  for (guint32 i = 0; i < n; i++)
    r[i] = i;
  SpShape sh;
  GError *error = NULL;
  ck_assert (sp_shape_init (&sh, s, r, n, &error));
  return sh;
}

#define ASSERT_NEAR(a, b, tol) \
  ck_assert_msg (fabs ((a) - (b)) <= (tol), "%s = %.6f, expected %.6f", #a, (double) (a), (double) (b))

START_TEST (worked_example_single_node_latency)
{
  /* §1.9: 8×H100 ring all-gather: Simple 8.4 + 7×3.4, LL 6.6 + 7×0.6,
   * LL128 14 + 7×1.9 µs */
  SpTopoSpec s = spec_h100 (1);
  SpShape sh = shape_all (&s);
  SpCost c;
  sp_cost_compute (&sh, SP_COLL_ALL_GATHER, 1024, SP_ALGO_RING, SP_PROTO_SIMPLE, &c);
  ASSERT_NEAR (c.latency_us, 32.2, 1e-9);
  sp_cost_compute (&sh, SP_COLL_ALL_GATHER, 1024, SP_ALGO_RING, SP_PROTO_LL, &c);
  ASSERT_NEAR (c.latency_us, 10.8, 1e-9);
  sp_cost_compute (&sh, SP_COLL_ALL_GATHER, 1024, SP_ALGO_RING, SP_PROTO_LL128, &c);
  ASSERT_NEAR (c.latency_us, 27.3, 1e-9);
}
END_TEST

START_TEST (worked_example_16gib_gather)
{
  /* §1.9: bus bandwidth 18 NVLinks × 20.6 GB/s = 370.8, algBw = 370.8×8/7,
   * 16 GiB gather ≈ 32.2 µs + 17.18e9 / (1000 × 423.8) µs ≈ 40.6 ms */
  SpTopoSpec s = spec_h100 (1);
  SpShape sh = shape_all (&s);
  ASSERT_NEAR (sh.intra_gbs, 370.8, 1e-9);
  SpCost c;
  guint64 S = (guint64) 16 << 30;
  sp_cost_compute (&sh, SP_COLL_ALL_GATHER, S, SP_ALGO_RING, SP_PROTO_SIMPLE, &c);
  double expect = 32.2 + (double) S / (1000.0 * 370.8 * 8 / 7);
  ASSERT_NEAR (c.time_us, expect, 1e-6);
  ck_assert (fabs (c.time_us - 40.6e3) < 0.1e3);
}
END_TEST

START_TEST (worked_example_two_nodes_allreduce)
{
  /* §1.9: 16 ranks, ring all-reduce: Simple 8.4 + 28×max(3.4, 3) + 2×14 =
   * 131.6 µs (×1.4 for large messages); LL 6.6 + 28×max(0.6, 1) + 2×2.7 = 40 */
  SpTopoSpec s = spec_h100 (2);
  SpShape sh = shape_all (&s);
  SpCost c;
  sp_cost_compute (&sh, SP_COLL_ALL_REDUCE, 1024, SP_ALGO_RING, SP_PROTO_SIMPLE, &c);
  ASSERT_NEAR (c.latency_us, 131.6, 1e-9);
  sp_cost_compute (&sh, SP_COLL_ALL_REDUCE, 1 << 30, SP_ALGO_RING, SP_PROTO_SIMPLE, &c);
  ASSERT_NEAR (c.latency_us, 131.6 * 1.4, 1e-9);
  sp_cost_compute (&sh, SP_COLL_ALL_REDUCE, 1024, SP_ALGO_RING, SP_PROTO_LL, &c);
  ASSERT_NEAR (c.latency_us, 40.0, 1e-9);
}
END_TEST

START_TEST (ring_bandwidth_from_topology)
{
  /* dgx-a100 numbers: NVLink 300 GB/s × 20/25 = 240; 8 NICs × 200 Gb/s /8
   * × 0.96 = 192 GB/s per node; the ring crossing the node is limited by
   * min(240, 192) = 192; with one rank per node, the rank's single NIC: 24. */
  SpTopoSpec s = spec_h100 (4);
  g_strlcpy (s.gpu_model, "A100-SXM4-80GB", sizeof s.gpu_model);
  s.intra_bandwidth_gbs = 300;
  s.nic_gbps = 200;
  SpShape sh = shape_all (&s);
  ASSERT_NEAR (sh.intra_gbs, 240, 1e-9);
  ASSERT_NEAR (sh.node_net_gbs, 192, 1e-9);
  ASSERT_NEAR (sh.ring_gbs, 192, 1e-9);
  guint32 r[4] = { 0, 8, 16, 24 };
  GError *error = NULL;
  ck_assert (sp_shape_init (&sh, &s, r, 4, &error));
  ck_assert_uint_eq (sh.ppn, 1);
  ck_assert_uint_eq (sh.nics_used, 1);
  ASSERT_NEAR (sh.ring_gbs, 24, 1e-9);
  /* Simple ring all-reduce of 1 GB over those 4 ranks: busBw 24, algBw
   * 24 × 4/6 = 16 GB/s */
  SpCost c;
  sp_cost_compute (&sh, SP_COLL_ALL_REDUCE, 1000000000, SP_ALGO_RING, SP_PROTO_SIMPLE, &c);
  ASSERT_NEAR (c.algbw, 16, 1e-9);
}
END_TEST

START_TEST (protocols_and_caps)
{
  SpTopoSpec s = spec_h100 (1);
  SpShape sh = shape_all (&s);
  SpCost c;
  /* LL: min(0.5 × 370.8, llMaxBw Hopper 1 node 141) = 141 */
  sp_cost_compute (&sh, SP_COLL_ALL_GATHER, 1 << 20, SP_ALGO_RING, SP_PROTO_LL, &c);
  ASSERT_NEAR (c.algbw, 141.0 * 8 / 7, 1e-9);
  /* LL128: 0.92 × 370.8 (cap 18 ch × 36.7 = 660.6 not reached) */
  sp_cost_compute (&sh, SP_COLL_ALL_GATHER, 1 << 20, SP_ALGO_RING, SP_PROTO_LL128, &c);
  ASSERT_NEAR (c.algbw, 0.92 * 370.8 * 8 / 7, 1e-9);
  /* NVLS all-reduce: 0.85 × 370.8 × 8/9 algBw */
  sp_cost_compute (&sh, SP_COLL_ALL_REDUCE, 1 << 30, SP_ALGO_NVLS, SP_PROTO_SIMPLE, &c);
  ASSERT_NEAR (c.algbw, 0.85 * 370.8 * 8 / 9, 1e-9);
  ASSERT_NEAR (c.latency_us, 25.0, 1e-9);
}
END_TEST

START_TEST (automatic_choice_is_the_minimum)
{
  SpTopoSpec s = spec_h100 (4);
  SpShape sh = shape_all (&s);
  static const SpAlgo algos[] = { SP_ALGO_TREE, SP_ALGO_RING, SP_ALGO_NVLS };
  static const SpProto protos[] = { SP_PROTO_LL, SP_PROTO_LL128, SP_PROTO_SIMPLE };
  for (guint64 S = 64; S <= ((guint64) 1 << 32); S *= 16)
    {
      SpCost best;
      GError *error = NULL;
      ck_assert (sp_cost_choose (&sh, SP_COLL_ALL_REDUCE, S, SP_ALGO_AUTO, SP_PROTO_AUTO, &best,
                                 &error));
      for (guint a = 0; a < 3; a++)
        for (guint p = 0; p < 3; p++)
          if (sp_cost_enabled (&sh, SP_COLL_ALL_REDUCE, algos[a], protos[p], NULL))
            {
              SpCost c;
              sp_cost_compute (&sh, SP_COLL_ALL_REDUCE, S, algos[a], protos[p], &c);
              ck_assert (best.time_us <= c.time_us);
            }
    }
  /* small messages go LL, large ones not */
  SpCost c;
  ck_assert (sp_cost_choose (&sh, SP_COLL_ALL_REDUCE, 1024, SP_ALGO_AUTO, SP_PROTO_AUTO, &c, NULL));
  ck_assert_int_eq (c.proto, SP_PROTO_LL);
  ck_assert (sp_cost_choose (&sh, SP_COLL_ALL_REDUCE, 1 << 30, SP_ALGO_AUTO, SP_PROTO_AUTO, &c, NULL));
  ck_assert_int_ne (c.proto, SP_PROTO_LL);
}
END_TEST

START_TEST (refusals)
{
  SpTopoSpec s = spec_h100 (2);
  g_strlcpy (s.gpu_model, "A100-SXM4-80GB", sizeof s.gpu_model);
  g_autoptr (SpTopo) topo = sp_topo_new (&s, NULL);
  ck_assert (topo != NULL);
  SpCollRequest r;
  sp_coll_request_init (&r);
  r.bytes = 1 << 20;
  r.algo = SP_ALGO_NVLS;
  SpCollEstimate e;
  GError *error = NULL;
  ck_assert (!sp_sim_estimate (topo, SP_SIM_ANALYTIC, &r, &e, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_UNSUPPORTED);
  ck_assert (strstr (error->message, "nvls") != NULL);
  g_clear_error (&error);
  r.algo = SP_ALGO_AUTO;
  r.ranks_per_node = 9;
  ck_assert (!sp_sim_estimate (topo, SP_SIM_DES, &r, &e, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_ARGUMENT);
  g_clear_error (&error);
  guint32 dup[3] = { 1, 2, 1 };
  r.ranks_per_node = 0;
  r.ranks = dup;
  r.n_ranks = 3;
  ck_assert (!sp_sim_estimate (topo, SP_SIM_DES, &r, &e, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_ARGUMENT);
  ck_assert (strstr (error->message, "rank 1 appears twice") != NULL);
  g_clear_error (&error);
  guint32 out[2] = { 1, 99 };
  r.ranks = out;
  r.n_ranks = 2;
  ck_assert (!sp_sim_estimate (topo, SP_SIM_ANALYTIC, &r, &e, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_ARGUMENT);
  g_clear_error (&error);
  r.ranks = NULL;
  r.coll = SP_COLL_GATHER;
  ck_assert (!sp_sim_estimate (topo, SP_SIM_ANALYTIC, &r, &e, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_UNSUPPORTED);
  g_clear_error (&error);
}
END_TEST

START_TEST (arch_detection)
{
  ck_assert_int_eq (sp_sim_arch_of ("H100-SXM5-80GB"), SP_ARCH_HOPPER);
  ck_assert_int_eq (sp_sim_arch_of ("A100-SXM4-40GB"), SP_ARCH_AMPERE);
  ck_assert_int_eq (sp_sim_arch_of ("V100-SXM2-32GB"), SP_ARCH_VOLTA);
  ck_assert_int_eq (sp_sim_arch_of ("B200"), SP_ARCH_BLACKWELL);
  ck_assert_int_eq (sp_sim_arch_of ("cpu-core"), SP_ARCH_CPU);
}
END_TEST

/* [calibration] in the cost model.  cpu-shm: 4 ranks on one node over
 * shm, whose derived efficiency is 1 (README-model §2). */
static guint64
shm_time (const SpTopoSpec *s, SpSimModel model, SpColl coll, guint64 bytes, SpProto proto)
{
  GError *error = NULL;
  g_autoptr (SpTopo) t = sp_topo_new (s, &error);
  SP_ASSERT_NO_ERROR (error);
  SpCollRequest r;
  sp_coll_request_init (&r);
  r.coll = coll;
  r.bytes = bytes;
  r.algo = SP_ALGO_RING;
  r.proto = proto;
  SpCollEstimate e;
  ck_assert_msg (sp_sim_estimate (t, model, &r, &e, &error), "%s", error ? error->message : "");
  ck_assert_int_eq (e.proto, proto);
  return e.time_ns;
}

START_TEST (calibrated_overhead_adds_exactly)
{
  /* a protocol's overhead adds exactly that many µs to every collective
   * using it (analytic and des), and nothing to the other protocol */
  g_autoptr (SpTopo) p = sp_topo_new_preset ("cpu-shm", 1, NULL);
  SpTopoSpec s = *sp_topo_spec (p);
  SpTopoSpec c = s;
  c.cal_overhead_us[SP_PROTO_SIMPLE] = 7.5;
  c.cal_overhead_us[SP_PROTO_LL] = 0.25;
  for (SpSimModel m = SP_SIM_ANALYTIC; m <= SP_SIM_DES; m++)
    for (guint64 bytes = 4096; bytes <= (4u << 20); bytes *= 32)
      {
        gint64 d_simple = (gint64) shm_time (&c, m, SP_COLL_ALL_REDUCE, bytes, SP_PROTO_SIMPLE)
                          - (gint64) shm_time (&s, m, SP_COLL_ALL_REDUCE, bytes, SP_PROTO_SIMPLE);
        gint64 d_ll = (gint64) shm_time (&c, m, SP_COLL_ALL_GATHER, bytes, SP_PROTO_LL)
                      - (gint64) shm_time (&s, m, SP_COLL_ALL_GATHER, bytes, SP_PROTO_LL);
        ck_assert_msg (d_simple >= 7499 && d_simple <= 7501, "%s %" G_GUINT64_FORMAT " B: simple +%"
                       G_GINT64_FORMAT " ns", sp_sim_model_name (m), bytes, d_simple);
        ck_assert_msg (d_ll >= 249 && d_ll <= 251, "%s ll +%" G_GINT64_FORMAT " ns",
                       sp_sim_model_name (m), d_ll);
      }
  /* a negative overhead removes latency but never below 0: ring simple
   * all-reduce on 4 shm ranks has latency 14 + 6 × (1 + 0) µs ... */
  c.cal_overhead_us[SP_PROTO_SIMPLE] = -1000;
  guint64 t = shm_time (&c, SP_SIM_ANALYTIC, SP_COLL_ALL_REDUCE, 1 << 20, SP_PROTO_SIMPLE);
  /* ... so what is left is the transfer: 2·3/4 · 1 MiB at 10 GB/s */
  ck_assert_msg (t >= 157286 && t <= 157287, "t = %" G_GUINT64_FORMAT, t);
}
END_TEST

START_TEST (calibrated_efficiency_scales_bandwidth)
{
  /* ring/simple all-gather of S = 12 MiB on 4 shm ranks: busBw = eff ×
   * 10 GB/s, algBw = busBw × 4/3, transfer = S / algBw.  eff 1 → 943.7184
   * µs, eff 0.5 → 1887.4368 µs; the latency is the same in both. */
  g_autoptr (SpTopo) p = sp_topo_new_preset ("cpu-shm", 1, NULL);
  SpTopoSpec one = *sp_topo_spec (p), half = one;
  one.cal_intra_efficiency = 1.0;
  half.cal_intra_efficiency = 0.5;
  guint64 S = 12u << 20;
  guint64 t_model = shm_time (sp_topo_spec (p), SP_SIM_ANALYTIC, SP_COLL_ALL_GATHER, S, SP_PROTO_SIMPLE);
  guint64 t1 = shm_time (&one, SP_SIM_ANALYTIC, SP_COLL_ALL_GATHER, S, SP_PROTO_SIMPLE);
  guint64 t2 = shm_time (&half, SP_SIM_ANALYTIC, SP_COLL_ALL_GATHER, S, SP_PROTO_SIMPLE);
  ck_assert_uint_eq (t_model, t1); /* shm's own efficiency is 1 */
  gint64 d = (gint64) t2 - (gint64) t1;
  ck_assert_msg (d >= 943717 && d <= 943719, "eff 0.5 adds %" G_GINT64_FORMAT " ns", d);
  /* the link rates the model derives: intra = eff × 10 GB/s; NIC =
   * 10 Gbit/s / 8 × the model's own 0.96 until nic_efficiency is set */
  double intra, nic;
  sp_sim_link_rates (&half, &intra, &nic);
  ASSERT_NEAR (intra, 5.0, 1e-12);
  ASSERT_NEAR (nic, 10.0 / 8 * 0.96, 1e-12);
  half.cal_nic_efficiency = 0.5;
  sp_sim_link_rates (&half, &intra, &nic);
  ASSERT_NEAR (nic, 10.0 / 8 * 0.5, 1e-12);
}
END_TEST

int
main (void)
{
  Suite *s = suite_create ("sim_model");
  TCase *tc = tcase_create ("analytic");
  tcase_add_test (tc, worked_example_single_node_latency);
  tcase_add_test (tc, worked_example_16gib_gather);
  tcase_add_test (tc, worked_example_two_nodes_allreduce);
  tcase_add_test (tc, ring_bandwidth_from_topology);
  tcase_add_test (tc, protocols_and_caps);
  tcase_add_test (tc, automatic_choice_is_the_minimum);
  tcase_add_test (tc, refusals);
  tcase_add_test (tc, arch_detection);
  tcase_add_test (tc, calibrated_overhead_adds_exactly);
  tcase_add_test (tc, calibrated_efficiency_scales_bandwidth);
  suite_add_tcase (s, tc);
  return sp_test_run (s);
}
