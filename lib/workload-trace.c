/* The model's tensor list, its module trace, DeepSpeed's reuse rule and the
 * gathered-parameter peak (see workload-private.h). */
#include "config.h"
#include "shardplan/layout.h"
#include "workload-private.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

/* P = ceil(numel / group): one rank's partition (layout.h, §1.3). */
guint64
sp_wl_partition (guint64 numel, guint32 group)
{
  SpMicsPartition p;
  if (!sp_layout_mics_partition (numel, group, &p, NULL))
    return 0;
  return p.partition;
}

/* ---- tensors and module trace -------------------------------------------- */

static guint32
add_tensor (SpWlTrace *tr, guint64 thr, gint32 layer, SpWlPart part, guint64 s0, guint64 s1,
            const char *fmt, ...) G_GNUC_PRINTF (7, 8);

static guint32
add_tensor (SpWlTrace *tr, guint64 thr, gint32 layer, SpWlPart part, guint64 s0, guint64 s1,
            const char *fmt, ...)
{
  SpWlTensor *t = g_new0 (SpWlTensor, 1);
  va_list ap;
  va_start (ap, fmt);
  t->name = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  t->ndim = s1 ? 2 : 1;
  t->shape[0] = s0;
  t->shape[1] = s1;
  t->numel = s1 ? s0 * s1 : s0;
  t->layer = layer;
  t->part = part;
  t->persistent = t->numel <= thr;
  g_ptr_array_add (tr->tensors, t);
  return tr->tensors->len - 1;
}

static SpWlUse *
add_use (SpWlTrace *tr, gint32 layer, gboolean bwd, guint64 flops, const guint32 *ts, guint32 n,
         const char *name)
{
  SpWlUse *u = g_new0 (SpWlUse, 1);
  u->name = g_strdup (name);
  u->layer = layer;
  u->backward = bwd;
  u->flops = flops;
  u->n_tensors = n;
  u->tensors = g_memdup2 (ts, sizeof (guint32) * n);
  g_ptr_array_add (tr->uses, u);
  return u;
}

static void
use_free (gpointer p)
{
  SpWlUse *u = p;
  g_free (u->name);
  g_free (u->tensors);
  g_free (u);
}

static void
tensor_free (gpointer p)
{
  SpWlTensor *t = p;
  g_free (t->name);
  g_free (t);
}

void
sp_wl_trace_free (SpWlTrace *tr)
{
  if (!tr)
    return;
  g_ptr_array_unref (tr->tensors);
  g_ptr_array_unref (tr->uses);
  g_free (tr);
}

guint64
sp_wl_moe_a2a_elems (const SpModel *m)
{
  double tokens = (double) m->seq_len * m->micro_batch;
  double cap = ceil (tokens / m->moe_experts * m->moe_capacity_factor * m->moe_top_k);
  guint64 capacity = MAX ((guint64) cap, (guint64) m->moe_min_capacity);
  return (guint64) m->moe_experts * capacity * m->hidden;
}

/* Per-layer tensors of one transformer layer; returns how many. */
typedef struct {
  guint32 attn[9];   /* ln1 w,b, qkv w,b, dense w,b, ln2 w,b, (gate) */
  guint32 n_attn;
  guint32 *mlp;      /* dense: 4 MLP tensors; MoE: 4 per local expert */
  guint32 n_mlp;
} LayerTensors;

SpWlTrace *
sp_wl_trace_new (const SpModel *m, guint32 ep, guint64 thr, GError **error)
{
  if (!sp_model_validate (m, error))
    return NULL;
  SpWlTrace *tr = g_new0 (SpWlTrace, 1);
  tr->tensors = g_ptr_array_new_with_free_func (tensor_free);
  tr->uses = g_ptr_array_new_with_free_func (use_free);
  const guint64 h = m->hidden, f = m->ffn_hidden, V = m->vocab, s = m->seq_len;
  const guint64 b = m->micro_batch, T = s * b;
  const guint32 L = m->layers;
  ep = MAX (ep, 1);
  const guint32 local_experts = m->moe_experts / ep;
  /* DeepSpeed MoE with ep > 1 moves tokens; with ep = 1 every expert is local. */
  const guint64 a2a = m->moe_experts > 0 && ep > 1 ? sp_wl_moe_a2a_elems (m) : 0;
  const SpWlPart epart = ep > 1 ? SP_WL_EXPERT : SP_WL_DENSE;

  guint32 wte = add_tensor (tr, thr, -1, SP_WL_DENSE, V, h, "embed.word_embeddings");
  guint32 wpe = add_tensor (tr, thr, -1, SP_WL_DENSE, s, h, "embed.position_embeddings");
  LayerTensors *lt = g_new0 (LayerTensors, L);
  for (guint32 i = 0; i < L; i++)
    {
      gboolean moe = m->moe_experts > 0 && i % m->moe_every == 0;
      LayerTensors *x = &lt[i];
      guint32 n = 0;
      x->attn[n++] = add_tensor (tr, thr, i, SP_WL_DENSE, h, 0, "L%u.ln1.weight", i);
      x->attn[n++] = add_tensor (tr, thr, i, SP_WL_DENSE, h, 0, "L%u.ln1.bias", i);
      x->attn[n++] = add_tensor (tr, thr, i, SP_WL_DENSE, 3 * h, h, "L%u.attn.qkv.weight", i);
      x->attn[n++] = add_tensor (tr, thr, i, SP_WL_DENSE, 3 * h, 0, "L%u.attn.qkv.bias", i);
      x->attn[n++] = add_tensor (tr, thr, i, SP_WL_DENSE, h, h, "L%u.attn.dense.weight", i);
      x->attn[n++] = add_tensor (tr, thr, i, SP_WL_DENSE, h, 0, "L%u.attn.dense.bias", i);
      x->attn[n++] = add_tensor (tr, thr, i, SP_WL_DENSE, h, 0, "L%u.ln2.weight", i);
      x->attn[n++] = add_tensor (tr, thr, i, SP_WL_DENSE, h, 0, "L%u.ln2.bias", i);
      if (moe)
        x->attn[n++] = add_tensor (tr, thr, i, SP_WL_DENSE, m->moe_experts, h, "L%u.moe.gate.weight", i);
      x->n_attn = n;
      guint32 experts = moe ? local_experts : 1;
      SpWlPart part = moe ? epart : SP_WL_DENSE;
      x->n_mlp = 4 * experts;
      x->mlp = g_new (guint32, x->n_mlp);
      for (guint32 e = 0; e < experts; e++)
        {
          g_autofree char *pre = moe ? g_strdup_printf ("L%u.moe.expert%u", i, e) : g_strdup_printf ("L%u.mlp", i);
          x->mlp[4 * e + 0] = add_tensor (tr, thr, i, part, f, h, "%s.fc1.weight", pre);
          x->mlp[4 * e + 1] = add_tensor (tr, thr, i, part, f, 0, "%s.fc1.bias", pre);
          x->mlp[4 * e + 2] = add_tensor (tr, thr, i, part, h, f, "%s.fc2.weight", pre);
          x->mlp[4 * e + 3] = add_tensor (tr, thr, i, part, h, 0, "%s.fc2.bias", pre);
        }
    }
  guint32 lnf_w = add_tensor (tr, thr, -1, SP_WL_DENSE, h, 0, "head.ln_f.weight");
  guint32 lnf_b = add_tensor (tr, thr, -1, SP_WL_DENSE, h, 0, "head.ln_f.bias");

  /* FLOPs per rank (matrix multiplies only; biases, LayerNorms, softmax are
   * O(T·h) and left out): attention projections 2·T·4h², MLP 2·T·2hf,
   * attention scores and values 2·2·b·s²·h (Narayanan et al. SC'21 §5.1). */
  const guint64 f_attn = 2 * T * 4 * h * h + 4 * b * s * s * h;
  const guint64 f_mlp = 2 * T * 2 * h * f;
  const guint64 f_head = 2 * T * V * h;
  const guint64 cap_tokens = a2a ? a2a / h : 0; /* E · capacity slots per rank */
  const gboolean ckpt = m->activation_checkpointing;

  guint32 emb[2] = { wte, wpe };
  add_use (tr, -1, FALSE, 0, emb, 2, "embed.fwd");
  g_autoptr (GArray) all = g_array_new (FALSE, FALSE, sizeof (guint32));
  for (guint32 i = 0; i < L; i++)
    {
      LayerTensors *x = &lt[i];
      char name[64];
      if (x->n_attn == 8)
        {
          g_array_set_size (all, 0);
          g_array_append_vals (all, x->attn, 8);
          g_array_append_vals (all, x->mlp, x->n_mlp);
          g_snprintf (name, sizeof name, "L%u.fwd", i);
          add_use (tr, i, FALSE, f_attn + f_mlp, (guint32 *) all->data, all->len, name);
        }
      else
        {
          guint64 f_gate = 2 * T * h * m->moe_experts;
          guint64 f_exp = a2a ? 2 * cap_tokens * 2 * h * f : m->moe_top_k * f_mlp;
          g_snprintf (name, sizeof name, "L%u.attn.fwd", i);
          add_use (tr, i, FALSE, f_attn + f_gate, x->attn, x->n_attn, name)->a2a_after = a2a;
          g_snprintf (name, sizeof name, "L%u.experts.fwd", i);
          add_use (tr, i, FALSE, f_exp, x->mlp, x->n_mlp, name)->a2a_after = a2a;
        }
    }
  guint32 head[3] = { lnf_w, lnf_b, wte };
  add_use (tr, -1, FALSE, f_head, head, 3, "head.fwd");
  tr->n_forward = tr->uses->len;

  add_use (tr, -1, TRUE, 2 * f_head, head, 3, "head.bwd");
  for (guint32 j = L; j-- > 0;)
    {
      LayerTensors *x = &lt[j];
      char name[64];
      if (x->n_attn == 8)
        {
          g_array_set_size (all, 0);
          g_array_append_vals (all, x->attn, 8);
          g_array_append_vals (all, x->mlp, x->n_mlp);
          g_snprintf (name, sizeof name, "L%u.bwd", j);
          /* backward = 2× forward, + the forward recompute of the checkpoint */
          add_use (tr, j, TRUE, (ckpt ? 3 : 2) * (f_attn + f_mlp), (guint32 *) all->data, all->len,
                   name);
        }
      else
        {
          guint64 f_gate = 2 * T * h * m->moe_experts;
          guint64 f_exp = a2a ? 2 * cap_tokens * 2 * h * f : m->moe_top_k * f_mlp;
          if (ckpt)
            {
              /* The recompute replays the MoE layer's forward, all-to-alls included. */
              g_snprintf (name, sizeof name, "L%u.attn.recompute", j);
              add_use (tr, j, TRUE, f_attn + f_gate, x->attn, x->n_attn, name)->a2a_after = a2a;
              g_snprintf (name, sizeof name, "L%u.experts.recompute", j);
              add_use (tr, j, TRUE, f_exp, x->mlp, x->n_mlp, name)->a2a_after = a2a;
            }
          g_snprintf (name, sizeof name, "L%u.experts.bwd", j);
          SpWlUse *u = add_use (tr, j, TRUE, 2 * f_exp, x->mlp, x->n_mlp, name);
          u->a2a_before = a2a;
          u->a2a_after = a2a;
          g_snprintf (name, sizeof name, "L%u.attn.bwd", j);
          add_use (tr, j, TRUE, 2 * (f_attn + f_gate), x->attn, x->n_attn, name);
        }
    }
  add_use (tr, -1, TRUE, 0, emb, 2, "embed.bwd");
  for (guint32 i = 0; i < L; i++)
    g_free (lt[i].mlp);
  g_free (lt);
  return tr;
}

gboolean *
sp_wl_trace_retained (const SpWlTrace *tr, guint64 max_reuse, guint32 **out_offsets)
{
  guint32 n_uses = tr->uses->len;
  guint32 *off = g_new (guint32, n_uses + 1);
  off[0] = 0;
  for (guint32 k = 0; k < n_uses; k++)
    off[k + 1] = off[k] + ((SpWlUse *) g_ptr_array_index (tr->uses, k))->n_tensors;
  gboolean *keep = g_new0 (gboolean, off[n_uses] + 1);
  /* last[t] = the latest use k' > k that mentions t within the window. */
  g_autofree guint32 *seen = g_new0 (guint32, tr->tensors->len);
  for (guint32 k = 0; k < n_uses; k++)
    {
      /* mark tensors visited in the window after k with stamp k+1 */
      guint64 traversed = 0;
      for (guint32 j = k + 1; j < n_uses && traversed < max_reuse; j++)
        {
          const SpWlUse *u = g_ptr_array_index (tr->uses, j);
          for (guint32 i = 0; i < u->n_tensors; i++)
            {
              seen[u->tensors[i]] = k + 1;
              traversed += ((SpWlTensor *) g_ptr_array_index (tr->tensors, u->tensors[i]))->numel;
            }
        }
      const SpWlUse *u = g_ptr_array_index (tr->uses, k);
      for (guint32 i = 0; i < u->n_tensors; i++)
        keep[off[k] + i] = seen[u->tensors[i]] == k + 1;
    }
  *out_offsets = off;
  return keep;
}


guint64
sp_wl_gathered_peak (const SpWlTrace *tr, guint32 S, guint32 We, guint64 max_reuse,
                     guint64 bucket, guint64 max_live)
{
  const guint32 n_uses = tr->uses->len, n_t = tr->tensors->len;
  g_autofree guint32 *offs = NULL;
  g_autofree gboolean *keep = sp_wl_trace_retained (tr, max_reuse, &offs);
  g_autofree gboolean *avail = g_new0 (gboolean, n_t);
  g_autofree guint64 *fetched = g_new0 (guint64, n_uses); /* numel (prefetch window) */
  g_autofree guint64 *full = g_new0 (guint64, n_uses);    /* padded elements gathered */
  g_autofree guint64 *live_at = g_new0 (guint64, n_uses);
  g_autofree guint64 *live_n = g_new0 (guint64, n_uses); /* numel (max_live budget) */
  guint64 live = 0, live_numel = 0;
  for (guint32 k = 0; k < n_uses; k++)
    {
      const SpWlUse *u = g_ptr_array_index (tr->uses, k);
      for (guint32 i = 0; i < u->n_tensors; i++)
        {
          guint32 t = u->tensors[i];
          const SpWlTensor *x = g_ptr_array_index (tr->tensors, t);
          if (x->persistent || avail[t])
            continue;
          guint32 G = x->part == SP_WL_EXPERT ? We : S;
          avail[t] = TRUE;
          fetched[k] += x->numel;
          full[k] += (guint64) G * sp_wl_partition (x->numel, G);
        }
      live += full[k];
      live_at[k] = live;
      live_numel += fetched[k];
      live_n[k] = live_numel;
      for (guint32 i = 0; i < u->n_tensors; i++)
        {
          guint32 t = u->tensors[i];
          const SpWlTensor *x = g_ptr_array_index (tr->tensors, t);
          if (x->persistent || keep[offs[k] + i] || !avail[t])
            continue;
          guint32 G = x->part == SP_WL_EXPERT ? We : S;
          avail[t] = FALSE;
          live -= (guint64) G * sp_wl_partition (x->numel, G);
          live_numel -= x->numel;
        }
    }
  guint64 peak = 0;
  for (guint32 k = 0; k < n_uses; k++)
    {
      /* plus what the prefetcher has in flight while use k runs */
      guint64 ahead = 0, window = 0;
      for (guint32 j = k + 1; j < n_uses && window < bucket && live_n[k] + window < max_live; j++)
        {
          ahead += full[j];
          window += fetched[j];
        }
      peak = MAX (peak, live_at[k] + ahead);
    }
  return peak;
}

guint64
sp_wl_bucket_peak (const SpWlTrace *tr, guint64 bucket)
{
  const guint32 n_uses = tr->uses->len, n_t = tr->tensors->len;
  g_autofree guint32 *last_use = g_new0 (guint32, n_t);
  for (guint32 k = 0; k < n_uses; k++)
    {
      const SpWlUse *u = g_ptr_array_index (tr->uses, k);
      for (guint32 i = 0; i < u->n_tensors; i++)
        last_use[u->tensors[i]] = k;
    }
  guint64 pending[2] = { 0, 0 }, peak = 0;
  for (guint32 k = 0; k < n_uses; k++)
    {
      const SpWlUse *u = g_ptr_array_index (tr->uses, k);
      if (!u->backward)
        continue;
      /* the builder's add_grad: autograd order, a bucket reduced first when
       * the gradient would overflow it */
      for (guint32 i = u->n_tensors; i-- > 0;)
        {
          guint32 t = u->tensors[i];
          if (last_use[t] != k)
            continue;
          const SpWlTensor *x = g_ptr_array_index (tr->tensors, t);
          guint64 *p = &pending[x->part == SP_WL_EXPERT];
          if (*p > 0 && *p + x->numel > bucket)
            *p = 0;
          *p += x->numel;
          peak = MAX (peak, pending[0] + pending[1]);
        }
    }
  return peak;
}
