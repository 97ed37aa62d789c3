/* shardplan/calibrate-fit.h — fit the simulator's link and protocol
 * parameters to measured collectives (`shardplan calibrate`).  Part of
 * libspsim (the fit runs the simulator); the measured points come from
 * shardplan/calibrate.h (libshardplan).
 *
 * The forward model of point i is sp_sim_estimate() of its collective
 * (kind, bytes, the group's explicit rank list, the op's algorithm hint,
 * protocol AUTO) on a topology whose spec carries the candidate values.
 * The fit minimises   Σ_i (log sim_i(θ) − log measured_i)²   over the fit
 * set (points not held out) — or, with SP_CALIB_LOSS_SOFT_L1, a robust
 * loss of the same residuals, or with SP_CALIB_LOSS_TRIMMED the sum over
 * its best-agreeing majority — with Levenberg–Marquardt: forward-difference
 * Jacobian, Marquardt's diagonal scaling, steps clipped to the box of
 * each parameter (the INI ranges of topo.h, efficiencies kept >= 0.001),
 * efficiencies fitted as log(efficiency).  Deterministic: no random
 * starts, the same data gives the same result bit for bit.
 *
 * The parameters (SpCalibParam) and when they are fitted:
 *   [intra] latency_us        some fit point has >= 2 ranks on one node
 *   [inter] latency_us        some fit point spans > 1 node
 *   intra_efficiency          some fit point has >= 2 ranks on one node
 *   nic_efficiency            some fit point spans > 1 node
 *   <proto>_overhead_us       the model (with the input values) chooses
 *                             that protocol for some fit point
 * (when the fitted model then chooses another protocol for some fit op,
 * that protocol's overhead is added and the fit runs again from there, up
 * to 3 fits in all) and, of those, only the ones the fit-set times depend on (a Jacobian
 * column that is zero at the start: e.g. an efficiency when every op is
 * latency-bound below the time's ns resolution), and not one whose column
 * is parallel to an earlier parameter's (|cos| >= 0.999: e.g. a protocol
 * overhead next to the per-step latency when every op has one group shape
 * and kind — both add a constant, only their sum is determined).  Every other parameter
 * keeps its input value, and sp_calib_result_param says why.
 * An efficiency that was 0 ("the model's own", topo.h) starts from the
 * value the model derives (sim/README-model.md §2) and is written out
 * explicitly when it moved.
 */
#pragma once
#include <glib.h>
#include "shardplan/topo.h"
#include "shardplan/calibrate.h"
#include "shardplan/sim.h"

G_BEGIN_DECLS

typedef enum {
  SP_CALIB_INTRA_LATENCY = 0, /* [intra] latency_us, µs */
  SP_CALIB_INTER_LATENCY,     /* [inter] latency_us, µs */
  SP_CALIB_INTRA_EFFICIENCY,  /* [calibration] intra_efficiency */
  SP_CALIB_NIC_EFFICIENCY,    /* [calibration] nic_efficiency */
  SP_CALIB_LL_OVERHEAD,       /* [calibration] ll_overhead_us, µs */
  SP_CALIB_LL128_OVERHEAD,    /* [calibration] ll128_overhead_us, µs */
  SP_CALIB_SIMPLE_OVERHEAD,   /* [calibration] simple_overhead_us, µs */
  SP_CALIB_N_PARAMS,
} SpCalibParam;

/* "[intra] latency_us", "[calibration] nic_efficiency" … (static). */
const char *sp_calib_param_name (SpCalibParam param);

typedef enum {
  SP_CALIB_LOSS_LEAST_SQUARES = 0, /* Σ r², r = log sim − log measured */
  SP_CALIB_LOSS_SOFT_L1,           /* Σ 2δ²(√(1 + (r/δ)²) − 1), δ = SP_CALIB_SOFT_L1_SCALE:
                                    * r² for |r| << δ, 2δ|r| for |r| >> δ, so a few ops
                                    * slowed 10× by a preempted rank do not drag the fit */
  SP_CALIB_LOSS_TRIMMED,           /* least trimmed squares: Σ r² over the h = ⌊m/2⌋ + 1 of
                                    * the m fit points that agree best (C-steps from the
                                    * input and from the soft-l1 fit, the lower kept;
                                    * sp_calib_result_trimmed says which were left out).
                                    * Up to ⌊(m−1)/2⌋ ops may be off by anything (a run on
                                    * a shared fabric, a regime the model lacks) without
                                    * moving what the kept ops determine: a parameter the
                                    * final fit's kept ops do not depend on keeps its
                                    * input value (one they do not pin down, a flat
                                    * direction, may still follow the start).  The median
                                    * error, which users judge a fit by, is set by that
                                    * best-agreeing majority.  No standard errors
                                    * (sp_calib_result_std_error is NAN) */
} SpCalibLoss;

/* δ of the soft-L1 loss, in log time (0.1 ≈ 10 %). */
#define SP_CALIB_SOFT_L1_SCALE 0.1

/* "least-squares", "soft-l1", "trimmed" (static); NULL / FALSE for unknown. */
const char *sp_calib_loss_name (SpCalibLoss loss);
gboolean sp_calib_loss_from_name (const char *name, SpCalibLoss *out_loss);

/* Progress of sp_calibrate_fit(): `done` collective estimates (forward
 * model evaluations of one point) so far; `total` is 0, the count not
 * being known in advance (the fit stops when it converges).  Called on the
 * calling thread after every estimate; it must be cheap (`shardplan
 * calibrate` stores the count for its progress line, tools/progress.h). */
typedef void (*SpCalibProgressFn) (guint64 done, guint64 total, gpointer data);

typedef struct {
  SpSimModel model;       /* forward model (default SP_SIM_ANALYTIC) */
  SpCalibLoss loss;       /* default SP_CALIB_LOSS_LEAST_SQUARES */
  guint32 max_iterations; /* Levenberg–Marquardt iterations (default 200) */
  SpCalibProgressFn progress; /* NULL (default): no progress calls */
  gpointer progress_data;
} SpCalibOptions;

/* Defaults above. */
void sp_calib_options_init (SpCalibOptions *options);

typedef struct _SpCalibResult SpCalibResult;

/* Fit `topo`'s parameters to the fit set of `data` (sp_calib_data_apply_
 * holdout decides which points are held out; none by default).  Fails with
 * SP_ERROR_INVALID_ARGUMENT when the data has no fit point or a point's
 * rank lies outside the topology ("op 3 of m.h5 has rank 9, the topology
 * 8 ranks"); SP_ERROR_UNSUPPORTED when the simulator cannot cost a point
 * (naming the op and source); SP_ERROR_SIMULATION from the simulator.
 * `options` NULL: defaults.  Cost: (fitted parameters + 1) × points
 * estimates per iteration.  Free with sp_calib_result_free(). */
SpCalibResult *sp_calibrate_fit (const SpTopo *topo, const SpCalibData *data,
                                 const SpCalibOptions *options, GError **error);
void sp_calib_result_free (SpCalibResult *result);

/* Whether sp_calibrate_fit simulates each input with the NCCL variables
 * its trace records (sp_calib_data_source_nccl) on `topo`: not when its
 * ranks are CPUs ([intra] kind = shm), which run MPI, not NCCL. */
gboolean sp_calib_fit_reads_nccl_env (const SpTopo *topo);
/* The NCCL variables input `source` ran with (sp_calib_data_source_nccl_vars)
 * that the model does not follow on `topo`, judged with the input's NCCL
 * version and whether any of its ops spans two of the topology's nodes
 * (sp_sim_nccl_env_unread): as one line, "NCCL_MAX_NCHANNELS=4 (caps the
 * channels below the model's 18), NCCL_BUFFSIZE=8388608 (Simple's buffer;
 * the model assumes 4194304)" (sp_sim_nccl_env_unread_text), NULL when
 * none or on CPU ranks (g_free); and, when `out_flagged` is not NULL,
 * which of them, one flag a variable (g_free; NULL with no variable).
 * Their effect on the input's times goes into the fitted values (on a
 * held-out input, into its error). */
char *sp_calib_fit_unread_env (const SpTopo *topo, const SpCalibData *data, guint32 source,
                               gboolean **out_flagged);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (SpCalibResult, sp_calib_result_free)

/* The calibrated topology (owned by the result): the input spec with the
 * fitted values; to write it, sp_topo_to_ini(). */
const SpTopo *sp_calib_result_topology (const SpCalibResult *result);

/* One parameter: its value in the input topology and after the fit (for
 * the efficiencies, the effective value, i.e. the model's own when the
 * spec holds 0), whether it was fitted, and whether it moved (|after −
 * before| > 1e-6 relative or absolute).  When not fitted, *out_reason says
 * why (static, e.g. "no op spans more than one node"); NULL otherwise.
 * Any out pointer may be NULL. */
void sp_calib_result_param (const SpCalibResult *result, SpCalibParam param,
                            double *out_before, double *out_after, gboolean *out_fitted,
                            gboolean *out_moved, const char **out_reason);

/* The standard error of fitted parameter `param`'s value after the fit,
 * in its units (efficiencies, fitted as logs, by the delta method): from
 * the Jacobian J of the log residuals of the fit points at the fitted
 * values, s² (JᵀJ)⁻¹ with s² = Σ r² / (m − n) for m points and n fitted
 * parameters.  Not with SP_CALIB_LOSS_TRIMMED (NAN): the residuals of the
 * best-agreeing half would understate the errors.  It says
 * what the data determine if the model's shape is right and the errors
 * are independent; a model that misses the data's shape shows as a large
 * s, and so as large errors.  NAN when the parameter was not fitted or
 * m ≤ n; INFINITY when the fitted ops' times do not determine it at the
 * fitted values. */
double sp_calib_result_std_error (const SpCalibResult *result, SpCalibParam param);

/* The correlation (−1 … 1) of two fitted parameters' estimates, from the
 * same covariance; NAN unless both have a finite standard error.  Near ±1
 * the data determine a combination of the two (e.g. a latency and an
 * overhead on ops of one shape), not each: a fit that extrapolates along
 * it (other group sizes) is not to be trusted. */
double sp_calib_result_correlation (const SpCalibResult *result, SpCalibParam a,
                                    SpCalibParam b);

/* Error summaries (relative errors sim / measured − 1 per point) with the
 * input topology (`after` FALSE) or the calibrated one, on the fit set
 * (`holdout` FALSE) or the held-out set (n = 0 when nothing is held out). */
const SpCalibErrorStats *sp_calib_result_errors (const SpCalibResult *result, gboolean holdout,
                                                 gboolean after);

/* Per point, in the data's order: simulated time before and after (ns).
 * Arrays of sp_calib_data_n_points() entries owned by the result. */
const double *sp_calib_result_sim_before (const SpCalibResult *result);
const double *sp_calib_result_sim_after (const SpCalibResult *result);

/* TRUE when the fit has standard errors but the calibrated topology
 * carries none: their correlations were not a covariance to rounding
 * (sp_topo_new refused them; never seen on a real fit), so `estimate` on
 * it gives no ±.  `shardplan calibrate` warns. */
gboolean sp_calib_result_errors_dropped (const SpCalibResult *result);

/* SP_CALIB_LOSS_TRIMMED: per point, in the data's order, TRUE for the fit
 * points the trimmed fit left out (they stay in the errors above; where
 * the median guard kept only part of the fit's step, they are those of
 * the fit, not of the step); NULL with the other losses.  Owned by the
 * result. */
const gboolean *sp_calib_result_trimmed (const SpCalibResult *result);

/* Levenberg–Marquardt iterations taken, and the final and initial root
 * mean square of the log residuals over the fit set. */
guint32 sp_calib_result_iterations (const SpCalibResult *result);
double sp_calib_result_rms_log_before (const SpCalibResult *result);
double sp_calib_result_rms_log_after (const SpCalibResult *result);

/* The protocols the calibrated model chose for the fit points: a bitmask
 * of 1 << SpProto. */
guint sp_calib_result_protocols (const SpCalibResult *result);

/* What a calibration's uncertainty means for one estimate. */
typedef struct {
  /* the standard error of log(time) (≈ its relative error) that the
   * fitted values' standard errors and correlations give by the delta
   * method; 0 when the time depends on none of them; INFINITY when it
   * depends on a value the fit could not determine */
  double std_error;
  /* the topology's residual_sd: how far the fit's own ops scattered
   * around the fitted model (log); a measured run of the estimated op
   * scatters about sqrt(std_error² + residual_sd²) */
  double residual_sd;
  guint undetermined; /* bit p (SpCalibParam): the time depends on value p, "undetermined" */
  guint not_fitted;   /* bit p: the time depends on value p, which the calibration did not fit */
} SpCalibPrediction;

/* The uncertainty of `at`, the estimate sp_sim_estimate(topo, model,
 * request) gave, from the [calibration] std_errors, correlations and
 * residual_sd `topo` carries (SpTopoCalErrors; all zero when it carries
 * none): g the gradient of log(time) in the fit's variables (µs, log of
 * the efficiencies), by the forward differences the fit's Jacobian took,
 * and std_error = sqrt(gᵀ Σ g) (the delta method: linear, so it says what
 * the fitted values' errors mean near them; at an op of the fit its square
 * is s² times that op's leverage, so it is at most s).  A value without a finite error is
 * probed (1 µs, or ×1.01) to learn whether the time depends on it.  Costs
 * one estimate per value with a standard error or probe (up to 7).  FALSE
 * with the simulator's error only if one of those fails. */
gboolean sp_calib_predict (const SpTopo *topo, SpSimModel model, const SpCollRequest *request,
                           const SpCollEstimate *at, SpCalibPrediction *out, GError **error);

/* The same for any time: of a plan's step, or of one configuration against
 * another (`shardplan sweep`).  `time_of` computes it on a topology (ns);
 * sp_calib_gradient takes its gradient in the fit's variables as
 * sp_calib_predict does (7 calls of `time_of`, 14 where a step has to go
 * the other way, on topologies that
 * differ from `topo` in one [calibration] or latency value; `t0_ns` is its
 * value on `topo`), and sp_calib_gradient_std_error turns one gradient, or
 * the difference of two, into the standard error of log(time) — of
 * log(t_a / t_b) for two, which the calibration determines better than
 * either where both depend on the same values alike. */
typedef gboolean (*SpCalibTimeFunc) (const SpTopo *topo, gpointer user_data, double *out_ns,
                                     GError **error);
typedef struct {
  double g[SP_CALIB_N_PARAMS]; /* d log(time) / d value (µs; log for the efficiencies) */
  guint undetermined;          /* as SpCalibPrediction's */
  guint not_fitted;
} SpCalibGradient;

gboolean sp_calib_gradient (const SpTopo *topo, SpCalibTimeFunc time_of, gpointer user_data,
                            double t0_ns, SpCalibGradient *out, GError **error);
/* sqrt((g_a − g_b)ᵀ Σ (g_a − g_b)) with Σ from `topo`'s std_errors and
 * correlations (`b` NULL: of `a` alone); INFINITY when it depends on a
 * value the fit could not determine (for two: when they do not move alike
 * with it). */
double sp_calib_gradient_std_error (const SpTopo *topo, const SpCalibGradient *a,
                                    const SpCalibGradient *b);

/* A `time_of` for a whole plan (`shardplan sim --std-error`, `sweep`'s
 * margin): its step (sp_sim_run_plan_full with `model` and `opts`) on the
 * moved topology.  The plan and its groups do not depend on the
 * calibrated values: built once, simulated on each moved topology. */
typedef struct {
  SpSimModel model;
  const SpPlan *plan;
  const SpGroups *groups;
  const SpSimPlanOptions *opts;
} SpCalibPlanStep;

gboolean sp_calib_plan_step_ns (const SpTopo *topo, gpointer plan_step, double *out_ns,
                                GError **error);

G_END_DECLS
