/* `shardplan trace import-nccl-tests LOG -o measured.h5 --topology T`: an
 * nccl-tests log as a measured trace of a synthetic plan (one op per size
 * and placement; shardplan/nccltests.h), so that `shardplan sim` can run the
 * same plan (--plan-out) and `shardplan compare` can join the two. */
#include "config.h"
#include "cli.h"
#include "commands.h"
#include "shardplan/shardplan.h"
#include "shardplan/nccltests.h"

#include <glib/gstdio.h>
#include <string.h>

#define CMD "trace import-nccl-tests"

/* The topology for a log of n ranks: --nodes if given, else the file's or
 * preset's own node count, else as many nodes as the ranks fill. */
static SpTopo *
open_topology (const char *topo_arg, guint32 nodes, guint32 n_ranks, GError **error)
{
  g_autoptr (SpTopo) topo = sp_cli_topo_open (CMD, topo_arg, nodes, error);
  if (topo == NULL)
    return NULL;
  guint32 gpn = sp_topo_spec (topo)->gpus_per_node;
  if (nodes == 0 && sp_topo_world_size (topo) != n_ranks && n_ranks % gpn == 0)
    {
      SpTopo *grown = sp_topo_with_nodes (topo, n_ranks / gpn, error);
      if (grown == NULL)
        return NULL;
      sp_topo_free (topo);
      topo = grown;
    }
  if (sp_topo_world_size (topo) != n_ranks)
    {
      const SpTopoSpec *spec = sp_topo_spec (topo);
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "the log has %u ranks but topology '%s' has %u nodes x %u GPUs = %u: give "
                   "a topology (or --nodes) whose world size is %u", n_ranks, topo_arg,
                   spec->nodes, spec->gpus_per_node, sp_topo_world_size (topo), n_ranks);
      return NULL;
    }
  return g_steal_pointer (&topo);
}

/* Warn when the hosts of the "#  Rank" lines do not hold gpus_per_node
 * ranks each in block order (the simulator will place ranks as the
 * topology says, not as the run did). */
static void
check_hosts (const SpNcclTestsLog *log, const SpTopo *topo)
{
  gsize n = 0;
  const SpNcclTestsRank *ranks = sp_nccl_tests_log_ranks (log, &n);
  guint32 gpn = sp_topo_spec (topo)->gpus_per_node;
  for (gsize r = 0; r < n; r++)
    {
      guint32 node = 0, local = 0;
      sp_topo_rank_location (topo, (guint32) r, &node, &local);
      const char *first = ranks[(gsize) node * gpn].hostname;
      gboolean other_host = strcmp (ranks[r].hostname, first) != 0;
      gboolean shared_host = local == 0 && node > 0
                             && strcmp (first, ranks[(gsize) (node - 1) * gpn].hostname) == 0;
      if (other_host || shared_host)
        {
          fprintf (stderr, "shardplan " CMD ": warning: rank %u runs on host '%s', which does "
                           "not match the topology's %u ranks per node in block order\n",
                   (guint) r, ranks[r].hostname, gpn);
          return;
        }
    }
}

int
sp_cmd_trace_import_nccl_tests (int argc, char **argv)
{
  g_autofree char *output = NULL, *topo_arg = NULL, *nodes_text = NULL, *plan_out = NULL;
  GOptionEntry entries[] = {
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "trace file to write (required)",
      "FILE.h5" },
    { "topology", 't', 0, G_OPTION_ARG_STRING, &topo_arg,
      "topology file or preset the run used (required)", "T" },
    { "nodes", 'n', 0, G_OPTION_ARG_STRING, &nodes_text,
      "node count (default: the ranks of the log / GPUs per node)", "N" },
    { "plan-out", 0, 0, G_OPTION_ARG_FILENAME, &plan_out,
      "also write the synthetic plan as JSON, for 'shardplan sim'", "PLAN.json" },
    { NULL },
  };
  int status = SP_EXIT_OK;
  if (!sp_cli_parse (
        CMD, "LOG", "Read an nccl-tests log (all_reduce_perf, all_gather_perf, …) into a measured trace.",
        "Every timed point (size × out-of-place/in-place) becomes one op of a synthetic plan\n"
        "on the world group; every rank gets nccl-tests' averaged time.  Old and new column\n"
        "layouts are read.  Simulate the same plan with --plan-out and 'shardplan sim', then\n"
        "'shardplan compare SIM.h5 MEASURED.h5'.",
        entries, &argc, &argv, &status))
    return status;
  if (argc != 2)
    return sp_cli_fail (CMD, SP_EXIT_USAGE,
                        "expected one nccl-tests log, got %d arguments (see 'shardplan " CMD
                        " --help')", argc - 1);
  if (output == NULL || *output == '\0')
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "--output FILE.h5 is required");
  if (topo_arg == NULL || *topo_arg == '\0')
    return sp_cli_fail (CMD, SP_EXIT_USAGE,
                        "--topology is required (a topology file or a preset: see 'shardplan info')");
  guint32 nodes = 0;
  if (!sp_cli_u32 (CMD, "--nodes", nodes_text, 1, 1u << 24, &nodes))
    return SP_EXIT_USAGE;
  g_autoptr (SpCliFiles) files = sp_cli_files_new (CMD);
  sp_cli_files_input (files, "LOG argument", argv[1]);
  sp_cli_files_input (files, "--topology", topo_arg);
  sp_cli_files_output (files, "-o/--output", output);
  sp_cli_files_output (files, "--plan-out", plan_out);
  if (!sp_cli_files_check (files))
    return SP_EXIT_USAGE;

  g_autoptr (GError) error = NULL;
  g_autoptr (SpNcclTestsLog) log = sp_nccl_tests_load (argv[1], &error);
  if (log == NULL)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "%s", error->message);
  for (const char *const *w = sp_nccl_tests_log_warnings (log); *w; w++)
    fprintf (stderr, "shardplan " CMD ": warning: %s\n", *w);

  guint32 n_ranks = sp_nccl_tests_log_n_ranks (log);
  g_autoptr (SpTopo) topo = open_topology (topo_arg, nodes, n_ranks, &error);
  if (topo == NULL)
    return sp_cli_error (CMD, g_steal_pointer (&error));
  check_hosts (log, topo);
  g_autoptr (SpPlan) plan = sp_nccl_tests_build_plan (log, sp_topo_spec (topo)->gpus_per_node,
                                                      &error);
  if (plan == NULL)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "%s: %s", argv[1], error->message);
  /* `shardplan sim --plan` on --plan-out then needs no --topology */
  sp_cli_plan_record_topology (plan, topo);
  if (!sp_nccl_tests_write_trace (log, plan, topo, output, &error))
    return sp_cli_error (CMD, g_steal_pointer (&error));
  if (plan_out != NULL && !sp_plan_save (plan, plan_out, &error))
    {
      g_unlink (output); /* both files or neither */
      return sp_cli_error (CMD, g_steal_pointer (&error));
    }
  if (!sp_nccl_tests_log_is_complete (log))
    fprintf (stderr, "shardplan " CMD ": warning: %s is incomplete (%s): the trace is marked "
                     "partial\n", argv[1], sp_nccl_tests_log_incomplete_reason (log));
  gsize n_points = 0;
  sp_nccl_tests_log_results (log, &n_points);
  guint64 n_rows = (guint64) n_points * n_ranks;
  printf ("%s: %s, %u %s, %" G_GSIZE_FORMAT " %s -> %s (%" G_GUINT64_FORMAT " %s)%s%s\n",
          argv[1], sp_nccl_tests_log_binary (log), n_ranks, sp_cli_plural (n_ranks, "rank", "ranks"),
          n_points, sp_cli_plural (n_points, "point", "points"), output, n_rows,
          sp_cli_plural (n_rows, "row", "rows"), plan_out ? ", plan " : "", plan_out ? plan_out : "");
  if (!sp_cli_stdout_flushed ())
    return sp_cli_fail (CMD, SP_EXIT_FAILURE, "cannot write to standard output");
  sp_cli_wrote (CMD, output, "measured trace, %" G_GUINT64_FORMAT " rows",
                (guint64) n_points * n_ranks);
  sp_cli_wrote (CMD, plan_out, "plan of %u %s", sp_plan_n_ops (plan),
                sp_cli_plural (sp_plan_n_ops (plan), "op", "ops"));
  return SP_EXIT_OK;
}
