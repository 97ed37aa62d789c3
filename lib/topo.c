/* The topology model: the key table, validation, the object and the block
 * rank layout.  INI text in and out is topo-ini.c; presets topo-presets.c.
 *
 * One table (sp_topo_fields) drives the parser, the validator of
 * sp_topo_new() and the writer, so the three cannot disagree about a key's
 * name, range or default.  Range checks go through sp_parse_u64 /
 * sp_parse_double so a bad value reads the same whether it came from a
 * file, a preset override or a spec built in code. */
#include "config.h"
#include "shardplan/topo.h"
#include "shardplan/error.h"
#include "topo-private.h"

#include <stddef.h>
#include <string.h>

/* 2^31 ranks: the largest world a guint32 rank with a sign bit to spare holds. */
#define TOPO_MAX_WORLD (G_GUINT64_CONSTANT (1) << 31)

#define U32(sec, key, member, lo, hi, need) \
  { sec, key, SP_FIELD_U32, offsetof (SpTopoSpec, member), lo, hi, FALSE, need }
#define DBL(sec, key, member, lo, hi, open, need) \
  { sec, key, SP_FIELD_DOUBLE, offsetof (SpTopoSpec, member), lo, hi, open, need }

const SpTopoField sp_topo_fields[] = {
  { "cluster", "name", SP_FIELD_STRING, offsetof (SpTopoSpec, name), 0, 0, FALSE, SP_NEED_OPTIONAL },
  U32 ("cluster", "nodes", nodes, 1, 16777216, SP_NEED_ALWAYS),
  U32 ("cluster", "gpus_per_node", gpus_per_node, 1, 1024, SP_NEED_ALWAYS),
  { "cluster", "host_cpu", SP_FIELD_HOST_CPU, offsetof (SpTopoSpec, host_cpu), 0, 0, FALSE, SP_NEED_OPTIONAL },
  U32 ("cluster", "nvlink_domain", nvlink_domain, 1, 1024, SP_NEED_ZERO),
  { "cluster", "mnnvl", SP_FIELD_MNNVL, offsetof (SpTopoSpec, mnnvl), 0, 0, FALSE, SP_NEED_OPTIONAL },
  { "gpu", "model", SP_FIELD_STRING, offsetof (SpTopoSpec, gpu_model), 0, 0, FALSE, SP_NEED_ALWAYS },
  DBL ("gpu", "memory_gib", gpu_memory_gib, 0, 65536, TRUE, SP_NEED_ALWAYS),
  DBL ("gpu", "tflops", gpu_tflops, 0, 1e6, TRUE, SP_NEED_ALWAYS),
  DBL ("gpu", "memory_bandwidth_gbs", gpu_memory_bandwidth_gbs, 0, 1e6, TRUE, SP_NEED_ZERO),
  { "intra", "kind", SP_FIELD_INTRA, offsetof (SpTopoSpec, intra_kind), 0, 0, FALSE, SP_NEED_ALWAYS },
  DBL ("intra", "bandwidth_gbs", intra_bandwidth_gbs, 0, 1e5, TRUE, SP_NEED_ALWAYS),
  DBL ("intra", "latency_us", intra_latency_us, 0, 1e6, FALSE, SP_NEED_UNSET),
  U32 ("inter", "nics_per_node", nics_per_node, 1, 1024, SP_NEED_INTER),
  DBL ("inter", "nic_gbps", nic_gbps, 0, 1e6, TRUE, SP_NEED_INTER),
  DBL ("inter", "latency_us", inter_latency_us, 0, 1e6, FALSE, SP_NEED_UNSET),
  DBL ("inter", "step_floor_us", inter_step_floor_us, 0, 1e6, FALSE, SP_NEED_UNSET),
  DBL ("inter", "inject_copy_us", inter_inject_copy_us, 0, 1e6, FALSE, SP_NEED_UNSET),
  { "inter", "fabric", SP_FIELD_FABRIC, offsetof (SpTopoSpec, fabric), 0, 0, FALSE, SP_NEED_OPTIONAL },
  DBL ("inter", "oversubscription", oversubscription, 1, 1024, FALSE, SP_NEED_OPTIONAL),
  { "inter", "transport", SP_FIELD_TRANSPORT, offsetof (SpTopoSpec, transport), 0, 0, FALSE, SP_NEED_OPTIONAL },
  { "inter", "nic_path", SP_FIELD_NIC_PATH, offsetof (SpTopoSpec, nic_path), 0, 0, FALSE, SP_NEED_OPTIONAL },
  DBL ("calibration", "intra_efficiency", cal_intra_efficiency, 0, 4, FALSE, SP_NEED_OPTIONAL),
  DBL ("calibration", "nic_efficiency", cal_nic_efficiency, 0, 4, FALSE, SP_NEED_OPTIONAL),
  DBL ("calibration", "ll_overhead_us", cal_overhead_us[0], -1000, 1e6, FALSE, SP_NEED_OPTIONAL),
  DBL ("calibration", "ll128_overhead_us", cal_overhead_us[1], -1000, 1e6, FALSE, SP_NEED_OPTIONAL),
  DBL ("calibration", "simple_overhead_us", cal_overhead_us[2], -1000, 1e6, FALSE, SP_NEED_OPTIONAL),
  { "calibration", "std_errors", SP_FIELD_CAL_STD_ERRORS, offsetof (SpTopoSpec, cal_errors), 0, 0, FALSE, SP_NEED_OPTIONAL },
  { "calibration", "correlations", SP_FIELD_CAL_CORRELATIONS, offsetof (SpTopoSpec, cal_errors), 0, 0, FALSE, SP_NEED_OPTIONAL },
  DBL ("calibration", "residual_sd", cal_errors.residual_sd, 0, 10, FALSE, SP_NEED_ZERO),
  { "nccl", "algo", SP_FIELD_NCCL_ALGO, offsetof (SpTopoSpec, nccl_algo_off), 0, 0, FALSE, SP_NEED_OPTIONAL },
  { "nccl", "proto", SP_FIELD_NCCL_PROTO, offsetof (SpTopoSpec, nccl_proto_off), 0, 0, FALSE, SP_NEED_OPTIONAL },
  { "nccl", "version", SP_FIELD_NCCL_VERSION, offsetof (SpTopoSpec, nccl_version), 0, 0, FALSE, SP_NEED_ZERO },
};

G_STATIC_ASSERT (G_N_ELEMENTS (sp_topo_fields) == SP_TOPO_N_FIELDS);

const char *const sp_topo_sections[] = { "cluster", "gpu", "intra", "inter", "calibration",
                                         "nccl" };
G_STATIC_ASSERT (G_N_ELEMENTS (sp_topo_sections) == SP_TOPO_N_SECTIONS);

/* Defaults of optional keys; the [inter] numbers are placeholders for a
 * single-node file without [inter] (documented in topo.h). */
const SpTopoSpec sp_topo_defaults = {
  .name = "custom",
  .nics_per_node = 1,
  .nic_gbps = 100,
  .intra_latency_us = SP_TOPO_LATENCY_UNSET,
  .inter_latency_us = SP_TOPO_LATENCY_UNSET,
  .inter_step_floor_us = SP_TOPO_LATENCY_UNSET,
  .inter_inject_copy_us = SP_TOPO_LATENCY_UNSET,
  .fabric = SP_FABRIC_FAT_TREE,
  .oversubscription = 1,
  .transport = SP_TRANSPORT_IB,
};

static const char *const intra_names[] = { "nvswitch", "nvlink", "pcie", "shm" };
static const char *const fabric_names[] = { "single-switch", "fat-tree", "rail" };
static const char *const transport_names[] = { "ib", "roce", "efa", "slingshot", "tcp" };

/* Other spellings of a transport users copy from their cluster's docs or
 * NCCL's log (NET/IB, NET/Socket); read as the name they stand for. */
static const struct
{
  const char *alias;
  SpTransport transport;
} transport_aliases[] = {
  { "infiniband", SP_TRANSPORT_IB },
  { "rocev2", SP_TRANSPORT_ROCE },
  { "socket", SP_TRANSPORT_TCP },
  { "sockets", SP_TRANSPORT_TCP },
};
static const char *const host_cpu_names[] = { "default", "intel", "amd", "arm" };
static const char *const mnnvl_names[] = { "on", "off" };
static const char *const nic_path_names[] = { "default", "pix", "pxb", "phb", "node", "sys" };

const char *
sp_nic_path_name (SpNicPath path)
{
  return (guint) path < G_N_ELEMENTS (nic_path_names) ? nic_path_names[path] : NULL;
}

const char *
sp_mnnvl_name (SpMnnvl mnnvl)
{
  return (guint) mnnvl < G_N_ELEMENTS (mnnvl_names) ? mnnvl_names[mnnvl] : NULL;
}

/* The GPUs shardplan knows by name: case-insensitive substrings, tried in
 * order (GB200 / GB300 before B200 / B300, GH200 before H200, L40S / L40
 * before L4, A10G before A10) and not followed by a digit (names_gpu), each
 * with its compute capability (x 10: the generation the
 * simulator's constants follow), whether it is a Grace superchip (an Arm
 * host, NICs over C2C), and its HBM bandwidth from NVIDIA's datasheets,
 * with that of a variant named by a second substring (80 GB parts; GH200
 * with 144 GB HBM3e, 96 GB HBM3 otherwise).  The one list: the default
 * memory bandwidth, sp_topo_gpu_model_known, the names a note prints and
 * the simulator's generation (sim/model.c sp_sim_arch_of) all read it. */
static const struct {
  const char *name;
  guint cc;
  gboolean grace;
  double hbm_gbs;
  const char *variant;
  double variant_gbs;
} known_gpus[] = {
  { "GB200", 100, TRUE, 8000, NULL, 0 }, { "GB300", 100, TRUE, 8000, NULL, 0 },
  { "B100", 100, FALSE, 8000, NULL, 0 }, { "B200", 100, FALSE, 8000, NULL, 0 },
  { "B300", 100, FALSE, 8000, NULL, 0 }, { "GH200", 90, TRUE, 4000, "144", 4900 },
  { "H100", 90, FALSE, 3350, NULL, 0 },  { "H800", 90, FALSE, 3350, NULL, 0 },
  { "H200", 90, FALSE, 4800, NULL, 0 },  { "H20", 90, FALSE, 4000, NULL, 0 },
  { "A100", 80, FALSE, 1555, "80G", 2039 }, { "A800", 80, FALSE, 1555, "80G", 2039 },
  { "V100", 70, FALSE, 900, NULL, 0 },
  /* the PCIe parts of clouds' smaller instances (and NVLink-bridged
   * pairs), by NCCL's generation buckets: sm86 / sm89 take the A100's
   * tables, sm75 and sm60 the V100's, sm120 Blackwell's; only sm70, sm80,
   * sm90, sm100 and sm120 run LL128 (graph/tuning.cc).  Their memory
   * bandwidth from NVIDIA's datasheets (GDDR6 but the A30's and P100's
   * HBM2).  L40S and L40 before L4, A10G before A10, all after A100. */
  { "L40S", 89, FALSE, 864, NULL, 0 },   { "L40", 89, FALSE, 864, NULL, 0 },
  { "L4", 89, FALSE, 300, NULL, 0 },     { "A10G", 86, FALSE, 600, NULL, 0 },
  { "A10", 86, FALSE, 600, NULL, 0 },    { "A40", 86, FALSE, 696, NULL, 0 },
  { "A30", 80, FALSE, 933, NULL, 0 },    { "T4", 75, FALSE, 320, NULL, 0 },
  { "P100", 60, FALSE, 732, NULL, 0 },   { "RTX PRO 6000", 120, FALSE, 1792, NULL, 0 },
};

/* Whether `hay` contains `needle`, ASCII case-insensitively (no copy: the
 * simulator asks for every group shape it costs). */
static gboolean
contains_ci (const char *hay, const char *needle)
{
  gsize n = strlen (needle);
  for (const char *p = hay; *p != '\0'; p++)
    if (g_ascii_strncasecmp (p, needle, n) == 0)
      return TRUE;
  return FALSE;
}

/* Whether `hay` contains the GPU name `needle`, ASCII case-insensitively,
 * not followed by a digit: "A40" is not in "RTX A4000", "T4" not in
 * "T400", "A100" not in "RTX A1000" (other parts, other generations). */
static gboolean
names_gpu (const char *hay, const char *needle)
{
  gsize n = strlen (needle);
  for (const char *p = hay; *p != '\0'; p++)
    if (g_ascii_strncasecmp (p, needle, n) == 0 && !g_ascii_isdigit (p[n]))
      return TRUE;
  return FALSE;
}

/* The entry of known_gpus `model` names, or -1. */
static int
known_gpu (const char *model)
{
  if (model == NULL)
    return -1;
  for (guint i = 0; i < G_N_ELEMENTS (known_gpus); i++)
    if (names_gpu (model, known_gpus[i].name))
      return (int) i;
  return -1;
}

gboolean
sp_topo_gpu_model_known (const char *gpu_model)
{
  return known_gpu (gpu_model) >= 0
         || (gpu_model != NULL && g_ascii_strncasecmp (gpu_model, "cpu", 3) == 0);
}

guint
sp_topo_gpu_compute_capability (const char *gpu_model)
{
  int k = known_gpu (gpu_model);
  return k < 0 ? 0 : known_gpus[k].cc;
}

gboolean
sp_topo_gpu_grace (const char *gpu_model)
{
  int k = known_gpu (gpu_model);
  return k >= 0 && known_gpus[k].grace;
}

const char *
sp_topo_gpu_model_names (void)
{
  static gsize once = 0;
  static char *names;
  if (g_once_init_enter (&once))
    {
      GString *s = g_string_new (NULL);
      for (guint i = 0; i < G_N_ELEMENTS (known_gpus); i++)
        g_string_append_printf (s, "%s%s", i ? ", " : "", known_gpus[i].name);
      names = g_string_free (s, FALSE);
      g_once_init_leave (&once, 1);
    }
  return names;
}

double
sp_topo_spec_memory_bandwidth_gbs (const SpTopoSpec *spec)
{
  g_return_val_if_fail (spec != NULL, SP_TOPO_MEMORY_BANDWIDTH_FALLBACK_GBS);
  if (spec->gpu_memory_bandwidth_gbs > 0)
    return spec->gpu_memory_bandwidth_gbs;
  int k = known_gpu (spec->gpu_model);
  if (k < 0)
    return SP_TOPO_MEMORY_BANDWIDTH_FALLBACK_GBS;
  return known_gpus[k].variant && contains_ci (spec->gpu_model, known_gpus[k].variant)
             ? known_gpus[k].variant_gbs : known_gpus[k].hbm_gbs;
}

guint32
sp_topo_spec_nvlink_domain (const SpTopoSpec *spec)
{
  g_return_val_if_fail (spec != NULL, 1);
  return spec->nvlink_domain ? spec->nvlink_domain : spec->gpus_per_node;
}

const char *
sp_topo_spec_local_fabric (const SpTopoSpec *spec)
{
  g_return_val_if_fail (spec != NULL, "nvlink");
  switch (spec->intra_kind)
    {
    case SP_INTRA_PCIE:
      return "pcie";
    case SP_INTRA_SHM:
      return "shm";
    default:
      return "nvlink";
    }
}

const char *
sp_host_cpu_name (SpHostCpu cpu)
{
  return (guint) cpu < G_N_ELEMENTS (host_cpu_names) ? host_cpu_names[cpu] : NULL;
}

const char *
sp_intra_kind_name (SpIntraKind kind)
{
  return (guint) kind < G_N_ELEMENTS (intra_names) ? intra_names[kind] : NULL;
}

const char *
sp_fabric_name (SpFabric fabric)
{
  return (guint) fabric < G_N_ELEMENTS (fabric_names) ? fabric_names[fabric] : NULL;
}

const char *
sp_transport_name (SpTransport transport)
{
  return (guint) transport < G_N_ELEMENTS (transport_names) ? transport_names[transport] : NULL;
}

static const char *const *
enum_names (SpFieldType type, guint *out_n)
{
  switch (type)
    {
    case SP_FIELD_INTRA:
      *out_n = G_N_ELEMENTS (intra_names);
      return intra_names;
    case SP_FIELD_FABRIC:
      *out_n = G_N_ELEMENTS (fabric_names);
      return fabric_names;
    case SP_FIELD_HOST_CPU:
      *out_n = G_N_ELEMENTS (host_cpu_names);
      return host_cpu_names;
    case SP_FIELD_MNNVL:
      *out_n = G_N_ELEMENTS (mnnvl_names);
      return mnnvl_names;
    case SP_FIELD_NIC_PATH:
      *out_n = G_N_ELEMENTS (nic_path_names);
      return nic_path_names;
    default:
      *out_n = G_N_ELEMENTS (transport_names);
      return transport_names;
    }
}

/* "a, b, c or d" / "a, b, c and d" */
char *
sp_topo_join_words (const char *const *words, guint n, const char *last_sep)
{
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < n; i++)
    {
      if (i > 0)
        g_string_append (s, i + 1 == n ? last_sep : ", ");
      g_string_append (s, words[i]);
    }
  return g_string_free (s, FALSE);
}

char *
sp_topo_field_what (const SpTopoField *f)
{
  return g_strdup_printf ("[%s] %s", f->section, f->key);
}

char *
sp_topo_field_accepts (const SpTopoField *f)
{
  switch (f->type)
    {
    case SP_FIELD_U32:
      return g_strdup_printf ("an integer in [%g, %g]", f->min, f->max);
    case SP_FIELD_DOUBLE:
      return g_strdup_printf ("a number in %c%g, %g]", f->min_open ? '(' : '[', f->min, f->max);
    case SP_FIELD_STRING:
      return g_strdup_printf ("1 to %d bytes of printable UTF-8 text", SP_TOPO_NAME_MAX - 1);
    case SP_FIELD_INTRA:
    case SP_FIELD_FABRIC:
    case SP_FIELD_TRANSPORT:
    case SP_FIELD_HOST_CPU:
    case SP_FIELD_MNNVL:
    case SP_FIELD_NIC_PATH:
      {
        guint n;
        const char *const *names = enum_names (f->type, &n);
        g_autofree char *list = sp_topo_join_words (names, n, " or ");
        return g_strdup_printf ("one of %s", list);
      }
    case SP_FIELD_NCCL_ALGO:
      return g_strdup ("an NCCL_ALGO value (\"Ring,Tree\", \"^NVLS\", "
                       "\"allreduce:tree;allgather:ring\")");
    case SP_FIELD_NCCL_PROTO:
      return g_strdup ("an NCCL_PROTO value (\"Simple\", \"^LL128\", "
                       "\"allreduce:LL,Simple\")");
    case SP_FIELD_NCCL_VERSION:
      return g_strdup ("an NCCL version, MAJOR.MINOR.PATCH or MAJOR.MINOR (\"2.21.5\"), 2.0 "
                       "or later");
    case SP_FIELD_CAL_STD_ERRORS:
      return g_strdup ("'NAME ERROR; …' (\"intra_latency_us 0.29; ll_overhead_us "
                       "undetermined\")");
    case SP_FIELD_CAL_CORRELATIONS:
      return g_strdup ("'NAME NAME R; …' (\"intra_latency_us intra_efficiency -0.63\")");
    }
  g_return_val_if_reached (NULL);
}

/* `text` for a one-line message: control characters as spaces, at most
 * `max` characters (cut at a character, so it stays UTF-8), "…" when cut.
 * For lines of the file and GKeyFile's messages, which quote them. */
char *
sp_topo_excerpt (const char *text, glong max)
{
  g_autofree char *valid = g_utf8_make_valid (text, -1);
  /* C0, DEL and C1 controls (U+0080..U+009F) as spaces */
  GString *clean = g_string_sized_new (strlen (valid));
  for (const char *p = valid; *p; p = g_utf8_next_char (p))
    {
      gunichar c = g_utf8_get_char (p);
      if (c < 0x20 || (c >= 0x7f && c <= 0x9f))
        g_string_append_c (clean, ' ');
      else
        g_string_append_len (clean, p, g_utf8_next_char (p) - p);
    }
  char *s = g_string_free (clean, FALSE);
  if (g_utf8_strlen (s, -1) <= max)
    return s;
  g_autofree char *whole = s;
  g_autofree char *cut = g_utf8_substring (whole, 0, max);
  return g_strconcat (cut, "…", NULL);
}

/* Move a parser's error into `error` as SP_ERROR_INVALID_TOPOLOGY with
 * `prefix` ("topo.ini: ") in front. */
static void
propagate_topo_error (GError **error, GError *local, const char *prefix)
{
  g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY, "%s%s", prefix, local->message);
  g_error_free (local);
}

/* A number for field `f` from `text`, range-checked.  sp_parse_double only
 * knows closed ranges; for (min, max] we parse against [min, max], patch the
 * bracket in its message and reject min itself in the same words. */
static gboolean
parse_number (const SpTopoField *f, const char *text, const char *prefix, double *out_value,
              GError **error)
{
  g_autofree char *what = sp_topo_field_what (f);
  GError *local = NULL;
  if (f->type == SP_FIELD_U32)
    {
      guint64 v;
      if (!sp_parse_u64 (what, text, (guint64) f->min, (guint64) f->max, &v, &local))
        {
          propagate_topo_error (error, local, prefix);
          return FALSE;
        }
      *out_value = (double) v;
      return TRUE;
    }
  double v;
  if (!sp_parse_double (what, text, f->min, f->max, &v, &local))
    {
      if (f->min_open)
        {
          g_autofree char *closed = g_strdup_printf ("[%g, %g]", f->min, f->max);
          g_autofree char *open = g_strdup_printf ("(%g, %g]", f->min, f->max);
          GString *msg = g_string_new (local->message);
          g_string_replace (msg, closed, open, 1);
          g_free (local->message);
          local->message = g_string_free (msg, FALSE);
        }
      propagate_topo_error (error, local, prefix);
      return FALSE;
    }
  if (f->min_open && v <= f->min)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "%s%s %s is out of range: expected a number in (%g, %g]", prefix, what, text,
                   f->min, f->max);
      return FALSE;
    }
  *out_value = v;
  return TRUE;
}

static gboolean
check_string (const SpTopoField *f, const char *text, const char *prefix, GError **error)
{
  g_autofree char *what = sp_topo_field_what (f);
  g_autofree char *accepts = sp_topo_field_accepts (f);
  gsize len = strlen (text);
  if (len == 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY, "%s%s is empty: expected %s",
                   prefix, what, accepts);
      return FALSE;
    }
  gboolean printable = g_utf8_validate (text, -1, NULL);
  for (const char *p = text; printable && *p; p++)
    if ((guchar) *p < 0x20 || *p == 0x7f)
      printable = FALSE;
  if (!printable)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "%s%s contains control characters or invalid UTF-8: expected %s", prefix,
                   what, accepts);
      return FALSE;
    }
  if (g_ascii_isspace (text[0]) || g_ascii_isspace (text[len - 1]))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "%s%s '%s' begins or ends with a space: expected %s", prefix, what, text,
                   accepts);
      return FALSE;
    }
  if (len >= SP_TOPO_NAME_MAX)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "%s%s '%s' is %" G_GSIZE_FORMAT " bytes long: expected %s", prefix, what,
                   text, len, accepts);
      return FALSE;
    }
  return TRUE;
}

/* Store the already-checked text or number of field `f` into `spec`. */
gboolean
sp_topo_parse_field (const SpTopoField *f, const char *text, const char *prefix, SpTopoSpec *spec,
             GError **error)
{
  char *slot = (char *) spec + f->offset;
  switch (f->type)
    {
    case SP_FIELD_U32:
    case SP_FIELD_DOUBLE:
      {
        double v;
        if (!parse_number (f, text, prefix, &v, error))
          return FALSE;
        if (f->type == SP_FIELD_U32)
          *(guint32 *) slot = (guint32) v;
        else
          *(double *) slot = v;
        return TRUE;
      }
    case SP_FIELD_STRING:
      if (!check_string (f, text, prefix, error))
        return FALSE;
      g_strlcpy (slot, text, SP_TOPO_NAME_MAX);
      return TRUE;
    case SP_FIELD_INTRA:
    case SP_FIELD_FABRIC:
    case SP_FIELD_TRANSPORT:
    case SP_FIELD_HOST_CPU:
    case SP_FIELD_MNNVL:
    case SP_FIELD_NIC_PATH:
      {
        guint n;
        const char *const *names = enum_names (f->type, &n);
        for (guint i = 0; i < n; i++)
          if (g_ascii_strcasecmp (text, names[i]) == 0)
            {
              *(int *) slot = (int) i;
              return TRUE;
            }
        for (guint i = 0; f->type == SP_FIELD_TRANSPORT && i < G_N_ELEMENTS (transport_aliases); i++)
          if (g_ascii_strcasecmp (text, transport_aliases[i].alias) == 0)
            {
              *(int *) slot = (int) transport_aliases[i].transport;
              return TRUE;
            }
        g_autofree char *what = sp_topo_field_what (f);
        g_autofree char *accepts = sp_topo_field_accepts (f);
        g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY, "%s%s '%s' is not %s", prefix,
                     what, text, accepts);
        return FALSE;
      }
    case SP_FIELD_NCCL_ALGO:
    case SP_FIELD_NCCL_PROTO:
      {
        g_autofree char *what = sp_topo_field_what (f);
        GError *local = NULL;
        if (!sp_topo_nccl_parse (what, text, f->type == SP_FIELD_NCCL_PROTO, SP_NCCL_STRICT,
                                 (guint8 *) slot, &local))
          {
            propagate_topo_error (error, local, prefix);
            return FALSE;
          }
        return TRUE;
      }
    case SP_FIELD_NCCL_VERSION:
      {
        /* MAJOR.MINOR[.PATCH], each part one or two digits without a
         * leading zero, and nothing else: a code ("22105") or a build
         * suffix ("+cuda12.4") is a log's, not a file's */
        gsize dots = 0, digits = 0;
        gboolean ok = TRUE;
        for (const char *c = text; ok; c++)
          if (*c == '.' || *c == '\0')
            {
              ok = digits > 0 && (*c == '\0' || ++dots <= 2);
              if (*c == '\0')
                break;
              digits = 0;
            }
          else
            ok = g_ascii_isdigit (*c) && digits < 2 && !(digits == 1 && c[-1] == '0')
                 && ++digits;
        int code = ok && dots >= 1 ? sp_topo_nccl_version_code (text) : 0;
        if (code == 0)
          {
            g_autofree char *what = sp_topo_field_what (f);
            g_autofree char *accepts = sp_topo_field_accepts (f);
            g_autofree char *shown = sp_topo_excerpt (text, 64);
            g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY, "%s%s '%s' is not %s", prefix,
                         what, shown, accepts);
            return FALSE;
          }
        *(guint32 *) slot = (guint32) code;
        return TRUE;
      }
    case SP_FIELD_CAL_STD_ERRORS:
    case SP_FIELD_CAL_CORRELATIONS:
      {
        g_autofree char *what = sp_topo_field_what (f);
        GError *local = NULL;
        SpTopoCalErrors *e = (SpTopoCalErrors *) slot;
        if (!(f->type == SP_FIELD_CAL_STD_ERRORS
                  ? sp_topo_cal_parse_std_errors (what, text, e, &local)
                  : sp_topo_cal_parse_correlations (what, text, e, &local)))
          {
            propagate_topo_error (error, local, prefix);
            return FALSE;
          }
        return TRUE;
      }
    }
  g_return_val_if_reached (FALSE);
}

/* Checks that involve more than one key. */
gboolean
sp_topo_check_cross (const SpTopoSpec *spec, const char *prefix, GError **error)
{
  guint64 world = (guint64) spec->nodes * spec->gpus_per_node;
  if (world > TOPO_MAX_WORLD)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "%s[cluster] nodes %u × gpus_per_node %u = %" G_GUINT64_FORMAT
                   " ranks is too many: expected at most %" G_GUINT64_FORMAT " (2^31) ranks",
                   prefix, spec->nodes, spec->gpus_per_node, world, TOPO_MAX_WORLD);
      return FALSE;
    }
  if (spec->nvlink_domain != 0 && spec->nvlink_domain % spec->gpus_per_node != 0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "%s[cluster] nvlink_domain %u is not a multiple of gpus_per_node %u: an "
                   "NVLink domain holds whole hosts (GB200 NVL72: 72 = 18 hosts x 4)",
                   prefix, spec->nvlink_domain, spec->gpus_per_node);
      return FALSE;
    }
  if (spec->nvlink_domain > spec->gpus_per_node && spec->intra_kind != SP_INTRA_NVSWITCH)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "%s[cluster] nvlink_domain %u spans hosts, which needs [intra] kind = "
                   "nvswitch (NVLink switch trays), not %s", prefix, spec->nvlink_domain,
                   sp_intra_kind_name (spec->intra_kind));
      return FALSE;
    }
  gboolean nccl_set = spec->nccl_version != 0, per_coll = FALSE;
  for (guint f = 0; f < SP_TOPO_NCCL_FUNCS; f++)
    {
      nccl_set = nccl_set || spec->nccl_algo_off[f] != 0 || spec->nccl_proto_off[f] != 0;
      per_coll = per_coll || spec->nccl_algo_off[f] != spec->nccl_algo_off[0]
                 || spec->nccl_proto_off[f] != spec->nccl_proto_off[0];
    }
  guint32 v = spec->nccl_version;
  if (per_coll && v != 0 && v < SP_TOPO_NCCL_PER_COLL_VERSION)
    {
      g_autofree char *text = sp_topo_nccl_version_text ((int) v);
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "%s[nccl] algo / proto restrict collectives differently, which NCCL %s "
                   "([nccl] version) cannot: per-collective entries need NCCL 2.24 or later; "
                   "give one list for all collectives", prefix, text);
      return FALSE;
    }
  if (nccl_set && spec->intra_kind == SP_INTRA_SHM)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "%s[nccl] does not apply to [intra] kind = shm: CPU ranks run MPI, not NCCL, "
                   "so its algo, proto and version mean nothing there", prefix);
      return FALSE;
    }
  if (!sp_topo_cal_check (&spec->cal_errors, prefix, error))
    return FALSE;
  if (spec->fabric == SP_FABRIC_SINGLE_SWITCH && spec->oversubscription != 1.0)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "%s[inter] oversubscription %g does not apply to fabric = single-switch: "
                   "expected 1, or fabric = fat-tree or rail", prefix, spec->oversubscription);
      return FALSE;
    }
  return TRUE;
}

/* Every field of a spec built in code, as the parser would check it. */
static gboolean
check_spec (const SpTopoSpec *spec, GError **error)
{
  g_autofree char *prefix = NULL;
  if (memchr (spec->name, '\0', SP_TOPO_NAME_MAX) != NULL && g_utf8_validate (spec->name, -1, NULL))
    prefix = g_strdup_printf ("topology '%s': ", spec->name);
  else
    prefix = g_strdup ("topology: ");
  for (guint i = 0; i < SP_TOPO_N_FIELDS; i++)
    {
      const SpTopoField *f = &sp_topo_fields[i];
      const char *slot = (const char *) spec + f->offset;
      SpTopoSpec scratch = *spec;
      char buf[G_ASCII_DTOSTR_BUF_SIZE];
      switch (f->type)
        {
        case SP_FIELD_U32:
          if (f->need == SP_NEED_ZERO && *(const guint32 *) slot == 0)
            break; /* not given */
          g_snprintf (buf, sizeof buf, "%u", *(const guint32 *) slot);
          if (!sp_topo_parse_field (f, buf, prefix, &scratch, error))
            return FALSE;
          break;
        case SP_FIELD_DOUBLE:
          if (f->need == SP_NEED_UNSET && *(const double *) slot == SP_TOPO_LATENCY_UNSET)
            break; /* not given: the simulator's default */
          if (f->need == SP_NEED_ZERO && *(const double *) slot == 0)
            break; /* not given */
          g_ascii_formatd (buf, sizeof buf, "%.17g", *(const double *) slot);
          if (!sp_topo_parse_field (f, buf, prefix, &scratch, error))
            return FALSE;
          break;
        case SP_FIELD_STRING:
          if (memchr (slot, '\0', SP_TOPO_NAME_MAX) == NULL)
            {
              g_autofree char *what = sp_topo_field_what (f);
              g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                           "%s%s is not NUL-terminated within %d bytes", prefix, what,
                           SP_TOPO_NAME_MAX);
              return FALSE;
            }
          if (!check_string (f, slot, prefix, error))
            return FALSE;
          break;
        case SP_FIELD_INTRA:
        case SP_FIELD_FABRIC:
        case SP_FIELD_TRANSPORT:
        case SP_FIELD_HOST_CPU:
        case SP_FIELD_MNNVL:
        case SP_FIELD_NIC_PATH:
          {
            guint n;
            enum_names (f->type, &n);
            int v = *(const int *) slot;
            if (v < 0 || (guint) v >= n)
              {
                g_autofree char *what = sp_topo_field_what (f);
                g_autofree char *accepts = sp_topo_field_accepts (f);
                g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                             "%s%s value %d is not %s", prefix, what, v, accepts);
                return FALSE;
              }
            break;
          }
        case SP_FIELD_NCCL_ALGO:
        case SP_FIELD_NCCL_PROTO:
        case SP_FIELD_CAL_STD_ERRORS:
        case SP_FIELD_CAL_CORRELATIONS:
          break; /* [nccl] below, both at once; [calibration] in sp_topo_check_cross */
        case SP_FIELD_NCCL_VERSION:
          {
            guint32 v = *(const guint32 *) slot;
            if (v != 0 && (v < 20000 || v > 999999))
              {
                g_autofree char *what = sp_topo_field_what (f);
                g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                             "%s%s code %u is not an NCCL version code of 2.0 or later", prefix,
                             what, v);
                return FALSE;
              }
            break;
          }
        }
    }
  if (!sp_topo_nccl_masks_valid (spec))
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "%s[nccl] masks name an algorithm or protocol NCCL does not have", prefix);
      return FALSE;
    }
  return sp_topo_check_cross (spec, prefix, error);
}

SpTopo *
sp_topo_make (const SpTopoSpec *spec, gboolean has_inter)
{
  SpTopo *topo = g_new0 (SpTopo, 1);
  /* Copy field by field through memcpy of the whole struct, then clear the
   * tails of the name arrays so equal specs are equal bytes too. */
  memcpy (&topo->spec, spec, sizeof *spec);
  gsize n = strlen (spec->name);
  memset (topo->spec.name + n, 0, SP_TOPO_NAME_MAX - n);
  n = strlen (spec->gpu_model);
  memset (topo->spec.gpu_model + n, 0, SP_TOPO_NAME_MAX - n);
  topo->has_inter = has_inter;
  return topo;
}

SpTopo *
sp_topo_new (const SpTopoSpec *spec, GError **error)
{
  g_return_val_if_fail (spec != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);
  if (!check_spec (spec, error))
    return NULL;
  return sp_topo_make (spec, TRUE);
}

void
sp_topo_free (SpTopo *topo)
{
  g_free (topo);
}

const SpTopoSpec *
sp_topo_spec (const SpTopo *topo)
{
  g_return_val_if_fail (topo != NULL, NULL);
  return &topo->spec;
}

guint32
sp_topo_world_size (const SpTopo *topo)
{
  g_return_val_if_fail (topo != NULL, 0);
  return topo->spec.nodes * topo->spec.gpus_per_node;
}

gboolean
sp_topo_has_inter (const SpTopo *topo)
{
  g_return_val_if_fail (topo != NULL, FALSE);
  return topo->has_inter;
}

void
sp_topo_rank_location (const SpTopo *topo, guint32 rank, guint32 *out_node, guint32 *out_local)
{
  g_return_if_fail (topo != NULL);
  g_return_if_fail (rank < sp_topo_world_size (topo));
  if (out_node)
    *out_node = rank / topo->spec.gpus_per_node;
  if (out_local)
    *out_local = rank % topo->spec.gpus_per_node;
}

gboolean
sp_topo_spec_equal (const SpTopoSpec *a, const SpTopoSpec *b)
{
  g_return_val_if_fail (a != NULL && b != NULL, FALSE);
  return strncmp (a->name, b->name, SP_TOPO_NAME_MAX) == 0 && a->nodes == b->nodes
         && a->gpus_per_node == b->gpus_per_node
         && strncmp (a->gpu_model, b->gpu_model, SP_TOPO_NAME_MAX) == 0
         && a->gpu_memory_gib == b->gpu_memory_gib && a->gpu_tflops == b->gpu_tflops
         && a->intra_kind == b->intra_kind && a->intra_bandwidth_gbs == b->intra_bandwidth_gbs
         && a->intra_latency_us == b->intra_latency_us && a->nics_per_node == b->nics_per_node
         && a->nic_gbps == b->nic_gbps && a->inter_latency_us == b->inter_latency_us
         && a->inter_step_floor_us == b->inter_step_floor_us
         && a->inter_inject_copy_us == b->inter_inject_copy_us
         && a->fabric == b->fabric && a->oversubscription == b->oversubscription
         && a->transport == b->transport && a->host_cpu == b->host_cpu
         && a->nvlink_domain == b->nvlink_domain && a->mnnvl == b->mnnvl
         && a->nic_path == b->nic_path
         && a->gpu_memory_bandwidth_gbs == b->gpu_memory_bandwidth_gbs
         && a->cal_intra_efficiency == b->cal_intra_efficiency
         && a->cal_nic_efficiency == b->cal_nic_efficiency
         && memcmp (a->cal_overhead_us, b->cal_overhead_us, sizeof a->cal_overhead_us) == 0
         && sp_topo_cal_errors_equal (&a->cal_errors, &b->cal_errors)
         && memcmp (a->nccl_algo_off, b->nccl_algo_off, sizeof a->nccl_algo_off) == 0
         && memcmp (a->nccl_proto_off, b->nccl_proto_off, sizeof a->nccl_proto_off) == 0
         && a->nccl_version == b->nccl_version;
}

gboolean
sp_topo_spec_calibrated (const SpTopoSpec *spec)
{
  g_return_val_if_fail (spec != NULL, FALSE);
  return spec->cal_intra_efficiency != 0 || spec->cal_nic_efficiency != 0
         || spec->cal_overhead_us[0] != 0 || spec->cal_overhead_us[1] != 0
         || spec->cal_overhead_us[2] != 0 || spec->cal_errors.given != 0
         || spec->cal_errors.residual_sd != 0;
}

SpTopo *
sp_topo_with_nodes (const SpTopo *topo, guint32 nodes, GError **error)
{
  g_return_val_if_fail (topo != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);
  if (nodes > 1 && !topo->has_inter)
    {
      g_set_error (error, SP_ERROR, SP_ERROR_INVALID_TOPOLOGY,
                   "topology '%s' has no [inter] section, so it cannot span %u nodes: "
                   "add [inter] nics_per_node and nic_gbps", topo->spec.name, nodes);
      return NULL;
    }
  SpTopoSpec spec = topo->spec;
  spec.nodes = nodes;
  if (!check_spec (&spec, error))
    return NULL;
  return sp_topo_make (&spec, topo->has_inter);
}

