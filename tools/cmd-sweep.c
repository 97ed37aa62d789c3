/* `shardplan sweep`: every shard size DeepSpeed accepts × hierarchical
 * on/off × node counts → step time, exposed communication and memory per
 * GPU of each, and the fastest configuration that fits. */
#include "config.h"
#include "cli.h"
#include "commands.h"
#include "plot.h"
#include "shardplan/memory.h"
#include "shardplan/shardplan.h"
#include "shardplan/sim.h"
#include "shardplan/workload.h"

#include <json-glib/json-glib.h>
#include <string.h>

#define CMD "sweep"
#define DEFAULT_TOPOLOGY "dgx-h100"
#define DEFAULT_NODES 16

static const char description[] =
  "For each node count, every shard size S that divides the world W (S = W is\n"
  "plain ZeRO-3, S < W MiCS) flat, and hierarchical where DeepSpeed accepts it\n"
  "(S // D >= 2 and S %% (S // D) == 0, D = GPUs per node): the plan of one\n"
  "training step (sp_workload_build_plan, every micro-step), simulated with\n"
  "--sim-model and --contention (sp_sim_run_plan_full), and the memory per GPU\n"
  "(sp_memory_estimate).  --contention (des only): step (default) runs the whole\n"
  "step on one flow network, so collectives running at the same time share links;\n"
  "family lets only the groups of one op's family contend; none costs every group\n"
  "alone (the only choice with --sim-model analytic).\n"
  "Columns: comm_us = sum of the communication ops' durations, exposed_comm_us =\n"
  "step time minus the compute-only critical path, step_us, memory_gib (GiB =\n"
  "2^30 B, 2 GiB reserve estimate included), fits = memory_gib <= the GPU's.\n"
  "The recommendation is the fastest step that fits.  Configurations are\n"
  "simulated in parallel (--jobs, default: every processor).\n"
  "\n"
  "Example: shardplan sweep --model gpt-13b --topology dgx-h100 --nodes 4,16 --plot sweep.png";

typedef struct {
  guint32 nodes, world, shard;
  gboolean hier;
  const SpTopo *topo;
  double comm_us, exposed_us, step_us, memory_gib;
  gboolean fits;
  GError *error;
} Row;

typedef struct {
  const SpModel *model;
  SpSimModel sim_model;
  SpSimPlanOptions sim_opts;
  Row *rows;
  gint done;
} Sweep;

static void
simulate_row (gpointer data, gpointer user_data)
{
  Sweep *sw = user_data;
  Row *row = &sw->rows[GPOINTER_TO_UINT (data) - 1];
  const SpTopoSpec *ts = sp_topo_spec (row->topo);
  SpShardingOptions sh;
  sp_sharding_options_init (&sh);
  sh.shard_size = row->shard;
  sh.hierarchical = row->hier;
  SpWorkloadPlanOptions po;
  sp_workload_plan_options_init (&po);
  po.world_size = row->world;
  po.devices_per_node = ts->gpus_per_node;
  SpMemoryOptions mo;
  sp_memory_options_init (&mo);
  SpMemoryEstimate mem;
  SpPlan *plan = NULL;
  SpGroups *groups = NULL;
  SpSimResult *res = NULL;
  if (sp_memory_estimate (sw->model, &sh, row->world, &mo, &mem, &row->error)
      && (plan = sp_workload_build_plan (sw->model, &sh, &po, &row->error)) != NULL
      && (groups = sp_groups_build (sp_plan_groups_options (plan), &row->error)) != NULL
      && (res = sp_sim_run_plan_full (row->topo, sw->sim_model, plan, groups, &sw->sim_opts,
                                          &row->error)) != NULL)
    {
      row->comm_us = sp_sim_result_comm_ns (res) / 1e3;
      row->exposed_us = sp_sim_result_exposed_comm_ns (res) / 1e3;
      row->step_us = sp_sim_result_step_ns (res) / 1e3;
      row->memory_gib = mem.total_bytes / (double) (1u << 30);
      row->fits = sp_memory_fits (&mem, ts->gpu_memory_gib);
    }
  if (row->error != NULL)
    g_prefix_error (&row->error, "%u nodes, shard size %u%s: ", row->nodes, row->shard,
                    row->hier ? " hierarchical" : "");
  sp_sim_result_free (res);
  sp_groups_free (groups);
  sp_plan_free (plan);
  g_atomic_int_inc (&sw->done);
}

static gboolean
parse_nodes (const char *text, GArray *out)
{
  g_auto (GStrv) parts = g_strsplit (text, ",", -1);
  for (char **p = parts; *p; p++)
    {
      guint32 n;
      g_autofree char *opt = g_strdup ("--nodes");
      if (!sp_cli_u32 (CMD, opt, g_strstrip (*p), 1, 1u << 24, &n))
        return FALSE;
      g_array_append_val (out, n);
    }
  return out->len > 0;
}

static const char *
label_of (const Row *r, char *buf, gsize size)
{
  if (r->shard == r->world && !r->hier)
    g_snprintf (buf, size, "ZeRO-3 (S=%u)", r->shard);
  else
    g_snprintf (buf, size, "MiCS S=%u%s", r->shard, r->hier ? " hierarchical" : "");
  return buf;
}

/* The fastest row that fits (first by index on ties), or -1. */
static gint
recommend (const Row *rows, guint n, char **out_why)
{
  gint best = -1;
  for (guint i = 0; i < n; i++)
    if (rows[i].fits && (best < 0 || rows[i].step_us < rows[best].step_us))
      best = (gint) i;
  *out_why = NULL;
  if (best < 0)
    return -1;
  const Row *b = &rows[best];
  const Row *z3 = NULL;
  for (guint i = 0; i < n; i++)
    if (rows[i].nodes == b->nodes && rows[i].shard == rows[i].world && !rows[i].hier)
      z3 = &rows[i];
  char lb[64], lz[64];
  label_of (b, lb, sizeof lb);
  const double gpu = sp_topo_spec (b->topo)->gpu_memory_gib;
  if (z3 != NULL && z3 != b)
    *out_why = g_strdup_printf ("fastest step that fits: %.1f ms vs %.1f ms for %s on %u nodes; "
                                "%.1f of %.4g GiB",
                                b->step_us / 1e3, z3->step_us / 1e3, label_of (z3, lz, sizeof lz),
                                b->nodes, b->memory_gib, gpu);
  else
    *out_why = g_strdup_printf ("fastest step that fits: %.1f ms (%s on %u nodes); %.1f of %.4g GiB",
                                b->step_us / 1e3, lb, b->nodes, b->memory_gib, gpu);
  return best;
}

static void
json_row (JsonBuilder *b, const Row *r)
{
  json_builder_set_member_name (b, "nodes");
  json_builder_add_int_value (b, r->nodes);
  json_builder_set_member_name (b, "world_size");
  json_builder_add_int_value (b, r->world);
  json_builder_set_member_name (b, "shard_size");
  json_builder_add_int_value (b, r->shard);
  json_builder_set_member_name (b, "hierarchical");
  json_builder_add_boolean_value (b, r->hier);
  json_builder_set_member_name (b, "comm_us");
  json_builder_add_double_value (b, r->comm_us);
  json_builder_set_member_name (b, "exposed_comm_us");
  json_builder_add_double_value (b, r->exposed_us);
  json_builder_set_member_name (b, "step_us");
  json_builder_add_double_value (b, r->step_us);
  json_builder_set_member_name (b, "memory_gib");
  json_builder_add_double_value (b, r->memory_gib);
  json_builder_set_member_name (b, "fits");
  json_builder_add_boolean_value (b, r->fits);
}

static char *
format_json (const SpModel *model, const char *cluster, const Row *rows, guint n, gint best,
             const char *why)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "model");
  json_builder_add_string_value (b, model->name);
  json_builder_set_member_name (b, "cluster");
  json_builder_add_string_value (b, cluster);
  json_builder_set_member_name (b, "rows");
  json_builder_begin_array (b);
  for (guint i = 0; i < n; i++)
    {
      json_builder_begin_object (b);
      json_row (b, &rows[i]);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  json_builder_set_member_name (b, "recommendation");
  if (best < 0)
    json_builder_add_null_value (b);
  else
    {
      json_builder_begin_object (b);
      json_row (b, &rows[best]);
      json_builder_set_member_name (b, "why");
      json_builder_add_string_value (b, why);
      json_builder_end_object (b);
    }
  json_builder_end_object (b);
  return sp_cli_json_text (b, TRUE);
}

static gboolean
write_plot (const char *path, const Row *rows, guint n, const GArray *nodes, double gpu_gib,
            const char *title, GError **error)
{
  g_autoptr (SpPlot) plot = sp_plot_new (2, title);
  sp_plot_set_axes (plot, 0, "step time", "shard size", TRUE, "step time (ms)", FALSE);
  sp_plot_set_axes (plot, 1, "memory per GPU", "shard size", TRUE, "memory (GiB)", FALSE);
  g_autofree double *x = g_new (double, n ? n : 1);
  g_autofree double *ys = g_new (double, n ? n : 1);
  g_autofree double *ym = g_new (double, n ? n : 1);
  for (guint k = 0; k < nodes->len; k++)
    for (int h = 0; h < 2; h++)
      {
        gsize m = 0;
        for (guint i = 0; i < n; i++)
          if (rows[i].nodes == g_array_index (nodes, guint32, k) && rows[i].hier == h)
            {
              x[m] = rows[i].shard;
              ys[m] = rows[i].step_us / 1e3;
              ym[m] = rows[i].memory_gib;
              m++;
            }
        if (m == 0)
          continue;
        g_autofree char *name = g_strdup_printf ("%u nodes %s", g_array_index (nodes, guint32, k),
                                                 h ? "hierarchical" : "flat");
        sp_plot_add_series (plot, 0, name, SP_PLOT_LINES, x, ys, m);
        sp_plot_add_series (plot, 1, name, SP_PLOT_LINES, x, ym, m);
      }
  sp_plot_add_hline (plot, 1, "GPU memory", gpu_gib);
  return sp_plot_save (plot, path, error);
}

int
sp_cmd_sweep (int argc, char **argv)
{
  g_autofree char *model_s = NULL, *topology = NULL, *nodes_s = NULL, *sim_s = NULL,
                  *format_s = NULL, *plot_s = NULL, *jobs_s = NULL, *contention_s = NULL;
  GOptionEntry entries[] = {
    { "model", 'm', 0, G_OPTION_ARG_FILENAME, &model_s,
      "Model preset (gpt-1b, gpt-13b, gpt-70b) or model JSON file (default gpt-13b)", "NAME|FILE" },
    { "topology", 't', 0, G_OPTION_ARG_FILENAME, &topology,
      "Topology INI file or preset (default dgx-h100)", "FILE|PRESET" },
    { "nodes", 'n', 0, G_OPTION_ARG_STRING, &nodes_s,
      "Node counts, comma-separated (default 16)", "A,B,..." },
    { "sim-model", 0, 0, G_OPTION_ARG_STRING, &sim_s,
      "Simulator model: des (default) or analytic", "analytic|des" },
    { "contention", 0, 0, G_OPTION_ARG_STRING, &contention_s,
      "Contention between collectives: step (des default), family, or none (analytic default)",
      "none|family|step" },
    { "format", 'f', 0, G_OPTION_ARG_STRING, &format_s, "text (default), csv or json",
      "text|csv|json" },
    { "plot", 'p', 0, G_OPTION_ARG_FILENAME, &plot_s,
      "Write step time and memory against shard size (.png or .svg)", "FILE" },
    { "jobs", 'j', 0, G_OPTION_ARG_STRING, &jobs_s,
      "Configurations simulated at once (default: the number of processors)", "N" },
    { NULL },
  };
  int status;
  if (!sp_cli_parse (CMD, NULL, "Sweep shard sizes (and hierarchical on/off) for a model on a cluster.",
                     description, entries, &argc, &argv, &status))
    return status;
  if (argc > 1)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "unexpected argument '%s' (see 'shardplan sweep --help')",
                        argv[1]);
  SpFormat format;
  if (!sp_cli_format (CMD, format_s,
                      (1u << SP_FORMAT_TEXT) | (1u << SP_FORMAT_JSON) | (1u << SP_FORMAT_CSV),
                      &format))
    return SP_EXIT_USAGE;
  SpSimModel sim_model = SP_SIM_DES;
  if (sim_s && !sp_sim_model_from_name (sim_s, &sim_model))
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "--sim-model '%s' is not a model (accepted: analytic, des)",
                        sim_s);
  SpSimPlanOptions sim_opts;
  sp_sim_plan_options_init (&sim_opts);
  if (!sp_cli_contention (CMD, contention_s, sim_model, &sim_opts.contention))
    return SP_EXIT_USAGE;
  guint32 jobs = g_get_num_processors ();
  if (!sp_cli_u32 (CMD, "--jobs", jobs_s, 1, 4096, &jobs))
    return SP_EXIT_USAGE;
  if (plot_s && !g_str_has_suffix (plot_s, ".png") && !g_str_has_suffix (plot_s, ".svg"))
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "--plot '%s' must end in .png or .svg", plot_s);
  g_autoptr (SpCliFiles) files = sp_cli_files_new (CMD);
  sp_cli_files_input (files, "--model", model_s);
  sp_cli_files_input (files, "--topology", topology);
  sp_cli_files_output (files, "--plot", plot_s);
  if (!sp_cli_files_check (files))
    return SP_EXIT_USAGE;
  g_autoptr (GArray) nodes = g_array_new (FALSE, FALSE, sizeof (guint32));
  if (nodes_s)
    {
      if (!parse_nodes (nodes_s, nodes))
        return SP_EXIT_USAGE;
    }
  else
    {
      guint32 d = DEFAULT_NODES;
      g_array_append_val (nodes, d);
    }
  GError *error = NULL;
  SpModel model;
  if (!sp_model_open (model_s ? model_s : SP_MODEL_DEFAULT, &model, &error))
    return sp_cli_error (CMD, error);
  g_autoptr (GPtrArray) topos = g_ptr_array_new_with_free_func ((GDestroyNotify) sp_topo_free);
  g_autoptr (GArray) rows = g_array_new (FALSE, TRUE, sizeof (Row));
  guint skipped = 0;
  for (guint k = 0; k < nodes->len; k++)
    {
      SpTopo *t = sp_topo_open (topology ? topology : DEFAULT_TOPOLOGY,
                                g_array_index (nodes, guint32, k), &error);
      if (t == NULL)
        return sp_cli_error (CMD, error);
      g_ptr_array_add (topos, t);
      guint32 W = sp_topo_world_size (t), D = sp_topo_spec (t)->gpus_per_node;
      for (guint32 S = 1; S <= W; S++)
        {
          if (W % S != 0)
            continue;
          for (int h = 0; h < 2; h++)
            {
              if (h && !(S / D >= 2 && S % (S / D) == 0))
                {
                  skipped++;
                  continue;
                }
              Row r = { 0 };
              r.nodes = sp_topo_spec (t)->nodes;
              r.world = W;
              r.shard = S;
              r.hier = h;
              r.topo = t;
              g_array_append_val (rows, r);
            }
        }
    }
  Sweep sw = { &model, sim_model, sim_opts, (Row *) rows->data, 0 };
  GThreadPool *pool = g_thread_pool_new (simulate_row, &sw, (gint) jobs, FALSE, NULL);
  for (guint i = 0; i < rows->len; i++)
    g_thread_pool_push (pool, GUINT_TO_POINTER (i + 1), NULL);
  gboolean tty = sp_cli_stderr_is_tty ();
  while (tty && (guint) g_atomic_int_get (&sw.done) < rows->len)
    {
      guint d = (guint) g_atomic_int_get (&sw.done);
      guint w = 40, f = rows->len ? d * w / rows->len : w;
      fprintf (stderr, "\r[%.*s%*s] %u/%u", (int) f, "########################################",
               (int) (w - f), "", d, rows->len);
      fflush (stderr);
      g_usleep (100000);
    }
  g_thread_pool_free (pool, FALSE, TRUE);
  if (tty)
    fprintf (stderr, "\r%*s\r", 60, "");
  Row *r = (Row *) rows->data;
  guint n = rows->len;
  int rc = SP_EXIT_OK;
  for (guint i = 0; i < n; i++)
    if (r[i].error != NULL && rc == SP_EXIT_OK)
      {
        rc = sp_cli_error (CMD, r[i].error);
        r[i].error = NULL;
      }
  for (guint i = 0; i < n; i++)
    g_clear_error (&r[i].error);
  if (rc != SP_EXIT_OK)
    return rc;
  g_autofree char *why = NULL;
  gint best = recommend (r, n, &why);
  const SpTopoSpec *ts = sp_topo_spec (g_ptr_array_index (topos, 0));
  g_autoptr (GString) out = g_string_new (NULL);
  if (format == SP_FORMAT_JSON)
    {
      g_autofree char *j = format_json (&model, ts->name, r, n, best, why);
      g_string_append (out, j);
    }
  else if (format == SP_FORMAT_CSV)
    {
      g_string_append (out, "nodes,world_size,shard_size,hierarchical,comm_us,exposed_comm_us,"
                            "step_us,memory_gib,fits\n");
      for (guint i = 0; i < n; i++)
        g_string_append_printf (out, "%u,%u,%u,%s,%.3f,%.3f,%.3f,%.4f,%s\n", r[i].nodes,
                                r[i].world, r[i].shard, r[i].hier ? "true" : "false", r[i].comm_us,
                                r[i].exposed_us, r[i].step_us, r[i].memory_gib,
                                r[i].fits ? "true" : "false");
    }
  else
    {
      SpSimContention used = sim_opts.contention;
      if (used == SP_SIM_CONTENTION_DEFAULT)
        used = sp_sim_contention_default (sim_model);
      g_string_append_printf (out, "sweep: %s (%.4g parameters) on %s (%s, %.4g GiB), sim model %s, "
                                   "contention %s\n",
                              model.name, (double) sp_model_n_params (&model), ts->name,
                              ts->gpu_model, ts->gpu_memory_gib, sp_sim_model_name (sim_model),
                              sp_sim_contention_name (used));
      g_string_append_printf (out, "%5s %10s %10s %12s %14s %16s %14s %10s %4s\n", "nodes",
                              "world_size", "shard_size", "hierarchical", "comm_us",
                              "exposed_comm_us", "step_us", "memory_gib", "fits");
      for (guint i = 0; i < n; i++)
        g_string_append_printf (out, "%5u %10u %10u %12s %14.1f %16.1f %14.1f %10.2f %4s\n",
                                r[i].nodes, r[i].world, r[i].shard, r[i].hier ? "yes" : "no",
                                r[i].comm_us, r[i].exposed_us, r[i].step_us, r[i].memory_gib,
                                r[i].fits ? "yes" : "no");
      g_string_append_printf (out, "(%u hierarchical configurations DeepSpeed rejects were skipped: "
                                   "S // D < 2 or S %% (S // D) != 0)\n", skipped);
      if (best < 0)
        g_string_append (out, "recommended: none: no configuration fits in GPU memory\n");
      else
        {
          char lb[64];
          g_string_append_printf (out, "recommended: %s on %u nodes (%s)\n",
                                  label_of (&r[best], lb, sizeof lb), r[best].nodes, why);
        }
    }
  if (plot_s)
    {
      g_autofree char *title = g_strdup_printf ("%s on %s", model.name, ts->name);
      if (!write_plot (plot_s, r, n, nodes, ts->gpu_memory_gib, title, &error))
        return sp_cli_error (CMD, error);
    }
  if (!sp_cli_write_output (NULL, out->str, out->len, &error))
    return sp_cli_error (CMD, error);
  return SP_EXIT_OK;
}
