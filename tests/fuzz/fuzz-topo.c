/* tests/fuzz/fuzz-topo.c — the topology INI reader (sp_topo_load_data);
 * an accepted topology written back as INI must read back equal.  The
 * input is also read as an NCCL_ALGO and an NCCL_PROTO value in both modes
 * of sp_topo_nccl_parse (a run's /meta/env is read the exact way): what is
 * accepted must be written back (sp_topo_nccl_text) as a value that both
 * modes read back to the same masks, and a refusal leaves the masks alone.
 * It is also read as NCCL 2.12, 2.21, 2.24 and 2.28 read it
 * (sp_topo_nccl_parse_as: before 2.24 never refused, one mask for all
 * collectives), checked for what `run` passes to those versions, and read
 * as a version (sp_topo_nccl_version_code). */
#include "config.h"
#include "fuzz-common.h"
#include "shardplan/shardplan.h"

#include <string.h>

FUZZ_INIT_LOG_ONLY

static void
nccl_value (const char *text, gboolean proto, SpNcclParse mode)
{
  guint8 off[SP_TOPO_NCCL_FUNCS] = { 7, 7, 7, 7, 7 };
  GError *e = NULL;
  if (!sp_topo_nccl_parse ("fuzz", text, proto, mode, off, &e))
    {
      for (guint f = 0; f < SP_TOPO_NCCL_FUNCS; f++)
        if (off[f] != 7)
          {
            fprintf (stderr, "topo: a refused NCCL value changed the masks: '%s'\n", text);
            abort ();
          }
      fuzz_refused (e);
      return;
    }
  char *back = sp_topo_nccl_text (off, proto);
  for (SpNcclParse m = SP_NCCL_EXACT; back != NULL && m <= SP_NCCL_STRICT; m++)
    {
      guint8 again[SP_TOPO_NCCL_FUNCS];
      if (!sp_topo_nccl_parse ("fuzz (written back)", back, proto, m, again, &e)
          || memcmp (off, again, sizeof off) != 0)
        {
          fprintf (stderr, "topo: NCCL value '%s' written back as '%s' does not read back (mode %d)%s%s\n",
                   text, back, m, e ? ": " : "", e ? e->message : "");
          abort ();
        }
    }
  g_free (back);
}

/* As the NCCL of version code `version` read it: before 2.24 never
 * refused, one mask for all five collectives; a refusal leaves the masks
 * alone; what `run` refuses on that version holds ';' or ':'. */
static void
nccl_value_as (const char *text, gboolean proto, int version)
{
  guint8 off[SP_TOPO_NCCL_FUNCS] = { 7, 7, 7, 7, 7 };
  GError *e = NULL;
  gboolean ok = sp_topo_nccl_parse_as ("fuzz", text, proto, version, off, &e);
  gboolean legacy = version < SP_TOPO_NCCL_PER_COLL_VERSION;
  for (guint f = 0; f < SP_TOPO_NCCL_FUNCS; f++)
    if ((legacy && (!ok || off[f] != off[0])) || (!ok && off[f] != 7))
      {
        fprintf (stderr, "topo: NCCL value '%s' as version %d: %s\n", text, version,
                 ok ? "masks differ between collectives" : "refused or masks changed");
        abort ();
      }
  if (!ok)
    fuzz_refused (e);
  e = NULL;
  if (!sp_topo_nccl_check_version (proto ? "NCCL_PROTO" : "NCCL_ALGO", text, proto, version, &e))
    {
      if (!legacy || strpbrk (text, ";:") == NULL)
        {
          fprintf (stderr, "topo: '%s' refused for NCCL %d: %s\n", text, version, e->message);
          abort ();
        }
      fuzz_refused (e);
    }
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  char *text = g_strndup ((const char *) data, size);
  for (guint p = 0; p < 2; p++)
    {
      for (SpNcclParse m = SP_NCCL_EXACT; m <= SP_NCCL_STRICT; m++)
        nccl_value (text, p, m);
      static const int versions[] = { 21207, 22105, 22400, 22809 };
      for (guint v = 0; v < G_N_ELEMENTS (versions); v++)
        nccl_value_as (text, p, versions[v]);
    }
  int code = sp_topo_nccl_version_code (text);
  g_assert (code == 0 || (code >= 20000 && code <= 999999));
  g_free (text);

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
