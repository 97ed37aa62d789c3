/* Properties the simulator must keep on clusters the development set does
 * not cover — the issue-10 scoring runs unseen on other GPU generations,
 * transports and scales: datasheet-only topologies of V100, A100, H100,
 * H200 and B200 nodes over InfiniBand, RoCE, EFA, Slingshot and TCP, on 1
 * to 256 nodes.
 *   1. With the algorithm and protocol held, a collective never takes less
 *      time for more bytes (every cost in the model is non-decreasing in
 *      the size; a step, a floor or a cap that broke this would be a bug).
 *   2. Chosen like NCCL, the time may fall where the choice changes —
 *      NCCL picks by its own model and ours says what that costs
 *      (sim/README-model.md: LL where NCCL's formula prefers it, on
 *      Slingshot and TCP, is slower than the LL128 it takes at twice the
 *      size) — but only there.
 *   Both allow one more fall, where an all-to-all's message to each peer
 *   grows past 192 B: smaller ones take another send path on Slingshot
 *   (the host copy of an inject, sim/README-model.md §2.1b), which the
 *   published runs show costing more than the next size up.
 *   3. des and analytic agree on one collective alone (the flow model of a
 *      single collective has nothing to contend with but itself), to 0.5 %.
 * Each time is finite and positive. */
#include "config.h"
#include "testutil.h"
#include "shardplan/shardplan.h"
#include "shardplan/sim.h"

#include <math.h>

static const struct {
  const char *model;
  double nvlink_gbs; /* per GPU, one direction: the datasheet's half of the bidirectional figure */
  guint32 nics;
  double nic_gbps;
} gpus[] = {
  { "V100", 150, 4, 100 }, { "A100", 300, 8, 200 }, { "H100", 450, 8, 400 },
  { "H200", 450, 8, 400 }, { "B200", 900, 8, 400 },
};
static const char *const transports[] = { "ib", "roce", "efa", "slingshot", "tcp" };
static const SpColl colls[] = { SP_COLL_ALL_REDUCE, SP_COLL_ALL_GATHER, SP_COLL_REDUCE_SCATTER,
                                SP_COLL_ALL_TO_ALL };

/* A datasheet-only INI, as a user writes one. */
static SpTopo *
topo_of (guint g, guint t, guint32 nodes)
{
  g_autofree char *ini = g_strdup_printf (
    "[cluster]\nnodes = %u\ngpus_per_node = 8\n[gpu]\nmodel = %s\nmemory_gib = 80\ntflops = 300\n"
    "[intra]\nkind = nvswitch\nbandwidth_gbs = %g\n[inter]\nnics_per_node = %u\nnic_gbps = %g\n"
    "fabric = fat-tree\ntransport = %s\n",
    nodes, gpus[g].model, gpus[g].nvlink_gbs, gpus[g].nics, gpus[g].nic_gbps, transports[t]);
  GError *e = NULL;
  SpTopo *topo = sp_topo_load_data (ini, -1, "props.ini", &e);
  SP_ASSERT_NO_ERROR (e);
  return topo;
}

/* The time of `coll` over every rank, `bytes` in nccl-tests' size column
 * convention (whole buffer for AG / RS); FALSE when the simulator refuses
 * the algorithm / protocol for this group. */
static gboolean
time_of (const SpTopo *topo, SpSimModel model, SpColl coll, guint64 bytes, SpAlgo algo,
         SpProto proto, SpCollEstimate *out)
{
  SpCollRequest r;
  sp_coll_request_init (&r);
  r.coll = coll;
  r.bytes = bytes;
  r.algo = algo;
  r.proto = proto;
  GError *e = NULL;
  if (!sp_sim_estimate (topo, model, &r, out, &e))
    {
      ck_assert_msg (e->code == SP_ERROR_UNSUPPORTED || e->code == SP_ERROR_INVALID_ARGUMENT,
                     "%s", e->message);
      g_error_free (e);
      return FALSE;
    }
  ck_assert_msg (out->time_ns > 0 && isfinite (out->busbw_gbs), "%s %" G_GUINT64_FORMAT " B: %"
                 G_GUINT64_FORMAT " ns", sp_coll_name (coll), bytes, out->time_ns);
  return TRUE;
}

/* Whether an all-to-all's message to each peer grows past the inject size
 * (192 B) between `from` and `to` bytes over Slingshot. */
static gboolean
leaves_inject (const SpTopo *topo, SpColl coll, guint64 from, guint64 to)
{
  const SpTopoSpec *s = sp_topo_spec (topo);
  guint64 ranks = (guint64) s->nodes * s->gpus_per_node;
  return s->transport == SP_TRANSPORT_SLINGSHOT && coll == SP_COLL_ALL_TO_ALL
         && from / ranks <= 192 && to / ranks > 192;
}

#define SIZES_LOW ((guint64) 1 << 10)
#define SIZES_TOP ((guint64) 1 << 32)

/* 1: every (algorithm, protocol) the group can run, held over the sizes
 * (analytic: the closed form des follows for one collective, property 3) */
START_TEST (held_choice_is_monotone)
{
  static const guint32 node_counts[] = { 1, 2, 16, 256 };
  static const SpAlgo algos[] = { SP_ALGO_RING, SP_ALGO_TREE, SP_ALGO_NVLS, SP_ALGO_NVLS_TREE,
                                  SP_ALGO_PAT, SP_ALGO_DIRECT };
  static const SpProto protos[] = { SP_PROTO_LL, SP_PROTO_LL128, SP_PROTO_SIMPLE };
  guint g = (guint) _i / G_N_ELEMENTS (transports), t = (guint) _i % G_N_ELEMENTS (transports);
  guint checked = 0;
  for (guint n = 0; n < G_N_ELEMENTS (node_counts); n++)
    {
      g_autoptr (SpTopo) topo = topo_of (g, t, node_counts[n]);
      for (guint c = 0; c < G_N_ELEMENTS (colls); c++)
        for (guint a = 0; a < G_N_ELEMENTS (algos); a++)
          for (guint p = 0; p < G_N_ELEMENTS (protos); p++)
            {
              guint64 prev = 0, prev_bytes = 0;
              for (guint64 b = SIZES_LOW; b <= SIZES_TOP; b *= 4)
                {
                  SpCollEstimate est;
                  if (!time_of (topo, SP_SIM_ANALYTIC, colls[c], b, algos[a], protos[p], &est))
                    continue;
                  ck_assert_msg (est.time_ns >= prev
                                     || leaves_inject (topo, colls[c], prev_bytes, b),
                                 "%s over %s, %u nodes: %s %s/%s takes %" G_GUINT64_FORMAT
                                 " ns for %" G_GUINT64_FORMAT " B, %" G_GUINT64_FORMAT
                                 " ns for %" G_GUINT64_FORMAT " B",
                                 gpus[g].model, transports[t], node_counts[n],
                                 sp_coll_name (colls[c]), sp_algo_name (algos[a]),
                                 sp_proto_name (protos[p]), est.time_ns, b, prev, prev_bytes);
                  prev = est.time_ns;
                  prev_bytes = b;
                  checked++;
                }
            }
    }
  ck_assert_uint_gt (checked, 500);
}
END_TEST

/* 2 and 3: chosen like NCCL, des against analytic (nodes kept to what the
 * flow model of an all-to-all runs in well under a second) */
START_TEST (auto_choice_falls_only_where_it_changes)
{
  static const guint32 node_counts[] = { 1, 2, 16 };
  guint g = (guint) _i / G_N_ELEMENTS (transports), t = (guint) _i % G_N_ELEMENTS (transports);
  for (guint n = 0; n < G_N_ELEMENTS (node_counts); n++)
    {
      g_autoptr (SpTopo) topo = topo_of (g, t, node_counts[n]);
      for (guint c = 0; c < G_N_ELEMENTS (colls); c++)
        {
          SpCollEstimate prev = { 0 };
          for (guint64 b = SIZES_LOW; b <= SIZES_TOP; b *= 4)
            {
              SpCollEstimate an, des;
              ck_assert (time_of (topo, SP_SIM_ANALYTIC, colls[c], b, SP_ALGO_AUTO,
                                  SP_PROTO_AUTO, &an));
              ck_assert (time_of (topo, SP_SIM_DES, colls[c], b, SP_ALGO_AUTO, SP_PROTO_AUTO,
                                  &des));
              ck_assert_msg (des.algo == an.algo && des.proto == an.proto
                             && fabs ((double) des.time_ns / (double) an.time_ns - 1) <= 0.005,
                             "%s over %s, %u nodes, %s %" G_GUINT64_FORMAT " B: des %"
                             G_GUINT64_FORMAT " ns %s/%s, analytic %" G_GUINT64_FORMAT " ns",
                             gpus[g].model, transports[t], node_counts[n],
                             sp_coll_name (colls[c]), b, des.time_ns, sp_algo_name (des.algo),
                             sp_proto_name (des.proto), an.time_ns);
              if (prev.time_ns > an.time_ns)
                ck_assert_msg (prev.algo != an.algo || prev.proto != an.proto
                                   || leaves_inject (topo, colls[c], b / 4, b),
                               "%s over %s, %u nodes: %s falls from %" G_GUINT64_FORMAT
                               " to %" G_GUINT64_FORMAT " ns at %" G_GUINT64_FORMAT
                               " B on the same %s/%s",
                               gpus[g].model, transports[t], node_counts[n],
                               sp_coll_name (colls[c]), prev.time_ns, an.time_ns, b,
                               sp_algo_name (an.algo), sp_proto_name (an.proto));
              prev = an;
            }
        }
    }
}
END_TEST

static Suite *
suite (void)
{
  Suite *s = suite_create ("sim-props");
  TCase *tc = tcase_create ("props");
  tcase_set_timeout (tc, 300);
  guint n = G_N_ELEMENTS (gpus) * G_N_ELEMENTS (transports);
  tcase_add_loop_test (tc, held_choice_is_monotone, 0, (int) n);
  tcase_add_loop_test (tc, auto_choice_falls_only_where_it_changes, 0, (int) n);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  return sp_test_run (suite ());
}
