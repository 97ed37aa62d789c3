/* XY charts with cairo (see plot.h).  Layout constants are in points; PNGs
 * are rendered at 2× for legibility. */
#include "config.h"
#include "plot.h"
#include "shardplan/error.h"
#include "shardplan/file.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <unistd.h>
#ifdef HAVE_CAIRO
#include <cairo.h>
#include <cairo-svg.h>
#endif

#define PANEL_W 520.0
#define PANEL_H 380.0
#define MARGIN_L 70.0
#define MARGIN_R 20.0
#define MARGIN_T 60.0
#define MARGIN_B 55.0
#define PNG_SCALE 2.0

typedef struct {
  char *name;
  SpPlotStyle style;
  GArray *x, *y;
  gboolean hline, diagonal;
  double hline_y;
} Series;

typedef struct {
  char *title, *x_label, *y_label;
  gboolean x_log, y_log;
  GPtrArray *series;
} Panel;

struct _SpPlot {
  char *title;
  guint n_panels;
  Panel panels[2];
};

static void
series_free (gpointer p)
{
  Series *s = p;
  g_free (s->name);
  if (s->x)
    g_array_unref (s->x);
  if (s->y)
    g_array_unref (s->y);
  g_free (s);
}

SpPlot *
sp_plot_new (guint n_panels, const char *title)
{
  g_return_val_if_fail (n_panels == 1 || n_panels == 2, NULL);
  SpPlot *plot = g_new0 (SpPlot, 1);
  plot->title = g_strdup (title);
  plot->n_panels = n_panels;
  for (guint i = 0; i < n_panels; i++)
    plot->panels[i].series = g_ptr_array_new_with_free_func (series_free);
  return plot;
}

void
sp_plot_free (SpPlot *plot)
{
  if (!plot)
    return;
  for (guint i = 0; i < plot->n_panels; i++)
    {
      Panel *p = &plot->panels[i];
      g_free (p->title);
      g_free (p->x_label);
      g_free (p->y_label);
      g_ptr_array_unref (p->series);
    }
  g_free (plot->title);
  g_free (plot);
}

void
sp_plot_set_axes (SpPlot *plot, guint panel, const char *title, const char *x_label,
                  gboolean x_log, const char *y_label, gboolean y_log)
{
  g_return_if_fail (panel < plot->n_panels);
  Panel *p = &plot->panels[panel];
  g_free (p->title);
  g_free (p->x_label);
  g_free (p->y_label);
  p->title = g_strdup (title);
  p->x_label = g_strdup (x_label);
  p->y_label = g_strdup (y_label);
  p->x_log = x_log;
  p->y_log = y_log;
}

void
sp_plot_add_series (SpPlot *plot, guint panel, const char *name, SpPlotStyle style,
                    const double *x, const double *y, gsize n)
{
  g_return_if_fail (panel < plot->n_panels);
  Series *s = g_new0 (Series, 1);
  s->name = g_strdup (name);
  s->style = style;
  s->x = g_array_sized_new (FALSE, FALSE, sizeof (double), n);
  s->y = g_array_sized_new (FALSE, FALSE, sizeof (double), n);
  g_array_append_vals (s->x, x, n);
  g_array_append_vals (s->y, y, n);
  g_ptr_array_add (plot->panels[panel].series, s);
}

void
sp_plot_add_hline (SpPlot *plot, guint panel, const char *name, double y)
{
  g_return_if_fail (panel < plot->n_panels);
  Series *s = g_new0 (Series, 1);
  s->name = g_strdup (name);
  s->hline = TRUE;
  s->hline_y = y;
  g_ptr_array_add (plot->panels[panel].series, s);
}

void
sp_plot_add_diagonal (SpPlot *plot, guint panel, const char *name)
{
  g_return_if_fail (panel < plot->n_panels);
  Series *s = g_new0 (Series, 1);
  s->name = g_strdup (name);
  s->diagonal = TRUE;
  g_ptr_array_add (plot->panels[panel].series, s);
}

#ifdef HAVE_CAIRO
/* Tableau-10 colours: distinguishable and print-safe. */
static const double palette[][3] = {
  { 0.122, 0.467, 0.706 }, { 1.000, 0.498, 0.055 }, { 0.173, 0.627, 0.173 },
  { 0.839, 0.153, 0.157 }, { 0.580, 0.404, 0.741 }, { 0.549, 0.337, 0.294 },
  { 0.890, 0.467, 0.761 }, { 0.498, 0.498, 0.498 },
};

typedef struct {
  double lo, hi;
  gboolean log;
} Range;

static double
tr (const Range *r, double v)
{
  return r->log ? log10 (v) : v;
}

static gboolean
usable (const Range *r, double v)
{
  return isfinite (v) && (!r->log || v > 0);
}

static void
extend (Range *r, double v, gboolean *any)
{
  if (!usable (r, v))
    return;
  double t = tr (r, v);
  if (!*any)
    {
      r->lo = r->hi = t;
      *any = TRUE;
    }
  r->lo = MIN (r->lo, t);
  r->hi = MAX (r->hi, t);
}

static void
pad_range (Range *r, gboolean any, gboolean include_zero)
{
  if (!any)
    {
      r->lo = r->log ? 0 : 0;
      r->hi = 1;
      return;
    }
  if (include_zero && !r->log)
    r->lo = MIN (r->lo, 0);
  double span = r->hi - r->lo;
  if (span <= 0)
    span = r->log ? 1 : (fabs (r->hi) > 0 ? fabs (r->hi) : 1);
  if (r->log)
    {
      r->lo -= 0.06 * span;
      r->hi += 0.06 * span;
    }
  else
    {
      if (!(include_zero && r->lo == 0))
        r->lo -= 0.05 * span;
      r->hi += 0.08 * span;
    }
}

/* Tick step for a linear axis: 1, 2 or 5 × 10^k, about 6 ticks. */
static double
nice_step (double span)
{
  double raw = span / 6.0;
  double mag = pow (10, floor (log10 (raw)));
  double f = raw / mag;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

static void
text_at (cairo_t *cr, double x, double y, const char *text, double align_x, double align_y)
{
  cairo_text_extents_t ext;
  cairo_text_extents (cr, text, &ext);
  cairo_move_to (cr, x - ext.width * align_x - ext.x_bearing, y - ext.height * align_y - ext.y_bearing);
  cairo_show_text (cr, text);
}

static void
format_tick (char *buf, gsize len, double v, gboolean log_axis)
{
  if (log_axis)
    {
      double p = pow (10, v);
      if ((p >= 1e5 || p < 1e-2) && fabs (v - round (v)) < 1e-9)
        g_snprintf (buf, len, "1e%d", (int) lround (v));
      else
        g_snprintf (buf, len, "%.3g", p);
    }
  else
    g_snprintf (buf, len, "%g", fabs (v) < 1e-12 ? 0.0 : v);
}

static void
draw_panel (cairo_t *cr, const Panel *p, double ox, double oy)
{
  Range xr = { 0, 0, p->x_log }, yr = { 0, 0, p->y_log };
  gboolean xany = FALSE, yany = FALSE, bars = FALSE;
  for (guint i = 0; i < p->series->len; i++)
    {
      const Series *s = p->series->pdata[i];
      if (s->hline)
        {
          extend (&yr, s->hline_y, &yany);
          continue;
        }
      if (s->diagonal)
        continue;
      bars |= s->style == SP_PLOT_BARS;
      for (guint k = 0; k < s->x->len; k++)
        {
          double x = g_array_index (s->x, double, k), y = g_array_index (s->y, double, k);
          if (usable (&xr, x) && usable (&yr, y))
            {
              extend (&xr, x, &xany);
              extend (&yr, y, &yany);
            }
        }
    }
  gboolean has_diag = FALSE;
  for (guint i = 0; i < p->series->len; i++)
    has_diag |= ((const Series *) p->series->pdata[i])->diagonal;
  if (has_diag && xany && yany)
    {
      /* y = x needs the same range on both axes */
      double lo = MIN (xr.lo, yr.lo), hi = MAX (xr.hi, yr.hi);
      xr.lo = yr.lo = lo;
      xr.hi = yr.hi = hi;
    }
  pad_range (&xr, xany, FALSE);
  pad_range (&yr, yany, bars);

  double x0 = ox + MARGIN_L, x1 = ox + PANEL_W - MARGIN_R;
  double y0 = oy + PANEL_H - MARGIN_B, y1 = oy + MARGIN_T;
#define PX(v) (x0 + (tr (&xr, (v)) - xr.lo) / (xr.hi - xr.lo) * (x1 - x0))
#define PY(v) (y0 - (tr (&yr, (v)) - yr.lo) / (yr.hi - yr.lo) * (y0 - y1))

  /* grid and ticks */
  cairo_set_font_size (cr, 10);
  char buf[32];
  for (int axis = 0; axis < 2; axis++)
    {
      const Range *r = axis == 0 ? &xr : &yr;
      /* log axes: ticks at 1, 2, 5 × 10^k when fewer than three decades show */
      static const double log_mults[] = { 1, 2, 5 };
      gboolean fine = r->log && (r->hi - r->lo) < 3.0;
      double step = r->log ? 1.0 : nice_step (r->hi - r->lo);
      GArray *ticks = g_array_new (FALSE, FALSE, sizeof (double));
      for (double t = ceil (r->lo / step) * step; t <= r->hi + 1e-9 * step; t += step)
        g_array_append_val (ticks, t);
      if (r->log)
        {
          g_array_set_size (ticks, 0);
          for (double dec = floor (r->lo); dec <= ceil (r->hi); dec += 1.0)
            for (guint m = 0; m < (fine ? 3u : 1u); m++)
              {
                double t = dec + log10 (log_mults[m]);
                if (t >= r->lo && t <= r->hi)
                  g_array_append_val (ticks, t);
              }
        }
      for (guint ti = 0; ti < ticks->len; ti++)
        {
          double t = g_array_index (ticks, double, ti);
          double pos = axis == 0 ? x0 + (t - r->lo) / (r->hi - r->lo) * (x1 - x0)
                                 : y0 - (t - r->lo) / (r->hi - r->lo) * (y0 - y1);
          cairo_set_source_rgb (cr, 0.9, 0.9, 0.9);
          cairo_set_line_width (cr, 0.6);
          if (axis == 0)
            {
              cairo_move_to (cr, pos, y0);
              cairo_line_to (cr, pos, y1);
            }
          else
            {
              cairo_move_to (cr, x0, pos);
              cairo_line_to (cr, x1, pos);
            }
          cairo_stroke (cr);
          cairo_set_source_rgb (cr, 0.2, 0.2, 0.2);
          format_tick (buf, sizeof buf, t, r->log);
          if (axis == 0)
            text_at (cr, pos, y0 + 14, buf, 0.5, 0.5);
          else
            text_at (cr, x0 - 6, pos, buf, 1.0, 0.5);
        }
      g_array_unref (ticks);
    }
  cairo_set_source_rgb (cr, 0, 0, 0);
  cairo_set_line_width (cr, 1.0);
  cairo_rectangle (cr, x0, y1, x1 - x0, y0 - y1);
  cairo_stroke (cr);

  cairo_set_font_size (cr, 12);
  if (p->title)
    text_at (cr, (x0 + x1) / 2, oy + 22, p->title, 0.5, 0.5);
  cairo_set_font_size (cr, 11);
  if (p->x_label)
    text_at (cr, (x0 + x1) / 2, y0 + 36, p->x_label, 0.5, 0.5);
  if (p->y_label)
    {
      cairo_save (cr);
      cairo_translate (cr, ox + 16, (y0 + y1) / 2);
      cairo_rotate (cr, -G_PI / 2);
      text_at (cr, 0, 0, p->y_label, 0.5, 0.5);
      cairo_restore (cr);
    }

  /* series, clipped to the plot area */
  cairo_save (cr);
  cairo_rectangle (cr, x0, y1, x1 - x0, y0 - y1);
  cairo_clip (cr);
  guint colour = 0;
  for (guint i = 0; i < p->series->len; i++)
    {
      const Series *s = p->series->pdata[i];
      const double *c = palette[colour++ % G_N_ELEMENTS (palette)];
      cairo_set_source_rgb (cr, c[0], c[1], c[2]);
      cairo_set_line_width (cr, 1.6);
      if (s->hline)
        {
          double dash[] = { 6, 4 };
          cairo_set_dash (cr, dash, 2, 0);
          cairo_move_to (cr, x0, PY (s->hline_y));
          cairo_line_to (cr, x1, PY (s->hline_y));
          cairo_stroke (cr);
          cairo_set_dash (cr, NULL, 0, 0);
          continue;
        }
      if (s->diagonal)
        {
          double dash[] = { 3, 3 };
          cairo_set_dash (cr, dash, 2, 0);
          cairo_move_to (cr, x0, y0);
          cairo_line_to (cr, x1, y1);
          cairo_stroke (cr);
          cairo_set_dash (cr, NULL, 0, 0);
          continue;
        }
      gboolean started = FALSE;
      double bar_w = s->x->len > 1 ? 0.8 * (x1 - x0) / s->x->len : 20;
      for (guint k = 0; k < s->x->len; k++)
        {
          double x = g_array_index (s->x, double, k), y = g_array_index (s->y, double, k);
          if (!usable (&xr, x) || !usable (&yr, y))
            continue;
          double px = PX (x), py = PY (y);
          if (s->style == SP_PLOT_BARS)
            {
              double base = yr.log ? y0 : PY (0.0);
              cairo_rectangle (cr, px - bar_w / 2, MIN (py, base), bar_w, fabs (base - py));
              cairo_fill (cr);
            }
          else
            {
              if (s->style == SP_PLOT_LINES)
                {
                  if (started)
                    cairo_line_to (cr, px, py);
                  else
                    cairo_move_to (cr, px, py);
                  started = TRUE;
                }
            }
        }
      if (s->style == SP_PLOT_LINES)
        cairo_stroke (cr);
      if (s->style != SP_PLOT_BARS)
        for (guint k = 0; k < s->x->len; k++)
          {
            double x = g_array_index (s->x, double, k), y = g_array_index (s->y, double, k);
            if (!usable (&xr, x) || !usable (&yr, y))
              continue;
            if (s->style == SP_PLOT_CROSSES)
              {
                /* an x of 7 px, 1.5 px strokes */
                cairo_set_line_width (cr, 1.5);
                cairo_move_to (cr, PX (x) - 3.5, PY (y) - 3.5);
                cairo_line_to (cr, PX (x) + 3.5, PY (y) + 3.5);
                cairo_move_to (cr, PX (x) - 3.5, PY (y) + 3.5);
                cairo_line_to (cr, PX (x) + 3.5, PY (y) - 3.5);
                cairo_stroke (cr);
                continue;
              }
            cairo_arc (cr, PX (x), PY (y), s->style == SP_PLOT_MARKERS ? 2.5 : 3.2, 0, 2 * G_PI);
            cairo_fill (cr);
          }
    }
  cairo_restore (cr);

  /* legend, top left inside the plot */
  cairo_set_font_size (cr, 10);
  double ly = y1 + 14;
  colour = 0;
  for (guint i = 0; i < p->series->len; i++)
    {
      const Series *s = p->series->pdata[i];
      const double *c = palette[colour++ % G_N_ELEMENTS (palette)];
      if (!s->name)
        continue;
      cairo_set_source_rgb (cr, c[0], c[1], c[2]);
      if (s->style == SP_PLOT_CROSSES)
        {
          cairo_set_line_width (cr, 1.5);
          cairo_move_to (cr, x0 + 10.5, ly - 6.5);
          cairo_line_to (cr, x0 + 17.5, ly + 0.5);
          cairo_move_to (cr, x0 + 10.5, ly + 0.5);
          cairo_line_to (cr, x0 + 17.5, ly - 6.5);
          cairo_stroke (cr);
        }
      else
        {
          cairo_rectangle (cr, x0 + 8, ly - 5, 12, 4);
          cairo_fill (cr);
        }
      cairo_set_source_rgb (cr, 0.1, 0.1, 0.1);
      text_at (cr, x0 + 26, ly - 3, s->name, 0.0, 0.5);
      ly += 14;
    }
#undef PX
#undef PY
}

static void
draw (cairo_t *cr, const SpPlot *plot)
{
  cairo_set_source_rgb (cr, 1, 1, 1);
  cairo_paint (cr);
  cairo_select_font_face (cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_source_rgb (cr, 0, 0, 0);
  cairo_set_font_size (cr, 14);
  if (plot->title)
    text_at (cr, plot->n_panels * PANEL_W / 2, 14, plot->title, 0.5, 0.5);
  for (guint i = 0; i < plot->n_panels; i++)
    draw_panel (cr, &plot->panels[i], i * PANEL_W, 0);
}
#endif

gboolean
sp_plot_save (const SpPlot *plot, const char *path, GError **error)
{
#ifndef HAVE_CAIRO
  g_set_error (error, SP_ERROR, SP_ERROR_UNSUPPORTED,
               "cannot write plot %s: this shardplan was built without cairo", path);
  return FALSE;
#else
  gboolean svg = g_str_has_suffix (path, ".svg"), png = g_str_has_suffix (path, ".png");
  if (!svg && !png)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_UNSUPPORTED,
                   "plot file '%s' must end in .png or .svg", path);
      return FALSE;
    }
  double w = plot->n_panels * PANEL_W, h = PANEL_H;
  /* cairo writes the registered temporary file by name (shardplan/file.h) */
  g_autofree char *tmp = NULL;
  int fd = sp_file_temp_open (path, &tmp, error);
  if (fd < 0)
    return FALSE;
  close (fd);
  cairo_surface_t *surface;
  if (svg)
    surface = cairo_svg_surface_create (tmp, w, h);
  else
    surface = cairo_image_surface_create (CAIRO_FORMAT_RGB24, (int) (w * PNG_SCALE),
                                          (int) (h * PNG_SCALE));
  cairo_t *cr = cairo_create (surface);
  if (png)
    cairo_scale (cr, PNG_SCALE, PNG_SCALE);
  draw (cr, plot);
  cairo_destroy (cr);
  cairo_status_t st;
  if (png)
    st = cairo_surface_write_to_png (surface, tmp);
  else
    {
      cairo_surface_finish (surface);
      st = cairo_surface_status (surface);
    }
  cairo_surface_destroy (surface);
  if (st != CAIRO_STATUS_SUCCESS)
    {
      sp_file_temp_discard (tmp);
      g_set_error (error, SP_ERROR, SP_ERROR_IO, "cannot write plot %s: %s", path,
                   cairo_status_to_string (st));
      return FALSE;
    }
  return sp_file_temp_commit (tmp, path, error);
#endif
}
