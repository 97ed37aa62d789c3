/* tools/plot.c: charts are written as real PNG/SVG files, atomically, and
 * bad paths are reported. */
#include "config.h"
#include "testutil.h"
#include "plot.h"
#include "shardplan/error.h"

#include <string.h>

static SpPlot *
make_chart (void)
{
  SpPlot *plot = sp_plot_new (2, "test chart");
  double x[] = { 1, 2, 4, 8, 16 }, y[] = { 10, 7, 5, 6, 9 }, m[] = { 60, 40, 30, 25, 22 };
  sp_plot_set_axes (plot, 0, "step time", "shard size", TRUE, "ms", FALSE);
  sp_plot_add_series (plot, 0, "flat", SP_PLOT_LINES, x, y, 5);
  sp_plot_set_axes (plot, 1, "memory", "shard size", TRUE, "GiB", FALSE);
  sp_plot_add_series (plot, 1, "memory", SP_PLOT_BARS, x, m, 5);
  sp_plot_add_hline (plot, 1, "GPU memory", 40);
  return plot;
}

START_TEST (test_png_and_svg)
{
  g_autofree char *dir = sp_test_tmpdir ();
  g_autofree char *png = g_build_filename (dir, "c.png", NULL);
  g_autofree char *svg = g_build_filename (dir, "c.svg", NULL);
  g_autoptr (SpPlot) plot = make_chart ();
  GError *error = NULL;
  ck_assert (sp_plot_save (plot, png, &error));
  SP_ASSERT_NO_ERROR (error);
  ck_assert (sp_plot_save (plot, svg, &error));
  SP_ASSERT_NO_ERROR (error);

  g_autofree char *data = NULL;
  gsize len = 0;
  ck_assert (g_file_get_contents (png, &data, &len, NULL));
  ck_assert_uint_gt (len, 1000);
  ck_assert (memcmp (data, "\x89PNG\r\n\x1a\n", 8) == 0);
  g_free (g_steal_pointer (&data));
  ck_assert (g_file_get_contents (svg, &data, &len, NULL));
  ck_assert (strstr (data, "<svg") != NULL);

  /* nothing but the two files is left behind */
  GDir *d = g_dir_open (dir, 0, NULL);
  int n = 0;
  for (const char *name; (name = g_dir_read_name (d)) != NULL;)
    n++;
  g_dir_close (d);
  ck_assert_int_eq (n, 2);
  g_unlink (png);
  g_unlink (svg);
  g_rmdir (dir);
}
END_TEST

START_TEST (test_bad_paths)
{
  g_autoptr (SpPlot) plot = make_chart ();
  GError *error = NULL;
  ck_assert (!sp_plot_save (plot, "/tmp/chart.jpeg", &error));
  SP_ASSERT_ERROR (error, SP_ERROR_UNSUPPORTED);
  ck_assert (strstr (error->message, "chart.jpeg") != NULL);
  g_clear_error (&error);
  ck_assert (!sp_plot_save (plot, "/nonexistent-dir/chart.png", &error));
  SP_ASSERT_ERROR (error, SP_ERROR_IO);
  g_clear_error (&error);
}
END_TEST

int
main (void)
{
#ifndef HAVE_CAIRO
  return 77; /* plots need cairo */
#endif
  Suite *s = suite_create ("plot");
  TCase *tc = tcase_create ("plot");
  tcase_add_test (tc, test_png_and_svg);
  tcase_add_test (tc, test_bad_paths);
  suite_add_tcase (s, tc);
  return sp_test_run (s);
}
