/* JSON text with shortest round-trip numbers (json-text.h). */
#include "config.h"
#include "json-text.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *
sp_json_double (char buf[G_ASCII_DTOSTR_BUF_SIZE], double v)
{
  if (!isfinite (v))
    {
      g_snprintf (buf, G_ASCII_DTOSTR_BUF_SIZE, "%g", v);
      return buf;
    }
  /* the fewest significant digits that read back to v … */
  int digits = 1;
  for (; digits <= 17; digits++)
    {
      char format[8];
      g_snprintf (format, sizeof format, "%%.%de", digits - 1);
      g_ascii_formatd (buf, G_ASCII_DTOSTR_BUF_SIZE, format, v);
      if (g_ascii_strtod (buf, NULL) == v)
        break;
    }
  /* … written as "%.17g" would lay them out: plain decimals unless the
   * exponent is below -4 or 17 and above (130200, not 1.302e+05) */
  const char *e = strchr (buf, 'e');
  int exponent = e ? atoi (e + 1) : 0;
  if (exponent >= -4 && exponent < 17)
    {
      char format[8];
      g_snprintf (format, sizeof format, "%%.%df", MAX (0, digits - 1 - exponent));
      g_ascii_formatd (buf, G_ASCII_DTOSTR_BUF_SIZE, format, v);
    }
  return buf;
}

/* Copy `text`, rewriting each number outside strings that has a fraction
 * or an exponent.  json-glib's "%.17g" reads back exactly, so the rewrite
 * prints the very double json-glib was given. */
static char *
shorten_numbers (const char *text)
{
  GString *out = g_string_sized_new (strlen (text));
  gboolean in_string = FALSE;
  for (const char *p = text; *p;)
    {
      if (in_string)
        {
          if (*p == '\\' && p[1] != '\0')
            g_string_append_len (out, p, 2), p += 2;
          else
            {
              in_string = *p != '"';
              g_string_append_c (out, *p++);
            }
          continue;
        }
      if (*p == '"')
        {
          in_string = TRUE;
          g_string_append_c (out, *p++);
          continue;
        }
      if (*p != '-' && !g_ascii_isdigit (*p))
        {
          g_string_append_c (out, *p++);
          continue;
        }
      gsize len = strspn (p, "-+0123456789.eE");
      gboolean fraction = memchr (p, '.', len) != NULL;
      if (!fraction && memchr (p, 'e', len) == NULL && memchr (p, 'E', len) == NULL)
        {
          g_string_append_len (out, p, (gssize) len);
          p += len;
          continue;
        }
      g_autofree char *token = g_strndup (p, len);
      char buf[G_ASCII_DTOSTR_BUF_SIZE];
      const char *s = sp_json_double (buf, g_ascii_strtod (token, NULL));
      g_string_append (out, s);
      if (fraction && strpbrk (s, ".eEn") == NULL) /* 2.0 stays a fraction, not 2 */
        g_string_append (out, ".0");
      p += len;
    }
  return g_string_free (out, FALSE);
}

char *
sp_json_text (JsonNode *root, gboolean pretty)
{
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  json_generator_set_pretty (gen, pretty);
  json_generator_set_root (gen, root);
  g_autofree char *text = json_generator_to_data (gen, NULL);
  return shorten_numbers (text);
}
