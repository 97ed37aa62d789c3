/* tools/plot-layout.c — the pure part of the charts (plot.h): axis ranges,
 * ticks and their labels, and free places for legends and labels.  No
 * cairo here, so the layout is tested without it (tests/tools/test_plot.c). */
#include "config.h"
#include "plot.h"

#include <math.h>


/* 1, 2 or 5 × 10^k, about six steps over `span`. */
static double
nice_step (double span)
{
  double raw = span / 6.0;
  double mag = pow (10, floor (log10 (raw)));
  double f = raw / mag;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

/* slack when comparing log10 values with whole decades */
#define DEC_EPS 1e-9

void
sp_plot_axis_range (SpPlotAxis kind, gboolean include_zero, double *lo, double *hi)
{
  double a = *lo, b = *hi;
  if (kind == SP_PLOT_AXIS_LOG)
    {
      if (!(a > 0) || !isfinite (a) || !isfinite (b) || !(b >= a))
        a = 1, b = 10;
      double ta = log10 (a), tb = log10 (b);
      double pad = tb > ta ? 0.04 * (tb - ta) : 0.5;
      ta -= pad;
      tb += pad;
      double inside = floor (tb + DEC_EPS) - ceil (ta - DEC_EPS) + 1;
      if (inside < 1)
        {
          ta = floor (ta);
          tb = ceil (tb);
        }
      else if (inside < 2)
        {
          /* widen on the side that costs less */
          double lo_dec = floor (ta - DEC_EPS), hi_dec = ceil (tb + DEC_EPS);
          if (ta - lo_dec <= hi_dec - tb)
            ta = lo_dec;
          else
            tb = hi_dec;
        }
      *lo = pow (10, ta);
      *hi = pow (10, tb);
      return;
    }
  if (!isfinite (a) || !isfinite (b) || !(b >= a))
    a = 0, b = 1;
  if (include_zero)
    {
      a = MIN (a, 0);
      b = MAX (b, 0);
    }
  double span = b - a;
  if (span <= 0)
    span = fabs (b) > 0 ? fabs (b) : 1;
  double pad_lo = 0.05 * span, pad_hi = 0.08 * span;
  if (kind == SP_PLOT_AXIS_INTEGER)
    {
      /* half a step: enough room for a marker, no tick before the first
       * row (or after the last) */
      pad_lo = MAX (0.02 * span, 0.5);
      pad_hi = MAX (0.02 * span, 0.5);
    }
  if (include_zero && a == 0)
    pad_lo = 0;
  *lo = a - pad_lo;
  *hi = b + pad_hi;
}

guint
sp_plot_axis_ticks (SpPlotAxis kind, double lo, double hi, double *out_ticks, guint max)
{
  guint n = 0;
  if (!isfinite (lo) || !isfinite (hi) || !(hi > lo))
    return 0;
  if (kind == SP_PLOT_AXIS_LOG)
    {
      if (!(lo > 0))
        return 0;
      double ta = log10 (lo), tb = log10 (hi);
      double first = ceil (ta - DEC_EPS), last = floor (tb + DEC_EPS);
      static const double mults[] = { 1, 2, 5 };
      guint n_mults = last - first < 1 ? 3 : 1; /* fewer than two decades inside */
      for (double d = floor (ta - DEC_EPS); d <= last && n < max; d += 1.0)
        for (guint m = 0; m < n_mults && n < max; m++)
          {
            double t = d + log10 (mults[m]);
            if (t >= ta - DEC_EPS && t <= tb + DEC_EPS)
              out_ticks[n++] = mults[m] * pow (10, d);
          }
      return n;
    }
  double step = nice_step (hi - lo);
  if (kind == SP_PLOT_AXIS_INTEGER)
    step = MAX (1.0, round (step));
  double start = ceil (lo / step - DEC_EPS);
  for (guint i = 0; n < max; i++)
    {
      double t = (start + i) * step;
      if (t > hi + DEC_EPS * step)
        break;
      out_ticks[n++] = fabs (t) < DEC_EPS * step ? 0.0 : t;
    }
  return n;
}

static gboolean
plain (double v)
{
  double a = fabs (v);
  return a < 1e-12 || (a >= 1e-3 && a < 1e6);
}

static void
format_one (SpPlotAxis kind, double v, gboolean exponent, char *buf, gsize size)
{
  double a = fabs (v);
  if (kind == SP_PLOT_AXIS_INTEGER && a < 1e15)
    g_snprintf (buf, size, "%.0f", a < 0.5 ? 0.0 : v);
  else if (a < 1e-12)
    g_snprintf (buf, size, "0");
  else if (!exponent)
    g_snprintf (buf, size, "%.6g", v);
  else
    {
      /* "1e6", "2.5e-5": shorter than printf's "1e+06" */
      int e = (int) floor (log10 (a));
      double m = v / pow (10, e);
      if (fabs (m) >= 9.9995)
        m /= 10, e++;
      g_snprintf (buf, size, "%.3ge%d", m, e);
    }
}

void
sp_plot_format_tick (SpPlotAxis kind, double v, char *buf, gsize size)
{
  format_one (kind, v, !plain (v), buf, size);
}

void
sp_plot_format_ticks (SpPlotAxis kind, const double *ticks, guint n, char (*out_labels)[32])
{
  gboolean exponent = FALSE;
  for (guint i = 0; i < n; i++)
    exponent |= !plain (ticks[i]);
  for (guint i = 0; i < n; i++)
    format_one (kind, ticks[i], exponent, out_labels[i], sizeof out_labels[i]);
}

gboolean
sp_plot_rects_overlap (const SpPlotRect *a, const SpPlotRect *b)
{
  return a->x < b->x + b->w && b->x < a->x + a->w && a->y < b->y + b->h && b->y < a->y + a->h;
}

gboolean
sp_plot_segment_hits_rect (double x0, double y0, double x1, double y1, const SpPlotRect *r)
{
  /* Liang–Barsky: clip the segment's parameter range to each slab */
  double t0 = 0, t1 = 1, dx = x1 - x0, dy = y1 - y0;
  const double p[4] = { -dx, dx, -dy, dy };
  const double q[4] = { x0 - r->x, r->x + r->w - x0, y0 - r->y, r->y + r->h - y0 };
  for (int i = 0; i < 4; i++)
    {
      if (p[i] == 0)
        {
          if (q[i] < 0)
            return FALSE;
          continue;
        }
      double t = q[i] / p[i];
      if (p[i] < 0)
        {
          if (t > t1)
            return FALSE;
          t0 = MAX (t0, t);
        }
      else
        {
          if (t < t0)
            return FALSE;
          t1 = MIN (t1, t);
        }
    }
  return t0 <= t1;
}

gboolean
sp_plot_box_is_free (const SpPlotRect *r, const SpPlotRect *boxes, gsize n_boxes,
                     const double *seg, gsize n_seg)
{
  for (gsize i = 0; i < n_boxes; i++)
    if (sp_plot_rects_overlap (r, &boxes[i]))
      return FALSE;
  for (gsize i = 0; i < n_seg; i++)
    if (sp_plot_segment_hits_rect (seg[4 * i], seg[4 * i + 1], seg[4 * i + 2], seg[4 * i + 3], r))
      return FALSE;
  return TRUE;
}

gboolean
sp_plot_place_box (const SpPlotRect *area, double w, double h, double inset,
                   const SpPlotRect *boxes, gsize n_boxes, const double *segments,
                   gsize n_segments, SpPlotRect *out_box)
{
  double left = area->x + inset, top = area->y + inset;
  double right = area->x + area->w - inset - w, bottom = area->y + area->h - inset - h;
  if (!(w > 0) || !(h > 0) || right < left || bottom < top)
    return FALSE;
  const double corners[4][2] = { { left, top }, { right, top }, { left, bottom }, { right, bottom } };
  for (int c = 0; c < 4; c++)
    {
      SpPlotRect r = { corners[c][0], corners[c][1], w, h };
      if (sp_plot_box_is_free (&r, boxes, n_boxes, segments, n_segments))
        {
          *out_box = r;
          return TRUE;
        }
    }
  double step = MAX (inset, 2.0);
  for (double y = top; y <= bottom; y += step)
    for (double x = left; x <= right; x += step)
      {
        SpPlotRect r = { x, y, w, h };
        if (sp_plot_box_is_free (&r, boxes, n_boxes, segments, n_segments))
          {
            *out_box = r;
            return TRUE;
          }
      }
  return FALSE;
}
