/* shardplan/groups.h — process-group families, built exactly as DeepSpeed
 * builds them (shared/reference/deepspeed-semantics.md §1–§2): the same rank
 * lists, in the same order, the same communicator creation order, and the
 * same configurations rejected.
 *
 * Every family is a list of disjoint groups (each rank is in at most one
 * group of a family), so a family maps to one communicator per rank (one
 * MPI_Comm_split / ncclCommSplit).  DeepSpeed's local all-to-all groups are
 * therefore two families here: `local_all_to_all.local` (local_i) and
 * `local_all_to_all.global` (global_i); `shardplan groups` prints them
 * together as the one family `local_all_to_all` of the DESIGN.md contract.
 *
 * Communicator creation order across families is fixed, whatever order the
 * options are given in:  tensor/data (the TP mesh), expert/expert_data,
 * zero_param, shard, replicate, shard_intra_node, shard_inter_node,
 * local_all_to_all.local, local_all_to_all.global — DeepSpeed's order
 * inside each function (e.g. EDP before EP without TP, EP before EDP with
 * TP; see reference §2.2/§2.3).
 *
 * Family by family (W world size, D devices per node):
 *  - tensor / data: torch's DeviceMesh (W/T, T) of _init_tp_mesh_device.
 *    tensor group k = [kT, kT+T), data group j = [j, j+T, …].  DeviceMesh
 *    creates dimension 0 first, so the creation order is every data group
 *    (j = 0..T-1), then every tensor group; singletons are created too.
 *  - expert / expert_data: with T > 0, _create_expert_data_and_model_parallel
 *    (rank lists of _get_expert_parallel_ranks(W, T, E, P); the mpu's data
 *    size is W/(T·P); EP groups created before EDP groups).  With T == 0,
 *    _create_expert_and_data_parallel (P from the mpu, else 1; EDP before
 *    EP).  Where both accept, T == 1 and T == 0 give the same rank lists
 *    and differ only in creation order.  Every group is labelled
 *    "ep_size_<E>".  DeepSpeed never checks W % P when T == 0: it
 *    walks stages range(0, W, W // P); when W // P divides W this is
 *    accepted with a warning, otherwise the last stage names ranks >= W and
 *    torch's new_group raises ValueError, so it is rejected.
 *  - zero_param: blocks of min(Z, W).
 *  - shard / replicate: rows / columns of the (W/S) × S rank matrix.  When
 *    S == W the replicate family holds W singletons (so every rank finds its
 *    group, size 1, rank 0) but none of them is in the creation order:
 *    DeepSpeed creates no replicate communicator then.
 *  - shard_intra_node / shard_inter_node: span = S // D (>= 2 required,
 *    S % span == 0 required), "node" blocks of n = S / span ranks, which is
 *    D only when D divides S; otherwise built as DeepSpeed builds them, with
 *    a warning that the "intra-node" groups straddle physical nodes.
 *  - local_all_to_all: nodes = W // D.  nodes == 0: local_0 = every rank;
 *    nodes == 1: local_0 = [0, D) (W != D is rejected); else local_i for
 *    i < nodes, then global_i = [i + jD for j < nodes] for i < D.  With
 *    nodes <= 1 the global family is built with no groups.  Ranks past
 *    nodes·D (W % D != 0) are in no group (a warning); sp_groups_find
 *    returns FALSE for them.  Labels "local_<i>", "global_<i>".
 *  - world: one group of every rank, always built, never in the creation
 *    order.
 *
 * Memory: each family is one members array, n_groups + 1 offsets and two
 * rank-indexed lookups (about 12 bytes per rank per family); building the
 * W = 2^20, S = 64 hierarchical layout took ~45 ms and ~60 MB peak on the
 * 2-core development machine (gcc -O2).
 */
#pragma once
#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  SP_FAMILY_SHARD = 0,
  SP_FAMILY_REPLICATE,
  SP_FAMILY_SHARD_INTRA_NODE,
  SP_FAMILY_SHARD_INTER_NODE,
  SP_FAMILY_EXPERT,
  SP_FAMILY_EXPERT_DATA,
  SP_FAMILY_TENSOR,
  SP_FAMILY_DATA,
  SP_FAMILY_ZERO_PARAM,
  SP_FAMILY_A2A_LOCAL,   /* "local_all_to_all.local": local_i */
  SP_FAMILY_A2A_GLOBAL,  /* "local_all_to_all.global": global_i */
  SP_FAMILY_WORLD,       /* every rank in one group (qgZ fallbacks, barriers) */
  SP_FAMILY_N,
  SP_FAMILY_NONE = 255,  /* compute ops */
} SpFamily;

/* "shard", "replicate", "shard_intra_node", "shard_inter_node", "expert",
 * "expert_data", "tensor", "data", "zero_param", "local_all_to_all.local",
 * "local_all_to_all.global", "world"; NULL for others.  Static strings. */
const char *sp_family_name (SpFamily family);
gboolean sp_family_from_name (const char *name, SpFamily *out_family);

/* What to build.  Zero means "not requested" for every size. */
typedef struct {
  guint32 world_size;            /* W >= 1 */
  guint32 devices_per_node;      /* D >= 1 (default 8): MiCS hierarchy, local a2a */
  guint32 shard_size;            /* S: shard + replicate (+ hierarchy) families */
  gboolean hierarchical;         /* shard_intra_node / shard_inter_node */
  guint32 tensor_parallel;       /* T: tensor + data families (TP mesh) */
  guint32 pipeline_parallel;     /* P (used with expert parallelism), 0 = 1 */
  guint32 expert_parallel;       /* E: expert + expert_data families */
  gboolean data_before_expert;   /* DeepSpeed's use_data_before_expert_parallel_ */
  guint32 zero_param_group_size; /* hpZ secondary partition size */
  gboolean local_all_to_all;     /* qgZ local/global all-to-all groups */
} SpGroupsOptions;

/* Defaults: everything 0/FALSE except devices_per_node = 8. */
void sp_groups_options_init (SpGroupsOptions *opts);

typedef struct _SpGroups SpGroups;

/* Build every requested family.  A configuration DeepSpeed rejects fails with
 * SP_ERROR_INVALID_GROUPS and one line saying why ("shard size 24 does not
 * divide world size 64").  A bad option value fails with
 * SP_ERROR_INVALID_ARGUMENT: world size or devices per node 0, any size
 * above 2^31, `hierarchical` without a shard size, `data_before_expert`
 * without an expert-parallel size; pipeline_parallel without
 * expert_parallel is accepted and unused.  If memory runs out the error is
 * SP_ERROR_UNSUPPORTED.  Configurations DeepSpeed accepts but a user
 * almost certainly did not mean (hierarchical "intra-node" groups that
 * straddle physical nodes; ranks left out of the local all-to-all groups)
 * are built as DeepSpeed builds them and recorded as warnings.
 * Free with sp_groups_free(). */
SpGroups *sp_groups_build (const SpGroupsOptions *opts, GError **error);

/* What sp_groups_build checks before it builds anything: TRUE when it would
 * accept `opts`, else FALSE with its error.  Cheap (no rank lists), so a
 * caller can refuse a configuration before it costs memory. */
gboolean sp_groups_options_check (const SpGroupsOptions *opts, GError **error);
void sp_groups_free (SpGroups *groups);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (SpGroups, sp_groups_free)

const SpGroupsOptions *sp_groups_options (const SpGroups *groups);
guint32 sp_groups_world_size (const SpGroups *groups);

/* TRUE if the family was requested and built (SP_FAMILY_WORLD always is). */
gboolean sp_groups_has_family (const SpGroups *groups, SpFamily family);
/* Number of groups in a family (0 if not built). */
guint32 sp_groups_n_groups (const SpGroups *groups, SpFamily family);
/* Members of group `index` of `family`, in DeepSpeed's order; the array is
 * owned by `groups`. */
const guint32 *sp_groups_members (const SpGroups *groups, SpFamily family, guint32 index,
                                  guint32 *out_size);
/* DeepSpeed's name for a group where it has one ("local_0", "global_3",
 * "ep_size_4"), else NULL.  Owned by `groups`. */
const char *sp_groups_label (const SpGroups *groups, SpFamily family, guint32 index);
/* The group of `family` that contains `rank`: returns FALSE if none (the
 * family is not built, or DeepSpeed leaves the rank out).  O(1). */
gboolean sp_groups_find (const SpGroups *groups, SpFamily family, guint32 rank,
                         guint32 *out_index, guint32 *out_group_rank);

/* Where a family's traffic runs (issue 17): how many of its groups have
 * every member in one block of `span` consecutive ranks — one NVLink
 * domain when `span` is the topology's GPUs per domain (block placement:
 * rank r sits in domain r / span), one node when it is the GPUs per node.
 * Groups of one rank count as inside.  0 when the family is not built or
 * `span` is 0. */
guint32 sp_groups_n_within (const SpGroups *groups, SpFamily family, guint32 span);

/* Communicator creation order: entry i is (family, group index). */
guint32 sp_groups_n_created (const SpGroups *groups);
void sp_groups_created (const SpGroups *groups, guint32 i, SpFamily *out_family,
                        guint32 *out_index);

/* Warnings collected while building (NULL-terminated, owned by `groups`). */
const char *const *sp_groups_warnings (const SpGroups *groups);

G_END_DECLS
