/* A strict JSON scanner for the plan reader: RFC 8259 syntax, exact 64-bit
 * integers, no tree.  See json-scan.h for why. */
#include "config.h"
#include "json-scan.h"
#include "shardplan/error.h"

#include <string.h>

#define MAX_DEPTH SP_JSON_MAX_DEPTH

void
sp_json_scan_init (SpJsonScan *s, const char *text, gsize length)
{
  s->start = s->p = text;
  s->end = text + length;
  s->str = g_string_sized_new (64);
  s->key = g_string_sized_new (32);
}

void
sp_json_scan_clear (SpJsonScan *s)
{
  g_string_free (s->str, TRUE);
  g_string_free (s->key, TRUE);
  s->str = s->key = NULL;
}

gsize
sp_json_scan_offset (const SpJsonScan *s)
{
  return (gsize) (s->p - s->start);
}

void
sp_json_scan_seek (SpJsonScan *s, gsize offset)
{
  s->p = s->start + offset;
}

G_GNUC_PRINTF (3, 4) static gboolean
syntax_error (SpJsonScan *s, GError **error, const char *fmt, ...)
{
  guint line = 1, col = 1;
  for (const char *q = s->start; q < s->p; q++)
    {
      if (*q == '\n')
        {
          line++;
          col = 1;
        }
      else
        col++;
    }
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN, "plan is not valid JSON at %u:%u: %s",
               line, col, msg);
  return FALSE;
}

/* What is at the scanner, for "expected X, got Y" messages (static). */
static const char *
found (const SpJsonScan *s)
{
  if (s->p >= s->end)
    return "the end of the input";
  if (*s->p == '\0')
    return "a NUL byte";
  return "another character";
}

static void
skip_ws (SpJsonScan *s)
{
  while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\t' || *s->p == '\r'))
    s->p++;
}

static gboolean
expect (SpJsonScan *s, char c, GError **error)
{
  skip_ws (s);
  if (s->p >= s->end || *s->p != c)
    return syntax_error (s, error, "expected '%c', got %s", c,
                         s->p < s->end && g_ascii_isgraph (*s->p)
                           ? (char[]) { '\'', *s->p, '\'', 0 } : found (s));
  s->p++;
  return TRUE;
}

#define APPEND(out, c) do { if (out) g_string_append_c (out, c); } while (0)

static int
hex4 (const char *p)
{
  int v = 0;
  for (int i = 0; i < 4; i++)
    {
      int d = g_ascii_xdigit_value (p[i]);
      if (d < 0)
        return -1;
      v = v * 16 + d;
    }
  return v;
}

/* A string literal into `out` (decoded, UTF-8 checked), or only checked
 * when `out` is NULL (values being skipped need no copy). */
static gboolean
scan_string (SpJsonScan *s, GString *out, GError **error)
{
  if (out)
    g_string_truncate (out, 0);
  if (!expect (s, '"', error))
    return FALSE;
  const char *begin = s->p;
  for (;;)
    {
      const char *run = s->p;
      while (s->p < s->end && *s->p != '"' && *s->p != '\\' && (guchar) *s->p >= 0x20)
        s->p++;
      if (out)
        g_string_append_len (out, run, s->p - run);
      if (s->p >= s->end)
        return syntax_error (s, error, "unterminated string");
      char c = *s->p;
      if (c == '"')
        break;
      if (c != '\\')
        return syntax_error (s, error, "control character 0x%02x in a string", (guchar) c);
      if (s->end - s->p < 2)
        return syntax_error (s, error, "unterminated string");
      c = s->p[1];
      s->p += 2;
      switch (c)
        {
        case '"': APPEND (out, '"'); break;
        case '\\': APPEND (out, '\\'); break;
        case '/': APPEND (out, '/'); break;
        case 'b': APPEND (out, '\b'); break;
        case 'f': APPEND (out, '\f'); break;
        case 'n': APPEND (out, '\n'); break;
        case 'r': APPEND (out, '\r'); break;
        case 't': APPEND (out, '\t'); break;
        case 'u':
          {
            int u = s->end - s->p >= 4 ? hex4 (s->p) : -1;
            if (u < 0)
              return syntax_error (s, error, "bad \\u escape");
            s->p += 4;
            gunichar ch = (gunichar) u;
            if (u >= 0xD800 && u < 0xDC00)
              {
                int lo = s->end - s->p >= 6 && s->p[0] == '\\' && s->p[1] == 'u' ? hex4 (s->p + 2) : -1;
                if (lo < 0xDC00 || lo >= 0xE000)
                  return syntax_error (s, error, "unpaired UTF-16 surrogate in a \\u escape");
                s->p += 6;
                ch = 0x10000 + (((gunichar) u - 0xD800) << 10) + ((gunichar) lo - 0xDC00);
              }
            else if (u >= 0xDC00 && u < 0xE000)
              return syntax_error (s, error, "unpaired UTF-16 surrogate in a \\u escape");
            if (ch == 0)
              return syntax_error (s, error, "\\u0000 in a string is not supported");
            if (out)
              g_string_append_unichar (out, ch);
            break;
          }
        default:
          s->p--;
          return syntax_error (s, error, "bad escape '\\%c'", g_ascii_isprint (c) ? c : '?');
        }
    }
  /* escapes are ASCII, so the raw text is valid UTF-8 iff the decoded is */
  if (!g_utf8_validate_len (begin, (gsize) (s->p - begin), NULL))
    return syntax_error (s, error, "string is not valid UTF-8");
  s->p++;
  return TRUE;
}

static gboolean
scan_number (SpJsonScan *s, SpJsonValue *v, GError **error)
{
  const char *q = s->p;
  v->neg = FALSE;
  v->magnitude = 0;
  v->overflow = FALSE;
  if (q < s->end && *q == '-')
    {
      v->neg = TRUE;
      q++;
    }
  if (q >= s->end || !g_ascii_isdigit (*q))
    return syntax_error (s, error, "bad number");
  if (*q == '0' && q + 1 < s->end && g_ascii_isdigit (q[1]))
    return syntax_error (s, error, "numbers may not have leading zeros");
  while (q < s->end && g_ascii_isdigit (*q))
    {
      guint d = (guint) (*q - '0');
      if (v->magnitude > (G_MAXUINT64 - d) / 10)
        v->overflow = TRUE;
      else
        v->magnitude = v->magnitude * 10 + d;
      q++;
    }
  v->kind = SP_JSON_INT;
  if (q < s->end && *q == '.')
    {
      q++;
      if (q >= s->end || !g_ascii_isdigit (*q))
        return syntax_error (s, error, "bad number: digits must follow '.'");
      while (q < s->end && g_ascii_isdigit (*q))
        q++;
      v->kind = SP_JSON_FLOAT;
    }
  if (q < s->end && (*q == 'e' || *q == 'E'))
    {
      q++;
      if (q < s->end && (*q == '+' || *q == '-'))
        q++;
      if (q >= s->end || !g_ascii_isdigit (*q))
        return syntax_error (s, error, "bad number: digits must follow the exponent");
      while (q < s->end && g_ascii_isdigit (*q))
        q++;
      v->kind = SP_JSON_FLOAT;
    }
  v->text = s->p;
  v->text_len = (gsize) (q - s->p);
  s->p = q;
  return TRUE;
}

static gboolean
scan_literal (SpJsonScan *s, const char *word, SpJsonKind kind, SpJsonValue *v, GError **error)
{
  gsize n = strlen (word);
  if ((gsize) (s->end - s->p) < n || memcmp (s->p, word, n) != 0)
    return syntax_error (s, error, "unexpected character '%c'", *s->p);
  v->kind = kind;
  v->text = s->p;
  v->text_len = n;
  s->p += n;
  return TRUE;
}

static gboolean scan_value (SpJsonScan *s, SpJsonValue *v, guint depth, gboolean decode,
                            GError **error);
static int object_next (SpJsonScan *s, gboolean *first, gboolean decode, GError **error);

static gboolean
skip_object (SpJsonScan *s, guint depth, GError **error)
{
  gboolean first = TRUE;
  int r;
  SpJsonValue v;
  while ((r = object_next (s, &first, FALSE, error)) == 1)
    if (!scan_value (s, &v, depth + 1, FALSE, error))
      return FALSE;
  return r == 0;
}

static gboolean
skip_array (SpJsonScan *s, guint depth, gsize *out_n, GError **error)
{
  gboolean first = TRUE;
  int r;
  gsize n = 0;
  SpJsonValue v;
  while ((r = sp_json_scan_array_next (s, &first, error)) == 1)
    {
      if (!scan_value (s, &v, depth + 1, FALSE, error))
        return FALSE;
      n++;
    }
  *out_n = n;
  return r == 0;
}

static gboolean
scan_value (SpJsonScan *s, SpJsonValue *v, guint depth, gboolean decode, GError **error)
{
  skip_ws (s);
  if (depth > MAX_DEPTH)
    return syntax_error (s, error, "nested deeper than %d levels", MAX_DEPTH);
  if (s->p >= s->end)
    return syntax_error (s, error, "unexpected end of input, expected a value");
  v->text = s->p;
  v->text_len = 1;
  switch (*s->p)
    {
    case '"':
      v->kind = SP_JSON_STRING;
      if (!scan_string (s, decode ? s->str : NULL, error))
        return FALSE;
      v->str = decode ? s->str->str : NULL;
      return TRUE;
    case '{':
      v->kind = SP_JSON_OBJECT;
      s->p++;
      return skip_object (s, depth, error);
    case '[':
      v->kind = SP_JSON_ARRAY;
      s->p++;
      return skip_array (s, depth, &v->n_elements, error);
    case 't':
      return scan_literal (s, "true", SP_JSON_TRUE, v, error);
    case 'f':
      return scan_literal (s, "false", SP_JSON_FALSE, v, error);
    case 'n':
      return scan_literal (s, "null", SP_JSON_NULL, v, error);
    default:
      if (*s->p == '-' || g_ascii_isdigit (*s->p))
        return scan_number (s, v, error);
      if (g_ascii_isgraph (*s->p))
        return syntax_error (s, error, "unexpected character '%c', expected a value", *s->p);
      return syntax_error (s, error, "unexpected byte 0x%02x, expected a value", (guchar) *s->p);
    }
}

gboolean
sp_json_scan_value (SpJsonScan *s, SpJsonValue *out_value, GError **error)
{
  return scan_value (s, out_value, 0, TRUE, error);
}

gboolean
sp_json_scan_skip (SpJsonScan *s, SpJsonValue *out_value, GError **error)
{
  return scan_value (s, out_value, 0, FALSE, error);
}

gboolean
sp_json_scan_object_begin (SpJsonScan *s, GError **error)
{
  return expect (s, '{', error);
}

int
sp_json_scan_object_next (SpJsonScan *s, gboolean *first, GError **error)
{
  return object_next (s, first, TRUE, error);
}

static int
object_next (SpJsonScan *s, gboolean *first, gboolean decode, GError **error)
{
  skip_ws (s);
  if (s->p < s->end && *s->p == '}')
    {
      s->p++;
      return 0;
    }
  if (!*first && !expect (s, ',', error))
    return -1;
  *first = FALSE;
  skip_ws (s);
  if (s->p >= s->end || *s->p != '"')
    {
      syntax_error (s, error, "expected a member name in double quotes or '}'");
      return -1;
    }
  if (!scan_string (s, decode ? s->key : NULL, error) || !expect (s, ':', error))
    return -1;
  return 1;
}

gboolean
sp_json_scan_array_begin (SpJsonScan *s, GError **error)
{
  return expect (s, '[', error);
}

int
sp_json_scan_array_next (SpJsonScan *s, gboolean *first, GError **error)
{
  skip_ws (s);
  if (s->p < s->end && *s->p == ']')
    {
      s->p++;
      return 0;
    }
  if (!*first && !expect (s, ',', error))
    return -1;
  *first = FALSE;
  skip_ws (s);
  return 1;
}

gboolean
sp_json_scan_end (SpJsonScan *s, GError **error)
{
  skip_ws (s);
  if (s->p != s->end)
    return syntax_error (s, error, "unexpected data after the top-level value");
  return TRUE;
}

char *
sp_json_value_describe (const SpJsonValue *v)
{
  switch (v->kind)
    {
    case SP_JSON_STRING: return v->str ? g_strdup_printf ("the string \"%s\"", v->str)
                                       : g_strdup ("a string");
    case SP_JSON_OBJECT: return g_strdup ("an object");
    case SP_JSON_ARRAY: return g_strdup ("an array");
    default: return g_strndup (v->text, MIN (v->text_len, 40));
    }
}

gboolean
sp_json_depth_within (const char *text, gsize length, guint max_depth, guint *out_line,
                      guint *out_col)
{
  guint depth = 0, line = 1;
  const char *line_start = text, *end = text + length;
  for (const char *p = text; p < end; p++)
    switch (*p)
      {
      case '\n':
        line++;
        line_start = p + 1;
        break;
      case '"':
        /* to the closing quote; a backslash escapes the next byte */
        for (p++; p < end && *p != '"'; p++)
          if (*p == '\\')
            p++;
          else if (*p == '\n')
            {
              line++; /* invalid JSON, but keep the position right */
              line_start = p + 1;
            }
        if (p >= end)
          return TRUE;
        break;
      case '{':
      case '[':
        if (++depth > max_depth)
          {
            *out_line = line;
            *out_col = (guint) (p - line_start) + 1;
            return FALSE;
          }
        break;
      case '}':
      case ']':
        if (depth > 0)
          depth--;
        break;
      default:
        break;
      }
  return TRUE;
}

/* 1-based line and column of byte `at` of `text`. */
static void
line_col (const char *text, const char *at, guint *out_line, guint *out_col)
{
  guint line = 1, col = 1;
  for (const char *q = text; q < at; q++)
    {
      if (*q == '\n')
        {
          line++;
          col = 1;
        }
      else
        col++;
    }
  *out_line = line;
  *out_col = col;
}

/* One value of sp_json_strict_problem's walk: FALSE with *problem set on a
 * finding, FALSE with *err on a syntax error. */
static gboolean
strict_walk (SpJsonScan *s, guint depth, char **problem, GError **err)
{
  skip_ws (s);
  if (depth > MAX_DEPTH || s->p >= s->end)
    return FALSE;
  guint line, col;
  if (*s->p == '{')
    {
      s->p++;
      g_autoptr (GHashTable) keys = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
      gboolean first = TRUE;
      int r;
      while ((r = object_next (s, &first, TRUE, err)) == 1)
        {
          if (!g_hash_table_add (keys, g_strdup (s->key->str)))
            {
              line_col (s->start, s->p, &line, &col);
              g_autofree char *key = g_strescape (s->key->str, NULL);
              *problem = g_strdup_printf ("%u:%u: the key \"%s\" a second time in one object "
                                          "(which value is meant?)", line, col, key);
              return FALSE;
            }
          if (!strict_walk (s, depth + 1, problem, err))
            return FALSE;
        }
      return r == 0;
    }
  if (*s->p == '[')
    {
      s->p++;
      gboolean first = TRUE;
      int r;
      while ((r = sp_json_scan_array_next (s, &first, err)) == 1)
        if (!strict_walk (s, depth + 1, problem, err))
          return FALSE;
      return r == 0;
    }
  const char *at = s->p;
  SpJsonValue v;
  if (!scan_value (s, &v, depth, FALSE, err))
    return FALSE;
  if (v.kind == SP_JSON_INT
      && (v.overflow || v.magnitude > (guint64) G_MAXINT64 + (v.neg ? 1 : 0)))
    {
      line_col (s->start, at, &line, &col);
      *problem = g_strdup_printf ("%u:%u: the integer %.*s is outside the 64-bit range "
                                  "[-2^63, 2^63 - 1]", line, col, (int) MIN (v.text_len, 64),
                                  v.text);
      return FALSE;
    }
  return TRUE;
}

char *
sp_json_strict_problem (const char *text, gsize length)
{
  SpJsonScan s;
  sp_json_scan_init (&s, text, length);
  char *problem = NULL;
  g_autoptr (GError) err = NULL;
  strict_walk (&s, 0, &problem, &err);
  sp_json_scan_clear (&s);
  /* of the scanner's syntax errors, the escapes json-glib takes: \u0000
   * (a C string ends there) and an unpaired surrogate (not UTF-8) */
  const char *at = err ? strstr (err->message, " at ") : NULL;
  if (problem == NULL && at != NULL && strstr (at, "\\u") != NULL)
    problem = g_strdup (at + strlen (" at "));
  return problem;
}

gboolean
sp_json_check_for_parser (const char *text, gsize length, const char *src, int code,
                          GError **error)
{
  guint line = 0, col = 0;
  if (!sp_json_depth_within (text, length, SP_JSON_MAX_DEPTH, &line, &col))
    {
      g_set_error (error, SP_ERROR, code,
                   "%s:%u:%u: objects and arrays nested deeper than %d levels (the limit)", src,
                   line, col, SP_JSON_MAX_DEPTH);
      return FALSE;
    }
  g_autofree char *problem = sp_json_strict_problem (text, length);
  if (problem != NULL)
    {
      g_set_error (error, SP_ERROR, code, "%s:%s", src, problem);
      return FALSE;
    }
  return TRUE;
}
