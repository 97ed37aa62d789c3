/* Shared command-line plumbing (see cli.h). */
#include "config.h"
#include "cli.h"
#include "shardplan/calibrate-fit.h"
#include "shardplan/error.h"
#include "shardplan/file.h"
#include "json-text.h"          /* lib/: shortest round-trip numbers */

#include <glib/gstdio.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

gboolean
sp_cli_parse (const char *command, const char *params, const char *summary,
              const char *description, GOptionEntry *entries, int *argc, char ***argv,
              int *out_status)
{
  g_autoptr (GOptionContext) ctx = g_option_context_new (params);
  g_option_context_set_summary (ctx, summary);
  if (description)
    g_option_context_set_description (ctx, description);
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_set_help_enabled (ctx, TRUE);
  g_autoptr (GError) error = NULL;
  if (!g_option_context_parse (ctx, argc, argv, &error))
    {
      fprintf (stderr, "shardplan %s: %s (see 'shardplan %s --help')\n", command, error->message,
               command);
      *out_status = SP_EXIT_USAGE;
      return FALSE;
    }
  return TRUE;
}

gboolean
sp_cli_format (const char *command, const char *text, guint allowed, SpFormat *out_format)
{
  static const char *names[] = { "text", "json", "csv" };
  if (text == NULL)
    {
      *out_format = SP_FORMAT_TEXT;
      return TRUE;
    }
  GString *accepted = g_string_new (NULL);
  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    {
      if (!(allowed & (1u << i)))
        continue;
      if (strcmp (text, names[i]) == 0)
        {
          *out_format = (SpFormat) i;
          g_string_free (accepted, TRUE);
          return TRUE;
        }
      g_string_append_printf (accepted, "%s%s", accepted->len ? ", " : "", names[i]);
    }
  fprintf (stderr, "shardplan %s: --format '%s' is not one of: %s\n", command, text, accepted->str);
  g_string_free (accepted, TRUE);
  return FALSE;
}

int
sp_cli_fail (const char *command, int status, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *msg = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  fprintf (stderr, "shardplan %s: %s\n", command, msg);
  return status;
}

/* The exit status of `error`: 2 for bad input (an option, a file's
 * content, a request this build cannot serve; and SP_ERROR_IO too when
 * `io_is_input`: the file could not be read), else 1. */
static int
error_status (const GError *error, gboolean io_is_input)
{
  if (error->domain == G_OPTION_ERROR || error->domain == G_FILE_ERROR
      || error->domain == G_KEY_FILE_ERROR)
    return SP_EXIT_USAGE;
  if (error->domain != SP_ERROR)
    return SP_EXIT_FAILURE;
  switch ((SpErrorCode) error->code)
    {
    case SP_ERROR_INVALID_ARGUMENT:
    case SP_ERROR_INVALID_TOPOLOGY:
    case SP_ERROR_INVALID_GROUPS:
    case SP_ERROR_INVALID_PLAN:
    case SP_ERROR_INVALID_WORKLOAD:
    case SP_ERROR_INVALID_TRACE:
    case SP_ERROR_UNSUPPORTED:
      return SP_EXIT_USAGE;
    case SP_ERROR_IO:
      return io_is_input ? SP_EXIT_USAGE : SP_EXIT_FAILURE;
    default:
      return SP_EXIT_FAILURE;
    }
}

static int
report (const char *command, GError *error, gboolean io_is_input)
{
  if (error == NULL) /* a failure that did not say why: still one line, exit 1 */
    return sp_cli_fail (command, SP_EXIT_FAILURE, "internal error (no reason given)");
  int status = error_status (error, io_is_input);
  sp_cli_fail (command, status, "%s", error->message);
  g_error_free (error);
  return status;
}

int
sp_cli_error (const char *command, GError *error)
{
  return report (command, error, FALSE);
}

int
sp_cli_input_error (const char *command, GError *error)
{
  return report (command, error, TRUE);
}

gboolean
sp_cli_u32 (const char *command, const char *option, const char *text, guint32 min,
            guint32 max, guint32 *out_value)
{
  if (text == NULL)
    return TRUE;
  GError *error = NULL;
  guint64 v;
  if (!sp_parse_u64 (option, text, min, max, &v, &error))
    {
      sp_cli_fail (command, SP_EXIT_USAGE, "%s", error->message);
      g_error_free (error);
      return FALSE;
    }
  *out_value = (guint32) v;
  return TRUE;
}

gboolean
sp_cli_stderr_is_tty (void)
{
  return isatty (STDERR_FILENO);
}

gboolean
sp_cli_stdout_flushed (void)
{
  return fflush (stdout) == 0 && !ferror (stdout);
}

gboolean
sp_cli_write_output (const char *path, const char *contents, gsize length, GError **error)
{
  if (path == NULL || strcmp (path, "-") == 0)
    {
      if (fwrite (contents, 1, length, stdout) != length || !sp_cli_stdout_flushed ())
        {
          g_set_error (error, SP_ERROR, SP_ERROR_IO, "cannot write to standard output");
          return FALSE;
        }
      return TRUE;
    }
  return sp_file_write_atomic (path, contents, length, error);
}

/* NAME and N of a plan's "NAME x N nodes" (cmd-plan.c); FALSE if not so. */
static gboolean
recorded_topology (const char *meta, char **out_name, guint32 *out_nodes)
{
  const char *x = meta ? g_strrstr (meta, " x ") : NULL;
  if (x == NULL || x == meta)
    return FALSE;
  char *end = NULL;
  guint64 n = g_ascii_strtoull (x + 3, &end, 10);
  if (end == x + 3 || n == 0 || n > G_MAXUINT32
      || (strcmp (end, " nodes") != 0 && strcmp (end, " node") != 0))
    return FALSE;
  *out_name = g_strndup (meta, (gsize) (x - meta));
  *out_nodes = (guint32) n;
  return TRUE;
}

static char *
topology_digest (const SpTopo *topo)
{
  g_autofree char *ini = sp_topo_to_ini (topo);
  return g_compute_checksum_for_string (G_CHECKSUM_SHA256, ini, -1);
}

void
sp_cli_topo_note (const char *command, const SpTopo *topo)
{
  static gboolean noted;
  const char *model = topo ? sp_topo_spec (topo)->gpu_model : NULL;
  if (topo && !noted && !sp_topo_gpu_model_known (model))
    {
      noted = TRUE;
      g_autofree char *hbm = sp_topo_spec (topo)->gpu_memory_bandwidth_gbs > 0
          ? g_strdup ("")
          : g_strdup_printf (", and kernels without FLOPs at %.0f GB/s of memory bandwidth ([gpu] "
                             "memory_bandwidth_gbs sets it)", SP_TOPO_MEMORY_BANDWIDTH_FALLBACK_GBS);
      fprintf (stderr, "shardplan %s: note: [gpu] model '%s' is not a GPU the simulator knows by "
               "name (%s): it is costed with the A100's generation constants%s\n", command, model,
               sp_topo_gpu_model_names (), hbm);
    }
}

SpTopo *
sp_cli_topo_open (const char *command, const char *file_or_preset, guint32 nodes, GError **error)
{
  SpTopo *topo = sp_topo_open (file_or_preset, nodes, error);
  sp_cli_topo_note (command, topo);
  return topo;
}

void
sp_cli_plan_record_topology (SpPlan *plan, const SpTopo *topo)
{
  const SpTopoSpec *spec = sp_topo_spec (topo);
  g_autofree char *desc = g_strdup_printf ("%s x %u nodes", spec->name, spec->nodes);
  g_autofree char *digest = topology_digest (topo);
  sp_plan_set_meta (plan, "topology", desc);
  sp_plan_set_meta (plan, "topology_sha256", digest);
}

SpTopo *
sp_cli_plan_topology (const char *command, const char *plan_path, const SpPlan *plan,
                      const char *topology, guint32 nodes, int *out_status)
{
  *out_status = SP_EXIT_USAGE;
  g_autofree char *name = NULL;
  guint32 recorded_nodes = 0;
  const char *meta = sp_plan_get_meta (plan, "topology");
  gboolean recorded = recorded_topology (meta, &name, &recorded_nodes);
  if (topology == NULL)
    {
      if (!recorded)
        {
          sp_cli_fail (command, SP_EXIT_USAGE, "--topology FILE|PRESET is required: %s records "
                       "no topology", plan_path);
          return NULL;
        }
      if (sp_topo_preset_description (name) == NULL)
        {
          sp_cli_fail (command, SP_EXIT_USAGE, "--topology FILE is required: %s was planned on "
                       "topology '%s' (%s), which is not a preset: give its INI file",
                       plan_path, name, meta);
          return NULL;
        }
      topology = name;
      /* a plan made on a file that shares a preset's name must not run on
       * the preset: compare the digest it records with the preset's */
      const char *recorded_digest = sp_plan_get_meta (plan, "topology_sha256");
      if (recorded_digest != NULL)
        {
          g_autoptr (GError) e = NULL;
          g_autoptr (SpTopo) preset = sp_topo_open (name, recorded_nodes, &e);
          g_autofree char *digest = preset ? topology_digest (preset) : NULL;
          if (digest == NULL || strcmp (digest, recorded_digest) != 0)
            {
              sp_cli_fail (command, SP_EXIT_USAGE, "--topology FILE is required: %s was planned "
                           "on a topology named '%s' whose recorded topology_sha256 is not this "
                           "build's preset of that name (a file of that name, or the preset of "
                           "another shardplan version): give its INI file, or --topology %s to "
                           "simulate it on this preset", plan_path, name, name);
              return NULL;
            }
        }
      else
        fprintf (stderr, "shardplan %s: warning: %s records no topology_sha256 (a plan from before "
                 "shardplan recorded it, or written by hand): simulated on the preset '%s', which "
                 "may not be the topology it was made for\n", command, plan_path, name);
      if (nodes == 0)
        nodes = recorded_nodes;
    }
  GError *error = NULL;
  g_autoptr (SpTopo) topo = sp_cli_topo_open (command, topology, nodes, &error);
  if (topo == NULL)
    {
      *out_status = sp_cli_error (command, error);
      return NULL;
    }
  const guint32 W = sp_plan_world_size (plan), D = sp_topo_spec (topo)->gpus_per_node;
  if (nodes == 0 && recorded && strcmp (sp_topo_spec (topo)->name, name) == 0
      && sp_topo_spec (topo)->nodes != recorded_nodes && (guint64) recorded_nodes * D == W)
    {
      /* --topology names the plan's own topology: its node count too */
      SpTopo *grown = sp_topo_with_nodes (topo, recorded_nodes, &error);
      if (grown == NULL)
        {
          *out_status = sp_cli_error (command, error);
          return NULL;
        }
      sp_topo_free (topo);
      topo = grown;
    }
  const guint32 N = sp_topo_spec (topo)->nodes;
  if (sp_topo_world_size (topo) != W)
    {
      g_autofree char *fix = W % D == 0
          ? g_strdup_printf ("--nodes %u matches", W / D)
          : g_strdup_printf ("no --nodes matches: %u is not a multiple of %u GPUs per node", W, D);
      sp_cli_fail (command, SP_EXIT_USAGE, "%s has %u ranks but %s with %u %s x %u GPUs has %u: %s",
                   plan_path, W, sp_topo_spec (topo)->name, N, sp_cli_plural (N, "node", "nodes"),
                   D, sp_topo_world_size (topo), fix);
      return NULL;
    }
  *out_status = SP_EXIT_OK;
  return g_steal_pointer (&topo);
}

void
sp_cli_wrote (const char *command, const char *path, const char *fmt, ...)
{
  if (path == NULL || strcmp (path, "-") == 0)
    return;
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *what = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  GStatBuf st;
  g_autofree char *size = g_stat (path, &st) == 0
      ? g_format_size_full ((guint64) st.st_size, G_FORMAT_SIZE_IEC_UNITS)
      : g_strdup ("size unknown");
  /* GLib puts a no-break space between number and unit; scripts grep for ' ' */
  for (char *nbsp; (nbsp = strstr (size, "\302\240")) != NULL;)
    {
      *nbsp = ' ';
      memmove (nbsp + 1, nbsp + 2, strlen (nbsp + 2) + 1);
    }
  fprintf (stderr, "shardplan %s: wrote %s (%s, %s)\n", command, path, what, size);
}

char *
sp_cli_time (double ns)
{
  static const struct { double scale; const char *unit; } units[] = {
    { 1e9, "s" }, { 1e6, "ms" }, { 1e3, "µs" }, { 1, "ns" },
  };
  double a = fabs (ns);
  guint i = 0;
  /* the largest unit that leaves at least 1 once rounded to 4 digits */
  while (i + 1 < G_N_ELEMENTS (units) && a < units[i].scale * 0.99995)
    i++;
  double v = ns / units[i].scale;
  int decimals = fabs (v) >= 999.95 ? 0 : fabs (v) >= 99.995 ? 1 : fabs (v) >= 9.9995 ? 2 : 3;
  if (ns == 0)
    decimals = 0;
  const char *unit = units[i].unit;
  if (strcmp (unit, "µs") == 0 && !g_get_charset (NULL))
    unit = "us";
  return g_strdup_printf ("%.*f %s", decimals, v, unit);
}

char *
sp_cli_time_padded (double ns, int width)
{
  g_autofree char *t = sp_cli_time (ns);
  glong chars = g_utf8_strlen (t, -1);
  return g_strdup_printf ("%*s%s", (int) MAX (0, width - chars), "", t);
}

char *
sp_cli_nccl_env (const SpTopoSpec *spec)
{
  g_autofree char *algo = sp_topo_nccl_text (spec->nccl_algo_off, FALSE);
  g_autofree char *proto = sp_topo_nccl_text (spec->nccl_proto_off, TRUE);
  /* quoted where a shell would split it (';') */
  const char *qa = algo && strchr (algo, ';') ? "'" : "", *qp = proto && strchr (proto, ';') ? "'" : "";
  g_autofree char *v = spec->nccl_version ? sp_topo_nccl_version_text ((int) spec->nccl_version) : NULL;
  g_autofree char *version = v ? g_strconcat (", NCCL ", v, NULL) : NULL;
  return g_strdup_printf ("%s%s%s%s%s%s%s%s%s", version ? version : "", algo ? ", NCCL_ALGO=" : "", qa,
                          algo ? algo : "", qa, proto ? ", NCCL_PROTO=" : "", qp, proto ? proto : "",
                          qp);
}

const char *
sp_cli_plural (guint64 n, const char *one, const char *many)
{
  return n == 1 ? one : many;
}

char *
sp_cli_json_text (JsonBuilder *builder, gboolean pretty)
{
  g_autoptr (JsonNode) root = json_builder_get_root (builder);
  g_autofree char *text = sp_json_text (root, pretty);
  return g_strconcat (text, "\n", NULL);
}

gboolean
sp_cli_contention (const char *command, const char *text, SpSimModel model,
                   SpSimContention *out)
{
  *out = SP_SIM_CONTENTION_DEFAULT;
  if (text == NULL)
    return TRUE;
  if (!sp_sim_contention_from_name (text, out) || *out == SP_SIM_CONTENTION_DEFAULT)
    {
      sp_cli_fail (command, SP_EXIT_USAGE, "--contention '%s' is not a contention model "
                   "(accepted: none, family, step)", text);
      return FALSE;
    }
  if (model == SP_SIM_ANALYTIC && *out != SP_SIM_CONTENTION_NONE)
    {
      sp_cli_fail (command, SP_EXIT_USAGE, "--contention %s needs --sim-model des (the analytic "
                   "model has no network; accepted with analytic: none)", text);
      return FALSE;
    }
  return TRUE;
}

const char *
sp_cli_sigma_text (double sigma, char *buf)
{
  if (!isfinite (sigma))
    return "undetermined";
  if (sigma < 0.0995) /* (what would print as ±10.0 % is a factor) */
    g_snprintf (buf, 32, "±%.1f%%", 100 * sigma);
  else if (sigma <= log (10.0))
    g_snprintf (buf, 32, "×÷%.2f", exp (sigma));
  else
    g_snprintf (buf, 32, "×÷>10");
  return buf;
}

char *
sp_cli_calib_params (guint mask, gboolean json)
{
  GString *out = g_string_new (json ? "[" : NULL);
  for (guint p = 0; p < SP_CALIB_N_PARAMS; p++)
    if (mask >> p & 1)
      g_string_append_printf (out, json ? "%s\"%s\"" : "%s%s",
                              out->len > (json ? 1u : 0u) ? ", " : "", sp_calib_param_name (p));
  if (json)
    g_string_append_c (out, ']');
  return g_string_free (out, FALSE);
}
