/* exec/data.c — what each op reads and writes on a rank, the deterministic
 * inputs, and the result check (nccl-tests' #wrong).
 *
 * Inputs are a function of (rank, op id, iteration, element), so every rank
 * regenerates any peer's input and computes its own expected output without
 * communication.  Reductions use small integers (|x| <= 8; ±1 for PROD) so
 * that sums are exact in every dtype for groups up to 32 ranks, whatever
 * order MPI or NCCL reduce in; the tolerance covers larger groups and AVG.
 * Data-moving ops use random bytes and are compared byte for byte. */
#include "config.h"
#include "exec-internal.h"
#include "shardplan/kernels.h"

#include <math.h>
#include <string.h>

static inline guint64
mix64 (guint64 x)
{
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

static inline guint64
seed_of (guint32 rank, guint32 op, gint32 iter)
{
  return mix64 (((guint64) rank << 40) ^ ((guint64) op << 8) ^ (guint64) (guint32) (iter + 1000) << 20);
}

/* Byte k of `rank`'s input to a data-moving op. */
static inline guint8
byte_at (guint64 seed, guint64 k)
{
  return (guint8) (mix64 (seed ^ (k / 8) * 0xD6E8FEB86659FD93ull) >> (8 * (k % 8)));
}

/* Element i of a reduction input, as an integer. */
static inline gint64
int_at (guint64 seed, guint64 i, SpDtype dt, SpRedop redop)
{
  guint64 h = mix64 (seed ^ i * 0xA0761D6478BD642Full);
  if (redop == SP_REDOP_PROD)
    return dt == SP_DTYPE_UINT8 || dt == SP_DTYPE_UINT32 || dt == SP_DTYPE_UINT64 ? 1 : (h & 1 ? 1 : -1);
  switch (dt)
    {
    case SP_DTYPE_UINT8: case SP_DTYPE_UINT32: case SP_DTYPE_UINT64:
      return (gint64) (h % 5);
    case SP_DTYPE_INT8:
      return (gint64) (h % 7) - 3;
    default:
      return (gint64) (h % 17) - 8;
    }
}

/* Element i of a real-valued fp16 input (quantization, qgZ): in [-1, 1]. */
static inline guint16
half_at (guint64 seed, guint64 i)
{
  guint64 h = mix64 (seed ^ i * 0xE7037ED1A0B428DBull);
  return sp_kern_f32_to_f16 ((float) ((double) ((gint64) (h % 2001) - 1000) / 1000.0));
}

gsize
sp_exec_reduce_elem_size (SpDtype dtype)
{
  switch (dtype)
    {
    case SP_DTYPE_INT8: case SP_DTYPE_UINT8: return 1;
    case SP_DTYPE_FLOAT16: case SP_DTYPE_BFLOAT16: return 2;
    case SP_DTYPE_INT32: case SP_DTYPE_UINT32: case SP_DTYPE_FLOAT32: return 4;
    case SP_DTYPE_INT64: case SP_DTYPE_UINT64: case SP_DTYPE_FLOAT64: return 8;
    default: return 0;
    }
}

static void
store (guint8 *buf, guint64 i, SpDtype dt, double v)
{
  switch (dt)
    {
    case SP_DTYPE_INT8: ((gint8 *) buf)[i] = (gint8) v; break;
    case SP_DTYPE_UINT8: buf[i] = (guint8) v; break;
    case SP_DTYPE_INT32: ((gint32 *) buf)[i] = (gint32) v; break;
    case SP_DTYPE_UINT32: ((guint32 *) buf)[i] = (guint32) v; break;
    case SP_DTYPE_INT64: ((gint64 *) buf)[i] = (gint64) v; break;
    case SP_DTYPE_UINT64: ((guint64 *) buf)[i] = (guint64) v; break;
    case SP_DTYPE_FLOAT16: ((guint16 *) buf)[i] = sp_kern_f32_to_f16 ((float) v); break;
    case SP_DTYPE_BFLOAT16: ((guint16 *) buf)[i] = sp_kern_f32_to_bf16 ((float) v); break;
    case SP_DTYPE_FLOAT32: ((float *) buf)[i] = (float) v; break;
    case SP_DTYPE_FLOAT64: ((double *) buf)[i] = v; break;
    default: break;
    }
}

static double
load (const guint8 *buf, guint64 i, SpDtype dt)
{
  switch (dt)
    {
    case SP_DTYPE_INT8: return ((const gint8 *) buf)[i];
    case SP_DTYPE_UINT8: return buf[i];
    case SP_DTYPE_INT32: return ((const gint32 *) buf)[i];
    case SP_DTYPE_UINT32: return ((const guint32 *) buf)[i];
    case SP_DTYPE_INT64: return (double) ((const gint64 *) buf)[i];
    case SP_DTYPE_UINT64: return (double) ((const guint64 *) buf)[i];
    case SP_DTYPE_FLOAT16: return sp_kern_f16_to_f32 (((const guint16 *) buf)[i]);
    case SP_DTYPE_BFLOAT16: return sp_kern_bf16_to_f32 (((const guint16 *) buf)[i]);
    case SP_DTYPE_FLOAT32: return ((const float *) buf)[i];
    case SP_DTYPE_FLOAT64: return ((const double *) buf)[i];
    default: return 0;
    }
}

/* Unit roundoff of a float dtype, 0 for integers. */
static double
unit_roundoff (SpDtype dt)
{
  switch (dt)
    {
    case SP_DTYPE_FLOAT16: return ldexp (1, -11);
    case SP_DTYPE_BFLOAT16: return ldexp (1, -8);
    case SP_DTYPE_FLOAT32: return ldexp (1, -24);
    case SP_DTYPE_FLOAT64: return ldexp (1, -53);
    default: return 0;
    }
}

/* The largest divisor of n that is <= cap (and even when `even`), 0 if none. */
static guint64
group_elems_for (guint64 n, guint64 cap, gboolean even)
{
  for (guint64 e = MIN (cap, n); e >= 1; e--)
    if (n % e == 0 && (!even || e % 2 == 0))
      return e;
  return 0;
}

static gboolean
fail (GError **error, SpErrorCode code, const SpOp *op, const char *fmt, ...) G_GNUC_PRINTF (4, 5);

static gboolean
fail (GError **error, SpErrorCode code, const SpOp *op, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *what = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_set_error (error, SP_ERROR, code, "op %u (%s): %s", op->id, op->name, what);
  return FALSE;
}

/* qgZ: the seven stage sub-ops in the order the workload builder emits
 * them, with their sizes re-derived from numel, G, N and D. */
static gboolean
prepare_qgz (const SpExecCtx *ctx, SpExecTask *t, GError **error)
{
  const SpOp *op = t->op;
  static const SpColl kinds[7] = { SP_COLL_QUANTIZE, SP_COLL_ALL_TO_ALL, SP_COLL_ALL_TO_ALL,
                                   SP_COLL_QUANT_REDUCE, SP_COLL_ALL_TO_ALL, SP_COLL_ALL_TO_ALL,
                                   SP_COLL_DEQUANTIZE };
  static const SpFamily fams[7] = { SP_FAMILY_NONE, SP_FAMILY_A2A_LOCAL, SP_FAMILY_A2A_LOCAL,
                                    SP_FAMILY_NONE, SP_FAMILY_A2A_GLOBAL, SP_FAMILY_A2A_GLOBAL,
                                    SP_FAMILY_NONE };
  if (t->n_sub != 7)
    return fail (error, SP_ERROR_INVALID_PLAN, op, "an all_to_all_quant_reduce needs its 7 stage "
                 "sub-ops (quantize, local, local.scales, quant_reduce, global, global.scales, "
                 "dequantize), found %u", t->n_sub);
  for (guint i = 0; i < 7; i++)
    if (t->sub[i]->op->kind != kinds[i] || t->sub[i]->op->family != fams[i])
      return fail (error, SP_ERROR_INVALID_PLAN, op, "sub-op %u (%s) is %s on %s, expected %s on %s "
                   "for qgZ stage %u", t->sub[i]->op->id, t->sub[i]->op->name,
                   sp_coll_name (t->sub[i]->op->kind), sp_family_name (t->sub[i]->op->family) ?
                   sp_family_name (t->sub[i]->op->family) : "none", sp_coll_name (kinds[i]),
                   sp_family_name (fams[i]) ? sp_family_name (fams[i]) : "none", i);
  const SpGroupsOptions *go = sp_groups_options (ctx->groups);
  guint32 W = ctx->world, D = go->devices_per_node, N = D ? W / D : 0;
  guint64 numel = op->count, G = t->sub[2]->op->count;
  if (!go->local_all_to_all || N * D != W || N < 2)
    return fail (error, SP_ERROR_INVALID_PLAN, op, "qgZ needs the local_all_to_all groups over >= 2 "
                 "nodes of %u devices (world %u)", D, W);
  if (G == 0 || G % W != 0 || numel % G != 0 || (numel / G) % 2 != 0 || numel / G > G_MAXUINT32)
    return fail (error, SP_ERROR_UNSUPPORTED, op, "qgZ with %" G_GUINT64_FORMAT " elements in %"
                 G_GUINT64_FORMAT " quantization groups over %u ranks breaks DeepSpeed's kernel "
                 "preconditions (G %% W == 0, numel %% G == 0, even group size)", numel, G, W);
  guint64 want[7] = { numel, numel, G, numel, numel / D, G / D, numel / D };
  for (guint i = 0; i < 7; i++)
    if (t->sub[i]->op->count != want[i])
      return fail (error, SP_ERROR_INVALID_PLAN, op, "qgZ stage sub-op %u (%s) has count %"
                   G_GUINT64_FORMAT ", expected %" G_GUINT64_FORMAT, t->sub[i]->op->id,
                   t->sub[i]->op->name, t->sub[i]->op->count, want[i]);
  t->qgz_groups = G;
  t->qgz_group_elems = (guint32) (numel / G);
  t->qgz_nodes = N;
  t->qgz_devices = D;
  t->in_bytes = numel * 2;
  t->out_bytes = numel / W * 2;
  return TRUE;
}

static gboolean
prepare_rs_coalesced (SpExecTask *t, GError **error)
{
  const SpOp *op = t->op;
  gsize es = sp_exec_reduce_elem_size (op->dtype);
  if (op->dtype != SP_DTYPE_FLOAT16 && op->dtype != SP_DTYPE_BFLOAT16 && op->dtype != SP_DTYPE_FLOAT32)
    return fail (error, SP_ERROR_UNSUPPORTED, op, "reduce_scatter_coalesced runs on float16, "
                 "bfloat16 or float32, not %s", sp_dtype_name (op->dtype));
  if (t->n_sub != 1 || t->sub[0]->op->kind != SP_COLL_REDUCE_SCATTER ||
      t->sub[0]->op->family != op->family || t->sub[0]->op->bytes != op->bytes)
    return fail (error, SP_ERROR_INVALID_PLAN, op, "a reduce_scatter_coalesced needs exactly one "
                 "reduce_scatter sub-op on its family with its bytes");
  guint32 W = t->group_size;
  if (op->count % W != 0)
    return fail (error, SP_ERROR_INVALID_PLAN, op, "buffer of %" G_GUINT64_FORMAT " elements is "
                 "not W·Σc for a group of %u ranks", op->count, W);
  guint64 S = op->count / W;
  /* Two tensors with this buffer: the first one element short of c0·W so
   * the pack pads (one tensor when S == 1). */
  if (S >= 2 && W > 1)
    {
      guint64 c0 = S / 2;
      t->rs_numel[0] = c0 * W - 1;
      t->rs_numel[1] = (S - c0) * W;
      t->rs_n_tensors = 2;
    }
  else
    {
      t->rs_numel[0] = W > 1 ? S * W - 1 : S;
      t->rs_n_tensors = 1;
    }
  guint64 out = 0;
  for (guint i = 0; i < t->rs_n_tensors; i++)
    out += sp_kern_rs_slice_len (t->rs_numel[i], W, t->group_rank);
  t->in_bytes = (t->rs_numel[0] + (t->rs_n_tensors > 1 ? t->rs_numel[1] : 0)) * es;
  t->out_bytes = out * es;
  return TRUE;
}

gboolean
sp_exec_data_prepare (const SpExecCtx *ctx, SpExecTask *t, GError **error)
{
  const SpOp *op = t->op;
  const guint64 B = op->bytes, n = t->group_size;
  const gboolean reducing = op->kind == SP_COLL_ALL_REDUCE || op->kind == SP_COLL_REDUCE ||
                            op->kind == SP_COLL_REDUCE_SCATTER || op->kind == SP_COLL_REDUCE_SCATTER_BLOCK;
  if (reducing && sp_exec_reduce_elem_size (op->dtype) == 0)
    return fail (error, SP_ERROR_UNSUPPORTED, op, "%s on %s: the executor reduces int8/uint8/int32/"
                 "uint32/int64/uint64/float16/bfloat16/float32/float64 only",
                 sp_coll_name (op->kind), sp_dtype_name (op->dtype));
  if (reducing && op->redop == SP_REDOP_NONE)
    return fail (error, SP_ERROR_INVALID_PLAN, op, "a reduction needs a redop");
  switch (op->kind)
    {
    case SP_COLL_ALL_GATHER:
      if (B % n)
        return fail (error, SP_ERROR_INVALID_PLAN, op, "all_gather of %" G_GUINT64_FORMAT
                     " bytes does not split over a group of %" G_GUINT64_FORMAT " ranks", B, n);
      t->in_bytes = B / n, t->out_bytes = B;
      break;
    case SP_COLL_REDUCE_SCATTER:
    case SP_COLL_REDUCE_SCATTER_BLOCK:
      if (op->count % n)
        return fail (error, SP_ERROR_INVALID_PLAN, op, "reduce_scatter of %" G_GUINT64_FORMAT
                     " elements does not split over a group of %" G_GUINT64_FORMAT " ranks",
                     op->count, n);
      t->in_bytes = B, t->out_bytes = B / n;
      break;
    case SP_COLL_ALL_TO_ALL:
      if (B % n)
        return fail (error, SP_ERROR_INVALID_PLAN, op, "all_to_all of %" G_GUINT64_FORMAT
                     " bytes does not split over a group of %" G_GUINT64_FORMAT " ranks", B, n);
      t->in_bytes = t->out_bytes = B;
      break;
    case SP_COLL_ALL_REDUCE:
    case SP_COLL_SEND:
    case SP_COLL_RECV:
      t->in_bytes = t->out_bytes = B;
      break;
    case SP_COLL_BROADCAST:
      t->in_bytes = 0, t->out_bytes = B;
      break;
    case SP_COLL_P2P: /* the sender's buffer goes to the receiver */
      t->in_bytes = t->group_rank == op->src ? B : 0;
      t->out_bytes = t->group_rank == op->dst ? B : 0;
      break;
    case SP_COLL_REDUCE:
      t->in_bytes = B, t->out_bytes = t->group_rank == 0 ? B : 0;
      break;
    case SP_COLL_BARRIER:
    case SP_COLL_COMPUTE:
    case SP_COLL_HIER_ALL_GATHER:
      t->in_bytes = t->out_bytes = 0;
      break;
    case SP_COLL_QUANTIZE:
    case SP_COLL_DEQUANTIZE:
      {
        if (t->handled_by_parent)
          break;
        t->kern_bits = op->kind == SP_COLL_DEQUANTIZE && op->dtype == SP_DTYPE_INT4 ? 4 : 8;
        if (op->kind == SP_COLL_QUANTIZE && op->dtype != SP_DTYPE_FLOAT16 && op->dtype != SP_DTYPE_BFLOAT16)
          return fail (error, SP_ERROR_UNSUPPORTED, op, "quantize takes float16/bfloat16 input, not %s",
                       sp_dtype_name (op->dtype));
        if (op->kind == SP_COLL_DEQUANTIZE && op->dtype != SP_DTYPE_INT8 && op->dtype != SP_DTYPE_INT4)
          return fail (error, SP_ERROR_UNSUPPORTED, op, "dequantize takes int8/int4 input, not %s",
                       sp_dtype_name (op->dtype));
        guint64 e = group_elems_for (op->count, 2048, t->kern_bits == 4);
        if (e == 0)
          return fail (error, SP_ERROR_UNSUPPORTED, op, "%" G_GUINT64_FORMAT " elements cannot be "
                       "split into quantization groups", op->count);
        t->kern_group_elems = (guint32) e;
        t->kern_groups = op->count / e;
        gsize q = op->count * t->kern_bits / 8 + t->kern_groups * 4;
        t->in_bytes = op->kind == SP_COLL_QUANTIZE ? op->count * 2 : q;
        t->out_bytes = op->kind == SP_COLL_QUANTIZE ? q : op->count * 2;
        break;
      }
    case SP_COLL_REDUCE_SCATTER_COALESCED:
      return prepare_rs_coalesced (t, error);
    case SP_COLL_ALL_TO_ALL_QUANT_REDUCE:
      return prepare_qgz (ctx, t, error);
    case SP_COLL_QUANT_REDUCE:
      if (t->handled_by_parent)
        break;
      return fail (error, SP_ERROR_UNSUPPORTED, op, "quant_reduce outside an all_to_all_quant_reduce "
                   "is not executable (the plan does not say how many sources it reduces)");
    default:
      return fail (error, SP_ERROR_UNSUPPORTED, op, "the executor does not run %s ops",
                   sp_coll_name (op->kind));
    }
  if (t->in_bytes > G_MAXINT || t->out_bytes > G_MAXINT)
    return fail (error, SP_ERROR_UNSUPPORTED, op, "%" G_GUINT64_FORMAT " bytes per rank exceed "
                 "the 2^31-1 of one MPI call", (guint64) MAX (t->in_bytes, t->out_bytes));
  return TRUE;
}

/* ---------------------------------------------------------------- fill */

static gboolean
is_moving (SpColl k)
{
  return k == SP_COLL_ALL_GATHER || k == SP_COLL_ALL_TO_ALL || k == SP_COLL_BROADCAST ||
         k == SP_COLL_SEND || k == SP_COLL_RECV || k == SP_COLL_P2P;
}

void
sp_exec_data_fill (const SpExecCtx *ctx, SpExecTask *t, gint32 iter)
{
  const SpOp *op = t->op;
  guint64 seed = seed_of (ctx->rank, op->id, iter);
  if (t->out_bytes)
    memset (t->out, 0xA5, t->out_bytes); /* poison: a result never written shows */
  if (is_moving (op->kind))
    {
      if (op->kind == SP_COLL_BROADCAST)
        {
          if (t->group_rank == 0)
            for (guint64 k = 0; k < t->out_bytes; k++)
              t->out[k] = byte_at (seed, k);
        }
      else
        for (guint64 k = 0; k < t->in_bytes; k++)
          t->in[k] = byte_at (seed, k);
      return;
    }
  switch (op->kind)
    {
    case SP_COLL_ALL_REDUCE: case SP_COLL_REDUCE: case SP_COLL_REDUCE_SCATTER:
    case SP_COLL_REDUCE_SCATTER_BLOCK: case SP_COLL_REDUCE_SCATTER_COALESCED:
      {
        gsize es = sp_exec_reduce_elem_size (op->dtype);
        for (guint64 i = 0; i < t->in_bytes / es; i++)
          store (t->in, i, op->dtype, (double) int_at (seed, i, op->dtype, op->redop));
        break;
      }
    case SP_COLL_ALL_TO_ALL_QUANT_REDUCE:
    case SP_COLL_QUANTIZE:
      for (guint64 i = 0; i < t->in_bytes / 2; i++)
        ((guint16 *) t->in)[i] = half_at (seed, i);
      break;
    case SP_COLL_DEQUANTIZE:
      {
        /* The input is quantized fp16 data (prepared outside the timing). */
        guint64 n = op->count;
        g_autofree guint16 *x = g_new (guint16, n);
        for (guint64 i = 0; i < n; i++)
          x[i] = half_at (seed, i);
        guint64 qb = n * t->kern_bits / 8;
        sp_kern_cpu_quant (x, t->kern_groups, t->kern_group_elems, t->kern_bits, t->in,
                           (float *) (t->in + qb));
        break;
      }
    default:
      break;
    }
}

/* ---------------------------------------------------------------- check */

static SpTraceStatus
wrong (char **out_what, const char *fmt, ...) G_GNUC_PRINTF (2, 3);

static SpTraceStatus
wrong (char **out_what, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  *out_what = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  return SP_TRACE_STATUS_WRONG;
}

/* Round trip of a quantizer: |x - x'| <= absmax / 2^(bits-1) per group. */
static SpTraceStatus
check_roundtrip (const guint16 *x, const guint16 *y, guint64 groups, guint32 e, guint32 bits,
                 char **out_what)
{
  for (guint64 g = 0; g < groups; g++)
    {
      double amax = 0;
      for (guint32 j = 0; j < e; j++)
        amax = MAX (amax, fabs (sp_kern_f16_to_f32 (x[g * e + j])));
      double tol = amax / (double) (1u << (bits - 1)) + ldexp (amax, -10);
      for (guint32 j = 0; j < e; j++)
        {
          double a = sp_kern_f16_to_f32 (x[g * e + j]), b = sp_kern_f16_to_f32 (y[g * e + j]);
          if (!(fabs (a - b) <= tol))
            return wrong (out_what, "element %" G_GUINT64_FORMAT ": %g after the round trip of %g "
                          "(tolerance %g)", g * e + j, b, a, tol);
        }
    }
  return SP_TRACE_STATUS_OK;
}

/* qgZ: a bit-exact CPU emulation of the pipeline for this rank's partition,
 * and the bound against the plain mean. */
static SpTraceStatus
check_qgz (const SpExecCtx *ctx, const SpExecTask *t, gint32 iter, char **out_what)
{
  const guint32 N = t->qgz_nodes, D = t->qgz_devices, W = ctx->world, r = ctx->rank, E = t->qgz_group_elems;
  const guint64 C = t->qgz_groups / W, part = C * E; /* elements of one partition */
  g_autofree guint16 *x = g_new (guint16, part);
  g_autofree guint8 *q = g_new (guint8, D * part / 2);
  g_autofree float *s = g_new (float, D * C);
  g_autofree guint8 *nq = g_new (guint8, N * part / 2);
  g_autofree float *ns = g_new (float, N * C);
  g_autofree double *mean = g_new0 (double, part);
  double amax = 0;
  for (guint32 m = 0; m < N; m++)
    {
      for (guint32 d = 0; d < D; d++)
        {
          guint64 seed = seed_of (m * D + d, t->op->id, iter);
          for (guint64 i = 0; i < part; i++)
            {
              x[i] = half_at (seed, r * part + i);
              double v = sp_kern_f16_to_f32 (x[i]);
              mean[i] += v;
              amax = MAX (amax, fabs (v));
            }
          sp_kern_cpu_quant (x, C, E, 4, q + d * part / 2, s + d * C);
        }
      sp_kern_cpu_quant_reduce (q, s, D, C, E, 4, nq + m * part / 2, ns + m * C);
    }
  g_autofree guint16 *want = g_new (guint16, part);
  SpKernQgzMean how = ctx->opts->deepspeed_compat ? SP_KERN_QGZ_DEEPSPEED : SP_KERN_QGZ_TRUE_MEAN;
  sp_kern_cpu_qgz_final (nq, ns, N, D, C, E, 4, how, want);
  const guint16 *got = (const guint16 *) t->out;
  double k = ctx->opts->deepspeed_compat ? N : W;
  for (guint64 i = 0; i < part; i++)
    {
      if (got[i] != want[i])
        return wrong (out_what, "element %" G_GUINT64_FORMAT ": 0x%04x, the CPU emulation of qgZ "
                      "gives 0x%04x", i, got[i], want[i]);
      /* Two int4 stages: |err| <= A/8 + (9/8)·A/8 per source over the mean. */
      double tol = 0.3 * amax * (ctx->opts->deepspeed_compat ? D : 1) + ldexp (amax, -9);
      double g = sp_kern_f16_to_f32 (got[i]), e = mean[i] / k;
      if (!(fabs (g - e) <= tol))
        return wrong (out_what, "element %" G_GUINT64_FORMAT ": %g is %g from the plain "
                      "reduce-scatter value %g (quantization bound %g)", i, g, fabs (g - e), e, tol);
    }
  return SP_TRACE_STATUS_OK;
}

/* Reduce the members' values at input element `i` (double; exact for the
 * small integers used), with the summed magnitude for the tolerance. */
static double
reduce_at (const SpExecCtx *ctx, const SpExecTask *t, gint32 iter, guint64 i, double *out_mag)
{
  const SpOp *op = t->op;
  double acc = 0, mag = 0;
  for (guint32 j = 0; j < t->group_size; j++)
    {
      double v = (double) int_at (seed_of (t->members[j], op->id, iter), i, op->dtype, op->redop);
      mag += fabs (v);
      if (j == 0)
        acc = v;
      else if (op->redop == SP_REDOP_PROD)
        acc *= v;
      else if (op->redop == SP_REDOP_MAX)
        acc = MAX (acc, v);
      else if (op->redop == SP_REDOP_MIN)
        acc = MIN (acc, v);
      else
        acc += v;
    }
  if (op->redop == SP_REDOP_AVG)
    acc = unit_roundoff (op->dtype) > 0 ? acc / t->group_size : trunc (acc / t->group_size);
  *out_mag = mag;
  return acc;
}

static SpTraceStatus
compare (const SpExecTask *t, guint64 j, double got, double want, double mag, char **out_what)
{
  double u = unit_roundoff (t->op->dtype);
  double tol = u > 0 ? (t->group_size + 2) * u * MAX (mag, 1.0) : 0;
  if (u == 0)
    {
      /* Integers: compare after wrapping to the dtype, as the backend stores. */
      guint8 tmp[8];
      store (tmp, 0, t->op->dtype, want);
      want = load (tmp, 0, t->op->dtype);
    }
  if (!(fabs (got - want) <= tol))
    return wrong (out_what, "element %" G_GUINT64_FORMAT ": %.17g, expected %.17g", j, got, want);
  return SP_TRACE_STATUS_OK;
}

SpTraceStatus
sp_exec_data_check (const SpExecCtx *ctx, const SpExecTask *t, gint32 iter, char **out_what)
{
  const SpOp *op = t->op;
  const guint32 n = t->group_size, g = t->group_rank;
  *out_what = NULL;
  switch (op->kind)
    {
    case SP_COLL_ALL_GATHER:
      for (guint32 j = 0; j < n; j++)
        {
          guint64 seed = seed_of (t->members[j], op->id, iter);
          for (guint64 k = 0; k < t->in_bytes; k++)
            if (t->out[j * t->in_bytes + k] != byte_at (seed, k))
              return wrong (out_what, "byte %" G_GUINT64_FORMAT " of the block from group rank %u "
                            "differs", k, j);
        }
      return SP_TRACE_STATUS_OK;
    case SP_COLL_ALL_TO_ALL:
      {
        guint64 blk = t->in_bytes / n;
        for (guint32 j = 0; j < n; j++)
          {
            guint64 seed = seed_of (t->members[j], op->id, iter);
            for (guint64 k = 0; k < blk; k++)
              if (t->out[j * blk + k] != byte_at (seed, g * blk + k))
                return wrong (out_what, "byte %" G_GUINT64_FORMAT " of the block from group rank %u "
                              "differs", k, j);
          }
        return SP_TRACE_STATUS_OK;
      }
    case SP_COLL_BROADCAST:
    case SP_COLL_SEND:
    case SP_COLL_RECV:
    case SP_COLL_P2P:
      {
        guint32 from = op->kind == SP_COLL_BROADCAST ? 0
                       : op->kind == SP_COLL_P2P ? op->src
                       : op->kind == SP_COLL_SEND ? (g + n - 1) % n : (g + 1) % n;
        guint64 seed = seed_of (t->members[from], op->id, iter);
        for (guint64 k = 0; k < t->out_bytes; k++)
          if (t->out[k] != byte_at (seed, k))
            return wrong (out_what, "byte %" G_GUINT64_FORMAT " from group rank %u differs", k, from);
        return SP_TRACE_STATUS_OK;
      }
    case SP_COLL_ALL_REDUCE:
    case SP_COLL_REDUCE:
    case SP_COLL_REDUCE_SCATTER:
    case SP_COLL_REDUCE_SCATTER_BLOCK:
      {
        gsize es = sp_exec_reduce_elem_size (op->dtype);
        guint64 nout = t->out_bytes / es;
        guint64 base = op->kind == SP_COLL_ALL_REDUCE || op->kind == SP_COLL_REDUCE ? 0 : g * nout;
        for (guint64 j = 0; j < nout; j++)
          {
            double mag, want = reduce_at (ctx, t, iter, base + j, &mag);
            SpTraceStatus st = compare (t, j, load (t->out, j, op->dtype), want, mag, out_what);
            if (st != SP_TRACE_STATUS_OK)
              return st;
          }
        return SP_TRACE_STATUS_OK;
      }
    case SP_COLL_REDUCE_SCATTER_COALESCED:
      {
        /* Rank g gets, per tensor, its slice of Σ_q dtype(x_q / W). */
        guint64 at = 0, tensor_base = 0;
        for (guint32 ti = 0; ti < t->rs_n_tensors; ti++)
          {
            guint64 c = sp_kern_rs_chunk (t->rs_numel[ti], n);
            guint64 len = sp_kern_rs_slice_len (t->rs_numel[ti], n, g);
            for (guint64 j = 0; j < len; j++, at++)
              {
                double want = 0, mag = 0;
                for (guint32 q = 0; q < n; q++)
                  {
                    guint8 tmp[8];
                    double v = (double) int_at (seed_of (t->members[q], op->id, iter),
                                                tensor_base + g * c + j, op->dtype, op->redop);
                    store (tmp, 0, op->dtype, (double) (float) v * (double) (1.0f / (float) n));
                    want += load (tmp, 0, op->dtype);
                    mag += fabs (v);
                  }
                SpTraceStatus st = compare (t, at, load (t->out, at, op->dtype), want, mag, out_what);
                if (st != SP_TRACE_STATUS_OK)
                  return st;
              }
            tensor_base += t->rs_numel[ti];
          }
        return SP_TRACE_STATUS_OK;
      }
    case SP_COLL_ALL_TO_ALL_QUANT_REDUCE:
      return check_qgz (ctx, t, iter, out_what);
    case SP_COLL_QUANTIZE:
    case SP_COLL_DEQUANTIZE:
      {
        if (t->handled_by_parent)
          return SP_TRACE_STATUS_OK;
        guint64 cnt = op->count;
        g_autofree guint16 *x = g_new (guint16, cnt);
        guint64 seed = seed_of (ctx->rank, op->id, iter);
        for (guint64 i = 0; i < cnt; i++)
          x[i] = half_at (seed, i);
        g_autofree guint16 *y = NULL;
        const guint16 *deq = (const guint16 *) t->out;
        if (op->kind == SP_COLL_QUANTIZE)
          {
            y = g_new (guint16, cnt);
            sp_kern_cpu_dequant (t->out, (const float *) (t->out + cnt * t->kern_bits / 8),
                                 t->kern_groups, t->kern_group_elems, t->kern_bits, y);
            deq = y;
          }
        return check_roundtrip (x, deq, t->kern_groups, t->kern_group_elems, t->kern_bits, out_what);
      }
    default:
      return SP_TRACE_STATUS_OK;
    }
}
