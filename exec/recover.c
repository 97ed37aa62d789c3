/* exec/recover.c — writing a measured trace from rows on raw rank clocks:
 * the one writer behind `shardplan run` (exec/record.c's
 * sp_exec_write_trace) and `shardplan trace recover`, which rebuilds a
 * partial trace from the spill files a failed run left (rank 0's gone
 * too).  No MPI here. */
#include "config.h"
#include "exec-internal.h"
#include "file-read.h" /* lib/: whole-file reads with a size limit */

#include <string.h>

static gint
cmp_str_ptr (gconstpointer a, gconstpointer b, gpointer unused)
{
  return g_strcmp0 (*(const char *const *) a, *(const char *const *) b);
}

GPtrArray *
sp_exec_env_capture (void)
{
  static const char *const prefixes[] = { "NCCL_", "CUDA_", "SLURM_", "OMPI_", "PMIX_", "UCX_",
                                          "MPICH_", "I_MPI_", "SP_TEST_" };
  GPtrArray *kv = g_ptr_array_new_with_free_func (g_free);
  g_auto (GStrv) env = g_get_environ ();
  g_qsort_with_data (env, (gint) g_strv_length (env), sizeof (char *), cmp_str_ptr, NULL);
  for (char **e = env; *e; e++)
    for (gsize p = 0; p < G_N_ELEMENTS (prefixes); p++)
      if (g_str_has_prefix (*e, prefixes[p]))
        {
          char *eq = strchr (*e, '=');
          if (eq)
            {
              g_ptr_array_add (kv, g_strndup (*e, (gsize) (eq - *e)));
              g_ptr_array_add (kv, g_strdup (eq + 1));
            }
          break;
        }
  return kv;
}

static gboolean
set_software (SpTraceWriter *w, const GPtrArray *kv, GError **error)
{
  for (guint i = 0; kv && i + 1 < kv->len; i += 2)
    if (!sp_trace_writer_set_software (w, g_ptr_array_index (kv, i), g_ptr_array_index (kv, i + 1),
                                       error))
      return FALSE;
  return TRUE;
}

gboolean
sp_exec_trace_write (const char *path, const SpExecTraceDesc *d, SpTraceRow *rows, gsize n,
                     GError **error)
{
  g_autoptr (SpTraceWriter) w = sp_trace_writer_new (path, &d->header, error);
  if (!w)
    return FALSE;
  if (!sp_trace_writer_set_software (w, "backend", d->backend_name, error) ||
      !set_software (w, d->software, error) || !set_software (w, d->software_more, error))
    return FALSE;
  for (guint i = 0; d->env && i + 1 < d->env->len; i += 2)
    sp_trace_writer_add_env (w, g_ptr_array_index (d->env, i), g_ptr_array_index (d->env, i + 1));
  if (!sp_trace_writer_set_cluster (w, d->nodes, d->n_nodes, d->ranks, d->n_ranks, error) ||
      !sp_trace_writer_set_plan (w, d->plan, d->plan_text, error) ||
      ((d->topo || d->topo_text) && !sp_trace_writer_set_topology (w, d->topo, d->topo_text, error)) ||
      !sp_trace_writer_set_groups (w, d->groups, error))
    return FALSE;
  /* Raw local clocks → ns since the epoch on rank 0's clock.  The clocks
   * may come from a damaged spill file: a shift that leaves gint64 is
   * refused, not wrapped. */
  for (gsize i = 0; i < n; i++)
    {
      SpTraceRow *r = &rows[i];
      gint64 offset = r->rank < d->header.world_size ? d->offsets_ns[r->rank] : 0;
      gint64 shift = 0;
      gint64 *t[] = { &r->t_enqueue_ns, &r->t_start_ns, &r->t_end_ns };
      gboolean ok = !__builtin_add_overflow (offset, d->epoch_ns, &shift);
      for (gsize k = 0; ok && k < G_N_ELEMENTS (t); k++)
        if (*t[k])
          ok = !__builtin_sub_overflow (*t[k], shift, t[k]);
      if (!ok)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "rank %u's row of op %u: its "
                       "times cannot be moved by the clock offset %" G_GINT64_FORMAT " ns and "
                       "epoch %" G_GINT64_FORMAT " ns without overflow (damaged)", r->rank,
                       r->op_id, offset, d->epoch_ns);
          return FALSE;
        }
    }
  if (n && !sp_trace_writer_append (w, rows, n, error))
    return FALSE;
  if (d->partial_reason)
    sp_trace_writer_mark_partial (w, d->partial_reason);
  return sp_trace_writer_finish (w, error);
}

/* ---------------------------------------------------------------- recover */

/* Ranks a to b (inclusive): "1, 2, 3", or "1-100" for more than
 * RANK_RUN_LIST of them (a run of 10^6 ranks lost must not make a
 * 7 MB reason). */
#define RANK_RUN_LIST 4

static void
append_run (GString *s, guint32 a, guint32 b)
{
  const char *sep = s->len && s->str[s->len - 1] != ' ' ? ", " : "";
  if (b - a + 1 > RANK_RUN_LIST)
    {
      g_string_append_printf (s, "%s%u-%u", sep, a, b);
      return;
    }
  for (guint64 r = a; r <= b; r++, sep = ", ")
    g_string_append_printf (s, "%s%u", sep, (guint32) r);
}

/* `ranks` (sorted, distinct): "1, 2, 5" */
static void
append_ranks (GString *s, const GArray *ranks)
{
  for (guint i = 0; i < ranks->len;)
    {
      guint j = i;
      while (j + 1 < ranks->len
             && g_array_index (ranks, guint32, j + 1) == g_array_index (ranks, guint32, j) + 1)
        j++;
      append_run (s, g_array_index (ranks, guint32, i), g_array_index (ranks, guint32, j));
      i = j + 1;
    }
}

/* The ranks below `world` not in `present` (sorted, distinct). */
static void
append_missing (GString *s, const GArray *present, guint32 world)
{
  guint32 next = 0;
  for (guint i = 0; i <= present->len; i++)
    {
      guint32 r = i < present->len ? g_array_index (present, guint32, i) : world;
      if (r > next)
        append_run (s, next, r - 1);
      next = r + 1;
    }
}

static gint
cmp_spill_rank (gconstpointer a, gconstpointer b)
{
  const SpExecSpill *x = *(SpExecSpill *const *) a, *y = *(SpExecSpill *const *) b;
  return x->run.rank < y->run.rank ? -1 : x->run.rank > y->run.rank;
}

/* Every file of the same run, no rank twice. */
static gboolean
check_same_run (GPtrArray *spills, GError **error)
{
  const SpExecSpill *first = spills->pdata[0];
  for (guint i = 1; i < spills->len; i++)
    {
      const SpExecSpill *s = spills->pdata[i], *prev = spills->pdata[i - 1];
      if (strcmp (s->run.run_id, first->run.run_id) != 0 || s->run.world_size != first->run.world_size)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT, "%s is from run %s but %s is "
                       "from run %s: give the spill files of one run", s->path, s->run.run_id,
                       first->path, first->run.run_id);
          return FALSE;
        }
      if (s->run.rank == prev->run.rank)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT, "%s and %s are both rank %u's "
                       "spill file", prev->path, s->path, s->run.rank);
          return FALSE;
        }
    }
  return TRUE;
}

/* The plan as stored, or --plan when its digest matches. */
static SpPlan *
load_plan (const SpExecSpill *s0, const char *plan_path, char **out_text, GError **error)
{
  g_autofree char *text = NULL;
  gsize len = 0;
  if (plan_path)
    {
      GError *e = NULL;
      if (!sp_file_read_bounded (plan_path, SP_PLAN_MAX_FILE_BYTES, "plan", &text, &len, &e)
          && e->code != SP_ERROR_IO)
        {
          g_propagate_error (error, e);
          return NULL;
        }
      if (e)
        {
          g_clear_error (&e);
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT, "cannot read plan %s: %s",
                       plan_path, g_file_test (plan_path, G_FILE_TEST_EXISTS) ? "not a readable file"
                                                                              : "no such file");
          return NULL;
        }
    }
  else
    {
      text = g_strdup (s0->run.plan_text);
      len = strlen (text);
    }
  const char *where = plan_path ? plan_path : s0->path;
  GError *e = NULL;
  g_autoptr (SpPlan) plan = sp_plan_from_json (text, (gssize) len, s0->run.world_size, &e);
  if (!plan)
    {
      if (plan_path)
        g_propagate_prefixed_error (error, e, "%s: ", plan_path);
      else
        g_propagate_prefixed_error (error, e, "the plan stored in %s: ", s0->path);
      return NULL;
    }
  g_autofree char *digest = sp_plan_digest (plan);
  if (strcmp (digest, s0->run.plan_digest) != 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN, "plan %s (digest %.12s…) is not the plan "
                   "the run used (digest %.12s…)", where, digest, s0->run.plan_digest);
      return NULL;
    }
  *out_text = g_steal_pointer (&text);
  return g_steal_pointer (&plan);
}

gboolean
sp_exec_spill_recover (const char *const *paths, gsize n, const char *plan_path,
                       const char *output, guint64 *out_rows, char ***out_warnings, GError **error)
{
  g_return_val_if_fail (n > 0, FALSE);
  g_autoptr (GPtrArray) spills = g_ptr_array_new_with_free_func ((GDestroyNotify) sp_exec_spill_free);
  g_autoptr (GPtrArray) warnings = g_ptr_array_new_with_free_func (g_free);
  for (gsize i = 0; i < n; i++)
    {
      GError *e = NULL;
      SpExecSpill *s = sp_exec_spill_read (paths[i], &e);
      if (!s)
        {
          if (e->code == SP_ERROR_IO)
            e->code = SP_ERROR_INVALID_ARGUMENT; /* a file the user named: bad input */
          g_propagate_error (error, e);
          return FALSE;
        }
      g_ptr_array_add (spills, s);
    }
  g_ptr_array_sort (spills, cmp_spill_rank);
  if (!check_same_run (spills, error))
    return FALSE;
  const SpExecSpill *s0 = spills->pdata[0];
  const guint32 world = s0->run.world_size;
  g_autofree char *plan_text = NULL;
  g_autoptr (SpPlan) plan = load_plan (s0, plan_path, &plan_text, error);
  if (!plan)
    return FALSE;
  g_autoptr (SpGroups) groups = sp_groups_build (sp_plan_groups_options (plan), error);
  if (!groups)
    return FALSE;

  /* Ranks present and missing; cluster rows for those present with setup
   * facts; the epoch on rank 0's clock from the lowest rank that has one
   * (every rank starts the first timed iteration after the same barrier). */
  g_autoptr (GArray) present = g_array_new (FALSE, FALSE, sizeof (guint32));
  g_autofree gint64 *offsets = g_new0 (gint64, world);
  g_autofree SpTraceRank *ranks = g_new0 (SpTraceRank, spills->len);
  g_autofree SpTraceNode *nodes = g_new0 (SpTraceNode, spills->len);
  gsize n_ranks = 0, n_nodes = 0;
  g_autoptr (GHashTable) node_of = g_hash_table_new (g_str_hash, g_str_equal);
  gboolean have_epoch = FALSE;
  gint64 epoch = 0;
  const SpExecSpill *with_info = NULL;
  GString *notes = g_string_new (NULL);
  for (guint i = 0; i < spills->len; i++)
    {
      const SpExecSpill *s = spills->pdata[i];
      g_array_append_val (present, s->run.rank);
      if (s->damage)
        {
          g_ptr_array_add (warnings, g_strdup_printf ("%s: damaged at byte %" G_GUINT64_FORMAT
                                                      " (%s): kept the %u row%s before it, "
                                                      "dropped the %" G_GUINT64_FORMAT " bytes "
                                                      "from there", s->path, s->damaged_at,
                                                      s->damage, s->rows->len,
                                                      s->rows->len == 1 ? "" : "s",
                                                      s->dropped_bytes));
        }
      else if (s->dropped_bytes)
        g_ptr_array_add (warnings, g_strdup_printf ("%s: cut short mid-row: %" G_GUINT64_FORMAT
                                                    " bytes after its last whole row dropped",
                                                    s->path, s->dropped_bytes));
      sp_exec_spill_append_note (notes, s);
      if (!s->has_info)
        continue;
      with_info = with_info ? with_info : s;
      offsets[s->run.rank] = s->info.clock_offset_ns;
      if (!have_epoch && s->has_epoch)
        {
          have_epoch = TRUE;
          if (__builtin_sub_overflow (s->epoch_ns, s->info.clock_offset_ns, &epoch))
            {
              g_string_free (notes, TRUE);
              g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: epoch %" G_GINT64_FORMAT
                           " ns minus clock offset %" G_GINT64_FORMAT " ns overflows (damaged)",
                           s->path, s->epoch_ns, s->info.clock_offset_ns);
              return FALSE;
            }
        }
      /* hostname → node + 1 (a run of 10^5 ranks gives 10^5 files) */
      gsize node = s->info.hostname
                     ? GPOINTER_TO_SIZE (g_hash_table_lookup (node_of, s->info.hostname)) : 0;
      if (node > 0)
        node--;
      else
        node = n_nodes;
      if (node == n_nodes && s->info.hostname)
        g_hash_table_insert (node_of, s->info.hostname, GSIZE_TO_POINTER (node + 1));
      if (node == n_nodes)
        nodes[n_nodes++] = (SpTraceNode) { .node_id = (guint32) node,
                                           .hostname = s->info.hostname ? s->info.hostname : "",
                                           .gpu_model = s->info.device >= 0 && s->info.gpu_model
                                                          ? s->info.gpu_model : "" };
      nodes[node].n_gpus += s->info.device >= 0;
      ranks[n_ranks++] = (SpTraceRank) { .rank = s->run.rank, .node_id = (guint32) node,
                                         .local_rank = s->info.local_rank, .device = s->info.device,
                                         .clock_offset_ns = s->info.clock_offset_ns };
    }

  g_autoptr (GArray) rows = g_array_new (FALSE, FALSE, sizeof (SpTraceRow));
  for (guint i = 0; i < spills->len; i++)
    {
      const SpExecSpill *s = spills->pdata[i];
      if (s->rows->len && !s->has_info)
        {
          g_string_free (notes, TRUE);
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT, "%s has rows but no clock "
                       "offset record (damaged)", s->path);
          return FALSE;
        }
      g_array_append_vals (rows, s->rows->data, s->rows->len);
    }
  if (rows->len && !have_epoch)
    {
      g_string_free (notes, TRUE);
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT, "the spill files have rows but "
                   "no epoch record (damaged)");
      return FALSE;
    }

  GString *reason = g_string_new ("recovered from spill files of rank");
  g_string_append (reason, present->len == 1 ? " " : "s ");
  append_ranks (reason, present);
  if (present->len < world)
    {
      g_string_append (reason, "; rank(s) ");
      append_missing (reason, present, world);
      g_string_append (reason, " missing");
    }
  else
    g_string_append (reason, " (the run did not finish)");
  g_string_append (reason, notes->str);
  g_string_free (notes, TRUE);

  const SpExecSpillRun *r = &s0->run;
  SpExecTraceDesc d = {
    .header = { .source = SP_TRACE_SOURCE_MEASURED, .producer = r->producer,
                .producer_version = r->producer_version, .clock = r->clock,
                .timing_mode = r->timing_mode, .check_policy = r->check_policy,
                .warmup_iters = r->warmup_iters, .iters = r->iters,
                .world_size = world, .run_id = r->run_id },
    .backend_name = with_info && with_info->info.backend ? with_info->info.backend : "unknown",
    .software = r->software,
    .software_more = with_info ? with_info->info.software : NULL,
    .env = r->env,
    .nodes = nodes, .n_nodes = n_nodes, .ranks = ranks, .n_ranks = n_ranks,
    .plan = plan, .plan_text = plan_text, .topo_text = r->topology_text, .groups = groups,
    .epoch_ns = epoch, .offsets_ns = offsets, .partial_reason = reason->str,
  };
  gboolean ok = sp_exec_trace_write (output, &d, (SpTraceRow *) rows->data, rows->len, error);
  g_string_free (reason, TRUE);
  if (ok && out_rows)
    *out_rows = rows->len;
  if (ok && out_warnings)
    {
      g_ptr_array_add (warnings, NULL);
      *out_warnings = (char **) g_ptr_array_steal (warnings, NULL);
    }
  return ok;
}
