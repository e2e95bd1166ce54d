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
// what the A fragment wants of rows g and g + 8. X is staged in rows of 128 bytes (64 halves of K) with
// 16-byte pieces swizzled by row (piece ^ row % 8), the 128-byte swizzle the tensor cores read
// through the matrix descriptor (8-row atoms 1024 bytes apart, each stage 1024-byte aligned).
//
// A block of two warpgroups owns 128 channels by BN tokens (48 to 256 in steps of 16, fitted to M by
// gemv::hopper_rows, since the tensor cores' work grows with BN, padding included) for a run of K:
// two blocks a multiprocessor up to 128 rows, one above (a k16 chunk then two wgmma). A ring of stages holds
// per 64 rows of K the X rows, the weights (32 column groups of 128 bytes, in the 128-byte swizzle too, which
// keeps the lanes' word reads free of bank conflicts) and the scale row. The copy engine fills it (three
// boxes of tensor maps a stage, issued by the first thread of one warpgroup or the other, tile by tile: see
// step below); a stage's `full` mbarrier completes when its bytes have landed and its `empty` one when every
// thread is done with it, so no block-wide barrier paces the loop.
// Blocks of 112 rows and more pair up in clusters of two that share their X rows (each copies half into
// both). Each 64-row tile is four k16 chunks. Unlike the other kernels, which add a group's products in fp32
// and meet its scale once per output, here each weight pair is multiplied by its scale in the operand type
// (one mul.rn.f16x2 / bf16x2 a register, q * s rounded once, as Marlin does), so that one set of accumulators
// runs over all of K and no tile waits for its products before the next is issued: the next tile is
// dequantized while they run. Where the tiles do not fill the multiprocessors' blocks K is cut into runs that
// meet in the workspace (gemv::hopper_runs), in slots the tile's first run adds. Measured in
// notes/performance.md, h1 to h5 and r1.
#include <cuda_runtime.h>

#include <mutex>
#include <optional>
#include <string>

#include "gemv_io.cuh"
#include "kernels/gemv/split.hpp"
#include "kernels/quant/quant.hpp"
#include "launch_note.cuh"
#include "wgmma.cuh"

namespace dql::cuda::io {

namespace {

using recipes::OutType;

constexpr int kThreads = 256;                                       // two warpgroups
constexpr int kChannels = static_cast<int>(gemv::kHopperChannels);  // 64 a warpgroup
// The rows of X a block may take (gemv::hopper_rows): kLeastRows to kLoneRows in steps of kRowStep.
constexpr int kLeastRows = static_cast<int>(gemv::kHopperLeastRows);
constexpr int kLoneRows = static_cast<int>(gemv::kHopperLoneRows);
constexpr int kRowStep = static_cast<int>(gemv::kHopperRowStep);

// A stage: BN rows of X (64 halves of K each, 128-byte swizzle), the weights of 128 channels (32
// column groups of 128 bytes, 128-byte swizzle) and their scale row.
template <int BN>
struct Shape {
  static constexpr int kBlocks = static_cast<int>(gemv::hopper_blocks_per_sm(BN));
  static constexpr int kXBytes = BN * 128;
  static constexpr int kWBytes = kChannels * 32;
  static constexpr int kSBytes = kChannels * 2;
  static constexpr int kStageBytes = (kXBytes + kWBytes + kSBytes + 1023) / 1024 * 1024;
  // Stages of the ring: 6 for blocks of up to 64 rows (64 measured the same with 4, 6 and 8:
  // notes/performance.md, h2), 5 for the others two a multiprocessor, up to 128 rows (what 128 rows leave
  // room for). A block alone on its multiprocessor takes 8 where they fit (up to 176 rows), else
  // 4: a power of two, whose stage index is a mask. With 7 (as many as fit), ptxas moved the stage
  // arithmetic of the 192-row loop out of the uniform registers and that block ran 1.19-1.24x slower
  // (notes/performance.md, h5).
  static constexpr int kStages = BN <= 64                               ? 6
                                 : kBlocks == 2                         ? 5
                                 : 8 * kStageBytes <= 227 * 1024 - 2048 ? 8
                                                                        : 4;
  // + room to align the ring to 1024 bytes (the swizzle's period), + the barriers.
  static constexpr int kSmem = kStages * kStageBytes + 1024 + 2 * kStages * 8;
  // 228 KB of shared memory a multiprocessor, 1 KB of it the system's a block.
  static_assert(kBlocks * (kSmem + 1024) <= 228 * 1024);
  static constexpr int R = BN / 2;  // accumulators a thread
  // Tokens of the first wgmma a k16 chunk and of the second, if any: above 128 rows (wgmma's N goes to
  // 256, but the operand lists here stop at 128) a k16 chunk is two wgmma of about half the rows each.
  static constexpr int N1 = BN <= 128 ? BN : (BN / 2 + 15) / 16 * 16;
  static constexpr int N2 = BN - N1;
};
// gemv::hopper_rows holds blocks alone of over kHopperDeepRows rows to longer runs of K: their rings
// have four stages instead of eight.
static_assert(Shape<static_cast<int>(gemv::kHopperDeepRows)>::kStages == 8 &&
              Shape<static_cast<int>(gemv::kHopperDeepRows) + kRowStep>::kStages == 4);

// The stage that frees at step i is refilled at step i + kLag, so that the thread issuing the refill
// rarely waits for the other warpgroup (or the other block of the cluster) to release it: against
// a refill at once, 1.02-1.04x on the large shapes (notes/performance.md, h2).
constexpr int kLag = 1;

struct Args : FtIo {
  int runs;     // runs of K a tile
  int cluster;  // blocks a cluster (1 or 2): where 2, the pair shares its rows of X
};

__device__ __forceinline__ unsigned load_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
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

#ifdef DQL_BULK_COPY
// The cluster's blocks: every thread of each arrives, and waits for all of them.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::
                   : "memory");
}
// The address of the same shared-memory word in block `rank` of the cluster.
__device__ __forceinline__ uint32_t peer_addr(const void* p, unsigned rank) {
  uint32_t d;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(d) : "r"(smem_addr(p)), "r"(rank));
  return d;
}
// An arrival at a barrier of another block of the cluster (`bar` from peer_addr).
__device__ __forceinline__ void mbar_arrive_peer(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(bar) : "memory");
}
// A box of a 2D tensor map into the same place of every block of the cluster in `mask`, completing
// on each one's barrier at `bar`.
__device__ __forceinline__ void tensor_copy_2d_all(void* dst, const CUtensorMap* map, int x, int y,
                                                   uint64_t* bar, uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(smem_addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(x), "r"(y), "r"(smem_addr(bar)), "h"(mask)
      : "memory");
}
#endif

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

#define DQL_F8(d, i)                                                                              \
  "+f"(d[O + i]), "+f"(d[O + i + 1]), "+f"(d[O + i + 2]), "+f"(d[O + i + 3]), "+f"(d[O + i + 4]), \
      "+f"(d[O + i + 5]), "+f"(d[O + i + 6]), "+f"(d[O + i + 7])
// The operands of m64nNk16 for N = 48 to 128 in steps of 16 (one wgmma instruction each, N a literal):
// DQL_DN lists N / 2 accumulators, the four A registers and the descriptor; DQL_ON binds the
// accumulators; DQL_KEEPN is the index of `keep`, after them.
#define DQL_D48                                                                                           \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, " \
  "%22, %23}, {%24, %25, %26, %27}, %28, p, 1, 1, 0;\n}\n"
#define DQL_O48 DQL_F8(d, 0), DQL_F8(d, 8), DQL_F8(d, 16)
#define DQL_D64                                                                                           \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, " \
  "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 0;\n}\n"
#define DQL_O64 DQL_F8(d, 0), DQL_F8(d, 8), DQL_F8(d, 16), DQL_F8(d, 24)
#define DQL_D80                                                                                            \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, "  \
  "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39}, {%40, %41, " \
  "%42, %43}, %44, p, 1, 1, 0;\n}\n"
#define DQL_O80 DQL_F8(d, 0), DQL_F8(d, 8), DQL_F8(d, 16), DQL_F8(d, 24), DQL_F8(d, 32)
#define DQL_D96                                                                                           \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, " \
  "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, "  \
  "%42, %43, %44, %45, %46, %47}, {%48, %49, %50, %51}, %52, p, 1, 1, 0;\n}\n"
#define DQL_O96 DQL_F8(d, 0), DQL_F8(d, 8), DQL_F8(d, 16), DQL_F8(d, 24), DQL_F8(d, 32), DQL_F8(d, 40)
#define DQL_D112                                                                                             \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, "    \
  "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, "     \
  "%42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55}, {%56, %57, %58, %59}, %60, p, 1, " \
  "1, 0;\n}\n"
#define DQL_O112 \
  DQL_F8(d, 0), DQL_F8(d, 8), DQL_F8(d, 16), DQL_F8(d, 24), DQL_F8(d, 32), DQL_F8(d, 40), DQL_F8(d, 48)
#define DQL_D128                                                                                          \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, " \
  "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, "  \
  "%42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, "  \
  "%62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n"
#define DQL_O128                                                                                         \
  DQL_F8(d, 0), DQL_F8(d, 8), DQL_F8(d, 16), DQL_F8(d, 24), DQL_F8(d, 32), DQL_F8(d, 40), DQL_F8(d, 48), \
      DQL_F8(d, 56)
// m64nNk16 with A from registers, the sum kept where `keep` is set; TY: "f16" or "bf16".
#define DQL_WGMMA(N, TY)                                                                \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" DQL_KEEP##N                         \
               ", 0;\n"                                                                 \
               "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY "." TY " " DQL_D##N \
               : DQL_O##N                                                               \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(keep)       \
               : "memory")
#define DQL_KEEP48 "29"
#define DQL_KEEP64 "37"
#define DQL_KEEP80 "45"
#define DQL_KEEP96 "53"
#define DQL_KEEP112 "61"
#define DQL_KEEP128 "69"

// d[O, O + N / 2) (+)= A (64 x 16, four registers a thread) x B (16 x N, the descriptor), the sum kept
// where `keep` is set. The accumulators of a warp: d[O + 4j + e] is channel row g + 8 (e / 2) of its
// 16, token 8j + 2r + e % 2 of B's N.
template <OutType T, int N, int O, int R>
__device__ __forceinline__ void wgmma(float (&d)[R], const uint32_t (&a)[4], uint64_t desc, int keep) {
  static_assert(N % 16 == 0 && N >= 48 && N <= 128 && O + N / 2 <= R);
  constexpr bool f16 = T == OutType::F16;
#define DQL_WGMMA_IF(NN)     \
  if constexpr (N == NN) {   \
    if constexpr (f16) {     \
      DQL_WGMMA(NN, "f16");  \
    } else {                 \
      DQL_WGMMA(NN, "bf16"); \
    }                        \
  }
  DQL_WGMMA_IF(48)
  DQL_WGMMA_IF(64)
  DQL_WGMMA_IF(80)
  DQL_WGMMA_IF(96)
  DQL_WGMMA_IF(112)
  DQL_WGMMA_IF(128)
#undef DQL_WGMMA_IF
}
#undef DQL_WGMMA
#undef DQL_D48
#undef DQL_O48
#undef DQL_KEEP48
#undef DQL_D64
#undef DQL_O64
#undef DQL_KEEP64
#undef DQL_D80
#undef DQL_O80
#undef DQL_KEEP80
#undef DQL_D96
#undef DQL_O96
#undef DQL_KEEP96
#undef DQL_D112
#undef DQL_O112
#undef DQL_KEEP112
#undef DQL_D128
#undef DQL_O128
#undef DQL_KEEP128
#undef DQL_F8

// xmap: X, [M rows][K halves], boxes of BN / cluster rows x 64; wmap: the weights, [N / 4 column
// groups][K / 2 words], boxes of 32 x 32; smap: the scales, [K / G rows][N halves], boxes of 1 x 128.
template <OutType T, bool NAIVE, int BN>
__global__ void __launch_bounds__(kThreads, Shape<BN>::kBlocks)
    hopper_kernel(Args a, const __grid_constant__ CUtensorMap xmap, const __grid_constant__ CUtensorMap wmap,
                  const __grid_constant__ CUtensorMap smap) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using S = Shape<BN>;
  constexpr int R = S::R, kS = S::kStages;
  extern __shared__ unsigned char smem[];
  const uint32_t smem_s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  unsigned char* ring = smem + (((smem_s + 1023u) & ~1023u) - smem_s);
  uint64_t* full = reinterpret_cast<uint64_t*>(ring + kS * S::kStageBytes);  // the stage has landed
  uint64_t* empty = full + kS;  // every thread of the cluster is done with it
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, r = lane % 4;
  // Blocks of a cluster take neighbouring channel blocks of the same tokens and run of K; tiles of one
  // channel block are neighbours, so that their blocks share its weights in the L2.
  const int cl = a.cluster, rank = static_cast<int>(blockIdx.x % cl);  // the block's rank in its cluster
  const int x_rows = BN / cl;                                          // the rows of X it copies
  // Tokens, channels and tiles fit in 32 bits, as the copy engine's coordinates do: fewer registers
  // held through the loop.
  const int token_blocks = static_cast<int>((a.m + BN - 1) / BN);
  // The runs of a tile are launched last first, so that its first run, which adds the others' sums,
  // starts after them.
  const int part = a.runs - 1 - static_cast<int>(blockIdx.x / cl % a.runs);
  const int group_tile = static_cast<int>(blockIdx.x / cl / a.runs);
  const int tb = group_tile % token_blocks, cb = group_tile / token_blocks * cl + rank;
  const int tile = cb * token_blocks + tb, tok0 = tb * BN, ch0 = cb * kChannels;
  const int ktiles = static_cast<int>(a.k / 64), tpg = a.group / 64;
  const int kt0 = ktiles * part / a.runs, count = ktiles * (part + 1) / a.runs - kt0;

  if (tid == 0) {
    for (int s = 0; s < kS; ++s) {
      mbar_init(full + s, 1);
      mbar_init(empty + s, kThreads * cl);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  if (cl > 1) {
    cluster_sync();  // every block's barriers are ready before any copy or arrival reaches them
  } else {
    __syncthreads();
  }

  // Fills the stage of the run's k-th tile of K: its rows of X (into every block of the cluster), the
  // weights and the scale row (thread 0 the first stages, then the refills' issuer, see step).
  const auto issue = [&](int k) {
    const int s = k % kS, kt = kt0 + k;
    unsigned char* st = ring + s * S::kStageBytes;
    mbar_expect_tx(full + s, S::kXBytes + S::kWBytes + S::kSBytes);
    if (cl == 1) {
      tensor_copy_2d(st, &xmap, kt * 64, tok0, full + s);
    } else {
      tensor_copy_2d_all(st + rank * x_rows * 128, &xmap, kt * 64, tok0 + rank * x_rows, full + s, 3);
    }
    tensor_copy_2d(st + S::kXBytes, &wmap, kt * 32, ch0 / 4, full + s);
    tensor_copy_2d(st + S::kXBytes + S::kWBytes, &smap, ch0, kt / tpg, full + s);
  };
  if (tid == 0) {
    for (int k = 0; k < kS && k < count; ++k) issue(k);
  }
  // Its stage released by this thread (in every block of the cluster).
  uint32_t peer_empty = 0;
  if (cl > 1) peer_empty = peer_addr(empty, static_cast<unsigned>(rank ^ 1));
  const auto release = [&](int k) {
    mbar_arrive(empty + k % kS);
    if (cl > 1) mbar_arrive_peer(peer_empty + (k % kS) * 8);
  };

  // What a thread reads of a stage: words r and 4 + r of its two channels (rows g and g + 8 of its
  // warp's 16) and their scales. Channel c = 4 i + j is column group i's 16-byte pieces 2 j and
  // 2 j + 1 (its words 0-3 and 4-7), which the swizzle places at piece ^ i % 8.
  const int c0 = 64 * (warp / 4) + 16 * (warp % 4) + g;
  const auto word_at = [&](int c, int h) {
    const int i = c / 4;
    return S::kXBytes + i * 128 + (((2 * (c % 4) + h) ^ (i % 8)) * 16) + r * 4;
  };
  const int woff[2][2] = {{word_at(c0, 0), word_at(c0, 1)}, {word_at(c0 + 8, 0), word_at(c0 + 8, 1)}};
  const int soff = S::kXBytes + S::kWBytes + c0 * 2;

  // The A registers of the run's k-th tile: word q / 2 of both channels gives chunk q's pairs
  // 2 (q % 2) and 2 (q % 2) + 1, rows g and g + 8, each pair times its channel's scale in the
  // operand type. Waits for the stage to land.
  const auto dequant = [&](int k, uint32_t(&frag)[4][4]) {
    mbar_wait(full + k % kS, (k / kS) & 1);
    const unsigned char* st = ring + (k % kS) * S::kStageBytes;
    const uint32_t s0 = scale_pair<T>(*reinterpret_cast<const uint16_t*>(st + soff));
    const uint32_t s1 = scale_pair<T>(*reinterpret_cast<const uint16_t*>(st + soff + 16));
#pragma unroll
    for (int h = 0; h < 2; ++h) {  // one word of each channel at a time: fewer registers live
      uint32_t pairs[2][4];
#pragma unroll
      for (int c = 0; c < 2; ++c)
        gemv::ft_word_pairs<NAIVE>(4, T, *reinterpret_cast<const uint32_t*>(st + woff[c][h]), pairs[c]);
#pragma unroll
      for (int p = 0; p < 4; p += 2) {
        uint32_t(&f)[4] = frag[2 * h + p / 2];
        f[0] = mul2<T>(pairs[0][p], s0);
        f[1] = mul2<T>(pairs[1][p], s1);
        f[2] = mul2<T>(pairs[0][p + 1], s0);
        f[3] = mul2<T>(pairs[1][p + 1], s1);
      }
    }
  };
  float acc[R] = {};
  const uint64_t desc0 = swizzled_desc(smem_addr(ring));  // + 2 a k16 chunk (32 bytes)
  // The k-th tile's products (the run's first on zero accumulators). They read `frag` after they are
  // issued.
  const auto multiply = [&](int k, const uint32_t(&frag)[4][4]) {
    const uint64_t desc = desc0 + (k % kS) * (S::kStageBytes >> 4);
    hold(acc);
    wg_fence();
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      wgmma<T, S::N1, 0>(acc, frag[q], desc + 2 * q, q > 0 || k > 0);
      // The rows of X after the first N1 (their 8-row atoms N1 / 8 further on).
      if constexpr (S::N2 > 0)
        wgmma<T, S::N2, S::N1 / 2>(acc, frag[q], desc + 2 * q + S::N1 * 8, q > 0 || k > 0);
    }
    wg_commit();
  };
  // One step: tile k's products are issued; once tile k - 1's are done its stage is released, the stage
  // released kLag steps before is refilled, and tile k + 1 is dequantized into `next` (whose registers
  // tile k - 1's products read until the wait) while tile k's products run.
  // The refills alternate between the first threads of the two warpgroups (even tiles thread 0, odd ones
  // thread 128). With thread 0 issuing them all, its warpgroup, which waits for each refill's `empty`
  // barrier and issues its copies, fell kS - 3 steps behind the other, which then waited at every step
  // for tiles issued just in time (0.45 us of a 0.70 us step at 96 rows of 28672x8192, traced); in turns,
  // 1.03-1.14x on 28672x8192, 8192x28672, 8192x8192 and 4096x4096 at 65-256 rows (notes/performance.md, p2).
  const auto step = [&](int k, uint32_t(&cur)[4][4], uint32_t(&next)[4][4]) {
    multiply(k, cur);
    wg_wait<1>();
    hold(next);
    if (k > 0) release(k - 1);
    const int freed = k - 1 - kLag;
    if (tid == ((freed + kS) % 2 == 0 ? 0 : kThreads / 2) && freed >= 0 && freed + kS < count) {
      mbar_wait(empty + freed % kS, (freed / kS) & 1);
      issue(freed + kS);
    }
    __syncwarp();
    if (k + 1 < count) dequant(k + 1, next);
  };
  uint32_t fa[4][4] = {}, fb[4][4] = {};
  if (count > 0) dequant(0, fa);
  for (int k = 0; k < count; k += 2) {
    step(k, fa, fb);
    if (k + 1 < count) step(k + 1, fb, fa);
  }
  wg_wait<0>();
  hold(acc);
  hold(fa);
  hold(fb);
  // No block of the cluster leaves while another may still arrive at its barriers.
  if (cl > 1) cluster_sync();
  const int64_t tok_t = tok0 + 2 * r, ch_t = ch0 + c0;
  const auto tok_of = [&](int i) { return tok_t + 8 * (i / 4) + i % 2; };
  const auto ch_of = [&](int i) { return ch_t + 8 * ((i / 2) % 2); };
  // Where K is cut into runs, each run but the first stores its sums in its block's slot of the workspace
  // ([R / 4][kThreads] float4s a block, each thread its own) and counts itself on the tile's counter; the
  // first run waits for the count, adds the slots in run order, clears them and writes the outputs.
  // Against fp32 atomics into one sum a tile (each run adding its sums there, the last to arrive reading
  // them back): 1.02-1.37x on 8192x28672, 8192x8192 and 4096x4096 at 65-256 rows (notes/performance.md, r1).
  if (a.runs > 1) {
    float4* const slots = reinterpret_cast<float4*>(a.sums) + tid;
    const auto slot_of = [&](int p) {  // the block of run p of this tile and rank
      return static_cast<int64_t>((group_tile * a.runs + a.runs - 1 - p) * cl + rank) * (R / 4) * kThreads;
    };
    if (part > 0) {
#pragma unroll
      for (int j = 0; j < R / 4; ++j)
        __stcg(slots + slot_of(part) + j * kThreads,
               make_float4(acc[4 * j], acc[4 * j + 1], acc[4 * j + 2], acc[4 * j + 3]));
      __threadfence();
      __syncthreads();
      if (tid == 0) atomicAdd(a.counters + tile, 1u);
      return;
    }
    if (tid == 0) {
      const unsigned long long since = global_ns();
      while (load_acquire(a.counters + tile) != static_cast<unsigned>(a.runs - 1))
        if (global_ns() - since > kWaitLimitNs) __trap();  // a run of the tile never stored its sums
      a.counters[tile] = 0u;
    }
    __syncthreads();
    for (int p = 1; p < a.runs; ++p) {
#pragma unroll
      for (int j = 0; j < R / 4; ++j) {
        float4* const at = slots + slot_of(p) + j * kThreads;
        const float4 o = __ldcg(at);
        acc[4 * j] += o.x;
        acc[4 * j + 1] += o.y;
        acc[4 * j + 2] += o.z;
        acc[4 * j + 3] += o.w;
        __stcg(at, make_float4(0.0f, 0.0f, 0.0f, 0.0f));  // the workspace's zeros back
      }
    }
  }
#pragma unroll
  for (int i = 0; i < R; ++i) write_out<T>(a.out, tok_of(i), ch_of(i), acc[i]);
#else
  __trap();  // wgmma needs sm_90a; the launcher is only called on compute capability 9.0
#endif
}

// Empty, or why the launch (`e`) or, where the caller waits, the kernel failed.
std::string status(cudaError_t e, bool wait) {
  if (e == cudaSuccess && wait) e = cudaDeviceSynchronize();
  if (e == cudaSuccess) return {};
  return std::string("the Hopper GEMM kernel failed on the GPU: ") + cudaGetErrorString(e);
}

// Blocks of 112 rows and more pair up in clusters of two where the channel blocks do (N a multiple of
// 256): each copies half of the X rows into both, which halves what X takes of the L2's bandwidth.
// Against single blocks on 28672x8192 and 8192x28672: 1.01-1.17x with 128 rows at 72-256 rows of X
// (h2), 0.99-1.02x with 112 and 128 rows at 112-256, 0.99x with 80 and 96 rows (h3); blocks of 64
// rows measured 0.94-0.99x so. The smaller blocks stay single; those over 128 rows were measured in
// pairs only (h5; notes/performance.md).
template <OutType T, bool NAIVE, int BN>
std::optional<std::string> launch_bn(const FtIo& io, int sms, bool wait) {
  using S = Shape<BN>;
  const int cl = BN >= 112 && io.n / kChannels % 2 == 0 ? 2 : 1;
  CUtensorMap xmap, wmap, smap;
  if (!tensor_map_2d(&xmap, CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, io.x, io.k, io.m, 64, BN / cl,
                     CU_TENSOR_MAP_SWIZZLE_128B) ||
      !tensor_map_2d(&wmap, CU_TENSOR_MAP_DATA_TYPE_UINT32, 4, io.q, io.k / 2, io.n / 4, 32, kChannels / 4,
                     CU_TENSOR_MAP_SWIZZLE_128B) ||
      !tensor_map_2d(&smap, CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, io.scales, io.n, io.k / io.group, kChannels,
                     1))
    return std::nullopt;
  const auto kernel = hopper_kernel<T, NAIVE, BN>;
  static std::once_flag raised;
  std::call_once(
      raised, [&] { cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, S::kSmem); });
  const int64_t tiles = gemv::hopper_tiles(io.m, BN, io.n);
  int64_t runs = gemv::hopper_runs(tiles, io.k / 64, sms, BN);
  if (!gemv::hopper_slots_fit(tiles * runs, BN, io.n, io.m)) runs = 1;
  const Args a{io, static_cast<int>(runs), cl};
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(tiles * a.runs));
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = S::kSmem;
  cudaLaunchAttribute cluster[1];
  cluster[0].id = cudaLaunchAttributeClusterDimension;
  cluster[0].val.clusterDim.x = static_cast<unsigned>(cl);
  cluster[0].val.clusterDim.y = 1;
  cluster[0].val.clusterDim.z = 1;
  cfg.attrs = cluster;
  cfg.numAttrs = 1;
  return status(run_kernel_ex(cfg, kernel, a, xmap, wmap, smap), wait);
}

// The instance for `rows` (gemv::hopper_rows: a multiple of 16 from 48 to 256), found from 48 up.
template <OutType T, bool NAIVE, int BN = kLeastRows>
std::optional<std::string> launch_t(int64_t rows, const FtIo& io, int sms, bool wait) {
  if constexpr (BN < kLoneRows) {
    if (rows > BN) return launch_t<T, NAIVE, BN + kRowStep>(rows, io, sms, wait);
  }
  return launch_bn<T, NAIVE, BN>(io, sms, wait);
}

}  // namespace

std::optional<std::string> launch_hopper_gemm(const FtIo& io, OutType t, bool naive, int sms, int forced,
                                              bool wait) {
  if (forced != 0 && !gemv::hopper_rows_exist(forced))
    return "the Hopper GEMM's rows of X a block were set to " + std::to_string(forced) +
           "; they must be a multiple of " + std::to_string(kRowStep) + " from " +
           std::to_string(kLeastRows) + " to " + std::to_string(kLoneRows) +
           " (or 0 for the launcher's choice)";
  const int64_t rows = forced != 0 ? forced : gemv::hopper_rows(io.m, io.n, io.k / 64, sms);
  if (t == OutType::F16)
    return naive ? launch_t<OutType::F16, true>(rows, io, sms, wait)
                 : launch_t<OutType::F16, false>(rows, io, sms, wait);
  return naive ? launch_t<OutType::BF16, true>(rows, io, sms, wait)
               : launch_t<OutType::BF16, false>(rows, io, sms, wait);
}

}  // namespace dql::cuda::io
