/* file-read.h — reading a whole input file with a size limit (private to
 * lib/).  Files from other machines and other people are read whole by the
 * parsers; the limit is checked as the bytes arrive, so a pipe or a device
 * (/dev/zero) costs no more memory than a large regular file would. */
#pragma once
#include <glib.h>

G_BEGIN_DECLS

/* Read `path` into *out_text (NUL-terminated, g_free) and *out_len
 * (bytes, without the NUL).  More than `max_bytes` bytes fails with
 * SP_ERROR_INVALID_ARGUMENT "PATH: N bytes is larger than any WHAT (limit
 * M)"; a file that cannot be opened or read, or a directory, fails with
 * SP_ERROR_IO "PATH: reason". */
gboolean sp_file_read_bounded (const char *path, gsize max_bytes, const char *what,
                               char **out_text, gsize *out_len, GError **error);

G_END_DECLS
