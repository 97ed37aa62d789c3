/* The simulated/measured join on hand-made traces whose durations differ by
 * known factors per op, so every statistic has a hand-computed value:
 *
 *   op  kind            family     bytes    sim/measured  error
 *   0   all_gather      shard      8 MiB    1.10          +0.10
 *   1   reduce_scatter  shard      8 MiB    0.80          -0.20
 *   2   all_reduce      replicate  2 MiB    1.50          +0.50
 *   3   all_gather      shard      32 KiB   1.00           0
 *   4   all_reduce      world      128 MiB  0.95          -0.05
 *   5   compute         none       0 B      1.30          +0.30
 *
 * |error| sorted: 0, .05, .10, .20, .30, .50 → median (.10+.20)/2 = .15;
 * p90 at position .9·5 = 4.5 → .30 + .5·(.50−.30) = .40; worst .50 (op 2).
 * Signed sorted: −.20, −.05, 0, .10, .30, .50 → bias (0+.10)/2 = .05.
 * Measured durations vary by rank and iteration (100 µs + 1 µs·rank +
 * 10 µs·iter); the simulated ones are the same times the factor, so each
 * op's error is exactly its factor − 1 whichever samples are left out.
 *
 * NCCL's own estimate (TRACE_MEASURED_NCCL): the measured rows also carry
 * nccl_est_ns, one value per op as NCCL gives it, against the op's measured
 * median M (the samples left out below make M 108.5 µs for ops 0 and 5 and
 * 107 µs for ops 1-4: the 8th of 15 values 100..107, 110..117 less one):
 *
 *   op  nccl_est_ns          NCCL error       simulator's error
 *   0   130200 = 1.2·108500  +0.20            +0.10
 *   1    53500 = 0.5·107000  −0.50            −0.20
 *   2   107000               0                +0.50
 *   3    21400 = 0.2·107000  −0.80 (ranks 0-3 only: 7 samples)   0
 *   4   117700 = 1.1·107000  +0.10            −0.05
 *   5   −1 (compute)         none             +0.30
 *
 * NCCL |error| sorted 0, .1, .2, .5, .8: median .2, p90 at 3.6 → .5 + .6·.3
 * = .68, worst .8 (op 3); signed −.8 −.5 0 .1 .2: bias 0; the simulator's
 * |error| on those five ops 0 .05 .1 .2 .5: median .1.  nccl_samples = 16 +
 * 15 + 15 + 7 + 15 = 68. */
#include "config.h"
#include "testutil.h"
#include "trace-sample.h"
#include "shardplan/shardplan.h"
#include "shardplan/compare.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#define WORLD 8
#define ITERS 2
#define N_OPS 6

static const struct {
  const char *name;
  SpColl kind;
  SpFamily family;
  guint64 bytes;
  SpRedop redop;
  guint num, den;   /* sim = measured × num / den */
} ops[N_OPS] = {
  { "L0.fwd.allgather", SP_COLL_ALL_GATHER, SP_FAMILY_SHARD, 8u << 20, SP_REDOP_NONE, 11, 10 },
  { "L0.bwd.reduce_scatter", SP_COLL_REDUCE_SCATTER, SP_FAMILY_SHARD, 8u << 20, SP_REDOP_SUM, 8, 10 },
  { "step.allreduce", SP_COLL_ALL_REDUCE, SP_FAMILY_REPLICATE, 2u << 20, SP_REDOP_SUM, 15, 10 },
  { "small,\"quoted\" gather", SP_COLL_ALL_GATHER, SP_FAMILY_SHARD, 32u << 10, SP_REDOP_NONE, 1, 1 },
  { "world.allreduce", SP_COLL_ALL_REDUCE, SP_FAMILY_WORLD, 128u << 20, SP_REDOP_SUM, 95, 100 },
  { "L0.fwd.compute", SP_COLL_COMPUTE, SP_FAMILY_NONE, 0, SP_REDOP_NONE, 13, 10 },
};

static SpGroups *
make_groups (void)
{
  SpGroupsOptions opts;
  sp_groups_options_init (&opts);
  opts.world_size = WORLD;
  opts.devices_per_node = 4;
  opts.shard_size = 4;
  g_autoptr (GError) error = NULL;
  SpGroups *g = sp_groups_build (&opts, &error);
  SP_ASSERT_NO_ERROR (error);
  return g;
}

static SpPlan *
make_plan (const SpGroups *groups, const char *model)
{
  SpPlan *plan = sp_plan_new (sp_groups_options (groups));
  for (guint i = 0; i < N_OPS; i++)
    {
      gboolean kernel = ops[i].kind == SP_COLL_COMPUTE;
      SpOp op = { .parent = -1, .name = ops[i].name, .layer = -1, .kind = ops[i].kind,
                  .family = ops[i].family, .bytes = ops[i].bytes, .count = ops[i].bytes / 2,
                  .dtype = kernel ? SP_DTYPE_NONE : SP_DTYPE_BFLOAT16, .redop = ops[i].redop,
                  .algorithm = SP_ALGO_AUTO, .flops = kernel ? 1000 : 0 };
      g_autoptr (GError) error = NULL;
      ck_assert (sp_plan_add_op (plan, &op, NULL, &error));
    }
  sp_plan_set_meta (plan, "model", model);
  return plan;
}

typedef enum {
  TRACE_MEASURED,
  TRACE_SIM,
  TRACE_SIM_DUPLICATE,   /* one key twice */
  TRACE_SIM_ONE_ITER,    /* iteration 0 only, as `shardplan sim` writes */
  TRACE_MEASURED_NCCL,   /* measured, with NCCL's estimates (table above) */
  TRACE_MEASURED_FAR,    /* measured, plus op 0 of rank 0 at iteration G_MAXINT32 */
  TRACE_MEASURED_ONE_RANK, /* measured, one row of op 4 on a group of one rank */
} TraceKind;

/* nccl_est_ns of op o on rank r (the table above). */
static gint64
nccl_estimate (guint32 o, guint32 r)
{
  static const gint64 est[N_OPS] = { 130200, 53500, 107000, 21400, 117700, -1 };
  if (o == 3 && r >= 4)
    return -1;
  return est[o];
}

static char *
write_trace (const char *dir, const char *file, TraceKind kind, const char *model,
             gboolean with_plan)
{
  g_autoptr (SpGroups) groups = make_groups ();
  g_autoptr (SpPlan) plan = make_plan (groups, model);
  g_autoptr (GError) error = NULL;
  char *path = g_build_filename (dir, file, NULL);
  gboolean sim = kind == TRACE_SIM || kind == TRACE_SIM_DUPLICATE || kind == TRACE_SIM_ONE_ITER;
  gint32 iters = kind == TRACE_SIM_ONE_ITER ? 1 : ITERS;
  SpTraceHeader h = { .source = sim ? SP_TRACE_SOURCE_SIMULATED : SP_TRACE_SOURCE_MEASURED,
                      .producer = sim ? "test sim" : "test run", .producer_version = "0",
                      .clock = "test", .timing_mode = "test", .iters = (guint32) iters,
                      .world_size = WORLD };
  g_autoptr (SpTraceWriter) w = sp_trace_writer_new (path, &h, &error);
  SP_ASSERT_NO_ERROR (error);
  if (with_plan)
    ck_assert (sp_trace_writer_set_plan (w, plan, NULL, &error));
  ck_assert (sp_trace_writer_set_groups (w, groups, &error));
  for (gint32 iter = 0; iter < iters; iter++)
    for (guint32 o = 0; o < N_OPS; o++)
      for (guint32 r = 0; r < WORLD; r++)
        {
          const SpOp *op = sp_plan_op (plan, o);
          SpTraceRow row;
          gint64 measured = 100000 + 1000 * (gint64) r + 10000 * iter;
          sp_sample_op_row (&row, groups, o, op, r, iter,
                            sim ? measured * ops[o].num / ops[o].den : measured);
          if (kind == TRACE_MEASURED_NCCL)
            row.nccl_est_ns = nccl_estimate (o, r);
          if (!sim && o == 1 && iter == 1 && r == 3)
            row.status = SP_TRACE_STATUS_WRONG;            /* excluded_status */
          if (!sim && o == 4 && iter == 1 && r == 0)
            row.dur_ns = 0;                                /* excluded_zero */
          if (!sim && o == 3 && iter == 1 && r == 2)
            row.flags |= SP_TRACE_FLAG_COMPOSITE;          /* excluded_composite */
          if (kind == TRACE_MEASURED_ONE_RANK && o == 4 && iter == 1 && r == 6)
            row.group_size = 1;                            /* excluded_one_rank */
          if (sim && o == 2 && iter == 1 && r == 7)
            continue;                                      /* only_measured */
          ck_assert (sp_trace_writer_append (w, &row, 1, &error));
          if (kind == TRACE_SIM_DUPLICATE && o == 0 && iter == 0 && r == 5)
            ck_assert (sp_trace_writer_append (w, &row, 1, &error));
        }
  if (kind == TRACE_MEASURED_FAR)
    {
      SpTraceRow far;
      sp_sample_op_row (&far, groups, 0, sp_plan_op (plan, 0), 0, G_MAXINT32, 100000);
      ck_assert (sp_trace_writer_append (w, &far, 1, &error));
    }
  if (sim && kind != TRACE_SIM_ONE_ITER)
    {
      SpTraceRow extra;                                    /* only_sim */
      sp_trace_row_init (&extra);
      extra.op_id = 3;
      extra.iter = 5;
      extra.status = SP_TRACE_STATUS_OK;
      extra.dur_ns = 5;
      ck_assert (sp_trace_writer_append (w, &extra, 1, &error));
    }
  ck_assert_msg (sp_trace_writer_finish (w, &error), "%s", error ? error->message : "");
  return path;
}

typedef struct {
  char *dir, *sim, *measured;
  SpTrace *ts, *tm;
} Fixture;

static void
fixture_open (Fixture *f)
{
  f->dir = sp_test_tmpdir ();
  f->sim = write_trace (f->dir, "sim.h5", TRACE_SIM, "m", TRUE);
  f->measured = write_trace (f->dir, "measured.h5", TRACE_MEASURED, "m", TRUE);
  g_autoptr (GError) error = NULL;
  f->ts = sp_trace_open (f->sim, &error);
  SP_ASSERT_NO_ERROR (error);
  f->tm = sp_trace_open (f->measured, &error);
  SP_ASSERT_NO_ERROR (error);
}

static void
fixture_close (Fixture *f)
{
  sp_trace_free (f->ts);
  sp_trace_free (f->tm);
  ck_assert (sp_test_rmtree (f->dir));
  g_free (f->sim);
  g_free (f->measured);
  g_free (f->dir);
}

#define TOL 1e-12

static void
assert_stats (const SpCompareStats *st, const char *label, guint n, double median, double p90,
              double worst, guint worst_op, double bias)
{
  ck_assert_str_eq (st->label, label);
  ck_assert_uint_eq (st->n_ops, n);
  ck_assert_double_eq_tol (st->median_abs, median, TOL);
  ck_assert_double_eq_tol (st->p90_abs, p90, TOL);
  ck_assert_double_eq_tol (st->worst_abs, worst, TOL);
  ck_assert_uint_eq (st->worst_op_id, worst_op);
  ck_assert_double_eq_tol (st->median_signed, bias, TOL);
}

START_TEST (test_join_stats)
{
  Fixture f;
  fixture_open (&f);
  g_autoptr (GError) error = NULL;
  g_autoptr (SpCompare) cmp = sp_compare_traces (f.ts, "sim.h5", f.tm, "measured.h5", &error);
  SP_ASSERT_NO_ERROR (error);

  const SpCompareCounts *c = sp_compare_counts (cmp);
  ck_assert_uint_eq (c->measured_rows, 96);
  ck_assert_uint_eq (c->sim_rows, 96);          /* 96 − 1 missing + 1 extra */
  ck_assert_uint_eq (c->joined, 95);
  ck_assert_uint_eq (c->only_sim, 1);
  ck_assert_uint_eq (c->only_measured, 1);
  ck_assert_uint_eq (c->excluded_status, 1);
  ck_assert_uint_eq (c->excluded_zero, 1);
  ck_assert_uint_eq (c->excluded_composite, 1);
  ck_assert_uint_eq (c->excluded_one_rank, 0);
  ck_assert_uint_eq (c->samples, 92);

  gsize n = 0;
  const SpCompareOp *o = sp_compare_ops (cmp, &n);
  ck_assert_uint_eq (n, N_OPS);
  static const double want_err[N_OPS] = { 0.10, -0.20, 0.50, 0.0, -0.05, 0.30 };
  static const guint want_samples[N_OPS] = { 16, 15, 15, 15, 15, 16 };
  for (guint i = 0; i < N_OPS; i++)
    {
      ck_assert_uint_eq (o[i].op_id, i);
      ck_assert_double_eq_tol (o[i].error, want_err[i], TOL);
      ck_assert_uint_eq (o[i].n_samples, want_samples[i]);
    }
  ck_assert_str_eq (o[2].name, "step.allreduce");
  ck_assert_str_eq (o[2].family, "replicate");
  ck_assert_str_eq (o[5].family, "none");
  ck_assert_int_eq (o[5].band, SP_COMPARE_BAND_ZERO);
  /* op 0: measured 100..107 µs (iter 0) and 110..117 µs (iter 1): median 108.5 µs */
  ck_assert_double_eq_tol (o[0].measured_ns, 108500, TOL);
  ck_assert_double_eq_tol (o[0].sim_ns, 119350, 1e-6);

  const SpCompareStats *st = sp_compare_stats (cmp, SP_COMPARE_BY_ALL, &n);
  ck_assert_uint_eq (n, 1);
  assert_stats (&st[0], "all", 6, 0.15, 0.40, 0.50, 2, 0.05);

  st = sp_compare_stats (cmp, SP_COMPARE_BY_KIND, &n);
  ck_assert_uint_eq (n, 4);
  assert_stats (&st[0], "all_reduce", 2, 0.275, 0.05 + 0.9 * 0.45, 0.50, 2, 0.225);
  assert_stats (&st[1], "all_gather", 2, 0.05, 0.09, 0.10, 0, 0.05);
  assert_stats (&st[2], "reduce_scatter", 1, 0.20, 0.20, 0.20, 1, -0.20);
  assert_stats (&st[3], "compute", 1, 0.30, 0.30, 0.30, 5, 0.30);

  st = sp_compare_stats (cmp, SP_COMPARE_BY_SIZE, &n);
  ck_assert_uint_eq (n, 4);
  assert_stats (&st[0], "0 B", 1, 0.30, 0.30, 0.30, 5, 0.30);
  assert_stats (&st[1], "<64 KiB", 1, 0.0, 0.0, 0.0, 3, 0.0);
  /* .10 .20 .50: p90 at 1.8 → .20 + .8·.30 */
  assert_stats (&st[2], "1-64 MiB", 3, 0.20, 0.44, 0.50, 2, 0.10);
  assert_stats (&st[3], ">=64 MiB", 1, 0.05, 0.05, 0.05, 4, -0.05);

  st = sp_compare_stats (cmp, SP_COMPARE_BY_FAMILY, &n);
  ck_assert_uint_eq (n, 4);
  assert_stats (&st[0], "shard", 3, 0.10, 0.18, 0.20, 1, 0.0);
  assert_stats (&st[1], "replicate", 1, 0.50, 0.50, 0.50, 2, 0.50);
  assert_stats (&st[2], "world", 1, 0.05, 0.05, 0.05, 4, -0.05);
  assert_stats (&st[3], "none", 1, 0.30, 0.30, 0.30, 5, 0.30);

  gsize nw = 0;
  g_autofree const SpCompareOp **worst = sp_compare_worst (cmp, 3, &nw);
  ck_assert_uint_eq (nw, 3);
  ck_assert_uint_eq (worst[0]->op_id, 2);
  ck_assert_uint_eq (worst[1]->op_id, 5);
  ck_assert_uint_eq (worst[2]->op_id, 1);
  g_autofree const SpCompareOp **all = sp_compare_worst (cmp, 100, &nw);
  ck_assert_uint_eq (nw, 6);
  ck_assert_uint_eq (all[5]->op_id, 3);
  fixture_close (&f);
}
END_TEST

/* One simulated iteration joins every measured iteration: the 48 simulated
 * rows (dur = (100 µs + 1 µs·rank) × factor) stand for both measured
 * iterations, so all 96 measured keys join and 93 are samples (the three
 * excluded rows above).  Op 0: simulated 1.1 × 100..107 µs, each value
 * twice → median 1.1 × 103.5 = 113.85 µs; measured median 108.5 µs. */
START_TEST (test_one_sim_iteration)
{
  g_autoptr (SpTestDir) dir = sp_test_tmpdir ();
  g_autofree char *sim = write_trace (dir, "sim1.h5", TRACE_SIM_ONE_ITER, "m", TRUE);
  g_autofree char *meas = write_trace (dir, "measured.h5", TRACE_MEASURED, "m", TRUE);
  g_autoptr (GError) error = NULL;
  g_autoptr (SpTrace) ts = sp_trace_open (sim, &error);
  SP_ASSERT_NO_ERROR (error);
  g_autoptr (SpTrace) tm = sp_trace_open (meas, &error);
  SP_ASSERT_NO_ERROR (error);
  g_autoptr (SpCompare) cmp = sp_compare_traces (ts, "sim1.h5", tm, "measured.h5", &error);
  SP_ASSERT_NO_ERROR (error);
  const SpCompareCounts *c = sp_compare_counts (cmp);
  ck_assert_uint_eq (c->sim_rows, 48);
  ck_assert_uint_eq (c->measured_rows, 96);
  ck_assert_uint_eq (c->joined, 96);
  ck_assert_uint_eq (c->only_sim, 0);
  ck_assert_uint_eq (c->only_measured, 0);
  ck_assert_uint_eq (c->samples, 93);
  gsize n = 0;
  const SpCompareOp *o = sp_compare_ops (cmp, &n);
  ck_assert_uint_eq (n, N_OPS);
  ck_assert_uint_eq (o[0].n_samples, 16);
  ck_assert_double_eq_tol (o[0].sim_ns, 113850, 1e-6);
  ck_assert_double_eq_tol (o[0].measured_ns, 108500, TOL);
  ck_assert_double_eq_tol (o[0].error, 113850.0 / 108500.0 - 1, 1e-12);

  /* A measured row that claims iteration 2^31 − 1 joins its one simulated
   * row, and costs one sample, not a copy of the simulated trace for every
   * iteration up to it (2^31 × 48 rows: an abort on allocation). */
  g_autofree char *far = write_trace (dir, "far.h5", TRACE_MEASURED_FAR, "m", TRUE);
  g_autoptr (SpTrace) tf = sp_trace_open (far, &error);
  SP_ASSERT_NO_ERROR (error);
  g_autoptr (SpCompare) cf = sp_compare_traces (ts, "sim1.h5", tf, "far.h5", &error);
  SP_ASSERT_NO_ERROR (error);
  c = sp_compare_counts (cf);
  ck_assert_uint_eq (c->measured_rows, 97);
  ck_assert_uint_eq (c->joined, 97);
  ck_assert_uint_eq (c->only_sim, 0);
  ck_assert_uint_eq (c->only_measured, 0);
  ck_assert_uint_eq (c->samples, 94);
  o = sp_compare_ops (cf, &n);
  ck_assert_uint_eq (o[0].n_samples, 17);
}
END_TEST

START_TEST (test_refusals)
{
  g_autoptr (SpTestDir) dir = sp_test_tmpdir ();
  g_autofree char *a = write_trace (dir, "a.h5", TRACE_SIM, "model-a", TRUE);
  g_autofree char *b = write_trace (dir, "b.h5", TRACE_MEASURED, "model-b", TRUE);
  g_autofree char *noplan = write_trace (dir, "noplan.h5", TRACE_MEASURED, "model-a", FALSE);
  g_autofree char *dup = write_trace (dir, "dup.h5", TRACE_SIM_DUPLICATE, "model-b", TRUE);
  g_autoptr (GError) error = NULL;
  g_autoptr (SpTrace) ta = sp_trace_open (a, &error);
  g_autoptr (SpTrace) tb = sp_trace_open (b, &error);
  g_autoptr (SpTrace) tn = sp_trace_open (noplan, &error);
  g_autoptr (SpTrace) td = sp_trace_open (dup, &error);
  SP_ASSERT_NO_ERROR (error);

  ck_assert_ptr_null (sp_compare_traces (ta, "a.h5", tb, "b.h5", &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_ARGUMENT);
  g_autofree char *want = g_strdup_printf ("a.h5 (plan %s) and b.h5 (plan %s) ran different plans",
                                           sp_trace_plan_digest (ta), sp_trace_plan_digest (tb));
  ck_assert_msg (g_str_has_prefix (error->message, want), "%s", error->message);
  g_clear_error (&error);

  ck_assert_ptr_null (sp_compare_traces (ta, "a.h5", tn, "noplan.h5", &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_ARGUMENT);
  ck_assert_msg (g_str_has_prefix (error->message, "noplan.h5 has no /meta/plan"), "%s",
                 error->message);
  g_clear_error (&error);

  ck_assert_ptr_null (sp_compare_traces (td, "dup.h5", tb, "b.h5", &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TRACE);
  ck_assert_str_eq (error->message, "dup.h5: two rows for op 0, iter 0, rank 5");
  g_clear_error (&error);

  /* the second trace must be measured: swapped, or both simulated */
  ck_assert_ptr_null (sp_compare_traces (tb, "b.h5", ta, "a.h5", &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_ARGUMENT);
  ck_assert_msg (g_str_has_prefix (error->message, "b.h5 is measured and a.h5 is simulated: the "
                                                   "arguments are swapped"), "%s", error->message);
  ck_assert_msg (strstr (error->message, "compare a.h5 b.h5") != NULL, "%s", error->message);
  g_clear_error (&error);
  ck_assert_ptr_null (sp_compare_traces (ta, "a.h5", ta, "a.h5", &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_ARGUMENT);
  ck_assert_msg (g_str_has_prefix (error->message, "a.h5 and a.h5 are both simulated"), "%s",
                 error->message);
  g_clear_error (&error);

  /* one measured trace against itself: every error 0 */
  g_autoptr (SpCompare) self = sp_compare_traces (tb, "b.h5", tb, "b.h5", &error);
  SP_ASSERT_NO_ERROR (error);
  gsize n = 0;
  const SpCompareStats *st = sp_compare_stats (self, SP_COMPARE_BY_ALL, &n);
  ck_assert_double_eq (st[0].worst_abs, 0.0);
}
END_TEST

START_TEST (test_formats)
{
  Fixture f;
  fixture_open (&f);
  g_autoptr (GError) error = NULL;
  g_autoptr (SpCompare) cmp = sp_compare_traces (f.ts, "sim.h5", f.tm, "measured.h5", &error);
  SP_ASSERT_NO_ERROR (error);

  g_autofree char *csv = sp_compare_to_csv (cmp);
  g_auto (GStrv) lines = g_strsplit (csv, "\n", -1);
  ck_assert_uint_eq (g_strv_length (lines), N_OPS + 2); /* header, 6 ops, "" after the last \n */
  ck_assert_str_eq (lines[0], "op_id,name,kind,family,bytes,size_band,samples,measured_ns,sim_ns,error");
  ck_assert_str_eq (lines[N_OPS + 1], "");
  g_auto (GStrv) f2 = g_strsplit (lines[3], ",", -1);
  ck_assert_uint_eq (g_strv_length (f2), 10);
  ck_assert_str_eq (f2[0], "2");
  ck_assert_str_eq (f2[1], "step.allreduce");
  ck_assert_str_eq (f2[2], "all_reduce");
  ck_assert_str_eq (f2[3], "replicate");
  ck_assert_str_eq (f2[4], "2097152");
  ck_assert_str_eq (f2[5], "1-64 MiB");
  ck_assert_str_eq (f2[6], "15");
  ck_assert_double_eq_tol (g_ascii_strtod (f2[9], NULL), 0.5, TOL);
  /* RFC 4180 quoting of a name with a comma and quotes */
  ck_assert (g_str_has_prefix (lines[4], "3,\"small,\"\"quoted\"\" gather\",all_gather,shard,"));

  g_autofree char *json = sp_compare_to_json (cmp, 2);
  g_autoptr (JsonParser) parser = json_parser_new ();
  ck_assert_msg (json_parser_load_from_data (parser, json, -1, &error), "%s",
                 error ? error->message : "");
  JsonObject *root = json_node_get_object (json_parser_get_root (parser));
  ck_assert_str_eq (json_object_get_string_member (json_object_get_object_member (root, "sim"),
                                                   "source"), "simulated");
  ck_assert_str_eq (json_object_get_string_member (json_object_get_object_member (root, "measured"),
                                                   "file"), "measured.h5");
  ck_assert_str_eq (json_object_get_string_member (root, "plan_digest"),
                    sp_trace_plan_digest (f.tm));
  JsonObject *counts = json_object_get_object_member (root, "counts");
  ck_assert_int_eq (json_object_get_int_member (counts, "samples"), 92);
  ck_assert_int_eq (json_object_get_int_member (counts, "only_sim"), 1);
  JsonObject *stats = json_object_get_object_member (root, "stats");
  JsonObject *all = json_object_get_object_member (stats, "all");
  ck_assert_double_eq_tol (json_object_get_double_member (all, "median_abs_error"), 0.15, TOL);
  ck_assert_double_eq_tol (json_object_get_double_member (all, "p90_abs_error"), 0.40, TOL);
  ck_assert_int_eq (json_object_get_int_member (all, "worst_op_id"), 2);
  JsonArray *fam = json_object_get_array_member (stats, "family");
  ck_assert_uint_eq (json_array_get_length (fam), 4);
  ck_assert_str_eq (json_object_get_string_member (json_array_get_object_element (fam, 0), "label"),
                    "shard");
  ck_assert_uint_eq (json_array_get_length (json_object_get_array_member (stats, "size")), 4);
  JsonArray *worst = json_object_get_array_member (root, "worst");
  ck_assert_uint_eq (json_array_get_length (worst), 2);
  JsonObject *w0 = json_array_get_object_element (worst, 0);
  ck_assert_int_eq (json_object_get_int_member (w0, "op_id"), 2);
  ck_assert_double_eq_tol (json_object_get_double_member (w0, "error"), 0.5, TOL);
  ck_assert_str_eq (json_object_get_string_member (w0, "size_band"), "1-64 MiB");
  ck_assert_uint_eq (json_array_get_length (json_object_get_array_member (root, "ops")), N_OPS);
  fixture_close (&f);
}
END_TEST

static void
assert_nccl_stats (const SpCompareStats *st, const char *label, guint n, double median,
                   double p90, double worst, guint worst_op, double bias, double sim_median)
{
  ck_assert_str_eq (st->label, label);
  ck_assert_uint_eq (st->nccl_n_ops, n);
  ck_assert_double_eq_tol (st->nccl_median_abs, median, TOL);
  ck_assert_double_eq_tol (st->nccl_p90_abs, p90, TOL);
  ck_assert_double_eq_tol (st->nccl_worst_abs, worst, TOL);
  ck_assert_uint_eq (st->nccl_worst_op_id, worst_op);
  ck_assert_double_eq_tol (st->nccl_median_signed, bias, TOL);
  ck_assert_double_eq_tol (st->sim_median_abs_nccl_ops, sim_median, TOL);
}

/* The simulated trace (TRACE_SIM, "sim.h5") and a measured one of `kind`
 * named `file`, written into `dir` and compared. */
static SpCompare *
compare_with_sim (const char *dir, const char *file, TraceKind kind)
{
  g_autofree char *sim = write_trace (dir, "sim.h5", TRACE_SIM, "m", TRUE);
  g_autofree char *meas = write_trace (dir, file, kind, "m", TRUE);
  g_autoptr (GError) error = NULL;
  g_autoptr (SpTrace) ts = sp_trace_open (sim, &error);
  SP_ASSERT_NO_ERROR (error);
  g_autoptr (SpTrace) tm = sp_trace_open (meas, &error);
  SP_ASSERT_NO_ERROR (error);
  SpCompare *cmp = sp_compare_traces (ts, "sim.h5", tm, file, &error);
  SP_ASSERT_NO_ERROR (error);
  return cmp;
}

/* A collective on a group of one rank (in either trace) is left out and
 * counted: the simulator gives it no time (nothing crosses a link), so its
 * error would be -100 % whatever the executor measured. */
START_TEST (test_one_rank_left_out)
{
  g_autoptr (SpTestDir) dir = sp_test_tmpdir ();
  g_autoptr (SpCompare) cmp = compare_with_sim (dir, "one.h5", TRACE_MEASURED_ONE_RANK);
  const SpCompareCounts *c = sp_compare_counts (cmp);
  ck_assert_uint_eq (c->joined, 95);
  ck_assert_uint_eq (c->excluded_one_rank, 1);
  ck_assert_uint_eq (c->samples, 91);
  gsize n = 0;
  const SpCompareOp *o = sp_compare_ops (cmp, &n);
  ck_assert_uint_eq (n, N_OPS);
  ck_assert_uint_eq (o[4].n_samples, 14);
  ck_assert_double_eq_tol (o[4].error, -0.05, TOL);
  g_autofree char *json = sp_compare_to_json (cmp, 2);
  g_autoptr (JsonParser) parser = json_parser_new ();
  ck_assert (json_parser_load_from_data (parser, json, -1, NULL));
  JsonObject *counts = json_object_get_object_member (
    json_node_get_object (json_parser_get_root (parser)), "counts");
  ck_assert_int_eq (json_object_get_int_member (counts, "excluded_one_rank"), 1);
}
END_TEST

START_TEST (test_nccl_estimate)
{
  g_autoptr (SpTestDir) dir = sp_test_tmpdir ();
  g_autoptr (SpCompare) cmp = compare_with_sim (dir, "measured-nccl.h5", TRACE_MEASURED_NCCL);
  ck_assert (sp_compare_has_nccl (cmp));
  const SpCompareCounts *c = sp_compare_counts (cmp);
  ck_assert_uint_eq (c->samples, 92);
  ck_assert_uint_eq (c->nccl_samples, 68);

  gsize n = 0;
  const SpCompareOp *o = sp_compare_ops (cmp, &n);
  ck_assert_uint_eq (n, N_OPS);
  static const double want_err[N_OPS] = { 0.10, -0.20, 0.50, 0.0, -0.05, 0.30 };
  static const double want_nccl[N_OPS] = { 0.20, -0.50, 0.0, -0.80, 0.10, 0 };
  static const double want_ns[N_OPS] = { 130200, 53500, 107000, 21400, 117700, 0 };
  static const guint want_nccl_samples[N_OPS] = { 16, 15, 15, 7, 15, 0 };
  for (guint i = 0; i < N_OPS; i++)
    {
      /* the simulator's errors are the same as without the estimate */
      ck_assert_double_eq_tol (o[i].error, want_err[i], TOL);
      ck_assert_uint_eq (o[i].nccl_samples, want_nccl_samples[i]);
      if (i == 5)
        {
          ck_assert (isnan (o[i].nccl_ns) && isnan (o[i].nccl_error));
          continue;
        }
      ck_assert_double_eq_tol (o[i].nccl_ns, want_ns[i], TOL);
      ck_assert_double_eq_tol (o[i].nccl_error, want_nccl[i], TOL);
    }
  ck_assert_double_eq_tol (o[0].measured_ns, 108500, TOL);
  ck_assert_double_eq_tol (o[1].measured_ns, 107000, TOL);

  const SpCompareStats *st = sp_compare_stats (cmp, SP_COMPARE_BY_ALL, &n);
  assert_stats (&st[0], "all", 6, 0.15, 0.40, 0.50, 2, 0.05);  /* unchanged */
  assert_nccl_stats (&st[0], "all", 5, 0.20, 0.68, 0.80, 3, 0.0, 0.10);

  st = sp_compare_stats (cmp, SP_COMPARE_BY_KIND, &n);
  ck_assert_uint_eq (n, 4);
  /* all_reduce: ops 2, 4: |.0|, |.1|; the simulator's .5, .05 */
  assert_nccl_stats (&st[0], "all_reduce", 2, 0.05, 0.09, 0.10, 4, 0.05, 0.275);
  /* all_gather: ops 0, 3: +.2, −.8; the simulator's .1, 0 */
  assert_nccl_stats (&st[1], "all_gather", 2, 0.50, 0.2 + 0.9 * 0.6, 0.80, 3, -0.30, 0.05);
  assert_nccl_stats (&st[2], "reduce_scatter", 1, 0.50, 0.50, 0.50, 1, -0.50, 0.20);
  /* compute: no estimate */
  ck_assert_str_eq (st[3].label, "compute");
  ck_assert_uint_eq (st[3].nccl_n_ops, 0);
  ck_assert (isnan (st[3].nccl_median_abs) && isnan (st[3].sim_median_abs_nccl_ops));

  st = sp_compare_stats (cmp, SP_COMPARE_BY_FAMILY, &n);
  /* shard: ops 0, 1, 3: |.2| |.5| |.8|, signed .2 −.5 −.8; the simulator's .1 .2 0 */
  assert_nccl_stats (&st[0], "shard", 3, 0.50, 0.5 + 0.8 * 0.3, 0.80, 3, -0.50, 0.10);

  /* CSV: three more columns, empty for op 5 */
  g_autofree char *csv = sp_compare_to_csv (cmp);
  g_auto (GStrv) lines = g_strsplit (csv, "\n", -1);
  ck_assert_str_eq (lines[0], "op_id,name,kind,family,bytes,size_band,samples,measured_ns,sim_ns,"
                              "error,nccl_samples,nccl_ns,nccl_error");
  g_auto (GStrv) f0 = g_strsplit (lines[1], ",", -1);
  ck_assert_uint_eq (g_strv_length (f0), 13);
  ck_assert_str_eq (f0[10], "16");
  ck_assert_str_eq (f0[11], "130200");
  ck_assert_double_eq_tol (g_ascii_strtod (f0[12], NULL), 0.2, TOL);
  ck_assert (g_str_has_suffix (lines[6], ",0,,"));
  g_auto (GStrv) f4 = g_strsplit (lines[4], ",", -1); /* op 3: a quoted name with a comma */
  ck_assert_uint_eq (g_strv_length (f4), 14);
  ck_assert_str_eq (f4[11], "7");
  ck_assert_str_eq (f4[12], "21400");
  ck_assert_double_eq_tol (g_ascii_strtod (f4[13], NULL), -0.8, TOL);

  /* JSON: nccl members in counts, stats and ops; null where there is none */
  g_autoptr (GError) error = NULL;
  g_autofree char *json = sp_compare_to_json (cmp, 1);
  g_autoptr (JsonParser) parser = json_parser_new ();
  ck_assert_msg (json_parser_load_from_data (parser, json, -1, &error), "%s",
                 error ? error->message : "");
  JsonObject *root = json_node_get_object (json_parser_get_root (parser));
  ck_assert_int_eq (json_object_get_int_member (json_object_get_object_member (root, "counts"),
                                                "nccl_samples"), 68);
  JsonObject *stats = json_object_get_object_member (root, "stats");
  JsonObject *nall = json_object_get_object_member (json_object_get_object_member (stats, "all"),
                                                    "nccl");
  ck_assert_int_eq (json_object_get_int_member (nall, "ops"), 5);
  ck_assert_double_eq_tol (json_object_get_double_member (nall, "median_abs_error"), 0.2, TOL);
  ck_assert_double_eq_tol (json_object_get_double_member (nall, "p90_abs_error"), 0.68, TOL);
  ck_assert_int_eq (json_object_get_int_member (nall, "worst_op_id"), 3);
  ck_assert_double_eq_tol (json_object_get_double_member (nall, "sim_median_abs_error"), 0.1, TOL);
  JsonArray *kinds = json_object_get_array_member (stats, "kind");
  JsonObject *compute = json_array_get_object_element (kinds, 3);
  ck_assert_str_eq (json_object_get_string_member (compute, "label"), "compute");
  ck_assert (json_object_get_null_member (compute, "nccl"));
  JsonArray *ops_json = json_object_get_array_member (root, "ops");
  JsonObject *op3 = json_array_get_object_element (ops_json, 3);
  ck_assert_int_eq (json_object_get_int_member (op3, "nccl_samples"), 7);
  ck_assert_double_eq_tol (json_object_get_double_member (op3, "nccl_ns"), 21400, TOL);
  ck_assert_double_eq_tol (json_object_get_double_member (op3, "nccl_error"), -0.8, TOL);
  JsonObject *op5 = json_array_get_object_element (ops_json, 5);
  ck_assert (json_object_get_null_member (op5, "nccl_ns"));
  ck_assert (json_object_get_null_member (op5, "nccl_error"));
  JsonObject *w0 = json_array_get_object_element (json_object_get_array_member (root, "worst"), 0);
  ck_assert_double_eq_tol (json_object_get_double_member (w0, "nccl_error"), 0.0, TOL); /* op 2 */
}
END_TEST

/* Without an estimate (the usual fixture) nothing about NCCL appears. */
START_TEST (test_no_nccl_estimate)
{
  Fixture f;
  fixture_open (&f);
  g_autoptr (GError) error = NULL;
  g_autoptr (SpCompare) cmp = sp_compare_traces (f.ts, "sim.h5", f.tm, "measured.h5", &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert (!sp_compare_has_nccl (cmp));
  ck_assert_uint_eq (sp_compare_counts (cmp)->nccl_samples, 0);
  gsize n = 0;
  const SpCompareOp *o = sp_compare_ops (cmp, &n);
  for (gsize i = 0; i < n; i++)
    ck_assert (o[i].nccl_samples == 0 && isnan (o[i].nccl_error));
  const SpCompareStats *st = sp_compare_stats (cmp, SP_COMPARE_BY_ALL, &n);
  ck_assert_uint_eq (st[0].nccl_n_ops, 0);
  g_autofree char *json = sp_compare_to_json (cmp, 10);
  ck_assert_ptr_null (strstr (json, "nccl"));
  g_autofree char *csv = sp_compare_to_csv (cmp);
  ck_assert_ptr_null (strstr (csv, "nccl"));
  fixture_close (&f);
}
END_TEST

START_TEST (test_bands)
{
  ck_assert_int_eq (sp_compare_band_of (0), SP_COMPARE_BAND_ZERO);
  ck_assert_int_eq (sp_compare_band_of (1), SP_COMPARE_BAND_SMALL);
  ck_assert_int_eq (sp_compare_band_of (65535), SP_COMPARE_BAND_SMALL);
  ck_assert_int_eq (sp_compare_band_of (65536), SP_COMPARE_BAND_MEDIUM);
  ck_assert_int_eq (sp_compare_band_of ((1u << 20) - 1), SP_COMPARE_BAND_MEDIUM);
  ck_assert_int_eq (sp_compare_band_of (1u << 20), SP_COMPARE_BAND_LARGE);
  ck_assert_int_eq (sp_compare_band_of ((64u << 20) - 1), SP_COMPARE_BAND_LARGE);
  ck_assert_int_eq (sp_compare_band_of (64u << 20), SP_COMPARE_BAND_HUGE);
  ck_assert_int_eq (sp_compare_band_of (G_MAXUINT64), SP_COMPARE_BAND_HUGE);
  ck_assert_str_eq (sp_compare_band_name (SP_COMPARE_BAND_MEDIUM), "64 KiB-1 MiB");
  ck_assert_ptr_null (sp_compare_band_name (SP_COMPARE_BAND_N));
}
END_TEST

static Suite *
compare_suite (void)
{
  Suite *s = suite_create ("compare");
  TCase *tc = tcase_create ("join");
  tcase_add_test (tc, test_join_stats);
  tcase_add_test (tc, test_one_sim_iteration);
  tcase_add_test (tc, test_refusals);
  tcase_add_test (tc, test_formats);
  tcase_add_test (tc, test_nccl_estimate);
  tcase_add_test (tc, test_one_rank_left_out);
  tcase_add_test (tc, test_no_nccl_estimate);
  tcase_add_test (tc, test_bands);
  suite_add_tcase (s, tc);
  return s;
}

/* `test_compare --write-nccl DIR` writes DIR/sim.h5 and
 * DIR/measured-nccl.h5 (the traces of test_nccl_estimate) for the CLI test
 * of the text output, and exits (inside a Check test: write_trace asserts). */
static const char *write_dir;

START_TEST (write_nccl_pair)
{
  g_free (write_trace (write_dir, "sim.h5", TRACE_SIM, "m", TRUE));
  g_free (write_trace (write_dir, "measured-nccl.h5", TRACE_MEASURED_NCCL, "m", TRUE));
}
END_TEST

int
main (int argc, char **argv)
{
  if (argc == 3 && strcmp (argv[1], "--write-nccl") == 0)
    {
      write_dir = argv[2];
      Suite *s = suite_create ("write");
      TCase *tc = tcase_create ("write");
      tcase_add_test (tc, write_nccl_pair);
      suite_add_tcase (s, tc);
      return sp_test_run (s);
    }
  return sp_test_run (compare_suite ());
}
