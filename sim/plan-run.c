/* sp_sim_run_plan_full(): every op of a plan on a topology
 * (sim/shardplan/sim.h).
 *
 * Contention none / family: a list scheduler over ranks: per (stream, rank)
 * the time the stream is free; an op starts on a group when every member is
 * ready (its deps done there and its stream free), so the cost of one op is
 * O(W) plus the cost of its collective, which is computed once per (kind,
 * bytes, family, algorithm) and reused for every later op of that shape.
 * The same scheduler with every collective costing 0 gives the compute-only
 * path of every mode.  Contention step: plan-step.c. */
#include "config.h"
#include "plan-run.h"

#include <math.h>
#include <string.h>

typedef struct {
  SpColl coll;
  guint64 bytes;
  SpFamily family;
  SpAlgo algo;
  guint32 src, dst; /* p2p */
  guint64 *dur; /* per group of the family, ns */
} CostEntry;

static void
cost_entry_clear (gpointer p)
{
  g_free (((CostEntry *) p)->dur);
}

gboolean
sp_plan_shape_equal (const SpShape *a, const SpShape *b)
{
  return a->n == b->n && a->nodes == b->nodes && a->ppn == b->ppn && a->nics_used == b->nics_used
         && a->n_channels == b->n_channels && a->intra_gbs == b->intra_gbs
         && a->nic_gbs == b->nic_gbs && a->node_net_gbs == b->node_net_gbs
         && a->ring_gbs == b->ring_gbs && a->intra_near == b->intra_near
         && a->intra_far == b->intra_far && a->gpu_nics == b->gpu_nics
         && a->net_leaf_factor == b->net_leaf_factor && a->leaf_nodes == b->leaf_nodes
         && a->leaf_active == b->leaf_active;
}

/* Every group alone (no contention between groups): sp_sim_estimate per
 * distinct group shape. */
static gboolean
cost_isolated (SpPlanCtx *c, const SpOp *op, SpSimModel model, guint64 *dur, GError **error)
{
  guint32 ng = sp_groups_n_groups (c->groups, op->family);
  g_autoptr (GArray) shapes = g_array_new (FALSE, FALSE, sizeof (SpShape));
  g_autoptr (GArray) times = g_array_new (FALSE, FALSE, sizeof (guint64));
  for (guint32 g = 0; g < ng; g++)
    {
      guint32 n, pair[2];
      const guint32 *m = sp_plan_op_members (c->groups, op, g, pair, &n);
      dur[g] = 0;
      if (n <= 1)
        continue;
      SpShape sh;
      if (!sp_shape_init (&sh, c->spec, m, n, error))
        return FALSE;
      guint i;
      for (i = 0; i < shapes->len; i++)
        if (sp_plan_shape_equal (&g_array_index (shapes, SpShape, i), &sh))
          break;
      if (i == shapes->len)
        {
          guint64 t;
          if (!sp_plan_op_estimate (c->topo, model, op, m, n, &t, error))
            return FALSE;
          g_array_append_val (shapes, sh);
          g_array_append_val (times, t);
        }
      dur[g] = g_array_index (times, guint64, i);
    }
  return TRUE;
}

/* Every group of the family at once on one DES network (they contend for
 * shared links).  FALSE without error when the DES cannot hold them all
 * (too many flows): the caller falls back to cost_isolated(). */
static gboolean
cost_concurrent (SpPlanCtx *c, const SpOp *op, guint64 *dur, gboolean *out_fallback, GError **error)
{
  guint32 ng = sp_groups_n_groups (c->groups, op->family);
  if (c->net == NULL)
    c->net = sp_net_new (c->spec);
  SpEngine *eng = sp_engine_new (c->net, NULL, NULL);
  SpDesColl **dc = g_new0 (SpDesColl *, ng);
  gboolean ok = TRUE;
  *out_fallback = FALSE;
  for (guint32 g = 0; g < ng && ok; g++)
    {
      guint32 n, pair[2];
      const guint32 *m = sp_plan_op_members (c->groups, op, g, pair, &n);
      if (n <= 1)
        continue;
      SpShape sh;
      SpCost cost;
      if (!sp_shape_init (&sh, c->spec, m, n, error)
          || !sp_cost_choose (&sh, op->kind, op->bytes, op->algorithm, SP_PROTO_AUTO, &cost,
                              error))
        {
          g_prefix_error (error, "op %u (%s): ", op->id, op->name);
          ok = FALSE;
          break;
        }
      GError *local = NULL;
      dc[g] = sp_des_coll_new (eng, c->net, &sh, &cost, op->kind, op->bytes, m, n, 0, op->name,
                               &local);
      if (dc[g] == NULL)
        {
          /* the DES cannot represent this many flows at once */
          g_clear_error (&local);
          *out_fallback = TRUE;
          ok = FALSE;
        }
    }
  if (ok)
    {
      ok = sp_engine_run (eng, error);
      if (!ok)
        g_prefix_error (error, "op %u (%s): ", op->id, op->name);
    }
  for (guint32 g = 0; g < ng; g++)
    {
      if (dc[g] == NULL)
        {
          dur[g] = 0;
          continue;
        }
      guint32 job = sp_des_coll_job (dc[g]);
      if (ok)
        dur[g] = sp_engine_job_end (eng, job) - sp_engine_job_start (eng, job);
      sp_des_coll_free (dc[g]);
    }
  g_free (dc);
  sp_engine_free (eng);
  return ok;
}

gboolean
sp_plan_op_estimate (const SpTopo *topo, SpSimModel model, const SpOp *op, const guint32 *m,
                     guint32 n, guint64 *out_ns, GError **error)
{
  SpCollRequest r;
  sp_coll_request_init (&r);
  r.coll = op->kind;
  r.bytes = op->bytes;
  r.n_ranks = n;
  r.ranks = m;
  r.algo = op->algorithm;
  SpCollEstimate est;
  if (!sp_sim_estimate (topo, model, &r, &est, error))
    {
      g_prefix_error (error, "op %u (%s): ", op->id, op->name);
      return FALSE;
    }
  *out_ns = est.time_ns;
  return TRUE;
}

gboolean
sp_plan_check_supported (const SpOp *op, GError **error)
{
  if (sp_sim_coll_supported (op->kind))
    return TRUE;
  g_set_error (error, SP_ERROR, SP_ERROR_UNSUPPORTED,
               "op %u (%s): collective '%s' is not simulated (accepted: all_reduce, "
               "all_gather, reduce_scatter, all_to_all, broadcast, reduce, send, recv, p2p)",
               op->id, op->name, sp_coll_name (op->kind) ? sp_coll_name (op->kind) : "?");
  return FALSE;
}

static const CostEntry *
cost_lookup (SpPlanCtx *c, const SpOp *op, GError **error)
{
  for (guint i = 0; i < c->cache->len; i++)
    {
      const CostEntry *e = &g_array_index (c->cache, CostEntry, i);
      if (e->coll == op->kind && e->bytes == op->bytes && e->family == op->family
          && e->algo == op->algorithm && e->src == op->src && e->dst == op->dst)
        return e;
    }
  if (!sp_plan_check_supported (op, error))
    return NULL;
  guint32 ng = sp_groups_n_groups (c->groups, op->family);
  CostEntry e = { op->kind, op->bytes, op->family, op->algorithm, op->src, op->dst,
                  g_new0 (guint64, ng ? ng : 1) };
  gboolean ok = TRUE;
  if (op->bytes > 0)
    {
      gboolean fallback = FALSE;
      if (c->contention == SP_SIM_CONTENTION_FAMILY)
        ok = cost_concurrent (c, op, e.dur, &fallback, error);
      if (c->contention == SP_SIM_CONTENTION_NONE || fallback)
        {
          c->contention_fallbacks += fallback;
          ok = cost_isolated (c, op, c->model, e.dur, error);
        }
    }
  if (!ok)
    {
      g_free (e.dur);
      return NULL;
    }
  g_array_append_val (c->cache, e);
  return &g_array_index (c->cache, CostEntry, c->cache->len - 1);
}

/* Duration of a kernel op (compute / quantize / dequantize / quant_reduce),
 * ns; SP_SIM_HORIZON_NS + 1 when it is longer than the simulator follows. */
guint64
sp_plan_kernel_ns (const SpPlanCtx *c, const SpOp *op)
{
  if (op->flops > 0)
    return sp_sim_horizon_ns ((double) op->flops / (c->spec->gpu_tflops * 1e3 * c->efficiency));
  if (op->kind != SP_COLL_COMPUTE && op->bytes > 0)
    return sp_sim_horizon_ns ((double) op->bytes / sp_topo_spec_memory_bandwidth_gbs (c->spec));
  return 0;
}

/* The public face of sp_plan_kernel_ns (shardplan/sim.h). */
guint64
sp_sim_kernel_ns (const SpTopo *topo, double compute_efficiency, const SpOp *op)
{
  g_return_val_if_fail (topo != NULL && op != NULL && compute_efficiency > 0, 0);
  SpPlanCtx c = { 0 };
  c.spec = sp_topo_spec (topo);
  c.efficiency = compute_efficiency;
  guint64 ns = sp_plan_kernel_ns (&c, op);
  return ns > SP_SIM_HORIZON_NS ? G_MAXUINT64 : ns;
}

/* Span of op `d` on rank r, NULL when r does not run it. */
const SpSpan *
sp_plan_span_at (const SpSimResult *res, const SpPlan *plan, guint32 d, guint32 r)
{
  if (res->per_rank[d])
    {
      const SpSpan *s = &res->spans[res->off[d] + r];
      return s->end == SP_SPAN_UNSET ? NULL : s;
    }
  guint32 gi, gr;
  if (!sp_plan_op_find (res->groups, sp_plan_op (plan, d), r, &gi, &gr))
    return NULL;
  const SpSpan *s = &res->spans[res->off[d] + gi];
  return s->end == SP_SPAN_UNSET ? NULL : s;
}

static guint64
deps_ready (const SpSimResult *res, const SpPlan *plan, const SpOp *op, const SpOp *parent,
            guint32 r)
{
  guint64 t = 0;
  for (int k = 0; k < 2; k++)
    {
      const SpOp *o = k == 0 ? op : parent;
      if (o == NULL)
        continue;
      for (guint32 i = 0; i < o->n_deps; i++)
        {
          const SpSpan *s = sp_plan_span_at (res, plan, o->deps[i], r);
          if (s != NULL && s->end > t)
            t = s->end;
        }
    }
  return t;
}

gboolean
sp_plan_composite_spans (const SpPlanCtx *c, SpSimResult *res, const SpOp *parent, guint32 last,
                         GError **error)
{
  const SpPlan *plan = c->plan;
  SpSpan *cs = res->spans + res->off[parent->id];
  for (guint32 r = 0; r < c->W; r++)
    {
      cs[r].start = cs[r].end = SP_SPAN_UNSET;
      for (guint32 s = parent->id + 1; s <= last; s++)
        {
          if (sp_plan_op (plan, s)->parent != (gint64) parent->id)
            continue;
          const SpSpan *x = sp_plan_span_at (res, plan, s, r);
          if (x == NULL)
            continue;
          if (cs[r].end == SP_SPAN_UNSET)
            cs[r] = *x;
          else
            {
              cs[r].start = MIN (cs[r].start, x->start);
              cs[r].end = MAX (cs[r].end, x->end);
            }
        }
      guint32 gi, gr;
      if (cs[r].end == SP_SPAN_UNSET && sp_groups_find (c->groups, parent->family, r, &gi, &gr))
        {
          g_set_error (error, SP_ERROR, SP_ERROR_SIMULATION,
                       "composite op %u (%s) ran none of its sub-ops on rank %u", parent->id,
                       parent->name, r);
          return FALSE;
        }
    }
  return TRUE;
}

static gboolean
past_horizon (guint32 o, const SpOp *op, GError **error)
{
  g_set_error (error, SP_ERROR, SP_ERROR_UNSUPPORTED, "op %u (%s) ends past the simulator's "
               "horizon of " SP_SIM_HORIZON_TEXT, o, op->name);
  return FALSE;
}

/* One pass of the schedule into res->spans; zero_comm costs every
 * collective 0 (the compute-only critical path). */
static gboolean
schedule (SpPlanCtx *c, SpSimResult *res, gboolean zero_comm, const guint32 *stream_of,
          guint32 n_streams, const gint64 *last_sub, GError **error)
{
  const SpPlan *plan = c->plan;
  guint32 W = c->W;
  guint64 n_spans = res->off[res->n_ops];
  for (guint64 i = 0; i < n_spans; i++)
    res->spans[i].start = res->spans[i].end = SP_SPAN_UNSET;
  g_autofree guint64 *ready = g_new0 (guint64, (gsize) n_streams * W);
  guint64 step = 0;
  for (guint32 o = 0; o < res->n_ops; o++)
    {
      const SpOp *op = sp_plan_op (plan, o);
      if (sp_coll_is_composite (op->kind))
        continue;
      const SpOp *parent = op->parent >= 0 ? sp_plan_op (plan, (guint32) op->parent) : NULL;
      guint64 *rd = ready + (gsize) stream_of[o] * W;
      SpSpan *sp = res->spans + res->off[o];
      if (op->family == SP_FAMILY_NONE)
        {
          guint64 d = sp_plan_kernel_ns (c, op);
          for (guint32 r = 0; r < W; r++)
            {
              guint64 t = MAX (rd[r], deps_ready (res, plan, op, parent, r));
              sp[r].start = t;
              sp[r].end = rd[r] = t + d;
              step = MAX (step, t + d);
            }
          if (step > SP_SIM_HORIZON_NS)
            return past_horizon (o, op, error);
        }
      else
        {
          const CostEntry *e = NULL;
          if (!zero_comm && (e = cost_lookup (c, op, error)) == NULL)
            return FALSE;
          guint32 ng = sp_groups_n_groups (c->groups, op->family);
          for (guint32 g = 0; g < ng; g++)
            {
              guint32 n, pair[2];
              const guint32 *m = sp_plan_op_members (c->groups, op, g, pair, &n);
              guint64 t = 0;
              for (guint32 i = 0; i < n; i++)
                t = MAX (t, MAX (rd[m[i]], deps_ready (res, plan, op, parent, m[i])));
              guint64 end = t + (e != NULL ? e->dur[g] : 0);
              sp[g].start = t;
              sp[g].end = end;
              for (guint32 i = 0; i < n; i++)
                rd[m[i]] = end;
              step = MAX (step, end);
            }
          if (step > SP_SIM_HORIZON_NS)
            return past_horizon (o, op, error);
        }
      if (parent != NULL && (gint64) o == last_sub[parent->id]
          && !sp_plan_composite_spans (c, res, parent, o, error))
        return FALSE;
      if (!zero_comm)
        sp_plan_progress (c, res->off[o + 1] - res->off[o]);
    }
  if (zero_comm)
    res->compute_only_ns = step;
  else
    res->step_ns = step;
  return TRUE;
}

/* Fail loud: every rank of every group ran the op, no span ends before it
 * starts, and every dependency ended before its dependant started. */
static gboolean
check (const SpPlanCtx *c, const SpSimResult *res, GError **error)
{
  const SpPlan *plan = c->plan;
  for (guint32 o = 0; o < res->n_ops; o++)
    {
      const SpOp *op = sp_plan_op (plan, o);
      const SpOp *parent = op->parent >= 0 ? sp_plan_op (plan, (guint32) op->parent) : NULL;
      for (guint32 r = 0; r < c->W; r++)
        {
          guint32 gi, gr;
          gboolean member = sp_plan_op_find (c->groups, op, r, &gi, &gr);
          const SpSpan *s = sp_plan_span_at (res, plan, o, r);
          if (member != (s != NULL))
            {
              g_set_error (error, SP_ERROR, SP_ERROR_SIMULATION,
                           "op %u (%s) %s on rank %u", o, op->name,
                           member ? "never ran" : "ran outside its family", r);
              return FALSE;
            }
          if (s == NULL)
            continue;
          if (s->end < s->start)
            {
              g_set_error (error, SP_ERROR, SP_ERROR_SIMULATION,
                           "op %u (%s) on rank %u has a negative duration", o, op->name, r);
              return FALSE;
            }
          if (sp_coll_is_composite (op->kind))
            continue;
          guint64 need = deps_ready (res, plan, op, parent, r);
          if (need > s->start)
            {
              g_set_error (error, SP_ERROR, SP_ERROR_SIMULATION,
                           "op %u (%s) started on rank %u at %" G_GUINT64_FORMAT
                           " ns before its dependencies ended (%" G_GUINT64_FORMAT " ns)",
                           o, op->name, r, s->start, need);
              return FALSE;
            }
        }
    }
  return TRUE;
}

const char *
sp_sim_contention_name (SpSimContention contention)
{
  switch (contention)
    {
    case SP_SIM_CONTENTION_DEFAULT:
      return "default";
    case SP_SIM_CONTENTION_NONE:
      return "none";
    case SP_SIM_CONTENTION_FAMILY:
      return "family";
    case SP_SIM_CONTENTION_STEP:
      return "step";
    default:
      return NULL;
    }
}

gboolean
sp_sim_contention_from_name (const char *name, SpSimContention *out)
{
  static const SpSimContention all[] = { SP_SIM_CONTENTION_DEFAULT, SP_SIM_CONTENTION_NONE,
                                         SP_SIM_CONTENTION_FAMILY, SP_SIM_CONTENTION_STEP };
  for (guint i = 0; name != NULL && i < G_N_ELEMENTS (all); i++)
    if (strcmp (name, sp_sim_contention_name (all[i])) == 0)
      {
        *out = all[i];
        return TRUE;
      }
  return FALSE;
}

SpSimContention
sp_sim_contention_default (SpSimModel model)
{
  /* step for des: it meets the speed targets (bench/RESULTS.md) */
  return model == SP_SIM_DES ? SP_SIM_CONTENTION_STEP : SP_SIM_CONTENTION_NONE;
}

void
sp_sim_plan_options_init (SpSimPlanOptions *options)
{
  memset (options, 0, sizeof *options);
  options->contention = SP_SIM_CONTENTION_DEFAULT;
}

SpSimResult *
sp_sim_run_plan (const SpTopo *topo, SpSimModel model, const SpPlan *plan,
                 const SpGroups *groups, GError **error)
{
  return sp_sim_run_plan_full (topo, model, plan, groups, NULL, error);
}

SpSimResult *
sp_sim_run_plan_full (const SpTopo *topo, SpSimModel model, const SpPlan *plan,
                      const SpGroups *groups, const SpSimPlanOptions *options, GError **error)
{
  g_return_val_if_fail (topo != NULL && plan != NULL && groups != NULL, NULL);
  guint32 W = sp_topo_world_size (topo);
  if (sp_sim_model_name (model) == NULL)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT, "unknown model %d", (int) model);
      return NULL;
    }
  SpSimContention contention = options ? options->contention : SP_SIM_CONTENTION_DEFAULT;
  if (sp_sim_contention_name (contention) == NULL)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "unknown contention model %d (accepted: default, none, family, step)",
                   (int) contention);
      return NULL;
    }
  if (contention == SP_SIM_CONTENTION_DEFAULT)
    contention = sp_sim_contention_default (model);
  if (model != SP_SIM_DES && contention != SP_SIM_CONTENTION_NONE)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "contention '%s' needs the des model (the %s model has no network: "
                   "accepted with it: none)", sp_sim_contention_name (contention),
                   sp_sim_model_name (model));
      return NULL;
    }
  if (sp_plan_world_size (plan) != W || sp_groups_world_size (groups) != W)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "the plan is for %u ranks and its groups for %u, but the topology has %u GPUs",
                   sp_plan_world_size (plan), sp_groups_world_size (groups), W);
      return NULL;
    }
  double eff = 0.5;
  const char *meta = sp_plan_get_meta (plan, "compute_efficiency");
  if (meta != NULL)
    {
      char *end = NULL;
      eff = g_ascii_strtod (meta, &end);
      if (end == meta || *end != '\0' || !(eff > 0 && eff <= 1))
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN,
                       "plan meta compute_efficiency '%s' is not a number in (0, 1]", meta);
          return NULL;
        }
    }
  guint32 n_ops = sp_plan_n_ops (plan);
  SpSimResult *res = g_new0 (SpSimResult, 1);
  res->groups = groups;
  res->n_ops = n_ops;
  res->world = W;
  res->off = g_new0 (guint64, n_ops + 1);
  res->per_rank = g_new0 (gboolean, n_ops ? n_ops : 1);
  res->dur = g_new0 (guint64, n_ops ? n_ops : 1);
  g_autofree gint64 *last_sub = g_new (gint64, n_ops ? n_ops : 1);
  g_autoptr (GHashTable) streams = g_hash_table_new (NULL, NULL);
  g_autofree guint32 *stream_of = g_new (guint32, n_ops ? n_ops : 1);
  guint32 n_streams = 0;
  for (guint32 o = 0; o < n_ops; o++)
    {
      const SpOp *op = sp_plan_op (plan, o);
      last_sub[o] = -1;
      if (op->parent >= 0)
        last_sub[op->parent] = o;
      res->per_rank[o] = op->family == SP_FAMILY_NONE || sp_coll_is_composite (op->kind);
      if (op->family != SP_FAMILY_NONE && !sp_groups_has_family (groups, op->family))
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN,
                       "op %u (%s) runs in family %s, which the groups do not build", o,
                       op->name, sp_family_name (op->family));
          sp_sim_result_free (res);
          return NULL;
        }
      res->off[o + 1] = res->off[o]
                        + (res->per_rank[o] ? W : sp_groups_n_groups (groups, op->family));
      gpointer key = GUINT_TO_POINTER (op->stream + 1);
      stream_of[o] = G_MAXUINT32; /* composites are on no stream */
      if (sp_coll_is_composite (op->kind))
        continue;
      if (!g_hash_table_contains (streams, key))
        g_hash_table_insert (streams, key, GUINT_TO_POINTER (++n_streams));
      stream_of[o] = GPOINTER_TO_UINT (g_hash_table_lookup (streams, key)) - 1;
    }
  for (guint32 o = 0; o < n_ops; o++)
    if (sp_coll_is_composite (sp_plan_op (plan, o)->kind) && last_sub[o] < 0)
      {
        g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN, "composite op %u (%s) has no sub-ops",
                     o, sp_plan_op (plan, o)->name);
        sp_sim_result_free (res);
        return NULL;
      }
  if (!sp_plan_check_groups (plan, groups, error))
    {
      sp_sim_result_free (res);
      return NULL;
    }
  res->spans = g_new (SpSpan, res->off[n_ops] ? res->off[n_ops] : 1);
  /* groups and plan are the hosts'; the network is NCCL's view of them */
  g_autoptr (SpTopo) view = NULL;
  if (!sp_sim_nccl_topo (topo, &view, error))
    {
      sp_sim_result_free (res);
      return NULL;
    }
  const SpTopo *sim_topo = view ? view : topo;
  SpPlanCtx c = { sim_topo, sp_topo_spec (sim_topo), model, contention, plan, groups, W, eff,
                  NULL, NULL, 0 };
  c.cache = g_array_new (FALSE, FALSE, sizeof (CostEntry));
  g_array_set_clear_func (c.cache, cost_entry_clear);
  if (options != NULL && options->progress != NULL)
    {
      c.progress = options->progress;
      c.progress_data = options->progress_data;
      for (guint32 o = 0; o < n_ops; o++)
        if (!sp_coll_is_composite (sp_plan_op (plan, o)->kind))
          c.progress_total += res->off[o + 1] - res->off[o];
    }
  /* compute-only pass first, then the real one (whose spans are kept) */
  gboolean ok = schedule (&c, res, TRUE, stream_of, n_streams, last_sub, error);
  if (ok && contention == SP_SIM_CONTENTION_STEP)
    ok = sp_plan_run_step (&c, res, last_sub, stream_of, n_streams, error);
  else if (ok)
    ok = schedule (&c, res, FALSE, stream_of, n_streams, last_sub, error);
  ok = ok && check (&c, res, error);
  if (ok && c.progress != NULL)
    c.progress (c.progress_total, c.progress_total, c.progress_data);
  g_array_free (c.cache, TRUE);
  sp_net_free (c.net);
  if (!ok)
    {
      sp_sim_result_free (res);
      return NULL;
    }
  res->contention_fallbacks = c.contention_fallbacks;
  res->contention = contention;
  for (guint32 o = 0; o < n_ops; o++)
    {
      const SpOp *op = sp_plan_op (plan, o);
      guint64 d = 0;
      for (guint64 i = res->off[o]; i < res->off[o + 1]; i++)
        if (res->spans[i].end != SP_SPAN_UNSET)
          d = MAX (d, res->spans[i].end - res->spans[i].start);
      res->dur[o] = d;
      if (sp_coll_is_composite (op->kind))
        continue;
      res->kind_ns[op->kind & 0xff] += d;
      if (op->family != SP_FAMILY_NONE)
        res->family_ns[op->family] += d;
      if (sp_coll_is_communication (op->kind))
        res->comm_ns += d;
    }
  return res;
}

void
sp_sim_result_free (SpSimResult *res)
{
  if (res == NULL)
    return;
  g_free (res->off);
  g_free (res->per_rank);
  g_free (res->spans);
  g_free (res->dur);
  g_free (res);
}

guint32
sp_sim_result_n_ops (const SpSimResult *res)
{
  return res->n_ops;
}

gboolean
sp_sim_result_op_time (const SpSimResult *res, const SpPlan *plan, guint32 op, guint32 rank,
                       guint64 *out_start_ns, guint64 *out_end_ns)
{
  if (op >= res->n_ops || rank >= res->world)
    return FALSE;
  const SpSpan *s = sp_plan_span_at (res, plan, op, rank);
  if (s == NULL)
    return FALSE;
  if (out_start_ns)
    *out_start_ns = s->start;
  if (out_end_ns)
    *out_end_ns = s->end;
  return TRUE;
}

guint64
sp_sim_result_op_duration (const SpSimResult *res, guint32 op)
{
  return op < res->n_ops ? res->dur[op] : 0;
}

guint64
sp_sim_result_step_ns (const SpSimResult *res)
{
  return res->step_ns;
}

guint64
sp_sim_result_compute_only_ns (const SpSimResult *res)
{
  return res->compute_only_ns;
}

guint64
sp_sim_result_exposed_comm_ns (const SpSimResult *res)
{
  return res->step_ns > res->compute_only_ns ? res->step_ns - res->compute_only_ns : 0;
}

guint64
sp_sim_result_comm_ns (const SpSimResult *res)
{
  return res->comm_ns;
}

guint64
sp_sim_result_family_ns (const SpSimResult *res, SpFamily family)
{
  return (guint) family < SP_FAMILY_N ? res->family_ns[family] : 0;
}

guint64
sp_sim_result_kind_ns (const SpSimResult *res, SpColl kind)
{
  return (guint) kind < 256 ? res->kind_ns[kind] : 0;
}

guint32
sp_sim_result_contention_fallbacks (const SpSimResult *res)
{
  return res->contention_fallbacks;
}

SpSimContention
sp_sim_result_contention (const SpSimResult *res)
{
  return res->contention;
}
