/* shardplan/memory.h — bytes per GPU of a ZeRO-3 / MiCS / ZeRO++ training
 * step, so a sweep knows which shard sizes fit.
 *
 * Model states, for the tensor list of shardplan/workload.h, with
 * P_t = ceil(n_t / G) the elements of tensor t one rank holds (G = S for
 * dense tensors, W / E_p for expert tensors; DeepSpeed pads every tensor to
 * a multiple of G, deepspeed-semantics.md §1.3):
 *   params     = 2·Σ P_t                  (bf16/fp16 partitions)
 *              + 2·Σ_persistent n_t       (tensors <= the persistence
 *                                          threshold stay gathered whole)
 *              + 2·Σ_dense (W/Z)·P_t      (hpZ secondary partition, Z > 1)
 *   grads      = 2·Σ P_t                  (stage-3 grad partition buffer,
 *                                          model dtype)
 *   optimizer  = 12·Σ P_t                 (fp32 master weights, Adam m, v)
 * so without padding or persistence model states are the ZeRO paper's
 * (2 + 2 + K)·Ψ/N_d = 16Ψ/N_d for mixed-precision Adam (Rajbhandari et al.,
 * "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models",
 * SC'20, Figure 1: Ψ = 7.5B, N_d = 64 → 1.875 GB).
 * Buffers:
 *   reduce_bucket = 2·reduce_bucket_size  (contiguous_gradients, the
 *                                          default: stage3's flat IPG
 *                                          bucket, allocated whole at
 *                                          start-up), or without it
 *                   2 × the most gradient elements a bucket holds before
 *                   it is reduced (they stay in their own tensors)
 *   gathered      = 2 × the peak, over the module trace of one micro-step,
 *                   of the gathered (padded, G·P_t) parameters alive at
 *                   once: those of the module running, those kept for
 *                   reuse (stage3_max_reuse_distance) and those prefetched
 *                   (stage3_prefetch_bucket_size, and none once
 *                   stage3_max_live_parameters are gathered); persistent tensors are in
 *                   `params` already.
 * Activations (16-bit, per GPU, no tensor or sequence parallelism), from
 * Korthikanti et al., "Reducing Activation Recomputation in Large
 * Transformer Models", MLSys 2023 (arXiv 2205.05198, 2022), §4:
 *   one layer   = s·b·h·(34 + 5·a·s/h) bytes
 *   without checkpointing: L × one layer
 *   with checkpointing:    L × 2·s·b·h (each layer's input) + one layer
 *                          (the layer being recomputed)
 *   plus the output side: 5·s·b·h (embedding dropout mask, final LayerNorm
 *   and output projection inputs) + 4·s·b·V (fp32 logits for the loss).
 *   MoE layers use the dense formula (expert capacity buffers are not
 *   modelled).
 * Reserve: a fixed amount for the CUDA context, NCCL buffers and allocator
 * fragmentation; the default 2 GiB is an estimate, not a measurement — set
 * it from `nvidia-smi` on an idle process of your stack.
 */
#pragma once
#include <glib.h>
#include "shardplan/workload.h"

G_BEGIN_DECLS

#define SP_MEMORY_DEFAULT_RESERVE_BYTES (G_GUINT64_CONSTANT (2) << 30) /* 2 GiB, estimate */

typedef struct {
  guint64 reserve_bytes;   /* framework reserve, bytes */
} SpMemoryOptions;

/* reserve = SP_MEMORY_DEFAULT_RESERVE_BYTES. */
void sp_memory_options_init (SpMemoryOptions *opts);

/* Bytes per GPU (the largest over ranks where ranks differ: rank 0 holds a
 * full partition of every tensor). */
typedef struct {
  guint64 params_bytes;
  guint64 grads_bytes;
  guint64 optimizer_bytes;
  guint64 model_states_bytes;  /* params + grads + optimizer */
  guint64 reduce_bucket_bytes;
  guint64 gathered_bytes;
  guint64 activation_bytes;
  guint64 reserve_bytes;
  guint64 total_bytes;         /* everything above except model_states (counted once) */
} SpMemoryEstimate;

/* Estimate the memory of `model` sharded by `sharding` over `world_size`
 * GPUs.  Checks the same things sp_workload_build_plan() checks about the
 * sizes (stage 3, S divides W, experts divisible by E_p …) and fails with
 * the same error codes. */
gboolean sp_memory_estimate (const SpModel *model, const SpShardingOptions *sharding,
                             guint32 world_size, const SpMemoryOptions *opts,
                             SpMemoryEstimate *out_estimate, GError **error);

/* TRUE iff total_bytes <= gpu_memory_gib × 2^30. */
gboolean sp_memory_fits (const SpMemoryEstimate *estimate, double gpu_memory_gib);

G_END_DECLS
