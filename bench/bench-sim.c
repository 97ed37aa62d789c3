/* bench-sim: how fast the simulator answers one collective at scale.
 *
 *   bench-sim [--model des|analytic] [--collective NAME] [--bytes N]
 *             [--fabric rail|fat-tree|single-switch] [--oversubscription R]
 *             [--algorithm A] [--protocol P]
 *             RANKS...
 *
 * Default: 1 GiB all_reduce, 8 GPUs per node (dgx-h100 numbers), rail
 * fabric 2:1 oversubscribed, des model.  For each rank count prints the
 * simulated time, algbw/busbw, the wall-clock seconds of the estimate
 * (CLOCK_MONOTONIC), the process's peak RSS so far (getrusage, MB = 1e6 B),
 * and the engine's events.  Run each rank count in its own process (see
 * bench-sim.sh) for per-size peak memory. */
#include "config.h"
#include "shardplan/shardplan.h"
#include "shardplan/sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double
now_s (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double
peak_rss_mb (void)
{
  struct rusage ru;
  getrusage (RUSAGE_SELF, &ru);
  return ru.ru_maxrss * 1024.0 / 1e6; /* ru_maxrss is in KiB on Linux */
}

int
main (int argc, char **argv)
{
  SpSimModel model = SP_SIM_DES;
  SpColl coll = SP_COLL_ALL_REDUCE;
  guint64 bytes = (guint64) 1 << 30;
  SpFabric fabric = SP_FABRIC_RAIL;
  double oversub = 2.0;
  SpAlgo algo = SP_ALGO_AUTO;
  SpProto proto = SP_PROTO_AUTO;
  int i = 1;
  for (; i < argc && strncmp (argv[i], "--", 2) == 0; i += 2)
    {
      if (i + 1 >= argc)
        {
          fprintf (stderr, "bench-sim: %s needs a value\n", argv[i]);
          return 2;
        }
      const char *v = argv[i + 1];
      if (strcmp (argv[i], "--model") == 0 && sp_sim_model_from_name (v, &model))
        continue;
      if (strcmp (argv[i], "--collective") == 0 && sp_coll_from_name (v, &coll))
        continue;
      if (strcmp (argv[i], "--bytes") == 0 && sp_parse_bytes ("--bytes", v, 1, (guint64) 1 << 50, &bytes, NULL))
        continue;
      if (strcmp (argv[i], "--algorithm") == 0 && sp_algo_from_name (v, &algo))
        continue;
      if (strcmp (argv[i], "--protocol") == 0 && sp_proto_from_name (v, &proto))
        continue;
      if (strcmp (argv[i], "--fabric") == 0)
        {
          fabric = strcmp (v, "rail") == 0 ? SP_FABRIC_RAIL
                   : strcmp (v, "fat-tree") == 0 ? SP_FABRIC_FAT_TREE : SP_FABRIC_SINGLE_SWITCH;
          continue;
        }
      if (strcmp (argv[i], "--oversubscription") == 0)
        {
          oversub = g_ascii_strtod (v, NULL);
          continue;
        }
      fprintf (stderr, "bench-sim: bad option %s %s\n", argv[i], v);
      return 2;
    }
  if (i >= argc)
    {
      fprintf (stderr, "usage: bench-sim [options] RANKS...\n");
      return 2;
    }
  printf ("# model %s, %s, %" G_GUINT64_FORMAT " bytes, 8 GPUs/node (H100, 450 GB/s NVSwitch, "
          "8x400 Gb/s), fabric %s %.0f:1\n",
          sp_sim_model_name (model), sp_coll_name (coll), bytes, sp_fabric_name (fabric), oversub);
  printf ("#   ranks  nodes  algo   proto     time_us   algbw   busbw   wall_s  peak_rss_mb\n");
  for (; i < argc; i++)
    {
      guint32 ranks = (guint32) strtoul (argv[i], NULL, 10);
      if (ranks < 8 || ranks % 8)
        {
          fprintf (stderr, "bench-sim: rank count %s is not a positive multiple of 8\n", argv[i]);
          return 2;
        }
      SpTopoSpec spec = { 0 };
      g_strlcpy (spec.name, "bench", sizeof spec.name);
      g_strlcpy (spec.gpu_model, "H100-SXM5-80GB", sizeof spec.gpu_model);
      spec.nodes = ranks / 8;
      spec.gpus_per_node = 8;
      spec.gpu_memory_gib = 80;
      spec.gpu_tflops = 989;
      spec.intra_kind = SP_INTRA_NVSWITCH;
      spec.intra_bandwidth_gbs = 450;
      spec.intra_latency_us = 0.6;
      spec.nics_per_node = 8;
      spec.nic_gbps = 400;
      spec.inter_latency_us = 2.7;
      spec.inter_step_floor_us = SP_TOPO_LATENCY_UNSET; /* the transport's (ib: none) */
      spec.inter_inject_copy_us = SP_TOPO_LATENCY_UNSET;
      spec.fabric = fabric;
      spec.oversubscription = oversub;
      GError *error = NULL;
      SpTopo *topo = sp_topo_new (&spec, &error);
      if (topo == NULL)
        {
          fprintf (stderr, "bench-sim: %s\n", error->message);
          return 1;
        }
      SpCollRequest req;
      sp_coll_request_init (&req);
      req.coll = coll;
      req.bytes = bytes;
      req.algo = algo;
      req.proto = proto;
      SpCollEstimate est;
      double t0 = now_s ();
      gboolean ok = sp_sim_estimate (topo, model, &req, &est, &error);
      double wall = now_s () - t0;
      sp_topo_free (topo);
      if (!ok)
        {
          fprintf (stderr, "bench-sim: %u ranks: %s\n", ranks, error->message);
          return 1;
        }
      printf ("%9u %6u  %-5s  %-6s %10.1f  %6.2f  %6.2f  %7.3f  %11.1f\n", ranks, ranks / 8,
              sp_algo_name (est.algo), sp_proto_name (est.proto), est.time_ns / 1000.0,
              est.algbw_gbs, est.busbw_gbs, wall, peak_rss_mb ());
      fflush (stdout);
    }
  return 0;
}
