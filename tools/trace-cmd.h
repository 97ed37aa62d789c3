/* tools/trace-cmd.h — pieces of `shardplan trace` shared between its files
 * (cmd-trace.c: dispatch and `show`; trace-export.c: `export`). */
#pragma once
#include "shardplan/trace.h"

#include <stdio.h>

/* `shardplan trace export`; argv[0] = "shardplan trace export". */
int sp_trace_cmd_export (int argc, char **argv);

/* Open a trace for subcommand `command` ("trace show"); on failure print
 * one line and return NULL (every failure to read the file is bad input:
 * exit SP_EXIT_USAGE). */
SpTrace *sp_trace_cmd_open (const char *command, const char *path);

/* "shard[1]", "world[0]", "none" for SP_TRACE_NO_GROUP, "group 12" when the
 * trace has no such group.  g_free. */
char *sp_trace_cmd_group_label (const SpTrace *trace, guint32 group_id);

/* Output written to a temporary file next to `path` and renamed by
 * sp_trace_out_commit(), or to stdout when path is NULL or "-". */
typedef struct {
  FILE *fp;
  char *path;
  char *tmp;
} SpTraceOut;

gboolean sp_trace_out_open (SpTraceOut *out, const char *path, GError **error);
gboolean sp_trace_out_commit (SpTraceOut *out, GError **error);
/* Remove the temporary file (no-op after commit). */
void sp_trace_out_discard (SpTraceOut *out);
