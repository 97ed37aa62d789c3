#include "config.h"
#include "chakra/chakra.h"
SpPlan *
sp_chakra_import (const char *prefix, const SpTopo *topo, SpChakraImportStats *out_stats,
                  GError **error)
{
  g_set_error (error, SP_ERROR, SP_ERROR_UNSUPPORTED, "not yet");
  return NULL;
}
