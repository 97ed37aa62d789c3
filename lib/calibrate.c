/* The measured points a calibration fits (shardplan/calibrate.h): per-op
 * medians out of measured traces, and the fit / hold-out split. */
#include "config.h"
#include "shardplan/calibrate.h"
#include "shardplan/error.h"
#include "shardplan/plan.h"
#include "shardplan/topo.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <glib/gstdio.h>

/* Rows read from a trace at a time. */
#define READ_CHUNK 65536

/* What NCCL could choose when a source ran, from its trace's /meta/env. */
typedef struct {
  char *env[SP_CALIB_N_NCCL_ENV]; /* recorded values (sp_calib_nccl_env_names), or NULL */
  gboolean decides;               /* the env says what NCCL could choose (below) */
  guint8 algo_off[SP_TOPO_NCCL_FUNCS], proto_off[SP_TOPO_NCCL_FUNCS];
  char *problem;                  /* recorded values NCCL refuses (ignored), or NULL */
  char *nccl_version;             /* /meta/software nccl_runtime, or NULL */
  guint8 lacking;                 /* algorithms that NCCL version has not (by id) */
  GStrv var_names, var_values;    /* every NCCL_* of /meta/env (sp_trace_nccl_vars), or NULL */
} SourceEnv;

const char *const sp_calib_nccl_env_names[SP_CALIB_N_NCCL_ENV] = { "NCCL_ALGO", "NCCL_PROTO",
                                                                    "NCCL_NVLS_ENABLE" };

static void
source_env_clear (SourceEnv *e)
{
  for (guint k = 0; k < SP_CALIB_N_NCCL_ENV; k++)
    g_clear_pointer (&e->env[k], g_free);
  g_clear_pointer (&e->problem, g_free);
  g_clear_pointer (&e->nccl_version, g_free);
  g_clear_pointer (&e->var_names, g_strfreev);
  g_clear_pointer (&e->var_values, g_strfreev);
  memset (e, 0, sizeof *e);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (SourceEnv, source_env_clear)

struct _SpCalibData {
  GArray *points;          /* SpCalibPoint; ranks point into rank_store */
  GPtrArray *rank_store;   /* guint32[] per point (owned) */
  GPtrArray *sources;      /* char * names */
  GArray *envs;            /* SourceEnv per source */
  SpCalibCounts counts;
};

SpCalibData *
sp_calib_data_new (void)
{
  SpCalibData *d = g_new0 (SpCalibData, 1);
  d->points = g_array_new (FALSE, TRUE, sizeof (SpCalibPoint));
  d->rank_store = g_ptr_array_new_with_free_func (g_free);
  d->sources = g_ptr_array_new_with_free_func (g_free);
  d->envs = g_array_new (FALSE, TRUE, sizeof (SourceEnv));
  g_array_set_clear_func (d->envs, (GDestroyNotify) source_env_clear);
  return d;
}

void
sp_calib_data_free (SpCalibData *d)
{
  if (d == NULL)
    return;
  g_array_unref (d->points);
  g_ptr_array_unref (d->rank_store);
  g_ptr_array_unref (d->sources);
  g_array_unref (d->envs);
  g_free (d);
}

const SpCalibPoint *
sp_calib_data_points (const SpCalibData *d, gsize *out_n)
{
  g_return_val_if_fail (d != NULL && out_n != NULL, NULL);
  *out_n = d->points->len;
  return (const SpCalibPoint *) (const void *) d->points->data;
}

gsize
sp_calib_data_n_points (const SpCalibData *d)
{
  g_return_val_if_fail (d != NULL, 0);
  return d->points->len;
}

guint32
sp_calib_data_n_sources (const SpCalibData *d)
{
  g_return_val_if_fail (d != NULL, 0);
  return d->sources->len;
}

const char *
sp_calib_data_source_name (const SpCalibData *d, guint32 source)
{
  g_return_val_if_fail (d != NULL, NULL);
  return source < d->sources->len ? g_ptr_array_index (d->sources, source) : NULL;
}

static const SourceEnv *
env_of (const SpCalibData *d, guint32 source)
{
  return source < d->envs->len ? &g_array_index (d->envs, SourceEnv, source) : NULL;
}

gboolean
sp_calib_data_source_nccl (const SpCalibData *d, guint32 source,
                           guint8 algo_off[SP_TOPO_NCCL_FUNCS], guint8 proto_off[SP_TOPO_NCCL_FUNCS])
{
  g_return_val_if_fail (d != NULL && algo_off != NULL && proto_off != NULL, FALSE);
  const SourceEnv *e = env_of (d, source);
  if (e == NULL || !e->decides)
    return FALSE;
  memcpy (algo_off, e->algo_off, sizeof e->algo_off);
  memcpy (proto_off, e->proto_off, sizeof e->proto_off);
  return TRUE;
}

const char *
sp_calib_data_source_nccl_version (const SpCalibData *d, guint32 source, guint8 *out_lacking)
{
  g_return_val_if_fail (d != NULL, NULL);
  const SourceEnv *e = env_of (d, source);
  if (out_lacking != NULL)
    *out_lacking = e ? e->lacking : 0;
  return e ? e->nccl_version : NULL;
}

const char *
sp_calib_data_source_env (const SpCalibData *d, guint32 source, guint which)
{
  g_return_val_if_fail (d != NULL && which < SP_CALIB_N_NCCL_ENV, NULL);
  const SourceEnv *e = env_of (d, source);
  return e ? e->env[which] : NULL;
}

guint
sp_calib_data_source_nccl_vars (const SpCalibData *d, guint32 source,
                                const char *const **out_names, const char *const **out_values)
{
  g_return_val_if_fail (d != NULL && out_names != NULL && out_values != NULL, 0);
  const SourceEnv *e = env_of (d, source);
  *out_names = (const char *const *) (e ? e->var_names : NULL);
  *out_values = (const char *const *) (e ? e->var_values : NULL);
  return *out_names ? g_strv_length ((GStrv) *out_names) : 0;
}

const char *
sp_calib_data_source_env_problem (const SpCalibData *d, guint32 source)
{
  g_return_val_if_fail (d != NULL, NULL);
  const SourceEnv *e = env_of (d, source);
  return e ? e->problem : NULL;
}

/* A new source: its name and what NCCL could choose when it ran (moved out
 * of `env`, which is left empty; NULL: nothing known). */
static void
add_source (SpCalibData *d, const char *name, SourceEnv *env)
{
  g_ptr_array_add (d->sources, g_strdup (name));
  SourceEnv moved = { { NULL } };
  if (env)
    {
      moved = *env;
      memset (env, 0, sizeof *env);
    }
  g_array_append_val (d->envs, moved);
}

/* What NCCL could choose when the trace ran, into `out`.  A trace of
 * `shardplan run` (`own_run`) records every NCCL_* variable of the run, so
 * there a variable it lacks was unset; another trace (nccl-tests' log)
 * knows only what it records.  Values are read as the NCCL that ran reads
 * them (/meta/software nccl_runtime: sp_topo_nccl_parse_as; before 2.24,
 * no per-collective entries, said in out->problem); one NCCL refuses (it
 * fails communicator init with it) is left out and said there too.  NCCL_NVLS_ENABLE=0 takes NVLS and NVLSTree out
 * (other values leave NCCL's default). */
static void
trace_nccl_env (SpTrace *trace, const char *name, gboolean own_run, SourceEnv *out)
{
  source_env_clear (out);
  gsize n = 0;
  const SpTraceEnv *env = sp_trace_env (trace, &n);
  const char *v[SP_CALIB_N_NCCL_ENV] = { NULL };
  for (gsize i = 0; i < n; i++)
    for (guint k = 0; k < SP_CALIB_N_NCCL_ENV; k++)
      if (env[i].key != NULL && env[i].value != NULL
          && strcmp (env[i].key, sp_calib_nccl_env_names[k]) == 0)
        v[k] = env[i].value;
  /* every NCCL_* variable, the last of a name repeated, in order (the
   * arrays are NULL-terminated; the trace's strings are copied) */
  g_autofree const char **var_names = NULL, **var_values = NULL;
  if (sp_trace_nccl_vars (trace, &var_names, &var_values) > 0)
    {
      out->var_names = g_strdupv ((GStrv) var_names);
      out->var_values = g_strdupv ((GStrv) var_values);
    }
  out->decides = own_run;
  /* the syntax and the algorithms are the NCCL's that ran (0: unknown,
   * read as today's) */
  const char *runtime = sp_trace_software (trace, "nccl_runtime");
  int version = sp_topo_nccl_version_code (runtime);
  if (version > 0)
    {
      /* as the code reads it: "2.21.5", whatever else the trace wrote */
      out->nccl_version = sp_topo_nccl_version_text (version);
      out->lacking = sp_topo_nccl_algos_lacking (version);
    }
  GString *problems = NULL;
  for (guint k = 0; k < SP_CALIB_N_NCCL_ENV; k++)
    {
      if (v[k] == NULL)
        continue;
      out->env[k] = g_strdup (v[k]);
      out->decides = TRUE;
      if (k == 2)
        {
          /* as NCCL's ncclLoadParam reads it: strtoll (v, NULL, 0) of a
           * non-empty value, so "0", "0x0", "00" and the log's "0." (NCCL
           * prints integer parameters with a period) are 0 */
          errno = 0;
          if (v[k][0] != '\0' && strtoll (v[k], NULL, 0) == 0 && errno == 0)
            for (guint f = 0; f < SP_TOPO_NCCL_FUNCS; f++)
              out->algo_off[f] |= (guint8) ((1u << SP_ALGO_NVLS) | (1u << SP_ALGO_NVLS_TREE));
          continue;
        }
      g_autofree char *what = g_strdup_printf ("%s: /meta/env %s", name, sp_calib_nccl_env_names[k]);
      guint8 off[SP_TOPO_NCCL_FUNCS] = { 0 };
      g_autoptr (GError) local = NULL;
      if (!sp_topo_nccl_parse_as (what, v[k], k == 1, version, off, &local))
        {
          if (problems == NULL)
            problems = g_string_new (NULL);
          g_string_append_printf (problems, "%s%s; left out", problems->len ? "; " : "",
                                  local->message);
          continue;
        }
      /* per-collective entries its NCCL read otherwise: read as it did,
       * and said */
      g_autofree char *reading = sp_topo_nccl_reads_otherwise (v[k], k == 1, version);
      if (reading != NULL)
        {
          if (problems == NULL)
            problems = g_string_new (NULL);
          g_autofree char *shown = sp_topo_nccl_excerpt (v[k]);
          g_string_append_printf (problems, "%s%s '%s': NCCL %s, which ran it, reads no "
                                  "per-collective entries (they need NCCL 2.24), so it read %s",
                                  problems->len ? "; " : "", what, shown, out->nccl_version,
                                  reading);
        }
      guint8 *dst = k == 1 ? out->proto_off : out->algo_off;
      for (guint f = 0; f < SP_TOPO_NCCL_FUNCS; f++)
        dst[f] |= off[f];
    }
  out->problem = problems ? g_string_free (problems, FALSE) : NULL;
}

/* A collective of the trace (bit of `used`: sp_topo_nccl_func) that the
 * recorded values leave nothing (by one variable, or NCCL_ALGO and
 * NCCL_NVLS_ENABLE together): NCCL fails every such call, so the trace's
 * ops of it did not run so; its restriction is left out, the others'
 * kept, and e->problem says so. */
static void
drop_empty (SourceEnv *e, const char *name, guint used)
{
  GString *problems = e->problem ? g_string_new (e->problem) : NULL;
  for (guint k = 0; k < 2; k++)
    {
      guint8 *dst = k == 1 ? e->proto_off : e->algo_off;
      GString *which = NULL;
      for (guint f = 0; f < SP_TOPO_NCCL_FUNCS; f++)
        {
          /* what NCCL has for it: broadcast and reduce run Ring only */
          SpColl c = sp_topo_nccl_coll (f);
          guint8 all = k == 1 ? 0x07 : sp_topo_nccl_algos_of (c);
          guint8 gone = (guint8) (dst[f] | (k == 0 ? e->lacking : 0));
          if (!(used & (1u << f)) || (gone & all) != all)
            continue;
          if (which == NULL)
            which = g_string_new (NULL);
          g_string_append_printf (which, "%s%s", which->len ? ", " : "", sp_coll_name (c));
          dst[f] = 0;
        }
      if (which == NULL)
        continue;
      if (problems == NULL)
        problems = g_string_new (NULL);
      const char *v = e->env[k];
      g_autofree char *shown = v ? sp_topo_nccl_excerpt (v) : g_strdup ("");
      g_autofree char *in_version = k == 0 && e->lacking != 0
                                      ? g_strdup_printf (" in NCCL %s", e->nccl_version)
                                      : NULL;
      g_string_append_printf (problems, "%s%s: /meta/env %s '%s'%s leaves %s no %s%s (NCCL fails "
                              "such calls, so those ops did not run with it); left out for %s",
                              problems->len ? "; " : "", name, sp_calib_nccl_env_names[k], shown,
                              k == 0 && e->env[2] != NULL ? " with NCCL_NVLS_ENABLE" : "", which->str,
                              k == 1 ? "protocol" : "algorithm", in_version ? in_version : "",
                              which->str);
      g_string_free (which, TRUE);
    }
  g_free (e->problem);
  e->problem = problems ? g_string_free (problems, FALSE) : NULL;
}

const SpCalibCounts *
sp_calib_data_counts (const SpCalibData *d)
{
  g_return_val_if_fail (d != NULL, NULL);
  return &d->counts;
}

char *
sp_calib_counts_left_out (const SpCalibCounts *c)
{
  g_return_val_if_fail (c != NULL, NULL);
  return g_strdup_printf ("%" G_GUINT64_FORMAT " not ok, %" G_GUINT64_FORMAT " composite, %"
                          G_GUINT64_FORMAT " not a group collective, %" G_GUINT64_FORMAT
                          " on one rank, %" G_GUINT64_FORMAT " modelled, %" G_GUINT64_FORMAT
                          " zero time", c->not_ok, c->composite, c->not_collective, c->one_rank,
                          c->modelled, c->zero);
}

/* The kinds sp_sim_estimate() costs on a whole group (send and recv: the
 * exchange around it, as nccl-tests' sendrecv and the executor run it),
 * and p2p on its sender and receiver (named by the trace's plan). */
static gboolean
kind_is_group_collective (SpColl c)
{
  return c == SP_COLL_ALL_REDUCE || c == SP_COLL_ALL_GATHER || c == SP_COLL_REDUCE_SCATTER
         || c == SP_COLL_ALL_TO_ALL || c == SP_COLL_BROADCAST || c == SP_COLL_REDUCE
         || c == SP_COLL_SEND || c == SP_COLL_RECV || c == SP_COLL_P2P;
}

static int
cmp_i64 (const void *a, const void *b)
{
  gint64 x = *(const gint64 *) a, y = *(const gint64 *) b;
  return x < y ? -1 : x > y;
}

static int
cmp_u32 (const void *a, const void *b)
{
  guint32 x = *(const guint32 *) a, y = *(const guint32 *) b;
  return x < y ? -1 : x > y;
}

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

/* numpy's "linear" quantile of sorted values */
static double
quantile_sorted (const double *v, gsize n, double q)
{
  if (n == 0)
    return 0;
  double pos = q * (double) (n - 1);
  gsize lo = (gsize) floor (pos);
  gsize hi = MIN (lo + 1, n - 1);
  return v[lo] + (pos - (double) lo) * (v[hi] - v[lo]);
}

void
sp_calib_error_stats (const double *errors, gsize n, SpCalibErrorStats *out)
{
  g_return_if_fail (out != NULL && (errors != NULL || n == 0));
  memset (out, 0, sizeof *out);
  out->n = (guint32) n;
  if (n == 0)
    return;
  g_autofree double *a = g_new (double, n);
  for (gsize i = 0; i < n; i++)
    a[i] = fabs (errors[i]);
  qsort (a, n, sizeof *a, cmp_double);
  out->median_abs = quantile_sorted (a, n, 0.5);
  out->p90_abs = quantile_sorted (a, n, 0.9);
  out->worst_abs = a[n - 1];
}

/* What one op_id collected while reading. */
typedef struct {
  GArray *durs;      /* gint64 */
  SpColl coll;
  guint64 bytes;
  guint32 group_id;  /* lowest seen */
} OpAcc;

static void
op_acc_free (gpointer p)
{
  OpAcc *a = p;
  if (a->durs)
    g_array_unref (a->durs);
  g_free (a);
}

static void
push_point (SpCalibData *d, const SpCalibPoint *p)
{
  guint32 *ranks = g_memdup2 (p->ranks, sizeof (guint32) * p->n_ranks);
  g_ptr_array_add (d->rank_store, ranks);
  SpCalibPoint copy = *p;
  copy.ranks = ranks;
  g_array_append_val (d->points, copy);
}

/* Where the trace's /meta/cluster put its ranks on a topology of `nodes` x
 * `gpn` GPUs: *out_map[r] = node_id x gpn + local_rank (g_free), or NULL
 * when the cluster is absent, does not cover every rank once, puts two
 * ranks on one GPU, or is the block placement anyway.  FALSE when it puts
 * a rank outside the topology: the trace ran on another layout, and ranks
 * placed in block order would pair the wrong links. */
static gboolean
cluster_placement (SpTrace *trace, const char *name, guint32 nodes, guint32 gpn,
                   guint32 **out_map, GError **error)
{
  *out_map = NULL;
  guint32 world = sp_trace_header (trace)->world_size;
  gsize n = 0;
  const SpTraceRank *cr = sp_trace_ranks (trace, &n);
  if (cr == NULL || n != world || world == 0 || nodes == 0 || gpn == 0)
    return TRUE;
  for (gsize i = 0; i < n; i++)
    if (cr[i].node_id >= nodes || cr[i].local_rank >= gpn)
      {
        g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                     "%s: its /meta/cluster ran rank %u on node %u, local rank %u, outside "
                     "the topology's %u x %u GPUs (give the topology and --nodes it was "
                     "measured on)", name, cr[i].rank, cr[i].node_id, cr[i].local_rank, nodes,
                     gpn);
        return FALSE;
      }
  g_autofree guint32 *map = g_new (guint32, world);
  g_autofree gboolean *seen = g_new0 (gboolean, world);
  g_autoptr (GHashTable) used = g_hash_table_new (g_direct_hash, g_direct_equal);
  gboolean block = TRUE;
  for (gsize i = 0; i < n; i++)
    {
      const SpTraceRank *r = &cr[i];
      if (r->rank >= world || seen[r->rank])
        return TRUE;
      seen[r->rank] = TRUE;
      guint32 g = r->node_id * gpn + r->local_rank;
      if (g_hash_table_contains (used, GUINT_TO_POINTER (g)))
        return TRUE;
      g_hash_table_add (used, GUINT_TO_POINTER (g));
      map[r->rank] = g;
      block &= g == r->rank;
    }
  if (!block)
    *out_map = g_steal_pointer (&map);
  return TRUE;
}

static gboolean add_trace_mapped (SpCalibData *d, SpTrace *trace, const char *name,
                                  guint32 world_size, const guint32 *map, GError **error);

gboolean
sp_calib_data_add_trace (SpCalibData *d, SpTrace *trace, const char *name, guint32 world_size,
                         GError **error)
{
  g_return_val_if_fail (d != NULL && trace != NULL && name != NULL, FALSE);
  return add_trace_mapped (d, trace, name, world_size, NULL, error);
}

gboolean
sp_calib_data_add_trace_on (SpCalibData *d, SpTrace *trace, const char *name, guint32 nodes,
                            guint32 gpus_per_node, GError **error)
{
  g_return_val_if_fail (d != NULL && trace != NULL && name != NULL, FALSE);
  g_autofree guint32 *map = NULL;
  guint64 capacity = (guint64) nodes * gpus_per_node;
  /* (a trace of more ranks than the topology: add_trace_mapped says so) */
  if (sp_trace_header (trace)->world_size <= capacity
      && !cluster_placement (trace, name, nodes, gpus_per_node, &map, error))
    return FALSE;
  guint64 world = (guint64) nodes * gpus_per_node;
  return add_trace_mapped (d, trace, name, (guint32) MIN (world, (guint64) G_MAXUINT32), map,
                           error);
}

/* map: NULL, or the topology rank of each trace rank (world_size entries). */
static gboolean
add_trace_mapped (SpCalibData *d, SpTrace *trace, const char *name, guint32 world_size,
                  const guint32 *map, GError **error)
{
  const SpTraceHeader *h = sp_trace_header (trace);
  if (world_size > 0 && h->world_size > world_size)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "%s has world size %u, more than the topology's %u ranks (use --nodes or "
                   "the topology the trace was measured on)",
                   name, h->world_size, world_size);
      return FALSE;
    }
  /* what NCCL was allowed to choose when the trace ran */
  gboolean own_run = g_strcmp0 (sp_trace_header (trace)->producer, "shardplan run") == 0;
  g_auto (SourceEnv) senv = { { NULL } };
  trace_nccl_env (trace, name, own_run, &senv);
  /* algorithm hints from the plan the trace ran */
  g_autoptr (SpPlan) plan = NULL;
  const char *plan_text = sp_trace_plan_text (trace);
  if (plan_text != NULL)
    {
      g_autoptr (GError) perr = NULL;
      plan = sp_plan_from_json (plan_text, -1, 0, &perr);
      if (plan == NULL)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: its /meta/plan cannot be read: %s",
                       name, perr->message);
          return FALSE;
        }
    }

  SpCalibCounts c = { 0 };
  g_autoptr (GHashTable) ops = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL,
                                                      op_acc_free);
  guint64 n_rows = sp_trace_n_rows (trace);
  g_autofree SpTraceRow *rows = g_new (SpTraceRow, MIN (n_rows, (guint64) READ_CHUNK) + 1);
  for (guint64 start = 0; start < n_rows; start += READ_CHUNK)
    {
      gsize n = (gsize) MIN ((guint64) READ_CHUNK, n_rows - start);
      if (!sp_trace_read_rows (trace, start, n, rows, error))
        return FALSE;
      for (gsize i = 0; i < n; i++)
        {
          const SpTraceRow *r = &rows[i];
          c.rows++;
          if (r->status != SP_TRACE_STATUS_OK)
            c.not_ok++;
          else if (r->flags & SP_TRACE_FLAG_COMPOSITE)
            c.composite++;
          else if (!kind_is_group_collective (r->coll) || r->group_id == SP_TRACE_NO_GROUP
                   || ((r->coll == SP_COLL_SEND || r->coll == SP_COLL_RECV) && r->group_size < 2))
            c.not_collective++; /* a send / recv needs a peer */
          else if (r->group_size < 2)
            c.one_rank++; /* nothing crosses a link: the simulator gives it no time */
          else if (r->flags & SP_TRACE_FLAG_MODELLED)
            c.modelled++;
          else if (r->dur_ns <= 0)
            c.zero++;
          else
            {
              OpAcc *a = g_hash_table_lookup (ops, GUINT_TO_POINTER (r->op_id));
              if (a == NULL)
                {
                  a = g_new0 (OpAcc, 1);
                  a->durs = g_array_new (FALSE, FALSE, sizeof (gint64));
                  a->coll = r->coll;
                  a->bytes = r->bytes;
                  a->group_id = r->group_id;
                  g_hash_table_insert (ops, GUINT_TO_POINTER (r->op_id), a);
                }
              a->group_id = MIN (a->group_id, r->group_id);
              g_array_append_val (a->durs, r->dur_ns);
              c.used++;
            }
        }
    }

  /* points in op_id order, so that the data does not depend on row order */
  guint n_ops = g_hash_table_size (ops);
  g_autofree guint32 *ids = g_new (guint32, n_ops + 1);
  GHashTableIter it;
  gpointer key, value;
  guint k = 0;
  g_hash_table_iter_init (&it, ops);
  while (g_hash_table_iter_next (&it, &key, &value))
    ids[k++] = GPOINTER_TO_UINT (key);
  qsort (ids, n_ops, sizeof *ids, cmp_u32);
  guint used = 0; /* the collectives NCCL tunes that the trace's ops are */
  for (guint j = 0; j < n_ops; j++)
    {
      OpAcc *a = g_hash_table_lookup (ops, GUINT_TO_POINTER (ids[j]));
      int f = sp_topo_nccl_func (a->coll);
      if (f >= 0)
        used |= 1u << f;
    }
  drop_empty (&senv, name, used);
  SpTopoSpec env_spec = { 0 }; /* what the run let NCCL choose, for the plan's hints */
  memcpy (env_spec.nccl_algo_off, senv.algo_off, sizeof senv.algo_off);

  guint32 source = d->sources->len;
  guint old_len = d->points->len;
  for (guint j = 0; j < n_ops; j++)
    {
      OpAcc *a = g_hash_table_lookup (ops, GUINT_TO_POINTER (ids[j]));
      guint32 size = 0;
      const guint32 *members = sp_trace_group_members (trace, a->group_id, &size);
      if (members == NULL || size == 0)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                       "%s: op %u runs in group %u, which the trace's /groups does not have",
                       name, ids[j], a->group_id);
          goto fail;
        }
      for (guint32 m = 0; m < size; m++)
        if (members[m] >= h->world_size)
          {
            g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                         "%s: group %u has rank %u, outside world size %u", name, a->group_id,
                         members[m], h->world_size);
            goto fail;
          }
      guint32 pair[2];
      if (a->coll == SP_COLL_P2P)
        {
          /* the group's sender and receiver, from the plan the trace ran */
          const SpOp *po = plan != NULL && ids[j] < sp_plan_n_ops (plan) ? sp_plan_op (plan, ids[j])
                                                                         : NULL;
          if (po == NULL || po->kind != SP_COLL_P2P || po->src >= size || po->dst >= size)
            {
              g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                           "%s: op %u is a p2p op, but the trace's /meta/plan does not name its "
                           "sender and receiver in group %u", name, ids[j], a->group_id);
              goto fail;
            }
          pair[0] = members[po->src];
          pair[1] = members[po->dst];
          members = pair;
          size = 2;
        }
      g_array_sort (a->durs, cmp_i64);
      gsize nd = a->durs->len;
      const gint64 *v = (const gint64 *) (const void *) a->durs->data;
      double med = nd % 2 ? (double) v[nd / 2] : 0.5 * ((double) v[nd / 2 - 1] + (double) v[nd / 2]);
      g_autofree guint32 *placed = NULL;
      if (map != NULL)
        {
          placed = g_new (guint32, size);
          for (guint32 m = 0; m < size; m++)
            placed[m] = map[members[m]];
        }
      SpCalibPoint p = { .source = source, .op_id = ids[j], .coll = a->coll, .bytes = a->bytes,
                         .algo = SP_ALGO_AUTO, .n_ranks = size,
                         .ranks = placed ? placed : members,
                         .n_samples = nd, .measured_ns = med, .holdout = FALSE };
      /* the plan's algorithm hint, where it can have run: shardplan's own
       * executor passes no hint to NCCL (NCCL chose, within the run's
       * NCCL_ALGO), and a hint that NCCL_ALGO refuses, or that the run's
       * NCCL did not have, did not run either */
      if (plan != NULL && ids[j] < sp_plan_n_ops (plan) && !own_run)
        p.algo = sp_plan_op (plan, ids[j])->algorithm;
      if (senv.decides && !sp_topo_spec_nccl_allows (&env_spec, p.coll, p.algo, SP_PROTO_AUTO))
        p.algo = SP_ALGO_AUTO;
      if ((guint) p.algo < 8 && (senv.lacking & (1u << p.algo))) /* its NCCL had none */
        p.algo = SP_ALGO_AUTO;
      push_point (d, &p);
    }
  add_source (d, name, &senv);
  d->counts.rows += c.rows;
  d->counts.used += c.used;
  d->counts.not_ok += c.not_ok;
  d->counts.composite += c.composite;
  d->counts.not_collective += c.not_collective;
  d->counts.one_rank += c.one_rank;
  d->counts.modelled += c.modelled;
  d->counts.zero += c.zero;
  return TRUE;

fail:
  g_ptr_array_set_size (d->rank_store, d->rank_store->len - (d->points->len - old_len));
  g_array_set_size (d->points, old_len);
  return FALSE;
}

gboolean
sp_calib_data_add_point (SpCalibData *d, const SpCalibPoint *p, const char *name, GError **error)
{
  g_return_val_if_fail (d != NULL && p != NULL, FALSE);
  if (p->source > d->sources->len)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "point source %u: expected an input index <= %u", p->source, d->sources->len);
      return FALSE;
    }
  if (!(p->measured_ns > 0) || !isfinite (p->measured_ns))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "op %u: measured time %g ns is not a positive number", p->op_id, p->measured_ns);
      return FALSE;
    }
  if (p->n_ranks == 0 || p->ranks == NULL)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT, "op %u has no ranks", p->op_id);
      return FALSE;
    }
  if (p->source == d->sources->len)
    add_source (d, name ? name : "points", NULL);
  push_point (d, p);
  return TRUE;
}

gboolean
sp_calib_holdout_parse (const char *text, SpCalibHoldout *out, GError **error)
{
  g_return_val_if_fail (text != NULL && out != NULL, FALSE);
  static const char accepted[] =
      "expected size:>=BYTES, size:<BYTES, size:=BYTES[,BYTES...], ranks:N or file:PATH";
  SpCalibHoldout h = { .kind = SP_CALIB_HOLDOUT_NONE };
  g_autofree char *what = g_strdup_printf ("--holdout %s", text);
  if (g_str_has_prefix (text, "size:>="))
    {
      h.kind = SP_CALIB_HOLDOUT_SIZE_GE;
      if (!sp_parse_bytes (what, text + 7, 1, G_MAXUINT64, &h.value, error))
        return FALSE;
    }
  else if (g_str_has_prefix (text, "size:="))
    {
      h.kind = SP_CALIB_HOLDOUT_SIZES;
      g_auto (GStrv) parts = g_strsplit (text + 6, ",", -1);
      h.n_sizes = g_strv_length (parts);
      h.sizes = g_new0 (guint64, MAX (h.n_sizes, 1));
      for (guint i = 0; i < h.n_sizes; i++)
        {
          /* name the item: "size 2 of --holdout size:=8,,64" */
          g_autofree char *item = h.n_sizes > 1 ? g_strdup_printf ("size %u of %s", i + 1, what)
                                                : g_strdup (what);
          if (!sp_parse_bytes (item, parts[i], 1, G_MAXUINT64, &h.sizes[i], error))
            {
              g_free (h.sizes);
              return FALSE;
            }
        }
      if (h.n_sizes == 0)
        {
          g_free (h.sizes);
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT, "--holdout '%s': %s", text,
                       accepted);
          return FALSE;
        }
    }
  else if (g_str_has_prefix (text, "size:<"))
    {
      h.kind = SP_CALIB_HOLDOUT_SIZE_LT;
      if (!sp_parse_bytes (what, text + 6, 1, G_MAXUINT64, &h.value, error))
        return FALSE;
    }
  else if (g_str_has_prefix (text, "ranks:"))
    {
      h.kind = SP_CALIB_HOLDOUT_RANKS;
      if (!sp_parse_u64 (what, text + 6, 1, 1u << 31, &h.value, error))
        return FALSE;
    }
  else if (g_str_has_prefix (text, "file:") && text[5] != '\0')
    {
      h.kind = SP_CALIB_HOLDOUT_FILE;
      h.file = g_strdup (text + 5);
    }
  else
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT, "--holdout '%s': %s", text,
                   accepted);
      return FALSE;
    }
  *out = h;
  return TRUE;
}

void
sp_calib_holdout_clear (SpCalibHoldout *h)
{
  if (h == NULL)
    return;
  g_clear_pointer (&h->file, g_free);
  g_clear_pointer (&h->sizes, g_free);
  h->n_sizes = 0;
  h->kind = SP_CALIB_HOLDOUT_NONE;
  h->value = 0;
}

char *
sp_calib_holdout_to_string (const SpCalibHoldout *h)
{
  g_return_val_if_fail (h != NULL, NULL);
  switch (h->kind)
    {
    case SP_CALIB_HOLDOUT_SIZE_GE:
      return g_strdup_printf ("size:>=%" G_GUINT64_FORMAT, h->value);
    case SP_CALIB_HOLDOUT_SIZE_LT:
      return g_strdup_printf ("size:<%" G_GUINT64_FORMAT, h->value);
    case SP_CALIB_HOLDOUT_RANKS:
      return g_strdup_printf ("ranks:%" G_GUINT64_FORMAT, h->value);
    case SP_CALIB_HOLDOUT_FILE:
      return g_strdup_printf ("file:%s", h->file ? h->file : "");
    case SP_CALIB_HOLDOUT_SIZES:
      {
        GString *out = g_string_new ("size:=");
        for (guint i = 0; i < h->n_sizes; i++)
          g_string_append_printf (out, "%s%" G_GUINT64_FORMAT, i ? "," : "", h->sizes[i]);
        return g_string_free (out, FALSE);
      }
    default:
      return g_strdup ("none");
    }
}

/* TRUE when `a` and `b` name the same file: same string, or the same
 * device and inode. */
static gboolean
same_file (const char *a, const char *b)
{
  if (strcmp (a, b) == 0)
    return TRUE;
  GStatBuf sa, sb;
  return g_stat (a, &sa) == 0 && g_stat (b, &sb) == 0 && sa.st_dev == sb.st_dev
         && sa.st_ino == sb.st_ino;
}

gint64
sp_calib_data_find_source (const SpCalibData *d, const char *path)
{
  g_return_val_if_fail (d != NULL && path != NULL, -1);
  for (guint s = 0; s < d->sources->len; s++)
    if (same_file (path, g_ptr_array_index (d->sources, s)))
      return s;
  return -1;
}

gboolean
sp_calib_data_apply_holdout (SpCalibData *d, const SpCalibHoldout *h, GError **error)
{
  g_return_val_if_fail (d != NULL && h != NULL, FALSE);
  if (d->points->len == 0)
    {
      g_autofree char *left_out = sp_calib_counts_left_out (&d->counts);
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "no usable measured op (ok, timed collectives of a group of 2+ ranks) in the "
                   "inputs (%" G_GUINT64_FORMAT " rows: %s)", d->counts.rows, left_out);
      return FALSE;
    }
  gint64 file_source = -1;
  if (h->kind == SP_CALIB_HOLDOUT_FILE)
    {
      file_source = sp_calib_data_find_source (d, h->file);
      if (file_source < 0)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                       "--holdout file:%s names none of the inputs", h->file);
          return FALSE;
        }
    }
  gsize held = 0;
  for (guint i = 0; i < d->points->len; i++)
    {
      SpCalibPoint *p = &g_array_index (d->points, SpCalibPoint, i);
      switch (h->kind)
        {
        case SP_CALIB_HOLDOUT_SIZE_GE:
          p->holdout = p->bytes >= h->value;
          break;
        case SP_CALIB_HOLDOUT_SIZE_LT:
          p->holdout = p->bytes < h->value;
          break;
        case SP_CALIB_HOLDOUT_RANKS:
          p->holdout = p->n_ranks == h->value;
          break;
        case SP_CALIB_HOLDOUT_FILE:
          p->holdout = p->source == (guint32) file_source;
          break;
        case SP_CALIB_HOLDOUT_SIZES:
          p->holdout = FALSE;
          for (guint k = 0; k < h->n_sizes && !p->holdout; k++)
            p->holdout = p->bytes == h->sizes[k];
          break;
        default:
          p->holdout = FALSE;
          break;
        }
      held += p->holdout ? 1 : 0;
    }
  if (h->kind != SP_CALIB_HOLDOUT_NONE && (held == 0 || held == d->points->len))
    {
      g_autofree char *spec = sp_calib_holdout_to_string (h);
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   held == 0 ? "--holdout %s holds out no op of the %u measured"
                             : "--holdout %s holds out all %u measured ops: nothing left to fit",
                   spec, d->points->len);
      for (guint i = 0; i < d->points->len; i++)
        g_array_index (d->points, SpCalibPoint, i).holdout = FALSE;
      return FALSE;
    }
  return TRUE;
}

gsize
sp_calib_data_n_holdout (const SpCalibData *d)
{
  g_return_val_if_fail (d != NULL, 0);
  gsize n = 0;
  for (guint i = 0; i < d->points->len; i++)
    n += g_array_index (d->points, SpCalibPoint, i).holdout ? 1 : 0;
  return n;
}

gsize
sp_calib_data_n_fit (const SpCalibData *d)
{
  g_return_val_if_fail (d != NULL, 0);
  return d->points->len - sp_calib_data_n_holdout (d);
}
