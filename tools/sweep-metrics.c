/* The sweep's throughput and traffic arithmetic (tools/sweep.h). */
#include "config.h"
#include "sweep.h"

double
sp_sweep_model_flops_per_token (const SpModel *m)
{
  double n = (double) sp_model_n_params (m);
  if (m->moe_experts > 0 && m->moe_every > 0 && m->moe_top_k < m->moe_experts)
    {
      guint32 moe_layers = (m->layers + m->moe_every - 1) / m->moe_every;
      double h = m->hidden, f = m->ffn_hidden;
      n -= (double) moe_layers * (m->moe_experts - m->moe_top_k) * (2 * h * f + f + h);
    }
  return 6.0 * n + 12.0 * m->layers * (double) m->hidden * m->seq_len;
}

void
sp_sweep_throughput (const SpModel *m, guint64 global_batch, guint32 world, double step_us,
                     double peak_tflops, SpSweepThroughput *out)
{
  const double tokens = (double) global_batch * m->seq_len;
  const double s = step_us / 1e6;
  out->tokens_per_s = s > 0 ? tokens / s : 0;
  out->tflops_per_gpu = s > 0 && world > 0
                          ? sp_sweep_model_flops_per_token (m) * tokens / s / world / 1e12
                          : 0;
  out->mfu = peak_tflops > 0 ? out->tflops_per_gpu / peak_tflops : 0;
}

/* Per family: Σ over groups of (k − 1) and of Σ_i c_i·(n − c_i)/n. */
typedef struct {
  gboolean done;
  double span, a2a;
} FamilyCut;

static void
family_cut (const SpGroups *g, SpFamily fam, guint32 D, FamilyCut *out)
{
  out->done = TRUE;
  out->span = out->a2a = 0;
  if (!sp_groups_has_family (g, fam))
    return;
  g_autoptr (GHashTable) per_node = g_hash_table_new (g_direct_hash, g_direct_equal);
  for (guint32 i = 0; i < sp_groups_n_groups (g, fam); i++)
    {
      guint32 n = 0;
      const guint32 *mem = sp_groups_members (g, fam, i, &n);
      g_hash_table_remove_all (per_node);
      for (guint32 j = 0; j < n; j++)
        {
          gpointer key = GUINT_TO_POINTER (mem[j] / D + 1);
          guint c = GPOINTER_TO_UINT (g_hash_table_lookup (per_node, key));
          g_hash_table_insert (per_node, key, GUINT_TO_POINTER (c + 1));
        }
      guint k = g_hash_table_size (per_node);
      if (k < 2)
        continue;
      out->span += k - 1;
      GHashTableIter it;
      gpointer key, val;
      g_hash_table_iter_init (&it, per_node);
      while (g_hash_table_iter_next (&it, &key, &val))
        {
          double c = GPOINTER_TO_UINT (val);
          out->a2a += c * (n - c) / n;
        }
    }
}

double
sp_sweep_inter_node_bytes (const SpPlan *plan, const SpGroups *groups, guint32 D)
{
  g_return_val_if_fail (plan && groups && D > 0, 0);
  FamilyCut cut[SP_FAMILY_N] = { { 0 } };
  double total = 0;
  for (guint32 i = 0; i < sp_plan_n_ops (plan); i++)
    {
      const SpOp *op = sp_plan_op (plan, i);
      if (op->family >= SP_FAMILY_N)
        continue;
      double f;
      switch (op->kind)
        {
        case SP_COLL_ALL_GATHER:
        case SP_COLL_REDUCE_SCATTER:
        case SP_COLL_REDUCE_SCATTER_BLOCK:
        case SP_COLL_BROADCAST:
        case SP_COLL_REDUCE:
          f = 1;
          break;
        case SP_COLL_ALL_REDUCE:
          f = 2;
          break;
        case SP_COLL_ALL_TO_ALL:
          f = -1;
          break;
        default:
          continue; /* composites (their sub-ops count), kernels, p2p */
        }
      FamilyCut *c = &cut[op->family];
      if (!c->done)
        family_cut (groups, op->family, D, c);
      total += (f < 0 ? c->a2a : f * c->span) * (double) op->bytes;
    }
  return total;
}
