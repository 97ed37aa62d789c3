/* shardplan run — execute a plan under mpirun or srun and write the
 * measured trace (exec/, shardplan/exec.h).  One process per rank; every
 * rank parses the same options.  Without MPI in the build the subcommand
 * still exists and says so (exit 2), so scripts get a clear message rather
 * than "unknown subcommand". */
#include "config.h"
#include "cli.h"
#include "commands.h"
#include "progress.h"
#include "shardplan/shardplan.h"

#ifdef HAVE_MPI
#include "shardplan/exec.h"
#endif

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

/* The rank the launcher gave this process (before MPI is initialised), or
 * -1.  Usage errors are printed by rank 0 only, not once per rank. */
static long
launcher_rank (void)
{
  static const char *const vars[] = { "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID" };
  for (gsize i = 0; i < G_N_ELEMENTS (vars); i++)
    {
      const char *v = g_getenv (vars[i]);
      if (v && *v)
        return strtol (v, NULL, 10);
    }
  return -1;
}

static const char *description =
  "Runs every op of the plan on this process's rank (start one process per rank with\n"
  "mpirun -np N or srun -n N; N must equal the plan's world size), checks every op's\n"
  "result against its expected value (like nccl-tests' #wrong) and writes one HDF5 trace\n"
  "from rank 0 (schema: see 'shardplan trace --help').\n"
  "\n"
  "  --backend auto|nccl|mpi  auto: NCCL when it is built in and every rank has a GPU,\n"
  "                           else MPI on CPU buffers.\n"
  "  --mode isolated|replay   isolated: one op at a time with a barrier between ops\n"
  "                           (comparable with nccl-tests); replay: plan order with\n"
  "                           dependencies and streams, several ops in flight.\n"
  "  --timeout SEC            per-op deadline; a missed one fails the run (default 300).\n"
  "  --check after|every|none after (default, as nccl-tests): the timed iterations run\n"
  "                           on inputs filled once and are not checked; one extra\n"
  "                           untimed pass on fresh inputs then checks every op (its\n"
  "                           rows get the CHECKED flag).  every: refill and check\n"
  "                           around every op of every iteration (outside the timing,\n"
  "                           but the next op then starts with cold caches).  none:\n"
  "                           no check.  --no-check is --check none.\n"
  "  --deepspeed-compat       qgZ returns D x the mean, as DeepSpeed's code does;\n"
  "                           the default is the true mean.\n"
  "\n"
  "On a terminal, rank 0 shows the progress of a run that takes more than a second\n"
  "on stderr (op steps of every warm-up, timed and check pass, counted per op in\n"
  "isolated mode and per pass in replay, never inside a timed step; --quiet:\n"
  "never, and no closing line).\n"
  "\n"
  "On a failure (timeout, backend error, wrong result) every rank exits non-zero and\n"
  "rank 0 writes a partial trace (attribute complete = 0 with the reason).\n"
  "Exit status: 0 ok, 1 the run failed, 2 bad input (nothing written).";

#ifdef HAVE_MPI
/* TRUE when this process's parent — the launcher, when mpirun starts the
 * rank itself (Open MPI does for the ranks of its own host) — has a
 * terminal as its stderr.  The rank's stderr is then a pipe that the
 * launcher copies there, so the person at that terminal sees what rank 0
 * draws.  Linux (/proc); FALSE elsewhere, and under srun (the parent is
 * slurmstepd) or a remote rank 0. */
static gboolean
launcher_stderr_is_tty (void)
{
  g_autofree char *fd2 = g_strdup_printf ("/proc/%ld/fd/2", (long) getppid ());
  g_autofree char *target = g_file_read_link (fd2, NULL);
  return target != NULL && (g_str_has_prefix (target, "/dev/pts/")
                            || g_str_has_prefix (target, "/dev/tty"));
}

/* SpExecOptions.progress: the executor's count into rank 0's line. */
static void
run_progress (guint64 done, guint64 total, gpointer data)
{
  sp_progress_set_total (data, total);
  sp_progress_set (data, done);
}

static void
run_progress_end (gpointer data)
{
  sp_progress_abandon (data);
}
#endif

/* Put stderr back once the options are checked (saved < 0: untouched). */
static void
restore_stderr (int saved)
{
  if (saved >= 0)
    {
      dup2 (saved, 2);
      close (saved);
    }
}

static int
run_main (int argc, char **argv, int saved_stderr)
{
  const char *cmd = "run";
  g_autofree char *plan = NULL, *topology = NULL, *output = NULL, *backend = NULL, *mode = NULL;
  g_autofree char *iters = NULL, *warmup = NULL, *timeout = NULL, *check = NULL;
  gboolean no_check = FALSE, compat = FALSE, quiet = FALSE;
  GOptionEntry entries[] = {
    { "plan", 'p', 0, G_OPTION_ARG_FILENAME, &plan, "Plan JSON (required)", "FILE" },
    { "topology", 't', 0, G_OPTION_ARG_FILENAME, &topology,
      "Topology INI or preset (models compute ops in replay mode)", "FILE|PRESET" },
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Trace to write (required)", "FILE" },
    { "backend", 0, 0, G_OPTION_ARG_STRING, &backend, "auto, nccl or mpi (default auto)", "NAME" },
    { "mode", 0, 0, G_OPTION_ARG_STRING, &mode, "isolated or replay (default isolated)", "MODE" },
    { "iters", 0, 0, G_OPTION_ARG_STRING, &iters, "Timed iterations (default 20)", "K" },
    { "warmup", 0, 0, G_OPTION_ARG_STRING, &warmup, "Warm-up iterations (default 5)", "W" },
    { "timeout", 0, 0, G_OPTION_ARG_STRING, &timeout, "Per-op deadline in seconds (default 300)", "SEC" },
    { "check", 0, 0, G_OPTION_ARG_STRING, &check,
      "When results are verified: after, every or none (default after)", "WHEN" },
    { "no-check", 0, 0, G_OPTION_ARG_NONE, &no_check, "Do not verify results (= --check none)", NULL },
    { "deepspeed-compat", 0, 0, G_OPTION_ARG_NONE, &compat,
      "qgZ returns DeepSpeed's D x mean instead of the mean", NULL },
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, SP_PROGRESS_QUIET_HELP, NULL },
    { NULL },
  };
  int status;
  if (!sp_cli_parse (cmd, "", "execute a plan (under mpirun or srun) and record a measured trace",
                     description, entries, &argc, &argv, &status))
    return status;
  if (argc > 1)
    return sp_cli_fail (cmd, SP_EXIT_USAGE, "unexpected argument '%s'", argv[1]);
#ifndef HAVE_MPI
  (void) no_check;
  (void) check;
  (void) compat;
  (void) quiet;
  (void) saved_stderr;
  return sp_cli_fail (cmd, SP_EXIT_USAGE, "this build has no MPI (configure found no working mpicc): "
                      "the executor needs MPI to start its ranks");
#else
  if (!plan)
    return sp_cli_fail (cmd, SP_EXIT_USAGE, "--plan FILE is required");
  if (!output)
    return sp_cli_fail (cmd, SP_EXIT_USAGE, "-o/--output FILE is required");
  g_autoptr (SpCliFiles) files = sp_cli_files_new (cmd);
  sp_cli_files_input (files, "--plan", plan);
  sp_cli_files_input (files, "--topology", topology);
  sp_cli_files_output (files, "-o/--output", output);
  /* each rank's spill file, OUTPUT.rank<r>.spill (exec.c), opened for
   * writing as the run starts: no input may be one */
  g_autofree char *spill_head = g_strconcat (output, ".rank", NULL);
  sp_cli_files_output_family (files, "-o/--output (spill files)", spill_head, ".spill",
                              (guint64) G_MAXUINT32 + 1);
  if (!sp_cli_files_check (files))
    return SP_EXIT_USAGE;
  SpExecOptions o;
  sp_exec_options_init (&o);
  o.plan_path = plan;
  o.topology = topology;
  o.output = output;
  o.deepspeed_compat = compat;
  if (backend && !sp_exec_backend_from_name (backend, &o.backend))
    return sp_cli_fail (cmd, SP_EXIT_USAGE, "--backend '%s' is not one of auto, nccl, mpi", backend);
  if (mode && !sp_exec_mode_from_name (mode, &o.mode))
    return sp_cli_fail (cmd, SP_EXIT_USAGE, "--mode '%s' is not one of isolated, replay", mode);
  if (check && !sp_exec_check_from_name (check, &o.check))
    return sp_cli_fail (cmd, SP_EXIT_USAGE, "--check '%s' is not one of after, every, none", check);
  if (no_check && check && o.check != SP_EXEC_CHECK_NONE)
    return sp_cli_fail (cmd, SP_EXIT_USAGE, "--no-check contradicts --check %s", check);
  if (no_check)
    o.check = SP_EXEC_CHECK_NONE;
  if (!sp_cli_u32 (cmd, "--iters", iters, 1, 1000000, &o.iters) ||
      !sp_cli_u32 (cmd, "--warmup", warmup, 0, 1000000, &o.warmup))
    return SP_EXIT_USAGE;
  if (timeout)
    {
      GError *e = NULL;
      if (!sp_parse_double ("--timeout", timeout, 0.001, 1e6, &o.timeout_s, &e))
        return sp_cli_error (cmd, e);
    }
  restore_stderr (saved_stderr);
  /* Rank 0 only (as the launcher numbers it; -1: no launcher, a
   * singleton): the others never draw, and where nothing can be drawn the
   * executor gets no callback at all. */
  SpProgress *progress = NULL;
  if (launcher_rank () <= 0)
    progress = sp_progress_new_full (cmd, 0, "op steps", quiet,
                                     sp_cli_stderr_is_tty ()
                                     || (launcher_rank () == 0 && launcher_stderr_is_tty ()));
  if (progress != NULL && sp_progress_active (progress))
    {
      o.progress = run_progress;
      o.progress_end = run_progress_end;
      o.progress_data = progress;
    }
  SpExecResult res;
  GError *error = NULL;
  gboolean ok = sp_exec_run (&o, &res, &error);
  sp_progress_free (progress);
  if (!ok)
    {
      if (res.report_error && error)
        fprintf (stderr, "shardplan %s: %s\n", cmd, error->message);
      g_clear_error (&error);
    }
  else if (res.rank == 0 && !quiet)
    sp_cli_wrote (cmd, output, "measured trace, %" G_GUINT64_FORMAT " %s, %s backend", res.rows,
                  sp_cli_plural (res.rows, "row", "rows"), res.backend ? res.backend : "?");
  sp_exec_exit (&res);
#endif
}

int
sp_cmd_run (int argc, char **argv)
{
  int saved = -1;
  if (launcher_rank () > 0)
    {
      int null = open ("/dev/null", O_WRONLY);
      saved = dup (2);
      if (null >= 0)
        {
          dup2 (null, 2);
          close (null);
        }
    }
  int status = run_main (argc, argv, saved);
  restore_stderr (saved);
  /* A usage error is found before MPI exists: give rank 0 time to print
   * its line before this rank's exit makes the launcher kill the job. */
  if (saved >= 0 && status != SP_EXIT_OK)
    g_usleep (2 * G_USEC_PER_SEC);
  return status;
}
