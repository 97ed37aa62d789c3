/* Property tests of the group families over a grid of sizes.  The
 * expectations are independent of the implementation: which configurations
 * DeepSpeed accepts is recomputed here from the reference's rules, and
 * group membership is checked against closed forms (shard rank = r % S,
 * TP lane = r % T, stage = r / stage size, …), not against the builder's
 * loops. */
#include "config.h"
#include "groups-testutil.h"

static const guint32 worlds[] = { 1, 2, 4, 8, 12, 16, 24, 32, 64, 128 };
static const guint32 devs[] = { 1, 2, 4, 8 };

/* Every group of `f` is non-empty, ranks < W, disjoint; if `partition`,
 * every rank is in exactly one group.  sp_groups_find agrees with members.
 * Returns the number of ranks covered. */
static guint32
check_family (const SpGroups *g, SpFamily f, gboolean partition)
{
  guint32 w = sp_groups_world_size (g);
  ck_assert_msg (sp_groups_has_family (g, f), "family %s missing", sp_family_name (f));
  g_autofree guint8 *seen = g_new0 (guint8, w);
  guint32 covered = 0;
  for (guint32 k = 0; k < sp_groups_n_groups (g, f); k++)
    {
      guint32 size = 0;
      const guint32 *m = sp_groups_members (g, f, k, &size);
      ck_assert_uint_gt (size, 0);
      for (guint32 i = 0; i < size; i++)
        {
          ck_assert_uint_lt (m[i], w);
          ck_assert_msg (!seen[m[i]], "%s: rank %u twice", sp_family_name (f), m[i]);
          seen[m[i]] = 1;
          covered++;
          guint32 idx = G_MAXUINT32, gr = G_MAXUINT32;
          ck_assert (sp_groups_find (g, f, m[i], &idx, &gr));
          ck_assert_uint_eq (idx, k);
          ck_assert_uint_eq (gr, i);
        }
    }
  for (guint32 r = 0; r < w; r++)
    if (!seen[r])
      ck_assert (!sp_groups_find (g, f, r, NULL, NULL));
  if (partition)
    ck_assert_uint_eq (covered, w);
  return covered;
}

/* Every group of `f` has `size` members. */
static void
check_sizes (const SpGroups *g, SpFamily f, guint32 size)
{
  for (guint32 k = 0; k < sp_groups_n_groups (g, f); k++)
    {
      guint32 got = 0;
      sp_groups_members (g, f, k, &got);
      ck_assert_msg (got == size, "%s group %u has %u ranks, expected %u", sp_family_name (f), k,
                     got, size);
    }
}

/* The group of `f` containing r, as a pointer/size. */
static const guint32 *
group_of (const SpGroups *g, SpFamily f, guint32 r, guint32 *size)
{
  guint32 idx;
  ck_assert (sp_groups_find (g, f, r, &idx, NULL));
  return sp_groups_members (g, f, idx, size);
}

/* Creation order entries are valid and unique. */
static void
check_created (const SpGroups *g)
{
  GHashTable *seen = g_hash_table_new (g_int64_hash, g_int64_equal);
  g_autofree gint64 *keys = g_new (gint64, sp_groups_n_created (g) + 1);
  for (guint32 i = 0; i < sp_groups_n_created (g); i++)
    {
      SpFamily f;
      guint32 idx;
      sp_groups_created (g, i, &f, &idx);
      ck_assert (f != SP_FAMILY_WORLD);
      ck_assert_uint_lt (idx, sp_groups_n_groups (g, f));
      keys[i] = ((gint64) f << 32) | idx;
      ck_assert (g_hash_table_add (seen, &keys[i]));
    }
  g_hash_table_unref (seen);
}

static SpGroups *
try_build (const SpGroupsOptions *o, gboolean expect_ok)
{
  GError *error = NULL;
  SpGroups *g = sp_groups_build (o, &error);
  if (expect_ok)
    {
      SP_ASSERT_NO_ERROR (error);
      ck_assert_ptr_nonnull (g);
      check_family (g, SP_FAMILY_WORLD, TRUE);
      check_created (g);
    }
  else
    {
      ck_assert_msg (g == NULL, "W=%u D=%u S=%u h=%d T=%u P=%u E=%u de=%d Z=%u a2a=%d: accepted, "
                     "expected a rejection", o->world_size, o->devices_per_node, o->shard_size,
                     o->hierarchical, o->tensor_parallel, o->pipeline_parallel,
                     o->expert_parallel, o->data_before_expert, o->zero_param_group_size,
                     o->local_all_to_all);
      SP_ASSERT_ERROR (error, SP_ERROR_INVALID_GROUPS);
      g_error_free (error);
    }
  return g;
}

/* ---- MiCS ------------------------------------------------------------------ */

START_TEST (test_mics_grid)
{
  for (gsize wi = 0; wi < G_N_ELEMENTS (worlds); wi++)
    for (gsize di = 0; di < G_N_ELEMENTS (devs); di++)
      for (guint32 s = 1; s <= 2 * worlds[wi]; s++)
        for (int hier = 0; hier <= 1; hier++)
          {
            guint32 w = worlds[wi], d = devs[di];
            SpGroupsOptions o;
            sp_groups_options_init (&o);
            o.world_size = w;
            o.devices_per_node = d;
            o.shard_size = s;
            o.hierarchical = hier;
            guint32 span = s / d;
            gboolean ok = w % s == 0 && (!hier || (span >= 2 && s % span == 0));
            g_autoptr (SpGroups) g = try_build (&o, ok);
            if (!ok)
              continue;
            check_family (g, SP_FAMILY_SHARD, TRUE);
            check_family (g, SP_FAMILY_REPLICATE, TRUE);
            check_sizes (g, SP_FAMILY_SHARD, s);
            check_sizes (g, SP_FAMILY_REPLICATE, w / s);
            ck_assert_uint_eq (sp_groups_n_groups (g, SP_FAMILY_SHARD), w / s);
            ck_assert_uint_eq (sp_groups_n_groups (g, SP_FAMILY_REPLICATE), s);
            for (guint32 r = 0; r < w; r++)
              {
                guint32 idx, gr;
                ck_assert (sp_groups_find (g, SP_FAMILY_SHARD, r, &idx, &gr));
                ck_assert_uint_eq (gr, r % s); /* param_shard_rank */
                ck_assert_uint_eq (idx, r / s);
                ck_assert (sp_groups_find (g, SP_FAMILY_REPLICATE, r, &idx, &gr));
                ck_assert_uint_eq (gr, r / s); /* param_repli_rank (0 when S == W) */
                ck_assert_uint_eq (idx, r % s);
              }
            /* communicators: W/S shard, S replicate unless singletons, hierarchy */
            guint32 expect_created = w / s + (w / s > 1 ? s : 0);
            ck_assert_uint_eq (gt_n_warnings (g), hier && s / span != d ? 1 : 0);
            if (hier)
              {
                guint32 n = s / span;
                check_family (g, SP_FAMILY_SHARD_INTRA_NODE, TRUE);
                check_family (g, SP_FAMILY_SHARD_INTER_NODE, TRUE);
                check_sizes (g, SP_FAMILY_SHARD_INTRA_NODE, n);
                check_sizes (g, SP_FAMILY_SHARD_INTER_NODE, span);
                for (guint32 r = 0; r < w; r++)
                  {
                    guint32 size, idx, gr;
                    ck_assert (sp_groups_find (g, SP_FAMILY_SHARD_INTRA_NODE, r, &idx, &gr));
                    ck_assert (idx == r / n && gr == r % n);
                    ck_assert (sp_groups_find (g, SP_FAMILY_SHARD_INTER_NODE, r, &idx, &gr));
                    ck_assert (idx == (r / s) * n + (r % s) % n && gr == (r % s) / n);
                    const guint32 *m = group_of (g, SP_FAMILY_SHARD_INTRA_NODE, r, &size);
                    for (guint32 i = 0; i < size; i++)
                      ck_assert_uint_eq (m[i], (r / n) * n + i); /* block of n */
                    m = group_of (g, SP_FAMILY_SHARD_INTER_NODE, r, &size);
                    for (guint32 i = 0; i < size; i++) /* same shard group, stride n */
                      ck_assert_uint_eq (m[i], (r / s) * s + (r % s) % n + i * n);
                  }
                expect_created += w / n + w / span; /* (W/S)*span intra, (W/S)*n inter */
              }
            else
              {
                ck_assert (!sp_groups_has_family (g, SP_FAMILY_SHARD_INTRA_NODE));
                ck_assert (!sp_groups_has_family (g, SP_FAMILY_SHARD_INTER_NODE));
              }
            ck_assert_uint_eq (sp_groups_n_created (g), expect_created);
          }
}
END_TEST

/* ---- TP mesh and hpZ -------------------------------------------------------- */

START_TEST (test_tp_and_zero_grid)
{
  for (gsize wi = 0; wi < G_N_ELEMENTS (worlds); wi++)
    for (guint32 t = 1; t <= 2 * worlds[wi] + 1; t++)
      {
        guint32 w = worlds[wi];
        SpGroupsOptions o;
        sp_groups_options_init (&o);
        o.world_size = w;
        o.tensor_parallel = t;
        g_autoptr (SpGroups) g = try_build (&o, w % t == 0);
        if (g)
          {
            check_family (g, SP_FAMILY_TENSOR, TRUE);
            check_family (g, SP_FAMILY_DATA, TRUE);
            check_sizes (g, SP_FAMILY_TENSOR, t);
            check_sizes (g, SP_FAMILY_DATA, w / t);
            for (guint32 r = 0; r < w; r++)
              {
                guint32 idx, gr;
                ck_assert (sp_groups_find (g, SP_FAMILY_TENSOR, r, &idx, &gr));
                ck_assert_uint_eq (idx, r / t);
                ck_assert_uint_eq (gr, r % t);
                ck_assert (sp_groups_find (g, SP_FAMILY_DATA, r, &idx, &gr));
                ck_assert_uint_eq (idx, r % t);
                ck_assert_uint_eq (gr, r / t);
              }
            ck_assert_uint_eq (sp_groups_n_created (g), t + w / t);
          }
        sp_groups_options_init (&o);
        o.world_size = w;
        o.zero_param_group_size = t;
        guint32 size = MIN (t, w);
        g_autoptr (SpGroups) z = try_build (&o, w % size == 0);
        if (z)
          {
            check_family (z, SP_FAMILY_ZERO_PARAM, TRUE);
            check_sizes (z, SP_FAMILY_ZERO_PARAM, size);
            for (guint32 r = 0; r < w; r++)
              {
                guint32 idx, gr;
                ck_assert (sp_groups_find (z, SP_FAMILY_ZERO_PARAM, r, &idx, &gr));
                ck_assert_uint_eq (idx, r / size);
                ck_assert_uint_eq (gr, r % size);
              }
          }
      }
}
END_TEST

/* ---- expert ----------------------------------------------------------------- */

/* Which (W, T, P, E) DeepSpeed accepts (reference §2.1–§2.3). */
static gboolean
expert_accepted (guint32 w, guint32 t, guint32 p, guint32 e)
{
  guint32 pp = p ? p : 1;
  if (t > 0)
    return w % t == 0 && w % (t * pp) == 0 && (w / (t * pp)) % e == 0;
  if (pp > w)
    return FALSE;
  guint32 stride = w / pp;
  return stride % e == 0 && w % stride == 0;
}

START_TEST (test_expert_grid)
{
  static const guint32 tps[] = { 0, 1, 2, 4 }, pps[] = { 0, 1, 2, 3, 4 }, eps[] = { 1, 2, 3, 4, 8 };
  for (gsize wi = 0; wi < G_N_ELEMENTS (worlds); wi++)
    for (gsize ti = 0; ti < G_N_ELEMENTS (tps); ti++)
      for (gsize pi = 0; pi < G_N_ELEMENTS (pps); pi++)
        for (gsize ei = 0; ei < G_N_ELEMENTS (eps); ei++)
          for (int de = 0; de <= 1; de++)
            {
              guint32 w = worlds[wi], t = tps[ti], p = pps[pi], e = eps[ei];
              SpGroupsOptions o;
              sp_groups_options_init (&o);
              o.world_size = w;
              o.tensor_parallel = t;
              o.pipeline_parallel = p;
              o.expert_parallel = e;
              o.data_before_expert = de;
              gboolean ok = expert_accepted (w, t, p, e);
              g_autoptr (SpGroups) g = try_build (&o, ok);
              if (!ok)
                continue;
              guint32 pp = p ? p : 1;
              /* stage size; T = 0 with W % P != 0 runs W / (W // P) stages */
              guint32 stride = w / pp;
              guint32 lanes = t ? t : 1;
              guint32 edp_size = t ? w / (t * pp) / e : stride / e;
              check_family (g, SP_FAMILY_EXPERT, TRUE);
              check_family (g, SP_FAMILY_EXPERT_DATA, TRUE);
              check_sizes (g, SP_FAMILY_EXPERT, e);
              check_sizes (g, SP_FAMILY_EXPERT_DATA, edp_size);
              for (guint32 r = 0; r < w; r++)
                {
                  guint32 ne, nd;
                  const guint32 *me = group_of (g, SP_FAMILY_EXPERT, r, &ne);
                  const guint32 *md = group_of (g, SP_FAMILY_EXPERT_DATA, r, &nd);
                  /* both stay within r's pipeline stage and TP lane */
                  for (guint32 i = 0; i < ne; i++)
                    ck_assert (me[i] / stride == r / stride && me[i] % lanes == r % lanes);
                  for (guint32 i = 0; i < nd; i++)
                    ck_assert (md[i] / stride == r / stride && md[i] % lanes == r % lanes);
                  /* an EP group and an EDP group meet in exactly one rank */
                  guint32 common = 0;
                  for (guint32 i = 0; i < ne; i++)
                    for (guint32 j = 0; j < nd; j++)
                      common += me[i] == md[j];
                  ck_assert_uint_eq (common, 1);
                  g_autofree char *label = g_strdup_printf ("ep_size_%u", e);
                  guint32 idx;
                  sp_groups_find (g, SP_FAMILY_EXPERT, r, &idx, NULL);
                  ck_assert_str_eq (sp_groups_label (g, SP_FAMILY_EXPERT, idx), label);
                }
              /* creation order: EP then EDP with an mpu (T > 0), else EDP then EP */
              SpFamily first;
              sp_groups_created (g, t ? t + w / t : 0, &first, NULL);
              ck_assert_int_eq (first, t ? SP_FAMILY_EXPERT : SP_FAMILY_EXPERT_DATA);
              ck_assert_uint_eq (gt_n_warnings (g), (t == 0 && w % pp != 0) ? 1 : 0);
              /* §2.2: for tp = 1 the lists equal _get_expert_parallel_ranks */
              if (t == 0 && w % pp == 0)
                {
                  o.tensor_parallel = 1;
                  g_autoptr (SpGroups) g1 = try_build (&o, TRUE);
                  g_autofree char *a = gt_family_str (g, SP_FAMILY_EXPERT);
                  g_autofree char *b = gt_family_str (g1, SP_FAMILY_EXPERT);
                  g_autofree char *c = gt_family_str (g, SP_FAMILY_EXPERT_DATA);
                  g_autofree char *d = gt_family_str (g1, SP_FAMILY_EXPERT_DATA);
                  ck_assert_str_eq (a, b);
                  ck_assert_str_eq (c, d);
                }
            }
}
END_TEST

/* ---- local all-to-all ------------------------------------------------------- */

START_TEST (test_a2a_grid)
{
  static const guint32 more[] = { 3, 5, 9, 17, 20, 25 };
  static const guint32 adevs[] = { 1, 2, 3, 4, 8 };
  for (gsize wi = 0; wi < G_N_ELEMENTS (worlds) + G_N_ELEMENTS (more); wi++)
    for (gsize di = 0; di < G_N_ELEMENTS (adevs); di++)
      {
        guint32 w = wi < G_N_ELEMENTS (worlds) ? worlds[wi] : more[wi - G_N_ELEMENTS (worlds)];
        guint32 d = adevs[di], nodes = w / d;
        SpGroupsOptions o;
        sp_groups_options_init (&o);
        o.world_size = w;
        o.devices_per_node = d;
        o.local_all_to_all = TRUE;
        g_autoptr (SpGroups) g = try_build (&o, nodes != 1 || w == d);
        if (!g)
          continue;
        guint32 in = nodes == 0 ? w : nodes * d; /* ranks DeepSpeed places */
        ck_assert_uint_eq (check_family (g, SP_FAMILY_A2A_LOCAL, FALSE), in);
        ck_assert_uint_eq (check_family (g, SP_FAMILY_A2A_GLOBAL, FALSE), nodes >= 2 ? in : 0);
        for (guint32 r = 0; r < w; r++)
          {
            guint32 idx, gr;
            gboolean placed = r < in;
            ck_assert_int_eq (sp_groups_find (g, SP_FAMILY_A2A_LOCAL, r, &idx, &gr), placed);
            if (placed && nodes >= 1)
              {
                ck_assert_uint_eq (idx, r / d); /* local_<node> */
                ck_assert_uint_eq (gr, r % d);
              }
            if (placed && nodes >= 2)
              {
                ck_assert (sp_groups_find (g, SP_FAMILY_A2A_GLOBAL, r, &idx, &gr));
                ck_assert_uint_eq (idx, r % d); /* global_<local> */
                ck_assert_uint_eq (gr, r / d);
              }
          }
        ck_assert_uint_eq (gt_n_warnings (g), nodes >= 2 && w % d != 0 ? 1 : 0);
      }
}
END_TEST

/* ---- creation order does not depend on which families are requested -------- */

typedef void (*Enable) (SpGroupsOptions *o);
static void en_mics (SpGroupsOptions *o) { o->shard_size = 8; o->hierarchical = TRUE; }
static void en_tp (SpGroupsOptions *o) { o->tensor_parallel = 2; }
static void en_ep (SpGroupsOptions *o) { o->expert_parallel = 2; o->pipeline_parallel = 2; }
static void en_zero (SpGroupsOptions *o) { o->zero_param_group_size = 4; }
static void en_a2a (SpGroupsOptions *o) { o->local_all_to_all = TRUE; }

static gboolean
family_enabled_by (SpFamily f, guint mask)
{
  switch (f)
    {
    case SP_FAMILY_SHARD: case SP_FAMILY_REPLICATE:
    case SP_FAMILY_SHARD_INTRA_NODE: case SP_FAMILY_SHARD_INTER_NODE:
      return mask & 1;
    case SP_FAMILY_TENSOR: case SP_FAMILY_DATA:
      return mask & 2;
    case SP_FAMILY_EXPERT: case SP_FAMILY_EXPERT_DATA:
      return mask & 4;
    case SP_FAMILY_ZERO_PARAM:
      return mask & 8;
    case SP_FAMILY_A2A_LOCAL: case SP_FAMILY_A2A_GLOBAL:
      return mask & 16;
    default:
      return FALSE;
    }
}

START_TEST (test_creation_order_subsets)
{
  static const Enable enables[] = { en_mics, en_tp, en_ep, en_zero, en_a2a };
  /* Families' order relative to each other is the fixed one of groups.h;
   * an order within the subset equals the full order filtered to it.  The
   * expert groups change builder with T, so compare only subsets that
   * agree on whether tensor parallelism is on. */
  for (guint with_tp = 0; with_tp <= 1; with_tp++)
    {
      SpGroupsOptions full;
      sp_groups_options_init (&full);
      full.world_size = 32;
      full.devices_per_node = 4;
      guint full_mask = 0x1f & ~(with_tp ? 0u : 2u);
      for (guint i = 0; i < G_N_ELEMENTS (enables); i++)
        if (full_mask & (1u << i))
          enables[i] (&full);
      g_autoptr (SpGroups) all = try_build (&full, TRUE);
      for (guint mask = 0; mask < 32; mask++)
        {
          if ((mask & ~full_mask) != 0 || ((mask & 2) != 0) != with_tp)
            continue;
          SpGroupsOptions o;
          sp_groups_options_init (&o);
          o.world_size = 32;
          o.devices_per_node = 4;
          for (guint i = 0; i < G_N_ELEMENTS (enables); i++)
            if (mask & (1u << i))
              enables[i] (&o);
          g_autoptr (SpGroups) sub = try_build (&o, TRUE);
          guint32 j = 0;
          for (guint32 i = 0; i < sp_groups_n_created (all); i++)
            {
              SpFamily fa, fs;
              guint32 ia, is;
              sp_groups_created (all, i, &fa, &ia);
              if (!family_enabled_by (fa, mask))
                continue;
              ck_assert_uint_lt (j, sp_groups_n_created (sub));
              sp_groups_created (sub, j++, &fs, &is);
              ck_assert_int_eq (fa, fs);
              ck_assert_uint_eq (ia, is);
              /* and the same rank lists */
              guint32 na, ns;
              const guint32 *ma = sp_groups_members (all, fa, ia, &na);
              const guint32 *ms = sp_groups_members (sub, fs, is, &ns);
              ck_assert_uint_eq (na, ns);
              ck_assert (memcmp (ma, ms, na * sizeof *ma) == 0);
            }
          ck_assert_uint_eq (j, sp_groups_n_created (sub));
        }
    }
}
END_TEST

/* ---- a large layout: shape and lookups, not speed (see bench/) -------------- */

START_TEST (test_large_mics)
{
  SpGroupsOptions o;
  sp_groups_options_init (&o);
  o.world_size = 1u << 20;
  o.shard_size = 64;
  o.hierarchical = TRUE;
  g_autoptr (SpGroups) g = try_build (&o, TRUE);
  ck_assert_uint_eq (sp_groups_n_groups (g, SP_FAMILY_SHARD), 1u << 14);
  ck_assert_uint_eq (sp_groups_n_groups (g, SP_FAMILY_REPLICATE), 64);
  ck_assert_uint_eq (sp_groups_n_groups (g, SP_FAMILY_SHARD_INTRA_NODE), 1u << 17);
  ck_assert_uint_eq (sp_groups_n_groups (g, SP_FAMILY_SHARD_INTER_NODE), 1u << 17);
  ck_assert_uint_eq (sp_groups_n_created (g), (1u << 14) + 64 + (1u << 18));
  /* the last rank: shard group 16383 rank 63 = node block 7, local 7 */
  guint32 r = 1048575, idx, gr;
  ck_assert (sp_groups_find (g, SP_FAMILY_SHARD, r, &idx, &gr));
  ck_assert (idx == 16383 && gr == 63);
  ck_assert (sp_groups_find (g, SP_FAMILY_REPLICATE, r, &idx, &gr));
  ck_assert (idx == 63 && gr == 16383);
  ck_assert (sp_groups_find (g, SP_FAMILY_SHARD_INTRA_NODE, r, &idx, &gr));
  ck_assert (idx == 131071 && gr == 7);
  ck_assert (sp_groups_find (g, SP_FAMILY_SHARD_INTER_NODE, r, &idx, &gr));
  ck_assert (idx == 16383 * 8 + 7 && gr == 7);
  guint32 size;
  const guint32 *m = sp_groups_members (g, SP_FAMILY_SHARD_INTER_NODE, idx, &size);
  ck_assert (size == 8 && m[0] == 1048512 + 7 && m[7] == 1048575);
}
END_TEST

static Suite *
props_suite (void)
{
  Suite *s = suite_create ("groups-props");
  TCase *tc = tcase_create ("grid");
  tcase_set_timeout (tc, 300);
  tcase_add_test (tc, test_mics_grid);
  tcase_add_test (tc, test_tp_and_zero_grid);
  tcase_add_test (tc, test_expert_grid);
  tcase_add_test (tc, test_a2a_grid);
  tcase_add_test (tc, test_creation_order_subsets);
  tcase_add_test (tc, test_large_mics);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  return sp_test_run (props_suite ());
}
