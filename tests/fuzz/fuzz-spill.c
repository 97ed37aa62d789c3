/* tests/fuzz/fuzz-spill.c — the spill file reader behind `shardplan trace
 * recover` (exec/spill.c, no MPI): it reads a file, so each input is
 * written to a temporary file first. */
#include "config.h"
#include "fuzz-common.h"
#include "exec-internal.h"

FUZZ_INIT_LOG_ONLY

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  const char *path = fuzz_write_tmp (data, size, ".spill");
  GError *e = NULL;
  SpExecSpill *s = sp_exec_spill_read (path, &e);
  if (!s)
    {
      fuzz_refused (e);
      return 0;
    }
  sp_exec_spill_free (s);
  return 0;
}
