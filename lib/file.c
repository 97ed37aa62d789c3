/* Temporary files, their removal on a signal, and file identity
 * (shardplan/file.h). */
#include "config.h"
#include "shardplan/file.h"
#include "shardplan/error.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The registry the signal handler walks: fixed slots, no allocation.  A
 * slot is claimed (FREE → FILLING) with a compare-and-swap, filled, then
 * published (LIVE); the handler only reads LIVE slots. */
enum { SLOT_FREE = 0, SLOT_FILLING = 1, SLOT_LIVE = 2 };

typedef struct {
  gint state;
  char path[PATH_MAX];
} TempSlot;

static TempSlot temps[SP_FILE_MAX_TEMPS];

#define NOTE_MAX 1024
static char note_buf[NOTE_MAX];
static volatile sig_atomic_t note_len;

/* SIGPIPE too: a closed pipe on standard output (`| head`) ends a command
 * as it ends any filter, and its temporary file must go with it. */
static const int cleanup_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };

/* A thread between mkstemp and registering the file blocks the cleanup
 * signals, but another thread of the process (a sweep worker, the
 * progress line, the executor's watchdog, a thread of MPI or CUDA) may
 * take the signal meanwhile.  `creating` counts the threads inside that
 * window; the handler first sets `ending` (no thread enters the window
 * after it) and waits for `creating` to reach 0, so the file just made is
 * registered before it walks the registry. */
static gint creating;
static gint ending;

/* How long the handler waits for a thread inside the window (mkstemp on
 * a hung network file system must not keep the process from ending). */
#define WINDOW_WAIT_MS 2000

/* FALSE when the registry is full (or the path too long): the caller
 * says so once it has left the signal-blocked window (g_debug takes a
 * lock an interrupted thread may hold). */
static gboolean
register_temp (const char *tmp)
{
  if (strlen (tmp) >= PATH_MAX)
    return FALSE;
  for (guint i = 0; i < SP_FILE_MAX_TEMPS; i++)
    if (g_atomic_int_compare_and_exchange (&temps[i].state, SLOT_FREE, SLOT_FILLING))
      {
        strcpy (temps[i].path, tmp);
        g_atomic_int_set (&temps[i].state, SLOT_LIVE);
        return TRUE;
      }
  return FALSE;
}

static void
unregister_temp (const char *tmp)
{
  for (guint i = 0; i < SP_FILE_MAX_TEMPS; i++)
    if (g_atomic_int_get (&temps[i].state) == SLOT_LIVE && strcmp (temps[i].path, tmp) == 0
        && g_atomic_int_compare_and_exchange (&temps[i].state, SLOT_LIVE, SLOT_FILLING))
      {
        temps[i].path[0] = '\0';
        g_atomic_int_set (&temps[i].state, SLOT_FREE);
        return;
      }
}

/* Only async-signal-safe calls: poll, pause, unlink, write, sigaction,
 * raise, pthread_sigmask (and atomic loads and stores).  The first signal
 * ends the process; one that arrives meanwhile on another thread (Ctrl-C
 * twice, a launcher repeating SIGTERM) waits for it instead of taking the
 * default action at once, which would end the process before the
 * temporary files are removed. */
static void
on_signal (int sig)
{
  int saved = errno;
  if (!g_atomic_int_compare_and_exchange (&ending, 0, 1))
    for (;;)
      pause ();
  for (int waited = 0; g_atomic_int_get (&creating) > 0 && waited < WINDOW_WAIT_MS; waited++)
    poll (NULL, 0, 1);
  for (guint i = 0; i < SP_FILE_MAX_TEMPS; i++)
    if (g_atomic_int_get (&temps[i].state) == SLOT_LIVE)
      unlink (temps[i].path);
  if (note_len > 0)
    {
      ssize_t r = write (STDERR_FILENO, note_buf, (size_t) note_len);
      (void) r;
    }
  /* The default action back, and the signal delivered again, so that the
   * process ends the way the sender meant (status 128 + sig). */
  struct sigaction dfl;
  memset (&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset (&dfl.sa_mask);
  sigaction (sig, &dfl, NULL);
  raise (sig);
  sigset_t set;
  sigemptyset (&set);
  sigaddset (&set, sig);
  pthread_sigmask (SIG_UNBLOCK, &set, NULL);
  errno = saved;
}

void
sp_file_cleanup_on_signals (void)
{
  static gsize installed = 0;
  if (!g_once_init_enter (&installed))
    return;
  struct sigaction sa;
  memset (&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = 0;
  sigemptyset (&sa.sa_mask);
  for (gsize i = 0; i < G_N_ELEMENTS (cleanup_signals); i++)
    sigaddset (&sa.sa_mask, cleanup_signals[i]);
  for (gsize i = 0; i < G_N_ELEMENTS (cleanup_signals); i++)
    {
      struct sigaction old;
      if (sigaction (cleanup_signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
        continue; /* nohup, or a background job of a script: leave it ignored */
      sigaction (cleanup_signals[i], &sa, NULL);
    }
  g_once_init_leave (&installed, 1);
}

void
sp_file_set_interrupt_note (const char *note)
{
  note_len = 0;
  if (note == NULL)
    return;
  gsize n = MIN (strlen (note), NOTE_MAX - 1);
  memcpy (note_buf, note, n);
  note_len = (sig_atomic_t) n;
}

/* 0666 less the process's umask (read without a window where it is 0 for
 * other threads when /proc tells it; else the classic set-and-restore). */
static mode_t
default_file_mode (void)
{
  g_autofree char *status = NULL;
  if (g_file_get_contents ("/proc/self/status", &status, NULL, NULL))
    {
      const char *u = strstr (status, "\nUmask:");
      if (u != NULL)
        return 0666 & ~(mode_t) strtoul (u + 7, NULL, 8);
    }
  mode_t mask = umask (0);
  umask (mask);
  return 0666 & ~mask;
}

static void
test_pause (const char *variable)
{
  const char *s = g_getenv (variable);
  if (s != NULL && *s != '\0')
    g_usleep ((gulong) (g_ascii_strtod (s, NULL) * G_USEC_PER_SEC));
}

int
sp_file_temp_open (const char *path, char **out_tmp, GError **error)
{
  g_return_val_if_fail (path != NULL && out_tmp != NULL, -1);
  char *tmp = g_strdup_printf ("%s.tmp-XXXXXX", path);
  /* Block the cleanup signals between creating the file and registering
   * it, so that no signal can leave it behind. */
  sigset_t block, old;
  sigemptyset (&block);
  for (gsize i = 0; i < G_N_ELEMENTS (cleanup_signals); i++)
    sigaddset (&block, cleanup_signals[i]);
  pthread_sigmask (SIG_BLOCK, &block, &old);
  /* ... and tell a handler running on another thread to wait for it */
  g_atomic_int_inc (&creating);
  int fd = -1, e = 0;
  gboolean refused = g_atomic_int_get (&ending), registered = FALSE;
  if (!refused)
    {
      fd = g_mkstemp (tmp);
      e = errno;
      if (fd >= 0)
        {
          test_pause ("SP_TEST_TEMP_CREATE_PAUSE");
          registered = register_temp (tmp);
        }
    }
  g_atomic_int_add (&creating, -1);
  pthread_sigmask (SIG_SETMASK, &old, NULL);
  if (refused)
    {
      /* A signal's handler is removing the temporary files and will end
       * the process: returning the error now could let the caller end it
       * first (exit status 1, files left).  Outwait the handler. */
      g_usleep ((gulong) (WINDOW_WAIT_MS + 1000) * 1000);
      g_set_error (error, SP_ERROR, SP_ERROR_IO, "cannot create a temporary file for %s: the "
                   "process is ending on a signal", path);
      g_free (tmp);
      return -1;
    }
  if (fd < 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_IO, "cannot create a temporary file for %s: %s", path,
                   g_strerror (e));
      g_free (tmp);
      return -1;
    }
  if (!registered)
    g_debug ("more than %d temporary files (or a path past PATH_MAX): %s is not removed on a "
             "signal", SP_FILE_MAX_TEMPS, tmp);
  /* mkstemp creates 0600; the output should get the permissions any file
   * the user writes gets. */
  if (fchmod (fd, default_file_mode ()) != 0)
    g_debug ("fchmod %s: %s", tmp, g_strerror (errno));
  test_pause ("SP_TEST_TEMP_PAUSE");
  *out_tmp = tmp;
  return fd;
}

gboolean
sp_file_temp_commit (const char *tmp, const char *path, GError **error)
{
  g_return_val_if_fail (tmp != NULL && path != NULL, FALSE);
  if (g_rename (tmp, path) != 0)
    {
      int e = errno;
      g_set_error (error, SP_ERROR, SP_ERROR_IO, "cannot write %s: %s", path, g_strerror (e));
      sp_file_temp_discard (tmp);
      return FALSE;
    }
  unregister_temp (tmp);
  /* the rename itself on the disk: its directory flushed (a file system
   * that cannot sync a directory says EINVAL: nothing more to do there) */
  g_autofree char *dir = g_path_get_dirname (path);
  int fd = g_open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  int e = fd < 0 ? 0 : fsync (fd) != 0 ? errno : 0;
  if (fd >= 0)
    close (fd);
  if (e != 0 && e != EINVAL && e != EBADF)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_IO, "%s: written, but its directory %s cannot be "
                   "flushed to disk: %s", path, dir, g_strerror (e));
      return FALSE;
    }
  return TRUE;
}

void
sp_file_temp_discard (const char *tmp)
{
  if (tmp == NULL)
    return;
  g_unlink (tmp);
  unregister_temp (tmp);
}

gboolean
sp_file_write_atomic (const char *path, const char *contents, gsize length, GError **error)
{
  g_return_val_if_fail (path != NULL && (contents != NULL || length == 0), FALSE);
  g_autofree char *tmp = NULL;
  int fd = sp_file_temp_open (path, &tmp, error);
  if (fd < 0)
    return FALSE;
  gsize done = 0;
  int e = 0;
  while (done < length)
    {
      ssize_t n = write (fd, contents + done, length - done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        {
          e = errno;
          break;
        }
      done += (gsize) n;
    }
  if (e == 0 && fsync (fd) != 0)
    e = errno;
  if (close (fd) != 0 && e == 0)
    e = errno;
  if (e != 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_IO, "cannot write %s: %s", path, g_strerror (e));
      sp_file_temp_discard (tmp);
      return FALSE;
    }
  return sp_file_temp_commit (tmp, path, error);
}

char *
sp_file_resolved_path (const char *path)
{
  g_autofree char *abs = g_canonicalize_filename (path, NULL);
  g_autofree char *dir = g_path_get_dirname (abs);
  g_autofree char *base = g_path_get_basename (abs);
  char *real = realpath (dir, NULL);
  if (real == NULL)
    return g_steal_pointer (&abs);
  char *out = g_build_filename (real, base, NULL);
  free (real);
  return out;
}

gboolean
sp_file_same (const char *a, const char *b)
{
  g_return_val_if_fail (a != NULL && b != NULL, FALSE);
  GStatBuf sa, sb;
  gboolean ea = g_stat (a, &sa) == 0, eb = g_stat (b, &sb) == 0;
  if (ea && eb)
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  if (ea || eb)
    return FALSE;
  g_autofree char *ca = sp_file_resolved_path (a);
  g_autofree char *cb = sp_file_resolved_path (b);
  return strcmp (ca, cb) == 0;
}
