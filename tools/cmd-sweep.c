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
#include "progress.h"
#include "sweep.h"
#include "shardplan/calibrate-fit.h"
#include "shardplan/memory.h"
#include "shardplan/shardplan.h"
#include "shardplan/sim.h"
#include "shardplan/workload.h"

#include <math.h>
#include <string.h>

#define CMD "sweep"

/* `word` as one word of a shell command line: as it is when it holds only
 * characters no shell treats specially, else quoted (g_shell_quote). */
static char *
shell_word (const char *word)
{
  gboolean plain = *word != '\0';
  for (const char *p = word; *p && plain; p++)
    plain = g_ascii_isalnum (*p) || strchr ("_./,:=+-@%", *p) != NULL;
  return plain ? g_strdup (word) : g_shell_quote (word);
}
#define DEFAULT_TOPOLOGY "dgx-h100"
#define DEFAULT_NODES 16
#define DEFAULT_MICRO_BATCHES "1,2,4,8"
/* The simulator's uncertainty: bench/RESULTS.md "Fidelity" holds the
 * simulator to a median error of <= 10 % per collective (>= 1 MiB) against
 * published nccl-tests runs (measured by ./bench/fidelity: 4.5 % over the
 * core datasets, single datasets up to 23.8 %; 9.8 % below 1 MiB); a step
 * adds the compute model's assumption. */
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
  "  MoE models: x every expert-parallel size E that DeepSpeed accepts (E divides\n"
  "  the number of experts and W; --expert-parallel narrows it).  E is the\n"
  "  ep_size argument of deepspeed.moe.layer.MoE, not a config key: the text\n"
  "  says so, and the rebuild command carries --expert-parallel.  (DeepSpeed's\n"
  "  engine refuses MoE with stage 3; the rows extrapolate its expert-data rule.)\n"
  "  Micro-batch b (--micro-batch, default 1,2,4,8) with accumulation\n"
  "  G / (b x W) steps, G = --global-batch sequences (default: the model's\n"
  "  micro_batch x grad_accum x the least common multiple of the node counts'\n"
  "  W, i.e. x W for one node count); a b that does not divide G / W is skipped.\n"
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
  "(default 0.5), quantization kernels run at the GPU's HBM bandwidth (the\n"
  "topology's [gpu] memory_bandwidth_gbs, default the model's datasheet figure).\n"
  "The recommendation is the fastest step that fits, with its margin to the\n"
  "runner-up; a 'note:' line says when configurations are closer than\n"
  "--uncertainty (default 10 %, the fidelity target of bench/RESULTS.md).\n"
  "On a topology 'shardplan calibrate' wrote with std_errors, another says the\n"
  "calibration's standard error of that margin (the fitted values' errors\n"
  "carried through both steps: 14 more plan simulations, 28 where steps have to\n"
  "go the other way; not with --format csv) and whether the margin is beyond\n"
  "two of them, or that it rests on a value the fit left undetermined.\n"
  "--emit-deepspeed-config writes it as DeepSpeed config JSON that\n"
  "'shardplan plan --deepspeed-config' reads back into the same plan.\n"
  "--deepspeed-config FILE: every row is planned with the file's step-model\n"
  "settings (overlap_comm, contiguous_gradients, reduce_bucket_size,\n"
  "stage3_prefetch_bucket_size, stage3_max_live_parameters,\n"
  "stage3_max_reuse_distance, stage3_param_persistence_threshold; DeepSpeed's\n"
  "defaults otherwise), named in the header and kept in the emitted config; the\n"
  "keys the grid varies (stage, mics_*, zero_hpz_partition_size,\n"
  "zero_quantized_*, micro-batch, accumulation) are overridden (a note on stderr).\n"
  "Configurations are simulated in parallel (--jobs, default: every processor);\n"
  "progress goes to stderr when it is a terminal and the sweep takes more than\n"
  "a second (--quiet: never).\n"
  "\n"
  "Example: shardplan sweep --model gpt-13b --topology p4d --nodes 16 --global-batch 1024 \\\n"
  "           --emit-deepspeed-config ds.json --plot sweep.png";

typedef struct {
  const SpModel *model;
  const SpShardingOptions *knobs;
  guint64 global_batch;
  double efficiency;
  SpSimModel sim_model;
  SpSimPlanOptions sim_opts;
  SpSweepRow *rows;
  SpProgress *progress; /* configurations simulated */
} Sweep;

gboolean
sp_sweep_is_zeropp (const SpSweepRow *r)
{
  return r->qwz || r->qgz || r->hpz > 1;
}

/* The row's options: the step-model settings of `knobs` (NULL: DeepSpeed's
 * defaults) with the grid's layout, batch and expert-parallel size. */
static void
row_options (const SpSweepRow *r, const SpShardingOptions *knobs, const SpModel *base,
             SpShardingOptions *sh, SpModel *m)
{
  if (knobs)
    *sh = *knobs;
  else
    sp_sharding_options_init (sh);
  sh->zero_stage = 3;
  sh->shard_size = r->shard == r->world ? 0 : r->shard;
  if (r->hier)
    sh->shard_size = r->shard;
  sh->hierarchical = r->hier;
  sh->hpz_partition_size = r->hpz;
  sh->quantized_weights = r->qwz;
  sh->quantized_gradients = r->qgz;
  sh->expert_parallel = r->ep > 1 ? r->ep : 0;
  *m = *base;
  m->micro_batch = r->micro_batch;
  m->grad_accum = r->grad_accum;
}

/* The family of the parameter all-gathers: hpZ's secondary partition,
 * else the shard groups (S = W: the world, as ZeRO-3). */
static SpFamily
r_gather_family (const SpSweepRow *r)
{
  return r->hpz > 1 ? SP_FAMILY_ZERO_PARAM : SP_FAMILY_SHARD;
}

/* `row`'s plan and its groups, from its model and options (row_options). */
static gboolean
row_plan (const Sweep *sw, const SpSweepRow *row, const SpModel *m, const SpShardingOptions *sh,
          SpPlan **plan, SpGroups **groups, GError **error)
{
  SpWorkloadPlanOptions po;
  sp_workload_plan_options_init (&po);
  po.world_size = row->world;
  po.devices_per_node = sp_topo_spec (row->topo)->gpus_per_node;
  po.compute_efficiency = sw->efficiency;
  return (*plan = sp_workload_build_plan (m, sh, &po, error)) != NULL
         && (*groups = sp_groups_build (sp_plan_groups_options (*plan), error)) != NULL;
}

static void
simulate_row (gpointer data, gpointer user_data)
{
  Sweep *sw = user_data;
  SpSweepRow *row = &sw->rows[GPOINTER_TO_UINT (data) - 1];
  const SpTopoSpec *ts = sp_topo_spec (row->topo);
  SpShardingOptions sh;
  SpModel m;
  row_options (row, sw->knobs, sw->model, &sh, &m);
  SpMemoryOptions mo;
  sp_memory_options_init (&mo);
  SpMemoryEstimate mem;
  SpPlan *plan = NULL;
  SpGroups *groups = NULL;
  SpSimResult *res = NULL;
  if (sp_memory_estimate (&m, &sh, row->world, &mo, &mem, &row->error)
      && row_plan (sw, row, &m, &sh, &plan, &groups, &row->error)
      && (res = sp_sim_run_plan_full (row->topo, sw->sim_model, plan, groups, &sw->sim_opts,
                                      &row->error)) != NULL)
    {
      row->comm_us = sp_sim_result_comm_ns (res) / 1e3;
      row->exposed_us = sp_sim_result_exposed_comm_ns (res) / 1e3;
      row->step_ns = sp_sim_result_step_ns (res);
      row->step_us = row->step_ns / 1e3;
      row->memory_gib = mem.total_bytes / (double) (1u << 30);
      row->fits = sp_memory_fits (&mem, ts->gpu_memory_gib);
      row->inter_gb = sp_sweep_inter_node_bytes (plan, groups, ts->gpus_per_node) / 1e9;
      SpFamily gather = r_gather_family (row);
      guint32 domain = sp_topo_spec_nvlink_domain (ts);
      row->gather_groups = sp_groups_n_groups (groups, gather);
      row->gather_in_domain = sp_groups_n_within (groups, gather, domain);
      if (row->gather_groups == 0) /* no shard family built: the world */
        {
          row->gather_groups = 1;
          row->gather_in_domain = row->world <= domain;
        }
      sp_sweep_throughput (&m, sw->global_batch, row->world, row->step_us, ts->gpu_tflops, &row->tp);
    }
  else if (sp_sweep_is_zeropp (row) && row->error->code == SP_ERROR_UNSUPPORTED)
    {
      /* DeepSpeed would refuse it too (qwZ's int8 grouping): not a row */
      row->skip = g_strdup (row->error->message);
      g_clear_error (&row->error);
    }
  if (row->error != NULL)
    g_prefix_error (&row->error, "%u %s, shard size %u%s, expert-parallel size %u: ",
                    row->nodes, sp_cli_plural (row->nodes, "node", "nodes"), row->shard,
                    row->hier ? " hierarchical" : "", row->ep);
  sp_sim_result_free (res);
  sp_groups_free (groups);
  sp_plan_free (plan);
  sp_progress_add (sw->progress, 1);
}

/* On a topology with [calibration] std_errors (not NCCL's own model, which
 * reads none): the standard error of log(runner-up / best) into
 * p->margin_se, from both steps' gradients in the calibrated values; the
 * difference is better determined than either step where both depend on
 * the same values alike.  Each row's plan built once, then simulated 7
 * more times (14 where a step has to go the other way).  It is a note: where one of them fails,
 * a warning says so and the sweep goes on without it. */
static void
margin_std_error (const Sweep *sw, const SpSweepRow *rows, SpSweepPick *p)
{
  p->margin_se = NAN;
  if (p->best < 0 || p->runner < 0 || sw->sim_model == SP_SIM_NCCL
      || sp_topo_spec (rows[p->best].topo)->cal_errors.given == 0)
    return;
  const SpSweepRow *on[2] = { &rows[p->best], &rows[p->runner] };
  SpCalibGradient g[2];
  for (guint i = 0; i < 2; i++)
    {
      GError *error = NULL;
      SpShardingOptions sh;
      SpModel m;
      SpPlan *plan = NULL;
      SpGroups *groups = NULL;
      row_options (on[i], sw->knobs, sw->model, &sh, &m);
      gboolean ok = row_plan (sw, on[i], &m, &sh, &plan, &groups, &error);
      if (ok)
        {
          SpCalibPlanStep ps = { sw->sim_model, plan, groups, &sw->sim_opts };
          ok = sp_calib_gradient (on[i]->topo, sp_calib_plan_step_ns, &ps,
                                  (double) on[i]->step_ns, &g[i], &error);
        }
      sp_groups_free (groups);
      sp_plan_free (plan);
      if (!ok)
        {
          char label[64];
          g_printerr ("shardplan %s: warning: no standard error of the margin (%s on %u %s): %s\n",
                      CMD, sp_sweep_label (on[i], label, sizeof label), on[i]->nodes,
                      sp_cli_plural (on[i]->nodes, "node", "nodes"), error->message);
          g_error_free (error);
          return;
        }
    }
  p->margin_se = sp_calib_gradient_std_error (rows[p->best].topo, &g[1], &g[0]);
}

/* A comma-separated list of u32 into `out`, each value once ("16,16" is
 * 16: a repeated value would sweep every configuration twice); "all" (when
 * allowed) leaves it empty. */
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
      gboolean seen = FALSE;
      for (guint i = 0; i < out->len && !seen; i++)
        seen = g_array_index (out, guint32, i) == n;
      if (!seen)
        g_array_append_val (out, n);
    }
  if (out->len == 0)
    {
      sp_cli_fail (CMD, SP_EXIT_USAGE, "%s is empty", opt);
      return FALSE;
    }
  return TRUE;
}

static gint
compare_u32 (gconstpointer a, gconstpointer b)
{
  guint32 x = *(const guint32 *) a, y = *(const guint32 *) b;
  return x < y ? -1 : x > y;
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
layout_label (const SpSweepRow *r, char *buf, gsize size)
{
  if (sp_sweep_is_zeropp (r))
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

const char *
sp_sweep_label (const SpSweepRow *r, char *buf, gsize size)
{
  char base[64];
  layout_label (r, base, sizeof base);
  if (r->ep > 1)
    g_snprintf (buf, size, "%s ep=%u", base, r->ep);
  else
    g_snprintf (buf, size, "%s", base);
  return buf;
}

/* Count one more configuration not swept for `reason`. */
static void
tally_add (SpSweepTally *t, int verdict, const char *reason)
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

/* a before b: faster, then (an exact tie) less memory, then first */
static gboolean
better (const SpSweepRow *a, const SpSweepRow *b)
{
  return a->step_us < b->step_us || (a->step_us == b->step_us && a->memory_gib < b->memory_gib);
}

/* The fastest row that fits, its runner-up and margin, the rows within the
 * uncertainty and the leanest of them. */
static void
recommend (const SpSweepRow *rows, guint n, double uncertainty_pct, SpSweepPick *p)
{
  p->best = p->runner = -1;
  p->margin_pct = 0;
  p->margin_se = NAN;
  p->near = 0;
  p->lean = -1;
  p->why = NULL;
  for (guint i = 0; i < n; i++)
    if (rows[i].fits && (p->best < 0 || better (&rows[i], &rows[p->best])))
      p->best = (gint) i;
  if (p->best < 0)
    return;
  const SpSweepRow *b = &rows[p->best];
  const SpSweepRow *z3 = NULL; /* DeepSpeed's default at the best's nodes and micro-batch */
  p->lean = p->best;
  for (guint i = 0; i < n; i++)
    {
      const SpSweepRow *r = &rows[i];
      if (r->nodes == b->nodes && r->micro_batch == b->micro_batch && r->ep == b->ep
          && r->shard == r->world && !r->hier && !sp_sweep_is_zeropp (r))
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
      const SpSweepRow *r = &rows[p->runner];
      p->margin_pct = (r->step_us / b->step_us - 1) * 100;
      g_string_append_printf (w, "; %.1f %% ahead of %s on %u %s, micro-batch %u (%.1f ms)",
                              p->margin_pct, sp_sweep_label (r, lr, sizeof lr), r->nodes,
                              sp_cli_plural (r->nodes, "node", "nodes"), r->micro_batch,
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

/* The expert-parallel sizes of the grid on W GPUs: 1 for a dense model;
 * for a MoE model every divisor of W (or each of `want`) that DeepSpeed
 * accepts, the others tallied (*first_reason: "EP: why" of the first one
 * rejected, when still NULL; g_free it). */
static void
expert_sizes (const SpModel *m, guint32 W, const GArray *want, GArray *out, SpSweepTally *tally,
              char **first_reason)
{
  g_array_set_size (out, 0);
  guint32 one = 1;
  if (m->moe_experts == 0)
    {
      g_array_append_val (out, one);
      return;
    }
  for (guint32 i = 0; i < (want->len ? want->len : W); i++)
    {
      guint32 ep = want->len ? g_array_index (want, guint32, i) : i + 1;
      if (!want->len && W % ep != 0)
        continue; /* the default: the divisors of W */
      g_autofree char *why = NULL;
      SpDsVerdict v = sp_expert_parallel_deepspeed_verdict (ep, m, W, &why);
      if (v == SP_DS_RUNS)
        g_array_append_val (out, ep);
      else
        {
          tally_add (tally, v, why);
          if (*first_reason == NULL)
            *first_reason = g_strdup_printf ("%u: %s", ep, why);
        }
    }
}

static void
enumerate_layouts (const SpTopo *t, guint32 mb, guint32 gas, guint32 ep, const GArray *shards,
                   const GArray *hpzs, gboolean zeropp, GArray *rows, SpSweepTally *tally)
{
  const guint32 W = sp_topo_world_size (t), D = sp_topo_spec (t)->gpus_per_node;
  /* the candidates: W itself, and every listed size (all divisors of W when
   * none is listed); a listed size that does not divide W goes to
   * DeepSpeed's verdict, which rejects it and counts it as not swept */
  g_autoptr (GArray) sizes = g_array_new (FALSE, FALSE, sizeof (guint32));
  if (shards->len == 0)
    {
      for (guint32 S = 1; S <= W; S++)
        if (W % S == 0)
          g_array_append_val (sizes, S);
    }
  else
    {
      /* the list (without repeats: parse_list) and W, in ascending order */
      g_array_append_vals (sizes, shards->data, shards->len);
      if (!in_list (shards, W))
        g_array_append_val (sizes, W);
      g_array_sort (sizes, compare_u32);
    }
  for (guint si = 0; si < sizes->len; si++)
    {
      const guint32 S = g_array_index (sizes, guint32, si);
      for (int h = 0; h < 2; h++)
        {
          SpSweepRow r = { 0 };
          r.nodes = sp_topo_spec (t)->nodes;
          r.world = W;
          r.shard = S;
          r.hier = h;
          r.topo = t;
          r.micro_batch = mb;
          r.grad_accum = gas;
          r.ep = ep;
          SpShardingOptions o;
          SpModel unused = { 0 };
          row_options (&r, NULL, &unused, &o, &unused);
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
                  SpSweepRow z = r;
                  z.hpz = Z;
                  z.qwz = q & 1;
                  z.qgz = (q >> 1) & 1;
                  row_options (&z, NULL, &unused, &o, &unused);
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

static void
enumerate (const SpTopo *t, guint32 mb, guint32 gas, const GArray *eps, const GArray *shards,
           const GArray *hpzs, gboolean zeropp, GArray *rows, SpSweepTally *tally)
{
  for (guint e = 0; e < eps->len; e++)
    enumerate_layouts (t, mb, gas, g_array_index (eps, guint32, e), shards, hpzs, zeropp, rows,
                       tally);
}

int
sp_cmd_sweep (int argc, char **argv)
{
  g_autofree char *model_s = NULL, *topology = NULL, *nodes_s = NULL, *sim_s = NULL,
                  *format_s = NULL, *plot_s = NULL, *jobs_s = NULL, *contention_s = NULL,
                  *gb_s = NULL, *mb_s = NULL, *shards_s = NULL, *zeropp_s = NULL, *hpz_s = NULL,
                  *eff_s = NULL, *unc_s = NULL, *emit_s = NULL, *ep_s = NULL, *ds_s = NULL;
  gboolean quiet = FALSE;
  GOptionEntry entries[] = {
    { "model", 'm', 0, G_OPTION_ARG_FILENAME, &model_s,
      "Model preset (gpt-1b, gpt-13b, gpt-70b) or model JSON file (default gpt-13b)", "NAME|FILE" },
    { "topology", 't', 0, G_OPTION_ARG_FILENAME, &topology,
      "Topology INI file or preset (default dgx-h100)", "FILE|PRESET" },
    { "nodes", 'n', 0, G_OPTION_ARG_STRING, &nodes_s,
      "Node counts, comma-separated (default: the --topology's own, or 16 of the default "
      "dgx-h100)", "A,B,..." },
    { "global-batch", 'g', 0, G_OPTION_ARG_STRING, &gb_s,
      "Sequences per optimizer step, kept across the grid (default: the model's micro_batch x "
      "grad_accum x W; with several node counts, x the least common multiple of their W)", "N" },
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
    { "expert-parallel", 0, 0, G_OPTION_ARG_STRING, &ep_s,
      "MoE expert-parallel sizes to try, or all (default: every size DeepSpeed accepts)",
      "A,B,...|all" },
    { "ep", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING, &ep_s, NULL, NULL },
    { "deepspeed-config", 'c', 0, G_OPTION_ARG_FILENAME, &ds_s,
      "DeepSpeed config JSON whose step-model settings (overlap_comm, buckets, stage3_*) every "
      "row uses; the keys the grid varies are overridden", "FILE" },
    { "compute-efficiency", 0, 0, G_OPTION_ARG_STRING, &eff_s,
      "Fraction of peak FLOP/s compute reaches, (0, 1] (default 0.5, an assumption)", "F" },
    { "uncertainty", 0, 0, G_OPTION_ARG_STRING, &unc_s,
      "Step times closer than this % are reported as a tie (default 10, bench/RESULTS.md Fidelity)",
      "PCT" },
    { "emit-deepspeed-config", 0, 0, G_OPTION_ARG_FILENAME, &emit_s,
      "Write the recommended configuration as DeepSpeed config JSON (atomically)", "FILE" },
    { "sim-model", 0, 0, G_OPTION_ARG_STRING, &sim_s,
      "Simulator model: des (default), analytic, or nccl (NCCL's own tuning formula: the baseline)", "des|analytic|nccl" },
    { "contention", 0, 0, G_OPTION_ARG_STRING, &contention_s,
      "Contention between collectives: step (des default), family, or none (analytic default)",
      "none|family|step" },
    { "format", 'f', 0, G_OPTION_ARG_STRING, &format_s, "text (default), csv or json",
      "text|csv|json" },
    { "plot", 'p', 0, G_OPTION_ARG_FILENAME, &plot_s,
      "Write throughput and memory (log, with the GPU's capacity) against the configurations, "
      "the recommendation marked (.png or .svg)", "FILE" },
    { "jobs", 'j', 0, G_OPTION_ARG_STRING, &jobs_s,
      "Configurations simulated at once (default: the number of processors)", "N" },
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, SP_PROGRESS_QUIET_HELP, NULL },
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
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "--sim-model '%s' is not a model (accepted: des, analytic, nccl)",
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
  if (plot_s && sp_plot_kind (plot_s) == NULL)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "--plot '%s' must end in .png or .svg", plot_s);
  g_autoptr (GArray) nodes = g_array_new (FALSE, FALSE, sizeof (guint32));
  g_autoptr (GArray) mbs = g_array_new (FALSE, FALSE, sizeof (guint32));
  g_autoptr (GArray) shards = g_array_new (FALSE, FALSE, sizeof (guint32));
  g_autoptr (GArray) hpzs = g_array_new (FALSE, FALSE, sizeof (guint32));
  g_autoptr (GArray) ep_want = g_array_new (FALSE, FALSE, sizeof (guint32));
  /* the default topology is dgx-h100 x 16 nodes; a topology you name keeps
   * its own node count (a file's nodes, a preset's: 1 host, or a rack's 18),
   * as in plan, estimate, sim and groups */
  g_autofree char *own_nodes = NULL;
  if (nodes_s == NULL && topology != NULL)
    {
      g_autoptr (SpTopo) own = sp_topo_open (topology, 0, &error);
      if (own == NULL)
        return sp_cli_fail (CMD, SP_EXIT_USAGE, "%s", error->message);
      own_nodes = g_strdup_printf ("%u", sp_topo_spec (own)->nodes);
    }
  if (!parse_list ("--nodes", nodes_s ? nodes_s : own_nodes ? own_nodes : G_STRINGIFY (DEFAULT_NODES),
                   1, 1u << 24, FALSE, nodes)
      || !parse_list ("--micro-batch", mb_s ? mb_s : DEFAULT_MICRO_BATCHES, 1, 65536, FALSE, mbs)
      || (shards_s && !parse_list ("--shard-sizes", shards_s, 1, 1u << 31, TRUE, shards))
      || (hpz_s && !parse_list ("--hpz", hpz_s, 2, 1u << 31, TRUE, hpzs))
      || (ep_s && !parse_list ("--expert-parallel", ep_s, 1, 1u << 31, TRUE, ep_want)))
    return SP_EXIT_USAGE;
  g_autoptr (SpCliFiles) files = sp_cli_files_new (CMD);
  sp_cli_files_input (files, "--model", model_s);
  sp_cli_files_input (files, "--topology", topology);
  sp_cli_files_input (files, "--deepspeed-config", ds_s);
  sp_cli_files_output (files, "--plot", plot_s);
  sp_cli_files_output (files, "--emit-deepspeed-config", emit_s);
  if (!sp_cli_files_check (files))
    return SP_EXIT_USAGE;
  SpModel model;
  if (!sp_model_open (model_s ? model_s : SP_MODEL_DEFAULT, &model, &error))
    return sp_cli_input_error (CMD, error);
  if (model.moe_experts == 0)
    for (guint i = 0; i < ep_want->len; i++)
      if (g_array_index (ep_want, guint32, i) > 1)
        return sp_cli_fail (CMD, SP_EXIT_USAGE,
                            "--expert-parallel %u: model %s has no MoE layers (only 1 applies)",
                            g_array_index (ep_want, guint32, i), model.name);
  /* the step model's settings: DeepSpeed's defaults, or the user's file */
  SpShardingOptions knobs;
  sp_sharding_options_init (&knobs);
  if (ds_s)
    {
      g_auto (GStrv) over = NULL, warnings = NULL;
      if (!sp_deepspeed_config_apply_knobs_file (ds_s, &knobs, &model, &over, &warnings, &error))
        return sp_cli_input_error (CMD, error);
      for (char **w = warnings; w && *w; w++)
        fprintf (stderr, "shardplan %s: warning: %s\n", CMD, *w);
      if (over && over[0])
        {
          g_autofree char *list = g_strjoinv (", ", over);
          fprintf (stderr, "shardplan %s: note: %s sets %s: the sweep varies %s itself, so the "
                   "file's %s not used\n", CMD, ds_s, list, over[1] ? "these" : "it",
                   over[1] ? "values are" : "value is");
        }
    }
  g_autoptr (GPtrArray) topos = g_ptr_array_new_with_free_func ((GDestroyNotify) sp_topo_free);
  g_autoptr (GArray) rows = g_array_new (FALSE, TRUE, sizeof (SpSweepRow));
  SpSweepTally tally = { g_ptr_array_new_with_free_func (g_free), g_array_new (FALSE, FALSE, sizeof (guint)),
                  g_array_new (FALSE, FALSE, sizeof (int)) };
  guint64 lcm = 1; /* of the worlds: the default batch suits every node count */
  for (guint k = 0; k < nodes->len; k++)
    {
      SpTopo *t = sp_cli_topo_open (CMD, topology ? topology : DEFAULT_TOPOLOGY,
                                    g_array_index (nodes, guint32, k), &error);
      if (t == NULL)
        return sp_cli_error (CMD, error);
      g_ptr_array_add (topos, t);
      guint64 a = lcm, b = sp_topo_world_size (t);
      while (b)
        {
          guint64 r = a % b;
          a = b;
          b = r;
        }
      lcm = MIN (lcm / a * sp_topo_world_size (t), G_GUINT64_CONSTANT (1) << 30);
    }
  gboolean batch_given = global_batch != 0;
  if (global_batch == 0)
    global_batch = (guint32) MIN ((guint64) model.micro_batch * model.grad_accum * lcm, 1u << 30);
  g_autoptr (GArray) eps = g_array_new (FALSE, FALSE, sizeof (guint32));
  guint32 any_ep = 0; /* node counts with an expert-parallel size DeepSpeed accepts */
  g_autofree char *ep_why = NULL;
  for (guint k = 0; k < topos->len; k++)
    {
      const SpTopo *t = g_ptr_array_index (topos, k);
      guint32 W = sp_topo_world_size (t);
      expert_sizes (&model, W, ep_want, eps, &tally, &ep_why);
      if (eps->len)
        any_ep++;
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
          enumerate (t, mb, (guint32) (global_batch / ((guint64) mb * W)), eps, shards, hpzs,
                     zeropp, rows, &tally);
        }
    }
  if (rows->len == 0 && any_ep == 0)
    return sp_cli_fail (CMD, SP_EXIT_USAGE,
                        "no configuration to sweep: DeepSpeed accepts none of the expert-parallel "
                        "sizes --expert-parallel %s for %s (%u experts) on these node counts "
                        "(%s)", ep_s ? ep_s : "all", model.name, model.moe_experts,
                        ep_why ? ep_why : "an expert-parallel size must divide the experts and "
                        "the world");
  if (rows->len == 0)
    return sp_cli_fail (CMD, SP_EXIT_USAGE,
                        "no configuration to sweep: the global batch %u%s is not a multiple of "
                        "any micro-batch x GPUs (--global-batch, --micro-batch)", global_batch,
                        batch_given ? ""
                        : " (the default: micro-batch x grad_accum x the least common multiple "
                          "of the world sizes, at most 2^30)");
  SpProgress *progress = sp_progress_new (CMD, rows->len, "configurations", quiet);
  Sweep sw = { &model, &knobs, global_batch, efficiency, sim_model, sim_opts,
               (SpSweepRow *) rows->data, progress };
  GThreadPool *pool = g_thread_pool_new (simulate_row, &sw, (gint) jobs, FALSE, NULL);
  for (guint i = 0; i < rows->len; i++)
    g_thread_pool_push (pool, GUINT_TO_POINTER (i + 1), NULL);
  g_thread_pool_free (pool, FALSE, TRUE);
  sp_progress_free (progress);
  int rc = SP_EXIT_OK;
  SpSweepRow *all = (SpSweepRow *) rows->data;
  for (guint i = 0; i < rows->len; i++)
    if (all[i].error != NULL && rc == SP_EXIT_OK)
      {
        rc = sp_cli_error (CMD, all[i].error);
        all[i].error = NULL;
      }
  /* rows the builder refused leave the table */
  g_autoptr (GArray) kept = g_array_new (FALSE, TRUE, sizeof (SpSweepRow));
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
  SpSweepRow *r = (SpSweepRow *) kept->data;
  guint n = kept->len;
  SpSweepPick pick;
  recommend (r, n, uncertainty, &pick);
  g_autofree char *why = pick.why;
  if (format != SP_FORMAT_CSV) /* csv has no place for it */
    margin_std_error (&sw, r, &pick);
  const SpTopoSpec *ts = sp_topo_spec (g_ptr_array_index (topos, 0));
  SpSweepContext ctx = { &model, ts->name, global_batch, efficiency, uncertainty, &tally, &knobs,
                         ds_s };
  g_autofree char *rebuild = NULL;
  if (emit_s)
    {
      if (pick.best < 0)
        return sp_cli_fail (CMD, SP_EXIT_FAILURE,
                            "--emit-deepspeed-config: no configuration fits in GPU memory; '%s' "
                            "not written", emit_s);
      SpShardingOptions sh;
      SpModel m;
      row_options (&r[pick.best], &knobs, &model, &sh, &m);
      g_autofree char *ds = sp_deepspeed_config_to_json (&sh, &m, r[pick.best].world);
      if (!sp_cli_write_output (emit_s, ds, strlen (ds), &error))
        return sp_cli_error (CMD, error);
      g_autofree char *eff = efficiency != 0.5 ? g_strdup_printf (" --compute-efficiency %g",
                                                                  efficiency)
                                               : g_strdup ("");
      /* ep_size is a MoE layer argument, not a config key: on the command */
      g_autofree char *ep = r[pick.best].ep > 1
                              ? g_strdup_printf (" --expert-parallel %u", r[pick.best].ep)
                              : g_strdup ("");
      g_autofree char *qm = shell_word (model_s ? model_s : SP_MODEL_DEFAULT);
      g_autofree char *qt = shell_word (topology ? topology : DEFAULT_TOPOLOGY);
      g_autofree char *qe = shell_word (emit_s);
      rebuild = g_strdup_printf ("shardplan plan -m %s -t %s -n %u%s%s --deepspeed-config %s",
                                 qm, qt, r[pick.best].nodes, eff, ep, qe);
    }
  g_autoptr (GString) out = g_string_new (NULL);
  if (format == SP_FORMAT_JSON)
    {
      g_autofree char *j = sp_sweep_format_json (&ctx, r, n, &pick);
      g_string_append (out, j);
    }
  else if (format == SP_FORMAT_CSV)
    sp_sweep_format_csv (out, r, n);
  else
    {
      SpSimContention used = sim_opts.contention;
      if (used == SP_SIM_CONTENTION_DEFAULT)
        used = sp_sim_contention_default (sim_model);
      sp_sweep_format_text (out, &ctx, ts, sim_model, used, r, n, &pick, rebuild);
    }
  g_ptr_array_unref (tally.reasons);
  g_array_unref (tally.counts);
  g_array_unref (tally.verdicts);
  if (plot_s)
    {
      g_autofree char *title = g_strdup_printf ("%s on %s", model.name, ts->name);
      if (!sp_sweep_write_plot (plot_s, r, n, pick.best, ts->gpu_memory_gib, ts->gpu_model,
                                title, &error))
        return sp_cli_error (CMD, error);
    }
  if (!sp_cli_write_output (NULL, out->str, out->len, &error))
    return sp_cli_error (CMD, error);
  if (!quiet)
    {
      char label[64];
      if (emit_s)
        sp_cli_wrote (CMD, emit_s, "DeepSpeed config of #%d %s", pick.best + 1,
                      sp_sweep_label (&r[pick.best], label, sizeof label));
      sp_cli_wrote (CMD, plot_s, "plot of %u %s", n, sp_cli_plural (n, "configuration",
                                                                 "configurations"));
    }
  return SP_EXIT_OK;
}
