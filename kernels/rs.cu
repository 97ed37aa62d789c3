/* kernels/rs.cu — CUDA twins of kernels/rs-cpu.c: reduce_scatter_coalesced
 * pack (pad, rank-major) and unpack, and the in-place ÷W scale.  The tensor
 * pointers travel as kernel parameters in batches of SP_RS_BATCH, so a
 * launch needs no device-side table and nothing is allocated. */
#include "config.h"

#include <cuda_bf16.h>

#include "kern-cuda.cuh"

#define SP_RS_BATCH 32

namespace {

/* One batch of tensors: their pointers, lengths, per-rank chunks c_t and
 * offsets inside the batch's columns of a segment (off[n] = batch width). */
struct RsBatch
{
  const uint8_t *src[SP_RS_BATCH];
  uint8_t *dst[SP_RS_BATCH];
  uint64_t numel[SP_RS_BATCH];
  uint64_t chunk[SP_RS_BATCH];
  uint64_t off[SP_RS_BATCH + 1];
  uint32_t n;
};

/* Tensor of the batch owning column r (0 <= r < off[n]): binary search. */
__device__ __forceinline__ uint32_t
batch_find (const RsBatch &b, uint64_t r)
{
  uint32_t lo = 0, hi = b.n;                 /* off[lo] <= r < off[hi] */
  while (hi - lo > 1)
    {
      uint32_t mid = (lo + hi) / 2;
      if (b.off[mid] <= r)
        lo = mid;
      else
        hi = mid;
    }
  return lo;
}

/* Elements each thread moves per grid-stride step: all loads of a step are
 * issued before its stores, so a thread has SP_RS_ILP loads in flight (one
 * 2-byte load at a time cannot keep an H100's memory busy). */
#define SP_RS_ILP 4

template <typename T>
__global__ void
pack_kernel (RsBatch b, uint32_t world, uint64_t seg, uint64_t seg_base, T *buf)
{
  const uint64_t width = b.off[b.n];
  const uint64_t tile = (uint64_t) blockDim.x * SP_RS_ILP;
  for (uint64_t q = blockIdx.y; q < world; q += gridDim.y)
    for (uint64_t r0 = (uint64_t) blockIdx.x * tile + threadIdx.x; r0 < width;
         r0 += (uint64_t) gridDim.x * tile)
      {
        T v[SP_RS_ILP];
#pragma unroll
        for (int u = 0; u < SP_RS_ILP; u++)
          {
            const uint64_t r = r0 + (uint64_t) u * blockDim.x;
            v[u] = T ();                       /* zero padding */
            if (r < width)
              {
                uint32_t t = batch_find (b, r);
                uint64_t j = q * b.chunk[t] + (r - b.off[t]);
                if (j < b.numel[t])
                  v[u] = reinterpret_cast<const T *> (b.src[t])[j];
              }
          }
#pragma unroll
        for (int u = 0; u < SP_RS_ILP; u++)
          {
            const uint64_t r = r0 + (uint64_t) u * blockDim.x;
            if (r < width)
              buf[q * seg + seg_base + r] = v[u];
          }
      }
}

template <typename T>
__global__ void
unpack_kernel (RsBatch b, uint32_t rank, const T *segment, uint64_t seg_base)
{
  const uint64_t width = b.off[b.n];
  const uint64_t tile = (uint64_t) blockDim.x * SP_RS_ILP;
  for (uint64_t r0 = (uint64_t) blockIdx.x * tile + threadIdx.x; r0 < width;
       r0 += (uint64_t) gridDim.x * tile)
    {
      T v[SP_RS_ILP];
      T *dst[SP_RS_ILP];
#pragma unroll
      for (int u = 0; u < SP_RS_ILP; u++)
        {
          const uint64_t r = r0 + (uint64_t) u * blockDim.x;
          dst[u] = NULL;
          if (r < width)
            {
              uint32_t t = batch_find (b, r);
              uint64_t j = r - b.off[t];
              if ((uint64_t) rank * b.chunk[t] + j < b.numel[t])
                {
                  dst[u] = reinterpret_cast<T *> (b.dst[t]) + j;
                  v[u] = segment[seg_base + r];
                }
            }
        }
#pragma unroll
      for (int u = 0; u < SP_RS_ILP; u++)
        if (dst[u] != NULL)
          *dst[u] = v[u];
    }
}

/* Fill `b` with tensors [first, first+count) (count <= SP_RS_BATCH). */
void
batch_fill (RsBatch *b, const void *const *src, void *const *dst, const uint64_t *numels,
            uint32_t first, uint32_t count, uint32_t world)
{
  b->n = count;
  b->off[0] = 0;
  for (uint32_t k = 0; k < count; k++)
    {
      b->src[k] = src ? static_cast<const uint8_t *> (src[first + k]) : NULL;
      b->dst[k] = dst ? static_cast<uint8_t *> (dst[first + k]) : NULL;
      b->numel[k] = numels[first + k];
      b->chunk[k] = sp_kern_rs_chunk (numels[first + k], world);
      b->off[k + 1] = b->off[k] + b->chunk[k];
    }
}

template <typename T>
void
launch_pack (const RsBatch &b, uint32_t world, uint64_t seg, uint64_t seg_base, void *buf,
             cudaStream_t stream)
{
  dim3 grid (sp_kern_blocks (b.off[b.n], (uint64_t) SP_KERN_THREADS * SP_RS_ILP),
             world > SP_KERN_MAX_BLOCKS ? SP_KERN_MAX_BLOCKS : world);
  pack_kernel<T><<<grid, SP_KERN_THREADS, 0, stream>>> (b, world, seg, seg_base,
                                                        static_cast<T *> (buf));
}

template <typename T>
void
launch_unpack (const RsBatch &b, uint32_t rank, const void *segment, uint64_t seg_base,
               cudaStream_t stream)
{
  unsigned blocks = sp_kern_blocks (b.off[b.n], (uint64_t) SP_KERN_THREADS * SP_RS_ILP);
  unpack_kernel<T><<<blocks, SP_KERN_THREADS, 0, stream>>> (
      b, rank, static_cast<const T *> (segment), seg_base);
}

/* x = dtype_rn(fp32(x)·inv), 8 fp16/bf16 or 4 fp32 values per 16-byte
 * vector when `data` is 16-byte aligned, then the tail one by one. */
template <int DT>
__device__ __forceinline__ uint16_t
scale16 (uint16_t h, float inv)
{
  if (DT == SP_KERN_F16)
    return dev_f2h (__fmul_rn (dev_h2f (h), inv));
  float f = __bfloat162float (__ushort_as_bfloat16 (h));
  return __bfloat16_as_ushort (__float2bfloat16_rn (__fmul_rn (f, inv)));
}

template <int DT>
__global__ void
scale16_kernel (uint16_t *x, uint64_t n, uint64_t n_vec, float inv)
{
  const uint64_t tid = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x;
  const uint64_t nth = (uint64_t) gridDim.x * blockDim.x;
  for (uint64_t v = tid; v < n_vec; v += nth)
    {
      uint16_t h[8];
      dev_load_h<8> (x + v * 8, h);
#pragma unroll
      for (int k = 0; k < 8; k++)
        h[k] = scale16<DT> (h[k], inv);
      dev_store_h<8> (x + v * 8, h);
    }
  for (uint64_t i = n_vec * 8 + tid; i < n; i += nth)
    x[i] = scale16<DT> (x[i], inv);
}

__global__ void
scale32_kernel (float *x, uint64_t n, uint64_t n_vec, float inv)
{
  const uint64_t tid = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x;
  const uint64_t nth = (uint64_t) gridDim.x * blockDim.x;
  for (uint64_t v = tid; v < n_vec; v += nth)
    {
      float4 f = reinterpret_cast<float4 *> (x)[v];
      f.x = __fmul_rn (f.x, inv);
      f.y = __fmul_rn (f.y, inv);
      f.z = __fmul_rn (f.z, inv);
      f.w = __fmul_rn (f.w, inv);
      reinterpret_cast<float4 *> (x)[v] = f;
    }
  for (uint64_t i = n_vec * 4 + tid; i < n; i += nth)
    x[i] = __fmul_rn (x[i], inv);
}

} // namespace

extern "C" SpKernStatus
sp_kern_gpu_rs_pack (const void *const *tensors, const uint64_t *numels, uint32_t n_tensors,
                     uint32_t world, size_t elem_size, void *out_buf, void *stream)
{
  SpKernStatus st = sp_kern_check_rs (tensors, numels, n_tensors, world, elem_size);
  if (st != SP_KERN_OK)
    return st;
  uint64_t seg = sp_kern_rs_segment (numels, n_tensors, world);
  if (seg == 0)
    return SP_KERN_OK;
  if (out_buf == NULL)
    return SP_KERN_INVALID;
  cudaStream_t s = (cudaStream_t) stream;
  uint64_t seg_base = 0;
  for (uint32_t first = 0; first < n_tensors; first += SP_RS_BATCH)
    {
      RsBatch b;
      uint32_t count = n_tensors - first < SP_RS_BATCH ? n_tensors - first : SP_RS_BATCH;
      batch_fill (&b, tensors, NULL, numels, first, count, world);
      if (b.off[count] == 0)
        continue;
      switch (elem_size)
        {
        case 1: launch_pack<uint8_t> (b, world, seg, seg_base, out_buf, s); break;
        case 2: launch_pack<uint16_t> (b, world, seg, seg_base, out_buf, s); break;
        case 4: launch_pack<uint32_t> (b, world, seg, seg_base, out_buf, s); break;
        default: launch_pack<uint64_t> (b, world, seg, seg_base, out_buf, s); break;
        }
      if ((st = sp_kern_launch_status ()) != SP_KERN_OK)
        return st;
      seg_base += b.off[count];
    }
  return SP_KERN_OK;
}

extern "C" SpKernStatus
sp_kern_gpu_rs_unpack (const void *segment, const uint64_t *numels, uint32_t n_tensors,
                       uint32_t world, uint32_t rank, size_t elem_size,
                       void *const *out_tensors, void *stream)
{
  SpKernStatus st = sp_kern_check_rs ((const void *const *) out_tensors, numels, n_tensors,
                                      world, elem_size);
  if (st != SP_KERN_OK || rank >= world)
    return st != SP_KERN_OK ? st : SP_KERN_INVALID;
  bool any = false;
  for (uint32_t t = 0; t < n_tensors; t++)
    any = any || sp_kern_rs_slice_len (numels[t], world, rank) > 0;
  if (!any)
    return SP_KERN_OK;
  if (segment == NULL)
    return SP_KERN_INVALID;
  cudaStream_t s = (cudaStream_t) stream;
  uint64_t seg_base = 0;
  for (uint32_t first = 0; first < n_tensors; first += SP_RS_BATCH)
    {
      RsBatch b;
      uint32_t count = n_tensors - first < SP_RS_BATCH ? n_tensors - first : SP_RS_BATCH;
      batch_fill (&b, NULL, out_tensors, numels, first, count, world);
      if (b.off[count] == 0)
        continue;
      switch (elem_size)
        {
        case 1: launch_unpack<uint8_t> (b, rank, segment, seg_base, s); break;
        case 2: launch_unpack<uint16_t> (b, rank, segment, seg_base, s); break;
        case 4: launch_unpack<uint32_t> (b, rank, segment, seg_base, s); break;
        default: launch_unpack<uint64_t> (b, rank, segment, seg_base, s); break;
        }
      if ((st = sp_kern_launch_status ()) != SP_KERN_OK)
        return st;
      seg_base += b.off[count];
    }
  return SP_KERN_OK;
}

extern "C" SpKernStatus
sp_kern_gpu_scale (void *data, uint64_t n, SpKernDtype dtype, uint32_t divisor, void *stream)
{
  if (divisor == 0 || sp_kern_dtype_size (dtype) == 0 || (n > 0 && data == NULL))
    return SP_KERN_INVALID;
  if (n == 0)
    return SP_KERN_OK;
  float inv = 1.0f / (float) divisor;    /* host IEEE division, as the CPU twin */
  cudaStream_t s = (cudaStream_t) stream;
  bool vec = sp_kern_aligned (data, 16);
  if (dtype == SP_KERN_F32)
    {
      uint64_t n_vec = vec ? n / 4 : 0;
      scale32_kernel<<<sp_kern_blocks (n_vec ? n_vec : n, SP_KERN_THREADS), SP_KERN_THREADS, 0,
                       s>>> (static_cast<float *> (data), n, n_vec, inv);
    }
  else
    {
      uint64_t n_vec = vec ? n / 8 : 0;
      unsigned blocks = sp_kern_blocks (n_vec ? n_vec : n, SP_KERN_THREADS);
      if (dtype == SP_KERN_F16)
        scale16_kernel<SP_KERN_F16><<<blocks, SP_KERN_THREADS, 0, s>>> (
            static_cast<uint16_t *> (data), n, n_vec, inv);
      else
        scale16_kernel<SP_KERN_BF16><<<blocks, SP_KERN_THREADS, 0, s>>> (
            static_cast<uint16_t *> (data), n, n_vec, inv);
    }
  return sp_kern_launch_status ();
}
