/* Buffer layouts of MiCS partitioning, reduce_scatter_coalesced and qgZ —
 * the formulas of reference/deepspeed-semantics.md §1.3, §3 and §4, with
 * overflow checks where user sizes enter. */
#include "config.h"
#include "shardplan/layout.h"
#include "shardplan/error.h"

#include <string.h>

static guint64
ceil_div (guint64 a, guint64 b)
{
  return a / b + (a % b != 0);
}

/* ---- MiCS partition ------------------------------------------------------ */

gboolean
sp_layout_mics_partition (guint64 numel, guint32 shards, SpMicsPartition *out_layout,
                          GError **error)
{
  g_return_val_if_fail (out_layout != NULL, FALSE);
  if (shards == 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "shard size 0 is invalid: expected at least 1 rank");
      return FALSE;
    }
  guint64 pad = (shards - numel % shards) % shards;
  if (numel > G_MAXUINT64 - pad)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "parameter of %" G_GUINT64_FORMAT " elements padded to a multiple of %u "
                   "overflows 64 bits", numel, shards);
      return FALSE;
    }
  out_layout->numel = numel;
  out_layout->shards = shards;
  out_layout->pad = pad;
  out_layout->aligned = numel + pad;
  out_layout->partition = out_layout->aligned / shards;
  return TRUE;
}

void
sp_layout_mics_rank_range (const SpMicsPartition *layout, guint32 shard_rank,
                           guint64 *out_start, guint64 *out_end, guint64 *out_real)
{
  g_return_if_fail (layout != NULL);
  g_return_if_fail (shard_rank < layout->shards);
  guint64 p = layout->partition;
  guint64 start = (guint64) shard_rank * p;
  guint64 real = start >= layout->numel ? 0 : MIN (p, layout->numel - start);
  if (out_start)
    *out_start = start;
  if (out_end)
    *out_end = start + p;
  if (out_real)
    *out_real = real;
}

/* ---- reduce_scatter_coalesced -------------------------------------------- */

SpRsCoalescedLayout *
sp_layout_rs_coalesced_new (guint32 world, const guint64 *numels, guint32 n_tensors,
                            GError **error)
{
  g_return_val_if_fail (numels != NULL || n_tensors == 0, NULL);
  if (world == 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "reduce-scatter group size 0 is invalid: expected at least 1 rank");
      return NULL;
    }
  /* one block: the struct, then numel[], chunk[], offset[] */
  gsize arrays = (gsize) n_tensors * sizeof (guint64);
  SpRsCoalescedLayout *l = g_malloc0 (sizeof *l + 3 * arrays);
  l->numel = (guint64 *) (gpointer) (l + 1);
  l->chunk = l->numel + n_tensors;
  l->offset = l->chunk + n_tensors;
  l->world = world;
  l->n_tensors = n_tensors;

  guint64 segment = 0;
  for (guint32 t = 0; t < n_tensors; t++)
    {
      guint64 c = ceil_div (numels[t], world);
      l->numel[t] = numels[t];
      l->chunk[t] = c;
      l->offset[t] = segment;
      if (segment > G_MAXUINT64 - c)
        goto overflow;
      segment += c;
    }
  if (segment != 0 && world > G_MAXUINT64 / segment)
    goto overflow;
  l->segment = segment;
  l->buffer = segment * world;
  l->in_place = n_tensors == 1 && numels[0] % world == 0;
  return l;

overflow:
  g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
               "reduce_scatter_coalesced buffer of %u tensors over %u ranks overflows 64 bits",
               n_tensors, world);
  g_free (l);
  return NULL;
}

void
sp_layout_rs_coalesced_free (SpRsCoalescedLayout *layout)
{
  g_free (layout);
}

void
sp_layout_rs_coalesced_slice (const SpRsCoalescedLayout *layout, guint32 t, guint32 q,
                              guint64 *out_start, guint64 *out_len)
{
  g_return_if_fail (layout != NULL);
  g_return_if_fail (t < layout->n_tensors && q < layout->world);
  guint64 n = layout->numel[t], c = layout->chunk[t];
  /* flat[q·c : q·c + c] clipped to the tensor (Python slicing) */
  guint64 start = MIN ((guint64) q * c, n);
  guint64 end = MIN (start + c, n);
  if (out_start)
    *out_start = start;
  if (out_len)
    *out_len = end - start;
}

/* ---- qgZ swizzle ---------------------------------------------------------- */

gboolean
sp_layout_qgz_swizzle_init (guint64 groups, guint32 nodes, guint32 devices, guint32 pipelining,
                            SpQgzSwizzle *out_swizzle, GError **error)
{
  g_return_val_if_fail (out_swizzle != NULL, FALSE);
  if (nodes == 0 || devices == 0 || pipelining == 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "qgZ swizzle with %u nodes, %u devices per node, pipelining %u: each must be >= 1",
                   nodes, devices, pipelining);
      return FALSE;
    }
  guint64 world = (guint64) nodes * devices;
  if (groups % world != 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "qgZ swizzle: %" G_GUINT64_FORMAT " groups is not a multiple of the %"
                   G_GUINT64_FORMAT " ranks", groups, world);
      return FALSE;
    }
  guint64 per_rank = groups / world;
  if (per_rank % pipelining != 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "qgZ swizzle: %" G_GUINT64_FORMAT " groups per rank do not split into %u "
                   "pipelining slices", per_rank, pipelining);
      return FALSE;
    }
  out_swizzle->groups = groups;
  out_swizzle->nodes = nodes;
  out_swizzle->devices = devices;
  out_swizzle->pipelining = pipelining;
  out_swizzle->per_rank = per_rank;
  out_swizzle->per_slice = per_rank / pipelining;
  return TRUE;
}

guint64
sp_layout_qgz_swizzle_slot (const SpQgzSwizzle *s, guint64 group)
{
  g_return_val_if_fail (s != NULL && group < s->groups, 0);
  /* the kernel's grid is (x = C/P, y = P, z = W) with block rank
   * z·C + y·(C/P) + x; output partition y·D·N + (z % D)·N + z / D */
  guint64 z = group / s->per_rank;
  guint64 in_rank = group % s->per_rank;
  guint64 y = in_rank / s->per_slice;
  guint64 x = in_rank % s->per_slice;
  guint64 n = s->nodes, d = s->devices;
  return (y * d * n + (z % d) * n + z / d) * s->per_slice + x;
}

/* ---- qgZ sizes ----------------------------------------------------------- */

gboolean
sp_layout_qgz_sizes (const guint64 *shape, guint32 ndim, guint32 world, guint32 devices,
                     SpQgzSizes *out_sizes, GError **error)
{
  g_return_val_if_fail (out_sizes != NULL, FALSE);
  g_return_val_if_fail (shape != NULL || ndim == 0, FALSE);
  if (ndim == 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "qgZ: a gradient tensor needs at least one dimension");
      return FALSE;
    }
  if (devices == 0 || world == 0 || world % devices != 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "qgZ: world size %u is not a whole number of nodes of %u devices", world,
                   devices);
      return FALSE;
    }
  guint32 nodes = world / devices;
  if (nodes < 2)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_UNSUPPORTED,
                   "qgZ: %u node(s) of %u devices: DeepSpeed takes the quantized all-to-all "
                   "path only with 2 or more nodes", nodes, devices);
      return FALSE;
    }
  guint64 numel = 1;
  for (guint32 i = 0; i < ndim; i++)
    {
      if (shape[i] != 0 && numel > G_MAXUINT64 / shape[i])
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                       "qgZ: tensor of %u dimensions has more than 2^64 elements", ndim);
          return FALSE;
        }
      numel *= shape[i];
    }

  SpQgzSizes s = { .numel = numel, .world = world, .nodes = nodes, .devices = devices };
  if (ndim == 1)
    s.path = SP_QGZ_FALLBACK_ONE_DIM;
  else if (numel % (2 * (guint64) world) != 0)
    s.path = SP_QGZ_FALLBACK_NOT_DIVISIBLE;
  else
    {
      s.path = SP_QGZ_QUANTIZED;
      s.groups = MAX (MAX (shape[0], shape[1]), (guint64) world);
      if (s.groups > G_MAXUINT64 / 4)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                       "qgZ: %" G_GUINT64_FORMAT " quantization groups overflow the scale buffer",
                       s.groups);
          return FALSE;
        }
      s.group_elems = numel / s.groups;
      s.per_rank = s.groups / world;
      s.quant_bytes = numel / 2;
      s.scale_bytes = s.groups * 4;
      s.reduced_bytes = numel / (2 * (guint64) devices);
      s.reduced_scale_bytes = (s.groups / devices) * 4;
      s.out_numel = numel / world;
      s.kernel_preconditions = s.groups % world == 0 && numel % s.groups == 0
                               && s.group_elems % 8 == 0;
    }
  *out_sizes = s;
  return TRUE;
}
