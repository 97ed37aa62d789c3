/* All-to-all on the flow engine without n(n−1) flows.
 *
 * des.c's direct all-to-all is one transfer per ordered pair of ranks; a
 * transfer between nodes is `count` member flows (one per NIC of the
 * destination GPU, wire/count bytes, weight 1/count, cap/count each) over
 * NIC tx → [leaf up → leaf down] → NIC rx.  Every member of one all-to-all
 * has the same bytes / weight and cap / weight.  Two exact reductions:
 *
 * PATHS: members with the same path (same source node, destination node,
 * source NIC, destination NIC) always freeze in the same filling round at
 * the same rate (they cross the same links, have the same cap / weight),
 * whatever else shares those links, so one engine entry with multiplicity
 * q (sp_engine_add_flow_class, no shares) stands for them: N(N−1) × (NIC
 * pairs) entries instead of n(n−1) × count.
 *
 * CLASSES: the group's nodes joined through shared leaf switches form
 * islands (rail: a 32-node block; fat-tree: a leaf's nodes, or a run of
 * leaves that straddling NICs tie together; one switch: single nodes), and
 * each island owns its leaves.  Islands with the same canonical form (node
 * by node: local ranks and leaves renumbered by first appearance; the
 * leaves' capacities) are interchangeable, and inside an island the nodes
 * with the same local ranks and the same leaves (a local class) are too:
 * those swaps map the network and the all-to-all onto themselves.  The
 * members (u, v, NIC pair) with u in local class a of an island of type S,
 * v in class b of one of type D, in the same island or not, form one orbit
 * of that symmetry group; max-min fairness has a unique answer, which a
 * symmetry maps onto itself, so every member of the orbit gets the same
 * rate — and each link the class touches is crossed by the same number of
 * members as its images.  The engine then solves the class as one entry
 * with per-link shares, exactly: every link sees the weight it sees with
 * per-pair flows, and freezes at the same level.  Exact for the all-to-all
 * alone (or with contention that respects the symmetry); under asymmetric
 * contention (plan step with other jobs on some of the links) all members
 * share the rate of the most constrained one: feasible (no link over its
 * capacity) but no longer exactly max-min.  So des.c uses CLASSES only
 * where PATHS would exceed SP_DES_A2A_PATHS_MAX entries.
 *
 * Intra-node transfers stay one flow per pair (n × (k − 1) of them). */
#include "config.h"
#include "sim-internal.h"
#include "sim-testing.h"

#include <math.h>
#include <string.h>

SpSimA2aMode sp_sim_testing_a2a = SP_SIM_A2A_AUTO;

typedef struct {
  guint32 nic_s, nic_d, q;
} NicPair;

/* An island: group nodes joined through the leaf switches they share
 * (rail: a 32-node block; fat-tree: the nodes of one leaf, or of a run of
 * leaves their NICs straddle; one switch: one node).  Islands own their
 * leaves.  Nodes in sorted order; local class of each. */
typedef struct {
  GArray *nodes;    /* guint32 group-node indices, by topology node id */
  guint32 *lclass;  /* per node of `nodes` */
  guint32 type;
} Island;

/* Islands of one canonical form (same local ranks and leaf pattern node by
 * node, same leaf capacities): interchangeable.  A local class: the nodes
 * of an island with the same local ranks and the same leaves. */
typedef struct {
  GArray *islands;  /* guint32 island ids */
  guint32 n_lc;
  guint32 *lc_lset;  /* per local class */
  guint32 *lc_count; /* nodes per island */
  guint32 *lc_leaf;  /* [lc × nics + j]: leaf within the island's numbering */
} Type;

struct _SpA2a {
  const SpNet *net;
  guint32 g, nics, count;
  gboolean rail;
  SpSimA2aMode mode;
  const guint32 *ranks; /* during sp_a2a_new only */
  guint32 n;
  /* group nodes in order of first appearance */
  guint32 n_nodes;
  guint32 *node_id;    /* topology node of each group node */
  guint32 *node_off;   /* CSR into node_ranks */
  guint32 *node_ranks; /* global ranks per group node */
  guint32 *node_lset;
  GPtrArray *lsets;    /* GArray of guint32 locals, sorted */
  GPtrArray *pairs;    /* per (ls × L + ld): GArray of NicPair, NULL until computed */
  /* CLASSES */
  guint32 n_islands, n_types;
  Island *islands;
  Type *types;
  guint32 *node_leaf; /* [group node × nics + j]: leaf of NIC j */
  guint64 intra, paths, class_entries, class_refs;
};

static guint
u32v_hash (gconstpointer p)
{
  const GArray *a = p;
  guint h = 5381;
  for (guint i = 0; i < a->len; i++)
    h = h * 33 + g_array_index (a, guint32, i);
  return h;
}

static gboolean
u32v_equal (gconstpointer pa, gconstpointer pb)
{
  const GArray *a = pa, *b = pb;
  return a->len == b->len && memcmp (a->data, b->data, a->len * sizeof (guint32)) == 0;
}

static int
cmp_u32 (gconstpointer a, gconstpointer b)
{
  guint32 x = *(const guint32 *) a, y = *(const guint32 *) b;
  return x < y ? -1 : x > y;
}

/* Intern `key` (taken) in `index` / `list`; returns its id. */
static guint32
intern (GHashTable *index, GPtrArray *list, GArray *key)
{
  gpointer v = g_hash_table_lookup (index, key);
  if (v != NULL)
    {
      g_array_free (key, TRUE);
      return GPOINTER_TO_UINT (v) - 1;
    }
  g_ptr_array_add (list, key);
  g_hash_table_insert (index, key, GUINT_TO_POINTER (list->len));
  return list->len - 1;
}

/* The NIC pairs the members between a node of local set ls and one of ld
 * use, with the count of members on each. */
static const GArray *
nic_pairs (SpA2a *a, guint32 ls, guint32 ld)
{
  guint32 L = a->lsets->len;
  GArray **slot = (GArray **) &g_ptr_array_index (a->pairs, (gsize) ls * L + ld);
  if (*slot != NULL)
    return *slot;
  guint32 *q = g_new0 (guint32, (gsize) a->nics * a->nics);
  const GArray *A = g_ptr_array_index (a->lsets, ls), *B = g_ptr_array_index (a->lsets, ld);
  for (guint i = 0; i < A->len; i++)
    for (guint j = 0; j < B->len; j++)
      {
        guint32 first_s, first_d, count;
        sp_net_gpu_nics (a->net, g_array_index (B, guint32, j), &first_d, &count);
        if (a->rail)
          first_s = first_d;
        else
          sp_net_gpu_nics (a->net, g_array_index (A, guint32, i), &first_s, &count);
        for (guint32 k = 0; k < count; k++)
          q[(first_s + k) * a->nics + first_d + k]++;
      }
  GArray *out = g_array_new (FALSE, FALSE, sizeof (NicPair));
  for (guint32 s = 0; s < a->nics; s++)
    for (guint32 d = 0; d < a->nics; d++)
      if (q[s * a->nics + d])
        {
          NicPair p = { s, d, q[s * a->nics + d] };
          g_array_append_val (out, p);
        }
  g_free (q);
  return *slot = out;
}

static void
build_nodes (SpA2a *a)
{
  GHashTable *index = g_hash_table_new (g_direct_hash, g_direct_equal);
  guint32 *of = g_new (guint32, a->n);
  guint32 *cnt = g_new0 (guint32, a->n + 1);
  a->node_id = g_new (guint32, a->n);
  guint32 nn = 0;
  for (guint32 i = 0; i < a->n; i++)
    {
      guint32 node = a->ranks[i] / a->g;
      gpointer v = g_hash_table_lookup (index, GUINT_TO_POINTER (node + 1));
      if (v == NULL)
        {
          a->node_id[nn] = node;
          v = GUINT_TO_POINTER (++nn);
          g_hash_table_insert (index, GUINT_TO_POINTER (node + 1), v);
        }
      of[i] = GPOINTER_TO_UINT (v) - 1;
      cnt[of[i]]++;
    }
  a->n_nodes = nn;
  a->node_off = g_new0 (guint32, nn + 1);
  for (guint32 v = 0; v < nn; v++)
    a->node_off[v + 1] = a->node_off[v] + cnt[v];
  a->node_ranks = g_new (guint32, a->n);
  memset (cnt, 0, sizeof (guint32) * (nn + 1));
  for (guint32 i = 0; i < a->n; i++)
    a->node_ranks[a->node_off[of[i]] + cnt[of[i]]++] = a->ranks[i];
  g_free (of);
  g_free (cnt);
  g_hash_table_destroy (index);

  /* local sets */
  GHashTable *li = g_hash_table_new (u32v_hash, u32v_equal);
  a->lsets = g_ptr_array_new_with_free_func ((GDestroyNotify) g_array_unref);
  a->node_lset = g_new (guint32, nn);
  for (guint32 v = 0; v < nn; v++)
    {
      GArray *key = g_array_new (FALSE, FALSE, sizeof (guint32));
      for (guint32 i = a->node_off[v]; i < a->node_off[v + 1]; i++)
        {
          guint32 l = a->node_ranks[i] % a->g;
          g_array_append_val (key, l);
        }
      g_array_sort (key, cmp_u32);
      a->node_lset[v] = intern (li, a->lsets, key);
    }
  g_hash_table_destroy (li);
  guint32 L = a->lsets->len;
  a->pairs = g_ptr_array_new_with_free_func ((GDestroyNotify) g_array_unref);
  g_ptr_array_set_size (a->pairs, (guint) ((gsize) L * L));

  /* counts: intra pairs, path entries */
  guint64 *per = g_new0 (guint64, L);
  for (guint32 v = 0; v < nn; v++)
    {
      guint64 k = a->node_off[v + 1] - a->node_off[v];
      a->intra += k * (k - 1);
      per[a->node_lset[v]]++;
    }
  for (guint32 s = 0; s < L; s++)
    for (guint32 d = 0; d < L; d++)
      {
        guint64 np = nic_pairs (a, s, d)->len;
        a->paths += np * per[s] * (per[d] - (s == d));
      }
  g_free (per);
}

static guint32
uf_find (guint32 *parent, guint32 x)
{
  while (parent[x] != x)
    x = parent[x] = parent[parent[x]];
  return x;
}

static int
cmp_node_id (gconstpointer pa, gconstpointer pb, gpointer data)
{
  const guint32 *id = data;
  guint32 x = id[*(const guint32 *) pa], y = id[*(const guint32 *) pb];
  return x < y ? -1 : x > y;
}

/* Islands, their types and local classes. */
static void
build_classes (SpA2a *a)
{
  guint32 nn = a->n_nodes, nics = a->nics;
  a->node_leaf = g_new (guint32, (gsize) nn * nics);
  guint32 *parent = g_new (guint32, nn);
  GHashTable *first = g_hash_table_new (g_direct_hash, g_direct_equal); /* leaf+1 → node+1 */
  for (guint32 v = 0; v < nn; v++)
    {
      parent[v] = v;
      for (guint32 j = 0; j < nics; j++)
        {
          guint32 l = sp_net_leaf (a->net, a->node_id[v], j);
          a->node_leaf[(gsize) v * nics + j] = l;
          if (l == SP_NET_NO_LEAF)
            continue;
          gpointer o = g_hash_table_lookup (first, GUINT_TO_POINTER (l + 1));
          if (o == NULL)
            g_hash_table_insert (first, GUINT_TO_POINTER (l + 1), GUINT_TO_POINTER (v + 1));
          else
            {
              guint32 r1 = uf_find (parent, GPOINTER_TO_UINT (o) - 1), r2 = uf_find (parent, v);
              if (r1 != r2)
                parent[MAX (r1, r2)] = MIN (r1, r2);
            }
        }
    }
  g_hash_table_destroy (first);
  /* islands in order of their first node */
  guint32 *island_of_root = g_new (guint32, nn);
  GArray *isl = g_array_new (FALSE, TRUE, sizeof (Island));
  for (guint32 v = 0; v < nn; v++)
    {
      guint32 r = uf_find (parent, v);
      if (r == v)
        {
          Island I = { g_array_new (FALSE, FALSE, sizeof (guint32)), NULL, 0 };
          g_array_append_val (isl, I);
          island_of_root[v] = isl->len - 1;
        }
      g_array_append_val (g_array_index (isl, Island, island_of_root[r]).nodes, v);
    }
  g_free (island_of_root);
  g_free (parent);
  a->n_islands = isl->len;
  a->islands = (Island *) g_array_free (isl, FALSE);

  /* canonical form of each island: node by node (by topology node id) its
   * local set and its leaves renumbered by first appearance, then the
   * capacities of those leaves */
  GHashTable *ti = g_hash_table_new (u32v_hash, u32v_equal);
  GPtrArray *tkeys = g_ptr_array_new_with_free_func ((GDestroyNotify) g_array_unref);
  GArray *types = g_array_new (FALSE, TRUE, sizeof (Type));
  for (guint32 i = 0; i < a->n_islands; i++)
    {
      Island *I = &a->islands[i];
      g_array_sort_with_data (I->nodes, cmp_node_id, a->node_id);
      guint32 m = I->nodes->len;
      GHashTable *ren = g_hash_table_new (g_direct_hash, g_direct_equal);
      GArray *leaves = g_array_new (FALSE, FALSE, sizeof (guint32));
      GArray *key = g_array_new (FALSE, FALSE, sizeof (guint32));
      guint32 *rel = g_new (guint32, (gsize) m * nics);
      for (guint32 k = 0; k < m; k++)
        {
          guint32 v = g_array_index (I->nodes, guint32, k);
          g_array_append_val (key, a->node_lset[v]);
          for (guint32 j = 0; j < nics; j++)
            {
              guint32 l = a->node_leaf[(gsize) v * nics + j], r = SP_NET_NO_LEAF;
              if (l != SP_NET_NO_LEAF)
                {
                  gpointer x = g_hash_table_lookup (ren, GUINT_TO_POINTER (l + 1));
                  if (x == NULL)
                    {
                      g_array_append_val (leaves, l);
                      x = GUINT_TO_POINTER (leaves->len);
                      g_hash_table_insert (ren, GUINT_TO_POINTER (l + 1), x);
                    }
                  r = GPOINTER_TO_UINT (x) - 1;
                }
              rel[(gsize) k * nics + j] = r;
              g_array_append_val (key, r);
            }
        }
      for (guint k = 0; k < leaves->len; k++)
        {
          double cap = sp_net_link_capacity (
            a->net, sp_net_leaf_up (a->net, g_array_index (leaves, guint32, k)));
          guint32 bits[2];
          memcpy (bits, &cap, sizeof bits);
          g_array_append_vals (key, bits, 2);
        }
      /* local classes: (local set, relative leaves) in order of appearance */
      GHashTable *lci = g_hash_table_new (u32v_hash, u32v_equal);
      GPtrArray *lckeys = g_ptr_array_new_with_free_func ((GDestroyNotify) g_array_unref);
      I->lclass = g_new (guint32, m);
      for (guint32 k = 0; k < m; k++)
        {
          GArray *ck = g_array_new (FALSE, FALSE, sizeof (guint32));
          g_array_append_val (ck, a->node_lset[g_array_index (I->nodes, guint32, k)]);
          g_array_append_vals (ck, rel + (gsize) k * nics, nics);
          I->lclass[k] = intern (lci, lckeys, ck);
        }
      guint32 n_types_before = tkeys->len;
      I->type = intern (ti, tkeys, key);
      if (I->type == n_types_before)
        {
          Type T = { g_array_new (FALSE, FALSE, sizeof (guint32)), lckeys->len, NULL, NULL, NULL };
          T.lc_lset = g_new0 (guint32, T.n_lc);
          T.lc_count = g_new0 (guint32, T.n_lc);
          T.lc_leaf = g_new (guint32, (gsize) T.n_lc * nics);
          for (guint32 c = 0; c < T.n_lc; c++)
            {
              GArray *ck = g_ptr_array_index (lckeys, c);
              T.lc_lset[c] = g_array_index (ck, guint32, 0);
              memcpy (T.lc_leaf + (gsize) c * nics, (guint32 *) ck->data + 1, nics * sizeof (guint32));
            }
          for (guint32 k = 0; k < m; k++)
            T.lc_count[I->lclass[k]]++;
          g_array_append_val (types, T);
        }
      g_array_append_val (g_array_index (types, Type, I->type).islands, i);
      g_hash_table_destroy (lci);
      g_ptr_array_free (lckeys, TRUE);
      g_hash_table_destroy (ren);
      g_array_free (leaves, TRUE);
      g_free (rel);
    }
  g_hash_table_destroy (ti);
  g_ptr_array_free (tkeys, TRUE);
  a->n_types = types->len;
  a->types = (Type *) g_array_free (types, FALSE);
}

/* The leaf of NIC j of the local class c nodes of island i. */
static guint32
island_leaf (const SpA2a *a, guint32 i, guint32 c, guint32 j)
{
  const Island *I = &a->islands[i];
  for (guint k = 0; k < I->nodes->len; k++)
    if (I->lclass[k] == c)
      return a->node_leaf[(gsize) g_array_index (I->nodes, guint32, k) * a->nics + j];
  g_assert_not_reached ();
}

/* Walks the classes; emit (when engine != NULL) or count them. */
static void
walk_classes (SpA2a *a, SpEngine *engine, guint32 job, double wire, double cap)
{
  GArray *links = g_array_new (FALSE, FALSE, sizeof (guint32));
  GArray *share = g_array_new (FALSE, FALSE, sizeof (double));
  double c = a->count;
  guint32 nics = a->nics;
#define PUSH(l, s)                                                                                 \
  do                                                                                               \
    {                                                                                              \
      guint32 l_ = (l);                                                                            \
      double s_ = (s);                                                                             \
      g_array_append_val (links, l_);                                                              \
      g_array_append_val (share, s_);                                                              \
    }                                                                                              \
  while (0)
  for (guint32 ts = 0; ts < a->n_types; ts++)
    for (guint32 ca = 0; ca < a->types[ts].n_lc; ca++)
      for (guint32 td = 0; td < a->n_types; td++)
        for (guint32 cb = 0; cb < a->types[td].n_lc; cb++)
          for (int same = 1; same >= 0; same--)
            {
              const Type *S = &a->types[ts], *D = &a->types[td];
              if (same && ts != td)
                continue;
              double na = S->lc_count[ca], nb = D->lc_count[cb];
              double all_a = na * S->islands->len, all_b = nb * D->islands->len;
              /* members per source node and per destination node */
              double partners, sources;
              if (same)
                {
                  partners = nb - (ca == cb);
                  sources = na - (ca == cb);
                }
              else
                {
                  partners = all_b - (ts == td ? nb : 0);
                  sources = all_a - (ts == td ? na : 0);
                }
              if (partners <= 0 || sources <= 0)
                continue;
              const GArray *np = nic_pairs (a, S->lc_lset[ca], D->lc_lset[cb]);
              for (guint p = 0; p < np->len; p++)
                {
                  const NicPair *pr = &g_array_index (np, NicPair, p);
                  double q = pr->q;
                  g_array_set_size (links, 0);
                  g_array_set_size (share, 0);
                  for (guint i = 0; i < S->islands->len; i++)
                    {
                      const Island *I = &a->islands[g_array_index (S->islands, guint32, i)];
                      for (guint k = 0; k < I->nodes->len; k++)
                        if (I->lclass[k] == ca)
                          PUSH (sp_net_nic_tx (a->net,
                                               a->node_id[g_array_index (I->nodes, guint32, k)],
                                               pr->nic_s),
                                partners * q);
                    }
                  /* a leaf hop: between islands always (they own their
                   * leaves), inside one when the two classes' leaves for
                   * these NICs differ (the same in every island of a type) */
                  guint32 rs = S->lc_leaf[(gsize) ca * nics + pr->nic_s];
                  gboolean hop = rs != SP_NET_NO_LEAF
                                 && (!same || rs != D->lc_leaf[(gsize) cb * nics + pr->nic_d]);
                  if (hop)
                    {
                      for (guint i = 0; i < S->islands->len; i++)
                        PUSH (sp_net_leaf_up (a->net, island_leaf (a, g_array_index (S->islands,
                                                                                     guint32, i),
                                                                   ca, pr->nic_s)),
                              na * partners * q);
                      for (guint i = 0; i < D->islands->len; i++)
                        PUSH (sp_net_leaf_down (a->net, island_leaf (a, g_array_index (D->islands,
                                                                                       guint32, i),
                                                                     cb, pr->nic_d)),
                              nb * sources * q);
                    }
                  for (guint i = 0; i < D->islands->len; i++)
                    {
                      const Island *I = &a->islands[g_array_index (D->islands, guint32, i)];
                      for (guint k = 0; k < I->nodes->len; k++)
                        if (I->lclass[k] == cb)
                          PUSH (sp_net_nic_rx (a->net,
                                               a->node_id[g_array_index (I->nodes, guint32, k)],
                                               pr->nic_d),
                                sources * q);
                    }
                  double mult = all_a * partners * q;
                  if (engine != NULL)
                    sp_engine_add_flow_class (engine, job, mult, wire / c,
                                              (guint32 *) links->data, (double *) share->data,
                                              links->len, 1.0 / c, cap / c);
                  else
                    {
                      a->class_entries++;
                      a->class_refs += links->len;
                    }
                }
            }
#undef PUSH
  g_array_free (links, TRUE);
  g_array_free (share, TRUE);
}

/* Engine entries a mode costs (a pooled link ≈ 1/8 of an entry's memory). */
static guint64
inter_cost (const SpA2a *a, SpSimA2aMode mode)
{
  switch (mode)
    {
    case SP_SIM_A2A_PAIRS:
      return (guint64) a->n * (a->n - 1) * a->count;
    case SP_SIM_A2A_PATHS:
      return a->paths;
    default:
      return a->class_entries + a->class_refs / 8;
    }
}

SpA2a *
sp_a2a_new (const SpNet *net, const SpTopoSpec *spec, const guint32 *ranks, guint32 n)
{
  SpA2a *a = g_new0 (SpA2a, 1);
  a->net = net;
  a->g = spec->gpus_per_node;
  a->nics = MAX (spec->nics_per_node, 1);
  guint32 first;
  sp_net_gpu_nics (net, 0, &first, &a->count);
  a->rail = sp_net_rail (net);
  a->ranks = ranks;
  a->n = n;
  build_nodes (a);
  a->ranks = NULL;
  a->mode = sp_sim_testing_a2a;
  if (a->mode == SP_SIM_A2A_AUTO)
    a->mode = a->paths <= SP_DES_A2A_PATHS_MAX ? SP_SIM_A2A_PATHS : SP_SIM_A2A_CLASSES;
  if (a->mode == SP_SIM_A2A_CLASSES)
    {
      build_classes (a);
      walk_classes (a, NULL, 0, 0, 0);
      if (sp_sim_testing_a2a == SP_SIM_A2A_AUTO
          && inter_cost (a, SP_SIM_A2A_CLASSES) >= inter_cost (a, SP_SIM_A2A_PATHS))
        a->mode = SP_SIM_A2A_PATHS;
    }
  return a;
}

guint64
sp_a2a_flows (const SpA2a *a)
{
  return (a->mode == SP_SIM_A2A_PAIRS ? 0 : a->intra) + inter_cost (a, a->mode);
}

int
sp_a2a_mode (const SpA2a *a)
{
  return a->mode;
}

void
sp_a2a_free (SpA2a *a)
{
  if (a == NULL)
    return;
  g_free (a->node_id);
  g_free (a->node_off);
  g_free (a->node_ranks);
  g_free (a->node_lset);
  g_ptr_array_free (a->pairs, TRUE);
  g_ptr_array_free (a->lsets, TRUE);
  for (guint32 i = 0; i < a->n_islands; i++)
    {
      g_array_free (a->islands[i].nodes, TRUE);
      g_free (a->islands[i].lclass);
    }
  g_free (a->islands);
  for (guint32 t = 0; t < a->n_types; t++)
    {
      g_array_free (a->types[t].islands, TRUE);
      g_free (a->types[t].lc_lset);
      g_free (a->types[t].lc_count);
      g_free (a->types[t].lc_leaf);
    }
  g_free (a->types);
  g_free (a->node_leaf);
  g_free (a);
}

void
sp_a2a_add_flows (SpA2a *a, SpEngine *engine, guint32 job, double wire, double cap)
{
  guint32 links[SP_PATH_MAX];
  g_return_if_fail (a->mode != SP_SIM_A2A_PAIRS);
  /* same node: one flow per ordered pair, NVLink-mesh non-neighbours over PCIe */
  for (guint32 v = 0; v < a->n_nodes; v++)
    for (guint32 i = a->node_off[v]; i < a->node_off[v + 1]; i++)
      for (guint32 j = a->node_off[v]; j < a->node_off[v + 1]; j++)
        if (i != j)
          {
            guint nl = sp_net_path_intra (a->net, a->node_ranks[i], a->node_ranks[j], TRUE, links);
            sp_engine_add_flow (engine, job, wire, links, nl, 1.0, cap);
          }
  if (a->mode == SP_SIM_A2A_CLASSES)
    {
      walk_classes (a, engine, job, wire, cap);
      return;
    }
  double c = a->count;
  for (guint32 u = 0; u < a->n_nodes; u++)
    for (guint32 v = 0; v < a->n_nodes; v++)
      {
        if (u == v)
          continue;
        const GArray *np = nic_pairs (a, a->node_lset[u], a->node_lset[v]);
        for (guint p = 0; p < np->len; p++)
          {
            const NicPair *pr = &g_array_index (np, NicPair, p);
            guint nl = sp_net_path_inter (a->net, a->node_id[u] * a->g, a->node_id[v] * a->g,
                                          pr->nic_s, pr->nic_d, links);
            sp_engine_add_flow_class (engine, job, pr->q, wire / c, links, NULL, nl, 1.0 / c,
                                      cap / c);
          }
      }
}
