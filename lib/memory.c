/* Memory per GPU (see shardplan/memory.h for every formula and source). */
#include "config.h"
#include "shardplan/memory.h"
#include "shardplan/error.h"
#include "shardplan/layout.h"
#include "workload-private.h"

#include <math.h>
#include <string.h>

void
sp_memory_options_init (SpMemoryOptions *opts)
{
  memset (opts, 0, sizeof *opts);
  opts->reserve_bytes = SP_MEMORY_DEFAULT_RESERVE_BYTES;
}

gboolean
sp_memory_fits (const SpMemoryEstimate *e, double gpu_memory_gib)
{
  return (double) e->total_bytes <= gpu_memory_gib * (double) (1u << 30);
}

gboolean
sp_memory_estimate (const SpModel *m, const SpShardingOptions *o, guint32 W,
                    const SpMemoryOptions *opts, SpMemoryEstimate *out, GError **error)
{
  g_return_val_if_fail (m && o && out, FALSE);
  SpMemoryOptions defaults;
  sp_memory_options_init (&defaults);
  if (!opts)
    opts = &defaults;
  if (o->zero_stage != 3)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_UNSUPPORTED,
                   "ZeRO stage %u is not modelled; only stage 3 (ZeRO-3 / MiCS / ZeRO++)", o->zero_stage);
      return FALSE;
    }
  const guint32 S = o->shard_size ? o->shard_size : W;
  const guint32 ep = o->expert_parallel > 1 ? o->expert_parallel : 0;
  if (W == 0 || S == 0 || W % S != 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_GROUPS, "shard size %u does not divide world size %u",
                   S, W);
      return FALSE;
    }
  if (ep && (W % ep != 0 || m->moe_experts == 0 || m->moe_experts % ep != 0))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "expert parallel size %u must divide world size %u and the %u experts of model %s",
                   ep, W, m->moe_experts, m->name);
      return FALSE;
    }
  const guint32 Z = o->hpz_partition_size > 1 ? MIN (o->hpz_partition_size, W) : 0;
  if (Z && W % Z != 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_GROUPS,
                   "hpZ partition size %u does not divide world size %u", Z, W);
      return FALSE;
    }
  g_autoptr (SpWlTrace) tr = sp_wl_trace_new (m, ep, o->param_persistence_threshold, error);
  if (!tr)
    return FALSE;
  const guint32 We = ep ? W / ep : W;
  const guint64 elt = sp_wl_elt (m);

  guint64 sumP = 0, persist = 0, second = 0;
  for (guint32 t = 0; t < tr->tensors->len; t++)
    {
      const SpWlTensor *x = g_ptr_array_index (tr->tensors, t);
      guint32 G = x->part == SP_WL_EXPERT ? We : S;
      SpMicsPartition p;
      if (!sp_layout_mics_partition (x->numel, G, &p, error))
        return FALSE;
      sumP += p.partition;
      if (x->persistent)
        persist += x->numel;
      else if (Z && x->part == SP_WL_DENSE)
        second += (guint64) (W / Z) * p.partition; /* aligned / Z */
    }
  SpMemoryEstimate e = { 0 };
  e.params_bytes = elt * (sumP + persist + second);
  e.grads_bytes = elt * sumP;
  e.optimizer_bytes = 12 * sumP; /* fp32 master 4 + Adam m 4 + v 4 */
  e.model_states_bytes = e.params_bytes + e.grads_bytes + e.optimizer_bytes;
  /* contiguous_gradients: stage3 allocates the flat IPG buffer whole
   * (torch.empty(reduce_bucket_size)); without it the bucket's gradients
   * stay in their own tensors until reduced */
  e.reduce_bucket_bytes = elt * (o->contiguous_gradients ? o->reduce_bucket_size
                                                         : sp_wl_bucket_peak (tr, o->reduce_bucket_size));
  e.gathered_bytes = elt * sp_wl_gathered_peak (tr, S, We, o->max_reuse_distance,
                                                 o->prefetch_bucket_size,
                                                 o->max_live_parameters);

  /* Korthikanti et al. 2022 §4 (16-bit activations). */
  const double s = m->seq_len, b = m->micro_batch, h = m->hidden, a = m->heads, V = m->vocab;
  const double layer = s * b * h * (34.0 + 5.0 * a * s / h);
  const double output = 5.0 * s * b * h + 4.0 * s * b * V;
  const double act = m->activation_checkpointing ? m->layers * 2.0 * s * b * h + layer + output
                                                 : m->layers * layer + output;
  e.activation_bytes = (guint64) ceil (act);
  e.reserve_bytes = opts->reserve_bytes;
  e.total_bytes = e.model_states_bytes + e.reduce_bucket_bytes + e.gathered_bytes
                  + e.activation_bytes + e.reserve_bytes;
  *out = e;
  return TRUE;
}
