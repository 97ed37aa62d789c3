/* tests/fuzz/fuzz-argv.c — a subcommand's command line as a whole (issue 15,
 * finding 8): the input is argv, words separated by NUL bytes, parsed by
 * sp_cli_parse (GLib's option parser with the table shape every subcommand
 * uses: strings, file names, flags, short options, positional arguments),
 * then checked the way the subcommands check what they got: sp_cli_format,
 * sp_cli_u32, sp_parse_bytes on N or A:B (estimate's --bytes),
 * sp_parse_double, sp_cli_contention, and sp_cli_files on the inputs and
 * the output (which only stat paths: nothing is created or written).
 *
 * A parse that fails must say so with SP_EXIT_USAGE; a value accepted must
 * lie in its range.  Inputs with a help option (-h, -?, a cluster of short
 * options holding h or ?, --help…) are skipped: GLib prints the help and exits the process, as it should.  The
 * one-line usage errors go to /dev/null (the fuzzer's own output and the
 * sanitizers' reports do not use stdio's stderr); a GLib warning or
 * critical still aborts, its message on the real standard error. */
#include "config.h"
#include "fuzz-common.h"
#include "cli.h"
#include "shardplan/shardplan.h"
#include "shardplan/sim.h"

#include <locale.h>
#include <math.h>

#define MAX_WORDS 64

static FILE *real_stderr;

static GLogWriterOutput
argv_log_writer (GLogLevelFlags level, const GLogField *fields, gsize n_fields, gpointer unused)
{
  (void) unused;
  if (level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING))
    {
      for (gsize i = 0; i < n_fields; i++)
        if (strcmp (fields[i].key, "MESSAGE") == 0 && fields[i].length < 0)
          fprintf (real_stderr, "fuzz-argv: GLib: %s\n", (const char *) fields[i].value);
      fflush (real_stderr);
      abort ();
    }
  return G_LOG_WRITER_HANDLED;
}

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  (void) argc;
  (void) argv;
  /* file names and option values as a user in a UTF-8 locale types them */
  if (!setlocale (LC_ALL, "C.UTF-8"))
    setlocale (LC_ALL, "");
  setlocale (LC_NUMERIC, "C");
  int fd = dup (STDERR_FILENO);
  real_stderr = fd >= 0 ? fdopen (fd, "w") : NULL;
  FILE *null = fopen ("/dev/null", "w");
  if (!real_stderr || !null)
    {
      fprintf (stderr, "fuzz-argv: cannot set up standard error\n");
      exit (1);
    }
  stderr = null;
  g_log_set_writer_func (argv_log_writer, NULL, NULL);
  return 0;
}

/* GLib takes -h and -? anywhere in a cluster of short options ("-nh") */
static gboolean
is_help (const char *w)
{
  return g_str_has_prefix (w, "--help") || (w[0] == '-' && w[1] != '-' && strpbrk (w + 1, "h?"));
}

/* --bytes as estimate reads it: N, or A:B with A <= B. */
static void
check_bytes (const char *text)
{
  GError *e = NULL;
  guint64 lo = 0, hi = 0;
  const guint64 max = G_MAXUINT64 / 2;
  const char *colon = strchr (text, ':');
  gboolean ok;
  if (colon)
    {
      g_autofree char *a = g_strndup (text, (gsize) (colon - text));
      ok = sp_parse_bytes ("--bytes", a, 1, max, &lo, &e)
           && sp_parse_bytes ("--bytes", colon + 1, 1, max, &hi, &e);
      g_assert (!ok || (lo >= 1 && lo <= max && hi >= 1 && hi <= max));
    }
  else
    {
      ok = sp_parse_bytes ("--bytes", text, 0, max, &lo, &e);
      g_assert (!ok || lo <= max);
    }
  g_assert (ok == (e == NULL));
  if (e)
    {
      g_assert (e->message[0] != '\0');
      g_error_free (e);
    }
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  /* argv[0], then the words; the last word may run to the end of the input */
  char *words[MAX_WORDS + 2];
  int n = 0;
  words[n++] = g_strdup ("shardplan fuzz");
  for (size_t at = 0; at < size && n <= MAX_WORDS;)
    {
      const uint8_t *nul = memchr (data + at, 0, size - at);
      size_t len = nul ? (size_t) (nul - data) - at : size - at;
      words[n++] = g_strndup ((const char *) data + at, len);
      at += len + 1;
    }
  words[n] = NULL;
  gboolean help = FALSE;
  for (int i = 1; i < n; i++)
    help = help || is_help (words[i]);
  if (help)
    {
      for (int i = 0; i < n; i++)
        g_free (words[i]);
      return 0;
    }

  /* GLib moves and drops pointers of the vector it parses: keep the words */
  char **argv = g_memdup2 (words, sizeof (char *) * (gsize) (n + 1));
  int argc = n;
  g_autofree char *topology = NULL, *nodes_s = NULL, *bytes_s = NULL, *factor_s = NULL,
                  *format_s = NULL, *contention_s = NULL, *model_s = NULL, *output = NULL,
                  *plan = NULL;
  gboolean flag = FALSE;
  GOptionEntry entries[] = {
    { "topology", 't', 0, G_OPTION_ARG_FILENAME, &topology, "Topology", "FILE|PRESET" },
    { "nodes", 'n', 0, G_OPTION_ARG_STRING, &nodes_s, "Node count", "N" },
    { "bytes", 'b', 0, G_OPTION_ARG_STRING, &bytes_s, "Size", "N|A:B" },
    { "compute-efficiency", 0, 0, G_OPTION_ARG_STRING, &factor_s, "Fraction", "F" },
    { "format", 'f', 0, G_OPTION_ARG_STRING, &format_s, "Format", "text|json|csv" },
    { "contention", 0, 0, G_OPTION_ARG_STRING, &contention_s, "Contention", "MODEL" },
    { "sim-model", 0, 0, G_OPTION_ARG_STRING, &model_s, "Model", "des|analytic" },
    { "hierarchical", 0, 0, G_OPTION_ARG_NONE, &flag, "Flag", NULL },
    { "plan", 'p', 0, G_OPTION_ARG_FILENAME, &plan, "Plan", "FILE" },
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Output", "FILE" },
    { NULL },
  };
  int status = -1;
  if (!sp_cli_parse ("fuzz", "[FILE…]", "Fuzz.", NULL, entries, &argc, &argv, &status))
    g_assert (status == SP_EXIT_USAGE);
  else
    {
      g_assert (argc >= 1 && argc <= n && argv[argc] == NULL);
      SpFormat format;
      if (sp_cli_format ("fuzz", format_s, 7u, &format))
        g_assert (format_s == NULL || (guint) format <= SP_FORMAT_CSV);
      guint32 nodes = 0;
      if (nodes_s && sp_cli_u32 ("fuzz", "--nodes", nodes_s, 1, 1u << 24, &nodes))
        g_assert (nodes >= 1 && nodes <= 1u << 24);
      if (bytes_s)
        check_bytes (bytes_s);
      if (factor_s)
        {
          double f = 0;
          GError *e = NULL;
          if (sp_parse_double ("--compute-efficiency", factor_s, 1e-9, 1.0, &f, &e))
            g_assert (isfinite (f) && f >= 1e-9 && f <= 1.0);
          else
            g_error_free (e);
        }
      SpSimContention c;
      SpSimModel model = model_s && strcmp (model_s, "analytic") == 0 ? SP_SIM_ANALYTIC : SP_SIM_DES;
      (void) sp_cli_contention ("fuzz", contention_s, model, &c);
      g_autoptr (SpCliFiles) files = sp_cli_files_new ("fuzz");
      sp_cli_files_input (files, "--plan", plan);
      sp_cli_files_input (files, "--topology", topology);
      sp_cli_files_inputs (files, "trace argument", argc - 1, argv + 1);
      sp_cli_files_output (files, "-o/--output", output);
      (void) sp_cli_files_check (files);
    }
  g_free (argv);
  for (int i = 0; i < n; i++)
    g_free (words[i]);
  return 0;
}
