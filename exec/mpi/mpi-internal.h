/* exec/mpi/mpi-internal.h — shared by the MPI bootstrap and the MPI
 * backend (exec/mpi/ only: it includes mpi.h). */
#pragma once
#include <mpi.h>
#include "exec-internal.h"

/* The bootstrap's duplicate of MPI_COMM_WORLD (MPI_ERRORS_RETURN). */
MPI_Comm sp_exec_mpi_world (void);

/* Poll one request until done or the deadline (ns, MPI_Wtime clock). */
SpExecStatus sp_exec_mpi_wait (MPI_Request *req, gint64 deadline_ns);

/* The MPI backend's state. */
typedef struct {
  MPI_Comm comm[SP_FAMILY_N];    /* one per family, MPI_COMM_NULL when not in a group */
  MPI_Datatype f16, bf16;        /* 2-byte types for the user reductions */
  MPI_Op op_sum, op_prod, op_max, op_min; /* user ops for f16/bf16 */
} SpMpiState;

/* Per-task run state. */
typedef struct {
  MPI_Request req[2];
  int n_req;
  guint stage;                   /* composites: the stage being run */
  gboolean completed;            /* run to completion by start() (blocking call) */
  guint8 *buf, *buf2, *buf3, *buf4; /* composite scratch */
  float *sc, *sc2, *sc3, *sc4;
} SpMpiTask;

/* MPI datatype and op for reducing `dtype` with `redop` (AVG maps to SUM;
 * the caller divides).  FALSE when MPI cannot. */
gboolean sp_exec_mpi_reduction (const SpMpiState *st, SpDtype dtype, SpRedop redop,
                                MPI_Datatype *out_type, MPI_Op *out_op);
/* Divide n elements by k in place (AVG after a SUM). */
void sp_exec_mpi_divide (void *buf, guint64 n, SpDtype dtype, guint32 k);

/* TRUE for MPI_SUCCESS; otherwise a SP_ERROR_BACKEND error "<what> failed: <MPI's
 * error string>" and FALSE (exec/mpi/boot.c). */
gboolean sp_exec_mpi_check (int rc, const char *what, GError **error);

/* Composites (exec/mpi/composite.c): allocate scratch, start, advance. */
gboolean sp_exec_mpi_composite_setup (SpExecCtx *ctx, SpExecTask *task, GError **error);
SpExecStatus sp_exec_mpi_composite_test (SpExecCtx *ctx, SpExecTask *task, gboolean *out_done);
void sp_exec_mpi_composite_free (SpExecTask *task);
