/* kernels/rs-cpu.c — CPU references of reduce_scatter_coalesced's buffer
 * pack/unpack (reference §3) and of the in-place ÷W scale. */
#include "config.h"

#include <string.h>

#include "fp16-inline.h"
#include "kern-internal.h"

uint64_t
sp_kern_rs_chunk (uint64_t numel, uint32_t world)
{
  if (world == 0)
    return 0;
  return numel / world + (numel % world != 0);
}

uint64_t
sp_kern_rs_segment (const uint64_t *numels, uint32_t n_tensors, uint32_t world)
{
  uint64_t s = 0;
  for (uint32_t t = 0; t < n_tensors; t++)
    s += sp_kern_rs_chunk (numels[t], world);
  return s;
}

uint64_t
sp_kern_rs_slice_len (uint64_t numel, uint32_t world, uint32_t rank)
{
  uint64_t c = sp_kern_rs_chunk (numel, world);
  uint64_t start = (uint64_t) rank * c;
  if (world == 0 || start >= numel)
    return 0;
  return numel - start < c ? numel - start : c;
}

SpKernStatus
sp_kern_cpu_rs_pack (const void *const *tensors, const uint64_t *numels, uint32_t n_tensors,
                     uint32_t world, size_t elem_size, void *out_buf)
{
  SpKernStatus st = sp_kern_check_rs (tensors, numels, n_tensors, world, elem_size);
  if (st != SP_KERN_OK)
    return st;
  uint64_t seg = sp_kern_rs_segment (numels, n_tensors, world);
  if (seg == 0)
    return SP_KERN_OK;
  if (out_buf == NULL)
    return SP_KERN_INVALID;
  uint8_t *buf = out_buf;
  for (uint32_t q = 0; q < world; q++)
    {
      uint64_t off = (uint64_t) q * seg;           /* elements */
      for (uint32_t t = 0; t < n_tensors; t++)
        {
          uint64_t c = sp_kern_rs_chunk (numels[t], world);
          uint64_t len = sp_kern_rs_slice_len (numels[t], world, q);
          if (len > 0)
            memcpy (buf + off * elem_size,
                    (const uint8_t *) tensors[t] + (uint64_t) q * c * elem_size,
                    len * elem_size);
          memset (buf + (off + len) * elem_size, 0, (c - len) * elem_size);
          off += c;
        }
    }
  return SP_KERN_OK;
}

SpKernStatus
sp_kern_cpu_rs_unpack (const void *segment, const uint64_t *numels, uint32_t n_tensors,
                       uint32_t world, uint32_t rank, size_t elem_size,
                       void *const *out_tensors)
{
  SpKernStatus st = sp_kern_check_rs ((const void *const *) out_tensors, numels, n_tensors,
                                      world, elem_size);
  if (st != SP_KERN_OK || rank >= world)
    return st != SP_KERN_OK ? st : SP_KERN_INVALID;
  uint64_t off = 0;
  for (uint32_t t = 0; t < n_tensors; t++)
    {
      uint64_t len = sp_kern_rs_slice_len (numels[t], world, rank);
      if (len > 0)
        {
          if (segment == NULL)
            return SP_KERN_INVALID;
          memcpy (out_tensors[t], (const uint8_t *) segment + off * elem_size,
                  len * elem_size);
        }
      off += sp_kern_rs_chunk (numels[t], world);
    }
  return SP_KERN_OK;
}

SpKernStatus
sp_kern_cpu_scale (void *data, uint64_t n, SpKernDtype dtype, uint32_t divisor)
{
  if (divisor == 0 || sp_kern_dtype_size (dtype) == 0 || (n > 0 && data == NULL))
    return SP_KERN_INVALID;
  /* PyTorch's CUDA div by a scalar multiplies by the fp32 reciprocal. */
  float inv = 1.0f / (float) divisor;
  if (dtype == SP_KERN_F32)
    {
      float *x = data;
      for (uint64_t i = 0; i < n; i++)
        x[i] = x[i] * inv;
    }
  else if (dtype == SP_KERN_F16)
    {
      uint16_t *x = data;
      for (uint64_t i = 0; i < n; i++)
        x[i] = sp_kern_f2h (sp_kern_h2f (x[i]) * inv);
    }
  else
    {
      uint16_t *x = data;
      for (uint64_t i = 0; i < n; i++)
        x[i] = sp_kern_f2bf (sp_kern_bf2f (x[i]) * inv);
    }
  return SP_KERN_OK;
}
