/* bench/fidelity-data.c — reading the fidelity benchmark's data files
 * (fidelity-data.h).  Every member is type-checked before json-glib is
 * asked for it (its getters warn on a wrong type), the nesting depth is
 * bounded before its recursive parser sees the text, and every string
 * that goes into a generated INI is refused unless it is one plain value. */
#include "config.h"
#include "fidelity-data.h"
#include "json-scan.h" /* lib/: the depth and strictness checks before json-glib */

#include <math.h>
#include <string.h>

void
sp_fid_row_free (gpointer p)
{
  SpFidRow *r = p;
  g_free (r->set);
  g_free (r->dataset);
  g_free (r->coll);
  g_free (r->transport);
  for (guint m = 0; m < SP_FID_MODELS_MAX; m++)
    g_free (r->choice[m]);
  g_free (r);
}

static gboolean
coll_of (const char *name, SpColl *out)
{
  static const struct { const char *json; SpColl coll; } map[] = {
    { "allreduce", SP_COLL_ALL_REDUCE },   { "allgather", SP_COLL_ALL_GATHER },
    { "reducescatter", SP_COLL_REDUCE_SCATTER }, { "alltoall", SP_COLL_ALL_TO_ALL },
    { "broadcast", SP_COLL_BROADCAST },
  };
  for (guint i = 0; i < G_N_ELEMENTS (map); i++)
    if (g_strcmp0 (name, map[i].json) == 0)
      {
        *out = map[i].coll;
        return TRUE;
      }
  return FALSE;
}

/* The member `name` of `o` when it is a scalar of GType `type`, else NULL
 * (absent, null, an object, an array or another type). */
static JsonNode *
member_of_type (JsonObject *o, const char *name, GType type)
{
  JsonNode *n = json_object_get_member (o, name);
  if (n == NULL || !JSON_NODE_HOLDS_VALUE (n) || json_node_get_value_type (n) != type)
    return NULL;
  return n;
}

static const char *
member_string (JsonObject *o, const char *name)
{
  JsonNode *n = member_of_type (o, name, G_TYPE_STRING);
  return n ? json_node_get_string (n) : NULL;
}

/* An integer or a finite number: TRUE with *out, FALSE when absent or of
 * another type. */
static gboolean
member_number (JsonObject *o, const char *name, double *out)
{
  JsonNode *n;
  if ((n = member_of_type (o, name, G_TYPE_INT64)) != NULL)
    *out = (double) json_node_get_int (n);
  else if ((n = member_of_type (o, name, G_TYPE_DOUBLE)) != NULL)
    *out = json_node_get_double (n);
  else
    return FALSE;
  return isfinite (*out);
}

/* A whole number in [lo, hi], written as an integer or as a number with
 * no fraction (2.0, 2e0): TRUE with *out; FALSE when absent, of another
 * type, fractional or out of range. */
static gboolean
member_whole (JsonObject *o, const char *name, double lo, double hi, double *out)
{
  double v;
  if (!member_number (o, name, &v) || v != floor (v) || v < lo || v > hi)
    return FALSE;
  *out = v;
  return TRUE;
}

/* A string that can stand as one INI value (and a name in messages):
 * 1-200 printable ASCII characters, none of the INI's own ('#', ';', '[',
 * ']', '=', '\\'), no space at either end. */
static gboolean
ini_value_ok (const char *s)
{
  gsize n = strlen (s);
  if (n == 0 || n > 200 || s[0] == ' ' || s[n - 1] == ' ')
    return FALSE;
  for (gsize i = 0; i < n; i++)
    if (s[i] < 0x20 || s[i] > 0x7e || strchr ("#;[]=\\", s[i]) != NULL)
      return FALSE;
  return TRUE;
}

static gboolean
sheet_string (JsonObject *sheet, const char *id, const char *key, gboolean required,
              const char **out, GError **error)
{
  *out = member_string (sheet, key);
  if (*out == NULL && !required && json_object_get_member (sheet, key) == NULL)
    return TRUE;
  if (*out == NULL || !ini_value_ok (*out))
    {
      g_autofree char *shown = *out ? g_strescape (*out, NULL) : NULL;
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "dataset %s: datasheet key '%s'%s%s%s", id, key,
                   *out == NULL ? " is missing or not a string" : ": '",
                   *out == NULL ? "" : shown,
                   *out == NULL ? "" : "' cannot be a topology value (1-200 printable "
                                       "characters, none of # ; [ ] = \\)");
      return FALSE;
    }
  return TRUE;
}

/* A positive number (an integer where `integer`): *present FALSE when the
 * key is absent and not `required`. */
static gboolean
sheet_number (JsonObject *sheet, const char *id, const char *key, gboolean required,
              gboolean integer, double *out, gboolean *present, GError **error)
{
  *present = json_object_get_member (sheet, key) != NULL;
  if (!*present && !required)
    return TRUE;
  gboolean ok = integer ? member_whole (sheet, key, 1, G_MAXUINT32, out)
                        : member_number (sheet, key, out);
  if (!ok || !(*out > 0))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "dataset %s: datasheet key '%s' %s %s", id, key,
                   *present ? "must be" : "is missing: expected",
                   integer ? "a whole number from 1 to 4294967295" : "a positive number");
      return FALSE;
    }
  return TRUE;
}

static void
append_number (GString *s, const char *key, double v)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  g_string_append_printf (s, "%s = %s\n", key, g_ascii_dtostr (buf, sizeof buf, v));
}

char *
sp_fid_datasheet_ini (JsonObject *sheet, const char *id, GError **error)
{
  const char *gpu, *transport, *fabric, *kind;
  double hosts, gph, nvlink, nics, nic_gbps, mem, tflops, domain = 0;
  gboolean p, has_domain, has_nics;
  if (!sheet_string (sheet, id, "gpu", TRUE, &gpu, error)
      || !sheet_string (sheet, id, "transport", FALSE, &transport, error)
      || !sheet_string (sheet, id, "fabric", FALSE, &fabric, error)
      || !sheet_string (sheet, id, "intra_kind", FALSE, &kind, error)
      || !sheet_number (sheet, id, "hosts", TRUE, TRUE, &hosts, &p, error)
      || !sheet_number (sheet, id, "gpus_per_host", TRUE, TRUE, &gph, &p, error)
      || !sheet_number (sheet, id, "nvlink_gbs_per_gpu_one_direction", TRUE, FALSE, &nvlink, &p,
                        error)
      || !sheet_number (sheet, id, "nics_per_host", hosts > 1, TRUE, &nics, &has_nics, error)
      || !sheet_number (sheet, id, "nic_gbps", has_nics, FALSE, &nic_gbps, &p, error)
      || !sheet_number (sheet, id, "memory_gib", TRUE, FALSE, &mem, &p, error)
      || !sheet_number (sheet, id, "tflops_bf16_dense", TRUE, FALSE, &tflops, &p, error)
      || !sheet_number (sheet, id, "nvlink_domain_gpus", FALSE, TRUE, &domain, &has_domain, error))
    return NULL;
  if (has_nics && transport == NULL)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "dataset %s: datasheet key 'transport' is missing: expected ib, roce, efa, "
                   "slingshot or tcp with its NICs", id);
      return NULL;
    }
  gboolean spans_hosts = has_domain && domain > gph;
  if (kind == NULL && !spans_hosts)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "dataset %s: the datasheet does not say how a host's GPUs connect: give "
                   "intra_kind (nvswitch, nvlink, pcie) or a topology_ini", id);
      return NULL;
    }
  GString *s = g_string_new ("[cluster]\n");
  /* the id names the topology where it can (the name is for messages) */
  if (ini_value_ok (id) && strlen (id) < SP_TOPO_NAME_MAX)
    g_string_append_printf (s, "name = %s\n", id);
  append_number (s, "nodes", hosts);
  append_number (s, "gpus_per_node", gph);
  if (has_domain)
    append_number (s, "nvlink_domain", domain);
  g_string_append_printf (s, "\n[gpu]\nmodel = %s\n", gpu);
  append_number (s, "memory_gib", mem);
  append_number (s, "tflops", tflops);
  g_string_append_printf (s, "\n[intra]\nkind = %s\n", kind ? kind : "nvswitch");
  append_number (s, "bandwidth_gbs", nvlink);
  if (has_nics) /* one host may leave its NICs out, as its INI may [inter] */
    {
      g_string_append (s, "\n[inter]\n");
      append_number (s, "nics_per_node", nics);
      append_number (s, "nic_gbps", nic_gbps);
      if (fabric != NULL || spans_hosts)
        g_string_append_printf (s, "fabric = %s\n", fabric ? fabric : "rail");
      g_string_append_printf (s, "transport = %s\n", transport);
    }
  return g_string_free (s, FALSE);
}

/* A dataset's id: 1-200 bytes of UTF-8 (JSON's), no control character. */
static gboolean
id_ok (const char *id)
{
  gsize n = strlen (id);
  if (n == 0 || n > 200)
    return FALSE;
  for (gsize i = 0; i < n; i++)
    if ((guchar) id[i] < 0x20 || id[i] == 0x7f)
      return FALSE;
  return TRUE;
}

/* Dataset `i` of `set`, for messages: its id when it has a usable one. */
static char *
dataset_name (JsonObject *ds, const char *set, guint i)
{
  const char *id = ds ? member_string (ds, "id") : NULL;
  if (id != NULL && id_ok (id))
    return g_strdup_printf ("%s: dataset %s", set, id);
  return g_strdup_printf ("%s: dataset %u", set, i + 1);
}

static gboolean
load_dataset (const char *set, JsonObject *ds, const char *where, const SpSimModel *models,
              guint n_models, GPtrArray *rows, GPtrArray *skipped, GString *inis, GError **error)
{
  const char *id = member_string (ds, "id");
  const char *coll_name = member_string (ds, "collective");
  SpColl coll;
  if (id == NULL || !id_ok (id))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "%s: 'id' is missing, empty, longer than 200 bytes or holds a control "
                   "character", where);
      return FALSE;
    }
  if (coll_name == NULL || !coll_of (coll_name, &coll))
    {
      g_autofree char *shown = coll_name ? g_strescape (coll_name, NULL) : NULL;
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "%s: 'collective' %s%s%s is not allreduce, allgather, reducescatter, alltoall "
                   "or broadcast", where, shown ? "'" : "(missing or not a string)",
                   shown ? shown : "", shown ? "'" : "");
      return FALSE;
    }
  gboolean core = TRUE;
  if (json_object_get_member (ds, "core") != NULL)
    {
      JsonNode *n = member_of_type (ds, "core", G_TYPE_BOOLEAN);
      if (n == NULL)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT, "%s: 'core' is not true or false",
                       where);
          return FALSE;
        }
      core = json_node_get_boolean (n);
    }
  guint32 k = 0;
  if (json_object_get_member (ds, "ranks_per_node") != NULL)
    {
      double v;
      if (!member_whole (ds, "ranks_per_node", 1, G_MAXUINT32, &v))
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                       "%s: 'ranks_per_node' is not a whole number from 1 to 4294967295", where);
          return FALSE;
        }
      k = (guint32) v;
    }
  JsonNode *jrows = json_object_get_member (ds, "rows");
  if (jrows == NULL || !JSON_NODE_HOLDS_ARRAY (jrows))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT, "%s: 'rows' is missing or not an array",
                   where);
      return FALSE;
    }
  g_autofree char *made = NULL;
  const char *ini = member_string (ds, "topology_ini");
  if (ini == NULL && json_object_get_member (ds, "topology_ini") != NULL)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT, "%s: 'topology_ini' is not a string",
                   where);
      return FALSE;
    }
  if (ini == NULL)
    {
      JsonNode *sheet = json_object_get_member (ds, "datasheet");
      if (sheet == NULL)
        {
          g_ptr_array_add (skipped, g_strdup (id));
          return TRUE;
        }
      if (!JSON_NODE_HOLDS_OBJECT (sheet))
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT, "%s: 'datasheet' is not an object",
                       where);
          return FALSE;
        }
      made = sp_fid_datasheet_ini (json_node_get_object (sheet), id, error);
      if (made == NULL)
        {
          g_prefix_error (error, "%s: ", set);
          return FALSE;
        }
      ini = made;
    }
  g_autoptr (SpTopo) topo = sp_topo_load_data (ini, -1, made ? "the datasheet's INI" : "topology_ini",
                                               error);
  if (topo == NULL)
    {
      g_prefix_error (error, "%s: ", where);
      return FALSE;
    }
  if (inis != NULL)
    g_string_append_printf (inis, "# %s: %s\n%s\n", id, made ? "datasheet" : "topology_ini", ini);
  const SpTopoSpec *spec = sp_topo_spec (topo);
  JsonArray *jr = json_node_get_array (jrows);
  for (guint j = 0; j < json_array_get_length (jr); j++)
    {
      JsonNode *on = json_array_get_element (jr, j);
      if (!JSON_NODE_HOLDS_OBJECT (on))
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT, "%s: row %u is not an object",
                       where, j + 1);
          return FALSE;
        }
      JsonObject *o = json_node_get_object (on);
      if (json_object_get_member (o, "time_us") == NULL)
        continue; /* not a timing (the data set's README) */
      if (json_object_get_member (o, "time_derived") != NULL)
        {
          JsonNode *derived = member_of_type (o, "time_derived", G_TYPE_BOOLEAN);
          if (derived == NULL)
            {
              g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                           "%s: row %u: 'time_derived' is not true or false", where, j + 1);
              return FALSE;
            }
          if (json_node_get_boolean (derived))
            continue; /* computed from other columns, not timed */
        }
      double t;
      double bytes;
      if (!member_whole (o, "bytes", 1, SP_FID_MAX_ROW_BYTES, &bytes))
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                       "%s: row %u: 'bytes' is not a whole number from 1 to 2^53", where, j + 1);
          return FALSE;
        }
      if (!member_number (o, "time_us", &t) || !(t >= SP_FID_MIN_TIME_US))
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                       "%s: row %u: 'time_us' is not a time of at least %g µs", where, j + 1,
                       SP_FID_MIN_TIME_US);
          return FALSE;
        }
      SpFidRow *r = g_new0 (SpFidRow, 1);
      r->set = g_strdup (set);
      r->dataset = g_strdup (id);
      r->coll = g_strdup (sp_coll_name (coll));
      r->transport = g_strdup (sp_transport_name (spec->transport));
      r->nodes = spec->nodes;
      r->core = core;
      r->bytes = (guint64) bytes;
      r->measured_us = t;
      for (guint m = 0; m < n_models; m++)
        {
          SpCollRequest req;
          sp_coll_request_init (&req);
          req.coll = coll;
          req.bytes = r->bytes;
          req.ranks_per_node = k;
          SpCollEstimate est;
          if (!sp_sim_estimate (topo, models[m], &req, &est, error))
            {
              g_prefix_error (error, "%s, %" G_GUINT64_FORMAT " bytes, %s: ", where, r->bytes,
                              sp_sim_model_name (models[m]));
              sp_fid_row_free (r);
              return FALSE;
            }
          r->sim_us[m] = est.time_ns / 1000.0;
          r->choice[m] = g_strdup_printf ("%s/%s", sp_algo_name (est.algo),
                                          sp_proto_name (est.proto));
        }
      g_ptr_array_add (rows, r);
    }
  return TRUE;
}

gboolean
sp_fid_load (const char *set, const char *text, gsize length, const SpSimModel *models,
             guint n_models, GPtrArray *rows, GPtrArray *skipped, GString *inis, GError **error)
{
  if (!sp_json_check_for_parser (text, length, set, SP_ERROR_INVALID_ARGUMENT, error))
    return FALSE;
  g_autoptr (JsonParser) parser = json_parser_new ();
  GError *local = NULL;
  if (!json_parser_load_from_data (parser, text, (gssize) length, &local))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT, "%s: not valid JSON: %s", set,
                   local->message);
      g_error_free (local);
      return FALSE;
    }
  JsonNode *root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_ARRAY (root))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT, "%s: expected an array of datasets",
                   set);
      return FALSE;
    }
  JsonArray *sets = json_node_get_array (root);
  for (guint i = 0; i < json_array_get_length (sets); i++)
    {
      JsonNode *dn = json_array_get_element (sets, i);
      JsonObject *ds = JSON_NODE_HOLDS_OBJECT (dn) ? json_node_get_object (dn) : NULL;
      g_autofree char *where = dataset_name (ds, set, i);
      if (ds == NULL)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT, "%s is not an object", where);
          return FALSE;
        }
      if (!load_dataset (set, ds, where, models, n_models, rows, skipped, inis, error))
        return FALSE;
    }
  return TRUE;
}
