/* tests/fuzz/fuzz-fidelity.c — the fidelity benchmark's data-file reader
 * (bench/fidelity-data.c, sp_fid_load): a JSON array of datasets whose
 * clusters come as topology INI text or as datasheet blocks turned into
 * INI (sp_fid_datasheet_ini), each read by the topology reader.  Read
 * without simulating (the estimate target fuzzes the model); every row
 * accepted must carry a size of at least one byte and a finite positive
 * time, and every dataset a topology the reader accepted. */
#include "config.h"
#include "fuzz-common.h"
#include "fidelity-data.h"

#include <math.h>

FUZZ_INIT_LOG_ONLY

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  GError *e = NULL;
  GPtrArray *rows = g_ptr_array_new_with_free_func (sp_fid_row_free);
  GPtrArray *skipped = g_ptr_array_new_with_free_func (g_free);
  GString *inis = g_string_new (NULL);
  if (!sp_fid_load ("fuzz.json", (const char *) data, size, NULL, 0, rows, skipped, inis, &e))
    fuzz_refused (e);
  else
    for (guint i = 0; i < rows->len; i++)
      {
        const SpFidRow *r = rows->pdata[i];
        if (r->bytes < 1 || !isfinite (r->measured_us) || !(r->measured_us > 0) || r->nodes < 1
            || r->bytes > SP_FID_MAX_ROW_BYTES || r->measured_us < SP_FID_MIN_TIME_US
            || r->dataset == NULL || r->coll == NULL || r->transport == NULL)
          {
            fprintf (stderr, "fidelity: row %u of dataset %s accepted with bytes %" G_GUINT64_FORMAT
                     ", time %g µs, %u nodes\n", i, r->dataset ? r->dataset : "(none)", r->bytes,
                     r->measured_us, r->nodes);
            abort ();
          }
      }
  g_ptr_array_unref (rows);
  g_ptr_array_unref (skipped);
  g_string_free (inis, TRUE);
  return 0;
}
