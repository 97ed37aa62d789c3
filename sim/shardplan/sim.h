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
} SpSimModel;

/* "analytic", "des" (static strings); NULL / FALSE for unknown. */
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
 * one rank or a zero-byte request costs 0 ns. */
gboolean sp_sim_estimate (const SpTopo *topo, SpSimModel model, const SpCollRequest *request,
                          SpCollEstimate *out_estimate, GError **error);

/* ---- a whole plan ------------------------------------------------------ */

/* What sp_sim_run_plan() computed.  Free with sp_sim_result_free(). */
typedef struct _SpSimResult SpSimResult;

/* Simulate every op of `plan` on `topo` with `model`, over `groups` (built
 * from sp_plan_groups_options (plan); the result keeps a pointer to it, so
 * it must outlive the result).  Semantics:
 *   - an op is ready on a rank when its deps (and, for a sub-op, its
 *     composite's deps) are done on that rank and the previous op of the
 *     same stream is done there;
 *   - a collective runs on every group of its family (ranks in no group of
 *     the family skip it); it starts on a group when all members are ready
 *     and ends at start + its cost;
 *   - kernels (compute, quantize, dequantize, quant_reduce) run on every
 *     rank and take flops / (gpu_tflops·1e12·e), e = plan meta
 *     "compute_efficiency" (0.5 if absent); a kernel with 0 FLOPs and
 *     bytes > 0 (quantize …) takes bytes / HBM bandwidth of the GPU model
 *     (NVIDIA datasheets: H100 3.35 TB/s, H200 4.8, B200 8, A100 80GB
 *     2.039, A100 40GB 1.555, V100 0.9; other models 1 TB/s);
 *   - a composite costs nothing itself: its sub-ops run, and its span on
 *     a rank is its first sub-op's start to its last sub-op's end.
 * Collective cost is computed once per (kind, bytes, family, algorithm
 * hint) and reused.  SP_SIM_ANALYTIC: sp_sim_estimate() of each group
 * (one call per distinct group shape), no contention.  SP_SIM_DES: every
 * group of the op's family runs at once on one flow network, so the groups
 * of a family contend for shared links (NICs, leaf uplinks) — e.g. the
 * replicate all-reduce of every column; when the DES cannot hold all
 * groups at once (SP_DES_MAX_FLOWS) each group is costed alone and
 * sp_sim_result_contention_fallbacks() counts it.  NOT modelled: contention
 * between different ops that overlap in time (an all-gather on stream 1
 * and a reduce-scatter on stream 2, or ops of different families) — each
 * op's cost is that of its family alone on the network; nor does a
 * collective slow compute down.
 * Fails loud (SP_ERROR_SIMULATION) when a rank of a family's groups did not
 * run an op, a span ends before it starts, or an op started before one of
 * its deps ended; SP_ERROR_INVALID_ARGUMENT when the plan's or groups'
 * world size differs from the topology's; SP_ERROR_UNSUPPORTED naming the
 * op for a kind the simulator does not cost; SP_ERROR_INVALID_PLAN for a
 * family the groups lack, a composite without sub-ops, or a bad
 * compute_efficiency.  Deterministic.  Time O(ops × W × deps) plus one
 * collective simulation per distinct op shape; memory 16 bytes per
 * (op, group) for collectives and per (op, rank) for kernels and
 * composites. */
SpSimResult *sp_sim_run_plan (const SpTopo *topo, SpSimModel model, const SpPlan *plan,
                              const SpGroups *groups, GError **error);
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
/* Ops whose family was costed group by group (no contention) because the
 * DES could not hold every group at once. */
guint32 sp_sim_result_contention_fallbacks (const SpSimResult *result);

G_END_DECLS
