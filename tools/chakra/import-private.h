/* tools/chakra/import-private.h — the second half of the import: traces
 * that shardplan did not write (tools/chakra/import-groups.c). */
#pragma once
#include <glib.h>
#include "shardplan/shardplan.h"

/* The communicator groups of an import (tools/chakra/import-pg.c): each
 * pg_name gets a number 1, 2, … in file order; 0 stands for every rank. */
typedef struct {
  GHashTable *by_name;         /* pg_name → number (GUINT_TO_POINTER) */
  GPtrArray *members;          /* by number: GArray of guint32 ranks; NULL: every rank */
  GPtrArray *names;            /* by number: the pg_name */
  char *path;
} SpChakraPg;

/* Read a group file: ASTRA-sim's ({"1": [ranks], …}), PyTorch's
 * pg_config_info list ([{"pg_name", "ranks"}, …], "ranks": [] = every rank)
 * or a PyTorch execution trace holding that list.  NULL with *error
 * (SP_ERROR_IO, SP_ERROR_INVALID_TRACE naming the file and the group). */
SpChakraPg *sp_chakra_pg_load (const char *path, GError **error);
void sp_chakra_pg_free (SpChakraPg *pg);
/* `name` → its number in *out_id (0: every rank: "", "0" unless the file
 * says otherwise, or a group of every rank); FALSE when the file (pg may be
 * NULL) does not have it. */
gboolean sp_chakra_pg_resolve (const SpChakraPg *pg, const char *name, guint32 *out_id);
/* The ranks of number `id` (NULL for 0), and its pg_name. */
const GArray *sp_chakra_pg_members (const SpChakraPg *pg, guint32 id);
const char *sp_chakra_pg_name (const SpChakraPg *pg, guint32 id);

typedef struct {
  const char *prefix;
  const SpTopo *topo;          /* may be NULL */
  const SpChakraPg *pg;        /* may be NULL */
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
  const GArray *rank_pg;       /* collectives: guint32 pairs (rank, pg number; 0 = every rank) */
  const GArray *peers;         /* send / recv / p2p: guint32 pairs (src, dst); else NULL */
  gboolean oneway;             /* the pairs go one way (a p2p op), not around rings */
  guint32 n_ranks;             /* files that have the node */
  guint32 n_deps;
  guint32 *deps;
} SpChakraForeignOp;

/* Map the groups to DeepSpeed families (one SpGroupsOptions for all), the
 * collectives to kinds, the compute to FLOPs; build the plan. */
SpPlan *sp_chakra_build_foreign (const SpChakraForeign *f, GPtrArray *ops, GError **error);
