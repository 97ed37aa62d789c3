/* shardplan/plan.h — the op model: an ordered list of ops that the simulator
 * and the executor both consume, and that both traces refer to by op id.
 *
 * An op runs on every group of its family at once (every rank executes it
 * in the group of that family that contains the rank; ranks outside every
 * group of the family skip it).  A p2p op is the one exception: in every
 * group of its family, group rank `src` sends `bytes` to group rank `dst`
 * and the other members skip it (a pipeline's stage-to-stage send: family
 * replicate, src s, dst s + 1).  Sizes follow nccl-tests' convention:
 *   all_gather, reduce_scatter: bytes = the whole gathered / scattered buffer
 *   all_reduce, broadcast, reduce, all_to_all, send/recv, p2p: bytes = per-rank
 *   buffer
 * and `count` is the matching element count (bytes × 8 / dtype bits).
 *
 * Composite ops (SP_COLL_HIER_ALL_GATHER, SP_COLL_REDUCE_SCATTER_COALESCED,
 * SP_COLL_ALL_TO_ALL_QUANT_REDUCE) are followed in the plan by their sub-ops,
 * which carry the composite's id in `parent`; a consumer runs the sub-ops
 * and treats the composite as the span from its first sub-op's start to its
 * last sub-op's end.
 *
 * Plans are JSON with a schema version (SP_PLAN_SCHEMA_VERSION):
 *   {"schema": "shardplan-plan", "schema_version": 1, "world_size": W,
 *    "groups": {<SpGroupsOptions as in `shardplan groups`>},
 *    "meta": {free-form strings: model, topology, created_by …},
 *    "ops": [{"id": 0, "name": "L0.fwd.allgather", "layer": 0, "phase": "forward",
 *             "kind": "all_gather", "family": "shard", "bytes": …, "count": …,
 *             "dtype": "bfloat16", "redop": "none", "algorithm": "auto",
 *             "stream": 1, "deps": [..], "parent": -1, "flops": 0}, …]}
 * (a p2p op adds "src": S, "dst": D after "flops"; no other kind has them).
 * sp_plan_to_json() writes every key, in this order, meta keys sorted, one op
 * per line (canonical: the digest is over this text).  On input an op needs
 * id, name, kind, family ("none" for kernels), bytes and dtype; the others
 * default to layer -1, phase "none", count = bytes·8/bits, redop "none",
 * algorithm "auto", stream 0, deps [], parent -1, flops 0.  Unknown keys are
 * errors, and so are repeated keys.  Integers are read exactly over the
 * whole guint64 range, so every plan that can be built survives a JSON round
 * trip exactly.  Reading is linear in the text (no JSON tree is built).
 */
#pragma once
#include <glib.h>
#include "shardplan/types.h"
#include "shardplan/groups.h"

G_BEGIN_DECLS

#define SP_PLAN_SCHEMA_VERSION 1

typedef enum {
  SP_PHASE_NONE = 0,
  SP_PHASE_FORWARD,
  SP_PHASE_BACKWARD,
  SP_PHASE_OPTIMIZER,    /* gradient-accumulation boundary work */
} SpPhase;

const char *sp_phase_name (SpPhase phase);
gboolean sp_phase_from_name (const char *name, SpPhase *out_phase);

/* One op.  Plain data; arrays owned by the plan. */
typedef struct {
  guint32 id;            /* index in the plan, 0.. */
  gint64 parent;         /* id of the composite this is a sub-op of, or -1 */
  const char *name;      /* tag, e.g. "L12.bwd.reduce_scatter" */
  gint32 layer;          /* -1 when not tied to a layer */
  SpPhase phase;
  SpColl kind;
  SpFamily family;       /* SP_FAMILY_NONE for compute / (de)quantize */
  guint64 bytes;         /* nccl-tests convention (see top of file) */
  guint64 count;         /* elements */
  SpDtype dtype;
  SpRedop redop;
  SpAlgo algorithm;      /* hint; SP_ALGO_AUTO lets the consumer choose */
  guint32 stream;        /* ops on one stream run in order; streams overlap */
  guint64 flops;         /* compute ops: FLOPs per rank; 0 otherwise */
  guint32 n_deps;
  const guint32 *deps;   /* ids of ops that must finish first (all < id) */
  guint32 src, dst;      /* p2p: the group ranks that send and receive; 0 otherwise */
} SpOp;

typedef struct _SpPlan SpPlan;

/* An empty plan for the given groups (copied).  Free with sp_plan_free(). */
SpPlan *sp_plan_new (const SpGroupsOptions *groups);
void sp_plan_free (SpPlan *plan);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (SpPlan, sp_plan_free)

/* Append an op.  `op->id`, and `op->deps` / `op->name` storage, are taken
 * from the arguments and copied; `op->id` is ignored and assigned.  Fails
 * (SP_ERROR_INVALID_PLAN, naming the op) on: a dependency on an op not yet
 * added (so plans are acyclic by construction), a parent that is not an
 * earlier composite, a family the plan's groups do not build, a byte count
 * that is not a whole number of elements, an unknown kind/dtype/redop.
 * Also: kernels (compute, quantize, dequantize, quant_reduce) take family
 * SP_FAMILY_NONE and everything else a real family; reducing kinds need a
 * redop other than none and the rest redop none; only kernels have flops;
 * dtype none only with bytes = count = 0; a p2p op has src != dst, both
 * below the world size, and other kinds src = dst = 0 (whether the family's
 * groups are that large is sp_plan_check_groups()'s to say).
 * On success stores the new id in *out_id (may be NULL).  O(1) amortized;
 * names are interned. */
gboolean sp_plan_add_op (SpPlan *plan, const SpOp *op, guint32 *out_id, GError **error);

guint32 sp_plan_n_ops (const SpPlan *plan);
/* The op with id < n_ops; the pointer stays valid until the plan is freed. */
const SpOp *sp_plan_op (const SpPlan *plan, guint32 id);
const SpGroupsOptions *sp_plan_groups_options (const SpPlan *plan);
guint32 sp_plan_world_size (const SpPlan *plan);

/* Free-form string metadata ("model", "topology", "created_by" …). */
void sp_plan_set_meta (SpPlan *plan, const char *key, const char *value);
const char *sp_plan_get_meta (const SpPlan *plan, const char *key);
/* Keys in insertion order, NULL-terminated; free the array with g_free(). */
const char **sp_plan_meta_keys (const SpPlan *plan);

/* JSON.  to_json returns a newly allocated string (g_free).  from_json
 * validates everything sp_plan_add_op() does, plus: the schema name and
 * version, unknown kinds or families, dependencies on missing or later ops
 * (cycles), and, when `world_size` > 0, that the plan's world size matches.
 * Every error names the op (by id and name) and the bad value. */
char *sp_plan_to_json (const SpPlan *plan);
SpPlan *sp_plan_from_json (const char *json, gssize length, guint32 world_size, GError **error);
gboolean sp_plan_save (const SpPlan *plan, const char *path, GError **error); /* atomic */
/* sp_plan_load reads at most SP_PLAN_MAX_FILE_BYTES, counted as the bytes
 * arrive (a regular file larger than that is refused before anything is
 * allocated; a pipe or a device once that much has come): "PATH: N bytes is
 * larger than any plan (limit M)", SP_ERROR_INVALID_ARGUMENT.  A plan of
 * 10^6 ops is about 280 MB. */
#define SP_PLAN_MAX_FILE_BYTES ((gsize) 1 << 30)
SpPlan *sp_plan_load (const char *path, guint32 world_size, GError **error);

/* Whether `rank` runs `op` and where: the index of its group of the op's
 * family and its rank there (a kernel, family none: index = rank, group
 * rank 0).  FALSE when the rank is in no group of the family, and for a p2p
 * op when it is neither the group's src nor its dst member. */
gboolean sp_plan_op_find (const SpGroups *groups, const SpOp *op, guint32 rank,
                          guint32 *out_index, guint32 *out_group_rank);
/* The ranks of group `index` of the op's family that run it: every member
 * (owned by `groups`), or for a p2p op its sender and receiver, in that
 * order, written to `pair`.  *out_n is 0 for a p2p op on a group too small
 * to hold both. */
const guint32 *sp_plan_op_members (const SpGroups *groups, const SpOp *op, guint32 index,
                                   guint32 pair[2], guint32 *out_n);
/* Every p2p op's src and dst are members of every group of its family
 * (SP_ERROR_INVALID_PLAN naming the op, the group and its size otherwise).
 * Consumers that build the groups (sim, run, chakra export) call it. */
gboolean sp_plan_check_groups (const SpPlan *plan, const SpGroups *groups, GError **error);

/* TRUE if two plans have the same ops, groups and meta (meta order ignored). */
gboolean sp_plan_equal (const SpPlan *a, const SpPlan *b);

/* SHA-256 hex digest of the canonical JSON (the trace's /meta/plan digest);
 * g_free. */
char *sp_plan_digest (const SpPlan *plan);

G_END_DECLS
