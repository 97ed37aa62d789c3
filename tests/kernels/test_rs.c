/* tests/kernels/test_rs.c — reduce_scatter_coalesced's pack/unpack
 * (reference §3: W=3 numels [5,3,1], the W=2 unit tests, a simulated
 * reduce-scatter) and the in-place ÷W scale. */
#include "config.h"

#include "../testutil.h"
#include "kern-testutil.h"

/* Reference §3: W=3, numels [5,3,1], c = [2,1,1], S = 4.  Elements are
 * tagged 100·(t+1) + i; padding must be zero. */
START_TEST (test_pack_reference_example)
{
  uint32_t t0[5] = { 100, 101, 102, 103, 104 }, t1[3] = { 200, 201, 202 }, t2[1] = { 300 };
  const void *tensors[3] = { t0, t1, t2 };
  uint64_t numels[3] = { 5, 3, 1 };
  ck_assert_uint_eq (sp_kern_rs_segment (numels, 3, 3), 4);
  uint32_t buf[12];
  memset (buf, 0xA5, sizeof buf);
  ck_assert_int_eq (sp_kern_cpu_rs_pack (tensors, numels, 3, 3, 4, buf), SP_KERN_OK);
  static const uint32_t want[12] = { 100, 101, 200, 300,     /* rank 0: [0,2)/[0,1)/[0,1) */
                                     102, 103, 201, 0,       /* rank 1: [2,4)/[1,2)/empty */
                                     104, 0, 202, 0 };       /* rank 2: [4,5)/[2,3)/empty */
  ck_assert_mem_eq (buf, want, sizeof want);
  static const uint64_t lens[3][3] = { { 2, 1, 1 }, { 2, 1, 0 }, { 1, 1, 0 } };
  for (uint32_t r = 0; r < 3; r++)
    {
      uint32_t o0[2] = { 7, 7 }, o1[1] = { 7 }, o2[1] = { 7 };
      void *outs[3] = { o0, o1, o2 };
      for (int t = 0; t < 3; t++)
        ck_assert_uint_eq (sp_kern_rs_slice_len (numels[t], 3, r), lens[r][t]);
      ck_assert_int_eq (sp_kern_cpu_rs_unpack (buf + r * 4, numels, 3, 3, r, 4, outs), SP_KERN_OK);
      ck_assert_uint_eq (o0[0], 100 + 2 * r);
      ck_assert_uint_eq (o0[1], r < 2 ? 101 + 2 * r : 7);     /* untouched past the slice */
      ck_assert_uint_eq (o1[0], 200 + r);
      ck_assert_uint_eq (o2[0], r == 0 ? 300 : 7);
    }
}
END_TEST

/* Reference §3's W=2 unit tests, as slice lengths per rank. */
START_TEST (test_slice_lengths_w2)
{
  ck_assert_uint_eq (sp_kern_rs_slice_len (6, 2, 0), 3);
  ck_assert_uint_eq (sp_kern_rs_slice_len (6, 2, 1), 3);
  ck_assert_uint_eq (sp_kern_rs_slice_len (3, 2, 0), 2);
  ck_assert_uint_eq (sp_kern_rs_slice_len (3, 2, 1), 1);
  ck_assert_uint_eq (sp_kern_rs_slice_len (1, 2, 0), 1);
  ck_assert_uint_eq (sp_kern_rs_slice_len (1, 2, 1), 0);
  ck_assert_uint_eq (sp_kern_rs_slice_len (10, 2, 0), 5);
  ck_assert_uint_eq (sp_kern_rs_slice_len (10, 2, 1), 5);
  ck_assert_uint_eq (sp_kern_rs_slice_len (49, 2, 0), 25);  /* (7,7) */
  ck_assert_uint_eq (sp_kern_rs_slice_len (49, 2, 1), 24);
  ck_assert_uint_eq (sp_kern_rs_slice_len (0, 4, 0), 0);
  ck_assert_uint_eq (sp_kern_rs_chunk (5, 3), 2);
  ck_assert_uint_eq (sp_kern_rs_chunk (0, 3), 0);
}
END_TEST

/* W ranks pack, pre-divide by W, reduce-scatter (SUM in rank order, in
 * fp32) and unpack; the result must equal Σ_q x_q/W computed directly. */
static void
check_reduce_scatter (uint32_t W, const uint64_t *numels, uint32_t n_tensors, uint64_t seed)
{
  KtRng rng = { seed };
  uint64_t S = sp_kern_rs_segment (numels, n_tensors, W);
  float ***x = g_new (float **, W);
  float **buf = g_new (float *, W);
  for (uint32_t q = 0; q < W; q++)
    {
      x[q] = g_new (float *, n_tensors);
      for (uint32_t t = 0; t < n_tensors; t++)
        {
          x[q][t] = g_new (float, numels[t] + 1);
          for (uint64_t i = 0; i < numels[t]; i++)
            x[q][t][i] = (float) (kt_unit (&rng) * 2.0 - 1.0);
        }
      buf[q] = g_new (float, W * S + 1);
      ck_assert_int_eq (sp_kern_cpu_rs_pack ((const void *const *) x[q], numels, n_tensors, W, 4,
                                             buf[q]),
                        SP_KERN_OK);
      ck_assert_int_eq (sp_kern_cpu_scale (buf[q], W * S, SP_KERN_F32, W), SP_KERN_OK);
    }
  float *seg = g_new (float, S + 1);
  float **outs = g_new (float *, n_tensors);
  for (uint32_t t = 0; t < n_tensors; t++)
    outs[t] = g_new (float, numels[t] + 1);
  float inv = 1.0f / (float) W;
  for (uint32_t r = 0; r < W; r++)
    {
      for (uint64_t i = 0; i < S; i++)
        {
          float acc = 0.0f;
          for (uint32_t q = 0; q < W; q++)
            acc += buf[q][r * S + i];
          seg[i] = acc;
        }
      ck_assert_int_eq (sp_kern_cpu_rs_unpack (seg, numels, n_tensors, W, r, 4, (void *const *) outs),
                        SP_KERN_OK);
      for (uint32_t t = 0; t < n_tensors; t++)
        {
          uint64_t c = sp_kern_rs_chunk (numels[t], W);
          for (uint64_t j = 0; j < sp_kern_rs_slice_len (numels[t], W, r); j++)
            {
              float want = 0.0f;
              for (uint32_t q = 0; q < W; q++)
                want += x[q][t][r * c + j] * inv;
              ck_assert_msg (outs[t][j] == want, "W=%u rank %u tensor %u elem %" G_GUINT64_FORMAT,
                             W, r, t, j);
            }
        }
    }
  for (uint32_t q = 0; q < W; q++)
    {
      for (uint32_t t = 0; t < n_tensors; t++)
        g_free (x[q][t]);
      g_free (x[q]);
      g_free (buf[q]);
    }
  for (uint32_t t = 0; t < n_tensors; t++)
    g_free (outs[t]);
  g_free (x); g_free (buf); g_free (seg); g_free (outs);
}

START_TEST (test_vs_plain_reduce_scatter)
{
  static const uint64_t a[] = { 7, 0, 13, 4, 1 };
  static const uint64_t b[] = { 6, 3 };
  static const uint64_t c[] = { 49 };
  check_reduce_scatter (4, a, 5, 1);
  check_reduce_scatter (3, a, 5, 2);
  check_reduce_scatter (2, b, 2, 3);
  check_reduce_scatter (2, c, 1, 4);
  check_reduce_scatter (1, a, 5, 5);
  check_reduce_scatter (8, a, 5, 6);
}
END_TEST

START_TEST (test_pack_invalid)
{
  uint64_t numels[2] = { 3, 0 };
  uint16_t t0[3] = { 1, 2, 3 }, buf[8];
  const void *tensors[2] = { t0, NULL };             /* NULL allowed for numel 0 */
  ck_assert_int_eq (sp_kern_cpu_rs_pack (tensors, numels, 2, 2, 2, buf), SP_KERN_OK);
  ck_assert_int_eq (sp_kern_cpu_rs_pack (tensors, numels, 2, 0, 2, buf), SP_KERN_INVALID);
  ck_assert_int_eq (sp_kern_cpu_rs_pack (tensors, numels, 2, 2, 3, buf), SP_KERN_INVALID);
  numels[1] = 1;
  ck_assert_int_eq (sp_kern_cpu_rs_pack (tensors, numels, 2, 2, 2, buf), SP_KERN_INVALID);
  void *outs[2] = { t0, t0 };
  ck_assert_int_eq (sp_kern_cpu_rs_unpack (buf, numels, 2, 2, 2, 2, outs), SP_KERN_INVALID);
}
END_TEST

/* Scale: ÷4 and ÷2 are exact (fp16 results may round where they become
 * subnormal); ÷3 is fp16_rn(fp32(x)·fp32(1/3)), derived here in double. */
START_TEST (test_scale)
{
  KtRng rng = { 77 };
  enum { n = 1001 };
  uint16_t h[n], b[n], h0[n], b0[n];
  float f[n], f0[n];
  for (int i = 0; i < n; i++)
    {
      h0[i] = h[i] = kt_rand_f16 (&rng, 1e-6, 60000.0);
      f0[i] = f[i] = (float) ((kt_unit (&rng) - 0.5) * 1e6);
      b0[i] = b[i] = sp_kern_f32_to_bf16 (f[i] * 1e-20f);
    }
  ck_assert_int_eq (sp_kern_cpu_scale (h, n, SP_KERN_F16, 4), SP_KERN_OK);
  ck_assert_int_eq (sp_kern_cpu_scale (f, n, SP_KERN_F32, 8), SP_KERN_OK);
  ck_assert_int_eq (sp_kern_cpu_scale (b, n, SP_KERN_BF16, 2), SP_KERN_OK);
  for (int i = 0; i < n; i++)
    {
      ck_assert_uint_eq (h[i], kt_round_f16 (kt_f16_value (h0[i]) / 4));
      ck_assert (f[i] == f0[i] / 8);
      ck_assert (sp_kern_bf16_to_f32 (b[i]) == sp_kern_bf16_to_f32 (b0[i]) / 2);
    }
  memcpy (h, h0, sizeof h);
  ck_assert_int_eq (sp_kern_cpu_scale (h, n, SP_KERN_F16, 3), SP_KERN_OK);
  double inv3 = (double) (float) (1.0 / 3.0);
  for (int i = 0; i < n; i++)
    ck_assert_uint_eq (h[i], kt_round_f16 ((double) (float) (kt_f16_value (h0[i]) * inv3)));
  ck_assert_int_eq (sp_kern_cpu_scale (h, n, SP_KERN_F16, 0), SP_KERN_INVALID);
  ck_assert_int_eq (sp_kern_cpu_scale (h, n, (SpKernDtype) 1, 2), SP_KERN_INVALID);
  ck_assert_int_eq (sp_kern_cpu_scale (NULL, 0, SP_KERN_F16, 2), SP_KERN_OK);
}
END_TEST

int
main (void)
{
  Suite *s = suite_create ("kernels-rs");
  TCase *tc = tcase_create ("rs");
  tcase_add_test (tc, test_pack_reference_example);
  tcase_add_test (tc, test_slice_lengths_w2);
  tcase_add_test (tc, test_vs_plain_reduce_scatter);
  tcase_add_test (tc, test_pack_invalid);
  tcase_add_test (tc, test_scale);
  suite_add_tcase (s, tc);
  return sp_test_run (s);
}
