/* shardplan/exec.h — the executor: run a plan for real, one process per
 * rank (launched by mpirun or srun), and record what happened as a measured
 * HDF5 trace (shardplan/trace.h).
 *
 * Backends (exec/exec-internal.h has the tables):
 *   mpi   every op as the matching MPI collective on CPU buffers, one
 *         MPI_Comm_split per group family (communicators use
 *         MPI_ERRORS_RETURN).  Isolated mode makes the blocking call, as a
 *         bare loop does, with a watchdog thread keeping the per-op
 *         deadline (on expiry the op is recorded as timed out, rank 0
 *         writes the partial trace and the process exits 1); replay mode
 *         polls the non-blocking calls against the deadline.  sp_exec_run
 *         sets glibc's M_TRIM_THRESHOLD / M_MMAP_THRESHOLD (exec/exec.c).
 *   nccl  one GPU per rank (local rank from MPI_Comm_split_type SHARED),
 *         one ncclCommSplit per family, non-blocking communicators, CUDA
 *         events mapped to the host clock.  Bootstrapped over MPI.
 * `auto` picks nccl when it is compiled in and every rank sees a GPU,
 * mpi otherwise.
 *
 * What runs for each op kind (group = this rank's group of the op's family,
 * n its size, B the plan's bytes in nccl-tests' convention):
 *   all_gather      B/n bytes in, B out          reduce_scatter(_block)  B in, B/n out
 *   all_reduce      B in, B out                  all_to_all              B in, B out (B/n per peer)
 *   broadcast       root = group rank 0          reduce                  root = group rank 0
 *   barrier         no data
 *   send            a ring shift: every member sends B bytes to the next
 *                   member of its group and receives B from the previous;
 *   recv            the mirror shift (from the next, to the previous).
 *   compute         isolated mode: not run, no row (there is nothing to
 *                   compare with nccl-tests); replay mode: the rank sleeps for
 *                   the modelled duration flops / (topology TFLOP/s · 1e12)
 *                   and the row carries SP_TRACE_FLAG_MODELLED — it is a
 *                   model, not a measurement, and never does fake work.
 *   quantize / dequantize (standalone, e.g. qwZ)  the CPU (mpi) or CUDA
 *                   (nccl) kernel of shardplan/kernels.h, int8 (or the op's
 *                   int4), groups of E = the largest divisor of count <= 2048
 *                   elements; checked by the round-trip bound |x - x'| <=
 *                   absmax / 2^(bits-1).
 *   reduce_scatter_coalesced (composite)  DeepSpeed's §3 path for real:
 *                   pack (rank-major, padded), divide by n, reduce-scatter
 *                   SUM, unpack.  The plan keeps only the buffer size, so the
 *                   executor uses two tensors with that buffer (the first one
 *                   element short of a multiple of n, so the pack pads).
 *   all_to_all_quant_reduce (qgZ composite)  DeepSpeed's §4 pipeline for
 *                   real: swizzled int4 quantization, all-to-all of bytes and
 *                   scales over local_all_to_all.local, quantized reduction,
 *                   all-to-all over .global, dequantize + mean.  The number
 *                   of quantization groups G is read from the plan's
 *                   local.scales sub-op.  Result = the true mean over the W
 *                   ranks, or DeepSpeed's D × mean with deepspeed_compat.
 *   hier_all_gather (composite)  its two sub-op all-gathers run as plain
 *                   ops; the composite's row spans them.
 * Composite rows carry SP_TRACE_FLAG_COMPOSITE and span their stages; the
 * stage rows carry the composite's id in parent_op_id.  Standalone
 * quant_reduce, gather and scatter are refused (SP_ERROR_UNSUPPORTED).
 *
 * Checking (like nccl-tests' #wrong), policy SpExecCheck:
 *   after (default)  as nccl-tests: the warm-up and timed iterations run
 *             unchecked (each op's input filled once when every op has its
 *             own buffers, so no CPU work runs between ops; refilled before
 *             each op when they share one pair), then ONE untimed
 *             validation pass over the plan in the same mode, on freshly
 *             filled inputs, checks every output.  It records no rows of
 *             its own: a validated op's rows (every iteration) get
 *             SP_TRACE_FLAG_CHECKED; a wrong result there marks that op's
 *             rows on the rank "wrong" and fails the run.  (The marks go
 *             to the spill file too, so a trace recovered from spill files
 *             has them.)
 *   every     the input refilled before and the output checked after every
 *             op of every iteration (warm-up too), outside the timed region;
 *             the CPU work between ops makes the next op start cold.
 *   none      nothing checked, inputs filled once (own buffers).
 * The policy is not recorded in the trace (the schema has no run-options
 * attribute); CHECKED on the rows says which ops were verified.
 * Inputs are filled from (rank, op, iteration) so that every rank computes
 * its expected output locally;
 * integer-valued data keep sums exact, floating results are compared with
 * a tolerance of a few units in the last place of the dtype (AVG and
 * division by non-powers of two round).  qgZ results must match a bit-exact
 * CPU emulation of the whole pipeline AND lie within the quantization bound
 * of the plain reduce-scatter mean (0.3 × the largest |input|).  A wrong
 * result is status "wrong" and fails the run.
 *
 * Timing modes (trace root attribute timing_mode):
 *   isolated  one op at a time, a world-wide barrier between ops (which also
 *             carries the failure flag), like nccl-tests;
 *   replay    plan order, each op issued when its deps and the previous op
 *             of its stream are done, several in flight, as in training.
 * Times are ns of MPI_Wtime (clock "MPI_Wtime"; for nccl, CUDA events mapped
 * onto it), relative to rank 0's start of the first timed iteration after
 * each rank's clock offset against rank 0 (ping-pong, min RTT) is removed.
 * seq_in_group counts the ops a rank ran on that family's communicator in
 * the iteration, from 0.
 *
 * Trace: each rank appends its rows to its own spill file next to the
 * output ("<output>.rank<R>.spill", flushed every iteration, removed after
 * a complete run), so a crash keeps the data; rank 0 gathers the rows at the
 * end and writes one file.  On a failure (timeout, backend error, wrong
 * result) the op's status is recorded, communicators are aborted, rank 0
 * writes a PARTIAL trace (complete = 0, incomplete_reason) from the rows it
 * can reach, and every rank exits non-zero.
 */
#pragma once
#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  SP_EXEC_BACKEND_AUTO = 0,
  SP_EXEC_BACKEND_MPI,
  SP_EXEC_BACKEND_NCCL,
} SpExecBackendKind;

typedef enum {
  SP_EXEC_MODE_ISOLATED = 0,
  SP_EXEC_MODE_REPLAY,
} SpExecMode;

/* When results are checked (see "Checking" above). */
typedef enum {
  SP_EXEC_CHECK_AFTER = 0,  /* the default, like nccl-tests: the timed iterations
                               run unchecked, then one untimed validation pass */
  SP_EXEC_CHECK_EVERY,      /* every op of every iteration (warm-up included) */
  SP_EXEC_CHECK_NONE,       /* never (--no-check) */
} SpExecCheck;

/* "auto", "mpi", "nccl" / "isolated", "replay" and back. */
const char *sp_exec_backend_name (SpExecBackendKind kind);
gboolean sp_exec_backend_from_name (const char *name, SpExecBackendKind *out_kind);
const char *sp_exec_mode_name (SpExecMode mode);
gboolean sp_exec_mode_from_name (const char *name, SpExecMode *out_mode);
/* "after", "every", "none" and back (NULL / FALSE for anything else). */
const char *sp_exec_check_name (SpExecCheck check);
gboolean sp_exec_check_from_name (const char *name, SpExecCheck *out_check);

/* TRUE when the backend is compiled into this build. */
gboolean sp_exec_backend_compiled (SpExecBackendKind kind);

typedef struct {
  const char *plan_path;      /* plan JSON (read by rank 0, broadcast) */
  const char *topology;       /* INI file or preset, or NULL (plan meta "topology" is tried) */
  const char *output;         /* trace path (written by rank 0) */
  SpExecBackendKind backend;
  SpExecMode mode;
  guint32 warmup;             /* warm-up iterations (not recorded) */
  guint32 iters;              /* timed iterations, >= 1 */
  double timeout_s;           /* per-op deadline, seconds, > 0 */
  SpExecCheck check;          /* when results are verified (default after) */
  gboolean deepspeed_compat;  /* qgZ returns D × mean, as DeepSpeed does */
  /* Where the ops' host buffers come from (the MPI backend's operands, the
   * NCCL backend's staging copies).  NULL: page-aligned heap memory, as the
   * OSU micro-benchmarks allocate.  Otherwise called once per buffer, in
   * plan order (an op's input, then its output; NULL = out of memory), and
   * buffer_free is called on each when the run ends.  bench/bench-exec.c
   * hands out the very memory its bare loop uses: on a 2-CPU VM which
   * buffers an op runs on alone moved its time by up to ±17 %. */
  gpointer (*buffer_alloc) (gsize bytes, gpointer data);
  void (*buffer_free) (gpointer buffer, gpointer data);
  gpointer buffer_data;
  /* Progress, on rank 0 only (NULL: none): `done` of `total` op steps —
   * the plan's ops (composites and sub-ops included) once per warm-up and
   * timed iteration and once for the validation pass of check "after" —
   * called after each op rank 0 completes (isolated: outside the op's
   * timed span) and at the end of each pass (replay: never inside the
   * timed step, where ops are issued back to back), on the calling
   * thread.  It must be cheap
   * and must not block (`shardplan run` stores the count for its progress
   * line, tools/progress.h). */
  void (*progress) (guint64 done, guint64 total, gpointer data);
  /* Called (with progress_data) before a run that ends without returning
   * — a missed deadline, from the watchdog thread, just before its message
   * and _exit() — prints anything, so that the progress line is cleared
   * first.  NULL: none. */
  void (*progress_end) (gpointer data);
  gpointer progress_data;
} SpExecOptions;

/* Defaults: auto, isolated, warmup 5, iters 20, timeout 300 s, check after. */
void sp_exec_options_init (SpExecOptions *opts);

typedef struct {
  guint32 rank;             /* this process's rank (0 if the bootstrap failed) */
  guint32 world_size;
  gboolean report_error;    /* TRUE where this rank should print the error (rank 0
                               for collective errors, the failing rank otherwise) */
  int exit_status;          /* 0 ok, 1 the run failed, 2 bad input */
  guint64 rows;             /* rows in the written trace (rank 0) */
  const char *backend;      /* the backend that ran ("mpi", "nccl"; static), NULL
                               before one was chosen */
  gboolean partial_written; /* rank 0 wrote a partial trace */
  gboolean abort_job;       /* a failure the ranks could not agree on (a dead or
                               stuck peer): sp_exec_exit() tears the job down */
  gboolean mpi_owned;       /* sp_exec_run initialised MPI: sp_exec_exit finalizes it */
} SpExecResult;

/* Run the plan on this process's rank.  Initialises MPI if the caller has
 * not (sp_exec_exit() then finalizes it, after the caller has printed its
 * message, so that no rank's exit cuts rank 0's message short).  Every
 * rank returns; on failure *error holds one line (prefixed "rank R: " for
 * a failure seen by one rank) and `out_result` says whether this rank
 * should print it and with which exit status.  Bad input (unreadable
 * plan, world size ≠ number of ranks, no GPU for nccl …) is detected before
 * anything is written: no output file.  `out_result` is always filled. */
gboolean sp_exec_run (const SpExecOptions *opts, SpExecResult *out_result, GError **error);

/* End the process with out_result->exit_status (finalizing MPI when
 * sp_exec_run initialised it).  When the ranks could not
 * agree on a failure (abort_job), rank 0 aborts the whole job (MPI_Abort)
 * once its partial trace is written, and the other ranks wait up to 10 s
 * for that before exiting on their own, so no rank is left hanging. */
void sp_exec_exit (const SpExecResult *result) G_GNUC_NORETURN;

/* Test hooks, read from the environment by sp_exec_run (tests only):
 *   SP_TEST_STALL_RANK=R SP_TEST_STALL_OP=K [SP_TEST_STALL_ITER=I]   rank
 *       R stops (sleeps until killed) instead of running op K in timed
 *       iteration I (default 0; I = iters: the validation pass of check
 *       policy after): a stuck peer, for the deadline path;
 *   SP_TEST_CORRUPT_RANK=R SP_TEST_CORRUPT_OP=K   rank R flips a byte of
 *       op K's result before the check: a wrong result. */

G_END_DECLS
