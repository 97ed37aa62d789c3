/* tests/kernels/test_qgz.c — DeepSpeed's qgZ all_to_all_quant_reduce
 * (reference §4) simulated in-process from the CPU kernels: Stage A swizzle
 * quantization on every rank, the intra-node all-to-all as buffer copies,
 * Stage C quantized reduction, the inter-node all-to-all, Stage E's mean.
 * Checked against §4.1's worked check (0.5 -> 0.765625, -0.5 -> -1.0) and
 * against a plain fp32 reduce-scatter mean within quantization tolerance. */
#include "config.h"

#include "../testutil.h"
#include "kern-testutil.h"

typedef struct
{
  uint32_t N, D, C, E, bits;
} QgzShape;

/* Run the pipeline for W = N·D ranks; in[r] holds rank r's W·C·E fp16
 * values; out[r] receives rank r's C·E results. */
static void
qgz_pipeline (const QgzShape *sh, uint16_t **in, SpKernQgzMean mean, uint16_t **out)
{
  const uint32_t N = sh->N, D = sh->D, C = sh->C, E = sh->E, W = N * D;
  const uint64_t G = (uint64_t) W * C, gb = (uint64_t) E * sh->bits / 8;
  const uint64_t chunk = (uint64_t) N * C;        /* groups per intra chunk */
  uint8_t **qa = g_new (uint8_t *, W), **qb = g_new (uint8_t *, W), **qc = g_new (uint8_t *, W),
          **qd = g_new (uint8_t *, W);
  float **sa = g_new (float *, W), **sb = g_new (float *, W), **sc = g_new (float *, W),
        **sd = g_new (float *, W);
  for (uint32_t r = 0; r < W; r++)
    {
      qa[r] = g_malloc (G * gb); qb[r] = g_malloc (G * gb);
      qc[r] = g_malloc (chunk * gb); qd[r] = g_malloc (chunk * gb);
      sa[r] = g_new (float, G); sb[r] = g_new (float, G);
      sc[r] = g_new (float, chunk); sd[r] = g_new (float, chunk);
      /* Stage A */
      ck_assert_int_eq (sp_kern_cpu_swizzle_quant (in[r], G, E, sh->bits, N, D, 1, qa[r], sa[r]),
                        SP_KERN_OK);
    }
  /* Stage B: within node n, local rank d receives chunk d of every local
   * rank j's swizzled buffer, in order of j. */
  for (uint32_t n = 0; n < N; n++)
    for (uint32_t d = 0; d < D; d++)
      for (uint32_t j = 0; j < D; j++)
        {
          uint32_t dst = n * D + d, src = n * D + j;
          memcpy (qb[dst] + j * chunk * gb, qa[src] + d * chunk * gb, chunk * gb);
          memcpy (sb[dst] + j * chunk, sa[src] + d * chunk, chunk * sizeof (float));
        }
  /* Stage C */
  for (uint32_t r = 0; r < W; r++)
    ck_assert_int_eq (sp_kern_cpu_quant_reduce (qb[r], sb[r], D, chunk, E, sh->bits, qc[r], sc[r]),
                      SP_KERN_OK);
  /* Stage D: over global_<d> = {m·D + d}, rank n·D+d receives block n (C
   * groups) of rank m·D+d's reduced buffer, in order of m. */
  for (uint32_t n = 0; n < N; n++)
    for (uint32_t d = 0; d < D; d++)
      for (uint32_t m = 0; m < N; m++)
        {
          uint32_t dst = n * D + d, src = m * D + d;
          memcpy (qd[dst] + (uint64_t) m * C * gb, qc[src] + (uint64_t) n * C * gb, C * gb);
          memcpy (sd[dst] + (uint64_t) m * C, sc[src] + (uint64_t) n * C, C * sizeof (float));
        }
  /* Stage E */
  for (uint32_t r = 0; r < W; r++)
    ck_assert_int_eq (sp_kern_cpu_qgz_final (qd[r], sd[r], N, D, C, E, sh->bits, mean, out[r]),
                      SP_KERN_OK);
  for (uint32_t r = 0; r < W; r++)
    {
      g_free (qa[r]); g_free (qb[r]); g_free (qc[r]); g_free (qd[r]);
      g_free (sa[r]); g_free (sb[r]); g_free (sc[r]); g_free (sd[r]);
    }
  g_free (qa); g_free (qb); g_free (qc); g_free (qd);
  g_free (sa); g_free (sb); g_free (sc); g_free (sd);
}

static void
check_constant (double value, SpKernQgzMean mean, double want)
{
  QgzShape sh = { 2, 2, 3, 8, 4 };
  uint32_t W = sh.N * sh.D;
  uint64_t n = (uint64_t) W * sh.C * sh.E, per = (uint64_t) sh.C * sh.E;
  uint16_t *in[4], *out[4];
  for (uint32_t r = 0; r < W; r++)
    {
      in[r] = g_new (uint16_t, n);
      out[r] = g_new (uint16_t, per);
      for (uint64_t i = 0; i < n; i++)
        in[r][i] = kt_round_f16 (value);
    }
  qgz_pipeline (&sh, in, mean, out);
  for (uint32_t r = 0; r < W; r++)
    {
      for (uint64_t i = 0; i < per; i++)
        ck_assert_msg (kt_f16_value (out[r][i]) == want, "rank %u elem %" G_GUINT64_FORMAT ": %g, want %g",
                       r, i, kt_f16_value (out[r][i]), want);
      g_free (in[r]);
      g_free (out[r]);
    }
}

/* §4.1: 0.5 -> 0.4375 (int4 clips +absmax) -> node sum 0.875 -> requant
 * 7/8·0.875 = 0.765625 -> (0.765625 + 0.765625)/N = 0.765625.  -0.5 is
 * exact all the way: -1.0.  The true mean divides by N·D = 4 instead. */
START_TEST (test_worked_check_2x2)
{
  check_constant (0.5, SP_KERN_QGZ_DEEPSPEED, 0.765625);
  check_constant (-0.5, SP_KERN_QGZ_DEEPSPEED, -1.0);
  check_constant (0.5, SP_KERN_QGZ_TRUE_MEAN, 0.3828125);
  check_constant (-0.5, SP_KERN_QGZ_TRUE_MEAN, -0.5);
}
END_TEST

/* Random data: rank r's qgZ result must approximate element block r of
 * the mean over ranks (what a reduce-scatter of x/W returns).  Tolerance:
 * Stage A errs by at most one step absmax/2^(b-1) per rank, Stage C by one
 * step of its sum's absmax per node, fp16 adds by a few ulps. */
static void
check_vs_reduce_scatter (QgzShape sh, uint64_t seed)
{
  const uint32_t W = sh.N * sh.D;
  const uint64_t n = (uint64_t) W * sh.C * sh.E, per = (uint64_t) sh.C * sh.E;
  KtRng rng = { seed };
  uint16_t **in = g_new (uint16_t *, W), **out = g_new (uint16_t *, W),
           **ds = g_new (uint16_t *, W);
  for (uint32_t r = 0; r < W; r++)
    {
      in[r] = g_new (uint16_t, n);
      out[r] = g_new (uint16_t, per);
      ds[r] = g_new (uint16_t, per);
      for (uint64_t i = 0; i < n; i++)
        in[r][i] = kt_rand_f16 (&rng, 1e-3, 1.0);
    }
  qgz_pipeline (&sh, in, SP_KERN_QGZ_TRUE_MEAN, out);
  qgz_pipeline (&sh, in, SP_KERN_QGZ_DEEPSPEED, ds);
  double step = ldexp (1.0, 1 - (int) sh.bits);   /* absmax <= 1 */
  double tol = (W * step + sh.N * sh.D * step) / W + 1e-2;
  double sq = 0.0;
  for (uint32_t r = 0; r < W; r++)
    for (uint64_t i = 0; i < per; i++)
      {
        double mean = 0.0;
        for (uint32_t q = 0; q < W; q++)
          mean += kt_f16_value (in[q][r * per + i]);
        mean /= W;
        double got = kt_f16_value (out[r][i]), err = got - mean;
        ck_assert_msg (fabs (err) <= tol, "rank %u elem %" G_GUINT64_FORMAT ": %g vs mean %g",
                       r, i, got, mean);
        sq += err * err;
        /* DeepSpeed's value is D × the mean (reference §4), up to fp16 */
        ck_assert (fabs (kt_f16_value (ds[r][i]) - sh.D * got) <= 1e-2 * sh.D + 1e-3);
      }
  /* errors are quantization noise, not a layout mix-up: RMS well below
   * the worst case (about step/4 expected; a mixed-up partition gives ~0.4) */
  ck_assert_msg (sqrt (sq / (W * per)) < step / 2 + 1e-3, "rms %g", sqrt (sq / (W * per)));
  for (uint32_t r = 0; r < W; r++)
    {
      g_free (in[r]); g_free (out[r]); g_free (ds[r]);
    }
  g_free (in); g_free (out); g_free (ds);
}

START_TEST (test_vs_reduce_scatter)
{
  check_vs_reduce_scatter ((QgzShape) { 2, 2, 3, 64, 4 }, 1);
  check_vs_reduce_scatter ((QgzShape) { 2, 2, 3, 64, 8 }, 2);
  check_vs_reduce_scatter ((QgzShape) { 3, 2, 2, 32, 4 }, 3);
  check_vs_reduce_scatter ((QgzShape) { 2, 4, 1, 16, 8 }, 4);
}
END_TEST

int
main (void)
{
  Suite *s = suite_create ("kernels-qgz");
  TCase *tc = tcase_create ("qgz");
  tcase_add_test (tc, test_worked_check_2x2);
  tcase_add_test (tc, test_vs_reduce_scatter);
  suite_add_tcase (s, tc);
  return sp_test_run (s);
}
