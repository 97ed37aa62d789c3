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

/* ---- whole plans ------------------------------------------------------ */

typedef struct {
  SpSimModel model;
  /* DES only: TRUE (default) lets every op's groups, and ops that overlap in
   * time, share links; FALSE simulates each (op, group) alone. */
  gboolean contention;
  /* Fraction of the GPU's peak (topo tflops) a compute op achieves,
   * (0, 1]; default SP_SIM_DEFAULT_COMPUTE_EFFICIENCY. */
  double compute_efficiency;
} SpSimOptions;

/* Default compute efficiency: 0.5 of dense bf16 peak — the model FLOPs
 * utilisation large dense transformer training reaches on A100/H100 (MFU
 * 46–55 %, Chowdhery et al. 2022 PaLM Table 3; Narayanan et al. 2021
 * Megatron-LM: 52 % of peak).  A model constant, not a measurement of
 * this machine. */
#define SP_SIM_DEFAULT_COMPUTE_EFFICIENCY 0.5

void sp_sim_options_init (SpSimOptions *options); /* DES, contention on, default efficiency */

typedef struct _SpSimResult SpSimResult;

/* Simulate every op of `plan` on `topo` with the rank groups `groups`
 * (built from the plan's groups options; world sizes must match the
 * topology).  Semantics:
 *  - an op runs on every group of its family; a rank outside every group of
 *    the family skips it (start = end = the time it became ready);
 *  - on a rank, an op may start when every op it depends on has ended on
 *    that rank and the previous op of the same stream has ended there;
 *    a collective starts when its last member is ready (its start is that
 *    time on every member) and ends at the same time on every member;
 *  - compute / (de)quantize ops take flops / (tflops × 1e12 × efficiency)
 *    and occupy only their stream;
 *  - composites (plan.h) are spans over their sub-ops and are not run.
 * Free with sp_sim_result_free(). */
SpSimResult *sp_sim_run_plan (const SpTopo *topo, const SpPlan *plan, const SpGroups *groups,
                              const SpSimOptions *options, GError **error);
void sp_sim_result_free (SpSimResult *result);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (SpSimResult, sp_sim_result_free)

guint32 sp_sim_result_n_ops (const SpSimResult *result);
guint32 sp_sim_result_world_size (const SpSimResult *result);
/* Start and end (ns from the beginning of the step) of op `op_id` on
 * `rank`.  FALSE when the rank does not take part in the op (not in any
 * group of its family); composites report the span of their sub-ops. */
gboolean sp_sim_result_op_span (const SpSimResult *result, guint32 op_id, guint32 rank,
                                guint64 *out_start_ns, guint64 *out_end_ns);
/* The (algorithm, protocol) the model used for op `op_id` (AUTO for
 * compute ops and composites); the group index and group size on `rank`. */
void sp_sim_result_op_choice (const SpSimResult *result, guint32 op_id, SpAlgo *out_algo,
                              SpProto *out_proto);

/* The summary.  Definitions (all ns):
 *  step_ns        the latest end of any op on any rank;
 *  op_ns[i]       max over ranks of (end − start) of op i;
 *  comm_ns        sum over communication ops (not composites) of op_ns;
 *  compute_ns     sum over compute-like ops (compute, quantize, dequantize,
 *                 quant_reduce) of op_ns;
 *  compute_only_ns  the step time of the same plan with every
 *                 communication op taking 0 ns (the compute critical path);
 *  exposed_comm_ns  step_ns − compute_only_ns: the communication time the
 *                 overlap with compute did not hide;
 *  per_family_ns[f], per_kind_ns[k]: sums of op_ns over communication ops
 *                 of family f (SpFamily < SP_FAMILY_N) / of kind k (SpColl
 *                 value < 64). */
typedef struct {
  guint64 step_ns;
  guint64 comm_ns;
  guint64 compute_ns;
  guint64 compute_only_ns;
  guint64 exposed_comm_ns;
  guint64 per_family_ns[SP_FAMILY_N];
  guint64 per_kind_ns[64];
} SpSimSummary;

const SpSimSummary *sp_sim_result_summary (const SpSimResult *result);
/* op_ns of op `op_id` (see above). */
guint64 sp_sim_result_op_ns (const SpSimResult *result, guint32 op_id);

G_END_DECLS
