/* bench/bench-exec.c — the executor's overhead against a bare loop of the
 * same MPI collectives, same sizes, same run (mpirun -np 2 bench-exec …):
 *
 *   bare      the plan's ops in plan order, iteration after iteration,
 *             each as MPI_Barrier, then MPI_Allreduce / MPI_Allgather /
 *             MPI_Reduce_scatter_block with the executor's arguments (fp32
 *             SUM for the reductions, bytes for the gather) on its own
 *             buffers, timed with MPI_Wtime around the call, then
 *             MPI_Barrier again (isolated mode's shape: a sync before and
 *             after every op) — the loop a user would write for the plan;
 *   exec      sp_exec_run() on a plan of the same ops, isolated mode (a
 *             sync between ops), its trace's dur_ns (MPI_Wtime around the
 *             call, too), once with --check none ("none": the loop alone)
 *             and once with the default check policy ("after": the timed
 *             iterations unchecked on inputs filled once, then one untimed
 *             validation pass checking every op, whose rows must all carry
 *             SP_TRACE_FLAG_CHECKED).
 * Each pass runs the three in a rotated order (bare, none, after; none,
 * after, bare; …) so that slow drifts of the machine's load hit all alike.
 * A sample is one rank's time for one iteration; per (kind, size) it
 * prints the median and the mean of each and the overheads (exec / bare −
 * 1) of both.
 * Usage: bench-exec [--iters K] [--warmup W] [--passes P] [--csv FILE] BYTES…
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

/* One bare pass: the plan's ops in plan order, iteration after iteration
 * (as the executor runs them), each op on its own buffers.  Appends this
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
  MPI_Comm comm;
  MPI_Comm_split (MPI_COMM_WORLD, 0, rank, &comm);
  for (int it = 0; it < warmup + iters; it++)
    for (guint i = 0; i < n_ops; i++)
      {
        int count = (int) (op_bytes[i] / 4);
        MPI_Barrier (MPI_COMM_WORLD);
        double t0 = MPI_Wtime ();
        if (op_kind[i] == K_AR)
          MPI_Allreduce (in[i], out[i], count, MPI_FLOAT, MPI_SUM, comm);
        else if (op_kind[i] == K_AG)
          MPI_Allgather (in[i], (int) (op_bytes[i] / n), MPI_BYTE, out[i], (int) (op_bytes[i] / n),
                         MPI_BYTE, comm);
        else
          MPI_Reduce_scatter_block (in[i], out[i], count / n, MPI_FLOAT, MPI_SUM, comm);
        double t1 = MPI_Wtime ();
        MPI_Barrier (MPI_COMM_WORLD); /* isolated mode's sync after the op */
        if (it >= warmup)
          {
            double d = t1 - t0;
            g_array_append_val (samples[i], d);
          }
      }
  MPI_Comm_free (&comm);
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

enum { C_BARE, C_NONE, C_AFTER, C_N };

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
  /* Buffers as the executor's isolated mode has them (plans under 1 GiB):
   * an input and an output per op. */
  const guint n_ops = sizes->len * K_N;
  guint64 *op_bytes = g_new (guint64, n_ops);
  int *op_kind = g_new (int, n_ops);
  float **in = g_new (float *, n_ops), **out = g_new (float *, n_ops);
  for (guint s = 0; s < sizes->len; s++)
    for (int k = 0; k < K_N; k++)
      {
        guint i = s * K_N + k;
        guint64 b = g_array_index (sizes, guint64, s);
        op_bytes[i] = b, op_kind[i] = k;
        in[i] = g_malloc (b);
        out[i] = g_malloc (b);
        for (guint64 j = 0; j < b / 4; j++)
          in[i][j] = (float) (j % 17) - 8;
        memset (out[i], 0, b);
      }

  /* The plan: the same ops, world family, fp32. */
  SpGroupsOptions go;
  sp_groups_options_init (&go);
  go.world_size = (guint32) n;
  go.devices_per_node = (guint32) n;
  g_autoptr (SpPlan) plan = sp_plan_new (&go);
  for (guint s = 0; s < sizes->len; s++)
    for (int k = 0; k < K_N; k++)
      {
        guint64 b = g_array_index (sizes, guint64, s);
        g_autofree char *name = g_strdup_printf ("%s.%" G_GUINT64_FORMAT, kind_names[k], b);
        SpOp op = { .parent = -1, .name = name, .layer = -1, .kind = kind_colls[k],
                    .family = SP_FAMILY_WORLD, .bytes = b, .count = b / 4, .dtype = SP_DTYPE_FLOAT32,
                    .redop = k == K_AG ? SP_REDOP_NONE : SP_REDOP_SUM, .algorithm = SP_ALGO_AUTO };
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

  GArray **smp[C_N];
  for (int c = 0; c < C_N; c++)
    {
      smp[c] = g_new (GArray *, n_ops);
      for (guint i = 0; i < n_ops; i++)
        smp[c][i] = g_array_new (FALSE, FALSE, sizeof (double));
    }
  guint wrong = 0;
  for (int pass = 0; pass < passes; pass++)
    for (int step = 0; step < C_N; step++)
      {
        int c = (pass + step) % C_N;
        if (c != C_BARE)
          {
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
            SpExecResult res;
            GError *e = NULL;
            if (!sp_exec_run (&o, &res, &e))
              {
                if (res.report_error)
                  fprintf (stderr, "bench-exec: %s\n", e->message);
                MPI_Abort (MPI_COMM_WORLD, 1);
              }
            if (rank == 0 && !read_exec (trace_path, smp[c], n_ops, c == C_AFTER, &wrong))
              MPI_Abort (MPI_COMM_WORLD, 1);
            if (rank == 0)
              g_unlink (trace_path);
            continue;
          }
        GArray **mine = g_new (GArray *, n_ops);
        for (guint i = 0; i < n_ops; i++)
          mine[i] = g_array_new (FALSE, FALSE, sizeof (double));
        bare (op_bytes, op_kind, n_ops, warmup, iters, in, out, mine);
        double *all = rank == 0 ? g_new (double, (gsize) iters * n) : NULL;
        for (guint i = 0; i < n_ops; i++)
          {
            MPI_Gather (mine[i]->data, iters, MPI_DOUBLE, all, iters, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            if (rank == 0)
              g_array_append_vals (smp[C_BARE][i], all, (guint) iters * n);
            g_array_unref (mine[i]);
          }
        g_free (all);
        g_free (mine);
      }

  if (rank == 0)
    {
      FILE *cf = csv ? fopen (csv, "w") : NULL;
      if (cf)
        fprintf (cf, "kind,bytes,ranks,samples,bare_median_us,none_median_us,after_median_us,"
                 "bare_mean_us,none_mean_us,after_mean_us,none_ovh_median_pct,after_ovh_median_pct,"
                 "none_ovh_mean_pct,after_ovh_mean_pct,bare_busbw_gbs\n");
      printf ("# %d ranks, %d passes (rotated order), each %d warm-up + %d timed iterations, fp32, "
              "world group; executor rows not ok or CHECKED wrong: %u\n", n, passes, warmup, iters, wrong);
      printf ("# times in us; ovh = exec / bare - 1 (median | mean)\n");
      printf ("# %-14s %9s %6s %9s %9s %9s %8s %8s %9s %9s %9s %8s %8s\n", "kind", "bytes", "smp",
              "bare_med", "none_med", "after_med", "none%", "after%", "bare_mean", "none_mean",
              "after_mean", "none%", "after%");
      for (guint s = 0; s < sizes->len; s++)
        for (int k = 0; k < K_N; k++)
          {
            guint i = s * K_N + k;
            guint64 b = g_array_index (sizes, guint64, s);
            double mean[C_N], med[C_N], ab, bb;
            for (int c = 0; c < C_N; c++)
              stats (smp[c][i], &mean[c], &med[c]);
            sp_coll_bandwidths (kind_colls[k], b, (guint32) n, (guint64) (med[C_BARE] * 1e9), &ab, &bb);
#define OVH(x, y) ((y) > 0 ? ((x) / (y) - 1) * 100 : 0)
            printf ("  %-14s %9" G_GUINT64_FORMAT " %6u %9.1f %9.1f %9.1f %7.2f%% %7.2f%% %9.1f %9.1f "
                    "%9.1f %7.2f%% %7.2f%%\n", kind_names[k], b, smp[C_AFTER][i]->len, med[0] * 1e6,
                    med[1] * 1e6, med[2] * 1e6, OVH (med[1], med[0]), OVH (med[2], med[0]),
                    mean[0] * 1e6, mean[1] * 1e6, mean[2] * 1e6, OVH (mean[1], mean[0]),
                    OVH (mean[2], mean[0]));
            if (cf)
              fprintf (cf, "%s,%" G_GUINT64_FORMAT ",%d,%u,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,"
                       "%.3f,%.4f\n", kind_names[k], b, n, smp[C_AFTER][i]->len, med[0] * 1e6,
                       med[1] * 1e6, med[2] * 1e6, mean[0] * 1e6, mean[1] * 1e6, mean[2] * 1e6,
                       OVH (med[1], med[0]), OVH (med[2], med[0]), OVH (mean[1], mean[0]),
                       OVH (mean[2], mean[0]), bb);
#undef OVH
          }
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
  for (guint i = 0; i < n_ops; i++)
    {
      g_free (in[i]);
      g_free (out[i]);
    }
  g_free (in);
  g_free (out);
  g_free (op_bytes);
  g_free (op_kind);
  g_array_unref (sizes);
  MPI_Finalize ();
  return wrong ? 1 : 0;
}
