/* Whole-file reads with a size limit (file-read.h). */
#include "config.h"
#include "file-read.h"
#include "shardplan/error.h"

#include <glib/gstdio.h>

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>

static gboolean
too_large (const char *path, guint64 size, gsize max_bytes, const char *what, GError **error)
{
  if (size == 0)
    g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                 "%s: more than %" G_GSIZE_FORMAT " bytes: larger than any %s", path, max_bytes,
                 what);
  else
    g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                 "%s: %" G_GUINT64_FORMAT " bytes is larger than any %s (limit %" G_GSIZE_FORMAT
                 ")", path, size, what, max_bytes);
  return FALSE;
}

gboolean
sp_file_read_bounded (const char *path, gsize max_bytes, const char *what, char **out_text,
                      gsize *out_len, GError **error)
{
  FILE *f = g_fopen (path, "rb");
  if (f == NULL)
    {
      int e = errno;
      g_set_error (error, SP_ERROR, SP_ERROR_IO, "%s: %s", path, g_strerror (e));
      return FALSE;
    }
  struct stat st;
  if (fstat (fileno (f), &st) == 0)
    {
      if (S_ISDIR (st.st_mode))
        {
          fclose (f);
          g_set_error (error, SP_ERROR, SP_ERROR_IO, "%s: is a directory, not a %s", path, what);
          return FALSE;
        }
      if (S_ISREG (st.st_mode) && (guint64) st.st_size > max_bytes)
        {
          fclose (f);
          return too_large (path, (guint64) st.st_size, max_bytes, what, error);
        }
    }
  GByteArray *buf = g_byte_array_new ();
  guint8 chunk[65536];
  size_t n;
  while ((n = fread (chunk, 1, sizeof chunk, f)) > 0)
    {
      if (n > max_bytes - buf->len)
        {
          fclose (f);
          g_byte_array_unref (buf);
          return too_large (path, 0, max_bytes, what, error);
        }
      g_byte_array_append (buf, chunk, (guint) n);
    }
  int e = ferror (f) ? errno : 0;
  fclose (f);
  if (e != 0)
    {
      g_byte_array_unref (buf);
      g_set_error (error, SP_ERROR, SP_ERROR_IO, "%s: %s", path, g_strerror (e));
      return FALSE;
    }
  *out_len = buf->len;
  g_byte_array_append (buf, (const guint8 *) "", 1);
  *out_text = (char *) g_byte_array_free (buf, FALSE);
  return TRUE;
}
