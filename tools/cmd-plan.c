/* `shardplan plan`: a workload (model + DeepSpeed config or options) and a
 * topology → the plan of one training step, as JSON, and a human summary
 * with the memory per GPU. */
#include "config.h"
#include "chakra-cmd.h"
#include "cli.h"
#include "commands.h"
#include "shardplan/memory.h"
#include "shardplan/shardplan.h"
#include "shardplan/workload.h"

#include <string.h>

#define CMD "plan"
#define DEFAULT_TOPOLOGY "dgx-h100"
#define DEFAULT_NODES 16 /* with the default topology: 128 GPUs */

static const char description[] =
  "Defaults: --model gpt-13b, --topology dgx-h100 with --nodes 16 (a --topology\n"
  "given without --nodes keeps its own node count), shard size = the world\n"
  "(plain ZeRO-3, DeepSpeed's default), DeepSpeed's bucket sizes.\n"
  "Precedence: the model, then --deepspeed-config (stage, MiCS, ZeRO++ and\n"
  "bucket keys, micro-batch, accumulation, bf16/fp16), then the options here.\n"
  "\n"
  "Output: with -o the plan JSON is written atomically and the text summary\n"
  "printed; without -o, --format json prints the plan JSON on stdout and\n"
  "--format text (default) only the summary.  Summary bytes per family add up\n"
  "the communication ops in nccl-tests' size convention (whole buffer for\n"
  "all_gather / reduce_scatter, per-rank buffer otherwise), sub-ops counted\n"
  "and composites not.\n"
  "\n"
  "Example: shardplan plan --model gpt-13b --topology dgx-h100 --nodes 4 --shard-size 8 -o plan.json";

/* Which fabric each family's collectives cross (issue 17), as plan meta:
 * "nvlink_domain" = GPUs per NVLink domain, and per family with ops
 * "fabric.<family>" = "nvlink" (every group inside one domain; "pcie" or
 * "shm" where that is what joins a node's ranks: sp_topo_spec_local_fabric),
 * "network" (every group crosses domains) or "mixed: K of N groups inside
 * one NVLink domain" (or node).  Ops carry their family, so each op's
 * fabric follows. */
static gboolean
set_fabric_meta (SpPlan *plan, const SpTopoSpec *spec, GError **error)
{
  g_autoptr (SpGroups) groups = sp_groups_build (sp_plan_groups_options (plan), error);
  if (groups == NULL)
    return FALSE;
  guint32 domain = sp_topo_spec_nvlink_domain (spec);
  g_autofree char *d = g_strdup_printf ("%u", domain);
  sp_plan_set_meta (plan, "nvlink_domain", d);
  gboolean used[SP_FAMILY_N] = { FALSE };
  for (guint32 i = 0; i < sp_plan_n_ops (plan); i++)
    {
      const SpOp *op = sp_plan_op (plan, i);
      if (sp_coll_is_communication (op->kind) && op->family < SP_FAMILY_N)
        used[op->family] = TRUE;
    }
  for (guint f = 0; f < SP_FAMILY_N; f++)
    {
      guint32 total = sp_groups_n_groups (groups, (SpFamily) f);
      if (!used[f] || total == 0)
        continue;
      guint32 in = sp_groups_n_within (groups, (SpFamily) f, domain);
      g_autofree char *key = g_strdup_printf ("fabric.%s", sp_family_name ((SpFamily) f));
      const char *local = sp_topo_spec_local_fabric (spec);
      g_autofree char *val = in == total ? g_strdup (local)
                             : in == 0   ? g_strdup ("network")
                                         : g_strdup_printf ("mixed: %u of %u groups inside one %s",
                                                            in, total, strcmp (local, "nvlink") == 0
                                                                ? "NVLink domain" : "node");
      sp_plan_set_meta (plan, key, val);
    }
  return TRUE;
}

static void
print_summary (const SpPlan *plan, const SpModel *model, const SpTopo *topo,
               const SpMemoryEstimate *mem)
{
  const SpTopoSpec *t = sp_topo_spec (topo);
  guint32 world = sp_topo_world_size (topo);
  gboolean cpu = t->intra_kind == SP_INTRA_SHM;
  printf ("plan: %s (%.4g parameters) on %s: %u %s x %u %s = %u %s\n", model->name,
          (double) sp_model_n_params (model), t->name, t->nodes,
          sp_cli_plural (t->nodes, "node", "nodes"), t->gpus_per_node,
          cpu ? sp_cli_plural (t->gpus_per_node, "CPU rank", "CPU ranks")
              : sp_cli_plural (t->gpus_per_node, "GPU", "GPUs"),
          world, sp_cli_plural (world, "rank", "ranks"));
  printf ("sharding: %s\n", sp_plan_get_meta (plan, "sharding"));
  printf ("micro-steps: %s of grad_accum %u (micro-batch %u, seq %u, %s)\n",
          sp_plan_get_meta (plan, "micro_steps"), model->grad_accum, model->micro_batch,
          model->seq_len, sp_dtype_name (model->dtype));
  guint64 n_kind[256] = { 0 };
  guint64 fam_bytes[SP_FAMILY_N] = { 0 }, fam_ops[SP_FAMILY_N] = { 0 };
  guint64 flops = 0;
  guint32 n = sp_plan_n_ops (plan);
  for (guint32 i = 0; i < n; i++)
    {
      const SpOp *op = sp_plan_op (plan, i);
      n_kind[op->kind & 0xff]++;
      flops += op->flops;
      if (sp_coll_is_communication (op->kind) && op->family < SP_FAMILY_N)
        {
          fam_bytes[op->family] += op->bytes;
          fam_ops[op->family]++;
        }
    }
  printf ("ops: %u\n", n);
  for (guint k = 0; k < 256; k++)
    if (n_kind[k])
      printf ("  %-26s %10" G_GUINT64_FORMAT "\n", sp_coll_name ((SpColl) k), n_kind[k]);
  printf ("bytes per family per step (GB = 1e9 B):\n");
  for (guint f = 0; f < SP_FAMILY_N; f++)
    if (fam_ops[f])
      {
        g_autofree char *key = g_strdup_printf ("fabric.%s", sp_family_name ((SpFamily) f));
        const char *fabric = sp_plan_get_meta (plan, key);
        printf ("  %-26s %12.3f GB in %" G_GUINT64_FORMAT " ops%s%s\n",
                sp_family_name ((SpFamily) f), fam_bytes[f] / 1e9, fam_ops[f],
                fabric ? ", fabric: " : "", fabric ? fabric : "");
      }
  printf ("compute: %.4g FLOP per rank per step (efficiency %s of %.4g TFLOP/s peak)\n",
          (double) flops, sp_plan_get_meta (plan, "compute_efficiency"), t->gpu_tflops);
  const double gib = (double) (1u << 30);
  printf ("memory per GPU (GiB = 2^30 B):\n");
  printf ("  %-26s %10.3f\n", "parameters", mem->params_bytes / gib);
  printf ("  %-26s %10.3f\n", "gradients", mem->grads_bytes / gib);
  printf ("  %-26s %10.3f\n", "optimizer (fp32 + Adam)", mem->optimizer_bytes / gib);
  printf ("  %-26s %10.3f\n", "reduce bucket", mem->reduce_bucket_bytes / gib);
  printf ("  %-26s %10.3f\n", "gathered parameters", mem->gathered_bytes / gib);
  printf ("  %-26s %10.3f\n", "activations", mem->activation_bytes / gib);
  printf ("  %-26s %10.3f\n", "reserve (estimate)", mem->reserve_bytes / gib);
  gboolean fits = sp_memory_fits (mem, t->gpu_memory_gib);
  printf ("  %-26s %10.3f of %.4g: %s\n", "total", mem->total_bytes / gib, t->gpu_memory_gib,
          fits ? "fits" : "does NOT fit");
}

int
sp_cmd_plan (int argc, char **argv)
{
  g_autofree char *model_s = NULL, *ds_s = NULL, *topology = NULL, *nodes_s = NULL,
                  *shard_s = NULL, *accum_s = NULL, *mb_s = NULL, *hpz_s = NULL, *ep_s = NULL,
                  *eff_s = NULL, *reserve_s = NULL, *output = NULL, *format_s = NULL,
                  *chakra = NULL;
  gboolean hierarchical = FALSE, qwz = FALSE, qgz = FALSE, one_step = FALSE;
  GOptionEntry entries[] = {
    { "model", 'm', 0, G_OPTION_ARG_FILENAME, &model_s,
      "Model preset (gpt-1b, gpt-13b, gpt-70b) or model JSON file (default gpt-13b)", "NAME|FILE" },
    { "deepspeed-config", 'c', 0, G_OPTION_ARG_FILENAME, &ds_s,
      "DeepSpeed config JSON (zero_optimization, micro-batch, accumulation, bf16/fp16)", "FILE" },
    { "topology", 't', 0, G_OPTION_ARG_FILENAME, &topology,
      "Topology INI file or preset (default dgx-h100)", "FILE|PRESET" },
    { "nodes", 'n', 0, G_OPTION_ARG_STRING, &nodes_s,
      "Node count (default 16 with the default topology, else the topology's)", "N" },
    { "shard-size", 's', 0, G_OPTION_ARG_STRING, &shard_s,
      "MiCS shard size S (default: the world, i.e. ZeRO-3)", "S" },
    { "hierarchical", 0, 0, G_OPTION_ARG_NONE, &hierarchical,
      "MiCS hierarchical (two-stage) parameter all-gather", NULL },
    { "grad-accum", 0, 0, G_OPTION_ARG_STRING, &accum_s, "Gradient accumulation steps", "K" },
    { "micro-batch", 0, 0, G_OPTION_ARG_STRING, &mb_s, "Sequences per GPU per micro-step", "B" },
    { "qwz", 0, 0, G_OPTION_ARG_NONE, &qwz, "ZeRO++ quantized weights (int8 all-gather)", NULL },
    { "qgz", 0, 0, G_OPTION_ARG_NONE, &qgz, "ZeRO++ quantized gradients (int4 all-to-all)", NULL },
    { "hpz", 0, 0, G_OPTION_ARG_STRING, &hpz_s, "ZeRO++ hpZ secondary partition size", "Z" },
    { "expert-parallel", 0, 0, G_OPTION_ARG_STRING, &ep_s, "MoE expert-parallel size", "E" },
    { "compute-efficiency", 0, 0, G_OPTION_ARG_STRING, &eff_s,
      "Fraction of peak FLOP/s compute reaches, (0, 1] (default 0.5, an assumption)", "F" },
    { "one-micro-step", 0, 0, G_OPTION_ARG_NONE, &one_step,
      "Emit only the boundary micro-step instead of all of them", NULL },
    { "reserve", 0, 0, G_OPTION_ARG_STRING, &reserve_s,
      "Framework memory reserve per GPU (default 2G = 2 GiB, an estimate; "
      "K/M/G/T and KiB… are powers of 1024, KB… of 1000)", "SIZE" },
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Write the plan JSON here (atomically)", "FILE" },
    { "format", 'f', 0, G_OPTION_ARG_STRING, &format_s, "text (default) or json", "text|json" },
    { "chakra", 0, 0, G_OPTION_ARG_FILENAME, &chakra,
      "Also write the plan as Chakra ET files for ASTRA-sim: PREFIX.<rank>.et, "
      "PREFIX.groups.json (as 'shardplan chakra export')", "PREFIX" },
    { NULL },
  };
  int status;
  if (!sp_cli_parse (CMD, NULL, "Build the plan of one training step from a workload and a topology.",
                     description, entries, &argc, &argv, &status))
    return status;
  if (argc > 1)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "unexpected argument '%s' (see 'shardplan plan --help')",
                        argv[1]);
  SpFormat format;
  if (!sp_cli_format (CMD, format_s, (1u << SP_FORMAT_TEXT) | (1u << SP_FORMAT_JSON), &format))
    return SP_EXIT_USAGE;
  g_autoptr (SpCliFiles) files = sp_cli_files_new (CMD);
  sp_cli_files_input (files, "--model", model_s);
  sp_cli_files_input (files, "--deepspeed-config", ds_s);
  sp_cli_files_input (files, "--topology", topology);
  sp_cli_files_output (files, "-o/--output", output);
  if (!sp_cli_files_check (files))
    return SP_EXIT_USAGE;

  GError *error = NULL;
  SpModel model;
  if (!sp_model_open (model_s ? model_s : SP_MODEL_DEFAULT, &model, &error))
    return sp_cli_input_error (CMD, error);
  SpShardingOptions sh;
  sp_sharding_options_init (&sh);
  if (ds_s)
    {
      g_auto (GStrv) warnings = NULL;
      if (!sp_deepspeed_config_apply_file (ds_s, &sh, &model, &warnings, &error))
        return sp_cli_input_error (CMD, error);
      for (char **w = warnings; w && *w; w++)
        fprintf (stderr, "shardplan %s: warning: %s\n", CMD, *w);
    }

  guint32 nodes = topology ? 0 : DEFAULT_NODES;
  if (!sp_cli_u32 (CMD, "--nodes", nodes_s, 1, 1u << 24, &nodes))
    return SP_EXIT_USAGE;
  if (!sp_cli_u32 (CMD, "--shard-size", shard_s, 1, 1u << 31, &sh.shard_size)
      || !sp_cli_u32 (CMD, "--grad-accum", accum_s, 1, 65536, &model.grad_accum)
      || !sp_cli_u32 (CMD, "--micro-batch", mb_s, 1, 65536, &model.micro_batch)
      || !sp_cli_u32 (CMD, "--hpz", hpz_s, 1, 1u << 31, &sh.hpz_partition_size)
      || !sp_cli_u32 (CMD, "--expert-parallel", ep_s, 1, 1u << 31, &sh.expert_parallel))
    return SP_EXIT_USAGE;
  if (hierarchical)
    sh.hierarchical = TRUE;
  if (qwz)
    sh.quantized_weights = TRUE;
  if (qgz)
    sh.quantized_gradients = TRUE;

  SpWorkloadPlanOptions po;
  sp_workload_plan_options_init (&po);
  po.one_micro_step = one_step;
  if (eff_s && !sp_parse_double ("--compute-efficiency", eff_s, 1e-6, 1.0, &po.compute_efficiency,
                                 &error))
    return sp_cli_error (CMD, error);
  SpMemoryOptions mo;
  sp_memory_options_init (&mo);
  if (reserve_s)
    g_strstrip (reserve_s);
  if (reserve_s && !sp_parse_bytes ("--reserve", reserve_s, 0, G_GUINT64_CONSTANT (1) << 50,
                                    &mo.reserve_bytes, &error))
    return sp_cli_error (CMD, error);
  /* "--reserve 2" meant 2 GiB, not 2 bytes: a reserve is GiB-sized, so a
   * plain number under 1 MiB is taken for a missing unit */
  if (reserve_s && mo.reserve_bytes > 0 && mo.reserve_bytes < (1u << 20)
      && strspn (reserve_s, "0123456789") == strlen (reserve_s))
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "--reserve '%s' is %s bytes, less than 1 MiB: give "
                        "a unit (%sG for GiB, %sGB for 10^9 B, or %sB for bytes)",
                        reserve_s, reserve_s, reserve_s, reserve_s, reserve_s);

  g_autoptr (SpTopo) topo = sp_cli_topo_open (CMD, topology ? topology : DEFAULT_TOPOLOGY, nodes,
                                               &error);
  if (!topo)
    return sp_cli_error (CMD, error);
  po.world_size = sp_topo_world_size (topo);
  po.devices_per_node = sp_topo_spec (topo)->gpus_per_node;
  if (chakra)
    {
      /* the rank files' names need the world size */
      if (*chakra == '\0')
        return sp_cli_fail (CMD, SP_EXIT_USAGE, "--chakra PREFIX is empty");
      sp_chakra_cmd_outputs (files, "--chakra", chakra, po.world_size);
      if (!sp_cli_files_check (files))
        return SP_EXIT_USAGE;
    }

  g_autoptr (SpPlan) plan = sp_workload_build_plan (&model, &sh, &po, &error);
  if (!plan)
    return sp_cli_error (CMD, error);
  sp_cli_plan_record_topology (plan, topo);
  if (!set_fabric_meta (plan, sp_topo_spec (topo), &error))
    return sp_cli_error (CMD, error);
  SpMemoryEstimate mem;
  if (!sp_memory_estimate (&model, &sh, po.world_size, &mo, &mem, &error))
    return sp_cli_error (CMD, error);

  if (chakra)
    {
      int rc = sp_chakra_cmd_write (CMD, plan, topo, chakra, FALSE);
      if (rc != SP_EXIT_OK)
        return rc;
    }
  if (output)
    {
      if (!sp_plan_save (plan, output, &error))
        return sp_cli_error (CMD, error);
      if (format == SP_FORMAT_TEXT)
        print_summary (plan, &model, topo, &mem);
      fflush (stdout);
      sp_cli_wrote (CMD, output, "plan of %u %s on %u %s", sp_plan_n_ops (plan),
                    sp_cli_plural (sp_plan_n_ops (plan), "op", "ops"), sp_plan_world_size (plan),
                    sp_cli_plural (sp_plan_world_size (plan), "rank", "ranks"));
      return SP_EXIT_OK;
    }
  if (format == SP_FORMAT_JSON)
    {
      g_autofree char *json = sp_plan_to_json (plan);
      if (!sp_cli_write_output (NULL, json, strlen (json), &error))
        return sp_cli_error (CMD, error);
      return SP_EXIT_OK;
    }
  print_summary (plan, &model, topo, &mem);
  return SP_EXIT_OK;
}
