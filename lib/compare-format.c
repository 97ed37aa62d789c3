/* A comparison as CSV (per op) and JSON (everything). */
#include "config.h"
#include "compare-private.h"
#include "json-text.h"

#include <json-glib/json-glib.h>
#include <string.h>

/* Shortest text that reads back to the same double. */
static void
append_double (GString *out, double v)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  g_string_append (out, sp_json_double (buf, v));
}

static void
append_csv_field (GString *out, const char *text)
{
  if (strpbrk (text, ",\"\r\n") == NULL)
    {
      g_string_append (out, text);
      return;
    }
  g_string_append_c (out, '"');
  for (const char *s = text; *s; s++)
    {
      if (*s == '"')
        g_string_append_c (out, '"');
      g_string_append_c (out, *s);
    }
  g_string_append_c (out, '"');
}

char *
sp_compare_to_csv (const SpCompare *cmp)
{
  gboolean nccl = sp_compare_has_nccl (cmp);
  GString *out = g_string_new ("op_id,name,kind,family,bytes,size_band,samples,measured_ns,"
                               "sim_ns,error");
  g_string_append (out, nccl ? ",nccl_samples,nccl_ns,nccl_error\n" : "\n");
  for (guint i = 0; i < cmp->ops->len; i++)
    {
      const SpCompareOp *op = &g_array_index (cmp->ops, SpCompareOp, i);
      g_string_append_printf (out, "%u,", op->op_id);
      append_csv_field (out, op->name);
      g_string_append_c (out, ',');
      append_csv_field (out, sp_coll_name (op->coll) ? sp_coll_name (op->coll) : "?");
      g_string_append_c (out, ',');
      append_csv_field (out, op->family);
      g_string_append_printf (out, ",%" G_GUINT64_FORMAT ",%s,%" G_GUINT64_FORMAT ",", op->bytes,
                              sp_compare_band_name (op->band), op->n_samples);
      append_double (out, op->measured_ns);
      g_string_append_c (out, ',');
      append_double (out, op->sim_ns);
      g_string_append_c (out, ',');
      append_double (out, op->error);
      if (nccl)
        {
          g_string_append_printf (out, ",%" G_GUINT64_FORMAT ",", op->nccl_samples);
          if (op->nccl_samples > 0)
            {
              append_double (out, op->nccl_ns);
              g_string_append_c (out, ',');
              append_double (out, op->nccl_error);
            }
          else
            g_string_append_c (out, ',');
        }
      g_string_append_c (out, '\n');
    }
  return g_string_free (out, FALSE);
}

static void
add_member_double (JsonBuilder *b, const char *name, double v)
{
  json_builder_set_member_name (b, name);
  json_builder_add_double_value (b, v);
}

/* <stats>.nccl: NCCL's estimate over the set's ops that have one, or null. */
static void
add_nccl_stats (JsonBuilder *b, const SpCompareStats *st)
{
  json_builder_set_member_name (b, "nccl");
  if (st->nccl_n_ops == 0)
    {
      json_builder_add_null_value (b);
      return;
    }
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "ops");
  json_builder_add_int_value (b, st->nccl_n_ops);
  add_member_double (b, "median_abs_error", st->nccl_median_abs);
  add_member_double (b, "p90_abs_error", st->nccl_p90_abs);
  add_member_double (b, "worst_abs_error", st->nccl_worst_abs);
  json_builder_set_member_name (b, "worst_op_id");
  json_builder_add_int_value (b, st->nccl_worst_op_id);
  add_member_double (b, "median_signed_error", st->nccl_median_signed);
  add_member_double (b, "sim_median_abs_error", st->sim_median_abs_nccl_ops);
  json_builder_end_object (b);
}

static void
add_stats (JsonBuilder *b, const SpCompareStats *st, gboolean nccl)
{
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "label");
  json_builder_add_string_value (b, st->label);
  json_builder_set_member_name (b, "ops");
  json_builder_add_int_value (b, st->n_ops);
  json_builder_set_member_name (b, "median_abs_error");
  json_builder_add_double_value (b, st->median_abs);
  json_builder_set_member_name (b, "p90_abs_error");
  json_builder_add_double_value (b, st->p90_abs);
  json_builder_set_member_name (b, "worst_abs_error");
  json_builder_add_double_value (b, st->worst_abs);
  json_builder_set_member_name (b, "worst_op_id");
  json_builder_add_int_value (b, st->worst_op_id);
  json_builder_set_member_name (b, "median_signed_error");
  json_builder_add_double_value (b, st->median_signed);
  if (nccl)
    add_nccl_stats (b, st);
  json_builder_end_object (b);
}

static void
add_op (JsonBuilder *b, const SpCompareOp *op, gboolean nccl)
{
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "op_id");
  json_builder_add_int_value (b, op->op_id);
  json_builder_set_member_name (b, "name");
  json_builder_add_string_value (b, op->name);
  json_builder_set_member_name (b, "kind");
  json_builder_add_string_value (b, sp_coll_name (op->coll) ? sp_coll_name (op->coll) : "?");
  json_builder_set_member_name (b, "family");
  json_builder_add_string_value (b, op->family);
  json_builder_set_member_name (b, "bytes");
  json_builder_add_int_value (b, (gint64) MIN (op->bytes, (guint64) G_MAXINT64));
  json_builder_set_member_name (b, "size_band");
  json_builder_add_string_value (b, sp_compare_band_name (op->band));
  json_builder_set_member_name (b, "samples");
  json_builder_add_int_value (b, (gint64) op->n_samples);
  json_builder_set_member_name (b, "measured_ns");
  json_builder_add_double_value (b, op->measured_ns);
  json_builder_set_member_name (b, "sim_ns");
  json_builder_add_double_value (b, op->sim_ns);
  json_builder_set_member_name (b, "error");
  json_builder_add_double_value (b, op->error);
  json_builder_set_member_name (b, "worst_sample_error");
  json_builder_add_double_value (b, op->worst_sample_error);
  if (nccl)
    {
      json_builder_set_member_name (b, "nccl_samples");
      json_builder_add_int_value (b, (gint64) op->nccl_samples);
      json_builder_set_member_name (b, "nccl_ns");
      if (op->nccl_samples > 0)
        json_builder_add_double_value (b, op->nccl_ns);
      else
        json_builder_add_null_value (b);
      json_builder_set_member_name (b, "nccl_error");
      if (op->nccl_samples > 0)
        json_builder_add_double_value (b, op->nccl_error);
      else
        json_builder_add_null_value (b);
    }
  json_builder_end_object (b);
}

static void
add_trace (JsonBuilder *b, const char *member, const char *file, const char *source,
           const char *producer)
{
  json_builder_set_member_name (b, member);
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "file");
  json_builder_add_string_value (b, file);
  json_builder_set_member_name (b, "source");
  json_builder_add_string_value (b, source ? source : "?");
  json_builder_set_member_name (b, "producer");
  json_builder_add_string_value (b, producer ? producer : "");
  json_builder_end_object (b);
}

static void
add_count (JsonBuilder *b, const char *name, guint64 v)
{
  json_builder_set_member_name (b, name);
  json_builder_add_int_value (b, (gint64) MIN (v, (guint64) G_MAXINT64));
}

char *
sp_compare_to_json (const SpCompare *cmp, gsize top_n)
{
  gboolean nccl = sp_compare_has_nccl (cmp);
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  add_trace (b, "sim", cmp->sim_name, cmp->sim_source, cmp->sim_producer);
  add_trace (b, "measured", cmp->measured_name, cmp->measured_source, cmp->measured_producer);
  json_builder_set_member_name (b, "plan_digest");
  json_builder_add_string_value (b, cmp->digest);

  const SpCompareCounts *c = &cmp->counts;
  json_builder_set_member_name (b, "counts");
  json_builder_begin_object (b);
  add_count (b, "sim_rows", c->sim_rows);
  add_count (b, "measured_rows", c->measured_rows);
  add_count (b, "joined", c->joined);
  add_count (b, "only_sim", c->only_sim);
  add_count (b, "only_measured", c->only_measured);
  add_count (b, "excluded_status", c->excluded_status);
  add_count (b, "excluded_composite", c->excluded_composite);
  add_count (b, "excluded_one_rank", c->excluded_one_rank);
  add_count (b, "excluded_zero", c->excluded_zero);
  add_count (b, "samples", c->samples);
  if (nccl)
    add_count (b, "nccl_samples", c->nccl_samples);
  json_builder_end_object (b);

  json_builder_set_member_name (b, "stats");
  json_builder_begin_object (b);
  for (guint by = 0; by < SP_COMPARE_BY_N; by++)
    {
      GArray *a = cmp->stats[by];
      json_builder_set_member_name (b, sp_compare_by_name ((SpCompareBy) by));
      if (by == SP_COMPARE_BY_ALL)
        {
          add_stats (b, &g_array_index (a, SpCompareStats, 0), nccl);
          continue;
        }
      json_builder_begin_array (b);
      for (guint i = 0; i < a->len; i++)
        add_stats (b, &g_array_index (a, SpCompareStats, i), nccl);
      json_builder_end_array (b);
    }
  json_builder_end_object (b);

  gsize n_worst = 0;
  g_autofree const SpCompareOp **worst = sp_compare_worst (cmp, top_n, &n_worst);
  json_builder_set_member_name (b, "worst");
  json_builder_begin_array (b);
  for (gsize i = 0; i < n_worst; i++)
    add_op (b, worst[i], nccl);
  json_builder_end_array (b);

  json_builder_set_member_name (b, "ops");
  json_builder_begin_array (b);
  for (guint i = 0; i < cmp->ops->len; i++)
    add_op (b, &g_array_index (cmp->ops, SpCompareOp, i), nccl);
  json_builder_end_array (b);
  json_builder_end_object (b);

  g_autoptr (JsonNode) root = json_builder_get_root (b);
  char *text = sp_json_text (root, TRUE);
  char *out = g_strconcat (text, "\n", NULL);
  g_free (text);
  return out;
}
