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

G_END_DECLS
