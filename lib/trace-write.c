/* The trace writer: a temporary HDF5 file next to the target, rows buffered
 * and appended a chunk at a time, renamed to its name only when whole. */
#include "config.h"
#include "trace-private.h"
#include "shardplan/file.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

/* Rows per HDF5 chunk and per in-memory buffer: 8192 rows × 108 B packed ≈
 * 0.9 MB, just under HDF5's default 1 MiB chunk cache, and large enough
 * that deflate sees repetitive columns. */
#define SP_TRACE_CHUNK_ROWS 8192
/* zlib level: 4 is most of level 9's ratio on trace columns at a fraction
 * of the time. */
#define SP_TRACE_DEFLATE_LEVEL 4

struct _SpTraceWriter {
  char *path;
  char *tmp_path;
  hid_t file;
  hid_t ops;             /* /ops/ops */
  hid_t row_mem_type;    /* what the buffer holds: the packed file type, or SpTraceRow */
  gboolean packed;       /* rows packed by sp_trace_pack (little-endian hosts) */
  gsize row_size;        /* bytes per buffered row */
  guint8 *buf;           /* SP_TRACE_CHUNK_ROWS rows */
  gsize n_buf;
  guint64 n_rows;
  GPtrArray *env;        /* key, value, key, value … (owned strings) */
  gboolean have_cluster, have_groups, have_plan, have_topology;
  char *partial_reason;  /* non-NULL: finish writes complete = 0 */
  gboolean done;         /* finished or aborted */
};

/* Property lists without modification times, so identical inputs give
 * identical bytes (the simulator's traces can be checked in). */
static hid_t
plist_no_times (hid_t cls)
{
  hid_t p = H5Pcreate (cls);
  H5Pset_obj_track_times (p, 0);
  return p;
}

static gboolean
make_group (hid_t file, const char *name, GError **error)
{
  hid_t gcpl = plist_no_times (H5P_GROUP_CREATE);
  hid_t g = H5Gcreate2 (file, name, H5P_DEFAULT, gcpl, H5P_DEFAULT);
  H5Pclose (gcpl);
  if (g < 0)
    {
      sp_trace_h5_error (error, SP_ERROR_IO, "cannot create group %s", name);
      return FALSE;
    }
  H5Gclose (g);
  return TRUE;
}

/* A scalar attribute of file type `ftype` from a value of memory type `mtype`. */
static gboolean
write_attr (hid_t loc, const char *name, hid_t ftype, hid_t mtype, const void *value,
            GError **error)
{
  if (H5Aexists (loc, name) > 0)
    H5Adelete (loc, name);
  hid_t space = H5Screate (H5S_SCALAR);
  hid_t a = H5Acreate2 (loc, name, ftype, space, H5P_DEFAULT, H5P_DEFAULT);
  herr_t rc = a < 0 ? -1 : H5Awrite (a, mtype, value);
  if (a >= 0)
    H5Aclose (a);
  H5Sclose (space);
  if (rc < 0)
    {
      sp_trace_h5_error (error, SP_ERROR_IO, "cannot write attribute %s", name);
      return FALSE;
    }
  return TRUE;
}

static gboolean
write_str_attr (hid_t loc, const char *name, const char *value, GError **error)
{
  hid_t t = sp_trace_h5_string_type ();
  const char *v = value ? value : "";
  gboolean ok = write_attr (loc, name, t, t, &v, error);
  H5Tclose (t);
  return ok;
}

static gboolean
write_u32_attr (hid_t loc, const char *name, guint32 value, GError **error)
{
  return write_attr (loc, name, H5T_STD_U32LE, H5T_NATIVE_UINT32, &value, error);
}

static gboolean
write_u8_attr (hid_t loc, const char *name, guint8 value, GError **error)
{
  return write_attr (loc, name, H5T_STD_U8LE, H5T_NATIVE_UINT8, &value, error);
}

/* A plain 1-D dataset of `n` records of `table` at table->path. */
static gboolean
write_table (hid_t file, const SpTraceTable *table, const void *records, gsize n,
             GError **error)
{
  hid_t ftype = sp_trace_h5_table_type (table, TRUE, NULL);
  hid_t mtype = sp_trace_h5_table_type (table, FALSE, NULL);
  hsize_t dims[1] = { n };
  hid_t space = H5Screate_simple (1, dims, NULL);
  hid_t dcpl = plist_no_times (H5P_DATASET_CREATE);
  hid_t d = H5Dcreate2 (file, table->path, ftype, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  herr_t rc = d < 0 ? -1 : n == 0 ? 0 : H5Dwrite (d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, records);
  if (d >= 0)
    H5Dclose (d);
  H5Pclose (dcpl);
  H5Sclose (space);
  H5Tclose (mtype);
  H5Tclose (ftype);
  if (rc < 0)
    {
      sp_trace_h5_error (error, SP_ERROR_IO, "cannot write %s", table->path);
      return FALSE;
    }
  return TRUE;
}

/* A scalar string dataset with a digest attribute (/meta/plan, /meta/topology). */
static gboolean
write_text (hid_t file, const char *name, const char *text, const char *digest, GError **error)
{
  hid_t t = sp_trace_h5_string_type ();
  hid_t space = H5Screate (H5S_SCALAR);
  hid_t dcpl = plist_no_times (H5P_DATASET_CREATE);
  hid_t d = H5Dcreate2 (file, name, t, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  herr_t rc = d < 0 ? -1 : H5Dwrite (d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, &text);
  gboolean ok = rc >= 0;
  if (!ok)
    sp_trace_h5_error (error, SP_ERROR_IO, "cannot write %s", name);
  else
    ok = write_str_attr (d, "digest", digest, error);
  if (d >= 0)
    H5Dclose (d);
  H5Pclose (dcpl);
  H5Sclose (space);
  H5Tclose (t);
  return ok;
}

static gboolean
check_header (const SpTraceHeader *h, GError **error)
{
  const char *bad = NULL;
  if (h->producer == NULL || *h->producer == '\0')
    bad = "producer";
  else if (h->producer_version == NULL || *h->producer_version == '\0')
    bad = "producer_version";
  else if (h->clock == NULL || *h->clock == '\0')
    bad = "clock";
  else if (h->timing_mode == NULL || *h->timing_mode == '\0')
    bad = "timing_mode";
  else if (h->check_policy != NULL && *h->check_policy == '\0')
    bad = "check_policy (NULL when not recorded)";
  if (bad)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "trace header: %s is empty; a non-empty string is required", bad);
      return FALSE;
    }
  if (sp_trace_source_name (h->source) == NULL)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "trace header: source %d is neither measured (0) nor simulated (1)",
                   (int) h->source);
      return FALSE;
    }
  if (h->iters == 0 || h->world_size == 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "trace header: %s is 0; at least 1 is required",
                   h->iters == 0 ? "iters" : "world_size");
      return FALSE;
    }
  return TRUE;
}

static gboolean
write_root (SpTraceWriter *w, const SpTraceHeader *h, GError **error)
{
  g_autofree char *run_id = h->run_id ? g_strdup (h->run_id) : g_uuid_string_random ();
  g_autofree char *created = NULL;
  if (h->created_utc)
    created = g_strdup (h->created_utc);
  else
    {
      g_autoptr (GDateTime) now = g_date_time_new_now_utc ();
      created = g_date_time_format (now, "%Y-%m-%dT%H:%M:%SZ");
    }
  g_autofree char *version =
      g_strdup_printf ("%d.%d", SP_TRACE_SCHEMA_MAJOR, SP_TRACE_SCHEMA_MINOR);
  hid_t root = w->file;
  gboolean ok = write_str_attr (root, "schema", SP_TRACE_SCHEMA_NAME, error)
                && write_str_attr (root, "schema_version", version, error)
                && write_str_attr (root, "run_id", run_id, error)
                && write_str_attr (root, "created_utc", created, error)
                && write_str_attr (root, "source", sp_trace_source_name (h->source), error)
                && write_str_attr (root, "producer", h->producer, error)
                && write_str_attr (root, "producer_version", h->producer_version, error)
                && write_str_attr (root, "time_unit", "ns", error)
                && write_str_attr (root, "clock", h->clock, error)
                && write_str_attr (root, "timing_mode", h->timing_mode, error)
                && write_u32_attr (root, "warmup_iters", h->warmup_iters, error)
                && write_u32_attr (root, "iters", h->iters, error)
                && write_u32_attr (root, "world_size", h->world_size, error)
                && write_u8_attr (root, "complete", 0, error); /* 1 once finished */
  if (ok && h->check_policy)
    ok = write_str_attr (root, "check_policy", h->check_policy, error);
  return ok;
}

static gboolean
create_ops (SpTraceWriter *w, GError **error)
{
  hid_t ftype = sp_trace_h5_table_type (&sp_trace_table_rows, TRUE, NULL);
  hsize_t dims[1] = { 0 }, maxdims[1] = { H5S_UNLIMITED }, chunk[1] = { SP_TRACE_CHUNK_ROWS };
  hid_t space = H5Screate_simple (1, dims, maxdims);
  hid_t dcpl = plist_no_times (H5P_DATASET_CREATE);
  H5Pset_chunk (dcpl, 1, chunk);
  unsigned int info = 0;
  if (H5Zfilter_avail (H5Z_FILTER_DEFLATE) > 0
      && H5Zget_filter_info (H5Z_FILTER_DEFLATE, &info) >= 0
      && (info & H5Z_FILTER_CONFIG_ENCODE_ENABLED))
    {
      H5Pset_shuffle (dcpl);
      H5Pset_deflate (dcpl, SP_TRACE_DEFLATE_LEVEL);
    }
  w->ops = H5Dcreate2 (w->file, sp_trace_table_rows.path, ftype, space, H5P_DEFAULT, dcpl,
                       H5P_DEFAULT);
  H5Pclose (dcpl);
  H5Sclose (space);
  H5Tclose (ftype);
  if (w->ops < 0)
    {
      sp_trace_h5_error (error, SP_ERROR_IO, "%s: cannot create /ops/ops", w->tmp_path);
      return FALSE;
    }
  /* Packed rows are the file type byte for byte: HDF5 then copies them
   * instead of converting 21 members per row (3-4x faster appends). */
  w->packed = sp_trace_can_pack (&sp_trace_table_rows);
  w->row_mem_type = sp_trace_h5_table_type (&sp_trace_table_rows, w->packed, NULL);
  w->row_size = w->packed ? sp_trace_packed_size (&sp_trace_table_rows) : sizeof (SpTraceRow);
  w->buf = g_malloc0 (SP_TRACE_CHUNK_ROWS * w->row_size);
  return TRUE;
}

SpTraceWriter *
sp_trace_writer_new (const char *path, const SpTraceHeader *header, GError **error)
{
  g_return_val_if_fail (path != NULL && header != NULL, NULL);
  sp_trace_h5_init ();
  if (!check_header (header, error))
    return NULL;

  /* shardplan/file.h: a registered temporary file with the usual mode;
   * HDF5 reopens it by name (H5F_ACC_TRUNC keeps the mode). */
  g_autofree char *tmp = NULL;
  int fd = sp_file_temp_open (path, &tmp, error);
  if (fd < 0)
    return NULL;
  close (fd);

  SpTraceWriter *w = g_new0 (SpTraceWriter, 1);
  w->path = g_strdup (path);
  w->tmp_path = g_steal_pointer (&tmp);
  w->ops = H5I_INVALID_HID;
  w->row_mem_type = H5I_INVALID_HID;
  w->env = g_ptr_array_new_with_free_func (g_free);

  hid_t fcpl = plist_no_times (H5P_FILE_CREATE);
  w->file = H5Fcreate (w->tmp_path, H5F_ACC_TRUNC, fcpl, H5P_DEFAULT);
  H5Pclose (fcpl);
  if (w->file < 0)
    {
      sp_trace_h5_error (error, SP_ERROR_IO, "%s: cannot create HDF5 file", w->tmp_path);
      sp_trace_writer_free (w);
      return NULL;
    }
  unsigned maj = 0, min = 0, rel = 0;
  H5get_libversion (&maj, &min, &rel);
  g_autofree char *h5ver = g_strdup_printf ("%u.%u.%u", maj, min, rel);
  if (!write_root (w, header, error) || !make_group (w->file, "/meta", error)
      || !make_group (w->file, "/meta/software", error)
      || !make_group (w->file, "/meta/cluster", error) || !make_group (w->file, "/groups", error)
      || !make_group (w->file, "/ops", error) || !create_ops (w, error)
      || !sp_trace_writer_set_software (w, "hdf5", h5ver, error))
    {
      sp_trace_writer_free (w);
      return NULL;
    }
  return w;
}

const char *
sp_trace_writer_temp_path (const SpTraceWriter *writer)
{
  return writer->tmp_path;
}

gboolean
sp_trace_writer_set_software (SpTraceWriter *writer, const char *key, const char *value,
                              GError **error)
{
  g_return_val_if_fail (!writer->done && key != NULL, FALSE);
  if (*key == '\0')
    {
      /* data, not a programming error: a spill file's software record can
       * hold an empty key (HDF5 has no attribute without a name) */
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "a software entry has an empty name (value '%s')", value ? value : "");
      return FALSE;
    }
  hid_t g = H5Gopen2 (writer->file, "/meta/software", H5P_DEFAULT);
  if (g < 0)
    {
      sp_trace_h5_error (error, SP_ERROR_IO, "cannot open /meta/software");
      return FALSE;
    }
  gboolean ok = write_str_attr (g, key, value, error);
  H5Gclose (g);
  return ok;
}

void
sp_trace_writer_add_env (SpTraceWriter *writer, const char *key, const char *value)
{
  g_return_if_fail (!writer->done && key != NULL);
  g_ptr_array_add (writer->env, g_strdup (key));
  g_ptr_array_add (writer->env, g_strdup (value ? value : ""));
}

gboolean
sp_trace_writer_set_cluster (SpTraceWriter *writer, const SpTraceNode *nodes, gsize n_nodes,
                             const SpTraceRank *ranks, gsize n_ranks, GError **error)
{
  g_return_val_if_fail (!writer->done && !writer->have_cluster, FALSE);
  /* HDF5 cannot write a NULL variable-length string: use "". */
  g_autofree SpTraceNode *copy = g_memdup2 (nodes, n_nodes * sizeof *nodes);
  for (gsize i = 0; i < n_nodes; i++)
    {
      copy[i].hostname = copy[i].hostname ? copy[i].hostname : "";
      copy[i].gpu_model = copy[i].gpu_model ? copy[i].gpu_model : "";
    }
  if (!write_table (writer->file, &sp_trace_table_nodes, copy, n_nodes, error)
      || !write_table (writer->file, &sp_trace_table_ranks, ranks, n_ranks, error))
    return FALSE;
  writer->have_cluster = TRUE;
  return TRUE;
}

gboolean
sp_trace_writer_set_topology (SpTraceWriter *writer, const SpTopo *topo, const char *text,
                              GError **error)
{
  g_return_val_if_fail (!writer->done && !writer->have_topology, FALSE);
  g_return_val_if_fail (topo != NULL || text != NULL, FALSE);
  g_autofree char *ini = text ? NULL : sp_topo_to_ini (topo);
  const char *t = text ? text : ini;
  g_autofree char *digest = g_compute_checksum_for_string (G_CHECKSUM_SHA256, t, -1);
  if (!write_text (writer->file, "/meta/topology", t, digest, error))
    return FALSE;
  writer->have_topology = TRUE;
  return TRUE;
}

gboolean
sp_trace_writer_set_plan (SpTraceWriter *writer, const SpPlan *plan, const char *text,
                          GError **error)
{
  g_return_val_if_fail (!writer->done && !writer->have_plan && plan != NULL, FALSE);
  g_autofree char *json = text ? NULL : sp_plan_to_json (plan);
  g_autofree char *digest = sp_plan_digest (plan);
  if (!write_text (writer->file, "/meta/plan", text ? text : json, digest, error))
    return FALSE;
  writer->have_plan = TRUE;
  return TRUE;
}

guint32
sp_trace_group_id (const SpGroups *groups, SpFamily family, guint32 index)
{
  if ((guint) family >= SP_FAMILY_N || !sp_groups_has_family (groups, family)
      || index >= sp_groups_n_groups (groups, family))
    return SP_TRACE_NO_GROUP;
  guint32 id = 0;
  for (guint f = 0; f < (guint) family; f++)
    if (sp_groups_has_family (groups, (SpFamily) f))
      id += sp_groups_n_groups (groups, (SpFamily) f);
  return id + index;
}

static gboolean
write_groups (SpTraceWriter *w, const SpGroups *groups, GError **error)
{
  g_autoptr (GArray) fams = g_array_new (FALSE, TRUE, sizeof (SpTraceFamilyRec));
  g_autoptr (GArray) grps = g_array_new (FALSE, TRUE, sizeof (SpTraceGroupRec));
  g_autoptr (GArray) members = g_array_new (FALSE, FALSE, sizeof (guint32));
  for (guint f = 0; groups != NULL && f < SP_FAMILY_N; f++)
    {
      if (!sp_groups_has_family (groups, (SpFamily) f))
        continue;
      SpTraceFamilyRec fr = { .family_id = f, .name = sp_family_name ((SpFamily) f) };
      g_array_append_val (fams, fr);
      guint32 n = sp_groups_n_groups (groups, (SpFamily) f);
      for (guint32 i = 0; i < n; i++)
        {
          guint32 size = 0;
          const guint32 *m = sp_groups_members (groups, (SpFamily) f, i, &size);
          SpTraceGroupRec gr = { .group_id = grps->len, .family_id = f, .size = size,
                                 .members_offset = members->len, .members_count = size };
          g_array_append_val (grps, gr);
          g_array_append_vals (members, m, size);
        }
    }
  if (!write_table (w->file, &sp_trace_table_families, fams->data, fams->len, error)
      || !write_table (w->file, &sp_trace_table_groups, grps->data, grps->len, error))
    return FALSE;
  hsize_t dims[1] = { members->len };
  hid_t space = H5Screate_simple (1, dims, NULL);
  hid_t dcpl = plist_no_times (H5P_DATASET_CREATE);
  hid_t d = H5Dcreate2 (w->file, "/groups/members", H5T_STD_U32LE, space, H5P_DEFAULT, dcpl,
                        H5P_DEFAULT);
  herr_t rc = d < 0 ? -1
              : members->len == 0
                  ? 0
                  : H5Dwrite (d, H5T_NATIVE_UINT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, members->data);
  if (d >= 0)
    H5Dclose (d);
  H5Pclose (dcpl);
  H5Sclose (space);
  if (rc < 0)
    {
      sp_trace_h5_error (error, SP_ERROR_IO, "cannot write /groups/members");
      return FALSE;
    }
  w->have_groups = TRUE;
  return TRUE;
}

gboolean
sp_trace_writer_set_groups (SpTraceWriter *writer, const SpGroups *groups, GError **error)
{
  g_return_val_if_fail (!writer->done && !writer->have_groups && groups != NULL, FALSE);
  return write_groups (writer, groups, error);
}

static gboolean
flush_rows (SpTraceWriter *w, GError **error)
{
  if (w->n_buf == 0)
    return TRUE;
  hsize_t start[1] = { w->n_rows }, count[1] = { w->n_buf }, total[1] = { w->n_rows + w->n_buf };
  herr_t rc = H5Dset_extent (w->ops, total);
  hid_t fspace = rc < 0 ? H5I_INVALID_HID : H5Dget_space (w->ops);
  hid_t mspace = H5Screate_simple (1, count, NULL);
  if (fspace >= 0)
    rc = H5Sselect_hyperslab (fspace, H5S_SELECT_SET, start, NULL, count, NULL);
  if (rc >= 0 && fspace >= 0)
    rc = H5Dwrite (w->ops, w->row_mem_type, mspace, fspace, H5P_DEFAULT, w->buf);
  if (fspace >= 0)
    H5Sclose (fspace);
  H5Sclose (mspace);
  if (rc < 0 || fspace < 0)
    {
      sp_trace_h5_error (error, SP_ERROR_IO, "%s: cannot append %zu rows to /ops/ops",
                         w->tmp_path, w->n_buf);
      return FALSE;
    }
  w->n_rows += w->n_buf;
  w->n_buf = 0;
  return TRUE;
}

gboolean
sp_trace_writer_append (SpTraceWriter *writer, const SpTraceRow *rows, gsize n, GError **error)
{
  g_return_val_if_fail (!writer->done, FALSE);
  while (n > 0)
    {
      gsize take = MIN (n, SP_TRACE_CHUNK_ROWS - writer->n_buf);
      guint8 *dst = writer->buf + writer->n_buf * writer->row_size;
      gsize bad = 0;
      const SpTraceField *field = NULL;
      if (!writer->packed)
        memcpy (dst, rows, take * sizeof *rows);
      else if (!sp_trace_pack (&sp_trace_table_rows, rows, take, dst, &bad, &field))
        {
          const SpTraceRow *row = rows + bad;
          writer->n_buf += bad; /* the rows before the bad one are packed: keep them */
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                       "trace row %" G_GUINT64_FORMAT " (op %u, rank %u): %s %d is not a "
                       "known value", sp_trace_writer_n_rows (writer),
                       row->op_id, row->rank, field->name,
                       *(const int *) ((const guint8 *) row + field->offset));
          return FALSE;
        }
      writer->n_buf += take;
      rows += take;
      n -= take;
      if (writer->n_buf == SP_TRACE_CHUNK_ROWS && !flush_rows (writer, error))
        return FALSE;
    }
  return TRUE;
}

guint64
sp_trace_writer_n_rows (const SpTraceWriter *writer)
{
  return writer->n_rows + writer->n_buf;
}

void
sp_trace_writer_mark_partial (SpTraceWriter *writer, const char *reason)
{
  g_return_if_fail (!writer->done);
  g_free (writer->partial_reason);
  writer->partial_reason = g_strdup (reason && *reason ? reason : "run did not complete");
}

static void
close_h5 (SpTraceWriter *w)
{
  if (w->ops >= 0)
    H5Dclose (w->ops);
  if (w->row_mem_type >= 0)
    H5Tclose (w->row_mem_type);
  w->ops = w->row_mem_type = H5I_INVALID_HID;
  if (w->file >= 0)
    H5Fclose (w->file);
  w->file = H5I_INVALID_HID;
}

static gboolean
finish_h5 (SpTraceWriter *w, GError **error)
{
  if (!flush_rows (w, error))
    return FALSE;
  gsize n_env = w->env->len / 2;
  g_autofree SpTraceEnv *env = g_new0 (SpTraceEnv, n_env + 1);
  for (gsize i = 0; i < n_env; i++)
    {
      env[i].key = w->env->pdata[2 * i];
      env[i].value = w->env->pdata[2 * i + 1];
    }
  if (!write_table (w->file, &sp_trace_table_env, env, n_env, error))
    return FALSE;
  if (!w->have_cluster && !sp_trace_writer_set_cluster (w, NULL, 0, NULL, 0, error))
    return FALSE;
  if (!w->have_groups && !write_groups (w, NULL, error))
    return FALSE;
  gboolean ok = write_u8_attr (w->file, "complete", w->partial_reason == NULL, error);
  if (ok && w->partial_reason)
    ok = write_str_attr (w->file, "incomplete_reason", w->partial_reason, error);
  if (!ok)
    return FALSE;
  H5Dclose (w->ops);
  H5Tclose (w->row_mem_type);
  w->ops = w->row_mem_type = H5I_INVALID_HID;
  herr_t rc = H5Fclose (w->file);
  w->file = H5I_INVALID_HID;
  if (rc < 0)
    {
      sp_trace_h5_error (error, SP_ERROR_IO, "%s: cannot close HDF5 file", w->tmp_path);
      return FALSE;
    }
  /* on the disk before it is renamed into place (sp_file_write_atomic's
   * order): a run removes its spill files once the trace is written */
  int fd = g_open (w->tmp_path, O_RDONLY | O_CLOEXEC, 0);
  int e = fd < 0 ? errno : fsync (fd) != 0 ? errno : 0;
  if (fd >= 0)
    close (fd);
  if (e != 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_IO, "%s: cannot flush to disk: %s", w->tmp_path,
                   g_strerror (e));
      return FALSE;
    }
  return TRUE;
}

gboolean
sp_trace_writer_finish (SpTraceWriter *writer, GError **error)
{
  g_return_val_if_fail (!writer->done, FALSE);
  if (!finish_h5 (writer, error))
    {
      sp_trace_writer_abort (writer);
      return FALSE;
    }
  writer->done = TRUE;
  return sp_file_temp_commit (writer->tmp_path, writer->path, error);
}

void
sp_trace_writer_abort (SpTraceWriter *writer)
{
  if (writer->done)
    return;
  close_h5 (writer);
  H5Eclear2 (H5E_DEFAULT);
  sp_file_temp_discard (writer->tmp_path);
  writer->done = TRUE;
}

void
sp_trace_writer_free (SpTraceWriter *writer)
{
  if (writer == NULL)
    return;
  sp_trace_writer_abort (writer);
  g_ptr_array_unref (writer->env);
  g_free (writer->buf);
  g_free (writer->partial_reason);
  g_free (writer->tmp_path);
  g_free (writer->path);
  g_free (writer);
}
