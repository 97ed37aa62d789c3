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

static Suite *
error_suite (void)
{
  Suite *s = suite_create ("error");
  TCase *tc = tcase_create ("names");
  tcase_add_test (tc, test_did_you_mean);
  tcase_add_test (tc, test_sizes);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  return sp_test_run (error_suite ());
}
