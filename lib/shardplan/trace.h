/* shardplan/trace.h — the HDF5 trace: one file per run, the same layout for
 * measured (executor) and simulated (simulator) runs, so that a comparison
 * is a join on (op_id, iter, rank).  Schema version 1.3 (1.0 plus the
 * /ops/ops field nccl_est_ns in 1.1, the root attribute check_policy in
 * 1.2 and the coll value p2p in 1.3; see the history in trace-record.h):
 *
 *   /              attrs (all scalar): schema = "shardplan-trace" (string),
 *                  schema_version = "MAJOR.MINOR" (string, "1.3"), run_id (UUID
 *                  string), created_utc (ISO 8601 string, "2026-01-31T12:00:00Z"),
 *                  source ("measured"|"simulated"), producer, producer_version,
 *                  time_unit = "ns", clock, timing_mode (strings), warmup_iters,
 *                  iters, world_size (uint32), complete (uint8: 1, or 0 for a
 *                  partial trace, which then also has the string attr
 *                  incomplete_reason); optional string check_policy (1.2:
 *                  how a measured run verified its results, "after",
 *                  "every" or "none"; absent where nothing was measured or
 *                  the producer does not say).  Strings are variable-length
 *                  UTF-8.
 *   /meta/software attrs: one string per component ("nccl_compiled",
 *                  "nccl_runtime", "cuda", "mpi", "compiler" … set by the
 *                  producer; "hdf5" filled in by the writer).
 *   /meta/env      compound {key, value} (SP_TRACE_ENV_FIELDS), 1-D.
 *   /meta/cluster/nodes, /meta/cluster/ranks: compounds of
 *                  SP_TRACE_NODE_FIELDS / SP_TRACE_RANK_FIELDS, 1-D.
 *   /meta/topology scalar string dataset: the topology INI as used; attr
 *                  digest = SHA-256 hex of that text.  Absent if not set.
 *   /meta/plan     scalar string dataset: the plan JSON as used; attr digest
 *                  = sp_plan_digest() (SHA-256 of the canonical JSON, so two
 *                  traces of one plan match however the file was formatted).
 *                  Absent if not set.
 *   /groups/families {family_id (uint32, = the SpFamily value), name}
 *   /groups/groups   {group_id, family_id, size, members_offset, members_count}
 *   /groups/members  uint32[]: CSR, group g's ranks are
 *                    members[members_offset .. members_offset + members_count).
 *                  Families appear in SpFamily order (only those built), the
 *                  groups of a family consecutively in index order, so
 *                  group_id = (groups of all earlier built families) + index;
 *                  sp_trace_group_id() computes it from an SpGroups.
 *   /ops/ops       compound of SP_TRACE_ROW_FIELDS (shardplan/trace-record.h),
 *                  1-D, chunked, unlimited, shuffle + deflate.  Flat scalar
 *                  fields only: pandas.DataFrame(f["ops/ops"][:]) works.
 *
 * Rows, by convention:
 *   - iter is 0..iters-1; warm-up iterations are not stored (iter < 0 is
 *     reserved and never written).
 *   - Times are integer ns since the run epoch: for a measured run the start
 *     of the first timed iteration on the reference clock (rank 0's, after
 *     each rank's clock_offset_ns is subtracted); for a simulated run
 *     simulation time 0.  dur_ns is the op's duration as the run's
 *     timing_mode measured it (it may differ slightly from t_end - t_start
 *     when device events time the op).
 *   - Ops without a group (compute, quantize) have group_id =
 *     SP_TRACE_NO_GROUP, group_rank 0, group_size 1.
 *   - A composite op gets its own rows (flag SP_TRACE_FLAG_COMPOSITE) spanning
 *     its sub-ops, whose rows carry its id in parent_op_id.
 *   - nccl_est_ns is NCCL's own estimate of the op (ncclGroupSimulateEnd,
 *     NCCL >= 2.22), recorded by the NCCL backend once per op and repeated
 *     on that op's rows; -1 where there is none (other producers, composite
 *     and non-collective ops, older NCCL, and every row of a 1.0 file).
 *   - Rows may be in any order; the reader does not sort them.
 *
 * Compatibility: a reader accepts any file with the same major version; new
 * fields are only ever added at the end of a table with a minor version
 * bump; /ops/ops fields a file lacks read as their sp_trace_row_init()
 * value (0 for most, -1 for nccl_est_ns), those of the other tables as 0.
 * A newer major version is refused.  Fields are matched by name and enums by member name.
 * A field added later must be fixed-size (no variable-length data, no
 * references): a reader refuses such a field it does not know.
 *
 * Hostile files: sp_trace_open() checks structure before it reads data
 * (every attribute one value of the schema's class, every field the
 * schema's exact type, 1-D tables declaring no more rows than the file can
 * hold and at most 2^28 for the tables read whole, records of at most 4096
 * bytes, only the shuffle, deflate and Fletcher-32 filters, the file's
 * global heaps sound and every string reference into them, in tables and
 * in attributes, naming an object of its length) and refuses a file that
 * fails with SP_ERROR_INVALID_TRACE and a message naming the file.
 * README.md ("Corrupt and hostile traces") lists the damage libhdf5 itself
 * still cannot survive.
 *
 * Crash safety: the writer writes to a temporary file next to `path`
 * ("path.tmp-XXXXXX", shardplan/file.h: mode 0666 & ~umask, removed on
 * SIGINT/SIGTERM/SIGHUP/SIGPIPE once sp_file_cleanup_on_signals() is installed)
 * and renames it to `path` in sp_trace_writer_finish(), so a file under
 * the final name is always whole.  A run that failed can
 * still keep what it has: sp_trace_writer_mark_partial() then finish writes
 * a readable file with complete = 0 and the reason.
 */
#pragma once
#include <glib.h>
#include "shardplan/types.h"
#include "shardplan/groups.h"
#include "shardplan/plan.h"
#include "shardplan/topo.h"

G_BEGIN_DECLS

#define SP_TRACE_SCHEMA_NAME "shardplan-trace"
#define SP_TRACE_SCHEMA_MAJOR 1
#define SP_TRACE_SCHEMA_MINOR 3

/* group_id of an op that runs in no group (compute, quantize). */
#define SP_TRACE_NO_GROUP G_MAXUINT32

/* Row flags. */
enum {
  SP_TRACE_FLAG_IN_PLACE = 1u << 0,  /* the op ran in place (input buffer = output) */
  SP_TRACE_FLAG_COMPOSITE = 1u << 1, /* the row spans a composite op's sub-ops */
  SP_TRACE_FLAG_CHECKED = 1u << 2,   /* the op's result was checked in this run (status says how) */
  SP_TRACE_FLAG_MODELLED = 1u << 3,  /* the duration is a model (e.g. a compute op's
                                        flops / rate slept by the executor), not a measurement */
};

/* Outcome of one op on one rank. */
typedef enum {
  SP_TRACE_STATUS_OK = 0,
  SP_TRACE_STATUS_WRONG = 1,   /* ran, result check failed */
  SP_TRACE_STATUS_TIMEOUT = 2, /* missed its deadline */
  SP_TRACE_STATUS_ERROR = 3,   /* the backend reported an error */
  SP_TRACE_STATUS_NOT_RUN = 4, /* never started (an earlier failure) */
} SpTraceStatus;

/* "ok", "wrong", "timeout", "error", "not_run"; NULL for others. */
const char *sp_trace_status_name (SpTraceStatus status);
gboolean sp_trace_status_from_name (const char *name, SpTraceStatus *out_status);

typedef enum {
  SP_TRACE_SOURCE_MEASURED = 0,
  SP_TRACE_SOURCE_SIMULATED = 1,
} SpTraceSource;

/* "measured", "simulated". */
const char *sp_trace_source_name (SpTraceSource source);

#include "shardplan/trace-record.h"

#define SP_TRACE_DECLARE_FIELD_(kind, ctype, name, since, doc) ctype name;

/* One row of /ops/ops.  Fields and units: SP_TRACE_ROW_FIELDS. */
typedef struct {
  SP_TRACE_ROW_FIELDS (SP_TRACE_DECLARE_FIELD_)
} SpTraceRow;

/* One row of /meta/cluster/nodes; strings are owned by whoever filled it. */
typedef struct {
  SP_TRACE_NODE_FIELDS (SP_TRACE_DECLARE_FIELD_)
} SpTraceNode;

/* One row of /meta/cluster/ranks. */
typedef struct {
  SP_TRACE_RANK_FIELDS (SP_TRACE_DECLARE_FIELD_)
} SpTraceRank;

/* One /meta/env pair. */
typedef struct {
  SP_TRACE_ENV_FIELDS (SP_TRACE_DECLARE_FIELD_)
} SpTraceEnv;

/* Defaults for a row: everything 0 except parent_op_id = -1, group_id =
 * SP_TRACE_NO_GROUP, group_size = 1, dtype = SP_DTYPE_NONE, redop =
 * SP_REDOP_NONE, status = SP_TRACE_STATUS_NOT_RUN, nccl_est_ns = -1. */
void sp_trace_row_init (SpTraceRow *row);

/* Fill algbw_gbs / busbw_gbs from coll, bytes, group_size and dur_ns with
 * nccl-tests' formulas (sp_coll_bandwidths, n = group_size); 0 when dur_ns
 * <= 0 or the op moves no data between ranks. */
void sp_trace_row_set_bandwidths (SpTraceRow *row);

/* The record tables, for generic consumers (CSV export, joins). */
typedef enum {
  SP_TRACE_KIND_U8,
  SP_TRACE_KIND_U32,
  SP_TRACE_KIND_I32,
  SP_TRACE_KIND_U64,
  SP_TRACE_KIND_I64,
  SP_TRACE_KIND_F64,
  SP_TRACE_KIND_STR,
  SP_TRACE_KIND_COLL,
  SP_TRACE_KIND_DTYPE,
  SP_TRACE_KIND_REDOP,
  SP_TRACE_KIND_STATUS,
} SpTraceKind;

typedef struct {
  const char *name;   /* field name in the file, e.g. "t_start_ns" */
  SpTraceKind kind;
  gsize offset;       /* offsetof in the C struct */
  guint since_minor;  /* schema minor version that added the field */
  const char *doc;    /* one line, with units */
} SpTraceField;

/* The fields of SpTraceRow in file order (static array; *out_n entries). */
const SpTraceField *sp_trace_row_fields (gsize *out_n);

/* Append the value of `field` of `record` (an SpTraceRow, SpTraceNode …) to
 * `out` as text: integers in decimal, doubles in the shortest form that
 * reads back exactly, enums by name (the number if it has none), strings as
 * they are (NULL as ""). */
void sp_trace_field_append (const SpTraceField *field, gconstpointer record, GString *out);

/* ---------------------------------------------------------------- writer */

/* What the producer says about the run.  Strings are copied.  NULL run_id
 * and created_utc are generated (g_uuid_string_random, now in UTC); a
 * producer that wants byte-identical files for identical inputs (the
 * simulator) passes fixed ones. */
typedef struct {
  SpTraceSource source;
  const char *producer;          /* "shardplan sim", "shardplan run" … */
  const char *producer_version;  /* sp_version() */
  const char *clock;             /* "CLOCK_MONOTONIC", "cuda-events", "simulated" … */
  const char *timing_mode;       /* "isolated", "replay", "simulated" … */
  const char *check_policy;      /* "after", "every", "none": how a measured run
                                    verified results (the root attribute
                                    check_policy); NULL: not recorded */
  guint32 warmup_iters;
  guint32 iters;
  guint32 world_size;
  const char *run_id;            /* NULL: a random UUID */
  const char *created_utc;       /* NULL: now, "YYYY-MM-DDTHH:MM:SSZ" */
} SpTraceHeader;

typedef struct _SpTraceWriter SpTraceWriter;

/* Create the temporary file next to `path` and write the root attributes
 * and /meta/software/hdf5.  Fails with SP_ERROR_IO (directory not
 * writable …) or SP_ERROR_INVALID_ARGUMENT (a NULL/empty producer, clock or
 * timing mode, iters == 0, world_size == 0).  `path` itself is not touched
 * until sp_trace_writer_finish().  Free with sp_trace_writer_free(). */
SpTraceWriter *sp_trace_writer_new (const char *path, const SpTraceHeader *header,
                                    GError **error);

/* The temporary file being written (owned by the writer). */
const char *sp_trace_writer_temp_path (const SpTraceWriter *writer);

/* One /meta/software attribute, e.g. ("nccl_runtime", "2.21.5"). */
gboolean sp_trace_writer_set_software (SpTraceWriter *writer, const char *key,
                                       const char *value, GError **error);

/* Add one /meta/env pair (buffered, written by finish). */
void sp_trace_writer_add_env (SpTraceWriter *writer, const char *key, const char *value);

/* /meta/cluster: nodes and ranks (copied).  At most once. */
gboolean sp_trace_writer_set_cluster (SpTraceWriter *writer, const SpTraceNode *nodes,
                                      gsize n_nodes, const SpTraceRank *ranks, gsize n_ranks,
                                      GError **error);

/* /meta/topology: `text` as used (NULL: sp_topo_to_ini (topo)); its SHA-256
 * is the digest.  At most once. */
gboolean sp_trace_writer_set_topology (SpTraceWriter *writer, const SpTopo *topo,
                                       const char *text, GError **error);

/* /meta/plan: `text` as used (NULL: sp_plan_to_json (plan)); digest =
 * sp_plan_digest (plan).  At most once. */
gboolean sp_trace_writer_set_plan (SpTraceWriter *writer, const SpPlan *plan, const char *text,
                                   GError **error);

/* /groups from every family `groups` built (SP_FAMILY_WORLD included).  At
 * most once; without it the tables are written empty. */
gboolean sp_trace_writer_set_groups (SpTraceWriter *writer, const SpGroups *groups,
                                     GError **error);

/* The trace's group_id of group `index` of `family`, or SP_TRACE_NO_GROUP
 * when the family is not built or has no such group. */
guint32 sp_trace_group_id (const SpGroups *groups, SpFamily family, guint32 index);

/* Append rows (copied into an in-memory buffer; full buffers are written
 * as one hyperslab).  Fails with SP_ERROR_INVALID_ARGUMENT, naming the row,
 * on an enum field (coll, dtype, redop, status) holding a value its enum
 * does not name (the rows before it are kept), and with SP_ERROR_IO on an
 * HDF5 write error. */
gboolean sp_trace_writer_append (SpTraceWriter *writer, const SpTraceRow *rows, gsize n,
                                 GError **error);

/* Rows appended so far. */
guint64 sp_trace_writer_n_rows (const SpTraceWriter *writer);

/* Declare the trace partial: finish will write complete = 0 and
 * incomplete_reason = `reason` (e.g. "op 17 timed out on rank 3"). */
void sp_trace_writer_mark_partial (SpTraceWriter *writer, const char *reason);

/* Flush rows, write the remaining metadata, close, and rename the temporary
 * file to `path` (replacing an existing file atomically).  On failure the
 * temporary file is removed and `path` is untouched.  Either way the writer
 * is spent: only sp_trace_writer_free() may follow. */
gboolean sp_trace_writer_finish (SpTraceWriter *writer, GError **error);

/* Close and remove the temporary file (no-op after finish). */
void sp_trace_writer_abort (SpTraceWriter *writer);

/* Free; aborts first if not finished. */
void sp_trace_writer_free (SpTraceWriter *writer);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (SpTraceWriter, sp_trace_writer_free)

/* ---------------------------------------------------------------- reader */

typedef struct _SpTrace SpTrace;

/* Open and validate a trace: an HDF5 file whose root says schema
 * "shardplan-trace" with major version SP_TRACE_SCHEMA_MAJOR, with every
 * dataset above (the optional /meta/plan and /meta/topology aside), their
 * fields of exactly the schema's types and their sizes within what the file
 * can hold (see "Hostile files" above).  Reads the whole file once to check
 * its global heaps.  All metadata is read now; rows on
 * demand.  Errors (SP_ERROR_INVALID_TRACE, or SP_ERROR_IO when the file
 * cannot be read) name the file and the problem: "not an HDF5 file",
 * "not a shardplan trace (schema 'x')", "schema version 2.0 is newer than
 * this shardplan reads (1.x)", "missing dataset /ops/ops", "field bytes of
 * /ops/ops is a float, expected an integer" …  Free with sp_trace_free(). */
SpTrace *sp_trace_open (const char *path, GError **error);
void sp_trace_free (SpTrace *trace);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (SpTrace, sp_trace_free)

/* Root attributes (strings owned by the trace; run_id and created_utc are
 * always set in the returned header). */
const SpTraceHeader *sp_trace_header (const SpTrace *trace);
void sp_trace_schema_version (const SpTrace *trace, guint *out_major, guint *out_minor);
gboolean sp_trace_is_complete (const SpTrace *trace);
/* Why the trace is partial, NULL for a complete one. */
const char *sp_trace_incomplete_reason (const SpTrace *trace);

/* A /meta/software attribute (NULL if absent), and all keys (NULL-terminated,
 * owned by the trace). */
const char *sp_trace_software (const SpTrace *trace, const char *key);
const char *const *sp_trace_software_keys (const SpTrace *trace);

/* /meta/env in file order (owned by the trace). */
const SpTraceEnv *sp_trace_env (const SpTrace *trace, gsize *out_n);
/* Its NCCL_* variables, the last value of a name repeated, in file order:
 * how many, with their names and values in *out_names / *out_values
 * (NULL-terminated arrays to g_free; the strings are the trace's). */
gsize sp_trace_nccl_vars (const SpTrace *trace, const char ***out_names, const char ***out_values);

/* /meta/cluster (owned by the trace). */
const SpTraceNode *sp_trace_nodes (const SpTrace *trace, gsize *out_n);
const SpTraceRank *sp_trace_ranks (const SpTrace *trace, gsize *out_n);

/* /meta/plan and /meta/topology text and digest, NULL when absent (owned by
 * the trace). */
const char *sp_trace_plan_text (const SpTrace *trace);
const char *sp_trace_plan_digest (const SpTrace *trace);
const char *sp_trace_topology_text (const SpTrace *trace);
const char *sp_trace_topology_digest (const SpTrace *trace);

/* /groups.  Families in file order: i < sp_trace_n_families; the id is the
 * SpFamily value, the name its sp_family_name. */
guint32 sp_trace_n_families (const SpTrace *trace);
void sp_trace_family (const SpTrace *trace, guint32 i, guint32 *out_family_id,
                      const char **out_name);
/* Name of a family id, NULL if the trace has no such family. */
const char *sp_trace_family_name (const SpTrace *trace, guint32 family_id);
guint32 sp_trace_n_groups (const SpTrace *trace);
/* Group `group_id`: its family id and index within the family; FALSE when
 * out of range (e.g. SP_TRACE_NO_GROUP). */
gboolean sp_trace_group_info (const SpTrace *trace, guint32 group_id, guint32 *out_family_id,
                              guint32 *out_index);
/* Members of `group_id` (owned by the trace), NULL when out of range. */
const guint32 *sp_trace_group_members (const SpTrace *trace, guint32 group_id,
                                       guint32 *out_size);

/* Rows of /ops/ops. */
guint64 sp_trace_n_rows (const SpTrace *trace);
/* Read rows [start, start + n) into out[0..n).  start + n must be <=
 * sp_trace_n_rows (else SP_ERROR_INVALID_ARGUMENT).  Fields a file lacks
 * (an older minor version) read as their sp_trace_row_init() value (so
 * nccl_est_ns = -1 for a 1.0 file); SP_ERROR_INVALID_TRACE on a damaged
 * file. */
gboolean sp_trace_read_rows (SpTrace *trace, guint64 start, gsize n, SpTraceRow *out,
                             GError **error);

G_END_DECLS
