/* The communicator groups of a Chakra import (tools/chakra/import-private.h).
 * Three shapes name the same thing, a pg_name's ranks:
 *   ASTRA-sim's group file: {"1": [0, 1, 2, 3], "2": [4, 5, 6, 7], …}, keys
 *     decimal integers > 0 (its rule; "" and "0" mean every rank);
 *   PyTorch's process groups as torch.distributed records them
 *     (_world.pg_config_info): [{"pg_name": "0", "pg_desc": "default_pg",
 *     "ranks": [], "group_size": 8, …}, {"pg_name": "1", "ranks": [0, 1, 2,
 *     3], …}, …], pg_name the process-group id (a decimal counter, or a hash
 *     for hashed names), "ranks": [] meaning every rank;
 *   a PyTorch execution-trace JSON ({"schema": …, "nodes": [...]}), whose
 *     "## process_group:init ##" node (written by ExecutionTraceObserver's
 *     _record_pg_config) holds that list, as a JSON string, in its inputs.
 * The file is read whole: at most SP_CHAKRA_PG_MAX_BYTES. */
#include "config.h"
#include "chakra/import-private.h"
#include "json-scan.h"

#include <json-glib/json-glib.h>
#include <string.h>
#include <glib/gstdio.h>

#define SP_CHAKRA_PG_MAX_BYTES (64u << 20)
#define PG_INIT_NODE "## process_group:init ##"

#define FAIL(...) \
  do { g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, __VA_ARGS__); goto fail; } while (0)

void
sp_chakra_pg_free (SpChakraPg *pg)
{
  if (pg == NULL)
    return;
  g_hash_table_destroy (pg->by_name);
  g_ptr_array_unref (pg->members);
  g_ptr_array_unref (pg->names);
  g_free (pg->path);
  g_free (pg);
}

static void
members_free (gpointer p)
{
  if (p)
    g_array_unref (p);
}

/* Ranks from a JSON array; NULL with *error on a non-rank element. */
static GArray *
ranks_of (const char *path, const char *name, JsonNode *val, GError **error)
{
  if (!JSON_NODE_HOLDS_ARRAY (val))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: group '%s': not a list of ranks",
                   path, name);
      return NULL;
    }
  JsonArray *arr = json_node_get_array (val);
  GArray *m = g_array_new (FALSE, FALSE, sizeof (guint32));
  g_autoptr (GHashTable) seen = g_hash_table_new (NULL, NULL);
  for (guint i = 0; i < json_array_get_length (arr); i++)
    {
      JsonNode *x = json_array_get_element (arr, i);
      if (!JSON_NODE_HOLDS_VALUE (x) || json_node_get_value_type (x) != G_TYPE_INT64
          || json_node_get_int (x) < 0 || json_node_get_int (x) >= G_MAXUINT32)
        {
          g_array_unref (m);
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                       "%s: group '%s': element %u is not a rank", path, name, i);
          return NULL;
        }
      guint32 r = (guint32) json_node_get_int (x);
      if (!g_hash_table_add (seen, GUINT_TO_POINTER (r + 1)))
        {
          g_array_unref (m);
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                       "%s: group '%s': rank %u twice", path, name, r);
          return NULL;
        }
      g_array_append_val (m, r);
    }
  return m;
}

static gboolean
add_group (SpChakraPg *pg, const char *name, GArray *members, GError **error)
{
  if (g_hash_table_contains (pg->by_name, name))
    {
      if (members)
        g_array_unref (members);
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: group '%s' twice", pg->path, name);
      return FALSE;
    }
  g_ptr_array_add (pg->names, g_strdup (name));
  g_ptr_array_add (pg->members, members);
  g_hash_table_insert (pg->by_name, pg->names->pdata[pg->names->len - 1],
                       GUINT_TO_POINTER (pg->names->len - 1));
  return TRUE;
}

/* ASTRA-sim's object of decimal keys. */
static gboolean
load_astra (SpChakraPg *pg, JsonObject *obj, GError **error)
{
  JsonObjectIter it;
  const char *key;
  JsonNode *val;
  json_object_iter_init (&it, obj);
  while (json_object_iter_next (&it, &key, &val))
    {
      char *end = NULL;
      guint64 k = g_ascii_strtoull (key, &end, 10);
      if (*key == '\0' || *end != '\0' || k == 0 || k > G_MAXUINT32 || key[0] == '0')
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: group key '%s' is not a "
                       "decimal integer > 0 (ASTRA-sim's rule)", pg->path, key);
          return FALSE;
        }
      GArray *m = ranks_of (pg->path, key, val, error);
      if (m == NULL || !add_group (pg, key, m, error))
        return FALSE;
    }
  return TRUE;
}

/* PyTorch's pg_config_info list. */
static gboolean
load_pytorch (SpChakraPg *pg, JsonArray *list, const char *where, GError **error)
{
  for (guint i = 0; i < json_array_get_length (list); i++)
    {
      JsonNode *e = json_array_get_element (list, i);
      JsonObject *o = JSON_NODE_HOLDS_OBJECT (e) ? json_node_get_object (e) : NULL;
      JsonNode *name = o ? json_object_get_member (o, "pg_name") : NULL;
      JsonNode *ranks = o ? json_object_get_member (o, "ranks") : NULL;
      if (name == NULL || !JSON_NODE_HOLDS_VALUE (name)
          || json_node_get_value_type (name) != G_TYPE_STRING || !*json_node_get_string (name))
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: %sprocess group %u: no "
                       "\"pg_name\" string (PyTorch's pg_config_info: {\"pg_name\", \"ranks\", …})",
                       pg->path, where, i);
          return FALSE;
        }
      const char *n = json_node_get_string (name);
      if (ranks == NULL)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: %sprocess group '%s': no "
                       "\"ranks\" list", pg->path, where, n);
          return FALSE;
        }
      GArray *m = ranks_of (pg->path, n, ranks, error);
      if (m == NULL)
        return FALSE;
      if (m->len == 0)
        {
          /* PyTorch: "an empty list when all ranks are involved in a pg" */
          g_array_unref (m);
          m = NULL;
        }
      if (!add_group (pg, n, m, error))
        return FALSE;
    }
  return TRUE;
}

/* A PyTorch execution trace: the list in "## process_group:init ##". */
static gboolean
load_pytorch_et (SpChakraPg *pg, JsonArray *nodes, GError **error)
{
  for (guint i = 0; i < json_array_get_length (nodes); i++)
    {
      JsonNode *e = json_array_get_element (nodes, i);
      JsonObject *o = JSON_NODE_HOLDS_OBJECT (e) ? json_node_get_object (e) : NULL;
      JsonNode *name = o ? json_object_get_member (o, "name") : NULL;
      if (name == NULL || !JSON_NODE_HOLDS_VALUE (name)
          || json_node_get_value_type (name) != G_TYPE_STRING
          || strcmp (json_node_get_string (name), PG_INIT_NODE) != 0)
        continue;
      /* schema 1.1: "inputs": {"values": [...]}; 1.0: "inputs": [...] */
      JsonNode *in = json_object_get_member (o, "inputs");
      JsonArray *vals = NULL;
      if (in && JSON_NODE_HOLDS_OBJECT (in)
          && json_object_has_member (json_node_get_object (in), "values")
          && JSON_NODE_HOLDS_ARRAY (json_object_get_member (json_node_get_object (in), "values")))
        vals = json_object_get_array_member (json_node_get_object (in), "values");
      else if (in && JSON_NODE_HOLDS_ARRAY (in))
        vals = json_node_get_array (in);
      for (guint k = 0; vals && k < json_array_get_length (vals); k++)
        {
          JsonNode *v = json_array_get_element (vals, k);
          if (!JSON_NODE_HOLDS_VALUE (v) || json_node_get_value_type (v) != G_TYPE_STRING)
            continue;
          const char *text = json_node_get_string (v);
          guint line = 0, col = 0;
          if (!sp_json_depth_within (text, strlen (text), SP_JSON_MAX_DEPTH, &line, &col))
            {
              g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: node '" PG_INIT_NODE
                           "': its input nests objects and arrays deeper than %d levels (at "
                           "%u:%u of the string)", pg->path, SP_JSON_MAX_DEPTH, line, col);
              return FALSE;
            }
          g_autoptr (JsonParser) p = json_parser_new ();
          GError *e2 = NULL;
          if (!json_parser_load_from_data (p, text, -1, &e2))
            {
              g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: node '" PG_INIT_NODE
                           "': its input is not JSON: %s", pg->path, e2->message);
              g_error_free (e2);
              return FALSE;
            }
          JsonNode *root = json_parser_get_root (p);
          if (root && JSON_NODE_HOLDS_ARRAY (root))
            return load_pytorch (pg, json_node_get_array (root), "node '" PG_INIT_NODE "': ",
                                 error);
        }
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: node '" PG_INIT_NODE "' has no "
                   "input holding the process-group list", pg->path);
      return FALSE;
    }
  g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: a PyTorch execution trace without "
               "a '" PG_INIT_NODE "' node (record it with torch.distributed initialised)",
               pg->path);
  return FALSE;
}

SpChakraPg *
sp_chakra_pg_load (const char *path, GError **error)
{
  SpChakraPg *pg = g_new0 (SpChakraPg, 1);
  pg->path = g_strdup (path);
  pg->by_name = g_hash_table_new (g_str_hash, g_str_equal);
  pg->members = g_ptr_array_new_with_free_func (members_free);
  pg->names = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (pg->members, NULL);   /* number 0: every rank */
  g_ptr_array_add (pg->names, g_strdup (""));
  g_autoptr (JsonParser) parser = json_parser_new ();
  GError *e = NULL;
  GStatBuf sb;
  g_autofree char *data = NULL;
  gsize len = 0;
  if (g_stat (path, &sb) == 0 && !S_ISREG (sb.st_mode))
    FAIL ("%s: not a regular file", path);
  if (g_stat (path, &sb) == 0 && sb.st_size > SP_CHAKRA_PG_MAX_BYTES)
    FAIL ("%s: %.0f MiB, more than the %u MiB a group file may have (from a larger PyTorch "
          "execution trace, save its '" PG_INIT_NODE "' list alone)", path,
          sb.st_size / 1048576.0, SP_CHAKRA_PG_MAX_BYTES >> 20);
  if (!g_file_get_contents (path, &data, &len, &e))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_IO, "%s", e->message);
      g_error_free (e);
      goto fail;
    }
  if (len > SP_CHAKRA_PG_MAX_BYTES)
    FAIL ("%s: more than the %u MiB a group file may have", path, SP_CHAKRA_PG_MAX_BYTES >> 20);
  /* json-glib's parser recurses once per level: bound the depth first */
  guint line = 0, col = 0;
  if (!sp_json_depth_within (data, len, SP_JSON_MAX_DEPTH, &line, &col))
    FAIL ("%s:%u:%u: objects and arrays nested deeper than %d levels (the limit)", path, line, col,
          SP_JSON_MAX_DEPTH);
  if (!json_parser_load_from_data (parser, data, (gssize) len, &e))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: not JSON: %s", path, e->message);
      g_error_free (e);
      goto fail;
    }
  JsonNode *root = json_parser_get_root (parser);
  gboolean ok;
  if (root && JSON_NODE_HOLDS_ARRAY (root))
    ok = load_pytorch (pg, json_node_get_array (root), "", error);
  else if (root && JSON_NODE_HOLDS_OBJECT (root)
           && json_object_has_member (json_node_get_object (root), "nodes")
           && JSON_NODE_HOLDS_ARRAY (json_object_get_member (json_node_get_object (root), "nodes")))
    ok = load_pytorch_et (pg, json_object_get_array_member (json_node_get_object (root), "nodes"),
                          error);
  else if (root && JSON_NODE_HOLDS_OBJECT (root))
    ok = load_astra (pg, json_node_get_object (root), error);
  else
    FAIL ("%s: not communicator groups (ASTRA-sim's {\"1\": [ranks], …}, PyTorch's "
          "[{\"pg_name\", \"ranks\"}, …] or a PyTorch execution trace)", path);
  if (!ok)
    goto fail;
  return pg;

fail:
  sp_chakra_pg_free (pg);
  return NULL;
}

gboolean
sp_chakra_pg_resolve (const SpChakraPg *pg, const char *name, guint32 *out_id)
{
  *out_id = 0;
  if (name == NULL || *name == '\0')
    return TRUE;
  gpointer v = NULL;
  if (pg == NULL || !g_hash_table_lookup_extended (pg->by_name, name, NULL, &v))
    return strcmp (name, "0") == 0;
  guint32 id = GPOINTER_TO_UINT (v);
  *out_id = g_ptr_array_index (pg->members, id) ? id : 0;
  return TRUE;
}

const GArray *
sp_chakra_pg_members (const SpChakraPg *pg, guint32 id)
{
  return pg && id < pg->members->len ? g_ptr_array_index (pg->members, id) : NULL;
}

const char *
sp_chakra_pg_name (const SpChakraPg *pg, guint32 id)
{
  return pg && id < pg->names->len ? g_ptr_array_index (pg->names, id) : "0";
}
