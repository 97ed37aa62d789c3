/* exec/nccl/nccl-internal.h — shared by the NCCL backend's files (exec/nccl/
 * only: it includes cuda_runtime.h and nccl.h).  MPI is reached through the
 * bootstrap table, never directly. */
#pragma once
#include <cuda_runtime.h>
/* nccl.h declares a few functions with empty parentheses. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop
#include "exec-internal.h"

/* Stage events of one task: [0] before the op, [k] after stage k. */
#define SP_NCCL_MAX_EVENTS 9

typedef struct {
  ncclComm_t world;
  ncclComm_t comm[SP_FAMILY_N];   /* NULL when this rank is in no group of the family */
  GHashTable *streams;            /* plan stream + 1 → cudaStream_t */
  cudaEvent_t anchor;             /* recorded at anchor_ns on the host clock */
  gint64 anchor_ns;
  guint in_flight;                /* tasks started and not yet seen done */
  gboolean failed;                /* an op or a communicator failed: abort, never finalize */
  void *scratch;                  /* 4 bytes for barriers and warm-up */
  char device_name[256];
  int device;
} SpNcclState;

typedef struct {
  void *d_in, *d_out;             /* device copies of the task's buffers */
  void *d_buf, *d_buf2, *d_buf3, *d_buf4; /* composite scratch */
  float *d_sc, *d_sc2, *d_sc3, *d_sc4;
  cudaStream_t stream;
  cudaEvent_t ev[SP_NCCL_MAX_EVENTS];
  guint n_ev;
} SpNcclTask;

/* Poll a non-blocking communicator until its last call is no longer in
 * progress; ncclSuccess or the error (ncclInProgress on the deadline). */
ncclResult_t sp_exec_nccl_wait (ncclComm_t comm, gint64 deadline_ns, const SpExecBoot *boot);

/* All-to-all of `bytes_per_peer` bytes over `comm` of n ranks (grouped
 * send/recv, so any NCCL >= 2.7 runs it). */
ncclResult_t sp_exec_nccl_alltoall (const void *in, void *out, size_t bytes_per_peer, int n,
                                    ncclComm_t comm, cudaStream_t stream);

/* Composites on the GPU (exec/nccl/composite.c): enqueue every stage on
 * the task's stream with an event after each; FALSE with ctx->error_text. */
gboolean sp_exec_nccl_composite_alloc (SpExecCtx *ctx, SpExecTask *task);
SpExecStatus sp_exec_nccl_composite_start (SpExecCtx *ctx, SpExecTask *task);
void sp_exec_nccl_composite_free (SpExecTask *task);
