// Shared by the one-row and sixteen-row walk experiments (not part of the product): the copy's rate as
// the bench measures it, and random int4 weights packed into the mixed-GEMM layout's words.
#pragma once

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
