/* bench/bench-exec.c — the executor's overhead against a bare loop of the
 * same MPI collectives, same sizes, same run (mpirun -np 4 bench-exec …):
 *
 *   bare      MPI_Barrier, then MPI_Allreduce / MPI_Allgather /
 *             MPI_Reduce_scatter_block timed with MPI_Wtime — the loop a
 *             user would write (nccl-tests' shape);
 *   executor  sp_exec_run() on a plan of the same ops, isolated mode (a
 *             barrier between ops, results checked outside the timing), its
 *             trace's dur_ns.
 * The bare loop runs before and after the executor; its time is the mean
 * of both.  Per (kind, size) it prints the mean per-op time of each (over
 * iterations and ranks), busbw, and the overhead (executor / bare - 1).
 * Usage: bench-exec [--iters K] [--warmup W] [--csv FILE] BYTES… */
#include "config.h"
#include "shardplan/shardplan.h"
#include "shardplan/exec.h"

#include <glib/gstdio.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { K_AR, K_AG, K_RS, K_N };
static const char *const kind_names[K_N] = { "all_reduce", "all_gather", "reduce_scatter" };
static const SpColl kind_colls[K_N] = { SP_COLL_ALL_REDUCE, SP_COLL_ALL_GATHER, SP_COLL_REDUCE_SCATTER };

/* Mean seconds per op of the bare loop, summed over ranks then divided. */
static double
bare (int kind, guint64 bytes, int warmup, int iters, float *in, float *out)
{
  int n, rank;
  MPI_Comm_size (MPI_COMM_WORLD, &n);
  MPI_Comm_rank (MPI_COMM_WORLD, &rank);
  int count = (int) (bytes / 4);
  double sum = 0;
  for (int it = 0; it < warmup + iters; it++)
    {
      MPI_Barrier (MPI_COMM_WORLD);
      double t0 = MPI_Wtime ();
      if (kind == K_AR)
        MPI_Allreduce (in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      else if (kind == K_AG)
        MPI_Allgather (in, count / n, MPI_FLOAT, out, count / n, MPI_FLOAT, MPI_COMM_WORLD);
      else
        MPI_Reduce_scatter_block (in, out, count / n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      double t1 = MPI_Wtime ();
      if (it >= warmup)
        sum += t1 - t0;
    }
  double all = 0;
  MPI_Allreduce (&sum, &all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return all / n / iters;
}

int
main (int argc, char **argv)
{
  MPI_Init (&argc, &argv);
  int rank, n;
  MPI_Comm_rank (MPI_COMM_WORLD, &rank);
  MPI_Comm_size (MPI_COMM_WORLD, &n);
  int iters = 20, warmup = 5;
  const char *csv = NULL;
  GArray *sizes = g_array_new (FALSE, FALSE, sizeof (guint64));
  for (int i = 1; i < argc; i++)
    {
      if (strcmp (argv[i], "--iters") == 0 && i + 1 < argc)
        iters = atoi (argv[++i]);
      else if (strcmp (argv[i], "--warmup") == 0 && i + 1 < argc)
        warmup = atoi (argv[++i]);
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
  if (sizes->len == 0)
    {
      guint64 def[] = { 65536, 1 << 20, 4 << 20, 16 << 20 };
      g_array_append_vals (sizes, def, G_N_ELEMENTS (def));
    }
  guint64 max = 0;
  for (guint i = 0; i < sizes->len; i++)
    max = MAX (max, g_array_index (sizes, guint64, i));
  float *in = g_malloc (max), *out = g_malloc (max);
  for (guint64 i = 0; i < max / 4; i++)
    in[i] = (float) (i % 17) - 8;

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

  double *bare_s = g_new0 (double, sizes->len * K_N);
  for (int pass = 0; pass < 2; pass++)
    {
      if (pass == 1)
        {
          SpExecOptions o;
          sp_exec_options_init (&o);
          o.plan_path = plan_path;
          o.output = trace_path;
          o.backend = SP_EXEC_BACKEND_MPI;
          o.iters = (guint32) iters;
          o.warmup = (guint32) warmup;
          SpExecResult res;
          GError *e = NULL;
          if (!sp_exec_run (&o, &res, &e))
            {
              if (res.report_error)
                fprintf (stderr, "bench-exec: %s\n", e->message);
              MPI_Abort (MPI_COMM_WORLD, 1);
            }
        }
      for (guint s = 0; s < sizes->len; s++)
        for (int k = 0; k < K_N; k++)
          bare_s[s * K_N + k] += bare (k, g_array_index (sizes, guint64, s), warmup, iters, in, out) / 2;
    }

  if (rank == 0)
    {
      GError *e = NULL;
      g_autoptr (SpTrace) tr = sp_trace_open (trace_path, &e);
      if (!tr)
        {
          fprintf (stderr, "bench-exec: %s\n", e->message);
          MPI_Abort (MPI_COMM_WORLD, 1);
        }
      guint64 nr = sp_trace_n_rows (tr);
      SpTraceRow *rows = g_new (SpTraceRow, nr);
      sp_trace_read_rows (tr, 0, nr, rows, NULL);
      double *ex = g_new0 (double, sizes->len * K_N);
      guint *cnt = g_new0 (guint, sizes->len * K_N);
      guint wrong = 0;
      for (guint64 i = 0; i < nr; i++)
        {
          ex[rows[i].op_id] += rows[i].dur_ns * 1e-9;
          cnt[rows[i].op_id]++;
          wrong += rows[i].status != SP_TRACE_STATUS_OK;
        }
      FILE *cf = csv ? fopen (csv, "w") : NULL;
      if (cf)
        fprintf (cf, "kind,bytes,ranks,iters,bare_us,exec_us,overhead_pct,bare_busbw_gbs,exec_busbw_gbs\n");
      printf ("# %d ranks, %d warm-up + %d timed iterations, fp32, world group; executor rows "
              "not ok: %u\n", n, warmup, iters, wrong);
      printf ("# %-14s %12s %12s %12s %10s %12s %12s\n", "kind", "bytes", "bare_us", "exec_us",
              "overhead", "bare_busbw", "exec_busbw");
      for (guint s = 0; s < sizes->len; s++)
        for (int k = 0; k < K_N; k++)
          {
            guint i = s * K_N + k;
            guint64 b = g_array_index (sizes, guint64, s);
            double e_s = cnt[i] ? ex[i] / cnt[i] : 0, b_s = bare_s[i];
            double ab, bb, ae, be;
            sp_coll_bandwidths (kind_colls[k], b, (guint32) n, (guint64) (b_s * 1e9), &ab, &bb);
            sp_coll_bandwidths (kind_colls[k], b, (guint32) n, (guint64) (e_s * 1e9), &ae, &be);
            double ov = b_s > 0 ? (e_s / b_s - 1) * 100 : 0;
            printf ("  %-14s %12" G_GUINT64_FORMAT " %12.1f %12.1f %9.2f%% %12.3f %12.3f\n", kind_names[k],
                    b, b_s * 1e6, e_s * 1e6, ov, bb, be);
            if (cf)
              fprintf (cf, "%s,%" G_GUINT64_FORMAT ",%d,%d,%.3f,%.3f,%.3f,%.4f,%.4f\n", kind_names[k], b,
                       n, iters, b_s * 1e6, e_s * 1e6, ov, bb, be);
          }
      if (cf)
        fclose (cf);
      g_free (rows);
      g_free (ex);
      g_free (cnt);
      g_unlink (trace_path);
      g_unlink (plan_path);
      g_rmdir (dbuf);
    }
  g_free (bare_s);
  g_free (in);
  g_free (out);
  g_array_unref (sizes);
  MPI_Finalize ();
  return 0;
}
