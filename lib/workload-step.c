/* The plan of one training step (see shardplan/workload.h for what is
 * modelled and the DeepSpeed code each rule comes from). */
#include "config.h"
#include "shardplan/workload.h"
#include "shardplan/error.h"
#include "shardplan/groups.h"
#include "shardplan/layout.h"
#include "shardplan/shardplan.h"
#include "workload-private.h"

#include <math.h>
#include <string.h>

/* ---- the builder --------------------------------------------------------- */

typedef struct {
  SpPlan *plan;
  const SpModel *m;
  const SpShardingOptions *o;
  SpDtype dt;
  guint32 W, D, S, We, Z;     /* world, devices/node, shard, expert-data size, hpZ */
  gboolean qgz;               /* the all-to-all path (>= 2 nodes) */
  guint32 rstream;            /* gradient reductions: 2, or 0 (compute) without overlap_comm */
  guint32 mb;                 /* micro-step being emitted */
  gboolean boundary;
  gint64 last_inter;          /* the latest hierarchical gather's inter-node stage, or -1 */
  GError **error;
} Builder;

/* Append one op; returns its id, or -1 after setting *error. */
static gint64
emit (Builder *bl, const char *name, gint32 layer, SpPhase phase, SpColl kind, SpFamily fam,
      SpDtype dt, guint64 count, SpRedop redop, guint32 stream, guint64 flops, gint64 parent,
      const guint32 *deps, guint32 n_deps)
{
  guint bits = sp_dtype_bits (dt);
  SpOp op = {
    .parent = parent, .name = name, .layer = layer, .phase = phase, .kind = kind,
    .family = fam, .bytes = bits ? count * bits / 8 : 0, .count = count, .dtype = dt,
    .redop = redop, .algorithm = SP_ALGO_AUTO, .stream = stream, .flops = flops,
    .n_deps = n_deps, .deps = deps,
  };
  guint32 id;
  if (!sp_plan_add_op (bl->plan, &op, &id, bl->error))
    return -1;
  return id;
}

/* DeepSpeed CUDAQuantizer.quantize (partition_parameters.py): the number of
 * int8 groups for a flat buffer of x elements, target 8000 per group, or
 * 0 when its asserts would fail. */
static guint64
qwz_groups (guint64 x)
{
  const guint64 target = 8000;
  if (x == 0)
    return 0;
  guint64 g = (x + target - 1) / target;
  while (g < x)
    {
      if (x % (8 * g) == 0)
        break;
      g++;
    }
  while (x % (8 * g * 2) == 0 && x > target * g)
    g *= 2;
  if (x % (8 * g) != 0 || x >= 16000 * g || x <= g)
    return 0;
  return g;
}

/* The gather of `ids` (one family) for one use.  Returns the op id the
 * compute must wait for, or -1 on error. */
static gint64
emit_gather (Builder *bl, const SpWlTrace *tr, const char *use, gint32 layer, SpPhase ph,
             SpFamily fam, const guint32 *ids, guint32 n, const guint32 *deps, guint32 n_deps)
{
  guint32 G = fam == SP_FAMILY_EXPERT_DATA ? bl->We : bl->S; /* partition count */
  guint32 grp = fam == SP_FAMILY_ZERO_PARAM ? bl->Z : G;      /* ranks in the gather */
  guint64 sumP = 0;
  for (guint32 i = 0; i < n; i++)
    sumP += sp_wl_partition (((SpWlTensor *) g_ptr_array_index (tr->tensors, ids[i]))->numel, G);
  const guint64 full = (guint64) G * sumP; /* gathered elements: aligned sizes */
  const char *fname = sp_family_name (fam);
  g_autofree char *name = g_strdup_printf ("mb%u.%s.allgather%s%s", bl->mb, use,
                                           fam == SP_FAMILY_SHARD ? "" : ".", fam == SP_FAMILY_SHARD ? "" : fname);
  if (bl->o->quantized_weights && fam != SP_FAMILY_EXPERT_DATA)
    {
      /* qwZ: each rank quantizes its flat partition (x elements: P per tensor
       * in the primary, (W/Z)·P in the hpZ secondary), then two all-gathers. */
      guint64 x = full / grp;
      guint64 groups = qwz_groups (x);
      if (groups == 0)
        {
          g_set_error (bl->error, SP_ERROR, SP_ERROR_UNSUPPORTED,
                       "qwZ: DeepSpeed's CUDAQuantizer finds no int8 grouping for the %" G_GUINT64_FORMAT
                       "-element partition of %s (it needs a multiple of 8 with < 16000 per group)",
                       x, use);
          return -1;
        }
      g_autofree char *nq = g_strdup_printf ("%s.quantize", name);
      gint64 q = emit (bl, nq, layer, ph, SP_COLL_QUANTIZE, SP_FAMILY_NONE, bl->dt, x, SP_REDOP_NONE,
                       1, 0, -1, deps, n_deps);
      if (q < 0)
        return -1;
      guint32 dq = (guint32) q;
      gint64 a = emit (bl, name, layer, ph, SP_COLL_ALL_GATHER, fam, SP_DTYPE_INT8, full,
                       SP_REDOP_NONE, 1, 0, -1, &dq, 1);
      g_autofree char *ns = g_strdup_printf ("%s.scales", name);
      gint64 sc = a < 0 ? -1 : emit (bl, ns, layer, ph, SP_COLL_ALL_GATHER, fam, SP_DTYPE_FLOAT32,
                                     groups * grp, SP_REDOP_NONE, 1, 0, -1, &dq, 1);
      if (sc < 0)
        return -1;
      guint32 both[2] = { (guint32) a, (guint32) sc };
      g_autofree char *nd = g_strdup_printf ("%s.dequantize", name);
      return emit (bl, nd, layer, ph, SP_COLL_DEQUANTIZE, SP_FAMILY_NONE, SP_DTYPE_INT8, full,
                   SP_REDOP_NONE, 1, 0, -1, both, 2);
    }
  if (bl->o->hierarchical && fam == SP_FAMILY_SHARD)
    {
      /* §1.5: m = S / D "nodes" spanned (the inter group), n = S / m. */
      guint32 m = bl->S / bl->D;
      gint64 c = emit (bl, name, layer, ph, SP_COLL_HIER_ALL_GATHER, fam, bl->dt, full,
                       SP_REDOP_NONE, 1, 0, -1, deps, n_deps);
      if (c < 0)
        return -1;
      g_autofree char *n1 = g_strdup_printf ("%s.inter", name);
      gint64 a = emit (bl, n1, layer, ph, SP_COLL_ALL_GATHER, SP_FAMILY_SHARD_INTER_NODE, bl->dt,
                       (guint64) m * sumP, SP_REDOP_NONE, 1, 0, c, deps, n_deps);
      if (a < 0)
        return -1;
      bl->last_inter = a;
      guint32 da = (guint32) a;
      g_autofree char *n2 = g_strdup_printf ("%s.intra", name);
      /* the intra-node stage is async_op=True: on the intra-node group's
       * stream (3), not the gather stream */
      if (emit (bl, n2, layer, ph, SP_COLL_ALL_GATHER, SP_FAMILY_SHARD_INTRA_NODE, bl->dt, full,
                SP_REDOP_NONE, 3, 0, c, &da, 1) < 0)
        return -1;
      return c;
    }
  return emit (bl, name, layer, ph, SP_COLL_ALL_GATHER, fam, bl->dt, full, SP_REDOP_NONE, 1, 0, -1,
               deps, n_deps);
}

typedef struct {
  GArray *ids;          /* tensor indices in bucket order */
  guint64 elems;
  guint32 last_compute; /* compute op that produced the latest gradient */
  gint32 layer;
  guint32 index;        /* bucket counter within the micro-step */
} Bucket;

/* reduce_scatter_coalesced(tensors) over `fam` of `grp` ranks (§3);
 * returns the composite's id or -1. */
static gint64
emit_rs_coalesced (Builder *bl, const char *name, gint32 layer, SpFamily fam, guint32 grp,
                   const guint64 *numels, guint32 n, guint32 dep)
{
  g_autoptr (SpRsCoalescedLayout) lay = sp_layout_rs_coalesced_new (grp, numels, n, bl->error);
  if (!lay)
    return -1;
  gint64 c = emit (bl, name, layer, SP_PHASE_BACKWARD, SP_COLL_REDUCE_SCATTER_COALESCED, fam, bl->dt,
                   lay->buffer, SP_REDOP_SUM, bl->rstream, 0, -1, &dep, 1);
  if (c < 0)
    return -1;
  g_autofree char *sub = g_strdup_printf ("%s.reduce_scatter", name);
  if (emit (bl, sub, layer, SP_PHASE_BACKWARD, SP_COLL_REDUCE_SCATTER, fam, bl->dt, lay->buffer,
            SP_REDOP_SUM, bl->rstream, 0, c, &dep, 1) < 0)
    return -1;
  return c;
}

/* all_to_all_quant_reduce for one tensor (§4), or its fallback. */
static gboolean
emit_qgz_tensor (Builder *bl, const SpWlTensor *t, guint32 dep)
{
  SpQgzSizes q;
  if (!sp_layout_qgz_sizes (t->shape, t->ndim, bl->W, bl->D, &q, bl->error))
    return FALSE;
  g_autofree char *name = g_strdup_printf ("mb%u.%s.qgz", bl->mb, t->name);
  if (q.path != SP_QGZ_QUANTIZED)
    return emit_rs_coalesced (bl, name, t->layer, SP_FAMILY_WORLD, bl->W, &t->numel, 1, dep) >= 0;
  const SpPhase ph = SP_PHASE_BACKWARD;
  gint64 c = emit (bl, name, t->layer, ph, SP_COLL_ALL_TO_ALL_QUANT_REDUCE, SP_FAMILY_WORLD, bl->dt,
                   t->numel, SP_REDOP_SUM, bl->rstream, 0, -1, &dep, 1);
  if (c < 0)
    return FALSE;
  struct { const char *suffix; SpColl kind; SpFamily fam; SpDtype dt; guint64 count; SpRedop r; } st[] = {
    { "quantize", SP_COLL_QUANTIZE, SP_FAMILY_NONE, bl->dt, t->numel, SP_REDOP_NONE },
    { "local", SP_COLL_ALL_TO_ALL, SP_FAMILY_A2A_LOCAL, SP_DTYPE_INT4, q.quant_bytes * 2, SP_REDOP_NONE },
    { "local.scales", SP_COLL_ALL_TO_ALL, SP_FAMILY_A2A_LOCAL, SP_DTYPE_FLOAT32, q.scale_bytes / 4, SP_REDOP_NONE },
    { "quant_reduce", SP_COLL_QUANT_REDUCE, SP_FAMILY_NONE, SP_DTYPE_INT4, q.quant_bytes * 2, SP_REDOP_SUM },
    { "global", SP_COLL_ALL_TO_ALL, SP_FAMILY_A2A_GLOBAL, SP_DTYPE_INT4, q.reduced_bytes * 2, SP_REDOP_NONE },
    { "global.scales", SP_COLL_ALL_TO_ALL, SP_FAMILY_A2A_GLOBAL, SP_DTYPE_FLOAT32, q.reduced_scale_bytes / 4, SP_REDOP_NONE },
    { "dequantize", SP_COLL_DEQUANTIZE, SP_FAMILY_NONE, SP_DTYPE_INT4, q.reduced_bytes * 2, SP_REDOP_NONE },
  };
  guint32 prev = dep;
  for (guint i = 0; i < G_N_ELEMENTS (st); i++)
    {
      g_autofree char *n = g_strdup_printf ("%s.%s", name, st[i].suffix);
      gint64 id = emit (bl, n, t->layer, ph, st[i].kind, st[i].fam, st[i].dt, st[i].count, st[i].r,
                        bl->rstream, 0, c, &prev, 1);
      if (id < 0)
        return FALSE;
      prev = (guint32) id;
    }
  return TRUE;
}

/* Reduce one bucket (stage3 __reduce_and_partition_ipg_grads). */
static gboolean
flush_bucket (Builder *bl, const SpWlTrace *tr, Bucket *bk, SpWlPart part)
{
  guint32 n = bk->ids->len;
  if (n == 0)
    return TRUE;
  const guint32 *ids = (const guint32 *) bk->ids->data;
  g_autofree guint64 *numels = g_new (guint64, n);
  for (guint32 i = 0; i < n; i++)
    numels[i] = ((SpWlTensor *) g_ptr_array_index (tr->tensors, ids[i]))->numel;
  gboolean ok = TRUE;
  if (part == SP_WL_DENSE && bl->qgz)
    {
      for (guint32 i = 0; i < n && ok; i++)
        ok = emit_qgz_tensor (bl, g_ptr_array_index (tr->tensors, ids[i]), bk->last_compute);
    }
  else
    {
      SpFamily fam = part == SP_WL_EXPERT ? SP_FAMILY_EXPERT_DATA : SP_FAMILY_SHARD;
      guint32 grp = part == SP_WL_EXPERT ? bl->We : bl->S;
      g_autofree char *name = g_strdup_printf ("mb%u.%sbucket%u.reduce_scatter_coalesced", bl->mb,
                                               part == SP_WL_EXPERT ? "expert_" : "", bk->index);
      gint64 c = emit_rs_coalesced (bl, name, bk->layer, fam, grp, numels, n, bk->last_compute);
      ok = c >= 0;
      if (ok && part == SP_WL_DENSE && bl->boundary && bl->S < bl->W)
        {
          /* MiCS allreduce_mics_shard_grads: the bucket's grad partitions,
           * P_t = ceil(n_t/S) each, summed over the replicate group. */
          guint64 sumP = 0;
          for (guint32 i = 0; i < n; i++)
            sumP += sp_wl_partition (numels[i], bl->S);
          g_autofree char *an = g_strdup_printf ("mb%u.bucket%u.replicate.allreduce", bl->mb, bk->index);
          guint32 dc = (guint32) c;
          ok = emit (bl, an, bk->layer, SP_PHASE_OPTIMIZER, SP_COLL_ALL_REDUCE, SP_FAMILY_REPLICATE,
                     bl->dt, sumP, SP_REDOP_SUM, bl->rstream, 0, -1, &dc, 1) >= 0;
        }
    }
  g_array_set_size (bk->ids, 0);
  bk->elems = 0;
  bk->index++;
  return ok;
}

/* stage3 __add_grad_to_ipg_bucket: reduce first if this gradient would
 * overflow a non-empty bucket. */
static gboolean
add_grad (Builder *bl, const SpWlTrace *tr, Bucket *bk, SpWlPart part, guint32 t, guint32 compute)
{
  guint64 numel = ((SpWlTensor *) g_ptr_array_index (tr->tensors, t))->numel;
  if (bk->elems > 0 && bk->elems + numel > bl->o->reduce_bucket_size)
    if (!flush_bucket (bl, tr, bk, part))
      return FALSE;
  g_array_append_val (bk->ids, t);
  bk->elems += numel;
  bk->last_compute = compute;
  bk->layer = ((SpWlTensor *) g_ptr_array_index (tr->tensors, t))->layer;
  return TRUE;
}

static gboolean
check_options (const SpModel *m, const SpShardingOptions *o, const SpWorkloadPlanOptions *p,
               GError **error)
{
  if (o->zero_stage != 3)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_UNSUPPORTED,
                   "ZeRO stage %u is not modelled; only stage 3 (ZeRO-3 / MiCS / ZeRO++)", o->zero_stage);
      return FALSE;
    }
  if (p->world_size == 0 || p->devices_per_node == 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "world size %u and devices per node %u must both be >= 1", p->world_size,
                   p->devices_per_node);
      return FALSE;
    }
  if (!(p->compute_efficiency > 0 && p->compute_efficiency <= 1))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "compute efficiency %g is not in (0, 1]", p->compute_efficiency);
      return FALSE;
    }
  if (o->reduce_bucket_size == 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT, "reduce bucket size must be >= 1 element");
      return FALSE;
    }
  guint32 S = o->shard_size ? o->shard_size : p->world_size;
  gboolean zpp = o->quantized_weights || o->quantized_gradients || o->hpz_partition_size > 1;
  if (zpp && (S != p->world_size || o->hierarchical))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_UNSUPPORTED,
                   "ZeRO++ (qwZ, qgZ, hpZ) is modelled for ZeRO-3 only (shard size = world size %u, "
                   "flat), not with MiCS shard size %u%s",
                   p->world_size, S, o->hierarchical ? " hierarchical" : "");
      return FALSE;
    }
  guint32 ep = o->expert_parallel;
  if (ep > 1 && m->moe_experts == 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "expert parallel size %u given, but model %s has no MoE layers", ep, m->name);
      return FALSE;
    }
  if (ep > 1 && m->moe_experts % ep != 0)
    {
      /* DeepSpeed moe/layer.py: "Number of experts should be divisible by expert parallel size" */
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "model %s: %u experts are not divisible by expert parallel size %u", m->name,
                   m->moe_experts, ep);
      return FALSE;
    }
  if (o->quantized_gradients && p->world_size / p->devices_per_node >= 2
      && p->world_size % p->devices_per_node != 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_UNSUPPORTED,
                   "qgZ: world size %u is not a multiple of %u devices per node (DeepSpeed's local "
                   "all-to-all groups would leave ranks out)",
                   p->world_size, p->devices_per_node);
      return FALSE;
    }
  return TRUE;
}

void
sp_workload_plan_options_init (SpWorkloadPlanOptions *opts)
{
  memset (opts, 0, sizeof *opts);
  opts->world_size = 1;
  opts->devices_per_node = 8;
  opts->compute_efficiency = 0.5;
}

/* The gather issue point of use j (DeepSpeed's prefetcher,
 * PartitionedParameterCoordinator.fetch_sub_module): the earliest use k of
 * the micro-step at whose start the prefetch budget min(max_live_parameters
 * - n_available, prefetch_bucket_size) still reached j, i.e. with
 * Σ_{k<i<j} fetched_i < bucket and live[k] + Σ_{k<i<j} fetched_i < max_live
 * (the last use taken is taken whole, as DeepSpeed takes its last tensor).
 * fetched and live in elements (numel), live[k] what is gathered while use
 * k runs, prefetches aside.  j itself when nothing before could issue it. */
static guint32
issue_point (const guint64 *fetched, const guint64 *live, guint32 j, guint64 bucket,
             guint64 max_live)
{
  guint32 k = j;
  guint64 sum = 0;
  while (k > 0)
    {
      /* moving the issue point to k-1 adds fetched[k] to the window,
       * unless k == j (the use itself) */
      guint64 add = k == j ? 0 : fetched[k];
      if (sum + add >= bucket || live[k - 1] + sum + add >= max_live)
        break;
      sum += add;
      k--;
    }
  return k;
}

SpPlan *
sp_workload_build_plan (const SpModel *m, const SpShardingOptions *o,
                        const SpWorkloadPlanOptions *p, GError **error)
{
  g_return_val_if_fail (m && o && p, NULL);
  if (!check_options (m, o, p, error))
    return NULL;
  const guint32 W = p->world_size, D = p->devices_per_node;
  const guint32 S = o->shard_size ? o->shard_size : W;
  const guint32 ep = o->expert_parallel > 1 ? o->expert_parallel : 0;

  SpGroupsOptions g;
  sp_groups_options_init (&g);
  g.world_size = W;
  g.devices_per_node = D;
  g.shard_size = S;
  g.hierarchical = o->hierarchical;
  g.expert_parallel = ep;
  g.zero_param_group_size = o->hpz_partition_size > 1 ? o->hpz_partition_size : 0;
  const gboolean qgz = o->quantized_gradients && W / D >= 2;
  g.local_all_to_all = qgz;
  {
    /* DeepSpeed's own checks, with its messages. */
    g_autoptr (SpGroups) built = sp_groups_build (&g, error);
    if (!built)
      return NULL;
  }
  g_autoptr (SpWlTrace) tr = sp_wl_trace_new (m, ep, o->param_persistence_threshold, error);
  if (!tr)
    return NULL;

  g_autoptr (SpPlan) plan = sp_plan_new (&g);
  Builder bl = {
    .plan = plan, .m = m, .o = o, .dt = m->dtype, .W = W, .D = D, .S = S,
    .We = ep ? W / ep : W, .Z = MIN (o->hpz_partition_size, W), .qgz = qgz,
    .rstream = o->overlap_comm ? 2 : 0, .last_inter = -1, .error = error,
  };
  const guint32 n_uses = tr->uses->len, n_t = tr->tensors->len;
  g_autofree guint32 *offs = NULL;
  g_autofree gboolean *keep = sp_wl_trace_retained (tr, o->max_reuse_distance, &offs);
  /* the last use of each tensor produces its gradient */
  g_autofree guint32 *last_use = g_new0 (guint32, n_t);
  for (guint32 k = 0; k < n_uses; k++)
    {
      const SpWlUse *u = g_ptr_array_index (tr->uses, k);
      for (guint32 i = 0; i < u->n_tensors; i++)
        last_use[u->tensors[i]] = k;
    }
  g_autofree gboolean *avail = g_new0 (gboolean, n_t);
  g_autofree gboolean *secondary = g_new0 (gboolean, n_t);
  g_autofree guint64 *fetched = g_new0 (guint64, n_uses);
  g_autofree guint64 *live_at = g_new0 (guint64, n_uses);
  guint64 live = 0; /* gathered elements (numel), persistent tensors aside */
  g_autofree guint32 *compute_id = g_new0 (guint32, n_uses);
  g_autoptr (GArray) deps = g_array_new (FALSE, FALSE, sizeof (guint32));
  /* per use and family (shard, zero_param, expert_data): the tensors it
   * gathers, the op that gathers them (-1: none), and its issue point */
  g_autofree GArray **fids = g_new (GArray *, (gsize) n_uses * 3);
  for (guint32 i = 0; i < n_uses * 3; i++)
    fids[i] = g_array_new (FALSE, FALSE, sizeof (guint32));
  g_autofree gint64 *own = g_new (gint64, (gsize) n_uses * 3);
  g_autofree guint32 *kp_of = g_new0 (guint32, n_uses);
  const SpFamily gfam[3] = { SP_FAMILY_SHARD, SP_FAMILY_ZERO_PARAM, SP_FAMILY_EXPERT_DATA };
  Bucket bk[2] = { { .ids = g_array_new (FALSE, FALSE, sizeof (guint32)) },
                   { .ids = g_array_new (FALSE, FALSE, sizeof (guint32)) } };
  gboolean ok = TRUE;
  gint64 last_rs = -1, last_compute = -1;
  gint64 synced = -1; /* the last reduction of the micro-step before */
  const guint32 first_mb = p->one_micro_step ? m->grad_accum - 1 : 0;

  for (guint32 mb = first_mb; mb < m->grad_accum && ok; mb++)
    {
      bl.mb = mb;
      bl.boundary = mb == m->grad_accum - 1;
      bk[0].index = bk[1].index = 0;
      /* what each use fetches this micro-step (state-dependent: retention,
       * hpZ's secondary partitions) and where DeepSpeed's prefetcher issues
       * it: the module trace walked once before anything is emitted */
      for (guint32 k = 0; k < n_uses; k++)
        {
          const SpWlUse *u = g_ptr_array_index (tr->uses, k);
          for (guint f = 0; f < 3; f++)
            g_array_set_size (fids[k * 3 + f], 0);
          fetched[k] = 0;
          for (guint32 i = 0; i < u->n_tensors; i++)
            {
              guint32 t = u->tensors[i];
              const SpWlTensor *x = g_ptr_array_index (tr->tensors, t);
              if (x->persistent || avail[t])
                continue;
              guint f = x->part == SP_WL_EXPERT ? 2 : secondary[t] ? 1 : 0;
              g_array_append_val (fids[k * 3 + f], t);
              fetched[k] += x->numel;
              avail[t] = TRUE;
            }
          live += fetched[k];
          live_at[k] = live;
          /* issue point among this micro-step's uses, by the fetch sizes of
           * the uses before (as DeepSpeed's trace-driven prefetcher) */
          kp_of[k] = issue_point (fetched, live_at, k, o->prefetch_bucket_size,
                                  o->max_live_parameters);
          /* release (unless reused soon); hpZ keeps a secondary partition */
          for (guint32 i = 0; i < u->n_tensors; i++)
            {
              guint32 t = u->tensors[i];
              const SpWlTensor *x = g_ptr_array_index (tr->tensors, t);
              if (x->persistent || keep[offs[k] + i] || !avail[t])
                continue;
              avail[t] = FALSE;
              live -= x->numel;
              if (bl.Z > 1 && x->part == SP_WL_DENSE)
                secondary[t] = TRUE;
            }
        }
      memset (avail, 0, sizeof (gboolean) * n_t); /* release_and_reset_all */
      live = 0;
      /* MiCS' hierarchical gather (mics.py _hierarchical_all_gather_params)
       * runs its inter-node stage synchronously on the gather stream and
       * the intra-node stage on the intra-node group's own stream: the
       * compute of a use waits (wait_stream on the gather stream) for the
       * inter-node stage of every gather issued at the uses before it, and
       * the gathers issued at a use wait for that use's own (the handles'
       * wait, on the gather stream).  So with it the gathers are emitted in
       * the prefetcher's issue order; flat plans keep theirs (the same
       * schedule: one stream carries every stage there). */
      const gboolean hier = o->hierarchical;
      gint64 inter_before = -1; /* the last inter-node stage issued before use k */
      guint32 inter_use = 0, inter_before_use = 0; /* the use whose gather that is */
      for (guint32 k = 0; k < n_uses && ok; k++)
        {
          const SpWlUse *u = g_ptr_array_index (tr->uses, k);
          const SpPhase ph = u->backward ? SP_PHASE_BACKWARD : SP_PHASE_FORWARD;
          for (guint32 j = k; j < (hier ? n_uses : k + 1) && ok; j++)
            {
              if (hier && kp_of[j] != k)
                continue;
              const SpWlUse *uj = g_ptr_array_index (tr->uses, j);
              const guint32 kp = kp_of[j];
              g_array_set_size (deps, 0);
              if (kp > 0)
                g_array_append_val (deps, compute_id[kp - 1]);
              else if (synced >= 0)
                {
                  guint32 d = (guint32) synced;
                  g_array_append_val (deps, d);
                }
              for (guint f = 0; hier && j > k && f < 3; f++)
                if (own[k * 3 + f] >= 0)
                  {
                    guint32 d = (guint32) own[k * 3 + f];
                    g_array_append_val (deps, d);
                  }
              for (guint f = 0; f < 3 && ok; f++)
                {
                  own[j * 3 + f] = -1;
                  GArray *ids = fids[j * 3 + f];
                  guint32 grp = f == 2 ? bl.We : f == 1 ? bl.Z : S;
                  if (ids->len == 0 || grp <= 1)
                    continue; /* DeepSpeed: num_partitions == 1 → no gather */
                  own[j * 3 + f] = emit_gather (&bl, tr, uj->name, uj->layer,
                                                uj->backward ? SP_PHASE_BACKWARD : SP_PHASE_FORWARD,
                                                gfam[f], (guint32 *) ids->data, ids->len,
                                                (guint32 *) deps->data, deps->len);
                  ok = own[j * 3 + f] >= 0;
                  if (ok && hier && f == 0)
                    inter_use = j;
                }
            }
          if (!ok)
            break;
          g_autoptr (GArray) cdeps = g_array_new (FALSE, FALSE, sizeof (guint32));
          for (guint f = 0; f < 3; f++)
            if (own[k * 3 + f] >= 0)
              {
                guint32 d = (guint32) own[k * 3 + f];
                g_array_append_val (cdeps, d);
              }
          /* (only for a gather of a later use: this use's own is a dep
           * already, an earlier use's compute waited for its own) */
          if (hier && inter_before >= 0 && inter_before_use > k)
            {
              guint32 d = (guint32) inter_before;
              g_array_append_val (cdeps, d);
            }
          inter_before = bl.last_inter;
          inter_before_use = inter_use;
          if (last_compute >= 0)
            {
              guint32 d = (guint32) last_compute;
              g_array_append_val (cdeps, d);
            }
          if (k == 0 && synced >= 0)
            {
              guint32 d = (guint32) synced;
              g_array_append_val (cdeps, d);
            }
          if (u->a2a_before)
            {
              g_autofree char *n = g_strdup_printf ("mb%u.%s.a2a_in", mb, u->name);
              gint64 a = emit (&bl, n, u->layer, ph, SP_COLL_ALL_TO_ALL, SP_FAMILY_EXPERT, bl.dt,
                               u->a2a_before, SP_REDOP_NONE, 0, 0, -1, (guint32 *) cdeps->data,
                               cdeps->len);
              if ((ok = a >= 0))
                {
                  guint32 d = (guint32) a;
                  g_array_append_val (cdeps, d);
                }
            }
          g_autofree char *cn = g_strdup_printf ("mb%u.%s", mb, u->name);
          gint64 c = ok ? emit (&bl, cn, u->layer, ph, SP_COLL_COMPUTE, SP_FAMILY_NONE,
                                SP_DTYPE_NONE, 0, SP_REDOP_NONE, 0, u->flops, -1,
                                (guint32 *) cdeps->data, cdeps->len)
                        : -1;
          ok = c >= 0;
          if (!ok)
            break;
          compute_id[k] = (guint32) c;
          last_compute = c;
          if (u->a2a_after)
            {
              g_autofree char *n = g_strdup_printf ("mb%u.%s.a2a_out", mb, u->name);
              guint32 d = (guint32) c;
              gint64 a = emit (&bl, n, u->layer, ph, SP_COLL_ALL_TO_ALL, SP_FAMILY_EXPERT, bl.dt,
                               u->a2a_after, SP_REDOP_NONE, 0, 0, -1, &d, 1);
              ok = a >= 0;
              last_compute = a;
            }
          /* gradients whose last use this is, in autograd order */
          if (u->backward)
            for (guint32 i = u->n_tensors; i-- > 0 && ok;)
              {
                guint32 t = u->tensors[i];
                if (last_use[t] != k)
                  continue;
                SpWlPart part = ((SpWlTensor *) g_ptr_array_index (tr->tensors, t))->part;
                ok = add_grad (&bl, tr, &bk[part], part, t, (guint32) c);
              }
        }
      /* independent_gradient_partition_epilogue: the partial buckets, then
       * reduce_and_partition_stream.synchronize() — the host waits for every
       * reduction, so the next micro-step (its first compute and the gathers
       * issued at its start) begins after them, overlap_comm or not */
      for (guint i = 0; i < 2 && ok; i++)
        ok = flush_bucket (&bl, tr, &bk[i], (SpWlPart) i);
      if ((gint64) sp_plan_n_ops (plan) - 1 > last_compute)
        synced = (gint64) sp_plan_n_ops (plan) - 1;
    }
  for (guint i = 0; i < 2; i++)
    g_array_unref (bk[i].ids);
  for (guint32 i = 0; i < n_uses * 3; i++)
    g_array_unref (fids[i]);
  if (!ok)
    return NULL;
  last_rs = (gint64) sp_plan_n_ops (plan) - 1;

  /* _post_step: re-gather the persistent tensors after the optimizer step. */
  for (guint part = 0; part < 2; part++)
    {
      g_autoptr (GArray) pers = g_array_new (FALSE, FALSE, sizeof (guint32));
      for (guint32 t = 0; t < n_t; t++)
        {
          const SpWlTensor *x = g_ptr_array_index (tr->tensors, t);
          if (x->persistent && x->part == part)
            g_array_append_val (pers, t);
        }
      guint32 grp = part == SP_WL_EXPERT ? bl.We : S;
      if (pers->len == 0 || grp <= 1)
        continue;
      guint64 sumP = 0;
      for (guint32 i = 0; i < pers->len; i++)
        sumP += sp_wl_partition (((SpWlTensor *) g_ptr_array_index (tr->tensors, g_array_index (pers, guint32, i)))->numel, grp);
      guint32 d[2] = { (guint32) last_compute, (guint32) last_rs };
      const char *nm = part == SP_WL_EXPERT ? "step.persistent.allgather.expert_data"
                                            : "step.persistent.allgather";
      if (emit (&bl, nm, -1, SP_PHASE_OPTIMIZER, SP_COLL_ALL_GATHER,
                part == SP_WL_EXPERT ? SP_FAMILY_EXPERT_DATA : SP_FAMILY_SHARD, bl.dt,
                (guint64) grp * sumP, SP_REDOP_NONE, 1, 0, -1, d, last_rs == last_compute ? 1 : 2)
          < 0)
        return NULL;
    }

  char buf[64];
  sp_plan_set_meta (plan, "model", m->name);
  g_snprintf (buf, sizeof buf, "%" G_GUINT64_FORMAT, sp_model_n_params (m));
  sp_plan_set_meta (plan, "n_params", buf);
  g_autofree char *desc = sp_sharding_options_describe (o, W);
  sp_plan_set_meta (plan, "sharding", desc);
  g_snprintf (buf, sizeof buf, "%u", m->grad_accum - first_mb);
  sp_plan_set_meta (plan, "micro_steps", buf);
  g_snprintf (buf, sizeof buf, "%u", m->grad_accum);
  sp_plan_set_meta (plan, "grad_accum", buf);
  g_ascii_dtostr (buf, sizeof buf, p->compute_efficiency);
  sp_plan_set_meta (plan, "compute_efficiency", buf);
  g_autofree char *by = g_strdup_printf ("shardplan %s", sp_version ());
  sp_plan_set_meta (plan, "created_by", by);
  return g_steal_pointer (&plan);
}
