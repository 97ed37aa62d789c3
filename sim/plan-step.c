/* Contention "step" of sp_sim_run_plan_full() (sim/shardplan/sim.h): the
 * whole training step as ONE discrete-event run on one flow engine.
 *
 * Every collective op instance (op, group of its family) is a job of the
 * engine (sp_des_coll_new), added when the group is ready: its deps are
 * done on every member, and on every member the op is the next of its
 * stream.  Jobs that run at the same time share links by max-min fairness
 * (engine.c), so a prefetch all-gather on one stream and a reduce-scatter
 * on another slow each other down where they share NICs or NVLink ports.
 * Kernels are jobs without flows: one per (op, start time), holding every
 * rank that became ready for the op at that time, ending after the
 * kernel's fixed duration.  Instances of zero duration (a group of one
 * rank, zero bytes, a kernel of 0 ns) complete at once through a work list,
 * without an engine job.  The engine's done callback marks the instance's
 * spans and wakes what waits on its ranks (the next op of the stream, the
 * op's dependants, the dependants of a composite whose last sub-op it was).
 *
 * Determinism: the engine orders events by (time, insertion sequence) and
 * completes flows in array order; this file adds jobs in an order fixed by
 * those callbacks and by loops over ranks / groups in index order. */
#include "config.h"
#include "plan-run.h"
#include "sim-testing.h"

#include <string.h>

#define NONE32 G_MAXUINT32

guint64 sp_sim_testing_max_flows = 0;

static guint64
max_flows (void)
{
  return sp_sim_testing_max_flows ? sp_sim_testing_max_flows : SP_DES_MAX_FLOWS;
}

typedef enum { JOB_KERNEL, JOB_COLL, JOB_FIXED } JobKind;

/* What engine job `id` is: jobs->data[id]. */
typedef struct {
  JobKind kind;
  guint32 op;
  guint32 index;   /* JOB_KERNEL: batch; otherwise the group */
  guint64 start;
  SpDesColl *dc;   /* JOB_COLL until it ends */
  guint64 flows;   /* JOB_COLL: flow bound counted in flight */
} JobInfo;

/* A zero-duration instance waiting to complete at the current time. */
typedef struct {
  guint32 op, index; /* index: group (collectives) or rank (kernels) */
} Work;

/* The groups of one family by shape class (groups of one shape cost the
 * same); for p2p ops, the (src, dst) pairs of the family's groups. */
typedef struct {
  gboolean built;
  guint32 *cls;  /* per group: class, NONE32 for a group of ≤ 1 rank */
  GArray *shapes; /* SpShape per class */
  SpFamily family;
  guint32 src, dst; /* p2p pairs (pair_fams) */
} FamShapes;

/* A collective's cost per shape class, shared by every op of one (kind,
 * bytes, family, algorithm). */
typedef struct {
  SpColl kind;
  guint64 bytes;
  SpFamily family;
  SpAlgo algo;
  guint32 src, dst;  /* p2p */
  FamShapes *fs;     /* the groups' shape classes */
  SpCost *cost;      /* per class */
  guint64 *flows;    /* per class: bound on the flows one phase adds */
  guint64 *alone_ns; /* per class: the group alone (des), SP_SPAN_UNSET until needed */
} StepCost;

typedef struct {
  SpPlanCtx *c;
  SpSimResult *res;
  SpEngine *eng;
  const SpPlan *plan;
  guint32 n_ops, W;
  const guint32 *stream_of;
  guint32 *stream_off, *stream_ops; /* ops of each stream in plan order (CSR) */
  guint32 *pos;                     /* per (stream, rank): index into stream_ops of the
                                       rank's next op there */
  guint32 *dep_off, *dep_list;      /* per op: the ops that wait for it (CSR) */
  gint32 *comp_index;               /* per op: index among composites, or -1 */
  guint32 *remaining;               /* per (composite, rank): sub-ops not done there */
  guint8 *arrived;                  /* bit per (op, rank): ready there already */
  guint32 *ready_count;             /* per collective span: members ready */
  guint64 *kernel_dur;              /* per op: kernel ns */
  guint32 *cost_of;                 /* per op: index into costs, NONE32 */
  FamShapes fam[SP_FAMILY_N];
  GPtrArray *pair_fams;             /* FamShapes of p2p ops, one per (family, src, dst) */
  GArray *costs;                    /* StepCost */
  GArray *jobs;                     /* JobInfo, indexed by engine job id */
  GPtrArray *batches;               /* GArray of guint32 ranks per kernel batch */
  guint32 *open_batch;              /* per op: the kernel job accepting ranks, or NONE32 */
  GArray *work;                     /* Work */
  gboolean *fell_back;              /* per op */
  guint64 in_flight_flows;
  GError *error;
} Step;

static gboolean
runs (const Step *s, const SpOp *op, guint32 r, guint32 *out_index)
{
  if (op->family == SP_FAMILY_NONE)
    {
      *out_index = r;
      return TRUE;
    }
  guint32 gr;
  return sp_plan_op_find (s->c->groups, op, r, out_index, &gr);
}

/* TRUE when op `d` no longer holds rank r back: done there, or not run there. */
static gboolean
done_on (const Step *s, guint32 d, guint32 r)
{
  const SpOp *op = sp_plan_op (s->plan, d);
  if (s->comp_index[d] >= 0)
    return s->remaining[(gsize) s->comp_index[d] * s->W + r] == 0;
  guint32 i;
  if (!runs (s, op, r, &i))
    return TRUE;
  return s->res->spans[s->res->off[d] + i].end != SP_SPAN_UNSET;
}

static void launch_group (Step *s, guint32 o, guint32 g);

static void
push_work (Step *s, guint32 o, guint32 index)
{
  Work w = { o, index };
  g_array_append_val (s->work, w);
}

static void
nop_phase (SpEngine *engine, guint32 job, guint32 phase, gpointer data)
{
  (void) engine;
  (void) job;
  (void) phase;
  (void) data;
}

static guint32
add_timer_job (Step *s, JobKind kind, guint32 o, guint32 index, guint64 dur)
{
  guint64 now = sp_engine_now (s->eng);
  guint32 id = sp_engine_add_job (s->eng, now, 1, &dur, nop_phase, NULL, sp_plan_op (s->plan, o)->name);
  g_assert (id == s->jobs->len); /* every job of this engine is added here or in launch_group */
  JobInfo ji = { kind, o, index, now, NULL, 0 };
  g_array_append_val (s->jobs, ji);
  return id;
}

static void
kernel_arrive (Step *s, guint32 o, guint32 r)
{
  guint64 now = sp_engine_now (s->eng);
  s->res->spans[s->res->off[o] + r].start = now;
  if (s->kernel_dur[o] == 0)
    {
      push_work (s, o, r);
      return;
    }
  guint32 j = s->open_batch[o];
  if (j == NONE32 || g_array_index (s->jobs, JobInfo, j).start != now)
    {
      g_ptr_array_add (s->batches, g_array_new (FALSE, FALSE, sizeof (guint32)));
      j = add_timer_job (s, JOB_KERNEL, o, s->batches->len - 1, s->kernel_dur[o]);
      s->open_batch[o] = j;
    }
  GArray *b = g_ptr_array_index (s->batches, g_array_index (s->jobs, JobInfo, j).index);
  g_array_append_val (b, r);
}

/* Rank r may be ready for op o: check, and count it in. */
static void
try_start (Step *s, guint32 o, guint32 r)
{
  gsize bit = (gsize) o * s->W + r;
  if (s->arrived[bit >> 3] & (1u << (bit & 7)))
    return;
  guint32 si = s->stream_of[o];
  guint32 p = s->pos[(gsize) si * s->W + r];
  if (p >= s->stream_off[si + 1] || s->stream_ops[p] != o)
    return; /* not the rank's next op on its stream (or not run there) */
  const SpOp *op = sp_plan_op (s->plan, o);
  const SpOp *parent = op->parent >= 0 ? sp_plan_op (s->plan, (guint32) op->parent) : NULL;
  for (int k = 0; k < 2; k++)
    {
      const SpOp *x = k == 0 ? op : parent;
      for (guint32 i = 0; x != NULL && i < x->n_deps; i++)
        if (!done_on (s, x->deps[i], r))
          return;
    }
  s->arrived[bit >> 3] |= (guint8) (1u << (bit & 7));
  if (op->family == SP_FAMILY_NONE)
    {
      kernel_arrive (s, o, r);
      return;
    }
  guint32 g, n, pair[2];
  runs (s, op, r, &g);
  sp_plan_op_members (s->c->groups, op, g, pair, &n);
  if (++s->ready_count[s->res->off[o] + g] == n)
    launch_group (s, o, g);
}

/* Move rank r's cursor on stream si past position p to the next op it runs. */
static void
advance (Step *s, guint32 si, guint32 r, guint32 p)
{
  guint32 end = s->stream_off[si + 1], i;
  while (p < end && !runs (s, sp_plan_op (s->plan, s->stream_ops[p]), r, &i))
    p++;
  s->pos[(gsize) si * s->W + r] = p;
  if (p < end)
    try_start (s, s->stream_ops[p], r);
}

static void
wake_dependants (Step *s, guint32 o, guint32 r)
{
  for (guint32 i = s->dep_off[o]; i < s->dep_off[o + 1]; i++)
    try_start (s, s->dep_list[i], r);
}

/* Op o is done on rank r (its span is set): wake what waits on r. */
static void
on_done (Step *s, guint32 o, guint32 r)
{
  guint32 si = s->stream_of[o];
  advance (s, si, r, s->pos[(gsize) si * s->W + r] + 1);
  wake_dependants (s, o, r);
  const SpOp *op = sp_plan_op (s->plan, o);
  if (op->parent >= 0)
    {
      guint32 *left = &s->remaining[(gsize) s->comp_index[op->parent] * s->W + r];
      if (--*left == 0)
        wake_dependants (s, (guint32) op->parent, r);
    }
}

static void
group_done (Step *s, guint32 o, guint32 g)
{
  const SpOp *op = sp_plan_op (s->plan, o);
  s->res->spans[s->res->off[o] + g].end = sp_engine_now (s->eng);
  guint32 n, pair[2];
  const guint32 *m = sp_plan_op_members (s->c->groups, op, g, pair, &n);
  for (guint32 i = 0; i < n; i++)
    on_done (s, o, m[i]);
  sp_plan_progress (s->c, 1);
}

/* Complete the zero-duration instances queued at the current time (and
 * those their completion queues). */
static void
drain (Step *s)
{
  for (guint i = 0; i < s->work->len; i++)
    {
      Work w = g_array_index (s->work, Work, i);
      if (sp_plan_op (s->plan, w.op)->family == SP_FAMILY_NONE)
        {
          s->res->spans[s->res->off[w.op] + w.index].end = sp_engine_now (s->eng);
          on_done (s, w.op, w.index);
          sp_plan_progress (s->c, 1);
        }
      else
        group_done (s, w.op, w.index);
    }
  g_array_set_size (s->work, 0);
}

/* The group alone on the network (des), the fallback duration. */
static guint64
alone_ns (Step *s, StepCost *e, guint32 k, const SpOp *op, const guint32 *m, guint32 n,
          GError **error)
{
  if (e->alone_ns[k] != SP_SPAN_UNSET)
    return e->alone_ns[k];
  guint64 t;
  if (!sp_plan_op_estimate (s->c->topo, SP_SIM_DES, op, m, n, &t, error))
    return SP_SPAN_UNSET;
  return e->alone_ns[k] = t;
}

static void
launch_group (Step *s, guint32 o, guint32 g)
{
  const SpOp *op = sp_plan_op (s->plan, o);
  guint64 now = sp_engine_now (s->eng);
  s->res->spans[s->res->off[o] + g].start = now;
  StepCost *e = s->cost_of[o] == NONE32 ? NULL
                : &g_array_index (s->costs, StepCost, s->cost_of[o]);
  guint32 k = e != NULL ? e->fs->cls[g] : NONE32;
  if (op->bytes == 0 || k == NONE32 || s->error != NULL)
    {
      push_work (s, o, g);
      return;
    }
  guint32 n, pair[2];
  const guint32 *m = sp_plan_op_members (s->c->groups, op, g, pair, &n);
  const SpShape *sh = &g_array_index (e->fs->shapes, SpShape, k);
  guint64 flows = e->flows[k];
  if (e->cost[k].algo == SP_ALGO_DIRECT && op->kind == SP_COLL_ALL_TO_ALL)
    flows = sp_des_flow_bound (s->c->net, sh, &e->cost[k], op->kind, m, n);
  if (s->in_flight_flows + flows <= max_flows ())
    {
      SpDesColl *dc = sp_des_coll_new (s->eng, s->c->net, sh, &e->cost[k], op->kind, op->bytes,
                                       m, n, now, op->name, NULL);
      if (dc != NULL)
        {
          g_assert (sp_des_coll_job (dc) == s->jobs->len);
          JobInfo ji = { JOB_COLL, o, g, now, dc, flows };
          g_array_append_val (s->jobs, ji);
          s->in_flight_flows += flows;
          return;
        }
    }
  /* the engine cannot hold it now: the group's alone duration, counted */
  guint64 d = alone_ns (s, e, k, op, m, n, &s->error);
  if (d == SP_SPAN_UNSET)
    {
      push_work (s, o, g);
      return;
    }
  s->fell_back[o] = TRUE;
  add_timer_job (s, JOB_FIXED, o, g, d);
}

static void
job_done (SpEngine *engine, guint32 job, gpointer data)
{
  Step *s = data;
  JobInfo ji = g_array_index (s->jobs, JobInfo, job);
  guint64 now = sp_engine_now (engine);
  if (ji.kind == JOB_KERNEL)
    {
      GArray *b = g_ptr_array_index (s->batches, ji.index);
      g_ptr_array_index (s->batches, ji.index) = NULL;
      if (s->open_batch[ji.op] == job)
        s->open_batch[ji.op] = NONE32;
      const guint32 *rk = (const guint32 *) b->data;
      for (guint i = 0; i < b->len; i++)
        s->res->spans[s->res->off[ji.op] + rk[i]].end = now;
      for (guint i = 0; i < b->len; i++)
        on_done (s, ji.op, rk[i]);
      sp_plan_progress (s->c, b->len);
      g_array_free (b, TRUE);
    }
  else
    {
      if (ji.dc != NULL)
        {
          sp_des_coll_free (ji.dc);
          g_array_index (s->jobs, JobInfo, job).dc = NULL;
          s->in_flight_flows -= ji.flows;
        }
      group_done (s, ji.op, ji.index);
    }
  drain (s);
}

/* The shape classes of the groups op runs on: its family's, or for a p2p
 * op those of the family's (src, dst) pairs. */
static FamShapes *
family_shapes (Step *s, const SpOp *op, GError **error)
{
  SpFamily f = op->family;
  FamShapes *fs = &s->fam[f];
  if (op->kind == SP_COLL_P2P)
    {
      fs = NULL;
      for (guint i = 0; i < s->pair_fams->len && fs == NULL; i++)
        {
          FamShapes *x = s->pair_fams->pdata[i];
          if (x->family == f && x->src == op->src && x->dst == op->dst)
            fs = x;
        }
      if (fs == NULL)
        {
          fs = g_new0 (FamShapes, 1);
          fs->family = f;
          fs->src = op->src;
          fs->dst = op->dst;
          g_ptr_array_add (s->pair_fams, fs);
        }
    }
  if (fs->built)
    return fs;
  guint32 ng = sp_groups_n_groups (s->c->groups, f);
  fs->cls = g_new (guint32, ng ? ng : 1);
  fs->shapes = g_array_new (FALSE, FALSE, sizeof (SpShape));
  fs->built = TRUE;
  for (guint32 g = 0; g < ng; g++)
    {
      guint32 n, pair[2];
      const guint32 *m = sp_plan_op_members (s->c->groups, op, g, pair, &n);
      fs->cls[g] = NONE32;
      if (n <= 1)
        continue;
      SpShape sh;
      if (!sp_shape_init (&sh, s->c->spec, m, n, error))
        return NULL;
      guint k;
      for (k = 0; k < fs->shapes->len; k++)
        if (sp_plan_shape_equal (&g_array_index (fs->shapes, SpShape, k), &sh))
          break;
      if (k == fs->shapes->len)
        g_array_append_val (fs->shapes, sh);
      fs->cls[g] = k;
    }
  return fs;
}

/* The cost of op o's collective per shape class of its family, so that no
 * error (unsupported kind, no algorithm for a group) can surface mid-run. */
static gboolean
prepare_cost (Step *s, guint32 o, GError **error)
{
  const SpOp *op = sp_plan_op (s->plan, o);
  if (!sp_plan_check_supported (op, error))
    return FALSE;
  for (guint i = 0; i < s->costs->len; i++)
    {
      const StepCost *e = &g_array_index (s->costs, StepCost, i);
      if (e->kind == op->kind && e->bytes == op->bytes && e->family == op->family
          && e->algo == op->algorithm && e->src == op->src && e->dst == op->dst)
        {
          s->cost_of[o] = i;
          return TRUE;
        }
    }
  FamShapes *fs = family_shapes (s, op, error);
  if (fs == NULL)
    return FALSE;
  guint nc = MAX (fs->shapes->len, 1);
  StepCost e = { op->kind, op->bytes, op->family, op->algorithm, op->src, op->dst, fs,
                 g_new0 (SpCost, nc), g_new0 (guint64, nc), g_new (guint64, nc) };
  g_array_append_val (s->costs, e); /* owned by s->costs from here on */
  s->cost_of[o] = s->costs->len - 1;
  for (guint k = 0; k < nc; k++)
    e.alone_ns[k] = SP_SPAN_UNSET;
  for (guint k = 0; k < fs->shapes->len && op->bytes > 0; k++)
    {
      const SpShape *sh = &g_array_index (fs->shapes, SpShape, k);
      if (!sp_cost_choose (sh, op->kind, op->bytes, op->algorithm, SP_PROTO_AUTO, &e.cost[k],
                           error))
        {
          g_prefix_error (error, "op %u (%s): ", op->id, op->name);
          return FALSE;
        }
      guint32 g = 0, n, pair[2];
      while (fs->cls[g] != k)
        g++;
      const guint32 *m = sp_plan_op_members (s->c->groups, op, g, pair, &n);
      /* all_to_all: the representative group's bound (launch_group counts
       * each group's own) */
      e.flows[k] = sp_des_flow_bound (s->c->net, sh, &e.cost[k], op->kind, m, n);
      if (e.flows[k] > max_flows ())
        {
          /* never fits the engine: its alone duration, or the estimate's error */
          if (alone_ns (s, &g_array_index (s->costs, StepCost, s->cost_of[o]), k, op, m, n, error)
              == SP_SPAN_UNSET)
            return FALSE;
        }
    }
  return TRUE;
}

/* The static tables: streams, dependants, composites' sub-op counts. */
static gboolean
prepare (Step *s, const guint32 *stream_of, guint32 n_streams, GError **error)
{
  const SpPlan *plan = s->plan;
  guint32 n_ops = s->n_ops, W = s->W;
  s->stream_off = g_new0 (guint32, n_streams + 1);
  s->stream_ops = g_new (guint32, n_ops ? n_ops : 1);
  s->dep_off = g_new0 (guint32, n_ops + 1);
  s->comp_index = g_new (gint32, n_ops ? n_ops : 1);
  s->kernel_dur = g_new0 (guint64, n_ops ? n_ops : 1);
  s->cost_of = g_new (guint32, n_ops ? n_ops : 1);
  s->open_batch = g_new (guint32, n_ops ? n_ops : 1);
  s->fell_back = g_new0 (gboolean, n_ops ? n_ops : 1);
  guint32 n_comp = 0;
  for (guint32 o = 0; o < n_ops; o++)
    {
      const SpOp *op = sp_plan_op (plan, o);
      s->cost_of[o] = s->open_batch[o] = NONE32;
      s->comp_index[o] = sp_coll_is_composite (op->kind) ? (gint32) n_comp++ : -1;
      if (s->comp_index[o] >= 0)
        continue;
      s->stream_off[stream_of[o] + 1]++;
      const SpOp *parent = op->parent >= 0 ? sp_plan_op (plan, (guint32) op->parent) : NULL;
      for (guint32 i = 0; i < op->n_deps; i++)
        s->dep_off[op->deps[i] + 1]++;
      for (guint32 i = 0; parent != NULL && i < parent->n_deps; i++)
        s->dep_off[parent->deps[i] + 1]++;
      if (op->family == SP_FAMILY_NONE)
        s->kernel_dur[o] = sp_plan_kernel_ns (s->c, op);
      else if (!prepare_cost (s, o, error))
        return FALSE;
    }
  for (guint32 i = 0; i < n_streams; i++)
    s->stream_off[i + 1] += s->stream_off[i];
  for (guint32 o = 0; o < n_ops; o++)
    s->dep_off[o + 1] += s->dep_off[o];
  s->dep_list = g_new (guint32, s->dep_off[n_ops] ? s->dep_off[n_ops] : 1);
  g_autofree guint32 *fill = g_memdup2 (s->dep_off, sizeof (guint32) * (n_ops + 1));
  g_autofree guint32 *sfill = g_memdup2 (s->stream_off, sizeof (guint32) * (n_streams + 1));
  s->remaining = g_new0 (guint32, (gsize) MAX (n_comp, 1) * W);
  for (guint32 o = 0; o < n_ops; o++)
    {
      const SpOp *op = sp_plan_op (plan, o);
      if (s->comp_index[o] >= 0)
        continue;
      s->stream_ops[sfill[stream_of[o]]++] = o;
      const SpOp *parent = op->parent >= 0 ? sp_plan_op (plan, (guint32) op->parent) : NULL;
      for (guint32 i = 0; i < op->n_deps; i++)
        s->dep_list[fill[op->deps[i]]++] = o;
      for (guint32 i = 0; parent != NULL && i < parent->n_deps; i++)
        s->dep_list[fill[parent->deps[i]]++] = o;
      if (parent != NULL)
        {
          guint32 *left = s->remaining + (gsize) s->comp_index[parent->id] * W;
          for (guint32 r = 0; r < W; r++)
            {
              guint32 i;
              if (runs (s, op, r, &i))
                left[r]++;
            }
        }
    }
  s->pos = g_new (guint32, (gsize) MAX (n_streams, 1) * W);
  s->arrived = g_new0 (guint8, ((gsize) n_ops * W + 7) / 8 + 1);
  s->ready_count = g_new0 (guint32, s->res->off[n_ops] ? s->res->off[n_ops] : 1);
  return TRUE;
}

static void
step_clear (Step *s)
{
  for (guint i = 0; s->jobs != NULL && i < s->jobs->len; i++)
    sp_des_coll_free (g_array_index (s->jobs, JobInfo, i).dc);
  for (guint f = 0; f < SP_FAMILY_N; f++)
    {
      g_free (s->fam[f].cls);
      if (s->fam[f].shapes)
        g_array_free (s->fam[f].shapes, TRUE);
    }
  for (guint i = 0; s->pair_fams != NULL && i < s->pair_fams->len; i++)
    {
      FamShapes *fs = s->pair_fams->pdata[i];
      g_free (fs->cls);
      if (fs->shapes)
        g_array_free (fs->shapes, TRUE);
      g_free (fs);
    }
  if (s->pair_fams)
    g_ptr_array_free (s->pair_fams, TRUE);
  for (guint i = 0; s->costs != NULL && i < s->costs->len; i++)
    {
      StepCost *e = &g_array_index (s->costs, StepCost, i);
      g_free (e->cost);
      g_free (e->flows);
      g_free (e->alone_ns);
    }
  if (s->costs)
    g_array_free (s->costs, TRUE);
  if (s->jobs)
    g_array_free (s->jobs, TRUE);
  if (s->batches)
    g_ptr_array_free (s->batches, TRUE);
  if (s->work)
    g_array_free (s->work, TRUE);
  sp_engine_free (s->eng);
  g_free (s->stream_off);
  g_free (s->stream_ops);
  g_free (s->pos);
  g_free (s->dep_off);
  g_free (s->dep_list);
  g_free (s->comp_index);
  g_free (s->remaining);
  g_free (s->arrived);
  g_free (s->ready_count);
  g_free (s->kernel_dur);
  g_free (s->cost_of);
  g_free (s->open_batch);
  g_free (s->fell_back);
  g_clear_error (&s->error);
}

static void
free_batch (gpointer p)
{
  if (p != NULL)
    g_array_free (p, TRUE);
}

gboolean
sp_plan_run_step (SpPlanCtx *c, SpSimResult *res, const gint64 *last_sub,
                  const guint32 *stream_of, guint32 n_streams, GError **error)
{
  Step s = { 0 };
  s.c = c;
  s.res = res;
  s.plan = c->plan;
  s.n_ops = res->n_ops;
  s.W = c->W;
  s.stream_of = stream_of;
  s.pair_fams = g_ptr_array_new ();
  s.costs = g_array_new (FALSE, FALSE, sizeof (StepCost));
  s.jobs = g_array_new (FALSE, FALSE, sizeof (JobInfo));
  s.batches = g_ptr_array_new_with_free_func (free_batch);
  s.work = g_array_new (FALSE, FALSE, sizeof (Work));
  for (guint64 i = 0; i < res->off[res->n_ops]; i++)
    res->spans[i].start = res->spans[i].end = SP_SPAN_UNSET;
  if (c->net == NULL)
    c->net = sp_net_new (c->spec);
  gboolean ok = prepare (&s, stream_of, n_streams, error);
  if (ok)
    {
      s.eng = sp_engine_new (c->net, job_done, &s);
      /* time 0: every rank at the head of every stream */
      for (guint32 si = 0; si < n_streams; si++)
        for (guint32 r = 0; r < s.W; r++)
          advance (&s, si, r, s.stream_off[si]);
      drain (&s);
      ok = sp_engine_run (s.eng, error);
    }
  if (ok && s.error != NULL)
    {
      g_propagate_error (error, s.error);
      s.error = NULL;
      ok = FALSE;
    }
  guint64 step = 0;
  for (guint32 o = 0; ok && o < s.n_ops; o++)
    {
      const SpOp *op = sp_plan_op (s.plan, o);
      if (sp_coll_is_composite (op->kind))
        ok = sp_plan_composite_spans (c, res, op, (guint32) last_sub[o], error);
      else
        for (guint64 i = res->off[o]; i < res->off[o + 1]; i++)
          if (res->spans[i].end != SP_SPAN_UNSET)
            step = MAX (step, res->spans[i].end);
      c->contention_fallbacks += s.fell_back[o];
    }
  res->step_ns = step;
  step_clear (&s);
  return ok;
}
