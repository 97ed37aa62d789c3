/* tests/fuzz/fuzz-common.h — what every libFuzzer target shares (issue 15).
 *
 * A target is one LLVMFuzzerTestOneInput calling a public entry point of a
 * parser of untrusted input on the fuzzer's bytes.  The bytes are handed
 * over exactly as they are (no NUL added) so that ASan sees any read past
 * `length`.  GLib warnings and criticals are findings: a parser must answer
 * a hostile input with a GError, never with g_warning or a failed
 * g_return_if_fail, so they abort (and libFuzzer saves the input); lower
 * levels are dropped to keep the fuzzer fast.
 *
 * Parsers that only read files (HDF5 traces, spill files) get the bytes
 * through one temporary file per process, rewritten for each input and
 * removed at exit.  It lives in /dev/shm when TMPDIR is not set: on ext4 a
 * file truncated and rewritten is flushed to disk at each close
 * (auto_da_alloc), which made the spill target 10 times slower; and it is
 * rewritten in place and then cut to size, never truncated to zero.
 */
#pragma once
#include <glib.h>
#include <glib/gstdio.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);
int LLVMFuzzerInitialize (int *argc, char ***argv);

G_GNUC_UNUSED static GLogWriterOutput
fuzz_log_writer (GLogLevelFlags level, const GLogField *fields, gsize n_fields, gpointer unused)
{
  if (level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING))
    {
      g_log_writer_standard_streams (level, fields, n_fields, unused);
      abort ();
    }
  return G_LOG_WRITER_HANDLED;
}

G_GNUC_UNUSED static void
fuzz_init_log (void)
{
  g_log_set_writer_func (fuzz_log_writer, NULL, NULL);
}

/* LLVMFuzzerInitialize for a target whose only set-up is the log writer. */
#define FUZZ_INIT_LOG_ONLY                                                    \
  int LLVMFuzzerInitialize (int *argc, char ***argv)                          \
  {                                                                           \
    (void) argc;                                                              \
    (void) argv;                                                              \
    fuzz_init_log ();                                                         \
    return 0;                                                                 \
  }

/* An input the parser refused: it must have said why.  Frees `e`. */
G_GNUC_UNUSED static void
fuzz_refused (GError *e)
{
  g_assert (e != NULL && e->message[0] != '\0');
  g_error_free (e);
}

static char *fuzz_tmp_path;

G_GNUC_UNUSED static void
fuzz_tmp_remove (void)
{
  if (fuzz_tmp_path)
    g_unlink (fuzz_tmp_path);
}

/* The process's temporary file ("…/sp-fuzz-PID-XXXXXX<suffix>"), created
 * on the first call. */
G_GNUC_UNUSED static const char *
fuzz_tmp_file (const char *suffix)
{
  if (!fuzz_tmp_path)
    {
      g_autofree char *name = g_strdup_printf ("sp-fuzz-%d-XXXXXX%s", (int) getpid (), suffix);
      GError *e = NULL;
      if (!g_getenv ("TMPDIR") && g_file_test ("/dev/shm", G_FILE_TEST_IS_DIR)
          && access ("/dev/shm", W_OK) == 0)
        g_setenv ("TMPDIR", "/dev/shm", TRUE);
      int fd = g_file_open_tmp (name, &fuzz_tmp_path, &e);
      if (fd < 0)
        {
          fprintf (stderr, "fuzz: cannot create a temporary file: %s\n", e->message);
          exit (1);
        }
      close (fd);
      atexit (fuzz_tmp_remove);
    }
  return fuzz_tmp_path;
}

/* Write the input to the temporary file and return its path. */
G_GNUC_UNUSED static const char *
fuzz_write_tmp (const uint8_t *data, size_t size, const char *suffix)
{
  const char *path = fuzz_tmp_file (suffix);
  int fd = open (path, O_WRONLY);
  gboolean ok = fd >= 0;
  for (size_t done = 0; ok && done < size;)
    {
      ssize_t w = pwrite (fd, data + done, size - done, (off_t) done);
      ok = w > 0;
      done += ok ? (size_t) w : 0;
    }
  ok = ok && ftruncate (fd, (off_t) size) == 0;
  if (fd >= 0 && close (fd) != 0)
    ok = FALSE;
  if (!ok)
    {
      fprintf (stderr, "fuzz: cannot write %s\n", path);
      exit (1);
    }
  return path;
}
