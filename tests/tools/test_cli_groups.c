/* `shardplan groups --format json` against the library: the command is run
 * as a child process ($SHARDPLAN), its stdout parsed with json-glib and
 * compared with sp_groups_build() on the same options — family by family,
 * with the DESIGN.md merge of local_all_to_all.local/.global into one
 * family and the creation order — over a grid of configurations.  Hand
 * written expectations from shared/reference/deepspeed-semantics.md pin the
 * worked examples independently of the library.  `shardplan info` output is
 * checked here too (JSON parses and lists what this build has). */
#include "config.h"
#include "testutil.h"
#include "shardplan/shardplan.h"

#include <json-glib/json-glib.h>
#include <string.h>
#include <sys/wait.h>

/* ---- running the command -------------------------------------------------- */

typedef struct {
  int status; /* exit status, or -1 if it did not exit normally */
  char *out;
  char *err;
} Run;

static void
run_clear (Run *r)
{
  g_clear_pointer (&r->out, g_free);
  g_clear_pointer (&r->err, g_free);
}

static const char *
shardplan_path (void)
{
  const char *p = g_getenv ("SHARDPLAN");
  return p ? p : SP_BUILDDIR "/tools/shardplan";
}

/* Run `shardplan <args…>` (args NULL-terminated). */
static Run
run_argv (const char *const *args)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_ptr_array_add (argv, (gpointer) shardplan_path ());
  for (gsize i = 0; args[i]; i++)
    g_ptr_array_add (argv, (gpointer) args[i]);
  g_ptr_array_add (argv, NULL);
  Run r = { -1, NULL, NULL };
  int wait_status = 0;
  GError *error = NULL;
  gboolean ok = g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                              &r.out, &r.err, &wait_status, &error);
  ck_assert_msg (ok, "cannot run %s: %s", shardplan_path (), error ? error->message : "?");
  if (WIFEXITED (wait_status))
    r.status = WEXITSTATUS (wait_status);
  return r;
}

#define RUN(...) run_argv ((const char *const[]){ __VA_ARGS__, NULL })

static JsonNode *
parse_json (const char *text)
{
  g_autoptr (JsonParser) parser = json_parser_new ();
  GError *error = NULL;
  ck_assert_msg (json_parser_load_from_data (parser, text, -1, &error), "stdout is not JSON: %s\n%.300s",
                 error ? error->message : "?", text);
  JsonNode *root = json_parser_steal_root (parser);
  ck_assert_msg (root && JSON_NODE_HOLDS_OBJECT (root), "JSON root is not an object");
  return root;
}

/* ---- the library's answer in the printed shape ---------------------------- */

/* DESIGN.md's printed families; local_all_to_all is the two library families
 * concatenated (local groups first).  Key order as documented. */
typedef struct {
  const char *name;
  SpFamily parts[2];
  guint n_parts;
} Printed;

static const Printed printed[] = {
  { "shard", { SP_FAMILY_SHARD }, 1 },
  { "replicate", { SP_FAMILY_REPLICATE }, 1 },
  { "shard_intra_node", { SP_FAMILY_SHARD_INTRA_NODE }, 1 },
  { "shard_inter_node", { SP_FAMILY_SHARD_INTER_NODE }, 1 },
  { "tensor", { SP_FAMILY_TENSOR }, 1 },
  { "data", { SP_FAMILY_DATA }, 1 },
  { "expert", { SP_FAMILY_EXPERT }, 1 },
  { "expert_data", { SP_FAMILY_EXPERT_DATA }, 1 },
  { "zero_param", { SP_FAMILY_ZERO_PARAM }, 1 },
  { "local_all_to_all", { SP_FAMILY_A2A_LOCAL, SP_FAMILY_A2A_GLOBAL }, 2 },
};

static void
check_group (JsonArray *group, const guint32 *members, guint32 size, const char *what)
{
  ck_assert_msg (json_array_get_length (group) == size, "%s: %u members in JSON, %u in the library",
                 what, json_array_get_length (group), size);
  for (guint32 j = 0; j < size; j++)
    ck_assert_msg ((guint64) json_array_get_int_element (group, j) == members[j],
                   "%s: member %u is %" G_GINT64_FORMAT ", library says %u", what, j,
                   json_array_get_int_element (group, j), members[j]);
}

/* Compare the JSON object `root` with the library's `groups`. */
static void
check_json_equals_library (JsonObject *root, const SpGroups *groups, const char *config)
{
  const SpGroupsOptions *opts = sp_groups_options (groups);
  ck_assert_msg (json_object_has_member (root, "world_size") && json_object_has_member (root, "families")
                   && json_object_has_member (root, "creation_order")
                   && json_object_get_size (root) == 3,
                 "%s: top-level members are not exactly world_size, families, creation_order", config);
  ck_assert_int_eq (json_object_get_int_member (root, "world_size"), opts->world_size);
  JsonObject *families = json_object_get_object_member (root, "families");
  guint n_present = 0;
  for (gsize i = 0; i < G_N_ELEMENTS (printed); i++)
    {
      const Printed *p = &printed[i];
      gboolean present = FALSE;
      for (guint k = 0; k < p->n_parts; k++)
        present |= sp_groups_has_family (groups, p->parts[k]);
      ck_assert_msg (present == json_object_has_member (families, p->name),
                     "%s: family %s is %s in the library but %s in the JSON", config, p->name,
                     present ? "built" : "not built", present ? "missing" : "present");
      if (!present)
        continue;
      n_present++;
      JsonArray *list = json_object_get_array_member (families, p->name);
      if (p->parts[0] == SP_FAMILY_REPLICATE && opts->shard_size == opts->world_size)
        {
          /* DeepSpeed's replicate_groups for S == W: [[0], [1], …]. */
          ck_assert_msg (json_array_get_length (list) == opts->world_size,
                         "%s: S == W must print W singleton replicate groups", config);
          for (guint32 r = 0; r < opts->world_size; r++)
            check_group (json_array_get_array_element (list, r), &r, 1, config);
          continue;
        }
      guint32 at = 0;
      for (guint k = 0; k < p->n_parts; k++)
        {
          guint32 n = sp_groups_n_groups (groups, p->parts[k]);
          for (guint32 g = 0; g < n; g++, at++)
            {
              guint32 size;
              const guint32 *m = sp_groups_members (groups, p->parts[k], g, &size);
              ck_assert_msg (at < json_array_get_length (list), "%s: %s has too few groups", config,
                             p->name);
              g_autofree char *what = g_strdup_printf ("%s: %s[%u]", config, p->name, at);
              check_group (json_array_get_array_element (list, at), m, size, what);
            }
        }
      ck_assert_msg (json_array_get_length (list) == at, "%s: %s has %u groups, library %u", config,
                     p->name, json_array_get_length (list), at);
    }
  ck_assert_msg (json_object_get_size (families) == n_present, "%s: unexpected families in the JSON",
                 config);

  /* Creation order: the library's, world left out, global_i continuing the
   * local_all_to_all indices. */
  JsonArray *order = json_object_get_array_member (root, "creation_order");
  guint32 n_created = sp_groups_n_created (groups), at = 0;
  for (guint32 i = 0; i < n_created; i++)
    {
      SpFamily family;
      guint32 index;
      sp_groups_created (groups, i, &family, &index);
      const char *name = NULL;
      if (family == SP_FAMILY_A2A_LOCAL || family == SP_FAMILY_A2A_GLOBAL)
        {
          name = "local_all_to_all";
          if (family == SP_FAMILY_A2A_GLOBAL)
            index += sp_groups_n_groups (groups, SP_FAMILY_A2A_LOCAL);
        }
      else if (family != SP_FAMILY_WORLD)
        name = sp_family_name (family);
      if (name == NULL)
        continue;
      ck_assert_msg (at < json_array_get_length (order), "%s: creation_order too short", config);
      JsonArray *e = json_array_get_array_element (order, at++);
      ck_assert_msg (json_array_get_length (e) == 2, "%s: creation_order entry is not a pair", config);
      ck_assert_msg (strcmp (json_array_get_string_element (e, 0), name) == 0
                       && json_array_get_int_element (e, 1) == index,
                     "%s: creation_order[%u] is [%s, %" G_GINT64_FORMAT "], library says [%s, %u]",
                     config, at - 1, json_array_get_string_element (e, 0),
                     json_array_get_int_element (e, 1), name, index);
    }
  ck_assert_msg (json_array_get_length (order) == at, "%s: creation_order has %u entries, library %u",
                 config, json_array_get_length (order), at);
}

/* Options → command line (only what is set, as a user would type it). */
static GPtrArray *
options_to_args (const SpGroupsOptions *o, const char *format)
{
  GPtrArray *a = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (a, g_strdup ("groups"));
#define ARG_U32(flag, v) \
  do { if (v) { g_ptr_array_add (a, g_strdup (flag)); g_ptr_array_add (a, g_strdup_printf ("%u", v)); } } while (0)
  ARG_U32 ("--world-size", o->world_size);
  ARG_U32 ("--devices-per-node", o->devices_per_node);
  ARG_U32 ("--shard-size", o->shard_size);
  if (o->hierarchical)
    g_ptr_array_add (a, g_strdup ("--hierarchical"));
  ARG_U32 ("--tensor-parallel", o->tensor_parallel);
  ARG_U32 ("--pipeline-parallel", o->pipeline_parallel);
  ARG_U32 ("--expert-parallel", o->expert_parallel);
  if (o->data_before_expert)
    g_ptr_array_add (a, g_strdup ("--data-before-expert"));
  ARG_U32 ("--zero-param-group-size", o->zero_param_group_size);
  if (o->local_all_to_all)
    g_ptr_array_add (a, g_strdup ("--local-all-to-all"));
#undef ARG_U32
  g_ptr_array_add (a, g_strdup ("--format"));
  g_ptr_array_add (a, g_strdup (format));
  g_ptr_array_add (a, NULL);
  return a;
}

/* Run the command on `o` and check it against the library: the same groups
 * and order, or exit 2 with the library's one-line message; warnings as
 * "shardplan groups: warning: …" lines.  Returns TRUE if the config built. */
static gboolean
check_config (const SpGroupsOptions *o)
{
  g_autoptr (GPtrArray) args = options_to_args (o, "json");
  g_autofree char *config = g_strjoinv (" ", (char **) args->pdata);
  GError *error = NULL;
  g_autoptr (SpGroups) groups = sp_groups_build (o, &error);
  Run r = run_argv ((const char *const *) args->pdata);
  if (groups == NULL)
    {
      g_autofree char *expect = g_strdup_printf ("shardplan groups: %s\n", error->message);
      ck_assert_msg (r.status == 2, "%s: library rejects (%s) but exit status is %d", config,
                     error->message, r.status);
      ck_assert_msg (strcmp (r.err, expect) == 0, "%s: stderr is '%s', expected '%s'", config, r.err,
                     expect);
      ck_assert_msg (r.out[0] == '\0', "%s: rejected configuration printed to stdout", config);
      g_error_free (error);
      run_clear (&r);
      return FALSE;
    }
  ck_assert_msg (r.status == 0, "%s: exit status %d, stderr: %s", config, r.status, r.err);
  GString *expect_err = g_string_new (NULL);
  const char *const *w = sp_groups_warnings (groups);
  for (gsize i = 0; w && w[i]; i++)
    g_string_append_printf (expect_err, "shardplan groups: warning: %s\n", w[i]);
  ck_assert_msg (strcmp (r.err, expect_err->str) == 0, "%s: stderr '%s', expected '%s'", config, r.err,
                 expect_err->str);
  g_string_free (expect_err, TRUE);
  g_autoptr (JsonNode) root = parse_json (r.out);
  check_json_equals_library (json_node_get_object (root), groups, config);
  run_clear (&r);
  return TRUE;
}

/* ---- grids ---------------------------------------------------------------- */

START_TEST (test_grid_mics)
{
  static const guint32 worlds[] = { 1, 2, 4, 6, 8, 12, 16, 24, 32, 40, 64 };
  static const guint32 dpns[] = { 1, 4, 8 };
  guint n_built = 0, n_rejected = 0;
  for (gsize wi = 0; wi < G_N_ELEMENTS (worlds); wi++)
    for (gsize di = 0; di < G_N_ELEMENTS (dpns); di++)
      for (guint32 s = 1; s <= worlds[wi]; s++)
        {
          /* every divisor, plus one size that does not divide */
          if (worlds[wi] % s != 0 && s != 3 && s != 5)
            continue;
          for (int hier = 0; hier < 2; hier++)
            {
              SpGroupsOptions o;
              sp_groups_options_init (&o);
              o.world_size = worlds[wi];
              o.devices_per_node = dpns[di];
              o.shard_size = s;
              o.hierarchical = hier;
              if (check_config (&o))
                n_built++;
              else
                n_rejected++;
            }
        }
  /* the grid exercises both paths */
  ck_assert_uint_gt (n_built, 50);
  ck_assert_uint_gt (n_rejected, 20);
}
END_TEST

START_TEST (test_grid_expert_tensor)
{
  static const guint32 worlds[] = { 8, 16, 32 };
  guint n_built = 0;
  for (gsize wi = 0; wi < G_N_ELEMENTS (worlds); wi++)
    for (guint32 t = 0; t <= 2; t++)
      for (guint32 p = 0; p <= 2; p++)
        for (guint32 e = 1; e <= 8; e *= 2)
          for (int dbe = 0; dbe < 2; dbe++)
            {
              SpGroupsOptions o;
              sp_groups_options_init (&o);
              o.world_size = worlds[wi];
              o.tensor_parallel = t;
              o.pipeline_parallel = p;
              o.expert_parallel = e;
              o.data_before_expert = dbe;
              n_built += check_config (&o);
            }
  ck_assert_uint_gt (n_built, 50);
  /* the tensor mesh alone */
  for (guint32 t = 1; t <= 16; t++)
    {
      SpGroupsOptions o;
      sp_groups_options_init (&o);
      o.world_size = 16;
      o.tensor_parallel = t;
      check_config (&o);
    }
}
END_TEST

START_TEST (test_grid_zero_param_and_a2a)
{
  for (guint32 z = 1; z <= 32; z++)
    {
      SpGroupsOptions o;
      sp_groups_options_init (&o);
      o.world_size = 16;
      o.zero_param_group_size = z;
      check_config (&o);
    }
  static const guint32 worlds[] = { 1, 4, 8, 12, 16, 20, 32 };
  static const guint32 dpns[] = { 1, 4, 8 };
  for (gsize wi = 0; wi < G_N_ELEMENTS (worlds); wi++)
    for (gsize di = 0; di < G_N_ELEMENTS (dpns); di++)
      {
        SpGroupsOptions o;
        sp_groups_options_init (&o);
        o.world_size = worlds[wi];
        o.devices_per_node = dpns[di];
        o.local_all_to_all = TRUE;
        check_config (&o);
      }
}
END_TEST

START_TEST (test_all_families_any_order)
{
  SpGroupsOptions o;
  sp_groups_options_init (&o);
  o.world_size = 32;
  o.devices_per_node = 4;
  o.shard_size = 8;
  o.hierarchical = TRUE;
  o.tensor_parallel = 2;
  o.expert_parallel = 4;
  o.zero_param_group_size = 4;
  o.local_all_to_all = TRUE;
  ck_assert (check_config (&o));

  /* The same request with the options in another order prints the same bytes. */
  Run a = RUN ("groups", "--world-size", "32", "--devices-per-node", "4", "--shard-size", "8",
               "--hierarchical", "--tensor-parallel", "2", "--expert-parallel", "4",
               "--zero-param-group-size", "4", "--local-all-to-all", "--format", "json");
  Run b = RUN ("groups", "--format", "json", "--local-all-to-all", "--zero-param-group-size", "4",
               "--expert-parallel", "4", "--tensor-parallel", "2", "--hierarchical", "--shard-size",
               "8", "--devices-per-node", "4", "--world-size", "32");
  ck_assert_int_eq (a.status, 0);
  ck_assert_int_eq (b.status, 0);
  ck_assert_str_eq (a.out, b.out);
  /* Family keys in the documented order. */
  static const char *keys[] = { "\"shard\"", "\"replicate\"", "\"shard_intra_node\"",
                                "\"shard_inter_node\"", "\"tensor\"", "\"data\"", "\"expert\"",
                                "\"expert_data\"", "\"zero_param\"", "\"local_all_to_all\": [" };
  const char *prev = strstr (a.out, "\"families\"");
  for (gsize i = 0; i < G_N_ELEMENTS (keys); i++)
    {
      const char *at = strstr (a.out, keys[i]);
      ck_assert_msg (at != NULL && at > prev, "family key %s out of the documented order", keys[i]);
      prev = at;
    }
  ck_assert (prev < strstr (a.out, "\"creation_order\""));
  run_clear (&a);
  run_clear (&b);
}
END_TEST

/* ---- hand-written expectations (reference document) ---------------------- */

START_TEST (test_worked_example_exact)
{
  /* deepspeed-semantics.md §1.2 worked example: W=16, D=4, S=8, hierarchical. */
  Run r = RUN ("groups", "--world-size", "16", "--devices-per-node", "4", "--shard-size", "8",
               "--hierarchical", "--format", "json");
  ck_assert_int_eq (r.status, 0);
  ck_assert_str_eq (r.err, "");
  const char *expect =
    "{\"world_size\": 16, \"families\": {"
    "\"shard\": [[0, 1, 2, 3, 4, 5, 6, 7], [8, 9, 10, 11, 12, 13, 14, 15]], "
    "\"replicate\": [[0, 8], [1, 9], [2, 10], [3, 11], [4, 12], [5, 13], [6, 14], [7, 15]], "
    "\"shard_intra_node\": [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]], "
    "\"shard_inter_node\": [[0, 4], [1, 5], [2, 6], [3, 7], [8, 12], [9, 13], [10, 14], [11, 15]]}, "
    "\"creation_order\": [[\"shard\", 0], [\"shard\", 1], "
    "[\"replicate\", 0], [\"replicate\", 1], [\"replicate\", 2], [\"replicate\", 3], "
    "[\"replicate\", 4], [\"replicate\", 5], [\"replicate\", 6], [\"replicate\", 7], "
    "[\"shard_intra_node\", 0], [\"shard_intra_node\", 1], [\"shard_intra_node\", 2], "
    "[\"shard_intra_node\", 3], "
    "[\"shard_inter_node\", 0], [\"shard_inter_node\", 1], [\"shard_inter_node\", 2], "
    "[\"shard_inter_node\", 3], [\"shard_inter_node\", 4], [\"shard_inter_node\", 5], "
    "[\"shard_inter_node\", 6], [\"shard_inter_node\", 7]]}\n";
  ck_assert_str_eq (r.out, expect);
  g_autoptr (JsonNode) root = parse_json (r.out);
  run_clear (&r);
}
END_TEST

START_TEST (test_replicate_singletons)
{
  /* §1.2: W=4, S=4 — replicate groups [[0],[1],[2],[3]], one communicator. */
  Run r = RUN ("groups", "--world-size", "4", "--shard-size", "4", "--format", "json");
  ck_assert_int_eq (r.status, 0);
  ck_assert_str_eq (r.out, "{\"world_size\": 4, \"families\": {\"shard\": [[0, 1, 2, 3]], "
                           "\"replicate\": [[0], [1], [2], [3]]}, "
                           "\"creation_order\": [[\"shard\", 0]]}\n");
  run_clear (&r);
}
END_TEST

START_TEST (test_local_all_to_all_merge)
{
  /* §2.4: W=16, D=4: local_0..3 then global_0..3, printed as one family. */
  Run r = RUN ("groups", "--world-size", "16", "--devices-per-node", "4", "--local-all-to-all",
               "--format", "json");
  ck_assert_int_eq (r.status, 0);
  ck_assert_str_eq (r.out,
                    "{\"world_size\": 16, \"families\": {\"local_all_to_all\": ["
                    "[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15], "
                    "[0, 4, 8, 12], [1, 5, 9, 13], [2, 6, 10, 14], [3, 7, 11, 15]]}, "
                    "\"creation_order\": [[\"local_all_to_all\", 0], [\"local_all_to_all\", 1], "
                    "[\"local_all_to_all\", 2], [\"local_all_to_all\", 3], [\"local_all_to_all\", 4], "
                    "[\"local_all_to_all\", 5], [\"local_all_to_all\", 6], [\"local_all_to_all\", 7]]}\n");
  run_clear (&r);
}
END_TEST

START_TEST (test_expert_unit_test_case)
{
  /* §2.1: W=16, tp=2, ep=4 (DeepSpeed's unit test), E+D and D+E. */
  static const char *const flags[2] = { NULL, "--data-before-expert" };
  static const guint32 ep[2][16] = { { 0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15 },
                                     { 0, 4, 8, 12, 2, 6, 10, 14, 1, 5, 9, 13, 3, 7, 11, 15 } };
  static const guint32 edp[2][16] = { { 0, 8, 2, 10, 4, 12, 6, 14, 1, 9, 3, 11, 5, 13, 7, 15 },
                                      { 0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15 } };
  for (int v = 0; v < 2; v++)
    {
      Run r = flags[v] ? RUN ("groups", "--world-size", "16", "--tensor-parallel", "2",
                              "--expert-parallel", "4", flags[v], "--format", "json")
                       : RUN ("groups", "--world-size", "16", "--tensor-parallel", "2",
                              "--expert-parallel", "4", "--format", "json");
      ck_assert_int_eq (r.status, 0);
      g_autoptr (JsonNode) root = parse_json (r.out);
      JsonObject *fam = json_object_get_object_member (json_node_get_object (root), "families");
      JsonArray *e = json_object_get_array_member (fam, "expert");
      JsonArray *d = json_object_get_array_member (fam, "expert_data");
      ck_assert_uint_eq (json_array_get_length (e), 4);
      ck_assert_uint_eq (json_array_get_length (d), 8);
      for (guint g = 0; g < 4; g++)
        check_group (json_array_get_array_element (e, g), &ep[v][4 * g], 4, "expert");
      for (guint g = 0; g < 8; g++)
        check_group (json_array_get_array_element (d, g), &edp[v][2 * g], 2, "expert_data");
      run_clear (&r);
    }
}
END_TEST

START_TEST (test_topology_equivalence)
{
  Run a = RUN ("groups", "--topology", "dgx-h100", "--nodes", "2", "--shard-size", "16",
               "--hierarchical", "--local-all-to-all", "--format", "json");
  Run b = RUN ("groups", "--world-size", "16", "--devices-per-node", "8", "--shard-size", "16",
               "--hierarchical", "--local-all-to-all", "--format", "json");
  ck_assert_msg (a.status == 0, "--topology dgx-h100: %s", a.err);
  ck_assert_int_eq (b.status, 0);
  ck_assert_str_eq (a.out, b.out);
  ck_assert (strstr (a.out, "{\"world_size\": 16,") == a.out);
  run_clear (&a);
  run_clear (&b);
  a = RUN ("groups", "--topology", "dgx-h100", "--nodes", "2", "--shard-size", "8", "--format", "text");
  b = RUN ("groups", "--world-size", "16", "--shard-size", "8", "--format", "text");
  ck_assert_int_eq (a.status, 0);
  ck_assert_str_eq (a.out, b.out);
  run_clear (&a);
  run_clear (&b);
}
END_TEST

START_TEST (test_warning_straddling_nodes)
{
  /* §1.2: S=20, D=8 → span 2, n_gpu_per_node 10: "intra-node" groups straddle nodes. */
  Run r = RUN ("groups", "--world-size", "40", "--devices-per-node", "8", "--shard-size", "20",
               "--hierarchical", "--format", "json");
  ck_assert_int_eq (r.status, 0);
  ck_assert_msg (g_str_has_prefix (r.err, "shardplan groups: warning: "), "stderr: %s", r.err);
  g_autoptr (JsonNode) root = parse_json (r.out);
  JsonObject *fam = json_object_get_object_member (json_node_get_object (root), "families");
  JsonArray *intra = json_object_get_array_member (fam, "shard_intra_node");
  ck_assert_uint_eq (json_array_get_length (intra), 4);
  static const guint32 first[10] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 };
  check_group (json_array_get_array_element (intra, 0), first, 10, "shard_intra_node[0]");
  run_clear (&r);
}
END_TEST

/* Which families stay on NVLink (issue 17): on 2 GB200 NVL72 racks (36
 * hosts of 4), MiCS S=72 shard groups are the racks, S=144 spans both;
 * hpZ=16's nine groups: eight inside a rack, ranks 64..79 straddle. */
START_TEST (test_text_fabric)
{
  /* each: the command, then the fabric line it must print */
  static const char *const cases[][12] = {
    { "--topology", "gb200-nvl72", "--nodes", "36", "--shard-size", "72", "--zero-param-group-size",
      "16", NULL, "fabric: NVLink domains of 72 GPUs (18 nodes; domain = rank / 72)\n" },
    { "--topology", "gb200-nvl72", "--nodes", "36", "--shard-size", "72", NULL,
      "  shard            0 of 2 groups inside one node, 2 inside one NVLink domain: NVLink only\n" },
    { "--topology", "gb200-nvl72", "--nodes", "36", "--shard-size", "72", NULL,
      "  replicate        0 of 72 groups inside one node, 0 inside one NVLink domain: every group "
      "crosses the network\n" },
    { "--topology", "gb200-nvl72", "--nodes", "36", "--zero-param-group-size", "16", NULL,
      "  zero_param       0 of 9 groups inside one node, 8 inside one NVLink domain: some groups "
      "cross the network\n" },
    { "--topology", "gb200-nvl72", "--nodes", "36", "--shard-size", "144", NULL,
      "  shard            0 of 1 groups inside one node, 0 inside one NVLink domain: every group "
      "crosses the network\n" },
    /* without a topology: --nvlink-domain, whole nodes only */
    { "--world-size", "16", "--devices-per-node", "4", "--shard-size", "8", "--nvlink-domain", "8",
      NULL, "  shard            0 of 2 groups inside one node, 2 inside one NVLink domain: NVLink only\n" },
    /* CPU ranks over shared memory: the node's link is named as it is */
    { "--topology", "cpu-shm", "--shard-size", "2", NULL,
      "fabric: shared memory inside each node only (domain = node)\n" },
    { "--topology", "cpu-shm", "--shard-size", "2", NULL,
      "  shard            2 of 2 groups inside one node: shared memory only\n" },
  };
  for (gsize c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      const char *argv[16] = { "groups" };
      gsize k = 0;
      while (cases[c][k] != NULL)
        {
          argv[k + 1] = cases[c][k];
          k++;
        }
      const char *want = cases[c][k + 1];
      Run r = run_argv (argv);
      ck_assert_int_eq (r.status, 0);
      ck_assert_msg (strstr (r.out, want), "case %zu: no '%s' in:\n%s", c, want, r.out);
      run_clear (&r);
    }
  Run r = RUN ("groups", "--world-size", "16", "--devices-per-node", "4", "--shard-size", "8",
               "--nvlink-domain", "6");
  ck_assert_int_eq (r.status, 2);
  ck_assert_msg (strstr (r.err, "--nvlink-domain 6 is not a multiple of the 4 GPUs per node"), "%s",
                 r.err);
  run_clear (&r);
}
END_TEST

START_TEST (test_text_format)
{
  Run r = RUN ("groups", "--world-size", "16", "--devices-per-node", "4", "--shard-size", "8",
               "--hierarchical", "--local-all-to-all");
  ck_assert_int_eq (r.status, 0);
  g_auto (GStrv) lines = g_strsplit (r.out, "\n", -1);
  gboolean saw_shard1 = FALSE, saw_global = FALSE, saw_order = FALSE;
  for (gsize i = 0; lines[i]; i++)
    {
      /* "shard  1  -  8  8(n2) 9(n2) … 15(n3)" */
      if (g_str_has_prefix (lines[i], "shard ") && strstr (lines[i], " 8(n2) 9(n2) 10(n2) 11(n2) "
                                                                    "12(n3) 13(n3) 14(n3) 15(n3)"))
        saw_shard1 = TRUE;
      if (g_str_has_prefix (lines[i], "local_all_to_all") && strstr (lines[i], "global_3")
          && strstr (lines[i], " 3(n0) 7(n1) 11(n2) 15(n3)"))
        saw_global = TRUE;
      if (g_str_has_prefix (lines[i], "communicators created, in order (30): shard 0-1, replicate 0-7, "
                                      "shard_intra_node 0-3, shard_inter_node 0-7, local_all_to_all 0-7"))
        saw_order = TRUE;
    }
  ck_assert_msg (saw_shard1 && saw_global && saw_order, "text output:\n%s", r.out);
  run_clear (&r);

  /* A 64-rank group wraps: no line past 100 columns. */
  r = RUN ("groups", "--world-size", "64", "--shard-size", "64", "--format", "text");
  ck_assert_int_eq (r.status, 0);
  g_auto (GStrv) wrapped = g_strsplit (r.out, "\n", -1);
  for (gsize i = 0; wrapped[i]; i++)
    ck_assert_msg (strlen (wrapped[i]) <= 100, "line %zu is %zu columns: %s", i, strlen (wrapped[i]),
                   wrapped[i]);
  ck_assert (strstr (r.out, "63(n7)") != NULL);
  run_clear (&r);
}
END_TEST

/* ---- info ----------------------------------------------------------------- */

START_TEST (test_info_json)
{
  Run r = RUN ("info", "--format", "json");
  ck_assert_int_eq (r.status, 0);
  g_autoptr (JsonNode) root = parse_json (r.out);
  JsonObject *o = json_node_get_object (root);
  ck_assert_str_eq (json_object_get_string_member (o, "version"), sp_version ());
  ck_assert_str_eq (json_object_get_string_member (o, "build_config"), sp_build_config ());
  JsonObject *libs = json_object_get_object_member (o, "libraries");
  ck_assert (json_object_has_member (libs, "glib") && json_object_has_member (libs, "json_glib")
             && json_object_has_member (libs, "hdf5"));
  JsonArray *kernels = json_object_get_array_member (o, "kernels");
  ck_assert_str_eq (json_array_get_string_element (kernels, 0), "cpu");
#ifdef HAVE_CUDA
  ck_assert_uint_eq (json_array_get_length (kernels), 2);
#else
  ck_assert_uint_eq (json_array_get_length (kernels), 1);
#endif
  JsonArray *backends = json_object_get_array_member (o, "backends");
  guint n_backends = 0;
#ifdef HAVE_MPI
  ck_assert_str_eq (json_array_get_string_element (backends, n_backends++), "mpi");
#if defined(HAVE_NCCL)
  ck_assert_str_eq (json_array_get_string_element (backends, n_backends++), "nccl");
#endif
#endif
  ck_assert_uint_eq (json_array_get_length (backends), n_backends);
  JsonArray *presets = json_object_get_array_member (o, "presets");
  const char *const *names = sp_topo_preset_names ();
  guint n = 0;
  for (; names[n]; n++)
    {
      JsonObject *p = json_array_get_object_element (presets, n);
      ck_assert_str_eq (json_object_get_string_member (p, "name"), names[n]);
      ck_assert_str_eq (json_object_get_string_member (p, "description"),
                        sp_topo_preset_description (names[n]));
    }
  ck_assert_uint_eq (json_array_get_length (presets), n);
  ck_assert_uint_ge (n, 5); /* issue 2: dgx-a100, dgx-h100, p4d, p5, p3dn at least */
  run_clear (&r);
}
END_TEST

START_TEST (test_info_text)
{
  Run r = RUN ("info");
  ck_assert_int_eq (r.status, 0);
  g_autofree char *first = g_strdup_printf ("shardplan %s\n", sp_version ());
  ck_assert (g_str_has_prefix (r.out, first));
  ck_assert (strstr (r.out, sp_build_config ()) != NULL);
  for (const char *const *p = sp_topo_preset_names (); *p; p++)
    ck_assert_msg (strstr (r.out, *p) != NULL, "preset %s missing from info", *p);
  run_clear (&r);
}
END_TEST

static Suite *
cli_groups_suite (void)
{
  Suite *s = suite_create ("cli_groups");
  TCase *grid = tcase_create ("grid");
  tcase_set_timeout (grid, 600);
  tcase_add_test (grid, test_grid_mics);
  tcase_add_test (grid, test_grid_expert_tensor);
  tcase_add_test (grid, test_grid_zero_param_and_a2a);
  tcase_add_test (grid, test_all_families_any_order);
  suite_add_tcase (s, grid);
  TCase *ref = tcase_create ("reference");
  tcase_add_test (ref, test_worked_example_exact);
  tcase_add_test (ref, test_replicate_singletons);
  tcase_add_test (ref, test_local_all_to_all_merge);
  tcase_add_test (ref, test_expert_unit_test_case);
  tcase_add_test (ref, test_topology_equivalence);
  tcase_add_test (ref, test_warning_straddling_nodes);
  tcase_add_test (ref, test_text_format);
  tcase_add_test (ref, test_text_fabric);
  suite_add_tcase (s, ref);
  TCase *info = tcase_create ("info");
  tcase_add_test (info, test_info_json);
  tcase_add_test (info, test_info_text);
  suite_add_tcase (s, info);
  return s;
}

int
main (void)
{
  return sp_test_run (cli_groups_suite ());
}
