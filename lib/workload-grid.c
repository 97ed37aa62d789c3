/* Which sharding configurations DeepSpeed runs, rejects, or quietly runs as
 * another one (shardplan/workload.h sp_sharding_deepspeed_verdict): the
 * validity rules of the sweep's grid, one place for each rule's source. */
#include "config.h"
#include "shardplan/workload.h"

static SpDsVerdict
say (SpDsVerdict v, char **out_reason, const char *fmt, ...) G_GNUC_PRINTF (3, 4);

static SpDsVerdict
say (SpDsVerdict v, char **out_reason, const char *fmt, ...)
{
  if (out_reason)
    {
      va_list ap;
      va_start (ap, fmt);
      *out_reason = g_strdup_vprintf (fmt, ap);
      va_end (ap);
    }
  return v;
}

SpDsVerdict
sp_sharding_deepspeed_verdict (const SpShardingOptions *o, guint32 W, guint32 D, char **out_reason)
{
  g_return_val_if_fail (o != NULL && W > 0 && D > 0, SP_DS_REJECTS);
  if (out_reason)
    *out_reason = NULL;
  const guint32 S = o->shard_size ? o->shard_size : W;
  if (S > W || W % S != 0)
    return say (SP_DS_REJECTS, out_reason, "MiCS shard size %u does not divide the world %u", S, W);
  if (o->hierarchical)
    {
      guint32 span = S / D;
      if (span < 2 || S % span != 0)
        return say (SP_DS_REJECTS, out_reason,
                    "hierarchical MiCS needs S // D >= 2 and S %% (S // D) == 0 (D GPUs per node)");
    }
  const guint32 Z = o->hpz_partition_size > 1 ? MIN (o->hpz_partition_size, W) : 0;
  if (Z && W % Z != 0)
    return say (SP_DS_REJECTS, out_reason, "hpZ partition size %u does not divide the world %u", Z,
                W);
  const gboolean zpp = o->quantized_weights || o->quantized_gradients || Z;
  if (zpp && (S != W || o->hierarchical))
    return say (SP_DS_FALLS_BACK, out_reason,
                "ZeRO++ with MiCS: DeepSpeed's MiCS_Optimizer takes no qwZ / hpZ / qgZ argument, so "
                "plain MiCS runs");
  if (o->quantized_gradients && W / D >= 2 && W % D != 0)
    return say (SP_DS_REJECTS, out_reason,
                "qgZ needs the world (%u) to be a multiple of the %u GPUs per node", W, D);
  if (Z && Z == W)
    return say (SP_DS_FALLS_BACK, out_reason,
                "hpZ partition size %u = the world: the secondary partition is the primary one", Z);
  if (o->quantized_gradients && W / D < 2)
    return say (SP_DS_FALLS_BACK, out_reason,
                "qgZ on one node: the gradients are reduce-scattered as without it");
  return SP_DS_RUNS;
}

SpDsVerdict
sp_expert_parallel_deepspeed_verdict (guint32 ep, const SpModel *m, guint32 W, char **out_reason)
{
  g_return_val_if_fail (m != NULL && ep > 0 && W > 0, SP_DS_REJECTS);
  if (out_reason)
    *out_reason = NULL;
  if (ep == 1)
    return SP_DS_RUNS;
  if (m->moe_experts == 0)
    return say (SP_DS_REJECTS, out_reason,
                "expert-parallel size %u: model %s has no MoE layer to take it", ep, m->name);
  if (m->moe_experts % ep != 0)
    return say (SP_DS_REJECTS, out_reason,
                "expert-parallel size must divide the number of experts (moe/layer.py)");
  if (W % ep != 0)
    return say (SP_DS_REJECTS, out_reason,
                "expert-parallel size must divide the world (groups.py "
                "_create_expert_and_data_parallel)");
  return SP_DS_RUNS;
}
