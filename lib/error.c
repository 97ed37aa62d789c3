/* Error domain and the number parsers every option and INI key goes through,
 * so that "0", "-3", "1e3", "99999999999999999999" and "12abc" get the same
 * one-line message everywhere. */
#include "config.h"
#include "shardplan/error.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

G_DEFINE_QUARK (shardplan-error-quark, sp_error)

static gboolean
is_blank (const char *text)
{
  return text == NULL || *text == '\0';
}

gboolean
sp_parse_u64 (const char *what, const char *text, guint64 min, guint64 max,
              guint64 *out_value, GError **error)
{
  if (is_blank (text))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "%s is empty: expected an integer in [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT "]",
                   what, min, max);
      return FALSE;
    }
  /* g_ascii_strtoull accepts a leading '-' and wraps; reject signs ourselves. */
  const char *p = text;
  while (g_ascii_isspace (*p))
    p++;
  if (*p == '-' && g_ascii_isdigit (p[1]))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "%s '%s' is negative: expected an integer in [%" G_GUINT64_FORMAT
                   ", %" G_GUINT64_FORMAT "]", what, text, min, max);
      return FALSE;
    }
  if (!g_ascii_isdigit (*p))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "%s '%s' is not a non-negative integer: expected an integer in [%" G_GUINT64_FORMAT
                   ", %" G_GUINT64_FORMAT "]", what, text, min, max);
      return FALSE;
    }
  errno = 0;
  char *end = NULL;
  guint64 v = g_ascii_strtoull (p, &end, 10);
  while (end && g_ascii_isspace (*end))
    end++;
  if (errno == ERANGE)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "%s '%s' is too large: expected an integer in [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT "]",
                   what, text, min, max);
      return FALSE;
    }
  if (end == p || *end != '\0')
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "%s '%s' is not an integer: expected an integer in [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT "]",
                   what, text, min, max);
      return FALSE;
    }
  if (v < min || v > max)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "%s %s is out of range: expected an integer in [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT "]",
                   what, text, min, max);
      return FALSE;
    }
  *out_value = v;
  return TRUE;
}

gboolean
sp_parse_double (const char *what, const char *text, double min, double max,
                 double *out_value, GError **error)
{
  if (is_blank (text))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "%s is empty: expected a number in [%g, %g]", what, min, max);
      return FALSE;
    }
  errno = 0;
  char *end = NULL;
  double v = g_ascii_strtod (text, &end);
  while (end && g_ascii_isspace (*end))
    end++;
  if (end == text || *end != '\0' || !isfinite (v) || errno == ERANGE)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "%s '%s' is not a finite number: expected a number in [%g, %g]", what, text, min, max);
      return FALSE;
    }
  if (v < min || v > max)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "%s %s is out of range: expected a number in [%g, %g]", what, text, min, max);
      return FALSE;
    }
  *out_value = v;
  return TRUE;
}

gboolean
sp_parse_bytes (const char *what, const char *text, guint64 min, guint64 max,
                guint64 *out_value, GError **error)
{
  if (is_blank (text))
    return sp_parse_u64 (what, text, min, max, out_value, error);
  gsize len = strlen (text);
  const char *p = text;
  while (g_ascii_isspace (*p))
    p++;
  if (!g_ascii_isdigit (*p))
    {
      /* "-1", "+5", "K": the integer parser names what is wrong (negative,
       * not a number) instead of parsing an empty prefix */
      if (*p == '-' && g_ascii_isdigit (p[1]))
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                       "%s '%s' is negative: expected a size in bytes in [%" G_GUINT64_FORMAT
                       ", %" G_GUINT64_FORMAT "]", what, text, min, max);
          return FALSE;
        }
      return sp_parse_u64 (what, text, min, max, out_value, error);
    }
  text = p;
  len = strlen (text);
  gsize digits = 0;
  while (digits < len && g_ascii_isdigit (text[digits]))
    digits++;
  const char *suffix = text + digits;
  guint64 unit = 1;
  if (*suffix == '.' && digits > 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "%s '%s' is not a whole number: sizes are integers with an optional unit "
                   "(1536M, not 1.5G)", what, text);
      return FALSE;
    }
  if (*suffix != '\0' && digits > 0)
    {
      /* nccl-tests' parsesize(): K, M, G (either case) are powers of 1024;
       * T continues them.  KiB… say 1024 outright, KB… mean 1000. */
      static const struct { const char *s; guint64 unit; } units[] = {
        { "K", G_GUINT64_CONSTANT (1) << 10 }, { "KiB", G_GUINT64_CONSTANT (1) << 10 },
        { "M", G_GUINT64_CONSTANT (1) << 20 }, { "MiB", G_GUINT64_CONSTANT (1) << 20 },
        { "G", G_GUINT64_CONSTANT (1) << 30 }, { "GiB", G_GUINT64_CONSTANT (1) << 30 },
        { "T", G_GUINT64_CONSTANT (1) << 40 }, { "TiB", G_GUINT64_CONSTANT (1) << 40 },
        { "KB", 1000 }, { "MB", 1000000 }, { "GB", 1000000000 },
        { "TB", G_GUINT64_CONSTANT (1000000000000) }, { "B", 1 },
      };
      gboolean found = FALSE;
      for (guint i = 0; i < G_N_ELEMENTS (units) && !found; i++)
        if (g_ascii_strcasecmp (suffix, units[i].s) == 0)
          {
            unit = units[i].unit;
            found = TRUE;
          }
      if (!found)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                       "%s '%s' has an unknown unit '%s': expected bytes, optionally with K, M, G, "
                       "T or KiB, MiB, GiB, TiB (powers of 1024, as nccl-tests) or KB, MB, GB, TB "
                       "(powers of 1000)", what, text, suffix);
          return FALSE;
        }
    }
  g_autofree char *number = g_strndup (text, *suffix ? digits : len);
  guint64 v;
  gboolean all_digits = digits > 0 && number[digits] == '\0';
  if (!sp_parse_u64 (what, number, 0, G_MAXUINT64, &v, all_digits ? NULL : error))
    {
      if (all_digits) /* more digits than 64 bits hold: say this option's limit */
        g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                     "%s '%s' is too large: expected at most %" G_GUINT64_FORMAT " bytes", what,
                     text, max);
      return FALSE;
    }
  if (v > G_MAXUINT64 / unit)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "%s '%s' is too large: expected at most %" G_GUINT64_FORMAT " bytes", what, text, max);
      return FALSE;
    }
  v *= unit;
  if (v < min || v > max)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "%s '%s' (%" G_GUINT64_FORMAT " bytes) is out of range: expected [%" G_GUINT64_FORMAT
                   ", %" G_GUINT64_FORMAT "] bytes", what, text, v, min, max);
      return FALSE;
    }
  *out_value = v;
  return TRUE;
}

/* Levenshtein distance, ASCII case folded; G_MAXUINT past 64 bytes (no name
 * a user types is that long). */
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
          gboolean same = g_ascii_tolower (a[i - 1]) == g_ascii_tolower (b[j - 1]);
          row[j] = MIN (best, diag + (same ? 0u : 1u));
          diag = up;
        }
    }
  return row[lb];
}

char *
sp_did_you_mean (const char *word, const char *const *candidates, gssize n)
{
  g_return_val_if_fail (candidates != NULL || n == 0, g_strdup (""));
  if (word == NULL)
    return g_strdup ("");
  const char *best = NULL;
  guint best_d = 3; /* only close matches: a slip of the fingers, not a guess */
  gboolean best_prefix = FALSE;
  const gsize len = strlen (word);
  for (gsize i = 0; n < 0 ? candidates[i] != NULL : i < (gsize) n; i++)
    {
      guint d = edit_distance (word, candidates[i]);
      gboolean prefix = g_ascii_strncasecmp (candidates[i], word, len) == 0;
      if (d >= len || d > best_d || (d == best_d && (best == NULL || !prefix || best_prefix)))
        continue;
      best_d = d;
      best = candidates[i];
      best_prefix = prefix;
    }
  return best ? g_strdup_printf (" (did you mean %s?)", best) : g_strdup ("");
}

static int
span_cmp (gconstpointer a, gconstpointer b)
{
  const SpRange *x = a, *y = b;
  return x->lo < y->lo ? -1 : x->lo > y->lo;
}

void
sp_ranges_normalise (GArray *spans)
{
  g_return_if_fail (spans != NULL);
  g_array_sort (spans, span_cmp);
  guint w = 0;
  for (guint i = 0; i < spans->len; i++)
    {
      SpRange s = g_array_index (spans, SpRange, i);
      SpRange *last = w ? &g_array_index (spans, SpRange, w - 1) : NULL;
      if (last && (s.lo <= last->hi || s.lo - 1 == last->hi))
        last->hi = MAX (last->hi, s.hi);
      else
        g_array_index (spans, SpRange, w++) = s;
    }
  g_array_set_size (spans, w);
}

GArray *
sp_parse_ranges (const char *what, const char *text, GPtrArray *globs, GError **error)
{
  g_return_val_if_fail (what != NULL && text != NULL, NULL);
  const char *or_glob = globs ? ", or a name glob" : "";
  if (*text == '\0')
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "%s '': an empty list (expected N or A-B, comma-separated%s)", what, or_glob);
      return NULL;
    }
  g_autoptr (GArray) spans = g_array_new (FALSE, FALSE, sizeof (SpRange));
  g_auto (GStrv) items = g_strsplit (text, ",", -1);
  for (guint i = 0; items[i]; i++)
    {
      const char *item = items[i];
      if (*item == '\0')
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                       "%s '%s': an empty item (expected N or A-B, comma-separated%s)", what,
                       text, or_glob);
          return NULL;
        }
      if (globs && !g_ascii_isdigit (*item))
        {
          g_ptr_array_add (globs, g_strdup (item));
          continue;
        }
      g_auto (GStrv) ends = g_strsplit (item, "-", 2);
      SpRange s;
      if (!g_ascii_isdigit (ends[0][0]) || (ends[1] && !g_ascii_isdigit (ends[1][0]))
          || !g_ascii_string_to_unsigned (ends[0], 10, 0, G_MAXUINT64, &s.lo, NULL)
          || !g_ascii_string_to_unsigned (ends[1] ? ends[1] : ends[0], 10, 0, G_MAXUINT64, &s.hi,
                                          NULL))
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                       "%s '%s': '%s' is not a number N or a range A-B (comma-separated%s)", what,
                       text, item, or_glob);
          return NULL;
        }
      if (s.hi < s.lo)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                       "%s '%s': the range %s runs backwards (expected A-B with A <= B)", what,
                       text, item);
          return NULL;
        }
      g_array_append_val (spans, s);
    }
  sp_ranges_normalise (spans);
  return g_steal_pointer (&spans);
}

gboolean
sp_ranges_contain (const GArray *spans, guint64 v)
{
  if (spans == NULL)
    return TRUE;
  guint lo = 0, hi = spans->len;
  while (lo < hi)
    {
      guint mid = lo + (hi - lo) / 2;
      const SpRange *s = &g_array_index (spans, SpRange, mid);
      if (v < s->lo)
        hi = mid;
      else if (v > s->hi)
        lo = mid + 1;
      else
        return TRUE;
    }
  return FALSE;
}
