/* nccl-tests log parser.  The data rows are read through the column header
 * (names → positions) rather than by a fixed layout, because the layout
 * changed several times (root column added, "error" replaced by "#wrong",
 * "N/A" when validation is off, in-place optional, -I 1 extra columns). */
#include "config.h"
#include "nccltests-private.h"
#include "file-read.h"

#include <glib/gstdio.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Files larger than this are not logs (the largest real logs with
 * NCCL_DEBUG=INFO on a few thousand ranks are a few MB). */
#define NCCL_TESTS_MAX_FILE ((gsize) 64 << 20)
/* Bounds on what a log may declare, so that a corrupt or hostile one is
 * refused before it costs memory or time (the trace gets one row per rank
 * and point): the largest published nccl-tests runs have tens of thousands
 * of ranks and a few hundred points (sizes × placements). */
#define NCCL_TESTS_MAX_RANKS (1u << 20)
#define NCCL_TESTS_MAX_POINTS (1u << 20)
#define NCCL_TESTS_MAX_TRACE_ROWS (G_GUINT64_CONSTANT (1) << 26)
/* µs: 1000 s per iteration is no collective's time; it also keeps the
 * trace's nanosecond sums (points × time) far from gint64's range. */
#define NCCL_TESTS_MAX_TIME_US 1e9
/* Printed algbw/busbw that differ from the recomputed ones by more than
 * this fraction are reported (the task's 1 %), unless the difference is
 * below the printing resolution of "%6.2f" (0.005) plus a margin. */
#define BW_REL_TOL 0.01
#define BW_ABS_TOL 0.006
/* Bandwidth warnings listed one by one before the rest is only counted. */
#define BW_WARN_MAX 3

static const struct {
  const char *binary;
  SpColl coll;
} binaries[] = {
  /* longest first, so that "all_reduce_perf" is not read as "reduce_perf" */
  { "reduce_scatter_perf", SP_COLL_REDUCE_SCATTER },
  { "all_reduce_perf", SP_COLL_ALL_REDUCE },
  { "all_gather_perf", SP_COLL_ALL_GATHER },
  { "broadcast_perf", SP_COLL_BROADCAST },
  { "sendrecv_perf", SP_COLL_SEND },
  { "alltoall_perf", SP_COLL_ALL_TO_ALL },
  { "reduce_perf", SP_COLL_REDUCE },
};
/* nccl-tests binaries that have no counterpart in a plan. */
static const char *const unsupported_binaries[] = { "hypercube_perf", "gather_perf",
                                                    "scatter_perf", NULL };

typedef struct {
  SpNcclTestsLog *log;
  const char *name;          /* source name for messages */
  /* layout */
  char **cols;               /* column names of the header (NULL: none yet) */
  guint n_cols;
  guint header_line;
  int col_size, col_count, col_type, col_redop, col_root;
  guint n_groups;            /* placement groups: time algbw busbw wrong */
  int g_time[4], g_algbw[4], g_busbw[4], g_wrong[4], g_error[4];
  gboolean place_in[4];      /* placement of group g (from the placement line) */
  guint n_places;
  /* collective */
  const char *binary;
  guint binary_line;
  /* truncation */
  guint short_row_line;      /* a row with too few columns (0: none) */
  guint short_row_cols;
  gboolean footer;
  guint last_row_line;
  const char *nccl_library;  /* "22105" of the version line: NCCL 2.21.5 */
  /* what was seen, for the duplicate checks (linear in the log's size) */
  GHashTable *ranks_seen;    /* rank numbers (GUINT_TO_POINTER) */
  GHashTable *env_seen;      /* NCCL_x keys (in log->strings) */
} Parser;

G_GNUC_PRINTF (4, 5) static gboolean
fail (Parser *p, GError **error, guint line, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  if (line > 0)
    g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT, "%s:%u: %s", p->name, line, msg);
  else
    g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT, "%s: %s", p->name, msg);
  return FALSE;
}

G_GNUC_PRINTF (2, 3) static void
warn (SpNcclTestsLog *log, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_ptr_array_insert (log->warnings, log->warnings->len - 1, msg);
}

/* Whitespace-separated tokens (g_strfreev). */
static char **
tokens (const char *text, guint *out_n)
{
  GPtrArray *a = g_ptr_array_new ();
  const char *s = text;
  while (*s)
    {
      while (*s && g_ascii_isspace (*s))
        s++;
      if (!*s)
        break;
      const char *e = s;
      while (*e && !g_ascii_isspace (*e))
        e++;
      g_ptr_array_add (a, g_strndup (s, e - s));
      s = e;
    }
  *out_n = a->len;
  g_ptr_array_add (a, NULL);
  return (char **) g_ptr_array_free (a, FALSE);
}

static gboolean
all_digits (const char *s)
{
  if (!*s)
    return FALSE;
  for (; *s; s++)
    if (!g_ascii_isdigit (*s))
      return FALSE;
  return TRUE;
}

static gboolean
is_ident_char (char c)
{
  return g_ascii_isalnum (c) || c == '_';
}

/* The *_perf binary a line names as a whole word, or NULL.  Sets
 * *out_unsupported for binaries that have no plan counterpart. */
static const char *
find_binary (const char *line, SpColl *out_coll, gboolean *out_unsupported)
{
  *out_unsupported = FALSE;
  for (gsize i = 0; i < G_N_ELEMENTS (binaries); i++)
    for (const char *s = strstr (line, binaries[i].binary); s;
         s = strstr (s + 1, binaries[i].binary))
      {
        gsize n = strlen (binaries[i].binary);
        if ((s == line || !is_ident_char (s[-1])) && !is_ident_char (s[n]))
          {
            *out_coll = binaries[i].coll;
            return binaries[i].binary;
          }
      }
  for (gsize i = 0; unsupported_binaries[i]; i++)
    for (const char *s = strstr (line, unsupported_binaries[i]); s;
         s = strstr (s + 1, unsupported_binaries[i]))
      {
        gsize n = strlen (unsupported_binaries[i]);
        if ((s == line || !is_ident_char (s[-1])) && !is_ident_char (s[n]))
          {
            *out_unsupported = TRUE;
            return unsupported_binaries[i];
          }
      }
  return NULL;
}

static gboolean
note_binary (Parser *p, const char *line, guint lineno, GError **error)
{
  SpColl coll = SP_COLL_ALL_REDUCE;
  gboolean unsupported = FALSE;
  const char *b = find_binary (line, &coll, &unsupported);
  if (b == NULL)
    return TRUE;
  if (unsupported)
    return fail (p, error, lineno,
                 "%s logs are not supported (supported: all_reduce_perf, all_gather_perf, "
                 "reduce_scatter_perf, alltoall_perf, broadcast_perf, reduce_perf, "
                 "sendrecv_perf)", b);
  if (p->binary != NULL && strcmp (p->binary, b) != 0)
    return fail (p, error, lineno,
                 "the log holds two collectives (%s at line %u, %s here): split it into "
                 "one log per binary", p->binary, p->binary_line, b);
  if (p->binary == NULL)
    {
      p->binary = b;
      p->binary_line = lineno;
      p->log->coll = coll;
      p->log->binary = b;
    }
  return TRUE;
}

static guint32
param_u32 (char **tok, guint i, guint n)
{
  if (i >= n)
    return 0;
  guint64 v = g_ascii_strtoull (tok[i], NULL, 10);
  return v > G_MAXUINT32 ? G_MAXUINT32 : (guint32) v;
}

/* "# nThread 1 nGpus 8 minBytes 8 maxBytes … warmup iters: 5 iters: 20 agg iters: 1
 *  validation: 1 graph: 0" */
static void
parse_params (Parser *p, char **tok, guint n)
{
  SpNcclTestsParams *pr = &p->log->params;
  for (guint i = 0; i < n; i++)
    {
      const char *t = tok[i];
      if (strcmp (t, "nThread") == 0)
        pr->n_threads = param_u32 (tok, i + 1, n);
      else if (strcmp (t, "nGpus") == 0)
        pr->n_gpus = param_u32 (tok, i + 1, n);
      else if (strcmp (t, "iters:") == 0)
        {
          guint32 v = param_u32 (tok, i + 1, n);
          if (i > 0 && strcmp (tok[i - 1], "warmup") == 0)
            pr->warmup_iters = v;
          else if (i > 0 && strcmp (tok[i - 1], "agg") == 0)
            pr->agg_iters = v;
          else
            pr->iters = v;
        }
      else if (strcmp (t, "validation:") == 0 && i + 1 < n)
        pr->validation = (gint32) param_u32 (tok, i + 1, n);
      else if (strcmp (t, "graph:") == 0 && i + 1 < n)
        pr->graph = (gint32) param_u32 (tok, i + 1, n);
    }
}

/* "#  Rank  0 Group  0 Pid 1234 on host device  0 [0x18] NVIDIA H100 80GB HBM3" */
static gboolean
parse_rank (Parser *p, const char *line, char **tok, guint n, guint lineno, GError **error)
{
  if (n < 2 || !all_digits (tok[1]))
    return fail (p, error, lineno, "'Rank' line without a rank number");
  SpNcclTestsRank r = { .rank = param_u32 (tok, 1, n), .hostname = "", .device = -1,
                        .gpu_model = "" };
  for (guint i = 2; i + 1 < n; i++)
    {
      if (strcmp (tok[i], "on") == 0)
        r.hostname = g_string_chunk_insert_const (p->log->strings, tok[i + 1]);
      else if (strcmp (tok[i], "device") == 0 && all_digits (tok[i + 1]))
        r.device = (gint32) MIN (param_u32 (tok, i + 1, n), (guint32) G_MAXINT32);
    }
  const char *bus = strchr (line, '[');
  const char *close = bus ? strchr (bus, ']') : NULL;
  if (close)
    {
      g_autofree char *model = g_strstrip (g_strdup (close + 1));
      r.gpu_model = g_string_chunk_insert_const (p->log->strings, model);
    }
  if (g_hash_table_contains (p->ranks_seen, GUINT_TO_POINTER (r.rank)))
    return fail (p, error, lineno,
                 "rank %u is listed twice: one log must hold one run", r.rank);
  if (p->log->ranks->len >= NCCL_TESTS_MAX_RANKS)
    return fail (p, error, lineno, "more than %u 'Rank' lines (the importer's limit)",
                 NCCL_TESTS_MAX_RANKS);
  g_hash_table_add (p->ranks_seen, GUINT_TO_POINTER (r.rank));
  g_array_append_val (p->log->ranks, r);
  return TRUE;
}

/* "#       size         count      type   redop    root     time   algbw   busbw #wrong …" */
static gboolean
parse_header (Parser *p, char **tok, guint n, guint lineno, GError **error)
{
  g_strfreev (p->cols);
  p->cols = g_strdupv (tok);
  p->n_cols = n;
  p->header_line = lineno;
  p->col_size = p->col_count = p->col_type = p->col_redop = p->col_root = -1;
  p->n_groups = 0;
  for (guint i = 0; i < n; i++)
    {
      const char *c = tok[i];
      if (strcmp (c, "time") == 0)
        {
          if (p->n_groups == G_N_ELEMENTS (p->g_time))
            return fail (p, error, lineno, "more than %u 'time' columns in the header",
                         (guint) G_N_ELEMENTS (p->g_time));
          guint g = p->n_groups++;
          p->g_time[g] = (int) i;
          p->g_algbw[g] = p->g_busbw[g] = p->g_wrong[g] = p->g_error[g] = -1;
          continue;
        }
      if (p->n_groups == 0)
        {
          if (strcmp (c, "size") == 0)
            p->col_size = (int) i;
          else if (strcmp (c, "count") == 0)
            p->col_count = (int) i;
          else if (strcmp (c, "type") == 0)
            p->col_type = (int) i;
          else if (strcmp (c, "redop") == 0)
            p->col_redop = (int) i;
          else if (strcmp (c, "root") == 0)
            p->col_root = (int) i;
          continue;
        }
      guint g = p->n_groups - 1;
      if (strcmp (c, "algbw") == 0)
        p->g_algbw[g] = (int) i;
      else if (strcmp (c, "busbw") == 0)
        p->g_busbw[g] = (int) i;
      else if (strcmp (c, "#wrong") == 0 || strcmp (c, "wrong") == 0)
        p->g_wrong[g] = (int) i;
      else if (strcmp (c, "error") == 0)
        p->g_error[g] = (int) i;
      /* anything else (i_min, i_max, … of -I 1) is not needed */
    }
  if (p->n_places > 0 && p->n_places != p->n_groups)
    return fail (p, error, lineno,
                 "the header has %u groups of time/algbw/busbw columns but the line above "
                 "names %u placements (out-of-place, in-place)", p->n_groups, p->n_places);
  if (p->col_size < 0 || p->col_count < 0 || p->col_type < 0 || p->n_groups == 0)
    return fail (p, error, lineno,
                 "column header lacks %s: expected at least size, count, type and time",
                 p->col_size < 0 ? "'size'" : p->col_count < 0 ? "'count'"
                 : p->col_type < 0 ? "'type'" : "'time'");
  return TRUE;
}

static gboolean
parse_u64 (Parser *p, const char *what, const char *text, guint lineno, guint64 *out,
           GError **error)
{
  if (!all_digits (text))
    return fail (p, error, lineno, "%s '%s' is not an unsigned integer", what, text);
  errno = 0;
  guint64 v = g_ascii_strtoull (text, NULL, 10);
  if (errno == ERANGE)
    return fail (p, error, lineno, "%s '%s' is too large", what, text);
  *out = v;
  return TRUE;
}

static gboolean
parse_double (Parser *p, const char *what, const char *text, guint lineno, double *out,
              GError **error)
{
  char *end = NULL;
  double v = g_ascii_strtod (text, &end);
  if (end == text || *end != '\0' || isnan (v) || v < 0)
    return fail (p, error, lineno, "%s '%s' is not a number >= 0", what, text);
  *out = v;
  return TRUE;
}

static gboolean
parse_dtype (const char *name, SpDtype *out)
{
  /* nccl-tests' own names for the fp8 types (test_typenames) */
  if (strcmp (name, "f8e4m3") == 0)
    name = "fp8_e4m3";
  else if (strcmp (name, "f8e5m2") == 0)
    name = "fp8_e5m2";
  SpDtype d;
  if (!sp_dtype_from_name (name, &d) || d == SP_DTYPE_NONE || d == SP_DTYPE_INT4)
    return FALSE;
  *out = d;
  return TRUE;
}

static gboolean
coll_reduces (SpColl c)
{
  return c == SP_COLL_ALL_REDUCE || c == SP_COLL_REDUCE || c == SP_COLL_REDUCE_SCATTER;
}

static gboolean
parse_row (Parser *p, char **tok, guint lineno, GError **error)
{
  SpNcclTestsResult base = { .line = lineno, .root = -1, .redop = SP_REDOP_NONE };
  if (!parse_u64 (p, "size", tok[p->col_size], lineno, &base.bytes, error)
      || !parse_u64 (p, "count", tok[p->col_count], lineno, &base.count, error))
    return FALSE;
  if (!parse_dtype (tok[p->col_type], &base.dtype))
    return fail (p, error, lineno,
                 "type '%s' is not an nccl-tests type (int8, uint8, int32, uint32, int64, "
                 "uint64, half, float, double, bfloat16, f8e4m3, f8e5m2)", tok[p->col_type]);
  if (p->col_redop >= 0)
    {
      const char *r = tok[p->col_redop];
      SpRedop op;
      if (!sp_redop_from_name (r, &op))
        return fail (p, error, lineno,
                     "reduction '%s' is not supported (expected sum, prod, max, min, avg or none)",
                     r);
      base.redop = op;
    }
  if (p->col_root >= 0)
    {
      const char *t = tok[p->col_root];
      char *end = NULL;
      gint64 v = g_ascii_strtoll (t, &end, 10);
      if (end == t || *end != '\0' || v < -1 || v > G_MAXINT32)
        return fail (p, error, lineno, "root '%s' is not -1 or a rank", t);
      base.root = (gint32) v;
    }
  for (guint g = 0; g < p->n_groups; g++)
    {
      SpNcclTestsResult r = base;
      /* without a placement line: nccl-tests' order, out-of-place then in-place */
      r.in_place = p->n_places > 0 ? p->place_in[g] : g == 1;
      r.algbw_gbs = r.busbw_gbs = NAN;
      r.wrong = -1;
      if (!parse_double (p, "time", tok[p->g_time[g]], lineno, &r.time_us, error))
        return FALSE;
      if (!(r.time_us <= NCCL_TESTS_MAX_TIME_US))
        return fail (p, error, lineno, "time '%s' us is more than %.0f us: not an nccl-tests "
                     "timing", tok[p->g_time[g]], NCCL_TESTS_MAX_TIME_US);
      if (p->log->results->len >= NCCL_TESTS_MAX_POINTS)
        return fail (p, error, lineno, "more than %u timed points (the importer's limit)",
                     NCCL_TESTS_MAX_POINTS);
      /* algbw/busbw are only compared with the recomputed ones; "inf" (a zero
       * time) or junk there skips the comparison rather than the row */
      if (p->g_algbw[g] >= 0)
        r.algbw_gbs = g_ascii_strtod (tok[p->g_algbw[g]], NULL);
      if (p->g_busbw[g] >= 0)
        r.busbw_gbs = g_ascii_strtod (tok[p->g_busbw[g]], NULL);
      if (p->g_wrong[g] >= 0 && strcmp (tok[p->g_wrong[g]], "N/A") != 0)
        {
          /* printed with %g: large counts read "1.2e+06" */
          double w;
          if (!parse_double (p, "#wrong", tok[p->g_wrong[g]], lineno, &w, error))
            return FALSE;
          r.wrong = (gint64) MIN (w, 9e18);
        }
      g_array_append_val (p->log->results, r);
    }
  return TRUE;
}

/* One line of the log. */
static gboolean
parse_line (Parser *p, const char *line, guint lineno, GError **error)
{
  guint n = 0;
  g_auto (GStrv) tok = NULL;
  if (line[0] == '#')
    {
      const char *body = line;
      while (*body == '#')
        body++;
      tok = tokens (body, &n);
      if (n == 0)
        return TRUE;
      if (strcmp (tok[0], "Rank") == 0)
        return parse_rank (p, line, tok, n, lineno, error);
      if (strcmp (tok[0], "nThread") == 0)
        {
          parse_params (p, tok, n);
          return TRUE;
        }
      if (strcmp (tok[0], "size") == 0)
        return parse_header (p, tok, n, lineno, error);
      if (strcmp (tok[0], "out-of-place") == 0 || strcmp (tok[0], "in-place") == 0)
        {
          p->n_places = 0;
          for (guint i = 0; i < n && p->n_places < G_N_ELEMENTS (p->place_in); i++)
            p->place_in[p->n_places++] = strcmp (tok[i], "in-place") == 0;
          return TRUE;
        }
      if (strcmp (tok[0], "Avg") == 0 && n > 1 && strcmp (tok[1], "bus") == 0)
        {
          p->footer = TRUE;
          return TRUE;
        }
      if (strcmp (tok[0], "nccl-tests") == 0 && n > 2 && strcmp (tok[1], "version") == 0)
        {
          p->log->version = g_string_chunk_insert_const (p->log->strings, tok[2]);
          for (guint i = 3; i < n; i++)
            if (g_str_has_prefix (tok[i], "nccl-library="))
              p->nccl_library = g_string_chunk_insert_const (p->log->strings,
                                                             tok[i] + strlen ("nccl-library="));
          return TRUE;
        }
      return note_binary (p, line, lineno, error);
    }

  tok = tokens (line, &n);
  if (n == 0)
    return TRUE;
  if (p->cols != NULL && all_digits (tok[0]))
    {
      if (n < p->n_cols)
        {
          if (p->short_row_line == 0)
            {
              p->short_row_line = lineno;
              p->short_row_cols = n;
            }
          return TRUE;
        }
      if (p->short_row_line != 0)
        return fail (p, error, p->short_row_line,
                     "row cut short (%u of the header's %u columns) before more rows",
                     p->short_row_cols, p->n_cols);
      if (n > p->n_cols)
        return fail (p, error, lineno, "row has %u columns, the header at line %u has %u", n,
                     p->header_line, p->n_cols);
      p->last_row_line = lineno;
      return parse_row (p, tok, lineno, error);
    }

  /* Not a row: failures, NCCL's INFO lines, command lines. */
  if (strstr (line, "Test ") && strstr (line, "failure") && p->log->incomplete_reason == NULL)
    {
      g_autofree char *what = g_strstrip (g_strdup (line));
      p->log->incomplete_reason = g_strdup_printf ("line %u: %s", lineno, what);
    }
  const char *v = strstr (line, "NCCL version ");
  if (v && p->log->nccl_version == NULL)
    {
      guint vn = 0;
      g_auto (GStrv) vt = tokens (v + strlen ("NCCL version "), &vn);
      if (vn > 0)
        p->log->nccl_version = g_string_chunk_insert_const (p->log->strings, vt[0]);
    }
  const char *e = strstr (line, "NCCL INFO NCCL_");
  const char *set = e ? strstr (e, " set by environment to ") : NULL;
  if (set)
    {
      g_autofree char *key = g_strndup (e + strlen ("NCCL INFO "),
                                        set - e - strlen ("NCCL INFO "));
      g_autofree char *value = g_strstrip (g_strdup (set + strlen (" set by environment to ")));
      if (!strchr (key, ' ') && !g_hash_table_contains (p->env_seen, key))
        {
          char *k = g_string_chunk_insert_const (p->log->strings, key);
          g_hash_table_add (p->env_seen, k);
          g_ptr_array_insert (p->log->env, p->log->env->len - 1, k);
          g_ptr_array_insert (p->log->env, p->log->env->len - 1,
                              g_string_chunk_insert_const (p->log->strings, value));
        }
    }
  return note_binary (p, line, lineno, error);
}

static gint
rank_cmp (gconstpointer a, gconstpointer b)
{
  guint32 x = ((const SpNcclTestsRank *) a)->rank, y = ((const SpNcclTestsRank *) b)->rank;
  return x < y ? -1 : x > y;
}

/* size / (count × element size) when that is a whole rank count within
 * the importer's limit, else 0.  Every product is checked: the numbers are
 * the file's. */
static guint32
ranks_from_size (const SpNcclTestsResult *r)
{
  guint64 per_rank = 0;
  if (r->count == 0
      || !g_uint64_checked_mul (&per_rank, r->count, sp_nccl_tests_elem_bytes (r->dtype))
      || r->bytes % per_rank != 0)
    return 0;
  guint64 n = r->bytes / per_rank;
  return n >= 1 && n <= NCCL_TESTS_MAX_RANKS ? (guint32) n : 0;
}

static gboolean
settle_ranks (Parser *p, GError **error)
{
  SpNcclTestsLog *log = p->log;
  const SpNcclTestsResult *first = &g_array_index (log->results, SpNcclTestsResult, 0);
  if (log->ranks->len > 0)
    {
      g_array_sort (log->ranks, rank_cmp);
      for (guint i = 0; i < log->ranks->len; i++)
        if (g_array_index (log->ranks, SpNcclTestsRank, i).rank != i)
          return fail (p, error, 0, "the 'Rank' lines list %u ranks but not rank %u",
                       log->ranks->len, i);
      log->n_ranks = log->ranks->len;
      return TRUE;
    }
  guint32 from_size = sp_nccl_tests_size_has_ranks (log->coll) ? ranks_from_size (first) : 0;
  if (from_size > 0)
    {
      log->n_ranks = from_size;
      warn (log, "no '#  Rank' lines: %u ranks from size / (count x element size) at line %u",
            log->n_ranks, first->line);
      return TRUE;
    }
  guint64 n = (guint64) log->params.n_threads * log->params.n_gpus;
  if (n >= 1 && n <= NCCL_TESTS_MAX_RANKS)
    {
      log->n_ranks = (guint32) n;
      warn (log, "no '#  Rank' lines: assuming nThread x nGpus = %u ranks (one process; an MPI "
                 "run has more)", log->n_ranks);
      return TRUE;
    }
  if (n > NCCL_TESTS_MAX_RANKS)
    return fail (p, error, 0, "nThread x nGpus = %" G_GUINT64_FORMAT " ranks is more than the "
                              "importer's limit of %u", n, NCCL_TESTS_MAX_RANKS);
  if (sp_nccl_tests_size_has_ranks (log->coll))
    return fail (p, error, first->line,
                 "cannot tell the rank count: no '#  Rank' lines, no '# nThread … nGpus' "
                 "header, and size %" G_GUINT64_FORMAT " is not count %" G_GUINT64_FORMAT
                 " x %" G_GUINT64_FORMAT " B x a rank count from 1 to %u", first->bytes,
                 first->count, sp_nccl_tests_elem_bytes (first->dtype), NCCL_TESTS_MAX_RANKS);
  return fail (p, error, 0, "cannot tell the rank count: no '#  Rank' lines and no "
                            "'# nThread … nGpus' header");
}

static gboolean
check_rows (Parser *p, GError **error)
{
  SpNcclTestsLog *log = p->log;
  guint32 n = log->n_ranks;
  guint n_bad_bw = 0;
  for (guint i = 0; i < log->results->len; i++)
    {
      SpNcclTestsResult *r = &g_array_index (log->results, SpNcclTestsResult, i);
      guint64 ws = sp_nccl_tests_elem_bytes (r->dtype);
      guint64 mult = sp_nccl_tests_size_has_ranks (log->coll) ? n : 1;
      guint64 per_rank = 0, expected = 0;
      if (!g_uint64_checked_mul (&per_rank, r->count, ws)
          || !g_uint64_checked_mul (&expected, per_rank, mult) || expected != r->bytes)
        {
          g_autofree char *ranks = mult > 1 ? g_strdup_printf (" x %u ranks", n) : g_strdup ("");
          return fail (p, error, r->line,
                       "size %" G_GUINT64_FORMAT " is not count %" G_GUINT64_FORMAT " x %"
                       G_GUINT64_FORMAT " B%s: the rank count or the columns are not what this "
                       "log used (NCCL_TESTS_SPLIT runs are not supported)",
                       r->bytes, r->count, ws, ranks);
        }
      if (!coll_reduces (log->coll))
        r->redop = SP_REDOP_NONE; /* old logs print the -o option for every binary */
      else if (r->redop == SP_REDOP_NONE)
        {
          if (p->col_redop >= 0)
            return fail (p, error, r->line, "%s needs a reduction, the row says 'none'",
                         log->binary);
          r->redop = SP_REDOP_SUM; /* nccl-tests' default -o sum */
        }
      if (log->coll == SP_COLL_BROADCAST || log->coll == SP_COLL_REDUCE)
        {
          if (r->root < 0)
            r->root = 0; /* nccl-tests' default -r 0 (old logs have no root column) */
          else if ((guint32) r->root >= n)
            return fail (p, error, r->line, "root %d is not a rank of %u", r->root, n);
        }
      else
        r->root = -1;

      double algbw = 0, busbw = 0;
      gint64 dur_ns = llround (r->time_us * 1000.0);
      sp_coll_bandwidths (log->coll, r->bytes, n, (guint64) dur_ns, &algbw, &busbw);
      const char *which = NULL;
      double printed = 0, ours = 0;
      if (isfinite (r->algbw_gbs) && fabs (algbw - r->algbw_gbs) > BW_ABS_TOL
          && fabs (algbw - r->algbw_gbs) > BW_REL_TOL * fabs (r->algbw_gbs))
        which = "algbw", printed = r->algbw_gbs, ours = algbw;
      else if (isfinite (r->busbw_gbs) && fabs (busbw - r->busbw_gbs) > BW_ABS_TOL
               && fabs (busbw - r->busbw_gbs) > BW_REL_TOL * fabs (r->busbw_gbs))
        which = "busbw", printed = r->busbw_gbs, ours = busbw;
      if (which != NULL && dur_ns > 0 && n_bad_bw++ < BW_WARN_MAX)
        warn (log, "%s:%u: printed %s %.2f GB/s differs by more than 1 %% from %.2f "
                   "recomputed for %u ranks", p->name, r->line, which, printed, ours, n);
    }
  if (n_bad_bw > BW_WARN_MAX)
    warn (log, "%s: %u more rows whose printed bandwidth differs by more than 1 %%", p->name,
          n_bad_bw - BW_WARN_MAX);
  return TRUE;
}

/* The length of the prefix a launcher put before a line of the program's
 * output, or 0: Open MPI's `mpirun --tag-output` ("[1,0]<stdout>:", Open
 * MPI 5 with a space after it), MPICH's and Intel MPI's `-prepend-rank`
 * ("[0] ") and Slurm's `srun --label` ("0: ", the task id maybe padded).
 * No line of nccl-tests or NCCL starts like these (NCCL's INFO lines start
 * "host:pid:tid", with no space after a colon), so they are taken off
 * wherever they are, except "123: Test …": nccl-tests' own failure line
 * after an all-digit host name. */
static gsize
launcher_prefix_len (const char *line)
{
  const char *c = line;
  if (*c == '[')
    {
      c++;
      const char *digits = c;
      while (g_ascii_isdigit (*c))
        c++;
      if (c == digits)
        return 0;
      if (*c == ']' && c[1] == ' ')
        return (gsize) (c + 2 - line);                        /* [0] */
      if (*c++ != ',')
        return 0;
      digits = c;
      while (g_ascii_isdigit (*c))
        c++;
      if (c == digits || *c++ != ']')
        return 0;
      if (g_str_has_prefix (c, "<stdout>:") || g_str_has_prefix (c, "<stderr>:"))
        return (gsize) (c + strlen ("<stdout>:") + (c[9] == ' ') - line); /* [1,0]<stdout>: */
      return 0;
    }
  while (*c == ' ')
    c++;
  const char *digits = c;
  while (g_ascii_isdigit (*c))
    c++;
  /* not before "Test ": nccl-tests' failure lines start with the host's
   * name ("node7: Test NCCL failure …"), which may be all digits; a label
   * comes before that name */
  if (c > digits && c[0] == ':' && c[1] == ' ' && !g_str_has_prefix (c + 2, "Test "))
    return (gsize) (c + 2 - line);                            /* 0: */
  return 0;
}

SpNcclTestsLog *
sp_nccl_tests_parse (const char *text, gssize length, const char *source_name, GError **error)
{
  g_return_val_if_fail (text != NULL, NULL);
  if (length < 0)
    length = (gssize) strlen (text);
  g_autoptr (SpNcclTestsLog) log = g_new0 (SpNcclTestsLog, 1);
  log->source_name = g_strdup (source_name ? source_name : "<log>");
  log->results = g_array_new (FALSE, FALSE, sizeof (SpNcclTestsResult));
  log->ranks = g_array_new (FALSE, FALSE, sizeof (SpNcclTestsRank));
  log->env = g_ptr_array_new ();
  g_ptr_array_add (log->env, NULL);
  log->warnings = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (log->warnings, NULL);
  log->strings = g_string_chunk_new (1024);
  log->params.validation = log->params.graph = -1;

  Parser p = { .log = log, .name = log->source_name };
  if (memchr (text, '\0', (gsize) length) != NULL)
    {
      fail (&p, error, 0, "binary data: not an nccl-tests log");
      return NULL;
    }
  p.ranks_seen = g_hash_table_new (g_direct_hash, g_direct_equal);
  p.env_seen = g_hash_table_new (g_str_hash, g_str_equal);
  /* Lines are cut in place in one copy (no array of lines: a log of
   * 64 M newlines must not cost 64 M allocations). */
  /* Bytes that are not UTF-8 (a hostname, a GPU name) become U+FFFD: the
   * trace declares its strings UTF-8, and JSON output must stay valid. */
  g_autofree char *copy = g_utf8_validate_len (text, (gsize) length, NULL)
                              ? g_strndup (text, (gsize) length)
                              : g_utf8_make_valid (text, (gssize) length);
  gboolean ok = TRUE;
  char *line = copy;
  for (guint lineno = 1; ok && line != NULL; lineno++)
    {
      char *nl = strchr (line, '\n');
      if (nl)
        *nl = '\0';
      gsize len = nl ? (gsize) (nl - line) : strlen (line);
      if (len > 0 && line[len - 1] == '\r')
        line[len - 1] = '\0';
      ok = parse_line (&p, line + launcher_prefix_len (line), lineno, error);
      line = nl ? nl + 1 : NULL;
    }
  g_strfreev (p.cols);
  g_hash_table_destroy (p.ranks_seen);
  g_hash_table_destroy (p.env_seen);
  if (!ok)
    return NULL;
  if (p.header_line == 0)
    {
      fail (&p, error, 0, "no nccl-tests column header ('#  size  count  type …'): not an "
                          "nccl-tests log");
      return NULL;
    }
  if (log->binary == NULL)
    {
      fail (&p, error, 0,
            "cannot tell the collective: no '# Collective test starting:' line and no "
            "*_perf binary name in the log");
      return NULL;
    }
  if (p.short_row_line != 0)
    {
      warn (log, "%s:%u: last row cut short (%u of %u columns): dropped", p.name,
            p.short_row_line, p.short_row_cols, p.n_cols);
      if (log->incomplete_reason == NULL)
        log->incomplete_reason = g_strdup_printf ("log truncated at line %u", p.short_row_line);
    }
  if (log->results->len == 0)
    {
      fail (&p, error, 0, "no data rows after the column header at line %u", p.header_line);
      return NULL;
    }
  if (!p.footer && log->incomplete_reason == NULL)
    log->incomplete_reason = g_strdup_printf ("no '# Avg bus bandwidth' footer after line %u",
                                              p.last_row_line);
  log->complete = log->incomplete_reason == NULL;
  if (log->nccl_version == NULL)
    log->nccl_version = p.nccl_library; /* "NCCL version" lines are more precise */
  if (!settle_ranks (&p, error))
    return NULL;
  if ((guint64) log->results->len * log->n_ranks > NCCL_TESTS_MAX_TRACE_ROWS)
    {
      fail (&p, error, 0, "%u points x %u ranks = %" G_GUINT64_FORMAT " trace rows is more than "
            "the importer's limit of %" G_GUINT64_FORMAT, log->results->len, log->n_ranks,
            (guint64) log->results->len * log->n_ranks, NCCL_TESTS_MAX_TRACE_ROWS);
      return NULL;
    }
  if (!check_rows (&p, error))
    return NULL;
  return g_steal_pointer (&log);
}

SpNcclTestsLog *
sp_nccl_tests_load (const char *path, GError **error)
{
  g_return_val_if_fail (path != NULL, NULL);
  if (g_file_test (path, G_FILE_TEST_IS_DIR))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_IO, "%s: is a directory, not a log", path);
      return NULL;
    }
  g_autofree char *text = NULL;
  gsize len = 0;
  if (!sp_file_read_bounded (path, NCCL_TESTS_MAX_FILE, "nccl-tests log", &text, &len, error))
    return NULL;
  return sp_nccl_tests_parse (text, (gssize) len, path, error);
}
