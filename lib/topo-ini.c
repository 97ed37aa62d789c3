/* Topology INI text in (GKeyFile) and out, and sp_topo_open().  The keys,
 * their ranges and defaults are the table in topo.c. */
#include "config.h"
#include "shardplan/topo.h"
#include "shardplan/error.h"
#include "topo-private.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <glib/gstdio.h>

/* Topology files are a dozen lines; refuse to slurp anything huge. */
#define TOPO_FILE_MAX_BYTES ((guint) SP_TOPO_MAX_FILE_BYTES)

static gboolean
section_known (const char *name)
{
  for (guint i = 0; i < SP_TOPO_N_SECTIONS; i++)
    if (strcmp (name, sp_topo_sections[i]) == 0)
      return TRUE;
  return FALSE;
}

static guint
section_keys (const char *section, const char **out_keys)
{
  guint n = 0;
  for (guint i = 0; i < SP_TOPO_N_FIELDS; i++)
    if (strcmp (sp_topo_fields[i].section, section) == 0)
      out_keys[n++] = sp_topo_fields[i].key;
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
          g_autofree char *hint = sp_did_you_mean (groups[g], sp_topo_sections, SP_TOPO_N_SECTIONS);
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                       "%sunknown section [%s]%s: expected [cluster], [gpu], [intra], [inter], "
                       "[calibration] or [nccl]",
                       prefix, groups[g], hint);
          return FALSE;
        }
      const char *known[SP_TOPO_N_FIELDS];
      guint n_known = section_keys (groups[g], known);
      g_auto (GStrv) keys = g_key_file_get_keys (kf, groups[g], NULL, NULL);
      for (gsize k = 0; keys && keys[k]; k++)
        {
          gboolean ok = FALSE;
          for (guint i = 0; i < n_known && !ok; i++)
            ok = strcmp (keys[k], known[i]) == 0;
          if (!ok)
            {
              g_autofree char *hint = sp_did_you_mean (keys[k], known, n_known);
              g_autofree char *list = sp_topo_join_words (known, n_known, " or ");
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

/* What GKeyFile lets through silently or reports without a line: a key
 * given twice in a section, also across two appearances of the section
 * (GKeyFile keeps the last value, so a stray second `nic_gbps` would win
 * unnoticed), and a line that is neither a comment, a [section] nor a
 * key = value pair.  Run on text check_text has accepted. */

static gboolean
bad_line (guint line, const char *text, const char *prefix, GError **error)
{
  g_autofree char *shown = sp_topo_excerpt (text, 64);
  g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
               "%sline %u: '%s' is not a key = value pair, a [section] or a comment (# or ;)",
               prefix,
               line, shown);
  return FALSE;
}

static gboolean
check_lines (const char *data, gsize length, const char *prefix, GError **error)
{
  g_autoptr (GHashTable) seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_autofree char *section = NULL;
  guint line = 0;
  for (gsize at = 0; at < length;)
    {
      const char *start = data + at;
      const char *nl = memchr (start, '\n', length - at);
      gsize n = nl ? (gsize) (nl - start) : length - at;
      at += n + (nl != NULL);
      line++;
      g_autofree char *text = g_strndup (start, n);
      g_strstrip (text);
      if (*text == '\0' || *text == '#' || *text == ';')
        continue;
      if (*text == '[')
        {
          const char *close = strrchr (text, ']');
          if (close == NULL || close == text + 1)
            return bad_line (line, text, prefix, error); /* no ] or no name */
          /* a section may appear again (GKeyFile merges them, and
           * `cat >> topo.ini` of a [section] with more keys is a fair
           * way to extend a file); its keys still count once */
          g_free (section);
          section = g_strndup (text + 1, (gsize) (close - text - 1));
          continue;
        }
      char *eq = strchr (text, '=');
      if (eq == NULL || eq == text)
        return bad_line (line, text, prefix, error); /* no = or no key */
      *eq = '\0';
      g_strstrip (text);
      if (strchr (eq + 1, '\\') != NULL)
        {
          /* GKeyFile's escapes: no topology value needs one, and a run of
           * invalid ones makes GLib 2.74 set its GError twice (a warning
           * and a leak; fuzz finding I1, tests/fuzz/README) */
          g_autofree char *key = sp_topo_excerpt (text, 64);
          g_autofree char *sec = sp_topo_excerpt (section ? section : "", 64);
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                       "%s[%s] %s (line %u): a backslash in the value (topology values are names "
                       "and numbers, without escapes)", prefix, sec, key, line);
          return FALSE;
        }
      if (section == NULL)
        continue; /* GKeyFile reports a key before any section */
      if (strchr (text, '[') != NULL)
        {
          /* GKeyFile's localized value (key[locale]): stored apart and
           * never read, so it would be ignored without a word */
          g_autofree char *key = sp_topo_excerpt (text, 64);
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                       "%sline %u: key '%s': a topology key has no [locale] suffix", prefix, line,
                       key);
          return FALSE;
        }
      g_autofree char *id = g_strdup_printf ("[%s] %s", section, text);
      guint first = GPOINTER_TO_UINT (g_hash_table_lookup (seen, id));
      if (first != 0)
        {
          g_autofree char *sec = sp_topo_excerpt (section, 64), *key = sp_topo_excerpt (text, 64);
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                       "%sline %u: [%s] %s is given twice (first on line %u): give each key once",
                       prefix, line, sec, key, first);
          return FALSE;
        }
      g_hash_table_insert (seen, g_steal_pointer (&id), GUINT_TO_POINTER (line));
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
    if (!g_key_file_has_group (kf, sp_topo_sections[s]))
      {
        const char *all[SP_TOPO_N_FIELDS], *keys[SP_TOPO_N_FIELDS];
        guint n_all = section_keys (sp_topo_sections[s], all), n = 0;
        for (guint k = 0; k < n_all; k++) /* the keys the section needs */
          for (guint i = 0; i < SP_TOPO_N_FIELDS; i++)
            if (sp_topo_fields[i].key == all[k] && sp_topo_fields[i].need == SP_NEED_ALWAYS)
              keys[n++] = all[k];
        g_autofree char *list = sp_topo_join_words (keys, n, " and ");
        g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                     "%s[%s] section is missing: expected %s", prefix, sp_topo_sections[s], list);
        return NULL;
      }
  gboolean has_inter = g_key_file_has_group (kf, "inter");

  SpTopoSpec spec = sp_topo_defaults;
  for (guint i = 0; i < SP_TOPO_N_FIELDS; i++)
    {
      const SpTopoField *f = &sp_topo_fields[i];
      if (!g_key_file_has_key (kf, f->section, f->key, NULL))
        {
          if (f->need == SP_NEED_ALWAYS || (f->need == SP_NEED_INTER && has_inter))
            {
              g_autofree char *what = sp_topo_field_what (f);
              g_autofree char *accepts = sp_topo_field_accepts (f);
              g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                           "%s%s is missing: expected %s", prefix, what, accepts);
              return NULL;
            }
          continue;
        }
      GError *local = NULL;
      /* Strings go through get_string (escapes, UTF-8), numbers through
       * the raw value so the parser sees exactly what was written. */
      g_autofree char *text = f->type == SP_FIELD_STRING
                                  ? g_key_file_get_string (kf, f->section, f->key, &local)
                                  : g_key_file_get_value (kf, f->section, f->key, &local);
      if (text == NULL)
        {
          g_autofree char *what = sp_topo_field_what (f);
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY, "%s%s: %s", prefix, what,
                       local->message);
          g_error_free (local);
          return NULL;
        }
      if (f->type != SP_FIELD_STRING)
        g_strstrip (text);
      if (!sp_topo_parse_field (f, text, prefix, &spec, error))
        return NULL;
    }
  if (!has_inter && spec.nodes > 1)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "%s[inter] section is missing: it is required when nodes > 1 (nodes = %u)",
                   prefix, spec.nodes);
      return NULL;
    }
  if (!sp_topo_check_cross (&spec, prefix, error))
    return NULL;
  return sp_topo_make (&spec, has_inter);
}

/* Comments GKeyFile does not know, as most INI dialects write them
 * (Python's configparser): a line whose first character after blanks is
 * ';', and, in the datasheet sections ([cluster], [gpu], [intra],
 * [inter]: names, choices and numbers), the rest of a value's line from a
 * '#' or ';' after a blank ("nic_gbps = 400  # NDR"), with the blanks
 * before it.  [calibration] and [nccl] values are lists that use ';'
 * themselves: nothing is cut there.  A copy with those lines turned into
 * '#' comments and those tails cut, line for line (line numbers stay
 * right), or NULL where there is nothing to change.  Run on text
 * check_text has accepted. */
static char *
uncomment (const char *data, gsize len)
{
  static const char *const datasheet[] = { "cluster", "gpu", "intra", "inter" };
  GString *out = NULL;
  gsize copied = 0; /* data[0, copied) is in out */
  gboolean cut = FALSE; /* in a datasheet section */
  for (gsize i = 0; i < len;)
    {
      gsize end = i;
      while (end < len && data[end] != '\n')
        end++;
      gsize j = i;
      while (j < end && g_ascii_isspace (data[j]))
        j++;
      gsize drop_from = end, drop_to = end; /* data[drop_from, drop_to) goes */
      gboolean semi = j < end && data[j] == ';';
      if (j < end && data[j] == '[')
        {
          const char *close = memchr (data + j, ']', end - j);
          gsize n = close ? (gsize) (close - data - j - 1) : 0;
          cut = FALSE;
          for (guint k = 0; k < G_N_ELEMENTS (datasheet) && close; k++)
            cut = cut || (strlen (datasheet[k]) == n && memcmp (data + j + 1, datasheet[k], n) == 0);
        }
      else if (cut && !semi && j < end && data[j] != '#')
        {
          const char *eq = memchr (data + j, '=', end - j);
          for (gsize k = eq ? (gsize) (eq - data) + 1 : end; k < end; k++)
            if ((data[k] == '#' || data[k] == ';') && (data[k - 1] == ' ' || data[k - 1] == '\t'))
              {
                drop_from = k;
                while (drop_from > (gsize) (eq - data) + 1
                       && (data[drop_from - 1] == ' ' || data[drop_from - 1] == '\t'))
                  drop_from--;
                drop_to = end > k && data[end - 1] == '\r' ? end - 1 : end; /* keep a CR */
                break;
              }
        }
      if (semi || drop_from < drop_to)
        {
          if (out == NULL)
            out = g_string_sized_new (len);
          g_string_append_len (out, data + copied, (gssize) ((semi ? j : drop_from) - copied));
          if (semi)
            {
              g_string_append_c (out, '#');
              copied = j + 1;
            }
          else
            copied = drop_to;
        }
      i = end + 1;
    }
  if (out == NULL)
    return NULL;
  g_string_append_len (out, data + copied, (gssize) (len - copied));
  return g_string_free (out, FALSE);
}

SpTopo *
sp_topo_load_data (const char *data, gssize length, const char *source_name, GError **error)
{
  g_return_val_if_fail (data != NULL || length == 0, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);
  gsize len = length < 0 ? strlen (data) : (gsize) length;
  /* a UTF-8 byte order mark, as some Windows editors write: not content */
  if (data != NULL && len >= 3 && memcmp (data, "\xEF\xBB\xBF", 3) == 0)
    data += 3, len -= 3;
  g_autofree char *prefix = g_strdup_printf ("%s: ", source_name ? source_name : "topology");
  if (!check_text (data ? data : "", len, prefix, error))
    return NULL;
  g_autofree char *plain = uncomment (data, len);
  if (plain != NULL)
    data = plain, len = strlen (plain);
  if (!check_lines (data, len, prefix, error))
    return NULL;
  g_autoptr (GKeyFile) kf = g_key_file_new ();
  GError *local = NULL;
  if (!g_key_file_load_from_data (kf, data, len, G_KEY_FILE_NONE, &local))
    {
      g_autofree char *msg = sp_topo_excerpt (local->message, 200);
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
      g_autofree char *hint = sp_did_you_mean (file_or_preset, names, -1);
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "topology '%s' is neither a file nor a preset%s (presets: %s)", file_or_preset,
                   hint, list);
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
void
sp_topo_format_double (char *buf, gsize size, double v)
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
  for (guint i = 0; i < SP_TOPO_N_FIELDS; i++)
    {
      const SpTopoField *f = &sp_topo_fields[i];
      if (!topo->has_inter && strcmp (f->section, "inter") == 0)
        continue;
      if (!sp_topo_spec_calibrated (spec) && strcmp (f->section, "calibration") == 0)
        continue;
      const char *slot = (const char *) spec + f->offset;
      char buf[G_ASCII_DTOSTR_BUF_SIZE];
      switch (f->type)
        {
        case SP_FIELD_U32:
          if (f->need == SP_NEED_ZERO && *(const guint32 *) slot == 0)
            break; /* not given: left out */
          g_snprintf (buf, sizeof buf, "%u", *(const guint32 *) slot);
          g_key_file_set_value (kf, f->section, f->key, buf);
          break;
        case SP_FIELD_DOUBLE:
          if (f->need == SP_NEED_UNSET && *(const double *) slot == SP_TOPO_LATENCY_UNSET)
            break; /* not given: left out, so it reads back unset */
          if (f->need == SP_NEED_ZERO && *(const double *) slot == 0)
            break; /* not given: left out */
          sp_topo_format_double (buf, sizeof buf, *(const double *) slot);
          g_key_file_set_value (kf, f->section, f->key, buf);
          break;
        case SP_FIELD_STRING:
          g_key_file_set_string (kf, f->section, f->key, slot);
          break;
        case SP_FIELD_INTRA:
          g_key_file_set_value (kf, f->section, f->key, sp_intra_kind_name (spec->intra_kind));
          break;
        case SP_FIELD_FABRIC:
          g_key_file_set_value (kf, f->section, f->key, sp_fabric_name (spec->fabric));
          break;
        case SP_FIELD_TRANSPORT:
          g_key_file_set_value (kf, f->section, f->key, sp_transport_name (spec->transport));
          break;
        case SP_FIELD_HOST_CPU:
          if (spec->host_cpu != SP_HOST_CPU_DEFAULT)
            g_key_file_set_value (kf, f->section, f->key, sp_host_cpu_name (spec->host_cpu));
          break;
        case SP_FIELD_MNNVL:
          if (spec->mnnvl != SP_MNNVL_ON)
            g_key_file_set_value (kf, f->section, f->key, sp_mnnvl_name (spec->mnnvl));
          break;
        case SP_FIELD_NIC_PATH:
          if (spec->nic_path != SP_NIC_PATH_DEFAULT)
            g_key_file_set_value (kf, f->section, f->key, sp_nic_path_name (spec->nic_path));
          break;
        case SP_FIELD_NCCL_ALGO:
        case SP_FIELD_NCCL_PROTO:
          {
            g_autofree char *v = sp_topo_nccl_text ((const guint8 *) slot,
                                                    f->type == SP_FIELD_NCCL_PROTO);
            if (v != NULL) /* no restriction: left out */
              g_key_file_set_value (kf, f->section, f->key, v);
            break;
          }
        case SP_FIELD_CAL_STD_ERRORS:
        case SP_FIELD_CAL_CORRELATIONS:
          {
            const SpTopoCalErrors *e = (const SpTopoCalErrors *) slot;
            g_autofree char *v = f->type == SP_FIELD_CAL_STD_ERRORS
                                     ? sp_topo_cal_std_errors_text (e)
                                     : sp_topo_cal_correlations_text (e);
            if (v != NULL) /* nothing to say: left out */
              g_key_file_set_value (kf, f->section, f->key, v);
            break;
          }
        case SP_FIELD_NCCL_VERSION:
          {
            guint32 v = *(const guint32 *) slot;
            if (v != 0) /* not given: left out */
              {
                g_autofree char *text = sp_topo_nccl_version_text ((int) v);
                g_key_file_set_value (kf, f->section, f->key, text);
              }
            break;
          }
        }
    }
  g_key_file_set_comment (kf, NULL, NULL,
                          " shardplan topology.  Units: memory_gib GiB, tflops dense bf16 "
                          "TFLOP/s,\n bandwidth_gbs GB/s per GPU one direction, nic_gbps Gbit/s "
                          "per NIC one direction,\n latency_us microseconds.",
                          NULL);
  return g_key_file_to_data (kf, NULL, NULL);
}
