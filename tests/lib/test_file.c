/* shardplan/file.h: file identity (links, unresolved paths), the atomic
 * write's mode under a umask, commit/discard, and the signal clean-up (a
 * child process that kills itself with a temporary file open). */
#include "config.h"
#include "testutil.h"
#include "shardplan/file.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char *dir;

static void
setup (void)
{
  dir = sp_test_tmpdir ();
}

static void
teardown (void)
{
  ck_assert (sp_test_rmtree (dir));
  g_clear_pointer (&dir, g_free);
}

/* How many entries of `dir` contain ".tmp-". */
static guint
n_temps (void)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  guint n = 0;
  for (const char *e; (e = g_dir_read_name (d)) != NULL;)
    n += strstr (e, ".tmp-") != NULL;
  return n;
}

START_TEST (test_same)
{
  g_autofree char *a = g_build_filename (dir, "a", NULL);
  g_autofree char *b = g_build_filename (dir, "b", NULL);
  g_autofree char *hard = g_build_filename (dir, "hard", NULL);
  g_autofree char *sym = g_build_filename (dir, "sym", NULL);
  g_autofree char *dotted = g_build_filename (dir, "sub", "..", "a", NULL);
  g_autofree char *sub = g_build_filename (dir, "sub", NULL);
  ck_assert (g_file_set_contents (a, "a", -1, NULL));
  ck_assert (g_file_set_contents (b, "a", -1, NULL)); /* same bytes, another file */
  ck_assert_int_eq (link (a, hard), 0);
  ck_assert_int_eq (symlink (a, sym), 0);
  ck_assert_int_eq (g_mkdir (sub, 0755), 0);
  ck_assert (sp_file_same (a, a));
  ck_assert (sp_file_same (a, hard));
  ck_assert (sp_file_same (sym, a));
  ck_assert (sp_file_same (dotted, a));
  ck_assert (!sp_file_same (a, b));
  /* neither exists: the resolved paths decide */
  g_autofree char *n1 = g_build_filename (dir, "new.h5", NULL);
  g_autofree char *n2 = g_build_filename (dir, "sub", "..", "new.h5", NULL);
  g_autofree char *n3 = g_build_filename (dir, "sub", "new.h5", NULL);
  g_autofree char *n4 = g_build_filename (dir, "nodir", "..", "new.h5", NULL);
  ck_assert (sp_file_same (n1, n2));
  ck_assert (!sp_file_same (n1, n3));
  ck_assert (sp_file_same (n1, n4));
  /* one exists, the other not */
  ck_assert (!sp_file_same (a, n1));
  /* the directory resolved, the file's own name kept (a link is not
   * followed: an atomic rename replaces it) */
  g_autofree char *real_dir = realpath (dir, NULL);
  g_autofree char *want_sym = g_build_filename (real_dir, "sym", NULL);
  g_autofree char *want_new = g_build_filename (real_dir, "new.h5", NULL);
  g_autofree char *r_sym = sp_file_resolved_path (sym);
  g_autofree char *r_new = sp_file_resolved_path (n2);
  ck_assert_str_eq (r_sym, want_sym);
  ck_assert_str_eq (r_new, want_new);
}
END_TEST

START_TEST (test_write_mode)
{
  static const struct { mode_t mask, want; } cases[] = { { 022, 0644 }, { 077, 0600 }, { 002, 0664 } };
  g_autofree char *p = g_build_filename (dir, "out.txt", NULL);
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      mode_t old = umask (cases[i].mask);
      GError *error = NULL;
      gboolean ok = sp_file_write_atomic (p, "hello\n", 6, &error);
      umask (old);
      SP_ASSERT_NO_ERROR (error);
      ck_assert (ok);
      GStatBuf st;
      ck_assert_int_eq (g_stat (p, &st), 0);
      ck_assert_msg ((st.st_mode & 0777) == cases[i].want, "umask %03o: mode %03o, expected %03o",
                     (unsigned) cases[i].mask, (unsigned) (st.st_mode & 0777),
                     (unsigned) cases[i].want);
      g_autofree char *text = NULL;
      ck_assert (g_file_get_contents (p, &text, NULL, NULL));
      ck_assert_str_eq (text, "hello\n");
      ck_assert_uint_eq (n_temps (), 0);
    }
  /* a directory that does not exist: an error naming the path, nothing left */
  g_autofree char *nowhere = g_build_filename (dir, "nodir", "x", NULL);
  GError *error = NULL;
  ck_assert (!sp_file_write_atomic (nowhere, "x", 1, &error));
  ck_assert (error != NULL && strstr (error->message, nowhere) != NULL);
  g_clear_error (&error);
}
END_TEST

START_TEST (test_commit_discard)
{
  g_autofree char *p = g_build_filename (dir, "t.h5", NULL);
  char *tmp = NULL;
  int fd = sp_file_temp_open (p, &tmp, NULL);
  ck_assert_int_ge (fd, 0);
  ck_assert (g_str_has_prefix (tmp, p) && strstr (tmp, ".tmp-") != NULL);
  ck_assert (g_file_test (tmp, G_FILE_TEST_EXISTS));
  close (fd);
  sp_file_temp_discard (tmp);
  ck_assert (!g_file_test (tmp, G_FILE_TEST_EXISTS));
  g_free (tmp);
  fd = sp_file_temp_open (p, &tmp, NULL);
  ck_assert_int_ge (fd, 0);
  ck_assert_int_eq (write (fd, "x", 1), 1);
  close (fd);
  ck_assert (sp_file_temp_commit (tmp, p, NULL));
  ck_assert (g_file_test (p, G_FILE_TEST_EXISTS));
  ck_assert_uint_eq (n_temps (), 0);
  g_free (tmp);
  /* more temporary files than registry slots still work (the extra ones
   * are just not removed on a signal) */
  char *many[SP_FILE_MAX_TEMPS + 4];
  for (guint i = 0; i < G_N_ELEMENTS (many); i++)
    {
      fd = sp_file_temp_open (p, &many[i], NULL);
      ck_assert_int_ge (fd, 0);
      close (fd);
    }
  for (guint i = 0; i < G_N_ELEMENTS (many); i++)
    {
      sp_file_temp_discard (many[i]);
      g_free (many[i]);
    }
  ck_assert_uint_eq (n_temps (), 0);
}
END_TEST

/* A child with the handler installed opens two temporary files and sends
 * itself `sig`: it must die of that signal, remove both, and write the
 * note on stderr. */
static void
signal_case (int sig)
{
  g_autofree char *p = g_build_filename (dir, "sig.h5", NULL);
  g_autofree char *err = g_build_filename (dir, "stderr.txt", NULL);
  pid_t pid = fork ();
  ck_assert_int_ge (pid, 0);
  if (pid == 0)
    {
      int fd = open (err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2 (fd, 2);
      signal (sig, SIG_DFL);
      sp_file_cleanup_on_signals ();
      sp_file_set_interrupt_note ("interrupted: see the note\n");
      char *t1 = NULL, *t2 = NULL;
      if (sp_file_temp_open (p, &t1, NULL) < 0 || sp_file_temp_open (p, &t2, NULL) < 0)
        _exit (3);
      kill (getpid (), sig);
      _exit (4); /* not reached */
    }
  int status = 0;
  ck_assert_int_eq (waitpid (pid, &status, 0), pid);
  ck_assert_msg (WIFSIGNALED (status) && WTERMSIG (status) == sig,
                 "signal %d: child status %#x, expected death by that signal", sig, status);
  ck_assert_uint_eq (n_temps (), 0);
  g_autofree char *text = NULL;
  ck_assert (g_file_get_contents (err, &text, NULL, NULL));
  ck_assert_str_eq (text, "interrupted: see the note\n");
}

START_TEST (test_signals)
{
  signal_case (SIGINT);
  signal_case (SIGTERM);
  signal_case (SIGHUP);
}
END_TEST

/* Another thread of the child sends the process SIGTERM while the main
 * thread is between creating a temporary file and registering it
 * (SP_TEST_TEMP_CREATE_PAUSE): the main thread blocks the signal there, so
 * the other thread takes it, and its handler must wait for the file to be
 * registered before it removes what is registered.  This thread sends the
 * process SIGTERM after `data` milliseconds. */
static gpointer
send_term_after (gpointer data)
{
  g_usleep (GPOINTER_TO_UINT (data) * 1000);
  kill (getpid (), SIGTERM);
  g_usleep (10 * G_USEC_PER_SEC);
  return NULL;
}

/* Writes another output at 0.5 s, while the handler waits for the main
 * thread's window, and ends the process with status 1 if that fails (as
 * a command's error path would). */
static gpointer
write_other (gpointer data)
{
  g_usleep (500 * 1000);
  if (!sp_file_write_atomic (data, "x", 1, NULL))
    exit (1);
  g_usleep (10 * G_USEC_PER_SEC);
  return NULL;
}

/* The case above, and while the handler waits: `second` sends SIGTERM
 * again from a third thread (Ctrl-C twice: that thread must not take the
 * default action at once), `writer` starts another output on a thread of
 * its own (refused, it must not end the process before the handler). */
static void
another_thread_case (gboolean second, gboolean writer)
{
  g_autofree char *p = g_build_filename (dir, "thread.h5", NULL);
  g_autofree char *other = g_build_filename (dir, "other.json", NULL);
  pid_t pid = fork ();
  ck_assert_int_ge (pid, 0);
  if (pid == 0)
    {
      signal (SIGTERM, SIG_DFL);
      sp_file_cleanup_on_signals ();
      g_setenv ("SP_TEST_TEMP_CREATE_PAUSE", "1", TRUE);
      g_thread_unref (g_thread_new ("sender", send_term_after, GUINT_TO_POINTER (300)));
      if (second)
        g_thread_unref (g_thread_new ("again", send_term_after, GUINT_TO_POINTER (500)));
      if (writer)
        g_thread_unref (g_thread_new ("writer", write_other, other));
      char *t = NULL;
      if (sp_file_temp_open (p, &t, NULL) < 0)
        _exit (3);
      g_usleep (10 * G_USEC_PER_SEC); /* the signal ends the process first */
      _exit (4);
    }
  int status = 0;
  ck_assert_int_eq (waitpid (pid, &status, 0), pid);
  ck_assert_msg (WIFSIGNALED (status) && WTERMSIG (status) == SIGTERM,
                 "second %d writer %d: child status %#x, expected death by SIGTERM", second,
                 writer, status);
  ck_assert_msg (n_temps () == 0, "second %d writer %d: %u temporary files left", second, writer,
                 n_temps ());
  ck_assert (!g_file_test (other, G_FILE_TEST_EXISTS));
}

START_TEST (test_signal_on_another_thread)
{
  another_thread_case (FALSE, FALSE);
  another_thread_case (TRUE, FALSE);
  another_thread_case (FALSE, TRUE);
}
END_TEST

/* A signal ignored before installation (nohup) stays ignored. */
START_TEST (test_ignored_stays_ignored)
{
  pid_t pid = fork ();
  ck_assert_int_ge (pid, 0);
  if (pid == 0)
    {
      signal (SIGHUP, SIG_IGN);
      sp_file_cleanup_on_signals ();
      raise (SIGHUP);
      _exit (0);
    }
  int status = 0;
  ck_assert_int_eq (waitpid (pid, &status, 0), pid);
  ck_assert (WIFEXITED (status) && WEXITSTATUS (status) == 0);
}
END_TEST

static Suite *
file_suite (void)
{
  Suite *s = suite_create ("file");
  TCase *tc = tcase_create ("core");
  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_add_test (tc, test_same);
  tcase_add_test (tc, test_write_mode);
  tcase_add_test (tc, test_commit_discard);
  tcase_add_test (tc, test_signals);
  tcase_add_test (tc, test_signal_on_another_thread);
  tcase_add_test (tc, test_ignored_stays_ignored);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  return sp_test_run (file_suite ());
}
