/* Plans: building and validating ops, JSON round trips on random plans, the
 * canonical text and its digest, and every kind of bad plan file. */
#include "config.h"
#include "shardplan/plan.h"
#include "shardplan/error.h"
#include "testutil.h"

#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static SpGroupsOptions
small_groups (void)
{
  SpGroupsOptions g;
  sp_groups_options_init (&g);
  g.world_size = 8;
  g.devices_per_node = 4;
  g.shard_size = 4;
  return g;
}

static SpOp
comm_op (const char *name, SpColl kind, SpFamily family, guint64 bytes, SpDtype dtype)
{
  guint bits = sp_dtype_bits (dtype);
  SpOp op = { .parent = -1, .name = name, .layer = -1, .kind = kind, .family = family,
              .bytes = bytes, .count = bits == 0 ? 0 : bits < 8 ? bytes * 2 : bytes / (bits / 8), .dtype = dtype,
              .redop = SP_REDOP_NONE, .algorithm = SP_ALGO_AUTO };
  return op;
}

static void
assert_add_fails (SpPlan *plan, const SpOp *op, const char *part1, const char *part2)
{
  g_autoptr (GError) error = NULL;
  guint32 before = sp_plan_n_ops (plan);
  ck_assert (!sp_plan_add_op (plan, op, NULL, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_PLAN);
  g_autofree char *id = g_strdup_printf ("op %u ('%s')", before, op->name ? op->name : "");
  ck_assert_msg (strstr (error->message, id) != NULL, "'%s' lacks '%s'", error->message, id);
  ck_assert_msg (strstr (error->message, part1) != NULL, "'%s' lacks '%s'", error->message, part1);
  if (part2)
    ck_assert_msg (strstr (error->message, part2) != NULL, "'%s' lacks '%s'", error->message, part2);
  ck_assert_msg (strchr (error->message, '\n') == NULL, "multi-line message");
  ck_assert_uint_eq (sp_plan_n_ops (plan), before);
}

START_TEST (test_build_and_get)
{
  SpGroupsOptions g = small_groups ();
  g_autoptr (SpPlan) plan = sp_plan_new (&g);
  ck_assert_uint_eq (sp_plan_world_size (plan), 8);
  ck_assert_uint_eq (sp_plan_groups_options (plan)->shard_size, 4);

  SpOp ag = comm_op ("L0.fwd.allgather", SP_COLL_ALL_GATHER, SP_FAMILY_SHARD, 4096,
                     SP_DTYPE_BFLOAT16);
  ag.id = 77; /* ignored */
  ag.layer = 0;
  ag.phase = SP_PHASE_FORWARD;
  guint32 id = 99;
  ck_assert (sp_plan_add_op (plan, &ag, &id, NULL));
  ck_assert_uint_eq (id, 0);

  char name[32] = "L0.fwd.compute";
  guint32 deps[] = { 0 };
  SpOp comp = comm_op (name, SP_COLL_COMPUTE, SP_FAMILY_NONE, 0, SP_DTYPE_NONE);
  comp.flops = 123456789;
  comp.deps = deps;
  comp.n_deps = 1;
  comp.stream = 2;
  ck_assert (sp_plan_add_op (plan, &comp, &id, NULL));
  ck_assert_uint_eq (id, 1);
  /* the plan copied name and deps */
  strcpy (name, "changed");
  deps[0] = 42;
  const SpOp *got = sp_plan_op (plan, 1);
  ck_assert_str_eq (got->name, "L0.fwd.compute");
  ck_assert_uint_eq (got->n_deps, 1);
  ck_assert_uint_eq (got->deps[0], 0);
  ck_assert_uint_eq (got->flops, 123456789);
  ck_assert_uint_eq (got->stream, 2);
  ck_assert_uint_eq (got->id, 1);

  /* pointers to ops stay valid while the plan grows */
  const SpOp *first = sp_plan_op (plan, 0);
  for (int i = 0; i < 5000; i++)
    {
      SpOp b = comm_op ("barrier", SP_COLL_BARRIER, SP_FAMILY_WORLD, 0, SP_DTYPE_NONE);
      guint32 d = (guint32) i + 1;
      b.deps = &d;
      b.n_deps = 1;
      ck_assert (sp_plan_add_op (plan, &b, NULL, NULL));
    }
  ck_assert_ptr_eq (first, sp_plan_op (plan, 0));
  ck_assert_str_eq (first->name, "L0.fwd.allgather");
  ck_assert_uint_eq (first->bytes, 4096);
  ck_assert_uint_eq (sp_plan_n_ops (plan), 5002);
  ck_assert_uint_eq (sp_plan_op (plan, 5001)->deps[0], 5000);
  /* names are interned: one copy for all 5000 barriers */
  ck_assert_ptr_eq (sp_plan_op (plan, 2)->name, sp_plan_op (plan, 5001)->name);
}
END_TEST

START_TEST (test_add_op_rejects)
{
  SpGroupsOptions g = small_groups ();
  g_autoptr (SpPlan) plan = sp_plan_new (&g);
  SpOp ag = comm_op ("ag", SP_COLL_ALL_GATHER, SP_FAMILY_SHARD, 4096, SP_DTYPE_BFLOAT16);
  ck_assert (sp_plan_add_op (plan, &ag, NULL, NULL));

  SpOp op = comm_op ("rs", SP_COLL_REDUCE_SCATTER, SP_FAMILY_SHARD, 4095, SP_DTYPE_BFLOAT16);
  op.redop = SP_REDOP_SUM;
  assert_add_fails (plan, &op, "4095 bytes", "bfloat16");

  op = comm_op ("rs", SP_COLL_REDUCE_SCATTER, SP_FAMILY_SHARD, 4096, SP_DTYPE_BFLOAT16);
  op.redop = SP_REDOP_SUM;
  op.count = 4096;
  assert_add_fails (plan, &op, "count 4096", "2048 elements");

  op.count = 2048;
  op.redop = SP_REDOP_NONE;
  assert_add_fails (plan, &op, "reduction", NULL);

  SpOp ag2 = ag;
  ag2.redop = SP_REDOP_SUM;
  assert_add_fails (plan, &ag2, "does not reduce", "sum");

  /* a p2p op is no composite's sub-op (a plan of its own: the ids below
   * are this plan's) */
  {
    g_autoptr (SpPlan) pplan = sp_plan_new (&g);
    SpOp hier = comm_op ("hier", SP_COLL_HIER_ALL_GATHER, SP_FAMILY_SHARD, 4096, SP_DTYPE_BFLOAT16);
    guint32 hid;
    ck_assert (sp_plan_add_op (pplan, &hier, &hid, NULL));
    SpOp pp = comm_op ("pp", SP_COLL_P2P, SP_FAMILY_SHARD, 4096, SP_DTYPE_BFLOAT16);
    pp.src = 0;
    pp.dst = 1;
    pp.parent = hid;
    assert_add_fails (pplan, &pp, "a p2p op cannot be a composite's sub-op", NULL);
    pp.parent = -1;
    ck_assert (sp_plan_add_op (pplan, &pp, NULL, NULL));
  }

  op = comm_op ("moe", SP_COLL_ALL_TO_ALL, SP_FAMILY_EXPERT, 64, SP_DTYPE_FLOAT32);
  assert_add_fails (plan, &op, "'expert'", "expert_parallel is 0");
  op.family = SP_FAMILY_SHARD_INTRA_NODE;
  assert_add_fails (plan, &op, "'shard_intra_node'", "hierarchical is false");
  op.family = SP_FAMILY_NONE;
  assert_add_fails (plan, &op, "needs a group family", NULL);
  op.family = (SpFamily) 77;
  assert_add_fails (plan, &op, "family 77", NULL);
  op.family = SP_FAMILY_WORLD;
  op.kind = (SpColl) 99;
  assert_add_fails (plan, &op, "kind 99", NULL);

  op = comm_op ("mm", SP_COLL_COMPUTE, SP_FAMILY_SHARD, 0, SP_DTYPE_NONE);
  assert_add_fails (plan, &op, "kind compute runs on each rank alone", "not 'shard'");
  op = comm_op ("mm", SP_COLL_COMPUTE, SP_FAMILY_NONE, 0, SP_DTYPE_NONE);
  op.bytes = 16;
  assert_add_fails (plan, &op, "16 bytes", "dtype 'none'");

  op = ag;
  op.flops = 5;
  assert_add_fails (plan, &op, "flops 5", NULL);

  /* int4 counts two elements per byte: 2^63 bytes are 2^64 elements */
  op = comm_op ("big", SP_COLL_ALL_GATHER, SP_FAMILY_SHARD, (guint64) G_MAXINT64 + 1,
                SP_DTYPE_INT4);
  assert_add_fails (plan, &op, "9223372036854775808 bytes of int4", "2^64");

  op = ag;
  guint32 fwd = 1;
  op.deps = &fwd;
  op.n_deps = 1;
  assert_add_fails (plan, &op, "dependency 1", "cycles");

  op = ag;
  op.parent = 0; /* op 0 is an all_gather, not a composite */
  assert_add_fails (plan, &op, "parent 0", "not a composite");
  op.parent = 5;
  assert_add_fails (plan, &op, "parent 5", NULL);

  op = ag;
  op.layer = -2;
  assert_add_fails (plan, &op, "layer -2", NULL);
  op.layer = 0;
  op.dtype = (SpDtype) 200;
  assert_add_fails (plan, &op, "dtype 200", NULL);

  op = ag;
  op.name = "bad\xff";
  g_autoptr (GError) error = NULL;
  ck_assert (!sp_plan_add_op (plan, &op, NULL, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_PLAN);
  ck_assert (strstr (error->message, "op 1") != NULL);
  ck_assert (strstr (error->message, "UTF-8") != NULL);

  /* int4 counts two elements per byte; a composite may parent sub-ops */
  SpOp comp = comm_op ("qgz", SP_COLL_ALL_TO_ALL_QUANT_REDUCE, SP_FAMILY_WORLD, 4096,
                       SP_DTYPE_FLOAT16);
  comp.redop = SP_REDOP_SUM;
  guint32 cid;
  ck_assert (sp_plan_add_op (plan, &comp, &cid, NULL));
  SpOp q = comm_op ("qgz.quant", SP_COLL_QUANTIZE, SP_FAMILY_NONE, 1024, SP_DTYPE_INT4);
  ck_assert_uint_eq (q.count, 2048);
  q.parent = cid;
  ck_assert (sp_plan_add_op (plan, &q, NULL, NULL));
  ck_assert_uint_eq (sp_plan_n_ops (plan), 3);

  /* a composite's sub-ops follow it, together (another op between made a
   * cycle through the parent and a quadratic walk in sim); no composite
   * is a sub-op; a coalesced reduce-scatter has one sub-op, a
   * reduce_scatter of its buffer on its family */
  SpOp other = comm_op ("between", SP_COLL_ALL_REDUCE, SP_FAMILY_WORLD, 4096, SP_DTYPE_FLOAT16);
  other.redop = SP_REDOP_SUM;
  ck_assert (sp_plan_add_op (plan, &other, NULL, NULL));
  SpOp late = q;
  late.name = "qgz.late";
  assert_add_fails (plan, &late, "parent 1", "a composite's sub-ops follow it, together");
  SpOp rsc = comm_op ("rsc", SP_COLL_REDUCE_SCATTER_COALESCED, SP_FAMILY_WORLD, 4096,
                      SP_DTYPE_FLOAT16);
  rsc.redop = SP_REDOP_SUM;
  guint32 rid;
  ck_assert (sp_plan_add_op (plan, &rsc, &rid, NULL));
  SpOp nested = rsc;
  nested.parent = rid;
  assert_add_fails (plan, &nested, "a composite (reduce_scatter_coalesced) cannot be a sub-op",
                    NULL);
  SpOp sub = comm_op ("rsc.rs", SP_COLL_ALL_REDUCE, SP_FAMILY_WORLD, 4096, SP_DTYPE_FLOAT16);
  sub.redop = SP_REDOP_SUM;
  sub.parent = rid;
  assert_add_fails (plan, &sub, "exactly one sub-op, a reduce_scatter on its family",
                    "this one is all_reduce on world with 4096 bytes");
  sub.kind = SP_COLL_REDUCE_SCATTER;
  ck_assert (sp_plan_add_op (plan, &sub, NULL, NULL));
  SpOp second = sub;
  second.name = "rsc.rs2";
  assert_add_fails (plan, &second, "exactly one sub-op", NULL);
}
END_TEST

START_TEST (test_meta)
{
  SpGroupsOptions g = small_groups ();
  g_autoptr (SpPlan) plan = sp_plan_new (&g);
  ck_assert_ptr_null (sp_plan_get_meta (plan, "model"));
  sp_plan_set_meta (plan, "model", "gpt-13b");
  sp_plan_set_meta (plan, "created_by", "test");
  sp_plan_set_meta (plan, "model", "gpt-70b");
  ck_assert_str_eq (sp_plan_get_meta (plan, "model"), "gpt-70b");
  g_autofree const char **keys = sp_plan_meta_keys (plan);
  ck_assert_str_eq (keys[0], "model");
  ck_assert_str_eq (keys[1], "created_by");
  ck_assert_ptr_null (keys[2]);
}
END_TEST

/* ---- random plans ---------------------------------------------------------- */

static const SpDtype dtypes[] = { SP_DTYPE_BFLOAT16, SP_DTYPE_FLOAT16, SP_DTYPE_FLOAT32,
                                  SP_DTYPE_INT8, SP_DTYPE_INT4, SP_DTYPE_UINT64,
                                  SP_DTYPE_FP8_E4M3 };
static const SpColl comms[] = { SP_COLL_ALL_GATHER, SP_COLL_REDUCE_SCATTER, SP_COLL_ALL_REDUCE,
                                SP_COLL_ALL_TO_ALL, SP_COLL_BROADCAST, SP_COLL_REDUCE,
                                SP_COLL_SEND, SP_COLL_RECV, SP_COLL_BARRIER, SP_COLL_P2P };
static const SpColl composites[] = { SP_COLL_HIER_ALL_GATHER, SP_COLL_REDUCE_SCATTER_COALESCED,
                                     SP_COLL_ALL_TO_ALL_QUANT_REDUCE };

static gboolean
reduces (SpColl k)
{
  return k == SP_COLL_ALL_REDUCE || k == SP_COLL_REDUCE || k == SP_COLL_REDUCE_SCATTER
         || k == SP_COLL_QUANT_REDUCE || k == SP_COLL_REDUCE_SCATTER_COALESCED
         || k == SP_COLL_ALL_TO_ALL_QUANT_REDUCE;
}

static SpFamily
random_family (GRand *rng, const SpGroupsOptions *g)
{
  SpFamily fams[SP_FAMILY_N];
  guint n = 0;
  fams[n++] = SP_FAMILY_WORLD;
  if (g->shard_size)
    {
      fams[n++] = SP_FAMILY_SHARD;
      fams[n++] = SP_FAMILY_REPLICATE;
      if (g->hierarchical)
        {
          fams[n++] = SP_FAMILY_SHARD_INTRA_NODE;
          fams[n++] = SP_FAMILY_SHARD_INTER_NODE;
        }
    }
  if (g->expert_parallel)
    fams[n++] = SP_FAMILY_EXPERT;
  if (g->local_all_to_all)
    {
      fams[n++] = SP_FAMILY_A2A_LOCAL;
      fams[n++] = SP_FAMILY_A2A_GLOBAL;
    }
  return fams[g_rand_int_range (rng, 0, (gint32) n)];
}

static void
random_sizes (GRand *rng, SpOp *op)
{
  op->dtype = dtypes[g_rand_int_range (rng, 0, G_N_ELEMENTS (dtypes))];
  guint bits = sp_dtype_bits (op->dtype);
  guint64 width = bits >= 8 ? bits / 8 : 1;
  /* sometimes huge: up to the largest byte count (int4: half of it) */
  guint64 elems = g_rand_boolean (rng) ? g_rand_int (rng)
                                       : ((guint64) g_rand_int (rng) << 32 | g_rand_int (rng))
                                           / width / (bits < 8 ? 2 : 1);
  op->bytes = elems * width;
  op->count = bits >= 8 ? elems : elems * 2;
}

static SpPlan *
random_plan (GRand *rng, guint32 n_ops)
{
  SpGroupsOptions g;
  sp_groups_options_init (&g);
  g.world_size = 1u << g_rand_int_range (rng, 1, 11);
  g.devices_per_node = 1u << g_rand_int_range (rng, 0, 4);
  if (g_rand_boolean (rng))
    {
      g.shard_size = g.world_size;
      g.hierarchical = g_rand_boolean (rng);
    }
  if (g_rand_boolean (rng))
    g.expert_parallel = 2;
  g.data_before_expert = g_rand_boolean (rng);
  g.local_all_to_all = g_rand_boolean (rng);
  g.pipeline_parallel = g_rand_int_range (rng, 0, 3);

  SpPlan *plan = sp_plan_new (&g);
  sp_plan_set_meta (plan, "model", "random \"quoted\" \\ \t\n\x01 é");
  if (g_rand_boolean (rng))
    sp_plan_set_meta (plan, "seed", "x");

  g_autoptr (GArray) deps = g_array_new (FALSE, FALSE, sizeof (guint32));
  gint64 composite = -1, prev_parent_or_self = -1;
  for (guint32 i = 0; i < n_ops; i++)
    {
      g_autofree char *name = g_strdup_printf ("L%u.op%u\"%s", i / 7, i % 7,
                                               g_rand_boolean (rng) ? "x" : "");
      SpOp op = { .parent = -1, .name = name, .layer = g_rand_int_range (rng, -1, 100),
                  .phase = (SpPhase) g_rand_int_range (rng, 0, 4),
                  .algorithm = g_rand_boolean (rng) ? SP_ALGO_AUTO : SP_ALGO_RING,
                  .stream = g_rand_int_range (rng, 0, 4), .redop = SP_REDOP_NONE };
      guint r = g_rand_int_range (rng, 0, 10);
      if (r < 2)
        {
          op.kind = composites[g_rand_int_range (rng, 0, G_N_ELEMENTS (composites))];
          op.family = random_family (rng, &g);
          random_sizes (rng, &op);
        }
      else if (r < 4)
        {
          op.kind = g_rand_boolean (rng) ? SP_COLL_COMPUTE : SP_COLL_QUANTIZE;
          op.family = SP_FAMILY_NONE;
          if (op.kind == SP_COLL_COMPUTE)
            {
              op.dtype = SP_DTYPE_NONE;
              op.flops = g_rand_int (rng) * (guint64) 1000;
            }
          else
            random_sizes (rng, &op);
        }
      else
        {
          op.kind = comms[g_rand_int_range (rng, 0, G_N_ELEMENTS (comms))];
          op.family = random_family (rng, &g);
          if (op.kind == SP_COLL_BARRIER)
            op.dtype = SP_DTYPE_NONE;
          else
            random_sizes (rng, &op);
          if (op.kind == SP_COLL_P2P)
            {
              /* two distinct group ranks of the world */
              op.src = (guint32) g_rand_int_range (rng, 0, (gint32) g.world_size);
              op.dst = (op.src + 1 + (guint32) g_rand_int_range (rng, 0, (gint32) g.world_size - 1))
                       % g.world_size;
            }
        }
      if (reduces (op.kind))
        op.redop = (SpRedop) g_rand_int_range (rng, 0, 5);
      /* a composite's sub-ops follow it, together; a coalesced
       * reduce-scatter's one sub-op is a reduce_scatter of its buffer */
      gboolean run_open = composite >= 0 && prev_parent_or_self == composite;
      if (run_open && r >= 2 && op.kind != SP_COLL_P2P && g_rand_boolean (rng))
        {
          const SpOp *c = sp_plan_op (plan, (guint32) composite);
          if (c->kind != SP_COLL_REDUCE_SCATTER_COALESCED)
            op.parent = composite;
          else if ((gint64) i == composite + 1)
            {
              op.parent = composite;
              op.kind = SP_COLL_REDUCE_SCATTER;
              op.family = c->family;
              op.bytes = c->bytes;
              op.count = c->count;
              op.dtype = c->dtype;
              op.redop = SP_REDOP_SUM;
              op.flops = 0;
              op.src = op.dst = 0;
            }
        }
      g_array_set_size (deps, 0);
      for (guint k = g_rand_int_range (rng, 0, 4); k > 0 && i > 0; k--)
        {
          guint32 d = g_rand_int_range (rng, 0, (gint32) i);
          g_array_append_val (deps, d);
        }
      op.deps = (const guint32 *) (gpointer) deps->data;
      op.n_deps = deps->len;
      g_autoptr (GError) error = NULL;
      guint32 id;
      ck_assert_msg (sp_plan_add_op (plan, &op, &id, &error), "random op %u: %s", i,
                     error ? error->message : "");
      if (sp_coll_is_composite (op.kind))
        composite = id;
      /* the composite a sub-op may follow: this op, or its parent */
      prev_parent_or_self = sp_coll_is_composite (op.kind) ? (gint64) id : op.parent;
    }
  return plan;
}

START_TEST (test_round_trip_random)
{
  GRand *rng = g_rand_new_with_seed (20250221u + (guint32) _i);
  guint32 n = (guint32) g_rand_int_range (rng, 0, 400);
  g_autoptr (SpPlan) plan = random_plan (rng, n);
  g_rand_free (rng);

  g_autofree char *json = sp_plan_to_json (plan);
  g_autoptr (GError) error = NULL;
  g_autoptr (SpPlan) back = sp_plan_from_json (json, -1, 0, &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert (sp_plan_equal (plan, back));
  ck_assert (sp_plan_equal (back, plan));
  /* canonical: writing the reloaded plan gives the same text */
  g_autofree char *json2 = sp_plan_to_json (back);
  ck_assert_str_eq (json, json2);
  g_autofree char *d1 = sp_plan_digest (plan);
  g_autofree char *d2 = sp_plan_digest (back);
  ck_assert_str_eq (d1, d2);
  ck_assert_uint_eq (strlen (d1), 64);

  /* and through a file, with the world size checked */
  g_autoptr (SpTestDir) dir = sp_test_tmpdir ();
  g_autofree char *path = g_build_filename (dir, "plan.json", NULL);
  ck_assert (sp_plan_save (plan, path, &error));
  g_autoptr (SpPlan) loaded = sp_plan_load (path, sp_plan_world_size (plan), &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert (sp_plan_equal (plan, loaded));
}
END_TEST

START_TEST (test_equal_detects_change)
{
  GRand *rng = g_rand_new_with_seed (7);
  g_autoptr (SpPlan) a = random_plan (rng, 50);
  g_rand_free (rng);
  g_autofree char *json = sp_plan_to_json (a);

  /* a one-character change in an op's bytes: not equal, other digest */
  g_autoptr (SpPlan) b = sp_plan_from_json (json, -1, 0, NULL);
  ck_assert_ptr_nonnull (b);
  sp_plan_set_meta (b, "extra", "1");
  ck_assert (!sp_plan_equal (a, b));
  g_autofree char *da = sp_plan_digest (a);
  g_autofree char *db = sp_plan_digest (b);
  ck_assert_str_ne (da, db);

  /* a different stream on the first op */
  char *p = strstr (json, "\"stream\": ");
  ck_assert_ptr_nonnull (p);
  p[10] = p[10] == '9' ? '8' : '9';
  g_autoptr (SpPlan) c = sp_plan_from_json (json, -1, 0, NULL);
  ck_assert_ptr_nonnull (c);
  ck_assert (!sp_plan_equal (a, c));
}
END_TEST

/* The canonical text is pinned by a checked-in golden file; its SHA-256 is
 * the digest, and meta insertion order does not change it. */
START_TEST (test_golden_and_digest)
{
  SpGroupsOptions g = small_groups ();
  g.hierarchical = FALSE;
  g_autoptr (SpPlan) plan = sp_plan_new (&g);
  sp_plan_set_meta (plan, "topology", "dgx-h100");
  sp_plan_set_meta (plan, "model", "tiny");
  SpOp hag = comm_op ("L0.fwd.gather", SP_COLL_HIER_ALL_GATHER, SP_FAMILY_SHARD, 8192,
                      SP_DTYPE_BFLOAT16);
  hag.layer = 0;
  hag.phase = SP_PHASE_FORWARD;
  hag.stream = 1;
  ck_assert (sp_plan_add_op (plan, &hag, NULL, NULL));
  SpOp sub = comm_op ("L0.fwd.gather.flat", SP_COLL_ALL_GATHER, SP_FAMILY_SHARD, 8192,
                      SP_DTYPE_BFLOAT16);
  sub.parent = 0;
  sub.layer = 0;
  sub.phase = SP_PHASE_FORWARD;
  sub.stream = 1;
  sub.algorithm = SP_ALGO_RING;
  ck_assert (sp_plan_add_op (plan, &sub, NULL, NULL));
  guint32 deps[] = { 0, 1 };
  SpOp mm = comm_op ("L0.fwd.mm", SP_COLL_COMPUTE, SP_FAMILY_NONE, 0, SP_DTYPE_NONE);
  mm.layer = 0;
  mm.phase = SP_PHASE_FORWARD;
  mm.flops = 9007199254740993; /* 2^53 + 1: not representable as a double */
  mm.deps = deps;
  mm.n_deps = 2;
  ck_assert (sp_plan_add_op (plan, &mm, NULL, NULL));
  SpOp rs = comm_op ("step.\"all\"", SP_COLL_ALL_REDUCE, SP_FAMILY_REPLICATE,
                     18446744073709551614u, SP_DTYPE_BFLOAT16);
  rs.redop = SP_REDOP_AVG;
  rs.phase = SP_PHASE_OPTIMIZER;
  rs.deps = &deps[1];
  rs.n_deps = 1;
  ck_assert (sp_plan_add_op (plan, &rs, NULL, NULL));

  g_autofree char *json = sp_plan_to_json (plan);
  g_autofree char *golden_path = sp_test_fixture ("plan/golden-small.json");
  g_autofree char *golden = NULL;
  /* after a deliberate format change (and a schema_version bump):
   * SP_REGEN_GOLDEN=1 tests/lib/test_plan rewrites the file; review it by hand */
  if (g_getenv ("SP_REGEN_GOLDEN"))
    ck_assert (g_file_set_contents (golden_path, json, -1, NULL));
  ck_assert (g_file_get_contents (golden_path, &golden, NULL, NULL));
  ck_assert_str_eq (json, golden);

  g_autofree char *digest = sp_plan_digest (plan);
  g_autofree char *expect = g_compute_checksum_for_string (G_CHECKSUM_SHA256, golden, -1);
  ck_assert_str_eq (digest, expect);

  g_autoptr (GError) error = NULL;
  g_autoptr (SpPlan) loaded = sp_plan_load (golden_path, 8, &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert (sp_plan_equal (plan, loaded));
  ck_assert_uint_eq (sp_plan_op (loaded, 2)->flops, 9007199254740993);
  ck_assert_uint_eq (sp_plan_op (loaded, 3)->bytes, 18446744073709551614u);
  ck_assert_uint_eq (sp_plan_op (loaded, 3)->count, 9223372036854775807u);

  /* the same plan with meta set in the other order has the same digest */
  g_autoptr (SpPlan) other = sp_plan_from_json (golden, -1, 0, &error);
  SP_ASSERT_NO_ERROR (error);
  g_autoptr (SpPlan) reordered = sp_plan_new (&g);
  sp_plan_set_meta (reordered, "model", "tiny");
  sp_plan_set_meta (reordered, "topology", "dgx-h100");
  for (guint32 i = 0; i < sp_plan_n_ops (other); i++)
    ck_assert (sp_plan_add_op (reordered, sp_plan_op (other, i), NULL, NULL));
  g_autofree char *d2 = sp_plan_digest (reordered);
  ck_assert_str_eq (digest, d2);
}
END_TEST

START_TEST (test_defaults_accepted)
{
  g_autofree char *path = sp_test_fixture ("plan/ok-defaults.json");
  g_autoptr (GError) error = NULL;
  g_autoptr (SpPlan) plan = sp_plan_load (path, 8, &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert_uint_eq (sp_plan_n_ops (plan), 2);
  const SpOp *op = sp_plan_op (plan, 1);
  ck_assert_int_eq (op->parent, -1);
  ck_assert_int_eq (op->layer, -1);
  ck_assert_int_eq (op->phase, SP_PHASE_NONE);
  ck_assert_int_eq (op->redop, SP_REDOP_NONE);
  ck_assert_int_eq (op->algorithm, SP_ALGO_AUTO);
  ck_assert_uint_eq (op->flops, 1000);
  ck_assert_uint_eq (sp_plan_op (plan, 0)->count, 2048);
  ck_assert_uint_eq (sp_plan_groups_options (plan)->devices_per_node, 4);
  ck_assert_uint_eq (sp_plan_groups_options (plan)->shard_size, 4);
}
END_TEST

/* ---- bad files ------------------------------------------------------------- */

typedef struct {
  const char *file;
  SpErrorCode code;
  const char *parts[3];   /* substrings the message must contain */
} BadCase;

static const BadCase bad_cases[] = {
  { "truncated.json", SP_ERROR_INVALID_PLAN, { "not valid JSON at 5:" } },
  { "not-json.json", SP_ERROR_INVALID_PLAN, { "not valid JSON at 1:" } },
  { "newer-version.json", SP_ERROR_INVALID_PLAN,
    { "plan schema_version 2 is newer than this shardplan supports (1)" } },
  { "wrong-schema.json", SP_ERROR_INVALID_PLAN, { "'shardplan-trace'", "shardplan-plan" } },
  { "wrong-type-bytes.json", SP_ERROR_INVALID_PLAN,
    { "op 1 ('L0.bwd.rs')", "'bytes' must be a non-negative integer", "\"4096\"" } },
  { "wrong-type-deps.json", SP_ERROR_INVALID_PLAN, { "op 1 ('L0.bwd.rs')", "'deps'", "got 0" } },
  { "unknown-kind.json", SP_ERROR_INVALID_PLAN,
    { "op 1 ('L0.bwd.rs')", "unknown kind 'reduce_scatterr'" } },
  { "unknown-family.json", SP_ERROR_INVALID_PLAN,
    { "op 1 ('L0.bwd.rs')", "unknown family 'shards'" } },
  { "family-not-built.json", SP_ERROR_INVALID_PLAN,
    { "op 1 ('L0.moe.a2a')", "family 'expert'", "expert_parallel is 0" } },
  { "unknown-key.json", SP_ERROR_INVALID_PLAN, { "op 1 ('L0.bwd.rs')", "unknown key 'byts'" } },
  { "missing-dep.json", SP_ERROR_INVALID_PLAN,
    { "op 1 ('L0.bwd.rs')", "dependency 7 names no op" } },
  { "forward-dep.json", SP_ERROR_INVALID_PLAN,
    { "op 1 ('L0.bwd.rs')", "dependency 1 is not an earlier op" } },
  { "cycle.json", SP_ERROR_INVALID_PLAN, { "op 0 ('a')", "dependency 1", "cycles" } },
  { "partial-element.json", SP_ERROR_INVALID_PLAN,
    { "op 1 ('L0.bwd.rs')", "4095 bytes is not a whole number of bfloat16 elements" } },
  { "count-mismatch.json", SP_ERROR_INVALID_PLAN,
    { "op 1 ('L0.bwd.rs')", "count 1024", "2048 elements" } },
  { "bad-parent.json", SP_ERROR_INVALID_PLAN, { "op 1 ('L0.bwd.rs')", "parent 0", "composite" } },
  { "too-large.json", SP_ERROR_INVALID_PLAN,
    { "op 1 ('L0.bwd.rs')", "'bytes' must be an integer in [0, 18446744073709551615]",
      "got 18446744073709551616" } },
  { "does-not-exist.json", SP_ERROR_IO, { "does-not-exist.json" } },
};

START_TEST (test_bad_file)
{
  const BadCase *c = &bad_cases[_i];
  g_autofree char *name = g_build_filename ("plan", c->file, NULL);
  g_autofree char *path = sp_test_fixture (name);
  g_autoptr (GError) error = NULL;
  g_autoptr (SpPlan) plan = sp_plan_load (path, 0, &error);
  ck_assert_msg (plan == NULL, "%s loaded", c->file);
  ck_assert_msg (error != NULL, "%s: no error", c->file);
  ck_assert_msg (error->domain == SP_ERROR && (int) error->code == (int) c->code,
                 "%s: code %d, expected %d: %s", c->file, error->code, c->code, error->message);
  ck_assert_msg (strchr (error->message, '\n') == NULL, "%s: multi-line: %s", c->file,
                 error->message);
  ck_assert_msg (strstr (error->message, c->file) != NULL, "%s: message lacks the file: %s",
                 c->file, error->message);
  for (guint i = 0; i < G_N_ELEMENTS (c->parts) && c->parts[i]; i++)
    ck_assert_msg (strstr (error->message, c->parts[i]) != NULL, "%s: '%s' lacks '%s'", c->file,
                   error->message, c->parts[i]);
}
END_TEST

START_TEST (test_world_size_mismatch)
{
  g_autofree char *path = sp_test_fixture ("plan/world-64.json");
  g_autoptr (GError) error = NULL;
  g_autoptr (SpPlan) plan = sp_plan_load (path, 128, &error);
  ck_assert_ptr_null (plan);
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_PLAN);
  ck_assert_msg (g_str_has_suffix (error->message,
                                   "plan world size 64 does not match the topology's 128 ranks"),
                 "%s", error->message);
  g_clear_error (&error);
  g_autoptr (SpPlan) ok = sp_plan_load (path, 64, &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert_uint_eq (sp_plan_world_size (ok), 64);
}
END_TEST

START_TEST (test_bad_strings)
{
  static const struct { const char *json; const char *part; } cases[] = {
    { "[1, 2]", "expected a JSON object, got an array" },
    { "{}", "no 'schema' key" },
    { "{\"schema\": \"shardplan-plan\"}", "missing key 'schema_version'" },
    { "{\"schema\": \"shardplan-plan\", \"schema_version\": 1.5}", "'schema_version' must be" },
    { "{\"schema\": \"shardplan-plan\", \"schema_version\": 0}", "schema_version 0 is invalid" },
    { "{\"schema\": \"shardplan-plan\", \"schema_version\": 1, \"world_size\": 8, \"ops\": [], "
      "\"opz\": 1}", "unknown key 'opz'" },
    { "{\"schema\": \"shardplan-plan\", \"schema_version\": 1, \"world_size\": 0, \"ops\": []}",
      "'world_size' must be an integer in [1, 4294967295], got 0" },
    { "{\"schema\": \"shardplan-plan\", \"schema_version\": 1, \"world_size\": 8, \"ops\": {}}",
      "'ops' must be an array, got an object" },
    { "{\"schema\": \"shardplan-plan\", \"schema_version\": 1, \"world_size\": 8, \"ops\": [],"
      " \"groups\": {\"world_size\": 4}}", "world_size 4 does not match the plan's world_size 8" },
    { "{\"schema\": \"shardplan-plan\", \"schema_version\": 1, \"world_size\": 8, \"ops\": [],"
      " \"groups\": {\"hierarchical\": 1}}", "'hierarchical' must be true or false, got 1" },
    { "{\"schema\": \"shardplan-plan\", \"schema_version\": 1, \"world_size\": 8, \"ops\": [],"
      " \"groups\": {\"shardsize\": 1}}", "unknown key 'shardsize'" },
    { "{\"schema\": \"shardplan-plan\", \"schema_version\": 1, \"world_size\": 8, \"ops\": [],"
      " \"meta\": {\"model\": 3}}", "'model' must be a string, got 3" },
    { "{\"schema\": \"shardplan-plan\", \"schema_version\": 1, \"world_size\": 8, \"ops\": [7]}",
      "op 0: must be an object, got 7" },
    { "{\"schema\": \"shardplan-plan\", \"schema_version\": 1, \"world_size\": 8, \"ops\": "
      "[{\"id\": 3, \"name\": \"x\", \"kind\": \"barrier\", \"family\": \"world\", \"bytes\": 0,"
      " \"dtype\": \"none\"}]}", "op 0 ('x'): 'id' is 3" },
    { "{\"schema\": \"shardplan-plan\", \"schema_version\": 1, \"world_size\": 8, \"ops\": "
      "[{\"id\": 0, \"name\": \"x\", \"kind\": \"barrier\", \"bytes\": 0, \"dtype\": \"none\"}]}",
      "op 0 ('x'): missing key 'family'" },
    { "{\"schema\": \"shardplan-plan\", \"schema_version\": 1, \"world_size\": 8, \"ops\": "
      "[{\"id\": 0, \"name\": \"x\", \"kind\": \"barrier\", \"family\": \"world\", \"bytes\": -4,"
      " \"dtype\": \"none\"}]}", "op 0 ('x'): 'bytes' must be an integer in [0, 18446744073709551615], got -4" },
    { "{\"schema\": \"shardplan-plan\", \"schema_version\": 1, \"world_size\": 8, \"ops\": "
      "[{\"id\": 0, \"name\": \"x\", \"kind\": \"barrier\", \"family\": \"world\", \"bytes\": 0,"
      " \"dtype\": \"none\", \"phase\": \"fwd\"}]}", "op 0 ('x'): unknown phase 'fwd'" },
    { "{\"schema\": \"shardplan-plan\", \"schema_version\": 1, \"world_size\": 8, \"ops\": "
      "[{\"id\": 0, \"name\": \"x\", \"kind\": \"barrier\", \"family\": \"world\", \"bytes\": 0,"
      " \"dtype\": \"none\", \"bytes\": 0}]}", "op 0 ('x'): key 'bytes' appears twice" },
    { "{\"schema\": \"shardplan-plan\", \"schema_version\": 1, \"world_size\": 8, \"ops\": "
      "[{\"id\": 0, \"name\": \"x\", \"kind\": \"barrier\", \"family\": \"world\", \"bytes\": 0.0,"
      " \"dtype\": \"none\"}]}", "op 0 ('x'): 'bytes' must be a non-negative integer, got 0.0" },
    { "{\"schema\": \"shardplan-plan\", \"schema_version\": 1, \"world_size\": 8, \"ops\": "
      "[{\"id\": 0, \"name\": \"x\", \"kind\": \"barrier\", \"family\": \"world\", \"bytes\": 0,"
      " \"dtype\": \"none\", \"layer\": -2}]}", "op 0 ('x'): 'layer' must be an integer in [-1, 2147483647], got -2" },
    { "{\"schema\": \"shardplan-plan\", \"schema_version\": 1, \"world_size\": 8, \"ops\": "
      "[{\"id\": 0, \"name\": \"x\", \"kind\": \"barrier\", \"family\": \"world\", \"bytes\": 0,"
      " \"dtype\": \"none\", \"parent\": 3}]}", "op 0 ('x'): parent 3 names no op (the plan has 1 ops)" },
    /* p2p: src and dst, on p2p only, two ranks of the world */
    { "{\"schema\": \"shardplan-plan\", \"schema_version\": 1, \"world_size\": 8, \"ops\": "
      "[{\"id\": 0, \"name\": \"x\", \"kind\": \"p2p\", \"family\": \"world\", \"bytes\": 8,"
      " \"dtype\": \"uint8\", \"src\": 0}]}",
      "op 0 ('x'): missing key 'dst': a p2p op names its sender and receiver" },
    { "{\"schema\": \"shardplan-plan\", \"schema_version\": 1, \"world_size\": 8, \"ops\": "
      "[{\"id\": 0, \"name\": \"x\", \"kind\": \"send\", \"family\": \"world\", \"bytes\": 8,"
      " \"dtype\": \"uint8\", \"src\": 0, \"dst\": 1}]}",
      "op 0 ('x'): key 'src' on kind send: only p2p ops have a sender and a receiver" },
    { "{\"schema\": \"shardplan-plan\", \"schema_version\": 1, \"world_size\": 8, \"ops\": "
      "[{\"id\": 0, \"name\": \"x\", \"kind\": \"p2p\", \"family\": \"world\", \"bytes\": 8,"
      " \"dtype\": \"uint8\", \"src\": 3, \"dst\": 3}]}",
      "op 0 ('x'): src and dst are both group rank 3: a p2p op sends to another member" },
    { "{\"schema\": \"shardplan-plan\", \"schema_version\": 1, \"world_size\": 8, \"ops\": "
      "[{\"id\": 0, \"name\": \"x\", \"kind\": \"p2p\", \"family\": \"world\", \"bytes\": 8,"
      " \"dtype\": \"uint8\", \"src\": 0, \"dst\": 8}]}",
      "op 0 ('x'): dst 8 is not a group rank of a 8-rank world" },
    { "{\"schema\": \"shardplan-plan\", \"schema_version\": 1, \"world_size\": 8, \"ops\": "
      "[{\"id\": 0, \"name\": \"x\", \"kind\": \"p2p\", \"family\": \"world\", \"bytes\": 8,"
      " \"dtype\": \"uint8\", \"src\": -1, \"dst\": 1}]}",
      "op 0 ('x'): 'src' must be an integer in [0, 4294967295], got -1" },
    /* syntax */
    { "", "not valid JSON at 1:1: unexpected end of input" },
    { "{\"schema\": \"shardplan-plan\"} x", "not valid JSON at 1:30: unexpected data after" },
    { "{\"schema\": 01}", "leading zeros" },
    { "{\"schema\": 1.}", "digits must follow '.'" },
    { "{\"schema\": \"a\\qb\"}", "bad escape" },
    { "{\"schema\": \"\\ud800\"}", "unpaired UTF-16 surrogate" },
    { "{\"schema\": \"a\tb\"}", "control character 0x09" },
    { "{\"schema\": \"\xff\"}", "not valid UTF-8" },
    { "{\"schema\": [1, 2,]}", "unexpected character ']'" },
    { "{\"schema\": {\"a\": 1,}}", "expected a member name" },
    { "{\"schema\" 1}", "expected ':'" },
    { "{\"schema\": tru}", "unexpected character 't'" },
    { "{\"schema\": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
      "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
      "nested deeper than" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (SpPlan) plan = sp_plan_from_json (cases[i].json, -1, 0, &error);
      ck_assert_msg (plan == NULL, "case %u loaded", i);
      SP_ASSERT_ERROR (error, SP_ERROR_INVALID_PLAN);
      ck_assert_msg (strstr (error->message, cases[i].part) != NULL, "case %u: '%s' lacks '%s'", i,
                     error->message, cases[i].part);
    }
}
END_TEST

/* Any key order, escapes and whitespace read the same as the canonical form. */
START_TEST (test_key_order_and_escapes)
{
  const char *json =
    "\r\n\t{ \"ops\" : [ { \"dtype\": \"bf16\", \"bytes\": 64, \"family\": \"shard\","
    " \"kind\": \"allgather\", \"name\": \"caf\\u00e9 \\ud83d\\ude00 \\\"q\\\" \\/\", \"id\": 0,"
    " \"layer\": -0 } ], \"groups\": {\"shard_size\": 4}, \"meta\": {\"b\": \"2\", \"a\": \"1\"},"
    " \"world_size\": 8, \"schema_version\": 1, \"schema\": \"shardplan-plan\" }\n";
  g_autoptr (GError) error = NULL;
  g_autoptr (SpPlan) plan = sp_plan_from_json (json, -1, 8, &error);
  SP_ASSERT_NO_ERROR (error);
  const SpOp *op = sp_plan_op (plan, 0);
  ck_assert_str_eq (op->name, "caf\xc3\xa9 \xf0\x9f\x98\x80 \"q\" /");
  ck_assert_int_eq (op->kind, SP_COLL_ALL_GATHER);
  ck_assert_int_eq (op->dtype, SP_DTYPE_BFLOAT16);
  ck_assert_uint_eq (op->count, 32);
  ck_assert_int_eq (op->layer, 0);
  ck_assert_str_eq (sp_plan_get_meta (plan, "a"), "1");
  ck_assert_uint_eq (sp_plan_groups_options (plan)->devices_per_node, 8);  /* the default */

  g_autofree char *canon = sp_plan_to_json (plan);
  g_autoptr (SpPlan) again = sp_plan_from_json (canon, -1, 8, &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert (sp_plan_equal (plan, again));
  ck_assert (strstr (canon, "\"meta\": {\"a\": \"1\", \"b\": \"2\"}") != NULL);
}
END_TEST

/* Every proper prefix of a valid plan, and every single-byte corruption,
 * is an error or a plan — never a crash (run under the sanitizers). */
START_TEST (test_truncations_and_corruptions)
{
  g_autofree char *path = sp_test_fixture ("plan/golden-small.json");
  g_autofree char *text = NULL;
  gsize len = 0;
  ck_assert (g_file_get_contents (path, &text, &len, NULL));
  gsize end = len;
  while (end > 0 && g_ascii_isspace (text[end - 1]))
    end--;
  for (gsize n = 0; n < end; n++)
    {
      g_autoptr (GError) error = NULL;
      g_autofree char *copy = g_strndup (text, n);  /* a separate allocation: ASan sees overreads */
      g_autoptr (SpPlan) plan = sp_plan_from_json (copy, (gssize) n, 0, &error);
      ck_assert_msg (plan == NULL, "prefix of %" G_GSIZE_FORMAT " bytes loaded", n);
      SP_ASSERT_ERROR (error, SP_ERROR_INVALID_PLAN);
    }
  static const char junk[] = { '"', '\\', '{', '}', '[', ']', ',', ':', '0', '-', 'x', '\0', '\n' };
  GRand *rng = g_rand_new_with_seed (11);
  for (gsize i = 0; i < len; i++)
    {
      g_autofree char *copy = g_memdup2 (text, len);
      copy[i] = junk[g_rand_int_range (rng, 0, G_N_ELEMENTS (junk))];
      g_autoptr (GError) error = NULL;
      g_autoptr (SpPlan) plan = sp_plan_from_json (copy, (gssize) len, 0, &error);
      ck_assert ((plan == NULL) == (error != NULL));
    }
  g_rand_free (rng);
}
END_TEST

START_TEST (test_save_errors)
{
  SpGroupsOptions g = small_groups ();
  g_autoptr (SpPlan) plan = sp_plan_new (&g);
  g_autoptr (SpTestDir) dir = sp_test_tmpdir ();
  g_autofree char *path = g_build_filename (dir, "missing-dir", "plan.json", NULL);
  g_autoptr (GError) error = NULL;
  ck_assert (!sp_plan_save (plan, path, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_IO);
  ck_assert (!g_file_test (path, G_FILE_TEST_EXISTS));
}
END_TEST

/* Writes `text` into the FIFO `path` (opening blocks until the reader
 * opens it). */
static gpointer
fifo_writer (gpointer path)
{
  g_autofree char *text = NULL;
  gsize len = 0;
  g_autofree char *golden = sp_test_fixture ("plan/golden-small.json");
  if (g_file_get_contents (golden, &text, &len, NULL))
    {
      FILE *f = fopen (path, "wb");
      if (f)
        {
          fwrite (text, 1, len, f);
          fclose (f);
        }
    }
  return NULL;
}

/* sp_plan_load reads at most SP_PLAN_MAX_FILE_BYTES: a larger regular file
 * is refused from its size before anything is read or allocated (a sparse
 * file here, so that the test writes nothing); a file whose size stat()
 * cannot tell (a FIFO: 0) is read as its bytes arrive; a directory and a
 * truncated plan are refused naming the file. */
START_TEST (test_load_bounded)
{
  g_autoptr (SpTestDir) dir = sp_test_tmpdir ();
  g_autofree char *huge = g_build_filename (dir, "huge.json", NULL);
  FILE *f = fopen (huge, "wb");
  ck_assert_ptr_nonnull (f);
  ck_assert_int_eq (ftruncate (fileno (f), (off_t) SP_PLAN_MAX_FILE_BYTES + 1), 0);
  fclose (f);
  g_autoptr (GError) error = NULL;
  g_autoptr (SpPlan) plan = sp_plan_load (huge, 0, &error);
  ck_assert_ptr_null (plan);
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_ARGUMENT);
  g_autofree char *want = g_strdup_printf ("%s: 1073741825 bytes is larger than any plan "
                                           "(limit 1073741824)", huge);
  ck_assert_str_eq (error->message, want);
  g_clear_error (&error);

  plan = sp_plan_load (dir, 0, &error);
  ck_assert_ptr_null (plan);
  SP_ASSERT_ERROR (error, SP_ERROR_IO);
  ck_assert_msg (strstr (error->message, dir) && strstr (error->message, "is a directory"), "%s",
                 error->message);
  g_clear_error (&error);

  g_autofree char *cut = g_build_filename (dir, "cut.json", NULL);
  g_autofree char *golden = sp_test_fixture ("plan/golden-small.json");
  g_autofree char *text = NULL;
  gsize len = 0;
  ck_assert (g_file_get_contents (golden, &text, &len, NULL));
  ck_assert (g_file_set_contents (cut, text, (gssize) len / 2, NULL));
  plan = sp_plan_load (cut, 0, &error);
  ck_assert_ptr_null (plan);
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_PLAN);
  ck_assert_msg (g_str_has_prefix (error->message, cut), "%s", error->message);
  g_clear_error (&error);

  g_autofree char *fifo = g_build_filename (dir, "plan.fifo", NULL);
  ck_assert_int_eq (mkfifo (fifo, 0600), 0);
  GThread *writer = g_thread_new ("fifo", fifo_writer, fifo);
  plan = sp_plan_load (fifo, 8, &error);
  g_thread_join (writer);
  SP_ASSERT_NO_ERROR (error);
  ck_assert_ptr_nonnull (plan);
}
END_TEST

static Suite *
plan_suite (void)
{
  Suite *s = suite_create ("plan");
  TCase *tc = tcase_create ("model");
  tcase_add_test (tc, test_build_and_get);
  tcase_add_test (tc, test_add_op_rejects);
  tcase_add_test (tc, test_meta);
  suite_add_tcase (s, tc);
  tc = tcase_create ("json");
  tcase_add_loop_test (tc, test_round_trip_random, 0, 40);
  tcase_add_test (tc, test_equal_detects_change);
  tcase_add_test (tc, test_golden_and_digest);
  tcase_add_test (tc, test_defaults_accepted);
  tcase_add_test (tc, test_world_size_mismatch);
  tcase_add_test (tc, test_bad_strings);
  tcase_add_test (tc, test_key_order_and_escapes);
  tcase_add_test (tc, test_truncations_and_corruptions);
  tcase_add_test (tc, test_save_errors);
  tcase_add_test (tc, test_load_bounded);
  suite_add_tcase (s, tc);
  tc = tcase_create ("bad-files");
  tcase_add_loop_test (tc, test_bad_file, 0, G_N_ELEMENTS (bad_cases));
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  return sp_test_run (plan_suite ());
}
