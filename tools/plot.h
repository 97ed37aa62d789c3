/* tools/plot.h — small XY charts for `sweep --plot` and `compare --plot`,
 * written as PNG or SVG (by the file's extension) with cairo.
 *
 * A chart has up to two panels side by side or one; each panel has axes
 * (linear or log10), a title, axis labels, and series drawn as lines with
 * markers or as markers only.  Nothing here knows about shardplan's data.
 */
#pragma once
#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  SP_PLOT_LINES = 0,   /* line through the points, with markers */
  SP_PLOT_MARKERS,     /* markers only (scatter) */
  SP_PLOT_BARS,        /* vertical bars from y = 0 (histograms) */
  SP_PLOT_CROSSES,     /* scatter with x-shaped markers, told apart from SP_PLOT_MARKERS */
} SpPlotStyle;

typedef struct _SpPlot SpPlot;

/* A chart of `n_panels` (1 or 2) panels laid out left to right. */
SpPlot *sp_plot_new (guint n_panels, const char *title);
void sp_plot_free (SpPlot *plot);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (SpPlot, sp_plot_free)

/* Axes of panel `panel`: titles, labels and log10 scaling.  Points with
 * x <= 0 (or y <= 0) on a log axis are skipped. */
void sp_plot_set_axes (SpPlot *plot, guint panel, const char *title, const char *x_label,
                       gboolean x_log, const char *y_label, gboolean y_log);

/* Add a series of n points (copied) to a panel. */
void sp_plot_add_series (SpPlot *plot, guint panel, const char *name, SpPlotStyle style,
                         const double *x, const double *y, gsize n);

/* A horizontal reference line (e.g. GPU memory) and a diagonal y = x line. */
void sp_plot_add_hline (SpPlot *plot, guint panel, const char *name, double y);
void sp_plot_add_diagonal (SpPlot *plot, guint panel, const char *name);

/* Write the chart to `path` (.png or .svg).  Fails with SP_ERROR_UNSUPPORTED
 * when built without cairo or for another extension, SP_ERROR_IO when the
 * file cannot be written (written to a temporary name, then renamed). */
gboolean sp_plot_save (const SpPlot *plot, const char *path, GError **error);

G_END_DECLS
