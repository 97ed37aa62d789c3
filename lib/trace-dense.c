/* Dense storage of a version 2 object header, walked raw before libhdf5
 * reads it (lib/trace-heap.c walks the header itself).
 *
 * A version 2 header keeps more attributes than its limits (8 by default:
 * the root of a trace written with libver "latest") in "dense" storage:
 * an attribute info message (HDF5 File Format Specification version 2,
 * IV.A.2.f) names a fractal heap (III.G) holding the attribute messages
 * and a version 2 B-tree (III.A.2) indexing them by name, whose records
 * hold each message's heap ID.  libhdf5 1.10.8 decodes those messages
 * (H5Aexists compares names through them) and follows their string
 * references as it does a compact attribute's, so each is checked the
 * same way (sp_trace_attr_message_problem).  A group's links are kept the
 * same way (link info message, IV.A.2.c); libhdf5 follows their heap and
 * index on every path lookup, so those are checked to be what they claim.
 *
 * Walked: B-trees of any depth (internal nodes hold records too); managed
 * heap objects in direct blocks under a root direct block, a root
 * indirect block or indirect blocks nested under it (over 512 KiB of one
 * object's attributes); "huge" objects (over the heap's largest managed
 * object, 4 KiB for attributes), kept outside the heap and found through
 * the heap's own B-tree; shared attribute messages, in the heap of the
 * file's shared-message table (III.E), walked the same way.  Left to
 * libhdf5: filtered heaps (libhdf5 never filters an attribute heap).
 * Structure that cannot be right is refused. */
#include "config.h"
#include "trace-private.h"

#include <string.h>
#include <unistd.h>

#define BT2_PREFIX 10        /* a node's signature, version, type, checksum */
#define BT2_MAX_DEPTH 8
#define BT2_MAX_NODES 65536  /* a loop of child pointers ends here */
#define BT2_TYPE_HUGE_INDIRECT 1
#define BT2_TYPE_LINK_NAME 5
#define BT2_TYPE_ATTR_NAME 8
#define BT2_ATTR_RECORD 17   /* heap ID (8), message flags, creation order (4), name hash (4) */
/* The shortest attribute message: its 8 or 9 bytes of sizes (libhdf5
 * decodes a shorter heap object past its end) */
#define FH_MIN_ATTR 9


gboolean
sp_trace_raw_read (const SpTraceRaw *f, guint64 addr, gsize len, guint8 *buf)
{
  return addr <= f->size && len <= f->size - addr
         && pread (f->fd, buf, len, (off_t) (f->base + addr)) == (ssize_t) len;
}

/* `len` bytes at `addr`, allocated only once they are known to be in the
 * file; NULL when they are not (or not read). */
static guint8 *
raw_dup (const SpTraceRaw *f, guint64 addr, guint64 len)
{
  if (addr > f->size || len > f->size - addr || len > G_MAXSIZE)
    return NULL;
  guint8 *b = g_malloc (MAX ((gsize) len, 1));
  if (!sp_trace_raw_read (f, addr, (gsize) len, b))
    g_clear_pointer (&b, g_free);
  return b;
}

static guint
log2_floor (guint64 v)
{
  guint r = 0;
  while (v >>= 1)
    r++;
  return r;
}

/* Bytes libhdf5 encodes a count up to v in (H5VM_limit_enc_size). */
static guint
limit_enc_size (guint64 v)
{
  return log2_floor (v) / 8 + 1;
}

/* Whether a signature and version 0 start the structure at `addr`. */
static gboolean
signature_at (const SpTraceRaw *f, guint64 addr, const char *sig)
{
  guint8 b[5];
  return sp_trace_raw_read (f, addr, 5, b) && memcmp (b, sig, 4) == 0 && b[4] == 0;
}

/* ------------------------------------------------------ version 2 B-trees */

typedef const char *(*RecordFn) (const guint8 *rec, gpointer data);

typedef struct {
  const SpTraceRaw *f;
  guint type, rec_size, depth;
  guint64 node_size;
  guint64 max_nrec[BT2_MAX_DEPTH + 1];
  guint cum_size[BT2_MAX_DEPTH + 1]; /* bytes of a child's total count, by depth */
  guint nrec_size;                   /* bytes of a child's record count */
  guint64 records;
  guint nodes;
  guint64 *spent;                    /* bytes read by the walk so far */
  RecordFn fn;
  gpointer data;
} Bt2;

/* A child pointer's bytes in a node at `depth` (H5B2_INT_POINTER_SIZE). */
static guint64
bt2_pointer_size (const Bt2 *t, guint depth)
{
  return t->f->addr_len + t->nrec_size + (depth > 1 ? t->cum_size[depth - 1] : 0);
}

static const char *
bt2_node (Bt2 *t, guint64 addr, guint depth, guint64 nrec)
{
  if (++t->nodes > BT2_MAX_NODES)
    return "has a B-tree of more nodes than any object's";
  if (nrec > t->max_nrec[depth])
    return "has a B-tree node of more records than it holds";
  guint64 ptr = depth > 0 ? bt2_pointer_size (t, depth) : 0;
  guint64 len = 6 + nrec * t->rec_size + (depth > 0 ? (nrec + 1) * ptr : 0);
  if (len > t->f->size - MIN (*t->spent, t->f->size))
    return "has index nodes that overlap (more of them than the file holds)";
  *t->spent += len;
  g_autofree guint8 *b = raw_dup (t->f, addr, len);
  if (b == NULL || memcmp (b, depth > 0 ? "BTIN" : "BTLF", 4) != 0 || b[4] != 0 || b[5] != t->type)
    return "has a B-tree node that is not one";
  for (guint64 i = 0; i < nrec; i++)
    {
      const char *bad = t->fn (b + 6 + i * t->rec_size, t->data);
      if (bad != NULL)
        return bad;
    }
  t->records += nrec;
  for (guint64 i = 0; depth > 0 && i <= nrec; i++)
    {
      const guint8 *p = b + 6 + nrec * t->rec_size + i * ptr;
      const char *bad = bt2_node (t, sp_trace_le (p, t->f->addr_len), depth - 1,
                                  sp_trace_le (p + t->f->addr_len, t->nrec_size));
      if (bad != NULL)
        return bad;
    }
  return NULL;
}

/* Every record of the B-tree whose header is at `addr`, of `type` and
 * records of `rec_size` bytes, to fn: what is wrong, or NULL.  The node
 * geometry is libhdf5's (H5B2__hdr_init).  `*spent` counts the bytes
 * read, nodes and objects together: a valid file's do not overlap, so
 * more than the file holds is a loop of pointers, refused before it
 * reads the file over and over. */
static const char *
bt2_walk (const SpTraceRaw *f, guint64 addr, guint type, guint rec_size, guint64 *spent,
          RecordFn fn, gpointer data)
{
  guint8 h[4 + 1 + 1 + 4 + 2 + 2 + 1 + 1 + 8 + 2 + 8];
  gsize h_len = 16 + f->addr_len + 2 + f->size_len;
  if (!sp_trace_raw_read (f, addr, h_len, h) || memcmp (h, "BTHD", 4) != 0 || h[4] != 0
      || h[5] != type)
    return "names a B-tree index that is not one";
  Bt2 t = { .f = f, .type = type, .spent = spent, .fn = fn, .data = data };
  t.node_size = sp_trace_le (h + 6, 4);
  t.rec_size = (guint) sp_trace_le (h + 10, 2);
  t.depth = (guint) sp_trace_le (h + 12, 2);
  guint64 root = sp_trace_le (h + 16, f->addr_len);
  guint64 root_nrec = sp_trace_le (h + 16 + f->addr_len, 2);
  guint64 total = sp_trace_le (h + 18 + f->addr_len, f->size_len);
  if (t.rec_size != rec_size || t.node_size <= BT2_PREFIX + rec_size || t.depth > BT2_MAX_DEPTH)
    return "has a damaged B-tree index";
  t.max_nrec[0] = (t.node_size - BT2_PREFIX) / rec_size;
  t.nrec_size = limit_enc_size (t.max_nrec[0]);
  guint64 cum = t.max_nrec[0];
  for (guint d = 1; d <= t.depth; d++)
    {
      guint64 ptr = bt2_pointer_size (&t, d);
      if (t.node_size <= BT2_PREFIX + ptr)
        return "has a damaged B-tree index";
      t.max_nrec[d] = (t.node_size - BT2_PREFIX - ptr) / (rec_size + ptr);
      if (!g_uint64_checked_mul (&cum, cum, t.max_nrec[d] + 1)
          || !g_uint64_checked_add (&cum, cum, t.max_nrec[d]))
        return "has a B-tree index deeper than its nodes can be";
      t.cum_size[d] = limit_enc_size (cum);
    }
  if (total == 0 && root_nrec == 0)
    return NULL; /* empty */
  const char *bad = bt2_node (&t, root, t.depth, root_nrec);
  if (bad == NULL && t.records != total)
    return "has a B-tree index whose record count is not its records'";
  return bad;
}

/* ----------------------------------------------------------- fractal heaps */

typedef SpTraceFheap Heap;

/* The fractal heap header at `addr` into *h: NULL when read, else what is
 * wrong (`*leave`: a layout this walk does not follow, nothing wrong). */
static const char *
heap_read (const SpTraceRaw *f, guint64 addr, guint id_len_wanted, Heap *h, gboolean *leave)
{
  guint L = f->size_len, O = f->addr_len;
  /* 14 bytes; next huge ID (L), huge index (O), free space (L), its
   * manager (O), managed space (L), allocated (L), iterator (L), managed
   * objects (L), huge bytes (L), huge objects (L), tiny bytes (L), tiny
   * objects (L); width (2), start (L), largest direct (L), heap bits (2),
   * starting rows (2), root (O), its rows (2) */
  guint8 b[22 + 12 * 8 + 3 * 8];
  if (!sp_trace_raw_read (f, addr, 22 + 12 * (gsize) L + 3 * (gsize) O, b)
      || memcmp (b, "FRHP", 4) != 0 || b[4] != 0)
    return "names a fractal heap that is not one";
  guint id_len = (guint) sp_trace_le (b + 5, 2), filters = (guint) sp_trace_le (b + 7, 2);
  h->dblock_checksum = (b[9] & 0x02) != 0;
  h->max_man = sp_trace_le (b + 10, 4);
  h->huge_bt = sp_trace_le (b + 14 + L, O);
  h->n_huge = sp_trace_le (b + 14 + 7 * L + 2 * O, L);
  gsize p = 14 + 10 * (gsize) L + 2 * (gsize) O;
  h->width = (guint) sp_trace_le (b + p, 2);
  h->start = sp_trace_le (b + p + 2, L);
  h->max_direct = sp_trace_le (b + p + 2 + L, L);
  guint max_bits = (guint) sp_trace_le (b + p + 2 + 2 * L, 2);
  h->root = sp_trace_le (b + p + 2 + 2 * L + 4, O);
  h->rows = (guint) sp_trace_le (b + p + 2 + 2 * L + 4 + O, 2);
  h->addr = addr;
  /* libhdf5 deletes a heap's index of huge objects with its last one, and
   * one left without them makes it delete the index again at close, which
   * a read-only file refuses: SIGSEGV at exit (H5F__close_cb) */
  if (!sp_trace_addr_undefined (f, h->huge_bt) && h->n_huge == 0)
    return "names a huge-object index but holds no huge object";
  if (!sp_trace_addr_undefined (f, h->huge_bt) && !signature_at (f, h->huge_bt, "BTHD"))
    return "names a huge-object index that is not one";
  h->id_len = id_len;
  if (id_len != id_len_wanted || filters != 0)
    {
      *leave = TRUE; /* not how libhdf5 keeps attributes */
      return NULL;
    }
  /* libhdf5's own limits (H5HF__hdr_finish_init_phase1, H5HF__dtable_init):
   * powers of two, a heap of at most 64 bits */
  if (h->width == 0 || (h->width & (h->width - 1)) != 0 || h->start == 0
      || (h->start & (h->start - 1)) != 0 || h->max_direct < h->start
      || (h->max_direct & (h->max_direct - 1)) != 0 || max_bits == 0 || max_bits > 64
      || h->max_direct > G_MAXUINT32)
    return "has a fractal heap with a damaged doubling table";
  /* the root's rows: no more than a heap of max_bits bits has
   * (H5HF__dtable_init's max_root_rows; libhdf5 reads the root's entries
   * with the rows the header claims and indexes its tables by row) */
  h->first_row_bits = log2_floor (h->start) + log2_floor (h->width);
  if (h->first_row_bits > max_bits || h->rows > max_bits - h->first_row_bits + 1)
    return "has a fractal heap with a damaged doubling table";
  h->off_size = (max_bits + 7) / 8;
  /* the length: no more bytes than the largest direct block's offsets
   * need, nor than the largest managed object needs */
  h->len_size = MIN ((log2_floor (h->max_direct) + 7) / 8, limit_enc_size (h->max_man));
  if (1 + h->off_size + h->len_size > h->id_len)
    return "has a fractal heap whose IDs do not fit their bytes";
  return NULL;
}

/* The direct block of `h` holding heap offset `off`: its address, heap
 * offset and size; NULL when found, else what is wrong.  libhdf5 finds it
 * the same way (H5HF__man_dblock_locate): the row and column of the
 * offset in the root indirect block's doubling table; a row of blocks
 * over the largest direct block holds indirect blocks, each a doubling
 * table of its own over that row's block size, searched again with the
 * offset less the block offset the child stores (unchecked by libhdf5:
 * it must be the one its parent's table gives). */
static const char *
heap_block (const SpTraceRaw *f, const Heap *h, guint64 off, guint64 *out_addr,
            guint64 *out_block_off, guint64 *out_size)
{
  if (h->rows == 0)
    {
      *out_addr = h->root;
      *out_block_off = 0;
      *out_size = h->start;
      return NULL;
    }
  guint O = f->addr_len;
  guint64 iblock = h->root, iblock_off = 0;
  guint nrows = h->rows;
  for (;;)
    {
      /* "FHIB", version, heap header address, block offset, then one
       * address per entry, row by row */
      guint8 ib[5 + 8 + 8];
      if (!sp_trace_raw_read (f, iblock, 5 + O + h->off_size, ib)
          || memcmp (ib, "FHIB", 4) != 0 || ib[4] != 0)
        return iblock == h->root ? "names a fractal heap root block that is not one"
                                 : "names a fractal heap indirect block that is not one";
      if (sp_trace_le (ib + 5, O) != h->addr || sp_trace_le (ib + 5 + O, h->off_size) != iblock_off)
        return "has a fractal heap indirect block that is not where its heap puts it";
      /* the doubling table: rows 0 and 1 of blocks of `start` bytes, each
       * further row twice the last; `width` blocks a row.  Sizes stay
       * below 2^64: nrows is at most the heap's rows (heap_read) */
      guint64 rel = off - iblock_off, row_off = 0, size = h->start;
      guint row = 0;
      for (;; row++)
        {
          if (row >= 2)
            size *= 2;
          if (row >= nrows)
            return "has a heap ID past its fractal heap";
          guint64 row_bytes = size * h->width;
          if (rel - row_off < row_bytes)
            break;
          row_off += row_bytes;
        }
      guint64 col = (rel - row_off) / size;
      guint64 at = iblock + 5 + O + h->off_size + ((guint64) row * h->width + col) * O;
      guint8 a[8];
      if (at < iblock || !sp_trace_raw_read (f, at, O, a))
        return "has a fractal heap indirect block past the file";
      guint64 child = sp_trace_le (a, O), child_off = iblock_off + row_off + col * size;
      if (size <= h->max_direct)
        {
          *out_addr = child;
          *out_block_off = child_off;
          *out_size = size;
          return NULL;
        }
      /* an indirect block covering `size` bytes: the rows of the table
       * that add up to it (H5HF__man_dblock_locate), always fewer than
       * its parent's */
      guint child_rows = log2_floor (size) - h->first_row_bits + 1;
      if (child_rows >= nrows)
        return "has a fractal heap with a damaged doubling table";
      iblock = child;
      iblock_off = child_off;
      nrows = child_rows;
    }
}

/* The huge objects of a heap by ID, read once from its index (records of
 * type 1: address, length, ID): ID → { address, length }. */
typedef struct {
  const SpTraceRaw *f;
  GHashTable *by_id;
} HugeIndex;

static const char *
huge_record (const guint8 *rec, gpointer data)
{
  HugeIndex *q = data;
  guint O = q->f->addr_len, L = q->f->size_len;
  guint64 *v = g_new (guint64, 3);
  v[0] = sp_trace_le (rec + O + L, L);
  v[1] = sp_trace_le (rec, O);
  v[2] = sp_trace_le (rec + O, L);
  if (g_hash_table_contains (q->by_id, v))
    {
      /* libhdf5 finds one of them by binary search: which one is not
       * the walk's to guess */
      g_free (v);
      return "has a huge-object index naming an object twice";
    }
  g_hash_table_add (q->by_id, v);
  return NULL;
}

/* The bytes of the heap object with ID `id` into *out (g_free), *out_len;
 * NULL when read, else what is wrong (an object shorter than `min_len`
 * bytes: libhdf5 decodes the message it holds past its end).  `*huge`:
 * the heap's huge objects, read from its index at the first one. */
static const char *
heap_object (const SpTraceRaw *f, const Heap *h, const guint8 *id, guint64 min_len,
             GHashTable **huge, guint64 *spent, guint8 **out, guint64 *out_len)
{
  *out = NULL;
  if ((id[0] & 0xc0) != 0)
    return "has a heap ID of an unknown version";
  switch (id[0] & 0x30)
    {
    case 0x00: /* managed */
      {
        guint64 off = sp_trace_le (id + 1, h->off_size);
        guint64 len = sp_trace_le (id + 1 + h->off_size, h->len_size);
        guint64 baddr = 0, boff = 0, bsize = 0;
        const char *bad = heap_block (f, h, off, &baddr, &boff, &bsize);
        if (bad != NULL)
          return bad;
        /* a direct block: "FHDB", version, heap header address, block
         * offset, an optional checksum, then objects; offsets count from
         * the block's start */
        guint64 header_len = 5 + f->addr_len + h->off_size + (h->dblock_checksum ? 4 : 0);
        guint64 in = off - boff;
        if (len < min_len)
          return "has a heap object too small for its message";
        if (off < boff || in < header_len || len > bsize || in > bsize - len)
          return "has a heap ID past its fractal heap block";
        /* libhdf5 finds the object from the block offset the block
         * stores, unchecked: it must be the one the table gives, and the
         * block this heap's */
        guint8 bh[5 + 8 + 8];
        if (!sp_trace_raw_read (f, baddr, 5 + f->addr_len + h->off_size, bh)
            || memcmp (bh, "FHDB", 4) != 0 || bh[4] != 0)
          return "names a fractal heap block that is not one";
        if (sp_trace_le (bh + 5, f->addr_len) != h->addr
            || sp_trace_le (bh + 5 + f->addr_len, h->off_size) != boff)
          return "has a fractal heap block that is not where its heap puts it";
        if (len > f->size - MIN (*spent, f->size))
          return "has heap objects that overlap (more of them than the file holds)";
        *spent += len;
        if (baddr + in < baddr || (*out = raw_dup (f, baddr + in, len)) == NULL)
          return "has a fractal heap block past the file";
        *out_len = len;
        return NULL;
      }
    case 0x10: /* huge: outside the heap, its address and length in the ID
                * where they fit (H5HF__huge_init), else through the
                * heap's index of them */
      {
        guint64 addr, len;
        if (1 + f->addr_len + f->size_len <= h->id_len)
          {
            addr = sp_trace_le (id + 1, f->addr_len);
            len = sp_trace_le (id + 1 + f->addr_len, f->size_len);
          }
        else
          {
            if (sp_trace_addr_undefined (f, h->huge_bt))
              return "has a huge object but no index of them";
            if (*huge == NULL)
              {
                HugeIndex q = { f, g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, NULL) };
                *huge = q.by_id;
                const char *bad = bt2_walk (f, h->huge_bt, BT2_TYPE_HUGE_INDIRECT,
                                            f->addr_len + 2 * f->size_len, spent, huge_record, &q);
                if (bad != NULL)
                  return bad;
              }
            /* the ID: the rest of the heap ID, at most 8 bytes
             * (H5HF__huge_init) */
            guint64 key = sp_trace_le (id + 1, h->id_len - 1);
            const guint64 *v = g_hash_table_lookup (*huge, &key);
            if (v == NULL)
              return "has a huge object missing from its index";
            addr = v[1];
            len = v[2];
          }
        if (len > f->size - MIN (*spent, f->size))
          return "has heap objects that overlap (more of them than the file holds)";
        *spent += len;
        if (len < min_len || (*out = raw_dup (f, addr, len)) == NULL)
          return "has a huge object past the file, or too small for its message";
        *out_len = len;
        return NULL;
      }
    case 0x20: /* tiny: in the ID itself, after its first byte, which
                * holds the length less one (IDs of 8 bytes) */
      {
        guint64 len = (guint64) (id[0] & 0x0f) + 1;
        if (len > h->id_len - 1)
          return "has a tiny heap object longer than its ID";
        if (len < min_len)
          return "has a heap object too small for its message";
        *out = g_memdup2 (id + 1, len);
        *out_len = len;
        return NULL;
      }
    default:
      return "has a heap ID of an unknown kind";
    }
}

/* ------------------------------------------------------------- attributes */

typedef struct {
  const SpTraceHeaps *heaps;
  const SpTraceRaw *f;
  Heap heap;
  GHashTable *huge;
  guint64 *spent;
  char *name;
  gsize name_room;
} DenseAttrs;

static const char *
attr_record (const guint8 *rec, gpointer data)
{
  DenseAttrs *d = data;
  if (rec[FH_ID_LEN] & MSG_FLAG_SHARED)
    /* the ID is one of the shared-message heap (H5A__dense_fnd_cb) */
    return sp_trace_shared_attr_problem (d->heaps, d->f, rec, d->spent, d->name, d->name_room);
  g_autofree guint8 *msg = NULL;
  guint64 len = 0;
  const char *bad = heap_object (d->f, &d->heap, rec, FH_MIN_ATTR, &d->huge, d->spent, &msg,
                                 &len);
  if (bad != NULL || msg == NULL)
    return bad;
  return sp_trace_attr_message_problem (d->heaps, msg, (gsize) len, d->spent, d->name,
                                        d->name_room);
}

/* The heap and name index addresses of an attribute or link info message
 * `m` of `len` bytes (version 0: version, flags, with flag bit 0 the
 * largest creation index in `index_len` bytes, then the two addresses);
 * FALSE when they run past it.  Another version gives undefined ones. */
static gboolean
info_addresses (const SpTraceRaw *f, const guint8 *m, gsize len, gsize index_len,
                guint64 *out_heap, guint64 *out_index)
{
  *out_heap = *out_index = G_MAXUINT64 >> (64 - 8 * f->addr_len); /* undefined */
  if (len < 2 || m[0] != 0)
    return TRUE;
  gsize p = 2 + ((m[1] & 0x01) ? index_len : 0);
  if (len < p + 2 * (gsize) f->addr_len)
    return FALSE;
  *out_heap = sp_trace_le (m + p, f->addr_len);
  *out_index = sp_trace_le (m + p + f->addr_len, f->addr_len);
  return TRUE;
}

const char *
sp_trace_dense_attrs_problem (const SpTraceHeaps *heaps, const SpTraceRaw *f, const guint8 *m,
                              gsize len, guint64 *spent, char *out_name, gsize name_room)
{
  /* version 0, flags (bit 0: the largest creation index follows, 2
   * bytes), heap address, name index address */
  guint64 heap_addr, bt_addr;
  if (!info_addresses (f, m, len, 2, &heap_addr, &bt_addr))
    return "has an attribute info message too short for its addresses";
  if (sp_trace_addr_undefined (f, heap_addr))
    return NULL; /* compact (or a version this does not read): messages of the header */
  g_strlcpy (out_name, "(dense storage)", name_room);
  DenseAttrs d = { .heaps = heaps, .f = f, .spent = spent, .name = out_name,
                   .name_room = name_room };
  gboolean leave = FALSE;
  const char *bad = heap_read (f, heap_addr, FH_ID_LEN, &d.heap, &leave);
  if (bad != NULL || leave)
    return bad;
  bad = bt2_walk (f, bt_addr, BT2_TYPE_ATTR_NAME, BT2_ATTR_RECORD, spent, attr_record, &d);
  g_clear_pointer (&d.huge, g_hash_table_unref);
  return bad;
}

/* ---------------------------------------------------- shared attributes */

#define SOHM_MAX_INDEXES 8        /* H5O_SHMESG_MAX_NINDEXES */
/* an index's message types: 1 << each type */
#define SOHM_SPACE_FLAG (1u << MSG_DATASPACE)
#define SOHM_DTYPE_FLAG (1u << MSG_DATATYPE)
#define SOHM_ATTR_FLAG (1u << MSG_ATTRIBUTE)

const char *
sp_trace_sohm_table (SpTraceRaw *f, guint64 table, guint n_indexes, const char **subject)
{
  *subject = "the superblock extension";
  if (n_indexes == 0 || n_indexes > SOHM_MAX_INDEXES)
    return "has a shared-message table of a damaged number of indexes";
  /* "SMTB", then per index: version, index type, message type flags (2),
   * minimum message size (4), list cutoff (2), B-tree cutoff (2),
   * messages (2), index address, heap address */
  guint O = f->addr_len;
  gsize entry = 14 + 2 * (gsize) O;
  guint8 b[4 + SOHM_MAX_INDEXES * (14 + 16)];
  if (!sp_trace_raw_read (f, table, 4 + n_indexes * entry, b) || memcmp (b, "SMTB", 4) != 0)
    return "names a shared-message table that is not one";
  guint seen = 0;
  for (guint i = 0; i < n_indexes; i++)
    {
      const guint8 *e = b + 4 + i * entry;
      guint types = (guint) sp_trace_le (e + 2, 2);
      guint64 heap = sp_trace_le (e + 14 + O, O);
      if (e[0] != 0)
        return "has a shared-message index of an unknown version";
      /* libhdf5 keeps each message type in one index */
      if (types & seen)
        return "has two shared-message indexes of one message type";
      seen |= types;
      if (sp_trace_addr_undefined (f, heap))
        continue; /* no message shared yet: libhdf5 makes the heap with the first */
      Heap h;
      gboolean leave = FALSE;
      const char *bad = heap_read (f, heap, FH_ID_LEN, &h, &leave);
      if (bad == NULL && leave)
        bad = "is of a layout libhdf5 does not write";
      if (bad != NULL)
        {
          *subject = "the shared-message heap";
          return bad;
        }
      static const guint flag[SP_SOHM_KINDS] = { SOHM_ATTR_FLAG, SOHM_DTYPE_FLAG,
                                                  SOHM_SPACE_FLAG };
      for (guint k = 0; k < SP_SOHM_KINDS; k++)
        if (types & flag[k])
          {
            f->sohm_heap[k] = h;
            f->sohm_has[k] = TRUE;
          }
    }
  return NULL;
}

const char *
sp_trace_shared_message (const SpTraceRaw *f, guint type, const guint8 *id, guint64 *spent,
                         guint8 **out, guint64 *out_len)
{
  *out = NULL;
  if (!f->sohm)
    /* libhdf5 dereferences the table it does not have */
    return "has a shared message in a file without a shared-message table";
  guint k = type == MSG_DATATYPE ? SP_SOHM_DTYPE
             : type == MSG_DATASPACE ? SP_SOHM_SPACE : SP_SOHM_ATTR;
  if (!f->sohm_has[k])
    return "has a shared message of a type the shared-message table does not index";
  GHashTable *huge = NULL; /* read from the heap's index at a huge object, for this one */
  /* the shortest message of each type: an attribute's sizes, a
   * datatype's 8-byte header, a dataspace's version, rank and flags */
  guint64 min_len = type == MSG_ATTRIBUTE ? FH_MIN_ATTR : type == MSG_DATATYPE ? 8 : 3;
  const char *bad = heap_object (f, &f->sohm_heap[k], id, min_len, &huge, spent, out, out_len);
  g_clear_pointer (&huge, g_hash_table_unref);
  return bad;
}

const char *
sp_trace_shared_attr_problem (const SpTraceHeaps *heaps, const SpTraceRaw *f, const guint8 *id,
                              guint64 *spent, char *out_name, gsize name_room)
{
  g_autofree guint8 *msg = NULL;
  guint64 len = 0;
  const char *bad = sp_trace_shared_message (f, MSG_ATTRIBUTE, id, spent, &msg, &len);
  if (bad != NULL || msg == NULL)
    return bad;
  return sp_trace_attr_message_problem (heaps, msg, (gsize) len, spent, out_name, name_room);
}

/* ------------------------------------------------- version 1 groups' links */

#define STAB_MAX_NODES 65536      /* a group's B-tree nodes walked at most */
#define HEAP_FREE_NULL 1          /* the end of a local heap's free list */

/* What is wrong with the local heap at `addr` (III.D: "HEAP", version 0,
 * 3 reserved bytes, data size, offset of the first free block, data
 * address) that libhdf5 1.10.8 trusts: a data segment at the undefined
 * address or past the file (it copies the segment by its size: a size
 * near 2^64 corrupted the heap), or a free list that does not end (its
 * loader allocates a block per entry forever); NULL when fine. */
static const char *
local_heap_problem (const SpTraceRaw *f, guint64 addr)
{
  guint L = f->size_len, O = f->addr_len;
  guint8 b[8 + 2 * 8 + 8];
  if (sp_trace_addr_undefined (f, addr) || !sp_trace_raw_read (f, addr, 8 + 2 * (gsize) L + O, b)
      || memcmp (b, "HEAP", 4) != 0 || b[4] != 0)
    return "names a local heap that is not one";
  guint64 size = sp_trace_le (b + 8, L), free_at = sp_trace_le (b + 8 + L, L);
  guint64 data = sp_trace_le (b + 8 + 2 * L, O);
  if (sp_trace_addr_undefined (f, data) || data > f->size || size > f->size - data)
    return "has a local heap whose data lies outside the file";
  /* each free block: the next one's offset, its size; at least 2 × L
   * bytes and apart, so a list of more is a loop */
  guint64 blocks = 0;
  while (free_at != HEAP_FREE_NULL)
    {
      guint8 fb[16];
      if (free_at > size || 2 * (guint64) L > size - free_at
          || ++blocks > size / (2 * (guint64) L)
          || !sp_trace_raw_read (f, data + free_at, 2 * (gsize) L, fb))
        return "has a local heap whose free list runs past its data or loops";
      free_at = sp_trace_le (fb, L);
    }
  return NULL;
}

/* The nodes of a group's B-tree (III.A.1: "TREE", type 0, level, entries,
 * two siblings, then keys and child addresses in turn) from `addr` down,
 * each once: a child of a node of level l must be one of level l - 1
 * (libhdf5 recurses by the child's own level, unchecked: a node its own
 * child recursed until the stack ran out), a child at level 0 a symbol
 * node in the file; no child at the undefined address (libhdf5's bounds
 * check passes it and reads there). */
static const char *
stab_btree_problem (const SpTraceRaw *f, guint64 addr, int level, GHashTable *seen)
{
  guint L = f->size_len, O = f->addr_len;
  if (sp_trace_addr_undefined (f, addr))
    return "has a group B-tree node at the undefined address";
  guint8 h[8];
  if (!sp_trace_raw_read (f, addr, 8, h) || memcmp (h, "TREE", 4) != 0 || h[4] != 0)
    return "names a group B-tree node that is not one";
  int node_level = h[5];
  guint entries = (guint) sp_trace_le (h + 6, 2);
  if (level >= 0 && node_level != level)
    return "has a group B-tree node whose level is not one below its parent's";
  if (g_hash_table_contains (seen, &addr))
    return NULL; /* walked, at this level */
  if (g_hash_table_size (seen) >= STAB_MAX_NODES)
    return "has a group B-tree of more nodes than any trace's";
  guint64 *key = g_new (guint64, 1);
  *key = addr;
  g_hash_table_add (seen, key);
  /* children follow the siblings, each after its left key */
  guint64 at = addr + 8 + 2 * (guint64) O;
  gsize span = (gsize) entries * (L + O) + L;
  g_autofree guint8 *body = raw_dup (f, at, span);
  if (body == NULL)
    return "has a group B-tree node past the file";
  for (guint i = 0; i < entries; i++)
    {
      guint64 child = sp_trace_le (body + (gsize) i * (L + O) + L, O);
      if (sp_trace_addr_undefined (f, child))
        return "has a group B-tree child at the undefined address";
      if (node_level > 0)
        {
          const char *bad = stab_btree_problem (f, child, node_level - 1, seen);
          if (bad != NULL)
            return bad;
        }
      else if (child > f->size || f->size - child < 8)
        return "has a group symbol node past the file";
    }
  return NULL;
}

const char *
sp_trace_symbol_table_problem (const SpTraceRaw *f, const guint8 *m, gsize len)
{
  /* the group's B-tree address, then its local heap's */
  if (len < 2 * (gsize) f->addr_len)
    return "has a symbol table message too short for its addresses";
  const char *bad = local_heap_problem (f, sp_trace_le (m + f->addr_len, f->addr_len));
  if (bad != NULL)
    return bad;
  GHashTable *seen = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, NULL);
  bad = stab_btree_problem (f, sp_trace_le (m, f->addr_len), -1, seen);
  g_hash_table_unref (seen);
  return bad;
}

/* ------------------------------------------------------------------ links */

#define LINK_HEAP_ID_LEN 7         /* a group's link heap IDs (H5G_DENSE_FHEAP_ID_LEN) */
#define BT2_LINK_RECORD (4 + LINK_HEAP_ID_LEN) /* name hash, heap ID */
#define LINK_TYPE_SOFT 1
#define LINK_TYPE_EXTERNAL 64

const char *
sp_trace_link_message_problem (const guint8 *m, gsize len, guint addr_len)
{
  /* version 1, flags (bits 0-1: the name length's size, 2: a creation
   * order, 3: a link type, 4: a character set), then those, the name
   * length and name, then the link: an address (hard), a length and
   * path (soft), or a length and what its class reads (external) */
  if (len < 2 || m[0] != 1)
    return "has a damaged link message";
  guint flags = m[1];
  gsize p = 2;
  guint type = 0;
  if (flags & 0x08)
    type = p < len ? m[p++] : 0xff;
  if (flags & 0x04)
    p += 8;
  if (flags & 0x10)
    p++;
  gsize nl_size = (gsize) 1 << (flags & 3);
  if (p > len || nl_size > len - p)
    return "has a damaged link message";
  guint64 name_len = sp_trace_le (m + p, (guint) nl_size);
  p += nl_size;
  if (name_len == 0 || name_len > len - p)
    return "has a damaged link message";
  p += (gsize) name_len;
  /* libhdf5 follows an external (or other user-defined) link into
   * another file, past every check of this one, and reads its bytes
   * unchecked (an empty one crashed H5G__traverse_special and
   * H5Lget_info); a trace is one file */
  if (type >= LINK_TYPE_EXTERNAL)
    return "has an external link: a trace is one file";
  if (type == 0)
    return len - p >= addr_len ? NULL : "has a damaged link message";
  if (type == LINK_TYPE_SOFT)
    return len - p >= 2 && sp_trace_le (m + p, 2) >= 1 && sp_trace_le (m + p, 2) <= len - p - 2
               ? NULL : "has a damaged link message";
  return "has a link of an unknown type";
}

typedef struct {
  const SpTraceRaw *f;
  Heap heap;
  GHashTable *huge;
  guint64 *spent;
} DenseLinks;

static const char *
link_record (const guint8 *rec, gpointer data)
{
  DenseLinks *d = data;
  g_autofree guint8 *msg = NULL;
  guint64 len = 0;
  const char *bad = heap_object (d->f, &d->heap, rec + 4, 2, &d->huge, d->spent, &msg, &len);
  return bad != NULL ? bad : sp_trace_link_message_problem (msg, (gsize) len, d->f->addr_len);
}

const char *
sp_trace_dense_links_problem (const SpTraceRaw *f, const guint8 *m, gsize len, gboolean links,
                              guint64 *spent)
{
  /* version 0, flags (bit 0: the largest creation index, 8 bytes, bit 1:
   * a creation-order index address at the end), heap, name index */
  guint64 heap_addr, bt_addr;
  if (!info_addresses (f, m, len, 8, &heap_addr, &bt_addr))
    return "has a link info message too short for its addresses";
  if (sp_trace_addr_undefined (f, heap_addr))
    return sp_trace_addr_undefined (f, bt_addr) ? NULL : "has a link index but no link heap";
  if (!signature_at (f, heap_addr, "FRHP"))
    return "names a link heap that is not one";
  DenseLinks d = { .f = f, .spent = spent };
  gboolean leave = FALSE;
  const char *bad = heap_read (f, heap_addr, LINK_HEAP_ID_LEN, &d.heap, &leave);
  if (bad == NULL && leave)
    bad = "has a link heap of a layout libhdf5 does not write";
  if (bad != NULL)
    return bad;
  if (!links)
    return signature_at (f, bt_addr, "BTHD") ? NULL : "names a link index that is not one";
  /* every link, by the name index libhdf5 looks names up in */
  bad = bt2_walk (f, bt_addr, BT2_TYPE_LINK_NAME, BT2_LINK_RECORD, spent, link_record, &d);
  g_clear_pointer (&d.huge, g_hash_table_unref);
  return bad;
}
