/* lib/workload-private.h — the model's tensor list and module trace, shared
 * by the plan builder (workload-step.c) and the memory model (memory.c).
 * Not installed. */
#pragma once
#include "shardplan/workload.h"

/* Who partitions a tensor. */
typedef enum {
  SP_WL_DENSE = 0,   /* shard family (S ranks) */
  SP_WL_EXPERT = 1,  /* expert_data family (W / E_p ranks), local experts only */
} SpWlPart;

typedef struct {
  char *name;           /* "L3.mlp.fc1.weight" */
  guint64 numel;
  guint32 ndim;         /* 1 or 2 */
  guint64 shape[2];
  gint32 layer;         /* -1 for embedding / head tensors */
  SpWlPart part;
  gboolean persistent;  /* numel <= param_persistence_threshold */
} SpWlTensor;

/* One module use: a compute op in forward or backward order. */
typedef struct {
  char *name;           /* "L3.fwd", "L3.experts.bwd", "embed.fwd" */
  gint32 layer;
  gboolean backward;
  guint32 n_tensors;
  guint32 *tensors;     /* indices into the tensor list */
  guint64 flops;        /* per rank */
  /* MoE token all-to-alls around this use (elements per rank, 0 = none) */
  guint64 a2a_before;
  guint64 a2a_after;
} SpWlUse;

typedef struct {
  GPtrArray *tensors;   /* SpWlTensor* */
  GPtrArray *uses;      /* SpWlUse*: forward uses, then backward uses */
  guint32 n_forward;    /* uses[0 .. n_forward) are forward */
} SpWlTrace;

/* Build the tensor list and the fwd+bwd module trace of one micro-step for
 * `model` with expert-parallel size `ep` (0/1 = none; experts are divided
 * over ep ranks, so only E/ep experts' tensors are local) and the
 * persistence threshold.  Checks the model. */
G_GNUC_INTERNAL SpWlTrace *sp_wl_trace_new (const SpModel *model, guint32 ep,
                                            guint64 persistence_threshold, GError **error);
G_GNUC_INTERNAL void sp_wl_trace_free (SpWlTrace *trace);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (SpWlTrace, sp_wl_trace_free)

/* DeepSpeed's retention rule (partitioned_param_coordinator.py
 * __params_to_release): after use k, tensor t of it stays gathered iff it
 * occurs again in one of the uses visited, in trace order from k+1, while
 * the running sum of their tensors' numel is < max_reuse_distance.
 * Fills keep[k·n + i] for the i-th tensor of use k (array of total
 * Σ n_tensors booleans, indexed by use offset). g_free the result. */
G_GNUC_INTERNAL gboolean *sp_wl_trace_retained (const SpWlTrace *trace, guint64 max_reuse_distance,
                                                guint32 **out_offsets);

/* Elements per rank of one token all-to-all of a MoE layer:
 * E · capacity · h with capacity = max(ceil(tokens·cf·k/E), min_capacity)
 * (DeepSpeed moe/sharded_moe.py _capacity). */
G_GNUC_INTERNAL guint64 sp_wl_moe_a2a_elems (const SpModel *model);

/* bytes per element of the model dtype (2). */
G_GNUC_INTERNAL guint sp_wl_elt (const SpModel *model);

/* The peak, over the uses of one micro-step, of gathered parameter elements
 * alive at once (padded: G·P_t per non-persistent tensor, G = S or We):
 * those gathered and not yet released, plus the uses DeepSpeed's
 * prefetcher has issued (prefetch_bucket_size window, and no more once the
 * elements gathered reach max_live_parameters). */
G_GNUC_INTERNAL guint64 sp_wl_gathered_peak (const SpWlTrace *trace, guint32 S, guint32 We,
                                             guint64 max_reuse_distance,
                                             guint64 prefetch_bucket_size,
                                             guint64 max_live_parameters);

/* The most gradient elements that wait at once, unreduced, in the
 * reduce buckets of one micro-step (the plan builder's bucket rule: a
 * bucket is reduced when the next gradient would overflow `bucket`
 * elements; dense and expert buckets together).  What stage 3 holds
 * instead of its flat contiguous_gradients buffer. */
G_GNUC_INTERNAL guint64 sp_wl_bucket_peak (const SpWlTrace *trace, guint64 bucket);

/* P = ceil(numel / group): the elements one of `group` ranks holds
 * (sp_layout_mics_partition); 0 for group 0. */
G_GNUC_INTERNAL guint64 sp_wl_partition (guint64 numel, guint32 group);
