/* The network built from a topology: one-direction links with capacities
 * in B/ns (= GB/s).  Layout of the link ids (W = world size, M = nodes ×
 * NICs per node, L = leaves):
 *   [0, W)            GPU port to the intra-node fabric (up)
 *   [W, 2W)           intra-node fabric to the GPU (down)
 *   [2W, 4W)          PCIe up / down (NVLink mesh only: non-neighbours)
 *   then M NIC transmit, M NIC receive, L leaf uplinks, L leaf downlinks.
 * The spine and the switches themselves are non-blocking; what limits a
 * leaf is its uplink bundle: its SP_LEAF_PORTS down ports × NIC rate /
 * oversubscription — a property of the switch, populated or not (a leaf
 * with one node still has its 32 / r uplinks). */
#include "config.h"
#include "sim-internal.h"

#include <math.h>

struct _SpNet {
  SpTopoSpec spec;
  guint64 world;
  guint32 nics;        /* per node */
  guint32 n_leaves;
  guint32 blocks;      /* rail: leaves per rail */
  guint32 base_pcie, base_nic_tx, base_nic_rx, base_leaf_up, base_leaf_down, n_links;
  double intra, pcie, nic;
  double *leaf_cap;    /* per leaf, B/ns */
};

static guint32
leaf_of (const SpNet *net, guint32 node, guint32 nic)
{
  if (net->spec.fabric == SP_FABRIC_RAIL)
    return nic * net->blocks + node / SP_LEAF_PORTS;
  return (guint32) (((guint64) node * net->nics + nic) / SP_LEAF_PORTS);
}

SpNet *
sp_net_new (const SpTopoSpec *spec)
{
  SpNet *net = g_new0 (SpNet, 1);
  net->spec = *spec;
  net->world = (guint64) spec->nodes * spec->gpus_per_node;
  net->nics = spec->nics_per_node;
  sp_sim_link_rates (spec, &net->intra, &net->nic);
  net->pcie = SP_PCIE_FALLBACK_GBS;
  guint64 m = (guint64) spec->nodes * net->nics;
  if (spec->fabric == SP_FABRIC_RAIL)
    {
      net->blocks = (spec->nodes + SP_LEAF_PORTS - 1) / SP_LEAF_PORTS;
      net->n_leaves = net->blocks * net->nics;
    }
  else if (spec->fabric == SP_FABRIC_FAT_TREE)
    net->n_leaves = (guint32) ((m + SP_LEAF_PORTS - 1) / SP_LEAF_PORTS);
  guint64 w = net->world;
  net->base_pcie = (guint32) (2 * w);
  net->base_nic_tx = (guint32) (spec->intra_kind == SP_INTRA_NVLINK ? 4 * w : 2 * w);
  net->base_nic_rx = (guint32) (net->base_nic_tx + m);
  net->base_leaf_up = (guint32) (net->base_nic_rx + m);
  net->base_leaf_down = net->base_leaf_up + net->n_leaves;
  net->n_links = net->base_leaf_down + net->n_leaves;
  net->leaf_cap = g_new0 (double, MAX (net->n_leaves, 1));
  /* every leaf's uplinks: its full port count over the oversubscription
   * (a partly populated last leaf keeps its uplinks) */
  for (guint32 l = 0; l < net->n_leaves; l++)
    net->leaf_cap[l] = SP_LEAF_PORTS * net->nic / spec->oversubscription;
  return net;
}

void
sp_net_free (SpNet *net)
{
  if (net == NULL)
    return;
  g_free (net->leaf_cap);
  g_free (net);
}

guint32
sp_net_n_links (const SpNet *net)
{
  return net->n_links;
}

double
sp_net_link_capacity (const SpNet *net, guint32 link)
{
  if (link < net->world)
    return net->intra;
  if (link < 2 * net->world)
    return net->intra;
  if (link < net->base_nic_tx)
    return net->pcie;
  if (link < net->base_leaf_up)
    return net->nic;
  if (link < net->base_leaf_down)
    return net->leaf_cap[link - net->base_leaf_up];
  return net->leaf_cap[link - net->base_leaf_down];
}

guint32
sp_net_port_up (const SpNet *net, guint32 rank)
{
  (void) net;
  return rank;
}

guint32
sp_net_port_down (const SpNet *net, guint32 rank)
{
  return (guint32) (net->world + rank);
}

gboolean
sp_net_rail (const SpNet *net)
{
  return net->spec.fabric == SP_FABRIC_RAIL;
}

guint
sp_net_path_intra (const SpNet *net, guint32 src, guint32 dst, gboolean direct, guint32 *out)
{
  guint32 g = net->spec.gpus_per_node;
  if (direct && net->spec.intra_kind == SP_INTRA_NVLINK
      && !sp_sim_mesh_neighbours (g, src % g, dst % g))
    {
      out[0] = net->base_pcie + src;
      out[1] = (guint32) (net->base_pcie + net->world + dst);
      return 2;
    }
  out[0] = src;
  out[1] = (guint32) (net->world + dst);
  return 2;
}

guint
sp_net_path_inter (const SpNet *net, guint32 src, guint32 dst, guint32 nic, guint32 nic_dst,
                   guint32 *out)
{
  guint32 g = net->spec.gpus_per_node;
  guint32 ns = src / g, nd = dst / g;
  guint n = 0;
  out[n++] = net->base_nic_tx + ns * net->nics + nic;
  if (net->n_leaves > 1)
    {
      guint32 ls = leaf_of (net, ns, nic), ld = leaf_of (net, nd, nic_dst);
      if (ls != ld)
        {
          out[n++] = net->base_leaf_up + ls;
          out[n++] = net->base_leaf_down + ld;
        }
    }
  out[n++] = net->base_nic_rx + nd * net->nics + nic_dst;
  return n;
}

void
sp_net_gpu_nics (const SpNet *net, guint32 local, guint32 *out_first, guint32 *out_count)
{
  guint32 g = net->spec.gpus_per_node;
  *out_first = (guint32) ((guint64) local * net->nics / g);
  *out_count = net->nics >= g ? net->nics / g : 1;
}

guint32
sp_net_leaf (const SpNet *net, guint32 node, guint32 nic)
{
  return net->n_leaves > 1 ? leaf_of (net, node, nic) : SP_NET_NO_LEAF;
}

guint32
sp_net_leaf_up (const SpNet *net, guint32 leaf)
{
  return net->base_leaf_up + leaf;
}

guint32
sp_net_leaf_down (const SpNet *net, guint32 leaf)
{
  return net->base_leaf_down + leaf;
}

guint32
sp_net_nic_tx (const SpNet *net, guint32 node, guint32 nic)
{
  return net->base_nic_tx + node * net->nics + nic;
}

guint32
sp_net_nic_rx (const SpNet *net, guint32 node, guint32 nic)
{
  return net->base_nic_rx + node * net->nics + nic;
}
