/* tests/fuzz/fuzz-nccltests.c — the nccl-tests log importer
 * (sp_nccl_tests_parse), then for an accepted log its getters and its
 * synthetic plan (sp_nccl_tests_build_plan), as `trace import-nccl-tests`
 * does before writing the trace. */
#include "config.h"
#include "fuzz-common.h"
#include "shardplan/shardplan.h"
#include "shardplan/nccltests.h"

FUZZ_INIT_LOG_ONLY

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  GError *e = NULL;
  SpNcclTestsLog *log = sp_nccl_tests_parse ((const char *) data, (gssize) size, "fuzz.log", &e);
  if (!log)
    {
      fuzz_refused (e);
      return 0;
    }
  gsize n_ranks = 0, n_results = 0;
  (void) sp_nccl_tests_log_collective (log);
  (void) sp_nccl_tests_log_binary (log);
  (void) sp_nccl_tests_log_ranks (log, &n_ranks);
  (void) sp_nccl_tests_log_results (log, &n_results);
  (void) sp_nccl_tests_log_params (log);
  (void) sp_nccl_tests_log_version (log);
  (void) sp_nccl_tests_log_env (log);
  (void) sp_nccl_tests_log_warnings (log);
  if (!sp_nccl_tests_log_is_complete (log))
    g_assert (sp_nccl_tests_log_incomplete_reason (log) != NULL);
  guint32 world = sp_nccl_tests_log_n_ranks (log);
  /* the devices per node a user would give: all ranks on one node, or 8 */
  guint32 dpn = world % 8 == 0 ? 8 : world;
  SpPlan *plan = sp_nccl_tests_build_plan (log, dpn, &e);
  if (plan)
    {
      g_assert (sp_plan_n_ops (plan) == n_results);
      sp_plan_free (plan);
    }
  else
    g_clear_error (&e);
  sp_nccl_tests_log_free (log);
  return 0;
}
