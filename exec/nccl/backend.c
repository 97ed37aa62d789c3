/* exec/nccl/backend.c — the NCCL backend: one GPU per rank (its local rank
 * on the node), the world communicator from a unique id broadcast over the
 * bootstrap, one ncclCommSplit per group family (NCCL >= 2.18; below that a
 * unique id per group), all communicators non-blocking (blocking = 0, every
 * call polled with ncclCommGetAsyncError against a deadline) and warmed up
 * before timing.  Ops are enqueued in plan order on one CUDA stream per
 * plan stream, bracketed by CUDA events that are mapped onto the host clock
 * through an anchor event recorded at a known host time. */
#include "config.h"
#include "nccl/nccl-internal.h"
#include "exec-loop.h"
#include "shardplan/kernels.h"
#include "shardplan/topo.h"

#include <math.h>
#include <string.h>

static SpNcclState nccl_state;

/* Set-up calls may take long (first communicator, network bootstrap). */
#define SP_NCCL_SETUP_TIMEOUT_S 600.0

/* The anchor is renewed when older than this (ns), at a start() with no
 * task in flight: cudaEventElapsedTime gives float milliseconds, whose
 * resolution at an offset of x ms is about x·6e-8 ms (8 µs at 100 s), and
 * the device and host clocks drift apart over long runs. */
#define SP_NCCL_ANCHOR_MAX_AGE_NS ((gint64) 1000000000)

static gboolean
cuda_ok (SpExecCtx *ctx, cudaError_t e, const char *what, GError **error)
{
  if (e == cudaSuccess)
    return TRUE;
  g_set_error (error, SP_ERROR, SP_ERROR_BACKEND, "%s failed: %s", what, cudaGetErrorString (e));
  return FALSE;
}

ncclResult_t
sp_exec_nccl_wait (ncclComm_t comm, gint64 deadline_ns, const SpExecBoot *boot)
{
  ncclResult_t st = ncclInProgress;
  while (st == ncclInProgress)
    {
      if (ncclCommGetAsyncError (comm, &st) != ncclSuccess)
        return ncclSystemError;
      if (st == ncclInProgress && boot->now_ns () > deadline_ns)
        return ncclInProgress;
    }
  return st;
}

/* NCCL's last warning (ncclGetLastError), "" when it has none. */
static const char *
nccl_detail (ncclComm_t comm)
{
  const char *d = ncclGetLastError (comm);
  return d ? d : "";
}

static gboolean
nccl_ok (SpExecCtx *ctx, ncclComm_t comm, ncclResult_t r, const char *what, GError **error)
{
  if (r == ncclInProgress && comm)
    r = sp_exec_nccl_wait (comm, ctx->boot->now_ns () + (gint64) (SP_NCCL_SETUP_TIMEOUT_S * 1e9),
                           ctx->boot);
  if (r == ncclSuccess)
    return TRUE;
  nccl_state.failed = TRUE;
  const char *d = nccl_detail (comm);
  g_set_error (error, SP_ERROR, SP_ERROR_BACKEND, "%s failed: %s%s%s", what,
               r == ncclInProgress ? "no completion within the set-up deadline" : ncclGetErrorString (r),
               *d ? ": " : "", d);
  return FALSE;
}

/* Every rank learns whether any failed at this step of the set-up (the
 * first failure, named by its rank).  A failure agreed on also marks the
 * set-up failed here, so that teardown aborts this rank's communicators
 * rather than finalize them, which could wait on the rank that failed. */
static gboolean
setup_agree (SpExecCtx *ctx, GError **local, GError **error)
{
  if (sp_exec_agree (ctx, local, TRUE, error))
    return TRUE;
  ctx->failure_agreed = TRUE;
  nccl_state.failed = TRUE;
  return FALSE;
}

/* Wait for the warm-up collective on stream s.  A peer that fails after
 * the set-up's agreement, or dies, never joins it, and a plain
 * cudaStreamSynchronize would wait for ever: poll the stream and the
 * communicator's asynchronous error against the set-up deadline instead,
 * as every other set-up call is.  On a failure the communicators are
 * aborted at teardown (st->failed), which ends the stuck kernel. */
static gboolean
warmup_wait (SpExecCtx *ctx, ncclComm_t comm, cudaStream_t s, GError **error)
{
  gint64 deadline = ctx->boot->now_ns () + (gint64) (SP_NCCL_SETUP_TIMEOUT_S * 1e9);
  for (;;)
    {
      cudaError_t e = cudaStreamQuery (s);
      if (e == cudaSuccess)
        return TRUE;
      if (e != cudaErrorNotReady)
        {
          nccl_state.failed = TRUE;
          return cuda_ok (ctx, e, "the warm-up ncclAllReduce on the GPU (cudaStreamQuery)", error);
        }
      ncclResult_t a = ncclSuccess;
      if (ncclCommGetAsyncError (comm, &a) != ncclSuccess)
        a = ncclSystemError;
      if (a != ncclSuccess && a != ncclInProgress)
        return nccl_ok (ctx, comm, a, "warm-up ncclAllReduce", error);
      if (ctx->boot->now_ns () > deadline)
        {
          nccl_state.failed = TRUE;
          g_set_error (error, SP_ERROR, SP_ERROR_BACKEND, "warm-up ncclAllReduce failed: not "
                       "finished on the GPU within the set-up deadline (%g s); a peer may be gone "
                       "or stuck", SP_NCCL_SETUP_TIMEOUT_S);
          return FALSE;
        }
      g_usleep (50);
    }
}

ncclResult_t
sp_exec_nccl_alltoall (const void *in, void *out, size_t bytes_per_peer, int n, ncclComm_t comm,
                       cudaStream_t stream)
{
  ncclResult_t r = ncclGroupStart ();
  for (int p = 0; p < n && (r == ncclSuccess || r == ncclInProgress); p++)
    {
      r = ncclSend ((const char *) in + (size_t) p * bytes_per_peer, bytes_per_peer, ncclUint8, p,
                    comm, stream);
      if (r == ncclSuccess || r == ncclInProgress)
        r = ncclRecv ((char *) out + (size_t) p * bytes_per_peer, bytes_per_peer, ncclUint8, p, comm,
                      stream);
    }
  ncclResult_t e = ncclGroupEnd ();
  return r == ncclSuccess || r == ncclInProgress ? e : r;
}

/* This rank's GPU among the n it sees.  Under mpirun every rank of a node
 * sees all its GPUs: local rank r takes GPU r.  Under a launcher that gives
 * each rank a GPU of its own (srun --gpus-per-task=1, or CUDA_VISIBLE_DEVICES
 * set per rank) a rank sees exactly one: it takes that one.  (Were several
 * ranks shown the same single GPU, NCCL refuses the communicator:
 * "duplicate GPU".)  Anything else is ambiguous and refused. */
static gboolean
pick_device (const SpExecCtx *ctx, int *out_device, GError **error)
{
  int n = 0;
  cudaError_t e = cudaGetDeviceCount (&n);
  if (e != cudaSuccess || n == 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_UNSUPPORTED, "no GPU visible (%s); the nccl backend "
                   "needs one GPU per rank", e != cudaSuccess ? cudaGetErrorString (e) : "0 devices");
      return FALSE;
    }
  if (ctx->local_rank < (guint32) n)
    *out_device = (int) ctx->local_rank;
  else if (n == 1)
    *out_device = 0;
  else
    {
      g_set_error (error, SP_ERROR, SP_ERROR_UNSUPPORTED, "local rank %u has no GPU of its own (%d "
                   "visible to it for %u local ranks); the nccl backend needs one GPU per rank: "
                   "all of a node's GPUs visible to every rank, or exactly one per rank",
                   ctx->local_rank, n, ctx->local_size);
      return FALSE;
    }
  return TRUE;
}

static gboolean
nccl_probe (SpExecCtx *ctx, GError **error)
{
  int device;
  return pick_device (ctx, &device, error);
}

static ncclConfig_t
nonblocking_config (void)
{
  ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
  c.blocking = 0;
  return c;
}

/* One communicator per family of the plan. */
static gboolean
split_families (SpExecCtx *ctx, SpNcclState *st, GError **error)
{
  for (int f = 0; f < SP_FAMILY_N; f++)
    {
      if (!ctx->families_used[f])
        continue;
      guint32 index = 0, grank = 0;
      gboolean in = sp_groups_find (ctx->groups, (SpFamily) f, ctx->rank, &index, &grank);
      ncclConfig_t cfg = nonblocking_config ();
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 18, 0)
      ncclResult_t r = ncclCommSplit (st->world, in ? (int) index : NCCL_SPLIT_NOCOLOR, (int) grank,
                                      &st->comm[f], &cfg);
      /* A non-blocking parent returns ncclInProgress and runs the split
       * in the background; NCCL stores *newcomm when the child is made.
       * Poll the parent, then the child. */
      if (!nccl_ok (ctx, st->world, r, "ncclCommSplit", error))
        return FALSE;
      if (in && !g_atomic_pointer_get (&st->comm[f]))
        {
          st->failed = TRUE;
          g_set_error (error, SP_ERROR, SP_ERROR_BACKEND, "ncclCommSplit of family %s completed on the "
                       "parent but gave no communicator", sp_family_name ((SpFamily) f));
          return FALSE;
        }
      if (in && !nccl_ok (ctx, st->comm[f], ncclInProgress, "ncclCommSplit", error))
        return FALSE;
#else
      /* A unique id per group: its first member makes it, everyone sees all. */
      ncclUniqueId mine;
      memset (&mine, 0, sizeof mine);
      /* Every rank agrees before the allgather: one whose ncclGetUniqueId
       * failed must not leave the others in it. */
      GError *local = NULL;
      if (in && grank == 0)
        nccl_ok (ctx, NULL, ncclGetUniqueId (&mine), "ncclGetUniqueId", &local);
      if (!setup_agree (ctx, &local, error))
        return FALSE;
      g_autofree ncclUniqueId *all = g_new (ncclUniqueId, ctx->world);
      if (!ctx->boot->allgather (&mine, sizeof mine, all, error))
        return FALSE;
      if (in)
        {
          guint32 size;
          const guint32 *m = sp_groups_members (ctx->groups, (SpFamily) f, index, &size);
          ncclResult_t r = ncclCommInitRankConfig (&st->comm[f], (int) size, all[m[0]], (int) grank, &cfg);
          if (!nccl_ok (ctx, st->comm[f], r, "ncclCommInitRankConfig", error))
            return FALSE;
        }
#endif
    }
  return TRUE;
}

static cudaStream_t
stream_for (SpNcclState *st, guint32 plan_stream, GError **error)
{
  gpointer key = GUINT_TO_POINTER (plan_stream + 1);
  cudaStream_t s = g_hash_table_lookup (st->streams, key);
  if (!s)
    {
      cudaError_t e = cudaStreamCreateWithFlags (&s, cudaStreamNonBlocking);
      if (e != cudaSuccess)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_BACKEND, "cudaStreamCreate failed: %s",
                       cudaGetErrorString (e));
          return NULL;
        }
      g_hash_table_insert (st->streams, key, s);
    }
  return s;
}

static gboolean
alloc_task (SpExecCtx *ctx, SpNcclState *st, SpExecTask *t, GError **error)
{
  SpNcclTask *nt = g_new0 (SpNcclTask, 1);
  t->be = nt;
  nt->stream = stream_for (st, t->op->stream, error);
  if (!nt->stream)
    return FALSE;
  for (guint i = 0; i < SP_NCCL_MAX_EVENTS; i++)
    if (!cuda_ok (ctx, cudaEventCreate (&nt->ev[i]), "cudaEventCreate", error))
      return FALSE;
  if ((t->in_bytes && !cuda_ok (ctx, cudaMalloc (&nt->d_in, t->in_bytes), "cudaMalloc", error)) ||
      (t->out_bytes && !cuda_ok (ctx, cudaMalloc (&nt->d_out, t->out_bytes), "cudaMalloc", error)))
    return FALSE;
  if (sp_coll_is_composite (t->op->kind) && !t->virtual_composite &&
      !sp_exec_nccl_composite_alloc (ctx, t))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_BACKEND, "%s", ctx->error_text);
      return FALSE;
    }
  return TRUE;
}

/* Enqueue the NCCL call(s) of plain op `t` on `stream` (nccl_start, and
 * nccl_estimate inside a simulated group).  *out_nccl is FALSE, and nothing
 * is enqueued, when the op is no NCCL collective (a kernel, compute, a
 * composite, or a kind NCCL does not run). */
static ncclResult_t
enqueue_nccl (SpNcclState *st, SpExecTask *t, ncclComm_t comm, cudaStream_t stream,
              gboolean *out_nccl)
{
  SpNcclTask *nt = t->be;
  const SpOp *op = t->op;
  const int n = (int) t->group_size, g = (int) t->group_rank;
  const ncclDataType_t dt = (ncclDataType_t) op->dtype;
  const ncclRedOp_t rop = (ncclRedOp_t) op->redop;
  *out_nccl = TRUE;
  switch (op->kind)
    {
    case SP_COLL_ALL_GATHER:
      return ncclAllGather (nt->d_in, nt->d_out, t->in_bytes, ncclUint8, comm, stream);
    case SP_COLL_REDUCE_SCATTER:
    case SP_COLL_REDUCE_SCATTER_BLOCK:
      return ncclReduceScatter (nt->d_in, nt->d_out, op->count / n, dt, rop, comm, stream);
    case SP_COLL_ALL_REDUCE:
      return ncclAllReduce (nt->d_in, nt->d_out, op->count, dt, rop, comm, stream);
    case SP_COLL_REDUCE:
      return ncclReduce (nt->d_in, nt->d_out, op->count, dt, rop, 0, comm, stream);
    case SP_COLL_BROADCAST:
      return ncclBroadcast (nt->d_out, nt->d_out, t->out_bytes, ncclUint8, 0, comm, stream);
    case SP_COLL_ALL_TO_ALL:
      return sp_exec_nccl_alltoall (nt->d_in, nt->d_out, t->in_bytes / n, n, comm, stream);
    case SP_COLL_BARRIER:
      return ncclAllReduce (st->scratch, st->scratch, 1, ncclFloat, ncclSum, comm, stream);
    case SP_COLL_P2P: /* the sender's and the receiver's half (no one else runs it) */
      return g == (int) op->src ? ncclSend (nt->d_in, t->in_bytes, ncclUint8, (int) op->dst, comm, stream)
                                : ncclRecv (nt->d_out, t->out_bytes, ncclUint8, (int) op->src, comm, stream);
    case SP_COLL_SEND:
    case SP_COLL_RECV:
      {
        int next = (g + 1) % n, prev = (g + n - 1) % n;
        int to = op->kind == SP_COLL_SEND ? next : prev, from = op->kind == SP_COLL_SEND ? prev : next;
        ncclResult_t r = ncclGroupStart ();
        if (r == ncclSuccess)
          r = ncclSend (nt->d_in, t->in_bytes, ncclUint8, to, comm, stream);
        if (r == ncclSuccess || r == ncclInProgress)
          r = ncclRecv (nt->d_out, t->out_bytes, ncclUint8, from, comm, stream);
        ncclResult_t e = ncclGroupEnd ();
        return r == ncclSuccess || r == ncclInProgress ? e : r;
      }
    default:
      *out_nccl = FALSE;
      return ncclSuccess;
    }
}

#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 22, 0)
/* NCCL's own estimate of every plain collective this rank runs: the op's
 * NCCL call(s) between ncclGroupStart and ncclGroupSimulateEnd, which
 * launches nothing and reports the tuner's time (estimatedTime, µs) for
 * the group.  Once per op at set-up, after the warm-up, outside any timed
 * region; the members of a group simulate the same ops in the same (plan)
 * order, as they will run them.  Composites and kernels get none (-1).  An
 * estimate NCCL does not give (estimatedTime left undefined) stays -1; a
 * communicator that fails fails the set-up, as the op itself would. */
static gboolean
nccl_estimate (SpExecCtx *ctx, SpNcclState *st, GError **error)
{
  for (guint32 i = 0; i < ctx->n_tasks; i++)
    {
      SpExecTask *t = &ctx->tasks[i];
      t->has_nccl_est = FALSE;
      t->nccl_est_ns = -1;
      if (!t->runs || t->handled_by_parent || t->virtual_composite || !t->be ||
          sp_coll_is_composite (t->op->kind) || !sp_coll_is_communication (t->op->kind) ||
          t->family >= SP_FAMILY_N || !st->comm[t->family])
        continue;
      ncclComm_t comm = st->comm[t->family];
      SpNcclTask *nt = t->be;
      ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
      gboolean is_nccl = FALSE;
      ncclResult_t r = ncclGroupStart ();
      if (r == ncclSuccess)
        {
          r = enqueue_nccl (st, t, comm, nt->stream, &is_nccl);
          /* Always close the group, whatever the calls returned. */
          ncclResult_t e = ncclGroupSimulateEnd (&info);
          if (r == ncclSuccess || r == ncclInProgress)
            r = e;
        }
      if (r == ncclInProgress)
        r = sp_exec_nccl_wait (comm, ctx->boot->now_ns () + (gint64) (SP_NCCL_SETUP_TIMEOUT_S * 1e9),
                               ctx->boot);
      ncclResult_t async = ncclSuccess;
      if (ncclCommGetAsyncError (comm, &async) != ncclSuccess)
        async = ncclSystemError;
      /* A communicator still in progress must not be used again. */
      if (async != ncclSuccess)
        {
          st->failed = TRUE;
          const char *d = nccl_detail (comm);
          g_set_error (error, SP_ERROR, SP_ERROR_BACKEND,
                       "op %u (%s): ncclGroupSimulateEnd left the communicator %s%s%s", t->op->id,
                       t->op->name, async == ncclInProgress ? "in progress past the set-up deadline"
                       : ncclGetErrorString (async), *d ? ": " : "", d);
          return FALSE;
        }
      /* estimatedTime is µs; NCCL_UNDEF_FLOAT (-1) when not filled in.
       * Beyond 1e12 µs (11 days) it is no estimate of one op. */
      if (r == ncclSuccess && is_nccl && info.estimatedTime >= 0.0f && info.estimatedTime <= 1e12f)
        {
          t->has_nccl_est = TRUE;
          t->nccl_est_ns = (gint64) ((double) info.estimatedTime * 1e3 + 0.5);
        }
    }
  return TRUE;
}
#endif

/* Record the anchor event on an idle (legacy default) stream, wait for it
 * and read the host clock: the anchor's device time is anchor_ns, late by
 * at most the synchronisation's return (so a mapped event never precedes
 * the host time at which it was enqueued). */
static cudaError_t
anchor (SpExecCtx *ctx, SpNcclState *st)
{
  cudaError_t e = cudaEventRecord (st->anchor, 0);
  if (e == cudaSuccess)
    e = cudaEventSynchronize (st->anchor);
  if (e == cudaSuccess)
    st->anchor_ns = ctx->boot->now_ns ();
  return e;
}

/* NCCL_ALGO / NCCL_PROTO (the environment's, the topology's [nccl], or
 * NCCL's configuration files': exported before this) as this NCCL reads
 * them: per-collective entries, written for NCCL 2.24 and later, are
 * refused on an older one, which reads them otherwise (every algorithm
 * off, or none). */
static gboolean
nccl_env_fits_version (SpExecCtx *ctx, GError **error)
{
  int code = 0;
  if (ncclGetVersion (&code) != ncclSuccess || code <= 0)
    return TRUE;
  char text[16];
  g_snprintf (text, sizeof text, "%d", code);
  int v = sp_topo_nccl_version_code (text); /* either scheme, as 2.21.5 = 22105 */
  if (v == 0)
    return TRUE;
  /* a topology written for another NCCL: said once, not refused (the
   * trace records the NCCL that ran, and calibrate reads it) */
  guint32 t = ctx->topo_nccl_version;
  if (ctx->rank == 0 && t != 0 && t / 100 != (guint32) v / 100)
    {
      g_autofree char *topo_v = sp_topo_nccl_version_text ((int) t);
      g_autofree char *run_v = sp_topo_nccl_version_text (v);
      fprintf (stderr, "shardplan run: note: the topology's [nccl] version is %s, this run's NCCL "
                       "is %s: sim and sweep on that topology cost what %s can run\n",
               topo_v, run_v, topo_v);
    }
  for (guint k = 0; k < 2; k++)
    {
      const char *name = k ? "NCCL_PROTO" : "NCCL_ALGO", *value = g_getenv (name);
      if (value != NULL && !sp_topo_nccl_check_version (name, value, k, v, error))
        return FALSE;
    }
  return TRUE;
}

static gboolean
nccl_setup (SpExecCtx *ctx, GError **error)
{
  SpNcclState *st = &nccl_state;
  memset (st, 0, sizeof *st);
  ctx->backend_state = st;
  st->streams = g_hash_table_new (g_direct_hash, g_direct_equal);
  ncclUniqueId id;
  memset (&id, 0, sizeof id);
  /* The local steps, then every rank agrees before any collective step: a
   * rank that failed here must not leave rank 0 alone in the bcast, nor
   * the others waiting for it in ncclCommInitRankConfig until the set-up
   * deadline. */
  GError *local = NULL;
  if (nccl_env_fits_version (ctx, &local) && pick_device (ctx, &st->device, &local) &&
      cuda_ok (ctx, cudaSetDevice (st->device), "cudaSetDevice", &local))
    {
      struct cudaDeviceProp prop;
      if (cudaGetDeviceProperties (&prop, st->device) == cudaSuccess)
        g_strlcpy (st->device_name, prop.name, sizeof st->device_name);
      if (ctx->rank == 0)
        nccl_ok (ctx, NULL, ncclGetUniqueId (&id), "ncclGetUniqueId", &local);
    }
  if (!setup_agree (ctx, &local, error))
    return FALSE;
  if (!ctx->boot->bcast (&id, sizeof id, 0, error))
    return FALSE;
  ncclConfig_t cfg = nonblocking_config ();
  ncclResult_t r = ncclCommInitRankConfig (&st->world, (int) ctx->world, id, (int) ctx->rank, &cfg);
  /* One rank's init can fail alone once the bootstrap is done (out of
   * device memory for its own buffers), while its peers' succeed: agree
   * before the splits, where those peers would wait for it until the
   * set-up deadline. */
  GError *init_error = NULL;
  if (!nccl_ok (ctx, st->world, r, "ncclCommInitRankConfig", &init_error) && st->world)
    {
      /* Its own communicator aborted first: peers still in the init's
       * bootstrap may then see the connection drop rather than wait. */
      ncclCommAbort (st->world);
      st->world = NULL;
    }
  if (!setup_agree (ctx, &init_error, error))
    return FALSE;
  if (!split_families (ctx, st, error))
    return FALSE;
  /* Device memory, streams and events: local steps, so one rank can fail
   * here alone (out of device memory).  Every rank agrees before the
   * warm-up, whose first collective a failed rank would never join: its
   * peers would wait there until the set-up deadline. */
  GError *alloc_error = NULL;
  if (stream_for (st, 0, &alloc_error) /* the warm-up's */
      && cuda_ok (ctx, cudaMalloc (&st->scratch, 4), "cudaMalloc", &alloc_error))
    for (guint32 i = 0; i < ctx->n_tasks; i++)
      {
        SpExecTask *t = &ctx->tasks[i];
        if (t->runs && !t->handled_by_parent && !t->virtual_composite
            && !alloc_task (ctx, st, t, &alloc_error))
          break;
      }
  if (!setup_agree (ctx, &alloc_error, error))
    return FALSE;
  /* Warm up every communicator (connections are made on first use). */
  for (int f = 0; f < SP_FAMILY_N; f++)
    if (st->comm[f])
      {
        cudaStream_t s = stream_for (st, 0, error);
        if (!s || !nccl_ok (ctx, st->comm[f], ncclAllReduce (st->scratch, st->scratch, 1, ncclFloat,
                                                             ncclSum, st->comm[f], s),
                            "warm-up ncclAllReduce", error) ||
            !warmup_wait (ctx, st->comm[f], s, error))
          return FALSE;
      }
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 22, 0)
  if (!nccl_estimate (ctx, st, error))
    return FALSE;
#endif
  /* The anchor that maps CUDA events onto the host clock. */
  if (!cuda_ok (ctx, cudaEventCreate (&st->anchor), "cudaEventCreate", error))
    return FALSE;
  cudaError_t e = anchor (ctx, st);
  return cuda_ok (ctx, e, "the clock anchor (cudaEventRecord, cudaEventSynchronize)", error);
}

/* Copy `bytes` between the host and the device on the task's stream and
 * wait for it.  The streams are cudaStreamNonBlocking: a plain cudaMemcpy
 * runs on the legacy default stream, which they do not wait for, and from
 * pageable memory it may return before the data reach the device. */
static SpExecStatus
copy_sync (SpExecCtx *ctx, const SpExecTask *t, void *dst, const void *src, gsize bytes,
           enum cudaMemcpyKind kind)
{
  SpNcclTask *nt = t->be;
  cudaError_t e = cudaMemcpyAsync (dst, src, bytes, kind, nt->stream);
  if (e == cudaSuccess)
    e = cudaStreamSynchronize (nt->stream);
  if (e == cudaSuccess)
    return SP_EXEC_OK;
  sp_exec_set_error (ctx, "op %u (%s): cudaMemcpyAsync %s failed: %s", t->op->id, t->op->name,
                     kind == cudaMemcpyHostToDevice ? "to the device" : "from the device",
                     cudaGetErrorString (e));
  return SP_EXEC_ERROR;
}

/* The input, and the output buffer as filled: the broadcast root's data
 * (in_bytes is 0 for a broadcast; the op runs in place on d_out), else the
 * poison of sp_exec_data_fill, so that a result never written shows as on
 * the MPI backend instead of the previous iteration's bytes. */
static SpExecStatus
nccl_stage_in (SpExecCtx *ctx, SpExecTask *t)
{
  SpNcclTask *nt = t->be;
  if (!nt)
    return SP_EXEC_OK;
  if (t->in_bytes && copy_sync (ctx, t, nt->d_in, t->in, t->in_bytes, cudaMemcpyHostToDevice) != SP_EXEC_OK)
    return SP_EXEC_ERROR;
  if (t->out_bytes && copy_sync (ctx, t, nt->d_out, t->out, t->out_bytes, cudaMemcpyHostToDevice) != SP_EXEC_OK)
    return SP_EXEC_ERROR;
  return SP_EXEC_OK;
}

static SpExecStatus
fail_nccl (SpExecCtx *ctx, const SpExecTask *t, ncclComm_t comm, ncclResult_t r)
{
  SpNcclState *st = ctx->backend_state;
  st->failed = TRUE;
  const char *d = nccl_detail (comm);
  if (r == ncclInProgress)
    sp_exec_set_error (ctx, "op %u (%s): NCCL %s still in progress at the %g s deadline (--timeout)",
                       t->op->id, t->op->name, sp_coll_name (t->op->kind), ctx->opts->timeout_s);
  else
    sp_exec_set_error (ctx, "op %u (%s): NCCL %s failed: %s%s%s", t->op->id, t->op->name,
                       sp_coll_name (t->op->kind), ncclGetErrorString (r), *d ? ": " : "", d);
  return SP_EXEC_ERROR;
}

static SpExecStatus
fail_cuda (SpExecCtx *ctx, const SpExecTask *t, const char *what, cudaError_t e)
{
  SpNcclState *st = ctx->backend_state;
  st->failed = TRUE;
  sp_exec_set_error (ctx, "op %u (%s): %s failed: %s", t->op->id, t->op->name, what, cudaGetErrorString (e));
  return SP_EXEC_ERROR;
}

static SpExecStatus
nccl_start (SpExecCtx *ctx, SpExecTask *t)
{
  SpNcclState *st = ctx->backend_state;
  SpNcclTask *nt = t->be;
  const SpOp *op = t->op;
  ncclComm_t comm = t->family < SP_FAMILY_N ? st->comm[t->family] : NULL;
  ncclResult_t r = ncclSuccess;
  SpKernStatus ks = SP_KERN_OK;
  cudaError_t ce;
  t->times.t_enqueue = ctx->boot->now_ns ();
  /* Renew the anchor while nothing is in flight (no event waits to be
   * mapped with the old one). */
  if (st->in_flight == 0 && t->times.t_enqueue - st->anchor_ns > SP_NCCL_ANCHOR_MAX_AGE_NS &&
      (ce = anchor (ctx, st)) != cudaSuccess)
    return fail_cuda (ctx, t, "the clock anchor", ce);
  if (sp_coll_is_composite (op->kind))
    {
      SpExecStatus s = sp_exec_nccl_composite_start (ctx, t);
      if (s != SP_EXEC_OK)
        st->failed = TRUE;
      else
        st->in_flight++;
      return s;
    }
  /* A never-recorded event queries as complete: every record is checked,
   * else test() would see the previous iteration's events. */
  nt->n_ev = 2;
  if ((ce = cudaEventRecord (nt->ev[0], nt->stream)) != cudaSuccess)
    return fail_cuda (ctx, t, "cudaEventRecord", ce);
  gboolean is_nccl = FALSE;
  r = enqueue_nccl (st, t, comm, nt->stream, &is_nccl);
  if (!is_nccl)
    switch (op->kind)
      {
      case SP_COLL_QUANTIZE:
        ks = sp_kern_gpu_quant (nt->d_in, t->kern_groups, t->kern_group_elems, t->kern_bits, nt->d_out,
                                (float *) ((guint8 *) nt->d_out + op->count * t->kern_bits / 8),
                                nt->stream);
        break;
      case SP_COLL_DEQUANTIZE:
        ks = sp_kern_gpu_dequant (nt->d_in, (const float *) ((guint8 *) nt->d_in + op->count * t->kern_bits / 8),
                                  t->kern_groups, t->kern_group_elems, t->kern_bits, nt->d_out, nt->stream);
        break;
      case SP_COLL_COMPUTE:
        break; /* modelled: test() completes it after sleep_ns of host time */
      default:
        st->failed = TRUE;
        sp_exec_set_error (ctx, "op %u (%s): %s is not an NCCL op", op->id, op->name, sp_coll_name (op->kind));
        return SP_EXEC_ERROR;
      }
  if (ks != SP_KERN_OK)
    {
      st->failed = TRUE;
      sp_exec_set_error (ctx, "op %u (%s): kernel: %s (%s)", op->id, op->name, sp_kern_status_name (ks),
                         sp_kern_gpu_error_string ());
      return SP_EXEC_ERROR;
    }
  if (r == ncclInProgress && comm)
    r = sp_exec_nccl_wait (comm, t->deadline_ns, ctx->boot);
  if (r != ncclSuccess)
    return fail_nccl (ctx, t, comm, r);
  if ((ce = cudaEventRecord (nt->ev[1], nt->stream)) != cudaSuccess)
    return fail_cuda (ctx, t, "cudaEventRecord", ce);
  st->in_flight++;
  return SP_EXEC_OK;
}

/* Device time from event a to event b, ns. */
static cudaError_t
elapsed_ns (cudaEvent_t a, cudaEvent_t b, gint64 *out_ns)
{
  float ms = 0;
  cudaError_t e = cudaEventElapsedTime (&ms, a, b);
  *out_ns = (gint64) llround ((double) ms * 1e6);
  return e;
}

static SpExecStatus
nccl_test (SpExecCtx *ctx, SpExecTask *t, gboolean *out_done)
{
  SpNcclState *st = ctx->backend_state;
  SpNcclTask *nt = t->be;
  *out_done = FALSE;
  if (t->op->kind == SP_COLL_COMPUTE)
    {
      gint64 now = ctx->boot->now_ns ();
      if (now - t->times.t_enqueue >= t->sleep_ns)
        {
          t->times.t_start = t->times.t_enqueue;
          t->times.t_end = now;
          *out_done = TRUE;
          st->in_flight--;
        }
      return SP_EXEC_OK;
    }
  cudaError_t e = cudaEventQuery (nt->ev[nt->n_ev - 1]);
  if (e == cudaErrorNotReady)
    {
      /* Still running: look for an asynchronous NCCL error on its comms. */
      for (int f = 0; f < SP_FAMILY_N; f++)
        if (st->comm[f] && (f == (int) t->family || (t->n_sub && !t->virtual_composite)))
          {
            ncclResult_t a;
            if (ncclCommGetAsyncError (st->comm[f], &a) == ncclSuccess && a != ncclSuccess &&
                a != ncclInProgress)
              return fail_nccl (ctx, t, st->comm[f], a);
          }
      return SP_EXEC_OK;
    }
  if (e != cudaSuccess)
    return fail_cuda (ctx, t, "the op on the GPU", e);
  /* The start from the anchor; the end and the stages from the start, so
   * that durations keep the events' resolution however far the anchor. */
  gint64 start = 0, end = 0;
  if ((e = elapsed_ns (st->anchor, nt->ev[0], &start)) != cudaSuccess ||
      (e = elapsed_ns (nt->ev[0], nt->ev[nt->n_ev - 1], &end)) != cudaSuccess)
    return fail_cuda (ctx, t, "cudaEventElapsedTime", e);
  t->times.t_start = st->anchor_ns + start;
  t->times.t_end = t->times.t_start + end;
  for (guint32 i = 0; t->sub_times && i < t->n_sub && i + 1 < nt->n_ev; i++)
    {
      /* Composite stage i runs between event i and event i+1 (qgZ); the
       * reduce_scatter_coalesced sub-op is stage 1 of pack/rs/unpack. */
      guint a = t->op->kind == SP_COLL_REDUCE_SCATTER_COALESCED ? 1 : i;
      gint64 s0 = 0, s1 = 0;
      if ((e = elapsed_ns (nt->ev[0], nt->ev[a], &s0)) != cudaSuccess ||
          (e = elapsed_ns (nt->ev[0], nt->ev[a + 1], &s1)) != cudaSuccess)
        return fail_cuda (ctx, t, "cudaEventElapsedTime", e);
      t->sub_times[i].t_enqueue = t->times.t_enqueue;
      t->sub_times[i].t_start = t->times.t_start + s0;
      t->sub_times[i].t_end = t->times.t_start + s1;
    }
  *out_done = TRUE;
  st->in_flight--;
  return SP_EXEC_OK;
}

static SpExecStatus
nccl_stage_out (SpExecCtx *ctx, SpExecTask *t)
{
  SpNcclTask *nt = t->be;
  if (!nt || !t->out_bytes)
    return SP_EXEC_OK;
  return copy_sync (ctx, t, t->out, nt->d_out, t->out_bytes, cudaMemcpyDeviceToHost);
}

static void
nccl_abort (SpExecCtx *ctx)
{
  SpNcclState *st = ctx->backend_state;
  if (!st)
    return;
  for (int f = 0; f < SP_FAMILY_N; f++)
    if (st->comm[f])
      {
        ncclCommAbort (st->comm[f]);
        st->comm[f] = NULL;
      }
  if (st->world)
    ncclCommAbort (st->world);
  st->world = NULL;
}

/* Finalize (flush, then wait until NCCL reports the communicator
 * quiescent) and destroy; abort when finalizing fails or passes the
 * deadline. */
static void
destroy_comm (SpExecCtx *ctx, ncclComm_t comm)
{
  ncclResult_t r = ncclCommFinalize (comm);
  if (r == ncclInProgress)
    r = sp_exec_nccl_wait (comm, ctx->boot->now_ns () + (gint64) (ctx->opts->timeout_s * 1e9), ctx->boot);
  if (r == ncclSuccess)
    ncclCommDestroy (comm);
  else
    ncclCommAbort (comm);
}

/* Can every communicator be finalized?  Not after a failure, nor with an
 * op still on the GPU (one that timed out waits for a peer that will not
 * come: finalize would flush it until the deadline), nor when a
 * communicator reports an error or a call still in progress. */
static gboolean
comms_clean (SpExecCtx *ctx, SpNcclState *st)
{
  if (st->failed)
    return FALSE;
  for (guint32 i = 0; i < ctx->n_tasks; i++)
    {
      SpNcclTask *nt = ctx->tasks[i].be;
      if (nt && nt->n_ev && cudaEventQuery (nt->ev[nt->n_ev - 1]) != cudaSuccess)
        return FALSE;
    }
  ncclComm_t all[SP_FAMILY_N + 1];
  memcpy (all, st->comm, sizeof st->comm);
  all[SP_FAMILY_N] = st->world;
  for (int f = 0; f <= SP_FAMILY_N; f++)
    {
      ncclResult_t a = ncclSuccess;
      if (all[f] && (ncclCommGetAsyncError (all[f], &a) != ncclSuccess || a != ncclSuccess))
        return FALSE;
    }
  return TRUE;
}

static void
nccl_teardown (SpExecCtx *ctx)
{
  SpNcclState *st = ctx->backend_state;
  if (!st)
    return;
  /* The communicators first: cudaFree waits for the device, so memory is
   * freed only when no NCCL kernel can still be running (aborted, or
   * finalized after a clean run). */
  if (!comms_clean (ctx, st))
    nccl_abort (ctx);
  for (int f = 0; f < SP_FAMILY_N; f++)
    if (st->comm[f])
      destroy_comm (ctx, st->comm[f]);
  if (st->world)
    destroy_comm (ctx, st->world);
  for (guint32 i = 0; i < ctx->n_tasks; i++)
    {
      SpExecTask *t = &ctx->tasks[i];
      SpNcclTask *nt = t->be;
      if (!nt)
        continue;
      sp_exec_nccl_composite_free (t);
      cudaFree (nt->d_in);
      cudaFree (nt->d_out);
      for (guint e = 0; e < SP_NCCL_MAX_EVENTS; e++)
        if (nt->ev[e])
          cudaEventDestroy (nt->ev[e]);
      g_clear_pointer (&t->be, g_free);
    }
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init (&it, st->streams);
  while (g_hash_table_iter_next (&it, &k, &v))
    cudaStreamDestroy (v);
  g_hash_table_unref (st->streams);
  if (st->anchor)
    cudaEventDestroy (st->anchor);
  cudaFree (st->scratch);
  memset (st, 0, sizeof *st);
  ctx->backend_state = NULL;
}

static const char *
nccl_last_error (SpExecCtx *ctx)
{
  return ctx->error_text ? ctx->error_text : "no error";
}

static void
nccl_software (SpExecCtx *ctx, GPtrArray *kv)
{
  SpNcclState *st = &nccl_state;
  int v = 0, rt = 0, drv = 0;
  ncclGetVersion (&v);
  cudaRuntimeGetVersion (&rt);
  cudaDriverGetVersion (&drv);
  g_ptr_array_add (kv, g_strdup ("nccl_compiled"));
  g_ptr_array_add (kv, g_strdup_printf ("%d.%d.%d", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH));
  g_ptr_array_add (kv, g_strdup ("nccl_runtime"));
  g_ptr_array_add (kv, g_strdup_printf ("%d.%d.%d", v / 10000, v / 100 % 100, v % 100));
  g_ptr_array_add (kv, g_strdup ("cuda_runtime"));
  g_ptr_array_add (kv, g_strdup_printf ("%d.%d", rt / 1000, rt % 1000 / 10));
  g_ptr_array_add (kv, g_strdup ("cuda_driver"));
  g_ptr_array_add (kv, g_strdup_printf ("%d.%d", drv / 1000, drv % 1000 / 10));
  g_ptr_array_add (kv, g_strdup ("gpu"));
  g_ptr_array_add (kv, g_strdup (st->device_name));
}

const SpExecBackend sp_exec_backend_nccl = {
  .name = "nccl",
  .probe = nccl_probe,
  .setup = nccl_setup,
  .stage_in = nccl_stage_in,
  .start = nccl_start,
  .test = nccl_test,
  .stage_out = nccl_stage_out,
  .abort = nccl_abort,
  .teardown = nccl_teardown,
  .last_error = nccl_last_error,
  .software = nccl_software,
};
