/* The memory model against hand-computed values and the ZeRO paper's
 * model-state formula. */
#include "config.h"
#include "testutil.h"
#include "shardplan/error.h"
#include "shardplan/memory.h"
#include "shardplan/workload.h"

#include <math.h>

static void
small_model (SpModel *m)
{
  g_autofree char *path = sp_test_fixture ("workload/small.json");
  GError *error = NULL;
  ck_assert (sp_model_load_file (path, m, &error));
}

START_TEST (test_zero_paper)
{
  /* Rajbhandari et al. 2020, Figure 1: mixed-precision Adam model states are
   * (2 + 2 + 12)·Ψ/N_d with ZeRO-3; Ψ = 7.5B on N_d = 64 → 1.875 GB.
   * Our model: L 36, h 4096, f 16384, V 50304, s 2048 — every tensor's
   * numel divides 64, so there is no padding:
   * Ψ = 12·36·4096² + 13·36·4096 + (50304 + 2048)·4096 + 2·4096
   *   = 7247757312 + 1916928 + 214433792 + 8192 = 7464116224,
   * 16Ψ/64 = 1866029056 bytes (0.5 % under the paper's rounded 7.5B). */
  SpModel m;
  GError *error = NULL;
  ck_assert (sp_model_load_data ("{\"name\": \"zero-7.5b\", \"layers\": 36, \"hidden\": 4096, "
                                 "\"heads\": 32, \"vocab\": 50304}", -1, "m", &m, &error));
  ck_assert_uint_eq (sp_model_n_params (&m), G_GUINT64_CONSTANT (7464116224));
  SpShardingOptions o;
  sp_sharding_options_init (&o);
  o.param_persistence_threshold = 0; /* the paper shards every tensor */
  SpMemoryEstimate e;
  ck_assert (sp_memory_estimate (&m, &o, 64, NULL, &e, &error));
  SP_ASSERT_NO_ERROR (error);
  ck_assert_uint_eq (e.model_states_bytes, G_GUINT64_CONSTANT (1866029056));
  ck_assert_uint_eq (e.model_states_bytes, 16 * sp_model_n_params (&m) / 64);
  ck_assert (fabs ((double) e.model_states_bytes - 1.875e9) / 1.875e9 < 0.01);
  ck_assert_uint_eq (e.params_bytes, 2 * sp_model_n_params (&m) / 64);
  ck_assert_uint_eq (e.optimizer_bytes, 12 * sp_model_n_params (&m) / 64);
  /* MiCS S = 8 on the same 64 GPUs: states divided by 8 instead */
  o.shard_size = 8;
  ck_assert (sp_memory_estimate (&m, &o, 64, NULL, &e, &error));
  ck_assert_uint_eq (e.model_states_bytes, 16 * sp_model_n_params (&m) / 8);
}
END_TEST

START_TEST (test_small_by_hand)
{
  /* small.json on S = 4 (W 8): ΣP = embed 833 + 2 layers · 2801 + ln_f 16
   * = 6451 (see test_workload.c for the per-tensor P). */
  SpModel m;
  small_model (&m);
  SpShardingOptions o;
  sp_sharding_options_init (&o);
  o.shard_size = 4;
  o.param_persistence_threshold = 0;
  o.max_reuse_distance = 0;
  o.prefetch_bucket_size = 0;
  o.reduce_bucket_size = 4000;
  SpMemoryOptions mo;
  sp_memory_options_init (&mo);
  ck_assert_uint_eq (mo.reserve_bytes, G_GUINT64_CONSTANT (2147483648));
  mo.reserve_bytes = 1000;
  SpMemoryEstimate e;
  GError *error = NULL;
  ck_assert (sp_memory_estimate (&m, &o, 8, &mo, &e, &error));
  ck_assert_uint_eq (e.params_bytes, 2 * 6451);
  ck_assert_uint_eq (e.grads_bytes, 2 * 6451);
  ck_assert_uint_eq (e.optimizer_bytes, 12 * 6451);
  ck_assert_uint_eq (e.reduce_bucket_bytes, 8000);
  /* no prefetch, no reuse: the largest module's gathered buffer, a layer:
   * 4 · 2801 elements · 2 bytes */
  ck_assert_uint_eq (e.gathered_bytes, 22408);
  /* Korthikanti et al.: s 10, b 1, h 30, a 3: one layer 10·30·(34 + 5·3·10/30)
   * = 300·39 = 11700; output 5·300 + 4·10·101 = 5540; checkpointed:
   * 2 layers · 2·300 + 11700 + 5540 = 18440 */
  ck_assert_uint_eq (e.activation_bytes, 18440);
  ck_assert_uint_eq (e.total_bytes, 16 * 6451 + 8000 + 22408 + 18440 + 1000);
  /* contiguous_gradients off: no flat buffer of 4000 elements; the most
   * gradient elements a bucket holds before it is reduced.  Backward, in
   * autograd order (each module's tensors last to first): head ln_f.b,
   * ln_f.w (60), L1 fc2.b 30, fc2.w 3600, fc1.b 120 → 3810; fc1.w 3600
   * would overflow 4000, so the bucket is reduced at 3810, and no later
   * bucket holds more (L1: 3600+30+30+30 = 3690 then dense.w overflows;
   * 900+90+2700+30+30 + L0 fc2.b 30 = 3780; …; embed: 300 + 3030). */
  o.contiguous_gradients = FALSE;
  ck_assert (sp_memory_estimate (&m, &o, 8, &mo, &e, &error));
  ck_assert_uint_eq (e.reduce_bucket_bytes, 2 * 3810);
  ck_assert_uint_eq (e.total_bytes, 16 * 6451 + 2 * 3810 + 22408 + 18440 + 1000);
  o.contiguous_gradients = TRUE;
  m.activation_checkpointing = FALSE;
  ck_assert (sp_memory_estimate (&m, &o, 8, &mo, &e, &error));
  ck_assert_uint_eq (e.activation_bytes, 2 * 11700 + 5540);

  /* prefetch 5000 elements: while L0 runs (11204 gathered), L1 (11204) is
   * in flight — the window adds uses until 5000 numel are covered. */
  o.prefetch_bucket_size = 5000;
  ck_assert (sp_memory_estimate (&m, &o, 8, &mo, &e, &error));
  ck_assert_uint_eq (e.gathered_bytes, 2 * 22408);

  /* every tensor persistent (threshold 1e5): the full model (25770) is
   * held besides the partitions, and nothing is gathered per module */
  o.param_persistence_threshold = 100000;
  ck_assert (sp_memory_estimate (&m, &o, 8, &mo, &e, &error));
  ck_assert_uint_eq (e.params_bytes, 2 * (6451 + 25770));
  ck_assert_uint_eq (e.gathered_bytes, 0);
}
END_TEST

START_TEST (test_hpz_and_fits)
{
  /* hpZ Z = 4 on W = 8 (S = W): each non-persistent tensor adds a
   * secondary partition of aligned/Z = (W/Z)·P = 2P elements.  small.json
   * with P over 8: wte 379, wpe 38 (37.5), per layer ln 4·4, qkv.w 338
   * (337.5), qkv.b 12 (11.25), dense.w 113 (112.5), dense.b 4, fc1.w 450,
   * fc1.b 15, fc2.w 450, fc2.b 4 → 16+338+12+113+4+450+15+450+4 = 1402,
   * ln_f 4+4: ΣP = 379 + 38 + 2·1402 + 8 = 3229. */
  SpModel m;
  small_model (&m);
  SpShardingOptions o;
  sp_sharding_options_init (&o);
  o.param_persistence_threshold = 0;
  o.hpz_partition_size = 4;
  SpMemoryEstimate e;
  GError *error = NULL;
  ck_assert (sp_memory_estimate (&m, &o, 8, NULL, &e, &error));
  ck_assert_uint_eq (e.grads_bytes, 2 * 3229);
  ck_assert_uint_eq (e.params_bytes, 2 * (3229 + 2 * 3229));
  ck_assert (sp_memory_fits (&e, 80.0));
  ck_assert (!sp_memory_fits (&e, 1.0)); /* the 2 GiB reserve alone exceeds 1 GiB */

  /* gpt-70b does not fit an 80 GiB GPU with plain DDP-like S = 1... */
  ck_assert (sp_model_preset ("gpt-70b", &m, &error));
  sp_sharding_options_init (&o);
  ck_assert (sp_memory_estimate (&m, &o, 1, NULL, &e, &error));
  ck_assert (!sp_memory_fits (&e, 80.0));
  /* ...but does over 256 GPUs: 16·64.9e9/256 ≈ 4.06e9 bytes of states */
  ck_assert (sp_memory_estimate (&m, &o, 256, NULL, &e, &error));
  ck_assert (e.model_states_bytes < G_GUINT64_CONSTANT (4200000000));
  ck_assert (sp_memory_fits (&e, 80.0));

  /* bad layouts */
  o.shard_size = 24;
  ck_assert (!sp_memory_estimate (&m, &o, 64, NULL, &e, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_GROUPS);
  g_clear_error (&error);
  o.shard_size = 0;
  o.zero_stage = 2;
  ck_assert (!sp_memory_estimate (&m, &o, 64, NULL, &e, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_UNSUPPORTED);
  g_clear_error (&error);
}
END_TEST

static Suite *
memory_suite (void)
{
  Suite *s = suite_create ("memory");
  TCase *tc = tcase_create ("core");
  tcase_add_test (tc, test_zero_paper);
  tcase_add_test (tc, test_small_by_hand);
  tcase_add_test (tc, test_hpz_and_fits);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  return sp_test_run (memory_suite ());
}
