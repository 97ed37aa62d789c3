/* `shardplan trace recover OUTPUT.rank*.spill -o partial.h5 [--plan P]`:
 * a partial trace from the spill files a failed `shardplan run` left —
 * the way back to what was measured when rank 0 itself died (otherwise
 * rank 0 writes the partial trace during the run).  The work is in
 * exec/recover.c (built into every shardplan, with or without MPI). */
#include "config.h"
#include "cli.h"
#include "commands.h"
#include "exec-internal.h"

#define CMD "trace recover"

int
sp_cmd_trace_recover (int argc, char **argv)
{
  g_autofree char *output = NULL, *plan = NULL;
  GOptionEntry entries[] = {
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "partial trace to write (required)",
      "FILE.h5" },
    { "plan", 'p', 0, G_OPTION_ARG_FILENAME, &plan,
      "the run's plan instead of the copy in the spill files (must have the same digest)",
      "PLAN.json" },
    { NULL },
  };
  int status = SP_EXIT_OK;
  if (!sp_cli_parse (CMD, "SPILL…", "Rebuild a partial trace from the spill files of a failed run.",
                     "Each rank of 'shardplan run -o OUTPUT' appends its rows to OUTPUT.rank<R>.spill\n"
                     "while it runs; after a complete run the files are removed.  When rank 0 died\n"
                     "(no trace was written), give the files left, of any subset of the ranks:\n"
                     "the trace has complete = 0 and the reason names the ranks recovered and\n"
                     "missing.  Times are on rank 0's clock (each rank's recorded offset), from the\n"
                     "start of the first timed iteration.  Exit 2 (nothing written) for a file that\n"
                     "is not a spill file, of another build's row layout, damaged, or of another run.",
                     entries, &argc, &argv, &status))
    return status;
  if (argc < 2)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "expected one or more spill files "
                        "(see 'shardplan " CMD " --help')");
  if (output == NULL)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "-o FILE.h5 is required");
  g_autoptr (SpCliFiles) files = sp_cli_files_new (CMD);
  sp_cli_files_inputs (files, "spill file", argc - 1, argv + 1);
  sp_cli_files_input (files, "--plan", plan);
  sp_cli_files_output (files, "-o/--output", output);
  if (!sp_cli_files_check (files))
    return SP_EXIT_USAGE;
  guint64 rows = 0;
  g_auto (GStrv) warnings = NULL;
  GError *error = NULL;
  if (!sp_exec_spill_recover ((const char *const *) argv + 1, (gsize) argc - 1, plan, output,
                              &rows, &warnings, &error))
    return sp_cli_error (CMD, error);
  for (char **w = warnings; w && *w; w++)
    fprintf (stderr, "shardplan " CMD ": warning: %s\n", *w);
  printf ("%s: partial trace of %" G_GUINT64_FORMAT " %s from %d spill file%s\n", output, rows,
          sp_cli_plural (rows, "row", "rows"), argc - 1, argc == 2 ? "" : "s");
  fflush (stdout);
  sp_cli_wrote (CMD, output, "partial trace, %" G_GUINT64_FORMAT " %s", rows,
                sp_cli_plural (rows, "row", "rows"));
  return SP_EXIT_OK;
}
