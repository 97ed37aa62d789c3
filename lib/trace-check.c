/* Structural checks of a trace, made before libhdf5 reads any data: the
 * schema's datatypes (H5Tequal against the type the reader converts from),
 * dataspaces, declared sizes against what the file can hold, filters,
 * whole chunks, and string references against the file's global heaps.
 * Each names the file and what is wrong; see README "Corrupt and hostile
 * traces" for what libhdf5 1.10 does with files that fail them. */
#include "config.h"
#include "trace-private.h"

#include <stdio.h>
#include <string.h>
#include <zlib.h>

const char *
sp_trace_class_name (H5T_class_t c)
{
  switch (c)
    {
    case H5T_INTEGER: return "an integer";
    case H5T_FLOAT: return "a float";
    case H5T_STRING: return "a string";
    case H5T_ENUM: return "an enum";
    case H5T_COMPOUND: return "a compound";
    case H5T_ARRAY: return "an array";
    case H5T_VLEN: return "a variable-length sequence";
    default: return "an unsupported type";
    }
}

H5T_class_t
sp_trace_kind_class (SpTraceKind kind)
{
  switch (kind)
    {
    case SP_TRACE_KIND_F64: return H5T_FLOAT;
    case SP_TRACE_KIND_STR: return H5T_STRING;
    case SP_TRACE_KIND_COLL:
    case SP_TRACE_KIND_DTYPE:
    case SP_TRACE_KIND_REDOP:
    case SP_TRACE_KIND_STATUS:
      return H5T_ENUM;
    default: return H5T_INTEGER;
    }
}

/* A one-line description of a datatype for messages: "an unsigned 32-bit
 * little-endian integer", "a variable-length string" … (caller frees). */
char *
sp_trace_describe_type (hid_t type)
{
  H5T_class_t c = H5Tget_class (type);
  gsize bits = H5Tget_size (type) * 8;
  switch (c)
    {
    case H5T_INTEGER:
      return g_strdup_printf ("a%s %" G_GSIZE_FORMAT "-bit %s integer",
                              H5Tget_sign (type) == H5T_SGN_NONE ? "n unsigned" : " signed", bits,
                              H5Tget_order (type) == H5T_ORDER_BE ? "big-endian" : "little-endian");
    case H5T_FLOAT:
      return g_strdup_printf ("a %" G_GSIZE_FORMAT "-bit %s float", bits,
                              H5Tget_order (type) == H5T_ORDER_BE ? "big-endian" : "little-endian");
    case H5T_STRING:
      if (H5Tis_variable_str (type) > 0)
        return g_strdup ("a variable-length string");
      return g_strdup_printf ("a fixed-length string of %" G_GSIZE_FORMAT " bytes", bits / 8);
    case H5T_ENUM:
      {
        hid_t base = H5Tget_super (type);
        char *d = base < 0 ? g_strdup ("an enum") : sp_trace_describe_type (base);
        char *r = g_strdup_printf ("an enum on %s", d);
        if (base >= 0)
          H5Tclose (base);
        g_free (d);
        return r;
      }
    default:
      return g_strdup (sp_trace_class_name (c));
    }
}

/* The dataspace of an attribute or dataset holds exactly one element
 * (scalar, or a simple space of one point). */
gboolean
sp_trace_space_is_single (hid_t space)
{
  if (space < 0)
    return FALSE;
  H5S_class_t sc = H5Sget_simple_extent_type (space);
  if (sc == H5S_SCALAR)
    return TRUE;
  return sc == H5S_SIMPLE && H5Sget_simple_extent_npoints (space) == 1;
}

/* "an array of 64 strings", "empty (a null dataspace)" … (caller frees). */
char *
sp_trace_describe_space (hid_t space, const char *plural)
{
  if (space < 0)
    return g_strdup ("unreadable");
  switch (H5Sget_simple_extent_type (space))
    {
    case H5S_SCALAR: return g_strdup ("scalar");
    case H5S_NULL: return g_strdup ("empty (a null dataspace)");
    case H5S_SIMPLE:
      return g_strdup_printf ("an array of %" G_GINT64_FORMAT " %s",
                              (gint64) H5Sget_simple_extent_npoints (space), plural);
    default: return g_strdup ("unreadable");
    }
}

/* The most bytes of data dataset `d` can hold in this file: the file's
 * size, times deflate's largest ratio when the dataset is deflated.  Only
 * the filters a trace may use are accepted (shuffle, deflate, Fletcher-32,
 * each at most once): another one could expand data without bound. */
static gboolean
dataset_capacity (const SpTraceCheck *c, hid_t d, const char *path, guint64 *out_bytes,
                  GError **error)
{
  hid_t dcpl = H5Dget_create_plist (d);
  int n = dcpl < 0 ? -1 : H5Pget_nfilters (dcpl);
  guint64 ratio = 1;
  gboolean ok = n >= 0, seen_deflate = FALSE, seen_shuffle = FALSE, seen_fletcher = FALSE;
  if (!ok)
    sp_trace_h5_error (error, SP_ERROR_INVALID_TRACE, "%s: cannot read the filters of %s",
                       c->path, path);
  for (int i = 0; ok && i < n; i++)
    {
      unsigned flags = 0, config = 0;
      size_t n_values = 0;
      char name[64] = "";
      H5Z_filter_t id = H5Pget_filter2 (dcpl, (unsigned) i, &flags, &n_values, NULL, sizeof name,
                                        name, &config);
      gboolean *seen = id == H5Z_FILTER_DEFLATE   ? &seen_deflate
                       : id == H5Z_FILTER_SHUFFLE ? &seen_shuffle
                       : id == H5Z_FILTER_FLETCHER32 ? &seen_fletcher
                                                     : NULL;
      if (seen == NULL || *seen)
        {
          g_strdelimit (name, "\n\r", ' ');
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                       "%s: %s uses HDF5 filter %d ('%s')%s; a trace may only use shuffle, "
                       "deflate and Fletcher-32, once each",
                       c->path, path, (int) id, name, seen ? " twice" : "");
          ok = FALSE;
        }
      else
        *seen = TRUE;
      if (id == H5Z_FILTER_DEFLATE)
        ratio = SP_TRACE_DEFLATE_MAX_RATIO;
    }
  if (dcpl >= 0)
    H5Pclose (dcpl);
  H5Eclear2 (H5E_DEFAULT);
  if (ok && !g_uint64_checked_mul (out_bytes, c->file_size, ratio))
    *out_bytes = G_MAXUINT64;
  return ok;
}

/* The size of a chunk stored as `raw` (`len` bytes) once `n` filters
 * `ids` are undone the way libhdf5 undoes them, last to first, skipping
 * those `mask` marks as not applied to this chunk: Fletcher-32 takes its 4
 * bytes off, shuffle keeps the size, deflate is inflated by zlib (counted
 * through `scratch`, not kept; stopped past `limit` bytes).  FALSE for
 * data deflate cannot undo (libhdf5 would refuse it too). */
static gboolean
undone_size (const H5Z_filter_t *ids, int n, unsigned mask, const guint8 *raw, guint64 len,
             guint64 limit, guint8 *scratch, gsize scratch_len, guint64 *out)
{
  for (int i = n - 1; i >= 0; i--)
    {
      if (mask >> i & 1)
        continue;
      if (ids[i] == H5Z_FILTER_FLETCHER32)
        {
          if (len < 4)
            return FALSE;
          len -= 4; /* before deflate: its checksum trails the raw bytes */
        }
      else if (ids[i] == H5Z_FILTER_DEFLATE)
        {
          z_stream z = { 0 };
          if (inflateInit (&z) != Z_OK)
            return FALSE;
          guint64 in_left = len, total = 0;
          int st = Z_OK;
          z.next_in = (Bytef *) raw;
          while (st == Z_OK && total <= limit)
            {
              if (z.avail_in == 0 && in_left > 0)
                {
                  z.avail_in = (uInt) MIN (in_left, (guint64) G_MAXUINT32);
                  in_left -= z.avail_in;
                }
              z.next_out = scratch;
              z.avail_out = (uInt) scratch_len;
              st = inflate (&z, Z_NO_FLUSH);
              total += scratch_len - z.avail_out;
            }
          inflateEnd (&z);
          if (st != Z_STREAM_END && total <= limit)
            return FALSE;
          len = total;
        }
    }
  *out = len;
  return TRUE;
}

/* A chunked dataset must store every chunk whole: libhdf5 1.10.8 does not
 * check, and copies a whole chunk out of a shorter one (a heap over-read
 * in H5VM_memcpyvv under H5Dread, garbage rows) — an unfiltered dataset's
 * storage not a whole number of chunks (damage dropped a deflated
 * dataset's filter pipeline); a filtered chunk whose filters do not give
 * back a chunk (damage marked its deflate as skipped, or pointed it at
 * other deflated data).  So the storage of an unfiltered one is checked,
 * and every chunk of a filtered one is read raw (H5Dread_chunk) and its
 * filters undone here first (tests/fuzz/README, T15).  Only for records
 * without strings, whose size in memory is their size on disk. */
static gboolean
check_chunks (const SpTraceCheck *c, hid_t d, const char *path, GError **error)
{
  hid_t dcpl = H5Dget_create_plist (d);
  hid_t type = H5Dget_type (d);
  hid_t space = H5Dget_space (d);
  hsize_t chunk[1] = { 0 };
  int nf = dcpl >= 0 ? H5Pget_nfilters (dcpl) : -1;
  gboolean check = dcpl >= 0 && type >= 0 && space >= 0 && H5Pget_layout (dcpl) == H5D_CHUNKED
                   && nf >= 0 && nf <= 3 && H5Pget_chunk (dcpl, 1, chunk) == 1
                   && H5Tdetect_class (type, H5T_STRING) == 0
                   && H5Tdetect_class (type, H5T_VLEN) == 0;
  guint64 chunk_bytes = 0;
  if (check && (!g_uint64_checked_mul (&chunk_bytes, chunk[0], H5Tget_size (type))
                || chunk_bytes == 0))
    chunk_bytes = 0;
  H5Z_filter_t ids[3];
  for (int i = 0; check && i < nf; i++)
    {
      unsigned flags = 0, config = 0;
      size_t n_values = 0;
      ids[i] = H5Pget_filter2 (dcpl, (unsigned) i, &flags, &n_values, NULL, 0, NULL, &config);
    }
  gboolean ok = TRUE;
  if (check && nf == 0)
    {
      hsize_t stored = chunk_bytes ? H5Dget_storage_size (d) : 0;
      if (chunk_bytes == 0 || stored % chunk_bytes != 0)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                       "%s: %s stores %" G_GUINT64_FORMAT " bytes, not a whole number of its "
                       "unfiltered %" G_GUINT64_FORMAT "-byte chunks (damaged storage or filters)",
                       c->path, path, (guint64) stored, chunk_bytes);
          ok = FALSE;
        }
    }
  else if (check)
    {
      hsize_t n_chunks = 0;
      g_autofree guint8 *raw = NULL;
      g_autofree guint8 *scratch = g_malloc (65536);
      gsize raw_cap = 0;
      if (H5Dget_num_chunks (d, space, &n_chunks) < 0)
        {
          sp_trace_h5_error (error, SP_ERROR_INVALID_TRACE, "%s: cannot list the chunks of %s",
                             c->path, path);
          ok = FALSE;
        }
      for (hsize_t k = 0; ok && k < n_chunks; k++)
        {
          hsize_t off[1] = { 0 }, size = 0;
          unsigned mask = 0;
          haddr_t addr = 0;
          guint64 undone = 0;
          ok = H5Dget_chunk_info (d, space, k, off, &mask, &addr, &size) >= 0
               && size <= c->file_size;
          if (ok && size > raw_cap)
            raw = g_realloc (raw, raw_cap = MAX (size, 1));
          ok = ok && H5Dread_chunk (d, H5P_DEFAULT, off, &mask, raw) >= 0;
          if (!ok)
            sp_trace_h5_error (error, SP_ERROR_INVALID_TRACE,
                               "%s: cannot read chunk %" G_GUINT64_FORMAT " of %s (damaged "
                               "storage)", c->path, (guint64) k, path);
          else if (!undone_size (ids, nf, mask, raw, size, chunk_bytes, scratch, 65536, &undone)
                   || undone != chunk_bytes)
            {
              g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                           "%s: chunk %" G_GUINT64_FORMAT " of %s does not give back its %"
                           G_GUINT64_FORMAT " bytes once its filters are undone (damaged "
                           "storage or filters)", c->path, (guint64) k, path, chunk_bytes);
              ok = FALSE;
            }
        }
    }
  if (space >= 0)
    H5Sclose (space);
  if (type >= 0)
    H5Tclose (type);
  if (dcpl >= 0)
    H5Pclose (dcpl);
  H5Eclear2 (H5E_DEFAULT);
  return ok;
}

/* A contiguous dataset with storage, or a compact one (its data in its
 * object header), holds exactly its `n` elements (contiguous: inside the
 * file).  libhdf5 1.10.8 reads a table whose layout message was damaged
 * into a compact one of 0 bytes through a NULL buffer (SIGSEGV in
 * H5VM_memcpyvv under H5Dread; tests/fuzz/README, T12). */
static gboolean
check_layout (const SpTraceCheck *c, hid_t d, const char *path, guint64 n, GError **error)
{
  hid_t dcpl = H5Dget_create_plist (d);
  hid_t type = H5Dget_type (d);
  H5D_layout_t layout = dcpl >= 0 ? H5Pget_layout (dcpl) : H5D_LAYOUT_ERROR;
  gboolean compact = layout == H5D_COMPACT;
  gboolean checked = dcpl >= 0 && type >= 0
                     && (compact || (layout == H5D_CONTIGUOUS && H5Pget_external_count (dcpl) == 0));
  /* H5Tget_size gives a string's or a sequence's size in memory, not in
   * the file: such a table must only store a whole, non-zero size per row */
  gboolean exact = checked && H5Tdetect_class (type, H5T_STRING) == 0
                   && H5Tdetect_class (type, H5T_VLEN) == 0;
  guint64 need = 0;
  gboolean sized = checked && g_uint64_checked_mul (&need, n, H5Tget_size (type));
  haddr_t addr = checked && !compact ? H5Dget_offset (d) : HADDR_UNDEF;
  guint64 stored = checked ? (guint64) H5Dget_storage_size (d) : 0;
  if (type >= 0)
    H5Tclose (type);
  if (dcpl >= 0)
    H5Pclose (dcpl);
  H5Eclear2 (H5E_DEFAULT);
  if (!checked || (!compact && addr == HADDR_UNDEF && stored == 0))
    return TRUE; /* chunked, or never written: read as fill values */
  gboolean size_ok = exact ? sized && stored == need
                           : (n == 0 || (stored > 0 && stored % n == 0));
  gboolean in_file = compact || (addr != HADDR_UNDEF && (guint64) addr <= c->file_size
                                 && stored <= c->file_size - (guint64) addr);
  if (!size_ok || !in_file)
    {
      g_autofree char *where = compact ? g_strdup ("in its object header")
                               : g_strdup_printf ("at byte %" G_GUINT64_FORMAT,
                                                  addr == HADDR_UNDEF ? G_MAXUINT64 : (guint64) addr);
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                   "%s: %s stores %" G_GUINT64_FORMAT " bytes %s for its %" G_GUINT64_FORMAT
                   " elements (a damaged layout; file %" G_GUINT64_FORMAT " bytes)", c->path,
                   path, stored, where, n, c->file_size);
      return FALSE;
    }
  return TRUE;
}

/* Check that dataset `d` has the dataspace the schema gives it (one
 * element when `scalar`, else 1-D) and declares no more than `max_n`
 * elements and no more than the file can hold at `elem_size` bytes each
 * (overflow-checked): the element count goes to *out_n.  Nothing may be
 * allocated for a dataset before this passed. */
gboolean
sp_trace_check_extent (const SpTraceCheck *c, hid_t d, const char *path, gboolean scalar,
                       gsize elem_size, guint64 max_n, guint64 *out_n, GError **error)
{
  hid_t space = H5Dget_space (d);
  int rank = space < 0 ? -1 : H5Sget_simple_extent_ndims (space);
  hsize_t dims[1] = { 0 };
  gboolean ok = FALSE;
  if (scalar ? !sp_trace_space_is_single (space) : rank != 1)
    {
      g_autofree char *what = sp_trace_describe_space (space, "values");
      if (scalar)
        g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                     "%s: %s is %s, expected a single value", c->path, path, what);
      else
        g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                     "%s: %s has %d dimensions, expected 1", c->path, path, rank);
    }
  else
    {
      guint64 n = 1, need = 0, capacity = 0;
      if (!scalar)
        {
          H5Sget_simple_extent_dims (space, dims, NULL);
          n = dims[0];
        }
      if (!dataset_capacity (c, d, path, &capacity, error))
        ;
      else if (n > max_n)
        g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                     "%s: %s declares %" G_GUINT64_FORMAT " elements, more than the %"
                     G_GUINT64_FORMAT " a trace allows", c->path, path, n, max_n);
      else if (!g_uint64_checked_mul (&need, n, MAX (elem_size, 1)) || need > capacity)
        g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                     "%s: %s declares %" G_GUINT64_FORMAT " elements of %" G_GSIZE_FORMAT
                     " bytes, more than the file (%" G_GUINT64_FORMAT " bytes) can hold",
                     c->path, path, n, elem_size, c->file_size);
      else if (!check_chunks (c, d, path, error) || !check_layout (c, d, path, n, error))
        ;
      else
        {
          *out_n = n;
          ok = TRUE;
        }
    }
  if (space >= 0)
    H5Sclose (space);
  H5Eclear2 (H5E_DEFAULT);
  return ok;
}

/* The field of `kind` in the file has exactly the type this reader
 * converts from: the writer's file type (sp_trace_h5_kind_type), except
 * that an enum only needs the 8-bit base and member names the schema
 * gives the same values (a file written before an enum gained a member
 * stays readable). */
static gboolean
field_type_ok (hid_t mt, SpTraceKind kind)
{
  hid_t want = sp_trace_h5_kind_type (kind, TRUE);
  gboolean ok = H5Tequal (mt, want) > 0;
  if (!ok && H5Tget_class (mt) == H5T_ENUM && H5Tget_class (want) == H5T_ENUM)
    {
      hid_t base = H5Tget_super (mt);
      int n = H5Tget_nmembers (mt);
      ok = base >= 0 && H5Tequal (base, H5T_STD_U8LE) > 0 && n >= 0 && n <= 256;
      for (int i = 0; ok && i < n; i++)
        {
          char *name = H5Tget_member_name (mt, (unsigned) i);
          guint8 v = 0, w = 0;
          ok = name != NULL && H5Tget_member_value (mt, (unsigned) i, &v) >= 0
               && H5Tenum_valueof (want, name, &w) >= 0 && v == w;
          if (name)
            H5free_memory (name);
        }
      if (base >= 0)
        H5Tclose (base);
    }
  H5Tclose (want);
  H5Eclear2 (H5E_DEFAULT);
  return ok;
}

/* Check the compound type `ftype` of table->path against the schema: the
 * record and its fields within bounds, each field the schema names (and
 * the file has) of exactly the schema's type, the others (a later minor
 * version's) free of variable-length data.  Fields present go to
 * present[]. */
gboolean
sp_trace_check_record (const SpTraceCheck *c, const SpTraceTable *table, hid_t ftype,
                       gboolean *present, GError **error)
{
  gsize size = H5Tget_size (ftype);
  int n = H5Tget_nmembers (ftype);
  if (H5Tget_class (ftype) != H5T_COMPOUND || n < 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                   "%s: %s is not a 1-D table of compound records", c->path, table->path);
      return FALSE;
    }
  if (size > SP_TRACE_MAX_RECORD_BYTES || n > SP_TRACE_MAX_RECORD_FIELDS)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                   "%s: %s has records of %" G_GSIZE_FORMAT " bytes and %d fields, more than "
                   "the %d bytes and %d fields a trace allows", c->path, table->path, size, n,
                   SP_TRACE_MAX_RECORD_BYTES, SP_TRACE_MAX_RECORD_FIELDS);
      return FALSE;
    }
  for (int m = 0; m < n; m++)
    {
      g_autofree char *name = NULL;
      char *h5name = H5Tget_member_name (ftype, (unsigned) m);
      if (h5name)
        {
          name = g_strdup (h5name);
          H5free_memory (h5name);
        }
      hid_t mt = H5Tget_member_type (ftype, (unsigned) m);
      gsize off = H5Tget_member_offset (ftype, (unsigned) m);
      gsize msize = mt < 0 ? 0 : H5Tget_size (mt);
      gsize i = 0;
      while (name && i < table->n_fields && strcmp (table->fields[i].name, name) != 0)
        i++;
      g_autofree char *what = NULL;
      gboolean ok = TRUE;
      if (name == NULL || mt < 0 || msize == 0 || off > size || msize > size - off)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                       "%s: field %d of %s is damaged (it does not fit its %" G_GSIZE_FORMAT
                       "-byte record)", c->path, m, table->path, size);
          ok = FALSE;
        }
      else if (i < table->n_fields
               && H5Tget_class (mt) != sp_trace_kind_class (table->fields[i].kind))
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                       "%s: field %s of %s is %s, expected %s", c->path, name, table->path,
                       sp_trace_class_name (H5Tget_class (mt)),
                       sp_trace_class_name (sp_trace_kind_class (table->fields[i].kind)));
          ok = FALSE;
        }
      else if (i < table->n_fields && !field_type_ok (mt, table->fields[i].kind))
        {
          hid_t want = sp_trace_h5_kind_type (table->fields[i].kind, TRUE);
          g_autofree char *want_s = sp_trace_describe_type (want);
          what = sp_trace_describe_type (mt);
          H5Tclose (want);
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                       "%s: field %s of %s is %s, expected %s", c->path, name, table->path,
                       what, want_s);
          ok = FALSE;
        }
      else if (i == table->n_fields
               && (H5Tdetect_class (mt, H5T_VLEN) != 0 || H5Tdetect_class (mt, H5T_REFERENCE) != 0
                   || (H5Tget_class (mt) == H5T_STRING && H5Tis_variable_str (mt) != 0)))
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                       "%s: field %s of %s holds variable-length data or references, which "
                       "the schema does not allow in a field it does not name",
                       c->path, name, table->path);
          ok = FALSE;
        }
      if (ok && i < table->n_fields)
        {
          if (present[i])
            {
              g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                           "%s: %s has field %s twice", c->path, table->path, name);
              ok = FALSE;
            }
          present[i] = TRUE;
        }
      if (mt >= 0)
        H5Tclose (mt);
      H5Eclear2 (H5E_DEFAULT);
      if (!ok)
        return FALSE;
    }
  for (gsize i = 0; i < table->n_fields; i++)
    if (!present[i] && table->fields[i].since_minor <= c->minor)
      {
        g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                     "%s: %s lacks field %s (schema %u.%u has it)", c->path, table->path,
                     table->fields[i].name, c->major, c->minor);
        return FALSE;
      }
  return TRUE;
}

/* Before libhdf5 reads the `n` variable-length strings of dataset `d`
 * (members of its compound type `ftype`, or the whole of a string type),
 * check each on-disk reference against the scanned global heaps
 * (sp_trace_heaps_string_ok): libhdf5 1.10.8 follows a damaged one
 * wherever it points (SIGSEGV in H5HG_read).  The references are read
 * raw, so only a contiguous dataset can be checked; the writer and h5py
 * write no other layout for these. */
typedef struct {
  gsize offset;    /* in the type H5Dget_type returns */
  gsize size;
  gboolean is_str; /* a variable-length string */
} MemberPlace;

static int
member_place_cmp (gconstpointer a, gconstpointer b)
{
  gsize x = ((const MemberPlace *) a)->offset, y = ((const MemberPlace *) b)->offset;
  return x < y ? -1 : x > y;
}

gboolean
sp_trace_check_string_refs (const SpTraceCheck *c, hid_t d, hid_t ftype, const char *path,
                            guint64 n, GError **error)
{
  /* H5Dget_type gives the type as it is in memory, where a variable-length
   * string is a pointer; on disk it is a reference of ref_len bytes and
   * every later member moves by the difference (libhdf5's H5T_set_loc). */
  gsize ref_len = 8 + c->addr_len;
  g_autoptr (GArray) places = g_array_new (FALSE, FALSE, sizeof (MemberPlace));
  if (H5Tget_class (ftype) == H5T_STRING && H5Tis_variable_str (ftype) > 0)
    {
      MemberPlace whole = { 0, H5Tget_size (ftype), TRUE };
      g_array_append_val (places, whole);
    }
  int n_members = H5Tget_class (ftype) == H5T_COMPOUND ? H5Tget_nmembers (ftype) : 0;
  for (int m = 0; m < n_members; m++)
    {
      hid_t mt = H5Tget_member_type (ftype, (unsigned) m);
      MemberPlace mp = { H5Tget_member_offset (ftype, (unsigned) m), 0, FALSE };
      if (mt >= 0)
        {
          mp.size = H5Tget_size (mt);
          mp.is_str = H5Tget_class (mt) == H5T_STRING && H5Tis_variable_str (mt) > 0;
          H5Tclose (mt);
        }
      g_array_append_val (places, mp);
    }
  g_array_sort (places, member_place_cmp);
  g_autoptr (GArray) offsets = g_array_new (FALSE, FALSE, sizeof (gsize));
  gsize shift = 0;
  for (guint i = 0; i < places->len; i++)
    {
      const MemberPlace *mp = &g_array_index (places, MemberPlace, i);
      if (!mp->is_str)
        continue;
      gsize disk = mp->offset + shift;
      g_array_append_val (offsets, disk);
      shift += ref_len - MIN (mp->size, ref_len);
    }
  gsize rec = H5Tget_size (ftype) + shift; /* the record on disk */
  H5Eclear2 (H5E_DEFAULT);
  if (offsets->len == 0 || n == 0)
    return TRUE;
  hid_t dcpl = H5Dget_create_plist (d);
  H5D_layout_t layout = dcpl < 0 ? H5D_LAYOUT_ERROR : H5Pget_layout (dcpl);
  int n_external = dcpl < 0 ? -1 : H5Pget_external_count (dcpl);
  if (dcpl >= 0)
    H5Pclose (dcpl);
  haddr_t addr = layout == H5D_CONTIGUOUS ? H5Dget_offset (d) : HADDR_UNDEF;
  hsize_t stored = H5Dget_storage_size (d);
  H5Eclear2 (H5E_DEFAULT);
  if (layout == H5D_CONTIGUOUS && n_external == 0 && addr == HADDR_UNDEF && stored == 0)
    return TRUE; /* never written: every string reads as NULL */
  guint64 bytes = 0;
  if (layout != H5D_CONTIGUOUS || n_external != 0 || addr == HADDR_UNDEF)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                   "%s: %s keeps its strings in a %s layout, which shardplan cannot check "
                   "(a trace's are contiguous)", c->path, path,
                   layout == H5D_CHUNKED ? "chunked" : layout == H5D_COMPACT ? "compact"
                                                                             : "non-contiguous");
      return FALSE;
    }
  if (rec < ref_len || !g_uint64_checked_mul (&bytes, n, rec) || addr > c->file_size
      || bytes > c->file_size - addr)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                   "%s: %s lies outside the file (%" G_GUINT64_FORMAT " bytes at byte %"
                   G_GUINT64_FORMAT ", file %" G_GUINT64_FORMAT " bytes)",
                   c->path, path, bytes, (guint64) addr, c->file_size);
      return FALSE;
    }
  g_autofree guint8 *raw = g_malloc (bytes);
  FILE *fp = fopen (c->path, "rb");
  gboolean got = fp != NULL && fseeko (fp, (off_t) addr, SEEK_SET) == 0
                 && fread (raw, 1, bytes, fp) == bytes;
  if (fp)
    fclose (fp);
  if (!got)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_IO, "%s: cannot read %s", c->path, path);
      return FALSE;
    }
  for (guint64 r = 0; r < n; r++)
    for (guint i = 0; i < offsets->len; i++)
      {
        gsize off = g_array_index (offsets, gsize, i);
        if (off > rec - ref_len)
          continue; /* cannot happen: check_record_type bounds every member */
        if (!sp_trace_heaps_string_ok (c->heaps, raw + r * rec + off, c->addr_len))
          {
            g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                         "%s: %s row %" G_GUINT64_FORMAT " refers to a string that is not in "
                         "the file's global heap (a damaged reference)", c->path, path, r);
            return FALSE;
          }
      }
  return TRUE;
}

