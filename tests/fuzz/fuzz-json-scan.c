/* tests/fuzz/fuzz-json-scan.c — the plan reader's JSON scanner
 * (lib/json-scan.h): validate and skip the whole text, walk it value by
 * value as the plan reader does (objects and arrays entered, scalars
 * decoded and described, seeking back to each value), and the depth
 * pre-scan and the strict check that guard json-glib. */
#include "config.h"
#include "fuzz-common.h"
#include "json-scan.h"

FUZZ_INIT_LOG_ONLY

/* The next character after white space (0 at the end), without moving:
 * probing with sp_json_scan_object_begin would build a syntax error's
 * line:column from the start of the text each time. */
static char
peek (const SpJsonScan *s)
{
  const char *q = s->p;
  while (q < s->end && (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r'))
    q++;
  return q < s->end ? *q : 0;
}

/* Walk one value; FALSE on a syntax error. */
static gboolean
walk (SpJsonScan *s, guint depth)
{
  /* the scanner refuses any value deeper than SP_JSON_MAX_DEPTH */
  if (depth > SP_JSON_MAX_DEPTH)
    return FALSE;
  gsize at = sp_json_scan_offset (s);
  gboolean first = TRUE;
  int r;
  if (peek (s) == '{')
    {
      if (!sp_json_scan_object_begin (s, NULL))
        abort ();
      while ((r = sp_json_scan_object_next (s, &first, NULL)) == 1)
        {
          g_assert (s->key->str != NULL);
          if (!walk (s, depth + 1))
            return FALSE;
        }
      return r == 0;
    }
  if (peek (s) == '[')
    {
      if (!sp_json_scan_array_begin (s, NULL))
        abort ();
      while ((r = sp_json_scan_array_next (s, &first, NULL)) == 1)
        if (!walk (s, depth + 1))
          return FALSE;
      return r == 0;
    }
  SpJsonValue v;
  GError *e = NULL;
  if (!sp_json_scan_value (s, &v, &e))
    {
      fuzz_refused (e);
      return FALSE;
    }
  g_free (sp_json_value_describe (&v));
  if (v.kind == SP_JSON_STRING)
    g_assert (v.str != NULL);
  /* the same value again, skipped without decoding */
  gsize after = sp_json_scan_offset (s);
  sp_json_scan_seek (s, at);
  SpJsonValue w;
  if (!sp_json_scan_skip (s, &w, NULL) || w.kind != v.kind || sp_json_scan_offset (s) != after)
    {
      fprintf (stderr, "json-scan: a value read and the same value skipped differ\n");
      abort ();
    }
  return TRUE;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  const char *text = (const char *) data;
  guint line = 0, col = 0;
  sp_json_depth_within (text, size, SP_JSON_MAX_DEPTH, &line, &col);

  SpJsonScan s;
  sp_json_scan_init (&s, text, size);
  SpJsonValue v;
  GError *e = NULL;
  gboolean valid = sp_json_scan_skip (&s, &v, &e) && sp_json_scan_end (&s, &e);
  g_clear_error (&e);

  /* A text the skipper accepts is accepted by the walk, and the reverse. */
  sp_json_scan_seek (&s, 0);
  gboolean walked = walk (&s, 0) && sp_json_scan_end (&s, NULL);
  if (valid != walked)
    {
      fprintf (stderr, "json-scan: skip says %s, walk says %s\n", valid ? "valid" : "invalid",
               walked ? "valid" : "invalid");
      abort ();
    }
  sp_json_scan_clear (&s);

  /* the strict pre-check for json-glib (duplicate keys, 64-bit integers,
   * \u0000): whatever it says is one line, "LINE:COL: …" */
  g_autofree char *problem = sp_json_strict_problem (text, size);
  if (problem != NULL && (!g_ascii_isdigit (problem[0]) || strchr (problem, ':') == NULL
                          || strchr (problem, '\n') != NULL))
    {
      fprintf (stderr, "json-scan: strict check's message is not 'LINE:COL: …': %s\n", problem);
      abort ();
    }
  return 0;
}
