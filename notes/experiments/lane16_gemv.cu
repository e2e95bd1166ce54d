// Experiment (not part of the product): a W4A16 product for up to 16 rows of X on the tensor cores,
// each lane holding its X in registers for the whole kernel while its warp walks across the
// mixed-GEMM layout's column groups, as the one-row CUDA-core kernel does (ft_lane_kernel). Asks
// whether plain 16-byte loads kept in flight by many warps stream the weights at 16 rows faster than
// the product's copy-engine ring (50.3 us, 56.7% of the copy at 28672x8192 on the H200, bench).
//
// X is the A operand of mma.m16n8k16 (16 tokens as rows), the weights the B operand (8 channels:
// two column groups). A warp owns SG groups of 128 rows of K (a slab). Lane (g, q) = (lane / 4,
// lane % 4) takes channel g of the two column groups and, of each group of 128 rows, tile q / 2 and
// half q % 2: one 16-byte piece (32 rows) of the layout, the same rows for every g, so the 8 lanes
// of a q hold the same k for the fragment slots they fill. Its X (tokens g and g + 8 at those 32
// rows, 32 registers a group) never changes. A step converts the lane's 4 words by the magic-number
// recipe and issues 8 mma a group; the group's 16 x 8 sums take their scales (channels 2q, 2q + 1)
// once. The warps of a block meet in shared memory every R steps (a double-buffered ring of partial
// sums, one barrier a round); the blocks of a column range in fp32 Y by atomics (FIN 0, timing) or
// as the product's finish_tile (FIN 1: a workspace, a fence, an arrival counter, the last block
// writes fp16 Y and leaves the workspace zero).
//
//   nvcc -O3 -arch=sm_90 -std=c++20 -Xcompiler -fopenmp -I. -Inotes/experiments -o lane16_gemv \
//       notes/experiments/lane16_gemv.cu
//   ./lane16_gemv
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "ft_int4.cuh"
#include "kernels/gemv/gemv.hpp"

constexpr int kM = 16;

__device__ __forceinline__ void mma16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                         uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// W warps a block, SG groups of 128 rows a warp, AHEAD steps of loads in flight beyond the one in use,
// R steps a round of the shared-memory meeting. MODE 0: the product; 1: loads only; 2: no meeting
// (the sums folded into a sink); 3: the words straight into the mma, no conversion (wrong values: to
// time the tensor cores). CH: independent mma chains a group (the words of even and odd index).
// NB 0: the warps meet at a block barrier every R steps (two buffers); NB > 0: no barrier, NB buffers,
// the last warp to finish a round (a shared-memory counter) adds the round up alone, and a warp about
// to reuse a buffer first waits until its previous round has been added up (a flag).
template <int W, int SG, int AHEAD, int R, int MINB, int FIN, int MODE = 0, int CH = 1, int NB = 0>
__global__ void __launch_bounds__(W * 32, MINB)
    lane16(const uint4* __restrict__ Wq, const __half* __restrict__ X, const __half* __restrict__ S,
           float* __restrict__ Y, int N, int K, int G, int pairs_per_block) {
  static_assert(NB == 0 || FIN == 0, "the last warp of a round adds into fp32 Y only");
  extern __shared__ float4 part[];  // [NB or 2][R][W][32]
  __shared__ int arrived[NB > 0 ? NB : 1];
  __shared__ volatile int reduced[NB > 0 ? NB : 1];  // rounds added up, by buffer
  if constexpr (NB > 0) {
    if (threadIdx.x < NB) arrived[threadIdx.x] = 0, reduced[threadIdx.x] = 0;
    __syncthreads();
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, q = lane % 4;
  const int slab = blockIdx.y * W + warp;
  const int64_t kslab = int64_t{slab} * SG * 128;
  const int pair0 = blockIdx.x * pairs_per_block;
  const int count = min(pairs_per_block, N / 8 - pair0);
  uint32_t xa[SG][16], xb[SG][16];
#pragma unroll
  for (int s = 0; s < SG; ++s) {
    const int64_t k0 = kslab + s * 128 + (q / 2) * 64 + (q % 2) * 32;
    const uint4* pa = reinterpret_cast<const uint4*>(X + g * int64_t{K} + k0);
    const uint4* pb = reinterpret_cast<const uint4*>(X + (g + 8) * int64_t{K} + k0);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint4 va = __ldg(pa + i), vb = __ldg(pb + i);
      xa[s][4 * i] = va.x, xa[s][4 * i + 1] = va.y, xa[s][4 * i + 2] = va.z, xa[s][4 * i + 3] = va.w;
      xb[s][4 * i] = vb.x, xb[s][4 * i + 1] = vb.y, xb[s][4 * i + 2] = vb.z, xb[s][4 * i + 3] = vb.w;
    }
  }
  const int64_t stride = K / 8;  // pieces a column group
  const uint4* p = Wq + (2 * int64_t{pair0} + g / 4) * stride + 16 * int64_t{slab} * SG + 8 * (q / 2) +
                   2 * (g % 4) + q % 2;
  // the scales of the slab's groups: rows srow apart (0 where one group spans the slab)
  const uint32_t* sp = reinterpret_cast<const uint32_t*>(S + (kslab / G) * N + 8 * pair0 + 2 * q);
  const int srow = (128 / G) * N / 2;
  const int64_t pstep = 2 * stride;
  float* pf = reinterpret_cast<float*>(part);
  unsigned xo = 0;

  const auto reduce = [&](int round, int rows) {  // rows: steps of the round that exist
    const int buf = round % 2;
    for (int o = threadIdx.x; o < rows * 128; o += W * 32) {
      const int r = o / 128, e = o % 128;
      float v = 0.0f;
#pragma unroll 8
      for (int w = 0; w < W; ++w) v += pf[((buf * R + r) * W + w) * 128 + e];
      const int ln = e / 4, el = e % 4;
      const int tok = ln / 4 + 8 * (el / 2);
      const int64_t ch = 8 * int64_t{pair0 + round * R + r} + 2 * (ln % 4) + el % 2;
      if constexpr (FIN == 0) {
        atomicAdd(Y + tok * int64_t{N} + ch, v);
      } else {
        if (gridDim.y == 1)
          g_yh[tok * int64_t{N} + ch] = __float2half(v);
        else
          atomicAdd(g_sums + tok * int64_t{N} + ch, v);
      }
    }
  };

  // The warp's part of round `round` (rows steps) is written; the last warp to arrive adds it up: one
  // item a lane a step (token, 4 channels), a vector atomic into Y.
  const auto arrive = [&](int round, int rows) {
    const int buf = round % (NB > 0 ? NB : 1);
    __threadfence_block();
    __syncwarp();
    int last = 0;
    if (lane == 0) last = atomicAdd(&arrived[buf], 1) == W - 1;
    last = __shfl_sync(0xFFFFFFFFu, last, 0);
    if (!last) return;
    __threadfence_block();
    const int tok = lane / 2, cq = lane % 2;
    const int src = 4 * (tok % 8) + 2 * cq, e = 2 * (tok / 8);
    for (int r = 0; r < rows; ++r) {
      float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      const float* base = pf + ((buf * R + r) * W) * 128;
#pragma unroll 4
      for (int w = 0; w < W; ++w) {
        const float2 a = *reinterpret_cast<const float2*>(base + w * 128 + src * 4 + e);
        const float2 b = *reinterpret_cast<const float2*>(base + w * 128 + src * 4 + 4 + e);
        v.x += a.x, v.y += a.y, v.z += b.x, v.w += b.y;
      }
      const int64_t ch = 8 * int64_t{pair0 + round * R + r} + 4 * cq;
      atomicAdd(reinterpret_cast<float4*>(Y + tok * int64_t{N} + ch), v);
    }
    __syncwarp();
    if (lane == 0) {
      arrived[buf] = 0;
      __threadfence_block();
      reduced[buf] = round + 1;  // the buffer's rounds up to this one are added up
    }
  };

  const auto body = [&](const uint4(&v)[SG], const uint32_t(&sc)[SG], int j) {
    if constexpr (MODE == 1) {
#pragma unroll
      for (int s = 0; s < SG; ++s) xo ^= v[s].x ^ v[s].y ^ v[s].z ^ v[s].w ^ sc[s];
      return;
    }
    float o[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int s = 0; s < SG; ++s) {
      const uint32_t w[4] = {v[s].x, v[s].y, v[s].z, v[s].w};
      float dd[CH][4] = {};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        uint32_t pr[4];
        if constexpr (MODE == 3) {
          pr[0] = pr[1] = pr[2] = pr[3] = w[i];
        } else {
          dql::gemv::ft_word_pairs<false>(4, dql::recipes::OutType::F16, w[i], pr);
        }
        // pair p of word i: rows 8p + 2i, + 1 of the 32, X pair 4p + i
        mma16816(dd[i % CH], xa[s][i], xb[s][i], xa[s][4 + i], xb[s][4 + i], pr[0], pr[1]);
        mma16816(dd[i % CH], xa[s][8 + i], xb[s][8 + i], xa[s][12 + i], xb[s][12 + i], pr[2], pr[3]);
      }
      float d[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) d[e] = CH == 1 ? dd[0][e] : dd[0][e] + dd[CH - 1][e];
      const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&sc[s]));
      o[0] = fmaf(d[0], f.x, o[0]);
      o[1] = fmaf(d[1], f.y, o[1]);
      o[2] = fmaf(d[2], f.x, o[2]);
      o[3] = fmaf(d[3], f.y, o[3]);
    }
    if constexpr (MODE == 2) {
      xo ^= __float_as_uint(o[0] + o[1] + o[2] + o[3]);
      return;
    }
    if constexpr (NB == 0) {
      const int r = j % R, buf = (j / R) % 2;
      part[((buf * R + r) * W + warp) * 32 + lane] = make_float4(o[0], o[1], o[2], o[3]);
      if (r == R - 1) {
        __syncthreads();
        reduce(j / R, R);
      }
    } else {
      const int r = j % R, round = j / R, buf = round % NB;
      if (r == 0 && round >= NB) {
        while (reduced[buf] < round - NB + 1) {
        }
        __syncwarp();
      }
      part[((buf * R + r) * W + warp) * 32 + lane] = make_float4(o[0], o[1], o[2], o[3]);
      if (r == R - 1 || j == count - 1) arrive(round, r + 1);
    }
  };

  uint4 bv[AHEAD + 1][SG];
  uint32_t bs[AHEAD + 1][SG];
  const auto load = [&](int slot) {
#pragma unroll
    for (int s = 0; s < SG; ++s) {
      bv[slot][s] = ldnc(p + 16 * s);
      bs[slot][s] = __ldg(sp + s * srow);
    }
    sp += 4;
    p += pstep;
  };
  const auto skip = [&] {
    sp += 4;
    p += pstep;
  };
#pragma unroll
  for (int d = 0; d < AHEAD; ++d) {
    if (d < count)
      load(d);
    else
      skip();
  }
  int j0 = 0;
  for (; j0 + 2 * AHEAD + 1 <= count; j0 += AHEAD + 1) {
#pragma unroll
    for (int d = 0; d <= AHEAD; ++d) {
      load((d + AHEAD) % (AHEAD + 1));
      body(bv[d], bs[d], j0 + d);
    }
  }
  for (; j0 < count; j0 += AHEAD + 1) {
#pragma unroll
    for (int d = 0; d <= AHEAD; ++d) {
      if (j0 + d + AHEAD < count)
        load((d + AHEAD) % (AHEAD + 1));
      else
        skip();
      if (j0 + d < count) body(bv[d], bs[d], j0 + d);
    }
  }
  if constexpr (MODE == 1 || MODE == 2) {
    if (xo == 0x12345678u) sink = xo;
    return;
  }
  if (NB == 0 && count % R != 0) {
    __syncthreads();
    reduce(count / R, count % R);
  }
  if constexpr (FIN == 1) {
    if (gridDim.y == 1) return;
    settle_range(blockIdx.x, count * 8 * kM, [&](int i) {
      const int tok = i / (count * 8);
      return tok * int64_t{N} + 8 * int64_t{pair0} + i % (count * 8);
    });
  }
}

int main() {
  Lab lab;
  auto& [prop, tm, copy_gbps] = lab;
  const Shape shapes[] = {{28672, 8192}, {8192, 28672}, {8192, 8192}};
  for (const Shape& sh : shapes) {
    const int N = sh.n, K = sh.k, G = 128;
    const Int4Problem pb = int4_problem(kM, N, K, G);
    const Int4OnDevice dev(pb, kM, N);
    const auto& [dW, dS, dX, dY, bytes] = dev;
    const Meeting meeting(size_t(kM) * N, N);
    std::printf("%dx%d M=16: floor %.1f us\n", N, K, bytes / copy_gbps / 1e3);
    const auto run = [&](auto kernel, const char* name, int W, int SG, int R, int fin, bool check,
                         int nb = 2) {
      const size_t smem = size_t(nb) * R * W * 32 * 16;
      CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
      const int slabs = K / (SG * 128);
      const int ys = (slabs + W - 1) / W;
      if (slabs % W != 0) {
        std::printf("  %-40s K is not whole blocks\n", name);
        return;
      }
      int per = 0;
      CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kernel, W * 32, smem));
      const int pairs = N / 8;
      const int xs_max = std::max(1, per * prop.multiProcessorCount / ys);
      const int ppb = (pairs + xs_max - 1) / xs_max;
      const dim3 grid((pairs + ppb - 1) / ppb, ys);
      const auto launch = [&] {
        kernel<<<grid, W * 32, smem>>>(reinterpret_cast<const uint4*>(dW.p), dX.p, dS.p, dY.p, N, K, G, ppb);
        CK(cudaGetLastError());
      };
      const double err =
          check ? fp16_rel_err(outputs_once(launch, dY.p, dY.n, fin == 0 ? nullptr : meeting.yh.p), pb.ref)
                : -1.0;
      const double us = tm.median_us(launch);
      std::printf("  %-40s %d blocks/SM %5u blocks %3d pairs %8.2f us %6.1f%% of copy", name, per,
                  grid.x * grid.y, ppb, us, 100.0 * bytes / (us * 1e3) / copy_gbps);
      if (check) std::printf("  rel err %.2e", err);
      std::printf("\n");
    };
    for (int round = 0; round < 2; ++round) {
      const bool ck = round == 0;
      // the rows of notes/performance.md's table (forty-second session)
      run(lane16<16, 2, 2, 4, 1, 0, 1>, "loads only: 16 warps, 2 groups, 2 ahead", 16, 2, 4, 0, false);
      run(lane16<16, 2, 3, 4, 1, 0, 1>, "loads only: 16 warps, 2 groups, 3 ahead", 16, 2, 4, 0, false);
      run(lane16<32, 1, 2, 4, 1, 0>, "32 warps, 1 group, 2 ahead, barrier R4", 32, 1, 4, 0, ck);
      run(lane16<16, 2, 2, 4, 1, 0>, "16w, 2 ahead, barrier R4", 16, 2, 4, 0, ck);
      run(lane16<16, 2, 2, 4, 1, 0, 2>, "no meeting: 16w, 2 ahead", 16, 2, 4, 0, false);
      run(lane16<16, 2, 2, 4, 1, 0, 3>, "no conversion: 16w, 2 ahead, barrier R4", 16, 2, 4, 0, false);
      run(lane16<16, 2, 2, 4, 1, 0, 0, 2>, "16w, 2 ahead, 2 chains, barrier R4", 16, 2, 4, 0, ck);
      run(lane16<16, 2, 2, 8, 1, 0, 0, 2>, "16w, 2 ahead, 2 chains, barrier R8", 16, 2, 8, 0, ck);
      run(lane16<8, 2, 2, 8, 2, 0, 0, 2>, "8w x2, 2 ahead, 2 chains, barrier R8", 8, 2, 8, 0, ck);
      run(lane16<16, 2, 2, 4, 1, 0, 0, 2, 2>, "16w, 2 ahead, 2 chains, last warp R4 NB2", 16, 2, 4, 0, ck, 2);
      run(lane16<16, 2, 2, 2, 1, 0, 0, 2, 4>, "16w, 2 ahead, 2 chains, last warp R2 NB4", 16, 2, 2, 0, ck, 4);
      run(lane16<8, 2, 2, 4, 2, 0, 0, 2, 4>, "8w x2, 2 ahead, 2 chains, last warp R4 NB4", 8, 2, 4, 0, ck, 4);
      run(lane16<16, 2, 3, 4, 1, 1>, "16w, 3 ahead, barrier R4, workspace", 16, 2, 4, 1, ck);
      run(lane16<32, 1, 2, 4, 1, 1>, "32w, 1 group, 2 ahead, barrier R4, workspace", 32, 1, 4, 1, ck);
    }
  }
  return 0;
}
