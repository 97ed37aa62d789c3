/* `shardplan sweep`'s output: the text table, CSV, JSON (DESIGN.md's
 * contract, keys added, none removed) and the plot (tools/sweep.h). */
#include "config.h"
#include "cli.h"
#include "plot.h"
#include "sweep.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

static const char *
verdict_word (int v)
{
  return v == SP_DS_REJECTS ? "rejects" : v == SP_DS_FALLS_BACK ? "falls back" : "not run";
}

static void
json_row (JsonBuilder *b, const SpSweepRow *r, guint64 global_batch)
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
  M ("config"); json_builder_add_string_value (b, sp_sweep_label (r, lb, sizeof lb));
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
  M ("param_gather_fabric"); json_builder_add_string_value (b, sp_sweep_gather_fabric (r));
  M ("expert_parallel_size"); json_builder_add_int_value (b, r->ep > 1 ? r->ep : 1);
#undef M
}

char *
sp_sweep_format_json (const SpSweepContext *c, const SpSweepRow *rows, guint n, const SpSweepPick *p)
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
  json_builder_set_member_name (b, "deepspeed_config");
  if (c->ds_config)
    json_builder_add_string_value (b, c->ds_config);
  else
    json_builder_add_null_value (b);
  json_builder_set_member_name (b, "deepspeed_settings");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "overlap_comm");
  json_builder_add_boolean_value (b, c->knobs->overlap_comm);
  json_builder_set_member_name (b, "contiguous_gradients");
  json_builder_add_boolean_value (b, c->knobs->contiguous_gradients);
  const struct { const char *k; guint64 v; } nums[] = {
    { "reduce_bucket_size", c->knobs->reduce_bucket_size },
    { "allgather_bucket_size", c->knobs->allgather_bucket_size },
    { "stage3_prefetch_bucket_size", c->knobs->prefetch_bucket_size },
    { "stage3_max_live_parameters", c->knobs->max_live_parameters },
    { "stage3_max_reuse_distance", c->knobs->max_reuse_distance },
    { "stage3_param_persistence_threshold", c->knobs->param_persistence_threshold },
  };
  for (guint i = 0; i < G_N_ELEMENTS (nums); i++)
    {
      json_builder_set_member_name (b, nums[i].k);
      json_builder_add_int_value (b, (gint64) nums[i].v);
    }
  json_builder_end_object (b);
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
        json_builder_add_string_value (b, sp_sweep_label (&rows[p->runner], lr, sizeof lr));
      json_builder_set_member_name (b, "margin_pct");
      json_builder_add_double_value (b, p->margin_pct);
      /* the calibration's standard error of log(runner-up / best): null
       * without it (SpSweepPick), "undetermined" where the two steps move
       * differently with a value the fit did not determine */
      json_builder_set_member_name (b, "margin_std_error");
      if (isnan (p->margin_se))
        json_builder_add_null_value (b);
      else if (isinf (p->margin_se))
        json_builder_add_string_value (b, "undetermined");
      else
        json_builder_add_double_value (b, p->margin_se);
      json_builder_set_member_name (b, "within_uncertainty");
      json_builder_add_int_value (b, p->near);
      json_builder_set_member_name (b, "least_memory_within_uncertainty");
      json_builder_add_string_value (b, sp_sweep_label (&rows[p->lean], lr, sizeof lr));
      json_builder_end_object (b);
    }
  json_builder_end_object (b);
  return sp_cli_json_text (b, TRUE);
}

void
sp_sweep_format_csv (GString *out, const SpSweepRow *r, guint n)
{
  g_string_append (out, "nodes,world_size,shard_size,hierarchical,comm_us,exposed_comm_us,"
                        "step_us,memory_gib,fits,config,hpz_partition_size,quantized_weights,"
                        "quantized_gradients,micro_batch,grad_accum,tokens_per_s,tflops_per_gpu,"
                        "mfu,inter_node_gb,expert_parallel_size\n");
  for (guint i = 0; i < n; i++)
    {
      char lb[64];
      g_string_append_printf (out, "%u,%u,%u,%s,%.3f,%.3f,%.3f,%.4f,%s,%s,%u,%s,%s,%u,%u,%.1f,%.3f,"
                                   "%.4f,%.3f,%u\n",
                              r[i].nodes, r[i].world, r[i].shard, r[i].hier ? "true" : "false",
                              r[i].comm_us, r[i].exposed_us, r[i].step_us, r[i].memory_gib,
                              r[i].fits ? "true" : "false", sp_sweep_label (&r[i], lb, sizeof lb),
                              r[i].hpz > 1 ? r[i].hpz : 1, r[i].qwz ? "true" : "false",
                              r[i].qgz ? "true" : "false", r[i].micro_batch, r[i].grad_accum,
                              r[i].tp.tokens_per_s, r[i].tp.tflops_per_gpu, r[i].tp.mfu,
                              r[i].inter_gb, r[i].ep > 1 ? r[i].ep : 1);
    }
}

const char *
sp_sweep_gather_fabric (const SpSweepRow *row)
{
  return row->gather_in_domain == row->gather_groups ? sp_topo_spec_local_fabric (sp_topo_spec (row->topo))
         : row->gather_in_domain == 0               ? "network"
                                                    : "mixed";
}

/* Rack-scale NVLink (issue 17): whether the recommendation's parameter
 * all-gathers stay inside one NVLink domain, and if not, what keeping them
 * there costs. */
static void
fabric_lines (GString *out, const SpTopoSpec *ts, const SpSweepRow *r, guint n,
              const SpSweepPick *p)
{
  guint32 domain = sp_topo_spec_nvlink_domain (ts);
  if (domain <= ts->gpus_per_node || p->best < 0)
    return;
  const SpSweepRow *b = &r[p->best];
  g_string_append_printf (out, "nvlink: domains of %u GPUs (%u %s); the recommendation's "
                               "parameter all-gathers ",
                          domain, domain / ts->gpus_per_node,
                          sp_cli_plural (domain / ts->gpus_per_node, "node", "nodes"));
  if (b->gather_in_domain == b->gather_groups)
    {
      g_string_append (out, "stay inside one domain\n");
      return;
    }
  g_string_append_printf (out, "cross domains (%u of %u groups inside one)", b->gather_in_domain,
                          b->gather_groups);
  gint alt = -1;
  for (guint i = 0; i < n; i++)
    if (r[i].fits && r[i].gather_groups > 0 && r[i].gather_in_domain == r[i].gather_groups
        && (alt < 0 || r[i].step_us < r[alt].step_us))
      alt = (gint) i;
  if (alt < 0)
    {
      g_string_append (out, "; no fitting configuration of the grid keeps them inside one\n");
      return;
    }
  char lb[64];
  g_string_append_printf (out, "; the fastest that keeps them inside one: #%d %s, %.1f ms "
                               "(%+.1f %% step time)\n",
                          alt + 1, sp_sweep_label (&r[alt], lb, sizeof lb), r[alt].step_us / 1e3,
                          100.0 * (r[alt].step_us / b->step_us - 1));
}

char *
sp_sweep_knobs_line (const SpSweepContext *c)
{
  const SpShardingOptions *k = c->knobs;
  g_autofree char *from = c->ds_config ? g_strdup_printf ("from %s", c->ds_config)
                                       : g_strdup ("DeepSpeed's defaults; --deepspeed-config FILE");
  return g_strdup_printf ("deepspeed settings (%s): overlap_comm %s, contiguous_gradients %s, "
                          "reduce_bucket_size %" G_GUINT64_FORMAT ", stage3_prefetch_bucket_size %"
                          G_GUINT64_FORMAT ", stage3_max_live_parameters %" G_GUINT64_FORMAT
                          ", stage3_max_reuse_distance %" G_GUINT64_FORMAT
                          ", stage3_param_persistence_threshold %" G_GUINT64_FORMAT,
                          from, k->overlap_comm ? "true" : "false",
                          k->contiguous_gradients ? "true" : "false", k->reduce_bucket_size,
                          k->prefetch_bucket_size, k->max_live_parameters, k->max_reuse_distance,
                          k->param_persistence_threshold);
}

void
sp_sweep_format_text (GString *out, const SpSweepContext *c, const SpTopoSpec *ts, SpSimModel sim_model,
             SpSimContention used, const SpSweepRow *r, guint n, const SpSweepPick *p, const char *emitted)
{
  g_autofree char *env = sp_cli_nccl_env (ts);
  g_string_append_printf (out, "sweep: %s (%.4g parameters) on %s (%s, %.4g GiB, %.4g TFLOP/s peak), "
                               "sim model %s, contention %s%s\n",
                          c->model->name, (double) sp_model_n_params (c->model), ts->name,
                          ts->gpu_model, ts->gpu_memory_gib, ts->gpu_tflops,
                          sp_sim_model_name (sim_model), sp_sim_contention_name (used), env);
  g_string_append_printf (out, "global batch %" G_GUINT64_FORMAT " sequences x %u tokens; model FLOPs "
                               "6N + 12Lhs = %.4g per token (recomputation not counted); assumed: "
                               "compute at %.2g of peak (--compute-efficiency)\n",
                          c->global_batch, c->model->seq_len,
                          sp_sweep_model_flops_per_token (c->model), c->efficiency);
  g_autofree char *knobs = sp_sweep_knobs_line (c);
  g_string_append_printf (out, "%s\n", knobs);
  /* MoE: the expert-parallel column, and where DeepSpeed takes it */
  const gboolean moe = c->model->moe_experts > 0;
  if (moe)
    g_string_append_printf (out, "moe: %u experts; ep = the expert-parallel size, DeepSpeed's "
                                 "deepspeed.moe.layer.MoE(..., ep_size=ep) argument (not a config "
                                 "key); DeepSpeed's engine refuses MoE with ZeRO stage 3 (\"MoE not "
                                 "supported with Stage 3\"): these rows extrapolate its expert-data-"
                                 "parallel rule to stage 3\n",
                            c->model->moe_experts);
  int lw = 22; /* the config column */
  for (guint i = 0; i < n; i++)
    {
      char lb[64];
      lw = MAX (lw, (int) strlen (sp_sweep_label (&r[i], lb, sizeof lb)));
    }
  g_string_append_printf (out, "%3s %-*s %5s %10s %10s %12s%s %3s %4s %12s %16s %12s %10s %4s %12s "
                               "%14s %6s %13s\n",
                          "#", lw, "config", "nodes", "world_size", "shard_size", "hierarchical",
                          moe ? "    ep" : "", "mb", "gas", "comm_us", "exposed_comm_us", "step_us",
                          "memory_gib", "fits", "tokens_per_s", "tflops_per_gpu", "mfu",
                          "inter_node_gb");
  for (guint i = 0; i < n; i++)
    {
      char lb[64], ep[16] = "";
      if (moe)
        g_snprintf (ep, sizeof ep, " %5u", r[i].ep > 1 ? r[i].ep : 1);
      g_string_append_printf (out, "%3u %-*s %5u %10u %10u %12s%s %3u %4u %12.1f %16.1f %12.1f %10.2f "
                                   "%4s %12.0f %14.1f %6.3f %13.1f%s\n",
                              i + 1, lw, sp_sweep_label (&r[i], lb, sizeof lb), r[i].nodes, r[i].world,
                              r[i].shard, r[i].hier ? "yes" : "no", ep, r[i].micro_batch, r[i].grad_accum,
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
  const SpSweepRow *b = &r[p->best];
  if (p->runner >= 0)
    g_string_append_printf (out, "runner-up: #%d %s on %u %s, micro-batch %u: %.1f ms, %.1f %% "
                                 "slower\n",
                            p->runner + 1, sp_sweep_label (&r[p->runner], lr, sizeof lr),
                            r[p->runner].nodes, sp_cli_plural (r[p->runner].nodes, "node", "nodes"),
                            r[p->runner].micro_batch,
                            r[p->runner].step_us / 1e3, p->margin_pct);
  if (p->runner >= 0 && isinf (p->margin_se))
    g_string_append (out, "note: the calibration does not determine that margin: the two steps "
                          "move differently with a value its fit left undetermined (the "
                          "topology's [calibration] std_errors)\n");
  else if (p->runner >= 0 && p->margin_se < 1e-6)
    /* below 0.0001 %: the fitted values move both steps alike */
    g_string_append (out, "note: the calibration's values move both steps alike: that margin does "
                          "not depend on them (the fitted values' errors, not the model's)\n");
  else if (p->runner >= 0 && !isnan (p->margin_se))
    {
      /* the margin in log time against two of its standard errors */
      double m = log1p (p->margin_pct / 100);
      g_string_append_printf (out, "note: the calibration's standard error of that margin: %.3g %% "
                                   "(the fitted values' errors, not the model's, which may still "
                                   "reverse it); %s\n",
                              expm1 (p->margin_se) * 100,
                              m > 2 * p->margin_se ? "the margin is beyond two of them"
                                                   : "the margin is within two of them: the "
                                                     "calibration cannot rank the two");
    }
  if (p->near > 0)
    g_string_append_printf (out, "note: %u other configuration%s within %.3g %% of the best step "
                                 "time, the simulator's uncertainty (bench/RESULTS.md \"Fidelity\": "
                                 "<= 10 %% median error per collective); the simulator cannot rank "
                                 "%s: measure before choosing on speed alone\n",
                            p->near, p->near == 1 ? " is" : "s are", c->uncertainty_pct,
                            p->near == 1 ? "the two" : "them");
  if (p->near > 0 && p->lean != p->best)
    g_string_append_printf (out, "note: the least memory among them: #%d %s, %.1f GiB, %.1f ms\n",
                            p->lean + 1, sp_sweep_label (&r[p->lean], lr, sizeof lr),
                            r[p->lean].memory_gib, r[p->lean].step_us / 1e3);
  fabric_lines (out, ts, r, n, p);
  if (emitted)
    g_string_append_printf (out, "deepspeed config: written; this command rebuilds its plan: %s\n",
                            emitted);
  if (emitted && b->ep > 1)
    g_string_append_printf (out, "deepspeed config: ep_size is not a config key: build the MoE "
                                 "layers with deepspeed.moe.layer.MoE(..., ep_size=%u)\n",
                            b->ep);
  g_string_append_printf (out, "recommended: #%d %s on %u %s, micro-batch %u x %u accumulation "
                               "(%s)\n",
                          p->best + 1, sp_sweep_label (b, lb, sizeof lb), b->nodes,
                          sp_cli_plural (b->nodes, "node", "nodes"), b->micro_batch,
                          b->grad_accum, p->why);
}

gboolean
sp_sweep_write_plot (const char *path, const SpSweepRow *rows, guint n, gint best, double gpu_gib,
                     const char *gpu_model, const char *title, GError **error)
{
  g_autoptr (SpPlot) plot = sp_plot_new (2, title);
  sp_plot_set_axes (plot, 0, "throughput", "configuration (# in the table)", FALSE, "tokens/s",
                    FALSE);
  /* memory spans decades (S = 1 … world size): log, with the capacity drawn */
  sp_plot_set_axes (plot, 1, "memory per GPU", "configuration (# in the table)", FALSE,
                    "memory (GiB, log scale)", TRUE);
  sp_plot_set_integer_ticks (plot, 0, TRUE, FALSE);
  sp_plot_set_integer_ticks (plot, 1, TRUE, FALSE);
  g_autofree double *x = g_new (double, n ? n : 1);
  g_autofree double *yt = g_new (double, n ? n : 1);
  g_autofree double *ym = g_new (double, n ? n : 1);
  static const char *const kinds[] = { "ZeRO-3", "MiCS flat", "MiCS hierarchical", "ZeRO++" };
  for (int k = 0; k < 4; k++)
    {
      gsize m = 0;
      for (guint i = 0; i < n; i++)
        {
          const SpSweepRow *r = &rows[i];
          int kind = sp_sweep_is_zeropp (r) ? 3 : r->hier ? 2 : r->shard == r->world ? 0 : 1;
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
      g_autofree char *label = g_strdup_printf ("recommended: #%d", best + 1);
      sp_plot_add_mark (plot, 0, label, best + 1, rows[best].tp.tokens_per_s);
      sp_plot_add_mark (plot, 1, label, best + 1, rows[best].memory_gib);
    }
  g_autofree char *capacity = g_strdup_printf ("%s: %.4g GiB", gpu_model && *gpu_model ? gpu_model
                                                                                      : "GPU memory",
                                               gpu_gib);
  sp_plot_add_hline (plot, 1, capacity, gpu_gib);
  return sp_plot_save (plot, path, error);
}

