/* The parsed nccl-tests log's accessors (shardplan/nccltests.h). */
#include "config.h"
#include "nccltests-private.h"

void
sp_nccl_tests_log_free (SpNcclTestsLog *log)
{
  if (log == NULL)
    return;
  g_free (log->source_name);
  g_array_unref (log->results);
  g_array_unref (log->ranks);
  g_ptr_array_unref (log->env);
  g_ptr_array_unref (log->warnings);
  g_free (log->incomplete_reason);
  g_string_chunk_free (log->strings);
  g_free (log);
}

SpColl
sp_nccl_tests_log_collective (const SpNcclTestsLog *log)
{
  return log->coll;
}

const char *
sp_nccl_tests_log_binary (const SpNcclTestsLog *log)
{
  return log->binary;
}

guint32
sp_nccl_tests_log_n_ranks (const SpNcclTestsLog *log)
{
  return log->n_ranks;
}

const SpNcclTestsRank *
sp_nccl_tests_log_ranks (const SpNcclTestsLog *log, gsize *out_n)
{
  *out_n = log->ranks->len;
  return (const SpNcclTestsRank *) (void *) log->ranks->data;
}

const SpNcclTestsResult *
sp_nccl_tests_log_results (const SpNcclTestsLog *log, gsize *out_n)
{
  *out_n = log->results->len;
  return (const SpNcclTestsResult *) (void *) log->results->data;
}

const SpNcclTestsParams *
sp_nccl_tests_log_params (const SpNcclTestsLog *log)
{
  return &log->params;
}

const char *
sp_nccl_tests_log_version (const SpNcclTestsLog *log)
{
  return log->version;
}

const char *
sp_nccl_tests_log_nccl_version (const SpNcclTestsLog *log)
{
  return log->nccl_version;
}

const char *const *
sp_nccl_tests_log_env (const SpNcclTestsLog *log)
{
  return (const char *const *) log->env->pdata;
}

gboolean
sp_nccl_tests_log_is_complete (const SpNcclTestsLog *log)
{
  return log->complete;
}

const char *
sp_nccl_tests_log_incomplete_reason (const SpNcclTestsLog *log)
{
  return log->incomplete_reason;
}

const char *const *
sp_nccl_tests_log_warnings (const SpNcclTestsLog *log)
{
  return (const char *const *) log->warnings->pdata;
}
