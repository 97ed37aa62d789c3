/* exec/record.c — trace recording as a wrapper around a backend table
 * (STYLE §8: libfabric's hook provider): start() and test() call the
 * wrapped backend and, when a task finishes during a timed iteration, turn
 * it into rows (its sub-op stages too).  Rows keep the rank's raw clock
 * until rank 0 converts them; each rank appends them to its own spill file
 * at every flush so that a crash keeps what was measured. */
#include "config.h"
#include "exec-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

struct SpExecRecorder {
  char *spill_path;
  FILE *spill;
  guint32 rank;
  gint32 iter;
  GArray *rows;        /* SpTraceRow */
  guint flushed;       /* rows already in the spill file */
  gint64 (*now_ns) (void);
  gboolean epoch_set, epoch_spilled;
  gint64 epoch_ns;     /* local clock at set_iter (0) */
  gboolean spill_failed; /* a write to the spill file failed (said once) */
};

/* Flush the spill file; the first time a write to it has failed (a full
 * disk, a quota), say so once: the run goes on and its trace is written
 * from memory, but a crash from then on keeps only what the file held. */
static void
spill_flush (SpExecRecorder *rec)
{
  int e = fflush (rec->spill) != 0 ? errno : 0;
  if ((e != 0 || ferror (rec->spill)) && !rec->spill_failed)
    {
      rec->spill_failed = TRUE;
      fprintf (stderr, "shardplan run: rank %u: warning: cannot write the spill file %s%s%s: "
               "the run goes on (its trace is written from memory), but if it dies now, the "
               "spill file holds only the rows before this point\n", rec->rank, rec->spill_path,
               e ? ": " : "", e ? g_strerror (e) : "");
    }
}

SpExecRecorder *
sp_exec_recorder_new (const char *spill_path, const SpExecSpillRun *run, gint64 (*now_ns) (void),
                      GError **error)
{
  /* A new file only: one already there is an earlier run's that did not
   * finish (its rows are recoverable, and this run would truncate them),
   * and a symbolic link there is not followed. */
  int fd = g_open (spill_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  FILE *f = fd >= 0 ? fdopen (fd, "wb") : NULL;
  if (!f)
    {
      int e = errno;
      if (fd >= 0)
        close (fd);
      if (e == EEXIST)
        g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                     "the spill file %s exists: an earlier run with this -o did not finish; "
                     "'shardplan trace recover' makes a trace of its spill files, then remove "
                     "them (or give another -o)", spill_path);
      else
        g_set_error (error, SP_ERROR, SP_ERROR_IO, "cannot create the spill file %s: %s",
                     spill_path, g_strerror (e));
      return NULL;
    }
  SpExecRecorder *rec = g_new0 (SpExecRecorder, 1);
  rec->spill_path = g_strdup (spill_path);
  rec->spill = f;
  rec->rank = run->rank;
  rec->iter = -1;
  rec->now_ns = now_ns;
  rec->rows = g_array_new (FALSE, FALSE, sizeof (SpTraceRow));
  if (!sp_exec_spill_write_run (f, run, error))
    {
      g_prefix_error (error, "%s: ", spill_path);
      sp_exec_recorder_remove_spill (rec);
      sp_exec_recorder_free (rec);
      return NULL;
    }
  return rec;
}

void
sp_exec_recorder_free (SpExecRecorder *rec)
{
  if (!rec)
    return;
  if (rec->spill)
    fclose (rec->spill);
  g_array_unref (rec->rows);
  g_free (rec->spill_path);
  g_free (rec);
}

void
sp_exec_recorder_set_iter (SpExecRecorder *rec, gint32 iter)
{
  rec->iter = iter;
  if (iter == 0 && !rec->epoch_set)
    {
      rec->epoch_ns = rec->now_ns ();
      rec->epoch_set = TRUE;
    }
}

gboolean
sp_exec_recorder_epoch (const SpExecRecorder *rec, gint64 *out_epoch_ns)
{
  if (rec->epoch_set)
    *out_epoch_ns = rec->epoch_ns;
  return rec->epoch_set;
}

void
sp_exec_recorder_info (SpExecRecorder *rec, const SpExecSpillRank *info)
{
  if (!rec->spill)
    return;
  sp_exec_spill_write_info (rec->spill, info, FALSE, 0);
  spill_flush (rec);
}

static void
fill_row (SpTraceRow *r, const SpExecTask *t, const SpExecTimes *tm, gint32 iter, guint32 rank,
          gint64 parent, guint32 flags, SpTraceStatus status)
{
  const SpOp *op = t->op;
  sp_trace_row_init (r);
  r->op_id = op->id;
  r->parent_op_id = parent;
  r->iter = iter;
  r->rank = rank;
  r->group_id = t->group_id;
  r->group_rank = t->group_rank;
  r->group_size = t->group_size;
  r->seq_in_group = t->seq_in_group;
  r->coll = op->kind;
  r->dtype = op->dtype;
  r->redop = op->redop;
  r->flags = flags;
  r->status = status;
  r->count = op->count;
  r->bytes = op->bytes;
  r->t_enqueue_ns = tm->t_enqueue;
  r->t_start_ns = tm->t_start;
  r->t_end_ns = tm->t_end;
  r->dur_ns = tm->t_end > tm->t_start ? tm->t_end - tm->t_start : 0;
  sp_trace_row_set_bandwidths (r);
  r->nccl_est_ns = t->has_nccl_est ? t->nccl_est_ns : -1;
}

void
sp_exec_recorder_task (SpExecRecorder *rec, SpExecTask *t)
{
  t->row_first = -1;
  t->row_count = 0;
  if (rec->iter < 0)
    return;
  t->row_first = rec->rows->len;
  SpTraceRow r;
  guint32 flags = t->flags | (sp_coll_is_composite (t->op->kind) ? SP_TRACE_FLAG_COMPOSITE : 0);
  fill_row (&r, t, &t->times, rec->iter, rec->rank, t->op->parent, flags, t->status);
  g_array_append_val (rec->rows, r);
  if (t->virtual_composite)
    return; /* its sub-ops are tasks of their own */
  for (guint32 i = 0; i < t->n_sub; i++)
    {
      SpExecTask *s = t->sub[i];
      fill_row (&r, s, &t->sub_times[i], rec->iter, rec->rank, t->op->id,
                t->flags & ~SP_TRACE_FLAG_COMPOSITE, t->status);
      g_array_append_val (rec->rows, r);
    }
  t->row_count = rec->rows->len - (guint) t->row_first;
}

void
sp_exec_recorder_update (SpExecRecorder *rec, const SpExecTask *t)
{
  if (t->row_first < 0)
    return;
  g_return_if_fail ((guint) t->row_first >= rec->flushed);
  for (guint i = 0; i < t->row_count; i++)
    {
      SpTraceRow *r = &g_array_index (rec->rows, SpTraceRow, (guint) t->row_first + i);
      r->status = t->status;
      r->flags |= t->flags & SP_TRACE_FLAG_CHECKED;
    }
}

void
sp_exec_recorder_mark (SpExecRecorder *rec, const SpExecTask *t, SpTraceStatus status, guint32 flags)
{
  const gboolean stages = !t->virtual_composite;
  sp_exec_rows_mark (rec->rows, t->op->id, stages, status, flags);
  if (!rec->spill)
    return;
  /* After the rows it applies to, and on disk at once: a rank killed
   * later in the validation pass keeps the verdicts given so far. */
  sp_exec_recorder_flush (rec);
  sp_exec_spill_write_mark (rec->spill, t->op->id, stages, status, flags);
  spill_flush (rec);
}

void
sp_exec_recorder_flush (SpExecRecorder *rec)
{
  if (!rec->spill)
    return;
  if (rec->epoch_set && !rec->epoch_spilled)
    {
      sp_exec_spill_write_info (rec->spill, NULL, TRUE, rec->epoch_ns);
      rec->epoch_spilled = TRUE;
    }
  if (rec->rows->len > rec->flushed)
    {
      gsize n = rec->rows->len - rec->flushed;
      sp_exec_spill_write_rows (rec->spill, &g_array_index (rec->rows, SpTraceRow, rec->flushed), n);
      rec->flushed = rec->rows->len;
    }
  spill_flush (rec);
}

const GArray *
sp_exec_recorder_rows (const SpExecRecorder *rec)
{
  return rec->rows;
}

gboolean
sp_exec_recorder_has_spill (const SpExecRecorder *rec)
{
  return rec->spill_path != NULL && g_file_test (rec->spill_path, G_FILE_TEST_EXISTS);
}

void
sp_exec_recorder_remove_spill (SpExecRecorder *rec)
{
  if (rec->spill)
    fclose (rec->spill);
  rec->spill = NULL;
  g_unlink (rec->spill_path);
}

/* ---------------------------------------------------------------- wrapper */

typedef struct {
  SpExecBackend table;      /* first: the wrapper is used as an SpExecBackend */
  const SpExecBackend *inner;
  SpExecRecorder *rec;
} RecordWrap;

/* The table's functions take no pointer to the table itself, so the one
 * wrapper of a process is kept here (one executor per process). */
static RecordWrap *the_wrap;

static gboolean
w_probe (SpExecCtx *ctx, GError **error)
{
  return the_wrap->inner->probe (ctx, error);
}

static gboolean
w_setup (SpExecCtx *ctx, GError **error)
{
  return the_wrap->inner->setup (ctx, error);
}

static SpExecStatus
w_stage_in (SpExecCtx *ctx, SpExecTask *t)
{
  return the_wrap->inner->stage_in (ctx, t);
}

static SpExecStatus
w_start (SpExecCtx *ctx, SpExecTask *t)
{
  gint64 t0 = ctx->boot->now_ns ();
  SpExecStatus s = the_wrap->inner->start (ctx, t);
  /* t_enqueue: when the op was handed to the backend (the backend may
   * refine t_start, e.g. from a device event). */
  t->times.t_enqueue = t0;
  if (t->times.t_start == 0)
    t->times.t_start = t0;
  return s;
}

static SpExecStatus
w_test (SpExecCtx *ctx, SpExecTask *t, gboolean *out_done)
{
  SpExecStatus s = the_wrap->inner->test (ctx, t, out_done);
  if (s == SP_EXEC_OK && *out_done)
    {
      if (t->times.t_end == 0)
        t->times.t_end = ctx->boot->now_ns ();
      t->status = SP_TRACE_STATUS_OK;
      sp_exec_recorder_task (the_wrap->rec, t);
    }
  return s;
}

static SpExecStatus
w_stage_out (SpExecCtx *ctx, SpExecTask *t)
{
  return the_wrap->inner->stage_out (ctx, t);
}

static void
w_abort (SpExecCtx *ctx)
{
  the_wrap->inner->abort (ctx);
}

static void
w_teardown (SpExecCtx *ctx)
{
  the_wrap->inner->teardown (ctx);
}

static const char *
w_last_error (SpExecCtx *ctx)
{
  return the_wrap->inner->last_error (ctx);
}

static void
w_software (SpExecCtx *ctx, GPtrArray *kv)
{
  the_wrap->inner->software (ctx, kv);
}

SpExecBackend *
sp_exec_record_wrap (const SpExecBackend *inner, SpExecRecorder *rec)
{
  g_return_val_if_fail (the_wrap == NULL, NULL);
  RecordWrap *w = g_new0 (RecordWrap, 1);
  w->inner = inner;
  w->rec = rec;
  w->table = (SpExecBackend) {
    .name = inner->name, .probe = w_probe, .setup = w_setup, .stage_in = w_stage_in,
    .start = w_start, .test = w_test, .stage_out = w_stage_out, .abort = w_abort,
    .teardown = w_teardown, .last_error = w_last_error, .software = w_software, .state = w,
  };
  the_wrap = w;
  return &w->table;
}

void
sp_exec_record_unwrap (SpExecBackend *wrapped)
{
  if (!wrapped)
    return;
  g_assert ((RecordWrap *) wrapped == the_wrap);
  g_free (the_wrap);
  the_wrap = NULL;
}

/* ---------------------------------------------------------------- trace */

gboolean
sp_exec_write_trace (const SpExecTraceInfo *info, SpTraceRow *rows, gsize n, GError **error)
{
  const SpExecCtx *ctx = info->ctx;
  g_autoptr (GPtrArray) build = g_ptr_array_new ();
  g_ptr_array_add (build, (gpointer) "compiler");
  g_ptr_array_add (build, (gpointer) SP_CC_VERSION);
  g_ptr_array_add (build, (gpointer) "shardplan_build");
  g_ptr_array_add (build, (gpointer) sp_build_config ());
  g_autoptr (GPtrArray) env = sp_exec_env_capture ();
  SpExecTraceDesc d = {
    .header = { .source = SP_TRACE_SOURCE_MEASURED, .producer = "shardplan run",
                .producer_version = sp_version (), .clock = "MPI_Wtime",
                .timing_mode = sp_exec_mode_name (ctx->opts->mode),
                .check_policy = sp_exec_check_name (ctx->opts->check),
                .warmup_iters = ctx->opts->warmup, .iters = ctx->opts->iters,
                .world_size = ctx->world, .run_id = info->run_id },
    .backend_name = info->backend_name, .software = build, .software_more = info->software,
    .env = env, .nodes = info->nodes, .n_nodes = info->n_nodes, .ranks = info->ranks,
    .n_ranks = info->n_ranks, .plan = ctx->plan, .plan_text = info->plan_text, .topo = info->topo,
    .topo_text = info->topo_text, .groups = ctx->groups, .epoch_ns = info->epoch_ns,
    .offsets_ns = info->offsets_ns, .partial_reason = info->partial_reason,
  };
  return sp_exec_trace_write (ctx->opts->output, &d, rows, n, error);
}
