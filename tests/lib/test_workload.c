/* Models, DeepSpeed configs and the step → plan builder.  Expected numbers
 * are computed by hand in the comments (independently of the library). */
#include "config.h"
#include "testutil.h"
#include "shardplan/shardplan.h"
#include "shardplan/workload.h"

#include <string.h>

/* ---- models -------------------------------------------------------------- */

START_TEST (test_presets)
{
  SpModel m;
  GError *error = NULL;
  /* 12·L·h² + 13·L·h + (V + s)·h + 2h with V = 50257:
   * gpt-1b : 12·24·2048² = 1207959552, 13·24·2048 = 638976,
   *          (50257+2048)·2048 = 107120640, 4096            → 1315723264
   * gpt-13b: 12·40·5120² = 12582912000, 13·40·5120 = 2662400,
   *          (50257+2048)·5120 = 267801600, 10240           → 12853386240
   * gpt-70b: 12·80·8192² = 64424509440, 13·80·8192 = 8519680,
   *          (50257+4096)·8192 = 445259776, 16384           → 64878305280 */
  ck_assert (sp_model_preset ("gpt-1b", &m, &error));
  ck_assert_uint_eq (sp_model_n_params (&m), 1315723264u);
  ck_assert (sp_model_preset ("gpt-13b", &m, &error));
  ck_assert_uint_eq (sp_model_n_params (&m), G_GUINT64_CONSTANT (12853386240));
  ck_assert_uint_eq (m.layers, 40);
  ck_assert_uint_eq (m.hidden, 5120);
  ck_assert_uint_eq (m.seq_len, 2048);
  ck_assert_uint_eq (m.micro_batch, 1);
  ck_assert_int_eq (m.dtype, SP_DTYPE_BFLOAT16);
  ck_assert (sp_model_preset ("gpt-70b", &m, &error));
  ck_assert_uint_eq (sp_model_n_params (&m), G_GUINT64_CONSTANT (64878305280));
  ck_assert_str_eq (SP_MODEL_DEFAULT, "gpt-13b");
  ck_assert (!sp_model_preset ("gpt-2", &m, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_WORKLOAD);
  ck_assert (strstr (error->message, "gpt-2") && strstr (error->message, "gpt-13b"));
  g_clear_error (&error);
  for (const char *const *n = sp_model_preset_names (); *n; n++)
    ck_assert (sp_model_preset_description (*n) != NULL);
}
END_TEST

START_TEST (test_model_json)
{
  g_autofree char *path = sp_test_fixture ("workload/small.json");
  SpModel m, back;
  GError *error = NULL;
  ck_assert (sp_model_open (path, &m, &error));
  SP_ASSERT_NO_ERROR (error);
  ck_assert_str_eq (m.name, "small");
  ck_assert_uint_eq (m.ffn_hidden, 120); /* default 4h */
  ck_assert_uint_eq (m.vocab, 101);
  ck_assert_uint_eq (m.grad_accum, 2);
  /* per layer 4·900 + 2·30·120 + 9·30 + 120 = 11190; ×2 + 101·30 + 10·30 + 60 = 25770 */
  ck_assert_uint_eq (sp_model_n_params (&m), 25770);
  g_autofree char *json = sp_model_to_json (&m);
  ck_assert (sp_model_load_data (json, -1, "round trip", &back, &error));
  ck_assert_str_eq (back.name, m.name);
  ck_assert_uint_eq (back.layers, m.layers);
  ck_assert_uint_eq (back.ffn_hidden, m.ffn_hidden);
  ck_assert_uint_eq (back.grad_accum, m.grad_accum);
  ck_assert_int_eq (back.activation_checkpointing, m.activation_checkpointing);

  /* n_params without layers: per layer 12·2048² + 13·2048 = 50358272, the
   * rest 107124736; (1.3e9 − 107124736) / 50358272 = 23.69 → 24 layers. */
  ck_assert (sp_model_load_data ("{\"hidden\": 2048, \"heads\": 16, \"n_params\": 1.3e9}", -1, "n",
                                 &m, &error));
  ck_assert_uint_eq (m.layers, 24);
  /* and with layers, a 10 % disagreement is an error */
  ck_assert (!sp_model_load_data ("{\"layers\": 24, \"hidden\": 2048, \"heads\": 16, "
                                  "\"n_params\": 1.45e9}", -1, "n", &m, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_WORKLOAD);
  g_clear_error (&error);

  /* MoE: layers 0 and 2 of 4 have 8 experts. dense layer (h 64, f 256):
   * 4·4096 + 2·64·256 + 9·64 + 256 = 16384+32768+576+256 = 49984;
   * MoE layer: 4·4096 + 8·64 + 8·64 (gate) + 8·(2·64·256 + 256 + 64) =
   * 16384 + 512 + 512 + 264704 = 282112; embeddings (256 + 32)·64 = 18432, ln_f 128.
   * total 2·49984 + 2·282112 + 18432 + 128 = 682752 */
  g_autofree char *moe = sp_test_fixture ("workload/moe.json");
  ck_assert (sp_model_load_file (moe, &m, &error));
  ck_assert_uint_eq (sp_model_n_params (&m), 682752);
}
END_TEST

static void
expect_bad_model (const char *fixture, const char *needle)
{
  g_autofree char *path = sp_test_fixture (fixture);
  SpModel m;
  GError *error = NULL;
  ck_assert (!sp_model_load_file (path, &m, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_WORKLOAD);
  ck_assert_msg (strstr (error->message, needle), "'%s' not in: %s", needle, error->message);
  ck_assert (strchr (error->message, '\n') == NULL);
  g_error_free (error);
}

START_TEST (test_model_bad)
{
  expect_bad_model ("workload/bad-unknown-key.json", "'hiden'");
  expect_bad_model ("workload/bad-type.json", "layers");
  expect_bad_model ("workload/bad-not-json.json", "not valid JSON");
  SpModel m;
  GError *error = NULL;
  ck_assert (!sp_model_load_data ("{\"layers\": 2, \"hidden\": 64, \"heads\": 5}", -1, "h", &m, &error));
  ck_assert (strstr (error->message, "heads 5"));
  g_clear_error (&error);
  ck_assert (!sp_model_load_data ("{\"layers\": 2, \"hidden\": 64, \"heads\": 4, \"dtype\": \"fp32\"}",
                                  -1, "d", &m, &error));
  ck_assert (strstr (error->message, "dtype"));
  g_clear_error (&error);
  ck_assert (!sp_model_load_data ("[1, 2]", -1, "arr", &m, &error));
  g_clear_error (&error);
  ck_assert (!sp_model_open ("/nonexistent/model.json", &m, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_WORKLOAD);
  g_clear_error (&error);
}
END_TEST

/* Issue 15: json-glib recurses once per nesting level; deeper than the
 * limit (128, the plan reader's) is refused before it parses, counting
 * brackets outside strings only. */
static char *
nested (const char *prefix, const char *open, const char *close, guint n, const char *suffix)
{
  GString *s = g_string_new (prefix);
  for (guint i = 0; i < n; i++)
    g_string_append (s, open);
  for (guint i = 0; i < n; i++)
    g_string_append (s, close);
  g_string_append (s, suffix);
  return g_string_free (s, FALSE);
}

START_TEST (test_model_deep)
{
  SpModel m;
  GError *error = NULL;
  g_autofree char *arrays = nested ("{\"moe\": ", "[", "]", 200000, "}");
  ck_assert (!sp_model_load_data (arrays, -1, "deep.json", &m, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_WORKLOAD);
  ck_assert_msg (strstr (error->message, "deep.json:1:136: objects and arrays nested deeper than "
                                         "128 levels"), "%s", error->message);
  g_clear_error (&error);
  g_autofree char *objects = nested ("", "{\"a\":", "}", 100000, "");
  ck_assert (!sp_deepspeed_config_apply (objects, -1, "ds.json", NULL, NULL, NULL, &error));
  ck_assert_msg (strstr (error->message, "ds.json:1:641: objects and arrays nested deeper than "
                                         "128 levels"), "%s", error->message);
  g_clear_error (&error);
  /* 128 levels is within the limit: json-glib parses it and the loader
   * names the key it does not accept */
  g_autofree char *at_limit = nested ("{\"moe\": ", "[", "]", 127, "}");
  ck_assert (!sp_model_load_data (at_limit, -1, "ok.json", &m, &error));
  ck_assert_msg (!strstr (error->message, "nested"), "%s", error->message);
  g_clear_error (&error);
  /* brackets inside strings, after escaped quotes and backslashes, do not count */
  g_autofree char *in_string = nested ("{\"name\": \"\\\\\\\"", "[{", "", 300, "\", \"layers\": 0}");
  ck_assert (!sp_model_load_data (in_string, -1, "s.json", &m, &error));
  ck_assert_msg (!strstr (error->message, "nested"), "%s", error->message);
  g_clear_error (&error);
}
END_TEST

/* ---- DeepSpeed configs ------------------------------------------------------ */

START_TEST (test_ds_config)
{
  GError *error = NULL;
  SpShardingOptions o;
  SpModel m;
  sp_sharding_options_init (&o);
  ck_assert (sp_model_preset ("gpt-1b", &m, &error));
  g_auto (GStrv) warn = NULL;
  g_autofree char *path = sp_test_fixture ("workload/ds-unknown-keys.json");
  ck_assert (sp_deepspeed_config_apply_file (path, &o, &m, &warn, &error));
  SP_ASSERT_NO_ERROR (error);
  ck_assert_uint_eq (o.zero_stage, 3);
  ck_assert_uint_eq (o.shard_size, 0); /* mics_shard_size -1: ZeRO-3 */
  ck_assert_uint_eq (o.reduce_bucket_size, 500000000u);
  ck_assert_uint_eq (o.prefetch_bucket_size, SP_DS_PREFETCH_BUCKET_SIZE); /* "auto" */
  ck_assert_uint_eq (m.grad_accum, 4);
  ck_assert_uint_eq (m.micro_batch, 1); /* "auto" keeps the model's */
  ck_assert_int_eq (m.dtype, SP_DTYPE_FLOAT16);
  ck_assert (o.overlap_comm); /* "overlap_comm": true is read, no warning */
  ck_assert_uint_eq (o.max_live_parameters, SP_DS_MAX_LIVE_PARAMETERS);
  /* one line per ignored key and per "auto" */
  const char *expect[] = { "'train_batch_size'", "train_micro_batch_size_per_gpu is \"auto\"",
                           "'optimizer'", "'fp16.loss_scale'",
                           "stage3_prefetch_bucket_size is \"auto\"" };
  ck_assert_uint_eq (g_strv_length (warn), G_N_ELEMENTS (expect));
  for (guint i = 0; i < G_N_ELEMENTS (expect); i++)
    {
      gboolean found = FALSE;
      for (char **w = warn; *w; w++)
        found |= strstr (*w, expect[i]) != NULL && strchr (*w, '\n') == NULL;
      ck_assert_msg (found, "no warning containing %s", expect[i]);
    }

  g_autofree char *zpp = sp_test_fixture ("workload/ds-zeropp.json");
  sp_sharding_options_init (&o);
  ck_assert (sp_deepspeed_config_apply_file (zpp, &o, &m, NULL, &error));
  ck_assert (o.quantized_weights && o.quantized_gradients);
  ck_assert_uint_eq (o.hpz_partition_size, 8);
  ck_assert_uint_eq (o.reduce_bucket_size, 100000000u);
  ck_assert_uint_eq (m.micro_batch, 2);

  /* the schedule's keys */
  sp_sharding_options_init (&o);
  ck_assert (o.overlap_comm); /* DeepSpeed's default for stage 3 */
  ck_assert (sp_deepspeed_config_apply ("{\"zero_optimization\": {\"stage\": 3, \"overlap_comm\": false, "
                                        "\"stage3_max_live_parameters\": 14000}}",
                                        -1, "sched", &o, NULL, NULL, &error));
  SP_ASSERT_NO_ERROR (error);
  ck_assert (!o.overlap_comm);
  ck_assert_uint_eq (o.max_live_parameters, 14000);
  ck_assert (!sp_deepspeed_config_apply ("{\"zero_optimization\": {\"stage\": 3, \"overlap_comm\": 1}}",
                                         -1, "sched", &o, NULL, NULL, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_WORKLOAD);
  ck_assert (strstr (error->message, "zero_optimization.overlap_comm"));
  g_clear_error (&error);
}
END_TEST

START_TEST (test_ds_config_bad)
{
  GError *error = NULL;
  SpShardingOptions o;
  sp_sharding_options_init (&o);
  SpShardingOptions before = o;
  g_autofree char *s2 = sp_test_fixture ("workload/ds-stage2.json");
  ck_assert (!sp_deepspeed_config_apply_file (s2, &o, NULL, NULL, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_UNSUPPORTED);
  ck_assert (strstr (error->message, "stage is 2"));
  g_clear_error (&error);
  ck_assert (memcmp (&o, &before, sizeof o) == 0); /* untouched on failure */
  g_autofree char *bt = sp_test_fixture ("workload/ds-bad-type.json");
  ck_assert (!sp_deepspeed_config_apply_file (bt, &o, NULL, NULL, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_WORKLOAD);
  ck_assert (strstr (error->message, "zero_optimization.zero_quantized_weights"));
  g_clear_error (&error);
  ck_assert (!sp_deepspeed_config_apply ("{}", -1, "empty", &o, NULL, NULL, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_UNSUPPORTED); /* no zero_optimization: stage 0 */
  g_clear_error (&error);
  ck_assert (!sp_deepspeed_config_apply ("{\"zero_optimization\": {\"stage\": 3, "
                                         "\"reduce_bucket_size\": 1.5}}", -1, "frac", &o, NULL,
                                         NULL, &error));
  ck_assert (strstr (error->message, "zero_optimization.reduce_bucket_size"));
  g_clear_error (&error);
  ck_assert (!sp_deepspeed_config_apply ("{\"gradient_accumulation_steps\": -2, "
                                         "\"zero_optimization\": {\"stage\": 3}}", -1, "neg", &o,
                                         NULL, NULL, &error));
  ck_assert (strstr (error->message, "gradient_accumulation_steps"));
  g_clear_error (&error);
}
END_TEST

/* ---- the golden plan ------------------------------------------------------- */

/* The small model on W = 8 (2 nodes × 4), MiCS S = 4, flat, bucket 4000
 * elements, persistence 0, reuse distance 0, prefetch 0. */
static void
small_options (SpShardingOptions *o)
{
  sp_sharding_options_init (o);
  o->shard_size = 4;
  o->reduce_bucket_size = 4000;
  o->param_persistence_threshold = 0;
  o->max_reuse_distance = 0;
  o->prefetch_bucket_size = 0;
}

/* The small model's plan under `o`, or small_options() for NULL. */
static SpPlan *
small_plan (const SpShardingOptions *opts, GError **error)
{
  g_autofree char *path = sp_test_fixture ("workload/small.json");
  SpModel m;
  if (!sp_model_load_file (path, &m, error))
    return NULL;
  SpShardingOptions o;
  small_options (&o);
  if (opts)
    o = *opts;
  SpWorkloadPlanOptions p;
  sp_workload_plan_options_init (&p);
  p.world_size = 8;
  p.devices_per_node = 4;
  return sp_workload_build_plan (&m, &o, &p, error);
}

static const SpOp *
find_op (const SpPlan *plan, const char *name)
{
  for (guint32 i = 0; i < sp_plan_n_ops (plan); i++)
    if (strcmp (sp_plan_op (plan, i)->name, name) == 0)
      return sp_plan_op (plan, i);
  ck_abort_msg ("no op named %s", name);
  return NULL;
}

START_TEST (test_golden_small)
{
  GError *error = NULL;
  g_autoptr (SpPlan) built = small_plan (NULL, &error);
  SP_ASSERT_NO_ERROR (error);
  g_autofree char *path = sp_test_fixture ("workload/golden-small.json");
  if (g_getenv ("SP_REGEN_GOLDEN"))
    ck_assert (sp_plan_save (built, path, &error));
  g_autoptr (SpPlan) golden = sp_plan_load (path, 8, &error);
  SP_ASSERT_NO_ERROR (error);
  /* the version in created_by is not part of the plan's meaning */
  sp_plan_set_meta (built, "created_by", sp_plan_get_meta (golden, "created_by"));
  ck_assert_msg (sp_plan_equal (built, golden), "the builder no longer produces golden-small.json");

  /* Hand computation.  h 30, f 120, V 101, s 10, S 4, bf16 (2 bytes).
   * P = ceil(n/4) per tensor:
   *   wte 101·30 = 3030 → 758, wpe 10·30 = 300 → 75            embed ΣP 833
   *   ln1.w/b 30 → 8+8, qkv.w 90·30 = 2700 → 675, qkv.b 90 → 23,
   *   dense.w 900 → 225, dense.b 30 → 8, ln2.w/b 8+8,
   *   fc1.w 120·30 = 3600 → 900, fc1.b 120 → 30, fc2.w 3600 → 900, fc2.b 30 → 8
   *                                                           layer ΣP 2801
   *   head: ln_f.w/b 8+8 + wte 758                             head ΣP 774
   * all_gather bytes = S·ΣP·2: embed 6664, layer 22408, head 6192. */
  const SpOp *op = find_op (golden, "mb0.embed.fwd.allgather");
  ck_assert_int_eq (op->kind, SP_COLL_ALL_GATHER);
  ck_assert_int_eq (op->family, SP_FAMILY_SHARD);
  ck_assert_uint_eq (op->bytes, 6664);
  ck_assert_uint_eq (op->count, 3332);
  ck_assert_uint_eq (find_op (golden, "mb0.L0.fwd.allgather")->bytes, 22408);
  ck_assert_uint_eq (find_op (golden, "mb1.L1.bwd.allgather")->bytes, 22408);
  ck_assert_uint_eq (find_op (golden, "mb0.head.fwd.allgather")->bytes, 6192);
  ck_assert_uint_eq (find_op (golden, "mb0.head.bwd.allgather")->bytes, 6192);
  ck_assert_uint_eq (find_op (golden, "mb0.embed.bwd.allgather")->bytes, 6664);

  /* FLOPs, T = 10 tokens: attention 2·10·4·900 + 4·1·10²·30 = 84000,
   * MLP 2·10·2·30·120 = 144000, layer fwd 228000, bwd with checkpointing
   * 3× = 684000; head 2·10·101·30 = 60600, bwd 121200. */
  ck_assert_uint_eq (find_op (golden, "mb0.L0.fwd")->flops, 228000);
  ck_assert_uint_eq (find_op (golden, "mb0.L0.bwd")->flops, 684000);
  ck_assert_uint_eq (find_op (golden, "mb0.head.fwd")->flops, 60600);
  ck_assert_uint_eq (find_op (golden, "mb0.head.bwd")->flops, 121200);

  /* Buckets (4000 elements), gradients in backward order:
   *  head.bwd: ln_f.b 30, ln_f.w 30; L1.bwd: fc2.b 30, fc2.w 3600, fc1.b 120
   *    (3810; fc1.w 3600 would overflow)                          → bucket0
   *  L1 fc1.w 3600, ln2.b, ln2.w, dense.b (3690; dense.w 900 overflows) → 1
   *  L1 dense.w 900, qkv.b 90, qkv.w 2700, ln1.b, ln1.w, L0 fc2.b (3780) → 2
   *  L0 fc2.w 3600, fc1.b 120 (3720)                               → 3
   *  L0 fc1.w, ln2.b, ln2.w, dense.b (3690)                        → 4
   *  L0 dense.w, qkv.b, qkv.w, ln1.b, ln1.w (3750; wpe 300 overflows) → 5
   *  embed.bwd: wpe 300, wte 3030 (end of backward)                → 6
   * reduce_scatter_coalesced bytes = S·Σc_t·2, c_t = ceil(n_t/4):
   *  0: 8+8+8+900+30 = 954 → 7632     1: 900+8+8+8 = 924 → 7392
   *  2: 225+23+675+8+8+8 = 947 → 7576 3: 900+30 = 930 → 7440
   *  4: 924 → 7392                     5: 225+23+675+8+8 = 939 → 7512
   *  6: 75+758 = 833 → 6664
   * replicate all_reduce (boundary micro-step 1 only) = Σc_t·2. */
  const guint64 sum_c[7] = { 954, 924, 947, 930, 924, 939, 833 };
  for (guint mb = 0; mb < 2; mb++)
    for (guint b = 0; b < 7; b++)
      {
        g_autofree char *n = g_strdup_printf ("mb%u.bucket%u.reduce_scatter_coalesced", mb, b);
        const SpOp *c = find_op (golden, n);
        ck_assert_int_eq (c->kind, SP_COLL_REDUCE_SCATTER_COALESCED);
        ck_assert_uint_eq (c->bytes, 4 * sum_c[b] * 2);
        ck_assert_uint_eq (c->stream, 2);
        const SpOp *sub = sp_plan_op (golden, c->id + 1);
        ck_assert_int_eq (sub->kind, SP_COLL_REDUCE_SCATTER);
        ck_assert_int_eq (sub->parent, c->id);
        ck_assert_uint_eq (sub->bytes, 4 * sum_c[b] * 2);
        if (mb == 1)
          {
            g_autofree char *an = g_strdup_printf ("mb1.bucket%u.replicate.allreduce", b);
            const SpOp *ar = find_op (golden, an);
            ck_assert_int_eq (ar->family, SP_FAMILY_REPLICATE);
            ck_assert_uint_eq (ar->bytes, sum_c[b] * 2);
            ck_assert_uint_eq (ar->deps[0], c->id);
          }
      }
  /* bucket 0's last gradient came from L1.bwd, bucket 6's from embed.bwd */
  ck_assert_uint_eq (find_op (golden, "mb0.bucket0.reduce_scatter_coalesced")->deps[0],
                     find_op (golden, "mb0.L1.bwd")->id);
  ck_assert_uint_eq (find_op (golden, "mb0.bucket6.reduce_scatter_coalesced")->deps[0],
                     find_op (golden, "mb0.embed.bwd")->id);
  /* prefetch 0: L1's gather is issued when L1 starts, after L0's compute */
  ck_assert_uint_eq (find_op (golden, "mb0.L1.fwd.allgather")->deps[0],
                     find_op (golden, "mb0.L0.fwd")->id);
  /* the epilogue's reduce_and_partition_stream.synchronize(): micro-step
   * 1 starts (its first gather and compute) after micro-step 0's last
   * reduction, bucket 6's reduce-scatter */
  const guint32 last0 = find_op (golden, "mb0.bucket6.reduce_scatter_coalesced.reduce_scatter")->id;
  ck_assert_uint_eq (find_op (golden, "mb0.embed.fwd.allgather")->n_deps, 0);
  ck_assert_uint_eq (find_op (golden, "mb1.embed.fwd.allgather")->n_deps, 1);
  ck_assert_uint_eq (find_op (golden, "mb1.embed.fwd.allgather")->deps[0], last0);
  const SpOp *first1 = find_op (golden, "mb1.embed.fwd");
  ck_assert_uint_eq (first1->n_deps, 3); /* its gather, mb0's last compute, the sync */
  ck_assert_uint_eq (first1->deps[2], last0);
  /* 8 uses × (gather + compute) + 7 buckets × 2, per micro-step, + 7 all-reduces */
  ck_assert_uint_eq (sp_plan_n_ops (golden), 2 * (16 + 14) + 7);
  ck_assert_str_eq (sp_plan_get_meta (golden, "model"), "small");
  ck_assert_str_eq (sp_plan_get_meta (golden, "micro_steps"), "2");
}
END_TEST

/* overlap_comm false: DeepSpeed's reduce_and_partition_stream is the
 * default stream, so every gradient reduction runs on the compute stream
 * (0) between the backward compute that produced its last gradient and the
 * next compute; nothing else of the plan changes. */
START_TEST (test_overlap_comm)
{
  GError *error = NULL;
  g_autoptr (SpPlan) on = small_plan (NULL, &error);
  SP_ASSERT_NO_ERROR (error);
  SpShardingOptions o;
  small_options (&o);
  o.overlap_comm = FALSE;
  g_autoptr (SpPlan) off = small_plan (&o, &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert_uint_eq (sp_plan_n_ops (off), sp_plan_n_ops (on));
  for (guint32 i = 0; i < sp_plan_n_ops (off); i++)
    {
      const SpOp *a = sp_plan_op (on, i), *b = sp_plan_op (off, i);
      ck_assert_str_eq (a->name, b->name);
      ck_assert_uint_eq (a->n_deps, b->n_deps);
      for (guint32 d = 0; d < a->n_deps; d++)
        ck_assert_uint_eq (a->deps[d], b->deps[d]);
      /* reductions (stream 2 with overlap) move to the compute stream */
      ck_assert_uint_eq (b->stream, a->stream == 2 ? 0 : a->stream);
    }
  /* bucket 0 is reduced after L1.bwd (fc1.w would overflow it) and
   * before L0.bwd: on one stream, L0.bwd waits for it */
  const SpOp *rs = find_op (off, "mb0.bucket0.reduce_scatter_coalesced.reduce_scatter");
  const SpOp *l1 = find_op (off, "mb0.L1.bwd"), *l0 = find_op (off, "mb0.L0.bwd");
  ck_assert_uint_eq (rs->stream, 0);
  ck_assert_uint_eq (l1->stream, 0);
  ck_assert_uint_eq (l0->stream, 0);
  ck_assert_uint_eq (rs->deps[0], l1->id);
  ck_assert (l1->id < rs->id && rs->id < l0->id);
  ck_assert_uint_eq (find_op (off, "mb1.bucket3.replicate.allreduce")->stream, 0);
  ck_assert (strstr (sp_plan_get_meta (off, "sharding"), "no-overlap-comm"));
  ck_assert (!strstr (sp_plan_get_meta (on, "sharding"), "no-overlap-comm"));
}
END_TEST

/* The prefetcher's look-ahead, by hand on the small model (reuse distance
 * 0, persistence 0: every use gathers all its tensors).  Uses of a
 * micro-step: 0 embed.fwd (wte 3030 + wpe 300 = 3330 elements), 1 L0.fwd,
 * 2 L1.fwd (11190 each: 2·30 + 2700 + 90 + 900 + 30 + 2·30 + 3600 + 120
 * + 3600 + 30), 3 head.fwd …  L1.fwd's gather is issued at the start of
 * the earliest use k with Σ_{k<i<2} fetched_i < prefetch_bucket_size and
 * live_k + Σ_{k<i<2} fetched_i < max_live_parameters (live_0 = 3330,
 * live_1 = 11190), and waits for the compute before k. */
static const SpOp *
l1_gather (guint64 prefetch, guint64 max_live, SpPlan **out_plan)
{
  GError *error = NULL;
  SpShardingOptions o;
  small_options (&o);
  o.prefetch_bucket_size = prefetch;
  o.max_live_parameters = max_live;
  SpPlan *plan = small_plan (&o, &error);
  SP_ASSERT_NO_ERROR (error);
  *out_plan = plan;
  return find_op (plan, "mb0.L1.fwd.allgather");
}

START_TEST (test_prefetch_window)
{
  const guint64 big = G_GUINT64_CONSTANT (1000000000);
  g_autoptr (SpPlan) p1 = NULL, p2 = NULL, p3 = NULL, p4 = NULL, p5 = NULL;
  /* bucket and live limit both far away: issued when the micro-step starts */
  ck_assert_uint_eq (l1_gather (big, big, &p1)->n_deps, 0);
  /* bucket 5000 < L0's 11190: issued when L0 starts, after embed.fwd */
  const SpOp *g = l1_gather (5000, big, &p2);
  ck_assert_uint_eq (g->n_deps, 1);
  ck_assert_uint_eq (g->deps[0], find_op (p2, "mb0.embed.fwd")->id);
  /* bucket 0: no prefetch, it waits for L0.fwd (as in the golden plan) */
  g = l1_gather (0, big, &p3);
  ck_assert_uint_eq (g->deps[0], find_op (p3, "mb0.L0.fwd")->id);
  /* max_live 14000: at embed.fwd 3330 + 11190 (L0 prefetched) >= 14000,
   * at L0.fwd 11190 < 14000: issued when L0 starts */
  g = l1_gather (big, 14000, &p4);
  ck_assert_uint_eq (g->n_deps, 1);
  ck_assert_uint_eq (g->deps[0], find_op (p4, "mb0.embed.fwd")->id);
  /* max_live 11000: L0 alone fills it, so L1 is fetched on demand */
  g = l1_gather (big, 11000, &p5);
  ck_assert_uint_eq (g->deps[0], find_op (p5, "mb0.L0.fwd")->id);
  /* head.fwd (use 3) under max_live 14000: 11190 + 11190 >= 14000 at L0,
   * 11190 < 14000 at L1: issued when L1 starts, after L0.fwd */
  g = find_op (p4, "mb0.head.fwd.allgather");
  ck_assert_uint_eq (g->deps[0], find_op (p4, "mb0.L0.fwd")->id);
}
END_TEST

START_TEST (test_ds_config_equals_options)
{
  GError *error = NULL;
  g_autoptr (SpPlan) by_options = small_plan (NULL, &error);
  SP_ASSERT_NO_ERROR (error);
  g_autofree char *mp = sp_test_fixture ("workload/small.json");
  g_autofree char *dp = sp_test_fixture ("workload/small-ds.json");
  SpModel m;
  ck_assert (sp_model_load_file (mp, &m, &error));
  m.grad_accum = 1; /* the config sets it back to 2 */
  SpShardingOptions o;
  sp_sharding_options_init (&o);
  g_auto (GStrv) warn = NULL;
  ck_assert (sp_deepspeed_config_apply_file (dp, &o, &m, &warn, &error));
  ck_assert_uint_eq (g_strv_length (warn), 0);
  SpWorkloadPlanOptions p;
  sp_workload_plan_options_init (&p);
  p.world_size = 8;
  p.devices_per_node = 4;
  g_autoptr (SpPlan) by_config = sp_workload_build_plan (&m, &o, &p, &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert (sp_plan_equal (by_options, by_config));
}
END_TEST

/* The small model (tests/fixtures/workload/small.json) on W 8, D 2, MiCS
 * S 4 hierarchical, nothing persistent. */
static void
hierarchical_small (SpModel *m, SpShardingOptions *o, SpWorkloadPlanOptions *p)
{
  g_autofree char *path = sp_test_fixture ("workload/small.json");
  GError *error = NULL;
  ck_assert (sp_model_load_file (path, m, &error));
  SP_ASSERT_NO_ERROR (error);
  sp_sharding_options_init (o);
  o->shard_size = 4;
  o->hierarchical = TRUE;
  o->param_persistence_threshold = 0;
  sp_workload_plan_options_init (p);
  p->world_size = 8;
  p->devices_per_node = 2;
}

START_TEST (test_hierarchical)
{
  /* small model, W 8, D 2, S 4 hierarchical: m = S/D = 2 node blocks.
   * Layer: inter all_gather m·ΣP·2 = 2·2801·2 = 11204 bytes, intra S·ΣP·2 = 22408. */
  SpModel m;
  SpShardingOptions o;
  SpWorkloadPlanOptions p;
  hierarchical_small (&m, &o, &p);
  GError *error = NULL;
  g_autoptr (SpPlan) plan = sp_workload_build_plan (&m, &o, &p, &error);
  SP_ASSERT_NO_ERROR (error);
  const SpOp *c = find_op (plan, "mb0.L0.fwd.allgather");
  ck_assert_int_eq (c->kind, SP_COLL_HIER_ALL_GATHER);
  ck_assert_uint_eq (c->bytes, 22408);
  const SpOp *inter = find_op (plan, "mb0.L0.fwd.allgather.inter");
  ck_assert_int_eq (inter->family, SP_FAMILY_SHARD_INTER_NODE);
  ck_assert_int_eq (inter->parent, c->id);
  ck_assert_uint_eq (inter->bytes, 11204);
  const SpOp *intra = find_op (plan, "mb0.L0.fwd.allgather.intra");
  ck_assert_int_eq (intra->family, SP_FAMILY_SHARD_INTRA_NODE);
  ck_assert_uint_eq (intra->bytes, 22408);
  ck_assert_uint_eq (intra->deps[0], inter->id);
  /* D 4 makes S/D = 1: DeepSpeed's "sharding spans a single node" */
  p.devices_per_node = 4;
  ck_assert (sp_workload_build_plan (&m, &o, &p, &error) == NULL);
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_GROUPS);
  g_clear_error (&error);
}
END_TEST

static gboolean
has_dep (const SpOp *op, guint32 id)
{
  for (guint32 i = 0; i < op->n_deps; i++)
    if (op->deps[i] == id)
      return TRUE;
  return FALSE;
}

/* MiCS' hierarchical gather: the inter-node stage is synchronous on the
 * gather stream (the compute of a use waits for the inter-node stage of
 * every gather issued before it), the intra-node stage async on its own
 * stream (3), and the gathers issued at a use wait for that use's own.
 * Small model, W 8, D 2, S 4, nothing persistent or reused, a prefetch
 * bucket larger than the model: the prefetcher issues every gather of the
 * micro-step at the first use (embed.fwd), its own first. */
START_TEST (test_hierarchical_sync)
{
  SpModel m;
  SpShardingOptions o;
  SpWorkloadPlanOptions p;
  hierarchical_small (&m, &o, &p);
  m.grad_accum = 1;
  o.max_reuse_distance = 0;
  o.prefetch_bucket_size = 1000000000;
  GError *error = NULL;
  g_autoptr (SpPlan) plan = sp_workload_build_plan (&m, &o, &p, &error);
  SP_ASSERT_NO_ERROR (error);
  const char *uses[] = { "embed.fwd", "L0.fwd", "L1.fwd", "head.fwd",
                         "head.bwd", "L1.bwd", "L0.bwd", "embed.bwd" };
  const SpOp *first = find_op (plan, "mb0.embed.fwd.allgather");
  const SpOp *last_inter = find_op (plan, "mb0.embed.bwd.allgather.inter");
  for (guint i = 0; i < G_N_ELEMENTS (uses); i++)
    {
      g_autofree char *g = g_strdup_printf ("mb0.%s.allgather", uses[i]);
      g_autofree char *gi = g_strdup_printf ("mb0.%s.allgather.inter", uses[i]);
      g_autofree char *ga = g_strdup_printf ("mb0.%s.allgather.intra", uses[i]);
      g_autofree char *c = g_strdup_printf ("mb0.%s", uses[i]);
      const SpOp *gop = find_op (plan, g), *cop = find_op (plan, c);
      ck_assert_uint_eq (find_op (plan, gi)->stream, 1);
      ck_assert_uint_eq (find_op (plan, ga)->stream, 3);
      /* issued at the first use, in the prefetcher's order: before any compute */
      ck_assert_uint_lt (gop->id, find_op (plan, "mb0.embed.fwd")->id);
      /* the prefetched ones after the wait for the first use's own gather */
      ck_assert (i == 0 || has_dep (gop, first->id));
      /* each compute waits for its own gather; every compute after the
       * first also for the inter-node stage of the last gather issued at
       * the first use (embed.bwd's): the gather stream holds it */
      ck_assert (has_dep (cop, gop->id));
      ck_assert (has_dep (cop, last_inter->id) == (i > 0 && i < G_N_ELEMENTS (uses) - 1));
    }
  /* the same layout flat: no inter-node stage; each gather issued in its
   * own use's turn (the golden plan's order) */
  o.hierarchical = FALSE;
  g_autoptr (SpPlan) flat = sp_workload_build_plan (&m, &o, &p, &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert_uint_gt (find_op (flat, "mb0.L0.fwd.allgather")->id, find_op (flat, "mb0.embed.fwd")->id);
}
END_TEST

START_TEST (test_reuse_and_persistence)
{
  /* gpt-13b, ZeRO-3 over 128, DeepSpeed defaults.  Layer = 12h² + 13h =
   * 314639360 elements (of which 12h² = 314572800 are weights; the 13h in
   * biases and LayerNorms are <= 1e5: persistent).  Head = wte 257315840
   * + ln_f.  Reuse distance 1e9 from the release of L39 (after L39.fwd):
   * head.fwd 257326080 + head.bwd 257326080 = 514652160 < 1e9, so L39.bwd
   * is visited: L39 stays gathered.  From L38: L39.fwd 314639360 + head
   * 514652160 = 829291520 < 1e9, L39.bwd → 1143930880: L38.bwd is not
   * reached, so L38 is re-gathered.  The head's forward is followed by its
   * backward at once: retained. */
  SpModel m;
  GError *error = NULL;
  ck_assert (sp_model_preset ("gpt-13b", &m, &error));
  SpShardingOptions o;
  sp_sharding_options_init (&o);
  SpWorkloadPlanOptions p;
  sp_workload_plan_options_init (&p);
  p.world_size = 128;
  g_autoptr (SpPlan) plan = sp_workload_build_plan (&m, &o, &p, &error);
  SP_ASSERT_NO_ERROR (error);
  gboolean l39 = FALSE, l38 = FALSE, headb = FALSE;
  for (guint32 i = 0; i < sp_plan_n_ops (plan); i++)
    {
      const char *n = sp_plan_op (plan, i)->name;
      l39 |= strcmp (n, "mb0.L39.bwd.allgather") == 0;
      l38 |= strcmp (n, "mb0.L38.bwd.allgather") == 0;
      headb |= strcmp (n, "mb0.head.bwd.allgather") == 0;
    }
  ck_assert (!l39 && l38 && !headb);
  /* Only the weights are gathered per layer: 128 · 314572800/128 · 2 bytes */
  ck_assert_uint_eq (find_op (plan, "mb0.L0.fwd.allgather")->bytes, G_GUINT64_CONSTANT (629145600));
  /* the persistent tensors (13h per layer + ln_f) are re-gathered after the step */
  const SpOp *pers = find_op (plan, "step.persistent.allgather");
  ck_assert_int_eq (pers->phase, SP_PHASE_OPTIMIZER);
  ck_assert_uint_eq (pers->bytes, (40u * 13 * 5120 + 2 * 5120) * 2);
}
END_TEST

START_TEST (test_zeropp)
{
  /* gpt-1b on W 16 (2 nodes × 8), qwZ + qgZ + hpZ 8. */
  SpModel m;
  GError *error = NULL;
  ck_assert (sp_model_preset ("gpt-1b", &m, &error));
  m.grad_accum = 2;
  SpShardingOptions o;
  sp_sharding_options_init (&o);
  o.quantized_weights = o.quantized_gradients = TRUE;
  o.hpz_partition_size = 8;
  SpWorkloadPlanOptions p;
  sp_workload_plan_options_init (&p);
  p.world_size = 16;
  p.devices_per_node = 8;
  g_autoptr (SpPlan) plan = sp_workload_build_plan (&m, &o, &p, &error);
  SP_ASSERT_NO_ERROR (error);
  /* qwZ, L0 forward: weights 12h² = 50331648 (biases/LN persistent), per
   * rank x = 50331648/16 = 3145728 = 2^20·3.  CUDAQuantizer: groups start
   * at ceil(x/8000) = 394 and rise to the first g with x % 8g == 0: 8g | x
   * ⇔ g | 393216 = 2^17·3 → g = 512 (384 < 394); x % 16·512 == 0 but
   * x/512 = 6144 <= 8000, so no doubling: 512 groups. */
  const SpOp *q = find_op (plan, "mb0.L0.fwd.allgather");
  ck_assert_int_eq (q->dtype, SP_DTYPE_INT8);
  ck_assert_uint_eq (q->bytes, 50331648u);
  ck_assert_int_eq (q->family, SP_FAMILY_SHARD); /* first gather of the step: world */
  ck_assert_uint_eq (find_op (plan, "mb0.L0.fwd.allgather.scales")->bytes, 512u * 16 * 4);
  ck_assert_int_eq (find_op (plan, "mb0.L0.fwd.allgather.quantize")->kind, SP_COLL_QUANTIZE);
  ck_assert_int_eq (find_op (plan, "mb0.L0.fwd.allgather.dequantize")->kind, SP_COLL_DEQUANTIZE);
  /* hpZ: after the first release, gathers run in the zero_param group with
   * the same bytes (aligned = W·P) — in backward, and in micro-step 1's forward */
  const SpOp *b = find_op (plan, "mb0.L0.bwd.allgather.zero_param");
  ck_assert_int_eq (b->family, SP_FAMILY_ZERO_PARAM);
  ck_assert_uint_eq (b->bytes, 50331648u);
  ck_assert_int_eq (find_op (plan, "mb1.L0.fwd.allgather.zero_param")->family, SP_FAMILY_ZERO_PARAM);
  /* qgZ, L0 qkv weight (6144 × 2048 = 12582912, % 2W == 0): G = max(6144,
   * 2048, 16) = 6144; local all_to_all numel/2 = 6291456 bytes int4 and
   * 6144·4 = 24576 bytes of scales; global numel/(2·8) = 786432 and
   * 6144/8·4 = 3072. */
  const SpOp *c = find_op (plan, "mb0.L0.attn.qkv.weight.qgz");
  ck_assert_int_eq (c->kind, SP_COLL_ALL_TO_ALL_QUANT_REDUCE);
  ck_assert_uint_eq (find_op (plan, "mb0.L0.attn.qkv.weight.qgz.local")->bytes, 6291456u);
  ck_assert_int_eq (find_op (plan, "mb0.L0.attn.qkv.weight.qgz.local")->family, SP_FAMILY_A2A_LOCAL);
  ck_assert_uint_eq (find_op (plan, "mb0.L0.attn.qkv.weight.qgz.local.scales")->bytes, 24576u);
  ck_assert_uint_eq (find_op (plan, "mb0.L0.attn.qkv.weight.qgz.global")->bytes, 786432u);
  ck_assert_int_eq (find_op (plan, "mb0.L0.attn.qkv.weight.qgz.global")->family, SP_FAMILY_A2A_GLOBAL);
  ck_assert_uint_eq (find_op (plan, "mb0.L0.attn.qkv.weight.qgz.global.scales")->bytes, 3072u);
  /* fallback for the 1-D LayerNorm weight: reduce_scatter_coalesced over
   * the world, c = ceil(2048/16) = 128, buffer 16·128 = 2048 → 4096 bytes */
  const SpOp *f = find_op (plan, "mb0.L0.ln1.weight.qgz");
  ck_assert_int_eq (f->kind, SP_COLL_REDUCE_SCATTER_COALESCED);
  ck_assert_int_eq (f->family, SP_FAMILY_WORLD);
  ck_assert_uint_eq (f->bytes, 4096u);

  /* ZeRO++ with MiCS is refused */
  o.shard_size = 8;
  ck_assert (sp_workload_build_plan (&m, &o, &p, &error) == NULL);
  SP_ASSERT_ERROR (error, SP_ERROR_UNSUPPORTED);
  g_clear_error (&error);
}
END_TEST

START_TEST (test_moe)
{
  /* moe.json: 4 layers, h 64, 8 experts every 2nd layer, top-2, seq 32.
   * capacity = ceil(32/8 · 1.0 · 2) = 8; all-to-all = 8·8·64 = 4096 bf16
   * elements = 8192 bytes per rank.  ep 4 over W 8: 2 local experts, their
   * tensors partitioned over expert_data (8/4 = 2 ranks). */
  g_autofree char *path = sp_test_fixture ("workload/moe.json");
  SpModel m;
  GError *error = NULL;
  ck_assert (sp_model_load_file (path, &m, &error));
  SpShardingOptions o;
  sp_sharding_options_init (&o);
  o.expert_parallel = 4;
  o.param_persistence_threshold = 0;
  SpWorkloadPlanOptions p;
  sp_workload_plan_options_init (&p);
  p.world_size = 8;
  g_autoptr (SpPlan) plan = sp_workload_build_plan (&m, &o, &p, &error);
  SP_ASSERT_NO_ERROR (error);
  const SpOp *a = find_op (plan, "mb0.L0.attn.fwd.a2a_out");
  ck_assert_int_eq (a->kind, SP_COLL_ALL_TO_ALL);
  ck_assert_int_eq (a->family, SP_FAMILY_EXPERT);
  ck_assert_uint_eq (a->bytes, 8192);
  /* expert gather: 2 local experts × (256·64 + 256 + 64·256 + 64) = 2·33088 =
   * 66176 elements, P = /2 each (all even) → gathered 66176 · 2 bytes */
  const SpOp *g = find_op (plan, "mb0.L0.experts.fwd.allgather.expert_data");
  ck_assert_int_eq (g->family, SP_FAMILY_EXPERT_DATA);
  ck_assert_uint_eq (g->bytes, 66176u * 2);
  /* experts not divisible by ep */
  o.expert_parallel = 3;
  p.world_size = 12;
  ck_assert (sp_workload_build_plan (&m, &o, &p, &error) == NULL);
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_ARGUMENT);
  g_clear_error (&error);
}
END_TEST

START_TEST (test_cli_output_loads)
{
  /* `shardplan plan -o FILE` writes a plan that sp_plan_load reads back. */
  const char *bd = g_getenv ("SP_BUILDDIR");
  g_autofree char *exe = g_build_filename (bd ? bd : SP_BUILDDIR, "tools", "shardplan", NULL);
  ck_assert_msg (g_file_test (exe, G_FILE_TEST_IS_EXECUTABLE), "%s is not built", exe);
  g_autoptr (SpTestDir) dir = sp_test_tmpdir ();
  g_autofree char *out = g_build_filename (dir, "plan.json", NULL);
  const char *argv[] = { exe, "plan", "--model", "gpt-1b", "--topology", "dgx-h100", "--nodes", "2",
                         "--shard-size", "8", "--grad-accum", "2", "-o", out, NULL };
  int status = -1;
  GError *error = NULL;
  ck_assert (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL,
                           NULL, &status, &error));
  ck_assert (g_spawn_check_wait_status (status, &error));
  g_autoptr (SpPlan) plan = sp_plan_load (out, 16, &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert_str_eq (sp_plan_get_meta (plan, "model"), "gpt-1b");
  ck_assert_uint_eq (sp_plan_groups_options (plan)->shard_size, 8);
}
END_TEST

static Suite *
workload_suite (void)
{
  Suite *s = suite_create ("workload");
  TCase *tc = tcase_create ("core");
  tcase_add_test (tc, test_presets);
  tcase_add_test (tc, test_model_json);
  tcase_add_test (tc, test_model_bad);
  tcase_add_test (tc, test_model_deep);
  tcase_add_test (tc, test_ds_config);
  tcase_add_test (tc, test_ds_config_bad);
  tcase_add_test (tc, test_golden_small);
  tcase_add_test (tc, test_ds_config_equals_options);
  tcase_add_test (tc, test_overlap_comm);
  tcase_add_test (tc, test_prefetch_window);
  tcase_add_test (tc, test_hierarchical);
  tcase_add_test (tc, test_hierarchical_sync);
  tcase_add_test (tc, test_reuse_and_persistence);
  tcase_add_test (tc, test_zeropp);
  tcase_add_test (tc, test_moe);
  tcase_add_test (tc, test_cli_output_loads);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  return sp_test_run (workload_suite ());
}
