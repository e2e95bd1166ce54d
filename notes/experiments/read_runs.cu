// Experiment (not part of the product): how fast can a GEMV's weight stream be read on this
// device, depending on how the reads are cut into runs? Reads the byte count of an int4
// 28672x8192 matrix (117.4 MB) in the mixed-GEMM layout's shape (column groups of 4 channels,
// each one contiguous stream of K/2 * 4 bytes) and reports each pattern as % of the
// device-to-device copy measured in the same run (cold L2, flushed by reading as the bench
// engine does, median of 25).
//
//   nvcc -O3 -arch=sm_90 -std=c++17 -o read_runs notes/experiments/read_runs.cu && ./read_runs
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "timing.cuh"

constexpr int kThreads = 128;
constexpr int64_t kStream = 16384;  // bytes of one column group (K = 8192, int4, 4 channels)
constexpr int64_t kGroups = 28672 / 4;
constexpr int64_t kBytes = kStream * kGroups;

// A unit is 16 KB: R runs of P = 16 KB / R bytes, run j from column group (cg0 + j) at offset
// `part * P` of that group's stream. Units cover the matrix tile by tile (a tile = R column
// groups). persistent: blocks take equal contiguous ranges of units; else one unit per block.
template <int R>
__global__ void unit_kernel(const unsigned char* base, int64_t units, bool persistent) {
  constexpr int64_t P = 16384 / R;
  constexpr int64_t parts = kStream / P;
  const int64_t ub = persistent ? units * blockIdx.x / gridDim.x : blockIdx.x;
  const int64_t ue = persistent ? units * (blockIdx.x + 1) / gridDim.x : blockIdx.x + 1;
  unsigned acc = 0;
  for (int64_t u = ub; u < ue; ++u) {
    const int64_t tile = u / parts, part = u % parts;
    uint4 v[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int64_t off = (int64_t{i} * kThreads + threadIdx.x) * 16;  // byte within the unit
      const int64_t run = off / P, within = off % P;
      v[i] = ldnc(base + (tile * R + run) * kStream + part * P + within);
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) acc ^= v[i].x ^ v[i].y ^ v[i].z ^ v[i].w;
  }
  if (acc == 0x12345678u) sink = acc;
}

// The same units through the copy engine into a 2-stage ring (what the GEMV's bulk form does),
// loads only.
__device__ __forceinline__ uint32_t sa(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void wait_parity(uint64_t* bar, unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0,1,0,p; }"
                 : "=r"(done)
                 : "r"(sa(bar)), "r"(parity)
                 : "memory");
  } while (!done);
}

template <int R, int STAGES>
__global__ void bulk_kernel(const unsigned char* base, int64_t units) {
  constexpr int64_t P = 16384 / R;
  constexpr int64_t parts = kStream / P;
  extern __shared__ __align__(128) unsigned char sm[];
  uint64_t* full = reinterpret_cast<uint64_t*>(sm + STAGES * 16384);
  uint64_t* empty = full + STAGES;
  const int64_t ub = units * blockIdx.x / gridDim.x, ue = units * (blockIdx.x + 1) / gridDim.x;
  const int count = static_cast<int>(ue - ub);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    for (int i = 0; i < STAGES; ++i) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(sa(full + i)));
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 4;" ::"r"(sa(empty + i)));
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  auto issue = [&](int64_t u, int buf) {
    const int64_t tile = u / parts, part = u % parts;
    if (lane == 0)
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], 16384;" ::"r"(sa(full + buf))
                   : "memory");
    __syncwarp();
    for (int j = lane; j < R; j += 32) {
      asm volatile(
          "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
              sa(sm + buf * 16384 + j * P)),
          "l"(base + (tile * R + j) * kStream + part * P), "r"(static_cast<unsigned>(P)), "r"(sa(full + buf))
          : "memory");
    }
  };
  if (warp == 0)
    for (int i = 0; i < STAGES && i < count; ++i) issue(ub + i, i);
  unsigned acc = 0, parity = 0;
  int buf = 0;
  for (int i = 0; i < count; ++i) {
    wait_parity(full + buf, parity);
    acc ^= reinterpret_cast<const unsigned*>(sm + buf * 16384)[threadIdx.x * 4];
    __syncwarp();
    if (lane == 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(sa(empty + buf)) : "memory");
    if (warp == 0 && i + STAGES < count) {
      wait_parity(empty + buf, parity);
      issue(ub + i + STAGES, buf);
    }
    if (++buf == STAGES) buf = 0, parity ^= 1u;
  }
  if (acc == 0x12345678u) sink = acc;
}

template <class K>
int fit(K kernel, size_t smem) {
  int v = 0;
  CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&v, kernel, kThreads, smem));
  return v;
}

int main() {
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  unsigned char *buf, *dst;
  CK(cudaMalloc(&buf, kBytes));
  CK(cudaMalloc(&dst, 1 << 30));
  CK(cudaMemset(buf, 7, kBytes));
  Timer tm;
  // copy: 512 MB each way
  const double copy_us =
      tm.median_us([&] { CK(cudaMemcpyAsync(dst, dst + (1 << 29), 1 << 29, cudaMemcpyDeviceToDevice)); });
  const double copy_gbps = 2.0 * (1 << 29) / copy_us / 1e3;
  std::printf("%s, %d SMs; copy %.0f GB/s; reading %.1f MB (floor %.1f us)\n", prop.name, sms, copy_gbps,
              kBytes / 1e6, kBytes / copy_gbps / 1e3);
  auto row = [&](const char* name, double us) {
    std::printf("%-40s %8.1f us %6.1f%% of copy\n", name, us, 100.0 * kBytes / (us * 1e3) / copy_gbps);
  };
  const int64_t n16 = kBytes / 16;
  for (int waves : {1, 4, 16}) {
    const unsigned blocks = sms * 16 * waves / 1;
    char nm[64];
    std::snprintf(nm, sizeof nm, "lin U=4 grid %u", blocks);
    row(nm,
        tm.median_us([&] { lin_read<4><<<blocks, kThreads>>>(reinterpret_cast<const uint4*>(buf), n16); }));
  }
  row("lin U=8 grid 16/SM",
      tm.median_us([&] { lin_read<8><<<sms * 16, kThreads>>>(reinterpret_cast<const uint4*>(buf), n16); }));
  const int64_t units = kBytes / 16384;
  {
    const int f1 = fit(unit_kernel<16>, 0);
    std::printf("unit kernel: %d blocks/SM\n", f1);
  }
  row("unit R=16 (1 KB runs) grid",
      tm.median_us([&] { unit_kernel<16><<<units, kThreads>>>(buf, units, false); }));
  row("unit R=4 (4 KB runs) grid",
      tm.median_us([&] { unit_kernel<4><<<units, kThreads>>>(buf, units, false); }));
  row("unit R=1 (16 KB runs) grid",
      tm.median_us([&] { unit_kernel<1><<<units, kThreads>>>(buf, units, false); }));
  const int pb = fit(unit_kernel<16>, 0) * sms;
  row("unit R=16 persistent", tm.median_us([&] { unit_kernel<16><<<pb, kThreads>>>(buf, units, true); }));
  row("unit R=4 persistent", tm.median_us([&] { unit_kernel<4><<<pb, kThreads>>>(buf, units, true); }));
  row("unit R=1 persistent", tm.median_us([&] { unit_kernel<1><<<pb, kThreads>>>(buf, units, true); }));
  auto bulk = [&](auto kernel, int stages, const char* name) {
    const size_t smem = stages * 16384 + 64;
    const int f = fit(kernel, smem);
    for (int per : {f, std::max(1, f / 2)}) {
      char nm[96];
      std::snprintf(nm, sizeof nm, "%s, %d blocks/SM", name, per);
      row(nm, tm.median_us([&] { kernel<<<per * sms, kThreads, smem>>>(buf, units); }));
    }
  };
  bulk(bulk_kernel<16, 2>, 2, "bulk R=16 2 stages");
  bulk(bulk_kernel<4, 2>, 2, "bulk R=4 2 stages");
  bulk(bulk_kernel<1, 2>, 2, "bulk R=1 2 stages");
  bulk(bulk_kernel<16, 4>, 4, "bulk R=16 4 stages");
  bulk(bulk_kernel<1, 4>, 4, "bulk R=1 4 stages");
  // The same two patterns after a flush by writing, for comparison.
  tm.dirty = true;
  row("dirty flush: lin U=4 grid 16/SM",
      tm.median_us([&] { lin_read<4><<<sms * 16, kThreads>>>(reinterpret_cast<const uint4*>(buf), n16); }));
  bulk(bulk_kernel<16, 2>, 2, "dirty flush: bulk R=16 2 stages");
  return 0;
}
