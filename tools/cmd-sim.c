/* `shardplan sim`: simulate a plan on a topology → the simulated trace
 * (HDF5, the schema of shardplan/trace.h) and a summary. */
#include "config.h"
#include "cli.h"
#include "commands.h"
#include "progress.h"
#include "shardplan/calibrate-fit.h"
#include "shardplan/shardplan.h"
#include "shardplan/sim.h"
#include "shardplan/trace.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#define CMD "sim"
#define TOP_OPS 20
/* created_utc of every simulated trace: simulation time has no wall-clock
 * date, and a fixed one keeps two runs of one plan byte-identical. */
#define SIM_CREATED_UTC "1970-01-01T00:00:00Z"

static const char description[] =
  "Simulates every op of the plan (sp_sim_run_plan_full: ops wait for their deps\n"
  "and their stream, collectives start when every member of their group is ready;\n"
  "a p2p op when its sender and receiver are).\n"
  "--contention (des only): step (default) runs the whole step on one flow\n"
  "network, so every collective shares links with the collectives running at the\n"
  "same time (other streams, other families); family costs each op once with\n"
  "the groups of its family contending, ops overlapping in time not; none costs\n"
  "every group alone (the only choice with --sim-model analytic).  The trace has\n"
  "one row per (op, rank that runs it); its run_id is derived from the plan digest so two runs\n"
  "of one plan on one topology give byte-identical files.  The summary lists the longest ops,\n"
  "totals per family and kind, the step time and the communication exposed\n"
  "after overlap with compute (step time minus the compute-only critical path).\n"
  "On a terminal, a simulation or a trace that takes more than a second shows\n"
  "its progress on stderr (--quiet: never, and no closing line).\n"
  "--std-error, on a topology 'shardplan calibrate' wrote with standard errors\n"
  "([calibration] std_errors): the step time's standard error from the\n"
  "calibrated values' errors and correlations, as 'shardplan estimate' gives a\n"
  "collective's (7 more simulations of the step, one per value a calibration\n"
  "can move, the ones it kept included: that is how the step is found to depend\n"
  "on them; up to 14 where a moved simulation fails and the value moves the\n"
  "other way; text: a '± (calibration)' line,\n"
  "JSON: \"calibration\": {\"std_error\" (of log step time, or \"undetermined\"),\n"
  "\"residual_sd\", \"undetermined\", \"not_fitted\"}).  It covers the fitted\n"
  "values only, not the model's own error, and not compute, which the\n"
  "calibration does not fit.\n"
  "\n"
  "Example: shardplan sim --plan plan.json --topology dgx-h100 --nodes 16 -o sim.h5";

/* "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" from the first 32 hex digits. */
static char *
uuid_of_digest (const char *hex)
{
  return g_strdup_printf ("%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16, hex + 20);
}

/* /meta/cluster of a simulated run: the topology's nodes (named node0…)
 * and block placement, clock offsets 0. */
static gboolean
set_cluster (SpTraceWriter *w, const SpTopo *topo, GError **error)
{
  const SpTopoSpec *spec = sp_topo_spec (topo);
  guint32 W = sp_topo_world_size (topo);
  g_autofree SpTraceNode *nodes = g_new0 (SpTraceNode, spec->nodes);
  g_autofree SpTraceRank *ranks = g_new0 (SpTraceRank, W);
  GPtrArray *names = g_ptr_array_new_with_free_func (g_free);
  for (guint32 n = 0; n < spec->nodes; n++)
    {
      char *name = g_strdup_printf ("node%u", n);
      g_ptr_array_add (names, name);
      nodes[n] = (SpTraceNode) { .node_id = n, .hostname = name, .n_gpus = spec->gpus_per_node,
                                 .gpu_model = spec->gpu_model };
    }
  for (guint32 r = 0; r < W; r++)
    {
      guint32 node, local;
      sp_topo_rank_location (topo, r, &node, &local);
      ranks[r] = (SpTraceRank) { .rank = r, .node_id = node, .local_rank = local,
                                 .device = (gint32) local, .clock_offset_ns = 0 };
    }
  gboolean ok = sp_trace_writer_set_cluster (w, nodes, spec->nodes, ranks, W, error);
  g_ptr_array_unref (names);
  return ok;
}

/* sp_calib_plan_step_ns, counted into a progress line. */
typedef struct {
  SpCalibPlanStep step;
  SpProgress *progress;
  guint64 runs;
} StepOn;

static gboolean
step_ns_on (const SpTopo *topo, gpointer user_data, double *out_ns, GError **error)
{
  StepOn *so = user_data;
  if (!sp_calib_plan_step_ns (topo, &so->step, out_ns, error))
    return FALSE;
  if (++so->runs > SP_CALIB_N_PARAMS)
    sp_progress_set_total (so->progress, 2 * SP_CALIB_N_PARAMS);
  sp_progress_set (so->progress, so->runs);
  return TRUE;
}

/* What --std-error found: the step's gradient in the calibrated values
 * and the standard error of log(step) it gives. */
typedef struct {
  gboolean on;
  SpCalibGradient g;
  double std_error;
  double residual_sd;
} StepError;

/* SpSimProgressFn: the simulator's count into the progress line. */
static void
sim_progress (guint64 done, guint64 total, gpointer data)
{
  sp_progress_set_total (data, total);
  sp_progress_set (data, done);
}

static gboolean
write_trace (const char *path, const SpTopo *topo, const SpPlan *plan, const SpGroups *groups,
             const SpSimResult *res, SpProgress *progress, guint64 *out_rows, GError **error)
{
  guint64 n_rows = 0;
  guint32 W = sp_topo_world_size (topo);
  g_autofree char *digest = sp_plan_digest (plan);
  g_autofree char *topo_ini = sp_topo_to_ini (topo);
  g_autofree char *both = g_strconcat (digest, topo_ini, NULL);
  g_autofree char *id_hex = g_compute_checksum_for_string (G_CHECKSUM_SHA256, both, -1);
  g_autofree char *run_id = uuid_of_digest (id_hex);
  SpTraceHeader h = { 0 };
  h.source = SP_TRACE_SOURCE_SIMULATED;
  h.producer = "shardplan sim";
  h.producer_version = sp_version ();
  h.clock = "simulated";
  h.timing_mode = "simulated";
  h.iters = 1;
  h.world_size = W;
  h.run_id = run_id;
  h.created_utc = SIM_CREATED_UTC;
  g_autoptr (SpTraceWriter) w = sp_trace_writer_new (path, &h, error);
  if (w == NULL || !sp_trace_writer_set_topology (w, topo, topo_ini, error)
      || !sp_trace_writer_set_plan (w, plan, NULL, error)
      || !sp_trace_writer_set_groups (w, groups, error) || !set_cluster (w, topo, error))
    return FALSE;
  /* per (family, rank) op sequence numbers: the ops the rank issued on
   * its group's communicator, as the executor counts them in plan order
   * (--mode isolated): a p2p op on its sender and receiver only; a
   * composite the executor issues itself (reduce_scatter_coalesced, qgZ's
   * all_to_all_quant_reduce) before its sub-ops, a MiCS hierarchical
   * all-gather (only its sub-ops run) not at all */
  guint32 *seq[SP_FAMILY_N] = { NULL }; /* allocated for the families the plan uses */
  GArray *buf = g_array_sized_new (FALSE, FALSE, sizeof (SpTraceRow), 4096);
  gboolean ok = TRUE;
  guint32 n_ops = sp_plan_n_ops (plan);
  for (guint32 o = 0; o < n_ops && ok; o++)
    {
      sp_progress_set (progress, o);
      const SpOp *op = sp_plan_op (plan, o);
      gboolean comp = sp_coll_is_composite (op->kind);
      gboolean kernel = op->family == SP_FAMILY_NONE;
      for (guint32 r = 0; r < W; r++)
        {
          guint64 s, e;
          if (!sp_sim_result_op_time (res, plan, o, r, &s, &e))
            continue;
          SpTraceRow row;
          sp_trace_row_init (&row);
          row.op_id = o;
          row.parent_op_id = op->parent;
          row.iter = 0;
          row.rank = r;
          guint32 gi, gr;
          if (!kernel && sp_plan_op_find (groups, op, r, &gi, &gr))
            {
              row.group_id = sp_trace_group_id (groups, op->family, gi);
              row.group_rank = gr;
              guint32 gs;
              sp_groups_members (groups, op->family, gi, &gs);
              row.group_size = gs;
              if (seq[op->family] == NULL)
                seq[op->family] = g_new0 (guint32, W);
              row.seq_in_group = op->kind == SP_COLL_HIER_ALL_GATHER ? 0 : seq[op->family][r]++;
            }
          row.coll = op->kind;
          row.dtype = op->dtype;
          row.redop = op->redop;
          row.flags = (comp ? SP_TRACE_FLAG_COMPOSITE : 0) | SP_TRACE_FLAG_MODELLED;
          row.status = SP_TRACE_STATUS_OK;
          row.count = op->count;
          row.bytes = op->bytes;
          row.t_enqueue_ns = (gint64) s;
          row.t_start_ns = (gint64) s;
          row.t_end_ns = (gint64) e;
          row.dur_ns = (gint64) (e - s);
          sp_trace_row_set_bandwidths (&row);
          g_array_append_val (buf, row);
          n_rows++;
          if (buf->len == 4096)
            {
              ok = sp_trace_writer_append (w, (SpTraceRow *) buf->data, buf->len, error);
              g_array_set_size (buf, 0);
              if (!ok)
                break;
            }
        }
    }
  if (ok && buf->len)
    ok = sp_trace_writer_append (w, (SpTraceRow *) buf->data, buf->len, error);
  if (ok)
    sp_progress_set (progress, n_ops);
  g_array_free (buf, TRUE);
  for (guint f = 0; f < SP_FAMILY_N; f++)
    g_free (seq[f]);
  if (!ok || !sp_trace_writer_finish (w, error))
    return FALSE;
  *out_rows = n_rows;
  return TRUE;
}

static gint
cmp_dur_desc (gconstpointer a, gconstpointer b, gpointer data)
{
  const SpSimResult *res = data;
  guint32 x = *(const guint32 *) a, y = *(const guint32 *) b;
  guint64 dx = sp_sim_result_op_duration (res, x), dy = sp_sim_result_op_duration (res, y);
  return dx > dy ? -1 : dx < dy ? 1 : (x < y ? -1 : x > y);
}

/* The text lines of --std-error after the step time.  The relative error
 * right-aligned where the times end (± is one character, two bytes), then
 * what it is in time: ±t below 10 %; beyond, the range, its lower end no
 * shorter than the compute-only path (the calibration moves the exposed
 * communication only); none past ×÷10, where the calibration does not
 * determine the step. */
static void
print_step_error (GString *out, const SpSimResult *res, const StepError *se)
{
  char buf[32], sd[32], rel[32];
  double step = (double) sp_sim_result_step_ns (res), sigma = se->std_error;
  g_autofree char *tail = NULL;
  if (step <= 0)
    g_strlcpy (rel, "-", sizeof rel); /* nothing to err */
  else if (!isfinite (sigma))
    g_strlcpy (rel, "undetermined", sizeof rel);
  else if (sigma < 0.0995)
    {
      /* no exponents, and digits enough for a step that is mostly compute */
      double pct = 100 * sigma;
      if (pct >= 1)
        g_snprintf (rel, sizeof rel, "±%.1f%%", pct);
      else if (pct >= 0.001)
        g_snprintf (rel, sizeof rel, "±%.2g%%", pct);
      else
        g_snprintf (rel, sizeof rel, "<±0.001%%");
      g_autofree char *t = sp_cli_time (step * sigma);
      tail = g_strdup_printf (" (±%s)", t);
    }
  else
    {
      g_strlcpy (rel, sp_cli_sigma_text (sigma, buf), sizeof rel);
      if (sigma <= log (10.0))
        {
          double floor_ns = (double) sp_sim_result_compute_only_ns (res);
          double lo_ns = MAX (step / exp (sigma), floor_ns);
          g_autofree char *lo = sp_cli_time (lo_ns);
          g_autofree char *hi = sp_cli_time (step * exp (sigma));
          tail = g_strdup_printf (" (%s to %s%s)", lo, hi,
                                  lo_ns == floor_ns ? "; the lower end is the compute-only path" : "");
        }
    }
  /* the label is 16 characters, the times' column 24 wide and 10 more */
  int pad = 10 - (int) g_utf8_strlen (rel, -1);
  g_string_append_printf (out, "± (calibration):%*s%s%s\n", 8 + MAX (pad, 0), "", rel,
                          tail ? tail : "");
  if (se->residual_sd > 0)
    g_string_append_printf (out, "  (the calibrated values' std_errors and correlations; not the "
                                 "model's own error, nor compute's; the fit's own ops scattered "
                                 "by %s around the model)\n",
                            sp_cli_sigma_text (se->residual_sd, sd));
  else
    g_string_append (out, "  (the calibrated values' std_errors and correlations; not the "
                          "model's own error, nor compute's)\n");
  if (se->g.undetermined)
    {
      g_autofree char *list = sp_cli_calib_params (se->g.undetermined, FALSE);
      g_string_append_printf (out, "  undetermined: the step depends on %s, which the "
                                   "calibration's ops did not determine\n", list);
    }
  if (se->g.not_fitted)
    {
      g_autofree char *list = sp_cli_calib_params (se->g.not_fitted, FALSE);
      g_string_append_printf (out, "  not in the ±: the step depends on %s, which the "
                                   "calibration kept at the values it was given\n", list);
    }
}

static void
print_text (GString *out, const SpPlan *plan, const SpTopo *topo, SpSimModel model,
            const SpSimResult *res, const StepError *se)
{
  const SpTopoSpec *t = sp_topo_spec (topo);
  guint32 n = sp_plan_n_ops (plan);
  guint32 world = sp_topo_world_size (topo);
  g_autofree char *env = sp_cli_nccl_env (t);
  g_string_append_printf (out, "sim: %u %s on %s: %u %s x %u %s = %u %s, model %s, "
                               "contention %s%s\n", n, sp_cli_plural (n, "op", "ops"), t->name,
                          t->nodes, sp_cli_plural (t->nodes, "node", "nodes"), t->gpus_per_node,
                          sp_cli_plural (t->gpus_per_node, "GPU", "GPUs"), world,
                          sp_cli_plural (world, "rank", "ranks"),
                          sp_sim_model_name (model),
                          sp_sim_contention_name (sp_sim_result_contention (res)), env);
  static const char *const totals[] = { "step time:", "compute-only path:",
                                        "exposed communication:", "communication (sum):" };
  const guint64 total_ns[] = { sp_sim_result_step_ns (res), sp_sim_result_compute_only_ns (res),
                               sp_sim_result_exposed_comm_ns (res), sp_sim_result_comm_ns (res) };
  for (guint i = 0; i < G_N_ELEMENTS (totals); i++)
    {
      g_autofree char *time = sp_cli_time_padded ((double) total_ns[i], 10);
      g_string_append_printf (out, "%-24s%s\n", totals[i], time);
      if (i == 0 && se->on)
        print_step_error (out, res, se);
    }
  g_string_append (out, "per family (sum of op durations):\n");
  for (guint f = 0; f < SP_FAMILY_N; f++)
    if (sp_sim_result_family_ns (res, (SpFamily) f))
      {
        g_autofree char *time =
            sp_cli_time_padded ((double) sp_sim_result_family_ns (res, (SpFamily) f), 10);
        g_string_append_printf (out, "  %-26s %8s %s\n", sp_family_name ((SpFamily) f), "", time);
      }
  guint64 count[256] = { 0 };
  for (guint32 o = 0; o < n; o++)
    count[sp_plan_op (plan, o)->kind & 0xff]++;
  g_string_append (out, "per kind (ops, sum of op durations; a composite counts 0, its sub-ops count):\n");
  for (guint k = 0; k < 256; k++)
    if (count[k])
      {
        g_autofree char *time =
            sp_cli_time_padded ((double) sp_sim_result_kind_ns (res, (SpColl) k), 10);
        g_string_append_printf (out, "  %-26s %8" G_GUINT64_FORMAT " %s\n",
                                sp_coll_name ((SpColl) k), count[k], time);
      }
  g_autofree guint32 *ids = g_new (guint32, n ? n : 1);
  for (guint32 o = 0; o < n; o++)
    ids[o] = o;
  g_qsort_with_data (ids, (gint) n, sizeof (guint32), cmp_dur_desc, (gpointer) res);
  /* columns as wide as the longest name shown */
  int name_w = 4, kind_w = 4, family_w = 1;
  for (guint32 i = 0; i < n && i < TOP_OPS; i++)
    {
      const SpOp *op = sp_plan_op (plan, ids[i]);
      name_w = MAX (name_w, (int) g_utf8_strlen (op->name, -1));
      kind_w = MAX (kind_w, (int) strlen (sp_coll_name (op->kind)));
      if (op->family != SP_FAMILY_NONE)
        family_w = MAX (family_w, (int) strlen (sp_family_name (op->family)));
    }
  g_string_append_printf (out, "longest ops (top %u of %u):\n", MIN (n, TOP_OPS), n);
  for (guint32 i = 0; i < n && i < TOP_OPS; i++)
    {
      const SpOp *op = sp_plan_op (plan, ids[i]);
      g_autofree char *time =
          sp_cli_time_padded ((double) sp_sim_result_op_duration (res, ids[i]), 10);
      int pad = name_w - (int) g_utf8_strlen (op->name, -1);
      g_string_append_printf (out, "  %6u %s%*s %-*s %-*s %s\n", op->id, op->name, pad, "",
                              kind_w, sp_coll_name (op->kind), family_w,
                              op->family == SP_FAMILY_NONE ? "-" : sp_family_name (op->family),
                              time);
    }
  if (!se->on && sp_topo_spec (topo)->cal_errors.given != 0 && model != SP_SIM_NCCL)
    g_string_append (out, "note: the topology carries its calibration's standard errors: "
                          "--std-error gives the step time's (7 more simulations)\n");
  if (sp_sim_result_contention_fallbacks (res) && sp_sim_result_contention (res) == SP_SIM_CONTENTION_STEP)
    g_string_append_printf (out, "note: %u ops had groups run for their alone duration (the flows "
                                 "in flight would have exceeded the des model's limit): no "
                                 "contention for those groups\n",
                            sp_sim_result_contention_fallbacks (res));
  else if (sp_sim_result_contention_fallbacks (res))
    g_string_append_printf (out, "note: %u op shapes were costed group by group (too many flows "
                                 "for one DES run): no contention between their groups\n",
                            sp_sim_result_contention_fallbacks (res));
}

static char *
format_json (const SpPlan *plan, const SpTopo *topo, SpSimModel model, const SpSimResult *res,
             const StepError *se)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "topology");
  json_builder_add_string_value (b, sp_topo_spec (topo)->name);
  json_builder_set_member_name (b, "world_size");
  json_builder_add_int_value (b, sp_topo_world_size (topo));
  json_builder_set_member_name (b, "sim_model");
  json_builder_add_string_value (b, sp_sim_model_name (model));
  json_builder_set_member_name (b, "contention");
  json_builder_add_string_value (b, sp_sim_contention_name (sp_sim_result_contention (res)));
  json_builder_set_member_name (b, "contention_fallbacks");
  json_builder_add_int_value (b, sp_sim_result_contention_fallbacks (res));
  json_builder_set_member_name (b, "step_us");
  json_builder_add_double_value (b, sp_sim_result_step_ns (res) / 1e3);
  if (se->on)
    {
      json_builder_set_member_name (b, "calibration");
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "std_error");
      if (isfinite (se->std_error))
        json_builder_add_double_value (b, se->std_error);
      else
        json_builder_add_string_value (b, "undetermined");
      json_builder_set_member_name (b, "residual_sd");
      json_builder_add_double_value (b, se->residual_sd);
      for (guint k = 0; k < 2; k++)
        {
          guint mask = k == 0 ? se->g.undetermined : se->g.not_fitted;
          json_builder_set_member_name (b, k == 0 ? "undetermined" : "not_fitted");
          json_builder_begin_array (b);
          for (guint p = 0; p < SP_CALIB_N_PARAMS; p++)
            if (mask >> p & 1)
              json_builder_add_string_value (b, sp_calib_param_name ((SpCalibParam) p));
          json_builder_end_array (b);
        }
      json_builder_end_object (b);
    }
  json_builder_set_member_name (b, "compute_only_us");
  json_builder_add_double_value (b, sp_sim_result_compute_only_ns (res) / 1e3);
  json_builder_set_member_name (b, "exposed_comm_us");
  json_builder_add_double_value (b, sp_sim_result_exposed_comm_ns (res) / 1e3);
  json_builder_set_member_name (b, "comm_us");
  json_builder_add_double_value (b, sp_sim_result_comm_ns (res) / 1e3);
  json_builder_set_member_name (b, "families");
  json_builder_begin_object (b);
  for (guint f = 0; f < SP_FAMILY_N; f++)
    if (sp_sim_result_family_ns (res, (SpFamily) f))
      {
        json_builder_set_member_name (b, sp_family_name ((SpFamily) f));
        json_builder_add_double_value (b, sp_sim_result_family_ns (res, (SpFamily) f) / 1e3);
      }
  json_builder_end_object (b);
  json_builder_set_member_name (b, "kinds");
  json_builder_begin_object (b);
  for (guint k = 0; k < 256; k++)
    if (sp_sim_result_kind_ns (res, (SpColl) k))
      {
        json_builder_set_member_name (b, sp_coll_name ((SpColl) k));
        json_builder_add_double_value (b, sp_sim_result_kind_ns (res, (SpColl) k) / 1e3);
      }
  json_builder_end_object (b);
  json_builder_set_member_name (b, "ops");
  json_builder_begin_array (b);
  for (guint32 o = 0; o < sp_plan_n_ops (plan); o++)
    {
      const SpOp *op = sp_plan_op (plan, o);
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "id");
      json_builder_add_int_value (b, o);
      json_builder_set_member_name (b, "name");
      json_builder_add_string_value (b, op->name);
      json_builder_set_member_name (b, "kind");
      json_builder_add_string_value (b, sp_coll_name (op->kind));
      json_builder_set_member_name (b, "duration_us");
      json_builder_add_double_value (b, sp_sim_result_op_duration (res, o) / 1e3);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  json_builder_end_object (b);
  return sp_cli_json_text (b, FALSE);
}

int
sp_cmd_sim (int argc, char **argv)
{
  g_autofree char *plan_s = NULL, *topology = NULL, *nodes_s = NULL, *sim_s = NULL,
                  *output = NULL, *format_s = NULL, *contention_s = NULL;
  gboolean quiet = FALSE, std_error = FALSE;
  GOptionEntry entries[] = {
    { "plan", 'p', 0, G_OPTION_ARG_FILENAME, &plan_s, "Plan JSON (from 'shardplan plan')", "FILE" },
    { "topology", 't', 0, G_OPTION_ARG_FILENAME, &topology,
      "Topology INI file or preset (default: the preset the plan was made for)", "FILE|PRESET" },
    { "nodes", 'n', 0, G_OPTION_ARG_STRING, &nodes_s,
      "Node count (default: the plan's with its topology, else the topology's)", "N" },
    { "sim-model", 0, 0, G_OPTION_ARG_STRING, &sim_s, "des (default), analytic, or nccl (NCCL's own tuning formula: the baseline)", "des|analytic|nccl" },
    { "contention", 0, 0, G_OPTION_ARG_STRING, &contention_s,
      "Contention between collectives: step (des default), family, or none (analytic default)",
      "none|family|step" },
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Write the simulated trace here (HDF5)",
      "FILE" },
    { "format", 'f', 0, G_OPTION_ARG_STRING, &format_s, "Summary as text (default) or json",
      "text|json" },
    { "std-error", 0, 0, G_OPTION_ARG_NONE, &std_error,
      "On a calibrated topology: the step time's standard error from the calibration's (7 "
      "more simulations)", NULL },
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, SP_PROGRESS_QUIET_HELP, NULL },
    { NULL },
  };
  int status;
  if (!sp_cli_parse (CMD, NULL, "Simulate a plan on a topology: simulated trace and summary.",
                     description, entries, &argc, &argv, &status))
    return status;
  if (argc > 1)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "unexpected argument '%s' (see 'shardplan sim --help')",
                        argv[1]);
  SpFormat format;
  if (!sp_cli_format (CMD, format_s, (1u << SP_FORMAT_TEXT) | (1u << SP_FORMAT_JSON), &format))
    return SP_EXIT_USAGE;
  if (plan_s == NULL)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "--plan FILE is required");
  g_autoptr (SpCliFiles) files = sp_cli_files_new (CMD);
  sp_cli_files_input (files, "--plan", plan_s);
  sp_cli_files_input (files, "--topology", topology);
  sp_cli_files_output (files, "-o/--output", output);
  if (!sp_cli_files_check (files))
    return SP_EXIT_USAGE;
  SpSimModel model = SP_SIM_DES;
  if (sim_s && !sp_sim_model_from_name (sim_s, &model))
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "--sim-model '%s' is not a model (accepted: des, analytic, nccl)",
                        sim_s);
  SpSimPlanOptions sim_opts;
  sp_sim_plan_options_init (&sim_opts);
  if (!sp_cli_contention (CMD, contention_s, model, &sim_opts.contention))
    return SP_EXIT_USAGE;
  guint32 nodes = 0;
  if (!sp_cli_u32 (CMD, "--nodes", nodes_s, 1, 1u << 24, &nodes))
    return SP_EXIT_USAGE;
  GError *error = NULL;
  g_autoptr (SpPlan) plan = sp_plan_load (plan_s, 0, &error);
  if (plan == NULL)
    return sp_cli_input_error (CMD, error);
  /* no --topology: the one the plan was made for */
  g_autoptr (SpTopo) topo = sp_cli_plan_topology (CMD, plan_s, plan, topology, nodes, &status);
  if (topo == NULL)
    return status;
  if (std_error && model == SP_SIM_NCCL)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "--std-error: NCCL's own model (--sim-model nccl) "
                        "reads no calibration");
  if (std_error && sp_topo_spec (topo)->cal_errors.given == 0)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "--std-error: topology '%s' carries no [calibration] "
                        "std_errors (write one with 'shardplan calibrate')",
                        sp_topo_spec (topo)->name);
  g_autoptr (SpGroups) groups = sp_groups_build (sp_plan_groups_options (plan), &error);
  if (groups == NULL)
    return sp_cli_error (CMD, error);
  SpProgress *progress = sp_progress_new (CMD, 0, "op instances", quiet);
  if (sp_progress_active (progress))
    {
      sim_opts.progress = sim_progress;
      sim_opts.progress_data = progress;
    }
  g_autoptr (SpSimResult) res = sp_sim_run_plan_full (topo, model, plan, groups, &sim_opts, &error);
  sp_progress_free (progress);
  if (res == NULL)
    return sp_cli_error (CMD, error);
  StepError se = { .on = std_error, .std_error = NAN,
                   .residual_sd = sp_topo_spec (topo)->cal_errors.residual_sd };
  if (std_error)
    {
      SpSimPlanOptions quiet_opts = sim_opts;
      quiet_opts.progress = NULL;
      quiet_opts.progress_data = NULL;
      StepOn so = { { model, plan, groups, &quiet_opts }, NULL, 0 };
      so.progress = sp_progress_new (CMD, SP_CALIB_N_PARAMS, "simulations for --std-error", quiet);
      gboolean ok = sp_calib_gradient (topo, step_ns_on, &so, (double) sp_sim_result_step_ns (res),
                                       &se.g, &error);
      sp_progress_free (so.progress);
      if (!ok)
        return sp_cli_error (CMD, error);
      se.std_error = sp_calib_gradient_std_error (topo, &se.g, NULL);
    }
  guint64 rows = 0;
  if (output)
    {
      progress = sp_progress_new (CMD, sp_plan_n_ops (plan), "ops written", quiet);
      gboolean ok = write_trace (output, topo, plan, groups, res, progress, &rows, &error);
      sp_progress_free (progress);
      if (!ok)
        return sp_cli_error (CMD, error);
    }
  g_autoptr (GString) out = g_string_new (NULL);
  if (format == SP_FORMAT_JSON)
    {
      g_autofree char *j = format_json (plan, topo, model, res, &se);
      g_string_append (out, j);
    }
  else
    print_text (out, plan, topo, model, res, &se);
  if (!sp_cli_write_output (NULL, out->str, out->len, &error))
    return sp_cli_error (CMD, error);
  if (!quiet)
    sp_cli_wrote (CMD, output, "simulated trace, %" G_GUINT64_FORMAT " %s of %u %s", rows,
                  sp_cli_plural (rows, "row", "rows"), sp_plan_n_ops (plan),
                  sp_cli_plural (sp_plan_n_ops (plan), "op", "ops"));
  return SP_EXIT_OK;
}
