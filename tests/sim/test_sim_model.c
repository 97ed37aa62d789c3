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
  s.inter_step_floor_us = SP_TOPO_LATENCY_UNSET; /* the transport's */
  s.inter_inject_copy_us = SP_TOPO_LATENCY_UNSET;
  s.fabric = SP_FABRIC_RAIL;
  s.oversubscription = 1;
  return s;
}

/* ALCF Polaris: `nodes` x 4 A100 in an NVLink mesh (300 GB/s: 12
 * channels), 2 x 200 Gb/s Slingshot NICs on the host. */
static SpTopoSpec
spec_polaris (guint32 nodes)
{
  SpTopoSpec s = spec_h100 (nodes);
  g_strlcpy (s.gpu_model, "A100-SXM4-40GB", sizeof s.gpu_model);
  s.gpus_per_node = 4;
  s.intra_kind = SP_INTRA_NVLINK;
  s.intra_bandwidth_gbs = 300;
  s.nics_per_node = 2;
  s.nic_gbps = 200;
  s.transport = SP_TRANSPORT_SLINGSHOT;
  return s;
}

/* Every rank of `s`, as `model` sees them (SP_SIM_NCCL: NCCL's own view). */
static SpShape
shape_model (const SpTopoSpec *s, SpSimModel model)
{
  guint32 n = s->nodes * s->gpus_per_node;
  g_autofree guint32 *r = g_new (guint32, n);
  for (guint32 i = 0; i < n; i++)
    r[i] = i;
  SpShape sh;
  GError *error = NULL;
  ck_assert (sp_shape_init_model (&sh, s, r, n, model, &error));
  return sh;
}

static SpShape
shape_all (const SpTopoSpec *s)
{
  return shape_model (s, SP_SIM_DES);
}

static SpShape
shape_nccl (const SpTopoSpec *s)
{
  return shape_model (s, SP_SIM_NCCL);
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
  /* dgx-a100 numbers: NVLink 300 GB/s × 20/25 = 240; a 200 Gb/s InfiniBand
   * NIC (25 GB/s = 25,000 B/µs) with 512 KiB ring steps and δ = 0.30 µs
   * per message (README-model §2) runs at 524288 / (524288 + 7500) of its
   * line rate: 24.647 GB/s; 8 of them 197.18 GB/s per node; the ring
   * crossing the node is limited by min(240, 197.18); with one rank per
   * node, the rank's single NIC. */
  const double nic = 25.0 * 524288.0 / (524288.0 + 0.30 * 25000.0);
  SpTopoSpec s = spec_h100 (4);
  g_strlcpy (s.gpu_model, "A100-SXM4-80GB", sizeof s.gpu_model);
  s.intra_bandwidth_gbs = 300;
  s.nic_gbps = 200;
  SpShape sh = shape_all (&s);
  ASSERT_NEAR (sh.intra_gbs, 240, 1e-9);
  ASSERT_NEAR (sh.node_net_gbs, 8 * nic, 1e-9);
  ASSERT_NEAR (sh.ring_gbs, 8 * nic, 1e-9);
  guint32 r[4] = { 0, 8, 16, 24 };
  GError *error = NULL;
  ck_assert (sp_shape_init (&sh, &s, r, 4, &error));
  ck_assert_uint_eq (sh.ppn, 1);
  ck_assert_uint_eq (sh.nics_used, 1);
  ASSERT_NEAR (sh.ring_gbs, nic, 1e-9);
  /* Simple ring all-reduce of 1 GB over those 4 ranks: busBw = the NIC,
   * algBw = busBw × 4/6 */
  SpCost c;
  sp_cost_compute (&sh, SP_COLL_ALL_REDUCE, 1000000000, SP_ALGO_RING, SP_PROTO_SIMPLE, &c);
  ASSERT_NEAR (c.algbw, nic * 4 / 6, 1e-9);
}
END_TEST

/* LL128 across nodes as NCCL enables it: only while the GPU reaches its
 * NIC under a PCIe switch (graph/tuning.cc).  Polaris' board (4 × A100 in
 * an NVLink mesh, NICs on the host) runs LL and Simple only; an 8-GPU
 * NVSwitch board or a stated pxb keeps LL128; one node needs no NIC. */
START_TEST (ll128_needs_nics_under_the_gpus_switches)
{
  SpTopoSpec s = spec_polaris (8);
  ck_assert_int_eq (sp_sim_nic_path (&s), SP_NIC_PATH_PHB);
  const char *why = NULL;
  for (int nccl = 0; nccl < 2; nccl++)
    {
      SpShape sh = nccl ? shape_nccl (&s) : shape_all (&s);
      ck_assert (!sp_cost_enabled (&sh, SP_COLL_ALL_GATHER, SP_ALGO_RING, SP_PROTO_LL128, &why));
      ck_assert_ptr_nonnull (strstr (why, "nic_path"));
      ck_assert (sp_cost_enabled (&sh, SP_COLL_ALL_GATHER, SP_ALGO_RING, SP_PROTO_LL, &why));
      ck_assert (sp_cost_enabled (&sh, SP_COLL_ALL_GATHER, SP_ALGO_RING, SP_PROTO_SIMPLE, &why));
      SpCost c;
      for (guint64 b = 1 << 10; b <= G_GUINT64_CONSTANT (1) << 32; b <<= 2)
        {
          ck_assert (sp_cost_choose (&sh, SP_COLL_ALL_REDUCE, b, SP_ALGO_AUTO, SP_PROTO_AUTO, &c, NULL));
          ck_assert_int_ne (c.proto, SP_PROTO_LL128);
        }
    }
  s.nic_path = SP_NIC_PATH_PXB; /* a user who knows better */
  SpShape shp = shape_all (&s);
  ck_assert (sp_cost_enabled (&shp, SP_COLL_ALL_GATHER, SP_ALGO_RING, SP_PROTO_LL128, &why));
  s.nic_path = SP_NIC_PATH_DEFAULT;
  s.nodes = 1;
  SpShape sh1 = shape_all (&s);
  ck_assert (sp_cost_enabled (&sh1, SP_COLL_ALL_GATHER, SP_ALGO_RING, SP_PROTO_LL128, &why));
  SpTopoSpec h = spec_h100 (8);
  ck_assert_int_eq (sp_sim_nic_path (&h), SP_NIC_PATH_PXB);
  h.nic_path = SP_NIC_PATH_SYS;
  SpShape shs = shape_all (&h);
  ck_assert (!sp_cost_enabled (&shs, SP_COLL_ALL_REDUCE, SP_ALGO_TREE, SP_PROTO_LL128, &why));
  SpTopoSpec g = spec_h100 (2); /* a GH200 quad: NVLink mesh of 4, NICs over C2C */
  g_strlcpy (g.gpu_model, "GH200", sizeof g.gpu_model);
  g.gpus_per_node = 4;
  g.intra_kind = SP_INTRA_NVLINK;
  ck_assert_int_eq (sp_sim_nic_path (&g), SP_NIC_PATH_PXB);
}
END_TEST

/* LL128 by compute capability (graph/tuning.cc: not below sm70,
 * reference/nccl-transports.md §5), and NCCL's own NVLink per-link rates
 * of sm86 (12.0 of an A40 bridge's 14.0625 GB/s per link and direction)
 * and sm60 (18.0 of NVLink 1's 20): one node of two bridged A40s and of
 * four P100s. */
START_TEST (ll128_and_nvlink_by_compute_capability)
{
  static const struct {
    const char *model;
    gboolean ll128;
  } gpus[] = {
    { "P100", FALSE },       { "Tesla P100-SXM2-16GB", FALSE },
    { "NVIDIA A40", TRUE },  { "Tesla T4", TRUE },  { "L40S", TRUE },   { "V100", TRUE },
    { "A100", TRUE },        { "A30", TRUE },       { "H100", TRUE },   { "B200", TRUE },
    { "RTX PRO 6000", TRUE },
    { "MI300X", TRUE }, /* unknown: an A100 */
  };
  for (guint i = 0; i < G_N_ELEMENTS (gpus); i++)
    {
      SpTopoSpec s = spec_h100 (1);
      g_strlcpy (s.gpu_model, gpus[i].model, sizeof s.gpu_model);
      s.gpus_per_node = 2;
      s.intra_kind = SP_INTRA_NVLINK;
      s.intra_bandwidth_gbs = 56.25;
      for (int nccl = 0; nccl < 2; nccl++)
        {
          SpShape sh = nccl ? shape_nccl (&s) : shape_all (&s);
          const char *why = NULL;
          ck_assert_msg (sp_cost_enabled (&sh, SP_COLL_ALL_REDUCE, SP_ALGO_RING, SP_PROTO_LL128,
                                          &why) == gpus[i].ll128, "%s", gpus[i].model);
          if (!gpus[i].ll128)
            ck_assert_ptr_nonnull (strstr (why, "sm70 and later"));
          ck_assert (sp_cost_enabled (&sh, SP_COLL_ALL_REDUCE, SP_ALGO_RING, SP_PROTO_LL, NULL));
          SpCost c;
          for (guint64 b = 1 << 10; b <= G_GUINT64_CONSTANT (1) << 32 && !gpus[i].ll128; b <<= 2)
            {
              ck_assert (sp_cost_choose (&sh, SP_COLL_ALL_REDUCE, b, SP_ALGO_AUTO, SP_PROTO_AUTO,
                                         &c, NULL));
              ck_assert_int_ne (c.proto, SP_PROTO_LL128);
            }
        }
    }
  /* NVLink rate = datasheet × NCCL's per-link / the datasheet's per-link;
   * channels = the links (bandwidth / datasheet per-link) */
  static const struct {
    const char *model;
    guint32 gpus;
    double datasheet, intra;
    guint32 channels;
  } links[] = {
    { "NVIDIA A40", 2, 56.25, 48.0, 4 },         /* a bridge: 112.5 GB/s both ways */
    { "Tesla P100-SXM2-16GB", 4, 80, 72.0, 4 }, /* 4 NVLink 1 links, 20 GB/s each way */
    { "V100", 4, 150, 120.0, 6 },                /* NVLink 2's 20 of 25, as before */
  };
  for (guint i = 0; i < G_N_ELEMENTS (links); i++)
    {
      SpTopoSpec l = spec_h100 (1);
      g_strlcpy (l.gpu_model, links[i].model, sizeof l.gpu_model);
      l.gpus_per_node = links[i].gpus;
      l.intra_kind = SP_INTRA_NVLINK;
      l.intra_bandwidth_gbs = links[i].datasheet;
      double intra, nic;
      sp_sim_link_rates (&l, &intra, &nic);
      ASSERT_NEAR (intra, links[i].intra, 1e-9);
      ck_assert_uint_eq (shape_all (&l).n_channels, links[i].channels);
    }
}
END_TEST

/* LL crosses the network in 64 KiB messages (its step), Simple in 512 KiB
 * ones, and each message pays the transport's δ: LL's network rate is
 * eff(64 KiB) / eff(512 KiB) of the NIC rate, eff(m) = m / (m + δ·line).
 * Slingshot 200 Gb/s: δ·line = 8.15 µs × 25000 B/µs = 203,750 B, so
 * 65536 / 269286 over 524288 / 728038 = 0.337948; InfiniBand 400 Gb/s:
 * 0.30 µs × 50000 = 15,000 B, 65536 / 80536 over 524288 / 539288 = 0.837029.
 * Only LL rings and trees between nodes pay it, calibrated or not. */
START_TEST (ll_pays_the_message_cost_per_step)
{
  SpTopoSpec s = spec_h100 (2);
  s.gpus_per_node = 1;
  s.nics_per_node = 2;
  s.nic_gbps = 200;
  s.transport = SP_TRANSPORT_SLINGSHOT;
  SpShape sh = shape_all (&s);
  ASSERT_NEAR (sp_cost_net_factor (&sh, SP_ALGO_RING, SP_PROTO_LL), 0.337948, 1e-6);
  ASSERT_NEAR (sp_cost_net_factor (&sh, SP_ALGO_TREE, SP_PROTO_LL), 0.337948, 1e-6);
  ck_assert (sp_cost_net_factor (&sh, SP_ALGO_RING, SP_PROTO_SIMPLE) == 1.0);
  ck_assert (sp_cost_net_factor (&sh, SP_ALGO_RING, SP_PROTO_LL128) == 1.0);
  ck_assert (sp_cost_net_factor (&sh, SP_ALGO_DIRECT, SP_PROTO_LL) == 1.0);
  /* 1 GPU per node: the ring runs at the node's NICs; LL at half of that
   * (its flags), times the factor; n = 2: algBw = 2 × busBw */
  SpCost c;
  sp_cost_compute (&sh, SP_COLL_ALL_GATHER, 4 << 20, SP_ALGO_RING, SP_PROTO_LL, &c);
  ASSERT_NEAR (c.algbw, 2 * 0.5 * sh.node_net_gbs * 0.337948, 1e-4);
  /* NCCL's view does not know it, nor does one node need it */
  SpShape shn = shape_nccl (&s);
  ck_assert (sp_cost_net_factor (&shn, SP_ALGO_RING, SP_PROTO_LL) == 1.0);
  SpTopoSpec one = spec_h100 (1);
  SpShape sh1 = shape_all (&one);
  ck_assert (sp_cost_net_factor (&sh1, SP_ALGO_RING, SP_PROTO_LL) == 1.0);
  /* calibrated: e = 0.9 at the 512 KiB step implies δ·line = 524288 ×
   * (1/0.9 − 1) = 58,254 B, so 65536 / 123790 / 0.9 = 0.588235, and the
   * p2p chunk's 131072 / 189326 / 0.9 = 0.769231, by the one rule */
  s.cal_nic_efficiency = 0.9;
  SpShape shc = shape_all (&s);
  ASSERT_NEAR (sp_cost_net_factor (&shc, SP_ALGO_RING, SP_PROTO_LL), 0.588235, 1e-6);
  ASSERT_NEAR (shc.p2p_net_factor, 0.769231, 1e-6);
  SpTopoSpec ib = spec_h100 (2);
  SpShape shi = shape_all (&ib);
  ASSERT_NEAR (sp_cost_net_factor (&shi, SP_ALGO_RING, SP_PROTO_LL), 0.837029, 1e-6);
  /* EFA 100 Gb/s on an A100 instance (aws-ofi-nccl's SENDRECV protocol),
   * its 1 MiB step: δ·line = 16.6 × 12500 = 207,500 B, 65536 / 273036 over
   * 1048576 / 1256076 = 0.287525 */
  ib.transport = SP_TRANSPORT_EFA;
  ib.nic_gbps = 100;
  g_strlcpy (ib.gpu_model, "A100-SXM4-80GB", sizeof ib.gpu_model);
  SpShape she = shape_all (&ib);
  ASSERT_NEAR (sp_cost_net_factor (&she, SP_ALGO_RING, SP_PROTO_LL), 0.287525, 1e-6);
  /* on a Hopper instance, the RDMA protocol: δ = 3 µs, δ·line = 37,500 B,
   * 65536 / 103036 over 1048576 / 1086076 = 0.658796 (one NIC per GPU) */
  g_strlcpy (ib.gpu_model, "H100-SXM5-80GB", sizeof ib.gpu_model);
  SpShape shr = shape_all (&ib);
  ASSERT_NEAR (sp_cost_net_factor (&shr, SP_ALGO_RING, SP_PROTO_LL), 0.658796, 1e-6);
  /* p5's 4 NICs per GPU: the 1 MiB step is striped over the 4 rails
   * (50,000 B/µs, δ·line = 150,000 B: 1048576 / 1198576 = 0.874851),
   * LL's 64 KiB message is not (under 128 KiB): 0.636050 / 0.874851 =
   * 0.727037 */
  ib.nics_per_node = 32;
  SpShape sh5 = shape_all (&ib);
  ASSERT_NEAR (sp_cost_net_factor (&sh5, SP_ALGO_RING, SP_PROTO_LL), 0.727037, 1e-6);
  ASSERT_NEAR (sh5.nic_gbs, 12.5 * 1048576.0 / 1198576.0, 1e-9);
  /* calibrated (e = 0.9 at the striped 1 MiB step: δ·line = 1048576 ×
   * (1/0.9 − 1) = 116,508 B over 4 rails): LL's unstriped 64 KiB message
   * pays δ at one rail's line, a quarter of that, 65536 / (65536 +
   * 29127) / 0.9 = 0.769231; the p2p chunk, 512 KiB, striped over all 4:
   * 524288 / (524288 + 116508) / 0.9 = 0.909091 */
  SpTopoSpec p5c = ib;
  p5c.cal_nic_efficiency = 0.9;
  SpShape sh5c = shape_all (&p5c);
  ASSERT_NEAR (sp_cost_net_factor (&sh5c, SP_ALGO_RING, SP_PROTO_LL), 0.769231, 1e-6);
  ASSERT_NEAR (sh5c.p2p_net_factor, 0.909091, 1e-6);
  /* SENDRECV where the plugin keeps it on Hopper and Blackwell GPUs: one
   * GPU a node (p5.4xlarge), and the g-series' sm120 RTX PRO 6000 — δ =
   * 16.6 at one NIC's line, 1048576 / (1048576 + 207500) = 0.834803 */
  SpTopoSpec single = ib;
  single.gpus_per_node = 1;
  single.nics_per_node = 1;
  SpShape shs = shape_all (&single);
  ASSERT_NEAR (shs.nic_gbs, 12.5 * 0.834803, 1e-5);
  SpTopoSpec rtx = ib;
  g_strlcpy (rtx.gpu_model, "NVIDIA RTX PRO 6000", sizeof rtx.gpu_model);
  rtx.nics_per_node = 8;
  SpShape shx = shape_all (&rtx);
  ASSERT_NEAR (shx.nic_gbs, 12.5 * 0.834803, 1e-5);
}
END_TEST

/* Slingshot's step floor (model.c, README-model §2.1a): a multi-node
 * Simple ring or tree step takes at least 42 µs, wherever the bytes would
 * be quicker; NCCL's own view, InfiniBand and a single node do not. */
START_TEST (slingshot_simple_steps_have_a_floor)
{
  SpTopoSpec s = spec_polaris (2);
  SpShape sh = shape_all (&s);
  ck_assert_uint_eq (sh.n_channels, 12);
  double ring0 = sp_nccl_base_latency_us (SP_ALGO_RING, SP_PROTO_SIMPLE);
  double tree0 = sp_nccl_base_latency_us (SP_ALGO_TREE, SP_PROTO_SIMPLE);
  SpCost c;
  /* 4 MiB over 8 ranks: all-gather 7 steps, all-reduce 14 (Polaris
   * measured 268 and 563 µs) */
  sp_cost_compute (&sh, SP_COLL_ALL_GATHER, 4 << 20, SP_ALGO_RING, SP_PROTO_SIMPLE, &c);
  ASSERT_NEAR (c.floor_us, ring0 + 7 * 42.0, 1e-9);
  ASSERT_NEAR (c.time_us, ring0 + 7 * 42.0, 1e-9);
  /* the floor binds: NCCL's latency and the bytes stay what they were,
   * and take less */
  ck_assert (c.latency_us + (4 << 20) / (1000.0 * c.algbw) < c.time_us - 100);
  sp_cost_compute (&sh, SP_COLL_ALL_REDUCE, 4 << 20, SP_ALGO_RING, SP_PROTO_SIMPLE, &c);
  ASSERT_NEAR (c.time_us, ring0 + 14 * 42.0, 1e-9);
  /* tree all-reduce, depth 3 GPUs + log2(2) nodes = 4: 2 x 4 steps for the
   * first chunk, one per further chunk of a channel.  NCCL's chunk for 1
   * MiB over 12 channels: 512 KiB halved to 128 KiB (1 MiB / (12 x c) < 8
   * x 4), to 64 KiB (< 4 x 4), to 32 KiB (< 4; its floor): 3 chunks, 10
   * steps.  8 MiB: 64 KiB (10 >= 4 stops there), 11 chunks, 18 steps. */
  sp_cost_compute (&sh, SP_COLL_ALL_REDUCE, 1 << 20, SP_ALGO_TREE, SP_PROTO_SIMPLE, &c);
  ASSERT_NEAR (c.time_us, tree0 + 10 * 42.0, 1e-9);
  sp_cost_compute (&sh, SP_COLL_ALL_REDUCE, 8 << 20, SP_ALGO_TREE, SP_PROTO_SIMPLE, &c);
  ASSERT_NEAR (c.time_us, tree0 + 18 * 42.0, 1e-9);
  /* 64 KiB: NCCL launches two channels (65536 >= 2 x 512 x 64, < 3 x):
   * the chunk halves to 32 KiB, one per channel, 8 steps; 48 KiB: one
   * channel, two 32 KiB chunks, 9 steps */
  sp_cost_compute (&sh, SP_COLL_ALL_REDUCE, 64 << 10, SP_ALGO_TREE, SP_PROTO_SIMPLE, &c);
  ASSERT_NEAR (c.time_us, tree0 + 8 * 42.0, 1e-9);
  sp_cost_compute (&sh, SP_COLL_ALL_REDUCE, 48 << 10, SP_ALGO_TREE, SP_PROTO_SIMPLE, &c);
  ASSERT_NEAR (c.time_us, tree0 + 9 * 42.0, 1e-9);
  /* LL and LL128 have no floor */
  sp_cost_compute (&sh, SP_COLL_ALL_GATHER, 4 << 20, SP_ALGO_RING, SP_PROTO_LL, &c);
  ck_assert (c.floor_us == 0);
  sp_cost_compute (&sh, SP_COLL_ALL_REDUCE, 1 << 20, SP_ALGO_TREE, SP_PROTO_LL, &c);
  ck_assert (c.floor_us == 0);
  /* a calibrated overhead moves the floor with the latency */
  SpTopoSpec cal = s;
  cal.cal_overhead_us[SP_PROTO_SIMPLE] = 10;
  SpShape shc = shape_all (&cal);
  sp_cost_compute (&shc, SP_COLL_ALL_GATHER, 4 << 20, SP_ALGO_RING, SP_PROTO_SIMPLE, &c);
  ASSERT_NEAR (c.time_us, ring0 + 7 * 42.0 + 10, 1e-9);
  /* 1 GiB: the bytes take longer than the floor, which no longer binds:
   * NCCL's latency plus the transfer */
  sp_cost_compute (&sh, SP_COLL_ALL_GATHER, 1u << 30, SP_ALGO_RING, SP_PROTO_SIMPLE, &c);
  ck_assert (c.latency_us < 7 * 42.0);
  ck_assert (c.time_us > ring0 + 7 * 42.0);
  ASSERT_NEAR (c.time_us, c.latency_us + (double) (1u << 30) / (1000.0 * c.algbw), 1e-6);
  /* NCCL's own view, InfiniBand and one node: no floor */
  SpShape shn = shape_nccl (&s);
  sp_cost_compute (&shn, SP_COLL_ALL_GATHER, 4 << 20, SP_ALGO_RING, SP_PROTO_SIMPLE, &c);
  ck_assert (c.time_us < ring0 + 7 * 42.0 - 100);
  SpTopoSpec ib = s;
  static const SpTransport others[] = { SP_TRANSPORT_EFA, SP_TRANSPORT_TCP, SP_TRANSPORT_ROCE,
                                        SP_TRANSPORT_IB };
  for (guint i = 0; i < G_N_ELEMENTS (others); i++)
    {
      ib.transport = others[i];
      SpShape sho = shape_all (&ib);
      sp_cost_compute (&sho, SP_COLL_ALL_GATHER, 4 << 20, SP_ALGO_RING, SP_PROTO_SIMPLE, &c);
      ck_assert_msg (c.floor_us == 0, "%s", sp_transport_name (others[i]));
    }
  SpShape shi = shape_all (&ib);
  sp_cost_compute (&shi, SP_COLL_ALL_GATHER, 4 << 20, SP_ALGO_RING, SP_PROTO_SIMPLE, &c);
  ck_assert (c.time_us < ring0 + 7 * 42.0 - 100);
  SpTopoSpec one = s;
  one.nodes = 1;
  SpShape sh1 = shape_all (&one);
  sp_cost_compute (&sh1, SP_COLL_ALL_GATHER, 4 << 20, SP_ALGO_RING, SP_PROTO_SIMPLE, &c);
  ck_assert (c.time_us < ring0 + 3 * 42.0);
  /* [inter] step_floor_us overrides the transport's: 0 turns it off (the
   * time is InfiniBand's but for Slingshot's slower NICs), 60 on
   * InfiniBand turns one on */
  SpTopoSpec off = s;
  off.inter_step_floor_us = 0;
  SpShape sho = shape_all (&off);
  sp_cost_compute (&sho, SP_COLL_ALL_GATHER, 4 << 20, SP_ALGO_RING, SP_PROTO_SIMPLE, &c);
  ck_assert (c.time_us < ring0 + 7 * 42.0 - 100);
  ib.inter_step_floor_us = 60;
  shi = shape_all (&ib);
  sp_cost_compute (&shi, SP_COLL_ALL_GATHER, 4 << 20, SP_ALGO_RING, SP_PROTO_SIMPLE, &c);
  ASSERT_NEAR (c.time_us, ring0 + 7 * 60.0, 1e-9);
  sp_cost_compute (&shi, SP_COLL_ALL_GATHER, 4 << 20, SP_ALGO_RING, SP_PROTO_LL, &c);
  ck_assert (c.time_us < ring0 + 7 * 60.0);
}
END_TEST

/* The time of `coll` over every rank of `s` (direct, `proto`) with `small`
 * bytes, less that with `big`. */
static double
small_less_big (const SpTopoSpec *s, SpSimModel model, SpColl coll, guint64 small, guint64 big,
                SpProto proto)
{
  SpShape sh = shape_model (s, model);
  SpCost a, b;
  sp_cost_compute (&sh, coll, small, SP_ALGO_DIRECT, proto, &a);
  sp_cost_compute (&sh, coll, big, SP_ALGO_DIRECT, proto, &b);
  return a.time_us - b.time_us;
}

/* EFA's two protocols (model.c, README-model §2.1): a small all-to-all
 * ends when the proxy has served every remote peer, δ/2 each, so between 8
 * and 16 nodes of 8 (56 and 120 remote peers) its time grows by 64 × δ/2
 * whatever else it costs: 64 × 8.3 µs on an A100 instance (SENDRECV, δ =
 * 16.6), 64 × 1.5 µs on a Hopper one (RDMA protocol, δ = 3).  And striping
 * makes p5's 4 x 100 Gb/s and p5en's 2 x 200 Gb/s rails one: a 4 GiB
 * broadcast chain costs the same on both. */
START_TEST (efa_protocols_by_hand)
{
  static const struct {
    const char *gpu;
    double half_delta;
  } cases[] = { { "A100-SXM4-80GB", 8.3 }, { "H100-SXM5-80GB", 1.5 }, { "B200", 1.5 } };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      double t[2];
      static const guint32 nodes[] = { 8, 16 };
      for (guint k = 0; k < 2; k++)
        {
          SpTopoSpec s = spec_h100 (nodes[k]);
          s.transport = SP_TRANSPORT_EFA;
          s.nics_per_node = 32;
          s.nic_gbps = 100;
          g_strlcpy (s.gpu_model, cases[i].gpu, sizeof s.gpu_model);
          SpShape sh = shape_all (&s);
          SpCost c;
          guint32 n = nodes[k] * 8;
          sp_cost_compute (&sh, SP_COLL_ALL_TO_ALL, 1024.0 * n, SP_ALGO_DIRECT, SP_PROTO_SIMPLE, &c);
          t[k] = c.time_us;
        }
      ASSERT_NEAR (t[1] - t[0], 64 * cases[i].half_delta, 1e-6);
    }
  /* p5 (4 x 100 Gb/s a GPU) and p5en (2 x 200) stripe a Simple step over
   * their rails alike: a large broadcast chain costs the same on both */
  double b[2];
  static const guint32 nics[] = { 32, 16 };
  for (guint k = 0; k < 2; k++)
    {
      SpTopoSpec s = spec_h100 (16);
      s.transport = SP_TRANSPORT_EFA;
      s.nics_per_node = nics[k];
      s.nic_gbps = 3200.0 / nics[k];
      SpShape sh = shape_all (&s);
      SpCost c;
      sp_cost_compute (&sh, SP_COLL_BROADCAST, 4.0 * (1 << 30), SP_ALGO_RING, SP_PROTO_SIMPLE, &c);
      b[k] = c.time_us;
    }
  ASSERT_NEAR (b[0], b[1], 1e-6 * b[1]);
}
END_TEST

/* Slingshot's inject path (README-model §2.1b): a network p2p message of at
 * most 192 B sent with Simple costs its sender 12.4 µs more; an all-to-all
 * pays it once per remote peer, on top of the proxy's δ/2 per peer, and
 * where that serving floor binds (at both sizes here) its time is base +
 * hop + peers × (δ/2 + copy), whatever the bytes: the difference is the
 * copies alone. */
START_TEST (small_sends_copy_on_slingshot)
{
  const SpColl a2a = SP_COLL_ALL_TO_ALL;
  /* 2 nodes x 4: 4 remote peers a rank; 8 nodes x 4: 28 */
  static const guint32 nodes[] = { 2, 8 };
  for (guint i = 0; i < G_N_ELEMENTS (nodes); i++)
    {
      SpTopoSpec s = spec_polaris (nodes[i]);
      guint32 n = nodes[i] * 4;
      ASSERT_NEAR (small_less_big (&s, SP_SIM_DES, a2a, 192 * n, 256 * n, SP_PROTO_SIMPLE),
                   (n - 4) * 12.4, 1e-9);
      /* NCCL's view does not know it */
      ck_assert (small_less_big (&s, SP_SIM_NCCL, a2a, 192 * n, 256 * n, SP_PROTO_SIMPLE) <= 0);
    }
  SpTopoSpec s = spec_polaris (2);
  /* a group of 4 + 2 ranks: the two on the second node have 4 remote
   * peers each, whichever rank the group lists first */
  static const guint32 from_full[] = { 0, 1, 2, 3, 4, 5 }, from_two[] = { 4, 5, 0, 1, 2, 3 };
  const guint32 *lists[] = { from_full, from_two };
  double t_small[2];
  for (guint l = 0; l < 2; l++)
    {
      SpShape sh;
      SpCost big, small;
      GError *error = NULL;
      ck_assert (sp_shape_init_model (&sh, &s, lists[l], 6, SP_SIM_DES, &error));
      ck_assert_uint_eq (sh.remote_max, 4);
      sp_cost_compute (&sh, a2a, 208 * 6, SP_ALGO_DIRECT, SP_PROTO_SIMPLE, &big);
      sp_cost_compute (&sh, a2a, 192 * 6, SP_ALGO_DIRECT, SP_PROTO_SIMPLE, &small);
      t_small[l] = small.time_us;
      ASSERT_NEAR (small.time_us - big.time_us, 4 * 12.4, 1e-9);
    }
  ASSERT_NEAR (t_small[0], t_small[1], 1e-9);
  /* LL sends go from host memory: forced LL pays no copy */
  ck_assert (small_less_big (&s, SP_SIM_DES, a2a, 192 * 8, 208 * 8, SP_PROTO_LL) <= 0);
  /* one send: once; 193 B takes the NIC's own read */
  ASSERT_NEAR (small_less_big (&s, SP_SIM_DES, SP_COLL_SEND, 192, 193, SP_PROTO_SIMPLE), 12.4,
               1e-3);
  /* inside one node: no network send */
  SpTopoSpec one = spec_polaris (1);
  ck_assert (small_less_big (&one, SP_SIM_DES, a2a, 192 * 4, 256 * 4, SP_PROTO_SIMPLE) <= 0);
  /* [inter] inject_copy_us overrides it: 0 turns it off, 5 on InfiniBand
   * (2 nodes x 8: 8 remote peers, δ/2 = 0.15 µs each still binding) */
  SpTopoSpec off = spec_polaris (2);
  off.inter_inject_copy_us = 0;
  ASSERT_NEAR (small_less_big (&off, SP_SIM_DES, a2a, 192 * 8, 256 * 8, SP_PROTO_SIMPLE), 0, 1e-9);
  SpTopoSpec ib = spec_h100 (2);
  ASSERT_NEAR (small_less_big (&ib, SP_SIM_DES, a2a, 192 * 16, 256 * 16, SP_PROTO_SIMPLE), 0,
               1e-9); /* InfiniBand: none by default */
  ib.inter_inject_copy_us = 5;
  ASSERT_NEAR (small_less_big (&ib, SP_SIM_DES, a2a, 192 * 16, 256 * 16, SP_PROTO_SIMPLE),
               8 * 5.0, 1e-9);
}
END_TEST

/* A ring broadcast or reduce is a chain (README-model §4): the root's bytes
 * cross n − 1 hops in turn, and a hop forwards a slice only when all of it
 * has arrived (every hop with Simple, the network hops with LL and LL128).
 * NCCL's own view charges one hop whatever n. */
START_TEST (broadcast_is_a_chain)
{
  SpTopoSpec s = spec_h100 (1);
  SpShape sh = shape_all (&s);
  ck_assert_uint_eq (sh.n_channels, 18);
  SpCost c, r;
  /* 8 ranks, LL: 6.6 + 7 × 0.6 µs, as the ring all-gather's; no fill
   * inside a node, whatever the size */
  sp_cost_compute (&sh, SP_COLL_BROADCAST, 1024, SP_ALGO_RING, SP_PROTO_LL, &c);
  ASSERT_NEAR (c.latency_us, 10.8, 1e-9);
  sp_cost_compute (&sh, SP_COLL_BROADCAST, 1u << 30, SP_ALGO_RING, SP_PROTO_LL, &c);
  ASSERT_NEAR (c.latency_us, 10.8, 1e-9);
  /* Simple, 1 KiB: one channel (1024 < 2 × 512 × 64 B) carrying one 1 KiB
   * slice at 1/18 of 370.8 GB/s through 7 hops, one of which the bytes'
   * term holds: 6 slice times on top of 8.4 + 7 × 3.4 */
  sp_cost_compute (&sh, SP_COLL_BROADCAST, 1024, SP_ALGO_RING, SP_PROTO_SIMPLE, &c);
  ASSERT_NEAR (c.latency_us, 32.2 + 6 * 1024 * 18 / 370800.0, 1e-9);
  /* 1 GiB: 18 channels, 512 KiB slices */
  guint64 S = 1u << 30;
  sp_cost_compute (&sh, SP_COLL_BROADCAST, S, SP_ALGO_RING, SP_PROTO_SIMPLE, &c);
  ASSERT_NEAR (c.latency_us, 32.2 + 6 * 524288.0 * 18 / 370800.0, 1e-9);
  ASSERT_NEAR (c.time_us, c.latency_us + (double) S / 370800.0, 1e-6);
  sp_cost_compute (&sh, SP_COLL_REDUCE, S, SP_ALGO_RING, SP_PROTO_SIMPLE, &r);
  ASSERT_NEAR (r.time_us, c.time_us, 1e-9);
  /* two ranks: one hop, nothing to fill */
  static const guint32 pair[] = { 0, 1 };
  SpShape sh2r;
  GError *error = NULL;
  ck_assert (sp_shape_init_model (&sh2r, &s, pair, 2, SP_SIM_DES, &error));
  sp_cost_compute (&sh2r, SP_COLL_BROADCAST, S, SP_ALGO_RING, SP_PROTO_SIMPLE, &c);
  ASSERT_NEAR (c.latency_us, 8.4 + 3.4, 1e-9);
  /* 2 nodes, 16 ranks, LL: 14 NVLink hops and one network hop, 6.6 + 14 ×
   * 0.6 + 2.7 (no netOverhead: a chain's NVLink hops wait on no proxy);
   * the network hop is the slowest, its slice time is the bytes' term */
  SpTopoSpec two = spec_h100 (2);
  SpShape shn2 = shape_all (&two);
  sp_cost_compute (&shn2, SP_COLL_BROADCAST, 8, SP_ALGO_RING, SP_PROTO_LL, &c);
  ASSERT_NEAR (c.latency_us, 17.7, 1e-9);
  /* Simple, 64 MiB: 512 KiB slices on 18 channels through 14 NVLink hops
   * at 370.8 GB/s and one network hop at 8 NICs × 50 GB/s × 524288 /
   * (524288 + 0.30 µs × 50,000 B/µs) = 388.874 GB/s, less the slowest
   * (NVLink) one; latency 8.4 + 14 × 3.4 + 14 (the network's Simple hop) */
  S = 64u << 20;
  sp_cost_compute (&shn2, SP_COLL_BROADCAST, S, SP_ALGO_RING, SP_PROTO_SIMPLE, &c);
  double nics = 8 * 50.0 * 524288 / (524288 + 0.30 * 50000);
  double fill = 524288.0 * 18 * (1 / nics + 13 / 370.8) / 1000;
  ASSERT_NEAR (c.latency_us, 70.0 + fill, 1e-6);
  sp_cost_compute (&shn2, SP_COLL_REDUCE, S, SP_ALGO_RING, SP_PROTO_SIMPLE, &r);
  ASSERT_NEAR (r.time_us, c.time_us, 1e-9);
  /* 64 nodes: 448 NVLink and 63 network hops; LL fills the network hops
   * (a proxy sends a step once every line of it has arrived).  8 B: one
   * channel, with a NIC to itself at LL's half of its rate for 64 KiB
   * messages, or LL's cap (llMaxBw) if that is less: one 8-byte slice a
   * hop, 62 of them beyond the bytes' term */
  SpTopoSpec big = spec_h100 (64);
  SpShape shb = shape_all (&big);
  sp_cost_compute (&shb, SP_COLL_BROADCAST, 8, SP_ALGO_RING, SP_PROTO_LL, &c);
  double llcap = sp_nccl_ll_max_bw (SP_ARCH_HOPPER, 64, shb.amd_host);
  double llnic = 0.5 * 50.0 * 65536 / (65536 + 0.30 * 50000);
  ASSERT_NEAR (c.latency_us, 6.6 + 448 * 0.6 + 63 * 2.7 + 62 * 8.0 / MIN (llnic, llcap) / 1000,
               1e-9);
  /* 32 KiB: still one channel (below 512 × 8 B × 512 ranks), one slice of
   * 32 KiB, LL's step */
  sp_cost_compute (&shb, SP_COLL_BROADCAST, 32768, SP_ALGO_RING, SP_PROTO_LL, &c);
  ASSERT_NEAR (c.latency_us,
               6.6 + 448 * 0.6 + 63 * 2.7 + 62 * 32768.0 / MIN (llnic, llcap) / 1000, 1e-9);
  /* LL128 at 16 MiB: every network hop holds a whole slice, one step of
   * 120 × 640 × 8 B × 120 / 128 = 576,000 B of payload a channel (16 MiB /
   * 18 is more), at 0.92 of the NICs over 18 channels; one of the 63 is
   * in the bytes' term.  Latency: 14 + 448 × 1.9 + 63 × 4.0 (NCCL's LL128
   * base, NVLink and network hops) */
  sp_cost_compute (&shb, SP_COLL_BROADCAST, 16u << 20, SP_ALGO_RING, SP_PROTO_LL128, &c);
  double slice = 576000.0 * 18;
  ASSERT_NEAR (c.latency_us, 14 + 448 * 1.9 + 63 * 4.0 + 62 * slice / (0.92 * nics) / 1000, 1e-6);
  /* NCCL's own view: one hop */
  SpShape shn = shape_nccl (&big);
  sp_cost_compute (&shn, SP_COLL_BROADCAST, 1024, SP_ALGO_RING, SP_PROTO_LL, &c);
  ASSERT_NEAR (c.latency_us, 6.6 + 2.7, 1e-9);
  /* Slingshot: the step floor on the first slice's network hops, then one
   * per further slice: 4 MiB on 2 nodes is one 4 MiB / 12 slice a channel
   * (one step), 64 MiB eleven of 512 KiB (10.7) */
  SpTopoSpec pol = spec_polaris (2);
  SpShape shp = shape_all (&pol);
  double ring0 = sp_nccl_base_latency_us (SP_ALGO_RING, SP_PROTO_SIMPLE);
  sp_cost_compute (&shp, SP_COLL_BROADCAST, 4 << 20, SP_ALGO_RING, SP_PROTO_SIMPLE, &c);
  ASSERT_NEAR (c.floor_us, ring0 + 42.0, 1e-9);
  sp_cost_compute (&shp, SP_COLL_BROADCAST, 64 << 20, SP_ALGO_RING, SP_PROTO_SIMPLE, &c);
  ASSERT_NEAR (c.floor_us, ring0 + 11 * 42.0, 1e-9);
  /* one slice a channel whenever a channel's share fits one step, however
   * S / channels rounds (229,388 B over 18 channels once counted 2) */
  SpTopoSpec sl = spec_h100 (2);
  sl.transport = SP_TRANSPORT_SLINGSHOT;
  SpShape shs = shape_all (&sl);
  for (guint64 b = 229000; b < 230000; b += 4)
    {
      sp_cost_compute (&shs, SP_COLL_BROADCAST, b, SP_ALGO_RING, SP_PROTO_SIMPLE, &c);
      ASSERT_NEAR (c.floor_us, ring0 + 42.0, 1e-9);
    }
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
  /* NVLS all-reduce of 1 GiB: 1.01 × 370.8 × 8/9 algBw, less 1.5 µs per
   * chunk of each of the 16 channels: 1 GiB is 64 × (16 channels × 8
   * heads × 128 KiB), so the chunk stays 128 KiB */
  sp_cost_compute (&sh, SP_COLL_ALL_REDUCE, 1 << 30, SP_ALGO_NVLS, SP_PROTO_SIMPLE, &c);
  double alg0 = 1.01 * 370.8 * 8 / 9;
  ASSERT_NEAR (c.algbw, alg0 / (1 + 1.5e3 * alg0 / (16 * 131072.0)), 1e-9);
  ASSERT_NEAR (c.latency_us, 25.0, 1e-9);
  /* one byte less and the chunk halves: twice the chunks, twice the cost */
  sp_cost_compute (&sh, SP_COLL_ALL_REDUCE, (1 << 30) - 16, SP_ALGO_NVLS, SP_PROTO_SIMPLE, &c);
  ASSERT_NEAR (c.algbw, alg0 / (1 + 1.5e3 * alg0 / (16 * 65536.0)), 1e-9);
  /* NCCL's thresholds apply in order to the chunk as it shrinks: below
   * 64 × 16 × 8 × 128 KiB = 1 GiB it is 64 KiB, then below 8 × 16 × 8 ×
   * 64 KiB = 64 MiB 32 KiB: 96 MiB runs 64 KiB chunks (against 128 KiB
   * the second threshold would be 128 MiB and give 32 KiB), 48 MiB 32 KiB */
  sp_cost_compute (&sh, SP_COLL_ALL_REDUCE, 96 << 20, SP_ALGO_NVLS, SP_PROTO_SIMPLE, &c);
  ASSERT_NEAR (c.algbw, alg0 / (1 + 1.5e3 * alg0 / (16 * 65536.0)), 1e-9);
  sp_cost_compute (&sh, SP_COLL_ALL_REDUCE, 48 << 20, SP_ALGO_NVLS, SP_PROTO_SIMPLE, &c);
  ASSERT_NEAR (c.algbw, alg0 / (1 + 1.5e3 * alg0 / (16 * 32768.0)), 1e-9);
  /* NCCL's own model (tuning.cc 2.28+): busBw = 16 channels × 370.8/16 ×
   * 0.85 × 15/16 × 2, algBw = busBw × 8/14 */
  SpShape shn = sh;
  shn.nccl = TRUE;
  sp_cost_compute (&shn, SP_COLL_ALL_REDUCE, 1 << 30, SP_ALGO_NVLS, SP_PROTO_SIMPLE, &c);
  ASSERT_NEAR (c.algbw, 370.8 * 0.85 * 15 / 16 * 2 * 8 / 14, 1e-9);
  /* and its all-gather: × (8−1)/8 per channel, busBw is the algBw */
  sp_cost_compute (&shn, SP_COLL_ALL_GATHER, 1 << 30, SP_ALGO_NVLS, SP_PROTO_SIMPLE, &c);
  ASSERT_NEAR (c.algbw, 370.8 * 0.85 * 15 / 16 * 7 / 8, 1e-9);
}
END_TEST

/* NVLSTree (NVLS inside each node, NCCL's double binary tree over the
 * nodes' NICs) by hand, 4 × H100 nodes of 8 GPUs and 8 × 400 Gb/s IB. */
START_TEST (worked_example_nvls_tree)
{
  SpTopoSpec s = spec_h100 (4);
  SpShape sh = shape_all (&s);
  SpCost c;
  /* IB: 0.30 µs per 512 KiB message on a 50 GB/s line */
  double nic = 50.0 * 524288 / (524288 + 0.30 * 50000);
  /* 1 GiB from 4 nodes on: 64 KiB chunks (1 GiB = 128 × 16 channels × 8
   * heads × 64 KiB); NVLS inside the node at 1.01 × 370.8 × 8/9 less 1.5 µs
   * per chunk: 225.5 GB/s, above the tree's 8 NICs carrying 2 × S: the
   * NICs bound it */
  double alg0 = 1.01 * 370.8 * 8 / 9;
  double nvls = alg0 / (1 + 1.5e3 * alg0 / (16 * 65536.0));
  ck_assert (nvls > 8 * nic / 2);
  sp_cost_compute (&sh, SP_COLL_ALL_REDUCE, 1 << 30, SP_ALGO_NVLS_TREE, SP_PROTO_SIMPLE, &c);
  ASSERT_NEAR (c.algbw, 8 * nic / 2, 1e-9);
  /* NCCL's latency: NVLink NVLSTree 25 + 2 log2(4) × NET NVLSTree 20.9 */
  ASSERT_NEAR (c.latency_us, 25 + 2 * 2 * 20.9, 1e-9);
  /* two nodes: a node of the tree carries S once: NVLS is the bound, with
   * 128 KiB chunks again */
  SpTopoSpec s2 = spec_h100 (2);
  SpShape sh2 = shape_all (&s2);
  sp_cost_compute (&sh2, SP_COLL_ALL_REDUCE, 1 << 30, SP_ALGO_NVLS_TREE, SP_PROTO_SIMPLE, &c);
  ASSERT_NEAR (c.algbw, alg0 / (1 + 1.5e3 * alg0 / (16 * 131072.0)), 1e-9);
  ASSERT_NEAR (c.latency_us, 25 + 2 * 1 * 20.9, 1e-9);
  /* 8 MiB on two nodes: below 4 × 16 × 8 × 128 KiB (64 KiB), not below
   * 1 × 16 × 8 × 64 KiB = 8 MiB: the chunk stays 64 KiB */
  sp_cost_compute (&sh2, SP_COLL_ALL_REDUCE, 8 << 20, SP_ALGO_NVLS_TREE, SP_PROTO_SIMPLE, &c);
  ASSERT_NEAR (c.algbw, alg0 / (1 + 1.5e3 * alg0 / (16 * 65536.0)), 1e-9);
  /* three nodes: a node carries 1.5 × S: 8 NICs / 1.5 = 259 GB/s, below
   * NVLS's 268.9 with 128 KiB chunks */
  SpTopoSpec s3 = spec_h100 (3);
  SpShape sh3 = shape_all (&s3);
  sp_cost_compute (&sh3, SP_COLL_ALL_REDUCE, 1 << 30, SP_ALGO_NVLS_TREE, SP_PROTO_SIMPLE, &c);
  ck_assert (alg0 / (1 + 1.5e3 * alg0 / (16 * 131072.0)) > 8 * nic / 1.5);
  ASSERT_NEAR (c.algbw, 8 * nic / 1.5, 1e-9);
  ASSERT_NEAR (c.latency_us, 25 + 2 * 1 * 20.9, 1e-9); /* log2(3) rounds down */
  /* NCCL's own formula: 8 heads × min(48 GB/s of NIC each, Hopper's
   * perChMaxNVLSTreeBw 45.5 from 3 nodes) = 364, below the NVLS side
   * 2 × 0.85 × 15/16 × 370.8; algBw = busBw × 32 / 62 */
  SpShape shn = shape_nccl (&s);
  sp_cost_compute (&shn, SP_COLL_ALL_REDUCE, 1 << 30, SP_ALGO_NVLS_TREE, SP_PROTO_SIMPLE, &c);
  ASSERT_NEAR (c.algbw, 8 * 45.5 * 32 / 62, 1e-9);
  /* ... which is below the ring's 8 × 48 = 384: NCCL takes the ring for
   * the largest sizes and NVLSTree where its latency wins */
  GError *error = NULL;
  ck_assert (sp_cost_choose (&shn, SP_COLL_ALL_REDUCE, (guint64) 16 << 30, SP_ALGO_AUTO,
                             SP_PROTO_AUTO, &c, &error));
  ck_assert_int_eq (c.algo, SP_ALGO_RING);
  ck_assert (sp_cost_choose (&shn, SP_COLL_ALL_REDUCE, (guint64) 256 << 20, SP_ALGO_AUTO,
                             SP_PROTO_AUTO, &c, &error));
  ck_assert_int_eq (c.algo, SP_ALGO_NVLS_TREE);
  /* only all-reduce, only across nodes, only NVSwitch Hopper / Blackwell */
  ck_assert (!sp_cost_enabled (&sh, SP_COLL_ALL_GATHER, SP_ALGO_NVLS_TREE, SP_PROTO_SIMPLE, NULL));
  ck_assert (!sp_cost_enabled (&sh, SP_COLL_ALL_REDUCE, SP_ALGO_NVLS_TREE, SP_PROTO_LL128, NULL));
  SpTopoSpec one = spec_h100 (1);
  SpShape sh1 = shape_all (&one);
  ck_assert (!sp_cost_enabled (&sh1, SP_COLL_ALL_REDUCE, SP_ALGO_NVLS_TREE, SP_PROTO_SIMPLE, NULL));
  SpTopoSpec a100 = spec_h100 (4);
  g_strlcpy (a100.gpu_model, "A100-SXM4-80GB", sizeof a100.gpu_model);
  SpShape sha = shape_all (&a100);
  ck_assert (!sp_cost_enabled (&sha, SP_COLL_ALL_REDUCE, SP_ALGO_NVLS_TREE, SP_PROTO_SIMPLE, NULL));
}
END_TEST

/* On EFA aws-ofi-nccl's tuner chooses from its own model of the network,
 * so we choose by our cost there; elsewhere NCCL's formula chooses.  Two
 * p4de-like nodes (8 x A100, 4 x 100 Gb/s): a 1 GiB all-reduce by NCCL's
 * formula is a ring (algBw = busBw x 16/30 beats the tree's busBw / 2); by
 * the network's cost the tree, whose nodes send S once where the ring's
 * send 2 S x 15/16 (the development set's p4de run moves 78 GB/s of bus
 * bandwidth over 50 GB/s of NICs: a tree). */
START_TEST (efa_chooses_by_the_network)
{
  SpTopoSpec s = spec_h100 (2);
  g_strlcpy (s.gpu_model, "A100-SXM4-80GB", sizeof s.gpu_model);
  s.intra_bandwidth_gbs = 300;
  s.nics_per_node = 4;
  s.nic_gbps = 100;
  s.fabric = SP_FABRIC_FAT_TREE;
  SpCost c;
  GError *error = NULL;
  SpShape ib = shape_all (&s);
  ck_assert (sp_cost_choose (&ib, SP_COLL_ALL_REDUCE, 1 << 30, SP_ALGO_AUTO, SP_PROTO_AUTO, &c, &error));
  ck_assert_int_eq (c.algo, SP_ALGO_RING);
  s.transport = SP_TRANSPORT_EFA;
  SpShape efa = shape_all (&s);
  ck_assert (sp_cost_choose (&efa, SP_COLL_ALL_REDUCE, 1 << 30, SP_ALGO_AUTO, SP_PROTO_AUTO, &c, &error));
  ck_assert_int_eq (c.algo, SP_ALGO_TREE);
  SpCost ring;
  sp_cost_compute (&efa, SP_COLL_ALL_REDUCE, 1 << 30, SP_ALGO_RING, c.proto, &ring);
  ck_assert (c.time_us < ring.time_us);
  /* NCCL's own model keeps its formula's ring */
  SpShape n = shape_nccl (&s);
  ck_assert (sp_cost_choose (&n, SP_COLL_ALL_REDUCE, 1 << 30, SP_ALGO_AUTO, SP_PROTO_AUTO, &c, &error));
  ck_assert_int_eq (c.algo, SP_ALGO_RING);
}
END_TEST

START_TEST (automatic_choice_is_the_minimum)
{
  /* NCCL picks the minimum of ITS estimate (topoGetAlgoInfo) */
  SpTopoSpec s = spec_h100 (4);
  SpShape sh = shape_nccl (&s);
  static const SpAlgo algos[] = { SP_ALGO_TREE, SP_ALGO_RING, SP_ALGO_NVLS, SP_ALGO_NVLS_TREE };
  static const SpProto protos[] = { SP_PROTO_LL, SP_PROTO_LL128, SP_PROTO_SIMPLE };
  for (guint64 S = 64; S <= ((guint64) 1 << 32); S *= 16)
    {
      SpCost best;
      GError *error = NULL;
      ck_assert (sp_cost_choose (&sh, SP_COLL_ALL_REDUCE, S, SP_ALGO_AUTO, SP_PROTO_AUTO, &best,
                                 &error));
      for (guint a = 0; a < G_N_ELEMENTS (algos); a++)
        for (guint p = 0; p < G_N_ELEMENTS (protos); p++)
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
  /* case-insensitive, as the README promises: "h100" was Ampere once */
  ck_assert_int_eq (sp_sim_arch_of ("h100"), SP_ARCH_HOPPER);
  ck_assert_int_eq (sp_sim_arch_of ("NVIDIA h200 141GB"), SP_ARCH_HOPPER);
  ck_assert_int_eq (sp_sim_arch_of ("gb200"), SP_ARCH_BLACKWELL);
  ck_assert_int_eq (sp_sim_arch_of ("Tesla v100-sxm2"), SP_ARCH_VOLTA);
  ck_assert_int_eq (sp_sim_arch_of ("gh200"), SP_ARCH_HOPPER);
  /* every GPU lib/topo.c knows by name, with the generation of NCCL's
   * tables (tuning.cc compCapIndex: sm75 and sm60 Volta's, sm86 / sm89
   * Ampere's, sm120 Blackwell's) */
  static const struct {
    const char *name;
    SpArch arch;
    guint cc;
  } gen[] = {
    { "GB200", SP_ARCH_BLACKWELL, 100 }, { "GB300", SP_ARCH_BLACKWELL, 100 },
    { "B100", SP_ARCH_BLACKWELL, 100 },  { "B200", SP_ARCH_BLACKWELL, 100 },
    { "B300", SP_ARCH_BLACKWELL, 100 },  { "GH200", SP_ARCH_HOPPER, 90 },
    { "H100", SP_ARCH_HOPPER, 90 },      { "H800", SP_ARCH_HOPPER, 90 },
    { "H200", SP_ARCH_HOPPER, 90 },      { "H20", SP_ARCH_HOPPER, 90 },
    { "A100", SP_ARCH_AMPERE, 80 },      { "A800", SP_ARCH_AMPERE, 80 },
    { "V100", SP_ARCH_VOLTA, 70 },       { "L40S", SP_ARCH_AMPERE, 89 },
    { "L40", SP_ARCH_AMPERE, 89 },       { "L4", SP_ARCH_AMPERE, 89 },
    { "A10G", SP_ARCH_AMPERE, 86 },      { "A10", SP_ARCH_AMPERE, 86 },
    { "A40", SP_ARCH_AMPERE, 86 },       { "A30", SP_ARCH_AMPERE, 80 },
    { "T4", SP_ARCH_VOLTA, 75 },         { "P100", SP_ARCH_VOLTA, 60 },
    { "RTX PRO 6000", SP_ARCH_BLACKWELL, 120 },
  };
  g_auto (GStrv) names = g_strsplit (sp_topo_gpu_model_names (), ", ", -1);
  ck_assert_uint_eq (g_strv_length (names), G_N_ELEMENTS (gen));
  for (guint i = 0; names[i]; i++)
    {
      ck_assert_msg (sp_topo_gpu_model_known (names[i]), "%s", names[i]);
      ck_assert_str_eq (names[i], gen[i].name);
      ck_assert_msg (sp_sim_arch_of (names[i]) == gen[i].arch, "%s: arch %d", names[i],
                     sp_sim_arch_of (names[i]));
      ck_assert_uint_eq (sp_topo_gpu_compute_capability (names[i]), gen[i].cc);
    }
  /* no name catches another's strings, nor a longer product number (a
   * review found RTX A4000 taken for an A40, RTX A3000 for an A30, T400
   * for a T4): not followed by a digit; and real strings keep matching */
  static const struct {
    const char *model;
    guint cc;
  } strings[] = {
    { "A100-SXM4-80GB", 80 },  { "NVIDIA L4", 89 },          { "NVIDIA A10G", 86 },
    { "MI300X", 0 },           { "NVIDIA RTX A4000", 0 },     { "NVIDIA RTX A3000 Laptop GPU", 0 },
    { "NVIDIA T400", 0 },      { "NVIDIA RTX A1000", 0 },     { "Tesla V100S-PCIE-32GB", 70 },
    { "NVIDIA H200 NVL", 90 }, { "H20-3e", 90 },              { "NVIDIA L40S", 89 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (strings); i++)
    ck_assert_msg (sp_topo_gpu_compute_capability (strings[i].model) == strings[i].cc, "%s: %u",
                   strings[i].model, sp_topo_gpu_compute_capability (strings[i].model));
  ck_assert (sp_topo_gpu_model_known ("cpu-core") && !sp_topo_gpu_model_known ("MI300X"));
  /* and what follows from the name: the host and the NIC path of Grace */
  SpTopoSpec g = spec_h100 (2);
  g_strlcpy (g.gpu_model, "gh200", sizeof g.gpu_model);
  g.gpus_per_node = 4;
  g.intra_kind = SP_INTRA_NVLINK;
  ck_assert_int_eq (sp_sim_host_cpu (&g), SP_HOST_CPU_ARM);
  ck_assert_int_eq (sp_sim_nic_path (&g), SP_NIC_PATH_PXB);
  g_strlcpy (g.gpu_model, "a100-sxm4-80gb", sizeof g.gpu_model);
  ck_assert_int_eq (sp_sim_host_cpu (&g), SP_HOST_CPU_AMD);
  ck_assert_int_eq (sp_sim_nic_path (&g), SP_NIC_PATH_PHB);
  /* the same estimate whatever the case */
  SpTopoSpec up = spec_h100 (4), low = spec_h100 (4);
  g_strlcpy (low.gpu_model, "h100-sxm5-80gb", sizeof low.gpu_model);
  g_autoptr (SpTopo) tu = sp_topo_new (&up, NULL);
  g_autoptr (SpTopo) tl = sp_topo_new (&low, NULL);
  SpCollRequest r;
  sp_coll_request_init (&r);
  r.coll = SP_COLL_ALL_REDUCE;
  r.bytes = 1 << 30;
  SpCollEstimate eu, el;
  ck_assert (sp_sim_estimate (tu, SP_SIM_ANALYTIC, &r, &eu, NULL));
  ck_assert (sp_sim_estimate (tl, SP_SIM_ANALYTIC, &r, &el, NULL));
  ck_assert_uint_eq (eu.time_ns, el.time_ns);
}
END_TEST

/* One estimate over every rank of `spec` (AUTO unless algo / proto given). */
/* sp_sim_estimate of `coll` over every rank of `spec` (a valid spec). */
static gboolean
try_estimate (const SpTopoSpec *spec, SpSimModel model, SpColl coll, guint64 bytes, SpAlgo algo,
              SpProto proto, SpCollEstimate *out, GError **error)
{
  GError *local = NULL;
  g_autoptr (SpTopo) topo = sp_topo_new (spec, &local);
  SP_ASSERT_NO_ERROR (local);
  SpCollRequest r;
  sp_coll_request_init (&r);
  r.coll = coll;
  r.bytes = bytes;
  r.algo = algo;
  r.proto = proto;
  return sp_sim_estimate (topo, model, &r, out, error);
}

static SpCollEstimate
estimate_on (const SpTopoSpec *spec, SpSimModel model, SpColl coll, guint64 bytes, SpAlgo algo,
             SpProto proto)
{
  GError *error = NULL;
  SpCollEstimate e;
  ck_assert_msg (try_estimate (spec, model, coll, bytes, algo, proto, &e, &error), "%s",
                 error ? error->message : "");
  return e;
}

/* `x` picks for `coll` what `y` picks (algorithm, protocol, time); that pick. */
static SpCollEstimate
assert_picks_alike (const SpTopoSpec *x, const SpTopoSpec *y, SpSimModel model, SpColl coll,
                    guint64 bytes)
{
  SpCollEstimate a = estimate_on (x, model, coll, bytes, SP_ALGO_AUTO, SP_PROTO_AUTO);
  SpCollEstimate b = estimate_on (y, model, coll, bytes, SP_ALGO_AUTO, SP_PROTO_AUTO);
  ck_assert_int_eq (a.algo, b.algo);
  ck_assert_int_eq (a.proto, b.proto);
  ck_assert_uint_eq (a.time_ns, b.time_ns);
  return a;
}

/* The message of the estimate `spec` refuses (SP_ERROR_UNSUPPORTED), g_free. */
static char *
estimate_refused (const SpTopoSpec *spec, SpSimModel model, SpColl coll, guint64 bytes, SpProto proto)
{
  GError *error = NULL;
  SpCollEstimate e;
  ck_assert (!try_estimate (spec, model, coll, bytes, SP_ALGO_AUTO, proto, &e, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_UNSUPPORTED);
  char *message = g_strdup (error->message);
  g_error_free (error);
  return message;
}

/* [calibration] in the cost model.  cpu-shm: 4 ranks on one node over
 * shm, whose derived efficiency is 1 (README-model §2). */
static guint64
shm_time (const SpTopoSpec *s, SpSimModel model, SpColl coll, guint64 bytes, SpProto proto)
{
  SpCollEstimate e = estimate_on (s, model, coll, bytes, SP_ALGO_RING, proto);
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
   * 10 Gbit/s / 8 × the model's own efficiency until nic_efficiency is
   * set: cpu-shm's transport is tcp, δ = 20 µs per 512 KiB step at
   * 1,250 B/µs (README-model §2) */
  double intra, nic;
  sp_sim_link_rates (&half, &intra, &nic);
  ASSERT_NEAR (intra, 5.0, 1e-12);
  ASSERT_NEAR (nic, 10.0 / 8 * 524288.0 / (524288.0 + 20.0 * 1250.0), 1e-12);
  half.cal_nic_efficiency = 0.5;
  sp_sim_link_rates (&half, &intra, &nic);
  ASSERT_NEAR (nic, 10.0 / 8 * 0.5, 1e-12);
}
END_TEST

/* A calibrated nic_efficiency is the ring step's rate; the per-message
 * cost it implies sets the p2p chunk's: on ib (512 KiB steps, 128 KiB
 * chunks) e = 0.8 gives δ·line = 512 KiB × 0.25, so an all-to-all's
 * network runs at 128/(128 + 128) = 0.5 of the line, 0.625 of the ring's. */
START_TEST (calibrated_nic_sets_p2p)
{
  SpTopoSpec s = spec_h100 (2);
  s.cal_nic_efficiency = 0.8;
  SpShape sh = shape_all (&s);
  ASSERT_NEAR (sh.nic_gbs, 50.0 * 0.8, 1e-12);
  ASSERT_NEAR (sh.p2p_net_factor, 0.5 / 0.8, 1e-12);
  s.cal_nic_efficiency = 1.0; /* no per-message cost: p2p as fast */
  sh = shape_all (&s);
  ASSERT_NEAR (sh.p2p_net_factor, 1.0, 1e-12);
}
END_TEST

/* A topology from datasheet numbers alone (no latency) for every GPU
 * generation and transport gives a finite, positive estimate from every
 * model, small and large, for every collective; 1 GiB costs more than 1 KiB. */
START_TEST (datasheet_only_transports)
{
  static const char *const gpus[] = { "V100", "A100", "h100", "H200", "B200" };
  static const SpColl colls[] = { SP_COLL_ALL_REDUCE, SP_COLL_ALL_GATHER, SP_COLL_REDUCE_SCATTER,
                                  SP_COLL_ALL_TO_ALL, SP_COLL_BROADCAST };
  static const SpSimModel models[] = { SP_SIM_ANALYTIC, SP_SIM_DES, SP_SIM_NCCL };
  for (guint g = 0; g < G_N_ELEMENTS (gpus); g++)
    for (guint t = SP_TRANSPORT_IB; t <= SP_TRANSPORT_TCP; t++)
      {
        SpTopoSpec s = spec_h100 (4);
        g_strlcpy (s.gpu_model, gpus[g], sizeof s.gpu_model);
        s.intra_latency_us = SP_TOPO_LATENCY_UNSET;
        s.inter_latency_us = SP_TOPO_LATENCY_UNSET;
        s.transport = (SpTransport) t;
        GError *error = NULL;
        g_autoptr (SpTopo) topo = sp_topo_new (&s, &error);
        SP_ASSERT_NO_ERROR (error);
        for (guint c = 0; c < G_N_ELEMENTS (colls); c++)
          for (guint m = 0; m < G_N_ELEMENTS (models); m++)
            {
              guint64 prev = 0, first = 0;
              for (guint64 S = 1024; S <= ((guint64) 1 << 30); S <<= 10)
                {
                  SpCollRequest r;
                  sp_coll_request_init (&r);
                  r.coll = colls[c];
                  r.bytes = S;
                  SpCollEstimate e;
                  ck_assert_msg (sp_sim_estimate (topo, models[m], &r, &e, &error), "%s %s: %s",
                                 gpus[g], sp_transport_name (t), error ? error->message : "");
                  /* not always monotonic: NCCL picks by ITS estimate, which
                   * does not know a transport's latency (the socket plugin
                   * reports 0), so a small size can pick an algorithm with
                   * more network hops than a larger one */
                  ck_assert_msg (e.time_ns > 0, "%s %s %s %s %" G_GUINT64_FORMAT, gpus[g],
                                 sp_transport_name (t), sp_coll_name (colls[c]),
                                 sp_sim_model_name (models[m]), S);
                  prev = e.time_ns;
                  first = first ? first : e.time_ns;
                }
              ck_assert (prev > first);
            }
      }
}
END_TEST

/* The transport's costs, computed by hand from README-model §2.
 * 2 nodes x 8 H100, ring LL all-gather (16 ranks, 15 steps, 1 crossing
 * the network): NCCL's latency is 6.6 + 14 x max(0.6, netOverhead 1) +
 * 1 x hop_net, with hop_net = 2.7 (NCCL NET Ring LL) + the transport's
 * latency: 0 on ib; on efa 75 µs as aws-ofi-nccl reports it on p4d / p5
 * (NCCL's view, and the real hop on A100 instances), 20 µs as its tuner
 * models a Hopper instance's real hop; once for LL.  A given [inter]
 * latency_us replaces the 2.7. */
START_TEST (transport_costs_by_hand)
{
  SpTopoSpec s = spec_h100 (2);
  s.intra_latency_us = SP_TOPO_LATENCY_UNSET;
  s.inter_latency_us = SP_TOPO_LATENCY_UNSET;
  SpShape sh = shape_all (&s);
  SpCost c;
  sp_cost_compute (&sh, SP_COLL_ALL_GATHER, 1024, SP_ALGO_RING, SP_PROTO_LL, &c);
  ASSERT_NEAR (c.latency_us, 6.6 + 14 * 1.0 + 2.7, 1e-9);
  s.transport = SP_TRANSPORT_EFA;
  sh = shape_all (&s);
  sp_cost_compute (&sh, SP_COLL_ALL_GATHER, 1024, SP_ALGO_RING, SP_PROTO_LL, &c);
  ASSERT_NEAR (c.latency_us, 6.6 + 14 * 1.0 + 2.7 + 20, 1e-9);
  SpShape shn = shape_nccl (&s);
  sp_cost_compute (&shn, SP_COLL_ALL_GATHER, 1024, SP_ALGO_RING, SP_PROTO_LL, &c);
  ASSERT_NEAR (c.latency_us, 6.6 + 14 * 1.0 + 2.7 + 75, 1e-9);
  /* Simple on NET Ring Simple's 14 µs and 3 x netOverhead per intra step:
   * NCCL's formula adds the plugin latency twice (tuning.cc, its flush);
   * our cost once on an H100, which does not flush (sm90+) */
  sp_cost_compute (&sh, SP_COLL_ALL_GATHER, 1024, SP_ALGO_RING, SP_PROTO_SIMPLE, &c);
  ASSERT_NEAR (c.latency_us, 8.4 + 14 * 3.4 + 14.0 + 20, 1e-9);
  sp_cost_compute (&shn, SP_COLL_ALL_GATHER, 1024, SP_ALGO_RING, SP_PROTO_SIMPLE, &c);
  ASSERT_NEAR (c.latency_us, 8.4 + 14 * 3.4 + 14.0 + 2 * 75, 1e-9);
  /* an A100 instance (p4d, p4de): 75 µs in both, twice for Simple (A100
   * flushes) */
  SpTopoSpec a = s;
  g_strlcpy (a.gpu_model, "A100-SXM4-80GB", sizeof a.gpu_model);
  SpShape sha = shape_all (&a);
  sp_cost_compute (&sha, SP_COLL_ALL_GATHER, 1024, SP_ALGO_RING, SP_PROTO_LL, &c);
  ASSERT_NEAR (c.latency_us, 6.6 + 14 * 2.0 + 2.7 + 75, 1e-9); /* AMD host: netOverhead 2 */
  sp_cost_compute (&sha, SP_COLL_ALL_GATHER, 1024, SP_ALGO_RING, SP_PROTO_SIMPLE, &c);
  ASSERT_NEAR (c.latency_us, 8.4 + 14 * 3 * 2.0 + 14.0 + 2 * 75, 1e-9);
  /* tcp's 12 µs kernel stack: once with Simple, even on an A100 (the
   * socket transport stages through host memory: no flush); an A100 on
   * efa pays its 75 twice (the flush); one network hop each */
  SpTopoSpec tcp = a, ibs = a;
  tcp.transport = SP_TRANSPORT_TCP;
  ibs.transport = SP_TRANSPORT_IB;
  SpShape sht = shape_all (&tcp), shi = shape_all (&ibs);
  SpCost ci;
  sp_cost_compute (&sht, SP_COLL_ALL_GATHER, 1024, SP_ALGO_RING, SP_PROTO_SIMPLE, &c);
  sp_cost_compute (&shi, SP_COLL_ALL_GATHER, 1024, SP_ALGO_RING, SP_PROTO_SIMPLE, &ci);
  ASSERT_NEAR (c.latency_us - ci.latency_us, 12, 1e-9);
  sp_cost_compute (&sha, SP_COLL_ALL_GATHER, 1024, SP_ALGO_RING, SP_PROTO_SIMPLE, &c);
  ASSERT_NEAR (c.latency_us - ci.latency_us, 2 * 75, 1e-9);
  /* one H100 a node (p5.4xlarge) keeps SENDRECV: the 75 µs it reports;
   * so does an sm120 RTX PRO 6000 (g-series): Blackwell's 35 */
  SpTopoSpec one = s;
  one.gpus_per_node = 1;
  one.nics_per_node = 1;
  one.inter_latency_us = SP_TOPO_LATENCY_UNSET;
  SpTopoSpec one_ib = one;
  one_ib.transport = SP_TRANSPORT_IB; /* the same hop without a plugin latency */
  SpShape sh1 = shape_all (&one), sh1i = shape_all (&one_ib);
  sp_cost_compute (&sh1, SP_COLL_ALL_GATHER, 1024, SP_ALGO_RING, SP_PROTO_LL, &c);
  sp_cost_compute (&sh1i, SP_COLL_ALL_GATHER, 1024, SP_ALGO_RING, SP_PROTO_LL, &ci);
  ASSERT_NEAR (c.latency_us - ci.latency_us, 75, 1e-9);
  SpTopoSpec rtx = s;
  g_strlcpy (rtx.gpu_model, "NVIDIA RTX PRO 6000", sizeof rtx.gpu_model);
  SpShape shx = shape_all (&rtx);
  sp_cost_compute (&shx, SP_COLL_ALL_GATHER, 1024, SP_ALGO_RING, SP_PROTO_LL, &c);
  ASSERT_NEAR (c.latency_us, 6.6 + 14 * 1.0 + 2.7 + 35, 1e-9);
  s.inter_latency_us = 10;
  sh = shape_all (&s);
  sp_cost_compute (&sh, SP_COLL_ALL_GATHER, 1024, SP_ALGO_RING, SP_PROTO_LL, &c);
  ASSERT_NEAR (c.latency_us, 6.6 + 14 * 1.0 + 10 + 20, 1e-9);

  /* Bandwidth: an EFA NIC of 400 Gb/s (50,000 B/µs) with 1 MiB steps and
   * δ = 16.6 µs (SENDRECV, an A100 instance) runs at 1048576 / (1048576 +
   * 830000) of its line rate; p2p (all-to-all) messages of 512 KiB at
   * 524288 / (524288 + 830000).  With the RDMA protocol (Hopper), δ = 3:
   * 1048576 / (1048576 + 150000), 524288 / (524288 + 150000). */
  double ring = 1048576.0 / (1048576.0 + 16.6 * 50000.0);
  double p2p = 524288.0 / (524288.0 + 16.6 * 50000.0);
  ASSERT_NEAR (sha.nic_gbs, 50.0 * ring, 1e-9);
  ASSERT_NEAR (sha.p2p_net_factor, p2p / ring, 1e-12);
  ring = 1048576.0 / (1048576.0 + 3.0 * 50000.0);
  p2p = 524288.0 / (524288.0 + 3.0 * 50000.0);
  ASSERT_NEAR (sh.nic_gbs, 50.0 * ring, 1e-9);
  ASSERT_NEAR (sh.p2p_net_factor, p2p / ring, 1e-12);
  /* the host: A100 defaults to AMD (DGX A100: EPYC 7742), H100 Intel */
  ck_assert_int_eq (sp_sim_host_cpu (&s), SP_HOST_CPU_INTEL);
  g_strlcpy (s.gpu_model, "A100-SXM4-80GB", sizeof s.gpu_model);
  ck_assert_int_eq (sp_sim_host_cpu (&s), SP_HOST_CPU_AMD);
  s.host_cpu = SP_HOST_CPU_INTEL;
  ck_assert_int_eq (sp_sim_host_cpu (&s), SP_HOST_CPU_INTEL);
  /* a cross-node all-to-all is Simple at every size (no LL buffers on
   * network p2p connections); NCCL's own closed form kept the threshold */
  s = spec_h100 (2);
  g_autoptr (SpTopo) topo = sp_topo_new (&s, NULL);
  SpCollRequest r;
  sp_coll_request_init (&r);
  r.coll = SP_COLL_ALL_TO_ALL;
  r.bytes = 4096;
  SpCollEstimate e;
  ck_assert (sp_sim_estimate (topo, SP_SIM_ANALYTIC, &r, &e, NULL));
  ck_assert_int_eq (e.proto, SP_PROTO_SIMPLE);
  ck_assert (sp_sim_estimate (topo, SP_SIM_NCCL, &r, &e, NULL));
  ck_assert_int_eq (e.proto, SP_PROTO_LL);
}
END_TEST


/* [nccl] algo / proto narrow NCCL's choice the way NCCL_ALGO / NCCL_PROTO
 * do: the pick is the best of what is left, which is what naming that
 * algorithm (or protocol) gives on an unrestricted topology; collectives
 * outside the restriction and NCCL's p2p path are untouched; an explicit
 * algorithm wins; nothing left is an error that names the restriction. */
START_TEST (nccl_env_narrows_the_choice)
{
  static const SpSimModel models[] = { SP_SIM_ANALYTIC, SP_SIM_DES, SP_SIM_NCCL };
  SpSimModel m = models[_i];
  SpTopoSpec free_ = spec_h100 (2);
  GError *error = NULL;

  /* 1 GiB all-reduce on 2 x 8 H100: NVLSTree unrestricted; NCCL_ALGO=Ring */
  SpCollEstimate a = estimate_on (&free_, m, SP_COLL_ALL_REDUCE, 1 << 30, SP_ALGO_AUTO, SP_PROTO_AUTO);
  ck_assert_int_eq (a.algo, SP_ALGO_NVLS_TREE);
  SpTopoSpec ring = free_;
  ck_assert (sp_topo_nccl_parse ("NCCL_ALGO", "Ring", FALSE, SP_NCCL_STRICT, ring.nccl_algo_off, &error));
  SpCollEstimate r = estimate_on (&ring, m, SP_COLL_ALL_REDUCE, 1 << 30, SP_ALGO_AUTO, SP_PROTO_AUTO);
  SpCollEstimate want = estimate_on (&free_, m, SP_COLL_ALL_REDUCE, 1 << 30, SP_ALGO_RING, SP_PROTO_AUTO);
  ck_assert_int_eq (r.algo, SP_ALGO_RING);
  ck_assert_int_eq (r.proto, want.proto);
  ck_assert_uint_eq (r.time_ns, want.time_ns);
  /* an algorithm the caller names is used whatever NCCL_ALGO says */
  SpCollEstimate t = estimate_on (&ring, m, SP_COLL_ALL_REDUCE, 1 << 30, SP_ALGO_TREE, SP_PROTO_AUTO);
  ck_assert_int_eq (t.algo, SP_ALGO_TREE);

  /* 1 KiB all-reduce: LL unrestricted; NCCL_PROTO=Simple */
  SpCollEstimate small = estimate_on (&free_, m, SP_COLL_ALL_REDUCE, 1024, SP_ALGO_AUTO, SP_PROTO_AUTO);
  ck_assert_int_eq (small.proto, SP_PROTO_LL);
  SpTopoSpec simple = free_;
  ck_assert (sp_topo_nccl_parse ("NCCL_PROTO", "Simple", TRUE, SP_NCCL_STRICT, simple.nccl_proto_off, &error));
  SpCollEstimate s1 = estimate_on (&simple, m, SP_COLL_ALL_REDUCE, 1024, SP_ALGO_AUTO, SP_PROTO_AUTO);
  SpCollEstimate w1 = estimate_on (&free_, m, SP_COLL_ALL_REDUCE, 1024, SP_ALGO_AUTO, SP_PROTO_SIMPLE);
  ck_assert_int_eq (s1.proto, SP_PROTO_SIMPLE);
  ck_assert_int_eq (s1.algo, w1.algo);
  ck_assert_uint_eq (s1.time_ns, w1.time_ns);
  ck_assert_uint_gt (s1.time_ns, small.time_ns);

  /* a per-collective entry leaves the others alone */
  SpTopoSpec ar_only = free_;
  ck_assert (sp_topo_nccl_parse ("NCCL_PROTO", "allreduce:simple", TRUE, SP_NCCL_STRICT, ar_only.nccl_proto_off,
                                 &error));
  SpCollEstimate g0 = estimate_on (&free_, m, SP_COLL_ALL_GATHER, 16384, SP_ALGO_AUTO, SP_PROTO_AUTO);
  SpCollEstimate g1 = estimate_on (&ar_only, m, SP_COLL_ALL_GATHER, 16384, SP_ALGO_AUTO, SP_PROTO_AUTO);
  ck_assert_int_eq (g1.proto, g0.proto);
  ck_assert_uint_eq (g1.time_ns, g0.time_ns);
  ck_assert_int_eq (estimate_on (&ar_only, m, SP_COLL_ALL_REDUCE, 1024, SP_ALGO_AUTO,
                                 SP_PROTO_AUTO).proto, SP_PROTO_SIMPLE);

  /* NCCL's p2p path (all-to-all) is not NCCL_PROTO's */
  SpCollEstimate p0 = estimate_on (&free_, m, SP_COLL_ALL_TO_ALL, 1 << 20, SP_ALGO_AUTO, SP_PROTO_AUTO);
  SpCollEstimate p1 = estimate_on (&simple, m, SP_COLL_ALL_TO_ALL, 1 << 20, SP_ALGO_AUTO, SP_PROTO_AUTO);
  ck_assert_uint_eq (p1.time_ns, p0.time_ns);

  /* nothing left: NCCL fails the call, so do we, naming why */
  SpTopoSpec none = free_;
  ck_assert (sp_topo_nccl_parse ("NCCL_ALGO", "allgather:^ring", FALSE, SP_NCCL_STRICT, none.nccl_algo_off, &error));
  g_autofree char *why = estimate_refused (&none, m, SP_COLL_ALL_GATHER, 1 << 20, SP_PROTO_AUTO);
  ck_assert_msg (strstr (why, "NCCL_ALGO=AllGather:^Ring NCCL_PROTO=(unset) leave "
                              "all_gather on 16 ranks over 2 nodes nothing this model "
                              "runs (NCCL fails the call unless a SHARP plugin runs "
                              "CollNet, which they leave and this model does not "
                              "implement; all_gather can run here as ring/ll, "
                              "ring/ll128, ring/simple)") != NULL,
                 "%s", why);
  /* a forced protocol narrows the list of what could run */
  g_autofree char *why_simple = estimate_refused (&none, m, SP_COLL_ALL_GATHER, 1 << 20, SP_PROTO_SIMPLE);
  ck_assert_msg (strstr (why_simple, "can run here as ring/simple)") != NULL, "%s", why_simple);
  /* a group of one rank runs nothing: its nominal algorithm and protocol
   * are ones the restriction allows */
  SpTopoSpec tree_ll = free_;
  ck_assert (sp_topo_nccl_parse ("NCCL_ALGO", "Tree", FALSE, SP_NCCL_STRICT, tree_ll.nccl_algo_off,
                                 &error));
  ck_assert (sp_topo_nccl_parse ("NCCL_PROTO", "LL", TRUE, SP_NCCL_STRICT, tree_ll.nccl_proto_off,
                                 &error));
  g_autoptr (SpTopo) tl = sp_topo_new (&tree_ll, &error);
  SP_ASSERT_NO_ERROR (error);
  guint32 one = 3;
  SpCollEstimate e;
  SpCollRequest o;
  sp_coll_request_init (&o);
  o.bytes = 1 << 20;
  o.ranks = &one;
  o.n_ranks = 1;
  ck_assert (sp_sim_estimate (tl, m, &o, &e, &error));
  ck_assert_uint_eq (e.time_ns, 0);
  ck_assert_int_eq (e.algo, SP_ALGO_TREE);
  ck_assert_int_eq (e.proto, SP_PROTO_LL);
  /* the all-reduce of the same topology still runs */
  ck_assert_int_eq (estimate_on (&none, m, SP_COLL_ALL_REDUCE, 1 << 20, SP_ALGO_AUTO,
                                 SP_PROTO_AUTO).algo == SP_ALGO_AUTO, FALSE);
}
END_TEST

/* [nccl] version: the algorithms that NCCL has.  1 GiB all-reduce on one
 * node of 8 H100: NVLS, but NCCL 2.16 had none (it came in 2.17); the
 * pick is what "^NVLS,NVLSTree" gives.  A 1 MiB all-gather over 10 nodes
 * of one GPU: PAT, which came in 2.23; NCCL 2.21.5 picks as "^PAT" does.
 * A named algorithm still wins; and when a restriction leaves nothing
 * that version has, the error says the version. */
START_TEST (nccl_version_narrows_the_choice)
{
  static const SpSimModel models[] = { SP_SIM_ANALYTIC, SP_SIM_DES, SP_SIM_NCCL };
  SpSimModel m = models[_i];
  GError *error = NULL;
  SpTopoSpec one = spec_h100 (1);
  ck_assert_int_eq (estimate_on (&one, m, SP_COLL_ALL_REDUCE, 1 << 30, SP_ALGO_AUTO, SP_PROTO_AUTO).algo,
                    SP_ALGO_NVLS);
  SpTopoSpec v216 = one, no_nvls = one;
  v216.nccl_version = 21605;
  ck_assert (sp_topo_nccl_parse ("NCCL_ALGO", "^NVLS,NVLSTree", FALSE, SP_NCCL_STRICT, no_nvls.nccl_algo_off,
                                 &error));
  ck_assert_int_ne (assert_picks_alike (&v216, &no_nvls, m, SP_COLL_ALL_REDUCE, 1 << 30).algo,
                    SP_ALGO_NVLS);
  v216.nccl_version = 21701; /* NVLS from 2.17 */
  ck_assert_int_eq (estimate_on (&v216, m, SP_COLL_ALL_REDUCE, 1 << 30, SP_ALGO_AUTO, SP_PROTO_AUTO).algo,
                    SP_ALGO_NVLS);

  SpTopoSpec gpn1 = spec_h100 (10);
  gpn1.gpus_per_node = 1;
  gpn1.nics_per_node = 1;
  ck_assert_int_eq (estimate_on (&gpn1, m, SP_COLL_ALL_GATHER, 1 << 20, SP_ALGO_AUTO, SP_PROTO_AUTO).algo,
                    SP_ALGO_PAT);
  SpTopoSpec v221 = gpn1, no_pat = gpn1;
  v221.nccl_version = 22105;
  ck_assert (sp_topo_nccl_parse ("NCCL_ALGO", "^PAT", FALSE, SP_NCCL_STRICT, no_pat.nccl_algo_off, &error));
  ck_assert_int_eq (assert_picks_alike (&v221, &no_pat, m, SP_COLL_ALL_GATHER, 1 << 20).algo,
                    SP_ALGO_RING);
  /* named: used whatever the version */
  ck_assert_int_eq (estimate_on (&v221, m, SP_COLL_ALL_GATHER, 1 << 20, SP_ALGO_PAT, SP_PROTO_AUTO).algo,
                    SP_ALGO_PAT);

  /* NCCL_ALGO=PAT on NCCL 2.21.5: nothing left */
  ck_assert (sp_topo_nccl_parse ("NCCL_ALGO", "PAT", FALSE, SP_NCCL_STRICT, v221.nccl_algo_off, &error));
  g_autofree char *why = estimate_refused (&v221, m, SP_COLL_ALL_GATHER, 1 << 20, SP_PROTO_AUTO);
  ck_assert_msg (g_str_has_prefix (why, "NCCL 2.21.5 (without PAT) with NCCL_ALGO=PAT "
                                        "NCCL_PROTO=(unset) leave all_gather on 10 ranks "
                                        "over 10 nodes nothing this model runs"),
                 "%s", why);
}
END_TEST

/* NCCL_PROTO naming LL128 (or leaving it on in a list) turns it on
 * outright, past NCCL's platform rule: 8 A100 over PCIe run LL128 only so;
 * 2 Polaris nodes (NICs on the host, phb) likewise across nodes. */
START_TEST (nccl_proto_forces_ll128)
{
  SpSimModel m = (SpSimModel[]){ SP_SIM_ANALYTIC, SP_SIM_DES, SP_SIM_NCCL }[_i];
  GError *error = NULL;
  SpTopoSpec pcie = spec_h100 (1);
  g_strlcpy (pcie.gpu_model, "A100-PCIE-40GB", sizeof pcie.gpu_model);
  pcie.intra_kind = SP_INTRA_PCIE;
  pcie.intra_bandwidth_gbs = 32;
  SpTopoSpec forced = pcie;
  ck_assert (sp_topo_nccl_parse ("NCCL_PROTO", "LL128", TRUE, SP_NCCL_STRICT, forced.nccl_proto_off,
                                 &error));
  g_autoptr (SpTopo) t = sp_topo_new (&pcie, &error);
  SP_ASSERT_NO_ERROR (error);
  SpCollRequest r;
  sp_coll_request_init (&r);
  r.bytes = 1 << 20;
  r.proto = SP_PROTO_LL128;
  SpCollEstimate e;
  ck_assert (!sp_sim_estimate (t, m, &r, &e, &error)); /* the platform rule */
  g_clear_error (&error);
  SpCollEstimate f = estimate_on (&forced, m, SP_COLL_ALL_REDUCE, 1 << 20, SP_ALGO_AUTO, SP_PROTO_AUTO);
  ck_assert_int_eq (f.proto, SP_PROTO_LL128);
  ck_assert_uint_gt (f.time_ns, 0);
  /* ^LL leaves LL128 on outright too; across Polaris' phb NICs */
  SpTopoSpec pol = spec_polaris (2);
  for (guint64 b = 1024; b <= ((guint64) 1 << 30); b *= 4)
    ck_assert_int_ne (estimate_on (&pol, m, SP_COLL_ALL_GATHER, b, SP_ALGO_AUTO, SP_PROTO_AUTO).proto,
                      SP_PROTO_LL128);
  ck_assert (sp_topo_nccl_parse ("NCCL_PROTO", "^LL", TRUE, SP_NCCL_STRICT, pol.nccl_proto_off,
                                 &error));
  SpCollEstimate g = estimate_on (&pol, m, SP_COLL_ALL_GATHER, 1 << 20, SP_ALGO_AUTO, SP_PROTO_LL128);
  ck_assert_int_eq (g.proto, SP_PROTO_LL128);
}
END_TEST

/* unread (spec, version, across nodes, name, value): what it says, or
 * NULL; "" stands for NULL below. */
static void
assert_unread (const SpTopoSpec *s, int version, gboolean across, const char *name,
               const char *value, const char *want)
{
  g_autofree char *got = sp_sim_nccl_env_unread (s, version, across, name, value);
  ck_assert_msg (g_strcmp0 (got ? got : "", want) == 0, "%s=%s: '%s', expected '%s'", name, value,
                 got ? got : "(none)", want);
}

/* The NCCL variables calibrate names as not modelled: by the model's own
 * assumptions (18 channels on H100's 18 NVLinks, 12 on A100's; NCCL's
 * 4 MiB Simple buffer and 128 KiB p2p chunk, aws-ofi-nccl's 8 MiB and
 * 512 KiB on EFA), values read as NCCL reads an integer, and only where
 * they can change the run (across nodes, on the transport they belong to). */
START_TEST (unread_nccl_env)
{
  SpTopoSpec h = spec_h100 (2), efa = spec_h100 (2), pol = spec_polaris (2), tcp = spec_h100 (2);
  efa.transport = SP_TRANSPORT_EFA;
  tcp.transport = SP_TRANSPORT_TCP;
  /* read by the model (as [nccl]), or not one that changes a time */
  assert_unread (&h, 0, TRUE, "NCCL_ALGO", "Ring", "");
  assert_unread (&h, 0, TRUE, "NCCL_NVLS_ENABLE", "0", "");
  assert_unread (&h, 0, TRUE, "NCCL_DEBUG", "INFO", "");
  assert_unread (&h, 0, TRUE, "NCCL_max_nchannels", "1", ""); /* NCCL: exact case */
  /* channel caps against the model's count */
  assert_unread (&h, 0, FALSE, "NCCL_MAX_NCHANNELS", "16", "caps the channels below the model's 18");
  assert_unread (&h, 0, FALSE, "NCCL_MAX_NCHANNELS", "18", "");
  assert_unread (&h, 0, FALSE, "NCCL_MAX_NCHANNELS", "32", "");
  assert_unread (&h, 0, FALSE, "NCCL_MIN_NCHANNELS", "18", "");
  assert_unread (&h, 0, FALSE, "NCCL_MIN_NCHANNELS", "24", "raises the channels above the model's 18");
  assert_unread (&pol, 0, TRUE, "NCCL_MIN_NCHANNELS", "4", ""); /* sites' Slingshot setting */
  assert_unread (&pol, 0, TRUE, "NCCL_MAX_CTAS", "8", "caps the channels below the model's 12");
  /* buffers by transport; hex as strtoll (v, NULL, 0); -2 is NCCL's own default */
  assert_unread (&h, 0, TRUE, "NCCL_BUFFSIZE", "4194304", "");
  assert_unread (&h, 0, TRUE, "NCCL_BUFFSIZE", "0x400000", "");
  assert_unread (&h, 0, TRUE, "NCCL_BUFFSIZE", "-2", "");
  assert_unread (&h, 0, FALSE, "NCCL_BUFFSIZE", "8388608", "Simple's buffer; the model assumes 4194304");
  assert_unread (&efa, 0, TRUE, "NCCL_BUFFSIZE", "8388608", "");
  assert_unread (&efa, 0, TRUE, "NCCL_BUFFSIZE", "4194304", "Simple's buffer; the model assumes 8388608");
  assert_unread (&h, 0, TRUE, "NCCL_P2P_NET_CHUNKSIZE", "131072", "");
  assert_unread (&efa, 0, TRUE, "NCCL_P2P_NET_CHUNKSIZE", "524288", "");
  assert_unread (&h, 0, TRUE, "NCCL_P2P_NET_CHUNKSIZE", "524288",
                 "all-to-all's network chunk; the model assumes 131072");
  assert_unread (&h, 0, FALSE, "NCCL_P2P_NET_CHUNKSIZE", "524288", ""); /* one node: no network */
  assert_unread (&h, 0, TRUE, "NCCL_BUFFSIZE", "4M", "Simple's buffer; the model assumes 4194304"); /* NCCL reads 4 */
  assert_unread (&h, 0, TRUE, "NCCL_BUFFSIZE", "99999999999999999999", ""); /* NCCL: its default */
  assert_unread (&h, 0, TRUE, "NCCL_BUFFSIZE", "", "");
  /* threads: NCCL's defaults, and values NCCL ignores */
  assert_unread (&h, 0, TRUE, "NCCL_NTHREADS", "512", "");
  assert_unread (&h, 0, TRUE, "NCCL_NTHREADS", "100", "");
  assert_unread (&h, 0, TRUE, "NCCL_NTHREADS", "1024", "");
  assert_unread (&h, 0, TRUE, "NCCL_NTHREADS", "256", "threads per channel; the model assumes 512");
  assert_unread (&h, 0, TRUE, "NCCL_LL128_NTHREADS", "640", "");
  /* transport-specific ones only on their transport */
  assert_unread (&h, 0, TRUE, "NCCL_IB_DISABLE", "0", "");
  assert_unread (&h, 0, TRUE, "NCCL_IB_DISABLE", "1", "the network: sockets, not IB; the model assumes 0");
  assert_unread (&tcp, 0, TRUE, "NCCL_IB_DISABLE", "1", "");
  assert_unread (&efa, 0, TRUE, "NCCL_IB_DISABLE", "1", "");
  assert_unread (&h, 0, TRUE, "NCCL_SOCKET_NTHREADS", "4", "");
  assert_unread (&tcp, 0, TRUE, "NCCL_SOCKET_NTHREADS", "4", "sockets per connection");
  assert_unread (&h, 0, TRUE, "NCCL_NET", "Socket", "the network: sockets");
  assert_unread (&tcp, 0, TRUE, "NCCL_NET", "Socket", "");
  assert_unread (&pol, 0, TRUE, "NCCL_NET", "AWS Libfabric", "");
  assert_unread (&efa, 0, TRUE, "NCCL_NET_PLUGIN", "none", "the network: no aws-ofi-nccl plugin");
  assert_unread (&h, 0, TRUE, "NCCL_SHM_DISABLE", "1", ""); /* NVLink: P2P, not SHM */
  /* Polaris' site settings (the development set's runs; its Slingshot is
   * no rail fabric): nothing to say */
  pol.fabric = SP_FABRIC_FAT_TREE;
  assert_unread (&pol, 0, TRUE, "NCCL_NET_GDR_LEVEL", "PHB", "");
  assert_unread (&pol, 0, TRUE, "NCCL_CROSS_NIC", "1", "");
  assert_unread (&pol, 0, TRUE, "NCCL_COLLNET_ENABLE", "1", "");
  /* GDR off on the path, cross-NIC rings on rails, CollNet on IB */
  assert_unread (&pol, 0, TRUE, "NCCL_NET_GDR_LEVEL", "PXB", "GPUDirect RDMA off on the topology's phb path");
  assert_unread (&h, 0, TRUE, "NCCL_NET_GDR_LEVEL", "pxb", "");
  assert_unread (&h, 0, TRUE, "NCCL_NET_GDR_LEVEL", "LOC", "GPUDirect RDMA off on the topology's pxb path");
  assert_unread (&h, 0, TRUE, "NCCL_NET_GDR_LEVEL", "3", "GPUDirect RDMA, by a level number");
  assert_unread (&h, 0, TRUE, "NCCL_CROSS_NIC", "2", "");
  assert_unread (&h, 0, TRUE, "NCCL_CROSS_NIC", "1", "the rings' NICs; the model assumes 2");
  assert_unread (&h, 0, TRUE, "NCCL_COLLNET_ENABLE", "1", "CollNet (in-network reduction); the model assumes 0");
  assert_unread (&h, 0, TRUE, "NCCL_TUNER_PLUGIN", "libnccl-tuner.so",
                 "a tuner plugin's algorithm, protocol and channels");
  /* NCCL_IB_HCA: fewer HCAs than the topology's NICs, as NCCL's IB plugin
   * parses the list; exclusions and prefixes of several devices say
   * nothing about the count */
  assert_unread (&h, 0, TRUE, "NCCL_IB_HCA", "mlx5_0:1,mlx5_1:1", "the NICs: 2 HCAs named, the topology has 8 per node");
  assert_unread (&h, 0, TRUE, "NCCL_IB_HCA", "=mlx5_0", "the NICs: 1 HCA named, the topology has 8 per node");
  assert_unread (&h, 0, TRUE, "NCCL_IB_HCA", "mlx5_0,,mlx5_1,:1", "the NICs: 2 HCAs named, the topology has 8 per node");
  assert_unread (&h, 0, TRUE, "NCCL_IB_HCA", "mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_6,mlx5_7,mlx5_8,mlx5_9", "");
  assert_unread (&h, 0, TRUE, "NCCL_IB_HCA", "mlx5", "");
  assert_unread (&h, 0, TRUE, "NCCL_IB_HCA", "mlx5_0,mlx5:1", "");
  assert_unread (&h, 0, TRUE, "NCCL_IB_HCA", "=mlx5_bond", "the NICs: 1 HCA named, the topology has 8 per node");
  assert_unread (&h, 0, TRUE, "NCCL_IB_HCA", "^mlx5_4", "");
  assert_unread (&h, 0, TRUE, "NCCL_IB_HCA", "", "");
  assert_unread (&h, 0, FALSE, "NCCL_IB_HCA", "mlx5_0", ""); /* one node: no network */
  assert_unread (&efa, 0, TRUE, "NCCL_IB_HCA", "mlx5_0", ""); /* not NCCL's IB plugin */
  /* thresholds NCCL 2.5 dropped: only with an older NCCL */
  assert_unread (&h, 0, TRUE, "NCCL_LL_THRESHOLD", "0", "");
  assert_unread (&h, 22105, TRUE, "NCCL_LL_THRESHOLD", "0", "");
  assert_unread (&h, 2408, TRUE, "NCCL_LL_THRESHOLD", "0", "the protocol choice");
}
END_TEST

int
main (void)
{
  Suite *s = suite_create ("sim_model");
  TCase *tc = tcase_create ("analytic");
  tcase_add_test (tc, worked_example_single_node_latency);
  tcase_add_test (tc, worked_example_nvls_tree);
  tcase_add_test (tc, efa_chooses_by_the_network);
  tcase_add_test (tc, calibrated_nic_sets_p2p);
  tcase_add_test (tc, worked_example_16gib_gather);
  tcase_add_test (tc, worked_example_two_nodes_allreduce);
  tcase_add_test (tc, ring_bandwidth_from_topology);
  tcase_add_test (tc, protocols_and_caps);
  tcase_add_test (tc, ll128_needs_nics_under_the_gpus_switches);
  tcase_add_test (tc, ll128_and_nvlink_by_compute_capability);
  tcase_add_test (tc, ll_pays_the_message_cost_per_step);
  tcase_add_test (tc, slingshot_simple_steps_have_a_floor);
  tcase_add_test (tc, broadcast_is_a_chain);
  tcase_add_test (tc, automatic_choice_is_the_minimum);
  tcase_add_test (tc, refusals);
  tcase_add_test (tc, arch_detection);
  tcase_add_test (tc, calibrated_overhead_adds_exactly);
  tcase_add_test (tc, calibrated_efficiency_scales_bandwidth);
  tcase_add_test (tc, datasheet_only_transports);
  tcase_add_test (tc, transport_costs_by_hand);
  tcase_add_test (tc, small_sends_copy_on_slingshot);
  tcase_add_test (tc, efa_protocols_by_hand);
  tcase_add_loop_test (tc, nccl_env_narrows_the_choice, 0, 3);
  tcase_add_loop_test (tc, nccl_proto_forces_ll128, 0, 3);
  tcase_add_loop_test (tc, nccl_version_narrows_the_choice, 0, 3);
  tcase_add_test (tc, unread_nccl_env);
  suite_add_tcase (s, tc);
  return sp_test_run (s);
}
