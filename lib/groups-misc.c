/* The smaller families (reference/deepspeed-semantics.md §2.4):
 * the tensor-parallel mesh, ZeRO++ hpZ (zero_param) and qgZ's local
 * all-to-all groups. */
#include "config.h"
#include "groups-internal.h"

/* ---- _init_tp_mesh_device(tp): DeviceMesh (dp, tp), row-major ------------- */

gboolean
sp_groups_check_tp (const SpGroupsOptions *o, GError **error)
{
  guint32 w = o->world_size, tp = o->tensor_parallel;
  if (tp == 0 || w % tp == 0)
    return TRUE;
  g_set_error (error, SP_ERROR, SP_ERROR_INVALID_GROUPS,
               "world size %u is not divisible by tensor-parallel size %u: the (data, tensor) "
               "device mesh must cover the world", w, tp);
  return FALSE;
}

/* torch's DeviceMesh creates its groups dimension by dimension, dim 0
 * first: for mesh (dp, tp) that is the data groups (columns, stride tp),
 * then the tensor groups (rows, consecutive blocks of tp), each in row
 * order, singletons included. */
gboolean
sp_groups_build_tp (SpGroups *g, GError **error)
{
  guint32 w = g->opts.world_size, tp = g->opts.tensor_parallel, dp = w / tp;
  SpFamilyData *data = &g->fam[SP_FAMILY_DATA];
  if (!sp_fam_begin (g, SP_FAMILY_DATA, tp, w, error))
    return FALSE;
  for (guint32 j = 0; j < tp; j++)
    {
      for (guint32 k = 0; k < dp; k++)
        sp_fam_push (data, j + k * tp);
      sp_fam_end_group (data);
    }
  SpFamilyData *tensor = &g->fam[SP_FAMILY_TENSOR];
  if (!sp_fam_finish (g, SP_FAMILY_DATA, error)
      || !sp_fam_begin (g, SP_FAMILY_TENSOR, dp, w, error))
    return FALSE;
  for (guint32 k = 0; k < dp; k++)
    {
      for (guint32 t = 0; t < tp; t++)
        sp_fam_push (tensor, k * tp + t);
      sp_fam_end_group (tensor);
    }
  return sp_fam_finish (g, SP_FAMILY_TENSOR, error)
         && sp_groups_create (g, SP_FAMILY_DATA, 0, tp, error)
         && sp_groups_create (g, SP_FAMILY_TENSOR, 0, dp, error);
}

/* ---- _create_zero_param_parallel_group(g): blocks of min(g, W) ------------ */

gboolean
sp_groups_check_zero_param (const SpGroupsOptions *o, GError **error)
{
  guint32 w = o->world_size, z = o->zero_param_group_size;
  if (z == 0)
    return TRUE;
  guint32 size = MIN (z, w);
  if (w % size == 0)
    return TRUE;
  g_set_error (error, SP_ERROR, SP_ERROR_INVALID_GROUPS,
               "world size %u is not divisible by the ZeRO++ hpZ group size %u (= min(%u, %u))",
               w, size, z, w);
  return FALSE;
}

gboolean
sp_groups_build_zero_param (SpGroups *g, GError **error)
{
  guint32 w = g->opts.world_size, size = MIN (g->opts.zero_param_group_size, w);
  SpFamilyData *d = &g->fam[SP_FAMILY_ZERO_PARAM];
  if (!sp_fam_begin (g, SP_FAMILY_ZERO_PARAM, w / size, w, error))
    return FALSE;
  for (guint32 i = 0; i < w / size; i++)
    {
      for (guint32 t = 0; t < size; t++)
        sp_fam_push (d, i * size + t);
      sp_fam_end_group (d);
    }
  return sp_fam_finish (g, SP_FAMILY_ZERO_PARAM, error)
         && sp_groups_create (g, SP_FAMILY_ZERO_PARAM, 0, w / size, error);
}

/* ---- _get_local_all_to_all_group() ---------------------------------------- */

gboolean
sp_groups_check_a2a (const SpGroupsOptions *o, GError **error)
{
  guint32 w = o->world_size, d = o->devices_per_node;
  if (!o->local_all_to_all || w / d != 1 || w == d)
    return TRUE;
  g_set_error (error, SP_ERROR, SP_ERROR_INVALID_GROUPS,
               "local all-to-all groups: world size %u spans one node (%u // %u devices per "
               "node = 1) but is not equal to %u (DeepSpeed asserts it)", w, w, d, d);
  return FALSE;
}

/* nodes = W // D.  nodes 0: local_0 = every rank; nodes 1 (W == D):
 * local_0 = [0, D); else local_i = [iD, iD + D) for i < nodes, then
 * global_i = [i + jD for j < nodes] for i < D — exactly `nodes` members,
 * so with W % D != 0 the ranks past nodes*D are in no group at all.  With
 * nodes <= 1 the global family is built with no groups. */
gboolean
sp_groups_build_a2a (SpGroups *g, GError **error)
{
  guint32 w = g->opts.world_size, dev = g->opts.devices_per_node;
  guint32 nodes = w / dev;
  guint32 n_local = nodes <= 1 ? 1 : nodes;
  guint32 local_size = nodes == 0 ? w : dev;
  guint32 n_global = nodes <= 1 ? 0 : dev;

  SpFamilyData *local = &g->fam[SP_FAMILY_A2A_LOCAL];
  if (!sp_fam_begin (g, SP_FAMILY_A2A_LOCAL, n_local, n_local * local_size, error))
    return FALSE;
  for (guint32 i = 0; i < n_local; i++)
    {
      for (guint32 j = 0; j < local_size; j++)
        sp_fam_push (local, i * dev + j);
      sp_fam_end_group (local);
    }
  SpFamilyData *global = &g->fam[SP_FAMILY_A2A_GLOBAL];
  if (!sp_fam_finish (g, SP_FAMILY_A2A_LOCAL, error)
      || !sp_fam_label_prefix (local, "local_", error)
      || !sp_fam_begin (g, SP_FAMILY_A2A_GLOBAL, n_global, n_global * nodes, error))
    return FALSE;
  for (guint32 i = 0; i < n_global; i++)
    {
      for (guint32 j = 0; j < nodes; j++)
        sp_fam_push (global, i + j * dev);
      sp_fam_end_group (global);
    }
  if (!sp_fam_finish (g, SP_FAMILY_A2A_GLOBAL, error)
      || !sp_fam_label_prefix (global, "global_", error)
      || !sp_groups_create (g, SP_FAMILY_A2A_LOCAL, 0, n_local, error)
      || !sp_groups_create (g, SP_FAMILY_A2A_GLOBAL, 0, n_global, error))
    return FALSE;

  if (nodes >= 2 && w % dev != 0)
    {
      guint32 first = nodes * dev;
      if (first == w - 1)
        sp_groups_warn (g, "rank %u is in no local all-to-all group: world size %u is not a "
                        "multiple of %u devices per node", first, w, dev);
      else
        sp_groups_warn (g, "ranks %u..%u are in no local all-to-all group: world size %u is not "
                        "a multiple of %u devices per node", first, w - 1, w, dev);
    }
  return TRUE;
}
