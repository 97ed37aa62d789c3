/* tools/chakra-cmd.h — the Chakra steps that several subcommands share
 * (tools/cmd-chakra.c).  `shardplan chakra export|import` is the canonical
 * command; `plan --chakra PREFIX`, `trace export --format chakra` and
 * `trace import-chakra` run the same code.  Without protobuf-c each of
 * these says it was not built and returns SP_EXIT_FAILURE. */
#pragma once
#include "cli.h"
#include "shardplan/shardplan.h"

/* Add the files an export to PREFIX of `world` ranks writes (the group
 * file, the first and the last rank file: the others differ only in the
 * number) to `files` as outputs named after `option` ("-o/--output"). */
void sp_chakra_cmd_outputs (SpCliFiles *files, const char *option, const char *prefix,
                            guint32 world);

/* Write `plan` as PREFIX.<rank>.et + PREFIX.groups.json (sp_chakra_export;
 * `topo`, NULL allowed, gives kernels their modelled duration_micros).
 * Announces the file count first when W >= 64 or stderr is a terminal, then
 * progress and a summary line on stderr, unless `quiet`.  Returns the exit
 * status; errors printed as "shardplan COMMAND: …". */
int sp_chakra_cmd_write (const char *command, const SpPlan *plan, const SpTopo *topo,
                         const char *prefix, gboolean quiet);

/* `shardplan trace export --format chakra -o PREFIX TRACE`: the plan that
 * the trace carries, each node with the duration_micros the trace measured
 * or simulated for it on that rank (the mean over the timed iterations of
 * the rows with status ok; a kernel without rows gets the time the trace's
 * own topology models for it).  Checks the files itself.  `quiet` as in
 * sp_chakra_cmd_write().  Exit status. */
int sp_chakra_cmd_write_trace (const char *command, const char *trace_path, const char *prefix,
                               gboolean quiet);

/* `shardplan chakra import` and `shardplan trace import-chakra`; argv[0] is
 * the command's full name. */
int sp_chakra_cmd_import (int argc, char **argv);
