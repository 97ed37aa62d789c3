/* kernels/quant-cpu.c — CPU references of the qgZ quantizer kernels
 * (swizzle_quant, dequantize, quantized_reduction, the final mean); the
 * math of reference §4.1, written so every rounding is explicit. */
#include "config.h"

#include <math.h>

#include "fp16-inline.h"
#include "kern-internal.h"

/* Quantisation scale of a group with maximum magnitude `absmax`:
 * s = 2^bits / (2·absmax) in fp32, 1.0 for an all-zero group. */
static float
group_scale (float absmax, uint32_t bits)
{
  if (absmax == 0.0f)
    return 1.0f;
  return (float) (1u << bits) / (2.0f * absmax);
}

/* q = clamp(rint_half_even(fp32(x·s))) with cvt.rni.s32.f32's rules (NaN
 * gives 0, out-of-range saturates; the clamp makes saturation moot). */
static int
quant_one (float x, float s, uint32_t bits)
{
  float v = x * s;
  if (isnan (v))
    return 0;
  float r = nearbyintf (v);              /* default mode: half to even */
  if (r < -128.0f)
    return sp_kern_clamp_q (-128, bits);
  if (r > 127.0f)
    return sp_kern_clamp_q (127, bits);
  return sp_kern_clamp_q ((int32_t) r, bits);
}

/* Write quantized value i of a group.  For int4 the caller writes even i
 * first; the odd one completes the byte (even element in the HIGH nibble). */
static void
q_put (uint8_t *q, uint64_t i, int v, uint32_t bits)
{
  if (bits == 8)
    q[i] = (uint8_t) (int8_t) v;
  else if (i % 2 == 0)
    q[i / 2] = (uint8_t) ((unsigned) (v & 0xF) << 4);
  else
    q[i / 2] |= (uint8_t) (v & 0xF);
}

/* Quantize one group given as fp16 bits; returns the stored scale. */
static float
quant_group_f16 (const uint16_t *x, uint32_t n, uint32_t bits, uint8_t *q)
{
  float m = 0.0f;
  for (uint32_t i = 0; i < n; i++)
    m = fmaxf (m, fabsf (sp_kern_h2f (x[i])));
  float s = group_scale (m, bits);
  for (uint32_t i = 0; i < n; i++)
    q_put (q, i, quant_one (sp_kern_h2f (x[i]), s, bits), bits);
  return 1.0f / s;
}

SpKernStatus
sp_kern_cpu_swizzle_quant (const uint16_t *in, uint64_t n_groups, uint32_t group_elems,
                           uint32_t bits, uint32_t nodes, uint32_t devices,
                           uint32_t pipelining, uint8_t *out_q, float *out_scales)
{
  SpKernStatus st = sp_kern_check_swizzle (in, n_groups, group_elems, bits, nodes,
                                           devices, pipelining, out_q, out_scales);
  if (st != SP_KERN_OK)
    return st;
  uint64_t per_rank = n_groups / ((uint64_t) nodes * devices);
  uint64_t gbytes = sp_kern_group_bytes (group_elems, bits);
  for (uint64_t g = 0; g < n_groups; g++)
    {
      uint64_t slot = sp_kern_swizzle_slot (g, per_rank, nodes, devices, pipelining);
      out_scales[slot] = quant_group_f16 (in + g * group_elems, group_elems, bits,
                                          out_q + slot * gbytes);
    }
  return SP_KERN_OK;
}

SpKernStatus
sp_kern_cpu_quant (const uint16_t *in, uint64_t n_groups, uint32_t group_elems,
                   uint32_t bits, uint8_t *out_q, float *out_scales)
{
  return sp_kern_cpu_swizzle_quant (in, n_groups, group_elems, bits, 1, 1, 1,
                                    out_q, out_scales);
}

/* Raw code of quantized value i (int8: the byte, int4: the nibble). */
static unsigned
q_code (const uint8_t *q, uint64_t i, uint32_t bits)
{
  if (bits == 8)
    return q[i];
  return i % 2 == 0 ? (unsigned) q[i / 2] >> 4 : q[i / 2] & 0xFu;
}

/* Dequantization table of one group: lut[code] = fp16_rn(fp32(q)·stored)
 * for every code, so the inner loops do one lookup per value (the same
 * result as computing each value, only faster). */
static void
dequant_lut (float stored, uint32_t bits, uint16_t *lut)
{
  for (unsigned code = 0; code < (1u << bits); code++)
    {
      int v = bits == 8 ? (int8_t) code : sp_kern_nibble (code);
      lut[code] = sp_kern_f2h ((float) v * stored);
    }
}

/* Scratch of the chunked inner loops (elements; on the stack). */
#define SUM_CHUNK 1024u

/* acc[k] = fp16 sum, from +0 in source order, of the dequantized values
 * i0+k (k < len) of group g of each of n_src sources (source j's group g
 * at q + j·src_bytes + g·gbytes, scale scales[j·src_groups + g]). */
static void
sum_sources (const uint8_t *q, const float *scales, uint32_t n_src, uint64_t src_bytes,
             uint64_t src_groups, uint64_t g, uint64_t gbytes, uint32_t bits, uint32_t i0,
             uint32_t len, uint16_t *acc)
{
  uint16_t lut[256];
  for (uint32_t k = 0; k < len; k++)
    acc[k] = 0x0000;                       /* +0 */
  for (uint32_t j = 0; j < n_src; j++)
    {
      const uint8_t *qg = q + j * src_bytes + g * gbytes;
      dequant_lut (scales[(uint64_t) j * src_groups + g], bits, lut);
      for (uint32_t k = 0; k < len; k++)
        acc[k] = sp_kern_hadd (acc[k], lut[q_code (qg, i0 + k, bits)]);
    }
}

SpKernStatus
sp_kern_cpu_dequant (const uint8_t *q, const float *scales, uint64_t n_groups,
                     uint32_t group_elems, uint32_t bits, uint16_t *out)
{
  if (!sp_kern_bits_ok (bits, group_elems))
    return SP_KERN_INVALID;
  if (n_groups > 0 && (q == NULL || scales == NULL || out == NULL))
    return SP_KERN_INVALID;
  uint64_t gbytes = sp_kern_group_bytes (group_elems, bits);
  uint16_t lut[256];
  for (uint64_t g = 0; g < n_groups; g++)
    {
      dequant_lut (scales[g], bits, lut);
      for (uint32_t i = 0; i < group_elems; i++)
        out[g * group_elems + i] = lut[q_code (q + g * gbytes, i, bits)];
    }
  return SP_KERN_OK;
}

SpKernStatus
sp_kern_cpu_quant_reduce (const uint8_t *in_q, const float *in_scales, uint32_t n_sources,
                          uint64_t groups_per_source, uint32_t group_elems, uint32_t bits,
                          uint8_t *out_q, float *out_scales)
{
  if (!sp_kern_bits_ok (bits, group_elems) || n_sources == 0)
    return SP_KERN_INVALID;
  if (groups_per_source == 0)
    return SP_KERN_OK;
  if (in_q == NULL || in_scales == NULL || out_q == NULL || out_scales == NULL)
    return SP_KERN_INVALID;
  uint64_t gbytes = sp_kern_group_bytes (group_elems, bits);
  uint64_t src_bytes = groups_per_source * gbytes;
  uint16_t acc[SUM_CHUNK];
  for (uint64_t o = 0; o < groups_per_source; o++)
    {
      /* Pass 1: the fp16 sums and their absmax; pass 2 recomputes the
       * (deterministic) sums to quantize them, as the GPU kernel does, so
       * no scratch beyond one stack chunk is needed. */
      float m = 0.0f;
      for (int pass = 0; pass < 2; pass++)
        {
          float s = pass == 0 ? 0.0f : group_scale (m, bits);
          for (uint32_t i0 = 0; i0 < group_elems; i0 += SUM_CHUNK)
            {
              uint32_t len = group_elems - i0 < SUM_CHUNK ? group_elems - i0 : SUM_CHUNK;
              sum_sources (in_q, in_scales, n_sources, src_bytes, groups_per_source, o, gbytes,
                           bits, i0, len, acc);
              for (uint32_t k = 0; k < len; k++)
                {
                  float v = sp_kern_h2f (acc[k]);
                  if (pass == 0)
                    m = fmaxf (m, fabsf (v));
                  else
                    q_put (out_q + o * gbytes, i0 + k, quant_one (v, s, bits), bits);
                }
            }
          if (pass == 1)
            out_scales[o] = 1.0f / s;
        }
    }
  return SP_KERN_OK;
}

SpKernStatus
sp_kern_cpu_qgz_final (const uint8_t *q, const float *scales, uint32_t nodes,
                       uint32_t devices, uint64_t groups_per_chunk, uint32_t group_elems,
                       uint32_t bits, SpKernQgzMean mean, uint16_t *out)
{
  if (!sp_kern_bits_ok (bits, group_elems) || nodes == 0 || devices == 0)
    return SP_KERN_INVALID;
  if (mean != SP_KERN_QGZ_TRUE_MEAN && mean != SP_KERN_QGZ_DEEPSPEED)
    return SP_KERN_INVALID;
  if (groups_per_chunk == 0)
    return SP_KERN_OK;
  if (q == NULL || scales == NULL || out == NULL)
    return SP_KERN_INVALID;
  uint64_t k = mean == SP_KERN_QGZ_DEEPSPEED ? nodes : (uint64_t) nodes * devices;
  float inv = 1.0f / (float) k;
  uint64_t gbytes = sp_kern_group_bytes (group_elems, bits);
  uint64_t chunk_bytes = groups_per_chunk * gbytes;
  for (uint64_t g = 0; g < groups_per_chunk; g++)
    for (uint32_t i0 = 0; i0 < group_elems; i0 += SUM_CHUNK)
      {
        /* Python's sum() over the chunks starts at 0: the +0 of sum_sources */
        uint32_t len = group_elems - i0 < SUM_CHUNK ? group_elems - i0 : SUM_CHUNK;
        uint16_t *o = out + g * group_elems + i0;
        sum_sources (q, scales, nodes, chunk_bytes, groups_per_chunk, g, gbytes, bits, i0, len, o);
        for (uint32_t e = 0; e < len; e++)
          o[e] = sp_kern_f2h (sp_kern_h2f (o[e]) * inv);
      }
  return SP_KERN_OK;
}
