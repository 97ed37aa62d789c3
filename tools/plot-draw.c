/* tools/plot-draw.c — cairo drawing of the charts (plot.h): axes, series
 * with a marker shape each, reference lines, marks, in-place labels and
 * the legend, laid out by tools/plot-layout.c. */
#include "config.h"
#include "plot-internal.h"

#include <math.h>
#include <string.h>

#ifdef HAVE_CAIRO
/* Tableau-10 colours: distinguishable and print-safe. */
static const double palette[][3] = {
  { 0.122, 0.467, 0.706 }, { 1.000, 0.498, 0.055 }, { 0.173, 0.627, 0.173 },
  { 0.839, 0.153, 0.157 }, { 0.580, 0.404, 0.741 }, { 0.549, 0.337, 0.294 },
  { 0.890, 0.467, 0.761 }, { 0.498, 0.498, 0.498 },
};
static const double hline_rgb[3] = { 0.70, 0.05, 0.05 };
static const double diagonal_rgb[3] = { 0.35, 0.35, 0.35 };

typedef enum {
  SHAPE_CIRCLE = 0,
  SHAPE_SQUARE,
  SHAPE_TRIANGLE,
  SHAPE_DIAMOND,
  SHAPE_TRIANGLE_DOWN,
  SHAPE_PLUS,
  SHAPE_X,
} Shape;
static const char *const shape_names[] = { "circle",        "square", "triangle", "diamond",
                                           "triangle-down", "plus",   "x" };

typedef struct {
  Shape shape;
  gboolean filled;
  double size; /* half the marker's extent, points */
  const double *rgb;
} Marker;

#define FONT_SMALL 10.0
#define LEGEND_ROW 14.0
#define LEGEND_PAD 6.0
#define LEGEND_SWATCH 20.0
#define MARK_RING 8.0

/* Shapes cycle over the marker series of a panel, alternately filled and
 * hollow; the k-th filled series is smaller than the ones before it (it is
 * drawn over them) and the k-th hollow one larger, so markers that
 * coincide all stay visible. */
static void
assign_markers (const Panel *p, Marker *out)
{
  static const Shape seq[] = { SHAPE_CIRCLE,  SHAPE_SQUARE,        SHAPE_TRIANGLE,
                               SHAPE_DIAMOND, SHAPE_TRIANGLE_DOWN, SHAPE_PLUS };
  guint shape_i = 0, colour = 0;
  for (guint k = 0; k < p->series->len; k++)
    {
      const Series *s = p->series->pdata[k];
      if (s->kind != KIND_DATA)
        continue;
      out[k].rgb = palette[colour++ % G_N_ELEMENTS (palette)];
      if (s->style == SP_PLOT_BARS)
        continue;
      if (s->style == SP_PLOT_CROSSES)
        {
          out[k].shape = SHAPE_X;
          out[k].size = 4.0;
          continue;
        }
      Shape sh = seq[shape_i % G_N_ELEMENTS (seq)];
      guint j = MIN (shape_i / 2, 4u);
      out[k].shape = sh;
      out[k].filled = shape_i % 2 == 0 && sh != SHAPE_PLUS;
      out[k].size = out[k].filled ? 4.4 - 0.6 * j : 4.6 + 0.7 * j;
      shape_i++;
    }
}

static void
marker_path (cairo_t *cr, const Marker *m, double x, double y)
{
  double r = m->size;
  cairo_new_sub_path (cr);
  switch (m->shape)
    {
    case SHAPE_CIRCLE:
      cairo_arc (cr, x, y, r, 0, 2 * G_PI);
      break;
    case SHAPE_SQUARE:
      cairo_rectangle (cr, x - 0.85 * r, y - 0.85 * r, 1.7 * r, 1.7 * r);
      break;
    case SHAPE_TRIANGLE:
    case SHAPE_TRIANGLE_DOWN:
      {
        double d = m->shape == SHAPE_TRIANGLE ? 1 : -1;
        cairo_move_to (cr, x, y - d * r);
        cairo_line_to (cr, x + 0.866 * r, y + d * 0.5 * r);
        cairo_line_to (cr, x - 0.866 * r, y + d * 0.5 * r);
        cairo_close_path (cr);
        break;
      }
    case SHAPE_DIAMOND:
      cairo_move_to (cr, x, y - r);
      cairo_line_to (cr, x + r, y);
      cairo_line_to (cr, x, y + r);
      cairo_line_to (cr, x - r, y);
      cairo_close_path (cr);
      break;
    case SHAPE_PLUS:
      cairo_move_to (cr, x - r, y);
      cairo_line_to (cr, x + r, y);
      cairo_move_to (cr, x, y - r);
      cairo_line_to (cr, x, y + r);
      break;
    case SHAPE_X:
      cairo_move_to (cr, x - 0.8 * r, y - 0.8 * r);
      cairo_line_to (cr, x + 0.8 * r, y + 0.8 * r);
      cairo_move_to (cr, x - 0.8 * r, y + 0.8 * r);
      cairo_line_to (cr, x + 0.8 * r, y - 0.8 * r);
      break;
    }
}

static void
marker_draw (cairo_t *cr, const Marker *m, double x, double y)
{
  cairo_set_source_rgb (cr, m->rgb[0], m->rgb[1], m->rgb[2]);
  marker_path (cr, m, x, y);
  if (m->filled)
    cairo_fill (cr);
  else
    {
      cairo_set_line_width (cr, 1.4);
      cairo_stroke (cr);
    }
}

typedef struct {
  double lo, hi; /* data units */
  SpPlotAxis kind;
  double tick_lo, tick_hi; /* integer axes: no ticks outside (the data, or 0 for bars) */
} Axis;

typedef struct {
  Axis x, y;
  double x0, x1, y0, y1; /* data area: left, right, bottom, top (points) */
} Frame;

static double
axis_t (const Axis *a, double v)
{
  return a->kind == SP_PLOT_AXIS_LOG ? log10 (v) : v;
}

static gboolean
usable (const Axis *a, double v)
{
  return isfinite (v) && (a->kind != SP_PLOT_AXIS_LOG || v > 0);
}

static double
fx (const Frame *f, double v)
{
  double lo = axis_t (&f->x, f->x.lo), hi = axis_t (&f->x, f->x.hi);
  return f->x0 + (axis_t (&f->x, v) - lo) / (hi - lo) * (f->x1 - f->x0);
}

static double
fy (const Frame *f, double v)
{
  double lo = axis_t (&f->y, f->y.lo), hi = axis_t (&f->y, f->y.hi);
  return f->y0 - (axis_t (&f->y, v) - lo) / (hi - lo) * (f->y0 - f->y1);
}

static gboolean
point_usable (const Frame *f, const Series *s, guint k, double *out_px, double *out_py)
{
  double x = g_array_index (s->x, double, k), y = g_array_index (s->y, double, k);
  if (!usable (&f->x, x) || !usable (&f->y, y))
    return FALSE;
  *out_px = fx (f, x);
  *out_py = fy (f, y);
  return TRUE;
}

/* The ink box of `text` drawn with its top-left corner at (x, y). */
static SpPlotRect
text_box (cairo_t *cr, const char *text, double x, double y)
{
  cairo_text_extents_t ext;
  cairo_text_extents (cr, text, &ext);
  return (SpPlotRect){ x, y, ext.width, ext.height };
}

static void
text_at (cairo_t *cr, double x, double y, const char *text, double align_x, double align_y)
{
  cairo_text_extents_t ext;
  cairo_text_extents (cr, text, &ext);
  cairo_move_to (cr, x - ext.width * align_x - ext.x_bearing, y - ext.height * align_y - ext.y_bearing);
  cairo_show_text (cr, text);
}

/* What the legend must not cover, and where in-place labels go. */
typedef struct {
  GArray *boxes; /* SpPlotRect */
  GArray *segs;  /* 4 doubles per segment */
  SpPlotRect *label; /* per series: its in-place label (hlines, marks) */
  gboolean *has_label;
} Layout;

static void
add_box (Layout *l, double x, double y, double w, double h)
{
  SpPlotRect r = { x, y, w, h };
  g_array_append_val (l->boxes, r);
}

static void
add_seg (Layout *l, double x0, double y0, double x1, double y1)
{
  double s[4] = { x0, y0, x1, y1 };
  g_array_append_vals (l->segs, s, 4);
}

static double
bar_width (const Frame *f, const Series *s)
{
  return s->x->len > 1 ? 0.8 * (f->x1 - f->x0) / s->x->len : 20;
}

/* Place `text` (font already set) at the first of `cands` (top-left
 * corners) that lies inside the data area and is free; else the first
 * inside; else the first. */
static SpPlotRect
place_label (cairo_t *cr, const Frame *f, const Layout *l, const char *text,
             const double (*cands)[2], guint n)
{
  SpPlotRect first_inside = { 0 }, first = { 0 };
  gboolean have_inside = FALSE;
  for (guint i = 0; i < n; i++)
    {
      SpPlotRect r = text_box (cr, text, cands[i][0], cands[i][1]);
      if (i == 0)
        first = r;
      gboolean inside = r.x >= f->x0 + 3 && r.x + r.w <= f->x1 - 3 && r.y >= f->y1 + 3 &&
                        r.y + r.h <= f->y0 - 3;
      if (!inside)
        continue;
      if (sp_plot_box_is_free (&r, (const SpPlotRect *) l->boxes->data, l->boxes->len,
                       (const double *) l->segs->data, l->segs->len / 4))
        return r;
      if (!have_inside)
        first_inside = r, have_inside = TRUE;
    }
  return have_inside ? first_inside : first;
}

static void
compute_layout (cairo_t *cr, const Panel *p, const Frame *f, const Marker *mk, Layout *l)
{
  g_array_set_size (l->boxes, 0);
  g_array_set_size (l->segs, 0);
  for (guint k = 0; k < p->series->len; k++)
    {
      const Series *s = p->series->pdata[k];
      l->has_label[k] = FALSE;
      double px, py, lx = 0, ly = 0;
      gboolean started = FALSE;
      switch (s->kind)
        {
        case KIND_DATA:
          for (guint i = 0; i < s->x->len; i++)
            {
              if (!point_usable (f, s, i, &px, &py))
                continue;
              if (s->style == SP_PLOT_BARS)
                {
                  double base = f->y.kind == SP_PLOT_AXIS_LOG ? f->y0 : fy (f, 0.0), bw = bar_width (f, s);
                  add_box (l, px - bw / 2, MIN (py, base), bw, fabs (base - py));
                  continue;
                }
              double r = mk[k].size + 1.5;
              add_box (l, px - r, py - r, 2 * r, 2 * r);
              if (s->style == SP_PLOT_LINES && started)
                add_seg (l, lx, ly, px, py);
              lx = px, ly = py, started = TRUE;
            }
          break;
        case KIND_HLINE:
          if (usable (&f->y, s->ref_y))
            add_seg (l, f->x0, fy (f, s->ref_y), f->x1, fy (f, s->ref_y));
          break;
        case KIND_DIAGONAL:
          add_seg (l, f->x0, f->y0, f->x1, f->y1);
          break;
        case KIND_MARK:
          if (usable (&f->x, s->ref_x) && usable (&f->y, s->ref_y))
            add_box (l, fx (f, s->ref_x) - MARK_RING - 1.5, fy (f, s->ref_y) - MARK_RING - 1.5,
                     2 * MARK_RING + 3, 2 * MARK_RING + 3);
          break;
        }
    }
  /* in-place labels: marks first (next to their point), then reference lines */
  cairo_set_font_size (cr, FONT_SMALL);
  for (int pass = 0; pass < 2; pass++)
    for (guint k = 0; k < p->series->len; k++)
      {
        const Series *s = p->series->pdata[k];
        if (!s->name || !*s->name || s->kind != (pass == 0 ? KIND_MARK : KIND_HLINE))
          continue;
        if (!usable (&f->y, s->ref_y) || (s->kind == KIND_MARK && !usable (&f->x, s->ref_x)))
          continue;
        SpPlotRect ext = text_box (cr, s->name, 0, 0);
        double w = ext.w, h = ext.h, py = fy (f, s->ref_y), g = 3;
        if (s->kind == KIND_MARK)
          {
            double px = fx (f, s->ref_x), d = MARK_RING + 3;
            const double c[][2] = { { px + d, py - d - h }, { px + d, py + d },
                                    { px - d - w, py - d - h }, { px - d - w, py + d },
                                    { px - w / 2, py - d - h }, { px - w / 2, py + d } };
            l->label[k] = place_label (cr, f, l, s->name, c, G_N_ELEMENTS (c));
          }
        else
          {
            const double c[][2] = { { f->x1 - 4 - w, py - g - h }, { f->x0 + 4, py - g - h },
                                    { f->x1 - 4 - w, py + g }, { f->x0 + 4, py + g },
                                    { (f->x0 + f->x1 - w) / 2, py - g - h },
                                    { (f->x0 + f->x1 - w) / 2, py + g } };
            l->label[k] = place_label (cr, f, l, s->name, c, G_N_ELEMENTS (c));
          }
        l->has_label[k] = TRUE;
        /* a little margin round the label, for the legend */
        add_box (l, l->label[k].x - 2, l->label[k].y - 2, l->label[k].w + 4, l->label[k].h + 4);
      }
}

static gboolean
in_legend (const Series *s)
{
  return s->name && *s->name && (s->kind == KIND_DATA || s->kind == KIND_DIAGONAL);
}

static void
legend_swatch (cairo_t *cr, const Series *s, const Marker *m, double x, double y)
{
  /* (x, y): left end of the swatch, vertically centred */
  if (s->kind == KIND_DIAGONAL)
    {
      double dash[] = { 3, 3 };
      cairo_set_source_rgb (cr, diagonal_rgb[0], diagonal_rgb[1], diagonal_rgb[2]);
      cairo_set_line_width (cr, 1.6);
      cairo_set_dash (cr, dash, 2, 0);
      cairo_move_to (cr, x, y);
      cairo_line_to (cr, x + LEGEND_SWATCH, y);
      cairo_stroke (cr);
      cairo_set_dash (cr, NULL, 0, 0);
      return;
    }
  if (s->style == SP_PLOT_BARS)
    {
      cairo_set_source_rgb (cr, m->rgb[0], m->rgb[1], m->rgb[2]);
      cairo_rectangle (cr, x + 4, y - 4, 12, 8);
      cairo_fill (cr);
      return;
    }
  if (s->style == SP_PLOT_LINES)
    {
      cairo_set_source_rgb (cr, m->rgb[0], m->rgb[1], m->rgb[2]);
      cairo_set_line_width (cr, 1.6);
      cairo_move_to (cr, x, y);
      cairo_line_to (cr, x + LEGEND_SWATCH, y);
      cairo_stroke (cr);
    }
  marker_draw (cr, m, x + LEGEND_SWATCH / 2, y);
}

static const char *
axis_kind_name (SpPlotAxis k)
{
  return k == SP_PLOT_AXIS_LOG ? "log" : k == SP_PLOT_AXIS_INTEGER ? "integer" : "linear";
}

static void
draw_axis (cairo_t *cr, const Frame *f, int axis, guint panel, GString *dbg)
{
  const Axis *a = axis == 0 ? &f->x : &f->y;
  cairo_set_font_size (cr, FONT_SMALL);
  if (a->kind == SP_PLOT_AXIS_LOG)
    {
      /* unlabelled grid lines at 2 … 9 × each decade */
      cairo_set_source_rgb (cr, 0.95, 0.95, 0.95);
      cairo_set_line_width (cr, 0.5);
      for (double d = floor (log10 (a->lo)); d <= ceil (log10 (a->hi)); d += 1.0)
        for (int m = 2; m <= 9; m++)
          {
            double v = m * pow (10, d);
            if (v < a->lo || v > a->hi)
              continue;
            double pos = axis == 0 ? fx (f, v) : fy (f, v);
            if (axis == 0)
              cairo_move_to (cr, pos, f->y0), cairo_line_to (cr, pos, f->y1);
            else
              cairo_move_to (cr, f->x0, pos), cairo_line_to (cr, f->x1, pos);
          }
      cairo_stroke (cr);
    }
  double ticks[64];
  guint n = sp_plot_axis_ticks (a->kind, a->lo, a->hi, ticks, G_N_ELEMENTS (ticks));
  if (a->kind == SP_PLOT_AXIS_INTEGER)
    {
      /* no row 0 or row n + 1 in the padding of a row-number axis */
      guint kept = 0;
      for (guint i = 0; i < n; i++)
        if (ticks[i] >= a->tick_lo - 1e-9 && ticks[i] <= a->tick_hi + 1e-9)
          ticks[kept++] = ticks[i];
      n = kept;
    }
  char labels[G_N_ELEMENTS (ticks)][32];
  sp_plot_format_ticks (a->kind, ticks, n, labels);
  if (dbg)
    g_string_append_printf (dbg, "plot: panel=%u axis=%c kind=%s ticks=", panel, axis == 0 ? 'x' : 'y',
                            axis_kind_name (a->kind));
  for (guint i = 0; i < n; i++)
    {
      double pos = axis == 0 ? fx (f, ticks[i]) : fy (f, ticks[i]);
      cairo_set_source_rgb (cr, 0.88, 0.88, 0.88);
      cairo_set_line_width (cr, 0.6);
      if (axis == 0)
        cairo_move_to (cr, pos, f->y0), cairo_line_to (cr, pos, f->y1);
      else
        cairo_move_to (cr, f->x0, pos), cairo_line_to (cr, f->x1, pos);
      cairo_stroke (cr);
      cairo_set_source_rgb (cr, 0.2, 0.2, 0.2);
      const char *buf = labels[i];
      if (axis == 0)
        text_at (cr, pos, f->y0 + 14, buf, 0.5, 0.5);
      else
        text_at (cr, f->x0 - 6, pos, buf, 1.0, 0.5);
      if (dbg)
        g_string_append_printf (dbg, "%s%s", i ? "|" : "", buf);
    }
  if (dbg)
    g_string_append_c (dbg, '\n');
}

static void
draw_panel (cairo_t *cr, const Panel *p, guint index, double ox, double oy, GString *dbg)
{
  Frame f = { .x.kind = p->x_log   ? SP_PLOT_AXIS_LOG
                        : p->x_int ? SP_PLOT_AXIS_INTEGER
                                   : SP_PLOT_AXIS_LINEAR,
              .y.kind = p->y_log   ? SP_PLOT_AXIS_LOG
                        : p->y_int ? SP_PLOT_AXIS_INTEGER
                                   : SP_PLOT_AXIS_LINEAR };
  /* data extents (data units), then the axes' ranges */
  double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
  gboolean bars = FALSE, diag = FALSE;
  for (guint k = 0; k < p->series->len; k++)
    {
      const Series *s = p->series->pdata[k];
      if (s->kind == KIND_DATA)
        {
          bars |= s->style == SP_PLOT_BARS;
          for (guint i = 0; i < s->x->len; i++)
            {
              double x = g_array_index (s->x, double, i), y = g_array_index (s->y, double, i);
              if (usable (&f.x, x) && usable (&f.y, y))
                xlo = MIN (xlo, x), xhi = MAX (xhi, x), ylo = MIN (ylo, y), yhi = MAX (yhi, y);
            }
        }
      else if (s->kind == KIND_HLINE && usable (&f.y, s->ref_y))
        ylo = MIN (ylo, s->ref_y), yhi = MAX (yhi, s->ref_y);
      else if (s->kind == KIND_MARK && usable (&f.x, s->ref_x) && usable (&f.y, s->ref_y))
        xlo = MIN (xlo, s->ref_x), xhi = MAX (xhi, s->ref_x), ylo = MIN (ylo, s->ref_y),
        yhi = MAX (yhi, s->ref_y);
      else if (s->kind == KIND_DIAGONAL)
        diag = TRUE;
    }
  if (diag && xlo <= xhi && ylo <= yhi)
    {
      /* y = x needs the same range on both axes */
      xlo = ylo = MIN (xlo, ylo);
      xhi = yhi = MAX (xhi, yhi);
    }
  f.x.tick_lo = xlo, f.x.tick_hi = xhi;
  f.y.tick_lo = bars ? MIN (ylo, 0) : ylo, f.y.tick_hi = bars ? MAX (yhi, 0) : yhi;
  if (xlo > xhi)
    f.x.tick_lo = -INFINITY, f.x.tick_hi = INFINITY;
  if (ylo > yhi)
    f.y.tick_lo = -INFINITY, f.y.tick_hi = INFINITY;
  sp_plot_axis_range (f.x.kind, FALSE, &xlo, &xhi);
  sp_plot_axis_range (f.y.kind, bars, &ylo, &yhi);
  f.x.lo = xlo, f.x.hi = xhi, f.y.lo = ylo, f.y.hi = yhi;
  f.x0 = ox + MARGIN_L, f.x1 = ox + PANEL_W - MARGIN_R;
  f.y0 = oy + PANEL_H - MARGIN_B, f.y1 = oy + MARGIN_T;

  guint ns = p->series->len;
  g_autofree Marker *mk = g_new0 (Marker, MAX (ns, 1));
  assign_markers (p, mk);
  Layout lay = { g_array_new (FALSE, FALSE, sizeof (SpPlotRect)),
                 g_array_new (FALSE, FALSE, sizeof (double)), g_new0 (SpPlotRect, MAX (ns, 1)),
                 g_new0 (gboolean, MAX (ns, 1)) };
  compute_layout (cr, p, &f, mk, &lay);

  /* the legend: a free place inside the data area, else right of it */
  cairo_set_font_size (cr, FONT_SMALL);
  guint rows = 0;
  double text_w = 0;
  for (guint k = 0; k < ns; k++)
    if (in_legend (p->series->pdata[k]))
      {
        cairo_text_extents_t ext;
        cairo_text_extents (cr, ((const Series *) p->series->pdata[k])->name, &ext);
        text_w = MAX (text_w, ext.x_advance);
        rows++;
      }
  SpPlotRect legend = { 0 };
  gboolean legend_inside = TRUE;
  if (rows > 0)
    {
      double lw = 3 * LEGEND_PAD + LEGEND_SWATCH + text_w, lh = LEGEND_PAD + rows * LEGEND_ROW;
      SpPlotRect area = { f.x0, f.y1, f.x1 - f.x0, f.y0 - f.y1 };
      if (!sp_plot_place_box (&area, lw, lh, 6, (const SpPlotRect *) lay.boxes->data,
                              lay.boxes->len, (const double *) lay.segs->data, lay.segs->len / 4,
                              &legend))
        {
          legend_inside = FALSE;
          f.x1 = MAX (f.x0 + 0.4 * (f.x1 - f.x0), f.x1 - lw - 12);
          compute_layout (cr, p, &f, mk, &lay);
          legend = (SpPlotRect){ f.x1 + 8, f.y1, lw, lh };
        }
    }

  /* grid, ticks, frame, titles */
  draw_axis (cr, &f, 0, index, dbg);
  draw_axis (cr, &f, 1, index, dbg);
  cairo_set_source_rgb (cr, 0, 0, 0);
  cairo_set_line_width (cr, 1.0);
  cairo_rectangle (cr, f.x0, f.y1, f.x1 - f.x0, f.y0 - f.y1);
  cairo_stroke (cr);
  cairo_set_font_size (cr, 12);
  if (p->title)
    text_at (cr, (f.x0 + f.x1) / 2, oy + 22, p->title, 0.5, 0.5);
  cairo_set_font_size (cr, 11);
  if (p->x_label)
    text_at (cr, (f.x0 + f.x1) / 2, f.y0 + 36, p->x_label, 0.5, 0.5);
  if (p->y_label)
    {
      cairo_save (cr);
      cairo_translate (cr, ox + 16, (f.y0 + f.y1) / 2);
      cairo_rotate (cr, -G_PI / 2);
      text_at (cr, 0, 0, p->y_label, 0.5, 0.5);
      cairo_restore (cr);
    }
  if (dbg)
    g_string_append_printf (dbg, "plot: panel=%u area x=%.2f y=%.2f w=%.2f h=%.2f\n", index, f.x0,
                            f.y1, f.x1 - f.x0, f.y0 - f.y1);

  /* data, clipped to the data area, back to front: bars, reference lines,
   * series lines, filled markers, hollow markers, marks */
  cairo_save (cr);
  cairo_rectangle (cr, f.x0, f.y1, f.x1 - f.x0, f.y0 - f.y1);
  cairo_clip (cr);
  double px, py;
  for (guint k = 0; k < ns; k++)
    {
      const Series *s = p->series->pdata[k];
      if (s->kind != KIND_DATA || s->style != SP_PLOT_BARS)
        continue;
      cairo_set_source_rgb (cr, mk[k].rgb[0], mk[k].rgb[1], mk[k].rgb[2]);
      double bw = bar_width (&f, s), base = f.y.kind == SP_PLOT_AXIS_LOG ? f.y0 : fy (&f, 0.0);
      for (guint i = 0; i < s->x->len; i++)
        if (point_usable (&f, s, i, &px, &py))
          {
            cairo_rectangle (cr, px - bw / 2, MIN (py, base), bw, fabs (base - py));
            cairo_fill (cr);
          }
    }
  for (guint k = 0; k < ns; k++)
    {
      const Series *s = p->series->pdata[k];
      if (s->kind == KIND_HLINE && usable (&f.y, s->ref_y))
        {
          double dash[] = { 6, 4 };
          cairo_set_source_rgb (cr, hline_rgb[0], hline_rgb[1], hline_rgb[2]);
          cairo_set_line_width (cr, 1.4);
          cairo_set_dash (cr, dash, 2, 0);
          cairo_move_to (cr, f.x0, fy (&f, s->ref_y));
          cairo_line_to (cr, f.x1, fy (&f, s->ref_y));
          cairo_stroke (cr);
          cairo_set_dash (cr, NULL, 0, 0);
        }
      else if (s->kind == KIND_DIAGONAL)
        {
          double dash[] = { 3, 3 };
          cairo_set_source_rgb (cr, diagonal_rgb[0], diagonal_rgb[1], diagonal_rgb[2]);
          cairo_set_line_width (cr, 1.2);
          cairo_set_dash (cr, dash, 2, 0);
          cairo_move_to (cr, f.x0, f.y0);
          cairo_line_to (cr, f.x1, f.y1);
          cairo_stroke (cr);
          cairo_set_dash (cr, NULL, 0, 0);
        }
      else if (s->kind == KIND_DATA && s->style == SP_PLOT_LINES)
        {
          gboolean started = FALSE;
          cairo_set_source_rgb (cr, mk[k].rgb[0], mk[k].rgb[1], mk[k].rgb[2]);
          cairo_set_line_width (cr, 1.6);
          for (guint i = 0; i < s->x->len; i++)
            if (point_usable (&f, s, i, &px, &py))
              {
                if (started)
                  cairo_line_to (cr, px, py);
                else
                  cairo_move_to (cr, px, py);
                started = TRUE;
              }
          cairo_stroke (cr);
        }
    }
  for (int hollow = 0; hollow < 2; hollow++)
    for (guint k = 0; k < ns; k++)
      {
        const Series *s = p->series->pdata[k];
        if (s->kind != KIND_DATA || s->style == SP_PLOT_BARS || mk[k].filled == hollow)
          continue;
        for (guint i = 0; i < s->x->len; i++)
          if (point_usable (&f, s, i, &px, &py))
            {
              marker_draw (cr, &mk[k], px, py);
              if (dbg)
                g_string_append_printf (dbg,
                                        "plot: panel=%u marker series=\"%s\" shape=%s filled=%d "
                                        "x=%.2f y=%.2f r=%.2f\n",
                                        index, s->name ? s->name : "", shape_names[mk[k].shape],
                                        mk[k].filled, px, py, mk[k].size);
            }
      }
  for (guint k = 0; k < ns; k++)
    {
      const Series *s = p->series->pdata[k];
      if (s->kind != KIND_MARK || !usable (&f.x, s->ref_x) || !usable (&f.y, s->ref_y))
        continue;
      double mx = fx (&f, s->ref_x), my = fy (&f, s->ref_y);
      /* a white halo under a black ring: visible over any colour */
      cairo_set_source_rgb (cr, 1, 1, 1);
      cairo_set_line_width (cr, 3.6);
      cairo_arc (cr, mx, my, MARK_RING, 0, 2 * G_PI);
      cairo_stroke (cr);
      cairo_set_source_rgb (cr, 0, 0, 0);
      cairo_set_line_width (cr, 1.6);
      cairo_arc (cr, mx, my, MARK_RING, 0, 2 * G_PI);
      cairo_stroke (cr);
      if (dbg)
        g_string_append_printf (dbg, "plot: panel=%u mark x=%.2f y=%.2f r=%.2f\n", index, mx, my,
                                MARK_RING);
    }
  cairo_restore (cr);

  /* in-place labels, on a white ground */
  cairo_set_font_size (cr, FONT_SMALL);
  for (guint k = 0; k < ns; k++)
    {
      const Series *s = p->series->pdata[k];
      if (!lay.has_label[k])
        continue;
      const SpPlotRect *r = &lay.label[k];
      cairo_set_source_rgba (cr, 1, 1, 1, 0.85);
      cairo_rectangle (cr, r->x - 1.5, r->y - 1.5, r->w + 3, r->h + 3);
      cairo_fill (cr);
      if (s->kind == KIND_HLINE)
        cairo_set_source_rgb (cr, hline_rgb[0], hline_rgb[1], hline_rgb[2]);
      else
        cairo_set_source_rgb (cr, 0, 0, 0);
      text_at (cr, r->x, r->y, s->name, 0, 0);
      if (dbg)
        {
          if (s->kind == KIND_HLINE)
            g_string_append_printf (dbg, "plot: panel=%u hline value=%.6g y=%.2f", index, s->ref_y,
                                    fy (&f, s->ref_y));
          else
            g_string_append_printf (dbg, "plot: panel=%u mark-label", index);
          g_string_append_printf (dbg, " label=\"%s\" box x=%.2f y=%.2f w=%.2f h=%.2f\n", s->name,
                                  r->x, r->y, r->w, r->h);
        }
    }

  if (rows > 0)
    {
      cairo_set_source_rgb (cr, 1, 1, 1);
      cairo_rectangle (cr, legend.x, legend.y, legend.w, legend.h);
      cairo_fill_preserve (cr);
      cairo_set_source_rgb (cr, 0.7, 0.7, 0.7);
      cairo_set_line_width (cr, 0.6);
      cairo_stroke (cr);
      double ly = legend.y + LEGEND_PAD / 2 + LEGEND_ROW / 2;
      for (guint k = 0; k < ns; k++)
        {
          const Series *s = p->series->pdata[k];
          if (!in_legend (s))
            continue;
          legend_swatch (cr, s, &mk[k], legend.x + LEGEND_PAD, ly);
          cairo_set_source_rgb (cr, 0.1, 0.1, 0.1);
          text_at (cr, legend.x + 2 * LEGEND_PAD + LEGEND_SWATCH, ly, s->name, 0.0, 0.5);
          ly += LEGEND_ROW;
        }
      if (dbg)
        g_string_append_printf (dbg, "plot: panel=%u legend %s x=%.2f y=%.2f w=%.2f h=%.2f\n", index,
                                legend_inside ? "inside" : "outside", legend.x, legend.y, legend.w,
                                legend.h);
    }
  g_array_unref (lay.boxes);
  g_array_unref (lay.segs);
  g_free (lay.label);
  g_free (lay.has_label);
}

void
sp_plot_draw (cairo_t *cr, const SpPlot *plot, GString *dbg)
{
  cairo_set_source_rgb (cr, 1, 1, 1);
  cairo_paint (cr);
  cairo_select_font_face (cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_source_rgb (cr, 0, 0, 0);
  cairo_set_font_size (cr, 14);
  if (plot->title)
    text_at (cr, plot->n_panels * PANEL_W / 2, 14, plot->title, 0.5, 0.5);
  for (guint i = 0; i < plot->n_panels; i++)
    draw_panel (cr, &plot->panels[i], i, i * PANEL_W, 0, dbg);
}
#endif
