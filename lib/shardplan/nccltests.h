/* shardplan/nccltests.h — read the logs of NVIDIA's nccl-tests
 * (all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf,
 * broadcast_perf, reduce_perf, sendrecv_perf) and turn one into a synthetic
 * plan and a measured trace, so that measurements a user already has can be
 * compared with (and calibrate) the simulator.
 *
 * What is read (shared/reference/nccl-cost-model.md §2.3):
 *   - "# nccl-tests version 2.17.8 nccl-headers=22902 nccl-library=22902"
 *   - "# nThread 1 nGpus 8 minBytes 8 maxBytes … warmup iters: 5 iters: 20
 *     agg iters: 1 validation: 1 graph: 0" (run parameters)
 *   - "# Collective test starting: all_reduce_perf", or any line naming one
 *     of the *_perf binaries (a command line) — the collective
 *   - "#  Rank  0 Group  0 Pid 1234 on host device  0 [0x18] NVIDIA H100 …"
 *     (old logs: no "Group") — one per rank: the rank count, host, device
 *   - the placement line ("out-of-place   in-place") and the column header
 *     ("#  size  count  type  redop  [root]  time algbw busbw #wrong|error …"),
 *     which say how the data rows read.  Rows are mapped to columns by the
 *     header's names, so the old layout (no root, "error" = max abs error),
 *     the current one (root, "#wrong", "N/A" when validation is off), one
 *     placement only, and extra per-iteration columns all read the same way.
 *   - "# Avg bus bandwidth : X" — the footer; without it the log is
 *     incomplete (a run that died, or a truncated file).
 *   - "NCCL version 2.18.5+cuda12.2" and "NCCL INFO NCCL_X set by environment
 *     to Y" lines (NCCL_DEBUG=INFO) — NCCL's version and environment.
 *
 * Sizes follow nccl-tests' `size` column, which is shardplan's convention
 * too (whole gathered / scattered buffer for all_gather / reduce_scatter,
 * per-rank buffer for all_reduce / alltoall / broadcast / reduce / sendrecv).
 * The printed `count` is nccl-tests' (per rank for all_gather /
 * reduce_scatter, per peer for alltoall); the parser checks that
 * size = count × element size (× ranks for those three), which catches a
 * wrong rank count or a misread column.
 */
#pragma once
#include <glib.h>
#include "shardplan/types.h"
#include "shardplan/plan.h"
#include "shardplan/topo.h"

G_BEGIN_DECLS

/* One timed point of the log: one size in one placement. */
typedef struct {
  guint32 line;         /* 1-based line of the log it came from */
  guint64 bytes;        /* the `size` column, bytes (nccl-tests convention) */
  guint64 count;        /* the `count` column as printed, elements */
  SpDtype dtype;
  SpRedop redop;        /* SP_REDOP_NONE where the log prints "none" */
  gint32 root;          /* the `root` column; -1 when unrooted or absent */
  gboolean in_place;
  double time_us;       /* µs: nccl-tests' average over iterations (and ranks, -a 1) */
  double algbw_gbs;     /* as printed, GB/s = 1e9 B/s; NaN if the log has no column */
  double busbw_gbs;     /* as printed; NaN if absent */
  gint64 wrong;         /* "#wrong" elements; -1 when not checked ("N/A", or the old
                         * "error" column, which is a max abs error, not a verdict) */
} SpNcclTestsResult;

/* One "#  Rank" line. */
typedef struct {
  guint32 rank;
  const char *hostname;   /* owned by the log */
  gint32 device;          /* CUDA ordinal on the host */
  const char *gpu_model;  /* the text after the bus id, "" if none */
} SpNcclTestsRank;

typedef struct _SpNcclTestsLog SpNcclTestsLog;

/* Parse a log of `length` bytes (-1: NUL-terminated).  `source_name` (the
 * file name) prefixes error messages.  Fails with SP_ERROR_INVALID_ARGUMENT
 * and one line naming the line number and what was expected when: no
 * column header or no data row is found ("… is not an nccl-tests log"), the
 * collective cannot be told or is not one of the seven binaries above, the
 * log holds two different collectives, a row has a bad number or type or an
 * unsupported reduction (mulsum), a row that is not the last is cut short,
 * the rank count cannot be found, or size ≠ count × element size (× ranks)
 * (every product of the file's numbers is overflow-checked), or the log is
 * beyond the importer's limits: more than 2^20 ranks (listed or implied),
 * 2^20 points, 2^26 trace rows (points × ranks) or a time over 10^9 µs.
 * Duplicate checks are hashed: parsing is linear in the log's size.
 * A cut-short LAST row (a truncated file) is dropped with a warning and the
 * log marked incomplete.  Free with sp_nccl_tests_log_free(). */
SpNcclTestsLog *sp_nccl_tests_parse (const char *text, gssize length, const char *source_name,
                                     GError **error);

/* Read and parse a file (SP_ERROR_IO when it cannot be read; more than
 * 64 MiB — counted as read, so pipes and devices too — is refused as not
 * being a log). */
SpNcclTestsLog *sp_nccl_tests_load (const char *path, GError **error);

void sp_nccl_tests_log_free (SpNcclTestsLog *log);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (SpNcclTestsLog, sp_nccl_tests_log_free)

/* The collective and the binary it came from ("all_reduce_perf", static).
 * sendrecv_perf maps to SP_COLL_SEND (each rank sends to rank+1 and
 * receives from rank−1; busbw factor 1). */
SpColl sp_nccl_tests_log_collective (const SpNcclTestsLog *log);
const char *sp_nccl_tests_log_binary (const SpNcclTestsLog *log);

/* Ranks: the number of "#  Rank" lines; without them nThread × nGpus of the
 * header, or (all_gather, reduce_scatter, alltoall) size / (count × element
 * size) of the first row — with a warning saying which. */
guint32 sp_nccl_tests_log_n_ranks (const SpNcclTestsLog *log);
/* The "#  Rank" lines in rank order (owned by the log); *out_n = 0 when the
 * log has none. */
const SpNcclTestsRank *sp_nccl_tests_log_ranks (const SpNcclTestsLog *log, gsize *out_n);

/* Timed points in log order (owned by the log). */
const SpNcclTestsResult *sp_nccl_tests_log_results (const SpNcclTestsLog *log, gsize *out_n);

/* Run parameters from the "# nThread" line; 0 for any that is absent. */
typedef struct {
  guint32 n_threads;
  guint32 n_gpus;
  guint32 warmup_iters;
  guint32 iters;
  guint32 agg_iters;
  gint32 validation;   /* -1 when absent */
  gint32 graph;        /* -1 when absent */
} SpNcclTestsParams;
const SpNcclTestsParams *sp_nccl_tests_log_params (const SpNcclTestsLog *log);

/* "2.17.8" from the version line, and NCCL's version ("2.18.5+cuda12.2" or
 * "22902" from nccl-library=), NULL when the log does not say.  Owned. */
const char *sp_nccl_tests_log_version (const SpNcclTestsLog *log);
const char *sp_nccl_tests_log_nccl_version (const SpNcclTestsLog *log);

/* NCCL_* variables the log reports as set (NCCL_DEBUG=INFO), as
 * key, value, key, value, …, NULL (owned). */
const char *const *sp_nccl_tests_log_env (const SpNcclTestsLog *log);

/* FALSE when the footer is missing or a "Test … failure" line was seen;
 * the reason is one line ("no '# Avg bus bandwidth' footer after line 41").
 * NULL reason for a complete log. */
gboolean sp_nccl_tests_log_is_complete (const SpNcclTestsLog *log);
const char *sp_nccl_tests_log_incomplete_reason (const SpNcclTestsLog *log);

/* Non-fatal findings, one line each, NULL-terminated (owned): a truncated
 * last row, an assumed rank count, printed algbw/busbw that differ by more
 * than 1 % from the ones recomputed with sp_coll_bandwidths (the first
 * few rows, then a count). */
const char *const *sp_nccl_tests_log_warnings (const SpNcclTestsLog *log);

/* The synthetic plan of a log: one op per timed point, in log order (op id
 * = index in sp_nccl_tests_log_results), kind = the collective, family
 * SP_FAMILY_WORLD, bytes = size, count = bytes / element size (the plan's
 * whole-buffer convention), dtype, redop, stream 0, no deps, name e.g.
 * "all_reduce 1048576 B out-of-place" (" root 0" added for rooted ops).
 * Groups: world_size = the log's ranks, devices_per_node as given.
 * Meta: created_by = "shardplan trace import-nccl-tests", nccl_tests_binary.
 * The same log always gives the same plan (same digest), whatever the file
 * is called.  Free with sp_plan_free(). */
SpPlan *sp_nccl_tests_build_plan (const SpNcclTestsLog *log, guint32 devices_per_node,
                                  GError **error);

/* Write the measured trace of a log to `path` (atomically):
 *   root: source measured, producer "nccl-tests", producer_version the
 *   log's nccl-tests version ("unknown" if it has none), clock
 *   "nccl-tests-average", timing_mode "nccl-tests", warmup_iters from the
 *   log, iters = 1 (one stored iteration: nccl-tests prints one averaged
 *   time per point), world_size = ranks; complete = 0 with the reason for an
 *   incomplete log.
 *   /meta/software: "nccl_tests", "nccl_runtime" when known (as NCCL
 *   prints it: nccl-tests' bare "nccl-library=22105" as "2.21.5"); /meta/env: the
 *   NCCL_* the log reports, plus "nccl_tests.<param>" pairs of the run
 *   parameters (iters, warmup_iters, agg_iters, n_threads, n_gpus,
 *   validation, graph) as the log states them.
 *   /meta/cluster: one node per distinct host of the "#  Rank" lines (in
 *   order of first appearance), else the topology's block layout with empty
 *   host names; /meta/topology: `topo`; /meta/plan: `plan` (from
 *   sp_nccl_tests_build_plan of this log); /groups: the world family.
 *   /ops/ops: one row per (op, rank), iter 0.  nccl-tests prints ONE time per
 *   point — the average over its iterations and (with -a 1, the default)
 *   over ranks — so every rank gets the same dur_ns = round(time_us × 1000).
 *   Timestamps are not in the log: the points are laid end to end in log
 *   order (t_start of op i = sum of the durations before it, t_enqueue =
 *   t_start, t_end = t_start + dur), which keeps a timeline export readable
 *   and means nothing more.  flags: IN_PLACE for in-place points, CHECKED
 *   when #wrong is a number; status WRONG when #wrong > 0, else OK.
 *   algbw/busbw are recomputed with sp_coll_bandwidths (n = ranks).
 * Fails with SP_ERROR_INVALID_ARGUMENT when the plan is not this log's
 * (op count or sizes differ) or the topology's world size differs from the
 * log's ranks, SP_ERROR_IO when the file cannot be written. */
gboolean sp_nccl_tests_write_trace (const SpNcclTestsLog *log, const SpPlan *plan,
                                    const SpTopo *topo, const char *path, GError **error);

G_END_DECLS
