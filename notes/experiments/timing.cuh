// Shared by the experiment programs in this folder (not part of the product): error checks and
// the timing the bench engine does (the L2 flushed before every sample, CUDA events around the
// timed work, the median of 25 after 3 warm-up samples).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                               \
  do {                                                                      \
    cudaError_t e = (x);                                                    \
    if (e != cudaSuccess) {                                                 \
      std::printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); \
      std::exit(1);                                                         \
    }                                                                       \
  } while (0)

__device__ unsigned sink;  // keeps the reads of the read-only kernels alive

// 16 bytes read once: through the read-only path without a place in L1.
__device__ __forceinline__ uint4 ldnc(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// Plain grid-stride read of n 16-byte chunks, U loads in flight a thread (read_runs, lane_read).
template <int U>
__global__ void lin_read(const uint4* p, int64_t n) {
  unsigned acc = 0;
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += U * stride) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = i + u * stride < n ? ldnc(p + i + u * stride) : uint4{};
#pragma unroll
    for (int u = 0; u < U; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  if (acc == 0x12345678u) sink = acc;
}

// Reads n 16-byte chunks once, grid-stride. Streaming: evict-first loads (the data is not read
// again); otherwise loads cached in L2, as the engine's flush does.
template <bool Streaming>
__global__ void read_all(const uint4* p, size_t n) {
  unsigned acc = 0;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x) {
    const uint4 v = Streaming ? __ldcs(p + i) : __ldcg(p + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x12345678u) sink = acc;
}

// The bench engine's stream hold: one thread spins on a flag in mapped host memory (with a
// deadline) while the events and the timed work are queued behind it.
__global__ void hold_spin(volatile uint32_t* flag, uint64_t timeout_ns) {
  uint64_t start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  while (*flag == 0u) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start > timeout_ns) return;
    __nanosleep(500);
  }
}

// The flush the bench engine uses: read a buffer four times the L2's size, so the L2 holds clean
// lines. Writing the buffer instead (cudaMemsetAsync, `dirty`) leaves dirty lines whose
// write-back lands inside the timed kernel. `hold`: the events and the work queued behind the
// bench engine's stream hold (set by TIMER_HOLD=1 in the environment).
struct Timer {
  void* flush;
  size_t flush_bytes;
  bool dirty = false;
  bool hold = std::getenv("TIMER_HOLD") != nullptr;
  uint32_t* hold_host = nullptr;
  uint32_t* hold_dev = nullptr;
  cudaEvent_t a, b;
  Timer() {
    CK(cudaHostAlloc(reinterpret_cast<void**>(&hold_host), 4, cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&hold_dev), hold_host, 0));
    int l2 = 0;
    CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    flush_bytes = size_t(l2) * 4;
    CK(cudaMalloc(&flush, flush_bytes));
    CK(cudaMemset(flush, 0, flush_bytes));
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
  }
  template <class F>
  double median_us(F f) {
    std::vector<float> t;
    for (int i = 0; i < 28; ++i) {
      if (dirty)
        CK(cudaMemsetAsync(flush, i, flush_bytes));
      else
        read_all<false><<<1024, 256>>>(static_cast<const uint4*>(flush), flush_bytes / 16);
      if (hold) {
        *reinterpret_cast<volatile uint32_t*>(hold_host) = 0u;
        std::atomic_thread_fence(std::memory_order_seq_cst);
        hold_spin<<<1, 1>>>(hold_dev, 1000000000ull);
      }
      CK(cudaEventRecord(a));
      f();
      CK(cudaEventRecord(b));
      if (hold) {
        std::atomic_thread_fence(std::memory_order_seq_cst);
        *reinterpret_cast<volatile uint32_t*>(hold_host) = 1u;
      }
      CK(cudaEventSynchronize(b));
      CK(cudaGetLastError());
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, a, b));
      if (i >= 3) t.push_back(ms * 1000.0f);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  }
};
