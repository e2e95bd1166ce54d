// The GEMV / GEMM kernels: Y = X W^T with W in a packed format. Values come from the shared
// pieces in gemv/gemv.hpp (word conversion, activation quantization, epilogue); the
// arrangement (who does what, how bytes move) is described with each kernel and measured in
// notes/performance.md.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <map>
#include <mutex>
#include <type_traits>

#include "codebook.cuh"
#include "gemv.hpp"
#include "gemv_io.cuh"
#include "kernels/gemv/split.hpp"
#include "launch.hpp"
#include "launch_note.cuh"

namespace dql::cuda {

namespace io {
namespace {
// The encoder comes from the driver through the runtime (no link to libcuda). dims, box: `rank`
// each, innermost first; strides: the byte strides of dimensions 1 .. rank - 1.
bool tensor_map(CUtensorMap* map, CUtensorMapDataType type, unsigned rank, const void* base,
                const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                CUtensorMapSwizzle swizzle) {
  using Encode = PFN_cuTensorMapEncodeTiled_v12000;
  static const Encode encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
#if CUDART_VERSION >= 12050
    const cudaError_t e =
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found);
#else
    const cudaError_t e = cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &fn, cudaEnableDefault, &found);
#endif
    return e == cudaSuccess && found == cudaDriverEntryPointSuccess ? reinterpret_cast<Encode>(fn) : nullptr;
  }();
  if (!encode) return false;
  const cuuint32_t unit[3] = {1, 1, 1};
  return encode(map, type, rank, const_cast<void*>(base), dims, strides, box, unit,
                CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}
}  // namespace

bool tensor_map_2d(CUtensorMap* map, CUtensorMapDataType type, unsigned elem_bytes, const void* base,
                   int64_t inner, int64_t outer, unsigned box_inner, unsigned box_outer,
                   CUtensorMapSwizzle swizzle) {
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(inner), static_cast<cuuint64_t>(outer)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(inner) * elem_bytes};
  const cuuint32_t box[2] = {box_inner, box_outer};
  return tensor_map(map, type, 2, base, dims, strides, box, swizzle);
}

bool tensor_map_3d(CUtensorMap* map, CUtensorMapDataType type, const void* base, const int64_t (&dims)[3],
                   const int64_t (&strides)[2], const unsigned (&box)[3], CUtensorMapSwizzle swizzle) {
  const cuuint64_t d[3] = {static_cast<cuuint64_t>(dims[0]), static_cast<cuuint64_t>(dims[1]),
                           static_cast<cuuint64_t>(dims[2])};
  const cuuint64_t st[2] = {static_cast<cuuint64_t>(strides[0]), static_cast<cuuint64_t>(strides[1])};
  const cuuint32_t b[3] = {box[0], box[1], box[2]};
  return tensor_map(map, type, 3, base, d, st, b, swizzle);
}
}  // namespace io

namespace {

using gemv::Path;
using io::cp_async16;
using io::cp_async8;
using io::cp_async_commit;
using io::cp_async_wait;
using io::FtIo;
using io::global_ns;
using io::kWaitLimitNs;
using io::meet_runs;
using io::Out;
using io::out_value;
using io::tensor_map_2d;
using io::tensor_map_3d;
using io::write_out;
#ifdef DQL_BULK_COPY
using io::bulk_copy;
using io::mbar_arrive;
using io::mbar_arrive_at;
using io::mbar_expect_tx;
using io::mbar_init;
using io::mbar_wait;
using io::mbar_wait_at;
using io::tensor_copy_2d;
using io::tensor_copy_3d;
#endif
using recipes::OutType;

std::string status(const char* what, bool wait) {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess && wait) e = cudaDeviceSynchronize();
  if (e == cudaSuccess) return {};
  return std::string(what) + " failed on the GPU: " + cudaGetErrorString(e);
}

size_t align256(size_t b) { return (b + 255) & ~size_t{255}; }

// Workspace: fp32 partial sums (M x N, in the order the kernel chooses: RowMajorSums or
// ChannelMajorSums below; at least room for the slots of split tiles, gemv::sum_floats), one arrival counter
// per output tile, and for the online path the int8 activations [M, K] with their block parameters [M, K /
// G] and, last, its slices' sums.
struct Workspace {
  float* sums;
  unsigned* counters;
  int8_t* aq;
  gemv::ActBlock* ab;
  uint16_t* xs;  // X as the copy-engine stages hold it (stage_x_kernel)
  float* parts;  // the online path's slice sums (online_part_floats)
};

constexpr int64_t kMinCounters = 1 << 16;

// Arrival counters: one per output tile of the launched kernel, whose tiles are at least 8 rows
// of X by 64 channels (the slice form's smallest; the copy-engine and AWQ forms have fewer), and
// never fewer than 2^16.
int64_t counter_count(const gemv::Weights& w, int64_t m) {
  return std::max<int64_t>(kMinCounters, ((m + 7) / 8) * ((w.n + 63) / 64));
}

// Halves a row of X takes re-laid for the copy-engine stages (units of at least 64 along K, each
// padded by 8 halves).
int64_t staged_x_halves(int64_t k) { return k + 8 * (k / 64 + 1); }
// Rows of X the workspace holds re-laid: up to 64 (the copy-engine stages), and wherever the walk may run
// from 2 rows, 16 a token tile (a tile's fragments for 16 tokens and its constants, 17 K halves, fit in 16
// rows of staged_x_halves): 16 up to 16 rows, 32 from 17.
int64_t staged_x_rows(int64_t m) {
  static_assert(gemv::kWalkRows == 16, "the walk's X and constants fit 16 staged rows a token tile");
  const int64_t walk_rows = gemv::kWalkRows * gemv::walk_token_tiles(m);
  return std::min<int64_t>(m >= gemv::kWalkLeastRows ? std::max<int64_t>(m, walk_rows) : m, 64);
}

// The online path's slice sums, [slices, M, N] floats, where weights it reads (gemv::online_reads) are
// cut into more than one slice of K (gemv::online_slices); not kept zero.
int64_t online_part_floats(const gemv::Weights& w, int64_t m) {
  const int64_t slices =
      gemv::online_reads(w.layout, w.scheme, w.group) ? gemv::online_slices(w.n, w.k, w.group) : 1;
  return slices > 1 ? slices * m * w.n : 0;
}

Workspace carve(void* base, const gemv::Weights& w, int64_t m) {
  char* p = static_cast<char*>(base);
  Workspace ws;
  ws.sums = reinterpret_cast<float*>(p);
  p += align256(static_cast<size_t>(gemv::workspace_sum_floats(w.n, w.k, m)) * 4);
  ws.counters = reinterpret_cast<unsigned*>(p);
  p += align256(static_cast<size_t>(counter_count(w, m)) * 4);
  ws.aq = reinterpret_cast<int8_t*>(p);
  p += align256(static_cast<size_t>(m * w.k));
  ws.ab = reinterpret_cast<gemv::ActBlock*>(p);
  p += align256(static_cast<size_t>(m * (w.k / 64)) * sizeof(gemv::ActBlock));
  ws.xs = reinterpret_cast<uint16_t*>(p);
  p += align256(static_cast<size_t>(staged_x_rows(m) * staged_x_halves(w.k)) * 2);
  ws.parts = reinterpret_cast<float*>(p);
  return ws;
}

// ---- tensor-core helpers ----------------------------------------------------------------------

template <OutType T>
__device__ __forceinline__ void mma_16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                          uint32_t b0, uint32_t b1) {
#if __CUDA_ARCH__ >= 800
  if constexpr (T == OutType::F16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
#elif __CUDA_ARCH__ >= 750
  if constexpr (T == OutType::F16) {  // Turing: two k8 halves
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(b0));
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a2), "r"(a3), "r"(b1));
  } else {
    __trap();  // bf16 tensor cores need sm_80; the launcher refuses before this
  }
#else
  __trap();
#endif
}

__device__ __forceinline__ void mma_16832_s8(int (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                             uint32_t b0, uint32_t b1) {
#if __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
  // The int8 m16n8k32 product needs sm_80; the launcher refuses before this.
  __trap();
#endif
}

// [[maybe_unused]] here and below: helpers whose callers some architectures compile out (__CUDA_ARCH__,
// DQL_BULK_COPY); those builds would otherwise warn that they are never referenced.
[[maybe_unused]] __device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t p) {
#if __CUDA_ARCH__ >= 800
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(p));
#endif
}

// mma_16816 without `volatile`: the products depend on registers only, so the compiler may
// interleave them with the dequant of the next words.
template <OutType T>
__device__ __forceinline__ void wide_mma(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                         uint32_t b0, uint32_t b1) {
#if __CUDA_ARCH__ >= 800
  if constexpr (T == OutType::F16) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
#else
  mma_16816<T>(d, a0, a1, a2, a3, b0, b1);  // Turing: fp16 in two k8 halves
#endif
}

// ---- split-K across blocks: partial sums meet in the workspace; the last block to arrive ---
// ---- runs the epilogue and leaves the workspace and the counter at zero again.          ---

// A lane's outputs of the mma accumulators by pairs: (token, channel, value of the token, value of
// the next token) for tokens tok + 8 t and tok + 8 t + 1 of channels ch0 and ch1.
template <int NT, class Fn>
__device__ __forceinline__ void lane_pairs(int64_t tok, int64_t ch0, int64_t ch1, const float (&acc)[NT][4],
                                           Fn&& fn) {
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    fn(tok + 8 * t, ch0, acc[t][0], acc[t][1]);
    fn(tok + 8 * t, ch1, acc[t][2], acc[t][3]);
  }
}

// The same outputs one by one: (token, channel, value).
template <int NT, class Fn>
__device__ __forceinline__ void lane_outputs(int64_t tok, int64_t ch0, int64_t ch1, const float (&acc)[NT][4],
                                             Fn&& fn) {
  lane_pairs<NT>(tok, ch0, ch1, acc, [&](int64_t t, int64_t ch, float v0, float v1) {
    fn(t, ch, v0);
    fn(t + 1, ch, v1);
  });
}

// Where the partial sum of (token, channel) lives in the workspace: [M, N] by default; [N, M]
// (ChannelMajorSums) for the copy-engine form's two token tiles and for the tensor-core AWQ and NF4
// kernels (finish_pairs), whose lanes hold neighbouring tokens of one channel and add them by one
// vector reduction (token_pair_add).
struct RowMajorSums {
  __device__ __forceinline__ int64_t operator()(const Out& o, int64_t tok, int64_t ch) const {
    return tok * o.n + ch;
  }
};

// Every thread of the block calls this with the same (done, total); `each(fn)` calls fn(tok, ch,
// value) for the thread's outputs, `add()` puts the thread's partial sums into the workspace at
// the places `at` names.
template <OutType T, class Each, class Add, class At>
__device__ void finish_tile_with(const Out& o, float* sums, unsigned* counter, int done, int total, Each each,
                                 Add add, At at) {
  if (done == total) {  // the whole K in this block: no workspace
    each([&](int64_t tok, int64_t ch, float v) { write_out<T>(o, tok, ch, v); });
    return;
  }
  add();
  __threadfence();
  __syncthreads();
  __shared__ int last;
  if (threadIdx.x == 0) {
    const unsigned before = atomicAdd(counter, static_cast<unsigned>(done));
    last = before + static_cast<unsigned>(done) == static_cast<unsigned>(total);
    if (last) *counter = 0u;
  }
  __syncthreads();
  if (last) {
    __threadfence();
    each([&](int64_t tok, int64_t ch, float) {
      if (tok >= o.m) return;
      float* p = sums + at(o, tok, ch);
      const float v = __ldcg(p);
      *p = 0.0f;
      write_out<T>(o, tok, ch, v);
    });
  }
  __syncthreads();
}

// The [M, N] workspace, one atomic add per output.
template <OutType T, class Each>
__device__ void finish_tile(const Out& o, float* sums, unsigned* counter, int done, int total, Each each) {
  const RowMajorSums at;
  const auto add = [&] {
    each([&](int64_t tok, int64_t ch, float v) {
      if (tok < o.m) atomicAdd(sums + at(o, tok, ch), v);
    });
  };
  finish_tile_with<T>(o, sums, counter, done, total, each, add, at);
}

// ---- W4A16 / W8A16 on the mixed-GEMM layout, tensor cores --------------------------------------
//
// A warp owns 16 output channels (the A operand of mma.m16n8k16: weights as rows, so that
// M = 1 wastes no tensor-core rows) and NT tiles of 8 tokens (the B operand). Lane (g, r) =
// (lane / 4, lane % 4) reads, per step of KSTEP along K, WPT words of channel g and of channel
// g + 8: its own contiguous chunk of the layout, one vector load each. The chunk's values, in
// the order the recipe produces them, go straight into the fragment registers: the sum over K
// does not care which k a fragment slot holds, as long as X supplies the same k, so the only
// cost of the layout is picking X's values in that order (register selection, no shuffles).
//
// The fp32 sum of a group stays in the mma accumulators and meets its scale once per group
// (one FFMA per output), not once per weight.
//
// A block (4 warps, 64 channels) takes L consecutive steps of one tile; the slices of a tile meet
// in the workspace. notes/performance.md has the versions tried (persistent stream-K blocks,
// cp.async pipelines) and why this simple form won.
constexpr int kWarps = 4;       // the online kernel's warps per block
constexpr int kSliceWarps = 4;  // the mixed-GEMM kernel's

template <int BITS, int WPT>
struct FtShape {
  static constexpr int E = 32 / BITS;             // elements per word
  static constexpr int PPW = E / 2;               // element pairs per word
  static constexpr int KSTEP = 4 * WPT * E;       // K per warp step
  static constexpr int MMAS = WPT * PPW / 2;      // mma.m16n8k16 per step and token tile
  static constexpr int I = BITS == 4 ? 4 : 2;     // interleaved columns
  static constexpr int V = 64 / E;                // words of one column per 64-row tile
  static constexpr int RG = BITS == 4 ? 32 : 16;  // row-permutation group
  // Lane r's words at step s, counted from the column's first word of a step-aligned run, and
  // the first k they hold, counted from that run's first k (runs of whole 64-row tiles).
  static __device__ __forceinline__ int word_offset(int s, int r) {
    const int cw = s * 4 * WPT + r * WPT;
    return I * V * (cw / V) + cw % V;
  }
  static __device__ __forceinline__ int k_base(int s, int r) {
    const int cw = s * 4 * WPT + r * WPT;
    const int wi = cw % V;
    return 64 * (cw / V) + RG * (wi / 4) + 2 * (wi % 4);
  }
};

FtIo ft_io(const GemvLaunch& L, const Workspace& ws) {
  return FtIo{L.w.q,   L.w.scales, L.p.x,     L.w.n,
              L.w.k,   L.p.m,      L.w.group, Out{L.y, L.p.bias, L.p.epi, L.p.m, L.w.n},
              ws.sums, ws.counters};
}

struct FtArgs : FtIo {
  int mchunks;  // token chunks of 8 * NT
};

template <int WPT>
struct Words {
  uint32_t v[WPT];
};

template <int WPT>
__device__ __forceinline__ Words<WPT> load_words(const uint32_t* p) {
  Words<WPT> w;
  if constexpr (WPT == 4) {
    const uint4 t = __ldcs(reinterpret_cast<const uint4*>(p));
    w.v[0] = t.x, w.v[1] = t.y, w.v[2] = t.z, w.v[3] = t.w;
  } else {
    const uint2 t = __ldcs(reinterpret_cast<const uint2*>(p));
    w.v[0] = t.x, w.v[1] = t.y;
  }
  return w;
}

// The fp32 sums of the current group: two sets, even and odd mma of a step, so that consecutive
// tensor-core instructions do not wait for each other's results (one set from four token tiles,
// whose tiles are independent chains already; see fold_scales).
template <int NT, int SETS = 2>
struct GroupSums {
  float v[SETS][NT][4] = {};
};

// One step of a warp: its lanes' weight words (channels g and g + 8) against X, whose k values for
// token g + 8 t start at x + t * tok_stride (halves; the layout's order, 8 apart per word pair).
template <int BITS, int WPT, OutType T, bool NAIVE, int NT, int SETS = 2>
__device__ __forceinline__ void ft_step(const Words<WPT>& w0, const Words<WPT>& w1, const uint16_t* x,
                                        int tok_stride, GroupSums<NT, SETS>& grp) {
  using S = FtShape<BITS, WPT>;
  using W = Words<WPT>;
  W xr[NT][S::PPW];
#pragma unroll
  for (int t = 0; t < NT; ++t) {
#pragma unroll
    for (int p = 0; p < S::PPW; ++p) xr[t][p] = *reinterpret_cast<const W*>(x + t * tok_stride + 8 * p);
  }
  uint32_t pa[WPT * S::PPW], pb[WPT * S::PPW];
#pragma unroll
  for (int i = 0; i < WPT; ++i) {
    gemv::ft_word_pairs<NAIVE>(BITS, T, w0.v[i], pa + i * S::PPW);
    gemv::ft_word_pairs<NAIVE>(BITS, T, w1.v[i], pb + i * S::PPW);
  }
  // Pair q = i * PPW + p is pair p of word i; its X values are xr[t][p].v[i]. An mma takes the
  // same pair of two consecutive words (i, i + 1), so that its two X registers are neighbours
  // in one shared-memory load (no register moves to form the B operand).
#pragma unroll
  for (int m = 0; m < S::MMAS; ++m) {
    const int p = m % S::PPW, i = 2 * (m / S::PPW);
    const int q0 = i * S::PPW + p, q1 = q0 + S::PPW;
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      mma_16816<T>(grp.v[m % SETS][t], pa[q0], pb[q0], pa[q1], pb[q1], xr[t][p].v[i], xr[t][p].v[i + 1]);
    }
  }
}

// A group's sums meet their scales (channel g: s0, channel g + 8: s1) once per output.
template <int NT>
__device__ __forceinline__ void apply_scales(uint16_t s0, uint16_t s1, GroupSums<NT>& grp,
                                             float (&acc)[NT][4]) {
  const float f0 = quant::half_to_f32(s0), f1 = quant::half_to_f32(s1);
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    float* g0 = grp.v[0][t];
    float* g1 = grp.v[1][t];
    acc[t][0] = fmaf(f0, g0[0] + g1[0], acc[t][0]);
    acc[t][1] = fmaf(f0, g0[1] + g1[1], acc[t][1]);
    acc[t][2] = fmaf(f1, g0[2] + g1[2], acc[t][2]);
    acc[t][3] = fmaf(f1, g0[3] + g1[3], acc[t][3]);
#pragma unroll
    for (int e = 0; e < 4; ++e) g0[e] = g1[e] = 0.0f;
  }
}

// The same where the caller knows the group's ends at compile time: one FFMA per output from one set
// of sums (four token tiles, whose independent tiles keep the tensor cores busy), an FADD and an FFMA
// from two (one and two token tiles). The sums are not cleared here: the caller starts the next group
// from zero, so that its first mma adds to zero registers instead of the sums being cleared by moves.
template <int NT, int SETS>
__device__ __forceinline__ void fold_scales(uint16_t s0, uint16_t s1, const GroupSums<NT, SETS>& grp,
                                            float (&acc)[NT][4]) {
  const float f0 = quant::half_to_f32(s0), f1 = quant::half_to_f32(s1);
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    float v[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) v[e] = SETS == 1 ? grp.v[0][t][e] : grp.v[0][t][e] + grp.v[SETS - 1][t][e];
    acc[t][0] = fmaf(f0, v[0], acc[t][0]);
    acc[t][1] = fmaf(f0, v[1], acc[t][1]);
    acc[t][2] = fmaf(f1, v[2], acc[t][2]);
    acc[t][3] = fmaf(f1, v[3], acc[t][3]);
  }
}

// The slice form: block b takes tile b / slices and the L consecutive steps of slice b % slices.
// Every lane issues all its weight loads of the slice at once (each column-group stream is then
// read L * 256 bytes at a time), the block stages the slice's X in shared memory once, and the
// scales come with the weights. Slices of a tile meet in the workspace (finish_tile).
template <int BITS, int WPT, OutType T, bool NAIVE, int NT, int L>
__global__ void __launch_bounds__(kSliceWarps * 32) ft_slice_kernel(FtArgs a) {
  using S = FtShape<BITS, WPT>;
  using W = Words<WPT>;
  constexpr int kTok = 8 * NT;
  constexpr int kPitch = L * S::KSTEP + 8;  // halves per staged X row (+16 bytes: no bank conflicts)
  __shared__ __align__(16) uint16_t xs[kTok * kPitch];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, r = lane % 4;
  constexpr int kTileChannels = 16 * kSliceWarps;
  const int64_t tiles = (a.n + kTileChannels - 1) / kTileChannels;
  const int slices = static_cast<int>(a.k / S::KSTEP / L);
  const int64_t seg = blockIdx.x / slices;
  const int s0 = static_cast<int>(blockIdx.x % slices) * L;
  const int64_t mc = seg / tiles, tile = seg % tiles;
  const int64_t wptc = a.k * S::I / S::E;
  const int64_t ch0 = tile * kTileChannels + warp * 16 + g, ch1 = ch0 + 8;
  const bool live = ch0 < a.n;
  const uint32_t* col0 = a.q + ((live ? ch0 : 0) / S::I) * wptc + S::V * ((live ? ch0 : 0) % S::I);
  const uint32_t* col1 = a.q + ((live ? ch1 : 0) / S::I) * wptc + S::V * ((live ? ch1 : 0) % S::I);

  // 1. Every weight word of the slice, and the scales of the groups that end in it.
  W w0[L], w1[L];
#pragma unroll
  for (int j = 0; j < L; ++j) {
    w0[j] = live ? load_words<WPT>(col0 + S::word_offset(s0 + j, r)) : W{};
    w1[j] = live ? load_words<WPT>(col1 + S::word_offset(s0 + j, r)) : W{};
  }
  const int spg = a.group / S::KSTEP;  // steps per group
  uint16_t sc0[L], sc1[L];
#pragma unroll
  for (int j = 0; j < L; ++j) {
    const int s = s0 + j;
    const bool end = (s + 1) % spg == 0 || j == L - 1;
    const int64_t gi = s / spg;
    sc0[j] = live && end ? __ldg(a.scales + gi * a.n + ch0) : uint16_t{0};
    sc1[j] = live && end ? __ldg(a.scales + gi * a.n + ch1) : uint16_t{0};
  }
  // 2. X of the slice's K range, for this token chunk, into shared memory.
  const int64_t tok0 = mc * kTok;
  const int64_t k0 = static_cast<int64_t>(s0) * S::KSTEP;
  constexpr int kVecPerRow = L * S::KSTEP / 8;
  for (int i = threadIdx.x; i < kTok * kVecPerRow; i += kSliceWarps * 32) {
    const int t = i / kVecPerRow, v = i % kVecPerRow;
    const uint4 val = tok0 + t < a.m ? __ldg(reinterpret_cast<const uint4*>(a.x + (tok0 + t) * a.k + k0) + v)
                                     : make_uint4(0u, 0u, 0u, 0u);
    *reinterpret_cast<uint4*>(xs + t * kPitch + v * 8) = val;
  }
  __syncthreads();

  // 3. The products.
  float acc[NT][4] = {};
  GroupSums<NT> grp;
#pragma unroll
  for (int j = 0; j < L; ++j) {
    const int s = s0 + j;
    const int kb = S::k_base(s, r) - s0 * S::KSTEP;  // relative to the slice's first k
    ft_step<BITS, WPT, T, NAIVE, NT>(w0[j], w1[j], xs + g * kPitch + kb, 8 * kPitch, grp);
    if ((s + 1) % spg == 0 || j == L - 1) apply_scales<NT>(sc0[j], sc1[j], grp, acc);
  }
  const int64_t tok_c = tok0 + 2 * r;
  finish_tile<T>(a.out, a.sums, a.counters + seg, L, static_cast<int>(a.k / S::KSTEP), [&](auto&& fn) {
    if (live) lane_outputs<NT>(tok_c, ch0, ch1, acc, fn);
  });
}

template <int BITS, int WPT, OutType T, bool NAIVE, int NT, int L>
std::string launch_slice(const GemvLaunch& Lc, const Workspace& ws, bool wait) {
  using S = FtShape<BITS, WPT>;
  FtArgs a{ft_io(Lc, ws), static_cast<int>((Lc.p.m + 8 * NT - 1) / (8 * NT))};
  constexpr int kTileChannels = 16 * kSliceWarps;
  const int64_t blocks = a.mchunks * ((a.n + kTileChannels - 1) / kTileChannels) * (a.k / S::KSTEP / L);
  run_kernel(ft_slice_kernel<BITS, WPT, T, NAIVE, NT, L>, static_cast<unsigned>(blocks), kSliceWarps * 32, 0,
             a);
  return status("the mixed-GEMM GEMV kernel", wait);
}

// L steps per block: 4 with one token tile, 8 with more (X staged once serves more weights);
// 1 where the number of steps does not divide.
template <int BITS, int WPT, OutType T, bool NAIVE, int NT>
std::string launch_ft(const GemvLaunch& L, const Workspace& ws, bool wait) {
  constexpr int kL = NT == 2 ? 8 : 4;
  const int64_t steps = L.w.k / FtShape<BITS, WPT>::KSTEP;
  if (steps % kL == 0) return launch_slice<BITS, WPT, T, NAIVE, NT, kL>(L, ws, wait);
  return launch_slice<BITS, WPT, T, NAIVE, NT, 1>(L, ws, wait);
}

// ---- Hopper: the copy engine feeds a shared-memory ring ------------------------------------------
//
// The same warps and arithmetic as the slice form, fed by the copy engine instead of per-lane
// loads. A unit is 4 steps of one 64-channel tile: per column group one contiguous run of the
// layout (1 KB for int4 with group 128), the scale rows of the groups the unit touches and the
// unit's rows of X. Warp 0 fills a ring of stages: the unit's weight runs as one box of a 2D tensor
// map (cp.async.bulk.tensor; one bulk copy per run before, each issued lane by lane), the scale
// rows of the groups it touches as one box of a tensor map of the scales where every unit touches
// as many (else one bulk copy a row), then one bulk copy (cp.async.bulk) per row of X (the rows of
// X in one copy where stage_x_kernel has re-laid them first: from 17 rows, and from 12 on large
// matrices; see launch_bulk). A stage's `full` mbarrier completes when its bytes have landed, its
// `empty` one when every lane of the four warps is done with it (each lane arrives: one arrival a
// warp after __syncwarp left compute-sanitizer's racecheck seeing the other lanes' reads unordered
// with the refill), and only then does warp 0 refill it (the other warps go on to the next stage).
// Scales come with the stage: a separate load of them, even one unit ahead, waited behind the
// copies in flight and set the pace. Block b of the grid takes units [units x b / grid,
// units x (b + 1) / grid). Where each block has many units, the grid is persistent (as many blocks
// as fit), its runs cross tile boundaries, and the parts of a tile meet in slots of the workspace
// (RUNS: the blocks take the runs in reverse order, and the block holding a tile's first unit settles
// it at the end of its run; gemv::run_slot_others) or, where the slots would not fit or would take
// too many reads, add their sums into the workspace, settled by a second kernel
// (settle_channel_kernel, settle_run_kernel). Where each has only a few, the grid is tiles x s
// (gemv::split_tile_blocks), so that every run lies inside one tile, and the blocks of a tile meet in slots
// of the workspace (meet_in_slots) or the last to finish settles it (finish_tile; a block with the whole tile
// writes its outputs itself). Needs compute capability 9.0; M up to 64 a pass (int4; more rows go in passes
// of 64), 16 (int8).

// Steps a unit (see BulkShape::kSteps): 8 with two or four token tiles of int4, else 4.
template <int BITS, int NT>
constexpr int kUnitSteps = BITS == 4 && NT >= 2 && NT <= 4 ? 8 : 4;

template <int BITS, int WPT, int NT, int STEPS = kUnitSteps<BITS, NT>>
struct BulkShape {
  using S = FtShape<BITS, WPT>;
  // Two stages: measured faster than three or four (notes/performance.md, g5): the smaller ring
  // lets more blocks share a multiprocessor, and more warps hide more latency.
  static constexpr int kStages = 2;
  // Two token tiles of int4 take steps of two words a lane and units of 8 steps (the launcher
  // picks WPT = 2): the four-word steps' 16-byte reads of lanes r and r + 2 fall in the same
  // shared-memory banks, the 8-byte ones in none, and the longer unit lets a stage's X rows
  // serve twice the weights (notes/performance.md, g11). One token tile keeps 4 steps.
  // Four token tiles (M 17-32, int4) do the same; eight (M 33-64) take units of 4 steps, so that
  // two stages of 64 X rows leave room for two blocks a multiprocessor. Two and four token tiles
  // take units of 4 steps too where K is a multiple of 256 but not of 512 (launch_ft_nt).
  static constexpr int kSteps = STEPS;  // steps per unit
  static_assert(!(BITS == 4 && NT >= 2) || WPT == 2, "two or more token tiles of int4 take two words a lane");
  static constexpr int KU = kSteps * S::KSTEP;                // K per unit
  static constexpr int kChannels = 16 * kSliceWarps;          // channels per tile
  static constexpr int kRuns = kChannels / S::I;              // column groups per tile
  static constexpr int kRunWords = S::I * kSteps * 4 * WPT;   // one column group's words per unit
  static constexpr int kWeightBytes = kRuns * kRunWords * 4;  // weights of one stage
  static constexpr int kScaleBytes = kSteps * kChannels * 2;  // scale rows of the groups a unit touches
  static constexpr int kPitch = KU + 8;                       // halves per X row (+16 B: no bank conflicts)
  static constexpr int kMaxRows = 8 * NT;                     // the largest M
  // X rows a stage holds: M, or from four token tiles always 8 * NT, so that every token tile
  // reads inside the stage (rows past M hold whatever was there; their outputs are never written,
  // and an mma's output column depends on its own X column only).
  static __host__ __device__ int64_t stage_rows(int64_t m) { return NT >= 4 ? kMaxRows : m; }
  static __host__ __device__ int64_t stage_bytes(int64_t m) {
    // Whole 128-byte lines: the tensor copy's destination is 128-byte aligned.
    return (kWeightBytes + kScaleBytes + stage_rows(m) * kPitch * 2 + 127) / 128 * 128;
  }
};

struct ChannelMajorSums {
  __device__ __forceinline__ int64_t operator()(const Out& o, int64_t tok, int64_t ch) const {
    return ch * o.m + tok;
  }
};

#ifdef DQL_BULK_COPY
// p[0] += v0 and p[1] += v1 by one vector reduction (p 8-byte aligned; compute capability 9.0).
__device__ __forceinline__ void red_add2(float* p, float v0, float v1) {
  asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" ::"l"(p), "f"(v0), "f"(v1) : "memory");
}
// p[0..3] += v by one vector reduction (p 16-byte aligned; compute capability 9.0).
__device__ __forceinline__ void red_add4(float* p, float4 v) {
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(v.x), "f"(v.y), "f"(v.z),
               "f"(v.w)
               : "memory");
}
#endif

// Tokens tok and tok + 1 of one channel in the [N, M] workspace (p points at tok): one vector
// reduction where both exist, the pair is 8-byte aligned (M even) and the device has it (compute
// capability 9.0), else one add each.
__device__ __forceinline__ void token_pair_add(float* p, int64_t tok, int64_t m, float v0, float v1) {
#ifdef DQL_BULK_COPY
  if (tok + 1 < m && m % 2 == 0) {
    red_add2(p, v0, v1);
    return;
  }
#endif
  if (tok < m) atomicAdd(p, v0);
  if (tok + 1 < m) atomicAdd(p + 1, v1);
}

// The tensor-core AWQ and NF4 kernels' slices meet in the [N, M] workspace, two neighbouring tokens
// of a channel by one reduction: `pairs(fn)` calls fn(tok, ch, value of tok, value of tok + 1) for the
// lane's pairs.
template <class Pairs>
__device__ __forceinline__ void finish_pairs(const Out& o, float* sums, unsigned* counter, int slices,
                                             Pairs pairs) {
  const auto each = [&](auto&& fn) {
    pairs([&](int64_t tok, int64_t ch, float v0, float v1) {
      fn(tok, ch, v0);
      fn(tok + 1, ch, v1);
    });
  };
  const auto add = [&] {
    pairs([&](int64_t tok, int64_t ch, float v0, float v1) {
      token_pair_add(sums + ChannelMajorSums{}(o, tok, ch), tok, o.m, v0, v1);
    });
  };
  finish_tile_with<OutType::F16>(o, sums, counter, 1, slices, each, add, ChannelMajorSums{});
}

struct BulkArgs : FtIo {
  int64_t units;       // tiles * units per tile
  const uint16_t* xs;  // X re-laid by stage_x_kernel, or null: the stages copy X row by row
  bool scale_box;      // the scale rows a unit touches come as one box of `smap`; else a copy a row
  int split;           // s > 1: the grid is tiles x s and split tiles meet in slots (meet_in_slots);
                       // else the last block of a tile to arrive settles it (finish_tile)
};

// ---- split tiles meeting in slots ----------------------------------------------------------------
//
// Where the fenced form's grid is tiles x s (each block a run inside one tile), block j < s - 1 of a
// tile stores its partial sums in slot j of the workspace ([s - 1][N][M] floats, ChannelMajorSums
// within a slot) and ends; block s - 1, whose run holds the tile's last unit, reads the s - 1 slots as
// they fill, adds its own sums and writes the outputs. A stored value is the float's bits XOR
// kSlotMark, so that the zero the workspace holds means "not stored yet": no fence, no arrival
// counter, and the last block waits only for the stores themselves (one trip to the L2) instead of
// three trips one after another (its own adds, the counter, the others' sums). It clears the slots
// it read for the next call. A NaN is stored as the canonical one (0x7FFFFFFF), so no stored value
// is ever zero. The waiting block is its tile's last in launch order and the grid fits on the device
// at once (split_tile_blocks), so every block it waits for has started.
// The persistent grid's runs meet the same way (ft_bulk_kernel's RUNS): a tile's settler is the block
// holding its first unit, the last of the tile's blocks in launch order since the runs are taken in
// reverse, and the grid is what fits. (A settler adding its slots in its own lanes at one token tile,
// without shared memory, was the same on the H100 but cost the main loop 4-5% on the H200 by its
// mere presence in the kernel: notes/performance.md, l1 and f1.)
// The rules that pick slots, and how many values a thread reads at once, are gemv::slot_split,
// gemv::run_slot_others and gemv::kSlotLoads (split.hpp).
static_assert(gemv::kBlockThreads == kSliceWarps * 32 && gemv::kTileChannels == 16 * kSliceWarps,
              "split.hpp's rules describe this kernel's blocks and tiles");

using gemv::kSlotLoads;
constexpr uint32_t kSlotMark = 0x7FC0A5A5u;  // a NaN other than the canonical one

__device__ __forceinline__ void slot_store(float* p, float v) {
  const uint32_t bits = __float_as_uint(v);
  const uint32_t b = (bits & 0x7FFFFFFFu) > 0x7F800000u ? 0x7FFFFFFFu : bits;  // any NaN: the canonical one
  asm volatile("st.relaxed.gpu.global.b32 [%0], %1;" ::"l"(p), "r"(b ^ kSlotMark) : "memory");
}
__device__ __forceinline__ uint32_t slot_load(const float* p) {
  uint32_t b;
  asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];" : "=r"(b) : "l"(p) : "memory");
  return b;
}

// Waits until none of the slot values `v` is zero ("not stored yet"), reading again, by load(q),
// only those still zero; traps if a slot stays empty for kWaitLimitNs.
template <int N, class Load>
__device__ __forceinline__ void wait_for_slots(uint32_t (&v)[N], Load load) {
  unsigned long long since = 0;
  for (;;) {
    bool waiting = false;
#pragma unroll
    for (int q = 0; q < N; ++q) waiting |= v[q] == 0u;
    if (!waiting) return;
    const unsigned long long now = global_ns();
    if (since == 0) since = now;
    if (now - since > kWaitLimitNs) __trap();  // a block of the tile never stored its sums
#pragma unroll
    for (int q = 0; q < N; ++q) {
      if (v[q] == 0u) v[q] = load(q);
    }
  }
}

#ifdef DQL_BULK_COPY

// Called by every thread of the block at the end of its run in `tile`; `each(fn)` calls fn(tok, ch,
// value) for the thread's outputs; `scratch`: 64 * M floats of shared memory no copy is writing.
// mine >= 0: the block stores its sums in slot `mine` and returns; else it is the tile's settler and
// reads slots 0 .. others - 1.
template <OutType T, class Each>
__device__ __forceinline__ void meet_in_slots(const BulkArgs& a, int64_t tile, int mine, int others,
                                              float* scratch, Each each) {
  constexpr int kTile = gemv::kTileChannels;
  const int m = static_cast<int>(a.m);
  const int64_t slot_pitch = a.m * a.n;
  if (mine >= 0) {
    each([&](int64_t tok, int64_t ch, float v) {
      if (tok < a.m) slot_store(a.sums + mine * slot_pitch + ch * a.m + tok, v);
    });
    return;
  }
  __syncthreads();  // every warp is done with the stage that becomes `scratch`
  each([&](int64_t tok, int64_t ch, float v) {
    if (tok < a.m) scratch[(ch - tile * kTile) * m + tok] = v;
  });
  __syncthreads();
  // Thread t owns outputs t, t + 128, ... of the tile and adds their slots into `scratch` itself;
  // its (output, slot) pairs are read kSlotLoads at a time, the offsets counted without a division.
  constexpr int kThreads = gemv::kBlockThreads;
  const int per = kTile * m;                 // a tile's outputs
  float* const slot0 = a.sums + tile * per;  // the tile's place in slot 0
  const int tid = static_cast<int>(threadIdx.x);
  const int outs = tid < per ? (per - tid + kThreads - 1) / kThreads : 0;
  const int total = outs * others;
  int k = 0, o = tid;
  for (int base = 0; base < total; base += kSlotLoads) {
    uint32_t v[kSlotLoads], at[kSlotLoads];  // at: offset from slot0 (under 2^31: the launcher checks)
    int own[kSlotLoads];
#pragma unroll
    for (int q = 0; q < kSlotLoads; ++q) {
      at[q] = static_cast<uint32_t>(k * slot_pitch + o);
      own[q] = o;
      v[q] = base + q < total ? slot_load(slot0 + at[q]) : kSlotMark;
      if (++k == others) k = 0, o += kThreads;
    }
    wait_for_slots(v, [&](int q) { return slot_load(slot0 + at[q]); });
#pragma unroll
    for (int q = 0; q < kSlotLoads; ++q) {
      if (base + q >= total) break;
      scratch[own[q]] += __uint_as_float(v[q] ^ kSlotMark);
      __stcg(slot0 + at[q], 0.0f);
    }
  }
  __syncthreads();
  for (int o = tid; o < per; o += kThreads) {
    const int tok = o / kTile, c = o % kTile;  // along N: the outputs' writes coalesce
    write_out<T>(a.out, tok, tile * kTile + c, scratch[c * m + tok]);
  }
}
#endif

// X re-laid as the stages hold it, [K / KU][M][pitch] halves, so that a stage's rows of X arrive by
// one bulk copy instead of one a row (a stage of 64 rows took 84 copies, which the lanes of warp 0
// issue one after another). Launched before the product kernel, which waits for it at
// griddepcontrol.wait.
__global__ void stage_x_kernel(const uint16_t* x, uint16_t* xs, int64_t k, int rows, int ku, int pitch) {
#ifdef DQL_BULK_COPY
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  const int64_t per_row = k / 8;  // 16-byte vectors
  const int64_t total = rows * per_row;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t row = i / per_row, kk = (i - row * per_row) * 8;
    const int64_t part = kk / ku;
    const uint4 v = __ldg(reinterpret_cast<const uint4*>(x + row * k + kk));
    *reinterpret_cast<uint4*>(xs + (part * rows + row) * pitch + (kk - part * ku)) = v;
  }
#else
  // The launcher takes this path on compute capability 9.0 only.
  __trap();
#endif
}

// SPG: how the kernel finds a group's ends. -1: counted at run time (a division a unit and a test a
// step); SPG > 0: known at compile time, SPG steps a group, which divides the unit (so that every
// unit starts a group), or 0: groups of whole units (per-channel scales, long groups). One and two
// token tiles keep two sets of sums (even and odd mma of a step: no mma waits for the one before),
// four and eight one set (their token tiles are independent chains already). SPLIT: the persistent grid,
// whose runs cross tiles; with RUNS their parts of a tile meet in slots, else in the settling kernel. A
// separate instantiation: the slots' reads in flight take registers that the settled form would pay in its
// main loop.
template <int BITS, int WPT, OutType T, bool NAIVE, int NT, bool SPLIT, int SPG, bool XS, int STEPS,
          bool RUNS = false>
__global__ void __launch_bounds__(kSliceWarps * 32)
    ft_bulk_kernel(BulkArgs a, const __grid_constant__ CUtensorMap wmap,
                   const __grid_constant__ CUtensorMap smap) {
#ifdef DQL_BULK_COPY
  if constexpr (SPLIT && !RUNS) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  // XS: launched behind stage_x_kernel (a programmatic dependent), whose X is ready after this.
  if constexpr (XS) asm volatile("griddepcontrol.wait;" ::: "memory");
  using S = FtShape<BITS, WPT>;
  using B = BulkShape<BITS, WPT, NT, STEPS>;
  using W = Words<WPT>;
  extern __shared__ __align__(128) unsigned char smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, r = lane % 4;
  const int rows = static_cast<int>(a.m);
  const int stage_bytes = static_cast<int>(B::stage_bytes(a.m));
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + B::kStages * stage_bytes);  // the stage has arrived
  uint64_t* empty = full + B::kStages;  // every lane is done with it
  // Unit and step indices fit in 32 bits (the launcher checks): no 64-bit division in the loop.
  const int per_tile = static_cast<int>(a.k / B::KU);
  // Where persistent runs meet in slots, block b takes run gridDim - 1 - b: a tile's first unit lies in
  // the last-launched of its blocks, which reaches it at the end of its run and waits there for the
  // others (launched before it, so started), which reached their parts of the tile first.
  const int64_t vb = RUNS ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const int u_begin = static_cast<int>(gemv::run_first(vb, gridDim.x, a.units));
  const int u_end = static_cast<int>(gemv::run_first(vb + 1, gridDim.x, a.units));
  const int count = u_end - u_begin;
  const int spg = a.group / S::KSTEP;  // steps per group

  if (threadIdx.x == 0) {
    for (int i = 0; i < B::kStages; ++i) {
      mbar_init(full + i, 1);
      mbar_init(empty + i, kSliceWarps * 32);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();

  // Warp 0 fills a stage: lane 0 announces its bytes and copies the unit's weights, the runs of
  // its 16 column groups, as one box of the tensor map `wmap` ([N / I column groups][their words]),
  // and the scale rows of the groups the unit touches as one box of `smap` ([K / G][N]) where
  // a.scale_box says so; the lanes then issue one copy each for the scale rows otherwise and X
  // (one copy where stage_x_kernel re-laid it, else one a row).
  const auto issue = [&](int u, int buf) {
    const int tile = u / per_tile, part = u - tile * per_tile;
    const int step0 = part * B::kSteps, g0 = step0 / spg;
    const int scale_rows = (step0 + B::kSteps - 1) / spg - g0 + 1;
    unsigned char* st = smem + buf * stage_bytes;
    const int x_copies = XS ? 1 : rows;
    if (lane == 0) {
      mbar_expect_tx(full + buf, static_cast<unsigned>(B::kWeightBytes + scale_rows * B::kChannels * 2 +
                                                       rows * (XS ? B::kPitch : B::KU) * 2));
      tensor_copy_2d(st, &wmap, part * B::kRunWords, tile * B::kRuns, full + buf);
      if (a.scale_box) tensor_copy_2d(st + B::kWeightBytes, &smap, tile * B::kChannels, g0, full + buf);
    }
    __syncwarp();
    for (int c = lane; c < B::kSteps + x_copies; c += 32) {
      if (c < B::kSteps) {
        if (!a.scale_box && c < scale_rows) {
          bulk_copy(st + B::kWeightBytes + c * B::kChannels * 2,
                    a.scales + int64_t{g0 + c} * a.n + int64_t{tile} * B::kChannels, B::kChannels * 2,
                    full + buf);
        }
      } else if (XS) {
        bulk_copy(st + B::kWeightBytes + B::kScaleBytes, a.xs + int64_t{part} * rows * B::kPitch,
                  rows * B::kPitch * 2, full + buf);
      } else {
        const int t = c - B::kSteps;
        bulk_copy(st + B::kWeightBytes + B::kScaleBytes + t * B::kPitch * 2,
                  a.x + t * a.k + int64_t{part} * B::KU, B::KU * 2, full + buf);
      }
    }
  };
  if (warp == 0) {
    for (int i = 0; i < B::kStages && i < count; ++i) issue(u_begin + i, i);
  }

  const int c0 = warp * 16 + g, c1 = c0 + 8;  // channels within the tile
  const int w0_off = (c0 / S::I) * B::kRunWords + S::V * (c0 % S::I);
  const int w1_off = (c1 / S::I) * B::kRunWords + S::V * (c1 % S::I);
  float acc[NT][4] = {};
  static_assert(SPG >= 0 || NT < 4, "four and eight token tiles know their groups' ends (bulk_spg)");
  constexpr int kSets = NT < 4 ? 2 : 1;
  GroupSums<NT, kSets> grp;
  int run_begin = u_begin, buf = 0;
  unsigned parity = 0;
  // The unit's tile and part, counted along the run (no division a unit).
  int tile = u_begin / per_tile, part = u_begin - tile * per_tile - 1;
  for (int i = 0; i < count; ++i) {
    const int u = u_begin + i;
    if (++part == per_tile) part = 0, ++tile;
    const bool last = part == per_tile - 1 || u == u_end - 1;  // the block's run of this tile ends
    mbar_wait(full + buf, parity);
    const unsigned char* st = smem + buf * stage_bytes;
    const uint32_t* wb = reinterpret_cast<const uint32_t*>(st);
    const uint16_t* sb = reinterpret_cast<const uint16_t*>(st + B::kWeightBytes);
    const uint16_t* xb = reinterpret_cast<const uint16_t*>(st + B::kWeightBytes + B::kScaleBytes);
    // Tokens past M read the last real row (from four token tiles, the stage's rows past M; see
    // stage_rows): their columns of the product are never written.
    const uint16_t* xrow = xb + (NT >= 4 ? g : min(g, rows - 1)) * B::kPitch;
    const int tok_stride = NT >= 4  ? 8 * B::kPitch
                           : NT > 1 ? (min(g + 8, rows - 1) - min(g, rows - 1)) * B::kPitch
                                    : 0;
    if constexpr (SPG < 0) {
      const int step0 = part * B::kSteps;
      int gi = step0 / spg;
      int left = spg - (step0 - gi * spg);  // steps of group gi still to come
      const int g0 = gi;
#pragma unroll
      for (int j = 0; j < B::kSteps; ++j) {
        const W w0 = *reinterpret_cast<const W*>(wb + w0_off + S::word_offset(j, r));
        const W w1 = *reinterpret_cast<const W*>(wb + w1_off + S::word_offset(j, r));
        ft_step<BITS, WPT, T, NAIVE, NT>(w0, w1, xrow + S::k_base(j, r), tok_stride, grp);
        if (left == 1 || (last && j == B::kSteps - 1)) {
          const uint16_t* row = sb + (gi - g0) * B::kChannels;
          apply_scales<NT>(row[c0], row[c1], grp, acc);
        }
        if (--left == 0) ++gi, left = spg;
      }
    } else {
      constexpr int kSpg = SPG > 0 ? SPG : B::kSteps;  // steps of a group inside the unit
      static_assert(B::kSteps % kSpg == 0, "a group's steps divide the unit");
      // SPG = 0: a unit lies inside one group; the block's run may start or end inside a group.
      const int upg = SPG == 0 ? spg / B::kSteps : 1;  // units per group
      if (SPG == 0 && (part % upg == 0 || u == run_begin)) grp = {};
#pragma unroll
      for (int j = 0; j < B::kSteps; ++j) {
        if (SPG > 0 && j % kSpg == 0) grp = {};  // known here: the first mma adds to zero registers
        const W w0 = *reinterpret_cast<const W*>(wb + w0_off + S::word_offset(j, r));
        const W w1 = *reinterpret_cast<const W*>(wb + w1_off + S::word_offset(j, r));
        ft_step<BITS, WPT, T, NAIVE, NT, kSets>(w0, w1, xrow + S::k_base(j, r), tok_stride, grp);
        if (SPG > 0 && (j + 1) % kSpg == 0) {
          const uint16_t* row = sb + (j / kSpg) * B::kChannels;
          fold_scales<NT>(row[c0], row[c1], grp, acc);
        }
      }
      if (SPG == 0 && ((part + 1) % upg == 0 || last)) fold_scales<NT>(sb[c0], sb[c1], grp, acc);
    }
    if (last) {
      const int64_t ch0 = int64_t{tile} * B::kChannels + c0, ch1 = ch0 + 8;
      // The lane's partial sums into the [N, M] workspace, two neighbouring tokens of a channel
      // at a time (with two token tiles measured 10% faster at M = 16 than 8 scalar adds).
      const auto add_pairs = [&] {
#pragma unroll
        for (int t = 0; t < NT; ++t) {
          const int64_t tok = 2 * r + 8 * t;
          token_pair_add(a.sums + ChannelMajorSums{}(a.out, tok, ch0), tok, a.m, acc[t][0], acc[t][1]);
          token_pair_add(a.sums + ChannelMajorSums{}(a.out, tok, ch1), tok, a.m, acc[t][2], acc[t][3]);
        }
      };
      const auto each = [&](auto&& fn) { lane_outputs<NT>(2 * r, ch0, ch1, acc, fn); };
      const int done = u - run_begin + 1;
      static_assert(B::kPitch * 2 >= 4 * B::kChannels, "a stage's X rows hold the tile's sums");
      float* const scratch = reinterpret_cast<float*>(smem + buf * stage_bytes);
      if constexpr (SPLIT) {
        if constexpr (!RUNS) {
          add_pairs();  // the settling kernel turns them into outputs
        } else if (done == per_tile) {
          each([&](int64_t tok, int64_t ch, float v) { write_out<T>(a.out, tok, ch, v); });
        } else {
          // The block holding the tile's first unit settles it (its part ends its run); the others
          // hold later units (their parts start their runs, or are the whole run) and store theirs,
          // run vb' in slot vb' - settler - 1 (the same walk is checked on the CPU, test_gemv.cpp).
          const int t_lo = tile * per_tile;
          const auto holder = [&](int64_t unit) {
            return static_cast<int>(gemv::run_holder(unit, gridDim.x, a.units));
          };
          if (run_begin == t_lo) {
            meet_in_slots<T>(a, tile, -1, holder(t_lo + per_tile - 1) - static_cast<int>(vb), scratch, each);
          } else {
            meet_in_slots<T>(a, tile, static_cast<int>(vb) - holder(t_lo) - 1, 0, scratch, each);
          }
        }
      } else {
        if (a.split > 1 && done < per_tile) {
          const int j = static_cast<int>(blockIdx.x) % a.split;
          meet_in_slots<T>(a, tile, j < a.split - 1 ? j : -1, a.split - 1, scratch, each);
        } else if constexpr (NT == 1) {
          // One token tile: the [M, N] workspace, one add per output (the pair form measured
          // slower here).
          finish_tile<T>(a.out, a.sums, a.counters + tile, done, per_tile, each);
        } else {
          finish_tile_with<T>(a.out, a.sums, a.counters + tile, done, per_tile, each, add_pairs,
                              ChannelMajorSums{});
        }
      }
#pragma unroll
      for (int t = 0; t < NT; ++t) {
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[t][e] = 0.0f;
      }
      run_begin = u + 1;
    }
    // Every lane releases the stage after its last read of it; warp 0 refills it once all 128
    // have (the others go on).
    mbar_arrive(empty + buf);
    if (warp == 0 && i + B::kStages < count) {
      mbar_wait(empty + buf, parity);
      issue(u + B::kStages, buf);
    }
    if (++buf == B::kStages) buf = 0, parity ^= 1u;
  }
#else
  // The launcher takes this path on compute capability 9.0 only.
  __trap();
#endif
}

// Blocks of `kernel` (`threads` a block) that fit on a multiprocessor with `smem` bytes of dynamic
// shared memory; the caller keeps one Fit per kernel, so the runtime is asked once per ring size.
struct Fit {
  std::mutex lock;
  std::map<size_t, int> per_sm;
  size_t limit = 0;  // the kernel's dynamic shared-memory limit as last set
};

// The kernel's limit only ever rises, to the largest ring asked for: a ring's size depends on M, and
// setting the limit to each new size would lower it under a larger one seen before, whose launch
// the runtime then refuses (M = 8, then 1, then 8 again failed so).
template <class Kernel>
int bulk_blocks_per_sm(Fit& fit, Kernel kernel, size_t smem, int threads = kSliceWarps * 32) {
  const std::lock_guard<std::mutex> hold(fit.lock);
  if (smem > fit.limit && cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(smem)) == cudaSuccess) {
    fit.limit = smem;
  }
  const auto it = fit.per_sm.find(smem);
  if (it != fit.per_sm.end()) return it->second;
  int v = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&v, kernel, threads, smem);
  v = std::max(v, 1);
  fit.per_sm.emplace(smem, v);
  return v;
}

// Units per block from which split tiles meet in the settling kernel: from 3 (not 4) settling was
// 1.07-1.18x faster where blocks had 3.1-3.9 units (8192x8192 and 16384x4096 at 4-9 rows) and the
// same elsewhere; with 1.3 units (4096x4096 at 16 rows) the fenced form stays
// (notes/performance.md, g21).
constexpr int kSettleFrom = 3;

// Split tiles settled by a second kernel: the product kernel adds every block's partial sums into
// the [N, M] workspace (reductions only: no fence, no arrival counter, no block waits), and this
// kernel, launched as its programmatic dependent (scheduled early, it waits at
// griddepcontrol.wait until the product has finished and its writes are visible), turns them
// into outputs and leaves the workspace zero for the next call. Two forms, by M
// (notes/performance.md, g23).
constexpr int kSettleThreads = 256;
constexpr int kSettleRunFrom = 16;  // rows from which settle_run_kernel takes over

// Up to 15 rows: a thread per channel reads its M sums together.
template <OutType T, int MAXM>  // MAXM: the largest M of the product kernel it settles
__global__ void __launch_bounds__(kSettleThreads) settle_channel_kernel(Out o, float* sums) {
#ifdef DQL_BULK_COPY
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const int64_t ch = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (ch >= o.n) return;
  float* p = sums + ch * o.m;
  const int m = static_cast<int>(o.m);
  float v[MAXM];
#pragma unroll
  for (int t = 0; t < MAXM; ++t) v[t] = t < m ? __ldcg(p + t) : 0.0f;
#pragma unroll
  for (int t = 0; t < MAXM; ++t) {
    if (t < m) {
      p[t] = 0.0f;
      write_out<T>(o, t, ch, v[t]);
    }
  }
#endif
}

// From 16 rows: a block takes the channels whose sums are one contiguous 16 KB run of the
// workspace, reads and clears it in 16-byte pieces (all of a thread's loads issued first), and
// writes the outputs along N from shared memory. A thread's M sums read one by one lie 4 M bytes
// apart across a warp: from 16 rows each load touched 32 sectors for 128 useful bytes (by runs:
// 8192x8192 at 64 rows 72 -> 47 us on the H200).
template <int MAXM>
constexpr int settle_channels() {
  return kSettleThreads * 16 / MAXM < kSettleThreads ? kSettleThreads * 16 / MAXM : kSettleThreads;
}
template <OutType T, int MAXM>
__global__ void __launch_bounds__(kSettleThreads) settle_run_kernel(Out o, float* sums) {
#ifdef DQL_BULK_COPY
  constexpr int kCh = settle_channels<MAXM>();
  __shared__ float held[kCh * (MAXM + 1)];
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const int m = static_cast<int>(o.m);
  const int pitch = m % 2 == 0 ? m + 1 : m;  // odd: a warp's reads of one token fall in 32 banks
  const int64_t ch0 = static_cast<int64_t>(blockIdx.x) * kCh;
  const int chans = static_cast<int>(o.n - ch0 < kCh ? o.n - ch0 : kCh);
  // N is a multiple of 64 (bulk_fits), so the run is whole 16-byte pieces and starts 256-byte
  // aligned (kCh * M floats a block, the workspace 256-byte aligned).
  const int len = chans * m;
  float* run = sums + ch0 * o.m;
  constexpr int kPieces = kCh * MAXM / 4 / kSettleThreads;  // 16-byte pieces a thread at most
  float4 v[kPieces];
#pragma unroll
  for (int i = 0; i < kPieces; ++i) {
    const int e = 4 * (static_cast<int>(threadIdx.x) + i * kSettleThreads);
    if (e < len) v[i] = __ldcg(reinterpret_cast<const float4*>(run + e));
  }
#pragma unroll
  for (int i = 0; i < kPieces; ++i) {
    const int e = 4 * (static_cast<int>(threadIdx.x) + i * kSettleThreads);
    if (e < len) {
      __stcg(reinterpret_cast<float4*>(run + e), make_float4(0.0f, 0.0f, 0.0f, 0.0f));
      const float f[4] = {v[i].x, v[i].y, v[i].z, v[i].w};
#pragma unroll
      for (int j = 0; j < 4; ++j) held[(e + j) / m * pitch + (e + j) % m] = f[j];
    }
  }
  __syncthreads();
  for (int e = static_cast<int>(threadIdx.x); e < len; e += kSettleThreads) {
    const int t = e / chans, c = e - t * chans;
    write_out<T>(o, t, ch0 + c, held[c * pitch + t]);
  }
#endif
}

// The weights' map: its rows are the layout's column groups (`words` each), and a box is one unit
// of a tile (`box_groups` runs of `box_words`); where it cannot be made the launcher takes the
// per-lane form.
bool weight_map(CUtensorMap* map, const uint32_t* q, int64_t groups, int64_t words, unsigned box_words,
                unsigned box_groups) {
  return tensor_map_2d(map, CU_TENSOR_MAP_DATA_TYPE_UINT32, 4, q, words, groups, box_words, box_groups);
}

// Blocks a multiprocessor of the copy-engine form with one token tile (1-8 rows of X): registers
// and shared memory let four fit; held to three (by unused shared memory), every shape measured ran
// faster on the H100 (W4A16 g128, M = 1, 4, 8): 28672x8192 and 8192x28672 1.04-1.06x, 8192x8192
// 1.05-1.08x, 4096x4096 1.12-1.17x, whose tiles then split among fewer blocks; two were slower on
// 28672x8192 (notes/performance.md, g34).
constexpr int kOneTileBlocksPerSm = 3;

// A load of X for a kernel launched as a programmatic dependent (DependentLaunch), after its
// griddepcontrol.wait: coherent, in asm volatile, so that it stays after the wait (itself asm volatile). A
// non-coherent load (__ldg, ld.global.nc) may be moved ahead of the wait and read X before the kernel
// before has written it (seen in ft_lane_kernel with bf16 X: notes/performance.md, ninety-third session).
[[maybe_unused]] __device__ __forceinline__ uint4 load_x(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// A launch of `grid` blocks of `threads` with `smem` bytes of dynamic shared memory that may start as
// the programmatic dependent of the launch before it (it waits for it at griddepcontrol.wait), or
// where `dependent` is false, after it as usual.
struct DependentLaunch {
  cudaLaunchAttribute attr[1];
  cudaLaunchConfig_t cfg = {};
  DependentLaunch(int64_t grid, int threads, size_t smem, bool dependent = true) {
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.gridDim = dim3(static_cast<unsigned>(grid));
    cfg.blockDim = dim3(static_cast<unsigned>(threads));
    cfg.dynamicSmemBytes = smem;
    cfg.attrs = attr;
    cfg.numAttrs = dependent ? 1 : 0;
  }
  DependentLaunch(const DependentLaunch&) = delete;
  DependentLaunch& operator=(const DependentLaunch&) = delete;
};

// The settling kernel behind a product kernel of up to MAXM rows that added its partial sums into the
// [N, M] workspace: launched as the product's programmatic dependent, it waits for it at
// griddepcontrol.wait.
template <OutType T, int MAXM>
std::string launch_settle(const Out& o, float* sums) {
  // Four or eight token tiles (17 rows and more) always settle by runs, so only the forms of up to
  // 16 rows have the thread-per-channel kernel made.
  const bool by_run = o.m >= kSettleRunFrom;
  void (*settle)(Out, float*) = settle_run_kernel<T, MAXM>;
  if constexpr (MAXM == 16) {
    if (!by_run) settle = settle_channel_kernel<T, MAXM>;
  }
  const int64_t per_block = by_run ? settle_channels<MAXM>() : kSettleThreads;
  DependentLaunch d((o.n + per_block - 1) / per_block, kSettleThreads, 0);
  if (const cudaError_t e = run_kernel_ex(d.cfg, settle, o, sums); e != cudaSuccess)
    return std::string("the GEMV's settling kernel failed on the GPU: ") + cudaGetErrorString(e);
  return {};
}

template <int BITS, int WPT, OutType T, bool NAIVE, int NT, int SPG, bool XS, int STEPS>
std::string launch_bulk_spg(const GemvLaunch& L, const Workspace& ws, bool wait) {
  using B = BulkShape<BITS, WPT, NT, STEPS>;
  using S = FtShape<BITS, WPT>;
  static_assert(B::kRunWords <= 256 && B::kRuns <= 256, "a tensor-map box is at most 256 a side");
  CUtensorMap wmap;
  if (!weight_map(&wmap, L.w.q, L.w.n / S::I, L.w.k * S::I / S::E, B::kRunWords, B::kRuns))
    return launch_ft<BITS, WPT, T, NAIVE, std::min(NT, 4)>(L, ws, wait);  // the per-lane form
  // The scale rows of a unit as one box of a 2D map of the scales ([K / G rows][N halves]) where
  // every unit touches the same number of them, starting at its first group: groups of whole units
  // (one row) or units of whole groups; other groups keep a copy a row. Against a copy a row:
  // 1.03-1.05x at 16 rows of X, the same at 1 and 8 (notes/performance.md, g22).
  const int64_t spg = L.w.group / S::KSTEP;
  const int64_t box_rows = spg % B::kSteps == 0 ? 1 : (B::kSteps % spg == 0 ? B::kSteps / spg : 0);
  CUtensorMap smap{};
  const bool scale_box =
      box_rows > 0 && tensor_map_2d(&smap, CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, L.w.scales, L.w.n,
                                    L.w.k / L.w.group, B::kChannels, static_cast<unsigned>(box_rows));
  BulkArgs a{ft_io(L, ws), (L.w.n / B::kChannels) * (L.w.k / B::KU),  // bulk_fits: under 2^31
             XS ? ws.xs : nullptr, scale_box, 0};
  // One token tile: held to kOneTileBlocksPerSm blocks a multiprocessor by unused shared memory.
  const size_t ring = static_cast<size_t>(B::kStages * (B::stage_bytes(a.m) + 16));
  const size_t smem = NT == 1 ? std::max(ring, occupancy_cap_bytes(kOneTileBlocksPerSm, 0)) : ring;
  if constexpr (XS) {
    const int64_t vecs = a.m * (a.k / 8);
    run_kernel(stage_x_kernel, static_cast<unsigned>(std::min<int64_t>((vecs + 255) / 256, 4 * L.sms)), 256,
               0, a.x, ws.xs, a.k, static_cast<int>(a.m), B::KU, B::kPitch);
  }
  // The product kernel: a programmatic dependent of stage_x_kernel where that ran.
  const auto product = [&](auto kernel, int64_t blocks) {
    DependentLaunch d(blocks, kSliceWarps * 32, smem, XS);  // without XS nothing before it to overlap
    const cudaError_t e = run_kernel_ex(d.cfg, kernel, a, wmap, smap);
    return e == cudaSuccess
               ? std::string()
               : std::string("the mixed-GEMM GEMV kernel failed on the GPU: ") + cudaGetErrorString(e);
  };
  constexpr const char* kProduct = "the mixed-GEMM GEMV kernel (copy-engine form)";
  // Split tiles meet through a second kernel (the settling kernel) where the blocks have several units
  // each; with fewer, the blocks of a tile meet in the workspace (measured, notes/performance.md, w7).
  static Fit fit_settled, fit_fenced;
  const auto settled = ft_bulk_kernel<BITS, WPT, T, NAIVE, NT, true, SPG, XS, STEPS>;
  const auto fenced = ft_bulk_kernel<BITS, WPT, T, NAIVE, NT, false, SPG, XS, STEPS>;
  int64_t blocks =
      std::min<int64_t>(a.units, int64_t{bulk_blocks_per_sm(fit_settled, settled, smem)} * L.sms);
  if (a.units < kSettleFrom * blocks) {
    // Each tile split evenly, a run a block: against the persistent runs, which crossed tiles, H200:
    // 8192x8192 M = 1 19.9 -> 18.5 us, 5120x5120 14.5 -> 13.0, 16384x4096 19.9 -> 18.4; M = 16
    // 4096x4096 16.4 -> 15.0, 5120x5120 21.9 -> 19.2 (notes/performance.md, g28).
    const int64_t tiles = a.n / B::kChannels, per_tile = a.k / B::KU;
    blocks = gemv::split_tile_blocks(tiles, per_tile,
                                     int64_t{bulk_blocks_per_sm(fit_fenced, fenced, smem)} * L.sms, L.sms);
    // A grid of tiles x s keeps every run inside its tile. The tiles meet in slots where s is at
    // most 5 and the last block's threads read theirs in one go; else the last block to arrive
    // settles each (gemv::slot_split; notes/performance.md, g30).
    a.split = static_cast<int>(gemv::slot_split(tiles, per_tile, blocks, a.m));
    if (std::string e = product(fenced, blocks); !e.empty()) return e;
    return status(kProduct, wait);
  }
  // The persistent runs meet in slots where the rule allows (gemv::run_slot_others): against the
  // settling kernel 1.03-1.17x on the H100 at 4-32 rows (28672x8192 M = 32 87.5 -> 75.0 us, 16384x4096
  // M = 16 28.7 -> 25.5), the same at 1 row on 28672x8192 (notes/performance.md, g31). Its grid is
  // what fits of that kernel (its own registers), so that every block it waits for has started.
  {
    static Fit fit_runs;
    const auto runs = ft_bulk_kernel<BITS, WPT, T, NAIVE, NT, true, SPG, XS, STEPS, true>;
    const int64_t run_blocks =
        std::min<int64_t>(a.units, int64_t{bulk_blocks_per_sm(fit_runs, runs, smem)} * L.sms);
    if (gemv::run_slot_others(a.units, run_blocks, a.k / B::KU, a.n, a.m) > 0) {
      if (std::string e = product(runs, run_blocks); !e.empty()) return e;
      return status(kProduct, wait);
    }
  }
  if (std::string e = product(settled, blocks); !e.empty()) return e;
  // The settling kernel reads up to kMaxRows sums a channel, 16 at least: a 32-row one behind the
  // 16-row forms measured 5-15% slower at M = 16 (notes/performance.md, g13).
  if (std::string e = launch_settle<T, std::max(16, B::kMaxRows)>(a.out, a.sums); !e.empty()) return e;
  return status(kProduct, wait);
}

// How the form of NT token tiles finds a group's ends (the SPG of ft_bulk_kernel); -2 where groups
// of this size do not fit it (4 steps a group in units of 8, for example). NT = 1 or 2 token tiles
// know the ends at compile time where a group is NT steps (int4 group 128 with one tile of four words
// a lane or two tiles of two; group 64 with one tile of two words) and count them at run time
// otherwise: against run-time counting (H100, W4A16 g128) M = 1 1.03x and M = 16
// 1.04-1.05x on the large shapes (notes/performance.md, g33).
template <int BITS, int WPT, int NT, int STEPS = kUnitSteps<BITS, NT>>
int bulk_spg(int64_t group) {
  using B = BulkShape<BITS, WPT, NT, STEPS>;
  if constexpr (NT < 4) {
    return group == B::S::KSTEP * NT ? NT : -1;
  } else {
    const int64_t spg = group / B::S::KSTEP;
    if (spg == 1 || spg == 2) return static_cast<int>(spg);
    return spg % B::kSteps == 0 ? 0 : -2;
  }
}

// X re-laid first (stage_x_kernel) from four token tiles, and with two from 12 rows on matrices of
// 2^26 weights or more; not with one token tile (at most 8 copies of X a stage) or on smaller
// matrices, where the extra launch costs more than the copies it saves (notes/performance.md, g17).
template <int BITS, int WPT, OutType T, bool NAIVE, int NT, int STEPS = kUnitSteps<BITS, NT>>
std::string launch_bulk(const GemvLaunch& L, const Workspace& ws, bool wait) {
  if constexpr (NT == 1) {
    if (bulk_spg<BITS, WPT, NT, STEPS>(L.w.group) == 1)
      return launch_bulk_spg<BITS, WPT, T, NAIVE, NT, 1, false, STEPS>(L, ws, wait);
    return launch_bulk_spg<BITS, WPT, T, NAIVE, NT, -1, false, STEPS>(L, ws, wait);
  } else if constexpr (NT == 2) {
    const bool xs = L.p.m >= 12 && L.w.n * L.w.k >= (int64_t{1} << 26);
    if (bulk_spg<BITS, WPT, NT, STEPS>(L.w.group) == 2) {
      if (xs) return launch_bulk_spg<BITS, WPT, T, NAIVE, NT, 2, true, STEPS>(L, ws, wait);
      return launch_bulk_spg<BITS, WPT, T, NAIVE, NT, 2, false, STEPS>(L, ws, wait);
    }
    if (xs) return launch_bulk_spg<BITS, WPT, T, NAIVE, NT, -1, true, STEPS>(L, ws, wait);
    return launch_bulk_spg<BITS, WPT, T, NAIVE, NT, -1, false, STEPS>(L, ws, wait);
  } else {
    switch (bulk_spg<BITS, WPT, NT, STEPS>(L.w.group)) {
      case 1: return launch_bulk_spg<BITS, WPT, T, NAIVE, NT, 1, true, STEPS>(L, ws, wait);
      case 2: return launch_bulk_spg<BITS, WPT, T, NAIVE, NT, 2, true, STEPS>(L, ws, wait);
      default: return launch_bulk_spg<BITS, WPT, T, NAIVE, NT, 0, true, STEPS>(L, ws, wait);
    }
  }
}

// The copy-engine form where it applies: compute capability 9.0, M up to 8 * NT, whole tiles and units.
template <int BITS, int WPT, int NT, int STEPS = kUnitSteps<BITS, NT>>
bool bulk_fits(const GemvLaunch& L) {
  using B = BulkShape<BITS, WPT, NT, STEPS>;
  using S = FtShape<BITS, WPT>;
  return L.cc >= 90 && L.p.m <= B::kMaxRows && L.w.n % B::kChannels == 0 && L.w.k % B::KU == 0 &&
         L.w.group % S::KSTEP == 0 && bulk_spg<BITS, WPT, NT, STEPS>(L.w.group) != -2 &&
         (L.w.n / B::kChannels) * (L.w.k / B::KU) < (int64_t{1} << 30);
}

// ---- W4A16 at one row of X: plain loads, the products on the tensor cores ---------------------
//
// A warp owns 256 rows of K (a slab) and walks across column groups of the mixed-GEMM layout: in each
// group the slab's 4 tiles x 4 channels are 512 contiguous bytes, one 16-byte piece a lane (piece
// 8 t + 2 c + h: tile t, channel c, half h, the half being the tile's row-permutation group of 32 rows
// of K, 4 words). Per column group each lane converts its 4 words by the recipe (gemv::ft_word_pairs:
// exactly q - 8 in fp16) and hands them to the tensor cores as the A operand of one m16n8k16 product a
// word, with the slab's X as B, so that no product is rounded: fp16 x fp16 is exact in the fp32 sums.
//
// The lanes of an mma.sync quad (g, q) = (lane / 4, lane % 4) give A's row g its pairs 0 and 1 of word
// i and row g + 8 its pairs 2 and 3 (k columns 2q, 2q + 1 and 8 + 2q, 9 + 2q). Lane (g, q) therefore
// loads tile 2 (g % 2) + q / 2, channel g / 2, half q % 2: the warp still reads the same 512 bytes.
// Column n of B (lanes with g = n) holds X for tile 2 ((n / 2) % 2) + q / 2 and half q % 2, rows
// 16 (n % 2) + [0, 16) of that half, in the lanes whose q / 2 is n / 4 and zeros in the others. Then
// D[g][2q] holds rows 0-15 of both halves of lane (g, q)'s tile and channel, and D[g + 8][2q + 1] rows
// 16-31, wherever g % 2 == q % 2: lanes 8c + {0, 2, 5, 7} come out with channel c over tiles 0, 1, 2
// and 3. The other D entries pair weights with X of another tile and are not used. Each lane's X (16
// values, 8 registers) is the same in every column group and is loaded once.
//
// Per column group the useful lanes take their tile's scale, and the 4 tiles of a channel meet by two
// shuffles (xor 2, then down 5). The warps of a block (up to 32 slabs) meet in shared memory, the
// blocks of a column range (K beyond 8192) in the workspace (finish_tile).
//
// Against the copy-engine ring, the loads here are plain 16-byte loads, 3 in flight a lane beyond the
// one it multiplies, from 32 warps a multiprocessor: the weights stream at up to 95-98% of the copy
// with nothing else, where the ring's stages reached 79% (notes/performance.md, session 41). Before the
// tensor cores took the products, the lane multiplied in fp16 (HFMA2 chains, products rounded to fp16)
// with twice the instructions a step; the step on the tensor cores took fp16 X the same time and bf16
// X 4-12% less (notes/performance.md, fifty-seventh session).
//
// bf16 X is scaled into fp16 (lane_x_bf16): each warp scales its slab of X by a power of two that puts
// the slab's largest finite |x| in [2^9, 2^10), converts it to fp16 (exactly: bf16's 8 significant bits
// fit in fp16's 11, for every value less than 2^23 below the largest), and its partial sums are
// multiplied by the inverse power where the block's warps meet. The products (q - 8 in [-8, 7]) stay
// below 2^13 and are exact as fp16's are.
constexpr int kLaneAhead = 3;

// A 16-byte piece of the weights, read once: through the read-only path without a place in L1.
__device__ __forceinline__ uint4 load_piece(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// Where a lane's walk reads its scales, 4 halves (a column group) apart: global memory through the
// read-only path, or with STAGED the warp's copy in shared memory (lane_stage_scales) at a 32-bit shared
// address (a pointer that could hold either address had the compiler read the staged scales by generic
// loads: notes/performance.md, eighty-first session).
template <bool STAGED>
struct ScaleCursor {
  const uint16_t* p;
  __device__ __forceinline__ uint16_t at(int d) const { return __ldg(p + 4 * d); }
  __device__ __forceinline__ void step() { p += 4; }
};
template <>
struct ScaleCursor<true> {
  uint32_t a;
  __device__ __forceinline__ uint16_t at(int d) const {
    uint16_t v;
    asm volatile("ld.shared.u16 %0, [%1];" : "=h"(v) : "r"(a + 8 * d));
    return v;
  }
  __device__ __forceinline__ void step() { a += 8; }
};

// The walk: the lane's piece and scale of each of `count` column groups, kLaneAhead loads in flight
// beyond the one in use, addresses advanced by increments. ready() once the first load is asked (what
// X needs before the first step: bf16's scaling waits for X's loads, and the weights' first load need
// not wait for it; with all three asked first, the pieces in flight did not fit the registers beside
// the scaling, notes/performance.md, fifty-second session), then body(piece, scale, j) for j = 0 ..
// count - 1; whole rounds of kLaneAhead + 1 run without checks, the last round checks each step. The
// scales come through a ScaleCursor (above); staged in shared memory, the walk waits for their copy once
// the first loads are asked.
template <bool STAGED, class Ready, class Body>
__device__ __forceinline__ void lane_walk(const uint4* p, int64_t stride, ScaleCursor<STAGED> sp, int count,
                                          Ready ready, Body body) {
  constexpr int A = kLaneAhead;
  uint4 buf[A + 1];
  uint16_t sc[A + 1];
  const ScaleCursor<STAGED> sp0 = sp;
#pragma unroll
  for (int d = 0; d < A; ++d) {
    if (d == 1) ready();
    if (d < count) {
      buf[d] = load_piece(p);
      if constexpr (!STAGED) sc[d] = sp.at(0);
    }
    p += stride, sp.step();
  }
  if constexpr (STAGED) {
    cp_async_wait<0>();
    __syncwarp();
#pragma unroll
    for (int d = 0; d < A; ++d) {
      if (d < count) sc[d] = sp0.at(d);
    }
  }
  int j0 = 0;
  for (; j0 + 2 * A + 1 <= count; j0 += A + 1) {
#pragma unroll
    for (int d = 0; d <= A; ++d) {
      const int slot = (d + A) % (A + 1);
      buf[slot] = load_piece(p), sc[slot] = sp.at(0);
      p += stride, sp.step();
      body(buf[d], sc[d], j0 + d);
    }
  }
  for (; j0 < count; j0 += A + 1) {
#pragma unroll
    for (int d = 0; d <= A; ++d) {
      const int slot = (d + A) % (A + 1);
      if (j0 + d + A < count) buf[slot] = load_piece(p), sc[slot] = sp.at(0);
      p += stride, sp.step();
      if (j0 + d < count) body(buf[d], sc[d], j0 + d);
    }
  }
}

// Lane (g, q)'s 4 words as the A operand of four m16n8k16 products, one a word (the words' pairs 0 and
// 2 at k columns 2q, 2q + 1 of rows g and g + 8, pairs 1 and 3 at columns 8 + 2q, 9 + 2q), X as B
// (xb[i]: the X pair of rows 2i, 2i + 1 of the lane's 16, xb[4 + i]: rows 8 + 2i, 9 + 2i), into d.
// D[g][2q] + D[g + 8][2q + 1] (d[0] + d[3]) are the tile's 64 products of the lanes where g % 2 == q % 2.
template <bool NAIVE>
__device__ __forceinline__ void lane_mma(uint4 v, const uint32_t (&xb)[8], float (&d)[4]) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
  d[0] = d[1] = d[2] = d[3] = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    uint32_t pr[4];
    gemv::ft_word_pairs<NAIVE>(4, OutType::F16, w[i], pr);
    wide_mma<OutType::F16>(d, pr[gemv::lane_a_pair(0)], pr[gemv::lane_a_pair(1)], pr[gemv::lane_a_pair(2)],
                           pr[gemv::lane_a_pair(3)], xb[i], xb[4 + i]);
  }
}

// bf16 X in the lane's 8 registers to fp16 scaled by the warp's power of two 2^e (all lanes of the
// warp call it; lanes that hold no X, or X past K, hold zeros); returns 2^-e, which takes the warp's
// sums back. NaN and infinities are left out of the largest |x| and keep their meaning; a slab of zeros
// takes e = 0, and e stops at 126, where 2^-e is fp32's least normal power (a slab whose largest |x|
// lies below 2^-117, among bf16's subnormals, keeps fewer bits).
__device__ __forceinline__ float lane_x_bf16(uint32_t (&x)[8]) {
  const auto value = [](uint32_t word, int half) {
    return gemv::act_to_f32(static_cast<uint16_t>(half ? bits::hi16(word) : bits::lo16(word)), OutType::BF16);
  };
  float top = 0.0f;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const float v = fabsf(value(x[i], half));
      if (v <= FLT_MAX) top = fmaxf(top, v);
    }
  }
  // The slab's 256 values lie in 16 lanes, 16 each, spread over the warp.
#pragma unroll
  for (int o = 1; o < 32; o *= 2) top = fmaxf(top, __shfl_xor_sync(0xFFFFFFFFu, top, o));
  const int e = top > 0.0f ? min(9 - ilogbf(top), 126) : 0;  // in [-118, 126]
  const float up = __int_as_float((127 + e) << 23);
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    x[i] =
        bits::cvt_f16x2_f32(quant::bits_of_f32(value(x[i], 1) * up), quant::bits_of_f32(value(x[i], 0) * up));
  }
  return __int_as_float((127 - e) << 23);
}

// The rows of blocks beyond K = 8192 meet in slots of the workspace, as the persistent grid's runs do
// (meet_in_slots): row y < rows - 1 stores its sums in slot y ([rows - 1][N] floats) and ends; the last row,
// the last blocks in launch order, reads the slots as they fill, adds them after its own in row order,
// writes the outputs and clears the slots for the next call. The grid fits on the device at once
// (gemv::lane_meets_in_slots), so every block the last row waits for has started. A thread reads up to
// kLoads slots at once.
template <OutType T, class Each>
__device__ __forceinline__ void lane_meet_in_slots(const Out& o, float* sums, Each each) {
  constexpr int kLoads = 8;
  const int others = static_cast<int>(gridDim.y) - 1;
  const int64_t row = blockIdx.y;
  if (row < others) {
    each([&](int64_t, int64_t ch, float v) { slot_store(sums + row * o.n + ch, v); });
    return;
  }
  each([&](int64_t, int64_t ch, float v) {
    float* const at = sums + ch;
    for (int base = 0; base < others; base += kLoads) {
      uint32_t got[kLoads];
#pragma unroll
      for (int q = 0; q < kLoads; ++q)
        got[q] = base + q < others ? slot_load(at + (base + q) * o.n) : kSlotMark;
      wait_for_slots(got, [&](int q) { return slot_load(at + (base + q) * o.n); });
#pragma unroll
      for (int q = 0; q < kLoads; ++q) {
        if (base + q >= others) break;
        v += __uint_as_float(got[q] ^ kSlotMark);
        __stcg(at + (base + q) * o.n, 0.0f);
      }
    }
    write_out<T>(o, 0, ch, v);
  });
}

// bf16 X's scales for groups of 128 (gemv::lane_stages_scales): the warp copies the two scale rows of its
// slab, 8 bytes (4 channels) a column group, by cp.async into `rows` (2 x 4 x groups_per_block halves) at
// the start, a row past K (a slab that ends after its first two tiles) as zeros, and returns the shared
// address of the lane's first scale there. Read from global memory as the walk reaches them, a block's
// scale rows (440 bytes each at 28672x8192, 57 KB apart) come from DRAM a 32-byte sector at a time.
__device__ __forceinline__ uint32_t lane_stage_scales(const FtIo& a, uint16_t* rows, int64_t slab,
                                                      int64_t cg0, int groups, int groups_per_block, int lane,
                                                      const gemv::LanePiece& lp) {
  const int64_t last = a.k / 128;
  for (int i = lane; i < 2 * groups; i += 32) {
    const int half = i / groups, c = i % groups;
    const int64_t row = slab * 2 + half;
    const uint16_t* from = a.scales + (row < last ? row : 0) * a.n + 4 * (cg0 + c);
    const auto to =
        static_cast<uint32_t>(__cvta_generic_to_shared(rows + half * 4 * groups_per_block + 4 * c));
    cp_async8(to, from, row < last);
  }
  cp_async_commit();
  return static_cast<uint32_t>(
      __cvta_generic_to_shared(rows + (lp.tile / 2) * 4 * groups_per_block + lp.channel));
}

// grid (column ranges of `groups_per_block` column groups, K / (256 W) rounded up: gemv::lane_grid);
// dynamic shared memory: W x groups_per_block x 4 floats. W warps a block, 32 warps a multiprocessor.
// A row of blocks takes W slabs of K, or with SPREAD `per_row` (gemv::LaneGrid: fewer than W, the
// slabs spread evenly over the rows), and the warps past per_row have nothing to walk. Two instances
// rather than one with a run-time count: with per_row in every instance bf16 X's spilled 8 bytes and ran
// 2% slower at 28672x8192 (notes/performance.md, fifty-ninth session). Several rows of blocks meet with
// SLOTS in slots of the workspace (lane_meet_in_slots), else the last block of a range to arrive settles
// it (finish_tile): gemv::lane_meets_in_slots. With UNMET (gemv::lane_unmet) a step's sums leave unmet,
// without shuffles: each warp keeps W x groups_per_block x 16 floats. With STAGED (bf16 X,
// gemv::lane_stages_scales) each warp's scales are copied to shared memory after the partial sums
// (lane_stage_scales; twice the shared memory).
template <OutType T, bool NAIVE, int W, bool SPREAD, bool SLOTS = false, bool UNMET = false,
          bool STAGED = false>
__global__ void __launch_bounds__(W * 32, 32 / W) ft_lane_kernel(FtIo a, int groups_per_block, int per_row) {
  static_assert(!(UNMET && STAGED), "the unmet sums are fp16 X's, the staged scales bf16 X's");
  extern __shared__ float part[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const gemv::LanePiece lp = gemv::lane_piece(lane);  // the piece this lane loads
  constexpr int64_t S = gemv::kLaneSlab;
  const int row_slabs = SPREAD ? per_row : W;
  const int64_t slab = int64_t{blockIdx.y} * row_slabs + warp;
  const int64_t cg0 = int64_t{blockIdx.x} * groups_per_block;
  const int64_t left = a.n / 4 - cg0;
  const int groups = left < groups_per_block ? static_cast<int>(left) : groups_per_block;
  const int count = (!SPREAD || warp < per_row) && slab * S < a.k ? groups : 0;
  // A: the piece gemv::lane_piece names. A piece past K (K a multiple of 128: a slab may end after its
  // first two tiles) meets zeros of X; the lane reads a piece of the column group's first two tiles
  // instead.
  const int64_t k0 = slab * S + lp.tile * 64 + lp.half * 32;
  const bool live = k0 < a.k;
  const int piece = gemv::lane_piece_index(lane);
  const int64_t stride = a.k / 8;  // 16-byte pieces a column group
  const uint4* src =
      reinterpret_cast<const uint4*>(a.q) + cg0 * stride + (live ? slab * 32 + piece : piece % 16);
  ScaleCursor<STAGED> sp{};
  if constexpr (STAGED) {
    if (count > 0) {
      uint16_t* rows =
          reinterpret_cast<uint16_t*>(part + W * groups_per_block * 4) + warp * 8 * groups_per_block;
      sp.a = lane_stage_scales(a, rows, slab, cg0, groups, groups_per_block, lane, lp);
    }
  } else {
    sp.p = a.scales + (live ? k0 / a.group : 0) * a.n + 4 * cg0 + lp.channel;
  }
  // Launched as the programmatic dependent of the kernel before it (compute capability 9.0), the block may
  // start while that kernel ends: it asks the L2 for its first pieces of W, which no kernel writes, and
  // waits for that kernel (which may have written X) before it reads X or touches the workspace. Its own
  // dependent may start as soon as every block here has.
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  for (int d = 0; d < kLaneAhead && d < count; ++d)
    asm volatile("prefetch.global.L2 [%0];" ::"l"(src + d * stride));
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  // B: X of the 16 rows from gemv::lane_x_row, in the lanes gemv::lane_holds_x names. By coherent loads in
  // asm volatile, which stay after the wait above: a non-coherent load (__ldg) may be moved ahead of it, and
  // then read X before the kernel before has written it (seen with bf16 X, GPU suite).
  const int64_t kx = slab * S + gemv::lane_x_row(lane);
  uint32_t xb[8] = {};
  if (gemv::lane_holds_x(lane) && kx < a.k) {
    const uint16_t* px = a.x + kx;
    asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(xb[0]), "=r"(xb[1]), "=r"(xb[2]), "=r"(xb[3])
                 : "l"(px)
                 : "memory");
    asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(xb[4]), "=r"(xb[5]), "=r"(xb[6]), "=r"(xb[7])
                 : "l"(px + 8)
                 : "memory");
  }
  __shared__ float back[W];  // each warp's 2^-e (bf16 X)
  float* out = part + warp * groups_per_block * 4 + lane / 8;
  // UNMET: lanes 8c + {0, 2, 5, 7}, which hold tiles 0-3 of column c's sums, store them as they are, 16
  // floats a column group (the warp's u = 0-3 of column c at 4c + u), and the block's meeting adds them
  // as the shuffles would have, (tile 0 + tile 1) + (tile 2 + tile 3): the same bits as the met form.
  const int s8 = lane % 8;
  const bool holds = s8 == 0 || s8 == 2 || s8 == 5 || s8 == 7;
  const int tile = s8 / 2;  // 0, 1, 2, 3 for the lanes that hold
  const auto ready = [&] {
    if constexpr (T == OutType::BF16) {
      const float b = lane_x_bf16(xb);
      if (lane == 0) back[warp] = b;
    }
  };
  // With fp16 X in blocks of 32 warps (the large shapes) a step's sums leave one step late: their
  // shuffles then fill the waits of the next step's chain of products, and the next load is not held
  // behind them (3.3% at 28672x8192; bf16 and smaller blocks measured no gain or a loss:
  // notes/performance.md, fifty-eighth session). The unmet sums leave late in every block (8 and 16
  // warps: 0.5-1.5% on the H100, eighty-third session).
  constexpr bool kLate = T == OutType::F16 && (W == 32 || UNMET);
  // UNMET's place for the next column group's sums: a 32-bit shared address carried from step to step, 64
  // bytes a group, starting a group early where the first emit (j = -1) has none (a store through a
  // pointer rebuilt the shared base each step and became a branch: 270 instructions a round of four steps
  // against 228, and 0.99x; carried: 222, notes/performance.md, eighty-second session). STAGED carries
  // lane 8c's place for the met sums the same way, 16 bytes a group (taken as `out + 4 j`, the address was
  // rebuilt before every store: 246 instructions a round against 223, eighty-first session).
  [[maybe_unused]] uint32_t out_cur =
      UNMET ? static_cast<uint32_t>(
                  __cvta_generic_to_shared(part + warp * groups_per_block * 16 + (lane / 8) * 4 + tile)) -
                  (kLate ? 64u : 0u)
            : static_cast<uint32_t>(__cvta_generic_to_shared(out));
  // Column group j's sums, scaled, meet in lane 8c (UNMET: stay in their four lanes) and go to shared
  // memory (all lanes call it; late, the first call has no column group, j = -1).
  const auto emit = [&](float d0, float d3, uint16_t scale, int j) {
    float d = (d0 + d3) * quant::half_to_f32(scale);  // lanes 8c + {0, 2, 5, 7}: tiles 0-3
    if constexpr (UNMET) {
      if (holds && (!kLate || j >= 0))
        asm volatile("st.shared.f32 [%0], %1;" ::"r"(out_cur), "f"(d) : "memory");
      out_cur += 64;
      return;
    }
    d += __shfl_xor_sync(0xFFFFFFFFu, d, 2);  // tiles 0 + 1 in lane 8c, 2 + 3 in 8c + 5
    d += __shfl_down_sync(0xFFFFFFFFu, d, 5);
    if constexpr (STAGED) {
      static_assert(!kLate, "the staged scales' sums leave in their step");
      if (lane % 8 == 0) asm volatile("st.shared.f32 [%0], %1;" ::"r"(out_cur), "f"(d) : "memory");
      out_cur += 16;
    } else {
      if (lane % 8 == 0 && (!kLate || j >= 0)) out[4 * j] = d;
    }
  };
  float p0 = 0.0f, p3 = 0.0f;
  uint16_t ps = 0;
  lane_walk<STAGED>(src, stride, sp, count, ready, [&](uint4 v, uint16_t scale, int j) {
    float d[4];
    lane_mma<NAIVE>(v, xb, d);
    if constexpr (kLate) {
      emit(p0, p3, ps, j - 1);
      p0 = d[0], p3 = d[3], ps = scale;
    } else {
      emit(d[0], d[3], scale, j);
    }
  });
  if (kLate && count > 0) emit(p0, p3, ps, count - 1);
  __syncthreads();
  const int64_t slabs_left = (a.k - int64_t{blockIdx.y} * row_slabs * S + S - 1) / S;
  const int warps = slabs_left < row_slabs ? static_cast<int>(slabs_left) : row_slabs;
  const auto each = [&](auto fn) {
    for (int i = threadIdx.x; i < 4 * groups; i += blockDim.x) {
      float v = 0.0f;
      for (int w = 0; w < warps; ++w) {
        if constexpr (T == OutType::BF16) {
          v = fmaf(part[w * groups_per_block * 4 + i], back[w], v);  // exact scaling, one rounding
        } else {
          if constexpr (UNMET) {
            const float* u = part + w * groups_per_block * 16 + 4 * i;
            v += (u[0] + u[1]) + (u[2] + u[3]);
          } else {
            v += part[w * groups_per_block * 4 + i];
          }
        }
      }
      fn(int64_t{0}, 4 * cg0 + i, v);
    }
  };
  if constexpr (SLOTS) {
    lane_meet_in_slots<T>(a.out, a.sums, each);
  } else {
    finish_tile<T>(a.out, a.sums, a.counters + blockIdx.x, 1, static_cast<int>(gridDim.y), each);
  }
}

// f(spread, slots) with the two as compile-time constants (std::bool_constant): the one place that turns
// a lane grid's run-time choices into ft_lane_kernel's template arguments.
template <class F>
decltype(auto) lane_instance(bool spread, bool slots, F&& f) {
  if (slots) return spread ? f(std::true_type{}, std::true_type{}) : f(std::false_type{}, std::true_type{});
  return spread ? f(std::true_type{}, std::false_type{}) : f(std::false_type{}, std::false_type{});
}

// The one-row kernel's other form for X of type T: the unmet sums for fp16 X (gemv::lane_unmet), the
// staged scales for bf16 X (gemv::lane_stages_scales), each with `kLaneFormTimes` its partial sums' shared
// memory.
template <OutType T>
constexpr int64_t kLaneFormTimes = T == OutType::F16 ? 4 : 2;

// Blocks of that form a multiprocessor holds for grid g, 0 where its rule, `takes(block_most)`, does not take
// it there (`block_most`: the most shared memory a block may have beside the kernel's own on this device,
// `most` being the device's limit for a block that opts in).
template <OutType T, int W, bool SPREAD, bool SLOTS, class Takes>
int lane_form_per_sm(const gemv::LaneGrid& g, int64_t most, Takes takes) {
  constexpr bool F16 = T == OutType::F16;
  static Fit fit;
  const auto kernel = ft_lane_kernel<T, false, W, SPREAD, SLOTS, F16, !F16>;
  static const int64_t own = [&] {
    cudaFuncAttributes at{};
    return cudaFuncGetAttributes(&at, kernel) == cudaSuccess ? static_cast<int64_t>(at.sharedSizeBytes)
                                                             : int64_t{1} << 40;
  }();
  if (!takes(most - own)) return 0;
  return bulk_blocks_per_sm(fit, kernel, static_cast<size_t>(kLaneFormTimes<T> * g.shared_bytes), W * 32);
}

// Blocks of W warps the device holds at once, asked with the most partial sums a block keeps, so that
// the grid lane_grid sizes for one wave is one wave on devices whose shared memory, not their
// registers, sets the count (on the H200 the registers do: 4, 2 and 1 blocks of 8, 16 and 32 warps
// a multiprocessor either way).
template <OutType T, bool NAIVE, int W>
int64_t lane_resident(const GemvLaunch& L) {
  static Fit fit;
  const int per_sm = bulk_blocks_per_sm(fit, ft_lane_kernel<T, NAIVE, W, false>,
                                        static_cast<size_t>(gemv::kLanePartBytes), W * 32);
  return int64_t{per_sm} * L.sms;
}

// The one-row kernel's launch for L in blocks of W warps: one wave where the column groups allow
// (gemv::lane_grid), its rows meeting in slots or not, and whether it takes the other form (the unmet
// sums for fp16 X, the staged scales for bf16 X): long ranges do (gemv::lane_unmet,
// gemv::lane_stages_scales) where the device lets a block have its shared memory
// (GemvLaunch::block_shared_most, less the kernel's own) and still holds the grid's blocks at once.
struct LanePlan {
  gemv::LaneGrid g;
  bool slots;
  bool other;
};

template <OutType T, bool NAIVE, int W>
LanePlan lane_plan(const GemvLaunch& L) {
  const int64_t resident = lane_resident<T, NAIVE, W>(L);
  LanePlan plan{gemv::lane_grid(L.w.n, L.w.k, W, resident), false, false};
  const gemv::LaneGrid& g = plan.g;
  plan.slots = gemv::lane_meets_in_slots(g, L.w.n, L.w.k, resident);
  if constexpr (!NAIVE) {
    const auto takes = [&](int64_t block_most) {
      if constexpr (T == OutType::F16) return gemv::lane_unmet(g, block_most);
      return gemv::lane_stages_scales(g, L.w.group, L.cc, block_most);
    };
    const int per_sm = lane_instance(g.spread, plan.slots, [&](auto spread, auto slot) {
      return lane_form_per_sm<T, W, decltype(spread)::value, decltype(slot)::value>(g, L.block_shared_most,
                                                                                    takes);
    });
    plan.other = per_sm > 0 && int64_t{per_sm} * L.sms >= resident;
  }
  return plan;
}

template <OutType T, bool NAIVE, int W>
std::string launch_lane_w(const GemvLaunch& L, const Workspace& ws, bool wait) {
  const LanePlan plan = lane_plan<T, NAIVE, W>(L);
  const gemv::LaneGrid& g = plan.g;
  const dim3 grid(static_cast<unsigned>(g.columns), static_cast<unsigned>(g.rows));
  const auto instance = [&](auto other) {
    constexpr bool O = decltype(other)::value, F16 = T == OutType::F16;
    constexpr bool U = O && F16, S = O && !F16;  // UNMET, STAGED
    return lane_instance(g.spread, plan.slots, [](auto spread, auto slot) {
      return ft_lane_kernel<T, NAIVE, W, decltype(spread)::value, decltype(slot)::value, U, S>;
    });
  };
  const auto kernel = plan.other ? instance(std::true_type{}) : instance(std::false_type{});
  const size_t shared =
      static_cast<size_t>(plan.other ? kLaneFormTimes<T> : 1) * static_cast<size_t>(g.shared_bytes);
  // On compute capability 9.0 the kernel is the programmatic dependent of the launch before it (it reads W
  // and waits for that launch before it reads X: ft_lane_kernel), so that back to back its blocks start
  // while the kernel before ends (notes/performance.md, ninety-third session: PDL).
  DependentLaunch d(1, W * 32, shared, L.cc >= 90);
  d.cfg.gridDim = grid;
  if (const cudaError_t e =
          run_kernel_ex(d.cfg, kernel, ft_io(L, ws), static_cast<int>(g.per), static_cast<int>(g.per_row));
      e != cudaSuccess)
    return std::string("the one-row W4A16 kernel failed on the GPU: ") + cudaGetErrorString(e);
  return status("the one-row W4A16 kernel", wait);
}

// f(std::integral_constant<int, W>) for the warps a block by K, and beyond K = 8192 by the grids
// (gemv::lane_warps).
template <OutType T, bool NAIVE, class F>
auto with_lane_warps(const GemvLaunch& L, F&& f) {
  const auto resident = [&](int w) {
    return w == 8 ? lane_resident<T, NAIVE, 8>(L)
                  : (w == 16 ? lane_resident<T, NAIVE, 16>(L) : lane_resident<T, NAIVE, 32>(L));
  };
  switch (gemv::lane_warps(L.w.n, L.w.k, resident)) {
    case 8: return f(std::integral_constant<int, 8>{});
    case 16: return f(std::integral_constant<int, 16>{});
    default: return f(std::integral_constant<int, 32>{});
  }
}

template <OutType T, bool NAIVE>
std::string launch_lane(const GemvLaunch& L, const Workspace& ws, bool wait) {
  return with_lane_warps<T, NAIVE>(
      L, [&](auto w) { return launch_lane_w<T, NAIVE, decltype(w)::value>(L, ws, wait); });
}

}  // namespace

bool gemv_lane_other_form(const GemvLaunch& L) {
  if (L.p.m != 1 || L.p.path != Path::Fast || L.w.layout != quant::Layout::Ft ||
      L.w.scheme != quant::Scheme::Int4Sym)
    return false;
  const auto other = [&](auto t) {
    constexpr OutType T = decltype(t)::value;
    return with_lane_warps<T, false>(
        L, [&](auto w) { return lane_plan<T, false, decltype(w)::value>(L).other; });
  };
  return L.p.dtype == OutType::F16 ? other(std::integral_constant<OutType, OutType::F16>{})
                                   : other(std::integral_constant<OutType, OutType::BF16>{});
}

namespace {

// ---- W4A16 at 2 to 32 rows of X on compute capability 9.0: the copy engine feeds warps that own ----
// ---- channels and walk K                                                                        ----
//
// A block of kWalkWarps warps owns ranges of 128 channels (32 column groups of the mixed-GEMM layout);
// one more warp keeps a ring of stages full by the copy engine. A stage is SPS steps of 128 rows of K
// of a range (WalkShape): the weights as one box of a 3D tensor map (a column group's 64-row tile is 128
// bytes; rows of shared memory run [tile][column group], in the 128-byte swizzle), X as the A fragments
// walk_x_kernel laid out for each step (4 KB a token tile: one 16-byte read a lane a fragment, the same for
// every warp), the tokens' constants and the steps' scale rows. Warp w owns n-tiles 4 w .. 4 w + 3 (8
// channels each; X is the A operand of mma.m16n8k16 with a tile's 16 tokens as rows, the weights the B
// operand) and keeps their sums in registers from step to step. From 17 rows X comes in two token tiles
// and each weight register goes into the products of both (WalkShape's MT); at 17-24 rows of large matrices
// the roles turn (the half tile: every token as a column of the mma, the weights as A). Lane l gives
// ldmatrix.x4 the address of matrix l / 8 (tile, half), row l % 8 (channel): lane (g, q) then holds word q of
// the four 16-byte pieces of its channel g, whose rows of K depend on q only, as the mma needs; the two
// column groups of an n-tile are neighbouring rows, so the swizzle puts the eight rows of a matrix in
// distinct banks. The words enter the mma unbiased (1024 + n from the low nibbles, 1024 + 16 n from the high
// ones, by one LOP3 each; NAIVE: the same values by one integer-to-half conversion an element); X carries the
// high pairs divided by 16, and each 64-row tile's sums start from minus its tokens' constant, so they come
// out exact up to fp32 rounding and take the group's scale (groups of 64: each tile its own; else the
// step's). The blocks share the (range, step) units stream-K fashion, an equal run each; a warp adds its
// sums into the [M, N] workspace where a range or its run ends, and the settling kernel writes the
// outputs. bf16 X from 2^25 weights takes two steps a stage where K has an even number of steps (three
// stages, two blocks a multiprocessor), the rest one (four stages, three blocks): see WalkShape. Against the
// copy-engine ring of two token tiles (one lane's loads of X and two mma a word, 64-channel tiles, X copied a
// stage for every 64 channels), notes/performance.md (forty-fifth session). bf16 X takes the same walk: the
// weights enter as 128 + n (walk_pairs) and X undivided; two more shifts a weight register make it about 6%
// slower than fp16's, 1.0-1.4x the ring from 2 rows on the H200 (fiftieth and fifty-first sessions).
constexpr int kWalkWarps = 4;
constexpr int kWalkTiles = 4;                                           // n-tiles a warp
constexpr int kWalkGroups = static_cast<int>(gemv::kWalkChannels) / 4;  // column groups a range
static_assert(kWalkGroups == 2 * kWalkTiles * kWalkWarps, "a range's column groups are its warps' n-tiles");
constexpr int kWalkThreads = (kWalkWarps + 1) * 32;
// A stage of SPS steps: their weights (the 2 SPS tiles of a column group are 128 SPS contiguous bytes in
// memory), then their X, constants and scale rows, each step's after the one before.
// - SPS = 1: four stages, three blocks a multiprocessor (registers and shared memory let four of the
//   fast form fit; three ran 28672x8192 at 16 rows faster, notes/performance.md, forty-fifth session, and
//   again in the seventy-ninth: held to 96 registers for four, fp16 ran 0.94-0.97x at 9 and 16 rows
//   of 28672x8192 and 8192x28672, 1.00-1.01x at 8192x8192 and 0.91-0.97x at 4096x4096 on the H100).
// - SPS = 2, bf16 X only (gemv::walk16_stage_steps): three stages, two blocks. Against SPS = 1 on the H200,
//   alternated three times: bf16 1.02-1.03x at 28672x8192 and 8192x28672 from 2 to 16 rows, 1.00-1.01x at
//   8192x8192 and 14336x4096, 0.98-0.99x at 4096x4096; fp16 0.995-1.003x at the two large shapes (its
//   goal shapes: kept on SPS = 1), 1.01-1.02x at 8192x8192. Two stages of three or four blocks, four
//   stages of two, four steps a stage, and a form that took a range's odd last step in the same kernel
//   were 1-5% slower (notes/performance.md, fifty-fourth session).
// MT: token tiles of 16 rows (gemv::walk_token_tiles: two from 17 rows of X). A step's X and constants are
// MT times as large, and each weight register goes into MT products. Two tiles take two blocks a
// multiprocessor whatever SPS: held to three with one step a stage (128 registers), ptxas spilled 56-144
// bytes and the walk ran 1.07-1.29x slower at 17-32 rows on the H200; bf16's two steps a stage keep two
// blocks (168 registers; with one block, 204-255, it was 1.05x slower). The half tile (17-24 rows, every
// token on the mma's n8 side) needs fewer registers and takes three where it can: walk_blocks. Against the
// ring of four token tiles it replaced, 17-32 rows, H200, fp16: 28672x8192 1.19-1.24x, 8192x28672 1.19-1.41x,
// 8192x8192 1.22-1.40x, 4096x4096 1.39-1.55x; bf16 1.19-1.53x (notes/performance.md, sixty-first session).
template <int SPS, int MT>
struct WalkShape {
  static_assert(SPS == 1 || SPS == 2, "one or two steps a stage");
  static_assert(MT == 1 || MT == 2, "one or two token tiles");
  static constexpr int kStages = SPS == 1 ? 4 : 3;
  static constexpr int kBlocksPerSm = SPS == 1 && MT == 1 ? 3 : 2;
  static constexpr int kW1 = kWalkGroups * 256;  // a step's weights: two 64-row tiles a column group
  static constexpr int kXT = 4096;               // a token tile's: 8 A fragments x 32 lanes x 16 bytes
  static constexpr int kCT = 256;                // minus its constants: 2 tiles x 8 lanes x float4
  static constexpr int kX1 = MT * kXT, kC1 = MT * kCT;
  static constexpr int kS1 = 2 * kWalkGroups * 8;  // one or two scale rows of the range's channels
  static constexpr int kW = SPS * kW1, kX = SPS * kX1, kC = SPS * kC1, kS = SPS * kS1;
  static constexpr int kStage = (kW + kX + kC + kS + 1023) / 1024 * 1024;
  static constexpr int kSmem = kStages * kStage + 1024 + 16 * kStages;  // + alignment, barriers
};

// Blocks a multiprocessor (the kernel's bound, and the shared memory that holds it there). The half tile
// (N8 with two token tiles) needs 126-168 registers where the whole second tile took 156-168: with one step a
// stage and one scale row, three blocks fit 128 (fp16 and bf16 spill 16 bytes: two local loads a step) and
// ran fp16 at 17-24 rows of 28672x8192 and 8192x28672 1.04-1.05x faster than two (51.3 against 53.8 us on the
// H200, the first form of the half tile); groups of 64 (32 bytes of stack under three) and bf16's two
// steps a stage keep two (notes/performance.md, sixty-third session).
template <bool G64, int SPS, int MT, bool N8>
constexpr int walk_blocks = (N8 && MT == 2 && SPS == 1 && !G64) ? 3 : WalkShape<SPS, MT>::kBlocksPerSm;

// bf16 X with groups of 128 rows or more: the walk reads the step's whole constant (walk_x_kernel sums
// both tiles' in double and rounds once), one 16-byte read a step and no adds where it read two and added
// them: bf16 1.01-1.02x at 28672x8192 and 8192x28672 on the H200. fp16's walk was 1.00-0.98x with it
// (fewer instructions, the same or a little slower; its loop is not held by their issue), so fp16 keeps
// the two reads (notes/performance.md, fifty-first session).
template <OutType T, bool G64>
constexpr bool walk_whole_step = T == OutType::BF16 && !G64;

struct WalkArgs : FtIo {
  const uint4* xs;   // [K / 128][8][32] A fragments (walk_x_kernel)
  const float4* c4;  // [K / 128][2][8]
  int units;         // ranges x stages a range
};

// X laid out for the walk, a block a step of 128 rows and a token tile of 16 (blockIdx.y; a step's tiles
// follow one another in xs and c4), a thread an A fragment: warp f = 2 j + h2, lane
// (g, q). Word q of piece (tile j / 2, half j % 2) holds, in slots 2 h2 and 2 h2 + 4, the rows of the
// mma's k slots 2q and 2q + 1, and in slots 2 h2 + 1 and 2 h2 + 5 (the high nibbles) those of k slots 2q
// + 8 and 2q + 9; the fragment holds X of tokens g and g + 8 there (zeros past M), the high rows divided
// by 16. Beside it, minus each token's constant a 64-row tile: 1032 x the low rows' X plus 1152 x the
// high rows' X / 16 (the values as staged), summed in double in a fixed order and rounded once. bf16 X
// (whose weights enter as 128 + n, every nibble after a shift): X as it is, and 136 x every row's.
// whole_step: a group of 128 rows or more, tile 1's place holds the step's constant (both tiles').
// n8: the fragments and constants as the walk's N8 form reads them, tokens as the mma's B operand: the
// fragment's words in the order (g, k 2q), (g, k 2q + 8), (g + 8, k 2q), (g + 8, k 2q + 8), so that tokens
// g and g + 8 each take an aligned register pair, and float4 q of a 64-row tile holds minus the constants
// of tokens 2q, 2q + 1, 2q + 8 and 2q + 9 (float4s 4-7 unused).
template <OutType T>
__global__ void __launch_bounds__(256)
    walk_x_kernel(const uint16_t* x, int64_t m, int64_t k, uint4* xs, float4* c4, bool whole_step, bool n8) {
#ifdef DQL_BULK_COPY
  // The walk may start at once (it reads W until it needs what this kernel writes). This kernel is itself
  // the programmatic dependent of the launch before it, which may have written X: it waits for it first.
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
  constexpr int kPitch = 128 + 8;  // halves a token's row of the step (padded: the reads below spread)
  __shared__ __align__(16) uint16_t rows[16 * kPitch];
  __shared__ double part[8][16];
  // blockIdx.y: the token tile (tokens 16 y .. 16 y + 15); the step's tiles are neighbours in xs and c4.
  const int64_t step = blockIdx.x, tile = step * gridDim.y + blockIdx.y;
  {  // the step's X, 16 bytes a thread (zeros past M)
    const int tok = static_cast<int>(threadIdx.x) / 16, piece = static_cast<int>(threadIdx.x) % 16;
    const int64_t row = int64_t{blockIdx.y} * 16 + tok;
    const uint4 v = row < m ? load_x(reinterpret_cast<const uint4*>(x + row * k + step * 128) + piece)
                            : make_uint4(0u, 0u, 0u, 0u);
    *reinterpret_cast<uint4*>(rows + tok * kPitch + piece * 8) = v;
  }
  __syncthreads();
  const int f = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane / 4, q = lane % 4, j = f / 2, h2 = f % 2;
  constexpr layouts::FtGeometry geo{4};
  const int64_t word = (j / 2) * 32 + (j % 2) * 4 + q;  // channel 0's word of the step
  const int slots[4] = {2 * h2, 2 * h2 + 4, 2 * h2 + 1, 2 * h2 + 5};
  uint16_t v[2][4];  // tokens g, g + 8 by slot
  double c[2] = {0.0, 0.0};
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const int row =
        static_cast<int>(layouts::ft_source(geo, word, layouts::ft_slot_element(geo, slots[e]), k).k);
#pragma unroll
    for (int t = 0; t < 2; ++t) {
      const uint16_t xb = rows[(g + 8 * t) * kPitch + row];
      if constexpr (T == OutType::F16) {
        const __half xv = __ushort_as_half(xb);
        const __half sv = e < 2 ? xv : __float2half_rn(__half2float(xv) * 0.0625f);
        v[t][e] = __half_as_ushort(sv);
        c[t] += (e < 2 ? 1032.0 : 1152.0) * static_cast<double>(__half2float(sv));
      } else {
        v[t][e] = xb;
        c[t] += 136.0 * static_cast<double>(gemv::act_to_f32(xb, OutType::BF16));
      }
    }
  }
  const uint32_t w1 = bits::pack16(v[1][0], v[1][1]), w2 = bits::pack16(v[0][2], v[0][3]);
  xs[(tile * 8 + f) * 32 + lane] =
      make_uint4(bits::pack16(v[0][0], v[0][1]), n8 ? w2 : w1, n8 ? w1 : w2, bits::pack16(v[1][2], v[1][3]));
#pragma unroll
  for (int t = 0; t < 2; ++t) {
    c[t] += __shfl_xor_sync(0xFFFFFFFFu, c[t], 1);
    c[t] += __shfl_xor_sync(0xFFFFFFFFu, c[t], 2);
    if (q == 0) part[f][g + 8 * t] = c[t];
  }
  __syncthreads();
  if (threadIdx.x < 32) {  // tile tl's token tok: warps 4 tl .. 4 tl + 3 in order
    const int tl = static_cast<int>(threadIdx.x) / 16, tok = static_cast<int>(threadIdx.x) % 16;
    double sum = part[4 * tl][tok] + part[4 * tl + 1][tok] + part[4 * tl + 2][tok] + part[4 * tl + 3][tok];
    if (whole_step && tl == 1) sum += part[0][tok] + part[1][tok] + part[2][tok] + part[3][tok];
    const float neg = -static_cast<float>(sum);
    if (n8) {  // float4 q: tokens 2q, 2q + 1, 2q + 8, 2q + 9
      reinterpret_cast<float*>(c4 + (tile * 2 + tl) * 8 + tok % 8 / 2)[2 * (tok / 8) + tok % 2] = neg;
    } else {  // float4 (tokens gg, gg, gg + 8, gg + 8) of lane row gg = tok % 8
      float* out = reinterpret_cast<float*>(c4 + (tile * 2 + tl) * 8 + tok % 8) + 2 * (tok / 8);
      out[0] = neg;
      out[1] = neg;
    }
  }
#else
  // The launcher takes this path on compute capability 9.0 only.
  __trap();
#endif
}

// The mma's B registers of word w (shifted right by 8 for its second pair of slots): the low
// nibbles of slots 0 and 4 as 1024 + n, the high ones of slots 1 and 5 as 1024 + 16 n. bf16, whose 7
// bits of mantissa leave no room for 16 n beside 128: both as 128 + n, the high ones after a shift by 4.
template <bool NAIVE, OutType T>
__device__ __forceinline__ void walk_pairs(uint32_t w, uint32_t& lo, uint32_t& hi) {
  if constexpr (!NAIVE && T == OutType::F16) {
    lo = bits::lop3<0xEA>(w, 0x000F000Fu, 0x64006400u);  // (w & mask) | 0x6400 in each half
    hi = bits::lop3<0xEA>(w, 0x00F000F0u, 0x64006400u);
  } else if constexpr (!NAIVE) {
    lo = bits::lop3<0xEA>(w, 0x000F000Fu, 0x43004300u);  // (w & mask) | 0x4300 in each half
    hi = bits::lop3<0xEA>(w >> 4, 0x000F000Fu, 0x43004300u);
  } else if constexpr (T == OutType::F16) {
    const auto h = [](uint32_t v) {
      return static_cast<uint16_t>(bits::cvt_f16_s32(static_cast<int32_t>(v)));
    };
    lo = bits::pack16(h(1024u + (w & 15u)), h(1024u + ((w >> 16) & 15u)));
    hi = bits::pack16(h(1024u + 16u * ((w >> 4) & 15u)), h(1024u + 16u * ((w >> 20) & 15u)));
  } else {  // integer to fp32, a pair of those to bf16
    const auto h = [](uint32_t a, uint32_t b) {
      return bits::cvt_bf16x2_f32(quant::bits_of_f32(static_cast<float>(static_cast<int32_t>(b))),
                                  quant::bits_of_f32(static_cast<float>(static_cast<int32_t>(a))));
    };
    lo = h(128u + (w & 15u), 128u + ((w >> 16) & 15u));
    hi = h(128u + ((w >> 4) & 15u), 128u + ((w >> 20) & 15u));
  }
}

// Shared-memory reads by address (asm volatile: they stay after the stage's barrier wait).
__device__ __forceinline__ uint4 lds_v4(uint32_t p) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(p));
  return v;
}
[[maybe_unused]] __device__ __forceinline__ uint2 lds_v2(uint32_t p) {
  uint2 v;
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "r"(p));
  return v;
}
[[maybe_unused]] __device__ __forceinline__ float4 lds_f4(uint32_t p) {
  const uint4 v = lds_v4(p);
  return make_float4(__uint_as_float(v.x), __uint_as_float(v.y), __uint_as_float(v.z), __uint_as_float(v.w));
}
[[maybe_unused]] __device__ __forceinline__ uint32_t lds_u32(uint32_t p) {
  uint32_t v;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(p));
  return v;
}

// A tile's sums start from minus its tokens' constants (at cu, walk_x_kernel): the step's in tile 1's
// place (WHOLE: walk_whole_step), each 64-row tile's in its own sums (G64), or the two tiles' added. Lane (g,
// q) holds tokens g and g + 8 (float4 g: g, g, g + 8, g + 8), the same for each n-tile.
template <bool WHOLE, bool G64, int R>
__device__ __forceinline__ void walk_start(float (&d)[R][kWalkTiles][4], uint32_t cu, int g) {
  if constexpr (WHOLE) {
    const float4 c = lds_f4(cu + 16 * (8 + g));
#pragma unroll
    for (int t = 0; t < kWalkTiles; ++t)
      d[0][t][0] = c.x, d[0][t][1] = c.y, d[0][t][2] = c.z, d[0][t][3] = c.w;
  } else {
    const float4 c0 = lds_f4(cu + 16 * g), c1 = lds_f4(cu + 16 * (8 + g));
#pragma unroll
    for (int t = 0; t < kWalkTiles; ++t) {
      if constexpr (G64) {
        d[0][t][0] = c0.x, d[0][t][1] = c0.y, d[0][t][2] = c0.z, d[0][t][3] = c0.w;
        d[R - 1][t][0] = c1.x, d[R - 1][t][1] = c1.y, d[R - 1][t][2] = c1.z, d[R - 1][t][3] = c1.w;
      } else {
        d[0][t][0] = c0.x + c1.x, d[0][t][1] = c0.y + c1.y, d[0][t][2] = c0.z + c1.z,
        d[0][t][3] = c0.w + c1.w;
      }
    }
  }
}
// The same for the walk with every token on the mma's n8 side (walk_x_kernel's n8 order): float4 q of
// 64-row tile r holds tokens 2q, 2q + 1, 2q + 8 and 2q + 9 of the tile; e[n] takes tokens 8n + 2q and
// 8n + 2q + 1. NT8 = 3, the half tile: n = 0, 1 from c0 (tokens 0..15) and n = 2 from c1 (the tile of
// tokens 16..31). NT8 = 1, 2-8 rows: n = 0 from c0 only.
template <bool WHOLE, bool G64, int NT8, int R>
__device__ __forceinline__ void walk_start_t8(float (&e)[NT8][R][2][4], uint32_t c0, uint32_t c1, int q) {
  static_assert(NT8 == 1 || NT8 == 3, "tokens 0..7, or 0..23");
#pragma unroll
  for (int tt = 0; tt < (NT8 == 3 ? 2 : 1); ++tt) {
    const uint32_t cu = (tt ? c1 : c0) + 16 * q;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      float4 m;
      if constexpr (WHOLE) {
        m = lds_f4(cu + 16 * 8);
      } else if constexpr (G64) {
        m = lds_f4(cu + 16 * 8 * r);
      } else {
        const float4 m0 = lds_f4(cu), m1 = lds_f4(cu + 16 * 8);
        m = make_float4(m0.x + m1.x, m0.y + m1.y, m0.z + m1.z, m0.w + m1.w);
      }
#pragma unroll
      for (int p = 0; p < 2; ++p) {
        float* lo = e[2 * tt][r][p];
        lo[0] = m.x, lo[1] = m.y, lo[2] = m.x, lo[3] = m.y;
        if constexpr (NT8 == 3) {
          if (tt == 0) e[1][r][p][0] = m.z, e[1][r][p][1] = m.w, e[1][r][p][2] = m.z, e[1][r][p][3] = m.w;
        }
      }
    }
  }
}
// A tile's sums of the step times their channels' scales (row r of the step's at ss) into acc: lane (g, q)
// holds channels 2q and 2q + 1 of each n-tile.
template <int R>
__device__ __forceinline__ void walk_scale(float (&acc)[kWalkTiles][4], const float (&d)[R][kWalkTiles][4],
                                           uint32_t ss, int warp, int q) {
#pragma unroll
  for (int t = 0; t < kWalkTiles; ++t) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const uint32_t sv = lds_u32(ss + 4 * (r * 2 * kWalkGroups + 4 * (warp * kWalkTiles + t) + q));
      const float s0 = quant::half_to_f32(bits::lo16(sv)), s1 = quant::half_to_f32(bits::hi16(sv));
      acc[t][0] = fmaf(d[r][t][0], s0, acc[t][0]);
      acc[t][1] = fmaf(d[r][t][1], s1, acc[t][1]);
      acc[t][2] = fmaf(d[r][t][2], s0, acc[t][2]);
      acc[t][3] = fmaf(d[r][t][3], s1, acc[t][3]);
    }
  }
}

// The same for the n8 side's sums (e[n][r][p]: channel g of n-tiles 2p and 2p + 1, walk_start_t8): each
// channel's scale once for its NT8 token tiles of 8.
template <int NT8, int R>
__device__ __forceinline__ void walk_scale_t8(float (&acc)[NT8][2][4], const float (&e)[NT8][R][2][4],
                                              uint32_t ss, int warp, int g) {
#pragma unroll
  for (int r = 0; r < R; ++r) {
#pragma unroll
    for (int p = 0; p < 2; ++p) {
      float sc[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {  // channel g of n-tile 2p + h
        const int c = 8 * (warp * kWalkTiles + 2 * p + h) + g;
        const uint32_t sv = lds_u32(ss + 4 * (r * 2 * kWalkGroups) + 4 * (c / 2));
        sc[h] = quant::half_to_f32(c % 2 ? bits::hi16(sv) : bits::lo16(sv));
      }
#pragma unroll
      for (int n = 0; n < NT8; ++n) {
        acc[n][p][0] = fmaf(e[n][r][p][0], sc[0], acc[n][p][0]);
        acc[n][p][1] = fmaf(e[n][r][p][1], sc[0], acc[n][p][1]);
        acc[n][p][2] = fmaf(e[n][r][p][2], sc[1], acc[n][p][2]);
        acc[n][p][3] = fmaf(e[n][r][p][3], sc[1], acc[n][p][3]);
      }
    }
  }
}

// G64: groups of 64 rows (each tile of a step its own scale row); else the step's one row. N8: every token
// on the mma's n8 side; with two token tiles the half tile (gemv::walk_half_tile: tokens 0..23, three tiles
// of 8), with one tokens 0..7 (gemv::walk_eight_n8: 2-8 rows, one tile of 8).
template <OutType T, bool NAIVE, bool G64, int SPS, int MT, bool N8>
__global__ void __launch_bounds__(kWalkThreads, MT == 1 ? 1 : walk_blocks<G64, SPS, MT, N8>)
    ft_walk16_kernel(WalkArgs a, const __grid_constant__ CUtensorMap wmap) {
#ifdef DQL_BULK_COPY
  constexpr int kT8 = MT == 2 ? 3 : 1;  // N8: token tiles of 8 on the n8 side
  using S = WalkShape<SPS, MT>;
  constexpr int kWalkStages = S::kStages;
  extern __shared__ __align__(128) unsigned char raw[];
  // 1024-byte aligned (the swizzle's pattern) by an offset from raw, so the compiler still knows the
  // pointers shared
  unsigned char* smem = raw + ((1024u - (io::smem_addr(raw) & 1023u)) & 1023u);
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + kWalkStages * S::kStage);
  uint64_t* empty = full + kWalkStages;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int units = static_cast<int>(a.k / gemv::kWalkStep) / SPS;  // a range's (a stage each)
  const int u0 = static_cast<int>(gemv::run_first(blockIdx.x, gridDim.x, a.units));
  const int n = static_cast<int>(gemv::run_first(blockIdx.x + 1, gridDim.x, a.units)) - u0;
  constexpr int kRows = G64 ? 2 : 1;  // scale rows a step
  constexpr bool kWholeStep = walk_whole_step<T, G64>;
  if (threadIdx.x == 0) {
    for (int i = 0; i < kWalkStages; ++i) mbar_init(full + i, 1), mbar_init(empty + i, kWalkWarps * 32);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();

  if (warp == kWalkWarps) {  // the ring's filler
    if (lane == 0) {
      const auto expect = [&](int i) {  // the bytes of the block's unit i
        mbar_expect_tx(full + i % kWalkStages, S::kW + S::kX + S::kC + SPS * kRows * kWalkGroups * 8);
      };
      const auto weights = [&](int i) {  // its weights and scale rows
        const int slot = i % kWalkStages, u = u0 + i, range = u / units, step0 = (u - range * units) * SPS;
        unsigned char* st = smem + slot * S::kStage;
        tensor_copy_3d(st, &wmap, 0, range * kWalkGroups, 2 * step0, full + slot);
#pragma unroll
        for (int s = 0; s < SPS; ++s) {
#pragma unroll
          for (int r = 0; r < kRows; ++r) {
            const int64_t step = step0 + s;
            const int64_t row = G64 ? 2 * step + r : step * gemv::kWalkStep / a.group;
            bulk_copy(st + S::kW + S::kX + S::kC + (s * kRows + r) * kWalkGroups * 8,
                      a.scales + row * a.n + int64_t{range} * (4 * kWalkGroups), kWalkGroups * 8,
                      full + slot);
          }
        }
      };
      const auto x_of = [&](int i) {  // its X fragments and constants
        const int slot = i % kWalkStages, step0 = (u0 + i) % units * SPS;
        unsigned char* st = smem + slot * S::kStage;
        bulk_copy(st + S::kW, a.xs + int64_t{step0} * (S::kX1 / 16), S::kX, full + slot);
        bulk_copy(st + S::kW + S::kX, a.c4 + int64_t{step0} * (S::kC1 / 16), S::kC, full + slot);
      };
      // A stage's X (from the L2, where walk_x_kernel left it) is asked for before its weights (from
      // memory), so that it does not wait behind them; in the first stages (as many as the ring holds) the
      // weights go first, unit 0's before the wait for walk_x_kernel. Against X asked for after every first
      // stage's weights and then after each stage's: 28672x8192 at 16 rows 42.6 -> 40.1 us on the H200
      // (notes/performance.md, forty-seventh session).
      const int first = n < kWalkStages ? n : kWalkStages;
      for (int i = 0; i < first; ++i) {
        expect(i);
        weights(i);
        if (i == 0) asm volatile("griddepcontrol.wait;" ::: "memory");  // walk_x_kernel's X is ready
        x_of(i);
      }
      for (int i = kWalkStages; i < n; ++i) {
        mbar_wait(empty + i % kWalkStages, ((i / kWalkStages) - 1) & 1);
        expect(i);
        x_of(i);
        weights(i);
      }
    }
    return;
  }

  const int g = lane / 4, q = lane % 4;
  const int mt = lane / 16, mh = (lane / 8) % 2, mi = lane % 8;  // the ldmatrix row this lane addresses
  // Shared addresses worked out once, outside the loop: the first stage, the barriers and the lane's
  // ldmatrix offsets within a stage. The empty asm keeps the three in registers (else the compiler works
  // the block's shared window and the stage's alignment out again at every step), so every read of a
  // stage below goes by address: 13 of 304 instructions fewer in the loop, 0.2-0.7 us less for fp16 at
  // 28672x8192 and 8192x28672 on the H200 (notes/performance.md, fiftieth session).
  uint32_t st0 = io::smem_addr(smem), full0 = io::smem_addr(full), empty0 = io::smem_addr(empty);
  asm volatile("" : "+r"(st0), "+r"(full0), "+r"(empty0));
  uint32_t lm[kWalkTiles];
#pragma unroll
  for (int t = 0; t < kWalkTiles; ++t) {
    const int row = mt * kWalkGroups + 2 * (warp * kWalkTiles + t) + mi / 4;
    lm[t] = static_cast<uint32_t>(row * 128 + (((2 * (mi % 4) + mh) ^ (row & 7)) * 16));
  }
  float acc[N8 ? 1 : MT][kWalkTiles][4] = {};                   // the sums, scaled (N8's are acc8)
  float acc8[N8 ? kT8 : 1][2][4] = {};                          // N8's: e's sums, scaled
  int range = u0 / units, left = units - (u0 - range * units);  // units of this range still to come
  for (int i = 0; i < n; ++i) {
    const int slot = i % kWalkStages;
    // The settling kernel may start once every block has begun its last unit (against at the walk's
    // start: 0.5 us less at 28672x8192 and 8192x28672, the same elsewhere).
    if (i == n - 1) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    mbar_wait_at(full0 + 8 * slot, (i / kWalkStages) & 1);
    // The stage's steps, unrolled into one stretch of code for the compiler to schedule
#pragma unroll
    for (int s = 0; s < SPS; ++s) {
      const uint32_t stage = st0 + slot * S::kStage, wb = stage + s * S::kW1;
      // X, the constants, the scales
      const uint32_t xs = stage + S::kW + s * S::kX1, cs = stage + S::kW + S::kX + s * S::kC1,
                     ss = stage + S::kW + S::kX + S::kC + s * kRows * kWalkGroups * 8;
      uint32_t b[kWalkTiles][4];
#pragma unroll
      for (int t = 0; t < kWalkTiles; ++t) ldmatrix_x4(b[t], wb + lm[t]);
      if constexpr (N8) {
        // Every token on the mma's n8 side (B: tokens 0..7 {xa.x, xa.y}, 8..15 {xa.z, xa.w}, 16..23
        // {xh.x, xh.y}, walk_x_kernel's n8 order; 2-8 rows the first pair only), the weights as the A
        // operand: n-tiles 2p and 2p + 1 as m16 (rows g and g + 8 are their channels g, and a channel's B
        // registers are its A row's). Each converted weight register then has one role. With tokens 0..15
        // as the A operand the same registers were also B pairs, no register order serves both, and ptxas
        // copied every A quad (64 moves a step, 21% of the step's instructions): this form is 1.07-1.10x
        // faster on the large shapes on the H200 (notes/performance.md, sixty-fourth session). e[n][r][p]
        // holds channel g of n-tile 2p (0, 1) and of 2p + 1 (2, 3), tokens 8n + 2q and 8n + 2q + 1.
        // 2-8 rows (one tile of 8 against the A quads, 16 products a step where the tile of 16 takes 32)
        // where the stage has two steps (bf16 X): 1.02-1.04x with groups of 128 at 28672x8192, 8192x28672,
        // 8192x8192 and 14336x4096 on the H200, 1.03-1.06x with groups of 64; fp16 X on one step a stage
        // 0.99-1.01x, so it keeps the tile of 16 (notes/performance.md, sixty-fifth session).
        float e[kT8][kRows][2][4];
        walk_start_t8<kWholeStep, G64>(e, cs, cs + (MT == 2 ? S::kCT : 0), q);
#pragma unroll
        for (int f = 0; f < 8; ++f) {
          uint4 xa;
          uint2 xh = {};
          if constexpr (kT8 == 3) {
            xa = lds_v4(xs + 16 * (f * 32 + lane));
            xh = lds_v2(xs + S::kXT + 16 * (f * 32 + lane));
          } else {
            const uint2 x0 = lds_v2(xs + 16 * (f * 32 + lane));
            xa = make_uint4(x0.x, x0.y, 0u, 0u);
          }
#pragma unroll
          for (int p = 0; p < 2; ++p) {
            uint32_t lo[2], hi[2];
#pragma unroll
            for (int h = 0; h < 2; ++h)
              walk_pairs<NAIVE, T>(f % 2 ? b[2 * p + h][f / 2] >> 8 : b[2 * p + h][f / 2], lo[h], hi[h]);
            wide_mma<T>(e[0][G64 ? f / 4 : 0][p], lo[0], lo[1], hi[0], hi[1], xa.x, xa.y);
            if constexpr (kT8 == 3) {
              wide_mma<T>(e[1][G64 ? f / 4 : 0][p], lo[0], lo[1], hi[0], hi[1], xa.z, xa.w);
              wide_mma<T>(e[2][G64 ? f / 4 : 0][p], lo[0], lo[1], hi[0], hi[1], xh.x, xh.y);
            }
          }
        }
        walk_scale_t8(acc8, e, ss, warp, g);
      } else {
        // One token tile after the other, each through the step's weights (b, held) and into its sums:
        // d then lives for one tile only.
#pragma unroll
        for (int u = 0; u < MT; ++u) {
          const uint32_t xu = xs + u * S::kXT;
          float d[kRows][kWalkTiles][4];
          walk_start<kWholeStep, G64>(d, cs + u * S::kCT, g);
#pragma unroll
          for (int f = 0; f < 8; ++f) {
            const uint4 xa = lds_v4(xu + 16 * (f * 32 + lane));
#pragma unroll
            for (int t = 0; t < kWalkTiles; ++t) {
              uint32_t lo, hi;
              walk_pairs<NAIVE, T>(f % 2 ? b[t][f / 2] >> 8 : b[t][f / 2], lo, hi);
              wide_mma<T>(d[G64 ? f / 4 : 0][t], xa.x, xa.y, xa.z, xa.w, lo, hi);
            }
          }
          walk_scale(acc[u], d, ss, warp, q);
        }
      }
    }
    mbar_arrive_at(empty0 + 8 * slot);  // every lane after its last read of the stage
    if (--left == 0 || i == n - 1) {
      if constexpr (N8) {
        // acc8[n][p]: channel g of n-tiles 2p and 2p + 1, tokens 8n + 2q and 8n + 2q + 1. Lanes g and g ^ 1
        // swap one value, so each holds two neighbouring channels of one token: one vector reduction.
        const bool odd = g % 2;
#pragma unroll
        for (int n8 = 0; n8 < kT8; ++n8) {
#pragma unroll
          for (int p = 0; p < 2; ++p) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {  // n-tile 2p + h: values 2h (token 2q) and 2h + 1 (2q + 1)
              const float v0 = acc8[n8][p][2 * h], v1 = acc8[n8][p][2 * h + 1];  // (selects: no local memory)
              const float mine = odd ? v1 : v0, give = odd ? v0 : v1;
              const float got = __shfl_xor_sync(0xFFFFFFFFu, give, 4);
              const int64_t ch =
                  int64_t{range} * gemv::kWalkChannels + 8 * (warp * kWalkTiles + 2 * p + h) + (g & ~1);
              const int64_t tok = 8 * n8 + 2 * q + (odd ? 1 : 0);
              if (tok < a.m)
                red_add2(a.sums + RowMajorSums{}(a.out, tok, ch), odd ? got : mine, odd ? mine : got);
            }
#pragma unroll
            for (int v = 0; v < 4; ++v) acc8[n8][p][v] = 0.0f;
          }
        }
      } else {
        // Lane (g, q) holds tokens g and g + 8 of channels 2q and 2q + 1 of each n-tile. Lanes q and q ^ 1
        // swap a pair, so that each holds four neighbouring channels of one token (q even: token g, q odd:
        // token g + 8; channels 4 (q / 2) .. 4 (q / 2) + 3 of the n-tile either way): one 16-byte reduction
        // of the [M, N] workspace where two 8-byte ones were. They touch the same 32-byte sectors, and the
        // flush measured no shorter (1.00-1.01x), but the walk takes 2-16 fewer registers and the naive twin
        // for fp16 X ran 1.02x faster (notes/performance.md, sixty-sixth session).
#pragma unroll
        for (int u = 0; u < MT; ++u) {
#pragma unroll
          for (int t = 0; t < kWalkTiles; ++t) {
            const int64_t ch =
                int64_t{range} * gemv::kWalkChannels + 8 * (warp * kWalkTiles + t) + 4 * (q / 2);
            const bool odd = q % 2;
            const float s0 = odd ? acc[u][t][0] : acc[u][t][2], s1 = odd ? acc[u][t][1] : acc[u][t][3];
            const float r0 = __shfl_xor_sync(0xFFFFFFFFu, s0, 1), r1 = __shfl_xor_sync(0xFFFFFFFFu, s1, 1);
            const float4 v = odd ? make_float4(r0, r1, acc[u][t][2], acc[u][t][3])
                                 : make_float4(acc[u][t][0], acc[u][t][1], r0, r1);
            const int64_t tok = 16 * u + g + (odd ? 8 : 0);
            if (tok < a.m) red_add4(a.sums + RowMajorSums{}(a.out, tok, ch), v);
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[u][t][e] = 0.0f;
          }
        }
      }
      ++range;
      left = units;
    }
  }
#else
  // The launcher takes this path on compute capability 9.0 only.
  __trap();
#endif
}

// The walk's outputs from the [M, N] workspace, a block 64 channels of a token tile (blockIdx.y), a thread 4
// channels of one token:
// one 16-byte read, its 4 outputs as one 8-byte store (Y starts 8-byte aligned and N is a multiple of
// 128), then the zeros. Launched as the walk's programmatic dependent; it waits for it at
// griddepcontrol.wait. Against the [N, M] workspace turned round in shared memory, 2-byte outputs and
// the zeros stored beside the read: 28672x8192 at 16 rows 43.2 -> 41.8 us on the H200 with 16-byte
// outputs after the turn, and 40.2 -> 39.1-39.7 with this one (notes/performance.md, forty-seventh
// session).
constexpr int kWalkSettleChannels = 64;
template <OutType T>
__global__ void __launch_bounds__(256) walk_settle_kernel(Out o, float* sums) {
#ifdef DQL_BULK_COPY
  static_assert(static_cast<int>(gemv::kWalkRows) * kWalkSettleChannels / 4 == 256, "a thread 4 channels");
  static_assert(gemv::kWalkChannels % kWalkSettleChannels == 0, "a block's channels within a range");
  asm volatile("griddepcontrol.wait;" ::: "memory");
  // blockIdx.y: the token tile
  const int tid = static_cast<int>(threadIdx.x),
            tok = static_cast<int>(blockIdx.y) * static_cast<int>(gemv::kWalkRows) +
                  tid / (kWalkSettleChannels / 4);
  if (tok >= o.m) return;
  const int64_t ch = int64_t{blockIdx.x} * kWalkSettleChannels + 4 * (tid % (kWalkSettleChannels / 4));
  const int64_t at = RowMajorSums{}(o, tok, ch);  // Y is [M, N] too
  float4* p = reinterpret_cast<float4*>(sums + at);
  const float4 v = __ldcg(p);
  const auto h = [&](int i, float f) { return out_value<T>(o, ch + i, f); };
  // __stcg: one 8-byte store (a plain assignment here was split into two 4-byte ones).
  __stcg(reinterpret_cast<uint2*>(o.y + at),
         make_uint2(bits::pack16(h(0, v.x), h(1, v.y)), bits::pack16(h(2, v.z), h(3, v.w))));
  __stcg(p, make_float4(0.0f, 0.0f, 0.0f, 0.0f));
#else
  // The launcher takes this path on compute capability 9.0 only.
  __trap();
#endif
}

// The weights' map for the walk: dims (the 32 words of a column group's 64-row tile, N / 4 column
// groups, K / 64 tiles), a box a stage of a range (32, kWalkGroups, 2 x its steps), in the 128-byte
// swizzle.
bool walk_map(CUtensorMap* map, const GemvLaunch& L, int sps) {
  const int64_t dims[3] = {32, L.w.n / 4, L.w.k / 64};
  const int64_t strides[2] = {L.w.k * 2, 128};
  const unsigned box[3] = {32, static_cast<unsigned>(kWalkGroups), 2 * static_cast<unsigned>(sps)};
  return tensor_map_3d(map, CU_TENSOR_MAP_DATA_TYPE_UINT32, L.w.q, dims, strides, box,
                       CU_TENSOR_MAP_SWIZZLE_128B);
}

template <OutType T, bool NAIVE, bool G64, int SPS, int MT, bool N8>
std::string launch_walk16_g(const GemvLaunch& L, const Workspace& ws, const CUtensorMap& wmap, bool wait) {
  using S = WalkShape<SPS, MT>;
  const auto kernel = ft_walk16_kernel<T, NAIVE, G64, SPS, MT, N8>;
  static Fit fit;
  WalkArgs a{ft_io(L, ws), reinterpret_cast<const uint4*>(ws.xs),
             reinterpret_cast<const float4*>(ws.xs + MT * gemv::kWalkRows * L.w.k),
             static_cast<int>((L.w.n / gemv::kWalkChannels) * (L.w.k / gemv::kWalkStep / SPS))};
  // X's kernel, the chain's first, is the programmatic dependent of the launch before it: back to back its
  // blocks are placed while that launch ends, and the walk's first weights are asked for behind them.
  DependentLaunch xk(L.w.k / gemv::kWalkStep, 256, 0);
  xk.cfg.gridDim.y = MT;
  if (const cudaError_t e = run_kernel_ex(xk.cfg, walk_x_kernel<T>, a.x, a.m, a.k, const_cast<uint4*>(a.xs),
                                          const_cast<float4*>(a.c4), walk_whole_step<T, G64>, N8);
      e != cudaSuccess)
    return std::string("the W4A16 walk's X kernel failed on the GPU: ") + cudaGetErrorString(e);
  // Held to walk_blocks blocks a multiprocessor by unused shared memory.
  const size_t smem =
      std::max(static_cast<size_t>(S::kSmem), occupancy_cap_bytes(walk_blocks<G64, SPS, MT, N8>, 0));
  const int64_t blocks =
      std::min<int64_t>(a.units, int64_t{bulk_blocks_per_sm(fit, kernel, smem, kWalkThreads)} * L.sms);
  DependentLaunch walk(blocks, kWalkThreads, smem);
  if (const cudaError_t e = run_kernel_ex(walk.cfg, kernel, a, wmap); e != cudaSuccess)
    return std::string("the W4A16 walk of 2 to 32 rows failed on the GPU: ") + cudaGetErrorString(e);
  // Its outputs by walk_settle_kernel, as its programmatic dependent (against the copy-engine ring's
  // settling kernel, 1.0-3.0 us less).
  DependentLaunch settle(a.n / kWalkSettleChannels, 256, 0);
  settle.cfg.gridDim.y = MT;
  if (const cudaError_t e = run_kernel_ex(settle.cfg, walk_settle_kernel<T>, a.out, a.sums); e != cudaSuccess)
    return std::string("the W4A16 walk's settling kernel failed on the GPU: ") + cudaGetErrorString(e);
  return status("the W4A16 walk of 2 to 32 rows (copy engine)", wait);
}

// The instance for the weights' groups: 64 rows, or whole steps.
template <OutType T, bool NAIVE, int SPS, int MT, bool N8>
std::string launch_walk16_s(const GemvLaunch& L, const Workspace& ws, const CUtensorMap& wmap, bool wait) {
  return L.w.group == 64 ? launch_walk16_g<T, NAIVE, true, SPS, MT, N8>(L, ws, wmap, wait)
                         : launch_walk16_g<T, NAIVE, false, SPS, MT, N8>(L, ws, wmap, wait);
}
template <OutType T, bool NAIVE, int MT, bool N8>
std::string launch_walk16_t(const GemvLaunch& L, const Workspace& ws, const CUtensorMap& wmap, int sps,
                            bool wait) {
  if constexpr (T == OutType::BF16) {
    if (sps == 2) return launch_walk16_s<T, NAIVE, 2, MT, N8>(L, ws, wmap, wait);
  }
  return launch_walk16_s<T, NAIVE, 1, MT, N8>(L, ws, wmap, wait);
}
template <OutType T, bool NAIVE>
std::string launch_walk16(const GemvLaunch& L, const Workspace& ws, const CUtensorMap& wmap, int sps,
                          bool wait) {
  if (gemv::walk_token_tiles(L.p.m) == 1) {
    // Two steps a stage are bf16's only (gemv::walk16_stage_steps), so fp16 has no such instances.
    if constexpr (T == OutType::BF16) {
      if (gemv::walk_eight_n8(L.p.m, sps)) return launch_walk16_s<T, NAIVE, 2, 1, true>(L, ws, wmap, wait);
    }
    return launch_walk16_t<T, NAIVE, 1, false>(L, ws, wmap, sps, wait);
  }
  return gemv::walk_half_tile(L.p.m, L.w.n, L.w.k)
             ? launch_walk16_t<T, NAIVE, 2, true>(L, ws, wmap, sps, wait)
             : launch_walk16_t<T, NAIVE, 2, false>(L, ws, wmap, sps, wait);
}

template <int BITS, int WPT, OutType T, bool NAIVE>
std::string launch_ft_nt(const GemvLaunch& L, const Workspace& ws, bool wait) {
  constexpr int kWpt2 = BITS == 4 ? 2 : WPT;  // words a lane with two token tiles (BulkShape)
  const int64_t m = L.p.m;
  // One row of int4: the lane form (plain loads, products on the tensor cores). fp16 X on the H200,
  // against the copy-engine ring, bench medians (notes/performance.md, session 41, its first form with
  // the products on the CUDA cores): 28672x8192 39.0 -> 34.6 us, 8192x8192 17.3 -> 14.8, 4096x4096
  // 9.95 -> 8.6, 2048x2048 7.5 -> 5.7; 8192x28672 the same (38.5 -> 38.3: its blocks meet in the
  // workspace). bf16 X is scaled into fp16 a warp at a time (lane_x_bf16) and takes the same walk.
  if constexpr (BITS == 4) {
    if (m == 1) return launch_lane<T, NAIVE>(L, ws, wait);
    // 2 to 32 rows: the walk fed by the copy engine where it applies (against the ring of one, two and four
    // token tiles below: gemv::walk16_takes).
    CUtensorMap wmap;
    const int sps = gemv::walk16_stage_steps(T == OutType::BF16, L.w.n, L.w.k);
    // (Its settling kernel writes Y in 8-byte pieces.)
    if (!L.no_walk && gemv::walk16_takes(L.cc, m, L.w.n, L.w.k, L.w.group) &&
        reinterpret_cast<uintptr_t>(L.y) % 8 == 0 && walk_map(&wmap, L, sps))
      return launch_walk16<T, NAIVE>(L, ws, wmap, sps, wait);
  }
  if (m <= 8 && bulk_fits<BITS, WPT, 1>(L)) return launch_bulk<BITS, WPT, T, NAIVE, 1>(L, ws, wait);
  if (m > 8 && m <= 16 && bulk_fits<BITS, kWpt2, 2>(L))
    return launch_bulk<BITS, kWpt2, T, NAIVE, 2>(L, ws, wait);
  if constexpr (BITS == 4) {
    // Where units of 8 steps (512 rows of K) do not divide K but units of 4 do (K = 11008, for
    // one), two and four token tiles take units of 4: against the per-lane form, 1.6-2.8x (M 9-16)
    // and 3.0-4.2x (M 24-32) on the H200 at 4096x11008 and 8192x11008; against the form of eight
    // token tiles (units of 4 steps already) 1.3-1.6x (notes/performance.md, g26).
    if (m > 8 && m <= 16 && bulk_fits<BITS, kWpt2, 2, 4>(L))
      return launch_bulk<BITS, kWpt2, T, NAIVE, 2, 4>(L, ws, wait);
    if (m > 16 && m <= 32 && bulk_fits<BITS, kWpt2, 4>(L))
      return launch_bulk<BITS, kWpt2, T, NAIVE, 4>(L, ws, wait);
    if (m > 16 && m <= 32 && bulk_fits<BITS, kWpt2, 4, 4>(L))
      return launch_bulk<BITS, kWpt2, T, NAIVE, 4, 4>(L, ws, wait);
    if (m > 32 && m <= 64 && bulk_fits<BITS, kWpt2, 8>(L))
      return launch_bulk<BITS, kWpt2, T, NAIVE, 8>(L, ws, wait);
    // More rows: passes of 64 (the last one what is left) through the forms above, one after
    // another on the stream, each leaving the workspace zero for the next. Each pass reads the
    // weights once, where the slice form reads them once per 32 rows.
    GemvLaunch pass = L;
    pass.p.m = 64;
    if (m > 64 && bulk_fits<BITS, kWpt2, 8>(pass)) {
      for (int64_t row = 0; row < m; row += 64) {
        pass.p.m = std::min<int64_t>(64, m - row);
        pass.p.x = L.p.x + row * L.w.k;
        pass.y = L.y + row * L.w.n;
        if (std::string e = launch_ft_nt<BITS, WPT, T, NAIVE>(pass, ws, wait && row + 64 >= m); !e.empty())
          return e;
      }
      return {};
    }
  }
  if (m <= 8) return launch_ft<BITS, WPT, T, NAIVE, 1>(L, ws, wait);
  if (m <= 16) return launch_ft<BITS, WPT, T, NAIVE, 2>(L, ws, wait);
  return launch_ft<BITS, WPT, T, NAIVE, 4>(L, ws, wait);
}

template <int BITS, int WPT, bool NAIVE>
std::string launch_ft_t(const GemvLaunch& L, const Workspace& ws, bool wait) {
  return L.p.dtype == OutType::F16 ? launch_ft_nt<BITS, WPT, OutType::F16, NAIVE>(L, ws, wait)
                                   : launch_ft_nt<BITS, WPT, OutType::BF16, NAIVE>(L, ws, wait);
}

// ---- the wide GEMM: many rows of X --------------------------------------------------------------
//
// From 65 or 129 rows of int4 (gemv::wide_takes) the GEMV forms above would read the weights once per 64 rows
// and their 64-channel tiles read X once per 64 channels. Here a block of 8 warps owns BM rows of X (64 or
// 128) by 128 channels for a run of K, so a weight dequantized once serves BM rows and a row of X staged once
// serves 128 channels. The roles turn: X is the A operand of mma.m16n8k16 (rows are tokens, read from shared
// memory by ldmatrix) and the weights the B operand. The mixed-GEMM layout makes that free: in a channel's
// 64-row tile lane r takes words r and 4 + r, and their pairs in element order are, one after another, the B
// registers of lane r in the tile's four k16 chunks with k in natural order (word 4h + r, pair p holds k =
// 32h + 2r + 8p and 32h + 2r + 8p + 1), so X is staged as it lies. Warp (wm, wn) = (warp / 4, warp % 4) owns
// BM / 2 rows by 32 channels (4 tiles of 8). As in the forms above, a group's fp32 sums meet their scales
// once per output.
//
// A ring of kWideStages stages, filled by cp.async (16 bytes a copy, sm_80 and newer), holds per 64
// rows of K: X (BM rows of 128 bytes, the 16-byte pieces of row i at piece ^ (i % 8), so that
// ldmatrix's eight rows fall in distinct banks), the weights (128 channels of 32 bytes, the halves
// of channel c swapped where bit 2 of c is set: lanes g and g + 4 read distinct banks) and the
// scale row of the group. Where the tiles are fewer than the multiprocessors, K is cut into runs
// (the grid is tiles x parts, gemv::wide_runs) whose partial sums meet in the workspace.
constexpr int kWideWarps = 8;
constexpr int kWideChannels = static_cast<int>(gemv::kWideChannels);
constexpr int kWideStages = 4;

template <int BM>
struct WideShape {
  static constexpr int kXBytes = BM * 128;  // BM rows of 64 halves
  static constexpr int kWBytes = kWideChannels * 32;
  static constexpr int kSBytes = kWideChannels * 2;
  static constexpr int kStageBytes = kXBytes + kWBytes + kSBytes;
  static constexpr int kSmem = kWideStages * kStageBytes;
};

struct WideArgs : FtIo {
  int parts;  // runs of K a tile
};

template <OutType T, bool NAIVE, int BM>
__global__ void __launch_bounds__(kWideWarps * 32, BM == 64 ? 2 : 1) wide_kernel(WideArgs a) {
#if __CUDA_ARCH__ >= 800
  using S = WideShape<BM>;
  constexpr int MT = BM / 32;  // tiles of 16 rows a warp
  extern __shared__ __align__(128) unsigned char ring[];
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, r = lane % 4;
  const int wm = warp / 4, wn = warp % 4;
  const int64_t tiles_n = a.n / kWideChannels;
  const int part = static_cast<int>(blockIdx.x % a.parts);
  const int64_t tile = blockIdx.x / a.parts;
  const int64_t tok0 = (tile / tiles_n) * BM, ch0 = (tile % tiles_n) * kWideChannels;
  const int ktiles = static_cast<int>(a.k / 64);
  const int kt0 = ktiles * part / a.parts, count = ktiles * (part + 1) / a.parts - kt0;
  const int tpg = a.group / 64;  // 64-row tiles a group

  // What a thread copies of a stage (io::StageCopy), worked out once.
  constexpr int XN = BM * 8 / (kWideWarps * 32);
  const uint32_t ring_s = static_cast<uint32_t>(__cvta_generic_to_shared(ring));
  const io::StageCopy<XN> copy(a, tok0, ch0, S::kXBytes, tid);
  const auto load = [&](int stage, int kt) { copy(ring_s + stage * S::kStageBytes, kt); };
  // What a thread reads of a stage: A registers by ldmatrix (row lane % 16 of its 16-row tiles, piece
  // 2c + lane / 16 of chunk c, swizzled), its weight words and its scales.
  const uint32_t xoff = (wm * (BM / 2) + lane % 16) * 128;
  uint32_t pc[4];
#pragma unroll
  for (int c = 0; c < 4; ++c) pc[c] = (((2 * c) | (lane / 16)) ^ (lane % 8)) * 16;
  const int wsw = (g >> 2) & 1;
  const int woff0 = S::kXBytes + ((wn * 32 + g) * 8 + wsw * 4 + r) * 4;
  const int woff1 = S::kXBytes + ((wn * 32 + g) * 8 + (wsw ^ 1) * 4 + r) * 4;
  const int soff = S::kXBytes + S::kWBytes + wn * 64 + r * 4;

#pragma unroll
  for (int s = 0; s < kWideStages - 1; ++s) {
    if (s < count) load(s, kt0 + s);
    cp_async_commit();
  }
  float acc[MT][4][4] = {};
  float grp[MT][4][4] = {};
  int in_group = kt0 % tpg;  // 64-row tiles of the current group already added
  for (int i = 0; i < count; ++i) {
    cp_async_wait<kWideStages - 2>();
    __syncthreads();  // stage i has landed for every thread; every warp is done with stage i - 1
    if (i + kWideStages - 1 < count) load((i + kWideStages - 1) % kWideStages, kt0 + i + kWideStages - 1);
    cp_async_commit();
    const int stage_off = (i % kWideStages) * S::kStageBytes;
    const unsigned char* st = ring + stage_off;
    uint32_t words[4][2];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      words[j][0] = *reinterpret_cast<const uint32_t*>(st + woff0 + 256 * j);
      words[j][1] = *reinterpret_cast<const uint32_t*>(st + woff1 + 256 * j);
    }
    // The A registers of chunk c + 1 are read while chunk c's products issue.
    const auto read_x = [&](uint32_t(&af)[MT][4], int c) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) ldmatrix_x4(af[mt], ring_s + stage_off + xoff + 2048 * mt + pc[c]);
    };
    uint32_t af[2][MT][4];
    read_x(af[0], 0);
    uint32_t b[4][4];
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      if (c + 1 < 4) read_x(af[(c + 1) % 2], c + 1);
      if (c % 2 == 0) {
#pragma unroll
        for (int j = 0; j < 4; ++j) gemv::ft_word_pairs<NAIVE>(4, T, words[j][c / 2], b[j]);
      }
      const int cc = c % 2;
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const uint32_t(&x)[4] = af[c % 2][mt];
          wide_mma<T>(grp[mt][j], x[0], x[1], x[2], x[3], b[j][2 * cc], b[j][2 * cc + 1]);
        }
      }
    }
    if (++in_group == tpg || i == count - 1) {
      in_group = 0;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const uint32_t s = *reinterpret_cast<const uint32_t*>(st + soff + 16 * j);  // channels 8j + 2r, + 1
        const float f0 = quant::half_to_f32(bits::lo16(s));
        const float f1 = quant::half_to_f32(bits::hi16(s));
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          acc[mt][j][0] = fmaf(f0, grp[mt][j][0], acc[mt][j][0]);
          acc[mt][j][1] = fmaf(f1, grp[mt][j][1], acc[mt][j][1]);
          acc[mt][j][2] = fmaf(f0, grp[mt][j][2], acc[mt][j][2]);
          acc[mt][j][3] = fmaf(f1, grp[mt][j][3], acc[mt][j][3]);
#pragma unroll
          for (int e = 0; e < 4; ++e) grp[mt][j][e] = 0.0f;
        }
      }
    }
  }
  cp_async_wait<0>();
  const int64_t tok_w = tok0 + wm * (BM / 2) + g, ch_w = ch0 + wn * 32 + 2 * r;
  const auto at = [&](int mt, int j, int e) {
    return (tok_w + 16 * mt + 8 * (e / 2)) * a.n + ch_w + 8 * j + e % 2;
  };
  const auto live = [&](int mt, int e) { return tok_w + 16 * mt + 8 * (e / 2) < a.m; };
  if (a.parts > 1) {
    // Every run adds its sums into the [M, N] workspace; the last of a tile's runs to arrive writes
    // the outputs.
    const auto val = [&](int i) -> float& { return acc[i / 16][(i / 4) % 4][i % 4]; };
    const auto idx = [&](int i) { return at(i / 16, (i / 4) % 4, i % 4); };
    const auto row = [&](int i) { return live(i / 16, i % 4); };
    if (!meet_runs<MT * 16>(val, idx, row, a.sums, a.counters + tile, a.parts)) return;
  }
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        write_out<T>(a.out, tok_w + 16 * mt + 8 * (e / 2), ch_w + 8 * j + e % 2, acc[mt][j][e]);
#else
  __trap();  // cp.async and ldmatrix need sm_80; the launcher refuses before this
#endif
}

// The wide GEMM applies to int4 on compute capability 8.0 and newer, with whole 128-channel tiles
// and groups of whole 64-row tiles.
bool wide_fits(const GemvLaunch& L) {
  return L.cc >= 80 && L.w.scheme == quant::Scheme::Int4Sym && gemv::wide_shape_fits(L.w.n, L.w.k, L.w.group);
}

template <OutType T, bool NAIVE, int BM>
std::string launch_wide_bm(const GemvLaunch& L, const Workspace& ws, bool wait) {
  using S = WideShape<BM>;
  static std::once_flag raised;
  std::call_once(raised, [] {
    cudaFuncSetAttribute(wide_kernel<T, NAIVE, BM>, cudaFuncAttributeMaxDynamicSharedMemorySize, S::kSmem);
  });
  WideArgs a{ft_io(L, ws), 1};
  const int64_t tiles = (a.m + BM - 1) / BM * (a.n / kWideChannels);
  a.parts = static_cast<int>(gemv::wide_runs(tiles, a.k / 64, L.sms));
  run_kernel(wide_kernel<T, NAIVE, BM>, static_cast<unsigned>(tiles * a.parts), kWideWarps * 32, S::kSmem, a);
  return status("the wide GEMM kernel", wait);
}

// Blocks of 64 rows (two a multiprocessor): against blocks of 128 (one), 0.93-1.32x on the shapes above
// at 128 and 256 rows, slower at 256 rows of 8192x8192 (0.93x) and 128 of 28672x8192 (0.95x)
// (notes/performance.md, w1). The kernel takes 128-row blocks too; none are launched.
template <bool NAIVE>
std::string launch_wide(const GemvLaunch& L, const Workspace& ws, bool wait) {
  constexpr int kRows = static_cast<int>(gemv::kWideRows);
  return L.p.dtype == OutType::F16 ? launch_wide_bm<OutType::F16, NAIVE, kRows>(L, ws, wait)
                                   : launch_wide_bm<OutType::BF16, NAIVE, kRows>(L, ws, wait);
}

// int4 takes steps of 4 words a lane where the group allows (a multiple of 128), else of 2. Up to
// 8 rows, where the copy-engine form of 4-word steps does not fit but that of 2-word steps does
// (K a multiple of 256, their units, but not of 512, the 4-word ones': K = 11008, for one), the
// 2-word steps: the per-lane form those shapes fell to was 1.37-2.09x slower (H200, 4096x11008
// and 8192x11008 at M = 1 to 8; notes/performance.md, g25). From 9 rows int4 takes 2-word steps
// whatever the group, in units of 256 rows of K where 512 do not divide it (launch_ft_nt).
template <bool NAIVE>
std::string launch_ft_any(const GemvLaunch& L, const Workspace& ws, bool wait) {
#if DQL_HOPPER_GEMM
  if (wide_fits(L) && L.cc == 90 && gemv::hopper_takes(L.p.m, L.w.n, L.w.k)) {
    // Where the copy engine's maps cannot be made (no encoder in the driver; gemv_run has refused
    // operands that are not 16-byte aligned), the mma.sync GEMM.
    if (auto e = io::launch_hopper_gemm(ft_io(L, ws), L.p.dtype, NAIVE, L.sms, L.rows, wait)) return *e;
  }
#endif
  if (wide_fits(L) && gemv::wide_takes(L.p.m, L.w.n, L.sms)) return launch_wide<NAIVE>(L, ws, wait);
  if (L.w.scheme == quant::Scheme::Int8Sym) return launch_ft_t<8, 4, NAIVE>(L, ws, wait);
  const bool only_two_words_fit = L.p.m <= 8 && !bulk_fits<4, 4, 1>(L) && bulk_fits<4, 2, 1>(L);
  if (L.w.group % 128 == 0 && !only_two_words_fit) return launch_ft_t<4, 4, NAIVE>(L, ws, wait);
  return launch_ft_t<4, 2, NAIVE>(L, ws, wait);
}

// ---- the online int8 path ----------------------------------------------------------------------
//
// First every (token, K block) of X becomes int8 codes with a scale and an offset (one warp per
// block), then an int8 x int8 -> int32 tensor-core product per block (mma.m16n8k32), each block's
// integer sum turned to fp32 with the block's parameters:
//   sum_k a_k w_k ~= sA sB (sum_k qa_k qw_k) + oA sB (sum_k qw_k)
// The weight sums come from dp4a on the same words. K is cut into slices of whole blocks by a rule of
// the shape alone (gemv::online_slices): each slice's warps sum their blocks in K order, and where
// there are several slices their sums wait in the workspace ([slices, M, N] floats) for a second
// kernel that adds them in slice order and writes the outputs. The CPU twin adds the same sums in the
// same order: the two agree bit for bit on every device. Before the slices a warp walked all of K:
// 512 warps at 8192x28672 (four a multiprocessor) read 32% of the copy's rate.

struct ActQuantArgs {
  const uint16_t* x;
  int64_t m, k;
  int group;
  OutType t;
  int8_t* aq;
  gemv::ActBlock* ab;
};

__global__ void act_quant_kernel(ActQuantArgs a) {
#ifdef DQL_BULK_COPY
  // The product kernel may be scheduled now (launched as this kernel's programmatic dependent on
  // compute capability 9.0; it waits for these codes at griddepcontrol.wait).
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  const int64_t blocks = a.k / a.group;
  const int64_t item = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (item >= a.m * blocks) return;
  const int64_t base = (item / blocks) * a.k + (item % blocks) * a.group;
  const int per = a.group / 32;  // 2 or 4
  float v[4];
  float lo = 3.4e38f, hi = -3.4e38f;
  for (int i = 0; i < per; ++i) {
    v[i] = gemv::act_to_f32(a.x[base + lane * per + i], a.t);
    lo = fminf(lo, v[i]);
    hi = fmaxf(hi, v[i]);
  }
  for (int o = 16; o > 0; o /= 2) {
    lo = fminf(lo, __shfl_xor_sync(0xFFFFFFFFu, lo, o));
    hi = fmaxf(hi, __shfl_xor_sync(0xFFFFFFFFu, hi, o));
  }
  const gemv::ActBlock b = gemv::act_block_params(lo, hi);
  for (int i = 0; i < per; ++i) a.aq[base + lane * per + i] = static_cast<int8_t>(gemv::act_code(v[i], b));
  if (lane == 0) a.ab[item] = b;
}

struct OnlineArgs {
  const uint32_t* q;       // plain int8 [N, K]
  const uint16_t* scales;  // [N, K / G]
  const int8_t* aq;        // [M, K]
  const gemv::ActBlock* ab;
  int64_t n, k, m;
  Out out;
  int slices;    // gemv::online_slices: blockIdx.y is the slice
  float* parts;  // [slices, M, N] where slices > 1
};

// WPT words (4 int8 each) per lane and channel per step: G = 16 WPT. Two token tiles ask 5 blocks a
// multiprocessor (up to 96 registers) and load the next block's scales with its words: against 6 blocks of
// 80 registers without them, 1.00-1.07x at one row and 1.10-1.38x at 16 rows on five shapes (H200;
// notes/performance.md, seventy-eighth session, "ONX").
template <int WPT, OutType T, int NT>
__global__ void __launch_bounds__(kWarps * 32, NT == 1 ? 8 : 5) online_kernel(OnlineArgs a) {
  constexpr int G = 16 * WPT;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, r = lane % 4;
  const int64_t ch0 = (static_cast<int64_t>(blockIdx.x) * kWarps + warp) * 16 + g, ch1 = ch0 + 8;
  // A warp wholly past N leaves; where N is not a multiple of 16, the lanes' channels past N read
  // channel 0's row and scales (the warp's products and shuffles need every lane) and write nothing.
  if (ch0 - g >= a.n) return;
  const int64_t r0 = ch0 < a.n ? ch0 : 0, r1 = ch1 < a.n ? ch1 : 0;
  // All M rows of X in the block's NT token tiles (blockIdx.y is the slice of K).
  const int64_t tok_b = g, tok_c = 2 * r;
  const int64_t blocks = a.k / G;
  const int64_t b_end = gemv::online_slice_first(blockIdx.y + 1, a.slices, blocks);
  const uint32_t* row0 = a.q + r0 * a.k / 4;
  const uint32_t* row1 = a.q + r1 * a.k / 4;
  float acc[NT][4] = {};
  // A block's weight words and their two scales: asked for before the activations are waited for, and
  // each next block's as soon as this block's products and sums have read them.
  uint32_t wa[WPT], wb[WPT];
  const auto load_w = [&](int64_t b) {
    const int64_t w = b * G / 4 + r * WPT;
#pragma unroll
    for (int i = 0; i < WPT; i += 4) {
      const uint4 t0 = __ldcs(reinterpret_cast<const uint4*>(row0 + w + i));
      const uint4 t1 = __ldcs(reinterpret_cast<const uint4*>(row1 + w + i));
      wa[i] = t0.x, wa[i + 1] = t0.y, wa[i + 2] = t0.z, wa[i + 3] = t0.w;
      wb[i] = t1.x, wb[i + 1] = t1.y, wb[i + 2] = t1.z, wb[i + 3] = t1.w;
    }
  };
  uint16_t sw0 = 0, sw1 = 0;
  const auto load_s = [&](int64_t b) {
    sw0 = __ldg(a.scales + r0 * blocks + b);
    sw1 = __ldg(a.scales + r1 * blocks + b);
  };
  const int64_t b_first = gemv::online_slice_first(blockIdx.y, a.slices, blocks);
  load_w(b_first);
  load_s(b_first);
#ifdef DQL_BULK_COPY
  // On compute capability 9.0 this kernel is the programmatic dependent of the activations' kernel
  // (wait: its codes and parameters are written) and the settling kernel this kernel's.
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  for (int64_t b = b_first; b < b_end; ++b) {
    uint32_t xa[NT][WPT];
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      const int64_t tok = tok_b + 8 * t;
#pragma unroll
      for (int i = 0; i < WPT; i += 4) {
        const uint4 x =
            tok < a.m
                ? __ldg(reinterpret_cast<const uint4*>(a.aq + tok * a.k) + (b * G / 16 + r * WPT / 4 + i / 4))
                : make_uint4(0u, 0u, 0u, 0u);
        xa[t][i] = x.x, xa[t][i + 1] = x.y, xa[t][i + 2] = x.z, xa[t][i + 3] = x.w;
      }
    }
    int c[NT][4] = {};
#pragma unroll
    for (int j = 0; j < WPT / 2; ++j) {
#pragma unroll
      for (int t = 0; t < NT; ++t) {
        mma_16832_s8(c[t], wa[2 * j], wb[2 * j], wa[2 * j + 1], wb[2 * j + 1], xa[t][2 * j],
                     xa[t][2 * j + 1]);
      }
    }
    int s0 = 0, s1 = 0;
#pragma unroll
    for (int i = 0; i < WPT; ++i) {
      s0 = __dp4a(static_cast<int>(wa[i]), 0x01010101, s0);
      s1 = __dp4a(static_cast<int>(wb[i]), 0x01010101, s1);
    }
    const float sb0 = quant::half_to_f32(sw0), sb1 = quant::half_to_f32(sw1);
    if (b + 1 < b_end) {
      load_w(b + 1);
      load_s(b + 1);
    }
    for (int o = 1; o < 4; o *= 2) {
      s0 += __shfl_xor_sync(0xFFFFFFFFu, s0, o);
      s1 += __shfl_xor_sync(0xFFFFFFFFu, s1, o);
    }
    // The lane's two tokens' activation parameters of the block, each tile's.
    gemv::ActBlock abt[NT][2];
#pragma unroll
    for (int t = 0; t < NT; ++t) {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int64_t tok = tok_c + 8 * t + i;
        abt[t][i] = tok < a.m ? a.ab[tok * blocks + b] : gemv::ActBlock{0.0f, 0.0f};
      }
    }
#pragma unroll
    for (int t = 0; t < NT; ++t) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const gemv::ActBlock ab = abt[t][i & 1];
        const float sb = i < 2 ? sb0 : sb1;
        const int bs = i < 2 ? s0 : s1;
        const float t1 = __fmul_rn(__fmul_rn(ab.scale, sb), static_cast<float>(c[t][i]));
        const float t2 = __fmul_rn(__fmul_rn(ab.offset, sb), static_cast<float>(bs));
        acc[t][i] = __fadd_rn(acc[t][i], __fadd_rn(t1, t2));
      }
    }
  }
  if (a.slices == 1) {
    lane_outputs<NT>(tok_c, ch0, ch1, acc, [&](int64_t tok, int64_t ch, float v) {
      if (ch < a.n) write_out<T>(a.out, tok, ch, v);
    });
  } else {
    float* const part = a.parts + int64_t{blockIdx.y} * a.m * a.n;
    lane_outputs<NT>(tok_c, ch0, ch1, acc, [&](int64_t tok, int64_t ch, float v) {
      if (tok < a.m && ch < a.n) part[tok * a.n + ch] = v;
    });
  }
}

// The slices' sums of one output added in slice order, then its bias, activation and rounding.
template <OutType T>
__global__ void online_settle_kernel(const float* parts, int slices, Out o) {
#ifdef DQL_BULK_COPY
  asm volatile("griddepcontrol.wait;" ::: "memory");  // the product's sums are written
#endif
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x, count = o.m * o.n;
  if (i >= count) return;
  float v = parts[i];
  for (int s = 1; s < slices; ++s) v = __fadd_rn(v, parts[s * count + i]);
  write_out<T>(o, i / o.n, i % o.n, v);
}

template <int WPT, OutType T>
std::string launch_online_t(const GemvLaunch& L, const Workspace& ws, bool wait) {
  const Out o{L.y, L.p.bias, L.p.epi, L.p.m, L.w.n};
  const int slices = static_cast<int>(gemv::online_slices(L.w.n, L.w.k, L.w.group));
  OnlineArgs a{L.w.q, L.w.scales, ws.aq, ws.ab, L.w.n, L.w.k, L.p.m, o, slices, ws.parts};
  const unsigned gx = static_cast<unsigned>((L.w.n + 16 * kWarps - 1) / (16 * kWarps));
  // On compute capability 9.0 the product is the activations' kernel's programmatic dependent and the
  // settling kernel the product's: each is scheduled while the one before it runs.
  // The kernels wait for the one before them (griddepcontrol.wait) only where compiled for compute
  // capability 9.0 and up: a build without that code, run on such a device, launches them one after another
  // (as dependents they would read the activations before they are written).
  static const bool waits = [] {
    cudaFuncAttributes fa{};
    return cudaFuncGetAttributes(&fa, online_kernel<WPT, T, 1>) == cudaSuccess && fa.ptxVersion >= 90;
  }();
  const bool dependent = L.cc >= 90 && waits;
  DependentLaunch d(gx, kWarps * 32, 0, dependent);
  d.cfg.gridDim = dim3(gx, static_cast<unsigned>(slices));
  const cudaError_t e = L.p.m <= 8 ? run_kernel_ex(d.cfg, online_kernel<WPT, T, 1>, a)
                                   : run_kernel_ex(d.cfg, online_kernel<WPT, T, 2>, a);
  if (e != cudaSuccess)
    return std::string("the online int8 GEMV kernel failed on the GPU: ") + cudaGetErrorString(e);
  if (slices == 1) return status("the online int8 GEMV kernel", wait);
  if (std::string err = status("the online int8 GEMV kernel", false); !err.empty()) return err;
  DependentLaunch s((o.m * o.n + 255) / 256, 256, 0, dependent);
  if (const cudaError_t f =
          run_kernel_ex(s.cfg, online_settle_kernel<T>, static_cast<const float*>(ws.parts), slices, o);
      f != cudaSuccess)
    return std::string("the online int8 GEMV's slice sums failed on the GPU: ") + cudaGetErrorString(f);
  return status("the online int8 GEMV's slice sums", wait);
}

std::string launch_online(const GemvLaunch& L, const Workspace& ws, bool wait) {
  const ActQuantArgs q{L.p.x, L.p.m, L.w.k, L.w.group, L.p.dtype, ws.aq, ws.ab};
  const int64_t warps = L.p.m * (L.w.k / L.w.group);
  run_kernel(act_quant_kernel, static_cast<unsigned>((warps * 32 + 255) / 256), 256, 0, q);
  std::string e = status("activation quantization", false);
  if (!e.empty()) return e;
  const bool f16 = L.p.dtype == OutType::F16;
  if (L.w.group == 128)
    return f16 ? launch_online_t<8, OutType::F16>(L, ws, wait)
               : launch_online_t<8, OutType::BF16>(L, ws, wait);
  return f16 ? launch_online_t<4, OutType::F16>(L, ws, wait) : launch_online_t<4, OutType::BF16>(L, ws, wait);
}

// ---- AWQ format ----------------------------------------------------------------------------------
//
// On CUDA cores, for groups the tensor-core form below does not take (a multiple of 64 it needs):
// qweight [K, N / 8]: a thread owns one word column (8 channels), consecutive threads consecutive
// columns, so each row of K is one contiguous read per warp. Blocks split K into slices of whole
// groups; slices meet in the workspace (finish_tile). TOK tokens per pass (grid.z): 1 for a
// single row of X (fewer registers, more warps a multiprocessor), else 4.
constexpr int kAwqThreads = 128;
constexpr int kAwqRows = 16;  // rows of K whose words a thread loads together

struct AwqArgs {
  const uint32_t* q;
  const uint16_t* scales;  // [K / G, N]
  const uint32_t* zeros;   // [K / G, N / 8]
  const uint16_t* x;
  int64_t n, k, m;
  int group, groups_per_slice, slices;
  Out out;
  float* sums;
  unsigned* counters;
};

template <int TOK>
__global__ void __launch_bounds__(kAwqThreads) awq_kernel(AwqArgs a) {
  const int64_t cols = a.n / 8;
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kAwqThreads + threadIdx.x;
  const bool live = c < cols;
  const int64_t tok0 = static_cast<int64_t>(blockIdx.z) * TOK;
  const int64_t g_begin = static_cast<int64_t>(blockIdx.y) * a.groups_per_slice;
  const int64_t g_end = min(a.k / a.group, g_begin + a.groups_per_slice);
  float acc[TOK][8] = {};
  for (int64_t gi = g_begin; gi < g_end && live; ++gi) {
    uint32_t z[4];
    const uint32_t zin[2] = {__ldg(a.zeros + gi * cols + c), 0u};
    recipes::run_plain(recipes::RecipeId::AwqInt4F16, zin, z);
    float part[TOK][8] = {};
    // Row kk of the group, its word already loaded: the 8 products of every token.
    const auto row = [&](int64_t kk, uint32_t word) {
      const uint32_t in[2] = {word, 0u};
      uint32_t h[4];
      recipes::run_plain(recipes::RecipeId::AwqInt4F16, in, h);
      float wv[8];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const uint32_t d = bits::sub_f16x2(h[i], z[i]);  // q - zero, exact
        const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&d));
        wv[2 * i] = f.x, wv[2 * i + 1] = f.y;
      }
#pragma unroll
      for (int t = 0; t < TOK; ++t) {
        if (tok0 + t >= a.m) break;
        const float xv = quant::half_to_f32(__ldg(a.x + (tok0 + t) * a.k + kk));
#pragma unroll
        for (int i = 0; i < 8; ++i) part[t][i] = fmaf(xv, wv[i], part[t][i]);
      }
    };
    // kAwqRows rows at a time with their loads issued together (one load in flight a thread left
    // the loop waiting on memory: notes/performance.md, g9); the sums keep the row order.
    const int64_t k_end = (gi + 1) * a.group;
    int64_t kk = gi * a.group;
    for (; kk + kAwqRows <= k_end; kk += kAwqRows) {
      uint32_t words[kAwqRows];
#pragma unroll
      for (int u = 0; u < kAwqRows; ++u) words[u] = __ldcs(a.q + (kk + u) * cols + c);
#pragma unroll
      for (int u = 0; u < kAwqRows; ++u) row(kk + u, words[u]);
    }
    for (; kk < k_end; ++kk) row(kk, __ldcs(a.q + kk * cols + c));
    const uint4 s = __ldg(reinterpret_cast<const uint4*>(a.scales + gi * a.n + 8 * c));
    const uint32_t sw[4] = {s.x, s.y, s.z, s.w};
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const float sc = quant::half_to_f32((i % 2) ? bits::hi16(sw[i / 2]) : bits::lo16(sw[i / 2]));
#pragma unroll
      for (int t = 0; t < TOK; ++t) acc[t][i] = fmaf(sc, part[t][i], acc[t][i]);
    }
  }
  const int64_t seg = static_cast<int64_t>(blockIdx.z) * gridDim.x + blockIdx.x;
  finish_tile<OutType::F16>(a.out, a.sums, a.counters + seg, 1, a.slices, [&](auto&& fn) {
    if (!live) return;
#pragma unroll
    for (int t = 0; t < TOK; ++t) {
#pragma unroll
      for (int i = 0; i < 8; ++i) fn(tok0 + t, 8 * c + i, acc[t][i]);
    }
  });
}

// The tensor-core forms (any M up to 16). A warp owns 8 word columns (64 channels) and a
// block 4 warps (256 channels); blocks split K into slices of whole groups as above. Per 16 k,
// lane (g, r) = (lane / 4, lane % 4) loads the words of rows k0 + 4r .. k0 + 4r + 3 of column
// g: four rows by 8 channels. The word conversion gives half2 pairs (channel 2j, 2j + 1) of one
// row; PRMT regroups two rows of one channel into an A register, so that mma tile j takes
// channel 8c + 2j as its row g and 8c + 2j + 1 as row g + 8, and the k slots 2r, 2r + 1, 2r + 8,
// 2r + 9 hold rows k0 + 4r .. k0 + 4r + 3 (the sum over k does not care which slot holds which
// row, as long as X supplies the same: one 8-byte load of X per token tile). q - zero is exact
// in fp16; a group's sums meet their scales once, in fp32, as in the twin.
constexpr int kAwqMmaWarps = 4;
constexpr int kAwqMmaCols = 8 * kAwqMmaWarps;  // word columns a block
// Steps of 16 k whose loads a lane issues together. Loading the next batch while this one
// multiplies (168 registers with two token tiles) was faster at some shapes and slower at others
// (notes/performance.md, g12); 8 steps at once (168 registers) was slower.
constexpr int kAwqMmaSteps = 4;

// The tensor-core AWQ kernels' finish: lane (g, r) of word column c holds, in acc[j][t], tokens
// 8 t + 2 r and 8 t + 2 r + 1 of channels 8 c + 2 j and 8 c + 2 j + 1.
template <int NT>
__device__ __forceinline__ void awq_finish(const AwqArgs& a, const float (&acc)[4][NT][4], bool live, int r,
                                           int64_t c) {
  finish_pairs(a.out, a.sums, a.counters + blockIdx.x, a.slices, [&](auto&& fn) {
    if (!live) return;
#pragma unroll
    for (int j = 0; j < 4; ++j) lane_pairs<NT>(2 * r, 8 * c + 2 * j, 8 * c + 2 * j + 1, acc[j], fn);
  });
}

template <int NT>
__global__ void __launch_bounds__(kAwqMmaWarps * 32) awq_mma_kernel(AwqArgs a) {
  constexpr int SB = kAwqMmaSteps;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, r = lane % 4;
  const int64_t cols = a.n / 8;
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kAwqMmaCols + warp * 8 + g;
  const bool live = c < cols;
  const int64_t g_begin = static_cast<int64_t>(blockIdx.y) * a.groups_per_slice;
  const int64_t g_end = min(a.k / a.group, g_begin + a.groups_per_slice);
  const int per_group = a.group / (16 * SB);  // batches of SB steps of 16 k a group (the launcher: whole)
  const int nb = static_cast<int>(g_end - g_begin) * per_group;
  // The lane's X rows: token g + 8 t, from k0 + 4r (tokens past M read zeros).
  const uint16_t* xrow[NT];
  bool xlive[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    xlive[t] = g + 8 * t < a.m;
    xrow[t] = a.x + (xlive[t] ? (g + 8 * t) * a.k : 0) + 4 * r;
  }
  // Batch b: the words of SB steps, their loads issued together.
  const auto load = [&](int b, uint32_t(&w)[SB][4]) {
    const int64_t k0 = g_begin * a.group + int64_t{b} * 16 * SB;
#pragma unroll
    for (int s = 0; s < SB; ++s) {
#pragma unroll
      for (int u = 0; u < 4; ++u) w[s][u] = live ? __ldcs(a.q + (k0 + 16 * s + 4 * r + u) * cols + c) : 0u;
    }
  };
  const auto zero_word = [&](int64_t gi) { return live ? __ldg(a.zeros + gi * cols + c) : 0u; };
  uint32_t cur[SB][4];
  load(0, cur);
  uint32_t zraw = zero_word(g_begin);
  uint32_t z[4] = {};
  uint4 sv = make_uint4(0u, 0u, 0u, 0u);
  float acc[4][NT][4] = {}, grp[4][NT][4] = {};
  for (int b = 0; b < nb; ++b) {
    const int bi = b % per_group;
    const int64_t gi = g_begin + b / per_group;
    const bool group_end = bi == per_group - 1;
    if (bi == 0) {
      const uint32_t zin[2] = {zraw, 0u};
      recipes::run_plain(recipes::RecipeId::AwqInt4F16, zin, z);
      // The group's scales, used at its end.
      if (live) sv = __ldg(reinterpret_cast<const uint4*>(a.scales + gi * a.n + 8 * c));
    }
    const int64_t k0 = g_begin * a.group + int64_t{b} * 16 * SB;
#pragma unroll
    for (int s = 0; s < SB; ++s) {
      uint2 xv[NT];
#pragma unroll
      for (int t = 0; t < NT; ++t) {
        xv[t] = xlive[t] ? __ldg(reinterpret_cast<const uint2*>(xrow[t] + k0 + 16 * s)) : make_uint2(0u, 0u);
      }
      uint32_t h[4][4];  // [row u][channel pair j]
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const uint32_t in[2] = {cur[s][u], 0u};
        recipes::run_plain(recipes::RecipeId::AwqInt4F16, in, h[u]);
#pragma unroll
        for (int j = 0; j < 4; ++j) h[u][j] = bits::sub_f16x2(h[u][j], z[j]);  // q - zero, exact
      }
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const uint32_t a0 = __byte_perm(h[0][j], h[1][j], 0x5410), a1 = __byte_perm(h[0][j], h[1][j], 0x7632);
        const uint32_t a2 = __byte_perm(h[2][j], h[3][j], 0x5410), a3 = __byte_perm(h[2][j], h[3][j], 0x7632);
#pragma unroll
        for (int t = 0; t < NT; ++t) mma_16816<OutType::F16>(grp[j][t], a0, a1, a2, a3, xv[t].x, xv[t].y);
      }
    }
    if (group_end) {
      const uint32_t sw[4] = {sv.x, sv.y, sv.z, sv.w};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float s_lo = quant::half_to_f32(bits::lo16(sw[j])),
                    s_hi = quant::half_to_f32(bits::hi16(sw[j]));
#pragma unroll
        for (int t = 0; t < NT; ++t) {
          acc[j][t][0] = fmaf(s_lo, grp[j][t][0], acc[j][t][0]);
          acc[j][t][1] = fmaf(s_lo, grp[j][t][1], acc[j][t][1]);
          acc[j][t][2] = fmaf(s_hi, grp[j][t][2], acc[j][t][2]);
          acc[j][t][3] = fmaf(s_hi, grp[j][t][3], acc[j][t][3]);
#pragma unroll
          for (int e = 0; e < 4; ++e) grp[j][t][e] = 0.0f;
        }
      }
    }
    if (b + 1 < nb) {
      load(b + 1, cur);
      if (group_end) zraw = zero_word(gi + 1);
    }
  }
  awq_finish<NT>(a, acc, live, r, c);
}

// The tensor-core form with its words staged in shared memory (compute capability 8.0 and newer):
// each warp keeps a private ring of ST batches (SB steps of 16 rows of its 8 word columns, 32 bytes
// a row), filled by cp.async 16 bytes a copy, so that ST - 1 batches are in flight while the warp
// converts and multiplies one and no register holds a batch that has not arrived. Row
// 16 s + 4 r + u of a batch lies at slot 16 s + 4 u + r, so that the 4 rows one read instruction
// takes (r = 0..3) fall in distinct banks. Needs N a multiple of 32 (whole 16-byte pieces of a
// row). The products are those of awq_mma_kernel above, term for term; the two stay separate
// sources because shared helpers changed both kernels' SASS from the forms measured and tested
// (notes/performance.md, w1).
template <int NT, int ST>
__global__ void __launch_bounds__(kAwqMmaWarps * 32) awq_ring_kernel(AwqArgs a) {
#if __CUDA_ARCH__ >= 800
  constexpr int SB = kAwqMmaSteps;
  constexpr int kRows = 16 * SB;  // rows of K a batch
  // 128-byte aligned. With 16 bytes of alignment the compiler placed the ring 16 bytes into the
  // block's shared memory, after the finish's `last` flag, once a refactor renamed that flag
  // (858987e); the same instructions then ran 1.07-1.14x slower from 8192x8192 up at 1-16 rows on the
  // H200 (notes/performance.md, "the AWQ ring's alignment").
  __shared__ __align__(128) uint32_t ring[ST][kAwqMmaWarps][kRows * 8];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, r = lane % 4;
  const int64_t cols = a.n / 8;
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * kAwqMmaCols + warp * 8;
  const int64_t c = c0 + g;
  const bool live = c < cols;
  const int64_t g_begin = static_cast<int64_t>(blockIdx.y) * a.groups_per_slice;
  const int64_t g_end = min(a.k / a.group, g_begin + a.groups_per_slice);
  const int per_group = a.group / kRows;
  const int nb = static_cast<int>(g_end - g_begin) * per_group;
  const uint16_t* xrow[NT];
  bool xlive[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    xlive[t] = g + 8 * t < a.m;
    xrow[t] = a.x + (xlive[t] ? (g + 8 * t) * a.k : 0) + 4 * r;
  }
  // The lane's copies of a batch: row lane / 2 + 16 i, half lane % 2 of the warp's 32 bytes.
  const int crow = lane / 2, chalf = lane % 2;
  const int cslot = 4 * (crow % 4) + crow / 4;  // slot of row crow inside its step
  const bool cin = c0 + 4 * chalf < cols;
  const uint32_t* csrc = a.q + (cin ? c0 + 4 * chalf : 0);
  const uint32_t ring_s = static_cast<uint32_t>(__cvta_generic_to_shared(&ring[0][warp][0]));
  constexpr uint32_t kStageStride = kAwqMmaWarps * kRows * 8 * 4;
  const auto copy = [&](int stage, int b) {
    const int64_t k0 = g_begin * a.group + int64_t{b} * kRows;
#pragma unroll
    for (int i = 0; i < SB; ++i) {
      const uint32_t dst = ring_s + stage * kStageStride + ((16 * i + cslot) * 8 + 4 * chalf) * 4;
      cp_async16(dst, csrc + (k0 + 16 * i + crow) * cols, cin);
    }
  };
  const auto zero_word = [&](int64_t gi) { return live ? __ldg(a.zeros + gi * cols + c) : 0u; };
#pragma unroll
  for (int s = 0; s < ST - 1; ++s) {
    if (s < nb) copy(s, s);
    cp_async_commit();
  }
  uint32_t zraw = zero_word(g_begin);
  uint32_t z[4] = {};
  uint4 sv = make_uint4(0u, 0u, 0u, 0u);
  float acc[4][NT][4] = {}, grp[4][NT][4] = {};
  for (int b = 0; b < nb; ++b) {
    cp_async_wait<ST - 2>();
    __syncwarp();  // batch b has landed for every lane; every lane is done with batch b - 1
    if (b + ST - 1 < nb) copy((b + ST - 1) % ST, b + ST - 1);
    cp_async_commit();
    const uint32_t* st = &ring[b % ST][warp][0];
    const int bi = b % per_group;
    const int64_t gi = g_begin + b / per_group;
    const bool group_end = bi == per_group - 1;
    if (bi == 0) {
      const uint32_t zin[2] = {zraw, 0u};
      recipes::run_plain(recipes::RecipeId::AwqInt4F16, zin, z);
      if (live) sv = __ldg(reinterpret_cast<const uint4*>(a.scales + gi * a.n + 8 * c));
    }
    if (group_end && b + 1 < nb) zraw = zero_word(gi + 1);  // the next group's, early
    const int64_t k0 = g_begin * a.group + int64_t{b} * kRows;
#pragma unroll
    for (int s = 0; s < SB; ++s) {
      uint2 xv[NT];
#pragma unroll
      for (int t = 0; t < NT; ++t) {
        xv[t] = xlive[t] ? __ldg(reinterpret_cast<const uint2*>(xrow[t] + k0 + 16 * s)) : make_uint2(0u, 0u);
      }
      uint32_t h[4][4];  // [row u][channel pair j]
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const uint32_t in[2] = {st[(16 * s + 4 * u + r) * 8 + g], 0u};
        recipes::run_plain(recipes::RecipeId::AwqInt4F16, in, h[u]);
#pragma unroll
        for (int j = 0; j < 4; ++j) h[u][j] = bits::sub_f16x2(h[u][j], z[j]);  // q - zero, exact
      }
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const uint32_t a0 = __byte_perm(h[0][j], h[1][j], 0x5410), a1 = __byte_perm(h[0][j], h[1][j], 0x7632);
        const uint32_t a2 = __byte_perm(h[2][j], h[3][j], 0x5410), a3 = __byte_perm(h[2][j], h[3][j], 0x7632);
#pragma unroll
        for (int t = 0; t < NT; ++t) mma_16816<OutType::F16>(grp[j][t], a0, a1, a2, a3, xv[t].x, xv[t].y);
      }
    }
    if (group_end) {
      const uint32_t sw[4] = {sv.x, sv.y, sv.z, sv.w};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float s_lo = quant::half_to_f32(bits::lo16(sw[j])),
                    s_hi = quant::half_to_f32(bits::hi16(sw[j]));
#pragma unroll
        for (int t = 0; t < NT; ++t) {
          acc[j][t][0] = fmaf(s_lo, grp[j][t][0], acc[j][t][0]);
          acc[j][t][1] = fmaf(s_lo, grp[j][t][1], acc[j][t][1]);
          acc[j][t][2] = fmaf(s_hi, grp[j][t][2], acc[j][t][2]);
          acc[j][t][3] = fmaf(s_hi, grp[j][t][3], acc[j][t][3]);
#pragma unroll
          for (int e = 0; e < 4; ++e) grp[j][t][e] = 0.0f;
        }
      }
    }
  }
  cp_async_wait<0>();
  awq_finish<NT>(a, acc, live, r, c);
#else
  __trap();  // cp.async needs sm_80; the launcher takes awq_mma_kernel below it
#endif
}

// ---- AWQ at one to sixteen rows of X: plain loads, products on the tensor cores ------------------
//
// A warp owns 256 channels (32 word columns of qweight) and a run of steps of 16 rows of K. Lane (g, q) =
// (lane / 4, lane % 4) loads, each step, piece g of the warp's row (word columns 4g .. 4g + 3: 32 channels)
// at rows 4q .. 4q + 3 of the step, so that one load instruction reads 128 contiguous bytes of each of 4
// rows; the next step's loads are asked before this step's products (more in flight cost the registers
// that hold 16 warps a multiprocessor: notes/performance.md, sixty-ninth session). Each word goes through
// the recipe's masks (1024 + n for the low nibbles, 1024 + 16 n for the high ones) and loses its zero point
// at once: one HSUB2 (minus 1024 + z) or HFMA2 (times 1/16, minus 64 + z) a register gives n - z, exact in
// fp16, the value the twin multiplies. PRMT turns a register's channel pair of two rows into two rows of
// one channel, and m16n8k16 product i (word i / 4 of the piece, recipe register i % 4) takes that
// register's two channels as its rows g and g + 8 and the lane's four rows of K as its k slots 2q, 2q + 1,
// 2q + 8, 2q + 9. X is the B operand and stands only in column i % 8 (the lanes whose g is i % 8 hold it,
// the others zeros), so products i and i + 8 go to distinct accumulator sets and the 8 products of a set
// to distinct columns: the step's 16 products fill two sets, none wasted, and lane (g, q) holds 8 channels
// (columns 2q and 2q + 1 of rows g and g + 8: word column 4g + 2 set + q / 2, channels 4 (q % 2) .. + 3).
// A group's sums stay in the accumulators until its end, where they meet the group's scale once an output.
// A block of kAwqLaneWarps warps takes consecutive runs of one column of 256 channels and meets in shared
// memory; the rows of blocks of a column meet in the workspace (finish_tile). The grid:
// gemv::awq_lane_grid. Against the tensor-core ring below (8 word columns a warp, words through cp.async
// and shared memory, 7 of 8 B columns idle at one row), H200: 1.36x at 28672x8192 (63.5 -> 46.7 us),
// 1.38x at 8192x28672, 1.44x at 8192x8192 and 14336x4096, 1.52-1.65x at 4096x14336, 4096x4096, 2048x11008.
// Two to four rows of X share the same products (below: MT); the weights are read once whatever M. Against
// the ring at those rows, H200, alternated twice: two rows 1.40-1.64x (28672x8192 67 -> 47.6 us, 4096x4096
// 17.8 -> 10.8); three rows 1.30-1.60x and four 1.20-1.34x with the meeting's padded layout (two calls'
// ratios multiplied: 4096x4096 at four rows 17.2 -> 13.7 us; notes/performance.md, seventy-second session).
// Five to sixteen rows fill all 8 columns of a product, 8 accumulator sets a token tile of 8 at 256
// channels a warp: too many registers. The warp takes fewer channels instead (W words a lane a row: 8 bytes
// at five to eight rows, 128 channels a warp; 4 bytes and two token tiles at nine to sixteen, 64 channels),
// so a step still holds 32 accumulators a lane, and keeps more steps' loads in flight (D). Against the ring,
// H200, one call alternated twice (notes/performance.md, seventy-third session): five rows 1.29x at
// 8192x28672 to 1.96x at 4096x4096 (23.5 -> 12.0 us), eight rows 1.21x to 1.42x (28672x8192 70.4-73.0 ->
// 51.5), nine rows 1.22x to 2.3x, sixteen rows 1.33x at 8192x8192 (38.0 -> 28.3-28.6) and 1.63x at
// 4096x4096, level at 8192x28672 (77.2-77.3 against 77.0-77.1). At 28672x8192 sixteen rows read 0.87x (105
// against 91.5 us): its 448 columns of 64 channels need seven waves of blocks, each with its start and its
// meeting, so from nine rows the ring keeps N whose columns one wave does not hold (gemv::awq_lane_takes).
using gemv::kAwqLaneWarps;  // split.hpp's grid rule and this kernel share the block's warps

struct AwqLaneArgs {
  const uint32_t* q;
  const uint16_t* scales;  // [K / G, N]
  const uint32_t* zeros;   // [K / G, N / 8]
  const uint16_t* x;
  int64_t n, k;
  int group, steps_per_warp;
  Out out;  // out.m: the rows of X
  float* sums;
  unsigned* counters;
};

// A lane's W words of one row of the weights (W = 4, 2, 1), read once as load_piece reads 16 bytes.
template <int W>
using AwqLaneWords = std::conditional_t<W == 4, uint4, std::conditional_t<W == 2, uint2, uint32_t>>;
// The narrower forms' loads (a lane's 8 or 4 bytes of a row: 64 or 32 bytes a row a warp) ask the L2 for
// the whole 128-byte line: the neighbouring columns' blocks, running at the same time, read the rest
// (H200: 1.03-1.04x at 5-16 rows on the large shapes against plain loads; notes/performance.md,
// seventy-third session).
[[maybe_unused]] __device__ __forceinline__ uint2 load_piece(const uint2* p) {
  uint2 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::128B.v2.u32 {%0, %1}, [%2];"
               : "=r"(v.x), "=r"(v.y)
               : "l"(p));
  return v;
}
[[maybe_unused]] __device__ __forceinline__ uint32_t load_piece(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::128B.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}
[[maybe_unused]] __device__ __forceinline__ uint32_t word_of(const uint4& v, int w) {
  return w == 0 ? v.x : w == 1 ? v.y : w == 2 ? v.z : v.w;
}
[[maybe_unused]] __device__ __forceinline__ uint32_t word_of(const uint2& v, int w) {
  return w == 0 ? v.x : v.y;
}
[[maybe_unused]] __device__ __forceinline__ uint32_t word_of(uint32_t v, int) { return v; }

// MT rows of X a product: 1, 2 (M = 2) or 8; W words a lane a row of K (a warp 64 W channels); NT token
// tiles of 8 (MT = 8 only). The forms: <1, 4, 1>, <2, 4, 1> (one and two rows, 256 channels a warp),
// <8, 2, 1> (three to eight rows, 128 channels) and <8, 1, 2> (nine to sixteen, 64). Three and four rows
// took <4, 4, 1> (256 channels) until <8, 2, 1> measured 0.99-1.18x it there (H200; notes/performance.md,
// seventy-sixth session). With MT tokens, product i's X stands in columns MT (i % P) .. + MT - 1 (P = 8 /
// MT products a set, token t in the column's t-th place), so a token tile's 4 W products a step fill S =
// 4 W / P accumulator sets, and lane (g, q) holds X of token 8 tile + g % MT. Lane (g, q)'s element e of
// set s is then column 2q + e % 2 (product (s % S) P + (2q + e % 2) / MT, token 8 (s / S) + (2q + e % 2) %
// MT) of row g (e < 2: the register's low channel) or g + 8 (its high channel). Fewer channels a warp at
// more rows keep the accumulators at 32 a lane (8 sets) from three rows on.
template <int MT, int W, int NT>
__global__ void __launch_bounds__(kAwqLaneWarps * 32, 2) awq_lane_kernel(AwqLaneArgs a) {
#if __CUDA_ARCH__ >= 800
  static_assert(MT == 8 ? (W == 1 || W == 2) : ((MT == 1 || MT == 2) && W == 4 && NT == 1),
                "the forms named above");
  constexpr int P = 8 / MT, S = 4 * W / P, kSets = NT * S;
  // Steps whose loads are in flight: a step's loads are asked D - 1 steps ahead. Narrower words a lane
  // take more steps to keep as many bytes in flight: at 8 rows 3 steps against 2, 1.01-1.04x; at 16 rows
  // 4 against 2, 1.03-1.18x (H200; 3 at 16 rows 1.05-1.10x; notes/performance.md, seventy-third session).
  constexpr int D = W == 4 ? 2 : W == 2 ? 3 : 4;
  constexpr int kTokens = MT * NT, kChannels = 64 * W;  // what a block meets
  using Words = AwqLaneWords<W>;
  // Eight sets: the group-scaled sums wait in shared memory (the registers hold the accumulators), in the
  // warp's own part of `part`, [set, element][lane]. In registers they spilled 168 bytes a thread and
  // read 1.04-1.11x slower (at 3-4 rows on <4, 4, 1>, then; notes/performance.md, seventy-second session).
  constexpr bool kYShared = kSets >= 8;
  // Where (token t, channel ch of the block's) meets in a warp's part. At eight tokens a product the
  // lanes' tokens 2q (+ 1) fall 8 banks apart (a token's run of 4 more than a multiple of 16) and one
  // place is skipped after each lane's 8 W channels (its g to the bank's place), so that a warp's stores
  // of the meeting (one element of every lane at a time) do not fall on one bank.
  constexpr int kTokenRun = MT == 8 ? (kChannels + 8 * W - 4 + 15) / 16 * 16 + 4 : kChannels;
  const auto part_at = [](int t, int ch) {
    if constexpr (MT == 8) return t * kTokenRun + ch + ch / (8 * W);
    return t * kTokenRun + ch;
  };
  static_assert(!kYShared || kSets * 4 * 32 <= kTokens * kTokenRun, "a warp's sums fit its part");
  __shared__ float part[kAwqLaneWarps][kTokens * kTokenRun];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
  const int64_t cols = a.n / 8;
  const int64_t c0 = int64_t{blockIdx.x} * 8 * W;  // the block's first word column
  const int64_t s_begin = (int64_t{blockIdx.y} * kAwqLaneWarps + warp) * a.steps_per_warp;
  const int64_t s_end = min(a.k / 16, s_begin + a.steps_per_warp);
  const int count = s_begin < s_end ? static_cast<int>(s_end - s_begin) : 0;
  const int spg = a.group / 16;  // steps a group
  const Words* wp = reinterpret_cast<const Words*>(a.q + (s_begin * 16 + 4 * q) * cols + c0 + W * g);
  const int64_t rstride = cols / W;  // a lane's W words a row
  const uint16_t* xp[NT];
  bool xlive[NT];  // a token past M stands as zeros
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    const int xt = 8 * t + g % MT;  // the token of X this lane holds (B's column g of tile t)
    xlive[t] = xt < a.out.m;
    xp[t] = a.x + (xlive[t] ? xt : 0) * a.k + s_begin * 16 + 4 * q;
  }
  float acc[kSets][4] = {}, y[kYShared ? 1 : kSets][4] = {};
  float* const ys = part[warp];
  if constexpr (kYShared) {
#pragma unroll
    for (int j = 0; j < kSets * 4; ++j) ys[j * 32 + lane] = 0.0f;
  }
  uint32_t zc[W][4];  // the group's zero terms, [word][register]: 1024 + z (low nibbles), -(64 + z) (high)
  const int64_t groups = a.k / a.group;
  const auto zeros_in = [&](int64_t gi) {
    return gi < groups ? __ldg(reinterpret_cast<const Words*>(a.zeros + gi * cols + c0 + W * g)) : Words{};
  };
  const auto zeros_of = [&](const Words& z) {
#pragma unroll
    for (int w = 0; w < W; ++w) {
      const uint32_t zw = word_of(z, w), z8 = zw >> 8;
      zc[w][0] = bits::lop3<0xEA>(zw, 0x000F000Fu, 0x64006400u);
      zc[w][1] = bits::mul_f16x2(bits::lop3<0xEA>(zw, 0x00F000F0u, 0x64006400u), 0xAC00AC00u);  // x -1/16
      zc[w][2] = bits::lop3<0xEA>(z8, 0x000F000Fu, 0x64006400u);
      zc[w][3] = bits::mul_f16x2(bits::lop3<0xEA>(z8, 0x00F000F0u, 0x64006400u), 0xAC00AC00u);
    }
  };
  // The channel of element e of set `set` in lane (g, q), counted from the block's first (8 c0), and its
  // token.
  const auto channel_of = [&](int set, int e) {
    const int col = 2 * q + e % 2, i = (set % S) * P + col / MT, w = i / 4, r = i % 4;
    return 8 * (W * g + w) + 2 * r + e / 2;
  };
  const auto token_of = [&](int set, int e) { return 8 * (set / S) + (2 * q + e % 2) % MT; };
  // The lane's scales of group gi, and the group's sums times them. One row: two sets of 4 channels;
  // more: a pair of channels a set of a token tile (the register's low and high channel).
  using Scales = std::conditional_t<MT == 1, uint2[2], uint32_t[S]>;
  const auto scales_in = [&](int64_t gi, Scales& sv) {
    if constexpr (MT == 8) {  // product i = 4 w + r: channels 2r, 2r + 1 of word w, all 8 of each word
#pragma unroll
      for (int w = 0; w < W; ++w) {
        const uint4 v = __ldg(reinterpret_cast<const uint4*>(a.scales + gi * a.n + 8 * (c0 + W * g + w)));
        sv[4 * w] = v.x, sv[4 * w + 1] = v.y, sv[4 * w + 2] = v.z, sv[4 * w + 3] = v.w;
      }
    } else {
#pragma unroll
      for (int set = 0; set < (MT == 1 ? 2 : S); ++set) {
        if constexpr (MT == 1) {
          const int64_t ch = 8 * (c0 + 4 * g + 2 * set + q / 2) + 4 * (q % 2);
          sv[set] = __ldg(reinterpret_cast<const uint2*>(a.scales + gi * a.n + ch));
        } else {
          sv[set] =
              __ldg(reinterpret_cast<const uint32_t*>(a.scales + gi * a.n + 8 * c0 + channel_of(set, 0)));
        }
      }
    }
  };
  const auto scale_out = [&](const Scales& sv) {
    if constexpr (MT > 1) {
#pragma unroll
      for (int set = 0; set < kSets; ++set) {
        const float lo = quant::half_to_f32(bits::lo16(sv[set % S])),
                    hi = quant::half_to_f32(bits::hi16(sv[set % S]));
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          if constexpr (kYShared) {
            float& v = ys[(set * 4 + e) * 32 + lane];
            v = fmaf(e < 2 ? lo : hi, acc[set][e], v);
          } else {
            y[set][e] = fmaf(e < 2 ? lo : hi, acc[set][e], y[set][e]);
          }
          acc[set][e] = 0.0f;
        }
      }
    } else {
#pragma unroll
      for (int set = 0; set < 2; ++set) {
        // acc[set][0 .. 3]: channels + 0, + 2, + 1, + 3 (columns 2q, 2q + 1 of rows g, g + 8)
        const float s[4] = {
            quant::half_to_f32(bits::lo16(sv[set].x)), quant::half_to_f32(bits::lo16(sv[set].y)),
            quant::half_to_f32(bits::hi16(sv[set].x)), quant::half_to_f32(bits::hi16(sv[set].y))};
#pragma unroll
        for (int e = 0; e < 4; ++e) y[set][e] = fmaf(s[e], acc[set][e], y[set][e]), acc[set][e] = 0.0f;
      }
    }
  };
  Words buf[D][4];  // this step's words and the next D - 1 steps'
  uint2 xbuf[D][NT];
  const auto load = [&](int slot) {
#pragma unroll
    for (int j = 0; j < 4; ++j) buf[slot][j] = load_piece(wp + j * rstride);
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      const uint16_t* x = xp[t];
#if __CUDA_ARCH__ >= 900
      asm volatile("" : "+l"(x));  // after the wait (below)
#endif
      if constexpr (MT == 1) {
        xbuf[slot][t] = __ldg(reinterpret_cast<const uint2*>(x));
      } else {
        xbuf[slot][t] = xlive[t] ? __ldg(reinterpret_cast<const uint2*>(x)) : make_uint2(0u, 0u);
      }
      xp[t] += 16;
    }
    wp += 4 * 4 * rstride;
  };
  const auto step = [&](int slot) {
#pragma unroll
    for (int w = 0; w < W; ++w) {
      uint32_t h[4][4];  // [row j][recipe register]: n - z
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const uint32_t word = word_of(buf[slot][j], w);
        const uint32_t w8 = word >> 8;
        h[j][0] = bits::sub_f16x2(bits::lop3<0xEA>(word, 0x000F000Fu, 0x64006400u), zc[w][0]);
        h[j][1] = bits::fma_f16x2(bits::lop3<0xEA>(word, 0x00F000F0u, 0x64006400u), 0x2C002C00u, zc[w][1]);
        h[j][2] = bits::sub_f16x2(bits::lop3<0xEA>(w8, 0x000F000Fu, 0x64006400u), zc[w][2]);
        h[j][3] = bits::fma_f16x2(bits::lop3<0xEA>(w8, 0x00F000F0u, 0x64006400u), 0x2C002C00u, zc[w][3]);
      }
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int i = 4 * w + r;
        const uint32_t a0 = __byte_perm(h[0][r], h[1][r], 0x5410), a1 = __byte_perm(h[0][r], h[1][r], 0x7632);
        const uint32_t a2 = __byte_perm(h[2][r], h[3][r], 0x5410), a3 = __byte_perm(h[2][r], h[3][r], 0x7632);
        const bool mine = g / MT == i % P;
#pragma unroll
        for (int t = 0; t < NT; ++t) {
          const uint32_t x0 = xbuf[slot][t].x, x1 = xbuf[slot][t].y;
          wide_mma<OutType::F16>(acc[t * S + i / P], a0, a1, a2, a3, mine ? x0 : 0u, mine ? x1 : 0u);
        }
      }
    }
  };
  // Launched as the programmatic dependent of the kernel before it (compute capability 9.0), the block may
  // start while that kernel ends, and waits for it (it may have written X) before it reads X or touches the
  // workspace; its own dependent may start as soon as every block here has. Each load of X takes its
  // address through an empty asm volatile (in `load`), which the compiler keeps after the wait's, so that no
  // load of X (by __ldg, which the compiler may move ahead of the wait itself) is issued before the wait.
  // Measured against the kernel launched plainly (notes/performance.md, ninety-fourth and ninety-fifth
  // sessions): back to back at one and two rows 1.00-1.01x at 28672x8192, 1.05-1.06x at 8192x8192 and
  // 1.14-1.16x at 4096x4096 (H100), up to 1.07x at 16 rows on the smaller shapes (H200); a run at a time the
  // same. With the pointers passed through the asm once, after the wait, one row lost 1.5-4.5% a run at a
  // time: they could no longer be rebuilt from the kernel's parameters, and its loop took 9 more register
  // moves a round (754 instructions against 745); passed load by load, its loop is the plain kernel's. Asking
  // the L2 for the first steps' words before the wait (as ft_lane_kernel does) cost the 16-row forms 3-6% a
  // run at a time; X by coherent loads instead of __ldg, 2-6%.
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  if (count > 0) {
    int64_t gi = s_begin / spg;
    int left = spg - static_cast<int>(s_begin % spg);  // steps of group gi still to come
    zeros_of(zeros_in(gi));
    Scales sv;
    scales_in(gi, sv);
    Words znext = zeros_in(gi + 1);  // the next group's, early
    const auto consume = [&](int slot, int j) {
      step(slot);
      if (--left == 0 || j == count - 1) {
        scale_out(sv);
        if (j + 1 < count) {
          ++gi, left = spg;
          zeros_of(znext);
          scales_in(gi, sv);
          znext = zeros_in(gi + 1);
        }
      }
    };
    if constexpr (D == 2) {  // the loop the one- to four-row forms were measured with
      load(0);
      int j = 0;
      for (; j + 3 <= count; j += 2) {  // two steps a round, the next one's loads asked first
        load(1);
        consume(0, j);
        load(0);
        consume(1, j + 1);
      }
      if (j + 1 < count) load(1);
      consume(0, j);
      if (j + 1 < count) consume(1, j + 1);
    } else {  // D steps a round, each step's loads asked D - 1 steps ahead; step s in slot s % D
#pragma unroll
      for (int d = 0; d < D - 1; ++d) {
        if (d < count) load(d);
      }
      int j = 0;
      for (; j + 2 * D - 1 <= count; j += D) {
#pragma unroll
        for (int d = 0; d < D; ++d) {
          load((d + D - 1) % D);
          consume(d, j + d);
        }
      }
#pragma unroll
      for (int u = 0; u < 2 * D - 2; ++u) {  // what is left: fewer than 2 D - 1 steps
        if (j + u < count) {
          if (j + u + D - 1 < count) load((u + D - 1) % D);
          consume(u % D, j + u);
        }
      }
    }
  }
  // The warps of the block meet in shared memory, channel by channel, then the rows of blocks.
  float lane_sums[kSets][4];
#pragma unroll
  for (int set = 0; set < kSets; ++set) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if constexpr (kYShared) {
        lane_sums[set][e] = ys[(set * 4 + e) * 32 + lane];
      } else {
        lane_sums[set][e] = y[set][e];
      }
    }
  }
  if constexpr (kYShared) __syncwarp();  // the warp's sums are read before its part is rewritten
#pragma unroll
  for (int set = 0; set < kSets; ++set) {
#pragma unroll
    for (int e = 0; e < 4; ++e) part[warp][part_at(token_of(set, e), channel_of(set, e))] = lane_sums[set][e];
  }
  __syncthreads();
  const auto each = [&](auto fn) {
    for (int i = threadIdx.x; i < kTokens * kChannels; i += blockDim.x) {
      const int t = i / kChannels, ch = i % kChannels;
      if (t >= a.out.m) break;  // tokens past M (i only grows)
      float v = 0.0f;
#pragma unroll
      for (int w = 0; w < kAwqLaneWarps; ++w) v += part[w][part_at(t, ch)];
      fn(int64_t{t}, 8 * c0 + ch, v);
    }
  };
  finish_tile<OutType::F16>(a.out, a.sums, a.counters + blockIdx.x, 1, static_cast<int>(gridDim.y), each);
#else
  __trap();  // the launcher takes it from compute capability 8.0 (gemv::awq_lane_takes)
#endif
}

// The blocks of a lane form the device holds at once.
template <int MT, int W, int NT>
int64_t awq_lane_resident(const GemvLaunch& L) {
  static Fit fit;
  return int64_t{bulk_blocks_per_sm(fit, awq_lane_kernel<MT, W, NT>, 0, kAwqLaneWarps * 32)} * L.sms;
}

// One lane form on its grid: columns of its warps' 64 W channels.
template <int MT, int W, int NT>
std::string launch_awq_lane_form(const GemvLaunch& L, const Workspace& ws, bool wait) {
  AwqLaneArgs a{};
  a.q = L.w.q, a.scales = L.w.scales, a.zeros = L.w.qzeros, a.x = L.p.x;
  a.n = L.w.n, a.k = L.w.k, a.group = L.w.group;
  a.out = Out{L.y, L.p.bias, L.p.epi, L.p.m, L.w.n};
  a.sums = ws.sums, a.counters = ws.counters;
  const gemv::AwqLaneGrid grid = gemv::awq_lane_grid(a.n, a.k, 64 * W, awq_lane_resident<MT, W, NT>(L));
  a.steps_per_warp = static_cast<int>(grid.steps_per_warp);
  const dim3 blocks(static_cast<unsigned>(grid.columns), static_cast<unsigned>(grid.rows));
  // On compute capability 9.0 the programmatic dependent of the launch before it (awq_lane_kernel waits for
  // that launch before it reads X).
  DependentLaunch d(1, kAwqLaneWarps * 32, 0, L.cc >= 90);
  d.cfg.gridDim = blocks;
  if (const cudaError_t e = run_kernel_ex(d.cfg, awq_lane_kernel<MT, W, NT>, a); e != cudaSuccess)
    return std::string("the AWQ lane kernel failed on the GPU: ") + cudaGetErrorString(e);
  return status("the AWQ lane kernel", wait);
}

// The form for M rows of X: its warps' channels are gemv::awq_lane_channels(M), the rule's, so that the
// rule's N and the grid's columns are the kernel's.
std::string launch_awq_lane(const GemvLaunch& L, const Workspace& ws, bool wait) {
  switch (gemv::awq_lane_channels(L.p.m)) {
    case 64: return launch_awq_lane_form<8, 1, 2>(L, ws, wait);
    case 128: return launch_awq_lane_form<8, 2, 1>(L, ws, wait);
    default:  // 256
      if (L.p.m == 1) return launch_awq_lane_form<1, 4, 1>(L, ws, wait);
      return launch_awq_lane_form<2, 4, 1>(L, ws, wait);
  }
}

// Blocks a multiprocessor the AWQ kernels' grids aim at (k_slice_units' `most`): the ring at one token
// tile fits five, but its grids of five a multiprocessor measured 0.85-0.96x those of four at 1-8 rows
// (14336x4096, 8192x28672; H200, notes/performance.md, "the AWQ and NF4 grids").
constexpr int kAwqMostPerSm = 4;

// Batches a warp's ring holds: 3, 4 and 5 measured within 3% of one another on the H200
// (notes/performance.md, w1); 4 is the depth the GPU tests ran.
constexpr int kAwqRingStages = 4;

// Launches a tensor-core AWQ or NF4 kernel on a grid of `bx` column blocks by slices of whole units
// of K (split.hpp's rules). `per_slice(fits)` gives the units a slice from the blocks the device runs
// at once, asked of the kernel's own occupancy (bulk_blocks_per_sm asks for blocks of kSliceWarps);
// they go to the field `per` of `a`, and the slice count to `a.slices`.
template <class Args, class PerSlice>
std::string launch_in_slices(void (*kernel)(Args), Fit& fit, Args& a, int Args::*per, int64_t units,
                             int64_t bx, PerSlice per_slice, const GemvLaunch& L, const char* what,
                             bool wait) {
  const int units_per = static_cast<int>(per_slice(int64_t{bulk_blocks_per_sm(fit, kernel, 0)} * L.sms));
  a.*per = units_per;
  a.slices = static_cast<int>((units + units_per - 1) / units_per);
  run_kernel(kernel, dim3(static_cast<unsigned>(bx), static_cast<unsigned>(a.slices)), kSliceWarps * 32, 0,
             a);
  return status(what, wait);
}

std::string launch_awq(const GemvLaunch& L, const Workspace& ws, bool wait) {
  AwqArgs a{};
  a.q = L.w.q, a.scales = L.w.scales, a.zeros = L.w.qzeros, a.x = L.p.x;
  a.n = L.w.n, a.k = L.w.k, a.m = L.p.m, a.group = L.w.group;
  a.out = Out{L.y, L.p.bias, L.p.epi, L.p.m, L.w.n};
  a.sums = ws.sums, a.counters = ws.counters;
  const int64_t cols = a.n / 8, gx = (cols + kAwqThreads - 1) / kAwqThreads, groups = a.k / a.group;
  const auto slice = [&](int64_t gz) {
    // Enough blocks for 16 warps on every multiprocessor, in slices of whole groups.
    const int64_t want =
        std::max<int64_t>(1, (int64_t{16} * L.sms * 32 / kAwqThreads + gx * gz - 1) / (gx * gz));
    a.groups_per_slice = static_cast<int>(std::max<int64_t>(1, groups / std::min(groups, want)));
    a.slices = static_cast<int>((groups + a.groups_per_slice - 1) / a.groups_per_slice);
    return dim3(static_cast<unsigned>(gx), static_cast<unsigned>(a.slices), static_cast<unsigned>(gz));
  };
  // Groups of whole batches take the tensor-core form, at every M: H100, against the kernels
  // below, 0.97-1.45x at M = 1 and 1.6-5.4x at M = 4 and 16 (notes/performance.md, g12). Its
  // grid: slices of whole groups (gemv::k_slice_units).
  if (a.group % (16 * kAwqMmaSteps) == 0) {
    const int64_t bx = (cols + kAwqMmaCols - 1) / kAwqMmaCols;
    constexpr int ST = kAwqRingStages;
    // One to sixteen rows of X: the lane form above, where its warps' channels divide N (from nine rows,
    // where one wave of its blocks holds N's columns: gemv::awq_lane_takes).
    if (gemv::awq_lane_takes(a.m, a.n, a.group, L.cc, a.m > 8 ? awq_lane_resident<8, 1, 2>(L) : 0))
      return launch_awq_lane(L, ws, wait);
    // The ring where it can run: H200, against the words in registers, 1.34-1.36x at M = 1 and
    // 1.21x at M = 16 on the large shapes, 1.11-1.15x at 8192x8192, 1.0-1.07x at 4096x4096
    // (notes/performance.md, w1). Room for the rings of as many blocks as the registers allow,
    // asked before the kernels' occupancy is. Where the device refuses (a hint it may ignore; not
    // seen), the error is cleared so that the launch's status does not report it, and the register
    // form below runs instead.
    bool ring = false;
    if (L.cc >= 80 && a.n % 32 == 0) {
      static const cudaError_t carved = [] {
        cudaError_t e =
            cudaFuncSetAttribute(awq_ring_kernel<1, ST>, cudaFuncAttributePreferredSharedMemoryCarveout, 100);
        if (e == cudaSuccess)
          e = cudaFuncSetAttribute(awq_ring_kernel<2, ST>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                   100);
        cudaGetLastError();
        return e;
      }();
      ring = carved == cudaSuccess;
    }
    static_assert(kAwqMmaWarps == kSliceWarps, "launch_in_slices launches blocks of kSliceWarps");
    static Fit fit_ring1, fit_ring2, fit_regs1, fit_regs2;
    const auto launch = [&](auto kernel, Fit& fit) {
      const auto per_slice = [&](int64_t fits) {
        return gemv::k_slice_units(groups, bx, fits, int64_t{kAwqMostPerSm} * L.sms, a.m);
      };
      return launch_in_slices(kernel, fit, a, &AwqArgs::groups_per_slice, groups, bx, per_slice, L,
                              "the AWQ GEMV kernel (tensor cores)", wait);
    };
    if (ring)
      return a.m <= 8 ? launch(awq_ring_kernel<1, ST>, fit_ring1) : launch(awq_ring_kernel<2, ST>, fit_ring2);
    return a.m <= 8 ? launch(awq_mma_kernel<1>, fit_regs1) : launch(awq_mma_kernel<2>, fit_regs2);
  }
  // Other groups on CUDA cores. One row of X takes the one-token kernel (46 registers against 145)
  // where the grid has two blocks a multiprocessor or more: measured 1.14-1.17x faster from
  // 8192x8192 (512 blocks) up, 0.84x at 4096x4096 (128 blocks), notes/performance.md, g10.
  if (a.m == 1) {
    const dim3 grid = slice(1);
    if (int64_t{grid.x} * grid.y >= 2 * int64_t{L.sms}) {
      run_kernel(awq_kernel<1>, grid, kAwqThreads, 0, a);
      return status("the AWQ GEMV kernel", wait);
    }
  }
  run_kernel(awq_kernel<4>, slice((a.m + 3) / 4), kAwqThreads, 0, a);
  return status("the AWQ GEMV kernel", wait);
}

// ---- NF4 on tensor cores -----------------------------------------------------------------------
//
// A warp owns 16 channels (the A operand, as in the mixed-GEMM kernel) and NT tiles of 8 tokens.
// Per step of 128 along K, lane (g, r) loads words 4r .. 4r + 3 of channels g and g + 8 (one
// 16-byte load each: 32 consecutive k of a row, inside one absmax block since blocks are 32 or
// more) and decodes them through the warp's code book exactly as the dequant recipe does
// (nf4_word: entry times absmax in fp32, rounded once to fp16). Word j's pairs 2h and 2h + 1 form
// one mma with X's k 32r + 8j + 4h .. + 3: the lane's X values are 16-byte loads of its own 32 k.
// The absmax is inside the fp16 weights, so the mma accumulators hold the sum itself. Blocks of
// 4 warps (64 channels) take slices of whole steps; the slices of a tile meet in the workspace.
constexpr int kNf4MmaWarps = 4;
constexpr int kNf4MmaStep = 128;  // K per step
constexpr int kNf4MmaBatch = 2;   // steps whose loads are issued together

struct Nf4MmaArgs {
  const uint32_t* q;
  const float* absmax;  // [N, K / B]
  const uint16_t* x;
  int64_t n, k, m;
  int block, steps_per_slice, slices;
  Out out;
  float* sums;
  unsigned* counters;
};

// With XS, a batch's rows of X come into shared memory by the block's threads (cp.async, one batch
// ahead, three buffers) and the warps read them there, instead of each warp loading them from the
// global memory inside the loop. A lane's 16-byte piece (step b, token, r, j) sits at position
// (j + 2 (token % 2) + r / 2) % 4 of its four, so that the eight lanes of a quarter warp read eight
// different bank groups.
constexpr int kNf4XsBuffers = 3;
// Rows of X from which the launcher takes the staged form (cp.async needs compute capability 8.0).
// H200, against X loaded by every warp, the two alternated twice on eight shapes: 1.17-1.68x at 12-16
// rows, 1.10-1.24x at 8, 0.99-1.11x at 4; at 1 and 2 rows 0.94-1.08x, 14336x4096 losing 5-6%
// (notes/performance.md, x1).
constexpr int kNf4XsFromRows = 4;

template <int NT>
__device__ __forceinline__ int nf4_xs_piece(int b, int tok, int r, int j) {
  return ((b * 8 * NT + tok) * 4 + r) * 4 + (j + 2 * (tok % 2) + r / 2) % 4;
}

template <int NT, bool XS>
__global__ void __launch_bounds__(kNf4MmaWarps * 32) nf4_mma_kernel(Nf4MmaArgs a) {
  constexpr int SB = kNf4MmaBatch;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  if constexpr (XS) __trap();  // cp.async needs sm_80; the launcher takes the other form below it
#endif
  constexpr int kPieces = SB * 8 * NT * kNf4MmaStep / 8;  // 16-byte pieces of X a batch
  __shared__ __align__(128) uint4 xs[XS ? kNf4XsBuffers : 1][XS ? kPieces : 1];  // as awq_ring_kernel's ring
  const WarpCodeBook book{lane_code_book_entry()};
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, r = lane % 4;
  const int64_t ch0 = static_cast<int64_t>(blockIdx.x) * 16 * kNf4MmaWarps + warp * 16 + g, ch1 = ch0 + 8;
  const bool live0 = ch0 < a.n, live1 = ch1 < a.n;
  const int64_t words = a.k / 8, blocks = a.k / a.block;
  const int64_t steps = (a.k + kNf4MmaStep - 1) / kNf4MmaStep;
  const int64_t s_begin = static_cast<int64_t>(blockIdx.y) * a.steps_per_slice;
  const int64_t s_end = min(steps, s_begin + a.steps_per_slice);
  const uint32_t* q0 = a.q + (live0 ? ch0 : 0) * words;
  const uint32_t* q1 = a.q + (live1 ? ch1 : 0) * words;
  const float* am0 = a.absmax + (live0 ? ch0 : 0) * blocks;
  const float* am1 = a.absmax + (live1 ? ch1 : 0) * blocks;
  // The lane's X rows: token g + 8 t (tokens past M read zeros), from the global memory without XS.
  [[maybe_unused]] const uint16_t* xrow[NT];
  bool xlive[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) {
    xlive[t] = g + 8 * t < a.m;
    if constexpr (!XS) xrow[t] = a.x + (xlive[t] ? (g + 8 * t) * a.k : 0);
  }
  // Step s: the lane's 32 k start at s * 128 + 32 r; past K (K is a multiple of 32) the lane's
  // words and absmax read as zero, so its weights are zero too.
  const auto load = [&](int64_t s, uint4(&w)[2], uint32_t(&am)[2]) {
    const int64_t kk = s * kNf4MmaStep + 32 * r;
    const bool in = kk < a.k;
    const uint4 z = make_uint4(0u, 0u, 0u, 0u);
    w[0] = in && live0 ? __ldcs(reinterpret_cast<const uint4*>(q0 + kk / 8)) : z;
    w[1] = in && live1 ? __ldcs(reinterpret_cast<const uint4*>(q1 + kk / 8)) : z;
    am[0] = in && live0 ? __float_as_uint(__ldg(am0 + kk / a.block)) : 0u;
    am[1] = in && live1 ? __float_as_uint(__ldg(am1 + kk / a.block)) : 0u;
  };
  // The block's copies of batch `bi` of the slice into buffer bi % 3. Piece q (thread t copies
  // q = t, t + 128, ...) is token q / (SB * 16) at k = (the batch's first k) + 8 (q % (SB * 16)), 8
  // values; pieces of tokens past M or k past K are not copied (the lanes that would read them use
  // zeros).
  const auto copy_x = [&](int bi) {
    const int64_t k0 = (s_begin + SB * bi) * kNf4MmaStep;
    const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(&xs[bi % kNf4XsBuffers][0]));
#pragma unroll
    for (int i = 0; i < kPieces / (kNf4MmaWarps * 32); ++i) {
      const int q = static_cast<int>(threadIdx.x) + kNf4MmaWarps * 32 * i;
      const int tok = q / (SB * 16), kc = q % (SB * 16);
      const int64_t k = k0 + 8 * kc;
      if (tok < a.m && k < a.k) {
        const int b = kc / 16, r4 = (kc % 16) / 4, j = kc % 4;
        cp_async16(base + 16 * nf4_xs_piece<NT>(b, tok, r4, j), a.x + tok * a.k + k, true);
      }
    }
  };
  if constexpr (XS) {
    copy_x(0);
    cp_async_commit();
  }
  float acc[NT][4] = {};
  uint4 cur[SB][2];
  uint32_t cam[SB][2];
  for (int64_t s0 = s_begin; s0 < s_end; s0 += SB) {
    // Batch bi of the slice (a slice is at most steps_per_slice steps) and, with XS, its buffer.
    [[maybe_unused]] const int bi = static_cast<int>((s0 - s_begin) / SB);
    [[maybe_unused]] const uint4* xb = xs[XS ? bi % kNf4XsBuffers : 0];
#pragma unroll
    for (int b = 0; b < SB; ++b) {
      if (s0 + b < s_end) load(s0 + b, cur[b], cam[b]);  // steps past the slice are not used below
    }
    if constexpr (XS) {
      // Buffer (bi + 1) % 3 was last read for batch bi - 2, which every warp finished before the
      // barrier of batch bi - 1.
      if (s0 + SB < s_end) copy_x(bi + 1);
      cp_async_commit();
      cp_async_wait<1>();
      __syncthreads();  // batch bi's X is in shared memory for every thread's copies
    }
#pragma unroll
    for (int b = 0; b < SB; ++b) {
      if (s0 + b >= s_end) break;  // the same for the whole warp
      const int64_t kk = (s0 + b) * kNf4MmaStep + 32 * r;
      const bool in = kk < a.k;
      const uint32_t w0[4] = {cur[b][0].x, cur[b][0].y, cur[b][0].z, cur[b][0].w};
      const uint32_t w1[4] = {cur[b][1].x, cur[b][1].y, cur[b][1].z, cur[b][1].w};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        uint32_t v0[4], v1[4];
        nf4_word(book, w0[j], cam[b][0], v0);
        nf4_word(book, w1[j], cam[b][1], v1);
        uint4 xv[NT];
#pragma unroll
        for (int t = 0; t < NT; ++t) {
          if constexpr (XS) {
            xv[t] = xlive[t] && in ? xb[nf4_xs_piece<NT>(b, g + 8 * t, r, j)] : make_uint4(0u, 0u, 0u, 0u);
          } else {
            xv[t] = xlive[t] && in ? __ldg(reinterpret_cast<const uint4*>(xrow[t] + kk + 8 * j))
                                   : make_uint4(0u, 0u, 0u, 0u);
          }
        }
#pragma unroll
        for (int t = 0; t < NT; ++t) {
          mma_16816<OutType::F16>(acc[t], v0[0], v1[0], v0[1], v1[1], xv[t].x, xv[t].y);
          mma_16816<OutType::F16>(acc[t], v0[2], v1[2], v0[3], v1[3], xv[t].z, xv[t].w);
        }
      }
    }
  }
  finish_pairs(a.out, a.sums, a.counters + blockIdx.x, a.slices, [&](auto&& fn) {
    lane_pairs<NT>(2 * r, ch0, ch1, acc, [&](int64_t tok, int64_t ch, float v0, float v1) {
      if (ch < a.n) fn(tok, ch, v0, v1);
    });
  });
}

std::string launch_nf4(const GemvLaunch& L, const Workspace& ws, bool wait) {
  // Against the CUDA-core kernel it replaces (a warp a channel, tokens summed in fp32 FMAs), H100:
  // 1.6-1.9x at M = 1 and 3.5-6.7x at M = 8 and 16 on the large shapes (notes/performance.md, g32).
  Nf4MmaArgs a{L.w.q,   L.w.absmax, L.p.x, L.w.n, L.w.k,
               L.p.m,   L.w.group,  0,     0,     Out{L.y, L.p.bias, L.p.epi, L.p.m, L.w.n},
               ws.sums, ws.counters};
  const int64_t bx = (a.n + 16 * kNf4MmaWarps - 1) / (16 * kNf4MmaWarps);
  static_assert(kNf4MmaWarps == kSliceWarps, "launch_in_slices launches blocks of kSliceWarps");
  static Fit fit1, fit2, fit1s, fit2s;
  const int64_t steps = (a.k + kNf4MmaStep - 1) / kNf4MmaStep;
  const auto launch = [&](auto kernel, Fit& fit) {
    const auto per_slice = [&](int64_t fits) { return gemv::nf4_slice_steps(steps, bx, fits, a.m); };
    return launch_in_slices(kernel, fit, a, &Nf4MmaArgs::steps_per_slice, steps, bx, per_slice, L,
                            "the NF4 GEMV kernel", wait);
  };
  const bool xs = L.cc >= 80 && a.m >= kNf4XsFromRows;
  if (a.m <= 8) return xs ? launch(nf4_mma_kernel<1, true>, fit1s) : launch(nf4_mma_kernel<1, false>, fit1);
  return xs ? launch(nf4_mma_kernel<2, true>, fit2s) : launch(nf4_mma_kernel<2, false>, fit2);
}

template <OutType T>
__global__ void epilogue_kernel(Out o) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= o.m * o.n) return;
  write_out<T>(o, i / o.n, i % o.n, gemv::act_to_f32(o.y[i], T));
}

}  // namespace

size_t gemv_workspace_zeroed_bytes(const gemv::Weights& w, int64_t m) {
  return align256(static_cast<size_t>(gemv::workspace_sum_floats(w.n, w.k, m)) * 4) +
         align256(static_cast<size_t>(counter_count(w, m)) * 4);
}

size_t gemv_workspace_bytes(const gemv::Weights& w, int64_t m) {
  return gemv_workspace_zeroed_bytes(w, m) + align256(static_cast<size_t>(m * w.k)) +
         align256(static_cast<size_t>(m * (w.k / 64)) * sizeof(gemv::ActBlock)) +
         align256(static_cast<size_t>(staged_x_rows(m) * staged_x_halves(w.k)) * 2) +
         align256(static_cast<size_t>(online_part_floats(w, m)) * 4);
}

std::string gemv_run(const GemvLaunch& L, bool wait) {
  if (std::string refused = gemv_refusal(L); !refused.empty()) return refused;
  const Workspace ws = carve(L.workspace, L.w, L.p.m);
  if (L.p.path == Path::Online) return launch_online(L, ws, wait);
  if (L.w.layout == quant::Layout::Awq) return launch_awq(L, ws, wait);
  if (L.w.scheme == quant::Scheme::Nf4) return launch_nf4(L, ws, wait);
  return L.p.path == Path::Naive ? launch_ft_any<true>(L, ws, wait) : launch_ft_any<false>(L, ws, wait);
}

std::string gemv_epilogue(const GemvLaunch& L, bool wait) {
  const Out o{L.y, L.p.bias, L.p.epi, L.p.m, L.w.n};
  const unsigned blocks = static_cast<unsigned>((o.m * o.n + 255) / 256);
  if (L.p.dtype == OutType::F16) {
    run_kernel(epilogue_kernel<OutType::F16>, blocks, 256, 0, o);
  } else {
    run_kernel(epilogue_kernel<OutType::BF16>, blocks, 256, 0, o);
  }
  return status("the epilogue kernel", wait);
}

}  // namespace dql::cuda
