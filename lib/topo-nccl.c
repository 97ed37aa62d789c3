/* [nccl] algo / proto: NCCL_ALGO and NCCL_PROTO values, read and written in
 * NCCL's own syntax (src/graph/tuning.cc parseList, NCCL 2.24+), as
 * per-collective masks of what NCCL may not choose.  topo.h has the
 * grammar.
 *
 * NCCL reads a value with strtok_r: ';' separates entries, the first ':'
 * a collective prefix from its list, ',' the names; empty pieces are
 * skipped, nothing is trimmed, a name it does not know matches nothing
 * (2.24-2.27; 2.28 refuses the value, "Unrecognized element token"),
 * only the first entry (one that starts the value) may go without a
 * prefix, and an unknown prefix fails communicator init.  SP_NCCL_EXACT
 * reads values that way (a run's recorded environment); SP_NCCL_STRICT
 * (topology files) also refuses what NCCL would read but the writer
 * surely did not mean: spaces, unknown names, a second ':', an entry that
 * names nothing, an empty value. */
#include "config.h"
#include "shardplan/topo.h"
#include "shardplan/error.h"
#include "topo-private.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ncclFunc_t order: what NCCL's per-collective prefixes name. */
static const struct
{
  SpColl coll;
  const char *nccl; /* NCCL's spelling (ncclFuncStr) */
} funcs[SP_TOPO_NCCL_FUNCS] = {
  { SP_COLL_BROADCAST, "Broadcast" },
  { SP_COLL_REDUCE, "Reduce" },
  { SP_COLL_ALL_GATHER, "AllGather" },
  { SP_COLL_REDUCE_SCATTER, "ReduceScatter" },
  { SP_COLL_ALL_REDUCE, "AllReduce" },
};

/* NCCL's algorithm names, indexed by its id (= SpAlgo 0..6), and its
 * protocol names (= SpProto 0..2). */
static const char *const algo_nccl[] = { "Tree", "Ring", "CollNetDirect", "CollNetChain",
                                         "NVLS", "NVLSTree", "PAT" };
static const char *const proto_nccl[] = { "LL", "LL128", "Simple" };

#define ALGO_ALL ((guint8) ((1u << G_N_ELEMENTS (algo_nccl)) - 1))
#define PROTO_ALL ((guint8) ((1u << G_N_ELEMENTS (proto_nccl)) - 1))

int
sp_topo_nccl_func (SpColl coll)
{
  if (coll == SP_COLL_REDUCE_SCATTER_BLOCK)
    coll = SP_COLL_REDUCE_SCATTER; /* torch's reduce_scatter_tensor: ncclReduceScatter */
  for (guint i = 0; i < SP_TOPO_NCCL_FUNCS; i++)
    if (funcs[i].coll == coll)
      return (int) i;
  return -1;
}

SpColl
sp_topo_nccl_coll (guint func)
{
  g_return_val_if_fail (func < SP_TOPO_NCCL_FUNCS, SP_COLL_ALL_REDUCE);
  return funcs[func].coll;
}

char *
sp_topo_nccl_excerpt (const char *value)
{
  g_return_val_if_fail (value != NULL, NULL);
  return sp_topo_excerpt (value, 64);
}

static const char *const *
names_of (gboolean proto, guint *out_n)
{
  *out_n = proto ? G_N_ELEMENTS (proto_nccl) : G_N_ELEMENTS (algo_nccl);
  return proto ? proto_nccl : algo_nccl;
}

/* The bit of NCCL name `name` (strcasecmp, as NCCL), or -1. */
static int
name_bit (const char *name, gsize len, gboolean proto)
{
  guint n;
  const char *const *names = names_of (proto, &n);
  for (guint i = 0; i < n; i++)
    if (strlen (names[i]) == len && g_ascii_strncasecmp (name, names[i], len) == 0)
      return (int) i;
  return -1;
}

static int
func_index (const char *name, gsize len)
{
  for (guint i = 0; i < SP_TOPO_NCCL_FUNCS; i++)
    if (strlen (funcs[i].nccl) == len && g_ascii_strncasecmp (name, funcs[i].nccl, len) == 0)
      return (int) i;
  return -1;
}

static char *
names_list (gboolean proto)
{
  guint n;
  const char *const *names = names_of (proto, &n);
  return sp_topo_join_words (names, n, ", ");
}

static gboolean
bad (GError **error, const char *what, const char *text, const char *fmt, ...) G_GNUC_PRINTF (4, 5);

/* "<what> '<text>': <why>", the value shown as an excerpt (a hostile value
 * may be long or hold control characters). */
static gboolean
bad (GError **error, const char *what, const char *text, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *why = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_autofree char *shown = sp_topo_excerpt (text, 64);
  g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY, "%s '%s': %s", what, shown, why);
  return FALSE;
}

/* The next piece of [*p, end) up to `sep`, skipping empty pieces as
 * strtok_r does; FALSE when none is left. */
static gboolean
next_piece (const char **p, const char *end, char sep, const char **out_start, gsize *out_len)
{
  while (*p < end && **p == sep)
    (*p)++;
  if (*p >= end)
    return FALSE;
  const char *s = *p;
  while (*p < end && **p != sep)
    (*p)++;
  *out_start = s;
  *out_len = (gsize) (*p - s);
  return TRUE;
}

/* NCCL 2.24+'s reading; `refuse_unknown`: a name NCCL does not know fails
 * (2.28 and later, and strict mode). */
static gboolean
parse_lists (const char *what, const char *text, gboolean proto, gboolean strict,
             gboolean refuse_unknown, guint8 out_off[SP_TOPO_NCCL_FUNCS], GError **error)
{
  const char *kind = proto ? "protocol" : "algorithm";
  const char *var = proto ? "NCCL_PROTO" : "NCCL_ALGO";
  const guint8 all = proto ? PROTO_ALL : ALGO_ALL;
  guint8 off[SP_TOPO_NCCL_FUNCS] = { 0 };
  if (strict)
    {
      if (*text == '\0')
        return bad (error, what, text, "empty: leave the key out for NCCL's own choice");
      for (const char *c = text; *c; c++)
        if (*c == ' ' || *c == '\t')
          return bad (error, what, text,
                      "NCCL does not trim spaces, so a name with a space beside it matches "
                      "nothing: write the names with no spaces (\"Ring,Tree\")");
        else if ((guchar) *c < 0x20 || *c == 0x7f)
          return bad (error, what, text, "holds control characters");
    }
  const char *p = text, *end = text + strlen (text), *entry;
  gsize entry_len;
  guint n_entries = 0;
  while (next_piece (&p, end, ';', &entry, &entry_len))
    {
      n_entries++;
      /* prefix ':' list, by strtok_r: the first two non-empty pieces */
      const char *q = entry, *qend = entry + entry_len, *first = NULL, *second = NULL;
      gsize first_len = 0, second_len = 0;
      if (!next_piece (&q, qend, ':', &first, &first_len))
        return bad (error, what, text, "entry %u is only ':' (NCCL reads no list there, and "
                                       "crashes on it)", n_entries);
      gboolean has_list = next_piece (&q, qend, ':', &second, &second_len);
      guint colons = 0;
      for (gsize c = 0; c < entry_len; c++)
        colons += entry[c] == ':';
      if (strict && colons > 1)
        return bad (error, what, text, "entry %u has more than one ':' (NCCL skips empty pieces "
                                       "and ignores a third): write COLL:LIST", n_entries);
      if (strict && !has_list && colons > 0)
        return bad (error, what, text, "entry %u has a ':' with nothing on one side (NCCL reads "
                                       "it as a list without a collective): write COLL:LIST, or "
                                       "LIST alone", n_entries);
      int func = -1;
      const char *list = first;
      gsize list_len = first_len;
      if (has_list)
        {
          func = func_index (first, first_len);
          if (func < 0)
            {
              g_autofree char *piece = g_strndup (first, first_len);
              g_autofree char *shown = sp_topo_excerpt (piece, 64);
              return bad (error, what, text,
                          "'%s' is not a collective %s restricts (NCCL refuses the value): "
                          "expected Broadcast, Reduce, AllGather, ReduceScatter or AllReduce "
                          "(all-to-all and send / recv are NCCL's p2p, which it does not touch)",
                          shown, var);
            }
          list = second;
          list_len = second_len;
        }
      else if (entry != text && n_entries == 1)
        return bad (error, what, text,
                    "the value starts with ';', so NCCL does not count entry 1 as the first, the "
                    "only one that may go without a collective prefix (NCCL refuses it)");
      else if (entry != text)
        return bad (error, what, text,
                    "entry %u has no collective prefix, which NCCL allows only on the entry that "
                    "starts the value (NCCL refuses it): write COLL:%s", n_entries, kind);
      gboolean exclude = list[0] == '^';
      const char *l = list + exclude, *lend = list + list_len, *name;
      gsize name_len;
      guint8 listed = 0;
      guint n_names = 0;
      while (next_piece (&l, lend, ',', &name, &name_len))
        {
          n_names++;
          int bit = name_bit (name, name_len, proto);
          if (bit >= 0)
            listed |= (guint8) (1u << bit);
          else if (strict || refuse_unknown)
            {
              g_autofree char *names = names_list (proto);
              g_autofree char *piece = g_strndup (name, name_len);
              g_autofree char *shown_name = sp_topo_excerpt (piece, 64);
              return bad (error, what, text, "'%s' is not an NCCL %s (NCCL 2.28 refuses the "
                                             "value, 2.24-2.27 ignore the name): expected %s",
                          shown_name, kind, names);
            }
        }
      if (strict && n_names == 0)
        return bad (error, what, text, "entry %u names no %s", n_entries, kind);
      guint8 m = exclude ? listed : (guint8) (all & ~listed);
      if (proto)
        m |= SP_TOPO_NCCL_PROTO_SET;
      for (guint f = 0; f < SP_TOPO_NCCL_FUNCS; f++)
        if (func < 0 || (guint) func == f)
          off[f] = m;
    }
  if (strict && n_entries == 0)
    return bad (error, what, text, "names no %s: leave the key out for NCCL's own choice", kind);
  memcpy (out_off, off, sizeof off);
  return TRUE;
}

gboolean
sp_topo_nccl_parse (const char *what, const char *text, gboolean proto, SpNcclParse mode,
                    guint8 out_off[SP_TOPO_NCCL_FUNCS], GError **error)
{
  g_return_val_if_fail (what != NULL && text != NULL && out_off != NULL, FALSE);
  gboolean strict = mode == SP_NCCL_STRICT;
  return parse_lists (what, text, proto, strict, strict, out_off, error);
}

char *
sp_topo_nccl_version_text (int code)
{
  return g_strdup_printf ("%d.%d.%d", code / 10000, code / 100 % 100, code % 100);
}

guint8
sp_topo_nccl_algos_of (SpColl coll)
{
  if (sp_topo_nccl_func (coll) < 0)
    return 0;
  return coll == SP_COLL_BROADCAST || coll == SP_COLL_REDUCE ? (guint8) (1u << SP_ALGO_RING)
                                                             : ALGO_ALL;
}

int
sp_topo_nccl_version_code (const char *version)
{
  if (version == NULL)
    return 0;
  /* a bare code (nccl-tests' "nccl-library=22105"): major × 10000 + minor
   * × 100 + patch from 2.9, major × 1000 + minor × 100 + patch before */
  gsize digits = strspn (version, "0123456789");
  if (digits >= 4 && digits <= 6 && version[digits] == '\0')
    {
      int code = atoi (version);
      if (code >= 20900)
        return code;
      if (code >= 2000 && code < 2900)
        return code / 1000 * 10000 + code % 1000 / 100 * 100 + code % 100;
      return 0;
    }
  /* MAJOR.MINOR[.PATCH], then anything ("+cuda12.2") */
  guint part[3] = { 0, 0, 0 }, n = 0;
  const char *c = version;
  while (n < 3 && g_ascii_isdigit (*c))
    {
      guint64 v = 0;
      while (g_ascii_isdigit (*c) && v < 1000)
        v = v * 10 + (guint64) (*c++ - '0');
      if (g_ascii_isdigit (*c))
        return 0; /* four digits or more: not a version part */
      part[n++] = (guint) v;
      if (*c != '.')
        break;
      c++;
    }
  if (n < 2 || part[0] < 2 || part[0] > 99 || part[1] > 99 || part[2] > 99)
    return 0;
  return (int) (part[0] * 10000 + part[1] * 100 + part[2]);
}

/* The first NCCL version with each algorithm (by id), or with its name:
 * CollNetDirect / CollNetChain from 2.14 ("CollNet", the direct one,
 * before), NVLS 2.17, NVLSTree 2.18, PAT 2.23 (reference/
 * nccl-transports.md's version table). */
static const int algo_since[] = { 0, 0, 21400, 21400, 21700, 21800, 22300 };

/* The name NCCL of version code `version` (< 2.24) has for algorithm `id`,
 * or NULL where it has none. */
static const char *
legacy_algo_name (guint id, int version)
{
  if (id == SP_ALGO_COLLNET_DIRECT && version < 21400)
    return "CollNet";
  return id < G_N_ELEMENTS (algo_since) && version >= algo_since[id] ? algo_nccl[id] : NULL;
}

guint8
sp_topo_nccl_algos_lacking (int version)
{
  guint8 m = 0;
  for (guint id = 0; version > 0 && id < G_N_ELEMENTS (algo_since); id++)
    if (version < algo_since[id] && id != SP_ALGO_COLLNET_DIRECT)
      m |= (guint8) (1u << id);
  return m;
}

char *
sp_topo_nccl_algos_text (guint8 algos)
{
  const char *names[G_N_ELEMENTS (algo_nccl)];
  guint n = 0;
  for (guint id = 0; id < G_N_ELEMENTS (algo_nccl); id++)
    if (algos & (1u << id))
      names[n++] = algo_nccl[id];
  return n ? sp_topo_join_words (names, n, ", ") : NULL;
}

/* NCCL < 2.24's parseList: a leading '^' excludes, then names split on ','
 * only (strtok_r: empty pieces skipped), matched with strcasecmp; one list
 * for all five collectives.  An empty value sets every name off. */
static void
parse_legacy (const char *text, gboolean proto, int version, guint8 out_off[SP_TOPO_NCCL_FUNCS])
{
  gboolean exclude = text[0] == '^';
  const char *p = text + exclude, *end = text + strlen (text), *name;
  gsize len;
  guint8 listed = 0;
  while (next_piece (&p, end, ',', &name, &len))
    if (proto)
      {
        int bit = name_bit (name, len, TRUE);
        if (bit >= 0)
          listed |= (guint8) (1u << bit);
      }
    else
      for (guint id = 0; id < G_N_ELEMENTS (algo_nccl); id++)
        {
          const char *known = legacy_algo_name (id, version);
          if (known && strlen (known) == len && g_ascii_strncasecmp (name, known, len) == 0)
            listed |= (guint8) (1u << id);
        }
  guint8 all = proto ? PROTO_ALL : ALGO_ALL;
  guint8 m = exclude ? listed : (guint8) (all & ~listed);
  if (proto)
    m |= SP_TOPO_NCCL_PROTO_SET;
  for (guint f = 0; f < SP_TOPO_NCCL_FUNCS; f++)
    out_off[f] = m;
}

gboolean
sp_topo_nccl_parse_as (const char *what, const char *text, gboolean proto, int version,
                       guint8 out_off[SP_TOPO_NCCL_FUNCS], GError **error)
{
  g_return_val_if_fail (what != NULL && text != NULL && out_off != NULL, FALSE);
  if (version > 0 && version < SP_TOPO_NCCL_PER_COLL_VERSION)
    {
      parse_legacy (text, proto, version, out_off);
      return TRUE;
    }
  return parse_lists (what, text, proto, FALSE, version >= 22800, out_off, error);
}

char *
sp_topo_nccl_reads_otherwise (const char *value, gboolean proto, int version)
{
  g_return_val_if_fail (value != NULL, NULL);
  /* without ';' and ':' both syntaxes split alike */
  if (version <= 0 || version >= SP_TOPO_NCCL_PER_COLL_VERSION || strpbrk (value, ";:") == NULL)
    return NULL;
  guint8 old[SP_TOPO_NCCL_FUNCS], now[SP_TOPO_NCCL_FUNCS];
  guint8 lacking = proto ? 0 : sp_topo_nccl_algos_lacking (version);
  parse_legacy (value, proto, version, old);
  gboolean same = parse_lists ("", value, proto, FALSE, FALSE, now, NULL);
  for (guint f = 0; same && f < SP_TOPO_NCCL_FUNCS; f++)
    same = (guint8) (old[f] | lacking) == (guint8) (now[f] | lacking);
  if (same)
    return NULL;
  guint8 all = proto ? PROTO_ALL : ALGO_ALL;
  const char *kind = proto ? "protocol" : "algorithm";
  if (((old[0] | lacking) & all) == all)
    return g_strdup_printf ("every %s off (NCCL then fails every collective but all-to-all and "
                            "send / recv)", kind);
  if ((old[0] & all) == 0)
    return g_strdup_printf ("no %s off", kind);
  g_autofree char *text = sp_topo_nccl_text (old, proto);
  return g_strdup_printf ("%s for every collective", text);
}

gboolean
sp_topo_nccl_check_version (const char *name, const char *value, gboolean proto, int version,
                            GError **error)
{
  g_return_val_if_fail (name != NULL && value != NULL, FALSE);
  g_autofree char *reading = sp_topo_nccl_reads_otherwise (value, proto, version);
  if (reading == NULL)
    return TRUE;
  g_autofree char *shown = sp_topo_excerpt (value, 64);
  g_autofree char *v = sp_topo_nccl_version_text (version);
  g_set_error (error, SP_ERROR, SP_ERROR_INVALID_ARGUMENT,
               "%s='%s': NCCL %s reads no per-collective entries (';' and ':' need NCCL "
               "2.24 or later), so it would read this as %s: give one list for all "
               "collectives, or run with NCCL 2.24 or later", name, shown, v, reading);
  return FALSE;
}

static guint
popcount8 (guint8 m)
{
  guint n = 0;
  for (; m != 0; m &= (guint8) (m - 1))
    n++;
  return n;
}

/* One entry's list for mask `m`: the names NCCL may use, or ^ and those it
 * may not, whichever names fewer ("^" alone is not written: it names
 * nothing). */
static void
append_list (GString *s, guint8 m, gboolean proto)
{
  guint n;
  const char *const *names = names_of (proto, &n);
  guint8 all = proto ? PROTO_ALL : ALGO_ALL;
  guint8 off = (guint8) (m & all), on = (guint8) (all & ~off);
  gboolean exclude = on == 0 || (off != 0 && popcount8 (off) < popcount8 (on));
  guint8 listed = exclude ? off : on;
  if (exclude)
    g_string_append_c (s, '^');
  gboolean first = TRUE;
  for (guint i = 0; i < n; i++)
    if (listed & (1u << i))
      {
        g_string_append_printf (s, "%s%s", first ? "" : ",", names[i]);
        first = FALSE;
      }
}

char *
sp_topo_nccl_text (const guint8 off[SP_TOPO_NCCL_FUNCS], gboolean proto)
{
  g_return_val_if_fail (off != NULL, NULL);
  guint set = 0;
  for (guint f = 0; f < SP_TOPO_NCCL_FUNCS; f++)
    set += off[f] != 0;
  if (set == 0)
    return NULL;
  GString *s = g_string_new (NULL);
  /* every collective restricted: the commonest restriction first, with no
   * prefix (NCCL allows that on the first entry only), then the others */
  int common = -1;
  if (set == SP_TOPO_NCCL_FUNCS)
    {
      guint best = 0;
      for (guint f = 0; f < SP_TOPO_NCCL_FUNCS; f++)
        {
          guint same = 0;
          for (guint g = 0; g < SP_TOPO_NCCL_FUNCS; g++)
            same += off[g] == off[f];
          if (same > best)
            best = same, common = (int) f;
        }
      append_list (s, off[common], proto);
    }
  for (guint f = 0; f < SP_TOPO_NCCL_FUNCS; f++)
    if (off[f] != 0 && (common < 0 || off[f] != off[common]))
      {
        if (s->len > 0)
          g_string_append_c (s, ';');
        g_string_append_printf (s, "%s:", funcs[f].nccl);
        append_list (s, off[f], proto);
      }
  return g_string_free (s, FALSE);
}

gboolean
sp_topo_spec_nccl_allows (const SpTopoSpec *spec, SpColl coll, SpAlgo algo, SpProto proto)
{
  g_return_val_if_fail (spec != NULL, TRUE);
  int f = sp_topo_nccl_func (coll);
  if (f < 0)
    return TRUE;
  guint8 off = spec->nccl_algo_off[f] | sp_topo_nccl_algos_lacking ((int) spec->nccl_version);
  if ((guint) algo < G_N_ELEMENTS (algo_nccl) && (off & (1u << algo)))
    return FALSE;
  if ((guint) proto < G_N_ELEMENTS (proto_nccl) && (spec->nccl_proto_off[f] & (1u << proto)))
    return FALSE;
  return TRUE;
}

gboolean
sp_topo_spec_nccl_ll128_forced (const SpTopoSpec *spec, SpColl coll)
{
  g_return_val_if_fail (spec != NULL, FALSE);
  int f = sp_topo_nccl_func (coll);
  return f >= 0 && (spec->nccl_proto_off[f] & SP_TOPO_NCCL_PROTO_SET)
         && !(spec->nccl_proto_off[f] & (1u << SP_PROTO_LL128));
}

/* Whether every mask holds only bits NCCL has names for, and a protocol
 * mask with any protocol off also says NCCL_PROTO sets it. */
gboolean
sp_topo_nccl_masks_valid (const SpTopoSpec *spec)
{
  for (guint f = 0; f < SP_TOPO_NCCL_FUNCS; f++)
    {
      guint8 a = spec->nccl_algo_off[f], pr = spec->nccl_proto_off[f];
      if ((a & ~ALGO_ALL) || (pr & ~(PROTO_ALL | SP_TOPO_NCCL_PROTO_SET))
          || ((pr & PROTO_ALL) && !(pr & SP_TOPO_NCCL_PROTO_SET)))
        return FALSE;
    }
  return TRUE;
}
