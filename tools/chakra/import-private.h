/* tools/chakra/import-private.h — the second half of the import: traces
 * that shardplan did not write (tools/chakra/import-groups.c). */
#pragma once
#include <glib.h>
#include "shardplan/shardplan.h"

typedef struct {
  const char *prefix;
  const SpTopo *topo;          /* may be NULL */
  GHashTable *pg;              /* group file: name → GArray of guint32; may be NULL */
  guint32 world;               /* rank files read */
} SpChakraForeign;

/* One op, in dependency order (deps are indices of earlier ops). */
typedef struct {
  guint64 id;
  const char *name;
  guint32 file_rank;           /* a file that has the node, for messages */
  gboolean coll;               /* COMM_COLL_NODE, else COMP_NODE */
  gint64 comm_type;
  guint64 comm_size;
  guint64 dur_us, num_ops;
  const GArray *rank_pg;       /* collectives: guint32 pairs (rank, pg number; 0 = all ranks) */
  guint32 n_ranks;             /* files that have the node */
  guint32 n_deps;
  guint32 *deps;
} SpChakraForeignOp;

/* Map the groups to DeepSpeed families (one SpGroupsOptions for all), the
 * collectives to kinds, the compute to FLOPs; build the plan. */
SpPlan *sp_chakra_build_foreign (const SpChakraForeign *f, GPtrArray *ops, GError **error);
