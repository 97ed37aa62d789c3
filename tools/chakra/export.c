/* Plan → Chakra ET files (tools/chakra/chakra.h).  One pass per rank over
 * the plan; each node is packed by protoc-c's generated code into a
 * buffer that is flushed to the rank's temporary file. */
#include "config.h"
#include "chakra/chakra.h"
#include "chakra/chakra-private.h"
#include "shardplan/file.h"
#include "shardplan/sim.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>

#define FLUSH_BYTES (1u << 20)
#define MAX_ATTRS 20

typedef struct {
  int fd;
  const char *path;
  GByteArray *buf;
  guint64 written;
} Out;

static gboolean
out_flush (Out *o, GError **error)
{
  const guint8 *p = o->buf->data;
  gsize left = o->buf->len;
  while (left > 0)
    {
      ssize_t n = write (o->fd, p, left);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_IO, "cannot write '%s': %s", o->path,
                       g_strerror (errno));
          return FALSE;
        }
      p += n;
      left -= (gsize) n;
    }
  o->written += o->buf->len;
  g_byte_array_set_size (o->buf, 0);
  return TRUE;
}

/* Append one length-delimited message: the varint length (Chakra's
 * framing), then protobuf-c's encoding of the message. */
static gboolean
out_message (Out *o, const ProtobufCMessage *msg, GError **error)
{
  gsize len = protobuf_c_message_get_packed_size (msg);
  guint8 head[10];
  gsize h = sp_chakra_varint_encode (len, head);
  guint old = o->buf->len;
  g_byte_array_set_size (o->buf, old + h + len);
  memcpy (o->buf->data + old, head, h);
  protobuf_c_message_pack (msg, o->buf->data + old + h);
  return o->buf->len < FLUSH_BYTES || out_flush (o, error);
}

typedef struct {
  ChakraProtoMsg__AttributeProto a[MAX_ATTRS];
  ChakraProtoMsg__AttributeProto *p[MAX_ATTRS];
  guint n;
} Attrs;

static ChakraProtoMsg__AttributeProto *
attr_add (Attrs *at, const char *name)
{
  g_assert (at->n < MAX_ATTRS);
  ChakraProtoMsg__AttributeProto *a = &at->a[at->n];
  chakra_proto_msg__attribute_proto__init (a);
  a->name = (char *) name;
  at->p[at->n] = a;
  at->n++;
  return a;
}

static void
attr_i64 (Attrs *at, const char *name, gint64 v)
{
  ChakraProtoMsg__AttributeProto *a = attr_add (at, name);
  a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
  a->int64_val = v;
}

static void
attr_i32 (Attrs *at, const char *name, gint32 v)
{
  ChakraProtoMsg__AttributeProto *a = attr_add (at, name);
  a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL;
  a->int32_val = v;
}

static void
attr_u64 (Attrs *at, const char *name, guint64 v)
{
  ChakraProtoMsg__AttributeProto *a = attr_add (at, name);
  a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL;
  a->uint64_val = v;
}

static void
attr_str (Attrs *at, const char *name, const char *v)
{
  ChakraProtoMsg__AttributeProto *a = attr_add (at, name);
  a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL;
  a->string_val = (char *) v;
}

static void
attr_bool (Attrs *at, const char *name, gboolean v)
{
  ChakraProtoMsg__AttributeProto *a = attr_add (at, name);
  a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL;
  a->bool_val = v;
}

/* What every rank shares: the groups, group numbers, kernel durations. */
typedef struct {
  const SpPlan *plan;
  SpGroups *groups;
  guint32 n_ops;
  guint32 world;
  guint32 pg_base[SP_FAMILY_N]; /* group number of (family, 0); 0 = family unused */
  guint64 *dur_us;              /* kernels: modelled duration (µs), or 0 */
  gboolean have_dur;
  char *header;                 /* the plan JSON without ops */
  char **pg_names;              /* decimal strings, by group number */
  char **pg_descs;              /* "family.index", by group number */
  guint32 n_pg;
  /* A node's encoding is the concatenation of three encodings of partial
   * Nodes (protobuf merges them: repeated fields append): the part every
   * rank shares, packed once per op; the group's attributes, packed once
   * per group; the rank's deps.  Packing each node whole for each of
   * 16,384 ranks spent most of the export in protobuf-c. */
  GByteArray **op_part;         /* by op */
  GByteArray **pg_part;         /* by group number */
  GByteArray **recv_part;       /* send / recv ops: the COMM_RECV_NODE half; else NULL */
  GByteArray **dst_part;        /* p2p ops: the receiver's node (a COMM_RECV_NODE); else NULL */
  gboolean covers[SP_FAMILY_N]; /* the family's groups hold every rank */
  SpChakraRankDurations durations;
  gpointer durations_data;
} Ctx;

/* send / recv (both halves on every rank) and p2p (a COMM_SEND_NODE on
 * the sender, a COMM_RECV_NODE of the same id on the receiver) */
static gboolean
is_p2p (SpColl kind)
{
  return kind == SP_COLL_SEND || kind == SP_COLL_RECV || kind == SP_COLL_P2P;
}

static GByteArray *
pack_new (const ProtobufCMessage *msg)
{
  gsize len = protobuf_c_message_get_packed_size (msg);
  GByteArray *b = g_byte_array_sized_new (len);
  g_byte_array_set_size (b, len);
  protobuf_c_message_pack (msg, b->data);
  return b;
}

static GByteArray *pack_op_part (Ctx *c, const SpOp *op, gboolean receiver);
static void pack_recv_part (Ctx *c, const SpOp *op);

static gboolean
ctx_init (Ctx *c, const SpPlan *plan, const SpTopo *topo, SpChakraRankDurations durations,
          gpointer durations_data, GError **error)
{
  memset (c, 0, sizeof *c);
  c->plan = plan;
  c->durations = durations;
  c->durations_data = durations_data;
  c->n_ops = sp_plan_n_ops (plan);
  c->world = sp_plan_world_size (plan);
  c->groups = sp_groups_build (sp_plan_groups_options (plan), error);
  if (c->groups == NULL || !sp_plan_check_groups (plan, c->groups, error))
    return FALSE;
  if (topo && sp_topo_world_size (topo) != c->world)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "the plan is for %u ranks but the topology has %u GPUs", c->world,
                   sp_topo_world_size (topo));
      return FALSE;
    }
  for (guint f = 0; f < SP_FAMILY_N; f++)
    {
      guint64 in = 0;
      for (guint32 i = 0; i < sp_groups_n_groups (c->groups, (SpFamily) f); i++)
        {
          guint32 size = 0;
          sp_groups_members (c->groups, (SpFamily) f, i, &size);
          in += size;
        }
      c->covers[f] = in == c->world;
    }
  gboolean used[SP_FAMILY_N] = { FALSE };
  for (guint32 o = 0; o < c->n_ops; o++)
    {
      const SpOp *op = sp_plan_op (plan, o);
      /* comm_tag, which pairs a send with its receive, is an int32 in Chakra */
      if (is_p2p (op->kind) && op->id > G_MAXINT32)
        {
          g_set_error (error, SP_ERROR, SP_ERROR_UNSUPPORTED,
                       "op %u ('%s'): a %s op's id is its comm_tag, and Chakra's comm_tag is an "
                       "int32 (ids up to %d)", op->id, op->name, sp_coll_name (op->kind), G_MAXINT32);
          return FALSE;
        }
      if (sp_coll_is_communication (op->kind) && !is_p2p (op->kind) && op->family < SP_FAMILY_N)
        used[op->family] = TRUE;
    }
  guint32 next = 1;
  for (guint f = 0; f < SP_FAMILY_N; f++)
    if (used[f])
      {
        c->pg_base[f] = next;
        next += sp_groups_n_groups (c->groups, (SpFamily) f);
      }
  c->n_pg = next - 1;
  c->pg_names = g_new0 (char *, next);
  c->pg_descs = g_new0 (char *, next);
  for (guint f = 0; f < SP_FAMILY_N; f++)
    for (guint32 i = 0; used[f] && i < sp_groups_n_groups (c->groups, (SpFamily) f); i++)
      {
        guint32 id = c->pg_base[f] + i;
        c->pg_names[id] = g_strdup_printf ("%u", id);
        c->pg_descs[id] = g_strdup_printf ("%s.%u", sp_family_name ((SpFamily) f), i);
      }
  c->pg_part = g_new0 (GByteArray *, next);
  for (guint f = 0; f < SP_FAMILY_N; f++)
    for (guint32 i = 0; used[f] && i < sp_groups_n_groups (c->groups, (SpFamily) f); i++)
      {
        guint32 id = c->pg_base[f] + i;
        ChakraProtoMsg__Node node = CHAKRA_PROTO_MSG__NODE__INIT;
        Attrs at = { .n = 0 };
        attr_str (&at, "pg_name", c->pg_names[id]);
        attr_str (&at, "pg_desc", c->pg_descs[id]);
        attr_u64 (&at, "sp_group_index", i);
        node.n_attr = at.n;
        node.attr = at.p;
        c->pg_part[id] = pack_new (&node.base);
      }

  c->dur_us = g_new0 (guint64, c->n_ops ? c->n_ops : 1);
  if (topo)
    {
      double eff = 0.5;
      const char *meta = sp_plan_get_meta (plan, "compute_efficiency");
      if (meta && !sp_parse_double ("plan meta compute_efficiency", meta, 1e-9, 1.0, &eff, error))
        return FALSE;
      c->have_dur = TRUE;
      for (guint32 o = 0; o < c->n_ops; o++)
        {
          const SpOp *op = sp_plan_op (plan, o);
          if (sp_coll_is_communication (op->kind) || sp_coll_is_composite (op->kind))
            continue;
          guint64 ns = sp_sim_kernel_ns (topo, eff, op);
          if (ns == G_MAXUINT64)
            {
              g_set_error (error, SP_ERROR, SP_ERROR_UNSUPPORTED,
                           "op %u (%s): its compute time passes the simulator's horizon of 2^62 "
                           "ns (146 years): the topology's peak is near zero", o, op->name);
              return FALSE;
            }
          c->dur_us[o] = (ns + 500) / 1000;
        }
    }

  c->op_part = g_new0 (GByteArray *, c->n_ops ? c->n_ops : 1);
  c->recv_part = g_new0 (GByteArray *, c->n_ops ? c->n_ops : 1);
  c->dst_part = g_new0 (GByteArray *, c->n_ops ? c->n_ops : 1);
  for (guint32 o = 0; o < c->n_ops; o++)
    {
      const SpOp *op = sp_plan_op (plan, o);
      c->op_part[o] = pack_op_part (c, op, FALSE);
      if (op->kind == SP_COLL_P2P)
        c->dst_part[o] = pack_op_part (c, op, TRUE);
      else if (is_p2p (op->kind))
        pack_recv_part (c, op);
    }

  g_autoptr (SpPlan) head = sp_plan_new (sp_plan_groups_options (plan));
  g_autofree const char **keys = sp_plan_meta_keys (plan);
  for (guint i = 0; keys[i]; i++)
    sp_plan_set_meta (head, keys[i], sp_plan_get_meta (plan, keys[i]));
  c->header = sp_plan_to_json (head);
  return TRUE;
}

static void
ctx_clear (Ctx *c)
{
  sp_groups_free (c->groups);
  g_free (c->dur_us);
  g_free (c->header);
  for (guint32 i = 0; c->pg_names && i <= c->n_pg; i++)
    {
      g_free (c->pg_names[i]);
      g_free (c->pg_descs[i]);
    }
  g_free (c->pg_names);
  g_free (c->pg_descs);
  for (guint32 i = 0; c->pg_part && i <= c->n_pg; i++)
    if (c->pg_part[i])
      g_byte_array_free (c->pg_part[i], TRUE);
  g_free (c->pg_part);
  for (guint32 o = 0; c->op_part && o < c->n_ops; o++)
    if (c->op_part[o])
      g_byte_array_free (c->op_part[o], TRUE);
  g_free (c->op_part);
  for (guint32 o = 0; c->recv_part && o < c->n_ops; o++)
    if (c->recv_part[o])
      g_byte_array_free (c->recv_part[o], TRUE);
  g_free (c->recv_part);
  for (guint32 o = 0; c->dst_part && o < c->n_ops; o++)
    if (c->dst_part[o])
      g_byte_array_free (c->dst_part[o], TRUE);
  g_free (c->dst_part);
}

/* ASTRA-sim's communicator-group file. */
static gboolean
write_groups (const Ctx *c, const char *prefix, GError **error)
{
  GString *s = g_string_new ("{");
  for (guint f = 0; f < SP_FAMILY_N; f++)
    {
      if (c->pg_base[f] == 0)
        continue;
      for (guint32 i = 0; i < sp_groups_n_groups (c->groups, (SpFamily) f); i++)
        {
          guint32 size = 0;
          const guint32 *m = sp_groups_members (c->groups, (SpFamily) f, i, &size);
          g_string_append_printf (s, "%s\n  \"%u\": [", s->len > 1 ? "," : "", c->pg_base[f] + i);
          for (guint32 k = 0; k < size; k++)
            g_string_append_printf (s, k ? ",%u" : "%u", m[k]);
          g_string_append_c (s, ']');
        }
    }
  g_string_append (s, "\n}\n");
  g_autofree char *path = g_strdup_printf ("%s.groups.json", prefix);
  gboolean ok = sp_file_write_atomic (path, s->str, s->len, error);
  g_string_free (s, TRUE);
  return ok;
}

/* One node: the varint of the whole length, then the parts. */
static gboolean
out_node (Out *o, const GByteArray *shared, const GByteArray *group, const ProtobufCMessage *deps,
          GError **error)
{
  gsize dlen = protobuf_c_message_get_packed_size (deps);
  gsize len = shared->len + (group ? group->len : 0) + dlen;
  guint8 head[10];
  gsize h = sp_chakra_varint_encode (len, head);
  guint old = o->buf->len;
  g_byte_array_set_size (o->buf, old + h + len);
  guint8 *p = o->buf->data + old;
  memcpy (p, head, h);
  p += h;
  memcpy (p, shared->data, shared->len);
  p += shared->len;
  if (group)
    {
      memcpy (p, group->data, group->len);
      p += group->len;
    }
  protobuf_c_message_pack (deps, p);
  return o->buf->len < FLUSH_BYTES || out_flush (o, error);
}

/* The part of an op's node that is the same on every rank (for a p2p op,
 * on its senders, or with `receiver` on its receivers). */
static GByteArray *
pack_op_part (Ctx *c, const SpOp *op, gboolean receiver)
{
  ChakraProtoMsg__Node node = CHAKRA_PROTO_MSG__NODE__INIT;
  Attrs at = { .n = 0 };
  gboolean family_op = op->family < SP_FAMILY_N;
  node.id = op->id;
  node.name = (char *) op->name;
  if (is_p2p (op->kind))
    {
      /* the send half (p2p: the sender's node, or the receiver's);
       * comm_src / comm_dst are the rank's, in its own part */
      node.type = receiver ? CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE
                           : CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE;
      attr_i64 (&at, "comm_size", (gint64) op->bytes);
      attr_i32 (&at, "comm_tag", (gint32) op->id);
      attr_bool (&at, "is_cpu_op", FALSE);
    }
  else if (sp_coll_is_communication (op->kind))
    {
      node.type = CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE;
      attr_i64 (&at, "comm_type", (gint64) op->kind);
      attr_i64 (&at, "comm_size", (gint64) op->bytes);
      attr_bool (&at, "is_cpu_op", FALSE);
    }
  else
    {
      node.type = CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE;
      attr_bool (&at, "is_cpu_op", FALSE);
      if (!sp_coll_is_composite (op->kind))
        {
          attr_i64 (&at, "num_ops", (gint64) op->flops);
          if (op->bytes > 0)
            attr_u64 (&at, "tensor_size", op->bytes);
          /* with per-rank durations, every rank's part carries its own */
          if (c->durations == NULL)
            node.duration_micros = c->dur_us[op->id];
        }
    }
  attr_str (&at, "sp_kind", sp_coll_name (op->kind));
  attr_str (&at, "sp_family", family_op ? sp_family_name (op->family) : "none");
  attr_u64 (&at, "sp_bytes", op->bytes);
  attr_u64 (&at, "sp_count", op->count);
  attr_str (&at, "sp_dtype", sp_dtype_name (op->dtype));
  attr_str (&at, "sp_redop", sp_redop_name (op->redop));
  attr_str (&at, "sp_algorithm", sp_algo_name (op->algorithm));
  attr_u64 (&at, "sp_stream", op->stream);
  attr_i64 (&at, "sp_layer", op->layer);
  attr_str (&at, "sp_phase", sp_phase_name (op->phase));
  attr_i64 (&at, "sp_parent", op->parent);
  attr_u64 (&at, "sp_flops", op->flops);
  if (op->kind == SP_COLL_P2P)
    {
      attr_u64 (&at, "sp_src", op->src);
      attr_u64 (&at, "sp_dst", op->dst);
    }
  /* A rank that skips a dep (a p2p op's other members, a family that
   * leaves ranks out) depends on the dep's own deps instead; the union of
   * the files' deps would then not be the plan's: the plan's are kept. */
  g_autofree int64_t *plan_deps = NULL;
  ChakraProtoMsg__Int64List list = CHAKRA_PROTO_MSG__INT64_LIST__INIT;
  gboolean skipped = FALSE;
  for (guint32 k = 0; k < op->n_deps && !skipped; k++)
    {
      const SpOp *d = sp_plan_op (c->plan, op->deps[k]);
      skipped = d->kind == SP_COLL_P2P || (d->family < SP_FAMILY_N && !c->covers[d->family]);
    }
  if (skipped)
    {
      plan_deps = g_new (int64_t, op->n_deps);
      for (guint32 k = 0; k < op->n_deps; k++)
        plan_deps[k] = op->deps[k];
      list.n_values = op->n_deps;
      list.values = plan_deps;
      ChakraProtoMsg__AttributeProto *a = attr_add (&at, "sp_deps");
      a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_LIST;
      a->int64_list = &list;
    }
  node.n_attr = at.n;
  node.attr = at.p;
  return pack_new (&node.base);
}

/* The receive half of a send / recv op: a COMM_RECV_NODE of id
 * SP_CHAKRA_RECV_ID (n_ops, op id) naming its send half in sp_p2p_of. */
static void
pack_recv_part (Ctx *c, const SpOp *op)
{
  ChakraProtoMsg__Node node = CHAKRA_PROTO_MSG__NODE__INIT;
  Attrs at = { .n = 0 };
  node.id = SP_CHAKRA_RECV_ID (c->n_ops, op->id);
  node.name = (char *) op->name;
  node.type = CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE;
  attr_i64 (&at, "comm_size", (gint64) op->bytes);
  attr_i32 (&at, "comm_tag", (gint32) op->id);
  attr_bool (&at, "is_cpu_op", FALSE);
  attr_u64 (&at, "sp_p2p_of", op->id);
  node.n_attr = at.n;
  node.attr = at.p;
  c->recv_part[op->id] = pack_new (&node.base);
}

/* A send / recv op on `rank`: where its data goes and comes from.  In each
 * group of the op's family (members in group order) group rank g sends to
 * g + 1 and receives from g - 1 (send), or the reverse (recv), as the
 * executor's backends run it (exec/mpi, exec/nccl).  A p2p op: from its
 * group's src member to its dst member, whichever `rank` is. */
static void
p2p_peers (const Ctx *c, const SpOp *op, guint32 rank, guint32 *out_to, guint32 *out_from)
{
  guint32 idx = 0, g = 0, n = 0;
  sp_groups_find (c->groups, op->family, rank, &idx, &g);
  const guint32 *m = sp_groups_members (c->groups, op->family, idx, &n);
  if (op->kind == SP_COLL_P2P)
    {
      *out_to = m[op->dst];
      *out_from = m[op->src];
      return;
    }
  guint32 next = m[(g + 1) % n], prev = m[(g + n - 1) % n];
  *out_to = op->kind == SP_COLL_SEND ? next : prev;
  *out_from = op->kind == SP_COLL_SEND ? prev : next;
}

/* An op's node ids on a rank: itself, and its receive half for send / recv. */
static void
append_ids (const Ctx *c, guint32 op_id, GArray *deps, GHashTable *seen)
{
  guint64 v = op_id;
  if (g_hash_table_add (seen, GUINT_TO_POINTER (op_id + 1)))
    {
      g_array_append_val (deps, v);
      if (c->recv_part[op_id])
        {
          v = SP_CHAKRA_RECV_ID (c->n_ops, op_id);
          g_array_append_val (deps, v);
        }
    }
}

/* One rank's file. */
static gboolean
write_rank (const Ctx *c, guint32 rank, const char *path, guint64 *inout_nodes,
            guint64 *inout_bytes, GError **error)
{
  g_autofree guint64 *dur = NULL;
  if (c->durations)
    {
      dur = g_new (guint64, c->n_ops ? c->n_ops : 1);
      if (!c->durations (rank, dur, c->durations_data, error))
        return FALSE;
    }
  g_autofree char *tmp = NULL;
  int fd = sp_file_temp_open (path, &tmp, error);
  if (fd < 0)
    return FALSE;
  Out o = { fd, path, g_byte_array_sized_new (FLUSH_BYTES + 4096), 0 };

  guint32 fam_index[SP_FAMILY_N];
  for (guint f = 0; f < SP_FAMILY_N; f++)
    if (!sp_groups_has_family (c->groups, (SpFamily) f)
        || !sp_groups_find (c->groups, (SpFamily) f, rank, &fam_index[f], NULL))
      fam_index[f] = G_MAXUINT32;

  g_autofree gboolean *runs = g_new0 (gboolean, c->n_ops ? c->n_ops : 1);
  /* Ops this rank skips: their effective deps (run ops only). */
  g_autofree GArray **skip_deps = g_new0 (GArray *, c->n_ops ? c->n_ops : 1);
  g_autoptr (GHashTable) last_on_stream = g_hash_table_new (NULL, NULL);
  g_autoptr (GArray) deps = g_array_new (FALSE, FALSE, sizeof (guint64));
  g_autoptr (GHashTable) seen = g_hash_table_new (NULL, NULL);

  ChakraProtoMsg__GlobalMetadata gm = CHAKRA_PROTO_MSG__GLOBAL_METADATA__INIT;
  Attrs at = { .n = 0 };
  gm.version = (char *) SP_CHAKRA_ET_VERSION;
  attr_str (&at, "schema", "shardplan-chakra");
  attr_str (&at, "producer", "shardplan " PACKAGE_VERSION);
  attr_u64 (&at, "rank", rank);
  attr_u64 (&at, "world_size", c->world);
  attr_str (&at, "comm_size_convention", "nccl-tests");
  attr_str (&at, "shardplan_plan", c->header);
  gm.n_attr = at.n;
  gm.attr = at.p;
  gboolean ok = out_message (&o, &gm.base, error);

  for (guint32 i = 0; ok && i < c->n_ops; i++)
    {
      const SpOp *op = sp_plan_op (c->plan, i);
      gboolean family_op = op->family < SP_FAMILY_N;
      runs[i] = op->kind == SP_COLL_P2P ? sp_plan_op_find (c->groups, op, rank, NULL, NULL)
                                        : !family_op || fam_index[op->family] != G_MAXUINT32;
      /* deps over the ops this rank runs */
      g_array_set_size (deps, 0);
      g_hash_table_remove_all (seen);
      for (guint32 k = 0; k < op->n_deps; k++)
        {
          guint32 d = op->deps[k];
          if (runs[d])
            append_ids (c, d, deps, seen);
          else if (skip_deps[d])
            for (guint j = 0; j < skip_deps[d]->len; j++)
              {
                guint64 v = g_array_index (skip_deps[d], guint64, j);
                if (v < c->n_ops)
                  append_ids (c, (guint32) v, deps, seen);
              }
        }
      if (!runs[i])
        {
          skip_deps[i] = g_array_copy (deps);
          continue;
        }

      ChakraProtoMsg__Node node = CHAKRA_PROTO_MSG__NODE__INIT;
      node.n_data_deps = deps->len;
      node.data_deps = (uint64_t *) deps->data;
      gpointer prev = g_hash_table_lookup (last_on_stream, GUINT_TO_POINTER (op->stream + 1));
      uint64_t ctrl[2];
      if (prev)
        {
          guint32 p = GPOINTER_TO_UINT (prev) - 1;
          ctrl[node.n_ctrl_deps++] = p;
          if (c->recv_part[p])
            ctrl[node.n_ctrl_deps++] = SP_CHAKRA_RECV_ID (c->n_ops, p);
          node.ctrl_deps = ctrl;
        }
      g_hash_table_insert (last_on_stream, GUINT_TO_POINTER (op->stream + 1),
                           GUINT_TO_POINTER (op->id + 1));
      if (dur && !sp_coll_is_composite (op->kind))
        node.duration_micros = dur[i] != G_MAXUINT64 ? dur[i] : c->dur_us[i];
      const GByteArray *shared = c->op_part[i];
      const GByteArray *group = NULL;
      ChakraProtoMsg__AttributeProto *peer_p[2];
      ChakraProtoMsg__AttributeProto peer[2];
      guint32 to = 0, from = 0, src = rank;
      if (is_p2p (op->kind))
        {
          p2p_peers (c, op, rank, &to, &from);
          if (op->kind == SP_COLL_P2P && to == rank)
            {
              /* the receiver's node: from the sender to this rank */
              src = from;
              shared = c->dst_part[i];
            }
          for (guint k = 0; k < 2; k++)
            {
              chakra_proto_msg__attribute_proto__init (&peer[k]);
              peer[k].name = (char *) (k ? "comm_dst" : "comm_src");
              peer[k].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL;
              peer[k].int32_val = (gint32) (k ? to : src);
              peer_p[k] = &peer[k];
            }
          node.n_attr = 2;
          node.attr = peer_p;
        }
      else if (sp_coll_is_communication (op->kind))
        group = c->pg_part[c->pg_base[op->family] + fam_index[op->family]];
      ok = out_node (&o, shared, group, &node.base, error);
      (*inout_nodes)++;
      if (ok && c->recv_part[i])
        {
          /* the receive half: the same deps and duration, its own peers */
          peer[0].int32_val = (gint32) from;
          peer[1].int32_val = (gint32) rank;
          ok = out_node (&o, c->recv_part[i], NULL, &node.base, error);
          (*inout_nodes)++;
        }
    }
  for (guint32 i = 0; i < c->n_ops; i++)
    if (skip_deps[i])
      g_array_free (skip_deps[i], TRUE);
  if (ok)
    ok = out_flush (&o, error);
  *inout_bytes += o.written;
  g_byte_array_free (o.buf, TRUE);
  /* No fsync per file: the rename keeps a name from ever showing a partial
   * file; an fsync for each of 16,384 files would dominate the export. */
  if (close (fd) != 0 && ok)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_IO, "cannot write '%s': %s", path,
                   g_strerror (errno));
      ok = FALSE;
    }
  if (!ok)
    {
      sp_file_temp_discard (tmp);
      return FALSE;
    }
  return sp_file_temp_commit (tmp, path, error);
}

gboolean
sp_chakra_export (const SpPlan *plan, const SpTopo *topo, SpChakraRankDurations durations,
                  gpointer durations_data, const char *prefix,
                  void (*progress) (guint32 rank, guint32 world, gpointer data),
                  gpointer progress_data, SpChakraExportStats *out_stats, GError **error)
{
  g_return_val_if_fail (plan != NULL && prefix != NULL, FALSE);
  Ctx c;
  if (!ctx_init (&c, plan, topo, durations, durations_data, error))
    {
      ctx_clear (&c);
      return FALSE;
    }
  SpChakraExportStats st = { 0 };
  st.groups = c.n_pg;
  guint32 written = 0;
  gboolean ok = TRUE;
  for (guint32 r = 0; ok && r < c.world; r++)
    {
      g_autofree char *path = g_strdup_printf ("%s.%u.et", prefix, r);
      ok = write_rank (&c, r, path, &st.nodes, &st.bytes, error);
      if (ok)
        written++;
      if (ok && progress)
        progress (r, c.world, progress_data);
    }
  if (ok)
    ok = write_groups (&c, prefix, error);
  if (!ok)
    {
      /* nothing half-written: take back the files this call renamed */
      for (guint32 k = 0; k < written; k++)
        {
          g_autofree char *path = g_strdup_printf ("%s.%u.et", prefix, k);
          g_unlink (path);
        }
      ctx_clear (&c);
      return FALSE;
    }
  st.files = c.world;
  ctx_clear (&c);
  if (out_stats)
    *out_stats = st;
  return TRUE;
}
