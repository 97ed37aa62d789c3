/* shardplan/calibrate.h — the measured data a calibration fits: one point
 * per measured collective op, gathered from measured traces (`shardplan
 * run`, `shardplan trace import-nccl-tests`), and the split of those points
 * into a fit set and a hold-out set.
 *
 * The fit itself needs the simulator, which libshardplan does not link: it
 * lives in libspsim (sim/shardplan/calibrate-fit.h, sp_calibrate_fit()).
 *
 * What a point is.  From each trace, the rows that
 *   - have status ok, dur_ns > 0, and neither the COMPOSITE flag (composite
 *     spans: their sub-ops are points instead) nor MODELLED;
 *   - are one of the collectives the simulator costs on a group: all_reduce,
 *     all_gather, reduce_scatter, all_to_all, broadcast, reduce (send / recv
 *     pairs, barriers and kernels are left out and counted);
 * grouped by op_id: the point's time is the median of dur_ns over the op's
 * rows (iterations and ranks; numpy's "linear" median), its kind, bytes
 * (nccl-tests convention) and group are those of the op's rows (the group
 * of the row with the lowest group_id when an op ran on several groups of
 * its family; under block placement they have the same shape), and its
 * algorithm hint comes from the plan stored in the trace (/meta/plan; AUTO
 * when the trace has none, for a `shardplan run` trace — its executor
 * passes no hint to NCCL, which chose — and when the NCCL_ALGO the trace
 * records refuses it: sp_calib_data_source_nccl).
 *
 * Hold-out (what the calibration must predict without having seen it):
 *   size:>=BYTES   ops of at least BYTES bytes   (BYTES: 65536, 64K, 1M …)
 *   size:<BYTES    ops of fewer than BYTES bytes
 *   ranks:N        ops whose group has N ranks
 *   file:PATH      every op of trace PATH (one of the inputs; if it is not,
 *                  sp_calib_data_apply_holdout fails — the caller adds it)
 */
#pragma once
#include <glib.h>
#include "shardplan/types.h"
#include "shardplan/trace.h"
#include "shardplan/topo.h"

G_BEGIN_DECLS

/* One measured op. */
typedef struct {
  guint32 source;          /* index of the trace it came from (order of sp_calib_data_add_trace) */
  guint32 op_id;           /* the op's id in that trace's plan */
  SpColl coll;
  guint64 bytes;           /* nccl-tests convention */
  SpAlgo algo;             /* the plan's algorithm hint where it can have run, else SP_ALGO_AUTO */
  guint32 n_ranks;
  const guint32 *ranks;    /* the group's global ranks in trace order (owned by the data) */
  guint64 n_samples;       /* rows behind the median */
  double measured_ns;      /* median dur_ns over the op's rows, ns */
  gboolean holdout;        /* TRUE: kept out of the fit (sp_calib_data_apply_holdout) */
} SpCalibPoint;

/* Rows of the traces read so far that did not become points, by reason. */
typedef struct {
  guint64 rows;            /* every row read */
  guint64 used;            /* rows behind some point */
  guint64 not_ok;          /* status other than ok */
  guint64 composite;       /* composite spans */
  guint64 not_collective;  /* kernels, barriers, send / recv: not costed on a group */
  guint64 one_rank;        /* collectives on a group of one rank: nothing crosses a
                              link, and the simulator gives them no time */
  guint64 modelled;        /* MODELLED flag (a duration the executor slept, not measured) */
  guint64 zero;            /* dur_ns <= 0 */
} SpCalibCounts;

typedef struct _SpCalibData SpCalibData;

/* An empty data set.  Free with sp_calib_data_free(). */
SpCalibData *sp_calib_data_new (void);
void sp_calib_data_free (SpCalibData *data);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (SpCalibData, sp_calib_data_free)

/* Read every row of `trace` and append its points (in op_id order).  `name`
 * (the file name; copied) is used in messages and matched by file:PATH
 * hold-outs.  `world_size` > 0: the topology's world size; the trace's
 * must not exceed it (SP_ERROR_INVALID_ARGUMENT "m.h5 has world size 8,
 * more than the topology's 4 ranks").  A smaller run's ranks are the
 * topology's first ranks (block placement: the first nodes), so traces of
 * 2 and 8 nodes calibrate one 128-node topology — measured with the same
 * GPUs per node as the topology.
 * Also SP_ERROR_INVALID_TRACE when a kept row's group is not in the trace's
 * /groups, or the plan text cannot be read; errors of sp_trace_read_rows.
 * On failure the data is unchanged.  A trace with no usable row is not an
 * error (sp_calib_data_n_points tells).  Memory: 8 bytes per kept row
 * while reading. */
gboolean sp_calib_data_add_trace (SpCalibData *data, SpTrace *trace, const char *name,
                                  guint32 world_size, GError **error);

/* The same on a topology of `nodes` x `gpus_per_node` GPUs, with the trace's
 * ranks where its /meta/cluster says they ran: rank r is the topology's
 * node_id x gpus_per_node + local_rank.  So a run on fewer GPUs per node
 * than the topology has (nccl-tests on 10 nodes x 1 GPU, `trace
 * import-nccl-tests` of it on a 10-node x 1-GPU topology) is fitted on one
 * GPU of each of 10 nodes of a 10 x 8 topology, not on its first 10 GPUs.
 * When the cluster is absent, does not list every rank once, or places a
 * rank outside the topology (node_id >= nodes, local_rank >=
 * gpus_per_node) or two on one GPU, this is sp_calib_data_add_trace with
 * world_size = nodes x gpus_per_node (block placement). */
gboolean sp_calib_data_add_trace_on (SpCalibData *data, SpTrace *trace, const char *name,
                                     guint32 nodes, guint32 gpus_per_node, GError **error);

/* Add one point by hand (tests, other sources): `point->ranks` is copied,
 * `source` must name a trace already added or be the next index with
 * `name` given (NULL: "points").  Fails with SP_ERROR_INVALID_ARGUMENT on a
 * time <= 0 or no ranks. */
gboolean sp_calib_data_add_point (SpCalibData *data, const SpCalibPoint *point, const char *name,
                                  GError **error);

/* The points, in order of addition (owned by the data; valid until the
 * next add). */
const SpCalibPoint *sp_calib_data_points (const SpCalibData *data, gsize *out_n);
gsize sp_calib_data_n_points (const SpCalibData *data);
/* Inputs so far, and the name of input `source` (owned). */
guint32 sp_calib_data_n_sources (const SpCalibData *data);
const char *sp_calib_data_source_name (const SpCalibData *data, guint32 source);
/* The NCCL variables that decide what NCCL may choose, as input `source`'s
 * trace records them in /meta/env (a trace imported from an nccl-tests log
 * has them only when NCCL_DEBUG=INFO printed "NCCL_ALGO set by environment
 * to …"): `which` indexes sp_calib_nccl_env_names (NCCL_ALGO, NCCL_PROTO,
 * NCCL_NVLS_ENABLE); NULL when not recorded. */
#define SP_CALIB_N_NCCL_ENV 3
extern const char *const sp_calib_nccl_env_names[SP_CALIB_N_NCCL_ENV];
const char *sp_calib_data_source_env (const SpCalibData *data, guint32 source, guint which);
/* What they let NCCL choose, as SpTopoSpec's [nccl] masks, read as the
 * NCCL that ran reads them (sp_topo_nccl_parse_as with the trace's
 * /meta/software nccl_runtime: before 2.24 NCCL reads no per-collective
 * entries; NCCL_NVLS_ENABLE=0: no NVLS, no NVLSTree).
 * TRUE when the input's environment decides it: it records one of them, or
 * it is a `shardplan run` trace, which records every NCCL_* variable of
 * the run (rank 0's, read after the run: what a net plugin set at NCCL's
 * init too) and these three from NCCL's configuration files (so one it
 * lacks was unset).  The fit then simulates the input's
 * points with these masks in place of the topology's [nccl] (unless the
 * topology's ranks are CPUs, [intra] kind = shm: those run MPI); FALSE:
 * the topology's [nccl] stands. */
gboolean sp_calib_data_source_nccl (const SpCalibData *data, guint32 source,
                                    guint8 algo_off[SP_TOPO_NCCL_FUNCS],
                                    guint8 proto_off[SP_TOPO_NCCL_FUNCS]);

/* The NCCL version input `source` ran, "2.21.5" (its trace's
 * /meta/software nccl_runtime, read by sp_topo_nccl_version_code; NULL
 * when unknown or not a version), and in
 * *out_lacking (may be NULL) the algorithms that version does not have
 * (bits by NCCL id: sp_topo_nccl_algos_lacking; 0 when unknown): its ops
 * are simulated without them, whatever else restricts the choice (a known
 * version replaces the topology's [nccl] version). */
const char *sp_calib_data_source_nccl_version (const SpCalibData *data, guint32 source,
                                               guint8 *out_lacking);
/* Every NCCL_* variable input `source`'s trace records in /meta/env (the
 * last of a name repeated: sp_trace_nccl_vars), in its order: how many,
 * their names and values in NULL-terminated arrays (owned by the data;
 * NULL when none). */
guint sp_calib_data_source_nccl_vars (const SpCalibData *data, guint32 source,
                                      const char *const **out_names,
                                      const char *const **out_values);
/* A recorded NCCL_ALGO / NCCL_PROTO that NCCL refuses (an unknown
 * collective prefix, a second entry without one: NCCL fails communicator
 * init with it), left out of the masks above: the reason, or NULL. */
const char *sp_calib_data_source_env_problem (const SpCalibData *data, guint32 source);
/* The input that names the same file as `path` (the same string, or the
 * same device and inode), or -1. */
gint64 sp_calib_data_find_source (const SpCalibData *data, const char *path);
/* Row counts over every trace added. */
const SpCalibCounts *sp_calib_data_counts (const SpCalibData *data);
/* The rows left out, by reason: "N not ok, N composite, N not a group
 * collective, N on one rank, N modelled, N zero time" (g_free). */
char *sp_calib_counts_left_out (const SpCalibCounts *counts);

typedef enum {
  SP_CALIB_HOLDOUT_NONE = 0,
  SP_CALIB_HOLDOUT_SIZE_GE,   /* bytes >= value */
  SP_CALIB_HOLDOUT_SIZE_LT,   /* bytes < value */
  SP_CALIB_HOLDOUT_RANKS,     /* n_ranks == value */
  SP_CALIB_HOLDOUT_FILE,      /* source named `file` */
  SP_CALIB_HOLDOUT_SIZES,     /* bytes is one of sizes[0..n_sizes) */
} SpCalibHoldoutKind;

typedef struct {
  SpCalibHoldoutKind kind;
  guint64 value;
  char *file;                 /* FILE: the path (owned; sp_calib_holdout_clear) */
  guint64 *sizes;             /* SIZES: the sizes (owned; sp_calib_holdout_clear) */
  guint n_sizes;
} SpCalibHoldout;

/* Parse "size:>=BYTES", "size:<BYTES", "size:=BYTES[,BYTES…]" (sizes
 * between fitted ones: interpolation rather than extrapolation), "ranks:N"
 * or "file:PATH" (BYTES as sp_parse_bytes, >= 1; N in [1, 2^31]).
 * SP_ERROR_INVALID_ARGUMENT naming the text and the accepted forms.  Free
 * with sp_calib_holdout_clear(). */
gboolean sp_calib_holdout_parse (const char *text, SpCalibHoldout *out_holdout, GError **error);
void sp_calib_holdout_clear (SpCalibHoldout *holdout);
/* The hold-out as the user writes it ("size:>=1048576"; g_free). */
char *sp_calib_holdout_to_string (const SpCalibHoldout *holdout);

/* Mark the held-out points (and clear the mark on the rest).  Fails with
 * SP_ERROR_INVALID_ARGUMENT when the data has no points, when a FILE
 * hold-out names no input, and — for any hold-out other than NONE — when
 * it holds out every point ("nothing left to fit") or none ("holds out no
 * op"). */
gboolean sp_calib_data_apply_holdout (SpCalibData *data, const SpCalibHoldout *holdout,
                                      GError **error);
/* Points in the fit set / held out. */
gsize sp_calib_data_n_fit (const SpCalibData *data);
gsize sp_calib_data_n_holdout (const SpCalibData *data);

/* Error summary of a set of relative errors e_i = sim_i / measured_i − 1:
 * median, p90 and worst of |e| (median and p90 interpolate linearly between
 * order statistics, as shardplan/compare.h does).  n = 0 gives zeros. */
typedef struct {
  guint32 n;
  double median_abs;
  double p90_abs;
  double worst_abs;
} SpCalibErrorStats;

void sp_calib_error_stats (const double *errors, gsize n, SpCalibErrorStats *out_stats);

G_END_DECLS
