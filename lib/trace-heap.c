/* Check the HDF5 global heap collections of a file before libhdf5 reads
 * them.  The trace's strings are variable-length, which HDF5 keeps in
 * global heap collections ("GCOL"), and libhdf5 1.10.8 trusts their
 * contents: an object whose size runs past its collection makes H5HG_read
 * copy gigabytes (memcpy overlap, SIGSEGV), a free-space object of size 0
 * makes the collection loader loop forever (the command hangs), and a
 * collection size larger than the file is allocated as it stands.  Nothing
 * in HDF5's API lists the collections, so the file is scanned for their
 * signature: 8 fixed bytes ("GCOL", version 1, three zero bytes) that
 * compressed /ops/ops chunks or text do not plausibly contain.  Format: the
 * HDF5 File Format Specification version 2, section III.E "Global Heap". */
#include "config.h"
#include "trace-private.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* Bytes read at a time while looking for signatures. */
#define SCAN_BLOCK (4u << 20)
/* Collection header: signature, version, 3 reserved, then its size. */
#define GCOL_PREFIX 8
/* The smallest collection libhdf5 writes (H5HG_MINSIZE). */
#define GCOL_MIN_SIZE 4096

struct _SpTraceHeaps {
  GHashTable *collections; /* HDF5 address → GArray of guint64: object size by index
                              (G_MAXUINT64: no such object) */
  char *path;
  SpTraceRaw raw;          /* the file, kept open for the header walks */
};

static gsize
pad8 (gsize n)
{
  return (n + 7) & ~(gsize) 7;
}

/* Check the collection at `pos` (its 8-byte prefix already matched). */
static gboolean
check_collection (SpTraceHeaps *heaps, const char *path, int fd, guint64 pos, guint64 file_size,
                  guint size_len, GError **error)
{
  guint8 hdr[GCOL_PREFIX + 8];
  guint hdr_len = GCOL_PREFIX + size_len;
  if (pos > file_size || file_size - pos < hdr_len
      || pread (fd, hdr, hdr_len, (off_t) pos) != (ssize_t) hdr_len)
    return TRUE; /* a signature in the last bytes: HDF5 cannot load it either */
  guint64 size = sp_trace_le (hdr + GCOL_PREFIX, size_len);
  if (size < GCOL_MIN_SIZE || size > file_size - pos)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                   "%s: damaged HDF5 global heap at byte %" G_GUINT64_FORMAT " (collection "
                   "size %" G_GUINT64_FORMAT ", file %" G_GUINT64_FORMAT " bytes)",
                   path, pos, size, file_size);
      return FALSE;
    }
  if (pos < heaps->raw.base)
    return TRUE; /* in the user block: no HDF5 address reaches it */
  g_autofree guint8 *c = g_malloc (size);
  if (pread (fd, c, size, (off_t) pos) != (ssize_t) size)
    {
      int e = errno;
      g_set_error (error, SP_ERROR, SP_ERROR_IO, "%s: cannot read: %s", path, g_strerror (e));
      return FALSE;
    }
  /* Objects as libhdf5's loader walks them (H5HG__cache_heap_deserialize):
   * after the collection's header, index (2), reference count (2),
   * reserved (4), size (size_len), data; headers and data each padded to
   * 8 bytes (H5HG_ALIGN: lengths of fewer than 8 bytes leave a gap); index
   * 0 is free space, whose size counts its header.  The loader stops where
   * no header fits. */
  guint obj_hdr = pad8 (8 + size_len);
  guint64 p = pad8 (hdr_len);
  GArray *sizes = g_array_new (FALSE, FALSE, sizeof (guint64));
  guint64 *key = g_new (guint64, 1);
  *key = pos - heaps->raw.base; /* references hold HDF5 addresses */
  g_hash_table_replace (heaps->collections, key, sizes);
  while (size - p >= obj_hdr)
    {
      guint idx = (guint) sp_trace_le (c + p, 2);
      guint64 osize = sp_trace_le (c + p + 8, size_len);
      guint64 room = size - p;
      guint64 need;
      if (idx == 0)
        need = osize >= obj_hdr ? osize : 0;
      else
        need = osize <= room - obj_hdr ? obj_hdr + ((osize + 7) & ~G_GUINT64_CONSTANT (7)) : 0;
      if (need == 0 || need > room)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                       "%s: damaged HDF5 global heap at byte %" G_GUINT64_FORMAT ": object %u "
                       "at offset %" G_GUINT64_FORMAT " claims %" G_GUINT64_FORMAT " bytes, "
                       "the collection has %" G_GUINT64_FORMAT " left",
                       path, pos, idx, p, osize, room);
          return FALSE;
        }
      if (idx > 0)
        {
          guint64 none = G_MAXUINT64;
          while (sizes->len <= idx)
            g_array_append_val (sizes, none);
          g_array_index (sizes, guint64, idx) = osize;
        }
      p += need;
    }
  return TRUE;
}

void
sp_trace_heaps_free (SpTraceHeaps *heaps)
{
  if (heaps == NULL)
    return;
  g_hash_table_unref (heaps->collections);
  if (heaps->raw.fd >= 0)
    close (heaps->raw.fd);
  g_free (heaps->path);
  g_free (heaps);
}

static gboolean walk_header (const SpTraceHeaps *heaps, const SpTraceRaw *f, const char *path,
                             guint64 header, const char *where, guint what, gboolean follow,
                             guint64 *sohm_table, GError **error);

/* The file's shared object header message table (raw.sohm and the heaps
 * of its indexes), read raw: the superblock (version 2 or 3, the only
 * ones with an extension, where libhdf5 keeps the table message) names
 * its extension's object header, which names the table.  Read before
 * libhdf5 opens any of it (H5Fget_info2 opens every index's heap).  FALSE
 * with *error set when one of them is damaged. */
static gboolean
find_sohm_table (SpTraceHeaps *heaps, GError **error)
{
  SpTraceRaw *f = &heaps->raw;
  /* signature (8), version, offset and length sizes, flags, base
   * address, extension address */
  guint8 sb[12 + 2 * 8];
  guint64 table[2] = { G_MAXUINT64, 0 };
  if (f->addr_len < 1 || f->addr_len > 8)
    return TRUE; /* left to libhdf5, as the walks are */
  if (!sp_trace_raw_read (f, 0, 12 + 2 * (gsize) f->addr_len, sb) || (sb[8] != 2 && sb[8] != 3))
    return TRUE; /* no extension: no table */
  guint64 ext = sp_trace_le (sb + 12 + f->addr_len, f->addr_len);
  if (sp_trace_addr_undefined (f, ext))
    return TRUE; /* none */
  if (!walk_header (heaps, f, heaps->path, ext, "superblock extension", 0, FALSE, table, error))
    return FALSE;
  if (table[0] == G_MAXUINT64)
    return TRUE;
  f->sohm = TRUE;
  const char *subject = NULL;
  const char *bad = sp_trace_sohm_table (f, table[0], (guint) table[1], &subject);
  if (bad != NULL)
    g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: %s %s", heaps->path, subject,
                 bad);
  return bad == NULL;
}

gboolean
sp_trace_super_read (int fd, guint64 file_size, SpTraceSuper *out)
{
  static const guint8 sig[8] = { 0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n' };
  /* version 0 or 1: 24 or 28 bytes, then base, free space, end of file
   * and driver addresses and the root's symbol table entry (link name
   * offset, object header address); version 2 or 3: 12 bytes, then base,
   * extension, end of file and root addresses */
  guint8 b[28 + 6 * 8];
  for (guint64 at = 0; at < file_size; at = at ? at * 2 : 512)
    {
      gsize want = (gsize) MIN ((guint64) sizeof b, file_size - at);
      if (want < 12 || pread (fd, b, want, (off_t) at) != (ssize_t) want)
        return FALSE;
      if (memcmp (b, sig, sizeof sig) != 0)
        continue;
      guint version = b[8];
      guint o = version <= 1 ? b[13] : b[9], l = version <= 1 ? b[14] : b[10];
      gsize root_at = version == 0 ? 24 + 5 * (gsize) o : version == 1 ? 28 + 5 * (gsize) o
                      : 12 + 3 * (gsize) o;
      if (version > 3 || (o != 2 && o != 4 && o != 8) || (l != 2 && l != 4 && l != 8)
          || root_at + o > want)
        return FALSE;
      *out = (SpTraceSuper) { .base = at, .addr_len = o, .size_len = l,
                              .root = sp_trace_le (b + root_at, o) };
      return out->root < file_size - at;
    }
  return FALSE;
}

SpTraceHeaps *
sp_trace_heaps_scan (const char *path, guint64 file_size, guint64 addr0, guint addr_len,
                     guint size_len, GError **error)
{
  static const guint8 sig[GCOL_PREFIX] = { 'G', 'C', 'O', 'L', 1, 0, 0, 0 };
  if (size_len < 2 || size_len > 8)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                   "%s: HDF5 lengths of %u bytes, expected 2 to 8", path, size_len);
      return NULL;
    }
  int fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    {
      int e = errno;
      g_set_error (error, SP_ERROR, SP_ERROR_IO, "%s: cannot open: %s", path, g_strerror (e));
      return NULL;
    }
  SpTraceHeaps *heaps = g_new0 (SpTraceHeaps, 1);
  heaps->path = g_strdup (path);
  heaps->raw = (SpTraceRaw) { .fd = fd, .base = addr0,
                              .size = file_size > addr0 ? file_size - addr0 : 0,
                              .addr_len = addr_len, .size_len = size_len };
  heaps->collections = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free,
                                              (GDestroyNotify) g_array_unref);
  g_autofree guint8 *buf = g_malloc (SCAN_BLOCK + GCOL_PREFIX);
  gboolean ok = TRUE;
  guint64 base = 0; /* file offset of buf[0] */
  gsize have = 0;   /* bytes in buf, the first `keep` carried over */
  for (;;)
    {
      ssize_t n = read (fd, buf + have, SCAN_BLOCK);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        {
          int e = errno;
          g_set_error (error, SP_ERROR, SP_ERROR_IO, "%s: cannot read: %s", path, g_strerror (e));
          ok = FALSE;
          break;
        }
      have += (gsize) n;
      for (gsize i = 0; ok && i + GCOL_PREFIX <= have; i++)
        {
          const guint8 *s = memchr (buf + i, 'G', have - GCOL_PREFIX + 1 - i);
          if (s == NULL)
            break;
          i = (gsize) (s - buf);
          if (memcmp (s, sig, GCOL_PREFIX) == 0)
            ok = check_collection (heaps, path, fd, base + i, file_size, size_len, error);
        }
      if (!ok || n == 0)
        break;
      /* Keep the last bytes: a signature may straddle two blocks. */
      gsize keep = MIN (have, (gsize) GCOL_PREFIX - 1);
      memmove (buf, buf + have - keep, keep);
      base += have - keep;
      have = keep;
    }
  if (ok)
    ok = find_sohm_table (heaps, error);
  if (!ok)
    g_clear_pointer (&heaps, sp_trace_heaps_free);
  return heaps;
}

gboolean
sp_trace_heaps_string_ok (const SpTraceHeaps *heaps, const guint8 *ref, guint addr_len)
{
  guint64 len = sp_trace_le (ref, 4);
  guint64 addr = sp_trace_le (ref + 4, addr_len);
  guint64 idx = sp_trace_le (ref + 4 + addr_len, 4);
  if (addr == 0)
    return TRUE; /* a NULL string: libhdf5 reads no heap */
  GArray *sizes = g_hash_table_lookup (heaps->collections, &addr);
  return sizes != NULL && idx > 0 && idx < sizes->len
         && g_array_index (sizes, guint64, idx) == len;
}

/* ------------------------------------------------------------ attributes
 * libhdf5 reads an attribute's raw data with its object header and follows
 * a string reference in it with no way for a caller to see it first, so
 * the object header is walked here (version 1, which the writer and
 * h5py's defaults produce, and version 2, libver "latest", with its
 * attributes in dense storage too; format: HDF5 File Format Specification
 * version 2, IV.A.1.a "Version 1 Data Object Header Prefix", IV.A.1.b,
 * IV.A.2.m "Attribute Message", IV.A.2.d "Datatype Message"), and each
 * variable-length string attribute's first reference is checked like a
 * dataset's.  Any structure this walk does not expect is left to
 * libhdf5: it only ever refuses a reference it can read. */

#define OH_MAX_CHUNKS 64    /* a continuation loop ends here */
#define DT_MAX_DEPTH 16     /* nested compound / array / vlen types */
#define DT_CLASS_FIXED 0
#define DT_CLASS_FLOAT 1
#define DT_CLASS_STRING 3
#define DT_CLASS_ENUM 8
#define DT_CLASS_VLEN 9


/* The datatype message `dt` of `len` bytes (IV.A.2.d) of an attribute is
 * one libhdf5 can decode within it, of a class an attribute of a trace may
 * have: an integer, a floating-point number, a string (fixed-length, or
 * variable-length: checked further by the caller), or an enum of 8- to
 * 64-bit integers (h5py writes booleans so) whose member names each end
 * inside the message.  libhdf5 1.10.8 decodes every attribute message of
 * an object when asked for one (H5Aexists, H5Aiterate2) and copies the
 * names of an enum's members, and an opaque type's tag, with strdup:
 * one without its NUL, or another class whose bits were damaged into an
 * enum, is read past the object header (tests/fuzz/README, T8). */
static gboolean
attr_type_ok (const guint8 *dt, gsize len)
{
  if (len < 8)
    return FALSE;
  guint cls = dt[0] & 0x0f, ver = dt[0] >> 4;
  switch (cls)
    {
    case DT_CLASS_FIXED:
      return len >= 12;
    case DT_CLASS_FLOAT:
      return len >= 20;
    case DT_CLASS_STRING:
      return TRUE;
    case DT_CLASS_VLEN:
      return (dt[1] & 0x0f) == 1; /* a string; a sequence's references are not checked */
    case DT_CLASS_ENUM:
      {
        gsize n = (gsize) sp_trace_le (dt + 1, 2);
        const guint8 *base = dt + 8;
        gsize bsize = len >= 20 ? (gsize) sp_trace_le (base + 4, 4) : 0;
        if (ver < 1 || ver > 3 || len < 20 || (base[0] & 0x0f) != DT_CLASS_FIXED || bsize < 1
            || bsize > 8)
          return FALSE;
        gsize p = 8 + 12;
        for (gsize i = 0; i < n; i++)
          {
            const guint8 *nul = p < len ? memchr (dt + p, 0, len - p) : NULL;
            if (nul == NULL)
              return FALSE;
            gsize end = (gsize) (nul - dt) + 1; /* versions 1 and 2 pad each name to 8 */
            p = ver < 3 ? p + pad8 (end - p) : end;
          }
        return p <= len && n <= (len - p) / bsize;
      }
    default:
      return FALSE;
    }
}

/* One attribute message `m` (`len` bytes): NULL if fine or not
 * checkable; for a damaged variable-length string, what is wrong, with the
 * attribute's name in out_name. */
/* Whether the dataspace message `ds` of `len` bytes (IV.A.2.b, versions 1
 * and 2: version, rank, flags, then 5 reserved bytes or a type) holds the
 * sizes and, with flag bit 0, the maximum sizes libhdf5 decodes. */
static gboolean
space_complete (const guint8 *ds, gsize len, guint size_len)
{
  if (len < 4 || ds[0] < 1 || ds[0] > 2 || ds[1] > 32)
    return FALSE;
  gsize at = ds[0] == 1 ? 8 : 4, dims = (gsize) ds[1] * size_len * ((ds[2] & 1) ? 2 : 1);
  return at <= len && dims <= len - at;
}

/* Elements of the dataspace message `ds` of `len` bytes (IV.A.2.b, versions
 * 1 and 2) into *out_n; FALSE when it is not one that fits. */
static gboolean
space_elements (const guint8 *ds, gsize len, guint size_len, guint64 *out_n)
{
  if (len < 4 || ds[0] < 1 || ds[0] > 2 || ds[1] > 32)
    return FALSE;
  guint rank = ds[1];
  gsize at = ds[0] == 1 ? 8 : 4;
  if (ds[0] == 2 && ds[3] == 2)
    {
      *out_n = 0; /* a null dataspace */
      return TRUE;
    }
  if (at + (gsize) rank * size_len > len)
    return FALSE;
  guint64 n = 1;
  for (guint i = 0; i < rank; i++)
    if (!g_uint64_checked_mul (&n, n, sp_trace_le (ds + at + (gsize) i * size_len, size_len)))
      return FALSE;
  *out_n = n;
  return TRUE;
}

const char *
sp_trace_attr_message_problem (const SpTraceHeaps *heaps, const guint8 *m, gsize len,
                               guint64 *spent, char *out_name, gsize name_room)
{
  guint addr_len = heaps->raw.addr_len, size_len = heaps->raw.size_len;
  if (len < 9)
    return NULL;
  guint ver = m[0], flags = m[1];
  gsize nsz = (gsize) sp_trace_le (m + 2, 2), dtsz = (gsize) sp_trace_le (m + 4, 2);
  gsize dssz = (gsize) sp_trace_le (m + 6, 2);
  gsize p = ver == 3 ? 9 : 8;
  if (ver < 1 || ver > 3 || nsz == 0)
    return NULL; /* unknown version: libhdf5 refuses it */
  gboolean padded = ver == 1;
  gsize name_at = p;
  p += padded ? pad8 (nsz) : nsz;
  gsize dt_at = p;
  p += padded ? pad8 (dtsz) : dtsz;
  gsize ds_at = p;
  p += padded ? pad8 (dssz) : dssz;
  gsize ref_len = 8 + addr_len;
  if (name_at + nsz > len || dt_at + 2 > len || dtsz < 2 || p > len
      || m[name_at + nsz - 1] != 0)
    {
      /* libhdf5 copies the parts by these sizes, past the message. */
      g_strlcpy (out_name, "(unreadable)", name_room);
      return "is a damaged attribute message (its parts overrun it)";
    }
  /* A datatype or dataspace flagged shared (versions 2 and 3) is a
   * shared message in its place: libhdf5 decodes the datatype or
   * dataspace from the shared-message table's heap, or the datatype from
   * a committed datatype's object header, which no trace attribute has. */
  const guint8 *dt = m + dt_at, *ds = m + ds_at;
  g_autofree guint8 *shared_dt = NULL, *shared_ds = NULL;
  guint64 shared_len = 0;
  for (guint part = 0; part < 2; part++)
    {
      if (ver < 2 || !(flags & (1u << part)))
        continue;
      const guint8 *sm = part == 0 ? dt : ds;
      gsize sm_len = part == 0 ? dtsz : dssz;
      const char *bad = "has a committed datatype, which no trace attribute has";
      if (sm_len >= 2 + FH_ID_LEN && sm[0] == 3 && sm[1] == SHARED_IN_SOHM)
        bad = sp_trace_shared_message (&heaps->raw, part == 0 ? MSG_DATATYPE : MSG_DATASPACE,
                                       sm + 2, spent, part == 0 ? &shared_dt : &shared_ds,
                                       &shared_len);
      if (bad != NULL)
        {
          g_strlcpy (out_name, (const char *) m + name_at, name_room);
          return bad;
        }
      if (part == 0)
        {
          dt = shared_dt;
          dtsz = (gsize) shared_len;
        }
      else
        {
          ds = shared_ds;
          dssz = (gsize) shared_len;
        }
    }
  if (!attr_type_ok (dt, dtsz))
    {
      g_strlcpy (out_name, (const char *) m + name_at, name_room);
      return "has a damaged datatype or one no trace attribute has (an integer, a "
             "floating-point number, a string or an enum of integers)";
    }
  /* libhdf5 copies elements × element size bytes of data from the message,
   * unchecked: they must be in it */
  guint64 n = 0, bytes = 0;
  if (!space_elements (ds, dssz, size_len, &n)
      || !g_uint64_checked_mul (&bytes, n, sp_trace_le (dt + 4, 4)) || bytes > len - p)
    {
      g_strlcpy (out_name, (const char *) m + name_at, name_room);
      return "is a damaged attribute message (its data overrun it)";
    }
  if (len - p < ref_len)
    return NULL; /* no data, or too little for a reference: libhdf5 refuses it */
  if ((dt[0] & 0x0f) != DT_CLASS_VLEN || (dt[1] & 0x0f) != 1)
    return NULL; /* not a variable-length string */
  g_strlcpy (out_name, (const char *) m + name_at, name_room);
  /* Its type as libhdf5 writes every one: a reference's size, then the
   * characters' type, a 1-byte integer (libhdf5 allocates length × that
   * size, unchecked). */
  if (dtsz < 16 || sp_trace_le (dt + 4, 4) != ref_len || (dt[8] & 0x0f) != 0
      || sp_trace_le (dt + 12, 4) != 1)
    return "has a damaged string type";
  if (!sp_trace_heaps_string_ok (heaps, m + p, addr_len))
    return "refers to a string that is not in the file's global heap (a damaged reference)";
  return NULL;
}

/* The bytes the datatype description at `dt` takes (IV.A.2.d "Datatype
 * Message", versions 1 to 4, every class), or 0 when it does not fit in
 * `len` bytes: a compound's or an enum's member names that do not end
 * inside it, a member or base type running past it, an opaque tag past
 * it, or nesting deeper than DT_MAX_DEPTH.  libhdf5 1.10.8 decodes a
 * dataset's datatype message when it opens the dataset and copies member
 * names with strdup and parts by their declared sizes, unchecked: past the
 * object header (H5O_msg_read_oh under H5Dopen2; tests/fuzz/README, T14). */
static gsize
dtype_extent (const guint8 *dt, gsize len, guint depth)
{
  if (len < 8 || depth > DT_MAX_DEPTH)
    return 0;
  guint cls = dt[0] & 0x0f, ver = dt[0] >> 4;
  gsize bits = (gsize) sp_trace_le (dt + 1, 3), size = (gsize) sp_trace_le (dt + 4, 4);
  gsize p = 8;
  if (ver < 1 || ver > 4)
    return 0;
  switch (cls)
    {
    case 0: /* fixed-point: bit offset, precision */
    case 4: /* bitfield */
      p += 4;
      break;
    case 1: /* floating-point: offset, precision, exponent and mantissa */
      p += 12;
      break;
    case 2: /* time: precision */
      p += 2;
      break;
    case 3: /* string */
    case 7: /* reference */
      break;
    case 5: /* opaque: a tag of (bits & 0xff) bytes, NUL-padded (an 8-byte
             * tag has no NUL: libhdf5 copies that many bytes) */
      p += bits & 0xff;
      if (p > len)
        return 0;
      break;
    case 6: /* compound: bits & 0xffff members */
    case 8: /* enum: a base type, bits & 0xffff names, then their values */
      {
        gsize n = bits & 0xffff;
        gsize base = 0;
        if (cls == 8)
          {
            base = dtype_extent (dt + p, len - p, depth + 1);
            if (base == 0)
              return 0;
            p += base;
          }
        /* an offset's bytes in version 3 compounds: as many as the size needs */
        guint off_len = 1;
        while (off_len < 4 && (size >> (8 * off_len)) != 0)
          off_len++;
        for (gsize i = 0; i < n; i++)
          {
            const guint8 *nul = p < len ? memchr (dt + p, 0, len - p) : NULL;
            if (nul == NULL)
              return 0;
            gsize end = (gsize) (nul - dt) + 1;
            p = ver < 3 ? p + pad8 (end - p) : end;
            if (cls == 8)
              continue;
            if (ver == 1)
              p += 4 + 1 + 3 + 4 + 4 + 16; /* offset, rank, reserved, perm, reserved, dims */
            else
              p += ver == 2 ? 4 : off_len;
            if (p > len)
              return 0;
            gsize member = dtype_extent (dt + p, len - p, depth + 1);
            if (member == 0)
              return 0;
            p += member;
          }
        if (cls == 8)
          {
            gsize value_size = (gsize) sp_trace_le (dt + 8 + 4, 4);
            if (p > len || (value_size != 0 && n > (len - p) / value_size))
              return 0;
            p += n * value_size;
          }
        break;
      }
    case 9: /* variable-length: its base type */
      {
        gsize base = dtype_extent (dt + p, len - p, depth + 1);
        if (base == 0)
          return 0;
        p += base;
        break;
      }
    case 10: /* array: rank, dims (before version 3: 3 reserved bytes and
              * permutations too, as libhdf5 reads them), base type */
      {
        if (p >= len)
          return 0;
        gsize rank = dt[p];
        p += ver < 3 ? 4 : 1;
        gsize per = ver < 3 ? 8 : 4;
        if (p > len || rank > (len - p) / per)
          return 0;
        p += rank * per;
        gsize base = dtype_extent (dt + p, len - p, depth + 1);
        if (base == 0)
          return 0;
        p += base;
        break;
      }
    default:
      return 0;
    }
  return p <= len ? p : 0;
}

gsize
sp_trace_dtype_extent (const guint8 *dt, gsize len)
{
  return dtype_extent (dt, len, 0);
}

/* What is wrong with the data layout message `m` of `len` bytes (IV.A.2.i
 * "Data Layout Message", versions 1 to 4) that libhdf5 1.10.8 would act
 * on, or NULL: a chunked layout with a chunk dimension of 0 (libhdf5
 * divides the dataset's extent by each dimension, unchecked, when it
 * opens the dataset: SIGFPE in H5D__chunk_set_info under H5Dopen2,
 * tests/fuzz/README, T13), or one whose dimensions run past the message.
 * Other layouts and versions are left to libhdf5. */
const char *
sp_trace_layout_problem (const guint8 *m, gsize len, guint addr_len)
{
  if (len < 2)
    return NULL;
  guint version = m[0];
  gsize rank, dims_at, dim_len;
  if ((version == 1 || version == 2) && len >= 3 && m[2] == 2)
    {
      /* version, dimensionality, class, 5 reserved, B-tree address, dims */
      rank = m[1];
      dims_at = 8 + addr_len;
      dim_len = 4;
    }
  else if (version == 3 && m[1] == 2 && len >= 3)
    {
      /* version, class, dimensionality, B-tree address, dims */
      rank = m[2];
      dims_at = 3 + addr_len;
      dim_len = 4;
    }
  else if (version == 4 && m[1] == 2 && len >= 5)
    {
      /* version, class, flags, dimensionality, dimension size bytes, dims */
      rank = m[3];
      dims_at = 5;
      dim_len = m[4];
      if (dim_len < 1 || dim_len > 8)
        return "has a chunked layout with a damaged dimension size";
    }
  else
    return NULL;
  if (rank == 0)
    return "has a chunked layout of no dimension";
  if (dims_at > len || rank > (len - dims_at) / dim_len)
    return "has a chunked layout whose dimensions run past its message";
  /* libhdf5 1.10.8 keeps a dimension in 32 bits: a wider one (version 4
   * encodes up to 8 bytes) is cut to its low bits, 2^32 to 0 */
  for (gsize i = 0; i < rank; i++)
    {
      guint64 dim = sp_trace_le (m + dims_at + i * dim_len, (guint) dim_len);
      if (dim == 0)
        return "has a chunked layout with a chunk dimension of 0";
      if (dim > G_MAXUINT32)
        return "has a chunked layout with a chunk dimension over 2^32 - 1";
    }
  return NULL;
}

/* The object header address a shared datatype message `m` of `len` bytes
 * points to when the type is committed (a named datatype: IV.A.2
 * "Shared Message", versions 1 and 2, and version 3 of type 2), or 0. */
static guint64
committed_type_header (const guint8 *m, gsize len, guint addr_len)
{
  if (len >= 2 && (m[0] == 1 || m[0] == 2))
    {
      gsize at = m[0] == 1 ? 8 : 2; /* version 1: type and 6 reserved bytes first */
      return len >= at + addr_len ? sp_trace_le (m + at, addr_len) : 0;
    }
  if (len >= 2 + addr_len && m[0] == 3 && m[1] == 2)
    return sp_trace_le (m + 2, addr_len);
  return 0;
}

/* Version 2 object headers (IV.A.1.b "Version 2 Data Object Header
 * Prefix"; libver "latest" files, h5py's `libver='latest'`): "OHDR",
 * version 2, flags, four times (flag bit 5), the attribute phase change
 * values (bit 4), then chunk 0's size in 1, 2, 4 or 8 bytes (bits 0-1);
 * its messages follow, each with a 1-byte type, a 2-byte size, a flags
 * byte and, where the header tracks attribute creation order (bit 2), a
 * 2-byte index.  Chunk 0 then, and each continuation block ("OCHK", its
 * messages), ends in a checksum, which libhdf5 verifies: a damaged byte
 * fails it, but a file made to do harm recomputes it. */
#define OH_V2_PREFIX_MAX (4 + 1 + 1 + 16 + 4 + 8)
#define OH_V2_CRT_ORDER 0x04
#define OH_V2_PHASE 0x10
#define OH_V2_TIMES 0x20

/* The bytes of the version 2 prefix `pre` (`len` read), chunk 0's size
 * into *out_chunk0; 0 when it is not one libhdf5 reads (another version,
 * flag bits it does not know, cut short). */
static gsize
oh_v2_prefix (const guint8 *pre, gsize len, guint64 *out_chunk0)
{
  if (len < 7 || pre[4] != 2 || (pre[5] & 0xc0) != 0)
    return 0;
  guint flags = pre[5];
  gsize at = 6 + ((flags & OH_V2_TIMES) ? 16 : 0) + ((flags & OH_V2_PHASE) ? 4 : 0);
  guint size_len = 1u << (flags & 3);
  if (at + size_len > len)
    return 0;
  *out_chunk0 = sp_trace_le (pre + at, size_len);
  return at + size_len;
}

gboolean
sp_trace_heaps_check_header (const SpTraceHeaps *heaps, guint64 header, const char *where,
                             guint what, GError **error)
{
  const SpTraceRaw *f = &heaps->raw;
  if (f->addr_len < 1 || f->addr_len > 8 || f->size_len < 1 || f->size_len > 8)
    return TRUE; /* addresses wider than 8 bytes: left to libhdf5 */
  return walk_header (heaps, f, heaps->path, header, where, what, TRUE, NULL, error);
}

/* The walk; `follow`: a dataset's committed datatype's own header is
 * walked too (libhdf5 decodes its datatype message when it opens the
 * dataset), once: not a further one that header names.  `sohm_table`
 * (for the superblock extension): the address and index count its
 * shared-message table message gives, into [0] and [1].  Addresses are
 * HDF5's (from the superblock, after any user block): "at byte" in the
 * messages is the file's. */
static gboolean
walk_header (const SpTraceHeaps *heaps, const SpTraceRaw *f, const char *path, guint64 header,
             const char *where, guint what, gboolean follow, guint64 *sohm_table,
             GError **error)
{
  gboolean attrs = (what & SP_WALK_ATTRS) != 0, links = (what & SP_WALK_LINKS) != 0;
  guint addr_len = f->addr_len, size_len = f->size_len;
  guint64 committed = 0;
  guint64 starts[OH_MAX_CHUNKS], sizes[OH_MAX_CHUNKS];
  guint n_chunks = 0, done = 0;
  gboolean v2 = FALSE;
  gsize msg_hdr = 8; /* a message's own header: type, size, flags (and creation order) */
  const char *problem = NULL, *damage = NULL;
  guint64 damage_at = header;
  guint64 spent = 0; /* bytes of dense storage read */
  guint n_attr_info = 0, n_link_info = 0;
  guint8 prefix[OH_V2_PREFIX_MAX];
  gsize got = header < f->size ? (gsize) MIN (f->size - header, sizeof prefix) : 0;
  if (got > 0 && !sp_trace_raw_read (f, header, got, prefix))
    got = 0;
  if (got >= 16 && prefix[0] == 1)
    {
      starts[0] = header + 16; /* 12 bytes, padded to 8 */
      sizes[0] = sp_trace_le (prefix + 8, 4);
      n_chunks = 1;
    }
  else if (got >= 4 && memcmp (prefix, "OHDR", 4) == 0)
    {
      guint64 chunk0 = 0;
      gsize at = oh_v2_prefix (prefix, got, &chunk0);
      if (at == 0)
        damage = "has a damaged version 2 prefix";
      else
        {
          v2 = TRUE;
          msg_hdr = (prefix[5] & OH_V2_CRT_ORDER) ? 6 : 4;
          starts[0] = header + at;
          sizes[0] = chunk0;
          n_chunks = 1;
        }
    }
  char name[256] = "";
  for (; problem == NULL && damage == NULL && done < n_chunks; done++)
    {
      guint64 at = starts[done], size = sizes[done];
      if (at > f->size || size > f->size - at || size > G_MAXSIZE)
        {
          damage = "continues outside the file";
          damage_at = at;
          break;
        }
      g_autofree guint8 *c = g_malloc (MAX (size, 1));
      if (!sp_trace_raw_read (f, at, size, c))
        continue;
      gsize p = 0, end = (gsize) size;
      if (v2 && done > 0)
        {
          /* a continuation block: "OCHK", the messages, a checksum */
          if (size < 8 || memcmp (c, "OCHK", 4) != 0)
            {
              damage = "continues in a block without its signature";
              damage_at = at;
              break;
            }
          p = 4;
          end -= 4;
        }
      /* What libhdf5 would decode differently from this walk (a message
       * running past its chunk, a continuation too short to hold where it
       * goes, which libhdf5 follows all the same) is refused: a walk that
       * stopped there would leave the rest of the header unchecked.  Fewer
       * bytes than a message's header at the end of a chunk are a gap
       * (version 2). */
      while (problem == NULL && damage == NULL && end - p >= msg_hdr)
        {
          guint type = v2 ? c[p] : (guint) sp_trace_le (c + p, 2);
          gsize msize = (gsize) sp_trace_le (c + p + (v2 ? 1 : 2), 2);
          guint mflags = c[p + (v2 ? 3 : 4)];
          const guint8 *m = c + p + msg_hdr;
          damage_at = at + p;
          if (msize > end - p - msg_hdr)
            damage = "has a message running past its chunk";
          else if (type == MSG_DATATYPE && (mflags & MSG_FLAG_SHARED)
                   && msize >= 2 + FH_ID_LEN && m[0] == 3 && m[1] == SHARED_IN_SOHM)
            {
              /* kept in the shared-message table's heap, decoded from
               * there when libhdf5 opens the dataset */
              g_autofree guint8 *dt = NULL;
              guint64 dt_len = 0;
              damage = sp_trace_shared_message (f, MSG_DATATYPE, m + 2, &spent, &dt, &dt_len);
              if (damage == NULL && dtype_extent (dt, (gsize) dt_len, 0) == 0)
                damage = "has a damaged or unsupported shared datatype message (a member name "
                         "or part runs past it, or an unknown class)";
            }
          else if (type == MSG_DATATYPE && (mflags & MSG_FLAG_SHARED))
            committed = follow ? committed_type_header (m, msize, addr_len) : 0;
          else if (type == MSG_DATASPACE && (mflags & MSG_FLAG_SHARED))
            {
              /* only ever in the shared-message table's heap (a dataspace
               * is never committed), decoded from there by its rank and
               * flags: its sizes must be in the object (libhdf5 1.10.8
               * checks that too; the walk does not rely on it) */
              g_autofree guint8 *ds = NULL;
              guint64 ds_len = 0;
              if (msize < 2 + FH_ID_LEN || m[0] != 3 || m[1] != SHARED_IN_SOHM)
                damage = "has a damaged shared dataspace message";
              else
                damage = sp_trace_shared_message (f, MSG_DATASPACE, m + 2, &spent, &ds, &ds_len);
              if (damage == NULL && !space_complete (ds, (gsize) ds_len, size_len))
                damage = "has a damaged shared dataspace message";
            }
          else if (type == MSG_DATATYPE && dtype_extent (m, msize, 0) == 0)
            damage = "has a damaged or unsupported datatype message (a member name or part "
                     "runs past it, or an unknown class)";
          else if (type == MSG_ATTRIBUTE && attrs && (mflags & MSG_FLAG_SHARED))
            {
              /* a shared message (IV.A.2.w): version 3, type 1, the ID of
               * the attribute in the shared-message heap; libhdf5 shares
               * attributes no other way, and would read another object's
               * message for a committed one */
              if (msize >= 2 + FH_ID_LEN && m[0] == 3 && m[1] == SHARED_IN_SOHM)
                problem = sp_trace_shared_attr_problem (heaps, f, m + 2, &spent, name,
                                                        sizeof name);
              else
                damage = "has an attribute shared other than through the shared-message table";
            }
          else if (type == MSG_ATTRIBUTE && attrs)
            problem = sp_trace_attr_message_problem (heaps, m, msize, &spent, name, sizeof name);
          else if ((type == MSG_ATTR_INFO && n_attr_info++ > 0)
                   || (type == MSG_LINK_INFO && n_link_info++ > 0))
            damage = "has a second attribute or link info message"; /* libhdf5 reads one */
          else if (type == MSG_ATTR_INFO && attrs)
            problem = sp_trace_dense_attrs_problem (heaps, f, m, msize, &spent, name,
                                                    sizeof name);
          else if (type == MSG_LINK_INFO)
            damage = sp_trace_dense_links_problem (f, m, msize, links, &spent);
          else if (type == MSG_LINK && links)
            damage = sp_trace_link_message_problem (m, msize, addr_len);
          else if (type == MSG_SYMBOL_TABLE && links)
            damage = sp_trace_symbol_table_problem (f, m, msize);
          else if (type == MSG_LAYOUT)
            damage = sp_trace_layout_problem (m, msize, addr_len);
          else if (type == MSG_SOHM_TABLE && sohm_table != NULL)
            {
              /* version 0, the table's address, its number of indexes */
              if (msize < 2 + (gsize) addr_len || m[0] != 0)
                damage = "has a damaged shared-message table message";
              else
                {
                  sohm_table[0] = sp_trace_le (m + 1, addr_len);
                  sohm_table[1] = m[1 + addr_len];
                }
            }
          else if (type == MSG_CONTINUATION && msize < addr_len + size_len)
            damage = "has a continuation message too short for its address and length";
          else if (type == MSG_CONTINUATION && n_chunks == OH_MAX_CHUNKS)
            damage = "continues in more chunks than any trace's";
          else if (type == MSG_CONTINUATION)
            {
              starts[n_chunks] = sp_trace_le (m, addr_len);
              sizes[n_chunks] = sp_trace_le (m + addr_len, size_len);
              n_chunks++;
            }
          p += msg_hdr + msize;
        }
    }
  if (damage)
    g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: the object header of %s %s "
                 "(at byte %" G_GUINT64_FORMAT ")", path, where, damage, damage_at + f->base);
  else if (problem)
    g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: attribute %s of %s %s", path,
                 name, where, problem);
  if (problem != NULL || damage != NULL)
    return FALSE;
  if (committed != 0 && committed != header)
    {
      g_autofree char *type_of = g_strdup_printf ("%s's committed datatype", where);
      return walk_header (heaps, f, path, committed, type_of, 0, FALSE, NULL, error);
    }
  return TRUE;
}
