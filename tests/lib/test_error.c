/* shardplan/error.h: the one "did you mean" of every name a user types
 * (INI keys, presets, model names, subcommands). */
#include "config.h"
#include "testutil.h"
#include "shardplan/error.h"

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

static Suite *
error_suite (void)
{
  Suite *s = suite_create ("error");
  TCase *tc = tcase_create ("names");
  tcase_add_test (tc, test_did_you_mean);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  return sp_test_run (error_suite ());
}
