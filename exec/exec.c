/* exec/exec.c — the executor's driver: read and check the inputs on every
 * rank (agreeing on errors so that every rank exits the same way), pick
 * and set up the backend, build one task per plan op, run the iterations
 * (exec/exec-loop.c) and write the trace from rank 0.  It reaches MPI only
 * through the bootstrap table and the GPU only through the backend table. */
#include "config.h"
#include "exec-internal.h"
#include "exec-loop.h"
#include "file-read.h" /* lib/: whole-file reads with a size limit */

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

static const char *const backend_names[] = { "auto", "mpi", "nccl" };
static const char *const mode_names[] = { "isolated", "replay" };
static const char *const check_names[] = { "after", "every", "none" };

/* Index of `name` in names[0..n), or -1. */
static gint
name_index (const char *const *names, guint n, const char *name)
{
  for (guint i = 0; name && i < n; i++)
    if (strcmp (name, names[i]) == 0)
      return (gint) i;
  return -1;
}

/* sp_exec_<what>_name / sp_exec_<what>_from_name over a names[] table. */
#define SP_EXEC_NAMES(what, Type, names)                                     \
  const char *sp_exec_##what##_name (Type value)                            \
  {                                                                          \
    return (guint) value < G_N_ELEMENTS (names) ? names[value] : NULL;       \
  }                                                                          \
  gboolean sp_exec_##what##_from_name (const char *name, Type *out_value)    \
  {                                                                          \
    gint i = name_index (names, G_N_ELEMENTS (names), name);                 \
    if (i < 0)                                                               \
      return FALSE;                                                          \
    *out_value = (Type) i;                                                   \
    return TRUE;                                                             \
  }

SP_EXEC_NAMES (backend, SpExecBackendKind, backend_names)
SP_EXEC_NAMES (mode, SpExecMode, mode_names)
SP_EXEC_NAMES (check, SpExecCheck, check_names)

gboolean
sp_exec_backend_compiled (SpExecBackendKind kind)
{
#ifdef SP_EXEC_HAVE_NCCL
  const gboolean nccl = TRUE;
#else
  const gboolean nccl = FALSE;
#endif
  return kind == SP_EXEC_BACKEND_AUTO || kind == SP_EXEC_BACKEND_MPI ||
         (kind == SP_EXEC_BACKEND_NCCL && nccl);
}

void
sp_exec_options_init (SpExecOptions *opts)
{
  memset (opts, 0, sizeof *opts);
  opts->backend = SP_EXEC_BACKEND_AUTO;
  opts->mode = SP_EXEC_MODE_ISOLATED;
  opts->warmup = 5;
  opts->iters = 20;
  opts->timeout_s = 300;
  opts->check = SP_EXEC_CHECK_AFTER;
}

void
sp_exec_set_error (SpExecCtx *ctx, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_free (ctx->error_text);
  ctx->error_text = g_strdup_vprintf (fmt, ap);
  va_end (ap);
}

/* ---------------------------------------------------------------- agreement */

#define SP_EXEC_MSG_MAX 512

/* Every rank contributes its local outcome; when any failed, every rank
 * gets the first failing rank's message in *error (prefixed "rank R: "
 * when `prefix_rank`) and FALSE.  *local is cleared on every path.
 * Collective: all ranks must call it. */
gboolean
sp_exec_agree (const SpExecCtx *ctx, GError **local, gboolean prefix_rank, GError **error)
{
  char msg[SP_EXEC_MSG_MAX] = "";
  gint code = 0;
  if (local && *local)
    {
      g_strlcpy (msg, (*local)->message, sizeof msg);
      code = (*local)->domain == SP_ERROR ? (*local)->code : SP_ERROR_BACKEND;
    }
  struct { gint32 code; char msg[SP_EXEC_MSG_MAX]; } mine = { code, "" }, *all;
  memcpy (mine.msg, msg, sizeof msg);
  all = g_new (typeof (mine), ctx->world);
  GError *e = NULL;
  if (!ctx->boot->allgather (&mine, sizeof mine, all, &e))
    {
      g_free (all);
      g_propagate_error (error, e);
      if (local)
        g_clear_error (local);
      return FALSE;
    }
  gboolean ok = TRUE;
  for (guint32 r = 0; r < ctx->world && ok; r++)
    if (all[r].code != 0)
      {
        ok = FALSE;
        all[r].msg[SP_EXEC_MSG_MAX - 1] = '\0';
        if (prefix_rank && ctx->world > 1)
          g_set_error (error, SP_ERROR, all[r].code, "rank %u: %s", r, all[r].msg);
        else
          g_set_error (error, SP_ERROR, all[r].code, "%s", all[r].msg);
      }
  g_free (all);
  if (local)
    g_clear_error (local);
  return ok;
}

/* Rank 0 reads a file of at most `max_bytes` (a larger one, a pipe or a
 * device running past it is refused as it is read, before the memory is
 * taken) and broadcasts it (or its error). */
static char *
bcast_file (const SpExecCtx *ctx, const char *path, const char *what, gsize max_bytes,
            gsize *out_len, GError **error)
{
  g_autofree char *data = NULL;
  gsize len = 0;
  GError *local = NULL;
  if (ctx->rank == 0 && !sp_file_read_bounded (path, max_bytes, what, &data, &len, &local)
      && local->code == SP_ERROR_IO)
    {
      g_clear_error (&local);
      g_set_error (&local, SP_ERROR, SP_ERROR_INVALID_ARGUMENT, "cannot read %s %s: %s", what, path,
                   g_file_test (path, G_FILE_TEST_EXISTS) ? "not a readable file" : "no such file");
    }
  if (!sp_exec_agree (ctx, &local, FALSE, error))
    return NULL;
  guint64 n = len;
  if (!ctx->boot->bcast (&n, sizeof n, 0, error))
    return NULL;
  if (ctx->rank != 0)
    data = g_malloc (n + 1);
  if (n && !ctx->boot->bcast (data, n, 0, error))
    return NULL;
  data[n] = '\0';
  *out_len = n;
  return g_steal_pointer (&data);
}

/* ---------------------------------------------------------------- tasks */

static gboolean
build_tasks (SpExecCtx *ctx, const SpTopo *topo, GError **error)
{
  const guint32 n = sp_plan_n_ops (ctx->plan);
  ctx->n_tasks = n;
  ctx->tasks = g_new0 (SpExecTask, n);
  gboolean has_compute = FALSE;
  for (guint32 i = 0; i < n; i++)
    {
      SpExecTask *t = &ctx->tasks[i];
      const SpOp *op = sp_plan_op (ctx->plan, i);
      t->op = op;
      t->family = op->family;
      t->group_id = SP_TRACE_NO_GROUP;
      t->group_size = 1;
      t->status = SP_TRACE_STATUS_NOT_RUN;
      t->row_first = -1;
      if (op->family == SP_FAMILY_NONE)
        t->runs = TRUE;
      else
        {
          ctx->families_used[op->family] = TRUE;
          /* a p2p op runs on its sender and receiver only */
          if (sp_plan_op_find (ctx->groups, op, ctx->rank, &t->group_index, &t->group_rank))
            {
              t->runs = TRUE;
              t->members = sp_groups_members (ctx->groups, op->family, t->group_index, &t->group_size);
              t->group_id = sp_trace_group_id (ctx->groups, op->family, t->group_index);
            }
        }
      if (op->parent >= 0)
        {
          SpExecTask *p = &ctx->tasks[op->parent];
          p->sub = g_renew (SpExecTask *, p->sub, p->n_sub + 1);
          p->sub[p->n_sub++] = t;
          t->handled_by_parent = p->op->kind == SP_COLL_REDUCE_SCATTER_COALESCED ||
                                 p->op->kind == SP_COLL_ALL_TO_ALL_QUANT_REDUCE;
          if (t->handled_by_parent)
            t->runs = p->runs;
        }
      if (op->kind == SP_COLL_HIER_ALL_GATHER)
        t->virtual_composite = TRUE;
      if (op->kind == SP_COLL_COMPUTE)
        {
          has_compute = TRUE;
          if (ctx->opts->mode == SP_EXEC_MODE_ISOLATED)
            t->runs = FALSE;
          else if (topo)
            {
              double rate = sp_topo_spec (topo)->gpu_tflops * 1e12; /* FLOP/s */
              double ns = (double) op->flops / rate * 1e9;
              if (!(ns <= (double) (G_GINT64_CONSTANT (1) << 62)))
                {
                  g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                               "op %u (%s): %" G_GUINT64_FORMAT " FLOPs at the topology's %g "
                               "TFLOP/s take %.3g s, more than replay can sleep (a peak near "
                               "zero?)", op->id, op->name, op->flops,
                               sp_topo_spec (topo)->gpu_tflops, ns / 1e9);
                  return FALSE;
                }
              t->sleep_ns = (gint64) llround (ns);
              t->flags |= SP_TRACE_FLAG_MODELLED;
            }
        }
    }
  if (has_compute && ctx->opts->mode == SP_EXEC_MODE_REPLAY && !topo)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT, "replay of a plan with compute ops "
                   "needs --topology (their duration is modelled from the GPU's TFLOP/s)");
      return FALSE;
    }
  for (guint32 i = 0; i < n; i++)
    {
      SpExecTask *t = &ctx->tasks[i];
      if (t->n_sub && !t->virtual_composite && !t->handled_by_parent)
        t->sub_times = g_new0 (SpExecTimes, t->n_sub);
      if (t->runs && !sp_exec_data_prepare (ctx, t, error))
        return FALSE;
    }
  return TRUE;
}

/* Isolated mode gives every op its own buffers while they total at most
 * this (bytes), so that unless every op is checked (--check every) an
 * op's input is filled once and no CPU work runs between timed ops
 * (exec-loop.c); above it one pair of the largest op's size is shared by
 * all ops. */
#define SP_EXEC_PRIVATE_BUFFERS_MAX ((gsize) 1 << 30)

/* One host buffer: the caller's allocator, else page-aligned heap memory.
 * NULL when there is none to be had. */
static guint8 *
buffer_new (const SpExecOptions *o, gsize bytes)
{
  if (o->buffer_alloc)
    return o->buffer_alloc (MAX (bytes, 1), o->buffer_data);
  void *p = NULL;
  return posix_memalign (&p, 4096, MAX (bytes, 1)) == 0 ? p : NULL;
}

static void
buffer_free (const SpExecOptions *o, guint8 *buffer)
{
  if (!buffer)
    return;
  if (o->buffer_free)
    o->buffer_free (buffer, o->buffer_data);
  else if (!o->buffer_alloc)
    free (buffer);
}

static gboolean
alloc_buffers (SpExecCtx *ctx, GError **error)
{
  gsize max_in = 0, max_out = 0, total = 0;
  for (guint32 i = 0; i < ctx->n_tasks; i++)
    {
      SpExecTask *t = &ctx->tasks[i];
      if (t->runs && !t->handled_by_parent)
        total += t->in_bytes + t->out_bytes;
    }
  const gboolean shared = ctx->opts->mode == SP_EXEC_MODE_ISOLATED && total > SP_EXEC_PRIVATE_BUFFERS_MAX;
  for (guint32 i = 0; i < ctx->n_tasks; i++)
    {
      SpExecTask *t = &ctx->tasks[i];
      if (!t->runs || t->handled_by_parent)
        continue;
      max_in = MAX (max_in, t->in_bytes);
      max_out = MAX (max_out, t->out_bytes);
      if (!shared)
        {
          t->in = buffer_new (ctx->opts, t->in_bytes);
          t->out = buffer_new (ctx->opts, t->out_bytes);
          t->own_buffers = TRUE;
          if (!t->in || !t->out)
            {
              g_set_error (error, SP_ERROR, SP_ERROR_BACKEND, "op %u (%s): cannot allocate %"
                           G_GSIZE_FORMAT " bytes of buffers", t->op->id, t->op->name,
                           t->in_bytes + t->out_bytes);
              return FALSE;
            }
        }
    }
  if (!shared)
    return TRUE;
  guint8 *in = buffer_new (ctx->opts, max_in), *out = buffer_new (ctx->opts, max_out);
  if (!in || !out)
    {
      buffer_free (ctx->opts, in);
      buffer_free (ctx->opts, out);
      g_set_error (error, SP_ERROR, SP_ERROR_BACKEND, "cannot allocate %" G_GSIZE_FORMAT
                   " bytes of buffers", max_in + max_out);
      return FALSE;
    }
  gboolean first = TRUE;
  for (guint32 i = 0; i < ctx->n_tasks; i++)
    {
      SpExecTask *t = &ctx->tasks[i];
      if (!t->runs || t->handled_by_parent)
        continue;
      t->in = in, t->out = out;
      t->own_buffers = first; /* the first task owns the shared pair */
      first = FALSE;
    }
  if (first)
    {
      buffer_free (ctx->opts, in);
      buffer_free (ctx->opts, out);
    }
  return TRUE;
}

static void
free_tasks (SpExecCtx *ctx)
{
  for (guint32 i = 0; i < ctx->n_tasks; i++)
    {
      SpExecTask *t = &ctx->tasks[i];
      if (t->own_buffers)
        {
          buffer_free (ctx->opts, t->in);
          buffer_free (ctx->opts, t->out);
        }
      g_free (t->sub);
      g_free (t->sub_times);
    }
  g_clear_pointer (&ctx->tasks, g_free);
}

/* ---------------------------------------------------------------- cluster */

typedef struct {
  char host[256];
  guint32 local_rank;
  gint32 device;
  gint64 offset_ns;
} RankInfo;

static void
build_cluster (const RankInfo *all, guint32 world, gboolean gpu, const char *gpu_model,
               SpExecTraceInfo *info)
{
  GPtrArray *hosts = g_ptr_array_new ();
  info->ranks = g_new0 (SpTraceRank, world);
  for (guint32 r = 0; r < world; r++)
    {
      guint32 node = hosts->len;
      for (guint32 h = 0; h < hosts->len; h++)
        if (strcmp (g_ptr_array_index (hosts, h), all[r].host) == 0)
          node = h;
      if (node == hosts->len)
        g_ptr_array_add (hosts, (gpointer) all[r].host);
      info->ranks[r] = (SpTraceRank) { .rank = r, .node_id = node, .local_rank = all[r].local_rank,
                                       .device = all[r].device, .clock_offset_ns = all[r].offset_ns };
    }
  info->n_ranks = world;
  info->n_nodes = hosts->len;
  info->nodes = g_new0 (SpTraceNode, hosts->len);
  for (guint32 h = 0; h < hosts->len; h++)
    {
      guint32 gpus = 0;
      for (guint32 r = 0; r < world; r++)
        gpus += gpu && info->ranks[r].node_id == h;
      info->nodes[h] = (SpTraceNode) { .node_id = h, .hostname = g_ptr_array_index (hosts, h),
                                       .n_gpus = gpus, .gpu_model = gpu ? gpu_model : "" };
    }
  g_ptr_array_free (hosts, TRUE);
}

/* ---------------------------------------------------------------- run */

static void
fill_result (SpExecResult *res, const SpExecCtx *ctx, int status, gboolean report)
{
  res->rank = ctx->rank;
  res->world_size = ctx->world;
  res->exit_status = status;
  res->report_error = report;
}

/* After a failure the ranks could not agree on (a peer is gone or stuck),
 * no collective is safe: rank 0 writes what it can reach — its own rows and
 * any spill file of another rank it can read — as a partial trace. */
static void
write_partial_alone (SpExecCtx *ctx, SpExecRecorder *rec, SpExecTraceInfo *info, SpExecResult *res,
                     GError **error)
{
  if (ctx->rank != 0)
    return;
  g_usleep (2 * G_USEC_PER_SEC); /* let the others flush their spill files */
  GArray *rows = g_array_new (FALSE, FALSE, sizeof (SpTraceRow));
  const GArray *own = sp_exec_recorder_rows (rec);
  g_array_append_vals (rows, own->data, own->len);
  GString *reason = g_string_new (info->partial_reason);
  for (guint32 r = 1; r < ctx->world; r++)
    {
      /* A file that is missing, unreadable or of another run adds nothing
       * (its rank is then absent from the trace); one cut mid-row adds its
       * whole rows, one damaged further on the rows before the damage, and
       * the trace's reason says so, as trace recover's does. */
      g_autofree char *p = g_strdup_printf ("%s.rank%u.spill", ctx->opts->output, r);
      g_autoptr (SpExecSpill) more = sp_exec_spill_read (p, NULL);
      if (!more || more->run.rank != r || g_strcmp0 (more->run.run_id, info->run_id) != 0)
        continue;
      g_array_append_vals (rows, more->rows->data, more->rows->len);
      sp_exec_spill_append_note (reason, more);
    }
  const char *given = info->partial_reason;
  if (given)
    info->partial_reason = reason->str;
  GError *we = NULL;
  if (sp_exec_write_trace (info, (SpTraceRow *) rows->data, rows->len, &we))
    {
      res->partial_written = TRUE;
      res->rows = rows->len;
    }
  else if (error && *error)
    g_prefix_error (error, "(partial trace not written: %s) ", we ? we->message : "no reason given");
  g_clear_error (&we);
  info->partial_reason = given;
  g_string_free (reason, TRUE);
  g_array_unref (rows);
}

/* Everyone is alive: gather the rows to rank 0, which writes the trace. */
static gboolean
gather_and_write (SpExecCtx *ctx, SpExecRecorder *rec, SpExecTraceInfo *info, SpExecResult *res,
                  GError **error)
{
  GError *local = NULL;
  const GArray *mine = sp_exec_recorder_rows (rec);
  g_autofree guint8 *data = NULL;
  g_autofree guint64 *lens = NULL;
  if (ctx->boot->gatherv (mine->data, mine->len * sizeof (SpTraceRow), &data, &lens, &local) &&
      ctx->rank == 0)
    {
      /* written from the gathered buffer itself (g_malloc's alignment
       * holds any row): no second copy of every row */
      guint64 total = 0;
      for (guint32 r = 0; r < ctx->world; r++)
        total += lens[r];
      const gsize n = (gsize) (total / sizeof (SpTraceRow));
      if (sp_exec_write_trace (info, (SpTraceRow *) data, n, &local))
        {
          res->rows = n;
          res->partial_written = info->partial_reason != NULL;
        }
    }
  return sp_exec_agree (ctx, &local, TRUE, error);
}

/* The watchdog's way out (exec-loop.h): an op overran its deadline inside
 * a blocking backend call that will not return, so this rank cannot take
 * part in any collective again.  Like the abort_job path of run_backend
 * and sp_exec_exit, but on the watchdog thread: rank 0 writes the partial
 * trace alone, every rank prints what it saw and exits 1 (rank 0 at once,
 * which makes the launcher end the job; the others after 10 s, so that
 * rank 0 can still read their spill files).  No MPI call is made here. */
typedef struct {
  SpExecCtx *ctx;
  SpExecRecorder *rec;
  SpExecTraceInfo *info;
} Stuck;

static void
stuck_exit (SpExecLoop *L, const GError *failure, gpointer data)
{
  Stuck *s = data;
  s->info->epoch_ns = L->epoch_ns;
  sp_exec_recorder_epoch (s->rec, &s->info->epoch_ns); /* the spill files' epoch */
  s->info->partial_reason = L->partial_reason;
  SpExecResult res = { .rank = s->ctx->rank };
  GError *e = g_error_copy (failure);
  if (s->ctx->opts->progress_end)
    s->ctx->opts->progress_end (s->ctx->opts->progress_data);
  write_partial_alone (s->ctx, s->rec, s->info, &res, &e);
  fprintf (stderr, "shardplan run: %s\n", e->message);
  fflush (stderr);
  fflush (stdout);
  g_error_free (e);
  if (s->ctx->rank != 0)
    g_usleep (10 * G_USEC_PER_SEC);
  _exit (1);
}

/* Set up the backend, run, write the trace. */
/* NCCL's own configuration files, as NCCL's initEnv reads them at init
 * (src/misc/param.cc setEnvFile): $NCCL_CONF_FILE, else ~/.nccl.conf then
 * /etc/nccl.conf; lines NAME=VALUE ('#' starts a comment line, nothing is
 * trimmed, a value is cut at 1023 bytes), each set only where the
 * environment does not set it.  Done here, before NCCL, for the variables
 * that decide what NCCL may choose, so that the trace's /meta/env records
 * what NCCL will run with (calibrate reads it; NCCL then finds them set). */
static void
load_nccl_conf (void)
{
  static const char *const names[] = { "NCCL_ALGO", "NCCL_PROTO", "NCCL_NVLS_ENABLE" };
  const char *env_file = g_getenv ("NCCL_CONF_FILE");
  g_autofree char *home = g_build_filename (g_get_home_dir (), ".nccl.conf", NULL);
  const char *files[2] = { NULL, NULL };
  if (env_file != NULL && env_file[0] != '\0')
    files[0] = env_file;
  else
    files[0] = home, files[1] = "/etc/nccl.conf";
  for (guint i = 0; i < G_N_ELEMENTS (files) && files[i] != NULL; i++)
    {
      g_autofree char *text = NULL;
      gsize len = 0;
      if (!sp_file_read_bounded (files[i], 1 << 20, "NCCL configuration", &text, &len, NULL))
        continue; /* NCCL reads what it can open */
      g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
      for (guint l = 0; lines[l] != NULL; l++)
        {
          char *eq = strchr (lines[l], '=');
          if (lines[l][0] == '#' || eq == NULL)
            continue;
          *eq = '\0';
          if (strlen (eq + 1) > 1023)
            eq[1 + 1023] = '\0';
          for (guint n = 0; n < G_N_ELEMENTS (names); n++)
            if (strcmp (lines[l], names[n]) == 0)
              g_setenv (names[n], eq + 1, FALSE);
        }
    }
}

/* What the run lets NCCL choose, set before NCCL reads it and before the
 * trace records the environment.  The topology's [nccl] (NCCL_ALGO /
 * NCCL_PROTO), unless the environment already sets them: it wins, and
 * rank 0 says so once (not when it says the same in other words); then
 * NCCL's configuration files, for what neither sets.  The process already
 * runs MPI's helper threads here, and g_setenv is not safe against a
 * getenv on another thread: a small risk, taken so that the trace is
 * complete (NCCL sets variables from its files later still, in its init). */
static void
export_nccl_env (SpExecCtx *ctx, const SpTopo *topo)
{
  const SpTopoSpec *spec = topo ? sp_topo_spec (topo) : NULL;
  for (guint k = 0; spec != NULL && k < 2; k++)
    {
      const char *name = k ? "NCCL_PROTO" : "NCCL_ALGO";
      const guint8 *mask = k ? spec->nccl_proto_off : spec->nccl_algo_off;
      g_autofree char *want = sp_topo_nccl_text (mask, k);
      if (want == NULL)
        continue;
      const char *have = g_getenv (name);
      if (have == NULL)
        {
          g_setenv (name, want, TRUE);
          continue;
        }
      /* the same restriction in other words is no conflict */
      guint8 have_off[SP_TOPO_NCCL_FUNCS];
      if (sp_topo_nccl_parse (name, have, k, SP_NCCL_EXACT, have_off, NULL)
          && memcmp (have_off, mask, sizeof have_off) == 0)
        continue;
      if (ctx->rank == 0)
        {
          g_autofree char *shown = sp_topo_nccl_excerpt (have);
          fprintf (stderr, "shardplan run: note: %s=%s in the environment, not the topology's "
                           "[nccl] %s = %s: NCCL runs with the environment's\n",
                   name, shown, k ? "proto" : "algo", want);
        }
    }
  load_nccl_conf ();
}

static gboolean
run_backend (SpExecCtx *ctx, const SpExecBackend *inner, SpExecRecorder *rec, const SpTopo *topo,
             const char *plan_text, const char *topo_text, const char *run_id, SpExecResult *res,
             GError **error)
{
  GError *local = NULL;
  SpExecBackend *be = sp_exec_record_wrap (inner, rec);
  be->setup (ctx, &local);
  /* A failure the backend's setup already agreed on is every rank's, with
   * the failing rank named: agreeing again would name rank 0 before it. */
  gboolean failed = ctx->failure_agreed;
  if (failed)
    g_propagate_error (error, local);
  else
    failed = !sp_exec_agree (ctx, &local, TRUE, error);
  if (failed)
    {
      be->teardown (ctx);
      sp_exec_record_unwrap (be);
      return FALSE;
    }
  /* Cluster facts and clock offsets. */
  RankInfo mine = { .local_rank = ctx->local_rank,
                    .device = inner == &sp_exec_backend_mpi ? -1 : (gint32) ctx->local_rank };
  g_autofree char *host = ctx->boot->hostname ();
  g_strlcpy (mine.host, host, sizeof mine.host);
  g_autofree RankInfo *all = g_new0 (RankInfo, ctx->world);
  if (ctx->boot->clock_offset (&mine.offset_ns, &local))
    ctx->boot->allgather (&mine, sizeof mine, all, &local);
  if (!sp_exec_agree (ctx, &local, TRUE, error))
    {
      be->teardown (ctx);
      sp_exec_record_unwrap (be);
      return FALSE;
    }

  SpExecTraceInfo info = { .ctx = ctx, .plan_text = plan_text, .topo = topo, .topo_text = topo_text,
                           .backend_name = inner->name,
                           .software = g_ptr_array_new_with_free_func (g_free) };
  g_autofree gint64 *offsets = g_new0 (gint64, ctx->world);
  for (guint32 r = 0; r < ctx->world; r++)
    offsets[r] = all[r].offset_ns;
  info.offsets_ns = offsets;
  g_ptr_array_add (info.software, g_strdup ("mpi"));
  g_ptr_array_add (info.software, ctx->boot->library_version ());
  inner->software (ctx, info.software);
  const char *gpu_model = "";
  for (guint i = 0; i + 1 < info.software->len; i += 2)
    if (strcmp (g_ptr_array_index (info.software, i), "gpu") == 0)
      gpu_model = g_ptr_array_index (info.software, i + 1);
  build_cluster (all, ctx->world, inner != &sp_exec_backend_mpi, gpu_model, &info);
  info.run_id = run_id;
  /* What a recovery without rank 0 needs from this rank. */
  SpExecSpillRank spill_info = { .backend = (char *) inner->name, .hostname = mine.host,
                                 .gpu_model = (char *) gpu_model, .local_rank = mine.local_rank,
                                 .device = mine.device, .clock_offset_ns = mine.offset_ns,
                                 .software = info.software };
  sp_exec_recorder_info (rec, &spill_info);

  Stuck stuck = { .ctx = ctx, .rec = rec, .info = &info };
  SpExecLoop loop = { .ctx = ctx, .be = be, .rec = rec, .stuck = stuck_exit, .stuck_data = &stuck };
  gboolean ok = sp_exec_loop_run (&loop, error);
  /* The epoch the spill files record, so that `trace recover` from every
   * rank's file gives the rows of this trace exactly. */
  info.epoch_ns = loop.epoch_ns;
  sp_exec_recorder_epoch (rec, &info.epoch_ns);
  info.partial_reason = loop.partial_reason;

  if (loop.abort_job)
    {
      be->abort (ctx);
      res->abort_job = TRUE;
      write_partial_alone (ctx, rec, &info, res, error);
      res->report_error = TRUE; /* each rank says what it saw */
    }
  else
    {
      GError *werr = NULL;
      gboolean wrote = gather_and_write (ctx, rec, &info, res, &werr);
      if (ok && !wrote)
        {
          ok = FALSE;
          g_propagate_error (error, werr);
        }
      else
        g_clear_error (&werr);
      if (wrote)
        sp_exec_recorder_remove_spill (rec);
      be->teardown (ctx);
      res->report_error = ctx->rank == 0;
    }
  res->exit_status = ok ? 0 : 1;
  g_ptr_array_unref (info.software);
  g_free (info.nodes);
  g_free (info.ranks);
  g_free (loop.partial_reason);
  sp_exec_record_unwrap (be);
  return ok;
}

/* A signal that ends the run (Ctrl-C on mpirun, a job's time limit) leaves
 * the spill files: rank 0's handler (shardplan/file.h) then says what turns
 * them into a trace.  `kept` FALSE clears the note. */
static void
note_spill_files (const SpExecCtx *ctx, gboolean kept)
{
  if (ctx->rank != 0)
    return;
  g_autofree char *note = NULL;
  /* a progress line on the terminal (rank 0 draws one only there) is
   * erased first ("\r\033[K"): the signal ends the process before the
   * line could be cleared the usual way */
  if (kept)
    note = g_strdup_printf ("%sshardplan run: interrupted: the spill files %s.rank*.spill are kept; "
                            "'shardplan trace recover %s.rank*.spill -o FILE.h5' turns them into "
                            "a partial trace (running again with -o %s is refused while they "
                            "are there)\n", ctx->opts->progress ? "\r\033[K" : "",
                            ctx->opts->output, ctx->opts->output, ctx->opts->output);
  sp_file_set_interrupt_note (note);
}

/* Inputs (the same on every rank, errors reported by rank 0, exit 2), the
 * backend choice, buffers, then run_backend (failures exit 1). */
static gboolean
run_inner (SpExecCtx *ctx, SpExecResult *res, GError **error)
{
  const SpExecOptions *opts = ctx->opts;
  GError *local = NULL;
  fill_result (res, ctx, 2, ctx->rank == 0);

  gsize plan_len = 0, topo_len = 0;
  g_autofree char *plan_text =
      bcast_file (ctx, opts->plan_path, "plan", SP_PLAN_MAX_FILE_BYTES, &plan_len, error);
  if (!plan_text)
    return FALSE;
  g_autoptr (SpPlan) plan = sp_plan_from_json (plan_text, (gssize) plan_len, 0, &local);
  if (plan && sp_plan_world_size (plan) != ctx->world)
    g_set_error (&local, SP_ERROR, SP_ERROR_INVALID_PLAN, "plan %s is for world size %u but this "
                 "run has %u rank%s (start %u processes: mpirun -np %u, srun -n %u)", opts->plan_path,
                 sp_plan_world_size (plan), ctx->world, ctx->world == 1 ? "" : "s",
                 sp_plan_world_size (plan), sp_plan_world_size (plan), sp_plan_world_size (plan));
  else if (local)
    g_prefix_error (&local, "%s: ", opts->plan_path);
  if (!sp_exec_agree (ctx, &local, FALSE, error))
    return FALSE;

  g_autoptr (SpTopo) topo = NULL;
  g_autofree char *topo_text = NULL;
  const char *meta_topo = sp_plan_get_meta (plan, "topology");
  if (opts->topology && g_file_test (opts->topology, G_FILE_TEST_EXISTS))
    {
      topo_text = bcast_file (ctx, opts->topology, "topology", SP_TOPO_MAX_FILE_BYTES, &topo_len,
                               error);
      if (!topo_text)
        return FALSE;
      topo = sp_topo_load_data (topo_text, (gssize) topo_len, opts->topology, &local);
    }
  else if (opts->topology)
    {
      topo = sp_topo_new_preset (opts->topology, 0, &local);
      if (!topo)
        g_prefix_error (&local, "--topology %s: ", opts->topology);
    }
  else if (meta_topo)
    topo = sp_topo_new_preset (meta_topo, 0, NULL); /* best effort: only a preset name */
  if (!sp_exec_agree (ctx, &local, FALSE, error))
    return FALSE;

  g_autoptr (SpGroups) groups = sp_groups_build (sp_plan_groups_options (plan), &local);
  if (groups != NULL)
    sp_plan_check_groups (plan, groups, &local);
  if (!sp_exec_agree (ctx, &local, FALSE, error))
    return FALSE;
  ctx->plan = plan;
  ctx->groups = groups;
  build_tasks (ctx, topo, &local);
  gboolean ok = sp_exec_agree (ctx, &local, FALSE, error);
  if (ok)
    {
      export_nccl_env (ctx, topo);
      ctx->topo_nccl_version = topo ? sp_topo_spec (topo)->nccl_version : 0;
    }

  /* The backend: probe on every rank and agree. */
  const SpExecBackend *inner = &sp_exec_backend_mpi;
  if (ok)
    {
      ctx->boot->local_rank (&ctx->local_rank, &ctx->local_size, &local);
      ok = sp_exec_agree (ctx, &local, TRUE, error);
    }
#ifdef SP_EXEC_HAVE_NCCL
  if (ok && opts->backend != SP_EXEC_BACKEND_MPI)
    {
      sp_exec_backend_nccl.probe (ctx, &local);
      GError *why = NULL;
      if (sp_exec_agree (ctx, &local, TRUE, &why))
        inner = &sp_exec_backend_nccl;
      else if (opts->backend == SP_EXEC_BACKEND_NCCL)
        {
          g_propagate_prefixed_error (error, why, "--backend nccl: ");
          ok = FALSE;
        }
      else
        g_clear_error (&why); /* auto: MPI */
    }
#else
  if (ok && opts->backend == SP_EXEC_BACKEND_NCCL)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_UNSUPPORTED, "--backend nccl: this build has no NCCL "
                   "backend (configure did not find NCCL, CUDA and MPI together)");
      ok = FALSE;
    }
#endif

  /* From here on a failure is the run's: exit 1. */
  SpExecRecorder *rec = NULL;
  if (ok)
    {
      fill_result (res, ctx, 1, ctx->rank == 0);
      alloc_buffers (ctx, &local);
      ok = sp_exec_agree (ctx, &local, TRUE, error);
    }
  char run_id[40] = "";
  if (ok)
    {
      /* One run id for the trace and every rank's spill file. */
      if (ctx->rank == 0)
        {
          g_autofree char *id = g_uuid_string_random ();
          g_strlcpy (run_id, id, sizeof run_id);
        }
      ok = ctx->boot->bcast (run_id, sizeof run_id, 0, error);
    }
  if (ok)
    {
      g_autofree char *spill = g_strdup_printf ("%s.rank%u.spill", opts->output, ctx->rank);
      g_autofree char *digest = sp_plan_digest (plan);
      g_autofree char *topo_ini = topo && !topo_text ? sp_topo_to_ini (topo) : NULL;
      g_autoptr (GPtrArray) software = g_ptr_array_new ();
      g_ptr_array_add (software, (gpointer) "compiler");
      g_ptr_array_add (software, (gpointer) SP_CC_VERSION);
      g_ptr_array_add (software, (gpointer) "shardplan_build");
      g_ptr_array_add (software, (gpointer) sp_build_config ());
      g_autoptr (GPtrArray) env = sp_exec_env_capture ();
      SpExecSpillRun run = {
        .rank = ctx->rank, .world_size = ctx->world, .run_id = run_id,
        .output = (char *) opts->output, .producer = (char *) "shardplan run",
        .producer_version = (char *) sp_version (), .clock = (char *) "MPI_Wtime",
        .timing_mode = (char *) sp_exec_mode_name (opts->mode),
        .check_policy = (char *) sp_exec_check_name (opts->check), .warmup_iters = opts->warmup,
        .iters = opts->iters, .plan_digest = digest, .plan_text = plan_text,
        .topology_text = topo_text ? topo_text : topo_ini, .software = software, .env = env,
      };
      rec = sp_exec_recorder_new (spill, &run, ctx->boot->now_ns, &local);
      ok = sp_exec_agree (ctx, &local, TRUE, error);
    }
  note_spill_files (ctx, ok);
  if (ok)
    {
      res->backend = inner->name;
      ok = run_backend (ctx, inner, rec, topo, plan_text, topo_text, run_id, res, error);
    }
  else if (rec)
    sp_exec_recorder_remove_spill (rec);
  /* A failed run keeps the spill files of a rank that recorded rows: the
   * trace may not have been written (rank 0's write or the gather failed,
   * a full disk), and they are then the only copy.  run_backend removed
   * them where the trace was written. */
  gboolean kept = rec && !ok && sp_exec_recorder_has_spill (rec)
                  && (res->abort_job || sp_exec_recorder_rows (rec)->len > 0);
  if (rec && !ok && !kept)
    sp_exec_recorder_remove_spill (rec);
  if (kept && ctx->rank == 0 && !res->abort_job && error != NULL && *error != NULL)
    {
      g_autofree char *old = (*error)->message;
      (*error)->message = g_strdup_printf ("%s; the spill files %s.rank*.spill are kept: "
                                           "'shardplan trace recover %s.rank*.spill -o FILE.h5' "
                                           "makes a trace of what they hold", old,
                                           ctx->opts->output, ctx->opts->output);
    }
  note_spill_files (ctx, kept); /* still there */
  sp_exec_recorder_free (rec);
  free_tasks (ctx);
  g_clear_pointer (&ctx->error_text, g_free);
  return ok;
}

/* MPI allocates and frees large temporaries inside collectives (Open MPI's
 * reduction buffers: one op's size).  With glibc's defaults, a freed chunk
 * at the top of the heap is returned to the system and the next op faults
 * fresh pages in again, depending on what else sits on the heap — measured
 * here as +18…27 % on 16 MiB all-reduce and reduce-scatter against a bare
 * loop of the same ops in the same process.  Keeping freed memory (no
 * trimming) and a fixed mmap threshold of 32 MiB (glibc's largest) makes
 * the steady state of a long training loop the one that is measured. */
static void
steady_allocator (void)
{
#ifdef __GLIBC__
  mallopt (M_TRIM_THRESHOLD, G_MAXINT);
  mallopt (M_MMAP_THRESHOLD, 32 << 20);
#endif
}

gboolean
sp_exec_run (const SpExecOptions *opts, SpExecResult *res, GError **error)
{
  steady_allocator ();
  memset (res, 0, sizeof *res);
  res->exit_status = 1;
  res->report_error = TRUE;
  SpExecCtx ctx = { .opts = opts, .boot = &sp_exec_boot_mpi };
  gboolean owned = FALSE;
  if (!ctx.boot->init (&owned, error))
    return FALSE;
  ctx.rank = ctx.boot->rank ();
  ctx.world = ctx.boot->size ();
  gboolean ok = run_inner (&ctx, res, error);
  res->mpi_owned = owned; /* finalized by sp_exec_exit, never after a lost peer */
  return ok;
}

void
sp_exec_exit (const SpExecResult *res)
{
  fflush (stdout);
  fflush (stderr);
  if (res->abort_job)
    {
      if (res->rank == 0)
        sp_exec_boot_mpi.abort (res->exit_status ? res->exit_status : 1);
      g_usleep (10 * G_USEC_PER_SEC);
      _exit (res->exit_status ? res->exit_status : 1);
    }
  if (res->mpi_owned)
    sp_exec_boot_mpi.finalize (); /* collective: rank 0 has printed by now */
  exit (res->exit_status);
}
