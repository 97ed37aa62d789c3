/* shardplan/workload.h — a training workload (model + sharding options) and
 * the plan of one training step built from it, as DeepSpeed ZeRO-3 / MiCS /
 * ZeRO++ runs it (shared/reference/deepspeed-semantics.md §1.3–§1.6, §3, §4;
 * DeepSpeed 0.16.4 runtime/zero/{stage3,mics,partition_parameters,
 * partitioned_param_coordinator}.py).
 *
 * THE MODEL is a GPT-style decoder (GPT-2 / Megatron layout, pre-LayerNorm,
 * learned position embeddings, LM head tied to the word embedding).  Its
 * parameter tensors, in forward order, are
 *   embed:  word_embeddings (V × h), position_embeddings (s × h)
 *   layer:  ln1.weight (h), ln1.bias (h), attn.qkv.weight (3h × h),
 *           attn.qkv.bias (3h), attn.dense.weight (h × h), attn.dense.bias (h),
 *           ln2.weight (h), ln2.bias (h), mlp.fc1.weight (f × h),
 *           mlp.fc1.bias (f), mlp.fc2.weight (h × f), mlp.fc2.bias (h)
 *   head:   ln_f.weight (h), ln_f.bias (h), and the word embedding again (tied)
 * so  n_params = L·(4h² + 2hf + 9h + f) + V·h + s·h + 2h, which for f = 4h
 * is the familiar 12·L·h² + 13·L·h + (V + s)·h + 2h (Narayanan et al., SC'21,
 * "Efficient Large-Scale Language Model Training on GPU Clusters", §5.1).
 * A MoE layer (every `moe_every`-th layer, counting from the first, when
 * moe_experts > 0) replaces the MLP by a gate (E × h, no bias) and E experts
 * that each have the four MLP tensors.
 *
 * MODEL JSON (one object; unknown keys and wrong types are errors that name
 * the key; absent keys take the defaults shown):
 *   {"name": "my-gpt",              string, default "custom"
 *    "layers": 24, "hidden": 2048,  required (or "n_params" + "hidden", see below)
 *    "heads": 16,                   required, divides hidden
 *    "ffn_hidden": 8192,            default 4·hidden
 *    "vocab": 50257,                default 50257 (GPT-2's BPE vocabulary)
 *    "seq_len": 2048, "micro_batch": 1, "grad_accum": 1,   defaults as shown
 *    "dtype": "bf16",               "bf16" | "fp16" (aliases of sp_dtype_from_name)
 *    "activation_checkpointing": true,   default true
 *    "n_params": 1.3e9,             optional: without "layers", the layer
 *                                   count is derived from it (rounded to the
 *                                   nearest whole layer, >= 1); with "layers",
 *                                   it must agree with the derived count
 *                                   within 5 % (a check on what the user typed)
 *    "moe": {"experts": 8, "every": 2, "top_k": 1,
 *            "capacity_factor": 1.0, "min_capacity": 4}}   optional
 * Integers may be written as JSON numbers with an exponent (5e8) when whole.
 *
 * DEEPSPEED CONFIG: see sp_deepspeed_config_apply().
 */
#pragma once
#include <glib.h>
#include "shardplan/types.h"
#include "shardplan/plan.h"

G_BEGIN_DECLS

#define SP_MODEL_NAME_MAX 64
#define SP_MODEL_DEFAULT "gpt-13b"
#define SP_MODEL_DEFAULT_VOCAB 50257 /* GPT-2 BPE vocabulary (Radford et al. 2019) */

typedef struct {
  char name[SP_MODEL_NAME_MAX];
  guint32 layers;               /* L >= 1 */
  guint32 hidden;               /* h >= 1 */
  guint32 ffn_hidden;           /* f >= 1 (4h by default) */
  guint32 heads;                /* a >= 1, divides h */
  guint32 vocab;                /* V >= 1 */
  guint32 seq_len;              /* s >= 1, tokens per sequence */
  guint32 micro_batch;          /* b >= 1, sequences per GPU per micro-step */
  guint32 grad_accum;           /* >= 1, micro-steps per optimizer step */
  SpDtype dtype;                /* SP_DTYPE_BFLOAT16 or SP_DTYPE_FLOAT16 */
  gboolean activation_checkpointing; /* one checkpoint per transformer layer */
  guint32 moe_experts;          /* E: 0 = dense model */
  guint32 moe_every;            /* layer i is MoE iff E > 0 and i % every == 0 */
  guint32 moe_top_k;            /* k >= 1 */
  double moe_capacity_factor;   /* DeepSpeed MoE capacity_factor (default 1.0) */
  guint32 moe_min_capacity;     /* DeepSpeed MoE min_capacity (default 4) */
} SpModel;

/* Built-in presets (NULL-terminated static array): "gpt-1b" (24 layers,
 * h 2048, 16 heads, seq 2048: 1.32e9 parameters), "gpt-13b" (the default:
 * 40 layers, h 5120, 40 heads, seq 2048: 12.85e9), "gpt-70b" (80 layers,
 * h 8192, 64 heads, seq 4096: 64.9e9; dense GPT-style, i.e. without the GQA
 * and SwiGLU of Llama-2-70B).  All: micro-batch 1, grad_accum 1, bf16,
 * activation checkpointing on, V 50257. */
const char *const *sp_model_preset_names (void);
/* One line describing a preset (static string), NULL for an unknown name. */
const char *sp_model_preset_description (const char *name);
/* Fill *out_model with a preset.  SP_ERROR_INVALID_WORKLOAD listing the
 * presets for an unknown name. */
gboolean sp_model_preset (const char *name, SpModel *out_model, GError **error);

/* Parse model JSON (format above) of `length` bytes (-1: NUL-terminated);
 * `source_name` (e.g. the file name) prefixes error messages.  Errors:
 * SP_ERROR_INVALID_WORKLOAD naming the key. */
gboolean sp_model_load_data (const char *json, gssize length, const char *source_name,
                             SpModel *out_model, GError **error);
gboolean sp_model_load_file (const char *path, SpModel *out_model, GError **error);
/* What --model X means: a preset name if X is one, otherwise a JSON file. */
gboolean sp_model_open (const char *name_or_file, SpModel *out_model, GError **error);

/* Check every field (ranges above, heads | hidden, dtype bf16/fp16, MoE
 * fields when experts > 0).  SP_ERROR_INVALID_WORKLOAD naming the field. */
gboolean sp_model_validate (const SpModel *model, GError **error);

/* Total parameters (elements) by the formula at the top of this file,
 * counting every expert of every MoE layer. */
guint64 sp_model_n_params (const SpModel *model);

/* The model as JSON that sp_model_load_data() reads back equal (g_free). */
char *sp_model_to_json (const SpModel *model);

/* ---- sharding options ---------------------------------------------------- */

/* DeepSpeed's defaults (runtime/zero/config.py, 0.16.4), in ELEMENTS. */
#define SP_DS_REDUCE_BUCKET_SIZE G_GUINT64_CONSTANT (500000000)       /* reduce_bucket_size 5e8 */
#define SP_DS_ALLGATHER_BUCKET_SIZE G_GUINT64_CONSTANT (500000000)    /* allgather_bucket_size 5e8 */
#define SP_DS_PREFETCH_BUCKET_SIZE G_GUINT64_CONSTANT (50000000)      /* stage3_prefetch_bucket_size 5e7 */
#define SP_DS_PARAM_PERSISTENCE_THRESHOLD G_GUINT64_CONSTANT (100000) /* stage3_param_persistence_threshold 1e5 */
#define SP_DS_MAX_REUSE_DISTANCE G_GUINT64_CONSTANT (1000000000)      /* stage3_max_reuse_distance 1e9 */
#define SP_DS_MAX_LIVE_PARAMETERS G_GUINT64_CONSTANT (1000000000)     /* stage3_max_live_parameters 1e9 */

typedef struct {
  guint32 zero_stage;            /* only 3 is modelled */
  guint32 shard_size;            /* S: 0 = the world (plain ZeRO-3); MiCS otherwise */
  gboolean hierarchical;         /* MiCS two-stage all-gather (mics_hierarchical_params_gather) */
  guint64 reduce_bucket_size;    /* elements per gradient bucket */
  guint64 allgather_bucket_size; /* elements; parsed and recorded, but ZeRO-3
                                  * gathers per module, so it shapes no op */
  guint64 prefetch_bucket_size;  /* elements prefetched ahead (stage3_prefetch_bucket_size) */
  guint64 param_persistence_threshold; /* tensors with numel <= this stay gathered */
  guint64 max_reuse_distance;    /* elements (stage3_max_reuse_distance) */
  guint64 max_live_parameters;   /* elements gathered at once beyond which the
                                  * prefetcher issues nothing more
                                  * (stage3_max_live_parameters) */
  gboolean overlap_comm;         /* FALSE: gradient reductions run on the compute
                                  * stream (DeepSpeed's reduce_and_partition_stream
                                  * is then the default stream); default TRUE,
                                  * DeepSpeed's for stage 3 */
  guint32 hpz_partition_size;    /* Z: hpZ secondary partition, 0 or 1 = off */
  gboolean quantized_weights;    /* qwZ: int8 weight all-gathers */
  gboolean quantized_gradients;  /* qgZ: int4 all-to-all gradient reduction */
  guint32 expert_parallel;       /* E_p: MoE expert-parallel size, 0 or 1 = off */
  gboolean contiguous_gradients; /* stage 3 copies each gradient into one flat
                                  * buffer of reduce_bucket_size elements,
                                  * allocated whole (memory, not communication:
                                  * the reduce-scatter gets the same tensors);
                                  * default TRUE, DeepSpeed's */
} SpShardingOptions;

/* Stage 3, S = world, DeepSpeed's defaults above, overlap_comm and
 * contiguous_gradients on (stage 3's defaults), everything else off. */
void sp_sharding_options_init (SpShardingOptions *opts);

/* Read a DeepSpeed config JSON and apply it over *inout_sharding and
 * *inout_model (either may be NULL to skip those keys).  Keys read:
 *   zero_optimization.{stage, mics_shard_size (-1 or absent: ZeRO-3),
 *     mics_hierarchical_params_gather, reduce_bucket_size,
 *     allgather_bucket_size, stage3_prefetch_bucket_size,
 *     stage3_param_persistence_threshold, stage3_max_reuse_distance,
 *     stage3_max_live_parameters, overlap_comm, contiguous_gradients,
 *     zero_hpz_partition_size, zero_quantized_weights,
 *     zero_quantized_gradients}
 *   train_micro_batch_size_per_gpu, gradient_accumulation_steps,
 *   bf16.enabled, fp16.enabled
 * The string "auto" (Hugging Face's placeholder) keeps the current value
 * and adds a warning.  Every other key is ignored with one warning line
 * each ("deepspeed config: key 'optimizer' is not modelled; ignored").
 * A wrong type or range is SP_ERROR_INVALID_WORKLOAD naming the key; a
 * stage other than 3 (or no zero_optimization) is SP_ERROR_UNSUPPORTED.
 * Warnings are appended to *out_warnings (may be NULL) as a NULL-terminated
 * string vector (g_strfreev); on failure nothing is written. */
gboolean sp_deepspeed_config_apply (const char *json, gssize length, const char *source_name,
                                    SpShardingOptions *inout_sharding, SpModel *inout_model,
                                    char ***out_warnings, GError **error);
gboolean sp_deepspeed_config_apply_file (const char *path, SpShardingOptions *inout_sharding,
                                         SpModel *inout_model, char ***out_warnings,
                                         GError **error);

/* For a planner that varies the layout itself (shardplan sweep): read the
 * DeepSpeed config file at `path` as sp_deepspeed_config_apply_file does,
 * except for the keys the grid sets — zero_optimization.{stage,
 * mics_shard_size, mics_hierarchical_params_gather,
 * zero_hpz_partition_size, zero_quantized_weights,
 * zero_quantized_gradients}, train_micro_batch_size_per_gpu,
 * gradient_accumulation_steps — which are neither read nor checked: the
 * stage is taken as 3 and the others keep *inout_sharding's and
 * *inout_model's values.  The names of those the file sets (the stage
 * unless it is 3) go to *out_overridden (may be NULL; NULL-terminated,
 * g_strfreev; empty when none), warnings to *out_warnings as above;
 * nothing is written on failure. */
gboolean sp_deepspeed_config_apply_knobs_file (const char *path, SpShardingOptions *inout_sharding,
                                               SpModel *inout_model, char ***out_overridden,
                                               char ***out_warnings, GError **error);

/* A one-line summary: "zero3 S=64 (world) flat bucket=5e8 qwZ hpZ=8 …" (g_free). */
char *sp_sharding_options_describe (const SpShardingOptions *opts, guint32 world_size);

/* A DeepSpeed config JSON (pretty, ends in a newline; g_free) that
 * sp_deepspeed_config_apply() reads back into exactly *sharding and the
 * model's micro_batch, grad_accum and dtype: zero_optimization.{stage,
 * mics_shard_size (-1 for ZeRO-3: shard_size 0 or = world_size, not
 * hierarchical), mics_hierarchical_params_gather, zero_quantized_weights,
 * zero_hpz_partition_size, zero_quantized_gradients, reduce_bucket_size,
 * allgather_bucket_size, stage3_prefetch_bucket_size,
 * stage3_param_persistence_threshold, stage3_max_reuse_distance,
 * stage3_max_live_parameters, overlap_comm, contiguous_gradients},
 * train_micro_batch_size_per_gpu, gradient_accumulation_steps,
 * bf16.enabled / fp16.enabled.  Only keys the reader models are written,
 * so reading it back gives no warning.  (lib/workload-dsconfig.c) */
char *sp_deepspeed_config_to_json (const SpShardingOptions *sharding, const SpModel *model,
                                   guint32 world_size);

/* ---- which configurations DeepSpeed runs (lib/workload-grid.c) ----------- */

typedef enum {
  SP_DS_RUNS = 0,     /* DeepSpeed runs it as configured */
  SP_DS_REJECTS,      /* DeepSpeed raises or asserts (or runs it broken) */
  SP_DS_FALLS_BACK,   /* DeepSpeed accepts the keys but runs another
                       * configuration (its plan equals that one's) */
} SpDsVerdict;

/* What DeepSpeed 0.16 does with `sharding` on `world_size` ranks of
 * `devices_per_node` GPUs, by these rules (checked in this order; *out_reason,
 * if not NULL, gets one line naming the rule, g_free; NULL for SP_DS_RUNS):
 *   REJECTS    S (shard_size, 0 = W) does not divide W (mics_utils
 *              _generate_mics_config);
 *   REJECTS    hierarchical with S // D < 2 or S % (S // D) != 0
 *              (create_mics_comm_groups' asserts, deepspeed-semantics §1.2);
 *   REJECTS    hpZ Z > 1 with W % min(Z, W) != 0
 *              (_create_zero_param_parallel_group);
 *   FALLS_BACK ZeRO++ (qwZ, hpZ, qgZ) with MiCS (S < W or hierarchical):
 *              the engine builds MiCS_Optimizer, whose constructor takes no
 *              ZeRO++ argument, so plain MiCS runs (sp_workload_build_plan
 *              refuses the combination);
 *   REJECTS    qgZ with >= 2 nodes and W % D != 0 (the local all-to-all
 *              groups leave ranks out: KeyError in all_to_all_quant_reduce);
 *   FALLS_BACK hpZ with min(Z, W) = W: the secondary partition is the
 *              primary one, the gathers are ZeRO-3's;
 *   FALLS_BACK qgZ on one node (W // D < 2): the gradients are
 *              reduce-scattered as without it (the plan builder's rule).
 * qwZ's int8 grouping (CUDAQuantizer) depends on the tensor sizes and is
 * left to sp_workload_build_plan (SP_ERROR_UNSUPPORTED). */
SpDsVerdict sp_sharding_deepspeed_verdict (const SpShardingOptions *sharding, guint32 world_size,
                                           guint32 devices_per_node, char **out_reason);

/* What DeepSpeed 0.16 does with MoE expert-parallel size `ep` (>= 1; the
 * `ep_size` argument of deepspeed.moe.layer.MoE, not a config key) for
 * `model` on `world_size` ranks, no tensor or pipeline parallelism, by
 * these rules (in this order; *out_reason as above):
 *   RUNS       ep = 1 (every expert on every rank; DeepSpeed's default);
 *   REJECTS    a dense model (no MoE layer takes an ep_size);
 *   REJECTS    experts % ep != 0 (moe/layer.py: "Number of experts should
 *              be divisible by expert parallel size");
 *   REJECTS    world % ep != 0 (utils/groups.py
 *              _create_expert_and_data_parallel: _ensure_divisibility of
 *              the stage size W // pp by ep, deepspeed-semantics §2.2).
 * DeepSpeed's engine refuses MoE with ZeRO stage 3 altogether ("MoE not
 * supported with Stage 3", runtime/engine.py _configure_zero_optimizer);
 * sp_workload_build_plan applies the expert-data-parallel rule to stage 3
 * anyway (an extrapolation, see there), and so does this verdict. */
SpDsVerdict sp_expert_parallel_deepspeed_verdict (guint32 ep, const SpModel *model, guint32 world_size,
                                                  char **out_reason);

/* ---- the step → plan builder (lib/workload-step.c) ----------------------- */

typedef struct {
  guint32 world_size;        /* W >= 1 */
  guint32 devices_per_node;  /* D >= 1: MiCS hierarchy, qgZ local groups */
  double compute_efficiency; /* (0, 1]: fraction of peak the compute ops reach;
                              * recorded in the plan meta "compute_efficiency"
                              * for consumers that turn FLOPs into time.
                              * Default 0.5: an assumption, in the range that
                              * large GPT trainings report as model FLOPs
                              * utilisation (Narayanan et al. SC'21: 44-52 %
                              * of peak on A100) — set it from a measurement. */
  gboolean one_micro_step;   /* emit only the boundary micro-step (the last
                              * one) instead of all grad_accum micro-steps */
} SpWorkloadPlanOptions;

/* world 1, D 8, efficiency 0.5, all micro-steps. */
void sp_workload_plan_options_init (SpWorkloadPlanOptions *opts);

/* Build the plan of one optimizer step.  Steady state (DeepSpeed's module
 * trace complete): for every micro-step, in forward then backward order,
 *   - the parameter all-gathers a module needs (DeepSpeed gathers per
 *     submodule; the plan merges them per transformer layer / embedding /
 *     head, bytes = Σ over tensors of S·P_t·elt with P_t = ceil(n_t/S)):
 *     flat (SP_COLL_ALL_GATHER, family shard), hierarchical (composite
 *     SP_COLL_HIER_ALL_GATHER with sub-ops: all_gather over
 *     shard_inter_node of m·ΣP elements, then all_gather over
 *     shard_intra_node of S·ΣP elements, §1.5), qwZ (quantize, an int8
 *     all_gather of S·ΣP bytes and an fp32 all_gather of S·groups·4 bytes,
 *     dequantize; groups from DeepSpeed's CUDAQuantizer rule, target 8000
 *     elements per group), hpZ (after a tensor's first release in a step
 *     its gathers run in the zero_param family with the same byte count);
 *     tensors with numel <= param_persistence_threshold are never gathered
 *     per module (they are re-gathered once after the optimizer step), and a
 *     released tensor whose next use is within max_reuse_distance traversed
 *     elements stays gathered (DeepSpeed's __params_to_release);
 *   - compute (stream 0): FLOPs per rank, forward 2·tokens·(4h² + 2hf)
 *     + 4·b·s²·h per layer (+ 2·tokens·V·h for the head), backward 2× the
 *     forward, plus one forward recompute with activation checkpointing;
 *   - gradient buckets (DeepSpeed __add_grad_to_ipg_bucket: a bucket is
 *     reduced when the next gradient would overflow reduce_bucket_size,
 *     and at the end of backward) as composite
 *     SP_COLL_REDUCE_SCATTER_COALESCED over the shard family with one
 *     reduce_scatter sub-op of W_s·Σc_t elements (§3), or with qgZ one
 *     SP_COLL_ALL_TO_ALL_QUANT_REDUCE composite per tensor (quantize,
 *     all_to_all data + scales over local_all_to_all.local, quant_reduce,
 *     all_to_all data + scales over local_all_to_all.global, dequantize;
 *     §4 sizes) or DeepSpeed's fallback reduce_scatter_coalesced([t]) over
 *     the world for 1-D tensors and numel % 2W != 0; qgZ is only taken with
 *     >= 2 nodes, as in DeepSpeed;
 *   - at the boundary micro-step, after each bucket, MiCS's all_reduce of
 *     that bucket's gradient partitions (Σ P_t elements, model dtype)
 *     over the replicate family (skipped when S = W);
 *   - MoE layers: the token all_to_all (dispatch and combine, forward and
 *     backward) over the expert family, E·capacity·h elements per rank;
 *     expert tensors are partitioned, gathered and reduce-scattered over
 *     the expert_data family (DeepSpeed itself rejects MoE with ZeRO-3 —
 *     "MoE not supported with Stage 3" — so this applies its
 *     expert-data-parallel rule to ZeRO-3 partitioning: an extrapolation);
 *   - finally (phase optimizer) the all-gather of the persistent tensors.
 * Streams: 0 compute (and MoE all-to-alls, which block it), 1 parameter
 * all-gathers (with MiCS' hierarchical gather: its synchronous inter-node
 * stage), 3 the hierarchical gather's asynchronous intra-node stage, 2
 * gradient reductions — or 0 with overlap_comm off, so that
 * a reduction waits for the backward compute before it and the compute
 * after it waits for the reduction (DeepSpeed's reduce_and_partition_stream
 * is the default stream then, and reduce_scatter_coalesced is synchronous
 * on it).  A gather depends on the compute after which DeepSpeed's
 * prefetcher issues it (PartitionedParameterCoordinator.fetch_sub_module):
 * use j's gather is issued when use k starts, k the earliest use of the
 * micro-step with
 *   Σ_{k<i<j} fetched_i < prefetch_bucket_size  and
 *   live_k + Σ_{k<i<j} fetched_i < max_live_parameters,
 * fetched_i the elements (numel) use i gathers and live_k those gathered
 * (not persistent) while use k runs — DeepSpeed's prefetch budget
 * min(max_live - n_available, prefetch_bucket), each last use taken whole.
 * With k = j the gather waits for the compute before its own use (no
 * prefetch).  Hierarchical gathers follow mics.py: the gathers issued at
 * use k wait for use k's own gathers (the handles' wait on the gather
 * stream), and the compute of use k waits for the inter-node stage of
 * every gather issued at the uses before it (the stage is synchronous on
 * the gather stream, which the compute stream waits on); their ops are
 * emitted in that issue order.  Each micro-step after the first starts (its first compute,
 * and the gathers issued at its start) after the last reduction of the one
 * before: independent_gradient_partition_epilogue synchronizes the
 * reduction stream.
 * Meta: model, n_params, sharding, micro_steps, compute_efficiency,
 * created_by ("shardplan <version>").
 * Errors: SP_ERROR_INVALID_WORKLOAD / INVALID_ARGUMENT for bad values,
 * SP_ERROR_INVALID_GROUPS for a layout DeepSpeed rejects (message from
 * sp_groups_build), SP_ERROR_UNSUPPORTED for stage != 3 and for ZeRO++
 * (qwZ, qgZ, hpZ) combined with MiCS (S < W or hierarchical), which
 * DeepSpeed does not combine either.  Free with sp_plan_free(). */
SpPlan *sp_workload_build_plan (const SpModel *model, const SpShardingOptions *sharding,
                                const SpWorkloadPlanOptions *opts, GError **error);

G_END_DECLS
