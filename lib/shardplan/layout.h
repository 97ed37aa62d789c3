/* shardplan/layout.h — buffer layouts of DeepSpeed's sharded collectives,
 * as pure functions (shared/reference/deepspeed-semantics.md §1.3, §3, §4).
 *
 * The workload builder uses them for exact per-op byte counts, the executor
 * for where each rank's slice lives, and tests for the reference's worked
 * examples.  All sizes are in ELEMENTS unless a name ends in _bytes.
 * Nothing here allocates except sp_layout_rs_coalesced_new().
 */
#pragma once
#include <glib.h>

G_BEGIN_DECLS

/* ---- MiCS / ZeRO-3 parameter partition (§1.3) ----------------------------
 * A parameter of `numel` elements split over S shard ranks:
 *   pad = (S − numel % S) % S, aligned = numel + pad = S·P, P = ceil(numel/S).
 * Shard rank k owns flat elements [k·P, (k+1)·P) of the gathered buffer and
 * copies min(P, max(0, numel − k·P)) real elements into it; the rest of its
 * partition is padding (uninitialised in DeepSpeed).
 * Example: numel 10, S 4 → P 3, pad 2; rank 3 owns [9, 12) and copies 1. */
typedef struct {
  guint64 numel;      /* elements of the parameter */
  guint32 shards;     /* S */
  guint64 pad;        /* elements of padding */
  guint64 aligned;    /* numel + pad = S·P: the gathered buffer (elements) */
  guint64 partition;  /* P: elements each shard rank holds */
} SpMicsPartition;

/* Fill *out_layout for `numel` elements over `shards` ranks.  Fails with
 * SP_ERROR_INVALID_ARGUMENT for shards == 0 or when S·P overflows. */
gboolean sp_layout_mics_partition (guint64 numel, guint32 shards, SpMicsPartition *out_layout,
                                   GError **error);

/* Shard rank k's partition [*out_start, *out_end) in the gathered buffer and
 * the number of real elements it copies (*out_real; the rest is padding).
 * Any out pointer may be NULL.  k must be < shards. */
void sp_layout_mics_rank_range (const SpMicsPartition *layout, guint32 shard_rank,
                                guint64 *out_start, guint64 *out_end, guint64 *out_real);

/* ---- reduce_scatter_coalesced (§3) ----------------------------------------
 * T tensors of n_t elements reduce-scattered over W ranks in one
 * reduce_scatter: c_t = ceil(n_t / W); the send buffer is W·Σc_t elements,
 * rank-major then tensor: rank q's segment starts at q·Σc_t and tensor t
 * sits at offset Σ_{t'<t} c_{t'} inside it.  Rank q receives tensor t's
 * elements [q·c_t, min((q+1)·c_t, n_t)) — shorter or empty for trailing
 * ranks.  The plan op's bytes = buffer × element size (nccl-tests'
 * reduce_scatter convention: the whole buffer).
 * in_place: exactly one tensor with n % W == 0 — DeepSpeed then uses the
 * input itself as the buffer (no copy, divided in place). */
typedef struct {
  guint32 world;       /* W */
  guint32 n_tensors;   /* T */
  gboolean in_place;
  guint64 segment;     /* Σ c_t: elements per rank segment (= each rank's output) */
  guint64 buffer;      /* W · Σ c_t: elements of the send buffer */
  guint64 *numel;      /* [T] n_t (copied from the input) */
  guint64 *chunk;      /* [T] c_t */
  guint64 *offset;     /* [T] offset of tensor t inside a segment */
} SpRsCoalescedLayout;

/* The layout for `n_tensors` tensors of numels[t] elements over `world`
 * ranks (n_tensors may be 0; zero-length tensors are allowed).  Fails with
 * SP_ERROR_INVALID_ARGUMENT for world == 0 or when the buffer length would
 * overflow 64 bits.  One allocation; free with sp_layout_rs_coalesced_free(). */
SpRsCoalescedLayout *sp_layout_rs_coalesced_new (guint32 world, const guint64 *numels,
                                                 guint32 n_tensors, GError **error);
void sp_layout_rs_coalesced_free (SpRsCoalescedLayout *layout);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (SpRsCoalescedLayout, sp_layout_rs_coalesced_free)

/* Rank q's real slice of tensor t, in the tensor's own element indices:
 * [*out_start, *out_start + *out_len), *out_len possibly 0.  Its place in the
 * send buffer is q·segment + offset[t]; its place in rank q's output is
 * offset[t].  t < n_tensors, q < world. */
void sp_layout_rs_coalesced_slice (const SpRsCoalescedLayout *layout, guint32 t, guint32 q,
                                   guint64 *out_start, guint64 *out_len);

/* ---- qgZ swizzle (§4 stage A) ----------------------------------------------
 * G quantization groups over W = N·D ranks (N nodes × D devices), C = G/W
 * groups per destination rank, pipelining P slices of C/P groups each.
 * Input group g = z·C + y·(C/P) + x (destination rank z, slice y,
 * x < C/P) is written to slot (y·D·N + (z % D)·N + z / D)·(C/P) + x;
 * with P = 1 that is ((z % D)·N + z / D)·C + x.  For N 2, D 4 the
 * partitions appear in the order 0,4,1,5,2,6,3,7. */
typedef struct {
  guint64 groups;       /* G */
  guint32 nodes;        /* N */
  guint32 devices;      /* D, devices per node */
  guint32 pipelining;   /* P >= 1 */
  guint64 per_rank;     /* C = G / (N·D) */
  guint64 per_slice;    /* C / P */
} SpQgzSwizzle;

/* Check and fill the swizzle geometry: N, D, P >= 1, G % (N·D) == 0 and
 * C % P == 0 (DeepSpeed does not check these; its kernel grid then skips
 * groups).  SP_ERROR_INVALID_ARGUMENT otherwise. */
gboolean sp_layout_qgz_swizzle_init (guint64 groups, guint32 nodes, guint32 devices,
                                     guint32 pipelining, SpQgzSwizzle *out_swizzle,
                                     GError **error);

/* Output slot of input group g (g < G).  A permutation of [0, G). */
guint64 sp_layout_qgz_swizzle_slot (const SpQgzSwizzle *swizzle, guint64 group);

/* ---- qgZ per-stage sizes (§4) ----------------------------------------------
 * What all_to_all_quant_reduce moves for one fp16 gradient tensor on a rank
 * of a W = N·D world (N nodes of D devices), per rank:
 *   A quantize  numel fp16 → quant_bytes int4 (numel/2) + scale_bytes (G fp32 scales)
 *   B all_to_all over the node's local group (D ranks): quant_bytes, then
 *               separately scale_bytes (two all_to_all_single calls)
 *   C quant_reduce: quant_bytes + G scales → reduced_bytes (numel/(2D)) +
 *               reduced_scale_bytes (G/D scales, 4 bytes each)
 *   D all_to_all over the global group (N ranks, stride D): reduced_bytes,
 *               then reduced_scale_bytes
 *   E dequantize reduced_bytes → numel/D fp16, sum the N chunks, / N →
 *               out_numel = numel/W fp16 elements.
 * All byte counts are per-rank buffers (nccl-tests' all_to_all convention).
 * Fallback: a 1-D tensor, or numel % (2W) != 0, goes through
 * reduce_scatter_coalesced([t]) over the whole world instead (see
 * SpRsCoalescedLayout); the stage sizes are then 0. */
typedef enum {
  SP_QGZ_QUANTIZED = 0,       /* the all-to-all path */
  SP_QGZ_FALLBACK_ONE_DIM,    /* tensor.dim() == 1 */
  SP_QGZ_FALLBACK_NOT_DIVISIBLE, /* numel % (2W) != 0 */
} SpQgzPath;

typedef struct {
  SpQgzPath path;
  guint64 numel;               /* elements of the tensor */
  guint32 world, nodes, devices; /* W, N, D */
  guint64 groups;              /* G = max(shape[0], shape[1], W): number of quantization groups */
  guint64 group_elems;         /* E = numel / G */
  guint64 per_rank;            /* C = G / W */
  guint64 quant_bytes;         /* int4 payload after stage A: numel / 2 */
  guint64 scale_bytes;         /* G × 4 (fp32 scales) */
  guint64 reduced_bytes;       /* after stage C: numel / (2D) */
  guint64 reduced_scale_bytes; /* (G / D) × 4 */
  guint64 out_numel;           /* fp16 elements each rank ends with: numel / W */
  /* DeepSpeed's unchecked kernel preconditions (§4): G % W == 0,
   * numel % G == 0 and E % 8 == 0.  FALSE means DeepSpeed would leave part
   * of the output uninitialised; the sizes above are still what it moves. */
  gboolean kernel_preconditions;
} SpQgzSizes;

/* Sizes for a tensor of `ndim` dimensions `shape[0..ndim)` on `world` ranks
 * with `devices` per node.  Fails (SP_ERROR_INVALID_ARGUMENT) for ndim 0,
 * devices 0, world % devices != 0 (DeepSpeed's local groups would leave
 * ranks out), or numel overflow; fails with SP_ERROR_UNSUPPORTED when
 * world / devices < 2 (DeepSpeed takes the qgZ path only with N > 1 nodes). */
gboolean sp_layout_qgz_sizes (const guint64 *shape, guint32 ndim, guint32 world, guint32 devices,
                              SpQgzSizes *out_sizes, GError **error);

G_END_DECLS
