/* Tests of the topology model: presets, INI parsing and its error
 * messages, round trips through sp_topo_to_ini(), sp_topo_open() and the
 * block layout.  Expected values are hand-derived from the datasheets cited
 * in lib/topo-presets.c and from the ranges documented in topo.h. */
#include "config.h"
#include "shardplan/error.h"
#include "shardplan/topo.h"
#include "testutil.h"

#include <math.h>
#include <string.h>

static char *
fixture (const char *name)
{
  g_autofree char *rel = g_build_filename ("topo", name, NULL);
  return sp_test_fixture (rel);
}

static char *
read_fixture (const char *name, gsize *out_len)
{
  g_autofree char *path = fixture (name);
  char *text = NULL;
  GError *error = NULL;
  ck_assert_msg (g_file_get_contents (path, &text, out_len, &error), "%s: %s", path,
                 error ? error->message : "?");
  return text;
}

/* Load `name` from the fixtures and expect an error with exactly
 * "<path>: <expected>". */
static void
expect_file_error (const char *name, const char *expected)
{
  g_autofree char *path = fixture (name);
  GError *error = NULL;
  SpTopo *topo = sp_topo_load_file (path, &error);
  ck_assert_ptr_null (topo);
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  g_autofree char *want = g_strdup_printf ("%s: %s", path, expected);
  ck_assert_str_eq (error->message, want);
  ck_assert_ptr_null (strchr (error->message, '\n'));
  g_error_free (error);
}

/* ---- presets ------------------------------------------------------------ */

typedef struct {
  const char *name;
  guint32 gpus;
  double memory_gib, tflops;
  SpIntraKind kind;
  double intra_gbs;
  guint32 nics;
  double nic_gbps;
  SpFabric fabric;
  guint32 nodes, domain; /* default hosts; GPUs per NVLink domain (0: the host) */
  SpTransport transport;
  SpHostCpu host; /* [cluster] host_cpu where the instance's CPU is not its GPU's default */
} PresetExpect;

/* From the datasheets quoted in lib/topo-presets.c: NVLink bandwidth halved
 * from the vendors' bidirectional figure, bf16 dense peak. */
static const PresetExpect preset_expect[] = {
  { "dgx-a100", 8, 80, 312, SP_INTRA_NVSWITCH, 600.0 / 2, 8, 200, SP_FABRIC_RAIL, 1, 0, SP_TRANSPORT_IB,
    SP_HOST_CPU_DEFAULT },
  { "dgx-h100", 8, 80, 1979.0 / 2 - 0.5, SP_INTRA_NVSWITCH, 900.0 / 2, 8, 400, SP_FABRIC_RAIL, 1, 0,
    SP_TRANSPORT_IB, SP_HOST_CPU_DEFAULT },
  /* DGX H200: 1,128 GB over 8 GPUs, H100's bf16 peak and NVLink */
  { "dgx-h200", 8, 1128.0 / 8, 1979.0 / 2 - 0.5, SP_INTRA_NVSWITCH, 900.0 / 2, 8, 400, SP_FABRIC_RAIL,
    1, 0, SP_TRANSPORT_IB, SP_HOST_CPU_DEFAULT },
  /* DGX B200: 1,440 GB over 8 GPUs, HGX B200's 36 PFLOPS sparse bf16 for 8,
   * 14.4 TB/s aggregate NVLink bidirectional */
  { "dgx-b200", 8, 1440.0 / 8, 36000.0 / 8 / 2, SP_INTRA_NVSWITCH, 14400.0 / 8 / 2, 8, 400,
    SP_FABRIC_RAIL, 1, 0, SP_TRANSPORT_IB, SP_HOST_CPU_DEFAULT },
  { "p4d", 8, 320.0 / 8, 312, SP_INTRA_NVSWITCH, 600.0 / 2, 4, 400.0 / 4, SP_FABRIC_FAT_TREE, 1, 0,
    SP_TRANSPORT_EFA, SP_HOST_CPU_INTEL },
  { "p5", 8, 640.0 / 8, 989, SP_INTRA_NVSWITCH, 900.0 / 2, 32, 3200.0 / 32, SP_FABRIC_FAT_TREE, 1,
    0, SP_TRANSPORT_EFA, SP_HOST_CPU_AMD },
  /* p5en: 1,128 GB, 3200 Gbps over 16 cards of 200 */
  { "p5en", 8, 1128.0 / 8, 989, SP_INTRA_NVSWITCH, 900.0 / 2, 16, 3200.0 / 16, SP_FABRIC_FAT_TREE, 1,
    0, SP_TRANSPORT_EFA, SP_HOST_CPU_DEFAULT },
  { "p3dn", 8, 256.0 / 8, 125, SP_INTRA_NVLINK, 6 * 25, 1, 100, SP_FABRIC_FAT_TREE, 1, 0,
    SP_TRANSPORT_EFA, SP_HOST_CPU_DEFAULT },
  /* GB200 NVL72: 1.8 TB/s bidirectional per GPU, 186 GB, 2.5 PFLOP/s dense
   * bf16, 18 trays of 4 in one 72-GPU domain, one 400 Gb/s NIC per GPU */
  { "gb200-nvl72", 4, 186, 2500, SP_INTRA_NVSWITCH, 1800.0 / 2, 4, 400, SP_FABRIC_RAIL, 18, 72,
    SP_TRANSPORT_IB, SP_HOST_CPU_DEFAULT },
  { "gb200-nvl36", 4, 186, 2500, SP_INTRA_NVSWITCH, 1800.0 / 2, 4, 400, SP_FABRIC_RAIL, 9, 36,
    SP_TRANSPORT_IB, SP_HOST_CPU_DEFAULT },
  { "gb300-nvl72", 4, 288, 2500, SP_INTRA_NVSWITCH, 1800.0 / 2, 4, 800, SP_FABRIC_RAIL, 18, 72,
    SP_TRANSPORT_IB, SP_HOST_CPU_DEFAULT },
  { "cpu-shm", 4, 4, 0.096, SP_INTRA_SHM, 10, 1, 10, SP_FABRIC_SINGLE_SWITCH, 1, 0,
    SP_TRANSPORT_TCP, SP_HOST_CPU_DEFAULT },
};

START_TEST (test_preset_values)
{
  const PresetExpect *e = &preset_expect[_i];
  GError *error = NULL;
  g_autoptr (SpTopo) topo = sp_topo_new_preset (e->name, 0, &error);
  SP_ASSERT_NO_ERROR (error);
  const SpTopoSpec *s = sp_topo_spec (topo);
  ck_assert_str_eq (s->name, e->name);
  ck_assert_uint_eq (s->nodes, e->nodes);
  ck_assert_uint_eq (s->nvlink_domain, e->domain);
  ck_assert_int_eq (s->transport, e->transport);
  ck_assert_uint_eq (s->gpus_per_node, e->gpus);
  ck_assert_uint_eq (sp_topo_world_size (topo), e->gpus * e->nodes);
  ck_assert_double_eq (s->gpu_memory_gib, e->memory_gib);
  ck_assert_double_eq (s->gpu_tflops, e->tflops);
  ck_assert_int_eq (s->intra_kind, e->kind);
  ck_assert_double_eq (s->intra_bandwidth_gbs, e->intra_gbs);
  ck_assert_uint_eq (s->nics_per_node, e->nics);
  ck_assert_double_eq (s->nic_gbps, e->nic_gbps);
  ck_assert_int_eq (s->fabric, e->fabric);
  ck_assert_int_eq (s->host_cpu, e->host);
  ck_assert_double_eq (s->oversubscription, 1);
  ck_assert (sp_topo_has_inter (topo));
  ck_assert_ptr_nonnull (sp_topo_preset_description (e->name));
}
END_TEST

START_TEST (test_preset_list)
{
  const char *const *names = sp_topo_preset_names ();
  guint n = 0;
  for (; names[n]; n++)
    ck_assert_str_eq (names[n], preset_expect[n].name);
  ck_assert_uint_eq (n, G_N_ELEMENTS (preset_expect));
  ck_assert_ptr_null (sp_topo_preset_description ("dgx-z100"));
  GError *error = NULL;
  ck_assert_ptr_null (sp_topo_new_preset ("dgx-z100", 0, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  ck_assert_str_eq (error->message, "unknown topology preset 'dgx-z100' (did you mean dgx-a100?): "
                                    "expected one of "
                                    "dgx-a100, dgx-h100, dgx-h200, dgx-b200, p4d, p5, p5en, p3dn, gb200-nvl72, "
                                    "gb200-nvl36, gb300-nvl72, cpu-shm");
  g_error_free (error);
}
END_TEST

/* Every preset, at 1 and 16 nodes, survives to_ini → load_data unchanged. */
START_TEST (test_preset_round_trip)
{
  const char *name = preset_expect[_i].name;
  const guint32 node_counts[] = { 0, 16 };
  for (guint k = 0; k < G_N_ELEMENTS (node_counts); k++)
    {
      GError *error = NULL;
      g_autoptr (SpTopo) topo = sp_topo_new_preset (name, node_counts[k], &error);
      SP_ASSERT_NO_ERROR (error);
      g_autofree char *ini = sp_topo_to_ini (topo);
      g_autoptr (SpTopo) back = sp_topo_load_data (ini, -1, name, &error);
      SP_ASSERT_NO_ERROR (error);
      ck_assert_msg (sp_topo_spec_equal (sp_topo_spec (topo), sp_topo_spec (back)),
                     "%s did not round-trip:\n%s", name, ini);
      ck_assert_int_eq (memcmp (sp_topo_spec (topo), sp_topo_spec (back), sizeof (SpTopoSpec)), 0);
      ck_assert (sp_topo_has_inter (back));
      /* and the text is stable */
      g_autofree char *again = sp_topo_to_ini (back);
      ck_assert_str_eq (ini, again);
    }
}
END_TEST

START_TEST (test_preset_nodes)
{
  GError *error = NULL;
  g_autoptr (SpTopo) big = sp_topo_new_preset ("dgx-h100", 16777216, &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert_uint_eq (sp_topo_world_size (big), 16777216u * 8);
  ck_assert_ptr_null (sp_topo_new_preset ("p5", 16777217, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  ck_assert_str_eq (error->message, "topology 'p5': [cluster] nodes 16777217 is out of range: "
                                    "expected an integer in [1, 16777216]");
  g_clear_error (&error);
}
END_TEST

/* ---- INI files ---------------------------------------------------------- */

START_TEST (test_valid_file)
{
  g_autofree char *path = fixture ("valid.ini");
  GError *error = NULL;
  g_autoptr (SpTopo) topo = sp_topo_load_file (path, &error);
  SP_ASSERT_NO_ERROR (error);
  const SpTopoSpec *s = sp_topo_spec (topo);
  ck_assert_str_eq (s->name, "test-cluster");
  ck_assert_uint_eq (s->nodes, 4);
  ck_assert_uint_eq (s->gpus_per_node, 8);
  ck_assert_uint_eq (sp_topo_world_size (topo), 32);
  ck_assert_str_eq (s->gpu_model, "H100-SXM5-80GB");
  ck_assert_double_eq (s->gpu_memory_gib, 79.5);
  ck_assert_double_eq (s->gpu_memory_bandwidth_gbs, 3350.5);
  ck_assert_double_eq (s->gpu_tflops, 989.5);
  ck_assert_int_eq (s->intra_kind, SP_INTRA_NVSWITCH);
  ck_assert_double_eq (s->intra_bandwidth_gbs, 450);
  ck_assert_double_eq (s->intra_latency_us, 0.75);
  ck_assert_uint_eq (s->nics_per_node, 8);
  ck_assert_double_eq (s->nic_gbps, 400);
  ck_assert_double_eq (s->inter_latency_us, 2.5);
  ck_assert_int_eq (s->fabric, SP_FABRIC_FAT_TREE);
  ck_assert_double_eq (s->oversubscription, 2);
  ck_assert (sp_topo_has_inter (topo));

  g_autofree char *ini = sp_topo_to_ini (topo);
  g_autoptr (SpTopo) back = sp_topo_load_data (ini, -1, "round-trip", &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert (sp_topo_spec_equal (s, sp_topo_spec (back)));
}
END_TEST

/* A single node may leave out [inter]; such a topology cannot grow. */
START_TEST (test_single_node_without_inter)
{
  g_autofree char *path = fixture ("valid-1node.ini");
  GError *error = NULL;
  g_autoptr (SpTopo) topo = sp_topo_load_file (path, &error);
  SP_ASSERT_NO_ERROR (error);
  const SpTopoSpec *s = sp_topo_spec (topo);
  ck_assert_str_eq (s->name, "custom");
  ck_assert_int_eq (s->intra_kind, SP_INTRA_PCIE);
  ck_assert_double_eq (s->gpu_tflops, 364.25);
  ck_assert (!sp_topo_has_inter (topo));

  g_autofree char *ini = sp_topo_to_ini (topo);
  ck_assert_ptr_null (strstr (ini, "[inter]"));
  g_autoptr (SpTopo) back = sp_topo_load_data (ini, -1, "round-trip", &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert (sp_topo_spec_equal (s, sp_topo_spec (back)));
  ck_assert (!sp_topo_has_inter (back));

  g_autoptr (SpTopo) same = sp_topo_with_nodes (topo, 1, &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert_ptr_null (sp_topo_with_nodes (topo, 2, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  ck_assert_str_eq (error->message, "topology 'custom' has no [inter] section, so it cannot span "
                                    "2 nodes: add [inter] nics_per_node and nic_gbps");
  g_clear_error (&error);
  ck_assert_ptr_null (sp_topo_open (path, 2, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  g_clear_error (&error);
}
END_TEST

/* A file with datasheet numbers only: no latency, no transport, no
 * efficiency.  It loads; latencies are left to the simulator, the
 * transport is ib, the host CPU the generation's default; each given value
 * overrides, and a round trip keeps "not given" not given. */
START_TEST (test_datasheet_only)
{
  g_autofree char *path = fixture ("datasheet-only.ini");
  GError *error = NULL;
  g_autoptr (SpTopo) t = sp_topo_load_file (path, &error);
  SP_ASSERT_NO_ERROR (error);
  const SpTopoSpec *s = sp_topo_spec (t);
  ck_assert (s->intra_latency_us == SP_TOPO_LATENCY_UNSET);
  ck_assert (s->inter_latency_us == SP_TOPO_LATENCY_UNSET);
  ck_assert (s->inter_step_floor_us == SP_TOPO_LATENCY_UNSET);
  ck_assert (s->inter_inject_copy_us == SP_TOPO_LATENCY_UNSET);
  ck_assert_int_eq (s->transport, SP_TRANSPORT_IB);
  ck_assert_int_eq (s->host_cpu, SP_HOST_CPU_DEFAULT);
  g_autofree char *ini = sp_topo_to_ini (t);
  ck_assert_ptr_null (strstr (ini, "latency_us="));
  ck_assert_ptr_null (strstr (ini, "step_floor_us"));
  ck_assert_ptr_null (strstr (ini, "inject_copy_us"));
  ck_assert_ptr_null (strstr (ini, "host_cpu"));
  g_autoptr (SpTopo) back = sp_topo_load_data (ini, -1, "back", &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert (sp_topo_spec_equal (s, sp_topo_spec (back)));

  static const char *const transports[] = { "ib", "roce", "efa", "slingshot", "tcp" };
  g_autofree char *text = read_fixture ("datasheet-only.ini", NULL);
  for (guint i = 0; i < G_N_ELEMENTS (transports); i++)
    {
      g_autofree char *with = g_strdup_printf ("%s\ntransport = %s\nlatency_us = 4.5\n"
                                               "step_floor_us = %s\ninject_copy_us = %s\n"
                                               "[cluster]\nhost_cpu = AMD\n", text,
                                               transports[i], i == 0 ? "0" : "12.5",
                                               i == 1 ? "0" : "1.25");
      g_autoptr (SpTopo) u = sp_topo_load_data (with, -1, "t.ini", &error);
      SP_ASSERT_NO_ERROR (error);
      ck_assert_int_eq (sp_topo_spec (u)->transport, (int) i);
      ck_assert_str_eq (sp_transport_name (sp_topo_spec (u)->transport), transports[i]);
      ck_assert (sp_topo_spec (u)->inter_latency_us == 4.5);
      ck_assert (sp_topo_spec (u)->inter_step_floor_us == (i == 0 ? 0.0 : 12.5));
      ck_assert (sp_topo_spec (u)->inter_inject_copy_us == (i == 1 ? 0.0 : 1.25));
      ck_assert (sp_topo_spec (u)->intra_latency_us == SP_TOPO_LATENCY_UNSET);
      ck_assert_int_eq (sp_topo_spec (u)->host_cpu, SP_HOST_CPU_AMD);
      g_autofree char *out = sp_topo_to_ini (u);
      g_autoptr (SpTopo) again = sp_topo_load_data (out, -1, "again", &error);
      SP_ASSERT_NO_ERROR (error);
      ck_assert (sp_topo_spec_equal (sp_topo_spec (u), sp_topo_spec (again)));
    }
  /* step_floor_us or inject_copy_us out of range or not a number: one
   * line naming it */
  static const char *const bad_floor[] = { "-1", "1e7", "42us", "nan" };
  static const char *const keys[] = { "step_floor_us", "inject_copy_us" };
  for (guint k = 0; k < G_N_ELEMENTS (keys); k++)
    for (guint i = 0; i < G_N_ELEMENTS (bad_floor); i++)
      {
        g_autofree char *with = g_strdup_printf ("%s\n%s = %s\n", text, keys[k], bad_floor[i]);
        g_autofree char *prefix = g_strdup_printf ("t.ini: [inter] %s ", keys[k]);
        ck_assert_ptr_null (sp_topo_load_data (with, -1, "t.ini", &error));
        SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
        ck_assert_msg (g_str_has_prefix (error->message, prefix), "%s", error->message);
        ck_assert_msg (strstr (error->message, bad_floor[i]) != NULL, "%s", error->message);
        ck_assert_ptr_null (strchr (error->message, '\n'));
        g_clear_error (&error);
      }
  /* other spellings read as the name they stand for, and written back
   * under that name */
  static const struct { const char *alias; SpTransport t; } aliases[] = {
    { "InfiniBand", SP_TRANSPORT_IB }, { "rocev2", SP_TRANSPORT_ROCE },
    { "Socket", SP_TRANSPORT_TCP }, { "sockets", SP_TRANSPORT_TCP },
  };
  for (guint i = 0; i < G_N_ELEMENTS (aliases); i++)
    {
      g_autofree char *with = g_strdup_printf ("%s\ntransport = %s\n", text, aliases[i].alias);
      g_autoptr (SpTopo) u = sp_topo_load_data (with, -1, "t.ini", &error);
      SP_ASSERT_NO_ERROR (error);
      ck_assert_int_eq (sp_topo_spec (u)->transport, aliases[i].t);
      g_autofree char *out = sp_topo_to_ini (u);
      g_autofree char *want = g_strdup_printf ("transport=%s\n", sp_transport_name (aliases[i].t));
      ck_assert_msg (strstr (out, want) != NULL, "%s", out);
    }
  ck_assert_ptr_null (sp_transport_name ((SpTransport) 5));
  ck_assert_str_eq (sp_host_cpu_name (SP_HOST_CPU_ARM), "arm");
  ck_assert_ptr_null (sp_host_cpu_name ((SpHostCpu) 4));

  /* [inter] nic_path: nvidia-smi topo -m's words, any case, kept by a
   * round trip and written only when given */
  ck_assert_int_eq (s->nic_path, SP_NIC_PATH_DEFAULT);
  ck_assert_ptr_null (strstr (ini, "nic_path"));
  static const char *const paths[] = { "pix", "PXB", "phb", "Node", "sys" };
  for (guint i = 0; i < G_N_ELEMENTS (paths); i++)
    {
      g_autofree char *with = g_strdup_printf ("%s\nnic_path = %s\n", text, paths[i]);
      g_autoptr (SpTopo) u = sp_topo_load_data (with, -1, "p.ini", &error);
      SP_ASSERT_NO_ERROR (error);
      ck_assert_int_eq (sp_topo_spec (u)->nic_path, (int) (SP_NIC_PATH_PIX + i));
      g_autofree char *out = sp_topo_to_ini (u);
      g_autofree char *line = g_ascii_strdown (paths[i], -1);
      g_autofree char *want = g_strdup_printf ("nic_path=%s\n", line);
      ck_assert_ptr_nonnull (strstr (out, want));
      g_autoptr (SpTopo) again = sp_topo_load_data (out, -1, "again", &error);
      SP_ASSERT_NO_ERROR (error);
      ck_assert (sp_topo_spec_equal (sp_topo_spec (u), sp_topo_spec (again)));
    }
  g_autofree char *bad = g_strdup_printf ("%s\nnic_path = pcie\n", text);
  ck_assert_ptr_null (sp_topo_load_data (bad, -1, "bad.ini", &error));
  ck_assert_str_eq (error->message, "bad.ini: [inter] nic_path 'pcie' is not one of default, pix, "
                                    "pxb, phb, node or sys");
  g_clear_error (&error);
  ck_assert_str_eq (sp_nic_path_name (SP_NIC_PATH_SYS), "sys");
  ck_assert_ptr_null (sp_nic_path_name ((SpNicPath) 6));
}
END_TEST

/* The fixture files, each with the whole message it must produce. */
START_TEST (test_bad_fixtures)
{
  expect_file_error ("nodes-zero.ini",
                     "[cluster] nodes 0 is out of range: expected an integer in [1, 16777216]");
  expect_file_error ("bandwidth-negative.ini",
                     "[intra] bandwidth_gbs -5 is out of range: expected a number in (0, 100000]");
  expect_file_error ("tflops-not-a-number.ini",
                     "[gpu] tflops 'fast' is not a finite number: expected a number in (0, 1e+06]");
  expect_file_error ("nics-overflow.ini", "[inter] nics_per_node '99999999999999999999' is too "
                                          "large: expected an integer in [1, 1024]");
  expect_file_error ("missing-gpus-per-node.ini",
                     "[cluster] gpus_per_node is missing: expected an integer in [1, 1024]");
  expect_file_error ("bad-transport.ini",
                     "[inter] transport 'omnipath' is not one of ib, roce, efa, slingshot or tcp");
  expect_file_error ("misspelt-key.ini",
                     "unknown key 'gpu_per_node' in [cluster] (did you mean gpus_per_node?): "
                     "expected name, nodes, gpus_per_node, host_cpu, nvlink_domain or mnnvl");
  expect_file_error ("unknown-section.ini",
                     "unknown section [intra-node]: expected [cluster], [gpu], [intra], [inter], "
                     "[calibration] or [nccl]");
  expect_file_error ("bad-kind.ini",
                     "[intra] kind 'nvswich' is not one of nvswitch, nvlink, pcie or shm");
  expect_file_error ("missing-inter-section.ini",
                     "[inter] section is missing: it is required when nodes > 1 (nodes = 4)");
  expect_file_error ("world-overflow.ini",
                     "[cluster] nodes 16777216 × gpus_per_node 1024 = 17179869184 ranks is too "
                     "many: expected at most 2147483648 (2^31) ranks");
  expect_file_error ("empty.ini", "the file is empty: expected a topology INI with [cluster], "
                                  "[gpu] and [intra] sections");
  expect_file_error ("comments-only.ini", "no sections: expected a topology INI with [cluster], "
                                          "[gpu] and [intra] sections");
  /* binary.ini starts 1f 8b 08 00: the first NUL is at offset 3 */
  expect_file_error ("binary.ini",
                     "not a text file (byte 0x00 at offset 3): expected a topology INI file");
}
END_TEST

static char *edit_ini (const char *text, const char *section, const char *key,
                       const char *value);

/* truncated.ini stops inside "[intra": GKeyFile's own (localised) message
 * follows our prefix. */
START_TEST (test_truncated)
{
  g_autofree char *path = fixture ("truncated.ini");
  GError *error = NULL;
  ck_assert_ptr_null (sp_topo_load_file (path, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  /* cut inside a section header: the line and what it is not */
  g_autofree char *want = g_strdup_printf ("%s: line 14: '[int' is not a key = value pair, a "
                                           "[section] or a comment (# or ;)", path);
  ck_assert_str_eq (error->message, want);
  g_clear_error (&error);

  /* A valid file cut short by `length` (mid-key) is caught the same way,
   * and one cut at a line end reports the first missing key. */
  gsize len;
  g_autofree char *text = read_fixture ("valid.ini", &len);
  const char *cut = strstr (text, "gpus_per_node");
  ck_assert_ptr_nonnull (cut);
  ck_assert_ptr_null (sp_topo_load_data (text, cut - text + 4, "cut.ini", &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  ck_assert_msg (g_str_has_prefix (error->message, "cut.ini: line ")
                 && g_str_has_suffix (error->message, ": 'gpus' is not a key = value pair, a "
                                      "[section] or a comment (# or ;)"), "%s", error->message);
  g_clear_error (&error);
  ck_assert_ptr_null (sp_topo_load_data (text, cut - text, "cut.ini", &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  ck_assert_str_eq (error->message, "cut.ini: [gpu] section is missing: expected model, "
                                    "memory_gib and tflops");
  g_clear_error (&error);
}
END_TEST

/* GKeyFile keeps the last of two equal keys silently; the reader refuses
 * a key given twice in a section (also across two appearances of it, which
 * GKeyFile merges) and a line that is no key = value pair, naming the
 * line. */
START_TEST (test_duplicates_and_bare_lines)
{
  g_autofree char *text = read_fixture ("valid.ini", NULL);
  const char *cases[][2] = {
    { "\n[inter]\nnic_gbps = 400\n", "[inter] nic_gbps is given twice (first on line " },
    { "\nnic_gbps = 200\n", "] nic_gbps is given twice (first on line " },
    { "\nnic_gbps\n", "'nic_gbps' is not a key = value pair, a [section] or a comment (# or ;)" },
    { "\n[inter\n", "'[inter' is not a key = value pair" },
    { "\n[]\n", "'[]' is not a key = value pair" },
    { "\n= 1\n", "'= 1' is not a key = value pair" },
    /* GKeyFile's localized key: stored apart, never read */
    { "\nnic_gbps[de] = 100\n", "key 'nic_gbps[de]': a topology key has no [locale] suffix" },
    /* cut at 64 characters, not bytes: the message stays UTF-8 */
    { "\naaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaéééé\n",
      "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaé…' is not" },
  };
  guint n_lines = 1;
  for (const char *c = text; *c; c++)
    n_lines += *c == '\n';
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *edited = g_strconcat (text, cases[i][0], NULL);
      GError *error = NULL;
      ck_assert_ptr_null (sp_topo_load_data (edited, -1, "t.ini", &error));
      SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
      ck_assert_msg (g_str_has_prefix (error->message, "t.ini: line "), "%s", error->message);
      ck_assert_msg (strstr (error->message, cases[i][1]) != NULL, "%s", error->message);
      ck_assert (g_utf8_validate (error->message, -1, NULL));
      /* the line named is the appended one, past the fixture's own */
      guint line = (guint) g_ascii_strtoull (error->message + strlen ("t.ini: line "), NULL, 10);
      ck_assert_msg (line >= n_lines && line <= n_lines + 2, "line %u of %u: %s", line, n_lines,
                     error->message);
      g_clear_error (&error);
    }
  /* comments, blank lines and indentation stay accepted, and so does a
   * section appearing again with new keys */
  g_autofree char *commented = g_strconcat ("# a comment\n\n", text, "\n  # indented\n"
                                            "[inter]\ntransport = roce\n", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (SpTopo) topo = sp_topo_load_data (commented, -1, "t.ini", &error);
  ck_assert_msg (topo != NULL, "%s", error ? error->message : "");
  ck_assert_int_eq (sp_topo_spec (topo)->transport, SP_TRANSPORT_ROCE);
  /* a UTF-8 byte order mark before the first section is no content */
  g_autofree char *bom = g_strconcat ("\xEF\xBB\xBF", text, NULL);
  g_autoptr (SpTopo) with_bom = sp_topo_load_data (bom, -1, "t.ini", &error);
  ck_assert_msg (with_bom != NULL, "%s", error ? error->message : "");
  g_autoptr (SpTopo) plain = sp_topo_load_data (text, -1, "t.ini", &error);
  ck_assert (plain != NULL);
  ck_assert_int_eq (sp_topo_spec (with_bom)->nodes, sp_topo_spec (plain)->nodes);
  ck_assert_str_eq (sp_topo_spec (with_bom)->name, sp_topo_spec (plain)->name);
  /* ';' comments as most INI dialects write them (Python's configparser),
   * indented too (a stray carriage return included), and one that hides a
   * key: the same topology as without them, the hidden key not read */
  g_autofree char *semi = g_strconcat ("; a comment\n", text, "\n  ; indented\n\t;tab\n"
                                       "\r; after a carriage return\n[inter]\n;transport = tcp\n",
                                       NULL);
  g_autoptr (SpTopo) with_semi = sp_topo_load_data (semi, -1, "t.ini", &error);
  ck_assert_msg (with_semi != NULL, "%s", error ? error->message : "");
  ck_assert (sp_topo_spec_equal (sp_topo_spec (with_semi), sp_topo_spec (plain)));
  /* a comment after a value of the datasheet sections: dropped, so the GPU
   * named before it is the GPU (it once read "L40S ; replaces the A100
   * nodes" as an A100) and a number is the number; not inside a word */
  static const struct {
    const char *tail;
    gboolean ok;
  } tails[] = {
    { "[inter]\ntransport = roce ; comment\n", TRUE },
    { "[inter]\ntransport = roce\t# comment\r\n", TRUE },
    { "[cluster]\nnodes = 3 # again\n", FALSE }, /* given twice: still refused */
    { "[inter]\ntransport = roce#x\n", FALSE },
    /* [calibration] and [nccl] values are ';' lists: no comment there */
    { "[calibration]\nnic_efficiency = 0.9 # fitted\n", FALSE },
  };
  for (guint i = 0; i < G_N_ELEMENTS (tails); i++)
    {
      g_autofree char *t = g_strconcat (text, "\n", tails[i].tail, NULL);
      g_autoptr (SpTopo) tt = sp_topo_load_data (t, -1, "t.ini", &error);
      ck_assert_msg ((tt != NULL) == tails[i].ok, "%s: %s", tails[i].tail,
                     error ? error->message : "loaded");
      if (tt != NULL && i < 2)
        ck_assert_int_eq (sp_topo_spec (tt)->transport, SP_TRANSPORT_ROCE);
      g_clear_error (&error);
    }
  g_autofree char *gddr = edit_ini (text, "gpu", "memory_bandwidth_gbs", "864 # GDDR6");
  g_autoptr (SpTopo) tg = sp_topo_load_data (gddr, -1, "t.ini", &error);
  ck_assert_msg (tg != NULL, "%s", error ? error->message : "");
  ck_assert (sp_topo_spec (tg)->gpu_memory_bandwidth_gbs == 864);
  g_autofree char *l40s = edit_ini (text, "gpu", "model",
                                         "NVIDIA L40S ; replaces the A100 nodes");
  g_autoptr (SpTopo) tl = sp_topo_load_data (l40s, -1, "t.ini", &error);
  ck_assert_msg (tl != NULL, "%s", error ? error->message : "");
  ck_assert_str_eq (sp_topo_spec (tl)->gpu_model, "NVIDIA L40S");
  ck_assert_uint_eq (sp_topo_gpu_compute_capability (sp_topo_spec (tl)->gpu_model), 89);
}
END_TEST

/* Replace (or with `value` NULL delete) the line "key = …" of [section] in
 * INI text; fails the test if there is no such line. */
static char *
edit_ini (const char *text, const char *section, const char *key, const char *value)
{
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  GString *out = g_string_new (NULL);
  g_autofree char *header = g_strdup_printf ("[%s]", section);
  g_autofree char *lead = g_strdup_printf ("%s =", key);
  gboolean in_section = FALSE, done = FALSE;
  for (guint i = 0; lines[i]; i++)
    {
      if (lines[i][0] == '[')
        in_section = strcmp (lines[i], header) == 0;
      if (in_section && !done && g_str_has_prefix (lines[i], lead))
        {
          done = TRUE;
          if (value)
            g_string_append_printf (out, "%s = %s\n", key, value);
          continue;
        }
      g_string_append (out, lines[i]);
      if (lines[i + 1])
        g_string_append_c (out, '\n');
    }
  ck_assert_msg (done, "no key %s in [%s]", key, section);
  return g_string_free (out, FALSE);
}

typedef struct {
  const char *section, *key;
} Key;

/* Every key valid.ini has that the parser requires. */
static const Key required_keys[] = {
  { "cluster", "nodes" },      { "cluster", "gpus_per_node" }, { "gpu", "model" },
  { "gpu", "memory_gib" },     { "gpu", "tflops" },            { "intra", "kind" },
  { "intra", "bandwidth_gbs" }, { "inter", "nics_per_node" },  { "inter", "nic_gbps" },
};

START_TEST (test_missing_key)
{
  const Key *k = &required_keys[_i];
  g_autofree char *text = read_fixture ("valid.ini", NULL);
  g_autofree char *edited = edit_ini (text, k->section, k->key, NULL);
  GError *error = NULL;
  ck_assert_ptr_null (sp_topo_load_data (edited, -1, "t.ini", &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  g_autofree char *want = g_strdup_printf ("t.ini: [%s] %s is missing: expected ", k->section, k->key);
  ck_assert_msg (g_str_has_prefix (error->message, want), "%s", error->message);
  g_error_free (error);
}
END_TEST

/* Optional keys take their documented defaults. */
START_TEST (test_defaults)
{
  g_autofree char *text = read_fixture ("valid.ini", NULL);
  g_autofree char *a = edit_ini (text, "cluster", "name", NULL);
  g_autofree char *b = edit_ini (a, "inter", "fabric", NULL);
  g_autofree char *c = edit_ini (b, "inter", "oversubscription", NULL);
  GError *error = NULL;
  g_autoptr (SpTopo) topo = sp_topo_load_data (c, -1, "t.ini", &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert_str_eq (sp_topo_spec (topo)->name, "custom");
  ck_assert_int_eq (sp_topo_spec (topo)->fabric, SP_FABRIC_FAT_TREE);
  ck_assert_double_eq (sp_topo_spec (topo)->oversubscription, 1);
}
END_TEST

typedef struct {
  const char *section, *key, *value;
} BadValue;

/* Zero, negative, non-numeric, overflowing and over-the-top values of
 * every key; the ranges are topo.h's. */
static const BadValue bad_values[] = {
  { "cluster", "nodes", "0" },          { "cluster", "nodes", "-1" },
  { "cluster", "nodes", "four" },       { "cluster", "nodes", "16777217" },
  { "cluster", "nodes", "99999999999999999999" }, { "cluster", "nodes", "4.0" },
  { "cluster", "nodes", "" },           { "cluster", "gpus_per_node", "0" },
  { "cluster", "gpus_per_node", "-8" }, { "cluster", "gpus_per_node", "8.5" },
  { "cluster", "gpus_per_node", "1025" }, { "cluster", "name", "" },
  { "cluster", "name", "a-name-of-sixty-four-bytes-which-is-one-byte-more-than-allowed-x" },
  { "cluster", "name", "two\\nlines" }, { "gpu", "model", "" },
  { "gpu", "memory_gib", "0" },         { "gpu", "memory_gib", "-80" },
  { "gpu", "memory_gib", "80GB" },      { "gpu", "memory_gib", "65537" },
  { "gpu", "memory_gib", "1e999" },     { "gpu", "memory_gib", "nan" },
  { "gpu", "memory_gib", "inf" },       { "gpu", "tflops", "0" },
  { "gpu", "tflops", "-1" },            { "gpu", "tflops", "abc" },
  { "gpu", "tflops", "1000001" },       { "intra", "kind", "" },
  { "intra", "kind", "nvlink3" },       { "intra", "bandwidth_gbs", "0" },
  { "intra", "bandwidth_gbs", "-1" },   { "intra", "bandwidth_gbs", "x" },
  { "intra", "bandwidth_gbs", "100001" }, { "intra", "latency_us", "-0.1" },
  { "intra", "latency_us", "1000001" }, { "intra", "latency_us", "2us" },
  { "inter", "nics_per_node", "0" },    { "inter", "nics_per_node", "-1" },
  { "inter", "nics_per_node", "1025" }, { "inter", "nics_per_node", "eight" },
  { "inter", "nic_gbps", "0" },         { "inter", "nic_gbps", "-400" },
  { "inter", "nic_gbps", "1000001" },   { "inter", "nic_gbps", "400G" },
  { "inter", "latency_us", "-1" },      { "inter", "latency_us", "1e7" },
  { "inter", "latency_us", "abc" },     { "inter", "fabric", "torus" },
  { "inter", "fabric", "" },            { "inter", "oversubscription", "0" },
  { "inter", "oversubscription", "0.5" }, { "inter", "oversubscription", "1025" },
  { "inter", "oversubscription", "-2" }, { "inter", "oversubscription", "two" },
  { "gpu", "memory_bandwidth_gbs", "0" }, { "gpu", "memory_bandwidth_gbs", "-3350" },
  { "gpu", "memory_bandwidth_gbs", "1000001" }, { "gpu", "memory_bandwidth_gbs", "3.35TB" },
};

START_TEST (test_bad_value)
{
  const BadValue *b = &bad_values[_i];
  g_autofree char *text = read_fixture ("valid.ini", NULL);
  g_autofree char *edited = edit_ini (text, b->section, b->key, b->value);
  GError *error = NULL;
  ck_assert_ptr_null (sp_topo_load_data (edited, -1, "t.ini", &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  g_autofree char *want = g_strdup_printf ("t.ini: [%s] %s ", b->section, b->key);
  ck_assert_msg (g_str_has_prefix (error->message, want), "%s = %s: %s", b->key, b->value,
                 error->message);
  /* the bad value is quoted, unless it is empty or has an escape */
  if (b->value[0] != '\0' && strchr (b->value, '\\') == NULL)
    ck_assert_msg (strstr (error->message, b->value) != NULL, "%s", error->message);
  ck_assert_ptr_null (strchr (error->message, '\n'));
  g_error_free (error);
}
END_TEST

/* Edge values that are inside the ranges load. */
START_TEST (test_edge_values)
{
  static const BadValue good[] = {
    { "intra", "latency_us", "0" },      { "inter", "latency_us", "0" },
    { "cluster", "gpus_per_node", "1024" }, { "gpu", "memory_gib", "65536" },
    { "inter", "oversubscription", "1024" }, { "intra", "kind", "NVLink" },
    { "cluster", "name", "a-name-of-sixty-three-bytes-which-is-the-most-a-name-may-have-x" },
    { "gpu", "tflops", "1e-3" },
  };
  g_autofree char *text = read_fixture ("valid.ini", NULL);
  for (guint i = 0; i < G_N_ELEMENTS (good); i++)
    {
      g_autofree char *edited = edit_ini (text, good[i].section, good[i].key, good[i].value);
      GError *error = NULL;
      g_autoptr (SpTopo) topo = sp_topo_load_data (edited, -1, "t.ini", &error);
      SP_ASSERT_NO_ERROR (error);
      g_autofree char *ini = sp_topo_to_ini (topo);
      g_autoptr (SpTopo) back = sp_topo_load_data (ini, -1, "again", &error);
      SP_ASSERT_NO_ERROR (error);
      ck_assert (sp_topo_spec_equal (sp_topo_spec (topo), sp_topo_spec (back)));
    }
}
END_TEST

/* nodes × gpus_per_node may be 2^31 but not more. */
START_TEST (test_world_size_limit)
{
  g_autofree char *text = read_fixture ("valid.ini", NULL);
  g_autofree char *a = edit_ini (text, "cluster", "nodes", "16777216");
  g_autofree char *ok = edit_ini (a, "cluster", "gpus_per_node", "128");
  GError *error = NULL;
  g_autoptr (SpTopo) topo = sp_topo_load_data (ok, -1, "t.ini", &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert_uint_eq (sp_topo_world_size (topo), 2147483648u);
  guint32 node = 0, local = 0;
  sp_topo_rank_location (topo, 2147483647u, &node, &local);
  ck_assert_uint_eq (node, 16777215);
  ck_assert_uint_eq (local, 127);

  g_autofree char *bad = edit_ini (a, "cluster", "gpus_per_node", "129");
  ck_assert_ptr_null (sp_topo_load_data (bad, -1, "t.ini", &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  ck_assert_str_eq (error->message, "t.ini: [cluster] nodes 16777216 × gpus_per_node 129 = "
                                    "2164260864 ranks is too many: expected at most 2147483648 "
                                    "(2^31) ranks");
  g_clear_error (&error);

  /* through sp_topo_with_nodes too: 2^23 × 512 = 2^32 */
  g_autofree char *c = edit_ini (text, "cluster", "gpus_per_node", "512");
  g_autoptr (SpTopo) t512 = sp_topo_load_data (c, -1, "t.ini", &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert_ptr_null (sp_topo_with_nodes (t512, 8388608, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  ck_assert_ptr_nonnull (strstr (error->message, "nodes 8388608 × gpus_per_node 512"));
  g_clear_error (&error);
}
END_TEST

START_TEST (test_oversubscription_single_switch)
{
  g_autofree char *text = read_fixture ("valid.ini", NULL);
  g_autofree char *edited = edit_ini (text, "inter", "fabric", "single-switch");
  GError *error = NULL;
  ck_assert_ptr_null (sp_topo_load_data (edited, -1, "t.ini", &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  ck_assert_str_eq (error->message, "t.ini: [inter] oversubscription 2 does not apply to fabric = "
                                    "single-switch: expected 1, or fabric = fat-tree or rail");
  g_clear_error (&error);
}
END_TEST

START_TEST (test_io_errors)
{
  GError *error = NULL;
  ck_assert_ptr_null (sp_topo_load_file ("/nonexistent/dir/topo.ini", &error));
  SP_ASSERT_ERROR (error, SP_ERROR_IO);
  ck_assert (g_str_has_prefix (error->message,
                               "cannot read topology file '/nonexistent/dir/topo.ini': "));
  g_clear_error (&error);

  g_autoptr (SpTestDir) dir = sp_test_tmpdir ();
  ck_assert_ptr_null (sp_topo_load_file (dir, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_IO);
  g_autofree char *want = g_strdup_printf ("cannot read topology file '%s': it is a directory", dir);
  ck_assert_str_eq (error->message, want);
  g_clear_error (&error);

  /* sp_topo_open() reports the same as bad input */
  ck_assert_ptr_null (sp_topo_open (dir, 0, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  ck_assert_str_eq (error->message, want);
  g_clear_error (&error);

  /* a file over 1 MiB is refused before parsing */
  g_autofree char *big = g_build_filename (dir, "big.ini", NULL);
  g_autofree char *junk = g_strnfill ((1 << 20) + 1, '#');
  ck_assert (g_file_set_contents (big, junk, -1, NULL));
  ck_assert_ptr_null (sp_topo_load_file (big, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  g_clear_error (&error);
}
END_TEST

/* ---- sp_topo_open ------------------------------------------------------- */

START_TEST (test_open)
{
  GError *error = NULL;
  g_autoptr (SpTopo) preset = sp_topo_open ("dgx-a100", 0, &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert_uint_eq (sp_topo_world_size (preset), 8);
  g_autoptr (SpTopo) preset4 = sp_topo_open ("dgx-a100", 4, &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert_uint_eq (sp_topo_spec (preset4)->nodes, 4);
  ck_assert_uint_eq (sp_topo_world_size (preset4), 32);

  g_autofree char *path = fixture ("valid.ini");
  g_autoptr (SpTopo) file = sp_topo_open (path, 0, &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert_uint_eq (sp_topo_spec (file)->nodes, 4);
  g_autoptr (SpTopo) file2 = sp_topo_open (path, 2, &error);
  SP_ASSERT_NO_ERROR (error);
  SpTopoSpec want = *sp_topo_spec (file);
  want.nodes = 2;
  ck_assert (sp_topo_spec_equal (&want, sp_topo_spec (file2)));
  ck_assert_uint_eq (sp_topo_world_size (file2), 16);

  ck_assert_ptr_null (sp_topo_open ("foo", 0, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  ck_assert_str_eq (error->message, "topology 'foo' is neither a file nor a preset (presets: "
                                    "dgx-a100, dgx-h100, dgx-h200, dgx-b200, p4d, p5, p5en, p3dn, gb200-nvl72, "
                                    "gb200-nvl36, gb300-nvl72, cpu-shm)");
  g_clear_error (&error);

  g_autofree char *bad = fixture ("nodes-zero.ini");
  ck_assert_ptr_null (sp_topo_open (bad, 0, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  g_clear_error (&error);
  ck_assert_ptr_null (sp_topo_open ("p5", 16777217, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  g_clear_error (&error);
}
END_TEST

/* ---- sp_topo_new on specs built in code --------------------------------- */

START_TEST (test_new_spec_checks)
{
  GError *error = NULL;
  g_autoptr (SpTopo) base = sp_topo_new_preset ("dgx-h100", 2, &error);
  SP_ASSERT_NO_ERROR (error);
  const SpTopoSpec *ok = sp_topo_spec (base);

  g_autoptr (SpTopo) copy = sp_topo_new (ok, &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert (sp_topo_spec_equal (ok, sp_topo_spec (copy)));

  SpTopoSpec s = *ok;
  s.gpus_per_node = 0;
  ck_assert_ptr_null (sp_topo_new (&s, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  ck_assert_str_eq (error->message, "topology 'dgx-h100': [cluster] gpus_per_node 0 is out of "
                                    "range: expected an integer in [1, 1024]");
  g_clear_error (&error);

  s = *ok;
  s.gpu_tflops = NAN;
  ck_assert_ptr_null (sp_topo_new (&s, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  ck_assert_ptr_nonnull (strstr (error->message, "[gpu] tflops"));
  g_clear_error (&error);

  s = *ok;
  s.nic_gbps = 0;
  ck_assert_ptr_null (sp_topo_new (&s, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  ck_assert_str_eq (error->message, "topology 'dgx-h100': [inter] nic_gbps 0 is out of range: "
                                    "expected a number in (0, 1e+06]");
  g_clear_error (&error);

  s = *ok;
  s.intra_kind = (SpIntraKind) 9;
  ck_assert_ptr_null (sp_topo_new (&s, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  ck_assert_str_eq (error->message, "topology 'dgx-h100': [intra] kind value 9 is not one of "
                                    "nvswitch, nvlink, pcie or shm");
  g_clear_error (&error);

  s = *ok;
  s.fabric = (SpFabric) -1;
  ck_assert_ptr_null (sp_topo_new (&s, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  g_clear_error (&error);

  s = *ok;
  memset (s.name, 'x', sizeof s.name);
  ck_assert_ptr_null (sp_topo_new (&s, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  ck_assert_str_eq (error->message, "topology: [cluster] name is not NUL-terminated within 64 bytes");
  g_clear_error (&error);

  s = *ok;
  s.gpu_model[0] = '\0';
  ck_assert_ptr_null (sp_topo_new (&s, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  ck_assert_str_eq (error->message, "topology 'dgx-h100': [gpu] model is empty: expected 1 to 63 "
                                    "bytes of printable UTF-8 text");
  g_clear_error (&error);

  /* awkward doubles still round-trip through the INI text */
  s = *ok;
  s.intra_latency_us = 0.1 + 0.2;
  s.gpu_tflops = 1.0 / 3.0;
  s.nic_gbps = 123456.78901234567;
  s.oversubscription = 1.000000000000001;
  g_autoptr (SpTopo) odd = sp_topo_new (&s, &error);
  SP_ASSERT_NO_ERROR (error);
  g_autofree char *ini = sp_topo_to_ini (odd);
  g_autoptr (SpTopo) back = sp_topo_load_data (ini, -1, "odd", &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert (sp_topo_spec_equal (&s, sp_topo_spec (back)));
  /* and a plain 0.6 prints as 0.6, not 0.59999999999999998 */
  s = *ok;
  s.intra_latency_us = 0.6;
  g_autoptr (SpTopo) given = sp_topo_new (&s, &error);
  SP_ASSERT_NO_ERROR (error);
  g_autofree char *plain = sp_topo_to_ini (given);
  ck_assert_ptr_nonnull (strstr (plain, "latency_us=0.6\n"));
  /* a latency not given is not written, and reads back not given */
  g_autofree char *unset = sp_topo_to_ini (base);
  ck_assert_ptr_null (strstr (unset, "latency_us="));
  ck_assert_ptr_nonnull (strstr (unset, "transport=ib\n"));
}
END_TEST

/* ---- layout and names ---------------------------------------------------- */

START_TEST (test_rank_location)
{
  GError *error = NULL;
  g_autoptr (SpTopo) topo = sp_topo_new_preset ("dgx-h100", 4, &error);
  SP_ASSERT_NO_ERROR (error);
  static const guint32 cases[][3] = { /* rank, node, local */
    { 0, 0, 0 }, { 7, 0, 7 }, { 8, 1, 0 }, { 13, 1, 5 }, { 31, 3, 7 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      guint32 node = 99, local = 99;
      sp_topo_rank_location (topo, cases[i][0], &node, &local);
      ck_assert_uint_eq (node, cases[i][1]);
      ck_assert_uint_eq (local, cases[i][2]);
    }
  g_autoptr (SpTopo) cpu = sp_topo_new_preset ("cpu-shm", 3, &error);
  SP_ASSERT_NO_ERROR (error);
  guint32 node, local;
  sp_topo_rank_location (cpu, 9, &node, &local);
  ck_assert_uint_eq (node, 2);
  ck_assert_uint_eq (local, 1);
}
END_TEST

START_TEST (test_names)
{
  ck_assert_str_eq (sp_intra_kind_name (SP_INTRA_NVSWITCH), "nvswitch");
  ck_assert_str_eq (sp_intra_kind_name (SP_INTRA_NVLINK), "nvlink");
  ck_assert_str_eq (sp_intra_kind_name (SP_INTRA_PCIE), "pcie");
  ck_assert_str_eq (sp_intra_kind_name (SP_INTRA_SHM), "shm");
  ck_assert_ptr_null (sp_intra_kind_name ((SpIntraKind) 4));
  ck_assert_str_eq (sp_fabric_name (SP_FABRIC_SINGLE_SWITCH), "single-switch");
  ck_assert_str_eq (sp_fabric_name (SP_FABRIC_FAT_TREE), "fat-tree");
  ck_assert_str_eq (sp_fabric_name (SP_FABRIC_RAIL), "rail");
  ck_assert_ptr_null (sp_fabric_name ((SpFabric) 3));
}
END_TEST

/* The example files a user copies load, and dgx-h100-16.ini is the preset
 * at 16 nodes under another name. */
START_TEST (test_examples)
{
  const char *src = g_getenv ("SP_SRCDIR");
  g_autofree char *h100 = g_build_filename (src ? src : SP_SRCDIR, "examples", "dgx-h100-16.ini", NULL);
  g_autofree char *cpu = g_build_filename (src ? src : SP_SRCDIR, "examples", "cpu-shm.ini", NULL);
  GError *error = NULL;
  g_autoptr (SpTopo) t = sp_topo_load_file (h100, &error);
  SP_ASSERT_NO_ERROR (error);
  g_autoptr (SpTopo) p = sp_topo_new_preset ("dgx-h100", 16, &error);
  SP_ASSERT_NO_ERROR (error);
  SpTopoSpec want = *sp_topo_spec (p);
  g_strlcpy (want.name, "dgx-h100-16", sizeof want.name);
  ck_assert (sp_topo_spec_equal (&want, sp_topo_spec (t)));

  g_autoptr (SpTopo) c = sp_topo_load_file (cpu, &error);
  SP_ASSERT_NO_ERROR (error);
  g_autoptr (SpTopo) cp = sp_topo_new_preset ("cpu-shm", 2, &error);
  SP_ASSERT_NO_ERROR (error);
  want = *sp_topo_spec (cp);
  g_strlcpy (want.name, "cpu-shm-2x4", sizeof want.name);
  ck_assert (sp_topo_spec_equal (&want, sp_topo_spec (c)));
}
END_TEST

/* [calibration] (written by `shardplan calibrate`): every key round-trips
 * through sp_topo_to_ini / sp_topo_load_data, an uncalibrated topology
 * writes no such section, and the ranges of topo.h are enforced. */
START_TEST (test_calibration_round_trip)
{
  GError *error = NULL;
  g_autoptr (SpTopo) p = sp_topo_new_preset ("cpu-shm", 1, &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert (!sp_topo_spec_calibrated (sp_topo_spec (p)));
  g_autofree char *plain = sp_topo_to_ini (p);
  ck_assert_ptr_null (strstr (plain, "[calibration]"));

  SpTopoSpec s = *sp_topo_spec (p);
  s.cal_intra_efficiency = 0.3141592653589793;
  s.cal_nic_efficiency = 4;
  s.cal_overhead_us[0] = -1000;
  s.cal_overhead_us[1] = 0.1;
  s.cal_overhead_us[2] = 1e6;
  ck_assert (sp_topo_spec_calibrated (&s));
  g_autoptr (SpTopo) c = sp_topo_new (&s, &error);
  SP_ASSERT_NO_ERROR (error);
  g_autofree char *ini = sp_topo_to_ini (c);
  ck_assert_ptr_nonnull (strstr (ini, "[calibration]\n"));
  ck_assert_ptr_nonnull (strstr (ini, "intra_efficiency=0.3141592653589793\n"));
  ck_assert_ptr_nonnull (strstr (ini, "ll_overhead_us=-1000\n"));
  g_autoptr (SpTopo) back = sp_topo_load_data (ini, -1, "cal.ini", &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert (sp_topo_spec_equal (&s, sp_topo_spec (back)));
  /* one key alone is a calibrated topology; the others read as 0 */
  g_autofree char *one = g_strconcat (plain, "\n[calibration]\nsimple_overhead_us=2.5\n", NULL);
  g_autoptr (SpTopo) o = sp_topo_load_data (one, -1, "one.ini", &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert (sp_topo_spec (o)->cal_overhead_us[2] == 2.5);
  ck_assert (sp_topo_spec (o)->cal_intra_efficiency == 0 && sp_topo_spec (o)->cal_overhead_us[0] == 0);
  ck_assert (sp_topo_spec_calibrated (sp_topo_spec (o)));
  /* spec_equal sees the calibration */
  SpTopoSpec t = s;
  t.cal_overhead_us[1] = 0.2;
  ck_assert (!sp_topo_spec_equal (&s, &t));
}
END_TEST

/* [gpu] memory_bandwidth_gbs: absent = the model's datasheet figure (by
 * name, case-insensitive), given = that number; written back only when
 * given, and sp_topo_spec_equal sees it. */
START_TEST (test_memory_bandwidth)
{
  static const struct {
    const char *model;
    double gbs;
  } by_model[] = {
    { "H100-SXM5-80GB", 3350 }, { "nvidia h200", 4800 }, { "GB200", 8000 }, { "B300", 8000 },
    { "A100-SXM4-80GB", 2039 }, { "A100-SXM4-40GB", 1555 }, { "V100-SXM2-32GB", 900 },
    { "cpu-core", SP_TOPO_MEMORY_BANDWIDTH_FALLBACK_GBS },
    /* every model the simulator knows by name has its own figure (a
     * review found H800, H20, A800 and B100 at the fallback), and the
     * substrings do not catch each other: A800's "80" is not 80 GB, GH200
     * is not an H200, H200 not an H20 */
    { "H800-SXM5-80GB", 3350 }, { "h20", 4000 }, { "A800-SXM4-80GB", 2039 },
    { "A800-SXM4-40GB", 1555 }, { "B100", 8000 }, { "GH200", 4000 }, { "GH200 144GB", 4900 },
    { "H200-SXM-141GB", 4800 },
    /* the PCIe parts: L40S and L40 are not an L4, A10G not an A10, and
     * neither an A100 */
    { "NVIDIA L40S", 864 }, { "L40", 864 }, { "nvidia l4", 300 }, { "A10G", 600 },
    { "NVIDIA A10", 600 }, { "A40", 696 }, { "A30", 933 }, { "Tesla T4", 320 },
    { "Tesla P100-SXM2-16GB", 732 }, { "NVIDIA RTX PRO 6000 Blackwell Server Edition", 1792 },
  };
  GError *error = NULL;
  g_autoptr (SpTopo) p = sp_topo_new_preset ("dgx-h100", 1, &error);
  SP_ASSERT_NO_ERROR (error);
  SpTopoSpec s = *sp_topo_spec (p);
  ck_assert (s.gpu_memory_bandwidth_gbs == 0);
  for (guint i = 0; i < G_N_ELEMENTS (by_model); i++)
    {
      g_strlcpy (s.gpu_model, by_model[i].model, sizeof s.gpu_model);
      ck_assert_msg (sp_topo_spec_memory_bandwidth_gbs (&s) == by_model[i].gbs, "%s: %g",
                     by_model[i].model, sp_topo_spec_memory_bandwidth_gbs (&s));
    }
  g_autofree char *plain = sp_topo_to_ini (p);
  ck_assert_ptr_null (strstr (plain, "memory_bandwidth_gbs"));
  const char *gpu = strstr (plain, "[gpu]\n");
  ck_assert_ptr_nonnull (gpu);
  g_autofree char *given = g_strdup_printf ("%.*s[gpu]\nmemory_bandwidth_gbs = 2900.5\n%s",
                                            (int) (gpu - plain), plain, gpu + strlen ("[gpu]\n"));
  g_autoptr (SpTopo) g = sp_topo_load_data (given, -1, "g.ini", &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert (sp_topo_spec (g)->gpu_memory_bandwidth_gbs == 2900.5);
  ck_assert (sp_topo_spec_memory_bandwidth_gbs (sp_topo_spec (g)) == 2900.5);
  ck_assert (!sp_topo_spec_equal (sp_topo_spec (p), sp_topo_spec (g)));
  g_autofree char *ini = sp_topo_to_ini (g);
  ck_assert_ptr_nonnull (strstr (ini, "memory_bandwidth_gbs=2900.5\n"));
  g_autoptr (SpTopo) back = sp_topo_load_data (ini, -1, "back.ini", &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert (sp_topo_spec_equal (sp_topo_spec (g), sp_topo_spec (back)));
  /* a spec built in code is checked like a file */
  SpTopoSpec bad = *sp_topo_spec (p);
  bad.gpu_memory_bandwidth_gbs = -1;
  ck_assert_ptr_null (sp_topo_new (&bad, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  ck_assert_msg (strstr (error->message, "memory_bandwidth_gbs") != NULL, "%s", error->message);
  g_clear_error (&error);
}
END_TEST

static const struct {
  const char *line;
  const char *message;
} bad_calibration[] = {
  { "intra_efficiency=4.5", "[calibration] intra_efficiency 4.5 is out of range" },
  { "nic_efficiency=-0.1", "[calibration] nic_efficiency -0.1 is out of range" },
  { "ll_overhead_us=-1000.5", "[calibration] ll_overhead_us -1000.5 is out of range" },
  { "simple_overhead_us=2e6", "[calibration] simple_overhead_us 2e6 is out of range" },
  { "ll128_overhead_us=fast", "[calibration] ll128_overhead_us" },
  { "lL_overhead_us=1", "lL_overhead_us" },
};

START_TEST (test_calibration_range_errors)
{
  g_autoptr (SpTopo) p = sp_topo_new_preset ("cpu-shm", 1, NULL);
  g_autofree char *plain = sp_topo_to_ini (p);
  g_autofree char *text = g_strdup_printf ("%s\n[calibration]\n%s\n", plain, bad_calibration[_i].line);
  GError *error = NULL;
  g_autoptr (SpTopo) t = sp_topo_load_data (text, -1, "cal.ini", &error);
  ck_assert_ptr_null (t);
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  ck_assert_msg (strstr (error->message, bad_calibration[_i].message) != NULL, "%s", error->message);
  ck_assert_ptr_null (strchr (error->message, '\n'));
  g_clear_error (&error);
  /* and the same ranges through sp_topo_new */
  SpTopoSpec s = *sp_topo_spec (p);
  s.cal_intra_efficiency = 4.5;
  ck_assert_ptr_null (sp_topo_new (&s, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  g_clear_error (&error);
}
END_TEST

/* [calibration] std_errors, correlations, residual_sd: what calibrate's
 * fit determined, read back exactly as written (undetermined included),
 * and a hostile file refused with the bad name or number named: the
 * correlations must be those of some set of values. */
START_TEST (test_calibration_errors_round_trip)
{
  GError *error = NULL;
  g_autoptr (SpTopo) p = sp_topo_new_preset ("dgx-h100", 2, &error);
  SP_ASSERT_NO_ERROR (error);
  SpTopoSpec s = *sp_topo_spec (p);
  ck_assert_str_eq (sp_topo_cal_param_key (0), "intra_latency_us");
  ck_assert_str_eq (sp_topo_cal_param_key (SP_TOPO_CAL_PARAMS - 1), "simple_overhead_us");
  ck_assert_ptr_null (sp_topo_cal_param_key (SP_TOPO_CAL_PARAMS));
  SpTopoCalErrors *e = &s.cal_errors;
  e->given = 1 << 0 | 1 << 3 | 1 << 4 | 1 << 6;
  e->std_error[0] = 0.1234567890123;
  e->std_error[3] = 0.005;
  e->std_error[4] = INFINITY; /* undetermined */
  e->std_error[6] = 5755.973410468583;
  e->corr[0][0] = e->corr[3][3] = e->corr[6][6] = 1;
  e->corr[0][6] = e->corr[6][0] = -0.9999999540770992;
  e->corr[0][3] = e->corr[3][0] = 0.02;
  e->corr[3][6] = e->corr[6][3] = -0.02000001;
  e->residual_sd = 0.015;
  ck_assert (sp_topo_spec_calibrated (&s));
  g_autoptr (SpTopo) c = sp_topo_new (&s, &error);
  SP_ASSERT_NO_ERROR (error);
  g_autofree char *ini = sp_topo_to_ini (c);
  ck_assert_ptr_nonnull (strstr (ini, "std_errors=intra_latency_us 0.1234567890123; nic_efficiency "
                                      "0.005; ll_overhead_us undetermined; simple_overhead_us "
                                      "5755.973410468583\n"));
  ck_assert_ptr_nonnull (strstr (ini, "correlations=intra_latency_us nic_efficiency 0.02; "
                                      "intra_latency_us simple_overhead_us -0.9999999540770992; "
                                      "nic_efficiency simple_overhead_us -0.02000001\n"));
  ck_assert_ptr_nonnull (strstr (ini, "residual_sd=0.015\n"));
  g_autoptr (SpTopo) back = sp_topo_load_data (ini, -1, "cal.ini", &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert (sp_topo_spec_equal (&s, sp_topo_spec (back)));
  /* equality sees one correlation */
  SpTopoSpec t = s;
  t.cal_errors.corr[0][3] = t.cal_errors.corr[3][0] = 0.03;
  ck_assert (!sp_topo_spec_equal (&s, &t));
  /* pairs not listed are uncorrelated; spacing and a trailing ';' are free */
  g_autoptr (SpTopo) d = sp_topo_new_preset ("dgx-h100", 2, NULL);
  g_autofree char *plain = sp_topo_to_ini (d);
  g_autofree char *hand = g_strconcat (plain, "\n[calibration]\nstd_errors =  inter_latency_us 2 ;"
                                       "nic_efficiency\t0.01;\n", NULL);
  g_autoptr (SpTopo) h = sp_topo_load_data (hand, -1, "hand.ini", &error);
  SP_ASSERT_NO_ERROR (error);
  const SpTopoCalErrors *he = &sp_topo_spec (h)->cal_errors;
  ck_assert_uint_eq (he->given, 1 << 1 | 1 << 3);
  ck_assert (he->std_error[1] == 2 && he->corr[1][3] == 0 && he->corr[1][1] == 1
             && he->residual_sd == 0);
  /* a spec built in code is checked like a file */
  t = s;
  t.cal_errors.corr[0][3] = 0.5; /* not symmetric */
  ck_assert_ptr_null (sp_topo_new (&t, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  ck_assert_msg (strstr (error->message, "correlations") != NULL, "%s", error->message);
  g_clear_error (&error);
  t = s;
  t.cal_errors.std_error[1] = 3; /* not given, yet set */
  ck_assert_ptr_null (sp_topo_new (&t, &error));
  g_clear_error (&error);
  t = s;
  t.cal_errors.std_error[0] = NAN;
  ck_assert_ptr_null (sp_topo_new (&t, &error));
  g_clear_error (&error);
  /* a subnormal would not read back (a review's find) */
  t = s;
  t.cal_errors.std_error[0] = 1e-320;
  ck_assert_ptr_null (sp_topo_new (&t, &error));
  ck_assert_msg (strstr (error->message, "too small to write") != NULL, "%s", error->message);
  g_clear_error (&error);
  t = s;
  t.cal_errors.corr[0][3] = t.cal_errors.corr[3][0] = 1e-310;
  ck_assert_ptr_null (sp_topo_new (&t, &error));
  g_clear_error (&error);
  t = s;
  t.cal_errors.given |= 0x80;
  ck_assert_ptr_null (sp_topo_new (&t, &error));
  g_clear_error (&error);
}
END_TEST

static const struct {
  const char *lines;
  const char *message;
} bad_cal_errors[] = {
  { "std_errors=intra_latency 1", "'intra_latency' is not a calibrated value" },
  { "std_errors=intra_latency_us 1; intra_latency_us 2", "intra_latency_us is given twice" },
  { "std_errors=intra_latency_us -1", "intra_latency_us -1 is out of range" },
  { "std_errors=intra_latency_us nan", "intra_latency_us" },
  { "std_errors=intra_latency_us 1e10", "out of range" },
  { "std_errors=intra_latency_us", "entry 'intra_latency_us' is not 'NAME ERROR'" },
  { "std_errors=intra_latency_us 1 2", "is not 'NAME ERROR'" },
  { "std_errors=intra_latency_us inf", "(or 'undetermined')" },
  { "std_errors=intra_latency_us 1; nic_efficiency 0.1\ncorrelations=intra_latency_us "
    "nic_efficiency 1.5", "nic_efficiency 1.5 is out of range" },
  { "std_errors=intra_latency_us 1; nic_efficiency 0.1\ncorrelations=intra_latency_us "
    "intra_latency_us 0.5", "intra_latency_us with itself" },
  { "std_errors=intra_latency_us 1; nic_efficiency 0.1\ncorrelations=intra_latency_us "
    "nic_efficiency 0.5; nic_efficiency intra_latency_us 0.5", "given twice" },
  { "std_errors=intra_latency_us 1; ll_overhead_us undetermined\ncorrelations=intra_latency_us "
    "ll_overhead_us 0.5", "ll_overhead_us has no finite standard error" },
  { "correlations=intra_latency_us nic_efficiency 0.5", "intra_latency_us has no finite" },
  { "std_errors=intra_latency_us 1; nic_efficiency 0.1; ll_overhead_us 2\ncorrelations="
    "intra_latency_us nic_efficiency 0.9; intra_latency_us ll_overhead_us 0.9; nic_efficiency "
    "ll_overhead_us -0.9", "not positive semidefinite" },
  { "std_errors=intra_latency_us 1; nic_efficiency 0.1; ll_overhead_us 2\ncorrelations="
    "intra_latency_us nic_efficiency 1; intra_latency_us ll_overhead_us 1; nic_efficiency "
    "ll_overhead_us 0", "not positive semidefinite" },
  /* a review's file: -1 between two values leaves nothing for a third to
   * correlate with one and not the other; accepted at a pivot tolerance
   * of 1e-6 it gave a 256 MiB ring a negative variance, shown as ±0.0 % */
  { "std_errors=intra_latency_us 263431.49920870754; intra_efficiency 0.7805883642021026; "
    "simple_overhead_us 3687716.00002388\ncorrelations=intra_latency_us simple_overhead_us -1; "
    "intra_efficiency simple_overhead_us 0.0009", "not positive semidefinite" },
  { "residual_sd=11", "residual_sd 11 is out of range" },
  { "residual_sd=-0.1", "residual_sd -0.1 is out of range" },
};

START_TEST (test_calibration_errors_refused)
{
  g_autoptr (SpTopo) p = sp_topo_new_preset ("dgx-h100", 2, NULL);
  g_autofree char *plain = sp_topo_to_ini (p);
  g_autofree char *text = g_strdup_printf ("%s\n[calibration]\n%s\n", plain, bad_cal_errors[_i].lines);
  GError *error = NULL;
  g_autoptr (SpTopo) t = sp_topo_load_data (text, -1, "cal.ini", &error);
  ck_assert_ptr_null (t);
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  ck_assert_msg (strstr (error->message, bad_cal_errors[_i].message) != NULL, "%s", error->message);
  ck_assert_msg (g_str_has_prefix (error->message, "cal.ini: "), "%s", error->message);
  ck_assert_ptr_null (strchr (error->message, '\n'));
  g_clear_error (&error);
}
END_TEST

/* A singular matrix within rounding (two values correlated -1.00 and a
 * third following both, as calibrate writes when the data fix only a
 * combination) is a covariance, and is read. */
START_TEST (test_calibration_errors_singular)
{
  g_autoptr (SpTopo) p = sp_topo_new_preset ("dgx-h100", 2, NULL);
  g_autofree char *plain = sp_topo_to_ini (p);
  g_autofree char *text = g_strdup_printf (
    "%s\n[calibration]\nstd_errors=intra_latency_us 823; inter_latency_us 640; simple_overhead_us "
    "5756\ncorrelations=intra_latency_us inter_latency_us 0.9999981785925417; intra_latency_us "
    "simple_overhead_us -0.9999999540770992; inter_latency_us simple_overhead_us "
    "-0.9999982245153609\n", plain);
  GError *error = NULL;
  g_autoptr (SpTopo) t = sp_topo_load_data (text, -1, "cal.ini", &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert_uint_eq (sp_topo_spec (t)->cal_errors.given, 1 << 0 | 1 << 1 | 1 << 6);
}
END_TEST

/* ---- [nccl] algo / proto (NCCL_ALGO / NCCL_PROTO) ------------------------- */

/* Off masks by hand: bit = NCCL's id (Tree 0, Ring 1, CollNetDirect 2,
 * CollNetChain 3, NVLS 4, NVLSTree 5, PAT 6; LL 0, LL128 1, Simple 2, and
 * 0x80 = NCCL_PROTO sets the collective), in ncclFunc_t order (broadcast,
 * reduce, all_gather, reduce_scatter, all_reduce).  Read alike by both
 * modes. */
static const struct {
  const char *text;
  gboolean proto;
  guint8 off[SP_TOPO_NCCL_FUNCS];
  const char *canonical;
} nccl_lists[] = {
  { "Ring", FALSE, { 0x7d, 0x7d, 0x7d, 0x7d, 0x7d }, "Ring" },
  { "ring,TREE", FALSE, { 0x7c, 0x7c, 0x7c, 0x7c, 0x7c }, "Tree,Ring" },
  { "^NVLS", FALSE, { 0x10, 0x10, 0x10, 0x10, 0x10 }, "^NVLS" },
  { "^nvls,nvlstree", FALSE, { 0x30, 0x30, 0x30, 0x30, 0x30 }, "^NVLS,NVLSTree" },
  { "allreduce:tree;allgather:^pat", FALSE, { 0, 0, 0x40, 0, 0x7e }, "AllGather:^PAT;AllReduce:Tree" },
  { "Ring;AllReduce:Tree", FALSE, { 0x7d, 0x7d, 0x7d, 0x7d, 0x7e }, "Ring;AllReduce:Tree" },
  { "Tree;AllReduce:Ring;Broadcast:Ring", FALSE, { 0x7d, 0x7e, 0x7e, 0x7e, 0x7d },
    "Tree;Broadcast:Ring;AllReduce:Ring" },
  { "allgather:ring;AllGather:^ring", FALSE, { 0, 0, 0x02, 0, 0 }, "AllGather:^Ring" },
  { "^Tree,Ring,CollNetDirect,CollNetChain,NVLS,NVLSTree,PAT", FALSE,
    { 0x7f, 0x7f, 0x7f, 0x7f, 0x7f }, "^Tree,Ring,CollNetDirect,CollNetChain,NVLS,NVLSTree,PAT" },
  { "Ring;;", FALSE, { 0x7d, 0x7d, 0x7d, 0x7d, 0x7d }, "Ring" }, /* empty pieces: skipped */
  { "Simple", TRUE, { 0x83, 0x83, 0x83, 0x83, 0x83 }, "Simple" },
  { "^LL128", TRUE, { 0x82, 0x82, 0x82, 0x82, 0x82 }, "^LL128" },
  { "LL,simple", TRUE, { 0x82, 0x82, 0x82, 0x82, 0x82 }, "^LL128" },
  { "reducescatter:LL,LL128", TRUE, { 0, 0, 0, 0x84, 0 }, "ReduceScatter:^Simple" },
  /* every protocol named: nothing off, but LL128 on outright */
  { "LL,LL128,Simple", TRUE, { 0x80, 0x80, 0x80, 0x80, 0x80 }, "LL,LL128,Simple" },
};

/* Parse `text` in `mode` and expect it accepted, with the masks `want`. */
static void
expect_nccl_masks (const char *text, gboolean proto, SpNcclParse mode,
                   const guint8 want[SP_TOPO_NCCL_FUNCS], guint8 out_off[SP_TOPO_NCCL_FUNCS])
{
  GError *error = NULL;
  ck_assert_msg (sp_topo_nccl_parse (proto ? "NCCL_PROTO" : "NCCL_ALGO", text, proto, mode, out_off,
                                     &error),
                 "'%s' (mode %d): %s", text, mode, error ? error->message : "?");
  for (guint f = 0; f < SP_TOPO_NCCL_FUNCS; f++)
    ck_assert_msg (out_off[f] == want[f], "'%s' (mode %d): function %u off 0x%x, expected 0x%x", text,
                   mode, f, out_off[f], want[f]);
}

START_TEST (test_nccl_lists)
{
  GError *error = NULL;
  const char *what = nccl_lists[_i].proto ? "NCCL_PROTO" : "NCCL_ALGO";
  for (SpNcclParse mode = SP_NCCL_EXACT; mode <= SP_NCCL_STRICT; mode++)
    {
      guint8 off[SP_TOPO_NCCL_FUNCS], back[SP_TOPO_NCCL_FUNCS];
      expect_nccl_masks (nccl_lists[_i].text, nccl_lists[_i].proto, mode, nccl_lists[_i].off, off);
      g_autofree char *text = sp_topo_nccl_text (off, nccl_lists[_i].proto);
      ck_assert_str_eq (text, nccl_lists[_i].canonical);
      ck_assert (sp_topo_nccl_parse (what, text, nccl_lists[_i].proto, mode, back, &error));
      ck_assert (memcmp (off, back, sizeof off) == 0);
    }
}
END_TEST

/* What NCCL reads differently from how it looks (strtok_r, no trimming,
 * unknown names ignored): SP_NCCL_EXACT reads it as NCCL does,
 * SP_NCCL_STRICT refuses it. */
static const struct {
  const char *text;
  gboolean proto;
  guint8 off[SP_TOPO_NCCL_FUNCS]; /* SP_NCCL_EXACT */
  const char *strict;             /* SP_NCCL_STRICT's message */
} nccl_exact[] = {
  { "Ring, Tree", FALSE, { 0x7d, 0x7d, 0x7d, 0x7d, 0x7d }, "NCCL does not trim spaces" },
  { "Simple,Foo", TRUE, { 0x83, 0x83, 0x83, 0x83, 0x83 },
    "'Foo' is not an NCCL protocol (NCCL 2.28 refuses the value, 2.24-2.27 ignore the name): expected LL, LL128, Simple" },
  { "nvls_tree", FALSE, { 0x7f, 0x7f, 0x7f, 0x7f, 0x7f }, "'nvls_tree' is not an NCCL algorithm" },
  { "", FALSE, { 0, 0, 0, 0, 0 }, "empty: leave the key out for NCCL's own choice" },
  { ";", TRUE, { 0, 0, 0, 0, 0 }, "names no protocol: leave the key out" },
  { "allreduce:", FALSE, { 0x7f, 0x7f, 0x7f, 0x7f, 0x7f }, "entry 1 has a ':' with nothing on one side" },
  { ":Ring", FALSE, { 0x7d, 0x7d, 0x7d, 0x7d, 0x7d }, "entry 1 has a ':' with nothing on one side" },
  { "AllReduce::Ring", FALSE, { 0, 0, 0, 0, 0x7d }, "entry 1 has more than one ':'" },
  { "^", TRUE, { 0x80, 0x80, 0x80, 0x80, 0x80 }, "entry 1 names no protocol" },
  { "allreduce:tree:ring", FALSE, { 0, 0, 0, 0, 0x7e }, "entry 1 has more than one ':'" },
  { "Ring\x1b[31m", FALSE, { 0x7f, 0x7f, 0x7f, 0x7f, 0x7f }, "holds control characters" },
};

START_TEST (test_nccl_exact)
{
  GError *error = NULL;
  const char *what = nccl_exact[_i].proto ? "NCCL_PROTO" : "NCCL_ALGO";
  guint8 off[SP_TOPO_NCCL_FUNCS];
  expect_nccl_masks (nccl_exact[_i].text, nccl_exact[_i].proto, SP_NCCL_EXACT, nccl_exact[_i].off, off);
  ck_assert (!sp_topo_nccl_parse (what, nccl_exact[_i].text, nccl_exact[_i].proto, SP_NCCL_STRICT,
                                  off, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  ck_assert_msg (strstr (error->message, nccl_exact[_i].strict) != NULL, "%s", error->message);
  ck_assert_msg (strchr (error->message, '\x1b') == NULL, "control character echoed: %s",
                 error->message);
  g_clear_error (&error);
}
END_TEST

/* What NCCL itself refuses (communicator init fails), in either mode. */
static const struct {
  const char *text;
  gboolean proto;
  const char *message;
} bad_nccl_lists[] = {
  { "alltoall:ring", FALSE, "NCCL_ALGO 'alltoall:ring': 'alltoall' is not a collective NCCL_ALGO "
                            "restricts (NCCL refuses the value)" },
  { "send:simple", TRUE, "'send' is not a collective NCCL_PROTO restricts" },
  { "ring;tree", FALSE, "NCCL_ALGO 'ring;tree': entry 2 has no collective prefix, which NCCL allows "
                        "only on the entry that starts the value" },
  { ";Ring", FALSE, "the value starts with ';', so NCCL does not count entry 1 as the first" },
  { "allreduce:LL;Simple", TRUE, "entry 2 has no collective prefix" },
  { ":::", FALSE, "entry 1 is only ':' (NCCL reads no list there, and crashes on it)" },
};

START_TEST (test_nccl_list_errors)
{
  GError *error = NULL;
  const char *what = bad_nccl_lists[_i].proto ? "NCCL_PROTO" : "NCCL_ALGO";
  for (SpNcclParse mode = SP_NCCL_EXACT; mode <= SP_NCCL_STRICT; mode++)
    {
      guint8 off[SP_TOPO_NCCL_FUNCS] = { 9, 9, 9, 9, 9 };
      ck_assert (!sp_topo_nccl_parse (what, bad_nccl_lists[_i].text, bad_nccl_lists[_i].proto, mode,
                                      off, &error));
      SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
      ck_assert_msg (g_str_has_prefix (error->message, what), "%s", error->message);
      ck_assert_msg (strstr (error->message, bad_nccl_lists[_i].message) != NULL, "%s",
                     error->message);
      g_clear_error (&error);
      for (guint f = 0; f < SP_TOPO_NCCL_FUNCS; f++)
        ck_assert_int_eq (off[f], 9); /* untouched on error */
    }
}
END_TEST

/* A hostile value: the message shows 64 characters of it, not all. */
START_TEST (test_nccl_long_value)
{
  GError *error = NULL;
  g_autofree char *text = g_strnfill (100000, 'x');
  guint8 off[SP_TOPO_NCCL_FUNCS];
  ck_assert (!sp_topo_nccl_parse ("NCCL_ALGO", text, FALSE, SP_NCCL_STRICT, off, &error));
  ck_assert_msg (strlen (error->message) < 600, "%zu bytes", strlen (error->message));
  ck_assert (strstr (error->message, "…") != NULL);
  g_clear_error (&error);
  ck_assert (sp_topo_nccl_parse ("NCCL_ALGO", text, FALSE, SP_NCCL_EXACT, off, &error));
  ck_assert_int_eq (off[0], 0x7f); /* one unknown name: nothing left, as NCCL reads it */
}
END_TEST

/* CPU ranks (cpu-shm) run MPI: a [nccl] section holding `line` is refused. */
static void
expect_shm_refuses (const char *line)
{
  GError *error = NULL;
  g_autoptr (SpTopo) shm = sp_topo_new_preset ("cpu-shm", 1, &error);
  SP_ASSERT_NO_ERROR (error);
  g_autofree char *shm_ini = sp_topo_to_ini (shm);
  g_autofree char *text = g_strconcat (shm_ini, "\n[nccl]\n", line, "\n", NULL);
  ck_assert_ptr_null (sp_topo_load_data (text, -1, "s.ini", &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  ck_assert_msg (strstr (error->message, "s.ini: [nccl] does not apply to [intra] kind = shm") != NULL,
                 "%s", error->message);
  g_clear_error (&error);
}

/* [nccl] version: the NCCL the jobs run.  Read, checked, written back,
 * compared; its algorithms (PAT from 2.23, NVLS 2.17, NVLSTree 2.18) are
 * what the spec allows; before 2.24 no per-collective restriction. */
START_TEST (test_nccl_version_key)
{
  GError *error = NULL;
  g_autoptr (SpTopo) p = sp_topo_new_preset ("dgx-h100", 2, &error);
  SP_ASSERT_NO_ERROR (error);
  g_autofree char *plain = sp_topo_to_ini (p);
  ck_assert_int_eq (sp_topo_spec (p)->nccl_version, 0);
  ck_assert_ptr_null (strstr (plain, "version"));
  static const struct
  {
    const char *text;
    guint32 code; /* 0: refused */
  } v[] = {
    { "2.21.5", 22105 }, { "2.16", 21600 }, { "2.28.9", 22809 }, { "3.0.1", 30001 },
    { "22105", 0 },      { "2.21.5+cuda12.4", 0 }, { "2.21.5.1", 0 }, { "1.9.1", 0 },
    { "2.100.1", 0 },    { "2", 0 },         { "2..1", 0 },       { "v2.21", 0 },
    { "2.21.", 0 },      { "2.21.5 x", 0 },  { "-2.21", 0 },       { "2.0", 20000 },
    { "02.21", 0 },      { "2.021", 0 },     { "2.123", 0 },       { "2.21.05", 0 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (v); i++)
    {
      g_autofree char *text = g_strdup_printf ("%s\n[nccl]\nversion = %s\n", plain, v[i].text);
      g_autoptr (SpTopo) t = sp_topo_load_data (text, -1, "v.ini", &error);
      if (v[i].code == 0)
        {
          ck_assert_msg (t == NULL, "'%s' accepted", v[i].text);
          SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
          ck_assert_msg (strstr (error->message, "v.ini: [nccl] version '") != NULL
                             && strstr (error->message, "is not an NCCL version") != NULL,
                         "%s", error->message);
          g_clear_error (&error);
          continue;
        }
      SP_ASSERT_NO_ERROR (error);
      ck_assert_uint_eq (sp_topo_spec (t)->nccl_version, v[i].code);
      g_autofree char *ini = sp_topo_to_ini (t);
      g_autofree char *want = g_strdup_printf ("version=%u.%u.%u\n", v[i].code / 10000,
                                               v[i].code / 100 % 100, v[i].code % 100);
      ck_assert_msg (strstr (ini, want) != NULL, "%s", ini);
      g_autoptr (SpTopo) back = sp_topo_load_data (ini, -1, "back.ini", &error);
      SP_ASSERT_NO_ERROR (error);
      ck_assert (sp_topo_spec_equal (sp_topo_spec (t), sp_topo_spec (back)));
      ck_assert (!sp_topo_spec_equal (sp_topo_spec (t), sp_topo_spec (p)));
    }

  /* what each version lets NCCL choose; the p2p path untouched */
  SpTopoSpec s = *sp_topo_spec (p);
  s.nccl_version = 22105;
  ck_assert (!sp_topo_spec_nccl_allows (&s, SP_COLL_ALL_GATHER, SP_ALGO_PAT, SP_PROTO_SIMPLE));
  ck_assert (sp_topo_spec_nccl_allows (&s, SP_COLL_ALL_GATHER, SP_ALGO_RING, SP_PROTO_SIMPLE));
  ck_assert (sp_topo_spec_nccl_allows (&s, SP_COLL_ALL_REDUCE, SP_ALGO_NVLS_TREE, SP_PROTO_SIMPLE));
  ck_assert (sp_topo_spec_nccl_allows (&s, SP_COLL_ALL_GATHER, SP_ALGO_AUTO, SP_PROTO_SIMPLE));
  s.nccl_version = 21701;
  ck_assert (sp_topo_spec_nccl_allows (&s, SP_COLL_ALL_REDUCE, SP_ALGO_NVLS, SP_PROTO_SIMPLE));
  ck_assert (!sp_topo_spec_nccl_allows (&s, SP_COLL_ALL_REDUCE, SP_ALGO_NVLS_TREE, SP_PROTO_SIMPLE));
  s.nccl_version = 21605;
  ck_assert (!sp_topo_spec_nccl_allows (&s, SP_COLL_ALL_REDUCE, SP_ALGO_NVLS, SP_PROTO_SIMPLE));
  ck_assert (sp_topo_spec_nccl_allows (&s, SP_COLL_ALL_TO_ALL, SP_ALGO_DIRECT, SP_PROTO_SIMPLE));
  s.nccl_version = 22300;
  ck_assert (sp_topo_spec_nccl_allows (&s, SP_COLL_ALL_GATHER, SP_ALGO_PAT, SP_PROTO_SIMPLE));

  /* before 2.24: one list for all collectives, or refused */
  g_autofree char *uniform = g_strdup_printf ("%s\n[nccl]\nversion = 2.21.5\nalgo = ^NVLS\nproto = Simple\n",
                                              plain);
  g_autoptr (SpTopo) u = sp_topo_load_data (uniform, -1, "u.ini", &error);
  SP_ASSERT_NO_ERROR (error);
  g_autofree char *per_coll = g_strdup_printf ("%s\n[nccl]\nversion = 2.21.5\nalgo = allreduce:tree\n",
                                               plain);
  ck_assert_ptr_null (sp_topo_load_data (per_coll, -1, "c.ini", &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  ck_assert_msg (strstr (error->message, "c.ini: [nccl] algo / proto restrict collectives differently, "
                                         "which NCCL 2.21.5 ([nccl] version) cannot") != NULL,
                 "%s", error->message);
  g_clear_error (&error);
  g_autofree char *per_coll_proto = g_strdup_printf ("%s\n[nccl]\nversion = 2.21\nproto = allreduce:LL\n",
                                                     plain);
  ck_assert_ptr_null (sp_topo_load_data (per_coll_proto, -1, "p.ini", &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  g_clear_error (&error);
  g_autofree char *per_coll_24 = g_strdup_printf ("%s\n[nccl]\nversion = 2.24\nalgo = allreduce:tree\n",
                                                  plain);
  g_autoptr (SpTopo) c24 = sp_topo_load_data (per_coll_24, -1, "c24.ini", &error);
  SP_ASSERT_NO_ERROR (error);

  /* a code built in code is checked; CPU ranks have no NCCL */
  s = *sp_topo_spec (p);
  static const guint32 bad_codes[] = { 1999, 19999, 1000000, G_MAXUINT32 };
  for (guint i = 0; i < G_N_ELEMENTS (bad_codes); i++)
    {
      s.nccl_version = bad_codes[i];
      ck_assert_ptr_null (sp_topo_new (&s, &error));
      SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
      g_clear_error (&error);
    }
  expect_shm_refuses ("version = 2.21.5");
}
END_TEST

/* NCCL's version, from what logs and traces record. */
START_TEST (test_nccl_version_code)
{
  static const struct
  {
    const char *text;
    int code;
  } v[] = {
    { "2.21.5", 22105 },         { "2.21.5+cuda12.4", 22105 }, { "2.28.9", 22809 },
    { "2.18", 21800 },           { "2.7.8-1", 20708 },         { "22902", 22902 },
    { "2804", 20804 },           { "2.21.5.1", 22105 },        { "", 0 },
    { "v2.21.5", 0 },            { "2", 0 },                   { "0.9.1", 0 },
    { "2.100.1", 0 },            { "2.21.1000", 0 },           { "99999999999999999999.1", 0 },
    { "1234567", 0 },            { "999", 0 },                 { "3000", 0 },
    { "2.", 0 },                 { ".21.5", 0 },               { "1.9.1", 0 },
  };
  ck_assert_int_eq (sp_topo_nccl_version_code (NULL), 0);
  for (guint i = 0; i < G_N_ELEMENTS (v); i++)
    ck_assert_msg (sp_topo_nccl_version_code (v[i].text) == v[i].code, "'%s': %d, expected %d", v[i].text,
                   sp_topo_nccl_version_code (v[i].text), v[i].code);
}
END_TEST

/* Values as the NCCL that ran read them (NCCL's parseList before 2.24:
 * one list split on ',' only, a leading '^' excluding, names by version;
 * 2.28: unknown names refused), each checked by hand against that rule.
 * Masks as above; uniform masks are written once. */
static const struct
{
  const char *text;
  gboolean proto;
  int version;
  int off; /* every collective's mask, or -1: refused */
} nccl_versions[] = {
  { "Ring", FALSE, 22105, 0x7d },
  { "^Ring,Tree", FALSE, 22105, 0x03 },
  /* no entries before 2.24: a name holding ':' or ';' matches nothing */
  { "AllReduce:Tree", FALSE, 22105, 0x7f },
  { "^AllReduce:Tree", FALSE, 22105, 0x00 },
  { "Ring;Tree", FALSE, 22105, 0x7f },
  { "Ring,AllReduce:Tree", FALSE, 22105, 0x7d },
  /* an empty value: every name off before 2.24, nothing after */
  { "", FALSE, 22105, 0x7f },
  { "", TRUE, 22105, 0x87 },
  { "", FALSE, 22400, 0x00 },
  /* names by version: PAT from 2.23, NVLS 2.17, NVLSTree 2.18, CollNetDirect
   * and CollNetChain 2.14 ("CollNet" the direct one before) */
  { "^PAT", FALSE, 22204, 0x00 },
  { "^PAT", FALSE, 22304, 0x40 },
  { "Ring,PAT", FALSE, 22105, 0x7d },
  { "^NVLS", FALSE, 21603, 0x00 },
  { "^NVLS", FALSE, 21701, 0x10 },
  { "^NVLSTree", FALSE, 21701, 0x00 },
  { "^NVLSTree", FALSE, 21801, 0x20 },
  { "^CollNet", FALSE, 21207, 0x04 },
  { "^CollNet", FALSE, 21403, 0x00 },
  { "^CollNetDirect,CollNetChain", FALSE, 21207, 0x00 },
  { "^CollNetDirect,CollNetChain", FALSE, 21403, 0x0c },
  /* ' Tree' has a space: no match, by either syntax */
  { "Ring, Tree", FALSE, 22105, 0x7d },
  { "Ring, Tree", FALSE, 22400, 0x7d },
  /* NCCL_PROTO sets LL128 outright unless it is named off */
  { "Simple", TRUE, 22105, 0x83 },
  { "^LL", TRUE, 21207, 0x81 },
  /* 2.24-2.27 ignore an unknown name, 2.28 refuses the value */
  { "Ring,Foo", FALSE, 22703, 0x7d },
  { "Ring,Foo", FALSE, 22809, -1 },
  { "LL,LL256", TRUE, 22809, -1 },
  { "Ring,Foo", FALSE, 0, 0x7d },
  /* 2.24's own refusals stand: an unknown prefix, a second entry without one */
  { "^AllReduce:Tree", FALSE, 22400, -1 },
  { "Ring;Tree", FALSE, 22400, -1 },
};

START_TEST (test_nccl_versions)
{
  GError *error = NULL;
  guint8 off[SP_TOPO_NCCL_FUNCS] = { 9, 9, 9, 9, 9 };
  const char *what = nccl_versions[_i].proto ? "NCCL_PROTO" : "NCCL_ALGO";
  gboolean ok = sp_topo_nccl_parse_as (what, nccl_versions[_i].text, nccl_versions[_i].proto,
                                       nccl_versions[_i].version, off, &error);
  ck_assert_msg (ok == (nccl_versions[_i].off >= 0), "'%s' at %d: %s", nccl_versions[_i].text,
                 nccl_versions[_i].version, error ? error->message : "accepted");
  for (guint f = 0; f < SP_TOPO_NCCL_FUNCS; f++)
    if (ok)
      ck_assert_msg (off[f] == nccl_versions[_i].off, "'%s' at %d: function %u off 0x%x, expected 0x%x",
                     nccl_versions[_i].text, nccl_versions[_i].version, f, off[f], nccl_versions[_i].off);
    else
      ck_assert_int_eq (off[f], 9); /* untouched on error */
  g_clear_error (&error);
}
END_TEST

/* The algorithms each NCCL version lacks, by the version table. */
START_TEST (test_nccl_algos_lacking)
{
  ck_assert_int_eq (sp_topo_nccl_algos_lacking (0), 0);
  ck_assert_int_eq (sp_topo_nccl_algos_lacking (21207), 0x08 | 0x10 | 0x20 | 0x40);
  ck_assert_int_eq (sp_topo_nccl_algos_lacking (21403), 0x10 | 0x20 | 0x40);
  ck_assert_int_eq (sp_topo_nccl_algos_lacking (21701), 0x20 | 0x40);
  ck_assert_int_eq (sp_topo_nccl_algos_lacking (21803), 0x40);
  ck_assert_int_eq (sp_topo_nccl_algos_lacking (22204), 0x40);
  ck_assert_int_eq (sp_topo_nccl_algos_lacking (22304), 0);
  ck_assert_int_eq (sp_topo_nccl_algos_lacking (22809), 0);
  g_autofree char *names = sp_topo_nccl_algos_text (sp_topo_nccl_algos_lacking (21701));
  ck_assert_str_eq (names, "NVLSTree, PAT");
  ck_assert_ptr_null (sp_topo_nccl_algos_text (0));
}
END_TEST

/* What `run` refuses to pass to an NCCL that reads it otherwise. */
START_TEST (test_nccl_check_version)
{
  static const struct
  {
    const char *text;
    gboolean proto;
    int version;
    const char *message; /* NULL: passed on */
  } c[] = {
    { "allreduce:tree", FALSE, 22105,
      "NCCL_ALGO='allreduce:tree': NCCL 2.21.5 reads no per-collective entries (';' and ':' need "
      "NCCL 2.24 or later), so it would read this as every algorithm off (NCCL then fails every "
      "collective but all-to-all and send / recv): give one list for all collectives, or run "
      "with NCCL 2.24 or later" },
    { "^allreduce:tree", FALSE, 22105, "so it would read this as no algorithm off:" },
    { "Ring,AllReduce:Tree", FALSE, 21903, "NCCL 2.19.3 reads no per-collective entries" },
    { "Ring,AllReduce:Tree", FALSE, 21903, "as Ring for every collective:" },
    { "Simple;AllReduce:LL", TRUE, 22304, "every protocol off (NCCL then fails" },
    /* "AllGather:^PAT" on 2.21, which has no PAT: 2.24 would turn off only
     * PAT for the all-gather, 2.21 reads one name it does not know */
    { "AllGather:^PAT", FALSE, 22105, "as every algorithm off" },
    /* read alike: a list that names nothing either way */
    { "^,:", FALSE, 22105, NULL },
    { "Ring", FALSE, 22105, NULL },
    { "^LL128", TRUE, 21207, NULL },
    { "allreduce:tree", FALSE, 22400, NULL },
    { "allreduce:tree", FALSE, 0, NULL },
  };
  for (guint i = 0; i < G_N_ELEMENTS (c); i++)
    {
      GError *error = NULL;
      const char *name = c[i].proto ? "NCCL_PROTO" : "NCCL_ALGO";
      gboolean ok = sp_topo_nccl_check_version (name, c[i].text, c[i].proto, c[i].version, &error);
      ck_assert_msg (ok == (c[i].message == NULL), "'%s' at %d: %s", c[i].text, c[i].version,
                     error ? error->message : "passed");
      if (!ok)
        ck_assert_msg (strstr (error->message, c[i].message) != NULL, "%s", error->message);
      g_clear_error (&error);
    }
}
END_TEST

/* [nccl] in a file: read, checked, written back, compared. */
START_TEST (test_nccl_section)
{
  GError *error = NULL;
  g_autoptr (SpTopo) p = sp_topo_new_preset ("dgx-h100", 2, &error);
  SP_ASSERT_NO_ERROR (error);
  g_autofree char *plain = sp_topo_to_ini (p);
  ck_assert_ptr_null (strstr (plain, "[nccl]"));
  for (guint f = 0; f < SP_TOPO_NCCL_FUNCS; f++)
    ck_assert (sp_topo_spec (p)->nccl_algo_off[f] == 0 && sp_topo_spec (p)->nccl_proto_off[f] == 0);

  g_autofree char *text = g_strconcat (plain, "\n[nccl]\nalgo = allreduce:tree;allgather:^pat\n"
                                       "proto = Simple\n", NULL);
  g_autoptr (SpTopo) t = sp_topo_load_data (text, -1, "n.ini", &error);
  SP_ASSERT_NO_ERROR (error);
  const SpTopoSpec *s = sp_topo_spec (t);
  ck_assert_int_eq (s->nccl_algo_off[4], 0x7e);
  ck_assert_int_eq (s->nccl_algo_off[2], 0x40);
  ck_assert_int_eq (s->nccl_proto_off[0], 0x83);
  ck_assert (!sp_topo_spec_equal (sp_topo_spec (p), s));
  ck_assert (sp_topo_spec_nccl_allows (s, SP_COLL_ALL_REDUCE, SP_ALGO_TREE, SP_PROTO_SIMPLE));
  ck_assert (!sp_topo_spec_nccl_allows (s, SP_COLL_ALL_REDUCE, SP_ALGO_RING, SP_PROTO_AUTO));
  ck_assert (!sp_topo_spec_nccl_allows (s, SP_COLL_ALL_REDUCE, SP_ALGO_AUTO, SP_PROTO_LL));
  ck_assert (sp_topo_spec_nccl_allows (s, SP_COLL_ALL_REDUCE, SP_ALGO_TREE, SP_PROTO_AUTO));
  ck_assert (sp_topo_spec_nccl_allows (s, SP_COLL_ALL_GATHER, SP_ALGO_RING, SP_PROTO_SIMPLE));
  ck_assert (!sp_topo_spec_nccl_allows (s, SP_COLL_ALL_GATHER, SP_ALGO_PAT, SP_PROTO_SIMPLE));
  ck_assert (sp_topo_spec_nccl_allows (s, SP_COLL_BROADCAST, SP_ALGO_RING, SP_PROTO_SIMPLE));
  /* NCCL's p2p path: neither variable touches it */
  ck_assert (sp_topo_spec_nccl_allows (s, SP_COLL_ALL_TO_ALL, SP_ALGO_DIRECT, SP_PROTO_LL));
  ck_assert (sp_topo_spec_nccl_allows (s, SP_COLL_SEND, SP_ALGO_DIRECT, SP_PROTO_LL));

  g_autofree char *ini = sp_topo_to_ini (t);
  ck_assert_msg (strstr (ini, "[nccl]\nalgo=AllGather:^PAT;AllReduce:Tree\nproto=Simple\n") != NULL,
                 "%s", ini);
  g_autoptr (SpTopo) back = sp_topo_load_data (ini, -1, "back.ini", &error);
  SP_ASSERT_NO_ERROR (error);
  ck_assert (sp_topo_spec_equal (s, sp_topo_spec (back)));

  /* errors name the key and the file */
  g_autofree char *bad = g_strconcat (plain, "\n[nccl]\nproto = LL256\n", NULL);
  ck_assert_ptr_null (sp_topo_load_data (bad, -1, "b.ini", &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  ck_assert_str_eq (error->message, "b.ini: [nccl] proto 'LL256': 'LL256' is not an NCCL protocol "
                                    "(NCCL 2.28 refuses the value, 2.24-2.27 ignore the name): "
                                    "expected LL, LL128, Simple");
  g_clear_error (&error);
  g_autofree char *misspelt = g_strconcat (plain, "\n[nccl]\nalgos = ring\n", NULL);
  ck_assert_ptr_null (sp_topo_load_data (misspelt, -1, "m.ini", &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  ck_assert_msg (strstr (error->message, "algos") && strstr (error->message, "algo"), "%s",
                 error->message);
  g_clear_error (&error);
  /* a spec built in code with bits NCCL has no name for */
  SpTopoSpec b = *sp_topo_spec (p);
  b.nccl_algo_off[1] = 0x80;
  ck_assert_ptr_null (sp_topo_new (&b, &error));
  SP_ASSERT_ERROR (error, SP_ERROR_INVALID_TOPOLOGY);
  ck_assert_msg (strstr (error->message, "[nccl]") != NULL, "%s", error->message);
  g_clear_error (&error);
  b = *sp_topo_spec (p);
  b.nccl_proto_off[4] = 0x08;
  ck_assert_ptr_null (sp_topo_new (&b, &error));
  g_clear_error (&error);
  b.nccl_proto_off[4] = 0x02; /* LL128 off, without saying NCCL_PROTO sets it */
  ck_assert_ptr_null (sp_topo_new (&b, &error));
  g_clear_error (&error);
  b.nccl_proto_off[4] = 0x87; /* every protocol off: a restriction NCCL would fail on, not a bad spec */
  g_autoptr (SpTopo) all_off = sp_topo_new (&b, &error);
  SP_ASSERT_NO_ERROR (error);

  /* the fixture */
  g_autofree char *fx = fixture ("valid-nccl.ini");
  g_autoptr (SpTopo) v = sp_topo_load_file (fx, &error);
  SP_ASSERT_NO_ERROR (error);
  static const guint8 algo_want[SP_TOPO_NCCL_FUNCS] = { 0, 0, 0x40, 0, 0x7c };
  for (guint f = 0; f < SP_TOPO_NCCL_FUNCS; f++)
    {
      ck_assert_int_eq (sp_topo_spec (v)->nccl_algo_off[f], algo_want[f]);
      ck_assert_int_eq (sp_topo_spec (v)->nccl_proto_off[f], 0x82);
    }

  ck_assert_int_eq (sp_topo_nccl_func (SP_COLL_ALL_REDUCE), 4);
  ck_assert_int_eq (sp_topo_nccl_func (SP_COLL_BROADCAST), 0);
  ck_assert_int_eq (sp_topo_nccl_func (SP_COLL_ALL_TO_ALL), -1);
  ck_assert_int_eq (sp_topo_nccl_func (SP_COLL_REDUCE_SCATTER_BLOCK), 3);

  /* LL128 on outright where NCCL_PROTO names a collective and leaves it on */
  ck_assert (!sp_topo_spec_nccl_ll128_forced (sp_topo_spec (p), SP_COLL_ALL_REDUCE));
  ck_assert (!sp_topo_spec_nccl_ll128_forced (sp_topo_spec (v), SP_COLL_ALL_REDUCE)); /* ^LL128 */
  SpTopoSpec l = *sp_topo_spec (p);
  ck_assert (sp_topo_nccl_parse ("NCCL_PROTO", "allreduce:^LL", TRUE, SP_NCCL_STRICT, l.nccl_proto_off,
                                 &error));
  ck_assert (sp_topo_spec_nccl_ll128_forced (&l, SP_COLL_ALL_REDUCE));
  ck_assert (!sp_topo_spec_nccl_ll128_forced (&l, SP_COLL_ALL_GATHER));

  /* CPU ranks run MPI: [nccl] does not apply there */
  expect_shm_refuses ("proto = Simple");
}
END_TEST

static Suite *
topo_suite (void)
{
  Suite *s = suite_create ("topo");
  TCase *tc = tcase_create ("presets");
  tcase_add_loop_test (tc, test_preset_values, 0, G_N_ELEMENTS (preset_expect));
  tcase_add_test (tc, test_preset_list);
  tcase_add_loop_test (tc, test_preset_round_trip, 0, G_N_ELEMENTS (preset_expect));
  tcase_add_test (tc, test_preset_nodes);
  suite_add_tcase (s, tc);

  tc = tcase_create ("ini");
  tcase_add_test (tc, test_valid_file);
  tcase_add_test (tc, test_single_node_without_inter);
  tcase_add_test (tc, test_bad_fixtures);
  tcase_add_test (tc, test_datasheet_only);
  tcase_add_test (tc, test_truncated);
  tcase_add_test (tc, test_duplicates_and_bare_lines);
  tcase_add_loop_test (tc, test_missing_key, 0, G_N_ELEMENTS (required_keys));
  tcase_add_test (tc, test_defaults);
  tcase_add_loop_test (tc, test_bad_value, 0, G_N_ELEMENTS (bad_values));
  tcase_add_test (tc, test_edge_values);
  tcase_add_test (tc, test_world_size_limit);
  tcase_add_test (tc, test_oversubscription_single_switch);
  tcase_add_test (tc, test_io_errors);
  tcase_add_test (tc, test_examples);
  suite_add_tcase (s, tc);

  tc = tcase_create ("api");
  tcase_add_test (tc, test_open);
  tcase_add_test (tc, test_new_spec_checks);
  tcase_add_test (tc, test_rank_location);
  tcase_add_test (tc, test_names);
  suite_add_tcase (s, tc);

  tc = tcase_create ("calibration");
  tcase_add_test (tc, test_calibration_round_trip);
  tcase_add_test (tc, test_memory_bandwidth);
  tcase_add_loop_test (tc, test_calibration_range_errors, 0, G_N_ELEMENTS (bad_calibration));
  tcase_add_test (tc, test_calibration_errors_round_trip);
  tcase_add_loop_test (tc, test_calibration_errors_refused, 0, G_N_ELEMENTS (bad_cal_errors));
  tcase_add_test (tc, test_calibration_errors_singular);
  suite_add_tcase (s, tc);

  tc = tcase_create ("nccl");
  tcase_add_loop_test (tc, test_nccl_lists, 0, G_N_ELEMENTS (nccl_lists));
  tcase_add_loop_test (tc, test_nccl_exact, 0, G_N_ELEMENTS (nccl_exact));
  tcase_add_loop_test (tc, test_nccl_list_errors, 0, G_N_ELEMENTS (bad_nccl_lists));
  tcase_add_test (tc, test_nccl_long_value);
  tcase_add_test (tc, test_nccl_version_code);
  tcase_add_loop_test (tc, test_nccl_versions, 0, G_N_ELEMENTS (nccl_versions));
  tcase_add_test (tc, test_nccl_check_version);
  tcase_add_test (tc, test_nccl_algos_lacking);
  tcase_add_test (tc, test_nccl_version_key);
  tcase_add_test (tc, test_nccl_section);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  return sp_test_run (topo_suite ());
}
