/* tests/fuzz/fuzz-trace.c — the HDF5 trace reader (sp_trace_open): HDF5
 * reads files, so each input is written to a temporary file first; an
 * accepted trace has its metadata walked and up to 4096 rows read.
 *
 * Every HDF5 id the reader opens must be closed again, whether the file was
 * accepted or not: the ids of each kind are counted before and after each
 * input, and one more is a finding (abort).  This, not LeakSanitizer, is
 * what guards the reader's own H5*close calls: tests/fuzz/lsan.supp has to
 * hide libhdf5's own losses on corrupt files, and a frame such as
 * H5T_copy_reopen would hide a missing H5Tclose of ours as well. */
#include "config.h"
#include "fuzz-common.h"
#include "shardplan/shardplan.h"
#include "shardplan/trace.h"

#include <hdf5.h>

static const H5I_type_t id_types[] = { H5I_FILE, H5I_GROUP, H5I_DATATYPE, H5I_DATASPACE,
                                       H5I_DATASET, H5I_ATTR, H5I_GENPROP_LST };

static void
count_ids (hsize_t *out_counts)
{
  for (gsize i = 0; i < G_N_ELEMENTS (id_types); i++)
    {
      out_counts[i] = 0;
      if (H5Inmembers (id_types[i], &out_counts[i]) < 0)
        out_counts[i] = 0; /* no id of that kind yet */
    }
}

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  fuzz_init_log ();
  /* no lock files next to the temporary file, no locking calls */
  g_setenv ("HDF5_USE_FILE_LOCKING", "FALSE", TRUE);
  return 0;
}

/* What a command does with an accepted trace: metadata, then rows. */
static void
walk (SpTrace *t)
{
  GError *e = NULL;
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
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  const char *path = fuzz_write_tmp (data, size, ".h5");
  hsize_t before[G_N_ELEMENTS (id_types)], after[G_N_ELEMENTS (id_types)];
  count_ids (before);
  GError *e = NULL;
  SpTrace *t = sp_trace_open (path, &e);
  gboolean accepted = t != NULL;
  if (!t)
    {
      g_assert (e != NULL && e->message[0] != '\0');
      g_error_free (e);
    }
  else
    {
      walk (t);
      sp_trace_free (t);
    }
  count_ids (after);
  for (gsize i = 0; i < G_N_ELEMENTS (id_types); i++)
    if (after[i] > before[i])
      {
        fprintf (stderr, "fuzz-trace: %" G_GUINT64_FORMAT " HDF5 id(s) of type %d left open "
                 "by the reader (%s)\n", (guint64) (after[i] - before[i]), (int) id_types[i],
                 accepted ? "trace accepted" : "trace refused");
        abort ();
      }
  return 0;
}
