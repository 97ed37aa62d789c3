/* [calibration] std_errors and correlations: what `shardplan calibrate`'s
 * fit determined (SpTopoCalErrors, topo.h), as text in and out, and the
 * checks every spec passes (sp_topo_check_cross).  Written by calibrate,
 * read by `estimate` to give its estimate a standard error; a file may be
 * hostile, so every name, number and the matrix as a whole are checked. */
#include "config.h"
#include "shardplan/topo.h"
#include "shardplan/error.h"
#include "topo-private.h"

#include <float.h>
#include <math.h>
#include <string.h>

#define P SP_TOPO_CAL_PARAMS
/* the largest standard error a file may give, in the value's unit */
#define SE_MAX 1e9
/* how far below 0 a pivot of the correlation matrix may fall (rounding of
 * a singular matrix, e.g. two values correlated −1.00: calibrate's own
 * come within 1e-17), and below what a pivot counts as 0.  Tight, because
 * an estimate's variance scales the matrix by standard errors of up to
 * 1e9: a pivot of −1e-6 accepted there gave a negative variance, shown as
 * ±0.0 % (a review's file) */
#define PSD_TOL 1e-12

static const char *const cal_keys[P] = {
  "intra_latency_us", "inter_latency_us", "intra_efficiency",  "nic_efficiency",
  "ll_overhead_us",   "ll128_overhead_us", "simple_overhead_us",
};

const char *
sp_topo_cal_param_key (guint p)
{
  return p < P ? cal_keys[p] : NULL;
}

static gboolean
finite_given (const SpTopoCalErrors *e, guint p)
{
  return (e->given >> p & 1) && isfinite (e->std_error[p]);
}

/* The index of a parameter name, or -1 with an error naming it. */
static int
param_of (const char *what, const char *name, GError **error)
{
  for (guint p = 0; p < P; p++)
    if (strcmp (name, cal_keys[p]) == 0)
      return (int) p;
  g_autofree char *shown = sp_topo_excerpt (name, 64);
  g_autofree char *hint = sp_did_you_mean (name, cal_keys, P);
  g_autofree char *list = sp_topo_join_words (cal_keys, P, " or ");
  g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY, "%s: '%s' is not a calibrated value%s: "
               "expected %s", what, shown, hint, list);
  return -1;
}

/* `text` cut at ';' into entries of whitespace-separated words; an empty
 * entry (a trailing ';') is skipped.  Each entry must have `n_words` words. */
static GPtrArray *
entries_of (const char *what, const char *text, guint n_words, const char *form, GError **error)
{
  g_autoptr (GPtrArray) out = g_ptr_array_new_with_free_func ((GDestroyNotify) g_strfreev);
  g_auto (GStrv) parts = g_strsplit (text, ";", -1);
  for (guint i = 0; parts[i] != NULL; i++)
    {
      g_strstrip (parts[i]);
      if (parts[i][0] == '\0')
        continue;
      char **words = g_strsplit_set (parts[i], " \t", -1);
      guint n = 0;
      for (guint k = 0; words[k] != NULL; k++)
        if (words[k][0] != '\0')
          words[n++] = words[k];
        else
          g_free (words[k]);
      words[n] = NULL;
      g_ptr_array_add (out, words);
      if (n != n_words)
        {
          g_autofree char *shown = sp_topo_excerpt (parts[i], 64);
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                       "%s: entry '%s' is not %s", what, shown, form);
          return NULL;
        }
      if (out->len > (guint) (P * P))
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                       "%s: more than %u entries", what, P * P);
          return NULL;
        }
    }
  return g_steal_pointer (&out);
}

gboolean
sp_topo_cal_parse_std_errors (const char *what, const char *text, SpTopoCalErrors *e,
                              GError **error)
{
  double residual = e->residual_sd;
  memset (e, 0, sizeof *e);
  e->residual_sd = residual;
  g_autoptr (GPtrArray) entries = entries_of (what, text, 2, "'NAME ERROR' (ERROR a number or "
                                              "'undetermined')", error);
  if (entries == NULL)
    return FALSE;
  for (guint i = 0; i < entries->len; i++)
    {
      char **w = g_ptr_array_index (entries, i);
      int p = param_of (what, w[0], error);
      if (p < 0)
        return FALSE;
      if (e->given >> p & 1)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY, "%s: %s is given twice", what,
                       w[0]);
          return FALSE;
        }
      double se;
      if (strcmp (w[1], "undetermined") == 0)
        se = INFINITY;
      else
        {
          g_autofree char *one = g_strdup_printf ("%s: %s", what, w[0]);
          GError *local = NULL;
          if (!sp_parse_double (one, w[1], 0, SE_MAX, &se, &local))
            {
              g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                           "%s (or 'undetermined')", local->message);
              g_error_free (local);
              return FALSE;
            }
          e->corr[p][p] = 1;
        }
      e->given |= (guint8) (1u << p);
      e->std_error[p] = se;
    }
  return TRUE;
}

gboolean
sp_topo_cal_parse_correlations (const char *what, const char *text, SpTopoCalErrors *e,
                                GError **error)
{
  g_autoptr (GPtrArray) entries = entries_of (what, text, 3, "'NAME NAME R' (R in [-1, 1])",
                                              error);
  if (entries == NULL)
    return FALSE;
  gboolean seen[P][P] = { { FALSE } };
  for (guint i = 0; i < entries->len; i++)
    {
      char **w = g_ptr_array_index (entries, i);
      int a = param_of (what, w[0], error);
      int b = a < 0 ? -1 : param_of (what, w[1], error);
      if (b < 0)
        return FALSE;
      for (int k = 0; k < 2; k++)
        {
          int p = k == 0 ? a : b;
          if (!finite_given (e, (guint) p))
            {
              g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                           "%s: %s has no finite standard error in [calibration] std_errors, "
                           "so it has no correlation", what, cal_keys[p]);
              return FALSE;
            }
        }
      if (a == b || seen[a][b])
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                       a == b ? "%s: %s with itself (its correlation is 1)"
                              : "%s: %s and %s are given twice",
                       what, w[0], w[1]);
          return FALSE;
        }
      g_autofree char *one = g_strdup_printf ("%s: %s %s", what, w[0], w[1]);
      GError *local = NULL;
      double r;
      if (!sp_parse_double (one, w[2], -1, 1, &r, &local))
        {
          g_set_error_literal (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY, local->message);
          g_error_free (local);
          return FALSE;
        }
      seen[a][b] = seen[b][a] = TRUE;
      e->corr[a][b] = e->corr[b][a] = r;
    }
  return TRUE;
}

static void
append_double (GString *out, double v)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  sp_topo_format_double (buf, sizeof buf, v); /* reads back the same */
  g_string_append (out, buf);
}

char *
sp_topo_cal_std_errors_text (const SpTopoCalErrors *e)
{
  if (e->given == 0)
    return NULL;
  GString *out = g_string_new (NULL);
  for (guint p = 0; p < P; p++)
    if (e->given >> p & 1)
      {
        g_string_append_printf (out, "%s%s ", out->len ? "; " : "", cal_keys[p]);
        if (isfinite (e->std_error[p]))
          append_double (out, e->std_error[p]);
        else
          g_string_append (out, "undetermined");
      }
  return g_string_free (out, FALSE);
}

char *
sp_topo_cal_correlations_text (const SpTopoCalErrors *e)
{
  GString *out = g_string_new (NULL);
  for (guint a = 0; a < P; a++)
    for (guint b = a + 1; b < P; b++)
      if (finite_given (e, a) && finite_given (e, b))
        {
          g_string_append_printf (out, "%s%s %s ", out->len ? "; " : "", cal_keys[a], cal_keys[b]);
          append_double (out, e->corr[a][b]);
        }
  if (out->len == 0)
    {
      g_string_free (out, TRUE);
      return NULL;
    }
  return g_string_free (out, FALSE);
}

gboolean
sp_topo_cal_check (const SpTopoCalErrors *e, const char *prefix, GError **error)
{
  if (e->given >> P)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "%s[calibration] std_errors: mask 0x%x names no calibrated value beyond the "
                   "%u there are", prefix, e->given, P);
      return FALSE;
    }
  if (!(e->residual_sd >= 0 && e->residual_sd <= 10))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "%s[calibration] residual_sd %g is out of range: expected a number in [0, 10]",
                   prefix, e->residual_sd);
      return FALSE;
    }
  for (guint p = 0; p < P; p++)
    {
      gboolean given = e->given >> p & 1;
      double se = e->std_error[p];
      if (given ? !(isinf (se) && se > 0) && !(se >= 0 && se <= SE_MAX) : se != 0)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                       "%s[calibration] std_errors: %s %g is out of range: expected a number in "
                       "[0, %g] or 'undetermined'%s",
                       prefix, cal_keys[p], se, SE_MAX, given ? "" : " (and 0 when not given)");
          return FALSE;
        }
      if (given && se != 0 && isfinite (se) && fpclassify (se) != FP_NORMAL)
        {
          /* a subnormal: sp_parse_double would refuse it read back */
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                       "%s[calibration] std_errors: %s %g is too small to write: expected 0 or "
                       "at least %g", prefix, cal_keys[p], se, DBL_MIN);
          return FALSE;
        }
      for (guint q = 0; q < P; q++)
        {
          double r = e->corr[p][q];
          if (r != 0 && fpclassify (r) == FP_SUBNORMAL)
            {
              g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                           "%s[calibration] correlations: %s %s %g is too small to write: "
                           "expected 0 or at least %g", prefix, cal_keys[p], cal_keys[q], r,
                           DBL_MIN);
              return FALSE;
            }
          gboolean both = finite_given (e, p) && finite_given (e, q);
          gboolean ok = !both ? r == 0 : p == q ? r == 1 : r >= -1 && r <= 1 && r == e->corr[q][p];
          if (!ok)
            {
              g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                           "%s[calibration] correlations: %s %s %g is not a correlation of "
                           "two values with finite standard errors (in [-1, 1], symmetric, 1 "
                           "with itself)",
                           prefix, cal_keys[p], cal_keys[q], r);
              return FALSE;
            }
        }
    }
  /* positive semidefinite: an LDLᵀ of the correlation matrix of the
   * finite ones whose pivots stay >= −PSD_TOL; a zero pivot (a value
   * fully determined by earlier ones) must leave nothing in its column:
   * what is left there is at most √(pivot × a later pivot) <= √PSD_TOL */
  guint idx[P], k = 0;
  for (guint p = 0; p < P; p++)
    if (finite_given (e, p))
      idx[k++] = p;
  double L[P][P] = { { 0 } }, d[P] = { 0 };
  for (guint j = 0; j < k; j++)
    {
      double dj = 1;
      for (guint m = 0; m < j; m++)
        dj -= L[j][m] * L[j][m] * d[m];
      gboolean zero = dj <= PSD_TOL;
      gboolean bad = dj < -PSD_TOL;
      d[j] = zero ? 0 : dj;
      L[j][j] = 1;
      for (guint i = j + 1; i < k && !bad; i++)
        {
          double v = e->corr[idx[i]][idx[j]];
          for (guint m = 0; m < j; m++)
            v -= L[i][m] * L[j][m] * d[m];
          if (zero)
            bad = fabs (v) > sqrt (PSD_TOL);
          else
            L[i][j] = v / dj;
        }
      if (bad)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                       "%s[calibration] correlations: these are the correlations of no set of "
                       "values (the matrix is not positive semidefinite at %s)",
                       prefix, cal_keys[idx[j]]);
          return FALSE;
        }
    }
  return TRUE;
}

gboolean
sp_topo_cal_errors_equal (const SpTopoCalErrors *a, const SpTopoCalErrors *b)
{
  if (a->given != b->given || a->residual_sd != b->residual_sd)
    return FALSE;
  for (guint p = 0; p < P; p++)
    {
      if (a->std_error[p] != b->std_error[p])
        return FALSE;
      for (guint q = 0; q < P; q++)
        if (a->corr[p][q] != b->corr[p][q])
          return FALSE;
    }
  return TRUE;
}
