/* shardplan/sim.h — what one collective, or a whole plan, costs on a
 * topology.  Two models behind one interface:
 *
 *   SP_SIM_ANALYTIC  closed form per (collective, algorithm, protocol):
 *                    NCCL's α-β model (tuning.cc latencies, protocol
 *                    efficiencies and per-channel caps) with bandwidths
 *                    derived from the topology (sim/README-model.md).
 *                    No contention.  A few µs per estimate.
 *   SP_SIM_DES       a deterministic discrete-event flow model (integer ns):
 *                    every collective is a short sequence of phases, each a
 *                    set of flows over the links of the network built from
 *                    the topology (GPU ports, NICs, leaf uplinks); flows
 *                    share links by weighted max-min fairness (progressive
 *                    filling), recomputed whenever a flow starts or ends, so
 *                    concurrent collectives of several groups contend.
 *
 * On one uncontended collective the two agree within 5 % (tests/sim holds
 * them to it).  Both choose the algorithm and protocol the way NCCL does
 * (the minimum estimated time over the enabled combinations) unless the
 * request names them.
 *
 * Every simulation checks itself and fails with SP_ERROR_SIMULATION rather
 * than return a partial answer: every rank finished every op, bytes put on
 * the wire equal bytes delivered, and no op finished before the α-β lower
 * bound of the links it used.
 *
 * Units: time in ns (integers), sizes in bytes, bandwidths in GB/s = 1e9 B/s.
 */
#pragma once
#include <glib.h>
#include "shardplan/topo.h"
#include "shardplan/types.h"
#include "shardplan/groups.h"
#include "shardplan/plan.h"

G_BEGIN_DECLS

typedef enum {
  SP_SIM_ANALYTIC = 0,
  SP_SIM_DES = 1,
  /* NCCL's own tuning model (src/graph/tuning.cc) as a closed form: its
   * base and per-hop latencies, protocol efficiencies and caps, with the
   * link rates NCCL's topology search settles on, and nothing else (no
   * transport overheads, no fixed cost of the timing loop, no contention).
   * What NCCL's tuner believes; the baseline the other two must beat
   * (bench/fidelity).  Single collectives and contention-free plans. */
  SP_SIM_NCCL = 2,
} SpSimModel;

/* What NCCL environment variable `name` set to `value` changes in a run
 * that the model does not follow ("caps the channels below the model's
 * 18", "Simple's buffer; the model assumes 4194304"; g_free), or NULL: the
 * model reads it (NCCL_ALGO, NCCL_PROTO, NCCL_NVLS_ENABLE, as the
 * topology's [nccl]), `value` is what the model assumes on `s` (NCCL's
 * default, compared as NCCL reads an integer; aws-ofi-nccl's on EFA), or
 * it changes nothing on such a run: one of network only with
 * `across_nodes` FALSE, IB's own with another transport, a threshold NCCL
 * dropped in 2.5 with `nccl_version` (a code, 22105) from 2.5 on or
 * unknown (0).  `calibrate` warns with it: a run that set one has its
 * effect fitted into the calibrated values, which then carry it to every
 * estimate. */
char *sp_sim_nccl_env_unread (const SpTopoSpec *s, int nccl_version, gboolean across_nodes,
                              const char *name, const char *value);
/* Those of `n` variables (`names[i]` = `values[i]`) that it names, as one
 * line: "NCCL_MAX_NCHANNELS=4 (caps the channels below the model's 18),
 * NCCL_BUFFSIZE=8388608 (Simple's buffer; the model assumes 4194304)",
 * values cut as sp_topo_nccl_excerpt does; NULL when none (g_free). */
char *sp_sim_nccl_env_unread_text (const SpTopoSpec *s, int nccl_version, gboolean across_nodes,
                                   const char *const *names, const char *const *values, gsize n);

/* "analytic", "des", "nccl" (static strings); NULL / FALSE for unknown. */
const char *sp_sim_model_name (SpSimModel model);
gboolean sp_sim_model_from_name (const char *name, SpSimModel *out_model);

/* One collective.  Supported kinds: all_reduce, all_gather, reduce_scatter,
 * all_to_all, broadcast, reduce, send (one transfer from ranks[0] to
 * ranks[1]).  `bytes` follows nccl-tests' size column (plan.h): the whole
 * gathered / scattered buffer for all_gather / reduce_scatter, the per-rank
 * buffer otherwise. */
typedef struct {
  SpColl coll;
  guint64 bytes;
  /* The group: either an explicit list of global ranks (ring order; the
   * root of broadcast / reduce is ranks[0]) … */
  guint32 n_ranks;
  const guint32 *ranks;        /* not copied; NULL to use ranks_per_node */
  /* … or, when ranks == NULL, K ranks (local devices 0..K-1) on each of the
   * first `nodes` nodes of the topology (0 = every node; 0 = every GPU). */
  guint32 nodes;
  guint32 ranks_per_node;
  SpAlgo algo;                 /* SP_ALGO_AUTO: choose like NCCL */
  SpProto proto;               /* SP_PROTO_AUTO: choose like NCCL */
} SpCollRequest;

/* Zero the request, set algo/proto to AUTO and coll to all_reduce. */
void sp_coll_request_init (SpCollRequest *request);

typedef struct {
  guint64 time_ns;      /* one collective, nccl-tests style (launch to end) */
  SpAlgo algo;          /* what was used (never AUTO) */
  SpProto proto;
  guint32 n_ranks;
  guint32 n_nodes;      /* nodes the group spans */
  guint32 n_channels;   /* NCCL-style channel count of the model */
  double algbw_gbs;     /* nccl-tests algbw (bytes / time) */
  double busbw_gbs;     /* nccl-tests busbw (algbw × factor(coll, n)) */
} SpCollEstimate;

/* Estimate one collective on `topo` with `model`.  Bad requests (unknown
 * kind, a group rank outside the topology, duplicate ranks, K larger than
 * gpus_per_node, an algorithm or protocol this group cannot use) fail with
 * SP_ERROR_INVALID_ARGUMENT or SP_ERROR_UNSUPPORTED naming the value;
 * a DES run that fails its own checks with SP_ERROR_SIMULATION.  A group of
 * one rank or a zero-byte request costs 0 ns (callers that follow
 * nccl-tests' sizes, like `shardplan estimate`, refuse sizes that round to 0).
 * des all_to_all merges equal flows (same path, or symmetry classes of
 * nodes; sim/README-model.md §5) and is refused with SP_ERROR_UNSUPPORTED
 * only beyond the engine's 2^22 entries (≈540,000 ranks of 8 GPUs per node
 * on a rail fabric, ≈370,000 on a fat-tree with 8 NICs per node). */
gboolean sp_sim_estimate (const SpTopo *topo, SpSimModel model, const SpCollRequest *request,
                          SpCollEstimate *out_estimate, GError **error);

/* ---- a whole plan ------------------------------------------------------ */

/* What sp_sim_run_plan() computed.  Free with sp_sim_result_free(). */
typedef struct _SpSimResult SpSimResult;

/* How sp_sim_run_plan_full() models contention between collectives.
 *   NONE    every group of every op costed alone (sp_sim_estimate of the
 *           group, once per distinct group shape): no contention at all.
 *           The only mode of SP_SIM_ANALYTIC.
 *   FAMILY  (des) each op's cost computed once per (kind, bytes, family,
 *           algorithm) with every group of its family at once on one flow
 *           network, so the groups of a family contend (the replicate
 *           all-reduce of every column); ops that overlap in time do not
 *           slow each other down.  Then a list schedule with those costs.
 *   STEP    (des) ONE flow network for the whole step: every collective op
 *           instance (op, group) is a job, started when its group is ready,
 *           that shares links by max-min fairness with every job running at
 *           the same time, so ops that overlap in time — a prefetch
 *           all-gather on one stream and a gradient reduce-scatter on
 *           another, ops of different families — slow each other down.
 *   DEFAULT STEP for des (fast enough for the speed targets: see
 *           bench/RESULTS.md), NONE for analytic. */
typedef enum {
  SP_SIM_CONTENTION_DEFAULT = 0,
  SP_SIM_CONTENTION_NONE = 1,
  SP_SIM_CONTENTION_FAMILY = 2,
  SP_SIM_CONTENTION_STEP = 3,
} SpSimContention;

/* "default", "none", "family", "step" (static strings); NULL / FALSE for
 * unknown. */
const char *sp_sim_contention_name (SpSimContention contention);
gboolean sp_sim_contention_from_name (const char *name, SpSimContention *out_contention);
/* What SP_SIM_CONTENTION_DEFAULT means for `model`: STEP for des, NONE for
 * analytic and nccl. */
SpSimContention sp_sim_contention_default (SpSimModel model);

/* Options of sp_sim_run_plan_full().  Initialise with
 * sp_sim_plan_options_init() (every field its default) and set fields. */
/* Progress of sp_sim_run_plan_full(): `done` of `total` op instances
 * simulated — an instance is a collective op on one group of its family,
 * or a kernel op on one rank (composites excluded), counted in the real
 * pass (the compute-only pass before it, a list schedule with every
 * collective costing 0, is quick and not counted).  Called on the calling
 * thread every SP_SIM_PROGRESS_EVERY instances and once at the end with
 * done = total; never for a run that fails before it starts.  It must be
 * cheap (an atomic store: `shardplan sim` hands it to tools/progress.h)
 * and must not call the simulator. */
typedef void (*SpSimProgressFn) (guint64 done, guint64 total, gpointer data);
#define SP_SIM_PROGRESS_EVERY 1024

typedef struct {
  SpSimContention contention;
  SpSimProgressFn progress;    /* NULL (default): no progress calls */
  gpointer progress_data;      /* passed to progress */
} SpSimPlanOptions;

void sp_sim_plan_options_init (SpSimPlanOptions *options);

/* Simulate every op of `plan` on `topo` with `model`, over `groups` (built
 * from sp_plan_groups_options (plan); the result keeps a pointer to it, so
 * it must outlive the result).  `options` NULL: defaults.  Semantics:
 *   - an op is ready on a rank when its deps (and, for a sub-op, its
 *     composite's deps) are done on that rank and the previous op of the
 *     same stream is done there;
 *   - a collective runs on every group of its family (ranks in no group of
 *     the family skip it); it starts on a group when all members are ready
 *     and ends when its transfers are done (contention below);
 *   - kernels (compute, quantize, dequantize, quant_reduce) run on every
 *     rank and take flops / (gpu_tflops·1e12·e), e = plan meta
 *     "compute_efficiency" (0.5 if absent); a kernel with 0 FLOPs and
 *     bytes > 0 (quantize …) takes bytes / HBM bandwidth of the GPU model
 *     (NVIDIA datasheets: H100 3.35 TB/s, H200 4.8, B200 8, A100 80GB
 *     2.039, A100 40GB 1.555, V100 0.9; other models 1 TB/s); kernels
 *     never contend with anything (a collective does not slow compute down,
 *     nor compute a collective);
 *   - a composite costs nothing itself: its sub-ops run, and its span on
 *     a rank is its first sub-op's start to its last sub-op's end.
 * Collective cost by options->contention (SpSimContention above):
 *   NONE: sp_sim_estimate() of each group alone, once per (kind, bytes,
 *     family, algorithm hint, group shape).
 *   FAMILY: once per (kind, bytes, family, algorithm hint) every group of
 *     the family at once on one DES network; when the DES cannot hold a
 *     group (more than 2^22 flows; an all_to_all counts its merged entries,
 *     README-model §5) the family is costed group by group and
 *     sp_sim_result_contention_fallbacks() counts the op shape.
 *   STEP: the whole step is one discrete-event run; each (op, group) job
 *     starts when its group is ready, its duration is what max-min sharing
 *     with every job running at the same time leaves it.  When the flows of
 *     the jobs in flight could exceed 2^22 (the des model's memory guard),
 *     the job that would overflow is given its alone duration
 *     (sp_sim_estimate, des) as a fixed delay instead, and
 *     sp_sim_result_contention_fallbacks() counts the ops that had such a
 *     group.
 * Fails loud (SP_ERROR_SIMULATION) when a rank of a family's groups did not
 * run an op, a span ends before it starts, an op started before one of its
 * deps ended, or a DES job fails its own checks (bytes, α-β bound);
 * SP_ERROR_INVALID_ARGUMENT when the plan's or groups' world size differs
 * from the topology's, or for contention FAMILY / STEP with the analytic
 * model; SP_ERROR_UNSUPPORTED naming the op for a kind the simulator does
 * not cost; SP_ERROR_INVALID_PLAN for a family the groups lack, a composite
 * without sub-ops, or a bad compute_efficiency.  Deterministic (same inputs,
 * identical result).  Time: O(ops × W × deps) scheduling plus, for NONE /
 * FAMILY, one collective simulation per distinct op shape, for STEP one
 * max-min solve over the flows in flight per event (an op start or end).
 * Memory: 16 bytes per (op, group) for collectives and per (op, rank) for
 * kernels and composites; STEP adds ~200 bytes per (op, group) of more
 * than one rank (its engine job, kept to the end of the run), 1 bit per
 * (op, rank), 4 bytes per (stream, rank) and per (composite, rank), and
 * ~100 bytes per flow in flight. */
SpSimResult *sp_sim_run_plan_full (const SpTopo *topo, SpSimModel model, const SpPlan *plan,
                                   const SpGroups *groups, const SpSimPlanOptions *options,
                                   GError **error);
/* sp_sim_run_plan_full (…, NULL, error): the default contention. */
SpSimResult *sp_sim_run_plan (const SpTopo *topo, SpSimModel model, const SpPlan *plan,
                              const SpGroups *groups, GError **error);
/* Duration of a kernel op (compute, quantize, dequantize, quant_reduce) as
 * the plan simulation costs it, ns: flops / (the topology's peak × the
 * efficiency, a fraction in (0, 1] — the plan's meta compute_efficiency,
 * 0.5 when absent), else bytes / the GPU model's HBM bandwidth for the
 * byte-only kernels, else 0; G_MAXUINT64 when that is past the
 * simulator's horizon of 2^62 ns (146 years: a peak near zero), where
 * sp_sim_run_plan fails. */
guint64 sp_sim_kernel_ns (const SpTopo *topo, double compute_efficiency, const SpOp *op);
void sp_sim_result_free (SpSimResult *result);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (SpSimResult, sp_sim_result_free)

guint32 sp_sim_result_n_ops (const SpSimResult *result);
/* Start and end (ns since step start) of `op` on `rank`; FALSE when the
 * rank does not run it.  `plan` is the simulated plan.  O(1). */
gboolean sp_sim_result_op_time (const SpSimResult *result, const SpPlan *plan,
                                guint32 op, guint32 rank, guint64 *out_start_ns,
                                guint64 *out_end_ns);
/* The longest span of `op` over its groups (kernels, composites: ranks), ns. */
guint64 sp_sim_result_op_duration (const SpSimResult *result, guint32 op);
/* Step time: the latest end of any op on any rank, ns. */
guint64 sp_sim_result_step_ns (const SpSimResult *result);
/* The same schedule with every collective costing 0 (the compute-only
 * critical path), ns; exposed communication = step − compute-only. */
guint64 sp_sim_result_compute_only_ns (const SpSimResult *result);
guint64 sp_sim_result_exposed_comm_ns (const SpSimResult *result);
/* Sum of op durations (sp_sim_result_op_duration) of the communication
 * ops, of one family's ops, of one kind's ops (composites excluded: their
 * sub-ops count), ns. */
guint64 sp_sim_result_comm_ns (const SpSimResult *result);
guint64 sp_sim_result_family_ns (const SpSimResult *result, SpFamily family);
guint64 sp_sim_result_kind_ns (const SpSimResult *result, SpColl kind);
/* FAMILY: op shapes whose family was costed group by group (no contention)
 * because the DES could not hold every group at once.  STEP: ops of which
 * at least one group ran for its alone duration because the flows in flight
 * could have exceeded the des model's 2^22.  0 otherwise. */
guint32 sp_sim_result_contention_fallbacks (const SpSimResult *result);
/* The contention model the result was computed with (never DEFAULT). */
SpSimContention sp_sim_result_contention (const SpSimResult *result);

G_END_DECLS
