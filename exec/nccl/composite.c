/* exec/nccl/composite.c — DeepSpeed's composite collectives on the GPU:
 * the CUDA kernels of shardplan/kernels.h and NCCL on the task's stream,
 * every stage enqueued at once with an event after each (event 0 before
 * the first), so the stages are timed on the device.
 *   reduce_scatter_coalesced: pack + ÷W | reduce-scatter SUM | unpack
 *   qgZ: quantize | a2a local | a2a local scales | quant_reduce |
 *        a2a global | a2a global scales | dequantize + mean */
#include "config.h"
#include "nccl/nccl-internal.h"
#include "shardplan/kernels.h"

static gboolean
dev_alloc (SpExecCtx *ctx, SpExecTask *t, void **p, size_t bytes)
{
  if (cudaMalloc (p, bytes ? bytes : 1) == cudaSuccess)
    return TRUE;
  sp_exec_set_error (ctx, "op %u (%s): cudaMalloc of %zu bytes failed", t->op->id, t->op->name, bytes);
  return FALSE;
}

gboolean
sp_exec_nccl_composite_alloc (SpExecCtx *ctx, SpExecTask *t)
{
  SpNcclTask *nt = t->be;
  if (t->op->kind == SP_COLL_REDUCE_SCATTER_COALESCED)
    {
      gsize es = sp_exec_reduce_elem_size (t->op->dtype);
      guint64 seg = sp_kern_rs_segment (t->rs_numel, t->rs_n_tensors, t->group_size);
      return dev_alloc (ctx, t, &nt->d_buf, seg * t->group_size * es) &&
             dev_alloc (ctx, t, &nt->d_buf2, seg * es);
    }
  guint64 numel = t->op->count, G = t->qgz_groups;
  guint32 D = t->qgz_devices;
  return dev_alloc (ctx, t, &nt->d_buf, numel / 2) && dev_alloc (ctx, t, &nt->d_buf2, numel / 2) &&
         dev_alloc (ctx, t, &nt->d_buf3, numel / 2 / D) && dev_alloc (ctx, t, &nt->d_buf4, numel / 2 / D) &&
         dev_alloc (ctx, t, (void **) &nt->d_sc, G * 4) && dev_alloc (ctx, t, (void **) &nt->d_sc2, G * 4) &&
         dev_alloc (ctx, t, (void **) &nt->d_sc3, G / D * 4) &&
         dev_alloc (ctx, t, (void **) &nt->d_sc4, G / D * 4);
}

void
sp_exec_nccl_composite_free (SpExecTask *t)
{
  SpNcclTask *nt = t->be;
  void *p[] = { nt->d_buf, nt->d_buf2, nt->d_buf3, nt->d_buf4, nt->d_sc, nt->d_sc2, nt->d_sc3, nt->d_sc4 };
  for (gsize i = 0; i < G_N_ELEMENTS (p); i++)
    if (p[i])
      cudaFree (p[i]);
}

static SpExecStatus
stage_fail (SpExecCtx *ctx, const SpExecTask *t, const char *what, const char *why)
{
  sp_exec_set_error (ctx, "op %u (%s): %s failed: %s", t->op->id, t->op->name, what, why);
  return SP_EXEC_ERROR;
}

/* Every event record is checked: an event not recorded in this run of
 * the op would query as complete with the previous iteration's time. */
#define RECORD()                                                                   \
  do {                                                                             \
    cudaError_t ce_ = cudaEventRecord (nt->ev[nt->n_ev++], s);                     \
    if (ce_ != cudaSuccess)                                                        \
      return stage_fail (ctx, t, "cudaEventRecord", cudaGetErrorString (ce_));     \
  } while (0)

#define KERN(call, what)                                                           \
  do {                                                                             \
    SpKernStatus ks_ = (call);                                                     \
    if (ks_ != SP_KERN_OK)                                                         \
      return stage_fail (ctx, t, what, sp_kern_gpu_error_string ());               \
    RECORD ();                                                                     \
  } while (0)

/* A deadline passed with the call still in progress is no NCCL error
 * string ("operation in progress"): say what happened. */
#define NCCL(call, comm, what)                                                     \
  do {                                                                             \
    ncclResult_t r_ = (call);                                                      \
    if (r_ == ncclInProgress)                                                      \
      r_ = sp_exec_nccl_wait (comm, t->deadline_ns, ctx->boot);                    \
    if (r_ == ncclInProgress)                                                      \
      return stage_fail (ctx, t, what, "still in progress at the deadline (--timeout)"); \
    if (r_ != ncclSuccess)                                                         \
      return stage_fail (ctx, t, what, ncclGetErrorString (r_));                   \
    RECORD ();                                                                     \
  } while (0)

SpExecStatus
sp_exec_nccl_composite_start (SpExecCtx *ctx, SpExecTask *t)
{
  SpNcclState *st = ctx->backend_state;
  SpNcclTask *nt = t->be;
  cudaStream_t s = nt->stream;
  nt->n_ev = 0;
  RECORD ();
  if (t->op->kind == SP_COLL_REDUCE_SCATTER_COALESCED)
    {
      const guint32 W = t->group_size;
      const gsize es = sp_exec_reduce_elem_size (t->op->dtype);
      const guint64 seg = sp_kern_rs_segment (t->rs_numel, t->rs_n_tensors, W);
      const void *tensors[2] = { nt->d_in, (guint8 *) nt->d_in + t->rs_numel[0] * es };
      guint64 len0 = sp_kern_rs_slice_len (t->rs_numel[0], W, t->group_rank);
      void *outs[2] = { nt->d_out, (guint8 *) nt->d_out + len0 * es };
      ncclComm_t comm = st->comm[t->family];
      SpKernStatus ks = sp_kern_gpu_rs_pack (tensors, t->rs_numel, t->rs_n_tensors, W, es, nt->d_buf, s);
      KERN (ks == SP_KERN_OK ? sp_kern_gpu_scale (nt->d_buf, seg * W, (SpKernDtype) t->op->dtype, W, s)
                             : ks, "pack");
      NCCL (ncclReduceScatter (nt->d_buf, nt->d_buf2, seg, (ncclDataType_t) t->op->dtype, ncclSum, comm, s),
            comm, "ncclReduceScatter");
      KERN (sp_kern_gpu_rs_unpack (nt->d_buf2, t->rs_numel, t->rs_n_tensors, W, t->group_rank, es, outs, s),
            "unpack");
      return SP_EXEC_OK;
    }
  const guint64 numel = t->op->count, G = t->qgz_groups;
  const guint32 N = t->qgz_nodes, D = t->qgz_devices, E = t->qgz_group_elems;
  const guint64 C = G / (N * D);
  ncclComm_t local = st->comm[SP_FAMILY_A2A_LOCAL], global = st->comm[SP_FAMILY_A2A_GLOBAL];
  KERN (sp_kern_gpu_swizzle_quant (nt->d_in, G, E, 4, N, D, 1, nt->d_buf, nt->d_sc, s), "swizzle_quant");
  NCCL (sp_exec_nccl_alltoall (nt->d_buf, nt->d_buf2, numel / 2 / D, (int) D, local, s), local,
        "local all-to-all");
  NCCL (sp_exec_nccl_alltoall (nt->d_sc, nt->d_sc2, G / D * 4, (int) D, local, s), local,
        "local all-to-all (scales)");
  KERN (sp_kern_gpu_quant_reduce (nt->d_buf2, nt->d_sc2, D, N * C, E, 4, nt->d_buf3, nt->d_sc3, s),
        "quant_reduce");
  NCCL (sp_exec_nccl_alltoall (nt->d_buf3, nt->d_buf4, numel / 2 / D / N, (int) N, global, s), global,
        "global all-to-all");
  NCCL (sp_exec_nccl_alltoall (nt->d_sc3, nt->d_sc4, C * 4, (int) N, global, s), global,
        "global all-to-all (scales)");
  KERN (sp_kern_gpu_qgz_final (nt->d_buf4, nt->d_sc4, N, D, C, E, 4,
                               ctx->opts->deepspeed_compat ? SP_KERN_QGZ_DEEPSPEED : SP_KERN_QGZ_TRUE_MEAN,
                               nt->d_out, s), "dequantize");
  return SP_EXEC_OK;
}
