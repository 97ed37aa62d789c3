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
  GHashTable *collections; /* file address → GArray of guint64: object size by index
                              (G_MAXUINT64: no such object) */
};

static guint64
decode_le (const guint8 *p, guint n)
{
  guint64 v = 0;
  for (guint i = n; i-- > 0;)
    v = (v << 8) | p[i];
  return v;
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
  guint64 size = decode_le (hdr + GCOL_PREFIX, size_len);
  if (size < GCOL_MIN_SIZE || size > file_size - pos)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                   "%s: damaged HDF5 global heap at byte %" G_GUINT64_FORMAT " (collection "
                   "size %" G_GUINT64_FORMAT ", file %" G_GUINT64_FORMAT " bytes)",
                   path, pos, size, file_size);
      return FALSE;
    }
  g_autofree guint8 *c = g_malloc (size);
  if (pread (fd, c, size, (off_t) pos) != (ssize_t) size)
    {
      int e = errno;
      g_set_error (error, SP_ERROR, SP_ERROR_IO, "%s: cannot read: %s", path, g_strerror (e));
      return FALSE;
    }
  /* Objects as libhdf5's loader walks them (H5HG__cache_heap_deserialize):
   * index (2), reference count (2), reserved (4), size (size_len), data
   * padded to 8 bytes; index 0 is free space, whose size counts its
   * header.  The loader stops where no header fits. */
  guint obj_hdr = 8 + size_len;
  guint64 p = hdr_len;
  GArray *sizes = g_array_new (FALSE, FALSE, sizeof (guint64));
  guint64 *key = g_new (guint64, 1);
  *key = pos;
  g_hash_table_replace (heaps->collections, key, sizes);
  while (size - p >= obj_hdr)
    {
      guint idx = (guint) decode_le (c + p, 2);
      guint64 osize = decode_le (c + p + 8, size_len);
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
  g_free (heaps);
}

SpTraceHeaps *
sp_trace_heaps_scan (const char *path, guint64 file_size, guint size_len, GError **error)
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
  close (fd);
  if (!ok)
    g_clear_pointer (&heaps, sp_trace_heaps_free);
  return heaps;
}

gboolean
sp_trace_heaps_string_ok (const SpTraceHeaps *heaps, const guint8 *ref, guint addr_len)
{
  guint64 len = decode_le (ref, 4);
  guint64 addr = decode_le (ref + 4, addr_len);
  guint64 idx = decode_le (ref + 4 + addr_len, 4);
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
#define MSG_DATATYPE 0x0003
#define MSG_LAYOUT 0x0008
#define MSG_FLAG_SHARED 0x02
#define DT_MAX_DEPTH 16     /* nested compound / array / vlen types */
#define MSG_ATTRIBUTE 0x000C
#define MSG_CONTINUATION 0x0010
#define MSG_ATTR_INFO 0x0015
#define DT_CLASS_FIXED 0
#define DT_CLASS_FLOAT 1
#define DT_CLASS_STRING 3
#define DT_CLASS_ENUM 8
#define DT_CLASS_VLEN 9

static gsize
pad8 (gsize n)
{
  return (n + 7) & ~(gsize) 7;
}

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
        gsize n = (gsize) decode_le (dt + 1, 2);
        const guint8 *base = dt + 8;
        gsize bsize = len >= 20 ? (gsize) decode_le (base + 4, 4) : 0;
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
    if (!g_uint64_checked_mul (&n, n, decode_le (ds + at + (gsize) i * size_len, size_len)))
      return FALSE;
  *out_n = n;
  return TRUE;
}

static const char *
attr_message_problem (const SpTraceHeaps *heaps, const guint8 *m, gsize len, guint addr_len,
                      guint size_len, char *out_name, gsize name_room)
{
  if (len < 9)
    return NULL;
  guint ver = m[0], flags = m[1];
  gsize nsz = (gsize) decode_le (m + 2, 2), dtsz = (gsize) decode_le (m + 4, 2);
  gsize dssz = (gsize) decode_le (m + 6, 2);
  gsize p = ver == 3 ? 9 : 8;
  if (ver < 1 || ver > 3 || (ver >= 2 && (flags & 1)) || nsz == 0)
    return NULL; /* unknown version, or a shared (committed) datatype */
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
  const guint8 *dt = m + dt_at;
  if (!attr_type_ok (dt, dtsz))
    {
      g_strlcpy (out_name, (const char *) m + name_at, name_room);
      return "has a damaged datatype or one no trace attribute has (an integer, a "
             "floating-point number, a string or an enum of integers)";
    }
  /* libhdf5 copies elements × element size bytes of data from the message,
   * unchecked: they must be in it */
  guint64 n = 0, bytes = 0;
  if (!space_elements (m + ds_at, dssz, size_len, &n)
      || !g_uint64_checked_mul (&bytes, n, decode_le (dt + 4, 4)) || bytes > len - p)
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
  if (dtsz < 16 || decode_le (dt + 4, 4) != ref_len || (dt[8] & 0x0f) != 0
      || decode_le (dt + 12, 4) != 1)
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
  gsize bits = (gsize) decode_le (dt + 1, 3), size = (gsize) decode_le (dt + 4, 4);
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
            gsize value_size = (gsize) decode_le (dt + 8 + 4, 4);
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
      guint64 dim = decode_le (m + dims_at + i * dim_len, (guint) dim_len);
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
      return len >= at + addr_len ? decode_le (m + at, addr_len) : 0;
    }
  if (len >= 2 + addr_len && m[0] == 3 && m[1] == 2)
    return decode_le (m + 2, addr_len);
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
  *out_chunk0 = decode_le (pre + at, size_len);
  return at + size_len;
}

/* ------------------------------------------------------ dense attributes
 * A version 2 header keeps more attributes than fit its limits (8 by
 * default: the root of a trace written with libver "latest") in "dense"
 * storage: an attribute info message (IV.A.2.f) names a fractal heap
 * (III.G) holding the attribute messages and a version 2 B-tree (III.A.2)
 * indexing them by name, whose records hold each message's heap ID.
 * libhdf5 decodes those messages (H5Aexists compares names through them)
 * and follows their string references as it does a compact attribute's,
 * so they are checked the same way.  Walked: the layouts libhdf5 writes
 * for the attributes of one object (a B-tree of one leaf, up to ~29
 * attributes; a heap whose root block is direct or an indirect block of
 * direct blocks, unfiltered); other layouts, and a "huge" attribute (over
 * the heap's largest managed object, 4 KiB, kept outside it), are left to
 * libhdf5.  Structure that cannot be right (a signature, an address past
 * the file, a heap ID past its block) is refused. */
#define FH_HDR_MAX (4 + 1 + 2 + 2 + 1 + 4 + 12 * 8 + 2 + 8 + 8 + 2 + 2 + 8 + 2)
#define BT2_TYPE_ATTR_NAME 8
#define BT2_ATTR_RECORD 17 /* heap ID (8), message flags, creation order (4), name hash (4) */
#define FH_ID_LEN 8

/* `len` bytes at `addr` of the file into `buf`: FALSE when not all there. */
static gboolean
read_at (int fd, guint64 file_size, guint64 addr, gsize len, guint8 *buf)
{
  return addr <= file_size && len <= file_size - addr
         && pread (fd, buf, len, (off_t) addr) == (ssize_t) len;
}

/* Whole bytes for `bits` bits (H5HF_SIZEOF_OFFSET_BITS: how libhdf5 sizes
 * a heap ID's offset). */
static guint
bytes_of_bits (guint bits)
{
  return (bits + 7) / 8;
}

static guint
log2_floor (guint64 v)
{
  guint r = 0;
  while (v >>= 1)
    r++;
  return r;
}

typedef struct {
  guint64 root;        /* root block address */
  guint rows;          /* current rows of the root indirect block (0: direct) */
  guint width;         /* doubling table width */
  guint64 start;       /* starting block size */
  guint64 max_direct;  /* largest direct block */
  guint off_size, len_size; /* a heap ID's offset and length bytes */
  gboolean dblock_checksum;
} FractalHeap;

/* The fractal heap header at `addr`: NULL when read, else what is wrong
 * (`*leave`: a layout this walk does not follow, nothing wrong). */
static const char *
fractal_heap_read (int fd, guint64 file_size, guint64 addr, guint addr_len, guint size_len,
                   FractalHeap *h, gboolean *leave)
{
  guint8 b[FH_HDR_MAX];
  /* 14 bytes, 10 lengths and 2 addresses, the doubling table (2 bytes,
   * 2 lengths, 2 + 2 bytes), the root's address and its rows (2 bytes) */
  gsize need = 22 + 12 * (gsize) size_len + 3 * (gsize) addr_len;
  if (addr_len > 8 || size_len > 8)
    return "names a fractal heap in a file of addresses over 8 bytes";
  if (!read_at (fd, file_size, addr, need, b) || memcmp (b, "FRHP", 4) != 0 || b[4] != 0)
    return "names a fractal heap that is not one";
  guint id_len = (guint) decode_le (b + 5, 2), filters = (guint) decode_le (b + 7, 2);
  guint64 max_man = decode_le (b + 10, 4);
  /* next huge ID (L), huge B-tree (O), free space (L), free-space manager
   * (O), managed space (L), allocated (L), iterator (L), managed objects
   * (L), huge size (L), huge count (L), tiny size (L), tiny count (L) */
  gsize p = 14 + 10 * (gsize) size_len + 2 * (gsize) addr_len;
  h->width = (guint) decode_le (b + p, 2);
  h->start = decode_le (b + p + 2, size_len);
  h->max_direct = decode_le (b + p + 2 + size_len, size_len);
  guint max_bits = (guint) decode_le (b + p + 2 + 2 * size_len, 2);
  h->root = decode_le (b + p + 2 + 2 * size_len + 4, addr_len);
  h->rows = (guint) decode_le (b + p + 2 + 2 * size_len + 4 + addr_len, 2);
  h->dblock_checksum = (b[9] & 0x02) != 0;
  if (id_len != FH_ID_LEN || filters != 0)
    {
      *leave = TRUE; /* not how libhdf5 keeps attributes */
      return NULL;
    }
  /* libhdf5's own limits (H5HF__hdr_finish_init_phase1): powers of two,
   * the width at most 65536, the heap at most 64 bits */
  if (h->width == 0 || (h->width & (h->width - 1)) != 0 || h->start == 0
      || (h->start & (h->start - 1)) != 0 || h->max_direct < h->start
      || (h->max_direct & (h->max_direct - 1)) != 0 || max_bits == 0 || max_bits > 64
      || h->max_direct > G_MAXUINT32)
    return "has a fractal heap with a damaged doubling table";
  h->off_size = bytes_of_bits (max_bits);
  /* the length: no more bytes than the largest direct block's offsets need,
   * nor than the largest managed object needs (H5VM_limit_enc_size) */
  h->len_size = MIN (bytes_of_bits (log2_floor (h->max_direct)), log2_floor (MAX (max_man, 1)) / 8 + 1);
  if (1 + h->off_size + h->len_size > FH_ID_LEN)
    return "has a fractal heap whose IDs do not fit their 8 bytes";
  return NULL;
}

/* The file address and size of the direct block of `h` holding heap
 * offset `off` into *out_addr, *out_block_off, *out_size: NULL when found,
 * else what is wrong (`*leave` for a layout not followed). */
static const char *
fractal_heap_block (int fd, guint64 file_size, const FractalHeap *h, guint64 off, guint addr_len,
                    guint64 *out_addr, guint64 *out_block_off, guint64 *out_size, gboolean *leave)
{
  if (h->rows == 0)
    {
      *out_addr = h->root;
      *out_block_off = 0;
      *out_size = h->start;
      return NULL;
    }
  /* the doubling table: rows 0 and 1 of blocks of `start` bytes, each
   * further row twice the last; `width` blocks a row */
  guint64 row_off = 0, size = h->start;
  guint row = 0;
  for (;; row++)
    {
      if (row >= 2)
        size *= 2;
      if (row >= h->rows || off < row_off)
        return "has a heap ID past its fractal heap";
      if (size > h->max_direct)
        {
          *leave = TRUE; /* an indirect block's row: not followed */
          return NULL;
        }
      guint64 row_bytes = size * h->width; /* at most 2^32 × 2^16 */
      if (off - row_off < row_bytes)
        break;
      row_off += row_bytes;
    }
  guint64 col = (off - row_off) / size;
  guint64 idx = (guint64) row * h->width + col;
  /* "FHIB", version, heap header address, block offset, then addresses */
  guint64 at = h->root + 5 + addr_len + h->off_size + idx * addr_len;
  guint8 sig[5], a[8];
  if (!read_at (fd, file_size, h->root, 5, sig) || memcmp (sig, "FHIB", 4) != 0 || sig[4] != 0)
    return "names a fractal heap root block that is not one";
  if (at < h->root || !read_at (fd, file_size, at, addr_len, a))
    return "has a fractal heap root block past the file";
  *out_addr = decode_le (a, addr_len);
  *out_block_off = row_off + col * size;
  *out_size = size;
  return NULL;
}

/* What is wrong with the dense attributes the attribute info message `m`
 * (`len` bytes) names, or NULL (also when it names none, or a layout this
 * walk does not follow); the attribute's name into out_name. */
static const char *
dense_attrs_problem (const SpTraceHeaps *heaps, int fd, guint64 file_size, const guint8 *m,
                     gsize len, guint addr_len, guint size_len, char *out_name, gsize name_room)
{
  if (len < 2 || m[0] != 0)
    return NULL;
  gsize p = 2 + ((m[1] & 0x01) ? 2 : 0);
  if (len < p + 2 * (gsize) addr_len)
    return "has an attribute info message too short for its addresses";
  guint64 undefined = addr_len >= 8 ? G_MAXUINT64 : (G_GUINT64_CONSTANT (1) << (8 * addr_len)) - 1;
  guint64 heap_addr = decode_le (m + p, addr_len), bt_addr = decode_le (m + p + addr_len, addr_len);
  if (heap_addr == undefined)
    return NULL; /* compact: the attributes are messages of the header */
  g_strlcpy (out_name, "(dense storage)", name_room);
  gboolean leave = FALSE;
  FractalHeap h;
  const char *bad = fractal_heap_read (fd, file_size, heap_addr, addr_len, size_len, &h, &leave);
  if (bad != NULL || leave)
    return bad;
  /* the name index: "BTHD", version 0, type, node size (4), record size
   * (2), depth (2), split and merge percents, root address, its records (2) */
  guint8 bt[4 + 1 + 1 + 4 + 2 + 2 + 2 + 8 + 2];
  gsize bt_len = 4 + 1 + 1 + 4 + 2 + 2 + 2 + addr_len + 2;
  if (!read_at (fd, file_size, bt_addr, bt_len, bt) || memcmp (bt, "BTHD", 4) != 0 || bt[4] != 0
      || bt[5] != BT2_TYPE_ATTR_NAME)
    return "names an attribute name index that is not one";
  guint64 node_size = decode_le (bt + 6, 4);
  guint rec_size = (guint) decode_le (bt + 10, 2), depth = (guint) decode_le (bt + 12, 2);
  guint64 leaf = decode_le (bt + 16, addr_len);
  guint n = (guint) decode_le (bt + 16 + addr_len, 2);
  if (depth != 0)
    return NULL; /* more attributes than one leaf holds: left to libhdf5 */
  if (rec_size != BT2_ATTR_RECORD || node_size < 10
      || (guint64) n * rec_size > node_size - 10)
    return "has a damaged attribute name index";
  g_autofree guint8 *recs = g_malloc ((gsize) n * rec_size + 6);
  if (!read_at (fd, file_size, leaf, (gsize) n * rec_size + 6, recs)
      || memcmp (recs, "BTLF", 4) != 0 || recs[4] != 0 || recs[5] != BT2_TYPE_ATTR_NAME)
    return "has an attribute name index whose leaf is not one";
  for (guint i = 0; i < n; i++)
    {
      const guint8 *id = recs + 6 + (gsize) i * rec_size;
      if ((id[0] & 0xc0) != 0)
        return "has a heap ID of an unknown version";
      if ((id[0] & 0x30) != 0)
        continue; /* a huge or tiny object: not in a managed block */
      guint64 off = decode_le (id + 1, h.off_size), olen = decode_le (id + 1 + h.off_size, h.len_size);
      guint64 baddr = 0, boff = 0, bsize = 0;
      bad = fractal_heap_block (fd, file_size, &h, off, addr_len, &baddr, &boff, &bsize, &leave);
      if (bad != NULL)
        return bad;
      if (leave)
        continue;
      /* a direct block: "FHDB", version, heap header address, block
       * offset, an optional checksum, then objects; offsets count from
       * the block's start */
      guint64 header_len = 5 + addr_len + h.off_size + (h.dblock_checksum ? 4 : 0);
      guint64 in = off - boff;
      if (in < header_len || olen == 0 || olen > bsize || in > bsize - olen)
        return "has a heap ID past its fractal heap block";
      guint8 sig[5];
      if (!read_at (fd, file_size, baddr, 5, sig) || memcmp (sig, "FHDB", 4) != 0 || sig[4] != 0)
        return "names a fractal heap block that is not one";
      g_autofree guint8 *msg = g_malloc ((gsize) olen);
      if (baddr + in < baddr || !read_at (fd, file_size, baddr + in, (gsize) olen, msg))
        return "has a fractal heap block past the file";
      const char *problem = attr_message_problem (heaps, msg, (gsize) olen, addr_len, size_len,
                                                  out_name, name_room);
      if (problem != NULL)
        return problem;
    }
  return NULL;
}

static gboolean walk_header (const SpTraceHeaps *heaps, const char *path, guint64 file_size,
                             guint64 header, guint addr_len, guint size_len, const char *where,
                             gboolean attrs, gboolean follow, GError **error);

gboolean
sp_trace_heaps_check_header (const SpTraceHeaps *heaps, const char *path, guint64 file_size,
                             guint64 header, guint addr_len, guint size_len, const char *where,
                             gboolean attrs, GError **error)
{
  return walk_header (heaps, path, file_size, header, addr_len, size_len, where, attrs, TRUE,
                      error);
}

/* The walk; `follow`: a dataset's committed datatype's own header is
 * walked too (libhdf5 decodes its datatype message when it opens the
 * dataset), once: not a further one that header names. */
static gboolean
walk_header (const SpTraceHeaps *heaps, const char *path, guint64 file_size, guint64 header,
             guint addr_len, guint size_len, const char *where, gboolean attrs, gboolean follow,
             GError **error)
{
  guint64 committed = 0;
  int fd = open (path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return TRUE; /* the scan read it a moment ago; libhdf5 will report it */
  guint64 starts[OH_MAX_CHUNKS], sizes[OH_MAX_CHUNKS];
  guint n_chunks = 0, done = 0;
  gboolean v2 = FALSE;
  gsize msg_hdr = 8; /* a message's own header: type, size, flags (and creation order) */
  const char *problem = NULL, *damage = NULL;
  guint64 damage_at = header;
  guint8 prefix[OH_V2_PREFIX_MAX];
  gsize got = header < file_size ? (gsize) MIN (file_size - header, sizeof prefix) : 0;
  if (got > 0 && pread (fd, prefix, got, (off_t) header) != (ssize_t) got)
    got = 0;
  if (got >= 16 && prefix[0] == 1)
    {
      starts[0] = header + 16; /* 12 bytes, padded to 8 */
      sizes[0] = decode_le (prefix + 8, 4);
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
      if (at > file_size || size > file_size - at || size > G_MAXSIZE)
        {
          damage = "continues outside the file";
          damage_at = at;
          break;
        }
      g_autofree guint8 *c = g_malloc (MAX (size, 1));
      if (pread (fd, c, size, (off_t) at) != (ssize_t) size)
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
          guint type = v2 ? c[p] : (guint) decode_le (c + p, 2);
          gsize msize = (gsize) decode_le (c + p + (v2 ? 1 : 2), 2);
          guint mflags = c[p + (v2 ? 3 : 4)];
          const guint8 *m = c + p + msg_hdr;
          damage_at = at + p;
          if (msize > end - p - msg_hdr)
            damage = "has a message running past its chunk";
          else if (type == MSG_DATATYPE && (mflags & MSG_FLAG_SHARED))
            committed = follow ? committed_type_header (m, msize, addr_len) : 0;
          else if (type == MSG_DATATYPE && dtype_extent (m, msize, 0) == 0)
            damage = "has a damaged or unsupported datatype message (a member name or part "
                     "runs past it, or an unknown class)";
          else if (type == MSG_ATTRIBUTE && attrs)
            problem = attr_message_problem (heaps, m, msize, addr_len, size_len, name, sizeof name);
          else if (type == MSG_ATTR_INFO && attrs)
            problem = dense_attrs_problem (heaps, fd, file_size, m, msize, addr_len, size_len, name,
                                           sizeof name);
          else if (type == MSG_LAYOUT)
            damage = sp_trace_layout_problem (m, msize, addr_len);
          else if (type == MSG_CONTINUATION && msize < addr_len + size_len)
            damage = "has a continuation message too short for its address and length";
          else if (type == MSG_CONTINUATION && n_chunks == OH_MAX_CHUNKS)
            damage = "continues in more chunks than any trace's";
          else if (type == MSG_CONTINUATION)
            {
              starts[n_chunks] = decode_le (m, addr_len);
              sizes[n_chunks] = decode_le (m + addr_len, size_len);
              n_chunks++;
            }
          p += msg_hdr + msize;
        }
    }
  close (fd);
  if (damage)
    g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: the object header of %s %s "
                 "(at byte %" G_GUINT64_FORMAT ")", path, where, damage, damage_at);
  else if (problem)
    g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: attribute %s of %s %s", path,
                 name, where, problem);
  if (problem != NULL || damage != NULL)
    return FALSE;
  if (committed != 0 && committed != header)
    {
      g_autofree char *type_of = g_strdup_printf ("%s's committed datatype", where);
      return walk_header (heaps, path, file_size, committed, addr_len, size_len, type_of, FALSE,
                          FALSE, error);
    }
  return TRUE;
}
