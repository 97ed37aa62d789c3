/* Built-in topology presets.  Every number says where it comes from.
 *
 * Conventions (topo.h): intra bandwidth_gbs is per GPU, one direction, GB/s
 * (vendors quote NVLink bidirectional, so we halve it); nic_gbps is per
 * NIC, one direction, Gbit/s; memory_gib is the datasheet HBM capacity
 * (the datasheets' "80GB" parts expose 80 GiB of DRAM: nvidia-smi reports
 * 81920 MiB on A100-SXM4-80GB; the driver's reservation is the memory
 * model's business); tflops is dense (no 2:4 sparsity) bf16 tensor peak.
 *
 * Latencies and transports.  GPU presets give no latency_us: like a file
 * written from a datasheet, they take the simulator's per-hop latency for
 * their GPU generation, intra fabric and [inter] transport (NCCL's own
 * hwLatencies plus the transport's costs, sim/README-model.md §2), so the
 * model's best estimate is what a preset gets.  The transport is what the
 * vendor ships: InfiniBand on DGX SuperPODs, EFA (through aws-ofi-nccl) on
 * AWS instances.
 */
#include "config.h"
#include "shardplan/topo.h"
#include "shardplan/error.h"

#include <string.h>

/* Not given: the simulator's default (topo.h). */
#define LAT_DEFAULT SP_TOPO_LATENCY_UNSET

typedef struct {
  const char *name;
  const char *description;
  SpTopoSpec spec; /* nodes = 1 */
} Preset;

static const Preset presets[] = {
  /* NVIDIA DGX A100 (640 GB model).
   * - DGX A100 datasheet (NVIDIA, 2020/2021): 8× A100 80 GB, 640 GB total
   *   GPU memory; 6× NVSwitch; "600 GB/s GPU-to-GPU bidirectional
   *   bandwidth"; 8× single-port ConnectX-6 VPI 200 Gb/s HDR InfiniBand
   *   for the compute fabric (plus 2 dual-port for storage, not modelled).
   * - NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020): NVLink 3,
   *   12 links per GPU at 25 GB/s per direction = 300 GB/s per direction.
   * - A100 datasheet: BF16 Tensor Core 312 TFLOPS (624 "with sparsity").
   * - DGX SuperPOD (DGX A100) reference architecture: the compute fabric is
   *   a rail-optimised, full (non-blocking) fat-tree → fabric rail, 1:1.
   * - Latencies: the simulator's defaults (above); transport ib. */
  { "dgx-a100", "NVIDIA DGX A100: 8x A100-SXM4-80GB, NVSwitch 300 GB/s, 8x 200 Gb/s HDR IB, rail",
    { .name = "dgx-a100", .nodes = 1, .gpus_per_node = 8, .gpu_model = "A100-SXM4-80GB",
      .gpu_memory_gib = 80, .gpu_tflops = 312, .intra_kind = SP_INTRA_NVSWITCH,
      .intra_bandwidth_gbs = 300, .intra_latency_us = LAT_DEFAULT,
      .nics_per_node = 8, .nic_gbps = 200, .inter_latency_us = LAT_DEFAULT,
      .inter_step_floor_us = LAT_DEFAULT,
      .inter_inject_copy_us = LAT_DEFAULT,
      .fabric = SP_FABRIC_RAIL, .oversubscription = 1, .transport = SP_TRANSPORT_IB } },

  /* NVIDIA DGX H100.
   * - DGX H100 datasheet (NVIDIA, 2023): 8× H100 Tensor Core GPUs, 640 GB
   *   total GPU memory; 4× NVSwitch, "7.2 TB/s bidirectional GPU-to-GPU
   *   bandwidth" (= 8 × 900 GB/s); 4× OSFP ports serving 8× single-port
   *   ConnectX-7 VPI at up to 400 Gb/s InfiniBand.
   * - NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022): NVLink 4,
   *   18 links per GPU, 900 GB/s total = 450 GB/s per direction.
   * - H100 SXM datasheet: BF16 Tensor Core 1,979 TFLOPS "with sparsity";
   *   dense is half, 989 TFLOPS (989.4 rounded down as NVIDIA quotes it).
   * - DGX SuperPOD (DGX H100) reference architecture: rail-optimised,
   *   full fat-tree NDR InfiniBand compute fabric → rail, 1:1.
   * - Latencies: the simulator's defaults (above); transport ib. */
  { "dgx-h100", "NVIDIA DGX H100: 8x H100-SXM5-80GB, NVSwitch 450 GB/s, 8x 400 Gb/s NDR IB, rail",
    { .name = "dgx-h100", .nodes = 1, .gpus_per_node = 8, .gpu_model = "H100-SXM5-80GB",
      .gpu_memory_gib = 80, .gpu_tflops = 989, .intra_kind = SP_INTRA_NVSWITCH,
      .intra_bandwidth_gbs = 450, .intra_latency_us = LAT_DEFAULT,
      .nics_per_node = 8, .nic_gbps = 400, .inter_latency_us = LAT_DEFAULT,
      .inter_step_floor_us = LAT_DEFAULT,
      .inter_inject_copy_us = LAT_DEFAULT,
      .fabric = SP_FABRIC_RAIL, .oversubscription = 1, .transport = SP_TRANSPORT_IB } },

  /* NVIDIA DGX H200.
   * - DGX H200 datasheet (NVIDIA, 2024): 8× H200 Tensor Core GPUs, 1,128 GB
   *   total GPU memory (141 GB each); 4× NVSwitch, 7.2 TB/s bidirectional
   *   GPU-to-GPU bandwidth (= 8 × 900 GB/s → 450 GB/s per direction, as
   *   DGX H100); 4× OSFP ports serving 8× single-port ConnectX-7 VPI at up
   *   to 400 Gb/s InfiniBand; 2× Intel Xeon Platinum 8480C.
   * - H200 SXM datasheet: BF16 Tensor Core 1,979 TFLOPS "with sparsity",
   *   989 dense (the H100's chip, with 4.8 TB/s HBM3e).
   * - Fabric, latencies, transport: as dgx-h100 (DGX SuperPOD reference
   *   architecture: rail-optimised, non-blocking NDR InfiniBand). */
  { "dgx-h200", "NVIDIA DGX H200: 8x H200-SXM-141GB, NVSwitch 450 GB/s, 8x 400 Gb/s NDR IB, rail",
    { .name = "dgx-h200", .nodes = 1, .gpus_per_node = 8, .gpu_model = "H200-SXM-141GB",
      .gpu_memory_gib = 141, .gpu_tflops = 989, .intra_kind = SP_INTRA_NVSWITCH,
      .intra_bandwidth_gbs = 450, .intra_latency_us = LAT_DEFAULT,
      .nics_per_node = 8, .nic_gbps = 400, .inter_latency_us = LAT_DEFAULT,
      .inter_step_floor_us = LAT_DEFAULT,
      .inter_inject_copy_us = LAT_DEFAULT,
      .fabric = SP_FABRIC_RAIL, .oversubscription = 1, .transport = SP_TRANSPORT_IB } },

  /* NVIDIA DGX B200.
   * - DGX B200 datasheet (NVIDIA, 2024): 8× Blackwell GPUs, 1,440 GB total
   *   GPU memory (180 GB each); 2× NVSwitch, 14.4 TB/s aggregate NVLink
   *   bandwidth (= 8 × 1.8 TB/s bidirectional → 900 GB/s per direction,
   *   NVLink 5); 4× OSFP ports serving 8× single-port ConnectX-7 VPI at up
   *   to 400 Gb/s InfiniBand; 2× Intel Xeon Platinum 8570 (x86: host_cpu
   *   intel, the default for B200).
   * - HGX B200 datasheet: FP16/BF16 Tensor Core 36 PFLOPS for 8 GPUs "with
   *   sparsity" → 4.5 per GPU, 2,250 TFLOPS dense.  (GB200's 2,500 is the
   *   higher-power Grace-paired part.)
   * - DGX SuperPOD (DGX B200) reference architecture: rail-optimised,
   *   non-blocking compute fabric → rail, 1:1.  Latencies: the
   *   simulator's defaults; transport ib. */
  { "dgx-b200", "NVIDIA DGX B200: 8x B200-180GB, NVSwitch 900 GB/s, 8x 400 Gb/s NDR IB, rail",
    { .name = "dgx-b200", .nodes = 1, .gpus_per_node = 8, .gpu_model = "B200-180GB",
      .gpu_memory_gib = 180, .gpu_tflops = 2250, .intra_kind = SP_INTRA_NVSWITCH,
      .intra_bandwidth_gbs = 900, .intra_latency_us = LAT_DEFAULT,
      .nics_per_node = 8, .nic_gbps = 400, .inter_latency_us = LAT_DEFAULT,
      .inter_step_floor_us = LAT_DEFAULT,
      .inter_inject_copy_us = LAT_DEFAULT,
      .fabric = SP_FABRIC_RAIL, .oversubscription = 1, .transport = SP_TRANSPORT_IB } },

  /* AWS p4d.24xlarge.
   * - Amazon EC2 P4 instances page: 8× NVIDIA A100 Tensor Core GPUs, 320 GB
   *   HBM2 (40 GB each), "600 GB/s NVSwitch" GPU peer-to-peer
   *   (bidirectional → 300 GB/s per direction), 400 Gbps networking with
   *   EFA and GPUDirect RDMA, deployed in EC2 UltraClusters with a
   *   "petabit-scale, non-blocking" network → fat-tree, 1:1.
   * - EC2 User Guide, network cards table: p4d.24xlarge has 4 network
   *   cards → 4 × 100 Gb/s.
   * - A100 datasheet: 312 TFLOPS BF16 dense (same chip as dgx-a100).
   * - Host: the P4 instances page's "2nd Generation Intel Xeon Scalable
   *   processors (Cascade Lake P-8275CL)" → host_cpu intel (the A100
   *   default is AMD, sim/README-model.md §2.2).
   * - Latencies: the simulator's defaults (above); transport efa. */
  { "p4d", "AWS p4d.24xlarge: 8x A100-SXM4-40GB, NVSwitch 300 GB/s, 4x 100 Gb/s EFA, fat-tree",
    { .name = "p4d", .nodes = 1, .gpus_per_node = 8, .gpu_model = "A100-SXM4-40GB",
      .gpu_memory_gib = 40, .gpu_tflops = 312, .intra_kind = SP_INTRA_NVSWITCH,
      .intra_bandwidth_gbs = 300, .intra_latency_us = LAT_DEFAULT,
      .nics_per_node = 4, .nic_gbps = 100, .inter_latency_us = LAT_DEFAULT,
      .inter_step_floor_us = LAT_DEFAULT,
      .inter_inject_copy_us = LAT_DEFAULT,
      .fabric = SP_FABRIC_FAT_TREE, .oversubscription = 1, .transport = SP_TRANSPORT_EFA,
      .host_cpu = SP_HOST_CPU_INTEL } },

  /* AWS p5.48xlarge.
   * - Amazon EC2 P5 instances page: 8× NVIDIA H100 80 GB, 640 GB HBM3,
   *   "900 GB/s NVSwitch" GPU peer-to-peer (bidirectional → 450 GB/s per
   *   direction), 3200 Gbps EFAv2 networking, EC2 UltraClusters
   *   (non-blocking) → fat-tree, 1:1.
   * - EC2 User Guide, network cards table: p5.48xlarge has 32 network
   *   cards → 32 × 100 Gb/s = 3200 Gb/s.
   * - H100 SXM datasheet: 989 TFLOPS BF16 dense (as dgx-h100).
   * - Host: the P5 instances page's "3rd Gen AMD EPYC processors (AMD
   *   EPYC 7R13)" → host_cpu amd (the Hopper default is Intel).
   * - Latencies: the simulator's defaults (above); transport efa. */
  { "p5", "AWS p5.48xlarge: 8x H100-SXM5-80GB, NVSwitch 450 GB/s, 32x 100 Gb/s EFAv2, fat-tree",
    { .name = "p5", .nodes = 1, .gpus_per_node = 8, .gpu_model = "H100-SXM5-80GB",
      .gpu_memory_gib = 80, .gpu_tflops = 989, .intra_kind = SP_INTRA_NVSWITCH,
      .intra_bandwidth_gbs = 450, .intra_latency_us = LAT_DEFAULT,
      .nics_per_node = 32, .nic_gbps = 100, .inter_latency_us = LAT_DEFAULT,
      .inter_step_floor_us = LAT_DEFAULT,
      .inter_inject_copy_us = LAT_DEFAULT,
      .fabric = SP_FABRIC_FAT_TREE, .oversubscription = 1, .transport = SP_TRANSPORT_EFA,
      .host_cpu = SP_HOST_CPU_AMD } },

  /* AWS p5en.48xlarge.
   * - Amazon EC2 P5en instances: 8× NVIDIA H200 141 GB (1,128 GB HBM3e),
   *   "900 GB/s NVSwitch" GPU peer-to-peer (→ 450 GB/s per direction),
   *   3200 Gbps of EFAv3 networking in EC2 UltraClusters (non-blocking →
   *   fat-tree, 1:1), Intel Xeon Scalable (Sapphire Rapids) hosts →
   *   host_cpu intel (the Hopper default).
   * - 16 × 200 Gb/s: aws-ofi-nccl's tuner models P5en at 25 GiB/s per rail
   *   (reference/nccl-transports.md §2.8, src/tuner/nccl_ofi_model.cpp),
   *   i.e. 200 Gb/s rails; 3200 / 200 = 16 network cards.
   * - H200 SXM datasheet: BF16 Tensor Core 1,979 TFLOPS "with sparsity",
   *   989 dense (the H100's chip); 141 GB HBM3e.
   * - Latencies: the simulator's defaults (above); transport efa (the
   *   plugin's RDMA protocol, the platform default on p5en, follows from
   *   the Hopper generation, sim/README-model.md §2.1).  aws-ofi-nccl
   *   reports 35 µs to NCCL on p5en, 75 on p5 (sim/model.c); NCCL's view
   *   takes a Hopper's 75 here, which moves only where NCCL's formula
   *   switches algorithm, not the cost of a hop (20 µs on both). */
  { "p5en", "AWS p5en.48xlarge: 8x H200-SXM-141GB, NVSwitch 450 GB/s, 16x 200 Gb/s EFAv3, fat-tree",
    { .name = "p5en", .nodes = 1, .gpus_per_node = 8, .gpu_model = "H200-SXM-141GB",
      .gpu_memory_gib = 141, .gpu_tflops = 989, .intra_kind = SP_INTRA_NVSWITCH,
      .intra_bandwidth_gbs = 450, .intra_latency_us = LAT_DEFAULT,
      .nics_per_node = 16, .nic_gbps = 200, .inter_latency_us = LAT_DEFAULT,
      .inter_step_floor_us = LAT_DEFAULT,
      .inter_inject_copy_us = LAT_DEFAULT,
      .fabric = SP_FABRIC_FAT_TREE, .oversubscription = 1, .transport = SP_TRANSPORT_EFA } },

  /* AWS p3dn.24xlarge.
   * - Amazon EC2 P3 instances page: 8× NVIDIA V100 32 GB (256 GB total),
   *   "300 GB/s" NVLink GPU peer-to-peer, 100 Gbps networking, EFA
   *   supported (one network card).
   * - NVIDIA Tesla V100 GPU Architecture whitepaper (2017): NVLink 2, 6
   *   links per GPU at 25 GB/s per direction = 150 GB/s per direction; the
   *   8-GPU SXM2 board (HGX-1 / DGX-1V) wires them as a hybrid cube-mesh,
   *   not through a switch → intra kind nvlink.
   * - V100 SXM2 datasheet: 125 TFLOPS "deep learning" (fp16 tensor core).
   *   V100 has no bf16; we give its fp16 tensor peak, the rate training on
   *   it uses.
   * - Fabric: AWS publishes no shape for p3dn clusters; we ASSUME a
   *   non-blocking fat-tree within a cluster placement group (calibrate).
   * - Latencies: the simulator's defaults (above); transport efa. */
  { "p3dn", "AWS p3dn.24xlarge: 8x V100-SXM2-32GB, NVLink cube-mesh 150 GB/s, 1x 100 Gb/s, fat-tree",
    { .name = "p3dn", .nodes = 1, .gpus_per_node = 8, .gpu_model = "V100-SXM2-32GB",
      .gpu_memory_gib = 32, .gpu_tflops = 125, .intra_kind = SP_INTRA_NVLINK,
      .intra_bandwidth_gbs = 150, .intra_latency_us = LAT_DEFAULT,
      .nics_per_node = 1, .nic_gbps = 100, .inter_latency_us = LAT_DEFAULT,
      .inter_step_floor_us = LAT_DEFAULT,
      .inter_inject_copy_us = LAT_DEFAULT,
      .fabric = SP_FABRIC_FAT_TREE, .oversubscription = 1, .transport = SP_TRANSPORT_EFA } },

  /* NVIDIA GB200 NVL72 (one rack by default: 18 hosts).
   * - NVIDIA GB200 NVL72 product page / datasheet: 72 Blackwell GPUs and 36
   *   Grace CPUs per rack in 18 compute trays (hosts) of 4 GPUs, 9 NVLink
   *   switch trays; fifth-generation NVLink, 1.8 TB/s bidirectional per GPU
   *   between any two GPUs of the rack (130 TB/s for 72) → 900 GB/s per
   *   direction, nvswitch, nvlink_domain 72; HBM3e 186 GB per GPU (13.4 TB
   *   per rack); dense BF16 2.5 PFLOP/s per GPU (5 "with sparsity").
   * - Scale-out: one ConnectX-7 400 Gb/s InfiniBand NIC per GPU (4 per
   *   tray), the usual GB200 tray (NVIDIA GB200 NVL72 reference
   *   architecture); rail-optimised like the DGX SuperPOD.
   * - Host: Grace (Arm).  Latencies: the simulator's defaults. */
  { "gb200-nvl72", "NVIDIA GB200 NVL72 rack: 18 hosts x 4 GB200, one 72-GPU NVLink domain 900 GB/s, "
                   "4x 400 Gb/s IB per host, rail",
    { .name = "gb200-nvl72", .nodes = 18, .gpus_per_node = 4, .gpu_model = "GB200",
      .gpu_memory_gib = 186, .gpu_tflops = 2500, .intra_kind = SP_INTRA_NVSWITCH,
      .intra_bandwidth_gbs = 900, .intra_latency_us = LAT_DEFAULT,
      .nics_per_node = 4, .nic_gbps = 400, .inter_latency_us = LAT_DEFAULT,
      .inter_step_floor_us = LAT_DEFAULT,
      .inter_inject_copy_us = LAT_DEFAULT,
      .fabric = SP_FABRIC_RAIL, .oversubscription = 1, .transport = SP_TRANSPORT_IB,
      .nvlink_domain = 72 } },

  /* NVIDIA GB200 NVL36: the same trays, 9 hosts x 4 = 36 GPUs per NVLink
   * domain (NVIDIA GB200 NVL36 configuration); other numbers as
   * gb200-nvl72. */
  { "gb200-nvl36", "NVIDIA GB200 NVL36 rack: 9 hosts x 4 GB200, one 36-GPU NVLink domain 900 GB/s, "
                   "4x 400 Gb/s IB per host, rail",
    { .name = "gb200-nvl36", .nodes = 9, .gpus_per_node = 4, .gpu_model = "GB200",
      .gpu_memory_gib = 186, .gpu_tflops = 2500, .intra_kind = SP_INTRA_NVSWITCH,
      .intra_bandwidth_gbs = 900, .intra_latency_us = LAT_DEFAULT,
      .nics_per_node = 4, .nic_gbps = 400, .inter_latency_us = LAT_DEFAULT,
      .inter_step_floor_us = LAT_DEFAULT,
      .inter_inject_copy_us = LAT_DEFAULT,
      .fabric = SP_FABRIC_RAIL, .oversubscription = 1, .transport = SP_TRANSPORT_IB,
      .nvlink_domain = 36 } },

  /* NVIDIA GB300 NVL72.
   * - NVIDIA GB300 NVL72 product page: the same 72-GPU NVLink 5 domain
   *   (1.8 TB/s bidirectional per GPU), 18 trays x 4 Blackwell Ultra GPUs,
   *   HBM3e 288 GB per GPU; ConnectX-8 SuperNIC at 800 Gb/s per GPU.
   * - tflops 2500: ASSUMED equal to GB200's dense BF16 (Blackwell Ultra's
   *   published gains are in FP4); replace it if your datasheet says
   *   otherwise.  Host: Grace (Arm).  Latencies: the simulator's defaults. */
  { "gb300-nvl72", "NVIDIA GB300 NVL72 rack: 18 hosts x 4 GB300, one 72-GPU NVLink domain 900 GB/s, "
                   "4x 800 Gb/s IB per host, rail",
    { .name = "gb300-nvl72", .nodes = 18, .gpus_per_node = 4, .gpu_model = "GB300",
      .gpu_memory_gib = 288, .gpu_tflops = 2500, .intra_kind = SP_INTRA_NVSWITCH,
      .intra_bandwidth_gbs = 900, .intra_latency_us = LAT_DEFAULT,
      .nics_per_node = 4, .nic_gbps = 800, .inter_latency_us = LAT_DEFAULT,
      .inter_step_floor_us = LAT_DEFAULT,
      .inter_inject_copy_us = LAT_DEFAULT,
      .fabric = SP_FABRIC_RAIL, .oversubscription = 1, .transport = SP_TRANSPORT_IB,
      .nvlink_domain = 72 } },

  /* One CPU node running the MPI backend with 4 ranks over shared memory.
   * EVERY number here is an ENGINEERING ESTIMATE for a commodity x86
   * server or workstation, to be replaced by `shardplan calibrate`:
   * - tflops 0.096: one AVX2 core, 2 FMA units × 8 fp32 lanes × 2 FLOP ×
   *   3 GHz = 96 GFLOP/s (CPUs without AMX have no faster bf16 path).
   * - memory_gib 4: a quarter of a 16 GiB machine per rank.
   * - shm bandwidth_gbs 10: the order of one core's memcpy rate
   *   (STREAM-copy per core on current x86 is ~10–20 GB/s).
   * - shm latency_us 1: MPI shared-memory small-message latency is below a
   *   microsecond on an idle machine (OSU osu_latency intra-node); 1 µs
   *   leaves room for an oversubscribed or virtualised host.
   * - inter: one 10 Gb/s Ethernet NIC with TCP, ~25 µs one-way small-
   *   message latency through the kernel stack; a single switch. */
  { "cpu-shm", "CPU ranks over MPI shared memory: 4 ranks/node, ~10 GB/s shm, 10 Gb/s TCP (estimates)",
    { .name = "cpu-shm", .nodes = 1, .gpus_per_node = 4, .gpu_model = "cpu-core",
      .gpu_memory_gib = 4, .gpu_tflops = 0.096, .intra_kind = SP_INTRA_SHM,
      .intra_bandwidth_gbs = 10, .intra_latency_us = 1,
      .nics_per_node = 1, .nic_gbps = 10, .inter_latency_us = 25,
      .inter_step_floor_us = LAT_DEFAULT,
      .inter_inject_copy_us = LAT_DEFAULT,
      .fabric = SP_FABRIC_SINGLE_SWITCH, .oversubscription = 1,
      .transport = SP_TRANSPORT_TCP } },
};

static const char *const preset_names[] = {
  "dgx-a100", "dgx-h100", "dgx-h200", "dgx-b200", "p4d", "p5", "p5en", "p3dn", "gb200-nvl72",
  "gb200-nvl36", "gb300-nvl72", "cpu-shm", NULL,
};
G_STATIC_ASSERT (G_N_ELEMENTS (preset_names) == G_N_ELEMENTS (presets) + 1);

static const Preset *
find_preset (const char *name)
{
  if (name == NULL)
    return NULL;
  for (guint i = 0; i < G_N_ELEMENTS (presets); i++)
    if (strcmp (presets[i].name, name) == 0)
      return &presets[i];
  return NULL;
}

const char *const *
sp_topo_preset_names (void)
{
  return preset_names;
}

const char *
sp_topo_preset_description (const char *preset)
{
  const Preset *p = find_preset (preset);
  return p ? p->description : NULL;
}

SpTopo *
sp_topo_new_preset (const char *preset, guint32 nodes, GError **error)
{
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);
  const Preset *p = find_preset (preset);
  if (p == NULL)
    {
      g_autofree char *list = g_strjoinv (", ", (char **) preset_names);
      g_autofree char *hint = sp_did_you_mean (preset, preset_names, -1);
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "unknown topology preset '%s'%s: expected one of %s", preset ? preset : "(null)",
                   hint, list);
      return NULL;
    }
  SpTopoSpec spec = p->spec;
  if (nodes > 0)
    spec.nodes = nodes;
  return sp_topo_new (&spec, error);
}
