/* `shardplan info`: version, build configuration, libraries, the backends
 * and kernels compiled in, and the built-in topology presets.
 *
 * "Compiled in" is exactly that — what configure enabled (config.h); whether
 * a GPU or an MPI launcher is present at run time is not probed here.  No
 * CUDA, NCCL or MPI header is included: tools/ never does. */
#include "config.h"
#include "cli.h"
#include "commands.h"
#include "shardplan/shardplan.h"

#include <hdf5.h>
#include <string.h>
#include <json-glib/json-glib.h>

#define CMD "info"

typedef struct {
  const char *name;
  const char *what;
} Component;

/* Executor backends compiled in.  The NCCL backend is bootstrapped over MPI,
 * so configure builds it only when both are enabled (BUILD_NCCL_BACKEND). */
static const Component backends[] = {
#ifdef HAVE_MPI
  { "mpi", "MPI on CPUs (exec/mpi)" },
#endif
#if defined(HAVE_NCCL) && defined(HAVE_MPI)
  { "nccl", "NCCL on CUDA GPUs, bootstrapped over MPI (exec/nccl)" },
#endif
  { NULL, NULL },
};

static const Component kernels[] = {
  { "cpu", "CPU reference kernels" },
#ifdef HAVE_CUDA
  { "cuda", "CUDA kernels" },
#endif
  { NULL, NULL },
};

static char *
hdf5_version (void)
{
  unsigned maj = 0, min = 0, rel = 0;
  if (H5get_libversion (&maj, &min, &rel) < 0)
    return g_strdup (H5_VERS_INFO);
  return g_strdup_printf ("%u.%u.%u", maj, min, rel);
}

static char *
glib_version (void)
{
  return g_strdup_printf ("%u.%u.%u", glib_major_version, glib_minor_version, glib_micro_version);
}

static char *
info_text (void)
{
  g_autofree char *hdf5 = hdf5_version ();
  g_autofree char *glib = glib_version ();
  GString *s = g_string_new (NULL);
  g_string_append_printf (s, "shardplan %s\n\n", sp_version ());
  g_string_append_printf (s, "build configuration: %s\n", sp_build_config ());
  g_string_append_printf (s, "compiler:            %s\n", SP_CC_VERSION);
  g_string_append_printf (s, "libraries:           GLib %s (built against %d.%d.%d), json-glib %s, HDF5 %s\n",
                          glib, GLIB_MAJOR_VERSION, GLIB_MINOR_VERSION, GLIB_MICRO_VERSION,
                          JSON_VERSION_S, hdf5);
  g_string_append (s, "\nbackends compiled in:\n");
  if (backends[0].name == NULL)
    g_string_append (s, "  (none: configure found neither MPI nor NCCL)\n");
  for (const Component *c = backends; c->name; c++)
    g_string_append_printf (s, "  %-10s %s\n", c->name, c->what);
  g_string_append (s, "\nkernels compiled in:\n");
  for (const Component *c = kernels; c->name; c++)
    g_string_append_printf (s, "  %-10s %s\n", c->name, c->what);
  g_string_append (s, "\ntopology presets (--topology PRESET [--nodes N]):\n");
  int width = 10; /* the names' column: as wide as the longest name */
  for (const char *const *p = sp_topo_preset_names (); *p; p++)
    width = MAX (width, (int) strlen (*p));
  for (const char *const *p = sp_topo_preset_names (); *p; p++)
    g_string_append_printf (s, "  %-*s %s\n", width, *p, sp_topo_preset_description (*p));
  return g_string_free (s, FALSE);
}

static void
add_components (JsonBuilder *b, const char *member, const Component *list)
{
  json_builder_set_member_name (b, member);
  json_builder_begin_array (b);
  for (const Component *c = list; c->name; c++)
    json_builder_add_string_value (b, c->name);
  json_builder_end_array (b);
}

static char *
info_json (void)
{
  g_autofree char *hdf5 = hdf5_version ();
  g_autofree char *glib = glib_version ();
  g_autofree char *glib_built = g_strdup_printf ("%d.%d.%d", GLIB_MAJOR_VERSION,
                                                 GLIB_MINOR_VERSION, GLIB_MICRO_VERSION);
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "version");
  json_builder_add_string_value (b, sp_version ());
  json_builder_set_member_name (b, "build_config");
  json_builder_add_string_value (b, sp_build_config ());
  json_builder_set_member_name (b, "compiler");
  json_builder_add_string_value (b, SP_CC_VERSION);
  json_builder_set_member_name (b, "libraries");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "glib");
  json_builder_add_string_value (b, glib);
  json_builder_set_member_name (b, "glib_built_against");
  json_builder_add_string_value (b, glib_built);
  json_builder_set_member_name (b, "json_glib");
  json_builder_add_string_value (b, JSON_VERSION_S);
  json_builder_set_member_name (b, "hdf5");
  json_builder_add_string_value (b, hdf5);
  json_builder_end_object (b);
  add_components (b, "backends", backends);
  add_components (b, "kernels", kernels);
  json_builder_set_member_name (b, "presets");
  json_builder_begin_array (b);
  for (const char *const *p = sp_topo_preset_names (); *p; p++)
    {
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "name");
      json_builder_add_string_value (b, *p);
      json_builder_set_member_name (b, "description");
      json_builder_add_string_value (b, sp_topo_preset_description (*p));
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  json_builder_end_object (b);

  return sp_cli_json_text (b, TRUE);
}

int
sp_cmd_info (int argc, char **argv)
{
  g_autofree char *format_s = NULL;
  GOptionEntry entries[] = {
    { "format", 'f', 0, G_OPTION_ARG_STRING, &format_s, "Output format: text (default) or json",
      "text|json" },
    { NULL },
  };
  int status;
  if (!sp_cli_parse (CMD, NULL, "Print the version, build configuration, backends, kernels and presets.",
                     "Backends and kernels are those compiled in (configure's choice); devices are "
                     "not probed.", entries, &argc, &argv, &status))
    return status;
  if (argc > 1)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "unexpected argument '%s' (see 'shardplan info --help')",
                        argv[1]);
  SpFormat format;
  if (!sp_cli_format (CMD, format_s, (1u << SP_FORMAT_TEXT) | (1u << SP_FORMAT_JSON), &format))
    return SP_EXIT_USAGE;

  g_autofree char *out = format == SP_FORMAT_JSON ? info_json () : info_text ();
  GError *error = NULL;
  if (!sp_cli_write_output (NULL, out, strlen (out), &error))
    return sp_cli_error (CMD, error);
  return SP_EXIT_OK;
}
