/* exec/mpi/composite.c — DeepSpeed's composite collectives run for real on
 * the MPI backend, with the CPU kernels of shardplan/kernels.h:
 *
 *   reduce_scatter_coalesced (reference §3): pack the tensors rank-major
 *   with padding, divide the buffer by W, reduce-scatter SUM, unpack.
 *   all_to_all_quant_reduce, qgZ (§4): swizzled int4 quantization,
 *   all-to-all of bytes then scales over local_all_to_all.local, quantized
 *   reduction, all-to-all over .global, dequantize and divide.
 *
 * Each is a small state machine advanced by test(): a kernel stage runs to
 * completion inside the call, a communication stage starts a non-blocking
 * MPI call and returns; every stage that is a plan sub-op gets its own
 * times (task->sub_times). */
#include "config.h"
#include "mpi/mpi-internal.h"
#include "shardplan/kernels.h"

static gint64
now_ns (void)
{
  return (gint64) (MPI_Wtime () * 1e9);
}

gboolean
sp_exec_mpi_composite_setup (SpExecCtx *ctx, SpExecTask *t, GError **error)
{
  SpMpiTask *mt = t->be;
  if (t->op->kind == SP_COLL_REDUCE_SCATTER_COALESCED)
    {
      gsize es = sp_exec_reduce_elem_size (t->op->dtype);
      guint64 seg = sp_kern_rs_segment (t->rs_numel, t->rs_n_tensors, t->group_size);
      mt->buf = g_try_malloc (MAX (seg * t->group_size * es, 1));
      mt->buf2 = g_try_malloc (MAX (seg * es, 1));
    }
  else if (t->op->kind == SP_COLL_ALL_TO_ALL_QUANT_REDUCE)
    {
      guint64 numel = t->op->count, G = t->qgz_groups;
      guint32 D = t->qgz_devices;
      /* at least a byte each (g_try_malloc (0) is NULL, which is no failure) */
      mt->buf = g_try_malloc (MAX (numel / 2, 1));       /* swizzled int4 */
      mt->buf2 = g_try_malloc (MAX (numel / 2, 1));      /* after the local all-to-all */
      mt->buf3 = g_try_malloc (MAX (numel / 2 / D, 1));  /* intra-node reduced */
      mt->buf4 = g_try_malloc (MAX (numel / 2 / D, 1));  /* after the global all-to-all */
      mt->sc = g_try_new (float, MAX (G, 1));
      mt->sc2 = g_try_new (float, MAX (G, 1));
      mt->sc3 = g_try_new (float, MAX (G / D, 1));
      mt->sc4 = g_try_new (float, MAX (G / D, 1));
      if (!mt->buf2 || !mt->buf3 || !mt->buf4 || !mt->sc || !mt->sc2 || !mt->sc3 || !mt->sc4)
        g_clear_pointer (&mt->buf, g_free); /* one missing: all fail, below */
    }
  if (t->op->kind == SP_COLL_REDUCE_SCATTER_COALESCED && !mt->buf2)
    g_clear_pointer (&mt->buf, g_free);
  if (!mt->buf)
    {
      sp_exec_mpi_composite_free (t);
      g_set_error (error, SP_ERROR, SP_ERROR_BACKEND, "op %u (%s): cannot allocate its scratch "
                   "buffers", t->op->id, t->op->name);
      return FALSE;
    }
  return TRUE;
}

void
sp_exec_mpi_composite_free (SpExecTask *t)
{
  SpMpiTask *mt = t->be;
  g_clear_pointer (&mt->buf, g_free);
  g_clear_pointer (&mt->buf2, g_free);
  g_clear_pointer (&mt->buf3, g_free);
  g_clear_pointer (&mt->buf4, g_free);
  g_clear_pointer (&mt->sc, g_free);
  g_clear_pointer (&mt->sc2, g_free);
  g_clear_pointer (&mt->sc3, g_free);
  g_clear_pointer (&mt->sc4, g_free);
}

static SpExecStatus
mpi_err (SpExecCtx *ctx, const SpExecTask *t, int rc, const char *what)
{
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string (rc, msg, &len);
  sp_exec_set_error (ctx, "op %u (%s): %s failed: %.*s", t->op->id, t->op->name, what, len, msg);
  return SP_EXEC_ERROR;
}

static SpExecStatus
kern_err (SpExecCtx *ctx, const SpExecTask *t, SpKernStatus ks, const char *what)
{
  sp_exec_set_error (ctx, "op %u (%s): %s returned %s", t->op->id, t->op->name, what,
                     sp_kern_status_name (ks));
  return SP_EXEC_ERROR;
}

/* reduce_scatter_coalesced: stage 0 pack + ÷W, 1 reduce-scatter (sub-op 0),
 * 2 unpack. */
static SpExecStatus
rs_stage (SpExecCtx *ctx, SpExecTask *t, guint stage)
{
  SpMpiState *st = ctx->backend_state;
  SpMpiTask *mt = t->be;
  const guint32 W = t->group_size;
  const gsize es = sp_exec_reduce_elem_size (t->op->dtype);
  const guint64 seg = sp_kern_rs_segment (t->rs_numel, t->rs_n_tensors, W);
  SpKernStatus ks;
  if (stage == 0)
    {
      const void *tensors[2] = { t->in, t->in + t->rs_numel[0] * es };
      ks = sp_kern_cpu_rs_pack (tensors, t->rs_numel, t->rs_n_tensors, W, es, mt->buf);
      if (ks == SP_KERN_OK)
        ks = sp_kern_cpu_scale (mt->buf, seg * W, (SpKernDtype) t->op->dtype, W);
      return ks == SP_KERN_OK ? SP_EXEC_OK : kern_err (ctx, t, ks, "pack");
    }
  if (stage == 1)
    {
      MPI_Datatype dt;
      MPI_Op op;
      sp_exec_mpi_reduction (st, t->op->dtype, SP_REDOP_SUM, &dt, &op);
      int rc = MPI_Ireduce_scatter_block (mt->buf, mt->buf2, (int) seg, dt, op,
                                          st->comm[t->family], &mt->req[0]);
      mt->n_req = 1;
      return rc == MPI_SUCCESS ? SP_EXEC_OK : mpi_err (ctx, t, rc, "MPI_Ireduce_scatter_block");
    }
  guint64 len0 = sp_kern_rs_slice_len (t->rs_numel[0], W, t->group_rank);
  void *outs[2] = { t->out, t->out + len0 * es };
  ks = sp_kern_cpu_rs_unpack (mt->buf2, t->rs_numel, t->rs_n_tensors, W, t->group_rank, es, outs);
  return ks == SP_KERN_OK ? SP_EXEC_OK : kern_err (ctx, t, ks, "unpack");
}

/* qgZ: stages 0..6 are sub-ops 0..6. */
static SpExecStatus
qgz_stage (SpExecCtx *ctx, SpExecTask *t, guint stage)
{
  SpMpiState *st = ctx->backend_state;
  SpMpiTask *mt = t->be;
  const guint64 numel = t->op->count, G = t->qgz_groups;
  const guint32 N = t->qgz_nodes, D = t->qgz_devices, E = t->qgz_group_elems, W = N * D;
  const guint64 C = G / W;
  SpKernStatus ks = SP_KERN_OK;
  int rc = MPI_SUCCESS;
  MPI_Comm local = st->comm[SP_FAMILY_A2A_LOCAL], global = st->comm[SP_FAMILY_A2A_GLOBAL];
  mt->n_req = 0;
  switch (stage)
    {
    case 0:
      ks = sp_kern_cpu_swizzle_quant ((const guint16 *) t->in, G, E, 4, N, D, 1, mt->buf, mt->sc);
      break;
    case 1:
      rc = MPI_Ialltoall (mt->buf, (int) (numel / 2 / D), MPI_BYTE, mt->buf2, (int) (numel / 2 / D),
                          MPI_BYTE, local, &mt->req[mt->n_req++]);
      break;
    case 2:
      rc = MPI_Ialltoall (mt->sc, (int) (G / D), MPI_FLOAT, mt->sc2, (int) (G / D), MPI_FLOAT, local,
                          &mt->req[mt->n_req++]);
      break;
    case 3:
      ks = sp_kern_cpu_quant_reduce (mt->buf2, mt->sc2, D, N * C, E, 4, mt->buf3, mt->sc3);
      break;
    case 4:
      rc = MPI_Ialltoall (mt->buf3, (int) (numel / 2 / D / N), MPI_BYTE, mt->buf4,
                          (int) (numel / 2 / D / N), MPI_BYTE, global, &mt->req[mt->n_req++]);
      break;
    case 5:
      rc = MPI_Ialltoall (mt->sc3, (int) C, MPI_FLOAT, mt->sc4, (int) C, MPI_FLOAT, global,
                          &mt->req[mt->n_req++]);
      break;
    default:
      ks = sp_kern_cpu_qgz_final (mt->buf4, mt->sc4, N, D, C, E, 4,
                                  ctx->opts->deepspeed_compat ? SP_KERN_QGZ_DEEPSPEED
                                                              : SP_KERN_QGZ_TRUE_MEAN,
                                  (guint16 *) t->out);
      break;
    }
  if (rc != MPI_SUCCESS)
    return mpi_err (ctx, t, rc, "MPI_Ialltoall");
  return ks == SP_KERN_OK ? SP_EXEC_OK : kern_err (ctx, t, ks, "qgZ kernel");
}

SpExecStatus
sp_exec_mpi_composite_test (SpExecCtx *ctx, SpExecTask *t, gboolean *out_done)
{
  SpMpiTask *mt = t->be;
  const gboolean rs = t->op->kind == SP_COLL_REDUCE_SCATTER_COALESCED;
  const guint n_stages = rs ? 3 : 7;
  *out_done = FALSE;
  while (mt->stage < n_stages)
    {
      /* The sub-op a stage times, or -1 (the pack/unpack of §3). */
      gint sub = rs ? (mt->stage == 1 ? 0 : -1) : (gint) mt->stage;
      if (mt->n_req > 0)
        {
          int flag = 0;
          int rc = MPI_Testall (mt->n_req, mt->req, &flag, MPI_STATUSES_IGNORE);
          if (rc != MPI_SUCCESS)
            return mpi_err (ctx, t, rc, "MPI_Testall");
          if (!flag)
            return SP_EXEC_OK;
          mt->n_req = 0;
          if (sub >= 0)
            t->sub_times[sub].t_end = now_ns ();
          mt->stage++;
          continue;
        }
      gint64 t0 = now_ns ();
      if (sub >= 0)
        t->sub_times[sub].t_enqueue = t->sub_times[sub].t_start = t0;
      SpExecStatus s = rs ? rs_stage (ctx, t, mt->stage) : qgz_stage (ctx, t, mt->stage);
      if (s != SP_EXEC_OK)
        return s;
      if (mt->n_req == 0)
        {
          if (sub >= 0)
            t->sub_times[sub].t_end = now_ns ();
          mt->stage++;
        }
    }
  t->times.t_end = now_ns ();
  *out_done = TRUE;
  return SP_EXEC_OK;
}
