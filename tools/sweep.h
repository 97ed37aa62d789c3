/* tools/sweep.h — the arithmetic behind `shardplan sweep`'s throughput
 * columns (tools/sweep-metrics.c), kept apart from the command so a test
 * can check it by hand.
 *
 * MODEL FLOPs (the MFU convention of PaLM, Chowdhery et al. 2022,
 * appendix B): per token 6·N + 12·L·h·s, N the parameters a token uses
 * (every parameter of a dense model; with MoE, the experts a token does not
 * visit are left out: N − moe_layers·(E − k)·(2hf + f + h)), L layers,
 * h hidden, s sequence length.  6·N is the forward (2N) and backward (4N)
 * matrix multiplies, 12·L·h·s the attention scores and their backward.
 * Activation recomputation is NOT counted (it is hardware work, not model
 * work), so MFU stays comparable between checkpointing choices.
 */
#pragma once
#include <glib.h>
#include "shardplan/shardplan.h"
#include "shardplan/workload.h"
#include "shardplan/topo.h"
#include "shardplan/sim.h"

G_BEGIN_DECLS

/* Model FLOPs per token (convention above). */
double sp_sweep_model_flops_per_token (const SpModel *model);

typedef struct {
  double tokens_per_s;    /* global_batch · seq_len / step time, the whole job */
  double tflops_per_gpu;  /* model FLOPs per step / step time / world, 1e12 FLOP/s */
  double mfu;             /* tflops_per_gpu / peak_tflops, in [0, 1] */
} SpSweepThroughput;

/* Throughput of one optimizer step of `global_batch` sequences (of
 * model->seq_len tokens) on `world` GPUs of `peak_tflops` (dense bf16 peak,
 * 1e12 FLOP/s) that takes `step_us` µs. */
void sp_sweep_throughput (const SpModel *model, guint64 global_batch, guint32 world, double step_us,
                          double peak_tflops, SpSweepThroughput *out_throughput);

/* Bytes that cross node boundaries in one step of `plan`, the whole job
 * (every group of every op; composites skipped, their sub-ops counted),
 * ranks placed in blocks of `gpus_per_node` (topo.h).  For an op of B bytes
 * (nccl-tests' size convention, plan.h) on a group of n ranks with c_i on
 * each of its k nodes, the volume no algorithm can avoid: every node
 * receives what it does not hold,
 *   all_gather, reduce_scatter, broadcast, reduce   (k − 1)·B
 *   all_reduce (reduce-scatter + all-gather)        2·(k − 1)·B
 *   all_to_all (B per rank, B/n to each peer)       Σ_i c_i·(n − c_i)/n·B
 * (NCCL's ring crosses k node boundaries with (n−1)/n·B each, so it sends
 * about this much; the tree and the all-to-all match it). */
double sp_sweep_inter_node_bytes (const SpPlan *plan, const SpGroups *groups, guint32 gpus_per_node);

/* ---- the command's rows and their output (tools/cmd-sweep.c,
 * tools/sweep-output.c) ---------------------------------------------------- */

/* One configuration of the grid and what its simulation gave. */
typedef struct {
  guint32 nodes, world, shard;
  gboolean hier;
  guint32 hpz;
  gboolean qwz, qgz;
  guint32 micro_batch, grad_accum;
  guint32 ep;     /* MoE expert-parallel size (1: every expert on every rank) */
  const SpTopo *topo;
  double comm_us, exposed_us, step_us, memory_gib, inter_gb;
  guint64 step_ns; /* the simulator's step, exactly (step_us is it in µs) */
  /* the parameter all-gather's groups (hpZ's zero_param, else shard):
   * how many of them, and how many inside one NVLink domain (issue 17) */
  guint32 gather_groups, gather_in_domain;
  SpSweepThroughput tp;
  gboolean fits;
  char *skip;     /* the builder refused it (qwZ grouping): why */
  GError *error;
} SpSweepRow;

/* What was not swept, and why: reason → count, in first-seen order. */
typedef struct {
  GPtrArray *reasons; /* char*, owned */
  GArray *counts;     /* guint */
  GArray *verdicts;   /* SpDsVerdict, or -1 for the builder / the batch */
} SpSweepTally;

/* The recommendation (indices into the rows, -1 = none). */
typedef struct {
  gint best, runner;
  double margin_pct;  /* runner-up's step over the best's, % */
  /* on a topology with [calibration] std_errors: the standard error of
   * log(runner-up's step / the best's) those give (sp_calib_gradient);
   * INFINITY when a step depends on a value the fit did not determine;
   * NAN without them (or without a runner-up) */
  double margin_se;
  guint near;         /* other fitting rows within the uncertainty */
  gint lean;          /* the least memory among the best and those near it */
  char *why;
} SpSweepPick;

/* "nvlink" (every parameter all-gather group inside one NVLink domain),
 * "network" (none) or "mixed". */
const char *sp_sweep_gather_fabric (const SpSweepRow *row);

/* What every output format states besides the rows. */
typedef struct {
  const SpModel *model;
  const char *cluster;
  guint64 global_batch;
  double efficiency, uncertainty_pct;
  const SpSweepTally *tally;
  /* the step model's DeepSpeed settings every row is planned with, and
   * the --deepspeed-config file they came from (NULL: DeepSpeed's
   * defaults) */
  const SpShardingOptions *knobs;
  const char *ds_config;
} SpSweepContext;

/* ZeRO++ on (qwZ, qgZ or hpZ). */
gboolean sp_sweep_is_zeropp (const SpSweepRow *row);
/* "ZeRO-3", "MiCS S=16 hier", "ZeRO++ qwZ+hpZ=8+qgZ", with " ep=4" after
 * it for an expert-parallel size > 1, into buf; returns buf. */
const char *sp_sweep_label (const SpSweepRow *row, char *buf, gsize size);
/* The formats (tools/sweep-output.c).  `rebuild`: the plan command that
 * rebuilds the emitted DeepSpeed config's plan, or NULL. */
char *sp_sweep_format_json (const SpSweepContext *c, const SpSweepRow *rows, guint n,
                            const SpSweepPick *p);
void sp_sweep_format_csv (GString *out, const SpSweepRow *rows, guint n);
/* The settings line of the text header (no newline; g_free). */
char *sp_sweep_knobs_line (const SpSweepContext *c);
void sp_sweep_format_text (GString *out, const SpSweepContext *c, const SpTopoSpec *ts,
                           SpSimModel sim_model, SpSimContention used, const SpSweepRow *rows,
                           guint n, const SpSweepPick *p, const char *rebuild);
/* The --plot chart: tokens/s and memory per GPU (log) against the row
 * number, a series per kind, row `best` (or none: -1) marked, the GPU's
 * memory `gpu_gib` drawn as a line labelled with `gpu_model`. */
gboolean sp_sweep_write_plot (const char *path, const SpSweepRow *rows, guint n, gint best,
                              double gpu_gib, const char *gpu_model, const char *title,
                              GError **error);

G_END_DECLS
