// Experiment (not part of the product): a W4A16 product for 16 rows of X where one producer warp a
// block keeps a deep ring of shared-memory stages full by the copy engine and WB consumer warps own
// NT n-tiles of mma.m16n8k16 each (8 channels a tile; X as A, 16 tokens; the weights as B) and walk K
// with them, reading both operands from shared memory. Asks whether taking the loads in flight off
// the lanes (walk16_gemv.cu: 16 warps a multiprocessor, 128 registers, about 41 us at 28672x8192) and
// reading X once a block from the stage (not once a warp through L1) brings 16 rows near the loads'
// own time.
//
// A stage is SK steps of 128 rows of K for the block's CG = 2 NT WB column groups: the weights as one
// box of a 3D tensor map (words of a 64-row tile, column groups, tiles), so that in shared memory a
// row of 128 bytes is one column group's tile and the rows run [tile][column group], in the 128-byte
// swizzle; X for those steps in the order the A fragments are read (one 16-byte read a lane a
// fragment), each token's constant a step, and the scale rows. Lane l of a consumer warp gives
// ldmatrix.x4 the address of matrix l / 8 (tile j / 2, half j % 2), row l % 8 (channel l % 8 of the
// n-tile): lane (g, q) then holds word q of the four 16-byte pieces of its channel g, whose rows of K
// depend on q only, as the mma needs. The two column groups of an n-tile are neighbouring rows, so
// the swizzle puts the eight rows of a matrix in distinct banks. Words enter unbiased (lop3 only: 1024
// + n, 1024 + 16 n); X carries the high pairs divided by 16 and the step's first mma starts from minus
// each token's constant, as in walk16.
//
// The blocks share the (tile group, unit) pairs stream-K fashion, an equal run a block, one wave; a
// warp's sums leave at the end of a tile group or of the run (atomics into fp32 Y: timing and checking
// only).
//
//   nvcc -O3 -arch=sm_90 -std=c++20 -Xcompiler -fopenmp -I. -Inotes/experiments -o tma16_gemv \
//       notes/experiments/tma16_gemv.cu
//   ./tma16_gemv
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "ft_int4.cuh"
#include "kernels/cuda/gemv_io.cuh"

constexpr int kM = 16;

__device__ __forceinline__ void mma16816(float (&d)[4], uint4 a, uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b0), "r"(b1));
}
__device__ __forceinline__ uint32_t lop3_and_or(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(d) : "r"(a), "r"(b), "r"(c));  // (a & b) | c
  return d;
}
__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
// The product's copy-engine plumbing (kernels/cuda/gemv_io.cuh; device code for sm_90 only).
#ifdef DQL_BULK_COPY
using dql::cuda::io::bulk_copy;
using dql::cuda::io::mbar_arrive;
using dql::cuda::io::mbar_expect_tx;
using dql::cuda::io::mbar_init;
using dql::cuda::io::mbar_wait;
using dql::cuda::io::smem_addr;
using dql::cuda::io::tensor_copy_3d;
#endif

template <int WB, int NT, int SK>
struct Ring {
  static constexpr int CG = 2 * NT * WB;  // column groups a block
  static constexpr int W = CG * 128 * 2 * SK, X = 4096 * SK, C = 128 * SK, S = 8 * CG * SK;
  static constexpr int kStage = (W + X + C + S + 1023) / 1024 * 1024;
  static constexpr int bytes(int stages) { return stages * kStage + 1024 + 16 * stages; }
};

// MODE 0: the product; 1: the stages waited for and released only (the ring's own pace). MINB: blocks a
// multiprocessor the registers are held to. CH: mma chains an n-tile a step (the fragments alternate).
// Xs (uint4): step, fragment f = 2 j + m, lane -> the lane's A fragment of mma (j, m). C4 (float4):
// step, g -> minus the constants of tokens g, g, g + 8, g + 8. S: fp16 scales [K / 128][N].
template <int WB, int NT, int SK, int ST, int MODE, int MINB = 1, int CH = 1>
__global__ void __launch_bounds__((WB + 1) * 32, MINB)
    tma16(const __grid_constant__ CUtensorMap wmap, const uint4* __restrict__ Xs,
          const float4* __restrict__ C4, const __half* __restrict__ S, float* __restrict__ Y, int N, int K) {
#ifdef DQL_BULK_COPY
  using R = Ring<WB, NT, SK>;
  constexpr int CG = R::CG;
  extern __shared__ unsigned char raw[];
  // aligned to 1024 bytes (the swizzle's pattern) by an offset from raw, so the compiler still knows the
  // pointers shared
  unsigned char* smem = raw + ((1024u - (smem_addr(raw) & 1023u)) & 1023u);
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + ST * R::kStage);
  uint64_t* empty = full + ST;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int upt = K / 128 / SK;  // units a tile group
  const int total = N / (4 * CG) * upt;
  const int u0 = int(int64_t{blockIdx.x} * total / gridDim.x);
  const int u1 = int(int64_t{blockIdx.x + 1} * total / gridDim.x);
  const int n = u1 - u0;
  if (threadIdx.x == 0) {
    for (int i = 0; i < ST; ++i) mbar_init(full + i, 1), mbar_init(empty + i, WB);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (warp == WB) {  // the producer
    if (lane == 0) {
      for (int i = 0; i < n; ++i) {
        const int slot = i % ST;
        if (i >= ST) mbar_wait(empty + slot, ((i / ST) - 1) & 1);
        const int u = u0 + i, tg = u / upt, s0 = (u - tg * upt) * SK;
        unsigned char* st = smem + slot * R::kStage;
        mbar_expect_tx(full + slot, R::W + R::X + R::C + R::S);
        tensor_copy_3d(st, &wmap, 0, tg * CG, 2 * s0, full + slot);
        bulk_copy(st + R::W, Xs + int64_t{s0} * 256, R::X, full + slot);
        bulk_copy(st + R::W + R::X, C4 + s0 * 8, R::C, full + slot);
#pragma unroll
        for (int s = 0; s < SK; ++s)
          bulk_copy(st + R::W + R::X + R::C + s * 8 * CG, S + int64_t{s0 + s} * N + int64_t{tg} * 4 * CG,
                    8 * CG, full + slot);
      }
    }
    return;
  }
  const int g = lane / 4, q = lane % 4;
  // ldmatrix: lane l gives row l % 8 (channel) of matrix l / 8 (tile, half); the byte within a step's
  // weights of n-tile t's row, before the tile row's offset
  const int mj = lane / 8, mi = lane % 8;
  const int mt = mj / 2, mh = mj % 2;
  float acc[NT][4] = {};
  unsigned xo = 0;
  int tg = u0 / upt, left = upt - (u0 - tg * upt);  // units of this tile group still to come
  for (int i = 0; i < n; ++i) {
    const int slot = i % ST;
    mbar_wait(full + slot, (i / ST) & 1);
    const unsigned char* st = smem + slot * R::kStage;
    if constexpr (MODE == 1) {
      xo ^= reinterpret_cast<const uint32_t*>(st)[lane];
    } else {
      const uint32_t wb = smem_addr(st);
      const uint4* xs = reinterpret_cast<const uint4*>(st + R::W);
      const float4* cs = reinterpret_cast<const float4*>(st + R::W + R::X);
      const uint32_t* ss = reinterpret_cast<const uint32_t*>(st + R::W + R::X + R::C);
#pragma unroll
      for (int s = 0; s < SK; ++s) {
        uint32_t b[NT][4];
#pragma unroll
        for (int t = 0; t < NT; ++t) {
          const int row = (2 * s + mt) * CG + 2 * (warp * NT + t) + mi / 4;
          const int unit = (2 * (mi % 4) + mh) ^ (row & 7);
          ldsm_x4(b[t], wb + row * 128 + unit * 16);
        }
        const float4 c = cs[s * 8 + g];
        float d[NT][4], d2[NT][4];
#pragma unroll
        for (int t = 0; t < NT; ++t) {
          d[t][0] = c.x, d[t][1] = c.y, d[t][2] = c.z, d[t][3] = c.w;
#pragma unroll
          for (int e = 0; e < 4; ++e) d2[t][e] = 0.0f;
        }
#pragma unroll
        for (int f = 0; f < 8; ++f) {
          const uint4 a = xs[(s * 8 + f) * 32 + lane];
#pragma unroll
          for (int t = 0; t < NT; ++t) {
            const uint32_t w = (f % 2) ? b[t][f / 2] >> 8 : b[t][f / 2];
            mma16816(CH == 2 && f % 2 ? d2[t] : d[t], a, lop3_and_or(w, 0x000F000Fu, 0x64006400u),
                     lop3_and_or(w, 0x00F000F0u, 0x64006400u));
          }
        }
        if constexpr (CH == 2) {
#pragma unroll
          for (int t = 0; t < NT; ++t)
#pragma unroll
            for (int e = 0; e < 4; ++e) d[t][e] += d2[t][e];
        }
#pragma unroll
        for (int t = 0; t < NT; ++t) {
          const uint32_t sv = ss[s * 4 * CG / 2 + 4 * (warp * NT + t) + q];
          const float2 sf = __half22float2(*reinterpret_cast<const __half2*>(&sv));
          acc[t][0] = fmaf(d[t][0], sf.x, acc[t][0]);
          acc[t][1] = fmaf(d[t][1], sf.y, acc[t][1]);
          acc[t][2] = fmaf(d[t][2], sf.x, acc[t][2]);
          acc[t][3] = fmaf(d[t][3], sf.y, acc[t][3]);
        }
      }
    }
    __syncwarp();
    if (lane == 0) mbar_arrive(empty + slot);
    if constexpr (MODE == 0) {
      if (--left == 0 || i == n - 1) {
#pragma unroll
        for (int t = 0; t < NT; ++t) {
          float* y = Y + g * int64_t{N} + 4 * (int64_t{tg} * CG + 2 * (warp * NT + t)) + 2 * q;
          atomicAdd(y, acc[t][0]);
          atomicAdd(y + 1, acc[t][1]);
          atomicAdd(y + 8 * int64_t{N}, acc[t][2]);
          atomicAdd(y + 8 * int64_t{N} + 1, acc[t][3]);
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[t][e] = 0.0f;
        }
        ++tg, left = upt;
      }
    }
  }
  if (xo == 0x12345678u) sink = xo;
#endif
}

// The weights' tensor map: dims (32 words of a column group's 64-row tile, N / 4 column groups, K / 64
// tiles), box (32, CG, 2 SK), the 128-byte swizzle.
static bool weight_map(CUtensorMap* map, const void* base, int N, int K, int CG, int SK) {
  using Encode = PFN_cuTensorMapEncodeTiled_v12000;
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found) !=
          cudaSuccess ||
      found != cudaDriverEntryPointSuccess)
    return false;
  const cuuint64_t dims[3] = {32, cuuint64_t(N / 4), cuuint64_t(K / 64)};
  const cuuint64_t strides[2] = {cuuint64_t(K) * 2, 128};
  const cuuint32_t box[3] = {32, cuuint32_t(CG), cuuint32_t(2 * SK)};
  const cuuint32_t unit[3] = {1, 1, 1};
  const CUresult r = reinterpret_cast<Encode>(fn)(
      map, CU_TENSOR_MAP_DATA_TYPE_UINT32, 3, const_cast<void*>(base), dims, strides, box, unit,
      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) std::printf("  tensor map refused (%d) for CG %d SK %d\n", int(r), CG, SK);
  return r == CUDA_SUCCESS;
}

int main() {
  Lab lab;
  auto& [prop, tm, copy_gbps] = lab;
  const Shape shapes[] = {{28672, 8192}, {8192, 28672}, {8192, 8192}};
  const bool profile = std::getenv("TMA_PROFILE") != nullptr;  // one launch a variant, one shape
  // K row (within a step of 128) of tile t, half h, word i, slot s of channel 0's pieces
  int rowof[2][2][4][8];
  {
    const dql::layouts::FtGeometry geo{4};
    for (int k = 0; k < 128; ++k) {
      const dql::layouts::FtPlace p = dql::layouts::ft_place(geo, 0, k, 8192);
      const int t = int(p.word / 32), within = int(p.word % 32);
      if (within >= 8) std::printf("layout: channel 0 outside its 8 words\n"), std::exit(1);
      rowof[t][within / 4][within % 4][p.slot] = k;
    }
  }
  for (const Shape& sh : shapes) {
    if (profile && sh.n != 28672) continue;
    const int N = sh.n, K = sh.k, G = 128;
    const Int4Problem pb = int4_problem(kM, N, K, G);
    const int nsteps = K / 128;
    // Xs: step, fragment f = 2 j + m, lane (g, q): {X[g][r(2m)], X[g][r(2m + 4)]}, the same for token g + 8,
    // {X[g][r(2m + 1)], X[g][r(2m + 5)]} / 16, and for g + 8, with r(s) the row of slot s of word q of
    // piece (tile j / 2, half j % 2)
    std::vector<__half> xs(size_t(nsteps) * 8 * 32 * 8);
    std::vector<float> c4(size_t(nsteps) * 32);
    for (int st = 0; st < nsteps; ++st) {
      double cst[kM] = {};
      for (int f = 0; f < 8; ++f)
        for (int ln = 0; ln < 32; ++ln) {
          const int j = f / 2, m = f % 2, gg = ln / 4, qq = ln % 4;
          const int slots[8] = {2 * m,     2 * m + 4, 2 * m,     2 * m + 4,
                                2 * m + 1, 2 * m + 5, 2 * m + 1, 2 * m + 5};
          for (int e = 0; e < 8; ++e) {
            const int tok = gg + 8 * ((e / 2) % 2);
            const bool hi = e >= 4;
            const int row = st * 128 + rowof[j / 2][j % 2][qq][slots[e]];
            const __half hv = __float2half(pb.xf[size_t(tok) * K + row] * (hi ? 0.0625f : 1.0f));
            xs[((size_t(st) * 8 + f) * 32 + ln) * 8 + e] = hv;
            cst[tok] += (hi ? 1152.0 : 1032.0) * double(__half2float(hv));  // each row of a token once
          }
        }
      for (int gg = 0; gg < 8; ++gg) {
        float* c = &c4[(size_t(st) * 8 + gg) * 4];
        c[0] = c[1] = -float(cst[gg]);
        c[2] = c[3] = -float(cst[gg + 8]);
      }
    }
    const DevBuf<uint32_t> dW(pb.words);
    const DevBuf<__half> dS(pb.s), dX(xs);
    const DevBuf<float> dC(c4), dY(size_t(kM) * N);
    const double bytes = int4_bytes(pb, kM, N);
    std::printf("%dx%d M=16: floor %.1f us\n", N, K, bytes / copy_gbps / 1e3);
    const auto run = [&](auto kernel, const char* name, int WB, int CG, int SK, int smem, bool check) {
      CUtensorMap map;
      if (!weight_map(&map, dW.p, N, K, CG, SK)) return;
      if (N % (4 * CG) != 0) return;
      CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
      int per = 0;
      CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kernel, (WB + 1) * 32, smem));
      const dim3 grid(per * prop.multiProcessorCount);
      const auto launch = [&] {
        kernel<<<grid, (WB + 1) * 32, smem>>>(map, reinterpret_cast<const uint4*>(dX.p),
                                              reinterpret_cast<const float4*>(dC.p), dS.p, dY.p, N, K);
        CK(cudaGetLastError());
      };
      if (profile) {
        launch();
        CK(cudaDeviceSynchronize());
        std::printf("  %s: one launch\n", name);
        return;
      }
      const double err = check ? fp16_rel_err(outputs_once(launch, dY.p, dY.n), pb.ref) : -1.0;
      const double us = tm.median_us(launch);
      std::printf("  %-44s %d blocks/SM %5u blocks %8.2f us %6.1f%% of copy", name, per, grid.x, us,
                  100.0 * bytes / (us * 1e3) / copy_gbps);
      if (check) std::printf("  rel err %.2e", err);
      std::printf("\n");
    };
#define RUN(WB, NT, SK, ST, MODE, NAME, CK_, ...)                                     \
  run(tma16<WB, NT, SK, ST, MODE, ##__VA_ARGS__>, NAME, WB, Ring<WB, NT, SK>::CG, SK, \
      Ring<WB, NT, SK>::bytes(ST), CK_)
    for (int round = 0; round < (profile ? 1 : 2); ++round) {
      const bool ck = round == 0 && !profile;
      RUN(4, 4, 1, 4, 1, "loads only: 4w x 4 tiles, 1 step, 4 stages", false);
      RUN(4, 4, 1, 4, 0, "4w x 4 tiles, 1 step, 4 stages", ck);
      RUN(4, 4, 1, 4, 0, "4w x 4 tiles, 1 step, 4 stages, 2 chains", ck, 1, 2);
      RUN(4, 4, 1, 4, 0, "4w x 4 tiles, 1 step, 4 stages, 4 blocks", ck, 4);
      RUN(4, 4, 1, 3, 0, "4w x 4 tiles, 1 step, 3 stages, 4 blocks", ck, 4);
      RUN(4, 4, 1, 5, 0, "4w x 4 tiles, 1 step, 5 stages", ck);
      RUN(4, 4, 2, 3, 0, "4w x 4 tiles, 2 steps, 3 stages, 3 blocks", ck, 3);
      RUN(4, 2, 1, 4, 0, "4w x 2 tiles, 1 step, 4 stages", ck);
      RUN(4, 2, 1, 4, 0, "4w x 2 tiles, 1 step, 4 stages, 6 blocks", ck, 6);
      RUN(2, 4, 1, 4, 0, "2w x 4 tiles, 1 step, 4 stages", ck);
      RUN(2, 8, 1, 4, 0, "2w x 8 tiles, 1 step, 4 stages", ck);
      RUN(4, 8, 1, 4, 0, "4w x 8 tiles, 1 step, 4 stages", ck);
      RUN(8, 4, 1, 4, 0, "8w x 4 tiles, 1 step, 4 stages, 2 blocks", ck, 2);
    }
  }
  return 0;
}
