/* shardplan/topo.h — the cluster model: nodes × GPUs, the intra-node fabric,
 * the inter-node network, GPU memory and compute rate, and the rank layout.
 *
 * A topology is loaded from an INI file (GKeyFile) or built from a preset.
 * Every number carries its unit in its key name; datasheet numbers go in,
 * and what a collective achieves of them is the simulator's business.
 *
 *   [cluster]  name, nodes, gpus_per_node, host_cpu = intel|amd|arm (optional),
 *              nvlink_domain (optional: GPUs per NVLink domain, a multiple of
 *              gpus_per_node; 72 for a GB200 NVL72 rack), mnnvl = on|off
 *              (optional, default on: NCCL's multi-node NVLink)
 *   [gpu]      model, memory_gib, tflops            (dense bf16 peak, TFLOP/s)
 *              memory_bandwidth_gbs (optional: HBM, GB/s; default by model)
 *   [intra]    kind = nvswitch|nvlink|pcie|shm, bandwidth_gbs (per GPU, one
 *              direction, GB/s = 1e9 B/s), latency_us (optional)
 *   [inter]    nics_per_node, nic_gbps (per NIC, one direction, Gbit/s),
 *              latency_us (optional), step_floor_us (optional: the shortest
 *              step of a multi-node Simple ring or tree, µs; default by
 *              transport), inject_copy_us (optional: what a network
 *              send of at most 192 B from GPU memory costs its sender
 *              beyond the others, µs; default by transport),
 *              fabric = single-switch|fat-tree|rail,
 *              oversubscription (>= 1; 2 means 2:1 at the leaf uplinks),
 *              transport = ib|roce|efa|slingshot|tcp (default ib),
 *              nic_path = pix|pxb|phb|node|sys (optional: how a GPU reaches
 *              its NIC, nvidia-smi's words; default by board, SpNicPath)
 *   [calibration] (optional; written by `shardplan calibrate`)
 *              intra_efficiency, nic_efficiency: the fraction of [intra]
 *              bandwidth_gbs and of [inter] nic_gbps a transfer achieves, in
 *              [0, 4]; 0 or absent = the simulator's own derivation from
 *              the datasheet number (sim/README-model.md §2); nic_efficiency
 *              is the rate at NCCL's ring step, and the per-message cost
 *              it implies sets the all-to-all's (p2p chunk) rate too;
 *              ll_overhead_us, ll128_overhead_us, simple_overhead_us: time
 *              added to every collective that uses that protocol, in
 *              [-1000, 1e6] µs (negative removes part of the model's fixed
 *              cost; a collective's latency never goes below 0).
 *              std_errors, correlations, residual_sd: what the fit
 *              determined (SpTopoCalErrors below): "intra_latency_us 0.29;
 *              ll_overhead_us undetermined", "intra_latency_us
 *              intra_efficiency -0.63; …", and the fit's residual standard
 *              deviation in log time; `shardplan estimate` turns them into
 *              the standard error of its estimate.
 *              A calibrated topology is still a topology: estimate, sim
 *              and sweep read it like any other.
 *   [nccl]     (optional) algo, proto: NCCL_ALGO and NCCL_PROTO as the jobs
 *              set them, in NCCL's syntax ("Ring,Tree", "^NVLS",
 *              "allreduce:tree;allgather:^pat"; below, read with
 *              SP_NCCL_STRICT): the simulator then chooses only among what
 *              NCCL may choose; version ("2.21.5"): the NCCL they run, whose
 *              missing algorithms are left out too (nccl_version).  Not
 *              with [intra] kind = shm (CPU ranks run MPI, not NCCL).
 *
 * Required keys: [cluster] nodes, gpus_per_node; [gpu] model, memory_gib,
 * tflops; [intra] kind, bandwidth_gbs; and, when [inter] is present, its
 * nics_per_node and nic_gbps.  A file written from a datasheet alone (no
 * latency, no efficiency) is complete: the simulator supplies the rest.
 * Defaults: [cluster] name = "custom"; [intra] / [inter] latency_us =
 * SP_TOPO_LATENCY_UNSET (the simulator's per-hop latency for the GPU
 * generation, intra kind and transport, sim/README-model.md §2); [inter]
 * step_floor_us and inject_copy_us = SP_TOPO_LATENCY_UNSET (the
 * transport's); [inter]
 * fabric = fat-tree, oversubscription = 1, transport = ib.  [inter] is
 * required when nodes > 1 and optional for a single node; without it the
 * spec holds placeholders (nics_per_node 1, nic_gbps 100, fat-tree, 1, ib)
 * that nothing may use: sp_topo_has_inter() is FALSE and the topology
 * refuses to grow past one node (sp_topo_with_nodes, sp_topo_open with
 * nodes > 1).  oversubscription other than 1 needs fabric fat-tree or rail.
 *
 * latency_us, when given, is the per-hop latency of a small message over
 * that link (the α of the LL protocol's hop); it replaces the simulator's
 * default for that link and the model adds what other protocols and the
 * transport cost on top of it.
 *
 * Unknown sections and keys are errors that name them (with a "did you
 * mean" for near misses); every value is range-checked with sp_parse_u64 /
 * sp_parse_double, so messages read "topo.ini: [cluster] nodes 0 is out of
 * range: expected an integer in [1, 16777216]".  All INI and spec errors are
 * SP_ERROR_INVALID_TOPOLOGY.  Names (cluster name, gpu model) are 1 to 63
 * bytes of printable UTF-8 without leading or trailing spaces.
 *
 * Layout is block placement: rank r lives on node r / gpus_per_node, local
 * device r % gpus_per_node.
 */
#pragma once
#include <glib.h>
#include "shardplan/types.h"

G_BEGIN_DECLS

typedef enum {
  SP_INTRA_NVSWITCH = 0, /* every GPU reaches every other at full rate */
  SP_INTRA_NVLINK = 1,   /* point-to-point NVLink mesh (e.g. hybrid cube-mesh) */
  SP_INTRA_PCIE = 2,     /* through PCIe switches / host bridge */
  SP_INTRA_SHM = 3,      /* CPU processes through shared memory (MPI backend) */
} SpIntraKind;

/* How NCCL reaches the network ([inter] transport): the built-in IB verbs
 * plugin over InfiniBand or RoCE, AWS EFA through aws-ofi-nccl, HPE
 * Slingshot 11 through aws-ofi-nccl's libfabric CXI path, or TCP sockets.
 * Each has its own latency and per-message overhead under NCCL
 * (sim/README-model.md §2). */
typedef enum {
  SP_TRANSPORT_IB = 0,
  SP_TRANSPORT_ROCE = 1,
  SP_TRANSPORT_EFA = 2,
  SP_TRANSPORT_SLINGSHOT = 3,
  SP_TRANSPORT_TCP = 4,
} SpTransport;

/* The host CPU ([cluster] host_cpu): NCCL charges a network step's proxy
 * overhead by CPU vendor (tuning.cc getNetOverhead: 1 µs Intel / Arm, 2 µs
 * AMD) and picks its LL bandwidth cap by it.  DEFAULT: the vendor of the
 * GPU generation's reference server (sim/README-model.md §2). */
typedef enum {
  SP_HOST_CPU_DEFAULT = 0,
  SP_HOST_CPU_INTEL = 1,
  SP_HOST_CPU_AMD = 2,
  SP_HOST_CPU_ARM = 3,
} SpHostCpu;

/* [inter] nic_path: how each GPU reaches its NIC, in nvidia-smi topo -m's
 * words.  NCCL enables LL128 across nodes only when that path stays under
 * PCIe switches (<= PXB; graph/tuning.cc), so PHB / NODE / SYS NICs run LL
 * and Simple only.  DEFAULT: PXB, except an NVLink mesh without NVSwitch on
 * fewer than 8 GPUs (HGX A100 / H100 4-GPU boards, IBM AC922): those boards
 * have no PCIe switches and their NICs hang off the host (PHB). */
typedef enum {
  SP_NIC_PATH_DEFAULT = 0,
  SP_NIC_PATH_PIX = 1,
  SP_NIC_PATH_PXB = 2,
  SP_NIC_PATH_PHB = 3,
  SP_NIC_PATH_NODE = 4,
  SP_NIC_PATH_SYS = 5,
} SpNicPath;

/* [cluster] mnnvl: whether NCCL uses multi-node NVLink (NCCL_MNNVL_ENABLE)
 * inside an NVLink domain that spans hosts. */
typedef enum {
  SP_MNNVL_ON = 0,
  SP_MNNVL_OFF = 1,
} SpMnnvl;

typedef enum {
  SP_FABRIC_SINGLE_SWITCH = 0, /* every NIC on one non-blocking switch */
  SP_FABRIC_FAT_TREE = 1,      /* leaf/spine, `oversubscription`:1 at the leaves */
  SP_FABRIC_RAIL = 2,          /* NIC i of every node on rail switch i */
} SpFabric;

#define SP_TOPO_NAME_MAX 64
/* The collectives NCCL_ALGO / NCCL_PROTO restrict (sp_topo_nccl_func). */
#define SP_TOPO_NCCL_FUNCS 5
/* intra_latency_us / inter_latency_us not given: the simulator derives the
 * per-hop latency from the GPU model, the intra kind and the transport. */
#define SP_TOPO_LATENCY_UNSET (-1.0)

/* The values `shardplan calibrate` fits, in its order (SpCalibParam of
 * sim/shardplan/calibrate-fit.h): [intra] latency_us, [inter] latency_us,
 * [calibration] intra_efficiency, nic_efficiency, ll_overhead_us,
 * ll128_overhead_us, simple_overhead_us.  Their names in [calibration]
 * std_errors and correlations: sp_topo_cal_param_key(). */
#define SP_TOPO_CAL_PARAMS 7

/* What a calibration determined ([calibration] std_errors, correlations,
 * residual_sd), for the values as the file holds them.  given == 0: none
 * (every preset; a topology written by hand; a trimmed fit, which gives no
 * standard errors).  Bit p of `given`: the fit fitted value p, and
 * std_error[p] says how well: its standard error in the value's unit, in
 * [0, 1e9], or INFINITY, "undetermined": the fitted ops' times do not
 * depend on it at the fitted values, or the fit could not compute an
 * error for it (JᵀJ singular there — then every value inverted with it —
 * or an error beyond 1e9).  corr[p][q]: the correlation of two values
 * whose errors are both finite, in [-1, 1], symmetric, 1 on the
 * diagonal, the matrix positive semidefinite (pivots >= −1e-12); every
 * other entry 0.  residual_sd: the standard deviation of log(simulated /
 * measured) over the fitted ops, s of s²(JᵀJ)⁻¹, in [0, 10]; 0 when not
 * given.  Efficiencies were fitted as logs: their covariance in log
 * space is corr × (se / value) × (se / value). */
typedef struct {
  guint8 given;
  double std_error[SP_TOPO_CAL_PARAMS];
  double corr[SP_TOPO_CAL_PARAMS][SP_TOPO_CAL_PARAMS];
  double residual_sd;
} SpTopoCalErrors;

/* "intra_latency_us", "inter_latency_us", "intra_efficiency",
 * "nic_efficiency", "ll_overhead_us", "ll128_overhead_us",
 * "simple_overhead_us" (static); NULL beyond SP_TOPO_CAL_PARAMS. */
const char *sp_topo_cal_param_key (guint param);

/* Plain numbers of a topology.  Units are in the field names. */
typedef struct {
  char name[SP_TOPO_NAME_MAX];
  guint32 nodes;               /* [1, 2^24] */
  guint32 gpus_per_node;       /* [1, 1024] */
  char gpu_model[SP_TOPO_NAME_MAX];
  double gpu_memory_gib;       /* (0, 65536] GiB = 2^30 B */
  double gpu_tflops;           /* (0, 1e6] dense bf16 peak, 1e12 FLOP/s */
  SpIntraKind intra_kind;
  double intra_bandwidth_gbs;  /* (0, 1e5] GB/s per GPU, one direction */
  double intra_latency_us;     /* [0, 1e6] µs; SP_TOPO_LATENCY_UNSET: the simulator's default */
  guint32 nics_per_node;       /* [1, 1024] (only read when nodes > 1, still checked) */
  double nic_gbps;             /* (0, 1e6] Gbit/s per NIC, one direction */
  double inter_latency_us;     /* [0, 1e6] µs; SP_TOPO_LATENCY_UNSET: the simulator's default */
  /* [inter] step_floor_us: the shortest step of a multi-node Simple ring or
   * tree, [0, 1e6] µs; SP_TOPO_LATENCY_UNSET: the transport's default (42
   * on slingshot, 0 elsewhere; sim/README-model.md §2.1a) */
  double inter_step_floor_us;
  /* [inter] inject_copy_us: what a network p2p message (all-to-all, send)
   * of at most 192 B from GPU memory costs its sender beyond the others,
   * [0, 1e6] µs; SP_TOPO_LATENCY_UNSET: the transport's default (12.4 on
   * slingshot, 0 elsewhere; sim/README-model.md §2.1b) */
  double inter_inject_copy_us;
  SpFabric fabric;
  double oversubscription;     /* [1, 1024]; 1 = non-blocking */
  SpTransport transport;       /* [inter] transport, default ib */
  SpNicPath nic_path;          /* [inter] nic_path, default: by board (above) */
  SpHostCpu host_cpu;          /* [cluster] host_cpu, default: by GPU generation */
  /* [cluster] nvlink_domain: GPUs that share one NVLink (switch) domain,
   * a multiple of gpus_per_node in [1, 1024]; 0 = gpus_per_node (the
   * domain is the host, as on every HGX / DGX).  GB200 NVL72: 72 GPUs on 18
   * hosts of 4.  Hosts stay what DeepSpeed and the launcher see (groups,
   * placement); the simulator sees what NCCL sees (sp_sim, README-model). */
  guint32 nvlink_domain;
  SpMnnvl mnnvl;               /* [cluster] mnnvl, default on */
  /* [calibration]: 0 everywhere = uncalibrated (the presets' values). */
  double cal_intra_efficiency; /* [0, 4]; 0 = the model's own */
  double cal_nic_efficiency;   /* [0, 4]; 0 = the model's own */
  double cal_overhead_us[3];   /* [-1000, 1e6] µs, indexed by SpProto LL, LL128, SIMPLE */
  SpTopoCalErrors cal_errors;  /* [calibration] std_errors, correlations, residual_sd */
  /* [gpu] memory_bandwidth_gbs: HBM bandwidth, GB/s = 1e9 B/s, (0, 1e6];
   * 0 = not given: the datasheet figure of the GPU model
   * (sp_topo_spec_memory_bandwidth_gbs).  What the simulator charges a
   * kernel given by bytes only (ZeRO++'s quantize / dequantize). */
  double gpu_memory_bandwidth_gbs;
  /* [nccl] algo / proto (NCCL_ALGO / NCCL_PROTO): for each collective NCCL
   * tunes (index sp_topo_nccl_func), the algorithms (bit = SpAlgo, NCCL's
   * id 0..6) and protocols (bit = SpProto 0..2, plus
   * SP_TOPO_NCCL_PROTO_SET) NCCL may NOT choose.  All 0 = no restriction
   * (NCCL's default, every preset's).  Not on CPU ranks (shm): MPI. */
  guint8 nccl_algo_off[SP_TOPO_NCCL_FUNCS];
  guint8 nccl_proto_off[SP_TOPO_NCCL_FUNCS];
  /* [nccl] version: the NCCL the jobs run, as its version code (major ×
   * 10000 + minor × 100 + patch: "2.21.5" = 22105); 0 = not given (the
   * current NCCL).  The simulator then leaves out the algorithms that
   * version does not have (sp_topo_nccl_algos_lacking); before 2.24 [nccl]
   * algo / proto must restrict every collective alike (that NCCL reads no
   * per-collective entries). */
  guint32 nccl_version;
} SpTopoSpec;

/* NCCL_ALGO / NCCL_PROTO ([nccl] algo / proto).  NCCL restricts the five
 * collectives its tuner chooses for (ncclFunc_t order: broadcast, reduce,
 * all_gather, reduce_scatter, all_reduce); all_to_all and send / recv go
 * through its p2p path, which neither variable touches.  The value is NCCL's
 * (src/graph/tuning.cc parseList, per collective since 2.24):
 *   LIST                  the names NCCL may use, comma-separated
 *   ^LIST                 every name but those
 *   LIST;COLL:LIST;COLL:^LIST   per collective (Broadcast, Reduce, AllGather,
 *                         ReduceScatter, AllReduce, any case); only the
 *                         first entry may go without COLL: (it applies to
 *                         all five), and a later entry replaces an earlier
 *                         one for its collective
 * with algorithm names Tree, Ring, CollNetDirect, CollNetChain, NVLS,
 * NVLSTree, PAT and protocol names LL, LL128, Simple, in any case.  NCCL
 * reads it with strtok_r: empty pieces are skipped, nothing is trimmed, an
 * unknown name matches nothing (2.24-2.27; 2.28 refuses the value); an
 * unknown prefix, or a second entry
 * without one, fails its communicator init.
 *
 * A value of NCCL_PROTO also turns LL128 on outright for the collectives it
 * names (unless it names LL128 off): NCCL's platform rule (LL128 only over
 * NVLink, not below sm70, and across nodes only with NICs under the GPUs'
 * PCIe switches) applies only while LL128 is left at its default.  The protocol mask holds
 * that as SP_TOPO_NCCL_PROTO_SET. */

/* The index of `coll` among those five (reduce_scatter_block counts as
 * reduce_scatter), or -1. */
int sp_topo_nccl_func (SpColl coll);

/* The collective of index `func` (< SP_TOPO_NCCL_FUNCS). */
SpColl sp_topo_nccl_coll (guint func);

/* `value` fit for a one-line message: at most 64 characters, control
 * characters as spaces.  Free with g_free(). */
char *sp_topo_nccl_excerpt (const char *value);

/* nccl_proto_off[f] bit: NCCL_PROTO sets collective f (its LL128 is then
 * on or off by the value, not by the platform). */
#define SP_TOPO_NCCL_PROTO_SET 0x80

typedef enum {
  /* as NCCL reads it: for values a run recorded (/meta/env); fails only
   * where NCCL fails (an unknown prefix, a second entry without one) */
  SP_NCCL_EXACT = 0,
  /* as NCCL reads it, and refusing what NCCL would read but the writer
   * surely did not mean: an empty value, spaces, a name NCCL does not
   * know, a second ':', an entry that names nothing (topology files) */
  SP_NCCL_STRICT = 1,
} SpNcclParse;

/* Parse an NCCL_ALGO (`proto` FALSE) or NCCL_PROTO (TRUE) value into the
 * per-collective masks of what is off (SpTopoSpec.nccl_*_off; all 0 when it
 * restricts nothing).  `what` names the value in messages ("[nccl] algo",
 * "x.h5: /meta/env NCCL_ALGO"); a bad one is SP_ERROR_INVALID_TOPOLOGY
 * naming the bad part (the value shown cut to 64 characters, control
 * characters as spaces) and what is accepted; `out_off` is then unchanged. */
gboolean sp_topo_nccl_parse (const char *what, const char *text, gboolean proto, SpNcclParse mode,
                             guint8 out_off[SP_TOPO_NCCL_FUNCS], GError **error);

/* NCCL's version code (as ncclGetVersion gives it from 2.9 on: major ×
 * 10000 + minor × 100 + patch) of a version string such as "2.21.5" or
 * "2.21.5+cuda12.2" (major 2 or later), or of a code itself ("22105"; "2804" in the scheme
 * before 2.9): nccl-tests' log, /meta/software nccl_runtime.  0 if
 * `version` is NULL or none of these (unknown). */
int sp_topo_nccl_version_code (const char *version);

/* "2.21.5": version code `code` as NCCL prints it (major.minor.patch).
 * Free with g_free(). */
char *sp_topo_nccl_version_text (int code);

/* The algorithms (bits by NCCL id) NCCL has for `coll`: Ring alone for
 * broadcast and reduce, all seven for the other three; 0 for a collective
 * NCCL's tuner does not choose for (all-to-all, send / recv). */
guint8 sp_topo_nccl_algos_of (SpColl coll);

/* The NCCL version that first reads per-collective entries. */
#define SP_TOPO_NCCL_PER_COLL_VERSION 22400

/* sp_topo_nccl_parse (SP_NCCL_EXACT) as NCCL of version code `version`
 * read the value (0: unknown, read as SP_NCCL_EXACT reads it; from 2.28 a
 * name NCCL does not know fails, as NCCL refuses the value).  Before
 * 2.24 NCCL reads one list for all five collectives, split on ',' only,
 * a leading '^' excluding: no entries, no prefixes (a name holding ';' or
 * ':' matches nothing, so "AllReduce:Tree" turns every algorithm off and
 * "^AllReduce:Tree" none), and only the names that version has:
 * CollNetDirect / CollNetChain from 2.14 (before, "CollNet" is the direct
 * one), NVLS from 2.17, NVLSTree from 2.18, PAT from 2.23 (reference/
 * nccl-transports.md's version table).  Before 2.24 it never fails. */
gboolean sp_topo_nccl_parse_as (const char *what, const char *text, gboolean proto, int version,
                                guint8 out_off[SP_TOPO_NCCL_FUNCS], GError **error);

/* The algorithms (bits by NCCL id, as SpTopoSpec.nccl_algo_off) NCCL of
 * version code `version` does not have: CollNetChain before 2.14 (its
 * "CollNet" is the direct one), NVLS before 2.17, NVLSTree before 2.18,
 * PAT before 2.23 (reference/nccl-transports.md's version table); 0 for
 * version 0 (unknown). */
guint8 sp_topo_nccl_algos_lacking (int version);

/* "NVLS, NVLSTree, PAT": NCCL's names of the algorithms in `algos` (bits by
 * id), comma-separated; NULL for none.  Free with g_free(). */
char *sp_topo_nccl_algos_text (guint8 algos);

/* How NCCL of version code `version` reads `value` (an NCCL_ALGO, or
 * NCCL_PROTO when `proto`) where that differs from NCCL 2.24 and later
 * (the algorithms that version lacks aside): before 2.24 a value with
 * per-collective entries (';' or ':') reads as one list for all
 * collectives, e.g. "every algorithm off (…)", "no algorithm off",
 * "Ring for every collective"; NULL where both read it alike (a version of
 * 0 or 2.24+, or no ';' and no ':').  Free with g_free(). */
char *sp_topo_nccl_reads_otherwise (const char *value, gboolean proto, int version);

/* FALSE, and an SP_ERROR_INVALID_ARGUMENT naming variable `name`, its
 * value and how NCCL of version code `version` reads it, where that
 * differs from NCCL 2.24 and later (sp_topo_nccl_reads_otherwise): `run`
 * checks what it passes on. */
gboolean sp_topo_nccl_check_version (const char *name, const char *value, gboolean proto,
                                     int version, GError **error);

/* The value in NCCL's syntax that sp_topo_nccl_parse() (either mode) reads
 * back to `off`: NCCL's spelling of the names, the shorter of LIST and
 * ^LIST, the commonest restriction first without a prefix when all five
 * collectives are restricted, a COLL: entry for each other one; NULL when
 * nothing is restricted.  Free with g_free(). */
char *sp_topo_nccl_text (const guint8 off[SP_TOPO_NCCL_FUNCS], gboolean proto);

/* Whether NCCL_PROTO turns LL128 on outright for `coll` (above). */
gboolean sp_topo_spec_nccl_ll128_forced (const SpTopoSpec *spec, SpColl coll);

/* Whether the spec's [nccl] (algo, proto, and version: the algorithms that
 * NCCL has) lets NCCL choose algorithm `algo` and protocol `proto` for
 * `coll` (SP_ALGO_AUTO / SP_PROTO_AUTO: not asked).  TRUE for
 * collectives it does not restrict and for algorithms NCCL has no id for
 * (SP_ALGO_DIRECT). */
gboolean sp_topo_spec_nccl_allows (const SpTopoSpec *spec, SpColl coll, SpAlgo algo,
                                   SpProto proto);

/* The HBM bandwidth the simulator uses, GB/s: [gpu] memory_bandwidth_gbs
 * when given, else the NVIDIA datasheet figure of the model named in
 * [gpu] model (V100 900; A100 / A800 40GB 1555, 80GB 2039; H100 / H800
 * 3350; H20 4000; GH200 4000, 144GB 4900; H200 4800; B100 / B200 /
 * GB200 / B300 / GB300 8000; L40S / L40 864, L4 300, A10G / A10 600, A40
 * 696, A30 933, T4 320, P100 732, RTX PRO 6000 1792), else
 * SP_TOPO_MEMORY_BANDWIDTH_FALLBACK_GBS. */
#define SP_TOPO_MEMORY_BANDWIDTH_FALLBACK_GBS 1000.0
double sp_topo_spec_memory_bandwidth_gbs (const SpTopoSpec *spec);

/* Whether shardplan knows `gpu_model` ([gpu] model) by name — one of
 * sp_topo_gpu_model_names() as a case-insensitive substring — or it is a
 * CPU ("cpu…").  Any other model is costed with the A100's generation
 * constants and the fallback memory bandwidth. */
gboolean sp_topo_gpu_model_known (const char *gpu_model);
/* Those names, ", "-separated (a static string). */
const char *sp_topo_gpu_model_names (void);
/* The compute capability x 10 of the GPU `gpu_model` names (60 P100, 70
 * V100, 75 T4, 80 A100 / A800 / A30, 86 A10G / A10 / A40, 89 L40S / L40 /
 * L4, 90 Hopper parts, 100 Blackwell parts, 120 RTX PRO 6000), 0 when
 * shardplan does not know it. */
guint sp_topo_gpu_compute_capability (const char *gpu_model);
/* Whether `gpu_model` names a Grace superchip (GH200, GB200, GB300). */
gboolean sp_topo_gpu_grace (const char *gpu_model);

/* TRUE when any [calibration] value is set (non-zero), standard errors
 * included. */
gboolean sp_topo_spec_calibrated (const SpTopoSpec *spec);

typedef struct _SpTopo SpTopo;

/* Check every field of `spec` (ranges above; nodes × gpus_per_node must fit
 * in 2^31 ranks) and make a topology of it.  Free with sp_topo_free(). */
SpTopo *sp_topo_new (const SpTopoSpec *spec, GError **error);

/* Load an INI file.  `path` prefixes error messages.  A missing,
 * unreadable or directory path is SP_ERROR_IO naming the path; a file over
 * SP_TOPO_MAX_FILE_BYTES (1 MiB), an empty, binary or malformed one
 * SP_ERROR_INVALID_TOPOLOGY. */
#define SP_TOPO_MAX_FILE_BYTES ((gsize) 1 << 20)
SpTopo *sp_topo_load_file (const char *path, GError **error);

/* Parse INI text of `length` bytes (-1: NUL-terminated). `source_name`
 * (e.g. the file name) prefixes error messages. */
SpTopo *sp_topo_load_data (const char *data, gssize length, const char *source_name,
                           GError **error);

/* A built-in preset with `nodes` nodes (0: the preset's default, 1). */
SpTopo *sp_topo_new_preset (const char *preset, guint32 nodes, GError **error);

/* What the command line means by --topology X [--nodes N]: a preset name if
 * X is one, otherwise an INI file; `nodes` > 0 replaces the node count.
 * Every failure is SP_ERROR_INVALID_TOPOLOGY (a bad --topology is bad input,
 * exit 2), an unreadable file included; an X that is neither reads
 * "topology 'foo' is neither a file nor a preset (presets: dgx-a100, …)". */
SpTopo *sp_topo_open (const char *file_or_preset, guint32 nodes, GError **error);

/* A copy of `topo` with `nodes` nodes (same everything else).  Fails for
 * nodes > 1 when the topology has no [inter] section. */
SpTopo *sp_topo_with_nodes (const SpTopo *topo, guint32 nodes, GError **error);

void sp_topo_free (SpTopo *topo);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (SpTopo, sp_topo_free)

const SpTopoSpec *sp_topo_spec (const SpTopo *topo);
guint32 sp_topo_world_size (const SpTopo *topo); /* nodes × gpus_per_node */

/* FALSE only for a single-node topology loaded from an INI without [inter]:
 * its inter-node numbers are placeholders.  Presets and sp_topo_new() give TRUE. */
gboolean sp_topo_has_inter (const SpTopo *topo);

/* TRUE when every field of `a` and `b` is equal (names compared as strings,
 * numbers with ==). */
gboolean sp_topo_spec_equal (const SpTopoSpec *a, const SpTopoSpec *b);

/* The topology as INI text that sp_topo_load_data() reads back to an equal
 * spec (each number printed with the shortest of %.15g, %.16g, %.17g that
 * reads back exactly; [inter] left out when sp_topo_has_inter() is FALSE,
 * [calibration] when sp_topo_spec_calibrated() is FALSE).
 * Free with g_free(). */
char *sp_topo_to_ini (const SpTopo *topo);

/* Where rank `rank` lives (block placement). rank < world size. */
void sp_topo_rank_location (const SpTopo *topo, guint32 rank, guint32 *out_node,
                            guint32 *out_local);

/* Built-in presets: a NULL-terminated static array of names, and a one-line
 * description of each (static string, NULL for an unknown name). */
const char *const *sp_topo_preset_names (void);
const char *sp_topo_preset_description (const char *preset);

const char *sp_intra_kind_name (SpIntraKind kind);
const char *sp_fabric_name (SpFabric fabric);
const char *sp_transport_name (SpTransport transport);
const char *sp_host_cpu_name (SpHostCpu cpu); /* "default", "intel", "amd", "arm" */
const char *sp_mnnvl_name (SpMnnvl mnnvl);     /* "on", "off" */
const char *sp_nic_path_name (SpNicPath path); /* "default", "pix", "pxb", "phb", "node", "sys" */
/* GPUs per NVLink domain: nvlink_domain, or gpus_per_node when 0. */
guint32 sp_topo_spec_nvlink_domain (const SpTopoSpec *spec);
/* What carries a collective that stays inside one such domain, as the plan
 * meta's fabric.<family> and sweep's param_gather_fabric name it: "nvlink"
 * (NVSwitch or NVLink), "pcie" or "shm". */
const char *sp_topo_spec_local_fabric (const SpTopoSpec *spec);

G_END_DECLS
