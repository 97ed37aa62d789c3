/* kernels/fp16.c — the exported fp16/bf16 helpers of kernels.h; the
 * arithmetic is in fp16-inline.h so the reference kernels inline it. */
#include "config.h"

#include "fp16-inline.h"
#include "shardplan/kernels.h"

float
sp_kern_f16_to_f32 (uint16_t h)
{
  return sp_kern_h2f (h);
}

uint16_t
sp_kern_f32_to_f16 (float f)
{
  return sp_kern_f2h (f);
}

float
sp_kern_bf16_to_f32 (uint16_t h)
{
  return sp_kern_bf2f (h);
}

uint16_t
sp_kern_f32_to_bf16 (float f)
{
  return sp_kern_f2bf (f);
}

uint16_t
sp_kern_f16_add (uint16_t a, uint16_t b)
{
  return sp_kern_hadd (a, b);
}
