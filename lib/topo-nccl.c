/* [nccl] algo / proto: NCCL_ALGO and NCCL_PROTO values, read and written in
 * NCCL's own syntax (src/graph/tuning.cc parseList), as per-collective
 * masks of what NCCL may not choose.  topo.h has the grammar. */
#include "config.h"
#include "shardplan/topo.h"
#include "shardplan/error.h"
#include "topo-private.h"

#include <stdarg.h>
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
  for (guint i = 0; i < SP_TOPO_NCCL_FUNCS; i++)
    if (funcs[i].coll == coll)
      return (int) i;
  return -1;
}

/* The bit of name `name` (already trimmed) in the algorithm or protocol
 * list, or -1.  NCCL's spelling or shardplan's (nvls_tree …), any case. */
static int
name_bit (const char *name, gboolean proto)
{
  const char *const *names = proto ? proto_nccl : algo_nccl;
  guint n = proto ? G_N_ELEMENTS (proto_nccl) : G_N_ELEMENTS (algo_nccl);
  for (guint i = 0; i < n; i++)
    if (g_ascii_strcasecmp (name, names[i]) == 0)
      return (int) i;
  if (proto)
    {
      SpProto p;
      return sp_proto_from_name (name, &p) && p != SP_PROTO_AUTO ? (int) p : -1;
    }
  SpAlgo a;
  return sp_algo_from_name (name, &a) && (guint) a < G_N_ELEMENTS (algo_nccl) ? (int) a : -1;
}

static int
func_index (const char *name)
{
  for (guint i = 0; i < SP_TOPO_NCCL_FUNCS; i++)
    if (g_ascii_strcasecmp (name, funcs[i].nccl) == 0)
      return (int) i;
  SpColl c;
  return sp_coll_from_name (name, &c) ? sp_topo_nccl_func (c) : -1;
}

static char *
names_list (gboolean proto)
{
  const char *const *names = proto ? proto_nccl : algo_nccl;
  guint n = proto ? G_N_ELEMENTS (proto_nccl) : G_N_ELEMENTS (algo_nccl);
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < n; i++)
    g_string_append_printf (s, "%s%s", i ? ", " : "", names[i]);
  return g_string_free (s, FALSE);
}

static gboolean
bad (GError **error, const char *what, const char *text, const char *fmt, ...) G_GNUC_PRINTF (4, 5);

static gboolean
bad (GError **error, const char *what, const char *text, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *why = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY, "%s '%s': %s", what, text, why);
  return FALSE;
}

gboolean
sp_topo_nccl_parse (const char *what, const char *text, gboolean proto,
                    guint8 out_off[SP_TOPO_NCCL_FUNCS], GError **error)
{
  g_return_val_if_fail (what != NULL && text != NULL && out_off != NULL, FALSE);
  const char *kind = proto ? "protocol" : "algorithm";
  guint8 all = proto ? PROTO_ALL : ALGO_ALL;
  guint8 off[SP_TOPO_NCCL_FUNCS] = { 0 };
  g_auto (GStrv) entries = g_strsplit (text, ";", -1);
  guint n_entries = g_strv_length (entries);
  if (n_entries == 0 || (n_entries == 1 && *g_strstrip (entries[0]) == '\0'))
    return bad (error, what, text, "empty: expected a list of %s names", kind);
  for (guint e = 0; e < n_entries; e++)
    {
      char *entry = g_strstrip (entries[e]);
      if (*entry == '\0')
        return bad (error, what, text, "entry %u is empty", e + 1);
      int func = -1;
      char *colon = strchr (entry, ':');
      if (colon != NULL)
        {
          *colon = '\0';
          char *prefix = g_strstrip (entry);
          func = func_index (prefix);
          if (func < 0)
            return bad (error, what, text,
                        "'%s' is not a collective NCCL_%s restricts: expected Broadcast, "
                        "Reduce, AllGather, ReduceScatter or AllReduce (all-to-all and "
                        "send / recv are NCCL's p2p, which it does not touch)",
                        prefix, proto ? "PROTO" : "ALGO");
          entry = g_strstrip (colon + 1);
        }
      gboolean exclude = entry[0] == '^';
      if (exclude)
        entry = g_strstrip (entry + 1);
      guint8 listed = 0;
      g_auto (GStrv) names = g_strsplit (entry, ",", -1);
      for (guint i = 0; names[i] != NULL; i++)
        {
          char *name = g_strstrip (names[i]);
          if (*name == '\0')
            return bad (error, what, text, "an empty %s name in entry %u", kind, e + 1);
          int bit = name_bit (name, proto);
          if (bit < 0)
            {
              g_autofree char *list = names_list (proto);
              return bad (error, what, text, "'%s' is not an NCCL %s: expected %s", name, kind,
                          list);
            }
          listed |= (guint8) (1u << bit);
        }
      if (names[0] == NULL)
        return bad (error, what, text, "entry %u names no %s", e + 1, kind);
      guint8 m = exclude ? listed : (guint8) (all & ~listed);
      for (guint f = 0; f < SP_TOPO_NCCL_FUNCS; f++)
        if (func < 0 || (guint) func == f)
          off[f] = m;
    }
  memcpy (out_off, off, sizeof off);
  return TRUE;
}

static guint
popcount8 (guint8 m)
{
  guint n = 0;
  for (; m != 0; m &= (guint8) (m - 1))
    n++;
  return n;
}

/* LIST or ^LIST for one mask, whichever names fewer. */
static void
append_list (GString *s, guint8 off, gboolean proto)
{
  const char *const *names = proto ? proto_nccl : algo_nccl;
  guint n = proto ? G_N_ELEMENTS (proto_nccl) : G_N_ELEMENTS (algo_nccl);
  guint8 all = proto ? PROTO_ALL : ALGO_ALL;
  guint8 on = (guint8) (all & ~off);
  gboolean exclude = on == 0 || popcount8 (off) < popcount8 (on);
  guint8 m = exclude ? off : on;
  if (exclude)
    g_string_append_c (s, '^');
  gboolean first = TRUE;
  for (guint i = 0; i < n; i++)
    if (m & (1u << i))
      {
        g_string_append_printf (s, "%s%s", first ? "" : ",", names[i]);
        first = FALSE;
      }
}

char *
sp_topo_nccl_text (const guint8 off[SP_TOPO_NCCL_FUNCS], gboolean proto)
{
  g_return_val_if_fail (off != NULL, NULL);
  gboolean any = FALSE, same = TRUE;
  for (guint f = 0; f < SP_TOPO_NCCL_FUNCS; f++)
    {
      any = any || off[f] != 0;
      same = same && off[f] == off[0];
    }
  if (!any)
    return NULL;
  GString *s = g_string_new (NULL);
  if (same)
    append_list (s, off[0], proto);
  else
    for (guint f = 0; f < SP_TOPO_NCCL_FUNCS; f++)
      if (off[f] != 0)
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
  if ((guint) algo < G_N_ELEMENTS (algo_nccl) && (spec->nccl_algo_off[f] & (1u << algo)))
    return FALSE;
  if ((guint) proto < G_N_ELEMENTS (proto_nccl) && (spec->nccl_proto_off[f] & (1u << proto)))
    return FALSE;
  return TRUE;
}

/* Whether every mask holds only bits of known names (a spec built in code). */
gboolean
sp_topo_nccl_masks_valid (const SpTopoSpec *spec)
{
  for (guint f = 0; f < SP_TOPO_NCCL_FUNCS; f++)
    if ((spec->nccl_algo_off[f] & ~ALGO_ALL) || (spec->nccl_proto_off[f] & ~PROTO_ALL))
      return FALSE;
  return TRUE;
}
