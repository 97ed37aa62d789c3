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

G_END_DECLS
