/* The progress line of long commands (tools/progress.h).  The counter is a
 * C11 atomic the work stores into; a thread started only when the line may
 * be drawn wakes every SP_PROGRESS_REDRAW_US, reads it and redraws, so the
 * work itself never reads a clock or takes a lock for progress. */
#include "config.h"
#include "progress.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define LINE_MAX_BYTES 512
/* Terminal width when the terminal does not say (a pty under `script`). */
#define DEFAULT_COLUMNS 80

struct SpProgress {
  char *command;
  const char *unit;
  atomic_ullong done;
  atomic_ullong total;
  gint64 t0;          /* monotonic µs */
  gint64 delay_us;    /* nothing drawn before t0 + delay_us */
  gboolean active;    /* may draw: a thread runs */
  GThread *thread;
  GMutex lock;
  GCond wake;
  gboolean stop;      /* under lock */
  gboolean drawn;     /* under lock: a line is on the terminal */
  gboolean abandoned; /* under lock: sp_progress_abandon() cleared it for good */
};

void
sp_progress_format_duration (char *buf, gsize size, gint64 us)
{
  if (us < 0)
    us = 0;
  if (us < 9950000) /* 9.95 s would print as "10.0 s" */
    {
      g_snprintf (buf, size, "%.1f s", us / 1e6);
      return;
    }
  gint64 t = (us + G_USEC_PER_SEC / 2) / G_USEC_PER_SEC; /* whole seconds, rounded */
  if (t < 60)
    g_snprintf (buf, size, "%d s", (int) t);
  else if (t < 3600)
    g_snprintf (buf, size, "%d min %02d s", (int) (t / 60), (int) (t % 60));
  else
    g_snprintf (buf, size, "%" G_GINT64_FORMAT " h %02d min", t / 3600, (int) (t / 60 % 60));
}

/* n with a comma every three digits. */
static void
format_count (char *buf, gsize size, guint64 n)
{
  char digits[32];
  int len = g_snprintf (digits, sizeof digits, "%" G_GUINT64_FORMAT, n);
  char out[48];
  int k = 0;
  for (int i = 0; i < len; i++)
    {
      if (i > 0 && (len - i) % 3 == 0)
        out[k++] = ',';
      out[k++] = digits[i];
    }
  out[k] = '\0';
  g_strlcpy (buf, out, size);
}

gsize
sp_progress_format_line (char *buf, gsize size, const char *command, guint64 done,
                         guint64 total, const char *unit, gint64 elapsed_us, guint bar_width)
{
  g_return_val_if_fail (buf != NULL && size > 0, 0);
  char d[48], t[48], el[32], left[32];
  format_count (d, sizeof d, done);
  sp_progress_format_duration (el, sizeof el, elapsed_us);
  if (total == 0)
    {
      int n = g_snprintf (buf, size, "shardplan %s: %s %s, %s", command, d, unit, el);
      return MIN ((gsize) MAX (n, 0), size - 1);
    }
  if (done > total)
    done = total;
  format_count (d, sizeof d, done);
  format_count (t, sizeof t, total);
  /* floor: 100 % only when everything is done */
  unsigned pct = (unsigned) ((double) done / (double) total * 100.0);
  if (pct == 100 && done < total)
    pct = 99;
  char bar[SP_PROGRESS_BAR_MAX + 4] = "";
  bar_width = MIN (bar_width, SP_PROGRESS_BAR_MAX);
  if (bar_width > 0)
    {
      guint fill = (guint) ((double) done / (double) total * bar_width);
      bar[0] = '[';
      for (guint i = 0; i < bar_width; i++)
        bar[1 + i] = i < fill ? '#' : ' ';
      bar[1 + bar_width] = ']';
      bar[2 + bar_width] = ' ';
      bar[3 + bar_width] = '\0';
    }
  left[0] = '\0';
  if (done > 0 && done < total && elapsed_us >= G_USEC_PER_SEC)
    {
      double rest = (double) elapsed_us * (double) (total - done) / (double) done;
      char r[32];
      sp_progress_format_duration (r, sizeof r, rest > 1e15 ? (gint64) 1e15 : (gint64) rest);
      g_snprintf (left, sizeof left, ", ~%s left", r);
    }
  int n = g_snprintf (buf, size, "shardplan %s: %s%3u%% %s/%s %s, %s%s", command, bar, pct, d,
                      t, unit, el, left);
  return MIN ((gsize) MAX (n, 0), size - 1);
}

static int
columns (void)
{
  struct winsize ws;
  if (ioctl (STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return ws.ws_col;
  return DEFAULT_COLUMNS;
}

/* Under p->lock. */
static void
draw (SpProgress *p, gint64 now)
{
  char line[LINE_MAX_BYTES];
  guint64 done = atomic_load_explicit (&p->done, memory_order_relaxed);
  guint64 total = atomic_load_explicit (&p->total, memory_order_relaxed);
  /* one column short of the width: a full line would wrap, and "\r" then
   * returns to the wrapped half only.  The line is ASCII.  The bar goes
   * first when the line is too long, then the line is cut. */
  int width = MAX (columns () - 1, 10);
  gsize n = sp_progress_format_line (line, sizeof line, p->command, done, total, p->unit,
                                     now - p->t0, SP_PROGRESS_BAR_WIDTH);
  if (n > (gsize) width)
    sp_progress_format_line (line, sizeof line, p->command, done, total, p->unit, now - p->t0, 0);
  /* "\033[K": erase what a longer earlier line left to the right */
  fprintf (stderr, "\r%.*s\033[K", width, line);
  fflush (stderr);
  p->drawn = TRUE;
}

static gpointer
draw_thread (gpointer data)
{
  SpProgress *p = data;
  g_mutex_lock (&p->lock);
  gint64 next = p->t0 + p->delay_us;
  while (!p->stop)
    {
      if (g_cond_wait_until (&p->wake, &p->lock, next) || p->stop)
        continue; /* woken (free) or spurious: look at stop again */
      gint64 now = g_get_monotonic_time ();
      if (now < next)
        continue;
      draw (p, now);
      next = now + SP_PROGRESS_REDRAW_US;
    }
  g_mutex_unlock (&p->lock);
  return NULL;
}

SpProgress *
sp_progress_new (const char *command, guint64 total, const char *unit, gboolean quiet)
{
  /* sp_cli_stderr_is_tty(), without linking cli.c into the unit test */
  return sp_progress_new_full (command, total, unit, quiet, isatty (STDERR_FILENO));
}

SpProgress *
sp_progress_new_full (const char *command, guint64 total, const char *unit, gboolean quiet,
                      gboolean terminal)
{
  SpProgress *p = g_new0 (SpProgress, 1);
  p->command = g_strdup (command);
  p->unit = unit;
  atomic_init (&p->done, 0);
  atomic_init (&p->total, total);
  p->t0 = g_get_monotonic_time ();
  p->delay_us = SP_PROGRESS_DELAY_US;
  const char *hook = g_getenv ("SP_TEST_PROGRESS");
  gboolean tty = terminal;
  if (hook != NULL && (strcmp (hook, "nodelay") == 0 || strcmp (hook, "tty") == 0))
    {
      p->delay_us = 0;
      tty = tty || strcmp (hook, "tty") == 0;
    }
  p->active = !quiet && tty;
  g_mutex_init (&p->lock);
  g_cond_init (&p->wake);
  if (p->active)
    p->thread = g_thread_new ("sp-progress", draw_thread, p);
  return p;
}

void
sp_progress_set (SpProgress *p, guint64 done)
{
  atomic_store_explicit (&p->done, done, memory_order_relaxed);
}

void
sp_progress_add (SpProgress *p, guint64 n)
{
  atomic_fetch_add_explicit (&p->done, n, memory_order_relaxed);
}

void
sp_progress_set_total (SpProgress *p, guint64 total)
{
  atomic_store_explicit (&p->total, total, memory_order_relaxed);
}

gboolean
sp_progress_active (const SpProgress *p)
{
  return p->active;
}

void
sp_progress_abandon (SpProgress *p)
{
  if (p == NULL || p->thread == NULL)
    return;
  g_mutex_lock (&p->lock);
  p->stop = TRUE;
  p->abandoned = TRUE;
  if (p->drawn)
    {
      fputs ("\r\033[K", stderr);
      fflush (stderr);
    }
  g_cond_signal (&p->wake);
  g_mutex_unlock (&p->lock);
}

void
sp_progress_free (SpProgress *p)
{
  if (p == NULL)
    return;
  if (p->thread)
    {
      g_mutex_lock (&p->lock);
      p->stop = TRUE;
      g_cond_signal (&p->wake);
      g_mutex_unlock (&p->lock);
      g_thread_join (p->thread);
      /* the test hook's "nodelay" promises a line: work that ended before
       * the thread first woke still draws its final count */
      if (!p->abandoned && (p->drawn || p->delay_us == 0))
        {
          /* the final count once (a glance at 100 %), then an empty line */
          draw (p, g_get_monotonic_time ());
          fputs ("\r\033[K", stderr);
          fflush (stderr);
        }
    }
  g_mutex_clear (&p->lock);
  g_cond_clear (&p->wake);
  g_free (p->command);
  g_free (p);
}
