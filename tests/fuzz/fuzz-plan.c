/* tests/fuzz/fuzz-plan.c — the plan reader (sp_plan_from_json), then, for
 * a plan it accepts, the writer: the canonical JSON must read back to an
 * equal plan with the same digest. */
#include "config.h"
#include "fuzz-common.h"
#include "shardplan/shardplan.h"

FUZZ_INIT_LOG_ONLY

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  GError *e = NULL;
  SpPlan *plan = sp_plan_from_json ((const char *) data, (gssize) size, 0, &e);
  if (!plan)
    {
      fuzz_refused (e);
      return 0;
    }
  char *json = sp_plan_to_json (plan);
  SpPlan *again = sp_plan_from_json (json, -1, sp_plan_world_size (plan), &e);
  if (!again)
    {
      fprintf (stderr, "plan: the canonical JSON of an accepted plan is refused: %s\n",
               e->message);
      abort ();
    }
  char *d1 = sp_plan_digest (plan), *d2 = sp_plan_digest (again);
  if (!sp_plan_equal (plan, again) || strcmp (d1, d2) != 0)
    {
      fprintf (stderr, "plan: the canonical JSON reads back to another plan\n");
      abort ();
    }
  g_free (d1);
  g_free (d2);
  g_free (json);
  sp_plan_free (again);
  sp_plan_free (plan);
  return 0;
}
