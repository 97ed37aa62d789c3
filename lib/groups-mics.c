/* MiCS groups: DeepSpeed's _generate_mics_config (pp = 1) followed by
 * create_mics_comm_groups (reference/deepspeed-semantics.md §1.1–§1.2).
 * Always over the global world: MiCS ignores any TP/PP layout. */
#include "config.h"
#include "groups-internal.h"

gboolean
sp_groups_check_mics (const SpGroupsOptions *o, GError **error)
{
  guint32 w = o->world_size, s = o->shard_size, d = o->devices_per_node;
  if (s == 0)
    return TRUE;
  if (w % s != 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_GROUPS,
                   "shard size %u does not divide world size %u", s, w);
      return FALSE;
    }
  if (!o->hierarchical)
    return TRUE;
  guint32 span = s / d; /* DeepSpeed's span_nodes: floor division */
  if (span <= 1)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_GROUPS,
                   "hierarchical all-gather needs a shard group spanning at least 2 nodes: "
                   "shard size %u // %u devices per node = %u", s, d, span);
      return FALSE;
    }
  if (s % span != 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_GROUPS,
                   "hierarchical all-gather: shard size %u is not divisible by its node span %u "
                   "(= %u // %u devices per node)", s, span, s, d);
      return FALSE;
    }
  return TRUE;
}

gboolean
sp_groups_build_mics (SpGroups *g, GError **error)
{
  const SpGroupsOptions *o = &g->opts;
  guint32 w = o->world_size, s = o->shard_size;
  guint32 r = w / s; /* shard groups = replicate group size */

  /* Shard groups: the rows of the (W/S) x S matrix of ranks. */
  SpFamilyData *shard = &g->fam[SP_FAMILY_SHARD];
  if (!sp_fam_begin (g, SP_FAMILY_SHARD, r, w, error))
    return FALSE;
  for (guint32 k = 0; k < r; k++)
    {
      for (guint32 t = 0; t < s; t++)
        sp_fam_push (shard, k * s + t);
      sp_fam_end_group (shard);
    }
  if (!sp_fam_finish (g, SP_FAMILY_SHARD, error)
      || !sp_groups_create (g, SP_FAMILY_SHARD, 0, r, error))
    return FALSE;

  /* Replicate groups: the columns, in column order.  When S == W they are
   * W singletons: kept here so every rank finds its (size 1) group, but
   * DeepSpeed creates no communicator for them (param_repli_group None). */
  SpFamilyData *repl = &g->fam[SP_FAMILY_REPLICATE];
  if (!sp_fam_begin (g, SP_FAMILY_REPLICATE, s, w, error))
    return FALSE;
  for (guint32 j = 0; j < s; j++)
    {
      for (guint32 k = 0; k < r; k++)
        sp_fam_push (repl, k * s + j);
      sp_fam_end_group (repl);
    }
  if (!sp_fam_finish (g, SP_FAMILY_REPLICATE, error))
    return FALSE;
  if (r > 1 && !sp_groups_create (g, SP_FAMILY_REPLICATE, 0, s, error))
    return FALSE;

  if (!o->hierarchical)
    return TRUE;

  /* "Nodes" are blocks of n = S // span ranks, which is D only when D
   * divides S (sp_groups_check_mics guarantees span >= 2, S % span == 0). */
  guint32 span = s / o->devices_per_node;
  guint32 n = s / span;
  SpFamilyData *intra = &g->fam[SP_FAMILY_SHARD_INTRA_NODE];
  if (!sp_fam_begin (g, SP_FAMILY_SHARD_INTRA_NODE, r * span, w, error))
    return FALSE;
  for (guint32 k = 0; k < r; k++)
    for (guint32 i = 0; i < span; i++)
      {
        for (guint32 t = 0; t < n; t++)
          sp_fam_push (intra, k * s + i * n + t);
        sp_fam_end_group (intra);
      }
  SpFamilyData *inter = &g->fam[SP_FAMILY_SHARD_INTER_NODE];
  if (!sp_fam_finish (g, SP_FAMILY_SHARD_INTRA_NODE, error)
      || !sp_fam_begin (g, SP_FAMILY_SHARD_INTER_NODE, r * n, w, error))
    return FALSE;
  for (guint32 k = 0; k < r; k++)
    for (guint32 l = 0; l < n; l++)
      {
        for (guint32 m = 0; m < span; m++)
          sp_fam_push (inter, k * s + m * n + l);
        sp_fam_end_group (inter);
      }
  if (!sp_fam_finish (g, SP_FAMILY_SHARD_INTER_NODE, error)
      || !sp_groups_create (g, SP_FAMILY_SHARD_INTRA_NODE, 0, r * span, error)
      || !sp_groups_create (g, SP_FAMILY_SHARD_INTER_NODE, 0, r * n, error))
    return FALSE;

  /* n >= D always (span <= S / D); n > D means every "intra-node" group
   * holds more ranks than a node has devices. */
  if (n != o->devices_per_node)
    sp_groups_warn (g, "shard_intra_node groups have %u ranks (shard size %u / node span %u), "
                    "not %u devices per node: DeepSpeed's \"intra-node\" groups straddle "
                    "physical nodes", n, s, span, o->devices_per_node);
  return TRUE;
}
