/* The cost model of one collective: effective bandwidths from the topology,
 * NCCL's latencies and protocol efficiencies, and NCCL's automatic choice.
 * Both models use it: analytic reads the time off it, DES takes its
 * latency, efficiency and caps and lets the network decide the bandwidth.
 * The derivations are in sim/README-model.md. */
#include "config.h"
#include "sim-internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* NCCL's view of a NIC (the nccl model only): search.cc's per-channel speed
 * ladders stop at 48 of 50 GB/s (400 Gb/s), 24 of 25 (200 Gb/s) and 12 of
 * 12.5 (100 Gb/s): 0.96 in each case. */
#define SP_NET_EFFICIENCY 0.96

/* ---- transports (README-model §2) ---------------------------------------
 *
 * What a NIC really delivers under NCCL is its line rate less a fixed
 * cost per network message: the proxy thread posts one send (and the peer
 * one receive) per NCCL step, and the time between two messages of one
 * connection — completion polling, the next post, the receiver-driven
 * clear-to-send of the verbs plugin, libfabric's rendezvous — does not
 * move data.  A message of m bytes on a link of B bytes/µs therefore runs
 * at m / (m + δ·B) of the line rate.  Message sizes are NCCL's: a ring or
 * tree step is NCCL_BUFFSIZE / NCCL_STEPS = 4 MiB / 8 = 512 KiB, a p2p
 * message (all-to-all, send) NCCL_P2P_NET_CHUNKSIZE = 128 KiB; aws-ofi-nccl
 * sets NCCL_BUFFSIZE 8 MiB and NCCL_P2P_NET_CHUNKSIZE 512 KiB on EFA
 * instances (src/platform-aws.cpp), doubling the step and quadrupling the
 * chunk.  One δ per transport explains both the ring and the all-to-all
 * rates of every multi-node set of the development set.
 *
 *   δ (µs per message), fitted over the development set's large rings
 *   (bench/fidelity, rows >= 256 MiB with one rank per NIC):
 *     ib         0.30  H100 cluster, 10 nodes x 1 GPU, NDR 400 Gb/s: ring
 *                      busbw 48.6 of 50 GB/s (all-to-all then follows at 45.5,
 *                      as measured)
 *     roce       0.30  the same ConnectX NICs and verbs plugin as ib (no RoCE
 *                      set in the development set: NOT fitted)
 *     efa        16.6  p4de, 2 nodes, 4 x 100 Gb/s: tree all-reduce at 0.835
 *                      of the line rate with 1 MiB steps
 *     slingshot  8.15  Polaris, Slingshot 11 200 Gb/s through aws-ofi-nccl /
 *                      CXI: ring busbw 36 of 50 GB/s per node; the same δ
 *                      predicts its all-to-all at 0.39 of line rate
 *                      (measured 0.35-0.39)
 *     tcp        20    NCCL's socket transport through the kernel stack: an
 *                      ENGINEERING ESTIMATE (no TCP set in the development
 *                      set), about 0.7 of a 100 Gb/s line with 512 KiB steps
 *     efa, RDMA  3     aws-ofi-nccl's RDMA protocol, the plugin's default
 *                      on p5.48xlarge / p5e / p5en / p6 (efa_rdma_protocol:
 *                      Hopper and Blackwell data-centre GPUs, more than one
 *                      a node; p5.4xlarge, p4d, p4de and the g-series keep
 *                      SENDRECV, whose 16.6 is above): the receiver's
 *                      control write lets the sender post without a
 *                      handshake, so what is left between two messages is
 *                      the completion, "~2 µs in the device and ~1 µs to
 *                      write that completion up to the host stack"
 *                      (OFI_NCCL_TUNER_NET_COMP_OVERHEAD, 3 µs,
 *                      include/nccl_ofi_param.h; reference/nccl-
 *                      transports.md §2.8).  The plugin's tuner adds it to
 *                      Simple's latency; taking it as δ, the dead time
 *                      between a connection's messages, is OUR reading, and
 *                      a vendor figure, NOT fitted: the development set has
 *                      no P5 or P6 run.  A message above 128 KiB is striped
 *                      over the GPU's rails (message_stripes): 4 x 100 Gb/s
 *                      on p5, 2 x 200 on p5en, so it pays δ once at their
 *                      summed rate; LL's 64 KiB messages use one rail.
 *
 *   step floor (µs): the shortest step a multi-node Simple pipeline
 *   (ring or tree) keeps on the transport, whatever it carries.  A Simple
 *   step is a credit-gated hand-off through both proxies (the receiver
 *   posts the slot, the sender's proxy sends once the GPU has filled it,
 *   the receiver's flushes and hands it to its GPU, which frees the slot
 *   for the next); the ring or tree moves in lockstep with its slowest
 *   link, so intra-node steps wait as long as the network ones.
 *     slingshot  42    fitted: Polaris (Slingshot 11 through aws-ofi-nccl /
 *                      CXI, NCCL 2.21) keeps 38-44 µs per ring step
 *                      wherever the bytes would take less: all-gather 2-8
 *                      MiB on 2 nodes (7 steps: 277, 268, 309 µs) and 8-32
 *                      MiB on 8 nodes (31 steps: 1348, 1327, 1305 µs),
 *                      all-reduce 4-8 MiB on 2 nodes (14 steps: 563, 612
 *                      µs) and 32 MiB on 8 (62 steps: 2636 µs); the median
 *                      of those rows' (time - 8.4 µs base) / steps is 42.4,
 *                      the same at 2 and at 8 nodes, so it is per step,
 *                      not per node.  Likely (no log to confirm it): the
 *                      flush after each Simple GPUDirect receive, an RDMA
 *                      read through the NIC in aws-ofi-nccl, which LL /
 *                      LL128 do not need; sites with NCCL_NET_FORCE_FLUSH=0
 *                      may not pay it ([inter] step_floor_us = 0).
 *     others     0     NCCL's per-hop latencies alone (no run of the
 *                      development set shows a Simple floor above them:
 *                      its InfiniBand and EFA Simple rows are
 *                      bandwidth-bound; the H100 10 x 8 and 10 x 4 rows
 *                      of 32-128 MiB keep ~9 µs per step under LL128,
 *                      tried as a floor and left out: README-model §2.1a)
 *   [inter] step_floor_us overrides it.  Applied to the all-reduce,
 *   all-gather and reduce-scatter rings and the tree all-reduce (their
 *   steps: cost_compute_model, tree_simple_steps), and to broadcast /
 *   reduce chains per network hop of their first slice and per further
 *   slice (no run of the development set has one); not to PAT.
 *
 *   latency (µs) added to every network hop, twice for Simple where the
 *   GPU flushes a Simple receive (hop_net; NCCL's view
 *   always: tuning.cc adds the net plugin's reported `latency` that way,
 *   for the flush): aws-ofi-nccl
 *   reports 75 µs on p4d/p4de/p5/p5e and 35 µs on the later instances
 *   (p5en, p6-b200: we take 35 for Blackwell GPUs) and 150 µs on p3dn (V100);
 *   the built-in IB and
 *   socket plugins report 0.  TCP adds its kernel stack: 12 µs one way, an
 *   ENGINEERING ESTIMATE (the order of a sockets ping-pong on 100 GbE). */
typedef struct {
  double msg_overhead_us;
  double latency_us;
  double step_bytes;
  double p2p_chunk_bytes;
  double step_floor_us;
} SpTransportModel;

static const SpTransportModel transport_models[] = {
  [SP_TRANSPORT_IB] = { 0.30, 0.0, 512.0 * 1024, 128.0 * 1024 },
  [SP_TRANSPORT_ROCE] = { 0.30, 0.0, 512.0 * 1024, 128.0 * 1024 },
  [SP_TRANSPORT_EFA] = { 16.6, 75.0, 1024.0 * 1024, 512.0 * 1024 },
  [SP_TRANSPORT_SLINGSHOT] = { 8.15, 0.0, 512.0 * 1024, 128.0 * 1024, 42.0 },
  [SP_TRANSPORT_TCP] = { 20.0, 12.0, 512.0 * 1024, 128.0 * 1024 },
};
#define SP_EFA_LATENCY_BLACKWELL_US 35.0
#define SP_EFA_LATENCY_VOLTA_US 150.0 /* p3dn */
/* What a network hop really takes on Hopper EFA instances (p5, p5e): the
 * 75 µs above is what the plugin REPORTS to NCCL (and so what NCCL's
 * formula, the nccl model, uses); these instances run aws-ofi-nccl's RDMA
 * protocol, whose own tuner models the hop as an 8-byte RDMA write with
 * immediate, 20 µs between two nodes (src/tuner/nccl_ofi_model.cpp,
 * reference/nccl-transports.md §2.8), and chooses the algorithm with it.
 * A vendor figure, NOT fitted: the development set has no Hopper EFA run.
 * The A100 instances (p4d, p4de) keep the SENDRECV protocol and 75 µs,
 * which their measured small all-reduce bears out (8 B on 2 x p4de:
 * 164 µs measured, 170 µs with 75 µs per hop). */
#define SP_EFA_LATENCY_HOPPER_REAL_US 20.0

/* The channels the model gives a collective: one per NVLink of the GPU
 * (NCCL's search ends near that for NVSwitch and mesh systems), 2
 * otherwise; clamped to [2, 32]. */
static guint32
model_channels (const SpTopoSpec *s, SpArch arch)
{
  if (s->intra_kind != SP_INTRA_NVSWITCH && s->intra_kind != SP_INTRA_NVLINK)
    return 2;
  double links = s->intra_bandwidth_gbs
                 / sp_nccl_nvlink_datasheet_link_gbs (sp_topo_gpu_compute_capability (s->gpu_model),
                                                      arch);
  return (guint32) CLAMP (lround (links), 2, 32);
}

static const SpTransportModel *
transport_model (const SpTopoSpec *s)
{
  guint t = (guint) s->transport < G_N_ELEMENTS (transport_models) ? s->transport : 0;
  return &transport_models[t];
}

/* EFA through aws-ofi-nccl's RDMA protocol: the plugin's platform default
 * on p5.48xlarge / p5e / p5en / p6 and later P instances, which hold 4 or 8
 * Hopper or Blackwell data-centre GPUs; p5.4xlarge (one H100), the A100
 * and V100 instances (p4d, p4de, p3dn) and the g-series (Ada, Ampere,
 * Turing, and the sm120 RTX PRO 6000) keep SENDRECV (src/platform-aws.cpp;
 * reference/nccl-transports.md §2.8).  The GPU's compute capability (sm90
 * to sm10x) and more than one GPU per node stand for the instance; an
 * unknown GPU is costed as an A100, on SENDRECV. */
static gboolean
efa_rdma_protocol (const SpTopoSpec *s)
{
  if (s->transport != SP_TRANSPORT_EFA || s->gpus_per_node < 2)
    return FALSE;
  guint cc = sp_topo_gpu_compute_capability (s->gpu_model);
  return cc >= 90 && cc < 120;
}

/* The plugin-reported network latency NCCL adds per network hop. */
static double
transport_latency_us (const SpTopoSpec *s, gboolean nccl)
{
  if (s->transport == SP_TRANSPORT_EFA && sp_sim_arch_of (s->gpu_model) == SP_ARCH_BLACKWELL)
    return SP_EFA_LATENCY_BLACKWELL_US;
  if (s->transport == SP_TRANSPORT_EFA && sp_sim_arch_of (s->gpu_model) == SP_ARCH_VOLTA)
    return SP_EFA_LATENCY_VOLTA_US;
  if (!nccl && efa_rdma_protocol (s) && sp_sim_arch_of (s->gpu_model) == SP_ARCH_HOPPER)
    return SP_EFA_LATENCY_HOPPER_REAL_US;
  if (nccl && s->transport == SP_TRANSPORT_TCP)
    return 0.0; /* the socket plugin reports 0: NCCL does not know */
  return transport_model (s)->latency_us;
}

/* The floor under one step of a ring or tree of `sh` with `proto` (above):
 * [inter] step_floor_us when the topology gives it, else the transport's;
 * 0 (none) for Simple inside one node, other protocols and NCCL's own view,
 * which does not know it. */
static double
step_floor_us (const SpShape *sh, SpProto proto)
{
  if (sh->nccl || sh->nodes <= 1 || proto != SP_PROTO_SIMPLE)
    return 0;
  if (sh->spec->inter_step_floor_us >= 0)
    return sh->spec->inter_step_floor_us;
  return transport_model (sh->spec)->step_floor_us;
}

/* What a network send of m bytes from GPU memory costs the sending proxy
 * before the NIC takes it, µs.  Fitted (README-model §2.1b): Polaris'
 * all-to-alls of at most 128 B per peer take 47.8 µs more than those of
 * 256 B on 2 nodes (4 remote peers: 12.0 µs each) and 366 µs more on 8
 * nodes (28 remote peers: 13.1 µs each), one cost per message to a remote
 * peer at both scales; 12.4 is the median over those 12 rows of (measured
 * − the model without it) / remote peers, and 4 to 28 remote peers is all
 * the data covers.  Likely (no log to confirm it): libfabric's CXI
 * provider sends a message of at most its inject size as an immediate data
 * command carrying the payload, so a GPU payload is first copied to the
 * host (libfabric's HMEM copy: cudaMemcpy without gdrcopy, which is off by
 * default; into host buffers not registered with the GPU where
 * FI_CXI_DISABLE_HOST_REGISTER=1, as on Polaris); the NIC reads larger
 * ones from GPU memory itself.  192 B is the inject size fi_info reports
 * for cxi (the runs put the step between 128 and 256 B per peer).  Only
 * Simple sends from GPU memory: network p2p (all-to-all, send) is Simple
 * in NCCL (no LL buffers on network p2p connections) and LL send buffers
 * are in host memory; Simple ring or tree steps this small would pay it
 * too but are not modelled (NCCL runs LL at such sizes).  [inter]
 * inject_copy_us overrides it (0 turns it off; a given value applies on
 * any transport). */
#define SP_INJECT_BYTES 192.0
#define SP_SLINGSHOT_INJECT_COPY_US 12.4

static double
small_send_copy_us (const SpShape *sh, SpProto proto, double m)
{
  if (sh->nccl || sh->nodes <= 1 || proto != SP_PROTO_SIMPLE || m > SP_INJECT_BYTES)
    return 0;
  if (sh->spec->inter_inject_copy_us >= 0)
    return sh->spec->inter_inject_copy_us;
  return sh->spec->transport == SP_TRANSPORT_SLINGSHOT ? SP_SLINGSHOT_INJECT_COPY_US : 0;
}

#define SP_EFA_RDMA_MSG_OVERHEAD_US 3.0
#define SP_EFA_STRIPE_MIN_BYTES (128.0 * 1024)

/* δ, the fixed cost of one network message (µs, the table above). */
static double
msg_overhead_us (const SpTopoSpec *s)
{
  return efa_rdma_protocol (s) ? SP_EFA_RDMA_MSG_OVERHEAD_US : transport_model (s)->msg_overhead_us;
}

/* The NICs an m-byte network message crosses at once: with EFA's RDMA
 * protocol a message above 128 KiB is striped over a divisor of the GPU's
 * rails (its NICs, nics_per_node / gpus_per_node of them: the plugin's
 * multi-rail device; OFI_NCCL_MIN_STRIPE_SIZE, src/nccl_ofi_scheduler.cpp).
 * Which divisor is our reading, not the scheduler's code: the largest that
 * gives no more stripes than the message has 128 KiB pieces, so 1 MiB and
 * 512 KiB take all 4 of p5's rails, 256 KiB two. */
static double
message_stripes (const SpTopoSpec *s, double m)
{
  if (!efa_rdma_protocol (s) || m <= SP_EFA_STRIPE_MIN_BYTES)
    return 1;
  guint32 rails = s->nics_per_node / s->gpus_per_node;
  double pieces = ceil (m / SP_EFA_STRIPE_MIN_BYTES);
  for (guint32 d = pieces < rails ? (guint32) pieces : rails; d > 1; d--)
    if (rails % d == 0)
      return d;
  return 1;
}

/* The rate an m-byte network message runs at while it moves, bytes per
 * µs: the line of the NICs it is striped over (one, but for EFA's RDMA
 * protocol, message_stripes), which it pays δ once for. */
static double
message_line (const SpTopoSpec *s, double m)
{
  return s->nic_gbps / 8.0 * 1000.0 * message_stripes (s, m);
}

/* Fraction of the line rate a stream of m-byte messages gets. */
static double
message_efficiency (const SpTopoSpec *s, double m)
{
  return m / (m + msg_overhead_us (s) * message_line (s, m));
}

/* The rate of m-byte network messages over that of the ring step the NIC
 * rate is set at (≤ 1): eff(m) / eff(step), with the transport's δ — or,
 * on a calibrated topology, the δ its nic_efficiency e implies at the step,
 * (step / line)(1/e − 1) (README-model §2.1), against e itself. */
static double
message_factor (const SpTopoSpec *s, double m)
{
  const SpTransportModel *t = transport_model (s);
  double e = s->cal_nic_efficiency;
  if (e <= 0)
    return MIN (1.0, message_efficiency (s, m) / message_efficiency (s, t->step_bytes));
  /* δ × line at the step, bytes; an m-byte message's line may differ
   * (striping, message_line) */
  double delta_line = MAX (0.0, t->step_bytes * (1.0 / e - 1.0))
                      * (message_line (s, m) / message_line (s, t->step_bytes));
  return MIN (1.0, m / (m + delta_line) / e);
}

/* LL's network message: one step of its connection buffer, 8 lines × 512
 * threads × 16 B = 64 KiB (32 KiB of payload beside its flags), against
 * Simple's 512 KiB step (NCCL src/include/device.h; reference/nccl-transports.md
 * §2.1).  Each pays δ, so LL rings and trees cross the network at
 * message_factor (64 KiB): 0.84 on 400 Gb/s InfiniBand, 0.34 on 200 Gb/s
 * Slingshot.  LL128's 600 KB steps are Simple's within 2 %: not charged. */
#define SP_LL_STEP_WIRE_BYTES (8.0 * 512 * 16)

double
sp_cost_net_factor (const SpShape *sh, SpAlgo algo, SpProto proto)
{
  if (proto != SP_PROTO_LL || (algo != SP_ALGO_RING && algo != SP_ALGO_TREE) || sh->nodes <= 1
      || sh->nccl)
    return 1.0;
  return sh->ll_net_factor;
}
/* PCIe: NCCL's PCI_BW (12 GB/s, topo.h) for a Gen3 x16 link whose
 * datasheet rate is 15.75 GB/s per direction. */
#define SP_PCIE_EFFICIENCY (12.0 / 15.75)
/* NCCL's netOverhead (tuning.cc getNetOverhead), µs, ×3 for Simple: the
 * floor of every intra-node step of a multi-node ring, 1 µs on Intel and
 * Arm hosts, 2 µs on AMD hosts. */
#define SP_NET_OVERHEAD_US 1.0
#define SP_NET_OVERHEAD_AMD_US 2.0
/* The fixed cost of one collective on a Grace (Arm) host beyond NCCL's
 * base latency, µs: nccl-tests' smallest all-reduce on GB200 (2 hosts of
 * one NVLink domain, 8 B: 21.6 µs) against NCCL's own ring/LL formula for
 * it (6.6 + 14 x 0.6 = 15.0 µs).  The host side of a launch (NCCL's
 * enqueue, the kernel launch) on the Arm core, as the x86 rows of the
 * development data need nothing beyond NCCL's base.  Fitted on the one
 * Grace-hosted run of the development data, so the least certain
 * constant of the model: refit it when more Grace data is published. */
#define SP_ARM_HOST_US 6.6
/* Ring+Simple+AllReduce multi-node latency factor ("plateau"), tuning.cc:
 * 1.4 on SM80+, 1.9 before. */
#define SP_RING_PLATEAU_SM80 1.4
#define SP_RING_PLATEAU_OLD 1.9
/* Protocol efficiencies (tuning.cc): LL carries 8 data bytes per 16-byte
 * line; NCCL models LL128 (120 of 128 bytes) as 0.92; Tree all-reduce
 * 0.92, Tree LL 1/3.8, Tree LL128 7/9 on one node or 120/128; PAT 0.75. */
#define SP_EFF_LL 0.5
#define SP_EFF_LL128 0.92
#define SP_EFF_TREE 0.92
#define SP_TREE_LL_DIV 3.8
#define SP_TREE_LL128_1NODE (7.0 / 9.0)
#define SP_TREE_LL128_NODES (120.0 / 128.0)
#define SP_EFF_PAT 0.75
/* NCCL_P2P_LL_THRESHOLD default (bytes per peer): smaller p2p transfers
 * use LL. */
#define SP_P2P_LL_THRESHOLD 16384
/* NVLS (NVLink SHARP) as it runs (README-model §2.6):
 * - NCCL's nvlsChannels: 16 on sm90, 24 on sm100 within one node
 *   (src/graph/search.cc; reference/nccl-transports.md §2.6);
 * - its chunk: NCCL_NVLS_CHUNKSIZE 128 KiB, 64/32/16 KiB when the size is
 *   below 64/8/2 x channels x heads x chunk, each test against the chunk
 *   as already reduced (src/enqueue.cc; nvls_chunk below), heads = the
 *   node's GPUs;
 * - every chunk a channel moves costs SP_NVLS_CHUNK_US on top of its
 *   bytes (the multimem load/store handshake and flag exchange of one
 *   pipeline step), and the bytes move at SP_NVLS_EFF of NCCL's NVLink
 *   rate, S (k+1)/k per direction for an all-reduce over k GPUs.
 * The two constants are one fit over every NVLS row of the development
 * data (H100 1 node x 4 and x 8, GB200 2 hosts x 4 and 18 hosts x 4 in one
 * NVLink domain: 39 rows, two generations, 4 to 72 heads; the fit is
 * bench/fit-nvls.py on `bench/fidelity --rows`):
 * 1.5 us is a few NVLink round trips, 1.01 of NCCL's NVLink rate (20.6 of
 * H100's 25 GB/s datasheet per link, 40.1 of Blackwell's 50: 0.83 and 0.81
 * of the datasheet) the rate the copy loop keeps between them (mean
 * |error| 5.7 % over the 39 rows; 6.4 % with 0.95 / 1.1 us, the fit when
 * the chunk thresholds were wrongly all tested against 128 KiB).
 * NCCL's own model (0.85 Hopper, 0.74 Blackwell, no chunk
 * term) stays in the nccl model. */
#define SP_NVLS_EFF 1.01
#define SP_NVLS_CHUNK_US 1.5
#define SP_NVLS_CHUNK_BYTES 131072.0
#define SP_NVLS_CHANNELS_SM90 16
#define SP_NVLS_CHANNELS_SM100 24
#define SP_NVLS_CHANNELS_SM100_NODES 32 /* sm100 across nodes (search.cc) */
/* NVLSTree's chunk ceiling, NCCL_NVLSTREE_MAX_CHUNKSIZE's default from 4
 * nodes on (src/enqueue.cc; reference/nccl-transports.md §2.6). */
#define SP_NVLS_TREE_CHUNK_4NODES 65536.0

SpArch
sp_sim_arch_of (const char *m)
{
  if (m == NULL)
    return SP_ARCH_AMPERE;
  if (g_ascii_strncasecmp (m, "cpu", 3) == 0)
    return SP_ARCH_CPU;
  /* the generation of the GPU lib/topo.c knows by name (case-insensitive,
   * as the README says) */
  /* NCCL's buckets (tuning.cc compCapIndex): below sm80 Volta's tables,
   * sm80–89 Ampere's, sm90 Hopper's, sm100 and later Blackwell's */
  guint cc = sp_topo_gpu_compute_capability (m);
  if (cc == 0)
    return SP_ARCH_AMPERE; /* anything unknown: the documented default */
  return cc < 80 ? SP_ARCH_VOLTA : cc < 90 ? SP_ARCH_AMPERE : cc < 100 ? SP_ARCH_HOPPER
                                                                      : SP_ARCH_BLACKWELL;
}

gboolean
sp_sim_nccl_spec (const SpTopoSpec *s, SpTopoSpec *out, GError **error)
{
  *out = *s;
  guint32 dom = sp_topo_spec_nvlink_domain (s);
  if (dom <= s->gpus_per_node || s->mnnvl == SP_MNNVL_OFF)
    return TRUE;
  guint32 hpd = dom / s->gpus_per_node;
  if (s->nodes > hpd && s->nodes % hpd != 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "%u hosts are not whole NVLink domains of %u hosts ([cluster] nvlink_domain "
                   "%u / gpus_per_node %u): use at most %u hosts or a multiple of %u, or "
                   "mnnvl = off", s->nodes, hpd, dom, s->gpus_per_node, hpd, hpd);
      return FALSE;
    }
  guint32 hosts = MIN (s->nodes, hpd);
  out->nodes = s->nodes > hpd ? s->nodes / hpd : 1;
  out->gpus_per_node = hosts * s->gpus_per_node;
  out->nics_per_node = hosts * s->nics_per_node;
  out->nvlink_domain = 0;
  return TRUE;
}

gboolean
sp_sim_nccl_topo (const SpTopo *topo, SpTopo **out_view, GError **error)
{
  *out_view = NULL;
  SpTopoSpec v;
  if (!sp_sim_nccl_spec (sp_topo_spec (topo), &v, error))
    return FALSE;
  if (v.nodes == sp_topo_spec (topo)->nodes && v.gpus_per_node == sp_topo_spec (topo)->gpus_per_node)
    return TRUE;
  *out_view = sp_topo_new (&v, error);
  return *out_view != NULL;
}

SpHostCpu
sp_sim_host_cpu (const SpTopoSpec *s)
{
  if (s->host_cpu != SP_HOST_CPU_DEFAULT)
    return s->host_cpu;
  /* The GPU generation's reference server (NVIDIA datasheets): DGX-1 2x
   * Xeon E5-2698 v4; DGX A100 2x AMD EPYC 7742 (HGX A100 systems such as
   * ALCF Polaris: EPYC Milan); DGX H100 2x Xeon Platinum 8480C; DGX B200
   * 2x Xeon Platinum 8570; GB200 / GB300: Grace (Arm). */
  if (sp_topo_gpu_grace (s->gpu_model))
    return SP_HOST_CPU_ARM;
  return sp_sim_arch_of (s->gpu_model) == SP_ARCH_AMPERE ? SP_HOST_CPU_AMD : SP_HOST_CPU_INTEL;
}

SpNicPath
sp_sim_nic_path (const SpTopoSpec *s)
{
  if (s->nic_path != SP_NIC_PATH_DEFAULT)
    return s->nic_path;
  /* Boards with PCIe switches put each NIC beside its GPUs (HGX / DGX
   * 8-GPU, DGX-1: PXB).  The 4-GPU NVLink-mesh boards (HGX A100 4-GPU as in
   * ALCF Polaris and NERSC Perlmutter, HGX H100 4-GPU, IBM AC922) have none:
   * GPUs and NICs hang off the CPU's root ports (PHB).  Grace superchips
   * reach their NICs over C2C, which NCCL ranks with PXN (NCCL_LL128_C2C). */
  if (s->intra_kind == SP_INTRA_NVLINK && s->gpus_per_node < 8 && !sp_topo_gpu_grace (s->gpu_model))
    return SP_NIC_PATH_PHB;
  return SP_NIC_PATH_PXB;
}

static int
cmp_u32 (const void *a, const void *b)
{
  guint32 x = *(const guint32 *) a, y = *(const guint32 *) b;
  return x < y ? -1 : x > y;
}

gboolean
sp_sim_mesh_neighbours (guint32 gpus_per_node, guint32 a, guint32 b)
{
  /* hybrid cube-mesh (DGX-1, p3dn): each half of 4 fully connected, plus
   * GPU i <-> i+4.  Other sizes: treated as fully connected. */
  if (gpus_per_node != 8)
    return TRUE;
  return a / 4 == b / 4 || (a > b ? a - b : b - a) == 4;
}

static guint32
leaf_of_node (const SpTopoSpec *s, guint32 node)
{
  if (s->fabric == SP_FABRIC_RAIL)
    return node / SP_LEAF_PORTS;
  return (guint32) (((guint64) node * s->nics_per_node) / SP_LEAF_PORTS);
}

/* The node's network rate and the ring's bus bandwidth from the shape's
 * intra and NIC rates (README-model §3). */
static void
shape_ring_rates (SpShape *sh)
{
  sh->node_net_gbs = sh->nics_used * sh->nic_gbs;
  if (sh->nodes <= 1)
    sh->ring_gbs = sh->intra_gbs;
  else if (sh->ppn == 1)
    sh->ring_gbs = sh->node_net_gbs;
  else
    sh->ring_gbs = MIN (sh->intra_gbs, sh->node_net_gbs);
}

gboolean
sp_shape_init (SpShape *sh, const SpTopoSpec *s, const guint32 *ranks, guint32 n, GError **error)
{
  return sp_shape_init_model (sh, s, ranks, n, SP_SIM_DES, error);
}

gboolean
sp_shape_init_model (SpShape *sh, const SpTopoSpec *s, const guint32 *ranks, guint32 n,
                     SpSimModel model, GError **error)
{
  memset (sh, 0, sizeof *sh);
  guint64 world = (guint64) s->nodes * s->gpus_per_node;
  if (n == 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT, "a collective needs at least one rank");
      return FALSE;
    }
  guint32 *sorted = g_new (guint32, n);
  memcpy (sorted, ranks, n * sizeof *sorted);
  qsort (sorted, n, sizeof *sorted, cmp_u32);
  for (guint32 i = 0; i < n; i++)
    {
      if (sorted[i] >= world)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                       "rank %u is outside the topology (world size %" G_GUINT64_FORMAT ")",
                       sorted[i], world);
          g_free (sorted);
          return FALSE;
        }
      if (i > 0 && sorted[i] == sorted[i - 1])
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                       "rank %u appears twice in the group", sorted[i]);
          g_free (sorted);
          return FALSE;
        }
    }
  guint32 g = s->gpus_per_node;
  guint32 nodes = 0, ppn = 0, run = 0, fewest = G_MAXUINT32;
  for (guint32 i = 0; i < n; i++)
    {
      if (i == 0 || sorted[i] / g != sorted[i - 1] / g)
        {
          if (i > 0)
            fewest = MIN (fewest, run);
          nodes++;
          run = 0;
        }
      run++;
      ppn = MAX (ppn, run);
    }
  fewest = MIN (fewest, run);
  g_free (sorted);

  sh->spec = s;
  sh->arch = sp_sim_arch_of (s->gpu_model);
  sh->cc = sp_topo_gpu_compute_capability (s->gpu_model);
  sh->n = n;
  sh->nodes = nodes;
  sh->ppn = ppn;
  sh->remote_max = n - fewest;

  /* NICs of the group on the first member's node; peers of the first
   * member over NVLink vs PCIe; its remote peers inside its leaf. */
  guint32 node0 = ranks[0] / g, local0 = ranks[0] % g;
  guint32 nics = s->nics_per_node;
  gboolean *used = g_new0 (gboolean, nics);
  guint32 same_leaf_ranks = 0;
  guint32 leaf0 = leaf_of_node (s, node0);
  for (guint32 i = 0; i < n; i++)
    {
      guint32 node = ranks[i] / g, local = ranks[i] % g;
      if (node == node0)
        {
          guint32 first = (guint32) ((guint64) local * nics / g);
          guint32 count = nics >= g ? nics / g : 1;
          for (guint32 k = 0; k < count && first + k < nics; k++)
            used[first + k] = TRUE;
          if (i > 0 && ranks[i] != ranks[0])
            {
              if (s->intra_kind == SP_INTRA_NVLINK && !sp_sim_mesh_neighbours (g, local0, local))
                sh->intra_far++;
              else
                sh->intra_near++;
            }
        }
      else if (s->fabric != SP_FABRIC_SINGLE_SWITCH && leaf_of_node (s, node) == leaf0)
        same_leaf_ranks++;
    }
  for (guint32 k = 0; k < nics; k++)
    sh->nics_used += used[k] ? 1 : 0;
  g_free (used);
  sh->gpu_nics = nics >= g ? nics / g : 1;
  guint32 remote = n - (sh->intra_near + sh->intra_far + 1);
  /* The leaf's uplinks: a share f of the rank's remote traffic leaves the
   * leaf; the group's NICs on the leaf send at most ports × rate /
   * oversubscription up, so each NIC's rate is scaled by
   * min(1, ports / (oversubscription × f × active NICs)). */
  sh->net_leaf_factor = 1.0;
  sh->leaf_nodes = 0;
  if (s->fabric != SP_FABRIC_SINGLE_SWITCH && remote > 0)
    {
      double f = 1.0 - MIN ((double) same_leaf_ranks, (double) remote) / remote;
      double group_nodes_in_leaf = (double) same_leaf_ranks / ppn + 1;
      if (s->fabric == SP_FABRIC_RAIL)
        {
          sh->leaf_nodes = SP_LEAF_PORTS;
          sh->leaf_active = group_nodes_in_leaf;
        }
      else
        {
          sh->leaf_nodes = MAX (1, SP_LEAF_PORTS / nics);
          sh->leaf_active = group_nodes_in_leaf * sh->nics_used;
        }
      if (f > 0)
        sh->net_leaf_factor = MIN (1.0, SP_LEAF_PORTS / (s->oversubscription * f * sh->leaf_active));
    }

  sh->nccl = model == SP_SIM_NCCL;
  sh->amd_host = sp_sim_host_cpu (s) == SP_HOST_CPU_AMD;
  sh->arm_host = sp_sim_host_cpu (s) == SP_HOST_CPU_ARM;
  sp_sim_link_rates (s, &sh->intra_gbs, &sh->nic_gbs);
  /* p2p traffic (all-to-all, send) moves NCCL_P2P_NET_CHUNKSIZE messages:
   * its own rate, not the ring's larger steps' (calibrated or not) */
  sh->p2p_net_factor = 1.0;
  sh->ll_net_factor = 1.0;
  if (sh->nccl)
    sh->nic_gbs = s->nic_gbps / 8.0 * SP_NET_EFFICIENCY;
  else
    {
      sh->p2p_net_factor = message_factor (s, transport_model (s)->p2p_chunk_bytes);
      sh->ll_net_factor = message_factor (s, SP_LL_STEP_WIRE_BYTES);
    }
  /* read by every cost: once per shape, not a GPU-name search per call */
  sh->msg_overhead_us = msg_overhead_us (s);
  sh->net_latency_us = transport_latency_us (s, sh->nccl);
  shape_ring_rates (sh);
  sh->n_channels = model_channels (s, sh->arch);
  return TRUE;
}

void
sp_sim_link_rates (const SpTopoSpec *s, double *out_intra_gbs, double *out_nic_gbs)
{
  double eff;
  switch (s->intra_kind)
    {
    case SP_INTRA_NVSWITCH:
    case SP_INTRA_NVLINK:
      eff = sp_nccl_nvlink_efficiency (sp_topo_gpu_compute_capability (s->gpu_model),
                                       sp_sim_arch_of (s->gpu_model));
      break;
    case SP_INTRA_PCIE:
      eff = SP_PCIE_EFFICIENCY;
      break;
    default:
      eff = 1.0; /* shm: the topology's number is a measured copy rate */
      break;
    }
  /* a calibrated topology ([calibration], topo.h) replaces the derived
   * efficiencies with fitted ones */
  if (s->cal_intra_efficiency > 0)
    eff = s->cal_intra_efficiency;
  double nic_eff = s->cal_nic_efficiency > 0
                       ? s->cal_nic_efficiency
                       : message_efficiency (s, transport_model (s)->step_bytes);
  *out_intra_gbs = s->intra_bandwidth_gbs * eff;
  *out_nic_gbs = s->nic_gbps / 8.0 * nic_eff;
}

static SpHwLink
intra_hw (const SpTopoSpec *s)
{
  return (s->intra_kind == SP_INTRA_NVSWITCH || s->intra_kind == SP_INTRA_NVLINK) ? SP_HW_NVLINK
                                                                                : SP_HW_PCI;
}

double
sp_sim_intra_hop_us (const SpTopoSpec *s)
{
  if (s->intra_latency_us >= 0)
    return s->intra_latency_us;
  return sp_nccl_hw_latency_us (intra_hw (s), SP_ALGO_RING, SP_PROTO_LL);
}

double
sp_sim_inter_hop_us (const SpTopoSpec *s)
{
  if (s->inter_latency_us >= 0)
    return s->inter_latency_us;
  return sp_nccl_hw_latency_us (SP_HW_NET, SP_ALGO_RING, SP_PROTO_LL);
}

/* Per-hop latencies: the Ring/LL hop (the topology's latency_us, or NCCL's
 * hwLatencies for the link when it gives none); NCCL's table supplies what
 * other (algo, proto) add on top of that.  A network hop also pays the
 * transport's latency, twice with Simple (tuning.cc: the net plugin's
 * latency, again for the flush). */
static double
hop_intra (const SpShape *sh, SpAlgo algo, SpProto proto)
{
  SpHwLink hw = intra_hw (sh->spec);
  return sp_sim_intra_hop_us (sh->spec) + sp_nccl_hw_latency_us (hw, algo, proto)
         - sp_nccl_hw_latency_us (hw, SP_ALGO_RING, SP_PROTO_LL);
}

/* One network hop.  NCCL flushes each Simple receive over GPUDirect RDMA
 * (a loopback RDMA read) on GPUs below sm90, and on sm90+ only where the
 * NIC hangs off the GPU's C2C link to a Grace host (reference/nccl-
 * transports.md §2.4, ncclTopoNeedFlush); the socket transport (tcp)
 * stages through host memory, no GPUDirect, no flush.  NCCL's formula adds
 * the net plugin's latency a second time for Simple for that flush
 * (reference/nccl-cost-model.md §1.4); our cost does so only where the
 * flush happens. */
static double
hop_net (const SpShape *sh, SpAlgo algo, SpProto proto)
{
  double t = sh->net_latency_us;
  gboolean flushes = sh->spec->transport != SP_TRANSPORT_TCP && (sh->cc < 90 || sh->arm_host);
  gboolean twice = proto == SP_PROTO_SIMPLE && t > 0 && (sh->nccl || flushes);
  return sp_sim_inter_hop_us (sh->spec) + sp_nccl_hw_latency_us (SP_HW_NET, algo, proto)
         - sp_nccl_hw_latency_us (SP_HW_NET, SP_ALGO_RING, SP_PROTO_LL) + t * (twice ? 2 : 1);
}

static double
log2_floor (guint32 v)
{
  double r = 0;
  while (v > 1)
    {
      v >>= 1;
      r += 1;
    }
  return r;
}

gboolean
sp_sim_coll_supported (SpColl c)
{
  return c == SP_COLL_ALL_REDUCE || c == SP_COLL_ALL_GATHER || c == SP_COLL_REDUCE_SCATTER
         || c == SP_COLL_BROADCAST || c == SP_COLL_REDUCE || c == SP_COLL_ALL_TO_ALL
         || c == SP_COLL_SEND || c == SP_COLL_RECV || c == SP_COLL_P2P;
}

gboolean
sp_cost_enabled (const SpShape *sh, SpColl coll, SpAlgo algo, SpProto proto, const char **why)
{
  const char *dummy;
  if (why == NULL)
    why = &dummy;
  gboolean nvlink_class = sh->spec->intra_kind == SP_INTRA_NVSWITCH
                          || sh->spec->intra_kind == SP_INTRA_NVLINK;
  gboolean rs_ag = coll == SP_COLL_ALL_GATHER || coll == SP_COLL_REDUCE_SCATTER;
  if (coll == SP_COLL_ALL_TO_ALL || sp_sim_is_p2p (coll))
    {
      *why = "all_to_all and send use the direct algorithm with ll or simple";
      return algo == SP_ALGO_DIRECT && proto != SP_PROTO_LL128;
    }
  /* NCCL_PROTO naming a collective turns LL128 on outright there, past
   * NCCL's platform rule below (topo.h); not for CPU ranks (MPI). */
  gboolean ll128_forced = proto == SP_PROTO_LL128 && sh->spec->intra_kind != SP_INTRA_SHM
                          && sp_topo_spec_nccl_ll128_forced (sh->spec, coll);
  if (proto == SP_PROTO_LL128 && !nvlink_class && !ll128_forced)
    {
      *why = "ll128 needs an NVLink-class intra-node fabric (NCCL enables it only there)";
      return FALSE;
    }
  /* graph/tuning.cc: LL128 not below sm70 (reference/nccl-transports.md
   * §5, "LL128 default enablement"; a GPU shardplan does not know is taken
   * as an A100) */
  if (proto == SP_PROTO_LL128 && !ll128_forced && sh->cc != 0 && sh->cc < 70)
    {
      *why = "ll128: NCCL enables it on sm70 and later GPUs only";
      return FALSE;
    }
  /* graph/tuning.cc: LL128 only while the GPU-NIC path is <= PXB (PXN and
   * C2C too on sm90+, which the default of a Grace part stands for). */
  if (proto == SP_PROTO_LL128 && sh->nodes > 1 && sp_sim_nic_path (sh->spec) > SP_NIC_PATH_PXB
      && !ll128_forced)
    {
      *why = "ll128 across nodes needs NICs under the GPUs' PCIe switches ([inter] nic_path pix "
             "or pxb; NCCL enables it only there)";
      return FALSE;
    }
  switch (algo)
    {
    case SP_ALGO_RING:
      *why = "ring";
      return coll == SP_COLL_ALL_REDUCE || rs_ag || coll == SP_COLL_BROADCAST
             || coll == SP_COLL_REDUCE;
    case SP_ALGO_TREE:
      *why = "tree is an all_reduce algorithm";
      return coll == SP_COLL_ALL_REDUCE;
    case SP_ALGO_NVLS:
    case SP_ALGO_NVLS_TREE:
      if (sh->spec->intra_kind != SP_INTRA_NVSWITCH || sp_nccl_nvls_efficiency (sh->arch) <= 0)
        {
          *why = "nvls and nvls_tree need NVSwitch nodes of Hopper or Blackwell GPUs";
          return FALSE;
        }
      if (proto != SP_PROTO_SIMPLE || sh->ppn < 2 || sh->n_channels < 2
          || sh->n != sh->nodes * sh->ppn)
        {
          *why = "nvls and nvls_tree need the simple protocol and the same number (>= 2) of ranks "
                 "on each node";
          return FALSE;
        }
      if (algo == SP_ALGO_NVLS_TREE)
        {
          /* NVLS inside each node, a tree over the nodes' NICs
           * (reference/nccl-transports.md §2.6; all-reduce only). */
          *why = "nvls_tree serves all_reduce over several nodes";
          return sh->nodes > 1 && coll == SP_COLL_ALL_REDUCE;
        }
      /* Across nodes NCCL runs NVLS only with CollNet (SHARP), which this
       * model does not implement; without it an all-reduce runs NVLSTree. */
      *why = "nvls serves all_reduce, all_gather and reduce_scatter within one node "
             "(across nodes NCCL needs CollNet / SHARP for it; all_reduce runs nvls_tree)";
      return sh->nodes == 1 && (coll == SP_COLL_ALL_REDUCE || rs_ag);
    case SP_ALGO_PAT:
      *why = "pat serves all_gather / reduce_scatter with one rank per node over several nodes, "
             "simple protocol";
      return rs_ag && sh->ppn == 1 && sh->nodes > 1 && proto == SP_PROTO_SIMPLE;
    default:
      *why = "this model implements ring, tree, nvls, nvls_tree, pat and direct";
      return FALSE;
    }
}

/* NCCL's NVLS channel count (search.cc; reference/nccl-transports.md
 * §2.6): 16 on sm90, 24 on sm100 within a node, 32 across nodes. */
static double
nvls_channels (const SpShape *sh)
{
  if (sh->arch >= SP_ARCH_BLACKWELL)
    return sh->nodes > 1 ? SP_NVLS_CHANNELS_SM100_NODES : SP_NVLS_CHANNELS_SM100;
  return SP_NVLS_CHANNELS_SM90;
}

/* The chunk NCCL's NVLS / NVLSTree pipeline moves per step for S bytes
 * (src/enqueue.cc; reference/nccl-transports.md §2.6), heads = the node's
 * GPUs, each threshold tested in order against the chunk as it has shrunk
 * so far.  NVLS: from 128 KiB, 64 KiB below 64 × C × heads × chunk, then
 * 32 KiB below 8 ×, 16 KiB below 2 ×.  NVLSTree: from 128 KiB (64 KiB from
 * 4 nodes on), then 256 / 128 / 64 / 32 KiB below 32 / 16 / 4 / 1 ×. */
static double
nvls_chunk (const SpShape *sh, double S, gboolean tree)
{
  static const double nvls_steps[][2] = { { 64, 65536 }, { 8, 32768 }, { 2, 16384 } };
  static const double tree_steps[][2] = { { 32, 262144 }, { 16, 131072 }, { 4, 65536 }, { 1, 32768 } };
  double unit = nvls_channels (sh) * sh->ppn;
  double c = tree && sh->nodes >= 4 ? SP_NVLS_TREE_CHUNK_4NODES : SP_NVLS_CHUNK_BYTES;
  const double (*steps)[2] = tree ? tree_steps : nvls_steps;
  guint n = tree ? G_N_ELEMENTS (tree_steps) : G_N_ELEMENTS (nvls_steps);
  for (guint i = 0; i < n; i++)
    if (S < steps[i][0] * unit * c && c > steps[i][1])
      c = steps[i][1];
  return c;
}

/* The busiest node of NCCL's double binary tree over `nodes` nodes, in
 * units of the buffer S it sends each way (README-model §4): every tree
 * edge carries S/2; a node has 4 edges from 4 nodes on, 3 with 3 nodes, 2
 * with 2 — so 2, 1.5 or 1 × S; none on one node. */
static double
tree_node_load (guint32 nodes)
{
  return nodes >= 4 ? 2 : nodes == 3 ? 1.5 : nodes == 2 ? 1 : 0;
}

/* The threads NCCL counts per channel when it drops channels for small
 * messages (reference/nccl-transports.md §3.3: Simple's
 * NCCL_SIMPLE_MAX_NTHREADS, 512; the launched block's extra warps come
 * after) and Simple's threshold, 64 B per thread: below nc × 512 × 64 B =
 * nc × 32 KiB, NCCL launches fewer channels. */
#define SP_TREE_THREADS 512.0
#define SP_SIMPLE_THREAD_THRESHOLD 64.0
/* LL's ring threshold per thread (NCCL_LL_THREAD_THRESHOLD, times the
 * ranks for rings: tuning.cc); LL128's (NCCL_LL128_THREAD_THRESHOLD), its
 * threads (NCCL_LL128_MAX_NTHREADS) and its step (NCCL_LL128_ELEMS_PER_THREAD
 * 120 × 640 threads × 8 B: src/include/device.h). */
#define SP_LL_THREAD_THRESHOLD 8.0
#define SP_LL128_THREAD_THRESHOLD 8.0
#define SP_LL128_THREADS 640.0
#define SP_LL128_STEP_BYTES (120.0 * 640 * 8)

/* The channels NCCL launches for S bytes (enqueue.cc, topoGetAlgoInfo):
 * one fewer than its channel count while S is below channels × `per`, the
 * bytes a channel's threads take on (threads × the protocol's threshold
 * per thread); at least one. */
static double
launched_channels (const SpShape *sh, double S, double per)
{
  double nc = sh->n_channels;
  while (nc > 1 && S < nc * per)
    nc--;
  return nc;
}

/* The pipeline steps of a Simple tree all-reduce of S bytes: its first
 * chunk's 2 × depth steps up and down (the node's chain, depth = GPUs per
 * node − 1 + log2(nodes), as NCCL's tree.depth), one more per further
 * chunk of a channel.  The chunk is NCCL's (src/enqueue.cc, "Optimize
 * chunkSize / nSteps" for the tree's up-down pattern): from the transport's
 * step (512 KiB; 1 MiB where aws-ofi-nccl doubles NCCL_BUFFSIZE), halved
 * while S / (channels × chunk) is below 8 × depth and the chunk above 128
 * KiB, below 4 × depth above 64 KiB, below depth above 32 KiB — the
 * channels those NCCL launches for S (above). */
static double
tree_simple_steps (const SpShape *sh, double S)
{
  double depth = (sh->ppn - 1) + log2_floor (sh->nodes);
  double nc = launched_channels (sh, S, SP_TREE_THREADS * SP_SIMPLE_THREAD_THRESHOLD);
  double chunk = transport_model (sh->spec)->step_bytes;
  while (floor (S / (nc * chunk)) < depth * 8 && chunk > 131072)
    chunk /= 2;
  while (floor (S / (nc * chunk)) < depth * 4 && chunk > 65536)
    chunk /= 2;
  while (floor (S / (nc * chunk)) < depth && chunk > 32768)
    chunk /= 2;
  double chunks = MAX (1.0, ceil (S / (nc * chunk)));
  return 2 * depth + chunks - 1;
}

/* The store-and-forward fill of a broadcast or reduce chain of S bytes
 * with `proto`, in µs; *slices: the slices each channel moves.  NCCL
 * launches a channel per `thr` bytes up to its channel count (Simple 512
 * threads × 64 B; LL 512 × 8 B × n, its ring threshold times the ranks;
 * LL128 640 × 8 B: enqueue.cc, tuning.cc) and cuts each channel's share
 * into slices of at most one step (Simple: the transport's, NCCL_BUFFSIZE /
 * NCCL_STEPS = 512 KiB, 1 MiB on EFA, as the tree's chunk above; LL: 32 KiB
 * of payload; LL128: 614,400 B of which 120 / 128 payload).  A hop forwards a slice only once all of
 * it has arrived where the receiver or the sending proxy waits for a whole
 * step: every hop with Simple (the receiver waits on the tail), only the
 * network hops with LL and LL128 (the proxy checks every LL line's flag,
 * or LL128's tail through GPUDirect, before it sends; between GPUs their
 * lines carry their own flags and move on one by one).  A channel runs at
 * 1 / nChannels of eff × intra on an NVLink hop, and on a network hop at
 * its share of eff × the node's NICs among the nc channels launched (a NIC
 * to itself while nc is below the NICs), both under the protocol's cap
 * `cap` (busBw, GB/s), split the same ways.  The bytes' term S / busBw
 * streams one slice through the slowest link; the fill is the first
 * slice's time through every hop that holds it whole, less the slowest of
 * those. */
static double
chain_fill_us (const SpShape *sh, SpProto proto, double S, double eff, double cap,
               double *slices)
{
  double n = sh->n, nch = sh->n_channels;
  double hops_net = sh->nodes > 1 ? sh->nodes - 1.0 : 0, hops_intra = n - 1 - hops_net;
  double thr, step;
  switch (proto)
    {
    case SP_PROTO_LL:
      thr = SP_TREE_THREADS * SP_LL_THREAD_THRESHOLD * n;
      step = SP_LL_STEP_WIRE_BYTES / 2;
      break;
    case SP_PROTO_LL128:
      thr = SP_LL128_THREADS * SP_LL128_THREAD_THRESHOLD;
      step = SP_LL128_STEP_BYTES * 120.0 / 128.0;
      break;
    default:
      thr = SP_TREE_THREADS * SP_SIMPLE_THREAD_THRESHOLD;
      step = transport_model (sh->spec)->step_bytes;
      break;
    }
  double nc = launched_channels (sh, S, thr);
  double per_channel = S / nc;
  double slice = MIN (per_channel, step);
  *slices = per_channel <= step ? 1 : ceil (per_channel / step);
  /* ns for one slice through one hop of each kind that holds it whole; a
   * network hop's channel has its share of the node's NICs among the
   * channels launched (a NIC to itself while they are fewer than the
   * NICs) and of the GPU's cap */
  double t_net = 0, t_intra = 0;
  if (hops_net > 0 && sh->node_net_gbs > 0)
    {
      /* a slice striped over k rails (EFA's RDMA protocol) holds k NICs */
      double nics = MAX (1.0, (double) sh->nics_used / message_stripes (sh->spec, slice));
      t_net = slice / MIN (eff * sh->node_net_gbs / MAX (nc, nics), cap / nc);
    }
  if (proto == SP_PROTO_SIMPLE && hops_intra > 0 && sh->intra_gbs > 0)
    t_intra = slice * nch / MIN (eff * sh->intra_gbs, cap);
  double t = hops_net * t_net + hops_intra * t_intra;
  return MAX (0.0, t - MAX (t_net, t_intra)) / 1000.0;
}

static void
cost_compute_model (const SpShape *sh, SpColl coll, guint64 bytes, SpAlgo algo, SpProto proto,
                    SpCost *c)
{
  double n = sh->n, nodes = sh->nodes, nch = sh->n_channels;
  double S = (double) bytes;
  memset (c, 0, sizeof *c);
  c->algo = algo;
  c->proto = proto;
  c->cap_busbw = INFINITY;
  c->eff = 1.0;
  double ratio = 1.0; /* algBw / busBw */
  double base = sh->ring_gbs;
  double lat = 0;
  switch (algo)
    {
    case SP_ALGO_RING:
      {
        double nsteps = coll == SP_COLL_ALL_REDUCE ? 2 * (n - 1)
                        : (coll == SP_COLL_ALL_GATHER || coll == SP_COLL_REDUCE_SCATTER) ? n - 1 : n;
        ratio = n / nsteps;
        if (proto == SP_PROTO_LL)
          {
            c->eff = SP_EFF_LL;
            c->cap_busbw = sp_nccl_ll_max_bw (sh->arch, sh->nodes, sh->amd_host);
          }
        else if (proto == SP_PROTO_LL128)
          {
            c->eff = SP_EFF_LL128;
            c->cap_busbw = nch * sp_nccl_ring_ll128_per_ch_bw (sh->arch, sh->nodes);
          }
        double b0 = sp_nccl_base_latency_us (algo, proto);
        if ((coll == SP_COLL_BROADCAST || coll == SP_COLL_REDUCE) && sh->nccl)
          {
            /* NCCL's own view (tuning.cc, sameChannels): one hop, whatever
             * the ring's length */
            SpAlgo row = proto == SP_PROTO_SIMPLE ? SP_ALGO_TREE : SP_ALGO_RING;
            lat = b0 + (sh->nodes > 1 ? hop_net (sh, row, proto) : hop_intra (sh, row, proto));
          }
        else
          {
            /* A ring's n − 1 steps (all-reduce 2(n − 1)); a broadcast or
             * reduce is a chain (README-model §4, "ring broadcast and
             * reduce"): the root's bytes cross its n − 1 hops in turn.
             * nodes − 1 of them (all-reduce 2(nodes − 1)) are between
             * nodes. */
            gboolean chain = coll == SP_COLL_BROADCAST || coll == SP_COLL_REDUCE;
            double hops = chain ? n - 1 : nsteps;
            double intra = hop_intra (sh, SP_ALGO_RING, proto);
            double inter = hop_net (sh, sh->ppn == 1 ? SP_ALGO_TREE : SP_ALGO_RING, proto);
            double n_inter = 0;
            if (sh->nodes > 1)
              {
                /* NCCL's netOverhead: a ring's steps move in lockstep
                 * with its network steps; a chain's NVLink hops do not
                 * wait on a proxy */
                double ovh = (sh->amd_host ? SP_NET_OVERHEAD_AMD_US : SP_NET_OVERHEAD_US)
                             * (proto == SP_PROTO_SIMPLE ? 3 : 1);
                if (!chain)
                  intra = MAX (intra, ovh);
                n_inter = coll == SP_COLL_ALL_REDUCE ? 2 * (nodes - 1) : nodes - 1;
              }
            lat = b0 + (hops - n_inter) * intra + n_inter * inter;
            double per_step = step_floor_us (sh, proto);
            if (chain)
              {
                double slices;
                lat += chain_fill_us (sh, proto, S, c->eff, c->cap_busbw, &slices);
                /* the step floor: the first slice's network hops in turn,
                 * then one more per further slice of a channel */
                if (per_step > 0)
                  c->floor_us = b0 + (n_inter - 1 + slices) * per_step;
              }
            /* every one of the ring's steps takes at least the
             * transport's step floor; NCCL's formula does not know it */
            else if (per_step > 0)
              c->floor_us = b0 + hops * per_step;
            if (coll == SP_COLL_ALL_REDUCE && proto == SP_PROTO_SIMPLE && sh->nodes > 1
                && S / (nch * n) >= 64)
              lat *= sh->arch >= SP_ARCH_AMPERE ? SP_RING_PLATEAU_SM80 : SP_RING_PLATEAU_OLD;
          }
        break;
      }
    case SP_ALGO_TREE:
      {
        double tree_cap = nch * sp_nccl_tree_per_ch_bw (sh->arch, sh->nodes);
        c->eff = SP_EFF_TREE;
        c->cap_busbw = tree_cap;
        if (proto == SP_PROTO_LL)
          {
            c->eff = SP_EFF_TREE / SP_TREE_LL_DIV;
            c->cap_busbw = MIN (tree_cap / SP_TREE_LL_DIV,
                                sp_nccl_ll_max_bw (sh->arch, sh->nodes, sh->amd_host));
          }
        else if (proto == SP_PROTO_LL128)
          {
            double f = sh->nodes == 1 ? SP_TREE_LL128_1NODE : SP_TREE_LL128_NODES;
            c->eff = SP_EFF_TREE * f;
            c->cap_busbw = MIN (tree_cap * f, nch * sp_nccl_tree_ll128_per_ch_bw (sh->arch, sh->nodes));
          }
        double cf = sp_nccl_tree_correction (proto, bytes);
        c->eff *= cf;
        c->cap_busbw *= cf;
        c->ratio = 0.5; /* NCCL's algBw = busBw / 2: what the caps mean */
        lat = sp_nccl_base_latency_us (algo, proto)
              + 2 * ((sh->ppn - 1) * hop_intra (sh, SP_ALGO_TREE, proto)
                     + log2_floor (sh->nodes) * hop_net (sh, SP_ALGO_TREE, proto));
        double per_step = step_floor_us (sh, proto);
        if (per_step > 0)
          c->floor_us = sp_nccl_base_latency_us (algo, proto) + tree_simple_steps (sh, S) * per_step;
        /* Busiest port, in units of the buffer S (README-model §4): a GPU
         * inside the node's chain sends S up and S down (2), the chain's
         * ends 1; a node of NCCL's double binary tree sends S/2 per tree
         * edge: 2 from 4 nodes on, 1.5 for 3 nodes, 1 for 2.  NCCL's own
         * model always takes 2. */
        double load_intra = sh->ppn >= 3 ? 2 : sh->ppn == 2 ? 1 : 0;
        double load_net = tree_node_load (sh->nodes);
        if (sh->nccl) /* NCCL's own model: algBw = busBw / 2 whatever the shape */
          load_intra = load_net = 2;
        double inv = 2.0 / c->cap_busbw; /* ns per byte at the capped rate */
        if (load_intra > 0)
          inv = MAX (inv, load_intra / (c->eff * sh->intra_gbs));
        if (load_net > 0)
          inv = MAX (inv, load_net / (c->eff * sh->node_net_gbs));
        c->algbw = 1.0 / inv;
        c->latency_us = lat;
        c->time_us = MAX (lat + S / (1000.0 * c->algbw), c->floor_us);
        return;
      }
    case SP_ALGO_NVLS:
    case SP_ALGO_NVLS_TREE:
      {
        double e = sh->nccl ? sp_nccl_nvls_efficiency (sh->arch) : SP_NVLS_EFF;
        double k = sh->ppn;
        double nvls_ch = nvls_channels (sh);
        gboolean tree = algo == SP_ALGO_NVLS_TREE;
        double alg = coll == SP_COLL_ALL_REDUCE ? e * sh->intra_gbs * k / (k + 1) : e * sh->intra_gbs;
        if (sh->nccl && !tree)
          {
            /* NCCL's own (tuning.cc, 2.28+; reference/nccl-cost-model.md
             * §1.3): per channel bwIntra·e·(C−1)/C, ×2 for all-reduce,
             * ×(k−1)/k otherwise, times C channels; all-reduce's busBw then
             * becomes algBw by n/(2(n−1)), AG/RS's is already one.  With
             * C·bwIntra = the GPU's NVLink rate as NCCL rates it. */
            double per = e * (nvls_ch - 1) / nvls_ch * sh->intra_gbs;
            alg = coll == SP_COLL_ALL_REDUCE ? per * k / (k - 1) : per * (k - 1) / k;
          }
        else if (sh->nccl)
          {
            /* NVLSTree in NCCL's formula (same section): busBw =
             * nChannels · min(2·bwIntra·e·(C−1)/C, bwInter (×2 on at most
             * 2 nodes), perChMaxNVLSTreeBw); algBw = busBw · n / (2(n−1)).
             * The NVLS graph has one head per local GPU (src/graph/
             * search.cc), each with its share of the node's NICs as NCCL
             * rates them: the network side is heads × min(share,
             * perChMaxNVLSTreeBw). */
            double intra = 2 * e * (nvls_ch - 1) / nvls_ch * sh->intra_gbs;
            double per_head = sh->node_net_gbs / k * (sh->nodes <= 2 ? 2 : 1);
            double inter = k * MIN (per_head, sp_nccl_nvls_tree_per_ch_bw (sh->arch, sh->nodes));
            double busbw = MIN (intra, inter);
            /* 2.29+: the tree's size correction also for NVLSTree on
             * Blackwell with x86 hosts (reference/nccl-cost-model.md §1.2) */
            if (sh->arch >= SP_ARCH_BLACKWELL && !sh->arm_host)
              busbw *= sp_nccl_tree_correction (proto, bytes);
            alg = busbw * n / (2 * (n - 1));
          }
        else
          {
            /* the per-chunk cost as a rate factor: t_chunk per chunk of
             * each channel against the chunk's bytes at the full rate */
            double chunk = nvls_chunk (sh, S, tree);
            double m = 1.0 / (1.0 + SP_NVLS_CHUNK_US * 1000.0 * alg / (nvls_ch * chunk));
            e *= m;
            alg *= m;
            if (tree)
              {
                /* the tree over the nodes: every GPU is a head that sends
                 * its 1/k of the buffer through its own NICs; a node's
                 * NICs together carry what a node of the tree does */
                alg = MIN (alg, sh->node_net_gbs / tree_node_load (sh->nodes));
              }
          }
        c->eff = e;
        if (tree)
          lat = sp_nccl_base_latency_us (algo, proto) + hop_intra (sh, algo, proto)
                + 2 * log2_floor (sh->nodes) * hop_net (sh, algo, proto);
        else
          lat = hop_intra (sh, algo, proto); /* NVLS runs inside one node only */
        c->latency_us = lat;
        c->algbw = alg;
        c->time_us = lat + S / (1000.0 * alg);
        return;
      }
    case SP_ALGO_PAT:
      {
        c->eff = SP_EFF_PAT;
        c->ratio = n / (n - 1);
        lat = sp_nccl_base_latency_us (algo, proto)
              + log2_floor (sh->nodes) * hop_net (sh, SP_ALGO_PAT, proto) / 3.5 + 2.8 * n;
        /* log2(n) Bruck phases at distance d = 2^k, min(d, n-d) blocks of S/n
         * each; a phase whose partners leave the leaf shares its uplinks
         * (the first leaf's ranks stand for all). */
        double t_ns = 0;
        guint32 nn = sh->n;
        for (guint32 d = 1; d < nn; d <<= 1)
          {
            double blocks = MIN (d, nn - d), factor = 1.0;
            if (sh->leaf_nodes > 0)
              {
                guint32 P = MIN (sh->leaf_nodes, nn), cross = 0;
                for (guint32 i = 0; i < P; i++)
                  cross += ((i + nn - d) % nn) / sh->leaf_nodes != 0;
                double fc = (double) cross / P;
                if (fc > 0)
                  factor = MIN (1.0, SP_LEAF_PORTS / (sh->spec->oversubscription * fc * sh->leaf_active));
              }
            t_ns += blocks * S / n / (c->eff * sh->ring_gbs * factor);
          }
        c->latency_us = lat;
        c->algbw = S / t_ns;
        c->time_us = lat + t_ns / 1000.0;
        return;
      }
    case SP_ALGO_DIRECT:
    default:
      {
        c->eff = proto == SP_PROTO_LL ? SP_EFF_LL : 1.0;
        double t; /* µs of pure transfer at full rate */
        gboolean remote;
        if (sp_sim_is_p2p (coll))
          {
            remote = sh->nodes > 1;
            double rate = remote ? sh->gpu_nics * sh->nic_gbs
                                 : (sh->intra_far ? SP_PCIE_FALLBACK_GBS : sh->intra_gbs);
            if (remote)
              c->eff *= sh->p2p_net_factor;
            t = S / (1000.0 * c->eff * rate);
          }
        else
          {
            double per_peer = S / n;
            double near = sh->intra_near * per_peer / sh->intra_gbs;
            double far = sh->intra_far * per_peer / SP_PCIE_FALLBACK_GBS;
            double n_remote = n - 1 - sh->intra_near - sh->intra_far;
            remote = n_remote > 0;
            double net_rate = sh->node_net_gbs / sh->ppn;
            net_rate *= sh->net_leaf_factor;
            double net = remote ? n_remote * per_peer / net_rate : 0;
            /* p2p messages are smaller than ring steps: the network part
             * runs at p2p_net_factor of the ring rate (README-model §2);
             * the whole transfer is charged at that efficiency, as the
             * des model inflates every flow of the collective by it. */
            if (remote)
              c->eff *= sh->p2p_net_factor;
            t = MAX (MAX (near, far), net) / (1000.0 * c->eff);
          }
        lat = sp_nccl_base_latency_us (SP_ALGO_DIRECT, proto)
              + (remote ? hop_net (sh, SP_ALGO_RING, proto) : hop_intra (sh, SP_ALGO_RING, proto));
        if (!sh->nccl && coll == SP_COLL_ALL_TO_ALL && remote)
          {
            /* The proxy thread of a GPU serves every remote peer's send and
             * receive in turn, half a message overhead each (δ, README-model
             * §2), and copies each small send (small_send_copy_us), so the
             * all-to-all cannot end before it has served them all once: a
             * floor under the transfer, which for large sizes already pays
             * δ per message through p2p_net_factor.  The rank with the most
             * remote peers (on the node with the fewest of the group's
             * ranks) ends last, whichever rank the group lists first. */
            double serve = sh->remote_max
                           * (sh->msg_overhead_us / 2
                              + small_send_copy_us (sh, proto, S / n));
            lat += MAX (0.0, serve - t);
          }
        else if (!sh->nccl && remote)
          lat += small_send_copy_us (sh, proto, S); /* one message */
        c->latency_us = lat;
        c->algbw = t > 0 ? S / (1000.0 * t) : INFINITY;
        c->time_us = lat + t;
        return;
      }
    }
  double busbw = MIN (c->eff * base, c->cap_busbw);
  c->ratio = ratio;
  c->algbw = busbw * ratio;
  c->latency_us = lat;
  /* the step floor binds where the bytes alone would be quicker */
  c->time_us = MAX (lat + S / (1000.0 * c->algbw), c->floor_us);
}

void
sp_cost_compute (const SpShape *sh, SpColl coll, guint64 bytes, SpAlgo algo, SpProto proto,
                 SpCost *c)
{
  /* LL across nodes: the network at LL's message size (above) */
  SpShape ll_view;
  double f = sp_cost_net_factor (sh, algo, proto);
  if (f != 1.0)
    {
      ll_view = *sh;
      ll_view.nic_gbs *= f;
      shape_ring_rates (&ll_view);
      sh = &ll_view;
    }
  cost_compute_model (sh, coll, bytes, algo, proto, c);
  /* a calibrated topology's per-protocol overhead (topo.h [calibration]) */
  double extra = (guint) proto < G_N_ELEMENTS (sh->spec->cal_overhead_us)
                     ? sh->spec->cal_overhead_us[proto] : 0.0;
  if (sh->arm_host && !sh->nccl)
    extra += SP_ARM_HOST_US;
  if (extra != 0)
    {
      double lat = MAX (0.0, c->latency_us + extra);
      c->time_us += lat - c->latency_us;
      if (c->floor_us > 0) /* the floor is a time too: it moves with it */
        c->floor_us = MAX (0.0, c->floor_us + lat - c->latency_us);
      c->latency_us = lat;
    }
}

/* The minimum of `sh`'s estimate over the combinations NCCL enables:
 * NCCL's own choice when `sh` is NCCL's view (sh->nccl). */
static gboolean
cost_choose_min (const SpShape *sh, SpColl coll, guint64 bytes, SpAlgo algo, SpProto proto,
                 SpCost *out, GError **error);

/* NCCL's choice as NCCL makes it (topoGetAlgoInfo): the minimum of its
 * own estimate, with NCCL's view of this group.  That view knows the
 * hardware's shape and nothing measured: its own per-hop tables (not a
 * given or calibrated latency_us), its link rates, no [calibration]. */
static gboolean
choose_in_nccl_view (const SpShape *sh, SpColl coll, guint64 bytes, SpAlgo algo, SpProto proto,
                     SpCost *out, GError **error)
{
  SpTopoSpec nspec = *sh->spec;
  nspec.intra_latency_us = SP_TOPO_LATENCY_UNSET;
  nspec.inter_latency_us = SP_TOPO_LATENCY_UNSET;
  nspec.cal_intra_efficiency = 0;
  nspec.cal_nic_efficiency = 0;
  memset (nspec.cal_overhead_us, 0, sizeof nspec.cal_overhead_us);
  SpShape view = *sh;
  view.spec = &nspec;
  view.nccl = TRUE;
  sp_sim_link_rates (&nspec, &view.intra_gbs, &view.nic_gbs);
  view.nic_gbs = nspec.nic_gbps / 8.0 * SP_NET_EFFICIENCY;
  shape_ring_rates (&view);
  view.p2p_net_factor = 1.0;
  view.ll_net_factor = 1.0;
  view.net_latency_us = transport_latency_us (&nspec, TRUE);
  return cost_choose_min (&view, coll, bytes, algo, proto, out, error);
}

gboolean
sp_cost_choose (const SpShape *sh, SpColl coll, guint64 bytes, SpAlgo algo, SpProto proto,
                SpCost *out, GError **error)
{
  if (sh->nccl)
    return cost_choose_min (sh, coll, bytes, algo, proto, out, error);
  /* NCCL runs what ITS model picks, whatever that costs in reality: choose
   * with NCCL's view, cost with ours.  Except on EFA: aws-ofi-nccl ships a
   * tuner plugin that fills NCCL's cost table from its own model of the
   * EFA network (src/tuner/nccl_ofi_model.cpp; reference/nccl-transports.md
   * §2.8), so the choice follows what the network really costs — ours.
   * The development set's EFA run shows it: p4de's 2-node all-reduce moves
   * 78 GB/s of bus bandwidth over 50 GB/s of NICs from 1 MiB up, which only
   * the tree (each node sends S once) can, where NCCL's formula picks the
   * ring. */
  SpCost pick;
  gboolean ok = sh->spec->transport == SP_TRANSPORT_EFA
                    ? cost_choose_min (sh, coll, bytes, algo, proto, &pick, error)
                    : choose_in_nccl_view (sh, coll, bytes, algo, proto, &pick, error);
  if (!ok)
    return FALSE;
  /* p2p has no cost model in NCCL: LL below NCCL_P2P_LL_THRESHOLD where the
   * connection has LL buffers — only inside a node: network p2p
   * connections get none (NCCL_ALLOC_P2P_NET_LL_BUFFERS = 0), so a
   * cross-node all-to-all or send is Simple at every size
   * (reference/nccl-transports.md §4.2).  The nccl model keeps the
   * threshold alone, as the project's closed form always had it. */
  if (pick.algo == SP_ALGO_DIRECT && proto == SP_PROTO_AUTO && sh->nodes > 1)
    pick.proto = SP_PROTO_SIMPLE;
  sp_cost_compute (sh, coll, bytes, pick.algo, pick.proto, out);
  return TRUE;
}

static gboolean
cost_choose_min (const SpShape *sh, SpColl coll, guint64 bytes, SpAlgo algo, SpProto proto,
                 SpCost *out, GError **error)
{
  static const SpAlgo algos[] = { SP_ALGO_TREE, SP_ALGO_RING, SP_ALGO_NVLS, SP_ALGO_NVLS_TREE,
                                  SP_ALGO_PAT, SP_ALGO_DIRECT };
  static const SpProto protos[] = { SP_PROTO_LL, SP_PROTO_LL128, SP_PROTO_SIMPLE };
  gboolean found = FALSE, nccl_refused = FALSE;
  const char *why = NULL;
  for (guint a = 0; a < G_N_ELEMENTS (algos); a++)
    {
      if (algo != SP_ALGO_AUTO && algos[a] != algo)
        continue;
      for (guint p = 0; p < G_N_ELEMENTS (protos); p++)
        {
          if (proto != SP_PROTO_AUTO && protos[p] != proto)
            continue;
          if (!sp_cost_enabled (sh, coll, algos[a], protos[p], &why))
            continue;
          /* [nccl] algo / proto (NCCL_ALGO / NCCL_PROTO) narrow what NCCL
           * may choose; an algorithm or protocol the caller names is used
           * whatever they say. */
          if (!sp_topo_spec_nccl_allows (sh->spec, coll, algo == SP_ALGO_AUTO ? algos[a] : SP_ALGO_AUTO,
                                         proto == SP_PROTO_AUTO ? protos[p] : SP_PROTO_AUTO))
            {
              nccl_refused = TRUE;
              continue;
            }
          /* direct all_to_all / send: LL below NCCL's p2p threshold */
          if (algos[a] == SP_ALGO_DIRECT && proto == SP_PROTO_AUTO)
            {
              guint64 per_peer = sp_sim_is_p2p (coll) ? bytes : bytes / MAX (sh->n, 1);
              SpProto want = per_peer <= SP_P2P_LL_THRESHOLD ? SP_PROTO_LL : SP_PROTO_SIMPLE;
              if (protos[p] != want)
                continue;
            }
          SpCost c;
          sp_cost_compute (sh, coll, bytes, algos[a], protos[p], &c);
          if (!found || c.time_us < out->time_us)
            {
              *out = c;
              found = TRUE;
            }
        }
    }
  if (!found && nccl_refused)
    {
      /* what the group could run, within what the caller named and, where
       * NCCL chooses the algorithm, what its version has; and the
       * algorithms the group could run that the version lacks */
      guint32 v = sh->spec->nccl_version;
      guint8 lacking = sp_topo_nccl_algos_lacking ((int) v), lacking_here = 0;
      GString *u = g_string_new (NULL);
      for (guint a = 0; a < G_N_ELEMENTS (algos); a++)
        for (guint p = 0; p < G_N_ELEMENTS (protos); p++)
          if ((algo == SP_ALGO_AUTO || algos[a] == algo) && (proto == SP_PROTO_AUTO || protos[p] == proto)
              && sp_cost_enabled (sh, coll, algos[a], protos[p], NULL))
            {
              gboolean gone = algo == SP_ALGO_AUTO && (guint) algos[a] < 8
                              && (lacking & (1u << algos[a]));
              if (gone)
                lacking_here |= (guint8) (1u << algos[a]);
              else
                g_string_append_printf (u, "%s%s/%s", u->len ? ", " : "", sp_algo_name (algos[a]),
                                        sp_proto_name (protos[p]));
            }
      g_autofree char *usable = g_string_free (u, FALSE);
      g_autofree char *algos_on = sp_topo_nccl_text (sh->spec->nccl_algo_off, FALSE);
      g_autofree char *protos_on = sp_topo_nccl_text (sh->spec->nccl_proto_off, TRUE);
      /* NCCL fails the call when nothing is left of what it has; what is
       * left may also be CollNet, which NCCL runs with a SHARP plugin and
       * this model does not */
      int f = sp_topo_nccl_func (coll);
      guint8 collnet = (guint8) ((1u << SP_ALGO_COLLNET_DIRECT) | (1u << SP_ALGO_COLLNET_CHAIN));
      gboolean collnet_coll = coll == SP_COLL_ALL_REDUCE || coll == SP_COLL_ALL_GATHER
                              || coll == SP_COLL_REDUCE_SCATTER;
      guint8 off = f >= 0 ? (guint8) (sh->spec->nccl_algo_off[f] | lacking) : 0;
      gboolean collnet_left = f >= 0 && collnet_coll && off != 0 && (off & collnet) != collnet
                              && !(sh->spec->nccl_proto_off[f] & (1u << SP_PROTO_SIMPLE));
      /* the version's part */
      g_autofree char *v_text = v ? sp_topo_nccl_version_text ((int) v) : NULL;
      g_autofree char *gone = sp_topo_nccl_algos_text (lacking_here);
      g_autofree char *version = !v_text ? NULL
                                 : gone  ? g_strdup_printf ("NCCL %s (without %s) with ", v_text, gone)
                                         : g_strdup_printf ("NCCL %s with ", v_text);
      g_set_error (error, SP_ERROR, SP_ERROR_UNSUPPORTED,
                   "%sNCCL_ALGO=%s NCCL_PROTO=%s leave %s on %u %s over %u %s "
                   "nothing this model runs (%s; %s can run here as %s)", version ? version : "",
                   algos_on ? algos_on : "(unset)", protos_on ? protos_on : "(unset)",
                   sp_coll_name (coll), sh->n, sh->n == 1 ? "rank" : "ranks", sh->nodes,
                   sh->nodes == 1 ? "node" : "nodes",
                   collnet_left ? "NCCL fails the call unless a SHARP plugin runs CollNet, "
                                  "which they leave and this model does not implement"
                                : "NCCL would fail the call",
                   sp_coll_name (coll), usable[0] ? usable : "nothing");
      return FALSE;
    }
  if (!found)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_UNSUPPORTED,
                   "no algorithm/protocol serves %s with algorithm %s, protocol %s on %u ranks "
                   "over %u nodes (%s)",
                   sp_coll_name (coll), sp_algo_name (algo), sp_proto_name (proto), sh->n,
                   sh->nodes, why ? why : "unsupported");
      return FALSE;
    }
  return TRUE;
}

/* NCCL variables that change a run in ways the model does not follow.
 * `assumed`: the value the model costs (NCCL's default: src/init.cc,
 * src/graph/ NCCL_PARAM defaults, -2 = "NCCL decides"), compared as
 * NCCL's ncclLoadParam reads an integer (strtoll (v, NULL, 0); a value out
 * of range leaves NCCL's default); ANY: every value counts (NCCL's default
 * depends on the system or the version); the other markers below.
 * `where`: the runs it can matter to — across nodes, on IB / RoCE (NCCL's
 * built-in IB plugin; EFA and Slingshot run aws-ofi-nccl, which has no
 * CollNet), on sockets (tcp), between GPUs over PCIe (SHM is NCCL's
 * fallback where P2P is not allowed), with a rail fabric, or before NCCL
 * 2.5 (the thresholds it dropped with its tuning model). */
enum {
  ANY_VALUE = -1000, /* markers, below any value NCCL reads as a default */
  CHANNELS_MAX,      /* counts below the model's channel count */
  CHANNELS_MIN,      /* counts above it */
  BUFF,              /* the transport's Simple buffer: 8 of its steps */
  P2P_NET,           /* the transport's p2p chunk */
  THREADS,           /* NCCL's 512 (NCCL_NTHREADS); outside [32, 512] or
                        not a multiple of 32, NCCL keeps it (getNthreads) */
  THREADS_LL128,     /* the same with 640 (NCCL_LL128_NTHREADS) */
  GDR_LEVEL,         /* a level name that turns GPUDirect RDMA off on the
                        topology's GPU-NIC path */
  NET_NAME,          /* a built-in network other than the topology's */
  PLUGIN_NONE,       /* "none": no external plugin, where one is the transport */
  HCA_LIST,          /* an NCCL_IB_HCA list naming fewer HCAs than the
                        topology's NICs per node */
};
enum {
  W_ALL = 0,
  W_NET = 1 << 0,    /* only across nodes */
  W_IB = 1 << 1,     /* only on ib / roce */
  W_TCP = 1 << 2,    /* only on tcp */
  W_PCIE = 1 << 3,   /* only with [intra] kind = pcie */
  W_RAIL = 1 << 4,   /* only with fabric = rail */
  W_OLD = 1 << 5,    /* only with NCCL before 2.5 */
};
static const struct {
  const char *name;
  gint64 assumed;
  guint where;
  const char *what;
} unread_vars[] = {
  { "NCCL_MAX_NCHANNELS", CHANNELS_MAX, W_ALL, "caps the channels" },
  { "NCCL_MIN_NCHANNELS", CHANNELS_MIN, W_ALL, "raises the channels" },
  { "NCCL_MAX_NRINGS", CHANNELS_MAX, W_ALL, "caps the channels" }, /* older names */
  { "NCCL_MIN_NRINGS", CHANNELS_MIN, W_ALL, "raises the channels" },
  { "NCCL_MAX_CTAS", CHANNELS_MAX, W_ALL, "caps the channels" },   /* 2.17+ */
  { "NCCL_MIN_CTAS", CHANNELS_MIN, W_ALL, "raises the channels" },
  { "NCCL_NTHREADS", THREADS, W_ALL, "threads per channel" },
  { "NCCL_LL128_NTHREADS", THREADS_LL128, W_ALL, "LL128's threads per channel" },
  { "NCCL_BUFFSIZE", BUFF, W_ALL, "Simple's buffer" },
  { "NCCL_LL_BUFFSIZE", -2, W_ALL, "LL's buffer" },
  { "NCCL_LL128_BUFFSIZE", -2, W_ALL, "LL128's buffer" },
  { "NCCL_P2P_NET_CHUNKSIZE", P2P_NET, W_NET, "all-to-all's network chunk" },
  { "NCCL_P2P_NVL_CHUNKSIZE", 524288, W_ALL, "all-to-all's NVLink chunk" },
  { "NCCL_P2P_PCI_CHUNKSIZE", 131072, W_ALL, "all-to-all's PCIe chunk" },
  { "NCCL_P2P_LL_THRESHOLD", 16384, W_ALL, "all-to-all's LL threshold" },
  { "NCCL_MIN_P2P_NCHANNELS", ANY_VALUE, W_ALL, "all-to-all's channels" },
  { "NCCL_MAX_P2P_NCHANNELS", ANY_VALUE, W_ALL, "all-to-all's channels" },
  { "NCCL_NCHANNELS_PER_NET_PEER", ANY_VALUE, W_NET, "all-to-all's channels per peer" },
  { "NCCL_PXN_DISABLE", 0, W_NET, "all-to-all's routing through NVLink (PXN)" },
  { "NCCL_P2P_PXN_LEVEL", 2, W_NET, "all-to-all's routing through NVLink (PXN)" },
  { "NCCL_NVLS_NCHANNELS", ANY_VALUE, W_ALL, "NVLS's channels" },
  { "NCCL_NVLS_CHUNKSIZE", ANY_VALUE, W_ALL, "NVLS's chunk" },
  { "NCCL_NET", NET_NAME, W_NET, "the network" },
  { "NCCL_NET_PLUGIN", PLUGIN_NONE, W_NET, "the network" },
  { "NCCL_IB_DISABLE", 0, W_NET | W_IB, "the network: sockets, not IB" },
  { "NCCL_P2P_DISABLE", 0, W_ALL, "the transport between local GPUs" },
  { "NCCL_P2P_LEVEL", ANY_VALUE, W_ALL, "the transport between local GPUs" },
  { "NCCL_P2P_USE_CUDA_MEMCPY", 0, W_ALL, "the transport between local GPUs" },
  { "NCCL_NET_DISABLE_INTRA", 0, W_PCIE, "the transport between local GPUs" },
  { "NCCL_SHM_DISABLE", 0, W_PCIE, "the transport between local GPUs" },
  { "NCCL_NET_GDR_LEVEL", GDR_LEVEL, W_NET, "GPUDirect RDMA off" },
  { "NCCL_NET_FORCE_FLUSH", ANY_VALUE, W_NET, "the flush after each Simple receive" },
  { "NCCL_GDR_FLUSH_DISABLE", 0, W_NET, "the flush after each Simple receive" },
  { "NCCL_GDRCOPY_ENABLE", 0, W_NET, "where the proxy's tail pointer sits" },
  { "NCCL_CROSS_NIC", 2, W_NET | W_RAIL, "the rings' NICs" },
  { "NCCL_IB_HCA", HCA_LIST, W_NET | W_IB, "the NICs" },
  { "NCCL_IB_QPS_PER_CONNECTION", 1, W_NET | W_IB, "queue pairs per connection" },
  { "NCCL_IB_SPLIT_DATA_ON_QPS", ANY_VALUE, W_NET | W_IB, "queue pairs per connection" },
  { "NCCL_SOCKET_NTHREADS", ANY_VALUE, W_NET | W_TCP, "sockets per connection" },
  { "NCCL_NSOCKS_PERTHREAD", ANY_VALUE, W_NET | W_TCP, "sockets per connection" },
  { "NCCL_COLLNET_ENABLE", 0, W_NET | W_IB, "CollNet (in-network reduction)" },
  { "NCCL_TUNER_PLUGIN", ANY_VALUE, W_ALL, "a tuner plugin's algorithm, protocol and channels" },
  { "NCCL_GRAPH_FILE", ANY_VALUE, W_ALL, "the rings and trees (a graph file)" },
  { "NCCL_NET_OVERHEAD", ANY_VALUE, W_NET, "NCCL's algorithm choice" },
  { "NCCL_LL_THRESHOLD", ANY_VALUE, W_OLD, "the protocol choice" },
  { "NCCL_TREE_THRESHOLD", ANY_VALUE, W_OLD, "the algorithm choice" },
  { "NCCL_SINGLE_RING_THRESHOLD", ANY_VALUE, W_OLD, "the channels" },
};

/* NCCL's path names in its order (src/graph/topo.h), placed on the
 * topology's nic_path scale: 0 below pix (LOC … C2C), 1 pix, 2 pxb (PXB,
 * PXN, P2C), 3 phb, 5 sys; -1 unknown. */
static int
gdr_level_rank (const char *v)
{
  static const struct { const char *name; int rank; } levels[] = {
    { "LOC", 0 }, { "NVL", 0 }, { "NVB", 0 }, { "C2C", 0 }, { "PIX", 1 }, { "PXB", 2 },
    { "PXN", 2 }, { "P2C", 2 }, { "PHB", 3 }, { "SYS", 5 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (levels); i++)
    if (g_ascii_strcasecmp (v, levels[i].name) == 0)
      return levels[i].rank;
  return -1;
}

/* An NCCL_IB_HCA item of `len` bytes that names one device: it ends in
 * "_N" (mlx5_0, mlx5_bond_0, hfi1_0), where "mlx5" is a driver's prefix
 * and takes every mlx5_N. */
static gboolean
hca_item_is_device (const char *item, gsize len)
{
  gsize digits = 0;
  while (digits < len && g_ascii_isdigit (item[len - 1 - digits]))
    digits++;
  return digits > 0 && digits < len && item[len - 1 - digits] == '_';
}

/* The HCAs an NCCL_IB_HCA value names, as NCCL's IB plugin reads it
 * (src/transport/net_ib.cc, parseStringList in src/misc/utils.cc): an
 * optional '^' (exclude the list), an optional '=' (exact names, else
 * prefixes), then "name[:port]" items split on ',', empty names skipped,
 * 32 at most.  -1 where the count of NICs it leaves is not in the string:
 * an exclusion list, or a prefix that is not one device's name.  A device
 * name is counted as one device, though NCCL's prefix match also takes
 * its longer namesakes (mlx5_1 takes mlx5_10 … on a node with ten or
 * more). */
static int
hca_list_count (const char *v)
{
  if (v[0] == '^')
    return -1;
  gboolean exact = v[0] == '=';
  int n = 0;
  g_auto (GStrv) items = g_strsplit (v + (exact ? 1 : 0), ",", -1);
  for (guint i = 0; items[i] != NULL && n < 32; i++)
    {
      gsize len = strcspn (items[i], ":");
      if (len == 0)
        continue;
      if (!exact && !hca_item_is_device (items[i], len))
        return -1;
      n++;
    }
  return n;
}

char *
sp_sim_nccl_env_unread (const SpTopoSpec *s, int nccl_version, gboolean across_nodes,
                        const char *name, const char *value)
{
  g_return_val_if_fail (s != NULL && name != NULL && value != NULL, NULL);
  guint i = 0;
  while (i < G_N_ELEMENTS (unread_vars) && strcmp (name, unread_vars[i].name) != 0)
    i++;
  if (i == G_N_ELEMENTS (unread_vars))
    return NULL;
  guint where = unread_vars[i].where;
  gboolean ib = s->transport == SP_TRANSPORT_IB || s->transport == SP_TRANSPORT_ROCE;
  if (((where & W_NET) && !across_nodes) || ((where & W_IB) && !ib)
      || ((where & W_TCP) && s->transport != SP_TRANSPORT_TCP)
      || ((where & W_PCIE) && s->intra_kind != SP_INTRA_PCIE)
      || ((where & W_RAIL) && s->fabric != SP_FABRIC_RAIL)
      || ((where & W_OLD) && (nccl_version == 0 || nccl_version >= 20500)))
    return NULL;
  const char *what = unread_vars[i].what;
  gint64 assumed = unread_vars[i].assumed;
  switch (assumed)
    {
    case ANY_VALUE:
      return g_strdup (what);
    case GDR_LEVEL:
      {
        /* GDR is used where the GPU-NIC path is at most the level; the
         * model assumes it is (a number: NCCL's numbering moved between
         * versions, so say it) */
        int level = gdr_level_rank (value);
        int path = (int) sp_sim_nic_path (s);
        if (level >= 0)
          return level < path ? g_strdup_printf ("%s on the topology's %s path", what,
                                                 sp_nic_path_name (sp_sim_nic_path (s)))
                              : NULL;
        return value[0] ? g_strdup ("GPUDirect RDMA, by a level number") : NULL;
      }
    case NET_NAME:
      {
        /* NCCL's built-in networks; a plugin's name is the topology's
         * transport */
        gboolean tcp = s->transport == SP_TRANSPORT_TCP;
        if (g_ascii_strcasecmp (value, "Socket") == 0 && !tcp)
          return g_strdup ("the network: sockets");
        if (g_ascii_strcasecmp (value, "IB") == 0 && !ib)
          return g_strdup ("the network: NCCL's IB plugin");
        return NULL;
      }
    case HCA_LIST:
      {
        int n = hca_list_count (value);
        return n > 0 && (guint) n < s->nics_per_node
                   ? g_strdup_printf ("%s: %d HCA%s named, the topology has %u per node", what, n,
                                      n == 1 ? "" : "s", s->nics_per_node)
                   : NULL;
      }
    case PLUGIN_NONE:
      return g_ascii_strcasecmp (value, "none") == 0
                 && (s->transport == SP_TRANSPORT_EFA || s->transport == SP_TRANSPORT_SLINGSHOT)
                 ? g_strdup ("the network: no aws-ofi-nccl plugin")
                 : NULL;
    default:
      break;
    }
  /* an integer, as ncclLoadParam: empty or out of range leaves NCCL's
   * default; no digits read as 0 */
  if (value[0] == '\0')
    return NULL;
  errno = 0;
  long long v = strtoll (value, NULL, 0);
  if (errno != 0)
    return NULL;
  const SpTransportModel *t = transport_model (s);
  long long channels = model_channels (s, sp_sim_arch_of (s->gpu_model));
  switch (assumed)
    {
    case CHANNELS_MAX:
      return v > 0 && v < channels
                 ? g_strdup_printf ("%s below the model's %lld", what, channels)
                 : NULL;
    case CHANNELS_MIN:
      return v > channels ? g_strdup_printf ("%s above the model's %lld", what, channels) : NULL;
    case THREADS:
    case THREADS_LL128:
      {
        long long dflt = assumed == THREADS ? 512 : 640;
        if (v == -2 || v == dflt || v < 32 || v > dflt || v % 32 != 0)
          return NULL;
        return g_strdup_printf ("%s; the model assumes %lld", what, dflt);
      }
    case BUFF:
    case P2P_NET:
      {
        long long m = (long long) (assumed == BUFF ? t->step_bytes * 8 : t->p2p_chunk_bytes);
        return v != m && v != -2 ? g_strdup_printf ("%s; the model assumes %lld", what, m) : NULL;
      }
    default:
      return v != assumed ? g_strdup_printf ("%s; the model assumes %lld", what, (long long) assumed)
                          : NULL;
    }
}

char *
sp_sim_nccl_env_unread_text (const SpTopoSpec *s, int nccl_version, gboolean across_nodes,
                             const char *const *names, const char *const *values, gsize n)
{
  g_return_val_if_fail (s != NULL && (n == 0 || (names != NULL && values != NULL)), NULL);
  GString *t = g_string_new (NULL);
  for (gsize i = 0; i < n; i++)
    {
      g_autofree char *what = sp_sim_nccl_env_unread (s, nccl_version, across_nodes, names[i],
                                                      values[i]);
      if (what == NULL)
        continue;
      g_autofree char *shown = sp_topo_nccl_excerpt (values[i]);
      g_string_append_printf (t, "%s%s=%s (%s)", t->len ? ", " : "", names[i], shown, what);
    }
  return g_string_free (t, t->len == 0);
}
