/* `shardplan chakra export|import`: plans as Chakra execution traces for
 * ASTRA-sim and back (tools/chakra/chakra.h).  Built with protobuf-c only;
 * without it both say so and exit 1. */
#include "config.h"
#include "cli.h"
#include "commands.h"
#include "shardplan/shardplan.h"
#ifdef HAVE_PROTOBUF_C
#include "chakra/chakra.h"
#endif

#include <string.h>
#include <sys/resource.h>

#define CMD "chakra"

#ifndef HAVE_PROTOBUF_C
int
sp_cmd_chakra (int argc, char **argv)
{
  return sp_cli_fail (CMD, SP_EXIT_FAILURE,
                      "not built: configure found no protobuf-c (install libprotobuf-c-dev "
                      "and protobuf-c-compiler, then re-run configure)");
}
#else

typedef struct {
  gboolean tty;
  gint64 t0;
  gint64 last;
} Progress;

static void
export_progress (guint32 rank, guint32 world, gpointer data)
{
  Progress *p = data;
  gint64 now = g_get_monotonic_time ();
  gboolean last = rank + 1 == world;
  if (!p->tty && world < 1024)
    return;
  if (!last && now - p->last < (p->tty ? 200000 : 5000000))
    return;
  p->last = now;
  fprintf (stderr, p->tty ? "\rshardplan chakra export: %u / %u files (%.1f s)%s"
                          : "shardplan chakra export: %u / %u files (%.1f s)%s",
           rank + 1, world, (now - p->t0) / 1e6, last || !p->tty ? "\n" : "");
  fflush (stderr);
}

static double
peak_rss_mib (void)
{
  struct rusage ru;
  if (getrusage (RUSAGE_SELF, &ru) != 0)
    return 0;
  return ru.ru_maxrss / 1024.0;
}

static const char export_description[] =
  "Writes PREFIX.<rank>.et for every rank of the plan (Chakra's length-delimited\n"
  "protobuf stream: GlobalMetadata, then one node per op the rank runs) and\n"
  "PREFIX.groups.json, ASTRA-sim's communicator-group file (pg_name -> ranks).\n"
  "Collectives carry comm_type, comm_size (bytes, nccl-tests' convention: the\n"
  "whole buffer for all_gather / reduce_scatter, per rank otherwise) and\n"
  "pg_name (the group number in the group file; pg_desc names the DeepSpeed\n"
  "family and index).  With --topology, compute nodes get duration_micros.\n"
  "A plan of W ranks writes W files: the count is announced on stderr first.\n"
  "\n"
  "Example: shardplan chakra export --plan plan.json --topology dgx-h100 -o et/step";

static int
cmd_export (int argc, char **argv)
{
  g_autofree char *plan_s = NULL, *topology = NULL, *nodes_s = NULL, *prefix = NULL;
  gboolean quiet = FALSE;
  GOptionEntry entries[] = {
    { "plan", 'p', 0, G_OPTION_ARG_FILENAME, &plan_s, "Plan JSON (required)", "FILE" },
    { "topology", 't', 0, G_OPTION_ARG_FILENAME, &topology,
      "Topology INI or preset: compute nodes get their modelled duration_micros", "FILE|PRESET" },
    { "nodes", 'n', 0, G_OPTION_ARG_STRING, &nodes_s, "Node count of the topology", "N" },
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &prefix,
      "Output prefix: PREFIX.<rank>.et and PREFIX.groups.json (required)", "PREFIX" },
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "No announcement or summary on stderr", NULL },
    { NULL },
  };
  int status;
  if (!sp_cli_parse (CMD " export", NULL, "Write a plan as Chakra execution traces for ASTRA-sim.",
                     export_description, entries, &argc, &argv, &status))
    return status;
  if (argc > 1)
    return sp_cli_fail (CMD " export", SP_EXIT_USAGE,
                        "unexpected argument '%s' (see 'shardplan chakra export --help')", argv[1]);
  if (plan_s == NULL || prefix == NULL)
    return sp_cli_fail (CMD " export", SP_EXIT_USAGE, "export needs --plan FILE and -o PREFIX");
  if (*prefix == '\0')
    return sp_cli_fail (CMD " export", SP_EXIT_USAGE, "-o PREFIX is empty");
  guint32 nodes = 0;
  if (!sp_cli_u32 (CMD " export", "--nodes", nodes_s, 1, 1u << 24, &nodes))
    return SP_EXIT_USAGE;

  GError *error = NULL;
  g_autoptr (SpPlan) plan = sp_plan_load (plan_s, 0, &error);
  if (plan == NULL)
    return sp_cli_error (CMD " export", error);
  guint32 world = sp_plan_world_size (plan);
  g_autoptr (SpTopo) topo = NULL;
  if (topology)
    {
      if (nodes == 0 && !g_file_test (topology, G_FILE_TEST_EXISTS))
        nodes = 0;
      topo = sp_topo_open (topology, nodes, &error);
      if (topo == NULL)
        return sp_cli_error (CMD " export", error);
      guint32 gpn = sp_topo_spec (topo)->gpus_per_node;
      if (nodes == 0 && sp_topo_world_size (topo) != world && world % gpn == 0)
        {
          SpTopo *grown = sp_topo_with_nodes (topo, world / gpn, &error);
          if (grown == NULL)
            return sp_cli_error (CMD " export", error);
          sp_topo_free (topo);
          topo = grown;
        }
    }

  /* Every output is checked, as every other subcommand's: the group file,
   * the first and the last rank file (the rest differ only in the number). */
  g_autofree char *groups_path = g_strdup_printf ("%s.groups.json", prefix);
  g_autofree char *first = g_strdup_printf ("%s.0.et", prefix);
  g_autofree char *last = g_strdup_printf ("%s.%u.et", prefix, world - 1);
  g_autoptr (SpCliFiles) files = sp_cli_files_new (CMD " export");
  sp_cli_files_input (files, "--plan", plan_s);
  sp_cli_files_input (files, "--topology", topology);
  sp_cli_files_output (files, "-o/--output (groups file)", groups_path);
  sp_cli_files_output (files, "-o/--output (rank 0)", first);
  if (world > 1)
    sp_cli_files_output (files, "-o/--output (last rank)", last);
  if (!sp_cli_files_check (files))
    return SP_EXIT_USAGE;

  if (!quiet && (world >= 64 || sp_cli_stderr_is_tty ()))
    fprintf (stderr, "shardplan chakra export: writing %u files %s.0.et .. %s and %s "
             "(%u ops in the plan)\n", world, prefix, last, groups_path, sp_plan_n_ops (plan));
  Progress p = { sp_cli_stderr_is_tty () && !quiet, g_get_monotonic_time (), 0 };
  SpChakraExportStats st;
  if (!sp_chakra_export (plan, topo, prefix, quiet ? NULL : export_progress, &p, &st, &error))
    return sp_cli_error (CMD " export", error);
  if (!quiet)
    fprintf (stderr, "shardplan chakra export: %u files, %" G_GUINT64_FORMAT " nodes, %.1f MB, "
             "%u communicator groups in %.2f s (peak RSS %.0f MiB)\n", st.files, st.nodes,
             st.bytes / 1e6, st.groups, (g_get_monotonic_time () - p.t0) / 1e6, peak_rss_mib ());
  return SP_EXIT_OK;
}

static const char import_description[] =
  "Reads PREFIX.<rank>.et for rank 0, 1, ... (until the first missing rank) and\n"
  "PREFIX.groups.json when present.  Traces shardplan wrote give back the exact\n"
  "plan.  Other Chakra traces: nodes with the same id in several files are one op;\n"
  "collectives map to shardplan's kinds and their groups (pg_name) to the\n"
  "DeepSpeed family with exactly those groups; compute nodes take duration_micros\n"
  "(needs --topology: its peak turns time into FLOPs) or num_ops; node types\n"
  "shardplan does not model are counted on stderr and bridged in the deps.\n"
  "\n"
  "Example: shardplan chakra import et/step -o plan.json --topology dgx-h100";

static int
cmd_import (int argc, char **argv)
{
  g_autofree char *topology = NULL, *nodes_s = NULL, *output = NULL;
  GOptionEntry entries[] = {
    { "topology", 't', 0, G_OPTION_ARG_FILENAME, &topology,
      "Topology INI or preset (compute durations to FLOPs)", "FILE|PRESET" },
    { "nodes", 'n', 0, G_OPTION_ARG_STRING, &nodes_s, "Node count of the topology", "N" },
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Write the plan JSON here (atomically)",
      "FILE" },
    { NULL },
  };
  int status;
  if (!sp_cli_parse (CMD " import", "PREFIX", "Read Chakra execution traces as a plan.",
                     import_description, entries, &argc, &argv, &status))
    return status;
  if (argc != 2)
    return sp_cli_fail (CMD " import", SP_EXIT_USAGE, argc < 2 ? "import needs PREFIX"
                        : "import takes one PREFIX (see 'shardplan chakra import --help')");
  const char *prefix = argv[1];
  guint32 nodes = 0;
  if (!sp_cli_u32 (CMD " import", "--nodes", nodes_s, 1, 1u << 24, &nodes))
    return SP_EXIT_USAGE;
  g_autofree char *first = g_strdup_printf ("%s.0.et", prefix);
  g_autofree char *groups_path = g_strdup_printf ("%s.groups.json", prefix);
  g_autoptr (SpCliFiles) files = sp_cli_files_new (CMD " import");
  sp_cli_files_input (files, "PREFIX (rank 0)", first);
  sp_cli_files_input (files, "PREFIX (groups file)", groups_path);
  sp_cli_files_input (files, "--topology", topology);
  sp_cli_files_output (files, "-o/--output", output);
  if (!sp_cli_files_check (files))
    return SP_EXIT_USAGE;

  GError *error = NULL;
  g_autoptr (SpTopo) topo = NULL;
  if (topology && (topo = sp_topo_open (topology, nodes, &error)) == NULL)
    return sp_cli_error (CMD " import", error);
  gint64 t0 = g_get_monotonic_time ();
  SpChakraImportStats st;
  g_autoptr (SpPlan) plan = sp_chakra_import (prefix, topo, &st, &error);
  if (plan == NULL)
    return sp_cli_error (CMD " import", error);
  static const char *const type_names[8] = { "invalid", "metadata", "mem_load", "mem_store",
                                             "comp", "comm_send", "comm_recv", "comm_coll" };
  for (guint t = 0; t < 8; t++)
    if (st.skipped[t])
      fprintf (stderr, "shardplan chakra import: %" G_GUINT64_FORMAT " %s node(s) not modelled "
               "(dependencies bridged)\n", st.skipped[t], type_names[t]);
  if (st.compute_spread)
    fprintf (stderr, "shardplan chakra import: %u compute op(s) with different durations on "
             "different ranks: the longest kept\n", st.compute_spread);
  fprintf (stderr, "shardplan chakra import: %u files, %" G_GUINT64_FORMAT " nodes -> %u ops "
           "(%s) in %.2f s (peak RSS %.0f MiB)\n", st.files, st.nodes, st.ops,
           st.shardplan ? "exact: written by shardplan" : "mapped from Chakra",
           (g_get_monotonic_time () - t0) / 1e6, peak_rss_mib ());
  g_autofree char *json = sp_plan_to_json (plan);
  if (!sp_cli_write_output (output, json, strlen (json), &error))
    return sp_cli_error (CMD " import", error);
  return SP_EXIT_OK;
}

int
sp_cmd_chakra (int argc, char **argv)
{
  if (argc < 2 || strcmp (argv[1], "--help") == 0 || strcmp (argv[1], "-h") == 0)
    {
      FILE *f = argc < 2 ? stderr : stdout;
      fprintf (f, "Usage: shardplan chakra export|import [OPTION…]\n\n"
               "  export   write a plan as Chakra ET files + ASTRA-sim group file\n"
               "  import   read Chakra ET files as a plan\n\n"
               "See 'shardplan chakra export --help', 'shardplan chakra import --help'.\n");
      return argc < 2 ? SP_EXIT_USAGE : SP_EXIT_OK;
    }
  char *name = g_strdup_printf ("shardplan chakra %s", argv[1]);
  char *saved = argv[1];
  argv[1] = name;
  g_set_prgname (name);
  int rc;
  if (strcmp (saved, "export") == 0)
    rc = cmd_export (argc - 1, argv + 1);
  else if (strcmp (saved, "import") == 0)
    rc = cmd_import (argc - 1, argv + 1);
  else
    {
      static const char *const actions[] = { "export", "import" };
      g_autofree char *hint = sp_did_you_mean (saved, actions, G_N_ELEMENTS (actions));
      rc = sp_cli_fail (CMD, SP_EXIT_USAGE, "unknown action '%s'%s (accepted: export, import)",
                        saved, hint);
    }
  argv[1] = saved;
  g_free (name);
  return rc;
}
#endif
