/* The discrete-event flow model: closed forms computed by hand, contention
 * (oversubscription, a shared NIC), determinism, the fail-loud checks, and
 * agreement with the analytic model within 5 %. */
#include "config.h"
#include "testutil.h"
#include "plan-testutil.h"
#include "sim-internal.h"
#include "sim-testing.h"

#include <math.h>

/* sp_test_spec with the NIC rate pinned: these tests check the flow
 * mechanics at a known NIC rate, 0.96 of the line rate (the transport
 * model's own efficiency is tests/sim/test_sim_model.c's business). */
static SpTopoSpec
spec_base (const char *gpu, guint32 nodes, guint32 gpn, SpIntraKind kind, double intra_gbs,
           guint32 nics, double nic_gbps, SpFabric fabric, double oversub)
{
  SpTopoSpec s = sp_test_spec (gpu, nodes, gpn, kind, intra_gbs, nics, nic_gbps, fabric, oversub);
  s.cal_nic_efficiency = 0.96;
  return s;
}

static guint64
estimate (const SpTopoSpec *s, SpSimModel model, SpColl coll, guint64 bytes, const guint32 *ranks,
          guint32 n, guint32 rpn, SpAlgo algo, SpProto proto, SpCollEstimate *out)
{
  g_autoptr (SpTopo) topo = sp_topo_new (s, NULL);
  ck_assert (topo != NULL);
  SpCollRequest r;
  sp_coll_request_init (&r);
  r.coll = coll;
  r.bytes = bytes;
  r.ranks = ranks;
  r.n_ranks = n;
  r.ranks_per_node = rpn;
  r.algo = algo;
  r.proto = proto;
  SpCollEstimate e;
  GError *error = NULL;
  gboolean ok = sp_sim_estimate (topo, model, &r, &e, &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert (ok);
  if (out)
    *out = e;
  return e.time_ns;
}

/* des ring all-gather (Simple) of `bytes` over `ranks` (NULL: every
 * rank in order), ns */
static guint64
des_ring_ag (const SpTopoSpec *s, guint64 bytes, const guint32 *ranks, guint32 n)
{
  return estimate (s, SP_SIM_DES, SP_COLL_ALL_GATHER, bytes, ranks, n, 0, SP_ALGO_RING,
                   SP_PROTO_SIMPLE, NULL);
}

START_TEST (ring_all_gather_one_node)
{
  /* 8 A100 on NVSwitch, ring Simple, 1 GB: every GPU port carries 7/8 GB
   * at 300 × 20/25 = 240 GB/s: 3,645,833.33 ns, plus NCCL's latency
   * 8.4 + 7 × 3.4 = 32.2 µs. */
  SpTopoSpec s = spec_base ("A100", 1, 8, SP_INTRA_NVSWITCH, 300, 8, 200, SP_FABRIC_RAIL, 1);
  guint64 t = estimate (&s, SP_SIM_DES, SP_COLL_ALL_GATHER, 1000000000, NULL, 0, 0, SP_ALGO_RING,
                        SP_PROTO_SIMPLE, NULL);
  double expect = 32200 + 0.875e9 / 240.0;
  ck_assert_msg (fabs ((double) t - expect) <= 2, "t = %" G_GUINT64_FORMAT ", expected %.1f", t, expect);
}
END_TEST

START_TEST (two_nodes_one_nic)
{
  /* 2 nodes × 1 GPU, one 100 Gb/s NIC each: 12.5 × 0.96 = 12 GB/s.  Ring
   * all-gather of 1 GB over 2 ranks: each edge carries 0.5 GB: 41,666,667
   * ns, plus latency 8.4 + 1 × 14 (Tree NET row with one rank per node). */
  SpTopoSpec s = spec_base ("A100", 2, 1, SP_INTRA_NVSWITCH, 300, 1, 100, SP_FABRIC_SINGLE_SWITCH, 1);
  guint64 t = estimate (&s, SP_SIM_DES, SP_COLL_ALL_GATHER, 1000000000, NULL, 0, 0, SP_ALGO_RING,
                        SP_PROTO_SIMPLE, NULL);
  double expect = 8400 + 14000 + 0.5e9 / 12.0;
  ck_assert_msg (fabs ((double) t - expect) <= 2, "t = %" G_GUINT64_FORMAT ", expected %.1f", t, expect);
}
END_TEST

START_TEST (oversubscription_halves_a_bisection)
{
  /* 64 nodes × 1 GPU × 1 NIC on a fat-tree: leaves of 32 NICs, so two
   * leaves.  A ring that alternates leaves (0, 32, 1, 33, …) sends every
   * edge through the spine: 32 edges up per leaf.  At 1:1 each edge gets
   * the NIC's 12 GB/s; at 2:1 the uplinks carry 16 NICs' worth: 6 GB/s. */
  guint32 order[64];
  for (guint32 i = 0; i < 32; i++)
    {
      order[2 * i] = i;
      order[2 * i + 1] = 32 + i;
    }
  guint64 S = 64000000000ull; /* per-edge share 63/64 S */
  SpTopoSpec s1 = spec_base ("A100", 64, 1, SP_INTRA_NVSWITCH, 300, 1, 100, SP_FABRIC_FAT_TREE, 1);
  SpTopoSpec s2 = s1;
  s2.oversubscription = 2;
  guint64 t1 = des_ring_ag (&s1, S, order, 64), t2 = des_ring_ag (&s2, S, order, 64);
  /* latency: 8.4 + 63 × 14 µs (Tree NET row, ppn 1) */
  double lat = 8400 + 63 * 14000.0;
  double edge = S * 63.0 / 64.0;
  ck_assert (fabs ((double) t1 - (lat + edge / 12.0)) <= 2);
  ck_assert (fabs ((double) t2 - (lat + edge / 6.0)) <= 2);
  /* a block ring (0, 1, …, 63) crosses the spine only twice per leaf and
   * keeps the full rate at 2:1 */
  ck_assert_uint_eq (des_ring_ag (&s2, S, NULL, 0), t1);
}
END_TEST

/* A partly populated last leaf keeps the switch's uplinks: 33 nodes x
 * 1 GPU x 1 NIC at 4:1 are a full leaf of 32 NICs and a leaf with one.
 * A ring whose edge 31 -> 32 and 32 -> 0 cross the spine runs at the NIC's
 * rate: that leaf's uplinks are 32 / 4 = 8 NICs' worth, not 1 / 4 (the
 * flow model once sized them by the populated ports and ran it at a
 * quarter of the rate, 3x the closed form). */
START_TEST (partial_leaf_keeps_its_uplinks)
{
  guint64 S = 1ull << 30;
  SpTopoSpec s = spec_base ("A100", 33, 1, SP_INTRA_NVSWITCH, 300, 1, 100, SP_FABRIC_FAT_TREE, 4);
  SpTopoSpec s1 = s;
  s1.oversubscription = 1;
  guint64 t1 = des_ring_ag (&s1, S, NULL, 0);
  ck_assert_uint_eq (des_ring_ag (&s, S, NULL, 0), t1);
  s.fabric = SP_FABRIC_RAIL;
  ck_assert_uint_eq (des_ring_ag (&s, S, NULL, 0), t1);
}
END_TEST

/* Max-min filling must survive rounding: 47 flows of irregular weights
 * saturate one GPU port and freeze together; the sum of their weights,
 * taken off the port one by one, leaves a rounding residue, which once
 * posed as a bottleneck of rate 0 with no flow left on it, froze nothing
 * and stopped the fill (an assertion: found by fuzz-estimate, an
 * all-to-all over 96 nodes x 8 GPUs with 47 NICs each).  The last flow
 * (another port) still gets its whole port. */
static void
ghost_phase (SpEngine *eng, guint32 job, guint32 phase, gpointer data)
{
  (void) phase;
  const SpNet *net = data;
  guint32 a = sp_net_port_up (net, 0), b = sp_net_port_up (net, 1);
  for (guint i = 0; i < 47; i++)
    sp_engine_add_flow (eng, job, 1e9, &a, 1, 1e6 / (i + 7) + 0.1 * i, INFINITY);
  sp_engine_add_flow (eng, job, 1e9, &b, 1, 1.0, INFINITY);
}

START_TEST (rounding_residue_is_no_bottleneck)
{
  SpTopoSpec s = spec_base ("H100", 1, 8, SP_INTRA_NVSWITCH, 450, 1, 400, SP_FABRIC_SINGLE_SWITCH, 1);
  SpNet *net = sp_net_new (&s);
  SpEngine *eng = sp_engine_new (net, NULL, NULL);
  guint64 delay = 0;
  guint32 job = sp_engine_add_job (eng, 0, 1, &delay, ghost_phase, net, "ghost");
  GError *error = NULL;
  ck_assert_msg (sp_engine_run (eng, &error), "%s", error ? error->message : "");
  /* port 0 carries 47 GB at its rate (each event rounds to a ns) */
  double rate = sp_net_link_capacity (net, sp_net_port_up (net, 0)); /* B/ns */
  ck_assert_msg (fabs ((double) sp_engine_job_end (eng, job) - 47e9 / rate) <= 1e-6 * 47e9 / rate,
                 "end %" G_GUINT64_FORMAT " expected %.1f (rate %g)", sp_engine_job_end (eng, job), 47e9 / rate, rate);
  sp_engine_free (eng);
  sp_net_free (net);
}
END_TEST

/* One collective per GPU pair (i, gpus_per_node + i) for i < n_pairs: on
 * nodes whose GPUs share a NIC their transfers share it.  Simple, `algo`
 * (or NCCL's choice), all started together.  Returns each end, ns, and the
 * first pair's cost. */
static void
run_pairs (const SpTopoSpec *s, SpColl coll, SpAlgo algo, guint32 n_pairs, guint64 S,
           guint64 *out_end, SpCost *out_cost)
{
  SpNet *net = sp_net_new (s);
  SpEngine *eng = sp_engine_new (net, NULL, NULL);
  SpDesColl *dc[2];
  for (guint32 i = 0; i < n_pairs; i++)
    {
      guint32 pair[2] = { i, s->gpus_per_node + i };
      SpShape sh;
      ck_assert (sp_shape_init (&sh, s, pair, 2, NULL));
      SpCost c;
      ck_assert (sp_cost_choose (&sh, coll, S, algo, SP_PROTO_SIMPLE, &c, NULL));
      if (i == 0 && out_cost)
        *out_cost = c;
      dc[i] = sp_des_coll_new (eng, net, &sh, &c, coll, S, pair, 2, 0, "pair", NULL);
      ck_assert (dc[i] != NULL);
    }
  GError *error = NULL;
  ck_assert (sp_engine_run (eng, &error));
  for (guint32 i = 0; i < n_pairs; i++)
    {
      out_end[i] = sp_engine_job_end (eng, sp_des_coll_job (dc[i]));
      sp_des_coll_free (dc[i]);
    }
  sp_engine_free (eng);
  sp_net_free (net);
}

/* Two groups whose transfers share one NIC: p4d-like nodes with two GPUs
 * on one NIC.  Each send alone: S / 12 GB/s; together each gets half. */
START_TEST (two_groups_share_a_link)
{
  SpTopoSpec s = spec_base ("A100", 2, 2, SP_INTRA_NVSWITCH, 300, 1, 100, SP_FABRIC_SINGLE_SWITCH, 1);
  guint64 S = 1200000000, one[1], two[2];
  run_pairs (&s, SP_COLL_SEND, SP_ALGO_AUTO, 1, S, one, NULL);
  run_pairs (&s, SP_COLL_SEND, SP_ALGO_AUTO, 2, S, two, NULL);
  /* latency: ring Simple base 8.4 + NET hop 14 µs; rate: the pinned 0.96
   * of 12.5 GB/s is the ring step's (512 KiB), whose per-message cost
   * δ·line = 512 KiB (1/0.96 − 1) a send's 128 KiB chunks pay too */
  double lat = 8400 + 14000;
  double e_p2p = 131072.0 / (131072.0 + 524288.0 * (1 / 0.96 - 1));
  double rate = 12.5 * e_p2p; /* bytes per ns */
  ck_assert_msg (fabs ((double) one[0] - (lat + S / rate)) <= 2, "one %" G_GUINT64_FORMAT
                 " expected %g", one[0], lat + S / rate);
  ck_assert (fabs ((double) two[0] - (lat + 2 * S / rate)) <= 2);
  ck_assert_uint_eq (two[0], two[1]);
}
END_TEST

/* Slingshot's step floor (README-model §2.1a) is a floor, not a delay:
 * two-rank all-gather rings (Simple) across 2 nodes whose GPUs share one
 * NIC.  Alone, a ring whose bytes take less than the floor ends at the floor;
 * two rings that share the NIC take twice as long for their bytes, more
 * than the floor, and end exactly where they would without one. */
START_TEST (step_floor_is_a_max_under_contention)
{
  SpTopoSpec s = sp_test_spec ("A100", 2, 2, SP_INTRA_NVLINK, 300, 1, 200,
                               SP_FABRIC_SINGLE_SWITCH, 1);
  s.transport = SP_TRANSPORT_SLINGSHOT;
  SpTopoSpec off = s;
  off.inter_step_floor_us = 0;
  guint64 S = 600000, one[1], one_off[1], two[2], two_off[2];
  SpCost c, c_off;
  run_pairs (&s, SP_COLL_ALL_GATHER, SP_ALGO_RING, 1, S, one, &c);
  run_pairs (&off, SP_COLL_ALL_GATHER, SP_ALGO_RING, 1, S, one_off, &c_off);
  run_pairs (&s, SP_COLL_ALL_GATHER, SP_ALGO_RING, 2, S, two, &c);
  run_pairs (&off, SP_COLL_ALL_GATHER, SP_ALGO_RING, 2, S, two_off, &c_off);
  /* one ring step: base 8.4 + 42 µs */
  ck_assert (fabs (c.floor_us - (8.4 + 42)) < 1e-9);
  ck_assert (c_off.floor_us == 0);
  ck_assert (c.latency_us == c_off.latency_us);
  ck_assert_msg (one_off[0] + 5000 < one[0], "alone the bytes take less: %" G_GUINT64_FORMAT
                 " vs %" G_GUINT64_FORMAT, one_off[0], one[0]);
  ck_assert_msg (fabs ((double) one[0] - c.floor_us * 1000) <= 2, "alone %" G_GUINT64_FORMAT
                 " expected the floor %g", one[0], c.floor_us * 1000);
  ck_assert_msg (two_off[0] > c.floor_us * 1000 + 2000, "shared: %" G_GUINT64_FORMAT, two_off[0]);
  for (guint i = 0; i < 2; i++)
    ck_assert_msg (llabs ((long long) two[i] - (long long) two_off[i]) <= 2,
                   "shared, ring %u: %" G_GUINT64_FORMAT " with the floor, %" G_GUINT64_FORMAT
                   " without", i, two[i], two_off[i]);
}
END_TEST

START_TEST (deterministic)
{
  SpTopoSpec s = spec_base ("A100", 40, 8, SP_INTRA_NVSWITCH, 300, 4, 100, SP_FABRIC_FAT_TREE, 3);
  guint64 a[3], b[3];
  for (int run = 0; run < 2; run++)
    {
      guint64 *t = run ? b : a;
      t[0] = estimate (&s, SP_SIM_DES, SP_COLL_ALL_REDUCE, 123456789, NULL, 0, 0, SP_ALGO_TREE,
                       SP_PROTO_SIMPLE, NULL);
      t[1] = estimate (&s, SP_SIM_DES, SP_COLL_ALL_GATHER, 987654321, NULL, 0, 3, SP_ALGO_AUTO,
                       SP_PROTO_AUTO, NULL);
      t[2] = estimate (&s, SP_SIM_DES, SP_COLL_ALL_TO_ALL, 1 << 24, NULL, 0, 2, SP_ALGO_AUTO,
                       SP_PROTO_AUTO, NULL);
    }
  for (int i = 0; i < 3; i++)
    ck_assert_uint_eq (a[i], b[i]);
}
END_TEST

static void
expect_fault (SpSimFault fault, SpSimModel model, const char *needle)
{
  SpTopoSpec s = spec_base ("A100", 2, 8, SP_INTRA_NVSWITCH, 300, 8, 200, SP_FABRIC_RAIL, 1);
  g_autoptr (SpTopo) topo = sp_topo_new (&s, NULL);
  SpCollRequest r;
  sp_coll_request_init (&r);
  r.bytes = 1 << 26;
  SpCollEstimate e;
  GError *error = NULL;
  sp_sim_testing_fault = fault;
  gboolean ok = sp_sim_estimate (topo, model, &r, &e, &error);
  sp_sim_testing_fault = SP_SIM_FAULT_NONE;
  ck_assert (!ok);
  SP_ASSERT_ERROR (error, SP_ERROR_SIMULATION);
  ck_assert_msg (strstr (error->message, needle) != NULL, "message: %s", error->message);
  g_clear_error (&error);
  /* and without the fault it passes */
  ck_assert (sp_sim_estimate (topo, model, &r, &e, &error));
}

START_TEST (fail_loud_unfinished)
{
  expect_fault (SP_SIM_FAULT_DROP_JOB, SP_SIM_DES, "did not finish");
}
END_TEST

START_TEST (fail_loud_bytes)
{
  expect_fault (SP_SIM_FAULT_LOSE_BYTES, SP_SIM_DES, "received");
}
END_TEST

START_TEST (fail_loud_lower_bound)
{
  expect_fault (SP_SIM_FAULT_OVERSPEED, SP_SIM_DES, "lower bound");
  expect_fault (SP_SIM_FAULT_OVERSPEED, SP_SIM_ANALYTIC, "lower bound");
}
END_TEST

/* The grid: topologies × node counts × ranks per node × collectives ×
 * sizes × every enabled (algorithm, protocol); des within 5 % of analytic. */
START_TEST (des_agrees_with_analytic)
{
  SpTopoSpec specs[] = {
    spec_base ("H100-SXM5-80GB", 1, 8, SP_INTRA_NVSWITCH, 450, 8, 400, SP_FABRIC_RAIL, 1),
    spec_base ("A100-SXM4-40GB", 1, 8, SP_INTRA_NVSWITCH, 300, 4, 100, SP_FABRIC_FAT_TREE, 1),
    spec_base ("V100-SXM2-32GB", 1, 8, SP_INTRA_NVLINK, 150, 1, 100, SP_FABRIC_FAT_TREE, 1),
    spec_base ("A100-PCIE-40GB", 1, 4, SP_INTRA_PCIE, 31.5, 2, 200, SP_FABRIC_SINGLE_SWITCH, 1),
    spec_base ("cpu-core", 1, 4, SP_INTRA_SHM, 10, 1, 10, SP_FABRIC_SINGLE_SWITCH, 1),
    /* 16 nodes × 4 NICs = two leaves at 2:1 */
    spec_base ("A100-SXM4-40GB", 1, 8, SP_INTRA_NVSWITCH, 300, 4, 100, SP_FABRIC_FAT_TREE, 2),
    spec_base ("H100-SXM5-80GB", 1, 8, SP_INTRA_NVSWITCH, 450, 8, 400, SP_FABRIC_RAIL, 2),
    /* Polaris-like: Slingshot's step floor binds on mid-size Simple rings
     * and trees (README-model §2.1a) */
    spec_base ("A100-SXM4-40GB", 1, 4, SP_INTRA_NVLINK, 300, 2, 200, SP_FABRIC_FAT_TREE, 1),
  };
  specs[G_N_ELEMENTS (specs) - 1].transport = SP_TRANSPORT_SLINGSHOT;
  static const guint32 nodes[] = { 1, 2, 5, 16, 64 };
  static const SpColl colls[] = { SP_COLL_ALL_REDUCE, SP_COLL_ALL_GATHER, SP_COLL_REDUCE_SCATTER,
                                  SP_COLL_BROADCAST, SP_COLL_REDUCE, SP_COLL_ALL_TO_ALL };
  static const guint64 sizes[] = { 4096, 1 << 20, 64 << 20, (guint64) 1 << 30 };
  static const SpAlgo algos[] = { SP_ALGO_TREE, SP_ALGO_RING, SP_ALGO_NVLS, SP_ALGO_NVLS_TREE,
                                  SP_ALGO_PAT, SP_ALGO_DIRECT };
  static const SpProto protos[] = { SP_PROTO_LL, SP_PROTO_LL128, SP_PROTO_SIMPLE };
  guint checked = 0, per_algo[G_N_ELEMENTS (algos)] = { 0 };
  double worst = 0;
  for (guint t = 0; t < G_N_ELEMENTS (specs); t++)
    for (guint ni = 0; ni < G_N_ELEMENTS (nodes); ni++)
      for (guint32 rpn = 1; rpn <= specs[t].gpus_per_node; rpn = rpn == 1 ? 2 : rpn * 2)
        {
          SpTopoSpec s = specs[t];
          s.nodes = nodes[ni];
          if (s.nodes * rpn < 2)
            continue;
          g_autoptr (SpTopo) topo = sp_topo_new (&s, NULL);
          for (guint c = 0; c < G_N_ELEMENTS (colls); c++)
            for (guint z = 0; z < G_N_ELEMENTS (sizes); z++)
              for (guint a = 0; a < G_N_ELEMENTS (algos); a++)
                for (guint p = 0; p < G_N_ELEMENTS (protos); p++)
                  {
                    SpCollRequest r;
                    sp_coll_request_init (&r);
                    r.coll = colls[c];
                    r.bytes = sizes[z];
                    r.ranks_per_node = rpn;
                    r.algo = algos[a];
                    r.proto = protos[p];
                    SpCollEstimate ea, ed;
                    GError *error = NULL;
                    if (!sp_sim_estimate (topo, SP_SIM_ANALYTIC, &r, &ea, &error))
                      {
                        SP_ASSERT_ERROR (error, SP_ERROR_UNSUPPORTED);
                        g_clear_error (&error);
                        continue;
                      }
                    ck_assert_msg (sp_sim_estimate (topo, SP_SIM_DES, &r, &ed, &error), "%s",
                                   error ? error->message : "");
                    double rel = fabs ((double) ed.time_ns - (double) ea.time_ns) / ea.time_ns;
                    worst = MAX (worst, rel);
                    ck_assert_msg (rel <= 0.05,
                                   "%s: %s %s/%s %" G_GUINT64_FORMAT " B, %u nodes x %u: des %"
                                   G_GUINT64_FORMAT " ns vs analytic %" G_GUINT64_FORMAT " ns",
                                   s.gpu_model, sp_coll_name (r.coll), sp_algo_name (r.algo),
                                   sp_proto_name (r.proto), r.bytes, s.nodes, rpn, ed.time_ns,
                                   ea.time_ns);
                    checked++;
                    per_algo[a]++;
                  }
        }
  ck_assert_uint_gt (checked, 1000);
  /* every algorithm was exercised (nvls_tree: H100 at 2, 5, 16, 64 nodes) */
  for (guint a = 0; a < G_N_ELEMENTS (algos); a++)
    ck_assert_msg (per_algo[a] > 0, "no case of %s", sp_algo_name (algos[a]));
  g_test_message ("%u cases, worst relative difference %.4f", checked, worst);
  for (guint a = 0; a < G_N_ELEMENTS (algos); a++)
    g_test_message ("  %s: %u", sp_algo_name (algos[a]), per_algo[a]);
}
END_TEST

int
main (void)
{
  Suite *s = suite_create ("sim_des");
  TCase *tc = tcase_create ("des");
  tcase_set_timeout (tc, 300);
  tcase_add_test (tc, ring_all_gather_one_node);
  tcase_add_test (tc, two_nodes_one_nic);
  tcase_add_test (tc, oversubscription_halves_a_bisection);
  tcase_add_test (tc, partial_leaf_keeps_its_uplinks);
  tcase_add_test (tc, rounding_residue_is_no_bottleneck);
  tcase_add_test (tc, two_groups_share_a_link);
  tcase_add_test (tc, step_floor_is_a_max_under_contention);
  tcase_add_test (tc, deterministic);
  tcase_add_test (tc, fail_loud_unfinished);
  tcase_add_test (tc, fail_loud_bytes);
  tcase_add_test (tc, fail_loud_lower_bound);
  tcase_add_test (tc, des_agrees_with_analytic);
  suite_add_tcase (s, tc);
  return sp_test_run (s);
}
