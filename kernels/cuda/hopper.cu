// The W4A16 GEMM on Hopper (compute capability 9.0, compiled for sm_90a): warpgroup MMA.
//
// wgmma multiplies a 64-row A by an N-column B for a whole warpgroup (four warps), with A from
// registers or shared memory and B from shared memory only. Here the product is turned round: the
// dequantized weights are A (64 channels a warpgroup, in registers, dequantized by the magic-number
// recipes) and X is B (N tokens, read by the tensor cores from shared memory), so the outputs come
// out as [channel, token] and each weight is dequantized once for all N tokens of the block.
//
// The mixed-GEMM layout gives the A registers directly: a warp's 16 channels are rows g and g + 8 of
// its part of A, and in a channel's 64-row tile lane r's words r and 4 + r hold, pair after pair,
// k = 2r, 2r + 1 and 2r + 8, 2r + 9 of each k16 chunk in natural order (gemv::ft_word_pairs), which is
// what the A fragment wants of rows g and g + 8. X is staged as the GEMM kernel of gemv.cu stages it:
// rows of 128 bytes (64 halves of K) with 16-byte pieces swizzled by row (piece ^ row % 8), which is
// the 128-byte swizzle the tensor cores read through the matrix descriptor (8-row atoms 1024 bytes
// apart, each stage 1024-byte aligned).
//
// A block of two warpgroups owns 128 channels by BN tokens (64 or 128, gemv::hopper_rows) for a run of
// K, two blocks a multiprocessor; a ring of kStages stages, filled by cp.async, holds per 64 rows of K
// the X rows, the weights (128 channels of 32 bytes) and the scale row. Each 64-row tile is four wgmma.
// Unlike the other kernels, which add a group's products in fp32 and meet its scale once per output,
// here each weight pair is multiplied by its scale in the operand type (one mul.rn.f16x2 / bf16x2 a
// register, q * s rounded once, as Marlin does), so that one set of accumulators runs over all of K
// and no tile waits for its products before the next is issued: the next tile is dequantized while
// they run. Where the tiles do not fill two blocks a multiprocessor K is cut into runs that meet in
// the workspace (gemv::hopper_runs). Measured in notes/performance.md, h1.
#include <cuda_runtime.h>

#include <mutex>

#include "gemv_io.cuh"
#include "kernels/gemv/split.hpp"
#include "kernels/quant/quant.hpp"

namespace dql::cuda::io {

namespace {

using recipes::OutType;

constexpr int kStages = 4;

constexpr int kThreads = 256;                                       // two warpgroups
constexpr int kChannels = static_cast<int>(gemv::kHopperChannels);  // 64 a warpgroup

template <int BN>
struct Shape {
  static constexpr int kXBytes = BN * 128;  // BN rows of 64 halves
  static constexpr int kWBytes = kChannels * 32;
  static constexpr int kSBytes = kChannels * 2;
  static constexpr int kStageBytes = (kXBytes + kWBytes + kSBytes + 1023) / 1024 * 1024;
  static constexpr int kSmem = kStages * kStageBytes + 1024;  // + room to align the ring to 1024
  static constexpr int XN = BN * 8 / kThreads;                // pieces of X a thread copies
  static constexpr int R = BN / 2;                            // accumulators a thread
};

struct Args : FtIo {
  int runs;              // runs of K a tile
  int64_t token_blocks;  // blocks of BN tokens
};

// The shared-memory matrix descriptor of a K-major operand with the 128-byte swizzle: start address,
// leading byte offset (unused with this swizzle: 1), stride byte offset 1024 (8 rows of 128 bytes).
__device__ __forceinline__ uint64_t swizzled_desc(uint32_t addr) {
  return static_cast<uint64_t>((addr & 0x3FFFFu) >> 4) | (uint64_t{1} << 16) | (uint64_t{1024 >> 4} << 32) |
         (uint64_t{1} << 62);
}

__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wg_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// cp.async writes through the generic proxy; wgmma reads through the async proxy.
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// Keeps the compiler from moving accumulators across the asynchronous products.
template <int R>
__device__ __forceinline__ void hold(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
// Keeps a tile's A registers from being given to other values until the wait that frees them:
// wgmma reads them after it is issued, which the compiler does not know.
__device__ __forceinline__ void hold(uint32_t (&f)[4][4]) {
#pragma unroll
  for (int q = 0; q < 4; ++q)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(f[q][e])::"memory");
}

// A scale (fp16) as a pair of the operand type, and a pair times a pair, rounded once.
template <OutType T>
__device__ __forceinline__ uint32_t scale_pair(uint16_t s) {
  const uint32_t v = gemv::f32_to_act(quant::half_to_f32(s), T);
  return v | (v << 16);
}
template <OutType T>
__device__ __forceinline__ uint32_t mul2(uint32_t a, uint32_t b) {
  uint32_t d;
  if constexpr (T == OutType::F16) {
    asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  } else {
    asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  }
  return d;
}

#define DQL_F8(d, i)                                                                          \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
      "+f"(d[i + 6]), "+f"(d[i + 7])
// m64nNk16 with A from registers; TY: "f16" or "bf16".
#define DQL_WGMMA_N64(TY)                                                                              \
  asm volatile(                                                                                        \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"                                                     \
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY                                          \
      " "                                                                                              \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "    \
      "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, " \
      "1, 0;\n}\n"                                                                                     \
      : DQL_F8(d, 0), DQL_F8(d, 8), DQL_F8(d, 16), DQL_F8(d, 24)                                       \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(keep)                               \
      : "memory")
#define DQL_WGMMA_N128(TY)                                                                          \
  asm volatile(                                                                                     \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"                                                  \
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY                                      \
      " "                                                                                           \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
      "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "  \
      "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "  \
      "%56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n"        \
      : DQL_F8(d, 0), DQL_F8(d, 8), DQL_F8(d, 16), DQL_F8(d, 24), DQL_F8(d, 32), DQL_F8(d, 40),     \
        DQL_F8(d, 48), DQL_F8(d, 56)                                                                \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(keep)                            \
      : "memory")

// d (+)= A (64 x 16, four registers a thread) x B (16 x N, the descriptor), the sum kept where
// `keep` is set. The accumulators of a warp: d[4j + e] is channel row g + 8 (e / 2) of its 16, token
// 8j + 2r + e % 2.
template <OutType T, int N>
__device__ __forceinline__ void wgmma(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t desc, int keep) {
  static_assert(N == 64 || N == 128);
  if constexpr (N == 64 && T == OutType::F16) DQL_WGMMA_N64("f16");
  if constexpr (N == 64 && T == OutType::BF16) DQL_WGMMA_N64("bf16");
  if constexpr (N == 128 && T == OutType::F16) DQL_WGMMA_N128("f16");
  if constexpr (N == 128 && T == OutType::BF16) DQL_WGMMA_N128("bf16");
}
#undef DQL_WGMMA_N64
#undef DQL_WGMMA_N128
#undef DQL_F8

template <OutType T, bool NAIVE, int BN>
__global__ void __launch_bounds__(kThreads, 2) hopper_kernel(Args a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using S = Shape<BN>;
  constexpr int R = S::R;
  extern __shared__ unsigned char smem[];
  const uint32_t smem_s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  const uint32_t ring_s = (smem_s + 1023u) & ~1023u;
  const unsigned char* ring = smem + (ring_s - smem_s);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, r = lane % 4;
  const int part = static_cast<int>(blockIdx.x % a.runs);
  const int64_t tile = blockIdx.x / a.runs;
  // Tiles of one channel block are neighbours, so that their blocks share its weights in the L2.
  const int64_t tok0 = (tile % a.token_blocks) * BN, ch0 = (tile / a.token_blocks) * kChannels;
  const int ktiles = static_cast<int>(a.k / 64);
  const int kt0 = ktiles * part / a.runs, count = ktiles * (part + 1) / a.runs - kt0;

  // What a thread copies of a stage (StageCopy), worked out once.
  const StageCopy<S::XN> copy(a, tok0, ch0, S::kXBytes, tid);
  const auto load = [&](int stage, int kt) { copy(ring_s + stage * S::kStageBytes, kt); };
  // What a thread reads of a stage: words r and 4 + r of its two channels (rows g and g + 8 of its
  // warp's 16; the halves of a channel swapped where bit 2 of the channel is set) and their scales.
  const int c0 = 64 * (warp / 4) + 16 * (warp % 4) + g;
  const int wsw = (g >> 2) & 1;
  const int woff[2][2] = {
      {S::kXBytes + (c0 * 8 + wsw * 4 + r) * 4, S::kXBytes + (c0 * 8 + (wsw ^ 1) * 4 + r) * 4},
      {S::kXBytes + ((c0 + 8) * 8 + wsw * 4 + r) * 4, S::kXBytes + ((c0 + 8) * 8 + (wsw ^ 1) * 4 + r) * 4}};
  const int soff = S::kXBytes + S::kWBytes + c0 * 2;

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < count) load(s, kt0 + s);
    cp_async_commit();
  }
  // The A registers of stage i: word q / 2 of both channels gives chunk q's pairs 2 (q % 2) and
  // 2 (q % 2) + 1, rows g and g + 8, each pair times its channel's scale in the operand type.
  const auto dequant = [&](int i, uint32_t(&frag)[4][4]) {
    const unsigned char* st = ring + (i % kStages) * S::kStageBytes;
    uint32_t pairs[2][2][4];
#pragma unroll
    for (int c = 0; c < 2; ++c)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        gemv::ft_word_pairs<NAIVE>(4, T, *reinterpret_cast<const uint32_t*>(st + woff[c][h]), pairs[c][h]);
    const uint32_t s0 = scale_pair<T>(*reinterpret_cast<const uint16_t*>(st + soff));
    const uint32_t s1 = scale_pair<T>(*reinterpret_cast<const uint16_t*>(st + soff + 16));
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int h = q / 2, p = 2 * (q % 2);
      frag[q][0] = mul2<T>(pairs[0][h][p], s0);
      frag[q][1] = mul2<T>(pairs[1][h][p], s1);
      frag[q][2] = mul2<T>(pairs[0][h][p + 1], s0);
      frag[q][3] = mul2<T>(pairs[1][h][p + 1], s1);
    }
  };
  float acc[R] = {};
  const uint64_t desc0 = swizzled_desc(ring_s);  // + 2 a k16 chunk (32 bytes)
  // Stage i's products (the run's first on zero accumulators). They read `frag` after they are issued.
  const auto multiply = [&](int i, const uint32_t(&frag)[4][4]) {
    const uint64_t desc = desc0 + (i % kStages) * (S::kStageBytes >> 4);
    hold(acc);
    wg_fence();
#pragma unroll
    for (int q = 0; q < 4; ++q) wgmma<T, BN>(acc, frag[q], desc + 2 * q, q > 0 || i > 0);
    wg_commit();
  };
  // One step: stage i's products are issued; while they run, stage i + 1 is dequantized into `next`,
  // whose registers stage i - 1's products read until the wait.
  const auto step = [&](int i, uint32_t(&cur)[4][4], uint32_t(&next)[4][4]) {
    multiply(i, cur);
    wg_wait<1>();  // stage i - 1's products are done
    hold(next);
    if (i + 1 < count) {
      cp_async_wait<kStages - 3>();
      fence_proxy_async();
      __syncthreads();  // stage i + 1 has landed; every warpgroup is done with stage i - 1
      if (i + kStages - 1 < count) load((i + kStages - 1) % kStages, kt0 + i + kStages - 1);
      cp_async_commit();
      dequant(i + 1, next);
    }
  };
  uint32_t fa[4][4] = {}, fb[4][4] = {};
  if (count > 0) {
    cp_async_wait<kStages - 2>();
    fence_proxy_async();
    __syncthreads();
    dequant(0, fa);
  }
  for (int i = 0; i < count; i += 2) {
    step(i, fa, fb);
    if (i + 1 < count) step(i + 1, fb, fa);
  }
  wg_wait<0>();
  hold(acc);
  hold(fa);
  hold(fb);
  cp_async_wait<0>();
  const int64_t tok_t = tok0 + 2 * r, ch_t = ch0 + c0;
  const auto tok_of = [&](int i) { return tok_t + 8 * (i / 4) + i % 2; };
  const auto ch_of = [&](int i) { return ch_t + 8 * ((i / 2) % 2); };
  if (a.runs > 1) {
    const auto val = [&](int i) -> float& { return acc[i]; };
    const auto at = [&](int i) { return tok_of(i) * a.n + ch_of(i); };
    const auto live = [&](int i) { return tok_of(i) < a.m; };
    if (!meet_runs<R>(val, at, live, a.sums, a.counters + tile, a.runs)) return;
  }
#pragma unroll
  for (int i = 0; i < R; ++i) write_out<T>(a.out, tok_of(i), ch_of(i), acc[i]);
#else
  __trap();  // wgmma needs sm_90a; the launcher is only called on compute capability 9.0
#endif
}

std::string status(bool wait) {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess && wait) e = cudaDeviceSynchronize();
  if (e == cudaSuccess) return {};
  return std::string("the Hopper GEMM kernel failed on the GPU: ") + cudaGetErrorString(e);
}

template <OutType T, bool NAIVE, int BN>
std::string launch_bn(const FtIo& io, int sms, bool wait) {
  using S = Shape<BN>;
  static std::once_flag raised;
  std::call_once(raised, [] {
    cudaFuncSetAttribute(hopper_kernel<T, NAIVE, BN>, cudaFuncAttributeMaxDynamicSharedMemorySize, S::kSmem);
  });
  Args a{io, 1, (io.m + BN - 1) / BN};
  const int64_t tiles = gemv::hopper_tiles(io.m, BN, io.n);
  a.runs = static_cast<int>(gemv::hopper_runs(tiles, io.k / 64, sms));
  hopper_kernel<T, NAIVE, BN><<<static_cast<unsigned>(tiles * a.runs), kThreads, S::kSmem>>>(a);
  return status(wait);
}

template <OutType T, bool NAIVE>
std::string launch_t(const FtIo& io, int sms, bool wait) {
  return gemv::hopper_rows(io.m, io.n, io.k / 64, sms) == 64 ? launch_bn<T, NAIVE, 64>(io, sms, wait)
                                                             : launch_bn<T, NAIVE, 128>(io, sms, wait);
}

}  // namespace

std::string launch_hopper_gemm(const FtIo& io, OutType t, bool naive, int sms, bool wait) {
  if (t == OutType::F16)
    return naive ? launch_t<OutType::F16, true>(io, sms, wait) : launch_t<OutType::F16, false>(io, sms, wait);
  return naive ? launch_t<OutType::BF16, true>(io, sms, wait) : launch_t<OutType::BF16, false>(io, sms, wait);
}

}  // namespace dql::cuda::io
