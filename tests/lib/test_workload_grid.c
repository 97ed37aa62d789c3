/* Which configurations DeepSpeed runs (sp_sharding_deepspeed_verdict), the
 * sweep's grid rules, checked two ways: against DeepSpeed's rules written
 * out here by hand (deepspeed-semantics.md §1.2, §2.4, §4; engine.py's
 * MiCS path), and against the plan builder and the group builder (a
 * configuration said to run must build; one said to be rejected for its
 * groups must fail there; a fallback must give the plan it falls back to).
 * And the DeepSpeed config the sweep emits, read back. */
#include "config.h"
#include "testutil.h"
#include "shardplan/shardplan.h"
#include "shardplan/workload.h"

#include <glib/gstdio.h>
#include <string.h>

static SpDsVerdict
verdict (guint32 W, guint32 D, guint32 S, gboolean hier, guint32 Z, gboolean qwz, gboolean qgz)
{
  SpShardingOptions o;
  sp_sharding_options_init (&o);
  o.shard_size = S;
  o.hierarchical = hier;
  o.hpz_partition_size = Z;
  o.quantized_weights = qwz;
  o.quantized_gradients = qgz;
  g_autofree char *why = NULL;
  SpDsVerdict v = sp_sharding_deepspeed_verdict (&o, W, D, &why);
  ck_assert_msg ((v == SP_DS_RUNS) == (why == NULL), "reason iff not runs");
  return v;
}

START_TEST (test_rules_by_hand)
{
  /* MiCS: S must divide W */
  ck_assert_int_eq (verdict (128, 8, 0, FALSE, 0, FALSE, FALSE), SP_DS_RUNS);
  ck_assert_int_eq (verdict (128, 8, 16, FALSE, 0, FALSE, FALSE), SP_DS_RUNS);
  ck_assert_int_eq (verdict (128, 8, 24, FALSE, 0, FALSE, FALSE), SP_DS_REJECTS);
  ck_assert_int_eq (verdict (128, 8, 256, FALSE, 0, FALSE, FALSE), SP_DS_REJECTS);
  /* hierarchical: S // D >= 2 and S % (S // D) == 0 (§1.2's examples) */
  ck_assert_int_eq (verdict (16, 4, 8, TRUE, 0, FALSE, FALSE), SP_DS_RUNS);     /* worked example */
  ck_assert_int_eq (verdict (48, 16, 24, TRUE, 0, FALSE, FALSE), SP_DS_REJECTS); /* span 1 */
  ck_assert_int_eq (verdict (36, 4, 9, TRUE, 0, FALSE, FALSE), SP_DS_REJECTS);   /* 9 % 2 */
  ck_assert_int_eq (verdict (40, 8, 20, TRUE, 0, FALSE, FALSE), SP_DS_RUNS);     /* n = 10, no error */
  ck_assert_int_eq (verdict (128, 8, 8, TRUE, 0, FALSE, FALSE), SP_DS_REJECTS);  /* one node */
  ck_assert_int_eq (verdict (128, 8, 16, TRUE, 0, FALSE, FALSE), SP_DS_RUNS);    /* S >= 2D */
  ck_assert_int_eq (verdict (128, 8, 128, TRUE, 0, FALSE, FALSE), SP_DS_RUNS);
  ck_assert_int_eq (verdict (8, 1, 8, TRUE, 0, FALSE, FALSE), SP_DS_RUNS);       /* D = 1 */
  /* hpZ: size = min(Z, W), W % size (§2.4); size W is ZeRO-3's partition */
  for (guint32 Z = 2; Z < 128; Z *= 2)
    ck_assert_int_eq (verdict (128, 8, 0, FALSE, Z, FALSE, FALSE), SP_DS_RUNS);
  ck_assert_int_eq (verdict (128, 8, 0, FALSE, 3, FALSE, FALSE), SP_DS_REJECTS);
  ck_assert_int_eq (verdict (128, 8, 0, FALSE, 128, FALSE, FALSE), SP_DS_FALLS_BACK);
  ck_assert_int_eq (verdict (128, 8, 0, FALSE, 1000, FALSE, FALSE), SP_DS_FALLS_BACK);
  ck_assert_int_eq (verdict (128, 8, 0, FALSE, 1, FALSE, FALSE), SP_DS_RUNS); /* 1 = off */
  /* ZeRO++ with MiCS: MiCS_Optimizer takes no ZeRO++ argument */
  ck_assert_int_eq (verdict (128, 8, 64, FALSE, 0, TRUE, FALSE), SP_DS_FALLS_BACK);
  ck_assert_int_eq (verdict (128, 8, 64, FALSE, 8, FALSE, FALSE), SP_DS_FALLS_BACK);
  ck_assert_int_eq (verdict (128, 8, 128, TRUE, 0, FALSE, TRUE), SP_DS_FALLS_BACK);
  ck_assert_int_eq (verdict (128, 8, 128, FALSE, 0, TRUE, TRUE), SP_DS_RUNS); /* S = W flat is ZeRO-3 */
  /* but a MiCS layout DeepSpeed rejects is rejected first */
  ck_assert_int_eq (verdict (128, 8, 8, TRUE, 8, TRUE, FALSE), SP_DS_REJECTS);
  /* qgZ: >= 2 nodes and W % D == 0 for the all-to-all; one node falls back */
  ck_assert_int_eq (verdict (16, 8, 0, FALSE, 0, FALSE, TRUE), SP_DS_RUNS);
  ck_assert_int_eq (verdict (16, 4, 0, FALSE, 0, FALSE, TRUE), SP_DS_RUNS);
  ck_assert_int_eq (verdict (20, 8, 0, FALSE, 0, FALSE, TRUE), SP_DS_REJECTS);
  ck_assert_int_eq (verdict (8, 8, 0, FALSE, 0, FALSE, TRUE), SP_DS_FALLS_BACK);
  ck_assert_int_eq (verdict (12, 8, 0, FALSE, 0, FALSE, TRUE), SP_DS_FALLS_BACK);
  /* all three together on ZeRO-3 */
  ck_assert_int_eq (verdict (128, 8, 0, FALSE, 8, TRUE, TRUE), SP_DS_RUNS);
  ck_assert_int_eq (verdict (128, 8, 0, FALSE, 16, TRUE, TRUE), SP_DS_RUNS);
}
END_TEST

/* A model whose tensors quantize (every numel a multiple of 8·W). */
static void
grid_model (SpModel *m)
{
  GError *error = NULL;
  ck_assert (sp_model_load_data ("{\"name\": \"grid\", \"layers\": 2, \"hidden\": 256, \"heads\": 4,"
                                 " \"vocab\": 1024, \"seq_len\": 64, \"grad_accum\": 2}",
                                 -1, "grid", m, &error));
}

static gboolean
same_ops (const SpPlan *a, const SpPlan *b)
{
  if (sp_plan_n_ops (a) != sp_plan_n_ops (b))
    return FALSE;
  for (guint32 i = 0; i < sp_plan_n_ops (a); i++)
    {
      const SpOp *x = sp_plan_op (a, i), *y = sp_plan_op (b, i);
      if (x->kind != y->kind || x->family != y->family || x->bytes != y->bytes
          || x->stream != y->stream || x->flops != y->flops || strcmp (x->name, y->name) != 0)
        return FALSE;
    }
  return TRUE;
}

START_TEST (test_rules_against_builders)
{
  SpModel m;
  grid_model (&m);
  static const guint32 worlds[][2] = { { 8, 8 }, { 16, 8 }, { 16, 4 }, { 24, 8 }, { 32, 8 }, { 20, 8 } };
  guint n_runs = 0, n_rejects = 0, n_falls = 0;
  for (guint w = 0; w < G_N_ELEMENTS (worlds); w++)
    {
      const guint32 W = worlds[w][0], D = worlds[w][1];
      const guint32 zs[] = { 0, 2, 3, 4, 8, W };
      for (guint32 S = 1; S <= W; S++)
        for (int h = 0; h < 2; h++)
          for (guint zi = 0; zi < G_N_ELEMENTS (zs); zi++)
            for (int q = 0; q < 4; q++)
              {
                SpShardingOptions o;
                sp_sharding_options_init (&o);
                o.shard_size = S;
                o.hierarchical = h;
                o.hpz_partition_size = zs[zi];
                o.quantized_weights = q & 1;
                o.quantized_gradients = (q >> 1) & 1;
                SpWorkloadPlanOptions p;
                sp_workload_plan_options_init (&p);
                p.world_size = W;
                p.devices_per_node = D;
                g_autofree char *why = NULL;
                SpDsVerdict v = sp_sharding_deepspeed_verdict (&o, W, D, &why);
                GError *error = NULL;
                g_autoptr (SpPlan) plan = sp_workload_build_plan (&m, &o, &p, &error);
                SpGroups *groups = plan ? sp_groups_build (sp_plan_groups_options (plan), &error) : NULL;
                gboolean built = groups != NULL;
                sp_groups_free (groups);
                const char *ctx = why ? why : "runs";
                /* qwZ's int8 grouping is the builder's to check (only
                 * reached once the options pass) */
                if (!built && (q & 1) && error && error->code == SP_ERROR_UNSUPPORTED
                    && strstr (error->message, "CUDAQuantizer"))
                  {
                    ck_assert_int_ne (v, SP_DS_REJECTS);
                    g_clear_error (&error);
                    continue;
                  }
                if (v == SP_DS_RUNS)
                  {
                    n_runs++;
                    ck_assert_msg (built, "W %u D %u S %u h %d Z %u q %d: runs but: %s", W, D, S, h,
                                   zs[zi], q, error ? error->message : "?");
                  }
                else if (v == SP_DS_REJECTS)
                  {
                    n_rejects++;
                    /* the builders refuse it too (groups or plan) */
                    ck_assert_msg (!built, "W %u D %u S %u h %d Z %u q %d: %s, but it builds", W, D,
                                   S, h, zs[zi], q, ctx);
                  }
                else
                  {
                    n_falls++;
                    /* it falls back to: MiCS without ZeRO++, ZeRO-3 without
                     * hpZ, or no qgZ.  The builder refuses the MiCS case
                     * (SP_ERROR_UNSUPPORTED); the others build the plan of
                     * the configuration fallen back to. */
                    SpShardingOptions f = o;
                    gboolean mics = (S != W) || h;
                    if (mics)
                      {
                        ck_assert_msg (!built && error && error->code == SP_ERROR_UNSUPPORTED,
                                       "W %u S %u h %d: ZeRO++ with MiCS must be refused", W, S, h);
                      }
                    else
                      {
                        ck_assert_msg (built, "W %u Z %u q %d: %s", W, zs[zi], q,
                                       error ? error->message : "?");
                        if (f.hpz_partition_size >= W)
                          f.hpz_partition_size = 0;
                        if (W / D < 2)
                          f.quantized_gradients = FALSE;
                        ck_assert_int_eq (sp_sharding_deepspeed_verdict (&f, W, D, NULL), SP_DS_RUNS);
                        g_autoptr (SpPlan) fp = sp_workload_build_plan (&m, &f, &p, NULL);
                        ck_assert (fp != NULL);
                        /* hpZ at W renames gathers to the zero_param family
                         * of one group = the world: same sizes and count */
                        if (f.hpz_partition_size == o.hpz_partition_size)
                          ck_assert_msg (same_ops (plan, fp), "W %u q %d: fallback plan differs", W, q);
                        else
                          ck_assert_uint_eq (sp_plan_n_ops (plan), sp_plan_n_ops (fp));
                      }
                  }
                g_clear_error (&error);
              }
    }
  ck_assert_uint_gt (n_runs, 100);
  ck_assert_uint_gt (n_rejects, 100);
  ck_assert_uint_gt (n_falls, 100);
}
END_TEST

/* The emitted DeepSpeed config reads back into the same options and the
 * same plan, with no warning. */
START_TEST (test_dsconfig_round_trip)
{
  SpModel m;
  grid_model (&m);
  const guint32 W = 16, D = 8;
  for (int c = 0; c < 7; c++)
    {
      SpShardingOptions o;
      sp_sharding_options_init (&o);
      SpModel mm = m;
      switch (c)
        {
        case 0: break;                                                         /* ZeRO-3 */
        case 1: o.shard_size = 4; break;                                       /* MiCS */
        case 2: o.shard_size = 16; o.hierarchical = TRUE; break;               /* S = W hier */
        case 3: o.quantized_weights = TRUE; o.hpz_partition_size = 8; break;   /* qwZ + hpZ */
        case 4: o.quantized_gradients = TRUE; mm.micro_batch = 4; mm.grad_accum = 3; break;
        case 5: o.reduce_bucket_size = 12345; o.prefetch_bucket_size = 777; mm.dtype = SP_DTYPE_FLOAT16;
                o.max_reuse_distance = 0; o.param_persistence_threshold = 0; break;
        case 6: o.overlap_comm = FALSE; o.max_live_parameters = 4321;          /* the schedule's keys */
                o.contiguous_gradients = FALSE; break;
        }
      g_autofree char *json = sp_deepspeed_config_to_json (&o, &mm, W);
      ck_assert (g_str_has_suffix (json, "}\n"));
      SpShardingOptions back;
      sp_sharding_options_init (&back);
      SpModel mb = m;
      mb.micro_batch = 99;
      mb.grad_accum = 99;
      g_auto (GStrv) warnings = NULL;
      GError *error = NULL;
      ck_assert_msg (sp_deepspeed_config_apply (json, -1, "emitted", &back, &mb, &warnings, &error),
                     "%s", error ? error->message : "");
      ck_assert_msg (warnings == NULL || warnings[0] == NULL, "warning: %s", warnings[0]);
      ck_assert_uint_eq (back.zero_stage, 3);
      ck_assert_uint_eq (back.shard_size ? back.shard_size : W, o.shard_size ? o.shard_size : W);
      ck_assert_int_eq (back.hierarchical, o.hierarchical);
      ck_assert_uint_eq (back.hpz_partition_size > 1 ? back.hpz_partition_size : 0,
                         o.hpz_partition_size > 1 ? o.hpz_partition_size : 0);
      ck_assert_int_eq (back.quantized_weights, o.quantized_weights);
      ck_assert_int_eq (back.quantized_gradients, o.quantized_gradients);
      ck_assert_uint_eq (back.reduce_bucket_size, o.reduce_bucket_size);
      ck_assert_uint_eq (back.prefetch_bucket_size, o.prefetch_bucket_size);
      ck_assert_uint_eq (back.max_reuse_distance, o.max_reuse_distance);
      ck_assert_uint_eq (back.param_persistence_threshold, o.param_persistence_threshold);
      ck_assert_uint_eq (back.allgather_bucket_size, o.allgather_bucket_size);
      ck_assert_uint_eq (back.max_live_parameters, o.max_live_parameters);
      ck_assert_int_eq (back.overlap_comm, o.overlap_comm);
      ck_assert_int_eq (back.contiguous_gradients, o.contiguous_gradients);
      ck_assert_uint_eq (mb.micro_batch, mm.micro_batch);
      ck_assert_uint_eq (mb.grad_accum, mm.grad_accum);
      ck_assert_int_eq (mb.dtype, mm.dtype);
      SpWorkloadPlanOptions p;
      sp_workload_plan_options_init (&p);
      p.world_size = W;
      p.devices_per_node = D;
      g_autoptr (SpPlan) a = sp_workload_build_plan (&mm, &o, &p, &error);
      SP_ASSERT_NO_ERROR (error);
      g_autoptr (SpPlan) b = sp_workload_build_plan (&mb, &back, &p, &error);
      SP_ASSERT_NO_ERROR (error);
      ck_assert_msg (sp_plan_equal (a, b), "case %d: the plan read back differs", c);
    }
}
END_TEST

/* The expert-parallel axis: DeepSpeed's two divisibility rules
 * (moe/layer.py: experts % ep; groups.py: W % ep), by hand and against the
 * builders — an accepted size builds a plan whose expert family has ep
 * ranks per group; a rejected one fails in the plan builder or the group
 * builder. */
START_TEST (test_expert_parallel_rules)
{
  SpModel m, dense;
  GError *error = NULL;
  ck_assert (sp_model_load_data ("{\"name\": \"moe12\", \"layers\": 2, \"hidden\": 64, \"heads\": 4,"
                                 " \"vocab\": 256, \"seq_len\": 32,"
                                 " \"moe\": {\"experts\": 12, \"every\": 2, \"top_k\": 2}}",
                                 -1, "moe12", &m, &error));
  grid_model (&dense);
  const guint32 W = 8, D = 4;
  /* 12 experts on 8 ranks: 1, 2, 4 run; 3, 6, 12 leave ranks over; 8 does
   * not divide the experts */
  const SpDsVerdict want[13] = { [1] = SP_DS_RUNS,    [2] = SP_DS_RUNS,    [3] = SP_DS_REJECTS,
                                 [4] = SP_DS_RUNS,    [5] = SP_DS_REJECTS, [6] = SP_DS_REJECTS,
                                 [7] = SP_DS_REJECTS, [8] = SP_DS_REJECTS, [9] = SP_DS_REJECTS,
                                 [10] = SP_DS_REJECTS, [11] = SP_DS_REJECTS, [12] = SP_DS_REJECTS };
  for (guint32 ep = 1; ep <= 12; ep++)
    {
      g_autofree char *why = NULL;
      SpDsVerdict v = sp_expert_parallel_deepspeed_verdict (ep, &m, W, &why);
      ck_assert_msg (v == want[ep], "ep %u: verdict %d", ep, v);
      ck_assert_msg ((v == SP_DS_RUNS) == (why == NULL), "ep %u: reason iff not runs", ep);
      if (ep == 8)
        ck_assert (strstr (why, "number of experts") != NULL);
      if (ep == 3)
        ck_assert (strstr (why, "divide the world") != NULL);
      SpShardingOptions o;
      sp_sharding_options_init (&o);
      o.expert_parallel = ep;
      SpWorkloadPlanOptions p;
      sp_workload_plan_options_init (&p);
      p.world_size = W;
      p.devices_per_node = D;
      g_autoptr (SpPlan) plan = sp_workload_build_plan (&m, &o, &p, &error);
      g_autoptr (SpGroups) g = plan ? sp_groups_build (sp_plan_groups_options (plan), &error) : NULL;
      ck_assert_msg ((g != NULL) == (v == SP_DS_RUNS), "ep %u: builders %s the verdict", ep,
                     g ? "contradict" : error->message);
      g_clear_error (&error);
      if (g && ep > 1)
        {
          ck_assert_uint_eq (sp_groups_n_groups (g, SP_FAMILY_EXPERT), W / ep);
          guint32 n = 0;
          sp_groups_members (g, SP_FAMILY_EXPERT, 0, &n);
          ck_assert_uint_eq (n, ep);
        }
    }
  g_autofree char *why = NULL;
  ck_assert_int_eq (sp_expert_parallel_deepspeed_verdict (1, &dense, W, NULL), SP_DS_RUNS);
  ck_assert_int_eq (sp_expert_parallel_deepspeed_verdict (2, &dense, W, &why), SP_DS_REJECTS);
  ck_assert (strstr (why, "no MoE layer") != NULL);
}
END_TEST

/* sweep --deepspeed-config: the step-model keys are read, the grid's keys
 * are named and not applied (not even checked), the stage is 3. */
START_TEST (test_dsconfig_knobs)
{
  g_autoptr (SpTestDir) dir = sp_test_tmpdir ();
  g_autofree char *path = g_build_filename (dir, "ds.json", NULL);
  const char *text =
    "{\"train_micro_batch_size_per_gpu\": 4, \"gradient_accumulation_steps\": \"auto\",\n"
    " \"fp16\": {\"enabled\": true},\n"
    " \"zero_optimization\": {\"stage\": 2, \"mics_shard_size\": 8, \"zero_hpz_partition_size\": \"x\",\n"
    "   \"overlap_comm\": false, \"contiguous_gradients\": false, \"reduce_bucket_size\": 2e6,\n"
    "   \"stage3_prefetch_bucket_size\": 12345, \"stage3_max_live_parameters\": 3e8,\n"
    "   \"stage3_max_reuse_distance\": 0, \"stage3_param_persistence_threshold\": 10}}\n";
  ck_assert (g_file_set_contents (path, text, -1, NULL));
  SpModel m;
  grid_model (&m);
  const guint32 mb = m.micro_batch, ga = m.grad_accum;
  SpShardingOptions o;
  sp_sharding_options_init (&o);
  o.hierarchical = TRUE; /* the caller's layout survives */
  g_auto (GStrv) over = NULL, warnings = NULL;
  GError *error = NULL;
  ck_assert_msg (sp_deepspeed_config_apply_knobs_file (path, &o, &m, &over, &warnings, &error), "%s",
                 error ? error->message : "");
  ck_assert_uint_eq (g_strv_length (over), 5);
  const char *names[] = { "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
                          "zero_optimization.stage", "zero_optimization.mics_shard_size",
                          "zero_optimization.zero_hpz_partition_size" };
  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    ck_assert_msg (g_strv_contains ((const char *const *) over, names[i]), "%s", names[i]);
  ck_assert (warnings == NULL || warnings[0] == NULL);
  ck_assert_uint_eq (o.zero_stage, 3);
  ck_assert_uint_eq (o.shard_size, 0);
  ck_assert (o.hierarchical);
  ck_assert_uint_eq (m.micro_batch, mb);
  ck_assert_uint_eq (m.grad_accum, ga);
  ck_assert_int_eq (m.dtype, SP_DTYPE_FLOAT16);
  ck_assert (!o.overlap_comm && !o.contiguous_gradients);
  ck_assert_uint_eq (o.reduce_bucket_size, 2000000);
  ck_assert_uint_eq (o.prefetch_bucket_size, 12345);
  ck_assert_uint_eq (o.max_live_parameters, 300000000);
  ck_assert_uint_eq (o.max_reuse_distance, 0);
  ck_assert_uint_eq (o.param_persistence_threshold, 10);
  /* a step-model key of the wrong type is still an error naming it */
  ck_assert (g_file_set_contents (path, "{\"zero_optimization\": {\"overlap_comm\": 3}}", -1, NULL));
  SpShardingOptions before = o;
  ck_assert (!sp_deepspeed_config_apply_knobs_file (path, &o, &m, NULL, NULL, &error));
  ck_assert_msg (strstr (error->message, "overlap_comm") != NULL, "%s", error->message);
  g_clear_error (&error);
  ck_assert (memcmp (&before, &o, sizeof o) == 0);
  /* a plain ZeRO-3 config overrides nothing: stage 3 is what is planned */
  ck_assert (g_file_set_contents (path, "{\"zero_optimization\": {\"stage\": 3, \"overlap_comm\": true}}",
                                  -1, NULL));
  g_strfreev (over);
  over = NULL;
  ck_assert (sp_deepspeed_config_apply_knobs_file (path, &o, &m, &over, NULL, &error));
  ck_assert (over != NULL && over[0] == NULL);
  ck_assert (o.overlap_comm);
}
END_TEST

static Suite *
grid_suite (void)
{
  Suite *s = suite_create ("workload_grid");
  TCase *tc = tcase_create ("core");
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_rules_by_hand);
  tcase_add_test (tc, test_rules_against_builders);
  tcase_add_test (tc, test_dsconfig_round_trip);
  tcase_add_test (tc, test_expert_parallel_rules);
  tcase_add_test (tc, test_dsconfig_knobs);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  return sp_test_run (grid_suite ());
}
