/* kernels/quant.cu — CUDA twins of kernels/quant-cpu.c: the qgZ
 * quantizer (swizzle_quant), dequantize, quantized_reduction and the final
 * mean.  One team of `team` lanes (a power of two <= 32) per group, groups
 * grid-strided; VEC = 8 values per lane step with 16-byte fp16 loads when
 * the group size and pointers allow it, else pairs (int4) or singles. */
#include "config.h"

#include "kern-cuda.cuh"

namespace {

/* Lanes per group: enough for one VEC step per lane, at most a warp. */
int
team_size (uint32_t group_elems, int vec)
{
  uint64_t steps = ((uint64_t) group_elems + vec - 1) / vec;
  int t = 1;
  while (t < 32 && (uint64_t) t < steps)
    t *= 2;
  return t;
}

/* Team geometry of the calling thread; the loop over `base` is uniform
 * across a warp so the shuffles in dev_team_max see every lane. */
struct Team
{
  int team, tl, per_warp;
  uint64_t first, stride, tw;
  __device__ Team (int team_) : team (team_)
  {
    int lane = threadIdx.x & 31;
    tl = lane & (team - 1);
    tw = (uint64_t) (lane / team);
    per_warp = 32 / team;
    uint64_t warp = ((uint64_t) blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    uint64_t n_warps = ((uint64_t) gridDim.x * blockDim.x) >> 5;
    first = warp * per_warp;
    stride = n_warps * per_warp;
  }
};

template <int BITS, int VEC>
__global__ void
swizzle_quant_kernel (const uint16_t *in, uint64_t n_groups, uint32_t E, uint32_t nodes,
                      uint32_t devices, uint32_t pipelining, int team, uint8_t *out_q,
                      float *out_scales)
{
  Team tm (team);
  const uint64_t gbytes = (uint64_t) E * BITS / 8;
  const uint64_t per_rank = n_groups / ((uint64_t) nodes * devices);
  for (uint64_t base = tm.first; base < n_groups; base += tm.stride)
    {
      const uint64_t g = base + tm.tw;
      const bool active = g < n_groups;
      const uint16_t *x = in + g * E;
      float m = 0.0f;
      if (active)
        for (uint32_t i = tm.tl * VEC; i < E; i += team * VEC)
          {
            uint16_t v[VEC];
            dev_load_h<VEC> (x + i, v);
#pragma unroll
            for (int k = 0; k < VEC; k++)
              m = fmaxf (m, fabsf (dev_h2f (v[k])));
          }
      m = dev_team_max (m, team);
      if (!active)
        continue;
      const float s = dev_group_scale<BITS> (m);
      const uint64_t slot = sp_kern_swizzle_slot (g, per_rank, nodes, devices, pipelining);
      uint8_t *qo = out_q + slot * gbytes;
      for (uint32_t i = tm.tl * VEC; i < E; i += team * VEC)
        {
          uint16_t v[VEC];
          int q[VEC];
          dev_load_h<VEC> (x + i, v);
#pragma unroll
          for (int k = 0; k < VEC; k++)
            q[k] = dev_quant_one<BITS> (dev_h2f (v[k]), s);
          dev_store_q<BITS, VEC> (qo, i, q);
        }
      if (tm.tl == 0)
        out_scales[slot] = __fdiv_rn (1.0f, s);
    }
}

/* Steps of 8 values a lane keeps in registers between the absmax pass and
 * the quantize pass of the cached kernels below: a group of up to
 * 32·8·SP_QCACHE values (4096 with a full team) is read from memory once.
 * The two-pass kernels re-read the group, and with a GPU full of teams the
 * bytes read between a team's two passes exceed the L2 cache, so the
 * second pass would come from DRAM again. */
#define SP_QCACHE 16

/* swizzle_quant_kernel<BITS, 8> with the group held in registers: the
 * same arithmetic in the same order, so the same bytes. */
template <int BITS>
__global__ void
swizzle_quant_cached_kernel (const uint16_t *in, uint64_t n_groups, uint32_t E,
                             uint32_t nodes, uint32_t devices, uint32_t pipelining, int team,
                             uint8_t *out_q, float *out_scales)
{
  Team tm (team);
  const uint64_t gbytes = (uint64_t) E * BITS / 8;
  const uint64_t per_rank = n_groups / ((uint64_t) nodes * devices);
  const uint32_t step = (uint32_t) team * 8;
  for (uint64_t base = tm.first; base < n_groups; base += tm.stride)
    {
      const uint64_t g = base + tm.tw;
      const bool active = g < n_groups;
      const uint16_t *x = in + g * E;
      uint4 raw[SP_QCACHE];
      float m = 0.0f;
#pragma unroll
      for (int c = 0; c < SP_QCACHE; c++)
        {
          const uint32_t i = tm.tl * 8 + c * step;
          raw[c] = make_uint4 (0, 0, 0, 0);
          if (active && i < E)
            raw[c] = *reinterpret_cast<const uint4 *> (x + i);
        }
#pragma unroll
      for (int c = 0; c < SP_QCACHE; c++)
        {
          uint16_t v[8];
          dev_unpack_h8 (raw[c], v);      /* unloaded steps are +0: no effect */
#pragma unroll
          for (int k = 0; k < 8; k++)
            m = fmaxf (m, fabsf (dev_h2f (v[k])));
        }
      m = dev_team_max (m, team);
      if (!active)
        continue;
      const float s = dev_group_scale<BITS> (m);
      const uint64_t slot = sp_kern_swizzle_slot (g, per_rank, nodes, devices, pipelining);
      uint8_t *qo = out_q + slot * gbytes;
#pragma unroll
      for (int c = 0; c < SP_QCACHE; c++)
        {
          const uint32_t i = tm.tl * 8 + c * step;
          if (i < E)
            {
              uint16_t v[8];
              int q[8];
              dev_unpack_h8 (raw[c], v);
#pragma unroll
              for (int k = 0; k < 8; k++)
                q[k] = dev_quant_one<BITS> (dev_h2f (v[k]), s);
              dev_store_q<BITS, 8> (qo, i, q);
            }
        }
      if (tm.tl == 0)
        out_scales[slot] = __fdiv_rn (1.0f, s);
    }
}

template <int BITS, int VEC>
__global__ void
dequant_kernel (const uint8_t *q, const float *scales, uint64_t n_groups, uint32_t E,
                int team, uint16_t *out)
{
  Team tm (team);
  const uint64_t gbytes = (uint64_t) E * BITS / 8;
  for (uint64_t base = tm.first; base < n_groups; base += tm.stride)
    {
      const uint64_t g = base + tm.tw;
      if (g >= n_groups)
        continue;
      const float stored = scales[g];
      for (uint32_t i = tm.tl * VEC; i < E; i += team * VEC)
        {
          int qv[VEC];
          uint16_t h[VEC];
          dev_load_q<BITS, VEC> (q + g * gbytes, i, qv);
#pragma unroll
          for (int k = 0; k < VEC; k++)
            h[k] = dev_dequant_one<BITS> (qv[k], stored);
          dev_store_h<VEC> (out + g * E + i, h);
        }
    }
}

/* fp16 sums over `n_src` chunks (stride src_bytes / src_groups) of the VEC
 * dequantized values at element i of group g, from +0 in chunk order. */
template <int BITS, int VEC>
__device__ __forceinline__ void
dev_sum_sources (const uint8_t *q, const float *scales, uint32_t n_src, uint64_t src_bytes,
                 uint64_t src_groups, uint64_t g, uint64_t gbytes, uint32_t i, uint16_t *acc)
{
#pragma unroll
  for (int k = 0; k < VEC; k++)
    acc[k] = 0x0000;
  for (uint32_t j = 0; j < n_src; j++)
    {
      int qv[VEC];
      const float stored = scales[(uint64_t) j * src_groups + g];
      dev_load_q<BITS, VEC> (q + j * src_bytes + g * gbytes, i, qv);
#pragma unroll
      for (int k = 0; k < VEC; k++)
        acc[k] = dev_hadd (acc[k], dev_dequant_one<BITS> (qv[k], stored));
    }
}

template <int BITS, int VEC>
__global__ void
quant_reduce_kernel (const uint8_t *in_q, const float *in_scales, uint32_t n_src,
                     uint64_t n_groups, uint32_t E, int team, uint8_t *out_q,
                     float *out_scales)
{
  Team tm (team);
  const uint64_t gbytes = (uint64_t) E * BITS / 8;
  const uint64_t src_bytes = n_groups * gbytes;
  for (uint64_t base = tm.first; base < n_groups; base += tm.stride)
    {
      const uint64_t g = base + tm.tw;
      const bool active = g < n_groups;
      float m = 0.0f;
      if (active)
        for (uint32_t i = tm.tl * VEC; i < E; i += team * VEC)
          {
            uint16_t acc[VEC];
            dev_sum_sources<BITS, VEC> (in_q, in_scales, n_src, src_bytes, n_groups, g,
                                        gbytes, i, acc);
#pragma unroll
            for (int k = 0; k < VEC; k++)
              m = fmaxf (m, fabsf (dev_h2f (acc[k])));
          }
      m = dev_team_max (m, team);
      if (!active)
        continue;
      /* Second pass recomputes the same sums (deterministic) to quantize. */
      const float s = dev_group_scale<BITS> (m);
      for (uint32_t i = tm.tl * VEC; i < E; i += team * VEC)
        {
          uint16_t acc[VEC];
          int qv[VEC];
          dev_sum_sources<BITS, VEC> (in_q, in_scales, n_src, src_bytes, n_groups, g,
                                      gbytes, i, acc);
#pragma unroll
          for (int k = 0; k < VEC; k++)
            qv[k] = dev_quant_one<BITS> (dev_h2f (acc[k]), s);
          dev_store_q<BITS, VEC> (out_q + g * gbytes, i, qv);
        }
      if (tm.tl == 0)
        out_scales[g] = __fdiv_rn (1.0f, s);
    }
}

/* quant_reduce_kernel<BITS, 8> with the fp16 sums held in registers (two
 * per 32-bit word): each source is read once, its SP_QCACHE loads per lane
 * independent of each other.  Every sum is still formed from +0 in source
 * order with one fp16 rounding per add, so the bytes are the same. */
template <int BITS>
__global__ void
quant_reduce_cached_kernel (const uint8_t *in_q, const float *in_scales, uint32_t n_src,
                            uint64_t n_groups, uint32_t E, int team, uint8_t *out_q,
                            float *out_scales)
{
  Team tm (team);
  const uint64_t gbytes = (uint64_t) E * BITS / 8;
  const uint64_t src_bytes = n_groups * gbytes;
  const uint32_t step = (uint32_t) team * 8;
  for (uint64_t base = tm.first; base < n_groups; base += tm.stride)
    {
      const uint64_t g = base + tm.tw;
      const bool active = g < n_groups;
      uint32_t acc[SP_QCACHE][4];         /* sums k, k+1 in the low, high half */
#pragma unroll
      for (int c = 0; c < SP_QCACHE; c++)
#pragma unroll
        for (int w = 0; w < 4; w++)
          acc[c][w] = 0;                  /* +0, +0 */
      if (active)
        for (uint32_t j = 0; j < n_src; j++)
          {
            const float stored = in_scales[(uint64_t) j * n_groups + g];
            const uint8_t *qg = in_q + j * src_bytes + g * gbytes;
#pragma unroll
            for (int c = 0; c < SP_QCACHE; c++)
              {
                const uint32_t i = tm.tl * 8 + c * step;
                if (i < E)
                  {
                    int qv[8];
                    dev_load_q<BITS, 8> (qg, i, qv);
#pragma unroll
                    for (int w = 0; w < 4; w++)
                      {
                        uint16_t lo = dev_hadd ((uint16_t) acc[c][w],
                                                dev_dequant_one<BITS> (qv[2 * w], stored));
                        uint16_t hi = dev_hadd ((uint16_t) (acc[c][w] >> 16),
                                                dev_dequant_one<BITS> (qv[2 * w + 1], stored));
                        acc[c][w] = lo | ((uint32_t) hi << 16);
                      }
                  }
              }
          }
      float m = 0.0f;
#pragma unroll
      for (int c = 0; c < SP_QCACHE; c++)
#pragma unroll
        for (int w = 0; w < 4; w++)       /* steps past E hold +0: no effect */
          {
            m = fmaxf (m, fabsf (dev_h2f ((uint16_t) acc[c][w])));
            m = fmaxf (m, fabsf (dev_h2f ((uint16_t) (acc[c][w] >> 16))));
          }
      m = dev_team_max (m, team);
      if (!active)
        continue;
      const float s = dev_group_scale<BITS> (m);
#pragma unroll
      for (int c = 0; c < SP_QCACHE; c++)
        {
          const uint32_t i = tm.tl * 8 + c * step;
          if (i < E)
            {
              int qv[8];
#pragma unroll
              for (int w = 0; w < 4; w++)
                {
                  qv[2 * w] = dev_quant_one<BITS> (dev_h2f ((uint16_t) acc[c][w]), s);
                  qv[2 * w + 1] = dev_quant_one<BITS> (dev_h2f ((uint16_t) (acc[c][w] >> 16)), s);
                }
              dev_store_q<BITS, 8> (out_q + g * gbytes, i, qv);
            }
        }
      if (tm.tl == 0)
        out_scales[g] = __fdiv_rn (1.0f, s);
    }
}

template <int BITS, int VEC>
__global__ void
qgz_final_kernel (const uint8_t *q, const float *scales, uint32_t nodes, uint64_t n_groups,
                  uint32_t E, float inv, int team, uint16_t *out)
{
  Team tm (team);
  const uint64_t gbytes = (uint64_t) E * BITS / 8;
  const uint64_t chunk_bytes = n_groups * gbytes;
  for (uint64_t base = tm.first; base < n_groups; base += tm.stride)
    {
      const uint64_t g = base + tm.tw;
      if (g >= n_groups)
        continue;
      for (uint32_t i = tm.tl * VEC; i < E; i += team * VEC)
        {
          uint16_t acc[VEC];
          dev_sum_sources<BITS, VEC> (q, scales, nodes, chunk_bytes, n_groups, g, gbytes, i,
                                      acc);
#pragma unroll
          for (int k = 0; k < VEC; k++)
            acc[k] = dev_f2h (__fmul_rn (dev_h2f (acc[k]), inv));
          dev_store_h<VEC> (out + g * E + i, acc);
        }
    }
}

/* Launch geometry for `n_groups` groups handled by teams of `team`. */
unsigned
group_blocks (uint64_t n_groups, int team)
{
  uint64_t groups_per_block = (uint64_t) (SP_KERN_THREADS / 32) * (32 / team);
  return sp_kern_blocks (n_groups, groups_per_block);
}

/* Whether the 8-wide path is safe: E % 8 == 0 and every base pointer is
 * aligned for its vector width (fp16 16 bytes, int8 8, int4 4). */
bool
vec8_ok (uint32_t E, uint32_t bits, const void *half_ptr, const void *q_ptr)
{
  return E % 8 == 0 && sp_kern_aligned (half_ptr, 16)
         && sp_kern_aligned (q_ptr, bits == 8 ? 8 : 4);
}

/* Whether a group fits the register cache of the *_cached kernels: at most
 * SP_QCACHE steps of 8 values per lane of a team of `team`. */
bool
fits_cache (uint32_t E, int team)
{
  return (uint64_t) E <= (uint64_t) team * 8 * SP_QCACHE;
}

} // namespace

/* Instantiate a kernel for (bits, vec8?) and launch it; the generic VEC is
 * 2 for int4 (pairs share a byte) and 1 for int8. */
#define SP_KERN_DISPATCH(kernel, bits, vec8, blocks, stream, ...)                            \
  do                                                                                         \
    {                                                                                        \
      cudaStream_t s_ = (cudaStream_t) (stream);                                             \
      if (bits == 4 && vec8)                                                                 \
        kernel<4, 8><<<blocks, SP_KERN_THREADS, 0, s_>>> (__VA_ARGS__);                      \
      else if (bits == 4)                                                                    \
        kernel<4, 2><<<blocks, SP_KERN_THREADS, 0, s_>>> (__VA_ARGS__);                      \
      else if (vec8)                                                                         \
        kernel<8, 8><<<blocks, SP_KERN_THREADS, 0, s_>>> (__VA_ARGS__);                      \
      else                                                                                   \
        kernel<8, 1><<<blocks, SP_KERN_THREADS, 0, s_>>> (__VA_ARGS__);                      \
    }                                                                                        \
  while (0)

static int
vec_of (bool vec8, uint32_t bits)
{
  return vec8 ? 8 : bits == 4 ? 2 : 1;
}

extern "C" SpKernStatus
sp_kern_gpu_swizzle_quant (const uint16_t *in, uint64_t n_groups, uint32_t group_elems,
                           uint32_t bits, uint32_t nodes, uint32_t devices,
                           uint32_t pipelining, uint8_t *out_q, float *out_scales,
                           void *stream)
{
  SpKernStatus st = sp_kern_check_swizzle (in, n_groups, group_elems, bits, nodes, devices,
                                           pipelining, out_q, out_scales);
  if (st != SP_KERN_OK || n_groups == 0)
    return st;
  bool v8 = vec8_ok (group_elems, bits, in, out_q);
  int team = team_size (group_elems, vec_of (v8, bits));
  unsigned blocks = group_blocks (n_groups, team);
  if (v8 && fits_cache (group_elems, team))
    {
      cudaStream_t s = (cudaStream_t) stream;
      if (bits == 4)
        swizzle_quant_cached_kernel<4><<<blocks, SP_KERN_THREADS, 0, s>>> (
            in, n_groups, group_elems, nodes, devices, pipelining, team, out_q, out_scales);
      else
        swizzle_quant_cached_kernel<8><<<blocks, SP_KERN_THREADS, 0, s>>> (
            in, n_groups, group_elems, nodes, devices, pipelining, team, out_q, out_scales);
    }
  else
    SP_KERN_DISPATCH (swizzle_quant_kernel, bits, v8, blocks, stream, in, n_groups,
                      group_elems, nodes, devices, pipelining, team, out_q, out_scales);
  return sp_kern_launch_status ();
}

extern "C" SpKernStatus
sp_kern_gpu_quant (const uint16_t *in, uint64_t n_groups, uint32_t group_elems, uint32_t bits,
                   uint8_t *out_q, float *out_scales, void *stream)
{
  return sp_kern_gpu_swizzle_quant (in, n_groups, group_elems, bits, 1, 1, 1, out_q,
                                    out_scales, stream);
}

extern "C" SpKernStatus
sp_kern_gpu_dequant (const uint8_t *q, const float *scales, uint64_t n_groups,
                     uint32_t group_elems, uint32_t bits, uint16_t *out, void *stream)
{
  if (!sp_kern_bits_ok (bits, group_elems))
    return SP_KERN_INVALID;
  if (n_groups == 0)
    return SP_KERN_OK;
  if (q == NULL || scales == NULL || out == NULL)
    return SP_KERN_INVALID;
  bool v8 = vec8_ok (group_elems, bits, out, q);
  int team = team_size (group_elems, vec_of (v8, bits));
  SP_KERN_DISPATCH (dequant_kernel, bits, v8, group_blocks (n_groups, team), stream, q,
                    scales, n_groups, group_elems, team, out);
  return sp_kern_launch_status ();
}

extern "C" SpKernStatus
sp_kern_gpu_quant_reduce (const uint8_t *in_q, const float *in_scales, uint32_t n_sources,
                          uint64_t groups_per_source, uint32_t group_elems, uint32_t bits,
                          uint8_t *out_q, float *out_scales, void *stream)
{
  if (!sp_kern_bits_ok (bits, group_elems) || n_sources == 0)
    return SP_KERN_INVALID;
  if (groups_per_source == 0)
    return SP_KERN_OK;
  if (in_q == NULL || in_scales == NULL || out_q == NULL || out_scales == NULL)
    return SP_KERN_INVALID;
  /* Every chunk start must be aligned too: chunk bytes are a multiple of
   * E·bits/8, a multiple of 4 (int4) or 8 (int8) when E % 8 == 0. */
  bool v8 = group_elems % 8 == 0 && sp_kern_aligned (in_q, bits == 8 ? 8 : 4)
            && sp_kern_aligned (out_q, bits == 8 ? 8 : 4);
  int team = team_size (group_elems, vec_of (v8, bits));
  unsigned blocks = group_blocks (groups_per_source, team);
  if (v8 && fits_cache (group_elems, team))
    {
      cudaStream_t s = (cudaStream_t) stream;
      if (bits == 4)
        quant_reduce_cached_kernel<4><<<blocks, SP_KERN_THREADS, 0, s>>> (
            in_q, in_scales, n_sources, groups_per_source, group_elems, team, out_q, out_scales);
      else
        quant_reduce_cached_kernel<8><<<blocks, SP_KERN_THREADS, 0, s>>> (
            in_q, in_scales, n_sources, groups_per_source, group_elems, team, out_q, out_scales);
    }
  else
    SP_KERN_DISPATCH (quant_reduce_kernel, bits, v8, blocks, stream, in_q, in_scales,
                      n_sources, groups_per_source, group_elems, team, out_q, out_scales);
  return sp_kern_launch_status ();
}

extern "C" SpKernStatus
sp_kern_gpu_qgz_final (const uint8_t *q, const float *scales, uint32_t nodes,
                       uint32_t devices, uint64_t groups_per_chunk, uint32_t group_elems,
                       uint32_t bits, SpKernQgzMean mean, uint16_t *out, void *stream)
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
  float inv = 1.0f / (float) k;          /* host IEEE division, as the CPU twin */
  bool v8 = vec8_ok (group_elems, bits, out, q);
  int team = team_size (group_elems, vec_of (v8, bits));
  SP_KERN_DISPATCH (qgz_final_kernel, bits, v8, group_blocks (groups_per_chunk, team), stream,
                    q, scales, nodes, groups_per_chunk, group_elems, inv, team, out);
  return sp_kern_launch_status ();
}
