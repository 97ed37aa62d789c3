/* The trace reader: validates the schema, reads all metadata at open and
 * rows on demand.  Fields are matched by name, so files of a later minor
 * version (extra trailing fields) read fine, and the fields an earlier one
 * lacks read as their sp_trace_row_init() value.
 *
 * Files come from other machines and other tools, so nothing is read
 * before its structure is checked: every attribute and dataset must have
 * the schema's datatype (H5Tequal against the type this reader converts
 * to, not merely the same class), the schema's dataspace (scalar
 * attributes, 1-D tables), and a declared size the file can hold; and
 * nothing is allocated for a size that fails those checks (the checks:
 * trace-check.c, trace-heap.c).  Besides guarding our own buffers, this
 * keeps corrupt files away from the parts of libhdf5 1.10 known to crash
 * on them (README, "Corrupt and hostile traces"). */
#include "config.h"
#include "trace-private.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

struct _SpTrace {
  char *path;
  hid_t file;
  SpTraceCheck chk;            /* what the structural checks need */
  SpTraceHeaps *heaps;         /* the file's global heaps, while opening */
  GHashTable *walked;          /* path → WALKED | the SP_WALK_* parts walked, while
                                  opening */
  hid_t ops;
  hid_t row_mem_type;          /* only the fields the file has, or the packed type */
  gboolean packed;             /* the file's row type is exactly ours: unpack ourselves */
  gboolean *row_present;       /* per SP_TRACE_ROW_FIELDS field: in the file */
  gboolean rows_lack_fields;   /* some row field is absent (an older minor version) */
  guint64 n_rows;
  guint major, minor;
  SpTraceHeader header;
  gboolean complete;
  const char *incomplete_reason;
  GStringChunk *strings;       /* every string handed out */
  GHashTable *software;        /* key → value (in `strings`) */
  GPtrArray *software_keys;    /* NULL-terminated */
  GArray *env, *nodes, *ranks; /* SpTraceEnv, SpTraceNode, SpTraceRank */
  GArray *families, *groups;   /* SpTraceFamilyRec, SpTraceGroupRec */
  GArray *group_index;         /* guint32 per group: index in its family */
  GArray *members;             /* guint32 */
  const char *plan_text, *plan_digest, *topo_text, *topo_digest;
};


/* `s` in the trace's string chunk, as valid UTF-8: the schema's strings
 * are ASCII or UTF-8, and what a damaged or hostile file holds instead
 * reaches JSON and text output as U+FFFD, not as bytes that make it
 * invalid. */
static char *
insert_text (SpTrace *t, const char *s)
{
  if (g_utf8_validate (s, -1, NULL))
    return g_string_chunk_insert (t->strings, s);
  g_autofree char *valid = g_utf8_make_valid (s, -1);
  return g_string_chunk_insert (t->strings, valid);
}

/* A string attribute (variable- or fixed-length, ASCII or UTF-8, one
 * element), copied into trace->strings.  NULL with *error set when absent,
 * not a single string or too long. */
static const char *
read_str_attr (SpTrace *t, hid_t loc, const char *where, const char *name, gboolean required,
               GError **error)
{
  if (H5Aexists (loc, name) <= 0)
    {
      if (required)
        g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                     "%s: missing attribute %s on %s", t->path, name, where);
      H5Eclear2 (H5E_DEFAULT);
      return NULL;
    }
  hid_t a = H5Aopen (loc, name, H5P_DEFAULT);
  hid_t ftype = a < 0 ? H5I_INVALID_HID : H5Aget_type (a);
  hid_t space = a < 0 ? H5I_INVALID_HID : H5Aget_space (a);
  const char *result = NULL;
  H5T_cset_t cset = ftype < 0 ? H5T_CSET_ERROR : H5Tget_cset (ftype);
  gsize size = ftype < 0 ? 0 : H5Tget_size (ftype);
  htri_t var = ftype < 0 ? -1 : H5Tis_variable_str (ftype);
  if (ftype < 0 || H5Tget_class (ftype) != H5T_STRING || var < 0)
    g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                 "%s: attribute %s of %s is %s, expected a string", t->path, name, where,
                 ftype >= 0 ? sp_trace_class_name (H5Tget_class (ftype)) : "unreadable");
  else if (!sp_trace_space_is_single (space))
    {
      g_autofree char *what = sp_trace_describe_space (space, "strings");
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                   "%s: attribute %s of %s is %s, expected one string", t->path, name, where,
                   what);
    }
  else if (cset != H5T_CSET_ASCII && cset != H5T_CSET_UTF8)
    g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                 "%s: attribute %s of %s has character set %d, expected ASCII or UTF-8",
                 t->path, name, where, (int) cset);
  else if (!var && (size == 0 || size > SP_TRACE_MAX_STR_ATTR_BYTES || size > t->chk.file_size))
    g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                 "%s: attribute %s of %s is a string of %" G_GSIZE_FORMAT " bytes, more than "
                 "the %d a trace allows", t->path, name, where, size, SP_TRACE_MAX_STR_ATTR_BYTES);
  else
    {
      if (var)
        {
          /* The file's own type: HDF5 does not convert ASCII <-> UTF-8. */
          hid_t mtype = H5Tcopy (ftype);
          char *value = NULL;
          if (H5Aread (a, mtype, &value) >= 0)
            result = insert_text (t, value ? value : "");
          if (value)
            H5free_memory (value);
          H5Tclose (mtype);
        }
      else
        {
          g_autofree char *buf = g_malloc0 (size + 1);
          hid_t mtype = H5Tcopy (H5T_C_S1);
          H5Tset_size (mtype, size + 1);
          H5Tset_strpad (mtype, H5T_STR_NULLTERM);
          H5Tset_cset (mtype, cset);
          if (H5Aread (a, mtype, buf) >= 0)
            result = insert_text (t, buf);
          H5Tclose (mtype);
        }
      if (result == NULL)
        sp_trace_h5_error (error, SP_ERROR_INVALID_TRACE, "%s: cannot read attribute %s of %s",
                           t->path, name, where);
    }
  if (space >= 0)
    H5Sclose (space);
  if (ftype >= 0)
    H5Tclose (ftype);
  if (a >= 0)
    H5Aclose (a);
  H5Eclear2 (H5E_DEFAULT);
  return result;
}

/* A scalar integer attribute of the root (any integer type of at most 64
 * bits, read as a 64-bit one and range-checked, so a file whose writer
 * chose another width still reads). */
static gboolean
read_uint_attr (SpTrace *t, const char *name, guint32 *out, GError **error)
{
  if (H5Aexists (t->file, name) <= 0)
    {
      H5Eclear2 (H5E_DEFAULT);
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: missing attribute %s on /",
                   t->path, name);
      return FALSE;
    }
  hid_t a = H5Aopen (t->file, name, H5P_DEFAULT);
  hid_t ftype = a < 0 ? H5I_INVALID_HID : H5Aget_type (a);
  hid_t space = a < 0 ? H5I_INVALID_HID : H5Aget_space (a);
  gboolean ok = FALSE;
  if (ftype < 0 || H5Tget_class (ftype) != H5T_INTEGER || H5Tget_size (ftype) > 8)
    {
      g_autofree char *what = ftype >= 0 ? sp_trace_describe_type (ftype) : g_strdup ("unreadable");
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                   "%s: attribute %s is %s, expected an integer of at most 64 bits", t->path,
                   name, what);
    }
  else if (!sp_trace_space_is_single (space))
    {
      g_autofree char *what = sp_trace_describe_space (space, "integers");
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                   "%s: attribute %s is %s, expected one integer", t->path, name, what);
    }
  else
    {
      gboolean is_signed = H5Tget_sign (ftype) != H5T_SGN_NONE;
      gint64 s = 0;
      guint64 u = 0;
      if (H5Aread (a, is_signed ? H5T_NATIVE_INT64 : H5T_NATIVE_UINT64,
                   is_signed ? (void *) &s : (void *) &u) < 0)
        sp_trace_h5_error (error, SP_ERROR_INVALID_TRACE, "%s: cannot read attribute %s",
                           t->path, name);
      else if ((is_signed && (s < 0 || s > G_MAXUINT32)) || (!is_signed && u > G_MAXUINT32))
        {
          if (is_signed)
            g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                         "%s: attribute %s is %" G_GINT64_FORMAT ", expected 0..%u", t->path,
                         name, s, G_MAXUINT32);
          else
            g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                         "%s: attribute %s is %" G_GUINT64_FORMAT ", expected 0..%u", t->path,
                         name, u, G_MAXUINT32);
        }
      else
        {
          *out = (guint32) (is_signed ? (guint64) s : u);
          ok = TRUE;
        }
    }
  if (space >= 0)
    H5Sclose (space);
  if (ftype >= 0)
    H5Tclose (ftype);
  if (a >= 0)
    H5Aclose (a);
  H5Eclear2 (H5E_DEFAULT);
  return ok;
}

/* The link `name` (in a group walked with SP_WALK_LINKS): 1 with its
 * target's object header address in *addr, 0 when there is none, -1
 * with *error set when it cannot be read or is not a hard link.  A trace
 * is one file of hard links: libhdf5 follows a soft link wherever it
 * points (through groups no walk read) and an external one into another
 * file.  The group's walk refused external and user-defined links
 * already (an empty one crashes H5Lget_info itself); H5Lget_info tells a
 * soft one without following it, and reads the address from the link,
 * where H5Oget_info_by_name would have libhdf5 load the object's header,
 * allocating the size it declares (a damaged one: terabytes), before the
 * walk could check it.  (Since 1.12 an address is a token of the file's
 * connector; the native one's holds the header address.) */
static int
hard_link (SpTrace *t, const char *name, haddr_t *addr, GError **error)
{
  htri_t e = H5Lexists (t->file, name, H5P_DEFAULT);
  if (e <= 0)
    {
      H5Eclear2 (H5E_DEFAULT);
      return 0;
    }
#if H5_VERSION_GE(1, 12, 0)
  H5L_info2_t info;
  gboolean got = H5Lget_info2 (t->file, name, &info, H5P_DEFAULT) >= 0;
#else
  H5L_info_t info;
  gboolean got = H5Lget_info (t->file, name, &info, H5P_DEFAULT) >= 0;
#endif
  if (got && info.type != H5L_TYPE_HARD)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                   "%s: %s is %s link; a trace is one file of hard links", t->path, name,
                   info.type == H5L_TYPE_SOFT ? "a soft" : info.type == H5L_TYPE_EXTERNAL
                                                             ? "an external" : "a user-defined");
      return -1;
    }
#if H5_VERSION_GE(1, 12, 0)
  got = got && H5VLnative_token_to_addr (t->file, info.u.token, addr) >= 0;
#else
  if (got)
    *addr = info.u.address;
#endif
  if (!got || *addr == HADDR_UNDEF)
    {
      sp_trace_h5_error (error, SP_ERROR_INVALID_TRACE, "%s: cannot read the link %s", t->path,
                         name);
      return -1;
    }
  return 1;
}

/* Walk the object header of `path` at `addr` before libhdf5 decodes it
 * (sp_trace_heaps_check_header): its layout and datatype, and as `what`
 * says its string attributes against the global heaps and its links. */
#define WALKED 4u
static gboolean
walk_at (SpTrace *t, const char *path, haddr_t addr, guint what, GError **error)
{
  /* once an object: a group is on the way to several datasets */
  guint done = GPOINTER_TO_UINT (g_hash_table_lookup (t->walked, path));
  if ((done & WALKED) && (done & what) == what)
    return TRUE;
  if (!sp_trace_heaps_check_header (t->heaps, addr, path, what, error))
    return FALSE;
  g_hash_table_insert (t->walked, g_strdup (path), GUINT_TO_POINTER (done | what | WALKED));
  return TRUE;
}

/* walk_at() for `path`, found: the root's header address from the object
 * (H5Fopen has read that header, after sp_trace_open walked it), any
 * other's from its link (hard_link). */
static gboolean
walk_one (SpTrace *t, const char *path, guint what, GError **error)
{
  haddr_t addr = HADDR_UNDEF;
  gboolean got;
  if (strcmp (path, "/") == 0)
    {
#if H5_VERSION_GE(1, 12, 0)
      H5O_info2_t info;
      got = H5Oget_info_by_name3 (t->file, path, &info, H5O_INFO_BASIC, H5P_DEFAULT) >= 0
            && H5VLnative_token_to_addr (t->file, info.token, &addr) >= 0;
#else
      H5O_info_t info;
      got = H5Oget_info_by_name2 (t->file, path, &info, H5O_INFO_BASIC, H5P_DEFAULT) >= 0;
      if (got)
        addr = info.addr;
#endif
    }
  else
    {
      int e = hard_link (t, path, &addr, error);
      if (e < 0)
        return FALSE;
      got = e > 0;
    }
  if (!got || addr == HADDR_UNDEF)
    {
      /* libhdf5 may still open the object and read its attributes (with
       * the references this check is for): refuse it here */
      sp_trace_h5_error (error, SP_ERROR_INVALID_TRACE, "%s: cannot read the object header of %s",
                         t->path, path);
      return FALSE;
    }
  return walk_at (t, path, addr, what, error);
}

/* The groups on the way to `path` walked (walk_at), each once it is
 * known to exist as a hard link: libhdf5 looks every name of a path up
 * through its group's links, and damaged dense link storage crashed
 * H5Lexists.  TRUE at the first missing group (the caller reports what
 * is missing). */
static gboolean
walk_groups_to (SpTrace *t, const char *path, GError **error)
{
  const char *slash = path[0] == '/' ? strchr (path + 1, '/') : NULL;
  for (; slash != NULL; slash = strchr (slash + 1, '/'))
    {
      g_autofree char *group = g_strndup (path, (gsize) (slash - path));
      haddr_t addr;
      int e = hard_link (t, group, &addr, error);
      if (e <= 0)
        return e == 0;
      if (!walk_at (t, group, addr, SP_WALK_LINKS, error))
        return FALSE;
    }
  return TRUE;
}

/* Whether `path` exists as a hard link, its groups walked first; -1 with
 * *error set on a damaged one or another kind of link. */
static int
path_exists (SpTrace *t, const char *path, GError **error)
{
  if (!walk_groups_to (t, path, error))
    return -1;
  haddr_t addr;
  return strcmp (path, "/") == 0 ? 1 : hard_link (t, path, &addr, error);
}

static gboolean
check_header_of (SpTrace *t, const char *path, guint what, GError **error)
{
  return walk_groups_to (t, path, error) && walk_one (t, path, what, error);
}

static gboolean
read_root (SpTrace *t, GError **error)
{
  if (!check_header_of (t, "/", SP_WALK_ATTRS | SP_WALK_LINKS, error))
    return FALSE;
  GError *local = NULL;
  const char *schema = read_str_attr (t, t->file, "/", "schema", FALSE, &local);
  if (local)
    {
      g_propagate_error (error, local);
      return FALSE;
    }
  if (schema == NULL || strcmp (schema, SP_TRACE_SCHEMA_NAME) != 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                   "%s: not a shardplan trace (root attribute schema is %s%s%s, expected '%s')",
                   t->path, schema ? "'" : "", schema ? schema : "missing", schema ? "'" : "",
                   SP_TRACE_SCHEMA_NAME);
      return FALSE;
    }
  const char *version = read_str_attr (t, t->file, "/", "schema_version", TRUE, error);
  if (version == NULL)
    return FALSE;
  g_auto (GStrv) parts = g_strsplit (version, ".", -1);
  guint64 major = 0, minor = 0;
  if (g_strv_length (parts) != 2
      || !g_ascii_string_to_unsigned (parts[0], 10, 0, 1000, &major, NULL)
      || !g_ascii_string_to_unsigned (parts[1], 10, 0, 1000000, &minor, NULL))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                   "%s: schema_version '%s' is not MAJOR.MINOR", t->path, version);
      return FALSE;
    }
  if (major != SP_TRACE_SCHEMA_MAJOR)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                   "%s: schema version %s is %s than this shardplan reads (%d.x)", t->path,
                   version, major > SP_TRACE_SCHEMA_MAJOR ? "newer" : "older",
                   SP_TRACE_SCHEMA_MAJOR);
      return FALSE;
    }
  t->major = t->chk.major = (guint) major;
  t->minor = t->chk.minor = (guint) minor;

  SpTraceHeader *h = &t->header;
  const char *source, *unit;
  guint32 complete = 0;
  if (!(h->run_id = read_str_attr (t, t->file, "/", "run_id", TRUE, error))
      || !(h->created_utc = read_str_attr (t, t->file, "/", "created_utc", TRUE, error))
      || !(source = read_str_attr (t, t->file, "/", "source", TRUE, error))
      || !(h->producer = read_str_attr (t, t->file, "/", "producer", TRUE, error))
      || !(h->producer_version = read_str_attr (t, t->file, "/", "producer_version", TRUE, error))
      || !(unit = read_str_attr (t, t->file, "/", "time_unit", TRUE, error))
      || !(h->clock = read_str_attr (t, t->file, "/", "clock", TRUE, error))
      || !(h->timing_mode = read_str_attr (t, t->file, "/", "timing_mode", TRUE, error))
      || !read_uint_attr (t, "warmup_iters", &h->warmup_iters, error)
      || !read_uint_attr (t, "iters", &h->iters, error)
      || !read_uint_attr (t, "world_size", &h->world_size, error)
      || !read_uint_attr (t, "complete", &complete, error))
    return FALSE;
  if (strcmp (source, "measured") == 0)
    h->source = SP_TRACE_SOURCE_MEASURED;
  else if (strcmp (source, "simulated") == 0)
    h->source = SP_TRACE_SOURCE_SIMULATED;
  else
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                   "%s: source '%s' is neither 'measured' nor 'simulated'", t->path, source);
      return FALSE;
    }
  if (strcmp (unit, "ns") != 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                   "%s: time_unit '%s' is not 'ns'", t->path, unit);
      return FALSE;
    }
  /* Optional (check_policy since 1.2), but refused when present and not one string. */
  h->check_policy = read_str_attr (t, t->file, "/", "check_policy", FALSE, &local);
  t->complete = complete != 0;
  if (!t->complete && local == NULL)
    {
      t->incomplete_reason = read_str_attr (t, t->file, "/", "incomplete_reason", FALSE, &local);
      if (t->incomplete_reason == NULL)
        t->incomplete_reason = "the writer did not finish";
    }
  if (local)
    {
      g_propagate_error (error, local);
      return FALSE;
    }
  return TRUE;
}

static herr_t
software_cb (hid_t loc, const char *name, const H5A_info_t *info, void *data)
{
  (void) info;
  SpTrace *t = data;
  const char *value = read_str_attr (t, loc, "/meta/software", name, TRUE, NULL);
  if (value)
    {
      char *key = insert_text (t, name);
      /* two names that differ only in bytes that are not UTF-8 read as one
       * (U+FFFD): the first stays, listed once */
      if (!g_hash_table_contains (t->software, key))
        {
          g_hash_table_insert (t->software, key, (gpointer) value);
          g_ptr_array_add (t->software_keys, key);
        }
    }
  return 0;
}

/* Open dataset `path` once its object header is walked (check_header_of;
 * `attrs`: its string attributes too, for a caller that reads them). */
static hid_t
open_dataset (SpTrace *t, const char *path, gboolean attrs, GError **error)
{
  int exists = path_exists (t, path, error);
  if (exists < 0)
    return H5I_INVALID_HID;
  if (exists == 0 || H5Oexists_by_name (t->file, path, H5P_DEFAULT) <= 0)
    {
      H5Eclear2 (H5E_DEFAULT);
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: missing dataset %s", t->path,
                   path);
      return H5I_INVALID_HID;
    }
  /* its object header walked first: a layout libhdf5 would divide by zero
   * opening (T13), a datatype it would decode past its end (T14) */
  if (!check_header_of (t, path, attrs ? SP_WALK_ATTRS : 0, error))
    return H5I_INVALID_HID;
  hid_t d = H5Dopen2 (t->file, path, H5P_DEFAULT);
  if (d < 0)
    sp_trace_h5_error (error, SP_ERROR_INVALID_TRACE, "%s: %s is not a readable dataset",
                       t->path, path);
  return d;
}

/* Open table->path and check it is a 1-D compound with the table's fields
 * (check_record_type) and at most `max_rows` rows the file can hold: the
 * memory type of the fields present goes to *out_mtype and the row count
 * to *out_n. */
static hid_t
open_table (SpTrace *t, const SpTraceTable *table, guint64 max_rows, hid_t *out_mtype,
            guint64 *out_n, gboolean **out_present, GError **error)
{
  hid_t d = open_dataset (t, table->path, FALSE, error);
  if (d < 0)
    return H5I_INVALID_HID;
  hid_t ftype = H5Dget_type (d);
  g_autofree gboolean *present = g_new0 (gboolean, table->n_fields);
  guint64 n = 0;
  gboolean ok = ftype >= 0 && sp_trace_check_record (&t->chk, table, ftype, present, error)
                && sp_trace_check_extent (&t->chk, d, table->path, FALSE, H5Tget_size (ftype),
                                          max_rows, &n, error);
  if (ftype < 0)
    sp_trace_h5_error (error, SP_ERROR_INVALID_TRACE, "%s: cannot read the type of %s",
                       t->path, table->path);
  hid_t mtype = ok ? sp_trace_h5_table_mem_type (table, present, ftype) : H5I_INVALID_HID;
  if (ftype >= 0)
    H5Tclose (ftype);
  if (ok && mtype < 0)
    {
      sp_trace_h5_error (error, SP_ERROR_INVALID_TRACE, "%s: cannot read %s", t->path,
                         table->path);
      ok = FALSE;
    }
  if (!ok)
    {
      H5Dclose (d);
      H5Eclear2 (H5E_DEFAULT);
      return H5I_INVALID_HID;
    }
  *out_mtype = mtype;
  *out_n = n;
  if (out_present)
    *out_present = g_steal_pointer (&present);
  return d;
}

/* Read a whole small table into a new GArray of records, strings copied into
 * trace->strings. */
static GArray *
read_table (SpTrace *t, const SpTraceTable *table, GError **error)
{
  hid_t mtype = H5I_INVALID_HID;
  guint64 n = 0;
  hid_t d = open_table (t, table, SP_TRACE_MAX_TABLE_ROWS, &mtype, &n, NULL, error);
  if (d < 0)
    return NULL;
  hid_t ftype = H5Dget_type (d);
  gboolean refs_ok =
      ftype >= 0 && sp_trace_check_string_refs (&t->chk, d, ftype, table->path, n, error);
  if (ftype >= 0)
    H5Tclose (ftype);
  else
    sp_trace_h5_error (error, SP_ERROR_INVALID_TRACE, "%s: cannot read the type of %s",
                       t->path, table->path);
  if (!refs_ok)
    {
      H5Tclose (mtype);
      H5Dclose (d);
      return NULL;
    }
  /* n <= SP_TRACE_MAX_TABLE_ROWS: fits a guint, and n × record_size a gsize. */
  GArray *a = g_array_sized_new (FALSE, TRUE, table->record_size, (guint) n);
  g_array_set_size (a, (guint) n);
  herr_t rc = n == 0 ? 0 : H5Dread (d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, a->data);
  if (rc < 0)
    {
      sp_trace_h5_error (error, SP_ERROR_INVALID_TRACE, "%s: cannot read %s", t->path,
                         table->path);
      g_array_unref (a);
      a = NULL;
    }
  else
    {
      /* Move HDF5-allocated strings into our chunk, then free them. */
      g_autofree char **copies = g_new0 (char *, table->n_fields * n + 1);
      gsize nc = 0;
      for (guint64 r = 0; r < n; r++)
        for (gsize i = 0; i < table->n_fields; i++)
          if (table->fields[i].kind == SP_TRACE_KIND_STR)
            {
              char **p = (char **) (a->data + r * table->record_size + table->fields[i].offset);
              copies[nc++] = insert_text (t, *p ? *p : "");
            }
      sp_trace_h5_reclaim (mtype, n, a->data);
      nc = 0;
      for (guint64 r = 0; r < n; r++)
        for (gsize i = 0; i < table->n_fields; i++)
          if (table->fields[i].kind == SP_TRACE_KIND_STR)
            *(char **) (a->data + r * table->record_size + table->fields[i].offset) = copies[nc++];
    }
  H5Tclose (mtype);
  H5Dclose (d);
  return a;
}

/* Optional scalar string dataset with a digest (/meta/plan, /meta/topology). */
static gboolean
read_text (SpTrace *t, const char *path, const char **out_text, const char **out_digest,
           GError **error)
{
  int exists = path_exists (t, path, error);
  if (exists <= 0)
    return exists == 0;
  hid_t d = open_dataset (t, path, TRUE, error);
  if (d < 0)
    return FALSE;
  hid_t ftype = H5Dget_type (d);
  gboolean ok = FALSE;
  guint64 n = 0;
  H5T_cset_t cset = H5Tget_cset (ftype);
  /* Exactly a string type libhdf5 writes (H5Tequal also compares the
   * characters' type, whose damaged size libhdf5 would multiply lengths by). */
  hid_t want = sp_trace_h5_string_type ();
  if (cset == H5T_CSET_ASCII)
    H5Tset_cset (want, H5T_CSET_ASCII);
  htri_t same = H5Tequal (ftype, want);
  H5Tclose (want);
  H5Eclear2 (H5E_DEFAULT);
  if (H5Tget_class (ftype) == H5T_STRING && H5Tis_variable_str (ftype) > 0
      && (cset == H5T_CSET_ASCII || cset == H5T_CSET_UTF8) && same > 0)
    {
      /* The file's own type: HDF5 does not convert ASCII <-> UTF-8. */
      hid_t mtype = H5Tcopy (ftype);
      char *value = NULL;
      if (!sp_trace_check_extent (&t->chk, d, path, TRUE, H5Tget_size (ftype), 1, &n, error)
          || !sp_trace_check_string_refs (&t->chk, d, ftype, path, n, error))
        ;
      else if (H5Dread (d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, &value) >= 0)
        {
          *out_text = g_string_chunk_insert (t->strings, value ? value : "");
          ok = (*out_digest = read_str_attr (t, d, path, "digest", TRUE, error)) != NULL;
        }
      else
        sp_trace_h5_error (error, SP_ERROR_INVALID_TRACE, "%s: cannot read %s", t->path, path);
      if (value)
        H5free_memory (value);
      H5Tclose (mtype);
    }
  else if (H5Tget_class (ftype) == H5T_STRING && H5Tis_variable_str (ftype) > 0)
    g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                 "%s: %s is a variable-length string of a damaged or unknown type (character "
                 "set %d), expected ASCII or UTF-8 one-byte characters", t->path, path,
                 (int) cset);
  else
    {
      g_autofree char *what = sp_trace_describe_type (ftype);
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                   "%s: %s is %s, expected a variable-length string", t->path, path, what);
    }
  H5Tclose (ftype);
  H5Dclose (d);
  return ok;
}

static gboolean
read_groups (SpTrace *t, GError **error)
{
  if (!(t->families = read_table (t, &sp_trace_table_families, error))
      || !(t->groups = read_table (t, &sp_trace_table_groups, error)))
    return FALSE;
  hid_t d = open_dataset (t, "/groups/members", FALSE, error);
  if (d < 0)
    return FALSE;
  hid_t ftype = H5Dget_type (d);
  guint64 n = 0;
  gboolean ok = FALSE;
  if (ftype < 0 || H5Tequal (ftype, H5T_STD_U32LE) <= 0)
    {
      g_autofree char *what = ftype < 0 ? g_strdup ("unreadable") : sp_trace_describe_type (ftype);
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                   "%s: /groups/members is %s, expected an unsigned 32-bit little-endian integer",
                   t->path, what);
    }
  else if (sp_trace_check_extent (&t->chk, d, "/groups/members", FALSE, sizeof (guint32),
                                  SP_TRACE_MAX_TABLE_ROWS, &n, error))
    {
      /* n <= SP_TRACE_MAX_TABLE_ROWS: fits a guint. */
      ok = TRUE;
      t->members = g_array_sized_new (FALSE, TRUE, sizeof (guint32), (guint) n);
      g_array_set_size (t->members, (guint) n);
      if (n > 0
          && H5Dread (d, H5T_NATIVE_UINT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, t->members->data) < 0)
        {
          sp_trace_h5_error (error, SP_ERROR_INVALID_TRACE, "%s: cannot read /groups/members",
                             t->path);
          ok = FALSE;
        }
    }
  if (ftype >= 0)
    H5Tclose (ftype);
  H5Dclose (d);
  H5Eclear2 (H5E_DEFAULT);
  if (!ok)
    return FALSE;
  /* Check the CSR and number the groups within their families. */
  t->group_index = g_array_sized_new (FALSE, TRUE, sizeof (guint32), t->groups->len);
  g_autoptr (GHashTable) counts = g_hash_table_new (NULL, NULL);
  for (guint i = 0; i < t->families->len; i++)
    g_hash_table_insert (counts,
                         GUINT_TO_POINTER (g_array_index (t->families, SpTraceFamilyRec, i).family_id),
                         GUINT_TO_POINTER (1)); /* stored as count + 1 */
  for (guint g = 0; g < t->groups->len; g++)
    {
      const SpTraceGroupRec *gr = &g_array_index (t->groups, SpTraceGroupRec, g);
      gpointer c = g_hash_table_lookup (counts, GUINT_TO_POINTER (gr->family_id));
      if (gr->group_id != g || c == NULL || gr->members_count != gr->size
          || gr->members_offset > t->members->len
          || gr->members_count > t->members->len - gr->members_offset)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                       "%s: /groups/groups row %u is inconsistent (group_id %u, family %u, "
                       "members %" G_GUINT64_FORMAT "+%u of %u)",
                       t->path, g, gr->group_id, gr->family_id, gr->members_offset,
                       gr->members_count, t->members->len);
          return FALSE;
        }
      guint32 index = GPOINTER_TO_UINT (c) - 1;
      g_array_append_val (t->group_index, index);
      g_hash_table_insert (counts, GUINT_TO_POINTER (gr->family_id), GUINT_TO_POINTER (index + 2));
    }
  return TRUE;
}

static gboolean
read_all (SpTrace *t, GError **error)
{
  if (!read_root (t, error))
    return FALSE;
  int software = path_exists (t, "/meta/software", error);
  if (software < 0)
    return FALSE;
  if (software > 0)
    {
      if (!check_header_of (t, "/meta/software", SP_WALK_ATTRS, error))
        return FALSE;
      hid_t g = H5Gopen2 (t->file, "/meta/software", H5P_DEFAULT);
      if (g >= 0)
        {
          H5Aiterate2 (g, H5_INDEX_NAME, H5_ITER_INC, NULL, software_cb, t);
          H5Gclose (g);
        }
    }
  H5Eclear2 (H5E_DEFAULT);
  g_ptr_array_add (t->software_keys, NULL);
  if (!(t->env = read_table (t, &sp_trace_table_env, error))
      || !(t->nodes = read_table (t, &sp_trace_table_nodes, error))
      || !(t->ranks = read_table (t, &sp_trace_table_ranks, error))
      || !read_text (t, "/meta/plan", &t->plan_text, &t->plan_digest, error)
      || !read_text (t, "/meta/topology", &t->topo_text, &t->topo_digest, error)
      || !read_groups (t, error))
    return FALSE;
  /* Rows are read in batches, so /ops/ops is bounded by the file alone. */
  t->ops = open_table (t, &sp_trace_table_rows, G_MAXUINT64, &t->row_mem_type, &t->n_rows,
                       &t->row_present, error);
  if (t->ops < 0)
    return FALSE;
  for (gsize i = 0; i < sp_trace_table_rows.n_fields; i++)
    if (!t->row_present[i])
      t->rows_lack_fields = TRUE;
  /* A file of exactly this version's row type (the usual case) is read as
   * packed bytes and unpacked here: HDF5's member-by-member conversion is
   * several times slower. */
  if (sp_trace_can_pack (&sp_trace_table_rows))
    {
      hid_t ours = sp_trace_h5_table_type (&sp_trace_table_rows, TRUE, NULL);
      hid_t theirs = H5Dget_type (t->ops);
      if (H5Tequal (ours, theirs) > 0)
        {
          H5Tclose (t->row_mem_type);
          t->row_mem_type = H5Tcopy (ours);
          t->packed = TRUE;
        }
      H5Tclose (theirs);
      H5Tclose (ours);
    }
  return TRUE;
}

SpTrace *
sp_trace_open (const char *path, GError **error)
{
  g_return_val_if_fail (path != NULL, NULL);
  sp_trace_h5_init ();
  if (!g_file_test (path, G_FILE_TEST_EXISTS))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_IO, "%s: no such file", path);
      return NULL;
    }
  if (!g_file_test (path, G_FILE_TEST_IS_REGULAR))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_IO, "%s: not a regular file", path);
      return NULL;
    }
  htri_t is_h5 = H5Fis_hdf5 (path);
  if (is_h5 <= 0)
    {
      H5Eclear2 (H5E_DEFAULT);
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                   "%s: not an HDF5 file (a trace is written by 'shardplan sim' or "
                   "'shardplan run')", path);
      return NULL;
    }
  /* The root group's header, which H5Fopen loads (libhdf5's cache
   * allocates the size a header declares: a damaged one, terabytes), is
   * walked first, from the superblock read raw; the global heaps are
   * scanned with it.  Where libhdf5 then reads the superblock otherwise,
   * its reading stands and the scan is made again with it. */
  SpTraceSuper sb;
  SpTraceHeaps *heaps = NULL;
  struct stat st;
  int fd = open (path, O_RDONLY | O_CLOEXEC);
  gboolean raw = fd >= 0 && fstat (fd, &st) == 0 && st.st_size > 0
                 && sp_trace_super_read (fd, (guint64) st.st_size, &sb);
  if (fd >= 0)
    close (fd);
  if (raw)
    {
      heaps = sp_trace_heaps_scan (path, (guint64) st.st_size, sb.base, sb.addr_len, sb.size_len,
                                   error);
      if (heaps == NULL)
        return NULL;
      if (!sp_trace_heaps_check_header (heaps, sb.root, "/", 0, error))
        {
          sp_trace_heaps_free (heaps);
          return NULL;
        }
    }
  hid_t file = H5Fopen (path, H5F_ACC_RDONLY, H5P_DEFAULT);
  hsize_t file_size = 0;
  if (file < 0 || H5Fget_filesize (file, &file_size) < 0)
    {
      sp_trace_h5_error (error, SP_ERROR_INVALID_TRACE,
                         "%s: damaged or truncated HDF5 file", path);
      if (file >= 0)
        H5Fclose (file);
      g_clear_pointer (&heaps, sp_trace_heaps_free);
      return NULL;
    }
  /* Before anything reads a variable-length string (lib/trace-heap.c). */
  hid_t fcpl = H5Fget_create_plist (file);
  size_t sizeof_addr = 0, sizeof_size = 0;
  hsize_t user_block = 0;
  if (fcpl < 0 || H5Pget_sizes (fcpl, &sizeof_addr, &sizeof_size) < 0
      || H5Pget_userblock (fcpl, &user_block) < 0)
    {
      sp_trace_h5_error (error, SP_ERROR_INVALID_TRACE, "%s: damaged HDF5 superblock", path);
      if (fcpl >= 0)
        H5Pclose (fcpl);
      H5Fclose (file);
      g_clear_pointer (&heaps, sp_trace_heaps_free);
      return NULL;
    }
  H5Pclose (fcpl);
  if (heaps != NULL
      && (sb.base != user_block || sb.addr_len != sizeof_addr || sb.size_len != sizeof_size
          || (guint64) st.st_size != file_size))
    g_clear_pointer (&heaps, sp_trace_heaps_free);
  /* HDF5 addresses count from the superblock, after the user block */
  if (heaps == NULL)
    heaps = sp_trace_heaps_scan (path, file_size, user_block, (guint) sizeof_addr,
                                 (guint) sizeof_size, error);
  if (heaps == NULL)
    {
      H5Fclose (file);
      H5Eclear2 (H5E_DEFAULT);
      return NULL;
    }
  SpTrace *t = g_new0 (SpTrace, 1);
  t->path = g_strdup (path);
  t->heaps = heaps;
  t->chk.heaps = heaps;
  t->chk.path = t->path;
  t->chk.addr_len = (guint) sizeof_addr;
  t->file = file;
  t->chk.file_size = file_size;
  t->ops = t->row_mem_type = H5I_INVALID_HID;
  t->strings = g_string_chunk_new (4096);
  t->software = g_hash_table_new (g_str_hash, g_str_equal);
  t->software_keys = g_ptr_array_new ();
  t->walked = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  gboolean ok = read_all (t, error);
  t->chk.heaps = NULL; /* only the strings read at open need them */
  g_clear_pointer (&t->heaps, sp_trace_heaps_free);
  g_clear_pointer (&t->walked, g_hash_table_unref);
  if (!ok)
    {
      H5Eclear2 (H5E_DEFAULT);
      sp_trace_free (t);
      return NULL;
    }
  return t;
}

void
sp_trace_free (SpTrace *trace)
{
  if (trace == NULL)
    return;
  if (trace->row_mem_type >= 0)
    H5Tclose (trace->row_mem_type);
  if (trace->ops >= 0)
    H5Dclose (trace->ops);
  H5Fclose (trace->file);
  H5Eclear2 (H5E_DEFAULT);
  g_clear_pointer (&trace->env, g_array_unref);
  g_clear_pointer (&trace->nodes, g_array_unref);
  g_clear_pointer (&trace->ranks, g_array_unref);
  g_clear_pointer (&trace->families, g_array_unref);
  g_clear_pointer (&trace->groups, g_array_unref);
  g_clear_pointer (&trace->group_index, g_array_unref);
  g_clear_pointer (&trace->members, g_array_unref);
  g_hash_table_unref (trace->software);
  g_ptr_array_unref (trace->software_keys);
  g_string_chunk_free (trace->strings);
  g_free (trace->row_present);
  g_free (trace->path);
  g_free (trace);
}

const SpTraceHeader *
sp_trace_header (const SpTrace *trace)
{
  return &trace->header;
}

void
sp_trace_schema_version (const SpTrace *trace, guint *out_major, guint *out_minor)
{
  *out_major = trace->major;
  *out_minor = trace->minor;
}

gboolean
sp_trace_is_complete (const SpTrace *trace)
{
  return trace->complete;
}

const char *
sp_trace_incomplete_reason (const SpTrace *trace)
{
  return trace->complete ? NULL : trace->incomplete_reason;
}

const char *
sp_trace_software (const SpTrace *trace, const char *key)
{
  return g_hash_table_lookup (trace->software, key);
}

const char *const *
sp_trace_software_keys (const SpTrace *trace)
{
  return (const char *const *) trace->software_keys->pdata;
}

const SpTraceEnv *
sp_trace_env (const SpTrace *trace, gsize *out_n)
{
  *out_n = trace->env->len;
  return (const SpTraceEnv *) trace->env->data;
}

gsize
sp_trace_nccl_vars (const SpTrace *trace, const char ***out_names, const char ***out_values)
{
  g_return_val_if_fail (trace != NULL && out_names != NULL && out_values != NULL, 0);
  gsize n_env = 0, n = 0;
  const SpTraceEnv *env = sp_trace_env (trace, &n_env);
  const char **names = g_new0 (const char *, n_env + 1);
  const char **values = g_new0 (const char *, n_env + 1);
  g_autoptr (GHashTable) at = g_hash_table_new (g_str_hash, g_str_equal);
  for (gsize i = 0; i < n_env; i++)
    {
      if (env[i].key == NULL || env[i].value == NULL || !g_str_has_prefix (env[i].key, "NCCL_"))
        continue;
      gpointer j;
      if (g_hash_table_lookup_extended (at, env[i].key, NULL, &j))
        {
          values[GPOINTER_TO_SIZE (j)] = env[i].value;
          continue;
        }
      g_hash_table_insert (at, (gpointer) env[i].key, GSIZE_TO_POINTER (n));
      names[n] = env[i].key;
      values[n++] = env[i].value;
    }
  *out_names = names;
  *out_values = values;
  return n;
}

const SpTraceNode *
sp_trace_nodes (const SpTrace *trace, gsize *out_n)
{
  *out_n = trace->nodes->len;
  return (const SpTraceNode *) trace->nodes->data;
}

const SpTraceRank *
sp_trace_ranks (const SpTrace *trace, gsize *out_n)
{
  *out_n = trace->ranks->len;
  return (const SpTraceRank *) trace->ranks->data;
}

const char *
sp_trace_plan_text (const SpTrace *trace)
{
  return trace->plan_text;
}

const char *
sp_trace_plan_digest (const SpTrace *trace)
{
  return trace->plan_digest;
}

const char *
sp_trace_topology_text (const SpTrace *trace)
{
  return trace->topo_text;
}

const char *
sp_trace_topology_digest (const SpTrace *trace)
{
  return trace->topo_digest;
}

guint32
sp_trace_n_families (const SpTrace *trace)
{
  return trace->families->len;
}

void
sp_trace_family (const SpTrace *trace, guint32 i, guint32 *out_family_id, const char **out_name)
{
  g_return_if_fail (i < trace->families->len);
  const SpTraceFamilyRec *f = &g_array_index (trace->families, SpTraceFamilyRec, i);
  if (out_family_id)
    *out_family_id = f->family_id;
  if (out_name)
    *out_name = f->name;
}

const char *
sp_trace_family_name (const SpTrace *trace, guint32 family_id)
{
  for (guint i = 0; i < trace->families->len; i++)
    if (g_array_index (trace->families, SpTraceFamilyRec, i).family_id == family_id)
      return g_array_index (trace->families, SpTraceFamilyRec, i).name;
  return NULL;
}

guint32
sp_trace_n_groups (const SpTrace *trace)
{
  return trace->groups->len;
}

gboolean
sp_trace_group_info (const SpTrace *trace, guint32 group_id, guint32 *out_family_id,
                     guint32 *out_index)
{
  if (group_id >= trace->groups->len)
    return FALSE;
  if (out_family_id)
    *out_family_id = g_array_index (trace->groups, SpTraceGroupRec, group_id).family_id;
  if (out_index)
    *out_index = g_array_index (trace->group_index, guint32, group_id);
  return TRUE;
}

const guint32 *
sp_trace_group_members (const SpTrace *trace, guint32 group_id, guint32 *out_size)
{
  if (group_id >= trace->groups->len)
    return NULL;
  const SpTraceGroupRec *g = &g_array_index (trace->groups, SpTraceGroupRec, group_id);
  *out_size = g->members_count;
  return &g_array_index (trace->members, guint32, g->members_offset);
}

guint64
sp_trace_n_rows (const SpTrace *trace)
{
  return trace->n_rows;
}

gboolean
sp_trace_read_rows (SpTrace *trace, guint64 start, gsize n, SpTraceRow *out, GError **error)
{
  if (start > trace->n_rows || n > trace->n_rows - start)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
                   "%s: rows %" G_GUINT64_FORMAT "..+%zu are past the end (%" G_GUINT64_FORMAT
                   " rows)", trace->path, start, n, trace->n_rows);
      return FALSE;
    }
  if (n == 0)
    return TRUE;
  memset (out, 0, n * sizeof *out);
  /* n rows fit the caller's `out`, so n × the (smaller) packed size fits a gsize. */
  g_autofree guint8 *packed =
      trace->packed ? g_malloc_n (n, sp_trace_packed_size (&sp_trace_table_rows)) : NULL;
  hsize_t off[1] = { start }, count[1] = { n };
  hid_t fspace = H5Dget_space (trace->ops);
  hid_t mspace = H5Screate_simple (1, count, NULL);
  herr_t rc = H5Sselect_hyperslab (fspace, H5S_SELECT_SET, off, NULL, count, NULL);
  if (rc >= 0)
    rc = H5Dread (trace->ops, trace->row_mem_type, mspace, fspace, H5P_DEFAULT,
                  packed ? (void *) packed : (void *) out);
  H5Sclose (mspace);
  H5Sclose (fspace);
  if (rc >= 0 && packed)
    sp_trace_unpack (&sp_trace_table_rows, packed, n, out);
  if (rc >= 0 && trace->rows_lack_fields)
    {
      /* An older minor version: the fields it lacks get their defaults. */
      SpTraceRow def;
      sp_trace_row_init (&def);
      const SpTraceField *fields = sp_trace_table_rows.fields;
      for (gsize i = 0; i < sp_trace_table_rows.n_fields; i++)
        if (!trace->row_present[i])
          {
            gsize size = sp_trace_kind_csize (fields[i].kind);
            for (gsize r = 0; r < n; r++)
              memcpy ((guint8 *) &out[r] + fields[i].offset, (const guint8 *) &def + fields[i].offset,
                      size);
          }
    }
  if (rc < 0)
    {
      sp_trace_h5_error (error, SP_ERROR_INVALID_TRACE,
                         "%s: cannot read rows %" G_GUINT64_FORMAT "..+%zu of /ops/ops",
                         trace->path, start, n);
      return FALSE;
    }
  return TRUE;
}
