// Experiment (not part of the product): the one-row W4A16 kernel's reads without its arithmetic.
// Reads the weights (and optionally the scales) of an int4 N x K matrix in the mixed-GEMM layout
// exactly as `ft_lane_kernel` does (a block of W warps a range of column groups, warp w the 512-byte
// piece w of each group's stream, a lane 16 bytes, A loads in flight beyond the one in use), then with
// the kernel's work put back part by part (lane_parts), beside plain patterns reading the same bytes,
// each as % of the device-to-device copy in the same run (cold L2 flushed by reading, median of 25,
// the stream hold with TIMER_HOLD=1 as the bench engine does).
//
//   nvcc -O3 -arch=sm_90 -std=c++20 -o lane_read notes/experiments/lane_read.cu && ./lane_read
//
// RANDOM=1 fills the weights with random bits instead of one byte repeated; TRACE=1 adds each block's start
// and end (%globaltimer) in one launch of the kernel's work, contiguous and dealt out (ILV).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "ptx.cuh"
#include "timing.cuh"

// Where a lane of block blockIdx.x starts: its block's first column group and count of them, its first
// piece (warp w the 512-byte piece w of each group, a lane 16 bytes) and its first scale.
struct LaneAt {
  int warp, lane, count;
  int64_t cg0, stride;  // stride: uint4s from one column group of the walk to the next
  const uint4* p;
  const uint16_t* sp;
  int64_t sstep;  // halves from one column group's scale to the next
};
// CGM: the scales laid out column group by column group ([N / 4][K / 128][4] halves) instead of [K / 128][N]:
// a step's scales for the whole block (its 64 rows of one column group) are then 512 contiguous bytes.
// ILV: block b walks column groups b, b + blocks, b + 2 blocks, ... instead of a contiguous range, so that at
// each step the grid's blocks read neighbouring column groups (one window of blocks x 16 KB, as a
// grid-stride read does) rather than 131 places 880 KB apart (a contiguous range a block).
template <bool CGM = false, bool ILV = false>
__device__ __forceinline__ LaneAt lane_at(const uint4* q, const uint16_t* scales, int64_t n, int64_t k,
                                          int per_block) {
  LaneAt a;
  a.warp = threadIdx.x / 32, a.lane = threadIdx.x % 32;
  const int64_t groups = n / 4, blocks = gridDim.x;
  const int64_t row = (int64_t{a.warp} * 256 + (a.lane / 16) * 128) / 128;
  if constexpr (ILV) {
    a.cg0 = blockIdx.x;
    a.count = static_cast<int>((groups - a.cg0 + blocks - 1) / blocks);
    a.stride = blocks * (k / 8);
    a.sstep = 4 * blocks;
  } else {
    a.cg0 = int64_t{blockIdx.x} * per_block;
    const int64_t left = groups - a.cg0;
    a.count = left < per_block ? static_cast<int>(left) : per_block;
    a.stride = k / 8;
    a.sstep = CGM ? (k / 128) * 4 : 4;
  }
  a.p = q + a.cg0 * (k / 8) + a.warp * 32 + a.lane;
  a.sp =
      CGM ? scales + (a.cg0 * (k / 128) + row) * 4 + a.lane % 4 : scales + row * n + 4 * a.cg0 + a.lane % 4;
  return a;
}

// One warp's rolling window of A + 1 loads over `count` column groups, stride `stride` uint4s.
template <int A, bool SCALES, int SF = 0>
__global__ void __launch_bounds__(1024, 1)
    lane_read(const uint4* q, const uint16_t* scales, int64_t n, int64_t k, int per_block) {
  [[maybe_unused]] auto [warp, lane, count, cg0, stride, p, sp, sstep] =
      lane_at<SF == 4, SF == 5>(q, scales, n, k, per_block);
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
    p += stride, sp += sstep;
  }
  for (int j0 = 0; j0 < count; j0 += A + 1) {
#pragma unroll
    for (int d = 0; d <= A; ++d) {
      const int slot = (d + A) % (A + 1);
      if (j0 + d + A < count) {
        buf[slot] = ldnc(p);
        if (SCALES) sc[slot] = scale(sp);
      }
      p += stride, sp += sstep;
      if (j0 + d < count) acc ^= buf[d].x ^ buf[d].y ^ buf[d].z ^ buf[d].w ^ sc[d];
    }
  }
  if (acc == 0x12345678u) sink = acc;
}

// The recipe's two fp16 steps: the magic taken off (sub) or scaled and taken off (fma), two halves at once.
__device__ __forceinline__ uint32_t sub_h2(uint32_t a, uint32_t b) {
  uint32_t r;
  asm("sub.rn.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
__device__ __forceinline__ uint32_t fma_h2(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t r;
  asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
  return r;
}

// The kernel's walk (whole rounds unchecked, the last round checked) with its work put back part by
// part (PARTS, bits; 0 the walk alone): 1 the four m16n8k16 products a step (raw words as A, the lane's
// X as B, one chain), 2 the int4 recipe before them (per word two LOP3 on the word and two on it shifted
// by 8, a subtraction and an FMA a pair: the stepper's 9 instructions), 4 the step's sums scaled, met by
// two shuffles and stored to shared memory one step late, as the kernel does with fp16 X in blocks of 32
// warps, 8 the block's warps' sums added and written as fp16, 16 the step's four products as two chains
// of two (odd and even words into two accumulators, added after the step), 32 the step's sums stored by
// the four lanes that hold each column's (no shuffles; 16 floats a step, the meeting adds 4 times as many),
// 64 the scales column group by column group (CGM, lane_at), 128 the column groups dealt out (ILV, lane_at).
// The outputs are not the product's (the pair order is not the layout's); only the work is.
__device__ unsigned long long stamps[2 * 1024];  // TRACE: each block's start and end, %globaltimer
__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}

template <int PARTS>
__global__ void __launch_bounds__(1024, 1) lane_parts(const uint4* q, const uint16_t* scales, const uint4* xv,
                                                      __half* y, int64_t n, int64_t k, int per_block) {
  constexpr int A = 3;
  constexpr bool MMA = PARTS & 1, DEQ = PARTS & 2, EMIT = PARTS & 4, TAIL = PARTS & 8, TWO = PARTS & 16,
                 LANES = PARTS & 32, CGM = PARTS & 64, ILV = PARTS & 128, TRACE = PARTS & 256;
  if (TRACE && threadIdx.x == 0) stamps[2 * blockIdx.x] = global_ns();
  extern __shared__ float part[];
  auto [warp, lane, count, cg0, stride, p, sp, sstep] = lane_at<CGM, ILV>(q, scales, n, k, per_block);
  const uint4 x0 = __ldg(xv + (warp * 16 + lane % 16) * 2), x1 = __ldg(xv + (warp * 16 + lane % 16) * 2 + 1);
  const uint32_t xb[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
  // LANES: the four lanes 8c + {0, 2, 5, 7} that hold a column's sums store them unmet, 16 floats a step.
  const int s8 = lane % 8;
  const bool holds = s8 == 0 || s8 == 2 || s8 == 5 || s8 == 7;
  float* out = LANES ? part + warp * per_block * 16 + (lane / 8) * 4 + s8 / 2  // s8 / 2: tiles 0-3
                     : part + warp * per_block * 4 + lane / 8;
  unsigned acc = 0;
  float p0 = 0.0f, p3 = 0.0f;
  float ps = 0.0f;  // the late step's scale, as fp32
  const auto emit = [&](float d0, float d3, float scale, int j) {
    float d = (d0 + d3) * scale;
    if constexpr (LANES) {
      if (holds && j >= 0) out[16 * j] = d;
      return;
    }
    d += __shfl_xor_sync(0xFFFFFFFFu, d, 2);
    d += __shfl_down_sync(0xFFFFFFFFu, d, 5);
    if (lane % 8 == 0 && j >= 0) out[4 * j] = d;
  };
  const auto body = [&](uint4 v, uint16_t scale, int j) {
    if constexpr (!MMA) {
      acc ^= v.x ^ v.y ^ v.z ^ v.w ^ scale;
    } else {
      const uint32_t w[4] = {v.x, v.y, v.z, v.w};
      float d[4] = {0.0f, 0.0f, 0.0f, 0.0f}, e[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        uint32_t h[4] = {w[i], w[i], w[i], w[i]};
        if constexpr (DEQ) {
          const uint32_t top = w[i] >> 8;
          h[0] = sub_h2(lop3_and_or(w[i], 0x000f000fu, 0x64006400u), 0x64086408u);
          h[1] = fma_h2(lop3_and_or(w[i], 0x00f000f0u, 0x64006400u), 0x2c002c00u, 0xd480d480u);
          h[2] = sub_h2(lop3_and_or(top, 0x000f000fu, 0x64006400u), 0x64086408u);
          h[3] = fma_h2(lop3_and_or(top, 0x00f000f0u, 0x64006400u), 0x2c002c00u, 0xd480d480u);
        }
        mma16816(TWO && i % 2 ? e : d, h[0], h[1], h[2], h[3], xb[i], xb[4 + i]);
      }
      if constexpr (TWO) d[0] += e[0], d[3] += e[3];
      if constexpr (EMIT) {
        emit(p0, p3, ps, j - 1);
        p0 = d[0], p3 = d[3], ps = __half2float(__ushort_as_half(scale));
      } else {
        acc ^= __float_as_uint(d[0] + d[3]) ^ scale;
      }
    }
  };
  uint4 buf[A + 1];
  uint16_t sc[A + 1] = {};
#pragma unroll
  for (int d = 0; d < A; ++d) {
    if (d < count) buf[d] = ldnc(p), sc[d] = __ldg(sp);
    p += stride, sp += sstep;
  }
  int j0 = 0;
  for (; j0 + 2 * A + 1 <= count; j0 += A + 1) {  // whole rounds unchecked, as the kernel's walk
#pragma unroll
    for (int d = 0; d <= A; ++d) {
      const int slot = (d + A) % (A + 1);
      buf[slot] = ldnc(p), sc[slot] = __ldg(sp);
      p += stride, sp += sstep;
      body(buf[d], sc[d], j0 + d);
    }
  }
  for (; j0 < count; j0 += A + 1) {
#pragma unroll
    for (int d = 0; d <= A; ++d) {
      const int slot = (d + A) % (A + 1);
      if (j0 + d + A < count) buf[slot] = ldnc(p), sc[slot] = __ldg(sp);
      p += stride, sp += sstep;
      if (j0 + d < count) body(buf[d], sc[d], j0 + d);
    }
  }
  if constexpr (EMIT) {
    if (count > 0) emit(p0, p3, ps, count - 1);
  }
  if constexpr (TAIL) {
    __syncthreads();
    for (int i = threadIdx.x; i < 4 * count; i += blockDim.x) {
      float v = 0.0f;
      if constexpr (LANES) {
        for (int w = 0; w < 32; ++w) {
          const float* u = part + w * per_block * 16 + 4 * i;
          v += (u[0] + u[1]) + (u[2] + u[3]);  // as the shuffles pair them
        }
      } else {
        for (int w = 0; w < 32; ++w)
          v += part[w * per_block * 4 + i];  // without EMIT: unwritten, timing only
      }
      const int64_t ch = ILV ? 4 * (cg0 + (i / 4) * int64_t{gridDim.x}) + i % 4 : 4 * cg0 + i;
      y[ch] = __float2half(v + static_cast<float>(acc & 1u));
    }
  }
  if constexpr (TRACE) {
    __syncthreads();
    if (threadIdx.x == 0) stamps[2 * blockIdx.x + 1] = global_ns();
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

// Random bits (a hash of the index) in n words: RANDOM=1 fills the weights so, instead of one byte repeated.
__global__ void fill_random(uint32_t* p, int64_t n, uint32_t seed) {
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 0x9E3779B1u ^ seed;
    h ^= h >> 15, h *= 0x85EBCA77u, h ^= h >> 13, h *= 0xC2B2AE3Du, h ^= h >> 16;
    p[i] = h;
  }
}

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
    uint16_t* sct = nullptr;  // the same bytes in the CGM layout
    CK(cudaMalloc(&q, qbytes));
    CK(cudaMalloc(&sc, sbytes));
    CK(cudaMalloc(&sct, sbytes));
    CK(cudaMemset(q, 7, qbytes));
    if (std::getenv("RANDOM")) {
      fill_random<<<1024, 256>>>(reinterpret_cast<uint32_t*>(q), qbytes / 4, 1u);
      CK(cudaDeviceSynchronize());
    }
    CK(cudaMemset(sc, 1, sbytes));
    CK(cudaMemset(sct, 1, sbytes));
    uint4* xv = nullptr;
    __half* y = nullptr;
    CK(cudaMalloc(&xv, k * 2));
    CK(cudaMalloc(&y, n * 2));
    CK(cudaMemset(xv, 0x21, k * 2));
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
      row("lane A=5 scales", tm.median_us([&] { lane_read<5, true><<<blocks, 1024>>>(q, sc, n, k, per); }),
          bytes);
      const auto parts = [&](const char* name, auto kernel, const uint16_t* scales, int floats = 4) {
        const size_t shm = size_t{32} * per * floats * sizeof(float);
        CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shm)));
        row(name, tm.median_us([&] { kernel<<<blocks, 1024, shm>>>(q, scales, xv, y, n, k, per); }), bytes);
      };
      parts("parts 1: + products", lane_parts<1>, sc);
      parts("parts 3: + the recipe", lane_parts<3>, sc);
      parts("parts 7: + the sums a step, late", lane_parts<7>, sc);
      parts("parts 15: + the block's meeting", lane_parts<15>, sc);
      parts("parts 13: all but the recipe", lane_parts<13>, sc);
      parts("parts 9: products and the meeting", lane_parts<9>, sc);
      parts("parts 17: products as two chains", lane_parts<17>, sc);
      parts("parts 29: all but the recipe, two (spills)", lane_parts<29>, sc);
      parts("parts 31: all, two chains (spills)", lane_parts<31>, sc);
      parts("parts 39: 7, sums unmet by four lanes", lane_parts<39>, sc, 16);
      parts("parts 45: 47 without the recipe", lane_parts<45>, sc, 16);
      // Main's layout and walk against CGM and ILV (lane_at), in turn, twice.
      for (int round = 0; round < 2; ++round) {
        row("lane A=3 scales [K/128][N]",
            tm.median_us([&] { lane_read<3, true><<<blocks, 1024>>>(q, sc, n, k, per); }), bytes);
        row("lane A=3 scales [N/4][K/128][4] (CGM)",
            tm.median_us([&] { lane_read<3, true, 4><<<blocks, 1024>>>(q, sct, n, k, per); }), bytes);
        row("lane A=3 scales, column groups dealt out (ILV)",
            tm.median_us([&] { lane_read<3, true, 5><<<blocks, 1024>>>(q, sc, n, k, per); }), bytes);
        row("lane A=3 no scales",
            tm.median_us([&] { lane_read<3, false><<<blocks, 1024>>>(q, sc, n, k, per); }),
            static_cast<double>(qbytes));
        row("lane A=3 no scales, ILV",
            tm.median_us([&] { lane_read<3, false, 5><<<blocks, 1024>>>(q, sc, n, k, per); }),
            static_cast<double>(qbytes));
        parts("parts 0: the kernel's walk alone", lane_parts<0>, sc);
        parts("parts 128: the walk alone, ILV", lane_parts<128>, sc);
        parts("parts 47: the kernel's work, sums unmet", lane_parts<47>, sc, 16);
        parts("parts 175: 47 with ILV", lane_parts<175>, sc, 16);
      }
      if (std::getenv("TRACE")) {  // each block's start and end in one launch after warming
        const auto trace = [&](const char* name, auto kernel) {
          const size_t shm = size_t{32} * per * 16 * sizeof(float);
          CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(shm)));
          tm.median_us([&] { kernel<<<blocks, 1024, shm>>>(q, sc, xv, y, n, k, per); });
          std::vector<unsigned long long> st(2 * blocks);
          CK(cudaMemcpyFromSymbol(st.data(), stamps, st.size() * sizeof(unsigned long long)));
          unsigned long long t0 = ~0ull;
          for (unsigned b = 0; b < blocks; ++b) t0 = std::min(t0, st[2 * b]);
          std::vector<double> s0, e0;
          for (unsigned b = 0; b < blocks; ++b)
            s0.push_back((st[2 * b] - t0) / 1e3), e0.push_back((st[2 * b + 1] - t0) / 1e3);
          std::vector<double> es = e0;
          std::sort(es.begin(), es.end());
          std::printf(
              "  %s: starts within %.2f us; ends min %.2f p10 %.2f median %.2f p90 %.2f max %.2f us\n", name,
              *std::max_element(s0.begin(), s0.end()), es[0], es[es.size() / 10], es[es.size() / 2],
              es[es.size() * 9 / 10], es.back());
          std::printf("   ends by block:");
          for (unsigned b = 0; b < blocks; ++b) std::printf(" %.1f", e0[b]);
          std::printf("\n");
        };
        trace("trace parts 47", lane_parts<47 | 256>);
        trace("trace parts 175 (ILV)", lane_parts<175 | 256>);
      }
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
    CK(cudaFree(sct));
    CK(cudaFree(xv));
    CK(cudaFree(y));
  }
  return 0;
}
