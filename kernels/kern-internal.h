/* kernels/kern-internal.h — shape checks and index maps shared by the CPU
 * references (.c) and the CUDA launchers (.cu), so both twins accept and
 * reject exactly the same calls.  Plain C, also valid C++. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "shardplan/kernels.h"

/* Index maps used on both sides are compiled for the device too. */
#ifdef __CUDACC__
#define SP_KERN_HD __host__ __device__
#else
#define SP_KERN_HD
#endif

/* Largest group the GPU kernels' index math is written for (elements);
 * DeepSpeed's own limit is 40960 (§4). */
#define SP_KERN_MAX_GROUP_ELEMS (1u << 30)

static inline int
sp_kern_bits_ok (uint32_t bits, uint32_t group_elems)
{
  if (bits != 4 && bits != 8)
    return 0;
  if (group_elems == 0 || group_elems > SP_KERN_MAX_GROUP_ELEMS)
    return 0;
  return bits == 8 || group_elems % 2 == 0;
}

/* Bytes of quantized data in one group. */
static inline uint64_t
sp_kern_group_bytes (uint32_t group_elems, uint32_t bits)
{
  return (uint64_t) group_elems * bits / 8;
}

static inline SpKernStatus
sp_kern_check_swizzle (const void *in, uint64_t n_groups, uint32_t group_elems,
                       uint32_t bits, uint32_t nodes, uint32_t devices,
                       uint32_t pipelining, const void *out_q, const void *out_scales)
{
  if (!sp_kern_bits_ok (bits, group_elems) || nodes == 0 || devices == 0 || pipelining == 0)
    return SP_KERN_INVALID;
  uint64_t unit = (uint64_t) nodes * devices * pipelining;
  if (n_groups % unit != 0)
    return SP_KERN_INVALID;
  if (n_groups > 0 && (in == NULL || out_q == NULL || out_scales == NULL))
    return SP_KERN_INVALID;
  return SP_KERN_OK;
}

/* Output slot of input group g under the qgZ swizzle (kernels.h). */
static inline SP_KERN_HD uint64_t
sp_kern_swizzle_slot (uint64_t g, uint64_t groups_per_rank, uint32_t nodes,
                      uint32_t devices, uint32_t pipelining)
{
  uint64_t cp = groups_per_rank / pipelining;
  uint64_t z = g / groups_per_rank;
  uint64_t rest = g % groups_per_rank;
  uint64_t y = rest / cp, x = rest % cp;
  uint64_t part = y * devices * nodes + (z % devices) * nodes + z / devices;
  return part * cp + x;
}

/* rint-half-even of an fp32 product, saturated like cvt.rni.s32.f32 (NaN
 * gives 0), then clamped to the signed `bits`-bit range. */
static inline int
sp_kern_clamp_q (int32_t v, uint32_t bits)
{
  int32_t lo = -(1 << (bits - 1)), hi = (1 << (bits - 1)) - 1;
  return v < lo ? lo : v > hi ? hi : v;
}

/* Sign-extended int4 value from a nibble. */
static inline int
sp_kern_nibble (unsigned v)
{
  v &= 0xFu;
  return v >= 8u ? (int) v - 16 : (int) v;
}

/* Quantized value number i of a group (bytes q, bits 4 or 8). */
static inline int
sp_kern_q_get (const uint8_t *q, uint64_t i, uint32_t bits)
{
  if (bits == 8)
    return (int8_t) q[i];
  uint8_t b = q[i / 2];
  return sp_kern_nibble (i % 2 == 0 ? b >> 4 : b);
}

/* Check the pointer arrays of the coalesced kernels. */
static inline SpKernStatus
sp_kern_check_rs (const void *const *ptrs, const uint64_t *numels, uint32_t n_tensors,
                  uint32_t world, size_t elem_size)
{
  if (world == 0)
    return SP_KERN_INVALID;
  if (elem_size != 1 && elem_size != 2 && elem_size != 4 && elem_size != 8)
    return SP_KERN_INVALID;
  if (n_tensors > 0 && (ptrs == NULL || numels == NULL))
    return SP_KERN_INVALID;
  for (uint32_t t = 0; t < n_tensors; t++)
    if (numels[t] > 0 && ptrs[t] == NULL)
      return SP_KERN_INVALID;
  return SP_KERN_OK;
}
