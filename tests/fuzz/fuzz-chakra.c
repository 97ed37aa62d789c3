/* tests/fuzz/fuzz-chakra.c — the Chakra ET reader of `shardplan chakra
 * import` (sp_chakra_import, tools/chakra/import.c; built only with
 * protobuf-c).  The reader takes a prefix and reads "<prefix>.<r>.et" for
 * r = 0, 1, … and "<prefix>.groups.json", so the input is cut into those
 * files, written to a temporary directory for each input:
 *
 *   [%%topo%%] RANK0 [%%rank%% RANK1 …] [%%groups%% GROUPS-JSON]
 *
 * at most 16 rank files; with the leading %%topo%% the import gets a
 * topology (the dgx-h100 preset, one node: 8 ranks), which turns compute
 * nodes' durations into FLOPs.  The seeds are the fixtures of
 * tests/fixtures/chakra joined this way (tests/fuzz/fuzz-smoke.sh).  An
 * accepted trace's plan must write JSON that reads back to an equal plan. */
#include "config.h"
#include "fuzz-common.h"
#include "shardplan/shardplan.h"
#include "chakra/chakra.h"

#define MAX_RANKS 16
#define MARK_TOPO "%%topo%%"
#define MARK_RANK "%%rank%%"
#define MARK_GROUPS "%%groups%%"

static char *dir;
static char *prefix;
static SpTopo *topo;

static char *
rank_path (guint r)
{
  return g_strdup_printf ("%s.%u.et", prefix, r);
}

static char *
groups_path (void)
{
  return g_strdup_printf ("%s.groups.json", prefix);
}

static void
remove_files (void)
{
  for (guint r = 0; r <= MAX_RANKS; r++)
    {
      g_autofree char *p = rank_path (r);
      g_unlink (p);
    }
  g_autofree char *g = groups_path ();
  g_unlink (g);
  g_rmdir (dir);
}

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  (void) argc;
  (void) argv;
  fuzz_init_log ();
  if (!g_getenv ("TMPDIR") && g_file_test ("/dev/shm", G_FILE_TEST_IS_DIR)
      && access ("/dev/shm", W_OK) == 0)
    g_setenv ("TMPDIR", "/dev/shm", TRUE);
  GError *e = NULL;
  dir = g_dir_make_tmp ("sp-fuzz-chakra-XXXXXX", &e);
  topo = sp_topo_new_preset ("dgx-h100", 1, NULL);
  if (!dir || !topo)
    {
      fprintf (stderr, "fuzz-chakra: cannot set up: %s\n", e ? e->message : "no dgx-h100 preset");
      exit (1);
    }
  prefix = g_build_filename (dir, "t", NULL);
  atexit (remove_files);
  return 0;
}

static void
put (const char *path, const uint8_t *data, size_t len)
{
  GError *e = NULL;
  if (!g_file_set_contents (path, (const char *) data, (gssize) len, &e))
    {
      fprintf (stderr, "fuzz-chakra: %s\n", e->message);
      exit (1);
    }
}

/* The first `mark` in data[0, len), or NULL. */
static const uint8_t *
find (const uint8_t *data, size_t len, const char *mark)
{
  size_t m = strlen (mark);
  for (size_t i = 0; i + m <= len; i++)
    if (data[i] == (uint8_t) mark[0] && memcmp (data + i, mark, m) == 0)
      return data + i;
  return NULL;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  gboolean with_topo = size >= strlen (MARK_TOPO) && memcmp (data, MARK_TOPO, strlen (MARK_TOPO)) == 0;
  if (with_topo)
    {
      data += strlen (MARK_TOPO);
      size -= strlen (MARK_TOPO);
    }
  const uint8_t *groups = find (data, size, MARK_GROUPS);
  size_t ranks_len = groups ? (size_t) (groups - data) : size;
  g_autofree char *gp = groups_path ();
  if (groups)
    {
      groups += strlen (MARK_GROUPS);
      put (gp, groups, size - (size_t) (groups - data));
    }
  else
    g_unlink (gp);
  /* the rank files, and none left over from the input before */
  guint r = 0;
  for (size_t at = 0; r < MAX_RANKS;)
    {
      const uint8_t *next = find (data + at, ranks_len - at, MARK_RANK);
      size_t len = next ? (size_t) (next - data) - at : ranks_len - at;
      g_autofree char *p = rank_path (r++);
      put (p, data + at, len);
      if (!next)
        break;
      at += len + strlen (MARK_RANK);
    }
  for (; r <= MAX_RANKS; r++)
    {
      g_autofree char *p = rank_path (r);
      g_unlink (p);
    }

  GError *e = NULL;
  SpChakraImportStats st;
  SpPlan *plan = sp_chakra_import (prefix, NULL, with_topo ? topo : NULL, &st, &e);
  if (!plan)
    {
      fuzz_refused (e);
      return 0;
    }
  g_assert (e == NULL);
  g_autofree char *json = sp_plan_to_json (plan);
  SpPlan *back = sp_plan_from_json (json, -1, 0, &e);
  if (!back)
    {
      fprintf (stderr, "fuzz-chakra: the imported plan does not read back: %s\n", e->message);
      abort ();
    }
  g_assert (sp_plan_equal (plan, back));
  sp_plan_free (back);
  sp_plan_free (plan);
  return 0;
}
