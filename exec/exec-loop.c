/* exec/exec-loop.c — the warm-up and timed iterations in the two timing
 * modes, the per-op deadline, the result checks and the failure protocol.
 *
 * Failures: a rank that sees one (timeout, backend error, wrong result)
 * raises a flag in the next world-wide sync (isolated: after every op;
 * replay: after every iteration).  If the sync completes, every rank knows
 * and the run ends in order (rows gathered, partial trace, exit 1 on every
 * rank).  If the sync itself misses its deadline a peer is gone or stuck:
 * the loop returns with abort_job and the driver takes the no-collective
 * path (exec.c).
 *
 * Deadline inside a backend call: the MPI backend runs an isolated op as
 * the blocking collective (the call a bare loop makes), which cannot be
 * interrupted.  A watchdog thread, armed around every start(), checks the
 * op's deadline every min(100 ms, timeout / 4); when it passes while the
 * call has not returned, the watchdog records the op as timed out, flushes
 * the spill file and hands over to loop->stuck, which writes the partial
 * trace (rank 0) and ends the process: the main thread never leaves the
 * call.  The watchdog makes no MPI call (MPI is initialised FUNNELED).
 *
 * Checks (SpExecCheck): "every" refills each op's input before it and
 * checks its output after it, in every iteration.  "after" (the default)
 * and "none" check nothing inside the iterations, and when every op has
 * its own buffers fill each input once; "after" then runs one more pass
 * over the plan, untimed and unrecorded (iteration number iters for the
 * data), on freshly filled inputs, checking every output: a validated
 * op's recorded rows get SP_TRACE_FLAG_CHECKED, a wrong one's get status
 * wrong and the run fails through the same syncs as in an iteration. */
#include "config.h"
#include "exec-loop.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The sync after a local failure waits at most this long (s) for the others. */
#define SP_EXEC_FAILURE_SYNC_S 10.0

typedef struct {
  gint64 stall_rank, stall_op, stall_iter, corrupt_rank, corrupt_op;
} Hooks;

static gint64
env_int (const char *name)
{
  const char *v = g_getenv (name);
  return v && *v ? g_ascii_strtoll (v, NULL, 10) : -1;
}

/* Watchdog word: generation << 2 | state.  Arming bumps the generation so
 * that the thread never fires an op with a deadline read for another. */
enum { WD_IDLE = 0, WD_ARMED = 1, WD_FIRED = 2, WD_QUIT = 3 };

typedef struct {
  GThread *thread;
  atomic_llong word;
  atomic_llong deadline_us;     /* g_get_monotonic_time clock */
  SpExecTask *task;             /* written before arming */
  gint64 period_us;
  GMutex lock;                  /* with cond: the thread's sleep, ended early at quit */
  GCond cond;
} Watchdog;

typedef struct {
  SpExecLoop *L;
  SpExecCtx *ctx;
  Hooks hooks;
  gint32 iter;                  /* < 0 during warm-up; iters in the validation pass */
  gboolean checking;            /* outputs are checked in this iteration or pass */
  gboolean validating;          /* the validation pass of check policy "after" */
  guint32 seq[SP_FAMILY_N];
  GError *failure;              /* this rank's first failure */
  Watchdog wd;
  /* Unchecked iterations with a buffer pair per op: inputs are filled in
   * the first iteration only (nothing reads them but the op), so that no
   * CPU work runs between ops, as in a bare loop.  filled[i]: task i's
   * input is (cleared for the validation pass). */
  gboolean fill_once;
  guint8 *filled;
  guint64 pass_base;            /* op steps of the passes before this one (progress) */
} Run;

/* SpExecOptions.progress on rank 0: `i` ops of the current pass done. */
static void
report (const Run *R, guint32 i)
{
  const SpExecOptions *o = R->ctx->opts;
  if (o->progress == NULL || R->ctx->rank != 0)
    return;
  guint64 passes = (guint64) o->warmup + o->iters + (o->check == SP_EXEC_CHECK_AFTER ? 1 : 0);
  o->progress (R->pass_base + i, passes * R->ctx->n_tasks, o->progress_data);
}

static gint64
now (const Run *R)
{
  return R->ctx->boot->now_ns ();
}

static void
fail_task (Run *R, SpExecTask *t, SpTraceStatus status, const char *fmt, ...) G_GNUC_PRINTF (4, 5);

static void
fail_task (Run *R, SpExecTask *t, SpTraceStatus status, const char *fmt, ...)
{
  t->status = status;
  t->in_flight = FALSE;
  if (t->row_first < 0)
    sp_exec_recorder_task (R->L->rec, t);
  else
    sp_exec_recorder_update (R->L->rec, t);
  if (R->failure)
    return;
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *what = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_autofree char *when = R->validating ? g_strdup ("the validation pass")
                          : g_strdup_printf ("%s iteration %d", R->iter < 0 ? "warm-up" : "timed",
                                             R->iter < 0 ? R->iter + (int) R->ctx->opts->warmup : R->iter);
  g_set_error (&R->failure, SP_ERROR, status == SP_TRACE_STATUS_TIMEOUT ? SP_ERROR_TIMEOUT
                                      : SP_ERROR_BACKEND,
               "op %u (%s) in %s: %s", t->op->id, t->op->name, when, what);
}

/* ---------------------------------------------------------------- watchdog */

static void
wd_arm (Watchdog *w, SpExecTask *t, double timeout_s)
{
  if (!w->thread)
    return;
  long long v = atomic_load (&w->word);
  w->task = t;
  atomic_store (&w->deadline_us, g_get_monotonic_time () + (gint64) (timeout_s * 1e6));
  atomic_store (&w->word, ((v >> 2) + 1) << 2 | WD_ARMED);
}

static void
wd_disarm (Watchdog *w)
{
  if (!w->thread)
    return;
  long long v = atomic_load (&w->word);
  if ((v & 3) == WD_ARMED && atomic_compare_exchange_strong (&w->word, &v, (v & ~3LL) | WD_IDLE))
    return;
  /* Fired while the call was returning: the watchdog owns the run now and
   * ends the process. */
  for (;;)
    pause ();
}

/* The deadline passed inside start(): the main thread is stuck in the call. */
static void
wd_fire (Run *R)
{
  SpExecLoop *L = R->L;
  SpExecTask *t = R->wd.task;
  fail_task (R, t, SP_TRACE_STATUS_TIMEOUT, "no completion within the %g s deadline (--timeout); "
             "a peer may be gone or stuck", R->ctx->opts->timeout_s);
  sp_exec_recorder_flush (L->rec);
  L->abort_job = TRUE;
  if (L->ctx->world > 1)
    g_prefix_error (&R->failure, "rank %u: ", L->ctx->rank);
  L->partial_reason = g_strdup (R->failure->message);
  L->stuck (L, R->failure, L->stuck_data);
  g_error ("the executor's stuck handler returned"); /* aborts */
}

static gpointer
wd_main (gpointer data)
{
  Run *R = data;
  Watchdog *w = &R->wd;
  g_mutex_lock (&w->lock);
  for (;;)
    {
      long long v = atomic_load (&w->word);
      if ((v & 3) == WD_QUIT)
        break;
      if ((v & 3) == WD_ARMED)
        {
          gint64 deadline = atomic_load (&w->deadline_us);
          if (atomic_load (&w->word) == v && g_get_monotonic_time () > deadline &&
              atomic_compare_exchange_strong (&w->word, &v, (v & ~3LL) | WD_FIRED))
            {
              g_mutex_unlock (&w->lock);
              wd_fire (R); /* does not return */
            }
        }
      g_cond_wait_until (&w->cond, &w->lock, g_get_monotonic_time () + w->period_us);
    }
  g_mutex_unlock (&w->lock);
  return NULL;
}

/* Start the watchdog (only when a stuck handler is set). */
static void
wd_start (Run *R)
{
  Watchdog *w = &R->wd;
  atomic_init (&w->word, WD_IDLE);
  atomic_init (&w->deadline_us, G_MAXINT64);
  if (!R->L->stuck)
    return;
  w->period_us = CLAMP ((gint64) (R->ctx->opts->timeout_s * 1e6 / 4), 1000, 100000);
  g_mutex_init (&w->lock);
  g_cond_init (&w->cond);
  w->thread = g_thread_new ("sp-exec-watchdog", wd_main, R);
}

static void
wd_stop (Run *R)
{
  Watchdog *w = &R->wd;
  if (!w->thread)
    return;
  g_mutex_lock (&w->lock);
  atomic_store (&w->word, WD_QUIT);
  g_cond_signal (&w->cond);
  g_mutex_unlock (&w->lock);
  g_thread_join (w->thread);
  w->thread = NULL;
  g_cond_clear (&w->cond);
  g_mutex_clear (&w->lock);
}

static void
issue (Run *R, SpExecTask *t)
{
  const SpOp *op = t->op;
  if (t->family != SP_FAMILY_NONE)
    t->seq_in_group = R->seq[t->family]++;
  for (guint32 i = 0; !t->virtual_composite && i < t->n_sub; i++)
    if (t->sub[i]->family != SP_FAMILY_NONE)
      t->sub[i]->seq_in_group = R->seq[t->sub[i]->family]++;
  if (R->iter == R->hooks.stall_iter && R->hooks.stall_rank == (gint64) R->ctx->rank &&
      R->hooks.stall_op == (gint64) op->id)
    for (;;)
      pause (); /* test hook: a stuck rank, ended by the job's teardown */
  memset (&t->times, 0, sizeof t->times);
  if (t->sub_times)
    memset (t->sub_times, 0, t->n_sub * sizeof *t->sub_times);
  t->row_first = -1;
  t->done = FALSE;
  t->status = SP_TRACE_STATUS_NOT_RUN;
  t->flags &= ~SP_TRACE_FLAG_CHECKED;
  t->deadline_ns = now (R) + (gint64) (R->ctx->opts->timeout_s * 1e9);
  t->in_flight = TRUE;
  wd_arm (&R->wd, t, R->ctx->opts->timeout_s);
  SpExecStatus s = R->L->be->start (R->ctx, t);
  wd_disarm (&R->wd);
  if (s != SP_EXEC_OK)
    fail_task (R, t, SP_TRACE_STATUS_ERROR, "%s", R->L->be->last_error (R->ctx));
}

/* Poll a task once.  FALSE when it failed. */
static gboolean
progress (Run *R, SpExecTask *t)
{
  if (!t->in_flight)
    return t->status != SP_TRACE_STATUS_ERROR && t->status != SP_TRACE_STATUS_TIMEOUT;
  gboolean done = FALSE;
  if (R->L->be->test (R->ctx, t, &done) != SP_EXEC_OK)
    {
      fail_task (R, t, SP_TRACE_STATUS_ERROR, "%s", R->L->be->last_error (R->ctx));
      return FALSE;
    }
  if (done)
    {
      t->in_flight = FALSE;
      t->done = TRUE;
      return TRUE;
    }
  if (now (R) > t->deadline_ns)
    {
      fail_task (R, t, SP_TRACE_STATUS_TIMEOUT, "no completion within the %g s deadline "
                 "(--timeout); a peer may be gone or stuck", R->ctx->opts->timeout_s);
      return FALSE;
    }
  return TRUE;
}

/* After completion: fetch and check the result (when checking), update
 * the rows (in the validation pass: mark the op's timed rows). */
static void
finish (Run *R, SpExecTask *t)
{
  if (R->checking && t->op->kind != SP_COLL_COMPUTE && t->op->kind != SP_COLL_BARRIER)
    {
      if (R->L->be->stage_out (R->ctx, t) != SP_EXEC_OK)
        {
          fail_task (R, t, SP_TRACE_STATUS_ERROR, "%s", R->L->be->last_error (R->ctx));
          return;
        }
      if (R->hooks.corrupt_rank == (gint64) R->ctx->rank && R->hooks.corrupt_op == (gint64) t->op->id &&
          t->out_bytes > 0)
        t->out[t->out_bytes / 2] ^= 0x5A; /* test hook: a wrong result */
      g_autofree char *what = NULL;
      t->flags |= SP_TRACE_FLAG_CHECKED;
      if (sp_exec_data_check (R->ctx, t, R->iter, &what) != SP_TRACE_STATUS_OK)
        {
          if (R->validating)
            sp_exec_recorder_mark (R->L->rec, t, SP_TRACE_STATUS_WRONG, SP_TRACE_FLAG_CHECKED);
          fail_task (R, t, SP_TRACE_STATUS_WRONG, "wrong result: %s", what);
          return;
        }
      if (R->validating)
        sp_exec_recorder_mark (R->L->rec, t, SP_TRACE_STATUS_OK, SP_TRACE_FLAG_CHECKED);
    }
  t->status = SP_TRACE_STATUS_OK;
  sp_exec_recorder_update (R->L->rec, t);
}

/* A hier_all_gather's row: the span of its sub-ops on this rank. */
static void
finish_virtual (Run *R, SpExecTask *t)
{
  if (!t->runs)
    return;
  memset (&t->times, 0, sizeof t->times);
  t->status = SP_TRACE_STATUS_OK;
  for (guint32 i = 0; i < t->n_sub; i++)
    {
      const SpExecTask *s = t->sub[i];
      if (!s->runs)
        continue;
      if (!t->times.t_start || (s->times.t_start && s->times.t_start < t->times.t_start))
        t->times.t_start = s->times.t_start, t->times.t_enqueue = s->times.t_enqueue;
      t->times.t_end = MAX (t->times.t_end, s->times.t_end);
      if (s->status != SP_TRACE_STATUS_OK)
        t->status = s->status;
    }
  t->seq_in_group = 0;
  sp_exec_recorder_task (R->L->rec, t);
}

/* The world-wide sync that carries the failure flag.  FALSE when the run
 * must stop (*coordinated says whether every rank knows). */
static gboolean
sync_all (Run *R, gboolean *coordinated)
{
  guint32 flags = R->failure ? 1 : 0;
  double wait_s = R->failure ? MIN (R->ctx->opts->timeout_s, SP_EXEC_FAILURE_SYNC_S)
                             : R->ctx->opts->timeout_s;
  SpExecStatus s = R->ctx->boot->sync (&flags, now (R) + (gint64) (wait_s * 1e9));
  *coordinated = s == SP_EXEC_OK;
  if (s != SP_EXEC_OK && !R->failure)
    g_set_error (&R->failure, SP_ERROR, SP_ERROR_TIMEOUT, "the world-wide sync %s within %g s: a "
                 "peer is gone or stuck", s == SP_EXEC_TIMEOUT ? "did not complete" : "failed", wait_s);
  return s == SP_EXEC_OK && flags == 0;
}

/* Fill the task's input for this iteration (once, with fill_once) and
 * stage it in.  The data depend on the iteration only where it is checked. */
static void
fill (Run *R, SpExecTask *t)
{
  SpExecCtx *ctx = R->ctx;
  guint32 i = (guint32) (t - ctx->tasks);
  if (R->fill_once && R->filled[i])
    return;
  sp_exec_data_fill (ctx, t, R->iter);
  R->filled[i] = 1;
  if (R->L->be->stage_in (ctx, t) != SP_EXEC_OK)
    fail_task (R, t, SP_TRACE_STATUS_ERROR, "%s", R->L->be->last_error (ctx));
}

/* One op at a time.  A sync (barrier + failure flag) sits right before
 * each op, after its inputs are filled, so that every rank enters the op
 * together as in nccl-tests, and another right after it; the check of an
 * op is reported by the next sync, the last one's by the sync that ends
 * the iteration. */
static gboolean
iter_isolated (Run *R, gboolean *coordinated)
{
  SpExecCtx *ctx = R->ctx;
  for (guint32 i = 0; i < ctx->n_tasks; i++)
    {
      SpExecTask *t = &ctx->tasks[i];
      if (t->handled_by_parent)
        continue;
      gboolean runs = t->runs && !t->virtual_composite;
      if (runs)
        fill (R, t);
      if (!sync_all (R, coordinated))
        return FALSE;
      if (runs)
        {
          issue (R, t);
          while (t->in_flight && progress (R, t))
            ;
        }
      /* Everyone has finished the op before anyone checks it: a check
       * (CPU work) must not steal a core from a peer still in the op. */
      if (!sync_all (R, coordinated))
        return FALSE;
      if (runs && t->done)
        finish (R, t);
      report (R, i + 1);
    }
  for (guint32 i = 0; i < ctx->n_tasks; i++)
    if (ctx->tasks[i].virtual_composite)
      finish_virtual (R, &ctx->tasks[i]);
  return sync_all (R, coordinated);
}

static gboolean
task_done (const SpExecCtx *ctx, const SpExecTask *d)
{
  if (!d->runs)
    return TRUE;
  if (d->handled_by_parent)
    return ctx->tasks[d->op->parent].done;
  if (d->virtual_composite)
    {
      for (guint32 i = 0; i < d->n_sub; i++)
        if (!task_done (ctx, d->sub[i]))
          return FALSE;
      return TRUE;
    }
  return d->done;
}

/* Poll every task in flight once.  FALSE on a failure. */
static gboolean
poll_all (Run *R, GPtrArray *flying)
{
  for (guint i = 0; i < flying->len;)
    {
      SpExecTask *t = g_ptr_array_index (flying, i);
      if (!progress (R, t))
        return FALSE;
      if (!t->in_flight)
        g_ptr_array_remove_index_fast (flying, i);
      else
        i++;
    }
  return TRUE;
}

static gboolean
iter_replay (Run *R, gboolean *coordinated)
{
  SpExecCtx *ctx = R->ctx;
  g_autoptr (GPtrArray) flying = g_ptr_array_new ();
  g_autoptr (GHashTable) last_on_stream = g_hash_table_new (g_direct_hash, g_direct_equal);
  for (guint32 i = 0; i < ctx->n_tasks && !R->failure; i++)
    {
      SpExecTask *t = &ctx->tasks[i];
      t->done = FALSE;
      if (t->runs && !t->handled_by_parent && !t->virtual_composite)
        fill (R, t);
    }
  for (guint32 i = 0; i < ctx->n_tasks && !R->failure; i++)
    {
      SpExecTask *t = &ctx->tasks[i];
      if (!t->runs || t->handled_by_parent || t->virtual_composite)
        continue;
      const SpExecTask *pred = g_hash_table_lookup (last_on_stream, GUINT_TO_POINTER (t->op->stream + 1));
      for (;;)
        {
          gboolean ready = !pred || task_done (ctx, pred);
          for (guint32 d = 0; ready && d < t->op->n_deps; d++)
            ready = task_done (ctx, &ctx->tasks[t->op->deps[d]]);
          if (ready || !poll_all (R, flying))
            break;
        }
      if (R->failure)
        break;
      issue (R, t);
      if (t->in_flight)
        g_ptr_array_add (flying, t);
      g_hash_table_insert (last_on_stream, GUINT_TO_POINTER (t->op->stream + 1), t);
    }
  while (flying->len && !R->failure && poll_all (R, flying))
    ;
  for (guint32 i = 0; i < ctx->n_tasks && !R->failure; i++)
    {
      SpExecTask *t = &ctx->tasks[i];
      if (t->runs && t->done && !t->handled_by_parent && !t->virtual_composite)
        finish (R, t);
    }
  for (guint32 i = 0; i < ctx->n_tasks && !R->failure; i++)
    if (ctx->tasks[i].virtual_composite)
      finish_virtual (R, &ctx->tasks[i]);
  return sync_all (R, coordinated);
}

/* Check policy "after": one more pass over the plan, untimed and not
 * recorded, on freshly filled inputs, every output checked. */
static gboolean
validate (Run *R, gboolean *coordinated)
{
  SpExecLoop *L = R->L;
  R->iter = (gint32) L->ctx->opts->iters;
  R->checking = TRUE;
  R->validating = TRUE;
  memset (R->seq, 0, sizeof R->seq);
  memset (R->filled, 0, MAX (L->ctx->n_tasks, 1));
  sp_exec_recorder_set_iter (L->rec, -1);
  gboolean ok = L->ctx->opts->mode == SP_EXEC_MODE_ISOLATED ? iter_isolated (R, coordinated)
                                                           : iter_replay (R, coordinated);
  sp_exec_recorder_flush (L->rec);
  return ok;
}

gboolean
sp_exec_loop_run (SpExecLoop *L, GError **error)
{
  Run R = { .L = L, .ctx = L->ctx };
  R.hooks.stall_rank = env_int ("SP_TEST_STALL_RANK");
  R.hooks.stall_op = env_int ("SP_TEST_STALL_OP");
  R.hooks.stall_iter = MAX (env_int ("SP_TEST_STALL_ITER"), 0);
  R.hooks.corrupt_rank = env_int ("SP_TEST_CORRUPT_RANK");
  R.hooks.corrupt_op = env_int ("SP_TEST_CORRUPT_OP");
  const SpExecOptions *o = L->ctx->opts;
  gboolean coordinated = TRUE, ok = TRUE;
  R.filled = g_new0 (guint8, MAX (L->ctx->n_tasks, 1));
  R.checking = o->check == SP_EXEC_CHECK_EVERY;
  R.fill_once = !R.checking;
  for (guint32 i = 0; i < L->ctx->n_tasks; i++)
    {
      const SpExecTask *t = &L->ctx->tasks[i];
      if (t->runs && !t->handled_by_parent && !t->virtual_composite && !t->own_buffers)
        R.fill_once = FALSE; /* shared buffers: every op overwrites the pair */
    }
  wd_start (&R);
  /* Start together. */
  ok = sync_all (&R, &coordinated);
  for (guint32 it = 0; ok && it < o->warmup + o->iters; it++)
    {
      R.iter = (gint32) it - (gint32) o->warmup;
      memset (R.seq, 0, sizeof R.seq);
      sp_exec_recorder_set_iter (L->rec, R.iter);
      if (R.iter == 0)
        L->epoch_ns = now (&R);
      R.pass_base = (guint64) it * L->ctx->n_tasks;
      ok = o->mode == SP_EXEC_MODE_ISOLATED ? iter_isolated (&R, &coordinated)
                                            : iter_replay (&R, &coordinated);
      sp_exec_recorder_flush (L->rec);
      if (ok)
        report (&R, L->ctx->n_tasks);
    }
  R.pass_base = ((guint64) o->warmup + o->iters) * L->ctx->n_tasks;
  if (ok && o->check == SP_EXEC_CHECK_AFTER)
    ok = validate (&R, &coordinated);
  if (ok && o->check == SP_EXEC_CHECK_AFTER)
    report (&R, L->ctx->n_tasks);
  wd_stop (&R);
  g_clear_pointer (&R.filled, g_free);
  sp_exec_recorder_set_iter (L->rec, -1);
  if (ok)
    return TRUE;
  if (coordinated)
    {
      /* Every rank is here: agree on the first failing rank's message. */
      GError *agreed = NULL;
      GError *mine = R.failure;
      R.failure = NULL;
      if (sp_exec_agree (L->ctx, &mine, TRUE, &agreed))
        g_set_error (&agreed, SP_ERROR, SP_ERROR_BACKEND, "a peer reported a failure");
      L->partial_reason = g_strdup (agreed->message);
      g_propagate_error (error, agreed);
      return FALSE;
    }
  L->abort_job = TRUE;
  if (L->ctx->world > 1)
    g_prefix_error (&R.failure, "rank %u: ", L->ctx->rank);
  L->partial_reason = g_strdup (R.failure->message);
  g_propagate_error (error, R.failure);
  return FALSE;
}
