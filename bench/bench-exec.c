/* bench/bench-exec.c — the executor's overhead against a bare loop of the
 * same MPI collectives, same sizes, same run, same memory
 * (mpirun -np 2 bench-exec …):
 *
 *   bare      the plan's ops in plan order, iteration after iteration,
 *             each as: the executor's world-wide sync (an MPI_Iallreduce
 *             of one int on a duplicate of MPI_COMM_WORLD, polled with
 *             MPI_Test), then MPI_Allreduce / MPI_Allgather /
 *             MPI_Reduce_scatter_block with the executor's arguments (fp32
 *             SUM for the reductions, bytes for the gather), timed with
 *             MPI_Wtime around the call, then the sync again (isolated
 *             mode's shape) — on the very buffers the executor uses: the
 *             executor's allocator hook (SpExecOptions.buffer_alloc) hands
 *             it this program's buffers;
 *   exec      sp_exec_run() on a plan of the same ops, isolated mode, its
 *             trace's dur_ns (MPI_Wtime around the call, too), once with
 *             --check none ("none": the loop alone) and once with the
 *             default check policy ("after": the timed iterations
 *             unchecked on inputs filled once, then one untimed
 *             validation pass checking every op, whose rows must all carry
 *             SP_TRACE_FLAG_CHECKED);
 *   moved     (--placement only) the bare loop again on a second set of
 *             buffers of the same sizes: what the memory an op runs on
 *             does on its own, the reason the others share one set.
 * Each pass runs them in a rotated order (bare, none, after; none, after,
 * bare; …) so that slow drifts of the machine's load hit all alike.
 * A sample is one rank's time for one iteration; per (kind, size) it
 * prints the median and the mean of each and the overheads (x / bare − 1).
 * Usage: bench-exec [--iters K] [--warmup W] [--passes P] [--placement]
 *                   [--csv FILE] BYTES…
 * (K timed iterations per pass and configuration, P passes). */
#include "config.h"
#include "shardplan/shardplan.h"
#include "shardplan/exec.h"

#include <glib/gstdio.h>
#include <mpi.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { K_AR, K_AG, K_RS, K_N };
static const char *const kind_names[K_N] = { "all_reduce", "all_gather", "reduce_scatter" };
static const SpColl kind_colls[K_N] = { SP_COLL_ALL_REDUCE, SP_COLL_ALL_GATHER, SP_COLL_REDUCE_SCATTER };

/* The executor's world-wide sync (exec/mpi/boot.c): a one-int
 * MPI_Iallreduce on its own communicator, polled. */
static void
sync_like_exec (MPI_Comm comm)
{
  unsigned in = 0, out;
  MPI_Request req;
  MPI_Iallreduce (&in, &out, 1, MPI_UNSIGNED, MPI_BOR, comm, &req);
  for (int done = 0; !done;)
    MPI_Test (&req, &done, MPI_STATUS_IGNORE);
}

/* One bare pass: the plan's ops in plan order, iteration after iteration
 * (as the executor runs them), op i on in[i] and out[i].  Appends this
 * rank's time (s) of op i in every timed iteration to samples[i]. */
static void
bare (const guint64 *op_bytes, const int *op_kind, guint n_ops, int warmup, int iters, float **in,
      float **out, GArray **samples)
{
  int n, rank;
  MPI_Comm_size (MPI_COMM_WORLD, &n);
  MPI_Comm_rank (MPI_COMM_WORLD, &rank);
  /* As the executor: the ops on a communicator of their own (its world
   * family's split), the syncs on another. */
  MPI_Comm comm, sync_comm;
  MPI_Comm_split (MPI_COMM_WORLD, 0, rank, &comm);
  MPI_Comm_dup (MPI_COMM_WORLD, &sync_comm);
  for (int it = 0; it < warmup + iters; it++)
    for (guint i = 0; i < n_ops; i++)
      {
        int count = (int) (op_bytes[i] / 4);
        sync_like_exec (sync_comm);
        double t0 = MPI_Wtime ();
        if (op_kind[i] == K_AR)
          MPI_Allreduce (in[i], out[i], count, MPI_FLOAT, MPI_SUM, comm);
        else if (op_kind[i] == K_AG)
          MPI_Allgather (in[i], (int) (op_bytes[i] / n), MPI_BYTE, out[i], (int) (op_bytes[i] / n),
                         MPI_BYTE, comm);
        else
          MPI_Reduce_scatter_block (in[i], out[i], count / n, MPI_FLOAT, MPI_SUM, comm);
        double t1 = MPI_Wtime ();
        sync_like_exec (sync_comm); /* isolated mode's sync after the op */
        if (it >= warmup)
          {
            double d = t1 - t0;
            g_array_append_val (samples[i], d);
          }
      }
  MPI_Comm_free (&sync_comm);
  MPI_Comm_free (&comm);
}

/* The executor's allocator hook: its k-th buffer is in[k/2] (an op's
 * input) or out[k/2] (its output) — the plan has one op per buffer pair,
 * in this order.  A request larger than the buffer is refused (the run
 * then fails loudly). */
typedef struct {
  float **in, **out;
  const guint64 *bytes;
  guint n_ops, next, live;
} Pool;

static gpointer
pool_alloc (gsize bytes, gpointer data)
{
  Pool *p = data;
  guint k = p->next++;
  if (k / 2 >= p->n_ops || bytes > p->bytes[k / 2])
    return NULL;
  p->live++;
  return k % 2 ? (gpointer) p->out[k / 2] : (gpointer) p->in[k / 2];
}

static void
pool_free (gpointer buffer, gpointer data)
{
  Pool *p = data;
  (void) buffer;
  p->live--;
}

/* Page-aligned buffers for every op (as the executor's own default). */
static float **
alloc_set (const guint64 *op_bytes, guint n_ops, gboolean zero)
{
  float **set = g_new (float *, n_ops);
  for (guint i = 0; i < n_ops; i++)
    {
      void *p = NULL;
      if (posix_memalign (&p, 4096, op_bytes[i]) != 0)
        g_error ("bench-exec: cannot allocate %" G_GUINT64_FORMAT " bytes", op_bytes[i]);
      set[i] = p;
      if (zero)
        memset (set[i], 0, op_bytes[i]);
      else
        for (guint64 j = 0; j < op_bytes[i] / 4; j++)
          set[i][j] = (float) (j % 17) - 8;
    }
  return set;
}

static void
free_set (float **set, guint n_ops)
{
  for (guint i = 0; i < n_ops; i++)
    free (set[i]);
  g_free (set);
}

/* Rank 0 collects every rank's bare samples into dest[op]. */
static void
run_bare (const guint64 *op_bytes, const int *op_kind, guint n_ops, int warmup, int iters,
          float **in, float **out, GArray **dest)
{
  int rank, n;
  MPI_Comm_rank (MPI_COMM_WORLD, &rank);
  MPI_Comm_size (MPI_COMM_WORLD, &n);
  GArray **mine = g_new (GArray *, n_ops);
  for (guint i = 0; i < n_ops; i++)
    mine[i] = g_array_new (FALSE, FALSE, sizeof (double));
  bare (op_bytes, op_kind, n_ops, warmup, iters, in, out, mine);
  double *all = rank == 0 ? g_new (double, (gsize) iters * n) : NULL;
  for (guint i = 0; i < n_ops; i++)
    {
      MPI_Gather (mine[i]->data, iters, MPI_DOUBLE, all, iters, MPI_DOUBLE, 0, MPI_COMM_WORLD);
      if (rank == 0)
        g_array_append_vals (dest[i], all, (guint) iters * n);
      g_array_unref (mine[i]);
    }
  g_free (all);
  g_free (mine);
}

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

static void
stats (GArray *a, double *out_mean, double *out_median)
{
  *out_mean = *out_median = 0;
  if (a->len == 0)
    return;
  qsort (a->data, a->len, sizeof (double), cmp_double);
  double sum = 0;
  for (guint i = 0; i < a->len; i++)
    sum += g_array_index (a, double, i);
  *out_mean = sum / a->len;
  guint m = a->len / 2;
  *out_median = a->len % 2 ? g_array_index (a, double, m)
                           : (g_array_index (a, double, m - 1) + g_array_index (a, double, m)) / 2;
}

enum { C_BARE, C_NONE, C_AFTER, C_MOVED, C_N };
static const char *const conf_names[C_N] = { "bare", "none", "after", "moved" };

/* Rank 0: append every row's duration (s) of `trace_path` to ex[op_id].
 * Rows not ok, or whose CHECKED flag is not `checked`, count in *wrong. */
static gboolean
read_exec (const char *trace_path, GArray **ex, guint n_ops, gboolean checked, guint *wrong)
{
  GError *e = NULL;
  g_autoptr (SpTrace) tr = sp_trace_open (trace_path, &e);
  if (!tr)
    {
      fprintf (stderr, "bench-exec: %s\n", e->message);
      g_error_free (e);
      return FALSE;
    }
  guint64 nr = sp_trace_n_rows (tr);
  g_autofree SpTraceRow *rows = g_new (SpTraceRow, MAX (nr, 1));
  if (!sp_trace_read_rows (tr, 0, nr, rows, &e))
    {
      fprintf (stderr, "bench-exec: %s\n", e->message);
      g_error_free (e);
      return FALSE;
    }
  for (guint64 i = 0; i < nr; i++)
    {
      if (rows[i].op_id >= n_ops || rows[i].status != SP_TRACE_STATUS_OK ||
          !(rows[i].flags & SP_TRACE_FLAG_CHECKED) != !checked)
        {
          (*wrong)++;
          continue;
        }
      double d = rows[i].dur_ns * 1e-9;
      g_array_append_val (ex[rows[i].op_id], d);
    }
  return TRUE;
}

int
main (int argc, char **argv)
{
  /* The allocator settings sp_exec_run() applies (exec/exec.c), from the
   * start, so that bare passes before the first executor run have them. */
#ifdef __GLIBC__
  mallopt (M_TRIM_THRESHOLD, G_MAXINT);
  mallopt (M_MMAP_THRESHOLD, 32 << 20);
#endif
  int provided;
  MPI_Init_thread (&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int rank, n;
  MPI_Comm_rank (MPI_COMM_WORLD, &rank);
  MPI_Comm_size (MPI_COMM_WORLD, &n);
  int iters = 20, warmup = 5, passes = 5;
  gboolean placement = FALSE;
  const char *csv = NULL;
  GArray *sizes = g_array_new (FALSE, FALSE, sizeof (guint64));
  for (int i = 1; i < argc; i++)
    {
      if (strcmp (argv[i], "--iters") == 0 && i + 1 < argc)
        iters = atoi (argv[++i]);
      else if (strcmp (argv[i], "--warmup") == 0 && i + 1 < argc)
        warmup = atoi (argv[++i]);
      else if (strcmp (argv[i], "--passes") == 0 && i + 1 < argc)
        passes = atoi (argv[++i]);
      else if (strcmp (argv[i], "--placement") == 0)
        placement = TRUE;
      else if (strcmp (argv[i], "--csv") == 0 && i + 1 < argc)
        csv = argv[++i];
      else
        {
          guint64 b = 0;
          if (!sp_parse_bytes ("size", argv[i], 4 * (guint64) n, G_MAXINT, &b, NULL) || b % (4 * n))
            {
              if (rank == 0)
                fprintf (stderr, "bench-exec: bad size '%s' (a multiple of %d bytes)\n", argv[i], 4 * n);
              MPI_Finalize ();
              return 2;
            }
          g_array_append_val (sizes, b);
        }
    }
  if (iters < 1 || warmup < 0 || passes < 1)
    {
      if (rank == 0)
        fprintf (stderr, "bench-exec: --iters and --passes must be >= 1, --warmup >= 0\n");
      MPI_Finalize ();
      return 2;
    }
  if (sizes->len == 0)
    {
      guint64 def[] = { 1 << 20, 4 << 20, 16 << 20 };
      g_array_append_vals (sizes, def, G_N_ELEMENTS (def));
    }
  /* An input and an output per op, as the executor's isolated mode has
   * them (plans under 1 GiB), shared by the bare loop and the executor. */
  const guint n_ops = sizes->len * K_N;
  guint64 *op_bytes = g_new (guint64, n_ops);
  int *op_kind = g_new (int, n_ops);
  for (guint s = 0; s < sizes->len; s++)
    for (int k = 0; k < K_N; k++)
      op_bytes[s * K_N + k] = g_array_index (sizes, guint64, s), op_kind[s * K_N + k] = k;
  float **in = alloc_set (op_bytes, n_ops, FALSE), **out = alloc_set (op_bytes, n_ops, TRUE);
  float **in2 = placement ? alloc_set (op_bytes, n_ops, FALSE) : NULL;
  float **out2 = placement ? alloc_set (op_bytes, n_ops, TRUE) : NULL;
  Pool pool = { .in = in, .out = out, .bytes = op_bytes, .n_ops = n_ops };

  /* The plan: the same ops, world family, fp32. */
  SpGroupsOptions go;
  sp_groups_options_init (&go);
  go.world_size = (guint32) n;
  go.devices_per_node = (guint32) n;
  g_autoptr (SpPlan) plan = sp_plan_new (&go);
  for (guint i = 0; i < n_ops; i++)
    {
      int k = op_kind[i];
      g_autofree char *name = g_strdup_printf ("%s.%" G_GUINT64_FORMAT, kind_names[k], op_bytes[i]);
      SpOp op = { .parent = -1, .name = name, .layer = -1, .kind = kind_colls[k],
                  .family = SP_FAMILY_WORLD, .bytes = op_bytes[i], .count = op_bytes[i] / 4,
                  .dtype = SP_DTYPE_FLOAT32, .redop = k == K_AG ? SP_REDOP_NONE : SP_REDOP_SUM,
                  .algorithm = SP_ALGO_AUTO };
      sp_plan_add_op (plan, &op, NULL, NULL);
    }
  g_autofree char *dir = NULL, *plan_path = NULL, *trace_path = NULL;
  if (rank == 0)
    dir = g_dir_make_tmp ("bench-exec-XXXXXX", NULL);
  char dbuf[512] = "";
  if (rank == 0 && dir)
    g_strlcpy (dbuf, dir, sizeof dbuf);
  MPI_Bcast (dbuf, sizeof dbuf, MPI_CHAR, 0, MPI_COMM_WORLD);
  plan_path = g_build_filename (dbuf, "plan.json", NULL);
  trace_path = g_build_filename (dbuf, "run.h5", NULL);
  if (rank == 0)
    sp_plan_save (plan, plan_path, NULL);
  MPI_Barrier (MPI_COMM_WORLD);

  const int n_conf = placement ? C_N : C_MOVED;
  GArray **smp[C_N];
  for (int c = 0; c < C_N; c++)
    {
      smp[c] = g_new (GArray *, n_ops);
      for (guint i = 0; i < n_ops; i++)
        smp[c][i] = g_array_new (FALSE, FALSE, sizeof (double));
    }
  guint wrong = 0;
  for (int pass = 0; pass < passes; pass++)
    for (int step = 0; step < n_conf; step++)
      {
        int c = (pass + step) % n_conf;
        if (c == C_BARE || c == C_MOVED)
          {
            run_bare (op_bytes, op_kind, n_ops, warmup, iters, c == C_BARE ? in : in2,
                      c == C_BARE ? out : out2, smp[c]);
            continue;
          }
        SpExecOptions o;
        sp_exec_options_init (&o);
        o.plan_path = plan_path;
        o.output = trace_path;
        o.backend = SP_EXEC_BACKEND_MPI;
        o.mode = SP_EXEC_MODE_ISOLATED;
        o.iters = (guint32) iters;
        o.warmup = (guint32) warmup;
        if (c == C_NONE)
          o.check = SP_EXEC_CHECK_NONE; /* else the default, after */
        o.buffer_alloc = pool_alloc;
        o.buffer_free = pool_free;
        o.buffer_data = &pool;
        pool.next = 0;
        SpExecResult res;
        GError *e = NULL;
        if (!sp_exec_run (&o, &res, &e))
          {
            if (res.report_error)
              fprintf (stderr, "bench-exec: %s\n", e->message);
            MPI_Abort (MPI_COMM_WORLD, 1);
          }
        if (pool.next != 2 * n_ops || pool.live != 0)
          {
            fprintf (stderr, "bench-exec: the executor took %u buffers (expected %u), %u not freed\n",
                     pool.next, 2 * n_ops, pool.live);
            MPI_Abort (MPI_COMM_WORLD, 1);
          }
        if (rank == 0 && !read_exec (trace_path, smp[c], n_ops, c == C_AFTER, &wrong))
          MPI_Abort (MPI_COMM_WORLD, 1);
        if (rank == 0)
          g_unlink (trace_path);
      }

  if (rank == 0)
    {
      FILE *cf = csv ? fopen (csv, "w") : NULL;
      if (cf)
        {
          fprintf (cf, "kind,bytes,ranks,samples");
          for (int c = 0; c < n_conf; c++)
            fprintf (cf, ",%s_median_us,%s_mean_us", conf_names[c], conf_names[c]);
          for (int c = 1; c < n_conf; c++)
            fprintf (cf, ",%s_ovh_median_pct,%s_ovh_mean_pct", conf_names[c], conf_names[c]);
          fprintf (cf, ",bare_busbw_gbs\n");
        }
      printf ("# %d ranks, %d passes (rotated order), each %d warm-up + %d timed iterations, fp32, "
              "world group, one buffer set for bare and executor%s; executor rows not ok or "
              "CHECKED wrong: %u\n", n, passes, warmup, iters,
              placement ? " (moved: bare on a second set)" : "", wrong);
      printf ("# medians in us; x%% = x / bare - 1 on medians (means in the CSV)\n");
      printf ("# %-14s %9s %6s", "kind", "bytes", "smp");
      for (int c = 0; c < n_conf; c++)
        printf (" %9s", conf_names[c]);
      for (int c = 1; c < n_conf; c++)
        printf (" %7s%%", conf_names[c]);
      printf ("\n");
#define OVH(x, y) ((y) > 0 ? ((x) / (y) - 1) * 100 : 0)
      for (guint i = 0; i < n_ops; i++)
        {
          int k = op_kind[i];
          double mean[C_N], med[C_N], ab, bb;
          for (int c = 0; c < n_conf; c++)
            stats (smp[c][i], &mean[c], &med[c]);
          sp_coll_bandwidths (kind_colls[k], op_bytes[i], (guint32) n, (guint64) (med[C_BARE] * 1e9),
                              &ab, &bb);
          printf ("  %-14s %9" G_GUINT64_FORMAT " %6u", kind_names[k], op_bytes[i], smp[C_BARE][i]->len);
          for (int c = 0; c < n_conf; c++)
            printf (" %9.1f", med[c] * 1e6);
          for (int c = 1; c < n_conf; c++)
            printf (" %7.2f%%", OVH (med[c], med[C_BARE]));
          printf ("\n");
          if (cf)
            {
              fprintf (cf, "%s,%" G_GUINT64_FORMAT ",%d,%u", kind_names[k], op_bytes[i], n,
                       smp[C_BARE][i]->len);
              for (int c = 0; c < n_conf; c++)
                fprintf (cf, ",%.3f,%.3f", med[c] * 1e6, mean[c] * 1e6);
              for (int c = 1; c < n_conf; c++)
                fprintf (cf, ",%.3f,%.3f", OVH (med[c], med[C_BARE]), OVH (mean[c], mean[C_BARE]));
              fprintf (cf, ",%.4f\n", bb);
            }
        }
#undef OVH
      if (cf)
        fclose (cf);
      g_unlink (plan_path);
      g_rmdir (dbuf);
    }
  for (int c = 0; c < C_N; c++)
    {
      for (guint i = 0; i < n_ops; i++)
        g_array_unref (smp[c][i]);
      g_free (smp[c]);
    }
  free_set (in, n_ops);
  free_set (out, n_ops);
  if (placement)
    {
      free_set (in2, n_ops);
      free_set (out2, n_ops);
    }
  g_free (op_bytes);
  g_free (op_kind);
  g_array_unref (sizes);
  MPI_Finalize ();
  return wrong ? 1 : 0;
}
