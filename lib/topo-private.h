/* lib/topo-private.h — what topo.c (model, checks, layout) shares with
 * topo-ini.c (INI text in and out).  Not installed. */
#pragma once
#include "shardplan/topo.h"

G_BEGIN_DECLS

struct _SpTopo {
  SpTopoSpec spec;
  gboolean has_inter; /* FALSE: single node and the INI had no [inter] */
};

typedef enum {
  SP_FIELD_U32,
  SP_FIELD_DOUBLE,
  SP_FIELD_STRING,
  SP_FIELD_INTRA,
  SP_FIELD_FABRIC,
  SP_FIELD_TRANSPORT,
  SP_FIELD_HOST_CPU,
  SP_FIELD_MNNVL,
  SP_FIELD_NIC_PATH,
  SP_FIELD_NCCL_ALGO,  /* guint8[SP_TOPO_NCCL_FUNCS] off masks, NCCL_ALGO syntax */
  SP_FIELD_NCCL_PROTO, /* likewise, NCCL_PROTO */
  SP_FIELD_NCCL_VERSION, /* guint32 NCCL version code, "2.21.5"; 0 = not given */
  SP_FIELD_CAL_STD_ERRORS,  /* SpTopoCalErrors: "NAME ERROR; …" (topo-calerr.c) */
  SP_FIELD_CAL_CORRELATIONS, /* SpTopoCalErrors: "NAME NAME R; …", after std_errors */
} SpFieldType;

typedef enum {
  SP_NEED_ALWAYS,   /* required in every file */
  SP_NEED_OPTIONAL, /* default from sp_topo_defaults */
  SP_NEED_INTER,    /* required when the file has an [inter] section */
  SP_NEED_UNSET,    /* optional; absent = SP_TOPO_LATENCY_UNSET (not written back) */
  SP_NEED_ZERO,     /* optional; absent = 0, "not given" (not checked, not written back) */
} SpFieldNeed;

/* One INI key: where it lives in SpTopoSpec, its range and whether it is
 * required.  One table drives the parser, the checks of sp_topo_new() and
 * the writer, so the three cannot disagree. */
typedef struct {
  const char *section;
  const char *key;
  SpFieldType type;
  gsize offset;
  double min, max;   /* numbers only */
  gboolean min_open; /* (min, max] instead of [min, max] */
  SpFieldNeed need;
} SpTopoField;

#define SP_TOPO_N_FIELDS 33
#define SP_TOPO_N_SECTIONS 6
G_GNUC_INTERNAL extern const SpTopoField sp_topo_fields[]; /* SP_TOPO_N_FIELDS entries */
/* cluster, gpu, intra (the three required ones), inter, calibration, nccl */
G_GNUC_INTERNAL extern const char *const sp_topo_sections[]; /* SP_TOPO_N_SECTIONS */
G_GNUC_INTERNAL extern const SpTopoSpec sp_topo_defaults;

/* "[section] key" (g_free) */
G_GNUC_INTERNAL char *sp_topo_field_what (const SpTopoField *f);
/* what the field accepts, e.g. "an integer in [1, 1024]" (g_free) */
G_GNUC_INTERNAL char *sp_topo_field_accepts (const SpTopoField *f);
/* "a, b, c<last_sep>d" (g_free) */
G_GNUC_INTERNAL char *sp_topo_join_words (const char *const *words, guint n, const char *last_sep);
/* Parse `text` for field `f` into `spec`; errors are prefixed with `prefix`. */
G_GNUC_INTERNAL gboolean sp_topo_parse_field (const SpTopoField *f, const char *text,
                                              const char *prefix, SpTopoSpec *spec, GError **error);
/* Checks across keys (world size, oversubscription on a single switch). */
G_GNUC_INTERNAL gboolean sp_topo_check_cross (const SpTopoSpec *spec, const char *prefix,
                                              GError **error);
/* `text` for a one-line message: control characters as spaces, at most
 * `max` characters (cut at a character, so it stays UTF-8), "…" when cut
 * (g_free). */
G_GNUC_INTERNAL char *sp_topo_excerpt (const char *text, glong max);
/* Whether the [nccl] masks hold only bits of names NCCL has (topo-nccl.c). */
G_GNUC_INTERNAL gboolean sp_topo_nccl_masks_valid (const SpTopoSpec *spec);
/* [calibration] std_errors / correlations (topo-calerr.c): parse `text`
 * into `e` (std_errors first: it resets everything but residual_sd;
 * correlations then name only values with a finite error; pairs not
 * listed are uncorrelated); errors are prefixed with `what`.  The text
 * to write back, NULL when there is nothing to write (g_free).  The check
 * of a whole SpTopoCalErrors (ranges, symmetry, positive semidefinite),
 * and equality field by field. */
G_GNUC_INTERNAL gboolean sp_topo_cal_parse_std_errors (const char *what, const char *text,
                                                       SpTopoCalErrors *e, GError **error);
G_GNUC_INTERNAL gboolean sp_topo_cal_parse_correlations (const char *what, const char *text,
                                                         SpTopoCalErrors *e, GError **error);
G_GNUC_INTERNAL char *sp_topo_cal_std_errors_text (const SpTopoCalErrors *e);
G_GNUC_INTERNAL char *sp_topo_cal_correlations_text (const SpTopoCalErrors *e);
G_GNUC_INTERNAL gboolean sp_topo_cal_check (const SpTopoCalErrors *e, const char *prefix,
                                            GError **error);
G_GNUC_INTERNAL gboolean sp_topo_cal_errors_equal (const SpTopoCalErrors *a,
                                                   const SpTopoCalErrors *b);
/* `v` as the shortest of %.15g, %.16g, %.17g that reads back to the same
 * double, into `buf` of `size` >= G_ASCII_DTOSTR_BUF_SIZE (topo-ini.c). */
G_GNUC_INTERNAL void sp_topo_format_double (char *buf, gsize size, double v);
/* A new topology holding a copy of an already checked spec. */
G_GNUC_INTERNAL SpTopo *sp_topo_make (const SpTopoSpec *spec, gboolean has_inter);

G_END_DECLS
