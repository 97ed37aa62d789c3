/* NCCL's tuning constants, as transcribed in
 * shared/reference/nccl-cost-model.md §1.5–§1.6 (NVIDIA/nccl master 5067397,
 * src/graph/tuning.cc `ncclTunerConstantsDefaults`, src/graph/topo.h).
 * Protocol index: LL 0, LL128 1, Simple 2.  µs and GB/s. */
#include "config.h"
#include "sim-internal.h"

#include <math.h>

/* baseLatencies[algo][proto] (µs) */
static const double base_lat_tree[3] = { 6.8, 14.0, 8.4 };
static const double base_lat_ring[3] = { 6.6, 14.0, 8.4 };
static const double base_lat_pat[3] = { 8.0, 8.0, 8.0 };
/* NVLS / NVLSTree / CollNet: 0 (the NVLS latency replaces the base). */

/* hwLatencies[link][algo][proto] (µs per hop); NAN = combination absent. */
static const double hw_lat[3][7][3] = {
  /* NVLINK */
  { { 0.6, 1.25, 4.0 },   /* Tree */
    { 0.6, 1.9, 3.4 },    /* Ring */
    { 0, 0, 3.7 },        /* CollNetDirect */
    { 0, 0, 2.8 },        /* CollNetChain */
    { NAN, NAN, 25 },     /* NVLS */
    { NAN, NAN, 25 },     /* NVLSTree */
    { NAN, NAN, 4.0 } },  /* PAT */
  /* PCI */
  { { 1.0, 1.9, 4.0 },
    { 1.0, 2.5, 5.7 },
    { NAN, NAN, 3.7 },
    { NAN, NAN, 2.8 },
    { NAN, NAN, NAN },
    { NAN, NAN, NAN },
    { NAN, NAN, 4.0 } },
  /* NET */
  { { 5.0, 8.5, 14 },
    { 2.7, 4.0, 14.0 },
    { NAN, NAN, 31 },
    { NAN, NAN, 30 },
    { NAN, NAN, 18 },
    { NAN, NAN, 20.9 },
    { NAN, NAN, 14 } },
};

/* Per-arch caps (GB/s); columns nNodes 1 / 2 / ≥3.  Row = SpArch (CPU uses
 * the Volta row).  llMaxBws: row = GPU arch for one node; for several nodes
 * NCCL indexes by CPU vendor — we assume Intel (row 0), see README-model. */
static const double ll_max_bws[4][3] = {
  { 39.0, 39.0, 20.4 }, { 87.7, 22.5, 19.0 }, { 141.0, 45.0, 35.0 }, { 282.0, 90.0, 70.0 }
};
static const double per_ch_ring_ll128[4][3] = {
  { 20, 20, 20 }, { 20, 20, 20 }, { 36.7, 36.7, 36.7 }, { 40, 40, 40 }
};
static const double per_ch_tree_ll128[4][3] = {
  { 20, 20, 20 }, { 20, 20, 20 }, { 36.7, 36.7, 29.0 }, { 55.6, 31.67, 20.0 }
};
static const double per_ch_tree[4][3] = {
  { 26.5, 18.5, 10.0 }, { 24.0, 23.6, 17.8 }, { 38.7, 41.4, 36.0 }, { 70.0, 42.8, 24.0 }
};
static const double per_ch_nvls_tree[4][3] = {
  { 26.5, 18.5, 10.0 }, { 24.0, 23.6, 17.8 }, { 0.0, 57.7, 45.5 }, { 0.0, 96.0, 80.0 }
};
static const double nvls_efficiency[4] = { 0, 0, 0.85, 0.74 };

/* treeCorrectionFactor[proto][log2(nBytes/64)], 64 B … 512 MB. */
static const double tree_correction[3][24] = {
  { 1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0,
    1.0, 1.0, 1.0 },
  { 1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0,
    1.0, 1.0 },
  { .9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9,
    .9 },
};

/* NCCL's NVLink per-link bandwidth (topo.h SM70 20.0, SM80 20.0, SM90 20.6,
 * SM100 40.1 GB/s; SM60 and SM86 below) and the datasheet's per-link, per-direction rate
 * (NVLink 2/3/4: 25 GB/s; NVLink 5: 50 GB/s). */
static const double nccl_nvlink_link_gbs[4] = { 20.0, 20.0, 20.6, 40.1 };
static const double datasheet_nvlink_link_gbs[4] = { 25.0, 25.0, 25.0, 50.0 };

static int
proto_index (SpProto proto)
{
  return proto == SP_PROTO_LL ? 0 : proto == SP_PROTO_LL128 ? 1 : 2;
}

static int
arch_row (SpArch arch)
{
  return arch == SP_ARCH_CPU ? 0 : (int) arch;
}

static int
nodes_col (guint32 nodes)
{
  return nodes <= 1 ? 0 : nodes == 2 ? 1 : 2;
}

double
sp_nccl_base_latency_us (SpAlgo algo, SpProto proto)
{
  switch (algo)
    {
    case SP_ALGO_TREE:
      return base_lat_tree[proto_index (proto)];
    case SP_ALGO_RING:
    case SP_ALGO_DIRECT: /* p2p: no table in NCCL; we charge the ring's */
      return base_lat_ring[proto_index (proto)];
    case SP_ALGO_PAT:
      return base_lat_pat[proto_index (proto)];
    default:
      return 0.0;
    }
}

double
sp_nccl_hw_latency_us (SpHwLink link, SpAlgo algo, SpProto proto)
{
  int a = algo == SP_ALGO_DIRECT ? SP_ALGO_RING : (int) algo;
  if (a < 0 || a > 6)
    a = SP_ALGO_RING;
  double v = hw_lat[link][a][proto_index (proto)];
  return isnan (v) ? hw_lat[link][SP_ALGO_RING][2] : v;
}

double
sp_nccl_ll_max_bw (SpArch arch, guint32 nodes, gboolean amd_host)
{
  /* one node: the GPU's row; several: the CPU vendor's row (Intel and
   * others 0, AMD 1) */
  int row = nodes <= 1 ? arch_row (arch) : amd_host ? 1 : 0;
  return ll_max_bws[row][nodes_col (nodes)];
}

double
sp_nccl_ring_ll128_per_ch_bw (SpArch arch, guint32 nodes)
{
  return per_ch_ring_ll128[arch_row (arch)][nodes_col (nodes)];
}

double
sp_nccl_tree_per_ch_bw (SpArch arch, guint32 nodes)
{
  return per_ch_tree[arch_row (arch)][nodes_col (nodes)];
}

double
sp_nccl_tree_ll128_per_ch_bw (SpArch arch, guint32 nodes)
{
  return per_ch_tree_ll128[arch_row (arch)][nodes_col (nodes)];
}

double
sp_nccl_nvls_tree_per_ch_bw (SpArch arch, guint32 nodes)
{
  return per_ch_nvls_tree[arch_row (arch)][nodes_col (nodes)];
}

double
sp_nccl_nvls_efficiency (SpArch arch)
{
  return arch == SP_ARCH_CPU ? 0.0 : nvls_efficiency[arch];
}

double
sp_nccl_tree_correction (SpProto proto, guint64 bytes)
{
  /* tuning.cc: logSize = log2i(nBytes >> 6); applied for 0 <= logSize < 23 */
  guint64 units = bytes >> 6;
  if (units == 0)
    return 1.0;
  int log_size = 0;
  while (units > 1)
    {
      units >>= 1;
      log_size++;
    }
  return log_size < 23 ? tree_correction[proto_index (proto)][log_size] : 1.0;
}

/* By generation, but for the two compute capabilities NCCL gives a rate of
 * their own (topo.h SM60 18.0, SM86 12.0): NVLink 1 of the P100 at 20 GB/s
 * per link and direction, NVLink 3 bridges of the A40 / RTX A-series class at
 * 112.5 GB/s both ways over 4 links, 14.0625 per link and direction. */
static void
nvlink_link_gbs (guint cc, SpArch arch, double *nccl, double *datasheet)
{
  if (cc == 60)
    *nccl = 18.0, *datasheet = 20.0;
  else if (cc == 86)
    *nccl = 12.0, *datasheet = 14.0625;
  else
    *nccl = nccl_nvlink_link_gbs[arch_row (arch)],
    *datasheet = datasheet_nvlink_link_gbs[arch_row (arch)];
}

double
sp_nccl_nvlink_efficiency (guint cc, SpArch arch)
{
  double nccl, datasheet;
  nvlink_link_gbs (cc, arch, &nccl, &datasheet);
  return nccl / datasheet;
}

double
sp_nccl_nvlink_datasheet_link_gbs (guint cc, SpArch arch)
{
  double nccl, datasheet;
  nvlink_link_gbs (cc, arch, &nccl, &datasheet);
  return datasheet;
}
