/* exec/mpi/backend.c — the MPI backend: one MPI_Comm_split per group
 * family, every op as the matching non-blocking MPI collective on host
 * buffers, polled by the driver against its deadline.
 *
 * MPI has no 16-bit float types: float16 and bfloat16 travel as 2-byte
 * contiguous types reduced by user ops that widen each pair to fp32, apply
 * the operation and round back once (round to nearest even) — what NCCL's
 * kernels do for one addition.  AVG is SUM followed by a division by the
 * group size on the result (float types: fp32 multiply by 1/n then round,
 * integers: truncating division). */
#include "config.h"
#include "mpi/mpi-internal.h"
#include "shardplan/kernels.h"

#include <string.h>

static SpMpiState mpi_state;

#define DEFINE_HALF_OP(NAME, EXPR)                                                         \
  static void NAME (void *in, void *inout, int *len, MPI_Datatype *dt)                     \
  {                                                                                         \
    const guint16 *x = in;                                                                  \
    guint16 *y = inout;                                                                     \
    const gboolean bf = *dt == mpi_state.bf16;                                              \
    for (int i = 0; i < *len; i++)                                                          \
      {                                                                                     \
        float a = bf ? sp_kern_bf16_to_f32 (x[i]) : sp_kern_f16_to_f32 (x[i]);              \
        float b = bf ? sp_kern_bf16_to_f32 (y[i]) : sp_kern_f16_to_f32 (y[i]);              \
        float r = (EXPR);                                                                   \
        y[i] = bf ? sp_kern_f32_to_bf16 (r) : sp_kern_f32_to_f16 (r);                       \
      }                                                                                     \
  }

DEFINE_HALF_OP (half_sum, a + b)
DEFINE_HALF_OP (half_prod, a * b)
DEFINE_HALF_OP (half_max, a > b ? a : b)
DEFINE_HALF_OP (half_min, a < b ? a : b)

gboolean
sp_exec_mpi_reduction (const SpMpiState *st, SpDtype dtype, SpRedop redop, MPI_Datatype *out_type,
                       MPI_Op *out_op)
{
  gboolean half = dtype == SP_DTYPE_FLOAT16 || dtype == SP_DTYPE_BFLOAT16;
  switch (dtype)
    {
    case SP_DTYPE_INT8: *out_type = MPI_INT8_T; break;
    case SP_DTYPE_UINT8: *out_type = MPI_UINT8_T; break;
    case SP_DTYPE_INT32: *out_type = MPI_INT32_T; break;
    case SP_DTYPE_UINT32: *out_type = MPI_UINT32_T; break;
    case SP_DTYPE_INT64: *out_type = MPI_INT64_T; break;
    case SP_DTYPE_UINT64: *out_type = MPI_UINT64_T; break;
    case SP_DTYPE_FLOAT32: *out_type = MPI_FLOAT; break;
    case SP_DTYPE_FLOAT64: *out_type = MPI_DOUBLE; break;
    case SP_DTYPE_FLOAT16: *out_type = st->f16; break;
    case SP_DTYPE_BFLOAT16: *out_type = st->bf16; break;
    default: return FALSE;
    }
  switch (redop)
    {
    case SP_REDOP_SUM: case SP_REDOP_AVG: *out_op = half ? st->op_sum : MPI_SUM; break;
    case SP_REDOP_PROD: *out_op = half ? st->op_prod : MPI_PROD; break;
    case SP_REDOP_MAX: *out_op = half ? st->op_max : MPI_MAX; break;
    case SP_REDOP_MIN: *out_op = half ? st->op_min : MPI_MIN; break;
    default: return FALSE;
    }
  return TRUE;
}

void
sp_exec_mpi_divide (void *buf, guint64 n, SpDtype dtype, guint32 k)
{
  switch (dtype)
    {
    case SP_DTYPE_FLOAT16: case SP_DTYPE_BFLOAT16: case SP_DTYPE_FLOAT32:
      sp_kern_cpu_scale (buf, n, (SpKernDtype) dtype, k);
      break;
    case SP_DTYPE_FLOAT64:
      for (guint64 i = 0; i < n; i++)
        ((double *) buf)[i] /= k;
      break;
#define DIV_INT(T) for (guint64 i = 0; i < n; i++) ((T *) buf)[i] = (T) (((T *) buf)[i] / (T) k)
    case SP_DTYPE_INT8: DIV_INT (gint8); break;
    case SP_DTYPE_UINT8: DIV_INT (guint8); break;
    case SP_DTYPE_INT32: DIV_INT (gint32); break;
    case SP_DTYPE_UINT32: DIV_INT (guint32); break;
    case SP_DTYPE_INT64: DIV_INT (gint64); break;
    case SP_DTYPE_UINT64: DIV_INT (guint64); break;
#undef DIV_INT
    default: break;
    }
}

static gboolean
mpi_probe (SpExecCtx *ctx, GError **error)
{
  return TRUE; /* CPU buffers: every rank can */
}

static gboolean
mpi_setup (SpExecCtx *ctx, GError **error)
{
  SpMpiState *st = &mpi_state;
  MPI_Comm world = sp_exec_mpi_world ();
  ctx->backend_state = st;
  for (int f = 0; f < SP_FAMILY_N; f++)
    st->comm[f] = MPI_COMM_NULL;
  MPI_Type_contiguous (2, MPI_BYTE, &st->f16);
  MPI_Type_commit (&st->f16);
  MPI_Type_contiguous (2, MPI_BYTE, &st->bf16);
  MPI_Type_commit (&st->bf16);
  MPI_Op_create (half_sum, 1, &st->op_sum);
  MPI_Op_create (half_prod, 1, &st->op_prod);
  MPI_Op_create (half_max, 1, &st->op_max);
  MPI_Op_create (half_min, 1, &st->op_min);
  /* One split per family, in SpFamily order on every rank.  Families are
   * partitions: colour = the group index, key = the position in the group
   * (DeepSpeed's member order), MPI_UNDEFINED outside every group. */
  for (int f = 0; f < SP_FAMILY_N; f++)
    {
      if (!ctx->families_used[f])
        continue;
      guint32 index, grank;
      int color = sp_groups_find (ctx->groups, (SpFamily) f, ctx->rank, &index, &grank)
                      ? (int) index : MPI_UNDEFINED;
      if (!sp_exec_mpi_check (MPI_Comm_split (world, color, color == MPI_UNDEFINED ? 0 : (int) grank,
                                           &st->comm[f]), "MPI_Comm_split", error))
        return FALSE;
      if (st->comm[f] != MPI_COMM_NULL)
        {
          MPI_Comm_set_errhandler (st->comm[f], MPI_ERRORS_RETURN);
          if (!sp_exec_mpi_check (MPI_Barrier (st->comm[f]), "MPI_Barrier (warm-up)", error))
            return FALSE;
        }
    }
  for (guint32 i = 0; i < ctx->n_tasks; i++)
    {
      SpExecTask *t = &ctx->tasks[i];
      if (!t->runs || t->handled_by_parent)
        continue;
      t->be = g_new0 (SpMpiTask, 1);
      if (sp_coll_is_composite (t->op->kind) && !t->virtual_composite &&
          !sp_exec_mpi_composite_setup (ctx, t, error))
        return FALSE;
    }
  return TRUE;
}

static SpExecStatus
mpi_noop (SpExecCtx *ctx, SpExecTask *task)
{
  return SP_EXEC_OK;
}

/* Standalone quantize / dequantize on the CPU. */
static SpExecStatus
run_kernel (SpExecCtx *ctx, SpExecTask *t)
{
  const SpOp *op = t->op;
  guint64 qb = op->count * t->kern_bits / 8;
  SpKernStatus ks = op->kind == SP_COLL_QUANTIZE
      ? sp_kern_cpu_quant ((const guint16 *) t->in, t->kern_groups, t->kern_group_elems,
                           t->kern_bits, t->out, (float *) (t->out + qb))
      : sp_kern_cpu_dequant (t->in, (const float *) (t->in + qb), t->kern_groups,
                             t->kern_group_elems, t->kern_bits, (guint16 *) t->out);
  if (ks != SP_KERN_OK)
    {
      sp_exec_set_error (ctx, "op %u (%s): kernel returned %s", op->id, op->name,
                         sp_kern_status_name (ks));
      return SP_EXEC_ERROR;
    }
  return SP_EXEC_OK;
}

/* Start (or, blocking, run) one plain collective.  MPI's return code. */
static int
call_coll (SpExecCtx *ctx, SpExecTask *t, gboolean blocking)
{
  SpMpiState *st = ctx->backend_state;
  SpMpiTask *mt = t->be;
  const SpOp *op = t->op;
  MPI_Comm comm = t->family < SP_FAMILY_N ? st->comm[t->family] : MPI_COMM_NULL;
  const int n = (int) t->group_size, g = (int) t->group_rank;
  MPI_Datatype dt = MPI_BYTE;
  MPI_Op mop = MPI_OP_NULL;
  MPI_Request *rq = &mt->req[0];
  switch (op->kind)
    {
    case SP_COLL_ALL_GATHER:
      return blocking ? MPI_Allgather (t->in, (int) t->in_bytes, MPI_BYTE, t->out, (int) t->in_bytes,
                                       MPI_BYTE, comm)
                      : MPI_Iallgather (t->in, (int) t->in_bytes, MPI_BYTE, t->out, (int) t->in_bytes,
                                        MPI_BYTE, comm, rq);
    case SP_COLL_REDUCE_SCATTER:
    case SP_COLL_REDUCE_SCATTER_BLOCK:
      sp_exec_mpi_reduction (st, op->dtype, op->redop, &dt, &mop);
      return blocking ? MPI_Reduce_scatter_block (t->in, t->out, (int) (op->count / n), dt, mop, comm)
                      : MPI_Ireduce_scatter_block (t->in, t->out, (int) (op->count / n), dt, mop, comm,
                                                   rq);
    case SP_COLL_ALL_REDUCE:
      sp_exec_mpi_reduction (st, op->dtype, op->redop, &dt, &mop);
      return blocking ? MPI_Allreduce (t->in, t->out, (int) op->count, dt, mop, comm)
                      : MPI_Iallreduce (t->in, t->out, (int) op->count, dt, mop, comm, rq);
    case SP_COLL_REDUCE:
      sp_exec_mpi_reduction (st, op->dtype, op->redop, &dt, &mop);
      return blocking ? MPI_Reduce (t->in, t->out, (int) op->count, dt, mop, 0, comm)
                      : MPI_Ireduce (t->in, t->out, (int) op->count, dt, mop, 0, comm, rq);
    case SP_COLL_ALL_TO_ALL:
      return blocking ? MPI_Alltoall (t->in, (int) (t->in_bytes / n), MPI_BYTE, t->out,
                                      (int) (t->in_bytes / n), MPI_BYTE, comm)
                      : MPI_Ialltoall (t->in, (int) (t->in_bytes / n), MPI_BYTE, t->out,
                                       (int) (t->in_bytes / n), MPI_BYTE, comm, rq);
    case SP_COLL_BROADCAST:
      return blocking ? MPI_Bcast (t->out, (int) t->out_bytes, MPI_BYTE, 0, comm)
                      : MPI_Ibcast (t->out, (int) t->out_bytes, MPI_BYTE, 0, comm, rq);
    case SP_COLL_BARRIER:
      return blocking ? MPI_Barrier (comm) : MPI_Ibarrier (comm, rq);
    case SP_COLL_P2P: /* the sender's and the receiver's half (no one else runs it) */
      if (g == (int) op->src)
        return blocking ? MPI_Send (t->in, (int) t->in_bytes, MPI_BYTE, (int) op->dst, 6, comm)
                        : MPI_Isend (t->in, (int) t->in_bytes, MPI_BYTE, (int) op->dst, 6, comm, rq);
      return blocking ? MPI_Recv (t->out, (int) t->out_bytes, MPI_BYTE, (int) op->src, 6, comm,
                                  MPI_STATUS_IGNORE)
                      : MPI_Irecv (t->out, (int) t->out_bytes, MPI_BYTE, (int) op->src, 6, comm, rq);
    case SP_COLL_SEND:
    case SP_COLL_RECV:
      {
        int next = (g + 1) % n, prev = (g + n - 1) % n;
        int to = op->kind == SP_COLL_SEND ? next : prev, from = op->kind == SP_COLL_SEND ? prev : next;
        if (blocking)
          return MPI_Sendrecv (t->in, (int) t->in_bytes, MPI_BYTE, to, 5, t->out, (int) t->out_bytes,
                               MPI_BYTE, from, 5, comm, MPI_STATUS_IGNORE);
        int rc = MPI_Irecv (t->out, (int) t->out_bytes, MPI_BYTE, from, 5, comm, &mt->req[0]);
        if (rc == MPI_SUCCESS)
          rc = MPI_Isend (t->in, (int) t->in_bytes, MPI_BYTE, to, 5, comm, &mt->req[1]);
        return rc;
      }
    default:
      g_return_val_if_reached (MPI_ERR_OTHER);
    }
}

static gint
n_requests (SpColl kind)
{
  return kind == SP_COLL_SEND || kind == SP_COLL_RECV ? 2 : 1;
}

static SpExecStatus
mpi_error (SpExecCtx *ctx, const SpOp *op, const char *doing, int rc)
{
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string (rc, msg, &len);
  sp_exec_set_error (ctx, "op %u (%s): MPI error %s %s: %.*s", op->id, op->name, doing,
                     sp_coll_name (op->kind), len, msg);
  return SP_EXEC_ERROR;
}

/* Isolated mode runs one op at a time, so a plain collective is the
 * blocking MPI call — the very call a bare loop makes (Open MPI's
 * non-blocking collectives go through libnbc, a different and slower
 * implementation).  Its deadline is kept by the driver's watchdog thread
 * (exec/exec-loop.c), which ends the process if the call never returns.
 * Replay mode has several ops in flight and uses the non-blocking calls,
 * polled against the deadline. */
static SpExecStatus
mpi_start (SpExecCtx *ctx, SpExecTask *t)
{
  SpMpiTask *mt = t->be;
  const SpOp *op = t->op;
  mt->n_req = 0;
  mt->stage = 0;
  mt->completed = FALSE;
  t->times.t_end = 0;
  t->times.t_enqueue = t->times.t_start = (gint64) (MPI_Wtime () * 1e9);
  if (sp_coll_is_composite (op->kind))
    {
      gboolean done;
      return sp_exec_mpi_composite_test (ctx, t, &done);
    }
  switch (op->kind)
    {
    case SP_COLL_QUANTIZE:
    case SP_COLL_DEQUANTIZE:
      return run_kernel (ctx, t);
    case SP_COLL_COMPUTE:
      return SP_EXEC_OK; /* modelled: test() completes it after sleep_ns */
    case SP_COLL_ALL_GATHER: case SP_COLL_REDUCE_SCATTER: case SP_COLL_REDUCE_SCATTER_BLOCK:
    case SP_COLL_ALL_REDUCE: case SP_COLL_REDUCE: case SP_COLL_ALL_TO_ALL: case SP_COLL_BROADCAST:
    case SP_COLL_BARRIER: case SP_COLL_SEND: case SP_COLL_RECV: case SP_COLL_P2P:
      break;
    default:
      sp_exec_set_error (ctx, "op %u (%s): %s is not an MPI op", op->id, op->name,
                         sp_coll_name (op->kind));
      return SP_EXEC_ERROR;
    }
  if (ctx->opts->mode == SP_EXEC_MODE_ISOLATED)
    {
      /* t_start again right before the call, as a bare loop takes it. */
      t->times.t_start = (gint64) (MPI_Wtime () * 1e9);
      int rc = call_coll (ctx, t, TRUE);
      if (rc != MPI_SUCCESS)
        return mpi_error (ctx, op, "in", rc);
      if (op->redop == SP_REDOP_AVG && t->out_bytes)
        sp_exec_mpi_divide (t->out, t->out_bytes / sp_exec_reduce_elem_size (op->dtype), op->dtype,
                            t->group_size);
      t->times.t_end = (gint64) (MPI_Wtime () * 1e9);
      mt->completed = TRUE;
      return SP_EXEC_OK;
    }
  int rc = call_coll (ctx, t, FALSE);
  if (rc != MPI_SUCCESS)
    return mpi_error (ctx, op, "starting", rc);
  mt->n_req = n_requests (op->kind);
  return SP_EXEC_OK;
}

static SpExecStatus
mpi_test (SpExecCtx *ctx, SpExecTask *t, gboolean *out_done)
{
  SpMpiTask *mt = t->be;
  const SpOp *op = t->op;
  *out_done = FALSE;
  if (sp_coll_is_composite (op->kind))
    return sp_exec_mpi_composite_test (ctx, t, out_done);
  if (op->kind == SP_COLL_COMPUTE)
    {
      gint64 now = (gint64) (MPI_Wtime () * 1e9);
      if (now - t->times.t_start >= t->sleep_ns)
        {
          *out_done = TRUE;
          t->times.t_end = now;
        }
      return SP_EXEC_OK;
    }
  if (mt->completed)
    {
      *out_done = TRUE; /* run to completion by start() */
      return SP_EXEC_OK;
    }
  int flag = 1;
  if (mt->n_req > 0)
    {
      int rc = MPI_Testall (mt->n_req, mt->req, &flag, MPI_STATUSES_IGNORE);
      if (rc != MPI_SUCCESS)
        return mpi_error (ctx, op, "in", rc);
    }
  if (!flag)
    return SP_EXEC_OK;
  if (op->redop == SP_REDOP_AVG && t->out_bytes)
    sp_exec_mpi_divide (t->out, t->out_bytes / sp_exec_reduce_elem_size (op->dtype), op->dtype,
                        t->group_size);
  t->times.t_end = (gint64) (MPI_Wtime () * 1e9);
  *out_done = TRUE;
  return SP_EXEC_OK;
}

static void
mpi_abort (SpExecCtx *ctx)
{
  /* Requests of a dead peer can neither be completed nor freed portably;
   * the job is torn down by the bootstrap's abort afterwards. */
}

static void
mpi_teardown (SpExecCtx *ctx)
{
  SpMpiState *st = &mpi_state;
  for (guint32 i = 0; i < ctx->n_tasks; i++)
    {
      SpExecTask *t = &ctx->tasks[i];
      if (t->be)
        {
          sp_exec_mpi_composite_free (t);
          g_clear_pointer (&t->be, g_free);
        }
    }
  if (ctx->backend_state == NULL)
    return;
  for (int f = 0; f < SP_FAMILY_N; f++)
    if (st->comm[f] != MPI_COMM_NULL)
      MPI_Comm_free (&st->comm[f]);
  MPI_Type_free (&st->f16);
  MPI_Type_free (&st->bf16);
  MPI_Op_free (&st->op_sum);
  MPI_Op_free (&st->op_prod);
  MPI_Op_free (&st->op_max);
  MPI_Op_free (&st->op_min);
  ctx->backend_state = NULL;
}

static const char *
mpi_last_error (SpExecCtx *ctx)
{
  return ctx->error_text ? ctx->error_text : "no error";
}

static void
mpi_software (SpExecCtx *ctx, GPtrArray *kv)
{
  int v, sv;
  MPI_Get_version (&v, &sv);
  g_ptr_array_add (kv, g_strdup ("mpi_standard"));
  g_ptr_array_add (kv, g_strdup_printf ("%d.%d", v, sv));
}

const SpExecBackend sp_exec_backend_mpi = {
  .name = "mpi",
  .probe = mpi_probe,
  .setup = mpi_setup,
  .stage_in = mpi_noop,
  .start = mpi_start,
  .test = mpi_test,
  .stage_out = mpi_noop,
  .abort = mpi_abort,
  .teardown = mpi_teardown,
  .last_error = mpi_last_error,
  .software = mpi_software,
};
