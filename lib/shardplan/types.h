/* shardplan/types.h — enums shared by plans, traces, the simulator and the
 * executor.  Their numeric values are part of the trace schema (HDF5 enum
 * types): never renumber, only append.
 */
#pragma once
#include <glib.h>

G_BEGIN_DECLS

/* Op kinds.  0..9 are Chakra's CollectiveCommType codes (et_def.proto);
 * the rest are shardplan's own. */
typedef enum {
  SP_COLL_ALL_REDUCE = 0,
  SP_COLL_REDUCE = 1,
  SP_COLL_ALL_GATHER = 2,
  SP_COLL_GATHER = 3,
  SP_COLL_SCATTER = 4,
  SP_COLL_BROADCAST = 5,
  SP_COLL_ALL_TO_ALL = 6,
  SP_COLL_REDUCE_SCATTER = 7,
  SP_COLL_REDUCE_SCATTER_BLOCK = 8,
  SP_COLL_BARRIER = 9,
  SP_COLL_SEND = 16,
  SP_COLL_RECV = 17,
  SP_COLL_P2P = 18,                  /* one way: group rank src sends to group rank dst */
  SP_COLL_COMPUTE = 32,
  SP_COLL_QUANTIZE = 33,
  SP_COLL_DEQUANTIZE = 34,
  SP_COLL_QUANT_REDUCE = 35,         /* qgZ stage C: dequantize, sum, requantize */
  /* composites: expand into sub-ops carrying this op's id as parent */
  SP_COLL_HIER_ALL_GATHER = 48,      /* MiCS two-stage all-gather */
  SP_COLL_REDUCE_SCATTER_COALESCED = 49,
  SP_COLL_ALL_TO_ALL_QUANT_REDUCE = 50, /* qgZ */
} SpColl;

/* Element types: values equal ncclDataType_t where NCCL has the type. */
typedef enum {
  SP_DTYPE_INT8 = 0,
  SP_DTYPE_UINT8 = 1,
  SP_DTYPE_INT32 = 2,
  SP_DTYPE_UINT32 = 3,
  SP_DTYPE_INT64 = 4,
  SP_DTYPE_UINT64 = 5,
  SP_DTYPE_FLOAT16 = 6,
  SP_DTYPE_FLOAT32 = 7,
  SP_DTYPE_FLOAT64 = 8,
  SP_DTYPE_BFLOAT16 = 9,
  SP_DTYPE_FP8_E4M3 = 10,
  SP_DTYPE_FP8_E5M2 = 11,
  SP_DTYPE_INT4 = 64,                /* packed two per byte (shardplan only) */
  SP_DTYPE_NONE = 255,               /* barrier, compute */
} SpDtype;

/* Reductions: values equal ncclRedOp_t. */
typedef enum {
  SP_REDOP_SUM = 0,
  SP_REDOP_PROD = 1,
  SP_REDOP_MAX = 2,
  SP_REDOP_MIN = 3,
  SP_REDOP_AVG = 4,
  SP_REDOP_NONE = 255,
} SpRedop;

/* Algorithm hints / choices; values equal NCCL's algorithm ids
 * (src/include/plugin/nccl_tuner.h) where NCCL has them. */
typedef enum {
  SP_ALGO_TREE = 0,
  SP_ALGO_RING = 1,
  SP_ALGO_COLLNET_DIRECT = 2,
  SP_ALGO_COLLNET_CHAIN = 3,
  SP_ALGO_NVLS = 4,
  SP_ALGO_NVLS_TREE = 5,
  SP_ALGO_PAT = 6,
  SP_ALGO_DIRECT = 16,               /* all-to-all / send-recv: direct peer transfers */
  SP_ALGO_AUTO = 255,
} SpAlgo;

/* Protocols; values equal NCCL's protocol ids. */
typedef enum {
  SP_PROTO_LL = 0,
  SP_PROTO_LL128 = 1,
  SP_PROTO_SIMPLE = 2,
  SP_PROTO_AUTO = 255,
} SpProto;

/* Canonical lower-case names ("all_gather", "bfloat16", "sum", "ring",
 * "ll128") and their inverses.  The _name functions return a static string,
 * or NULL for a value outside the enum; the _from_name functions return
 * FALSE for an unknown name (and leave out_value alone).  Names accepted on
 * input also include common aliases: "bf16", "fp16", "fp32", "half",
 * "float", "allgather", "allreduce", "reducescatter", "alltoall". */
const char *sp_coll_name (SpColl coll);
gboolean sp_coll_from_name (const char *name, SpColl *out_value);
const char *sp_dtype_name (SpDtype dtype);
gboolean sp_dtype_from_name (const char *name, SpDtype *out_value);
const char *sp_redop_name (SpRedop redop);
gboolean sp_redop_from_name (const char *name, SpRedop *out_value);
const char *sp_algo_name (SpAlgo algo);
gboolean sp_algo_from_name (const char *name, SpAlgo *out_value);
const char *sp_proto_name (SpProto proto);
gboolean sp_proto_from_name (const char *name, SpProto *out_value);

/* Size of one element in bits (int4: 4), 0 for SP_DTYPE_NONE. */
guint sp_dtype_bits (SpDtype dtype);

/* TRUE for the kinds that move data between ranks (everything below
 * SP_COLL_COMPUTE), FALSE for compute/quantize kernels and composites. */
gboolean sp_coll_is_communication (SpColl coll);
/* TRUE for the composite kinds (>= SP_COLL_HIER_ALL_GATHER). */
gboolean sp_coll_is_composite (SpColl coll);

/* nccl-tests' bus-bandwidth factor for a collective over n ranks
 * (all_reduce 2(n-1)/n; all_gather, reduce_scatter, all_to_all (n-1)/n;
 * broadcast, reduce, send/recv 1), and nccl-tests' algbw/busbw in GB/s
 * (1e9 B/s) for `bytes` in the nccl-tests size convention and `dur_ns`.
 * Returns 0 for dur_ns == 0. */
double sp_coll_busbw_factor (SpColl coll, guint32 n);
void sp_coll_bandwidths (SpColl coll, guint64 bytes, guint32 n, guint64 dur_ns,
                         double *out_algbw_gbs, double *out_busbw_gbs);

G_END_DECLS
