/* XY charts with cairo (see plot.h): the chart's contents and writing it
 * to a file.  The layout is in tools/plot-layout.c, the drawing in
 * tools/plot-draw.c.  PNGs are rendered at 2× for legibility. */
#include "config.h"
#include "plot-internal.h"
#include "shardplan/error.h"
#include "shardplan/file.h"

#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>
#ifdef HAVE_CAIRO
#include <cairo.h>
#include <cairo-svg.h>
#endif

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
sp_plot_set_integer_ticks (SpPlot *plot, guint panel, gboolean x, gboolean y)
{
  g_return_if_fail (panel < plot->n_panels);
  plot->panels[panel].x_int = x;
  plot->panels[panel].y_int = y;
}

static Series *
add (SpPlot *plot, guint panel, const char *name, SeriesKind kind)
{
  Series *s = g_new0 (Series, 1);
  s->name = g_strdup (name);
  s->kind = kind;
  g_ptr_array_add (plot->panels[panel].series, s);
  return s;
}

void
sp_plot_add_series (SpPlot *plot, guint panel, const char *name, SpPlotStyle style,
                    const double *x, const double *y, gsize n)
{
  g_return_if_fail (panel < plot->n_panels);
  Series *s = add (plot, panel, name, KIND_DATA);
  s->style = style;
  s->x = g_array_sized_new (FALSE, FALSE, sizeof (double), n);
  s->y = g_array_sized_new (FALSE, FALSE, sizeof (double), n);
  g_array_append_vals (s->x, x, n);
  g_array_append_vals (s->y, y, n);
}

void
sp_plot_add_hline (SpPlot *plot, guint panel, const char *name, double y)
{
  g_return_if_fail (panel < plot->n_panels);
  add (plot, panel, name, KIND_HLINE)->ref_y = y;
}

void
sp_plot_add_diagonal (SpPlot *plot, guint panel, const char *name)
{
  g_return_if_fail (panel < plot->n_panels);
  add (plot, panel, name, KIND_DIAGONAL);
}

void
sp_plot_add_mark (SpPlot *plot, guint panel, const char *label, double x, double y)
{
  g_return_if_fail (panel < plot->n_panels);
  Series *s = add (plot, panel, label, KIND_MARK);
  s->ref_x = x;
  s->ref_y = y;
}



const char *
sp_plot_kind (const char *path)
{
  gsize n = path ? strlen (path) : 0;
  if (n >= 4 && g_ascii_strcasecmp (path + n - 4, ".png") == 0)
    return "png";
  if (n >= 4 && g_ascii_strcasecmp (path + n - 4, ".svg") == 0)
    return "svg";
  return NULL;
}

gboolean
sp_plot_save (const SpPlot *plot, const char *path, GError **error)
{
#ifndef HAVE_CAIRO
  g_set_error (error, SP_ERROR, SP_ERROR_UNSUPPORTED,
               "cannot write plot %s: this shardplan was built without cairo", path);
  return FALSE;
#else
  const char *kind = sp_plot_kind (path);
  gboolean svg = g_strcmp0 (kind, "svg") == 0, png = g_strcmp0 (kind, "png") == 0;
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
  const char *debug = g_getenv ("SHARDPLAN_PLOT_DEBUG");
  g_autoptr (GString) dbg = debug && *debug && strcmp (debug, "0") != 0 ? g_string_new (NULL) : NULL;
  sp_plot_draw (cr, plot, dbg);
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
  if (dbg)
    fputs (dbg->str, stderr);
  return sp_file_temp_commit (tmp, path, error);
#endif
}
