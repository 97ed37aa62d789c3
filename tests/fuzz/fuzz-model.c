/* tests/fuzz/fuzz-model.c — the model JSON reader (sp_model_load_data,
 * json-glib behind a depth pre-scan); an accepted model is validated,
 * counted and written back, and must read back equal. */
#include "config.h"
#include "fuzz-common.h"
#include "shardplan/shardplan.h"
#include "shardplan/workload.h"

FUZZ_INIT_LOG_ONLY

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  GError *e = NULL;
  SpModel m;
  if (!sp_model_load_data ((const char *) data, (gssize) size, "fuzz.json", &m, &e))
    {
      fuzz_refused (e);
      return 0;
    }
  if (sp_model_validate (&m, &e))
    (void) sp_model_n_params (&m);
  else
    g_clear_error (&e);
  char *json = sp_model_to_json (&m);
  SpModel again;
  if (!sp_model_load_data (json, -1, "fuzz.json (written back)", &again, &e))
    {
      fprintf (stderr, "model: the JSON of an accepted model is refused: %s\n--\n%s\n",
               e->message, json);
      abort ();
    }
  g_free (json);
  return 0;
}
