/* The files a subcommand reads and writes, checked before any work (see
 * cli.h): no output may be an input or another output, and every output
 * must be writable where it is going.  One check for every subcommand, so
 * that none of them can overwrite what it reads. */
#include "config.h"
#include "cli.h"
#include "shardplan/file.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
  char *option; /* "--plan", "-o/--output", "trace argument" */
  char *path;
  gboolean output;
} Entry;

struct SpCliFiles {
  char *command;
  GArray *entries; /* Entry */
};

SpCliFiles *
sp_cli_files_new (const char *command)
{
  SpCliFiles *f = g_new0 (SpCliFiles, 1);
  f->command = g_strdup (command);
  f->entries = g_array_new (FALSE, FALSE, sizeof (Entry));
  return f;
}

void
sp_cli_files_free (SpCliFiles *files)
{
  if (files == NULL)
    return;
  for (guint i = 0; i < files->entries->len; i++)
    {
      Entry *e = &g_array_index (files->entries, Entry, i);
      g_free (e->option);
      g_free (e->path);
    }
  g_array_unref (files->entries);
  g_free (files->command);
  g_free (files);
}

static void
add (SpCliFiles *files, const char *option, const char *path, gboolean output)
{
  /* "-" is standard input or output: nothing on disk to protect */
  if (path == NULL || *path == '\0' || strcmp (path, "-") == 0)
    return;
  Entry e = { g_strdup (option), g_strdup (path), output };
  g_array_append_val (files->entries, e);
}

void
sp_cli_files_input (SpCliFiles *files, const char *option, const char *path)
{
  add (files, option, path, FALSE);
}

void
sp_cli_files_inputs (SpCliFiles *files, const char *option, int n, char **paths)
{
  for (int i = 0; i < n; i++)
    add (files, option, paths[i], FALSE);
}

void
sp_cli_files_output (SpCliFiles *files, const char *option, const char *path)
{
  add (files, option, path, TRUE);
}

/* Where an output would go must be a directory we can create files in, and
 * the output itself, when it exists, a regular file (rename would replace a
 * directory entry such as /dev/null). */
static gboolean
check_output_place (const char *command, const Entry *e)
{
  GStatBuf st;
  if (g_stat (e->path, &st) == 0)
    {
      if (S_ISDIR (st.st_mode))
        {
          sp_cli_fail (command, SP_EXIT_USAGE, "%s '%s' is a directory (expected a file to write)",
                       e->option, e->path);
          return FALSE;
        }
      if (!S_ISREG (st.st_mode))
        {
          sp_cli_fail (command, SP_EXIT_USAGE, "%s '%s' exists and is not a regular file: refusing "
                       "to replace it (give a file path)", e->option, e->path);
          return FALSE;
        }
    }
  g_autofree char *dir = g_path_get_dirname (e->path);
  if (g_stat (dir, &st) != 0)
    {
      int err = errno;
      sp_cli_fail (command, SP_EXIT_USAGE, "%s '%s': directory '%s' %s", e->option, e->path, dir,
                   err == ENOENT ? "does not exist" : g_strerror (err));
      return FALSE;
    }
  if (!S_ISDIR (st.st_mode))
    {
      sp_cli_fail (command, SP_EXIT_USAGE, "%s '%s': '%s' is not a directory", e->option, e->path,
                   dir);
      return FALSE;
    }
  if (access (dir, W_OK | X_OK) != 0)
    {
      int err = errno;
      sp_cli_fail (command, SP_EXIT_USAGE, "%s '%s': cannot create files in directory '%s': %s",
                   e->option, e->path, dir, g_strerror (err));
      return FALSE;
    }
  return TRUE;
}

gboolean
sp_cli_files_check (const SpCliFiles *files)
{
  const Entry *es = (const Entry *) files->entries->data;
  guint n = files->entries->len;
  for (guint i = 0; i < n; i++)
    {
      const Entry *o = &es[i];
      if (!o->output)
        continue;
      if (!check_output_place (files->command, o))
        return FALSE;
      for (guint j = 0; j < n; j++)
        {
          const Entry *x = &es[j];
          if (j == i || (x->output && j > i))
            continue; /* each pair of outputs once, from the later one */
          /* An input that does not exist cannot be overwritten (the
           * command reports it missing), and may be a preset's name. */
          if (!x->output && !g_file_test (x->path, G_FILE_TEST_EXISTS))
            continue;
          if (!sp_file_same (o->path, x->path))
            continue;
          if (x->output)
            sp_cli_fail (files->command, SP_EXIT_USAGE,
                         "%s '%s' and %s '%s' are the same file: give each output its own file",
                         x->option, x->path, o->option, o->path);
          else
            sp_cli_fail (files->command, SP_EXIT_USAGE,
                         "%s '%s' is the same file as the input %s '%s': refusing to overwrite an "
                         "input (give another output file)", o->option, o->path, x->option,
                         x->path);
          return FALSE;
        }
    }
  return TRUE;
}
