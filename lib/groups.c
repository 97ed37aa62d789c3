/* Group families: storage, accessors and the order the builders run in.
 * The rank lists themselves come from groups-mics.c, groups-expert.c and
 * groups-misc.c, each a transcription of the DeepSpeed function it names. */
#include "config.h"
#include "groups-internal.h"

#include <stdarg.h>
#include <string.h>

static const char *const family_names[SP_FAMILY_N] = {
  [SP_FAMILY_SHARD] = "shard",
  [SP_FAMILY_REPLICATE] = "replicate",
  [SP_FAMILY_SHARD_INTRA_NODE] = "shard_intra_node",
  [SP_FAMILY_SHARD_INTER_NODE] = "shard_inter_node",
  [SP_FAMILY_EXPERT] = "expert",
  [SP_FAMILY_EXPERT_DATA] = "expert_data",
  [SP_FAMILY_TENSOR] = "tensor",
  [SP_FAMILY_DATA] = "data",
  [SP_FAMILY_ZERO_PARAM] = "zero_param",
  [SP_FAMILY_A2A_LOCAL] = "local_all_to_all.local",
  [SP_FAMILY_A2A_GLOBAL] = "local_all_to_all.global",
  [SP_FAMILY_WORLD] = "world",
};

const char *
sp_family_name (SpFamily family)
{
  return (unsigned) family < SP_FAMILY_N ? family_names[family] : NULL;
}

gboolean
sp_family_from_name (const char *name, SpFamily *out_family)
{
  g_return_val_if_fail (out_family != NULL, FALSE);
  if (name == NULL)
    return FALSE;
  for (int f = 0; f < SP_FAMILY_N; f++)
    if (strcmp (name, family_names[f]) == 0)
      {
        *out_family = (SpFamily) f;
        return TRUE;
      }
  return FALSE;
}

void
sp_groups_options_init (SpGroupsOptions *opts)
{
  g_return_if_fail (opts != NULL);
  memset (opts, 0, sizeof *opts);
  opts->devices_per_node = 8;
}

/* ---- storage -------------------------------------------------------------- */

static gboolean
no_memory (GError **error, const char *what, SpFamily f, guint64 count)
{
  g_set_error (error, SP_ERROR, SP_ERROR_UNSUPPORTED,
               "out of memory: cannot allocate %" G_GUINT64_FORMAT " %s for family %s",
               count, what, sp_family_name (f));
  return FALSE;
}

gboolean
sp_fam_begin (SpGroups *g, SpFamily f, guint32 n_groups, guint32 n_members, GError **error)
{
  SpFamilyData *d = &g->fam[f];
  g_return_val_if_fail (!d->built && d->members == NULL, FALSE);
  d->n_groups = n_groups;
  d->n_members = 0;
  d->cap_members = n_members;
  d->members = g_try_new (guint32, MAX (n_members, 1u));
  d->offsets = g_try_new (guint32, (gsize) n_groups + 1);
  if (d->members == NULL || d->offsets == NULL)
    return no_memory (error, "group members", f, (guint64) n_members + n_groups + 1);
  d->offsets[0] = 0; /* offsets[k > 0] are written by sp_fam_end_group */
  d->n_announced = n_groups;
  d->n_groups = 0;
  return TRUE;
}

void
sp_fam_end_group (SpFamilyData *d)
{
  d->offsets[++d->n_groups] = d->n_members;
}

gboolean
sp_fam_finish (SpGroups *g, SpFamily f, GError **error)
{
  SpFamilyData *d = &g->fam[f];
  guint32 world = g->opts.world_size;
  g_return_val_if_fail (d->members != NULL, FALSE);
  if (d->n_groups != d->n_announced || d->n_members != d->cap_members)
    {
      g_critical ("family %s: filled %u groups / %u ranks, announced %u / %u", sp_family_name (f),
                  d->n_groups, d->n_members, d->n_announced, d->cap_members);
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_GROUPS,
                   "internal error: family %s was built inconsistently", sp_family_name (f));
      return FALSE;
    }
  d->group_of = g_try_new (guint32, MAX (world, 1u));
  d->rank_in = g_try_new (guint32, MAX (world, 1u));
  if (d->group_of == NULL || d->rank_in == NULL)
    return no_memory (error, "rank lookups", f, 2 * (guint64) world);
  memset (d->group_of, 0xff, (gsize) world * sizeof (guint32));
  for (guint32 k = 0; k < d->n_groups; k++)
    for (guint32 m = d->offsets[k]; m < d->offsets[k + 1]; m++)
      {
        guint32 r = d->members[m];
        /* Never true for the builders' own arithmetic; kept because the
         * disjointness of a family is what makes one communicator per
         * rank possible, and a silent overlap would corrupt every user. */
        if (G_UNLIKELY (r >= world || d->group_of[r] != SP_NO_GROUP))
          {
            g_critical ("family %s: rank %u out of range or in two groups", sp_family_name (f), r);
            g_set_error (error, SP_ERROR, SP_ERROR_INVALID_GROUPS,
                         "internal error: family %s names rank %u twice or past world size %u",
                         sp_family_name (f), r, world);
            return FALSE;
          }
        d->group_of[r] = k;
        d->rank_in[r] = m - d->offsets[k];
      }
  d->built = TRUE;
  return TRUE;
}

void
sp_fam_label_shared (SpFamilyData *d, const char *label)
{
  g_free (d->label_shared);
  d->label_shared = g_strdup (label);
}

gboolean
sp_fam_label_prefix (SpFamilyData *d, const char *prefix, GError **error)
{
  /* Fixed-size slots: no offsets array, label i at arena + i * stride. */
  gsize digits = 1;
  for (guint32 n = d->n_groups > 0 ? d->n_groups - 1 : 0; n >= 10; n /= 10)
    digits++;
  gsize stride = strlen (prefix) + digits + 1;
  d->label_arena = g_try_malloc (MAX ((gsize) d->n_groups * stride, 1));
  if (d->label_arena == NULL)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_UNSUPPORTED,
                   "out of memory: cannot allocate %u group labels", d->n_groups);
      return FALSE;
    }
  d->label_stride = stride;
  for (guint32 i = 0; i < d->n_groups; i++)
    g_snprintf (d->label_arena + (gsize) i * stride, stride, "%s%u", prefix, i);
  return TRUE;
}

gboolean
sp_groups_create (SpGroups *g, SpFamily f, guint32 first, guint32 count, GError **error)
{
  if ((guint64) g->n_created + count > g->cap_created)
    {
      guint64 cap = MAX ((guint64) g->cap_created * 2, (guint64) g->n_created + count);
      cap = MAX (cap, 64);
      if (cap > G_MAXUINT32)
        cap = G_MAXUINT32;
      SpCreated *grown = g_try_realloc_n (g->created, cap, sizeof *grown);
      if (grown == NULL || cap < (guint64) g->n_created + count)
        return no_memory (error, "creation-order entries", f, cap);
      g->created = grown;
      g->cap_created = (guint32) cap;
    }
  for (guint32 i = 0; i < count; i++)
    g->created[g->n_created++] = (SpCreated) { f, first + i };
  return TRUE;
}

void
sp_groups_warn (SpGroups *g, const char *format, ...)
{
  va_list ap;
  va_start (ap, format);
  char *text = g_strdup_vprintf (format, ap);
  va_end (ap);
  /* keep the array NULL-terminated: replace the terminator, re-add it */
  g_ptr_array_index (g->warnings, g->warnings->len - 1) = text;
  g_ptr_array_add (g->warnings, NULL);
}

static void
fam_clear (SpFamilyData *d)
{
  g_free (d->members);
  g_free (d->offsets);
  g_free (d->group_of);
  g_free (d->rank_in);
  g_free (d->label_shared);
  g_free (d->label_arena);
  memset (d, 0, sizeof *d);
}

void
sp_groups_free (SpGroups *groups)
{
  if (groups == NULL)
    return;
  for (int f = 0; f < SP_FAMILY_N; f++)
    fam_clear (&groups->fam[f]);
  g_free (groups->created);
  g_ptr_array_unref (groups->warnings);
  g_free (groups);
}

/* ---- building ------------------------------------------------------------- */

static gboolean
check_size (const char *what, guint32 value, GError **error)
{
  if ((guint64) value > SP_GROUPS_MAX_SIZE)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "%s %u is too large: expected at most %" G_GUINT64_FORMAT, what, value,
                   SP_GROUPS_MAX_SIZE);
      return FALSE;
    }
  return TRUE;
}

static gboolean
check_options (const SpGroupsOptions *o, GError **error)
{
  if (o->world_size == 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "world size 0 is invalid: expected 1 to %" G_GUINT64_FORMAT, SP_GROUPS_MAX_SIZE);
      return FALSE;
    }
  if (o->devices_per_node == 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "devices per node 0 is invalid (DeepSpeed divides by it): expected 1 to %"
                   G_GUINT64_FORMAT, SP_GROUPS_MAX_SIZE);
      return FALSE;
    }
  if (!check_size ("world size", o->world_size, error)
      || !check_size ("devices per node", o->devices_per_node, error)
      || !check_size ("shard size", o->shard_size, error)
      || !check_size ("tensor-parallel size", o->tensor_parallel, error)
      || !check_size ("pipeline-parallel size", o->pipeline_parallel, error)
      || !check_size ("expert-parallel size", o->expert_parallel, error)
      || !check_size ("ZeRO++ hpZ group size", o->zero_param_group_size, error))
    return FALSE;
  if (o->hierarchical && o->shard_size == 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "hierarchical all-gather needs a MiCS shard size: none was given");
      return FALSE;
    }
  if (o->data_before_expert && o->expert_parallel == 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "data-before-expert ordering needs an expert-parallel size: none was given");
      return FALSE;
    }
  return sp_groups_check_tp (o, error) && sp_groups_check_expert (o, error)
         && sp_groups_check_zero_param (o, error) && sp_groups_check_mics (o, error)
         && sp_groups_check_a2a (o, error);
}

static gboolean
build_world (SpGroups *g, GError **error)
{
  guint32 world = g->opts.world_size;
  SpFamilyData *d = &g->fam[SP_FAMILY_WORLD];
  if (!sp_fam_begin (g, SP_FAMILY_WORLD, 1, world, error))
    return FALSE;
  for (guint32 r = 0; r < world; r++)
    sp_fam_push (d, r);
  sp_fam_end_group (d);
  /* No lookups: every rank is itself in group 0 (sp_groups_find computes
   * it), which saves 8 bytes per rank on the largest layouts. */
  d->built = TRUE;
  return TRUE;
}

gboolean
sp_groups_options_check (const SpGroupsOptions *opts, GError **error)
{
  g_return_val_if_fail (opts != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);
  return check_options (opts, error);
}

SpGroups *
sp_groups_build (const SpGroupsOptions *opts, GError **error)
{
  g_return_val_if_fail (opts != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);
  if (!check_options (opts, error))
    return NULL;

  g_autoptr (SpGroups) g = g_new0 (SpGroups, 1);
  g->opts = *opts;
  g->warnings = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (g->warnings, NULL);

  /* The fixed creation order of groups.h: TP mesh, expert, hpZ, MiCS, a2a. */
  if (!build_world (g, error))
    return NULL;
  if (opts->tensor_parallel > 0 && !sp_groups_build_tp (g, error))
    return NULL;
  if (opts->expert_parallel > 0 && !sp_groups_build_expert (g, error))
    return NULL;
  if (opts->zero_param_group_size > 0 && !sp_groups_build_zero_param (g, error))
    return NULL;
  if (opts->shard_size > 0 && !sp_groups_build_mics (g, error))
    return NULL;
  if (opts->local_all_to_all && !sp_groups_build_a2a (g, error))
    return NULL;
  return g_steal_pointer (&g);
}

/* ---- accessors ------------------------------------------------------------ */

const SpGroupsOptions *
sp_groups_options (const SpGroups *groups)
{
  g_return_val_if_fail (groups != NULL, NULL);
  return &groups->opts;
}

guint32
sp_groups_world_size (const SpGroups *groups)
{
  g_return_val_if_fail (groups != NULL, 0);
  return groups->opts.world_size;
}

gboolean
sp_groups_has_family (const SpGroups *groups, SpFamily family)
{
  g_return_val_if_fail (groups != NULL, FALSE);
  return (unsigned) family < SP_FAMILY_N && groups->fam[family].built;
}

guint32
sp_groups_n_groups (const SpGroups *groups, SpFamily family)
{
  if (!sp_groups_has_family (groups, family))
    return 0;
  return groups->fam[family].n_groups;
}

const guint32 *
sp_groups_members (const SpGroups *groups, SpFamily family, guint32 index, guint32 *out_size)
{
  g_return_val_if_fail (sp_groups_has_family (groups, family), NULL);
  const SpFamilyData *d = &groups->fam[family];
  g_return_val_if_fail (index < d->n_groups, NULL);
  if (out_size)
    *out_size = d->offsets[index + 1] - d->offsets[index];
  return d->members + d->offsets[index];
}

guint32
sp_groups_n_within (const SpGroups *groups, SpFamily family, guint32 span)
{
  if (span == 0 || !sp_groups_has_family (groups, family))
    return 0;
  const SpFamilyData *d = &groups->fam[family];
  guint32 inside = 0;
  for (guint32 g = 0; g < d->n_groups; g++)
    {
      const guint32 *m = d->members + d->offsets[g];
      guint32 size = d->offsets[g + 1] - d->offsets[g], j = 1;
      while (j < size && m[j] / span == m[0] / span)
        j++;
      inside += j >= size;
    }
  return inside;
}

const char *
sp_groups_label (const SpGroups *groups, SpFamily family, guint32 index)
{
  g_return_val_if_fail (sp_groups_has_family (groups, family), NULL);
  const SpFamilyData *d = &groups->fam[family];
  g_return_val_if_fail (index < d->n_groups, NULL);
  if (d->label_shared)
    return d->label_shared;
  if (d->label_arena)
    return d->label_arena + (gsize) index * d->label_stride;
  return NULL;
}

gboolean
sp_groups_find (const SpGroups *groups, SpFamily family, guint32 rank, guint32 *out_index,
                guint32 *out_group_rank)
{
  g_return_val_if_fail (groups != NULL, FALSE);
  if (!sp_groups_has_family (groups, family) || rank >= groups->opts.world_size)
    return FALSE;
  guint32 index = 0, group_rank = rank;
  if (family != SP_FAMILY_WORLD)
    {
      const SpFamilyData *d = &groups->fam[family];
      index = d->group_of[rank];
      if (index == SP_NO_GROUP)
        return FALSE;
      group_rank = d->rank_in[rank];
    }
  if (out_index)
    *out_index = index;
  if (out_group_rank)
    *out_group_rank = group_rank;
  return TRUE;
}

guint32
sp_groups_n_created (const SpGroups *groups)
{
  g_return_val_if_fail (groups != NULL, 0);
  return groups->n_created;
}

void
sp_groups_created (const SpGroups *groups, guint32 i, SpFamily *out_family, guint32 *out_index)
{
  g_return_if_fail (groups != NULL && i < groups->n_created);
  if (out_family)
    *out_family = (SpFamily) groups->created[i].family;
  if (out_index)
    *out_index = groups->created[i].index;
}

const char *const *
sp_groups_warnings (const SpGroups *groups)
{
  g_return_val_if_fail (groups != NULL, NULL);
  return (const char *const *) groups->warnings->pdata;
}
