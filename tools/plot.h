/* tools/plot.h — small XY charts for `sweep --plot` and `compare --plot`,
 * written as PNG or SVG (by the file's extension) with cairo.
 *
 * A chart has up to two panels side by side or one; each panel has axes
 * (linear, log10 or integer), a title, axis labels, and series drawn as
 * lines with markers or as markers only.  Nothing here knows about
 * shardplan's data.
 *
 * How a chart stays readable (issue 16):
 *  - a log axis labels its decades (1, 10, 100 …) and draws unlabelled
 *    grid lines at 2 … 9 × each decade; its range is widened to show at
 *    least two decades;
 *  - an integer axis (row numbers, counts) has ticks at integers only,
 *    none beyond the data (a bar chart's count axis starts at 0);
 *  - each marker series of a panel has its own shape, alternately filled
 *    and hollow; filled ones are drawn first, each smaller than the one
 *    before, then the hollow ones, so series whose points coincide still
 *    show every marker;
 *  - the legend goes in the first corner (then anywhere in the data area)
 *    where it covers no marker, line, bar or label; when there is no such
 *    place it goes right of the data area, which shrinks to make room;
 *  - reference lines and marked points are labelled where they are drawn.
 *
 * SHARDPLAN_PLOT_DEBUG=1 in the environment makes sp_plot_save() print the
 * layout it drew to stderr, one "plot: …" line per item, in points from
 * the top left (tests read it: cairo writes text as glyph outlines). */
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

/* Count axes (row numbers, node counts, ops per bin): ticks at integers
 * only.  Ignored on an axis that is log. */
void sp_plot_set_integer_ticks (SpPlot *plot, guint panel, gboolean x, gboolean y);

/* Add a series of n points (copied) to a panel. */
void sp_plot_add_series (SpPlot *plot, guint panel, const char *name, SpPlotStyle style,
                         const double *x, const double *y, gsize n);

/* A horizontal reference line at `y` (data units), e.g. the GPU's memory,
 * labelled with `name` at the line itself (not in the legend); and a
 * diagonal y = x line (in the legend). */
void sp_plot_add_hline (SpPlot *plot, guint panel, const char *name, double y);
void sp_plot_add_diagonal (SpPlot *plot, guint panel, const char *name);

/* Mark the point (x, y) of a panel — e.g. the recommended configuration —
 * with a ring drawn over every series and `label` written beside it. */
void sp_plot_add_mark (SpPlot *plot, guint panel, const char *label, double x, double y);

/* Write the chart to `path` (.png or .svg).  Fails with SP_ERROR_UNSUPPORTED
 * when built without cairo or for another extension, SP_ERROR_IO when the
 * file cannot be written (written to a temporary name, then renamed). */
gboolean sp_plot_save (const SpPlot *plot, const char *path, GError **error);

/* ---- Layout, pure functions (no cairo), used by the drawing and tested
 * on their own (tests/tools/test_plot.c). */

typedef enum {
  SP_PLOT_AXIS_LINEAR = 0,
  SP_PLOT_AXIS_LOG,     /* log10; values must be > 0 */
  SP_PLOT_AXIS_INTEGER, /* linear, ticks at integers only */
} SpPlotAxis;

/* The range an axis shows for data spanning [*lo, *hi] (data units; > 0 on
 * a log axis), padded so no point sits on the frame: a log axis is widened
 * to hold at least two decades, an integer axis by at least 0.5 on each
 * side; `include_zero` (bars) starts a linear or integer axis at 0. */
void sp_plot_axis_range (SpPlotAxis kind, gboolean include_zero, double *lo, double *hi);

/* The labelled ticks of an axis showing [lo, hi] (data units), ascending:
 * on a log axis the decades inside it (with 2 and 5 × each decade when
 * fewer than two decades are inside), on an integer axis integers 1, 2 or
 * 5 × 10^k apart, on a linear axis about six 1, 2 or 5 × 10^k steps.
 * Writes at most `max` values to out_ticks and returns how many. */
guint sp_plot_axis_ticks (SpPlotAxis kind, double lo, double hi, double *out_ticks, guint max);

/* "png" or "svg" from the path's extension, in either case (p.PNG is a
 * PNG), NULL for anything else. */
const char *sp_plot_kind (const char *path);
/* A tick's label: "0.01", "1", "100", "250000", "1e6", "2.5e-5"; integers
 * on an integer axis. */
void sp_plot_format_tick (SpPlotAxis kind, double v, char *buf, gsize size);
/* The labels of an axis's n ticks, in one notation: all plain or, when one
 * of them needs it (>= 1e6 or < 1e-3), all "4e5", "1e6", "1.2e6"
 * (0 stays "0"; integers on an integer axis). */
void sp_plot_format_ticks (SpPlotAxis kind, const double *ticks, guint n, char (*out_labels)[32]);

/* A rectangle, in points, y growing downwards. */
typedef struct {
  double x, y, w, h;
} SpPlotRect;

/* Whether the rectangles overlap (touching edges do not). */
gboolean sp_plot_rects_overlap (const SpPlotRect *a, const SpPlotRect *b);
/* Whether the segment (x0, y0)–(x1, y1) passes through `r`. */
gboolean sp_plot_segment_hits_rect (double x0, double y0, double x1, double y1,
                                    const SpPlotRect *r);

/* Whether `r` overlaps none of the boxes and is crossed by none of the
 * segments (4 doubles each: x0, y0, x1, y1). */
gboolean sp_plot_box_is_free (const SpPlotRect *r, const SpPlotRect *boxes, gsize n_boxes,
                              const double *segments, gsize n_segments);

/* Where a w × h box (a legend) goes inside `area`, inset by `inset`, so
 * that it overlaps none of the `n_boxes` boxes (markers, bars, labels) and
 * is crossed by none of the `n_segments` segments (4 doubles each: x0, y0,
 * x1, y1): the top-left, top-right, bottom-left, bottom-right corners are
 * tried first, then positions `inset` apart from the top left.  Returns
 * FALSE, out_box untouched, when no position is free. */
gboolean sp_plot_place_box (const SpPlotRect *area, double w, double h, double inset,
                            const SpPlotRect *boxes, gsize n_boxes, const double *segments,
                            gsize n_segments, SpPlotRect *out_box);

G_END_DECLS
