/* bench/bench-kernels.c — throughput of the data kernels of kernels.h.
 *
 * Built twice: bench-kernels (CUDA builds) times the GPU kernels with CUDA
 * events and reports each as a fraction of the device's measured
 * cudaMemcpy device-to-device bandwidth, and checks one call of each
 * against the CPU reference (#wrong = differing bytes); bench-kernels-cpu
 * (-DSP_BENCH_CPU) times the CPU references with the monotonic clock.
 *
 * GB/s = 1e9 B/s of bytes read + written per call (a D2D copy of B bytes
 * counts 2B).  Workload: `-b BYTES` of fp16 input (default 256 MiB GPU,
 * 32 MiB CPU), quantization groups of E = 4096 values, qgZ with N = 2
 * nodes × D = 8 devices, reduce_scatter_coalesced over W = 8 ranks of 16
 * tensors.  `-o FILE` also writes the rows as tab-separated values. */
#include "config.h"

#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shardplan/kernels.h"

#define E 4096u
#define NODES 2u
#define DEVS 8u
#define WORLD 8u
#define NT 16u

typedef struct
{
  uint64_t n, G;                  /* fp16 elements, groups of E */
  uint64_t numels[NT];
  uint64_t seg;                   /* RS segment, elements */
  /* host (reference) and device buffers; the GPU ones are NULL on CPU runs */
  uint16_t *x, *deq, *fin, *buf, *out;
  uint8_t *q4, *q8, *rq;
  float *sc4, *sc8, *rsc;
  const void *tin[NT];
  void *tout[NT];
  int gpu;
} Bench;

typedef struct
{
  const char *name;
  uint64_t bytes;                 /* read + written per call */
  SpKernStatus (*run) (Bench *b, void *stream);
  /* output compared after one call on each side: a pointer member of
   * Bench and its size in bytes */
  size_t out_off;                 /* offsetof a pointer member of Bench */
  uint64_t out_bytes;
} Kernel;
/* (scale is checked after one call too; its timed loop then keeps
 * dividing the same buffer, which does not change its cost) */

static SpKernStatus
k_quant4 (Bench *b, void *s)
{
  return b->gpu ? sp_kern_gpu_swizzle_quant (b->x, b->G, E, 4, NODES, DEVS, 1, b->q4, b->sc4, s)
                : sp_kern_cpu_swizzle_quant (b->x, b->G, E, 4, NODES, DEVS, 1, b->q4, b->sc4);
}
static SpKernStatus
k_quant8 (Bench *b, void *s)
{
  return b->gpu ? sp_kern_gpu_swizzle_quant (b->x, b->G, E, 8, NODES, DEVS, 1, b->q8, b->sc8, s)
                : sp_kern_cpu_swizzle_quant (b->x, b->G, E, 8, NODES, DEVS, 1, b->q8, b->sc8);
}
static SpKernStatus
k_dequant4 (Bench *b, void *s)
{
  return b->gpu ? sp_kern_gpu_dequant (b->q4, b->sc4, b->G, E, 4, b->deq, s)
                : sp_kern_cpu_dequant (b->q4, b->sc4, b->G, E, 4, b->deq);
}
static SpKernStatus
k_reduce4 (Bench *b, void *s)
{
  uint64_t per = b->G / DEVS;
  return b->gpu ? sp_kern_gpu_quant_reduce (b->q4, b->sc4, DEVS, per, E, 4, b->rq, b->rsc, s)
                : sp_kern_cpu_quant_reduce (b->q4, b->sc4, DEVS, per, E, 4, b->rq, b->rsc);
}
static SpKernStatus
k_final4 (Bench *b, void *s)
{
  uint64_t per = b->G / NODES;
  return b->gpu ? sp_kern_gpu_qgz_final (b->q4, b->sc4, NODES, DEVS, per, E, 4,
                                         SP_KERN_QGZ_TRUE_MEAN, b->fin, s)
                : sp_kern_cpu_qgz_final (b->q4, b->sc4, NODES, DEVS, per, E, 4,
                                         SP_KERN_QGZ_TRUE_MEAN, b->fin);
}
static SpKernStatus
k_pack (Bench *b, void *s)
{
  return b->gpu ? sp_kern_gpu_rs_pack (b->tin, b->numels, NT, WORLD, 2, b->buf, s)
                : sp_kern_cpu_rs_pack (b->tin, b->numels, NT, WORLD, 2, b->buf);
}
static SpKernStatus
k_unpack (Bench *b, void *s)
{
  return b->gpu ? sp_kern_gpu_rs_unpack (b->buf, b->numels, NT, WORLD, 0, 2, b->tout, s)
                : sp_kern_cpu_rs_unpack (b->buf, b->numels, NT, WORLD, 0, 2, b->tout);
}
static SpKernStatus
k_scale (Bench *b, void *s)
{
  return b->gpu ? sp_kern_gpu_scale (b->deq, b->n, SP_KERN_F16, WORLD, s)
                : sp_kern_cpu_scale (b->deq, b->n, SP_KERN_F16, WORLD);
}

/* Host workload: random fp16 (never zero), tensors as slices of x. */
static void
bench_init_host (Bench *b, uint64_t bytes)
{
  b->n = bytes / 2 / ((uint64_t) E * NODES * DEVS) * ((uint64_t) E * NODES * DEVS);
  if (b->n == 0)
    b->n = (uint64_t) E * NODES * DEVS;
  b->G = b->n / E;
  GRand *rng = g_rand_new_with_seed (1);
  b->x = g_new (uint16_t, b->n);
  for (uint64_t i = 0; i < b->n; i++)
    b->x[i] = sp_kern_f32_to_f16 ((float) ((g_rand_double (rng) * 2 - 1) * 0.99 + 0.005));
  g_rand_free (rng);
  uint64_t left = b->n;
  for (uint32_t t = 0; t < NT; t++)        /* halving sizes, odd remainders */
    {
      b->numels[t] = t + 1 < NT ? left / 2 + (t % 3) : left;
      if (b->numels[t] > left)
        b->numels[t] = left;
      left -= b->numels[t];
    }
  b->seg = sp_kern_rs_segment (b->numels, NT, WORLD);
}

/* Allocate every output with malloc (CPU) or cudaMalloc (GPU). */
static void *
balloc (Bench *b, uint64_t bytes)
{
  void *p = b->gpu ? sp_kern_gpu_malloc (bytes) : g_malloc (bytes);
  if (p == NULL)
    {
      fprintf (stderr, "bench-kernels: cannot allocate %" G_GUINT64_FORMAT " bytes: %s\n", bytes,
               sp_kern_gpu_error_string ());
      exit (1);
    }
  return p;
}

static void
bench_alloc (Bench *b, const Bench *host)
{
  if (b != host)                           /* a device copy of the input */
    {
      b->n = host->n;
      b->G = host->G;
      b->seg = host->seg;
      memcpy (b->numels, host->numels, sizeof b->numels);
      b->x = balloc (b, b->n * 2);
      if (sp_kern_gpu_memcpy (b->x, host->x, b->n * 2) != SP_KERN_OK)
        {
          fprintf (stderr, "bench-kernels: upload failed: %s\n", sp_kern_gpu_error_string ());
          exit (1);
        }
    }
  b->deq = balloc (b, b->n * 2);
  b->fin = balloc (b, b->n / NODES * 2);
  b->buf = balloc (b, (uint64_t) WORLD * b->seg * 2);
  b->out = balloc (b, b->seg * 2);
  b->q4 = balloc (b, b->n / 2);
  b->q8 = balloc (b, b->n);
  b->rq = balloc (b, b->n / 2 / DEVS);
  b->sc4 = balloc (b, b->G * 4);
  b->sc8 = balloc (b, b->G * 4);
  b->rsc = balloc (b, b->G / DEVS * 4);
  uint64_t off = 0, ooff = 0;
  for (uint32_t t = 0; t < NT; t++)
    {
      b->tin[t] = b->x + off;
      b->tout[t] = b->out + ooff;
      off += b->numels[t];
      ooff += sp_kern_rs_slice_len (b->numels[t], WORLD, 0);
    }
}

static void
bench_free (Bench *b)
{
  void *bufs[] = { b->x, b->deq, b->fin, b->buf, b->out, b->q4, b->q8, b->rq,
                   b->sc4, b->sc8, b->rsc };
  for (size_t i = 0; i < G_N_ELEMENTS (bufs); i++)
    {
      if (b->gpu)
        sp_kern_gpu_free (bufs[i]);
      else
        g_free (bufs[i]);
    }
}

typedef struct { Bench *b; const Kernel *k; } GpuCall;

static SpKernStatus
gpu_call (void *ctx, void *stream)
{
  GpuCall *c = ctx;
  return c->k->run (c->b, stream);
}

typedef struct { void *dst; const void *src; uint64_t bytes; } CopyCall;

static SpKernStatus
copy_call (void *ctx, void *stream)
{
  CopyCall *c = ctx;
  return sp_kern_gpu_memcpy_async (c->dst, c->src, c->bytes, stream);
}

static int
usage (void)
{
  fprintf (stderr, "usage: bench-kernels [-b BYTES] [-i ITERS] [-o FILE.tsv]\n");
  return 2;
}

int
main (int argc, char **argv)
{
#ifdef SP_BENCH_CPU
  const int gpu = 0;
  uint64_t bytes = 32ull << 20;
  uint32_t iters = 3;
#else
  const int gpu = 1;
  uint64_t bytes = 256ull << 20;
  uint32_t iters = 20;
#endif
  const char *tsv_path = NULL;
  for (int a = 1; a < argc; a++)
    {
      if (strcmp (argv[a], "-b") == 0 && a + 1 < argc)
        bytes = g_ascii_strtoull (argv[++a], NULL, 10);
      else if (strcmp (argv[a], "-i") == 0 && a + 1 < argc)
        iters = (uint32_t) g_ascii_strtoull (argv[++a], NULL, 10);
      else if (strcmp (argv[a], "-o") == 0 && a + 1 < argc)
        tsv_path = argv[++a];
      else
        return usage ();
    }
  if (bytes == 0 || iters == 0)
    return usage ();
  if (gpu && sp_kern_device_count () == 0)
    {
      fprintf (stderr, "bench-kernels: no CUDA device (%s)\n", sp_kern_gpu_error_string ());
      return 1;
    }

  Bench host = { 0 }, dev = { 0 };
  bench_init_host (&host, bytes);
  bench_alloc (&host, &host);              /* host outputs (x already there) */
  if (gpu)
    {
      dev.gpu = 1;
      bench_alloc (&dev, &host);
    }
  Bench *run = gpu ? &dev : &host;
  const uint64_t n = host.n, G = host.G, seg = host.seg;
  const Kernel kernels[] = {
    { "swizzle_quant int4", n * 2 + n / 2 + G * 4, k_quant4, G_STRUCT_OFFSET (Bench, q4), n / 2 },
    { "swizzle_quant int8", n * 2 + n + G * 4, k_quant8, G_STRUCT_OFFSET (Bench, q8), n },
    { "dequant int4", n / 2 + G * 4 + n * 2, k_dequant4, G_STRUCT_OFFSET (Bench, deq), n * 2 },
    { "quant_reduce int4 D=8", n / 2 + G * 4 + n / 2 / DEVS + G / DEVS * 4, k_reduce4,
      G_STRUCT_OFFSET (Bench, rq), n / 2 / DEVS },
    { "qgz_final int4 N=2", n / 2 + G * 4 + n / NODES * 2, k_final4,
      G_STRUCT_OFFSET (Bench, fin), n / NODES * 2 },
    { "rs_pack fp16 W=8", n * 2 + WORLD * seg * 2, k_pack, G_STRUCT_OFFSET (Bench, buf),
      WORLD * seg * 2 },
    { "rs_unpack fp16 W=8", 2 * 2 * (seg), k_unpack, G_STRUCT_OFFSET (Bench, out), seg * 2 },
    { "scale fp16 /8", n * 2 * 2, k_scale, G_STRUCT_OFFSET (Bench, deq), n * 2 },
  };

  char name[256] = "CPU reference";
  double copy_gbs = 0.0;
  if (gpu)
    {
      sp_kern_gpu_device_name (name, sizeof name);
      CopyCall cc = { dev.deq, dev.x, n * 2 };
      double ms = 0.0;
      if (sp_kern_gpu_time (copy_call, &cc, 3, NULL, &ms) != SP_KERN_OK
          || sp_kern_gpu_time (copy_call, &cc, iters, NULL, &ms) != SP_KERN_OK)
        {
          fprintf (stderr, "bench-kernels: memcpy failed: %s\n", sp_kern_gpu_error_string ());
          return 1;
        }
      copy_gbs = 2.0 * n * 2 * iters / (ms * 1e-3) / 1e9;
    }
  printf ("# %s, %.1f MiB fp16 input (%" G_GUINT64_FORMAT " values), E=%u, %u iters\n", name,
          n * 2 / 1048576.0, n, E, iters);
  if (gpu)
    printf ("# cudaMemcpy D2D of %" G_GUINT64_FORMAT " bytes: %.1f GB/s (read + write)\n",
            n * 2, copy_gbs);
  printf ("# %-24s %14s %10s %9s %8s %7s\n", "kernel", "bytes", "time_us", "GB/s",
          gpu ? "of_copy" : "", gpu ? "#wrong" : "");
  FILE *tsv = tsv_path ? fopen (tsv_path, "w") : NULL;
  if (tsv_path && tsv == NULL)
    {
      fprintf (stderr, "bench-kernels: cannot write %s\n", tsv_path);
      return 1;
    }
  if (tsv)
    fprintf (tsv, "device\tkernel\tbytes\ttime_us\tgbs\tof_copy\twrong\n");
  int failed = 0;
  for (size_t k = 0; k < G_N_ELEMENTS (kernels); k++)
    {
      const Kernel *kk = &kernels[k];
      long wrong = -1;
      double us = 0.0;
      if (gpu)
        {
          /* one call on each side, compared, then the timed loop */
          if (kk->run (&host, NULL) != SP_KERN_OK || kk->run (&dev, NULL) != SP_KERN_OK
              || sp_kern_gpu_sync (NULL) != SP_KERN_OK)
            {
              fprintf (stderr, "bench-kernels: %s failed: %s\n", kk->name,
                       sp_kern_gpu_error_string ());
              return 1;
            }
          wrong = 0;
          if (kk->out_bytes > 0)
            {
              uint8_t *got = g_malloc (kk->out_bytes);
              const uint8_t *want = *(uint8_t **) G_STRUCT_MEMBER_P (&host, kk->out_off);
              sp_kern_gpu_memcpy (got, *(uint8_t **) G_STRUCT_MEMBER_P (&dev, kk->out_off),
                                  kk->out_bytes);
              for (uint64_t i = 0; i < kk->out_bytes; i++)
                wrong += got[i] != want[i];
              g_free (got);
            }
          GpuCall c = { &dev, kk };
          double ms = 0.0;
          if (sp_kern_gpu_time (gpu_call, &c, 2, NULL, &ms) != SP_KERN_OK
              || sp_kern_gpu_time (gpu_call, &c, iters, NULL, &ms) != SP_KERN_OK)
            {
              fprintf (stderr, "bench-kernels: %s failed: %s\n", kk->name,
                       sp_kern_gpu_error_string ());
              return 1;
            }
          us = ms * 1e3 / iters;
          failed |= wrong != 0;
        }
      else
        {
          kk->run (run, NULL);             /* warm-up */
          gint64 t0 = g_get_monotonic_time ();
          for (uint32_t i = 0; i < iters; i++)
            kk->run (run, NULL);
          us = (double) (g_get_monotonic_time () - t0) / iters;
        }
      double gbs = kk->bytes / (us * 1e-6) / 1e9;
      if (gpu)
        printf ("  %-24s %14" G_GUINT64_FORMAT " %10.1f %9.1f %7.0f%% %7ld\n", kk->name, kk->bytes,
                us, gbs, 100.0 * gbs / copy_gbs, wrong);
      else
        printf ("  %-24s %14" G_GUINT64_FORMAT " %10.1f %9.3f\n", kk->name, kk->bytes, us, gbs);
      if (tsv)
        fprintf (tsv, "%s\t%s\t%" G_GUINT64_FORMAT "\t%.1f\t%.3f\t%.3f\t%ld\n", name, kk->name,
                 kk->bytes, us, gbs, gpu ? gbs / copy_gbs : 0.0, wrong);
    }
  if (tsv)
    fclose (tsv);
  bench_free (&host);
  if (gpu)
    bench_free (&dev);
  return failed;
}
