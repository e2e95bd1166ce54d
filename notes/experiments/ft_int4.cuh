// Shared by the one-row and sixteen-row walk experiments (not part of the product): the copy's rate as
// the bench measures it, random int4 weights packed into the mixed-GEMM layout's words, and the blocks
// of a column range meeting as the product's finish_tile has them meet.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/layouts/ft.hpp"
#include "timing.cuh"

// The device-to-device copy of 512 MiB, a read and a write per byte, in GB/s.
inline double measure_copy_gbps(Timer& tm) {
  unsigned char* buf;
  CK(cudaMalloc(&buf, size_t{1} << 30));
  const double us =
      tm.median_us([&] { CK(cudaMemcpyAsync(buf, buf + (1 << 29), 1 << 29, cudaMemcpyDeviceToDevice)); });
  CK(cudaFree(buf));
  return 2.0 * (1 << 29) / us / 1e3;
}

// q[n K + k] uniform in -8 .. 7 and the words of the layout holding them (offset by 8).
inline void random_ft_int4(int N, int K, std::mt19937& rng, std::vector<int8_t>& q,
                           std::vector<uint32_t>& words) {
  const dql::layouts::FtGeometry geo{4};
  q.assign(size_t(N) * K, 0);
  words.assign(size_t(N) * K / 8, 0x88888888u);
  for (int n = 0; n < N; ++n) {
    for (int k = 0; k < K; ++k) {
      const int v = static_cast<int>(rng() % 16) - 8;
      q[size_t(n) * K + k] = static_cast<int8_t>(v);
      const dql::layouts::FtPlace p = dql::layouts::ft_place(geo, n, k, K);
      uint32_t& wd = words[p.word];
      wd = (wd & ~(0xFu << (4 * p.slot))) | (uint32_t(v + 8) << (4 * p.slot));
    }
  }
}

// Where the blocks of a column range meet: fp32 partial sums and one arrival counter per range (both
// zero between launches), and the fp16 outputs.
__device__ __half* g_yh;
__device__ float* g_sums;
__device__ unsigned* g_counters;

// Called by every thread of a block of column range `range` once its partial sums are in g_sums: the
// last of the range's gridDim.y blocks to arrive writes the n outputs at places at(i), i < n, as fp16
// and leaves the workspace and the counter zero (a fence, an arrival counter: finish_tile's way).
template <class At>
__device__ void settle_range(unsigned range, int n, At at) {
  __threadfence();
  __syncthreads();
  __shared__ int last;
  if (threadIdx.x == 0) {
    const unsigned before = atomicAdd(g_counters + range, 1u);
    last = before + 1 == gridDim.y;
    if (last) g_counters[range] = 0u;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const int64_t p = at(i);
    const float v = __ldcg(g_sums + p);
    g_sums[p] = 0.0f;
    g_yh[p] = __float2half(v);
  }
}
