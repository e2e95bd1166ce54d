// Experiment (not part of the product): a W4A16 GEMV at one row of X on the CUDA cores, each lane
// holding its own 32 values of X in registers for the whole kernel while its warp walks across
// column groups of the mixed-GEMM layout. Asks whether plain 16-byte loads kept in flight by many
// warps, with the conversion and the products done per lane, can stream the weights faster than
// the product's copy-engine ring (72.9-73.2% of the copy at 28672x8192 / 8192x28672 on the H200).
//
// A warp owns 256 rows of K (a "slab"): lane l = 8 t + 2 c + h takes tile t (64 rows), channel c of
// the column group and half h (32 rows) of that tile, which in the layout is one 16-byte piece, so a
// warp's load is 512 contiguous bytes of one column group. X for those 32 rows is loaded once. Per
// column group the lane converts its 4 words (the int4 magic-number recipe), multiplies them with X
// in fp16 (HFMA2), adds up in fp32, and the lanes of a channel meet by shuffles with the group scale
// applied; the 8 warps of a block (8 slabs) meet in shared memory, blocks by atomics (FIN 0), as the
// product's finish_tile does (FIN 1) or in a cluster along K (FIN 2). The variants: loads only,
// fp16 products added a word in fp32 or four words in fp16, the scales taken where the warps meet
// instead of a step at a time (MODE 3), blocks of 32 warps as the product's (NW), the tensor
// cores' diagonal (lane_mma_gemv), the workspace meeting's arrival without fences (FIN 3), the whole K
// of a range in one block by turns (lane_turns) and a ring of cp.async copies a lane (lane_ring). Each
// is checked against float64 products of the same weights; the figures are in notes/performance.md
// (forty-first, forty-third and forty-fourth sessions). The product's kernel grew
// from this one (ft_lane_kernel in kernels/cuda/gemv.cu). TIMER_HOLD=1 times everything behind the
// bench engine's stream hold.
//
//   nvcc -O3 -arch=sm_90 -std=c++20 -I. -Inotes/experiments -o lane_gemv notes/experiments/lane_gemv.cu
//   ./lane_gemv            (LANE_PROFILE=1: one launch of one variant a shape, for Nsight Compute;
//                           LANE_TURNS=1, LANE_RING=1, LANE_FENCE=1: the forty-fourth session's tables)
#include <cooperative_groups.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "ft_int4.cuh"
#include "ptx.cuh"

constexpr int kWarps = 8;  // slabs a block

__device__ __forceinline__ __half2 h2(uint32_t u) { return *reinterpret_cast<__half2*>(&u); }

// The lane's 32 products as one fp32 sum. PREC 0: the four words' fp16 chains added pairwise in
// fp16, one conversion; PREC 1: each word's chain converted and added in fp32.
template <int PREC>
__device__ __forceinline__ float lane_dot(uint4 v, const __half2 (&x)[16]) {
  const __half2 k1032 = h2(0x64086408u), k16 = h2(0x2C002C00u), k72 = h2(0xD480D480u);
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
  __half2 acc[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint32_t w8 = w[i] >> 8;
    const __half2 q0 = __hsub2(h2(lop3_and_or(w[i], 0x000F000Fu, 0x64006400u)), k1032);     // rows 2i, 2i+1
    const __half2 q1 = __hfma2(h2(lop3_and_or(w[i], 0x00F000F0u, 0x64006400u)), k16, k72);  // 8 + ...
    const __half2 q2 = __hsub2(h2(lop3_and_or(w8, 0x000F000Fu, 0x64006400u)), k1032);       // 16 + ...
    const __half2 q3 = __hfma2(h2(lop3_and_or(w8, 0x00F000F0u, 0x64006400u)), k16, k72);    // 24 + ...
    __half2 a = __hmul2(q0, x[i]);
    a = __hfma2(q1, x[4 + i], a);
    a = __hfma2(q2, x[8 + i], a);
    acc[i] = __hfma2(q3, x[12 + i], a);
  }
  if constexpr (PREC == 0) {
    const float2 f = __half22float2(__hadd2(__hadd2(acc[0], acc[1]), __hadd2(acc[2], acc[3])));
    return f.x + f.y;
  } else {  // PREC 2: the same sums without the add to zero that starts them (-0 keeps it there)
    float s = 0.0f;
    if constexpr (PREC == 2) {
      const float2 f = __half22float2(acc[0]);
      s = f.x + f.y;
    }
#pragma unroll
    for (int i = PREC == 2 ? 1 : 0; i < 4; ++i) {
      const float2 f = __half22float2(acc[i]);
      s += f.x + f.y;
    }
    return s;
  }
}

// grid (column-group blocks, K / (256 kWarps)); Y must be zero before (fp32 sums, atomics).
// The walk across column groups: the lane's 16-byte piece and scale of each of `count` column
// groups, kDepth loads in flight beyond the one being used, addresses advanced by increments.
// body(piece, scale, j) for j = 0 .. count - 1; the main loop runs whole rounds of kDepth + 1
// without checks, the last round checks each step.
// SC false: no scales read (the body gets zero).
template <int kDepth, class Body, bool SC = true>
__device__ __forceinline__ void walk(const uint4* p, size_t stride, const __half* sp, int count, Body body) {
  uint4 buf[kDepth + 1];
  __half sc[kDepth + 1] = {};
#pragma unroll
  for (int d = 0; d < kDepth; ++d) {
    if (d < count) {
      buf[d] = ldnc(p);
      if constexpr (SC) sc[d] = *sp;
    }
    p += stride, sp += 4;
  }
  int j0 = 0;
  for (; j0 + 2 * kDepth + 1 <= count; j0 += kDepth + 1) {
#pragma unroll
    for (int d = 0; d <= kDepth; ++d) {
      const int slot = (d + kDepth) % (kDepth + 1);
      buf[slot] = ldnc(p);
      if constexpr (SC) sc[slot] = *sp;
      p += stride, sp += 4;
      body(buf[d], sc[d], j0 + d);
    }
  }
  for (; j0 < count; j0 += kDepth + 1) {
#pragma unroll
    for (int d = 0; d <= kDepth; ++d) {
      const int slot = (d + kDepth) % (kDepth + 1);
      if (j0 + d + kDepth < count) {
        buf[slot] = ldnc(p);
        if constexpr (SC) sc[slot] = *sp;
      }
      p += stride, sp += 4;
      if (j0 + d < count) body(buf[d], sc[d], j0 + d);
    }
  }
}

// Where a lane of the walk stands (lane_gemv, lane_ring): its warp, its warp's slab of 256 rows of K,
// its tile t, channel c and half h, its block's first column group and count of groups, its first row
// of K.
struct Place {
  int warp, lane, slab, t, c, h, cg0, count, k0;
};
__device__ __forceinline__ Place place(int nw, int n, int cg_per_block) {
  Place p;
  p.warp = threadIdx.x / 32, p.lane = threadIdx.x % 32;
  p.slab = blockIdx.y * nw + p.warp;
  p.t = p.lane / 8, p.c = (p.lane / 2) % 4, p.h = p.lane % 2;
  p.cg0 = blockIdx.x * cg_per_block;
  p.count = min(cg_per_block, n / 4 - p.cg0);
  p.k0 = p.slab * 256 + p.t * 64 + p.h * 32;
  return p;
}

// The lane's 32 values of X (rows k0 .. k0 + 31), in registers for the whole walk.
__device__ __forceinline__ void load_x(const __half2* X2, int k0, __half2 (&x)[16]) {
#pragma unroll
  for (int i = 0; i < 16; ++i) x[i] = X2[k0 / 2 + i];
}

// One step's end: the lane's 32 products (lane_dot<PREC>), the lanes of a channel met by shuffles with
// the group's scale taken after the tile's two halves, and the channel's sum stored by its first lane.
template <int PREC>
__device__ __forceinline__ void channel_sum(uint4 v, __half scale, const __half2 (&x)[16], int lane,
                                            float* out) {
  float s = lane_dot<PREC>(v, x);
  s += __shfl_xor_sync(0xFFFFFFFFu, s, 1);
  s += __shfl_xor_sync(0xFFFFFFFFu, s, 8);
  s *= __half2float(scale);
  s += __shfl_xor_sync(0xFFFFFFFFu, s, 16);
  if (lane < 8 && lane % 2 == 0) *out = s;
}

// The block's warps met: each output's NW partial sums added and put into fp32 Y by an atomic.
template <int NW>
__device__ __forceinline__ void add_warps_atomic(const float* part, int cg_per_block, int count, float* y) {
  for (int i = threadIdx.x; i < count * 4; i += blockDim.x) {
    float s = 0.0f;
#pragma unroll
    for (int w = 0; w < NW; ++w) s += part[w * cg_per_block * 4 + i];
    atomicAdd(y + i, s);
  }
}

// kDepth loads in flight a lane beyond the one being used; kMinBlocks sets the register cap.
// FIN: how the blocks of a column range meet: 0 atomics into fp32 Y (timing only); 1 as the
// product's finish_tile (atomics into a workspace, a fence, an arrival counter, the last block
// writes fp16 Y and leaves the workspace zero); 2 a cluster along K, the partial sums read from the
// other blocks' shared memory by the first (compute capability 9.0); 3 as 1 with an acquire-release
// arrival instead of the fences.
// MODE 3: as 1 (fp32 a word, no add to zero), the scales left to the meeting: the walk reads none, the
// lanes of a group of 128 rows meet by two shuffles and its two groups' sums of a channel go to shared
// memory apart, to take their scales where the warps meet (FIN 0 only).
// NW: warps (slabs) a block.
template <int MODE, int kDepth, int kMinBlocks, int FIN = 0,
          int NW = kWarps>  // MODE 0, 1: compute with PREC MODE; 2: loads only; 3: above
__global__ void __launch_bounds__(NW * 32, kMinBlocks)
    lane_gemv(const uint4* __restrict__ W, const __half2* __restrict__ X2, const __half* __restrict__ S,
              float* __restrict__ Y, int N, int K, int cg_per_block) {
  extern __shared__ float part[];  // [NW][cg_per_block * 4]
  const auto [warp, lane, slab, t, c, h, cg0, count, k0] = place(NW, N, cg_per_block);
  __half2 x[16];
  load_x(X2, k0, x);
  const int g = slab * 2 + t / 2;                    // group of 128 rows
  const size_t stride = static_cast<size_t>(K) / 8;  // uint4 a column group
  const uint4* src = W + static_cast<size_t>(cg0) * stride + slab * 32 + lane;
  const __half* scale = S + static_cast<size_t>(g) * N + 4 * cg0 + c;
  unsigned xo = 0;
  float* out = part + warp * cg_per_block * 4 + c;
  static_assert(MODE != 3 || FIN == 0);
  float* out2 = part + warp * cg_per_block * 8 + 2 * c + t / 2;
  const auto body = [&](uint4 v, __half sc, int j) {
    if constexpr (MODE == 2) {
      xo ^= v.x ^ v.y ^ v.z ^ v.w;
    } else if constexpr (MODE == 3) {
      float s = lane_dot<2>(v, x);
      s += __shfl_xor_sync(0xFFFFFFFFu, s, 1);
      s += __shfl_xor_sync(0xFFFFFFFFu, s, 8);
      if ((lane & 9) == 0) out2[8 * j] = s;
    } else {
      channel_sum<MODE>(v, sc, x, lane, out + 4 * j);
    }
  };
  walk<kDepth, decltype(body), MODE != 3>(src, stride, scale, count, body);
  if constexpr (MODE == 2) {
    if (xo == 0x12345678u) sink = xo;
    return;
  }
  __syncthreads();
  if constexpr (MODE == 3) {
    for (int i = threadIdx.x; i < count * 4; i += blockDim.x) {
      float s = 0.0f;
#pragma unroll
      for (int w = 0; w < NW; ++w) {
        const int sl = blockIdx.y * NW + w;
#pragma unroll
        for (int gg = 0; gg < 2; ++gg)
          s += part[(w * cg_per_block * 4 + i) * 2 + gg] *
               __half2float(S[size_t(2 * sl + gg) * N + 4 * cg0 + i]);
      }
      atomicAdd(Y + 4 * cg0 + i, s);
    }
  } else if constexpr (FIN == 0) {
    add_warps_atomic<NW>(part, cg_per_block, count, Y + 4 * cg0);
  } else if constexpr (FIN == 1 || FIN == 3) {
    const auto sum = [&](int i) {
      float s = 0.0f;
#pragma unroll
      for (int w = 0; w < NW; ++w) s += part[w * cg_per_block * 4 + i];
      return s;
    };
    if (gridDim.y == 1) {
      for (int i = threadIdx.x; i < count * 4; i += blockDim.x) g_yh[4 * cg0 + i] = __float2half(sum(i));
      return;
    }
    for (int i = threadIdx.x; i < count * 4; i += blockDim.x) atomicAdd(g_sums + 4 * cg0 + i, sum(i));
    settle_range<FIN == 3>(blockIdx.x, count * 4, [&](int i) { return int64_t{4} * cg0 + i; });
  } else {
    namespace cg = cooperative_groups;
    cg::cluster_group cluster = cg::this_cluster();
    float* red = part + NW * cg_per_block * 4;
    for (int i = threadIdx.x; i < count * 4; i += blockDim.x) {
      float s = 0.0f;
#pragma unroll
      for (int w = 0; w < NW; ++w) s += part[w * cg_per_block * 4 + i];
      red[i] = s;
    }
    cluster.sync();
    if (cluster.block_rank() == 0) {
      const unsigned blocks = cluster.num_blocks();
      for (int i = threadIdx.x; i < count * 4; i += blockDim.x) {
        float s = 0.0f;
        for (unsigned r = 0; r < blocks; ++r) s += cluster.map_shared_rank(red, r)[i];
        g_yh[4 * cg0 + i] = __float2half(s);
      }
    }
    cluster.sync();
  }
}

// Turns: the whole K of a column range in one block of NW warps, so that no blocks meet. The block's
// work is (slab, column group) pairs in quads of 4 groups (slab-major); warp w takes quads
// [w Q / NW, (w + 1) Q / NW) of the Q, which fall into segments of one slab each (a "turn"). Every
// segment is whole quads, so a segment's last round issues the next segment's first kDepth = 3 loads
// into the slots the next segment starts from: the jump costs a few instructions a segment, nothing a
// step. X for a segment's slab is read at its start (L2). Each (slab, group) has its own slot of
// partial sums in shared memory ([slabs][count][4] floats); 16 lanes an output add them at the end, and
// the block writes fp32 Y (no atomics). cg_per_block and the last range's groups: multiples of 4.
template <int NW>
__global__ void __launch_bounds__(NW * 32, 1)
    lane_turns(const uint4* __restrict__ W, const __half2* __restrict__ X2, const __half* __restrict__ S,
               float* __restrict__ Y, int N, int K, int cg_per_block) {
  constexpr int A = 3;
  extern __shared__ float part[];  // [slabs][count][4]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int t = lane / 8, c = (lane / 2) % 4, h = lane % 2;
  const int groups = N / 4, slabs = K / 256;
  const int cg0 = blockIdx.x * cg_per_block;
  const int count = min(cg_per_block, groups - cg0);
  const int qs = count / 4, total = slabs * qs;
  int qa = static_cast<int>(int64_t{warp} * total / NW);
  const int qb = static_cast<int>(int64_t{warp + 1} * total / NW);
  const size_t stride = static_cast<size_t>(K) / 8;
  const auto piece_at = [&](int slab, int j) {
    return W + static_cast<size_t>(cg0 + j) * stride + slab * 32 + lane;
  };
  const auto scale_at = [&](int slab, int j) {
    return S + static_cast<size_t>(slab * 2 + t / 2) * N + 4 * (cg0 + j) + c;
  };
  uint4 buf[A + 1];
  __half sc[A + 1];
  const uint4* p = nullptr;
  const __half* sp = nullptr;
  if (qa < qb) {
    p = piece_at(qa / qs, 4 * (qa % qs));
    sp = scale_at(qa / qs, 4 * (qa % qs));
#pragma unroll
    for (int d = 0; d < A; ++d) buf[d] = ldnc(p), sc[d] = *sp, p += stride, sp += 4;
  }
  while (qa < qb) {
    const int slab = qa / qs, j0 = 4 * (qa % qs);
    const int end = min(qb, (slab + 1) * qs);
    const int rounds = end - qa;
    const bool next = end < qb;  // the next segment starts at slab + 1, group 0
    __half2 x[16];
    load_x(X2, slab * 256 + t * 64 + h * 32, x);
    float* out = part + (static_cast<size_t>(slab) * count + j0) * 4 + c;
    const auto body = [&](uint4 v, __half scv, int j) { channel_sum<1>(v, scv, x, lane, out + 4 * j); };
    int r = 0;
    for (; r + 1 < rounds; ++r) {
#pragma unroll
      for (int d = 0; d <= A; ++d) {
        const int slot = (d + A) % (A + 1);
        buf[slot] = ldnc(p), sc[slot] = *sp;
        p += stride, sp += 4;
        body(buf[d], sc[d], 4 * r + d);
      }
    }
    // The last round: its first load is this segment's last piece, the other three the next's first.
    buf[A] = ldnc(p), sc[A] = *sp;
    if (next) p = piece_at(slab + 1, 0), sp = scale_at(slab + 1, 0);
    body(buf[0], sc[0], 4 * r);
#pragma unroll
    for (int d = 1; d <= A; ++d) {
      if (next) {
        buf[d - 1] = ldnc(p), sc[d - 1] = *sp;
        p += stride, sp += 4;
      }
      body(buf[d], sc[d], 4 * r + d);
    }
    qa = end;
  }
  __syncthreads();
  // 16 lanes an output, each adding every 16th slab; two outputs a warp.
  const int sub = lane % 16;
  for (int o = warp * 2 + lane / 16; o - lane / 16 < count * 4; o += NW * 2) {
    float v = 0.0f;
    if (o < count * 4)
      for (int sl = sub; sl < slabs; sl += 16) v += part[static_cast<size_t>(sl) * count * 4 + o];
    v += __shfl_xor_sync(0xFFFFFFFFu, v, 8);
    v += __shfl_xor_sync(0xFFFFFFFFu, v, 4);
    v += __shfl_xor_sync(0xFFFFFFFFu, v, 2);
    v += __shfl_xor_sync(0xFFFFFFFFu, v, 1);
    if (sub == 0 && o < count * 4) Y[4 * cg0 + o] = v;
  }
}

// A ring of its own a lane: the walk's pieces and scales copied into shared memory by cp.async (16
// and 4 bytes), D - 1 in flight beyond the one in use, so that the bytes in flight take no registers
// (the register walk keeps 3 pieces, 12 registers, in flight a lane). Each lane reads only what it
// copied, so no barrier: cp.async.wait_group before each read. The scale's 4 bytes hold channels
// c & ~1 and c | 1. Blocks of 8 warps, atomics into fp32 Y (as FIN 0).
__device__ __forceinline__ void cp16(uint32_t dst, const void* src) {
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp4(uint32_t dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
template <int D, int kMinBlocks>
__global__ void __launch_bounds__(kWarps * 32, kMinBlocks)
    lane_ring(const uint4* __restrict__ W, const __half2* __restrict__ X2, const __half* __restrict__ S,
              float* __restrict__ Y, int N, int K, int cg_per_block) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  uint4* ring = reinterpret_cast<uint4*>(smem_raw);                        // [D][256]
  uint32_t* sring = reinterpret_cast<uint32_t*>(smem_raw + D * 256 * 16);  // [D][256]
  float* part = reinterpret_cast<float*>(smem_raw + D * 256 * 20);         // [8][count][4]
  const auto [warp, lane, slab, t, c, h, cg0, count, k0] = place(kWarps, N, cg_per_block);
  __half2 x[16];
  load_x(X2, k0, x);
  const int g = slab * 2 + t / 2;
  const size_t stride = static_cast<size_t>(K) / 8;
  const uint4* src = W + static_cast<size_t>(cg0) * stride + slab * 32 + lane;
  const __half* sp = S + static_cast<size_t>(g) * N + 4 * cg0 + (c & 2);
  const uint32_t ring0 = static_cast<uint32_t>(__cvta_generic_to_shared(ring + threadIdx.x));
  const uint32_t sring0 = static_cast<uint32_t>(__cvta_generic_to_shared(sring + threadIdx.x));
  float* out = part + warp * cg_per_block * 4 + c;
#pragma unroll
  for (int d = 0; d < D - 1; ++d) {
    if (d < count) cp16(ring0 + d * 256 * 16, src), cp4(sring0 + d * 256 * 4, sp);
    cp_commit();
    src += stride, sp += 4;
  }
  const auto step = [&](int d, int j, bool checked) {
    const int slot = (d + D - 1) % D;
    if (!checked || j + D - 1 < count) cp16(ring0 + slot * 256 * 16, src), cp4(sring0 + slot * 256 * 4, sp);
    cp_commit();
    src += stride, sp += 4;
    cp_wait<D - 1>();
    if (!checked || j < count) {
      const uint4 v = ring[d * 256 + threadIdx.x];
      const uint32_t s2 = sring[d * 256 + threadIdx.x];
      const __half scv = __ushort_as_half(static_cast<unsigned short>((c & 1) ? s2 >> 16 : s2 & 0xFFFFu));
      channel_sum<1>(v, scv, x, lane, out + 4 * j);
    }
  };
  int j0 = 0;
  for (; j0 + 2 * D - 1 <= count; j0 += D) {  // whole rounds whose copies all fall inside
#pragma unroll
    for (int d = 0; d < D; ++d) step(d, j0 + d, false);
  }
  for (; j0 < count; j0 += D) {
#pragma unroll
    for (int d = 0; d < D; ++d) step(d, j0 + d, true);
  }
  __syncthreads();
  add_warps_atomic<kWarps>(part, cg_per_block, count, Y + 4 * cg0);
}

// d = A B + c for m16n8k16 (fp16 in, fp32 out) with A's rows 8-15 zero: a0 holds (row g, columns
// 2q, 2q + 1), a2 (row g, columns 2q + 8, 2q + 9); b0, b1 the same columns of B's column g.
__device__ __forceinline__ void mma_rows8(float (&d)[4], uint32_t a0, uint32_t a2, uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(0u), "r"(a2), "r"(0u), "r"(b0), "r"(b1));
}

// The same walk with the products on the tensor cores: lanes 4g .. 4g + 3 hold one channel c = g / 2
// and one group a = g % 2 of the slab (4 pieces: 2 tiles x 2 halves), so row g of A is (c, a) and
// column g of B holds the X of those same lanes; D[g][g] is the row's sum and the other 63 outputs
// are not used. The words enter unbiased (1024 + q + 8 and 1024 + 16 (q + 8)), lo and hi pairs in
// separate sums, and the row's constant (1032 sum x_lo + 72 sum x_hi) is taken off once a step.
// ONE: one sum for the lo and hi pairs, the hi pairs' X divided by 16 once (the row's constant
// then 1032 sum x_lo + 1152 sum (x_hi / 16), with X as rounded).
template <int kDepth, int kMinBlocks, bool ONE = false>
__global__ void __launch_bounds__(kWarps * 32, kMinBlocks)
    lane_mma_gemv(const uint4* __restrict__ W, const __half2* __restrict__ X2, const __half* __restrict__ S,
                  float* __restrict__ Y, int N, int K, int cg_per_block) {
  extern __shared__ float part[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int slab = blockIdx.y * kWarps + warp;
  const int g = lane / 4, q = lane % 4, c = g / 2, a = g % 2, t = 2 * a + q / 2, h = q % 2;
  const int piece = 8 * t + 2 * c + h;
  const int groups = N / 4;
  const int cg0 = blockIdx.x * cg_per_block;
  const int count = min(cg_per_block, groups - cg0);
  const int k0 = slab * 256 + t * 64 + h * 32;
  uint32_t x[16];
  float corr = 0.0f;
#pragma unroll
  for (int p = 0; p < 4; ++p) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      __half2 v = X2[k0 / 2 + 4 * p + i];
      if (ONE && p % 2 == 1) v = __hmul2(v, __float2half2_rn(0.0625f));
      x[4 * p + i] = *reinterpret_cast<const uint32_t*>(&v);
      const float2 f = __half22float2(v);
      corr += (p % 2 == 0 ? 1032.0f : (ONE ? 1152.0f : 72.0f)) * (f.x + f.y);
    }
  }
  corr += __shfl_xor_sync(0xFFFFFFFFu, corr, 1);
  corr += __shfl_xor_sync(0xFFFFFFFFu, corr, 2);
  const size_t stride = static_cast<size_t>(K) / 8;
  const uint4* src = W + static_cast<size_t>(cg0) * stride + slab * 32 + piece;
  const __half* scale = S + static_cast<size_t>(slab * 2 + a) * N + 4 * cg0 + c;
  float* out = part + warp * cg_per_block * 4 + c;
  const bool writer = q == c && a == 0;
  walk<kDepth>(src, stride, scale, count, [&](uint4 v, __half sc, int j) {
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
    float dl[4] = {0.0f, 0.0f, 0.0f, 0.0f}, dh[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    float(&dhi)[4] = *(ONE ? &dl : &dh);  // ONE: the hi pairs into the same sums
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t w8 = w[i] >> 8;
      mma_rows8(dl, lop3_and_or(w[i], 0x000F000Fu, 0x64006400u), lop3_and_or(w8, 0x000F000Fu, 0x64006400u),
                x[i], x[8 + i]);
      mma_rows8(dhi, lop3_and_or(w[i], 0x00F000F0u, 0x64006400u), lop3_and_or(w8, 0x00F000F0u, 0x64006400u),
                x[4 + i], x[12 + i]);
    }
    float r = ONE ? (a ? dl[1] : dl[0]) - corr : (a ? dl[1] : dl[0]) + (a ? dh[1] : dh[0]) * 0.0625f - corr;
    r *= __half2float(sc);
    r += __shfl_xor_sync(0xFFFFFFFFu, r, 4);  // rows 2c and 2c + 1: lanes 9c and 9c + 4
    if (writer) out[4 * j] = r;
  });
  __syncthreads();
  add_warps_atomic<kWarps>(part, cg_per_block, count, Y + 4 * cg0);
}

int main() {
  Lab lab;
  auto& [prop, tm, copy_gbps] = lab;
  const Shape shapes[] = {{28672, 8192}, {8192, 28672}, {8192, 8192}, {4096, 4096}};
  for (const Shape& sh : shapes) {
    const int N = sh.n, K = sh.k, G = 128;
    // float64 references: pb.ref with the scale outside each group's sum (as the kernels take it), and
    // ref_w with the fp16-rounded dequantized weights (as the product's accuracy checks take it)
    const Int4Problem pb = int4_problem(1, N, K, G);
    std::vector<double> ref_w(N);
    for (int n = 0; n < N; ++n) {
      double b = 0;
      for (int k = 0; k < K; ++k) {
        const double sg = __half2float(pb.s[size_t(k / G) * N + n]), qv = pb.q[size_t(n) * K + k];
        b += double(__half2float(__float2half(float(qv * sg)))) * pb.xf[k];
      }
      ref_w[n] = b;
    }
    const Int4OnDevice dev(pb, 1, N);
    const auto& [dW, dS, dX, dY, bytes] = dev;
    const Meeting meeting(N, N);
    std::printf("%dx%d: floor %.1f us\n", N, K, bytes / copy_gbps / 1e3);
    // One checked run on zeroed outputs (fp32 Y, or the workspace's fp16 outputs yh), the timed median
    // and the row; `grid` says how the grid was made.
    const auto report = [&](const auto& launch, const char* name, const char* grid, bool check,
                            const __half* yh) {
      const std::vector<float> y = check ? outputs_once(launch, dY.p, dY.n, yh) : std::vector<float>{};
      const double us = std::getenv("LANE_PROFILE") ? 0.0 : tm.median_us(launch);
      std::printf("  %-34s %s %8.2f us %6.1f%% of copy", name, grid, us,
                  100.0 * bytes / (us * 1e3) / copy_gbps);
      if (check)
        std::printf("  rel err %.2e (scale outside) %.2e (rounded weights)", fp16_rel_err(y, pb.ref),
                    fp16_rel_err(y, ref_w));
      std::printf("\n");
    };
    char grid_text[64];
    const auto run = [&](auto kernel, const char* name, bool check, int blocks_cap = 0, int fin = 0,
                         int nw = kWarps) {
      // One wave: as many column groups a block as fill the multiprocessors' resident blocks.
      // blocks_cap: shared memory asked for so that at most that many blocks fit a multiprocessor.
      CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
      if (K % (256 * nw) != 0) {
        std::printf("  %-34s K is not whole blocks of %d slabs\n", name, nw);
        return;
      }
      const int groups = N / 4, ys = K / (256 * nw);
      size_t smem = blocks_cap ? size_t(200 * 1024) / blocks_cap : size_t(nw) * 128 * 16;
      int per = 0;
      CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kernel, nw * 32, smem));
      const int xs_max = std::max(1, per * prop.multiProcessorCount / ys);
      const int cgpb = (groups + xs_max - 1) / xs_max;
      const dim3 grid((groups + cgpb - 1) / cgpb, ys);
      if (!blocks_cap) smem = size_t(2 * nw + 1) * cgpb * 4 * 4;  // room for MODE 3's two groups
      cudaLaunchConfig_t cfg = {};
      cudaLaunchAttribute attr[1];
      cfg.gridDim = grid;
      cfg.blockDim = dim3(nw * 32);
      cfg.dynamicSmemBytes = smem;
      if (fin == 2) {
        CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
        attr[0].id = cudaLaunchAttributeClusterDimension;
        attr[0].val.clusterDim.x = 1;
        attr[0].val.clusterDim.y = ys;
        attr[0].val.clusterDim.z = 1;
        cfg.attrs = attr;
        cfg.numAttrs = 1;
        int clusters = 0;
        if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg) != cudaSuccess || clusters == 0) {
          cudaGetLastError();
          std::printf("  %-34s clusters of %d blocks do not fit\n", name, ys);
          return;
        }
      }
      const auto launch = [&] {
        CK(cudaLaunchKernelEx(&cfg, kernel, reinterpret_cast<const uint4*>(dW.p),
                              reinterpret_cast<const __half2*>(dX.p), static_cast<const __half*>(dS.p), dY.p,
                              N, K, cgpb));
      };
      std::snprintf(grid_text, sizeof grid_text, "%d blocks/SM %4u blocks %3d groups", per, grid.x * grid.y,
                    cgpb);
      report(launch, name, grid_text, check, fin == 0 ? nullptr : meeting.yh.p);
    };
    // Turns (lane_turns): one block a multiprocessor holding the whole K of its column range.
    const auto run_turns = [&](auto kernel, const char* name, bool check, int nw) {
      const int groups = N / 4;
      const int per = ((groups + prop.multiProcessorCount - 1) / prop.multiProcessorCount + 3) / 4 * 4;
      if (groups % 4 != 0 || K % 256 != 0) {
        std::printf("  %-34s needs whole quads of groups and slabs\n", name);
        return;
      }
      const size_t smem = size_t(K / 256) * per * 16;
      CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
      const dim3 grid((groups + per - 1) / per);
      const auto launch = [&] {
        kernel<<<grid, nw * 32, smem>>>(reinterpret_cast<const uint4*>(dW.p),
                                        reinterpret_cast<const __half2*>(dX.p),
                                        static_cast<const __half*>(dS.p), dY.p, N, K, per);
        CK(cudaGetLastError());
      };
      std::snprintf(grid_text, sizeof grid_text, "%d warps  %4u blocks %3d groups", nw, grid.x, per);
      report(launch, name, grid_text, check, nullptr);
    };
    // The per-lane ring (lane_ring): D slots of 20 bytes a lane, then the partial sums.
    const auto run_ring = [&](auto kernel, const char* name, bool check, int d) {
      const int groups = N / 4, ys = K / (256 * kWarps);
      const auto smem_for = [&](int cgpb) { return size_t(d) * 256 * 20 + size_t(kWarps) * cgpb * 16; };
      CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
      int per = 0;
      CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kernel, kWarps * 32, smem_for(64)));
      const int xs_max = std::max(1, per * prop.multiProcessorCount / ys);
      const int cgpb = (groups + xs_max - 1) / xs_max;
      const dim3 grid((groups + cgpb - 1) / cgpb, ys);
      const size_t smem = smem_for(cgpb);
      const auto launch = [&] {
        kernel<<<grid, kWarps * 32, smem>>>(reinterpret_cast<const uint4*>(dW.p),
                                            reinterpret_cast<const __half2*>(dX.p),
                                            static_cast<const __half*>(dS.p), dY.p, N, K, cgpb);
        CK(cudaGetLastError());
      };
      std::snprintf(grid_text, sizeof grid_text, "%d blocks/SM %4u blocks %3d groups", per, grid.x * grid.y,
                    cgpb);
      report(launch, name, grid_text, check, nullptr);
    };
    if (std::getenv("LANE_FENCE")) {  // the workspace meeting with and without its fences
      for (int round = 0; round < 2; ++round) {
        const bool ck = round == 0;
        run(lane_gemv<1, 3, 4>, "fp32 a word, atomics into fp32 Y", ck);
        run(lane_gemv<1, 3, 4, 1>, "fp32 a word, workspace meeting", ck, 0, 1);
        run(lane_gemv<1, 3, 4, 3>, "workspace meeting, acq_rel arrival", ck, 0, 1);
        run(lane_gemv<1, 3, 2, 1, 16>, "16 warps, workspace meeting", ck, 0, 1, 16);
        run(lane_gemv<1, 3, 2, 3, 16>, "16 warps, acq_rel arrival", ck, 0, 1, 16);
      }
      continue;
    }
    if (std::getenv("LANE_RING")) {  // the per-lane ring beside the register walk
      for (int round = 0; round < 2; ++round) {
        const bool ck = round == 0;
        run(lane_gemv<1, 3, 4>, "fp32 a word, atomics into fp32 Y", ck);
        run_ring(lane_ring<4, 4>, "ring of 4, 4 blocks", ck, 4);
        run_ring(lane_ring<6, 4>, "ring of 6, 4 blocks", ck, 6);
        run_ring(lane_ring<8, 4>, "ring of 8, 4 blocks", ck, 8);
        run_ring(lane_ring<6, 5>, "ring of 6, 5 blocks", ck, 6);
        run_ring(lane_ring<4, 6>, "ring of 4, 6 blocks", ck, 4);
        run_ring(lane_ring<6, 6>, "ring of 6, 6 blocks", ck, 6);
      }
      continue;
    }
    if (std::getenv("LANE_TURNS")) {  // the turns beside the walks they would replace
      for (int round = 0; round < 2; ++round) {
        const bool ck = round == 0;
        run(lane_gemv<1, 3, 4>, "fp32 a word, atomics into fp32 Y", ck);
        run(lane_gemv<1, 3, 4, 1>, "fp32 a word, workspace meeting", ck, 0, 1);
        run(lane_gemv<1, 3, 1, 1, 32>, "fp32 a word, 32 warps, fp16 Y or workspace", ck, 0, 1, 32);
        run_turns(lane_turns<32>, "turns, 32 warps", ck, 32);
        run_turns(lane_turns<28>, "turns, 28 warps", ck, 28);
      }
      continue;
    }
    if (std::getenv("LANE_PROFILE")) {  // one launch each, for Nsight Compute
      run(lane_gemv<1, 3, 4>, "fp32 a word, 3 ahead", true);
      continue;
    }
    for (int round = 0; round < 2; ++round) {
      const bool ck = round == 0;
      run(lane_gemv<2, 3, 4>, "loads only, 3 ahead", false);
      run(lane_gemv<3, 3, 4>, "fp32 a word, scales where warps meet", ck);
      run(lane_gemv<1, 3, 4>, "fp32 a word, atomics into fp32 Y", ck);
      run(lane_gemv<1, 3, 4, 1>, "fp32 a word, workspace meeting", ck, 0, 1);
      run(lane_gemv<1, 3, 1, 1, 32>, "fp32 a word, 32 warps, fp16 Y or workspace", ck, 0, 1, 32);
      run(lane_gemv<1, 3, 4, 2>, "fp32 a word, cluster meeting", ck, 0, 2);
      run(lane_gemv<0, 3, 4, 2>, "fp16 pairs, cluster meeting", ck, 0, 2);
      run(lane_mma_gemv<3, 3>, "tensor cores, 3 blocks, atomics", ck);
      run(lane_mma_gemv<3, 4, true>, "tensor one sum, atomics", ck);
    }
  }
  return 0;
}
