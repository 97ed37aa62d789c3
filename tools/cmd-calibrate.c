/* `shardplan calibrate MEASURED.h5 … --topology T -o calibrated.ini`: fit
 * the simulator's link and protocol parameters to measured collectives and
 * write the calibrated topology (shardplan/calibrate.h for the data,
 * shardplan/calibrate-fit.h for the fit). */
#include "config.h"
#include "cli.h"
#include "commands.h"
#include "progress.h"
#include "shardplan/shardplan.h"
#include "shardplan/calibrate.h"
#include "shardplan/calibrate-fit.h"

#include <math.h>
#include <string.h>

#define CMD "calibrate"

static const char description[] =
  "Reads the ok, timed collective rows on groups of 2+ ranks (all_reduce,\n"
  "all_gather, reduce_scatter, all_to_all, broadcast, reduce, send / recv, p2p\n"
  "between its sender and receiver; composite spans, kernels and collectives on\n"
  "one rank, which the simulator gives no time, are left out) of measured traces\n"
  "('shardplan run', 'shardplan trace import-nccl-tests'),\n"
  "takes each op's median time over iterations and ranks, and fits by least\n"
  "squares on log(simulated / measured time) (Levenberg-Marquardt):\n"
  "  [intra] latency_us, [calibration] intra_efficiency   (ops with 2+ ranks on a node)\n"
  "  [inter] latency_us, [calibration] nic_efficiency     (ops spanning 2+ nodes)\n"
  "  [calibration] <proto>_overhead_us   (protocols the model chooses for the ops)\n"
  "Parameters the data does not determine keep their value; the report says why.\n"
  "Each fitted value comes with its standard error (s^2 (J^T J)^-1 over the ops\n"
  "fitted; none with --loss trimmed), and pairs whose estimates correlate at\n"
  "|r| >= 0.95 are named: the data fix their combination, not each.\n"
  "[inter] step_floor_us and inject_copy_us are not fitted: they are kept as\n"
  "given.\n"
  "Each trace's ops are simulated with the NCCL_ALGO / NCCL_PROTO /\n"
  "NCCL_NVLS_ENABLE=0 its run had (its /meta/env: every NCCL_* variable of a\n"
  "'shardplan run'; what NCCL_DEBUG=INFO printed in an nccl-tests log), in\n"
  "place of the topology's [nccl]; a value NCCL refuses is left out, with a\n"
  "warning.\n"
  "The calibrated topology (with a comment block on the fit) is written to -o\n"
  "atomically; estimate, sim and sweep read it like any other topology.  It\n"
  "carries the standard errors, correlations and the fit's residual s\n"
  "([calibration] std_errors, correlations, residual_sd), from which estimate\n"
  "gives each estimate its own standard error.\n"
  "\n"
  "  --holdout size:>=BYTES | size:<BYTES | size:=BYTES[,BYTES...] | ranks:N | file:PATH\n"
  "        keep those ops out of the fit and report the error on them (file:PATH\n"
  "        holds out the ops of one trace; it is read even if not listed).\n"
  "  --sim-model analytic (default) | des | nccl   the simulator used as forward\n"
  "        model (nccl: NCCL's own tuning formula, the baseline).\n"
  "  --loss least-squares (default) | soft-l1 | trimmed   soft-l1 is quadratic\n"
  "        below 10 % log error and linear above, so that a few ops slowed by a\n"
  "        preempted rank or a busy machine do not drag the fit; trimmed (least\n"
  "        trimmed squares) fits the half of the ops, plus one, that agree best\n"
  "        with the model and ignores the rest however far off (runs on a shared\n"
  "        fabric where many sizes were disturbed); the report lists the ops it\n"
  "        left out and their error.  It describes one run best; to predict\n"
  "        other runs, soft-l1 (bench/RESULTS.md).\n"
  "  --format text (default) | json     the report on standard output.\n"
  "\n"
  "Traces of fewer ranks than the topology (e.g. runs on 2 and 8 nodes, the\n"
  "topology at --nodes 128) are placed on its first nodes, or where the trace's\n"
  "/meta/cluster says its ranks ran (node and local rank; e.g. a 10-node x 1-GPU\n"
  "nccl-tests run on one GPU of each of 10 nodes of a 10 x 8 topology); a\n"
  "/meta/cluster with a rank outside the topology is refused.\n"
  "\n"
  "Exit status: 0 ok; 2 bad input (unreadable trace, a world size larger than\n"
  "the topology's, ranks run where the topology has none, no usable op, a\n"
  "hold-out that leaves nothing to fit or holds out nothing); nothing is\n"
  "written then.\n"
  "\n"
  "Example: shardplan calibrate measured.h5 --topology cpu-shm --holdout size:>=1M\n"
  "           -o calibrated.ini";

/* A name fit for a one-line comment: control characters become '?'. */
static char *
comment_safe (const char *s)
{
  char *c = g_strdup (s);
  for (char *p = c; *p; p++)
    if ((unsigned char) *p < 0x20 || *p == 0x7f)
      *p = '?';
  return c;
}

static char *
format_value (double v)
{
  return g_strdup_printf ("%.6g", v);
}

static const char *const proto_names[3] = { "ll", "ll128", "simple" };

/* "ran with NCCL_ALGO=… NCCL_PROTO=… NCCL_NVLS_ENABLE=…" that input `s` ran
 * with (its /meta/env), and "NCCL 2.16.5, without NVLSTree, PAT" where its
 * NCCL lacked algorithms, or NULL: its ops are simulated so (g_free). */
static char *
source_env (const SpCalibData *data, guint32 s, const SpCalibResult *res)
{
  if (!sp_calib_fit_reads_nccl_env (sp_calib_result_topology (res)))
    return NULL;
  GString *t = g_string_new (NULL);
  for (guint k = 0; k < SP_CALIB_N_NCCL_ENV; k++)
    {
      const char *v = sp_calib_data_source_env (data, s, k);
      g_autofree char *shown = v ? sp_topo_nccl_excerpt (v) : NULL; /* the trace's: cut */
      if (v != NULL)
        g_string_append_printf (t, "%s%s=%s", t->len ? " " : "ran with ", sp_calib_nccl_env_names[k],
                                shown);
    }
  guint8 lacking = 0;
  const char *version = sp_calib_data_source_nccl_version (data, s, &lacking);
  if (version != NULL && lacking != 0)
    {
      g_autofree char *shown = sp_topo_nccl_excerpt (version);
      g_autofree char *names = sp_topo_nccl_algos_text (lacking);
      g_string_append_printf (t, "%sNCCL %s, without %s", t->len ? "; " : "", shown, names);
    }
  return g_string_free (t, t->len == 0);
}

/* A standard error for the report: "" when not fitted (NAN),
 * "undetermined" when the data do not determine it (INFINITY). */
static char *
std_error_text (double se)
{
  if (isnan (se))
    return g_strdup ("");
  if (!isfinite (se))
    return g_strdup ("undetermined");
  return g_strdup_printf ("±%.3g", se);
}

/* Estimates correlated this strongly are reported: the data determine a
 * combination of the two rather than each. */
#define CORRELATED 0.95

/* "correlated: A and B (-0.99), ...: the data determine a combination of
 * each pair, not each" or NULL when no pair of fitted parameters is. */
static char *
correlated_text (const SpCalibResult *res)
{
  GString *t = g_string_new (NULL);
  for (guint a = 0; a < SP_CALIB_N_PARAMS; a++)
    for (guint b = a + 1; b < SP_CALIB_N_PARAMS; b++)
      {
        double r = sp_calib_result_correlation (res, a, b);
        if (!isnan (r) && fabs (r) >= CORRELATED)
          g_string_append_printf (t, "%s%s and %s (%+.2f)", t->len ? ", " : "correlated: ",
                                  sp_calib_param_name (a), sp_calib_param_name (b), r);
      }
  if (t->len == 0)
    return g_string_free (t, TRUE);
  g_string_append (t, ": the data determine a combination of each pair better than either; "
                      "check the fit on other group sizes before trusting it there");
  return g_string_free (t, FALSE);
}

/* --loss trimmed: the fit points the final fit left out, their error
 * summary after calibration in *out_stats; 0 (and no stats) otherwise. */
static gsize
trimmed_stats (const SpCalibData *data, const SpCalibResult *res, SpCalibErrorStats *out_stats)
{
  const gboolean *trimmed = sp_calib_result_trimmed (res);
  if (trimmed == NULL)
    return 0;
  gsize n_pts = 0;
  const SpCalibPoint *pts = sp_calib_data_points (data, &n_pts);
  const double *after = sp_calib_result_sim_after (res);
  g_autofree double *e = g_new (double, n_pts + 1);
  gsize k = 0;
  for (gsize i = 0; i < n_pts; i++)
    if (trimmed[i])
      e[k++] = after[i] / pts[i].measured_ns - 1.0;
  sp_calib_error_stats (e, k, out_stats);
  return k;
}

/* The ops a trimmed fit left out, as "all_gather 512 B (op 3)" (with more
 * than one input, "(op 3 of m2.h5)", the input's file name), the
 * first `max` of them and a count of the rest. */
static char *
trimmed_list (const SpCalibData *data, const SpCalibResult *res, guint max)
{
  const gboolean *trimmed = sp_calib_result_trimmed (res);
  gsize n_pts = 0;
  const SpCalibPoint *pts = sp_calib_data_points (data, &n_pts);
  gboolean several = sp_calib_data_n_sources (data) > 1;
  GString *t = g_string_new (NULL);
  guint shown = 0, rest = 0;
  for (gsize i = 0; trimmed != NULL && i < n_pts; i++)
    {
      if (!trimmed[i])
        continue;
      if (shown == max)
        {
          rest++;
          continue;
        }
      g_autofree char *base = g_path_get_basename (sp_calib_data_source_name (data, pts[i].source));
      g_autofree char *src = comment_safe (base);
      g_string_append_printf (t, "%s%s %" G_GUINT64_FORMAT " B (op %u%s%s)", shown ? ", " : "",
                              sp_coll_name (pts[i].coll) ? sp_coll_name (pts[i].coll) : "?",
                              pts[i].bytes, pts[i].op_id, several ? " of " : "",
                              several ? src : "");
      shown++;
    }
  if (rest > 0)
    g_string_append_printf (t, " and %u more", rest);
  return g_string_free (t, FALSE);
}

static void
report_text (FILE *out, const SpCalibData *data, const SpCalibResult *res, const char *topology,
             const char *holdout, const SpCalibOptions *opt, double seconds, const char *output)
{
  const SpCalibCounts *c = sp_calib_data_counts (data);
  fprintf (out, "inputs:     ");
  for (guint32 s = 0; s < sp_calib_data_n_sources (data); s++)
    {
      g_autofree char *env = source_env (data, s, res);
      fprintf (out, "%s%s%s%s%s", s ? ", " : "", sp_calib_data_source_name (data, s),
               env ? " (" : "", env ? env : "", env ? ")" : "");
    }
  guint32 world = sp_topo_world_size (sp_calib_result_topology (res));
  fprintf (out, "\ntopology:   %s (%u %s), %s model, %s loss\n", topology, world,
           sp_cli_plural (world, "rank", "ranks"), sp_sim_model_name (opt->model),
           sp_calib_loss_name (opt->loss));
  g_autofree char *left_out = sp_calib_counts_left_out (c);
  fprintf (out, "rows:       %" G_GUINT64_FORMAT " read, %" G_GUINT64_FORMAT " used; left out: %s\n",
           c->rows, c->used, left_out);
  fprintf (out, "ops:        %" G_GSIZE_FORMAT " fitted, %" G_GSIZE_FORMAT " held out (%s)\n",
           sp_calib_data_n_fit (data), sp_calib_data_n_holdout (data), holdout);
  fprintf (out, "fit:        %u Levenberg-Marquardt iterations, rms log error %.3f -> %.3f, %.2f s\n\n",
           sp_calib_result_iterations (res), sp_calib_result_rms_log_before (res),
           sp_calib_result_rms_log_after (res), seconds);
  fprintf (out, "%-34s %12s %12s %12s\n", "parameter", "before", "after", "std. error");
  for (guint p = 0; p < SP_CALIB_N_PARAMS; p++)
    {
      double before, after;
      gboolean fitted, moved;
      const char *why;
      sp_calib_result_param (res, p, &before, &after, &fitted, &moved, &why);
      g_autofree char *b = format_value (before);
      g_autofree char *a = format_value (after);
      g_autofree char *se = std_error_text (sp_calib_result_std_error (res, p));
      fprintf (out, "%-34s %12s %12s %12s  %s%s\n", sp_calib_param_name (p), b, a, se,
               !fitted ? "kept: " : moved ? "moved" : "fitted, unchanged", fitted ? "" : why);
    }
  g_autofree char *corr = correlated_text (res);
  if (corr != NULL)
    fprintf (out, "%s\n", corr);
  fprintf (out, "\nerror = simulated / measured - 1 per op\n");
  fprintf (out, "%-22s %6s %14s %11s %13s\n", "", "ops", "median |err|", "p90 |err|",
           "worst |err|");
  for (int h = 0; h < 2; h++)
    for (int a = 0; a < 2; a++)
      {
        const SpCalibErrorStats *st = sp_calib_result_errors (res, h, a);
        if (st->n == 0)
          continue;
        g_autofree char *label = g_strdup_printf ("%s, %s", h ? "held out" : "fit set",
                                                  a ? "calibrated" : "input");
        fprintf (out, "%-22s %6u %12.1f %% %9.1f %% %11.1f %%\n", label, st->n,
                 100 * st->median_abs, 100 * st->p90_abs, 100 * st->worst_abs);
      }
  SpCalibErrorStats tst;
  gsize n_trim = trimmed_stats (data, res, &tst);
  if (sp_calib_result_trimmed (res) != NULL)
    {
      fprintf (out, "%-22s %6u %12.1f %% %9.1f %% %11.1f %%\n", "  trimmed, calibrated",
               (guint) n_trim, 100 * tst.median_abs, 100 * tst.p90_abs, 100 * tst.worst_abs);
      g_autofree char *list = trimmed_list (data, res, 8);
      fprintf (out, "trimmed: the final fit left out the %" G_GSIZE_FORMAT " of %" G_GSIZE_FORMAT
               " fitted ops that agree least with the model (counted in the fit set above)%s%s\n",
               n_trim, sp_calib_data_n_fit (data), n_trim ? ": " : "", list);
    }
  guint protos = sp_calib_result_protocols (res);
  fprintf (out, "\nprotocols the calibrated model chooses:");
  for (guint p = 0; p < 3; p++)
    if (protos & (1u << p))
      fprintf (out, " %s", proto_names[p]);
  fprintf (out, "\nwrote %s\n", output);
}

static void
add_stats (JsonBuilder *b, const char *name, const SpCalibErrorStats *st)
{
  json_builder_set_member_name (b, name);
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "ops");
  json_builder_add_int_value (b, st->n);
  json_builder_set_member_name (b, "median_abs_error");
  json_builder_add_double_value (b, st->median_abs);
  json_builder_set_member_name (b, "p90_abs_error");
  json_builder_add_double_value (b, st->p90_abs);
  json_builder_set_member_name (b, "worst_abs_error");
  json_builder_add_double_value (b, st->worst_abs);
  json_builder_end_object (b);
}

static char *
report_json (const SpCalibData *data, const SpCalibResult *res, const char *topology,
             const char *holdout, const SpCalibOptions *opt, double seconds, const char *output)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "inputs");
  json_builder_begin_array (b);
  for (guint32 s = 0; s < sp_calib_data_n_sources (data); s++)
    json_builder_add_string_value (b, sp_calib_data_source_name (data, s));
  json_builder_end_array (b);
  /* per input, the NCCL_ALGO / NCCL_PROTO its ops were simulated with */
  json_builder_set_member_name (b, "input_nccl_env");
  json_builder_begin_array (b);
  for (guint32 s = 0; s < sp_calib_data_n_sources (data); s++)
    {
      json_builder_begin_object (b);
      for (guint k = 0; k < SP_CALIB_N_NCCL_ENV && sp_calib_fit_reads_nccl_env (sp_calib_result_topology (res)); k++)
        {
          const char *v = sp_calib_data_source_env (data, s, k);
          if (v == NULL)
            continue;
          json_builder_set_member_name (b, sp_calib_nccl_env_names[k]);
          json_builder_add_string_value (b, v);
        }
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  /* per input, the NCCL version its trace records, whose algorithms its
   * ops were simulated with (null: not known, or CPU ranks, which run MPI) */
  json_builder_set_member_name (b, "input_nccl_version");
  json_builder_begin_array (b);
  gboolean reads = sp_calib_fit_reads_nccl_env (sp_calib_result_topology (res));
  for (guint32 s = 0; s < sp_calib_data_n_sources (data); s++)
    {
      const char *v = reads ? sp_calib_data_source_nccl_version (data, s, NULL) : NULL;
      if (v != NULL)
        json_builder_add_string_value (b, v);
      else
        json_builder_add_null_value (b);
    }
  json_builder_end_array (b);
  /* per input, the NCCL variables it ran with that the model does not
   * follow (sp_sim_nccl_env_unread): {name: value} */
  json_builder_set_member_name (b, "input_unread_nccl_env");
  json_builder_begin_array (b);
  for (guint32 s = 0; s < sp_calib_data_n_sources (data); s++)
    {
      json_builder_begin_object (b);
      g_autofree gboolean *flagged = NULL;
      g_autofree char *unread = sp_calib_fit_unread_env (sp_calib_result_topology (res), data, s,
                                                         &flagged);
      const char *const *names, *const *values;
      guint n = unread ? sp_calib_data_source_nccl_vars (data, s, &names, &values) : 0;
      for (guint i = 0; i < n; i++)
        if (flagged[i])
          {
            /* the name is one of NCCL's; the value as the warning shows it */
            g_autofree char *shown = sp_topo_nccl_excerpt (values[i]);
            json_builder_set_member_name (b, names[i]);
            json_builder_add_string_value (b, shown);
          }
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  json_builder_set_member_name (b, "topology");
  json_builder_add_string_value (b, topology);
  json_builder_set_member_name (b, "model");
  json_builder_add_string_value (b, sp_sim_model_name (opt->model));
  json_builder_set_member_name (b, "loss");
  json_builder_add_string_value (b, sp_calib_loss_name (opt->loss));
  json_builder_set_member_name (b, "holdout");
  json_builder_add_string_value (b, holdout);
  json_builder_set_member_name (b, "output");
  json_builder_add_string_value (b, output);
  const SpCalibCounts *c = sp_calib_data_counts (data);
  json_builder_set_member_name (b, "rows");
  json_builder_begin_object (b);
  const struct { const char *k; guint64 v; } counts[] = {
    { "read", c->rows }, { "used", c->used }, { "not_ok", c->not_ok },
    { "composite", c->composite }, { "not_collective", c->not_collective },
    { "one_rank", c->one_rank },
    { "modelled", c->modelled }, { "zero", c->zero },
  };
  for (guint i = 0; i < G_N_ELEMENTS (counts); i++)
    {
      json_builder_set_member_name (b, counts[i].k);
      json_builder_add_int_value (b, (gint64) counts[i].v);
    }
  json_builder_end_object (b);
  json_builder_set_member_name (b, "fit_ops");
  json_builder_add_int_value (b, (gint64) sp_calib_data_n_fit (data));
  json_builder_set_member_name (b, "holdout_ops");
  json_builder_add_int_value (b, (gint64) sp_calib_data_n_holdout (data));
  json_builder_set_member_name (b, "iterations");
  json_builder_add_int_value (b, sp_calib_result_iterations (res));
  json_builder_set_member_name (b, "fit_seconds");
  json_builder_add_double_value (b, seconds);
  json_builder_set_member_name (b, "rms_log_error_before");
  json_builder_add_double_value (b, sp_calib_result_rms_log_before (res));
  json_builder_set_member_name (b, "rms_log_error_after");
  json_builder_add_double_value (b, sp_calib_result_rms_log_after (res));
  json_builder_set_member_name (b, "parameters");
  json_builder_begin_array (b);
  for (guint p = 0; p < SP_CALIB_N_PARAMS; p++)
    {
      double before, after;
      gboolean fitted, moved;
      const char *why;
      sp_calib_result_param (res, p, &before, &after, &fitted, &moved, &why);
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "name");
      json_builder_add_string_value (b, sp_calib_param_name (p));
      json_builder_set_member_name (b, "before");
      json_builder_add_double_value (b, before);
      json_builder_set_member_name (b, "after");
      json_builder_add_double_value (b, after);
      json_builder_set_member_name (b, "fitted");
      json_builder_add_boolean_value (b, fitted);
      json_builder_set_member_name (b, "moved");
      json_builder_add_boolean_value (b, moved);
      json_builder_set_member_name (b, "reason");
      if (why)
        json_builder_add_string_value (b, why);
      else
        json_builder_add_null_value (b);
      /* a number; "undetermined" where the data do not determine it; null
       * when not fitted */
      double se = sp_calib_result_std_error (res, p);
      json_builder_set_member_name (b, "std_error");
      if (isnan (se))
        json_builder_add_null_value (b);
      else if (!isfinite (se))
        json_builder_add_string_value (b, "undetermined");
      else
        json_builder_add_double_value (b, se);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  /* every pair of fitted parameters with a correlation */
  json_builder_set_member_name (b, "correlations");
  json_builder_begin_array (b);
  for (guint p = 0; p < SP_CALIB_N_PARAMS; p++)
    for (guint q = p + 1; q < SP_CALIB_N_PARAMS; q++)
      {
        double r = sp_calib_result_correlation (res, p, q);
        if (isnan (r))
          continue;
        json_builder_begin_object (b);
        json_builder_set_member_name (b, "a");
        json_builder_add_string_value (b, sp_calib_param_name (p));
        json_builder_set_member_name (b, "b");
        json_builder_add_string_value (b, sp_calib_param_name (q));
        json_builder_set_member_name (b, "r");
        json_builder_add_double_value (b, r);
        json_builder_end_object (b);
      }
  json_builder_end_array (b);
  json_builder_set_member_name (b, "errors");
  json_builder_begin_object (b);
  for (int h = 0; h < 2; h++)
    {
      json_builder_set_member_name (b, h ? "holdout" : "fit");
      json_builder_begin_object (b);
      add_stats (b, "before", sp_calib_result_errors (res, h, FALSE));
      add_stats (b, "after", sp_calib_result_errors (res, h, TRUE));
      json_builder_end_object (b);
    }
  json_builder_end_object (b);
  const gboolean *trimmed = sp_calib_result_trimmed (res);
  if (trimmed != NULL)
    {
      /* --loss trimmed: the ops the final fit left out, and their errors */
      SpCalibErrorStats tst;
      trimmed_stats (data, res, &tst);
      json_builder_set_member_name (b, "trimmed");
      json_builder_begin_object (b);
      add_stats (b, "after", &tst);
      json_builder_set_member_name (b, "ops");
      json_builder_begin_array (b);
      gsize n_pts = 0;
      const SpCalibPoint *pts = sp_calib_data_points (data, &n_pts);
      for (gsize i = 0; i < n_pts; i++)
        if (trimmed[i])
          {
            json_builder_begin_object (b);
            json_builder_set_member_name (b, "input");
            json_builder_add_string_value (b, sp_calib_data_source_name (data, pts[i].source));
            json_builder_set_member_name (b, "op");
            json_builder_add_int_value (b, pts[i].op_id);
            json_builder_set_member_name (b, "collective");
            json_builder_add_string_value (b, sp_coll_name (pts[i].coll) ? sp_coll_name (pts[i].coll) : "?");
            json_builder_set_member_name (b, "bytes");
            json_builder_add_int_value (b, (gint64) pts[i].bytes);
            json_builder_end_object (b);
          }
      json_builder_end_array (b);
      json_builder_end_object (b);
    }
  json_builder_set_member_name (b, "protocols");
  json_builder_begin_array (b);
  guint protos = sp_calib_result_protocols (res);
  for (guint p = 0; p < 3; p++)
    if (protos & (1u << p))
      json_builder_add_string_value (b, proto_names[p]);
  json_builder_end_array (b);
  json_builder_end_object (b);
  return sp_cli_json_text (b, TRUE);
}

/* The INI: a comment block on the fit, then the topology. */
static char *
calibrated_ini (const SpCalibData *data, const SpCalibResult *res, const char *topology,
                const char *holdout, const SpCalibOptions *opt)
{
  GString *s = g_string_new (NULL);
  g_autofree char *topo_safe = comment_safe (topology);
  g_string_append_printf (s, "# Calibrated by shardplan calibrate %s (%s model, %s loss) from "
                          "topology %s\n", sp_version (), sp_sim_model_name (opt->model),
                          sp_calib_loss_name (opt->loss), topo_safe);
  gsize n_pts = 0;
  const SpCalibPoint *pts = sp_calib_data_points (data, &n_pts);
  for (guint32 src = 0; src < sp_calib_data_n_sources (data); src++)
    {
      gsize n = 0;
      for (gsize i = 0; i < n_pts; i++)
        n += pts[i].source == src;
      g_autofree char *name = comment_safe (sp_calib_data_source_name (data, src));
      g_autofree char *env = source_env (data, src, res);
      g_string_append_printf (s, "# input: %s (%" G_GSIZE_FORMAT " ops%s%s)\n", name, n,
                              env ? "; " : "", env ? env : "");
      g_autofree char *unread = sp_calib_fit_unread_env (sp_calib_result_topology (res), data,
                                                         src, NULL);
      if (unread != NULL)
        g_string_append_printf (s, "#   ran with, not modelled: %s\n", unread);
    }
  g_autofree char *ho_safe = comment_safe (holdout);
  g_string_append_printf (s, "# fit on %" G_GSIZE_FORMAT " ops; held out (%s): %" G_GSIZE_FORMAT
                          " ops\n", sp_calib_data_n_fit (data), ho_safe,
                          sp_calib_data_n_holdout (data));
  for (int h = 0; h < 2; h++)
    {
      const SpCalibErrorStats *b = sp_calib_result_errors (res, h, FALSE);
      const SpCalibErrorStats *a = sp_calib_result_errors (res, h, TRUE);
      if (b->n == 0)
        continue;
      g_string_append_printf (s, "# median |simulated/measured - 1| on the %s: %.1f %% before, "
                              "%.1f %% after\n", h ? "held-out ops" : "fitted ops",
                              100 * b->median_abs, 100 * a->median_abs);
    }
  SpCalibErrorStats tst;
  gsize n_trim = trimmed_stats (data, res, &tst);
  if (sp_calib_result_trimmed (res) != NULL)
    g_string_append_printf (s, "# trimmed: the final fit left out %" G_GSIZE_FORMAT " of the fitted "
                            "ops, those that agree least with the model (median %.1f %% after)\n",
                            n_trim, 100 * tst.median_abs);
  for (guint p = 0; p < SP_CALIB_N_PARAMS; p++)
    {
      double before, after;
      gboolean fitted, moved;
      const char *why;
      sp_calib_result_param (res, p, &before, &after, &fitted, &moved, &why);
      if (!fitted)
        g_string_append_printf (s, "# %s: kept at %.6g (%s)\n", sp_calib_param_name (p), before,
                                why);
      else
        {
          g_autofree char *se = std_error_text (sp_calib_result_std_error (res, p));
          g_string_append_printf (s, "# %s: %.6g -> %.6g%s%s%s%s\n", sp_calib_param_name (p),
                                  before, after, moved ? "" : " (unchanged)", *se ? " (" : "",
                                  se, *se ? ")" : "");
        }
    }
  g_autofree char *corr = correlated_text (res);
  if (corr != NULL)
    g_string_append_printf (s, "# %s\n", corr);
  g_string_append (s, "\n");
  g_autofree char *ini = sp_topo_to_ini (sp_calib_result_topology (res));
  g_string_append (s, ini);
  return g_string_free (s, FALSE);
}

/* SpCalibProgressFn: the fit's estimates into the progress line. */
static void
calibrate_progress (guint64 done, guint64 total, gpointer data)
{
  (void) total; /* not known: the line shows the count */
  sp_progress_set (data, done);
}

int
sp_cmd_calibrate (int argc, char **argv)
{
  g_autofree char *topology = NULL, *nodes_s = NULL, *output = NULL, *holdout_s = NULL,
                  *model_s = NULL, *format_s = NULL, *loss_s = NULL;
  gboolean quiet = FALSE;
  GOptionEntry entries[] = {
    { "topology", 't', 0, G_OPTION_ARG_FILENAME, &topology,
      "Topology INI file or preset the traces were measured on (required)", "FILE|PRESET" },
    { "nodes", 'n', 0, G_OPTION_ARG_STRING, &nodes_s, "Node count (default: the topology's)", "N" },
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Calibrated topology INI to write (required)",
      "FILE" },
    { "holdout", 0, 0, G_OPTION_ARG_STRING, &holdout_s,
      "Ops kept out of the fit: size:>=BYTES, size:<BYTES, size:=BYTES[,BYTES...], ranks:N or file:PATH", "SPEC" },
    { "sim-model", 0, 0, G_OPTION_ARG_STRING, &model_s, "Forward model: analytic (default), des, or nccl (NCCL's own tuning formula)",
      "MODEL" },
    /* --model: this command's name for it before --sim-model was every
     * command's (--model is the workload in plan and sweep) */
    { "model", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING, &model_s, NULL, NULL },
    { "loss", 0, 0, G_OPTION_ARG_STRING, &loss_s,
      "least-squares (default), soft-l1 (robust to a few outlying ops) or trimmed (fits the best-agreeing majority)", "LOSS" },
    { "format", 'f', 0, G_OPTION_ARG_STRING, &format_s, "Report as text (default) or json",
      "text|json" },
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, SP_PROGRESS_QUIET_HELP, NULL },
    { NULL },
  };
  int status = SP_EXIT_OK;
  if (!sp_cli_parse (CMD, "MEASURED.h5 [MEASURED.h5 ...]",
                     "Fit the simulator's link and protocol parameters to measured traces.",
                     description, entries, &argc, &argv, &status))
    return status;
  SpFormat format;
  if (!sp_cli_format (CMD, format_s, (1u << SP_FORMAT_TEXT) | (1u << SP_FORMAT_JSON), &format))
    return SP_EXIT_USAGE;
  if (argc < 2)
    return sp_cli_fail (CMD, SP_EXIT_USAGE,
                        "expected at least one measured trace (see 'shardplan calibrate --help')");
  if (topology == NULL)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "--topology is required (a preset or an INI file)");
  if (output == NULL || output[0] == '\0')
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "-o/--output is required (the calibrated INI)");
  g_autoptr (SpCliFiles) files = sp_cli_files_new (CMD);
  sp_cli_files_inputs (files, "measured trace", argc - 1, argv + 1);
  sp_cli_files_input (files, "--topology", topology);
  if (holdout_s != NULL && g_str_has_prefix (holdout_s, "file:"))
    sp_cli_files_input (files, "--holdout", holdout_s + 5);
  sp_cli_files_output (files, "-o/--output", output);
  if (!sp_cli_files_check (files))
    return SP_EXIT_USAGE;
  guint32 nodes = 0;
  if (!sp_cli_u32 (CMD, "--nodes", nodes_s, 1, 1u << 24, &nodes))
    return SP_EXIT_USAGE;
  SpCalibOptions opt;
  sp_calib_options_init (&opt);
  if (model_s != NULL && !sp_sim_model_from_name (model_s, &opt.model))
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "--sim-model '%s' is not a model (accepted: des, analytic, nccl)", model_s);
  if (loss_s != NULL && !sp_calib_loss_from_name (loss_s, &opt.loss))
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "--loss '%s': expected least-squares, soft-l1 or trimmed",
                        loss_s);

  g_autoptr (GError) error = NULL;
  SpCalibHoldout holdout = { .kind = SP_CALIB_HOLDOUT_NONE };
  if (holdout_s != NULL && !sp_calib_holdout_parse (holdout_s, &holdout, &error))
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "%s", error->message);
  g_autofree char *holdout_file = holdout.file;      /* both freed with the command */
  g_autofree guint64 *holdout_sizes = holdout.sizes;
  g_autoptr (SpTopo) topo = sp_cli_topo_open (CMD, topology, nodes, &error);
  if (topo == NULL)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "%s", error->message);

  /* the inputs, plus a file:PATH hold-out that is not one of them */
  g_autoptr (SpCalibData) data = sp_calib_data_new ();
  /* inputs that are not measured: a warning once the fit stands, or part
   * of its one-line error when nothing measured is left to fit */
  g_autoptr (GString) not_measured = g_string_new (NULL);
  guint n_measured = 0;
  for (int i = 1; i <= argc; i++)
    {
      const char *path = i < argc ? argv[i] : holdout_file;
      if (path == NULL)
        break;
      gint64 twice = sp_calib_data_find_source (data, path);
      if (twice >= 0 && i < argc)
        return sp_cli_fail (CMD, SP_EXIT_USAGE, "%s is given twice (as %s and %s)", path,
                            sp_calib_data_source_name (data, (guint32) twice), path);
      if (twice >= 0)
        break; /* the hold-out file is one of the inputs */
      g_autoptr (SpTrace) trace = sp_trace_open (path, &error);
      if (trace == NULL
          || !sp_calib_data_add_trace_on (data, trace, path, sp_topo_spec (topo)->nodes,
                                          sp_topo_spec (topo)->gpus_per_node, &error))
        return sp_cli_fail (CMD, SP_EXIT_USAGE, "%s", error->message);
      const char *env_problem = sp_calib_data_source_env_problem (
          data, sp_calib_data_n_sources (data) - 1);
      if (env_problem != NULL && sp_calib_fit_reads_nccl_env (topo))
        {
          g_autofree char *shown = comment_safe (env_problem);
          fprintf (stderr, "shardplan " CMD ": warning: %s\n", shown);
        }
      g_autofree char *unread = sp_calib_fit_unread_env (topo, data,
                                                         sp_calib_data_n_sources (data) - 1, NULL);
      if (unread != NULL)
        {
          g_autofree char *where = comment_safe (path);
          fprintf (stderr, "shardplan " CMD ": warning: %s ran with %s, which the simulator "
                   "does not model (it assumes NCCL's defaults, aws-ofi-nccl's on EFA): their "
                   "effect on its times goes into %s\n", where, unread,
                   i < argc ? "the fitted values" : "its held-out error");
        }
      if (sp_trace_header (trace)->source == SP_TRACE_SOURCE_MEASURED)
        n_measured++;
      else
        g_string_append_printf (not_measured, "%s%s is a %s trace, not a measured one",
                                not_measured->len ? "; " : "", path,
                                sp_trace_source_name (sp_trace_header (trace)->source));
      if (!sp_trace_is_complete (trace))
        fprintf (stderr, "shardplan " CMD ": warning: %s is partial (%s)\n", path,
                 sp_trace_incomplete_reason (trace));
    }
  /* with no measured input, that is why nothing is left to fit */
  const char *why = n_measured == 0 ? not_measured->str : "";
  if (!sp_calib_data_apply_holdout (data, &holdout, &error))
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "%s%s%s", why, *why ? ": " : "", error->message);
  g_autofree char *holdout_text = sp_calib_holdout_to_string (&holdout);

  gint64 t0 = g_get_monotonic_time ();
  SpProgress *progress = sp_progress_new (CMD, 0, "collective estimates", quiet);
  if (sp_progress_active (progress))
    {
      opt.progress = calibrate_progress;
      opt.progress_data = progress;
    }
  g_autoptr (SpCalibResult) res = sp_calibrate_fit (topo, data, &opt, &error);
  sp_progress_free (progress);
  if (res == NULL && *why)
    g_prefix_error (&error, "%s: ", why);
  if (res == NULL)
    return sp_cli_error (CMD, g_steal_pointer (&error));
  if (not_measured->len)
    fprintf (stderr, "shardplan " CMD ": warning: %s\n", not_measured->str);
  if (sp_calib_result_errors_dropped (res))
    fprintf (stderr, "shardplan " CMD ": warning: the fit's correlations are not those of a "
                     "covariance to rounding, so %s carries no [calibration] std_errors: "
                     "estimate on it gives no standard error (the report still shows them)\n",
             output);
  double seconds = (double) (g_get_monotonic_time () - t0) / 1e6;

  g_autofree char *ini = calibrated_ini (data, res, topology, holdout_text, &opt);
  /* what we write must read back to the fitted topology */
  g_autoptr (SpTopo) check = sp_topo_load_data (ini, -1, output, &error);
  if (check == NULL)
    return sp_cli_fail (CMD, SP_EXIT_FAILURE, "internal error: the calibrated INI does not read "
                        "back: %s", error->message);
  if (!sp_cli_write_output (output, ini, strlen (ini), &error))
    return sp_cli_error (CMD, g_steal_pointer (&error));

  gboolean to_stdout = strcmp (output, "-") == 0;
  FILE *out = to_stdout ? stderr : stdout;
  if (format == SP_FORMAT_JSON)
    {
      g_autofree char *json = report_json (data, res, topology, holdout_text, &opt, seconds,
                                           output);
      fputs (json, out);
    }
  else
    report_text (out, data, res, topology, holdout_text, &opt, seconds, output);
  if (fflush (out) != 0 || ferror (out))
    return sp_cli_fail (CMD, SP_EXIT_FAILURE, "cannot write the report to standard %s",
                        out == stdout ? "output" : "error");
  if (!quiet)
    sp_cli_wrote (CMD, output, "calibrated topology");
  return SP_EXIT_OK;
}
