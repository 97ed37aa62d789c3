/* sim/sim-internal.h — what the files of sim/ share: the model of one
 * collective (model.c), the NCCL constant tables (nccl-tables.c), the
 * network (net.c), the flow engine (engine.c) and the collective
 * decompositions (des.c).  Not installed. */
#pragma once
#include "shardplan/sim.h"
#include "shardplan/error.h"

#include <math.h>

G_BEGIN_DECLS

/* ---- GPU generation (selects rows of NCCL's tables) ------------------- */
typedef enum {
  SP_ARCH_VOLTA = 0,
  SP_ARCH_AMPERE = 1,
  SP_ARCH_HOPPER = 2,
  SP_ARCH_BLACKWELL = 3,
  SP_ARCH_CPU = 4, /* not a GPU (cpu-shm): NCCL's PCI rows, Volta caps */
} SpArch;

SpArch sp_sim_arch_of (const char *gpu_model);
/* The topology as NCCL sees it.  With an NVLink domain that spans hosts
 * and mnnvl on, NCCL fuses the domain's hosts into one node (src/mnnvl.cc,
 * graph/topo.cc: nLocalRanks = the clique): `out` has one node per domain
 * holding its hosts' GPUs and NICs; ranks keep their numbers (block
 * placement).  Otherwise `out` = `spec`.  Fails when the hosts do not fill
 * whole domains (more hosts than one domain, not a multiple of it). */
gboolean sp_sim_nccl_spec (const SpTopoSpec *spec, SpTopoSpec *out, GError **error);
/* The same for a topology: *out_view is NULL when NCCL sees the hosts. */
gboolean sp_sim_nccl_topo (const SpTopo *topo, SpTopo **out_view, GError **error);

/* The host CPU vendor: the topology's host_cpu, or by GPU generation. */
SpHostCpu sp_sim_host_cpu (const SpTopoSpec *spec);
/* send / recv: the exchange around a group, each member sending S to the
 * next member (send) or to the previous one (recv), as the executor runs
 * it; both are costed alike, the flows of recv run the other way.  p2p:
 * one flow, from the first of its two ranks to the second (the plan's
 * src and dst members: sp_plan_op_members). */
static inline gboolean
sp_sim_is_p2p (SpColl c)
{
  return c == SP_COLL_SEND || c == SP_COLL_RECV || c == SP_COLL_P2P;
}
/* The flows of a send / recv / p2p on n ranks: one per member, p2p's one. */
static inline guint32
sp_sim_p2p_flows (SpColl c, guint32 n)
{
  return c == SP_COLL_P2P ? 1 : n;
}
/* [inter] nic_path, or the board's default (model.c). */
SpNicPath sp_sim_nic_path (const SpTopoSpec *spec);

/* ---- NCCL tables (nccl-tables.c; reference/nccl-cost-model.md §1.6) --- */
typedef enum { SP_HW_NVLINK = 0, SP_HW_PCI = 1, SP_HW_NET = 2 } SpHwLink;
double sp_nccl_base_latency_us (SpAlgo algo, SpProto proto);
double sp_nccl_hw_latency_us (SpHwLink link, SpAlgo algo, SpProto proto);
double sp_nccl_ll_max_bw (SpArch arch, guint32 nodes, gboolean amd_host);
double sp_nccl_ring_ll128_per_ch_bw (SpArch arch, guint32 nodes);
double sp_nccl_tree_per_ch_bw (SpArch arch, guint32 nodes);
double sp_nccl_tree_ll128_per_ch_bw (SpArch arch, guint32 nodes);
double sp_nccl_nvls_efficiency (SpArch arch);
double sp_nccl_nvls_tree_per_ch_bw (SpArch arch, guint32 nodes);
double sp_nccl_tree_correction (SpProto proto, guint64 bytes);
/* NCCL's NVLink per-link bandwidth for the GPU (compute capability x 10,
 * 0 unknown, and its arch) over the datasheet's per-link rate: how much of
 * a datasheet NVLink number NCCL expects; and that datasheet rate. */
double sp_nccl_nvlink_efficiency (guint cc, SpArch arch);
double sp_nccl_nvlink_datasheet_link_gbs (guint cc, SpArch arch);

/* ---- the shape of one group on the topology --------------------------- */
typedef struct {
  const SpTopoSpec *spec;
  SpArch arch;
  guint cc;            /* the GPU's compute capability x 10, 0 unknown (LL128's rule) */
  gboolean nccl;       /* NCCL's own model (SP_SIM_NCCL) rather than ours */
  gboolean amd_host;   /* NCCL's CPU-vendor rules: netOverhead, llMaxBw row */
  gboolean arm_host;   /* a Grace (Arm) host: SP_ARM_HOST_US per collective */
  guint32 n;           /* ranks */
  guint32 nodes;       /* nodes spanned */
  guint32 ppn;         /* ranks per node (max over nodes) */
  guint32 remote_max;  /* the most peers off its node any rank has: n − the
                        * fewest ranks on one of the group's nodes */
  guint32 nics_used;   /* distinct NICs of the group's ranks on one node */
  guint32 n_channels;
  double intra_gbs;    /* effective per-GPU intra bandwidth (one direction) */
  double nic_gbs;      /* effective per-NIC bandwidth */
  double node_net_gbs; /* nics_used × nic_gbs */
  double ring_gbs;     /* ring bus bandwidth before protocol (§ derivation) */
  guint32 intra_near;  /* same-node peers of ranks[0] over its intra port */
  guint32 intra_far;   /* same-node peers of ranks[0] over PCIe (NVLink mesh) */
  guint32 gpu_nics;    /* NICs attached to one GPU (≥ 1) */
  double net_leaf_factor; /* ≤ 1: leaf uplinks' limit on ranks[0]'s NIC rate (direct) */
  guint32 leaf_nodes;  /* nodes per leaf (0: single switch) */
  double leaf_active;  /* the group's NICs on that leaf */
  double p2p_net_factor; /* ≤ 1: NIC rate of p2p (all_to_all, send) traffic over that of
                          * ring / tree traffic (smaller messages, README-model §2) */
  double ll_net_factor;  /* ≤ 1: the same for LL's 64 KiB ring / tree steps (1 in NCCL's view) */
  double msg_overhead_us; /* δ, the transport's (protocol's) cost per network message */
  double net_latency_us;  /* the net plugin's latency per network hop, in this view */
} SpShape;

/* Leaf switch size: NIC ports down per leaf (fat-tree) or nodes per rail
 * switch (rail).  NVIDIA DGX SuperPOD reference architecture: a scalable
 * unit is 32 nodes; its leaf / rail switches (QM8700 / QM9700, 40 / 64
 * ports) take 32 nodes' NICs down, the rest up. */
#define SP_LEAF_PORTS 32

/* What a (coll, algo, proto) costs: the model both analytic and DES use.
 * busBw = min(eff × base, cap); time = max(latency + bytes / algBw, floor). */
typedef struct {
  SpAlgo algo;
  SpProto proto;
  double latency_us;
  double eff;          /* wire efficiency of the payload (≤ 1) */
  double cap_busbw;    /* GB/s, INFINITY when none */
  double ratio;        /* algBw / busBw of the algorithm */
  double algbw;        /* GB/s, what analytic uses */
  /* µs no run of it beats: the transport's step floor times its steps
   * (README-model §2.1a), 0 when none; time = max(latency + bytes /
   * algBw, floor), and des caps every flow to last floor − latency */
  double floor_us;
  double time_us;
} SpCost;

/* Effective per-GPU intra bandwidth and per-NIC bandwidth (GB/s) that the
 * model takes out of the topology's datasheet numbers (README-model §2). */
void sp_sim_link_rates (const SpTopoSpec *spec, double *out_intra_gbs, double *out_nic_gbs);
/* NVLink-mesh GPUs without a direct link: TRUE if local devices a, b have
 * one (hybrid cube-mesh for 8 GPUs per node, full mesh otherwise). */
gboolean sp_sim_mesh_neighbours (guint32 gpus_per_node, guint32 a, guint32 b);
/* NVLink-mesh peers without a direct NVLink go through PCIe at NCCL's
 * PCI_BW (topo.h, GB/s). */
#define SP_PCIE_FALLBACK_GBS 12.0

/* Fill `shape` for `n` ranks (global rank ids, any order).  Fails on a bad
 * rank list.  nodes/ppn come from the list.  sp_shape_init() is the
 * shardplan model (analytic and des); sp_shape_init_model() with
 * SP_SIM_NCCL gives NCCL's own view (its link rates and latencies). */
gboolean sp_shape_init (SpShape *shape, const SpTopoSpec *spec, const guint32 *ranks, guint32 n,
                        GError **error);
gboolean sp_shape_init_model (SpShape *shape, const SpTopoSpec *spec, const guint32 *ranks,
                              guint32 n, SpSimModel model, GError **error);

/* Per-hop latencies of the Ring/LL hop when the topology gives none
 * (README-model §2): the intra link's and the network's, µs. */
double sp_sim_intra_hop_us (const SpTopoSpec *spec);
double sp_sim_inter_hop_us (const SpTopoSpec *spec);

/* TRUE if (coll, algo, proto) is enabled for this shape; otherwise FALSE
 * and, when why != NULL, a static reason. */
gboolean sp_cost_enabled (const SpShape *shape, SpColl coll, SpAlgo algo, SpProto proto,
                          const char **why);
/* What (algo, proto)'s transfers between nodes run at, relative to the
 * shape's NIC rate: LL rings and trees move smaller messages, which pay the
 * transport's per-message cost more often (model.c); 1 otherwise, inside a
 * node and for NCCL's view. */
double sp_cost_net_factor (const SpShape *shape, SpAlgo algo, SpProto proto);
/* The analytic cost of an enabled combination. */
void sp_cost_compute (const SpShape *shape, SpColl coll, guint64 bytes, SpAlgo algo,
                      SpProto proto, SpCost *out_cost);
/* Pick (algo, proto) like NCCL (minimum time over the enabled combinations,
 * restricted to the request's non-AUTO choices).  FALSE + error when none. */
gboolean sp_cost_choose (const SpShape *shape, SpColl coll, guint64 bytes, SpAlgo algo,
                         SpProto proto, SpCost *out_cost, GError **error);

/* The global ranks of a request's group (g_free). */
gboolean sp_sim_group_ranks (const SpTopo *topo, const SpCollRequest *request,
                             guint32 **out_ranks, guint32 *out_n, GError **error);

/* TRUE for the kinds sp_sim_estimate() simulates. */
gboolean sp_sim_coll_supported (SpColl coll);

/* ---- network (net.c) -------------------------------------------------- */
typedef struct _SpNet SpNet;
#define SP_PATH_MAX 6

SpNet *sp_net_new (const SpTopoSpec *spec);
void sp_net_free (SpNet *net);
guint32 sp_net_n_links (const SpNet *net);
double sp_net_link_capacity (const SpNet *net, guint32 link); /* B/ns */
/* Path of a transfer between two ranks on one node: links written to
 * out_links, count returned.  `direct`: a point-to-point transfer, which
 * on an NVLink mesh takes PCIe between GPUs without a direct link (rings
 * and trees are laid over NVLinks, as NCCL's search does). */
guint sp_net_path_intra (const SpNet *net, guint32 src, guint32 dst, gboolean direct,
                         guint32 *out_links);
/* Path between ranks on different nodes leaving through NIC `nic` of the
 * source node and arriving at NIC `nic_dst` of the destination node. */
guint sp_net_path_inter (const SpNet *net, guint32 src, guint32 dst, guint32 nic, guint32 nic_dst,
                         guint32 *out_links);
/* NICs of local device `local`: first and count (≥ 1). */
void sp_net_gpu_nics (const SpNet *net, guint32 local, guint32 *out_first, guint32 *out_count);
/* Two single-link "paths" for NVLS: the GPU's port to / from the switch. */
guint32 sp_net_port_up (const SpNet *net, guint32 rank);
guint32 sp_net_port_down (const SpNet *net, guint32 rank);
gboolean sp_net_rail (const SpNet *net);
/* The leaf switch of NIC `nic` of node `node`, SP_NET_NO_LEAF when the
 * fabric has at most one leaf (no leaf hop ever); and its uplink and
 * downlink ids. */
#define SP_NET_NO_LEAF G_MAXUINT32
guint32 sp_net_leaf (const SpNet *net, guint32 node, guint32 nic);
guint32 sp_net_leaf_up (const SpNet *net, guint32 leaf);
guint32 sp_net_leaf_down (const SpNet *net, guint32 leaf);
/* NIC transmit / receive link of NIC `nic` of node `node`. */
guint32 sp_net_nic_tx (const SpNet *net, guint32 node, guint32 nic);
guint32 sp_net_nic_rx (const SpNet *net, guint32 node, guint32 nic);

/* ---- flow engine (engine.c) ------------------------------------------- */
typedef struct _SpEngine SpEngine;
typedef struct _SpJob SpJob;

/* Called when a job's phase `phase` starts: add its flows with
 * sp_engine_add_flow().  Return the number of phases the job has in
 * *out_n_phases on phase 0 (may be updated later). */
typedef void (*SpJobPhaseFn) (SpEngine *engine, guint32 job, guint32 phase, gpointer data);
/* Called when a job ends (at sp_engine_now()). */
typedef void (*SpJobDoneFn) (SpEngine *engine, guint32 job, gpointer data);

SpEngine *sp_engine_new (const SpNet *net, SpJobDoneFn done, gpointer done_data);
void sp_engine_free (SpEngine *engine);
guint64 sp_engine_now (const SpEngine *engine);
/* Add a job that starts at `start_ns` (≥ now) with `n_phases` phases; phase
 * p begins `delay_ns[p]` after the previous phase ended (phase 0: after
 * start).  `delay_ns` is copied.  Returns the job id. */
guint32 sp_engine_add_job (SpEngine *engine, guint64 start_ns, guint32 n_phases,
                           const guint64 *delay_ns, SpJobPhaseFn phase_fn, gpointer phase_data,
                           const char *label);
/* Add a flow of `bytes` (wire bytes) over `n_links` links to the job's
 * current phase, with fairness weight `weight` (> 0) and a rate cap in B/ns
 * (INFINITY for none).  Only from inside a SpJobPhaseFn. */
void sp_engine_add_flow (SpEngine *engine, guint32 job, double bytes, const guint32 *links,
                         guint n_links, double weight, double cap);
/* Add `mult` (≥ 1) member flows in one entry: each member carries `bytes`
 * with `weight` and rate cap `cap` (as sp_engine_add_flow), and link
 * links[i] is crossed by share[i] of the members (share == NULL: every
 * member crosses every link, n_links ≤ SP_PATH_MAX; any n_links
 * otherwise; links and share are copied).  All members get one rate: the
 * max-min answer of the individual flows when they are equal under a
 * symmetry of everything sharing their links (one path: always).  Bytes
 * sent / delivered count mult × bytes; the lower bound is a member's. */
void sp_engine_add_flow_class (SpEngine *engine, guint32 job, double mult, double bytes,
                               const guint32 *links, const double *share, guint n_links,
                               double weight, double cap);
/* Expected wire bytes of the job (independent closed form), checked
 * against the flows added (fail loud when they differ). */
void sp_engine_expect_bytes (SpEngine *engine, guint32 job, double bytes);
/* Run until no job is left.  FALSE + SP_ERROR_SIMULATION when a check
 * fails (bytes, lower bound, an unfinished job). */
gboolean sp_engine_run (SpEngine *engine, GError **error);
guint64 sp_engine_job_start (const SpEngine *engine, guint32 job);
guint64 sp_engine_job_end (const SpEngine *engine, guint32 job);
gboolean sp_engine_job_done (const SpEngine *engine, guint32 job);
/* Statistics: events processed, max-min solves, peak active flow entries
 * (a merged entry of sp_engine_add_flow_class counts once). */
void sp_engine_stats (const SpEngine *engine, guint64 *out_events, guint64 *out_solves,
                      guint64 *out_peak_flows);

/* ---- collectives on the engine (des.c) -------------------------------- */
typedef struct _SpDesColl SpDesColl;
/* Prepare a collective of `coll`/`bytes` over `ranks` (copied) with the
 * chosen cost; add it as a job starting at start_ns.  Returns NULL + error
 * when the DES cannot represent it (too many flows). */
SpDesColl *sp_des_coll_new (SpEngine *engine, const SpNet *net, const SpShape *shape,
                            const SpCost *cost, SpColl coll, guint64 bytes, const guint32 *ranks,
                            guint32 n, guint64 start_ns, const char *label, GError **error);
void sp_des_coll_free (SpDesColl *coll);
guint32 sp_des_coll_job (const SpDesColl *coll);

/* Upper bound on simultaneously active flows in one DES run (memory
 * guard: about 100 B per flow). */
#define SP_DES_MAX_FLOWS (1u << 22)

/* The flows one collective alone may need in `shardplan estimate`'s des
 * run (sp_des_flow_bound): 2^24, about 2.7 GB of engine state at the
 * 1.35 GB measured for 12.6 M flows (an all-reduce of 2 M H100s); above
 * it the estimate is refused with a pointer to the analytic model, which
 * gives the same time for one uncontended collective. */
#define SP_DES_ESTIMATE_MAX_FLOWS (1u << 24)

/* The latest simulated time, ns: 2^62, 146 years.  A rate near zero or
 * sizes near 2^64 pass it; the simulator fails there with a message
 * instead of wrapping its unsigned time (a hang in des, a saturated or
 * negative duration elsewhere).  Sums of two times below it fit in 64 bits. */
#define SP_SIM_HORIZON_NS (G_GUINT64_CONSTANT (1) << 62)
#define SP_SIM_HORIZON_TEXT "2^62 ns (146 years): a link rate or peak near zero, or sizes near 2^64"

/* `ns` as whole ns (negative as 0), or SP_SIM_HORIZON_NS + 1 where it is
 * past the horizon or not a number: the engine and the schedule fail there. */
static inline guint64
sp_sim_horizon_ns (double ns)
{
  return ns <= (double) SP_SIM_HORIZON_NS ? (guint64) llround (MAX (0.0, ns))
                                          : SP_SIM_HORIZON_NS + 1;
}

/* Engine flow entries one phase of a collective adds at most (a pooled
 * link of a class flow counted as 1/8 of an entry); for all_to_all it
 * depends on the ranks, for the others only on the shape. */
guint64 sp_des_flow_bound (const SpNet *net, const SpShape *shape, const SpCost *cost,
                           SpColl coll, const guint32 *ranks, guint32 n);

/* ---- all-to-all without n(n−1) flows (des-a2a.c) ---------------------- */
typedef struct _SpA2a SpA2a;
/* Above this many same-path entries an all-to-all uses symmetry classes
 * (exact alone, conservative under asymmetric contention) instead. */
#define SP_DES_A2A_PATHS_MAX (1u << 20)
/* The layout of a direct all-to-all over `ranks` (read only here).  Mode from sp_sim_testing_a2a (AUTO: PATHS up to
 * SP_DES_A2A_PATHS_MAX entries, else CLASSES when fewer). */
SpA2a *sp_a2a_new (const SpNet *net, const SpTopoSpec *spec, const guint32 *ranks, guint32 n);
void sp_a2a_free (SpA2a *a2a);
/* Engine entries it adds (intra pairs + inter entries + pooled links / 8). */
guint64 sp_a2a_flows (const SpA2a *a2a);
/* PAIRS, PATHS or CLASSES (never AUTO). */
int sp_a2a_mode (const SpA2a *a2a);
/* Add the flows of every ordered pair: `wire` bytes per pair (rate cap
 * `cap` B/ns, INFINITY for none), weight 1; not in PAIRS mode. */
void sp_a2a_add_flows (SpA2a *a2a, SpEngine *engine, guint32 job, double wire, double cap);

G_END_DECLS
