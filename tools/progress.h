/* tools/progress.h — the progress line of every long `shardplan` command
 * (sim, run, sweep, trace export, compare, calibrate, chakra export).
 *
 * One line on stderr, redrawn in place:
 *
 *   shardplan sim: [########            ]  40% 93,184/227,328 op instances, 9.6 s, ~14 s left
 *
 * It is drawn only when
 *   - stderr is a terminal (sp_cli_stderr_is_tty()) and the command was not
 *     given -q/--quiet: a log file or a pipe never gets it;
 *   - the work has run SP_PROGRESS_DELAY_US already (shorter work shows
 *     nothing);
 * and redrawn at most every SP_PROGRESS_REDRAW_US.  sp_progress_free()
 * clears the line, so what the command prints afterwards (its summary, its
 * closing "wrote" line) is what it prints without progress.
 *
 * Cost to the work: sp_progress_set() / sp_progress_add() are one relaxed
 * atomic store (or add) and nothing else — no clock read, no lock — so the
 * simulator and the executor can call them per event or per op.  The
 * drawing is done by a thread the reporter starts only when it may draw
 * (a terminal, not quiet); it sleeps between redraws and reads the counter.
 * Thread-safe: any thread may set or add.
 *
 * Tests.  Two ways to see the line without a person at a terminal:
 *   - run the command under a pseudo-terminal (util-linux `script -qec CMD
 *     /dev/null`): the real isatty() path;
 *   - the test-only environment variable SP_TEST_PROGRESS:
 *       "nodelay"  draw from the first moment (no SP_PROGRESS_DELAY_US),
 *                  and at least the final count once, however short the
 *                  work; still only on a terminal — so a short command
 *                  under `script` draws, and a short command with stderr
 *                  in a file proves that nothing is drawn there;
 *       "tty"      also treat stderr as a terminal (for systems without
 *                  `script`).
 *     --quiet wins over both.  tests/tools/progress.sh uses them.
 */
#pragma once
#include <glib.h>

G_BEGIN_DECLS

/* Work shorter than this (µs) shows no progress at all. */
#define SP_PROGRESS_DELAY_US (1 * G_USEC_PER_SEC)
/* At most 5 redraws per second. */
#define SP_PROGRESS_REDRAW_US (G_USEC_PER_SEC / 5)
/* The --quiet help text of every command that has progress. */
#define SP_PROGRESS_QUIET_HELP "No progress line and no closing line on stderr"

typedef struct SpProgress SpProgress;

/* A reporter for `command` ("sim", "trace export": the line starts with
 * "shardplan COMMAND: "), counting `unit`s (plural, e.g. "op instances",
 * "rows"; a static string or one that outlives the reporter) of which
 * there are `total` (0: not known — the line then shows the count and the
 * elapsed time, no bar and no estimate).  `quiet`: never draw.  The clock
 * starts now.  Free with sp_progress_free().  Never NULL. */
SpProgress *sp_progress_new (const char *command, guint64 total, const char *unit,
                             gboolean quiet);

/* sp_progress_new() for a command whose stderr reaches a terminal by
 * another way than being one (`run`: rank 0's stderr is a pipe that
 * mpirun copies to its own): `terminal` replaces isatty(2).  The test hook
 * SP_TEST_PROGRESS applies as above. */
SpProgress *sp_progress_new_full (const char *command, guint64 total, const char *unit,
                                  gboolean quiet, gboolean terminal);

/* `done` units are done now (absolute).  Values above the total count as
 * the total. */
void sp_progress_set (SpProgress *progress, guint64 done);
/* `n` more units are done. */
void sp_progress_add (SpProgress *progress, guint64 n);
/* Change the total (work found to be larger or smaller). */
void sp_progress_set_total (SpProgress *progress, guint64 total);

/* TRUE when this reporter may draw (a terminal and not quiet, or the test
 * hook): callers may skip the work of counting otherwise. */
gboolean sp_progress_active (const SpProgress *progress);

/* Stop drawing now and clear the line if one was drawn, without waiting
 * for the drawing thread: for a command about to print a message and
 * _exit() from another thread (`run`'s watchdog on a timeout).  No line is
 * drawn after it returns; sp_progress_free() still frees (and draws
 * nothing).  NULL is ignored. */
void sp_progress_abandon (SpProgress *progress);

/* Stop drawing and clear the line if one was drawn (the cursor is left at
 * the start of an empty line).  NULL is ignored. */
void sp_progress_free (SpProgress *progress);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (SpProgress, sp_progress_free)

/* The bar's width on a terminal wide enough for it (characters between
 * the brackets), and the most sp_progress_format_line() draws. */
#define SP_PROGRESS_BAR_WIDTH 20
#define SP_PROGRESS_BAR_MAX 64

/* The text of the line (without "\r" or terminal codes) into buf of
 * `size` bytes (truncated, always NUL-terminated): "shardplan COMMAND: "
 * then, with a total, a bar of `bar_width` characters in brackets (0: no
 * bar; at most SP_PROGRESS_BAR_MAX), the percent (rounded down: 100 % only
 * when done), "DONE/TOTAL UNIT", the elapsed time and — once something is
 * done and 1 s has passed — the estimated time left (elapsed × (total −
 * done) / done); without a total, "DONE UNIT" and the elapsed time.
 * Counts with thousands separators, times as
 * sp_progress_format_duration().  Returns the length written.  Pure:
 * tests/tools/test_progress.c checks it.  The line drawn drops the bar
 * where the terminal is too narrow for it, then is cut to the width. */
gsize sp_progress_format_line (char *buf, gsize size, const char *command, guint64 done,
                               guint64 total, const char *unit, gint64 elapsed_us,
                               guint bar_width);

/* A duration for the progress line: "0.4 s", "9.6 s" below 10 s, "14 s"
 * below 60 s, "2 min 05 s" below an hour, "3 h 07 min" above.  Negative
 * values count as 0. */
void sp_progress_format_duration (char *buf, gsize size, gint64 us);

G_END_DECLS
