/* The sample trace of trace-sample.h. */
#include "config.h"
#include "trace-sample.h"

void
sp_sample_op_row (SpTraceRow *row, const SpGroups *groups, guint32 op_id, const SpOp *op,
                  guint32 rank, gint32 iter, gint64 dur_ns)
{
  sp_trace_row_init (row);
  row->op_id = op_id;
  row->iter = iter;
  row->rank = rank;
  if (op->family != SP_FAMILY_NONE)
    {
      guint32 index = 0, group_rank = 0, size = 0;
      g_assert_true (sp_groups_find (groups, op->family, rank, &index, &group_rank));
      sp_groups_members (groups, op->family, index, &size);
      row->group_id = sp_trace_group_id (groups, op->family, index);
      row->group_rank = group_rank;
      row->group_size = size;
    }
  row->coll = op->kind;
  row->dtype = op->dtype;
  row->redop = op->redop;
  row->status = SP_TRACE_STATUS_OK;
  row->count = op->count;
  row->bytes = op->bytes;
  row->dur_ns = dur_ns;
  row->t_end_ns = row->t_start_ns + dur_ns;
}

SpGroups *
sp_sample_groups (void)
{
  SpGroupsOptions opts;
  sp_groups_options_init (&opts);
  opts.world_size = SP_SAMPLE_WORLD;
  opts.devices_per_node = 4;
  opts.shard_size = 4;
  g_autoptr (GError) error = NULL;
  SpGroups *g = sp_groups_build (&opts, &error);
  g_assert_no_error (error);
  return g;
}

SpPlan *
sp_sample_plan (const SpGroups *groups)
{
  SpPlan *plan = sp_plan_new (sp_groups_options (groups));
  static const struct {
    const char *name;
    SpColl kind;
    SpFamily family;
    guint64 bytes;
    SpRedop redop;
    SpPhase phase;
  } ops[SP_SAMPLE_OPS] = {
    { "L0.fwd.allgather", SP_COLL_ALL_GATHER, SP_FAMILY_SHARD, 8u << 20, SP_REDOP_NONE,
      SP_PHASE_FORWARD },
    { "L0.bwd.reduce_scatter", SP_COLL_REDUCE_SCATTER, SP_FAMILY_SHARD, 8u << 20, SP_REDOP_SUM,
      SP_PHASE_BACKWARD },
    { "step.allreduce", SP_COLL_ALL_REDUCE, SP_FAMILY_REPLICATE, 2u << 20, SP_REDOP_SUM,
      SP_PHASE_OPTIMIZER },
  };
  for (guint32 i = 0; i < SP_SAMPLE_OPS; i++)
    {
      guint32 dep = i - 1;
      SpOp op = { .parent = -1, .name = ops[i].name, .layer = i < 2 ? 0 : -1,
                  .phase = ops[i].phase, .kind = ops[i].kind, .family = ops[i].family,
                  .bytes = ops[i].bytes, .count = ops[i].bytes / 2,
                  .dtype = SP_DTYPE_BFLOAT16, .redop = ops[i].redop,
                  .algorithm = SP_ALGO_AUTO, .stream = 0, .n_deps = i > 0,
                  .deps = i > 0 ? &dep : NULL };
      g_autoptr (GError) error = NULL;
      gboolean ok = sp_plan_add_op (plan, &op, NULL, &error);
      g_assert_no_error (error);
      g_assert_true (ok);
    }
  sp_plan_set_meta (plan, "model", "trace-sample");
  return plan;
}

gboolean
sp_sample_trace_write (const char *path, gboolean partial, GError **error)
{
  g_autoptr (SpGroups) groups = sp_sample_groups ();
  g_autoptr (SpPlan) plan = sp_sample_plan (groups);
  g_autoptr (SpTopo) topo = sp_topo_new_preset ("cpu-shm", 2, error);
  if (topo == NULL)
    return FALSE;
  SpTraceHeader h = { .source = SP_TRACE_SOURCE_MEASURED, .producer = "shardplan test",
                      .producer_version = "0.0-test", .clock = "CLOCK_MONOTONIC",
                      .timing_mode = "isolated", .check_policy = "after", .warmup_iters = 1,
                      .iters = SP_SAMPLE_ITERS, .world_size = SP_SAMPLE_WORLD,
                      .run_id = SP_SAMPLE_RUN_ID, .created_utc = SP_SAMPLE_CREATED };
  g_autoptr (SpTraceWriter) w = sp_trace_writer_new (path, &h, error);
  if (w == NULL)
    return FALSE;
  SpTraceNode nodes[2] = { { 0, "node-a", 0, "" }, { 1, "node-b", 0, "" } };
  SpTraceRank ranks[SP_SAMPLE_WORLD];
  for (guint32 r = 0; r < SP_SAMPLE_WORLD; r++)
    ranks[r] = (SpTraceRank) { .rank = r, .node_id = r / 4, .local_rank = r % 4,
                               .device = -1, .clock_offset_ns = (gint64) r * 7 - 21 };
  if (!sp_trace_writer_set_software (w, "mpi", "test-mpi 1.0", error)
      || !sp_trace_writer_set_software (w, "compiler", "test-cc", error)
      || !sp_trace_writer_set_cluster (w, nodes, 2, ranks, SP_SAMPLE_WORLD, error)
      || !sp_trace_writer_set_topology (w, topo, NULL, error)
      || !sp_trace_writer_set_plan (w, plan, NULL, error)
      || !sp_trace_writer_set_groups (w, groups, error))
    return FALSE;
  sp_trace_writer_add_env (w, "NCCL_DEBUG", "WARN");
  sp_trace_writer_add_env (w, "OMPI_COMM_WORLD_SIZE", "8");

  for (gint32 iter = 0; iter < SP_SAMPLE_ITERS; iter++)
    for (guint32 o = 0; o < SP_SAMPLE_OPS; o++)
      {
        const SpOp *op = sp_plan_op (plan, o);
        SpTraceRow rows[SP_SAMPLE_WORLD];
        for (guint32 r = 0; r < SP_SAMPLE_WORLD; r++)
          {
            SpTraceRow *row = &rows[r];
            sp_sample_op_row (row, groups, o, op, r, iter, 100000 + o * 10000);
            row->seq_in_group = op->family == SP_FAMILY_SHARD ? (guint32) iter * 2 + o
                                                              : (guint32) iter;
            row->flags = SP_TRACE_FLAG_CHECKED;
            row->t_start_ns = iter * 1000000 + o * 200000 + r * 10;
            row->t_enqueue_ns = row->t_start_ns - 500;
            row->t_end_ns = row->t_start_ns + row->dur_ns;
            sp_trace_row_set_bandwidths (row);
            /* NCCL's estimate (schema 1.1) for the two shard ops; none for
             * the all-reduce, as when NCCL gives none. */
            row->nccl_est_ns = o < 2 ? 90000 + (gint64) o * 10000 : -1;
          }
        if (!sp_trace_writer_append (w, rows, SP_SAMPLE_WORLD, error))
          return FALSE;
      }
  if (partial)
    sp_trace_writer_mark_partial (w, "op 2 timed out on rank 5");
  return sp_trace_writer_finish (w, error);
}
