/* shardplan/error.h: the one "did you mean" of every name a user types
 * (INI keys, presets, model names, subcommands) and the one size syntax of
 * every size option. */
#include "config.h"
#include "testutil.h"
#include "shardplan/error.h"

#include <string.h>

static const char *const presets[] = { "dgx-a100", "dgx-h100", "p4d", "p5", NULL };
static const char *const models[] = { "gpt-1b", "gpt-13b", "gpt-70b", NULL };
static const char *const commands[] = { "sim", "sweep", "estimate" };

static void
check_hint (const char *word, const char *const *candidates, gssize n, const char *want)
{
  g_autofree char *hint = sp_did_you_mean (word, candidates, n);
  ck_assert_msg (g_strcmp0 (hint, want) == 0, "'%s': got '%s', want '%s'", word, hint, want);
}

START_TEST (test_did_you_mean)
{
  check_hint ("swep", commands, G_N_ELEMENTS (commands), " (did you mean sweep?)");
  check_hint ("estmate", commands, G_N_ELEMENTS (commands), " (did you mean estimate?)");
  check_hint ("dgx-h10", presets, -1, " (did you mean dgx-h100?)");
  check_hint ("DGX-H100", presets, -1, " (did you mean dgx-h100?)");
  /* a truncated name beats an equally close one it does not begin */
  check_hint ("gpt-13", models, -1, " (did you mean gpt-13b?)");
  check_hint ("gpt-70", models, -1, " (did you mean gpt-70b?)");
  /* nothing close, or a word so short that any name is "close" */
  check_hint ("bogus", commands, G_N_ELEMENTS (commands), "");
  check_hint ("x", presets, -1, "");
  check_hint ("", presets, -1, "");
  check_hint (NULL, presets, -1, "");
  check_hint ("llama-7b", models, -1, "");
  check_hint ("sim", commands, 0, "");
}
END_TEST

/* the size `text` parses to */
static guint64
size_of (const char *text)
{
  g_autoptr (GError) error = NULL;
  guint64 v = 0;
  ck_assert_msg (sp_parse_bytes ("--bytes", text, 0, G_MAXUINT64, &v, &error), "'%s': %s", text,
                 error ? error->message : "");
  return v;
}

/* the message of a size that is refused */
static char *
size_error (const char *text, guint64 max)
{
  GError *error = NULL;
  guint64 v = 7;
  ck_assert_msg (!sp_parse_bytes ("--bytes", text, 1, max, &v, &error), "'%s' accepted", text);
  ck_assert_uint_eq (v, 7);
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_ARGUMENT);
  char *msg = g_strdup (error->message);
  g_error_free (error);
  return msg;
}

START_TEST (test_sizes)
{
  /* nccl-tests' parsesize(): K, M, G in either case are powers of 1024 */
  ck_assert_uint_eq (size_of ("3"), 3);
  ck_assert_uint_eq (size_of ("8K"), 8192);
  ck_assert_uint_eq (size_of ("8k"), 8192);
  ck_assert_uint_eq (size_of ("2M"), 2u << 20);
  ck_assert_uint_eq (size_of ("1G"), 1u << 30);
  ck_assert_uint_eq (size_of ("1g"), 1u << 30);
  ck_assert_uint_eq (size_of ("2T"), G_GUINT64_CONSTANT (2) << 40);
  /* KiB... say 1024, KB... mean 1000 */
  ck_assert_uint_eq (size_of ("8KiB"), 8192);
  ck_assert_uint_eq (size_of ("2GiB"), G_GUINT64_CONSTANT (2) << 30);
  ck_assert_uint_eq (size_of ("1TiB"), G_GUINT64_CONSTANT (1) << 40);
  ck_assert_uint_eq (size_of ("8KB"), 8000);
  ck_assert_uint_eq (size_of ("3MB"), 3000000);
  ck_assert_uint_eq (size_of ("2GB"), 2000000000);
  ck_assert_uint_eq (size_of ("2gb"), 2000000000);
  ck_assert_uint_eq (size_of ("1TB"), G_GUINT64_CONSTANT (1000000000000));
  ck_assert_uint_eq (size_of ("12B"), 12);
  ck_assert_uint_eq (size_of (" 4K"), 4096);

  g_autofree char *neg = size_error ("-1", 100);
  ck_assert_str_eq (neg, "--bytes '-1' is negative: expected a size in bytes in [1, 100]");
  g_autofree char *unit = size_error ("4Kb2", 100);
  ck_assert_msg (strstr (unit, "unknown unit 'Kb2'") && strstr (unit, "KB, MB, GB, TB (powers of 1000)"),
                 "%s", unit);
  g_autofree char *frac = size_error ("1.5G", G_MAXUINT64);
  ck_assert_str_eq (frac, "--bytes '1.5G' is not a whole number: sizes are integers with an "
                          "optional unit (1536M, not 1.5G)");
  g_autofree char *big = size_error ("17000000T", G_MAXUINT64);
  ck_assert_msg (strstr (big, "is too large"), "%s", big);
  g_autofree char *range = size_error ("2KB", 1024);
  ck_assert_str_eq (range, "--bytes '2KB' (2000 bytes) is out of range: expected [1, 1024] bytes");
}
END_TEST

/* "A,B-C,…" lists (trace export --ranks / --iters / --ops): sorted, merged
 * where they overlap or touch, globs apart; every malformed list refused. */
static char *
ranges_text (const char *list, gboolean globs_ok)
{
  g_autoptr (GPtrArray) globs = globs_ok ? g_ptr_array_new_with_free_func (g_free) : NULL;
  GError *error = NULL;
  g_autoptr (GArray) r = sp_parse_ranges ("--ranks", list, globs, &error);
  if (r == NULL)
    {
      ck_assert (error != NULL && error->code == SP_ERROR_INVALID_ARGUMENT);
      char *m = g_strdup (error->message);
      g_error_free (error);
      return m;
    }
  ck_assert (error == NULL);
  GString *out = g_string_new (NULL);
  for (guint i = 0; i < r->len; i++)
    g_string_append_printf (out, "%s%" G_GUINT64_FORMAT "-%" G_GUINT64_FORMAT, i ? " " : "",
                            g_array_index (r, SpRange, i).lo, g_array_index (r, SpRange, i).hi);
  for (guint i = 0; globs && i < globs->len; i++)
    g_string_append_printf (out, "%sglob:%s", out->len ? " " : "", (const char *) globs->pdata[i]);
  return g_string_free (out, FALSE);
}

START_TEST (test_ranges)
{
  static const struct {
    const char *list;
    gboolean globs;
    const char *want;
  } cases[] = {
    { "3", FALSE, "3-3" },
    { "16,0-7", FALSE, "0-7 16-16" },
    { "0-3,4-5,9,8", FALSE, "0-5 8-9" },     /* touching ranges merge */
    { "2-9,3-4,1", FALSE, "1-9" },           /* overlapping and inside */
    { "18446744073709551615,0", FALSE, "0-0 18446744073709551615-18446744073709551615" },
    { "0-18446744073709551615,5", FALSE, "0-18446744073709551615" },
    { "mb0.*,4,L?.fwd", TRUE, "4-4 glob:mb0.* glob:L?.fwd" },
    { "mb0.*", TRUE, "glob:mb0.*" },
    { "", FALSE, "--ranks '': an empty list (expected N or A-B, comma-separated)" },
    { "1,,2", FALSE, "--ranks '1,,2': an empty item (expected N or A-B, comma-separated)" },
    { "7-3", FALSE, "--ranks '7-3': the range 7-3 runs backwards (expected A-B with A <= B)" },
    { "x", FALSE, "--ranks 'x': 'x' is not a number N or a range A-B (comma-separated)" },
    { "1-", FALSE, "--ranks '1-': '1-' is not a number N or a range A-B (comma-separated)" },
    { "1-2-3", FALSE, "--ranks '1-2-3': '1-2-3' is not a number N or a range A-B (comma-separated)" },
    { "1- 2", FALSE, "--ranks '1- 2': '1- 2' is not a number N or a range A-B (comma-separated)" },
    { "1-+2", FALSE, "--ranks '1-+2': '1-+2' is not a number N or a range A-B (comma-separated)" },
    { "18446744073709551616", FALSE, "--ranks '18446744073709551616': '18446744073709551616' "
                                     "is not a number N or a range A-B (comma-separated)" },
    { "4x", TRUE, "--ranks '4x': '4x' is not a number N or a range A-B (comma-separated, or a "
                  "name glob)" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *got = ranges_text (cases[i].list, cases[i].globs);
      ck_assert_msg (strcmp (got, cases[i].want) == 0, "'%s': got '%s', want '%s'", cases[i].list,
                     got, cases[i].want);
    }
  /* membership: in, between, past both ends */
  g_autoptr (GArray) r = sp_parse_ranges ("--ops", "10-20,40,0", NULL, NULL);
  ck_assert (r != NULL);
  static const guint64 in[] = { 0, 10, 15, 20, 40 }, out[] = { 1, 9, 21, 39, 41, G_MAXUINT64 };
  for (guint i = 0; i < G_N_ELEMENTS (in); i++)
    ck_assert (sp_ranges_contain (r, in[i]));
  for (guint i = 0; i < G_N_ELEMENTS (out); i++)
    ck_assert (!sp_ranges_contain (r, out[i]));
  ck_assert (sp_ranges_contain (NULL, 12345));
}
END_TEST

static Suite *
error_suite (void)
{
  Suite *s = suite_create ("error");
  TCase *tc = tcase_create ("names");
  tcase_add_test (tc, test_did_you_mean);
  tcase_add_test (tc, test_sizes);
  tcase_add_test (tc, test_ranges);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  return sp_test_run (error_suite ());
}
