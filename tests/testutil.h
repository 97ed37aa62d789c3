/* tests/testutil.h — helpers shared by the Check suites (header-only). */
#pragma once
#include <check.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <stdlib.h>

/* Absolute path of a fixture under tests/fixtures/ (g_free). */
static inline char *
sp_test_fixture (const char *name)
{
  const char *src = g_getenv ("SP_SRCDIR");
  return g_build_filename (src ? src : SP_SRCDIR, "tests", "fixtures", name, NULL);
}

/* A fresh temporary directory (g_free; removed by the caller or left in /tmp). */
static inline char *
sp_test_tmpdir (void)
{
  GError *error = NULL;
  char *dir = g_dir_make_tmp ("shardplan-test-XXXXXX", &error);
  ck_assert_msg (dir != NULL, "mkdtemp: %s", error ? error->message : "?");
  return dir;
}

/* Run a suite and return the exit status automake expects. */
static inline int
sp_test_run (Suite *suite)
{
  SRunner *runner = srunner_create (suite);
  srunner_run_all (runner, CK_NORMAL);
  int failed = srunner_ntests_failed (runner);
  srunner_free (runner);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#define SP_ASSERT_NO_ERROR(err) \
  ck_assert_msg ((err) == NULL, "unexpected error: %s", (err) ? (err)->message : "")
#define SP_ASSERT_ERROR(err, expected_code) \
  do { ck_assert_msg ((err) != NULL, "expected an error, got none"); \
       ck_assert_msg ((err)->code == (int) (expected_code), "error code %d, expected %d: %s", \
                      (err)->code, (int) (expected_code), (err)->message); } while (0)
