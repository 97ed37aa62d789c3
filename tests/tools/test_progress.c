/* tools/progress.c: the text of the progress line (bar, percent, counts,
 * elapsed time, time left), and that a reporter on a non-terminal draws
 * nothing.  The drawing on a terminal is checked end to end by
 * tests/tools/progress.sh under a pseudo-terminal. */
#include "config.h"
#include "testutil.h"
#include "progress.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char *
duration (gint64 us)
{
  char buf[64];
  sp_progress_format_duration (buf, sizeof buf, us);
  return g_strdup (buf);
}

START_TEST (test_duration)
{
  static const struct {
    gint64 us;
    const char *text;
  } cases[] = {
    { -5, "0.0 s" },
    { 0, "0.0 s" },
    { 400000, "0.4 s" },
    { 9600000, "9.6 s" },
    { 9940000, "9.9 s" },
    { 9960000, "10 s" },     /* %.1f would say 10.0: whole seconds from there */
    { 14700000, "15 s" },
    { 59400000, "59 s" },
    { 59999999, "1 min 00 s" },
    { 60 * G_USEC_PER_SEC, "1 min 00 s" },
    { 125 * G_USEC_PER_SEC, "2 min 05 s" },
    { G_GINT64_CONSTANT (3599) * G_USEC_PER_SEC, "59 min 59 s" },
    { G_GINT64_CONSTANT (3600) * G_USEC_PER_SEC, "1 h 00 min" },
    { G_GINT64_CONSTANT (11220) * G_USEC_PER_SEC, "3 h 07 min" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *got = duration (cases[i].us);
      ck_assert_msg (strcmp (got, cases[i].text) == 0, "%" G_GINT64_FORMAT " us: '%s', expected '%s'",
                     cases[i].us, got, cases[i].text);
    }
}
END_TEST

START_TEST (test_line_with_total)
{
  char buf[256];
  /* 41 % of 227,328 after 9.6 s: 9.6 × (227328 − 93184) / 93184 = 13.82 s left */
  gsize n = sp_progress_format_line (buf, sizeof buf, "sim", 93184, 227328, "op instances",
                                     9600000, 20);
  ck_assert_str_eq (buf, "shardplan sim: [########            ]  40% 93,184/227,328 op instances, "
                         "9.6 s, ~14 s left");
  ck_assert_uint_eq (n, strlen (buf));
  /* no bar (a narrow terminal), a short one; the width is capped */
  sp_progress_format_line (buf, sizeof buf, "sim", 93184, 227328, "op instances", 9600000, 0);
  ck_assert_str_eq (buf, "shardplan sim:  40% 93,184/227,328 op instances, 9.6 s, ~14 s left");
  sp_progress_format_line (buf, sizeof buf, "sim", 1, 2, "ops", 9600000, 5);
  ck_assert_str_eq (buf, "shardplan sim: [##   ]  50% 1/2 ops, 9.6 s, ~9.6 s left");
  sp_progress_format_line (buf, sizeof buf, "sim", 1, 2, "ops", 0, 1000);
  ck_assert_uint_eq (strspn (strchr (buf, '[') + 1, "# "), SP_PROGRESS_BAR_MAX);
  /* nothing done yet, or under a second: no estimate */
  sp_progress_format_line (buf, sizeof buf, "trace export", 0, 1000, "rows", 5000000, 20);
  ck_assert_str_eq (buf, "shardplan trace export: [                    ]   0% 0/1,000 rows, 5.0 s");
  sp_progress_format_line (buf, sizeof buf, "trace export", 500, 1000, "rows", 900000, 20);
  ck_assert_str_eq (buf, "shardplan trace export: [##########          ]  50% 500/1,000 rows, 0.9 s");
  /* half done after 2 min: 2 min left */
  sp_progress_format_line (buf, sizeof buf, "run", 50, 100, "ops", 120 * G_USEC_PER_SEC, 20);
  ck_assert_str_eq (buf, "shardplan run: [##########          ]  50% 50/100 ops, 2 min 00 s, "
                         "~2 min 00 s left");
  /* 99.9 % is not 100 %; done past the total counts as the total */
  sp_progress_format_line (buf, sizeof buf, "sweep", 999, 1000, "configurations", 2000000, 20);
  ck_assert (strstr (buf, "  99% 999/1,000 configurations") != NULL);
  ck_assert (strstr (buf, "[################### ]") != NULL);
  sp_progress_format_line (buf, sizeof buf, "sweep", 1234, 1000, "configurations", 2000000, 20);
  ck_assert_str_eq (buf, "shardplan sweep: [####################] 100% 1,000/1,000 configurations, "
                         "2.0 s");
  /* counts at the top of the range */
  sp_progress_format_line (buf, sizeof buf, "x", G_MAXUINT64 / 2, G_MAXUINT64, "u", 3000000, 20);
  ck_assert (strstr (buf, "9,223,372,036,854,775,807/18,446,744,073,709,551,615 u") != NULL);
  ck_assert (strstr (buf, "~3.0 s left") != NULL);
}
END_TEST

START_TEST (test_line_without_total)
{
  char buf[256];
  sp_progress_format_line (buf, sizeof buf, "calibrate", 1234567, 0, "model evaluations",
                           75 * G_USEC_PER_SEC, 20);
  ck_assert_str_eq (buf, "shardplan calibrate: 1,234,567 model evaluations, 1 min 15 s");
  /* truncated, still terminated */
  char small[16];
  gsize n = sp_progress_format_line (small, sizeof small, "calibrate", 1, 0, "x", 0, 20);
  ck_assert_uint_eq (n, sizeof small - 1);
  ck_assert_str_eq (small, "shardplan calib");
}
END_TEST

/* Send stderr to a new file of the test's scratch directory; returns the
 * saved descriptor for stderr_end(), which puts stderr back, returns what
 * was written and removes the directory. */
static int
stderr_begin (char **out_path)
{
  g_autofree char *dir = sp_test_tmpdir ();
  *out_path = g_build_filename (dir, "err", NULL);
  fflush (stderr);
  int saved = dup (2);
  ck_assert (saved >= 0 && freopen (*out_path, "w", stderr) != NULL);
  return saved;
}

static char *
stderr_end (int saved, const char *path)
{
  g_autoptr (SpTestDir) dir = g_path_get_dirname (path);
  fflush (stderr);
  dup2 (saved, 2);
  close (saved);
  char *text = NULL;
  ck_assert (g_file_get_contents (path, &text, NULL, NULL));
  return text;
}

/* stderr into a file (not a terminal): never a thread, never a byte, even
 * with the test hook that removes the delay; --quiet even with "tty". */
START_TEST (test_not_a_terminal)
{
  g_autofree char *path = NULL;
  int saved = stderr_begin (&path);
  g_setenv ("SP_TEST_PROGRESS", "nodelay", TRUE);
  SpProgress *p = sp_progress_new ("sim", 100, "ops", FALSE);
  ck_assert (!sp_progress_active (p));
  for (int i = 0; i < 100; i++)
    sp_progress_add (p, 1);
  g_usleep (SP_PROGRESS_REDRAW_US * 2);
  sp_progress_free (p);
  g_setenv ("SP_TEST_PROGRESS", "tty", TRUE);
  p = sp_progress_new ("sim", 100, "ops", TRUE);
  ck_assert (!sp_progress_active (p));
  sp_progress_set (p, 50);
  g_usleep (SP_PROGRESS_REDRAW_US * 2);
  sp_progress_free (p);
  /* the hook "tty" draws into the file: the final count, then a clear */
  p = sp_progress_new ("sim", 100, "ops", FALSE);
  ck_assert (sp_progress_active (p));
  sp_progress_set (p, 100);
  g_usleep (SP_PROGRESS_REDRAW_US * 2);
  sp_progress_free (p);
  g_unsetenv ("SP_TEST_PROGRESS");
  g_autofree char *text = stderr_end (saved, path);
  ck_assert_msg (g_str_has_prefix (text, "\rshardplan sim: ["), "got '%s'", text);
  ck_assert (strstr (text, "100/100 ops") != NULL);
  ck_assert (g_str_has_suffix (text, "\r\033[K"));
  /* one reporter drew: the quiet and the non-terminal ones wrote nothing */
  ck_assert (strstr (text, " 50/100") == NULL);
}
END_TEST

/* sp_progress_abandon (run's timeout, from another thread, before its
 * message and _exit): the line is cleared at once, nothing is drawn
 * after it, and the free that may follow draws nothing either. */
START_TEST (test_abandon)
{
  g_autofree char *path = NULL;
  int saved = stderr_begin (&path);
  g_setenv ("SP_TEST_PROGRESS", "tty", TRUE);
  SpProgress *p = sp_progress_new ("run", 10, "op steps", FALSE);
  ck_assert (sp_progress_active (p));
  sp_progress_set (p, 3);
  g_usleep (SP_PROGRESS_REDRAW_US * 2); /* drawn at least once */
  sp_progress_abandon (p);
  fputs ("MESSAGE\n", stderr);
  sp_progress_set (p, 7);
  g_usleep (SP_PROGRESS_REDRAW_US * 2);
  sp_progress_free (p);
  g_unsetenv ("SP_TEST_PROGRESS");
  g_autofree char *text = stderr_end (saved, path);
  ck_assert_msg (strstr (text, " 3/10 op steps") != NULL, "got '%s'", text);
  ck_assert_msg (g_str_has_suffix (text, "\r\033[KMESSAGE\n"), "got '%s'", text);
  ck_assert (strstr (text, " 7/10") == NULL);
  sp_progress_abandon (NULL);
}
END_TEST

int
main (void)
{
  Suite *s = suite_create ("progress");
  TCase *tc = tcase_create ("progress");
  tcase_add_test (tc, test_duration);
  tcase_add_test (tc, test_line_with_total);
  tcase_add_test (tc, test_line_without_total);
  tcase_add_test (tc, test_not_a_terminal);
  tcase_add_test (tc, test_abandon);
  suite_add_tcase (s, tc);
  return sp_test_run (s);
}
