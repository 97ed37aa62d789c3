/* `shardplan chakra export|import`: plans as Chakra execution traces for
 * ASTRA-sim and back (tools/chakra/chakra.h), and the pieces that `plan
 * --chakra`, `trace export --format chakra` and `trace import-chakra` share
 * with it (tools/chakra-cmd.h).  Built with protobuf-c only; without it
 * every one of them says so and exits 1. */
#include "config.h"
#include "cli.h"
#include "chakra-cmd.h"
#include "commands.h"
#include "progress.h"
#include "trace-cmd.h"
#include "shardplan/shardplan.h"
#ifdef HAVE_PROTOBUF_C
#include "chakra/chakra.h"
#endif

#include <string.h>
#include <sys/resource.h>

#define CMD "chakra"

void
sp_chakra_cmd_outputs (SpCliFiles *files, const char *option, const char *prefix, guint32 world)
{
  g_autofree char *groups_path = g_strdup_printf ("%s.groups.json", prefix);
  g_autofree char *o_groups = g_strdup_printf ("%s (groups file)", option);
  sp_cli_files_output (files, o_groups, groups_path);
  g_autofree char *head = g_strconcat (prefix, ".", NULL);
  sp_cli_files_output_family (files, option, head, ".et", MAX (world, 1));
}

#ifndef HAVE_PROTOBUF_C
static int
not_built (const char *command)
{
  return sp_cli_fail (command, SP_EXIT_FAILURE,
                      "Chakra traces not built: configure found no protobuf-c (install "
                      "libprotobuf-c-dev and protobuf-c-compiler, then re-run configure)");
}

int
sp_cmd_chakra (int argc, char **argv)
{
  return not_built (CMD);
}

int
sp_chakra_cmd_write (const char *command, const SpPlan *plan, const SpTopo *topo,
                     const char *prefix, gboolean quiet)
{
  return not_built (command);
}

int
sp_chakra_cmd_write_trace (const char *command, const char *trace_path, const char *prefix,
                           gboolean quiet)
{
  return not_built (command);
}

int
sp_chakra_cmd_import (int argc, char **argv)
{
  const char *name = argv[0];
  return not_built (g_str_has_prefix (name, "shardplan ") ? name + strlen ("shardplan ") : name);
}
#else

typedef struct {
  const char *command;
  SpProgress *bar;    /* the progress line (drawn on a terminal only) */
  gint64 t0;
  gint64 last;
} Progress;

/* On a terminal, the progress line; otherwise (a log), for an export of
 * 1024 files or more, one line every 5 s and one at the end. */
static void
export_progress (guint32 rank, guint32 world, gpointer data)
{
  Progress *p = data;
  if (sp_progress_active (p->bar))
    {
      sp_progress_set (p->bar, (guint64) rank + 1);
      return;
    }
  gint64 now = g_get_monotonic_time ();
  gboolean last = rank + 1 == world;
  if (world < 1024)
    return;
  if (!last && now - p->last < 5000000)
    return;
  p->last = now;
  fprintf (stderr, "shardplan %s: %u / %u files (%.1f s)\n", p->command, rank + 1, world,
           (now - p->t0) / 1e6);
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

/* Announce, export, summarise: one export for every command that writes one. */
static int
write_export (const char *command, const SpPlan *plan, const SpTopo *topo,
              SpChakraRankDurations durations, gpointer durations_data, const char *prefix,
              gboolean quiet)
{
  guint32 world = sp_plan_world_size (plan);
  if (!quiet && (world >= 64 || sp_cli_stderr_is_tty ()))
    fprintf (stderr, "shardplan %s: writing %u files %s.0.et .. %s.%u.et and %s.groups.json "
             "(%u ops in the plan)\n", command, world, prefix, prefix, world - 1, prefix,
             sp_plan_n_ops (plan));
  Progress p = { command, sp_progress_new (command, world, "files", quiet),
                 g_get_monotonic_time (), 0 };
  SpChakraExportStats st;
  GError *error = NULL;
  gboolean ok = sp_chakra_export (plan, topo, durations, durations_data, prefix,
                                  quiet ? NULL : export_progress, &p, &st, &error);
  sp_progress_free (p.bar);
  if (!ok)
    return sp_cli_error (command, error);
  /* the closing line names what was written, as every command's does */
  if (!quiet)
    fprintf (stderr, "shardplan %s: wrote %s.0.et .. %s.%u.et and %s.groups.json (%u files, %"
             G_GUINT64_FORMAT " nodes, %u communicator %s, %.1f MB; %.2f s, peak RSS %.0f "
             "MiB)\n", command, prefix, prefix, world - 1, prefix, st.files, st.nodes, st.groups,
             sp_cli_plural (st.groups, "group", "groups"), st.bytes / 1e6,
             (g_get_monotonic_time () - p.t0) / 1e6, peak_rss_mib ());
  return SP_EXIT_OK;
}

static const char export_description[] =
  "Writes PREFIX.<rank>.et for every rank of the plan (Chakra's length-delimited\n"
  "protobuf stream: GlobalMetadata, then one node per op the rank runs) and\n"
  "PREFIX.groups.json, ASTRA-sim's communicator-group file (pg_name -> ranks).\n"
  "Collectives carry comm_type, comm_size (bytes, nccl-tests' convention: the\n"
  "whole buffer for all_gather / reduce_scatter, per rank otherwise) and\n"
  "pg_name (the group number in the group file; pg_desc names the DeepSpeed\n"
  "family and index).  send / recv ops become a COMM_SEND_NODE and a\n"
  "COMM_RECV_NODE per rank (comm_src, comm_dst, comm_size, comm_tag).  With\n"
  "--topology, compute nodes get duration_micros.\n"
  "A plan of W ranks writes W files: the count is announced on stderr first.\n"
  "The same export: 'shardplan plan ... --chakra PREFIX' (a new plan) and\n"
  "'shardplan trace export --format chakra -o PREFIX TRACE' (measured durations).\n"
  "\n"
  "Example: shardplan chakra export --plan plan.json --topology dgx-h100 -o et/step";

int
sp_chakra_cmd_write (const char *command, const SpPlan *plan, const SpTopo *topo,
                     const char *prefix, gboolean quiet)
{
  return write_export (command, plan, topo, NULL, NULL, prefix, quiet);
}

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
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet,
      "No announcement, progress line or summary on stderr", NULL },
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
    return sp_cli_input_error (CMD " export", error);
  guint32 world = sp_plan_world_size (plan);
  g_autoptr (SpTopo) topo = NULL;
  if (topology)
    {
      topo = sp_cli_topo_open (CMD " export", topology, nodes, &error);
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

  g_autoptr (SpCliFiles) files = sp_cli_files_new (CMD " export");
  sp_cli_files_input (files, "--plan", plan_s);
  sp_cli_files_input (files, "--topology", topology);
  sp_chakra_cmd_outputs (files, "-o/--output", prefix, world);
  if (!sp_cli_files_check (files))
    return SP_EXIT_USAGE;
  return sp_chakra_cmd_write (CMD " export", plan, topo, prefix, quiet);
}

/* ----------------------------------------------- trace export --format chakra */

/* Durations by (rank, op) from a trace's rows: the mean of the timed
 * iterations with status ok.  W x ops cells, 12 bytes each. */
typedef struct {
  guint32 world, n_ops;
  guint64 *sum_ns;
  guint32 *n;
} TraceDur;

static gboolean
trace_rank_durations (guint32 rank, guint64 *out_us, gpointer data, GError **error)
{
  const TraceDur *d = data;
  for (guint32 o = 0; o < d->n_ops; o++)
    {
      gsize k = (gsize) rank * d->n_ops + o;
      out_us[o] = d->n[k] ? (d->sum_ns[k] / d->n[k] + 500) / 1000 : G_MAXUINT64;
    }
  return TRUE;
}

#define TRACE_BATCH 65536

int
sp_chakra_cmd_write_trace (const char *command, const char *trace_path, const char *prefix,
                           gboolean quiet)
{
  g_autoptr (SpTrace) t = sp_trace_cmd_open (command, trace_path);
  if (t == NULL)
    return SP_EXIT_USAGE;
  const char *text = sp_trace_plan_text (t);
  if (text == NULL || *text == '\0')
    return sp_cli_fail (command, SP_EXIT_USAGE, "%s: the trace carries no plan (/meta/plan): "
                        "nothing to export as Chakra nodes", trace_path);
  GError *error = NULL;
  g_autoptr (SpPlan) plan = sp_plan_from_json (text, -1, 0, &error);
  if (plan == NULL)
    return sp_cli_fail (command, SP_EXIT_USAGE, "%s: the trace's plan: %s", trace_path,
                        error->message);
  guint32 world = sp_plan_world_size (plan), n_ops = sp_plan_n_ops (plan);
  if (sp_trace_header (t)->world_size != world)
    return sp_cli_fail (command, SP_EXIT_USAGE, "%s: the trace is of %u ranks but its plan of %u",
                        trace_path, sp_trace_header (t)->world_size, world);
  g_autoptr (SpCliFiles) files = sp_cli_files_new (command);
  sp_cli_files_input (files, "FILE argument", trace_path);
  sp_chakra_cmd_outputs (files, "-o/--output", prefix, world);
  if (!sp_cli_files_check (files))
    return SP_EXIT_USAGE;

  guint64 cells = (guint64) world * n_ops;
  TraceDur d = { world, n_ops, g_try_new0 (guint64, cells ? cells : 1),
                 g_try_new0 (guint32, cells ? cells : 1) };
  if (d.sum_ns == NULL || d.n == NULL)
    {
      g_free (d.sum_ns);
      g_free (d.n);
      return sp_cli_fail (command, SP_EXIT_FAILURE, "%u ranks x %u ops of durations do not fit "
                          "in memory", world, n_ops);
    }
  guint64 rows = sp_trace_n_rows (t);
  g_autofree SpTraceRow *batch = g_new (SpTraceRow, MIN (rows, TRACE_BATCH) + 1);
  int rc = SP_EXIT_OK;
  for (guint64 start = 0; start < rows && rc == SP_EXIT_OK; start += TRACE_BATCH)
    {
      gsize k = (gsize) MIN ((guint64) TRACE_BATCH, rows - start);
      if (!sp_trace_read_rows (t, start, k, batch, &error))
        {
          rc = sp_cli_fail (command, SP_EXIT_USAGE, "%s", error->message);
          g_clear_error (&error);
          break;
        }
      for (gsize i = 0; i < k; i++)
        {
          const SpTraceRow *r = &batch[i];
          if (r->rank >= world || r->op_id >= n_ops)
            {
              rc = sp_cli_fail (command, SP_EXIT_USAGE, "%s: row %" G_GUINT64_FORMAT ": %s %u is "
                                "not in the trace's plan (%u ranks, %u ops)", trace_path,
                                start + i, r->rank >= world ? "rank" : "op_id",
                                r->rank >= world ? r->rank : r->op_id, world, n_ops);
              break;
            }
          if (r->status != SP_TRACE_STATUS_OK || r->iter < 0 || r->dur_ns < 0)
            continue;
          gsize c = (gsize) r->rank * n_ops + r->op_id;
          d.sum_ns[c] += (guint64) r->dur_ns;
          d.n[c]++;
        }
    }
  /* Kernels a trace has no rows for (a measured run times communication
   * only) take the time the trace's own topology models for them. */
  g_autoptr (SpTopo) topo = NULL;
  const char *topo_text = sp_trace_topology_text (t);
  if (rc == SP_EXIT_OK && topo_text && *topo_text)
    {
      topo = sp_topo_load_data (topo_text, -1, trace_path, &error);
      if (topo && sp_topo_world_size (topo) != world)
        g_clear_pointer (&topo, sp_topo_free);
      g_clear_error (&error);
      sp_cli_topo_note (command, topo);
    }
  if (rc == SP_EXIT_OK && topo == NULL)
    fprintf (stderr, "shardplan %s: %s: no usable topology in the trace: kernels without rows "
             "get no duration_micros\n", command, trace_path);
  if (rc == SP_EXIT_OK)
    rc = write_export (command, plan, topo, trace_rank_durations, &d, prefix, quiet);
  g_free (d.sum_ns);
  g_free (d.n);
  return rc;
}

/* ------------------------------------------------------------------ import */

static const char import_description[] =
  "Reads PREFIX.<rank>.et for rank 0, 1, ... (until the first missing rank) and\n"
  "the communicator groups: --groups FILE, else PREFIX.groups.json when present.\n"
  "The group file is ASTRA-sim's ({\"1\": [0, 1, ...], ...}), or the process\n"
  "groups as PyTorch records them (torch.distributed's pg_config_info: a list of\n"
  "{\"pg_name\", \"ranks\", ...}, \"ranks\": [] = every rank), or a PyTorch\n"
  "execution-trace JSON, whose \"## process_group:init ##\" node holds that list.\n"
  "Instead of PREFIX, the files PREFIX.0.et ... may be named (all of them).\n"
  "Traces shardplan wrote give back the exact plan.  Other Chakra traces: nodes\n"
  "with the same id in several files are one op; collectives map to shardplan's\n"
  "kinds and their groups (pg_name) to the DeepSpeed family with exactly those\n"
  "groups; compute nodes take duration_micros (needs --topology: its peak turns\n"
  "time into FLOPs) or num_ops; a send node and the receive node that move the\n"
  "same bytes between the same peers (comm_src, comm_dst) become a send / recv op\n"
  "when together they exchange data around every group of a family, a p2p op\n"
  "when they go one way, one pair in each group of a family (a pipeline's\n"
  "stage-to-stage send); other sends and receives and node types shardplan does\n"
  "not model are counted on stderr and bridged in the deps.\n"
  "'shardplan trace import-chakra' is the same command.\n"
  "\n"
  "Example: shardplan chakra import et/step -o plan.json --topology dgx-h100";

/* PREFIX from the arguments: one PREFIX, or PREFIX.<r>.et files. */
static char *
import_prefix (const char *command, int n, char **args, guint32 *out_listed, gboolean *out_ok)
{
  *out_ok = FALSE;
  *out_listed = 0;
  if (n == 1 && !g_str_has_suffix (args[0], ".et"))
    {
      *out_ok = TRUE;
      return g_strdup (args[0]);
    }
  char *prefix = NULL;
  g_autoptr (GHashTable) ranks = g_hash_table_new (NULL, NULL);
  for (int i = 0; i < n; i++)
    {
      const char *a = args[i];
      gsize len = strlen (a);
      g_autofree char *stem = g_str_has_suffix (a, ".et") ? g_strndup (a, len - 3) : NULL;
      const char *dot = stem ? strrchr (stem, '.') : NULL;
      guint64 r = 0;
      if (dot == NULL || dot == stem
          || !g_ascii_string_to_unsigned (dot + 1, 10, 0, G_MAXUINT32 - 1, &r, NULL))
        {
          g_free (prefix);
          sp_cli_fail (command, SP_EXIT_USAGE, "'%s' is not PREFIX.<rank>.et (name PREFIX, or "
                       "the rank files themselves)", a);
          return NULL;
        }
      g_autofree char *p = g_strndup (stem, dot - stem);
      if (prefix && strcmp (prefix, p) != 0)
        {
          sp_cli_fail (command, SP_EXIT_USAGE, "'%s' and '%s.*.et' are of different traces: name "
                       "the files of one", a, prefix);
          g_free (prefix);
          return NULL;
        }
      if (!prefix)
        prefix = g_steal_pointer (&p);
      g_hash_table_add (ranks, GUINT_TO_POINTER ((guint32) r + 1));
    }
  *out_listed = g_hash_table_size (ranks);
  *out_ok = TRUE;
  return prefix;
}

int
sp_chakra_cmd_import (int argc, char **argv)
{
  const char *command = g_str_has_prefix (argv[0], "shardplan ") ? argv[0] + strlen ("shardplan ")
                                                                  : argv[0];
  g_autofree char *cmd = g_strdup (command);
  g_autofree char *help = g_strdup_printf ("see 'shardplan %s --help'", cmd);
  g_autofree char *topology = NULL, *nodes_s = NULL, *output = NULL, *groups_s = NULL;
  gboolean quiet = FALSE;
  GOptionEntry entries[] = {
    { "topology", 't', 0, G_OPTION_ARG_FILENAME, &topology,
      "Topology INI or preset (compute durations to FLOPs)", "FILE|PRESET" },
    { "nodes", 'n', 0, G_OPTION_ARG_STRING, &nodes_s, "Node count of the topology", "N" },
    { "groups", 'g', 0, G_OPTION_ARG_FILENAME, &groups_s,
      "Communicator groups: ASTRA-sim's JSON, PyTorch's pg_config_info or execution trace "
      "(default PREFIX.groups.json when present)", "FILE" },
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Write the plan JSON here (atomically)",
      "FILE" },
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "No closing line (notes on what was mapped stay)",
      NULL },
    { NULL },
  };
  int status;
  if (!sp_cli_parse (cmd, "PREFIX | PREFIX.<rank>.et...", "Read Chakra execution traces as a plan.",
                     import_description, entries, &argc, &argv, &status))
    return status;
  if (argc < 2)
    return sp_cli_fail (cmd, SP_EXIT_USAGE, "needs PREFIX or the PREFIX.<rank>.et files (%s)", help);
  guint32 listed = 0;
  gboolean ok = FALSE;
  g_autofree char *prefix = import_prefix (cmd, argc - 1, argv + 1, &listed, &ok);
  if (!ok)
    return SP_EXIT_USAGE;
  guint32 nodes = 0;
  if (!sp_cli_u32 (cmd, "--nodes", nodes_s, 1, 1u << 24, &nodes))
    return SP_EXIT_USAGE;
  g_autofree char *first = g_strdup_printf ("%s.0.et", prefix);
  g_autofree char *groups_path = groups_s ? g_strdup (groups_s)
                                          : g_strdup_printf ("%s.groups.json", prefix);
  g_autoptr (SpCliFiles) files = sp_cli_files_new (cmd);
  sp_cli_files_input (files, "PREFIX (rank 0)", first);
  /* every rank file the import will read (up to the first missing one),
   * named or not: -o must be none of them */
  for (guint32 r = 1; r < G_MAXUINT32; r++)
    {
      g_autofree char *rank_file = g_strdup_printf ("%s.%u.et", prefix, r);
      if (!g_file_test (rank_file, G_FILE_TEST_EXISTS))
        break;
      g_autofree char *what = g_strdup_printf ("PREFIX (rank %u)", r);
      sp_cli_files_input (files, what, rank_file);
    }
  sp_cli_files_input (files, groups_s ? "--groups" : "PREFIX (groups file)", groups_path);
  sp_cli_files_input (files, "--topology", topology);
  sp_cli_files_output (files, "-o/--output", output);
  if (!sp_cli_files_check (files))
    return SP_EXIT_USAGE;

  GError *error = NULL;
  g_autoptr (SpTopo) topo = NULL;
  if (topology && (topo = sp_cli_topo_open (cmd, topology, nodes, &error)) == NULL)
    return sp_cli_error (cmd, error);
  gint64 t0 = g_get_monotonic_time ();
  SpChakraImportStats st;
  g_autoptr (SpPlan) plan = sp_chakra_import (prefix, groups_s, topo, &st, &error);
  if (plan == NULL)
    return sp_cli_input_error (cmd, error);
  if (listed && listed != st.files)
    return sp_cli_fail (cmd, SP_EXIT_USAGE, "%u rank files named, but %s.0.et .. %s.%u.et are %u: "
                        "name PREFIX, or every rank file", listed, prefix, prefix, st.files - 1,
                        st.files);
  static const char *const type_names[8] = { "invalid", "metadata", "mem_load", "mem_store",
                                             "comp", "comm_send", "comm_recv", "comm_coll" };
  for (guint t = 0; t < 8; t++)
    if (st.skipped[t])
      fprintf (stderr, "shardplan %s: %" G_GUINT64_FORMAT " %s node(s) not modelled "
               "(dependencies bridged)\n", cmd, st.skipped[t], type_names[t]);
  if (st.p2p_mapped)
    fprintf (stderr, "shardplan %s: %u send / receive node pair(s) mapped to send / recv / p2p ops\n",
             cmd, st.p2p_mapped);
  if (!st.shardplan && (st.skipped[5] || st.skipped[6]))
    fprintf (stderr, "shardplan %s: (a send or receive is modelled only paired with a receive "
             "or send of the same bytes and peers, as an exchange around every group of a "
             "family or as one pair in each group of a family, one way)\n", cmd);
  if (st.compute_spread)
    fprintf (stderr, "shardplan %s: %u compute op(s) with different durations on "
             "different ranks: the longest kept\n", cmd, st.compute_spread);
  g_autofree char *json = sp_plan_to_json (plan);
  if (!sp_cli_write_output (output, json, strlen (json), &error))
    return sp_cli_error (cmd, error);
  if (quiet)
    return SP_EXIT_OK;
  g_autofree char *what = g_strdup_printf ("plan of %u %s from %u %s, %" G_GUINT64_FORMAT
                                           " %s, %s; %.2f s, peak RSS %.0f MiB", st.ops,
                                           sp_cli_plural (st.ops, "op", "ops"), st.files,
                                           sp_cli_plural (st.files, "file", "files"), st.nodes,
                                           sp_cli_plural (st.nodes, "node", "nodes"),
                                           st.shardplan ? "exact: written by shardplan"
                                                        : "mapped from Chakra",
                                           (g_get_monotonic_time () - t0) / 1e6, peak_rss_mib ());
  if (output && strcmp (output, "-") != 0)
    sp_cli_wrote (cmd, output, "%s", what);
  else
    fprintf (stderr, "shardplan %s: %s\n", cmd, what);
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
               "See 'shardplan chakra export --help', 'shardplan chakra import --help'.\n"
               "The same code runs as 'shardplan plan --chakra PREFIX', 'shardplan trace\n"
               "export --format chakra' and 'shardplan trace import-chakra'.\n");
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
    rc = sp_chakra_cmd_import (argc - 1, argv + 1);
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
