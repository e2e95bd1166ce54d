// What the GEMV / GEMM kernels of gemv.cu and hopper.cu share: where a product's operands and outputs
// live, the epilogue's store, and the asynchronous copies into shared memory (sm_80 and newer).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
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

template <recipes::OutType T>
__device__ __forceinline__ void write_out(const Out& o, int64_t tok, int64_t ch, float v) {
  if (tok >= o.m) return;
  const float b = o.bias ? gemv::act_to_f32(o.bias[ch], T) : 0.0f;
  o.y[tok * o.n + ch] = gemv::epilogue(v, b, o.epi, T);
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

// One thread's share of a GEMM stage (64 rows of K) for a block of 256 threads and 128 channels,
// worked out once: XN = rows / 32 rows of X (16-byte pieces, rows 32 apart, the pieces of row i at
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
std::string launch_hopper_gemm(const FtIo& io, recipes::OutType t, bool naive, int sms, bool wait);

}  // namespace dql::cuda::io
