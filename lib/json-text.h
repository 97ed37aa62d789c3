/* json-text.h — JSON text as every output writes it (private to lib/ and
 * tools/).
 *
 * json-glib prints a double with "%.17g" (g_ascii_dtostr): 4659480.303
 * comes out as 4659480.3030000003.  Outputs keep their fixed units but
 * print the shortest decimal that reads back to the same double, so that
 * what a person reads is what the program computed, no more digits.
 */
#pragma once
#include <glib.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/* The fewest significant digits (1 … 17) that g_ascii_strtod reads back to
 * `v` exactly, laid out as "%.17g" would (an exponent only below 1e-4 or
 * from 1e17: "130200", "0.1", "1e-07"), written into `buf` and returned.
 * Non-finite values print as "%g" does. */
const char *sp_json_double (char buf[G_ASCII_DTOSTR_BUF_SIZE], double v);

/* `root` as json-glib writes it (indented by 2 when `pretty`, else compact),
 * every number with a fraction or an exponent rewritten by sp_json_double
 * (a fraction stays a fraction: 2.0 stays "2.0").  No trailing newline.
 * Free with g_free(). */
char *sp_json_text (JsonNode *root, gboolean pretty);

G_END_DECLS
