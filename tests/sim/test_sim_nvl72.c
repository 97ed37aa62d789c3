/* NVLink domains that span hosts (GB200 / GB300 NVL72): the simulator sees
 * what NCCL sees with multi-node NVLink on — one node per domain — while
 * ranks, hosts and groups stay the hosts' (issue 17). */
#include "config.h"
#include "shardplan/shardplan.h"
#include "shardplan/sim.h"
#include "sim-internal.h"
#include "testutil.h"

#include <check.h>
#include <math.h>
#include <time.h>

static SpTopo *
nvl72 (guint32 hosts, SpMnnvl mnnvl)
{
  GError *error = NULL;
  g_autoptr (SpTopo) p = sp_topo_new_preset ("gb200-nvl72", hosts, &error);
  SP_ASSERT_NO_ERROR (error);
  SpTopoSpec s = *sp_topo_spec (p);
  s.mnnvl = mnnvl;
  SpTopo *t = sp_topo_new (&s, &error);
  SP_ASSERT_NO_ERROR (error);
  return t;
}

/* ranks first .. first + n - 1, with `algo` (SP_ALGO_AUTO: NCCL's choice) */
static SpCollEstimate
estimate_group_algo (const SpTopo *t, SpSimModel model, SpColl coll, guint64 bytes, guint32 first,
                     guint32 n, SpAlgo algo)
{
  g_autofree guint32 *r = g_new (guint32, n);
  for (guint32 i = 0; i < n; i++)
    r[i] = first + i;
  SpCollRequest req;
  sp_coll_request_init (&req);
  req.coll = coll;
  req.bytes = bytes;
  req.ranks = r;
  req.n_ranks = n;
  req.algo = algo;
  SpCollEstimate e;
  GError *error = NULL;
  ck_assert_msg (sp_sim_estimate (t, model, &req, &e, &error), "%s", error ? error->message : "");
  return e;
}

static SpCollEstimate
estimate_group (const SpTopo *t, SpSimModel model, SpColl coll, guint64 bytes, guint32 first,
                guint32 n)
{
  return estimate_group_algo (t, model, coll, bytes, first, n, SP_ALGO_AUTO);
}

/* The view: 36 hosts of 4 in domains of 72 are 2 NCCL nodes of 72 GPUs and
 * 72 NICs; ranks keep their numbers; a partial domain is one node. */
START_TEST (nccl_view)
{
  g_autoptr (SpTopo) t = nvl72 (36, SP_MNNVL_ON);
  SpTopoSpec v;
  GError *error = NULL;
  ck_assert (sp_sim_nccl_spec (sp_topo_spec (t), &v, &error));
  ck_assert_uint_eq (v.nodes, 2);
  ck_assert_uint_eq (v.gpus_per_node, 72);
  ck_assert_uint_eq (v.nics_per_node, 72);
  g_autoptr (SpTopo) two = nvl72 (2, SP_MNNVL_ON);
  ck_assert (sp_sim_nccl_spec (sp_topo_spec (two), &v, &error));
  ck_assert_uint_eq (v.nodes, 1);
  ck_assert_uint_eq (v.gpus_per_node, 8);
  g_autoptr (SpTopo) off = nvl72 (36, SP_MNNVL_OFF);
  ck_assert (sp_sim_nccl_spec (sp_topo_spec (off), &v, &error));
  ck_assert_uint_eq (v.nodes, 36);
  ck_assert_uint_eq (v.gpus_per_node, 4);
  /* 20 hosts are one domain and 2 hosts of another: refused, saying why */
  g_autoptr (SpTopo) odd = nvl72 (20, SP_MNNVL_ON);
  ck_assert (!sp_sim_nccl_spec (sp_topo_spec (odd), &v, &error));
  ck_assert_ptr_nonnull (strstr (error->message, "20 hosts are not whole NVLink domains of 18"));
  g_clear_error (&error);
}
END_TEST

/* Two racks: a MiCS shard group of 72 (one rack) all-gathers on NVLink
 * only; one of 144 crosses the racks' NICs (NCCL joins the two domains over
 * all 72 NICs of each, so its rings stay near NVLink rate) and costs more. */
START_TEST (shard_72_stays_on_nvlink)
{
  g_autoptr (SpTopo) t = nvl72 (36, SP_MNNVL_ON);
  const guint64 S = (guint64) 1 << 30;
  SpCollEstimate a = estimate_group (t, SP_SIM_DES, SP_COLL_ALL_GATHER, S, 0, 72);
  SpCollEstimate b = estimate_group (t, SP_SIM_DES, SP_COLL_ALL_GATHER, S, 72, 72);
  SpCollEstimate c = estimate_group (t, SP_SIM_DES, SP_COLL_ALL_GATHER, S, 0, 144);
  ck_assert_uint_eq (a.n_nodes, 1);
  ck_assert_uint_eq (b.n_nodes, 1);
  ck_assert_uint_eq (c.n_nodes, 2);
  ck_assert_uint_eq (a.time_ns, b.time_ns);
  /* on NVLink (721.8 GB/s per GPU after NCCL's 40.1/50), far above what a
   * GPU's one 400 Gb/s NIC could carry */
  ck_assert_msg (a.busbw_gbs > 400, "busbw %g", a.busbw_gbs);
  ck_assert (c.time_ns > a.time_ns);
  /* a group of 72 straddling the racks (hosts 9..26) crosses them too */
  SpCollEstimate d = estimate_group (t, SP_SIM_DES, SP_COLL_ALL_GATHER, S, 36, 72);
  ck_assert_uint_eq (d.n_nodes, 2);
  ck_assert (d.time_ns > a.time_ns);
}
END_TEST

/* Two racks, MNNVL on: NCCL's formula takes NVLSTree for a 1 GiB
 * all-reduce (NVLS inside each 72-GPU domain, each GPU the head of its
 * 1/72 over its own NIC; the tree's two nodes exchange 1 GiB once over 72
 * NICs, 3.5 TB/s), so it costs about what one rack's NVLS does, far less
 * than a ring through 144 GPUs; small sizes pay its latency (NVLink
 * NVLSTree 25 µs + 2 × NET 20.9 µs) plus a Grace host's launch. */
START_TEST (two_racks_run_nvls_tree)
{
  g_autoptr (SpTopo) t = nvl72 (36, SP_MNNVL_ON);
  const guint64 S = (guint64) 1 << 30;
  SpCollEstimate one = estimate_group (t, SP_SIM_DES, SP_COLL_ALL_REDUCE, S, 0, 72);
  SpCollEstimate two = estimate_group (t, SP_SIM_DES, SP_COLL_ALL_REDUCE, S, 0, 144);
  ck_assert_int_eq (one.algo, SP_ALGO_NVLS);
  ck_assert_int_eq (two.algo, SP_ALGO_NVLS_TREE);
  ck_assert_msg (two.time_ns < 1.1 * one.time_ns, "one %" G_GUINT64_FORMAT " two %" G_GUINT64_FORMAT,
                 one.time_ns, two.time_ns);
  SpCollEstimate ring = estimate_group_algo (t, SP_SIM_DES, SP_COLL_ALL_REDUCE, S, 0, 144, SP_ALGO_RING);
  ck_assert_msg (two.time_ns < ring.time_ns, "nvls_tree %" G_GUINT64_FORMAT " ring %" G_GUINT64_FORMAT,
                 two.time_ns, ring.time_ns);
  SpCollEstimate small = estimate_group (t, SP_SIM_ANALYTIC, SP_COLL_ALL_REDUCE, 1024, 0, 144);
  ck_assert_int_eq (small.algo, SP_ALGO_NVLS_TREE);
  ck_assert_msg (fabs (small.time_ns / 1000.0 - (25 + 2 * 20.9 + 6.6)) < 0.5, "%" G_GUINT64_FORMAT,
                 small.time_ns);
}
END_TEST

/* MNNVL off: the hosts are NCCL's nodes and everything between two hosts
 * goes over their NICs (4 x 400 Gb/s), so two hosts' 1 GiB all-reduce is
 * more than twice slower than on the 900 GB/s NVLink domain (on: NVLS,
 * 2.5 ms as the published run measured it; off: NVLSTree, NVLS inside each
 * host and its 1 GiB exchanged once over the 4 NICs, 1 GiB / ~194 GB/s
 * = 5.5 ms, which NCCL's formula prefers to a ring, whose inter-host
 * edges carry 2 (n-1)/n x 1 GiB = 1.75 GiB). */
START_TEST (mnnvl_off_uses_the_nics)
{
  g_autoptr (SpTopo) on = nvl72 (2, SP_MNNVL_ON);
  g_autoptr (SpTopo) off = nvl72 (2, SP_MNNVL_OFF);
  const guint64 S = (guint64) 1 << 30;
  SpCollEstimate a = estimate_group (on, SP_SIM_DES, SP_COLL_ALL_REDUCE, S, 0, 8);
  SpCollEstimate b = estimate_group (off, SP_SIM_DES, SP_COLL_ALL_REDUCE, S, 0, 8);
  ck_assert_uint_eq (a.n_nodes, 1);
  ck_assert_uint_eq (b.n_nodes, 2);
  ck_assert_msg (b.time_ns > 2 * a.time_ns, "on %" G_GUINT64_FORMAT " off %" G_GUINT64_FORMAT,
                 a.time_ns, b.time_ns);
  ck_assert_int_eq (a.algo, SP_ALGO_NVLS);
  ck_assert_int_eq (b.algo, SP_ALGO_NVLS_TREE);
  /* the NICs' bound: 1 GiB once each way at 4 x 50 GB/s less NCCL's
   * per-message cost, never faster than the line */
  ck_assert_msg (b.time_ns > (guint64) ((1 << 30) / 200.0) && b.time_ns < 6500000,
                 "off %" G_GUINT64_FORMAT, b.time_ns);
  /* within one host both agree: its 4 GPUs are an NVLink node either way */
  SpCollEstimate c = estimate_group (on, SP_SIM_ANALYTIC, SP_COLL_ALL_REDUCE, S, 0, 4);
  SpCollEstimate d = estimate_group (off, SP_SIM_ANALYTIC, SP_COLL_ALL_REDUCE, S, 0, 4);
  ck_assert_uint_eq (c.time_ns, d.time_ns);
}
END_TEST

/* A 1 GiB all-reduce over 16 racks (1,152 GPUs, 288 hosts) with the des
 * model: simulates, crosses 16 NCCL nodes, well under a second (issue 17;
 * bench numbers in bench/RESULTS.md). */
/* A group straddling two domains (MiCS S=16 on 2 racks: ranks 64..79, 8 on
 * each side) crosses over the NICs of its 8 GPUs on each side, as the
 * closed form says: the flow model once kept only a domain's first 64 NICs
 * and sent the whole ring through one (8 x slower). */
START_TEST (straddling_group_uses_its_nics)
{
  g_autoptr (SpTopo) t = nvl72 (36, SP_MNNVL_ON);
  const guint64 S = 996352000; /* gpt-13b's reduce-scatter bucket, bf16 */
  SpCollEstimate d = estimate_group (t, SP_SIM_DES, SP_COLL_REDUCE_SCATTER, S, 64, 16);
  SpCollEstimate a = estimate_group (t, SP_SIM_ANALYTIC, SP_COLL_REDUCE_SCATTER, S, 64, 16);
  ck_assert_uint_eq (d.n_nodes, 2);
  ck_assert_msg (fabs ((double) d.time_ns / a.time_ns - 1) < 0.01, "des %" G_GUINT64_FORMAT
                 " analytic %" G_GUINT64_FORMAT, d.time_ns, a.time_ns);
  /* 8 NICs of 400 Gb/s per side: far above one NIC's 50 GB/s */
  ck_assert_msg (d.busbw_gbs > 300, "busbw %g", d.busbw_gbs);
}
END_TEST

START_TEST (sixteen_racks)
{
  g_autoptr (SpTopo) t = nvl72 (288, SP_MNNVL_ON);
  SpCollRequest req;
  sp_coll_request_init (&req);
  req.coll = SP_COLL_ALL_REDUCE;
  req.bytes = (guint64) 1 << 30;
  SpCollEstimate e;
  GError *error = NULL;
  ck_assert (sp_sim_estimate (t, SP_SIM_DES, &req, &e, &error));
  SP_ASSERT_NO_ERROR (error);
  ck_assert_uint_eq (e.n_ranks, 1152);
  ck_assert_uint_eq (e.n_nodes, 16);
  ck_assert (e.time_ns > 0);
}
END_TEST

int
main (void)
{
  Suite *s = suite_create ("sim_nvl72");
  TCase *tc = tcase_create ("nvl72");
  tcase_add_test (tc, nccl_view);
  tcase_add_test (tc, shard_72_stays_on_nvlink);
  tcase_add_test (tc, mnnvl_off_uses_the_nics);
  tcase_add_test (tc, two_racks_run_nvls_tree);
  tcase_add_test (tc, straddling_group_uses_its_nics);
  tcase_add_test (tc, sixteen_racks);
  suite_add_tcase (s, tc);
  SRunner *sr = srunner_create (s);
  srunner_run_all (sr, CK_NORMAL);
  int failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed ? 1 : 0;
}
