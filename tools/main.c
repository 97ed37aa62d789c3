/* shardplan — the command.  Dispatches to one subcommand per file. */
#include "config.h"
#include "cli.h"
#include "commands.h"
#include "shardplan/shardplan.h"

#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const SpCommand commands[] = {
  { "info", "version, build configuration, backends, kernels, presets", sp_cmd_info },
  { "groups", "the process-group families of a layout (DeepSpeed-exact)", sp_cmd_groups },
  { "estimate", "cost of one collective on a topology (the quick question)", sp_cmd_estimate },
  { "plan", "build the plan of one training step from a workload and a topology", sp_cmd_plan },
  { "sim", "simulate a plan on a topology: simulated trace and summary", sp_cmd_sim },
  { "sweep", "shard sizes x hierarchical x node counts: step time, memory, recommendation", sp_cmd_sweep },
  { "run", "execute a plan (under mpirun or srun) and record a measured trace", sp_cmd_run },
  { "trace", "inspect and export traces (summary, CSV, Chrome/Perfetto JSON)", sp_cmd_trace },
  { "compare", "simulated vs measured traces: per-op and aggregate error, plot", sp_cmd_compare },
  { "chakra", "plans as Chakra execution traces for ASTRA-sim, and Chakra traces as plans", sp_cmd_chakra },
  { "calibrate", "fit the simulator's link and protocol parameters to measured traces", sp_cmd_calibrate },
};

static void
usage (FILE *out)
{
  fprintf (out, "Usage: shardplan <subcommand> [options]\n\n"
                "Plan, simulate and run the collectives of sharded training (ZeRO-3, MiCS,\n"
                "ZeRO++, expert parallelism).\n\nSubcommands:\n");
  for (gsize i = 0; i < G_N_ELEMENTS (commands); i++)
    fprintf (out, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf (out, "\n'shardplan <subcommand> --help' describes each one.\n");
}

/* At exit: a failed write to stdout (fputs and printf leave only the
 * stream's error flag) turns success into exit status 1, with a message
 * (as coreutils' close_stdout). */
static int command_status = SP_EXIT_OK; /* a failed command has said why */

static void
close_stdout_status (int status)
{
  if (status == SP_EXIT_OK && command_status == SP_EXIT_OK && !sp_cli_stdout_flushed ())
    {
      const char *prog = g_get_prgname ();
      fprintf (stderr, "%s: cannot write to standard output\n", prog ? prog : "shardplan");
      _exit (SP_EXIT_FAILURE);
    }
}

#ifdef __GLIBC__
/* on_exit: the status exit() was given too (`run` ends its ranks with
 * exit (status), past main: a failed run keeps its own status) */
static void
close_stdout_on_exit (int status, void *data)
{
  (void) data;
  close_stdout_status (status);
}
#else
static void
close_stdout (void)
{
  close_stdout_status (SP_EXIT_OK);
}
#endif

int
main (int argc, char **argv)
{
  setlocale (LC_ALL, "");
  setlocale (LC_NUMERIC, "C"); /* numbers in JSON/CSV/INI always use '.' */
  /* Ctrl-C, SIGTERM, SIGHUP and SIGPIPE remove the temporary file of an output
   * being written (shardplan/file.h). */
  sp_file_cleanup_on_signals ();
  /* What was printed must have arrived (a full disk, a closed pipe), on
   * every way out, GOption's exit after --help included. */
#ifdef __GLIBC__
  on_exit (close_stdout_on_exit, NULL);
#else
  atexit (close_stdout);
#endif
  if (argc < 2)
    {
      usage (stderr);
      return SP_EXIT_USAGE;
    }
  const char *name = argv[1];
  if (strcmp (name, "--help") == 0 || strcmp (name, "-h") == 0 || strcmp (name, "help") == 0)
    {
      usage (stdout);
      return SP_EXIT_OK;
    }
  if (strcmp (name, "--version") == 0)
    {
      printf ("shardplan %s\n", sp_version ());
      return SP_EXIT_OK;
    }
  for (gsize i = 0; i < G_N_ELEMENTS (commands); i++)
    if (strcmp (name, commands[i].name) == 0)
      {
        g_autofree char *prog = g_strdup_printf ("shardplan %s", name);
        g_set_prgname (prog);
        argv[1] = prog;
        command_status = commands[i].main (argc - 1, argv + 1);
        return command_status;
      }
  const char *names[G_N_ELEMENTS (commands)];
  for (gsize i = 0; i < G_N_ELEMENTS (commands); i++)
    names[i] = commands[i].name;
  g_autofree char *hint = sp_did_you_mean (name, names, G_N_ELEMENTS (names));
  fprintf (stderr, "shardplan: unknown subcommand '%s'%s (see 'shardplan --help')\n", name, hint);
  return SP_EXIT_USAGE;
}
