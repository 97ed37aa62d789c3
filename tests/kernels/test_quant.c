/* tests/kernels/test_quant.c — symmetric int4/int8 group quantization,
 * dequantization, the qgZ swizzle, the quantized reduction and the final
 * mean on the CPU: reference §4.1's worked example, hand-computed values,
 * and a straightforward double-precision re-derivation on random data. */
#include "config.h"

#include "../testutil.h"
#include "kern-testutil.h"

static const float example[8] = { 0.5f, -0.25f, 0.1f, -0.5f, 0.3f, 0.0f, 0.49f, -0.01f };

static void
example_f16 (uint16_t *x)
{
  for (int i = 0; i < 8; i++)
    x[i] = kt_round_f16 (example[i]);
}

/* ---- independent re-derivation ------------------------------------------
 * Double arithmetic, rounded to fp32 where the kernel rounds to fp32: a
 * double quotient/product of fp32/fp16 operands rounded to fp32 equals the
 * fp32 operation (53 >= 2·24 + 2), rint half-even written out by hand, and
 * fp16 rounding by the table search of kern-testutil.h. */
static double
ref_rint (double v)
{
  double f = floor (v), d = v - f;
  if (d > 0.5 || (d == 0.5 && fmod (f, 2.0) != 0.0))
    return f + 1.0;
  return f;
}

static float
ref_quant_group (const double *x, uint32_t n, uint32_t bits, int *q)
{
  double m = 0.0;
  for (uint32_t i = 0; i < n; i++)
    m = fmax (m, fabs (x[i]));
  float s = m == 0.0 ? 1.0f : (float) (ldexp (1.0, (int) bits) / (2.0 * (double) (float) m));
  int lo = -(1 << (bits - 1)), hi = (1 << (bits - 1)) - 1;
  for (uint32_t i = 0; i < n; i++)
    {
      double r = ref_rint ((double) (float) (x[i] * (double) s));
      q[i] = r < lo ? lo : r > hi ? hi : (int) r;
    }
  return (float) (1.0 / (double) s);
}

static void
ref_pack (const int *q, uint32_t n, uint32_t bits, uint8_t *out)
{
  for (uint32_t i = 0; i < n; i++)
    {
      if (bits == 8)
        out[i] = (uint8_t) (q[i] & 0xFF);
      else if (i % 2 == 0)
        out[i / 2] = (uint8_t) ((q[i] & 0xF) << 4);
      else
        out[i / 2] |= (uint8_t) (q[i] & 0xF);
    }
}

static int
ref_q_get (const uint8_t *q, uint32_t i, uint32_t bits)
{
  if (bits == 8)
    return (int8_t) q[i];
  unsigned nib = i % 2 ? q[i / 2] & 0xFu : (unsigned) q[i / 2] >> 4;
  return nib >= 8 ? (int) nib - 16 : (int) nib;
}

static uint16_t
ref_dequant (int q, float stored)
{
  return kt_round_f16 ((double) q * (double) stored);
}

/* ---- tests ------------------------------------------------------------- */

START_TEST (test_worked_example_int4)
{
  uint16_t x[8], deq[8];
  uint8_t q[4];
  float scale;
  example_f16 (x);
  ck_assert_int_eq (sp_kern_cpu_quant (x, 1, 8, 4, q, &scale), SP_KERN_OK);
  static const uint8_t bytes[4] = { 0x7C, 0x28, 0x50, 0x70 };
  ck_assert_mem_eq (q, bytes, 4);
  ck_assert (scale == 0.0625f);
  ck_assert_int_eq (sp_kern_cpu_dequant (q, &scale, 1, 8, 4, deq), SP_KERN_OK);
  static const float want[8] = { 0.4375f, -0.25f, 0.125f, -0.5f, 0.3125f, 0.0f, 0.4375f, 0.0f };
  for (int i = 0; i < 8; i++)
    ck_assert_msg (sp_kern_f16_to_f32 (deq[i]) == want[i], "element %d: %g", i,
                   sp_kern_f16_to_f32 (deq[i]));
}
END_TEST

/* By hand: s = 256/(2·0.5) = 256; fp16(0.1)·256 = 25.59 -> 26,
 * fp16(0.3)·256 = 76.81 -> 77, fp16(0.49)·256 = 125.44 -> 125,
 * fp16(-0.01)·256 = -2.56 -> -3, +absmax 128 -> 127. */
START_TEST (test_worked_example_int8)
{
  uint16_t x[8], deq[8];
  uint8_t q[8];
  float scale;
  example_f16 (x);
  ck_assert_int_eq (sp_kern_cpu_quant (x, 1, 8, 8, q, &scale), SP_KERN_OK);
  static const uint8_t bytes[8] = { 0x7F, 0xC0, 0x1A, 0x80, 0x4D, 0x00, 0x7D, 0xFD };
  ck_assert_mem_eq (q, bytes, 8);
  ck_assert (scale == 1.0f / 256);
  ck_assert_int_eq (sp_kern_cpu_dequant (q, &scale, 1, 8, 8, deq), SP_KERN_OK);
  static const int qs[8] = { 127, -64, 26, -128, 77, 0, 125, -3 };
  for (int i = 0; i < 8; i++)
    ck_assert (sp_kern_f16_to_f32 (deq[i]) == qs[i] / 256.0f);
}
END_TEST

/* Rounding ties go to even: x·s = 2.5 -> 2 and 3.5 -> 4 (int4, absmax 4). */
START_TEST (test_half_even_and_zero_group)
{
  uint16_t x[4] = { kt_round_f16 (4.0), kt_round_f16 (1.25), kt_round_f16 (1.75),
                    kt_round_f16 (-0.25) };
  uint8_t q[2];
  float scale;
  ck_assert_int_eq (sp_kern_cpu_quant (x, 1, 4, 4, q, &scale), SP_KERN_OK);
  /* s = 16/8 = 2: 8 -> 7, 2.5 -> 2, 3.5 -> 4, -0.5 -> -0 */
  ck_assert_uint_eq (q[0], 0x72);
  ck_assert_uint_eq (q[1], 0x40);
  ck_assert (scale == 0.5f);
  uint16_t z[4] = { 0x0000, 0x8000, 0x0000, 0x8000 };
  ck_assert_int_eq (sp_kern_cpu_quant (z, 1, 4, 4, q, &scale), SP_KERN_OK);
  ck_assert_uint_eq (q[0], 0);
  ck_assert_uint_eq (q[1], 0);
  ck_assert (scale == 1.0f);                 /* s = 1.0 for absmax == 0 */
}
END_TEST

static void
check_random (uint32_t bits, uint32_t E, uint64_t G, uint64_t seed)
{
  KtRng rng = { seed };
  uint64_t n = G * E, gb = (uint64_t) E * bits / 8;
  uint16_t *x = g_new (uint16_t, n), *deq = g_new (uint16_t, n);
  uint8_t *q = g_new (uint8_t, G * gb), *want = g_new0 (uint8_t, gb);
  float *sc = g_new (float, G);
  double *xd = g_new (double, E);
  int *qi = g_new (int, E);
  kt_fill_groups (&rng, x, G, E);
  ck_assert_int_eq (sp_kern_cpu_quant (x, G, E, bits, q, sc), SP_KERN_OK);
  ck_assert_int_eq (sp_kern_cpu_dequant (q, sc, G, E, bits, deq), SP_KERN_OK);
  for (uint64_t g = 0; g < G; g++)
    {
      for (uint32_t i = 0; i < E; i++)
        xd[i] = kt_f16_value (x[g * E + i]);
      float stored = ref_quant_group (xd, E, bits, qi);
      ref_pack (qi, E, bits, want);
      ck_assert_msg (sc[g] == stored, "group %" G_GUINT64_FORMAT ": scale %a, want %a", g,
                     sc[g], stored);
      long d = kt_first_diff (q + g * gb, want, gb);
      ck_assert_msg (d < 0, "bits %u group %" G_GUINT64_FORMAT " byte %ld differs", bits, g, d);
      for (uint32_t i = 0; i < E; i++)
        {
          ck_assert_uint_eq (deq[g * E + i], ref_dequant (qi[i], stored));
          /* error bound: half a step, a whole step where +absmax clips */
          double err = fabs (kt_f16_value (deq[g * E + i]) - xd[i]);
          ck_assert (err <= (double) stored * 1.0001 + ldexp (fabs (xd[i]), -10));
        }
    }
  g_free (x); g_free (deq); g_free (q); g_free (want); g_free (sc); g_free (xd); g_free (qi);
}

START_TEST (test_random_int4) { check_random (4, 64, 300, 1); check_random (4, 6, 77, 2); }
END_TEST
START_TEST (test_random_int8) { check_random (8, 64, 300, 3); check_random (8, 7, 77, 4); }
END_TEST

/* Input group g = z·C + y·Cp + x must land in slot (y·D·N + (z%D)·N + z/D)·Cp + x;
 * reference §4: N=2, D=4, C=1 orders the partitions 0,4,1,5,2,6,3,7. */
static void
check_swizzle (uint32_t bits, uint32_t N, uint32_t D, uint32_t C, uint32_t P)
{
  const uint32_t E = 16, W = N * D;
  uint64_t G = (uint64_t) W * C, gb = (uint64_t) E * bits / 8;
  KtRng rng = { 99 + N * D * C * P };
  uint16_t *x = g_new (uint16_t, G * E);
  uint8_t *plain = g_new (uint8_t, G * gb), *sw = g_new (uint8_t, G * gb);
  float *ps = g_new (float, G), *ss = g_new (float, G);
  kt_fill_groups (&rng, x, G, E);
  ck_assert_int_eq (sp_kern_cpu_quant (x, G, E, bits, plain, ps), SP_KERN_OK);
  ck_assert_int_eq (sp_kern_cpu_swizzle_quant (x, G, E, bits, N, D, P, sw, ss), SP_KERN_OK);
  uint32_t cp = C / P;
  for (uint32_t z = 0; z < W; z++)
    for (uint32_t y = 0; y < P; y++)
      for (uint32_t k = 0; k < cp; k++)
        {
          uint64_t g = (uint64_t) z * C + y * cp + k;
          uint64_t slot = ((uint64_t) y * D * N + (z % D) * N + z / D) * cp + k;
          ck_assert (ss[slot] == ps[g]);
          ck_assert (memcmp (sw + slot * gb, plain + g * gb, gb) == 0);
        }
  g_free (x); g_free (plain); g_free (sw); g_free (ps); g_free (ss);
}

START_TEST (test_swizzle)
{
  check_swizzle (4, 2, 4, 1, 1);
  check_swizzle (4, 2, 2, 4, 2);
  check_swizzle (8, 3, 2, 6, 3);
  check_swizzle (4, 1, 1, 5, 1);
  /* the reference's partition order for N=2, D=4 */
  const uint32_t E = 8;
  uint16_t x[8 * 8];
  uint8_t q[8 * 4];
  float sc[8];
  for (int z = 0; z < 8; z++)
    for (int i = 0; i < 8; i++)
      x[z * 8 + i] = kt_round_f16 (ldexp (1.0, z));   /* group z: all 2^z */
  ck_assert_int_eq (sp_kern_cpu_swizzle_quant (x, 8, E, 4, 2, 4, 1, q, sc), SP_KERN_OK);
  static const int order[8] = { 0, 4, 1, 5, 2, 6, 3, 7 };
  for (int slot = 0; slot < 8; slot++)          /* stored = absmax/8 = 2^(z-3) */
    ck_assert (sc[slot] == (float) ldexp (1.0, order[slot] - 3));
}
END_TEST

START_TEST (test_invalid_shapes)
{
  uint16_t x[16] = { 0 };
  uint8_t q[16];
  float sc[4];
  ck_assert_int_eq (sp_kern_cpu_quant (x, 2, 8, 5, q, sc), SP_KERN_INVALID);
  ck_assert_int_eq (sp_kern_cpu_quant (x, 2, 7, 4, q, sc), SP_KERN_INVALID);  /* odd E, int4 */
  ck_assert_int_eq (sp_kern_cpu_quant (x, 2, 0, 8, q, sc), SP_KERN_INVALID);
  ck_assert_int_eq (sp_kern_cpu_quant (NULL, 2, 8, 8, q, sc), SP_KERN_INVALID);
  ck_assert_int_eq (sp_kern_cpu_swizzle_quant (x, 3, 4, 4, 2, 1, 1, q, sc), SP_KERN_INVALID);
  ck_assert_int_eq (sp_kern_cpu_swizzle_quant (x, 4, 4, 4, 2, 1, 3, q, sc), SP_KERN_INVALID);
  ck_assert_int_eq (sp_kern_cpu_swizzle_quant (x, 4, 4, 4, 0, 1, 1, q, sc), SP_KERN_INVALID);
  ck_assert_int_eq (sp_kern_cpu_quant_reduce (q, sc, 0, 1, 8, 4, q, sc), SP_KERN_INVALID);
  ck_assert_int_eq (sp_kern_cpu_qgz_final (q, sc, 2, 1, 1, 8, 4, (SpKernQgzMean) 7, x),
                    SP_KERN_INVALID);
  ck_assert_int_eq (sp_kern_cpu_qgz_final (q, sc, 0, 1, 1, 8, 4, SP_KERN_QGZ_DEEPSPEED, x),
                    SP_KERN_INVALID);
  ck_assert_int_eq (sp_kern_cpu_dequant (q, sc, 1, 9, 4, x), SP_KERN_INVALID);
  /* empty tensors are fine and touch nothing */
  ck_assert_int_eq (sp_kern_cpu_quant (NULL, 0, 8, 4, NULL, NULL), SP_KERN_OK);
  ck_assert_str_eq (sp_kern_status_name (SP_KERN_INVALID), "invalid");
}
END_TEST

/* Two sources, each the worked example: by hand the fp16 sums are twice
 * the dequantized example, [0.875,-0.5,0.25,-1,0.625,0,0.875,0]; absmax 1,
 * s = 8: q = [7,-4,2,-8,5,0,7,0] (the same bytes), scale 0.125. */
START_TEST (test_reduce_example)
{
  uint16_t x[8];
  uint8_t in[8], out[4];
  float sc[2], osc;
  example_f16 (x);
  ck_assert_int_eq (sp_kern_cpu_quant (x, 1, 8, 4, in, sc), SP_KERN_OK);
  memcpy (in + 4, in, 4);
  sc[1] = sc[0];
  ck_assert_int_eq (sp_kern_cpu_quant_reduce (in, sc, 2, 1, 8, 4, out, &osc), SP_KERN_OK);
  static const uint8_t bytes[4] = { 0x7C, 0x28, 0x50, 0x70 };
  ck_assert_mem_eq (out, bytes, 4);
  ck_assert (osc == 0.125f);
  /* final mean over N = 2 chunks of those sums: DeepSpeed ÷N, true ÷(N·D) */
  uint16_t fin[8];
  static const float deq2[8] = { 0.875f, -0.5f, 0.25f, -1.0f, 0.625f, 0.0f, 0.875f, 0.0f };
  memcpy (in, out, 4);
  memcpy (in + 4, out, 4);
  sc[0] = sc[1] = osc;
  ck_assert_int_eq (sp_kern_cpu_qgz_final (in, sc, 2, 2, 1, 8, 4, SP_KERN_QGZ_DEEPSPEED, fin),
                    SP_KERN_OK);
  for (int i = 0; i < 8; i++)
    ck_assert (sp_kern_f16_to_f32 (fin[i]) == deq2[i]);
  ck_assert_int_eq (sp_kern_cpu_qgz_final (in, sc, 2, 2, 1, 8, 4, SP_KERN_QGZ_TRUE_MEAN, fin),
                    SP_KERN_OK);
  for (int i = 0; i < 8; i++)
    ck_assert (sp_kern_f16_to_f32 (fin[i]) == deq2[i] / 2);
}
END_TEST

/* Random sources against the re-derivation: dequantize, add in fp16 from
 * +0 in source order, requantize. */
static void
check_reduce_random (uint32_t bits, uint32_t E, uint32_t D, uint64_t G)
{
  KtRng rng = { 5 + bits + E + D };
  uint64_t gb = (uint64_t) E * bits / 8;
  uint16_t *x = g_new (uint16_t, G * E);
  uint8_t *in = g_new (uint8_t, D * G * gb), *out = g_new (uint8_t, G * gb), *want = g_new (uint8_t, gb);
  float *sc = g_new (float, D * G), *osc = g_new (float, G);
  double *sum = g_new (double, E);
  int *qi = g_new (int, E);
  for (uint32_t j = 0; j < D; j++)
    {
      kt_fill_groups (&rng, x, G, E);
      ck_assert_int_eq (sp_kern_cpu_quant (x, G, E, bits, in + j * G * gb, sc + j * G), SP_KERN_OK);
    }
  ck_assert_int_eq (sp_kern_cpu_quant_reduce (in, sc, D, G, E, bits, out, osc), SP_KERN_OK);
  for (uint64_t g = 0; g < G; g++)
    {
      for (uint32_t i = 0; i < E; i++)
        {
          uint16_t acc = 0;
          for (uint32_t j = 0; j < D; j++)
            {
              const uint8_t *qq = in + (j * G + g) * gb;
              uint16_t d = ref_dequant (ref_q_get (qq, i, bits), sc[j * G + g]);
              double exact = kt_f16_value (acc) + kt_f16_value (d);
              acc = exact == 0.0 ? ((acc & d & 0x8000) ? 0x8000 : 0) : kt_round_f16 (exact);
            }
          sum[i] = kt_f16_value (acc);
        }
      float stored = ref_quant_group (sum, E, bits, qi);
      ref_pack (qi, E, bits, want);
      ck_assert (osc[g] == stored);
      ck_assert (memcmp (out + g * gb, want, gb) == 0);
    }
  g_free (x); g_free (in); g_free (out); g_free (want); g_free (sc); g_free (osc);
  g_free (sum); g_free (qi);
}

START_TEST (test_reduce_random)
{
  check_reduce_random (4, 32, 4, 50);
  check_reduce_random (8, 24, 3, 50);
  check_reduce_random (4, 2, 8, 9);
}
END_TEST

int
main (void)
{
  Suite *s = suite_create ("kernels-quant");
  TCase *tc = tcase_create ("quant");
  tcase_add_test (tc, test_worked_example_int4);
  tcase_add_test (tc, test_worked_example_int8);
  tcase_add_test (tc, test_half_even_and_zero_group);
  tcase_add_test (tc, test_random_int4);
  tcase_add_test (tc, test_random_int8);
  tcase_add_test (tc, test_swizzle);
  tcase_add_test (tc, test_invalid_shapes);
  tcase_add_test (tc, test_reduce_example);
  tcase_add_test (tc, test_reduce_random);
  suite_add_tcase (s, tc);
  return sp_test_run (s);
}
