/* Plan JSON: a canonical writer and a validating reader (json-glib).
 *
 * The writer is our own printer rather than JsonGenerator so that the text
 * is canonical (fixed key order, meta keys sorted, integers printed exactly,
 * one op per line) — the trace records its SHA-256 — and linear in the
 * number of ops.  The reader uses json-glib's tree.  json-glib keeps
 * integers as gint64 and wraps larger literals to negative values, so every
 * integer above G_MAXINT64 reads as negative and is rejected; sp_plan_add_op()
 * refuses such values too, so any plan that can be built survives a round
 * trip exactly.
 */
#include "config.h"
#include "shardplan/plan.h"
#include "shardplan/error.h"

#include <json-glib/json-glib.h>
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
  append_u64_member (s, "flops", op->flops, TRUE);
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
  g_autoptr (GError) local = NULL;
  /* g_file_set_contents writes a temporary file and renames it into place */
  if (!g_file_set_contents (path, json, -1, &local))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_IO, "cannot write plan: %s", local->message);
      return FALSE;
    }
  return TRUE;
}

/* ---- reader -------------------------------------------------------------- */

/* What a JSON node is, for "… got <this>" in messages (g_free). */
static char *
describe_node (JsonNode *node)
{
  switch (json_node_get_node_type (node))
    {
    case JSON_NODE_OBJECT: return g_strdup ("an object");
    case JSON_NODE_ARRAY: return g_strdup ("an array");
    case JSON_NODE_NULL: return g_strdup ("null");
    case JSON_NODE_VALUE: break;
    }
  GType type = json_node_get_value_type (node);
  if (type == G_TYPE_INT64)
    return g_strdup_printf ("%" G_GINT64_FORMAT, json_node_get_int (node));
  if (type == G_TYPE_DOUBLE)
    return g_strdup_printf ("%.17g", json_node_get_double (node));
  if (type == G_TYPE_BOOLEAN)
    return g_strdup (json_node_get_boolean (node) ? "true" : "false");
  if (type == G_TYPE_STRING)
    return g_strdup_printf ("the string \"%s\"", json_node_get_string (node));
  return g_strdup ("an unknown value");
}

static gboolean
node_is (JsonNode *node, GType type)
{
  return JSON_NODE_HOLDS_VALUE (node) && json_node_get_value_type (node) == type;
}

/* `where` prefixes every message: "op 3 ('L0.fwd')", "plan", "groups". */
static gboolean
read_int (JsonObject *obj, const char *where, const char *key, gint64 min, gint64 max,
          gint64 *out_value, GError **error)
{
  JsonNode *node = json_object_get_member (obj, key);
  if (!node_is (node, G_TYPE_INT64))
    {
      g_autofree char *what = describe_node (node);
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN, "%s: '%s' must be %s integer, got %s",
                   where, key, min >= 0 ? "a non-negative" : "an", what);
      return FALSE;
    }
  gint64 v = json_node_get_int (node);
  if (v < min || v > max)
    {
      /* json-glib reads literals above G_MAXINT64 as negative numbers */
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN,
                   "%s: '%s' must be an integer in [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                   "], got %" G_GINT64_FORMAT "%s", where, key, min, max, v,
                   v < 0 && min >= 0 ? " (values above the maximum read as negative)" : "");
      return FALSE;
    }
  *out_value = v;
  return TRUE;
}

static gboolean
read_string (JsonObject *obj, const char *where, const char *key, const char **out_value,
             GError **error)
{
  JsonNode *node = json_object_get_member (obj, key);
  if (!node_is (node, G_TYPE_STRING))
    {
      g_autofree char *what = describe_node (node);
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN, "%s: '%s' must be a string, got %s",
                   where, key, what);
      return FALSE;
    }
  *out_value = json_node_get_string (node);
  return TRUE;
}

static gboolean
read_bool (JsonObject *obj, const char *where, const char *key, gboolean *out_value,
           GError **error)
{
  JsonNode *node = json_object_get_member (obj, key);
  if (!node_is (node, G_TYPE_BOOLEAN))
    {
      g_autofree char *what = describe_node (node);
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN, "%s: '%s' must be true or false, got %s",
                   where, key, what);
      return FALSE;
    }
  *out_value = json_node_get_boolean (node);
  return TRUE;
}

/* Reject keys outside `known` (NULL-terminated): a typo must not pass
 * silently as a default. */
static gboolean
check_keys (JsonObject *obj, const char *where, const char *const *known, GError **error)
{
  JsonObjectIter iter;
  const char *key;
  JsonNode *node;
  json_object_iter_init (&iter, obj);
  while (json_object_iter_next (&iter, &key, &node))
    if (!g_strv_contains (known, key))
      {
        g_autofree char *list = g_strjoinv (", ", (char **) known);
        g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN, "%s: unknown key '%s' (known: %s)",
                     where, key, list);
        return FALSE;
      }
  return TRUE;
}

static gboolean
require_keys (JsonObject *obj, const char *where, const char *const *required, GError **error)
{
  for (guint i = 0; required[i]; i++)
    if (!json_object_has_member (obj, required[i]))
      {
        g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN, "%s: missing key '%s'", where,
                     required[i]);
        return FALSE;
      }
  return TRUE;
}

static gboolean
read_u32 (JsonObject *obj, const char *where, const char *key, guint32 *inout, GError **error)
{
  gint64 v;
  if (!json_object_has_member (obj, key))
    return TRUE;
  if (!read_int (obj, where, key, 0, G_MAXUINT32, &v, error))
    return FALSE;
  *inout = (guint32) v;
  return TRUE;
}

static gboolean
read_opt_bool (JsonObject *obj, const char *where, const char *key, gboolean *inout, GError **error)
{
  if (!json_object_has_member (obj, key))
    return TRUE;
  return read_bool (obj, where, key, inout, error);
}

static gboolean
read_groups (JsonObject *obj, SpGroupsOptions *g, GError **error)
{
  static const char *const known[] = {
    "world_size", "devices_per_node", "shard_size", "hierarchical", "tensor_parallel",
    "pipeline_parallel", "expert_parallel", "data_before_expert", "zero_param_group_size",
    "local_all_to_all", NULL };
  const char *w = "plan groups";
  guint32 plan_world = g->world_size;
  if (!check_keys (obj, w, known, error)
      || !read_u32 (obj, w, "world_size", &g->world_size, error)
      || !read_u32 (obj, w, "devices_per_node", &g->devices_per_node, error)
      || !read_u32 (obj, w, "shard_size", &g->shard_size, error)
      || !read_opt_bool (obj, w, "hierarchical", &g->hierarchical, error)
      || !read_u32 (obj, w, "tensor_parallel", &g->tensor_parallel, error)
      || !read_u32 (obj, w, "pipeline_parallel", &g->pipeline_parallel, error)
      || !read_u32 (obj, w, "expert_parallel", &g->expert_parallel, error)
      || !read_opt_bool (obj, w, "data_before_expert", &g->data_before_expert, error)
      || !read_u32 (obj, w, "zero_param_group_size", &g->zero_param_group_size, error)
      || !read_opt_bool (obj, w, "local_all_to_all", &g->local_all_to_all, error))
    return FALSE;
  if (g->world_size != plan_world)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN,
                   "plan groups: world_size %u does not match the plan's world_size %u",
                   g->world_size, plan_world);
      return FALSE;
    }
  if (g->devices_per_node == 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN,
                   "plan groups: devices_per_node 0 is invalid: expected >= 1");
      return FALSE;
    }
  return TRUE;
}

/* Look a name up with `lookup`; on failure "op …: unknown <what> '<name>'". */
#define READ_ENUM(obj, where, key, what, lookup, out, hint)                                  \
  do {                                                                                   \
    const char *str_;                                                                    \
    if (!read_string (obj, where, key, &str_, error))                                    \
      return FALSE;                                                                      \
    if (!lookup (str_, out))                                                             \
      {                                                                                  \
        g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN, "%s: unknown %s '%s'%s",    \
                     where, what, str_, hint);                                          \
        return FALSE;                                                                    \
      }                                                                                  \
  } while (0)


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

static gboolean
read_op (SpPlan *plan, JsonNode *node, guint32 index, guint32 n_total, GArray *deps,
         GError **error)
{
  static const char *const known[] = {
    "id", "name", "layer", "phase", "kind", "family", "bytes", "count", "dtype", "redop",
    "algorithm", "stream", "deps", "parent", "flops", NULL };
  static const char *const required[] = { "id", "name", "kind", "family", "bytes", "dtype", NULL };

  g_autofree char *where = g_strdup_printf ("op %u", index);
  if (!JSON_NODE_HOLDS_OBJECT (node))
    {
      g_autofree char *what = describe_node (node);
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN, "%s: must be an object, got %s",
                   where, what);
      return FALSE;
    }
  JsonObject *obj = json_node_get_object (node);
  SpOp op = { .parent = -1, .layer = -1, .phase = SP_PHASE_NONE, .redop = SP_REDOP_NONE,
              .algorithm = SP_ALGO_AUTO };

  if (json_object_has_member (obj, "name"))
    {
      if (!read_string (obj, where, "name", &op.name, error))
        return FALSE;
      g_free (where);
      where = g_strdup_printf ("op %u ('%s')", index, op.name);
    }
  if (!check_keys (obj, where, known, error) || !require_keys (obj, where, required, error))
    return FALSE;

  gint64 v;
  if (!read_int (obj, where, "id", 0, G_MAXUINT32, &v, error))
    return FALSE;
  if (v != index)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN,
                   "%s: 'id' is %" G_GINT64_FORMAT ": ids must be 0, 1, 2 … in file order",
                   where, v);
      return FALSE;
    }
  READ_ENUM (obj, where, "kind", "kind", sp_coll_from_name, &op.kind, "");
  READ_ENUM (obj, where, "family", "family", family_from_name, &op.family, "");
  READ_ENUM (obj, where, "dtype", "dtype", sp_dtype_from_name, &op.dtype, "");
  if (json_object_has_member (obj, "phase"))
    READ_ENUM (obj, where, "phase", "phase", sp_phase_from_name, &op.phase,
               " (expected none, forward, backward or optimizer)");
  if (json_object_has_member (obj, "redop"))
    READ_ENUM (obj, where, "redop", "reduction", sp_redop_from_name, &op.redop,
               " (expected sum, prod, max, min, avg or none)");
  if (json_object_has_member (obj, "algorithm"))
    READ_ENUM (obj, where, "algorithm", "algorithm", sp_algo_from_name, &op.algorithm, "");

  if (!read_int (obj, where, "bytes", 0, G_MAXINT64, &v, error))
    return FALSE;
  op.bytes = (guint64) v;
  if (json_object_has_member (obj, "count"))
    {
      if (!read_int (obj, where, "count", 0, G_MAXINT64, &v, error))
        return FALSE;
      op.count = (guint64) v;
    }
  else
    {
      /* derived; a partial element is reported by sp_plan_add_op() */
      guint bits = sp_dtype_bits (op.dtype);
      op.count = bits ? (bits < 8 ? op.bytes * (8 / bits) : op.bytes / (bits / 8)) : 0;
    }
  if (json_object_has_member (obj, "layer"))
    {
      if (!read_int (obj, where, "layer", -1, G_MAXINT32, &v, error))
        return FALSE;
      op.layer = (gint32) v;
    }
  if (!read_u32 (obj, where, "stream", &op.stream, error))
    return FALSE;
  if (json_object_has_member (obj, "flops"))
    {
      if (!read_int (obj, where, "flops", 0, G_MAXINT64, &v, error))
        return FALSE;
      op.flops = (guint64) v;
    }
  if (json_object_has_member (obj, "parent"))
    {
      if (!read_int (obj, where, "parent", -1, G_MAXUINT32, &v, error))
        return FALSE;
      if (v >= (gint64) n_total)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN,
                       "%s: parent %" G_GINT64_FORMAT " names no op (the plan has %u ops)",
                       where, v, n_total);
          return FALSE;
        }
      op.parent = v;
    }

  g_array_set_size (deps, 0);
  if (json_object_has_member (obj, "deps"))
    {
      JsonNode *dn = json_object_get_member (obj, "deps");
      if (!JSON_NODE_HOLDS_ARRAY (dn))
        {
          g_autofree char *what = describe_node (dn);
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN,
                       "%s: 'deps' must be an array of op ids, got %s", where, what);
          return FALSE;
        }
      JsonArray *arr = json_node_get_array (dn);
      guint n = json_array_get_length (arr);
      for (guint i = 0; i < n; i++)
        {
          JsonNode *e = json_array_get_element (arr, i);
          if (!node_is (e, G_TYPE_INT64) || json_node_get_int (e) < 0
              || json_node_get_int (e) > G_MAXUINT32)
            {
              g_autofree char *what = describe_node (e);
              g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN,
                           "%s: 'deps' must hold op ids (integers >= 0), got %s", where, what);
              return FALSE;
            }
          guint32 d = (guint32) json_node_get_int (e);
          if (d >= n_total)
            {
              g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN,
                           "%s: dependency %u names no op (the plan has %u ops)", where, d,
                           n_total);
              return FALSE;
            }
          g_array_append_val (deps, d);
        }
      op.n_deps = deps->len;
      op.deps = (const guint32 *) (gpointer) deps->data;
    }
  return sp_plan_add_op (plan, &op, NULL, error);
}

static gboolean
read_meta (SpPlan *plan, JsonNode *node, GError **error)
{
  if (!JSON_NODE_HOLDS_OBJECT (node))
    {
      g_autofree char *what = describe_node (node);
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN, "plan: 'meta' must be an object, got %s",
                   what);
      return FALSE;
    }
  JsonObjectIter iter;
  const char *key;
  JsonNode *value;
  json_object_iter_init (&iter, json_node_get_object (node));
  while (json_object_iter_next (&iter, &key, &value))
    {
      if (!node_is (value, G_TYPE_STRING))
        {
          g_autofree char *what = describe_node (value);
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN,
                       "plan meta: '%s' must be a string, got %s", key, what);
          return FALSE;
        }
      sp_plan_set_meta (plan, key, json_node_get_string (value));
    }
  return TRUE;
}

SpPlan *
sp_plan_from_json (const char *json, gssize length, guint32 world_size, GError **error)
{
  static const char *const known[] = {
    "schema", "schema_version", "world_size", "groups", "meta", "ops", NULL };
  g_return_val_if_fail (json != NULL, NULL);

  g_autoptr (JsonParser) parser = json_parser_new_immutable ();
  g_autoptr (GError) local = NULL;
  if (!json_parser_load_from_data (parser, json, length, &local))
    {
      /* json-glib says "<data>:LINE:COL: Parse error: …" */
      const char *msg = local->message;
      if (g_str_has_prefix (msg, "<data>:"))
        g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN, "plan is not valid JSON at %s",
                     msg + strlen ("<data>:"));
      else
        g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN, "plan is not valid JSON: %s", msg);
      return NULL;
    }
  JsonNode *root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    {
      g_autofree char *what = root ? describe_node (root) : g_strdup ("nothing");
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN,
                   "not a shardplan plan: expected a JSON object, got %s", what);
      return NULL;
    }
  JsonObject *obj = json_node_get_object (root);

  const char *schema;
  if (!json_object_has_member (obj, "schema"))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN,
                   "not a shardplan plan: no 'schema' key (expected \"" PLAN_SCHEMA "\")");
      return NULL;
    }
  if (!read_string (obj, "plan", "schema", &schema, error))
    return NULL;
  if (strcmp (schema, PLAN_SCHEMA) != 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN,
                   "not a shardplan plan: schema is '%s', expected '" PLAN_SCHEMA "'", schema);
      return NULL;
    }
  gint64 version;
  if (!require_keys (obj, "plan", (const char *const[]) { "schema_version", NULL }, error)
      || !read_int (obj, "plan", "schema_version", 0, G_MAXINT64, &version, error))
    return NULL;
  if (version > SP_PLAN_SCHEMA_VERSION)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN,
                   "plan schema_version %" G_GINT64_FORMAT " is newer than this shardplan supports (%d)",
                   version, SP_PLAN_SCHEMA_VERSION);
      return NULL;
    }
  if (version < 1)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN,
                   "plan schema_version %" G_GINT64_FORMAT " is invalid (this shardplan reads %d)",
                   version, SP_PLAN_SCHEMA_VERSION);
      return NULL;
    }
  if (!check_keys (obj, "plan", known, error)
      || !require_keys (obj, "plan", (const char *const[]) { "world_size", "ops", NULL }, error))
    return NULL;

  gint64 w;
  if (!read_int (obj, "plan", "world_size", 1, G_MAXUINT32, &w, error))
    return NULL;
  if (world_size > 0 && (guint32) w != world_size)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN,
                   "plan world size %" G_GINT64_FORMAT " does not match the topology's %u ranks",
                   w, world_size);
      return NULL;
    }

  SpGroupsOptions groups;
  sp_groups_options_init (&groups);
  groups.world_size = (guint32) w;
  if (json_object_has_member (obj, "groups"))
    {
      JsonNode *gn = json_object_get_member (obj, "groups");
      if (!JSON_NODE_HOLDS_OBJECT (gn))
        {
          g_autofree char *what = describe_node (gn);
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN,
                       "plan: 'groups' must be an object, got %s", what);
          return NULL;
        }
      if (!read_groups (json_node_get_object (gn), &groups, error))
        return NULL;
    }

  g_autoptr (SpPlan) plan = sp_plan_new (&groups);
  if (json_object_has_member (obj, "meta")
      && !read_meta (plan, json_object_get_member (obj, "meta"), error))
    return NULL;

  JsonNode *ops = json_object_get_member (obj, "ops");
  if (!JSON_NODE_HOLDS_ARRAY (ops))
    {
      g_autofree char *what = describe_node (ops);
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN, "plan: 'ops' must be an array, got %s",
                   what);
      return NULL;
    }
  JsonArray *arr = json_node_get_array (ops);
  guint n = json_array_get_length (arr);
  g_autoptr (GArray) deps = g_array_new (FALSE, FALSE, sizeof (guint32));
  for (guint i = 0; i < n; i++)
    if (!read_op (plan, json_array_get_element (arr, i), i, n, deps, error))
      return NULL;
  return g_steal_pointer (&plan);
}

SpPlan *
sp_plan_load (const char *path, guint32 world_size, GError **error)
{
  g_return_val_if_fail (path != NULL, NULL);
  g_autofree char *text = NULL;
  gsize length = 0;
  g_autoptr (GError) local = NULL;
  if (!g_file_get_contents (path, &text, &length, &local))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_IO, "cannot read plan: %s", local->message);
      return NULL;
    }
  SpPlan *plan = sp_plan_from_json (text, (gssize) length, world_size, error);
  if (plan == NULL)
    g_prefix_error (error, "%s: ", path);
  return plan;
}
