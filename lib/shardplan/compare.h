/* shardplan/compare.h — simulated against measured: join two traces of the
 * same plan on (op_id, iter, rank) and say how far the simulator was off,
 * per op and in aggregate (overall, by collective kind, by size band, by
 * group family), and which ops it got most wrong.
 *
 * Definitions (all errors are fractions: +0.25 = the simulator says 25 %
 * longer than measured, −0.5 = half the measured time):
 *   sample   a key (op_id, iter, rank) present in both traces whose rows
 *            both have status ok, are not composite spans (their sub-ops are
 *            compared instead) and whose measured dur_ns is > 0.
 *            A simulated trace of ONE iteration (what `shardplan sim`
 *            writes; the simulator is deterministic) stands for every
 *            measured iteration: its row (op, 0, rank) joins (op, k, rank)
 *            for every iteration k of the measurement.
 *   op error for op_id: (S − M) / M with S, M the medians of the simulated
 *            and measured dur_ns over the op's samples (over iterations and
 *            ranks).  Each op counts once in the aggregates, however many
 *            ranks ran it.
 *   aggregates over a set of ops: median, p90 and worst of |op error|, and
 *            the median of the signed op error (the bias).  Median and p90
 *            interpolate linearly between order statistics (numpy's
 *            default "linear" method: position q·(n−1) in the sorted list).
 *   kind     the op's coll in the measured trace.
 *   size band by bytes (nccl-tests convention): "0 B" (kernels and barriers),
 *            "<64 KiB", "64 KiB-1 MiB", "1-64 MiB", ">=64 MiB" (KiB = 1024 B).
 *            64 KiB is about where NCCL leaves the latency-bound LL protocol,
 *            1 MiB where rings reach most of their bandwidth, and 64 MiB is
 *            the size of a ZeRO-3 layer's gathered parameters in a 13B model.
 *   family   the family of the op's group in the measured trace ("none" for
 *            ops without a group).
 * Rows present in one trace only, or excluded for their status, a zero
 * measured duration, being composite or a collective on a group of one
 * rank (which the simulator does not cost: nothing crosses a link), are
 * counted (SpCompareCounts).
 *
 * NCCL's own estimate, a third series: a measured trace of the NCCL
 * backend carries NCCL's estimate of each op (nccl_est_ns >= 0, trace
 * schema 1.1; -1 where there is none).  Where samples have one:
 *   NCCL error for op_id: (N − M) / M with N the median nccl_est_ns over
 *            the op's samples that carry one and M the op's measured median
 *            as above (the same M as the simulator's error).
 *   NCCL aggregates: the same statistics over the ops of the set that have
 *            an NCCL error, and beside them the simulator's median |error|
 *            over those same ops, so that the two compare like for like.
 * When no sample carries an estimate (simulated, MPI, imported or 1.0
 * traces) the nccl fields are NaN / 0 and the reports leave them out.
 */
#pragma once
#include <glib.h>
#include "shardplan/types.h"
#include "shardplan/trace.h"

G_BEGIN_DECLS

typedef enum {
  SP_COMPARE_BAND_ZERO = 0,   /* 0 B */
  SP_COMPARE_BAND_SMALL,      /* (0, 64 KiB) */
  SP_COMPARE_BAND_MEDIUM,     /* [64 KiB, 1 MiB) */
  SP_COMPARE_BAND_LARGE,      /* [1 MiB, 64 MiB) */
  SP_COMPARE_BAND_HUGE,       /* >= 64 MiB */
  SP_COMPARE_BAND_N,
} SpCompareBand;

/* The band of a size in bytes, and its label ("1-64 MiB"; static). */
SpCompareBand sp_compare_band_of (guint64 bytes);
const char *sp_compare_band_name (SpCompareBand band);

typedef enum {
  SP_COMPARE_BY_ALL = 0,   /* one entry, label "all" */
  SP_COMPARE_BY_KIND,      /* in SpColl order */
  SP_COMPARE_BY_SIZE,      /* in SpCompareBand order, empty bands left out */
  SP_COMPARE_BY_FAMILY,    /* in family id order, "none" last */
  SP_COMPARE_BY_N,
} SpCompareBy;

/* "all", "kind", "size", "family" (static). */
const char *sp_compare_by_name (SpCompareBy by);

/* One op of the plan that has at least one sample. */
typedef struct {
  guint32 op_id;
  const char *name;        /* the plan's name for the op, "" when the plan text cannot be read */
  SpColl coll;
  guint64 bytes;           /* nccl-tests convention */
  SpCompareBand band;
  const char *family;      /* family name, "none" */
  guint32 family_id;       /* SpFamily value, SP_TRACE_NO_GROUP for none */
  guint64 n_samples;
  double sim_ns;           /* median simulated dur_ns over the samples, ns */
  double measured_ns;      /* median measured dur_ns, ns */
  double error;            /* (sim_ns − measured_ns) / measured_ns */
  double worst_sample_error; /* the signed sample error (s − m)/m of largest magnitude */
  guint64 nccl_samples;    /* samples whose measured row carries NCCL's estimate */
  double nccl_ns;          /* median NCCL estimate over those, ns; NaN when none */
  double nccl_error;       /* (nccl_ns − measured_ns) / measured_ns; NaN when none */
} SpCompareOp;

/* Aggregate error of a set of ops; label and counts as described above. */
typedef struct {
  const char *label;       /* "all", "all_gather", "1-64 MiB", "shard" (owned by the comparison) */
  guint32 n_ops;
  double median_abs;       /* fractions */
  double p90_abs;
  double worst_abs;
  guint32 worst_op_id;
  double median_signed;    /* bias: > 0 the simulator is slow on these ops */
  /* NCCL's estimate over the ops of the set that have one (nccl_n_ops;
   * when 0 the doubles are NaN and nccl_worst_op_id 0). */
  guint32 nccl_n_ops;
  double nccl_median_abs;
  double nccl_p90_abs;
  double nccl_worst_abs;
  guint32 nccl_worst_op_id;
  double nccl_median_signed;
  double sim_median_abs_nccl_ops; /* the simulator's median |error| over those same ops */
} SpCompareStats;

typedef struct {
  guint64 sim_rows;        /* rows of each trace */
  guint64 measured_rows;
  guint64 joined;          /* keys in both traces */
  guint64 only_sim;        /* keys in the simulated trace only (a one-iteration
                              simulated trace: its rows without a measured
                              row in iteration 0) */
  guint64 only_measured;   /* keys in the measured trace only */
  guint64 excluded_status; /* joined, but status != ok in either trace */
  guint64 excluded_composite; /* joined composite spans */
  guint64 excluded_one_rank; /* joined, a collective on a group of one rank
                              (either trace): nothing crosses a link, and
                              the simulator gives it no time */
  guint64 excluded_zero;   /* joined, measured dur_ns <= 0 */
  guint64 samples;         /* joined rows in the statistics */
  guint64 nccl_samples;    /* of those, rows whose measured row has nccl_est_ns >= 0 */
} SpCompareCounts;

typedef struct _SpCompare SpCompare;

/* Join and compute everything.  `sim_name` / `measured_name` (file names)
 * are used in messages and kept for the reports.  Fails with
 * SP_ERROR_INVALID_ARGUMENT when `measured` is a simulated trace (the
 * arguments swapped, or two simulations: the header's source says which;
 * two measured traces compare one run with another), a trace has no
 * /meta/plan or their plan
 * digests differ ("sim.h5 (plan 3fa2…) and measured.h5 (plan 9c01…) ran
 * different plans"), or when no sample is left to compare;
 * SP_ERROR_INVALID_TRACE when a trace has two rows for one key; errors of
 * sp_trace_read_rows otherwise.  Reads every row of both traces (about 48
 * bytes of memory per row).  Free with sp_compare_free(). */
SpCompare *sp_compare_traces (SpTrace *sim, const char *sim_name, SpTrace *measured,
                              const char *measured_name, GError **error);
/* Progress of sp_compare_traces_full(): `done` of `total` steps — every
 * row read from either trace, then every step of the join (a row of
 * either side, the simulated one once per measured iteration it stands
 * for); total grows to include the join once the rows are read.  Called
 * on the calling thread after every batch of 65,536 rows or steps and
 * once at the end; it must be cheap (`shardplan compare` stores the count
 * for its progress line, tools/progress.h). */
typedef void (*SpCompareProgressFn) (guint64 done, guint64 total, gpointer data);

/* sp_compare_traces() with a progress callback (`progress` NULL: none). */
SpCompare *sp_compare_traces_full (SpTrace *sim, const char *sim_name, SpTrace *measured,
                                   const char *measured_name, SpCompareProgressFn progress,
                                   gpointer progress_data, GError **error);
void sp_compare_free (SpCompare *cmp);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (SpCompare, sp_compare_free)

const SpCompareCounts *sp_compare_counts (const SpCompare *cmp);
/* The plan digest both traces share (owned). */
const char *sp_compare_plan_digest (const SpCompare *cmp);
const char *sp_compare_sim_name (const SpCompare *cmp);
const char *sp_compare_measured_name (const SpCompare *cmp);
/* TRUE when some compared sample carries NCCL's estimate (counts.nccl_samples
 * > 0): the reports then show it as a third series. */
gboolean sp_compare_has_nccl (const SpCompare *cmp);

/* Ops with samples, by op id (owned by the comparison). */
const SpCompareOp *sp_compare_ops (const SpCompare *cmp, gsize *out_n);

/* Aggregates for one grouping (owned); BY_ALL has exactly one entry. */
const SpCompareStats *sp_compare_stats (const SpCompare *cmp, SpCompareBy by, gsize *out_n);

/* The `n` ops with the largest |error|, largest first (ties: lower op id
 * first); *out_n = min(n, ops).  g_free the array, not the ops. */
const SpCompareOp **sp_compare_worst (const SpCompare *cmp, gsize n, gsize *out_n);

/* Per-op CSV, one header line then one line per op:
 *   op_id,name,kind,family,bytes,size_band,samples,measured_ns,sim_ns,error
 * (error as a fraction; names quoted per RFC 4180 when needed), and when
 * sp_compare_has_nccl() three more columns nccl_samples,nccl_ns,nccl_error
 * (the last two empty for an op without an estimate).  g_free. */
char *sp_compare_to_csv (const SpCompare *cmp);

/* Everything as one JSON object (g_free):
 *   {"sim": {"file", "source", "producer"}, "measured": {…}, "plan_digest",
 *    "counts": {<SpCompareCounts fields>},
 *    "stats": {"all": {<stats>}, "kind": [{<stats>}, …], "size": […], "family": […]},
 *    "worst": [<op>, … (top_n)], "ops": [<op>, …]}
 * with <stats> = {"label", "ops", "median_abs_error", "p90_abs_error",
 * "worst_abs_error", "worst_op_id", "median_signed_error"} and <op> =
 * {"op_id", "name", "kind", "family", "bytes", "size_band", "samples",
 * "measured_ns", "sim_ns", "error", "worst_sample_error"}; errors are
 * fractions, source and producer those of each trace's header.
 * When sp_compare_has_nccl(): counts gains "nccl_samples"; every <stats>
 * gains "nccl": {"ops", "median_abs_error", "p90_abs_error",
 * "worst_abs_error", "worst_op_id", "median_signed_error",
 * "sim_median_abs_error"} (null when no op of the set has an estimate);
 * every <op> gains "nccl_samples", "nccl_ns" and "nccl_error" (null when
 * the op has none).  Without an estimate none of these keys appear. */
char *sp_compare_to_json (const SpCompare *cmp, gsize top_n);

G_END_DECLS
