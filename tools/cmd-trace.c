/* `shardplan trace show|export`: inspect and export traces.
 *
 * `show` summarises a trace (where it came from, ranks, ops, rows, totals per
 * op kind and per group family, complete or partial); `export` lives in
 * trace-export.c.  Both read rows in batches, so a trace larger than memory
 * is fine. */
#include "config.h"
#include "chakra-cmd.h"
#include "cli.h"
#include "commands.h"
#include "trace-cmd.h"
#include "shardplan/shardplan.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <string.h>
#include <unistd.h>

/* Rows per read: 64 Ki × 144 B ≈ 9.4 MB of SpTraceRow. */
#define BATCH_ROWS 65536

SpTrace *
sp_trace_cmd_open (const char *command, const char *path)
{
  g_autoptr (GError) error = NULL;
  SpTrace *t = sp_trace_open (path, &error);
  if (t == NULL)
    sp_cli_fail (command, SP_EXIT_USAGE, "%s", error->message);
  return t;
}

char *
sp_trace_cmd_group_label (const SpTrace *trace, guint32 group_id)
{
  guint32 family = 0, index = 0;
  if (group_id == SP_TRACE_NO_GROUP)
    return g_strdup ("none");
  if (!sp_trace_group_info (trace, group_id, &family, &index))
    return g_strdup_printf ("group %u", group_id);
  const char *name = sp_trace_family_name (trace, family);
  return g_strdup_printf ("%s[%u]", name ? name : "?", index);
}

gboolean
sp_trace_out_open (SpTraceOut *out, const char *path, GError **error)
{
  memset (out, 0, sizeof *out);
  if (path == NULL || strcmp (path, "-") == 0)
    {
      out->fp = stdout;
      return TRUE;
    }
  out->path = g_strdup (path);
  int fd = sp_file_temp_open (path, &out->tmp, error);
  if (fd >= 0)
    out->fp = fdopen (fd, "w");
  if (out->fp == NULL)
    {
      if (fd >= 0)
        {
          int e = errno;
          g_set_error (error, SP_ERROR, SP_ERROR_IO, "cannot write %s: %s", path, g_strerror (e));
          close (fd);
          sp_file_temp_discard (out->tmp);
        }
      g_clear_pointer (&out->tmp, g_free);
      g_clear_pointer (&out->path, g_free);
      return FALSE;
    }
  return TRUE;
}

gboolean
sp_trace_out_commit (SpTraceOut *out, GError **error)
{
  if (out->tmp == NULL)
    {
      if (fflush (out->fp) != 0 || ferror (out->fp))
        {
          g_set_error (error, SP_ERROR, SP_ERROR_IO, "cannot write to standard output");
          return FALSE;
        }
      return TRUE;
    }
  gboolean ok = fflush (out->fp) == 0 && !ferror (out->fp) && fsync (fileno (out->fp)) == 0;
  int e = errno;
  ok = fclose (out->fp) == 0 && ok;
  out->fp = NULL;
  if (ok)
    ok = sp_file_temp_commit (out->tmp, out->path, error);
  else
    {
      g_set_error (error, SP_ERROR, SP_ERROR_IO, "cannot write %s: %s", out->path,
                   g_strerror (e));
      sp_file_temp_discard (out->tmp);
    }
  g_clear_pointer (&out->tmp, g_free);
  g_clear_pointer (&out->path, g_free);
  return ok;
}

void
sp_trace_out_discard (SpTraceOut *out)
{
  if (out->tmp == NULL)
    return;
  if (out->fp)
    fclose (out->fp);
  sp_file_temp_discard (out->tmp);
  g_clear_pointer (&out->tmp, g_free);
  g_clear_pointer (&out->path, g_free);
  out->fp = NULL;
}

/* ------------------------------------------------------------------ show */

typedef struct {
  guint64 rows, bytes;
  gint64 total_ns;
} Totals;

typedef struct {
  guint64 rows;
  GHashTable *op_ids;           /* distinct op ids */
  GHashTable *ranks;            /* distinct ranks */
  Totals by_kind[256];          /* SpColl values are < 256 */
  GHashTable *by_family;        /* family label → Totals* */
  guint64 by_status[256];
  gint64 t_min, t_max;          /* span of t_start .. t_end, ns */
} Summary;

static const char *
family_label (const SpTrace *t, guint32 group_id)
{
  guint32 family = 0;
  if (group_id == SP_TRACE_NO_GROUP)
    return "none";
  if (!sp_trace_group_info (t, group_id, &family, NULL))
    return "unknown";
  const char *name = sp_trace_family_name (t, family);
  return name ? name : "unknown";
}

/* total + d, saturating: a damaged or hostile row (a duration near
 * G_MAXINT64) must not overflow the totals. */
static gint64
add_ns (gint64 total, gint64 d)
{
  if (d > 0 && total > G_MAXINT64 - d)
    return G_MAXINT64;
  if (d < 0 && total < G_MININT64 - d)
    return G_MININT64;
  return total + d;
}

/* total + b, saturating at G_MAXUINT64 (sizes are exact up to 2^64 − 1;
 * their sum need not be). */
static guint64
add_bytes (guint64 total, guint64 b)
{
  return total > G_MAXUINT64 - b ? G_MAXUINT64 : total + b;
}

static gboolean
summarise (SpTrace *t, Summary *s, GError **error)
{
  memset (s, 0, sizeof *s);
  s->op_ids = g_hash_table_new (NULL, NULL);
  s->ranks = g_hash_table_new (NULL, NULL);
  s->by_family = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, g_free);
  s->t_min = G_MAXINT64;
  s->t_max = G_MININT64;
  guint64 n = sp_trace_n_rows (t);
  g_autofree SpTraceRow *rows = g_new (SpTraceRow, MIN (n, BATCH_ROWS) + 1);
  for (guint64 start = 0; start < n; start += BATCH_ROWS)
    {
      gsize k = (gsize) MIN ((guint64) BATCH_ROWS, n - start);
      if (!sp_trace_read_rows (t, start, k, rows, error))
        return FALSE;
      for (gsize i = 0; i < k; i++)
        {
          const SpTraceRow *r = &rows[i];
          g_hash_table_add (s->op_ids, GUINT_TO_POINTER (r->op_id + 1));
          g_hash_table_add (s->ranks, GUINT_TO_POINTER (r->rank + 1));
          Totals *kt = &s->by_kind[(guint) r->coll & 0xff];
          kt->rows++;
          kt->bytes = add_bytes (kt->bytes, r->bytes);
          kt->total_ns = add_ns (kt->total_ns, r->dur_ns);
          const char *fam = family_label (t, r->group_id);
          Totals *ft = g_hash_table_lookup (s->by_family, fam);
          if (ft == NULL)
            {
              ft = g_new0 (Totals, 1);
              g_hash_table_insert (s->by_family, (gpointer) fam, ft);
            }
          ft->rows++;
          ft->bytes = add_bytes (ft->bytes, r->bytes);
          ft->total_ns = add_ns (ft->total_ns, r->dur_ns);
          s->by_status[(guint) r->status & 0xff]++;
          s->t_min = MIN (s->t_min, r->t_start_ns);
          s->t_max = MAX (s->t_max, r->t_end_ns);
        }
      s->rows += k;
    }
  return TRUE;
}

static void
summary_clear (Summary *s)
{
  g_clear_pointer (&s->op_ids, g_hash_table_unref);
  g_clear_pointer (&s->ranks, g_hash_table_unref);
  g_clear_pointer (&s->by_family, g_hash_table_unref);
}

/* Families in file order, then "none" / "unknown" if rows use them. */
static GPtrArray *
family_order (const SpTrace *t, const Summary *s)
{
  GPtrArray *order = g_ptr_array_new ();
  for (guint32 i = 0; i < sp_trace_n_families (t); i++)
    {
      const char *name = NULL;
      sp_trace_family (t, i, NULL, &name);
      if (g_hash_table_contains (s->by_family, name))
        g_ptr_array_add (order, (gpointer) name);
    }
  static const char *extra[] = { "none", "unknown" };
  for (guint i = 0; i < G_N_ELEMENTS (extra); i++)
    if (g_hash_table_contains (s->by_family, extra[i]))
      g_ptr_array_add (order, (gpointer) extra[i]);
  return order;
}

static const char *
kind_label (guint k)
{
  const char *name = sp_coll_name ((SpColl) k);
  return name ? name : "unknown";
}

static guint
n_ranks (const SpTrace *t, const Summary *s)
{
  gsize n = 0;
  sp_trace_ranks (t, &n);
  return n ? (guint) n : g_hash_table_size (s->ranks);
}

/* What `shardplan run --check` policy a trace's check_policy names. */
static const char *
check_policy_note (const char *policy)
{
  if (strcmp (policy, "after") == 0)
    return " (one untimed validation pass after the timed iterations)";
  if (strcmp (policy, "every") == 0)
    return " (every op of every iteration, outside the timed region)";
  if (strcmp (policy, "none") == 0)
    return " (results not verified)";
  return "";
}

static void
print_text (const char *path, const SpTrace *t, const Summary *s)
{
  const SpTraceHeader *h = sp_trace_header (t);
  guint major, minor;
  sp_trace_schema_version (t, &major, &minor);
  gsize n_nodes = 0;
  sp_trace_nodes (t, &n_nodes);
  printf ("trace:     %s (schema %u.%u)\n", path, major, minor);
  if (sp_trace_is_complete (t))
    printf ("state:     complete\n");
  else
    printf ("state:     partial: %s\n", sp_trace_incomplete_reason (t));
  printf ("source:    %s, by %s %s\n", sp_trace_source_name (h->source), h->producer,
          h->producer_version);
  printf ("created:   %s (run %s)\n", h->created_utc, h->run_id);
  printf ("timing:    %s, clock %s, %u %s after %u warm-up\n", h->timing_mode, h->clock,
          h->iters, sp_cli_plural (h->iters, "iteration", "iterations"), h->warmup_iters);
  if (h->check_policy)
    printf ("checked:   %s%s\n", h->check_policy, check_policy_note (h->check_policy));
  printf ("ranks:     %u (world size %u) on %zu node%s\n", n_ranks (t, s), h->world_size, n_nodes,
          n_nodes == 1 ? "" : "s");
  printf ("ops:       %u distinct op %s, %" G_GUINT64_FORMAT " %s\n",
          g_hash_table_size (s->op_ids), sp_cli_plural (g_hash_table_size (s->op_ids), "id", "ids"),
          s->rows, sp_cli_plural (s->rows, "row", "rows"));
  if (s->rows > 0)
    {
      g_autofree char *span = sp_cli_time ((double) s->t_max - (double) s->t_min);
      printf ("span:      %s (first start to last end)\n", span);
    }
  if (sp_trace_plan_digest (t))
    printf ("plan:      sha256 %s\n", sp_trace_plan_digest (t));
  printf ("status:   ");
  for (guint i = 0; i < 256; i++)
    if (s->by_status[i])
      {
        const char *name = sp_trace_status_name ((SpTraceStatus) i);
        printf (" %s %" G_GUINT64_FORMAT, name ? name : "unknown", s->by_status[i]);
      }
  printf ("%s\n", s->rows ? "" : " no rows");

  printf ("\n%-26s %10s %16s %14s\n", "kind", "rows", "bytes", "total_ms");
  for (guint k = 0; k < 256; k++)
    if (s->by_kind[k].rows)
      printf ("%-26s %10" G_GUINT64_FORMAT " %16" G_GUINT64_FORMAT " %14.3f\n", kind_label (k),
              s->by_kind[k].rows, s->by_kind[k].bytes, (double) s->by_kind[k].total_ns / 1e6);
  g_autoptr (GPtrArray) order = family_order (t, s);
  printf ("\n%-26s %10s %16s %14s\n", "family", "rows", "bytes", "total_ms");
  for (guint i = 0; i < order->len; i++)
    {
      const Totals *ft = g_hash_table_lookup (s->by_family, order->pdata[i]);
      printf ("%-26s %10" G_GUINT64_FORMAT " %16" G_GUINT64_FORMAT " %14.3f\n",
              (const char *) order->pdata[i], ft->rows, ft->bytes, (double) ft->total_ns / 1e6);
    }
}

static void
add_totals (JsonBuilder *b, const char *key, const char *name, const Totals *tt)
{
  json_builder_begin_object (b);
  json_builder_set_member_name (b, key);
  json_builder_add_string_value (b, name);
  json_builder_set_member_name (b, "rows");
  json_builder_add_int_value (b, (gint64) tt->rows);
  json_builder_set_member_name (b, "bytes");
  if (tt->bytes <= (guint64) G_MAXINT64)
    json_builder_add_int_value (b, (gint64) tt->bytes);
  else /* past JSON's (json-glib's) 64-bit signed integers: a number, rounded */
    json_builder_add_double_value (b, (double) tt->bytes);
  json_builder_set_member_name (b, "total_ns");
  json_builder_add_int_value (b, tt->total_ns);
  json_builder_end_object (b);
}

/* A string member, null when `v` is NULL. */
static void
set_str (JsonBuilder *b, const char *key, const char *v)
{
  json_builder_set_member_name (b, key);
  if (v)
    json_builder_add_string_value (b, v);
  else
    json_builder_add_null_value (b);
}

#define SET_INT(b, k, v) (json_builder_set_member_name (b, k), json_builder_add_int_value (b, v))

static char *
summary_json (const char *path, const SpTrace *t, const Summary *s)
{
  const SpTraceHeader *h = sp_trace_header (t);
  guint major, minor;
  sp_trace_schema_version (t, &major, &minor);
  g_autofree char *version = g_strdup_printf ("%u.%u", major, minor);
  gsize n_nodes = 0;
  sp_trace_nodes (t, &n_nodes);
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  set_str (b, "file", path);
  set_str (b, "schema_version", version);
  json_builder_set_member_name (b, "complete");
  json_builder_add_boolean_value (b, sp_trace_is_complete (t));
  set_str (b, "incomplete_reason", sp_trace_incomplete_reason (t));
  set_str (b, "source", sp_trace_source_name (h->source));
  set_str (b, "producer", h->producer);
  set_str (b, "producer_version", h->producer_version);
  set_str (b, "created_utc", h->created_utc);
  set_str (b, "run_id", h->run_id);
  set_str (b, "timing_mode", h->timing_mode);
  set_str (b, "check_policy", h->check_policy);
  set_str (b, "clock", h->clock);
  SET_INT (b, "warmup_iters", h->warmup_iters);
  SET_INT (b, "iters", h->iters);
  SET_INT (b, "world_size", h->world_size);
  SET_INT (b, "ranks", n_ranks (t, s));
  SET_INT (b, "nodes", (gint64) n_nodes);
  SET_INT (b, "ops", g_hash_table_size (s->op_ids));
  SET_INT (b, "rows", (gint64) s->rows);
  set_str (b, "plan_digest", sp_trace_plan_digest (t));
  json_builder_set_member_name (b, "status");
  json_builder_begin_object (b);
  for (guint i = 0; i < 256; i++)
    if (s->by_status[i])
      {
        const char *name = sp_trace_status_name ((SpTraceStatus) i);
        SET_INT (b, name ? name : "unknown", (gint64) s->by_status[i]);
      }
  json_builder_end_object (b);
  json_builder_set_member_name (b, "by_kind");
  json_builder_begin_array (b);
  for (guint k = 0; k < 256; k++)
    if (s->by_kind[k].rows)
      add_totals (b, "kind", kind_label (k), &s->by_kind[k]);
  json_builder_end_array (b);
  json_builder_set_member_name (b, "by_family");
  json_builder_begin_array (b);
  g_autoptr (GPtrArray) order = family_order (t, s);
  for (guint i = 0; i < order->len; i++)
    add_totals (b, "family", order->pdata[i], g_hash_table_lookup (s->by_family, order->pdata[i]));
  json_builder_end_array (b);
  json_builder_end_object (b);
  return sp_cli_json_text (b, TRUE);
}

static int
trace_show (int argc, char **argv)
{
  const char *cmd = "trace show";
  g_autofree char *format_text = NULL;
  GOptionEntry entries[] = {
    { "format", 'f', 0, G_OPTION_ARG_STRING, &format_text, "output format: text (default) or json",
      "FORMAT" },
    { NULL },
  };
  int status = SP_EXIT_OK;
  if (!sp_cli_parse (cmd, "FILE", "Summarise a trace: source, ranks, ops, totals per kind and family.",
                     NULL, entries, &argc, &argv, &status))
    return status;
  SpFormat format;
  if (!sp_cli_format (cmd, format_text, (1u << SP_FORMAT_TEXT) | (1u << SP_FORMAT_JSON), &format))
    return SP_EXIT_USAGE;
  if (argc != 2)
    return sp_cli_fail (cmd, SP_EXIT_USAGE, "expected one trace file, got %d arguments "
                        "(see 'shardplan trace show --help')", argc - 1);
  g_autoptr (SpTrace) t = sp_trace_cmd_open (cmd, argv[1]);
  if (t == NULL)
    return SP_EXIT_USAGE;
  Summary s;
  g_autoptr (GError) error = NULL;
  if (!summarise (t, &s, &error))
    {
      summary_clear (&s);
      return sp_cli_fail (cmd, SP_EXIT_USAGE, "%s", error->message);
    }
  if (format == SP_FORMAT_JSON)
    {
      g_autofree char *json = summary_json (argv[1], t, &s);
      fputs (json, stdout);
    }
  else
    print_text (argv[1], t, &s);
  summary_clear (&s);
  if (!sp_cli_stdout_flushed ())
    return sp_cli_fail (cmd, SP_EXIT_FAILURE, "cannot write to standard output");
  return SP_EXIT_OK;
}

/* -------------------------------------------------------------- dispatch */

typedef struct {
  const char *name;
  const char *summary;
  int (*main) (int argc, char **argv);
} TraceCommand;

static const TraceCommand trace_commands[] = {
  { "show", "summary: source, producer, ranks, ops, totals per kind and family", trace_show },
  { "export", "rows (all, or --ranks/--iters/--ops) as CSV or Chrome/Perfetto JSON",
    sp_trace_cmd_export },
  { "import-nccl-tests", "an nccl-tests log as a measured trace", sp_cmd_trace_import_nccl_tests },
  { "import-chakra", "Chakra execution traces as a plan (= chakra import)", sp_chakra_cmd_import },
  { "recover", "a partial trace from the spill files of a failed run", sp_cmd_trace_recover },
};

static void
trace_usage (FILE *out)
{
  fprintf (out, "Usage: shardplan trace <show|export|import-nccl-tests|import-chakra|recover> FILE "
                "[options]\n\n"
                "Inspect and export shardplan HDF5 traces.\n\n");
  for (gsize i = 0; i < G_N_ELEMENTS (trace_commands); i++)
    fprintf (out, "  %-18s %s\n", trace_commands[i].name, trace_commands[i].summary);
  fprintf (out, "\n'shardplan trace <command> --help' describes each one.\n");
}

int
sp_cmd_trace (int argc, char **argv)
{
  if (argc < 2)
    {
      trace_usage (stderr);
      return SP_EXIT_USAGE;
    }
  if (strcmp (argv[1], "--help") == 0 || strcmp (argv[1], "-h") == 0)
    {
      trace_usage (stdout);
      return SP_EXIT_OK;
    }
  for (gsize i = 0; i < G_N_ELEMENTS (trace_commands); i++)
    if (strcmp (argv[1], trace_commands[i].name) == 0)
      {
        g_autofree char *prog = g_strdup_printf ("shardplan trace %s", argv[1]);
        g_set_prgname (prog);
        argv[1] = prog;
        return trace_commands[i].main (argc - 1, argv + 1);
      }
  const char *names[G_N_ELEMENTS (trace_commands)];
  for (gsize i = 0; i < G_N_ELEMENTS (trace_commands); i++)
    names[i] = trace_commands[i].name;
  g_autofree char *hint = sp_did_you_mean (argv[1], names, G_N_ELEMENTS (names));
  return sp_cli_fail ("trace", SP_EXIT_USAGE, "unknown command '%s'%s: expected show, export, "
                      "import-nccl-tests, import-chakra or recover",
                      argv[1], hint);
}
