/* tests/fuzz/fuzz-estimate.c — the cost model and the flow simulator on
 * any topology the INI reader accepts (sp_sim_estimate, the code behind
 * `shardplan estimate`, `sim`, `sweep` and `calibrate`).
 *
 * Input: an 8-byte request block, then the topology INI:
 *   [0] model (des, analytic, nccl)       [1] collective
 *   [2] algorithm (0 = auto, else ring, tree, nvls, nvls_tree, pat, direct)
 *   [3] protocol (0 = auto, else ll, ll128, simple)
 *   [4] ranks per node (0 = every GPU)    [5] nodes (0 = every node)
 *   [6..7] size: mantissa [6] << (exponent [7] mod 41)
 * Topologies of more than 512 ranks are skipped, and so are more than 16
 * NICs per node with the des model: the flow model of one collective
 * over them can take longer than a fuzz input should (an all-to-all over
 * 768 ranks with 47 NICs per node: 109 s, every NIC and leaf its own
 * symmetry class; bench/RESULTS.md has the sizes that matter).
 *
 * A request either fails with a message (SP_ERROR_INVALID_ARGUMENT,
 * SP_ERROR_UNSUPPORTED) or gives a finite, non-negative time and
 * bandwidths, a concrete algorithm and protocol, and a group that fits the
 * topology; a nonzero size over two or more ranks takes time.  Crashes,
 * sanitizer reports (division by zero, overflow in a conversion) and NaN
 * are findings.  With [calibration] std_errors, sp_calib_predict (the ±
 * of `estimate`) runs too. */
#include "config.h"
#include "fuzz-common.h"
#include "shardplan/shardplan.h"
#include "shardplan/sim.h"
#include "shardplan/calibrate-fit.h"

#include <math.h>

FUZZ_INIT_LOG_ONLY

#define HEADER 8
#define MAX_WORLD 512
#define MAX_DES_NICS 16

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  if (size < HEADER)
    return 0;
  GError *e = NULL;
  SpTopo *topo = sp_topo_load_data ((const char *) data + HEADER, (gssize) (size - HEADER),
                                    "fuzz.ini", &e);
  if (!topo)
    {
      fuzz_refused (e);
      return 0;
    }
  guint32 world = sp_topo_world_size (topo);
  if (world > MAX_WORLD)
    {
      sp_topo_free (topo);
      return 0;
    }
  static const SpSimModel models[] = { SP_SIM_DES, SP_SIM_ANALYTIC, SP_SIM_NCCL };
  SpSimModel model = models[data[0] % G_N_ELEMENTS (models)];
  if (model == SP_SIM_DES && sp_topo_spec (topo)->nics_per_node > MAX_DES_NICS)
    {
      sp_topo_free (topo);
      return 0;
    }
  static const SpColl colls[] = { SP_COLL_ALL_REDUCE, SP_COLL_ALL_GATHER, SP_COLL_REDUCE_SCATTER,
                                  SP_COLL_ALL_TO_ALL, SP_COLL_BROADCAST, SP_COLL_REDUCE,
                                  SP_COLL_SEND };
  static const SpAlgo algos[] = { SP_ALGO_AUTO, SP_ALGO_RING, SP_ALGO_TREE, SP_ALGO_NVLS,
                                  SP_ALGO_NVLS_TREE, SP_ALGO_PAT, SP_ALGO_DIRECT };
  static const SpProto protos[] = { SP_PROTO_AUTO, SP_PROTO_LL, SP_PROTO_LL128, SP_PROTO_SIMPLE };
  SpCollRequest r;
  sp_coll_request_init (&r);
  r.coll = colls[data[1] % G_N_ELEMENTS (colls)];
  r.algo = algos[data[2] % G_N_ELEMENTS (algos)];
  r.proto = protos[data[3] % G_N_ELEMENTS (protos)];
  r.ranks_per_node = data[4];
  r.nodes = data[5];
  r.bytes = (guint64) data[6] << (data[7] % 41);
  guint32 two[2] = { 0, world - 1 };
  if (r.coll == SP_COLL_SEND)
    {
      /* send: one transfer between the first and the last rank */
      r.ranks = two;
      r.n_ranks = world > 1 ? 2 : 1;
    }
  SpCollEstimate est;
  if (!sp_sim_estimate (topo, model, &r, &est, &e))
    {
      g_assert (e != NULL && e->message[0] != '\0');
      if (!(e->domain == SP_ERROR
            && (e->code == SP_ERROR_INVALID_ARGUMENT || e->code == SP_ERROR_UNSUPPORTED)))
        {
          fprintf (stderr, "estimate: unexpected error %s %d: %s\n", g_quark_to_string (e->domain),
                   e->code, e->message);
          abort ();
        }
      g_error_free (e);
      sp_topo_free (topo);
      return 0;
    }
  if (!isfinite (est.algbw_gbs) || !isfinite (est.busbw_gbs) || est.algbw_gbs < 0
      || est.busbw_gbs < 0 || est.algo == SP_ALGO_AUTO || est.proto == SP_PROTO_AUTO
      || est.n_ranks == 0 || est.n_ranks > world || est.n_nodes == 0 || est.n_nodes > est.n_ranks
      || (r.bytes > 0 && est.n_ranks > 1 && est.time_ns == 0))
    {
      fprintf (stderr,
               "estimate: %s %s/%s %" G_GUINT64_FORMAT " B model %d: time %" G_GUINT64_FORMAT
               " ns, algbw %g, busbw %g, %u ranks on %u nodes\n",
               sp_coll_name (r.coll), sp_algo_name (est.algo), sp_proto_name (est.proto), r.bytes,
               (int) model, est.time_ns, est.algbw_gbs, est.busbw_gbs, est.n_ranks, est.n_nodes);
      abort ();
    }
  /* a topology with [calibration] std_errors: the estimate's standard
   * error is finite and >= 0, or INFINITY with a value named
   * undetermined (INFINITY alone: a negative variance, correlations the
   * reader should have refused); the perturbed topologies stay valid */
  if (sp_topo_spec (topo)->cal_errors.given != 0)
    {
      SpCalibPrediction pr;
      if (!sp_calib_predict (topo, model, &r, &est, &pr, &e))
        {
          fprintf (stderr, "predict: %s\n", e->message);
          abort ();
        }
      if (!(pr.std_error >= 0) || (isinf (pr.std_error) && pr.undetermined == 0)
          || !(pr.residual_sd >= 0 && pr.residual_sd <= 10))
        {
          fprintf (stderr, "predict: std_error %g, undetermined 0x%x, residual_sd %g\n",
                   pr.std_error, pr.undetermined, pr.residual_sd);
          abort ();
        }
    }
  sp_topo_free (topo);
  return 0;
}
