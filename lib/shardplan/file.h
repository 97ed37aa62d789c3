/* shardplan/file.h — writing output files safely.
 *
 * Every file shardplan writes (traces, plans, topologies, exports, plots)
 * goes through one path: a temporary file next to the output,
 * "PATH.tmp-XXXXXX", created with mkstemp, then renamed onto PATH once
 * whole.  A file under the final name is therefore always complete, and:
 *
 *   - the temporary file gets the mode any new file gets (0666 less the
 *     umask), not mkstemp's 0600, so the renamed output does too;
 *   - every live temporary file is kept in a registry that a signal handler
 *     can walk without allocating; with sp_file_cleanup_on_signals()
 *     installed, SIGINT, SIGTERM, SIGHUP and SIGPIPE remove them, write the
 *     interrupt note (if any) on stderr and end the process by the same
 *     signal (so the shell sees 130, 143 or 129).  The thread creating a
 *     temporary file blocks those signals until the file is registered,
 *     and a handler that runs on another thread meanwhile waits for it
 *     (up to 2 s), so no signal leaves a temporary file behind, whichever
 *     thread of the process takes it.  A further signal while the first
 *     is handled waits for the first to end the process; a thread that
 *     asks for a temporary file then is refused, after the handler has had
 *     its time (so that its caller's error path cannot end the process
 *     first).
 *
 * Test hooks: SP_TEST_TEMP_PAUSE=SECONDS makes sp_file_temp_open() sleep
 * that long after creating (and registering) the temporary file, so a test
 * can interrupt a write at a known point; SP_TEST_TEMP_CREATE_PAUSE=SECONDS
 * sleeps between creating the file and registering it.
 */
#pragma once
#include <glib.h>

G_BEGIN_DECLS

/* How many temporary files can be live at once and still be removed by the
 * signal handler (a process writes one or two at a time). */
#define SP_FILE_MAX_TEMPS 32

/* Create "path.tmp-XXXXXX" (mode 0666 & ~umask) and register it for
 * removal on a signal.  Returns an open read-write descriptor (the caller
 * closes it; the file stays registered) and the temporary name in
 * *out_tmp (g_free), or -1 with SP_ERROR_IO naming `path`. */
int sp_file_temp_open (const char *path, char **out_tmp, GError **error);

/* Rename the temporary file `tmp` onto `path` and unregister it.  On
 * failure the temporary file is removed and the error names `path`. */
gboolean sp_file_temp_commit (const char *tmp, const char *path, GError **error);

/* Remove the temporary file `tmp` and unregister it (NULL: no-op). */
void sp_file_temp_discard (const char *tmp);

/* Write `length` bytes of `contents` to `path` through a temporary file
 * (fsync, then rename).  The error (SP_ERROR_IO) names `path`. */
gboolean sp_file_write_atomic (const char *path, const char *contents, gsize length,
                               GError **error);

/* Install the handler for SIGINT, SIGTERM, SIGHUP and SIGPIPE that removes every
 * registered temporary file, writes the interrupt note, and re-raises the
 * signal with its default action.  A signal ignored when this is called
 * (nohup, a background job of a script) stays ignored.  Idempotent. */
void sp_file_cleanup_on_signals (void);

/* Text written on stderr (as is: end it with a newline) when one of those
 * signals ends the process, e.g. what to do with files an interrupted run
 * leaves; NULL clears it.  Longer than 1023 bytes is cut. */
void sp_file_set_interrupt_note (const char *note);

/* The absolute path of `path` with its directory resolved (symbolic
 * links and ".."), lexically where the directory does not exist; the file
 * name itself as given (g_free). */
char *sp_file_resolved_path (const char *path);

/* TRUE when `a` and `b` name the same file: the same device and inode
 * when both exist (hard links and symbolic links included), else the
 * same absolute path once the directories are resolved. */
gboolean sp_file_same (const char *a, const char *b);

G_END_DECLS
