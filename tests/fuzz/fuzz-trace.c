/* tests/fuzz/fuzz-trace.c — the HDF5 trace reader (sp_trace_open): HDF5
 * reads files, so each input is written to a temporary file first; an
 * accepted trace has its metadata walked and up to 4096 rows read. */
#include "config.h"
#include "fuzz-common.h"
#include "shardplan/shardplan.h"
#include "shardplan/trace.h"

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  fuzz_init_log ();
  /* no lock files next to the temporary file, no locking calls */
  g_setenv ("HDF5_USE_FILE_LOCKING", "FALSE", TRUE);
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  const char *path = fuzz_write_tmp (data, size, ".h5");
  GError *e = NULL;
  SpTrace *t = sp_trace_open (path, &e);
  if (!t)
    {
      g_assert (e != NULL && e->message[0] != '\0');
      g_error_free (e);
      return 0;
    }
  gsize n = 0;
  (void) sp_trace_header (t);
  (void) sp_trace_software_keys (t);
  (void) sp_trace_env (t, &n);
  (void) sp_trace_nodes (t, &n);
  (void) sp_trace_ranks (t, &n);
  (void) sp_trace_plan_text (t);
  (void) sp_trace_topology_text (t);
  for (guint32 i = 0; i < sp_trace_n_families (t); i++)
    {
      guint32 id;
      const char *name;
      sp_trace_family (t, i, &id, &name);
    }
  for (guint32 g = 0; g < sp_trace_n_groups (t); g++)
    {
      guint32 fam, idx, members;
      g_assert (sp_trace_group_info (t, g, &fam, &idx));
      g_assert (sp_trace_group_members (t, g, &members) != NULL);
    }
  guint64 rows = MIN (sp_trace_n_rows (t), 4096);
  SpTraceRow buf[256];
  for (guint64 at = 0; at < rows; at += G_N_ELEMENTS (buf))
    if (!sp_trace_read_rows (t, at, MIN (rows - at, G_N_ELEMENTS (buf)), buf, &e))
      {
        g_clear_error (&e);
        break;
      }
  sp_trace_free (t);
  return 0;
}
