/* Tests of the HDF5 trace library: round trips, partial traces, crash
 * safety and bad files.  (The golden `h5dump -H` is trace-golden.sh, the
 * pandas view trace-h5py.sh.)
 *
 * `test_trace --write-sample PATH` writes the sample trace of
 * trace-sample.h and exits (used by trace-h5py.sh). */
#include "config.h"
#include "testutil.h"
#include "trace-sample.h"
#include "trace-private.h"

#include <hdf5.h>
#include <string.h>

static char *
tmp_path (const char *dir, const char *name)
{
  return g_build_filename (dir, name, NULL);
}

/* Number of entries in `dir`. */
static guint
dir_count (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  guint n = 0;
  while (g_dir_read_name (d))
    n++;
  return n;
}

static SpTraceHeader
test_header (void)
{
  return (SpTraceHeader) { .source = SP_TRACE_SOURCE_SIMULATED, .producer = "test",
                           .producer_version = "1.2.3", .clock = "simulated",
                           .timing_mode = "simulated", .warmup_iters = 0, .iters = 5,
                           .world_size = 64 };
}

/* A random valid value for every field of a row, driven by the record
 * table so a new field is covered without touching the test. */
static void
random_row (GRand *rng, SpTraceRow *row)
{
  static const SpColl colls[] = { SP_COLL_ALL_REDUCE, SP_COLL_ALL_GATHER, SP_COLL_REDUCE_SCATTER,
                                  SP_COLL_ALL_TO_ALL, SP_COLL_SEND, SP_COLL_COMPUTE,
                                  SP_COLL_ALL_TO_ALL_QUANT_REDUCE };
  static const SpDtype dtypes[] = { SP_DTYPE_INT8, SP_DTYPE_BFLOAT16, SP_DTYPE_FLOAT32,
                                    SP_DTYPE_INT4, SP_DTYPE_NONE };
  static const SpRedop redops[] = { SP_REDOP_SUM, SP_REDOP_AVG, SP_REDOP_NONE };
  gsize n = 0;
  const SpTraceField *fields = sp_trace_row_fields (&n);
  memset (row, 0, sizeof *row);
  for (gsize i = 0; i < n; i++)
    {
      guint8 *p = (guint8 *) row + fields[i].offset;
      guint64 bits = ((guint64) g_rand_int (rng) << 32) | g_rand_int (rng);
      switch (fields[i].kind)
        {
        case SP_TRACE_KIND_U8: *p = (guint8) bits; break;
        case SP_TRACE_KIND_U32:
        case SP_TRACE_KIND_I32: memcpy (p, &bits, 4); break;
        case SP_TRACE_KIND_U64:
        case SP_TRACE_KIND_I64: memcpy (p, &bits, 8); break;
        case SP_TRACE_KIND_F64: *(double *) p = g_rand_double_range (rng, -1e12, 1e12); break;
        case SP_TRACE_KIND_COLL: *(SpColl *) p = colls[bits % G_N_ELEMENTS (colls)]; break;
        case SP_TRACE_KIND_DTYPE: *(SpDtype *) p = dtypes[bits % G_N_ELEMENTS (dtypes)]; break;
        case SP_TRACE_KIND_REDOP: *(SpRedop *) p = redops[bits % G_N_ELEMENTS (redops)]; break;
        case SP_TRACE_KIND_STATUS: *(SpTraceStatus *) p = (SpTraceStatus) (bits % 5); break;
        case SP_TRACE_KIND_STR: ck_abort_msg ("rows have no strings"); break;
        }
    }
}

static void
assert_rows_equal (const SpTraceRow *a, const SpTraceRow *b, guint64 index)
{
  gsize n = 0;
  const SpTraceField *fields = sp_trace_row_fields (&n);
  for (gsize i = 0; i < n; i++)
    {
      GString *sa = g_string_new (NULL), *sb = g_string_new (NULL);
      sp_trace_field_append (&fields[i], a, sa);
      sp_trace_field_append (&fields[i], b, sb);
      ck_assert_msg (strcmp (sa->str, sb->str) == 0, "row %" G_GUINT64_FORMAT " field %s: %s != %s",
                     index, fields[i].name, sa->str, sb->str);
      g_string_free (sa, TRUE);
      g_string_free (sb, TRUE);
    }
}

START_TEST (test_rows_round_trip)
{
  g_autoptr (SpTestDir) dir = sp_test_tmpdir ();
  g_autofree char *path = tmp_path (dir, "rows.h5");
  /* More than two 8192-row chunks, appended in uneven batches. */
  const gsize n_rows = 20011;
  g_autoptr (GRand) rng = g_rand_new_with_seed (20260101);
  g_autofree SpTraceRow *rows = g_new0 (SpTraceRow, n_rows);
  for (gsize i = 0; i < n_rows; i++)
    random_row (rng, &rows[i]);
  SpTraceHeader h = test_header ();
  g_autoptr (GError) error = NULL;
  g_autoptr (SpTraceWriter) w = sp_trace_writer_new (path, &h, &error);
  SP_ASSERT_NO_ERROR (error);
  for (gsize done = 0, batch = 1; done < n_rows; done += batch, batch = batch * 3 + 1)
    {
      batch = MIN (batch, n_rows - done);
      ck_assert (sp_trace_writer_append (w, rows + done, batch, &error));
    }
  ck_assert_uint_eq (sp_trace_writer_n_rows (w), n_rows);
  ck_assert (sp_trace_writer_finish (w, &error));
  SP_ASSERT_NO_ERROR (error);

  g_autoptr (SpTrace) t = sp_trace_open (path, &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert_uint_eq (sp_trace_n_rows (t), n_rows);
  g_autofree SpTraceRow *back = g_new0 (SpTraceRow, n_rows);
  for (guint64 start = 0, step = 777; start < n_rows; start += step)
    ck_assert (sp_trace_read_rows (t, start, MIN (step, n_rows - start), back + start, &error));
  for (gsize i = 0; i < n_rows; i++)
    {
      assert_rows_equal (&rows[i], &back[i], i);
      ck_assert (memcmp (&rows[i].algbw_gbs, &back[i].algbw_gbs, sizeof (double)) == 0);
    }
  /* Past the end is an error, not a crash. */
  ck_assert (!sp_trace_read_rows (t, n_rows - 1, 2, back, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_ARGUMENT);
  /* No groups, cluster, plan or topology given: empty, absent. */
  ck_assert_uint_eq (sp_trace_n_groups (t), 0);
  ck_assert_uint_eq (sp_trace_n_families (t), 0);
  ck_assert_ptr_null (sp_trace_plan_text (t));
  ck_assert_ptr_null (sp_trace_topology_text (t));
  ck_assert_ptr_null (sp_trace_header (t)->check_policy); /* not given: no attribute */
  gsize n = 1;
  sp_trace_nodes (t, &n);
  ck_assert_uint_eq (n, 0);
}
END_TEST

START_TEST (test_meta_round_trip)
{
  g_autoptr (SpTestDir) dir = sp_test_tmpdir ();
  g_autofree char *path = tmp_path (dir, "sample.h5");
  g_autoptr (GError) error = NULL;
  ck_assert (sp_sample_trace_write (path, FALSE, &error));
  SP_ASSERT_NO_ERROR (error);
  g_autoptr (SpTrace) t = sp_trace_open (path, &error);
  SP_ASSERT_NO_ERROR (error);

  const SpTraceHeader *h = sp_trace_header (t);
  guint major = 0, minor = 9;
  sp_trace_schema_version (t, &major, &minor);
  ck_assert_uint_eq (major, 1);
  ck_assert_uint_eq (minor, 3);
  ck_assert_int_eq (h->source, SP_TRACE_SOURCE_MEASURED);
  ck_assert_str_eq (h->check_policy, "after");
  ck_assert_str_eq (h->producer, "shardplan test");
  ck_assert_str_eq (h->producer_version, "0.0-test");
  ck_assert_str_eq (h->clock, "CLOCK_MONOTONIC");
  ck_assert_str_eq (h->timing_mode, "isolated");
  ck_assert_str_eq (h->run_id, SP_SAMPLE_RUN_ID);
  ck_assert_str_eq (h->created_utc, SP_SAMPLE_CREATED);
  ck_assert_uint_eq (h->warmup_iters, 1);
  ck_assert_uint_eq (h->iters, 2);
  ck_assert_uint_eq (h->world_size, 8);
  ck_assert (sp_trace_is_complete (t));
  ck_assert_ptr_null (sp_trace_incomplete_reason (t));

  ck_assert_str_eq (sp_trace_software (t, "mpi"), "test-mpi 1.0");
  ck_assert_str_eq (sp_trace_software (t, "compiler"), "test-cc");
  unsigned maj, min, rel;
  H5get_libversion (&maj, &min, &rel);
  g_autofree char *h5 = g_strdup_printf ("%u.%u.%u", maj, min, rel);
  ck_assert_str_eq (sp_trace_software (t, "hdf5"), h5);
  ck_assert_uint_eq (g_strv_length ((char **) sp_trace_software_keys (t)), 3);

  gsize n = 0;
  const SpTraceEnv *env = sp_trace_env (t, &n);
  ck_assert_uint_eq (n, 2);
  ck_assert_str_eq (env[0].key, "NCCL_DEBUG");
  ck_assert_str_eq (env[0].value, "WARN");
  ck_assert_str_eq (env[1].key, "OMPI_COMM_WORLD_SIZE");
  ck_assert_str_eq (env[1].value, "8");

  const SpTraceNode *nodes = sp_trace_nodes (t, &n);
  ck_assert_uint_eq (n, 2);
  ck_assert_str_eq (nodes[1].hostname, "node-b");
  ck_assert_str_eq (nodes[1].gpu_model, "");
  ck_assert_uint_eq (nodes[1].node_id, 1);
  const SpTraceRank *ranks = sp_trace_ranks (t, &n);
  ck_assert_uint_eq (n, 8);
  ck_assert_uint_eq (ranks[6].node_id, 1);
  ck_assert_uint_eq (ranks[6].local_rank, 2);
  ck_assert_int_eq (ranks[6].device, -1);
  ck_assert_int_eq (ranks[0].clock_offset_ns, -21);
  ck_assert_int_eq (ranks[6].clock_offset_ns, 21);

  /* Plan and topology: text as written, digests as their owners compute. */
  g_autoptr (SpGroups) groups = sp_sample_groups ();
  g_autoptr (SpPlan) plan = sp_sample_plan (groups);
  g_autofree char *json = sp_plan_to_json (plan);
  g_autofree char *digest = sp_plan_digest (plan);
  ck_assert_str_eq (sp_trace_plan_text (t), json);
  ck_assert_str_eq (sp_trace_plan_digest (t), digest);
  g_autoptr (SpPlan) plan_back = sp_plan_from_json (sp_trace_plan_text (t), -1, 8, &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert (sp_plan_equal (plan, plan_back));
  g_autoptr (SpTopo) topo = sp_topo_new_preset ("cpu-shm", 2, &error);
  g_autofree char *ini = sp_topo_to_ini (topo);
  ck_assert_str_eq (sp_trace_topology_text (t), ini);
  g_autofree char *sha = g_compute_checksum_for_string (G_CHECKSUM_SHA256, ini, -1);
  ck_assert_str_eq (sp_trace_topology_digest (t), sha);

  /* Groups: shard (family 0) = ids 0,1; replicate (1) = 2..5; world = 6. */
  ck_assert_uint_eq (sp_trace_n_families (t), 3);
  ck_assert_uint_eq (sp_trace_n_groups (t), 7);
  guint32 fid = 99;
  const char *fname = NULL;
  sp_trace_family (t, 2, &fid, &fname);
  ck_assert_uint_eq (fid, SP_FAMILY_WORLD);
  ck_assert_str_eq (fname, "world");
  ck_assert_str_eq (sp_trace_family_name (t, SP_FAMILY_REPLICATE), "replicate");
  ck_assert_ptr_null (sp_trace_family_name (t, SP_FAMILY_EXPERT));
  guint32 index = 99, size = 0;
  ck_assert (sp_trace_group_info (t, 4, &fid, &index));
  ck_assert_uint_eq (fid, SP_FAMILY_REPLICATE);
  ck_assert_uint_eq (index, 2);
  const guint32 *m = sp_trace_group_members (t, 4, &size);
  ck_assert_uint_eq (size, 2);
  ck_assert_uint_eq (m[0], 2);
  ck_assert_uint_eq (m[1], 6);
  m = sp_trace_group_members (t, 6, &size);
  ck_assert_uint_eq (size, 8);
  ck_assert_uint_eq (m[7], 7);
  ck_assert (!sp_trace_group_info (t, SP_TRACE_NO_GROUP, NULL, NULL));
  ck_assert_ptr_null (sp_trace_group_members (t, 7, &size));
  ck_assert_uint_eq (sp_trace_group_id (groups, SP_FAMILY_REPLICATE, 3), 5);
  ck_assert_uint_eq (sp_trace_group_id (groups, SP_FAMILY_WORLD, 0), 6);
  ck_assert_uint_eq (sp_trace_group_id (groups, SP_FAMILY_EXPERT, 0), SP_TRACE_NO_GROUP);
  ck_assert_uint_eq (sp_trace_group_id (groups, SP_FAMILY_SHARD, 2), SP_TRACE_NO_GROUP);

  /* One row checked by hand: iter 1, op 0, rank 5 = row (1·3 + 0)·8 + 5. */
  ck_assert_uint_eq (sp_trace_n_rows (t), SP_SAMPLE_ROWS);
  SpTraceRow row;
  ck_assert (sp_trace_read_rows (t, 29, 1, &row, &error));
  ck_assert_uint_eq (row.op_id, 0);
  ck_assert_int_eq (row.iter, 1);
  ck_assert_uint_eq (row.rank, 5);
  ck_assert_uint_eq (row.group_id, 1);
  ck_assert_uint_eq (row.group_rank, 1);
  ck_assert_uint_eq (row.group_size, 4);
  ck_assert_uint_eq (row.seq_in_group, 2);
  ck_assert_int_eq (row.coll, SP_COLL_ALL_GATHER);
  ck_assert_int_eq (row.dtype, SP_DTYPE_BFLOAT16);
  ck_assert_int_eq (row.redop, SP_REDOP_NONE);
  ck_assert_int_eq (row.status, SP_TRACE_STATUS_OK);
  ck_assert_int_eq (row.parent_op_id, -1);
  ck_assert_uint_eq (row.bytes, 8388608);
  ck_assert_uint_eq (row.count, 4194304);
  ck_assert_int_eq (row.t_start_ns, 1000050);
  ck_assert_int_eq (row.t_enqueue_ns, 999550);
  ck_assert_int_eq (row.t_end_ns, 1100050);
  ck_assert_int_eq (row.dur_ns, 100000);
  /* nccl-tests: algbw = 8388608 B / 100 µs = 83.88608 GB/s; busbw ×(4-1)/4. */
  ck_assert_double_eq_tol (row.algbw_gbs, 83.88608, 1e-9);
  ck_assert_double_eq_tol (row.busbw_gbs, 62.91456, 1e-9);
  ck_assert_int_eq (row.nccl_est_ns, 90000);
  /* iter 1, op 2, rank 7 = row 47: no NCCL estimate. */
  ck_assert (sp_trace_read_rows (t, 47, 1, &row, &error));
  ck_assert_uint_eq (row.op_id, 2);
  ck_assert_int_eq (row.nccl_est_ns, -1);
}
END_TEST

START_TEST (test_partial)
{
  g_autoptr (SpTestDir) dir = sp_test_tmpdir ();
  g_autofree char *path = tmp_path (dir, "partial.h5");
  g_autoptr (GError) error = NULL;
  ck_assert (sp_sample_trace_write (path, TRUE, &error));
  g_autoptr (SpTrace) t = sp_trace_open (path, &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert (!sp_trace_is_complete (t));
  ck_assert_str_eq (sp_trace_incomplete_reason (t), "op 2 timed out on rank 5");
  ck_assert_uint_eq (sp_trace_n_rows (t), SP_SAMPLE_ROWS);
  SpTraceRow row;
  ck_assert (sp_trace_read_rows (t, SP_SAMPLE_ROWS - 1, 1, &row, &error));
  ck_assert_uint_eq (row.rank, 7);
}
END_TEST

/* The final name appears only at finish; abort and free leave nothing. */
START_TEST (test_crash_safety)
{
  g_autoptr (SpTestDir) dir = sp_test_tmpdir ();
  g_autofree char *path = tmp_path (dir, "run.h5");
  SpTraceHeader h = test_header ();
  g_autoptr (GError) error = NULL;
  SpTraceRow rows[100];
  for (int i = 0; i < 100; i++)
    {
      sp_trace_row_init (&rows[i]);
      rows[i].op_id = (guint32) i;
    }

  SpTraceWriter *w = sp_trace_writer_new (path, &h, &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert (!g_file_test (path, G_FILE_TEST_EXISTS));
  ck_assert (g_file_test (sp_trace_writer_temp_path (w), G_FILE_TEST_EXISTS));
  ck_assert (sp_trace_writer_append (w, rows, 100, &error));
  ck_assert (!g_file_test (path, G_FILE_TEST_EXISTS));
  sp_trace_writer_abort (w);
  ck_assert_uint_eq (dir_count (dir), 0);
  sp_trace_writer_free (w);

  w = sp_trace_writer_new (path, &h, &error);
  ck_assert (sp_trace_writer_append (w, rows, 100, &error));
  sp_trace_writer_free (w); /* dropped without finish */
  ck_assert_uint_eq (dir_count (dir), 0);

  /* An existing file stays as it was until finish replaces it whole. */
  ck_assert (g_file_set_contents (path, "old", -1, &error));
  w = sp_trace_writer_new (path, &h, &error);
  ck_assert (sp_trace_writer_append (w, rows, 100, &error));
  g_autofree char *contents = NULL;
  ck_assert (g_file_get_contents (path, &contents, NULL, &error));
  ck_assert_str_eq (contents, "old");
  ck_assert_uint_eq (dir_count (dir), 2);
  ck_assert (sp_trace_writer_finish (w, &error));
  SP_ASSERT_NO_ERROR (error);
  sp_trace_writer_free (w);
  ck_assert_uint_eq (dir_count (dir), 1);
  g_autoptr (SpTrace) t = sp_trace_open (path, &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert_uint_eq (sp_trace_n_rows (t), 100);

  /* A directory that does not exist: an I/O error naming the path. */
  g_autofree char *nowhere = tmp_path (dir, "no/such/dir/run.h5");
  ck_assert_ptr_null (sp_trace_writer_new (nowhere, &h, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_IO);
  ck_assert_ptr_nonnull (strstr (error->message, "no/such/dir/run.h5"));
  g_clear_error (&error);
  /* A header without a producer. */
  h.producer = "";
  ck_assert_ptr_null (sp_trace_writer_new (path, &h, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull (strstr (error->message, "producer"));
  g_clear_error (&error);
  /* An empty check policy (NULL is how "not recorded" is said). */
  h.producer = "test";
  h.check_policy = "";
  ck_assert_ptr_null (sp_trace_writer_new (path, &h, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull (strstr (error->message, "check_policy"));
}
END_TEST

/* The same inputs (run_id and created_utc fixed) give the same bytes. */
START_TEST (test_deterministic)
{
  g_autoptr (SpTestDir) dir = sp_test_tmpdir ();
  g_autofree char *a = tmp_path (dir, "a.h5");
  g_autofree char *b = tmp_path (dir, "b.h5");
  g_autoptr (GError) error = NULL;
  ck_assert (sp_sample_trace_write (a, FALSE, &error));
  g_usleep (1100000); /* a modification time, were one recorded, would differ */
  ck_assert (sp_sample_trace_write (b, FALSE, &error));
  g_autofree char *ca = NULL, *cb = NULL;
  gsize la = 0, lb = 0;
  ck_assert (g_file_get_contents (a, &ca, &la, &error));
  ck_assert (g_file_get_contents (b, &cb, &lb, &error));
  ck_assert_uint_eq (la, lb);
  ck_assert (memcmp (ca, cb, la) == 0);
}
END_TEST

/* ------------------------------------------------------------- bad files */

static void
assert_open_fails (const char *path, int code, const char *needle)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (SpTrace) t = sp_trace_open (path, &error);
  ck_assert_ptr_null (t);
  SP_ASSERT_ERROR (error, code);
  ck_assert_msg (strstr (error->message, needle) != NULL, "'%s' not in '%s'", needle,
                 error->message);
  ck_assert_msg (strchr (error->message, '\n') == NULL, "multi-line: %s", error->message);
}

/* Open a copy of the sample for editing with the raw HDF5 API. */
static hid_t
sample_copy (const char *dir, const char *name, char **out_path)
{
  *out_path = tmp_path (dir, name);
  g_autoptr (GError) error = NULL;
  ck_assert (sp_sample_trace_write (*out_path, FALSE, &error));
  hid_t f = H5Fopen (*out_path, H5F_ACC_RDWR, H5P_DEFAULT);
  ck_assert_int_ge (f, 0);
  return f;
}

static void
set_root_string (hid_t f, const char *name, const char *value)
{
  H5Adelete (f, name);
  hid_t t = H5Tcopy (H5T_C_S1);
  H5Tset_size (t, H5T_VARIABLE);
  hid_t s = H5Screate (H5S_SCALAR);
  hid_t a = H5Acreate2 (f, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
  ck_assert_int_ge (H5Awrite (a, t, &value), 0);
  H5Aclose (a);
  H5Sclose (s);
  H5Tclose (t);
}

START_TEST (test_bad_files)
{
  g_autoptr (SpTestDir) dir = sp_test_tmpdir ();
  g_autoptr (GError) error = NULL;

  g_autofree char *missing = tmp_path (dir, "missing.h5");
  assert_open_fails (missing, SP_ERROR_IO, "no such file");
  assert_open_fails (dir, SP_ERROR_IO, "not a regular file");

  g_autofree char *text = sp_test_fixture ("trace/not-a-trace.txt");
  assert_open_fails (text, SP_ERROR_INVALID_TRACE, "not an HDF5 file");

  g_autofree char *noise = tmp_path (dir, "noise.h5");
  g_autoptr (GRand) rng = g_rand_new_with_seed (7);
  char buf[4096];
  for (gsize i = 0; i < sizeof buf; i++)
    buf[i] = (char) g_rand_int (rng);
  ck_assert (g_file_set_contents (noise, buf, sizeof buf, &error));
  assert_open_fails (noise, SP_ERROR_INVALID_TRACE, "not an HDF5 file");

  /* Truncated: the first half of a valid trace. */
  g_autofree char *good = tmp_path (dir, "good.h5");
  ck_assert (sp_sample_trace_write (good, FALSE, &error));
  g_autofree char *contents = NULL;
  gsize len = 0;
  ck_assert (g_file_get_contents (good, &contents, &len, &error));
  g_autofree char *trunc = tmp_path (dir, "truncated.h5");
  ck_assert (g_file_set_contents (trunc, contents, (gssize) len / 2, &error));
  assert_open_fails (trunc, SP_ERROR_INVALID_TRACE, "truncated");

  /* An HDF5 file that is not a trace. */
  g_autofree char *other = NULL;
  hid_t f = sample_copy (dir, "other.h5", &other);
  set_root_string (f, "schema", "netcdf4");
  H5Fclose (f);
  assert_open_fails (other, SP_ERROR_INVALID_TRACE, "not a shardplan trace (root attribute schema is 'netcdf4'");
  g_autofree char *empty = tmp_path (dir, "empty.h5");
  f = H5Fcreate (empty, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  H5Fclose (f);
  assert_open_fails (empty, SP_ERROR_INVALID_TRACE, "schema is missing");

  /* Versions. */
  g_autofree char *newer = NULL;
  f = sample_copy (dir, "newer.h5", &newer);
  set_root_string (f, "schema_version", "2.0");
  H5Fclose (f);
  assert_open_fails (newer, SP_ERROR_INVALID_TRACE, "schema version 2.0 is newer");
  g_autofree char *garbled = NULL;
  f = sample_copy (dir, "garbled.h5", &garbled);
  set_root_string (f, "schema_version", "one");
  H5Fclose (f);
  assert_open_fails (garbled, SP_ERROR_INVALID_TRACE, "schema_version 'one' is not MAJOR.MINOR");
  /* A newer minor version reads. */
  g_autofree char *minor = NULL;
  f = sample_copy (dir, "minor.h5", &minor);
  set_root_string (f, "schema_version", "1.7");
  H5Fclose (f);
  g_autoptr (SpTrace) t = sp_trace_open (minor, &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert_uint_eq (sp_trace_n_rows (t), SP_SAMPLE_ROWS);

  /* Missing pieces and wrong types. */
  g_autofree char *no_ops = NULL;
  f = sample_copy (dir, "no-ops.h5", &no_ops);
  ck_assert_int_ge (H5Ldelete (f, "/ops/ops", H5P_DEFAULT), 0);
  H5Fclose (f);
  assert_open_fails (no_ops, SP_ERROR_INVALID_TRACE, "missing dataset /ops/ops");
  g_autofree char *no_attr = NULL;
  f = sample_copy (dir, "no-attr.h5", &no_attr);
  ck_assert_int_ge (H5Adelete (f, "iters"), 0);
  H5Fclose (f);
  assert_open_fails (no_attr, SP_ERROR_INVALID_TRACE, "missing attribute iters");
  g_autofree char *bad_field = NULL;
  f = sample_copy (dir, "bad-field.h5", &bad_field);
  ck_assert_int_ge (H5Ldelete (f, "/ops/ops", H5P_DEFAULT), 0);
  hid_t ct = H5Tcreate (H5T_COMPOUND, 8);
  H5Tinsert (ct, "op_id", 0, H5T_IEEE_F64LE);
  hsize_t dims[1] = { 0 };
  hid_t sp = H5Screate_simple (1, dims, NULL);
  hid_t d = H5Dcreate2 (f, "/ops/ops", ct, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  ck_assert_int_ge (d, 0);
  H5Dclose (d);
  H5Sclose (sp);
  H5Tclose (ct);
  H5Fclose (f);
  assert_open_fails (bad_field, SP_ERROR_INVALID_TRACE,
                     "field op_id of /ops/ops is a float, expected an integer");
  g_autofree char *not_table = NULL;
  f = sample_copy (dir, "not-table.h5", &not_table);
  ck_assert_int_ge (H5Ldelete (f, "/meta/env", H5P_DEFAULT), 0);
  sp = H5Screate_simple (1, dims, NULL);
  d = H5Dcreate2 (f, "/meta/env", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dclose (d);
  H5Sclose (sp);
  H5Fclose (f);
  assert_open_fails (not_table, SP_ERROR_INVALID_TRACE,
                     "/meta/env is not a 1-D table of compound records");
}
END_TEST

/* A schema 1.0 file (the sample as the 1.0 writer wrote it, a fixture)
 * still reads: every field as this version's sample has it, nccl_est_ns
 * (added in 1.1) as -1.  A 1.1 file without nccl_est_ns is refused. */
START_TEST (test_reads_v1_0)
{
  g_autoptr (SpTestDir) dir = sp_test_tmpdir ();
  g_autofree char *old_path = sp_test_fixture ("trace/sample-v1.0.h5");
  g_autofree char *new_path = tmp_path (dir, "sample.h5");
  g_autoptr (GError) error = NULL;
  ck_assert (sp_sample_trace_write (new_path, FALSE, &error));
  g_autoptr (SpTrace) old = sp_trace_open (old_path, &error);
  SP_ASSERT_NO_ERROR (error);
  g_autoptr (SpTrace) cur = sp_trace_open (new_path, &error);
  SP_ASSERT_NO_ERROR (error);
  guint major = 9, minor = 9;
  sp_trace_schema_version (old, &major, &minor);
  ck_assert_uint_eq (major, 1);
  ck_assert_uint_eq (minor, 0);
  ck_assert_ptr_null (sp_trace_header (old)->check_policy); /* added in 1.2 */
  ck_assert_uint_eq (sp_trace_n_rows (old), SP_SAMPLE_ROWS);
  SpTraceRow a[SP_SAMPLE_ROWS], b[SP_SAMPLE_ROWS];
  /* Read in two pieces: the defaults must land in every row of a batch. */
  ck_assert (sp_trace_read_rows (old, 0, 5, a, &error));
  ck_assert (sp_trace_read_rows (old, 5, SP_SAMPLE_ROWS - 5, a + 5, &error));
  ck_assert (sp_trace_read_rows (cur, 0, SP_SAMPLE_ROWS, b, &error));
  SP_ASSERT_NO_ERROR (error);
  guint with_estimate = 0;
  for (guint i = 0; i < SP_SAMPLE_ROWS; i++)
    {
      ck_assert_int_eq (a[i].nccl_est_ns, -1);
      with_estimate += b[i].nccl_est_ns >= 0;
      b[i].nccl_est_ns = -1;
      assert_rows_equal (&a[i], &b[i], i);
    }
  ck_assert_uint_eq (with_estimate, 2 * SP_SAMPLE_ITERS * SP_SAMPLE_WORLD);
  ck_assert_str_eq (sp_trace_plan_digest (old), sp_trace_plan_digest (cur));

  /* The same file claiming 1.1 lacks a field 1.1 has. */
  g_autofree char *lying = tmp_path (dir, "lying.h5");
  g_autofree char *contents = NULL;
  gsize len = 0;
  ck_assert (g_file_get_contents (old_path, &contents, &len, &error));
  ck_assert (g_file_set_contents (lying, contents, (gssize) len, &error));
  hid_t f = H5Fopen (lying, H5F_ACC_RDWR, H5P_DEFAULT);
  ck_assert_int_ge (f, 0);
  set_root_string (f, "schema_version", "1.1");
  H5Fclose (f);
  assert_open_fails (lying, SP_ERROR_INVALID_TRACE,
                     "/ops/ops lacks field nccl_est_ns (schema 1.1 has it)");
}
END_TEST

/* An enum value the enum does not name is refused, naming the row. */
/* Attributes a user may add to a trace with h5py, of the classes the
 * object-header walk lets through (lib/trace-heap.c attr_type_ok): an enum
 * of integers (h5py's booleans; several members, so that the walk over
 * their padded names is used), a floating-point number, an array of
 * integers; a compound, whose member names libhdf5 copies unchecked, is
 * refused naming the attribute (fuzz finding T8). */
static void
add_attr (hid_t loc, const char *name, hid_t type, hsize_t n, const void *value)
{
  hid_t s = n == 0 ? H5Screate (H5S_SCALAR) : H5Screate_simple (1, &n, NULL);
  hid_t a = H5Acreate2 (loc, name, type, s, H5P_DEFAULT, H5P_DEFAULT);
  ck_assert_int_ge (a, 0);
  ck_assert_int_ge (H5Awrite (a, type, value), 0);
  H5Aclose (a);
  H5Sclose (s);
}

START_TEST (test_user_attributes)
{
  g_autoptr (SpTestDir) dir = sp_test_tmpdir ();
  g_autofree char *path = NULL;
  hid_t f = sample_copy (dir, "attrs.h5", &path);
  hid_t e = H5Tenum_create (H5T_NATIVE_INT8);
  static const char *names[] = { "FALSE", "TRUE", "a_longer_member_name", "x" };
  for (gint8 v = 0; v < 4; v++)
    H5Tenum_insert (e, names[v], &v);
  gint8 yes = 1;
  double x = 2.5;
  gint32 list[3] = { 1, 2, 3 };
  add_attr (f, "user_flag", e, 0, &yes);
  add_attr (f, "user_ratio", H5T_NATIVE_DOUBLE, 0, &x);
  add_attr (f, "user_list", H5T_NATIVE_INT32, 3, list);
  hid_t g = H5Gopen2 (f, "/meta/software", H5P_DEFAULT);
  ck_assert_int_ge (g, 0);
  add_attr (g, "user_flag", e, 0, &yes);
  H5Gclose (g);
  H5Tclose (e);
  H5Fclose (f);
  g_autoptr (GError) error = NULL;
  g_autoptr (SpTrace) t = sp_trace_open (path, &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert_ptr_nonnull (t);

  g_autofree char *bad = NULL;
  f = sample_copy (dir, "compound.h5", &bad);
  hid_t c = H5Tcreate (H5T_COMPOUND, 8);
  H5Tinsert (c, "a", 0, H5T_NATIVE_INT32);
  H5Tinsert (c, "b", 4, H5T_NATIVE_INT32);
  add_attr (f, "user_pair", c, 0, list);
  H5Tclose (c);
  H5Fclose (f);
  assert_open_fails (bad, SP_ERROR_INVALID_TRACE,
                     "attribute user_pair of / has a damaged datatype or one no trace attribute "
                     "has (an integer, a floating-point number, a string or an enum of integers)");
}
END_TEST

START_TEST (test_bad_enum_value)
{
  g_autoptr (SpTestDir) dir = sp_test_tmpdir ();
  g_autofree char *path = tmp_path (dir, "enum.h5");
  SpTraceHeader h = test_header ();
  g_autoptr (GError) error = NULL;
  g_autoptr (SpTraceWriter) w = sp_trace_writer_new (path, &h, &error);
  SpTraceRow rows[10];
  for (int i = 0; i < 10; i++)
    {
      sp_trace_row_init (&rows[i]);
      rows[i].op_id = (guint32) i;
      rows[i].rank = 3;
    }
  rows[6].coll = (SpColl) 77;
  ck_assert (sp_trace_writer_append (w, rows, 2, &error));
  ck_assert (!sp_trace_writer_append (w, rows, 10, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_ARGUMENT);
  ck_assert_str_eq (error->message, "trace row 8 (op 6, rank 3): coll 77 is not a known value");
  ck_assert_uint_eq (sp_trace_writer_n_rows (w), 8);
  g_clear_error (&error);
  ck_assert (sp_trace_writer_finish (w, &error));
  g_autoptr (SpTrace) t = sp_trace_open (path, &error);
  ck_assert_uint_eq (sp_trace_n_rows (t), 8);
}
END_TEST

START_TEST (test_names_and_helpers)
{
  for (int s = 0; s <= 4; s++)
    {
      SpTraceStatus back;
      ck_assert (sp_trace_status_from_name (sp_trace_status_name ((SpTraceStatus) s), &back));
      ck_assert_int_eq (back, s);
    }
  ck_assert_ptr_null (sp_trace_status_name ((SpTraceStatus) 5));
  SpTraceStatus unchanged = SP_TRACE_STATUS_OK;
  ck_assert (!sp_trace_status_from_name ("fine", &unchanged));
  ck_assert_str_eq (sp_trace_source_name (SP_TRACE_SOURCE_SIMULATED), "simulated");

  SpTraceRow row;
  sp_trace_row_init (&row);
  ck_assert_int_eq (row.parent_op_id, -1);
  ck_assert_uint_eq (row.group_id, SP_TRACE_NO_GROUP);
  ck_assert_int_eq (row.status, SP_TRACE_STATUS_NOT_RUN);
  ck_assert_int_eq (row.nccl_est_ns, -1);
  /* all_reduce of 1 MB over 8 ranks in 1 ms: algbw 1 GB/s, busbw 2·7/8. */
  row.coll = SP_COLL_ALL_REDUCE;
  row.bytes = 1000000;
  row.group_size = 8;
  row.dur_ns = 1000000;
  sp_trace_row_set_bandwidths (&row);
  ck_assert_double_eq_tol (row.algbw_gbs, 1.0, 1e-12);
  ck_assert_double_eq_tol (row.busbw_gbs, 1.75, 1e-12);
  row.coll = SP_COLL_COMPUTE;
  sp_trace_row_set_bandwidths (&row);
  ck_assert_double_eq (row.busbw_gbs, 0.0);

  /* Field formatting: enums by name, doubles exact and short. */
  gsize n = 0;
  const SpTraceField *fields = sp_trace_row_fields (&n);
  ck_assert_str_eq (fields[0].name, "op_id");
  ck_assert_str_eq (fields[n - 1].name, "nccl_est_ns");
  ck_assert_uint_eq (fields[n - 1].since_minor, 1);
  ck_assert_str_eq (fields[n - 2].name, "busbw_gbs");
  ck_assert_uint_eq (fields[n - 2].since_minor, 0);
  g_autoptr (GString) s = g_string_new (NULL);
  row.algbw_gbs = 0.1;
  row.coll = SP_COLL_REDUCE_SCATTER;
  for (gsize i = 0; i < n; i++)
    if (strcmp (fields[i].name, "algbw_gbs") == 0 || strcmp (fields[i].name, "coll") == 0
        || strcmp (fields[i].name, "parent_op_id") == 0)
      {
        sp_trace_field_append (&fields[i], &row, s);
        g_string_append_c (s, ',');
      }
  ck_assert_str_eq (s->str, "-1,reduce_scatter,0.1,");
}
END_TEST

/* ---------------------------------------------- the object header walk
 * Datatype and layout messages built byte by byte from the HDF5 File
 * Format Specification (version 2, IV.A.2.d and IV.A.2.i), with the
 * extents the specification gives them. */

static void
put (GByteArray *b, guint64 v, guint n)
{
  for (guint i = 0; i < n; i++)
    {
      guint8 c = i < 8 ? (guint8) (v >> (8 * i)) : 0; /* zeros past 8 bytes */
      g_byte_array_append (b, &c, 1);
    }
}

/* the 8-byte header: class and version, class bits, size */
static void
dt_head (GByteArray *b, guint version, guint cls, guint32 bits, guint32 size)
{
  put (b, (version << 4) | cls, 1);
  put (b, bits, 3);
  put (b, size, 4);
}

static void
dt_int (GByteArray *b, guint32 size)
{
  dt_head (b, 1, 0, 0, size);
  put (b, 0, 2);          /* bit offset */
  put (b, 8 * size, 2);   /* precision */
}

static void
put_name (GByteArray *b, const char *name, gboolean pad8)
{
  gsize n = strlen (name) + 1;
  g_byte_array_append (b, (const guint8 *) name, (guint) n);
  if (pad8)
    put (b, 0, (guint) ((8 - n % 8) % 8));
}

/* `b` emptied, then a header as dt_head */
static void
dt_new (GByteArray *b, guint version, guint cls, guint32 bits, guint32 size)
{
  g_byte_array_set_size (b, 0);
  dt_head (b, version, cls, bits, size);
}

/* A one-member compound of `size` bytes: its member `name` (padded to 8
 * before version 3), `info` bytes of offset (version 1: and rank,
 * reserved, permutation, dimensions), then a 4-byte integer type. */
static void
dt_compound1 (GByteArray *b, guint version, guint32 size, const char *name, guint info)
{
  dt_new (b, version, 6, 1, size);
  put_name (b, name, version < 3);
  put (b, 0, info);
  dt_int (b, 4);
}

/* `b` emptied, then n / 2 fields given as (value, bytes) pairs */
static void
put_fields (GByteArray *b, const guint64 *fields, gsize n)
{
  g_byte_array_set_size (b, 0);
  for (gsize i = 0; i + 1 < n; i += 2)
    put (b, fields[i], (guint) fields[i + 1]);
}

static gsize
extent_of (GByteArray *b)
{
  return sp_trace_dtype_extent (b->data, b->len);
}

START_TEST (test_header_walk_dtypes)
{
  g_autoptr (GByteArray) b = g_byte_array_new ();
  dt_int (b, 4);
  ck_assert_uint_eq (extent_of (b), 12);
  ck_assert_uint_eq (sp_trace_dtype_extent (b->data, 11), 0); /* cut short */
  dt_new (b, 1, 1, 0, 8); /* float: 12 bytes of properties */
  put (b, 0, 12);
  ck_assert_uint_eq (extent_of (b), 20);
  dt_new (b, 1, 3, 0, 5); /* a fixed string: none */
  ck_assert_uint_eq (extent_of (b), 8);

  /* compound: version 1 pads the name to 8 and has a 32-byte member
   * block (offset, rank, reserved, permutation, reserved, 4 dimension
   * sizes); version 2 a 4-byte offset (a name of 8 characters pads to 16);
   * version 3 unpadded names and an offset in as many bytes as the size
   * needs (300: 2) */
  static const struct {
    guint version;
    guint32 size;
    const char *name;
    guint info;
    gsize extent;
  } compounds[] = {
    { 1, 4, "a", 32, 8 + 8 + 32 + 12 },
    { 2, 4, "abcdefgh", 4, 8 + 16 + 4 + 12 },
    { 3, 300, "a", 2, 8 + 2 + 2 + 12 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (compounds); i++)
    {
      dt_compound1 (b, compounds[i].version, compounds[i].size, compounds[i].name,
                    compounds[i].info);
      ck_assert_uint_eq (extent_of (b), compounds[i].extent);
      b->data[1] = 2; /* claiming two members: the second runs past it */
      ck_assert_uint_eq (extent_of (b), 0);
    }
  /* a name without its NUL at the end of the message */
  dt_new (b, 3, 6, 1, 4);
  g_byte_array_append (b, (const guint8 *) "abc", 3);
  ck_assert_uint_eq (extent_of (b), 0);

  /* enum of 1-byte integers, two names, two values: version 3 unpadded,
   * version 1 padded to 8 */
  for (guint v = 1; v <= 3; v += 2)
    {
      dt_new (b, v, 8, 2, 1);
      dt_int (b, 1);
      put_name (b, "x", v < 3);
      put_name (b, "y", v < 3);
      put (b, 0, 1);
      put (b, 1, 1);
      ck_assert_uint_eq (extent_of (b), 8 + 12 + (v < 3 ? 16 : 4) + 2);
      b->data[1] = 3; /* a third name that is not there */
      ck_assert_uint_eq (extent_of (b), 0);
    }

  /* variable-length string: its base, a 1-byte integer */
  dt_new (b, 1, 9, 1, 16);
  dt_int (b, 1);
  ck_assert_uint_eq (extent_of (b), 20);

  /* array: version 3 rank, dims; versions 1 and 2 also 3 reserved bytes
   * and the permutations */
  dt_new (b, 3, 10, 0, 24);
  put (b, 2, 1);
  put (b, 2, 4);
  put (b, 3, 4);
  dt_int (b, 4);
  ck_assert_uint_eq (extent_of (b), 8 + 1 + 8 + 12);
  for (guint v = 1; v <= 2; v++)
    {
      dt_new (b, v, 10, 0, 8);
      put (b, 1, 4);
      put (b, 2, 4);
      put (b, 0, 4);
      dt_int (b, 4);
      ck_assert_uint_eq (extent_of (b), 8 + 4 + 8 + 12);
    }
  dt_new (b, 3, 10, 0, 8);
  put (b, 255, 1); /* 255 dimensions in 1 byte */
  ck_assert_uint_eq (extent_of (b), 0);

  /* opaque: an 8-byte tag needs no NUL (libhdf5 writes none) */
  dt_new (b, 1, 5, 8, 4);
  g_byte_array_append (b, (const guint8 *) "ABCDEFGH", 8);
  ck_assert_uint_eq (extent_of (b), 16);
  b->data[1] = 16; /* a 16-byte tag in 8 */
  ck_assert_uint_eq (extent_of (b), 0);

  /* an unknown class, a version 0 */
  dt_new (b, 1, 11, 0, 4);
  ck_assert_uint_eq (extent_of (b), 0);
  b->data[0] = 0x00;
  ck_assert_uint_eq (extent_of (b), 0);

  /* nesting: 16 variable-length levels over an integer, not 17 */
  for (guint levels = 16; levels <= 17; levels++)
    {
      g_byte_array_set_size (b, 0);
      for (guint i = 0; i < levels; i++)
        dt_head (b, 1, 9, 0, 16);
      dt_int (b, 4);
      ck_assert_uint_eq (extent_of (b), levels == 16 ? 16 * 8 + 12 : 0);
    }
}
END_TEST

START_TEST (test_header_walk_layouts)
{
  g_autoptr (GByteArray) b = g_byte_array_new ();
  /* version 3, chunked: version, class, rank (+1 for the element size),
   * B-tree address, 4-byte dimensions */
  static const guint64 v3_fine[] = { 3, 1, 2, 1, 3, 1, 4096, 8, 4, 4, 8, 4, 4, 4 };
  static const guint64 v3_zero[] = { 3, 1, 2, 1, 3, 1, 4096, 8, 4, 4, 0, 4, 4, 4 };
  put_fields (b, v3_fine, G_N_ELEMENTS (v3_fine));
  ck_assert_ptr_null (sp_trace_layout_problem (b->data, b->len, 8));
  put_fields (b, v3_zero, G_N_ELEMENTS (v3_zero));
  ck_assert_str_eq (sp_trace_layout_problem (b->data, b->len, 8),
                    "has a chunked layout with a chunk dimension of 0");
  /* the dimensions cut short */
  ck_assert_str_eq (sp_trace_layout_problem (b->data, b->len - 1, 8),
                    "has a chunked layout whose dimensions run past its message");
  /* contiguous (class 1): not this check's */
  b->data[1] = 1;
  ck_assert_ptr_null (sp_trace_layout_problem (b->data, b->len, 8));
  /* no dimension */
  b->data[1] = 2;
  b->data[2] = 0;
  ck_assert_str_eq (sp_trace_layout_problem (b->data, b->len, 8),
                    "has a chunked layout of no dimension");

  /* version 1: version, rank, class, 5 reserved, address, dimensions */
  static const guint64 v1[] = { 1, 1, 2, 1, 2, 1, 0, 5, 4096, 8, 0, 4, 4, 4 };
  put_fields (b, v1, G_N_ELEMENTS (v1));
  ck_assert_str_eq (sp_trace_layout_problem (b->data, b->len, 8),
                    "has a chunked layout with a chunk dimension of 0");

  /* version 4: flags, rank, the dimensions' byte count (5 here), dims; a
   * dimension of 2^32 is 0 to libhdf5's 32-bit one */
  static const guint64 v4[] = { 4, 1, 2, 1, 0, 1, 2, 1, 5, 1, G_GUINT64_CONSTANT (1) << 32, 5, 4, 5 };
  put_fields (b, v4, G_N_ELEMENTS (v4));
  ck_assert_str_eq (sp_trace_layout_problem (b->data, b->len, 8),
                    "has a chunked layout with a chunk dimension over 2^32 - 1");
  b->data[4] = 9; /* 9-byte dimensions */
  ck_assert_str_eq (sp_trace_layout_problem (b->data, b->len, 8),
                    "has a chunked layout with a damaged dimension size");
  b->data[4] = 5;
  b->data[5] = 7; /* 2^32 + 7 */
  ck_assert_str_eq (sp_trace_layout_problem (b->data, b->len, 8),
                    "has a chunked layout with a chunk dimension over 2^32 - 1");
  b->data[9] = 0; /* 7 */
  ck_assert_ptr_null (sp_trace_layout_problem (b->data, b->len, 8));
}
END_TEST

static Suite *
trace_suite (void)
{
  Suite *s = suite_create ("trace");
  TCase *tc = tcase_create ("core");
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_names_and_helpers);
  tcase_add_test (tc, test_rows_round_trip);
  tcase_add_test (tc, test_meta_round_trip);
  tcase_add_test (tc, test_partial);
  tcase_add_test (tc, test_crash_safety);
  tcase_add_test (tc, test_deterministic);
  tcase_add_test (tc, test_bad_enum_value);
  tcase_add_test (tc, test_bad_files);
  tcase_add_test (tc, test_reads_v1_0);
  tcase_add_test (tc, test_user_attributes);
  tcase_add_test (tc, test_header_walk_dtypes);
  tcase_add_test (tc, test_header_walk_layouts);
  suite_add_tcase (s, tc);
  return s;
}

int
main (int argc, char **argv)
{
  if (argc == 3 && strcmp (argv[1], "--write-sample") == 0)
    {
      g_autoptr (GError) error = NULL;
      if (!sp_sample_trace_write (argv[2], FALSE, &error))
        {
          fprintf (stderr, "test_trace: %s\n", error->message);
          return 1;
        }
      return 0;
    }
  /* The bad-file tests edit files with the raw API: keep HDF5 quiet. */
  H5Eset_auto2 (H5E_DEFAULT, NULL, NULL);
  return sp_test_run (trace_suite ());
}
