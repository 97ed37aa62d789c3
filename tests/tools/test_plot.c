/* tools/plot.c: charts are written as real PNG/SVG files, atomically, and
 * bad paths are reported; tools/plot-layout.c: ticks on log and integer
 * axes, tick labels, and legends placed where they cover nothing (these
 * need no cairo); the layout drawn, read back through SHARDPLAN_PLOT_DEBUG:
 * coinciding series stay visible, legends move out of the way. */
#include "config.h"
#include "testutil.h"
#include "plot.h"
#include "shardplan/error.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- layout (no cairo) ---- */

static guint
ticks (SpPlotAxis kind, double lo, double hi, double *out)
{
  return sp_plot_axis_ticks (kind, lo, hi, out, 64);
}

#define ASSERT_TICKS(kind, lo, hi, ...)                                                        \
  do                                                                                           \
    {                                                                                          \
      const double want_[] = { __VA_ARGS__ };                                                  \
      double got_[64];                                                                         \
      guint n_ = ticks (kind, lo, hi, got_);                                                   \
      ck_assert_uint_eq (n_, G_N_ELEMENTS (want_));                                            \
      for (guint i_ = 0; i_ < n_; i_++)                                                        \
        ck_assert_msg (fabs (got_[i_] - want_[i_]) <= 1e-9 * fabs (want_[i_]),                 \
                       "tick %u: %g, expected %g", i_, got_[i_], want_[i_]);                   \
    }                                                                                          \
  while (0)

START_TEST (test_log_ticks)
{
  /* decades inside the range, nothing else, once two or more are inside */
  ASSERT_TICKS (SP_PLOT_AXIS_LOG, 1, 1000, 1, 10, 100, 1000);
  ASSERT_TICKS (SP_PLOT_AXIS_LOG, 0.5, 300, 1, 10, 100);
  ASSERT_TICKS (SP_PLOT_AXIS_LOG, 0.004, 0.2, 0.01, 0.1);
  ASSERT_TICKS (SP_PLOT_AXIS_LOG, 7, 2e6, 10, 100, 1000, 1e4, 1e5, 1e6);
  /* fewer than two decades inside: 1, 2, 5 × each */
  ASSERT_TICKS (SP_PLOT_AXIS_LOG, 20, 80, 20, 50);
  ASSERT_TICKS (SP_PLOT_AXIS_LOG, 15, 300, 20, 50, 100, 200);
  /* nothing for an empty or non-positive range */
  double t[64];
  ck_assert_uint_eq (ticks (SP_PLOT_AXIS_LOG, 0, 10, t), 0);
  ck_assert_uint_eq (ticks (SP_PLOT_AXIS_LOG, 10, 10, t), 0);
  ck_assert_uint_eq (ticks (SP_PLOT_AXIS_LOG, NAN, 10, t), 0);
  /* `max` bounds the output */
  ck_assert_uint_eq (sp_plot_axis_ticks (SP_PLOT_AXIS_LOG, 1e-100, 1e100, t, 5), 5);
}
END_TEST

START_TEST (test_log_range)
{
  /* The memory panel's data: whatever it spans, the axis shows it all and
   * at least two decades, widened on the side that costs less. */
  static const double spans[][2] = { { 8.1, 40 }, { 12, 150 }, { 20, 80 }, { 80, 80 },
                                     { 0.3, 0.9 }, { 1, 1e5 },  { 99, 101 } };
  for (guint i = 0; i < G_N_ELEMENTS (spans); i++)
    {
      double lo = spans[i][0], hi = spans[i][1], t[64];
      sp_plot_axis_range (SP_PLOT_AXIS_LOG, FALSE, &lo, &hi);
      ck_assert_msg (lo < spans[i][0] && hi > spans[i][1], "%g..%g shows %g..%g", spans[i][0],
                     spans[i][1], lo, hi);
      guint n = ticks (SP_PLOT_AXIS_LOG, lo, hi, t);
      ck_assert_msg (n >= 2, "%g..%g: %u ticks", spans[i][0], spans[i][1], n);
      for (guint k = 0; k < n; k++)
        {
          double e = log10 (t[k]);
          ck_assert_msg (fabs (e - round (e)) < 1e-9, "%g..%g: tick %g is not a decade",
                         spans[i][0], spans[i][1], t[k]);
        }
      /* never more than a decade of empty axis on either side */
      ck_assert_double_le (log10 (spans[i][0]) - log10 (lo), 1.0);
      ck_assert_double_le (log10 (hi) - log10 (spans[i][1]), 1.0);
    }
  /* 12 … 150: 10 is nearer than 1000, so the axis is 10 … ~170 */
  double lo = 12, hi = 150;
  sp_plot_axis_range (SP_PLOT_AXIS_LOG, FALSE, &lo, &hi);
  ck_assert_double_eq_tol (lo, 10, 1e-9);
  ck_assert_double_lt (hi, 200);
  /* 20 … 80: no decade inside, 10 … 100 */
  lo = 20, hi = 80;
  sp_plot_axis_range (SP_PLOT_AXIS_LOG, FALSE, &lo, &hi);
  ck_assert_double_eq_tol (lo, 10, 1e-9);
  ck_assert_double_eq_tol (hi, 100, 1e-9);
}
END_TEST

START_TEST (test_integer_ticks)
{
  /* rows 1 … 3, 1 … 16, 1 … 39 */
  double lo = 1, hi = 3, t[64];
  sp_plot_axis_range (SP_PLOT_AXIS_INTEGER, FALSE, &lo, &hi);
  ASSERT_TICKS (SP_PLOT_AXIS_INTEGER, lo, hi, 1, 2, 3);
  lo = 1, hi = 1;
  sp_plot_axis_range (SP_PLOT_AXIS_INTEGER, FALSE, &lo, &hi);
  ASSERT_TICKS (SP_PLOT_AXIS_INTEGER, lo, hi, 1);
  lo = 1, hi = 16;
  sp_plot_axis_range (SP_PLOT_AXIS_INTEGER, FALSE, &lo, &hi);
  ASSERT_TICKS (SP_PLOT_AXIS_INTEGER, lo, hi, 2, 4, 6, 8, 10, 12, 14, 16);
  lo = 1, hi = 39;
  sp_plot_axis_range (SP_PLOT_AXIS_INTEGER, FALSE, &lo, &hi);
  ASSERT_TICKS (SP_PLOT_AXIS_INTEGER, lo, hi, 5, 10, 15, 20, 25, 30, 35);
  /* a count from 0 (bars) */
  lo = 0, hi = 4;
  sp_plot_axis_range (SP_PLOT_AXIS_INTEGER, TRUE, &lo, &hi);
  ck_assert_double_eq (lo, 0);
  ASSERT_TICKS (SP_PLOT_AXIS_INTEGER, lo, hi, 0, 1, 2, 3, 4);
  /* where a linear axis would put 0.2 steps, an integer one puts 1 */
  ASSERT_TICKS (SP_PLOT_AXIS_LINEAR, 0, 1, 0, 0.2, 0.4, 0.6, 0.8, 1);
  ASSERT_TICKS (SP_PLOT_AXIS_INTEGER, 0, 1, 0, 1);
  ck_assert_uint_eq (ticks (SP_PLOT_AXIS_INTEGER, 0.2, 0.8, t), 0);
  /* any span: integers only, ascending, at most ~12 of them */
  for (double span = 1e-3; span < 1e7; span *= 1.7)
    for (double start = -3.3; start < 5; start += 2.9)
      {
        guint n = ticks (SP_PLOT_AXIS_INTEGER, start, start + span, t);
        ck_assert_uint_le (n, 12);
        for (guint k = 0; k < n; k++)
          {
            ck_assert_msg (t[k] == floor (t[k]), "span %g: tick %.17g", span, t[k]);
            ck_assert (t[k] >= start && t[k] <= start + span);
            if (k)
              ck_assert_double_gt (t[k], t[k - 1]);
          }
      }
}
END_TEST

START_TEST (test_tick_labels)
{
  static const struct {
    SpPlotAxis kind;
    double v;
    const char *label;
  } cases[] = {
    { SP_PLOT_AXIS_LOG, 1, "1" },          { SP_PLOT_AXIS_LOG, 10, "10" },
    { SP_PLOT_AXIS_LOG, 1000, "1000" },    { SP_PLOT_AXIS_LOG, 1e5, "100000" },
    { SP_PLOT_AXIS_LOG, 1e6, "1e6" },      { SP_PLOT_AXIS_LOG, 1e12, "1e12" },
    { SP_PLOT_AXIS_LOG, 0.01, "0.01" },    { SP_PLOT_AXIS_LOG, 1e-4, "1e-4" },
    { SP_PLOT_AXIS_LOG, 2.5e-5, "2.5e-5" }, { SP_PLOT_AXIS_LINEAR, 570000, "570000" },
    { SP_PLOT_AXIS_LINEAR, 1.2e6, "1.2e6" }, { SP_PLOT_AXIS_LINEAR, 0.1 + 0.2, "0.3" },
    { SP_PLOT_AXIS_LINEAR, -1e-17, "0" },  { SP_PLOT_AXIS_LINEAR, -2.5, "-2.5" },
    { SP_PLOT_AXIS_INTEGER, 3, "3" },      { SP_PLOT_AXIS_INTEGER, 2e6, "2000000" },
    { SP_PLOT_AXIS_INTEGER, 0, "0" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      char buf[32];
      sp_plot_format_tick (cases[i].kind, cases[i].v, buf, sizeof buf);
      ck_assert_str_eq (buf, cases[i].label);
    }
  /* one notation per axis: a linear axis over 4e5 … 1.2e6, a log one over
   * 10 … 1e6, and one that needs none */
  static const double lin[] = { 4e5, 6e5, 8e5, 1e6, 1.2e6 }, dec[] = { 10, 100, 1e4, 1e6 },
                      mem[] = { 1, 10, 100 };
  static const char *const lin_l[] = { "4e5", "6e5", "8e5", "1e6", "1.2e6" };
  static const char *const dec_l[] = { "1e1", "1e2", "1e4", "1e6" };
  static const char *const mem_l[] = { "1", "10", "100" };
  char labels[5][32];
  sp_plot_format_ticks (SP_PLOT_AXIS_LINEAR, lin, 5, labels);
  for (guint i = 0; i < 5; i++)
    ck_assert_str_eq (labels[i], lin_l[i]);
  sp_plot_format_ticks (SP_PLOT_AXIS_LOG, dec, 4, labels);
  for (guint i = 0; i < 4; i++)
    ck_assert_str_eq (labels[i], dec_l[i]);
  sp_plot_format_ticks (SP_PLOT_AXIS_LOG, mem, 3, labels);
  for (guint i = 0; i < 3; i++)
    ck_assert_str_eq (labels[i], mem_l[i]);
  /* 0 among exponents stays 0 */
  static const double z[] = { 0, 5e5, 1e6 };
  sp_plot_format_ticks (SP_PLOT_AXIS_LINEAR, z, 3, labels);
  ck_assert_str_eq (labels[0], "0");
  ck_assert_str_eq (labels[1], "5e5");
}
END_TEST

START_TEST (test_segments)
{
  SpPlotRect r = { 10, 10, 20, 10 }; /* x 10 … 30, y 10 … 20 */
  ck_assert (sp_plot_segment_hits_rect (0, 15, 40, 15, &r));   /* straight through */
  ck_assert (sp_plot_segment_hits_rect (15, 12, 16, 13, &r));  /* inside */
  ck_assert (sp_plot_segment_hits_rect (0, 0, 40, 30, &r));    /* diagonal through */
  ck_assert (!sp_plot_segment_hits_rect (0, 5, 40, 5, &r));    /* above */
  ck_assert (!sp_plot_segment_hits_rect (0, 15, 8, 15, &r));   /* stops short */
  ck_assert (!sp_plot_segment_hits_rect (0, 12, 12, 0, &r));   /* passes the corner */
  ck_assert (!sp_plot_segment_hits_rect (35, 0, 35, 40, &r));  /* right of it */
  SpPlotRect a = { 0, 0, 10, 10 }, b = { 10, 0, 5, 5 }, c = { 9, 9, 5, 5 };
  ck_assert (!sp_plot_rects_overlap (&a, &b)); /* touching */
  ck_assert (sp_plot_rects_overlap (&a, &c));
  ck_assert (sp_plot_rects_overlap (&c, &a));
}
END_TEST

/* whether a box overlaps [x, x + w) × [y, y + h), written out here rather
 * than through the library's own test */
static gboolean
covers (const SpPlotRect *l, const SpPlotRect *b)
{
  return !(b->x >= l->x + l->w || b->x + b->w <= l->x || b->y >= l->y + l->h
           || b->y + b->h <= l->y);
}

START_TEST (test_legend_placement)
{
  SpPlotRect area = { 0, 0, 200, 100 }, out;
  /* nothing in the way: the top-left corner, inset */
  ck_assert (sp_plot_place_box (&area, 50, 20, 6, NULL, 0, NULL, 0, &out));
  ck_assert_double_eq (out.x, 6);
  ck_assert_double_eq (out.y, 6);
  ck_assert_double_eq (out.w, 50);
  ck_assert_double_eq (out.h, 20);
  /* points in the top-left corner: the top-right one */
  SpPlotRect pts[64];
  gsize n = 0;
  pts[n++] = (SpPlotRect){ 10, 10, 6, 6 };
  pts[n++] = (SpPlotRect){ 40, 20, 6, 6 };
  ck_assert (sp_plot_place_box (&area, 50, 20, 6, pts, n, NULL, 0, &out));
  ck_assert_double_eq (out.x, 200 - 6 - 50);
  ck_assert_double_eq (out.y, 6);
  /* a point in each corner and a line along the top: somewhere between,
   * covering none of them */
  pts[n++] = (SpPlotRect){ 180, 8, 6, 6 };
  pts[n++] = (SpPlotRect){ 10, 85, 6, 6 };
  pts[n++] = (SpPlotRect){ 185, 85, 6, 6 };
  double seg[] = { 0, 30, 200, 30 };
  ck_assert (sp_plot_place_box (&area, 50, 20, 6, pts, n, seg, 1, &out));
  for (gsize i = 0; i < n; i++)
    ck_assert_msg (!covers (&out, &pts[i]), "legend at %g,%g covers point %zu", out.x, out.y, i);
  ck_assert (out.y > 30 || out.y + out.h < 30); /* not across the line */
  ck_assert (out.x >= 6 && out.x + out.w <= 194 && out.y >= 6 && out.y + out.h <= 94);
  /* a scatter on a 25-point grid leaves no room for 50 × 20: FALSE, out untouched */
  n = 0;
  for (double y = 0; y < 100; y += 25)
    for (double x = 0; x < 200; x += 25)
      pts[n++] = (SpPlotRect){ x + 8, y + 8, 6, 6 };
  SpPlotRect before = out;
  ck_assert (!sp_plot_place_box (&area, 50, 20, 6, pts, n, NULL, 0, &out));
  ck_assert (memcmp (&before, &out, sizeof out) == 0);
  /* lines: y = x on screen (bottom left to top right) leaves the top-left
   * corner free; the other diagonal crosses it, so top right; a line
   * across the top crosses both, so bottom left */
  double diag[] = { 0, 100, 200, 0 };
  ck_assert (sp_plot_place_box (&area, 50, 20, 6, NULL, 0, diag, 1, &out));
  ck_assert_double_eq (out.x, 6);
  ck_assert_double_eq (out.y, 6);
  double anti[] = { 0, 0, 200, 100 };
  ck_assert (sp_plot_place_box (&area, 50, 20, 6, NULL, 0, anti, 1, &out));
  ck_assert_double_eq (out.x, 200 - 6 - 50);
  ck_assert_double_eq (out.y, 6);
  double top[] = { 0, 15, 200, 15 };
  ck_assert (sp_plot_place_box (&area, 50, 20, 6, NULL, 0, top, 1, &out));
  ck_assert_double_eq (out.x, 6);
  ck_assert_double_eq (out.y, 100 - 6 - 20);
  /* lines 19 apart: every place a 20-high legend could take is crossed */
  double rows[] = { 0, 15, 200, 15, 0, 34, 200, 34, 0, 53, 200, 53, 0, 72, 200, 72, 0, 91, 200, 91 };
  ck_assert (!sp_plot_place_box (&area, 50, 20, 6, NULL, 0, rows, 5, &out));
  /* too big for the area */
  ck_assert (!sp_plot_place_box (&area, 300, 20, 6, NULL, 0, NULL, 0, &out));
}
END_TEST

#ifdef HAVE_CAIRO
static SpPlot *
make_chart (void)
{
  SpPlot *plot = sp_plot_new (2, "test chart");
  double x[] = { 1, 2, 4, 8, 16 }, y[] = { 10, 7, 5, 6, 9 }, m[] = { 60, 40, 30, 25, 22 };
  sp_plot_set_axes (plot, 0, "step time", "shard size", TRUE, "ms", FALSE);
  sp_plot_add_series (plot, 0, "flat", SP_PLOT_LINES, x, y, 5);
  sp_plot_set_axes (plot, 1, "memory", "shard size", TRUE, "GiB", FALSE);
  sp_plot_add_series (plot, 1, "memory", SP_PLOT_BARS, x, m, 5);
  sp_plot_add_hline (plot, 1, "GPU memory", 40);
  return plot;
}

START_TEST (test_png_and_svg)
{
  g_autoptr (SpTestDir) dir = sp_test_tmpdir ();
  g_autofree char *png = g_build_filename (dir, "c.png", NULL);
  g_autofree char *svg = g_build_filename (dir, "c.svg", NULL);
  g_autoptr (SpPlot) plot = make_chart ();
  GError *error = NULL;
  ck_assert (sp_plot_save (plot, png, &error));
  SP_ASSERT_NO_ERROR (error);
  ck_assert (sp_plot_save (plot, svg, &error));
  SP_ASSERT_NO_ERROR (error);

  g_autofree char *data = NULL;
  gsize len = 0;
  ck_assert (g_file_get_contents (png, &data, &len, NULL));
  ck_assert_uint_gt (len, 1000);
  ck_assert (memcmp (data, "\x89PNG\r\n\x1a\n", 8) == 0);
  g_free (g_steal_pointer (&data));
  ck_assert (g_file_get_contents (svg, &data, &len, NULL));
  ck_assert (strstr (data, "<svg") != NULL);

  /* nothing but the two files is left behind */
  GDir *d = g_dir_open (dir, 0, NULL);
  int n = 0;
  for (const char *name; (name = g_dir_read_name (d)) != NULL;)
    n++;
  g_dir_close (d);
  ck_assert_int_eq (n, 2);
}
END_TEST


/* Save `plot` as SVG with SHARDPLAN_PLOT_DEBUG=1 and return the layout it
 * printed on stderr. */
static char *
render_layout (const SpPlot *plot)
{
  g_autoptr (SpTestDir) dir = sp_test_tmpdir ();
  g_autofree char *svg = g_build_filename (dir, "l.svg", NULL);
  g_autofree char *log = g_build_filename (dir, "l.log", NULL);
  int fd = open (log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ck_assert_int_ge (fd, 0);
  fflush (stderr);
  int saved = dup (2);
  dup2 (fd, 2);
  close (fd);
  g_setenv ("SHARDPLAN_PLOT_DEBUG", "1", TRUE);
  GError *error = NULL;
  gboolean ok = sp_plot_save (plot, svg, &error);
  g_unsetenv ("SHARDPLAN_PLOT_DEBUG");
  fflush (stderr);
  dup2 (saved, 2);
  close (saved);
  ck_assert (ok);
  SP_ASSERT_NO_ERROR (error);
  char *text = NULL;
  ck_assert (g_file_get_contents (log, &text, NULL, NULL));
  return text;
}

typedef struct {
  char series[32], shape[16];
  int filled;
  double x, y, r;
} Drawn;

/* The "marker" lines of panel 0, in drawing order. */
static GArray *
drawn_markers (const char *layout)
{
  GArray *out = g_array_new (FALSE, TRUE, sizeof (Drawn));
  g_auto (GStrv) lines = g_strsplit (layout, "\n", -1);
  for (char **l = lines; *l; l++)
    {
      Drawn d = { 0 };
      if (sscanf (*l, "plot: panel=0 marker series=\"%31[^\"]\" shape=%15s filled=%d x=%lf y=%lf r=%lf",
                  d.series, d.shape, &d.filled, &d.x, &d.y, &d.r) == 6)
        g_array_append_val (out, d);
    }
  return out;
}

START_TEST (test_coinciding_series)
{
  /* three series on the same five points: each keeps its own look, the
   * filled ones go first, each smaller than the one drawn before it, and
   * the hollow one last, so all three show at every point */
  g_autoptr (SpPlot) plot = sp_plot_new (1, "same points");
  double x[] = { 1, 2, 3, 4, 5 }, y[] = { 3, 1, 4, 1, 5 };
  sp_plot_set_axes (plot, 0, NULL, "x", FALSE, "y", FALSE);
  sp_plot_add_series (plot, 0, "a", SP_PLOT_MARKERS, x, y, 5);
  sp_plot_add_series (plot, 0, "b", SP_PLOT_MARKERS, x, y, 5);
  sp_plot_add_series (plot, 0, "c", SP_PLOT_MARKERS, x, y, 5);
  g_autofree char *layout = render_layout (plot);
  g_autoptr (GArray) m = drawn_markers (layout);
  ck_assert_uint_eq (m->len, 15);
  const Drawn *d = (const Drawn *) m->data;
  /* drawing order: a's five, c's five (filled), then b's five (hollow) */
  for (guint i = 0; i < 15; i++)
    ck_assert_str_eq (d[i].series, i < 5 ? "a" : i < 10 ? "c" : "b");
  ck_assert (d[0].filled && d[5].filled && !d[10].filled);
  ck_assert_str_ne (d[0].shape, d[5].shape);
  ck_assert_str_ne (d[0].shape, d[10].shape);
  ck_assert_str_ne (d[5].shape, d[10].shape);
  ck_assert_double_lt (d[5].r, d[0].r);  /* c, over a, is smaller */
  ck_assert_double_gt (d[10].r, d[0].r); /* b's outline is outside both */
  for (guint i = 0; i < 5; i++)
    {
      ck_assert_double_eq (d[i].x, d[i + 5].x);
      ck_assert_double_eq (d[i].y, d[i + 10].y);
    }
}
END_TEST

START_TEST (test_legend_moves)
{
  /* points in the top-left corner push the legend elsewhere; a scatter
   * over the whole area pushes it outside, right of the data area */
  g_autoptr (SpPlot) plot = sp_plot_new (1, "legend");
  double x[] = { 1, 1.2, 1.4, 1.1, 10 }, y[] = { 10, 9.8, 9.6, 9.9, 1 };
  sp_plot_set_axes (plot, 0, NULL, "x", FALSE, "y", FALSE);
  sp_plot_add_series (plot, 0, "a rather long series name", SP_PLOT_MARKERS, x, y, 5);
  g_autofree char *layout = render_layout (plot);
  g_autoptr (GArray) m = drawn_markers (layout);
  double area[4], lg[4];
  char where[16];
  const char *a = strstr (layout, "plot: panel=0 area");
  const char *l = strstr (layout, "plot: panel=0 legend");
  ck_assert (a && l);
  ck_assert_int_eq (sscanf (a, "plot: panel=0 area x=%lf y=%lf w=%lf h=%lf", &area[0], &area[1],
                            &area[2], &area[3]), 4);
  ck_assert_int_eq (sscanf (l, "plot: panel=0 legend %15s x=%lf y=%lf w=%lf h=%lf", where, &lg[0],
                            &lg[1], &lg[2], &lg[3]), 5);
  ck_assert_str_eq (where, "inside");
  SpPlotRect legend = { lg[0], lg[1], lg[2], lg[3] };
  ck_assert (legend.x > area[0] + 6 || legend.y > area[1] + 6); /* not the top-left corner */
  for (guint i = 0; i < m->len; i++)
    {
      const Drawn *d = &g_array_index (m, Drawn, i);
      SpPlotRect box = { d->x - d->r, d->y - d->r, 2 * d->r, 2 * d->r };
      ck_assert_msg (!covers (&legend, &box), "legend covers the marker at %g,%g", d->x, d->y);
    }

  g_autoptr (SpPlot) dense = sp_plot_new (1, "dense");
  double gx[400], gy[400];
  for (int i = 0; i < 400; i++)
    gx[i] = i % 20, gy[i] = i / 20;
  sp_plot_set_axes (dense, 0, NULL, "x", FALSE, "y", FALSE);
  sp_plot_add_series (dense, 0, "everywhere", SP_PLOT_MARKERS, gx, gy, 400);
  g_autofree char *layout2 = render_layout (dense);
  a = strstr (layout2, "plot: panel=0 area");
  l = strstr (layout2, "plot: panel=0 legend");
  ck_assert (a && l);
  ck_assert_int_eq (sscanf (a, "plot: panel=0 area x=%lf y=%lf w=%lf h=%lf", &area[0], &area[1],
                            &area[2], &area[3]), 4);
  ck_assert_int_eq (sscanf (l, "plot: panel=0 legend %15s x=%lf y=%lf w=%lf h=%lf", where, &lg[0],
                            &lg[1], &lg[2], &lg[3]), 5);
  ck_assert_str_eq (where, "outside");
  ck_assert_double_gt (lg[0], area[0] + area[2]);
}
END_TEST
START_TEST (test_bad_paths)
{
  g_autoptr (SpPlot) plot = make_chart ();
  GError *error = NULL;
  ck_assert (!sp_plot_save (plot, "/tmp/chart.jpeg", &error));
  SP_ASSERT_ERROR (error, SP_ERROR_UNSUPPORTED);
  ck_assert (strstr (error->message, "chart.jpeg") != NULL);
  g_clear_error (&error);
  ck_assert (!sp_plot_save (plot, "/nonexistent-dir/chart.png", &error));
  SP_ASSERT_ERROR (error, SP_ERROR_IO);
  g_clear_error (&error);
}
END_TEST
#endif

int
main (void)
{
  Suite *s = suite_create ("plot");
  TCase *tc = tcase_create ("layout");
  tcase_add_test (tc, test_log_ticks);
  tcase_add_test (tc, test_log_range);
  tcase_add_test (tc, test_integer_ticks);
  tcase_add_test (tc, test_tick_labels);
  tcase_add_test (tc, test_segments);
  tcase_add_test (tc, test_legend_placement);
  suite_add_tcase (s, tc);
#ifdef HAVE_CAIRO
  /* plots need cairo; without it only the layout is tested */
  tc = tcase_create ("plot");
  tcase_add_test (tc, test_png_and_svg);
  tcase_add_test (tc, test_bad_paths);
  tcase_add_test (tc, test_coinciding_series);
  tcase_add_test (tc, test_legend_moves);
  suite_add_tcase (s, tc);
#endif
  return sp_test_run (s);
}
