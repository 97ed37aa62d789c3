/* The DeepSpeed config of a sharding configuration: what the sweep hands
 * the user, written so that sp_deepspeed_config_apply() reads it back
 * unchanged (shardplan/workload.h). */
#include "config.h"
#include "shardplan/workload.h"

#include <json-glib/json-glib.h>

static void
member_int (JsonBuilder *b, const char *key, gint64 v)
{
  json_builder_set_member_name (b, key);
  json_builder_add_int_value (b, v);
}

static void
member_bool (JsonBuilder *b, const char *key, gboolean v)
{
  json_builder_set_member_name (b, key);
  json_builder_add_boolean_value (b, v);
}

char *
sp_deepspeed_config_to_json (const SpShardingOptions *o, const SpModel *m, guint32 W)
{
  g_return_val_if_fail (o != NULL && m != NULL && W > 0, NULL);
  const guint32 S = o->shard_size ? o->shard_size : W;
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  member_int (b, "train_micro_batch_size_per_gpu", m->micro_batch);
  member_int (b, "gradient_accumulation_steps", m->grad_accum);
  json_builder_set_member_name (b, m->dtype == SP_DTYPE_FLOAT16 ? "fp16" : "bf16");
  json_builder_begin_object (b);
  member_bool (b, "enabled", TRUE);
  json_builder_end_object (b);
  json_builder_set_member_name (b, "zero_optimization");
  json_builder_begin_object (b);
  member_int (b, "stage", o->zero_stage);
  /* -1 is DeepSpeed's "MiCS off"; S = W flat is plain ZeRO-3 either way */
  member_int (b, "mics_shard_size", S == W && !o->hierarchical ? -1 : (gint64) S);
  member_bool (b, "mics_hierarchical_params_gather", o->hierarchical);
  member_bool (b, "zero_quantized_weights", o->quantized_weights);
  member_int (b, "zero_hpz_partition_size", MAX (o->hpz_partition_size, 1));
  member_bool (b, "zero_quantized_gradients", o->quantized_gradients);
  member_int (b, "reduce_bucket_size", (gint64) o->reduce_bucket_size);
  member_int (b, "allgather_bucket_size", (gint64) o->allgather_bucket_size);
  member_int (b, "stage3_prefetch_bucket_size", (gint64) o->prefetch_bucket_size);
  member_int (b, "stage3_param_persistence_threshold", (gint64) o->param_persistence_threshold);
  member_int (b, "stage3_max_reuse_distance", (gint64) o->max_reuse_distance);
  member_int (b, "stage3_max_live_parameters", (gint64) o->max_live_parameters);
  member_bool (b, "overlap_comm", o->overlap_comm);
  member_bool (b, "contiguous_gradients", o->contiguous_gradients);
  json_builder_end_object (b);
  json_builder_end_object (b);
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  g_autoptr (JsonNode) root = json_builder_get_root (b);
  json_generator_set_root (gen, root);
  json_generator_set_pretty (gen, TRUE);
  json_generator_set_indent (gen, 2);
  g_autofree char *text = json_generator_to_data (gen, NULL);
  return g_strconcat (text, "\n", NULL);
}
