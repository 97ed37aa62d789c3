/* tests/exec/check-trace.c — checks a measured trace against its plan, row
 * by row (used by tests/exec/run-*.sh):
 *
 *   check-trace TRACE PLAN MODE ITERS WARMUP [CHECK]
 *
 * Expectations are derived independently of the executor, from the plan
 * and the group families: every (op, iter, rank) that should run has
 * exactly one row — a rank runs an op when it is in a group of the op's
 * family (kernels everywhere; compute only in replay mode; a composite's
 * sub-ops where the composite runs) — with the plan's coll, dtype, redop,
 * bytes and count, the group's id/rank/size, status ok, the root attribute
 * check_policy equal to CHECK, the CHECKED flag on
 * checked kinds when CHECK (the run's --check: after, the default, or
 * every) checks and on no row when it is none, nccl_est_ns -1 (MPI has no
 * NCCL estimate; on NCCL, /meta/software backend = "nccl", a plain
 * collective may have one, the same in every iteration), 0 <= dur = end -
 * start, and times that
 * never go backwards on one rank: in isolated mode every op of a rank starts
 * after the previous one ended, iteration after iteration; the stage rows of
 * reduce_scatter_coalesced and qgZ lie inside their composite's span.
 * Prints the first problems and exits 1, or prints "ok N rows" and exits 0. */
#include "config.h"
#include "shardplan/shardplan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int problems;

#define BAD(...)                                                                  \
  do {                                                                            \
    if (problems++ < 20)                                                          \
      {                                                                           \
        fprintf (stderr, "check-trace: ");                                        \
        fprintf (stderr, __VA_ARGS__);                                            \
        fputc ('\n', stderr);                                                     \
      }                                                                           \
  } while (0)

static gboolean
runs_on (const SpPlan *plan, const SpGroups *g, const SpOp *op, guint32 rank, gboolean replay)
{
  if (op->parent >= 0)
    {
      const SpOp *p = sp_plan_op (plan, (guint32) op->parent);
      if (p->kind == SP_COLL_REDUCE_SCATTER_COALESCED || p->kind == SP_COLL_ALL_TO_ALL_QUANT_REDUCE)
        return runs_on (plan, g, p, rank, replay);
    }
  if (op->kind == SP_COLL_COMPUTE)
    return replay;
  return sp_plan_op_find (g, op, rank, NULL, NULL); /* p2p: its two ranks */
}

int
main (int argc, char **argv)
{
  if (argc != 6 && argc != 7)
    {
      fprintf (stderr, "usage: check-trace TRACE PLAN isolated|replay ITERS WARMUP [after|every|none]\n");
      return 2;
    }
  const char *policy = argc == 7 ? argv[6] : "after";
  if (strcmp (policy, "after") != 0 && strcmp (policy, "every") != 0 && strcmp (policy, "none") != 0)
    {
      fprintf (stderr, "check-trace: CHECK '%s' is not one of after, every, none\n", policy);
      return 2;
    }
  const gboolean checks = strcmp (policy, "none") != 0;
  GError *e = NULL;
  g_autoptr (SpTrace) tr = sp_trace_open (argv[1], &e);
  g_autoptr (SpPlan) plan = tr ? sp_plan_load (argv[2], 0, &e) : NULL;
  if (!plan)
    {
      fprintf (stderr, "check-trace: %s\n", e->message);
      return 1;
    }
  const gboolean replay = strcmp (argv[3], "replay") == 0;
  const guint32 iters = (guint32) atoi (argv[4]), warmup = (guint32) atoi (argv[5]);
  g_autoptr (SpGroups) groups = sp_groups_build (sp_plan_groups_options (plan), &e);
  const guint32 W = sp_plan_world_size (plan), n_ops = sp_plan_n_ops (plan);
  const SpTraceHeader *h = sp_trace_header (tr);
  if (!sp_trace_is_complete (tr))
    BAD ("trace is partial: %s", sp_trace_incomplete_reason (tr));
  if (h->source != SP_TRACE_SOURCE_MEASURED || strcmp (h->timing_mode, argv[3]) != 0 ||
      h->iters != iters || h->warmup_iters != warmup || h->world_size != W ||
      g_strcmp0 (h->check_policy, policy) != 0)
    BAD ("root attributes: source %d mode %s iters %u warmup %u world %u check_policy %s", h->source,
         h->timing_mode, h->iters, h->warmup_iters, h->world_size,
         h->check_policy ? h->check_policy : "(none)");
  g_autofree char *digest = sp_plan_digest (plan);
  if (g_strcmp0 (sp_trace_plan_digest (tr), digest) != 0)
    BAD ("plan digest differs");
  gsize n_ranks = 0;
  const SpTraceRank *ranks = sp_trace_ranks (tr, &n_ranks);
  if (n_ranks != W)
    BAD ("%zu rank rows, expected %u", n_ranks, W);
  for (gsize r = 0; r < n_ranks; r++)
    if (ranks[r].rank != r)
      BAD ("ranks row %zu says rank %u", r, ranks[r].rank);
  if (!sp_trace_software (tr, "mpi") || !sp_trace_software (tr, "hdf5"))
    BAD ("software versions missing");
  const gboolean nccl = g_strcmp0 (sp_trace_software (tr, "backend"), "nccl") == 0;

  guint64 nr = sp_trace_n_rows (tr);
  g_autofree SpTraceRow *rows = g_new (SpTraceRow, MAX (nr, 1));
  if (!sp_trace_read_rows (tr, 0, nr, rows, &e))
    {
      fprintf (stderr, "check-trace: %s\n", e->message);
      return 1;
    }
  /* index[(iter·W + rank)·n_ops + op] = row + 1 */
  g_autofree guint64 *index = g_new0 (guint64, (gsize) iters * W * n_ops);
  for (guint64 i = 0; i < nr; i++)
    {
      const SpTraceRow *r = &rows[i];
      if (r->op_id >= n_ops || r->rank >= W || r->iter < 0 || (guint32) r->iter >= iters)
        {
          BAD ("row %" G_GUINT64_FORMAT ": op %u iter %d rank %u out of range", i, r->op_id, r->iter, r->rank);
          continue;
        }
      guint64 *slot = &index[((gsize) r->iter * W + r->rank) * n_ops + r->op_id];
      if (*slot)
        BAD ("duplicate row for op %u iter %d rank %u", r->op_id, r->iter, r->rank);
      *slot = i + 1;
    }
  guint64 expected = 0;
  g_autofree gint64 *last_end = g_new (gint64, W);
  for (guint32 rk = 0; rk < W; rk++)
    last_end[rk] = G_MININT64;
  for (guint32 it = 0; it < iters; it++)
    for (guint32 rk = 0; rk < W; rk++)
      {
        gint64 prev_end = last_end[rk];
        for (guint32 o = 0; o < n_ops; o++)
          {
            const SpOp *op = sp_plan_op (plan, o);
            guint64 slot = index[((gsize) it * W + rk) * n_ops + o];
            gboolean want = runs_on (plan, groups, op, rk, replay);
            if (!want)
              {
                if (slot)
                  BAD ("op %u (%s) has a row on rank %u, which is in no group of %s", o, op->name, rk,
                       sp_family_name (op->family));
                continue;
              }
            expected++;
            if (!slot)
              {
                BAD ("op %u (%s) iter %u rank %u: no row", o, op->name, it, rk);
                continue;
              }
            const SpTraceRow *r = &rows[slot - 1];
            guint32 gi = 0, gr = 0, gs = 1;
            guint32 gid = SP_TRACE_NO_GROUP;
            if (op->family != SP_FAMILY_NONE && sp_groups_find (groups, op->family, rk, &gi, &gr))
              {
                sp_groups_members (groups, op->family, gi, &gs);
                gid = sp_trace_group_id (groups, op->family, gi);
              }
            if (r->coll != op->kind || r->dtype != op->dtype || r->redop != op->redop ||
                r->bytes != op->bytes || r->count != op->count || r->parent_op_id != op->parent)
              BAD ("op %u iter %u rank %u: coll/dtype/redop/bytes/count/parent differ from the plan", o, it, rk);
            if (r->group_id != gid || r->group_rank != gr || r->group_size != gs)
              BAD ("op %u iter %u rank %u: group %u/%u/%u, expected %u/%u/%u", o, it, rk, r->group_id,
                   r->group_rank, r->group_size, gid, gr, gs);
            if (r->status != SP_TRACE_STATUS_OK)
              BAD ("op %u iter %u rank %u: status %s", o, it, rk, sp_trace_status_name (r->status));
            gboolean checked = checks && op->kind != SP_COLL_COMPUTE && op->kind != SP_COLL_BARRIER &&
                               op->kind != SP_COLL_HIER_ALL_GATHER;
            if (checked != !!(r->flags & SP_TRACE_FLAG_CHECKED))
              BAD ("op %u iter %u rank %u: CHECKED flag %s", o, it, rk, checked ? "missing" : "set");
            /* NCCL's estimate: none on MPI; on NCCL only for plain
             * collectives (-1 where NCCL gave none, e.g. on one rank),
             * the same value on every iteration of an (op, rank). */
            gboolean may_est = nccl && op->parent < 0 && !sp_coll_is_composite (op->kind) &&
                               op->kind != SP_COLL_COMPUTE && op->kind != SP_COLL_QUANTIZE &&
                               op->kind != SP_COLL_DEQUANTIZE;
            if (may_est ? r->nccl_est_ns < -1 : r->nccl_est_ns != -1)
              BAD ("op %u iter %u rank %u: nccl_est_ns %" G_GINT64_FORMAT ", expected %s", o, it, rk,
                   r->nccl_est_ns, may_est ? ">= -1" : "-1");
            if (may_est && it > 0)
              {
                guint64 first = index[((gsize) 0 * W + rk) * n_ops + o];
                if (first && rows[first - 1].nccl_est_ns != r->nccl_est_ns)
                  BAD ("op %u rank %u: nccl_est_ns %" G_GINT64_FORMAT " in iteration %u, %" G_GINT64_FORMAT
                       " in iteration 0", o, rk, r->nccl_est_ns, it, rows[first - 1].nccl_est_ns);
              }
            if (op->kind == SP_COLL_COMPUTE && !(r->flags & SP_TRACE_FLAG_MODELLED))
              BAD ("op %u: compute row without the MODELLED flag", o);
            if (r->t_end_ns < r->t_start_ns || r->dur_ns != r->t_end_ns - r->t_start_ns ||
                r->t_enqueue_ns > r->t_start_ns)
              BAD ("op %u iter %u rank %u: times enqueue %" G_GINT64_FORMAT " start %" G_GINT64_FORMAT
                   " end %" G_GINT64_FORMAT " dur %" G_GINT64_FORMAT, o, it, rk, r->t_enqueue_ns,
                   r->t_start_ns, r->t_end_ns, r->dur_ns);
            if (op->parent >= 0)
              {
                guint64 ps = index[((gsize) it * W + rk) * n_ops + (guint32) op->parent];
                if (ps && (r->t_start_ns < rows[ps - 1].t_start_ns || r->t_end_ns > rows[ps - 1].t_end_ns))
                  BAD ("op %u iter %u rank %u: outside its composite's span", o, it, rk);
              }
            /* Monotone on one rank in isolated mode (composite rows span
             * their stages and are skipped; stages follow each other). */
            if (!replay && !sp_coll_is_composite (op->kind))
              {
                if (r->t_start_ns < prev_end)
                  BAD ("op %u iter %u rank %u starts before the previous op ended", o, it, rk);
                prev_end = r->t_end_ns;
              }
          }
        last_end[rk] = prev_end; /* the next iteration starts after this one */
      }
  if (nr != expected)
    BAD ("%" G_GUINT64_FORMAT " rows, expected %" G_GUINT64_FORMAT, nr, expected);
  if (problems)
    {
      fprintf (stderr, "check-trace: %d problem(s)\n", problems);
      return 1;
    }
  printf ("ok %" G_GUINT64_FORMAT " rows\n", nr);
  return 0;
}
