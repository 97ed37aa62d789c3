/* lib/json-text.h: JSON outputs print each double in its shortest
 * round-trip form, not json-glib's "%.17g". */
#include "config.h"
#include "testutil.h"
#include "json-text.h"

#include <math.h>

static void
check_double (double v, const char *want)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  ck_assert_str_eq (sp_json_double (buf, v), want);
  ck_assert (g_ascii_strtod (buf, NULL) == v);
}

START_TEST (test_double)
{
  check_double (4659480.303, "4659480.303");
  check_double (51676.296, "51676.296");
  check_double (0.1, "0.1");
  check_double (-0.1, "-0.1");
  check_double (0, "0");
  check_double (2, "2");
  check_double (1e21, "1e+21");
  check_double (1.0 / 3, "0.3333333333333333");
  check_double (130200, "130200");
  check_double (-53500, "-53500");
  check_double (1e16, "10000000000000000");
  check_double (1e17, "1e+17");
  check_double (1.5e-5, "1.5e-05");
  check_double (0.000123, "0.000123");
  check_double (0.1 + 0.2, "0.30000000000000004");
  /* any double reads back exactly, in at most 17 digits */
  GRand *rand = g_rand_new_with_seed (16);
  for (int i = 0; i < 100000; i++)
    {
      double v = ldexp (g_rand_double (rand), g_rand_int_range (rand, -60, 60));
      char buf[G_ASCII_DTOSTR_BUF_SIZE];
      ck_assert (g_ascii_strtod (sp_json_double (buf, v), NULL) == v);
    }
  g_rand_free (rand);
}
END_TEST

START_TEST (test_text)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "step_us");
  json_builder_add_double_value (b, 51676.296);
  json_builder_set_member_name (b, "whole");
  json_builder_add_double_value (b, 2.0);
  json_builder_set_member_name (b, "neg");
  json_builder_add_double_value (b, -1e-7);
  json_builder_set_member_name (b, "count");
  json_builder_add_int_value (b, G_GINT64_CONSTANT (12345678901234567));
  json_builder_set_member_name (b, "name \"1.10000000000000009\"");
  json_builder_add_string_value (b, "0.30000000000000004 \\ \"2.5000000000000001\"");
  json_builder_set_member_name (b, "list");
  json_builder_begin_array (b);
  json_builder_add_double_value (b, 0.1);
  json_builder_add_double_value (b, 1e300);
  json_builder_end_array (b);
  json_builder_end_object (b);
  g_autoptr (JsonNode) root = json_builder_get_root (b);
  g_autofree char *compact = sp_json_text (root, FALSE);
  ck_assert_str_eq (compact, "{\"step_us\":51676.296,\"whole\":2.0,\"neg\":-1e-07,"
                             "\"count\":12345678901234567,"
                             "\"name \\\"1.10000000000000009\\\"\":"
                             "\"0.30000000000000004 \\\\ \\\"2.5000000000000001\\\"\","
                             "\"list\":[0.1,1e+300]}");
  g_autofree char *pretty = sp_json_text (root, TRUE);
  ck_assert_msg (strstr (pretty, "  \"step_us\" : 51676.296,\n") != NULL, "%s", pretty);
  ck_assert_msg (strstr (pretty, "    0.1,\n") != NULL, "%s", pretty);
  /* the text parses back to the same values */
  g_autoptr (JsonParser) parser = json_parser_new ();
  ck_assert (json_parser_load_from_data (parser, pretty, -1, NULL));
  JsonObject *o = json_node_get_object (json_parser_get_root (parser));
  ck_assert (json_object_get_double_member (o, "step_us") == 51676.296);
  ck_assert (json_object_get_double_member (o, "neg") == -1e-7);
}
END_TEST

static Suite *
json_text_suite (void)
{
  Suite *s = suite_create ("json-text");
  TCase *tc = tcase_create ("core");
  tcase_add_test (tc, test_double);
  tcase_add_test (tc, test_text);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  return sp_test_run (json_text_suite ());
}
