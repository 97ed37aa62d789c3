/* tools/plot-internal.h — what tools/plot.c (the chart and its file) and
 * tools/plot-draw.c (cairo drawing) share; not for other files. */
#pragma once
#include "plot.h"
#ifdef HAVE_CAIRO
#include <cairo.h>
#endif

G_BEGIN_DECLS

#define PANEL_W 520.0
#define PANEL_H 380.0
#define MARGIN_L 70.0
#define MARGIN_R 20.0
#define MARGIN_T 60.0
#define MARGIN_B 55.0
#define PNG_SCALE 2.0

typedef enum {
  KIND_DATA = 0,
  KIND_HLINE,
  KIND_DIAGONAL,
  KIND_MARK,
} SeriesKind;

typedef struct {
  char *name;
  SpPlotStyle style;
  SeriesKind kind;
  GArray *x, *y;      /* KIND_DATA */
  double ref_x, ref_y; /* KIND_HLINE (y), KIND_MARK (x, y) */
} Series;

typedef struct {
  char *title, *x_label, *y_label;
  gboolean x_log, y_log, x_int, y_int;
  GPtrArray *series;
} Panel;

struct _SpPlot {
  char *title;
  guint n_panels;
  Panel panels[2];
};


#ifdef HAVE_CAIRO
/* Draw the whole chart on `cr` (points); append the layout's "plot: …"
 * lines to `dbg` unless it is NULL. */
void sp_plot_draw (cairo_t *cr, const SpPlot *plot, GString *dbg);
#endif

G_END_DECLS
