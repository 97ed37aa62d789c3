/* Printers of `shardplan groups` (see groups-output.h for the contract).
 *
 * Why not json-glib: a 2^20-rank MiCS layout has four families of 2^20
 * members each; building a JsonNode per rank costs ~100 bytes and a
 * microsecond each, which breaks the 1 s / 300 MB target.  Writing digits
 * into a 1 MiB buffer costs a few nanoseconds per rank and no memory. */
#include "config.h"
#include "groups-output.h"
#include "shardplan/error.h"

#include <string.h>

/* ---- a buffered writer ---------------------------------------------------- */

#define OUT_CAP ((gsize) 1 << 20) /* bytes buffered before each fwrite */

typedef struct {
  FILE *fp;
  char *buf;
  gsize len;
  gboolean failed;
} Out;

static void
out_init (Out *o, FILE *fp)
{
  o->fp = fp;
  o->buf = g_malloc (OUT_CAP);
  o->len = 0;
  o->failed = FALSE;
}

static void
out_flush (Out *o)
{
  if (o->len > 0 && !o->failed && fwrite (o->buf, 1, o->len, o->fp) != o->len)
    o->failed = TRUE;
  o->len = 0;
}

/* Flush, free, and report whether everything reached the stream. */
static gboolean
out_finish (Out *o, GError **error)
{
  out_flush (o);
  g_free (o->buf);
  o->buf = NULL;
  if (fflush (o->fp) != 0 || ferror (o->fp))
    o->failed = TRUE;
  if (o->failed)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_IO, "cannot write to standard output");
      return FALSE;
    }
  return TRUE;
}

static inline void
out_room (Out *o, gsize n)
{
  if (o->len + n > OUT_CAP)
    out_flush (o);
}

static void
out_mem (Out *o, const char *s, gsize n)
{
  if (n > OUT_CAP / 2)
    {
      out_flush (o);
      if (!o->failed && fwrite (s, 1, n, o->fp) != n)
        o->failed = TRUE;
      return;
    }
  out_room (o, n);
  memcpy (o->buf + o->len, s, n);
  o->len += n;
}

static inline void
out_str (Out *o, const char *s)
{
  out_mem (o, s, strlen (s));
}

static inline void
out_char (Out *o, char c)
{
  out_room (o, 1);
  o->buf[o->len++] = c;
}

static inline void
out_spaces (Out *o, gsize n)
{
  for (gsize i = 0; i < n; i++)
    out_char (o, ' ');
}

/* Decimal digits of v (1 for 0). */
static inline guint
u32_digits (guint32 v)
{
  guint n = 1;
  while (v >= 10)
    {
      v /= 10;
      n++;
    }
  return n;
}

static inline void
out_u32 (Out *o, guint32 v)
{
  out_room (o, 10);
  guint n = u32_digits (v);
  char *p = o->buf + o->len + n;
  do
    {
      *--p = (char) ('0' + v % 10);
      v /= 10;
    }
  while (v != 0);
  o->len += n;
}

/* Text: the value right-aligned (width > 0) or left-aligned (width < 0). */
static void
out_u32_padded (Out *o, guint32 v, int width)
{
  guint n = u32_digits (v);
  guint w = (guint) ABS (width);
  if (width > 0 && n < w)
    out_spaces (o, w - n);
  out_u32 (o, v);
  if (width < 0 && n < w)
    out_spaces (o, w - n);
}

static void
out_str_padded (Out *o, const char *s, guint width)
{
  gsize n = strlen (s);
  out_mem (o, s, n);
  if (n < width)
    out_spaces (o, width - n);
}

/* ---- the families as printed ---------------------------------------------- */

/* A printed family: one library family, or two concatenated (local a2a). */
typedef struct {
  const char *name;
  SpFamily parts[2];
  guint n_parts;
} Printed;

static const Printed printed[] = {
  { "shard", { SP_FAMILY_SHARD }, 1 },
  { "replicate", { SP_FAMILY_REPLICATE }, 1 },
  { "shard_intra_node", { SP_FAMILY_SHARD_INTRA_NODE }, 1 },
  { "shard_inter_node", { SP_FAMILY_SHARD_INTER_NODE }, 1 },
  { "tensor", { SP_FAMILY_TENSOR }, 1 },
  { "data", { SP_FAMILY_DATA }, 1 },
  { "expert", { SP_FAMILY_EXPERT }, 1 },
  { "expert_data", { SP_FAMILY_EXPERT_DATA }, 1 },
  { "zero_param", { SP_FAMILY_ZERO_PARAM }, 1 },
  { "local_all_to_all", { SP_FAMILY_A2A_LOCAL, SP_FAMILY_A2A_GLOBAL }, 2 },
};

static gboolean
printed_present (const SpGroups *groups, const Printed *p)
{
  for (guint k = 0; k < p->n_parts; k++)
    if (sp_groups_has_family (groups, p->parts[k]))
      return TRUE;
  return FALSE;
}

/* Map a created (family, index) to the printed family name and index;
 * FALSE for families that are not printed (world). */
static gboolean
printed_index (const SpGroups *groups, SpFamily family, guint32 index, const char **out_name,
               guint32 *out_index)
{
  for (gsize i = 0; i < G_N_ELEMENTS (printed); i++)
    {
      guint32 offset = 0;
      for (guint k = 0; k < printed[i].n_parts; k++)
        {
          if (printed[i].parts[k] == family)
            {
              *out_name = printed[i].name;
              *out_index = offset + index;
              return TRUE;
            }
          offset += sp_groups_n_groups (groups, printed[i].parts[k]);
        }
    }
  return FALSE;
}

/* ---- JSON ----------------------------------------------------------------- */

gboolean
sp_groups_print_json (const SpGroups *groups, FILE *fp, GError **error)
{
  Out o;
  out_init (&o, fp);
  out_str (&o, "{\"world_size\": ");
  out_u32 (&o, sp_groups_world_size (groups));
  out_str (&o, ", \"families\": {");
  gboolean first_family = TRUE;
  for (gsize i = 0; i < G_N_ELEMENTS (printed); i++)
    {
      const Printed *p = &printed[i];
      if (!printed_present (groups, p))
        continue;
      if (!first_family)
        out_str (&o, ", ");
      first_family = FALSE;
      out_char (&o, '"');
      out_str (&o, p->name);
      out_str (&o, "\": [");
      gboolean first_group = TRUE;
      for (guint k = 0; k < p->n_parts; k++)
        {
          guint32 n = sp_groups_n_groups (groups, p->parts[k]);
          for (guint32 g = 0; g < n; g++)
            {
              guint32 size;
              const guint32 *m = sp_groups_members (groups, p->parts[k], g, &size);
              if (!first_group)
                out_str (&o, ", ");
              first_group = FALSE;
              out_char (&o, '[');
              for (guint32 j = 0; j < size; j++)
                {
                  if (j > 0)
                    out_str (&o, ", ");
                  out_u32 (&o, m[j]);
                }
              out_char (&o, ']');
            }
        }
      out_char (&o, ']');
    }
  out_str (&o, "}, \"creation_order\": [");
  guint32 n_created = sp_groups_n_created (groups);
  gboolean first_entry = TRUE;
  for (guint32 i = 0; i < n_created; i++)
    {
      SpFamily family;
      guint32 index;
      const char *name;
      guint32 printed_idx;
      sp_groups_created (groups, i, &family, &index);
      if (!printed_index (groups, family, index, &name, &printed_idx))
        continue;
      if (!first_entry)
        out_str (&o, ", ");
      first_entry = FALSE;
      out_str (&o, "[\"");
      out_str (&o, name);
      out_str (&o, "\", ");
      out_u32 (&o, printed_idx);
      out_char (&o, ']');
    }
  out_str (&o, "]}\n");
  return out_finish (&o, error);
}

/* ---- text ----------------------------------------------------------------- */

enum {
  COL_FAMILY = 17, /* "shard_intra_node" and "local_all_to_all" are 16 */
  COL_GROUP = 6,
  COL_LABEL = 12,
  COL_SIZE = 6,
  COL_MEMBERS = COL_FAMILY + 1 + COL_GROUP + 2 + COL_LABEL + COL_SIZE + 2,
  LINE_WIDTH = 100, /* members wrap past this column */
};

/* Print the creation order compressed to runs: "shard 0-1, replicate 0-7". */
static void
text_creation_order (Out *o, const SpGroups *groups)
{
  guint32 n_created = sp_groups_n_created (groups);
  out_str (o, "communicators created, in order (");
  const char *run_name = NULL;
  guint32 run_first = 0, run_last = 0, n_printed = 0;
  GString *line = g_string_new (NULL);
  for (guint32 i = 0; i <= n_created; i++)
    {
      const char *name = NULL;
      guint32 idx = 0;
      if (i < n_created)
        {
          SpFamily family;
          guint32 index;
          sp_groups_created (groups, i, &family, &index);
          if (!printed_index (groups, family, index, &name, &idx))
            continue;
          n_printed++;
          if (run_name == name && idx == run_last + 1)
            {
              run_last = idx;
              continue;
            }
        }
      if (run_name != NULL)
        {
          if (line->len > 0)
            g_string_append (line, ", ");
          if (run_first == run_last)
            g_string_append_printf (line, "%s %u", run_name, run_first);
          else
            g_string_append_printf (line, "%s %u-%u", run_name, run_first, run_last);
        }
      run_name = name;
      run_first = run_last = idx;
    }
  out_u32 (o, n_printed);
  out_str (o, "): ");
  out_str (o, line->len ? line->str : "none");
  out_char (o, '\n');
  g_string_free (line, TRUE);
}

/* Per family: groups inside one node, inside one NVLink domain, and what
 * that means for its collectives. */
static void
text_fabric (Out *o, const SpGroups *groups, guint32 dpn, guint32 domain, const char *link)
{
  out_str (o, "fabric: ");
  if (domain > dpn)
    {
      out_str (o, "NVLink domains of ");
      out_u32 (o, domain);
      out_str (o, " GPUs (");
      out_u32 (o, domain / dpn);
      out_str (o, " nodes; domain = rank / ");
      out_u32 (o, domain);
      out_str (o, ")\n");
    }
  else
    {
      out_str (o, link);
      out_str (o, " inside each node only (domain = node)\n");
    }
  for (gsize i = 0; i < G_N_ELEMENTS (printed); i++)
    {
      const Printed *p = &printed[i];
      if (!printed_present (groups, p))
        continue;
      guint32 total = 0, in_node = 0, in_domain = 0;
      for (guint k = 0; k < p->n_parts; k++)
        {
          total += sp_groups_n_groups (groups, p->parts[k]);
          in_node += sp_groups_n_within (groups, p->parts[k], dpn);
          in_domain += sp_groups_n_within (groups, p->parts[k], MAX (domain, dpn));
        }
      out_str (o, "  ");
      out_str_padded (o, p->name, COL_FAMILY);
      out_u32 (o, in_node);
      out_str (o, " of ");
      out_u32 (o, total);
      out_str (o, " groups inside one node");
      if (domain > dpn)
        {
          out_str (o, ", ");
          out_u32 (o, in_domain);
          out_str (o, " inside one NVLink domain");
        }
      if (in_domain == total)
        {
          out_str (o, ": ");
          out_str (o, link);
          out_str (o, " only\n");
        }
      else
        out_str (o, in_domain == 0 ? ": every group crosses the network\n"
                                   : ": some groups cross the network\n");
    }
}

gboolean
sp_groups_print_text (const SpGroups *groups, guint32 nvlink_domain, const char *link, FILE *fp,
                      GError **error)
{
  /* sp_topo_spec_local_fabric's word, as people write it */
  link = link == NULL || strcmp (link, "nvlink") == 0 ? "NVLink"
         : strcmp (link, "pcie") == 0               ? "PCIe"
         : strcmp (link, "shm") == 0                ? "shared memory"
                                                    : link;
  const SpGroupsOptions *opts = sp_groups_options (groups);
  guint32 world = sp_groups_world_size (groups);
  guint32 dpn = opts->devices_per_node ? opts->devices_per_node : 1;
  guint32 nodes = world / dpn + (world % dpn != 0);
  Out o;
  out_init (&o, fp);
  out_str (&o, "world size ");
  out_u32 (&o, world);
  out_str (&o, ", ");
  out_u32 (&o, dpn);
  out_str (&o, dpn == 1 ? " device per node, " : " devices per node, ");
  out_u32 (&o, nodes);
  out_str (&o, nodes == 1 ? " node" : " nodes");
  if (world % dpn != 0)
    out_str (&o, " (the last one partly filled)");
  out_str (&o, "; node = rank / devices per node\n\n");

  out_str_padded (&o, "family", COL_FAMILY);
  out_str (&o, " ");
  out_spaces (&o, COL_GROUP - 5);
  out_str (&o, "group  ");
  out_str_padded (&o, "label", COL_LABEL);
  out_spaces (&o, COL_SIZE - 4);
  out_str (&o, "size  ranks (node)\n");

  guint n_families = 0;
  for (gsize i = 0; i < G_N_ELEMENTS (printed); i++)
    {
      const Printed *p = &printed[i];
      if (!printed_present (groups, p))
        continue;
      n_families++;
      guint32 printed_idx = 0;
      for (guint k = 0; k < p->n_parts; k++)
        {
          guint32 n = sp_groups_n_groups (groups, p->parts[k]);
          for (guint32 g = 0; g < n; g++, printed_idx++)
            {
              guint32 size;
              const guint32 *m = sp_groups_members (groups, p->parts[k], g, &size);
              const char *label = sp_groups_label (groups, p->parts[k], g);
              out_str_padded (&o, p->name, COL_FAMILY);
              out_char (&o, ' ');
              out_u32_padded (&o, printed_idx, COL_GROUP);
              out_str (&o, "  ");
              out_str_padded (&o, label ? label : "-", COL_LABEL);
              out_u32_padded (&o, size, COL_SIZE);
              out_str (&o, "  ");
              guint col = COL_MEMBERS;
              for (guint32 j = 0; j < size; j++)
                {
                  guint32 node = m[j] / dpn;
                  guint w = u32_digits (m[j]) + 2 + u32_digits (node) + 1;
                  if (j > 0)
                    {
                      if (col + 1 + w > LINE_WIDTH)
                        {
                          out_char (&o, '\n');
                          out_spaces (&o, COL_MEMBERS);
                          col = COL_MEMBERS;
                        }
                      else
                        {
                          out_char (&o, ' ');
                          col++;
                        }
                    }
                  out_u32 (&o, m[j]);
                  out_str (&o, "(n");
                  out_u32 (&o, node);
                  out_char (&o, ')');
                  col += w;
                }
              out_char (&o, '\n');
            }
        }
    }
  if (n_families == 0)
    out_str (&o, "(no families requested: give --shard-size, --tensor-parallel, "
                 "--expert-parallel, --zero-param-group-size or --local-all-to-all)\n");
  out_char (&o, '\n');
  if (n_families > 0)
    {
      text_fabric (&o, groups, dpn, nvlink_domain, link);
      out_char (&o, '\n');
    }
  text_creation_order (&o, groups);
  return out_finish (&o, error);
}
