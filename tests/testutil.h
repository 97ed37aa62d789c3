/* tests/testutil.h — helpers shared by the Check suites (header-only). */
#pragma once
#include <check.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <errno.h>
#include <stdlib.h>

/* Absolute path of a fixture under tests/fixtures/ (g_free). */
static inline char *
sp_test_fixture (const char *name)
{
  const char *src = g_getenv ("SP_SRCDIR");
  return g_build_filename (src ? src : SP_SRCDIR, "tests", "fixtures", name, NULL);
}

/* A fresh, empty directory in g_get_tmp_dir () ($TMPDIR, else /tmp),
 * named "shardplan-test-" and six random characters (g_dir_make_tmp).  The caller removes it with everything in it: a local is
 * declared
 *
 *   g_autoptr (SpTestDir) dir = sp_test_tmpdir ();
 *
 * and a fixture's teardown calls sp_test_rmtree () then g_free (). */
static inline char *
sp_test_tmpdir (void)
{
  GError *error = NULL;
  char *dir = g_dir_make_tmp ("shardplan-test-XXXXXX", &error);
  ck_assert_msg (dir != NULL, "mkdtemp: %s", error ? error->message : "?");
  return dir;
}

/* Remove `path` and, if it is a directory, everything under it, like
 * rm -rf: symbolic links are removed, never followed; a path that does not
 * exist (already removed) is not an error.  TRUE when nothing is left.
 * (A walk of GDir and lstat rather than nftw, which needs _XOPEN_SOURCE
 * defined before the first system header of the including file.) */
static inline gboolean
sp_test_rmtree (const char *path)
{
  GStatBuf st;
  if (path == NULL)
    return TRUE;
  if (g_lstat (path, &st) != 0)
    return errno == ENOENT;
  if (!S_ISDIR (st.st_mode))
    return g_unlink (path) == 0 || errno == ENOENT;

  /* the names first, then the removals: no reading a directory while its
   * entries are being removed */
  g_autoptr (GPtrArray) children = g_ptr_array_new_with_free_func (g_free);
  GDir *d = g_dir_open (path, 0, NULL);
  if (d != NULL)
    {
      for (const char *name; (name = g_dir_read_name (d)) != NULL;)
        g_ptr_array_add (children, g_build_filename (path, name, NULL));
      g_dir_close (d);
    }
  gboolean ok = TRUE;
  for (guint i = 0; i < children->len; i++)
    ok = sp_test_rmtree (g_ptr_array_index (children, i)) && ok;
  return (g_rmdir (path) == 0 || errno == ENOENT) && ok;
}

/* A directory of sp_test_tmpdir () that removes itself:
 * g_autoptr (SpTestDir) removes the directory with everything in it, then
 * frees the name, when the variable goes out of scope.
 *
 * A failing Check assertion (ck_assert and the like) ends the forked test
 * process at once, so no cleanup runs and a failed test's files stay in
 * /tmp for inspection; that is intended.  Only a test that passes (or
 * returns early) removes its directory. */
typedef char SpTestDir;

static inline void
sp_test_dir_free (SpTestDir *dir)
{
  ck_assert_msg (sp_test_rmtree (dir), "cannot remove %s: %s", dir, g_strerror (errno));
  g_free (dir);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (SpTestDir, sp_test_dir_free)

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
