/* `shardplan groups`: the process-group families of a layout, exactly as
 * DeepSpeed builds them (the library does the building; this file turns
 * options into SpGroupsOptions and picks the printer). */
#include "config.h"
#include "cli.h"
#include "commands.h"
#include "groups-output.h"
#include "shardplan/shardplan.h"

#include <sys/resource.h>
#include <unistd.h>

#define CMD "groups"

/* Sizes are ranks: at most 2^31 of them (DESIGN: world sizes past 2^31 are
 * bad input). */
#define MAX_RANKS ((guint32) 1 << 31)
#define MAX_NODES ((guint32) 1 << 24) /* topo.h's range for [cluster] nodes */

static const char description[] =
  "Families are printed only when their options are given:\n"
  "  --shard-size S            shard, replicate (MiCS; + shard_intra_node and\n"
  "                            shard_inter_node with --hierarchical)\n"
  "  --tensor-parallel T       tensor, data (the TP mesh)\n"
  "  --expert-parallel E       expert, expert_data (with T and P if given)\n"
  "  --zero-param-group-size Z zero_param (ZeRO++ hpZ)\n"
  "  --local-all-to-all        local_all_to_all (qgZ: local_i groups, then global_i)\n"
  "\n"
  "The text output ends each listing with the fabric: per family, how many\n"
  "groups stay inside one node and inside one NVLink domain (--nvlink-domain,\n"
  "or the topology's [cluster] nvlink_domain: 72 on a GB200 NVL72 rack), i.e.\n"
  "whether its collectives ride NVLink or cross the network.\n"
  "\n"
  "--format json prints {\"world_size\": W, \"families\": {\"<family>\": [[rank, ...], ...], ...},\n"
  "\"creation_order\": [[\"<family>\", index], ...]} with DeepSpeed's rank lists and\n"
  "communicator creation order.  A configuration DeepSpeed rejects exits with status 2.\n"
  "\n"
  "Example: shardplan groups --world-size 16 --devices-per-node 4 --shard-size 8 --hierarchical";

/* The memory this process can use, in bytes (0: unknown), and what sets it:
 * the machine's, the address-space limit (ulimit -v) or the cgroup's
 * (memory.max), whichever is least. */
static double
memory_limit (const char **what)
{
  double limit = 0;
  long pages = sysconf (_SC_PHYS_PAGES), page = sysconf (_SC_PAGESIZE);
  if (pages > 0 && page > 0)
    {
      limit = (double) pages * (double) page;
      *what = "this machine's memory";
    }
  struct rlimit rl;
  if (getrlimit (RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
      && (limit == 0 || (double) rl.rlim_cur < limit))
    {
      limit = (double) rl.rlim_cur;
      *what = "this process's address-space limit (ulimit -v)";
    }
  g_autofree char *text = NULL;
  if (g_file_get_contents ("/sys/fs/cgroup/memory.max", &text, NULL, NULL))
    {
      char *end = NULL;
      guint64 v = g_ascii_strtoull (text, &end, 10);
      if (end != text && v > 0 && (limit == 0 || (double) v < limit))
        {
          limit = (double) v;
          *what = "this cgroup's memory.max";
        }
    }
  return limit;
}

int
sp_cmd_groups (int argc, char **argv)
{
  g_autofree char *world_s = NULL, *dpn_s = NULL, *shard_s = NULL, *tp_s = NULL, *pp_s = NULL,
                  *ep_s = NULL, *zpg_s = NULL, *nodes_s = NULL, *topology = NULL, *format_s = NULL,
                  *domain_s = NULL;
  gboolean hierarchical = FALSE, data_before_expert = FALSE, local_a2a = FALSE;
  GOptionEntry entries[] = {
    { "world-size", 'w', 0, G_OPTION_ARG_STRING, &world_s, "Number of ranks W", "W" },
    { "devices-per-node", 'd', 0, G_OPTION_ARG_STRING, &dpn_s,
      "GPUs per node D (default 8): MiCS hierarchy and local all-to-all", "D" },
    { "topology", 't', 0, G_OPTION_ARG_FILENAME, &topology,
      "Take W and D from a topology INI file or preset (instead of --world-size, "
      "--devices-per-node)", "FILE|PRESET" },
    { "nodes", 'n', 0, G_OPTION_ARG_STRING, &nodes_s,
      "Node count of the --topology (default: the file's, or 1 for a preset)", "N" },
    { "shard-size", 's', 0, G_OPTION_ARG_STRING, &shard_s, "MiCS shard size S", "S" },
    { "hierarchical", 0, 0, G_OPTION_ARG_NONE, &hierarchical,
      "MiCS hierarchical all-gather groups (needs --shard-size)", NULL },
    { "tensor-parallel", 0, 0, G_OPTION_ARG_STRING, &tp_s, "Tensor-parallel size T", "T" },
    { "pipeline-parallel", 0, 0, G_OPTION_ARG_STRING, &pp_s,
      "Pipeline-parallel size P (with --expert-parallel)", "P" },
    { "expert-parallel", 0, 0, G_OPTION_ARG_STRING, &ep_s, "Expert-parallel size E", "E" },
    { "data-before-expert", 0, 0, G_OPTION_ARG_NONE, &data_before_expert,
      "DeepSpeed's use_data_before_expert_parallel_ ordering (needs --expert-parallel)", NULL },
    { "zero-param-group-size", 0, 0, G_OPTION_ARG_STRING, &zpg_s,
      "ZeRO++ hpZ secondary partition size Z", "Z" },
    { "local-all-to-all", 0, 0, G_OPTION_ARG_NONE, &local_a2a,
      "qgZ local/global all-to-all groups", NULL },
    { "nvlink-domain", 0, 0, G_OPTION_ARG_STRING, &domain_s,
      "GPUs per NVLink domain, a multiple of D (default: the topology's, else D): "
      "which groups stay on NVLink", "G" },
    { "format", 'f', 0, G_OPTION_ARG_STRING, &format_s, "Output format: text (default) or json",
      "text|json" },
    { NULL },
  };
  int status;
  if (!sp_cli_parse (CMD, NULL, "Print the process-group families of a layout, as DeepSpeed builds them.",
                     description, entries, &argc, &argv, &status))
    return status;
  if (argc > 1)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "unexpected argument '%s' (see 'shardplan groups --help')",
                        argv[1]);

  SpFormat format;
  if (!sp_cli_format (CMD, format_s, (1u << SP_FORMAT_TEXT) | (1u << SP_FORMAT_JSON), &format))
    return SP_EXIT_USAGE;

  SpGroupsOptions opts;
  sp_groups_options_init (&opts);
  guint32 domain = 0; /* GPUs per NVLink domain; 0: the node */
  const char *link = NULL; /* what joins a node's ranks (sp_topo_spec_local_fabric); NULL: NVLink */

  /* Where W and D come from: --world-size [--devices-per-node], or --topology [--nodes]. */
  if (topology != NULL)
    {
      if (world_s != NULL)
        return sp_cli_fail (CMD, SP_EXIT_USAGE,
                            "--topology and --world-size cannot be given together: the topology's "
                            "nodes × gpus_per_node is the world size");
      if (dpn_s != NULL)
        return sp_cli_fail (CMD, SP_EXIT_USAGE,
                            "--topology and --devices-per-node cannot be given together: the "
                            "topology's gpus_per_node is the devices per node");
      guint32 nodes = 0;
      if (!sp_cli_u32 (CMD, "--nodes", nodes_s, 1, MAX_NODES, &nodes))
        return SP_EXIT_USAGE;
      GError *error = NULL;
      g_autoptr (SpTopo) topo = sp_topo_open (topology, nodes, &error);
      if (topo == NULL)
        {
          /* A missing or unreadable file is bad input here, not a failed run. */
          sp_cli_fail (CMD, SP_EXIT_USAGE, "%s", error->message);
          g_error_free (error);
          return SP_EXIT_USAGE;
        }
      const SpTopoSpec *spec = sp_topo_spec (topo);
      guint64 world = (guint64) spec->nodes * spec->gpus_per_node;
      if (world > MAX_RANKS)
        return sp_cli_fail (CMD, SP_EXIT_USAGE,
                            "topology %s has %" G_GUINT64_FORMAT " ranks: at most %u are accepted",
                            topology, world, MAX_RANKS);
      opts.world_size = (guint32) world;
      opts.devices_per_node = spec->gpus_per_node;
      domain = sp_topo_spec_nvlink_domain (spec);
      link = sp_topo_spec_local_fabric (spec);
    }
  else
    {
      if (nodes_s != NULL)
        return sp_cli_fail (CMD, SP_EXIT_USAGE, "--nodes needs --topology");
      if (world_s == NULL)
        return sp_cli_fail (CMD, SP_EXIT_USAGE,
                            "give --world-size W or --topology FILE|PRESET (see 'shardplan groups --help')");
      if (!sp_cli_u32 (CMD, "--world-size", world_s, 1, MAX_RANKS, &opts.world_size)
          || !sp_cli_u32 (CMD, "--devices-per-node", dpn_s, 1, MAX_RANKS, &opts.devices_per_node))
        return SP_EXIT_USAGE;
    }

  if (!sp_cli_u32 (CMD, "--shard-size", shard_s, 1, MAX_RANKS, &opts.shard_size)
      || !sp_cli_u32 (CMD, "--tensor-parallel", tp_s, 1, MAX_RANKS, &opts.tensor_parallel)
      || !sp_cli_u32 (CMD, "--pipeline-parallel", pp_s, 1, MAX_RANKS, &opts.pipeline_parallel)
      || !sp_cli_u32 (CMD, "--expert-parallel", ep_s, 1, MAX_RANKS, &opts.expert_parallel)
      || !sp_cli_u32 (CMD, "--zero-param-group-size", zpg_s, 1, MAX_RANKS,
                      &opts.zero_param_group_size))
    return SP_EXIT_USAGE;

  if (domain_s != NULL)
    {
      guint32 dpn = opts.devices_per_node ? opts.devices_per_node : 1;
      if (!sp_cli_u32 (CMD, "--nvlink-domain", domain_s, 1, MAX_RANKS, &domain))
        return SP_EXIT_USAGE;
      if (domain % dpn != 0)
        return sp_cli_fail (CMD, SP_EXIT_USAGE,
                            "--nvlink-domain %u is not a multiple of the %u GPUs per node "
                            "(an NVLink domain is whole nodes)", domain, dpn);
    }

  if (hierarchical && shard_s == NULL)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "--hierarchical needs --shard-size");
  if (data_before_expert && ep_s == NULL)
    return sp_cli_fail (CMD, SP_EXIT_USAGE, "--data-before-expert needs --expert-parallel");
  if (pp_s != NULL && ep_s == NULL)
    return sp_cli_fail (CMD, SP_EXIT_USAGE,
                        "--pipeline-parallel is only used by the expert groups: it needs --expert-parallel");
  opts.hierarchical = hierarchical;
  opts.data_before_expert = data_before_expert;
  opts.local_all_to_all = local_a2a;

  GError *error = NULL;
  if (!sp_groups_options_check (&opts, &error))
    return sp_cli_error (CMD, error);
  /* Every family (the world's included) lists each rank once; with each
   * group's own overhead that takes 12.5-14.5 bytes per rank and family
   * (/usr/bin/time at 2^22 ranks: world + shard + replicate 157.6 MB,
   * twelve families 690.2 MB, groups of one rank 183.0 MB for three;
   * bench/RESULTS.md): 20 leaves a margin.  Refuse up front what this
   * machine (or this process's address space or cgroup) cannot hold,
   * rather than let the OOM killer stop it minutes later. */
  guint n_families = 1 + (opts.shard_size ? (hierarchical ? 4 : 2) : 0)
                     + (opts.tensor_parallel ? 2 : 0) + (opts.expert_parallel ? 2 : 0)
                     + (opts.zero_param_group_size ? 1 : 0) + (local_a2a ? 2 : 0);
  double need = 20.0 * opts.world_size * n_families;
  const char *limit_what = NULL;
  double limit = memory_limit (&limit_what);
  if (limit > 0 && need > limit)
    {
      g_autofree char *source = topology
          ? g_strdup_printf ("--topology %s (%u %s)", topology, opts.world_size,
                             sp_cli_plural (opts.world_size, "rank", "ranks"))
          : g_strdup_printf ("--world-size %u", opts.world_size);
      return sp_cli_fail (CMD, SP_EXIT_USAGE,
                          "%s: building %u process-group families of %u ranks needs about %.1f "
                          "GiB, more than the %.1f GiB of %s", source, n_families,
                          opts.world_size, need / (1 << 30), limit / (1 << 30), limit_what);
    }

  g_autoptr (SpGroups) groups = sp_groups_build (&opts, &error);
  if (groups == NULL)
    return sp_cli_error (CMD, error);

  const char *const *warnings = sp_groups_warnings (groups);
  for (gsize i = 0; warnings != NULL && warnings[i] != NULL; i++)
    fprintf (stderr, "shardplan " CMD ": warning: %s\n", warnings[i]);

  gboolean ok = format == SP_FORMAT_JSON ? sp_groups_print_json (groups, stdout, &error)
                                         : sp_groups_print_text (groups, domain, link, stdout, &error);
  if (!ok)
    return sp_cli_error (CMD, error);
  return SP_EXIT_OK;
}
