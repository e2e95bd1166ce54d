// What the GEMV / GEMM kernels of gemv.cu and hopper.cu share: where a product's operands and outputs
// live, the epilogue's store, the asynchronous copies into shared memory (sm_80 and newer), and the
// copy engine with its barriers (sm_90).
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <optional>
#include <string>

#include "kernels/gemv/gemv.hpp"

namespace dql::cuda::io {

// The outputs: y[M, N] = epilogue(sum + bias).
struct Out {
  uint16_t* y;
  const uint16_t* bias;
  gemv::Epilogue epi;
  int64_t m, n;
};

// The output of channel ch for the sum v: its bias added, the epilogue applied, rounded to T.
template <recipes::OutType T>
__device__ __forceinline__ uint16_t out_value(const Out& o, int64_t ch, float v) {
  const float b = o.bias ? gemv::act_to_f32(o.bias[ch], T) : 0.0f;
  return gemv::epilogue(v, b, o.epi, T);
}

template <recipes::OutType T>
__device__ __forceinline__ void write_out(const Out& o, int64_t tok, int64_t ch, float v) {
  if (tok >= o.m) return;
  o.y[tok * o.n + ch] = out_value<T>(o, ch, v);
}

// What the mixed-GEMM-layout kernels read and write: the weights, their scales, X, the outputs and
// the workspace's fp32 partial sums [M, N] with an arrival counter per output tile.
struct FtIo {
  const uint32_t* q;
  const uint16_t* scales;  // [K / G, N]
  const uint16_t* x;       // [M, K]
  int64_t n, k, m;
  int group;
  Out out;
  float* sums;
  unsigned* counters;
};

// 16 bytes from global to shared memory (zeros where `in` is false), bypassing L1.
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool in) {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(in ? 16 : 0)
               : "memory");
#endif
}
// 8 bytes from global to shared memory (zeros where `in` is false), through L1 (cp.async moves fewer than
// 16 bytes only so).
__device__ __forceinline__ void cp_async8(uint32_t dst, const void* src, bool in) {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" ::"r"(dst), "l"(src), "r"(in ? 8 : 0)
               : "memory");
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
}

// The copy engine and its barriers (compute capability 9.0): mbarriers that count arrivals and the
// bytes of the copies that complete on them, and bulk copies (a tensor map's box, or a run of bytes)
// into shared memory.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define DQL_BULK_COPY 1
#endif

#ifdef DQL_BULK_COPY
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(uint64_t* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes)
               : "memory");
}
// Arrive at and wait on a barrier by its shared-memory address (a loop that works its addresses out once
// keeps them in registers), or by its pointer.
__device__ __forceinline__ void mbar_arrive_at(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait_at(uint32_t bar, unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, "
        "p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) { mbar_arrive_at(smem_addr(bar)); }
__device__ __forceinline__ void mbar_wait(uint64_t* bar, unsigned parity) {
  mbar_wait_at(smem_addr(bar), parity);
}
// A box of a 2D tensor map (coordinates x along the inner dimension, y along the outer) into
// shared memory, completing on `bar`.
__device__ __forceinline__ void tensor_copy_2d(void* dst, const CUtensorMap* map, int x, int y,
                                               uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];" ::"r"(smem_addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(smem_addr(bar))
      : "memory");
}
// A box of a 3D tensor map (coordinates x, y, z, innermost first) into shared memory, completing on `bar`.
__device__ __forceinline__ void tensor_copy_3d(void* dst, const CUtensorMap* map, int x, int y, int z,
                                               uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4}], [%5];" ::"r"(smem_addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(z), "r"(smem_addr(bar))
      : "memory");
}
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, unsigned bytes, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
          smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(bar))
      : "memory");
}
#endif

// A 2D tensor map for the copy engine: `outer` rows of `inner` elements of `elem_bytes`, boxes of
// `box_outer` rows x `box_inner`, placed in shared memory with `swizzle`; false where the encoder
// is missing or refuses the shape (alignment, strides, box sizes).
bool tensor_map_2d(CUtensorMap* map, CUtensorMapDataType type, unsigned elem_bytes, const void* base,
                   int64_t inner, int64_t outer, unsigned box_inner, unsigned box_outer,
                   CUtensorMapSwizzle swizzle = CU_TENSOR_MAP_SWIZZLE_NONE);
// A 3D tensor map of 4-byte or 2-byte elements (`type`): dims and box innermost first, strides in bytes
// of dimensions 1 and 2 (any order: a box may take its dimensions in another order than memory).
bool tensor_map_3d(CUtensorMap* map, CUtensorMapDataType type, const void* base, const int64_t (&dims)[3],
                   const int64_t (&strides)[2], const unsigned (&box)[3], CUtensorMapSwizzle swizzle);

// One thread's share of a stage of the mma.sync GEMM (64 rows of K) for a block of 256 threads and 128
// channels, worked out once: XN = rows / 32 rows of X (16-byte pieces, rows 32 apart, the pieces of row i at
// piece ^ i % 8), one piece of the weights (32 column groups of 128 bytes; in shared memory 128
// channels of 32 bytes after `x_bytes` of X, the halves of channel c swapped where bit 2 of c is
// set) and, for 16 threads, a piece of the scale row after them.
template <int XN>
struct StageCopy {
  const uint16_t* xsrc[XN];
  bool xin[XN];
  uint32_t xdst, wdst, sdst;
  const uint32_t* wsrc;
  const uint16_t* ssrc;
  int64_t scale_pitch;  // N
  int tpg;              // 64-row tiles a group
  bool scales;          // this thread copies a piece of the scale row

  __device__ __forceinline__ StageCopy(const FtIo& a, int64_t tok0, int64_t ch0, int x_bytes, int tid) {
    const int xrow = tid / 8, xc = tid % 8;
#pragma unroll
    for (int n = 0; n < XN; ++n) {
      const int64_t t = tok0 + xrow + 32 * n;
      xin[n] = t < a.m;
      xsrc[n] = a.x + (xin[n] ? t : 0) * a.k + xc * 8;
    }
    xdst = xrow * 128 + (xc ^ (xrow % 8)) * 16;
    const int wc = 4 * (tid / 8) + xc / 2;
    wsrc = a.q + (ch0 / 4 + tid / 8) * (a.k / 2) + xc * 4;  // a column group holds K / 2 words
    wdst = x_bytes + wc * 32 + ((xc % 2) ^ ((wc >> 2) & 1)) * 16;
    ssrc = a.scales + ch0 + tid * 8;
    sdst = x_bytes + 128 * 32 + tid * 16;
    scale_pitch = a.n;
    tpg = a.group / 64;
    scales = tid < 16;
  }
  // Stage `st` (a shared-memory address) gets the 64-row tile kt of K.
  __device__ __forceinline__ void operator()(uint32_t st, int kt) const {
#pragma unroll
    for (int n = 0; n < XN; ++n) cp_async16(st + xdst + 4096 * n, xsrc[n] + kt * 64, xin[n]);
    cp_async16(st + wdst, wsrc + kt * 32, true);
    if (scales) cp_async16(st + sdst, ssrc + (kt / tpg) * scale_pitch, true);
  }
};

// The GPU's nanosecond clock (%globaltimer), for the time limit of a wait on other blocks' sums: past
// kWaitLimitNs the waiting block traps, since the blocks it waits for started before it and wait for
// nothing, so only a fault can hold them.
constexpr unsigned long long kWaitLimitNs = 4000000000ull;
__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Where a GEMM tile's K is cut into `runs` runs (blocks): every run adds its N sums, val(i), into the
// [M, N] workspace at at(i) where live(i) (the row exists); the last of the tile's runs to arrive at
// its counter reads them all back into val (every load issued before the first store), clears them
// and the counter, and returns true; the others return false. Called by every thread of the block.
template <int N, class Val, class At, class Live>
__device__ __forceinline__ bool meet_runs(Val&& val, At&& at, Live&& live, float* sums, unsigned* counter,
                                          int runs) {
#pragma unroll
  for (int i = 0; i < N; ++i)
    if (live(i)) atomicAdd(sums + at(i), val(i));
  __threadfence();
  __syncthreads();
  __shared__ int arrived_last;
  if (threadIdx.x == 0) {
    const unsigned before = atomicAdd(counter, 1u);
    arrived_last = before + 1 == static_cast<unsigned>(runs);
    if (arrived_last) *counter = 0u;
  }
  __syncthreads();
  if (!arrived_last) return false;
  __threadfence();
#pragma unroll
  for (int i = 0; i < N; ++i) val(i) = live(i) ? __ldcg(sums + at(i)) : 0.0f;
#pragma unroll
  for (int i = 0; i < N; ++i)
    if (live(i)) sums[at(i)] = 0.0f;
  return true;
}

// The Hopper GEMM (hopper.cu, compiled for sm_90a where 90 is among the architectures built, which
// then defines DQL_HOPPER_GEMM): int4 in the mixed-GEMM layout, whole 128-channel tiles, groups of
// whole 64-row tiles (what gemv.cu's wide_fits asks), on compute capability 9.0 only.
// Empty where it ran, else why it failed; nothing where it cannot take the product (the copy engine's
// maps of the operands cannot be made: no encoder in the driver, or an operand not 16-byte aligned).
// `rows`: the rows of X a block (GemvLaunch::rows), 0 for gemv::hopper_rows' choice.
std::optional<std::string> launch_hopper_gemm(const FtIo& io, recipes::OutType t, bool naive, int sms,
                                              int rows, bool wait);

}  // namespace dql::cuda::io
