/* The trace record tables as descriptors and the HDF5 types generated from
 * them (shardplan/trace-record.h is the one definition). */
#include "config.h"
#include "trace-private.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* C size of each kind: the X-macro tables are checked against it below, so
 * a field declared with the wrong C type fails to compile. */
#define SP_TRACE_CSIZE_U8 1
#define SP_TRACE_CSIZE_U32 4
#define SP_TRACE_CSIZE_I32 4
#define SP_TRACE_CSIZE_U64 8
#define SP_TRACE_CSIZE_I64 8
#define SP_TRACE_CSIZE_F64 8
#define SP_TRACE_CSIZE_STR sizeof (char *)
#define SP_TRACE_CSIZE_COLL sizeof (int)
#define SP_TRACE_CSIZE_DTYPE sizeof (int)
#define SP_TRACE_CSIZE_REDOP sizeof (int)
#define SP_TRACE_CSIZE_STATUS sizeof (int)

#define SP_TRACE_TABLE_(Struct, path, FIELDS, var)                                      \
  static const SpTraceField var##_fields[] = {                                          \
    FIELDS (SP_TRACE_ENTRY_##var)                                                       \
  };                                                                                    \
  const SpTraceTable sp_trace_table_##var = { path, var##_fields,                       \
                                              G_N_ELEMENTS (var##_fields), sizeof (Struct) }

#define SP_TRACE_ENTRY_(Struct, kind, name, since, doc)                                 \
  { #name, SP_TRACE_KIND_##kind, G_STRUCT_OFFSET (Struct, name), since, doc },
#define SP_TRACE_CHECK_(Struct, kind, name)                                             \
  G_STATIC_ASSERT (sizeof (((Struct *) 0)->name) == SP_TRACE_CSIZE_##kind);

#define SP_TRACE_ENTRY_rows(k, c, n, s, d) SP_TRACE_ENTRY_ (SpTraceRow, k, n, s, d)
#define SP_TRACE_ENTRY_nodes(k, c, n, s, d) SP_TRACE_ENTRY_ (SpTraceNode, k, n, s, d)
#define SP_TRACE_ENTRY_ranks(k, c, n, s, d) SP_TRACE_ENTRY_ (SpTraceRank, k, n, s, d)
#define SP_TRACE_ENTRY_env(k, c, n, s, d) SP_TRACE_ENTRY_ (SpTraceEnv, k, n, s, d)
#define SP_TRACE_ENTRY_families(k, c, n, s, d) SP_TRACE_ENTRY_ (SpTraceFamilyRec, k, n, s, d)
#define SP_TRACE_ENTRY_groups(k, c, n, s, d) SP_TRACE_ENTRY_ (SpTraceGroupRec, k, n, s, d)

SP_TRACE_TABLE_ (SpTraceRow, "/ops/ops", SP_TRACE_ROW_FIELDS, rows);
SP_TRACE_TABLE_ (SpTraceNode, "/meta/cluster/nodes", SP_TRACE_NODE_FIELDS, nodes);
SP_TRACE_TABLE_ (SpTraceRank, "/meta/cluster/ranks", SP_TRACE_RANK_FIELDS, ranks);
SP_TRACE_TABLE_ (SpTraceEnv, "/meta/env", SP_TRACE_ENV_FIELDS, env);
SP_TRACE_TABLE_ (SpTraceFamilyRec, "/groups/families", SP_TRACE_FAMILY_FIELDS, families);
SP_TRACE_TABLE_ (SpTraceGroupRec, "/groups/groups", SP_TRACE_GROUP_FIELDS, groups);

#define SP_TRACE_CHECK_rows(k, c, n, s, d) SP_TRACE_CHECK_ (SpTraceRow, k, n)
#define SP_TRACE_CHECK_nodes(k, c, n, s, d) SP_TRACE_CHECK_ (SpTraceNode, k, n)
#define SP_TRACE_CHECK_ranks(k, c, n, s, d) SP_TRACE_CHECK_ (SpTraceRank, k, n)
#define SP_TRACE_CHECK_env(k, c, n, s, d) SP_TRACE_CHECK_ (SpTraceEnv, k, n)
#define SP_TRACE_CHECK_families(k, c, n, s, d) SP_TRACE_CHECK_ (SpTraceFamilyRec, k, n)
#define SP_TRACE_CHECK_groups(k, c, n, s, d) SP_TRACE_CHECK_ (SpTraceGroupRec, k, n)
SP_TRACE_ROW_FIELDS (SP_TRACE_CHECK_rows)
SP_TRACE_NODE_FIELDS (SP_TRACE_CHECK_nodes)
SP_TRACE_RANK_FIELDS (SP_TRACE_CHECK_ranks)
SP_TRACE_ENV_FIELDS (SP_TRACE_CHECK_env)
SP_TRACE_FAMILY_FIELDS (SP_TRACE_CHECK_families)
SP_TRACE_GROUP_FIELDS (SP_TRACE_CHECK_groups)

gsize
sp_trace_kind_csize (SpTraceKind kind)
{
  switch (kind)
    {
    case SP_TRACE_KIND_U8: return SP_TRACE_CSIZE_U8;
    case SP_TRACE_KIND_U32: return SP_TRACE_CSIZE_U32;
    case SP_TRACE_KIND_I32: return SP_TRACE_CSIZE_I32;
    case SP_TRACE_KIND_U64: return SP_TRACE_CSIZE_U64;
    case SP_TRACE_KIND_I64: return SP_TRACE_CSIZE_I64;
    case SP_TRACE_KIND_F64: return SP_TRACE_CSIZE_F64;
    case SP_TRACE_KIND_STR: return SP_TRACE_CSIZE_STR;
    case SP_TRACE_KIND_COLL: return SP_TRACE_CSIZE_COLL;
    case SP_TRACE_KIND_DTYPE: return SP_TRACE_CSIZE_DTYPE;
    case SP_TRACE_KIND_REDOP: return SP_TRACE_CSIZE_REDOP;
    case SP_TRACE_KIND_STATUS: return SP_TRACE_CSIZE_STATUS;
    }
  return 0;
}

static const char *status_names[] = { "ok", "wrong", "timeout", "error", "not_run" };

const char *
sp_trace_status_name (SpTraceStatus status)
{
  return (guint) status < G_N_ELEMENTS (status_names) ? status_names[status] : NULL;
}

gboolean
sp_trace_status_from_name (const char *name, SpTraceStatus *out_status)
{
  for (guint i = 0; name != NULL && i < G_N_ELEMENTS (status_names); i++)
    if (strcmp (name, status_names[i]) == 0)
      {
        *out_status = (SpTraceStatus) i;
        return TRUE;
      }
  return FALSE;
}

const char *
sp_trace_source_name (SpTraceSource source)
{
  switch (source)
    {
    case SP_TRACE_SOURCE_MEASURED: return "measured";
    case SP_TRACE_SOURCE_SIMULATED: return "simulated";
    }
  return NULL;
}

const SpTraceField *
sp_trace_row_fields (gsize *out_n)
{
  *out_n = sp_trace_table_rows.n_fields;
  return sp_trace_table_rows.fields;
}

void
sp_trace_row_init (SpTraceRow *row)
{
  memset (row, 0, sizeof *row);
  row->parent_op_id = -1;
  row->group_id = SP_TRACE_NO_GROUP;
  row->group_size = 1;
  row->dtype = SP_DTYPE_NONE;
  row->redop = SP_REDOP_NONE;
  row->status = SP_TRACE_STATUS_NOT_RUN;
  row->nccl_est_ns = -1;
}

void
sp_trace_row_set_bandwidths (SpTraceRow *row)
{
  row->algbw_gbs = 0;
  row->busbw_gbs = 0;
  if (row->dur_ns > 0 && sp_coll_is_communication (row->coll) && row->group_size > 0)
    sp_coll_bandwidths (row->coll, row->bytes, row->group_size, (guint64) row->dur_ns,
                        &row->algbw_gbs, &row->busbw_gbs);
}

/* Enum name of `value` for an enum kind, NULL if it has none. */
static const char *
kind_enum_name (SpTraceKind kind, int value)
{
  switch (kind)
    {
    case SP_TRACE_KIND_COLL: return sp_coll_name ((SpColl) value);
    case SP_TRACE_KIND_DTYPE: return sp_dtype_name ((SpDtype) value);
    case SP_TRACE_KIND_REDOP: return sp_redop_name ((SpRedop) value);
    case SP_TRACE_KIND_STATUS: return sp_trace_status_name ((SpTraceStatus) value);
    default: return NULL;
    }
}

/* Shortest decimal form of `v` that strtod reads back exactly. */
static void
append_double (GString *out, double v)
{
  if (!isfinite (v))
    {
      g_string_append (out, isnan (v) ? "nan" : v > 0 ? "inf" : "-inf");
      return;
    }
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  for (int prec = 15; prec <= 17; prec++)
    {
      g_ascii_formatd (buf, sizeof buf, prec == 15 ? "%.15g" : prec == 16 ? "%.16g" : "%.17g",
                       v);
      if (g_ascii_strtod (buf, NULL) == v)
        break;
    }
  g_string_append (out, buf);
}

void
sp_trace_field_append (const SpTraceField *field, gconstpointer record, GString *out)
{
  const guint8 *p = (const guint8 *) record + field->offset;
  switch (field->kind)
    {
    case SP_TRACE_KIND_U8: g_string_append_printf (out, "%u", *p); break;
    case SP_TRACE_KIND_U32:
      g_string_append_printf (out, "%" G_GUINT32_FORMAT, *(const guint32 *) p);
      break;
    case SP_TRACE_KIND_I32:
      g_string_append_printf (out, "%" G_GINT32_FORMAT, *(const gint32 *) p);
      break;
    case SP_TRACE_KIND_U64:
      g_string_append_printf (out, "%" G_GUINT64_FORMAT, *(const guint64 *) p);
      break;
    case SP_TRACE_KIND_I64:
      g_string_append_printf (out, "%" G_GINT64_FORMAT, *(const gint64 *) p);
      break;
    case SP_TRACE_KIND_F64: append_double (out, *(const double *) p); break;
    case SP_TRACE_KIND_STR:
      {
        const char *s = *(const char *const *) p;
        g_string_append (out, s ? s : "");
        break;
      }
    case SP_TRACE_KIND_COLL:
    case SP_TRACE_KIND_DTYPE:
    case SP_TRACE_KIND_REDOP:
    case SP_TRACE_KIND_STATUS:
      {
        int v = *(const int *) p;
        const char *name = kind_enum_name (field->kind, v);
        if (name)
          g_string_append (out, name);
        else
          g_string_append_printf (out, "%d", v);
        break;
      }
    }
}

/* ---------------------------------------------------------------- packing */

static gboolean
kind_is_enum (SpTraceKind kind)
{
  return kind == SP_TRACE_KIND_COLL || kind == SP_TRACE_KIND_DTYPE
         || kind == SP_TRACE_KIND_REDOP || kind == SP_TRACE_KIND_STATUS;
}

static gsize
kind_file_size (SpTraceKind kind)
{
  switch (kind)
    {
    case SP_TRACE_KIND_U8: return 1;
    case SP_TRACE_KIND_U32:
    case SP_TRACE_KIND_I32: return 4;
    case SP_TRACE_KIND_U64:
    case SP_TRACE_KIND_I64:
    case SP_TRACE_KIND_F64: return 8;
    case SP_TRACE_KIND_STR: return sizeof (char *);
    default: return 1; /* enums: 8-bit base */
    }
}

gboolean
sp_trace_can_pack (const SpTraceTable *table)
{
  if (G_BYTE_ORDER != G_LITTLE_ENDIAN)
    return FALSE;
  for (gsize i = 0; i < table->n_fields; i++)
    if (table->fields[i].kind == SP_TRACE_KIND_STR)
      return FALSE;
  return TRUE;
}

gsize
sp_trace_packed_size (const SpTraceTable *table)
{
  gsize size = 0;
  for (gsize i = 0; i < table->n_fields; i++)
    size += kind_file_size (table->fields[i].kind);
  return size;
}

/* valid[i][value]: enum kind i (coll, dtype, redop, status) names `value`. */
static const gboolean *
enum_valid (SpTraceKind kind)
{
  static const SpTraceKind kinds[4] = { SP_TRACE_KIND_COLL, SP_TRACE_KIND_DTYPE,
                                        SP_TRACE_KIND_REDOP, SP_TRACE_KIND_STATUS };
  static gboolean valid[4][256];
  static gsize once = 0;
  if (g_once_init_enter (&once))
    {
      for (int k = 0; k < 4; k++)
        for (int v = 0; v < 256; v++)
          valid[k][v] = kind_enum_name (kinds[k], v) != NULL;
      g_once_init_leave (&once, 1);
    }
  for (int k = 0; k < 3; k++)
    if (kinds[k] == kind)
      return valid[k];
  return valid[3];
}

gboolean
sp_trace_pack (const SpTraceTable *table, const void *records, gsize n, guint8 *out,
               gsize *out_bad, const SpTraceField **out_field)
{
  for (gsize r = 0; r < n; r++)
    {
      const guint8 *rec = (const guint8 *) records + r * table->record_size;
      for (gsize i = 0; i < table->n_fields; i++)
        {
          const SpTraceField *f = &table->fields[i];
          if (kind_is_enum (f->kind))
            {
              int v = *(const int *) (rec + f->offset);
              if (v < 0 || v > 255 || !enum_valid (f->kind)[v])
                {
                  *out_bad = r;
                  *out_field = f;
                  return FALSE;
                }
              *out++ = (guint8) v;
            }
          else
            {
              gsize size = kind_file_size (f->kind);
              memcpy (out, rec + f->offset, size);
              out += size;
            }
        }
    }
  return TRUE;
}

void
sp_trace_unpack (const SpTraceTable *table, const guint8 *in, gsize n, void *records)
{
  for (gsize r = 0; r < n; r++)
    {
      guint8 *rec = (guint8 *) records + r * table->record_size;
      for (gsize i = 0; i < table->n_fields; i++)
        {
          const SpTraceField *f = &table->fields[i];
          if (kind_is_enum (f->kind))
            *(int *) (rec + f->offset) = *in++;
          else
            {
              gsize size = kind_file_size (f->kind);
              memcpy (rec + f->offset, in, size);
              in += size;
            }
        }
    }
}

/* ------------------------------------------------------------------ HDF5 */

void
sp_trace_h5_init (void)
{
  static gsize once = 0;
  if (g_once_init_enter (&once))
    {
      H5open ();
      /* We report HDF5 failures as GErrors; its own printing would put a
       * page of stack on the user's terminal for a mistyped file name. */
      H5Eset_auto2 (H5E_DEFAULT, NULL, NULL);
      g_once_init_leave (&once, 1);
    }
}

hid_t
sp_trace_h5_string_type (void)
{
  hid_t t = H5Tcopy (H5T_C_S1);
  H5Tset_size (t, H5T_VARIABLE);
  H5Tset_cset (t, H5T_CSET_UTF8);
  return t;
}

/* An HDF5 enum with every named value of the C enum (values 0..255). */
static hid_t
enum_type (SpTraceKind kind, gboolean file)
{
  hid_t t = H5Tenum_create (file ? H5T_STD_U8LE : H5T_NATIVE_INT);
  for (int v = 0; v <= 255; v++)
    {
      const char *name = kind_enum_name (kind, v);
      if (name == NULL)
        continue;
      if (file)
        {
          guint8 b = (guint8) v;
          H5Tenum_insert (t, name, &b);
        }
      else
        H5Tenum_insert (t, name, &v);
    }
  return t;
}

hid_t
sp_trace_h5_kind_type (SpTraceKind kind, gboolean file)
{
  switch (kind)
    {
    case SP_TRACE_KIND_U8: return H5Tcopy (file ? H5T_STD_U8LE : H5T_NATIVE_UINT8);
    case SP_TRACE_KIND_U32: return H5Tcopy (file ? H5T_STD_U32LE : H5T_NATIVE_UINT32);
    case SP_TRACE_KIND_I32: return H5Tcopy (file ? H5T_STD_I32LE : H5T_NATIVE_INT32);
    case SP_TRACE_KIND_U64: return H5Tcopy (file ? H5T_STD_U64LE : H5T_NATIVE_UINT64);
    case SP_TRACE_KIND_I64: return H5Tcopy (file ? H5T_STD_I64LE : H5T_NATIVE_INT64);
    case SP_TRACE_KIND_F64: return H5Tcopy (file ? H5T_IEEE_F64LE : H5T_NATIVE_DOUBLE);
    case SP_TRACE_KIND_STR: return sp_trace_h5_string_type ();
    case SP_TRACE_KIND_COLL:
    case SP_TRACE_KIND_DTYPE:
    case SP_TRACE_KIND_REDOP:
    case SP_TRACE_KIND_STATUS:
      return enum_type (kind, file);
    }
  return H5I_INVALID_HID;
}

hid_t
sp_trace_h5_table_type (const SpTraceTable *table, gboolean file, const gboolean *present)
{
  if (!file)
    return sp_trace_h5_table_mem_type (table, present, H5I_INVALID_HID);
  /* The file type is packed: member offsets are the running sum of sizes. */
  gsize size = 0;
  for (gsize i = 0; i < table->n_fields; i++)
    {
      hid_t ft = sp_trace_h5_kind_type (table->fields[i].kind, TRUE);
      size += H5Tget_size (ft);
      H5Tclose (ft);
    }
  hid_t t = H5Tcreate (H5T_COMPOUND, size);
  if (t < 0)
    return H5I_INVALID_HID;
  gsize offset = 0;
  for (gsize i = 0; i < table->n_fields; i++)
    {
      if (present && !present[i])
        continue;
      const SpTraceField *f = &table->fields[i];
      hid_t ft = sp_trace_h5_kind_type (f->kind, TRUE);
      herr_t rc = H5Tinsert (t, f->name, offset, ft);
      offset += H5Tget_size (ft);
      H5Tclose (ft);
      if (rc < 0)
        {
          H5Tclose (t);
          return H5I_INVALID_HID;
        }
    }
  return t;
}

/* A native-int enum with the members of the file enum `fenum`. */
static hid_t
enum_like (hid_t fenum)
{
  hid_t t = H5Tenum_create (H5T_NATIVE_INT);
  int n = H5Tget_nmembers (fenum);
  for (int i = 0; t >= 0 && i < n; i++)
    {
      char *name = H5Tget_member_name (fenum, (unsigned) i);
      guint8 v = 0;
      int value;
      if (name == NULL || H5Tget_member_value (fenum, (unsigned) i, &v) < 0
          || (value = v, H5Tenum_insert (t, name, &value) < 0))
        {
          H5Tclose (t);
          t = H5I_INVALID_HID;
        }
      if (name)
        H5free_memory (name);
    }
  return t;
}

hid_t
sp_trace_h5_table_mem_type (const SpTraceTable *table, const gboolean *present, hid_t ftype)
{
  hid_t t = H5Tcreate (H5T_COMPOUND, table->record_size);
  for (gsize i = 0; t >= 0 && i < table->n_fields; i++)
    {
      if (present && !present[i])
        continue;
      const SpTraceField *f = &table->fields[i];
      int idx = ftype >= 0 ? H5Tget_member_index (ftype, f->name) : -1;
      hid_t fmember = idx >= 0 ? H5Tget_member_type (ftype, (unsigned) idx) : H5I_INVALID_HID;
      hid_t ft = fmember >= 0 && H5Tget_class (fmember) == H5T_ENUM
                     ? enum_like (fmember)
                     : sp_trace_h5_kind_type (f->kind, FALSE);
      if (fmember >= 0)
        H5Tclose (fmember);
      if (ft < 0 || H5Tinsert (t, f->name, f->offset, ft) < 0)
        {
          H5Tclose (t);
          t = H5I_INVALID_HID;
        }
      if (ft >= 0)
        H5Tclose (ft);
    }
  H5Eclear2 (H5E_DEFAULT);
  return t;
}

static herr_t
innermost_cb (unsigned n, const H5E_error2_t *err, void *data)
{
  char **out = data;
  if (n == 0 && err->desc && *out == NULL)
    *out = g_strdup (err->desc);
  return 0;
}

void
sp_trace_h5_error (GError **error, int code, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_autofree char *detail = NULL;
  H5Ewalk2 (H5E_DEFAULT, H5E_WALK_UPWARD, innermost_cb, &detail);
  H5Eclear2 (H5E_DEFAULT);
  if (detail && *detail)
    g_strdelimit (detail, "\n", ' ');
  if (detail && *detail)
    g_set_error (error, SP_ERROR, code, "%s: %s", msg, detail);
  else
    g_set_error (error, SP_ERROR, code, "%s", msg);
}

void
sp_trace_h5_reclaim (hid_t mem_type, gsize n, void *buf)
{
  if (n == 0)
    return;
  hsize_t dims[1] = { n };
  hid_t space = H5Screate_simple (1, dims, NULL);
#if H5_VERSION_GE(1, 12, 0)
  H5Treclaim (mem_type, space, H5P_DEFAULT, buf);
#else
  H5Dvlen_reclaim (mem_type, space, H5P_DEFAULT, buf);
#endif
  H5Sclose (space);
}
