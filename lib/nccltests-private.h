/* The parsed nccl-tests log, shared by nccltests.c (parser) and
 * nccltests-trace.c (plan and trace). */
#pragma once
#include "shardplan/nccltests.h"
#include "shardplan/error.h"

struct _SpNcclTestsLog {
  char *source_name;
  SpColl coll;
  const char *binary;        /* static */
  guint32 n_ranks;
  GArray *results;           /* SpNcclTestsResult */
  GArray *ranks;             /* SpNcclTestsRank, strings in `strings` */
  SpNcclTestsParams params;
  const char *version;       /* in `strings`, or NULL */
  const char *nccl_version;  /* in `strings`, or NULL */
  GPtrArray *env;            /* key, value, …, NULL (in `strings`) */
  gboolean complete;
  char *incomplete_reason;
  GPtrArray *warnings;       /* char * (owned), NULL-terminated */
  GStringChunk *strings;
};

/* Bytes of one element of `dtype` (nccl-tests has no sub-byte types). */
static inline guint64
sp_nccl_tests_elem_bytes (SpDtype dtype)
{
  return sp_dtype_bits (dtype) / 8;
}

/* TRUE for the binaries whose size is count × element size × ranks. */
static inline gboolean
sp_nccl_tests_size_has_ranks (SpColl coll)
{
  return coll == SP_COLL_ALL_GATHER || coll == SP_COLL_REDUCE_SCATTER
         || coll == SP_COLL_ALL_TO_ALL;
}
