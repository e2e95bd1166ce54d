// Experiment (not part of the product): a W4A16 product for 16 rows of X on Hopper's warpgroup MMA
// where the weights stream through plain per-lane loads (as in walk16_gemv.cu) straight into wgmma's A
// registers and X waits in shared memory as its B operand. Asks whether taking the X loads and half of
// the mma instructions off the lanes (walk16: about 41 us at 28672x8192, X read through L1 for every
// warp) brings 16 rows near the loads' own time (31 us).
//
// Y^T = W X^T: a warpgroup multiplies 64 channels (A, m64) by 16 tokens (B, n16) a k16 chunk. Lane
// (g, q) of warp w loads, of each 128 rows of K (a step), the 16-byte pieces of channels 16 w + g and
// 16 w + g + 8 at tile q / 2, half q % 2 (rows 32 q .. 32 q + 31); word i of a piece holds pairs of
// rows 8 p + 2 i (p = 0 .. 3). The words enter unbiased (lop3 only) and, pair p = 2 h and 2 h + 1 of
// word i, are the A fragment of chunk 2 i + h: slots 2 q, 2 q + 1 hold pair 2 h, slots 2 q + 8, 9 pair
// 2 h + 1. X is staged once a block for its run of K in that order (the high pairs divided by 16) in
// rows of 128 bytes with the 128-byte swizzle, and each token's constant a step (1032 sum x_lo + 1152
// sum x_hi / 16) beside it; a step's sums start from minus the constant and take their channels' scales
// after the step's 8 wgmma.
//
// K is cut into runs of KR rows (X of a run fits in shared memory); the warpgroups of a run share its
// (64-channel tile, step) pairs in order, an equal run each (stream-K), and add their sums into fp32 Y
// at the end of a tile or of their share (atomics: timing and checking only). wg16t instead takes the
// scales in the operands and keeps one set of sums a tile in the tensor cores. The figures are in
// notes/performance.md (forty-third session).
//
//   nvcc -O3 -gencode arch=compute_90a,code=sm_90a -std=c++20 -Xcompiler -fopenmp -I. \
//       -Inotes/experiments -o wg16_gemv notes/experiments/wg16_gemv.cu
//   ./wg16_gemv
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <utility>
#include <vector>

#include "ft_int4.cuh"
#include "kernels/cuda/wgmma.cuh"

constexpr int kM = 16;

__device__ __forceinline__ uint32_t lop3_and_or(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(d) : "r"(a), "r"(b), "r"(c));  // (a & b) | c
  return d;
}
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
using dql::cuda::io::swizzled_desc;  // the product's wgmma plumbing (kernels/cuda/wgmma.cuh)
using dql::cuda::io::wg_commit;
using dql::cuda::io::wg_fence;
using dql::cuda::io::wg_wait;
// d (+)= A (64 x 16) B (16 x 16): d[4 j + e] is channel g + 8 (e / 2) of the warp's 16 and token
// 8 j + 2 q + (e % 2).
__device__ __forceinline__ void wgmma16(float (&d)[8], const uint32_t (&a)[4], uint64_t desc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, "
      "{%8, %9, %10, %11}, %12, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc)
      : "memory");
}
__device__ __forceinline__ void hold(float (&d)[8]) {
#pragma unroll
  for (int i = 0; i < 8; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
template <int R>
__device__ __forceinline__ void hold(uint32_t (&f)[R][4]) {
#pragma unroll
  for (int c = 0; c < R; ++c)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(f[c][e])::"memory");
}

// The byte of token t, k index kk (0 .. 63) of a 64-column tile: rows of 128 bytes, 16-byte pieces
// swizzled by the row's place in its 8-row atom.
__device__ __forceinline__ int xoff(int t, int kk) {
  return (t / 8) * 1024 + (t % 8) * 128 + (((kk / 8) ^ (t % 8)) * 16) + (kk % 8) * 2;
}

// X of a run (rows k0 .. k0 + KR) in the walk's order into the block's shared memory (the high pairs
// divided by 16), and each token's constant a step: a thread takes 8 rows of one token a time, a
// half-warp the 128 rows of one token's step (whose constant it adds up).
// UNBIASED false: X as it is and no constants (for words converted to q - 8 and scaled in the operand).
template <bool UNBIASED = true, int kBatch = 8>
__device__ __forceinline__ void stage_x(unsigned char* smem, float* corr, const __half* __restrict__ X, int K,
                                        int k0, int KR) {
  // KR / 8 is a power of two and kM KR / 8 a multiple of kBatch times the block's threads (the host
  // checks), so that no lane leaves the loop early and no division is needed
  const int tid = threadIdx.x, lane = tid % 32, lg = __ffs(KR / 8) - 1;
  for (int idx0 = tid; idx0 < kM * (KR / 8); idx0 += kBatch * blockDim.x) {
    uint4 v[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int idx = idx0 + b * blockDim.x;
      v[b] = *reinterpret_cast<const uint4*>(X + int64_t{idx >> lg} * K + k0 + 8 * (idx & (KR / 8 - 1)));
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int idx = idx0 + b * blockDim.x;
      const int t = idx >> lg, r8 = idx & (KR / 8 - 1);
      const int st = r8 / 16, q = (r8 % 16) / 4, p = r8 % 4;  // rows 128 st + 32 q + 8 p + 0 .. 7
      const uint32_t w[4] = {v[b].x, v[b].y, v[b].z, v[b].w};
      float sum = 0.0f;
#pragma unroll
      for (int i = 0; i < 4; ++i) {  // rows 2 i, 2 i + 1 of the 8: pair p of word i
        __half2 h = *reinterpret_cast<const __half2*>(&w[i]);
        if (UNBIASED && p % 2) h = __hmul2(h, __float2half2_rn(0.0625f));
        const float2 f = __half22float2(h);
        sum += f.x + f.y;
        const int c = 2 * i + p / 2, kk = 16 * (c % 4) + (p % 2) * 8 + 2 * q;
        *reinterpret_cast<__half2*>(smem + (2 * st + c / 4) * 2048 + xoff(t, kk)) = h;
      }
      if constexpr (UNBIASED) {
        sum *= p % 2 ? 1152.0f : 1032.0f;
#pragma unroll
        for (int o = 1; o < 16; o *= 2) sum += __shfl_xor_sync(0xFFFFFFFFu, sum, o);
        if (lane % 16 == 0) corr[st * kM + t] = sum;
      }
    }
  }
}

// The lane's A fragments of one step: chunk 2 i + h from word i of channels g (wa) and g + 8 (wb).
__device__ __forceinline__ void step_frags(const uint4 (&v)[2], uint32_t (&a)[8][4]) {
  const uint32_t wa[4] = {v[0].x, v[0].y, v[0].z, v[0].w}, wb[4] = {v[1].x, v[1].y, v[1].z, v[1].w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint32_t a8 = wa[i] >> 8, b8 = wb[i] >> 8;
    a[2 * i][0] = lop3_and_or(wa[i], 0x000F000Fu, 0x64006400u);
    a[2 * i][1] = lop3_and_or(wb[i], 0x000F000Fu, 0x64006400u);
    a[2 * i][2] = lop3_and_or(wa[i], 0x00F000F0u, 0x64006400u);
    a[2 * i][3] = lop3_and_or(wb[i], 0x00F000F0u, 0x64006400u);
    a[2 * i + 1][0] = lop3_and_or(a8, 0x000F000Fu, 0x64006400u);
    a[2 * i + 1][1] = lop3_and_or(b8, 0x000F000Fu, 0x64006400u);
    a[2 * i + 1][2] = lop3_and_or(a8, 0x00F000F0u, 0x64006400u);
    a[2 * i + 1][3] = lop3_and_or(b8, 0x00F000F0u, 0x64006400u);
  }
}

// A step's 8 wgmma on sums that start from minus the tokens' constants (step `st` of the run).
__device__ __forceinline__ void step_mma(const uint32_t (&a)[8][4], float (&d)[8], const float* corr, int st,
                                         uint32_t xbase) {
  const int q = threadIdx.x % 4;
  const float2 c0 = *reinterpret_cast<const float2*>(corr + st * kM + 2 * q);
  const float2 c1 = *reinterpret_cast<const float2*>(corr + st * kM + 8 + 2 * q);
  d[0] = -c0.x, d[1] = -c0.y, d[2] = -c0.x, d[3] = -c0.y;
  d[4] = -c1.x, d[5] = -c1.y, d[6] = -c1.x, d[7] = -c1.y;
  const uint32_t tb = xbase + st * 4096;  // the step's two 64-column tiles
  wg_fence();
#pragma unroll
  for (int c = 0; c < 8; ++c) wgmma16(d, a[c], swizzled_desc(tb + (c / 4) * 2048 + 32 * (c % 4)));
  wg_commit();
}

// WG warpgroups a block, one block a multiprocessor, AHEAD steps of loads in flight beyond the one in use.
// MODE 0: the product, each step's products waited for at once; 1: the weights' and scales' loads only
// (after X's staging); 2: the product, a step's products waited for after the next step's are issued;
// 3: X's staging only.
template <int WG, int AHEAD, int MODE>
__global__ void __launch_bounds__(WG * 128, 1)
    wg16(const uint4* __restrict__ Wq, const __half* __restrict__ X, const __half* __restrict__ S,
         float* __restrict__ Y, int N, int K, int runs, int KR) {
  constexpr int R = AHEAD + 1;
  extern __shared__ __align__(1024) unsigned char smem[];
  float* corr = reinterpret_cast<float*>(smem + (KR / 64) * 2048);  // [step][token]
  const int run = blockIdx.x % runs, bir = blockIdx.x / runs, bpr = gridDim.x / runs;
  const int k0 = run * KR, nsteps = KR / 128;
  const int tid = threadIdx.x;
  const int wgi = bir * WG + tid / 128, nwg = bpr * WG;
  const int warp = (tid / 32) % 4, lane = tid % 32, g = lane / 4, q = lane % 4;
  const int tiles = N / 64;
  const int total = tiles * nsteps;
  const int u0 = int(int64_t{wgi} * total / nwg), u1 = int(int64_t{wgi + 1} * total / nwg);
  // the share's length, broadcast from lane 0 so that the compiler sees it the same in every lane
  // (a loop of wgmma whose trip count may differ between lanes would have its products serialized)
  const int n = __shfl_sync(0xFFFFFFFFu, u1 - u0, 0);
  const int64_t stride = K / 8;  // pieces a column group
  const int ks0 = k0 / 128;      // the run's first step of K
  // the pieces of channel 64 tile + 16 warp + g at step s of the run (channel + 8: two groups on)
  const auto wptr = [&](int tile, int s) {
    const int ch = 64 * tile + 16 * warp + g;
    return Wq + int64_t{ch / 4} * stride + 16 * int64_t{ks0 + s} + 8 * (q / 2) + 2 * (ch % 4) + q % 2;
  };
  const auto sptr = [&](int tile, int s) { return S + int64_t{ks0 + s} * N + 64 * tile + 16 * warp + g; };

  int lt = u0 / nsteps, ls = u0 % nsteps, ct = lt, cs = ls;
  uint4 bv[R][2];
  __half bs[R][2];
  float acc[8] = {};
  unsigned xo = 0;
  const uint32_t xbase = smem_u32(smem);

  const auto load = [&](int slot) {
    const uint4* p = wptr(lt, ls);
    bv[slot][0] = ldnc(p);
    bv[slot][1] = ldnc(p + 2 * stride);
    const __half* sp = sptr(lt, ls);
    bs[slot][0] = sp[0];
    bs[slot][1] = sp[8];
    if (++ls == nsteps) ls = 0, ++lt;
  };
  const auto flush = [&] {
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const int ch = 64 * ct + 16 * warp + g + 8 * ((e % 4) / 2), tok = 8 * (e / 4) + 2 * q + e % 2;
      atomicAdd(Y + int64_t{tok} * N + ch, acc[e]);
      acc[e] = 0.0f;
    }
  };
  const auto body = [&](const uint4(&v)[2], const __half(&sc)[2], bool last) {
    if constexpr (MODE == 1) {
      xo ^= v[0].x ^ v[0].y ^ v[0].z ^ v[0].w ^ v[1].x ^ v[1].y ^ v[1].z ^ v[1].w ^ __half_as_ushort(sc[0]) ^
            __half_as_ushort(sc[1]);
    } else {
      uint32_t a[8][4];
      float d[8];
      step_frags(v, a);
      step_mma(a, d, corr, cs, xbase);
      wg_wait<0>();
      hold(a);
      hold(d);
      const float s0 = __half2float(sc[0]), s1 = __half2float(sc[1]);
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[e] = fmaf(d[e], (e % 4) / 2 ? s1 : s0, acc[e]);
    }
    const bool end = ++cs == nsteps;
    if constexpr (MODE == 0) {
      if (end || last) flush();
    }
    if (end) cs = 0, ++ct;
  };

#pragma unroll
  for (int d = 0; d < AHEAD; ++d)
    if (d < n) load(d);
  stage_x(smem, corr, X, K, k0, KR);
  __syncthreads();
  if constexpr (MODE == 3) {  // the staging alone (and the first loads)
    if (corr[tid % (nsteps * kM)] == 1.2345f) sink = 1;
    return;
  }
  if constexpr (MODE == 2) {
    // A step's products are waited for only after the next step's are issued: two sets of fragments
    // and sums. No wgmma, fence, commit or wait sits in a branch (the compiler would serialize the
    // products): the run is rounded up to whole rounds of steps whose tail multiplies stale words and
    // is dropped (its scales zero, no cursor moved).
    static_assert(R % 2 == 0, "the two sets alternate within a round");
    uint32_t A[2][8][4];
    float D[2][8] = {};
    __half sp[2] = {};  // the scales of the step whose products are in flight
    int is = cs;        // the step of the run whose products are issued next
    // the products of step j (of the share) are in d; outside the share the scales are zero (the sums
    // are read outside any branch, which would serialize the products)
    const auto epi = [&](float(&d)[8], int j) {
      const float s0 = __half2float(sp[0]), s1 = __half2float(sp[1]);
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[e] = fmaf(d[e], (e % 4) / 2 ? s1 : s0, acc[e]);
      if (j < 0 || j >= n) return;
      const bool end = ++cs == nsteps;
      if (end || j == n - 1) flush();
      if (end) cs = 0, ++ct;
    };
    const int nr = (n + R - 1) / R * R;
    for (int j0 = 0; j0 < nr; j0 += R) {
      [&]<int... I>(std::integer_sequence<int, I...>) {
        (
            [&] {
              constexpr int d = I;
              const int j = j0 + d;
              if (j + AHEAD < n) load((d + AHEAD) % R);
              step_frags(bv[d], A[d % 2]);
              step_mma(A[d % 2], D[d % 2], corr, is, xbase);
              is = is + 1 == nsteps ? 0 : is + 1;
              wg_wait<1>();
              hold(A[(d + 1) % 2]);
              hold(D[(d + 1) % 2]);
              epi(D[(d + 1) % 2], j - 1);
              const bool real = j < n;
              sp[0] = real ? bs[d][0] : __half{}, sp[1] = real ? bs[d][1] : __half{};
            }(),
            ...);
      }
      (std::make_integer_sequence<int, R>{});
    }
    wg_wait<0>();
    hold(A[0]), hold(A[1]), hold(D[0]), hold(D[1]);
    epi(D[1], nr - 1);
    return;
  }
  if (n <= 0) return;
  int j0 = 0;
  for (; j0 + 2 * AHEAD + 1 <= n; j0 += R) {
#pragma unroll
    for (int d = 0; d < R; ++d) {
      load((d + AHEAD) % R);
      body(bv[d], bs[d], false);
    }
  }
  for (; j0 < n; j0 += R) {
#pragma unroll
    for (int d = 0; d < R; ++d) {
      if (j0 + d + AHEAD < n) load((d + AHEAD) % R);
      if (j0 + d < n) body(bv[d], bs[d], j0 + d == n - 1);
    }
  }
  if (xo == 0x12345678u) sink = xo;
}

// The same product with the scales in the operands, so that the sums never leave the tensor cores
// inside a tile: each word converted to q - 8 exactly (the recipe's subtraction and fused multiply-add)
// and multiplied by its channel's scale in fp16 (q s rounded once, as the Hopper GEMM does), one set of
// sums over a tile's run of K, read only at the tile's end (ptxas then needs no waits of its own), two
// sets of fragments so that a step's products run while the next step is converted. Runs of KR rows,
// whole 64-channel tiles a warpgroup (the host picks runs that share them evenly), AHEAD steps of loads
// in flight (AHEAD + 1 divides the steps of a run).
__device__ __forceinline__ uint32_t scaled_lo(uint32_t w, uint32_t s2) {
  const __half2 h = __hsub2(*reinterpret_cast<const __half2*>(&w),
                            __half2(__ushort_as_half(0x6408), __ushort_as_half(0x6408)));
  const __half2 r = __hmul2(h, *reinterpret_cast<const __half2*>(&s2));
  return *reinterpret_cast<const uint32_t*>(&r);
}
__device__ __forceinline__ uint32_t scaled_hi(uint32_t w, uint32_t s2) {
  const __half2 h = __hfma2(*reinterpret_cast<const __half2*>(&w),
                            __half2(__ushort_as_half(0x2C00), __ushort_as_half(0x2C00)),
                            __half2(__ushort_as_half(0xD480), __ushort_as_half(0xD480)));
  const __half2 r = __hmul2(h, *reinterpret_cast<const __half2*>(&s2));
  return *reinterpret_cast<const uint32_t*>(&r);
}
template <int AHEAD, int STEPS>
__global__ void __launch_bounds__(512, 1)
    wg16t(const uint4* __restrict__ Wq, const __half* __restrict__ X, const __half* __restrict__ S,
          float* __restrict__ Y, int N, int K, int runs, int KR) {
  constexpr int R = AHEAD + 1;
  static_assert(STEPS % R == 0 && STEPS % 2 == 0, "the ring's slots and the fragment sets repeat each tile");
  extern __shared__ __align__(1024) unsigned char smem[];
  const int run = blockIdx.x % runs, bir = blockIdx.x / runs, bpr = gridDim.x / runs;
  const int k0 = run * KR;
  const int tid = threadIdx.x;
  const int wgi = bir * 4 + tid / 128, nwg = bpr * 4;
  const int warp = (tid / 32) % 4, lane = tid % 32, g = lane / 4, q = lane % 4;
  const int tiles = N / 64;
  const int per = __shfl_sync(0xFFFFFFFFu, tiles / nwg, 0);  // tiles a warpgroup (the host checks evenness)
  const int t0 = wgi * per;
  const int64_t stride = K / 8;
  const int ks0 = k0 / 128;
  const auto wptr = [&](int tile) {
    const int ch = 64 * tile + 16 * warp + g;
    return Wq + int64_t{ch / 4} * stride + 16 * int64_t{ks0} + 8 * (q / 2) + 2 * (ch % 4) + q % 2;
  };
  const auto sptr = [&](int tile) { return S + int64_t{ks0} * N + 64 * tile + 16 * warp + g; };
  uint4 bv[R][2];
  __half bs[R][2];
  int lt = t0, ls = 0;
  const uint4* pw = wptr(lt);
  const __half* ps = sptr(lt);
  const auto load = [&](int slot) {
    bv[slot][0] = ldnc(pw);
    bv[slot][1] = ldnc(pw + 2 * stride);
    bs[slot][0] = ps[0];
    bs[slot][1] = ps[8];
    if (++ls == STEPS) {
      ls = 0, ++lt;
      pw = wptr(lt), ps = sptr(lt);
    } else {
      pw += 16, ps += N;
    }
  };
  const int total = per * STEPS;
#pragma unroll
  for (int d = 0; d < AHEAD; ++d) load(d);
  stage_x<false, 4>(smem, nullptr, X, K, k0, KR);
  __syncthreads();
  const uint32_t xbase = smem_u32(smem);
  uint32_t A[2][8][4];
  float D[8];
  for (int tile = 0; tile < per; ++tile) {
#pragma unroll
    for (int e = 0; e < 8; ++e) D[e] = 0.0f;
    [&]<int... I>(std::integer_sequence<int, I...>) {
      (
          [&] {
            constexpr int d = I;
            const int j = tile * STEPS + d;
            if (j + AHEAD < total) load((d + AHEAD) % R);
            const uint4(&v)[2] = bv[d % R];
            const __half2 sa = __half2half2(bs[d % R][0]), sb = __half2half2(bs[d % R][1]);
            const uint32_t s2a = *reinterpret_cast<const uint32_t*>(&sa),
                           s2b = *reinterpret_cast<const uint32_t*>(&sb);
            const uint32_t wa[4] = {v[0].x, v[0].y, v[0].z, v[0].w}, wb[4] = {v[1].x, v[1].y, v[1].z, v[1].w};
            uint32_t(&a)[8][4] = A[d % 2];
#pragma unroll
            for (int i = 0; i < 4; ++i) {
              const uint32_t a8 = wa[i] >> 8, b8 = wb[i] >> 8;
              a[2 * i][0] = scaled_lo(lop3_and_or(wa[i], 0x000F000Fu, 0x64006400u), s2a);
              a[2 * i][1] = scaled_lo(lop3_and_or(wb[i], 0x000F000Fu, 0x64006400u), s2b);
              a[2 * i][2] = scaled_hi(lop3_and_or(wa[i], 0x00F000F0u, 0x64006400u), s2a);
              a[2 * i][3] = scaled_hi(lop3_and_or(wb[i], 0x00F000F0u, 0x64006400u), s2b);
              a[2 * i + 1][0] = scaled_lo(lop3_and_or(a8, 0x000F000Fu, 0x64006400u), s2a);
              a[2 * i + 1][1] = scaled_lo(lop3_and_or(b8, 0x000F000Fu, 0x64006400u), s2b);
              a[2 * i + 1][2] = scaled_hi(lop3_and_or(a8, 0x00F000F0u, 0x64006400u), s2a);
              a[2 * i + 1][3] = scaled_hi(lop3_and_or(b8, 0x00F000F0u, 0x64006400u), s2b);
            }
            const uint32_t tb = xbase + d * 4096;
            wg_fence();
#pragma unroll
            for (int c = 0; c < 8; ++c) wgmma16(D, a[c], swizzled_desc(tb + (c / 4) * 2048 + 32 * (c % 4)));
            wg_commit();
            wg_wait<1>();
            hold(A[(d + 1) % 2]);
          }(),
          ...);
    }
    (std::make_integer_sequence<int, STEPS>{});
    wg_wait<0>();
    hold(A[0]), hold(A[1]), hold(D);
    const int tl = t0 + tile;
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const int ch = 64 * tl + 16 * warp + g + 8 * ((e % 4) / 2), tok = 8 * (e / 4) + 2 * q + e % 2;
      atomicAdd(Y + int64_t{tok} * N + ch, D[e]);
    }
  }
}

// Nothing: the launch of a grid of blocks with wg16's shared memory, for scale.
template <int WG>
__global__ void __launch_bounds__(WG * 128, 1)
    wg16_empty(const uint4*, const __half*, const __half*, float*, int, int, int, int) {
  if (threadIdx.x == 1000) sink = 1;
}

struct ShapeRuns {  // a shape and the runs of K a column tile is cut into
  int n, k, runs;
};

int main() {
  Lab lab;
  auto& [prop, tm, copy_gbps] = lab;
  const ShapeRuns shapes[] = {{28672, 8192, 2}, {8192, 28672, 7}, {8192, 8192, 2}};
  for (const ShapeRuns& sh : shapes) {
    const int N = sh.n, K = sh.k, G = 128;
    const Int4Problem pb = int4_problem(kM, N, K, G);
    const Int4OnDevice dev(pb, kM, N);
    const auto& [dW, dS, dX, dY, bytes] = dev;
    std::printf("%dx%d M=16: floor %.1f us, runs of %d rows\n", N, K, bytes / copy_gbps / 1e3, K / sh.runs);
    // `runs` runs of K, one block of `threads` a multiprocessor (as many as share the runs evenly)
    const auto measure = [&](auto kernel, const char* name, int threads, int runs, size_t smem, bool check) {
      const int KR = K / runs;
      CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
      const dim3 grid(prop.multiProcessorCount / runs * runs);
      const auto launch = [&] {
        kernel<<<grid, threads, smem>>>(reinterpret_cast<const uint4*>(dW.p), dX.p, dS.p, dY.p, N, K, runs,
                                        KR);
        CK(cudaGetLastError());
      };
      const double err = check ? fp16_rel_err(outputs_once(launch, dY.p, dY.n), pb.ref) : -1.0;
      const double us = tm.median_us(launch);
      std::printf("  %-40s %5u blocks %8.2f us %6.1f%% of copy", name, grid.x, us,
                  100.0 * bytes / (us * 1e3) / copy_gbps);
      if (check) std::printf("  rel err %.2e", err);
      std::printf("\n");
    };
    // wg16: the shape's runs of K (X and the constants of a run in shared memory)
    const auto run = [&](auto kernel, const char* name, int WB, bool check) {
      const int KR = K / sh.runs;
      if ((KR / 8 & (KR / 8 - 1)) != 0 || kM * (KR / 8) % (8 * WB * 128) != 0) {
        std::printf("  %-40s runs of %d rows do not stage evenly\n", name, KR);
        return;
      }
      measure(kernel, name, WB * 128, sh.runs, size_t(KR / 64) * 2048 + size_t(KR / 128) * kM * 4, check);
    };
    // wg16t, the scales in the operands: runs of 1024 rows, whole tiles a warpgroup
    const auto run_t = [&](auto kernel, const char* name, bool check) {
      const int KR = 1024, runs = K / KR, bpr = prop.multiProcessorCount / runs;
      if (bpr == 0 || (N / 64) % (4 * bpr) != 0) {
        std::printf("  %-40s the tiles do not share evenly\n", name);
        return;
      }
      measure(kernel, name, 512, runs, size_t(KR / 64) * 2048, check);
    };
    for (int round = 0; round < 2; ++round) {
      const bool ck = round == 0;
      run_t(wg16t<1, 8>, "scales in the operands, 1 ahead", ck);
      run_t(wg16t<3, 8>, "scales in the operands, 3 ahead", ck);
      run(wg16_empty<4>, "empty, the same shared memory: 4 warpgroups", 4, false);
      run(wg16<4, 2, 3>, "staging only: 4 warpgroups", 4, false);
      run(wg16<4, 2, 1>, "loads only: 4 warpgroups, 2 ahead", 4, false);
      run(wg16<4, 4, 1>, "loads only: 4 warpgroups, 4 ahead", 4, false);
      run(wg16<4, 6, 1>, "loads only: 4 warpgroups, 6 ahead", 4, false);
      run(wg16<4, 2, 0>, "4 warpgroups, 2 ahead, each step waited", 4, ck);
      run(wg16<4, 3, 0>, "4 warpgroups, 3 ahead, each step waited", 4, ck);
      run(wg16<4, 4, 0>, "4 warpgroups, 4 ahead, each step waited", 4, ck);
      run(wg16<4, 1, 2>, "4 warpgroups, 1 ahead, products overlapped", 4, ck);
      run(wg16<4, 3, 2>, "4 warpgroups, 3 ahead, products overlapped", 4, ck);
    }
  }
  return 0;
}
