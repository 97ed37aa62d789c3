/* tests/kernels/kern-testutil.h — helpers for the kernel suites: a
 * deterministic RNG, random fp16 data that is never zero, and reference
 * rounding to fp16 derived independently of kernels/fp16.c (a search in the
 * sorted table of all finite fp16 values, with values decoded by ldexp). */
#pragma once
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "shardplan/kernels.h"

typedef struct { uint64_t s; } KtRng;

static inline uint64_t
kt_next (KtRng *r)
{
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Uniform double in [0, 1). */
static inline double
kt_unit (KtRng *r)
{
  return (double) (kt_next (r) >> 11) * 0x1.0p-53;
}

/* Value of a finite fp16 bit pattern, decoded from its fields by ldexp. */
static inline double
kt_f16_value (uint16_t h)
{
  int e = (h >> 10) & 0x1F, m = h & 0x3FF;
  double v = e == 0 ? ldexp (m, -24) : ldexp (1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}

/* fp16 bits nearest to d, ties to the even pattern; ±inf beyond the
 * rounding boundary 65520.  Binary search over the 0x7C00 non-negative
 * finite patterns, whose values increase with the pattern. */
static inline uint16_t
kt_round_f16 (double d)
{
  uint16_t sign = signbit (d) ? 0x8000 : 0;
  double a = fabs (d);
  if (a >= 65520.0)
    return sign | 0x7C00;
  unsigned lo = 0, hi = 0x7BFF;             /* value(lo) <= a < value(hi)? */
  if (a >= kt_f16_value (0x7BFF))
    return sign | 0x7BFF;
  while (hi - lo > 1)
    {
      unsigned mid = (lo + hi) / 2;
      if (kt_f16_value ((uint16_t) mid) <= a)
        lo = mid;
      else
        hi = mid;
    }
  double dl = a - kt_f16_value ((uint16_t) lo), dh = kt_f16_value ((uint16_t) hi) - a;
  unsigned pick = dl < dh ? lo : dh < dl ? hi : (lo % 2 == 0 ? lo : hi);
  return sign | (uint16_t) pick;
}

/* Random fp16 with magnitude in [lo, hi), random sign, never zero. */
static inline uint16_t
kt_rand_f16 (KtRng *r, double lo, double hi)
{
  for (;;)
    {
      double v = lo + (hi - lo) * kt_unit (r);
      uint16_t h = kt_round_f16 ((kt_next (r) & 1) ? -v : v);
      if ((h & 0x7FFF) != 0)
        return h;
    }
}

/* Random fp16 group data: each group gets its own magnitude scale (2^-12 ..
 * 2^8) so scales vary over many binades; values are never zero. */
static inline void
kt_fill_groups (KtRng *r, uint16_t *x, uint64_t n_groups, uint32_t group_elems)
{
  for (uint64_t g = 0; g < n_groups; g++)
    {
      double top = ldexp (1.0, (int) (kt_next (r) % 21) - 12);
      for (uint32_t i = 0; i < group_elems; i++)
        x[g * group_elems + i] = kt_rand_f16 (r, top * 1e-3, top);
    }
}

/* Index of the first differing byte, or -1. */
static inline long
kt_first_diff (const void *a, const void *b, size_t n)
{
  const uint8_t *x = a, *y = b;
  for (size_t i = 0; i < n; i++)
    if (x[i] != y[i])
      return (long) i;
  return -1;
}
