/* tests/fuzz/fuzz-options.c — the option and key parsers (sp_parse_bytes,
 * sp_parse_u64, sp_parse_double, sp_parse_ranges).  The first byte picks the
 * parser and its range ('r' and 'g': the ranges, without and with name
 * globs); the rest, up to the first NUL, is the text.  A
 * value accepted must lie in the range asked for; spans must come back
 * sorted, disjoint and not touching, every number of the list inside one,
 * and every glob an item of the list that does not start with a digit. */
#include "config.h"
#include "fuzz-common.h"
#include "shardplan/shardplan.h"
#include <math.h>

FUZZ_INIT_LOG_ONLY

static const guint64 u64_min[] = { 0, 1, 1, 1024 };
static const guint64 u64_max[] = { G_MAXUINT64, G_MAXUINT32, 1u << 31, G_MAXUINT64 / 2 };
static const double dbl_min[] = { 0.0, -1e300, 1e-9, 0.0 };
static const double dbl_max[] = { 1.0, 1e300, 1e12, G_MAXDOUBLE };

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  if (size == 0)
    return 0;
  guint sel = data[0];
  char *text = g_strndup ((const char *) data + 1, size - 1);
  guint r = (sel >> 2) & 3;
  GError *e = NULL;
  gboolean ok;
  if (sel == 'r' || sel == 'g') /* sp_parse_ranges, without / with globs */
    {
      gboolean with_globs = sel == 'g';
      g_autoptr (GPtrArray) globs = with_globs ? g_ptr_array_new_with_free_func (g_free) : NULL;
      GArray *spans = sp_parse_ranges ("--ranks", text, globs, &e);
      ok = spans != NULL;
      if (ok)
        {
          for (guint i = 0; i < spans->len; i++)
            {
              const SpRange *s = &g_array_index (spans, SpRange, i);
              g_assert (s->lo <= s->hi);
              /* after the previous one, with a gap */
              if (i > 0)
                g_assert (s->lo > 0 && g_array_index (spans, SpRange, i - 1).hi < s->lo - 1);
            }
          g_auto (GStrv) items = g_strsplit (text, ",", -1);
          guint n_globs = 0;
          for (guint i = 0; items[i]; i++)
            if (g_ascii_isdigit (items[i][0]))
              {
                guint64 v = g_ascii_strtoull (items[i], NULL, 10);
                g_assert (sp_ranges_contain (spans, v));
              }
            else
              {
                g_assert (with_globs);
                g_assert_cmpstr (globs->pdata[n_globs], ==, items[i]);
                n_globs++;
              }
          g_assert (!with_globs || n_globs == globs->len);
          g_array_unref (spans);
        }
      else
        fuzz_refused (e);
      g_free (text);
      return 0;
    }
  switch (sel & 3)
    {
    case 0:
    case 3:
      {
        guint64 v = 0;
        ok = sp_parse_bytes ("--bytes", text, u64_min[r], u64_max[r], &v, &e);
        g_assert (!ok || (v >= u64_min[r] && v <= u64_max[r]));
        break;
      }
    case 1:
      {
        guint64 v = 0;
        ok = sp_parse_u64 ("--count", text, u64_min[r], u64_max[r], &v, &e);
        g_assert (!ok || (v >= u64_min[r] && v <= u64_max[r]));
        break;
      }
    default:
      {
        double v = 0;
        ok = sp_parse_double ("--factor", text, dbl_min[r], dbl_max[r], &v, &e);
        g_assert (!ok || (isfinite (v) && v >= dbl_min[r] && v <= dbl_max[r]));
        break;
      }
    }
  if (!ok)
    {
      fuzz_refused (e);
    }
  g_free (text);
  return 0;
}
