/* shardplan/kernels.h — the data kernels of DeepSpeed's coalesced and
 * quantized collectives, as CPU references and CUDA launchers with one
 * contract (shared/reference/deepspeed-semantics.md §3, §4, §4.1).
 *
 * Every kernel exists twice: `sp_kern_cpu_<name>` (plain C, host memory)
 * and `sp_kern_gpu_<name>` (CUDA, device memory, asynchronous on `stream`,
 * a cudaStream_t passed as `void *`; NULL is the legacy default stream).
 * For the same inputs both write identical bytes: fp16 arithmetic is
 * emulated bit-exactly on the CPU (every fp16 add rounds to fp16, fp32
 * products are rounded to fp32, rint is round-half-even).
 *
 * Plain C99 + stdint: no GLib, no CUDA types, usable from any layer that may
 * link the kernels (exec/, tests, bench).  Kernel calls are hot paths: they
 * return SpKernStatus, never allocate and never print.  Shapes are checked
 * identically by both twins (SP_KERN_INVALID, nothing written).
 *
 * Data types on the wire: fp16 and bf16 values are `uint16_t` bit patterns,
 * quantized data is `uint8_t` bytes (int8: one value per byte; int4: two per
 * byte, the EVEN element in the HIGH nibble, both nibbles two's complement),
 * scales are one `float` per quantization group holding fp32(1/s).
 *
 * Inputs must be finite: non-finite values give defined but unverified
 * output (no crash, no out-of-bounds access).
 */
#pragma once
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status ------------------------------------------------------------ */

typedef enum {
  SP_KERN_OK = 0,
  SP_KERN_INVALID,      /* bad shape or argument (see each function) */
  SP_KERN_NO_DEVICE,    /* built without CUDA, or no usable CUDA device */
  SP_KERN_CUDA,         /* a CUDA call or launch failed; see sp_kern_gpu_error_string */
} SpKernStatus;

/* Static name of a status ("ok", "invalid", "no-device", "cuda"). */
const char *sp_kern_status_name (SpKernStatus status);

/* Element types of the coalesced kernels.  Values equal SpDtype
 * (shardplan/types.h) and ncclDataType_t, so the executor can cast. */
typedef enum {
  SP_KERN_F16 = 6,
  SP_KERN_F32 = 7,
  SP_KERN_BF16 = 9,
} SpKernDtype;

/* Bytes per element of `dtype`; 0 for a value outside SpKernDtype. */
size_t sp_kern_dtype_size (SpKernDtype dtype);

/* ---- fp16 / bf16 on the CPU -------------------------------------------- */

/* Exact widening of an IEEE binary16 / bfloat16 bit pattern to fp32. */
float sp_kern_f16_to_f32 (uint16_t h);
float sp_kern_bf16_to_f32 (uint16_t h);
/* fp32 -> binary16 / bfloat16, round to nearest even (as __float2half_rn /
 * __float2bfloat16_rn): overflow gives ±inf, subnormals are kept, a NaN
 * gives 0x7FFF (the canonical NaN of NVIDIA's cvt). */
uint16_t sp_kern_f32_to_f16 (float f);
uint16_t sp_kern_f32_to_bf16 (float f);
/* fp16 + fp16 rounded once to fp16 (as __hadd): computed in fp32 and
 * rounded, which is exact because 24 >= 2*11 + 2 bits. */
uint16_t sp_kern_f16_add (uint16_t a, uint16_t b);

/* ---- symmetric group quantization (§4.1) -------------------------------
 *
 * A tensor of `n_groups` groups of `group_elems` (E) fp16 values.  Per group:
 *   absmax = max |x|, s = 2^bits / (2·absmax) in fp32 (1.0 if absmax == 0),
 *   q = clamp(rint_half_even(fp32(x)·s), -2^(bits-1), 2^(bits-1)-1),
 *   stored scale = fp32(1/s);  dequant = fp16_rn(fp32(q)·stored).
 * bits is 4 or 8; for 4 bits E must be even.  Quantized bytes per group:
 * E·bits/8.  int4 clips +absmax to 7 (7/8·absmax after dequant).
 * Worked example (4 bits): [0.5,-0.25,0.1,-0.5,0.3,0,0.49,-0.01] ->
 * bytes 7C 28 50 70, scale 0.0625. */

/* qgZ Stage A, DeepSpeed's swizzle_quant: the input is W = nodes·devices
 * partitions (partition z goes to global rank z) of C = n_groups/W groups.
 * With pipelining P (P divides C, Cp = C/P) input group
 *   g = z·C + y·Cp + x   (0 <= y < P, 0 <= x < Cp)
 * is written to output group slot
 *   (y·D·N + (z % D)·N + z / D)·Cp + x
 * (N = nodes, D = devices): d-major, node-minor, so chunk d of the output
 * (the groups of ranks n·D+d for every node n) is what local rank d
 * receives in the intra-node all-to-all.  out_q gets n_groups·E·bits/8
 * bytes, out_scales n_groups floats, both in slot order.
 * SP_KERN_INVALID: null pointer, bits not 4/8, E == 0, odd E with 4 bits,
 * nodes/devices/pipelining == 0, n_groups not a multiple of N·D·P. */
SpKernStatus sp_kern_cpu_swizzle_quant (const uint16_t *in, uint64_t n_groups,
                                        uint32_t group_elems, uint32_t bits,
                                        uint32_t nodes, uint32_t devices,
                                        uint32_t pipelining,
                                        uint8_t *out_q, float *out_scales);
/* Unswizzled quantization: the same with nodes = devices = pipelining = 1. */
SpKernStatus sp_kern_cpu_quant (const uint16_t *in, uint64_t n_groups,
                                uint32_t group_elems, uint32_t bits,
                                uint8_t *out_q, float *out_scales);
/* Dequantize n_groups groups to fp16 (n_groups·E values in `out`). */
SpKernStatus sp_kern_cpu_dequant (const uint8_t *q, const float *scales,
                                  uint64_t n_groups, uint32_t group_elems,
                                  uint32_t bits, uint16_t *out);

/* qgZ Stage C, DeepSpeed's quantized_reduction: `in_q`/`in_scales` hold
 * n_sources (D) chunks of groups_per_source groups each, chunk j at byte
 * j·groups_per_source·E·bits/8 and scale index j·groups_per_source.  Output
 * group o (0 <= o < groups_per_source) dequantizes group o of every chunk,
 * sums the fp16 values in chunk order starting from +0 (each add rounded to
 * fp16) and re-quantizes the sums with a fresh absmax scale.  After the
 * intra-node all-to-all the groups_per_source = N·C groups are ordered
 * [node 0's C groups, node 1's, …], and so is the output.
 * SP_KERN_INVALID as for the quantizer, or n_sources == 0. */
SpKernStatus sp_kern_cpu_quant_reduce (const uint8_t *in_q, const float *in_scales,
                                       uint32_t n_sources, uint64_t groups_per_source,
                                       uint32_t group_elems, uint32_t bits,
                                       uint8_t *out_q, float *out_scales);

/* qgZ Stage E: how the final sum is divided. */
typedef enum {
  SP_KERN_QGZ_TRUE_MEAN = 0,  /* Σ/(N·D): the mean over all W ranks (our default) */
  SP_KERN_QGZ_DEEPSPEED = 1,  /* Σ/N: DeepSpeed's value, D × the mean (§4, §7.10) */
} SpKernQgzMean;

/* qgZ Stage E: `q`/`scales` hold `nodes` (N) chunks of groups_per_chunk
 * groups, as received in the inter-node all-to-all (chunk m from node m).
 * out[i] (0 <= i < groups_per_chunk·E) = the fp16 sum, left to right from
 * +0, of the N dequantized values at i, then divided by N (DEEPSPEED) or
 * N·devices (TRUE_MEAN).  The division is fp16_rn(fp32(sum)·fp32(1/k)),
 * which is what PyTorch's CUDA `half_tensor / int` computes (it multiplies
 * by the fp32 reciprocal, BinaryDivTrueKernel.cu); for a power-of-two k it
 * equals the correctly rounded quotient.
 * SP_KERN_INVALID as for the quantizer, nodes or devices == 0, or an
 * unknown mean. */
SpKernStatus sp_kern_cpu_qgz_final (const uint8_t *q, const float *scales,
                                    uint32_t nodes, uint32_t devices,
                                    uint64_t groups_per_chunk, uint32_t group_elems,
                                    uint32_t bits, SpKernQgzMean mean,
                                    uint16_t *out);

/* ---- reduce_scatter_coalesced layout (§3) -------------------------------
 *
 * W ranks, tensors t = 0..n-1 of numels[t] elements, c_t = ceil(n_t/W).
 * Rank q's slice of tensor t is elements [q·c_t, min((q+1)·c_t, n_t)).
 * The send buffer holds W segments of S = Σ c_t elements: rank q's segment
 * at q·S, tensor t inside it at Σ_{t'<t} c_t'; padding is ZERO-filled here
 * (DeepSpeed's is torch.empty garbage, never returned, so results agree).
 * Kernels copy bytes: elem_size is 1, 2, 4 or 8 (fp16/bf16 2, fp32 4).
 * For the GPU twins `tensors`/`out_tensors` are HOST arrays of DEVICE
 * pointers and `numels` a host array; they are read during the call only. */

/* c_t = ceil(numel/world) (0 for world == 0). */
uint64_t sp_kern_rs_chunk (uint64_t numel, uint32_t world);
/* S = Σ c_t: elements in one rank's segment. */
uint64_t sp_kern_rs_segment (const uint64_t *numels, uint32_t n_tensors, uint32_t world);
/* Length of rank `rank`'s slice of a tensor of `numel` elements. */
uint64_t sp_kern_rs_slice_len (uint64_t numel, uint32_t world, uint32_t rank);

/* Pack: write the W·S-element send buffer `out_buf` from the tensors.
 * SP_KERN_INVALID: world == 0, bad elem_size, a null pointer (a tensor
 * pointer may be NULL only when its numel is 0). */
SpKernStatus sp_kern_cpu_rs_pack (const void *const *tensors, const uint64_t *numels,
                                  uint32_t n_tensors, uint32_t world, size_t elem_size,
                                  void *out_buf);
/* Unpack: from rank `rank`'s reduced segment (S elements), write each
 * out_tensors[t] with its sp_kern_rs_slice_len(numels[t], world, rank)
 * elements.  SP_KERN_INVALID also for rank >= world. */
SpKernStatus sp_kern_cpu_rs_unpack (const void *segment, const uint64_t *numels,
                                    uint32_t n_tensors, uint32_t world, uint32_t rank,
                                    size_t elem_size, void *const *out_tensors);

/* Scale in place: x = dtype_rn(fp32(x)·fp32(1/divisor)) for n elements,
 * DeepSpeed's `buffer.div_(W)` as PyTorch's CUDA kernel computes it (exact
 * division when divisor is a power of two).  fp32 data: x·fp32(1/divisor).
 * SP_KERN_INVALID: null data with n > 0, divisor == 0, unknown dtype. */
SpKernStatus sp_kern_cpu_scale (void *data, uint64_t n, SpKernDtype dtype,
                                uint32_t divisor);

/* ---- GPU twins ----------------------------------------------------------
 *
 * Same arguments and results as the CPU functions, on device pointers,
 * enqueued on `stream` (asynchronous: synchronise before reading).  Without
 * CUDA in the build every one returns SP_KERN_NO_DEVICE. */

/* Number of CUDA devices; 0 without CUDA, without a driver or on any
 * error (whose reason sp_kern_gpu_error_string then gives).  Never aborts,
 * never prints. */
int sp_kern_device_count (void);

SpKernStatus sp_kern_gpu_swizzle_quant (const uint16_t *in, uint64_t n_groups,
                                        uint32_t group_elems, uint32_t bits,
                                        uint32_t nodes, uint32_t devices,
                                        uint32_t pipelining,
                                        uint8_t *out_q, float *out_scales, void *stream);
SpKernStatus sp_kern_gpu_quant (const uint16_t *in, uint64_t n_groups,
                                uint32_t group_elems, uint32_t bits,
                                uint8_t *out_q, float *out_scales, void *stream);
SpKernStatus sp_kern_gpu_dequant (const uint8_t *q, const float *scales,
                                  uint64_t n_groups, uint32_t group_elems,
                                  uint32_t bits, uint16_t *out, void *stream);
SpKernStatus sp_kern_gpu_quant_reduce (const uint8_t *in_q, const float *in_scales,
                                       uint32_t n_sources, uint64_t groups_per_source,
                                       uint32_t group_elems, uint32_t bits,
                                       uint8_t *out_q, float *out_scales, void *stream);
SpKernStatus sp_kern_gpu_qgz_final (const uint8_t *q, const float *scales,
                                    uint32_t nodes, uint32_t devices,
                                    uint64_t groups_per_chunk, uint32_t group_elems,
                                    uint32_t bits, SpKernQgzMean mean,
                                    uint16_t *out, void *stream);
SpKernStatus sp_kern_gpu_rs_pack (const void *const *tensors, const uint64_t *numels,
                                  uint32_t n_tensors, uint32_t world, size_t elem_size,
                                  void *out_buf, void *stream);
SpKernStatus sp_kern_gpu_rs_unpack (const void *segment, const uint64_t *numels,
                                    uint32_t n_tensors, uint32_t world, uint32_t rank,
                                    size_t elem_size, void *const *out_tensors,
                                    void *stream);
SpKernStatus sp_kern_gpu_scale (void *data, uint64_t n, SpKernDtype dtype,
                                uint32_t divisor, void *stream);

/* ---- GPU memory and timing helpers (cold paths: tests, bench, exec) ---- */

/* One line describing the last CUDA error seen by a sp_kern_gpu_* call on
 * this thread ("no error" if none).  Static storage, never freed. */
const char *sp_kern_gpu_error_string (void);
/* cudaMalloc on the current device; NULL on failure.  Free with
 * sp_kern_gpu_free (NULL is ignored). */
void *sp_kern_gpu_malloc (size_t bytes);
void sp_kern_gpu_free (void *ptr);
/* Copy `bytes` between any host/device pointers (cudaMemcpyDefault);
 * the sync variant waits for completion, the async one is on `stream`. */
SpKernStatus sp_kern_gpu_memcpy (void *dst, const void *src, size_t bytes);
SpKernStatus sp_kern_gpu_memcpy_async (void *dst, const void *src, size_t bytes,
                                       void *stream);
/* Name of the current device, NUL-terminated in out[len] (truncated). */
SpKernStatus sp_kern_gpu_device_name (char *out, size_t len);
/* Wait for all work on `stream`. */
SpKernStatus sp_kern_gpu_sync (void *stream);

/* Time `iters` back-to-back calls of fn(ctx, stream) with CUDA events on
 * `stream`; *out_ms is the elapsed time in milliseconds for all of them.
 * fn's first non-OK status stops the loop and is returned. */
typedef SpKernStatus (*SpKernGpuFn) (void *ctx, void *stream);
SpKernStatus sp_kern_gpu_time (SpKernGpuFn fn, void *ctx, uint32_t iters,
                               void *stream, double *out_ms);

#ifdef __cplusplus
}
#endif
