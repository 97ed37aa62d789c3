/* The plan: op storage, validation and equality.  JSON lives in plan-json.c.
 *
 * Plans of a whole training step reach 10^5–10^6 ops, so storage is chosen
 * for O(1) appends and stable pointers: ops live in fixed blocks of
 * OP_BLOCK that never move (sp_plan_op() pointers stay valid until the plan
 * is freed), dependency lists in slabs that never move, and names are
 * interned in one GStringChunk (a step repeats the same tags per micro-step).
 */
#include "config.h"
#include "shardplan/plan.h"
#include "shardplan/error.h"

#include <string.h>

#define OP_BLOCK_SHIFT 10
#define OP_BLOCK (1u << OP_BLOCK_SHIFT)          /* ops per storage block */
#define DEP_SLAB 65536u                          /* guint32 per dependency slab */

struct _SpPlan {
  SpGroupsOptions groups;
  GPtrArray *op_blocks;     /* SpOp[OP_BLOCK] each */
  guint32 n_ops;
  GStringChunk *strings;    /* op names, interned */
  GPtrArray *dep_slabs;     /* guint32 arrays */
  guint32 *dep_next;        /* free space in the last slab */
  gsize dep_left;
  GPtrArray *meta_keys;     /* insertion order; strings owned by meta */
  GHashTable *meta;         /* key -> value, both g_malloc'd */
};

static const char *const phase_names[] = {
  [SP_PHASE_NONE] = "none",
  [SP_PHASE_FORWARD] = "forward",
  [SP_PHASE_BACKWARD] = "backward",
  [SP_PHASE_OPTIMIZER] = "optimizer",
};

const char *
sp_phase_name (SpPhase phase)
{
  if ((guint) phase >= G_N_ELEMENTS (phase_names))
    return NULL;
  return phase_names[phase];
}

gboolean
sp_phase_from_name (const char *name, SpPhase *out_phase)
{
  if (name == NULL)
    return FALSE;
  for (guint i = 0; i < G_N_ELEMENTS (phase_names); i++)
    if (g_ascii_strcasecmp (name, phase_names[i]) == 0)
      {
        *out_phase = (SpPhase) i;
        return TRUE;
      }
  return FALSE;
}

SpPlan *
sp_plan_new (const SpGroupsOptions *groups)
{
  g_return_val_if_fail (groups != NULL, NULL);
  g_return_val_if_fail (groups->world_size >= 1, NULL);

  SpPlan *plan = g_new0 (SpPlan, 1);
  plan->groups = *groups;
  plan->op_blocks = g_ptr_array_new_with_free_func (g_free);
  plan->strings = g_string_chunk_new (64 * 1024);
  plan->dep_slabs = g_ptr_array_new_with_free_func (g_free);
  plan->meta_keys = g_ptr_array_new ();
  plan->meta = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  return plan;
}

void
sp_plan_free (SpPlan *plan)
{
  if (plan == NULL)
    return;
  g_ptr_array_unref (plan->op_blocks);
  g_string_chunk_free (plan->strings);
  g_ptr_array_unref (plan->dep_slabs);
  g_ptr_array_unref (plan->meta_keys);
  g_hash_table_unref (plan->meta);
  g_free (plan);
}

guint32
sp_plan_n_ops (const SpPlan *plan)
{
  g_return_val_if_fail (plan != NULL, 0);
  return plan->n_ops;
}

const SpOp *
sp_plan_op (const SpPlan *plan, guint32 id)
{
  g_return_val_if_fail (plan != NULL, NULL);
  g_return_val_if_fail (id < plan->n_ops, NULL);
  const SpOp *block = g_ptr_array_index (plan->op_blocks, id >> OP_BLOCK_SHIFT);
  return &block[id & (OP_BLOCK - 1)];
}

const SpGroupsOptions *
sp_plan_groups_options (const SpPlan *plan)
{
  g_return_val_if_fail (plan != NULL, NULL);
  return &plan->groups;
}

guint32
sp_plan_world_size (const SpPlan *plan)
{
  g_return_val_if_fail (plan != NULL, 0);
  return plan->groups.world_size;
}

/* ---- validation ---------------------------------------------------------- */

/* Kernels that run on each rank alone: no group. */
static gboolean
kind_is_local (SpColl kind)
{
  return kind == SP_COLL_COMPUTE || kind == SP_COLL_QUANTIZE || kind == SP_COLL_DEQUANTIZE
         || kind == SP_COLL_QUANT_REDUCE;
}

/* Kinds whose result combines values from several ranks: they need a
 * reduction; every other kind must say "none". */
static gboolean
kind_reduces (SpColl kind)
{
  switch (kind)
    {
    case SP_COLL_ALL_REDUCE: case SP_COLL_REDUCE: case SP_COLL_REDUCE_SCATTER:
    case SP_COLL_REDUCE_SCATTER_BLOCK: case SP_COLL_QUANT_REDUCE:
    case SP_COLL_REDUCE_SCATTER_COALESCED: case SP_COLL_ALL_TO_ALL_QUANT_REDUCE:
      return TRUE;
    default:
      return FALSE;
    }
}

/* Which families the options build, decided without building them (building
 * the groups of a 10^6-rank world just to check a name would be wasteful).
 * Mirrors sp_groups_has_family(): a family exists iff its option is set.
 * Returns the option's name for the error message when it does not. */
static gboolean
options_build_family (const SpGroupsOptions *o, SpFamily family, const char **out_option)
{
  switch (family)
    {
    case SP_FAMILY_WORLD:
      return TRUE;
    case SP_FAMILY_SHARD: case SP_FAMILY_REPLICATE:
      *out_option = "shard_size is 0";
      return o->shard_size > 0;
    case SP_FAMILY_SHARD_INTRA_NODE: case SP_FAMILY_SHARD_INTER_NODE:
      *out_option = o->shard_size > 0 ? "hierarchical is false" : "shard_size is 0";
      return o->shard_size > 0 && o->hierarchical;
    case SP_FAMILY_EXPERT: case SP_FAMILY_EXPERT_DATA:
      *out_option = "expert_parallel is 0";
      return o->expert_parallel > 0;
    case SP_FAMILY_TENSOR: case SP_FAMILY_DATA:
      *out_option = "tensor_parallel is 0";
      return o->tensor_parallel > 0;
    case SP_FAMILY_ZERO_PARAM:
      *out_option = "zero_param_group_size is 0";
      return o->zero_param_group_size > 0;
    case SP_FAMILY_A2A_LOCAL: case SP_FAMILY_A2A_GLOBAL:
      *out_option = "local_all_to_all is false";
      return o->local_all_to_all;
    default:
      *out_option = "it is not a family";
      return FALSE;
    }
}

static const char *
family_label (SpFamily family)
{
  if (family == SP_FAMILY_NONE)
    return "none";
  const char *name = sp_family_name (family);
  return name ? name : "?";
}

/* All errors start with "op ID ('NAME'): " so a reader finds the op. */
G_GNUC_PRINTF (5, 6) static gboolean
op_error (GError **error, guint32 id, const char *name, SpErrorCode code, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_set_error (error, SP_ERROR, code, "op %u ('%s'): %s", id, name, msg);
  return FALSE;
}

static gboolean
validate_sizes (const SpOp *op, guint32 id, const char *name, GError **error)
{
  guint bits = sp_dtype_bits (op->dtype);
  if (bits == 0)
    {
      if (op->bytes != 0 || op->count != 0)
        return op_error (error, id, name, SP_ERROR_INVALID_PLAN,
                         "%" G_GUINT64_FORMAT " bytes (count %" G_GUINT64_FORMAT ") of dtype 'none': "
                         "an op that moves or holds data needs an element type",
                         op->bytes, op->count);
      return TRUE;
    }
  guint64 elems;
  if (bits < 8)
    {
      /* int4: 8/bits elements per byte */
      if (op->bytes > G_MAXUINT64 / (8 / bits))
        return op_error (error, id, name, SP_ERROR_INVALID_PLAN,
                         "%" G_GUINT64_FORMAT " bytes of %s is more than 2^64 elements",
                         op->bytes, sp_dtype_name (op->dtype));
      elems = op->bytes * (8 / bits);
    }
  else
    {
      guint64 width = bits / 8;
      if (op->bytes % width != 0)
        return op_error (error, id, name, SP_ERROR_INVALID_PLAN,
                         "%" G_GUINT64_FORMAT " bytes is not a whole number of %s elements "
                         "(%" G_GUINT64_FORMAT " bytes each)",
                         op->bytes, sp_dtype_name (op->dtype), width);
      elems = op->bytes / width;
    }
  if (op->count != elems)
    return op_error (error, id, name, SP_ERROR_INVALID_PLAN,
                     "count %" G_GUINT64_FORMAT " does not match %" G_GUINT64_FORMAT
                     " bytes of %s (%" G_GUINT64_FORMAT " elements%s)",
                     op->count, op->bytes, sp_dtype_name (op->dtype), elems,
                     op->kind == SP_COLL_ALL_GATHER || op->kind == SP_COLL_REDUCE_SCATTER
                       ? ", the whole buffer as for bytes" : "");
  return TRUE;
}

static gboolean
validate_op (const SpPlan *plan, const SpOp *op, guint32 id, const char *name, GError **error)
{
  const char *kind = sp_coll_name (op->kind);
  if (kind == NULL)
    return op_error (error, id, name, SP_ERROR_INVALID_PLAN, "kind %d is not a known op kind",
                     (int) op->kind);
  if (sp_phase_name (op->phase) == NULL)
    return op_error (error, id, name, SP_ERROR_INVALID_PLAN,
                     "phase %d is not one of none, forward, backward, optimizer", (int) op->phase);
  if (sp_dtype_name (op->dtype) == NULL)
    return op_error (error, id, name, SP_ERROR_INVALID_PLAN, "dtype %d is not a known element type",
                     (int) op->dtype);
  if (sp_redop_name (op->redop) == NULL)
    return op_error (error, id, name, SP_ERROR_INVALID_PLAN, "redop %d is not a known reduction",
                     (int) op->redop);
  if (sp_algo_name (op->algorithm) == NULL)
    return op_error (error, id, name, SP_ERROR_INVALID_PLAN,
                     "algorithm %d is not a known algorithm", (int) op->algorithm);
  if (op->layer < -1)
    return op_error (error, id, name, SP_ERROR_INVALID_PLAN,
                     "layer %d is invalid: expected -1 (no layer) or a layer index >= 0",
                     (int) op->layer);

  if (kind_is_local (op->kind))
    {
      if (op->family != SP_FAMILY_NONE)
        return op_error (error, id, name, SP_ERROR_INVALID_PLAN,
                         "kind %s runs on each rank alone: family must be 'none', not '%s'",
                         kind, family_label (op->family));
    }
  else
    {
      const char *why = NULL;
      if (op->family == SP_FAMILY_NONE)
        return op_error (error, id, name, SP_ERROR_INVALID_PLAN,
                         "kind %s needs a group family, got 'none'", kind);
      if (sp_family_name (op->family) == NULL)
        return op_error (error, id, name, SP_ERROR_INVALID_PLAN, "family %d is not a known family",
                         (int) op->family);
      if (!options_build_family (&plan->groups, op->family, &why))
        return op_error (error, id, name, SP_ERROR_INVALID_PLAN,
                         "family '%s' is not built by the plan's groups (%s)",
                         family_label (op->family), why);
    }

  if (kind_reduces (op->kind) && op->redop == SP_REDOP_NONE)
    return op_error (error, id, name, SP_ERROR_INVALID_PLAN,
                     "kind %s needs a reduction (sum, prod, max, min, avg), got 'none'", kind);
  if (!kind_reduces (op->kind) && op->redop != SP_REDOP_NONE)
    return op_error (error, id, name, SP_ERROR_INVALID_PLAN,
                     "kind %s does not reduce: redop must be 'none', not '%s'", kind,
                     sp_redop_name (op->redop));
  if (op->flops != 0 && (sp_coll_is_communication (op->kind) || sp_coll_is_composite (op->kind)))
    return op_error (error, id, name, SP_ERROR_INVALID_PLAN,
                     "flops %" G_GUINT64_FORMAT " on kind %s: only kernels (compute, quantize …) "
                     "have FLOPs", op->flops, kind);

  if (!validate_sizes (op, id, name, error))
    return FALSE;

  if (op->kind == SP_COLL_P2P)
    {
      if (op->src == op->dst)
        return op_error (error, id, name, SP_ERROR_INVALID_PLAN,
                         "src and dst are both group rank %u: a p2p op sends to another member",
                         op->src);
      guint32 W = plan->groups.world_size;
      if (op->src >= W || op->dst >= W)
        return op_error (error, id, name, SP_ERROR_INVALID_PLAN,
                         "%s %u is not a group rank of a %u-rank world", op->src >= W ? "src" : "dst",
                         op->src >= W ? op->src : op->dst, W);
    }
  else if (op->src != 0 || op->dst != 0)
    return op_error (error, id, name, SP_ERROR_INVALID_PLAN,
                     "src %u / dst %u on kind %s: only p2p ops name a sender and a receiver",
                     op->src, op->dst, kind);

  for (guint32 i = 0; i < op->n_deps; i++)
    if (op->deps[i] >= id)
      return op_error (error, id, name, SP_ERROR_INVALID_PLAN,
                       "dependency %u is not an earlier op: ops may depend only on ops listed "
                       "before them, so cycles are impossible", op->deps[i]);

  if (op->parent != -1)
    {
      if (op->parent < 0 || op->parent >= (gint64) id)
        return op_error (error, id, name, SP_ERROR_INVALID_PLAN,
                         "parent %" G_GINT64_FORMAT " is not an earlier op (expected -1 or an id < %u)",
                         op->parent, id);
      const SpOp *parent = sp_plan_op (plan, (guint32) op->parent);
      if (op->kind == SP_COLL_P2P)
        return op_error (error, id, name, SP_ERROR_INVALID_PLAN,
                         "a p2p op cannot be a composite's sub-op (parent %" G_GINT64_FORMAT
                         "): a composite runs on every member of its groups", op->parent);
      if (!sp_coll_is_composite (parent->kind))
        return op_error (error, id, name, SP_ERROR_INVALID_PLAN,
                         "parent %" G_GINT64_FORMAT " ('%s') has kind %s, not a composite kind "
                         "(hier_all_gather, reduce_scatter_coalesced, all_to_all_quant_reduce)",
                         op->parent, parent->name, sp_coll_name (parent->kind));
      if (sp_coll_is_composite (op->kind))
        return op_error (error, id, name, SP_ERROR_INVALID_PLAN,
                         "a composite (%s) cannot be a sub-op of another (parent %" G_GINT64_FORMAT
                         ")", kind, op->parent);
      /* A composite is followed by its sub-ops, one run of them: another op
       * between made a cycle through the parent (the composite waits for its
       * sub-ops, the op between for the composite) and a quadratic walk */
      const SpOp *before = sp_plan_op (plan, id - 1);
      if ((gint64) (id - 1) != op->parent && before->parent != op->parent)
        return op_error (error, id, name, SP_ERROR_INVALID_PLAN,
                         "parent %" G_GINT64_FORMAT " is not the op before it, nor the parent of "
                         "the op before it (%u, '%s'): a composite's sub-ops follow it, together",
                         op->parent, id - 1, before->name);
      /* what the executor runs a coalesced reduce-scatter as: one
       * reduce_scatter of its buffer on its family */
      if (parent->kind == SP_COLL_REDUCE_SCATTER_COALESCED
          && ((gint64) (id - 1) != op->parent || op->kind != SP_COLL_REDUCE_SCATTER
              || op->family != parent->family || op->bytes != parent->bytes))
        return op_error (error, id, name, SP_ERROR_INVALID_PLAN,
                         "a reduce_scatter_coalesced (parent %" G_GINT64_FORMAT ") has exactly "
                         "one sub-op, a reduce_scatter on its family with its bytes (%s): this "
                         "one is %s on %s with %" G_GUINT64_FORMAT " bytes", op->parent,
                         sp_family_name (parent->family) ? sp_family_name (parent->family) : "?",
                         kind, sp_family_name (op->family) ? sp_family_name (op->family) : "?",
                         op->bytes);
    }
  return TRUE;
}

static const guint32 *
store_deps (SpPlan *plan, const guint32 *deps, guint32 n)
{
  if (n == 0)
    return NULL;
  if (plan->dep_left < n)
    {
      gsize size = MAX (DEP_SLAB, n);
      plan->dep_next = g_new (guint32, size);
      plan->dep_left = size;
      g_ptr_array_add (plan->dep_slabs, plan->dep_next);
    }
  guint32 *dst = plan->dep_next;
  memcpy (dst, deps, n * sizeof *deps);
  plan->dep_next += n;
  plan->dep_left -= n;
  return dst;
}

gboolean
sp_plan_add_op (SpPlan *plan, const SpOp *op, guint32 *out_id, GError **error)
{
  g_return_val_if_fail (plan != NULL, FALSE);
  g_return_val_if_fail (op != NULL, FALSE);
  g_return_val_if_fail (op->n_deps == 0 || op->deps != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  guint32 id = plan->n_ops;
  const char *name = op->name ? op->name : "";
  if (id == G_MAXUINT32)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN,
                   "op '%s': a plan holds at most %u ops", name, G_MAXUINT32);
      return FALSE;
    }
  if (!g_utf8_validate (name, -1, NULL))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_PLAN, "op %u: name is not valid UTF-8", id);
      return FALSE;
    }
  if (!validate_op (plan, op, id, name, error))
    return FALSE;

  if ((id & (OP_BLOCK - 1)) == 0)
    g_ptr_array_add (plan->op_blocks, g_new0 (SpOp, OP_BLOCK));
  SpOp *block = g_ptr_array_index (plan->op_blocks, id >> OP_BLOCK_SHIFT);
  SpOp *dst = &block[id & (OP_BLOCK - 1)];
  *dst = *op;
  dst->id = id;
  dst->name = g_string_chunk_insert_const (plan->strings, name);
  dst->deps = store_deps (plan, op->deps, op->n_deps);
  plan->n_ops++;
  if (out_id)
    *out_id = id;
  return TRUE;
}

/* ---- who runs an op ------------------------------------------------------ */

gboolean
sp_plan_op_find (const SpGroups *groups, const SpOp *op, guint32 rank, guint32 *out_index,
                 guint32 *out_group_rank)
{
  g_return_val_if_fail (groups != NULL && op != NULL, FALSE);
  guint32 index = rank, gr = 0;
  if (op->family != SP_FAMILY_NONE)
    {
      if (!sp_groups_find (groups, op->family, rank, &index, &gr))
        return FALSE;
      if (op->kind == SP_COLL_P2P && gr != op->src && gr != op->dst)
        return FALSE;
    }
  if (out_index)
    *out_index = index;
  if (out_group_rank)
    *out_group_rank = gr;
  return TRUE;
}

const guint32 *
sp_plan_op_members (const SpGroups *groups, const SpOp *op, guint32 index, guint32 pair[2],
                    guint32 *out_n)
{
  g_return_val_if_fail (groups != NULL && op != NULL && out_n != NULL, NULL);
  guint32 n = 0;
  const guint32 *m = sp_groups_members (groups, op->family, index, &n);
  if (op->kind != SP_COLL_P2P)
    {
      *out_n = n;
      return m;
    }
  g_return_val_if_fail (pair != NULL, NULL);
  if (m == NULL || op->src >= n || op->dst >= n)
    {
      *out_n = 0;
      return pair;
    }
  pair[0] = m[op->src];
  pair[1] = m[op->dst];
  *out_n = 2;
  return pair;
}

gboolean
sp_plan_check_groups (const SpPlan *plan, const SpGroups *groups, GError **error)
{
  g_return_val_if_fail (plan != NULL && groups != NULL, FALSE);
  /* per family, its smallest group (found once, on first use) */
  guint32 small[SP_FAMILY_N], small_n[SP_FAMILY_N];
  gboolean found[SP_FAMILY_N] = { FALSE };
  for (guint32 i = 0; i < plan->n_ops; i++)
    {
      const SpOp *op = sp_plan_op (plan, i);
      if (op->kind != SP_COLL_P2P)
        continue;
      SpFamily f = op->family;
      if (!found[f])
        {
          found[f] = TRUE;
          small[f] = 0;
          small_n[f] = G_MAXUINT32;
          for (guint32 g = 0; g < sp_groups_n_groups (groups, f); g++)
            {
              guint32 n = 0;
              sp_groups_members (groups, f, g, &n);
              if (n < small_n[f])
                small[f] = g, small_n[f] = n;
            }
        }
      guint32 top = MAX (op->src, op->dst), n = small_n[f];
      if (top >= n)
        return op_error (error, i, op->name, SP_ERROR_INVALID_PLAN,
                         "%s %u is not a member of %s group %u, which has %u rank%s",
                         top == op->src ? "src" : "dst", top, sp_family_name (f), small[f], n,
                         n == 1 ? "" : "s");
    }
  return TRUE;
}

/* ---- metadata ------------------------------------------------------------ */

void
sp_plan_set_meta (SpPlan *plan, const char *key, const char *value)
{
  g_return_if_fail (plan != NULL);
  g_return_if_fail (key != NULL && g_utf8_validate (key, -1, NULL));
  g_return_if_fail (value != NULL && g_utf8_validate (value, -1, NULL));

  gpointer orig_key = NULL, orig_value = NULL;
  if (g_hash_table_steal_extended (plan->meta, key, &orig_key, &orig_value))
    {
      /* keep the key string the order array points to */
      g_free (orig_value);
      g_hash_table_insert (plan->meta, orig_key, g_strdup (value));
      return;
    }
  char *k = g_strdup (key);
  g_ptr_array_add (plan->meta_keys, k);
  g_hash_table_insert (plan->meta, k, g_strdup (value));
}

const char *
sp_plan_get_meta (const SpPlan *plan, const char *key)
{
  g_return_val_if_fail (plan != NULL, NULL);
  g_return_val_if_fail (key != NULL, NULL);
  return g_hash_table_lookup (plan->meta, key);
}

const char **
sp_plan_meta_keys (const SpPlan *plan)
{
  g_return_val_if_fail (plan != NULL, NULL);
  const char **keys = g_new (const char *, plan->meta_keys->len + 1);
  for (guint i = 0; i < plan->meta_keys->len; i++)
    keys[i] = g_ptr_array_index (plan->meta_keys, i);
  keys[plan->meta_keys->len] = NULL;
  return keys;
}

/* ---- equality ------------------------------------------------------------ */

static gboolean
groups_options_equal (const SpGroupsOptions *a, const SpGroupsOptions *b)
{
  return a->world_size == b->world_size && a->devices_per_node == b->devices_per_node
         && a->shard_size == b->shard_size && !a->hierarchical == !b->hierarchical
         && a->tensor_parallel == b->tensor_parallel
         && a->pipeline_parallel == b->pipeline_parallel
         && a->expert_parallel == b->expert_parallel
         && !a->data_before_expert == !b->data_before_expert
         && a->zero_param_group_size == b->zero_param_group_size
         && !a->local_all_to_all == !b->local_all_to_all;
}

static gboolean
op_equal (const SpOp *a, const SpOp *b)
{
  if (a->id != b->id || a->parent != b->parent || a->layer != b->layer || a->phase != b->phase
      || a->kind != b->kind || a->family != b->family || a->bytes != b->bytes
      || a->count != b->count || a->dtype != b->dtype || a->redop != b->redop
      || a->algorithm != b->algorithm || a->stream != b->stream || a->flops != b->flops
      || a->n_deps != b->n_deps || a->src != b->src || a->dst != b->dst)
    return FALSE;
  if (strcmp (a->name, b->name) != 0)
    return FALSE;
  return a->n_deps == 0 || memcmp (a->deps, b->deps, a->n_deps * sizeof *a->deps) == 0;
}

gboolean
sp_plan_equal (const SpPlan *a, const SpPlan *b)
{
  g_return_val_if_fail (a != NULL && b != NULL, FALSE);
  if (!groups_options_equal (&a->groups, &b->groups) || a->n_ops != b->n_ops)
    return FALSE;
  /* meta: the same key → value pairs; order is not part of a plan's meaning
   * (the canonical JSON sorts the keys). */
  if (g_hash_table_size (a->meta) != g_hash_table_size (b->meta))
    return FALSE;
  GHashTableIter iter;
  gpointer key, value;
  g_hash_table_iter_init (&iter, a->meta);
  while (g_hash_table_iter_next (&iter, &key, &value))
    {
      const char *other = g_hash_table_lookup (b->meta, key);
      if (other == NULL || strcmp (other, value) != 0)
        return FALSE;
    }
  for (guint32 i = 0; i < a->n_ops; i++)
    if (!op_equal (sp_plan_op (a, i), sp_plan_op (b, i)))
      return FALSE;
  return TRUE;
}
