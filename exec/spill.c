/* exec/spill.c — the spill file format (exec-internal.h describes it): the
 * writer's records and the one reader, used by rank 0's in-run partial
 * trace and by `shardplan trace recover`.  No MPI here: it is built into
 * every shardplan, with or without the executor. */
#include "config.h"
#include "exec-internal.h"
#include "json-scan.h"          /* lib/: the JSON depth limit */

#include <glib/gstdio.h>
#include <errno.h>
#include <json-glib/json-glib.h>
#include <string.h>
#include <sys/stat.h>

#define SPILL_MAGIC "SPSPILL\0"
#define SPILL_MAGIC_LEN 8
#define SPILL_BOM 0x01020304u
#define SPILL_HEADER_LEN 16
#define RECORD_HEADER_LEN 16

enum {
  REC_RUN = 1,
  REC_INFO = 2,
  REC_ROWS = 3,
  REC_MARK = 4,
};

#define MARK_LEN 16
/* The largest world a spill file may declare: the reader allocates per
 * rank (clock offsets, the groups of the plan), so a damaged world_size
 * must not cost gigabytes.  2^24 is 16 M ranks, the CLI's --nodes limit. */
#define SPILL_MAX_WORLD (1u << 24)

/* ---------------------------------------------------------------- layout */

static const char *
kind_tag (SpTraceKind kind)
{
  static const char *const tags[] = {
    [SP_TRACE_KIND_U8] = "u8",       [SP_TRACE_KIND_U32] = "u32",   [SP_TRACE_KIND_I32] = "i32",
    [SP_TRACE_KIND_U64] = "u64",     [SP_TRACE_KIND_I64] = "i64",   [SP_TRACE_KIND_F64] = "f64",
    [SP_TRACE_KIND_STR] = "str",     [SP_TRACE_KIND_COLL] = "coll", [SP_TRACE_KIND_DTYPE] = "dtype",
    [SP_TRACE_KIND_REDOP] = "redop", [SP_TRACE_KIND_STATUS] = "status",
  };
  return (guint) kind < G_N_ELEMENTS (tags) && tags[kind] ? tags[kind] : "?";
}

static const char *
byte_order_name (void)
{
  return G_BYTE_ORDER == G_LITTLE_ENDIAN ? "little" : "big";
}

static char *
schema_version_text (void)
{
  return g_strdup_printf ("%u.%u", SP_TRACE_SCHEMA_MAJOR, SP_TRACE_SCHEMA_MINOR);
}

/* ---------------------------------------------------------------- writer */

static void
write_record (FILE *f, guint32 type, const void *payload, guint64 bytes)
{
  guint32 head[2] = { type, 0 };
  fwrite (head, sizeof head, 1, f);
  fwrite (&bytes, sizeof bytes, 1, f);
  if (bytes)
    fwrite (payload, 1, (gsize) bytes, f);
}

static void
add_kv_object (JsonBuilder *b, const char *member, const GPtrArray *kv)
{
  json_builder_set_member_name (b, member);
  json_builder_begin_object (b);
  for (guint i = 0; kv && i + 1 < kv->len; i += 2)
    {
      json_builder_set_member_name (b, g_ptr_array_index (kv, i));
      json_builder_add_string_value (b, g_ptr_array_index (kv, i + 1));
    }
  json_builder_end_object (b);
}

static void
add_str (JsonBuilder *b, const char *member, const char *value)
{
  json_builder_set_member_name (b, member);
  if (value)
    json_builder_add_string_value (b, value);
  else
    json_builder_add_null_value (b);
}

static void
add_int (JsonBuilder *b, const char *member, gint64 value)
{
  json_builder_set_member_name (b, member);
  json_builder_add_int_value (b, value);
}

static char *
builder_text (JsonBuilder *b, gsize *out_len)
{
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  g_autoptr (JsonNode) root = json_builder_get_root (b);
  json_generator_set_root (gen, root);
  return json_generator_to_data (gen, out_len);
}

gboolean
sp_exec_spill_write_run (FILE *f, const SpExecSpillRun *run, GError **error)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  g_autofree char *version = schema_version_text ();
  json_builder_begin_object (b);
  add_str (b, "format", "shardplan-spill");
  add_int (b, "spill_version", SP_EXEC_SPILL_VERSION);
  add_str (b, "schema", SP_TRACE_SCHEMA_NAME);
  add_str (b, "schema_version", version);
  add_str (b, "byte_order", byte_order_name ());
  add_int (b, "row_size", (gint64) sizeof (SpTraceRow));
  json_builder_set_member_name (b, "row_fields");
  json_builder_begin_array (b);
  gsize n_fields = 0;
  const SpTraceField *fields = sp_trace_row_fields (&n_fields);
  for (gsize i = 0; i < n_fields; i++)
    {
      json_builder_begin_array (b);
      json_builder_add_string_value (b, fields[i].name);
      json_builder_add_string_value (b, kind_tag (fields[i].kind));
      json_builder_add_int_value (b, (gint64) fields[i].offset);
      json_builder_end_array (b);
    }
  json_builder_end_array (b);
  add_int (b, "rank", run->rank);
  add_int (b, "world_size", run->world_size);
  add_str (b, "run_id", run->run_id);
  add_str (b, "output", run->output);
  add_str (b, "producer", run->producer);
  add_str (b, "producer_version", run->producer_version);
  add_str (b, "clock", run->clock);
  add_str (b, "timing_mode", run->timing_mode);
  add_str (b, "check_policy", run->check_policy);
  add_int (b, "warmup_iters", run->warmup_iters);
  add_int (b, "iters", run->iters);
  add_str (b, "plan_digest", run->plan_digest);
  add_str (b, "plan", run->plan_text);
  add_str (b, "topology", run->topology_text);
  add_kv_object (b, "software", run->software);
  json_builder_set_member_name (b, "env");
  json_builder_begin_array (b);
  for (guint i = 0; run->env && i + 1 < run->env->len; i += 2)
    {
      json_builder_begin_array (b);
      json_builder_add_string_value (b, g_ptr_array_index (run->env, i));
      json_builder_add_string_value (b, g_ptr_array_index (run->env, i + 1));
      json_builder_end_array (b);
    }
  json_builder_end_array (b);
  json_builder_end_object (b);
  gsize len = 0;
  g_autofree char *text = builder_text (b, &len);

  guint32 head[2] = { SP_EXEC_SPILL_VERSION, SPILL_BOM };
  fwrite (SPILL_MAGIC, 1, SPILL_MAGIC_LEN, f);
  fwrite (head, sizeof head, 1, f);
  write_record (f, REC_RUN, text, len);
  if (fflush (f) != 0 || ferror (f))
    {
      int e = errno;
      g_set_error (error, SP_ERROR, SP_ERROR_IO, "cannot write the spill file's header: %s",
                   g_strerror (e));
      return FALSE;
    }
  return TRUE;
}

void
sp_exec_spill_write_info (FILE *f, const SpExecSpillRank *info, gboolean has_epoch,
                          gint64 epoch_ns)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  if (info)
    {
      add_str (b, "backend", info->backend);
      add_str (b, "hostname", info->hostname);
      add_str (b, "gpu_model", info->gpu_model);
      add_int (b, "local_rank", info->local_rank);
      add_int (b, "device", info->device);
      add_int (b, "clock_offset_ns", info->clock_offset_ns);
      add_kv_object (b, "software", info->software);
    }
  if (has_epoch)
    add_int (b, "epoch_ns", epoch_ns);
  json_builder_end_object (b);
  gsize len = 0;
  g_autofree char *text = builder_text (b, &len);
  write_record (f, REC_INFO, text, len);
}

void
sp_exec_spill_write_rows (FILE *f, const SpTraceRow *rows, gsize n)
{
  if (n)
    write_record (f, REC_ROWS, rows, (guint64) n * sizeof (SpTraceRow));
}

void
sp_exec_spill_write_mark (FILE *f, guint32 op_id, gboolean stages, SpTraceStatus status,
                          guint32 flags)
{
  guint32 m[4] = { op_id, stages ? 1 : 0, (guint32) status, flags };
  G_STATIC_ASSERT (sizeof m == MARK_LEN);
  write_record (f, REC_MARK, m, sizeof m);
}

void
sp_exec_rows_mark (GArray *rows, guint32 op_id, gboolean stages, SpTraceStatus status, guint32 flags)
{
  for (guint i = 0; i < rows->len; i++)
    {
      SpTraceRow *r = &g_array_index (rows, SpTraceRow, i);
      if (r->op_id != op_id && !(stages && r->parent_op_id == (gint64) op_id))
        continue;
      r->flags |= flags;
      if (status != SP_TRACE_STATUS_OK)
        r->status = status;
    }
}

/* ---------------------------------------------------------------- reader */

static void
kv_free (GPtrArray **kv)
{
  g_clear_pointer (kv, g_ptr_array_unref);
}

void
sp_exec_spill_free (SpExecSpill *s)
{
  if (!s)
    return;
  SpExecSpillRun *r = &s->run;
  g_free (r->run_id);
  g_free (r->output);
  g_free (r->producer);
  g_free (r->producer_version);
  g_free (r->clock);
  g_free (r->timing_mode);
  g_free (r->check_policy);
  g_free (r->plan_digest);
  g_free (r->plan_text);
  g_free (r->topology_text);
  kv_free (&r->software);
  kv_free (&r->env);
  g_free (s->info.backend);
  g_free (s->info.hostname);
  g_free (s->info.gpu_model);
  kv_free (&s->info.software);
  if (s->rows)
    g_array_unref (s->rows);
  g_free (s->damage);
  g_free (s->path);
  g_free (s);
}

/* Reading one JSON record; the first problem goes to *error. */
typedef struct {
  const char *path;           /* the file, named in messages; NULL: not named (an INFO
                                 record: its damage is reported with the file, recover.c) */
  const char *record;         /* "header" (NULL) or "info" */
  JsonObject *o;
  GError **error;
} Json;

static gboolean
bad (Json *j, const char *member, const char *what)
{
  if (*j->error == NULL)
    g_set_error (j->error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s%s%s member '%s' %s",
                 j->path ? j->path : "", j->path ? ": " : "", j->record ? j->record : "header",
                 member, what);
  return FALSE;
}

static JsonNode *
member (Json *j, const char *name, gboolean required)
{
  JsonNode *n = json_object_get_member (j->o, name);
  if (!n && required)
    bad (j, name, "is missing");
  return n;
}

/* A string member: *out = copy; NULL allowed when !required. */
static gboolean
get_str (Json *j, const char *name, gboolean required, char **out)
{
  JsonNode *n = member (j, name, required);
  if (!n || (JSON_NODE_HOLDS_NULL (n) && !required))
    return n != NULL || !required;
  if (!JSON_NODE_HOLDS_VALUE (n) || json_node_get_value_type (n) != G_TYPE_STRING)
    return bad (j, name, "is not a string");
  g_free (*out);
  *out = g_strdup (json_node_get_string (n));
  return TRUE;
}

static gboolean
get_int (Json *j, const char *name, gboolean required, gint64 min, gint64 max, gint64 *out)
{
  JsonNode *n = member (j, name, required);
  if (!n)
    return !required;
  if (!JSON_NODE_HOLDS_VALUE (n) || json_node_get_value_type (n) != G_TYPE_INT64)
    return bad (j, name, "is not an integer");
  gint64 v = json_node_get_int (n);
  if (v < min || v > max)
    return bad (j, name, "is out of range");
  *out = v;
  return TRUE;
}

static gboolean
get_u32 (Json *j, const char *name, gboolean required, guint32 *out)
{
  gint64 v = 0;
  if (!get_int (j, name, required, 0, G_MAXUINT32, &v))
    return FALSE;
  if (json_object_has_member (j->o, name))
    *out = (guint32) v;
  return TRUE;
}

/* {key: string} → key, value, … appended to *kv. */
static gboolean
get_kv_object (Json *j, const char *name, GPtrArray **kv)
{
  JsonNode *n = member (j, name, FALSE);
  if (!n)
    return TRUE;
  if (!JSON_NODE_HOLDS_OBJECT (n))
    return bad (j, name, "is not an object");
  JsonObject *o = json_node_get_object (n);
  if (!*kv)
    *kv = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GList) keys = json_object_get_members (o);
  for (GList *k = keys; k; k = k->next)
    {
      JsonNode *v = json_object_get_member (o, k->data);
      if (!JSON_NODE_HOLDS_VALUE (v) || json_node_get_value_type (v) != G_TYPE_STRING)
        return bad (j, name, "has a value that is not a string");
      if (*(const char *) k->data == '\0')
        return bad (j, name, "has a member with an empty name");
      g_ptr_array_add (*kv, g_strdup (k->data));
      g_ptr_array_add (*kv, g_strdup (json_node_get_string (v)));
    }
  return TRUE;
}

/* `path` as in Json. */
static JsonObject *
parse_object (const char *path, const char *what, const guint8 *text, guint64 len,
              JsonParser *parser, GError **error)
{
  GError *e = NULL;
  guint line = 0, col = 0;
  if (!sp_json_depth_within ((const char *) text, (gsize) len, SP_JSON_MAX_DEPTH, &line, &col))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s%sthe %s record nests objects and "
                   "arrays deeper than %d levels (at %u:%u; damaged)", path ? path : "",
                   path ? ": " : "", what, SP_JSON_MAX_DEPTH, line, col);
      return NULL;
    }
  /* an empty or blank payload parses to no root at all: test it before
   * JSON_NODE_HOLDS_OBJECT, which warns on a NULL node (fuzz finding S1) */
  if (!json_parser_load_from_data (parser, (const char *) text, (gssize) len, &e)
      || json_parser_get_root (parser) == NULL
      || !JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser)))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s%sthe %s record is not a JSON "
                   "object%s%s", path ? path : "", path ? ": " : "", what, e ? ": " : "",
                   e ? e->message : "");
      g_clear_error (&e);
      return NULL;
    }
  return json_node_get_object (json_parser_get_root (parser));
}

/* A string or an integer element, or NULL / `absent` when it is of another
 * JSON type (json-glib's typed getters complain on stderr instead). */
static const char *
node_string (JsonNode *n)
{
  return n && JSON_NODE_HOLDS_VALUE (n) && json_node_get_value_type (n) == G_TYPE_STRING
           ? json_node_get_string (n) : NULL;
}

static gint64
node_int (JsonNode *n, gint64 absent)
{
  return n && JSON_NODE_HOLDS_VALUE (n) && json_node_get_value_type (n) == G_TYPE_INT64
           ? json_node_get_int (n) : absent;
}

/* The row layout of the file against this build's: NULL when equal, else
 * what differs (g_free). */
static char *
layout_difference (JsonObject *o, const char *version, gint64 row_size)
{
  /* The same major version and the same rows: another minor version that
   * changed no row field (1.1 → 1.2) reads. */
  g_autofree char *ours = g_strdup_printf ("%u.", SP_TRACE_SCHEMA_MAJOR);
  if (!g_str_has_prefix (version, ours))
    return g_strdup_printf ("schema %s", version);
  if (row_size != (gint64) sizeof (SpTraceRow))
    return g_strdup_printf ("schema %s, %" G_GINT64_FORMAT "-byte rows", version, row_size);
  JsonNode *n = json_object_get_member (o, "row_fields");
  if (!n || !JSON_NODE_HOLDS_ARRAY (n))
    return g_strdup ("no row_fields list");
  JsonArray *a = json_node_get_array (n);
  gsize n_fields = 0;
  const SpTraceField *fields = sp_trace_row_fields (&n_fields);
  if (json_array_get_length (a) != n_fields)
    return g_strdup_printf ("%u row fields", json_array_get_length (a));
  for (guint i = 0; i < n_fields; i++)
    {
      JsonNode *e = json_array_get_element (a, i);
      JsonArray *f = JSON_NODE_HOLDS_ARRAY (e) ? json_node_get_array (e) : NULL;
      gboolean three = f && json_array_get_length (f) == 3;
      const char *name = three ? node_string (json_array_get_element (f, 0)) : NULL;
      const char *kind = three ? node_string (json_array_get_element (f, 1)) : NULL;
      gint64 off = three ? node_int (json_array_get_element (f, 2), -1) : -1;
      if (!name || !kind || strcmp (name, fields[i].name) != 0 ||
          strcmp (kind, kind_tag (fields[i].kind)) != 0 || off != (gint64) fields[i].offset)
        return g_strdup_printf ("row field %u is %s %s at byte %" G_GINT64_FORMAT " where this "
                                "build has %s %s at byte %" G_GSIZE_FORMAT, i, kind ? kind : "?",
                                name ? name : "?", off, kind_tag (fields[i].kind), fields[i].name,
                                fields[i].offset);
    }
  return NULL;
}

static gboolean
read_run (SpExecSpill *s, const guint8 *text, guint64 len, GError **error)
{
  g_autoptr (JsonParser) parser = json_parser_new ();
  JsonObject *o = parse_object (s->path, "header", text, len, parser, error);
  if (!o)
    return FALSE;
  Json j = { .path = s->path, .o = o, .error = error };
  g_autofree char *format = NULL, *schema = NULL, *version = NULL, *order = NULL;
  gint64 spill_version = 0, row_size = 0;
  if (!get_str (&j, "format", TRUE, &format) || !get_int (&j, "spill_version", TRUE, 0, G_MAXINT, &spill_version) ||
      !get_str (&j, "schema", TRUE, &schema) || !get_str (&j, "schema_version", TRUE, &version) ||
      !get_str (&j, "byte_order", TRUE, &order) || !get_int (&j, "row_size", TRUE, 1, G_MAXINT, &row_size))
    return FALSE;
  if (strcmp (format, "shardplan-spill") != 0 || strcmp (schema, SP_TRACE_SCHEMA_NAME) != 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: not a shardplan spill file "
                   "(format '%s', schema '%s')", s->path, format, schema);
      return FALSE;
    }
  g_autofree char *diff = layout_difference (o, version, row_size);
  if (diff)
    {
      g_autofree char *mine = schema_version_text ();
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: written with another row layout "
                   "(%s); this shardplan reads schema %s with %" G_GSIZE_FORMAT "-byte rows",
                   s->path, diff, mine, sizeof (SpTraceRow));
      return FALSE;
    }
  SpExecSpillRun *r = &s->run;
  gint64 world = 0;
  if (!get_u32 (&j, "rank", TRUE, &r->rank) || !get_int (&j, "world_size", TRUE, 1, G_MAXUINT32, &world) ||
      !get_str (&j, "run_id", TRUE, &r->run_id) || !get_str (&j, "output", TRUE, &r->output) ||
      !get_str (&j, "producer", TRUE, &r->producer) ||
      !get_str (&j, "producer_version", TRUE, &r->producer_version) ||
      !get_str (&j, "clock", TRUE, &r->clock) || !get_str (&j, "timing_mode", TRUE, &r->timing_mode) ||
      !get_str (&j, "check_policy", FALSE, &r->check_policy) ||
      !get_u32 (&j, "warmup_iters", TRUE, &r->warmup_iters) || !get_u32 (&j, "iters", TRUE, &r->iters) ||
      !get_str (&j, "plan_digest", TRUE, &r->plan_digest) || !get_str (&j, "plan", TRUE, &r->plan_text) ||
      !get_str (&j, "topology", FALSE, &r->topology_text) || !get_kv_object (&j, "software", &r->software))
    return FALSE;
  /* what the trace schema allows (run writes these three): anything else
   * would pass into the recovered trace unchecked */
  if (r->check_policy != NULL && strcmp (r->check_policy, "after") != 0
      && strcmp (r->check_policy, "every") != 0 && strcmp (r->check_policy, "none") != 0)
    return bad (&j, "check_policy", "is not after, every or none");
  r->world_size = (guint32) world;
  if (r->world_size > SPILL_MAX_WORLD)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: header member 'world_size' %u is "
                   "more than the %u ranks a spill file may declare (damaged)", s->path,
                   r->world_size, SPILL_MAX_WORLD);
      return FALSE;
    }
  if (r->rank >= r->world_size)
    return bad (&j, "rank", "is not below world_size");
  JsonNode *env = json_object_get_member (o, "env");
  r->env = g_ptr_array_new_with_free_func (g_free);
  if (env && !JSON_NODE_HOLDS_ARRAY (env))
    return bad (&j, "env", "is not a list");
  for (guint i = 0; env && i < json_array_get_length (json_node_get_array (env)); i++)
    {
      JsonNode *e = json_array_get_element (json_node_get_array (env), i);
      JsonArray *kv = JSON_NODE_HOLDS_ARRAY (e) ? json_node_get_array (e) : NULL;
      const char *k = kv && json_array_get_length (kv) == 2 ? node_string (json_array_get_element (kv, 0)) : NULL;
      const char *v = k ? node_string (json_array_get_element (kv, 1)) : NULL;
      if (!k || !v)
        return bad (&j, "env", "is not a list of [key, value] strings");
      g_ptr_array_add (r->env, g_strdup (k));
      g_ptr_array_add (r->env, g_strdup (v));
    }
  return TRUE;
}

/* *dst = *src when *src is set (a later INFO record's member wins). */
static void
replace_str (char **dst, char **src)
{
  if (*src)
    {
      g_free (*dst);
      *dst = g_steal_pointer (src);
    }
}

/* An INFO record.  Read whole before any of it is taken, so that a damaged
 * one (where the reader stops, parse_records) changes nothing. */
static gboolean
read_info (SpExecSpill *s, const guint8 *text, guint64 len, GError **error)
{
  g_autoptr (JsonParser) parser = json_parser_new ();
  JsonObject *o = parse_object (NULL, "info", text, len, parser, error);
  if (!o)
    return FALSE;
  Json j = { .path = NULL, .record = "info", .o = o, .error = error };
  SpExecSpillRank *i = &s->info;
  g_autofree char *backend = NULL, *hostname = NULL, *gpu_model = NULL;
  g_autoptr (GPtrArray) software = NULL;
  guint32 local_rank = i->local_rank;
  gint64 device = i->device, offset = i->clock_offset_ns, epoch = s->epoch_ns;
  if (!get_str (&j, "backend", FALSE, &backend) || !get_str (&j, "hostname", FALSE, &hostname) ||
      !get_str (&j, "gpu_model", FALSE, &gpu_model) || !get_u32 (&j, "local_rank", FALSE, &local_rank) ||
      !get_int (&j, "device", FALSE, -1, G_MAXINT32, &device) ||
      !get_int (&j, "clock_offset_ns", FALSE, G_MININT64, G_MAXINT64, &offset) ||
      !get_kv_object (&j, "software", &software) ||
      !get_int (&j, "epoch_ns", FALSE, G_MININT64, G_MAXINT64, &epoch))
    return FALSE;
  replace_str (&i->backend, &backend);
  replace_str (&i->hostname, &hostname);
  replace_str (&i->gpu_model, &gpu_model);
  for (guint k = 0; software && k < software->len; k++)
    {
      if (!i->software)
        i->software = g_ptr_array_new_with_free_func (g_free);
      g_ptr_array_add (i->software, g_strdup (g_ptr_array_index (software, k)));
    }
  i->local_rank = local_rank;
  i->device = (gint32) device;
  i->clock_offset_ns = offset;
  s->epoch_ns = epoch;
  if (json_object_has_member (o, "hostname"))
    s->has_info = TRUE;
  if (json_object_has_member (o, "epoch_ns"))
    s->has_epoch = TRUE;
  return TRUE;
}

/* A MARK record, applied once the whole file is read (apply_marks). */
typedef struct {
  guint32 op_id, status, flags;
  gboolean stages;
  guint before;               /* rows before it in the file: the ones it applies to */
} Mark;

/* The marks that may apply to the rows of one op id: indices into the
 * marks (file order) with, from each position on, the OR of their flags
 * and the last one whose status is not OK (G_MAXUINT: none). */
typedef struct {
  GArray *idx;                /* guint */
  guint32 *flags_from;
  guint *bad_from;
} MarkList;

static void
mark_list_free (gpointer p)
{
  MarkList *l = p;
  g_array_unref (l->idx);
  g_free (l->flags_from);
  g_free (l->bad_from);
  g_free (l);
}

static void
mark_list_add (GHashTable *lists, guint32 op_id, guint i)
{
  MarkList *l = g_hash_table_lookup (lists, GUINT_TO_POINTER (op_id));
  if (!l)
    {
      l = g_new0 (MarkList, 1);
      l->idx = g_array_new (FALSE, FALSE, sizeof (guint));
      g_hash_table_insert (lists, GUINT_TO_POINTER (op_id), l);
    }
  g_array_append_val (l->idx, i);
}

static void
mark_list_finish (gpointer key, gpointer value, gpointer marks_array)
{
  MarkList *l = value;
  const GArray *marks = marks_array;
  guint n = l->idx->len;
  l->flags_from = g_new0 (guint32, n + 1);
  l->bad_from = g_new (guint, n + 1);
  l->bad_from[n] = G_MAXUINT;
  for (guint j = n; j-- > 0;)
    {
      guint i = g_array_index (l->idx, guint, j);
      const Mark *m = &g_array_index (marks, Mark, i);
      l->flags_from[j] = l->flags_from[j + 1] | m->flags;
      l->bad_from[j] = l->bad_from[j + 1] != G_MAXUINT ? l->bad_from[j + 1]
                       : m->status != SP_TRACE_STATUS_OK ? i : G_MAXUINT;
    }
}

/* What the marks of `l` after row k do to it: OR the flags in, and the
 * index of the last non-OK mark, or G_MAXUINT. */
static guint
mark_list_apply (const MarkList *l, const GArray *marks, guint k, guint32 *inout_flags)
{
  if (!l)
    return G_MAXUINT;
  guint lo = 0, hi = l->idx->len; /* first mark written after row k */
  while (lo < hi)
    {
      guint mid = lo + (hi - lo) / 2;
      if (g_array_index (marks, Mark, g_array_index (l->idx, guint, mid)).before > k)
        hi = mid;
      else
        lo = mid + 1;
    }
  *inout_flags |= l->flags_from[lo];
  return l->bad_from[lo];
}

/* The MARK records' effect, as sp_exec_rows_mark applied at each mark
 * would have (flags OR-ed, the last non-OK status wins), in
 * O((rows + marks) log marks) rather than rows x marks: a damaged or
 * hostile file of 30,000 rows and 30,000 marks took 12 s the direct way. */
static void
apply_marks (GArray *rows, const GArray *marks)
{
  if (marks->len == 0)
    return;
  g_autoptr (GHashTable) by_op = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL,
                                                        mark_list_free);
  g_autoptr (GHashTable) by_parent = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL,
                                                            mark_list_free);
  for (guint i = 0; i < marks->len; i++)
    {
      const Mark *m = &g_array_index (marks, Mark, i);
      mark_list_add (by_op, m->op_id, i);
      if (m->stages)
        mark_list_add (by_parent, m->op_id, i);
    }
  g_hash_table_foreach (by_op, mark_list_finish, (gpointer) marks);
  g_hash_table_foreach (by_parent, mark_list_finish, (gpointer) marks);
  for (guint k = 0; k < rows->len; k++)
    {
      SpTraceRow *r = &g_array_index (rows, SpTraceRow, k);
      guint32 flags = 0;
      guint bad = mark_list_apply (g_hash_table_lookup (by_op, GUINT_TO_POINTER (r->op_id)),
                                   marks, k, &flags);
      if (r->parent_op_id >= 0 && r->parent_op_id <= G_MAXUINT32)
        {
          guint b = mark_list_apply (g_hash_table_lookup (by_parent,
                                                          GUINT_TO_POINTER ((guint32) r->parent_op_id)),
                                     marks, k, &flags);
          if (b != G_MAXUINT && (bad == G_MAXUINT || b > bad))
            bad = b;
        }
      r->flags |= flags;
      if (bad != G_MAXUINT)
        r->status = (SpTraceStatus) g_array_index (marks, Mark, bad).status;
    }
}

/* What is wrong with a row read from rank `rank`'s file, NULL when it is
 * one the recorder could have written (exec/record.c fill_row): this
 * rank's, a timed iteration of the run, a group of at least one rank with
 * the row's rank in it, known enum values.  A crash's zeros (group_size 0)
 * or a record read out of step fail it. */
static char *
row_problem (const SpTraceRow *r, const SpExecSpillRun *run)
{
  if (r->rank != run->rank)
    return g_strdup_printf ("is of rank %u in rank %u's file", r->rank, run->rank);
  if (r->iter < 0 || (guint32) r->iter >= run->iters)
    return g_strdup_printf ("has iteration %d of a run of %u", r->iter, run->iters);
  if (r->group_size == 0 || r->group_rank >= r->group_size)
    return g_strdup_printf ("has group rank %u of %u", r->group_rank, r->group_size);
  if (r->parent_op_id < -1)
    return g_strdup_printf ("has parent op %" G_GINT64_FORMAT, r->parent_op_id);
  if (!sp_coll_name (r->coll) || !sp_dtype_name (r->dtype) || !sp_redop_name (r->redop)
      || !sp_trace_status_name (r->status))
    return g_strdup_printf ("has an unknown kind, type, reduction or status (%d, %d, %d, %d)",
                            (int) r->coll, (int) r->dtype, (int) r->redop, (int) r->status);
  return NULL;
}

/* Damage after the header record, in the record at byte `at`: the reading
 * stops there and what came before it is kept (a torn write of a crash, a
 * disk error: the rows before it were measured).  `damage` (taken) says
 * what; a tail of zero bytes is named as what a crash leaves when a file's
 * size reached the disk before its data. */
static void
stop_at_damage (SpExecSpill *s, const guint8 *data, gsize len, gsize at, GError *damage)
{
  gsize k = at;
  while (k < len && data[k] == 0)
    k++;
  s->damaged_at = at;
  s->dropped_bytes += len - at;
  s->damage = k == len ? g_strdup_printf ("%" G_GSIZE_FORMAT " zero bytes to its end (a crash "
                                          "before the data reached the disk)", len - at)
                       : g_strdup (damage->message);
  g_error_free (damage);
}

static gboolean
parse_records (SpExecSpill *s, const guint8 *data, gsize len, GArray *marks, GError **error)
{
  if (len < SPILL_MAGIC_LEN || memcmp (data, SPILL_MAGIC, SPILL_MAGIC_LEN) != 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: not a shardplan spill file "
                   "(bad magic)", s->path);
      return FALSE;
    }
  if (len < SPILL_HEADER_LEN)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: cut short inside the file "
                   "header (%" G_GSIZE_FORMAT " of %d bytes)", s->path, len, SPILL_HEADER_LEN);
      return FALSE;
    }
  guint32 head[2];
  memcpy (head, data + SPILL_MAGIC_LEN, sizeof head);
  if (head[1] != SPILL_BOM)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: written on a machine with "
                   "another byte order (this one is %s-endian)", s->path, byte_order_name ());
      return FALSE;
    }
  if (head[0] < 1 || head[0] > SP_EXEC_SPILL_VERSION)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: spill format version %u; this "
                   "shardplan reads versions 1 to %d", s->path, head[0], SP_EXEC_SPILL_VERSION);
      return FALSE;
    }
  s->info.device = -1;
  gsize pos = SPILL_HEADER_LEN;
  gboolean have_run = FALSE;
  while (pos < len)
    {
      gsize at = pos;           /* this record's first byte; where damage starts */
      gsize left = len - pos;
      guint32 rh[2] = { 0, 0 };
      guint64 bytes = 0;
      if (left < RECORD_HEADER_LEN)
        {
          if (!have_run)
            break;
          s->dropped_bytes += left; /* a record header cut short */
          break;
        }
      memcpy (rh, data + pos, sizeof rh);
      memcpy (&bytes, data + pos + sizeof rh, sizeof bytes);
      pos += RECORD_HEADER_LEN;
      left -= RECORD_HEADER_LEN;
      gboolean cut = bytes > left;
      if (!have_run)
        {
          if (rh[0] != REC_RUN)
            {
              g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: the first record is of "
                           "type %u, not the header (type %d)", s->path, rh[0], REC_RUN);
              return FALSE;
            }
          if (cut)
            {
              g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: cut short inside the "
                           "header record (%" G_GSIZE_FORMAT " of %" G_GUINT64_FORMAT " bytes)",
                           s->path, left, bytes);
              return FALSE;
            }
          if (!read_run (s, data + pos, bytes, error))
            return FALSE;
          have_run = TRUE;
          pos += (gsize) bytes;
          continue;
        }
      /* After the header: a record cut short ends the file; damage stops
       * the reading there, what came before it kept. */
      GError *damage = NULL;
      switch (rh[0])
        {
        case REC_RUN:
          g_set_error (&damage, SP_ERROR, SP_ERROR_INVALID_TRACE, "a second header record");
          break;
        case REC_INFO:
          if (cut)
            {
              s->dropped_bytes += left;
              return TRUE;
            }
          read_info (s, data + pos, bytes, &damage);
          break;
        case REC_ROWS:
          {
            guint64 avail = cut ? left : bytes;
            if (!cut && bytes % sizeof (SpTraceRow) != 0)
              {
                g_set_error (&damage, SP_ERROR, SP_ERROR_INVALID_TRACE, "a rows record of %"
                             G_GUINT64_FORMAT " bytes, not a whole number of %" G_GSIZE_FORMAT
                             "-byte rows", bytes, sizeof (SpTraceRow));
                break;
              }
            const guint first = s->rows->len;
            const guint n = (guint) (avail / sizeof (SpTraceRow));
            g_array_append_vals (s->rows, data + pos, n);
            for (guint k = first; k < s->rows->len; k++)
              {
                g_autofree char *why = row_problem (&g_array_index (s->rows, SpTraceRow, k),
                                                    &s->run);
                if (why)
                  {
                    /* the rows before it stand (a record torn by a crash
                     * keeps the rows that reached the disk) */
                    g_set_error (&damage, SP_ERROR, SP_ERROR_INVALID_TRACE, "row %u of a rows "
                                 "record %s", k - first, why);
                    at = pos + (gsize) (k - first) * sizeof (SpTraceRow);
                    g_array_set_size (s->rows, k);
                    break;
                  }
              }
            if (damage)
              break;
            if (cut)
              {
                s->dropped_bytes += avail - (guint64) n * sizeof (SpTraceRow);
                return TRUE;
              }
            break;
          }
        case REC_MARK:
          {
            if (cut)
              {
                s->dropped_bytes += left;
                return TRUE;
              }
            if (bytes != MARK_LEN)
              {
                g_set_error (&damage, SP_ERROR, SP_ERROR_INVALID_TRACE, "a mark record of %"
                             G_GUINT64_FORMAT " bytes (a mark is %d)", bytes, MARK_LEN);
                break;
              }
            guint32 m[4];
            memcpy (m, data + pos, sizeof m);
            Mark mk = { .op_id = m[0], .stages = m[1] != 0, .status = m[2], .flags = m[3],
                        .before = s->rows->len };
            g_array_append_val (marks, mk);
            break;
          }
        default:
          g_set_error (&damage, SP_ERROR, SP_ERROR_INVALID_TRACE, "a record of unknown type %u",
                       rh[0]);
          break;
        }
      if (damage)
        {
          stop_at_damage (s, data, len, at, damage);
          return TRUE;
        }
      pos += (gsize) bytes;
    }
  if (!have_run)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: cut short before the header "
                   "record", s->path);
      return FALSE;
    }
  return TRUE;
}

static gboolean
parse (SpExecSpill *s, const guint8 *data, gsize len, GError **error)
{
  g_autoptr (GArray) marks = g_array_new (FALSE, FALSE, sizeof (Mark));
  if (!parse_records (s, data, len, marks, error))
    return FALSE;
  apply_marks (s->rows, marks);
  return TRUE;
}

void
sp_exec_spill_append_note (GString *out, const SpExecSpill *s)
{
  if (s->damage)
    g_string_append_printf (out, "; rank %u's file damaged at byte %" G_GUINT64_FORMAT " (%"
                            G_GUINT64_FORMAT " bytes dropped)", s->run.rank, s->damaged_at,
                            s->dropped_bytes);
  else if (s->dropped_bytes)
    g_string_append_printf (out, "; rank %u's file cut short (%" G_GUINT64_FORMAT " bytes "
                            "dropped)", s->run.rank, s->dropped_bytes);
}

SpExecSpill *
sp_exec_spill_read (const char *path, GError **error)
{
  g_autofree gchar *data = NULL;
  gsize len = 0;
  GError *e = NULL;
  /* g_file_get_contents reads a pipe or a device to its end, which
   * /dev/zero never reaches: a spill file is a regular file */
  GStatBuf st;
  if (g_stat (path, &st) == 0 && !S_ISREG (st.st_mode))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: not a regular file, so not a "
                   "spill file", path);
      return NULL;
    }
  if (!g_file_get_contents (path, &data, &len, &e))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_IO, "cannot read %s: %s", path,
                   g_error_matches (e, G_FILE_ERROR, G_FILE_ERROR_NOENT) ? "no such file"
                                                                          : e->message);
      g_clear_error (&e);
      return NULL;
    }
  SpExecSpill *s = g_new0 (SpExecSpill, 1);
  s->path = g_strdup (path);
  s->rows = g_array_new (FALSE, FALSE, sizeof (SpTraceRow));
  if (!parse (s, (const guint8 *) data, len, error))
    {
      sp_exec_spill_free (s);
      return NULL;
    }
  return s;
}
