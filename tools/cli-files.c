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
  gint family;  /* the family (files->families) it is a member of, or -1 */
} Entry;

/* Outputs HEAD<r>TAIL for r < count (a Chakra trace's rank files, a run's
 * spill files): too many to list, so matched by name */
typedef struct {
  char *option;
  char *dir;    /* HEAD's directory, resolved */
  char *head;   /* HEAD's file-name part */
  char *tail;
  guint64 count;
} Family;

struct SpCliFiles {
  char *command;
  GArray *entries; /* Entry */
  GPtrArray *families; /* Family */
};

static void
family_free (gpointer p)
{
  Family *f = p;
  g_free (f->option);
  g_free (f->dir);
  g_free (f->head);
  g_free (f->tail);
  g_free (f);
}

SpCliFiles *
sp_cli_files_new (const char *command)
{
  SpCliFiles *f = g_new0 (SpCliFiles, 1);
  f->command = g_strdup (command);
  f->entries = g_array_new (FALSE, FALSE, sizeof (Entry));
  f->families = g_ptr_array_new_with_free_func (family_free);
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
  g_ptr_array_unref (files->families);
  g_free (files->command);
  g_free (files);
}

static void
add (SpCliFiles *files, const char *option, const char *path, gboolean output)
{
  /* "-" is standard input or output: nothing on disk to protect */
  if (path == NULL || *path == '\0' || strcmp (path, "-") == 0)
    return;
  Entry e = { g_strdup (option), g_strdup (path), output, -1 };
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

/* `path` absolute with its directory's symbolic links and ".." resolved
 * (lexically where the directory does not exist), and with its own link
 * followed too when `follow` and it exists: where writing to it lands
 * (follow FALSE: an output is renamed into place, replacing a link, not
 * its target) or what reading it reads (follow TRUE). */
static char *
resolved (const char *path, gboolean follow)
{
  char *real = follow ? realpath (path, NULL) : NULL;
  if (real == NULL)
    return sp_file_resolved_path (path);
  char *out = g_strdup (real);
  free (real);
  return out;
}

void
sp_cli_files_output_family (SpCliFiles *files, const char *option, const char *head,
                            const char *tail, guint64 count)
{
  if (head == NULL || *head == '\0' || count == 0)
    return;
  g_autofree char *first = g_strdup_printf ("%s0%s", head, tail);
  g_autofree char *last = g_strdup_printf ("%s%" G_GUINT64_FORMAT "%s", head, count - 1, tail);
  g_autofree char *o_first = g_strdup_printf ("%s (rank 0)", option);
  g_autofree char *o_last = g_strdup_printf ("%s (last rank)", option);
  /* the first and the last as outputs (their places checked, and each
   * against the other outputs); every member by name below */
  guint from = files->entries->len;
  add (files, o_first, first, TRUE);
  if (count > 1)
    add (files, o_last, last, TRUE);
  for (guint i = from; i < files->entries->len; i++) /* members: not checked against the family */
    g_array_index (files->entries, Entry, i).family = (gint) files->families->len;
  /* HEAD's directory resolved, its file-name part as written (HEAD ends
   * in "." or ".rank": never a directory of its own) */
  g_autofree char *r = resolved (first, FALSE);
  Family *f = g_new0 (Family, 1);
  f->option = g_strdup (option);
  f->dir = g_path_get_dirname (r);
  g_autofree char *name = g_path_get_basename (r);
  gsize nh = strlen (name) - strlen ("0") - strlen (tail); /* name = head part + "0" + tail */
  f->head = g_strndup (name, nh);
  f->tail = g_strdup (tail);
  f->count = count;
  g_ptr_array_add (files->families, f);
}

/* The member of family `f` that `path` is (its rank), or -1: by where
 * writing to it lands for an output, what reading it reads for an input. */
static gint64
family_member (const Family *f, const char *path, gboolean output)
{
  g_autofree char *r = resolved (path, !output);
  g_autofree char *dir = g_path_get_dirname (r);
  g_autofree char *name = g_path_get_basename (r);
  gsize nh = strlen (f->head), nt = strlen (f->tail), n = strlen (name);
  if (strcmp (dir, f->dir) != 0 || n < nh + 1 + nt || strncmp (name, f->head, nh) != 0
      || strcmp (name + n - nt, f->tail) != 0)
    return -1;
  g_autofree char *digits = g_strndup (name + nh, n - nh - nt);
  guint64 v;
  if ((digits[0] == '0' && digits[1] != '\0') || !g_ascii_isdigit (digits[0])
      || !g_ascii_string_to_unsigned (digits, 10, 0, f->count - 1, &v, NULL))
    return -1;
  return (gint64) v;
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
  /* a family's members, by name, against every other file */
  for (guint k = 0; k < files->families->len; k++)
    {
      const Family *f = files->families->pdata[k];
      for (guint j = 0; j < n; j++)
        {
          const Entry *x = &es[j];
          if (x->family == (gint) k)
            continue;
          gint64 r = family_member (f, x->path, x->output);
          if (r < 0)
            continue;
          g_autofree char *ranks = f->count <= G_MAXUINT32
                                     ? g_strdup_printf ("ranks 0 to %" G_GUINT64_FORMAT, f->count - 1)
                                     : g_strdup ("one per rank");
          sp_cli_fail (files->command, SP_EXIT_USAGE,
                       "%s '%s' is rank %" G_GINT64_FORMAT "'s file of %s '%s/%s<rank>%s' "
                       "(%s): refusing to %s (change one of them)",
                       x->option, x->path, r, f->option, f->dir, f->head, f->tail, ranks,
                       x->output ? "write both" : "overwrite an input");
          return FALSE;
        }
    }
  return TRUE;
}
