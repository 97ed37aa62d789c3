/* `shardplan sweep`: the planner.  Every ZeRO-3 / MiCS / ZeRO++
 * configuration DeepSpeed runs × micro-batch (the accumulation keeping the
 * global batch) × node counts → step time, exposed communication, memory
 * per GPU, throughput (tokens/s, TFLOP/s per GPU, MFU), bytes across nodes,
 * and the fastest configuration that fits with its margin and, on request,
 * its DeepSpeed config. */
#include "config.h"
#include "cli.h"
#include "commands.h"
#include "plot.h"
#include "sweep.h"
#include "shardplan/memory.h"
#include "shardplan/shardplan.h"
#include "shardplan/sim.h"
#include "shardplan/workload.h"

#include <json-glib/json-glib.h>
#include <string.h>

#define CMD "sweep"
#define DEFAULT_TOPOLOGY "dgx-h100"
#define DEFAULT_NODES 16
#define DEFAULT_MICRO_BATCHES "1,2,4,8"
/* The simulator's uncertainty: bench/RESULTS.md "Fidelity" holds the
 * simulator to a median error of <= 10 % per collective (>= 1 MiB) against
 * published nccl-tests runs (measured: 5.6 % over the core datasets, single
 * datasets up to ~28 %); a step adds the compute model's assumption. */
#define DEFAULT_UNCERTAINTY_PCT 10.0

static const char description[] =
  "The grid, for each node count (W GPUs, D per node) and micro-batch:\n"
  "  ZeRO-3 (S = W); MiCS for every shard size S dividing W, flat, and\n"
  "  hierarchical where DeepSpeed accepts it (S // D >= 2, S % (S // D) == 0);\n"
  "  ZeRO++ on ZeRO-3: qwZ, hpZ (Z = every divisor of W in (1, W), D among\n"
  "  them), qgZ, alone and combined.  DeepSpeed's rules decide what is swept\n"
  "  (sp_sharding_deepspeed_verdict): ZeRO++ with MiCS falls back to plain MiCS\n"
  "  (MiCS_Optimizer takes no ZeRO++ argument), qgZ on one node falls back to\n"
  "  the reduce-scatter, hpZ with Z = W is ZeRO-3; each skipped kind is\n"
  "  counted on a 'not swept:' line.\n"
  "  Micro-batch b (--micro-batch, default 1,2,4,8) with accumulation\n"
  "  G / (b x W) steps, G = --global-batch sequences (default: the model's\n"
  "  micro_batch x grad_accum x W of the first node count); a b that does not\n"
  "  divide G / W is skipped.\n"
  "Each configuration: the plan of one optimizer step (sp_workload_build_plan,\n"
  "every micro-step) simulated with --sim-model and --contention, and the\n"
  "memory per GPU (sp_memory_estimate).  --contention (des only): step (default)\n"
  "runs the whole step on one flow network; family lets only one op's family\n"
  "contend; none costs every group alone (the only choice with analytic).\n"
  "Columns: comm_us = sum of the communication ops' durations, exposed_comm_us =\n"
  "step time minus the compute-only critical path, step_us, memory_gib (GiB =\n"
  "2^30 B, 2 GiB reserve estimate included), fits = memory_gib <= the GPU's;\n"
  "tokens_per_s = G x seq_len / step; tflops_per_gpu = model FLOPs / step / W\n"
  "with model FLOPs = (6 N + 12 L h s) per token (PaLM's MFU convention,\n"
  "recomputation not counted); mfu = tflops_per_gpu / the GPU's dense peak;\n"
  "inter_node_gb = bytes (1e9) that must cross node boundaries per step, whole\n"
  "job.  Assumed, not measured: compute reaches --compute-efficiency of peak\n"
  "(default 0.5), quantization kernels run at HBM bandwidth.\n"
  "The recommendation is the fastest step that fits, with its margin to the\n"
  "runner-up; a 'note:' line says when configurations are closer than\n"
  "--uncertainty (default 10 %, the fidelity target of bench/RESULTS.md).\n"
  "--emit-deepspeed-config writes it as DeepSpeed config JSON that\n"
  "'shardplan plan --deepspeed-config' reads back into the same plan.\n"
  "Configurations are simulated in parallel (--jobs, default: every processor);\n"
  "progress goes to stderr when it is a terminal (--quiet: never).\n"
  "\n"
  "Example: shardplan sweep --model gpt-13b --topology p4d --nodes 16 --global-batch 1024 \\\n"
  "           --emit-deepspeed-config ds.json --plot sweep.png";

typedef struct {
  guint32 nodes, world, shard;
  gboolean hier;
  guint32 hpz;
  gboolean qwz, qgz;
  guint32 micro_batch, grad_accum;
  const SpTopo *topo;
  double comm_us, exposed_us, step_us, memory_gib, inter_gb;
  SpSweepThroughput tp;
  gboolean fits;
  char *skip;     /* the builder refused it (qwZ grouping): why */
  GError *error;
} Row;

typedef struct {
  const SpModel *model;
  guint64 global_batch;
  double efficiency;
  SpSimModel sim_model;
  SpSimPlanOptions sim_opts;
  Row *rows;
  gint done;
} Sweep;

static gboolean
is_zeropp (const Row *r)
{
  return r->qwz || r->qgz || r->hpz > 1;
}

static void
row_options (const Row *r, const SpModel *base, SpShardingOptions *sh, SpModel *m)
{
  sp_sharding_options_init (sh);
  sh->shard_size = r->shard == r->world ? 0 : r->shard;
  if (r->hier)
    sh->shard_size = r->shard;
  sh->hierarchical = r->hier;
  sh->hpz_partition_size = r->hpz;
  sh->quantized_weights = r->qwz;
  sh->quantized_gradients = r->qgz;
  *m = *base;
  m->micro_batch = r->micro_batch;
  m->grad_accum = r->grad_accum;
}

static void
simulate_row (gpointer data, gpointer user_data)
{
  Sweep *sw = user_data;
  Row *row = &sw->rows[GPOINTER_TO_UINT (data) - 1];
  const SpTopoSpec *ts = sp_topo_spec (row->topo);
  SpShardingOptions sh;
  SpModel m;
  row_options (row, sw->model, &sh, &m);
  SpWorkloadPlanOptions po;
  sp_workload_plan_options_init (&po);
  po.world_size = row->world;
  po.devices_per_node = ts->gpus_per_node;
  po.compute_efficiency = sw->efficiency;
  SpMemoryOptions mo;
  sp_memory_options_init (&mo);
  SpMemoryEstimate mem;
  SpPlan *plan = NULL;
  SpGroups *groups = NULL;
  SpSimResult *res = NULL;
  if (sp_memory_estimate (&m, &sh, row->world, &mo, &mem, &row->error)
      && (plan = sp_workload_build_plan (&m, &sh, &po, &row->error)) != NULL
      && (groups = sp_groups_build (sp_plan_groups_options (plan), &row->error)) != NULL
      && (res = sp_sim_run_plan_full (row->topo, sw->sim_model, plan, groups, &sw->sim_opts,
                                      &row->error)) != NULL)
    {
      row->comm_us = sp_sim_result_comm_ns (res) / 1e3;
      row->exposed_us = sp_sim_result_exposed_comm_ns (res) / 1e3;
      row->step_us = sp_sim_result_step_ns (res) / 1e3;
      row->memory_gib = mem.total_bytes / (double) (1u << 30);
      row->fits = sp_memory_fits (&mem, ts->gpu_memory_gib);
      row->inter_gb = sp_sweep_inter_node_bytes (plan, groups, ts->gpus_per_node) / 1e9;
      sp_sweep_throughput (&m, sw->global_batch, row->world, row->step_us, ts->gpu_tflops, &row->tp);
    }
  else if (is_zeropp (row) && row->error->code == SP_ERROR_UNSUPPORTED)
    {
      /* DeepSpeed would refuse it too (qwZ's int8 grouping): not a row */
      row->skip = g_strdup (row->error->message);
      g_clear_error (&row->error);
    }
  if (row->error != NULL)
    g_prefix_error (&row->error, "%u nodes, shard size %u%s: ", row->nodes, row->shard,
                    row->hier ? " hierarchical" : "");
  sp_sim_result_free (res);
  sp_groups_free (groups);
  sp_plan_free (plan);
  g_atomic_int_inc (&sw->done);
}

/* A comma-separated list of u32 into `out`; "all" (when allowed) leaves it
 * empty. */
static gboolean
parse_list (const char *opt, const char *text, guint32 min, guint32 max, gboolean allow_all,
            GArray *out)
{
  if (allow_all && strcmp (text, "all") == 0)
    return TRUE;
  g_auto (GStrv) parts = g_strsplit (text, ",", -1);
  for (char **p = parts; *p; p++)
    {
      guint32 n;
      if (!sp_cli_u32 (CMD, opt, g_strstrip (*p), min, max, &n))
        return FALSE;
      g_array_append_val (out, n);
    }
  if (out->len == 0)
    {
      sp_cli_fail (CMD, SP_EXIT_USAGE, "%s is empty", opt);
      return FALSE;
    }
  return TRUE;
}

static gboolean
in_list (const GArray *list, guint32 v)
{
  if (list->len == 0)
    return TRUE; /* "all" */
  for (guint i = 0; i < list->len; i++)
    if (g_array_index (list, guint32, i) == v)
      return TRUE;
  return FALSE;
}

static const char *
label_of (const Row *r, char *buf, gsize size)
{
  if (is_zeropp (r))
    {
      g_autofree char *z = g_strdup_printf ("hpZ=%u", r->hpz);
      g_snprintf (buf, size, "ZeRO++ %s%s%s%s%s", r->qwz ? "qwZ" : "",
                  r->qwz && r->hpz > 1 ? "+" : "", r->hpz > 1 ? z : "",
                  r->qgz && (r->qwz || r->hpz > 1) ? "+" : "", r->qgz ? "qgZ" : "");
    }
  else if (r->shard == r->world && !r->hier)
    g_snprintf (buf, size, "ZeRO-3");
  else
    g_snprintf (buf, size, "MiCS S=%u%s", r->shard, r->hier ? " hier" : "");
  return buf;
}

/* What was not swept, and why: reason → count, in first-seen order. */
typedef struct {
  GPtrArray *reasons; /* char*, owned */
  GArray *counts;     /* guint */
  GArray *verdicts;   /* SpDsVerdict, or -1 for the builder / the batch */
} Tally;

static void
tally_add (Tally *t, int verdict, const char *reason)
{
  for (guint i = 0; i < t->reasons->len; i++)
    if (strcmp (g_ptr_array_index (t->reasons, i), reason) == 0)
      {
        g_array_index (t->counts, guint, i)++;
        return;
      }
  guint one = 1;
  g_ptr_array_add (t->reasons, g_strdup (reason));
  g_array_append_val (t->counts, one);
  g_array_append_val (t->verdicts, verdict);
}

static const char *
verdict_word (int v)
{
  return v == SP_DS_REJECTS ? "rejects" : v == SP_DS_FALLS_BACK ? "falls back" : "not run";
}

typedef struct {
  gint best, runner;
  double margin_pct;  /* runner-up's step over the best's, % */
  guint near;         /* other fitting rows within the uncertainty */
  gint lean;          /* the least memory among the best and those near it */
  char *why;
} Pick;

/* a before b: faster, then (an exact tie) less memory, then first */
static gboolean
better (const Row *a, const Row *b)
{
  return a->step_us < b->step_us || (a->step_us == b->step_us && a->memory_gib < b->memory_gib);
}

static void
recommend (const Row *rows, guint n, double uncertainty_pct, Pick *p)
{
  p->best = p->runner = -1;
  p->margin_pct = 0;
  p->near = 0;
  p->lean = -1;
  p->why = NULL;
  for (guint i = 0; i < n; i++)
    if (rows[i].fits && (p->best < 0 || better (&rows[i], &rows[p->best])))
      p->best = (gint) i;
  if (p->best < 0)
    return;
  const Row *b = &rows[p->best];
  const Row *z3 = NULL; /* DeepSpeed's default at the best's nodes and micro-batch */
  p->lean = p->best;
  for (guint i = 0; i < n; i++)
    {
      const Row *r = &rows[i];
      if (r->nodes == b->nodes && r->micro_batch == b->micro_batch && r->shard == r->world
          && !r->hier && !is_zeropp (r))
        z3 = r;
      if (!r->fits || (gint) i == p->best)
        continue;
      if (p->runner < 0 || better (r, &rows[p->runner]))
        p->runner = (gint) i;
      if (r->step_us <= b->step_us * (1 + uncertainty_pct / 100))
        {
          p->near++;
          if (r->memory_gib < rows[p->lean].memory_gib)
            p->lean = (gint) i;
        }
    }
  char lr[64];
  const double gpu = sp_topo_spec (b->topo)->gpu_memory_gib;
  g_autoptr (GString) w = g_string_new (NULL);
  g_string_append_printf (w, "fastest step that fits: %.1f ms, %.4g tokens/s, MFU %.1f %%",
                          b->step_us / 1e3, b->tp.tokens_per_s, b->tp.mfu * 100);
  if (p->runner >= 0)
    {
      const Row *r = &rows[p->runner];
      p->margin_pct = (r->step_us / b->step_us - 1) * 100;
      g_string_append_printf (w, "; %.1f %% ahead of %s on %u nodes, micro-batch %u (%.1f ms)",
                              p->margin_pct, label_of (r, lr, sizeof lr), r->nodes, r->micro_batch,
                              r->step_us / 1e3);
    }
  else
    g_string_append (w, " (the only configuration that fits)");
  if (z3 != NULL && z3 != b)
    g_string_append_printf (w, "; ZeRO-3 %.1f ms (%+.1f %%)", z3->step_us / 1e3,
                            (z3->step_us / b->step_us - 1) * 100);
  g_string_append_printf (w, "; %.1f of %.4g GiB", b->memory_gib, gpu);
  p->why = g_string_free (g_steal_pointer (&w), FALSE);
}

static void
json_row (JsonBuilder *b, const Row *r, guint64 global_batch)
{
  char lb[64];
#define M(k) json_builder_set_member_name (b, k)
  M ("nodes"); json_builder_add_int_value (b, r->nodes);
  M ("world_size"); json_builder_add_int_value (b, r->world);
  M ("shard_size"); json_builder_add_int_value (b, r->shard);
  M ("hierarchical"); json_builder_add_boolean_value (b, r->hier);
  M ("comm_us"); json_builder_add_double_value (b, r->comm_us);
  M ("exposed_comm_us"); json_builder_add_double_value (b, r->exposed_us);
  M ("step_us"); json_builder_add_double_value (b, r->step_us);
  M ("memory_gib"); json_builder_add_double_value (b, r->memory_gib);
  M ("fits"); json_builder_add_boolean_value (b, r->fits);
  M ("config"); json_builder_add_string_value (b, label_of (r, lb, sizeof lb));
  M ("hpz_partition_size"); json_builder_add_int_value (b, r->hpz > 1 ? r->hpz : 1);
  M ("quantized_weights"); json_builder_add_boolean_value (b, r->qwz);
  M ("quantized_gradients"); json_builder_add_boolean_value (b, r->qgz);
  M ("micro_batch"); json_builder_add_int_value (b, r->micro_batch);
  M ("grad_accum"); json_builder_add_int_value (b, r->grad_accum);
  M ("global_batch"); json_builder_add_int_value (b, (gint64) global_batch);
  M ("tokens_per_s"); json_builder_add_double_value (b, r->tp.tokens_per_s);
  M ("tflops_per_gpu"); json_builder_add_double_value (b, r->tp.tflops_per_gpu);
  M ("mfu"); json_builder_add_double_value (b, r->tp.mfu);
  M ("inter_node_gb"); json_builder_add_double_value (b, r->inter_gb);
#undef M
}

typedef struct {
  const SpModel *model;
  const char *cluster;
  guint64 global_batch;
  double efficiency, uncertainty_pct;
  const Tally *tally;
} Context;

static char *
format_json (const Context *c, const Row *rows, guint n, const Pick *p)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "model");
  json_builder_add_string_value (b, c->model->name);
  json_builder_set_member_name (b, "cluster");
  json_builder_add_string_value (b, c->cluster);
  json_builder_set_member_name (b, "global_batch");
  json_builder_add_int_value (b, (gint64) c->global_batch);
  json_builder_set_member_name (b, "seq_len");
  json_builder_add_int_value (b, c->model->seq_len);
  json_builder_set_member_name (b, "compute_efficiency");
  json_builder_add_double_value (b, c->efficiency);
  json_builder_set_member_name (b, "model_flops_per_token");
  json_builder_add_double_value (b, sp_sweep_model_flops_per_token (c->model));
  json_builder_set_member_name (b, "uncertainty_pct");
  json_builder_add_double_value (b, c->uncertainty_pct);
  json_builder_set_member_name (b, "rows");
  json_builder_begin_array (b);
  for (guint i = 0; i < n; i++)
    {
      json_builder_begin_object (b);
      json_row (b, &rows[i], c->global_batch);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  json_builder_set_member_name (b, "not_swept");
  json_builder_begin_array (b);
  for (guint i = 0; i < c->tally->reasons->len; i++)
    {
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "reason");
      json_builder_add_string_value (b, g_ptr_array_index (c->tally->reasons, i));
      int v = g_array_index (c->tally->verdicts, int, i);
      json_builder_set_member_name (b, "deepspeed");
      if (v < 0)
        json_builder_add_null_value (b); /* not a DeepSpeed rule (batch, qwZ grouping) */
      else
        json_builder_add_string_value (b, verdict_word (v));
      json_builder_set_member_name (b, "count");
      json_builder_add_int_value (b, g_array_index (c->tally->counts, guint, i));
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  json_builder_set_member_name (b, "recommendation");
  if (p->best < 0)
    json_builder_add_null_value (b);
  else
    {
      json_builder_begin_object (b);
      json_row (b, &rows[p->best], c->global_batch);
      json_builder_set_member_name (b, "why");
      json_builder_add_string_value (b, p->why);
      char lr[64];
      json_builder_set_member_name (b, "runner_up");
      if (p->runner < 0)
        json_builder_add_null_value (b);
      else
        json_builder_add_string_value (b, label_of (&rows[p->runner], lr, sizeof lr));
      json_builder_set_member_name (b, "margin_pct");
      json_builder_add_double_value (b, p->margin_pct);
      json_builder_set_member_name (b, "within_uncertainty");
      json_builder_add_int_value (b, p->near);
      json_builder_set_member_name (b, "least_memory_within_uncertainty");
      json_builder_add_string_value (b, label_of (&rows[p->lean], lr, sizeof lr));
      json_builder_end_object (b);
    }
  json_builder_end_object (b);
  return sp_cli_json_text (b, TRUE);
}

static void
format_csv (GString *out, const Row *r, guint n)
{
  g_string_append (out, "nodes,world_size,shard_size,hierarchical,comm_us,exposed_comm_us,"
                        "step_us,memory_gib,fits,config,hpz_partition_size,quantized_weights,"
                        "quantized_gradients,micro_batch,grad_accum,tokens_per_s,tflops_per_gpu,"
                        "mfu,inter_node_gb\n");
  for (guint i = 0; i < n; i++)
    {
      char lb[64];
      g_string_append_printf (out, "%u,%u,%u,%s,%.3f,%.3f,%.3f,%.4f,%s,%s,%u,%s,%s,%u,%u,%.1f,%.3f,"
                                   "%.4f,%.3f\n",
                              r[i].nodes, r[i].world, r[i].shard, r[i].hier ? "true" : "false",
                              r[i].comm_us, r[i].exposed_us, r[i].step_us, r[i].memory_gib,
                              r[i].fits ? "true" : "false", label_of (&r[i], lb, sizeof lb),
                              r[i].hpz > 1 ? r[i].hpz : 1, r[i].qwz ? "true" : "false",
                              r[i].qgz ? "true" : "false", r[i].micro_batch, r[i].grad_accum,
                              r[i].tp.tokens_per_s, r[i].tp.tflops_per_gpu, r[i].tp.mfu,
                              r[i].inter_gb);
    }
}

static void
format_text (GString *out, const Context *c, const SpTopoSpec *ts, SpSimModel sim_model,
             SpSimContention used, const Row *r, guint n, const Pick *p, const char *emitted)
{
  g_string_append_printf (out, "sweep: %s (%.4g parameters) on %s (%s, %.4g GiB, %.4g TFLOP/s peak), "
                               "sim model %s, contention %s\n",
                          c->model->name, (double) sp_model_n_params (c->model), ts->name,
                          ts->gpu_model, ts->gpu_memory_gib, ts->gpu_tflops,
                          sp_sim_model_name (sim_model), sp_sim_contention_name (used));
  g_string_append_printf (out, "global batch %" G_GUINT64_FORMAT " sequences x %u tokens; model FLOPs "
                               "6N + 12Lhs = %.4g per token (recomputation not counted); assumed: "
                               "compute at %.2g of peak (--compute-efficiency)\n",
                          c->global_batch, c->model->seq_len,
                          sp_sweep_model_flops_per_token (c->model), c->efficiency);
  g_string_append_printf (out, "%3s %-22s %5s %10s %10s %12s %3s %4s %12s %16s %12s %10s %4s %12s "
                               "%14s %6s %13s\n",
                          "#", "config", "nodes", "world_size", "shard_size", "hierarchical", "mb",
                          "gas", "comm_us", "exposed_comm_us", "step_us", "memory_gib", "fits",
                          "tokens_per_s", "tflops_per_gpu", "mfu", "inter_node_gb");
  for (guint i = 0; i < n; i++)
    {
      char lb[64];
      g_string_append_printf (out, "%3u %-22s %5u %10u %10u %12s %3u %4u %12.1f %16.1f %12.1f %10.2f "
                                   "%4s %12.0f %14.1f %6.3f %13.1f%s\n",
                              i + 1, label_of (&r[i], lb, sizeof lb), r[i].nodes, r[i].world,
                              r[i].shard, r[i].hier ? "yes" : "no", r[i].micro_batch, r[i].grad_accum,
                              r[i].comm_us, r[i].exposed_us, r[i].step_us, r[i].memory_gib,
                              r[i].fits ? "yes" : "no", r[i].tp.tokens_per_s, r[i].tp.tflops_per_gpu,
                              r[i].tp.mfu, r[i].inter_gb, (gint) i == p->best ? "  <- best" : "");
    }
  for (guint i = 0; i < c->tally->reasons->len; i++)
    {
      int v = g_array_index (c->tally->verdicts, int, i);
      g_string_append_printf (out, "not swept: %u%s%s%s: %s\n",
                              g_array_index (c->tally->counts, guint, i),
                              v < 0 ? "" : " (DeepSpeed ", v < 0 ? "" : verdict_word (v),
                              v < 0 ? "" : ")",
                              (const char *) g_ptr_array_index (c->tally->reasons, i));
    }
  if (p->best < 0)
    {
      g_string_append (out, "recommended: none: no configuration fits in GPU memory\n");
      return;
    }
  char lb[64], lr[64];
  const Row *b = &r[p->best];
  if (p->runner >= 0)
    g_string_append_printf (out, "runner-up: #%d %s on %u nodes, micro-batch %u: %.1f ms, %.1f %% "
                                 "slower\n",
                            p->runner + 1, label_of (&r[p->runner], lr, sizeof lr),
                            r[p->runner].nodes, r[p->runner].micro_batch,
                            r[p->runner].step_us / 1e3, p->margin_pct);
  if (p->near > 0)
    g_string_append_printf (out, "note: %u other configuration%s within %.3g %% of the best step "
                                 "time, the simulator's uncertainty (bench/RESULTS.md \"Fidelity\": "
                                 "<= 10 %% median error per collective); the simulator cannot rank "
                                 "%s: measure before choosing on speed alone\n",
                            p->near, p->near == 1 ? " is" : "s are", c->uncertainty_pct,
                            p->near == 1 ? "the two" : "them");
  if (p->near > 0 && p->lean != p->best)
    g_string_append_printf (out, "note: the least memory among them: #%d %s, %.1f GiB, %.1f ms\n",
                            p->lean + 1, label_of (&r[p->lean], lr, sizeof lr),
                            r[p->lean].memory_gib, r[p->lean].step_us / 1e3);
  if (emitted)
    g_string_append_printf (out, "deepspeed config: written; '%s' rebuilds this plan\n", emitted);
  g_string_append_printf (out, "recommended: #%d %s on %u nodes, micro-batch %u x %u accumulation "
                               "(%s)\n",
                          p->best + 1, label_of (b, lb, sizeof lb), b->nodes, b->micro_batch,
                          b->grad_accum, p->why);
}

static gboolean
write_plot (const char *path, const Row *rows, guint n, gint best, double gpu_gib,
            const char *title, GError **error)
{
  g_autoptr (SpPlot) plot = sp_plot_new (2, title);
  sp_plot_set_axes (plot, 0, "throughput", "configuration (# in the table)", FALSE, "tokens/s",
                    FALSE);
  sp_plot_set_axes (plot, 1, "memory per GPU", "configuration (# in the table)", FALSE,
                    "memory (GiB)", FALSE);
  g_autofree double *x = g_new (double, n ? n : 1);
  g_autofree double *yt = g_new (double, n ? n : 1);
  g_autofree double *ym = g_new (double, n ? n : 1);
  static const char *const kinds[] = { "ZeRO-3", "MiCS flat", "MiCS hierarchical", "ZeRO++" };
  for (int k = 0; k < 4; k++)
    {
      gsize m = 0;
      for (guint i = 0; i < n; i++)
        {
          const Row *r = &rows[i];
          int kind = is_zeropp (r) ? 3 : r->hier ? 2 : r->shard == r->world ? 0 : 1;
          if (kind != k)
            continue;
          x[m] = i + 1;
          yt[m] = r->tp.tokens_per_s;
          ym[m] = r->memory_gib;
          m++;
        }
      if (m == 0)
        continue;
      sp_plot_add_series (plot, 0, kinds[k], SP_PLOT_MARKERS, x, yt, m);
      sp_plot_add_series (plot, 1, kinds[k], SP_PLOT_MARKERS, x, ym, m);
    }
  if (best >= 0)
    {
      double bx = best + 1, bt = rows[best].tp.tokens_per_s, bm = rows[best].memory_gib;
      sp_plot_add_series (plot, 0, "recommended", SP_PLOT_CROSSES, &bx, &bt, 1);
      sp_plot_add_series (plot, 1, "recommended", SP_PLOT_CROSSES, &bx, &bm, 1);
    }
  sp_plot_add_hline (plot, 1, "GPU memory", gpu_gib);
  return sp_plot_save (plot, path, error);
}

/* Every configuration of one node count and micro-batch (rows appended;
 * the rest tallied). */
static void
enumerate (const SpTopo *t, guint32 mb, guint32 gas, const GArray *shards, const GArray *hpzs,
           gboolean zeropp, GArray *rows, Tally *tally)
{
  const guint32 W = sp_topo_world_size (t), D = sp_topo_spec (t)->gpus_per_node;
  for (guint32 S = 1; S <= W; S++)
    {
      if (W % S != 0 || (S != W && !in_list (shards, S)))
        continue;
      for (int h = 0; h < 2; h++)
        {
          Row r = { 0 };
          r.nodes = sp_topo_spec (t)->nodes;
          r.world = W;
          r.shard = S;
          r.hier = h;
          r.topo = t;
          r.micro_batch = mb;
          r.grad_accum = gas;
          SpShardingOptions o;
          SpModel unused = { 0 };
          row_options (&r, &unused, &o, &unused);
          g_autofree char *why = NULL;
          SpDsVerdict v = sp_sharding_deepspeed_verdict (&o, W, D, &why);
          if (v != SP_DS_RUNS)
            {
              tally_add (tally, v, why);
              continue;
            }
          g_array_append_val (rows, r);
          if (!zeropp)
            continue;
          /* ZeRO++ on this layout: Z = 0 (off) or each hpZ candidate */
          for (guint zi = 0; zi <= (hpzs->len ? hpzs->len : W); zi++)
            {
              guint32 Z = zi == 0 ? 0 : hpzs->len ? g_array_index (hpzs, guint32, zi - 1) : zi;
              if (zi > 0 && !hpzs->len && (Z < 2 || Z >= W || W % Z != 0))
                continue; /* the default: the divisors of W in (1, W) */
              for (int q = 0; q < 4; q++)
                {
                  if (Z == 0 && q == 0)
                    continue; /* the layout itself */
                  Row z = r;
                  z.hpz = Z;
                  z.qwz = q & 1;
                  z.qgz = (q >> 1) & 1;
                  row_options (&z, &unused, &o, &unused);
                  g_free (why);
                  why = NULL;
                  v = sp_sharding_deepspeed_verdict (&o, W, D, &why);
                  if (v == SP_DS_RUNS)
                    g_array_append_val (rows, z);
                  else
                    tally_add (tally, v, why);
                }
            }
        }
    }
}

int
sp_cmd_sweep (int argc, char **argv)
{
  g_autofree char *model_s = NULL, *topology = NULL, *nodes_s = NULL, *sim_s = NULL,
                  *format_s = NULL, *plot_s = NULL, *jobs_s = NULL, *contention_s = NULL,
                  *gb_s = NULL, *mb_s = NULL, *shards_s = NULL, *zeropp_s = NULL, *hpz_s = NULL,
                  *eff_s = NULL, *unc_s = NULL, *emit_s = NULL;
  gboolean quiet = FALSE;
  GOptionEntry entries[] = {
    { "model", 'm', 0, G_OPTION_ARG_FILENAME, &model_s,
      "Model preset (gpt-1b, gpt-13b, gpt-70b) or model JSON file (default gpt-13b)", "NAME|FILE" },
    { "topology", 't', 0, G_OPTION_ARG_FILENAME, &topology,
      "Topology INI file or preset (default dgx-h100)", "FILE|PRESET" },
    { "nodes", 'n', 0, G_OPTION_ARG_STRING, &nodes_s,
      "Node counts, comma-separated (default 16)", "A,B,..." },
    { "global-batch", 'g', 0, G_OPTION_ARG_STRING, &gb_s,
      "Sequences per optimizer step, kept across the grid (default: the model's micro_batch x "
      "grad_accum x the first node count's GPUs)", "N" },
    { "micro-batch", 'b', 0, G_OPTION_ARG_STRING, &mb_s,
      "Micro-batches to try, comma-separated (default " DEFAULT_MICRO_BATCHES ")", "A,B,..." },
    { "shard-sizes", 's', 0, G_OPTION_ARG_STRING, &shards_s,
      "MiCS shard sizes to try, or all (default: every divisor of the world; S = W, ZeRO-3, always)",
      "A,B,...|all" },
    { "zeropp", 0, 0, G_OPTION_ARG_STRING, &zeropp_s,
      "ZeRO++ (qwZ, hpZ, qgZ) on ZeRO-3: all (default) or none", "all|none" },
    { "hpz", 0, 0, G_OPTION_ARG_STRING, &hpz_s,
      "hpZ partition sizes to try, or all (default: every divisor of the world in (1, W))",
      "A,B,...|all" },
    { "compute-efficiency", 0, 0, G_OPTION_ARG_STRING, &eff_s,
      "Fraction of peak FLOP/s compute reaches, (0, 1] (default 0.5, an assumption)", "F" },
    { "uncertainty", 0, 0, G_OPTION_ARG_STRING, &unc_s,
      "Step times closer than this % are reported as a tie (default 10, bench/RESULTS.md Fidelity)",
      "PCT" },
    { "emit-deepspeed-config", 0, 0, G_OPTION_ARG_FILENAME, &emit_s,
      "Write the recommended configuration as DeepSpeed config JSON (atomically)", "FILE" },
    { "sim-model", 0, 0, G_OPTION_ARG_STRING, &sim_s,
      "Simulator model: des (default) or analytic", "analytic|des" },
    { "contention", 0, 0, G_OPTION_ARG_STRING, &contention_s,
      "Contention between collectives: step (des default), family, or none (analytic default)",
      "none|family|step" },
    { "format", 'f', 0, G_OPTION_ARG_STRING, &format_s, "text (default), csv or json",
      "text|csv|json" },
    { "plot", 'p', 0, G_OPTION_ARG_FILENAME, &plot_s,
      "Write throughput and memory against the configurations (.png or .svg)", "FILE" },
    { "jobs", 'j', 0, G_OPTION_ARG_STRING, &jobs_s,
      "Configurations simulated at once (default: the number of processors)", "N" },
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "No progress bar on stderr", NULL },
    { NULL },
  };
  int status;
  if (!sp_cli_parse (CMD, NULL,
                     "Plan the sharding: ZeRO-3 / MiCS / ZeRO++ x micro-batch x nodes, ranked by "
                     "throughput.",
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
  guint32 global_batch = 0;
  if (!sp_cli_u32 (CMD, "--global-batch", gb_s, 1, 1u << 30, &global_batch))
    return SP_EXIT_USAGE;
  gboolean zeropp = TRUE;
  if (zeropp_s && strcmp (zeropp_s, "none") == 0)
    zeropp = FALSE;
  else if (zeropp_s && strcmp (zeropp_s, "all") != 0)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "--zeropp '%s' is not all or none", zeropp_s);
  GError *error = NULL;
  double efficiency = 0.5, uncertainty = DEFAULT_UNCERTAINTY_PCT;
  if (eff_s && !sp_parse_double ("--compute-efficiency", eff_s, 1e-6, 1.0, &efficiency, &error))
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "%s", error->message);
  if (unc_s && !sp_parse_double ("--uncertainty", unc_s, 0, 1000, &uncertainty, &error))
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "%s", error->message);
  if (plot_s && !g_str_has_suffix (plot_s, ".png") && !g_str_has_suffix (plot_s, ".svg"))
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "--plot '%s' must end in .png or .svg", plot_s);
  g_autoptr (GArray) nodes = g_array_new (FALSE, FALSE, sizeof (guint32));
  g_autoptr (GArray) mbs = g_array_new (FALSE, FALSE, sizeof (guint32));
  g_autoptr (GArray) shards = g_array_new (FALSE, FALSE, sizeof (guint32));
  g_autoptr (GArray) hpzs = g_array_new (FALSE, FALSE, sizeof (guint32));
  if (!parse_list ("--nodes", nodes_s ? nodes_s : G_STRINGIFY (DEFAULT_NODES), 1, 1u << 24, FALSE,
                   nodes)
      || !parse_list ("--micro-batch", mb_s ? mb_s : DEFAULT_MICRO_BATCHES, 1, 65536, FALSE, mbs)
      || (shards_s && !parse_list ("--shard-sizes", shards_s, 1, 1u << 31, TRUE, shards))
      || (hpz_s && !parse_list ("--hpz", hpz_s, 2, 1u << 31, TRUE, hpzs)))
    return SP_EXIT_USAGE;
  g_autoptr (SpCliFiles) files = sp_cli_files_new (CMD);
  sp_cli_files_input (files, "--model", model_s);
  sp_cli_files_input (files, "--topology", topology);
  sp_cli_files_output (files, "--plot", plot_s);
  sp_cli_files_output (files, "--emit-deepspeed-config", emit_s);
  if (!sp_cli_files_check (files))
    return SP_EXIT_USAGE;
  SpModel model;
  if (!sp_model_open (model_s ? model_s : SP_MODEL_DEFAULT, &model, &error))
    return sp_cli_error (CMD, error);
  g_autoptr (GPtrArray) topos = g_ptr_array_new_with_free_func ((GDestroyNotify) sp_topo_free);
  g_autoptr (GArray) rows = g_array_new (FALSE, TRUE, sizeof (Row));
  Tally tally = { g_ptr_array_new_with_free_func (g_free), g_array_new (FALSE, FALSE, sizeof (guint)),
                  g_array_new (FALSE, FALSE, sizeof (int)) };
  for (guint k = 0; k < nodes->len; k++)
    {
      SpTopo *t = sp_topo_open (topology ? topology : DEFAULT_TOPOLOGY,
                                g_array_index (nodes, guint32, k), &error);
      if (t == NULL)
        return sp_cli_error (CMD, error);
      g_ptr_array_add (topos, t);
      guint32 W = sp_topo_world_size (t);
      if (global_batch == 0)
        global_batch = (guint32) MIN ((guint64) model.micro_batch * model.grad_accum * W, 1u << 30);
      for (guint i = 0; i < mbs->len; i++)
        {
          guint32 mb = g_array_index (mbs, guint32, i);
          if (global_batch % ((guint64) mb * W) != 0)
            {
              g_autofree char *why = g_strdup_printf (
                "micro-batch x GPUs does not divide the global batch %u", global_batch);
              tally_add (&tally, -1, why);
              continue;
            }
          enumerate (t, mb, (guint32) (global_batch / ((guint64) mb * W)), shards, hpzs, zeropp,
                     rows, &tally);
        }
    }
  if (rows->len == 0)
    return sp_cli_fail (CMD, SP_EXIT_USAGE,
                        "no configuration to sweep: the global batch %u is not a multiple of any "
                        "micro-batch x GPUs (--global-batch, --micro-batch)",
                        global_batch);
  Sweep sw = { &model, global_batch, efficiency, sim_model, sim_opts, (Row *) rows->data, 0 };
  GThreadPool *pool = g_thread_pool_new (simulate_row, &sw, (gint) jobs, FALSE, NULL);
  for (guint i = 0; i < rows->len; i++)
    g_thread_pool_push (pool, GUINT_TO_POINTER (i + 1), NULL);
  gboolean tty = !quiet && sp_cli_stderr_is_tty ();
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
  int rc = SP_EXIT_OK;
  Row *all = (Row *) rows->data;
  for (guint i = 0; i < rows->len; i++)
    if (all[i].error != NULL && rc == SP_EXIT_OK)
      {
        rc = sp_cli_error (CMD, all[i].error);
        all[i].error = NULL;
      }
  /* rows the builder refused leave the table */
  g_autoptr (GArray) kept = g_array_new (FALSE, TRUE, sizeof (Row));
  for (guint i = 0; i < rows->len; i++)
    {
      g_clear_error (&all[i].error);
      if (all[i].skip)
        {
          /* the partition size is in the message; tally the rule */
          const char *colon = strstr (all[i].skip, "finds no int8 grouping");
          tally_add (&tally, -1, colon ? "qwZ: DeepSpeed's CUDAQuantizer finds no int8 grouping "
                                         "for a partition" : all[i].skip);
          g_free (all[i].skip);
        }
      else
        g_array_append_val (kept, all[i]);
    }
  if (rc != SP_EXIT_OK)
    return rc;
  Row *r = (Row *) kept->data;
  guint n = kept->len;
  Pick pick;
  recommend (r, n, uncertainty, &pick);
  g_autofree char *why = pick.why;
  const SpTopoSpec *ts = sp_topo_spec (g_ptr_array_index (topos, 0));
  Context ctx = { &model, ts->name, global_batch, efficiency, uncertainty, &tally };
  g_autofree char *rebuild = NULL;
  if (emit_s)
    {
      if (pick.best < 0)
        return sp_cli_fail (CMD, SP_EXIT_FAILURE,
                            "--emit-deepspeed-config: no configuration fits in GPU memory; '%s' "
                            "not written", emit_s);
      SpShardingOptions sh;
      SpModel m;
      row_options (&r[pick.best], &model, &sh, &m);
      g_autofree char *ds = sp_deepspeed_config_to_json (&sh, &m, r[pick.best].world);
      if (!sp_cli_write_output (emit_s, ds, strlen (ds), &error))
        return sp_cli_error (CMD, error);
      g_autofree char *eff = efficiency != 0.5 ? g_strdup_printf (" --compute-efficiency %g",
                                                                  efficiency)
                                               : g_strdup ("");
      rebuild = g_strdup_printf ("shardplan plan -m %s -t %s -n %u%s --deepspeed-config %s",
                                 model_s ? model_s : SP_MODEL_DEFAULT,
                                 topology ? topology : DEFAULT_TOPOLOGY, r[pick.best].nodes, eff,
                                 emit_s);
    }
  g_autoptr (GString) out = g_string_new (NULL);
  if (format == SP_FORMAT_JSON)
    {
      g_autofree char *j = format_json (&ctx, r, n, &pick);
      g_string_append (out, j);
    }
  else if (format == SP_FORMAT_CSV)
    format_csv (out, r, n);
  else
    {
      SpSimContention used = sim_opts.contention;
      if (used == SP_SIM_CONTENTION_DEFAULT)
        used = sp_sim_contention_default (sim_model);
      format_text (out, &ctx, ts, sim_model, used, r, n, &pick, rebuild);
    }
  g_ptr_array_unref (tally.reasons);
  g_array_unref (tally.counts);
  g_array_unref (tally.verdicts);
  if (plot_s)
    {
      g_autofree char *title = g_strdup_printf ("%s on %s", model.name, ts->name);
      if (!write_plot (plot_s, r, n, pick.best, ts->gpu_memory_gib, title, &error))
        return sp_cli_error (CMD, error);
    }
  if (!sp_cli_write_output (NULL, out->str, out->len, &error))
    return sp_cli_error (CMD, error);
  return SP_EXIT_OK;
}
