/* The sweep's throughput and traffic arithmetic (tools/sweep-metrics.c),
 * checked against numbers worked out by hand in the comments. */
#include "config.h"
#include "testutil.h"
#include "sweep.h"

#include <math.h>

#define CLOSE(a, b) ck_assert_msg (fabs ((a) - (b)) <= 1e-9 * fabs (b), "%.12g != %.12g", (a), (b))

START_TEST (test_throughput_by_hand)
{
  SpModel m;
  GError *error = NULL;
  ck_assert (sp_model_load_data ("{\"name\": \"hand\", \"layers\": 2, \"hidden\": 64, \"heads\": 4,"
                                 " \"ffn_hidden\": 256, \"vocab\": 1000, \"seq_len\": 128}",
                                 -1, "hand", &m, &error));
  /* N = L·(4h² + 2hf + 9h + f) + V·h + s·h + 2h
   *   = 2·(16384 + 32768 + 576 + 256) + 64000 + 8192 + 128 = 172288 */
  ck_assert_uint_eq (sp_model_n_params (&m), 172288u);
  /* per token: 6·172288 + 12·2·64·128 = 1033728 + 196608 = 1230336 */
  CLOSE (sp_sweep_model_flops_per_token (&m), 1230336.0);
  /* 32 sequences · 128 = 4096 tokens per step of 10 ms on 8 GPUs of 1 TFLOP/s:
   * tokens/s = 4096 / 0.01 = 409600;
   * FLOP/s = 1230336 · 409600 = 503945625600 → / 8 GPUs = 62993203200
   * = 0.0629932032 TFLOP/s per GPU = MFU 0.0629932032 of 1 TFLOP/s, 0.0314966016 of 2 */
  SpSweepThroughput t;
  sp_sweep_throughput (&m, 32, 8, 10000.0, 1.0, &t);
  CLOSE (t.tokens_per_s, 409600.0);
  CLOSE (t.tflops_per_gpu, 0.0629932032);
  CLOSE (t.mfu, 0.0629932032);
  sp_sweep_throughput (&m, 32, 8, 10000.0, 2.0, &t);
  CLOSE (t.mfu, 0.0314966016);
  /* twice the batch in twice the time: the same rates */
  SpSweepThroughput t2;
  sp_sweep_throughput (&m, 64, 8, 20000.0, 2.0, &t2);
  CLOSE (t2.tokens_per_s, t.tokens_per_s);
  CLOSE (t2.mfu, t.mfu);
}
END_TEST

START_TEST (test_moe_active_params)
{
  SpModel m;
  GError *error = NULL;
  ck_assert (sp_model_load_data ("{\"name\": \"moe\", \"layers\": 2, \"hidden\": 64, \"heads\": 4,"
                                 " \"ffn_hidden\": 256, \"vocab\": 1000, \"seq_len\": 128,"
                                 " \"moe\": {\"experts\": 4, \"every\": 2, \"top_k\": 1}}",
                                 -1, "moe", &m, &error));
  /* layer 0 is MoE: 3 of 4 experts unused per token, each 2hf + f + h =
   * 32768 + 256 + 64 = 33088 → N_active = N − 3·33088 */
  double n_active = (double) sp_model_n_params (&m) - 3 * 33088.0;
  CLOSE (sp_sweep_model_flops_per_token (&m), 6 * n_active + 12.0 * 2 * 64 * 128);
}
END_TEST

static void
add (SpPlan *p, SpColl kind, SpFamily fam, guint64 bytes, SpRedop redop)
{
  SpOp op = { 0 };
  op.parent = -1;
  op.name = "op";
  op.layer = -1;
  op.kind = kind;
  op.family = fam;
  op.bytes = bytes;
  op.count = bytes;
  op.dtype = SP_DTYPE_INT8;
  op.redop = redop;
  op.algorithm = SP_ALGO_AUTO;
  GError *error = NULL;
  ck_assert_msg (sp_plan_add_op (p, &op, NULL, &error), "%s", error ? error->message : "");
}

START_TEST (test_inter_node_bytes_by_hand)
{
  /* W = 4 on 2 nodes of D = 2 (node 0: ranks 0, 1; node 1: 2, 3), MiCS S = 2:
   * shard groups [0,1] [2,3] (inside a node), replicate [0,2] [1,3]. */
  SpGroupsOptions go;
  sp_groups_options_init (&go);
  go.world_size = 4;
  go.devices_per_node = 2;
  go.shard_size = 2;
  GError *error = NULL;
  g_autoptr (SpPlan) p = sp_plan_new (&go);
  SpGroups *g = sp_groups_build (&go, &error);
  SP_ASSERT_NO_ERROR (error);
  add (p, SP_COLL_ALL_GATHER, SP_FAMILY_SHARD, 1000, SP_REDOP_NONE);
  CLOSE (sp_sweep_inter_node_bytes (p, g, 2) + 1.0, 1.0); /* inside the nodes: 0 */
  /* all_reduce of 100 B per rank over [0,2] and [1,3]: 2·(2 − 1)·100 each → 400 */
  add (p, SP_COLL_ALL_REDUCE, SP_FAMILY_REPLICATE, 100, SP_REDOP_SUM);
  CLOSE (sp_sweep_inter_node_bytes (p, g, 2), 400.0);
  /* all_gather of a 1000-B buffer over the world: each node gets the 500 B
   * it lacks → 1000 */
  add (p, SP_COLL_ALL_GATHER, SP_FAMILY_WORLD, 1000, SP_REDOP_NONE);
  CLOSE (sp_sweep_inter_node_bytes (p, g, 2), 1400.0);
  /* all_to_all, 1000 B per rank, 250 B to each of 4 peers, 2 of them on the
   * other node: 4 ranks · 500 = 2000 */
  add (p, SP_COLL_ALL_TO_ALL, SP_FAMILY_WORLD, 1000, SP_REDOP_NONE);
  CLOSE (sp_sweep_inter_node_bytes (p, g, 2), 3400.0);
  /* the same plan on one node of 4: nothing crosses */
  CLOSE (sp_sweep_inter_node_bytes (p, g, 4) + 1.0, 1.0);
  /* one rank per node: the world all_gather is (4 − 1)·1000 */
  sp_groups_free (g);
}
END_TEST

static Suite *
metrics_suite (void)
{
  Suite *s = suite_create ("sweep_metrics");
  TCase *tc = tcase_create ("core");
  tcase_add_test (tc, test_throughput_by_hand);
  tcase_add_test (tc, test_moe_active_params);
  tcase_add_test (tc, test_inter_node_bytes_by_hand);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  return sp_test_run (metrics_suite ());
}
