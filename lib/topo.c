/* The topology model: INI parsing (GKeyFile), validation, INI output and
 * the block rank layout.  Presets live in topo-presets.c.
 *
 * One table (`fields`) drives the parser, the validator of sp_topo_new()
 * and the writer, so the three cannot disagree about a key's name, range
 * or default.  Range checks go through sp_parse_u64 / sp_parse_double so a
 * bad value reads the same whether it came from a file, a preset override
 * or a spec built in code. */
#include "config.h"
#include "shardplan/topo.h"
#include "shardplan/error.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <glib/gstdio.h>

struct _SpTopo {
  SpTopoSpec spec;
  gboolean has_inter; /* FALSE: single node and the INI had no [inter] */
};

/* Topology files are a dozen lines; refuse to slurp anything huge. */
#define TOPO_FILE_MAX_BYTES (1u << 20)

/* 2^31 ranks: the largest world a guint32 rank with a sign bit to spare holds. */
#define TOPO_MAX_WORLD (G_GUINT64_CONSTANT (1) << 31)

typedef enum { F_U32, F_DOUBLE, F_STRING, F_INTRA, F_FABRIC } FieldType;

typedef enum {
  NEED_ALWAYS,   /* required in every file */
  NEED_OPTIONAL, /* default from `defaults` */
  NEED_INTER,    /* required when the file has an [inter] section */
} FieldNeed;

typedef struct {
  const char *section;
  const char *key;
  FieldType type;
  gsize offset;
  double min, max;   /* numbers only */
  gboolean min_open; /* (min, max] instead of [min, max] */
  FieldNeed need;
} Field;

#define U32(sec, key, member, lo, hi, need) \
  { sec, key, F_U32, offsetof (SpTopoSpec, member), lo, hi, FALSE, need }
#define DBL(sec, key, member, lo, hi, open, need) \
  { sec, key, F_DOUBLE, offsetof (SpTopoSpec, member), lo, hi, open, need }

static const Field fields[] = {
  { "cluster", "name", F_STRING, offsetof (SpTopoSpec, name), 0, 0, FALSE, NEED_OPTIONAL },
  U32 ("cluster", "nodes", nodes, 1, 16777216, NEED_ALWAYS),
  U32 ("cluster", "gpus_per_node", gpus_per_node, 1, 1024, NEED_ALWAYS),
  { "gpu", "model", F_STRING, offsetof (SpTopoSpec, gpu_model), 0, 0, FALSE, NEED_ALWAYS },
  DBL ("gpu", "memory_gib", gpu_memory_gib, 0, 65536, TRUE, NEED_ALWAYS),
  DBL ("gpu", "tflops", gpu_tflops, 0, 1e6, TRUE, NEED_ALWAYS),
  { "intra", "kind", F_INTRA, offsetof (SpTopoSpec, intra_kind), 0, 0, FALSE, NEED_ALWAYS },
  DBL ("intra", "bandwidth_gbs", intra_bandwidth_gbs, 0, 1e5, TRUE, NEED_ALWAYS),
  DBL ("intra", "latency_us", intra_latency_us, 0, 1e6, FALSE, NEED_ALWAYS),
  U32 ("inter", "nics_per_node", nics_per_node, 1, 1024, NEED_INTER),
  DBL ("inter", "nic_gbps", nic_gbps, 0, 1e6, TRUE, NEED_INTER),
  DBL ("inter", "latency_us", inter_latency_us, 0, 1e6, FALSE, NEED_INTER),
  { "inter", "fabric", F_FABRIC, offsetof (SpTopoSpec, fabric), 0, 0, FALSE, NEED_OPTIONAL },
  DBL ("inter", "oversubscription", oversubscription, 1, 1024, FALSE, NEED_OPTIONAL),
};

static const char *const sections[] = { "cluster", "gpu", "intra", "inter" };

/* Defaults of optional keys; the [inter] numbers are placeholders for a
 * single-node file without [inter] (documented in topo.h). */
static const SpTopoSpec defaults = {
  .name = "custom",
  .nics_per_node = 1,
  .nic_gbps = 100,
  .inter_latency_us = 0,
  .fabric = SP_FABRIC_FAT_TREE,
  .oversubscription = 1,
};

static const char *const intra_names[] = { "nvswitch", "nvlink", "pcie", "shm" };
static const char *const fabric_names[] = { "single-switch", "fat-tree", "rail" };

const char *
sp_intra_kind_name (SpIntraKind kind)
{
  return (guint) kind < G_N_ELEMENTS (intra_names) ? intra_names[kind] : NULL;
}

const char *
sp_fabric_name (SpFabric fabric)
{
  return (guint) fabric < G_N_ELEMENTS (fabric_names) ? fabric_names[fabric] : NULL;
}

static const char *const *
enum_names (FieldType type, guint *out_n)
{
  *out_n = type == F_INTRA ? G_N_ELEMENTS (intra_names) : G_N_ELEMENTS (fabric_names);
  return type == F_INTRA ? intra_names : fabric_names;
}

/* "a, b, c or d" / "a, b, c and d" */
static char *
join_words (const char *const *words, guint n, const char *last_sep)
{
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < n; i++)
    {
      if (i > 0)
        g_string_append (s, i + 1 == n ? last_sep : ", ");
      g_string_append (s, words[i]);
    }
  return g_string_free (s, FALSE);
}

static char *
field_what (const Field *f)
{
  return g_strdup_printf ("[%s] %s", f->section, f->key);
}

static char *
field_accepts (const Field *f)
{
  switch (f->type)
    {
    case F_U32:
      return g_strdup_printf ("an integer in [%g, %g]", f->min, f->max);
    case F_DOUBLE:
      return g_strdup_printf ("a number in %c%g, %g]", f->min_open ? '(' : '[', f->min, f->max);
    case F_STRING:
      return g_strdup_printf ("1 to %d bytes of printable UTF-8 text", SP_TOPO_NAME_MAX - 1);
    case F_INTRA:
    case F_FABRIC:
      {
        guint n;
        const char *const *names = enum_names (f->type, &n);
        g_autofree char *list = join_words (names, n, " or ");
        return g_strdup_printf ("one of %s", list);
      }
    }
  g_return_val_if_reached (NULL);
}

/* Move a parser's error into `error` as SP_ERROR_INVALID_TOPOLOGY with
 * `prefix` ("topo.ini: ") in front. */
static void
propagate_topo_error (GError **error, GError *local, const char *prefix)
{
  g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY, "%s%s", prefix, local->message);
  g_error_free (local);
}

/* A number for field `f` from `text`, range-checked.  sp_parse_double only
 * knows closed ranges; for (min, max] we parse against [min, max], patch the
 * bracket in its message and reject min itself in the same words. */
static gboolean
parse_number (const Field *f, const char *text, const char *prefix, double *out_value,
              GError **error)
{
  g_autofree char *what = field_what (f);
  GError *local = NULL;
  if (f->type == F_U32)
    {
      guint64 v;
      if (!sp_parse_u64 (what, text, (guint64) f->min, (guint64) f->max, &v, &local))
        {
          propagate_topo_error (error, local, prefix);
          return FALSE;
        }
      *out_value = (double) v;
      return TRUE;
    }
  double v;
  if (!sp_parse_double (what, text, f->min, f->max, &v, &local))
    {
      if (f->min_open)
        {
          g_autofree char *closed = g_strdup_printf ("[%g, %g]", f->min, f->max);
          g_autofree char *open = g_strdup_printf ("(%g, %g]", f->min, f->max);
          GString *msg = g_string_new (local->message);
          g_string_replace (msg, closed, open, 1);
          g_free (local->message);
          local->message = g_string_free (msg, FALSE);
        }
      propagate_topo_error (error, local, prefix);
      return FALSE;
    }
  if (f->min_open && v <= f->min)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "%s%s %s is out of range: expected a number in (%g, %g]", prefix, what, text,
                   f->min, f->max);
      return FALSE;
    }
  *out_value = v;
  return TRUE;
}

static gboolean
check_string (const Field *f, const char *text, const char *prefix, GError **error)
{
  g_autofree char *what = field_what (f);
  g_autofree char *accepts = field_accepts (f);
  gsize len = strlen (text);
  if (len == 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY, "%s%s is empty: expected %s",
                   prefix, what, accepts);
      return FALSE;
    }
  gboolean printable = g_utf8_validate (text, -1, NULL);
  for (const char *p = text; printable && *p; p++)
    if ((guchar) *p < 0x20 || *p == 0x7f)
      printable = FALSE;
  if (!printable)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "%s%s contains control characters or invalid UTF-8: expected %s", prefix,
                   what, accepts);
      return FALSE;
    }
  if (g_ascii_isspace (text[0]) || g_ascii_isspace (text[len - 1]))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "%s%s '%s' begins or ends with a space: expected %s", prefix, what, text,
                   accepts);
      return FALSE;
    }
  if (len >= SP_TOPO_NAME_MAX)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "%s%s '%s' is %" G_GSIZE_FORMAT " bytes long: expected %s", prefix, what,
                   text, len, accepts);
      return FALSE;
    }
  return TRUE;
}

/* Store the already-checked text or number of field `f` into `spec`. */
static gboolean
parse_field (const Field *f, const char *text, const char *prefix, SpTopoSpec *spec,
             GError **error)
{
  char *slot = (char *) spec + f->offset;
  switch (f->type)
    {
    case F_U32:
    case F_DOUBLE:
      {
        double v;
        if (!parse_number (f, text, prefix, &v, error))
          return FALSE;
        if (f->type == F_U32)
          *(guint32 *) slot = (guint32) v;
        else
          *(double *) slot = v;
        return TRUE;
      }
    case F_STRING:
      if (!check_string (f, text, prefix, error))
        return FALSE;
      g_strlcpy (slot, text, SP_TOPO_NAME_MAX);
      return TRUE;
    case F_INTRA:
    case F_FABRIC:
      {
        guint n;
        const char *const *names = enum_names (f->type, &n);
        for (guint i = 0; i < n; i++)
          if (g_ascii_strcasecmp (text, names[i]) == 0)
            {
              *(int *) slot = (int) i;
              return TRUE;
            }
        g_autofree char *what = field_what (f);
        g_autofree char *accepts = field_accepts (f);
        g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY, "%s%s '%s' is not %s", prefix,
                     what, text, accepts);
        return FALSE;
      }
    }
  g_return_val_if_reached (FALSE);
}

/* Checks that involve more than one key. */
static gboolean
check_cross (const SpTopoSpec *spec, const char *prefix, GError **error)
{
  guint64 world = (guint64) spec->nodes * spec->gpus_per_node;
  if (world > TOPO_MAX_WORLD)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "%s[cluster] nodes %u × gpus_per_node %u = %" G_GUINT64_FORMAT
                   " ranks is too many: expected at most %" G_GUINT64_FORMAT " (2^31) ranks",
                   prefix, spec->nodes, spec->gpus_per_node, world, TOPO_MAX_WORLD);
      return FALSE;
    }
  if (spec->fabric == SP_FABRIC_SINGLE_SWITCH && spec->oversubscription != 1.0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "%s[inter] oversubscription %g does not apply to fabric = single-switch: "
                   "expected 1, or fabric = fat-tree or rail", prefix, spec->oversubscription);
      return FALSE;
    }
  return TRUE;
}

/* Every field of a spec built in code, as the parser would check it. */
static gboolean
check_spec (const SpTopoSpec *spec, GError **error)
{
  g_autofree char *prefix = NULL;
  if (memchr (spec->name, '\0', SP_TOPO_NAME_MAX) != NULL && g_utf8_validate (spec->name, -1, NULL))
    prefix = g_strdup_printf ("topology '%s': ", spec->name);
  else
    prefix = g_strdup ("topology: ");
  for (guint i = 0; i < G_N_ELEMENTS (fields); i++)
    {
      const Field *f = &fields[i];
      const char *slot = (const char *) spec + f->offset;
      SpTopoSpec scratch = *spec;
      char buf[G_ASCII_DTOSTR_BUF_SIZE];
      switch (f->type)
        {
        case F_U32:
          g_snprintf (buf, sizeof buf, "%u", *(const guint32 *) slot);
          if (!parse_field (f, buf, prefix, &scratch, error))
            return FALSE;
          break;
        case F_DOUBLE:
          g_ascii_formatd (buf, sizeof buf, "%.17g", *(const double *) slot);
          if (!parse_field (f, buf, prefix, &scratch, error))
            return FALSE;
          break;
        case F_STRING:
          if (memchr (slot, '\0', SP_TOPO_NAME_MAX) == NULL)
            {
              g_autofree char *what = field_what (f);
              g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                           "%s%s is not NUL-terminated within %d bytes", prefix, what,
                           SP_TOPO_NAME_MAX);
              return FALSE;
            }
          if (!check_string (f, slot, prefix, error))
            return FALSE;
          break;
        case F_INTRA:
        case F_FABRIC:
          {
            guint n;
            enum_names (f->type, &n);
            int v = *(const int *) slot;
            if (v < 0 || (guint) v >= n)
              {
                g_autofree char *what = field_what (f);
                g_autofree char *accepts = field_accepts (f);
                g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                             "%s%s value %d is not %s", prefix, what, v, accepts);
                return FALSE;
              }
            break;
          }
        }
    }
  return check_cross (spec, prefix, error);
}

static SpTopo *
topo_make (const SpTopoSpec *spec, gboolean has_inter)
{
  SpTopo *topo = g_new0 (SpTopo, 1);
  /* Copy field by field through memcpy of the whole struct, then clear the
   * tails of the name arrays so equal specs are equal bytes too. */
  memcpy (&topo->spec, spec, sizeof *spec);
  gsize n = strlen (spec->name);
  memset (topo->spec.name + n, 0, SP_TOPO_NAME_MAX - n);
  n = strlen (spec->gpu_model);
  memset (topo->spec.gpu_model + n, 0, SP_TOPO_NAME_MAX - n);
  topo->has_inter = has_inter;
  return topo;
}

SpTopo *
sp_topo_new (const SpTopoSpec *spec, GError **error)
{
  g_return_val_if_fail (spec != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);
  if (!check_spec (spec, error))
    return NULL;
  return topo_make (spec, TRUE);
}

void
sp_topo_free (SpTopo *topo)
{
  g_free (topo);
}

const SpTopoSpec *
sp_topo_spec (const SpTopo *topo)
{
  g_return_val_if_fail (topo != NULL, NULL);
  return &topo->spec;
}

guint32
sp_topo_world_size (const SpTopo *topo)
{
  g_return_val_if_fail (topo != NULL, 0);
  return topo->spec.nodes * topo->spec.gpus_per_node;
}

gboolean
sp_topo_has_inter (const SpTopo *topo)
{
  g_return_val_if_fail (topo != NULL, FALSE);
  return topo->has_inter;
}

void
sp_topo_rank_location (const SpTopo *topo, guint32 rank, guint32 *out_node, guint32 *out_local)
{
  g_return_if_fail (topo != NULL);
  g_return_if_fail (rank < sp_topo_world_size (topo));
  if (out_node)
    *out_node = rank / topo->spec.gpus_per_node;
  if (out_local)
    *out_local = rank % topo->spec.gpus_per_node;
}

gboolean
sp_topo_spec_equal (const SpTopoSpec *a, const SpTopoSpec *b)
{
  g_return_val_if_fail (a != NULL && b != NULL, FALSE);
  return strncmp (a->name, b->name, SP_TOPO_NAME_MAX) == 0 && a->nodes == b->nodes
         && a->gpus_per_node == b->gpus_per_node
         && strncmp (a->gpu_model, b->gpu_model, SP_TOPO_NAME_MAX) == 0
         && a->gpu_memory_gib == b->gpu_memory_gib && a->gpu_tflops == b->gpu_tflops
         && a->intra_kind == b->intra_kind && a->intra_bandwidth_gbs == b->intra_bandwidth_gbs
         && a->intra_latency_us == b->intra_latency_us && a->nics_per_node == b->nics_per_node
         && a->nic_gbps == b->nic_gbps && a->inter_latency_us == b->inter_latency_us
         && a->fabric == b->fabric && a->oversubscription == b->oversubscription;
}

SpTopo *
sp_topo_with_nodes (const SpTopo *topo, guint32 nodes, GError **error)
{
  g_return_val_if_fail (topo != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);
  if (nodes > 1 && !topo->has_inter)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "topology '%s' has no [inter] section, so it cannot span %u nodes: "
                   "add [inter] nics_per_node, nic_gbps and latency_us", topo->spec.name, nodes);
      return NULL;
    }
  SpTopoSpec spec = topo->spec;
  spec.nodes = nodes;
  if (!check_spec (&spec, error))
    return NULL;
  return topo_make (&spec, topo->has_inter);
}

/* ---- INI input ---------------------------------------------------------- */

/* Levenshtein distance, for "did you mean" on misspelt keys and sections. */
static guint
edit_distance (const char *a, const char *b)
{
  gsize la = strlen (a), lb = strlen (b);
  if (la > 64 || lb > 64)
    return G_MAXUINT;
  guint row[65];
  for (gsize j = 0; j <= lb; j++)
    row[j] = (guint) j;
  for (gsize i = 1; i <= la; i++)
    {
      guint diag = row[0];
      row[0] = (guint) i;
      for (gsize j = 1; j <= lb; j++)
        {
          guint up = row[j];
          guint best = MIN (row[j] + 1, row[j - 1] + 1);
          row[j] = MIN (best, diag + (a[i - 1] == b[j - 1] ? 0u : 1u));
          diag = up;
        }
    }
  return row[lb];
}

/* " (did you mean X?)" or "" */
static char *
suggestion (const char *word, const char *const *candidates, guint n)
{
  const char *best = NULL;
  guint best_d = 3; /* only suggest close matches */
  for (guint i = 0; i < n; i++)
    {
      guint d = edit_distance (word, candidates[i]);
      if (d < best_d)
        {
          best_d = d;
          best = candidates[i];
        }
    }
  return best ? g_strdup_printf (" (did you mean %s?)", best) : g_strdup ("");
}

static gboolean
section_known (const char *name)
{
  for (guint i = 0; i < G_N_ELEMENTS (sections); i++)
    if (strcmp (name, sections[i]) == 0)
      return TRUE;
  return FALSE;
}

static guint
section_keys (const char *section, const char **out_keys)
{
  guint n = 0;
  for (guint i = 0; i < G_N_ELEMENTS (fields); i++)
    if (strcmp (fields[i].section, section) == 0)
      out_keys[n++] = fields[i].key;
  return n;
}

static gboolean
check_names (GKeyFile *kf, const char *prefix, GError **error)
{
  gsize n_groups = 0;
  g_auto (GStrv) groups = g_key_file_get_groups (kf, &n_groups);
  for (gsize g = 0; g < n_groups; g++)
    {
      if (!section_known (groups[g]))
        {
          g_autofree char *hint = suggestion (groups[g], sections, G_N_ELEMENTS (sections));
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                       "%sunknown section [%s]%s: expected [cluster], [gpu], [intra] or [inter]",
                       prefix, groups[g], hint);
          return FALSE;
        }
      const char *known[G_N_ELEMENTS (fields)];
      guint n_known = section_keys (groups[g], known);
      g_auto (GStrv) keys = g_key_file_get_keys (kf, groups[g], NULL, NULL);
      for (gsize k = 0; keys && keys[k]; k++)
        {
          gboolean ok = FALSE;
          for (guint i = 0; i < n_known && !ok; i++)
            ok = strcmp (keys[k], known[i]) == 0;
          if (!ok)
            {
              g_autofree char *hint = suggestion (keys[k], known, n_known);
              g_autofree char *list = join_words (known, n_known, " or ");
              g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                           "%sunknown key '%s' in [%s]%s: expected %s", prefix, keys[k],
                           groups[g], hint, list);
              return FALSE;
            }
        }
    }
  return TRUE;
}

/* Reject what GKeyFile would choke on with an unhelpful message: nothing
 * at all, and bytes that are not text. */
static gboolean
check_text (const char *data, gsize length, const char *prefix, GError **error)
{
  gboolean blank = TRUE;
  for (gsize i = 0; i < length && blank; i++)
    blank = g_ascii_isspace (data[i]);
  if (blank)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "%sthe file is empty: expected a topology INI with [cluster], [gpu] and "
                   "[intra] sections", prefix);
      return FALSE;
    }
  const char *nul = memchr (data, '\0', length);
  const char *bad = NULL;
  if (nul != NULL || !g_utf8_validate (data, (gssize) length, &bad))
    {
      gsize at = (gsize) ((nul ? nul : bad) - data);
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "%snot a text file (byte 0x%02x at offset %" G_GSIZE_FORMAT
                   "): expected a topology INI file", prefix, (guchar) data[at], at);
      return FALSE;
    }
  for (gsize i = 0; i < length; i++)
    {
      guchar c = (guchar) data[i];
      if (c < 0x20 && c != '\n' && c != '\r' && c != '\t')
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                       "%snot a text file (control byte 0x%02x at offset %" G_GSIZE_FORMAT
                       "): expected a topology INI file", prefix, c, i);
          return FALSE;
        }
    }
  return TRUE;
}

static SpTopo *
load_keyfile (GKeyFile *kf, const char *prefix, GError **error)
{
  gsize n_groups = 0;
  g_auto (GStrv) groups = g_key_file_get_groups (kf, &n_groups);
  if (n_groups == 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "%sno sections: expected a topology INI with [cluster], [gpu] and [intra] "
                   "sections", prefix);
      return NULL;
    }
  if (!check_names (kf, prefix, error))
    return NULL;
  for (guint s = 0; s < 3; s++) /* cluster, gpu, intra are required */
    if (!g_key_file_has_group (kf, sections[s]))
      {
        const char *keys[G_N_ELEMENTS (fields)];
        guint n = section_keys (sections[s], keys);
        g_autofree char *list = join_words (keys, n, " and ");
        g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                     "%s[%s] section is missing: expected %s", prefix, sections[s], list);
        return NULL;
      }
  gboolean has_inter = g_key_file_has_group (kf, "inter");

  SpTopoSpec spec = defaults;
  for (guint i = 0; i < G_N_ELEMENTS (fields); i++)
    {
      const Field *f = &fields[i];
      if (!g_key_file_has_key (kf, f->section, f->key, NULL))
        {
          if (f->need == NEED_ALWAYS || (f->need == NEED_INTER && has_inter))
            {
              g_autofree char *what = field_what (f);
              g_autofree char *accepts = field_accepts (f);
              g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                           "%s%s is missing: expected %s", prefix, what, accepts);
              return NULL;
            }
          continue;
        }
      GError *local = NULL;
      /* Strings go through get_string (escapes, UTF-8), numbers through
       * the raw value so the parser sees exactly what was written. */
      g_autofree char *text = f->type == F_STRING
                                  ? g_key_file_get_string (kf, f->section, f->key, &local)
                                  : g_key_file_get_value (kf, f->section, f->key, &local);
      if (text == NULL)
        {
          propagate_topo_error (error, local, prefix);
          return NULL;
        }
      if (f->type != F_STRING)
        g_strstrip (text);
      if (!parse_field (f, text, prefix, &spec, error))
        return NULL;
    }
  if (!has_inter && spec.nodes > 1)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "%s[inter] section is missing: it is required when nodes > 1 (nodes = %u)",
                   prefix, spec.nodes);
      return NULL;
    }
  if (!check_cross (&spec, prefix, error))
    return NULL;
  return topo_make (&spec, has_inter);
}

/* GKeyFile messages quote the offending line; keep them one short line. */
static char *
sanitize_message (const char *msg)
{
  GString *s = g_string_new (NULL);
  for (const char *p = msg; *p && s->len < 200; p++)
    g_string_append_c (s, ((guchar) *p < 0x20) ? ' ' : *p);
  if (*msg && strlen (msg) > 200)
    g_string_append (s, "…");
  return g_string_free (s, FALSE);
}

SpTopo *
sp_topo_load_data (const char *data, gssize length, const char *source_name, GError **error)
{
  g_return_val_if_fail (data != NULL || length == 0, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);
  gsize len = length < 0 ? strlen (data) : (gsize) length;
  g_autofree char *prefix = g_strdup_printf ("%s: ", source_name ? source_name : "topology");
  if (!check_text (data ? data : "", len, prefix, error))
    return NULL;
  g_autoptr (GKeyFile) kf = g_key_file_new ();
  GError *local = NULL;
  if (!g_key_file_load_from_data (kf, data, len, G_KEY_FILE_NONE, &local))
    {
      g_autofree char *msg = sanitize_message (local->message);
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY, "%snot a valid INI file: %s",
                   prefix, msg);
      g_error_free (local);
      return NULL;
    }
  return load_keyfile (kf, prefix, error);
}

SpTopo *
sp_topo_load_file (const char *path, GError **error)
{
  g_return_val_if_fail (path != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);
  GStatBuf st;
  if (g_stat (path, &st) != 0)
    {
      int e = errno;
      g_set_error (error, SP_ERROR, SP_ERROR_IO, "cannot read topology file '%s': %s", path,
                   g_strerror (e));
      return NULL;
    }
  if (S_ISDIR (st.st_mode))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_IO,
                   "cannot read topology file '%s': it is a directory", path);
      return NULL;
    }
  FILE *fp = g_fopen (path, "rb");
  if (fp == NULL)
    {
      int e = errno;
      g_set_error (error, SP_ERROR, SP_ERROR_IO, "cannot read topology file '%s': %s", path,
                   g_strerror (e));
      return NULL;
    }
  /* Read at most TOPO_FILE_MAX_BYTES + 1 so a huge file (or a device) is
   * refused instead of read whole. */
  g_autofree char *buf = g_malloc (TOPO_FILE_MAX_BYTES + 1);
  gsize n = fread (buf, 1, TOPO_FILE_MAX_BYTES + 1, fp);
  int read_failed = ferror (fp);
  int e = errno;
  fclose (fp);
  if (read_failed)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_IO, "cannot read topology file '%s': %s", path,
                   g_strerror (e));
      return NULL;
    }
  if (n > TOPO_FILE_MAX_BYTES)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "%s: file is larger than %u bytes: expected a topology INI file", path,
                   TOPO_FILE_MAX_BYTES);
      return NULL;
    }
  return sp_topo_load_data (buf, (gssize) n, path, error);
}

SpTopo *
sp_topo_open (const char *file_or_preset, guint32 nodes, GError **error)
{
  g_return_val_if_fail (file_or_preset != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);
  if (sp_topo_preset_description (file_or_preset) != NULL)
    return sp_topo_new_preset (file_or_preset, nodes, error);
  if (!g_file_test (file_or_preset, G_FILE_TEST_EXISTS))
    {
      const char *const *names = sp_topo_preset_names ();
      g_autofree char *list = g_strjoinv (", ", (char **) names);
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "topology '%s' is neither a file nor a preset (presets: %s)", file_or_preset,
                   list);
      return NULL;
    }
  GError *local = NULL;
  g_autoptr (SpTopo) topo = sp_topo_load_file (file_or_preset, &local);
  if (topo == NULL)
    {
      /* On the command line an unreadable --topology is bad input (exit 2). */
      local->code = SP_ERROR_INVALID_TOPOLOGY;
      g_propagate_error (error, local);
      return NULL;
    }
  if (nodes == 0 || nodes == topo->spec.nodes)
    return g_steal_pointer (&topo);
  return sp_topo_with_nodes (topo, nodes, error);
}

/* ---- INI output --------------------------------------------------------- */

/* The shortest of %.15g, %.16g, %.17g that reads back to the same double,
 * so 0.6 prints as "0.6" and the round trip stays exact. */
static void
format_double (char *buf, gsize size, double v)
{
  static const char *const formats[] = { "%.15g", "%.16g", "%.17g" };
  for (guint i = 0; i < G_N_ELEMENTS (formats); i++)
    {
      g_ascii_formatd (buf, (int) size, formats[i], v);
      if (g_ascii_strtod (buf, NULL) == v)
        return;
    }
}

char *
sp_topo_to_ini (const SpTopo *topo)
{
  g_return_val_if_fail (topo != NULL, NULL);
  const SpTopoSpec *spec = &topo->spec;
  g_autoptr (GKeyFile) kf = g_key_file_new ();
  for (guint i = 0; i < G_N_ELEMENTS (fields); i++)
    {
      const Field *f = &fields[i];
      if (!topo->has_inter && strcmp (f->section, "inter") == 0)
        continue;
      const char *slot = (const char *) spec + f->offset;
      char buf[G_ASCII_DTOSTR_BUF_SIZE];
      switch (f->type)
        {
        case F_U32:
          g_snprintf (buf, sizeof buf, "%u", *(const guint32 *) slot);
          g_key_file_set_value (kf, f->section, f->key, buf);
          break;
        case F_DOUBLE:
          format_double (buf, sizeof buf, *(const double *) slot);
          g_key_file_set_value (kf, f->section, f->key, buf);
          break;
        case F_STRING:
          g_key_file_set_string (kf, f->section, f->key, slot);
          break;
        case F_INTRA:
          g_key_file_set_value (kf, f->section, f->key, sp_intra_kind_name (spec->intra_kind));
          break;
        case F_FABRIC:
          g_key_file_set_value (kf, f->section, f->key, sp_fabric_name (spec->fabric));
          break;
        }
    }
  g_key_file_set_comment (kf, NULL, NULL,
                          " shardplan topology.  Units: memory_gib GiB, tflops dense bf16 "
                          "TFLOP/s,\n bandwidth_gbs GB/s per GPU one direction, nic_gbps Gbit/s "
                          "per NIC one direction,\n latency_us microseconds.",
                          NULL);
  return g_key_file_to_data (kf, NULL, NULL);
}
