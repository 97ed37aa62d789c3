/* kernels/status.c — names of kernel statuses and element types. */
#include "config.h"

#include "shardplan/kernels.h"

const char *
sp_kern_status_name (SpKernStatus status)
{
  switch (status)
    {
    case SP_KERN_OK: return "ok";
    case SP_KERN_INVALID: return "invalid";
    case SP_KERN_NO_DEVICE: return "no-device";
    case SP_KERN_CUDA: return "cuda";
    }
  return "unknown";
}

size_t
sp_kern_dtype_size (SpKernDtype dtype)
{
  switch (dtype)
    {
    case SP_KERN_F16: return 2;
    case SP_KERN_BF16: return 2;
    case SP_KERN_F32: return 4;
    }
  return 0;
}
