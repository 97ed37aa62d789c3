/* tests/kernels/test_kernels_gpu.c — every CUDA kernel against its CPU
 * reference, byte for byte, on random data (never zeros) over shapes that
 * exercise the vector and scalar paths, team sizes, misaligned pointers and
 * the coalesced kernels' batching.  Outputs are pre-filled with garbage on
 * both sides so every byte the kernel must write is checked.  Exits 77
 * without a CUDA device, unless SP_TEST_REQUIRE_GPU=1 makes that a failure.
 *
 * Runs in CK_NOFORK mode: counting the devices initialises the CUDA driver
 * in this process, and CUDA cannot be used in a child forked after that
 * (every call there fails with "initialization error"). */
#include "config.h"

#include <stdio.h>

#include "../testutil.h"
#include "kern-testutil.h"

#define GARBAGE 0xA5

/* Device copy of a host buffer (with `pad` extra bytes of garbage in
 * front, to misalign it on purpose); *out_base is what to free. */
static void *
dev_upload (const void *host, size_t bytes, size_t pad, void **out_base)
{
  uint8_t *base = sp_kern_gpu_malloc (bytes + pad + 16);
  ck_assert_msg (base != NULL, "cudaMalloc: %s", sp_kern_gpu_error_string ());
  uint8_t *junk = g_malloc (bytes + pad + 16);
  memset (junk, GARBAGE, bytes + pad + 16);
  ck_assert_int_eq (sp_kern_gpu_memcpy (base, junk, bytes + pad + 16), SP_KERN_OK);
  g_free (junk);
  if (host != NULL && bytes > 0)
    ck_assert_int_eq (sp_kern_gpu_memcpy (base + pad, host, bytes), SP_KERN_OK);
  *out_base = base;
  return base + pad;
}

static void
dev_check (const void *dev, const void *want, size_t bytes, const char *what)
{
  uint8_t *got = g_malloc (bytes + 1);
  /* a kernel fault surfaces here: name it */
  ck_assert_msg (sp_kern_gpu_sync (NULL) == SP_KERN_OK, "%s: sync: %s", what,
                 sp_kern_gpu_error_string ());
  ck_assert_msg (sp_kern_gpu_memcpy (got, dev, bytes) == SP_KERN_OK, "%s: download: %s", what,
                 sp_kern_gpu_error_string ());
  long d = kt_first_diff (got, want, bytes);
  ck_assert_msg (d < 0, "%s: byte %ld of %zu differs: gpu 0x%02x cpu 0x%02x", what, d, bytes,
                 d < 0 ? 0 : got[d], d < 0 ? 0 : ((const uint8_t *) want)[d]);
  g_free (got);
}

typedef struct
{
  uint32_t bits, E, N, D, P, C;
  size_t pad;                 /* misalignment of the data pointers, bytes (even) */
  int ties;                   /* data whose x·s are exact .5 ties (see fill_ties) */
} QShape;

/* Groups whose absmax is 2^(bits-1) (so s = 1) and whose other values are
 * k + 0.5: every x·s is an exact rounding tie, which random data almost
 * never produces.  Random signs and positions; never zero. */
static void
fill_ties (KtRng *rng, uint16_t *x, uint64_t n_groups, uint32_t E, uint32_t bits)
{
  const int half_range = 1 << (bits - 1);
  for (uint64_t g = 0; g < n_groups; g++)
    for (uint32_t i = 0; i < E; i++)
      {
        double v = i == 0 ? half_range : (double) (kt_next (rng) % half_range) + 0.5;
        x[g * E + i] = sp_kern_f32_to_f16 ((float) ((kt_next (rng) & 1) ? -v : v));
      }
}

static const QShape qshapes[] = {
  { 4, 64, 2, 2, 1, 8, 0 },  { 8, 64, 2, 2, 1, 8, 0 },  { 4, 8, 2, 4, 1, 4, 0 },
  { 8, 8, 3, 2, 2, 6, 0 },   { 4, 2048, 2, 2, 1, 2, 0 }, { 8, 1024, 1, 4, 1, 3, 0 },
  { 4, 6, 2, 2, 1, 5, 0 },   { 8, 7, 2, 2, 1, 5, 0 },   { 8, 1, 2, 2, 1, 9, 0 },
  { 4, 64, 2, 2, 1, 4, 2 },  { 8, 64, 2, 2, 1, 4, 6 },  { 4, 40960, 2, 1, 1, 1, 0 },
  { 4, 24, 4, 2, 2, 4, 0 },  { 8, 200, 1, 1, 1, 37, 0 }, { 4, 4096, 2, 2, 1, 2, 0 },
  { 8, 4096, 1, 2, 1, 3, 0 }, { 4, 4104, 2, 1, 1, 1, 0 },
  { 4, 64, 2, 2, 1, 8, 0, 1 }, { 8, 64, 2, 2, 1, 8, 0, 1 }, { 4, 6, 2, 2, 1, 5, 0, 1 },
  { 8, 4096, 2, 1, 1, 2, 0, 1 },
};

START_TEST (test_quant_family)
{
  const QShape *sh = &qshapes[_i];
  const uint32_t W = sh->N * sh->D;
  const uint64_t G = (uint64_t) W * sh->C, n = G * sh->E, gb = (uint64_t) sh->E * sh->bits / 8;
  const uint64_t chunk = G / sh->D;      /* quant_reduce: D sources of G/D groups */
  KtRng rng = { 1000 + _i };
  uint16_t *x = g_new (uint16_t, n), *deq = g_new (uint16_t, n);
  uint8_t *q = g_new (uint8_t, G * gb), *rq = g_new (uint8_t, chunk * gb);
  float *sc = g_new (float, G), *rsc = g_new (float, chunk);
  void *b[8];
  if (sh->ties)
    fill_ties (&rng, x, G, sh->E, sh->bits);
  else
    kt_fill_groups (&rng, x, G, sh->E);
  memset (q, GARBAGE, G * gb);

  /* swizzle_quant */
  ck_assert_int_eq (sp_kern_cpu_swizzle_quant (x, G, sh->E, sh->bits, sh->N, sh->D, sh->P, q, sc),
                    SP_KERN_OK);
  uint16_t *dx = dev_upload (x, n * 2, sh->pad, &b[0]);
  uint8_t *dq = dev_upload (NULL, G * gb, sh->pad, &b[1]);
  float *dsc = dev_upload (NULL, G * 4, 0, &b[2]);
  ck_assert_int_eq (sp_kern_gpu_swizzle_quant (dx, G, sh->E, sh->bits, sh->N, sh->D, sh->P, dq,
                                               dsc, NULL),
                    SP_KERN_OK);
  dev_check (dq, q, G * gb, "swizzle_quant bytes");
  dev_check (dsc, sc, G * 4, "swizzle_quant scales");

  /* dequant of the swizzled buffer */
  ck_assert_int_eq (sp_kern_cpu_dequant (q, sc, G, sh->E, sh->bits, deq), SP_KERN_OK);
  uint16_t *ddeq = dev_upload (NULL, n * 2, sh->pad, &b[3]);
  ck_assert_int_eq (sp_kern_gpu_dequant (dq, dsc, G, sh->E, sh->bits, ddeq, NULL), SP_KERN_OK);
  dev_check (ddeq, deq, n * 2, "dequant");

  /* quantized reduction of the buffer as D sources */
  memset (rq, GARBAGE, chunk * gb);
  ck_assert_int_eq (sp_kern_cpu_quant_reduce (q, sc, sh->D, chunk, sh->E, sh->bits, rq, rsc),
                    SP_KERN_OK);
  uint8_t *drq = dev_upload (NULL, chunk * gb, sh->pad, &b[4]);
  float *drsc = dev_upload (NULL, chunk * 4, 0, &b[5]);
  ck_assert_int_eq (sp_kern_gpu_quant_reduce (dq, dsc, sh->D, chunk, sh->E, sh->bits, drq, drsc,
                                              NULL),
                    SP_KERN_OK);
  dev_check (drq, rq, chunk * gb, "quant_reduce bytes");
  dev_check (drsc, rsc, chunk * 4, "quant_reduce scales");

  /* final mean, both divisors, over the buffer as N chunks */
  const uint64_t fin_groups = G / sh->N;
  uint16_t *fin = g_new (uint16_t, fin_groups * sh->E);
  uint16_t *dfin = dev_upload (NULL, fin_groups * sh->E * 2, sh->pad, &b[6]);
  for (int mean = 0; mean < 2; mean++)
    {
      ck_assert_int_eq (sp_kern_cpu_qgz_final (q, sc, sh->N, sh->D, fin_groups, sh->E, sh->bits,
                                               (SpKernQgzMean) mean, fin),
                        SP_KERN_OK);
      ck_assert_int_eq (sp_kern_gpu_qgz_final (dq, dsc, sh->N, sh->D, fin_groups, sh->E, sh->bits,
                                               (SpKernQgzMean) mean, dfin, NULL),
                        SP_KERN_OK);
      dev_check (dfin, fin, fin_groups * sh->E * 2, mean ? "qgz_final deepspeed" : "qgz_final mean");
    }
  for (int k = 0; k < 7; k++)
    sp_kern_gpu_free (b[k]);
  g_free (x); g_free (deq); g_free (q); g_free (rq); g_free (sc); g_free (rsc); g_free (fin);
}
END_TEST

/* Pack and unpack over many tensors (more than one launch batch), with
 * zero-length tensors, for 2-, 4- and 8-byte elements. */
static void
check_rs (uint32_t W, uint32_t n_tensors, size_t es, uint64_t seed)
{
  KtRng rng = { seed };
  uint64_t *numels = g_new (uint64_t, n_tensors);
  void **host = g_new (void *, n_tensors), **dev = g_new (void *, n_tensors),
       **base = g_new (void *, n_tensors);
  for (uint32_t t = 0; t < n_tensors; t++)
    {
      numels[t] = (t % 7 == 3) ? 0 : kt_next (&rng) % 3000;
      host[t] = g_malloc (numels[t] * es + 1);
      for (uint64_t i = 0; i < numels[t] * es; i++)
        ((uint8_t *) host[t])[i] = (uint8_t) (kt_next (&rng) | 1);
      dev[t] = dev_upload (host[t], numels[t] * es, 0, &base[t]);
    }
  uint64_t S = sp_kern_rs_segment (numels, n_tensors, W), bytes = W * S * es;
  uint8_t *buf = g_malloc (bytes + 1);
  memset (buf, GARBAGE, bytes);
  ck_assert_int_eq (sp_kern_cpu_rs_pack ((const void *const *) host, numels, n_tensors, W, es, buf),
                    SP_KERN_OK);
  void *bbase;
  uint8_t *dbuf = dev_upload (NULL, bytes, 0, &bbase);
  ck_assert_int_eq (sp_kern_gpu_rs_pack ((const void *const *) dev, numels, n_tensors, W, es, dbuf,
                                         NULL),
                    SP_KERN_OK);
  dev_check (dbuf, buf, bytes, "rs_pack");
  uint32_t r = W - 1;
  void **hout = g_new (void *, n_tensors), **dout = g_new (void *, n_tensors),
       **obase = g_new (void *, n_tensors);
  for (uint32_t t = 0; t < n_tensors; t++)
    {
      size_t len = sp_kern_rs_slice_len (numels[t], W, r) * es;
      hout[t] = g_malloc (len + 1);
      memset (hout[t], GARBAGE, len);
      dout[t] = dev_upload (NULL, len, 0, &obase[t]);
    }
  ck_assert_int_eq (sp_kern_cpu_rs_unpack (buf + r * S * es, numels, n_tensors, W, r, es, hout),
                    SP_KERN_OK);
  ck_assert_int_eq (sp_kern_gpu_rs_unpack (dbuf + r * S * es, numels, n_tensors, W, r, es, dout,
                                           NULL),
                    SP_KERN_OK);
  for (uint32_t t = 0; t < n_tensors; t++)
    {
      dev_check (dout[t], hout[t], sp_kern_rs_slice_len (numels[t], W, r) * es, "rs_unpack");
      sp_kern_gpu_free (base[t]);
      sp_kern_gpu_free (obase[t]);
      g_free (host[t]);
      g_free (hout[t]);
    }
  sp_kern_gpu_free (bbase);
  g_free (buf); g_free (numels); g_free (host); g_free (dev); g_free (base);
  g_free (hout); g_free (dout); g_free (obase);
}

START_TEST (test_rs_pack_unpack)
{
  check_rs (3, 3, 4, 1);
  check_rs (8, 70, 2, 2);
  check_rs (1, 5, 4, 3);
  check_rs (5, 40, 8, 4);
  check_rs (64, 33, 2, 5);
}
END_TEST

START_TEST (test_scale)
{
  static const SpKernDtype types[3] = { SP_KERN_F16, SP_KERN_BF16, SP_KERN_F32 };
  static const uint32_t divisors[4] = { 2, 3, 8, 48 };
  KtRng rng = { 42 };
  for (int ti = 0; ti < 3; ti++)
    for (int di = 0; di < 4; di++)
      for (size_t k = 0; k < 3; k++)
        {
          size_t pad = k * sp_kern_dtype_size (types[ti]);
          uint64_t n = 10007;
          size_t es = sp_kern_dtype_size (types[ti]), bytes = n * es;
          uint8_t *h = g_malloc (bytes);
          for (uint64_t i = 0; i < n; i++)
            {
              if (types[ti] == SP_KERN_F16)
                ((uint16_t *) h)[i] = kt_rand_f16 (&rng, 1e-7, 6e4);
              else if (types[ti] == SP_KERN_BF16)
                ((uint16_t *) h)[i] = sp_kern_f32_to_bf16 ((float) (kt_unit (&rng) - 0.5) * 1e3f);
              else
                ((float *) h)[i] = (float) ((kt_unit (&rng) - 0.5) * 1e6);
            }
          void *base;
          void *d = dev_upload (h, bytes, pad, &base);
          ck_assert_int_eq (sp_kern_cpu_scale (h, n, types[ti], divisors[di]), SP_KERN_OK);
          ck_assert_int_eq (sp_kern_gpu_scale (d, n, types[ti], divisors[di], NULL), SP_KERN_OK);
          dev_check (d, h, bytes, "scale");
          sp_kern_gpu_free (base);
          g_free (h);
        }
}
END_TEST

START_TEST (test_invalid_on_gpu)
{
  ck_assert_int_eq (sp_kern_gpu_quant (NULL, 4, 7, 4, NULL, NULL, NULL), SP_KERN_INVALID);
  ck_assert_int_eq (sp_kern_gpu_scale (NULL, 4, SP_KERN_F16, 0, NULL), SP_KERN_INVALID);
  ck_assert_int_eq (sp_kern_gpu_quant (NULL, 0, 8, 4, NULL, NULL, NULL), SP_KERN_OK);
}
END_TEST

int
main (void)
{
  int n = sp_kern_device_count ();
  if (n == 0)
    {
      const char *req = g_getenv ("SP_TEST_REQUIRE_GPU");
      if (req != NULL && strcmp (req, "1") == 0)
        {
          fprintf (stderr, "test_kernels_gpu: SP_TEST_REQUIRE_GPU=1 but no CUDA device (%s)\n",
                   sp_kern_gpu_error_string ());
          return EXIT_FAILURE;
        }
      fprintf (stderr, "test_kernels_gpu: no CUDA device, skipped\n");
      return 77;
    }
  Suite *s = suite_create ("kernels-gpu");
  TCase *tc = tcase_create ("gpu");
  tcase_add_loop_test (tc, test_quant_family, 0, (int) G_N_ELEMENTS (qshapes));
  tcase_add_test (tc, test_rs_pack_unpack);
  tcase_add_test (tc, test_scale);
  tcase_add_test (tc, test_invalid_on_gpu);
  suite_add_tcase (s, tc);
  SRunner *runner = srunner_create (s);
  srunner_set_fork_status (runner, CK_NOFORK);
  srunner_run_all (runner, CK_NORMAL);
  int failed = srunner_ntests_failed (runner);
  srunner_free (runner);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
