/* exec/exec-internal.h — the executor's two small tables and the per-op
 * task they share (STYLE §8):
 *
 *   SpExecBoot     the process bootstrap: rank, size, clock, barrier with a
 *                  failure flag, byte gathers.  MPI (exec/mpi/boot.c).
 *   SpExecBackend  probe, set up communicators for every family the plan
 *                  uses, start one op, test it, abort, tear down.  MPI
 *                  (exec/mpi/backend.c) or NCCL (exec/nccl/backend.c);
 *                  exec/record.c wraps either to timestamp and record rows.
 *
 * Nothing here includes mpi.h, cuda_runtime.h or nccl.h: only the files
 * under exec/mpi/ and exec/nccl/ do.
 */
#pragma once
#include <glib.h>
#include <stdio.h>
#include "shardplan/shardplan.h"
#include "shardplan/exec.h"

G_BEGIN_DECLS

/* Hot-path status of a backend call. */
typedef enum {
  SP_EXEC_OK = 0,
  SP_EXEC_ERROR,     /* the backend reported an error (message via last_error) */
  SP_EXEC_TIMEOUT,   /* a deadline passed */
} SpExecStatus;

/* ---------------------------------------------------------------- bootstrap */

typedef struct {
  const char *name;
  /* MPI_Init unless already initialised.  *out_owned: this call initialised it. */
  gboolean (*init) (gboolean *out_owned, GError **error);
  void (*finalize) (void);
  guint32 (*rank) (void);
  guint32 (*size) (void);
  /* Local clock, ns (MPI_Wtime × 1e9). */
  gint64 (*now_ns) (void);
  /* A world-wide barrier that also ORs `*inout_flags` over the ranks, polled
   * until `deadline_ns` (now_ns clock).  SP_EXEC_TIMEOUT when it passes. */
  SpExecStatus (*sync) (guint32 *inout_flags, gint64 deadline_ns);
  /* Every rank contributes `bytes` (same on every rank); out has size·bytes. */
  gboolean (*allgather) (const void *in, gsize bytes, void *out, GError **error);
  /* Rank 0 receives every rank's variable-length bytes, concatenated in rank
   * order, with per-rank lengths in out_lengths[size] (rank 0 only; others
   * get NULL).  Free with g_free. */
  gboolean (*gatherv) (const void *in, gsize bytes, guint8 **out_data, guint64 **out_lengths,
                       GError **error);
  gboolean (*bcast) (void *buf, gsize bytes, guint32 root, GError **error);
  /* This rank's clock minus rank 0's, ns (0 on rank 0), by ping-pong. */
  gboolean (*clock_offset) (gint64 *out_offset_ns, GError **error);
  /* Rank within the node and ranks on the node (MPI_Comm_split_type SHARED). */
  gboolean (*local_rank) (guint32 *out_local, guint32 *out_local_size, GError **error);
  /* Host name (g_free). */
  char *(*hostname) (void);
  /* MPI library version string (g_free). */
  char *(*library_version) (void);
  /* Kill the whole job (MPI_Abort); does not return. */
  void (*abort) (int code);
} SpExecBoot;

extern const SpExecBoot sp_exec_boot_mpi;

/* ---------------------------------------------------------------- tasks */

/* Timing of one stage, ns on the backend clock (now_ns), 0 = not set. */
typedef struct {
  gint64 t_enqueue, t_start, t_end;
} SpExecTimes;

/* One op of the plan on this rank, with its buffers and run state. */
typedef struct SpExecTask SpExecTask;
struct SpExecTask {
  const SpOp *op;
  SpFamily family;
  gboolean runs;                 /* this rank executes it (in a group, or a kernel) */
  gboolean handled_by_parent;    /* a sub-op run inside its composite's task */
  gboolean virtual_composite;    /* hier_all_gather: a span over sub-op tasks */
  guint32 group_index, group_rank, group_size, group_id;
  const guint32 *members;        /* the group's ranks (owned by SpGroups) */
  /* Sub-op tasks of a composite, in plan order (owned by the driver). */
  guint32 n_sub;
  SpExecTask **sub;
  /* Host buffers (the driver fills and checks them). */
  gsize in_bytes, out_bytes;
  guint8 *in, *out;
  gboolean own_buffers;
  /* Composite geometry (filled by the driver, used by the backends). */
  guint64 rs_numel[2];           /* reduce_scatter_coalesced: the tensors */
  guint32 rs_n_tensors;
  guint64 qgz_groups;            /* G */
  guint32 qgz_group_elems;       /* E */
  guint32 qgz_nodes, qgz_devices;/* N, D */
  guint32 kern_bits;             /* quantize/dequantize: 4 or 8 */
  guint64 kern_groups;
  guint32 kern_group_elems;
  /* Run state. */
  gpointer be;                   /* the backend's per-task state */
  gboolean in_flight, done;
  gint64 deadline_ns;
  SpTraceStatus status;
  guint32 flags;                 /* SP_TRACE_FLAG_* */
  SpExecTimes times;             /* the whole op */
  SpExecTimes *sub_times;        /* [n_sub] for composites run as one task */
  guint32 seq_in_group;
  gint64 sleep_ns;               /* replay compute: modelled duration */
  gint64 row_first;              /* its rows in the recorder, -1: none */
  guint row_count;
  /* NCCL's own estimate of the op (ncclGroupSimulateEnd, set by the nccl
   * backend at setup), ns; the rows' nccl_est_ns, -1 unless has_nccl_est. */
  gboolean has_nccl_est;
  gint64 nccl_est_ns;
};

/* ---------------------------------------------------------------- backends */

typedef struct SpExecCtx SpExecCtx;

typedef struct {
  const char *name;
  /* Can this rank run the backend (e.g. a GPU for this local rank)?  Local;
   * the driver agrees on the answer over the bootstrap. */
  gboolean (*probe) (SpExecCtx *ctx, GError **error);
  /* Communicators for every family the plan uses, device buffers for
   * every task, warm-up of every communicator. */
  gboolean (*setup) (SpExecCtx *ctx, GError **error);
  /* Copy the task's host input to where the op reads it (no-op for mpi). */
  SpExecStatus (*stage_in) (SpExecCtx *ctx, SpExecTask *task);
  /* Start the op (non-blocking).  Sets task->times. */
  SpExecStatus (*start) (SpExecCtx *ctx, SpExecTask *task);
  /* Poll: *out_done TRUE when finished (times set). */
  SpExecStatus (*test) (SpExecCtx *ctx, SpExecTask *task, gboolean *out_done);
  /* Copy the result back to task->out (no-op for mpi). */
  SpExecStatus (*stage_out) (SpExecCtx *ctx, SpExecTask *task);
  /* Abort every communicator (after a failure).  Must not block. */
  void (*abort) (SpExecCtx *ctx);
  void (*teardown) (SpExecCtx *ctx);
  /* One line about the last error on this rank (static or ctx-owned). */
  const char *(*last_error) (SpExecCtx *ctx);
  /* /meta/software entries this backend adds (key, value pairs). */
  void (*software) (SpExecCtx *ctx, GPtrArray *keys_values);
  gpointer state;
} SpExecBackend;

extern const SpExecBackend sp_exec_backend_mpi;
#ifdef SP_EXEC_HAVE_NCCL
extern const SpExecBackend sp_exec_backend_nccl;
#endif

/* Everything a backend may read. */
struct SpExecCtx {
  const SpExecOptions *opts;
  const SpExecBoot *boot;
  const SpPlan *plan;
  const SpGroups *groups;
  guint32 rank, world;
  guint32 local_rank, local_size;
  guint32 n_tasks;
  SpExecTask *tasks;             /* [n_ops] in plan order */
  gboolean families_used[SP_FAMILY_N];
  gpointer backend_state;        /* owned by the backend */
  gboolean failure_agreed;       /* the backend's setup failed after an sp_exec_agree:
                                  * every rank has the failing rank's message already */
  guint32 topo_nccl_version;     /* the topology's [nccl] version (code; 0: not given) */
  char *error_text;              /* last backend error (g_free) */
};

/* A backend failure message for ctx->error_text (printf-like). */
void sp_exec_set_error (SpExecCtx *ctx, const char *fmt, ...) G_GNUC_PRINTF (2, 3);

/* ---------------------------------------------------------------- spill files
 *
 * Each rank appends what it measures to OUTPUT.rank<R>.spill while it runs
 * (exec/spill.c writes and reads the format, exec/record.c appends), so
 * that a crash of any rank — rank 0 included — keeps what was measured:
 * `shardplan trace recover` turns the files left into a partial trace.
 * Layout, in the writer's native byte order (the reader refuses another):
 *
 *   file header, 16 bytes: magic "SPSPILL\0" (8 bytes), u32 spill format
 *     version (SP_EXEC_SPILL_VERSION), u32 byte-order mark 0x01020304.
 *   records, each a 16-byte header {u32 type, u32 0, u64 payload bytes}
 *   and the payload:
 *     1 RUN   (first, exactly once) a JSON object: format =
 *             "shardplan-spill", spill_version, schema = "shardplan-trace",
 *             schema_version ("1.2"; another 1.x with the same rows
 *             reads), byte_order ("little"|"big"), row_size (bytes), row_fields [[name, kind, byte offset], …]
 *             (SpTraceRow's layout: kind u8|u32|i32|u64|i64|f64, or
 *             coll|dtype|redop|status for C enums of 4 bytes), rank,
 *             world_size, run_id, output, producer, producer_version,
 *             clock, timing_mode, check_policy (version 2; the run's
 *             --check), warmup_iters, iters, plan_digest, plan
 *             (the plan JSON as used), topology (INI text or null),
 *             software {key: value}, env [[key, value], …].
 *     2 INFO  (any number, later members win) a JSON object with some of:
 *             backend, hostname, local_rank, device (-1: CPU), gpu_model,
 *             clock_offset_ns (this rank's clock minus rank 0's),
 *             software {key: value}, epoch_ns (this rank's clock at the
 *             start of the first timed iteration).
 *     3 ROWS  payload bytes / row_size SpTraceRow structs, times on the
 *             rank's raw clock (ns).
 *     4 MARK  (version 2) 16 bytes, u32 each: op_id, stages (1: also the
 *             rows whose parent_op_id is op_id), status, flags — the
 *             validation pass's verdict on an op (sp_exec_rows_mark), applied
 *             by the reader to the rows before it in the file.
 * A file cut short mid-row keeps its whole rows (dropped_bytes counts the
 * rest); one cut inside the RUN record is refused.  Damage after the RUN
 * record (a record of unknown type, a second RUN record, an INFO record
 * that is not valid, a ROWS record not of whole rows, a row the recorder
 * could not have written — another rank's, an iteration outside the run, a
 * group rank outside its group, an unknown enum value, as a crash's zeros
 * or a record read out of step give —, a MARK record of the wrong size)
 * stops the reading there: the records and rows before it are kept, and `damage` says what was found where
 * (a crash that tore the file's end, a disk error; the rows before it were
 * measured and are not lost with it).  The reader takes versions 1 (no
 * MARK records) and 2. */

#define SP_EXEC_SPILL_VERSION 2

/* The run's identity and header, the same in every rank's file except
 * rank.  Strings and arrays are owned by whoever fills it (the reader's
 * belong to the SpExecSpill). */
typedef struct {
  guint32 rank, world_size;
  char *run_id;               /* UUID shared by the ranks of one run */
  char *output;               /* the run's -o */
  char *producer, *producer_version, *clock, *timing_mode;
  char *check_policy;         /* "after", "every", "none"; NULL: not said (version 1) */
  guint32 warmup_iters, iters;
  char *plan_digest;          /* sp_plan_digest */
  char *plan_text;            /* the plan JSON as used */
  char *topology_text;        /* INI text, NULL: none */
  GPtrArray *software;        /* key, value, key, value … (may be NULL) */
  GPtrArray *env;             /* key, value, … (may be NULL) */
} SpExecSpillRun;

/* What a rank knows after setup. */
typedef struct {
  char *backend, *hostname, *gpu_model;
  guint32 local_rank;
  gint32 device;              /* -1: a CPU rank */
  gint64 clock_offset_ns;     /* this rank's clock minus rank 0's */
  GPtrArray *software;        /* key, value, … (may be NULL) */
} SpExecSpillRank;

/* A spill file as read. */
typedef struct {
  char *path;
  SpExecSpillRun run;
  gboolean has_info;          /* an INFO record with the setup facts */
  SpExecSpillRank info;
  gboolean has_epoch;
  gint64 epoch_ns;            /* raw clock of this rank */
  GArray *rows;               /* SpTraceRow, raw clock */
  guint64 dropped_bytes;      /* of a last row or record cut short, or from a damaged record to the end */
  char *damage;               /* NULL, or what was wrong with the record at damaged_at */
  guint64 damaged_at;         /* byte offset where the reading stopped (damage != NULL) */
} SpExecSpill;

/* Write the file header and the RUN record to `f`.  SP_ERROR_IO. */
gboolean sp_exec_spill_write_run (FILE *f, const SpExecSpillRun *run, GError **error);
/* Append an INFO record; `info` may be NULL when only the epoch is known
 * (has_epoch).  Errors show at the next fflush (the hot path ignores them). */
void sp_exec_spill_write_info (FILE *f, const SpExecSpillRank *info, gboolean has_epoch,
                               gint64 epoch_ns);
/* Append a ROWS record of n rows (n = 0: nothing). */
void sp_exec_spill_write_rows (FILE *f, const SpTraceRow *rows, gsize n);
/* Append a MARK record: sp_exec_rows_mark (rows before it, …). */
void sp_exec_spill_write_mark (FILE *f, guint32 op_id, gboolean stages, SpTraceStatus status,
                               guint32 flags);
/* The validation pass's verdict on op `op_id`: OR `flags` into every row of
 * the op (and, when `stages`, of the rows whose parent_op_id is op_id) and
 * set their status to `status` unless it is SP_TRACE_STATUS_OK.  The one
 * rule the recorder (in memory) and the spill reader (MARK records) use. */
void sp_exec_rows_mark (GArray *rows, guint32 op_id, gboolean stages, SpTraceStatus status,
                        guint32 flags);

/* Read and check a spill file.  Refused with one line naming the file:
 * SP_ERROR_IO when it cannot be read; SP_ERROR_INVALID_TRACE for a bad
 * magic, a newer spill version, another byte order, another row layout
 * (schema version, row size or fields), a RUN record missing, cut short or
 * not valid.  Damage after the RUN record is not refused: the records
 * before it are read, and `damage`, `damaged_at` and `dropped_bytes` say
 * what was left.  Free with sp_exec_spill_free. */
SpExecSpill *sp_exec_spill_read (const char *path, GError **error);
/* What a partial trace's reason says of `spill` (trace recover, and rank
 * 0's own partial trace): "; rank R's file damaged at byte X (N bytes
 * dropped)" or "; rank R's file cut short (N bytes dropped)" appended to
 * `out`; nothing for a whole file. */
void sp_exec_spill_append_note (GString *out, const SpExecSpill *spill);
void sp_exec_spill_free (SpExecSpill *spill);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (SpExecSpill, sp_exec_spill_free)

/* The launcher's and libraries' variables (NCCL_*, CUDA_*, SLURM_*, OMPI_*,
 * PMIX_*, UCX_*, MPICH_*, I_MPI_*, SP_TEST_*), sorted: key, value, … */
GPtrArray *sp_exec_env_capture (void);

/* Everything a measured trace holds besides its rows (exec/recover.c writes
 * it for both the run and `trace recover`). */
typedef struct {
  SpTraceHeader header;
  const char *backend_name;
  GPtrArray *software;          /* key, value, … after "backend" (may be NULL) */
  GPtrArray *software_more;     /* key, value, … written after those (may be NULL) */
  GPtrArray *env;               /* key, value, … */
  const SpTraceNode *nodes;
  gsize n_nodes;
  const SpTraceRank *ranks;
  gsize n_ranks;
  const SpPlan *plan;
  const char *plan_text;
  const SpTopo *topo;           /* NULL: topo_text or none */
  const char *topo_text;        /* may be NULL */
  const SpGroups *groups;
  gint64 epoch_ns;              /* reference clock (rank 0's) */
  const gint64 *offsets_ns;     /* [header.world_size], each rank's clock minus rank 0's */
  const char *partial_reason;   /* NULL: complete */
} SpExecTraceDesc;

/* Convert the raw clocks of `rows[n]` in place (t -= offsets_ns[rank] +
 * epoch_ns) and write the trace to `path` (atomically: sp_trace_writer_*).
 * A pointer and a count, not a GArray: rank 0 writes the gathered buffer
 * as it came, without a second copy of every row (and a GArray's guint
 * length would cap a run at 2^32 rows). */
gboolean sp_exec_trace_write (const char *path, const SpExecTraceDesc *desc, SpTraceRow *rows,
                              gsize n, GError **error);

/* `shardplan trace recover`: a partial trace at `output` from the spill
 * files `paths[n]` of one run (any subset of its ranks).  `plan_path`
 * (may be NULL) replaces the plan stored in the files and must have the
 * same digest.  SP_ERROR_INVALID_* for bad input (nothing is written),
 * SP_ERROR_IO when the trace cannot be written.  *out_rows: rows written;
 * *out_warnings (may be NULL): one line per file cut short (g_strfreev). */
gboolean sp_exec_spill_recover (const char *const *paths, gsize n, const char *plan_path,
                                const char *output, guint64 *out_rows, char ***out_warnings,
                                GError **error);

/* ---------------------------------------------------------------- recording */

typedef struct SpExecRecorder SpExecRecorder;

/* A recorder that spills rows to `spill_path` as they come; the file starts
 * with `run`'s header record (exec/spill.c).  `now_ns` (the bootstrap's
 * clock) timestamps the start of the first timed iteration for the spill
 * file's epoch record. */
SpExecRecorder *sp_exec_recorder_new (const char *spill_path, const SpExecSpillRun *run,
                                      gint64 (*now_ns) (void), GError **error);
void sp_exec_recorder_free (SpExecRecorder *rec);
/* Rows are only recorded while an iteration >= 0 is set. */
void sp_exec_recorder_set_iter (SpExecRecorder *rec, gint32 iter);
/* Record the rows of a finished (or failed) task, its sub-op rows too;
 * remembers where in task->row_first / row_count. */
void sp_exec_recorder_task (SpExecRecorder *rec, SpExecTask *task);
/* Copy the task's status and CHECKED flag into its rows (after the check;
 * before the next flush). */
void sp_exec_recorder_update (SpExecRecorder *rec, const SpExecTask *task);
/* After a validation pass (exec-loop.c, check policy "after"): OR `flags`
 * into every row recorded so far of the task's op (and of its stages, for
 * a composite run as one task), and set their status to `status` unless it
 * is SP_TRACE_STATUS_OK — in memory and, as a MARK record after the rows
 * (flushed), in the spill file, so that `trace recover` sees it too. */
void sp_exec_recorder_mark (SpExecRecorder *rec, const SpExecTask *task, SpTraceStatus status,
                            guint32 flags);
/* Flush the spill file. */
void sp_exec_recorder_flush (SpExecRecorder *rec);
/* All rows recorded so far (raw local clock). */
const GArray *sp_exec_recorder_rows (const SpExecRecorder *rec);
/* Remove the spill file (after a complete run). */
void sp_exec_recorder_remove_spill (SpExecRecorder *rec);
/* TRUE while the spill file is there (not removed). */
gboolean sp_exec_recorder_has_spill (const SpExecRecorder *rec);
/* The local clock at the start of the first timed iteration (taken when
 * the iteration is set to 0; the spill file's epoch record), ns; FALSE
 * before that. */
gboolean sp_exec_recorder_epoch (const SpExecRecorder *rec, gint64 *out_epoch_ns);
/* Append this rank's facts known after setup (an info record) and flush. */
void sp_exec_recorder_info (SpExecRecorder *rec, const SpExecSpillRank *info);

/* The recording wrapper: a backend table whose start/test call `inner` and,
 * when a task finishes, record it with `rec`. */
SpExecBackend *sp_exec_record_wrap (const SpExecBackend *inner, SpExecRecorder *rec);
void sp_exec_record_unwrap (SpExecBackend *wrapped);


/* ---------------------------------------------------------------- data */

/* Fill task->in for (rank, iteration) deterministically (any iteration
 * number: the validation pass of check policy "after" uses iters). */
void sp_exec_data_fill (const SpExecCtx *ctx, SpExecTask *task, gint32 iter);
/* Check task->out; returns SP_TRACE_STATUS_OK or _WRONG and, when wrong,
 * a one-line description in *out_what (g_free). */
SpTraceStatus sp_exec_data_check (const SpExecCtx *ctx, const SpExecTask *task, gint32 iter,
                                  char **out_what);
/* Buffer sizes and composite geometry for a task; SP_ERROR_INVALID_PLAN /
 * SP_ERROR_UNSUPPORTED naming the op when it cannot run. */
gboolean sp_exec_data_prepare (const SpExecCtx *ctx, SpExecTask *task, GError **error);

/* Element size in bytes for the reduction of `dtype`, 0 when MPI/NCCL cannot
 * reduce it (int4, fp8, none). */
gsize sp_exec_reduce_elem_size (SpDtype dtype);

/* Trace writing (exec/record.c): rank 0 writes the gathered rows. */
typedef struct {
  const SpExecCtx *ctx;
  const char *plan_text;
  const SpTopo *topo;           /* may be NULL */
  const char *topo_text;        /* may be NULL */
  const char *backend_name;
  GPtrArray *software;          /* key, value, key, value … */
  SpTraceNode *nodes;
  gsize n_nodes;
  SpTraceRank *ranks;
  gsize n_ranks;
  gint64 epoch_ns;              /* rank 0's local start of the first timed iteration */
  const gint64 *offsets_ns;     /* [world] */
  const char *partial_reason;   /* NULL: complete */
  const char *run_id;           /* shared with the spill files */
} SpExecTraceInfo;

/* `rows[n]` (SpTraceRow, raw clocks; converted in place) to the run's -o. */
gboolean sp_exec_write_trace (const SpExecTraceInfo *info, SpTraceRow *rows, gsize n,
                              GError **error);

G_END_DECLS
