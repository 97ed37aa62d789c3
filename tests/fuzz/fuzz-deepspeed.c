/* tests/fuzz/fuzz-deepspeed.c — DeepSpeed configs
 * (sp_deepspeed_config_apply) applied to the default sharding options and
 * the default model preset. */
#include "config.h"
#include "fuzz-common.h"
#include "shardplan/shardplan.h"
#include "shardplan/workload.h"

static SpModel base_model;

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  fuzz_init_log ();
  if (!sp_model_preset (SP_MODEL_DEFAULT, &base_model, NULL))
    abort ();
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  GError *e = NULL;
  SpShardingOptions opts;
  sp_sharding_options_init (&opts);
  SpModel m = base_model;
  char **warnings = NULL;
  if (!sp_deepspeed_config_apply ((const char *) data, (gssize) size, "ds.json", &opts, &m,
                                  &warnings, &e))
    {
      g_assert (warnings == NULL);
      fuzz_refused (e);
      return 0;
    }
  g_free (sp_sharding_options_describe (&opts, 64));
  g_strfreev (warnings);
  return 0;
}
