/* Simulated vs measured traces: a sort-merge join on (op_id, iter, rank),
 * per-op medians and aggregate error statistics.  Both traces are read
 * whole into compact arrays and sorted, so the join needs no hash table and
 * the rows may be in any order in the files. */
#include "config.h"
#include "compare-private.h"
#include "shardplan/error.h"
#include "shardplan/plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Rows read per sp_trace_read_rows call. */
#define READ_CHUNK 65536

/* What the join keeps of a row. */
typedef struct {
  guint32 op_id;
  gint32 iter;
  guint32 rank;
  guint32 group_id;
  guint64 bytes;
  gint64 dur_ns;
  gint64 nccl_est_ns;   /* NCCL's estimate, -1: none */
  guint8 coll;
  guint8 status;
  guint8 composite;
  guint8 one_rank;      /* a collective on a group of one rank */
  guint8 copy;          /* a one-iteration simulated row standing for iteration > 0 */
} Sample;

static const char *const band_names[SP_COMPARE_BAND_N] = {
  "0 B", "<64 KiB", "64 KiB-1 MiB", "1-64 MiB", ">=64 MiB",
};
static const char *const by_names[SP_COMPARE_BY_N] = { "all", "kind", "size", "family" };

SpCompareBand
sp_compare_band_of (guint64 bytes)
{
  if (bytes == 0)
    return SP_COMPARE_BAND_ZERO;
  if (bytes < (64u << 10))
    return SP_COMPARE_BAND_SMALL;
  if (bytes < (1u << 20))
    return SP_COMPARE_BAND_MEDIUM;
  if (bytes < (64u << 20))
    return SP_COMPARE_BAND_LARGE;
  return SP_COMPARE_BAND_HUGE;
}

const char *
sp_compare_band_name (SpCompareBand band)
{
  return (guint) band < SP_COMPARE_BAND_N ? band_names[band] : NULL;
}

const char *
sp_compare_by_name (SpCompareBy by)
{
  return (guint) by < SP_COMPARE_BY_N ? by_names[by] : NULL;
}

static int
sample_cmp (const void *a, const void *b)
{
  const Sample *x = a, *y = b;
  if (x->op_id != y->op_id)
    return x->op_id < y->op_id ? -1 : 1;
  if (x->iter != y->iter)
    return x->iter < y->iter ? -1 : 1;
  if (x->rank != y->rank)
    return x->rank < y->rank ? -1 : 1;
  return 0;
}

/* The caller's progress callback and the count so far. */
typedef struct {
  SpCompareProgressFn fn;
  gpointer data;
  guint64 done, total;
} Progress;

static void
progress_add (Progress *p, guint64 n)
{
  p->done += n;
  if (p->fn)
    p->fn (MIN (p->done, p->total), p->total, p->data);
}

/* Every row of a trace, sorted by key; duplicates are an error. */
static GArray *
read_samples (SpTrace *trace, const char *name, Progress *progress, GError **error)
{
  guint64 n = sp_trace_n_rows (trace);
  g_autoptr (GArray) out = g_array_sized_new (FALSE, FALSE, sizeof (Sample), (guint) MIN (n, G_MAXUINT));
  g_autofree SpTraceRow *buf = g_new (SpTraceRow, READ_CHUNK);
  for (guint64 start = 0; start < n; start += READ_CHUNK)
    {
      gsize k = (gsize) MIN ((guint64) READ_CHUNK, n - start);
      if (!sp_trace_read_rows (trace, start, k, buf, error))
        return NULL;
      for (gsize i = 0; i < k; i++)
        {
          const SpTraceRow *r = &buf[i];
          Sample s = { .op_id = r->op_id, .iter = r->iter, .rank = r->rank,
                       .group_id = r->group_id, .bytes = r->bytes, .dur_ns = r->dur_ns,
                       .nccl_est_ns = r->nccl_est_ns,
                       .coll = (guint8) r->coll, .status = (guint8) r->status,
                       .composite = (r->flags & SP_TRACE_FLAG_COMPOSITE) != 0,
                       .one_rank = r->group_id != SP_TRACE_NO_GROUP && r->group_size <= 1 };
          g_array_append_val (out, s);
        }
      progress_add (progress, k);
    }
  qsort (out->data, out->len, sizeof (Sample), sample_cmp);
  for (guint i = 1; i < out->len; i++)
    {
      const Sample *a = &g_array_index (out, Sample, i - 1), *b = &g_array_index (out, Sample, i);
      if (sample_cmp (a, b) == 0)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                       "%s: two rows for op %u, iter %d, rank %u", name, b->op_id, b->iter,
                       b->rank);
          return NULL;
        }
    }
  return g_steal_pointer (&out);
}

static int
double_cmp (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

/* Quantile q of values[0..n) (sorts them in place), numpy's linear method. */
static double
quantile (double *values, gsize n, double q)
{
  if (n == 0)
    return NAN;
  qsort (values, n, sizeof (double), double_cmp);
  double pos = q * (double) (n - 1);
  gsize lo = (gsize) floor (pos);
  if (lo + 1 >= n)
    return values[n - 1];
  return values[lo] + (pos - (double) lo) * (values[lo + 1] - values[lo]);
}

/* Per-op accumulation while walking one op's joined samples. */
typedef struct {
  GArray *sim, *meas;    /* double */
  GArray *nccl;          /* double: the samples' NCCL estimates (those that have one) */
  double worst;          /* signed sample error of largest magnitude */
} OpAcc;

static void
finish_op (SpCompare *cmp, const Sample *m, OpAcc *acc, const SpPlan *plan, SpTrace *measured)
{
  if (acc->sim->len == 0)
    return;
  SpCompareOp op = { .op_id = m->op_id, .coll = (SpColl) m->coll, .bytes = m->bytes,
                     .band = sp_compare_band_of (m->bytes), .n_samples = acc->sim->len,
                     .worst_sample_error = acc->worst, .family_id = SP_TRACE_NO_GROUP,
                     .family = "none", .name = "", .nccl_samples = acc->nccl->len,
                     .nccl_ns = NAN, .nccl_error = NAN };
  guint32 fam = 0, index = 0;
  if (sp_trace_group_info (measured, m->group_id, &fam, &index))
    {
      const char *fname = sp_trace_family_name (measured, fam);
      op.family_id = fam;
      op.family = g_string_chunk_insert_const (cmp->strings, fname ? fname : "?");
    }
  if (plan != NULL && m->op_id < sp_plan_n_ops (plan))
    op.name = g_string_chunk_insert_const (cmp->strings, sp_plan_op (plan, m->op_id)->name);
  op.sim_ns = quantile ((double *) (void *) acc->sim->data, acc->sim->len, 0.5);
  op.measured_ns = quantile ((double *) (void *) acc->meas->data, acc->meas->len, 0.5);
  op.error = (op.sim_ns - op.measured_ns) / op.measured_ns;
  if (acc->nccl->len > 0)
    {
      op.nccl_ns = quantile ((double *) (void *) acc->nccl->data, acc->nccl->len, 0.5);
      op.nccl_error = (op.nccl_ns - op.measured_ns) / op.measured_ns;
    }
  g_array_append_val (cmp->ops, op);
  g_array_set_size (acc->sim, 0);
  g_array_set_size (acc->meas, 0);
  g_array_set_size (acc->nccl, 0);
  acc->worst = 0;
}

/* A simulated trace of one iteration (what `shardplan sim` writes: the
 * simulator is deterministic) stands for every measured iteration: its row
 * (op, 0, rank) is joined with (op, k, rank) for every k the measurement
 * has.  Replaces *sim by its rows and, for each measured row of an
 * iteration k > 0 whose (op, 0, rank) it holds, a copy of that row as
 * iteration k: at most sim + measured samples, whatever iteration numbers
 * the measured file claims (both arrays are sorted and free of duplicate
 * keys, read_samples). */
static void
spread_iterations (GArray **sim, const GArray *meas)
{
  gint32 max_sim = -1, max_meas = -1;
  for (guint i = 0; i < (*sim)->len; i++)
    max_sim = MAX (max_sim, g_array_index (*sim, Sample, i).iter);
  for (guint i = 0; i < meas->len; i++)
    max_meas = MAX (max_meas, g_array_index (meas, Sample, i).iter);
  if (max_sim != 0 || max_meas <= 0)
    return;
  guint n = (*sim)->len;
  GArray *out = g_array_sized_new (FALSE, FALSE, sizeof (Sample), n);
  g_array_append_vals (out, (*sim)->data, n);
  for (guint j = 0; j < meas->len; j++)
    {
      const Sample *m = &g_array_index (meas, Sample, j);
      if (m->iter <= 0)
        continue;
      Sample key = { .op_id = m->op_id, .iter = 0, .rank = m->rank };
      const Sample *s = bsearch (&key, (*sim)->data, n, sizeof (Sample), sample_cmp);
      if (s == NULL)
        continue;
      Sample x = *s;
      x.iter = m->iter;
      x.copy = 1;
      g_array_append_val (out, x);
    }
  qsort (out->data, out->len, sizeof (Sample), sample_cmp);
  g_array_unref (*sim);
  *sim = out;
}

static void
join (SpCompare *cmp, GArray *sim, GArray *meas, const SpPlan *plan, SpTrace *measured,
      Progress *progress)
{
  SpCompareCounts *c = &cmp->counts;
  OpAcc acc = { g_array_new (FALSE, FALSE, sizeof (double)),
                g_array_new (FALSE, FALSE, sizeof (double)),
                g_array_new (FALSE, FALSE, sizeof (double)), 0 };
  const Sample *cur = NULL;  /* measured sample of the op being accumulated */
  guint i = 0, j = 0;
  guint64 steps = 0;
  while (i < sim->len || j < meas->len)
    {
      if (++steps % READ_CHUNK == 0)
        progress_add (progress, READ_CHUNK);
      const Sample *s = i < sim->len ? &g_array_index (sim, Sample, i) : NULL;
      const Sample *m = j < meas->len ? &g_array_index (meas, Sample, j) : NULL;
      int order = s == NULL ? 1 : m == NULL ? -1 : sample_cmp (s, m);
      if (order < 0)
        {
          if (!s->copy) /* a simulated row counts once, not once per iteration */
            c->only_sim++;
          i++;
          continue;
        }
      if (order > 0)
        {
          c->only_measured++, j++;
          continue;
        }
      i++, j++;
      c->joined++;
      if (s->composite || m->composite)
        c->excluded_composite++;
      else if (s->status != SP_TRACE_STATUS_OK || m->status != SP_TRACE_STATUS_OK)
        c->excluded_status++;
      else if (s->one_rank || m->one_rank)
        c->excluded_one_rank++;
      else if (m->dur_ns <= 0)
        c->excluded_zero++;
      else
        {
          if (cur != NULL && cur->op_id != m->op_id)
            finish_op (cmp, cur, &acc, plan, measured);
          cur = m;
          double sv = (double) s->dur_ns, mv = (double) m->dur_ns;
          g_array_append_val (acc.sim, sv);
          g_array_append_val (acc.meas, mv);
          double e = (sv - mv) / mv;
          if (fabs (e) > fabs (acc.worst))
            acc.worst = e;
          c->samples++;
          if (m->nccl_est_ns >= 0)
            {
              double nv = (double) m->nccl_est_ns;
              g_array_append_val (acc.nccl, nv);
              c->nccl_samples++;
            }
        }
    }
  if (cur != NULL)
    finish_op (cmp, cur, &acc, plan, measured);
  g_array_unref (acc.sim);
  g_array_unref (acc.meas);
  g_array_unref (acc.nccl);
}

/* Statistics of the ops for which key(op) == value. */
static SpCompareStats
stats_of (const SpCompare *cmp, const char *label, gboolean (*member) (const SpCompareOp *, guint32),
          guint32 value)
{
  SpCompareStats st = { .label = label };
  g_autoptr (GArray) abs_err = g_array_new (FALSE, FALSE, sizeof (double));
  g_autoptr (GArray) signed_err = g_array_new (FALSE, FALSE, sizeof (double));
  /* NCCL's errors, and the simulator's on the same ops */
  g_autoptr (GArray) n_abs = g_array_new (FALSE, FALSE, sizeof (double));
  g_autoptr (GArray) n_signed = g_array_new (FALSE, FALSE, sizeof (double));
  g_autoptr (GArray) s_abs = g_array_new (FALSE, FALSE, sizeof (double));
  double worst = -1, n_worst = -1;
  for (guint i = 0; i < cmp->ops->len; i++)
    {
      const SpCompareOp *op = &g_array_index (cmp->ops, SpCompareOp, i);
      if (member && !member (op, value))
        continue;
      double a = fabs (op->error);
      g_array_append_val (abs_err, a);
      g_array_append_val (signed_err, op->error);
      if (a > worst)
        worst = a, st.worst_op_id = op->op_id;
      if (op->nccl_samples == 0)
        continue;
      double na = fabs (op->nccl_error);
      g_array_append_val (n_abs, na);
      g_array_append_val (n_signed, op->nccl_error);
      g_array_append_val (s_abs, a);
      if (na > n_worst)
        n_worst = na, st.nccl_worst_op_id = op->op_id;
    }
  st.nccl_n_ops = n_abs->len;
  st.nccl_worst_abs = n_abs->len ? n_worst : NAN;
  st.nccl_median_abs = quantile ((double *) (void *) n_abs->data, n_abs->len, 0.5);
  st.nccl_p90_abs = quantile ((double *) (void *) n_abs->data, n_abs->len, 0.9);
  st.nccl_median_signed = quantile ((double *) (void *) n_signed->data, n_signed->len, 0.5);
  st.sim_median_abs_nccl_ops = quantile ((double *) (void *) s_abs->data, s_abs->len, 0.5);
  st.n_ops = abs_err->len;
  st.worst_abs = worst;
  st.median_abs = quantile ((double *) (void *) abs_err->data, abs_err->len, 0.5);
  st.p90_abs = quantile ((double *) (void *) abs_err->data, abs_err->len, 0.9);
  st.median_signed = quantile ((double *) (void *) signed_err->data, signed_err->len,
                                          0.5);
  return st;
}

static gboolean
is_kind (const SpCompareOp *op, guint32 v)
{
  return (guint32) op->coll == v;
}

static gboolean
is_band (const SpCompareOp *op, guint32 v)
{
  return (guint32) op->band == v;
}

static gboolean
is_family (const SpCompareOp *op, guint32 v)
{
  return op->family_id == v;
}

static int
u32_cmp (const void *a, const void *b)
{
  guint32 x = *(const guint32 *) a, y = *(const guint32 *) b;
  return x < y ? -1 : x > y;
}

static void
compute_stats (SpCompare *cmp)
{
  SpCompareStats all = stats_of (cmp, "all", NULL, 0);
  g_array_append_val (cmp->stats[SP_COMPARE_BY_ALL], all);

  /* distinct kinds and families present, in value order (NO_GROUP = max: last) */
  g_autoptr (GArray) kinds = g_array_new (FALSE, FALSE, sizeof (guint32));
  g_autoptr (GArray) fams = g_array_new (FALSE, FALSE, sizeof (guint32));
  gboolean bands[SP_COMPARE_BAND_N] = { FALSE };
  g_autoptr (GHashTable) seen_k = g_hash_table_new (NULL, NULL);
  g_autoptr (GHashTable) seen_f = g_hash_table_new (NULL, NULL);
  for (guint i = 0; i < cmp->ops->len; i++)
    {
      const SpCompareOp *op = &g_array_index (cmp->ops, SpCompareOp, i);
      guint32 k = (guint32) op->coll, f = op->family_id;
      if (g_hash_table_add (seen_k, GUINT_TO_POINTER (k + 1)))
        g_array_append_val (kinds, k);
      if (g_hash_table_add (seen_f, GUINT_TO_POINTER ((gsize) f + 1)))
        g_array_append_val (fams, f);
      bands[op->band] = TRUE;
    }
  qsort (kinds->data, kinds->len, sizeof (guint32), u32_cmp);
  qsort (fams->data, fams->len, sizeof (guint32), u32_cmp);
  for (guint i = 0; i < kinds->len; i++)
    {
      guint32 k = g_array_index (kinds, guint32, i);
      const char *name = sp_coll_name ((SpColl) k);
      SpCompareStats st = stats_of (cmp, name ? name : "?", is_kind, k);
      g_array_append_val (cmp->stats[SP_COMPARE_BY_KIND], st);
    }
  for (guint b = 0; b < SP_COMPARE_BAND_N; b++)
    if (bands[b])
      {
        SpCompareStats st = stats_of (cmp, band_names[b], is_band, b);
        g_array_append_val (cmp->stats[SP_COMPARE_BY_SIZE], st);
      }
  for (guint i = 0; i < fams->len; i++)
    {
      guint32 f = g_array_index (fams, guint32, i);
      const char *label = "none";
      for (guint o = 0; o < cmp->ops->len; o++)
        if (g_array_index (cmp->ops, SpCompareOp, o).family_id == f)
          {
            label = g_array_index (cmp->ops, SpCompareOp, o).family;
            break;
          }
      SpCompareStats st = stats_of (cmp, label, is_family, f);
      g_array_append_val (cmp->stats[SP_COMPARE_BY_FAMILY], st);
    }
}

SpCompare *
sp_compare_traces (SpTrace *sim, const char *sim_name, SpTrace *measured,
                   const char *measured_name, GError **error)
{
  return sp_compare_traces_full (sim, sim_name, measured, measured_name, NULL, NULL, error);
}

SpCompare *
sp_compare_traces_full (SpTrace *sim, const char *sim_name, SpTrace *measured,
                        const char *measured_name, SpCompareProgressFn progress_fn,
                        gpointer progress_data, GError **error)
{
  g_return_val_if_fail (sim != NULL && measured != NULL, NULL);
  sim_name = sim_name ? sim_name : "simulated trace";
  measured_name = measured_name ? measured_name : "measured trace";
  /* Each trace says what it is: the reference, second, must be a measured
   * run (two measured runs compare run against run); a simulated one there
   * is a mistake worth naming, not a table of meaningless errors. */
  if (sp_trace_header (measured)->source == SP_TRACE_SOURCE_SIMULATED)
    {
      if (sp_trace_header (sim)->source == SP_TRACE_SOURCE_MEASURED)
        g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                     "%s is measured and %s is simulated: the arguments are swapped (the "
                     "simulated trace comes first, the measured one second: compare %s %s)",
                     sim_name, measured_name, measured_name, sim_name);
      else
        g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                     "%s and %s are both simulated: the second trace must be measured (by "
                     "shardplan run or trace import-nccl-tests)",
                     sim_name, measured_name);
      return NULL;
    }
  const char *ds = sp_trace_plan_digest (sim), *dm = sp_trace_plan_digest (measured);
  if (ds == NULL || dm == NULL)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "%s has no /meta/plan: cannot tell whether both traces ran the same plan",
                   ds == NULL ? sim_name : measured_name);
      return NULL;
    }
  if (strcmp (ds, dm) != 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "%s (plan %s) and %s (plan %s) ran different plans: compare traces of one plan",
                   sim_name, ds, measured_name, dm);
      return NULL;
    }
  /* reading both, then the join's steps: at most one a row read, so the
   * total starts at twice the rows (never 100 % before the join) and
   * shrinks to the join's real count once its arrays are known */
  guint64 n_rows = sp_trace_n_rows (sim) + sp_trace_n_rows (measured);
  Progress progress = { progress_fn, progress_data, 0,
                        n_rows > G_MAXUINT64 / 2 ? G_MAXUINT64 : 2 * n_rows };
  g_autoptr (GArray) s = read_samples (sim, sim_name, &progress, error);
  if (s == NULL)
    return NULL;
  g_autoptr (GArray) m = read_samples (measured, measured_name, &progress, error);
  if (m == NULL)
    return NULL;

  g_autoptr (SpCompare) cmp = g_new0 (SpCompare, 1);
  cmp->strings = g_string_chunk_new (4096);
  cmp->sim_name = g_strdup (sim_name);
  cmp->measured_name = g_strdup (measured_name);
  cmp->digest = g_strdup (ds);
  const SpTraceHeader *hs = sp_trace_header (sim), *hm = sp_trace_header (measured);
  cmp->sim_source = sp_trace_source_name (hs->source);
  cmp->measured_source = sp_trace_source_name (hm->source);
  cmp->sim_producer = g_strdup (hs->producer);
  cmp->measured_producer = g_strdup (hm->producer);
  cmp->ops = g_array_new (FALSE, FALSE, sizeof (SpCompareOp));
  for (guint b = 0; b < SP_COMPARE_BY_N; b++)
    cmp->stats[b] = g_array_new (FALSE, FALSE, sizeof (SpCompareStats));
  cmp->counts.sim_rows = s->len;
  cmp->counts.measured_rows = m->len;

  /* op names from the plan text; a plan this build cannot read only costs the names */
  g_autoptr (SpPlan) plan = NULL;
  const char *text = sp_trace_plan_text (measured);
  if (text != NULL)
    plan = sp_plan_from_json (text, -1, 0, NULL);

  spread_iterations (&s, m);
  progress.total = progress.done + s->len + m->len;
  join (cmp, s, m, plan, measured, &progress);
  progress_add (&progress, progress.total - MIN (progress.done, progress.total)); /* the rest */
  if (cmp->ops->len == 0)
    {
      const SpCompareCounts *c = &cmp->counts;
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "%s and %s have no row left to compare (%" G_GUINT64_FORMAT
                   " joined; excluded: %" G_GUINT64_FORMAT " by status, %" G_GUINT64_FORMAT
                   " composite, %" G_GUINT64_FORMAT " in groups of one rank, %" G_GUINT64_FORMAT
                   " zero measured duration)",
                   sim_name, measured_name, c->joined, c->excluded_status,
                   c->excluded_composite, c->excluded_one_rank, c->excluded_zero);
      return NULL;
    }
  compute_stats (cmp);
  return g_steal_pointer (&cmp);
}

void
sp_compare_free (SpCompare *cmp)
{
  if (cmp == NULL)
    return;
  g_free (cmp->sim_name);
  g_free (cmp->measured_name);
  g_free (cmp->digest);
  g_free (cmp->sim_producer);
  g_free (cmp->measured_producer);
  if (cmp->ops)
    g_array_unref (cmp->ops);
  for (guint b = 0; b < SP_COMPARE_BY_N; b++)
    if (cmp->stats[b])
      g_array_unref (cmp->stats[b]);
  if (cmp->strings)
    g_string_chunk_free (cmp->strings);
  g_free (cmp);
}

const SpCompareCounts *
sp_compare_counts (const SpCompare *cmp)
{
  return &cmp->counts;
}

const char *
sp_compare_plan_digest (const SpCompare *cmp)
{
  return cmp->digest;
}

const char *
sp_compare_sim_name (const SpCompare *cmp)
{
  return cmp->sim_name;
}

const char *
sp_compare_measured_name (const SpCompare *cmp)
{
  return cmp->measured_name;
}

gboolean
sp_compare_has_nccl (const SpCompare *cmp)
{
  return cmp->counts.nccl_samples > 0;
}

const SpCompareOp *
sp_compare_ops (const SpCompare *cmp, gsize *out_n)
{
  *out_n = cmp->ops->len;
  return (const SpCompareOp *) (void *) cmp->ops->data;
}

const SpCompareStats *
sp_compare_stats (const SpCompare *cmp, SpCompareBy by, gsize *out_n)
{
  g_return_val_if_fail ((guint) by < SP_COMPARE_BY_N, NULL);
  *out_n = cmp->stats[by]->len;
  return (const SpCompareStats *) (void *) cmp->stats[by]->data;
}

static int
worst_cmp (const void *a, const void *b)
{
  const SpCompareOp *x = *(const SpCompareOp *const *) a, *y = *(const SpCompareOp *const *) b;
  double ex = fabs (x->error), ey = fabs (y->error);
  if (ex != ey)
    return ex > ey ? -1 : 1;
  return x->op_id < y->op_id ? -1 : x->op_id > y->op_id;
}

const SpCompareOp **
sp_compare_worst (const SpCompare *cmp, gsize n, gsize *out_n)
{
  gsize total = cmp->ops->len;
  const SpCompareOp **all = g_new (const SpCompareOp *, total + 1);
  for (gsize i = 0; i < total; i++)
    all[i] = &g_array_index (cmp->ops, SpCompareOp, i);
  qsort (all, total, sizeof (*all), worst_cmp);
  *out_n = MIN (n, total);
  all[*out_n] = NULL;
  return all;
}
