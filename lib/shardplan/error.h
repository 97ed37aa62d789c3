/* shardplan/error.h — the one error domain of libshardplan.
 *
 * Cold paths that can fail (parsing, planning, file I/O, backend set-up)
 * return gboolean or a pointer and take `GError **error` last; the error's
 * domain is SP_ERROR and its code one of SpErrorCode.  The message is one
 * line that names the bad value and says what would be accepted, e.g.
 * "shard size 24 does not divide world size 64".
 */
#pragma once
#include <glib.h>

G_BEGIN_DECLS

#define SP_ERROR (sp_error_quark ())
GQuark sp_error_quark (void);

typedef enum {
  SP_ERROR_INVALID_ARGUMENT = 1, /* a bad option value (zero, negative, overflow …) */
  SP_ERROR_INVALID_TOPOLOGY,     /* topology INI or preset problem */
  SP_ERROR_INVALID_GROUPS,       /* a parallel configuration DeepSpeed rejects */
  SP_ERROR_INVALID_PLAN,         /* plan JSON problem */
  SP_ERROR_INVALID_WORKLOAD,     /* model / DeepSpeed config problem */
  SP_ERROR_INVALID_TRACE,        /* not a trace, wrong schema or version */
  SP_ERROR_UNSUPPORTED,          /* valid request this build or model cannot serve */
  SP_ERROR_BACKEND,              /* executor backend failure (MPI, NCCL, CUDA) */
  SP_ERROR_IO,                   /* file system */
  SP_ERROR_SIMULATION,           /* a simulation failed its own checks */
  SP_ERROR_TIMEOUT,              /* an op missed its deadline */
} SpErrorCode;

/* Parse an unsigned decimal integer for option or key `what` (used in the
 * message).  Accepts [min, max]; rejects empty strings, signs, trailing
 * junk and overflow with SP_ERROR_INVALID_ARGUMENT naming `what` and `text`. */
gboolean sp_parse_u64 (const char *what, const char *text, guint64 min, guint64 max,
                       guint64 *out_value, GError **error);

/* Parse a finite double in [min, max] (same rules as sp_parse_u64). */
gboolean sp_parse_double (const char *what, const char *text, double min, double max,
                          double *out_value, GError **error);

/* Parse a byte size, the one size syntax of every option: a plain integer
 * (bytes) or one with a unit, ASCII case ignored: K, M, G, T as nccl-tests
 * reads them (powers of 1024; T continues the series), KiB, MiB, GiB, TiB
 * (the same), KB, MB, GB, TB (powers of 1000), B (bytes).  In [min, max]
 * bytes; negative values are named as such. */
gboolean sp_parse_bytes (const char *what, const char *text, guint64 min, guint64 max,
                         guint64 *out_value, GError **error);

/* An inclusive range of unsigned values: "3" is {3, 3}, "0-7" {0, 7}. */
typedef struct {
  guint64 lo, hi;
} SpRange;

/* Parse the LIST of option `what` — comma-separated numbers N and
 * inclusive ranges A-B, each end in [0, 2^64 - 1] (sp_parse_u64's rules) —
 * into a new GArray of SpRange sorted by lo, spans that overlap or touch
 * merged (so the spans are disjoint with gaps between them).  With `globs`
 * non-NULL, an item that does not start with an ASCII digit is a name
 * glob, appended there (g_strdup) instead; a list of globs only gives an
 * empty array.  An empty list, an empty item, a non-number or a range
 * running backwards is SP_ERROR_INVALID_ARGUMENT naming `what`, the list
 * and the item (NULL returned).  Memory is linear in the text. */
GArray *sp_parse_ranges (const char *what, const char *text, GPtrArray *globs, GError **error);

/* Sort an array of SpRange by lo and merge spans that overlap or touch (what
 * sp_parse_ranges returns; for spans added afterwards). */
void sp_ranges_normalise (GArray *spans);

/* TRUE when `v` lies in one of `spans` (as sp_parse_ranges makes them);
 * `spans` NULL holds every value.  O(log n). */
gboolean sp_ranges_contain (const GArray *spans, guint64 v);

/* " (did you mean NAME?)" for the candidate closest to `word` that a typo
 * could explain (at most two letters inserted, removed or changed, ASCII case
 * ignored, and fewer changes than `word` has letters; on a tie, a candidate
 * that `word` begins), or "" when none is that close: the one "did you mean"
 * of INI keys and sections, presets, model names and subcommands.
 * `candidates` holds `n` names, or ends with NULL when n < 0.  Free the
 * result with g_free(). */
char *sp_did_you_mean (const char *word, const char *const *candidates, gssize n);

G_END_DECLS
