/* Chakra traces shardplan did not write → a plan.  A plan's op runs on
 * every group of one DeepSpeed family, so the groups each collective uses
 * (pg_name per rank, resolved through the group file) must be exactly the
 * groups of one family of one layout: the families of the layouts W ranks
 * allow (world; shard / replicate / shard_intra_node / shard_inter_node
 * for every shard size; zero_param for every hpZ size; tensor / data for
 * every tensor-parallel size) are built and compared, group set to group
 * set, and the families chosen must come from one SpGroupsOptions.  A
 * one-way send's pairs name two members of each group, not the groups:
 * its family is one whose every group holds exactly one pair, each from
 * the same group rank to the same group rank (a p2p op). */
#include "config.h"
#include "chakra/import-private.h"

#include <math.h>
#include <string.h>

#define FAIL(...) \
  do { g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, __VA_ARGS__); goto fail; } while (0)

/* Canonical text of a set of groups: members sorted, groups by first member. */
static int
cmp_u32 (gconstpointer a, gconstpointer b)
{
  guint32 x = *(const guint32 *) a, y = *(const guint32 *) b;
  return x < y ? -1 : x > y;
}

static int
cmp_group (gconstpointer a, gconstpointer b)
{
  const GArray *x = *(GArray *const *) a, *y = *(GArray *const *) b;
  return cmp_u32 (x->data, y->data);
}

static char *
partition_key (GPtrArray *groups)
{
  for (guint i = 0; i < groups->len; i++)
    g_array_sort (groups->pdata[i], cmp_u32);
  g_ptr_array_sort (groups, cmp_group);
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < groups->len; i++)
    {
      GArray *g = groups->pdata[i];
      for (guint k = 0; k < g->len; k++)
        g_string_append_printf (s, k ? ",%u" : "%u", g_array_index (g, guint32, k));
      g_string_append_c (s, ';');
    }
  return g_string_free (s, FALSE);
}

static char *
family_key (const SpGroups *groups, SpFamily f)
{
  g_autoptr (GPtrArray) parts = g_ptr_array_new_with_free_func ((GDestroyNotify) g_array_unref);
  for (guint32 i = 0; i < sp_groups_n_groups (groups, f); i++)
    {
      guint32 size = 0;
      const guint32 *m = sp_groups_members (groups, f, i, &size);
      GArray *a = g_array_sized_new (FALSE, FALSE, sizeof (guint32), size);
      g_array_append_vals (a, m, size);
      g_ptr_array_add (parts, a);
    }
  return partition_key (parts);
}

/* What a family match asks of the options. */
typedef struct {
  SpFamily family;
  guint32 shard_size;      /* 0: no demand */
  gboolean hierarchical;
  guint32 zero_param;
  guint32 tensor;
  const SpGroups *groups;  /* built for these demands (owned by the Cands) */
} Match;

/* The families W ranks allow, each group set once (the first family that
 * builds it). */
typedef struct {
  GHashTable *by_key;      /* partition key → Match (owned) */
  GPtrArray *order;        /* Match, in the order found (borrowed) */
  GPtrArray *built;        /* SpGroups (owned) */
} Cands;

static void
cands_free (Cands *c)
{
  g_hash_table_destroy (c->by_key);
  g_ptr_array_free (c->order, TRUE);
  g_ptr_array_free (c->built, TRUE);
  g_free (c);
}

static void
add_candidates (Cands *c, const SpGroupsOptions *opts, const SpFamily *fams, guint n, Match base)
{
  SpGroups *g = sp_groups_build (opts, NULL);
  if (g == NULL)
    return;
  gboolean kept = FALSE;
  for (guint i = 0; i < n; i++)
    {
      if (!sp_groups_has_family (g, fams[i]))
        continue;
      char *key = family_key (g, fams[i]);
      if (g_hash_table_contains (c->by_key, key))
        {
          g_free (key);
          continue;
        }
      Match *m = g_new (Match, 1);
      *m = base;
      m->family = fams[i];
      m->groups = g;
      kept = TRUE;
      if (m->hierarchical && fams[i] != SP_FAMILY_SHARD_INTRA_NODE && fams[i] != SP_FAMILY_SHARD_INTER_NODE)
        m->hierarchical = FALSE;
      g_hash_table_insert (c->by_key, key, m);
      g_ptr_array_add (c->order, m);
    }
  if (kept)
    g_ptr_array_add (c->built, g);
  else
    sp_groups_free (g);
}

static Cands *
candidates (guint32 world, guint32 dpn)
{
  Cands *t = g_new0 (Cands, 1);
  t->by_key = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  t->order = g_ptr_array_new ();
  t->built = g_ptr_array_new_with_free_func ((GDestroyNotify) sp_groups_free);
  SpGroupsOptions o;
  sp_groups_options_init (&o);
  o.world_size = world;
  o.devices_per_node = dpn;
  SpFamily world_f[] = { SP_FAMILY_WORLD };
  add_candidates (t, &o, world_f, 1, (Match) { 0 });
  for (guint32 s = 1; s <= world; s++)
    {
      if (world % s)
        continue;
      SpFamily shard_f[] = { SP_FAMILY_SHARD, SP_FAMILY_REPLICATE, SP_FAMILY_SHARD_INTRA_NODE,
                             SP_FAMILY_SHARD_INTER_NODE };
      SpGroupsOptions so = o;
      so.shard_size = s;
      so.hierarchical = TRUE;
      add_candidates (t, &so, shard_f, 4, (Match) { .shard_size = s, .hierarchical = TRUE });
      so.hierarchical = FALSE;
      add_candidates (t, &so, shard_f, 2, (Match) { .shard_size = s });
      SpGroupsOptions zo = o;
      zo.zero_param_group_size = s;
      SpFamily z_f[] = { SP_FAMILY_ZERO_PARAM };
      add_candidates (t, &zo, z_f, 1, (Match) { .zero_param = s });
      SpGroupsOptions to = o;
      to.tensor_parallel = s;
      SpFamily t_f[] = { SP_FAMILY_TENSOR, SP_FAMILY_DATA };
      add_candidates (t, &to, t_f, 2, (Match) { .tensor = s });
    }
  return t;
}

/* The rings an exchange's (src, dst) pairs form (a permutation of its
 * ranks: p2p_is_exchange in import.c), each from its smallest rank. */
static void
p2p_rings (const GArray *peers, guint32 world, GPtrArray *parts)
{
  g_autofree guint32 *to = g_new (guint32, world);
  g_autofree guint8 *seen = g_new0 (guint8, world);
  for (guint32 r = 0; r < world; r++)
    to[r] = G_MAXUINT32;
  for (guint p = 0; p < peers->len; p += 2)
    to[g_array_index (peers, guint32, p)] = g_array_index (peers, guint32, p + 1);
  for (guint32 r = 0; r < world; r++)
    {
      if (to[r] == G_MAXUINT32 || seen[r])
        continue;
      GArray *a = g_array_new (FALSE, FALSE, sizeof (guint32));
      for (guint32 x = r; !seen[x]; x = to[x])
        {
          seen[x] = 1;
          g_array_append_val (a, x);
        }
      g_ptr_array_add (parts, a);
    }
}

static gboolean
compatible (guint32 have, guint32 want)
{
  return want == 0 || have == 0 || have == want;
}

/* Whether a one-way send's pairs sit one in each group of `fam` in `g`,
 * each from group rank *out_src to group rank *out_dst. */
static gboolean
oneway_fits (const SpGroups *g, SpFamily fam, const GArray *peers, guint32 *out_src,
             guint32 *out_dst)
{
  guint32 ng = sp_groups_n_groups (g, fam);
  if (ng != peers->len / 2)
    return FALSE;
  g_autofree guint8 *seen = g_new0 (guint8, ng ? ng : 1);
  for (guint p = 0; p < peers->len; p += 2)
    {
      guint32 s = g_array_index (peers, guint32, p), d = g_array_index (peers, guint32, p + 1);
      guint32 gi, gs, gj, gd;
      if (!sp_groups_find (g, fam, s, &gi, &gs) || !sp_groups_find (g, fam, d, &gj, &gd)
          || gi != gj || seen[gi])
        return FALSE;
      seen[gi] = 1;
      if (p == 0)
        *out_src = gs, *out_dst = gd;
      else if (gs != *out_src || gd != *out_dst)
        return FALSE;
    }
  return TRUE;
}

/* The family a one-way send runs on: of those whose groups hold its pairs
 * one each and whose layout the options chosen so far allow, the one with
 * the smallest groups (then the first found).  NULL when none. */
static const Match *
oneway_match (const Cands *cands, const GArray *peers, const SpGroupsOptions *have)
{
  const Match *best = NULL;
  guint32 best_size = G_MAXUINT32;
  for (guint i = 0; i < cands->order->len; i++)
    {
      const Match *m = cands->order->pdata[i];
      guint32 src, dst, size = 0;
      if (!compatible (have->shard_size, m->shard_size)
          || !compatible (have->zero_param_group_size, m->zero_param)
          || !compatible (have->tensor_parallel, m->tensor)
          || !oneway_fits (m->groups, m->family, peers, &src, &dst))
        continue;
      sp_groups_members (m->groups, m->family, 0, &size);
      if (size < best_size)
        best = m, best_size = size;
    }
  return best;
}

/* An exchange on `fam`'s groups: send when every rank sends to the next
 * member of its group, recv when to the previous one (the plan's send /
 * recv op); anything else is an error naming the first pair off the ring. */
static gboolean
p2p_kind (const SpChakraForeign *f, const SpGroups *groups, SpFamily fam,
          const SpChakraForeignOp *o, SpColl *out, GError **error)
{
  gboolean fwd = TRUE, bwd = TRUE;
  guint off = G_MAXUINT, first_fwd = G_MAXUINT, first_bwd = G_MAXUINT;
  for (guint p = 0; p < o->peers->len; p += 2)
    {
      guint32 s = g_array_index (o->peers, guint32, p), d = g_array_index (o->peers, guint32, p + 1);
      guint32 idx = 0, g = 0, n = 0;
      if (!sp_groups_find (groups, fam, s, &idx, &g))
        g_return_val_if_reached (FALSE); /* the rings were matched to this family's groups */
      const guint32 *m = sp_groups_members (groups, fam, idx, &n);
      gboolean f1 = d == m[(g + 1) % n], b1 = d == m[(g + n - 1) % n];
      if (!f1 && !b1 && off == G_MAXUINT)
        off = p;
      if (f1 && !b1 && first_fwd == G_MAXUINT)
        first_fwd = p;
      if (b1 && !f1 && first_bwd == G_MAXUINT)
        first_bwd = p;
      fwd &= f1;
      bwd &= b1;
    }
  if (fwd || bwd)
    {
      *out = fwd ? SP_COLL_SEND : SP_COLL_RECV;
      return TRUE;
    }
  /* a pair off the ring, else one going the other way than the first */
  guint bad = off != G_MAXUINT ? off : MAX (first_fwd, first_bwd);
  guint32 s = g_array_index (o->peers, guint32, bad), d = g_array_index (o->peers, guint32, bad + 1);
  guint32 idx = 0, g = 0, n = 0;
  sp_groups_find (groups, fam, s, &idx, &g);
  const guint32 *m = sp_groups_members (groups, fam, idx, &n);
  g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
               "%s.%u.et: node %" G_GUINT64_FORMAT " ('%s'): field comm_dst %u: the exchange runs "
               "on %s's groups but %s: rank %u's neighbours in %s group %u are %u (next) and %u "
               "(previous); shardplan's send / recv moves every member's data the same way around "
               "its group", f->prefix, s, o->id, o->name, d, sp_family_name (fam),
               off != G_MAXUINT ? "not around them" : "both ways round", s, sp_family_name (fam),
               idx, m[(g + 1) % n], m[(g + n - 1) % n]);
  return FALSE;
}

/* The groups collective `o` uses (each rank's pg_name through the group
 * file; "" / "0": every rank), checked across the files, into `parts`. */
static gboolean
collective_parts (const SpChakraForeign *f, const SpChakraForeignOp *o, const char *file,
                  GPtrArray *parts, GError **error)
{
#define RFAIL(...) \
  do { g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, __VA_ARGS__); return FALSE; } while (0)
  guint32 world = f->world;
  /* the groups this collective uses, checked against the group file */
  g_autoptr (GHashTable) by_pg = g_hash_table_new (NULL, NULL);
  guint32 n_all = 0;
  for (guint k = 0; k < o->rank_pg->len; k += 2)
    {
      guint32 r = g_array_index (o->rank_pg, guint32, k);
      guint32 pg = g_array_index (o->rank_pg, guint32, k + 1);
      if (pg == 0)
        n_all++;
      else
        g_hash_table_insert (by_pg, GUINT_TO_POINTER (pg), GUINT_TO_POINTER (r + 1));
    }
  if (n_all > 0 && g_hash_table_size (by_pg) > 0)
    RFAIL ("%s: node %" G_GUINT64_FORMAT ": field pg_name: some files give the node every rank "
           "(pg_name \"\" or \"0\"), others a group", file, o->id);
  if (n_all > 0)
    {
      if (n_all != world)
        RFAIL ("%s: node %" G_GUINT64_FORMAT ": field pg_name: a collective of every rank in %u "
               "of the %u rank files", file, o->id, n_all, world);
      GArray *a = g_array_new (FALSE, FALSE, sizeof (guint32));
      for (guint32 r = 0; r < world; r++)
        g_array_append_val (a, r);
      g_ptr_array_add (parts, a);
    }
  else
    {
      /* every member of each group must have the node with that group */
      g_autofree guint32 *pg_of = g_new0 (guint32, world);
      for (guint k = 0; k < o->rank_pg->len; k += 2)
        pg_of[g_array_index (o->rank_pg, guint32, k)] = g_array_index (o->rank_pg, guint32, k + 1);
      GHashTableIter it;
      gpointer key, val;
      g_hash_table_iter_init (&it, by_pg);
      while (g_hash_table_iter_next (&it, &key, &val))
        {
          const char *name = sp_chakra_pg_name (f->pg, GPOINTER_TO_UINT (key));
          const GArray *m = sp_chakra_pg_members (f->pg, GPOINTER_TO_UINT (key));
          if (m == NULL)
            RFAIL ("%s: node %" G_GUINT64_FORMAT ": field pg_name: group %s has no ranks",
                   file, o->id, name);
          for (guint k = 0; k < m->len; k++)
            {
              guint32 r = g_array_index (m, guint32, k);
              if (r >= world)
                RFAIL ("%s: group %s: rank %u, but the rank files stop at %s.%u.et",
                       f->pg->path, name, r, f->prefix, world - 1);
              if (pg_of[r] != GPOINTER_TO_UINT (key))
                {
                  if (pg_of[r] == 0)
                    RFAIL ("%s.%u.et: node %" G_GUINT64_FORMAT ": missing: rank %u is in group %s "
                           "of the node in %s, but its file has no such node", f->prefix, r,
                           o->id, r, name, file);
                  RFAIL ("%s.%u.et: node %" G_GUINT64_FORMAT ": field pg_name '%s' disagrees with "
                         "%s.%u.et, where the node's group '%s' holds rank %u", f->prefix, r, o->id,
                         sp_chakra_pg_name (f->pg, pg_of[r]), f->prefix,
                         GPOINTER_TO_UINT (val) - 1, name, r);
                }
            }
          g_ptr_array_add (parts, g_array_copy ((GArray *) m));
        }
    }
  return TRUE;
#undef RFAIL
}

static gboolean
merge (guint32 *have, guint32 want)
{
  if (want == 0 || *have == want)
    return TRUE;
  if (*have != 0)
    return FALSE;
  *have = want;
  return TRUE;
}

SpPlan *
sp_chakra_build_foreign (const SpChakraForeign *f, GPtrArray *ops, GError **error)
{
  guint32 world = f->world;
  guint32 dpn = f->topo ? sp_topo_spec (f->topo)->gpus_per_node : 8;
  if (f->topo && sp_topo_world_size (f->topo) != world)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "%s: %u rank files but the topology has %u GPUs", f->prefix, world,
                   sp_topo_world_size (f->topo));
      return NULL;
    }
  Cands *cands = NULL;
  SpFamily *fam_of = g_new0 (SpFamily, ops->len ? ops->len : 1);
  SpGroupsOptions opts;
  sp_groups_options_init (&opts);
  opts.world_size = world;
  opts.devices_per_node = dpn;
  SpPlan *plan = NULL;
  SpGroups *built = NULL;
  guint64 shard_from = G_MAXUINT64;

  /* Two passes: the collectives and exchanges first, whose groups fix the
   * layout, then the one-way sends, which pick a family within it (their
   * pairs name two members of each group, not the groups). */
  for (guint pass = 0; pass < 2; pass++)
  for (guint i = 0; i < ops->len; i++)
    {
      SpChakraForeignOp *o = ops->pdata[i];
      if ((guint) o->oneway != pass)
        continue;
      g_autofree char *file = g_strdup_printf ("%s.%u.et", f->prefix, o->file_rank);
      if (!o->coll && !o->peers)
        {
          fam_of[i] = SP_FAMILY_NONE;
          if (o->n_ranks != world)
            FAIL ("%s: node %" G_GUINT64_FORMAT " ('%s'): a COMP_NODE in %u of the %u rank files: "
                  "shardplan's compute runs on every rank", file, o->id, o->name, o->n_ranks, world);
          continue;
        }
      g_autoptr (GPtrArray) parts = g_ptr_array_new_with_free_func ((GDestroyNotify) g_array_unref);
      if (o->peers && !o->oneway)
        p2p_rings (o->peers, world, parts);
      else if (!o->peers && !collective_parts (f, o, file, parts, error))
        goto fail;
      if (cands == NULL)
        cands = candidates (world, dpn);
      const Match *m = NULL;
      if (o->oneway)
        {
          m = oneway_match (cands, o->peers, &opts);
          if (m == NULL)
            FAIL ("%s: node %" G_GUINT64_FORMAT " ('%s'): fields comm_src / comm_dst: its one-way "
                  "sends (%u, from rank %u to %u first) are not one in each group of any DeepSpeed "
                  "family shardplan builds for %u ranks (%u per node) that the other ops allow, "
                  "each from one group rank to another", file, o->id, o->name,
                  o->peers->len / 2, g_array_index (o->peers, guint32, 0),
                  g_array_index (o->peers, guint32, 1), world, dpn);
        }
      else
        {
          g_autofree char *pkey = partition_key (parts);
          m = g_hash_table_lookup (cands->by_key, pkey);
        }
      if (m == NULL && o->peers)
        FAIL ("%s: node %" G_GUINT64_FORMAT " ('%s'): fields comm_src / comm_dst: the rings its "
              "sends and receives form are not the groups of any DeepSpeed family shardplan builds "
              "for %u ranks (%u per node)", file, o->id, o->name, world, dpn);
      if (m == NULL)
        FAIL ("%s: node %" G_GUINT64_FORMAT " ('%s'): field pg_name: its groups are not the groups "
              "of any DeepSpeed family shardplan builds for %u ranks (%u per node)", file, o->id,
              o->name, world, dpn);
      fam_of[i] = m->family;
      if (!merge (&opts.shard_size, m->shard_size) || !merge (&opts.zero_param_group_size, m->zero_param)
          || !merge (&opts.tensor_parallel, m->tensor))
        FAIL ("%s: node %" G_GUINT64_FORMAT " ('%s'): %s: its groups (family %s) and "
              "those of node %" G_GUINT64_FORMAT " need different layouts (shard size %u vs %u, "
              "hpZ %u, tensor %u)", file, o->id, o->name,
              o->peers ? "fields comm_src / comm_dst" : "field pg_name", sp_family_name (m->family),
              shard_from == G_MAXUINT64 ? o->id : shard_from, m->shard_size, opts.shard_size,
              opts.zero_param_group_size, opts.tensor_parallel);
      if (m->shard_size && shard_from == G_MAXUINT64)
        shard_from = o->id;
      if (m->hierarchical)
        opts.hierarchical = TRUE;
    }

  plan = sp_plan_new (&opts);
  {
    GError *e = NULL;
    built = sp_groups_build (&opts, &e);
    if (built == NULL)
      {
        g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                     "%s: the families the collectives use make no DeepSpeed layout together: %s",
                     f->prefix, e->message);
        g_error_free (e);
        goto fail;
      }
  }
  sp_plan_set_meta (plan, "created_by", "shardplan " PACKAGE_VERSION " chakra import");
  sp_plan_set_meta (plan, "source", f->prefix);
  /* compute from time: FLOPs at the topology's peak, so efficiency 1 */
  sp_plan_set_meta (plan, "compute_efficiency", "1");
  for (guint i = 0; i < ops->len; i++)
    {
      SpChakraForeignOp *o = ops->pdata[i];
      g_autofree char *file = g_strdup_printf ("%s.%u.et", f->prefix, o->file_rank);
      SpOp op = { 0 };
      op.name = o->name && *o->name ? o->name : "chakra";
      op.layer = -1;
      op.parent = -1;
      op.family = fam_of[i];
      op.algorithm = SP_ALGO_AUTO;
      op.phase = SP_PHASE_NONE;
      op.n_deps = o->n_deps;
      op.deps = o->deps;
      if (o->peers)
        {
          /* one way: the group ranks in the layout all the ops chose */
          op.kind = SP_COLL_P2P;
          if (o->oneway && !oneway_fits (built, fam_of[i], o->peers, &op.src, &op.dst))
            FAIL ("%s: node %" G_GUINT64_FORMAT " ('%s'): fields comm_src / comm_dst: the layout "
                  "the other ops need moves its one-way sends off %s's groups", file, o->id,
                  o->name, sp_family_name (fam_of[i]));
          if (!o->oneway && !p2p_kind (f, built, fam_of[i], o, &op.kind, error))
            goto fail;
          op.stream = 1;
          op.bytes = o->comm_size;
          op.dtype = SP_DTYPE_UINT8;
          op.count = op.bytes;
          op.redop = SP_REDOP_NONE;
        }
      else if (o->coll)
        {
          op.kind = (SpColl) o->comm_type;
          op.stream = 1;
          op.bytes = o->comm_size;
          op.dtype = op.kind == SP_COLL_BARRIER ? SP_DTYPE_NONE : SP_DTYPE_UINT8;
          op.count = op.dtype == SP_DTYPE_NONE ? 0 : op.bytes;
          gboolean reducing = op.kind == SP_COLL_ALL_REDUCE || op.kind == SP_COLL_REDUCE
                              || op.kind == SP_COLL_REDUCE_SCATTER
                              || op.kind == SP_COLL_REDUCE_SCATTER_BLOCK;
          op.redop = reducing ? SP_REDOP_SUM : SP_REDOP_NONE;
        }
      else
        {
          op.kind = SP_COLL_COMPUTE;
          op.dtype = SP_DTYPE_NONE;
          op.redop = SP_REDOP_NONE;
          op.stream = 0;
          if (o->dur_us > 0)
            {
              if (f->topo == NULL)
                FAIL ("%s: node %" G_GUINT64_FORMAT ": field duration_micros: turning time into "
                      "FLOPs needs the GPU's peak: give --topology", file, o->id);
              double flops = (double) o->dur_us * 1e3 * sp_topo_spec (f->topo)->gpu_tflops * 1e3;
              if (!(flops < 0x1p64))
                FAIL ("%s: node %" G_GUINT64_FORMAT ": field duration_micros %" G_GUINT64_FORMAT
                      ": %.4g FLOPs at the topology's peak, more than 2^64", file, o->id,
                      (guint64) o->dur_us, flops);
              op.flops = (guint64) llround (flops);
            }
          else
            op.flops = o->num_ops;
        }
      GError *e = NULL;
      if (!sp_plan_add_op (plan, &op, NULL, &e))
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: node %" G_GUINT64_FORMAT
                       ": %s", file, o->id, e->message);
          g_error_free (e);
          goto fail;
        }
    }
  g_free (fam_of);
  if (cands)
    cands_free (cands);
  sp_groups_free (built);
  return plan;

fail:
  if (built)
    sp_groups_free (built);
  g_free (fam_of);
  if (cands)
    cands_free (cands);
  if (plan)
    sp_plan_free (plan);
  return NULL;
}
