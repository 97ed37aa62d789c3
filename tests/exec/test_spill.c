/* tests/exec/test_spill.c — the spill file reader (exec/spill.c): a round
 * trip through the writer, and files built byte by byte from the format
 * described in exec/exec-internal.h (so the description is checked too),
 * cut short or damaged in the ways the reader must refuse or survive. */
#include "config.h"
#include "exec-internal.h"
#include "../testutil.h"

#include <string.h>

static char *tmpdir;

static void
setup (void)
{
  tmpdir = sp_test_tmpdir ();
}

static void
teardown (void)
{
  ck_assert (sp_test_rmtree (tmpdir));
  g_clear_pointer (&tmpdir, g_free);
}

static GPtrArray *
kv (const char *k1, const char *v1)
{
  GPtrArray *a = g_ptr_array_new ();
  g_ptr_array_add (a, (gpointer) k1);
  g_ptr_array_add (a, (gpointer) v1);
  return a;
}

static SpTraceRow
row (guint32 op, guint32 rank, gint64 start)
{
  SpTraceRow r;
  sp_trace_row_init (&r);
  r.op_id = op;
  r.rank = rank;
  r.coll = SP_COLL_ALL_REDUCE;
  r.status = SP_TRACE_STATUS_OK;
  r.bytes = 1024;
  r.t_enqueue_ns = start;
  r.t_start_ns = start;
  r.t_end_ns = start + 500;
  r.dur_ns = 500;
  return r;
}

/* A spill file of rank 2 written with the writer: run record, info,
 * epoch, then `n` rows.  Returns its path (g_free). */
static char *
write_spill (const char *name, guint n)
{
  char *path = g_build_filename (tmpdir, name, NULL);
  FILE *f = fopen (path, "wb");
  ck_assert_ptr_nonnull (f);
  g_autoptr (GPtrArray) sw = kv ("compiler", "cc 1.0");
  g_autoptr (GPtrArray) env = kv ("OMPI_X", "a=b");
  SpExecSpillRun run = {
    .rank = 2, .world_size = 4, .run_id = "run-1", .output = "out.h5",
    .producer = "shardplan run", .producer_version = "9.9", .clock = "MPI_Wtime",
    .timing_mode = "isolated", .warmup_iters = 1, .iters = 3, .plan_digest = "abc",
    .plan_text = "{\"plan\": 1}", .topology_text = NULL, .software = sw, .env = env,
  };
  GError *e = NULL;
  ck_assert (sp_exec_spill_write_run (f, &run, &e));
  g_autoptr (GPtrArray) rsw = kv ("mpi", "Open MPI v4");
  SpExecSpillRank info = { .backend = "mpi", .hostname = "node7", .gpu_model = "",
                           .local_rank = 1, .device = -1, .clock_offset_ns = -250,
                           .software = rsw };
  sp_exec_spill_write_info (f, &info, FALSE, 0);
  sp_exec_spill_write_info (f, NULL, TRUE, 123456789);
  for (guint i = 0; i < n; i++)
    {
      SpTraceRow r = row (i, 2, 1000 * (gint64) i);
      sp_exec_spill_write_rows (f, &r, 1);
    }
  ck_assert_int_eq (fclose (f), 0);
  return path;
}

static gsize
file_size (const char *path)
{
  GStatBuf st;
  ck_assert_int_eq (g_stat (path, &st), 0);
  return (gsize) st.st_size;
}

static void
truncate_to (const char *path, gsize len)
{
  g_autofree char *data = NULL;
  gsize n = 0;
  ck_assert (g_file_get_contents (path, &data, &n, NULL));
  ck_assert_uint_le (len, n);
  ck_assert (g_file_set_contents (path, data, (gssize) len, NULL));
}

/* A file by hand: the 16-byte header, then records (type, JSON or bytes). */
static void
put_u32 (GByteArray *b, guint32 v)
{
  g_byte_array_append (b, (const guint8 *) &v, 4);
}

static void
put_record (GByteArray *b, guint32 type, const void *payload, guint64 len)
{
  put_u32 (b, type);
  put_u32 (b, 0);
  g_byte_array_append (b, (const guint8 *) &len, 8);
  g_byte_array_append (b, payload, (guint) len);
}

static GByteArray *
hand_header (guint32 version, guint32 bom)
{
  GByteArray *b = g_byte_array_new ();
  g_byte_array_append (b, (const guint8 *) "SPSPILL\0", 8);
  put_u32 (b, version);
  put_u32 (b, bom);
  return b;
}

/* A hand-built file of `version` in this machine's byte order, with its
 * RUN record `run` (JSON text). */
static GByteArray *
hand_run (guint32 version, const char *run)
{
  GByteArray *b = hand_header (version, 0x01020304u);
  put_record (b, 1, run, strlen (run));
  return b;
}

/* This build's row_fields list, as JSON text. */
static char *
fields_json (void)
{
  static const char *const tags[] = { "u8", "u32", "i32", "u64", "i64", "f64", "str",
                                      "coll", "dtype", "redop", "status" };
  gsize n = 0;
  const SpTraceField *f = sp_trace_row_fields (&n);
  GString *s = g_string_new ("[");
  for (gsize i = 0; i < n; i++)
    g_string_append_printf (s, "%s[\"%s\", \"%s\", %" G_GSIZE_FORMAT "]", i ? ", " : "",
                            f[i].name, tags[f[i].kind], f[i].offset);
  g_string_append (s, "]");
  return g_string_free (s, FALSE);
}

static char *
run_json (const char *schema_version, gsize row_size, const char *fields)
{
  return g_strdup_printf (
    "{\"format\": \"shardplan-spill\", \"spill_version\": 1, \"schema\": \"shardplan-trace\", "
    "\"schema_version\": \"%s\", \"byte_order\": \"%s\", \"row_size\": %" G_GSIZE_FORMAT ", "
    "\"row_fields\": %s, \"rank\": 1, \"world_size\": 2, \"run_id\": \"r\", \"output\": \"o.h5\", "
    "\"producer\": \"shardplan run\", \"producer_version\": \"1\", \"clock\": \"MPI_Wtime\", "
    "\"timing_mode\": \"isolated\", \"warmup_iters\": 0, \"iters\": 1, \"plan_digest\": \"d\", "
    "\"plan\": \"{}\", \"topology\": null, \"software\": {}, \"env\": []}",
    schema_version, G_BYTE_ORDER == G_LITTLE_ENDIAN ? "little" : "big", row_size, fields);
}

static char *
save (const char *name, GByteArray *b)
{
  char *path = g_build_filename (tmpdir, name, NULL);
  ck_assert (g_file_set_contents (path, (const char *) b->data, b->len, NULL));
  g_byte_array_unref (b);
  return path;
}

/* ---------------------------------------------------------------- tests */

START_TEST (test_round_trip)
{
  g_autofree char *path = write_spill ("a.spill", 3);
  GError *e = NULL;
  g_autoptr (SpExecSpill) s = sp_exec_spill_read (path, &e);
  SP_ASSERT_NO_ERROR (e);
  ck_assert_uint_eq (s->run.rank, 2);
  ck_assert_uint_eq (s->run.world_size, 4);
  ck_assert_str_eq (s->run.run_id, "run-1");
  ck_assert_str_eq (s->run.output, "out.h5");
  ck_assert_str_eq (s->run.timing_mode, "isolated");
  ck_assert_uint_eq (s->run.warmup_iters, 1);
  ck_assert_uint_eq (s->run.iters, 3);
  ck_assert_str_eq (s->run.plan_digest, "abc");
  ck_assert_str_eq (s->run.plan_text, "{\"plan\": 1}");
  ck_assert_ptr_null (s->run.topology_text);
  ck_assert_uint_eq (s->run.software->len, 2);
  ck_assert_str_eq (g_ptr_array_index (s->run.software, 1), "cc 1.0");
  ck_assert_uint_eq (s->run.env->len, 2);
  ck_assert_str_eq (g_ptr_array_index (s->run.env, 0), "OMPI_X");
  ck_assert_str_eq (g_ptr_array_index (s->run.env, 1), "a=b");
  ck_assert (s->has_info);
  ck_assert_str_eq (s->info.hostname, "node7");
  ck_assert_str_eq (s->info.backend, "mpi");
  ck_assert_uint_eq (s->info.local_rank, 1);
  ck_assert_int_eq (s->info.device, -1);
  ck_assert_int_eq (s->info.clock_offset_ns, -250);
  ck_assert_str_eq (g_ptr_array_index (s->info.software, 1), "Open MPI v4");
  ck_assert (s->has_epoch);
  ck_assert_int_eq (s->epoch_ns, 123456789);
  ck_assert_uint_eq (s->rows->len, 3);
  ck_assert_uint_eq (s->dropped_bytes, 0);
  for (guint i = 0; i < 3; i++)
    {
      SpTraceRow want = row (i, 2, 1000 * (gint64) i);
      ck_assert (memcmp (&g_array_index (s->rows, SpTraceRow, i), &want, sizeof want) == 0);
    }
}
END_TEST

/* Cut 40 bytes into the third row: two whole rows, 40 bytes dropped. */
START_TEST (test_cut_mid_row)
{
  g_autofree char *path = write_spill ("cut.spill", 3);
  gsize full = file_size (path);
  truncate_to (path, full - sizeof (SpTraceRow) + 40);
  GError *e = NULL;
  g_autoptr (SpExecSpill) s = sp_exec_spill_read (path, &e);
  SP_ASSERT_NO_ERROR (e);
  ck_assert_uint_eq (s->rows->len, 2);
  ck_assert_uint_eq (s->dropped_bytes, 40);
  ck_assert_uint_eq (g_array_index (s->rows, SpTraceRow, 1).op_id, 1);
}
END_TEST

/* Cut inside the last row record's 16-byte header: all earlier rows, 5
 * bytes dropped. */
START_TEST (test_cut_record_header)
{
  g_autofree char *path = write_spill ("cuth.spill", 3);
  gsize full = file_size (path);
  truncate_to (path, full - sizeof (SpTraceRow) - 16 + 5);
  GError *e = NULL;
  g_autoptr (SpExecSpill) s = sp_exec_spill_read (path, &e);
  SP_ASSERT_NO_ERROR (e);
  ck_assert_uint_eq (s->rows->len, 2);
  ck_assert_uint_eq (s->dropped_bytes, 5);
}
END_TEST

START_TEST (test_cut_in_run_record)
{
  g_autofree char *path = write_spill ("cutr.spill", 0);
  truncate_to (path, 16 + 16 + 30);
  GError *e = NULL;
  SpExecSpill *s = sp_exec_spill_read (path, &e);
  ck_assert_ptr_null (s);
  SP_ASSERT_ERROR (e, SP_ERROR_INVALID_TRACE);
  ck_assert_msg (strstr (e->message, "cut short inside the header record (30 of"), "%s", e->message);
  ck_assert_ptr_null (strchr (e->message, '\n'));
  g_error_free (e);
}
END_TEST

START_TEST (test_bad_magic)
{
  GByteArray *b = g_byte_array_new ();
  g_byte_array_append (b, (const guint8 *) "\x01\x00\x00\x00garbage-rows-from-an-old-build", 33);
  g_autofree char *path = save ("old.spill", b);
  GError *e = NULL;
  ck_assert_ptr_null (sp_exec_spill_read (path, &e));
  SP_ASSERT_ERROR (e, SP_ERROR_INVALID_TRACE);
  ck_assert_msg (strstr (e->message, "old.spill: not a shardplan spill file (bad magic)"), "%s",
                 e->message);
  g_clear_error (&e);
  /* Empty file: also no magic. */
  g_autofree char *empty = save ("empty.spill", g_byte_array_new ());
  ck_assert_ptr_null (sp_exec_spill_read (empty, &e));
  ck_assert_msg (strstr (e->message, "bad magic"), "%s", e->message);
  g_error_free (e);
}
END_TEST

START_TEST (test_other_byte_order_and_version)
{
  g_autofree char *p1 = save ("bom.spill", hand_header (1, 0x04030201u));
  GError *e = NULL;
  ck_assert_ptr_null (sp_exec_spill_read (p1, &e));
  SP_ASSERT_ERROR (e, SP_ERROR_INVALID_TRACE);
  ck_assert_msg (strstr (e->message, "another byte order"), "%s", e->message);
  g_clear_error (&e);
  g_autofree char *p2 = save ("v3.spill", hand_header (3, 0x01020304u));
  ck_assert_ptr_null (sp_exec_spill_read (p2, &e));
  ck_assert_msg (strstr (e->message, "spill format version 3; this shardplan reads versions 1 to 2"),
                 "%s", e->message);
  g_clear_error (&e);
  g_autofree char *p0 = save ("v0.spill", hand_header (0, 0x01020304u));
  ck_assert_ptr_null (sp_exec_spill_read (p0, &e));
  ck_assert_msg (strstr (e->message, "spill format version 0;"), "%s", e->message);
  g_clear_error (&e);
}
END_TEST

/* A file of schema 1.0 (rows 8 bytes shorter, no nccl_est_ns) is refused,
 * and so is one of this schema whose fields moved.  (A file of schema 1.1,
 * whose rows are this build's, reads: the hand-built files below are 1.1.) */
START_TEST (test_other_row_layout)
{
  g_autofree char *fields = fields_json ();
  GError *e = NULL;
  {
    GByteArray *b = hand_header (1, 0x01020304u);
    g_autofree char *j = run_json ("1.0", sizeof (SpTraceRow) - 8, fields);
    put_record (b, 1, j, strlen (j));
    g_autofree char *path = save ("s10.spill", b);
    ck_assert_ptr_null (sp_exec_spill_read (path, &e));
    SP_ASSERT_ERROR (e, SP_ERROR_INVALID_TRACE);
    g_autofree char *want = g_strdup_printf ("written with another row layout (schema 1.0, %"
                                             G_GSIZE_FORMAT "-byte rows)", sizeof (SpTraceRow) - 8);
    ck_assert_msg (strstr (e->message, want), "%s", e->message);
    g_clear_error (&e);
  }
  {
    GByteArray *b = hand_header (1, 0x01020304u);
    g_autofree char *j = run_json ("1.1", sizeof (SpTraceRow) + 8, fields);
    put_record (b, 1, j, strlen (j));
    g_autofree char *path = save ("size.spill", b);
    ck_assert_ptr_null (sp_exec_spill_read (path, &e));
    g_autofree char *want = g_strdup_printf ("%" G_GSIZE_FORMAT "-byte rows", sizeof (SpTraceRow) + 8);
    ck_assert_msg (strstr (e->message, want), "%s", e->message);
    g_clear_error (&e);
  }
  {
    /* A field renamed in the list. */
    GByteArray *b = hand_header (1, 0x01020304u);
    g_autofree char *moved = g_strdup (fields);
    char *at = strstr (moved, "\"iter\"");
    ck_assert_ptr_nonnull (at);
    memcpy (at, "\"iteR\"", 6);
    g_autofree char *j = run_json ("1.1", sizeof (SpTraceRow), moved);
    put_record (b, 1, j, strlen (j));
    g_autofree char *path = save ("moved.spill", b);
    ck_assert_ptr_null (sp_exec_spill_read (path, &e));
    ck_assert_msg (strstr (e->message, "row field 2 is i32 iteR"), "%s", e->message);
    g_clear_error (&e);
  }
}
END_TEST

/* The hand-built file of this layout reads, and its rows follow. */
START_TEST (test_hand_built_ok_and_damage)
{
  g_autofree char *fields = fields_json ();
  g_autofree char *j = run_json ("1.1", sizeof (SpTraceRow), fields);
  SpTraceRow r[2] = { row (5, 1, 10), row (6, 1, 20) };
  GError *e = NULL;
  {
    GByteArray *b = hand_run (1, j);
    put_record (b, 3, r, sizeof r);
    g_autofree char *path = save ("hand.spill", b);
    g_autoptr (SpExecSpill) s = sp_exec_spill_read (path, &e);
    SP_ASSERT_NO_ERROR (e);
    ck_assert_uint_eq (s->rows->len, 2);
    ck_assert_uint_eq (g_array_index (s->rows, SpTraceRow, 1).op_id, 6);
    ck_assert (!s->has_info);
  }
  {
    /* Rows before the header: refused. */
    GByteArray *b = hand_header (1, 0x01020304u);
    put_record (b, 3, r, sizeof r);
    g_autofree char *p1 = save ("first.spill", b);
    ck_assert_ptr_null (sp_exec_spill_read (p1, &e));
    ck_assert_msg (strstr (e->message, "first record is of type 3"), "%s", e->message);
    g_clear_error (&e);
  }
  /* Damage after the header: the records before it are kept, nothing
   * after it is read (a valid rows record follows each), and the reader
   * says what and where. */
  SpTraceRow other = row (5, 3, 10);
  const struct {
    const char *name;
    guint32 type;
    const void *payload;
    guint64 len;
    const char *want;
  } damaged[] = {
    { "rank.spill", 3, &other, sizeof other, "row 0 of a rows record is of rank 3 in rank 1's file" },
    { "type.spill", 9, "x", 1, "a record of unknown type 9" },
    { "odd.spill", 3, r, sizeof r - 1, "a rows record of" },
    { "run2.spill", 1, NULL, 0, "a second header record" },
    { "info.spill", 2, "{\"device\": \"x\"}", 0, "info member 'device' is not an integer" },
    { "infojson.spill", 2, "{nope", 0, "the info record is not a JSON object" },
  };
  for (guint k = 0; k < G_N_ELEMENTS (damaged); k++)
    {
      GByteArray *b = hand_run (1, j);
      const char *info = "{\"hostname\": \"n1\", \"device\": 3}";
      put_record (b, 2, info, strlen (info));
      put_record (b, 3, r, sizeof r);
      const gsize at = b->len;
      /* a payload of length 0 here: a string (or, NULL, the header again) */
      const void *payload = damaged[k].payload ? damaged[k].payload : j;
      put_record (b, damaged[k].type, payload,
                  damaged[k].len ? damaged[k].len : strlen (payload));
      put_record (b, 3, r, sizeof r);
      const gsize total = b->len;
      g_autofree char *path = save (damaged[k].name, b);
      g_autoptr (SpExecSpill) s = sp_exec_spill_read (path, &e);
      SP_ASSERT_NO_ERROR (e);
      ck_assert_msg (s->rows->len == 2, "%s: %u rows", damaged[k].name, s->rows->len);
      ck_assert_uint_eq (g_array_index (s->rows, SpTraceRow, 1).op_id, 6);
      ck_assert_ptr_nonnull (s->damage);
      ck_assert_msg (strstr (s->damage, damaged[k].want), "%s: %s", damaged[k].name, s->damage);
      ck_assert_ptr_null (strstr (s->damage, path)); /* the path is said once, by the caller */
      /* a bad row: damage from that row (here the record's first) on */
      const gsize from = at + (strstr (damaged[k].want, "row 0 of") ? 16 : 0);
      ck_assert_uint_eq (s->damaged_at, from);
      ck_assert_uint_eq (s->dropped_bytes, total - from);
      /* a damaged INFO record changes nothing of the one before it */
      ck_assert (s->has_info);
      ck_assert_str_eq (s->info.hostname, "n1");
      ck_assert_int_eq (s->info.device, 3);
    }
  {
    /* The header record is not JSON; a required member missing. */
    GByteArray *b = hand_header (1, 0x01020304u);
    put_record (b, 1, "{not json", 9);
    g_autofree char *p1 = save ("json.spill", b);
    ck_assert_ptr_null (sp_exec_spill_read (p1, &e));
    ck_assert_msg (strstr (e->message, "the header record is not a JSON object"), "%s", e->message);
    ck_assert_ptr_null (strchr (e->message, '\n'));
    g_clear_error (&e);
    b = hand_header (1, 0x01020304u);
    g_autofree char *nodigest = g_strdup (j);
    char *at = strstr (nodigest, "\"plan_digest\"");
    memcpy (at, "\"plan_digesT\"", 13);
    put_record (b, 1, nodigest, strlen (nodigest));
    g_autofree char *p2 = save ("member.spill", b);
    ck_assert_ptr_null (sp_exec_spill_read (p2, &e));
    ck_assert_msg (strstr (e->message, "header member 'plan_digest' is missing"), "%s", e->message);
    g_clear_error (&e);
  }
}
END_TEST

/* MARK records (format version 2), built by hand from the description:
 * {u32 op_id, u32 stages, u32 status, u32 flags}, applied to the rows
 * before them.  Rows: op 5 (twice), op 7 (a composite's stage, parent 5),
 * op 6; a mark on op 5 with stages (wrong + CHECKED) reaches the three
 * rows of op 5 and its stage, not op 6; a mark on op 6 without stages
 * (ok + CHECKED) sets only the flag; a row of op 5 after the marks keeps
 * what it had.  The writer's record reads back the same. */
static void
put_mark (GByteArray *b, guint32 op, guint32 stages, guint32 status, guint32 flags)
{
  guint32 m[4] = { op, stages, status, flags };
  put_record (b, 4, m, sizeof m);
}

START_TEST (test_marks)
{
  g_autofree char *fields = fields_json ();
  g_autofree char *j = run_json ("1.1", sizeof (SpTraceRow), fields);
  SpTraceRow r[4] = { row (5, 1, 10), row (5, 1, 20), row (7, 1, 12), row (6, 1, 30) };
  r[2].parent_op_id = 5;
  SpTraceRow later = row (5, 1, 40);
  GError *e = NULL;
  {
    GByteArray *b = hand_run (2, j);
    put_record (b, 3, r, sizeof r);
    put_mark (b, 5, 1, SP_TRACE_STATUS_WRONG, SP_TRACE_FLAG_CHECKED);
    put_mark (b, 6, 0, SP_TRACE_STATUS_OK, SP_TRACE_FLAG_CHECKED);
    put_record (b, 3, &later, sizeof later);
    g_autofree char *path = save ("marks.spill", b);
    g_autoptr (SpExecSpill) s = sp_exec_spill_read (path, &e);
    SP_ASSERT_NO_ERROR (e);
    ck_assert_uint_eq (s->rows->len, 5);
    for (guint i = 0; i < 3; i++)
      {
        const SpTraceRow *x = &g_array_index (s->rows, SpTraceRow, i);
        ck_assert_int_eq (x->status, SP_TRACE_STATUS_WRONG);
        ck_assert_uint_eq (x->flags, SP_TRACE_FLAG_CHECKED);
      }
    const SpTraceRow *six = &g_array_index (s->rows, SpTraceRow, 3);
    ck_assert_int_eq (six->status, SP_TRACE_STATUS_OK);
    ck_assert_uint_eq (six->flags, SP_TRACE_FLAG_CHECKED);
    const SpTraceRow *after = &g_array_index (s->rows, SpTraceRow, 4);
    ck_assert_int_eq (after->status, SP_TRACE_STATUS_OK);
    ck_assert_uint_eq (after->flags, 0);
  }
  {
    /* Without stages the composite's stage row is left alone. */
    GByteArray *b = hand_run (2, j);
    put_record (b, 3, r, sizeof r);
    put_mark (b, 5, 0, SP_TRACE_STATUS_WRONG, SP_TRACE_FLAG_CHECKED);
    g_autofree char *path = save ("nostages.spill", b);
    g_autoptr (SpExecSpill) s = sp_exec_spill_read (path, &e);
    SP_ASSERT_NO_ERROR (e);
    ck_assert_int_eq (g_array_index (s->rows, SpTraceRow, 1).status, SP_TRACE_STATUS_WRONG);
    ck_assert_int_eq (g_array_index (s->rows, SpTraceRow, 2).status, SP_TRACE_STATUS_OK);
    ck_assert_uint_eq (g_array_index (s->rows, SpTraceRow, 2).flags, 0);
  }
  {
    /* The writer's record is the one described. */
    g_autofree char *path = g_build_filename (tmpdir, "written.spill", NULL);
    FILE *f = fopen (path, "wb");
    ck_assert_ptr_nonnull (f);
    SpExecSpillRun run = {
      .rank = 1, .world_size = 2, .run_id = "r", .output = "o.h5", .producer = "shardplan run",
      .producer_version = "1", .clock = "MPI_Wtime", .timing_mode = "isolated", .iters = 1,
      .plan_digest = "d", .plan_text = "{}",
    };
    ck_assert (sp_exec_spill_write_run (f, &run, &e));
    sp_exec_spill_write_rows (f, r, G_N_ELEMENTS (r));
    sp_exec_spill_write_mark (f, 6, FALSE, SP_TRACE_STATUS_WRONG, SP_TRACE_FLAG_CHECKED);
    ck_assert_int_eq (fclose (f), 0);
    g_autoptr (SpExecSpill) s = sp_exec_spill_read (path, &e);
    SP_ASSERT_NO_ERROR (e);
    ck_assert_int_eq (g_array_index (s->rows, SpTraceRow, 3).status, SP_TRACE_STATUS_WRONG);
    ck_assert_int_eq (g_array_index (s->rows, SpTraceRow, 0).status, SP_TRACE_STATUS_OK);
    /* Cut inside the mark: the rows stay, the mark is dropped. */
    truncate_to (path, file_size (path) - 3);
    g_autoptr (SpExecSpill) c = sp_exec_spill_read (path, &e);
    SP_ASSERT_NO_ERROR (e);
    ck_assert_uint_eq (c->rows->len, 4);
    ck_assert_int_eq (g_array_index (c->rows, SpTraceRow, 3).status, SP_TRACE_STATUS_OK);
    ck_assert_uint_eq (c->dropped_bytes, 13);
  }
  {
    /* A mark of the wrong size is damage: the rows before it and the mark
     * before them stay, nothing after it is read. */
    GByteArray *b = hand_run (2, j);
    put_record (b, 3, r, sizeof r);
    put_mark (b, 6, 0, SP_TRACE_STATUS_WRONG, SP_TRACE_FLAG_CHECKED);
    const gsize at = b->len;
    guint32 short_mark[3] = { 5, 1, SP_TRACE_STATUS_WRONG };
    put_record (b, 4, short_mark, sizeof short_mark);
    put_mark (b, 5, 0, SP_TRACE_STATUS_WRONG, SP_TRACE_FLAG_CHECKED);
    g_autofree char *path = save ("badmark.spill", b);
    g_autoptr (SpExecSpill) s = sp_exec_spill_read (path, &e);
    SP_ASSERT_NO_ERROR (e);
    ck_assert_uint_eq (s->rows->len, 4);
    ck_assert_msg (strstr (s->damage, "a mark record of 12 bytes"), "%s", s->damage);
    ck_assert_uint_eq (s->damaged_at, at);
    ck_assert_int_eq (g_array_index (s->rows, SpTraceRow, 3).status, SP_TRACE_STATUS_WRONG);
    ck_assert_int_eq (g_array_index (s->rows, SpTraceRow, 0).status, SP_TRACE_STATUS_OK);
  }
}
END_TEST

/* Rows the recorder could not have written (exec/record.c fill_row) are
 * damage, in a file of rank 0 too, where a crash's zero row has the right
 * rank: the rows of the record before the bad one are kept, the reading
 * stops at it.  And a rows record whose length runs past the end of the
 * file, read out of step into the records after it, stops at the first row
 * that is not one. */
START_TEST (test_bad_rows)
{
  g_autofree char *fields = fields_json ();
  g_autofree char *j1 = run_json ("1.2", sizeof (SpTraceRow), fields);
  g_autofree char *j = g_strdup (j1);
  char *rk = strstr (j, "\"rank\": 1,");
  ck_assert_ptr_nonnull (rk);
  rk[strlen ("\"rank\": ")] = '0';
  SpTraceRow zero;
  memset (&zero, 0, sizeof zero);
  SpTraceRow bad_iter = row (8, 0, 30), bad_group = row (8, 0, 30), bad_coll = row (8, 0, 30),
             bad_parent = row (8, 0, 30);
  bad_iter.iter = 1; /* a run of 1 iteration */
  bad_group.group_size = 4;
  bad_group.group_rank = 4;
  bad_coll.coll = (SpColl) 999;
  bad_parent.parent_op_id = -2;
  const struct {
    const SpTraceRow *bad;
    const char *want;
  } cases[] = {
    { &zero, "row 2 of a rows record has group rank 0 of 0" },
    { &bad_iter, "row 2 of a rows record has iteration 1 of a run of 1" },
    { &bad_group, "row 2 of a rows record has group rank 4 of 4" },
    { &bad_coll, "row 2 of a rows record has an unknown kind, type, reduction or status (999," },
    { &bad_parent, "row 2 of a rows record has parent op -2" },
  };
  GError *e = NULL;
  for (guint k = 0; k < G_N_ELEMENTS (cases); k++)
    {
      SpTraceRow rec[4] = { row (5, 0, 10), row (6, 0, 20), *cases[k].bad, row (9, 0, 40) };
      GByteArray *b = hand_run (2, j);
      put_record (b, 3, rec, sizeof rec);
      const gsize at = b->len - 2 * sizeof (SpTraceRow);
      g_autofree char *name = g_strdup_printf ("badrow%u.spill", k);
      g_autofree char *path = save (name, b);
      g_autoptr (SpExecSpill) s = sp_exec_spill_read (path, &e);
      SP_ASSERT_NO_ERROR (e);
      ck_assert_uint_eq (s->rows->len, 2);
      ck_assert_uint_eq (g_array_index (s->rows, SpTraceRow, 1).op_id, 6);
      ck_assert_uint_eq (s->damaged_at, at);
      ck_assert_uint_eq (s->dropped_bytes, 2 * sizeof (SpTraceRow));
      ck_assert_msg (g_str_has_prefix (s->damage, cases[k].want), "case %u: %s", k, s->damage);
    }
  {
    /* the zeros of a crash at the end of a rows record: its whole rows
     * before them kept, named for what they are */
    SpTraceRow rec[4] = { row (5, 0, 10), row (6, 0, 20), zero, zero };
    GByteArray *b = hand_run (2, j);
    put_record (b, 3, rec, sizeof rec);
    g_autofree char *path = save ("tornrows.spill", b);
    g_autoptr (SpExecSpill) s = sp_exec_spill_read (path, &e);
    SP_ASSERT_NO_ERROR (e);
    ck_assert_uint_eq (s->rows->len, 2);
    g_autofree char *want = g_strdup_printf ("%" G_GSIZE_FORMAT " zero bytes to its end",
                                             2 * sizeof (SpTraceRow));
    ck_assert_msg (g_str_has_prefix (s->damage, want), "%s", s->damage);
  }
  {
    /* a length past the file's end: the next record's header and rows,
     * read as rows of this one, are not rows */
    SpTraceRow r2[2] = { row (5, 0, 10), row (6, 0, 20) };
    GByteArray *b = hand_run (2, j);
    const gsize len_at = b->len + 8;
    put_record (b, 3, r2, sizeof r2);
    put_mark (b, 5, 0, SP_TRACE_STATUS_WRONG, SP_TRACE_FLAG_CHECKED);
    put_record (b, 3, r2, sizeof r2);
    guint64 huge = 40 * sizeof (SpTraceRow);
    memcpy (b->data + len_at, &huge, sizeof huge);
    g_autofree char *path = save ("longrows.spill", b);
    g_autoptr (SpExecSpill) s = sp_exec_spill_read (path, &e);
    SP_ASSERT_NO_ERROR (e);
    ck_assert_uint_eq (s->rows->len, 2);
    ck_assert_msg (s->damage && g_str_has_prefix (s->damage, "row 2 of a rows record "), "%s",
                   s->damage ? s->damage : "no damage");
  }
}
END_TEST

/* A crash that tore the file's end: its size reached the disk, its last
 * data did not, so it ends in zeros (a record of type 0).  The rows before
 * are kept, and the damage is named for what it is. */
START_TEST (test_zero_tail)
{
  g_autofree char *path = write_spill ("zeros.spill", 3);
  gsize full = file_size (path);
  FILE *f = fopen (path, "ab");
  ck_assert_ptr_nonnull (f);
  static const char zeros[4096];
  ck_assert_uint_eq (fwrite (zeros, 1, sizeof zeros, f), sizeof zeros);
  ck_assert_int_eq (fclose (f), 0);
  GError *e = NULL;
  g_autoptr (SpExecSpill) s = sp_exec_spill_read (path, &e);
  SP_ASSERT_NO_ERROR (e);
  ck_assert_uint_eq (s->rows->len, 3);
  ck_assert_uint_eq (s->damaged_at, full);
  ck_assert_uint_eq (s->dropped_bytes, 4096);
  ck_assert_str_eq (s->damage, "4096 zero bytes to its end (a crash before the data reached the disk)");
  ck_assert_str_eq (s->info.hostname, "node7");
  /* the same zeros in the middle of the file, a valid record after them:
   * damage, not a crash's tail */
  f = fopen (path, "ab");
  ck_assert_ptr_nonnull (f);
  SpTraceRow r = row (9, 2, 9000);
  sp_exec_spill_write_rows (f, &r, 1);
  ck_assert_int_eq (fclose (f), 0);
  g_autoptr (SpExecSpill) m = sp_exec_spill_read (path, &e);
  SP_ASSERT_NO_ERROR (e);
  ck_assert_uint_eq (m->rows->len, 3);
  ck_assert_str_eq (m->damage, "a record of unknown type 0");
}
END_TEST

/* The reader applies the marks after reading (linear, issue 15): on random
 * rows (ops 0-5, some stages of them) and random marks in between, the
 * same result as sp_exec_rows_mark applied at each mark, as the recorder
 * does in memory. */
START_TEST (test_marks_random)
{
  g_autoptr (GRand) rnd = g_rand_new_with_seed (15);
  for (guint round = 0; round < 20; round++)
    {
      g_autofree char *name = g_strdup_printf ("rnd%u.spill", round);
      g_autofree char *path = g_build_filename (tmpdir, name, NULL);
      g_autofree char *dummy = write_spill (name, 0); /* header, info, epoch */
      FILE *f = fopen (path, "ab");
      ck_assert_ptr_nonnull (f);
      g_autoptr (GArray) want = g_array_new (FALSE, FALSE, sizeof (SpTraceRow));
      for (guint step = 0; step < 200; step++)
        {
          if (g_rand_int_range (rnd, 0, 3) > 0)
            {
              SpTraceRow r = row ((guint32) g_rand_int_range (rnd, 0, 6), 2, step);
              r.parent_op_id = g_rand_int_range (rnd, -1, 6);
              r.flags = (guint32) g_rand_int_range (rnd, 0, 2);
              sp_exec_spill_write_rows (f, &r, 1);
              g_array_append_val (want, r);
            }
          else
            {
              static const SpTraceStatus st[] = { SP_TRACE_STATUS_OK, SP_TRACE_STATUS_WRONG,
                                                  SP_TRACE_STATUS_TIMEOUT };
              guint32 op = (guint32) g_rand_int_range (rnd, 0, 6);
              gboolean stages = g_rand_boolean (rnd);
              SpTraceStatus status = st[g_rand_int_range (rnd, 0, 3)];
              guint32 flags = 1u << g_rand_int_range (rnd, 0, 4);
              sp_exec_spill_write_mark (f, op, stages, status, flags);
              sp_exec_rows_mark (want, op, stages, status, flags);
            }
        }
      ck_assert_int_eq (fclose (f), 0);
      GError *e = NULL;
      g_autoptr (SpExecSpill) s = sp_exec_spill_read (path, &e);
      SP_ASSERT_NO_ERROR (e);
      ck_assert_uint_eq (s->rows->len, want->len);
      for (guint k = 0; k < want->len; k++)
        {
          const SpTraceRow *a = &g_array_index (s->rows, SpTraceRow, k);
          const SpTraceRow *b = &g_array_index (want, SpTraceRow, k);
          ck_assert_msg (a->flags == b->flags && a->status == b->status,
                         "round %u row %u: flags %u status %d, want %u %d", round, k, a->flags,
                         a->status, b->flags, b->status);
        }
    }
}
END_TEST

/* Damage that once crashed or stalled the reader (issue 15, finding 8). */
START_TEST (test_hostile)
{
  GError *e = NULL;
  /* a header nested past json-glib's stack */
  GString *deep = g_string_new ("{\"format\": ");
  for (guint i = 0; i < 100000; i++)
    g_string_append_c (deep, '[');
  g_string_append (deep, "]}");
  GByteArray *b = hand_header (2, 0x01020304u);
  put_record (b, 1, deep->str, deep->len);
  g_string_free (deep, TRUE);
  g_autofree char *p1 = save ("deep.spill", b);
  ck_assert_ptr_null (sp_exec_spill_read (p1, &e));
  SP_ASSERT_ERROR (e, SP_ERROR_INVALID_TRACE);
  ck_assert_msg (strstr (e->message, "deep.spill: the header record nests objects and arrays "
                                     "deeper than 128 levels"), "%s", e->message);
  g_clear_error (&e);
  /* row_fields and env of the wrong JSON types: a message, no criticals */
  g_autofree char *fields = fields_json ();
  g_autofree char *bad_fields = g_strdup ("[[{}, [], {}]]");
  g_autofree char *run = run_json ("1.2", sizeof (SpTraceRow), bad_fields);
  b = hand_run (2, run);
  g_autofree char *p2 = save ("fields.spill", b);
  ck_assert_ptr_null (sp_exec_spill_read (p2, &e));
  SP_ASSERT_ERROR (e, SP_ERROR_INVALID_TRACE);
  g_clear_error (&e);
  g_autofree char *run_env = run_json ("1.2", sizeof (SpTraceRow), fields);
  char *env = strstr (run_env, "\"env\": []");
  ck_assert_ptr_nonnull (env);
  g_autofree char *run_env2 = g_strdup_printf ("%.*s\"env\": [[{}, []]]}", (int) (env - run_env),
                                               run_env);
  b = hand_run (2, run_env2);
  g_autofree char *p3 = save ("env.spill", b);
  ck_assert_ptr_null (sp_exec_spill_read (p3, &e));
  ck_assert_msg (strstr (e->message, "header member 'env' is not a list of [key, value] strings"),
                 "%s", e->message);
  g_clear_error (&e);
  /* a world too large to allocate per rank */
  g_autofree char *run_w = run_json ("1.2", sizeof (SpTraceRow), fields);
  char *w = strstr (run_w, "\"world_size\": 2");
  ck_assert_ptr_nonnull (w);
  g_autofree char *run_w2 = g_strdup_printf ("%.*s\"world_size\": 4294967295%s",
                                             (int) (w - run_w), run_w, w + strlen ("\"world_size\": 2"));
  b = hand_run (2, run_w2);
  g_autofree char *p4 = save ("world.spill", b);
  ck_assert_ptr_null (sp_exec_spill_read (p4, &e));
  ck_assert_msg (strstr (e->message, "'world_size' 4294967295 is more than the 16777216 ranks"),
                 "%s", e->message);
  g_clear_error (&e);
  /* not a regular file */
  ck_assert_ptr_null (sp_exec_spill_read ("/dev/zero", &e));
  ck_assert_msg (strstr (e->message, "/dev/zero: not a regular file"), "%s", e->message);
  g_clear_error (&e);
}
END_TEST

START_TEST (test_missing_file)
{
  g_autofree char *path = g_build_filename (tmpdir, "none.spill", NULL);
  GError *e = NULL;
  ck_assert_ptr_null (sp_exec_spill_read (path, &e));
  SP_ASSERT_ERROR (e, SP_ERROR_IO);
  ck_assert_msg (g_str_has_suffix (e->message, "none.spill: no such file"), "%s", e->message);
  g_error_free (e);
}
END_TEST

static Suite *
spill_suite (void)
{
  Suite *s = suite_create ("spill");
  TCase *tc = tcase_create ("reader");
  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_add_test (tc, test_round_trip);
  tcase_add_test (tc, test_cut_mid_row);
  tcase_add_test (tc, test_cut_record_header);
  tcase_add_test (tc, test_cut_in_run_record);
  tcase_add_test (tc, test_bad_magic);
  tcase_add_test (tc, test_other_byte_order_and_version);
  tcase_add_test (tc, test_other_row_layout);
  tcase_add_test (tc, test_hand_built_ok_and_damage);
  tcase_add_test (tc, test_marks);
  tcase_add_test (tc, test_zero_tail);
  tcase_add_test (tc, test_bad_rows);
  tcase_add_test (tc, test_missing_file);
  tcase_add_test (tc, test_marks_random);
  tcase_add_test (tc, test_hostile);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  return sp_test_run (spill_suite ());
}
