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
 * renamed when complete (-o), so a failure never leaves a half file.
 *
 * --ranks, --iters (= --steps) and --ops select rows for both: a first pass
 * counts the rows selected (so an empty selection writes nothing, and the
 * size of a Chrome JSON is known before it is written), the second writes
 * them. */
#include "config.h"
#include "chakra-cmd.h"
#include "cli.h"
#include "progress.h"
#include "trace-cmd.h"
#include "shardplan/shardplan.h"

#include <math.h>
#include <string.h>
#include <unistd.h>

#define CMD "trace export"
#define BATCH_ROWS 65536

/* Rows read so far, for the progress line (NULL: none; set by the command). */
static SpProgress *rows_progress;
/* Bytes of Chrome JSON per row, for the size warning: 246 B per row
 * measured on a simulated gpt-1b trace (102 ops, plan op names), 260 B on
 * a simulated gpt-13b one of 7.3 M rows, 281 B on tests' sample trace,
 * 277 B in issue 16's export (2.3 GB of 8.3 M rows); plus about 150 B of
 * metadata per rank track. */
#define CHROME_ROW_BYTES 280
#define CHROME_TRACK_BYTES 150

/* Warn above this Chrome JSON size (SP_CHROME_WARN_BYTES overrides; 0
 * never warns).  512 MiB is an assumption from two limits, not a
 * measurement (and the figures are recalled, not re-checked for this
 * change): chrome://tracing reads the file into one JavaScript string, and
 * V8 caps a string at 2^29 - 24 characters on 64-bit builds (Node's
 * buffer.constants.MAX_STRING_LENGTH); Perfetto's UI parses in
 * WebAssembly, a 32-bit heap of at most 4 GiB that must hold the file and
 * the tables built from it, and Perfetto's documentation on large traces
 * sends bigger ones to the native trace_processor (--httpd) instead. */
#define CHROME_WARN_BYTES_DEFAULT (G_GUINT64_CONSTANT (512) << 20)
#define CHROME_WARN_ENV "SP_CHROME_WARN_BYTES"

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

/* --------------------------------------------------------------- filters */

/* The rows --ranks, --iters and --ops select: each a sorted array of
 * disjoint Spans, or NULL for every value. */
typedef struct {
  GArray *ranks, *iters, *ops;
} Filter;

static void
filter_clear (Filter *f)
{
  g_clear_pointer (&f->ranks, g_array_unref);
  g_clear_pointer (&f->iters, g_array_unref);
  g_clear_pointer (&f->ops, g_array_unref);
}

static gboolean
filter_active (const Filter *f)
{
  return f->ranks || f->iters || f->ops;
}

static gboolean
filter_row (const Filter *f, const SpTraceRow *r)
{
  return sp_ranges_contain (f->ranks, r->rank) && (f->iters == NULL || (r->iter >= 0
         && sp_ranges_contain (f->iters, (guint64) r->iter))) && sp_ranges_contain (f->ops, r->op_id);
}

/* Parse `option`'s LIST into *out_spans (sp_parse_ranges; with `globs`,
 * name globs go there).  Reports errors itself (exit 2). */
static gboolean
parse_list (const char *option, const char *text, GArray **out_spans, GPtrArray *globs)
{
  g_autoptr (GError) error = NULL;
  *out_spans = sp_parse_ranges (option, text, globs, &error);
  if (*out_spans == NULL)
    {
      sp_cli_fail (CMD, SP_EXIT_USAGE, "%s", error->message);
      return FALSE;
    }
  return TRUE;
}

/* TRUE when every value of `spans` is at most `max`; else one line naming
 * the last span (the one past it) and the valid range 0..max, or saying the
 * trace has no such values at all when `none`. */
static gboolean
check_spans (const char *option, const GArray *spans, gboolean none, guint64 max,
             const char *what)
{
  if (spans == NULL || spans->len == 0)
    return TRUE;
  const SpRange *last = &g_array_index (spans, SpRange, spans->len - 1);
  if (!none && last->hi <= max)
    return TRUE;
  g_autofree char *bad = last->lo == last->hi
    ? g_strdup_printf ("%" G_GUINT64_FORMAT, last->lo)
    : g_strdup_printf ("%" G_GUINT64_FORMAT "-%" G_GUINT64_FORMAT, last->lo, last->hi);
  if (none)
    sp_cli_fail (CMD, SP_EXIT_USAGE, "%s %s: the trace has no %s", option, bad, what);
  else
    sp_cli_fail (CMD, SP_EXIT_USAGE, "%s %s: the trace has %s 0-%" G_GUINT64_FORMAT, option, bad,
                 what, max);
  return FALSE;
}

/* --ops name globs: the ids of the plan's ops whose name matches one.
 * Every glob must match an op. */
static gboolean
resolve_globs (const SpPlan *plan, GPtrArray *globs, GArray *spans)
{
  for (guint g = 0; g < globs->len; g++)
    {
      g_autoptr (GPatternSpec) spec = g_pattern_spec_new (globs->pdata[g]);
      guint found = 0;
      for (guint32 i = 0; i < sp_plan_n_ops (plan); i++)
        {
          const char *name = sp_plan_op (plan, i)->name;
          if (name && g_pattern_spec_match_string (spec, name))
            {
              SpRange s = { i, i };
              g_array_append_val (spans, s);
              found++;
            }
        }
      if (found == 0)
        {
          const char *example = sp_plan_n_ops (plan) ? sp_plan_op (plan, 0)->name : NULL;
          sp_cli_fail (CMD, SP_EXIT_USAGE, "--ops '%s' matches no op name of the trace's plan "
                       "(%u ops, the first named '%s')", (const char *) globs->pdata[g],
                       sp_plan_n_ops (plan), example ? example : "");
          return FALSE;
        }
    }
  sp_ranges_normalise (spans);
  return TRUE;
}

typedef struct {
  const Filter *f;
  guint64 selected;
  guint32 max_op;             /* largest op id of any row */
  gboolean any;
} Count;

static gboolean
count_rows (SpTrace *t, const SpTraceRow *rows, gsize n, FILE *fp, gpointer data, GError **error)
{
  Count *c = data;
  for (gsize i = 0; i < n; i++)
    {
      c->max_op = c->any ? MAX (c->max_op, rows[i].op_id) : rows[i].op_id;
      c->any = TRUE;
      c->selected += filter_row (c->f, &rows[i]);
    }
  return TRUE;
}

/* Parse the filters into *f, check them against the trace and count the
 * rows they select (*out_selected; the trace's row count without filters).
 * Reports errors itself: FALSE means exit 2. */
static gboolean
select_rows (SpTrace *t, const char *ranks, const char *iters, const char *ops, Filter *f,
             gboolean no_progress, guint64 *out_selected)
{
  const SpTraceHeader *h = sp_trace_header (t);
  g_autoptr (GPtrArray) globs = g_ptr_array_new_with_free_func (g_free);
  if ((ranks && !parse_list ("--ranks", ranks, &f->ranks, NULL))
      || (iters && !parse_list ("--iters", iters, &f->iters, NULL))
      || (ops && !parse_list ("--ops", ops, &f->ops, globs)))
    return FALSE;
  if (!check_spans ("--ranks", f->ranks, h->world_size == 0, (guint64) h->world_size - 1, "ranks")
      || !check_spans ("--iters", f->iters, h->iters == 0, (guint64) h->iters - 1,
                       "timed iterations"))
    return FALSE;
  g_autoptr (SpPlan) plan = NULL;
  if (ops && sp_trace_plan_text (t))
    plan = sp_plan_from_json (sp_trace_plan_text (t), -1, 0, NULL);
  if (globs->len && plan == NULL)
    {
      sp_cli_fail (CMD, SP_EXIT_USAGE, "--ops '%s': the trace has no readable plan, so its ops "
                   "have no names: give op ids", (const char *) globs->pdata[0]);
      return FALSE;
    }
  if (plan && !check_spans ("--ops", f->ops, sp_plan_n_ops (plan) == 0,
                            (guint64) sp_plan_n_ops (plan) - 1, "op ids"))
    return FALSE;
  if (globs->len && !resolve_globs (plan, globs, f->ops))
    return FALSE;
  if (!filter_active (f))
    {
      *out_selected = sp_trace_n_rows (t);
      return TRUE;
    }
  Count c = { .f = f };
  g_autoptr (GError) error = NULL;
  /* the counting pass reads every row too: a line of its own, cleared
   * before anything below prints */
  rows_progress = sp_progress_new (CMD, sp_trace_n_rows (t), "rows read to count the selection",
                                   no_progress);
  gboolean counted = for_each_batch (t, NULL, count_rows, &c, &error);
  g_clear_pointer (&rows_progress, sp_progress_free);
  if (!counted)
    {
      sp_cli_fail (CMD, SP_EXIT_USAGE, "%s", error->message);
      return FALSE;
    }
  /* Without a plan, the op ids are those the rows have. */
  if (ops && plan == NULL && !check_spans ("--ops", f->ops, !c.any, c.max_op,
                                           "op ids"))
    return FALSE;
  if (c.selected == 0)
    {
      g_autoptr (GString) what = g_string_new (NULL);
      const char *opt[] = { "--ranks", "--iters", "--ops" }, *val[] = { ranks, iters, ops };
      for (guint i = 0; i < G_N_ELEMENTS (opt); i++)
        if (val[i])
          g_string_append_printf (what, "%s%s %s", what->len ? " " : "", opt[i], val[i]);
      sp_cli_fail (CMD, SP_EXIT_USAGE, "the selection %s matches none of the trace's %"
                   G_GUINT64_FORMAT " rows; nothing written", what->str, sp_trace_n_rows (t));
      return FALSE;
    }
  *out_selected = c.selected;
  return TRUE;
}

typedef struct {
  const Filter *f;
  RowFunc fn;
  gpointer data;
} Selected;

/* Hand the runs of selected rows of a batch to the exporter. */
static gboolean
selected_rows (SpTrace *t, const SpTraceRow *rows, gsize n, FILE *fp, gpointer data,
               GError **error)
{
  Selected *s = data;
  gsize i = 0;
  while (i < n)
    {
      while (i < n && !filter_row (s->f, &rows[i]))
        i++;
      gsize start = i;
      while (i < n && filter_row (s->f, &rows[i]))
        i++;
      if (i > start && !s->fn (t, rows + start, i - start, fp, s->data, error))
        return FALSE;
    }
  return TRUE;
}

static gboolean
for_each_selected (SpTrace *t, FILE *fp, const Filter *f, RowFunc fn, gpointer data,
                   GError **error)
{
  if (!filter_active (f))
    return for_each_batch (t, fp, fn, data, error);
  Selected s = { f, fn, data };
  return for_each_batch (t, fp, selected_rows, &s, error);
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
export_csv (SpTrace *t, FILE *fp, const Filter *f, GError **error)
{
  gsize nf = 0;
  const SpTraceField *fields = sp_trace_row_fields (&nf);
  for (gsize i = 0; i < nf; i++)
    fprintf (fp, "%s%s", i ? "," : "", fields[i].name);
  fputc ('\n', fp);
  g_autoptr (GString) line = g_string_new (NULL);
  return for_each_selected (t, fp, f, csv_rows, line, error);
}

/* ---------------------------------------------------------------- chrome */

typedef struct {
  GHashTable *node_of_rank;  /* rank + 1 → node id + 1 */
  SpPlan *plan;              /* NULL: name ops by kind */
  GPtrArray *group_labels;   /* group_id → "shard[1]" */
  gboolean started;          /* an event was written: the next needs a comma */
  GHashTable *named;         /* rank + 1 of the tracks named so far; NULL: all named */
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

/* The metadata events naming rank's track. */
static void
name_track (Chrome *c, FILE *fp, guint32 rank)
{
  guint32 pid = chrome_pid (c, rank);
  begin_event (c, fp);
  fprintf (fp, "\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%u,\"tid\":%u,"
               "\"args\":{\"name\":\"rank %u\"}}", pid, rank, rank);
  begin_event (c, fp);
  fprintf (fp, "\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%u,\"tid\":%u,"
               "\"args\":{\"sort_index\":%u}}", pid, rank, rank);
}

/* A rate as JSON: null where a damaged row holds NaN or an infinity. */
static void
put_rate (FILE *fp, double v)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  fputs (isfinite (v) ? g_ascii_formatd (buf, sizeof buf, "%.6g", v) : "null", fp);
}

static gboolean
chrome_rows (SpTrace *t, const SpTraceRow *rows, gsize n, FILE *fp, gpointer data, GError **error)
{
  Chrome *c = data;
  for (gsize i = 0; i < n; i++)
    {
      const SpTraceRow *r = &rows[i];
      if (c->named && g_hash_table_add (c->named, GUINT_TO_POINTER (r->rank + 1)))
        name_track (c, fp, r->rank);
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
      fprintf (fp,
               ",\"args\":{\"op_id\":%u,\"iter\":%d,\"bytes\":%" G_GUINT64_FORMAT
               ",\"count\":%" G_GUINT64_FORMAT ",\"group\":",
               r->op_id, r->iter, r->bytes, r->count);
      put_json_string (fp, group);
      fprintf (fp, ",\"group_rank\":%u,\"algbw_gbs\":", r->group_rank);
      put_rate (fp, r->algbw_gbs);
      fputs (",\"busbw_gbs\":", fp);
      put_rate (fp, r->busbw_gbs);
      fprintf (fp, ",\"status\":\"%s\"}}", status ? status : "unknown");
    }
  return TRUE;
}

static gboolean
export_chrome (SpTrace *t, FILE *fp, const Filter *f, GError **error)
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
  /* One named track per rank: the cluster table's ranks up front; without
   * one, each rank's as its first row comes (the header's world_size is
   * only a number: a damaged one must not cost a track per rank it claims) */
  for (gsize i = 0; i < n_ranks; i++)
    if (sp_ranges_contain (f->ranks, ranks[i].rank))
      name_track (&c, fp, ranks[i].rank);
  if (n_ranks == 0)
    c.named = g_hash_table_new (NULL, NULL);
  gboolean ok = for_each_selected (t, fp, f, chrome_rows, &c, error);
  g_clear_pointer (&c.named, g_hash_table_unref);
  fputs ("\n]}\n", fp);
  g_hash_table_unref (c.node_of_rank);
  g_ptr_array_unref (c.group_labels);
  g_clear_pointer (&c.plan, sp_plan_free);
  return ok;
}

/* The Chrome JSON's size for `selected` rows, bytes (saturating). */
static guint64
chrome_estimate (SpTrace *t, const Filter *f, guint64 selected)
{
  gsize n_ranks = 0;
  sp_trace_ranks (t, &n_ranks);
  /* without a ranks table, a track per rank that has a row (at most one per row) */
  guint64 tracks = n_ranks ? n_ranks : MIN ((guint64) sp_trace_header (t)->world_size, selected);
  if (f->ranks)
    {
      guint64 picked = 0;
      for (guint i = 0; i < f->ranks->len; i++)
        picked += g_array_index (f->ranks, SpRange, i).hi - g_array_index (f->ranks, SpRange, i).lo + 1;
      tracks = MIN (tracks, picked);
    }
  if (selected > (G_MAXUINT64 - tracks * CHROME_TRACK_BYTES) / CHROME_ROW_BYTES)
    return G_MAXUINT64;
  return selected * CHROME_ROW_BYTES + tracks * CHROME_TRACK_BYTES;
}

/* Warn on stderr when the Chrome JSON will be larger than Perfetto's UI
 * opens (CHROME_WARN_BYTES_DEFAULT).  FALSE after a bad SP_CHROME_WARN_BYTES
 * (exit 2). */
static gboolean
chrome_size_warning (SpTrace *t, const Filter *f, guint64 selected)
{
  guint64 limit = CHROME_WARN_BYTES_DEFAULT;
  const char *env = g_getenv (CHROME_WARN_ENV);
  g_autoptr (GError) error = NULL;
  if (env && !sp_parse_bytes (CHROME_WARN_ENV, env, 0, G_MAXUINT64, &limit, &error))
    {
      sp_cli_fail (CMD, SP_EXIT_USAGE, "%s", error->message);
      return FALSE;
    }
  guint64 size = chrome_estimate (t, f, selected);
  if (limit == 0 || size <= limit)
    return TRUE;
  g_autofree char *size_text = g_format_size_full (size, G_FORMAT_SIZE_IEC_UNITS);
  g_autofree char *limit_text = g_format_size_full (limit, G_FORMAT_SIZE_IEC_UNITS);
  /* the default is Perfetto's UI; a limit set in the environment is the user's */
  fprintf (stderr, "shardplan " CMD ": warning: the Chrome JSON of %" G_GUINT64_FORMAT " %s will "
                   "be about %s, more than %s %s (" CHROME_WARN_ENV "); select fewer with "
                   "--ranks, --iters or --ops\n",
           selected, sp_cli_plural (selected, "row", "rows"), size_text,
           env ? "the limit of" : "Perfetto's UI opens, about", limit_text);
  return TRUE;
}

int
sp_trace_cmd_export (int argc, char **argv)
{
  g_autofree char *format = NULL, *output = NULL;
  gboolean quiet = FALSE;
  g_autofree char *ranks = NULL, *iters = NULL, *steps = NULL, *ops = NULL;
  GOptionEntry entries[] = {
    { "format", 'f', 0, G_OPTION_ARG_STRING, &format,
      "csv (every row), chrome (Chrome/Perfetto trace JSON) or chakra (Chakra ET files "
      "for ASTRA-sim, -o PREFIX); required", "FORMAT" },
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
      "write here (atomically) instead of standard output; chakra: PREFIX.<rank>.et and "
      "PREFIX.groups.json", "OUT" },
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, SP_PROGRESS_QUIET_HELP, NULL },
    { "ranks", 0, 0, G_OPTION_ARG_STRING, &ranks,
      "only the rows of these global ranks, e.g. 0-7,16 (csv, chrome)", "LIST" },
    { "iters", 0, 0, G_OPTION_ARG_STRING, &iters,
      "only these timed iterations, 0 .. iters-1, e.g. 0,5-9 (csv, chrome)", "LIST" },
    { "steps", 0, 0, G_OPTION_ARG_STRING, &steps,
      "the same as --iters: one timed iteration runs the whole plan, one training step", "LIST" },
    { "ops", 0, 0, G_OPTION_ARG_STRING, &ops,
      "only these op ids (e.g. 0-99,120) or ops whose plan name matches a glob "
      "(e.g. 'mb0.*.fwd*'; items not starting with a digit) (csv, chrome)", "LIST" },
    { NULL },
  };
  int status = SP_EXIT_OK;
  if (!sp_cli_parse (CMD, "FILE", "Export a trace's rows as CSV or as Chrome/Perfetto trace JSON.",
                     "The Chrome JSON has one track per rank (grouped by node) and one slice\n"
                     "per op instance; open it in https://ui.perfetto.dev or chrome://tracing.\n"
                     "chakra writes the trace's plan as 'shardplan chakra export' does, each\n"
                     "node with the duration_micros the trace has for it on that rank (the\n"
                     "mean over the timed iterations, rows with status ok).\n\n"
                     "--ranks, --iters (--steps) and --ops select rows (csv and chrome; chakra\n"
                     "writes the whole plan for every rank and takes none): a row is kept when\n"
                     "it matches all of them.  A LIST is comma-separated numbers and ranges\n"
                     "A-B (inclusive); --ops also takes globs (* and ?) over the plan's op\n"
                     "names.  A value outside the trace (ranks 0 .. world size-1, iterations\n"
                     "0 .. iters-1, op ids of its plan) or a selection of no rows exits 2 and\n"
                     "writes nothing.  Before writing Chrome JSON the size is estimated\n"
                     "(280 bytes a row); above 512 MiB, about what Perfetto's UI and\n"
                     "chrome://tracing load in a browser, a warning suggests the filters\n"
                     "(" CHROME_WARN_ENV "=SIZE sets that threshold, 0 never warns).",
                     entries, &argc, &argv, &status))
    return status;
  if (format == NULL)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "--format is required: csv, chrome or chakra");
  gboolean csv = strcmp (format, "csv") == 0, chakra = strcmp (format, "chakra") == 0;
  if (!csv && !chakra && strcmp (format, "chrome") != 0)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "--format '%s' is not one of: csv, chrome, chakra",
                        format);
  if (steps && iters)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "--steps '%s' and --iters '%s': give one of them "
                        "(--steps is --iters)", steps, iters);
  if (steps)
    iters = g_steal_pointer (&steps);
  const char *filter_opt = ranks ? "--ranks" : iters ? "--iters" : ops ? "--ops" : NULL;
  if (chakra && filter_opt)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "%s: --format chakra takes no row filters (it writes "
                        "the whole plan for every rank, as ASTRA-sim needs); they apply to csv "
                        "and chrome", filter_opt);
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
  Filter f = { 0 };
  guint64 selected = 0, total = sp_trace_n_rows (t);
  /* rows streaming to the terminal are their own progress: no line over them */
  gboolean rows_on_tty = (output == NULL || strcmp (output, "-") == 0) && isatty (STDOUT_FILENO);
  if (!select_rows (t, ranks, iters, ops, &f, quiet || rows_on_tty, &selected) || (!csv
      && !chrome_size_warning (t, &f, selected)))
    {
      filter_clear (&f);
      return SP_EXIT_USAGE;
    }
  SpTraceOut out;
  g_autoptr (GError) error = NULL;
  if (!sp_trace_out_open (&out, output, &error))
    {
      filter_clear (&f);
      return sp_cli_fail (CMD, SP_EXIT_FAILURE, "%s", error->message);
    }
  rows_progress = sp_progress_new (CMD, sp_trace_n_rows (t), "rows", quiet || rows_on_tty);
  gboolean ok = csv ? export_csv (t, out.fp, &f, &error) : export_chrome (t, out.fp, &f, &error);
  g_clear_pointer (&rows_progress, sp_progress_free);
  gboolean filtered = filter_active (&f);
  filter_clear (&f);
  if (!ok)
    {
      sp_trace_out_discard (&out);
      return sp_cli_fail (CMD, SP_EXIT_USAGE, "%s", error->message);
    }
  if (!sp_trace_out_commit (&out, &error))
    return sp_cli_fail (CMD, SP_EXIT_FAILURE, "%s", error->message);
  if (quiet)
    return SP_EXIT_OK;
  if (filtered)
    sp_cli_wrote (CMD, output, "%s, %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " %s selected",
                  csv ? "CSV" : "Chrome trace JSON", selected, total,
                  sp_cli_plural (total, "row", "rows"));
  else
    sp_cli_wrote (CMD, output, "%s, %" G_GUINT64_FORMAT " %s", csv ? "CSV" : "Chrome trace JSON",
                  total, sp_cli_plural (total, "row", "rows"));
  return SP_EXIT_OK;
}
