/* Chakra ET files → a plan (tools/chakra/chakra.h).  Each rank's file is
 * read whole, checked on its own (framing, messages, node types, deps,
 * cycles), then folded into one table of ops keyed by node id, where the
 * files must agree.  Nothing of a file is trusted before it is checked:
 * every error names the file, the node id and the field. */
#include "config.h"
#include "chakra/chakra.h"
#include "chakra/chakra-private.h"
#include "chakra/import-private.h"

#include <json-glib/json-glib.h>
#include <string.h>
#include <glib/gstdio.h>

#define N_TYPES 8
/* Limits on what an import reads: one rank file is read whole (a shardplan
 * export of gpt-13b is 150 KB per rank; PyTorch captures of large models
 * reach a few hundred MB), and the rank count is the world limit of every
 * other shardplan input. */
#define MAX_FILE_BYTES (G_GUINT64_CONSTANT (1) << 30)
#define MAX_RANKS (1u << 24)

/* One node of one file, as read. */
typedef struct {
  guint64 id;
  const char *name;
  int type;
  guint64 dur_us;
  gboolean has_comm_type, has_comm_size, has_num_ops;
  gint64 comm_type, comm_size, num_ops;
  const char *pg_name;
  guint32 pg_id;           /* pg_name's number in the group file; 0: every rank */
  /* shardplan's own attributes */
  gboolean sp;
  const char *sp_kind, *sp_family, *sp_dtype, *sp_redop, *sp_algorithm, *sp_phase;
  guint64 sp_bytes, sp_count, sp_stream, sp_flops, sp_group_index;
  gint64 sp_layer, sp_parent;
  gboolean has_group_index;
  /* point-to-point */
  gboolean has_comm_src, has_comm_dst, has_p2p_of;
  gint64 comm_src, comm_dst;
  guint64 p2p_of;          /* sp_p2p_of: the receive half of send / recv op p2p_of */
  gboolean has_sp_src, has_sp_dst;
  guint64 sp_src, sp_dst;  /* p2p: the sending and the receiving group rank */
  gboolean has_sp_deps;
  size_t n_sp_deps;
  const int64_t *sp_deps;  /* the plan's deps where a rank skips one of them */
  ChakraProtoMsg__Node *msg;
} RNode;

/* protobuf-c's allocations for one file come from a bump arena, freed at
 * once when the file is done: unpacking a node makes ~40 allocations, and
 * malloc/free were a third of an import's time. */
typedef struct {
  GPtrArray *chunks;  /* kept from file to file: reset, not freed */
  GArray *sizes;      /* gsize per chunk */
  guint next;         /* the chunk to take when the current one is full */
  guint8 *cur;
  gsize left;
} Arena;

#define ARENA_CHUNK (1u << 20)

static void *
arena_alloc (void *data, size_t n)
{
  Arena *a = data;
  n = (n + 15) & ~(size_t) 15;
  while (n > a->left)
    {
      if (a->next == a->chunks->len)
        {
          gsize size = MAX (n, ARENA_CHUNK);
          g_ptr_array_add (a->chunks, g_malloc (size));
          g_array_append_val (a->sizes, size);
        }
      a->cur = a->chunks->pdata[a->next];
      a->left = g_array_index (a->sizes, gsize, a->next);
      a->next++;
    }
  void *p = a->cur;
  a->cur += n;
  a->left -= n;
  return p;
}

static void
arena_reset (Arena *a)
{
  a->next = 0;
  a->cur = NULL;
  a->left = 0;
}

static void
arena_free (void *data, void *p)
{
}

/* shardplan's p2p op: a COMM_SEND_NODE on its sender and a COMM_RECV_NODE
 * of the same id (no sp_p2p_of) on its receiver. */
static gboolean
is_sp_p2p (const RNode *n)
{
  return n->sp_kind != NULL && strcmp (n->sp_kind, "p2p") == 0;
}

/* The nodes that become ops.  In shardplan's own files a send / recv op is
 * its COMM_SEND_NODE (its COMM_RECV_NODE half stands for it), and a p2p op
 * is its node on each of its two ranks.  In other files sends and receives
 * are folded, then paired (p2p_resolve): a send and a receive that move the
 * same bytes between the same peers become one op, and what pairs with
 * nothing is bridged like any node not modelled. */
static gboolean
modelled (gboolean sp, const RNode *n)
{
  int type = n->type;
  return type == CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE
         || type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE
         || type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE
         || (type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE && (!sp || is_sp_p2p (n)));
}

/* Other producers may give a send or receive node the id of another node
 * of another rank: an SPMD program's dist.send on one rank and dist.recv on
 * the other sit at the same place, and a pipeline's stages number their
 * nodes each their own way.  So their send and receive nodes are keyed
 * apart, with one of the top two bits set (such files' ids stay below 2^62). */
#define RECV_KEY_BIT (G_GUINT64_CONSTANT (1) << 63)
#define SEND_KEY_BIT (G_GUINT64_CONSTANT (1) << 62)

static guint64
node_key (gboolean sp, guint64 id, int type)
{
  if (sp)
    return id;
  return type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE   ? id | RECV_KEY_BIT
         : type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE ? id | SEND_KEY_BIT
                                                                : id;
}

static gboolean
is_p2p (int type)
{
  return type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE
         || type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE;
}

/* One op over all files. */
typedef struct {
  RNode n;              /* as the first file that has it says (strings copied) */
  char *name, *pg_first;
  guint32 first_rank;
  guint32 n_ranks;
  guint64 max_dur_us;
  gboolean dur_differs;
  GArray *deps;         /* guint64, unique */
  GHashTable *dep_set;
  GArray *rank_pg;      /* foreign collectives: guint32 pairs (rank, pg id) */
  GArray *peers;        /* foreign send / recv: guint32 pairs (src, dst), one per file */
  gboolean gone;        /* foreign send / recv folded into another op, or bridged */
  gboolean p2p_mixed;   /* foreign send / recv whose files disagree on comm_size: bridged */
  gboolean oneway;      /* foreign send / recv moving data one way (a p2p op) */
  guint64 key;          /* the op table's key: node_key() */
  guint32 plan_id;
} GOp;

static void
gop_free (gpointer p)
{
  GOp *g = p;
  g_free (g->name);
  g_free (g->pg_first);
  g_free ((char *) g->n.sp_kind);
  g_free ((char *) g->n.sp_family);
  g_free ((char *) g->n.sp_dtype);
  g_free ((char *) g->n.sp_redop);
  g_free ((char *) g->n.sp_algorithm);
  g_free ((char *) g->n.sp_phase);
  g_free ((int64_t *) g->n.sp_deps);
  g_array_free (g->deps, TRUE);
  g_hash_table_destroy (g->dep_set);
  if (g->rank_pg)
    g_array_free (g->rank_pg, TRUE);
  if (g->peers)
    g_array_free (g->peers, TRUE);
  g_free (g);
}

typedef struct {
  const char *prefix;
  const SpTopo *topo;
  GHashTable *ops;        /* guint64* id → GOp */
  gboolean sp;            /* files carry shardplan_plan */
  char *header;           /* the first file's shardplan_plan */
  SpPlan *head;           /* parsed header (groups options, meta) */
  SpGroups *groups;       /* built from the header */
  SpChakraPg *pg;         /* the communicator groups; NULL if none */
  GHashTable *pg_checked; /* shardplan: pg names already compared with the groups */
  Arena arena;            /* protobuf-c's allocations for the file being read */
  SpChakraImportStats st;
} Ctx;

static const char *
type_name (int t)
{
  static const char *const names[N_TYPES] = { "INVALID_NODE", "METADATA_NODE", "MEM_LOAD_NODE",
                                              "MEM_STORE_NODE", "COMP_NODE", "COMM_SEND_NODE",
                                              "COMM_RECV_NODE", "COMM_COLL_NODE" };
  return t >= 0 && t < N_TYPES ? names[t] : "?";
}

#define FAIL(...) \
  do { g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, __VA_ARGS__); return FALSE; } while (0)

/* Attributes: the value must be of the type Chakra gives the name.  One
 * hash lookup per attribute (a chain of strcmp was a tenth of an import). */
enum {
  A_OTHER, A_COMM_TYPE, A_COMM_SIZE, A_NUM_OPS, A_PG_NAME, A_SP_KIND, A_SP_FAMILY, A_SP_DTYPE,
  A_SP_REDOP, A_SP_ALGORITHM, A_SP_PHASE, A_SP_BYTES, A_SP_COUNT, A_SP_STREAM, A_SP_FLOPS,
  A_SP_LAYER, A_SP_PARENT, A_SP_GROUP_INDEX, A_COMM_SRC, A_COMM_DST, A_SP_P2P_OF, A_SP_SRC,
  A_SP_DST, A_SP_DEPS,
};

static GHashTable *
attr_table (void)
{
  static gsize once = 0;
  static GHashTable *t;
  if (g_once_init_enter (&once))
    {
      static const char *const names[] = { NULL, "comm_type", "comm_size", "num_ops", "pg_name",
        "sp_kind", "sp_family", "sp_dtype", "sp_redop", "sp_algorithm", "sp_phase", "sp_bytes",
        "sp_count", "sp_stream", "sp_flops", "sp_layer", "sp_parent", "sp_group_index",
        "comm_src", "comm_dst", "sp_p2p_of", "sp_src", "sp_dst", "sp_deps" };
      t = g_hash_table_new (g_str_hash, g_str_equal);
      for (guint i = 1; i < G_N_ELEMENTS (names); i++)
        g_hash_table_insert (t, (gpointer) names[i], GUINT_TO_POINTER (i));
      g_once_init_leave (&once, 1);
    }
  return t;
}

static gboolean
read_attrs (const char *path, RNode *n, GError **error)
{
  GHashTable *table = attr_table ();
  for (size_t i = 0; i < n->msg->n_attr; i++)
    {
      const ChakraProtoMsg__AttributeProto *a = n->msg->attr[i];
      const char *k = a->name;
      int vc = a->value_case;
      gboolean i64 = vc == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
      gboolean u64 = vc == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL;
      gboolean str = vc == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL;
      gboolean i32 = vc == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL;
      guint code = GPOINTER_TO_UINT (g_hash_table_lookup (table, k));
#define WANT(ok, what) \
      if (!(ok)) FAIL ("%s: node %" G_GUINT64_FORMAT ": attribute %s is not %s", path, n->id, k, what)
#define WANT_INT(field, has) \
      WANT (i64 || u64, "an int64"); \
      n->has = TRUE; \
      n->field = i64 ? a->int64_val : (gint64) a->uint64_val; \
      if (n->field < 0) \
        FAIL ("%s: node %" G_GUINT64_FORMAT ": %s %" G_GINT64_FORMAT " is negative", path, n->id, \
              k, n->field)
      switch (code)
        {
        case A_COMM_TYPE:
          WANT (i64 || u64, "an int64");
          n->has_comm_type = TRUE;
          n->comm_type = i64 ? a->int64_val : (gint64) a->uint64_val;
          break;
        case A_COMM_SIZE: WANT_INT (comm_size, has_comm_size); break;
        case A_NUM_OPS: WANT_INT (num_ops, has_num_ops); break;
        case A_PG_NAME: WANT (str, "a string"); n->pg_name = a->string_val; break;
#define SP_STR(C, field) case C: WANT (str, "a string"); n->field = a->string_val; n->sp = TRUE; break;
#define SP_U64(C, field) case C: WANT (u64, "a uint64"); n->field = a->uint64_val; n->sp = TRUE; break;
#define SP_I64(C, field) case C: WANT (i64, "an int64"); n->field = a->int64_val; n->sp = TRUE; break;
        SP_STR (A_SP_KIND, sp_kind) SP_STR (A_SP_FAMILY, sp_family) SP_STR (A_SP_DTYPE, sp_dtype)
        SP_STR (A_SP_REDOP, sp_redop) SP_STR (A_SP_ALGORITHM, sp_algorithm)
        SP_STR (A_SP_PHASE, sp_phase)
        SP_U64 (A_SP_BYTES, sp_bytes) SP_U64 (A_SP_COUNT, sp_count) SP_U64 (A_SP_STREAM, sp_stream)
        SP_U64 (A_SP_FLOPS, sp_flops)
        SP_I64 (A_SP_LAYER, sp_layer) SP_I64 (A_SP_PARENT, sp_parent)
        /* Chakra writes ranks as int32; other int types are taken too */
        case A_COMM_SRC:
        case A_COMM_DST:
          {
            WANT (i32 || i64 || u64, "an int32");
            gint64 v = i32 ? a->int32_val : i64 ? a->int64_val : (gint64) a->uint64_val;
            if (v < 0 || v > G_MAXUINT32 || (u64 && a->uint64_val > G_MAXUINT32))
              FAIL ("%s: node %" G_GUINT64_FORMAT ": %s %" G_GINT64_FORMAT " is not a rank", path,
                    n->id, k, v);
            if (code == A_COMM_SRC)
              n->has_comm_src = TRUE, n->comm_src = v;
            else
              n->has_comm_dst = TRUE, n->comm_dst = v;
          }
          break;
        case A_SP_P2P_OF:
          WANT (u64, "a uint64");
          n->p2p_of = a->uint64_val;
          n->has_p2p_of = TRUE;
          n->sp = TRUE;
          break;
        case A_SP_SRC:
        case A_SP_DST:
          WANT (u64, "a uint64");
          if (code == A_SP_SRC)
            n->has_sp_src = TRUE, n->sp_src = a->uint64_val;
          else
            n->has_sp_dst = TRUE, n->sp_dst = a->uint64_val;
          n->sp = TRUE;
          break;
        case A_SP_DEPS:
          WANT (vc == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_LIST && a->int64_list,
                "an int64 list");
          n->has_sp_deps = TRUE;
          n->n_sp_deps = a->int64_list->n_values;
          n->sp_deps = a->int64_list->values;
          n->sp = TRUE;
          break;
        case A_SP_GROUP_INDEX:
          WANT (u64, "a uint64");
          n->sp_group_index = a->uint64_val;
          n->has_group_index = TRUE;
          break;
        default:
          break;
#undef SP_STR
#undef SP_U64
#undef SP_I64
#undef WANT_INT
#undef WANT
        }
    }
  return TRUE;
}

/* The shardplan attributes a node of an exported file must all have. */
static gboolean
check_sp_node (const char *path, const RNode *n, GError **error)
{
  const char *missing = !n->sp_kind ? "sp_kind" : !n->sp_family ? "sp_family"
                        : !n->sp_dtype ? "sp_dtype" : !n->sp_redop ? "sp_redop"
                        : !n->sp_algorithm ? "sp_algorithm" : !n->sp_phase ? "sp_phase" : NULL;
  if (missing)
    FAIL ("%s: node %" G_GUINT64_FORMAT ": attribute %s missing (the file says it was written "
          "by shardplan)", path, n->id, missing);
  return TRUE;
}

/* Read one rank's file: framing and messages. */
static gboolean
read_file (Ctx *c, guint32 rank, const char *path, ProtobufCAllocator *alloc, GPtrArray *msgs,
           ChakraProtoMsg__GlobalMetadata **out_gm, GError **error)
{
  g_autofree char *data = NULL;
  gsize len = 0;
  GError *e = NULL;
  GStatBuf sb;
  if (g_stat (path, &sb) == 0 && !S_ISREG (sb.st_mode))
    FAIL ("%s: not a regular file", path);
  if (g_stat (path, &sb) == 0 && (guint64) sb.st_size > MAX_FILE_BYTES)
    FAIL ("%s: %.1f GiB, more than the %u GiB a rank file may have", path,
          sb.st_size / 1073741824.0, (guint) (MAX_FILE_BYTES >> 30));
  if (!g_file_get_contents (path, &data, &len, &e))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_IO, "%s", e->message);
      g_error_free (e);
      return FALSE;
    }
  if (len > MAX_FILE_BYTES)
    FAIL ("%s: more than the %u GiB a rank file may have", path, (guint) (MAX_FILE_BYTES >> 30));
  const guint8 *p = (const guint8 *) data;
  gsize pos = 0;
  guint64 k = 0;
  if (len == 0)
    FAIL ("%s: empty file (a Chakra ET file starts with its GlobalMetadata)", path);
  while (pos < len)
    {
      guint64 mlen = 0;
      gsize used = 0;
      SpChakraVarint v = sp_chakra_varint_decode (p + pos, len - pos, &mlen, &used);
      const char *what = k == 0 ? "GlobalMetadata" : "node";
      if (v == SP_CHAKRA_VARINT_TRUNCATED)
        FAIL ("%s: truncated: the file ends inside the length of message %" G_GUINT64_FORMAT
              " (%s) at byte %" G_GSIZE_FORMAT, path, k, what, pos);
      if (v == SP_CHAKRA_VARINT_BAD)
        FAIL ("%s: bad varint: the length of message %" G_GUINT64_FORMAT " (%s) at byte %"
              G_GSIZE_FORMAT " is longer than 10 bytes", path, k, what, pos);
      pos += used;
      if (mlen > len - pos)
        FAIL ("%s: truncated: message %" G_GUINT64_FORMAT " (%s) at byte %" G_GSIZE_FORMAT
              " says %" G_GUINT64_FORMAT " bytes, %" G_GSIZE_FORMAT " are left", path, k, what,
              pos, mlen, len - pos);
      if (k == 0)
        {
          *out_gm = chakra_proto_msg__global_metadata__unpack (alloc, mlen, p + pos);
          if (*out_gm == NULL)
            FAIL ("%s: message 0 at byte %" G_GSIZE_FORMAT " is not a GlobalMetadata", path, pos);
        }
      else
        {
          ChakraProtoMsg__Node *n = chakra_proto_msg__node__unpack (alloc, mlen, p + pos);
          if (n == NULL)
            {
              /* name the node that precedes, the best locator we have */
              if (msgs->len)
                FAIL ("%s: message %" G_GUINT64_FORMAT " at byte %" G_GSIZE_FORMAT " (after node %"
                      G_GUINT64_FORMAT ") is not a Node", path, k, pos,
                      ((ChakraProtoMsg__Node *) g_ptr_array_index (msgs, msgs->len - 1))->id);
              FAIL ("%s: message %" G_GUINT64_FORMAT " at byte %" G_GSIZE_FORMAT
                    " (the first node) is not a Node", path, k, pos);
            }
          g_ptr_array_add (msgs, n);
        }
      pos += mlen;
      k++;
    }
  return TRUE;
}

static gboolean
check_metadata (Ctx *c, guint32 rank, const char *path, const ChakraProtoMsg__GlobalMetadata *gm,
                GError **error)
{
  const char *plan = NULL;
  for (size_t i = 0; i < gm->n_attr; i++)
    if (strcmp (gm->attr[i]->name, "shardplan_plan") == 0
        && gm->attr[i]->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL)
      plan = gm->attr[i]->string_val;
  if (rank == 0)
    {
      c->sp = plan != NULL;
      if (plan)
        {
          c->header = g_strdup (plan);
          GError *e = NULL;
          c->head = sp_plan_from_json (plan, -1, 0, &e);
          if (c->head == NULL)
            {
              g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                           "%s: GlobalMetadata attribute shardplan_plan: %s", path, e->message);
              g_error_free (e);
              return FALSE;
            }
          c->groups = sp_groups_build (sp_plan_groups_options (c->head), error);
          if (c->groups == NULL)
            return FALSE;
        }
      return TRUE;
    }
  if ((plan != NULL) != c->sp)
    FAIL ("%s: GlobalMetadata %s shardplan_plan but %s.0.et %s", path, plan ? "has" : "lacks",
          c->prefix, c->sp ? "has it" : "does not");
  if (plan && strcmp (plan, c->header) != 0)
    FAIL ("%s: GlobalMetadata attribute shardplan_plan differs from %s.0.et's", path, c->prefix);
  return TRUE;
}

static gboolean
array_has (const GArray *a, guint32 v)
{
  for (guint i = 0; i < a->len; i++)
    if (g_array_index (a, guint32, i) == v)
      return TRUE;
  return FALSE;
}

/* One rank's nodes into the op table. */
static gboolean check_sp_p2p (Ctx *c, guint32 rank, const char *path, const RNode *n,
                              GError **error);

static gboolean
fold_node (Ctx *c, guint32 rank, const char *path, RNode *n, const GArray *deps, GError **error)
{
  guint64 id = n->id;
  if (n->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE)
    {
      if (!n->has_comm_type)
        FAIL ("%s: node %" G_GUINT64_FORMAT ": field comm_type missing on a COMM_COLL_NODE", path, id);
      if (n->comm_type < 0 || n->comm_type > 9)
        FAIL ("%s: node %" G_GUINT64_FORMAT ": field comm_type %" G_GINT64_FORMAT " is not a "
              "CollectiveCommType (0 .. 9)", path, id, n->comm_type);
      if (!n->has_comm_size)
        FAIL ("%s: node %" G_GUINT64_FORMAT ": field comm_size missing on a COMM_COLL_NODE", path, id);
      if (!sp_chakra_pg_resolve (c->pg, n->pg_name, &n->pg_id))
        {
          if (c->pg == NULL)
            FAIL ("%s: node %" G_GUINT64_FORMAT ": field pg_name '%s' but there is no group file "
                  "(%s.groups.json, or --groups FILE)", path, id, n->pg_name, c->prefix);
          FAIL ("%s: node %" G_GUINT64_FORMAT ": field pg_name '%s' is not a group of %s", path,
                id, n->pg_name, c->pg->path);
        }
      const GArray *m = sp_chakra_pg_members (c->pg, n->pg_id);
      if (m && !array_has (m, rank))
        FAIL ("%s: node %" G_GUINT64_FORMAT ": field pg_name '%s': rank %u is not in that group",
              path, id, n->pg_name, rank);
    }
  if (!c->sp && is_p2p (n->type))
    {
      /* Chakra's feeder hands ASTRA-sim comm_src / comm_dst / comm_size */
      gboolean snd = n->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE;
      const char *tn = type_name (n->type);
      if (!n->has_comm_size)
        FAIL ("%s: node %" G_GUINT64_FORMAT ": field comm_size missing on a %s", path, id, tn);
      if (snd ? !n->has_comm_dst : !n->has_comm_src)
        FAIL ("%s: node %" G_GUINT64_FORMAT ": field %s missing on a %s (its peer)", path, id,
              snd ? "comm_dst" : "comm_src", tn);
      gint64 peer = snd ? n->comm_dst : n->comm_src;
      if ((guint64) peer == rank)
        FAIL ("%s: node %" G_GUINT64_FORMAT ": field %s %" G_GINT64_FORMAT " is the file's own "
              "rank", path, id, snd ? "comm_dst" : "comm_src", peer);
      if (snd ? n->has_comm_src && n->comm_src != rank : n->has_comm_dst && n->comm_dst != rank)
        FAIL ("%s: node %" G_GUINT64_FORMAT ": field %s %" G_GINT64_FORMAT " is not the file's "
              "rank %u", path, id, snd ? "comm_src" : "comm_dst",
              snd ? n->comm_src : n->comm_dst, rank);
    }
  if (c->sp && !check_sp_node (path, n, error))
    return FALSE;
  if (c->sp && is_sp_p2p (n) && !check_sp_p2p (c, rank, path, n, error))
    return FALSE;

  guint64 key = node_key (c->sp, id, n->type);
  GOp *g = g_hash_table_lookup (c->ops, &key);
  if (g == NULL)
    {
      g = g_new0 (GOp, 1);
      g->n = *n;
      g->n.msg = NULL;
      g->n.sp_deps = n->n_sp_deps ? g_memdup2 (n->sp_deps, n->n_sp_deps * sizeof *n->sp_deps) : NULL;
      g->name = g_strdup (n->name);
      g->n.name = g->name;
      g->pg_first = g_strdup (n->pg_name ? n->pg_name : "");
      g->n.pg_name = g->pg_first;
      g->n.sp_kind = g_strdup (n->sp_kind);
      g->n.sp_family = g_strdup (n->sp_family);
      g->n.sp_dtype = g_strdup (n->sp_dtype);
      g->n.sp_redop = g_strdup (n->sp_redop);
      g->n.sp_algorithm = g_strdup (n->sp_algorithm);
      g->n.sp_phase = g_strdup (n->sp_phase);
      g->first_rank = rank;
      g->max_dur_us = n->dur_us;
      g->deps = g_array_new (FALSE, FALSE, sizeof (guint64));
      g->dep_set = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, NULL);
      g->key = key;
      g_hash_table_insert (c->ops, &g->key, g);
    }
  else
    {
      g_autofree char *first = g_strdup_printf ("%s.%u.et", c->prefix, g->first_rank);
#define SAME(cond, field, fmt, a, b) \
      if (!(cond)) FAIL ("%s: node %" G_GUINT64_FORMAT ": field %s is " fmt " but " fmt " in %s", \
                         path, id, field, a, b, first)
      /* a p2p op's node is a send on its senders, a receive on its receivers */
      SAME (n->type == g->n.type || (c->sp && is_sp_p2p (n) && is_p2p (n->type)), "type", "%s",
            type_name (n->type), type_name (g->n.type));
      /* shardplan writes one name per op; other producers may not */
      SAME (!c->sp || strcmp (n->name, g->name) == 0, "name", "'%s'", n->name, g->name);
      SAME (n->comm_type == g->n.comm_type, "comm_type", "%" G_GINT64_FORMAT, n->comm_type,
            g->n.comm_type);
      /* other producers' send / recv nodes of one id but different sizes
       * are no one exchange: bridged (a pipeline's, numbered by position) */
      if (!c->sp && is_p2p (n->type) && n->comm_size != g->n.comm_size)
        g->p2p_mixed = TRUE;
      else
        SAME (n->comm_size == g->n.comm_size, "comm_size", "%" G_GINT64_FORMAT, n->comm_size,
              g->n.comm_size);
      SAME (g_strcmp0 (n->sp_kind, g->n.sp_kind) == 0, "sp_kind", "'%s'", n->sp_kind, g->n.sp_kind);
      SAME (g_strcmp0 (n->sp_family, g->n.sp_family) == 0, "sp_family", "'%s'", n->sp_family,
            g->n.sp_family);
      SAME (n->sp_bytes == g->n.sp_bytes, "sp_bytes", "%" G_GUINT64_FORMAT, n->sp_bytes,
            g->n.sp_bytes);
      SAME (n->sp_flops == g->n.sp_flops, "sp_flops", "%" G_GUINT64_FORMAT, n->sp_flops,
            g->n.sp_flops);
      SAME (n->sp_stream == g->n.sp_stream, "sp_stream", "%" G_GUINT64_FORMAT, n->sp_stream,
            g->n.sp_stream);
      SAME (n->sp_src == g->n.sp_src, "sp_src", "%" G_GUINT64_FORMAT, n->sp_src, g->n.sp_src);
      SAME (n->sp_dst == g->n.sp_dst, "sp_dst", "%" G_GUINT64_FORMAT, n->sp_dst, g->n.sp_dst);
      SAME (n->has_sp_deps == g->n.has_sp_deps && n->n_sp_deps == g->n.n_sp_deps
            && (n->n_sp_deps == 0
                || memcmp (n->sp_deps, g->n.sp_deps, n->n_sp_deps * sizeof *n->sp_deps) == 0),
            "sp_deps", "%s", "a list", "another list");
#undef SAME
      if (n->dur_us != g->max_dur_us)
        g->dur_differs = TRUE;
      if (n->dur_us > g->max_dur_us)
        g->max_dur_us = n->dur_us;
      if (n->has_num_ops && (guint64) n->num_ops > (guint64) g->n.num_ops)
        g->n.num_ops = n->num_ops;
    }
  g->n_ranks++;
  for (guint i = 0; i < deps->len; i++)
    {
      guint64 d = g_array_index (deps, guint64, i);
      if (!g_hash_table_contains (g->dep_set, &d))
        {
          g_array_append_val (g->deps, d);
          g_hash_table_add (g->dep_set, g_memdup2 (&d, sizeof d));
        }
    }

  if (n->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE && c->sp)
    {
      /* the group: what the plan's groups say for this rank and family */
      SpFamily fam;
      guint32 idx = 0;
      if (!sp_family_from_name (n->sp_family, &fam) || fam >= SP_FAMILY_N)
        FAIL ("%s: node %" G_GUINT64_FORMAT ": field sp_family '%s' is not a family", path, id,
              n->sp_family);
      if (!sp_groups_has_family (c->groups, fam) || !sp_groups_find (c->groups, fam, rank, &idx, NULL))
        FAIL ("%s: node %" G_GUINT64_FORMAT ": field sp_family: the plan's %s groups do not hold "
              "rank %u", path, id, n->sp_family, rank);
      if (!n->has_group_index || n->sp_group_index != idx)
        FAIL ("%s: node %" G_GUINT64_FORMAT ": field sp_group_index %" G_GUINT64_FORMAT
              ": rank %u is in %s group %u", path, id, n->sp_group_index, rank, n->sp_family, idx);
      if (c->pg && n->pg_name && *n->pg_name)
        {
          /* checked once per (family, index) and pg_name */
          guint64 pk = ((guint64) fam << 32) | idx;
          char *seen_name = g_hash_table_lookup (c->pg_checked, &pk);
          if (seen_name == NULL || strcmp (seen_name, n->pg_name) != 0)
            {
              guint32 size = 0;
              const guint32 *m = sp_groups_members (c->groups, fam, idx, &size);
              const GArray *pm = sp_chakra_pg_members (c->pg, n->pg_id);
              gboolean same = pm && pm->len == size;
              for (guint32 k = 0; same && k < size; k++)
                same = array_has (pm, m[k]);
              if (!same)
                FAIL ("%s: node %" G_GUINT64_FORMAT ": field pg_name '%s': its ranks in %s "
                      "are not the plan's %s group %u", path, id, n->pg_name, c->pg->path,
                      n->sp_family, idx);
              g_hash_table_insert (c->pg_checked, g_memdup2 (&pk, sizeof pk),
                                   g_strdup (n->pg_name));
            }
        }
    }
  else if (is_p2p (n->type) && !c->sp)
    {
      if (g->peers == NULL)
        g->peers = g_array_new (FALSE, FALSE, sizeof (guint32));
      gboolean snd = n->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE;
      guint32 pair[2] = { snd ? rank : (guint32) n->comm_src, snd ? (guint32) n->comm_dst : rank };
      g_array_append_vals (g->peers, pair, 2);
    }
  else if (n->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE)
    {
      if (g->rank_pg == NULL)
        g->rank_pg = g_array_new (FALSE, FALSE, sizeof (guint32));
      guint32 pair[2] = { rank, n->pg_id };
      g_array_append_vals (g->rank_pg, pair, 2);
    }
  return TRUE;
}

/* n empty lists of guint (a graph's users / edges), freed with the array */
static GPtrArray *
new_lists (guint n)
{
  GPtrArray *a = g_ptr_array_new_full (n, (GDestroyNotify) g_array_unref);
  for (guint i = 0; i < n; i++)
    g_ptr_array_add (a, g_array_new (FALSE, FALSE, sizeof (guint)));
  return a;
}

/* The error for a cycle that only the union of the files has, at op g. */
static void
set_cross_cycle (const Ctx *c, const GOp *g, GError **error)
{
  g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
               "%s.%u.et: node %" G_GUINT64_FORMAT ": field data_deps: a cycle across the files "
               "(each file alone is acyclic; their union is not)", c->prefix, g->first_rank, g->n.id);
}

/* The live ops (not gone; every op with `all`) in *out and their index
 * key → position + 1. */
static void
index_ops (const Ctx *c, gboolean all, GPtrArray *out, GHashTable *index)
{
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init (&it, c->ops);
  while (g_hash_table_iter_next (&it, &k, &v))
    if (all || !((GOp *) v)->gone)
      {
        g_ptr_array_add (out, v);
        g_hash_table_insert (index, k, GUINT_TO_POINTER (out->len));
      }
}

/* Kahn: order[] gets the nodes 0..n-1 whose indeg[] (their deps among
 * them) reaches 0, users[i] the nodes that depend on i; returns how many
 * (n when there is no cycle).  indeg[] is used up. */
static guint
kahn (guint n, GPtrArray *users, guint *indeg, guint *order)
{
  guint head = 0, tail = 0;
  for (guint i = 0; i < n; i++)
    if (indeg[i] == 0)
      order[tail++] = i;
  while (head < tail)
    {
      GArray *u = g_ptr_array_index (users, order[head++]);
      for (guint k = 0; k < u->len; k++)
        if (--indeg[g_array_index (u, guint, k)] == 0)
          order[tail++] = g_array_index (u, guint, k);
    }
  return tail;
}

/* The deps among the GOps `ops` (index: key → i + 1): indeg[i] (zeroed
 * here) and users (n empty arrays in, users[j] = the ops that depend on j
 * out).  Deps outside the set are skipped, or with `strict` stop it: the
 * op that has one is returned (else NULL). */
static GOp *
dep_graph (GPtrArray *ops, GHashTable *index, gboolean strict, guint *indeg, GPtrArray *users)
{
  for (guint i = 0; i < ops->len; i++)
    {
      GOp *g = ops->pdata[i];
      indeg[i] = 0;
      for (guint d = 0; d < g->deps->len; d++)
        {
          guint j = GPOINTER_TO_UINT (g_hash_table_lookup (index, &g_array_index (g->deps, guint64, d)));
          if (j == 0 && strict)
            return g;
          if (j == 0)
            continue;
          g_array_append_val (g_ptr_array_index (users, j - 1), i);
          indeg[i]++;
        }
    }
  return NULL;
}

/* Topological order of a file's nodes (Kahn); FALSE on a cycle, naming a
 * node on it. */
static gboolean
file_order (const char *path, RNode *nodes, guint n, GHashTable *index, guint *order,
            GError **error)
{
  gboolean sorted = TRUE;
  for (guint i = 0; i < n && sorted; i++)
    {
      ChakraProtoMsg__Node *m = nodes[i].msg;
      for (size_t k = 0; k < m->n_data_deps && sorted; k++)
        sorted = GPOINTER_TO_UINT (g_hash_table_lookup (index, &m->data_deps[k])) - 1 < i;
      for (size_t k = 0; k < m->n_ctrl_deps && sorted; k++)
        sorted = GPOINTER_TO_UINT (g_hash_table_lookup (index, &m->ctrl_deps[k])) - 1 < i;
    }
  if (sorted)
    {
      for (guint i = 0; i < n; i++)
        order[i] = i;
      return TRUE;
    }
  g_autofree guint *indeg = g_new0 (guint, n ? n : 1);
  g_autoptr (GPtrArray) users = new_lists (n);
  for (guint i = 0; i < n; i++)
    {
      ChakraProtoMsg__Node *m = nodes[i].msg;
      for (int f = 0; f < 2; f++)
        for (size_t k = 0; k < (f ? m->n_ctrl_deps : m->n_data_deps); k++)
          {
            guint64 d = f ? m->ctrl_deps[k] : m->data_deps[k];
            guint j = GPOINTER_TO_UINT (g_hash_table_lookup (index, &d)) - 1;
            g_array_append_val (g_ptr_array_index (users, j), i);
            indeg[i]++;
          }
    }
  if (kahn (n, users, indeg, order) < n)
    for (guint i = 0; i < n; i++)
      if (indeg[i] > 0)
        FAIL ("%s: node %" G_GUINT64_FORMAT ": fields data_deps/ctrl_deps: a cycle (the node "
              "depends, through its deps, on itself or on another node of a cycle)", path,
              nodes[i].id);
  return TRUE;
}

/* The group of the node's sp_family that holds `rank` in the plan: its
 * index, the rank's place in it, its members and size. */
static gboolean
sp_node_group (Ctx *c, guint32 rank, const char *path, const RNode *n, guint32 *out_idx,
               guint32 *out_g, const guint32 **out_m, guint32 *out_size, GError **error)
{
  SpFamily fam;
  if (!sp_family_from_name (n->sp_family, &fam) || fam >= SP_FAMILY_N
      || !sp_groups_has_family (c->groups, fam)
      || !sp_groups_find (c->groups, fam, rank, out_idx, out_g))
    FAIL ("%s: node %" G_GUINT64_FORMAT ": field sp_family '%s': no group of the plan's holds "
          "rank %u", path, n->id, n->sp_family, rank);
  *out_m = sp_groups_members (c->groups, fam, *out_idx, out_size);
  return TRUE;
}

/* The first of the node's comm_src / comm_dst that is not `src` / `dst`
 * (its value in *got, -1 when missing), else NULL. */
static const char *
peer_mismatch (const RNode *n, guint32 src, guint32 dst, gint64 *got, gint64 *want)
{
  if (!n->has_comm_src || n->comm_src != src)
    {
      *got = n->has_comm_src ? n->comm_src : -1, *want = src;
      return "comm_src";
    }
  if (!n->has_comm_dst || n->comm_dst != dst)
    {
      *got = n->has_comm_dst ? n->comm_dst : -1, *want = dst;
      return "comm_dst";
    }
  return NULL;
}

/* shardplan's send / recv: the send half `snd` and receive half `rcv` on
 * `rank` must be one op's, with the peers its family's groups give. */
static gboolean
check_p2p (Ctx *c, guint32 rank, const char *path, const RNode *snd, const RNode *rcv,
           GError **error)
{
  SpColl kind;
  guint32 idx = 0, g = 0, n = 0;
  const guint32 *m;
  if (!check_sp_node (path, snd, error))
    return FALSE;
  if (!sp_coll_from_name (snd->sp_kind, &kind) || (kind != SP_COLL_SEND && kind != SP_COLL_RECV))
    FAIL ("%s: node %" G_GUINT64_FORMAT ": field sp_kind '%s' on a COMM_SEND_NODE (send or recv "
          "expected)", path, snd->id, snd->sp_kind);
  if (!sp_node_group (c, rank, path, snd, &idx, &g, &m, &n, error))
    return FALSE;
  guint32 next = m[(g + 1) % n], prev = m[(g + n - 1) % n];
  guint32 to = kind == SP_COLL_SEND ? next : prev, from = kind == SP_COLL_SEND ? prev : next;
  gint64 got = 0, want = 0;
  const RNode *at = snd;
  const char *bad = peer_mismatch (snd, rank, to, &got, &want);
  if (bad == NULL)
    bad = peer_mismatch (at = rcv, from, rank, &got, &want);
  if (bad)
    FAIL ("%s: node %" G_GUINT64_FORMAT ": field %s is %" G_GINT64_FORMAT " (-1: missing), not %"
          G_GINT64_FORMAT ": in the plan's %s group %u, the %s of rank %u goes to %u and comes "
          "from %u", path, at->id, bad, got, want, snd->sp_family, idx, snd->sp_kind, rank, to,
          from);
  if (rcv->comm_size != snd->comm_size || !rcv->has_comm_size)
    FAIL ("%s: node %" G_GUINT64_FORMAT ": field comm_size %" G_GINT64_FORMAT " but %"
          G_GINT64_FORMAT " on its send half, node %" G_GUINT64_FORMAT, path, rcv->id,
          rcv->comm_size, snd->comm_size, snd->id);
  return TRUE;
}

/* shardplan's p2p op on `rank`: a COMM_SEND_NODE from its group's src
 * member to its dst member, or a COMM_RECV_NODE on that dst member. */
static gboolean
check_sp_p2p (Ctx *c, guint32 rank, const char *path, const RNode *n, GError **error)
{
  guint32 idx = 0, g = 0, size = 0;
  const guint32 *m;
  gboolean snd = n->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE;
  if (!is_p2p (n->type))
    FAIL ("%s: node %" G_GUINT64_FORMAT ": field sp_kind 'p2p' on a %s (a COMM_SEND_NODE or a "
          "COMM_RECV_NODE expected)", path, n->id, type_name (n->type));
  if (!n->has_sp_src || !n->has_sp_dst)
    FAIL ("%s: node %" G_GUINT64_FORMAT ": attribute %s missing (a p2p op names its sender and "
          "receiver)", path, n->id, n->has_sp_src ? "sp_dst" : "sp_src");
  if (!sp_node_group (c, rank, path, n, &idx, &g, &m, &size, error))
    return FALSE;
  if (n->sp_src >= size || n->sp_dst >= size || n->sp_src == n->sp_dst)
    FAIL ("%s: node %" G_GUINT64_FORMAT ": field %s %" G_GUINT64_FORMAT ": %s group %u has %u "
          "ranks, and a p2p op sends between two of them", path, n->id,
          n->sp_src >= size || n->sp_src == n->sp_dst ? "sp_src" : "sp_dst",
          n->sp_src >= size || n->sp_src == n->sp_dst ? n->sp_src : n->sp_dst, n->sp_family, idx,
          size);
  if (g != (snd ? n->sp_src : n->sp_dst))
    FAIL ("%s: node %" G_GUINT64_FORMAT ": a %s on rank %u, group rank %u of %s group %u, but "
          "the op's %s is group rank %" G_GUINT64_FORMAT, path, n->id, type_name (n->type), rank,
          g, n->sp_family, idx, snd ? "sender" : "receiver", snd ? n->sp_src : n->sp_dst);
  guint32 from = m[n->sp_src], to = m[n->sp_dst];
  gint64 got = 0, want = 0;
  const char *bad = peer_mismatch (n, from, to, &got, &want);
  if (bad)
    FAIL ("%s: node %" G_GUINT64_FORMAT ": field %s is %" G_GINT64_FORMAT " (-1: missing), not %"
          G_GINT64_FORMAT ": in the plan's %s group %u, the p2p op goes from %u to %u", path,
          n->id, bad, got, want, n->sp_family, idx, from, to);
  if (!n->has_comm_size || (guint64) n->comm_size != n->sp_bytes)
    FAIL ("%s: node %" G_GUINT64_FORMAT ": field comm_size %" G_GINT64_FORMAT " but the op moves %"
          G_GUINT64_FORMAT " bytes (sp_bytes)", path, n->id, n->comm_size, n->sp_bytes);
  return TRUE;
}

/* shardplan's files: every COMM_RECV_NODE is the receive half of one
 * COMM_SEND_NODE (sp_p2p_of), and every COMM_SEND_NODE has one. */
static gboolean
pair_p2p (Ctx *c, guint32 rank, const char *path, RNode *nodes, guint n, GHashTable *index,
          GError **error)
{
  g_autofree guint *half = g_new0 (guint, n ? n : 1);  /* send node → its receive node + 1 */
  for (guint i = 0; i < n; i++)
    {
      RNode *r = &nodes[i];
      if (r->type != CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE || is_sp_p2p (r))
        {
          if (r->has_p2p_of)
            FAIL ("%s: node %" G_GUINT64_FORMAT ": field sp_p2p_of on a %s (only a COMM_RECV_NODE "
                  "is the receive half of a send / recv op)", path, r->id,
                  is_sp_p2p (r) ? "p2p op's node" : type_name (r->type));
          continue;
        }
      if (!r->has_p2p_of)
        FAIL ("%s: node %" G_GUINT64_FORMAT ": field sp_p2p_of missing (a COMM_RECV_NODE of "
              "shardplan's names its send half)", path, r->id);
      guint j = GPOINTER_TO_UINT (g_hash_table_lookup (index, &r->p2p_of));
      if (j == 0 || nodes[j - 1].type != CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE)
        FAIL ("%s: node %" G_GUINT64_FORMAT ": field sp_p2p_of: node %" G_GUINT64_FORMAT " is %s",
              path, r->id, r->p2p_of, j ? "not a COMM_SEND_NODE" : "not in the file");
      if (half[j - 1])
        FAIL ("%s: node %" G_GUINT64_FORMAT ": field sp_p2p_of: node %" G_GUINT64_FORMAT " already "
              "has its receive half, node %" G_GUINT64_FORMAT, path, r->id, r->p2p_of,
              nodes[half[j - 1] - 1].id);
      half[j - 1] = i + 1;
      if (!check_p2p (c, rank, path, &nodes[j - 1], r, error))
        return FALSE;
    }
  for (guint i = 0; i < n; i++)
    if (nodes[i].type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE && !half[i]
        && !is_sp_p2p (&nodes[i]))
      FAIL ("%s: node %" G_GUINT64_FORMAT ": a COMM_SEND_NODE without its COMM_RECV_NODE half "
            "(no node has sp_p2p_of %" G_GUINT64_FORMAT ")", path, nodes[i].id, nodes[i].id);
  return TRUE;
}

static gboolean
read_rank (Ctx *c, guint32 rank, const char *path, GError **error)
{
  arena_reset (&c->arena);
  ProtobufCAllocator alloc = { arena_alloc, arena_free, &c->arena };
  g_autoptr (GPtrArray) msgs = g_ptr_array_new ();
  ChakraProtoMsg__GlobalMetadata *gm = NULL;
  gboolean ok = read_file (c, rank, path, &alloc, msgs, &gm, error);
  if (ok)
    ok = check_metadata (c, rank, path, gm, error);
  if (!ok)
    return FALSE;

  guint n = msgs->len;
  g_autofree RNode *nodes = g_new0 (RNode, n ? n : 1);
  g_autoptr (GHashTable) index = g_hash_table_new (g_int64_hash, g_int64_equal);
  for (guint i = 0; i < n; i++)
    {
      RNode *r = &nodes[i];
      r->msg = g_ptr_array_index (msgs, i);
      r->id = r->msg->id;
      r->name = r->msg->name;
      r->type = (int) r->msg->type;
      r->dur_us = r->msg->duration_micros;
      if (r->type < 0 || r->type >= N_TYPES)
        FAIL ("%s: node %" G_GUINT64_FORMAT ": field type %d is not a NodeType (0 .. 7)", path,
              r->id, r->type);
      if (g_hash_table_contains (index, &r->id))
        FAIL ("%s: node %" G_GUINT64_FORMAT ": field id: the file has two nodes with this id",
              path, r->id);
      if (!c->sp && (r->id & (RECV_KEY_BIT | SEND_KEY_BIT)))
        FAIL ("%s: node %" G_GUINT64_FORMAT ": field id is 2^62 or more (node ids of traces "
              "shardplan did not write stay below 2^62)", path, r->id);
      g_hash_table_insert (index, &r->id, GUINT_TO_POINTER (i + 1));
      if (!read_attrs (path, r, error))
        return FALSE;
    }
  for (guint i = 0; i < n; i++)
    {
      ChakraProtoMsg__Node *m = nodes[i].msg;
      for (size_t k = 0; k < m->n_data_deps; k++)
        if (!g_hash_table_contains (index, &m->data_deps[k]))
          FAIL ("%s: node %" G_GUINT64_FORMAT ": field data_deps: node %" G_GUINT64_FORMAT
                " is not in the file", path, nodes[i].id, m->data_deps[k]);
      for (size_t k = 0; k < m->n_ctrl_deps; k++)
        if (!g_hash_table_contains (index, &m->ctrl_deps[k]))
          FAIL ("%s: node %" G_GUINT64_FORMAT ": field ctrl_deps: node %" G_GUINT64_FORMAT
                " is not in the file", path, nodes[i].id, m->ctrl_deps[k]);
    }
  g_autofree guint *order = g_new (guint, n ? n : 1);
  if (!file_order (path, nodes, n, index, order, error))
    return FALSE;
  if (c->sp && !pair_p2p (c, rank, path, nodes, n, index, error))
    return FALSE;

  /* deps over modelled nodes: a skipped node passes its own deps on.
   * shardplan's ctrl_deps are its stream order, which sp_stream restores;
   * other producers' ctrl_deps are dependencies like the data deps. */
  g_autofree GArray **eff = g_new0 (GArray *, n ? n : 1);
  g_autoptr (GArray) deps = g_array_new (FALSE, FALSE, sizeof (guint64));
  gboolean ok2 = TRUE;
  for (guint oi = 0; oi < n && ok2; oi++)
    {
      guint i = order[oi];
      RNode *r = &nodes[i];
      g_array_set_size (deps, 0);
      for (int f = 0; f < 2; f++)
        {
          if (f == 1 && c->sp)
            break;
          size_t nd = f ? r->msg->n_ctrl_deps : r->msg->n_data_deps;
          for (size_t k = 0; k < nd; k++)
            {
              guint64 d = f ? r->msg->ctrl_deps[k] : r->msg->data_deps[k];
              guint j = GPOINTER_TO_UINT (g_hash_table_lookup (index, &d)) - 1;
              if (modelled (c->sp, &nodes[j]))
                {
                  guint64 kd = node_key (c->sp, d, nodes[j].type);
                  g_array_append_val (deps, kd);
                }
              else if (eff[j])
                g_array_append_vals (deps, eff[j]->data, eff[j]->len);
            }
        }
      if (c->sp && r->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE && !is_sp_p2p (r))
        {
          /* the receive half of a send / recv op: stands for the op */
          eff[i] = g_array_new (FALSE, FALSE, sizeof (guint64));
          g_array_append_val (eff[i], r->p2p_of);
          continue;
        }
      if (!modelled (c->sp, r))
        {
          c->st.skipped[r->type]++;
          eff[i] = g_array_copy (deps);
          continue;
        }
      ok2 = fold_node (c, rank, path, r, deps, error);
    }
  for (guint i = 0; i < n; i++)
    if (eff[i])
      g_array_free (eff[i], TRUE);
  c->st.nodes += n;
  return ok2;
}

/* Order of the ready ops: the node id, then the key (a send or a
 * receive after the other nodes of its id). */
static gint
gop_cmp (gconstpointer pa, gconstpointer pb, gpointer data)
{
  const GOp *a = pa, *b = pb;
  if (a->n.id != b->n.id)
    return a->n.id < b->n.id ? -1 : 1;
  return a->key < b->key ? -1 : a->key > b->key;
}

static int
gop_ptr_cmp (gconstpointer a, gconstpointer b)
{
  return gop_cmp (*(GOp *const *) a, *(GOp *const *) b, NULL);
}

static int
cmp_u64 (gconstpointer a, gconstpointer b)
{
  guint64 x = *(const guint64 *) a, y = *(const guint64 *) b;
  return x < y ? -1 : x > y;
}

/* The bytes and the (src, dst) pairs a foreign send / recv moves. */
static char *
p2p_key (const GOp *g)
{
  guint n = g->peers->len / 2;
  g_autofree guint64 *v = g_new (guint64, n ? n : 1);
  for (guint i = 0; i < n; i++)
    v[i] = ((guint64) g_array_index (g->peers, guint32, 2 * i) << 32)
           | g_array_index (g->peers, guint32, 2 * i + 1);
  qsort (v, n, sizeof *v, cmp_u64);
  GString *s = g_string_new (NULL);
  g_string_append_printf (s, "%" G_GINT64_FORMAT ":", g->n.comm_size);
  for (guint i = 0; i < n; i++)
    g_string_append_printf (s, "%u>%u;", (guint32) (v[i] >> 32), (guint32) v[i]);
  return g_string_free (s, FALSE);
}

/* What a foreign send's (src, dst) pairs are.  An exchange: each source
 * sends once, each destination receives once, and the destinations are the
 * sources (a permutation: rings, which shardplan's send / recv op moves).
 * One way: no destination is a source (a pipeline's stage-to-stage send,
 * a p2p op when the pairs sit one in each group of a family:
 * import-groups.c).  Anything else is neither. */
typedef enum { P2P_NEITHER, P2P_EXCHANGE, P2P_ONEWAY } P2pShape;

static P2pShape
p2p_shape (const GOp *g, guint32 world)
{
  g_autofree guint8 *seen = g_new0 (guint8, world);
  guint n = g->peers->len / 2;
  for (guint i = 0; i < n; i++)
    {
      guint32 s = g_array_index (g->peers, guint32, 2 * i);
      if (seen[s])
        return P2P_NEITHER;
      seen[s] = 1;
    }
  gboolean all_sources = TRUE, no_source = TRUE;
  for (guint i = 0; i < n; i++)
    {
      guint32 d = g_array_index (g->peers, guint32, 2 * i + 1);
      if (seen[d] & 2)
        return P2P_NEITHER;
      if (seen[d] & 1)
        no_source = FALSE;
      else
        all_sources = FALSE;
      seen[d] |= 2;
    }
  return all_sources ? P2P_EXCHANGE : no_source ? P2P_ONEWAY : P2P_NEITHER;
}

/* g's deps with each bridged node (pos: id → index + 1 in `removed`,
 * whose deps are already final) replaced by its deps and each merged
 * receive (alias) by its send; duplicates dropped, and g itself where a
 * merged receive stands for it (its own receive).  g reached again through
 * a bridged node is a cycle across the files: FALSE. */
static gboolean
p2p_rewrite_deps (Ctx *c, GOp *g, GHashTable *pos, GPtrArray *removed, GHashTable *alias,
                  GError **error)
{
  gboolean touch = FALSE;
  for (guint d = 0; d < g->deps->len && !touch; d++)
    {
      guint64 *dep = &g_array_index (g->deps, guint64, d);
      touch = g_hash_table_contains (pos, dep) || g_hash_table_contains (alias, dep);
    }
  if (!touch)
    return TRUE;
  g_autoptr (GArray) nd = g_array_new (FALSE, FALSE, sizeof (guint64));
  g_hash_table_remove_all (g->dep_set);
  for (guint d = 0; d < g->deps->len; d++)
    {
      guint64 dep = g_array_index (g->deps, guint64, d);
      guint j = GPOINTER_TO_UINT (g_hash_table_lookup (pos, &dep));
      GArray *src = j ? ((GOp *) removed->pdata[j - 1])->deps : NULL;
      for (guint x = 0; x < (src ? src->len : 1); x++)
        {
          guint64 e = src ? g_array_index (src, guint64, x) : dep;
          GOp *a = g_hash_table_lookup (alias, &e);
          if (a)
            e = a->key;
          if (e == g->key && src != NULL)
            {
              set_cross_cycle (c, g, error);
              return FALSE;
            }
          if (e != g->key && !g_hash_table_contains (g->dep_set, &e))
            {
              g_array_append_val (nd, e);
              g_hash_table_add (g->dep_set, g_memdup2 (&e, sizeof e));
            }
        }
    }
  g_array_set_size (g->deps, 0);
  g_array_append_vals (g->deps, nd->data, nd->len);
  return TRUE;
}

/* Whether the ops, with each pair's receive folded into its send, still
 * form no cycle: the strongly connected components of that graph (Tarjan,
 * iterative), a receive standing for its send.  The pairs in a component
 * of two or more ops lie on a cycle the merge made: they are dropped —
 * their entries set to NULL, the send marked gone — and the check runs
 * again.  A cycle with no pair on it is the files' own, left for
 * global_order() to report. */
static void
p2p_drop_cycles (Ctx *c, GPtrArray *pairs)
{
  if (pairs->len == 0)
    return;
  g_autoptr (GPtrArray) ops = g_ptr_array_new ();
  g_autoptr (GHashTable) index = g_hash_table_new (g_int64_hash, g_int64_equal); /* key → i + 1 */
  index_ops (c, TRUE, ops, index);
  guint n = ops->len, i;
  GOp **node = (GOp **) ops->pdata;
  const guint UNSET = G_MAXUINT;
  g_autofree guint *rep = g_new (guint, n);
  g_autofree guint *num = g_new (guint, n);
  g_autofree guint *low = g_new (guint, n);
  g_autofree guint *stack = g_new (guint, n);
  g_autofree guint *call = g_new (guint, 2 * (gsize) n); /* (node, next edge) */
  g_autofree guint8 *on = g_new (guint8, n);
  g_autofree guint8 *cyclic = g_new (guint8, n);
  g_autoptr (GPtrArray) users = new_lists (n);
  for (;;)
    {
      for (i = 0; i < n; i++)
        {
          rep[i] = i;
          num[i] = UNSET;
          on[i] = cyclic[i] = 0;
          g_array_set_size (g_ptr_array_index (users, i), 0);
        }
      for (guint p = 0; p < pairs->len; p += 2)
        if (pairs->pdata[p])
          {
            guint si = GPOINTER_TO_UINT (g_hash_table_lookup (index, &((GOp *) pairs->pdata[p])->key)) - 1;
            guint ri = GPOINTER_TO_UINT (g_hash_table_lookup (index, &((GOp *) pairs->pdata[p + 1])->key)) - 1;
            rep[ri] = si;
          }
      for (i = 0; i < n; i++)
        for (guint d = 0; d < node[i]->deps->len; d++)
          {
            guint j = GPOINTER_TO_UINT (g_hash_table_lookup (index, &g_array_index (node[i]->deps, guint64, d)));
            if (j != 0 && rep[j - 1] != rep[i])
              g_array_append_val (g_ptr_array_index (users, rep[j - 1]), rep[i]);
          }
      guint counter = 0, sp = 0;
      for (guint r = 0; r < n; r++)
        {
          if (rep[r] != r || num[r] != UNSET)
            continue;
          guint cp = 0;
          num[r] = low[r] = counter++;
          stack[sp++] = r;
          on[r] = 1;
          call[0] = r, call[1] = 0, cp = 1;
          while (cp > 0)
            {
              guint x = call[2 * (cp - 1)];
              GArray *u = g_ptr_array_index (users, x);
              if (call[2 * (cp - 1) + 1] < u->len)
                {
                  guint w = g_array_index (u, guint, call[2 * (cp - 1) + 1]++);
                  if (num[w] == UNSET)
                    {
                      num[w] = low[w] = counter++;
                      stack[sp++] = w;
                      on[w] = 1;
                      call[2 * cp] = w, call[2 * cp + 1] = 0, cp++;
                    }
                  else if (on[w])
                    low[x] = MIN (low[x], num[w]);
                  continue;
                }
              cp--;
              if (cp > 0)
                {
                  guint parent = call[2 * (cp - 1)];
                  low[parent] = MIN (low[parent], low[x]);
                }
              if (low[x] == num[x])
                {
                  guint first = sp;
                  do
                    first--;
                  while (stack[first] != x);
                  for (guint y = first; y < sp; y++)
                    {
                      on[stack[y]] = 0;
                      cyclic[stack[y]] = sp - first >= 2;
                    }
                  sp = first;
                }
            }
        }
      gboolean dropped = FALSE;
      for (guint p = 0; p < pairs->len; p += 2)
        {
          GOp *snd = pairs->pdata[p];
          if (snd == NULL)
            continue;
          guint si = GPOINTER_TO_UINT (g_hash_table_lookup (index, &snd->key)) - 1;
          if (cyclic[si])
            {
              snd->gone = TRUE;
              pairs->pdata[p] = NULL;
              pairs->pdata[p + 1] = NULL;
              dropped = TRUE;
            }
        }
      if (!dropped)
        return;
    }
}

/* Other producers' send / recv nodes: a COMM_SEND_NODE whose pairs are an
 * exchange or go one way, and the COMM_RECV_NODE with the same pairs and
 * bytes (the first such by id, in id order), become one op under the
 * send's id; what pairs with nothing (a receive whose send is missing,
 * pairs that are neither) is bridged like a node not modelled and
 * counted.  Then every op's deps are rewritten: a
 * merged receive is its send, a bridged node its own deps. */
static gboolean
p2p_resolve (Ctx *c, guint32 world, GError **error)
{
  g_autoptr (GPtrArray) p2p = g_ptr_array_new ();
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init (&it, c->ops);
  while (g_hash_table_iter_next (&it, &k, &v))
    if (((GOp *) v)->peers)
      g_ptr_array_add (p2p, v);
  if (p2p->len == 0)
    return TRUE;
  g_ptr_array_sort (p2p, gop_ptr_cmp);
  g_autoptr (GHashTable) sends = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                                        (GDestroyNotify) g_queue_free);
  g_autoptr (GHashTable) alias = g_hash_table_new (g_int64_hash, g_int64_equal); /* recv id → send GOp */
  for (guint i = 0; i < p2p->len; i++)
    {
      GOp *g = p2p->pdata[i];
      gboolean snd = g->n.type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE;
      for (guint p = 0; p < g->peers->len; p += 2)
        {
          guint32 src = g_array_index (g->peers, guint32, p);
          guint32 dst = g_array_index (g->peers, guint32, p + 1);
          guint32 peer = snd ? dst : src;
          if (peer >= world)
            {
              g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                           "%s.%u.et: node %" G_GUINT64_FORMAT ": field %s %u: the rank files "
                           "stop at %s.%u.et", c->prefix, snd ? src : dst, g->n.id,
                           snd ? "comm_dst" : "comm_src", peer, c->prefix, world - 1);
              return FALSE;
            }
        }
      if (!snd)
        continue;
      P2pShape shape = g->p2p_mixed ? P2P_NEITHER : p2p_shape (g, world);
      g->oneway = shape == P2P_ONEWAY;
      if (shape == P2P_NEITHER)
        {
          g->gone = TRUE;
          continue;
        }
      char *key = p2p_key (g);
      GQueue *q = g_hash_table_lookup (sends, key);
      if (q == NULL)
        g_hash_table_insert (sends, key, q = g_queue_new ());
      else
        g_free (key);
      g_queue_push_tail (q, g);
    }
  g_autoptr (GPtrArray) pairs = g_ptr_array_new (); /* send, receive, send, receive … */
  for (guint i = 0; i < p2p->len; i++)
    {
      GOp *g = p2p->pdata[i];
      if (g->n.type != CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE)
        continue;
      g->gone = TRUE;
      if (g->p2p_mixed)
        continue;
      g_autofree char *key = p2p_key (g);
      GQueue *q = g_hash_table_lookup (sends, key);
      GOp *s = q ? g_queue_pop_head (q) : NULL;
      if (s == NULL)
        continue;
      g_ptr_array_add (pairs, s);
      g_ptr_array_add (pairs, g);
    }
  /* a pair whose send and receive have other work between them (send,
   * compute on its result, then the receive) cannot be one op: merged, it
   * would depend on itself.  Such pairs stay apart and are bridged. */
  p2p_drop_cycles (c, pairs);
  for (guint i = 0; i < pairs->len; i += 2)
    {
      GOp *s = pairs->pdata[i], *g = pairs->pdata[i + 1];
      if (s == NULL)
        {
          /* dropped: the send goes back to the bridged */
          continue;
        }
      g_hash_table_insert (alias, &g->key, s);
      for (guint d = 0; d < g->deps->len; d++)
        {
          guint64 dep = g_array_index (g->deps, guint64, d);
          if (dep != s->key && !g_hash_table_contains (s->dep_set, &dep))
            {
              g_array_append_val (s->deps, dep);
              g_hash_table_add (s->dep_set, g_memdup2 (&dep, sizeof dep));
            }
        }
      c->st.p2p_mapped++;
    }
  /* bridged: unpaired receives, sends left in the queues, one-way sends */
  g_hash_table_iter_init (&it, sends);
  while (g_hash_table_iter_next (&it, &k, &v))
    for (GList *l = ((GQueue *) v)->head; l; l = l->next)
      ((GOp *) l->data)->gone = TRUE;
  g_autoptr (GPtrArray) removed = g_ptr_array_new ();
  for (guint i = 0; i < p2p->len; i++)
    {
      GOp *g = p2p->pdata[i];
      if (g->gone && !g_hash_table_contains (alias, &g->key))
        {
          g_ptr_array_add (removed, g);
          c->st.skipped[g->n.type] += g->n_ranks;
        }
    }

  /* what a dep on a bridged node stands for, bridged nodes in dep order
   * (Kahn over the bridged nodes alone; a cycle among them is one across
   * the files) */
  g_autoptr (GHashTable) pos = g_hash_table_new (g_int64_hash, g_int64_equal); /* id → index + 1 */
  for (guint i = 0; i < removed->len; i++)
    g_hash_table_insert (pos, &((GOp *) removed->pdata[i])->key, GUINT_TO_POINTER (i + 1));
  guint nr = removed->len;
  g_autofree guint *indeg = g_new0 (guint, nr ? nr : 1);
  g_autofree guint *order = g_new (guint, nr ? nr : 1);
  g_autoptr (GPtrArray) users = new_lists (nr);
  dep_graph (removed, pos, FALSE, indeg, users);
  if (kahn (nr, users, indeg, order) < nr)
    for (guint i = 0; i < nr; i++)
      if (indeg[i] > 0)
        {
          set_cross_cycle (c, removed->pdata[i], error);
          return FALSE;
        }
  /* each bridged node's deps, rewritten in place in that order; then
   * every op that stays (a dep on a bridged node is that node's deps, on a
   * merged receive its send, never the op itself) */
  for (guint oi = 0; oi < nr; oi++)
    if (!p2p_rewrite_deps (c, removed->pdata[order[oi]], pos, removed, alias, error))
      return FALSE;
  g_hash_table_iter_init (&it, c->ops);
  while (g_hash_table_iter_next (&it, &k, &v))
    if (!((GOp *) v)->gone && !p2p_rewrite_deps (c, v, pos, removed, alias, error))
      return FALSE;
  return TRUE;
}

/* The ops in an order where every dep comes first, the smallest id first
 * among the ready ones (Kahn over a sorted sequence: files in id order come
 * back in id order, shardplan's own exactly); FALSE on a cycle across files. */
static GPtrArray *
global_order (Ctx *c, GError **error)
{
  g_autoptr (GPtrArray) all = g_ptr_array_new ();
  g_autoptr (GHashTable) index = g_hash_table_new (g_int64_hash, g_int64_equal); /* key → i + 1 */
  index_ops (c, FALSE, all, index);
  guint n = all->len;
  g_autofree guint *indeg = g_new0 (guint, n ? n : 1);
  g_autoptr (GPtrArray) users = new_lists (n);
  /* deps name ops that stay (p2p_resolve rewrote the rest) */
  GOp *bad = dep_graph (all, index, TRUE, indeg, users);
  if (bad)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                   "%s.%u.et: node %" G_GUINT64_FORMAT ": field data_deps: a dependency on a node "
                   "that is no op", c->prefix, bad->first_rank, bad->n.id);
      return NULL;
    }
  g_autoptr (GSequence) ready = g_sequence_new (NULL);
  for (guint i = 0; i < n; i++)
    if (indeg[i] == 0)
      g_sequence_insert_sorted (ready, all->pdata[i], gop_cmp, NULL);
  GPtrArray *out = g_ptr_array_new ();
  while (!g_sequence_is_empty (ready))
    {
      GSequenceIter *first = g_sequence_get_begin_iter (ready);
      GOp *g = g_sequence_get (first);
      g_sequence_remove (first);
      g->plan_id = out->len;
      g_ptr_array_add (out, g);
      GArray *u = g_ptr_array_index (users, GPOINTER_TO_UINT (g_hash_table_lookup (index, &g->key)) - 1);
      for (guint x = 0; x < u->len; x++)
        if (--indeg[g_array_index (u, guint, x)] == 0)
          g_sequence_insert_sorted (ready, all->pdata[g_array_index (u, guint, x)], gop_cmp, NULL);
    }
  if (out->len < n)
    {
      /* name the smallest id left */
      GOp *worst = NULL;
      for (guint i = 0; i < n; i++)
        if (indeg[i] > 0 && (worst == NULL || gop_cmp (all->pdata[i], worst, NULL) < 0))
          worst = all->pdata[i];
      set_cross_cycle (c, worst, error);
      g_ptr_array_free (out, TRUE);
      return NULL;
    }
  return out;
}

/* Files written by sp_chakra_export(): the exact plan back. */
static SpPlan *
build_exact (Ctx *c, GPtrArray *order, guint32 world, GError **error)
{
  if (sp_plan_world_size (c->head) != world)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                   "%s: %u rank files, but the plan in their GlobalMetadata has %u ranks",
                   c->prefix, world, sp_plan_world_size (c->head));
      return NULL;
    }
  g_autoptr (SpPlan) plan = sp_plan_new (sp_plan_groups_options (c->head));
  g_autofree const char **keys = sp_plan_meta_keys (c->head);
  for (guint i = 0; keys[i]; i++)
    sp_plan_set_meta (plan, keys[i], sp_plan_get_meta (c->head, keys[i]));
  g_autoptr (GArray) deps = g_array_new (FALSE, FALSE, sizeof (guint32));
  for (guint i = 0; i < order->len; i++)
    {
      GOp *g = order->pdata[i];
      g_autofree char *file = g_strdup_printf ("%s.%u.et", c->prefix, g->first_rank);
      SpOp op = { 0 };
      op.name = g->name;
      op.layer = (gint32) g->n.sp_layer;
      op.bytes = g->n.sp_bytes;
      op.count = g->n.sp_count;
      op.stream = (guint32) g->n.sp_stream;
      op.flops = g->n.sp_flops;
      op.src = (guint32) MIN (g->n.sp_src, G_MAXUINT32);
      op.dst = (guint32) MIN (g->n.sp_dst, G_MAXUINT32);
      op.parent = -1;
      const char *bad = !sp_coll_from_name (g->n.sp_kind, &op.kind) ? "sp_kind"
                        : !sp_dtype_from_name (g->n.sp_dtype, &op.dtype) ? "sp_dtype"
                        : !sp_redop_from_name (g->n.sp_redop, &op.redop) ? "sp_redop"
                        : !sp_algo_from_name (g->n.sp_algorithm, &op.algorithm) ? "sp_algorithm"
                        : !sp_phase_from_name (g->n.sp_phase, &op.phase) ? "sp_phase" : NULL;
      if (strcmp (g->n.sp_family, "none") == 0)
        op.family = SP_FAMILY_NONE;
      else if (!bad && !sp_family_from_name (g->n.sp_family, &op.family))
        bad = "sp_family";
      if (bad)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                       "%s: node %" G_GUINT64_FORMAT ": field %s: not a shardplan name", file,
                       g->n.id, bad);
          return NULL;
        }
      if (g->n.sp_parent >= 0)
        {
          guint64 pid = (guint64) g->n.sp_parent;
          GOp *p = g_hash_table_lookup (c->ops, &pid);
          if (p == NULL)
            {
              g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                           "%s: node %" G_GUINT64_FORMAT ": field sp_parent: node %" G_GINT64_FORMAT
                           " is in no file", file, g->n.id, g->n.sp_parent);
              return NULL;
            }
          op.parent = p->plan_id;
        }
      /* expected on how many ranks */
      guint32 expect = world;
      if (op.family != SP_FAMILY_NONE && op.family < SP_FAMILY_N && sp_groups_has_family (c->groups, op.family))
        {
          expect = 0;
          for (guint32 gi = 0; gi < sp_groups_n_groups (c->groups, op.family); gi++)
            {
              guint32 size = 0, pair[2];
              sp_plan_op_members (c->groups, &op, gi, pair, &size);
              expect += size;
            }
        }
      if (g->n_ranks != expect)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                       "%s: node %" G_GUINT64_FORMAT " ('%s'): in %u of the %u rank files, but its "
                       "family %s runs it on %u ranks", file, g->n.id, g->name, g->n_ranks, world,
                       g->n.sp_family, expect);
          return NULL;
        }
      g_array_set_size (deps, 0);
      if (g->n.has_sp_deps)
        /* the plan's own deps, where some rank skips one of them */
        for (size_t d = 0; d < g->n.n_sp_deps; d++)
          {
            guint64 key = (guint64) g->n.sp_deps[d];
            GOp *dg = g->n.sp_deps[d] < 0 ? NULL : g_hash_table_lookup (c->ops, &key);
            if (dg == NULL || dg->plan_id >= i)
              {
                g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE,
                             "%s: node %" G_GUINT64_FORMAT ": field sp_deps: node %" G_GINT64_FORMAT
                             " is %s", file, g->n.id, (gint64) g->n.sp_deps[d],
                             dg ? "not an earlier op" : "in no file");
                return NULL;
              }
            g_array_append_val (deps, dg->plan_id);
          }
      else
        for (guint d = 0; d < g->deps->len; d++)
          {
            GOp *dg = g_hash_table_lookup (c->ops, &g_array_index (g->deps, guint64, d));
            g_array_append_val (deps, dg->plan_id);
          }
      op.n_deps = deps->len;
      op.deps = (const guint32 *) deps->data;
      GError *e = NULL;
      if (!sp_plan_add_op (plan, &op, NULL, &e))
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: node %" G_GUINT64_FORMAT
                       ": %s", file, g->n.id, e->message);
          g_error_free (e);
          return NULL;
        }
    }
  return g_steal_pointer (&plan);
}

SpPlan *
sp_chakra_import (const char *prefix, const char *groups_path, const SpTopo *topo,
                  SpChakraImportStats *out_stats, GError **error)
{
  g_return_val_if_fail (prefix != NULL, NULL);
  Ctx c = { 0 };
  c.prefix = prefix;
  c.topo = topo;
  c.ops = g_hash_table_new_full (g_int64_hash, g_int64_equal, NULL, gop_free);
  c.pg_checked = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, g_free);
  c.arena.chunks = g_ptr_array_new_with_free_func (g_free);
  c.arena.sizes = g_array_new (FALSE, FALSE, sizeof (gsize));
  SpPlan *plan = NULL;
  GPtrArray *order = NULL;
  guint32 world = 0;
  {
    g_autofree char *def = g_strdup_printf ("%s.groups.json", prefix);
    if (groups_path || g_file_test (def, G_FILE_TEST_EXISTS))
      if ((c.pg = sp_chakra_pg_load (groups_path ? groups_path : def, error)) == NULL)
        goto out;
  }
  for (;; world++)
    {
      g_autofree char *path = g_strdup_printf ("%s.%u.et", prefix, world);
      if (!g_file_test (path, G_FILE_TEST_EXISTS))
        break;
      if (world == MAX_RANKS)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s: more than %u rank files",
                       path, MAX_RANKS);
          goto out;
        }
      if (!read_rank (&c, world, path, error))
        goto out;
    }
  if (world == 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_IO, "%s.0.et: no such file (PREFIX names the files "
                   "PREFIX.<rank>.et)", prefix);
      goto out;
    }
  {
    g_autofree char *next = g_strdup_printf ("%s.%u.et", prefix, world + 1);
    if (world > 0 && g_file_test (next, G_FILE_TEST_EXISTS))
      {
        g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TRACE, "%s.%u.et: missing, but %s exists: "
                     "rank files must be numbered 0 .. W-1 without a gap", prefix, world, next);
        goto out;
      }
  }
  c.st.files = world;
  if (!c.sp && !p2p_resolve (&c, world, error))
    goto out;
  order = global_order (&c, error);
  if (order == NULL)
    goto out;
  if (c.sp)
    plan = build_exact (&c, order, world, error);
  else
    {
      SpChakraForeign f = { prefix, topo, c.pg, world };
      g_autoptr (GPtrArray) ops = g_ptr_array_new ();
      for (guint i = 0; i < order->len; i++)
        {
          GOp *g = order->pdata[i];
          SpChakraForeignOp *fo = g_new0 (SpChakraForeignOp, 1);
          fo->id = g->n.id;
          fo->name = g->name;
          fo->file_rank = g->first_rank;
          fo->coll = g->n.type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE;
          fo->comm_type = g->n.comm_type;
          fo->comm_size = (guint64) g->n.comm_size;
          fo->dur_us = g->max_dur_us;
          fo->num_ops = g->n.has_num_ops ? (guint64) g->n.num_ops : 0;
          fo->rank_pg = g->rank_pg;
          fo->peers = g->peers;
          fo->oneway = g->oneway;
          fo->n_ranks = g->n_ranks;
          fo->n_deps = g->deps->len;
          fo->deps = g_new (guint32, g->deps->len ? g->deps->len : 1);
          for (guint d = 0; d < g->deps->len; d++)
            fo->deps[d] = ((GOp *) g_hash_table_lookup (c.ops, &g_array_index (g->deps, guint64, d)))->plan_id;
          if (g->dur_differs)
            c.st.compute_spread++;
          g_ptr_array_add (ops, fo);
        }
      plan = sp_chakra_build_foreign (&f, ops, error);
      for (guint i = 0; i < ops->len; i++)
        {
          g_free (((SpChakraForeignOp *) ops->pdata[i])->deps);
          g_free (ops->pdata[i]);
        }
    }
  if (plan)
    {
      c.st.ops = sp_plan_n_ops (plan);
      c.st.shardplan = c.sp;
      if (out_stats)
        *out_stats = c.st;
    }
out:
  if (order)
    g_ptr_array_free (order, TRUE);
  g_hash_table_destroy (c.ops);
  g_hash_table_destroy (c.pg_checked);
  g_ptr_array_free (c.arena.chunks, TRUE);
  g_array_free (c.arena.sizes, TRUE);
  sp_chakra_pg_free (c.pg);
  g_free (c.header);
  if (c.head)
    sp_plan_free (c.head);
  if (c.groups)
    sp_groups_free (c.groups);
  return plan;
}
