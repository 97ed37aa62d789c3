/* Expert-parallel (EP) and expert-data-parallel (EDP) groups, from
 * deepspeed/utils/groups.py (reference/deepspeed-semantics.md §2.1–§2.3).
 *
 * DeepSpeed has two builders and which one runs depends on whether an mpu
 * with tensor parallelism is present:
 *  - tensor_parallel > 0: _create_expert_data_and_model_parallel, rank lists
 *    from _get_expert_parallel_ranks(W, tp, ep, pp, data_before_expert),
 *    EP groups created before EDP groups.  The mpu's data-parallel size is
 *    W / (tp * pp).
 *  - tensor_parallel == 0: _create_expert_and_data_parallel, pp from the
 *    mpu (pipeline_parallel, else 1), EDP groups created before EP groups.
 * Every group of both families is labelled "ep_size_<E>", the key under
 * which DeepSpeed stores it. */
#include "config.h"
#include "groups-internal.h"

static guint32
pipeline_size (const SpGroupsOptions *o)
{
  return o->pipeline_parallel > 0 ? o->pipeline_parallel : 1;
}

static gboolean
check_with_tp (const SpGroupsOptions *o, GError **error)
{
  guint32 w = o->world_size, tp = o->tensor_parallel, pp = pipeline_size (o);
  guint32 ep = o->expert_parallel;
  guint64 tpp = (guint64) tp * pp;
  if (w % tp != 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_GROUPS,
                   "world size %u is not divisible by tensor-parallel size %u", w, tp);
      return FALSE;
    }
  if (w % tpp != 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_GROUPS,
                   "world size %u is not divisible by tensor-parallel size %u x pipeline-parallel "
                   "size %u = %" G_GUINT64_FORMAT, w, tp, pp, tpp);
      return FALSE;
    }
  guint32 dp = (guint32) (w / tpp);
  if (dp % ep != 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_GROUPS,
                   "data-parallel size %u (world size %u / (tensor %u x pipeline %u)) is not "
                   "divisible by expert-parallel size %u", dp, w, tp, pp, ep);
      return FALSE;
    }
  return TRUE;
}

static gboolean
check_without_tp (const SpGroupsOptions *o, GError **error)
{
  guint32 w = o->world_size, pp = pipeline_size (o), ep = o->expert_parallel;
  if (pp > w)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_GROUPS,
                   "pipeline-parallel size %u exceeds world size %u: the pipeline stage size "
                   "%u // %u is 0 (DeepSpeed raises ValueError)", pp, w, w, pp);
      return FALSE;
    }
  guint32 stride = w / pp;
  if (stride % ep != 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_GROUPS,
                   "pipeline stage size %u (world size %u // pipeline %u) is not divisible by "
                   "expert-parallel size %u", stride, w, pp, ep);
      return FALSE;
    }
  /* DeepSpeed never checks W % pp: it walks stages range(0, W, W // pp).
   * A last, partial stage always names ranks >= W in its first (EDP)
   * group, which torch's new_group rejects with ValueError. */
  if (w % stride != 0)
    {
      guint32 last = w / stride * stride;
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_GROUPS,
                   "pipeline stage size %u (world size %u // pipeline %u) does not divide world "
                   "size %u: the last stage names ranks %u..%u past the world (torch raises "
                   "ValueError)", stride, w, pp, w, w, last + stride - 1);
      return FALSE;
    }
  return TRUE;
}

gboolean
sp_groups_check_expert (const SpGroupsOptions *o, GError **error)
{
  if (o->expert_parallel == 0)
    return TRUE;
  return o->tensor_parallel > 0 ? check_with_tp (o, error) : check_without_tp (o, error);
}

/* _get_expert_parallel_ranks.  Lane (stage st, TP lane i) has members
 * m[k] = st*stride + i + k*tp, k < dp.  Its order list is m ascending (E+D)
 * or, with data before expert and b = dp / ep, o[ds*ep + j] = m[ds + j*b].
 * EP chunk c, position e is o[c*ep + e]: m[c*ep + e] or m[c + e*b]. */
static gboolean
build_with_tp (SpGroups *g, const char *label, GError **error)
{
  const SpGroupsOptions *o = &g->opts;
  guint32 w = o->world_size, tp = o->tensor_parallel, pp = pipeline_size (o);
  guint32 ep = o->expert_parallel;
  guint32 dp = w / tp / pp, stride = w / pp, b = dp / ep;
  gboolean de = o->data_before_expert;
#define LANE_MEMBER(c, e) (base + i + (de ? (c) + (e) * b : (c) * ep + (e)) * tp)

  SpFamilyData *epf = &g->fam[SP_FAMILY_EXPERT];
  if (!sp_fam_begin (g, SP_FAMILY_EXPERT, pp * tp * b, w, error))
    return FALSE;
  for (guint32 st = 0; st < pp; st++)
    for (guint32 i = 0, base = st * stride; i < tp; i++)
      for (guint32 c = 0; c < b; c++)
        {
          for (guint32 e = 0; e < ep; e++)
            sp_fam_push (epf, LANE_MEMBER (c, e));
          sp_fam_end_group (epf);
        }
  SpFamilyData *edp = &g->fam[SP_FAMILY_EXPERT_DATA];
  if (!sp_fam_finish (g, SP_FAMILY_EXPERT, error)
      || !sp_fam_begin (g, SP_FAMILY_EXPERT_DATA, pp * tp * ep, w, error))
    return FALSE;
  for (guint32 st = 0; st < pp; st++)
    for (guint32 i = 0, base = st * stride; i < tp; i++)
      for (guint32 e = 0; e < ep; e++)
        {
          for (guint32 c = 0; c < b; c++)
            sp_fam_push (edp, LANE_MEMBER (c, e));
          sp_fam_end_group (edp);
        }
#undef LANE_MEMBER
  if (!sp_fam_finish (g, SP_FAMILY_EXPERT_DATA, error))
    return FALSE;
  sp_fam_label_shared (epf, label);
  sp_fam_label_shared (edp, label);
  return sp_groups_create (g, SP_FAMILY_EXPERT, 0, epf->n_groups, error)
         && sp_groups_create (g, SP_FAMILY_EXPERT_DATA, 0, edp->n_groups, error);
}

/* _create_expert_and_data_parallel: stages of stride = W // pp ranks,
 * per = stride / ep. */
static gboolean
build_without_tp (SpGroups *g, const char *label, GError **error)
{
  const SpGroupsOptions *o = &g->opts;
  guint32 w = o->world_size, pp = pipeline_size (o), ep = o->expert_parallel;
  guint32 stride = w / pp, stages = w / stride, per = stride / ep;
  gboolean de = o->data_before_expert;

  SpFamilyData *edp = &g->fam[SP_FAMILY_EXPERT_DATA];
  if (!sp_fam_begin (g, SP_FAMILY_EXPERT_DATA, stages * ep, w, error))
    return FALSE;
  for (guint32 st = 0; st < stages; st++)
    for (guint32 i = 0, base = st * stride; i < ep; i++)
      {
        /* D+E: range(s + i*per, s + (i+1)*per); E+D: range(s + i, s + stride, ep) */
        for (guint32 t = 0; t < per; t++)
          sp_fam_push (edp, de ? base + i * per + t : base + i + t * ep);
        sp_fam_end_group (edp);
      }
  SpFamilyData *epf = &g->fam[SP_FAMILY_EXPERT];
  if (!sp_fam_finish (g, SP_FAMILY_EXPERT_DATA, error)
      || !sp_fam_begin (g, SP_FAMILY_EXPERT, w / ep, w, error))
    return FALSE;
  if (de)
    {
      /* per stage, range(s + i, s + stride, per) for i < per */
      for (guint32 st = 0; st < stages; st++)
        for (guint32 i = 0, base = st * stride; i < per; i++)
          {
            for (guint32 t = 0; t < ep; t++)
              sp_fam_push (epf, base + i + t * per);
            sp_fam_end_group (epf);
          }
    }
  else
    {
      /* global blocks range(i*ep, (i+1)*ep), not per stage (equivalent) */
      for (guint32 i = 0; i < w / ep; i++)
        {
          for (guint32 t = 0; t < ep; t++)
            sp_fam_push (epf, i * ep + t);
          sp_fam_end_group (epf);
        }
    }
  if (!sp_fam_finish (g, SP_FAMILY_EXPERT, error))
    return FALSE;
  sp_fam_label_shared (epf, label);
  sp_fam_label_shared (edp, label);
  if (w % pp != 0)
    sp_groups_warn (g, "pipeline-parallel size %u does not divide world size %u: DeepSpeed "
                    "builds the expert groups over %u pipeline stages of %u ranks",
                    pp, w, stages, stride);
  return sp_groups_create (g, SP_FAMILY_EXPERT_DATA, 0, edp->n_groups, error)
         && sp_groups_create (g, SP_FAMILY_EXPERT, 0, epf->n_groups, error);
}

gboolean
sp_groups_build_expert (SpGroups *g, GError **error)
{
  g_autofree char *label = g_strdup_printf ("ep_size_%u", g->opts.expert_parallel);
  return g->opts.tensor_parallel > 0 ? build_with_tp (g, label, error)
                                     : build_without_tp (g, label, error);
}
