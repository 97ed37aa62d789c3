/* Names of the shared enums and nccl-tests' bandwidth conventions. */
#include "config.h"
#include "shardplan/types.h"

#include <string.h>

typedef struct {
  int value;
  const char *name;
} NameEntry;

static const NameEntry coll_names[] = {
  { SP_COLL_ALL_REDUCE, "all_reduce" }, { SP_COLL_REDUCE, "reduce" },
  { SP_COLL_ALL_GATHER, "all_gather" }, { SP_COLL_GATHER, "gather" },
  { SP_COLL_SCATTER, "scatter" }, { SP_COLL_BROADCAST, "broadcast" },
  { SP_COLL_ALL_TO_ALL, "all_to_all" }, { SP_COLL_REDUCE_SCATTER, "reduce_scatter" },
  { SP_COLL_REDUCE_SCATTER_BLOCK, "reduce_scatter_block" }, { SP_COLL_BARRIER, "barrier" },
  { SP_COLL_SEND, "send" }, { SP_COLL_RECV, "recv" },
  { SP_COLL_P2P, "p2p" }, { SP_COLL_COMPUTE, "compute" },
  { SP_COLL_QUANTIZE, "quantize" }, { SP_COLL_DEQUANTIZE, "dequantize" },
  { SP_COLL_QUANT_REDUCE, "quant_reduce" },
  { SP_COLL_HIER_ALL_GATHER, "hier_all_gather" },
  { SP_COLL_REDUCE_SCATTER_COALESCED, "reduce_scatter_coalesced" },
  { SP_COLL_ALL_TO_ALL_QUANT_REDUCE, "all_to_all_quant_reduce" },
};
static const NameEntry coll_aliases[] = {
  { SP_COLL_ALL_REDUCE, "allreduce" }, { SP_COLL_ALL_GATHER, "allgather" },
  { SP_COLL_REDUCE_SCATTER, "reducescatter" }, { SP_COLL_ALL_TO_ALL, "alltoall" },
  { SP_COLL_SEND, "sendrecv" },
};
static const NameEntry dtype_names[] = {
  { SP_DTYPE_INT8, "int8" }, { SP_DTYPE_UINT8, "uint8" }, { SP_DTYPE_INT32, "int32" },
  { SP_DTYPE_UINT32, "uint32" }, { SP_DTYPE_INT64, "int64" }, { SP_DTYPE_UINT64, "uint64" },
  { SP_DTYPE_FLOAT16, "float16" }, { SP_DTYPE_FLOAT32, "float32" }, { SP_DTYPE_FLOAT64, "float64" },
  { SP_DTYPE_BFLOAT16, "bfloat16" }, { SP_DTYPE_FP8_E4M3, "fp8_e4m3" },
  { SP_DTYPE_FP8_E5M2, "fp8_e5m2" }, { SP_DTYPE_INT4, "int4" }, { SP_DTYPE_NONE, "none" },
};
static const NameEntry dtype_aliases[] = {
  { SP_DTYPE_BFLOAT16, "bf16" }, { SP_DTYPE_FLOAT16, "fp16" }, { SP_DTYPE_FLOAT16, "half" },
  { SP_DTYPE_FLOAT32, "fp32" }, { SP_DTYPE_FLOAT32, "float" }, { SP_DTYPE_FLOAT64, "fp64" },
  { SP_DTYPE_FLOAT64, "double" }, { SP_DTYPE_INT32, "int" },
};
static const NameEntry redop_names[] = {
  { SP_REDOP_SUM, "sum" }, { SP_REDOP_PROD, "prod" }, { SP_REDOP_MAX, "max" },
  { SP_REDOP_MIN, "min" }, { SP_REDOP_AVG, "avg" }, { SP_REDOP_NONE, "none" },
};
static const NameEntry algo_names[] = {
  { SP_ALGO_TREE, "tree" }, { SP_ALGO_RING, "ring" }, { SP_ALGO_COLLNET_DIRECT, "collnet_direct" },
  { SP_ALGO_COLLNET_CHAIN, "collnet_chain" }, { SP_ALGO_NVLS, "nvls" },
  { SP_ALGO_NVLS_TREE, "nvls_tree" }, { SP_ALGO_PAT, "pat" }, { SP_ALGO_DIRECT, "direct" },
  { SP_ALGO_AUTO, "auto" },
};
static const NameEntry proto_names[] = {
  { SP_PROTO_LL, "ll" }, { SP_PROTO_LL128, "ll128" }, { SP_PROTO_SIMPLE, "simple" },
  { SP_PROTO_AUTO, "auto" },
};

static const char *
lookup_name (const NameEntry *table, gsize n, int value)
{
  for (gsize i = 0; i < n; i++)
    if (table[i].value == value)
      return table[i].name;
  return NULL;
}

static gboolean
lookup_value (const NameEntry *table, gsize n, const NameEntry *aliases, gsize n_aliases,
              const char *name, int *out_value)
{
  if (name == NULL)
    return FALSE;
  for (gsize i = 0; i < n; i++)
    if (g_ascii_strcasecmp (table[i].name, name) == 0)
      {
        *out_value = table[i].value;
        return TRUE;
      }
  for (gsize i = 0; i < n_aliases; i++)
    if (g_ascii_strcasecmp (aliases[i].name, name) == 0)
      {
        *out_value = aliases[i].value;
        return TRUE;
      }
  return FALSE;
}

#define DEFINE_NAMES(prefix, Type, table, aliases, n_aliases)                              \
  const char *prefix##_name (Type v)                                                      \
  {                                                                                       \
    return lookup_name (table, G_N_ELEMENTS (table), (int) v);                            \
  }                                                                                       \
  gboolean prefix##_from_name (const char *name, Type *out_value)                         \
  {                                                                                       \
    int v;                                                                                \
    if (!lookup_value (table, G_N_ELEMENTS (table), aliases, n_aliases, name, &v))        \
      return FALSE;                                                                       \
    *out_value = (Type) v;                                                                \
    return TRUE;                                                                          \
  }

DEFINE_NAMES (sp_coll, SpColl, coll_names, coll_aliases, G_N_ELEMENTS (coll_aliases))
DEFINE_NAMES (sp_dtype, SpDtype, dtype_names, dtype_aliases, G_N_ELEMENTS (dtype_aliases))
DEFINE_NAMES (sp_redop, SpRedop, redop_names, NULL, 0)
DEFINE_NAMES (sp_algo, SpAlgo, algo_names, NULL, 0)
DEFINE_NAMES (sp_proto, SpProto, proto_names, NULL, 0)

guint
sp_dtype_bits (SpDtype dtype)
{
  switch (dtype)
    {
    case SP_DTYPE_INT8: case SP_DTYPE_UINT8: case SP_DTYPE_FP8_E4M3: case SP_DTYPE_FP8_E5M2:
      return 8;
    case SP_DTYPE_FLOAT16: case SP_DTYPE_BFLOAT16:
      return 16;
    case SP_DTYPE_INT32: case SP_DTYPE_UINT32: case SP_DTYPE_FLOAT32:
      return 32;
    case SP_DTYPE_INT64: case SP_DTYPE_UINT64: case SP_DTYPE_FLOAT64:
      return 64;
    case SP_DTYPE_INT4:
      return 4;
    case SP_DTYPE_NONE:
    default:
      return 0;
    }
}

gboolean
sp_coll_is_communication (SpColl coll)
{
  return coll < SP_COLL_COMPUTE;
}

gboolean
sp_coll_is_composite (SpColl coll)
{
  return coll >= SP_COLL_HIER_ALL_GATHER;
}

double
sp_coll_busbw_factor (SpColl coll, guint32 n)
{
  if (n == 0)
    return 0.0;
  /* nccl-tests src/<coll>.cu: AllReduceGetBw, AllGatherGetBw, … */
  switch (coll)
    {
    case SP_COLL_ALL_REDUCE:
      return 2.0 * (n - 1) / n;
    case SP_COLL_ALL_GATHER:
    case SP_COLL_REDUCE_SCATTER:
    case SP_COLL_REDUCE_SCATTER_BLOCK:
    case SP_COLL_ALL_TO_ALL:
    case SP_COLL_GATHER:
    case SP_COLL_SCATTER:
      return (double) (n - 1) / n;
    default:
      return 1.0;
    }
}

void
sp_coll_bandwidths (SpColl coll, guint64 bytes, guint32 n, guint64 dur_ns,
                    double *out_algbw_gbs, double *out_busbw_gbs)
{
  double algbw = dur_ns ? (double) bytes / (double) dur_ns : 0.0; /* B/ns = GB/s */
  if (out_algbw_gbs)
    *out_algbw_gbs = algbw;
  if (out_busbw_gbs)
    *out_busbw_gbs = algbw * sp_coll_busbw_factor (coll, n);
}
