/* lib/trace-private.h — what the trace writer and reader share: the record
 * tables as descriptors, the HDF5 types built from them, and HDF5 error
 * reporting.  Not installed. */
#pragma once
#include "shardplan/trace.h"
#include "shardplan/error.h"

#include <hdf5.h>

/* /groups tables (private: the reader exposes them through functions). */
#define SP_TRACE_FAMILY_FIELDS(X)                                \
  X (U32, guint32, family_id, 0, "the SpFamily value")           \
  X (STR, const char *, name, 0, "sp_family_name")

#define SP_TRACE_GROUP_FIELDS(X)                                                  \
  X (U32, guint32, group_id, 0, "row index, the ops' group_id")                  \
  X (U32, guint32, family_id, 0, "the group's family")                           \
  X (U32, guint32, size, 0, "ranks in the group")                                \
  X (U64, guint64, members_offset, 0, "first member in /groups/members")         \
  X (U32, guint32, members_count, 0, "members in /groups/members (= size)")

typedef struct {
  SP_TRACE_FAMILY_FIELDS (SP_TRACE_DECLARE_FIELD_)
} SpTraceFamilyRec;

typedef struct {
  SP_TRACE_GROUP_FIELDS (SP_TRACE_DECLARE_FIELD_)
} SpTraceGroupRec;

/* One compound dataset and the C struct of its rows. */
typedef struct {
  const char *path;           /* "/ops/ops" */
  const SpTraceField *fields;
  gsize n_fields;
  gsize record_size;          /* sizeof the C struct */
} SpTraceTable;

extern const SpTraceTable sp_trace_table_rows;
extern const SpTraceTable sp_trace_table_nodes;
extern const SpTraceTable sp_trace_table_ranks;
extern const SpTraceTable sp_trace_table_env;
extern const SpTraceTable sp_trace_table_families;
extern const SpTraceTable sp_trace_table_groups;

/* Size in bytes of a field of `kind` in the C struct. */
gsize sp_trace_kind_csize (SpTraceKind kind);

/* Silence HDF5's automatic error printing (once per process). */
void sp_trace_h5_init (void);

/* The HDF5 type of one field kind: `file` picks the little-endian packed
 * file type, else the native memory type.  Caller closes. */
hid_t sp_trace_h5_kind_type (SpTraceKind kind, gboolean file);

/* Compound type of a table: the memory type (record_size, C offsets) with
 * only the fields whose `present[i]` is TRUE (present NULL: all), or the
 * packed file type.  Caller closes; H5I_INVALID_HID on failure. */
hid_t sp_trace_h5_table_type (const SpTraceTable *table, gboolean file, const gboolean *present);

/* The memory type to read a table whose file type is `ftype` (fields
 * `present`, checked by sp_trace_check_record; H5I_INVALID_HID: ours, as
 * sp_trace_h5_table_type (table, FALSE, present) gives): each enum with
 * exactly the members the file's enum has (our values: the check made
 * them the same).  libhdf5 1.14 converts an 8-bit enum to
 * an int-based one with more members wrongly (a 1.0 trace's reduce_scatter
 * read as reduce); with the same members it converts right, as 1.10
 * always does. */
hid_t sp_trace_h5_table_mem_type (const SpTraceTable *table, const gboolean *present, hid_t ftype);

/* A variable-length UTF-8 string type (caller closes). */
hid_t sp_trace_h5_string_type (void);

/* Set *error to `code` with the formatted message followed by ": " and the
 * innermost message on HDF5's error stack (if any), then clear the stack. */
void sp_trace_h5_error (GError **error, int code, const char *fmt, ...) G_GNUC_PRINTF (3, 4);

/* Packed little-endian records, byte-identical to the table's HDF5 file
 * type, so rows are written and read without HDF5's (slow, per-member)
 * compound conversion.  Only for tables without strings, and only used on
 * little-endian hosts (sp_trace_can_pack).  sp_trace_pack fails (returning
 * the index of the bad record in *out_bad and the field in *out_field) on
 * an enum value the enum type does not name. */
gboolean sp_trace_can_pack (const SpTraceTable *table);
gsize sp_trace_packed_size (const SpTraceTable *table);
gboolean sp_trace_pack (const SpTraceTable *table, const void *records, gsize n, guint8 *out,
                        gsize *out_bad, const SpTraceField **out_field);
void sp_trace_unpack (const SpTraceTable *table, const guint8 *in, gsize n, void *records);

/* Free HDF5-allocated variable-length data of `n` records read with
 * `mem_type`. */
void sp_trace_h5_reclaim (hid_t mem_type, gsize n, void *buf);

/* The little-endian integer of `n` (≤ 8) bytes at `p`, as HDF5 stores
 * its numbers. */
static inline guint64
sp_trace_le (const guint8 *p, guint n)
{
  guint64 v = 0;
  for (guint i = n; i-- > 0;)
    v = (v << 8) | p[i];
  return v;
}

/* Object header message types (HDF5 file format IV.A.2) and flags the
 * raw walks read, and the length of the IDs of the fractal heaps holding
 * attribute and shared messages (H5O_FHEAP_ID_LEN). */
#define MSG_DATASPACE 0x0001
#define MSG_LINK_INFO 0x0002
#define MSG_DATATYPE 0x0003
#define MSG_LINK 0x0006
#define MSG_LAYOUT 0x0008
#define MSG_ATTRIBUTE 0x000C
#define MSG_SOHM_TABLE 0x000F
#define MSG_CONTINUATION 0x0010
#define MSG_SYMBOL_TABLE 0x0011
#define MSG_ATTR_INFO 0x0015
#define MSG_FLAG_SHARED 0x02
#define SHARED_IN_SOHM 1     /* a shared message's type: in the shared-message heap */
#define FH_ID_LEN 8

/* A fractal heap's header (III.G) as the raw walks use it
 * (lib/trace-dense.c). */
typedef struct {
  guint64 addr;        /* the heap header's own address */
  guint64 root;        /* root block address */
  guint rows;          /* current rows of the root indirect block (0: direct) */
  guint first_row_bits; /* log2 of row 0's bytes (start × width) */
  guint width;         /* doubling table width */
  guint64 start;       /* starting block size */
  guint64 max_direct;  /* largest direct block */
  guint64 max_man;     /* largest managed object */
  guint id_len;        /* a heap ID's bytes */
  guint off_size, len_size; /* its offset and length bytes */
  gboolean dblock_checksum;
  guint64 huge_bt;     /* index of huge objects */
  guint64 n_huge;
} SpTraceFheap;

/* The kinds of message a shared-message table's indexes hold that the
 * walks read: attributes, datatypes, dataspaces. */
enum { SP_SOHM_ATTR, SP_SOHM_DTYPE, SP_SOHM_SPACE, SP_SOHM_KINDS };

/* The file as a raw walk reads it: HDF5 addresses count from the
 * superblock, after any user block. */
typedef struct {
  int fd;
  guint64 base;      /* file offset of HDF5 address 0 */
  guint64 size;      /* the file's bytes from there */
  guint addr_len, size_len; /* 1 to 8 */
  gboolean sohm;     /* the file has a shared-message table */
  /* the heap of each kind of its shared messages, read and checked with
   * the table (sohm_has: an index of that kind has one) */
  SpTraceFheap sohm_heap[SP_SOHM_KINDS];
  gboolean sohm_has[SP_SOHM_KINDS];
} SpTraceRaw;

/* The HDF5 global heap collections of a file (where variable-length
 * strings live), each checked the way libhdf5 will walk it, so that a
 * damaged one is refused before libhdf5 1.10 reads a string from it (it
 * crashes or hangs on several kinds of damage: lib/trace-heap.c). */
typedef struct _SpTraceHeaps SpTraceHeaps;

/* Scan the file at `path` (`file_size` bytes, addresses of `addr_len`
 * and lengths of `size_len` bytes as its superblock says, HDF5 address 0
 * at file offset `addr0`: the size of its user block): reads the whole
 * file once, finds its shared object header message table if it has one
 * (read raw, the heap header of each index checked, before libhdf5 opens
 * any of them), and keeps it open for
 * sp_trace_heaps_check_header.  NULL with *error set on a damaged
 * collection or table.  Free with sp_trace_heaps_free(). */
SpTraceHeaps *sp_trace_heaps_scan (const char *path, guint64 file_size, guint64 addr0,
                                   guint addr_len, guint size_len, GError **error);
void sp_trace_heaps_free (SpTraceHeaps *heaps);

/* The superblock (HDF5 file format II.A, versions 0 to 3) as read raw,
 * before libhdf5 opens the file. */
typedef struct {
  guint64 base;             /* its file offset (the user block's size): HDF5 address 0 */
  guint addr_len, size_len; /* 2, 4 or 8 */
  guint64 root;             /* the root group's object header address */
} SpTraceSuper;

/* The superblock of the file open on `fd` (`file_size` bytes), found
 * where libhdf5 looks for it (offset 0, then 512, 1024, 2048 …): TRUE and
 * *out filled when there is one of version 0 to 3 with addresses and
 * lengths of 2, 4 or 8 bytes whose root address lies in the file; FALSE
 * otherwise (then libhdf5 alone reads it). */
gboolean sp_trace_super_read (int fd, guint64 file_size, SpTraceSuper *out);

/* Whether the on-disk reference to a variable-length string at `ref`
 * (length: 4 bytes, collection address: `addr_len` bytes, object index: 4
 * bytes, little-endian) is NULL or names an object of a scanned collection
 * with exactly that many bytes: only then may libhdf5 follow it. */
gboolean sp_trace_heaps_string_ok (const SpTraceHeaps *heaps, const guint8 *ref, guint addr_len);

/* The two message checks of that walk, for tests: the bytes the datatype
 * description `dt` (HDF5 file format IV.A.2.d, versions 1-4, every class)
 * takes, or 0 when it does not fit in `len` bytes (a name or part past
 * it, an unknown class, nesting past 16); and what is wrong with the data
 * layout message `m` (IV.A.2.i, versions 1-4) that libhdf5 1.10.8 would
 * divide by (a chunk dimension of 0, or over 2^32 - 1, which it cuts to
 * 32 bits) or read past, or NULL. */
gsize sp_trace_dtype_extent (const guint8 *dt, gsize len);
const char *sp_trace_layout_problem (const guint8 *m, gsize len, guint addr_len);

/* Whether `a` is HDF5's undefined address (all ones in addr_len bytes). */
static inline gboolean
sp_trace_addr_undefined (const SpTraceRaw *f, guint64 a)
{
  return a == G_MAXUINT64 >> (64 - 8 * f->addr_len);
}

/* `len` bytes at HDF5 address `addr` into `buf`: FALSE when not all in
 * the file. */
gboolean sp_trace_raw_read (const SpTraceRaw *f, guint64 addr, gsize len, guint8 *buf);

/* What is wrong with the attribute message `m` of `len` bytes (IV.A.2.m,
 * versions 1-3) that libhdf5 1.10.8 would decode past it or follow into
 * a damaged global heap reference, with its name in out_name; NULL when
 * fine or not checkable (lib/trace-heap.c). */
const char *sp_trace_attr_message_problem (const SpTraceHeaps *heaps, const guint8 *m, gsize len,
                                           guint64 *spent, char *out_name, gsize name_room);

/* What is wrong with the dense attribute storage the attribute info
 * message `m` names (its fractal heap, name index and every attribute
 * message in them, as sp_trace_attr_message_problem), and with the link
 * storage a link info message names (its heap and index are what they
 * claim); NULL when fine or of a layout left to libhdf5
 * (lib/trace-dense.c).  `*spent`: bytes read for the header so far
 * (nodes and objects of a valid file do not overlap: more than the file
 * is a loop of pointers). */
const char *sp_trace_dense_attrs_problem (const SpTraceHeaps *heaps, const SpTraceRaw *f,
                                          const guint8 *m, gsize len, guint64 *spent,
                                          char *out_name, gsize name_room);
const char *sp_trace_dense_links_problem (const SpTraceRaw *f, const guint8 *m, gsize len,
                                          gboolean links, guint64 *spent);

/* What is wrong with the link message `m` of `len` bytes (IV.A.2.g) of a
 * group's compact or dense link storage: a damaged one, an external or
 * user-defined link (libhdf5 follows it into another file and reads its
 * bytes unchecked); NULL for a hard or soft link. */
const char *sp_trace_link_message_problem (const guint8 *m, gsize len, guint addr_len);

/* What is wrong with the version 1 group storage a symbol table message
 * `m` names (IV.A.2.r: the group's B-tree of symbol nodes and the local
 * heap of its link names) that libhdf5 1.10.8 trusts when it looks a name
 * up (lib/trace-dense.c); NULL when fine. */
const char *sp_trace_symbol_table_problem (const SpTraceRaw *f, const guint8 *m, gsize len);

/* Read the shared object header message table at HDF5 address `table`
 * with `n_indexes` indexes (HDF5 file format III.E: "SMTB", a list of
 * indexes, each with the fractal heap its messages live in) into
 * f->sohm_heap, each index's heap header checked; NULL when read, else
 * what is wrong with *subject (the superblock extension naming the table,
 * or a heap). */
const char *sp_trace_sohm_table (SpTraceRaw *f, guint64 table, guint n_indexes,
                                 const char **subject);

/* The shared message of type `type` (attribute, datatype or dataspace)
 * whose heap ID (8 bytes) is `id`, from the shared-message heap of f that
 * libhdf5 decodes it from, into *out (g_free) and *out_len; NULL when
 * read, else what is wrong. */
const char *sp_trace_shared_message (const SpTraceRaw *f, guint type, const guint8 *id,
                                     guint64 *spent, guint8 **out, guint64 *out_len);

/* What is wrong with the shared attribute message whose heap ID is `id`,
 * checked as sp_trace_attr_message_problem checks one in a header; NULL
 * when fine. */
const char *sp_trace_shared_attr_problem (const SpTraceHeaps *heaps, const SpTraceRaw *f,
                                          const guint8 *id, guint64 *spent, char *out_name,
                                          gsize name_room);

/* Walk the object header of the object at HDF5 address
 * `header` (named `where` in messages) raw, before libhdf5 decodes it:
 * its data layout message (a chunked layout libhdf5 1.10.8 would divide
 * by zero opening, T13), its datatype message, or its committed datatype's
 * own header (one libhdf5 would decode past its end, T14); with
 * SP_WALK_ATTRS in `what` its string attributes against the global heaps
 * the same way as a dataset's strings (libhdf5 follows an attribute's
 * references before a caller can see them), in the header or in its
 * dense attribute storage; with SP_WALK_LINKS (a group whose names will
 * be looked up) its links: version 1 symbol tables (B-tree and local
 * heap), link messages and dense link storage.  Object header versions
 * 1 and 2 ("OHDR").  FALSE with *error set on a damaged one; TRUE when
 * fine or when the header, or its dense storage, is of a layout this
 * does not read (libhdf5 is then on its own). */
#define SP_WALK_ATTRS 1u
#define SP_WALK_LINKS 2u
gboolean sp_trace_heaps_check_header (const SpTraceHeaps *heaps, guint64 header,
                                      const char *where, guint what, GError **error);

/* ------------------------------------------------- structural checks
 * (lib/trace-check.c): made before libhdf5 reads any data. */

/* Limits of the schema.  A file beyond them is refused at open. */
/* Bytes of a fixed-length string attribute: 64 KiB, HDF5's limit for an
 * attribute stored in the object header, where the writer puts them. */
#define SP_TRACE_MAX_STR_ATTR_BYTES (64 * 1024)
/* Rows of a table read whole at open (the /meta and /groups tables): 2^28, far more
 * than the ranks, groups and members of any run (a 2^20-rank world with
 * every family built has ~2^24 members). */
#define SP_TRACE_MAX_TABLE_ROWS (G_GUINT64_CONSTANT (1) << 28)
/* Bytes of one compound record in the file, and its number of fields:
 * this schema's largest record is 145 bytes and 22 fields; room for
 * later minor versions. */
#define SP_TRACE_MAX_RECORD_BYTES 4096
#define SP_TRACE_MAX_RECORD_FIELDS 1024
/* The largest expansion of deflate: 1032:1 (zlib's technical details,
 * "Maximum compression factor"), so a deflated dataset holds at most that
 * many bytes per byte of file. */
#define SP_TRACE_DEFLATE_MAX_RATIO 1032

/* What the checks need to know about the file being opened. */
typedef struct {
  const char *path;           /* for messages */
  guint64 file_size;          /* bytes (H5Fget_filesize) */
  guint addr_len;             /* bytes of a file address (its superblock) */
  guint major, minor;         /* its schema version (from the root) */
  const SpTraceHeaps *heaps;  /* its global heaps (sp_trace_heaps_scan) */
} SpTraceCheck;

/* "an integer", "a string" … for an HDF5 class; the class of a kind. */
const char *sp_trace_class_name (H5T_class_t c);
H5T_class_t sp_trace_kind_class (SpTraceKind kind);

/* One line for messages: "an unsigned 32-bit little-endian integer",
 * "a variable-length string" …; "an array of 64 strings" (the `plural`
 * noun), "scalar", "empty (a null dataspace)".  Caller frees. */
char *sp_trace_describe_type (hid_t type);
char *sp_trace_describe_space (hid_t space, const char *plural);

/* The dataspace holds exactly one element (scalar, or one point). */
gboolean sp_trace_space_is_single (hid_t space);

/* Dataset `d` has the schema's dataspace (one element when `scalar`, else
 * 1-D), declares at most `max_n` elements and no more than the file can
 * hold at `elem_size` bytes each (file size, x SP_TRACE_DEFLATE_MAX_RATIO
 * when deflated; overflow-checked), uses only the shuffle, deflate and
 * Fletcher-32 filters, and, unfiltered and chunked, stores whole chunks.
 * The element count goes to *out_n.  Nothing may be allocated for a
 * dataset before this passed. */
gboolean sp_trace_check_extent (const SpTraceCheck *c, hid_t d, const char *path,
                                gboolean scalar, gsize elem_size, guint64 max_n,
                                guint64 *out_n, GError **error);

/* The compound type `ftype` of table->path: records and fields within
 * bounds, each field the table names of exactly the schema's file type
 * (enums: 8-bit base, member names with the schema's values), other
 * fields free of variable-length data and references, none missing that
 * the file's minor version has.  present[i]: field i is in the file. */
gboolean sp_trace_check_record (const SpTraceCheck *c, const SpTraceTable *table, hid_t ftype,
                                gboolean *present, GError **error);

/* Each on-disk reference of the `n` variable-length strings of dataset
 * `d` (type `ftype`: a compound with string members, or a string) names
 * an object of c->heaps with exactly its length (read raw: the dataset
 * must be contiguous). */
gboolean sp_trace_check_string_refs (const SpTraceCheck *c, hid_t d, hid_t ftype,
                                     const char *path, guint64 n, GError **error);
