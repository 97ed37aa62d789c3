/* kernels/gpu-none.c — the GPU half of kernels.h in a build without CUDA:
 * no device, and every launcher reports SP_KERN_NO_DEVICE, so callers
 * (exec, tests, bench) link and decide at run time without #ifdefs. */
#include "config.h"

#include "shardplan/kernels.h"

int
sp_kern_device_count (void)
{
  return 0;
}

const char *
sp_kern_gpu_error_string (void)
{
  return "shardplan was built without CUDA";
}

void *
sp_kern_gpu_malloc (size_t bytes)
{
  return NULL;
}

void
sp_kern_gpu_free (void *ptr)
{
}

SpKernStatus
sp_kern_gpu_memcpy (void *dst, const void *src, size_t bytes)
{
  return SP_KERN_NO_DEVICE;
}

SpKernStatus
sp_kern_gpu_memcpy_async (void *dst, const void *src, size_t bytes, void *stream)
{
  return SP_KERN_NO_DEVICE;
}

SpKernStatus
sp_kern_gpu_device_name (char *out, size_t len)
{
  return SP_KERN_NO_DEVICE;
}

SpKernStatus
sp_kern_gpu_sync (void *stream)
{
  return SP_KERN_NO_DEVICE;
}

SpKernStatus
sp_kern_gpu_time (SpKernGpuFn fn, void *ctx, uint32_t iters, void *stream, double *out_ms)
{
  return SP_KERN_NO_DEVICE;
}

SpKernStatus
sp_kern_gpu_swizzle_quant (const uint16_t *in, uint64_t n_groups, uint32_t group_elems,
                           uint32_t bits, uint32_t nodes, uint32_t devices,
                           uint32_t pipelining, uint8_t *out_q, float *out_scales,
                           void *stream)
{
  return SP_KERN_NO_DEVICE;
}

SpKernStatus
sp_kern_gpu_quant (const uint16_t *in, uint64_t n_groups, uint32_t group_elems,
                   uint32_t bits, uint8_t *out_q, float *out_scales, void *stream)
{
  return SP_KERN_NO_DEVICE;
}

SpKernStatus
sp_kern_gpu_dequant (const uint8_t *q, const float *scales, uint64_t n_groups,
                     uint32_t group_elems, uint32_t bits, uint16_t *out, void *stream)
{
  return SP_KERN_NO_DEVICE;
}

SpKernStatus
sp_kern_gpu_quant_reduce (const uint8_t *in_q, const float *in_scales, uint32_t n_sources,
                          uint64_t groups_per_source, uint32_t group_elems, uint32_t bits,
                          uint8_t *out_q, float *out_scales, void *stream)
{
  return SP_KERN_NO_DEVICE;
}

SpKernStatus
sp_kern_gpu_qgz_final (const uint8_t *q, const float *scales, uint32_t nodes,
                       uint32_t devices, uint64_t groups_per_chunk, uint32_t group_elems,
                       uint32_t bits, SpKernQgzMean mean, uint16_t *out, void *stream)
{
  return SP_KERN_NO_DEVICE;
}

SpKernStatus
sp_kern_gpu_rs_pack (const void *const *tensors, const uint64_t *numels, uint32_t n_tensors,
                     uint32_t world, size_t elem_size, void *out_buf, void *stream)
{
  return SP_KERN_NO_DEVICE;
}

SpKernStatus
sp_kern_gpu_rs_unpack (const void *segment, const uint64_t *numels, uint32_t n_tensors,
                       uint32_t world, uint32_t rank, size_t elem_size,
                       void *const *out_tensors, void *stream)
{
  return SP_KERN_NO_DEVICE;
}

SpKernStatus
sp_kern_gpu_scale (void *data, uint64_t n, SpKernDtype dtype, uint32_t divisor, void *stream)
{
  return SP_KERN_NO_DEVICE;
}
