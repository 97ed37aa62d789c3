/* tests/fuzz/fuzz-trace.c — the HDF5 trace reader (sp_trace_open): HDF5
 * reads files, so each input is written to a temporary file first; an
 * accepted trace has its metadata walked and up to 4096 rows read, and is
 * read as `calibrate` reads it (sp_calib_data_add_trace_on on a topology
 * of its world size, at most 4096 ranks: its points, its NCCL variables
 * and what the model makes of them on 8-GPU H100 nodes).
 *
 * Every object the reader opens in the file must be closed again, whether
 * the file was accepted or not: the open files, datasets, groups, named
 * datatypes and attributes are counted (H5Fget_obj_count) before and after
 * each input, and one more is a finding (abort).  LeakSanitizer cannot see
 * an id left open (libhdf5's id table still reaches it); transient
 * datatypes and dataspaces are not counted (libhdf5 1.10 has no public
 * count of them: H5Inmembers refuses its own id types). */
#include "config.h"
#include "fuzz-common.h"
#include "shardplan/shardplan.h"
#include "shardplan/trace.h"
#include "shardplan/calibrate.h"
#include "shardplan/sim.h"

#include <hdf5.h>

static const unsigned id_types[] = { H5F_OBJ_FILE, H5F_OBJ_DATASET, H5F_OBJ_GROUP,
                                     H5F_OBJ_DATATYPE, H5F_OBJ_ATTR };

static void
count_ids (ssize_t *out_counts)
{
  for (gsize i = 0; i < G_N_ELEMENTS (id_types); i++)
    out_counts[i] = H5Fget_obj_count ((hid_t) H5F_OBJ_ALL, id_types[i]);
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

/* What calibrate does with an accepted trace before it fits: its points
 * and NCCL variables (sp_calib_fit_unread_env's work). */
static void
calibrate_reads (SpTrace *t)
{
  guint32 world = sp_trace_header (t)->world_size;
  if (world == 0 || world > 4096)
    return;
  static SpTopo *h100 = NULL;
  if (h100 == NULL)
    h100 = sp_topo_open ("dgx-h100", 1, NULL);
  g_assert (h100 != NULL);
  GError *e = NULL;
  SpCalibData *d = sp_calib_data_new ();
  guint32 gpn = world < 8 ? world : 8;
  if (!sp_calib_data_add_trace_on (d, t, "fuzz.h5", (world + gpn - 1) / gpn, gpn, &e))
    g_clear_error (&e);
  else
    for (guint32 s = 0; s < sp_calib_data_n_sources (d); s++)
      {
        const char *const *names, *const *values;
        guint n = sp_calib_data_source_nccl_vars (d, s, &names, &values);
        int version = sp_topo_nccl_version_code (sp_calib_data_source_nccl_version (d, s, NULL));
        g_assert (n == 0 || (names[n] == NULL && values[n] == NULL));
        for (int across = 0; across < 2; across++)
          g_free (sp_sim_nccl_env_unread_text (sp_topo_spec (h100), version, across, names,
                                               values, n));
      }
  sp_calib_data_free (d);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  const char *path = fuzz_write_tmp (data, size, ".h5");
  ssize_t before[G_N_ELEMENTS (id_types)], after[G_N_ELEMENTS (id_types)];
  count_ids (before);
  GError *e = NULL;
  SpTrace *t = sp_trace_open (path, &e);
  gboolean accepted = t != NULL;
  if (!t)
    {
      fuzz_refused (e);
    }
  else
    {
      walk (t);
      calibrate_reads (t);
      sp_trace_free (t);
    }
  count_ids (after);
  for (gsize i = 0; i < G_N_ELEMENTS (id_types); i++)
    if (after[i] > before[i])
      {
        fprintf (stderr, "fuzz-trace: %" G_GINT64_FORMAT " HDF5 object(s) of kind 0x%x left "
                 "open by the reader (%s)\n", (gint64) (after[i] - before[i]), id_types[i],
                 accepted ? "trace accepted" : "trace refused");
        abort ();
      }
  return 0;
}
