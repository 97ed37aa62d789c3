/* Collectives as phases of flows on the engine (the `des` model).
 *
 * NCCL pipelines its ring and tree steps (NCCL_STEPS slots per connection),
 * so in steady state every edge of a ring carries data at once; a ring is
 * therefore ONE phase in which each edge moves its whole share (nsteps/n of
 * the buffer) and the network's bottleneck decides the rate.  Likewise the
 * tree (reduce up and broadcast down run concurrently), NVLS, all-to-all.
 * PAT is log2(n) phases with partners at distance 2^k.  Latency is NCCL's
 * (model.c), charged before the phase; protocol efficiency inflates the
 * bytes on the wire; per-channel and LL caps become per-flow rate caps. */
#include "config.h"
#include "sim-internal.h"
#include "sim-testing.h"

#include <math.h>
#include <string.h>

struct _SpDesColl {
  SpEngine *engine;
  const SpNet *net;
  SpShape sh;
  SpCost cost;
  SpColl coll;
  double S;          /* payload bytes (nccl-tests size) */
  guint32 *ranks;
  guint32 n;
  guint32 *nic_set;  /* the group's NICs on its first node (any count: an
                      * NVL72 domain is one node of 72 NICs) */
  guint32 n_nics;
  double t_cap_ns;   /* INFINITY: no cap */
  double net_factor; /* ring / tree transfers between nodes: eff × this (sp_cost_net_factor) */
  guint32 job;
  guint32 n_phases;
  /* tree / nvls: nodes in order of first appearance, members per node */
  guint32 n_nodes;
  guint32 *node_off; /* n_nodes + 1 offsets into node_members */
  guint32 *node_members;
  SpA2a *a2a;        /* direct all_to_all: its layout (des-a2a.c) */
};

guint32
sp_des_coll_job (const SpDesColl *dc)
{
  return dc->job;
}

void
sp_des_coll_free (SpDesColl *dc)
{
  if (dc == NULL)
    return;
  g_free (dc->ranks);
  g_free (dc->node_off);
  g_free (dc->node_members);
  g_free (dc->nic_set);
  sp_a2a_free (dc->a2a);
  g_free (dc);
}

/* One logical transfer of `payload` bytes; crossing nodes it is spread over
 * NICs: `group_nics` uses the group's NIC set with the same NIC index on
 * both ends (how NCCL lays rings and trees on rails), otherwise the GPUs'
 * own NICs (rail fabric: the destination's rail on both ends, as NCCL's
 * PXN does). */
static void
add_transfer (SpDesColl *dc, guint32 src, guint32 dst, double payload, double weight,
              gboolean direct, gboolean group_nics, double eff)
{
  guint32 links[SP_PATH_MAX];
  guint32 g = dc->sh.spec->gpus_per_node;
  gboolean intra = src / g == dst / g;
  double wire = payload / eff / (intra ? 1.0 : dc->net_factor);
  double cap = isfinite (dc->t_cap_ns) ? wire / dc->t_cap_ns : INFINITY;
  if (intra)
    {
      guint nl = sp_net_path_intra (dc->net, src, dst, direct, links);
      sp_engine_add_flow (dc->engine, dc->job, wire, links, nl, weight, cap);
      return;
    }
  guint32 first_s, first_d, count;
  if (group_nics)
    {
      for (guint32 k = 0; k < dc->n_nics; k++)
        {
          guint nl = sp_net_path_inter (dc->net, src, dst, dc->nic_set[k], dc->nic_set[k], links);
          sp_engine_add_flow (dc->engine, dc->job, wire / dc->n_nics, links, nl,
                              weight / dc->n_nics, cap / dc->n_nics);
        }
      return;
    }
  sp_net_gpu_nics (dc->net, dst % g, &first_d, &count);
  if (sp_net_rail (dc->net))
    first_s = first_d;
  else
    sp_net_gpu_nics (dc->net, src % g, &first_s, &count);
  for (guint32 k = 0; k < count; k++)
    {
      guint nl = sp_net_path_inter (dc->net, src, dst, first_s + k, first_d + k, links);
      sp_engine_add_flow (dc->engine, dc->job, wire / count, links, nl, weight / count,
                          cap / count);
    }
}

/* NCCL's binary tree (src/graph/trees.c ncclGetBtree): parent of `rank`. */
static gint64
btree_parent (guint32 nranks, guint32 rank)
{
  if (rank == 0)
    return -1;
  guint32 bit;
  for (bit = 1; bit < nranks; bit <<= 1)
    if (bit & rank)
      break;
  guint32 up = (rank ^ bit) | (bit << 1);
  if (up >= nranks)
    up = rank ^ bit;
  return up;
}

/* The second tree of NCCL's double binary tree (ncclGetDtree): mirrored
 * for an even count, shifted by one for an odd count. */
static gint64
dtree_parent (guint32 nranks, guint32 rank)
{
  if (nranks % 2 == 1)
    {
      gint64 u = btree_parent (nranks, (rank + nranks - 1) % nranks);
      return u < 0 ? -1 : (u + 1) % nranks;
    }
  gint64 u = btree_parent (nranks, nranks - 1 - rank);
  return u < 0 ? -1 : (gint64) nranks - 1 - u;
}

/* Parent of node v in tree t (0: ncclGetBtree, 1: ncclGetDtree) of NCCL's
 * double binary tree over N nodes; -1 at a root. */
static gint64
dbtree_parent (guint32 N, int t, guint32 v)
{
  return t == 0 ? btree_parent (N, v) : dtree_parent (N, v);
}

static void
phase_ring (SpDesColl *dc)
{
  guint32 n = dc->n;
  double w = dc->sh.n_channels, eff = dc->cost.eff;
  if (dc->coll == SP_COLL_BROADCAST || dc->coll == SP_COLL_REDUCE)
    {
      for (guint32 i = 0; i + 1 < n; i++)
        {
          guint32 a = dc->ranks[i], b = dc->ranks[i + 1];
          if (dc->coll == SP_COLL_REDUCE)
            add_transfer (dc, b, a, dc->S, w, FALSE, TRUE, eff);
          else
            add_transfer (dc, a, b, dc->S, w, FALSE, TRUE, eff);
        }
      return;
    }
  double nsteps = dc->coll == SP_COLL_ALL_REDUCE ? 2.0 * (n - 1) : n - 1.0;
  double edge = dc->S * nsteps / n;
  for (guint32 i = 0; i < n; i++)
    add_transfer (dc, dc->ranks[i], dc->ranks[(i + 1) % n], edge, w, FALSE, TRUE, eff);
}

static void
phase_tree (SpDesColl *dc)
{
  double w = dc->sh.n_channels, eff = dc->cost.eff, S = dc->S;
  for (guint32 v = 0; v < dc->n_nodes; v++)
    {
      const guint32 *m = dc->node_members + dc->node_off[v];
      guint32 k = dc->node_off[v + 1] - dc->node_off[v];
      for (guint32 j = 0; j + 1 < k; j++)
        {
          add_transfer (dc, m[j + 1], m[j], S, w, FALSE, TRUE, eff); /* reduce */
          add_transfer (dc, m[j], m[j + 1], S, w, FALSE, TRUE, eff); /* broadcast */
        }
    }
  guint32 N = dc->n_nodes;
  if (N < 2)
    return;
  for (int t = 0; t < 2; t++)
    for (guint32 v = 0; v < N; v++)
      {
        gint64 p = dbtree_parent (N, t, v);
        if (p < 0)
          continue;
        guint32 child = dc->node_members[dc->node_off[v]];
        guint32 parent = dc->node_members[dc->node_off[p]];
        add_transfer (dc, child, parent, S / 2, w / 2, FALSE, TRUE, eff);
        add_transfer (dc, parent, child, S / 2, w / 2, FALSE, TRUE, eff);
      }
}

static void
phase_nvls (SpDesColl *dc)
{
  double S = dc->S, eff = dc->cost.eff;
  double k = dc->sh.ppn, n = dc->n;
  double up, down;
  if (dc->coll == SP_COLL_ALL_REDUCE)
    up = down = S * (k + 1) / k;
  else if (dc->coll == SP_COLL_ALL_GATHER)
    {
      up = S / n;
      down = S;
    }
  else
    {
      up = S;
      down = S / n;
    }
  for (guint32 i = 0; i < dc->n; i++)
    {
      guint32 l = sp_net_port_up (dc->net, dc->ranks[i]);
      sp_engine_add_flow (dc->engine, dc->job, up / eff, &l, 1, 1.0, INFINITY);
      l = sp_net_port_down (dc->net, dc->ranks[i]);
      sp_engine_add_flow (dc->engine, dc->job, down / eff, &l, 1, 1.0, INFINITY);
    }
  /* NVLS runs inside one node; NVLSTree also across nodes: member j of
   * every node is the head of its 1/k of the buffer, reduced up and
   * broadcast down NCCL's double binary tree over the nodes (half the share
   * on each tree) through its own NICs */
  guint32 N = dc->n_nodes;
  if (dc->cost.algo != SP_ALGO_NVLS_TREE)
    return;
  for (int t = 0; t < 2; t++)
    for (guint32 v = 0; v < N; v++)
      {
        gint64 p = dbtree_parent (N, t, v);
        if (p < 0)
          continue;
        for (guint32 j = 0; j < (guint32) k; j++)
          {
            guint32 a = dc->node_members[dc->node_off[v] + j];
            guint32 b = dc->node_members[dc->node_off[p] + j];
            add_transfer (dc, a, b, S / k / 2, 1.0, FALSE, FALSE, 1.0);
            add_transfer (dc, b, a, S / k / 2, 1.0, FALSE, FALSE, 1.0);
          }
      }
}

static guint32
pat_distance (const SpDesColl *dc, guint32 phase)
{
  /* all_gather doubles the distance (Bruck); reduce_scatter runs it backwards */
  guint32 k = dc->coll == SP_COLL_REDUCE_SCATTER ? dc->n_phases - 1 - phase : phase;
  return 1u << k;
}

static void
phase_pat (SpDesColl *dc, guint32 phase)
{
  guint32 n = dc->n, d = pat_distance (dc, phase);
  double blocks = MIN (d, n - d);
  for (guint32 i = 0; i < n; i++)
    {
      guint32 peer = (i + n - d) % n;
      add_transfer (dc, dc->ranks[i], dc->ranks[peer], blocks * dc->S / n, 1.0, FALSE, TRUE,
                    dc->cost.eff);
    }
}

static void
phase_direct (SpDesColl *dc)
{
  if (sp_sim_is_p2p (dc->coll))
    {
      /* the exchange around the group: each member sends S to the next
       * (send) or the previous member (recv); two ranks: both ways, as
       * nccl-tests' sendrecv and the executor.  p2p: the first of its two
       * ranks to the second only. */
      guint32 step = dc->coll == SP_COLL_RECV ? dc->n - 1 : 1;
      for (guint32 g = 0; g < sp_sim_p2p_flows (dc->coll, dc->n); g++)
        add_transfer (dc, dc->ranks[g], dc->ranks[(g + step) % dc->n], dc->S, 1.0, TRUE, FALSE,
                      dc->cost.eff);
      return;
    }
  double per_peer = dc->S / dc->n;
  if (dc->a2a != NULL && sp_a2a_mode (dc->a2a) != SP_SIM_A2A_PAIRS)
    {
      double wire = per_peer / dc->cost.eff;
      sp_a2a_add_flows (dc->a2a, dc->engine, dc->job, wire,
                        isfinite (dc->t_cap_ns) ? wire / dc->t_cap_ns : INFINITY);
      return;
    }
  for (guint32 i = 0; i < dc->n; i++)
    for (guint32 j = 0; j < dc->n; j++)
      if (i != j)
        add_transfer (dc, dc->ranks[i], dc->ranks[j], per_peer, 1.0, TRUE, FALSE, dc->cost.eff);
}

static void
des_phase (SpEngine *engine, guint32 job, guint32 phase, gpointer data)
{
  (void) engine;
  (void) job;
  SpDesColl *dc = data;
  switch (dc->cost.algo)
    {
    case SP_ALGO_RING:
      phase_ring (dc);
      break;
    case SP_ALGO_TREE:
      phase_tree (dc);
      break;
    case SP_ALGO_NVLS:
    case SP_ALGO_NVLS_TREE:
      phase_nvls (dc);
      break;
    case SP_ALGO_PAT:
      phase_pat (dc, phase);
      break;
    default:
      phase_direct (dc);
      break;
    }
}

/* The wire bytes each algorithm moves, in closed form (checked by the
 * engine against the flows it was given). */
static double
expected_wire_bytes (const SpDesColl *dc)
{
  double n = dc->n, S = dc->S, N = dc->n_nodes, eff = dc->cost.eff, k = dc->sh.ppn;
  double f = dc->net_factor;
  switch (dc->cost.algo)
    {
    case SP_ALGO_RING:
      {
        /* the ring's edges between nodes carry their bytes at eff × f */
        guint32 g = dc->sh.spec->gpus_per_node, cross_chain = 0, cross_ring = 0;
        for (guint32 i = 0; i < dc->n; i++)
          {
            gboolean x = dc->ranks[i] / g != dc->ranks[(i + 1) % dc->n] / g;
            cross_ring += x;
            cross_chain += x && i + 1 < dc->n;
          }
        if (dc->coll == SP_COLL_BROADCAST || dc->coll == SP_COLL_REDUCE)
          return (n - 1 - cross_chain + cross_chain / f) * S / eff;
        double steps = dc->coll == SP_COLL_ALL_REDUCE ? 2 * (n - 1) : n - 1;
        return steps * S / n * (n - cross_ring + cross_ring / f) / eff;
      }
    case SP_ALGO_TREE:
      return (2 * (n - N) + 2 * (N - 1) / f) * S / eff;
    case SP_ALGO_NVLS:
    case SP_ALGO_NVLS_TREE: /* the tree's 2 (N − 1) edges carry S/k each way, k heads */
      if (dc->coll == SP_COLL_ALL_REDUCE)
        return 2 * n * S * (k + 1) / k / eff + (N > 1 ? 2 * (N - 1) * S : 0);
      return n * (S + S / n) / eff;
    case SP_ALGO_PAT:
      return (n - 1) * S / eff;
    default:
      return sp_sim_is_p2p (dc->coll) ? sp_sim_p2p_flows (dc->coll, dc->n) * S / eff
                                       : (n - 1) * S / eff;
    }
}

static void
build_nodes (SpDesColl *dc)
{
  guint32 g = dc->sh.spec->gpus_per_node;
  GHashTable *index = g_hash_table_new (g_direct_hash, g_direct_equal);
  guint32 *node_of = g_new (guint32, dc->n);
  guint32 *count = g_new0 (guint32, dc->n + 1);
  guint32 nn = 0;
  for (guint32 i = 0; i < dc->n; i++)
    {
      gpointer key = GUINT_TO_POINTER (dc->ranks[i] / g + 1);
      gpointer v = g_hash_table_lookup (index, key);
      if (v == NULL)
        {
          v = GUINT_TO_POINTER (++nn);
          g_hash_table_insert (index, key, v);
        }
      node_of[i] = GPOINTER_TO_UINT (v) - 1;
      count[node_of[i]]++;
    }
  dc->n_nodes = nn;
  dc->node_off = g_new0 (guint32, nn + 1);
  for (guint32 v = 0; v < nn; v++)
    dc->node_off[v + 1] = dc->node_off[v] + count[v];
  dc->node_members = g_new (guint32, dc->n);
  memset (count, 0, sizeof (guint32) * (nn + 1));
  for (guint32 i = 0; i < dc->n; i++)
    dc->node_members[dc->node_off[node_of[i]] + count[node_of[i]]++] = dc->ranks[i];
  g_free (node_of);
  g_free (count);
  g_hash_table_destroy (index);
}

SpDesColl *
sp_des_coll_new (SpEngine *engine, const SpNet *net, const SpShape *shape, const SpCost *cost,
                 SpColl coll, guint64 bytes, const guint32 *ranks, guint32 n, guint64 start_ns,
                 const char *label, GError **error)
{
  guint32 g = shape->spec->gpus_per_node;
  SpA2a *a2a = NULL;
  if (cost->algo == SP_ALGO_DIRECT && coll == SP_COLL_ALL_TO_ALL)
    {
      a2a = sp_a2a_new (net, shape->spec, ranks, n);
      guint64 flows = sp_a2a_flows (a2a);
      if (flows > SP_DES_MAX_FLOWS)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_UNSUPPORTED,
                       "all_to_all over %u ranks needs %" G_GUINT64_FORMAT
                       " flows, more than the des model's limit of %u; use the analytic model",
                       n, flows, SP_DES_MAX_FLOWS);
          sp_a2a_free (a2a);
          return NULL;
        }
    }
  SpDesColl *dc = g_new0 (SpDesColl, 1);
  dc->engine = engine;
  dc->net = net;
  dc->sh = *shape;
  dc->cost = *cost;
  dc->net_factor = sp_cost_net_factor (shape, cost->algo, cost->proto);
  dc->coll = coll;
  dc->S = (double) bytes;
  dc->n = n;
  dc->ranks = g_memdup2 (ranks, sizeof (guint32) * n);
  dc->a2a = a2a;
  /* the group's NICs on the first member's node */
  guint32 node0 = ranks[0] / g;
  guint32 nics = MAX (shape->spec->nics_per_node, 1);
  g_autofree gboolean *used = g_new0 (gboolean, nics);
  dc->nic_set = g_new (guint32, nics);
  for (guint32 i = 0; i < n; i++)
    if (ranks[i] / g == node0)
      {
        guint32 first, count;
        sp_net_gpu_nics (net, ranks[i] % g, &first, &count);
        for (guint32 k = 0; k < count && first + k < nics; k++)
          used[first + k] = TRUE;
      }
  for (guint32 k = 0; k < nics; k++)
    if (used[k])
      dc->nic_set[dc->n_nics++] = k;
  if (dc->n_nics == 0)
    dc->nic_set[dc->n_nics++] = 0;
  build_nodes (dc);
  /* caps: the time the whole payload takes at the capped bus bandwidth */
  dc->t_cap_ns = INFINITY;
  if (isfinite (cost->cap_busbw) && cost->cap_busbw > 0 && cost->ratio > 0)
    dc->t_cap_ns = dc->S / (cost->ratio * cost->cap_busbw);
  /* the step floor (README-model §2.1a): no flow ends before floor −
   * latency, so the collective takes max(floor, latency + its flows) —
   * under contention too, where the flows take longer on their own */
  if (cost->floor_us > cost->latency_us)
    dc->t_cap_ns = MAX (isfinite (dc->t_cap_ns) ? dc->t_cap_ns : 0.0,
                        (cost->floor_us - cost->latency_us) * 1000.0);

  guint64 lat_ns = sp_sim_horizon_ns (cost->latency_us * 1000.0);
  guint64 *delay;
  if (cost->algo == SP_ALGO_PAT)
    {
      guint32 phases = 0;
      while ((1u << phases) < n)
        phases++;
      dc->n_phases = phases;
      delay = g_new0 (guint64, phases);
      /* NCCL's PAT latency: base + 2.8 n up front, the log-hops spread */
      double up_front = MIN (cost->latency_us,
                             sp_nccl_base_latency_us (SP_ALGO_PAT, cost->proto) + 2.8 * n);
      double rest = MAX (0.0, cost->latency_us - up_front);
      for (guint32 p = 0; p < phases; p++)
        delay[p] = sp_sim_horizon_ns (((p == 0 ? up_front : 0) + rest / phases) * 1000.0);
    }
  else
    {
      dc->n_phases = 1;
      delay = g_new0 (guint64, 1);
      delay[0] = lat_ns;
    }
  dc->job = sp_engine_add_job (engine, start_ns, dc->n_phases, delay, des_phase, dc, label);
  sp_engine_expect_bytes (engine, dc->job, expected_wire_bytes (dc));
  g_free (delay);
  return dc;
}

guint64
sp_des_flow_bound (const SpNet *net, const SpShape *sh, const SpCost *cost, SpColl coll,
                   const guint32 *ranks, guint32 n)
{
  guint64 nn = sh->n, N = sh->nodes;
  guint64 split = MAX (1, MAX (sh->nics_used, sh->gpu_nics));
  switch (cost->algo)
    {
    case SP_ALGO_RING:
    case SP_ALGO_PAT:
      return nn * split;
    case SP_ALGO_TREE:
      return (2 * nn + 4 * N) * split;
    case SP_ALGO_NVLS: /* one node: a flow up and one down per rank */
      return 2 * nn;
    case SP_ALGO_NVLS_TREE:
      return 2 * nn + 4 * N * sh->ppn * MAX (1, sh->gpu_nics);
    default:
      if (sp_sim_is_p2p (coll))
        return (guint64) sp_sim_p2p_flows (coll, n) * MAX (1, sh->gpu_nics);
      {
        SpA2a *a = sp_a2a_new (net, sh->spec, ranks, n);
        guint64 f = sp_a2a_flows (a);
        sp_a2a_free (a);
        return f;
      }
    }
}
