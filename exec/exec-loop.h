/* exec/exec-loop.h — the iterations of a run (exec/exec-loop.c), between
 * the driver's set-up and its trace writing. */
#pragma once
#include "exec-internal.h"

G_BEGIN_DECLS

typedef struct SpExecLoop SpExecLoop;
struct SpExecLoop {
  SpExecCtx *ctx;
  SpExecBackend *be;        /* the recording wrapper */
  SpExecRecorder *rec;
  /* Results. */
  gint64 epoch_ns;          /* rank 0: local start of the first timed iteration */
  char *partial_reason;     /* set when the run failed (g_free) */
  gboolean abort_job;       /* the failure could not be agreed on */
  /* Called on the watchdog thread when an op overran its deadline inside a
   * backend call that has not returned (a blocking MPI collective): the
   * main thread is stuck in it, so this must write what it can (the
   * failure is recorded and the spill flushed; abort_job and
   * partial_reason are set) and end the process.  It must not return. */
  void (*stuck) (SpExecLoop *loop, const GError *failure, gpointer data);
  gpointer stuck_data;
};

/* Warm-up and timed iterations in the options' mode.  FALSE with *error
 * (this rank's view, "rank R: …" for a failure agreed on by all) when the
 * run failed; then partial_reason is set, and abort_job when the ranks
 * could not agree (a peer gone or stuck). */
gboolean sp_exec_loop_run (SpExecLoop *loop, GError **error);

/* Collective: agree on every rank's local outcome (exec/exec.c). */
gboolean sp_exec_agree (const SpExecCtx *ctx, GError **local, gboolean prefix_rank, GError **error);

G_END_DECLS
