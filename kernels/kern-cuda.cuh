/* kernels/kern-cuda.cuh — device helpers shared by the .cu kernels: fp16
 * conversions with explicit rounding, packed loads and stores, the
 * per-thread CUDA error record.  Every fp32 operation uses an explicit _rn
 * intrinsic so nvcc cannot contract it into an FMA: the CPU references
 * (kernels/quant-cpu.c, rs-cpu.c) perform exactly the same roundings. */
#pragma once
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kern-internal.h"

/* Threads per block of every kernel here (8 warps). */
#define SP_KERN_THREADS 256
/* Upper bound on blocks per launch; kernels are grid-stride. */
#define SP_KERN_MAX_BLOCKS 65535u

/* Record a CUDA error for sp_kern_gpu_error_string (device.cu). */
void sp_kern_cuda_record (cudaError_t err);

/* Map the result of a launch to a status. */
static inline SpKernStatus
sp_kern_launch_status (void)
{
  cudaError_t err = cudaGetLastError ();
  if (err != cudaSuccess)
    {
      sp_kern_cuda_record (err);
      return SP_KERN_CUDA;
    }
  return SP_KERN_OK;
}

static inline unsigned
sp_kern_blocks (uint64_t work_items, uint64_t items_per_block)
{
  uint64_t b = (work_items + items_per_block - 1) / items_per_block;
  if (b == 0)
    b = 1;
  return b > SP_KERN_MAX_BLOCKS ? SP_KERN_MAX_BLOCKS : (unsigned) b;
}

static inline int
sp_kern_aligned (const void *p, uintptr_t n)
{
  return ((uintptr_t) p % n) == 0;
}

__device__ __forceinline__ float
dev_h2f (uint16_t h)
{
  return __half2float (__ushort_as_half (h));
}

__device__ __forceinline__ uint16_t
dev_f2h (float f)
{
  return __half_as_ushort (__float2half_rn (f));
}

/* fp16 + fp16 rounded to fp16: fp32 add then one rounding (exact, see
 * sp_kern_f16_add). */
__device__ __forceinline__ uint16_t
dev_hadd (uint16_t a, uint16_t b)
{
  return dev_f2h (__fadd_rn (dev_h2f (a), dev_h2f (b)));
}

__device__ __forceinline__ int
dev_nibble (unsigned v)
{
  v &= 0xFu;
  return v >= 8u ? (int) v - 16 : (int) v;
}

/* s = 2^bits / (2·absmax), 1.0 for absmax == 0 (§4.1). */
template <int BITS>
__device__ __forceinline__ float
dev_group_scale (float absmax)
{
  return absmax == 0.0f ? 1.0f : __fdiv_rn ((float) (1 << BITS), __fmul_rn (2.0f, absmax));
}

template <int BITS>
__device__ __forceinline__ int
dev_quant_one (float x, float s)
{
  int v = __float2int_rn (__fmul_rn (x, s));   /* NaN -> 0, saturating */
  const int lo = -(1 << (BITS - 1)), hi = (1 << (BITS - 1)) - 1;
  return v < lo ? lo : v > hi ? hi : v;
}

template <int BITS>
__device__ __forceinline__ uint16_t
dev_dequant_one (int q, float stored)
{
  return dev_f2h (__fmul_rn ((float) q, stored));
}

/* The 8 fp16 values of a 16-byte word, in memory order (little endian). */
__device__ __forceinline__ void
dev_unpack_h8 (uint4 u, uint16_t *v)
{
  uint32_t w[4] = { u.x, u.y, u.z, u.w };
#pragma unroll
  for (int k = 0; k < 8; k++)
    v[k] = (uint16_t) (w[k / 2] >> (16 * (k % 2)));
}

/* Load VEC consecutive fp16 values (VEC == 8: one 16-byte load). */
template <int VEC>
__device__ __forceinline__ void
dev_load_h (const uint16_t *p, uint16_t *v)
{
  if (VEC == 8)
    dev_unpack_h8 (*reinterpret_cast<const uint4 *> (p), v);
  else
    {
#pragma unroll
      for (int k = 0; k < VEC; k++)
        v[k] = p[k];
    }
}

template <int VEC>
__device__ __forceinline__ void
dev_store_h (uint16_t *p, const uint16_t *v)
{
  if (VEC == 8)
    {
      uint4 u;
      u.x = v[0] | ((uint32_t) v[1] << 16);
      u.y = v[2] | ((uint32_t) v[3] << 16);
      u.z = v[4] | ((uint32_t) v[5] << 16);
      u.w = v[6] | ((uint32_t) v[7] << 16);
      *reinterpret_cast<uint4 *> (p) = u;
    }
  else
    {
#pragma unroll
      for (int k = 0; k < VEC; k++)
        p[k] = v[k];
    }
}

/* Load VEC quantized values starting at element i (a multiple of VEC) of
 * the group at q.  VEC == 8 uses one 4-byte (int4) or 8-byte (int8) load. */
template <int BITS, int VEC>
__device__ __forceinline__ void
dev_load_q (const uint8_t *q, uint32_t i, int *v)
{
  if (VEC == 8 && BITS == 4)
    {
      uint32_t w = *reinterpret_cast<const uint32_t *> (q + i / 2);
#pragma unroll
      for (int j = 0; j < 4; j++)
        {
          unsigned b = (w >> (8 * j)) & 0xFFu;
          v[2 * j] = dev_nibble (b >> 4);
          v[2 * j + 1] = dev_nibble (b);
        }
    }
  else if (VEC == 8)
    {
      uint2 u = *reinterpret_cast<const uint2 *> (q + i);
#pragma unroll
      for (int j = 0; j < 8; j++)
        v[j] = (int8_t) (uint8_t) ((j < 4 ? u.x : u.y) >> (8 * (j % 4)));
    }
  else if (BITS == 4)
    {
#pragma unroll
      for (int j = 0; j < VEC; j += 2)
        {
          unsigned b = q[(i + j) / 2];
          v[j] = dev_nibble (b >> 4);
          v[j + 1] = dev_nibble (b);
        }
    }
  else
    {
#pragma unroll
      for (int j = 0; j < VEC; j++)
        v[j] = (int8_t) q[i + j];
    }
}

/* Store VEC quantized values at element i of the group at q (even element
 * of a pair in the high nibble). */
template <int BITS, int VEC>
__device__ __forceinline__ void
dev_store_q (uint8_t *q, uint32_t i, const int *v)
{
  if (BITS == 4)
    {
      uint32_t w = 0;
#pragma unroll
      for (int j = 0; j < VEC / 2; j++)
        w |= (uint32_t) ((((unsigned) v[2 * j] & 0xFu) << 4) | ((unsigned) v[2 * j + 1] & 0xFu))
             << (8 * j);
      if (VEC == 8)
        *reinterpret_cast<uint32_t *> (q + i / 2) = w;
      else
#pragma unroll
        for (int j = 0; j < VEC / 2; j++)
          q[(i + 2 * j) / 2] = (uint8_t) (w >> (8 * j));
    }
  else if (VEC == 8)
    {
      uint2 u;
      u.x = 0;
      u.y = 0;
#pragma unroll
      for (int j = 0; j < 8; j++)
        {
          uint32_t b = (uint32_t) (uint8_t) (int8_t) v[j];
          if (j < 4)
            u.x |= b << (8 * j);
          else
            u.y |= b << (8 * (j - 4));
        }
      *reinterpret_cast<uint2 *> (q + i) = u;
    }
  else
    {
#pragma unroll
      for (int j = 0; j < VEC; j++)
        q[i + j] = (uint8_t) (int8_t) v[j];
    }
}

/* Max over a team of `team` lanes (a power of two <= 32, aligned within
 * the warp).  Every lane of the warp must call it. */
__device__ __forceinline__ float
dev_team_max (float m, int team)
{
  for (int off = team / 2; off > 0; off /= 2)
    m = fmaxf (m, __shfl_xor_sync (0xFFFFFFFFu, m, off, 32));
  return m;
}
