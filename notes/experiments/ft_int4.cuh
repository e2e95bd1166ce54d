// Shared by the one-row and sixteen-row walk experiments (not part of the product): the copy's rate as
// the bench measures it, random int4 weights packed into the mixed-GEMM layout's words, and the blocks
// of a column range meeting as the product's finish_tile has them meet.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
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

// What every experiment program starts with: the device, the bench's timing and the copy's rate measured
// by it, printed.
struct Lab {
  cudaDeviceProp prop;
  Timer tm;
  double copy_gbps;
  Lab() {
    CK(cudaGetDeviceProperties(&prop, 0));
    copy_gbps = measure_copy_gbps(tm);
    std::printf("%s, %d SMs; copy %.0f GB/s\n", prop.name, prop.multiProcessorCount, copy_gbps);
  }
};

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

// The sixteen-row experiments' problem: N x K int4 weights in groups of G (the values q and the
// layout's words), fp16 scales [K / G][N] in 0.01 .. 0.02, `rows` rows of fp16 X [rows][K] from a normal
// distribution (xf: the same as float), and the float64 products with each group's scale outside its
// sum (ref[t N + n]; OpenMP where the program is built with it).
struct Int4Problem {
  std::vector<int8_t> q;
  std::vector<uint32_t> words;
  std::vector<__half> s, x;
  std::vector<float> xf;
  std::vector<double> ref;
};
inline Int4Problem int4_problem(int rows, int N, int K, int G) {
  Int4Problem p;
  std::mt19937 rng(N + K);
  random_ft_int4(N, K, rng, p.q, p.words);
  p.s.resize(size_t(K / G) * N);
  p.x.resize(size_t(rows) * K);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (auto& v : p.s) v = __float2half(0.01f + 0.01f * float(rng() % 1000) / 1000.0f);
  for (auto& v : p.x) v = __float2half(nd(rng));
  p.xf.resize(p.x.size());
  for (size_t i = 0; i < p.x.size(); ++i) p.xf[i] = __half2float(p.x[i]);
  p.ref.assign(size_t(rows) * N, 0.0);
#pragma omp parallel for
  for (int n = 0; n < N; ++n) {
    for (int t = 0; t < rows; ++t) {
      double a = 0;
      for (int g0 = 0; g0 < K / G; ++g0) {
        double part = 0;
        for (int k = g0 * G; k < (g0 + 1) * G; ++k)
          part += double(p.q[size_t(n) * K + k]) * p.xf[size_t(t) * K + k];
        a += double(__half2float(p.s[size_t(g0) * N + n])) * part;
      }
      p.ref[size_t(t) * N + n] = a;
    }
  }
  return p;
}

// Where the blocks of a column range meet: fp32 partial sums and one arrival counter per range (both
// zero between launches), and the fp16 outputs.
__device__ __half* g_yh;
__device__ float* g_sums;
__device__ unsigned* g_counters;

// Called by every thread of a block of column range `range` once its partial sums are in g_sums: the
// last of the range's gridDim.y blocks to arrive writes the n outputs at places at(i), i < n, as fp16
// and leaves the workspace and the counter zero (a fence, an arrival counter: finish_tile's way).
// LIGHT: no fences; thread 0 arrives by one acquire-release atomic after the block's barrier, which
// orders the block's sums before its arrival and, for the last, the others' sums before its reads.
template <bool LIGHT = false, class At>
__device__ void settle_range(unsigned range, int n, At at) {
  if (!LIGHT) __threadfence();
  __syncthreads();
  __shared__ int last;
  if (threadIdx.x == 0) {
    unsigned before;
    if constexpr (LIGHT) {
      asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;"
                   : "=r"(before)
                   : "l"(g_counters + range)
                   : "memory");
    } else {
      before = atomicAdd(g_counters + range, 1u);
    }
    last = before + 1 == gridDim.y;
    if (last) g_counters[range] = 0u;
  }
  __syncthreads();
  if (!last) return;
  if (!LIGHT) __threadfence();
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const int64_t p = at(i);
    const float v = __ldcg(g_sums + p);
    g_sums[p] = 0.0f;
    g_yh[p] = __float2half(v);
  }
}

// A device array of n T, freed with it; from a host vector, a copy of it.
template <class T>
struct DevBuf {
  T* p = nullptr;
  size_t n = 0;
  explicit DevBuf(size_t count) : n(count) { CK(cudaMalloc(&p, n * sizeof(T))); }
  explicit DevBuf(const std::vector<T>& v) : DevBuf(v.size()) {
    CK(cudaMemcpy(p, v.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~DevBuf() { cudaFree(p); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
};

// The bytes a product of the problem moves with M rows of X: each input read once, fp16 Y written once.
inline double int4_bytes(const Int4Problem& pb, int m, int n) {
  return double(pb.words.size()) * 4 + pb.s.size() * 2 + pb.x.size() * 2 + double(m) * n * 2.0;
}

// The problem on the device for M rows of X: its weights, scales and X copied there, fp32 outputs, and
// the bytes a product moves.
struct Int4OnDevice {
  DevBuf<uint32_t> w;
  DevBuf<__half> s, x;
  DevBuf<float> y;
  double bytes;
  Int4OnDevice(const Int4Problem& pb, int m, int n)
      : w(pb.words), s(pb.s), x(pb.x), y(size_t(m) * n), bytes(int4_bytes(pb, m, n)) {}
};

// A shape the programs run: N channels by K rows.
struct Shape {
  int n, k;
};

// settle_range's workspace for `outputs` outputs and `ranges` column ranges: fp16 outputs, fp32 sums
// and arrival counters (both zero), bound to g_yh, g_sums and g_counters.
struct Meeting {
  DevBuf<__half> yh;
  DevBuf<float> sums;
  DevBuf<unsigned> counters;
  Meeting(size_t outputs, size_t ranges) : yh(outputs), sums(outputs), counters(ranges) {
    CK(cudaMemset(sums.p, 0, sums.n * sizeof(float)));
    CK(cudaMemset(counters.p, 0, counters.n * sizeof(unsigned)));
    CK(cudaMemcpyToSymbol(g_yh, &yh.p, sizeof(yh.p)));
    CK(cudaMemcpyToSymbol(g_sums, &sums.p, sizeof(sums.p)));
    CK(cudaMemcpyToSymbol(g_counters, &counters.p, sizeof(counters.p)));
  }
};

// The outputs of one run of `launch` on zeroed fp32 outputs y: those n floats, or where yh is given
// (the workspace meeting's fp16 outputs), those.
template <class Launch>
std::vector<float> outputs_once(Launch launch, float* y, size_t n, const __half* yh = nullptr) {
  CK(cudaMemset(y, 0, n * sizeof(float)));
  launch();
  CK(cudaDeviceSynchronize());
  std::vector<float> out(n);
  if (yh == nullptr) {
    CK(cudaMemcpy(out.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost));
  } else {
    std::vector<__half> h(n);
    CK(cudaMemcpy(h.data(), yh, n * sizeof(__half), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; ++i) out[i] = __half2float(h[i]);
  }
  return out;
}

// The relative (L2) error of outputs y, rounded to fp16 as the product writes them, against ref.
inline double fp16_rel_err(const std::vector<float>& y, const std::vector<double>& ref) {
  double e = 0, r = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double yv = __half2float(__float2half(y[i]));
    e += (yv - ref[i]) * (yv - ref[i]), r += ref[i] * ref[i];
  }
  return std::sqrt(e / r);
}
