/* tools/chakra/chakra.h — Chakra execution traces (ET) out of and into
 * shardplan plans.  Built only with protobuf-c (configure --with-protobuf-c);
 * the message code is generated from tools/chakra/et_def.proto by protoc-c.
 *
 * Files: one "<prefix>.<rank>.et" per rank, each a stream of protobuf
 * messages preceded by their length as a varint (Chakra's own framing):
 * first a GlobalMetadata, then one Node per op the rank runs.  Beside them
 * "<prefix>.groups.json", ASTRA-sim's communicator-group file: an object
 * whose keys are the decimal group numbers 1, 2, … used as the collective
 * nodes' pg_name, and whose values are the member ranks.
 *
 * What a node carries (README "Chakra execution traces" has the table):
 *   collectives: COMM_COLL_NODE, comm_type (int64, Chakra's
 *     CollectiveCommType = shardplan's SpColl code), comm_size (int64, bytes
 *     in nccl-tests' convention: the whole gathered / scattered buffer for
 *     all_gather / reduce_scatter, the per-rank buffer otherwise), pg_name
 *     (string, the group number), is_cpu_op (bool, false),
 *     pg_desc (string, the DeepSpeed family and index: "shard_intra_node.3")
 *     and sp_group_index (uint64, that index);
 *   kernels: COMP_NODE with num_ops (int64, FLOPs per rank), tensor_size
 *     (uint64, bytes) when the op has bytes, and duration_micros when a
 *     topology gave the modelled time;
 *   send / recv: two nodes per rank, COMM_SEND_NODE (id = the op's) and
 *     COMM_RECV_NODE (id = SP_CHAKRA_RECV_ID (n_ops, op id), attribute
 *     sp_p2p_of = the op's id), both with comm_size (int64, bytes),
 *     comm_tag (int32, the op's id: pairs a send with its receive),
 *     comm_src and comm_dst (int32, global ranks): in each group of the
 *     op's family, group rank g sends to g + 1 and receives from g - 1
 *     (send), or the reverse (recv), as the executor runs it; a node that
 *     depends on the op depends on both halves;
 *   p2p: one node, with the op's id, on its two ranks only: COMM_SEND_NODE
 *     on the group's src member, COMM_RECV_NODE on its dst member, with
 *     comm_size, comm_tag, comm_src / comm_dst (those two global ranks) and
 *     sp_src / sp_dst (uint64, their group ranks);
 *   composites (MiCS hierarchical all-gather …): COMP_NODE with neither
 *     duration nor num_ops (ASTRA-sim skips it); their sub-ops are the work;
 *   every node: data_deps = the plan's deps (an op the rank does not run is
 *     replaced by that op's own deps), ctrl_deps = the previous op of the
 *     same stream on this rank, and the sp_* attributes that let
 *     sp_chakra_import() rebuild the exact plan (sp_kind, sp_family,
 *     sp_bytes, sp_count, sp_dtype, sp_redop, sp_algorithm, sp_stream,
 *     sp_layer, sp_phase, sp_parent, sp_flops), and sp_deps (int64 list,
 *     the plan's deps) on an op with a dep that some rank skips (a p2p op,
 *     a family that leaves ranks out), where data_deps differ by rank.
 * A node is written as the concatenation of partial Node encodings (the
 * op's shared part, its group's attributes, the rank's deps), which every
 * protobuf reader merges into one Node. 
 * The GlobalMetadata carries "shardplan_plan": the plan's JSON without its
 * ops (schema, groups options, meta), and "rank", "world_size".
 */
#pragma once
#include <glib.h>
#include "shardplan/shardplan.h"

G_BEGIN_DECLS

/* The schema version written in GlobalMetadata.version (Chakra's current). */
#define SP_CHAKRA_ET_VERSION "0.0.4"

/* The node id of the COMM_RECV_NODE half of send / recv op `op_id` of a
 * plan of `n_ops` ops (the COMM_SEND_NODE half has the op's id). */
#define SP_CHAKRA_RECV_ID(n_ops, op_id) ((guint64) (n_ops) + (guint64) (op_id))

/* Per-rank durations for sp_chakra_export() (e.g. measured, from a trace):
 * fill out_us[0 .. n_ops) with each op's duration on `rank` in µs,
 * G_MAXUINT64 where there is none; FALSE with *error set stops the export. */
typedef gboolean (*SpChakraRankDurations) (guint32 rank, guint64 *out_us, gpointer data,
                                           GError **error);

typedef struct {
  guint32 files;           /* .et files written */
  guint64 nodes;           /* nodes over all files */
  guint64 bytes;           /* bytes over all files (groups file excluded) */
  guint32 groups;          /* communicator groups in the groups file */
} SpChakraExportStats;

/* Write `plan` as Chakra ET files "<prefix>.<r>.et", r = 0 .. W-1, and
 * "<prefix>.groups.json".  `topo` (NULL allowed) gives kernels their
 * modelled duration_micros; when given, its world size must be the plan's.
 * `durations` (NULL allowed) gives every node of a rank its own
 * duration_micros (composites excepted: ASTRA-sim skips a COMP_NODE
 * without duration or FLOPs, and their sub-ops are the work); a kernel it
 * has none for keeps the modelled one when `topo` is given.
 * Each file is written under a temporary name and renamed when whole; on
 * failure the files of this call already renamed are removed, so nothing
 * half-written remains.  `progress` (may be NULL) is called after every
 * file with the rank just written.  Streams the plan: memory is O(ops) per
 * rank, independent of W.  Errors: SP_ERROR_IO naming the file,
 * SP_ERROR_UNSUPPORTED for a send / recv op whose id does not fit comm_tag
 * (an int32). */
gboolean sp_chakra_export (const SpPlan *plan, const SpTopo *topo,
                           SpChakraRankDurations durations, gpointer durations_data,
                           const char *prefix,
                           void (*progress) (guint32 rank, guint32 world, gpointer data),
                           gpointer progress_data, SpChakraExportStats *out_stats,
                           GError **error);

typedef struct {
  guint32 files;           /* .et files read */
  guint64 nodes;           /* nodes over all files */
  guint32 ops;             /* ops of the plan */
  gboolean shardplan;      /* the files came from sp_chakra_export (exact) */
  guint64 skipped[8];      /* nodes not modelled, by Chakra NodeType */
  guint32 compute_spread;  /* compute ops whose durations differ by rank (max kept) */
  guint32 p2p_mapped;      /* other producers' send + recv node pairs made send / recv / p2p ops */
} SpChakraImportStats;

/* Read "<prefix>.<r>.et" for r = 0, 1, … (until the first missing rank;
 * a later rank file after the gap is an error) and the communicator groups
 * (`groups_path`, else "<prefix>.groups.json" when present; NULL allowed):
 * ASTRA-sim's group file, PyTorch's process-group list (pg_config_info:
 * [{"pg_name": "1", "ranks": [0, 1], …}, …], "ranks": [] = every rank) or a
 * PyTorch execution-trace JSON holding it; and build one plan.  Files
 * written by sp_chakra_export() give back the exact plan (send / recv ops
 * from their two nodes, p2p ops from their sender's and receiver's).  Other traces (Chakra's layout, e.g. from its
 * PyTorch converter, where pg_name is the process-group id): nodes with the
 * same id in several files are the same op; collectives map to shardplan's
 * kinds and the group of each (pg_name: a group of the group file, or "" /
 * "0" for every rank) to the DeepSpeed family whose groups are exactly
 * those; compute nodes take duration_micros (needs `topo`, whose peak turns
 * time into FLOPs at efficiency 1) or num_ops; a COMM_SEND_NODE and the
 * COMM_RECV_NODE that move the same bytes between the same peers (comm_src,
 * comm_dst) become one send / recv op when the pairs are exactly the ring
 * exchange of one family's groups (each member to the next: send, to the
 * previous: recv), or one p2p op when they go one way, one pair in each
 * group of a family from the same group rank to the same group rank (a
 * pipeline's stage-to-stage sends); send / recv nodes that pair with
 * nothing or form neither, and other node types, are counted in
 * out_stats->skipped and bridged in the dependencies.  Every error names the file, the node id and the field
 * (SP_ERROR_INVALID_TRACE): truncated stream, bad varint, undecodable
 * message, unknown node type or comm_type, a dependency on a node not in
 * the file, a cycle (in a file or across files), files that disagree on a
 * node's type, size or group, a send / recv half whose peer or size is not
 * the plan's, a gap in the rank files.  Free the plan with sp_plan_free(). */
SpPlan *sp_chakra_import (const char *prefix, const char *groups_path, const SpTopo *topo,
                          SpChakraImportStats *out_stats, GError **error);

G_END_DECLS
