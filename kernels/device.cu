/* kernels/device.cu — device discovery, memory and timing helpers of
 * kernels.h, and the per-thread record of the last CUDA error. */
#include "config.h"

#include <string.h>

#include "kern-cuda.cuh"

static thread_local cudaError_t sp_kern_last_error = cudaSuccess;

void
sp_kern_cuda_record (cudaError_t err)
{
  sp_kern_last_error = err;
}

static SpKernStatus
check (cudaError_t err)
{
  if (err == cudaSuccess)
    return SP_KERN_OK;
  sp_kern_cuda_record (err);
  return SP_KERN_CUDA;
}

extern "C" int
sp_kern_device_count (void)
{
  int n = 0;
  cudaError_t err = cudaGetDeviceCount (&n);
  if (err != cudaSuccess)
    {
      sp_kern_cuda_record (err);         /* the reason, for messages */
      (void) cudaGetLastError ();        /* clear it for later calls */
      return 0;
    }
  return n;
}

extern "C" const char *
sp_kern_gpu_error_string (void)
{
  return cudaGetErrorString (sp_kern_last_error);
}

extern "C" void *
sp_kern_gpu_malloc (size_t bytes)
{
  void *p = NULL;
  if (check (cudaMalloc (&p, bytes ? bytes : 1)) != SP_KERN_OK)
    return NULL;
  return p;
}

extern "C" void
sp_kern_gpu_free (void *ptr)
{
  if (ptr != NULL)
    (void) check (cudaFree (ptr));
}

extern "C" SpKernStatus
sp_kern_gpu_memcpy (void *dst, const void *src, size_t bytes)
{
  if (bytes == 0)
    return SP_KERN_OK;
  return check (cudaMemcpy (dst, src, bytes, cudaMemcpyDefault));
}

extern "C" SpKernStatus
sp_kern_gpu_memcpy_async (void *dst, const void *src, size_t bytes, void *stream)
{
  if (bytes == 0)
    return SP_KERN_OK;
  return check (cudaMemcpyAsync (dst, src, bytes, cudaMemcpyDefault, (cudaStream_t) stream));
}

extern "C" SpKernStatus
sp_kern_gpu_device_name (char *out, size_t len)
{
  int dev = 0;
  cudaDeviceProp prop;
  if (out == NULL || len == 0)
    return SP_KERN_INVALID;
  SpKernStatus st = check (cudaGetDevice (&dev));
  if (st == SP_KERN_OK)
    st = check (cudaGetDeviceProperties (&prop, dev));
  if (st != SP_KERN_OK)
    return st;
  strncpy (out, prop.name, len - 1);
  out[len - 1] = '\0';
  return SP_KERN_OK;
}

extern "C" SpKernStatus
sp_kern_gpu_sync (void *stream)
{
  return check (cudaStreamSynchronize ((cudaStream_t) stream));
}

extern "C" SpKernStatus
sp_kern_gpu_time (SpKernGpuFn fn, void *ctx, uint32_t iters, void *stream, double *out_ms)
{
  cudaEvent_t start, stop;
  cudaStream_t s = (cudaStream_t) stream;
  if (fn == NULL || out_ms == NULL)
    return SP_KERN_INVALID;
  SpKernStatus st = check (cudaEventCreate (&start));
  if (st != SP_KERN_OK)
    return st;
  if ((st = check (cudaEventCreate (&stop))) != SP_KERN_OK)
    {
      cudaEventDestroy (start);
      return st;
    }
  st = check (cudaEventRecord (start, s));
  for (uint32_t i = 0; i < iters && st == SP_KERN_OK; i++)
    st = fn (ctx, stream);
  if (st == SP_KERN_OK)
    st = check (cudaEventRecord (stop, s));
  if (st == SP_KERN_OK)
    st = check (cudaEventSynchronize (stop));
  float ms = 0.0f;
  if (st == SP_KERN_OK)
    st = check (cudaEventElapsedTime (&ms, start, stop));
  cudaEventDestroy (start);
  cudaEventDestroy (stop);
  if (st == SP_KERN_OK)
    *out_ms = ms;
  return st;
}
