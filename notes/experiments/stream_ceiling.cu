// Experiment (not part of the product): what share of the device-to-device copy figure can a
// kernel with a standalone dequant's or permute's traffic reach on this device at all, with no
// arithmetic? Each pattern moves the bytes of a bench row (cold L2, flushed by reading as the bench
// engine does, median of 25) and is reported as % of the 1 GiB copy measured in the same run:
//
//   expand:  4 bytes read -> 16 bytes written (int4 -> fp16, without scales or conversion)
//   copy:    bytes read = bytes written (a permute)
//   read / write only, for reference.
//
//   nvcc -O3 -arch=sm_90 -std=c++17 -o stream_ceiling notes/experiments/stream_ceiling.cu && ./stream_ceiling
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "timing.cuh"

constexpr int kThreads = 256;

__device__ __forceinline__ void st_cs(uint4* p, uint4 v) {
  asm volatile("st.global.cs.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}

// What a word becomes: a 4-byte word four 16-bit values' worth of bytes (the expand), a 16-byte
// chunk itself (the copy).
__device__ __forceinline__ uint4 widen(uint32_t w) { return make_uint4(w, w ^ 1u, w ^ 2u, w ^ 3u); }
__device__ __forceinline__ uint4 widen(uint4 v) { return v; }

// Each thread U items kThreads apart (all loads first), each item -> one 16-byte store: the shape of
// the plain dequant kernel. Grid: one block per kThreads * U items (one pass), or fewer blocks,
// which then stride over the rest. CS: streaming stores (evict first).
template <int U, bool CS, class In>
__global__ void __launch_bounds__(kThreads) move_kernel(const In* in, uint4* out, int64_t n) {
  for (int64_t base = blockIdx.x * int64_t{kThreads * U}; base < n;
       base += int64_t{gridDim.x} * kThreads * U) {
    In w[U];
#pragma unroll
    for (int u = 0; u < U; ++u) w[u] = __ldcs(in + base + u * kThreads + threadIdx.x);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (CS)
        st_cs(out + base + u * kThreads + threadIdx.x, widen(w[u]));
      else
        out[base + u * kThreads + threadIdx.x] = widen(w[u]);
    }
  }
}

__global__ void write_kernel(uint4* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    out[i] = make_uint4(unsigned(i), 1, 2, 3);
}

int main() {
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  unsigned char* dst;
  CK(cudaMalloc(&dst, size_t{1} << 31));
  CK(cudaMemset(dst, 7, size_t{1} << 31));
  Timer tm;
  const double copy_us = tm.median_us(
      [&] { CK(cudaMemcpyAsync(dst, dst + (size_t{1} << 30), size_t{1} << 30, cudaMemcpyDeviceToDevice)); });
  const double copy_gbps = 2.0 * double(size_t{1} << 30) / copy_us / 1e3;
  std::printf("%s, %d SMs; copy (1 GiB each way) %.0f GB/s\n", prop.name, sms, copy_gbps);
  auto row = [&](const char* name, double bytes, double us) {
    std::printf("%-52s %8.2f us %7.1f MB %6.1f%% of copy\n", name, us, bytes / 1e6,
                100.0 * bytes / (us * 1e3) / copy_gbps);
  };
  char nm[96];
  for (int64_t cols : {8192, 28672}) {
    const int64_t elems = 8192 * cols, words = elems / 8;  // int4 words in, 16 bytes out each
    const uint32_t* in = reinterpret_cast<const uint32_t*>(dst);
    uint4* out = reinterpret_cast<uint4*>(dst + words * 4 + 4096);
    const double bytes = words * 20.0;
    std::printf("-- expand 8192x%lld (int4 -> 16 bit, %lld words)\n", static_cast<long long>(cols),
                static_cast<long long>(words));
    row("expand U=4 one-shot grid", bytes, tm.median_us([&] {
      move_kernel<4, false><<<unsigned(words / (kThreads * 4)), kThreads>>>(in, out, words);
    }));
    row("expand U=8 one-shot grid", bytes, tm.median_us([&] {
      move_kernel<8, false><<<unsigned(words / (kThreads * 8)), kThreads>>>(in, out, words);
    }));
    row("expand U=8 one-shot grid, st.cs", bytes, tm.median_us([&] {
      move_kernel<8, true><<<unsigned(words / (kThreads * 8)), kThreads>>>(in, out, words);
    }));
    row("expand U=2 one-shot grid", bytes, tm.median_us([&] {
      move_kernel<2, false><<<unsigned(words / (kThreads * 2)), kThreads>>>(in, out, words);
    }));
    row("expand U=1 one-shot grid", bytes, tm.median_us([&] {
      move_kernel<1, false><<<unsigned(words / kThreads), kThreads>>>(in, out, words);
    }));
    for (int per : {4, 8, 16}) {
      std::snprintf(nm, sizeof nm, "expand U=4 grid-stride %d blocks/SM", per);
      row(nm, bytes,
          tm.median_us([&] { move_kernel<4, false><<<unsigned(sms * per), kThreads>>>(in, out, words); }));
    }
    std::printf("-- copy, permute int4 8192x%lld (%lld bytes each way)\n", static_cast<long long>(cols),
                static_cast<long long>(elems / 2));
    const int64_t n16 = elems / 2 / 16;
    const uint4* cin = reinterpret_cast<const uint4*>(dst);
    uint4* cout = reinterpret_cast<uint4*>(dst + (size_t{1} << 30));
    row("copy kernel U=4 one-shot grid", elems, tm.median_us([&] {
      move_kernel<4, false><<<unsigned(n16 / (kThreads * 4)), kThreads>>>(cin, cout, n16);
    }));
    row("copy kernel U=2 one-shot grid", elems, tm.median_us([&] {
      move_kernel<2, false><<<unsigned(n16 / (kThreads * 2)), kThreads>>>(cin, cout, n16);
    }));
    row("copy kernel U=1 one-shot grid", elems,
        tm.median_us([&] { move_kernel<1, false><<<unsigned(n16 / kThreads), kThreads>>>(cin, cout, n16); }));
    row("cudaMemcpyAsync", elems,
        tm.median_us([&] { CK(cudaMemcpyAsync(cout, cin, elems / 2, cudaMemcpyDeviceToDevice)); }));
    std::printf("-- one way only\n");
    row("read only, the expand's input", words * 4.0, tm.median_us([&] {
      read_all<true><<<sms * 16, kThreads>>>(reinterpret_cast<const uint4*>(in), words / 4);
    }));
    row("write only, the expand's output", words * 16.0,
        tm.median_us([&] { write_kernel<<<sms * 16, kThreads>>>(out, words); }));
    row("empty kernel", 1.0, tm.median_us([&] { write_kernel<<<sms, kThreads>>>(out, 0); }));
  }
  return 0;
}
