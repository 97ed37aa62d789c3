/* kernels/fp16-inline.h — bit-exact binary16 and bfloat16 conversions on
 * the CPU, matching CUDA's __half2float / __float2half_rn /
 * __float2bfloat16_rn, inline for the reference kernels' inner loops (the
 * exported sp_kern_f16_* wrappers live in fp16.c).  Plain C. */
#pragma once
#include <stdint.h>
#include <string.h>

static inline uint32_t
sp_kern_f32_bits (float f)
{
  uint32_t u;
  memcpy (&u, &f, sizeof u);
  return u;
}

static inline float
sp_kern_bits_f32 (uint32_t u)
{
  float f;
  memcpy (&f, &u, sizeof f);
  return f;
}

static inline float
sp_kern_h2f (uint16_t h)
{
  uint32_t sign = (uint32_t) (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t man = h & 0x3FFu;

  if (exp == 0x1F)                       /* inf / NaN: keep the payload */
    return sp_kern_bits_f32 (sign | 0x7F800000u | (man << 13));
  if (exp != 0)                          /* normal: rebias 15 -> 127 */
    return sp_kern_bits_f32 (sign | ((exp + 112) << 23) | (man << 13));
  if (man == 0)
    return sp_kern_bits_f32 (sign);
  /* subnormal: man · 2^-24, normalise into an fp32 normal */
  int e = -14;
  while ((man & 0x400u) == 0)
    {
      man <<= 1;
      e--;
    }
  return sp_kern_bits_f32 (sign | ((uint32_t) (e + 127) << 23) | ((man & 0x3FFu) << 13));
}

/* Shift `m` right by `s` (1..31) rounding to nearest, ties to even. */
static inline uint32_t
sp_kern_shift_rne (uint32_t m, unsigned s)
{
  uint32_t q = m >> s;
  uint32_t rem = m & ((1u << s) - 1);
  uint32_t half = 1u << (s - 1);
  if (rem > half || (rem == half && (q & 1u)))
    q++;
  return q;
}

static inline uint16_t
sp_kern_f2h (float f)
{
  uint32_t x = sp_kern_f32_bits (f);
  uint16_t sign = (uint16_t) ((x >> 16) & 0x8000u);
  uint32_t ax = x & 0x7FFFFFFFu;

  if (ax > 0x7F800000u)
    return 0x7FFF;                       /* NaN */
  if (ax == 0x7F800000u)
    return sign | 0x7C00u;
  int e = (int) (ax >> 23) - 127;        /* unbiased exponent */
  if (e > 15)
    return sign | 0x7C00u;               /* >= 65536: overflow */
  if (e >= -14)
    {
      /* normal fp16: keep 10 of 23 mantissa bits; a carry out of the
       * mantissa bumps the exponent, up to inf, which is right. */
      uint32_t h = ((uint32_t) (e + 15) << 10) | ((ax >> 13) & 0x3FFu);
      uint32_t rem = ax & 0x1FFFu;
      if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
        h++;
      return sign | (uint16_t) h;
    }
  if (e < -25)
    return sign;                         /* < 2^-25 rounds to zero */
  /* subnormal fp16: value = m·2^(e-23) with the implicit bit, in units of
   * 2^-24 that is m·2^(e+1), a right shift by -(e+1) in 14..24. */
  uint32_t m = (ax & 0x7FFFFFu) | 0x800000u;
  return sign | (uint16_t) sp_kern_shift_rne (m, (unsigned) (-(e + 1)));
}

static inline float
sp_kern_bf2f (uint16_t h)
{
  return sp_kern_bits_f32 ((uint32_t) h << 16);
}

static inline uint16_t
sp_kern_f2bf (float f)
{
  uint32_t x = sp_kern_f32_bits (f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u)
    return 0x7FFF;                       /* NaN */
  /* ties to even on the 16 dropped bits; overflow carries into inf */
  uint32_t lsb = (x >> 16) & 1u;
  return (uint16_t) ((x + 0x7FFFu + lsb) >> 16);
}

static inline uint16_t
sp_kern_hadd (uint16_t a, uint16_t b)
{
  /* Both operands are exact in fp32, and fp32 has 24 >= 2·11 + 2
   * significand bits, so rounding the fp32 sum again to fp16 equals the
   * correctly rounded fp16 sum (no double-rounding error). */
  float s = sp_kern_h2f (a) + sp_kern_h2f (b);
  return sp_kern_f2h (s);
}
