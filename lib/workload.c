/* Model presets, model JSON, sharding options and DeepSpeed configs
 * (see shardplan/workload.h). */
#include "config.h"
#include "shardplan/workload.h"
#include "shardplan/error.h"
#include "workload-private.h"
#include "file-read.h"
#include "json-scan.h"
#include "json-text.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

/* ---- presets ------------------------------------------------------------- */

typedef struct {
  const char *name, *description;
  guint32 layers, hidden, heads, seq_len;
} Preset;

/* Shapes: gpt-1b and gpt-13b are the GPT-3 paper's "XL" (24×2048) and "13B"
 * (40×5120) rows (Brown et al. 2020, Table 2.1, with seq 2048); gpt-70b
 * uses Llama-2-70B's depth and width (80×8192, 64 heads, seq 4096; Touvron
 * et al. 2023) in the dense GPT layout above. */
static const Preset presets[] = {
  { "gpt-1b", "GPT 1.3B: 24 layers, hidden 2048, 16 heads, seq 2048 (GPT-3 XL shape)", 24, 2048,
    16, 2048 },
  { "gpt-13b", "GPT 13B (default): 40 layers, hidden 5120, 40 heads, seq 2048 (GPT-3 13B shape)",
    40, 5120, 40, 2048 },
  { "gpt-70b", "GPT 65B dense: 80 layers, hidden 8192, 64 heads, seq 4096 (Llama-2-70B depth/width)",
    80, 8192, 64, 4096 },
};
static const char *const preset_names[] = { "gpt-1b", "gpt-13b", "gpt-70b", NULL };

const char *const *
sp_model_preset_names (void)
{
  return preset_names;
}

static const Preset *
find_preset (const char *name)
{
  for (guint i = 0; name && i < G_N_ELEMENTS (presets); i++)
    if (strcmp (presets[i].name, name) == 0)
      return &presets[i];
  return NULL;
}

const char *
sp_model_preset_description (const char *name)
{
  const Preset *p = find_preset (name);
  return p ? p->description : NULL;
}

static void
model_defaults (SpModel *m)
{
  memset (m, 0, sizeof *m);
  g_strlcpy (m->name, "custom", sizeof m->name);
  m->vocab = SP_MODEL_DEFAULT_VOCAB;
  m->seq_len = 2048;
  m->micro_batch = 1;
  m->grad_accum = 1;
  m->dtype = SP_DTYPE_BFLOAT16;
  m->activation_checkpointing = TRUE;
  m->moe_top_k = 1;
  m->moe_every = 1;
  m->moe_capacity_factor = 1.0; /* DeepSpeed moe/layer.py MoE(capacity_factor=1.0) */
  m->moe_min_capacity = 4;      /* DeepSpeed moe/layer.py MoE(min_capacity=4) */
}

gboolean
sp_model_preset (const char *name, SpModel *out_model, GError **error)
{
  const Preset *p = find_preset (name);
  if (!p)
    {
      g_autofree char *list = g_strjoinv (", ", (char **) preset_names);
      g_autofree char *hint = sp_did_you_mean (name, preset_names, -1);
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_WORKLOAD,
                   "unknown model preset '%s'%s (presets: %s)", name ? name : "", hint, list);
      return FALSE;
    }
  SpModel m;
  model_defaults (&m);
  g_strlcpy (m.name, p->name, sizeof m.name);
  m.layers = p->layers;
  m.hidden = p->hidden;
  m.ffn_hidden = 4 * p->hidden;
  m.heads = p->heads;
  m.seq_len = p->seq_len;
  *out_model = m;
  return TRUE;
}

/* ---- parameter count ----------------------------------------------------- */

static guint64
dense_layer_params (guint64 h, guint64 f)
{
  return 4 * h * h + 2 * h * f + 9 * h + f;
}

static guint64
moe_layer_params (const SpModel *m, guint64 experts)
{
  guint64 h = m->hidden, f = m->ffn_hidden;
  /* attention + 2 LayerNorms, the gate (E × h), and each expert's MLP */
  return 4 * h * h + 8 * h + (guint64) m->moe_experts * h + experts * (2 * h * f + f + h);
}

guint64
sp_model_n_params (const SpModel *m)
{
  guint64 h = m->hidden;
  guint64 total = (guint64) m->vocab * h + (guint64) m->seq_len * h + 2 * h;
  for (guint32 i = 0; i < m->layers; i++)
    {
      gboolean moe = m->moe_experts > 0 && m->moe_every > 0 && i % m->moe_every == 0;
      total += moe ? moe_layer_params (m, m->moe_experts) : dense_layer_params (h, m->ffn_hidden);
    }
  return total;
}

gboolean
sp_model_validate (const SpModel *m, GError **error)
{
#define REQUIRE(cond, ...)                                                   \
  do {                                                                       \
    if (!(cond))                                                             \
      {                                                                      \
        g_set_error (error, SP_ERROR, SP_ERROR_INVALID_WORKLOAD, __VA_ARGS__); \
        return FALSE;                                                        \
      }                                                                      \
  } while (0)
  const guint32 big = 1u << 24; /* a 16M-wide layer is not a model anyone trains */
  REQUIRE (m->layers >= 1 && m->layers <= 100000, "model %s: layers %u is not in [1, 100000]",
           m->name, m->layers);
  REQUIRE (m->hidden >= 1 && m->hidden <= big, "model %s: hidden %u is not in [1, %u]", m->name,
           m->hidden, big);
  REQUIRE (m->ffn_hidden >= 1 && m->ffn_hidden <= big, "model %s: ffn_hidden %u is not in [1, %u]",
           m->name, m->ffn_hidden, big);
  REQUIRE (m->heads >= 1 && m->hidden % m->heads == 0,
           "model %s: heads %u must be >= 1 and divide hidden %u", m->name, m->heads, m->hidden);
  REQUIRE (m->vocab >= 1 && m->vocab <= big, "model %s: vocab %u is not in [1, %u]", m->name,
           m->vocab, big);
  REQUIRE (m->seq_len >= 1 && m->seq_len <= big, "model %s: seq_len %u is not in [1, %u]",
           m->name, m->seq_len, big);
  REQUIRE (m->micro_batch >= 1 && m->micro_batch <= 65536,
           "model %s: micro_batch %u is not in [1, 65536]", m->name, m->micro_batch);
  REQUIRE (m->grad_accum >= 1 && m->grad_accum <= 65536,
           "model %s: grad_accum %u is not in [1, 65536]", m->name, m->grad_accum);
  REQUIRE (m->dtype == SP_DTYPE_BFLOAT16 || m->dtype == SP_DTYPE_FLOAT16,
           "model %s: dtype %s is not bf16 or fp16", m->name,
           sp_dtype_name (m->dtype) ? sp_dtype_name (m->dtype) : "?");
  if (m->moe_experts > 0)
    {
      REQUIRE (m->moe_experts <= 65536, "model %s: moe experts %u is not in [0, 65536]", m->name,
               m->moe_experts);
      REQUIRE (m->moe_every >= 1 && m->moe_every <= m->layers,
               "model %s: moe every %u is not in [1, layers %u]", m->name, m->moe_every, m->layers);
      REQUIRE (m->moe_top_k >= 1 && m->moe_top_k <= m->moe_experts,
               "model %s: moe top_k %u is not in [1, experts %u]", m->name, m->moe_top_k,
               m->moe_experts);
      REQUIRE (isfinite (m->moe_capacity_factor) && m->moe_capacity_factor > 0
                   && m->moe_capacity_factor <= 1024,
               "model %s: moe capacity_factor %g is not in (0, 1024]", m->name,
               m->moe_capacity_factor);
      REQUIRE (m->moe_min_capacity <= big, "model %s: moe min_capacity %u is too large", m->name,
               m->moe_min_capacity);
    }
  /* Keep every element count far from 64-bit overflow. */
  REQUIRE ((double) m->vocab * m->hidden < 1e15 && (double) m->seq_len * m->micro_batch * m->vocab < 1e15
               && (double) m->layers * m->hidden * m->ffn_hidden * (m->moe_experts + 1) < 1e16,
           "model %s: too large to plan (parameter or activation counts beyond 1e15)", m->name);
#undef REQUIRE
  return TRUE;
}

/* ---- JSON helpers -------------------------------------------------------- */

/* An unsigned integer from a JSON number (integer, or a whole double such as
 * 5e8) in [min, max]. */
static gboolean
json_u64 (JsonNode *node, const char *src, const char *key, guint64 min, guint64 max,
          guint64 *out, GError **error)
{
  if (JSON_NODE_HOLDS_VALUE (node))
    {
      GType t = json_node_get_value_type (node);
      if (t == G_TYPE_INT64)
        {
          gint64 v = json_node_get_int (node);
          if (v >= 0 && (guint64) v >= min && (guint64) v <= max)
            {
              *out = (guint64) v;
              return TRUE;
            }
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_WORKLOAD,
                       "%s: %s = %" G_GINT64_FORMAT " is not in [%" G_GUINT64_FORMAT
                       ", %" G_GUINT64_FORMAT "]",
                       src, key, v, min, max);
          return FALSE;
        }
      if (t == G_TYPE_DOUBLE)
        {
          double d = json_node_get_double (node);
          if (isfinite (d) && d == floor (d) && d >= (double) min && d <= (double) max)
            {
              *out = (guint64) d;
              return TRUE;
            }
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_WORKLOAD,
                       "%s: %s = %g is not a whole number in [%" G_GUINT64_FORMAT
                       ", %" G_GUINT64_FORMAT "]",
                       src, key, d, min, max);
          return FALSE;
        }
    }
  g_set_error (error, SP_ERROR, SP_ERROR_INVALID_WORKLOAD, "%s: %s must be an integer", src, key);
  return FALSE;
}

static gboolean
json_u32 (JsonNode *node, const char *src, const char *key, guint32 min, guint32 max,
          guint32 *out, GError **error)
{
  guint64 v;
  if (!json_u64 (node, src, key, min, max, &v, error))
    return FALSE;
  *out = (guint32) v;
  return TRUE;
}

static gboolean
json_bool (JsonNode *node, const char *src, const char *key, gboolean *out, GError **error)
{
  if (JSON_NODE_HOLDS_VALUE (node) && json_node_get_value_type (node) == G_TYPE_BOOLEAN)
    {
      *out = json_node_get_boolean (node);
      return TRUE;
    }
  g_set_error (error, SP_ERROR, SP_ERROR_INVALID_WORKLOAD, "%s: %s must be true or false", src,
               key);
  return FALSE;
}

static gboolean
json_double (JsonNode *node, const char *src, const char *key, double *out, GError **error)
{
  if (JSON_NODE_HOLDS_VALUE (node))
    {
      GType t = json_node_get_value_type (node);
      if (t == G_TYPE_DOUBLE || t == G_TYPE_INT64)
        {
          *out = t == G_TYPE_DOUBLE ? json_node_get_double (node) : (double) json_node_get_int (node);
          return TRUE;
        }
    }
  g_set_error (error, SP_ERROR, SP_ERROR_INVALID_WORKLOAD, "%s: %s must be a number", src, key);
  return FALSE;
}

static const char *
json_string (JsonNode *node)
{
  if (JSON_NODE_HOLDS_VALUE (node) && json_node_get_value_type (node) == G_TYPE_STRING)
    return json_node_get_string (node);
  return NULL;
}

static JsonNode *
parse_json (const char *json, gssize length, const char *src, JsonParser **out_parser,
            GError **error)
{
  /* json-glib's parser recurses once per level: bound the depth first */
  gsize n = length < 0 ? strlen (json) : (gsize) length;
  if (!sp_json_check_for_parser (json, n, src, SP_ERROR_INVALID_WORKLOAD, error))
    return NULL;
  JsonParser *parser = json_parser_new ();
  GError *local = NULL;
  if (!json_parser_load_from_data (parser, json, length, &local))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_WORKLOAD, "%s: not valid JSON: %s", src,
                   local->message);
      g_error_free (local);
      g_object_unref (parser);
      return NULL;
    }
  JsonNode *root = json_parser_get_root (parser);
  if (!root || !JSON_NODE_HOLDS_OBJECT (root))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_WORKLOAD, "%s: the top level is not a JSON object",
                   src);
      g_object_unref (parser);
      return NULL;
    }
  *out_parser = parser;
  return root;
}

/* Model files and DeepSpeed configs are a few kB; anything this large is
 * not one (and json-glib's tree would cost ~20x the text). */
#define WORKLOAD_MAX_FILE ((gsize) 16 << 20)

static char *
read_file (const char *path, const char *what, gsize *out_len, GError **error)
{
  char *data = NULL;
  GError *local = NULL;
  if (!sp_file_read_bounded (path, WORKLOAD_MAX_FILE, what, &data, out_len, &local))
    {
      if (local->code == SP_ERROR_IO)
        g_set_error (error, SP_ERROR, SP_ERROR_IO, "cannot read %s", local->message);
      else
        g_propagate_error (error, g_steal_pointer (&local));
      g_clear_error (&local);
      return NULL;
    }
  return data;
}

/* ---- model JSON ---------------------------------------------------------- */

static gboolean
parse_moe (JsonObject *obj, const char *src, SpModel *m, GError **error)
{
  g_autoptr (GList) members = json_object_get_members (obj);
  for (GList *l = members; l; l = l->next)
    {
      const char *k = l->data;
      JsonNode *n = json_object_get_member (obj, k);
      g_autofree char *key = g_strdup_printf ("moe.%s", k);
      gboolean ok;
      if (strcmp (k, "experts") == 0)
        ok = json_u32 (n, src, key, 1, 65536, &m->moe_experts, error);
      else if (strcmp (k, "every") == 0)
        ok = json_u32 (n, src, key, 1, 100000, &m->moe_every, error);
      else if (strcmp (k, "top_k") == 0)
        ok = json_u32 (n, src, key, 1, 65536, &m->moe_top_k, error);
      else if (strcmp (k, "capacity_factor") == 0)
        ok = json_double (n, src, key, &m->moe_capacity_factor, error);
      else if (strcmp (k, "min_capacity") == 0)
        ok = json_u32 (n, src, key, 0, 1u << 24, &m->moe_min_capacity, error);
      else
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_WORKLOAD,
                       "%s: unknown key '%s' (accepted: experts, every, top_k, capacity_factor, "
                       "min_capacity)",
                       src, key);
          return FALSE;
        }
      if (!ok)
        return FALSE;
    }
  if (m->moe_experts == 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_WORKLOAD, "%s: moe.experts is required", src);
      return FALSE;
    }
  return TRUE;
}

gboolean
sp_model_load_data (const char *json, gssize length, const char *source_name, SpModel *out_model,
                    GError **error)
{
  const char *src = source_name ? source_name : "model";
  g_autoptr (JsonParser) parser = NULL;
  JsonNode *root = parse_json (json, length, src, &parser, error);
  if (!root)
    return FALSE;
  JsonObject *obj = json_node_get_object (root);
  SpModel m;
  model_defaults (&m);
  gboolean have_layers = FALSE, have_ffn = FALSE;
  guint64 n_params = 0;
  g_autoptr (GList) members = json_object_get_members (obj);
  for (GList *l = members; l; l = l->next)
    {
      const char *k = l->data;
      JsonNode *n = json_object_get_member (obj, k);
      gboolean ok = TRUE;
      const guint32 big = 1u << 24;
      if (strcmp (k, "name") == 0)
        {
          const char *s = json_string (n);
          /* json-glib decodes a lone surrogate (\ud800) to bytes that are
           * not UTF-8, which no JSON writer may then emit (fuzz finding M1) */
          if (!s || !*s || strlen (s) >= sizeof m.name || !g_utf8_validate (s, -1, NULL))
            {
              g_set_error (error, SP_ERROR, SP_ERROR_INVALID_WORKLOAD,
                           "%s: name must be a non-empty string of valid UTF-8 of at most %zu "
                           "bytes", src, sizeof m.name - 1);
              return FALSE;
            }
          g_strlcpy (m.name, s, sizeof m.name);
        }
      else if (strcmp (k, "layers") == 0)
        ok = json_u32 (n, src, k, 1, 100000, &m.layers, error), have_layers = TRUE;
      else if (strcmp (k, "hidden") == 0)
        ok = json_u32 (n, src, k, 1, big, &m.hidden, error);
      else if (strcmp (k, "ffn_hidden") == 0)
        ok = json_u32 (n, src, k, 1, big, &m.ffn_hidden, error), have_ffn = TRUE;
      else if (strcmp (k, "heads") == 0)
        ok = json_u32 (n, src, k, 1, big, &m.heads, error);
      else if (strcmp (k, "vocab") == 0)
        ok = json_u32 (n, src, k, 1, big, &m.vocab, error);
      else if (strcmp (k, "seq_len") == 0)
        ok = json_u32 (n, src, k, 1, big, &m.seq_len, error);
      else if (strcmp (k, "micro_batch") == 0)
        ok = json_u32 (n, src, k, 1, 65536, &m.micro_batch, error);
      else if (strcmp (k, "grad_accum") == 0)
        ok = json_u32 (n, src, k, 1, 65536, &m.grad_accum, error);
      else if (strcmp (k, "n_params") == 0)
        ok = json_u64 (n, src, k, 1, G_GUINT64_CONSTANT (1) << 50, &n_params, error);
      else if (strcmp (k, "activation_checkpointing") == 0)
        ok = json_bool (n, src, k, &m.activation_checkpointing, error);
      else if (strcmp (k, "dtype") == 0)
        {
          const char *s = json_string (n);
          SpDtype d;
          if (!s || !sp_dtype_from_name (s, &d) || (d != SP_DTYPE_BFLOAT16 && d != SP_DTYPE_FLOAT16))
            {
              g_set_error (error, SP_ERROR, SP_ERROR_INVALID_WORKLOAD,
                           "%s: dtype must be \"bf16\" or \"fp16\"", src);
              return FALSE;
            }
          m.dtype = d;
        }
      else if (strcmp (k, "moe") == 0)
        {
          if (!JSON_NODE_HOLDS_OBJECT (n))
            {
              g_set_error (error, SP_ERROR, SP_ERROR_INVALID_WORKLOAD, "%s: moe must be an object",
                           src);
              return FALSE;
            }
          ok = parse_moe (json_node_get_object (n), src, &m, error);
        }
      else
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_WORKLOAD,
                       "%s: unknown key '%s' (accepted: name, layers, hidden, ffn_hidden, heads, "
                       "vocab, seq_len, micro_batch, grad_accum, dtype, activation_checkpointing, "
                       "n_params, moe)",
                       src, k);
          return FALSE;
        }
      if (!ok)
        return FALSE;
    }
  if (m.hidden == 0 || m.heads == 0 || (!have_layers && n_params == 0))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_WORKLOAD,
                   "%s: a model needs hidden, heads and layers (or n_params)", src);
      return FALSE;
    }
  if (!have_ffn)
    m.ffn_hidden = (guint32) MIN ((guint64) m.hidden * 4, G_MAXUINT32);
  if (!have_layers)
    {
      /* Derive L from n_params: the count is affine in L. */
      m.layers = 1;
      double fixed = (double) sp_model_n_params (&m) - (double) dense_layer_params (m.hidden, m.ffn_hidden);
      m.layers = 2;
      double per = (double) sp_model_n_params (&m) - fixed - (double) dense_layer_params (m.hidden, m.ffn_hidden);
      per = per > 0 ? per : (double) dense_layer_params (m.hidden, m.ffn_hidden);
      double l = round (((double) n_params - fixed) / per);
      if (!(l >= 1 && l <= 100000))
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_WORKLOAD,
                       "%s: n_params %" G_GUINT64_FORMAT " gives no whole number of layers of "
                       "hidden %u (at least %.0f parameters for one layer)",
                       src, n_params, m.hidden, fixed + per);
          return FALSE;
        }
      m.layers = (guint32) l;
    }
  if (!sp_model_validate (&m, error))
    return FALSE;
  if (have_layers && n_params > 0)
    {
      double derived = (double) sp_model_n_params (&m);
      if (fabs (derived - (double) n_params) > 0.05 * derived)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_WORKLOAD,
                       "%s: n_params %" G_GUINT64_FORMAT " disagrees with the %.0f parameters of "
                       "%u layers of hidden %u by more than 5%%",
                       src, n_params, derived, m.layers, m.hidden);
          return FALSE;
        }
    }
  *out_model = m;
  return TRUE;
}

gboolean
sp_model_load_file (const char *path, SpModel *out_model, GError **error)
{
  gsize len;
  g_autofree char *data = read_file (path, "model file", &len, error);
  if (!data)
    return FALSE;
  return sp_model_load_data (data, (gssize) len, path, out_model, error);
}

gboolean
sp_model_open (const char *name_or_file, SpModel *out_model, GError **error)
{
  if (find_preset (name_or_file))
    return sp_model_preset (name_or_file, out_model, error);
  if (!g_file_test (name_or_file, G_FILE_TEST_EXISTS))
    {
      g_autofree char *list = g_strjoinv (", ", (char **) preset_names);
      g_autofree char *hint = sp_did_you_mean (name_or_file, preset_names, -1);
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_WORKLOAD,
                   "model '%s' is neither a preset (%s) nor a file%s", name_or_file, list, hint);
      return FALSE;
    }
  return sp_model_load_file (name_or_file, out_model, error);
}

char *
sp_model_to_json (const SpModel *m)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
#define U(key, v) (json_builder_set_member_name (b, key), json_builder_add_int_value (b, (gint64) (v)))
  json_builder_set_member_name (b, "name");
  json_builder_add_string_value (b, m->name);
  U ("layers", m->layers);
  U ("hidden", m->hidden);
  U ("ffn_hidden", m->ffn_hidden);
  U ("heads", m->heads);
  U ("vocab", m->vocab);
  U ("seq_len", m->seq_len);
  U ("micro_batch", m->micro_batch);
  U ("grad_accum", m->grad_accum);
  json_builder_set_member_name (b, "dtype");
  json_builder_add_string_value (b, m->dtype == SP_DTYPE_FLOAT16 ? "fp16" : "bf16");
  json_builder_set_member_name (b, "activation_checkpointing");
  json_builder_add_boolean_value (b, m->activation_checkpointing);
  if (m->moe_experts > 0)
    {
      json_builder_set_member_name (b, "moe");
      json_builder_begin_object (b);
      U ("experts", m->moe_experts);
      U ("every", m->moe_every);
      U ("top_k", m->moe_top_k);
      json_builder_set_member_name (b, "capacity_factor");
      json_builder_add_double_value (b, m->moe_capacity_factor);
      U ("min_capacity", m->moe_min_capacity);
      json_builder_end_object (b);
    }
#undef U
  json_builder_end_object (b);
  g_autoptr (JsonNode) root = json_builder_get_root (b);
  return sp_json_text (root, TRUE);
}

/* ---- sharding options and DeepSpeed configs ------------------------------ */

void
sp_sharding_options_init (SpShardingOptions *o)
{
  memset (o, 0, sizeof *o);
  o->zero_stage = 3;
  o->reduce_bucket_size = SP_DS_REDUCE_BUCKET_SIZE;
  o->allgather_bucket_size = SP_DS_ALLGATHER_BUCKET_SIZE;
  o->prefetch_bucket_size = SP_DS_PREFETCH_BUCKET_SIZE;
  o->param_persistence_threshold = SP_DS_PARAM_PERSISTENCE_THRESHOLD;
  o->max_reuse_distance = SP_DS_MAX_REUSE_DISTANCE;
  o->max_live_parameters = SP_DS_MAX_LIVE_PARAMETERS;
  o->overlap_comm = TRUE;
  o->contiguous_gradients = TRUE;
}

char *
sp_sharding_options_describe (const SpShardingOptions *o, guint32 world)
{
  GString *s = g_string_new (NULL);
  guint32 S = o->shard_size ? o->shard_size : world;
  g_string_append_printf (s, "zero%u S=%u%s %s reduce_bucket=%" G_GUINT64_FORMAT, o->zero_stage, S,
                          S == world && !o->hierarchical ? " (ZeRO-3)" : " (MiCS)",
                          o->hierarchical ? "hierarchical" : "flat", o->reduce_bucket_size);
  if (o->quantized_weights)
    g_string_append (s, " qwZ");
  if (o->quantized_gradients)
    g_string_append (s, " qgZ");
  if (o->hpz_partition_size > 1)
    g_string_append_printf (s, " hpZ=%u", o->hpz_partition_size);
  if (o->expert_parallel > 1)
    g_string_append_printf (s, " ep=%u", o->expert_parallel);
  if (!o->overlap_comm)
    g_string_append (s, " no-overlap-comm");
  return g_string_free (s, FALSE);
}

static gboolean
is_auto (JsonNode *n)
{
  const char *s = json_string (n);
  return s && strcmp (s, "auto") == 0;
}


static gboolean
apply_zero (JsonObject *z, const char *src, SpShardingOptions *o, GPtrArray *warn, GError **error)
{
  g_autoptr (GList) members = json_object_get_members (z);
  for (GList *l = members; l; l = l->next)
    {
      const char *k = l->data;
      JsonNode *n = json_object_get_member (z, k);
      g_autofree char *key = g_strdup_printf ("zero_optimization.%s", k);
      gboolean ok = TRUE;
      const guint64 max = G_GUINT64_CONSTANT (1) << 50;
      guint64 v64;
      if (strcmp (k, "stage") == 0)
        ok = json_u32 (n, src, key, 0, 3, &o->zero_stage, error);
      else if (strcmp (k, "mics_shard_size") == 0)
        {
          /* -1 (DeepSpeed's default) disables MiCS. */
          if (JSON_NODE_HOLDS_VALUE (n) && json_node_get_value_type (n) == G_TYPE_INT64
              && json_node_get_int (n) == -1)
            o->shard_size = 0;
          else
            ok = json_u32 (n, src, key, 1, 1u << 31, &o->shard_size, error);
        }
      else if (strcmp (k, "mics_hierarchical_params_gather") == 0)
        ok = json_bool (n, src, key, &o->hierarchical, error);
      else if (strcmp (k, "zero_quantized_weights") == 0)
        ok = json_bool (n, src, key, &o->quantized_weights, error);
      else if (strcmp (k, "zero_quantized_gradients") == 0)
        ok = json_bool (n, src, key, &o->quantized_gradients, error);
      else if (strcmp (k, "overlap_comm") == 0 || strcmp (k, "contiguous_gradients") == 0)
        {
          gboolean *dst = k[0] == 'o' ? &o->overlap_comm : &o->contiguous_gradients;
          if (is_auto (n))
            g_ptr_array_add (warn, g_strdup_printf ("%s: %s is \"auto\"; keeping %s", src, key,
                                                    *dst ? "true" : "false"));
          else
            ok = json_bool (n, src, key, dst, error);
        }
      else if (strcmp (k, "zero_hpz_partition_size") == 0)
        ok = json_u32 (n, src, key, 0, 1u << 31, &o->hpz_partition_size, error);
      else if (strcmp (k, "reduce_bucket_size") == 0 || strcmp (k, "allgather_bucket_size") == 0
               || strcmp (k, "stage3_prefetch_bucket_size") == 0
               || strcmp (k, "stage3_param_persistence_threshold") == 0
               || strcmp (k, "stage3_max_reuse_distance") == 0
               || strcmp (k, "stage3_max_live_parameters") == 0)
        {
          guint64 *dst = strcmp (k, "reduce_bucket_size") == 0      ? &o->reduce_bucket_size
                         : strcmp (k, "allgather_bucket_size") == 0 ? &o->allgather_bucket_size
                         : strcmp (k, "stage3_prefetch_bucket_size") == 0
                             ? &o->prefetch_bucket_size
                         : strcmp (k, "stage3_param_persistence_threshold") == 0
                             ? &o->param_persistence_threshold
                         : strcmp (k, "stage3_max_live_parameters") == 0
                             ? &o->max_live_parameters
                             : &o->max_reuse_distance;
          if (is_auto (n))
            g_ptr_array_add (warn, g_strdup_printf ("%s: %s is \"auto\"; keeping %" G_GUINT64_FORMAT,
                                                    src, key, *dst));
          else if ((ok = json_u64 (n, src, key, strcmp (k, "reduce_bucket_size") == 0 ? 1 : 0, max,
                                   &v64, error)))
            *dst = v64;
        }
      else
        g_ptr_array_add (warn, g_strdup_printf ("%s: key '%s' is not modelled; ignored", src, key));
      if (!ok)
        return FALSE;
    }
  return TRUE;
}

static gboolean
apply_precision (JsonNode *n, const char *src, const char *key, gboolean *out_enabled,
                 GPtrArray *warn, GError **error)
{
  if (!JSON_NODE_HOLDS_OBJECT (n))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_WORKLOAD, "%s: %s must be an object", src, key);
      return FALSE;
    }
  JsonObject *o = json_node_get_object (n);
  g_autoptr (GList) members = json_object_get_members (o);
  for (GList *l = members; l; l = l->next)
    {
      g_autofree char *k = g_strdup_printf ("%s.%s", key, (const char *) l->data);
      if (strcmp (l->data, "enabled") == 0)
        {
          JsonNode *e = json_object_get_member (o, l->data);
          if (is_auto (e))
            g_ptr_array_add (warn, g_strdup_printf ("%s: %s is \"auto\"; keeping the model's dtype", src, k));
          else if (!json_bool (e, src, k, out_enabled, error))
            return FALSE;
        }
      else
        g_ptr_array_add (warn, g_strdup_printf ("%s: key '%s' is not modelled; ignored", src, k));
    }
  return TRUE;
}

gboolean
sp_deepspeed_config_apply (const char *json, gssize length, const char *source_name,
                           SpShardingOptions *inout_sharding, SpModel *inout_model,
                           char ***out_warnings, GError **error)
{
  const char *src = source_name ? source_name : "deepspeed config";
  g_autoptr (JsonParser) parser = NULL;
  JsonNode *root = parse_json (json, length, src, &parser, error);
  if (!root)
    return FALSE;
  JsonObject *obj = json_node_get_object (root);
  SpShardingOptions o;
  sp_sharding_options_init (&o);
  if (inout_sharding)
    o = *inout_sharding;
  o.zero_stage = 0; /* DeepSpeed's default when zero_optimization is absent */
  SpModel m;
  model_defaults (&m);
  if (inout_model)
    m = *inout_model;
  gboolean bf16 = FALSE, fp16 = FALSE;
  g_autoptr (GPtrArray) warn = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GList) members = json_object_get_members (obj);
  for (GList *l = members; l; l = l->next)
    {
      const char *k = l->data;
      JsonNode *n = json_object_get_member (obj, k);
      gboolean ok = TRUE;
      if (strcmp (k, "zero_optimization") == 0)
        {
          if (!JSON_NODE_HOLDS_OBJECT (n))
            {
              g_set_error (error, SP_ERROR, SP_ERROR_INVALID_WORKLOAD,
                           "%s: zero_optimization must be an object", src);
              return FALSE;
            }
          ok = apply_zero (json_node_get_object (n), src, &o, warn, error);
        }
      else if (strcmp (k, "train_micro_batch_size_per_gpu") == 0
               || strcmp (k, "gradient_accumulation_steps") == 0)
        {
          guint32 *dst = k[0] == 't' ? &m.micro_batch : &m.grad_accum;
          if (is_auto (n))
            g_ptr_array_add (warn, g_strdup_printf ("%s: %s is \"auto\"; keeping %u", src, k, *dst));
          else
            ok = json_u32 (n, src, k, 1, 65536, dst, error);
        }
      else if (strcmp (k, "bf16") == 0)
        ok = apply_precision (n, src, k, &bf16, warn, error);
      else if (strcmp (k, "fp16") == 0)
        ok = apply_precision (n, src, k, &fp16, warn, error);
      else
        g_ptr_array_add (warn, g_strdup_printf ("%s: key '%s' is not modelled; ignored", src, k));
      if (!ok)
        return FALSE;
    }
  if (bf16 && fp16)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_WORKLOAD,
                   "%s: bf16.enabled and fp16.enabled are both true", src);
      return FALSE;
    }
  if (o.zero_stage != 3)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_UNSUPPORTED,
                   "%s: zero_optimization.stage is %u; only stage 3 (ZeRO-3 / MiCS / ZeRO++) is "
                   "modelled",
                   src, o.zero_stage);
      return FALSE;
    }
  if (bf16)
    m.dtype = SP_DTYPE_BFLOAT16;
  if (fp16)
    m.dtype = SP_DTYPE_FLOAT16;
  if (inout_sharding)
    *inout_sharding = o;
  if (inout_model)
    *inout_model = m;
  if (out_warnings)
    {
      g_ptr_array_add (warn, NULL);
      *out_warnings = (char **) g_ptr_array_free (g_steal_pointer (&warn), FALSE);
    }
  return TRUE;
}

gboolean
sp_deepspeed_config_apply_file (const char *path, SpShardingOptions *inout_sharding,
                                SpModel *inout_model, char ***out_warnings, GError **error)
{
  gsize len;
  g_autofree char *data = read_file (path, "DeepSpeed config", &len, error);
  if (!data)
    return FALSE;
  return sp_deepspeed_config_apply (data, (gssize) len, path, inout_sharding, inout_model,
                                    out_warnings, error);
}

guint
sp_wl_elt (const SpModel *model)
{
  return sp_dtype_bits (model->dtype) / 8;
}

/* The keys a planner's grid sets itself (sp_deepspeed_config_apply_knobs). */
static const char *const grid_zero_keys[] = {
  "stage", "mics_shard_size", "mics_hierarchical_params_gather", "zero_hpz_partition_size",
  "zero_quantized_weights", "zero_quantized_gradients", NULL,
};
static const char *const grid_top_keys[] = {
  "train_micro_batch_size_per_gpu", "gradient_accumulation_steps", NULL,
};

gboolean
sp_deepspeed_config_apply_knobs_file (const char *path, SpShardingOptions *inout_sharding,
                                      SpModel *inout_model, char ***out_overridden,
                                      char ***out_warnings, GError **error)
{
  g_return_val_if_fail (path != NULL, FALSE);
  gsize len;
  g_autofree char *data = read_file (path, "DeepSpeed config", &len, error);
  if (!data)
    return FALSE;
  g_autoptr (JsonParser) parser = NULL;
  JsonNode *root = parse_json (data, (gssize) len, path, &parser, error);
  if (!root)
    return FALSE;
  JsonObject *obj = json_node_get_object (root);
  g_autoptr (GPtrArray) over = g_ptr_array_new_with_free_func (g_free);
  for (const char *const *k = grid_top_keys; *k; k++)
    if (json_object_has_member (obj, *k))
      {
        g_ptr_array_add (over, g_strdup (*k));
        json_object_remove_member (obj, *k);
      }
  JsonNode *zn = json_object_get_member (obj, "zero_optimization");
  if (zn != NULL && !JSON_NODE_HOLDS_OBJECT (zn))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_WORKLOAD,
                   "%s: zero_optimization must be an object", path);
      return FALSE;
    }
  if (zn == NULL)
    json_object_set_object_member (obj, "zero_optimization", json_object_new ());
  JsonObject *z = json_object_get_object_member (obj, "zero_optimization");
  for (const char *const *k = grid_zero_keys; *k; k++)
    if (json_object_has_member (z, *k))
      {
        /* stage 3 is what the planner plans: nothing overridden */
        JsonNode *v = json_object_get_member (z, *k);
        gboolean three = strcmp (*k, "stage") == 0 && JSON_NODE_HOLDS_VALUE (v)
                         && json_node_get_value_type (v) == G_TYPE_INT64 && json_node_get_int (v) == 3;
        if (!three)
          g_ptr_array_add (over, g_strdup_printf ("zero_optimization.%s", *k));
        json_object_remove_member (z, *k);
      }
  json_object_set_int_member (z, "stage", 3);
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  json_generator_set_root (gen, root);
  gsize n = 0;
  g_autofree char *text = json_generator_to_data (gen, &n);
  if (!sp_deepspeed_config_apply (text, (gssize) n, path, inout_sharding, inout_model, out_warnings,
                                  error))
    return FALSE;
  if (out_overridden)
    {
      g_ptr_array_add (over, NULL);
      *out_overridden = (char **) g_ptr_array_free (g_steal_pointer (&over), FALSE);
    }
  return TRUE;
}
