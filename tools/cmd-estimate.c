/* `shardplan estimate`: what one collective costs on a topology (the quick
 * question), in nccl-tests' conventions so the numbers can be held next to
 * a user's own nccl-tests output. */
#include "config.h"
#include "cli.h"
#include "commands.h"
#include "shardplan/shardplan.h"
#include "shardplan/sim.h"
#include "shardplan/calibrate-fit.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define CMD "estimate"

static const char description[] =
  "--bytes follows nccl-tests' size column: the whole gathered / scattered buffer\n"
  "for all_gather and reduce_scatter, the per-rank buffer for all_reduce,\n"
  "all_to_all, broadcast and send (nccl-tests' sendrecv_perf: every rank sends\n"
  "the buffer to the next and receives one from the previous; also 'sendrecv').\n"
  "Sizes follow nccl-tests' count arithmetic: whole elements of --dtype;\n"
  "all_gather / reduce_scatter divide them among the ranks (all_to_all among\n"
  "the peers).  A size that gives each a whole number of elements is taken as\n"
  "it is (it is what some nccl-tests moved); any other is rounded as current\n"
  "nccl-tests do, each share down to a multiple of 16 bytes, or, where that\n"
  "would move nothing, to whole elements as older ones do.  The size column\n"
  "shows the bytes moved, and a note on stderr says when they differ from\n"
  "--bytes.  A size that gives each rank (peer) less than one element is\n"
  "refused with the smallest valid size; in an A:B sweep such rows are left\n"
  "out, with a note.\n"
  "--bytes A:B (powers of two, A <= B) prints one row per power of two, like\n"
  "nccl-tests -b A -e B -f 2 (json: an array of objects).\n"
  "\n"
  "The group is every node of the topology (or --nodes N of them) with K ranks\n"
  "on each (--ranks-per-node, default every GPU).  --sim-model des (default) is the\n"
  "discrete-event flow model, analytic its closed form, nccl what NCCL's own\n"
  "tuning model predicts (the baseline); all choose algorithm and\n"
  "protocol like NCCL unless --algorithm / --protocol say otherwise.\n"
  "\n"
  "--format json prints {\"collective\", \"bytes\", \"ranks\", \"time_us\", \"algbw_gbs\",\n"
  "\"busbw_gbs\", \"algorithm\", \"protocol\", \"model\"}.\n"
  "\n"
  "On a topology written by 'shardplan calibrate' (with [calibration]\n"
  "std_errors) each estimate also gets the standard error the fit gives it:\n"
  "a '± (cal.)' column (±3.1% below 10 %, else a factor ×÷1.65, ×÷>10 where the\n"
  "calibration does not determine it, 'undetermined' where the time depends on\n"
  "a value the fit could not determine), and in JSON \"calibration\":\n"
  "{\"std_error\" (of log time, or \"undetermined\"), \"residual_sd\" (the fit's\n"
  "scatter), \"undetermined\", \"not_fitted\" (values the time depends on that\n"
  "the fit could not determine, or kept)}.  Not with --sim-model nccl.\n"
  "\n"
  "Example: shardplan estimate --topology dgx-h100 --nodes 16 --collective all_reduce --bytes 1G";

typedef struct {
  guint64 bytes, count;
  SpCollEstimate est;
  SpCalibPrediction pred; /* with a calibration's std_errors (`uncertain`) */
} Row;

/* nccl-tests' sizes (common.cu setupArgs, *GetCollByteCount): count =
 * size / element size; all_gather / reduce_scatter divide it among the
 * ranks and all_to_all among the peers, and current nccl-tests round that
 * share down to a multiple of 16 bytes ((count / n) & -(16 / eltsize)),
 * older ones to whole elements only (the Polaris runs of the development
 * set print a count of 1 float per peer for a 32 B all_to_all over 8
 * ranks; the H100 cluster's, 209714 doubles per rank for 32 MiB over 20).
 * A size column of either is a whole number of elements per share, and is
 * what that run moved: taken as it is.  Any other size is rounded as
 * current nccl-tests do, or, where that would move nothing, as the older
 * ones (they time such a size; current ones would print a size of 0).  The
 * bytes actually moved and the count column nccl-tests prints (per rank
 * for AG/RS, per peer for all_to_all). */
static void
round_like_nccl_tests (SpColl coll, guint64 size, guint32 n, guint esize, guint64 *out_bytes,
                       guint64 *out_count)
{
  if (coll == SP_COLL_ALL_GATHER || coll == SP_COLL_REDUCE_SCATTER || coll == SP_COLL_ALL_TO_ALL)
    {
      guint64 whole = size / n / esize * esize; /* per rank (AG/RS), per peer (a2a) */
      guint64 share = whole * n == size ? whole : (size / n) & ~(guint64) 15;
      if (share == 0)
        share = whole;
      *out_bytes = share * n;
      *out_count = share / esize;
      return;
    }
  *out_count = size / esize;
  *out_bytes = *out_count * esize;
}

/* The smallest --bytes that moves anything, and how that and the rounding
 * read (after "all_gather over N ranks"). */
static guint64
smallest_size (SpColl coll, guint32 n, guint esize, const char **out_empty, const char **out_round)
{
  if (coll == SP_COLL_ALL_GATHER || coll == SP_COLL_REDUCE_SCATTER)
    {
      *out_empty = "gives each rank less than one element";
      *out_round = "rounds each rank's share down to a multiple of 16 B (to whole elements where "
                   "that would move nothing)";
      return (guint64) esize * n;
    }
  if (coll == SP_COLL_ALL_TO_ALL)
    {
      *out_empty = "gives each peer less than one element";
      *out_round = "rounds each peer's share down to a multiple of 16 B (to whole elements where "
                   "that would move nothing)";
      return (guint64) esize * n;
    }
  *out_empty = *out_round = "counts whole elements";
  return esize;
}

static void
print_time (GString *out, double us)
{
  if (us >= 10000.0)
    g_string_append_printf (out, "  %7.0f", us);
  else if (us >= 100.0)
    g_string_append_printf (out, "  %7.1f", us);
  else
    g_string_append_printf (out, "  %7.2f", us);
}

int
sp_cmd_estimate (int argc, char **argv)
{
  g_autofree char *topology = NULL, *nodes_s = NULL, *coll_s = NULL, *bytes_s = NULL,
                  *rpn_s = NULL, *model_s = NULL, *algo_s = NULL, *proto_s = NULL,
                  *dtype_s = NULL, *format_s = NULL;
  GOptionEntry entries[] = {
    { "topology", 't', 0, G_OPTION_ARG_FILENAME, &topology, "Topology INI file or preset",
      "FILE|PRESET" },
    { "nodes", 'n', 0, G_OPTION_ARG_STRING, &nodes_s, "Node count (default: the topology's)", "N" },
    /* -N: this command's letter before -n was every command's (kept) */
    { "nodes-N", 'N', G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING, &nodes_s, NULL, NULL },
    { "collective", 'c', 0, G_OPTION_ARG_STRING, &coll_s,
      "all_reduce, all_gather, reduce_scatter, all_to_all, broadcast or send", "NAME" },
    { "bytes", 'b', 0, G_OPTION_ARG_STRING, &bytes_s,
      "Size in nccl-tests' convention (K/M/G/T and KiB… powers of 1024, KB… of 1000), "
      "or A:B for a sweep", "SIZE|A:B" },
    { "ranks-per-node", 'k', 0, G_OPTION_ARG_STRING, &rpn_s,
      "Ranks on each node (default: every GPU)", "K" },
    { "sim-model", 0, 0, G_OPTION_ARG_STRING, &model_s, "des, analytic or nccl (default des)",
      "MODEL" },
    /* --model / -m: the simulator's model here before --sim-model was every
     * command's name for it (--model is the workload in plan and sweep) */
    { "model", 'm', G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING, &model_s, NULL, NULL },
    { "algorithm", 'a', 0, G_OPTION_ARG_STRING, &algo_s,
      "ring, tree, nvls, nvls_tree, pat, direct (default: chosen like NCCL)", "ALGO" },
    { "protocol", 'p', 0, G_OPTION_ARG_STRING, &proto_s,
      "ll, ll128, simple (default: chosen like NCCL)", "PROTO" },
    { "dtype", 'd', 0, G_OPTION_ARG_STRING, &dtype_s,
      "Element type for the count column (default float32, as nccl-tests)", "TYPE" },
    { "format", 'f', 0, G_OPTION_ARG_STRING, &format_s, "text (default) or json", "text|json" },
    { NULL },
  };
  int status;
  if (!sp_cli_parse (CMD, NULL, "Estimate the time of one collective on a topology.", description,
                     entries, &argc, &argv, &status))
    return status;
  if (argc > 1)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "unexpected argument '%s' (see 'shardplan estimate --help')",
                        argv[1]);
  SpFormat format;
  if (!sp_cli_format (CMD, format_s, (1u << SP_FORMAT_TEXT) | (1u << SP_FORMAT_JSON), &format))
    return SP_EXIT_USAGE;
  if (topology == NULL)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "--topology FILE|PRESET is required");
  if (coll_s == NULL)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "--collective is required (all_reduce, all_gather, "
                                            "reduce_scatter, all_to_all, broadcast, send)");
  if (bytes_s == NULL)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "--bytes N or A:B is required");

  SpCollRequest req;
  sp_coll_request_init (&req);
  if (!sp_coll_from_name (coll_s, &req.coll)
      || !(req.coll == SP_COLL_ALL_REDUCE || req.coll == SP_COLL_ALL_GATHER
           || req.coll == SP_COLL_REDUCE_SCATTER || req.coll == SP_COLL_ALL_TO_ALL
           || req.coll == SP_COLL_BROADCAST || req.coll == SP_COLL_SEND))
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "--collective '%s' is not one of: all_reduce, "
                                            "all_gather, reduce_scatter, all_to_all, broadcast, send",
                        coll_s);
  SpSimModel model = SP_SIM_DES;
  if (model_s && !sp_sim_model_from_name (model_s, &model))
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "--sim-model '%s' is not one of: des, analytic, nccl", model_s);
  if (algo_s && !sp_algo_from_name (algo_s, &req.algo))
    return sp_cli_fail (CMD, SP_EXIT_USAGE,
                        "--algorithm '%s' is not one of: auto, ring, tree, nvls, nvls_tree, pat, direct", algo_s);
  if (proto_s && !sp_proto_from_name (proto_s, &req.proto))
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "--protocol '%s' is not one of: auto, ll, ll128, simple",
                        proto_s);
  SpDtype dtype = SP_DTYPE_FLOAT32;
  if (dtype_s && (!sp_dtype_from_name (dtype_s, &dtype) || sp_dtype_bits (dtype) < 8))
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "--dtype '%s' is not a whole-byte type (e.g. float32, "
                                            "bfloat16, float16, int8)", dtype_s);
  guint esize = sp_dtype_bits (dtype) / 8;
  guint32 nodes = 0, rpn = 0;
  if (!sp_cli_u32 (CMD, "--nodes", nodes_s, 1, 1u << 24, &nodes)
      || !sp_cli_u32 (CMD, "--ranks-per-node", rpn_s, 1, 1024, &rpn))
    return SP_EXIT_USAGE;

  /* sizes */
  GError *error = NULL;
  guint64 lo, hi;
  const char *colon = strchr (bytes_s, ':');
  gboolean sweep = colon != NULL;
  const guint64 max_bytes = (guint64) 1 << 50;
  if (sweep)
    {
      g_autofree char *a = g_strndup (bytes_s, colon - bytes_s);
      g_autofree char *what_a = g_strdup_printf ("--bytes '%s': A", bytes_s);
      g_autofree char *what_b = g_strdup_printf ("--bytes '%s': B", bytes_s);
      if (!sp_parse_bytes (what_a, a, 1, max_bytes, &lo, &error)
          || !sp_parse_bytes (what_b, colon + 1, 1, max_bytes, &hi, &error))
        return sp_cli_error (CMD, error);
      if ((lo & (lo - 1)) || (hi & (hi - 1)) || lo > hi)
        return sp_cli_fail (CMD, SP_EXIT_USAGE,
                            "--bytes '%s': A:B needs powers of two with A <= B", bytes_s);
    }
  else
    {
      if (!sp_parse_bytes ("--bytes", bytes_s, 0, max_bytes, &lo, &error))
        return sp_cli_error (CMD, error);
      hi = lo;
    }

  g_autoptr (SpTopo) topo = sp_cli_topo_open (CMD, topology, nodes, &error);
  if (topo == NULL)
    return sp_cli_error (CMD, error);
  const SpTopoSpec *spec = sp_topo_spec (topo);
  req.ranks_per_node = rpn;
  if (rpn > spec->gpus_per_node)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "--ranks-per-node %u is more than the %u GPUs per node of %s",
                        rpn, spec->gpus_per_node, spec->name);
  guint32 n = spec->nodes * (rpn ? rpn : spec->gpus_per_node);

  const char *rule, *round_rule;
  guint64 smallest = smallest_size (req.coll, n, esize, &rule, &round_rule);
  if (hi < smallest)
    {
      guint64 b, c;
      round_like_nccl_tests (req.coll, hi, n, esize, &b, &c);
      return sp_cli_fail (CMD, SP_EXIT_USAGE,
                          "--bytes %s moves nothing: %s over %u ranks %s (count %" G_GUINT64_FORMAT
                          " of %s, as nccl-tests computes it); the smallest size is %" G_GUINT64_FORMAT
                          " bytes",
                          bytes_s, sp_coll_name (req.coll), n, rule, c, sp_dtype_name (dtype),
                          smallest);
    }
  /* a calibrated topology that says how well its values are known: every
   * estimate gets its standard error (not NCCL's own model, which reads
   * no calibration) */
  gboolean uncertain = spec->cal_errors.given != 0 && model != SP_SIM_NCCL;
  guint undetermined = 0, not_fitted = 0;
  GArray *rows = g_array_new (FALSE, FALSE, sizeof (Row));
  guint skipped = 0, rounded = 0;
  guint64 first_rounded = 0, first_rounded_to = 0;
  for (guint64 size = lo;; size *= 2)
    {
      Row row;
      round_like_nccl_tests (req.coll, size, n, esize, &row.bytes, &row.count);
      if (row.bytes == 0)
        skipped++;
      else
        {
          if (row.bytes != size && rounded++ == 0)
            {
              first_rounded = size;
              first_rounded_to = row.bytes;
            }
          req.bytes = row.bytes;
          memset (&row.pred, 0, sizeof row.pred);
          if (!sp_sim_estimate (topo, model, &req, &row.est, &error)
              || (uncertain && !sp_calib_predict (topo, model, &req, &row.est, &row.pred, &error)))
            {
              g_array_free (rows, TRUE);
              return sp_cli_error (CMD, error);
            }
          undetermined |= row.pred.undetermined;
          not_fitted |= row.pred.not_fitted;
          g_array_append_val (rows, row);
        }
      if (size >= hi)
        break;
    }
  if (skipped > 0)
    fprintf (stderr, "shardplan %s: note: %u size%s below %" G_GUINT64_FORMAT " bytes left out: "
                     "%s over %u ranks %s, so nccl-tests would move nothing\n",
             CMD, skipped, skipped == 1 ? "" : "s", smallest, sp_coll_name (req.coll), n, rule);
  if (rounded == 1 && !sweep)
    fprintf (stderr, "shardplan %s: note: --bytes %" G_GUINT64_FORMAT " runs as %" G_GUINT64_FORMAT
                     " bytes: %s over %u ranks %s, as nccl-tests does\n",
             CMD, first_rounded, first_rounded_to, sp_coll_name (req.coll), n, round_rule);
  else if (rounded > 0)
    fprintf (stderr, "shardplan %s: note: %u size%s run%s as fewer bytes (the size column): %s over "
                     "%u ranks %s, as nccl-tests does\n",
             CMD, rounded, rounded == 1 ? "" : "s", rounded == 1 ? "s" : "", sp_coll_name (req.coll),
             n, round_rule);

  if (n == 1)
    fprintf (stderr, "shardplan %s: note: one rank: nothing crosses a link, so the time is 0 (NCCL "
                     "runs no algorithm on a one-rank communicator: an in-place call does nothing, "
                     "an out-of-place one is a local copy of the buffer, not costed; the algorithm and "
                     "protocol shown are nominal)\n", CMD);

  GString *out = g_string_new (NULL);
  const char *coll_name = sp_coll_name (req.coll);
  if (format == SP_FORMAT_JSON)
    {
      if (sweep)
        g_string_append (out, "[");
      for (guint i = 0; i < rows->len; i++)
        {
          Row *r = &g_array_index (rows, Row, i);
          g_string_append_printf (out,
                                  "%s{\"collective\": \"%s\", \"bytes\": %" G_GUINT64_FORMAT
                                  ", \"ranks\": %u, \"time_us\": %.3f, \"algbw_gbs\": %.4f, "
                                  "\"busbw_gbs\": %.4f, \"algorithm\": \"%s\", \"protocol\": \"%s\", "
                                  "\"model\": \"%s\"",
                                  i ? ",\n " : "", coll_name, r->bytes, r->est.n_ranks,
                                  r->est.time_ns / 1000.0, r->est.algbw_gbs, r->est.busbw_gbs,
                                  sp_algo_name (r->est.algo), sp_proto_name (r->est.proto),
                                  sp_sim_model_name (model));
          if (uncertain)
            {
              g_autofree char *und = sp_cli_calib_params (r->pred.undetermined, TRUE);
              g_autofree char *nf = sp_cli_calib_params (r->pred.not_fitted, TRUE);
              g_string_append (out, ", \"calibration\": {\"std_error\": ");
              if (isfinite (r->pred.std_error))
                g_string_append_printf (out, "%.6g", r->pred.std_error);
              else
                g_string_append (out, "\"undetermined\"");
              g_string_append_printf (out, ", \"residual_sd\": %.6g, \"undetermined\": %s, "
                                           "\"not_fitted\": %s}",
                                      r->pred.residual_sd, und, nf);
            }
          g_string_append_c (out, '}');
        }
      g_string_append (out, sweep ? "]\n" : "\n");
    }
  else
    {
      guint32 k = rpn ? rpn : spec->gpus_per_node;
      g_autofree char *env = sp_cli_nccl_env (spec); /* what [nccl] lets NCCL choose */
      g_string_append_printf (out, "# shardplan estimate: %s, %u %s x %u %s = %u %s, "
                                   "model %s%s\n",
                              spec->name, spec->nodes, sp_cli_plural (spec->nodes, "node", "nodes"),
                              k, sp_cli_plural (k, "rank", "ranks"), n,
                              sp_cli_plural (n, "rank", "ranks"), sp_sim_model_name (model), env);
      g_string_append (out, "#       size         count      type   redop    root     time   algbw"
                            "   busbw  algorithm protocol");
      g_string_append (out, uncertain ? "   ± (cal.)\n" : "\n");
      g_string_append (out, "#        (B)    (elements)                               (us)  (GB/s)"
                            "  (GB/s)\n");
      gboolean reduces = req.coll == SP_COLL_ALL_REDUCE || req.coll == SP_COLL_REDUCE_SCATTER;
      for (guint i = 0; i < rows->len; i++)
        {
          Row *r = &g_array_index (rows, Row, i);
          g_string_append_printf (out, "%12" G_GUINT64_FORMAT "  %12" G_GUINT64_FORMAT "  %8s  %6s  %6d",
                                  r->bytes, r->count, sp_dtype_name (dtype), reduces ? "sum" : "none",
                                  req.coll == SP_COLL_BROADCAST ? 0 : -1);
          print_time (out, r->est.time_ns / 1000.0);
          g_string_append_printf (out, "  %6.2f  %6.2f  %9s %8s", r->est.algbw_gbs,
                                  r->est.busbw_gbs, sp_algo_name (r->est.algo),
                                  sp_proto_name (r->est.proto));
          if (!uncertain)
            g_string_append_c (out, '\n');
          else
            {
              /* right-aligned in characters (± × ÷ are two bytes each); a
               * group of one rank takes no time, so no error either */
              char se[32];
              const char *text = r->est.time_ns == 0 ? "-" : sp_cli_sigma_text (r->pred.std_error, se);
              g_string_append_printf (out, "  %*s%s\n", (int) MAX (0, 9 - g_utf8_strlen (text, -1)),
                                      "", text);
            }
        }
      if (uncertain)
        {
          char sd[32];
          g_string_append_printf (out, "# ± (cal.): the time's standard error from the calibrated "
                                       "values' standard errors and correlations ([calibration] "
                                       "std_errors; ×÷F: between time / F and time × F); the "
                                       "fit's own ops scattered by %s around the model "
                                       "(residual_sd)\n",
                                  sp_cli_sigma_text (spec->cal_errors.residual_sd, sd));
          if (undetermined)
            {
              g_autofree char *list = sp_cli_calib_params (undetermined, FALSE);
              g_string_append_printf (out, "# undetermined: the time depends on %s, which the "
                                           "calibration's ops did not determine\n", list);
            }
          if (not_fitted)
            {
              g_autofree char *list = sp_cli_calib_params (not_fitted, FALSE);
              g_string_append_printf (out, "# not in the ±: the time depends on %s, which the "
                                           "calibration kept at the values it was given (its "
                                           "report says why)\n", list);
            }
        }
    }
  g_array_free (rows, TRUE);
  gboolean ok = sp_cli_write_output (NULL, out->str, out->len, &error);
  g_string_free (out, TRUE);
  if (!ok)
    return sp_cli_error (CMD, error);
  return SP_EXIT_OK;
}
