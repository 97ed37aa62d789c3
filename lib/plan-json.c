/* Plan JSON: a canonical writer and a validating reader.
 *
 * The writer is our own printer so that the text is canonical (fixed key
 * order, meta keys sorted, integers printed exactly, one op per line) — the
 * trace records its SHA-256 — and linear in the number of ops.
 *
 * The reader walks the text with json-scan.c rather than building a
 * json-glib tree: for a 10^6-op plan (280 MB) json-glib took 22 s and
 * 3.5 GB and grew faster than linearly, and it reads integers as gint64
 * (wrapping larger literals), while byte counts are guint64.  The reader
 * first validates the whole document and notes where each top-level member
 * is, then reads them in a fixed order (schema and version first), so key
 * order in a hand-written file does not matter.
 */
#include "config.h"
#include "shardplan/plan.h"
#include "shardplan/error.h"
#include "shardplan/file.h"

#include "file-read.h"
#include "json-scan.h"
#include <string.h>

#define PLAN_SCHEMA "shardplan-plan"

/* ---- writer -------------------------------------------------------------- */

static void
append_u64 (GString *s, guint64 v)
{
  char buf[24];
  int i = sizeof buf;
  do
    {
      buf[--i] = (char) ('0' + v % 10);
      v /= 10;
    }
  while (v != 0);
  g_string_append_len (s, buf + i, (gssize) sizeof buf - i);
}

static void
append_i64 (GString *s, gint64 v)
{
  if (v < 0)
    {
      g_string_append_c (s, '-');
      append_u64 (s, (guint64) 0 - (guint64) v);
    }
  else
    append_u64 (s, (guint64) v);
}

/* A JSON string literal; the input is valid UTF-8 (checked on the way in). */
static void
append_str (GString *s, const char *str)
{
  g_string_append_c (s, '"');
  for (const char *p = str; *p; p++)
    {
      unsigned char c = (unsigned char) *p;
      switch (c)
        {
        case '"': g_string_append (s, "\\\""); break;
        case '\\': g_string_append (s, "\\\\"); break;
        case '\n': g_string_append (s, "\\n"); break;
        case '\t': g_string_append (s, "\\t"); break;
        case '\r': g_string_append (s, "\\r"); break;
        default:
          if (c < 0x20)
            g_string_append_printf (s, "\\u%04x", c);
          else
            g_string_append_c (s, (char) c);
        }
    }
  g_string_append_c (s, '"');
}

static void
append_key (GString *s, const char *key)
{
  append_str (s, key);
  g_string_append (s, ": ");
}

static void
append_u64_member (GString *s, const char *key, guint64 v, gboolean last)
{
  append_key (s, key);
  append_u64 (s, v);
  if (!last)
    g_string_append (s, ", ");
}

static void
append_bool_member (GString *s, const char *key, gboolean v)
{
  append_key (s, key);
  g_string_append (s, v ? "true, " : "false, ");
}

static void
append_str_member (GString *s, const char *key, const char *v)
{
  append_key (s, key);
  append_str (s, v);
  g_string_append (s, ", ");
}

static void
append_groups (GString *s, const SpGroupsOptions *g)
{
  g_string_append_c (s, '{');
  append_u64_member (s, "world_size", g->world_size, FALSE);
  append_u64_member (s, "devices_per_node", g->devices_per_node, FALSE);
  append_u64_member (s, "shard_size", g->shard_size, FALSE);
  append_bool_member (s, "hierarchical", g->hierarchical);
  append_u64_member (s, "tensor_parallel", g->tensor_parallel, FALSE);
  append_u64_member (s, "pipeline_parallel", g->pipeline_parallel, FALSE);
  append_u64_member (s, "expert_parallel", g->expert_parallel, FALSE);
  append_bool_member (s, "data_before_expert", g->data_before_expert);
  append_u64_member (s, "zero_param_group_size", g->zero_param_group_size, FALSE);
  append_key (s, "local_all_to_all");
  g_string_append (s, g->local_all_to_all ? "true}" : "false}");
}

static void
append_op (GString *s, const SpOp *op)
{
  g_string_append (s, "    {");
  append_u64_member (s, "id", op->id, FALSE);
  append_str_member (s, "name", op->name);
  append_key (s, "layer");
  append_i64 (s, op->layer);
  g_string_append (s, ", ");
  append_str_member (s, "phase", sp_phase_name (op->phase));
  append_str_member (s, "kind", sp_coll_name (op->kind));
  append_str_member (s, "family", op->family == SP_FAMILY_NONE ? "none" : sp_family_name (op->family));
  append_u64_member (s, "bytes", op->bytes, FALSE);
  append_u64_member (s, "count", op->count, FALSE);
  append_str_member (s, "dtype", sp_dtype_name (op->dtype));
  append_str_member (s, "redop", sp_redop_name (op->redop));
  append_str_member (s, "algorithm", sp_algo_name (op->algorithm));
  append_u64_member (s, "stream", op->stream, FALSE);
  append_key (s, "deps");
  g_string_append_c (s, '[');
  for (guint32 i = 0; i < op->n_deps; i++)
    {
      if (i)
        g_string_append (s, ", ");
      append_u64 (s, op->deps[i]);
    }
  g_string_append (s, "], ");
  append_key (s, "parent");
  append_i64 (s, op->parent);
  g_string_append (s, ", ");
  append_u64_member (s, "flops", op->flops, op->kind != SP_COLL_P2P);
  if (op->kind == SP_COLL_P2P)
    {
      append_u64_member (s, "src", op->src, FALSE);
      append_u64_member (s, "dst", op->dst, TRUE);
    }
  g_string_append_c (s, '}');
}

static int
compare_strings (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const char *const *) a, *(const char *const *) b);
}

char *
sp_plan_to_json (const SpPlan *plan)
{
  g_return_val_if_fail (plan != NULL, NULL);
  guint32 n = sp_plan_n_ops (plan);
  GString *s = g_string_sized_new (256 + (gsize) n * 280);

  g_string_append (s, "{\n  \"schema\": \"" PLAN_SCHEMA "\",\n  \"schema_version\": ");
  append_u64 (s, SP_PLAN_SCHEMA_VERSION);
  g_string_append (s, ",\n  \"world_size\": ");
  append_u64 (s, sp_plan_world_size (plan));
  g_string_append (s, ",\n  \"groups\": ");
  append_groups (s, sp_plan_groups_options (plan));

  g_string_append (s, ",\n  \"meta\": {");
  g_autofree const char **keys = sp_plan_meta_keys (plan);
  guint n_keys = g_strv_length ((char **) keys);
  qsort (keys, n_keys, sizeof *keys, compare_strings);
  for (guint i = 0; i < n_keys; i++)
    {
      if (i)
        g_string_append (s, ", ");
      append_key (s, keys[i]);
      append_str (s, sp_plan_get_meta (plan, keys[i]));
    }

  g_string_append (s, n ? "},\n  \"ops\": [\n" : "},\n  \"ops\": [");
  for (guint32 i = 0; i < n; i++)
    {
      append_op (s, sp_plan_op (plan, i));
      g_string_append (s, i + 1 < n ? ",\n" : "\n  ");
    }
  g_string_append (s, "]\n}\n");
  return g_string_free (s, FALSE);
}

char *
sp_plan_digest (const SpPlan *plan)
{
  g_return_val_if_fail (plan != NULL, NULL);
  g_autofree char *json = sp_plan_to_json (plan);
  return g_compute_checksum_for_string (G_CHECKSUM_SHA256, json, -1);
}

gboolean
sp_plan_save (const SpPlan *plan, const char *path, GError **error)
{
  g_return_val_if_fail (plan != NULL && path != NULL, FALSE);
  g_autofree char *json = sp_plan_to_json (plan);
  /* a temporary file renamed into place (shardplan/file.h) */
  if (!sp_file_write_atomic (path, json, strlen (json), error))
    {
      g_prefix_error (error, "cannot write plan: ");
      return FALSE;
    }
  return TRUE;
}

/* ---- reader -------------------------------------------------------------- */

/* Where an error is: "plan", "plan groups", "plan meta" or op `index`
 * (with its name once known).  Formatted only when an error happens. */
typedef struct {
  const char *what;     /* NULL for an op */
  guint32 index;
  const char *name;     /* NULL until the op's name is read */
} Where;

static char *
where_str (const Where *w)
{
  if (w->what)
    return g_strdup (w->what);
  if (w->name)
    return g_strdup_printf ("op %u ('%s')", w->index, w->name);
  return g_strdup_printf ("op %u", w->index);
}

G_GNUC_PRINTF (3, 4) static gboolean
plan_error (GError **error, const Where *w, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_autofree char *where = where_str (w);
  g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN, "%s: %s", where, msg);
  return FALSE;
}

static gboolean
want_u64 (const SpJsonValue *v, const Where *w, const char *key, guint64 min, guint64 max,
          guint64 *out_value, GError **error)
{
  gboolean neg = v->neg && v->magnitude != 0;
  if (v->kind != SP_JSON_INT || v->overflow || neg || v->magnitude < min || v->magnitude > max)
    {
      g_autofree char *what = sp_json_value_describe (v);
      if (v->kind != SP_JSON_INT)
        return plan_error (error, w, "'%s' must be a non-negative integer, got %s", key, what);
      return plan_error (error, w, "'%s' must be an integer in [%" G_GUINT64_FORMAT ", %"
                         G_GUINT64_FORMAT "], got %s", key, min, max, what);
    }
  *out_value = v->magnitude;
  return TRUE;
}

static gboolean
want_i64 (const SpJsonValue *v, const Where *w, const char *key, gint64 min, gint64 max,
          gint64 *out_value, GError **error)
{
  /* the range of every signed key here lies inside [-2^63+1, 2^63-1] */
  gboolean in = v->kind == SP_JSON_INT && !v->overflow && v->magnitude <= (guint64) G_MAXINT64;
  gint64 value = in ? (v->neg ? -(gint64) v->magnitude : (gint64) v->magnitude) : 0;
  if (!in || value < min || value > max)
    {
      g_autofree char *what = sp_json_value_describe (v);
      if (v->kind != SP_JSON_INT)
        return plan_error (error, w, "'%s' must be an integer, got %s", key, what);
      return plan_error (error, w, "'%s' must be an integer in [%" G_GINT64_FORMAT ", %"
                         G_GINT64_FORMAT "], got %s", key, min, max, what);
    }
  *out_value = value;
  return TRUE;
}

static gboolean
want_string (const SpJsonValue *v, const Where *w, const char *key, GError **error)
{
  if (v->kind == SP_JSON_STRING)
    return TRUE;
  g_autofree char *what = sp_json_value_describe (v);
  return plan_error (error, w, "'%s' must be a string, got %s", key, what);
}

static gboolean
want_bool (const SpJsonValue *v, const Where *w, const char *key, gboolean *out_value,
           GError **error)
{
  if (v->kind != SP_JSON_TRUE && v->kind != SP_JSON_FALSE)
    {
      g_autofree char *what = sp_json_value_describe (v);
      return plan_error (error, w, "'%s' must be true or false, got %s", key, what);
    }
  *out_value = v->kind == SP_JSON_TRUE;
  return TRUE;
}

static int
key_index (const char *const *known, const char *key)
{
  for (int i = 0; known[i]; i++)
    if (strcmp (known[i], key) == 0)
      return i;
  return -1;
}

#define MAX_KEYS 20

/* The members of the object at the scanner: value offsets of the known
 * keys (offsets[i] = G_MAXSIZE when absent).  The first unknown or repeated
 * key is reported in *out_bad_key (g_free) so the caller can name the op
 * first.  Leaves the scanner after the object. */
static gboolean
scan_members (SpJsonScan *s, const char *const *known, gsize *offsets, char **out_bad_key,
              gboolean *out_repeated, GError **error)
{
  for (int i = 0; known[i]; i++)
    offsets[i] = G_MAXSIZE;
  *out_bad_key = NULL;
  if (!sp_json_scan_object_begin (s, error))
    return FALSE;
  gboolean first = TRUE;
  int r;
  SpJsonValue v;
  while ((r = sp_json_scan_object_next (s, &first, error)) == 1)
    {
      int k = key_index (known, s->key->str);
      if (k < 0 || offsets[k] != G_MAXSIZE)
        {
          if (*out_bad_key == NULL)
            {
              *out_bad_key = g_strdup (s->key->str);
              *out_repeated = k >= 0;
            }
        }
      else
        offsets[k] = sp_json_scan_offset (s);
      if (!sp_json_scan_skip (s, &v, error))
        return FALSE;
    }
  return r == 0;
}

static gboolean
report_bad_key (const Where *w, const char *const *known, const char *key, gboolean repeated,
                GError **error)
{
  if (repeated)
    return plan_error (error, w, "key '%s' appears twice", key);
  g_autofree char *list = g_strjoinv (", ", (char **) known);
  return plan_error (error, w, "unknown key '%s' (known: %s)", key, list);
}

/* Read the value at `offset` (the scanner moves). */
static gboolean
value_at (SpJsonScan *s, gsize offset, SpJsonValue *v, GError **error)
{
  sp_json_scan_seek (s, offset);
  return sp_json_scan_value (s, v, error);
}

/* Check that the value at `offset` is an object (or array) and leave the
 * scanner at it, ready for _begin. */
static gboolean
container_at (SpJsonScan *s, gsize offset, SpJsonKind kind, const Where *w, const char *key,
              GError **error)
{
  SpJsonValue v;
  if (!value_at (s, offset, &v, error))
    return FALSE;
  if (v.kind != kind)
    {
      g_autofree char *what = sp_json_value_describe (&v);
      if (key)
        return plan_error (error, w, "'%s' must be %s, got %s", key,
                           kind == SP_JSON_OBJECT ? "an object" : "an array", what);
      return plan_error (error, w, "must be %s, got %s",
                         kind == SP_JSON_OBJECT ? "an object" : "an array", what);
    }
  sp_json_scan_seek (s, offset);
  return TRUE;
}

enum { G_WORLD, G_DEVICES, G_SHARD, G_HIER, G_TP, G_PP, G_EP, G_DBE, G_ZP, G_A2A, G_N };
static const char *const groups_keys[] = {
  "world_size", "devices_per_node", "shard_size", "hierarchical", "tensor_parallel",
  "pipeline_parallel", "expert_parallel", "data_before_expert", "zero_param_group_size",
  "local_all_to_all", NULL };

static gboolean
read_groups (SpJsonScan *s, gsize offset, SpGroupsOptions *g, GError **error)
{
  const Where w = { .what = "plan groups" };
  gsize off[MAX_KEYS];
  g_autofree char *bad = NULL;
  gboolean repeated = FALSE;
  if (!container_at (s, offset, SP_JSON_OBJECT, &(Where) { .what = "plan" }, "groups", error)
      || !scan_members (s, groups_keys, off, &bad, &repeated, error))
    return FALSE;
  if (bad)
    return report_bad_key (&w, groups_keys, bad, repeated, error);

  guint32 plan_world = g->world_size;
  guint32 *u32[G_N] = { [G_WORLD] = &g->world_size, [G_DEVICES] = &g->devices_per_node,
                        [G_SHARD] = &g->shard_size, [G_TP] = &g->tensor_parallel,
                        [G_PP] = &g->pipeline_parallel, [G_EP] = &g->expert_parallel,
                        [G_ZP] = &g->zero_param_group_size };
  gboolean *flag[G_N] = { [G_HIER] = &g->hierarchical, [G_DBE] = &g->data_before_expert,
                          [G_A2A] = &g->local_all_to_all };
  for (int k = 0; k < G_N; k++)
    {
      SpJsonValue v;
      guint64 x;
      if (off[k] == G_MAXSIZE)
        continue;
      if (!value_at (s, off[k], &v, error))
        return FALSE;
      if (u32[k])
        {
          if (!want_u64 (&v, &w, groups_keys[k], 0, G_MAXUINT32, &x, error))
            return FALSE;
          *u32[k] = (guint32) x;
        }
      else if (!want_bool (&v, &w, groups_keys[k], flag[k], error))
        return FALSE;
    }
  if (g->world_size != plan_world)
    return plan_error (error, &w, "world_size %u does not match the plan's world_size %u",
                       g->world_size, plan_world);
  if (g->devices_per_node == 0)
    return plan_error (error, &w, "devices_per_node 0 is invalid: expected >= 1");
  return TRUE;
}

static gboolean
read_meta (SpJsonScan *s, gsize offset, SpPlan *plan, GError **error)
{
  const Where w = { .what = "plan meta" };
  if (!container_at (s, offset, SP_JSON_OBJECT, &(Where) { .what = "plan" }, "meta", error)
      || !sp_json_scan_object_begin (s, error))
    return FALSE;
  gboolean first = TRUE;
  int r;
  while ((r = sp_json_scan_object_next (s, &first, error)) == 1)
    {
      SpJsonValue v;
      if (!sp_json_scan_value (s, &v, error))
        return FALSE;
      if (!want_string (&v, &w, s->key->str, error))
        return FALSE;
      sp_plan_set_meta (plan, s->key->str, v.str);
    }
  return r == 0;
}

enum { K_ID, K_NAME, K_LAYER, K_PHASE, K_KIND, K_FAMILY, K_BYTES, K_COUNT, K_DTYPE, K_REDOP,
       K_ALGO, K_STREAM, K_DEPS, K_PARENT, K_FLOPS, K_SRC, K_DST, K_N };
G_STATIC_ASSERT (K_N <= MAX_KEYS);
static const char *const op_keys[] = {
  "id", "name", "layer", "phase", "kind", "family", "bytes", "count", "dtype", "redop",
  "algorithm", "stream", "deps", "parent", "flops", "src", "dst", NULL };
static const int op_required[] = { K_ID, K_NAME, K_KIND, K_FAMILY, K_BYTES, K_DTYPE };

static gboolean
family_from_name (const char *name, SpFamily *out)
{
  if (g_ascii_strcasecmp (name, "none") == 0)
    {
      *out = SP_FAMILY_NONE;
      return TRUE;
    }
  return sp_family_from_name (name, out);
}

/* A string key naming an enum value: looks the name up with `lookup` and
 * reports "unknown <what> '<name>'<hint>". */
#define READ_ENUM(s, offset, w, key, what, lookup, out, hint)                        \
  do {                                                                               \
    SpJsonValue ev_;                                                                 \
    if (!value_at (s, offset, &ev_, error) || !want_string (&ev_, w, key, error))    \
      return FALSE;                                                                  \
    if (!lookup (ev_.str, out))                                                      \
      return plan_error (error, w, "unknown %s '%s'%s", what, ev_.str, hint);        \
  } while (0)

typedef struct {
  GString *name;   /* the op's name (the scanner's buffers are reused) */
  GArray *deps;    /* guint32 */
} OpScratch;

static gboolean
read_deps (SpJsonScan *s, gsize offset, const Where *w, guint32 n_total, GArray *deps,
           GError **error)
{
  g_array_set_size (deps, 0);
  if (!container_at (s, offset, SP_JSON_ARRAY, w, "deps", error)
      || !sp_json_scan_array_begin (s, error))
    return FALSE;
  gboolean first = TRUE;
  int r;
  while ((r = sp_json_scan_array_next (s, &first, error)) == 1)
    {
      SpJsonValue v;
      guint64 d;
      if (!sp_json_scan_value (s, &v, error))
        return FALSE;
      if (v.kind != SP_JSON_INT || v.overflow || (v.neg && v.magnitude) || v.magnitude > G_MAXUINT32)
        {
          g_autofree char *what = sp_json_value_describe (&v);
          return plan_error (error, w, "'deps' must hold op ids (integers >= 0), got %s", what);
        }
      d = v.magnitude;
      if (d >= n_total)
        return plan_error (error, w, "dependency %" G_GUINT64_FORMAT " names no op (the plan has %u ops)",
                           d, n_total);
      guint32 d32 = (guint32) d;
      g_array_append_val (deps, d32);
    }
  return r == 0;
}

static gboolean
read_op (SpJsonScan *s, SpPlan *plan, guint32 index, guint32 n_total, OpScratch *scratch,
         GError **error)
{
  Where w = { .index = index };
  gsize start = sp_json_scan_offset (s);
  gsize off[MAX_KEYS];
  g_autofree char *bad = NULL;
  gboolean repeated = FALSE;
  SpJsonValue v;

  /* the document is valid JSON (checked first): an object starts with '{' */
  if ((s->p >= s->end || *s->p != '{') && !container_at (s, start, SP_JSON_OBJECT, &w, NULL, error))
    return FALSE;
  if (!scan_members (s, op_keys, off, &bad, &repeated, error))
    return FALSE;
  gsize end = sp_json_scan_offset (s);

  if (off[K_NAME] != G_MAXSIZE)
    {
      if (!value_at (s, off[K_NAME], &v, error) || !want_string (&v, &w, "name", error))
        return FALSE;
      g_string_assign (scratch->name, v.str);
      w.name = scratch->name->str;
    }
  if (bad)
    return report_bad_key (&w, op_keys, bad, repeated, error);
  for (guint i = 0; i < G_N_ELEMENTS (op_required); i++)
    if (off[op_required[i]] == G_MAXSIZE)
      return plan_error (error, &w, "missing key '%s'", op_keys[op_required[i]]);

  SpOp op = { .parent = -1, .name = w.name, .layer = -1, .phase = SP_PHASE_NONE,
              .redop = SP_REDOP_NONE, .algorithm = SP_ALGO_AUTO };
  guint64 u;
  gint64 i64;
  if (!value_at (s, off[K_ID], &v, error) || !want_u64 (&v, &w, "id", 0, G_MAXUINT32, &u, error))
    return FALSE;
  if (u != index)
    return plan_error (error, &w, "'id' is %" G_GUINT64_FORMAT ": ids must be 0, 1, 2 … in file order",
                       u);
  READ_ENUM (s, off[K_KIND], &w, "kind", "kind", sp_coll_from_name, &op.kind, "");
  READ_ENUM (s, off[K_FAMILY], &w, "family", "family", family_from_name, &op.family, "");
  READ_ENUM (s, off[K_DTYPE], &w, "dtype", "dtype", sp_dtype_from_name, &op.dtype, "");
  if (off[K_PHASE] != G_MAXSIZE)
    READ_ENUM (s, off[K_PHASE], &w, "phase", "phase", sp_phase_from_name, &op.phase,
               " (expected none, forward, backward or optimizer)");
  if (off[K_REDOP] != G_MAXSIZE)
    READ_ENUM (s, off[K_REDOP], &w, "redop", "reduction", sp_redop_from_name, &op.redop,
               " (expected sum, prod, max, min, avg or none)");
  if (off[K_ALGO] != G_MAXSIZE)
    READ_ENUM (s, off[K_ALGO], &w, "algorithm", "algorithm", sp_algo_from_name, &op.algorithm,
               "");

  if (!value_at (s, off[K_BYTES], &v, error)
      || !want_u64 (&v, &w, "bytes", 0, G_MAXUINT64, &op.bytes, error))
    return FALSE;
  if (off[K_COUNT] != G_MAXSIZE)
    {
      if (!value_at (s, off[K_COUNT], &v, error)
          || !want_u64 (&v, &w, "count", 0, G_MAXUINT64, &op.count, error))
        return FALSE;
    }
  else
    {
      /* derived; a partial element or an overflow is reported by sp_plan_add_op() */
      guint bits = sp_dtype_bits (op.dtype);
      op.count = bits == 0 ? 0 : bits < 8 ? op.bytes * (8 / bits) : op.bytes / (bits / 8);
    }
  if (off[K_LAYER] != G_MAXSIZE)
    {
      if (!value_at (s, off[K_LAYER], &v, error)
          || !want_i64 (&v, &w, "layer", -1, G_MAXINT32, &i64, error))
        return FALSE;
      op.layer = (gint32) i64;
    }
  if (off[K_STREAM] != G_MAXSIZE)
    {
      if (!value_at (s, off[K_STREAM], &v, error)
          || !want_u64 (&v, &w, "stream", 0, G_MAXUINT32, &u, error))
        return FALSE;
      op.stream = (guint32) u;
    }
  if (off[K_FLOPS] != G_MAXSIZE
      && (!value_at (s, off[K_FLOPS], &v, error)
          || !want_u64 (&v, &w, "flops", 0, G_MAXUINT64, &op.flops, error)))
    return FALSE;
  if (op.kind == SP_COLL_P2P && (off[K_SRC] == G_MAXSIZE || off[K_DST] == G_MAXSIZE))
    return plan_error (error, &w, "missing key '%s': a p2p op names its sender and receiver",
                       off[K_SRC] == G_MAXSIZE ? "src" : "dst");
  if (op.kind != SP_COLL_P2P && (off[K_SRC] != G_MAXSIZE || off[K_DST] != G_MAXSIZE))
    return plan_error (error, &w, "key '%s' on kind %s: only p2p ops have a sender and a receiver",
                       off[K_SRC] != G_MAXSIZE ? "src" : "dst", sp_coll_name (op.kind));
  if (off[K_SRC] != G_MAXSIZE)
    {
      if (!value_at (s, off[K_SRC], &v, error)
          || !want_u64 (&v, &w, "src", 0, G_MAXUINT32, &u, error))
        return FALSE;
      op.src = (guint32) u;
      if (!value_at (s, off[K_DST], &v, error)
          || !want_u64 (&v, &w, "dst", 0, G_MAXUINT32, &u, error))
        return FALSE;
      op.dst = (guint32) u;
    }
  if (off[K_PARENT] != G_MAXSIZE)
    {
      if (!value_at (s, off[K_PARENT], &v, error)
          || !want_i64 (&v, &w, "parent", -1, G_MAXUINT32, &op.parent, error))
        return FALSE;
      if (op.parent >= (gint64) n_total)
        return plan_error (error, &w, "parent %" G_GINT64_FORMAT " names no op (the plan has %u ops)",
                           op.parent, n_total);
    }
  if (off[K_DEPS] != G_MAXSIZE)
    {
      if (!read_deps (s, off[K_DEPS], &w, n_total, scratch->deps, error))
        return FALSE;
      op.n_deps = scratch->deps->len;
      op.deps = (const guint32 *) (gpointer) scratch->deps->data;
    }
  sp_json_scan_seek (s, end);
  return sp_plan_add_op (plan, &op, NULL, error);
}

enum { T_SCHEMA, T_VERSION, T_WORLD, T_GROUPS, T_META, T_OPS, T_N };
static const char *const top_keys[] = {
  "schema", "schema_version", "world_size", "groups", "meta", "ops", NULL };

static SpPlan *
read_plan (SpJsonScan *s, guint32 world_size, GError **error)
{
  const Where w = { .what = "plan" };
  SpJsonValue v;
  gsize off[MAX_KEYS];
  g_autofree char *bad = NULL;
  gboolean repeated = FALSE;

  /* pass 1: the whole document is valid JSON, and where each member is */
  if (!sp_json_scan_value (s, &v, error) || !sp_json_scan_end (s, error))
    return NULL;
  if (v.kind != SP_JSON_OBJECT)
    {
      g_autofree char *what = sp_json_value_describe (&v);
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN,
                   "not a shardplan plan: expected a JSON object, got %s", what);
      return NULL;
    }
  sp_json_scan_seek (s, 0);
  if (!scan_members (s, top_keys, off, &bad, &repeated, error))
    return NULL;

  /* pass 2, in a fixed order: what the file is comes first */
  if (off[T_SCHEMA] == G_MAXSIZE)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN,
                   "not a shardplan plan: no 'schema' key (expected \"" PLAN_SCHEMA "\")");
      return NULL;
    }
  if (!value_at (s, off[T_SCHEMA], &v, error) || !want_string (&v, &w, "schema", error))
    return NULL;
  if (strcmp (v.str, PLAN_SCHEMA) != 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN,
                   "not a shardplan plan: schema is '%s', expected '" PLAN_SCHEMA "'", v.str);
      return NULL;
    }
  guint64 version;
  if (off[T_VERSION] == G_MAXSIZE)
    {
      plan_error (error, &w, "missing key 'schema_version'");
      return NULL;
    }
  if (!value_at (s, off[T_VERSION], &v, error)
      || !want_u64 (&v, &w, "schema_version", 0, G_MAXUINT64, &version, error))
    return NULL;
  if (version > SP_PLAN_SCHEMA_VERSION)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN,
                   "plan schema_version %" G_GUINT64_FORMAT " is newer than this shardplan supports (%d)",
                   version, SP_PLAN_SCHEMA_VERSION);
      return NULL;
    }
  if (version < 1)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN,
                   "plan schema_version %" G_GUINT64_FORMAT " is invalid (this shardplan reads %d)",
                   version, SP_PLAN_SCHEMA_VERSION);
      return NULL;
    }
  if (bad)
    {
      report_bad_key (&w, top_keys, bad, repeated, error);
      return NULL;
    }
  if (off[T_WORLD] == G_MAXSIZE || off[T_OPS] == G_MAXSIZE)
    {
      plan_error (error, &w, "missing key '%s'", off[T_WORLD] == G_MAXSIZE ? "world_size" : "ops");
      return NULL;
    }
  guint64 world;
  if (!value_at (s, off[T_WORLD], &v, error)
      || !want_u64 (&v, &w, "world_size", 1, G_MAXUINT32, &world, error))
    return NULL;
  if (world_size > 0 && world != world_size)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN,
                   "plan world size %" G_GUINT64_FORMAT " does not match the topology's %u ranks",
                   world, world_size);
      return NULL;
    }

  SpGroupsOptions groups;
  sp_groups_options_init (&groups);
  groups.world_size = (guint32) world;
  if (off[T_GROUPS] != G_MAXSIZE && !read_groups (s, off[T_GROUPS], &groups, error))
    return NULL;
  g_autoptr (SpPlan) plan = sp_plan_new (&groups);
  if (off[T_META] != G_MAXSIZE && !read_meta (s, off[T_META], plan, error))
    return NULL;

  if (!value_at (s, off[T_OPS], &v, error))
    return NULL;
  if (v.kind != SP_JSON_ARRAY)
    {
      g_autofree char *what = sp_json_value_describe (&v);
      plan_error (error, &w, "'ops' must be an array, got %s", what);
      return NULL;
    }
  if (v.n_elements > G_MAXUINT32)
    {
      plan_error (error, &w, "%" G_GSIZE_FORMAT " ops: a plan holds at most %u", v.n_elements,
                  G_MAXUINT32);
      return NULL;
    }
  guint32 n_total = (guint32) v.n_elements;
  sp_json_scan_seek (s, off[T_OPS]);
  if (!sp_json_scan_array_begin (s, error))
    return NULL;
  OpScratch scratch = { g_string_new (NULL), g_array_new (FALSE, FALSE, sizeof (guint32)) };
  gboolean first = TRUE, ok = TRUE;
  int r = 0;
  for (guint32 i = 0; ok && (r = sp_json_scan_array_next (s, &first, error)) == 1; i++)
    ok = read_op (s, plan, i, n_total, &scratch, error);
  g_string_free (scratch.name, TRUE);
  g_array_unref (scratch.deps);
  if (!ok || r < 0)
    return NULL;
  return g_steal_pointer (&plan);
}

SpPlan *
sp_plan_from_json (const char *json, gssize length, guint32 world_size, GError **error)
{
  g_return_val_if_fail (json != NULL, NULL);
  SpJsonScan scan;
  sp_json_scan_init (&scan, json, length < 0 ? strlen (json) : (gsize) length);
  SpPlan *plan = read_plan (&scan, world_size, error);
  sp_json_scan_clear (&scan);
  return plan;
}

SpPlan *
sp_plan_load (const char *path, guint32 world_size, GError **error)
{
  g_return_val_if_fail (path != NULL, NULL);
  g_autofree char *text = NULL;
  gsize length = 0;
  if (!sp_file_read_bounded (path, SP_PLAN_MAX_FILE_BYTES, "plan", &text, &length, error))
    return NULL;
  SpPlan *plan = sp_plan_from_json (text, (gssize) length, world_size, error);
  if (plan == NULL)
    g_prefix_error (error, "%s: ", path);
  return plan;
}
