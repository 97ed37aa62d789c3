/* `shardplan compare SIM.h5 MEASURED.h5`: how far the simulator was from a
 * measured run of the same plan (shardplan/compare.h has the definitions). */
#include "config.h"
#include "cli.h"
#include "commands.h"
#include "plot.h"
#include "progress.h"
#include "shardplan/shardplan.h"
#include "shardplan/compare.h"
#include "shardplan/sim.h"

#include <math.h>
#include <string.h>

#define CMD "compare"
/* Bars of the error histogram (about; the width is rounded to 1, 2 or 5 × 10^k %). */
#define HIST_BINS 20

static void
print_stats_row (const SpCompareStats *st, const char *indent)
{
  g_autofree char *label = g_strdup_printf ("%s%s", indent, st->label);
  printf ("%-26s %6u %12.1f %% %9.1f %% %9.1f %% %9.1f %%   op %u\n", label, st->n_ops,
          100 * st->median_abs, 100 * st->p90_abs, 100 * st->worst_abs, 100 * st->median_signed,
          st->worst_op_id);
}

/* The NCCL-estimate row of a set: its statistics and, last, the
 * simulator's median |error| over the same ops; "-" when NCCL estimated
 * none of the set's ops. */
static void
print_nccl_row (const SpCompareStats *st, const char *indent)
{
  g_autofree char *label = g_strdup_printf ("%s%s", indent, st->label);
  if (st->nccl_n_ops == 0)
    {
      printf ("%-26s %6u %14s %11s %11s %11s   %-8s %13s\n", label, 0u, "-", "-", "-", "-", "-",
              "-");
      return;
    }
  printf ("%-26s %6u %12.1f %% %9.1f %% %9.1f %% %9.1f %%   op %-5u %11.1f %%\n", label,
          st->nccl_n_ops, 100 * st->nccl_median_abs, 100 * st->nccl_p90_abs,
          100 * st->nccl_worst_abs, 100 * st->nccl_median_signed, st->nccl_worst_op_id,
          100 * st->sim_median_abs_nccl_ops);
}

/* A warning naming the NCCL variables the measured run set that the
 * simulator does not model (sp_sim_nccl_env_unread), judged on the
 * topology the simulated trace records (across nodes when the run had
 * more ranks than a node has GPUs: compare has no op placement to go by);
 * nothing for CPU ranks (MPI) or a simulated trace without its topology. */
static void
warn_unread_env (const SpTrace *sim, const SpTrace *measured, const char *measured_name)
{
  const char *ini = sp_trace_topology_text (sim);
  if (ini == NULL)
    return;
  g_autoptr (SpTopo) topo = sp_topo_load_data (ini, -1, "the simulated trace's topology", NULL);
  if (topo == NULL || sp_topo_spec (topo)->intra_kind == SP_INTRA_SHM)
    return;
  const SpTopoSpec *spec = sp_topo_spec (topo);
  g_autofree const char **names = NULL, **values = NULL;
  gsize n = sp_trace_nccl_vars (measured, &names, &values);
  gboolean across = sp_trace_header (measured)->world_size > spec->gpus_per_node;
  int version = sp_topo_nccl_version_code (sp_trace_software (measured, "nccl_runtime"));
  g_autofree char *text = sp_sim_nccl_env_unread_text (spec, version, across, names, values, n);
  if (text != NULL)
    fprintf (stderr, "shardplan " CMD ": warning: %s ran with %s, which the simulator does not "
             "model (it assumes NCCL's defaults, aws-ofi-nccl's on EFA): part of the error may "
             "be theirs\n", measured_name, text);
}

static void
print_text (const SpCompare *cmp, gsize top_n)
{
  gboolean nccl = sp_compare_has_nccl (cmp);
  const SpCompareCounts *c = sp_compare_counts (cmp);
  gsize n_ops = 0;
  sp_compare_ops (cmp, &n_ops);
  printf ("simulated: %s\nmeasured:  %s\nplan:      %s\n", sp_compare_sim_name (cmp),
          sp_compare_measured_name (cmp), sp_compare_plan_digest (cmp));
  printf ("rows: %" G_GUINT64_FORMAT " simulated, %" G_GUINT64_FORMAT " measured, %"
          G_GUINT64_FORMAT " joined, %" G_GUINT64_FORMAT " compared (%" G_GSIZE_FORMAT " ops)\n",
          c->sim_rows, c->measured_rows, c->joined, c->samples, n_ops);
  printf ("left out: %" G_GUINT64_FORMAT " only simulated, %" G_GUINT64_FORMAT
          " only measured, %" G_GUINT64_FORMAT " status not ok, %" G_GUINT64_FORMAT
          " composite, %" G_GUINT64_FORMAT " in groups of one rank (not costed), %" G_GUINT64_FORMAT
          " zero measured time\n\n",
          c->only_sim, c->only_measured, c->excluded_status, c->excluded_composite,
          c->excluded_one_rank, c->excluded_zero);
  printf ("error = simulated / measured - 1, per op (median over iterations and ranks)\n\n");
  printf ("%-26s %6s %14s %11s %11s %11s   %s\n", "", "ops", "median |err|", "p90 |err|",
          "worst |err|", "bias", "worst");
  static const char *const titles[SP_COMPARE_BY_N] = { NULL, "by kind", "by size", "by family" };
  for (guint by = 0; by < SP_COMPARE_BY_N; by++)
    {
      gsize n = 0;
      const SpCompareStats *st = sp_compare_stats (cmp, (SpCompareBy) by, &n);
      if (titles[by])
        printf ("%s\n", titles[by]);
      for (gsize i = 0; i < n; i++)
        print_stats_row (&st[i], titles[by] ? "  " : "");
    }
  if (nccl)
    {
      printf ("\nNCCL's own estimate (ncclGroupSimulateEnd, in the measured trace): %"
              G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " samples\n"
              "error = NCCL's estimate / measured - 1, over the ops NCCL estimated;\n"
              "sim median = the simulator's median |err| on those same ops\n\n",
              c->nccl_samples, c->samples);
      printf ("%-26s %6s %14s %11s %11s %11s   %-8s %13s\n", "", "ops", "median |err|",
              "p90 |err|", "worst |err|", "bias", "worst", "sim median");
      for (guint by = 0; by < SP_COMPARE_BY_N; by++)
        {
          gsize n = 0;
          const SpCompareStats *st = sp_compare_stats (cmp, (SpCompareBy) by, &n);
          if (titles[by])
            printf ("%s\n", titles[by]);
          for (gsize i = 0; i < n; i++)
            print_nccl_row (&st[i], titles[by] ? "  " : "");
        }
    }

  gsize n_worst = 0;
  g_autofree const SpCompareOp **worst = sp_compare_worst (cmp, top_n, &n_worst);
  if (n_worst == 0)
    return;
  int name_w = 36; /* or the longest name listed */
  for (gsize i = 0; i < n_worst; i++)
    name_w = MAX (name_w, (int) g_utf8_strlen (worst[i]->name, -1));
  printf ("\nworst %" G_GSIZE_FORMAT " %s:\n%6s  %-*s %-16s %-12s %12s %11s %11s %9s", n_worst,
          sp_cli_plural (n_worst, "op", "ops"), "op", name_w, "name", "kind", "family", "bytes",
          "measured", "simulated", "error");
  if (nccl)
    printf (" %11s %9s", "NCCL est", "NCCL err");
  printf ("\n");
  for (gsize i = 0; i < n_worst; i++)
    {
      const SpCompareOp *op = worst[i];
      g_autofree char *m = sp_cli_time_padded (op->measured_ns, 11);
      g_autofree char *s = sp_cli_time_padded (op->sim_ns, 11);
      int pad = name_w - (int) g_utf8_strlen (op->name, -1);
      printf ("%6u  %s%*s %-16s %-12s %12" G_GUINT64_FORMAT " %s %s %+8.1f %%", op->op_id,
              op->name, pad, "", sp_coll_name (op->coll) ? sp_coll_name (op->coll) : "?",
              op->family, op->bytes, m, s, 100 * op->error);
      if (!nccl)
        printf ("\n");
      else if (op->nccl_samples == 0)
        printf (" %11s %9s\n", "-", "-");
      else
        {
          g_autofree char *e = sp_cli_time_padded (op->nccl_ns, 11);
          printf (" %s %+8.1f %%\n", e, 100 * op->nccl_error);
        }
    }
}

/* A round bin width (1, 2 or 5 × 10^k) giving about HIST_BINS bins over `span`. */
static double
nice_width (double span)
{
  if (!(span > 0))
    return 1.0;
  double raw = span / HIST_BINS;
  double p = pow (10.0, floor (log10 (raw)));
  double f = raw / p;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
}

static gboolean
write_plot (const SpCompare *cmp, const char *path, GError **error)
{
  gsize n = 0;
  const SpCompareOp *ops = sp_compare_ops (cmp, &n);
  gboolean nccl = sp_compare_has_nccl (cmp);
  g_autoptr (SpPlot) plot = sp_plot_new (2, "simulated vs measured");
  sp_plot_set_axes (plot, 0, "time per op", "measured (us)", TRUE,
                    nccl ? "simulated, NCCL's estimate (us)" : "simulated (us)", TRUE);
  sp_plot_set_axes (plot, 1, "error distribution",
                    nccl ? "simulated (or NCCL's estimate) / measured - 1 (%)"
                         : "simulated / measured - 1 (%)",
                    FALSE, "ops", FALSE);
  sp_plot_set_integer_ticks (plot, 1, FALSE, TRUE); /* ops per bin: a count */

  /* panel 0: one scatter series per collective kind */
  g_autofree double *x = g_new (double, n);
  g_autofree double *y = g_new (double, n);
  gsize n_kinds = 0;
  const SpCompareStats *kinds = sp_compare_stats (cmp, SP_COMPARE_BY_KIND, &n_kinds);
  for (gsize k = 0; k < n_kinds; k++)
    {
      gsize m = 0;
      for (gsize i = 0; i < n; i++)
        {
          const char *name = sp_coll_name (ops[i].coll);
          if (g_strcmp0 (name ? name : "?", kinds[k].label) != 0)
            continue;
          x[m] = ops[i].measured_ns / 1e3;
          y[m] = ops[i].sim_ns / 1e3;
          m++;
        }
      sp_plot_add_series (plot, 0, kinds[k].label, SP_PLOT_MARKERS, x, y, m);
    }
  /* NCCL's own estimate, when the measured trace has it: one series of
   * crosses over every kind */
  if (nccl)
    {
      gsize m = 0;
      for (gsize i = 0; i < n; i++)
        if (ops[i].nccl_samples > 0)
          {
            x[m] = ops[i].measured_ns / 1e3;
            y[m] = ops[i].nccl_ns / 1e3;
            m++;
          }
      sp_plot_add_series (plot, 0, "NCCL's estimate", SP_PLOT_CROSSES, x, y, m);
    }
  sp_plot_add_diagonal (plot, 0, "y = x");

  /* panel 1: histogram of the signed error, in % (bins over NCCL's errors too) */
  double lo = INFINITY, hi = -INFINITY;
  for (gsize i = 0; i < n; i++)
    {
      lo = MIN (lo, 100 * ops[i].error), hi = MAX (hi, 100 * ops[i].error);
      if (ops[i].nccl_samples > 0)
        lo = MIN (lo, 100 * ops[i].nccl_error), hi = MAX (hi, 100 * ops[i].nccl_error);
    }
  double w = nice_width (hi - lo);
  double start = floor (lo / w) * w;
  gsize bins = (gsize) floor ((hi - start) / w) + 1;
  g_autofree double *bx = g_new (double, bins);
  g_autofree double *by = g_new0 (double, bins);
  for (gsize b = 0; b < bins; b++)
    bx[b] = start + (b + 0.5) * w;
  for (gsize i = 0; i < n; i++)
    {
      gsize b = (gsize) floor ((100 * ops[i].error - start) / w);
      by[MIN (b, bins - 1)] += 1;
    }
  g_autofree char *label =
      g_strdup_printf (nccl ? "simulator, ops per %g %% bin" : "ops per %g %% bin", w);
  sp_plot_add_series (plot, 1, label, SP_PLOT_BARS, bx, by, bins);
  if (nccl)
    {
      /* NCCL's errors over the same bins, as crosses on the bin centres */
      g_autofree double *ny = g_new0 (double, bins);
      for (gsize i = 0; i < n; i++)
        if (ops[i].nccl_samples > 0)
          {
            gsize b = (gsize) floor ((100 * ops[i].nccl_error - start) / w);
            ny[MIN (b, bins - 1)] += 1;
          }
      /* empty bins get no cross */
      g_autofree double *cx = g_new (double, bins);
      g_autofree double *cy = g_new (double, bins);
      gsize m = 0;
      for (gsize b = 0; b < bins; b++)
        if (ny[b] > 0)
          cx[m] = bx[b], cy[m] = ny[b], m++;
      sp_plot_add_series (plot, 1, "NCCL's estimate, ops per bin", SP_PLOT_CROSSES, cx, cy, m);
    }
  return sp_plot_save (plot, path, error);
}

/* SpCompareProgressFn: the join's count into the progress line. */
static void
compare_progress (guint64 done, guint64 total, gpointer data)
{
  sp_progress_set_total (data, total);
  sp_progress_set (data, done);
}

int
sp_cmd_compare (int argc, char **argv)
{
  g_autofree char *format_text = NULL, *plot_path = NULL, *top_text = NULL;
  gboolean quiet = FALSE;
  GOptionEntry entries[] = {
    { "format", 'f', 0, G_OPTION_ARG_STRING, &format_text,
      "text (aggregates + worst ops, default), csv (one row per op) or json (everything)",
      "FORMAT" },
    { "plot", 0, 0, G_OPTION_ARG_FILENAME, &plot_path,
      "also draw measured vs simulated time per op and the error distribution (.png or .svg)",
      "FILE" },
    { "top", 0, 0, G_OPTION_ARG_STRING, &top_text, "how many of the worst ops to list (default 10)",
      "N" },
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, SP_PROGRESS_QUIET_HELP, NULL },
    { NULL },
  };
  int status = SP_EXIT_OK;
  if (!sp_cli_parse (
        CMD, "SIM.h5 MEASURED.h5", "Compare a simulated and a measured trace of the same plan.",
        "Rows are joined on (op_id, iter, rank); rows whose status is not ok in either trace\n"
        "are left out and counted.  Per op, error = simulated / measured - 1 of the median\n"
        "durations; aggregates: median, p90 and worst |error| and the median signed error,\n"
        "overall and by collective kind, size band and group family.  When the measured\n"
        "trace carries NCCL's own estimate of each op (the nccl backend, ncclGroupSimulateEnd),\n"
        "its error is reported beside the simulator's, in every format and in the plot.\n"
        "Each trace records whether it was measured or simulated: a simulated MEASURED.h5\n"
        "(the arguments swapped, or two simulations) is refused; two measured traces\n"
        "compare one run with another.",
        entries, &argc, &argv, &status))
    return status;
  SpFormat format;
  if (!sp_cli_format (CMD, format_text,
                      (1u << SP_FORMAT_TEXT) | (1u << SP_FORMAT_JSON) | (1u << SP_FORMAT_CSV),
                      &format))
    return SP_EXIT_USAGE;
  guint32 top = 10;
  if (!sp_cli_u32 (CMD, "--top", top_text, 0, 1000000, &top))
    return SP_EXIT_USAGE;
  if (argc != 3)
    return sp_cli_fail (CMD, SP_EXIT_USAGE,
                        "expected two traces, SIM.h5 and MEASURED.h5, got %d arguments "
                        "(see 'shardplan compare --help')", argc - 1);
  if (plot_path && sp_plot_kind (plot_path) == NULL)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "--plot '%s' must end in .png or .svg", plot_path);
  g_autoptr (SpCliFiles) files = sp_cli_files_new (CMD);
  sp_cli_files_input (files, "SIM.h5 argument", argv[1]);
  sp_cli_files_input (files, "MEASURED.h5 argument", argv[2]);
  sp_cli_files_output (files, "--plot", plot_path);
  if (!sp_cli_files_check (files))
    return SP_EXIT_USAGE;
  g_autoptr (GError) error = NULL;
  g_autoptr (SpTrace) sim = sp_trace_open (argv[1], &error);
  if (sim == NULL)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "%s", error->message);
  g_autoptr (SpTrace) measured = sp_trace_open (argv[2], &error);
  if (measured == NULL)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "%s", error->message);
  SpProgress *progress = sp_progress_new (CMD, 0, "rows read and joined", quiet);
  g_autoptr (SpCompare) cmp = sp_compare_traces_full (sim, argv[1], measured, argv[2],
                                                      compare_progress, progress, &error);
  sp_progress_free (progress);
  if (cmp == NULL)
    return sp_cli_error (CMD, g_steal_pointer (&error));
  for (int i = 1; i <= 2; i++)
    {
      SpTrace *t = i == 1 ? sim : measured;
      if (!sp_trace_is_complete (t))
        fprintf (stderr, "shardplan " CMD ": warning: %s is partial (%s)\n", argv[i],
                 sp_trace_incomplete_reason (t));
    }
  warn_unread_env (sim, measured, argv[2]);
  if (plot_path != NULL && !write_plot (cmp, plot_path, &error))
    return sp_cli_error (CMD, g_steal_pointer (&error));

  if (format == SP_FORMAT_CSV)
    {
      g_autofree char *csv = sp_compare_to_csv (cmp);
      fputs (csv, stdout);
    }
  else if (format == SP_FORMAT_JSON)
    {
      g_autofree char *json = sp_compare_to_json (cmp, top);
      fputs (json, stdout);
    }
  else
    print_text (cmp, top);
  if (!sp_cli_stdout_flushed ())
    return sp_cli_fail (CMD, SP_EXIT_FAILURE, "cannot write to standard output");
  gsize n_ops = 0;
  sp_compare_ops (cmp, &n_ops);
  if (!quiet)
    sp_cli_wrote (CMD, plot_path, "plot of %" G_GSIZE_FORMAT " %s", n_ops,
                  sp_cli_plural (n_ops, "op", "ops"));
  return SP_EXIT_OK;
}
