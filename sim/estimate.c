/* sp_sim_estimate(): one collective with either model. */
#include "config.h"
#include "sim-internal.h"
#include "plan-run.h"
#include "sim-testing.h"

#include <math.h>
#include <string.h>

const char *
sp_sim_model_name (SpSimModel model)
{
  switch (model)
    {
    case SP_SIM_ANALYTIC:
      return "analytic";
    case SP_SIM_DES:
      return "des";
    case SP_SIM_NCCL:
      return "nccl";
    default:
      return NULL;
    }
}

gboolean
sp_sim_model_from_name (const char *name, SpSimModel *out_model)
{
  if (name == NULL)
    return FALSE;
  if (strcmp (name, "analytic") == 0)
    *out_model = SP_SIM_ANALYTIC;
  else if (strcmp (name, "des") == 0)
    *out_model = SP_SIM_DES;
  else if (strcmp (name, "nccl") == 0)
    *out_model = SP_SIM_NCCL;
  else
    return FALSE;
  return TRUE;
}

void
sp_coll_request_init (SpCollRequest *r)
{
  memset (r, 0, sizeof *r);
  r->coll = SP_COLL_ALL_REDUCE;
  r->algo = SP_ALGO_AUTO;
  r->proto = SP_PROTO_AUTO;
}

/* The α-β lower bound every analytic answer must respect: a rank must at
 * least receive the data it does not have, through all its ports at once. */
static double
lower_bound_us (const SpShape *sh, SpColl coll, double S)
{
  double n = sh->n;
  double need;
  switch (coll)
    {
    case SP_COLL_ALL_GATHER:
    case SP_COLL_ALL_TO_ALL:
    case SP_COLL_ALL_REDUCE:
      need = S * (n - 1) / n;
      break;
    case SP_COLL_REDUCE_SCATTER:
      need = S / n * (n - 1) / n;
      break;
    default:
      need = S;
      break;
    }
  double ports = sh->intra_gbs + (sh->nodes > 1 ? sh->gpu_nics * sh->nic_gbs : 0)
                 + (sh->intra_far ? SP_PCIE_FALLBACK_GBS : 0);
  return need / (1000.0 * ports);
}

gboolean
sp_sim_group_ranks (const SpTopo *topo, const SpCollRequest *r, guint32 **out_ranks,
                    guint32 *out_n, GError **error)
{
  const SpTopoSpec *s = sp_topo_spec (topo);
  if (r->ranks != NULL)
    {
      if (r->n_ranks == 0)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT, "the group has no ranks");
          return FALSE;
        }
      *out_ranks = g_memdup2 (r->ranks, sizeof (guint32) * r->n_ranks);
      *out_n = r->n_ranks;
      return TRUE;
    }
  guint32 nodes = r->nodes ? r->nodes : s->nodes;
  guint32 k = r->ranks_per_node ? r->ranks_per_node : s->gpus_per_node;
  if (nodes > s->nodes)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "the group spans %u nodes but the topology has %u", nodes, s->nodes);
      return FALSE;
    }
  if (k > s->gpus_per_node)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "ranks per node %u is more than the %u GPUs per node of the topology", k,
                   s->gpus_per_node);
      return FALSE;
    }
  guint64 n = (guint64) nodes * k;
  guint32 *ranks = g_new (guint32, n);
  for (guint64 i = 0; i < n; i++)
    ranks[i] = (guint32) ((i / k) * s->gpus_per_node + i % k);
  *out_ranks = ranks;
  *out_n = (guint32) n;
  return TRUE;
}

gboolean
sp_sim_estimate (const SpTopo *topo, SpSimModel model, const SpCollRequest *r,
                 SpCollEstimate *out, GError **error)
{
  g_return_val_if_fail (topo != NULL && r != NULL && out != NULL, FALSE);
  const SpTopoSpec *s = sp_topo_spec (topo);
  if (!sp_sim_coll_supported (r->coll))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_UNSUPPORTED,
                   "collective '%s' is not simulated (accepted: all_reduce, all_gather, "
                   "reduce_scatter, all_to_all, broadcast, reduce, send, recv, p2p)",
                   sp_coll_name (r->coll) ? sp_coll_name (r->coll) : "?");
      return FALSE;
    }
  if (sp_sim_model_name (model) == NULL)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT, "unknown model %d", (int) model);
      return FALSE;
    }
  g_autofree guint32 *ranks = NULL;
  guint32 n = 0;
  if (!sp_sim_group_ranks (topo, r, &ranks, &n, error))
    return FALSE;
  SpColl coll = r->coll;
  if (coll == SP_COLL_P2P && n != 2)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "p2p runs between 2 ranks (the first sends to the second), got %u", n);
      return FALSE;
    }
  if (sp_sim_is_p2p (coll) && n < 2)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "%s needs at least 2 ranks (each sends to the %s), got %u", sp_coll_name (coll),
                   coll == SP_COLL_SEND ? "next" : "previous", n);
      return FALSE;
    }
  /* the ranks are the hosts' (K per host); the network is NCCL's view */
  SpTopoSpec view;
  if (!sp_sim_nccl_spec (s, &view, error))
    return FALSE;
  s = &view;
  SpShape sh;
  if (!sp_shape_init_model (&sh, s, ranks, n, model, error))
    return FALSE;
  SpCollEstimate est = { 0 };
  est.n_ranks = n;
  est.n_nodes = sh.nodes;
  est.n_channels = sh.n_channels;
  if (n == 1 || r->bytes == 0)
    {
      /* nothing runs: a nominal algorithm and protocol, the first of the
       * usual ones that [nccl] (NCCL_ALGO / NCCL_PROTO) allows */
      static const SpAlgo algos[] = { SP_ALGO_RING, SP_ALGO_TREE, SP_ALGO_NVLS, SP_ALGO_NVLS_TREE,
                                      SP_ALGO_PAT };
      static const SpProto protos[] = { SP_PROTO_SIMPLE, SP_PROTO_LL, SP_PROTO_LL128 };
      est.algo = coll == SP_COLL_ALL_TO_ALL || sp_sim_is_p2p (coll) ? SP_ALGO_DIRECT : SP_ALGO_RING;
      for (guint a = 0; est.algo != SP_ALGO_DIRECT && a < G_N_ELEMENTS (algos); a++)
        if (sp_topo_spec_nccl_allows (s, coll, algos[a], SP_PROTO_AUTO))
          {
            est.algo = algos[a];
            break;
          }
      est.proto = SP_PROTO_SIMPLE;
      for (guint p = 0; p < G_N_ELEMENTS (protos); p++)
        if (sp_topo_spec_nccl_allows (s, coll, SP_ALGO_AUTO, protos[p]))
          {
            est.proto = protos[p];
            break;
          }
      if (r->algo != SP_ALGO_AUTO)
        est.algo = r->algo;
      if (r->proto != SP_PROTO_AUTO)
        est.proto = r->proto;
      *out = est;
      return TRUE;
    }
  SpCost cost;
  if (!sp_cost_choose (&sh, coll, r->bytes, r->algo, r->proto, &cost, error))
    return FALSE;
  if (sp_sim_is_p2p (coll) && n > 2 && model != SP_SIM_DES)
    {
      /* an exchange around the group (each member to its neighbour): the
       * closed form has its pairs share nothing, so the slowest pair; pairs
       * of one shape (inside a node, across nodes …) are costed once */
      g_autoptr (GArray) seen = g_array_new (FALSE, FALSE, sizeof (SpShape));
      for (guint32 g = 0; g < n; g++)
        {
          guint32 pair[2] = { ranks[g], ranks[(g + 1) % n] };
          SpShape ps;
          SpCost pc;
          if (!sp_shape_init_model (&ps, s, pair, 2, model, error))
            return FALSE;
          guint i = 0;
          while (i < seen->len && !sp_plan_shape_equal (&g_array_index (seen, SpShape, i), &ps))
            i++;
          if (i < seen->len)
            continue;
          g_array_append_val (seen, ps);
          if (!sp_cost_choose (&ps, coll, r->bytes, r->algo, r->proto, &pc, error))
            return FALSE;
          if (i == 0 || pc.time_us > cost.time_us)
            cost = pc;
        }
    }
  est.algo = cost.algo;
  est.proto = cost.proto;
  if (model != SP_SIM_DES)
    {
      double t_us = cost.time_us;
      if (sp_sim_testing_fault == SP_SIM_FAULT_OVERSPEED)
        t_us = cost.latency_us + (t_us - cost.latency_us) / 1e3;
      double lb = lower_bound_us (&sh, coll, (double) r->bytes);
      if (t_us - cost.latency_us < lb * (1 - 1e-9))
        {
          g_set_error (error, SP_ERROR, SP_ERROR_SIMULATION,
                       "analytic %s of %" G_GUINT64_FORMAT " bytes: %.3f us of transfer is below "
                       "the alpha-beta lower bound of %.3f us",
                       sp_coll_name (coll), r->bytes, t_us - cost.latency_us, lb);
          return FALSE;
        }
      guint64 ns = sp_sim_horizon_ns (t_us * 1000.0);
      if (ns > SP_SIM_HORIZON_NS)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_UNSUPPORTED,
                       "analytic %s of %" G_GUINT64_FORMAT " bytes: %.4g us, beyond the "
                       "simulator's horizon of " SP_SIM_HORIZON_TEXT, sp_coll_name (coll),
                       r->bytes, t_us);
          return FALSE;
        }
      est.time_ns = ns;
    }
  else
    {
      if ((guint64) s->nodes * s->gpus_per_node > (1u << 28))
        {
          g_set_error (error, SP_ERROR, SP_ERROR_UNSUPPORTED,
                       "the des model handles at most 2^28 GPUs; use the analytic model");
          return FALSE;
        }
      SpNet *net = sp_net_new (s);
      if (!(coll == SP_COLL_ALL_TO_ALL && cost.algo == SP_ALGO_DIRECT)) /* sp_des_coll_new checks */
        {
          guint64 flows = sp_des_flow_bound (net, &sh, &cost, coll, ranks, n);
          if (flows > SP_DES_ESTIMATE_MAX_FLOWS)
            {
              g_set_error (error, SP_ERROR, SP_ERROR_UNSUPPORTED,
                           "%s (%s) over %u ranks needs %" G_GUINT64_FORMAT " flows, more than "
                           "the des model's limit of %u for one collective; use the analytic "
                           "model (the same time for one collective alone)", sp_coll_name (coll),
                           sp_algo_name (cost.algo), n, flows, SP_DES_ESTIMATE_MAX_FLOWS);
              sp_net_free (net);
              return FALSE;
            }
        }
      SpEngine *eng = sp_engine_new (net, NULL, NULL);
      g_autofree char *label = g_strdup_printf ("%s of %" G_GUINT64_FORMAT " bytes over %u ranks",
                                                sp_coll_name (coll), r->bytes, n);
      SpDesColl *dc = sp_des_coll_new (eng, net, &sh, &cost, coll, r->bytes, ranks, n, 0,
                                       label, error);
      gboolean ok = dc != NULL && sp_engine_run (eng, error);
      if (ok)
        est.time_ns = sp_engine_job_end (eng, sp_des_coll_job (dc))
                      - sp_engine_job_start (eng, sp_des_coll_job (dc));
      sp_des_coll_free (dc);
      sp_engine_free (eng);
      sp_net_free (net);
      if (!ok)
        return FALSE;
    }
  sp_coll_bandwidths (coll, r->bytes, n, est.time_ns,
                      &est.algbw_gbs, &est.busbw_gbs);
  *out = est;
  return TRUE;
}
