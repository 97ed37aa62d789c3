/* An nccl-tests log as a synthetic plan and a measured trace (see
 * shardplan/nccltests.h for the conventions). */
#include "config.h"
#include "nccltests-private.h"
#include "shardplan/trace.h"

#include <math.h>
#include <string.h>

SpPlan *
sp_nccl_tests_build_plan (const SpNcclTestsLog *log, guint32 devices_per_node, GError **error)
{
  g_return_val_if_fail (log != NULL, NULL);
  if (devices_per_node == 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "devices per node 0: expected at least 1");
      return NULL;
    }
  SpGroupsOptions opts;
  sp_groups_options_init (&opts);
  opts.world_size = log->n_ranks;
  opts.devices_per_node = devices_per_node;
  g_autoptr (SpPlan) plan = sp_plan_new (&opts);
  sp_plan_set_meta (plan, "created_by", "shardplan trace import-nccl-tests");
  sp_plan_set_meta (plan, "nccl_tests_binary", log->binary);
  const char *kind = sp_coll_name (log->coll);
  for (guint i = 0; i < log->results->len; i++)
    {
      const SpNcclTestsResult *r = &g_array_index (log->results, SpNcclTestsResult, i);
      g_autofree char *name = r->root >= 0
        ? g_strdup_printf ("%s %" G_GUINT64_FORMAT " B %s root %d", kind, r->bytes,
                           r->in_place ? "in-place" : "out-of-place", r->root)
        : g_strdup_printf ("%s %" G_GUINT64_FORMAT " B %s", kind, r->bytes,
                           r->in_place ? "in-place" : "out-of-place");
      SpOp op = { .parent = -1, .name = name, .layer = -1, .phase = SP_PHASE_NONE,
                  .kind = log->coll, .family = SP_FAMILY_WORLD, .bytes = r->bytes,
                  .count = r->bytes / sp_nccl_tests_elem_bytes (r->dtype), .dtype = r->dtype,
                  .redop = r->redop, .algorithm = SP_ALGO_AUTO, .stream = 0 };
      if (!sp_plan_add_op (plan, &op, NULL, error))
        return NULL;
    }
  return g_steal_pointer (&plan);
}

/* /meta/cluster from the "#  Rank" lines, or the topology's block layout. */
static gboolean
write_cluster (const SpNcclTestsLog *log, const SpTopo *topo, SpTraceWriter *w, GError **error)
{
  guint32 n = log->n_ranks;
  g_autofree SpTraceRank *ranks = g_new0 (SpTraceRank, n);
  g_autoptr (GArray) nodes = g_array_new (FALSE, TRUE, sizeof (SpTraceNode));
  if (log->ranks->len == n)
    {
      /* hostname → node + 1: one lookup per rank, not a scan of the nodes */
      g_autoptr (GHashTable) node_of = g_hash_table_new (g_str_hash, g_str_equal);
      for (guint32 r = 0; r < n; r++)
        {
          const SpNcclTestsRank *lr = &g_array_index (log->ranks, SpNcclTestsRank, r);
          guint32 node = GPOINTER_TO_UINT (g_hash_table_lookup (node_of, lr->hostname));
          if (node > 0)
            node--;
          else
            {
              node = nodes->len;
              g_hash_table_insert (node_of, (gpointer) lr->hostname, GUINT_TO_POINTER (node + 1));
              SpTraceNode nd = { .node_id = node, .hostname = lr->hostname, .n_gpus = 0,
                                 .gpu_model = lr->gpu_model };
              g_array_append_val (nodes, nd);
            }
          SpTraceNode *nd = &g_array_index (nodes, SpTraceNode, node);
          ranks[r] = (SpTraceRank) { .rank = r, .node_id = node, .local_rank = nd->n_gpus,
                                     .device = lr->device, .clock_offset_ns = 0 };
          nd->n_gpus++;
        }
    }
  else
    {
      const SpTopoSpec *spec = sp_topo_spec (topo);
      for (guint32 r = 0; r < n; r++)
        {
          guint32 node = 0, local = 0;
          sp_topo_rank_location (topo, r, &node, &local);
          ranks[r] = (SpTraceRank) { .rank = r, .node_id = node, .local_rank = local,
                                     .device = (gint32) local, .clock_offset_ns = 0 };
        }
      for (guint32 node = 0; node < spec->nodes; node++)
        {
          SpTraceNode nd = { .node_id = node, .hostname = "", .n_gpus = spec->gpus_per_node,
                             .gpu_model = "" };
          g_array_append_val (nodes, nd);
        }
    }
  return sp_trace_writer_set_cluster (w, (const SpTraceNode *) (void *) nodes->data, nodes->len,
                                      ranks, n, error);
}

static gboolean
check_plan (const SpNcclTestsLog *log, const SpPlan *plan, GError **error)
{
  if (sp_plan_world_size (plan) != log->n_ranks || sp_plan_n_ops (plan) != log->results->len)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "%s: the plan (%u ranks, %u ops) is not this log's (%u ranks, %u points)",
                   log->source_name, sp_plan_world_size (plan), sp_plan_n_ops (plan),
                   log->n_ranks, log->results->len);
      return FALSE;
    }
  for (guint i = 0; i < log->results->len; i++)
    {
      const SpNcclTestsResult *r = &g_array_index (log->results, SpNcclTestsResult, i);
      const SpOp *op = sp_plan_op (plan, i);
      if (op->kind != log->coll || op->bytes != r->bytes || op->dtype != r->dtype
          || op->family != SP_FAMILY_WORLD)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                       "%s: plan op %u ('%s') is not the log's point at line %u",
                       log->source_name, i, op->name, r->line);
          return FALSE;
        }
    }
  return TRUE;
}

static void
add_param (SpTraceWriter *w, const char *key, gint64 value, gboolean present)
{
  if (!present)
    return;
  g_autofree char *k = g_strdup_printf ("nccl_tests.%s", key);
  g_autofree char *v = g_strdup_printf ("%" G_GINT64_FORMAT, value);
  sp_trace_writer_add_env (w, k, v);
}

gboolean
sp_nccl_tests_write_trace (const SpNcclTestsLog *log, const SpPlan *plan, const SpTopo *topo,
                           const char *path, GError **error)
{
  g_return_val_if_fail (log != NULL && plan != NULL && topo != NULL && path != NULL, FALSE);
  if (!check_plan (log, plan, error))
    return FALSE;
  if (sp_topo_world_size (topo) != log->n_ranks)
    {
      const SpTopoSpec *spec = sp_topo_spec (topo);
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "%s has %u ranks but the topology has %u nodes x %u GPUs = %u",
                   log->source_name, log->n_ranks, spec->nodes, spec->gpus_per_node,
                   sp_topo_world_size (topo));
      return FALSE;
    }
  const SpNcclTestsParams *pr = &log->params;
  SpTraceHeader h = { .source = SP_TRACE_SOURCE_MEASURED, .producer = "nccl-tests",
                      .producer_version = log->version ? log->version : "unknown",
                      .clock = "nccl-tests-average", .timing_mode = "nccl-tests",
                      .warmup_iters = pr->warmup_iters, .iters = 1,
                      .world_size = log->n_ranks };
  g_autoptr (SpTraceWriter) w = sp_trace_writer_new (path, &h, error);
  if (w == NULL)
    return FALSE;
  g_autoptr (SpGroups) groups = sp_groups_build (sp_plan_groups_options (plan), error);
  if (groups == NULL)
    return FALSE;
  /* NCCL's version as NCCL prints it: nccl-tests' bare code
   * ("nccl-library=22105") as "2.21.5"; a "NCCL version" line's as given */
  const char *runtime = log->nccl_version;
  g_autofree char *runtime_text = NULL;
  if (runtime != NULL && runtime[strspn (runtime, "0123456789")] == '\0'
      && sp_topo_nccl_version_code (runtime) != 0)
    runtime = runtime_text = sp_topo_nccl_version_text (sp_topo_nccl_version_code (runtime));
  if (!sp_trace_writer_set_software (w, "nccl_tests", log->version ? log->version : "unknown",
                                     error)
      || (runtime && !sp_trace_writer_set_software (w, "nccl_runtime", runtime, error))
      || !write_cluster (log, topo, w, error)
      || !sp_trace_writer_set_topology (w, topo, NULL, error)
      || !sp_trace_writer_set_plan (w, plan, NULL, error)
      || !sp_trace_writer_set_groups (w, groups, error))
    return FALSE;
  const char *const *env = sp_nccl_tests_log_env (log);
  for (gsize i = 0; env[i] && env[i + 1]; i += 2)
    sp_trace_writer_add_env (w, env[i], env[i + 1]);
  add_param (w, "n_threads", pr->n_threads, pr->n_threads > 0);
  add_param (w, "n_gpus", pr->n_gpus, pr->n_gpus > 0);
  add_param (w, "warmup_iters", pr->warmup_iters, pr->warmup_iters > 0);
  add_param (w, "iters", pr->iters, pr->iters > 0);
  add_param (w, "agg_iters", pr->agg_iters, pr->agg_iters > 0);
  add_param (w, "validation", pr->validation, pr->validation >= 0);
  add_param (w, "graph", pr->graph, pr->graph >= 0);

  guint32 n = log->n_ranks;
  guint32 world = sp_trace_group_id (groups, SP_FAMILY_WORLD, 0);
  g_autofree SpTraceRow *rows = g_new (SpTraceRow, n);
  gint64 t = 0;
  for (guint i = 0; i < log->results->len; i++)
    {
      const SpNcclTestsResult *r = &g_array_index (log->results, SpNcclTestsResult, i);
      const SpOp *op = sp_plan_op (plan, i);
      gint64 dur = llround (r->time_us * 1000.0);
      for (guint32 k = 0; k < n; k++)
        {
          SpTraceRow *row = &rows[k];
          sp_trace_row_init (row);
          row->op_id = i;
          row->iter = 0;
          row->rank = k;
          row->group_id = world;
          row->group_rank = k;
          row->group_size = n;
          row->seq_in_group = i;
          row->coll = op->kind;
          row->dtype = op->dtype;
          row->redop = op->redop;
          row->flags = (r->in_place ? SP_TRACE_FLAG_IN_PLACE : 0)
                       | (r->wrong >= 0 ? SP_TRACE_FLAG_CHECKED : 0);
          row->status = r->wrong > 0 ? SP_TRACE_STATUS_WRONG : SP_TRACE_STATUS_OK;
          row->count = op->count;
          row->bytes = op->bytes;
          row->t_enqueue_ns = row->t_start_ns = t;
          row->dur_ns = dur;
          row->t_end_ns = t + dur;
          sp_trace_row_set_bandwidths (row);
        }
      if (!sp_trace_writer_append (w, rows, n, error))
        return FALSE;
      t += dur;
    }
  if (!log->complete)
    sp_trace_writer_mark_partial (w, log->incomplete_reason);
  return sp_trace_writer_finish (w, error);
}
