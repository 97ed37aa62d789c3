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

/* The HDF5 global heap collections of a file (where variable-length
 * strings live), each checked the way libhdf5 will walk it, so that a
 * damaged one is refused before libhdf5 1.10 reads a string from it (it
 * crashes or hangs on several kinds of damage: lib/trace-heap.c). */
typedef struct _SpTraceHeaps SpTraceHeaps;

/* Scan the file at `path` (`file_size` bytes, lengths of `size_len` bytes
 * as its superblock says): reads the whole file once.  NULL with *error
 * set on a damaged collection.  Free with sp_trace_heaps_free(). */
SpTraceHeaps *sp_trace_heaps_scan (const char *path, guint64 file_size, guint size_len,
                                   GError **error);
void sp_trace_heaps_free (SpTraceHeaps *heaps);

/* Whether the on-disk reference to a variable-length string at `ref`
 * (length: 4 bytes, collection address: `addr_len` bytes, object index: 4
 * bytes, little-endian) is NULL or names an object of a scanned collection
 * with exactly that many bytes: only then may libhdf5 follow it. */
gboolean sp_trace_heaps_string_ok (const SpTraceHeaps *heaps, const guint8 *ref, guint addr_len);
