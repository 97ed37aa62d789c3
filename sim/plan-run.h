/* sim/plan-run.h — what the two schedulers of sp_sim_run_plan_full() share:
 * the result layout and the run context.  plan-run.c is the list scheduler
 * over fixed collective costs (contention none / family, and the
 * compute-only pass); plan-step.c is the step-wide flow simulation
 * (contention step).  Not installed. */
#pragma once
#include "sim-internal.h"
#include "shardplan/plan.h"

G_BEGIN_DECLS

/* A span not (yet) set. */
#define SP_SPAN_UNSET G_MAXUINT64

typedef struct {
  guint64 start, end; /* ns since step start */
} SpSpan;

struct _SpSimResult {
  const SpGroups *groups;
  guint32 n_ops, world;
  guint64 *off;       /* per op: first span; off[n_ops] = number of spans */
  gboolean *per_rank; /* per op: spans indexed by rank (kernels, composites),
                         otherwise by group of the op's family */
  SpSpan *spans;
  guint64 *dur;       /* per op: longest span */
  guint64 step_ns, compute_only_ns, comm_ns;
  guint64 family_ns[SP_FAMILY_N];
  guint64 kind_ns[256];
  guint32 contention_fallbacks;
  SpSimContention contention; /* what was used (never DEFAULT) */
};

typedef struct {
  const SpTopo *topo;
  const SpTopoSpec *spec;
  SpSimModel model;
  SpSimContention contention; /* resolved (never DEFAULT) */
  const SpPlan *plan;
  const SpGroups *groups;
  guint32 W;
  double efficiency;          /* plan meta compute_efficiency */
  GArray *cache;              /* plan-run.c's per-shape cost cache */
  SpNet *net;                 /* built on first use, freed by the caller */
  guint32 contention_fallbacks;
  /* SpSimPlanOptions.progress: instances done / in both passes, and the
   * count at the last call */
  SpSimProgressFn progress;
  gpointer progress_data;
  guint64 progress_done, progress_total, progress_last;
} SpPlanCtx;

/* `n` more op instances simulated: a counter, and the options' progress
 * callback every SP_SIM_PROGRESS_EVERY of them. */
static inline void
sp_plan_progress (SpPlanCtx *c, guint64 n)
{
  c->progress_done += n;
  if (G_UNLIKELY (c->progress != NULL
                  && c->progress_done - c->progress_last >= SP_SIM_PROGRESS_EVERY))
    {
      c->progress_last = c->progress_done;
      c->progress (MIN (c->progress_done, c->progress_total), c->progress_total,
                   c->progress_data);
    }
}

/* Duration of a kernel op (compute / quantize / dequantize / quant_reduce), ns. */
guint64 sp_plan_kernel_ns (const SpPlanCtx *c, const SpOp *op);
/* Span of `op` on `rank`, NULL when the rank does not run it or it is unset. */
const SpSpan *sp_plan_span_at (const SpSimResult *res, const SpPlan *plan, guint32 op,
                               guint32 rank);
/* sp_sim_estimate() of collective `op` on the group m[0..n) with `model`
 * (its algorithm hint kept), ns; errors are prefixed with the op. */
gboolean sp_plan_op_estimate (const SpTopo *topo, SpSimModel model, const SpOp *op,
                              const guint32 *m, guint32 n, guint64 *out_ns, GError **error);
/* FALSE + SP_ERROR_UNSUPPORTED naming the op when its kind is not simulated. */
gboolean sp_plan_check_supported (const SpOp *op, GError **error);
/* TRUE when two group shapes cost the same (every field the model reads). */
gboolean sp_plan_shape_equal (const SpShape *a, const SpShape *b);
/* Set the spans of composite `parent` (every rank: its sub-ops' first start
 * to last end; sub-ops are parent->id + 1 … last).  Fails loud when a rank
 * of the composite's family ran none of its sub-ops. */
gboolean sp_plan_composite_spans (const SpPlanCtx *c, SpSimResult *res, const SpOp *parent,
                                  guint32 last, GError **error);

/* The step-wide flow simulation (plan-step.c): every collective op instance
 * (op, group) a job on ONE flow engine, started when its group is ready;
 * kernels fixed-duration timers.  Fills res->spans (every span, composites
 * included) and res->step_ns; adds the ops it had to cost alone to
 * c->contention_fallbacks.  `last_sub`: per op, its last sub-op or -1;
 * `stream_of`: per op, its stream's index (< n_streams; composites
 * G_MAXUINT32). */
gboolean sp_plan_run_step (SpPlanCtx *c, SpSimResult *res, const gint64 *last_sub,
                           const guint32 *stream_of, guint32 n_streams, GError **error);

G_END_DECLS
