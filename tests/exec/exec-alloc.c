/* tests/exec/exec-alloc.c — the executor's buffer allocator hook
 * (SpExecOptions.buffer_alloc / buffer_free), run under mpirun by
 * tests/exec/run-alloc.sh:
 *
 *   exec-alloc DIR
 *
 * 1. A plan of an all_reduce, an all_gather and a reduce_scatter (fp32,
 *    world family, 64 KiB): the hook is asked for exactly six buffers, in
 *    plan order, input then output, of the sizes the ops need (all_reduce
 *    B and B, all_gather B/n and B, reduce_scatter B and B/n); every one
 *    is handed back exactly once; the run succeeds and (rank 0) every row
 *    of the trace is ok and CHECKED — the ops ran, correctly, on the
 *    memory the hook gave.
 * 2. The hook runs out on its third buffer: sp_exec_run fails on every
 *    rank with "cannot allocate", hands back the buffers it got, and
 *    writes no trace.
 * 3. Without a hook (the executor's own page-aligned buffers) the same
 *    plan still runs, every row ok and CHECKED.
 * Prints "ok" and exits 0, or prints the problems and exits 1. */
#include "config.h"
#include "shardplan/shardplan.h"
#include "shardplan/exec.h"

#include <glib/gstdio.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int problems;

#define BAD(...)                                                     \
  do {                                                               \
    problems++;                                                      \
    fprintf (stderr, "exec-alloc: rank %d: ", my_rank);              \
    fprintf (stderr, __VA_ARGS__);                                   \
    fputc ('\n', stderr);                                            \
  } while (0)

static int my_rank;

enum { MAX_BUF = 16 };

typedef struct {
  guint fail_at;             /* refuse the buffer with this index (G_MAXUINT: never) */
  guint calls;               /* buffer_alloc calls */
  gsize sizes[MAX_BUF];
  gpointer given[MAX_BUF];
  guint freed[MAX_BUF];      /* buffer_free calls per given buffer */
  guint stray_frees;         /* buffer_free on something never given */
} Hook;

static gpointer
hook_alloc (gsize bytes, gpointer data)
{
  Hook *h = data;
  guint k = h->calls++;
  if (k >= MAX_BUF || k == h->fail_at)
    return NULL;
  h->sizes[k] = bytes;
  h->given[k] = g_malloc (bytes);
  return h->given[k];
}

static void
hook_free (gpointer buffer, gpointer data)
{
  Hook *h = data;
  for (guint k = 0; k < MIN (h->calls, MAX_BUF); k++)
    if (h->given[k] == buffer)
      {
        if (h->freed[k]++ == 0)
          g_free (buffer);
        return;
      }
  h->stray_frees++;
}

static gboolean
run (const char *plan_path, const char *trace_path, Hook *h, GError **error)
{
  SpExecOptions o;
  sp_exec_options_init (&o);
  o.plan_path = plan_path;
  o.output = trace_path;
  o.backend = SP_EXEC_BACKEND_MPI;
  o.iters = 2;
  o.warmup = 1;
  o.timeout_s = 60;
  if (h)
    {
      o.buffer_alloc = hook_alloc;
      o.buffer_free = hook_free;
      o.buffer_data = h;
    }
  SpExecResult res;
  return sp_exec_run (&o, &res, error);
}

/* Rank 0: every row of the trace ok and CHECKED; `expect` rows. */
static void
check_trace (const char *path, guint64 expect)
{
  GError *e = NULL;
  g_autoptr (SpTrace) tr = sp_trace_open (path, &e);
  if (!tr)
    {
      BAD ("%s", e->message);
      g_error_free (e);
      return;
    }
  guint64 nr = sp_trace_n_rows (tr);
  if (nr != expect)
    BAD ("%" G_GUINT64_FORMAT " rows, expected %" G_GUINT64_FORMAT, nr, expect);
  g_autofree SpTraceRow *rows = g_new (SpTraceRow, MAX (nr, 1));
  if (!sp_trace_read_rows (tr, 0, nr, rows, &e))
    {
      BAD ("%s", e->message);
      g_error_free (e);
      return;
    }
  for (guint64 i = 0; i < nr; i++)
    if (rows[i].status != SP_TRACE_STATUS_OK || !(rows[i].flags & SP_TRACE_FLAG_CHECKED))
      BAD ("row %" G_GUINT64_FORMAT " (op %u): status %d, flags 0x%x", i, rows[i].op_id,
           (int) rows[i].status, (unsigned) rows[i].flags);
}

int
main (int argc, char **argv)
{
  int provided, n;
  MPI_Init_thread (&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank (MPI_COMM_WORLD, &my_rank);
  MPI_Comm_size (MPI_COMM_WORLD, &n);
  if (argc != 2)
    {
      if (my_rank == 0)
        fprintf (stderr, "usage: exec-alloc DIR\n");
      MPI_Finalize ();
      return 2;
    }
  const guint64 B = 64 * 1024;
  const SpColl kinds[] = { SP_COLL_ALL_REDUCE, SP_COLL_ALL_GATHER, SP_COLL_REDUCE_SCATTER };
  const gsize want[] = { B, B, B / n, B, B, B / n }; /* input, output per op */
  SpGroupsOptions go;
  sp_groups_options_init (&go);
  go.world_size = (guint32) n;
  go.devices_per_node = (guint32) n;
  g_autoptr (SpPlan) plan = sp_plan_new (&go);
  for (guint i = 0; i < G_N_ELEMENTS (kinds); i++)
    {
      SpOp op = { .parent = -1, .name = (char *) sp_coll_name (kinds[i]), .layer = -1, .kind = kinds[i],
                  .family = SP_FAMILY_WORLD, .bytes = B, .count = B / 4, .dtype = SP_DTYPE_FLOAT32,
                  .redop = kinds[i] == SP_COLL_ALL_GATHER ? SP_REDOP_NONE : SP_REDOP_SUM,
                  .algorithm = SP_ALGO_AUTO };
      sp_plan_add_op (plan, &op, NULL, NULL);
    }
  g_autofree char *plan_path = g_build_filename (argv[1], "alloc-plan.json", NULL);
  g_autofree char *ok_path = g_build_filename (argv[1], "alloc-ok.h5", NULL);
  g_autofree char *fail_path = g_build_filename (argv[1], "alloc-fail.h5", NULL);
  g_autofree char *plain_path = g_build_filename (argv[1], "alloc-default.h5", NULL);
  if (my_rank == 0 && !sp_plan_save (plan, plan_path, NULL))
    BAD ("cannot write %s", plan_path);
  MPI_Barrier (MPI_COMM_WORLD);

  /* 1. The hook gives every buffer. */
  Hook h = { .fail_at = G_MAXUINT };
  GError *e = NULL;
  if (!run (plan_path, ok_path, &h, &e))
    {
      BAD ("run with the hook failed: %s", e ? e->message : "?");
      g_clear_error (&e);
    }
  if (h.calls != G_N_ELEMENTS (want))
    BAD ("buffer_alloc called %u times, expected %zu", h.calls, G_N_ELEMENTS (want));
  for (guint k = 0; k < MIN (h.calls, G_N_ELEMENTS (want)); k++)
    {
      if (h.sizes[k] != want[k])
        BAD ("buffer %u: %zu bytes asked, expected %zu", k, h.sizes[k], want[k]);
      if (h.freed[k] != 1)
        BAD ("buffer %u handed back %u times", k, h.freed[k]);
    }
  if (h.stray_frees)
    BAD ("buffer_free on %u pointers never given", h.stray_frees);
  if (my_rank == 0)
    check_trace (ok_path, (guint64) G_N_ELEMENTS (kinds) * 2 * n);

  /* 2. The hook runs out on the third buffer. */
  Hook f = { .fail_at = 2 };
  if (run (plan_path, fail_path, &f, &e))
    BAD ("a run whose allocator failed succeeded");
  else if (!e || !strstr (e->message, "cannot allocate"))
    BAD ("allocator failure: message '%s'", e ? e->message : "(none)");
  g_clear_error (&e);
  for (guint k = 0; k < MIN (f.calls, MAX_BUF); k++)
    if (k != f.fail_at && f.freed[k] != 1)
      BAD ("after the failure, buffer %u handed back %u times", k, f.freed[k]);
  MPI_Barrier (MPI_COMM_WORLD);
  if (my_rank == 0 && g_file_test (fail_path, G_FILE_TEST_EXISTS))
    BAD ("a trace was written after the allocator failed");

  /* 3. No hook: the executor's own buffers. */
  if (!run (plan_path, plain_path, NULL, &e))
    {
      BAD ("run without a hook failed: %s", e ? e->message : "?");
      g_clear_error (&e);
    }
  if (my_rank == 0)
    check_trace (plain_path, (guint64) G_N_ELEMENTS (kinds) * 2 * n);

  int all = 0;
  MPI_Allreduce (&problems, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (my_rank == 0 && all == 0)
    printf ("ok\n");
  MPI_Finalize ();
  return all ? 1 : 0;
}
