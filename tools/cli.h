/* tools/cli.h — what every `shardplan` subcommand shares: the dispatch
 * table's entry type, exit codes, output formats and error reporting.
 *
 * Exit codes: 0 success; 1 the work failed (I/O, simulation check, backend);
 * 2 usage or bad input (unknown option, bad value, rejected configuration);
 * the message is one line on stderr: "shardplan <cmd>: <message>".
 */
#pragma once
#include <glib.h>
#include <stdio.h>
#include <json-glib/json-glib.h>
#include "shardplan/sim.h"

G_BEGIN_DECLS

enum {
  SP_EXIT_OK = 0,
  SP_EXIT_FAILURE = 1,
  SP_EXIT_USAGE = 2,
};

typedef enum {
  SP_FORMAT_TEXT = 0,
  SP_FORMAT_JSON,
  SP_FORMAT_CSV,
} SpFormat;

/* A subcommand: `main` gets argv with argv[0] = "shardplan <name>". */
typedef struct {
  const char *name;
  const char *summary;
  int (*main) (int argc, char **argv);
} SpCommand;

/* Parse options with GLib (help on --help, exit 2 with one line on a usage
 * error).  `summary` is the one-line description, `params` e.g. "FILE".
 * Returns FALSE after printing when the caller should exit with *out_status. */
gboolean sp_cli_parse (const char *command, const char *params, const char *summary,
                       const char *description, GOptionEntry *entries, int *argc,
                       char ***argv, int *out_status);

/* Parse --format: "text", "json" or "csv" among `allowed` (a bitmask of
 * 1 << SpFormat); NULL means text.  Reports the error itself. */
gboolean sp_cli_format (const char *command, const char *text, guint allowed, SpFormat *out_format);

/* Print "shardplan <command>: <message>" on stderr and return `status`.
 * Bad input (SP_ERROR_INVALID_*) should use SP_EXIT_USAGE. */
int sp_cli_fail (const char *command, int status, const char *fmt, ...) G_GNUC_PRINTF (3, 4);

/* --contention TEXT of `sim` and `sweep`: a name of
 * sp_sim_contention_from_name ("default" excluded), which with the analytic
 * model must be none; NULL leaves SP_SIM_CONTENTION_DEFAULT.  FALSE after
 * a usage line (sp_cli_fail, exit status SP_EXIT_USAGE). */
gboolean sp_cli_contention (const char *command, const char *text, SpSimModel model,
                            SpSimContention *out);

/* Report a GError: exit 2 for SP_ERROR_INVALID_* and SP_ERROR_UNSUPPORTED
 * and G_OPTION_ERROR, 1 otherwise.  Frees the error. */
int sp_cli_error (const char *command, GError *error);

/* sp_cli_error for the error of reading an input file: one that cannot be
 * read (missing, a directory, unreadable: SP_ERROR_IO) is bad input too,
 * exit 2, as the README promises. */
int sp_cli_input_error (const char *command, GError *error);

/* Parse a required or optional unsigned option given as a string (so that
 * "-5", "1e3" and "99999999999" are reported, not wrapped).  NULL text
 * leaves *out_value unchanged and succeeds.  Reports the error itself. */
gboolean sp_cli_u32 (const char *command, const char *option, const char *text,
                     guint32 min, guint32 max, guint32 *out_value);

/* TRUE when stderr is a terminal (progress bars go there only then). */
gboolean sp_cli_stderr_is_tty (void);

/* Write `contents` to `path` atomically (temporary name, then rename), or to
 * stdout when path is NULL or "-". */
gboolean sp_cli_write_output (const char *path, const char *contents, gsize length,
                              GError **error);

/* TRUE when everything written to stdout so far reached it: flushed, and
 * no write failed (a failed fputs / printf leaves only the error flag). */
gboolean sp_cli_stdout_flushed (void);

/* The files a subcommand reads and writes (tools/cli-files.c), checked by
 * sp_cli_files_check() before any work:
 *   - no output is the same file as an input or as another output (same
 *     device and inode when it exists, hard and symbolic links included;
 *     the same resolved path otherwise);
 *   - every output's directory exists and is writable, and the output is
 *     not a directory or another kind of non-regular file.
 * `option` names the file in messages ("--plan", "-o/--output", "trace
 * argument"); NULL, "" and "-" (standard input/output) are not files and
 * are skipped; an input that does not exist is not compared (the command
 * reports it, and it may be a preset's name).  Every subcommand that
 * writes a file lists all of its inputs and outputs here. */
typedef struct SpCliFiles SpCliFiles;
SpCliFiles *sp_cli_files_new (const char *command);
void sp_cli_files_free (SpCliFiles *files);
void sp_cli_files_input (SpCliFiles *files, const char *option, const char *path);
/* `n` positional inputs, each labelled `option`. */
void sp_cli_files_inputs (SpCliFiles *files, const char *option, int n, char **paths);
void sp_cli_files_output (SpCliFiles *files, const char *option, const char *path);
/* Outputs HEAD<r>TAIL for every r < count (a Chakra trace's rank files
 * PREFIX.<r>.et, a run's spill files OUTPUT.rank<r>.spill): the first and
 * the last as outputs above, and every member by name against the other
 * files: an output by where writing it lands (its directory resolved; an
 * atomic rename replaces a symbolic link, not its target), an input by
 * what reading it reads (its own link followed too).  count above
 * G_MAXUINT32: any rank (the world size is not known yet). */
void sp_cli_files_output_family (SpCliFiles *files, const char *option, const char *head,
                                 const char *tail, guint64 count);
/* TRUE when every rule holds; else one line "shardplan <cmd>: …" naming
 * both files and their options is printed and the caller exits
 * SP_EXIT_USAGE. */
gboolean sp_cli_files_check (const SpCliFiles *files);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (SpCliFiles, sp_cli_files_free)

/* A note on stderr (once per process) when the topology's GPU model is
 * not one the simulator knows by name (sp_topo_gpu_model_known): it is then
 * costed as an A100.  Nothing for NULL. */
void sp_cli_topo_note (const char *command, const SpTopo *topo);
/* sp_topo_open, then sp_cli_topo_note. */
SpTopo *sp_cli_topo_open (const char *command, const char *file_or_preset, guint32 nodes,
                          GError **error);

/* Records in `plan`'s meta the topology it was made for: "topology" =
 * "NAME x N nodes" and "topology_sha256" = the SHA-256 of
 * sp_topo_to_ini (topo), so that a plan made on a file is never simulated
 * on a preset that only shares its name (sp_cli_plan_topology). */
void sp_cli_plan_record_topology (SpPlan *plan, const SpTopo *topo);

/* The topology to simulate `plan` (read from `plan_path`) on: `topology`
 * (file or preset) with `nodes` nodes, or, when `topology` is NULL, the
 * preset and node count the plan records (sp_cli_plan_record_topology;
 * `nodes`, when not 0, still wins) — refused when the plan's recorded
 * digest is not that preset's (the plan was made on a file of the same
 * name, or on another version's preset), with a warning when the plan
 * records no digest.  With `nodes` 0 a given topology of the name the plan
 * records takes the node count it records.  A topology whose world
 * size is not the plan's is refused naming the --nodes that would match.
 * Reports every error itself (one line; exit status in *out_status) and
 * returns NULL then.  Free with sp_topo_free(). */
SpTopo *sp_cli_plan_topology (const char *command, const char *plan_path, const SpPlan *plan,
                              const char *topology, guint32 nodes, int *out_status);

/* The closing line of a command that wrote the file `path`, on stderr:
 * "shardplan <command>: wrote PATH (WHAT, SIZE)", WHAT from `fmt` (what it
 * holds: "1,234 rows", "plan of 102 ops"), SIZE the file's size in IEC
 * units ("1.2 MiB").  Nothing for NULL or "-" (standard output). */
void sp_cli_wrote (const char *command, const char *path, const char *fmt, ...)
    G_GNUC_PRINTF (3, 4);

/* A duration for people to read: `ns` nanoseconds in s, ms, µs or ns with
 * four significant digits ("1.416 s", "51.68 ms", "269.7 µs", "850.0 ns";
 * "us" where the locale's character set is not UTF-8).  Text output only:
 * JSON and CSV keep their fixed units.  Free with g_free(). */
char *sp_cli_time (double ns);

/* sp_cli_time right-aligned in `width` characters (µ counts as one). */
char *sp_cli_time_padded (double ns, int width);

/* ", NCCL 2.21.5, NCCL_ALGO=…, NCCL_PROTO=…" for what the topology's
 * [nccl] lets NCCL choose (each only when set; a value in single quotes
 * when it holds a ';'), "" when nothing is restricted: the tail of a
 * report's header line.  Free with g_free(). */
char *sp_cli_nccl_env (const SpTopoSpec *spec);

/* `one` when n == 1, else `many`: "1 node", "2 nodes". */
const char *sp_cli_plural (guint64 n, const char *one, const char *many);

/* The finished object of `builder` as JSON text ending in a newline,
 * indented when `pretty`, each double in its shortest round-trip form
 * (lib/json-text.h).  Free with g_free(). */
char *sp_cli_json_text (JsonBuilder *builder, gboolean pretty);

/* A standard error σ of log(time) for text output: "±3.1%" below 0.1
 * (where e^σ − 1 ≈ σ), else the factor "×÷1.65" (the time between t / e^σ
 * and t · e^σ), "×÷>10" beyond 10 (the calibration does not determine
 * it), "undetermined" for INFINITY.  Into `buf` (32 bytes); returns it or
 * a constant string. */
const char *sp_cli_sigma_text (double sigma, char *buf);

/* The names of the calibrated values of `mask` (SpCalibParam bits),
 * ", "-separated, or as a JSON array.  Free with g_free(). */
char *sp_cli_calib_params (guint mask, gboolean json);

G_END_DECLS
