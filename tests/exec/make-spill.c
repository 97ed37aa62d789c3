/* tests/exec/make-spill.c — writes spill files for `shardplan trace
 * recover` tests with the spill writer (exec/spill.c), so that they follow
 * this build's row layout; the hostile ones are valid files but for one
 * thing (issue 15, finding 8):
 *
 *   make-spill ok OUT            rank 0 of a 2-rank run: 4 rows, 1 mark
 *   make-spill world OUT [N]     world_size N (2^31 - 1), the plan's too (one op)
 *   make-spill marks OUT N       N rows of op 0, then N marks of op 0
 *   make-spill deep OUT          a header record nested 100,000 levels deep
 *   make-spill fields OUT        row_fields entries of the wrong JSON types
 *   make-spill clock OUT         a clock offset and an epoch near gint64's ends
 */
#include "config.h"
#include "exec-internal.h"
#include "shardplan/shardplan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
die (const char *what, GError *e)
{
  fprintf (stderr, "make-spill: %s: %s\n", what, e ? e->message : "failed");
  exit (1);
}

/* A one-op plan of `world` ranks: its JSON and digest (g_free). */
static void
make_plan (guint32 world, char **out_text, char **out_digest)
{
  SpGroupsOptions o;
  sp_groups_options_init (&o);
  o.world_size = world;
  o.devices_per_node = 1;
  g_autoptr (SpPlan) plan = sp_plan_new (&o);
  SpOp op = { .parent = -1, .name = "ar", .layer = 0, .phase = SP_PHASE_BACKWARD,
              .kind = SP_COLL_ALL_REDUCE, .family = SP_FAMILY_WORLD, .bytes = 4096, .count = 1024,
              .dtype = SP_DTYPE_FLOAT32, .redop = SP_REDOP_SUM, .algorithm = SP_ALGO_AUTO };
  GError *e = NULL;
  if (!sp_plan_add_op (plan, &op, NULL, &e))
    die ("plan", e);
  *out_text = sp_plan_to_json (plan);
  *out_digest = sp_plan_digest (plan);
}

static SpTraceRow
row (guint32 op, gint64 start)
{
  SpTraceRow r;
  sp_trace_row_init (&r);
  r.op_id = op;
  r.rank = 0;
  r.coll = SP_COLL_ALL_REDUCE;
  r.dtype = SP_DTYPE_FLOAT32;
  r.redop = SP_REDOP_SUM;
  r.status = SP_TRACE_STATUS_OK;
  r.count = 1024;
  r.bytes = 4096;
  r.group_size = 2;
  r.t_enqueue_ns = r.t_start_ns = start;
  r.dur_ns = 500;
  r.t_end_ns = start + 500;
  return r;
}

static FILE *
start (const char *path, guint32 world, gint64 offset_ns, gint64 epoch_ns)
{
  g_autofree char *plan = NULL, *digest = NULL;
  make_plan (world, &plan, &digest);
  FILE *f = fopen (path, "wb");
  if (!f)
    die (path, NULL);
  SpExecSpillRun run = {
    .rank = 0, .world_size = world, .run_id = "run-hostile", .output = "out.h5",
    .producer = "shardplan run", .producer_version = "0", .clock = "MPI_Wtime",
    .timing_mode = "isolated", .check_policy = "after", .warmup_iters = 0, .iters = 1,
    .plan_digest = digest, .plan_text = plan,
  };
  GError *e = NULL;
  if (!sp_exec_spill_write_run (f, &run, &e))
    die (path, e);
  SpExecSpillRank info = { .backend = "mpi", .hostname = "node0", .gpu_model = "",
                           .local_rank = 0, .device = -1, .clock_offset_ns = offset_ns };
  sp_exec_spill_write_info (f, &info, TRUE, epoch_ns);
  return f;
}

/* The file header and one RUN record of `json` by hand (the writer only
 * writes well-formed headers). */
static void
hand_run (const char *path, const char *json)
{
  FILE *f = fopen (path, "wb");
  if (!f)
    die (path, NULL);
  guint32 head[2] = { SP_EXEC_SPILL_VERSION, 0x01020304u };
  guint32 rec[2] = { 1, 0 };
  guint64 len = strlen (json);
  fwrite ("SPSPILL\0", 1, 8, f);
  fwrite (head, sizeof head, 1, f);
  fwrite (rec, sizeof rec, 1, f);
  fwrite (&len, sizeof len, 1, f);
  fwrite (json, 1, len, f);
  if (fclose (f) != 0)
    die (path, NULL);
}

int
main (int argc, char **argv)
{
  if (argc < 3)
    {
      fprintf (stderr, "usage: make-spill ok|world|marks|deep|fields|software|clock OUT [N]\n");
      return 2;
    }
  const char *kind = argv[1], *out = argv[2];
  FILE *f = NULL;
  if (strcmp (kind, "ok") == 0)
    {
      f = start (out, 2, -250, 1000);
      for (guint i = 0; i < 4; i++)
        {
          SpTraceRow r = row (0, 2000 + 1000 * (gint64) i);
          sp_exec_spill_write_rows (f, &r, 1);
        }
      sp_exec_spill_write_mark (f, 0, FALSE, SP_TRACE_STATUS_OK, SP_TRACE_FLAG_CHECKED);
    }
  else if (strcmp (kind, "world") == 0)
    f = start (out, argc > 3 ? (guint32) atol (argv[3]) : G_MAXINT32, 0, 0);
  else if (strcmp (kind, "marks") == 0)
    {
      guint n = argc > 3 ? (guint) atoi (argv[3]) : 30000;
      f = start (out, 2, 0, 0);
      g_autofree SpTraceRow *rows = g_new (SpTraceRow, n);
      for (guint i = 0; i < n; i++)
        rows[i] = row (0, 1000 * (gint64) i);
      sp_exec_spill_write_rows (f, rows, n);
      for (guint i = 0; i < n; i++)
        sp_exec_spill_write_mark (f, 0, TRUE, SP_TRACE_STATUS_OK, SP_TRACE_FLAG_CHECKED);
    }
  else if (strcmp (kind, "deep") == 0)
    {
      GString *s = g_string_new ("{\"format\": ");
      for (guint i = 0; i < 100000; i++)
        g_string_append_c (s, '[');
      for (guint i = 0; i < 100000; i++)
        g_string_append_c (s, ']');
      g_string_append_c (s, '}');
      hand_run (out, s->str);
      g_string_free (s, TRUE);
      return 0;
    }
  else if (strcmp (kind, "fields") == 0)
    {
      gsize n_fields = 0;
      sp_trace_row_fields (&n_fields);
      GString *fields = g_string_new ("[");
      for (gsize i = 0; i < n_fields; i++)
        g_string_append (fields, i ? ", [[], {}, []]" : "[[], {}, []]");
      g_string_append (fields, "]");
      g_autofree char *json = g_strdup_printf (
        "{\"format\": \"shardplan-spill\", \"spill_version\": 2, \"schema\": \"shardplan-trace\", "
        "\"schema_version\": \"%u.%u\", \"byte_order\": \"%s\", \"row_size\": %" G_GSIZE_FORMAT ", "
        "\"row_fields\": %s, \"rank\": 0, \"world_size\": 2}",
        SP_TRACE_SCHEMA_MAJOR, SP_TRACE_SCHEMA_MINOR,
        G_BYTE_ORDER == G_LITTLE_ENDIAN ? "little" : "big", sizeof (SpTraceRow), fields->str);
      g_string_free (fields, TRUE);
      hand_run (out, json);
      return 0;
    }
  else if (strcmp (kind, "software") == 0)
    {
      /* a software entry with an empty name (the trace writer cannot
       * store one: recover crashed on its unreported refusal) */
      g_autofree char *plan = NULL, *digest = NULL;
      make_plan (2, &plan, &digest);
      f = fopen (out, "wb");
      if (!f)
        die (out, NULL);
      g_autoptr (GPtrArray) sw = g_ptr_array_new ();
      g_ptr_array_add (sw, (gpointer) "");
      g_ptr_array_add (sw, (gpointer) "x");
      SpExecSpillRun run = {
        .rank = 0, .world_size = 2, .run_id = "run-hostile", .output = "out.h5",
        .producer = "shardplan run", .producer_version = "0", .clock = "MPI_Wtime",
        .timing_mode = "isolated", .check_policy = "after", .warmup_iters = 0, .iters = 1,
        .plan_digest = digest, .plan_text = plan, .software = sw,
      };
      GError *e = NULL;
      if (!sp_exec_spill_write_run (f, &run, &e))
        die (out, e);
    }
  else if (strcmp (kind, "clock") == 0)
    {
      f = start (out, 2, G_MININT64 + 1, G_MAXINT64 - 1);
      SpTraceRow r = row (0, G_MININT64 + 2);
      sp_exec_spill_write_rows (f, &r, 1);
    }
  else
    {
      fprintf (stderr, "make-spill: unknown kind '%s'\n", kind);
      return 2;
    }
  if (fclose (f) != 0)
    die (out, NULL);
  return 0;
}
