/* `shardplan trace show|export` on the sample trace (tests/lib/trace-sample.h),
 * checked against the numbers the sample is defined with: exit codes, the
 * summary's totals, the CSV and the Chrome JSON (parsed with json-glib). */
#include "config.h"
#include "testutil.h"
#include "trace-sample.h"

#include <json-glib/json-glib.h>
#include <stdarg.h>
#include <string.h>
#include <sys/wait.h>

static char *dir;
static char *sample;
static char *partial;

static const char *
shardplan (void)
{
  static char *path;
  if (path == NULL)
    {
      const char *env = g_getenv ("SHARDPLAN");
      const char *build = g_getenv ("SP_BUILDDIR");
      path = env ? g_strdup (env)
                 : g_build_filename (build ? build : SP_BUILDDIR, "tools", "shardplan", NULL);
    }
  return path;
}

/* Run `shardplan ARGS…` (NULL-terminated) and return its exit status. */
static int
run (char **out, char **err, ...)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_ptr_array_add (argv, (gpointer) shardplan ());
  va_list ap;
  va_start (ap, err);
  for (const char *a; (a = va_arg (ap, const char *)) != NULL;)
    g_ptr_array_add (argv, (gpointer) a);
  va_end (ap);
  g_ptr_array_add (argv, NULL);
  int status = 0;
  g_autoptr (GError) error = NULL;
  ck_assert_msg (g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL, out,
                               err, &status, &error),
                 "cannot run %s: %s", shardplan (), error ? error->message : "");
  ck_assert (WIFEXITED (status));
  return WEXITSTATUS (status);
}

/* One line on stderr, prefixed by the subcommand. */
static void
assert_one_line (const char *err, const char *prefix)
{
  ck_assert_msg (g_str_has_prefix (err, prefix), "stderr '%s' lacks prefix '%s'", err, prefix);
  const char *nl = strchr (err, '\n');
  ck_assert_msg (nl != NULL && nl[1] == '\0', "not one line: '%s'", err);
}

static void
setup (void)
{
  dir = sp_test_tmpdir ();
  sample = g_build_filename (dir, "sample.h5", NULL);
  partial = g_build_filename (dir, "partial.h5", NULL);
  g_autoptr (GError) error = NULL;
  ck_assert (sp_sample_trace_write (sample, FALSE, &error));
  ck_assert (sp_sample_trace_write (partial, TRUE, &error));
}

static void
teardown (void)
{
  ck_assert (sp_test_rmtree (dir));
  g_clear_pointer (&dir, g_free);
  g_clear_pointer (&sample, g_free);
  g_clear_pointer (&partial, g_free);
}

/* The whitespace-separated fields of the line of `text` starting with `key `. */
static char **
line_fields (const char *text, const char *key)
{
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  for (char **l = lines; *l; l++)
    {
      g_auto (GStrv) f = g_strsplit_set (*l, " ", -1);
      g_autoptr (GPtrArray) keep = g_ptr_array_new_with_free_func (g_free);
      for (char **p = f; *p; p++)
        if (**p)
          g_ptr_array_add (keep, g_strdup (*p));
      if (keep->len > 0 && strcmp (keep->pdata[0], key) == 0)
        {
          g_ptr_array_add (keep, NULL);
          return (char **) g_ptr_array_steal (keep, NULL);
        }
    }
  ck_abort_msg ("no line for %s in:\n%s", key, text);
  return NULL;
}

START_TEST (test_show_text)
{
  g_autofree char *out = NULL, *err = NULL;
  ck_assert_int_eq (run (&out, &err, "trace", "show", sample, NULL), 0);
  ck_assert_str_eq (err, "");
  ck_assert_ptr_nonnull (strstr (out, "state:     complete\n"));
  ck_assert_ptr_nonnull (strstr (out, "source:    measured, by shardplan test 0.0-test\n"));
  ck_assert_ptr_nonnull (strstr (out, "ranks:     8 (world size 8) on 2 nodes\n"));
  ck_assert_ptr_nonnull (strstr (out, "ops:       3 distinct op ids, 48 rows\n"));
  /* 16 rows each; 8 MiB × 16 = 134217728 B; 16 × 100 µs = 1.6 ms. */
  g_auto (GStrv) ag = line_fields (out, "all_gather");
  ck_assert_str_eq (ag[1], "16");
  ck_assert_str_eq (ag[2], "134217728");
  ck_assert_str_eq (ag[3], "1.600");
  g_auto (GStrv) shard = line_fields (out, "shard");
  ck_assert_str_eq (shard[1], "32");
  ck_assert_str_eq (shard[2], "268435456");
  ck_assert_str_eq (shard[3], "3.360");
  g_auto (GStrv) rep = line_fields (out, "replicate");
  ck_assert_str_eq (rep[2], "33554432");
  ck_assert_str_eq (rep[3], "1.920");

  g_autofree char *pout = NULL, *perr = NULL;
  ck_assert_int_eq (run (&pout, &perr, "trace", "show", partial, NULL), 0);
  ck_assert_ptr_nonnull (strstr (pout, "state:     partial: op 2 timed out on rank 5\n"));
}
END_TEST

START_TEST (test_show_json)
{
  g_autofree char *out = NULL, *err = NULL;
  ck_assert_int_eq (run (&out, &err, "trace", "show", "--format", "json", sample, NULL), 0);
  g_autoptr (JsonParser) p = json_parser_new ();
  g_autoptr (GError) error = NULL;
  ck_assert_msg (json_parser_load_from_data (p, out, -1, &error), "%s", out);
  JsonObject *o = json_node_get_object (json_parser_get_root (p));
  ck_assert (json_object_get_boolean_member (o, "complete"));
  ck_assert_int_eq (json_object_get_int_member (o, "rows"), 48);
  ck_assert_int_eq (json_object_get_int_member (o, "ops"), 3);
  ck_assert_int_eq (json_object_get_int_member (o, "ranks"), 8);
  ck_assert_int_eq (json_object_get_int_member (o, "nodes"), 2);
  ck_assert_int_eq (json_object_get_int_member (o, "iters"), 2);
  ck_assert_str_eq (json_object_get_string_member (o, "source"), "measured");
  ck_assert_int_eq (json_object_get_int_member (json_object_get_object_member (o, "status"), "ok"),
                    48);
  JsonArray *kinds = json_object_get_array_member (o, "by_kind");
  ck_assert_uint_eq (json_array_get_length (kinds), 3);
  gboolean seen_rs = FALSE;
  for (guint i = 0; i < 3; i++)
    {
      JsonObject *k = json_array_get_object_element (kinds, i);
      if (strcmp (json_object_get_string_member (k, "kind"), "reduce_scatter") == 0)
        {
          seen_rs = TRUE;
          ck_assert_int_eq (json_object_get_int_member (k, "rows"), 16);
          ck_assert_int_eq (json_object_get_int_member (k, "bytes"), 16 * 8388608);
          ck_assert_int_eq (json_object_get_int_member (k, "total_ns"), 16 * 110000);
        }
    }
  ck_assert (seen_rs);
  JsonArray *fams = json_object_get_array_member (o, "by_family");
  ck_assert_uint_eq (json_array_get_length (fams), 2);
  JsonObject *f0 = json_array_get_object_element (fams, 0);
  ck_assert_str_eq (json_object_get_string_member (f0, "family"), "shard");
  ck_assert_int_eq (json_object_get_int_member (f0, "total_ns"), 16 * 100000 + 16 * 110000);

  g_autofree char *pout = NULL, *perr = NULL;
  ck_assert_int_eq (run (&pout, &perr, "trace", "show", "--format", "json", partial, NULL), 0);
  ck_assert_ptr_nonnull (strstr (pout, "\"complete\" : false"));
  ck_assert_ptr_nonnull (strstr (pout, "op 2 timed out on rank 5"));
}
END_TEST

START_TEST (test_export_csv)
{
  g_autofree char *csv = g_build_filename (dir, "rows.csv", NULL);
  g_autofree char *out = NULL, *err = NULL;
  ck_assert_int_eq (run (&out, &err, "trace", "export", sample, "--format", "csv", "-o", csv, NULL),
                    0);
  ck_assert_str_eq (out, "");
  g_autofree char *text = NULL;
  ck_assert (g_file_get_contents (csv, &text, NULL, NULL));
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  ck_assert_uint_eq (g_strv_length (lines), 48 + 2); /* header, 48 rows, "" after the last \n */
  ck_assert_str_eq (lines[49], "");
  ck_assert_str_eq (lines[0], "op_id,parent_op_id,iter,rank,group_id,group_rank,group_size,"
                              "seq_in_group,coll,dtype,redop,flags,status,count,bytes,"
                              "t_enqueue_ns,t_start_ns,t_end_ns,dur_ns,algbw_gbs,busbw_gbs,nccl_est_ns");
  /* Row 29 = (iter 1, op 0, rank 5): see trace-sample.h. */
  g_auto (GStrv) f = g_strsplit (lines[30], ",", -1);
  ck_assert_uint_eq (g_strv_length (f), 22);
  ck_assert_str_eq (f[21], "90000"); /* nccl_est_ns of op 0 */
  const char *expect[] = { "0", "-1", "1", "5", "1", "1", "4", "2", "all_gather", "bfloat16",
                           "none", "4", "ok", "4194304", "8388608", "999550", "1000050",
                           "1100050", "100000" };
  for (guint i = 0; i < G_N_ELEMENTS (expect); i++)
    ck_assert_str_eq (f[i], expect[i]);
  ck_assert_double_eq_tol (g_ascii_strtod (f[19], NULL), 83.88608, 1e-9);
  ck_assert_double_eq_tol (g_ascii_strtod (f[20], NULL), 62.91456, 1e-9);

  /* To standard output, the same bytes. */
  g_autofree char *out2 = NULL, *err2 = NULL;
  ck_assert_int_eq (run (&out2, &err2, "trace", "export", "--format", "csv", sample, NULL), 0);
  ck_assert_str_eq (out2, text);
}
END_TEST

START_TEST (test_export_chrome)
{
  g_autofree char *json = g_build_filename (dir, "trace.json", NULL);
  g_autofree char *out = NULL, *err = NULL;
  ck_assert_int_eq (
      run (&out, &err, "trace", "export", sample, "--format", "chrome", "-o", json, NULL), 0);
  g_autoptr (JsonParser) p = json_parser_new ();
  g_autoptr (GError) error = NULL;
  ck_assert_msg (json_parser_load_from_file (p, json, &error), "%s",
                 error ? error->message : "");
  JsonObject *root = json_node_get_object (json_parser_get_root (p));
  ck_assert_str_eq (json_object_get_string_member (root, "displayTimeUnit"), "ns");
  JsonArray *events = json_object_get_array_member (root, "traceEvents");
  guint n_x = 0, thread_names = 0, tids_seen = 0;
  gboolean checked = FALSE;
  for (guint i = 0; i < json_array_get_length (events); i++)
    {
      JsonObject *e = json_array_get_object_element (events, i);
      const char *ph = json_object_get_string_member (e, "ph");
      const char *name = json_object_get_string_member (e, "name");
      gint64 tid = json_object_has_member (e, "tid") ? json_object_get_int_member (e, "tid") : -1;
      if (strcmp (ph, "M") == 0 && strcmp (name, "thread_name") == 0)
        {
          thread_names++;
          ck_assert (tid >= 0 && tid < 8);
          ck_assert (!(tids_seen & (1u << tid)));
          tids_seen |= 1u << tid;
          g_autofree char *want = g_strdup_printf ("rank %" G_GINT64_FORMAT, tid);
          ck_assert_str_eq (json_object_get_string_member (json_object_get_object_member (e, "args"),
                                                           "name"), want);
          /* ranks 0-3 on node 0, 4-7 on node 1 */
          ck_assert_int_eq (json_object_get_int_member (e, "pid"), tid / 4);
        }
      if (strcmp (ph, "X") != 0)
        continue;
      n_x++;
      JsonObject *args = json_object_get_object_member (e, "args");
      if (tid == 5 && json_object_get_int_member (args, "iter") == 1
          && json_object_get_int_member (args, "op_id") == 0)
        {
          checked = TRUE;
          ck_assert_str_eq (name, "L0.fwd.allgather");
          ck_assert_int_eq (json_object_get_int_member (e, "pid"), 1);
          ck_assert_double_eq_tol (json_object_get_double_member (e, "ts"), 1000.05, 1e-9);
          ck_assert_double_eq_tol (json_object_get_double_member (e, "dur"), 100.0, 1e-9);
          ck_assert_int_eq (json_object_get_int_member (args, "bytes"), 8388608);
          ck_assert_int_eq (json_object_get_int_member (args, "count"), 4194304);
          ck_assert_str_eq (json_object_get_string_member (args, "group"), "shard[1]");
          ck_assert_int_eq (json_object_get_int_member (args, "group_rank"), 1);
          ck_assert_str_eq (json_object_get_string_member (args, "status"), "ok");
          ck_assert_double_eq_tol (json_object_get_double_member (args, "busbw_gbs"), 62.9146,
                                   1e-4);
        }
    }
  ck_assert_uint_eq (n_x, 48);
  ck_assert_uint_eq (thread_names, 8);
  ck_assert_uint_eq (tids_seen, 0xff);
  ck_assert (checked);
}
END_TEST

START_TEST (test_errors)
{
  g_autofree char *out = NULL, *err = NULL;
  g_autofree char *text = sp_test_fixture ("trace/not-a-trace.txt");
  ck_assert_int_eq (run (&out, &err, "trace", "show", text, NULL), 2);
  assert_one_line (err, "shardplan trace show: ");
  ck_assert_ptr_nonnull (strstr (err, "not an HDF5 file"));
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);

  /* A failed export leaves an existing output file alone and no temp file. */
  g_autofree char *dest = g_build_filename (dir, "keep.csv", NULL);
  ck_assert (g_file_set_contents (dest, "old", -1, NULL));
  ck_assert_int_eq (run (&out, &err, "trace", "export", text, "--format", "csv", "-o", dest, NULL),
                    2);
  assert_one_line (err, "shardplan trace export: ");
  g_autofree char *kept = NULL;
  ck_assert (g_file_get_contents (dest, &kept, NULL, NULL));
  ck_assert_str_eq (kept, "old");
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);

  g_autofree char *missing = g_build_filename (dir, "missing.h5", NULL);
  ck_assert_int_eq (run (&out, &err, "trace", "show", missing, NULL), 2);
  assert_one_line (err, "shardplan trace show: ");
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);
  ck_assert_int_eq (run (&out, &err, "trace", "export", sample, NULL), 2);
  assert_one_line (err, "shardplan trace export: --format is required");
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);
  ck_assert_int_eq (run (&out, &err, "trace", "export", sample, "--format", "xml", NULL), 2);
  assert_one_line (err, "shardplan trace export: --format 'xml'");
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);
  ck_assert_int_eq (run (&out, &err, "trace", "show", "--format", "csv", sample, NULL), 2);
  assert_one_line (err, "shardplan trace show: --format 'csv'");
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);
  ck_assert_int_eq (run (&out, &err, "trace", "frobnicate", sample, NULL), 2);
  assert_one_line (err, "shardplan trace: unknown command 'frobnicate'");
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);
  ck_assert_int_eq (run (&out, &err, "trace", NULL), 2);
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);

  /* An output directory that does not exist: refused before any work (2),
   * naming the path. */
  g_autofree char *nowhere = g_build_filename (dir, "no", "such", "out.json", NULL);
  ck_assert_int_eq (
      run (&out, &err, "trace", "export", sample, "--format", "chrome", "-o", nowhere, NULL), 2);
  assert_one_line (err, "shardplan trace export: -o/--output '");
  ck_assert_ptr_nonnull (strstr (err, nowhere));
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);

  /* Nothing but the inputs and keep.csv is left in the directory. */
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  guint n = 0;
  for (const char *name; (name = g_dir_read_name (d)) != NULL; n++)
    ck_assert_msg (!strstr (name, ".tmp"), "left behind: %s", name);
  ck_assert_uint_eq (n, 3);

  /* --help everywhere. */
  ck_assert_int_eq (run (&out, &err, "trace", "--help", NULL), 0);
  ck_assert_ptr_nonnull (strstr (out, "export"));
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);
  ck_assert_int_eq (run (&out, &err, "trace", "show", "--help", NULL), 0);
  ck_assert_ptr_nonnull (strstr (out, "--format"));
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);
  ck_assert_int_eq (run (&out, &err, "trace", "export", "--help", NULL), 0);
  ck_assert_ptr_nonnull (strstr (out, "chrome"));
}
END_TEST

int
main (void)
{
  if (!g_file_test (shardplan (), G_FILE_TEST_IS_EXECUTABLE))
    {
      fprintf (stderr, "test_trace_cli: %s is not built\n", shardplan ());
      return 99; /* a hard error: the command is part of every build */
    }
  Suite *s = suite_create ("trace-cli");
  TCase *tc = tcase_create ("cli");
  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_show_text);
  tcase_add_test (tc, test_show_json);
  tcase_add_test (tc, test_export_csv);
  tcase_add_test (tc, test_export_chrome);
  tcase_add_test (tc, test_errors);
  suite_add_tcase (s, tc);
  return sp_test_run (s);
}
