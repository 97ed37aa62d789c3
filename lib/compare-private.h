/* The comparison object, shared by compare.c (join, statistics) and
 * compare-format.c (CSV, JSON). */
#pragma once
#include "shardplan/compare.h"

struct _SpCompare {
  char *sim_name, *measured_name;
  char *digest;
  const char *sim_source, *measured_source; /* static */
  char *sim_producer, *measured_producer;
  SpCompareCounts counts;
  GArray *ops;                         /* SpCompareOp, by op id */
  GArray *stats[SP_COMPARE_BY_N];      /* SpCompareStats */
  GStringChunk *strings;               /* names and family labels */
};
