/* json-scan.h — a small, allocation-free JSON scanner (private to lib/).
 *
 * Plans reach 10^6 ops (~300 MB of JSON); a DOM (json-glib) needs ~3.5 GB
 * and superlinear time for that, so the plan reader walks the text with
 * this scanner instead: it validates JSON syntax (RFC 8259), reads scalars
 * in place, skips values it does not need and can seek back to a value by
 * offset.  Integers are exact over the whole range of guint64 and gint64.
 */
#pragma once
#include <glib.h>

G_BEGIN_DECLS

/* The deepest nesting of objects and arrays the project reads (the plan
 * reader, and the pre-scan below for json-glib's recursive parser):
 * adversarial input must not overflow the stack. */
#define SP_JSON_MAX_DEPTH 128

typedef enum {
  SP_JSON_STRING,
  SP_JSON_INT,      /* an integer literal; see `neg`, `magnitude`, `overflow` */
  SP_JSON_FLOAT,    /* a number with a fraction or an exponent */
  SP_JSON_TRUE,
  SP_JSON_FALSE,
  SP_JSON_NULL,
  SP_JSON_OBJECT,   /* skipped: the scanner is past the closing brace */
  SP_JSON_ARRAY,    /* skipped; `n_elements` counts the top-level elements */
} SpJsonKind;

typedef struct {
  SpJsonKind kind;
  const char *text;      /* the literal as written (numbers, true/false/null) */
  gsize text_len;
  gboolean neg;          /* integers: a leading '-' */
  guint64 magnitude;     /* integers: |value| (valid unless overflow) */
  gboolean overflow;     /* integers: |value| > G_MAXUINT64 */
  gsize n_elements;      /* arrays */
  const char *str;       /* strings: the decoded UTF-8, valid until the next string is read */
} SpJsonValue;

typedef struct {
  const char *start, *p, *end;
  GString *str;          /* decoded value strings */
  GString *key;          /* decoded member names */
} SpJsonScan;

void sp_json_scan_init (SpJsonScan *s, const char *text, gsize length);
void sp_json_scan_clear (SpJsonScan *s);

/* Byte offset of the scanner (for sp_json_scan_seek). */
gsize sp_json_scan_offset (const SpJsonScan *s);
void sp_json_scan_seek (SpJsonScan *s, gsize offset);

/* Read the next value: scalars are decoded, objects and arrays validated
 * and skipped.  Syntax errors are SP_ERROR_INVALID_PLAN "… at LINE:COL: …"
 * prefixed with `what` ("plan is not valid JSON"). */
gboolean sp_json_scan_value (SpJsonScan *s, SpJsonValue *out_value, GError **error);
/* The same without decoding a string value (out_value->str is NULL). */
gboolean sp_json_scan_skip (SpJsonScan *s, SpJsonValue *out_value, GError **error);

/* Objects: call begin (expects '{'), then next until it returns 0.  next
 * returns 1 with the member name in s->key->str and the scanner at the
 * member's value, 0 at '}', -1 on a syntax error. */
gboolean sp_json_scan_object_begin (SpJsonScan *s, GError **error);
int sp_json_scan_object_next (SpJsonScan *s, gboolean *first, GError **error);

/* Arrays: begin expects '['; next returns 1 when an element follows (the
 * scanner is at it), 0 at ']', -1 on a syntax error. */
gboolean sp_json_scan_array_begin (SpJsonScan *s, GError **error);
int sp_json_scan_array_next (SpJsonScan *s, gboolean *first, GError **error);

/* After the top-level value: only whitespace may follow. */
gboolean sp_json_scan_end (SpJsonScan *s, GError **error);

/* "an object", "an array", "null", "true", "1.5", "-3", "the string \"x\""
 * for messages (g_free). */
char *sp_json_value_describe (const SpJsonValue *value);

/* A cheap check before text reaches a recursive parser (json-glib): TRUE
 * when no object or array in `text` (`length` bytes) is nested deeper
 * than `max_depth`, else FALSE with the 1-based line and column of the
 * first bracket too deep.  Brackets inside strings (escapes included) do
 * not count; nothing else is checked (the parser reports syntax errors). */
gboolean sp_json_depth_within (const char *text, gsize length, guint max_depth, guint *out_line,
                               guint *out_col);

/* What json-glib lets through silently, for the JSON a user writes (model,
 * DeepSpeed config): a key twice in one object (json-glib keeps the last;
 * DeepSpeed refuses its config with "Duplicate keys"), an integer outside
 * gint64 (json-glib wraps it), a \u0000 (C strings end there) or an
 * unpaired surrogate escape (not UTF-8) in a string or a key.  NULL when there is neither (or the text is
 * not JSON: the parser says so), else "LINE:COL: what" (g_free). */
char *sp_json_strict_problem (const char *text, gsize length);

/* Both checks, as a reader runs them before json-glib parses text from
 * someone else: FALSE with an error in SP_ERROR of `code` (an SpError),
 * "SRC:LINE:COL: objects and arrays nested deeper than 128 levels (the
 * limit)" or "SRC:LINE:COL: what" (sp_json_strict_problem). */
gboolean sp_json_check_for_parser (const char *text, gsize length, const char *src, int code,
                                   GError **error);

G_END_DECLS
