// Experiment (not part of the product): the one-row W4A16 kernel's reads without its arithmetic.
// Reads the weights (and optionally the scales) of an int4 N x K matrix in the mixed-GEMM layout
// exactly as `ft_lane_kernel` does (a block of W warps a range of column groups, warp w the 512-byte
// piece w of each group's stream, a lane 16 bytes, A loads in flight beyond the one in use), beside
// plain patterns reading the same bytes, each as % of the device-to-device copy in the same run (cold
// L2 flushed by reading, median of 25, the stream hold with TIMER_HOLD=1 as the bench engine does).
//
//   nvcc -O3 -arch=sm_90 -std=c++17 -o lane_read notes/experiments/lane_read.cu && ./lane_read
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "timing.cuh"

// One warp's rolling window of A + 1 loads over `count` column groups, stride `stride` uint4s.
template <int A, bool SCALES, int SF = 0>
__global__ void __launch_bounds__(1024, 1)
    lane_read(const uint4* q, const uint16_t* scales, int64_t n, int64_t k, int per_block) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t cg0 = int64_t{blockIdx.x} * per_block;
  const int64_t left = n / 4 - cg0;
  const int count = left < per_block ? static_cast<int>(left) : per_block;
  const int64_t stride = k / 8;
  const uint4* p = q + cg0 * stride + warp * 32 + lane;
  const uint16_t* sp = scales + (int64_t{warp} * 256 + (lane / 16) * 128) / 128 * n + 4 * cg0 + lane % 4;
  if (SF == 2 && SCALES) {  // the block's 64 scale rows into L2 at the start, one bulk prefetch a row
    for (int r = threadIdx.x; r < k / 128; r += blockDim.x) {
      const uintptr_t b = reinterpret_cast<uintptr_t>(scales + r * n + 4 * cg0) & ~uintptr_t{15};
      const uintptr_t e =
          (reinterpret_cast<uintptr_t>(scales + r * n + 4 * (cg0 + count)) + 15) & ~uintptr_t{15};
      asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(b), "r"(static_cast<unsigned>(e - b))
                   : "memory");
    }
  }
  const auto scale = [](const uint16_t* q) {
    uint16_t v;
    if (SF == 1)
      asm volatile("ld.global.nc.L2::256B.u16 %0, [%1];" : "=h"(v) : "l"(q));
    else
      v = __ldg(q);
    return v;
  };
  uint4 buf[A + 1];
  uint16_t sc[A + 1] = {};
  unsigned acc = 0;
#pragma unroll
  for (int d = 0; d < A; ++d) {
    if (d < count) {
      buf[d] = ldnc(p);
      if (SCALES) sc[d] = scale(sp);
    }
    p += stride, sp += 4;
  }
  for (int j0 = 0; j0 < count; j0 += A + 1) {
#pragma unroll
    for (int d = 0; d <= A; ++d) {
      const int slot = (d + A) % (A + 1);
      if (j0 + d + A < count) {
        buf[slot] = ldnc(p);
        if (SCALES) sc[slot] = scale(sp);
      }
      p += stride, sp += 4;
      if (j0 + d < count) acc ^= buf[d].x ^ buf[d].y ^ buf[d].z ^ buf[d].w ^ sc[d];
    }
  }
  if (acc == 0x12345678u) sink = acc;
}

// Each block a contiguous range, its threads sweeping it in order (a block-wide 16 KB step), U
// steps in flight.
template <int U>
__global__ void __launch_bounds__(1024, 1) range_read(const uint4* p, int64_t n) {
  const int64_t b0 = n * blockIdx.x / gridDim.x, b1 = n * (blockIdx.x + 1) / gridDim.x;
  unsigned acc = 0;
  for (int64_t i = b0 + threadIdx.x; i < b1; i += U * 1024) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = i + u * 1024 < b1 ? ldnc(p + i + u * 1024) : uint4{};
#pragma unroll
    for (int u = 0; u < U; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  if (acc == 0x12345678u) sink = acc;
}

__global__ void empty_kernel(int64_t) {}

int main() {
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  uint8_t* dst = nullptr;
  CK(cudaMalloc(&dst, size_t{1} << 30));
  Timer tm;
  const double copy_us =
      tm.median_us([&] { CK(cudaMemcpyAsync(dst, dst + (1 << 29), 1 << 29, cudaMemcpyDeviceToDevice)); });
  const double copy_gbps = 2.0 * (1 << 29) / copy_us / 1e3;
  std::printf("%s, %d SMs, copy %.0f GB/s, hold %s\n", prop.name, sms, copy_gbps, tm.hold ? "on" : "off");
  std::printf("empty kernel 132 x 1024: %.2f us\n", tm.median_us([&] { empty_kernel<<<sms, 1024>>>(0); }));
  const int64_t shapes[][2] = {{28672, 8192}, {8192, 28672}, {8192, 8192}};
  for (const auto& s : shapes) {
    const int64_t n = s[0], k = s[1];
    const int64_t qbytes = n * k / 2, sbytes = n * (k / 128) * 2;
    uint4* q = nullptr;
    uint16_t* sc = nullptr;
    CK(cudaMalloc(&q, qbytes));
    CK(cudaMalloc(&sc, sbytes));
    CK(cudaMemset(q, 7, qbytes));
    CK(cudaMemset(sc, 1, sbytes));
    const double bytes = static_cast<double>(qbytes + sbytes);
    std::printf("\n%lldx%lld: %.1f MB of weights and scales, floor %.2f us at the copy rate\n",
                static_cast<long long>(n), static_cast<long long>(k), bytes / 1e6, bytes / copy_gbps / 1e3);
    const auto row = [&](const char* name, double us, double b) {
      std::printf("  %-44s %8.2f us %6.1f%% of copy\n", name, us, 100.0 * b / (us * 1e3) / copy_gbps);
    };
    const int64_t groups = n / 4;
    if (k == 8192) {  // one row of blocks: the kernel's own grid
      const int per = static_cast<int>((groups + sms - 1) / sms);
      const unsigned blocks = static_cast<unsigned>((groups + per - 1) / per);
      char nm[96];
      std::snprintf(nm, sizeof nm, "lane A=3 scales (%u blocks of %d)", blocks, per);
      row(nm, tm.median_us([&] { lane_read<3, true><<<blocks, 1024>>>(q, sc, n, k, per); }), bytes);
      row("lane A=3 scales L2::256B",
          tm.median_us([&] { lane_read<3, true, 1><<<blocks, 1024>>>(q, sc, n, k, per); }), bytes);
      row("lane A=3 scales prefetched (bulk, L2)",
          tm.median_us([&] { lane_read<3, true, 2><<<blocks, 1024>>>(q, sc, n, k, per); }), bytes);
      row("lane A=3 no scales",
          tm.median_us([&] { lane_read<3, false><<<blocks, 1024>>>(q, sc, n, k, per); }),
          static_cast<double>(qbytes));
      row("lane A=5 scales", tm.median_us([&] { lane_read<5, true><<<blocks, 1024>>>(q, sc, n, k, per); }),
          bytes);
      row("lane A=7 no scales",
          tm.median_us([&] { lane_read<7, false><<<blocks, 1024>>>(q, sc, n, k, per); }),
          static_cast<double>(qbytes));
    }
    const int64_t n16 = qbytes / 16;
    row("lin U=4 grid 132 x 1024", tm.median_us([&] { lin_read<4><<<sms, 1024>>>(q, n16); }),
        static_cast<double>(qbytes));
    row("lin U=4 grid 16/SM x 128", tm.median_us([&] { lin_read<4><<<sms * 16, 128>>>(q, n16); }),
        static_cast<double>(qbytes));
    row("lin U=8 grid 16/SM x 128", tm.median_us([&] { lin_read<8><<<sms * 16, 128>>>(q, n16); }),
        static_cast<double>(qbytes));
    row("range U=4 132 x 1024", tm.median_us([&] { range_read<4><<<sms, 1024>>>(q, n16); }),
        static_cast<double>(qbytes));
    row("range U=8 132 x 1024", tm.median_us([&] { range_read<8><<<sms, 1024>>>(q, n16); }),
        static_cast<double>(qbytes));
    CK(cudaFree(q));
    CK(cudaFree(sc));
  }
  return 0;
}
