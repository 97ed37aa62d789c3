/* shardplan/calibrate.h: measured points out of traces (medians, groups,
 * hints, what is left out), the hold-out syntax and split, error stats —
 * against hand-written traces and hand-computed numbers. */
#include "config.h"
#include "testutil.h"
#include "trace-sample.h"
#include "shardplan/calibrate.h"

#include <math.h>
#include <string.h>

static char *
sample_path (const char *dir, const char *name)
{
  char *path = g_build_filename (dir, name, NULL);
  GError *e = NULL;
  ck_assert_msg (sp_sample_trace_write (path, FALSE, &e), "%s", e ? e->message : "");
  return path;
}

START_TEST (sample_trace_points)
{
  /* trace-sample.h: 3 ops × 2 iters × 8 ranks, constant durations */
  g_autoptr (SpTestDir) dir = sp_test_tmpdir ();
  g_autofree char *path = sample_path (dir, "s.h5");
  GError *e = NULL;
  g_autoptr (SpTrace) t = sp_trace_open (path, &e);
  SP_ASSERT_NO_ERROR (e);
  g_autoptr (SpCalibData) d = sp_calib_data_new ();
  /* a topology smaller than the trace's world is refused, and nothing is added */
  ck_assert (!sp_calib_data_add_trace (d, t, "s.h5", 4, &e));
  SP_ASSERT_ERROR (e, SP_ERROR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull (strstr (e->message, "s.h5 has world size 8, more than the topology's 4 ranks"));
  g_clear_error (&e);
  ck_assert_uint_eq (sp_calib_data_n_points (d), 0);
  ck_assert_uint_eq (sp_calib_data_n_sources (d), 0);

  /* a larger topology takes it (its ranks are the topology's first ranks) */
  {
    g_autoptr (SpCalibData) big = sp_calib_data_new ();
    ck_assert (sp_calib_data_add_trace (big, t, "s.h5", 64, &e));
    SP_ASSERT_NO_ERROR (e);
    ck_assert_uint_eq (sp_calib_data_n_sources (big), 1);
  }
  ck_assert (sp_calib_data_add_trace (d, t, "s.h5", 8, &e));
  SP_ASSERT_NO_ERROR (e);
  gsize n;
  const SpCalibPoint *p = sp_calib_data_points (d, &n);
  ck_assert_uint_eq (n, 3);
  static const double want_ns[3] = { 100000, 110000, 120000 };
  static const SpColl want_coll[3] = { SP_COLL_ALL_GATHER, SP_COLL_REDUCE_SCATTER,
                                       SP_COLL_ALL_REDUCE };
  for (guint i = 0; i < 3; i++)
    {
      ck_assert_uint_eq (p[i].op_id, i);
      ck_assert_uint_eq (p[i].source, 0);
      ck_assert (p[i].measured_ns == want_ns[i]);
      ck_assert_int_eq (p[i].coll, want_coll[i]);
      ck_assert_uint_eq (p[i].n_samples, 16);
      ck_assert_int_eq (p[i].algo, SP_ALGO_AUTO);
      ck_assert (!p[i].holdout);
    }
  ck_assert_uint_eq (p[0].bytes, 8u << 20);
  ck_assert_uint_eq (p[2].bytes, 2u << 20);
  /* shard group 0 = ranks 0-3; replicate's lowest group {0, 4} */
  ck_assert_uint_eq (p[0].n_ranks, 4);
  for (guint32 r = 0; r < 4; r++)
    ck_assert_uint_eq (p[0].ranks[r], r);
  ck_assert_uint_eq (p[2].n_ranks, 2);
  ck_assert_uint_eq (p[2].ranks[0], 0);
  ck_assert_uint_eq (p[2].ranks[1], 4);
  const SpCalibCounts *c = sp_calib_data_counts (d);
  ck_assert_uint_eq (c->rows, SP_SAMPLE_ROWS);
  ck_assert_uint_eq (c->used, SP_SAMPLE_ROWS);
  ck_assert_str_eq (sp_calib_data_source_name (d, 0), "s.h5");
  ck_assert_ptr_null (sp_calib_data_source_name (d, 1));
}
END_TEST

/* A 4-rank trace with varied durations and rows that must be left out:
 *   op 0 all_reduce (hint ring)  dur 1000·(1 + 4·iter + rank): 1000..12000
 *   op 1 compute                 kernel: left out (not a group collective)
 *   op 2 all_gather              dur 5000 + 100·k, k = 4·iter + rank, with
 *                                k = 0 status wrong and k = 11 dur 0
 *   op 3 broadcast               every row MODELLED: left out */
static char *
write_varied_with (const char *dir, const char *name, const char *producer,
                   const char *const *env, const char *nccl_runtime, SpAlgo ar_hint)
{
  SpGroupsOptions o;
  sp_groups_options_init (&o);
  o.world_size = 4;
  o.devices_per_node = 4;
  GError *e = NULL;
  g_autoptr (SpGroups) g = sp_groups_build (&o, &e);
  SP_ASSERT_NO_ERROR (e);
  g_autoptr (SpPlan) plan = sp_plan_new (&o);
  SpOp ops[4] = {
    { .parent = -1, .name = "ar", .kind = SP_COLL_ALL_REDUCE, .family = SP_FAMILY_WORLD,
      .bytes = 4096, .count = 1024, .dtype = SP_DTYPE_FLOAT32, .redop = SP_REDOP_SUM,
      .algorithm = ar_hint },
    { .parent = -1, .name = "mm", .kind = SP_COLL_COMPUTE, .family = SP_FAMILY_NONE,
      .dtype = SP_DTYPE_NONE, .redop = SP_REDOP_NONE, .algorithm = SP_ALGO_AUTO, .flops = 1000 },
    { .parent = -1, .name = "ag", .kind = SP_COLL_ALL_GATHER, .family = SP_FAMILY_WORLD,
      .bytes = 65536, .count = 16384, .dtype = SP_DTYPE_FLOAT32, .redop = SP_REDOP_NONE,
      .algorithm = SP_ALGO_AUTO },
    { .parent = -1, .name = "bc", .kind = SP_COLL_BROADCAST, .family = SP_FAMILY_WORLD,
      .bytes = 64, .count = 16, .dtype = SP_DTYPE_FLOAT32, .redop = SP_REDOP_NONE,
      .algorithm = SP_ALGO_AUTO },
  };
  for (guint i = 0; i < 4; i++)
    {
      ck_assert_msg (sp_plan_add_op (plan, &ops[i], NULL, &e), "%s", e ? e->message : "");
    }
  char *path = g_build_filename (dir, name, NULL);
  SpTraceHeader h = { .source = SP_TRACE_SOURCE_MEASURED, .producer = (char *) producer,
                      .producer_version = "0", .clock = "CLOCK_MONOTONIC",
                      .timing_mode = "isolated", .iters = 3, .world_size = 4 };
  g_autoptr (SpTraceWriter) w = sp_trace_writer_new (path, &h, &e);
  SP_ASSERT_NO_ERROR (e);
  ck_assert (sp_trace_writer_set_plan (w, plan, NULL, &e));
  ck_assert (sp_trace_writer_set_groups (w, g, &e));
  for (guint i = 0; env != NULL && env[i] != NULL; i += 2)
    sp_trace_writer_add_env (w, env[i], env[i + 1]);
  if (nccl_runtime != NULL)
    ck_assert (sp_trace_writer_set_software (w, "nccl_runtime", nccl_runtime, &e));
  /* rows in reverse order: the reader must not depend on it */
  for (gint32 k = 47; k >= 0; k--)
    {
      guint32 op = (guint32) k / 12, iter = ((guint32) k % 12) / 4, rank = (guint32) k % 4;
      guint32 kk = 4 * iter + rank;
      gint64 dur = op == 0 ? 1000 * (1 + (gint64) kk) : op == 2 ? 5000 + 100 * (gint64) kk : 777;
      if (op == 2 && kk == 11)
        dur = 0;
      SpTraceRow r;
      sp_sample_op_row (&r, g, op, &ops[op], rank, (gint32) iter, dur);
      if (op == 2 && kk == 0)
        r.status = SP_TRACE_STATUS_WRONG;
      if (op == 3)
        r.flags |= SP_TRACE_FLAG_MODELLED;
      if (op == 3 && kk == 0)
        r.group_size = 1; /* a collective on a group of one rank */
      ck_assert (sp_trace_writer_append (w, &r, 1, &e));
    }
  ck_assert_msg (sp_trace_writer_finish (w, &e), "%s", e ? e->message : "");
  return path;
}

static char *
write_varied (const char *dir)
{
  return write_varied_with (dir, "varied.h5", "test", NULL, NULL, SP_ALGO_RING);
}

/* A new SpCalibData with the trace at `path` added (world 0: the trace's);
 * FALSE, with *e set and nothing added, when calibrate refuses it. */
static SpCalibData *
data_of (const char *path, gboolean *out_ok, GError **e)
{
  g_autoptr (SpTrace) t = sp_trace_open (path, e);
  SP_ASSERT_NO_ERROR (*e);
  SpCalibData *d = sp_calib_data_new ();
  *out_ok = sp_calib_data_add_trace (d, t, path, 0, e);
  return d;
}

/* The points of the trace at `path`, which calibrate must take; the data
 * they live in goes to *out_d. */
static const SpCalibPoint *
points_of (const char *path, SpCalibData **out_d, gsize *out_n)
{
  GError *e = NULL;
  gboolean ok;
  *out_d = data_of (path, &ok, &e);
  ck_assert_msg (ok, "%s", e ? e->message : "");
  return sp_calib_data_points (*out_d, out_n);
}

START_TEST (medians_and_left_out_rows)
{
  g_autoptr (SpTestDir) dir = sp_test_tmpdir ();
  g_autofree char *path = write_varied (dir);
  g_autoptr (SpCalibData) d = NULL;
  gsize n;
  const SpCalibPoint *p = points_of (path, &d, &n);
  ck_assert_uint_eq (n, 2);
  ck_assert_uint_eq (p[0].op_id, 0);
  ck_assert (p[0].measured_ns == 6500);   /* median of 1000..12000 */
  ck_assert_uint_eq (p[0].n_samples, 12);
  ck_assert_int_eq (p[0].algo, SP_ALGO_RING);
  ck_assert_uint_eq (p[1].op_id, 2);
  ck_assert (p[1].measured_ns == 5550);   /* median of 5100..6000 */
  ck_assert_uint_eq (p[1].n_samples, 10);
  ck_assert_uint_eq (p[1].n_ranks, 4);
  const SpCalibCounts *c = sp_calib_data_counts (d);
  ck_assert_uint_eq (c->rows, 48);
  ck_assert_uint_eq (c->used, 22);
  ck_assert_uint_eq (c->not_ok, 1);
  ck_assert_uint_eq (c->zero, 1);
  ck_assert_uint_eq (c->not_collective, 12);
  ck_assert_uint_eq (c->one_rank, 1);
  ck_assert_uint_eq (c->modelled, 11);
  ck_assert_uint_eq (c->composite, 0);
}
END_TEST

/* A 4-rank measured trace at `path` of one op in the world family
 * (devices per node `dpn`, `iters` iterations), with the plan holding it
 * unless `with_plan` is FALSE; the caller appends the rows (sp_sample_op_row) and
 * finishes.  The groups are returned for the rows' group ids. */
static SpTraceWriter *
one_op_writer (const char *path, guint32 dpn, const SpOp *op, guint32 iters, gboolean with_plan,
               SpGroups **out_groups)
{
  SpGroupsOptions o;
  sp_groups_options_init (&o);
  o.world_size = 4;
  o.devices_per_node = dpn;
  GError *e = NULL;
  SpGroups *g = sp_groups_build (&o, &e);
  SP_ASSERT_NO_ERROR (e);
  g_autoptr (SpPlan) plan = sp_plan_new (&o);
  ck_assert_msg (sp_plan_add_op (plan, op, NULL, &e), "%s", e ? e->message : "");
  SpTraceHeader h = { .source = SP_TRACE_SOURCE_MEASURED, .producer = "test",
                      .producer_version = "0", .clock = "CLOCK_MONOTONIC",
                      .timing_mode = "isolated", .iters = iters, .world_size = 4 };
  SpTraceWriter *w = sp_trace_writer_new (path, &h, &e);
  SP_ASSERT_NO_ERROR (e);
  if (with_plan)
    ck_assert (sp_trace_writer_set_plan (w, plan, NULL, &e));
  ck_assert (sp_trace_writer_set_groups (w, g, &e));
  *out_groups = g;
  return w;
}

/* A p2p op (world of 4, group rank 2 sends to 0): its rows are the
 * sender's and the receiver's; the point is that pair, in that order, as
 * the trace's plan names it.  Without the plan the trace cannot say who
 * sent: refused, naming the op. */
static char *
write_p2p (const char *dir, gboolean with_plan)
{
  SpOp op = { .parent = -1, .name = "act", .kind = SP_COLL_P2P, .family = SP_FAMILY_WORLD,
              .bytes = 1 << 20, .count = 1 << 20, .dtype = SP_DTYPE_UINT8,
              .redop = SP_REDOP_NONE, .algorithm = SP_ALGO_AUTO, .src = 2, .dst = 0 };
  char *path = g_build_filename (dir, with_plan ? "p2p.h5" : "p2p-noplan.h5", NULL);
  g_autoptr (SpGroups) g = NULL;
  g_autoptr (SpTraceWriter) w = one_op_writer (path, 4, &op, 3, with_plan, &g);
  GError *e = NULL;
  for (gint32 iter = 0; iter < 3; iter++)
    for (guint32 k = 0; k < 2; k++)
      {
        /* 1000..6000 ns */
        SpTraceRow r;
        sp_sample_op_row (&r, g, 0, &op, k ? 0 : 2, iter, 1000 * (1 + iter + 3 * (gint64) k));
        ck_assert (sp_trace_writer_append (w, &r, 1, &e));
      }
  ck_assert_msg (sp_trace_writer_finish (w, &e), "%s", e ? e->message : "");
  return path;
}

START_TEST (p2p_point_is_the_pair)
{
  g_autoptr (SpTestDir) dir = sp_test_tmpdir ();
  g_autofree char *path = write_p2p (dir, TRUE);
  g_autoptr (SpCalibData) d = NULL;
  gsize n;
  const SpCalibPoint *p = points_of (path, &d, &n);
  ck_assert_uint_eq (n, 1);
  ck_assert_int_eq (p[0].coll, SP_COLL_P2P);
  ck_assert_uint_eq (p[0].n_ranks, 2);
  ck_assert_uint_eq (p[0].ranks[0], 2);
  ck_assert_uint_eq (p[0].ranks[1], 0);
  ck_assert (p[0].measured_ns == 3500); /* median of 1000..6000 */
  ck_assert_uint_eq (p[0].n_samples, 6);

  g_autofree char *bare = write_p2p (dir, FALSE);
  GError *e = NULL;
  gboolean ok;
  g_autoptr (SpCalibData) db = data_of (bare, &ok, &e);
  ck_assert (!ok);
  SP_ASSERT_ERROR (e, SP_ERROR_INVALID_TRACE);
  ck_assert_msg (strstr (e->message, "op 0 is a p2p op, but the trace's /meta/plan does not name "
                                     "its sender and receiver"), "%s", e->message);
  g_clear_error (&e);
}
END_TEST

START_TEST (holdout_parse)
{
  SpCalibHoldout h;
  GError *e = NULL;
  ck_assert (sp_calib_holdout_parse ("size:>=1M", &h, &e));
  ck_assert_int_eq (h.kind, SP_CALIB_HOLDOUT_SIZE_GE);
  ck_assert_uint_eq (h.value, 1u << 20);
  g_autofree char *s1 = sp_calib_holdout_to_string (&h);
  ck_assert_str_eq (s1, "size:>=1048576");
  ck_assert (sp_calib_holdout_parse ("size:<4096", &h, &e));
  ck_assert_int_eq (h.kind, SP_CALIB_HOLDOUT_SIZE_LT);
  ck_assert_uint_eq (h.value, 4096);
  ck_assert (sp_calib_holdout_parse ("ranks:128", &h, &e));
  ck_assert_int_eq (h.kind, SP_CALIB_HOLDOUT_RANKS);
  ck_assert_uint_eq (h.value, 128);
  ck_assert (sp_calib_holdout_parse ("file:a b.h5", &h, &e));
  ck_assert_int_eq (h.kind, SP_CALIB_HOLDOUT_FILE);
  ck_assert_str_eq (h.file, "a b.h5");
  g_autofree char *s2 = sp_calib_holdout_to_string (&h);
  ck_assert_str_eq (s2, "file:a b.h5");
  sp_calib_holdout_clear (&h);
  ck_assert_ptr_null (h.file);
  ck_assert (sp_calib_holdout_parse ("size:=4K,64K", &h, &e));
  ck_assert_int_eq (h.kind, SP_CALIB_HOLDOUT_SIZES);
  ck_assert_uint_eq (h.n_sizes, 2);
  ck_assert_uint_eq (h.sizes[0], 4096);
  ck_assert_uint_eq (h.sizes[1], 65536);
  g_autofree char *s3 = sp_calib_holdout_to_string (&h);
  ck_assert_str_eq (s3, "size:=4096,65536");
  sp_calib_holdout_clear (&h);
  ck_assert_ptr_null (h.sizes);
  static const char *const bad[] = { "size:>=0", "size:>=lots", "size:4096", "ranks:0",
                                     "ranks:-3", "file:", "bytes:>=1", "", "size:<",
                                     "size:=", "size:=4K,", "size:=0", "size:=4K,,8K" };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      ck_assert_msg (!sp_calib_holdout_parse (bad[i], &h, &e), "'%s' accepted", bad[i]);
      SP_ASSERT_ERROR (e, SP_ERROR_INVALID_ARGUMENT);
      ck_assert_ptr_null (strchr (e->message, '\n'));
      g_clear_error (&e);
    }
}
END_TEST

static void
expect_apply_error (SpCalibData *d, const char *spec, const char *needle)
{
  SpCalibHoldout h;
  GError *e = NULL;
  ck_assert (sp_calib_holdout_parse (spec, &h, &e));
  ck_assert_msg (!sp_calib_data_apply_holdout (d, &h, &e), "%s applied", spec);
  SP_ASSERT_ERROR (e, SP_ERROR_INVALID_ARGUMENT);
  ck_assert_msg (strstr (e->message, needle) != NULL, "%s: %s", spec, e->message);
  g_clear_error (&e);
  sp_calib_holdout_clear (&h);
  ck_assert_uint_eq (sp_calib_data_n_holdout (d), 0);
}

static gsize
apply (SpCalibData *d, const char *spec)
{
  SpCalibHoldout h;
  GError *e = NULL;
  ck_assert (sp_calib_holdout_parse (spec, &h, &e));
  ck_assert_msg (sp_calib_data_apply_holdout (d, &h, &e), "%s: %s", spec, e ? e->message : "");
  sp_calib_holdout_clear (&h);
  return sp_calib_data_n_holdout (d);
}

START_TEST (holdout_split)
{
  g_autoptr (SpTestDir) dir = sp_test_tmpdir ();
  g_autofree char *a = sample_path (dir, "a.h5");
  g_autofree char *b = write_varied (dir);
  GError *e = NULL;
  g_autoptr (SpCalibData) d = sp_calib_data_new ();
  SpCalibHoldout none = { .kind = SP_CALIB_HOLDOUT_NONE };
  ck_assert (!sp_calib_data_apply_holdout (d, &none, &e)); /* no points at all */
  SP_ASSERT_ERROR (e, SP_ERROR_INVALID_ARGUMENT);
  g_clear_error (&e);
  g_autoptr (SpTrace) ta = sp_trace_open (a, &e);
  g_autoptr (SpTrace) tb = sp_trace_open (b, &e);
  ck_assert (sp_calib_data_add_trace (d, ta, a, 0, &e));
  ck_assert (sp_calib_data_add_trace (d, tb, b, 0, &e));
  /* points: a: 8 MiB, 8 MiB, 2 MiB (4, 4, 2 ranks); b: 4 KiB, 64 KiB (4 ranks) */
  ck_assert_uint_eq (sp_calib_data_n_points (d), 5);
  ck_assert_uint_eq (apply (d, "size:>=2M"), 3);
  ck_assert_uint_eq (sp_calib_data_n_fit (d), 2);
  ck_assert_uint_eq (apply (d, "size:<65536"), 1);
  ck_assert_uint_eq (apply (d, "ranks:2"), 1);
  ck_assert_uint_eq (apply (d, "ranks:4"), 4);
  ck_assert_uint_eq (apply (d, "size:<64K"), 1);
  ck_assert_uint_eq (apply (d, "size:=8M,4K"), 3);
  ck_assert_uint_eq (apply (d, "size:=2M"), 1);
  g_autofree char *fb = g_strdup_printf ("file:%s", b);
  ck_assert_uint_eq (apply (d, fb), 2);
  gsize n;
  const SpCalibPoint *p = sp_calib_data_points (d, &n);
  for (gsize i = 0; i < n; i++)
    ck_assert (p[i].holdout == (p[i].source == 1));
  ck_assert (sp_calib_data_apply_holdout (d, &none, &e));
  ck_assert_uint_eq (sp_calib_data_n_holdout (d), 0);
  expect_apply_error (d, "size:>=1G", "holds out no op");
  expect_apply_error (d, "size:>=1", "nothing left to fit");
  expect_apply_error (d, "ranks:3", "holds out no op");
  expect_apply_error (d, "file:/nonexistent.h5", "names none of the inputs");
}
END_TEST

START_TEST (error_stats_by_hand)
{
  static const double e[5] = { 0.1, -0.2, 0.3, -0.4, 0.5 };
  SpCalibErrorStats s;
  sp_calib_error_stats (e, 5, &s);
  ck_assert_uint_eq (s.n, 5);
  ck_assert (fabs (s.median_abs - 0.3) < 1e-15);
  ck_assert (fabs (s.p90_abs - 0.46) < 1e-15); /* position 3.6 between 0.4 and 0.5 */
  ck_assert (s.worst_abs == 0.5);
  sp_calib_error_stats (e, 2, &s);
  ck_assert (fabs (s.median_abs - 0.15) < 1e-15);
  sp_calib_error_stats (NULL, 0, &s);
  ck_assert (s.n == 0 && s.median_abs == 0 && s.worst_abs == 0);
}
END_TEST

START_TEST (add_point_checks)
{
  g_autoptr (SpCalibData) d = sp_calib_data_new ();
  static const guint32 r[2] = { 0, 1 };
  SpCalibPoint p = { .source = 0, .op_id = 3, .coll = SP_COLL_ALL_REDUCE, .bytes = 8,
                     .algo = SP_ALGO_AUTO, .n_ranks = 2, .ranks = r, .measured_ns = 0 };
  GError *e = NULL;
  ck_assert (!sp_calib_data_add_point (d, &p, NULL, &e));
  SP_ASSERT_ERROR (e, SP_ERROR_INVALID_ARGUMENT);
  g_clear_error (&e);
  p.measured_ns = 100;
  p.source = 1; /* not the next input */
  ck_assert (!sp_calib_data_add_point (d, &p, NULL, &e));
  g_clear_error (&e);
  p.source = 0;
  ck_assert (sp_calib_data_add_point (d, &p, NULL, &e));
  ck_assert_str_eq (sp_calib_data_source_name (d, 0), "points");
  gsize n;
  const SpCalibPoint *q = sp_calib_data_points (d, &n);
  ck_assert (q[0].ranks != r && q[0].ranks[1] == 1); /* copied */
}
END_TEST

/* A 4-rank trace of one all_reduce whose /meta/cluster puts one rank on each
 * of 4 nodes (a 4-node x 1-GPU run); `with_cluster` FALSE: no cluster. */
static char *
write_spread (const char *dir, gboolean with_cluster)
{
  SpOp op = { .parent = -1, .name = "ar", .kind = SP_COLL_ALL_REDUCE, .family = SP_FAMILY_WORLD,
              .bytes = 4096, .count = 1024, .dtype = SP_DTYPE_FLOAT32, .redop = SP_REDOP_SUM,
              .algorithm = SP_ALGO_AUTO };
  char *path = g_build_filename (dir, with_cluster ? "spread.h5" : "spread-nc.h5", NULL);
  g_autoptr (SpGroups) g = NULL;
  g_autoptr (SpTraceWriter) w = one_op_writer (path, 1, &op, 1, TRUE, &g);
  GError *e = NULL;
  if (with_cluster)
    {
      SpTraceNode nodes[4];
      SpTraceRank ranks[4];
      /* listed out of rank order: the placement must go by the rank field */
      for (guint32 i = 0; i < 4; i++)
        {
          guint32 r = 3 - i;
          nodes[r] = (SpTraceNode) { .node_id = r, .hostname = "h", .n_gpus = 1, .gpu_model = "" };
          ranks[i] = (SpTraceRank) { .rank = r, .node_id = r, .local_rank = 0, .device = 0 };
        }
      ck_assert_msg (sp_trace_writer_set_cluster (w, nodes, 4, ranks, 4, &e), "%s",
                     e ? e->message : "");
    }
  for (guint32 rank = 0; rank < 4; rank++)
    {
      SpTraceRow r;
      sp_sample_op_row (&r, g, 0, &op, rank, 0, 1000);
      ck_assert (sp_trace_writer_append (w, &r, 1, &e));
    }
  ck_assert_msg (sp_trace_writer_finish (w, &e), "%s", e ? e->message : "");
  return path;
}

/* The ranks of the one point of `path` added with sp_calib_data_add_trace_on. */
static void
assert_placed (const char *path, guint32 nodes, guint32 gpn, const guint32 want[4])
{
  GError *e = NULL;
  g_autoptr (SpTrace) t = sp_trace_open (path, &e);
  SP_ASSERT_NO_ERROR (e);
  g_autoptr (SpCalibData) d = sp_calib_data_new ();
  ck_assert_msg (sp_calib_data_add_trace_on (d, t, path, nodes, gpn, &e), "%s",
                 e ? e->message : "");
  gsize n;
  const SpCalibPoint *p = sp_calib_data_points (d, &n);
  ck_assert_uint_eq (n, 1);
  ck_assert_uint_eq (p[0].n_ranks, 4);
  for (guint i = 0; i < 4; i++)
    ck_assert_msg (p[0].ranks[i] == want[i], "%u nodes x %u: rank %u placed on %u, expected %u",
                   nodes, gpn, i, p[0].ranks[i], want[i]);
}

START_TEST (placement_from_cluster)
{
  g_autoptr (SpTestDir) dir = sp_test_tmpdir ();
  g_autofree char *spread = write_spread (dir, TRUE);
  g_autofree char *plain = write_spread (dir, FALSE);
  static const guint32 block[4] = { 0, 1, 2, 3 };
  static const guint32 one_per_node_of_8[4] = { 0, 8, 16, 24 };
  static const guint32 one_per_node_of_2[4] = { 0, 2, 4, 6 };
  /* 4 nodes x 1 GPU measured, a 4 x 8 topology: one GPU of each node */
  assert_placed (spread, 4, 8, one_per_node_of_8);
  assert_placed (spread, 10, 2, one_per_node_of_2);
  /* the topology's own shape: the block placement */
  assert_placed (spread, 4, 1, block);
  /* no cluster: block placement */
  assert_placed (plain, 4, 8, block);
  /* a cluster that does not fit the topology (4 nodes on 2): refused, with
   * the rank and where it ran (block placement would put ranks measured
   * on four nodes behind one node's NVLink) */
  {
    GError *pe = NULL;
    g_autoptr (SpTrace) ts = sp_trace_open (spread, &pe);
    SP_ASSERT_NO_ERROR (pe);
    g_autoptr (SpCalibData) dd = sp_calib_data_new ();
    ck_assert (!sp_calib_data_add_trace_on (dd, ts, spread, 2, 8, &pe));
    SP_ASSERT_ERROR (pe, SP_ERROR_INVALID_ARGUMENT);
    ck_assert_msg (strstr (pe->message, "ran rank 3 on node 3, local rank 0, outside the "
                                        "topology's 2 x 8 GPUs") != NULL, "%s", pe->message);
    g_clear_error (&pe);
    ck_assert_uint_eq (sp_calib_data_n_points (dd), 0);
  }
  /* sp_calib_data_add_trace is block placement whatever the cluster says */
  GError *e = NULL;
  g_autoptr (SpTrace) t = sp_trace_open (spread, &e);
  SP_ASSERT_NO_ERROR (e);
  g_autoptr (SpCalibData) d = sp_calib_data_new ();
  ck_assert (sp_calib_data_add_trace (d, t, spread, 32, &e));
  gsize n;
  const SpCalibPoint *p = sp_calib_data_points (d, &n);
  ck_assert_uint_eq (n, 1);
  ck_assert (p[0].ranks[0] == 0 && p[0].ranks[3] == 3);
  /* a topology too small even for the block placement is refused, as before */
  g_autoptr (SpCalibData) small = sp_calib_data_new ();
  ck_assert (!sp_calib_data_add_trace_on (small, t, spread, 1, 2, &e));
  SP_ASSERT_ERROR (e, SP_ERROR_INVALID_ARGUMENT);
  g_clear_error (&e);
  ck_assert_uint_eq (sp_calib_data_n_points (small), 0);
}
END_TEST

/* What NCCL could choose when a trace ran, from its /meta/env: read as
 * NCCL reads it; a `shardplan run` trace records every NCCL_* variable (so
 * none recorded: unrestricted, and it decides); a value NCCL refuses, or
 * one that leaves a collective nothing, is left out with the reason; a
 * plan hint the recorded NCCL_ALGO refuses is dropped, and every hint of a
 * `shardplan run` trace (its executor passes none to NCCL). */
START_TEST (nccl_env_of_traces)
{
  g_autoptr (SpTestDir) dir = sp_test_tmpdir ();
  static const struct {
    const char *producer;
    const char *env[8];
    gboolean decides;
    guint8 algo_off[SP_TOPO_NCCL_FUNCS], proto_off[SP_TOPO_NCCL_FUNCS];
    const char *problem; /* substring, or NULL */
    SpAlgo op0;          /* the all-reduce's point (plan hint: ring) */
    const char *nccl_runtime; /* /meta/software nccl_runtime, or NULL */
    SpAlgo hint;              /* the all-reduce's plan hint; 0 (Tree): ring */
  } cases[] = {
    { "nccl-tests", { NULL }, FALSE, { 0 }, { 0 }, NULL, SP_ALGO_RING },
    /* shardplan's executor passes no hint to NCCL: the plan's ring did not run */
    { "shardplan run", { NULL }, TRUE, { 0 }, { 0 }, NULL, SP_ALGO_AUTO },
    /* NCCL 2.24-2.27 read "Ring, Tree" as Ring (" Tree" matches nothing) */
    { "nccl-tests", { "NCCL_ALGO", "Ring, Tree", NULL }, TRUE, { 0x7d, 0x7d, 0x7d, 0x7d, 0x7d },
      { 0 }, NULL, SP_ALGO_RING },
    { "nccl-tests", { "NCCL_ALGO", "Tree", NULL }, TRUE, { 0x7e, 0x7e, 0x7e, 0x7e, 0x7e }, { 0 },
      NULL, SP_ALGO_AUTO },
    { "shardplan run", { "NCCL_PROTO", "Simple;", "NCCL_NVLS_ENABLE", " 0 ", NULL }, TRUE,
      { 0x30, 0x30, 0x30, 0x30, 0x30 }, { 0x83, 0x83, 0x83, 0x83, 0x83 }, NULL, SP_ALGO_AUTO },
    { "nccl-tests", { "NCCL_NVLS_ENABLE", "1", NULL }, TRUE, { 0 }, { 0 }, NULL, SP_ALGO_RING },
    /* NCCL's log prints integer parameters with a period; strtoll reads 0x0 */
    { "nccl-tests", { "NCCL_NVLS_ENABLE", "0.", NULL }, TRUE, { 0x30, 0x30, 0x30, 0x30, 0x30 }, { 0 },
      NULL, SP_ALGO_RING },
    { "nccl-tests", { "NCCL_NVLS_ENABLE", "0x0", NULL }, TRUE, { 0x30, 0x30, 0x30, 0x30, 0x30 }, { 0 },
      NULL, SP_ALGO_RING },
    { "nccl-tests", { "NCCL_PROTO", "allreduce:LL;Simple", "NCCL_ALGO", "Ring", NULL }, TRUE,
      { 0x7d, 0x7d, 0x7d, 0x7d, 0x7d }, { 0 }, "entry 2 has no collective prefix", SP_ALGO_RING },
    /* NCCL fails every call LL256 leaves no protocol: for the trace's
     * all-gather and all-reduce it is left out, with the reason */
    { "nccl-tests", { "NCCL_PROTO", "LL256", NULL }, TRUE, { 0 }, { 0x87, 0x87, 0, 0x87, 0 },
      "NCCL_PROTO 'LL256' leaves all_gather, all_reduce no protocol (NCCL fails such calls, so those "
      "ops did not run with it); left out for all_gather, all_reduce", SP_ALGO_RING },
    /* the broadcast (Ring only in NCCL) is left nothing, but the trace has
     * no broadcast: no problem; the all-reduce's Tree stands (its plan
     * hint, ring, is refused) */
    { "nccl-tests", { "NCCL_ALGO", "Broadcast:^Ring;AllReduce:Tree", NULL }, TRUE,
      { 0x02, 0, 0, 0, 0x7e }, { 0 }, NULL, SP_ALGO_AUTO },
    /* NVLS alone, with NVLS off: nothing left for the all-reduce and the
     * all-gather */
    { "nccl-tests", { "NCCL_ALGO", "NVLS", "NCCL_NVLS_ENABLE", "0", NULL }, TRUE,
      { 0x7f, 0x7f, 0, 0x7f, 0 }, { 0 }, "NCCL_ALGO 'NVLS' with NCCL_NVLS_ENABLE leaves all_gather, "
      "all_reduce no algorithm", SP_ALGO_RING },
    /* NCCL before 2.24 reads one list, split on ',' only: "AllReduce:^Tree"
     * names nothing it knows, so every algorithm is off, which leaves the
     * trace's all-gather and all-reduce nothing: left out for them (said);
     * 2.24 reads Tree off for the all-reduce */
    { "nccl-tests", { "NCCL_ALGO", "AllReduce:^Tree", NULL }, TRUE, { 0x7f, 0x7f, 0, 0x7f, 0 },
      { 0 }, "/meta/env NCCL_ALGO 'AllReduce:^Tree': NCCL 2.21.5, which ran it, reads no "
      "per-collective entries (they need NCCL 2.24), so it read every algorithm off",
      SP_ALGO_RING, "2.21.5+cuda12.2" },
    { "nccl-tests", { "NCCL_ALGO", "AllReduce:^Tree", NULL }, TRUE, { 0, 0, 0, 0, 0x01 }, { 0 },
      NULL, SP_ALGO_RING, "2.24.3" },
    /* with a leading '^' NCCL 2.21 turns nothing off (2.24 refuses the
     * prefix "^AllReduce") */
    { "shardplan run", { "NCCL_ALGO", "^AllReduce:Ring", NULL }, TRUE, { 0 }, { 0 },
      "so it read no algorithm off", SP_ALGO_AUTO, "2.21.5" },
    /* before 2.23 NCCL has no PAT: "Ring,PAT" is Ring alone; a comma
     * list without entries reads the same by either syntax */
    { "nccl-tests", { "NCCL_ALGO", "^PAT,Tree", "NCCL_PROTO", "^LL", NULL }, TRUE,
      { 0x01, 0x01, 0x01, 0x01, 0x01 }, { 0x81, 0x81, 0x81, 0x81, 0x81 }, NULL, SP_ALGO_RING,
      "2.18.3" },
    /* what NCCL 2.16 has not (NVLS, NVLSTree, PAT) counts: this value
     * leaves it nothing for the all-gather and the all-reduce, so NCCL
     * failed those calls; left out for them */
    { "nccl-tests", { "NCCL_ALGO", "^Tree,Ring,CollNetDirect,CollNetChain", NULL }, TRUE,
      { 0x0f, 0x0f, 0, 0x0f, 0 }, { 0 }, "leaves all_gather, all_reduce no algorithm in NCCL 2.16.5 "
      "(NCCL fails such calls", SP_ALGO_RING, "2.16.5" },
    /* a plan's hint of an algorithm the run's NCCL had not did not run:
     * NVLS before 2.17 */
    { "nccl-tests", { NULL }, FALSE, { 0 }, { 0 }, NULL, SP_ALGO_AUTO, "2.16.5", SP_ALGO_NVLS },
    { "nccl-tests", { NULL }, FALSE, { 0 }, { 0 }, NULL, SP_ALGO_NVLS, "2.17.1", SP_ALGO_NVLS },
    /* NCCL 2.28 refuses a name it does not know: the run's value is left
     * out (2.24-2.27 read "Ring,Foo" as Ring) */
    { "nccl-tests", { "NCCL_ALGO", "Ring,Foo", NULL }, TRUE, { 0 }, { 0 },
      "'Foo' is not an NCCL algorithm", SP_ALGO_RING, "2.28.9" },
    { "nccl-tests", { "NCCL_ALGO", "Ring,Foo", NULL }, TRUE, { 0x7d, 0x7d, 0x7d, 0x7d, 0x7d }, { 0 },
      NULL, SP_ALGO_RING, "2.27.7" },
  };
  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      g_autofree char *name = g_strdup_printf ("env%u.h5", c);
      g_autofree char *path = write_varied_with (dir, name, cases[c].producer, cases[c].env,
                                                 cases[c].nccl_runtime,
                                                 cases[c].hint ? cases[c].hint : SP_ALGO_RING);
      g_autoptr (SpCalibData) d = NULL;
      gsize n;
      const SpCalibPoint *p = points_of (path, &d, &n);
      guint8 algo[SP_TOPO_NCCL_FUNCS] = { 9 }, proto[SP_TOPO_NCCL_FUNCS] = { 9 };
      ck_assert_msg (sp_calib_data_source_nccl (d, 0, algo, proto) == cases[c].decides, "case %u", c);
      if (cases[c].decides)
        {
          ck_assert_msg (memcmp (algo, cases[c].algo_off, sizeof algo) == 0,
                         "case %u: algo 0x%x 0x%x 0x%x 0x%x 0x%x", c, algo[0], algo[1], algo[2],
                         algo[3], algo[4]);
          ck_assert_msg (memcmp (proto, cases[c].proto_off, sizeof proto) == 0,
                         "case %u: proto 0x%x 0x%x 0x%x 0x%x 0x%x", c, proto[0], proto[1], proto[2],
                         proto[3], proto[4]);
        }
      const char *problem = sp_calib_data_source_env_problem (d, 0);
      if (cases[c].problem == NULL)
        ck_assert_msg (problem == NULL, "case %u: %s", c, problem);
      else
        ck_assert_msg (problem != NULL && strstr (problem, cases[c].problem) != NULL, "case %u: %s", c,
                       problem ? problem : "(none)");
      for (guint k = 0; k < SP_CALIB_N_NCCL_ENV; k++)
        {
          const char *want = NULL;
          for (guint i = 0; cases[c].env[i] != NULL; i += 2)
            if (strcmp (cases[c].env[i], sp_calib_nccl_env_names[k]) == 0)
              want = cases[c].env[i + 1];
          ck_assert_str_eq (sp_calib_data_source_env (d, 0, k) ? sp_calib_data_source_env (d, 0, k) : "-",
                            want ? want : "-");
        }
      /* the version as recorded, and the algorithms it lacks */
      guint8 lacking = 9;
      const char *version = sp_calib_data_source_nccl_version (d, 0, &lacking);
      int code = sp_topo_nccl_version_code (cases[c].nccl_runtime);
      g_autofree char *want_version = code ? g_strdup_printf ("%d.%d.%d", code / 10000,
                                                              code / 100 % 100, code % 100)
                                           : g_strdup ("-");
      ck_assert_str_eq (version ? version : "-", want_version);
      ck_assert_int_eq (lacking, sp_topo_nccl_algos_lacking (code));
      ck_assert_uint_ge (n, 1);
      ck_assert_int_eq (p[0].coll, SP_COLL_ALL_REDUCE);
      ck_assert_msg (p[0].algo == cases[c].op0, "case %u: hint %d", c, p[0].algo);
    }
}
END_TEST

/* Every NCCL_* variable of /meta/env is kept per input, in its order, the
 * last value of a name repeated; others are not; an input without any has
 * none. */
START_TEST (nccl_vars_of_traces)
{
  g_autoptr (SpTestDir) dir = sp_test_tmpdir ();
  static const char *const env[] = { "NCCL_MAX_NCHANNELS", "4", "CUDA_VISIBLE_DEVICES", "0,1",
                                     "NCCL_BUFFSIZE", "1048576", "NCCL_MAX_NCHANNELS", "2",
                                     "NCCL", "x", "NCCL_EMPTY", "", NULL };
  g_autofree char *path = write_varied_with (dir, "vars.h5", "shardplan run", env, NULL, SP_ALGO_RING);
  g_autoptr (SpCalibData) d = NULL;
  gsize n;
  points_of (path, &d, &n);
  const char *const *names, *const *values;
  ck_assert_uint_eq (sp_calib_data_source_nccl_vars (d, 0, &names, &values), 3);
  static const char *const want[] = { "NCCL_MAX_NCHANNELS", "2", "NCCL_BUFFSIZE", "1048576",
                                      "NCCL_EMPTY", "" };
  for (guint i = 0; i < 3; i++)
    {
      ck_assert_str_eq (names[i], want[2 * i]);
      ck_assert_str_eq (values[i], want[2 * i + 1]);
    }
  ck_assert_ptr_null (names[3]);
  g_autofree char *plain = write_varied_with (dir, "plain.h5", "shardplan run", NULL, NULL,
                                              SP_ALGO_RING);
  g_autoptr (SpCalibData) d2 = NULL;
  points_of (plain, &d2, &n);
  ck_assert_uint_eq (sp_calib_data_source_nccl_vars (d2, 0, &names, &values), 0);
  ck_assert_ptr_null (names);
  ck_assert_uint_eq (sp_calib_data_source_nccl_vars (d2, 7, &names, &values), 0); /* no such input */
}
END_TEST

int
main (void)
{
  Suite *s = suite_create ("calibrate");
  TCase *tc = tcase_create ("data");
  tcase_add_test (tc, sample_trace_points);
  tcase_add_test (tc, medians_and_left_out_rows);
  tcase_add_test (tc, p2p_point_is_the_pair);
  tcase_add_test (tc, holdout_parse);
  tcase_add_test (tc, holdout_split);
  tcase_add_test (tc, error_stats_by_hand);
  tcase_add_test (tc, add_point_checks);
  tcase_add_test (tc, placement_from_cluster);
  tcase_add_test (tc, nccl_env_of_traces);
  tcase_add_test (tc, nccl_vars_of_traces);
  suite_add_tcase (s, tc);
  return sp_test_run (s);
}
