/* `shardplan trace export FILE --format csv|chrome [-o OUT]`.
 *
 * csv: one line per row of /ops/ops, the columns and their order those of
 * the record table (shardplan/trace-record.h), enums by name.
 *
 * chrome: the Trace Event Format that chrome://tracing and Perfetto open:
 * {"traceEvents": [...], "displayTimeUnit": "ns"}; one process per node
 * (pid = node id, 0 when the trace has no cluster table) and one thread per
 * rank (tid = rank), named by "process_name" / "thread_name" metadata
 * events; each row a complete event ("ph": "X") with ts and dur in µs
 * (ns / 1000, printed exactly), named by the plan's op name (the op kind
 * when the trace has no readable plan), with bytes, count, group, etc. in
 * its args.
 *
 * Both stream row batches to the output, written under a temporary name and
 * renamed when complete (-o), so a failure never leaves a half file. */
#include "config.h"
#include "chakra-cmd.h"
#include "cli.h"
#include "progress.h"
#include "trace-cmd.h"
#include "shardplan/shardplan.h"

#include <string.h>
#include <unistd.h>

#define CMD "trace export"
#define BATCH_ROWS 65536

/* Rows read so far, for the progress line (NULL: none; set by the command). */
static SpProgress *rows_progress;

/* JSON string literal of `s` (quotes included). */
static void
put_json_string (FILE *fp, const char *s)
{
  fputc ('"', fp);
  for (const unsigned char *p = (const unsigned char *) s; *p; p++)
    {
      if (*p == '"' || *p == '\\')
        fprintf (fp, "\\%c", *p);
      else if (*p < 0x20)
        fprintf (fp, "\\u%04x", *p);
      else
        fputc (*p, fp);
    }
  fputc ('"', fp);
}

/* ns as µs with three decimals: exact for integer ns. */
static void
put_us (FILE *fp, gint64 ns)
{
  guint64 mag = ns < 0 ? (guint64) 0 - (guint64) ns : (guint64) ns;
  fprintf (fp, "%s%" G_GUINT64_FORMAT ".%03u", ns < 0 ? "-" : "", mag / 1000,
           (unsigned) (mag % 1000));
}

typedef gboolean (*RowFunc) (SpTrace *t, const SpTraceRow *rows, gsize n, FILE *fp,
                             gpointer data, GError **error);

static gboolean
for_each_batch (SpTrace *t, FILE *fp, RowFunc fn, gpointer data, GError **error)
{
  guint64 n = sp_trace_n_rows (t);
  g_autofree SpTraceRow *rows = g_new (SpTraceRow, MIN (n, BATCH_ROWS) + 1);
  for (guint64 start = 0; start < n; start += BATCH_ROWS)
    {
      gsize k = (gsize) MIN ((guint64) BATCH_ROWS, n - start);
      if (!sp_trace_read_rows (t, start, k, rows, error) || !fn (t, rows, k, fp, data, error))
        return FALSE;
      if (rows_progress)
        sp_progress_set (rows_progress, start + k);
    }
  return TRUE;
}

/* ------------------------------------------------------------------- csv */

static gboolean
csv_rows (SpTrace *t, const SpTraceRow *rows, gsize n, FILE *fp, gpointer data, GError **error)
{
  GString *line = data;
  gsize nf = 0;
  const SpTraceField *fields = sp_trace_row_fields (&nf);
  for (gsize r = 0; r < n; r++)
    {
      g_string_truncate (line, 0);
      for (gsize i = 0; i < nf; i++)
        {
          if (i)
            g_string_append_c (line, ',');
          sp_trace_field_append (&fields[i], &rows[r], line);
        }
      g_string_append_c (line, '\n');
      fwrite (line->str, 1, line->len, fp);
    }
  return TRUE;
}

static gboolean
export_csv (SpTrace *t, FILE *fp, GError **error)
{
  gsize nf = 0;
  const SpTraceField *fields = sp_trace_row_fields (&nf);
  for (gsize i = 0; i < nf; i++)
    fprintf (fp, "%s%s", i ? "," : "", fields[i].name);
  fputc ('\n', fp);
  g_autoptr (GString) line = g_string_new (NULL);
  return for_each_batch (t, fp, csv_rows, line, error);
}

/* ---------------------------------------------------------------- chrome */

typedef struct {
  GHashTable *node_of_rank;  /* rank + 1 → node id + 1 */
  SpPlan *plan;              /* NULL: name ops by kind */
  GPtrArray *group_labels;   /* group_id → "shard[1]" */
  gboolean started;          /* an event was written: the next needs a comma */
} Chrome;

/* Start an event: the separator, then "{". */
static void
begin_event (Chrome *c, FILE *fp)
{
  fputs (c->started ? ",\n{" : "\n{", fp);
  c->started = TRUE;
}

static guint32
chrome_pid (const Chrome *c, guint32 rank)
{
  gpointer v = g_hash_table_lookup (c->node_of_rank, GUINT_TO_POINTER (rank + 1));
  return v ? GPOINTER_TO_UINT (v) - 1 : 0;
}

static gboolean
chrome_rows (SpTrace *t, const SpTraceRow *rows, gsize n, FILE *fp, gpointer data, GError **error)
{
  Chrome *c = data;
  for (gsize i = 0; i < n; i++)
    {
      const SpTraceRow *r = &rows[i];
      const char *name = NULL;
      if (c->plan && r->op_id < sp_plan_n_ops (c->plan))
        name = sp_plan_op (c->plan, r->op_id)->name;
      const char *kind = sp_coll_name (r->coll);
      if (name == NULL || *name == '\0')
        name = kind ? kind : "op";
      begin_event (c, fp);
      fputs ("\"name\":", fp);
      put_json_string (fp, name);
      fprintf (fp, ",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%u,\"tid\":%u,\"ts\":",
               kind ? kind : "unknown", chrome_pid (c, r->rank), r->rank);
      put_us (fp, r->t_start_ns);
      fputs (",\"dur\":", fp);
      put_us (fp, r->dur_ns);
      const char *group = r->group_id < c->group_labels->len ? c->group_labels->pdata[r->group_id]
                          : r->group_id == SP_TRACE_NO_GROUP ? "none" : "unknown";
      const char *status = sp_trace_status_name (r->status);
      char algbw[G_ASCII_DTOSTR_BUF_SIZE], busbw[G_ASCII_DTOSTR_BUF_SIZE];
      g_ascii_formatd (algbw, sizeof algbw, "%.6g", r->algbw_gbs);
      g_ascii_formatd (busbw, sizeof busbw, "%.6g", r->busbw_gbs);
      fprintf (fp,
               ",\"args\":{\"op_id\":%u,\"iter\":%d,\"bytes\":%" G_GUINT64_FORMAT
               ",\"count\":%" G_GUINT64_FORMAT ",\"group\":",
               r->op_id, r->iter, r->bytes, r->count);
      put_json_string (fp, group);
      fprintf (fp, ",\"group_rank\":%u,\"algbw_gbs\":%s,\"busbw_gbs\":%s,\"status\":\"%s\"}}",
               r->group_rank, algbw, busbw, status ? status : "unknown");
    }
  return TRUE;
}

static gboolean
export_chrome (SpTrace *t, FILE *fp, GError **error)
{
  Chrome c = { .node_of_rank = g_hash_table_new (NULL, NULL),
               .group_labels = g_ptr_array_new_with_free_func (g_free) };
  for (guint32 g = 0; g < sp_trace_n_groups (t); g++)
    g_ptr_array_add (c.group_labels, sp_trace_cmd_group_label (t, g));
  const char *plan_text = sp_trace_plan_text (t);
  if (plan_text)
    {
      g_autoptr (GError) perr = NULL;
      c.plan = sp_plan_from_json (plan_text, -1, 0, &perr);
      if (c.plan == NULL)
        fprintf (stderr, "shardplan " CMD ": the trace's plan is unreadable (%s); ops are "
                         "named by kind\n", perr->message);
    }

  fputs ("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", fp);
  gsize n_nodes = 0, n_ranks = 0;
  const SpTraceNode *nodes = sp_trace_nodes (t, &n_nodes);
  const SpTraceRank *ranks = sp_trace_ranks (t, &n_ranks);
  for (gsize i = 0; i < n_nodes; i++)
    {
      g_autofree char *label = g_strdup_printf ("node %u (%s)", nodes[i].node_id,
                                                nodes[i].hostname);
      begin_event (&c, fp);
      fprintf (fp, "\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%u,\"args\":{\"name\":",
               nodes[i].node_id);
      put_json_string (fp, label);
      fputs ("}}", fp);
    }
  for (gsize i = 0; i < n_ranks; i++)
    g_hash_table_insert (c.node_of_rank, GUINT_TO_POINTER (ranks[i].rank + 1),
                         GUINT_TO_POINTER (ranks[i].node_id + 1));
  /* One named track per rank: the cluster table's ranks, else the world. */
  guint32 n_tracks = n_ranks ? (guint32) n_ranks : sp_trace_header (t)->world_size;
  for (guint32 i = 0; i < n_tracks; i++)
    {
      guint32 rank = n_ranks ? ranks[i].rank : i;
      guint32 pid = chrome_pid (&c, rank);
      begin_event (&c, fp);
      fprintf (fp, "\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":%u,"
                   "\"args\":{\"name\":\"rank %u\"}}", pid, rank, rank);
      begin_event (&c, fp);
      fprintf (fp, "\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%u,\"tid\":%u,"
                   "\"args\":{\"sort_index\":%u}}", pid, rank, rank);
    }
  gboolean ok = for_each_batch (t, fp, chrome_rows, &c, error);
  fputs ("\n]}\n", fp);
  g_hash_table_unref (c.node_of_rank);
  g_ptr_array_unref (c.group_labels);
  g_clear_pointer (&c.plan, sp_plan_free);
  return ok;
}

int
sp_trace_cmd_export (int argc, char **argv)
{
  g_autofree char *format = NULL, *output = NULL;
  gboolean quiet = FALSE;
  GOptionEntry entries[] = {
    { "format", 'f', 0, G_OPTION_ARG_STRING, &format,
      "csv (every row), chrome (Chrome/Perfetto trace JSON) or chakra (Chakra ET files "
      "for ASTRA-sim, -o PREFIX); required", "FORMAT" },
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
      "write here (atomically) instead of standard output; chakra: PREFIX.<rank>.et and "
      "PREFIX.groups.json", "OUT" },
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, SP_PROGRESS_QUIET_HELP, NULL },
    { NULL },
  };
  int status = SP_EXIT_OK;
  if (!sp_cli_parse (CMD, "FILE", "Export a trace's rows as CSV or as Chrome/Perfetto trace JSON.",
                     "The Chrome JSON has one track per rank (grouped by node) and one slice\n"
                     "per op instance; open it in https://ui.perfetto.dev or chrome://tracing.\n"
                     "chakra writes the trace's plan as 'shardplan chakra export' does, each\n"
                     "node with the duration_micros the trace has for it on that rank (the\n"
                     "mean over the timed iterations, rows with status ok).",
                     entries, &argc, &argv, &status))
    return status;
  if (format == NULL)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "--format is required: csv, chrome or chakra");
  gboolean csv = strcmp (format, "csv") == 0, chakra = strcmp (format, "chakra") == 0;
  if (!csv && !chakra && strcmp (format, "chrome") != 0)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "--format '%s' is not one of: csv, chrome, chakra",
                        format);
  if (argc != 2)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "expected one trace file, got %d arguments "
                        "(see 'shardplan trace export --help')", argc - 1);
  if (chakra && (output == NULL || *output == '\0' || strcmp (output, "-") == 0))
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "--format chakra writes files: give -o PREFIX");
  if (chakra)
    return sp_chakra_cmd_write_trace (CMD, argv[1], output, quiet);
  g_autoptr (SpCliFiles) files = sp_cli_files_new (CMD);
  sp_cli_files_input (files, "FILE argument", argv[1]);
  sp_cli_files_output (files, "-o/--output", output);
  if (!sp_cli_files_check (files))
    return SP_EXIT_USAGE;
  g_autoptr (SpTrace) t = sp_trace_cmd_open (CMD, argv[1]);
  if (t == NULL)
    return SP_EXIT_USAGE;
  SpTraceOut out;
  g_autoptr (GError) error = NULL;
  if (!sp_trace_out_open (&out, output, &error))
    return sp_cli_fail (CMD, SP_EXIT_FAILURE, "%s", error->message);
  /* rows streaming to the terminal are their own progress: no line over them */
  gboolean rows_on_tty = (output == NULL || strcmp (output, "-") == 0) && isatty (STDOUT_FILENO);
  rows_progress = sp_progress_new (CMD, sp_trace_n_rows (t), "rows", quiet || rows_on_tty);
  gboolean ok = csv ? export_csv (t, out.fp, &error) : export_chrome (t, out.fp, &error);
  g_clear_pointer (&rows_progress, sp_progress_free);
  if (!ok)
    {
      sp_trace_out_discard (&out);
      return sp_cli_fail (CMD, SP_EXIT_USAGE, "%s", error->message);
    }
  if (!sp_trace_out_commit (&out, &error))
    return sp_cli_fail (CMD, SP_EXIT_FAILURE, "%s", error->message);
  if (!quiet)
    sp_cli_wrote (CMD, output, "%s, %" G_GUINT64_FORMAT " %s", csv ? "CSV" : "Chrome trace JSON",
                  sp_trace_n_rows (t), sp_cli_plural (sp_trace_n_rows (t), "row", "rows"));
  return SP_EXIT_OK;
}
