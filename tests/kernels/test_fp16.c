/* tests/kernels/test_fp16.c — the CPU fp16/bf16 emulation that every
 * kernel reference rests on: exhaustive over all 65536 fp16 patterns, and
 * against an independent nearest-even search for rounding and addition. */
#include "config.h"

#include "../testutil.h"
#include "kern-testutil.h"

START_TEST (test_f16_widen_exhaustive)
{
  for (uint32_t h = 0; h < 0x10000; h++)
    {
      float f = sp_kern_f16_to_f32 ((uint16_t) h);
      int exp = (h >> 10) & 0x1F;
      if (exp == 0x1F && (h & 0x3FF) != 0)
        ck_assert_msg (isnan (f), "0x%04x should widen to NaN", h);
      else if (exp == 0x1F)
        ck_assert (isinf (f) && (signbit (f) != 0) == ((h & 0x8000) != 0));
      else
        {
          ck_assert_msg ((double) f == kt_f16_value ((uint16_t) h), "0x%04x -> %a", h, f);
          ck_assert ((signbit (f) != 0) == ((h & 0x8000) != 0));
        }
    }
}
END_TEST

START_TEST (test_f16_round_trip_exhaustive)
{
  for (uint32_t h = 0; h < 0x10000; h++)
    {
      uint16_t back = sp_kern_f32_to_f16 (sp_kern_f16_to_f32 ((uint16_t) h));
      if (((h >> 10) & 0x1F) == 0x1F && (h & 0x3FF) != 0)
        ck_assert_uint_eq (back, 0x7FFF);         /* canonical NaN */
      else
        ck_assert_msg (back == h, "0x%04x round-trips to 0x%04x", h, back);
    }
}
END_TEST

/* Every midpoint between neighbouring fp16 values (exact in fp32) rounds to
 * the even pattern; a hair above or below goes to the nearer one. */
START_TEST (test_f16_midpoints_exhaustive)
{
  for (uint32_t h = 0; h < 0x7BFF; h++)
    {
      double a = kt_f16_value ((uint16_t) h), b = kt_f16_value ((uint16_t) (h + 1));
      float mid = (float) ((a + b) / 2);
      ck_assert ((double) mid == (a + b) / 2);
      uint16_t even = (h % 2 == 0) ? (uint16_t) h : (uint16_t) (h + 1);
      ck_assert_uint_eq (sp_kern_f32_to_f16 (mid), even);
      ck_assert_uint_eq (sp_kern_f32_to_f16 (-mid), 0x8000 | even);
      ck_assert_uint_eq (sp_kern_f32_to_f16 (nextafterf (mid, 0.0f)), h);
      ck_assert_uint_eq (sp_kern_f32_to_f16 (nextafterf (mid, INFINITY)), h + 1);
    }
}
END_TEST

START_TEST (test_f16_round_special)
{
  ck_assert_uint_eq (sp_kern_f32_to_f16 (65504.0f), 0x7BFF);
  ck_assert_uint_eq (sp_kern_f32_to_f16 (nextafterf (65520.0f, 0.0f)), 0x7BFF);
  ck_assert_uint_eq (sp_kern_f32_to_f16 (65520.0f), 0x7C00);    /* tie to even = inf */
  ck_assert_uint_eq (sp_kern_f32_to_f16 (1e10f), 0x7C00);
  ck_assert_uint_eq (sp_kern_f32_to_f16 (-INFINITY), 0xFC00);
  ck_assert_uint_eq (sp_kern_f32_to_f16 (NAN), 0x7FFF);
  ck_assert_uint_eq (sp_kern_f32_to_f16 (0x1p-25f), 0x0000);    /* tie to even = 0 */
  ck_assert_uint_eq (sp_kern_f32_to_f16 (nextafterf (0x1p-25f, 1.0f)), 0x0001);
  ck_assert_uint_eq (sp_kern_f32_to_f16 (-0.0f), 0x8000);
  ck_assert_uint_eq (sp_kern_f32_to_f16 (1e-30f), 0x0000);
  ck_assert_uint_eq (sp_kern_f32_to_f16 (0.1f), 0x2E66);
  ck_assert_uint_eq (sp_kern_f32_to_f16 (1.0f), 0x3C00);
}
END_TEST

/* Random fp32 bit patterns across the fp16 range (and beyond) against the
 * independent nearest-even search. */
START_TEST (test_f16_round_random)
{
  KtRng rng = { 7 };
  for (int k = 0; k < 400000; k++)
    {
      /* exponents 2^-30 .. 2^17 with a random mantissa and sign */
      uint32_t bits = (uint32_t) ((kt_next (&rng) % 48 + 97) << 23)
                      | (uint32_t) (kt_next (&rng) & 0x7FFFFF)
                      | (uint32_t) ((kt_next (&rng) & 1) << 31);
      float f;
      memcpy (&f, &bits, sizeof f);
      ck_assert_msg (sp_kern_f32_to_f16 (f) == kt_round_f16 ((double) f),
                     "%a -> 0x%04x, expected 0x%04x", f, sp_kern_f32_to_f16 (f),
                     kt_round_f16 ((double) f));
    }
}
END_TEST

/* fp16 + fp16: the exact sum (in double, 40 bits suffice) rounded once. */
START_TEST (test_f16_add_random)
{
  KtRng rng = { 11 };
  for (int k = 0; k < 300000; k++)
    {
      uint16_t a = (uint16_t) (kt_next (&rng) & 0xFFFF), b;
      /* half the time a close magnitude, to provoke cancellation and ties */
      if (k % 2)
        b = (uint16_t) ((a ^ 0x8000) + (int) (kt_next (&rng) % 64) - 32);
      else
        b = (uint16_t) (kt_next (&rng) & 0xFFFF);
      if (((a >> 10) & 0x1F) == 0x1F || ((b >> 10) & 0x1F) == 0x1F)
        continue;
      double exact = kt_f16_value (a) + kt_f16_value (b);
      uint16_t want = kt_round_f16 (exact);
      if (exact == 0.0)                      /* x + (-x) = +0 in round-to-nearest */
        want = (a & b & 0x8000) ? 0x8000 : 0x0000;
      ck_assert_msg (sp_kern_f16_add (a, b) == want, "0x%04x + 0x%04x = 0x%04x, want 0x%04x",
                     a, b, sp_kern_f16_add (a, b), want);
    }
  ck_assert_uint_eq (sp_kern_f16_add (0x0000, 0x8000), 0x0000);
  ck_assert_uint_eq (sp_kern_f16_add (0x8000, 0x8000), 0x8000);
  ck_assert_uint_eq (sp_kern_f16_add (0x7BFF, 0x7BFF), 0x7C00);  /* overflow */
  ck_assert_uint_eq (sp_kern_f16_add (0x3C00, 0x1000), 0x3C00);  /* 1 + 2^-11: tie, even */
}
END_TEST

START_TEST (test_bf16)
{
  ck_assert_uint_eq (sp_kern_f32_to_bf16 (1.0f), 0x3F80);
  ck_assert_uint_eq (sp_kern_f32_to_bf16 (1.0f + 0x1p-8f), 0x3F80);        /* tie, even */
  ck_assert_uint_eq (sp_kern_f32_to_bf16 (1.0f + 3 * 0x1p-8f), 0x3F82);    /* tie, even */
  ck_assert_uint_eq (sp_kern_f32_to_bf16 (1.0f + 0x1p-8f + 0x1p-20f), 0x3F81);
  ck_assert_uint_eq (sp_kern_f32_to_bf16 (-2.5f), 0xC020);
  ck_assert_uint_eq (sp_kern_f32_to_bf16 (FLT_MAX), 0x7F80);             /* rounds to inf */
  ck_assert_uint_eq (sp_kern_f32_to_bf16 (NAN), 0x7FFF);
  ck_assert (sp_kern_bf16_to_f32 (0x3F80) == 1.0f);
  ck_assert (sp_kern_bf16_to_f32 (0xC020) == -2.5f);
  for (uint32_t h = 0; h < 0x10000; h++)
    {
      if (((h >> 7) & 0xFF) == 0xFF && (h & 0x7F) != 0)
        continue;                            /* NaN patterns */
      ck_assert_uint_eq (sp_kern_f32_to_bf16 (sp_kern_bf16_to_f32 ((uint16_t) h)), h);
    }
}
END_TEST

int
main (void)
{
  Suite *s = suite_create ("kernels-fp16");
  TCase *tc = tcase_create ("fp16");
  tcase_add_test (tc, test_f16_widen_exhaustive);
  tcase_add_test (tc, test_f16_round_trip_exhaustive);
  tcase_add_test (tc, test_f16_midpoints_exhaustive);
  tcase_add_test (tc, test_f16_round_special);
  tcase_add_test (tc, test_f16_round_random);
  tcase_add_test (tc, test_f16_add_random);
  tcase_add_test (tc, test_bf16);
  suite_add_tcase (s, tc);
  return sp_test_run (s);
}
