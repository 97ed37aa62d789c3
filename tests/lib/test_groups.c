/* Group families against the worked examples, unit-test cases and error
 * cases of shared/reference/deepspeed-semantics.md §1–§2 (expected rank
 * lists are copied from the reference, or hand-derived from the DeepSpeed
 * code it quotes where the reference abbreviates with "…"). */
#include "config.h"
#include "groups-testutil.h"

static SpGroups *
build_ok (const SpGroupsOptions *o)
{
  GError *error = NULL;
  SpGroups *g = sp_groups_build (o, &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert_ptr_nonnull (g);
  return g;
}

/* Build, expect `code`, and that the message contains `needle`. */
static void
build_fails (const SpGroupsOptions *o, int code, const char *needle)
{
  GError *error = NULL;
  SpGroups *g = sp_groups_build (o, &error);
  ck_assert_ptr_null (g);
  SP_ASSERT_ERROR (error, code);
  ck_assert_msg (strstr (error->message, needle) != NULL, "message '%s' lacks '%s'",
                 error->message, needle);
  ck_assert_msg (strchr (error->message, '\n') == NULL, "message is not one line");
  g_error_free (error);
}

static SpGroupsOptions
opts_w (guint32 world)
{
  SpGroupsOptions o;
  sp_groups_options_init (&o);
  o.world_size = world;
  return o;
}

/* ---- names and options ---------------------------------------------------- */

START_TEST (test_family_names)
{
  static const char *const names[SP_FAMILY_N] = {
    "shard", "replicate", "shard_intra_node", "shard_inter_node", "expert", "expert_data",
    "tensor", "data", "zero_param", "local_all_to_all.local", "local_all_to_all.global", "world",
  };
  for (int f = 0; f < SP_FAMILY_N; f++)
    {
      ck_assert_str_eq (sp_family_name ((SpFamily) f), names[f]);
      SpFamily back = SP_FAMILY_NONE;
      ck_assert (sp_family_from_name (names[f], &back));
      ck_assert_int_eq (back, f);
    }
  SpFamily untouched = SP_FAMILY_NONE;
  ck_assert (!sp_family_from_name ("local_all_to_all", &untouched));
  ck_assert (!sp_family_from_name ("Shard", &untouched));
  ck_assert (!sp_family_from_name (NULL, &untouched));
  ck_assert_int_eq (untouched, SP_FAMILY_NONE);
  ck_assert_ptr_null (sp_family_name (SP_FAMILY_N));
  ck_assert_ptr_null (sp_family_name (SP_FAMILY_NONE));
}
END_TEST

START_TEST (test_options_init)
{
  SpGroupsOptions o;
  memset (&o, 0xab, sizeof o);
  sp_groups_options_init (&o);
  ck_assert_uint_eq (o.devices_per_node, 8);
  ck_assert_uint_eq (o.world_size, 0);
  ck_assert_uint_eq (o.shard_size, 0);
  ck_assert (!o.hierarchical && !o.data_before_expert && !o.local_all_to_all);
  ck_assert_uint_eq (o.tensor_parallel + o.pipeline_parallel + o.expert_parallel
                     + o.zero_param_group_size, 0);
}
END_TEST

START_TEST (test_bad_input)
{
  SpGroupsOptions o = opts_w (0);
  build_fails (&o, SP_ERROR_INVALID_ARGUMENT, "world size 0");
  o = opts_w (8);
  o.devices_per_node = 0;
  build_fails (&o, SP_ERROR_INVALID_ARGUMENT, "devices per node 0");
  o = opts_w (2147483649u);
  build_fails (&o, SP_ERROR_INVALID_ARGUMENT, "world size 2147483649 is too large");
  o = opts_w (8);
  o.shard_size = 4000000000u;
  build_fails (&o, SP_ERROR_INVALID_ARGUMENT, "shard size 4000000000 is too large");
  o = opts_w (8);
  o.pipeline_parallel = 2147483650u;
  build_fails (&o, SP_ERROR_INVALID_ARGUMENT, "pipeline-parallel size 2147483650");
  o = opts_w (8);
  o.hierarchical = TRUE;
  build_fails (&o, SP_ERROR_INVALID_ARGUMENT, "needs a MiCS shard size");
  o = opts_w (8);
  o.data_before_expert = TRUE;
  build_fails (&o, SP_ERROR_INVALID_ARGUMENT, "needs an expert-parallel size");
}
END_TEST

START_TEST (test_world_only)
{
  SpGroupsOptions o = opts_w (5);
  g_autoptr (SpGroups) g = build_ok (&o);
  ck_assert_uint_eq (sp_groups_world_size (g), 5);
  ck_assert (sp_groups_options (g)->devices_per_node == 8);
  for (int f = 0; f < SP_FAMILY_N; f++)
    ck_assert_int_eq (sp_groups_has_family (g, (SpFamily) f), f == SP_FAMILY_WORLD);
  ck_assert (!sp_groups_has_family (g, SP_FAMILY_NONE));
  GT_ASSERT_FAMILY (g, SP_FAMILY_WORLD, "[0,1,2,3,4]");
  ck_assert_ptr_null (sp_groups_label (g, SP_FAMILY_WORLD, 0));
  ck_assert_uint_eq (sp_groups_n_created (g), 0); /* world is not created */
  ck_assert_uint_eq (sp_groups_n_groups (g, SP_FAMILY_SHARD), 0);
  guint32 idx = 99, gr = 99;
  ck_assert (sp_groups_find (g, SP_FAMILY_WORLD, 3, &idx, &gr));
  ck_assert_uint_eq (idx, 0);
  ck_assert_uint_eq (gr, 3);
  ck_assert (!sp_groups_find (g, SP_FAMILY_WORLD, 5, &idx, &gr));
  ck_assert (!sp_groups_find (g, SP_FAMILY_SHARD, 0, &idx, &gr));
  ck_assert_uint_eq (gt_n_warnings (g), 0);
}
END_TEST

/* ---- MiCS (§1) ------------------------------------------------------------ */

START_TEST (test_mics_worked_example)
{
  SpGroupsOptions o = opts_w (16);
  o.devices_per_node = 4;
  o.shard_size = 8;
  o.hierarchical = TRUE;
  g_autoptr (SpGroups) g = build_ok (&o);
  GT_ASSERT_FAMILY (g, SP_FAMILY_SHARD, "[0,1,2,3,4,5,6,7] [8,9,10,11,12,13,14,15]");
  GT_ASSERT_FAMILY (g, SP_FAMILY_REPLICATE,
                    "[0,8] [1,9] [2,10] [3,11] [4,12] [5,13] [6,14] [7,15]");
  GT_ASSERT_FAMILY (g, SP_FAMILY_SHARD_INTRA_NODE,
                    "[0,1,2,3] [4,5,6,7] [8,9,10,11] [12,13,14,15]");
  GT_ASSERT_FAMILY (g, SP_FAMILY_SHARD_INTER_NODE,
                    "[0,4] [1,5] [2,6] [3,7] [8,12] [9,13] [10,14] [11,15]");
  GT_ASSERT_CREATED (g, "shard[0..1] replicate[0..7] shard_intra_node[0..3] shard_inter_node[0..7]");
  static const guint32 shard_rank[16] = { 0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7 };
  static const guint32 repli_rank[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1 };
  for (guint32 r = 0; r < 16; r++)
    {
      guint32 idx, gr;
      ck_assert (sp_groups_find (g, SP_FAMILY_SHARD, r, &idx, &gr));
      ck_assert_uint_eq (gr, shard_rank[r]);
      ck_assert_uint_eq (idx, r / 8);
      ck_assert (sp_groups_find (g, SP_FAMILY_REPLICATE, r, &idx, &gr));
      ck_assert_uint_eq (gr, repli_rank[r]);
      ck_assert_uint_eq (idx, r % 8);
    }
  ck_assert_uint_eq (gt_n_warnings (g), 0);
  ck_assert_ptr_null (sp_groups_label (g, SP_FAMILY_SHARD, 0));
}
END_TEST

START_TEST (test_mics_flat_span0)
{
  SpGroupsOptions o = opts_w (8);
  o.shard_size = 4; /* D = 8: span 0, fine without hierarchy */
  g_autoptr (SpGroups) g = build_ok (&o);
  GT_ASSERT_FAMILY (g, SP_FAMILY_SHARD, "[0,1,2,3] [4,5,6,7]");
  GT_ASSERT_FAMILY (g, SP_FAMILY_REPLICATE, "[0,4] [1,5] [2,6] [3,7]");
  ck_assert (!sp_groups_has_family (g, SP_FAMILY_SHARD_INTRA_NODE));
  ck_assert (!sp_groups_has_family (g, SP_FAMILY_SHARD_INTER_NODE));
  GT_ASSERT_CREATED (g, "shard[0..1] replicate[0..3]");
  o.hierarchical = TRUE;
  build_fails (&o, SP_ERROR_INVALID_GROUPS, "shard size 4 // 8 devices per node = 0");
}
END_TEST

START_TEST (test_mics_s_equals_w)
{
  SpGroupsOptions o = opts_w (4);
  o.shard_size = 4;
  g_autoptr (SpGroups) g = build_ok (&o);
  GT_ASSERT_FAMILY (g, SP_FAMILY_SHARD, "[0,1,2,3]");
  GT_ASSERT_FAMILY (g, SP_FAMILY_REPLICATE, "[0] [1] [2] [3]");
  GT_ASSERT_CREATED (g, "shard[0]"); /* only one communicator */
  for (guint32 r = 0; r < 4; r++)
    {
      guint32 idx, gr, size;
      ck_assert (sp_groups_find (g, SP_FAMILY_REPLICATE, r, &idx, &gr));
      ck_assert_uint_eq (gr, 0);
      sp_groups_members (g, SP_FAMILY_REPLICATE, idx, &size);
      ck_assert_uint_eq (size, 1);
    }
}
END_TEST

START_TEST (test_mics_d1_hierarchical)
{
  SpGroupsOptions o = opts_w (8);
  o.devices_per_node = 1;
  o.shard_size = 8;
  o.hierarchical = TRUE;
  g_autoptr (SpGroups) g = build_ok (&o);
  GT_ASSERT_FAMILY (g, SP_FAMILY_SHARD_INTRA_NODE, "[0] [1] [2] [3] [4] [5] [6] [7]");
  GT_ASSERT_FAMILY (g, SP_FAMILY_SHARD_INTER_NODE, "[0,1,2,3,4,5,6,7]");
  GT_ASSERT_CREATED (g, "shard[0] shard_intra_node[0..7] shard_inter_node[0]");
  ck_assert_uint_eq (gt_n_warnings (g), 0);
}
END_TEST

START_TEST (test_mics_rejected)
{
  SpGroupsOptions o = opts_w (64);
  o.shard_size = 24;
  build_fails (&o, SP_ERROR_INVALID_GROUPS, "shard size 24 does not divide world size 64");
  o = opts_w (48); /* S=24, D=16: span 1 */
  o.devices_per_node = 16;
  o.shard_size = 24;
  { g_autoptr (SpGroups) flat = build_ok (&o); }
  o.hierarchical = TRUE;
  build_fails (&o, SP_ERROR_INVALID_GROUPS, "shard size 24 // 16 devices per node = 1");
  o = opts_w (18); /* S=9, D=4: span 2, 9 % 2 != 0 */
  o.devices_per_node = 4;
  o.shard_size = 9;
  o.hierarchical = TRUE;
  build_fails (&o, SP_ERROR_INVALID_GROUPS, "shard size 9 is not divisible by its node span 2");
  o = opts_w (16);
  o.shard_size = 32; /* larger than the world */
  build_fails (&o, SP_ERROR_INVALID_GROUPS, "shard size 32 does not divide world size 16");
}
END_TEST

START_TEST (test_mics_straddling_nodes)
{
  SpGroupsOptions o = opts_w (40);
  o.shard_size = 20; /* D = 8: span 2, n_gpu_per_node 10 */
  o.hierarchical = TRUE;
  g_autoptr (SpGroups) g = build_ok (&o);
  GT_ASSERT_FAMILY (g, SP_FAMILY_SHARD_INTRA_NODE,
                    "[0,1,2,3,4,5,6,7,8,9] [10,11,12,13,14,15,16,17,18,19] "
                    "[20,21,22,23,24,25,26,27,28,29] [30,31,32,33,34,35,36,37,38,39]");
  GT_ASSERT_FAMILY (g, SP_FAMILY_SHARD_INTER_NODE,
                    "[0,10] [1,11] [2,12] [3,13] [4,14] [5,15] [6,16] [7,17] [8,18] [9,19] "
                    "[20,30] [21,31] [22,32] [23,33] [24,34] [25,35] [26,36] [27,37] [28,38] "
                    "[29,39]");
  ck_assert_uint_eq (gt_n_warnings (g), 1);
  const char *w = sp_groups_warnings (g)[0];
  ck_assert_msg (strstr (w, "have 10 ranks") && strstr (w, "straddle"), "warning: %s", w);
  ck_assert (strchr (w, '\n') == NULL);
}
END_TEST

/* ---- expert groups with tensor parallelism (§2.1, §2.3) ------------------- */

static SpGroupsOptions
opts_expert (guint32 w, guint32 tp, guint32 ep, guint32 pp, gboolean de)
{
  SpGroupsOptions o = opts_w (w);
  o.tensor_parallel = tp;
  o.expert_parallel = ep;
  o.pipeline_parallel = pp;
  o.data_before_expert = de;
  return o;
}

START_TEST (test_expert_tp_unit_test_row)
{
  SpGroupsOptions o = opts_expert (16, 2, 4, 1, FALSE);
  g_autoptr (SpGroups) g = build_ok (&o);
  GT_ASSERT_FAMILY (g, SP_FAMILY_EXPERT, "[0,2,4,6] [8,10,12,14] [1,3,5,7] [9,11,13,15]");
  GT_ASSERT_FAMILY (g, SP_FAMILY_EXPERT_DATA,
                    "[0,8] [2,10] [4,12] [6,14] [1,9] [3,11] [5,13] [7,15]");
  /* the TP mesh first, then EP before EDP */
  GT_ASSERT_CREATED (g, "data[0..1] tensor[0..7] expert[0..3] expert_data[0..7]");
  for (guint32 k = 0; k < 4; k++)
    ck_assert_str_eq (sp_groups_label (g, SP_FAMILY_EXPERT, k), "ep_size_4");
  ck_assert_str_eq (sp_groups_label (g, SP_FAMILY_EXPERT_DATA, 7), "ep_size_4");
}
END_TEST

START_TEST (test_expert_tp_data_before_expert)
{
  SpGroupsOptions o = opts_expert (16, 2, 4, 1, TRUE);
  g_autoptr (SpGroups) g = build_ok (&o);
  GT_ASSERT_FAMILY (g, SP_FAMILY_EXPERT, "[0,4,8,12] [2,6,10,14] [1,5,9,13] [3,7,11,15]");
  GT_ASSERT_FAMILY (g, SP_FAMILY_EXPERT_DATA,
                    "[0,2] [4,6] [8,10] [12,14] [1,3] [5,7] [9,11] [13,15]");
}
END_TEST

START_TEST (test_expert_tp_pipeline)
{
  SpGroupsOptions o = opts_expert (16, 2, 2, 2, FALSE);
  g_autoptr (SpGroups) g = build_ok (&o);
  GT_ASSERT_FAMILY (g, SP_FAMILY_EXPERT,
                    "[0,2] [4,6] [1,3] [5,7] [8,10] [12,14] [9,11] [13,15]");
  /* the reference lists the first five; the rest follow stage 1 the same way */
  GT_ASSERT_FAMILY (g, SP_FAMILY_EXPERT_DATA,
                    "[0,4] [2,6] [1,5] [3,7] [8,12] [10,14] [9,13] [11,15]");
  GT_ASSERT_CREATED (g, "data[0..1] tensor[0..7] expert[0..7] expert_data[0..7]");
}
END_TEST

START_TEST (test_expert_tp_w32_lane_order)
{
  SpGroupsOptions o = opts_expert (32, 2, 8, 0, TRUE);
  g_autoptr (SpGroups) g = build_ok (&o);
  /* lane orders [0,4,…,28,2,6,…,30] and [1,5,…,29,3,7,…,31], cut in chunks of 8 */
  GT_ASSERT_FAMILY (g, SP_FAMILY_EXPERT,
                    "[0,4,8,12,16,20,24,28] [2,6,10,14,18,22,26,30] "
                    "[1,5,9,13,17,21,25,29] [3,7,11,15,19,23,27,31]");
  GT_ASSERT_FAMILY (g, SP_FAMILY_EXPERT_DATA,
                    "[0,2] [4,6] [8,10] [12,14] [16,18] [20,22] [24,26] [28,30] "
                    "[1,3] [5,7] [9,11] [13,15] [17,19] [21,23] [25,27] [29,31]");
}
END_TEST

START_TEST (test_expert_tp_rejected)
{
  SpGroupsOptions o = opts_expert (16, 2, 3, 1, FALSE);
  build_fails (&o, SP_ERROR_INVALID_GROUPS,
               "data-parallel size 8 (world size 16 / (tensor 2 x pipeline 1)) is not divisible "
               "by expert-parallel size 3");
  o = opts_expert (16, 2, 1, 3, FALSE);
  build_fails (&o, SP_ERROR_INVALID_GROUPS,
               "world size 16 is not divisible by tensor-parallel size 2 x pipeline-parallel "
               "size 3 = 6");
  o = opts_expert (12, 8, 1, 1, FALSE);
  build_fails (&o, SP_ERROR_INVALID_GROUPS,
               "world size 12 is not divisible by tensor-parallel size 8");
  o = opts_expert (8, 2, 8, 1, FALSE); /* dp 4 < ep 8 */
  build_fails (&o, SP_ERROR_INVALID_GROUPS, "data-parallel size 4");
}
END_TEST

/* ---- expert groups without tensor parallelism (§2.2) ---------------------- */

START_TEST (test_expert_docstring)
{
  SpGroupsOptions o = opts_expert (16, 0, 2, 0, FALSE);
  g_autoptr (SpGroups) g = build_ok (&o);
  GT_ASSERT_FAMILY (g, SP_FAMILY_EXPERT,
                    "[0,1] [2,3] [4,5] [6,7] [8,9] [10,11] [12,13] [14,15]");
  GT_ASSERT_FAMILY (g, SP_FAMILY_EXPERT_DATA,
                    "[0,2,4,6,8,10,12,14] [1,3,5,7,9,11,13,15]");
  GT_ASSERT_CREATED (g, "expert_data[0..1] expert[0..7]"); /* EDP first */
  ck_assert (!sp_groups_has_family (g, SP_FAMILY_TENSOR));
  ck_assert_str_eq (sp_groups_label (g, SP_FAMILY_EXPERT, 3), "ep_size_2");
}
END_TEST

START_TEST (test_expert_pipeline_w8)
{
  SpGroupsOptions o = opts_expert (8, 0, 2, 2, FALSE);
  g_autoptr (SpGroups) ed = build_ok (&o);
  GT_ASSERT_FAMILY (ed, SP_FAMILY_EXPERT_DATA, "[0,2] [1,3] [4,6] [5,7]");
  GT_ASSERT_FAMILY (ed, SP_FAMILY_EXPERT, "[0,1] [2,3] [4,5] [6,7]");
  GT_ASSERT_CREATED (ed, "expert_data[0..3] expert[0..3]");
  o.data_before_expert = TRUE;
  g_autoptr (SpGroups) de = build_ok (&o);
  GT_ASSERT_FAMILY (de, SP_FAMILY_EXPERT_DATA, "[0,1] [2,3] [4,5] [6,7]");
  GT_ASSERT_FAMILY (de, SP_FAMILY_EXPERT, "[0,2] [1,3] [4,6] [5,7]");
  ck_assert_uint_eq (gt_n_warnings (de), 0);
}
END_TEST

START_TEST (test_expert_pipeline_rejected)
{
  SpGroupsOptions o = opts_expert (4, 0, 1, 8, FALSE); /* pp > W */
  build_fails (&o, SP_ERROR_INVALID_GROUPS, "pipeline-parallel size 8 exceeds world size 4");
  o = opts_expert (16, 0, 3, 2, FALSE);
  build_fails (&o, SP_ERROR_INVALID_GROUPS,
               "pipeline stage size 8 (world size 16 // pipeline 2) is not divisible by "
               "expert-parallel size 3");
  /* W % pp unchecked by DeepSpeed: stage 3 of 10 ranks -> stages at 0,3,6,9;
   * the last one names ranks 10..11 (torch new_group rejects them) */
  o = opts_expert (10, 0, 3, 3, FALSE);
  build_fails (&o, SP_ERROR_INVALID_GROUPS, "names ranks 10..11 past the world");
}
END_TEST

START_TEST (test_expert_pipeline_not_dividing)
{
  /* W=10, pp=4: stage size 2 divides 10, so DeepSpeed builds 5 stages */
  SpGroupsOptions o = opts_expert (10, 0, 2, 4, FALSE);
  g_autoptr (SpGroups) g = build_ok (&o);
  GT_ASSERT_FAMILY (g, SP_FAMILY_EXPERT_DATA, "[0] [1] [2] [3] [4] [5] [6] [7] [8] [9]");
  GT_ASSERT_FAMILY (g, SP_FAMILY_EXPERT, "[0,1] [2,3] [4,5] [6,7] [8,9]");
  ck_assert_uint_eq (gt_n_warnings (g), 1);
  ck_assert (strstr (sp_groups_warnings (g)[0], "5 pipeline stages of 2 ranks"));
}
END_TEST

/* ---- TP mesh, hpZ (§2.4) -------------------------------------------------- */

START_TEST (test_tp_mesh)
{
  SpGroupsOptions o = opts_w (8);
  o.tensor_parallel = 2;
  g_autoptr (SpGroups) g = build_ok (&o);
  GT_ASSERT_FAMILY (g, SP_FAMILY_TENSOR, "[0,1] [2,3] [4,5] [6,7]");
  GT_ASSERT_FAMILY (g, SP_FAMILY_DATA, "[0,2,4,6] [1,3,5,7]");
  GT_ASSERT_CREATED (g, "data[0..1] tensor[0..3]");
  ck_assert (!sp_groups_has_family (g, SP_FAMILY_EXPERT));
  o.tensor_parallel = 3;
  build_fails (&o, SP_ERROR_INVALID_GROUPS,
               "world size 8 is not divisible by tensor-parallel size 3");
  o.tensor_parallel = 16;
  build_fails (&o, SP_ERROR_INVALID_GROUPS,
               "world size 8 is not divisible by tensor-parallel size 16");
}
END_TEST

START_TEST (test_zero_param)
{
  SpGroupsOptions o = opts_w (16);
  o.zero_param_group_size = 4;
  g_autoptr (SpGroups) g = build_ok (&o);
  GT_ASSERT_FAMILY (g, SP_FAMILY_ZERO_PARAM,
                    "[0,1,2,3] [4,5,6,7] [8,9,10,11] [12,13,14,15]");
  GT_ASSERT_CREATED (g, "zero_param[0..3]");
  o = opts_w (4);
  o.zero_param_group_size = 32; /* min(32, 4) = 4 */
  g_autoptr (SpGroups) big = build_ok (&o);
  GT_ASSERT_FAMILY (big, SP_FAMILY_ZERO_PARAM, "[0,1,2,3]");
  o = opts_w (12);
  o.zero_param_group_size = 8;
  build_fails (&o, SP_ERROR_INVALID_GROUPS,
               "world size 12 is not divisible by the ZeRO++ hpZ group size 8");
}
END_TEST

/* ---- local all-to-all (§2.4) ---------------------------------------------- */

START_TEST (test_a2a_w16_d4)
{
  SpGroupsOptions o = opts_w (16);
  o.devices_per_node = 4;
  o.local_all_to_all = TRUE;
  g_autoptr (SpGroups) g = build_ok (&o);
  GT_ASSERT_FAMILY (g, SP_FAMILY_A2A_LOCAL, "[0,1,2,3] [4,5,6,7] [8,9,10,11] [12,13,14,15]");
  GT_ASSERT_FAMILY (g, SP_FAMILY_A2A_GLOBAL, "[0,4,8,12] [1,5,9,13] [2,6,10,14] [3,7,11,15]");
  GT_ASSERT_CREATED (g, "local_all_to_all.local[0..3] local_all_to_all.global[0..3]");
  for (guint32 i = 0; i < 4; i++)
    {
      g_autofree char *l = g_strdup_printf ("local_%u", i);
      g_autofree char *gl = g_strdup_printf ("global_%u", i);
      ck_assert_str_eq (sp_groups_label (g, SP_FAMILY_A2A_LOCAL, i), l);
      ck_assert_str_eq (sp_groups_label (g, SP_FAMILY_A2A_GLOBAL, i), gl);
    }
  ck_assert_uint_eq (gt_n_warnings (g), 0);
}
END_TEST

START_TEST (test_a2a_labels_many)
{
  SpGroupsOptions o = opts_w (96); /* 12 nodes of 8: labels with two digits */
  o.local_all_to_all = TRUE;
  g_autoptr (SpGroups) g = build_ok (&o);
  ck_assert_str_eq (sp_groups_label (g, SP_FAMILY_A2A_LOCAL, 0), "local_0");
  ck_assert_str_eq (sp_groups_label (g, SP_FAMILY_A2A_LOCAL, 9), "local_9");
  ck_assert_str_eq (sp_groups_label (g, SP_FAMILY_A2A_LOCAL, 11), "local_11");
  ck_assert_str_eq (sp_groups_label (g, SP_FAMILY_A2A_GLOBAL, 7), "global_7");
  guint32 size;
  sp_groups_members (g, SP_FAMILY_A2A_GLOBAL, 7, &size);
  ck_assert_uint_eq (size, 12);
}
END_TEST

START_TEST (test_a2a_one_node)
{
  SpGroupsOptions o = opts_w (12);
  o.local_all_to_all = TRUE; /* 12 // 8 = 1 node, 12 != 8 */
  build_fails (&o, SP_ERROR_INVALID_GROUPS, "world size 12 spans one node");
  o = opts_w (8);
  o.local_all_to_all = TRUE;
  g_autoptr (SpGroups) g = build_ok (&o);
  GT_ASSERT_FAMILY (g, SP_FAMILY_A2A_LOCAL, "[0,1,2,3,4,5,6,7]");
  ck_assert (sp_groups_has_family (g, SP_FAMILY_A2A_GLOBAL));
  ck_assert_uint_eq (sp_groups_n_groups (g, SP_FAMILY_A2A_GLOBAL), 0);
  GT_ASSERT_CREATED (g, "local_all_to_all.local[0]");
  o = opts_w (3); /* 0 nodes: every rank in local_0 */
  o.local_all_to_all = TRUE;
  g_autoptr (SpGroups) small = build_ok (&o);
  GT_ASSERT_FAMILY (small, SP_FAMILY_A2A_LOCAL, "[0,1,2]");
  ck_assert_str_eq (sp_groups_label (small, SP_FAMILY_A2A_LOCAL, 0), "local_0");
  ck_assert_uint_eq (sp_groups_n_groups (small, SP_FAMILY_A2A_GLOBAL), 0);
}
END_TEST

START_TEST (test_a2a_left_out)
{
  SpGroupsOptions o = opts_w (20);
  o.local_all_to_all = TRUE;
  g_autoptr (SpGroups) g = build_ok (&o);
  GT_ASSERT_FAMILY (g, SP_FAMILY_A2A_LOCAL, "[0,1,2,3,4,5,6,7] [8,9,10,11,12,13,14,15]");
  GT_ASSERT_FAMILY (g, SP_FAMILY_A2A_GLOBAL,
                    "[0,8] [1,9] [2,10] [3,11] [4,12] [5,13] [6,14] [7,15]");
  for (guint32 r = 16; r < 20; r++)
    {
      ck_assert (!sp_groups_find (g, SP_FAMILY_A2A_LOCAL, r, NULL, NULL));
      ck_assert (!sp_groups_find (g, SP_FAMILY_A2A_GLOBAL, r, NULL, NULL));
    }
  ck_assert (sp_groups_find (g, SP_FAMILY_A2A_GLOBAL, 15, NULL, NULL));
  ck_assert_uint_eq (gt_n_warnings (g), 1);
  ck_assert_msg (strstr (sp_groups_warnings (g)[0], "ranks 16..19 are in no local all-to-all"),
                 "warning: %s", sp_groups_warnings (g)[0]);
  o = opts_w (17);
  o.local_all_to_all = TRUE;
  g_autoptr (SpGroups) one = build_ok (&o);
  ck_assert (strstr (sp_groups_warnings (one)[0], "rank 16 is in no local all-to-all"));
}
END_TEST

/* ---- everything at once --------------------------------------------------- */

START_TEST (test_all_families_order)
{
  SpGroupsOptions o = opts_w (16);
  o.devices_per_node = 4;
  o.shard_size = 8;
  o.hierarchical = TRUE;
  o.tensor_parallel = 2;
  o.expert_parallel = 2;
  o.zero_param_group_size = 4;
  o.local_all_to_all = TRUE;
  g_autoptr (SpGroups) g = build_ok (&o);
  GT_ASSERT_CREATED (g, "data[0..1] tensor[0..7] expert[0..7] expert_data[0..3] "
                        "zero_param[0..3] shard[0..1] replicate[0..7] shard_intra_node[0..3] "
                        "shard_inter_node[0..7] local_all_to_all.local[0..3] "
                        "local_all_to_all.global[0..3]");
  /* W=16 tp=2 ep=2: dp 8, lanes [0,2,…,14] and [1,3,…,15] in chunks of 2 */
  GT_ASSERT_FAMILY (g, SP_FAMILY_EXPERT, "[0,2] [4,6] [8,10] [12,14] [1,3] [5,7] [9,11] [13,15]");
  GT_ASSERT_FAMILY (g, SP_FAMILY_EXPERT_DATA, "[0,4,8,12] [2,6,10,14] [1,5,9,13] [3,7,11,15]");
  ck_assert_uint_eq (gt_n_warnings (g), 0);
}
END_TEST

static Suite *
groups_suite (void)
{
  Suite *s = suite_create ("groups");
  TCase *tc = tcase_create ("basics");
  tcase_add_test (tc, test_family_names);
  tcase_add_test (tc, test_options_init);
  tcase_add_test (tc, test_bad_input);
  tcase_add_test (tc, test_world_only);
  suite_add_tcase (s, tc);
  tc = tcase_create ("mics");
  tcase_add_test (tc, test_mics_worked_example);
  tcase_add_test (tc, test_mics_flat_span0);
  tcase_add_test (tc, test_mics_s_equals_w);
  tcase_add_test (tc, test_mics_d1_hierarchical);
  tcase_add_test (tc, test_mics_rejected);
  tcase_add_test (tc, test_mics_straddling_nodes);
  suite_add_tcase (s, tc);
  tc = tcase_create ("expert");
  tcase_add_test (tc, test_expert_tp_unit_test_row);
  tcase_add_test (tc, test_expert_tp_data_before_expert);
  tcase_add_test (tc, test_expert_tp_pipeline);
  tcase_add_test (tc, test_expert_tp_w32_lane_order);
  tcase_add_test (tc, test_expert_tp_rejected);
  tcase_add_test (tc, test_expert_docstring);
  tcase_add_test (tc, test_expert_pipeline_w8);
  tcase_add_test (tc, test_expert_pipeline_rejected);
  tcase_add_test (tc, test_expert_pipeline_not_dividing);
  suite_add_tcase (s, tc);
  tc = tcase_create ("other");
  tcase_add_test (tc, test_tp_mesh);
  tcase_add_test (tc, test_zero_param);
  tcase_add_test (tc, test_a2a_w16_d4);
  tcase_add_test (tc, test_a2a_labels_many);
  tcase_add_test (tc, test_a2a_one_node);
  tcase_add_test (tc, test_a2a_left_out);
  tcase_add_test (tc, test_all_families_order);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  return sp_test_run (groups_suite ());
}
