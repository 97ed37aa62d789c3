/* tests/fuzz/fuzz-topo.c — the topology INI reader (sp_topo_load_data);
 * an accepted topology written back as INI must read back equal. */
#include "config.h"
#include "fuzz-common.h"
#include "shardplan/shardplan.h"

FUZZ_INIT_LOG_ONLY

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  GError *e = NULL;
  SpTopo *topo = sp_topo_load_data ((const char *) data, (gssize) size, "fuzz.ini", &e);
  if (!topo)
    {
      fuzz_refused (e);
      return 0;
    }
  guint32 world = sp_topo_world_size (topo);
  g_assert (world >= 1);
  guint32 node = 0, local = 0;
  sp_topo_rank_location (topo, world - 1, &node, &local);
  char *ini = sp_topo_to_ini (topo);
  SpTopo *again = sp_topo_load_data (ini, -1, "fuzz.ini (written back)", &e);
  if (!again)
    {
      fprintf (stderr, "topo: the INI of an accepted topology is refused: %s\n--\n%s--\n",
               e->message, ini);
      abort ();
    }
  if (!sp_topo_spec_equal (sp_topo_spec (topo), sp_topo_spec (again)))
    {
      fprintf (stderr, "topo: the INI of an accepted topology reads back different:\n%s", ini);
      abort ();
    }
  g_free (ini);
  sp_topo_free (again);
  sp_topo_free (topo);
  return 0;
}
