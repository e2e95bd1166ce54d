// The fast kernels: the same values as the per-item functions in quant/quant.hpp (the CPU twin),
// arranged for the memory system. Every value is computed by the shared functions
// (convert_word, sym_code, nf4_code_of, the FT maps), but for the plain NF4 dequant's code book
// fetch (nf4_word in codebook.cuh, the same operations); only who does what, and how the bytes
// move, differs. notes/performance.md has the reasoning and the figures.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <type_traits>

#include "codebook.cuh"
#include "fast.hpp"
#include "kernels/bits/divide.hpp"
#include "launch.hpp"
#include "launch_note.cuh"

namespace dql::cuda {

namespace {

using quant::DequantArgs;
using quant::PermuteArgs;
using quant::Scheme;
using recipes::RecipeId;
namespace cg = cooperative_groups;

constexpr int kThreads = 256;

std::string status(const char* what, bool wait) {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess && wait) e = cudaDeviceSynchronize();
  if (e == cudaSuccess) return {};
  return std::string(what) + " failed on the GPU: " + cudaGetErrorString(e);
}

unsigned blocks_for(int64_t threads) { return static_cast<unsigned>((threads + kThreads - 1) / kThreads); }

// A warp's contiguous run of 32 * P 16-byte chunks, lane L owning chunks L*P .. L*P + P - 1,
// moved between global memory and the lanes through `stage` (32 * (P + 1) chunks, padded so
// that neither side conflicts much) so that every global access of the warp is contiguous.
template <int P>
__device__ void warp_load(const uint4* run, uint4* stage, uint4 (&mine)[P]) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int i = 0; i < P; ++i) {
    const int s = i * 32 + lane;
    stage[(s / P) * (P + 1) + s % P] = __ldcs(run + s);
  }
  __syncwarp();
#pragma unroll
  for (int i = 0; i < P; ++i) mine[i] = stage[lane * (P + 1) + i];
  __syncwarp();
}

template <int P>
__device__ void warp_store(uint4* run, uint4* stage, const uint4 (&mine)[P]) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int i = 0; i < P; ++i) stage[lane * (P + 1) + i] = mine[i];
  __syncwarp();
#pragma unroll
  for (int i = 0; i < P; ++i) {
    const int s = i * 32 + lane;
    __stcs(run + s, stage[(s / P) * (P + 1) + s % P]);
  }
  __syncwarp();
}

// ---- dequant, plain layouts: two words per thread, each word's results in one store -----------

// A unit is 8 consecutive elements of a row (one int4 word, two int8 words), written as one
// 16-byte store; a thread takes kPlainUnits units kThreads apart, all loads issued first (NF4's
// absmax loads with them). Two units rather than four (K = 8192) or eight (K >= 16384): on the
// H200 0.3-0.9 points of the copy more at K = 8192 and 2-4 more at K = 28672, as a kernel that
// only moves the same bytes shows (notes/experiments/stream_ceiling.cu; notes/performance.md, v8).
constexpr int kPlainUnits = 2;

// The grid is 2-D (units of a row, rows), so no thread divides a 64-bit index: the row comes from
// blockIdx.y, the group from a shift (G is a power of two) or is 0 (one scale per row).
template <RecipeId Id, int kUnits>
__global__ void __launch_bounds__(kThreads) dequant_plain_kernel(DequantArgs a, int group_shift) {
  constexpr int E = recipes::recipe_elems(Id);
  constexpr int W = 8 / E;  // words per unit
  constexpr bool kNf4 = Id == RecipeId::Nf4F16;
  const uint32_t row_units = static_cast<uint32_t>(a.k / 8);
  const uint32_t base = blockIdx.x * (kUnits * kThreads) + threadIdx.x;
  // Groups a row by the shift (a division here cost each thread some 20 instructions).
  const uint32_t groups = group_shift < 0 ? 1u : static_cast<uint32_t>(a.k >> group_shift);
  const WarpCodeBook book{lane_code_book_entry()};
  for (int64_t n = blockIdx.y; n < a.n; n += gridDim.y) {
    const int64_t row_unit0 = n * row_units;
    uint32_t w[kUnits][W];
    uint32_t absmax[kUnits];  // NF4
    // The index of the scale (absmax) of element k0 of the row.
    const auto param = [&](uint32_t k0) { return n * groups + (group_shift < 0 ? 0u : (k0 >> group_shift)); };
#pragma unroll
    for (int j = 0; j < kUnits; ++j) {
      const uint32_t u = base + j * kThreads;
      if constexpr (W == 1) {
        w[j][0] = u < row_units ? __ldcs(a.qwords + row_unit0 + u) : 0u;
      } else {
        const uint2 x = u < row_units ? __ldcs(reinterpret_cast<const uint2*>(a.qwords) + row_unit0 + u)
                                      : make_uint2(0u, 0u);
        w[j][0] = x.x, w[j][1] = x.y;
      }
    }
    if constexpr (kNf4) {
      // Issued beside the words, not one per unit after them: NF4 at K = 8192 on the H200 89.3 ->
      // 90.0% of the copy (the fp16 scales of the other recipes gained nothing this way).
#pragma unroll
      for (int j = 0; j < kUnits; ++j) {
        const uint32_t u = base + j * kThreads;
        const uint32_t k0 = (u < row_units ? u : 0u) * 8u;
        absmax[j] = quant::bits_of_f32(__ldg(a.absmax + param(k0)));
      }
    }
#pragma unroll
    for (int j = 0; j < kUnits; ++j) {
      // Lanes past the row's end compute on zero words (the code-book shuffles need the whole
      // warp) and store nothing.
      const uint32_t u = base + j * kThreads;
      const bool live = u < row_units;
      const uint32_t k0 = (live ? u : 0u) * 8u;
      uint32_t v[4];
      if constexpr (kNf4) {
        nf4_word(book, w[j][0], absmax[j], v);
      } else {
        const uint32_t s = __ldg(a.scales + param(k0));
        const uint32_t s16[8] = {s, s, s, s, s, s, s, s};
#pragma unroll
        for (int h = 0; h < W; ++h)
          quant::convert_word(Id, false, w[j][h], 0u, 0x3F800000u, s16, v + (E / 2) * h);
      }
      if (live) __stcs(reinterpret_cast<uint4*>(a.out + n * a.k + k0), make_uint4(v[0], v[1], v[2], v[3]));
    }
  }
}

// ---- dequant, FT layout: one thread per (column, 64-row tile) ---------------------------------
//
// The V words of a (column, tile) are contiguous, and chunk t of V words is the t-th such pair
// in memory order, so thread t reads words t*V .. t*V + V - 1. Its 64 results are 64 consecutive
// values of one output row.

// How the FT-layout kernels move a warp's 32 chunks: each thread its own (Thread), or through
// shared memory with the warp inside one column group (Staged) or running from the end of one
// into the next (Crossing; a compare more a piece, kept out of the Staged form, where it cost
// the int4 permute 2-5% on the H200).
enum class FtForm { Thread, Staged, Crossing };

template <int Bits>
struct FtTile {
  static constexpr __host__ __device__ layouts::FtGeometry geom() { return layouts::FtGeometry{Bits}; }
  static constexpr int E = 32 / Bits, I = Bits == 4 ? 4 : 2, V = 64 / E, RG = Bits == 4 ? 32 : 16;
  // The (tile of 64 rows, column n) of chunk t: chunks run [column group][tile][column in group],
  // a column group's `chunks` = tiles_k * I. Narrow: t below 2^31, divided by the multiplier
  // found on the host (bits::divide: a multiply-high, an add and a shift); otherwise the 64-bit
  // division, a subroutine of some 70 instructions. Narrow, with one division a thread instead
  // of two, took the int4 permute's inverse at 8192x8192 on the H200 from 79 to 84% of the copy
  // (notes/performance.md, v9).
  template <bool Narrow>
  static __device__ void locate(int64_t t, bits::FixedDivisor chunks, int64_t& tile, int64_t& n) {
    uint64_t group, rem;
    if constexpr (Narrow) {
      const uint32_t q = bits::divide(static_cast<uint32_t>(t), chunks);
      group = q, rem = static_cast<uint32_t>(t) - q * chunks.d;
    } else {
      group = static_cast<uint64_t>(t) / chunks.d, rem = static_cast<uint64_t>(t) % chunks.d;
    }
    tile = static_cast<int64_t>(rem / I);
    n = static_cast<int64_t>(group * I + rem % I);
  }
  // Chunk t and the warp's first chunk t - lane by one division (the staged forms: a column group
  // holds at least 32 chunks, so a warp's 32 lie in one group or run from one into the next, and
  // the warp starts on a group's column 0: I divides 32 and the group's chunks).
  template <bool Narrow, FtForm Form>
  static __device__ void locate_warp(int64_t t, int lane, bits::FixedDivisor chunks, int64_t& tile0,
                                     int64_t& n0, int64_t& tile, int64_t& n) {
    locate<Narrow>(t - lane, chunks, tile0, n0);
    uint64_t first = static_cast<uint64_t>(n0) / I * I;  // the column group's first column
    uint64_t rem = static_cast<uint64_t>(tile0) * I + (static_cast<uint64_t>(n0) - first) + lane;
    if constexpr (Form == FtForm::Crossing) {
      if (rem >= chunks.d) rem -= chunks.d, first += I;  // past the group's end: the next group
    }
    tile = static_cast<int64_t>(rem / I);
    n = static_cast<int64_t>(first + rem % I);
  }
  // The row and tile of the staged piece (column nsub, tile tl) of a warp that starts at (n0,
  // tile0): with Crossing, tiles past the group's end are the next group's first ones.
  template <FtForm Form>
  static __device__ void warp_piece(int64_t n0, int64_t tile0, int64_t tiles_k, int nsub, int tl,
                                    int64_t& row, int64_t& tile) {
    row = n0 + nsub, tile = tile0 + tl;
    if constexpr (Form == FtForm::Crossing) {
      if (tile >= tiles_k) row += I, tile -= tiles_k;
    }
  }
  // The form an [n, k] matrix takes: staged where a column group holds at least 32 chunks and
  // they fill whole warps, crossing groups where a group's chunks are not a multiple of 32.
  static __host__ FtForm form(int64_t n, int64_t k) {
    const int64_t chunks = k / 64 * I;
    if (chunks < 32 || n * (k / 64) % 32 != 0) return FtForm::Thread;
    return chunks % 32 == 0 ? FtForm::Staged : FtForm::Crossing;
  }
  // Tile-local output column of element e of word j (the row permutation undone).
  static constexpr __host__ __device__ int column(int j, int e) {
    const int kp = j * E + e;
    return (kp / RG) * RG + layouts::ft_row_source(geom(), kp % RG);
  }
};

// Where a column group holds at least 32 chunks (K at least 64 * 32 / I) and the chunks fill whole
// warps (FtTile::form), a warp's 32 chunks are 32 / I consecutive tiles of I rows, of one group
// or the end of one and the start of the next; the results then go through shared memory so that
// every store instruction of the warp writes 512 contiguous bytes of one row (`Staged`, split where
// the warp changes group). Otherwise each thread stores its own 128 bytes, which ran at 21% of the
// copy at 8192x7936 on the H200 (notes/performance.md, v11), when only K a multiple of
// 64 * 32 / I was staged.
// `per_group` divides by a column group's chunks, `group` rows of K by the group size (Narrow:
// ft_index).
template <RecipeId Id, FtForm Form, bool Narrow>
__global__ void __launch_bounds__(kThreads)
    dequant_ft_kernel(DequantArgs a, bits::FixedDivisor per_group, bits::FixedDivisor group) {
  constexpr bool Staged = Form != FtForm::Thread;
  constexpr int B = recipes::recipe_bits(Id);
  using T = FtTile<B>;
  __shared__ uint4 stage[Staged ? kThreads * 8 : 1];
  const int64_t tiles_k = a.k / 64;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (t >= a.n * tiles_k) return;  // whole warps only, when staged
  const int lane = threadIdx.x % 32;
  int64_t tile, n, tile0 = 0, n0 = 0;  // the thread's chunk and (staged) the warp's first
  if constexpr (Staged) {
    T::template locate_warp<Narrow, Form>(t, lane, per_group, tile0, n0, tile, n);
  } else {
    T::template locate<Narrow>(t, per_group, tile, n);
  }
  uint32_t w[T::V];
  uint4 chunks[T::V / 4];
  if constexpr (Staged) {
    const int64_t t0 = t - lane;
    warp_load<T::V / 4>(reinterpret_cast<const uint4*>(a.qwords + t0 * T::V),
                        stage + (threadIdx.x / 32) * 256, chunks);
  } else {
    const uint4* src = reinterpret_cast<const uint4*>(a.qwords + t * T::V);
#pragma unroll
    for (int i = 0; i < T::V / 4; ++i) chunks[i] = __ldcs(src + i);
  }
#pragma unroll
  for (int i = 0; i < T::V / 4; ++i) {
    w[4 * i] = chunks[i].x, w[4 * i + 1] = chunks[i].y, w[4 * i + 2] = chunks[i].z,
          w[4 * i + 3] = chunks[i].w;
  }
  // Every 32-row half of the tile lies in one group (G is a multiple of 32).
  const auto group_of = [&](int64_t k) -> int64_t {
    if constexpr (Narrow) return bits::divide(static_cast<uint32_t>(k), group);  // K < 2^31 (ft_index)
    return k / a.group;
  };
  const uint32_t s_lo = __ldg(a.scales + group_of(tile * 64) * a.n + n);
  const uint32_t s_hi = __ldg(a.scales + group_of(tile * 64 + 32) * a.n + n);
  uint32_t out[32];  // 64 results, two per register, in column order
#pragma unroll
  for (int j = 0; j < T::V; ++j) {
    const uint32_t s = T::column(j, 0) < 32 ? s_lo : s_hi;
    const uint32_t s16[8] = {s, s, s, s, s, s, s, s};
    uint32_t v[4];
    quant::convert_word(Id, false, w[j], 0u, 0x3F800000u, s16, v);
#pragma unroll
    for (int r = 0; r < T::E / 2; ++r) out[T::column(j, 2 * r) / 2] = v[r];  // pairs stay adjacent
  }
  if constexpr (!Staged) {
    uint4* dst = reinterpret_cast<uint4*>(a.out + n * a.k + tile * 64);
#pragma unroll
    for (int i = 0; i < 8; ++i)
      __stcs(dst + i, make_uint4(out[4 * i], out[4 * i + 1], out[4 * i + 2], out[4 * i + 3]));
  } else {
    // Chunk p of lane L sits at L * 8 + (p ^ (L % 8)): conflict-free both ways.
    uint4* mine = stage + (threadIdx.x / 32) * 256;
#pragma unroll
    for (int p = 0; p < 8; ++p) {
      mine[lane * 8 + (p ^ (lane % 8))] =
          make_uint4(out[4 * p], out[4 * p + 1], out[4 * p + 2], out[4 * p + 3]);
    }
    __syncwarp();
    constexpr int kTiles = 32 / T::I;  // tiles per warp; each row segment is kTiles * 128 bytes
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const int s = i * 32 + lane;  // (row, tile, part) order: contiguous in memory
      const int nsub = s / (8 * kTiles), tl = (s / 8) % kTiles, part = s % 8;
      const int from = tl * T::I + nsub;
      const uint4 x = mine[from * 8 + (part ^ (from % 8))];
      int64_t row, at;
      T::template warp_piece<Form>(n0, tile0, tiles_k, nsub, tl, row, at);
      __stcs(reinterpret_cast<uint4*>(a.out + row * a.k + at * 64) + part, x);
    }
  }
}

// ---- dequant, AWQ: a block per (64 rows of K, 256 columns), transposed through shared memory --
//
// Thread (c, q) converts the 8 words of rows 8q .. 8q + 7 in word column c: 8 columns x 8 rows.
// Each column's 8 values go to shared memory as one 16-byte chunk (swizzled: conflict-free),
// and the block then writes 256 rows of 128 bytes, four full lines per warp instruction.
// Shapes whose N is not a multiple of 256 or K of 64 use the per-thread kernel below it.

// The zero-point word and the 8 fp16 scales of word column c in group g.
__device__ void awq_group_params(const DequantArgs& a, int64_t g, int64_t c, uint32_t& zero,
                                 uint32_t (&s16)[8]) {
  zero = __ldg(a.qzeros + g * (a.n / 8) + c);
  const uint4 sv = __ldg(reinterpret_cast<const uint4*>(a.scales + g * a.n + 8 * c));
  const uint32_t parts[4] = {sv.x, sv.y, sv.z, sv.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) s16[2 * i] = bits::lo16(parts[i]), s16[2 * i + 1] = bits::hi16(parts[i]);
}

constexpr int kAwqRows = 16;                   // rows of K per thread (8 measured slower: notes, a1)
constexpr int kAwqTileK = 8 * kAwqRows;        // rows of K per block
constexpr int kAwqSmem = 256 * kAwqRows * 16;  // 256 output rows of kAwqTileK values
constexpr uint32_t kAwqSetWidth = 1;           // column ranges a set (the block order below)

// A word of the tile, its miss fetched from memory as 256 bytes rather than the line's 128: a block of
// the neighbouring column range, in flight at the same time (the block order below), reads the other
// half of those bytes. Against `__ldcs` (one line, streaming), H200, three rounds: 8192x8192 89.0 ->
// 89.6% of the copy, 1.004-1.009x from 7936x8192 to 28672x8192, 4096x4096 the same; with `.cs` kept
// the 256-byte fetch lost 0.3-1.8% around 8192x8192 (notes/performance.md, seventy-first session). The
// prefetch size needs compute capability 8.0; below it the load is `__ldcs` as before.
__device__ __forceinline__ uint32_t load_word_l2_256(const uint32_t* p) {
#if __CUDA_ARCH__ >= 800
  uint32_t v;
  asm volatile("ld.global.L2::256B.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
#else
  return __ldcs(p);
#endif
}

// Block order: the blocks running at once should write long runs of each output row (4 in 5 bytes
// are writes). Column ranges (32 word columns, 256 output rows) go in sets of `width`; inside a
// set the ranges alternate and the K tiles follow one another, so the blocks in flight write
// whole rows of a few ranges and read runs of width x 128 bytes of the quantized rows. The old
// order (the ranges of one K tile side by side) wrote 256-byte pieces of every row. Against it,
// sets of two on the H200: 84.6 -> 88.5% of the copy at 8192x8192, 87.2 -> 90.4% at 8192x28672;
// sets of one or four were 1-2 points behind two (notes/performance.md, a6). With the 256-byte
// fetch (load_word_l2_256) sets of one lead: each range's K tiles one after another, about six ranges
// in flight at 8192x8192. Against sets of two, alternated in two calls (five rounds) on one H200:
// 89.1-89.5 -> 90.0-90.1% of the copy at 8192x8192, 91.2 -> 91.9% at 8192x28672, 92.5 -> 93.0% at
// 28672x8192, 4096x4096 0.3 points less (notes/performance.md, seventy-first session). With sets of one
// the set arithmetic below could be block b = range b / T, K tile b % T; that form, in one binary with
// this one, read 0.3-0.4 points of the copy less at every shape (the stores' schedule moves; notes,
// seventy-second session), so the general form stays. `set` divides by the blocks of a set (width x the
// K tiles), `group` rows of K by the group size (K below 2^31: the launcher).
__global__ void __launch_bounds__(kThreads)
    dequant_awq_tiled_kernel(DequantArgs a, uint32_t width, bits::FixedDivisor set,
                             bits::FixedDivisor group) {
  extern __shared__ uint4 tile[];  // [256 rows][kAwqRows chunks], chunk index swizzled
  const int64_t cols = a.n / 8;
  const uint32_t ranges = static_cast<uint32_t>(cols / 32);
  const uint32_t s = bits::divide(blockIdx.x, set), r = blockIdx.x - s * set.d;
  const uint32_t here = min(width, ranges - s * width);  // the last set may be narrower
  const int64_t c0 = (int64_t{s} * width + r % here) * 32, k0 = int64_t{r / here} * kAwqTileK;
  const int cl = threadIdx.x % 32, q = threadIdx.x / 32;
  const int64_t c = c0 + cl;
  uint32_t w[kAwqRows];
#pragma unroll
  for (int i = 0; i < kAwqRows; ++i)
    w[i] = load_word_l2_256(a.qwords + (k0 + 64 * (i / 8) + 8 * q + i % 8) * cols + c);
    // Thread q holds rows 64h + 8q + (0..7) for h = 0, 1: two runs of 8 rows, each in one group.
#pragma unroll
  for (int h = 0; h < kAwqRows / 8; ++h) {
    const int64_t kr = k0 + 64 * h + 8 * q;
    const int64_t g = bits::divide(static_cast<uint32_t>(kr), group);
    uint32_t zero, s16[8];
    awq_group_params(a, g, c, zero, s16);
    uint32_t v[8][4];
#pragma unroll
    for (int i = 0; i < 8; ++i)
      quant::convert_word(RecipeId::AwqInt4F16, true, w[8 * h + i], zero, 0u, s16, v[i]);
#pragma unroll
    for (int col = 0; col < 8; ++col) {  // column 8cl + col, rows 64h + 8q .. + 7 of the tile
      const uint32_t sel = (col % 2) ? 0x7632u : 0x5410u;
      const uint4 x = make_uint4(
          __byte_perm(v[0][col / 2], v[1][col / 2], sel), __byte_perm(v[2][col / 2], v[3][col / 2], sel),
          __byte_perm(v[4][col / 2], v[5][col / 2], sel), __byte_perm(v[6][col / 2], v[7][col / 2], sel));
      const int row = 8 * cl + col, chunk = 8 * h + q;
      tile[row * kAwqRows + (chunk ^ (cl % 8))] = x;
    }
  }
  __syncthreads();
#pragma unroll
  for (int r = 0; r < kAwqRows; ++r) {
    const int id = r * kThreads + threadIdx.x, row = id / kAwqRows, part = id % kAwqRows;
    const uint4 x = tile[row * kAwqRows + (part ^ ((row / 8) % 8))];
    __stcs(reinterpret_cast<uint4*>(a.out + (8 * c0 + row) * a.k + k0) + part, x);
  }
}

// The per-thread AWQ kernel's units of 16 rows of K a column of words, the last of 8 rows where K is not
// a multiple of 16.
__host__ __device__ constexpr int64_t awq_units(int64_t k) { return (k + 15) / 16; }

// One thread per (8 columns, 16 rows of K), storing its own 32-byte pieces. K is a multiple of 8: where
// it is not of 16 (one scale a channel, K = 24 say), the last unit holds 8 rows, and its thread reads
// and stores those alone.
__global__ void __launch_bounds__(kThreads) dequant_awq_kernel(DequantArgs a) {
  const int64_t cols = a.n / 8;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (t >= cols * awq_units(a.k)) return;
  const int64_t c = t % cols, k0 = (t / cols) * 16;
  const bool half = k0 + 16 > a.k;  // rows k0 .. k0 + 7 only
  uint32_t w[16];
#pragma unroll
  for (int i = 0; i < 16; ++i) w[i] = i < 8 || !half ? __ldcs(a.qwords + (k0 + i) * cols + c) : 0u;
  const int64_t g = k0 / a.group;  // 16 rows lie in one group
  uint32_t zero, s16[8];
  awq_group_params(a, g, c, zero, s16);
  uint32_t v[16][4];
#pragma unroll
  for (int i = 0; i < 16; ++i) quant::convert_word(RecipeId::AwqInt4F16, true, w[i], zero, 0u, s16, v[i]);
#pragma unroll
  for (int col = 0; col < 8; ++col) {
    const uint32_t sel = (col % 2) ? 0x7632u : 0x5410u;
    uint32_t o[8];
#pragma unroll
    for (int p = 0; p < 8; ++p) o[p] = __byte_perm(v[2 * p][col / 2], v[2 * p + 1][col / 2], sel);
    uint4* dst = reinterpret_cast<uint4*>(a.out + (8 * c + col) * a.k + k0);
    __stcs(dst, make_uint4(o[0], o[1], o[2], o[3]));
    if (!half) __stcs(dst + 1, make_uint4(o[4], o[5], o[6], o[7]));
  }
}

// ---- quant, groups of up to 256: sixteen elements per thread, the group's threads together -----

constexpr int kPerThread = 16;

// NF4 codes by one shared-memory lookup per value (quant::nf4_bin: the bin's boundary and the
// count below it) instead of the four-level search: about 10 instructions a value instead of 37.
// Every thread of the block calls this before its first use of the table.
__device__ __forceinline__ const quant::Nf4Bin* nf4_table() {
  __shared__ quant::Nf4Bin bins[quant::kNf4Bins];
  if (threadIdx.x < quant::kNf4Bins) bins[threadIdx.x] = quant::nf4_bin(static_cast<int>(threadIdx.x));
  __syncthreads();
  return bins;
}

// The packed codes of N values (byte j: value 2j in the high nibble, 2j + 1 in the low one); an
// all-zero block gives code 7 throughout, as quant::nf4_code_of does.
template <int N>
__device__ __forceinline__ void nf4_words(const float (&x)[N], float amax, const quant::Nf4Bin* bins,
                                          uint32_t (&words)[N / 8]) {
  const float inv = quant::nf4_inverse(amax);
#pragma unroll
  for (int w = 0; w < N / 8; ++w) words[w] = 0u;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    const float v = quant::mul_rn(x[i], inv);
    const uint32_t c = static_cast<uint32_t>(quant::nf4_code_binned(v, bins[quant::nf4_bin_of(v)]));
    words[i / 8] |= c << (4 * ((i % 8) ^ 1));  // element 2j high, 2j + 1 low, byte j
  }
  if (!(amax > 0.0f)) {
#pragma unroll
    for (int w = 0; w < N / 8; ++w) words[w] = 0x77777777u;
  }
}

template <Scheme S>
__global__ void __launch_bounds__(kThreads)
    quant_segment_kernel(quant::QuantArgs a, uint32_t* qwords, uint16_t* scales) {
  constexpr int kWords = S == Scheme::Int8Sym ? kPerThread / 4 : kPerThread / 8;  // packed words per thread
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const int64_t total = a.n * a.k / kPerThread;
  const bool live = t < total;
  const int per_group = a.group / kPerThread;  // threads of one group: 2 .. 16, aligned inside the warp
  const quant::Nf4Bin* bins = nullptr;
  if constexpr (S == Scheme::Nf4) bins = nf4_table();
  float x[kPerThread] = {};
  if (live) {
    const float4* src = reinterpret_cast<const float4*>(a.w + t * kPerThread);
#pragma unroll
    for (int i = 0; i < kPerThread / 4; ++i) {
      const float4 f = __ldcs(src + i);
      x[4 * i] = f.x, x[4 * i + 1] = f.y, x[4 * i + 2] = f.z, x[4 * i + 3] = f.w;
    }
  }
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < kPerThread; ++i) amax = quant::max_abs(amax, x[i]);
  for (int off = per_group / 2; off > 0; off /= 2) {
    const float o = __shfl_xor_sync(0xFFFFFFFFu, amax, off);
    amax = o > amax ? o : amax;
  }
  if (!live) return;
  const int64_t group = t >> (__ffs(per_group) - 1);  // per_group is a power of two
  const bool leader = (t & (per_group - 1)) == 0;
  uint32_t words[kWords] = {};
  if constexpr (S == Scheme::Nf4) {
    nf4_words<kPerThread>(x, amax, bins, words);
    if (leader) a.absmax[group] = amax;
  } else {
    constexpr float qmax = S == Scheme::Int8Sym ? 127.0f : 7.0f;
    constexpr int bits = S == Scheme::Int8Sym ? 8 : 4, per_word = 32 / bits;
    const uint16_t sh = quant::sym_scale(amax, qmax);
    const quant::SymCoder coder(quant::half_to_f32(sh), qmax);
    int codes[kPerThread];
    quant::sym_codes(coder, x, codes);
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const uint32_t code = static_cast<uint32_t>(codes[i]) & ((1u << bits) - 1u);
      words[i / per_word] |= code << (bits * (i % per_word));
    }
    if (leader) scales[group] = sh;
  }
  if constexpr (kWords == 2) {
    __stcs(reinterpret_cast<uint2*>(qwords) + t, make_uint2(words[0], words[1]));
  } else {
    __stcs(reinterpret_cast<uint4*>(qwords) + t, make_uint4(words[0], words[1], words[2], words[3]));
  }
}

// ---- quant, wider groups: one block per group, or a cluster of blocks per group -------------

// Groups up to kHoldAll are held in registers whole (a block of up to 256 threads of 4 runs each,
// the block growing with the group). Wider ones are read twice, each thread kTwiceBatch runs at a
// time with their loads issued together; the first read asks the L2 to keep the lines
// (evict_last), the second streams them out. A multiprocessor runs 1024 such threads, in blocks
// of 256, 512 or 1024 (twice_threads): the smallest whose rows in flight (a row a block) take at
// most 70% of the L2, so that the second read still finds them. Measured at K = 28672
// (notes/performance.md, q3): holding the groups 62% of the copy; reading twice one run at a
// time 89% (H100) / 67% (H200); in batches of four, kept in L2, in blocks sized to it 95% / 75%;
// with the codes by a multiply instead of a division a value (quant::SymCoder), 86% on the H200.
constexpr int kWideMax = 1024;
constexpr int kHoldAll = 8192;
constexpr int kTwiceBatch = 4;
int twice_threads(int64_t group, int sms, size_t l2_bytes) {
  for (int threads : {256, 512}) {
    const double in_flight = static_cast<double>(sms) * (kWideMax / threads) * static_cast<double>(group) * 4;
    if (in_flight <= 0.7 * static_cast<double>(l2_bytes)) return threads;
  }
  return kWideMax;
}
int wide_threads(int group) {
  const int t = (group / 8 / 4 + 31) / 32 * 32;
  return t < 64 ? 64 : (t > kWideMax ? kWideMax : t);
}
// On compute capability 9.0 a group wider than kClusterFrom is split over a cluster of up to 8
// blocks, each holding its part (at most kHoldAll values) in registers; the parts' maxima meet
// through distributed shared memory, so every value is read once. Narrower wide groups are read
// twice: measured on an H100 (notes/performance.md, q2), reading twice ran at 89% of the copy
// for K = 28672 against 74% for clusters of 4 (the blocks idle at the cluster barrier with their
// registers full), while at K = 57344 the rows in flight no longer stay in L2 (65% against 74%).
// The number of parts: the fewest that divide the group into runs of 8 no longer than
// kHoldAll; 0 where none does.
constexpr int kClusterFrom = 32768;
constexpr int kMaxParts = 8;
int cluster_parts(int64_t group) {
  for (int p = 2; p <= kMaxParts; ++p) {
    if (group % (8 * p) == 0 && group / p <= kHoldAll) return p;
  }
  return 0;
}

// A load whose line the L2 should keep for a second read soon (evict_last; compute capability 8.0
// and newer, elsewhere an ordinary load cached in L2).
__device__ __forceinline__ float4 load_keep(const float4* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  float4 v;
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  asm volatile("ld.global.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], %5;"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "l"(p), "l"(policy));
  return v;
#else
  return __ldcg(p);
#endif
}

template <Scheme S, int kHeld, bool kCluster>
__global__ void __launch_bounds__(kCluster ? kHoldAll / 32 : kWideMax)
    quant_wide_kernel(quant::QuantArgs a, uint32_t* qwords, uint16_t* scales, int parts) {
  // A thread keeps its first kHeld runs of 8 values in registers between the passes; the rest
  // it reads twice (the second time mostly from L2). With kCluster, the `parts` blocks of a
  // cluster take equal parts of one group.
  const int kThreads = static_cast<int>(blockDim.x);
  __shared__ float partial[kWideMax / 32];
  const quant::Nf4Bin* bins = nullptr;
  if constexpr (S == Scheme::Nf4) bins = nf4_table();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // Announce that this block has started; the wait before the first remote write pairs with it.
  if constexpr (kCluster) asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
#endif
  const int64_t group = blockIdx.x / parts;
  const int part = static_cast<int>(blockIdx.x % parts);
  const int64_t count8 = a.group / 8 / parts;  // in units of 8 elements
  const int64_t first8 = group * (a.group / 8) + part * count8;
  const float4* src = reinterpret_cast<const float4*>(a.w) + 2 * first8;
  // Values read once are streamed (evict first); values read twice are kept in L2 the first time.
  const auto load = [&](int64_t i, float(&x)[8], bool again_later) {
    const float4 p = again_later ? load_keep(src + 2 * i) : __ldcs(src + 2 * i);
    const float4 q = again_later ? load_keep(src + 2 * i + 1) : __ldcs(src + 2 * i + 1);
    x[0] = p.x, x[1] = p.y, x[2] = p.z, x[3] = p.w, x[4] = q.x, x[5] = q.y, x[6] = q.z, x[7] = q.w;
  };
  float held[kHeld > 0 ? kHeld : 1][8] = {};
  float amax = 0.0f;
#pragma unroll
  for (int h = 0; h < kHeld; ++h) {
    const int64_t i = threadIdx.x + static_cast<int64_t>(h) * kThreads;
    if (i < count8) load(i, held[h], false);
#pragma unroll
    for (int e = 0; e < 8; ++e) amax = quant::max_abs(amax, held[h][e]);
  }
  // The runs read twice, kBatch a thread at a time with their loads issued together (the runs
  // past the group's end are left as they are).
  constexpr int kBatch = kHeld == 0 ? kTwiceBatch : 1;
  const int64_t rest = static_cast<int64_t>(kHeld) * kThreads;
  const auto load_batch = [&](int64_t i0, float(&x)[kBatch][8], bool again_later) {
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      if (i0 + b * kThreads < count8) load(i0 + b * kThreads, x[b], again_later);
    }
  };
  for (int64_t i0 = threadIdx.x + rest; i0 < count8; i0 += kBatch * kThreads) {
    float x[kBatch][8] = {};  // zeros beyond the group leave the maximum alone
    load_batch(i0, x, true);
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
#pragma unroll
      for (int e = 0; e < 8; ++e) amax = quant::max_abs(amax, x[b][e]);
    }
  }
  for (int off = 16; off > 0; off /= 2) {
    const float o = __shfl_xor_sync(0xFFFFFFFFu, amax, off);
    amax = o > amax ? o : amax;
  }
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = amax;
  __syncthreads();
  amax = 0.0f;
  for (int i = 0; i < kThreads / 32; ++i) amax = partial[i] > amax ? partial[i] : amax;
  if constexpr (kCluster) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    // Each block's maximum goes into every block's shared memory; after one cluster barrier
    // each reads its own copy (no block touches another's memory after the barrier, so none
    // has to wait before leaving).
    __shared__ float part_max[kMaxParts];
    cg::cluster_group cluster = cg::this_cluster();
    asm volatile("barrier.cluster.wait.aligned;" ::: "memory");  // every block of the cluster has started
    if (threadIdx.x < parts) *cluster.map_shared_rank(&part_max[part], threadIdx.x) = amax;
    cluster.sync();
    for (int r = 0; r < parts; ++r) amax = part_max[r] > amax ? part_max[r] : amax;
#else
    __trap();  // the launcher clusters on compute capability 9.0 only
#endif
  }

  // Codes for the 8 values of run i.
  constexpr float qmax = S == Scheme::Int8Sym ? 127.0f : 7.0f;
  const uint16_t sh = S == Scheme::Nf4 ? 0 : quant::sym_scale(amax, qmax);
  const quant::SymCoder coder(quant::half_to_f32(sh), qmax);
  const auto emit = [&](int64_t i, const float(&x)[8]) {
    if constexpr (S == Scheme::Nf4) {
      uint32_t word[1];
      nf4_words<8>(x, amax, bins, word);
      __stcs(qwords + first8 + i, word[0]);
    } else {
      int codes[8];
      quant::sym_codes(coder, x, codes);
      if constexpr (S == Scheme::Int8Sym) {
        uint32_t lo = 0, hi = 0;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          lo |= (static_cast<uint32_t>(codes[j]) & 0xFFu) << (8 * j);
          hi |= (static_cast<uint32_t>(codes[4 + j]) & 0xFFu) << (8 * j);
        }
        __stcs(reinterpret_cast<uint2*>(qwords) + first8 + i, make_uint2(lo, hi));
      } else {
        uint32_t word = 0;
#pragma unroll
        for (int j = 0; j < 8; ++j) word |= (static_cast<uint32_t>(codes[j]) & 0xFu) << (4 * j);
        __stcs(qwords + first8 + i, word);
      }
    }
  };
#pragma unroll
  for (int h = 0; h < kHeld; ++h) {
    const int64_t i = threadIdx.x + static_cast<int64_t>(h) * kThreads;
    if (i < count8) emit(i, held[h]);
  }
  for (int64_t i0 = threadIdx.x + rest; i0 < count8; i0 += kBatch * kThreads) {
    float x[kBatch][8];
    load_batch(i0, x, false);
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      if (i0 + b * kThreads < count8) emit(i0 + b * kThreads, x[b]);
    }
  }
  if (threadIdx.x == 0 && part == 0) {
    if constexpr (S == Scheme::Nf4) {
      a.absmax[group] = amax;
    } else {
      scales[group] = sh;
    }
  }
}

// ---- permute: one thread per (column, 64-row tile), both ways ----------------------------------

// The plain side of a warp's 32 tiles is I row segments of 32 / I tiles each; `Staged` moves it
// through shared memory so that every global access of the warp is contiguous.
template <int Bits, bool Forward, FtForm Form, bool Narrow>
__global__ void __launch_bounds__(kThreads) permute_kernel(PermuteArgs a, bits::FixedDivisor per_group) {
  constexpr bool Staged = Form != FtForm::Thread;
  using T = FtTile<Bits>;
  constexpr uint32_t mask = (1u << Bits) - 1u, bias = 1u << (Bits - 1);
  constexpr int P = T::V / 4;        // 16-byte chunks per tile and side
  constexpr int kTiles = 32 / T::I;  // tiles of one row segment in a warp
  __shared__ uint4 stage[Staged ? kThreads * (P + 1) : 1];
  const int64_t tiles_k = a.k / 64;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (t >= a.n * tiles_k) return;  // whole warps only, when staged
  const int lane = threadIdx.x % 32;
  uint4* mine = stage + (threadIdx.x / 32) * 32 * (P + 1);
  const int64_t t0 = t - lane;
  int64_t tile, n, tile0 = 0, n0 = 0;  // the thread's chunk and (staged) the warp's first
  if constexpr (Staged) {
    T::template locate_warp<Narrow, Form>(t, lane, per_group, tile0, n0, tile, n);
  } else {
    T::template locate<Narrow>(t, per_group, tile, n);
  }
  // Plain chunk s of the warp in memory order: its first word, and the lane and part owning it.
  struct PlainChunk {
    int64_t word;
    int owner, part;
  };
  const auto plain_chunk = [&](int s) {
    const int nsub = s / (P * kTiles), tl = (s / P) % kTiles, part = s % P;
    int64_t row, at;
    T::template warp_piece<Form>(n0, tile0, tiles_k, nsub, tl, row, at);
    return PlainChunk{(row * a.k + at * 64) / T::E + 4 * part, tl * T::I + nsub, part};
  };
  // The 64 values of row n, columns tile*64 .. +63, as plain words, and the V words of the tile.
  const int64_t plain_at = (n * a.k + tile * 64) / T::E, ft_at = t * T::V;
  uint32_t in[T::V], out[T::V];
  if (Forward && Staged) {
#pragma unroll
    for (int i = 0; i < P; ++i) {
      const auto c = plain_chunk(i * 32 + lane);
      mine[c.owner * (P + 1) + c.part] = __ldcs(reinterpret_cast<const uint4*>(a.in + c.word));
    }
    __syncwarp();
#pragma unroll
    for (int i = 0; i < P; ++i) {
      const uint4 x = mine[lane * (P + 1) + i];
      in[4 * i] = x.x, in[4 * i + 1] = x.y, in[4 * i + 2] = x.z, in[4 * i + 3] = x.w;
    }
  } else if (Staged) {  // inverse: the FT side is the warp's contiguous run
    uint4 c[P];
    warp_load<P>(reinterpret_cast<const uint4*>(a.in + t0 * T::V), mine, c);
#pragma unroll
    for (int i = 0; i < P; ++i)
      in[4 * i] = c[i].x, in[4 * i + 1] = c[i].y, in[4 * i + 2] = c[i].z, in[4 * i + 3] = c[i].w;
  } else {
    const uint4* src = reinterpret_cast<const uint4*>(a.in + (Forward ? plain_at : ft_at));
#pragma unroll
    for (int i = 0; i < P; ++i) {
      const uint4 x = __ldcs(src + i);
      in[4 * i] = x.x, in[4 * i + 1] = x.y, in[4 * i + 2] = x.z, in[4 * i + 3] = x.w;
    }
  }
#pragma unroll
  for (int i = 0; i < T::V; ++i) out[i] = 0u;
#pragma unroll
  for (int j = 0; j < T::V; ++j) {
#pragma unroll
    for (int d = 0; d < T::E; ++d) {
      const int col =
          T::column(j, layouts::ft_slot_element(T::geom(), d));  // FT word j, slot d <-> plain column col
      if constexpr (Forward) {
        const uint32_t v = (in[col / T::E] >> (Bits * (col % T::E))) & mask;
        out[j] |= ((v + bias) & mask) << (Bits * d);
      } else {
        const uint32_t v = (in[j] >> (Bits * d)) & mask;
        out[col / T::E] |= ((v - bias) & mask) << (Bits * (col % T::E));
      }
    }
  }
  if (!Forward && Staged) {
#pragma unroll
    for (int i = 0; i < P; ++i)
      mine[lane * (P + 1) + i] = make_uint4(out[4 * i], out[4 * i + 1], out[4 * i + 2], out[4 * i + 3]);
    __syncwarp();
#pragma unroll
    for (int i = 0; i < P; ++i) {
      const auto c = plain_chunk(i * 32 + lane);
      __stcs(reinterpret_cast<uint4*>(a.out + c.word), mine[c.owner * (P + 1) + c.part]);
    }
  } else if (Staged) {  // forward: the FT side is the warp's contiguous run
    uint4 c[P];
#pragma unroll
    for (int i = 0; i < P; ++i) c[i] = make_uint4(out[4 * i], out[4 * i + 1], out[4 * i + 2], out[4 * i + 3]);
    warp_store<P>(reinterpret_cast<uint4*>(a.out + t0 * T::V), mine, c);
  } else {
    uint4* dst = reinterpret_cast<uint4*>(a.out + (Forward ? ft_at : plain_at));
#pragma unroll
    for (int i = 0; i < P; ++i)
      __stcs(dst + i, make_uint4(out[4 * i], out[4 * i + 1], out[4 * i + 2], out[4 * i + 3]));
  }
}

// Staged FT dequant blocks a multiprocessor holds at most. Their registers (32-48) and shared
// memory (32 KB) let six fit on Hopper; held to five (by unused dynamic shared memory) they ran
// 1.00-1.05x faster on the H100 and the H200 at every shape measured (four: the same within a
// few tenths). At six, the int8 -> bf16 recipe, whose narrow form needs fewer registers than
// before, ran 3% slower than before at 8192x28672 on the H200; at five it is the same
// (notes/performance.md, v10).
constexpr int kFtBlocksPerSm = 5;

// Dynamic shared memory, left unused, that keeps at most `blocks` blocks with `static_bytes` of
// static shared memory on a multiprocessor of the current device (occupancy_cap_bytes); 0 where
// fewer fit anyway by shared memory, or where it would take more than the 48 KB a launch may ask
// without opting in.
size_t occupancy_cap_pad(int blocks, size_t static_bytes) {
  const size_t need = occupancy_cap_bytes(blocks, static_bytes);
  return need <= 48 * 1024 ? need : 0;
}

// How the FT-layout kernels find a chunk's tile and column (FtTile::locate): the divisor of a
// column group's chunks, and whether every chunk index is below 2^31 (the multiply-high form).
// Narrow also divides rows of K by the group size (dequant), so K stays below 2^31 too.
struct FtIndex {
  bits::FixedDivisor chunks, group;
  bool narrow = false;
  bool fits = false;  // a column group's chunks below 2^31, as the divisor needs
};
FtIndex ft_index(int64_t n, int64_t k, int bits, int64_t group = 1) {
  constexpr int64_t kLimit = int64_t{1} << 31;
  const int64_t chunks = k / 64 * (bits == 4 ? 4 : 2);
  FtIndex ix;
  if (chunks >= kLimit) return ix;
  ix.chunks = bits::fixed_divisor(static_cast<uint32_t>(std::max<int64_t>(chunks, 1)));
  ix.narrow = n * (k / 64) < kLimit && k < kLimit;
  if (ix.narrow) ix.group = bits::fixed_divisor(static_cast<uint32_t>(std::max<int64_t>(group, 1)));
  ix.fits = true;
  return ix;
}
// FtTile::form for the width known at run time.
FtForm ft_form(int bits, int64_t n, int64_t k) {
  return bits == 4 ? FtTile<4>::form(n, k) : FtTile<8>::form(n, k);
}
// Calls go(form, narrow) with both as compile-time constants (std::integral_constant).
template <class Go>
void with_ft_form(FtForm form, bool narrow, Go&& go) {
  const auto at = [&](auto f) { narrow ? go(f, std::true_type{}) : go(f, std::false_type{}); };
  switch (form) {
    case FtForm::Thread: at(std::integral_constant<FtForm, FtForm::Thread>{}); break;
    case FtForm::Staged: at(std::integral_constant<FtForm, FtForm::Staged>{}); break;
    case FtForm::Crossing: at(std::integral_constant<FtForm, FtForm::Crossing>{}); break;
  }
}
constexpr int64_t kPlainLongestRow = int64_t{1} << 32;

std::string ft_too_long(const char* what, int64_t k) {
  return std::string(what) + " cannot run on the GPU: K = " + std::to_string(k) +
         " is beyond the FT-layout kernels (K / 64 x the interleave must stay below 2^31)";
}

}  // namespace

std::string fast_dequant(const DequantArgs& a, bool wait) {
  using R = RecipeId;
  switch (a.layout) {
    case quant::Layout::Plain: {
      // The kernel counts a row's values in 32 bits.
      if (a.k > kPlainLongestRow) {
        return "dequantize cannot run on the GPU: K = " + std::to_string(a.k) +
               " is beyond the plain-layout kernels (K up to 2^32 values a row); the CPU twin (--backend "
               "cpu) takes it";
      }
      const int64_t row_units = a.k / 8;
      const int64_t per_block = kPlainUnits * kThreads;
      const dim3 grid(static_cast<unsigned>((row_units + per_block - 1) / per_block),
                      static_cast<unsigned>(a.n < 65535 ? a.n : 65535));
      int shift = -1;  // one scale per row
      if (a.group != a.k) {
        shift = 0;
        while ((1 << shift) < a.group) ++shift;
      }
      switch (a.recipe) {
#define DQL_PLAIN(ID) \
  case R::ID: run_kernel(dequant_plain_kernel<R::ID, kPlainUnits>, grid, kThreads, 0, a, shift); break;
        DQL_PLAIN(CutlassInt4F16)
        DQL_PLAIN(CutlassInt8F16)
        DQL_PLAIN(NaiveInt4F16)
        DQL_PLAIN(NaiveInt8F16)
        DQL_PLAIN(Nf4F16)
#undef DQL_PLAIN
        default: return "internal error: no plain-layout kernel for this recipe";
      }
      break;
    }
    case quant::Layout::Ft: {
      const unsigned g = blocks_for(a.n * (a.k / 64));
      const int bits = quant::scheme_bits(a.scheme);
      const FtForm form = ft_form(bits, a.n, a.k);
      const FtIndex ix = ft_index(a.n, a.k, bits, a.group);
      if (!ix.fits) return ft_too_long("dequantize", a.k);
      const size_t pad =
          form != FtForm::Thread ? occupancy_cap_pad(kFtBlocksPerSm, kThreads * 8 * sizeof(uint4)) : 0;
      switch (a.recipe) {
#define DQL_FT(ID)                                                                                           \
  case R::ID:                                                                                                \
    with_ft_form(form, ix.narrow, [&](auto f, auto narrow) {                                                 \
      run_kernel(dequant_ft_kernel<R::ID, decltype(f)::value, decltype(narrow)::value>, g, kThreads, pad, a, \
                 ix.chunks, ix.group);                                                                       \
    });                                                                                                      \
    break;
        DQL_FT(FtInt4F16)
        DQL_FT(FtInt4Bf16)
        DQL_FT(FtUint8F16)
        DQL_FT(FtUint8Bf16)
#undef DQL_FT
        default: return "internal error: no FT-layout kernel for this recipe";
      }
      break;
    }
    case quant::Layout::Awq:
      // The tiled kernel indexes blocks and rows of K in 32 bits.
      if (const int64_t blocks = (a.n / 256) * (a.k / kAwqTileK);
          a.n % 256 == 0 && a.k % kAwqTileK == 0 && a.k < (int64_t{1} << 31) && blocks < (int64_t{1} << 31)) {
        static const cudaError_t raised = cudaFuncSetAttribute(
            dequant_awq_tiled_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kAwqSmem);
        if (raised != cudaSuccess)
          return std::string("dequantize could not be set up: ") + cudaGetErrorString(raised);
        run_kernel(dequant_awq_tiled_kernel, static_cast<unsigned>(blocks), kThreads, kAwqSmem, a,
                   kAwqSetWidth, bits::fixed_divisor(static_cast<uint32_t>(kAwqSetWidth * (a.k / kAwqTileK))),
                   bits::fixed_divisor(static_cast<uint32_t>(a.group)));
      } else {
        run_kernel(dequant_awq_kernel, blocks_for((a.n / 8) * awq_units(a.k)), kThreads, 0, a);
      }
      break;
  }
  return status("dequantize", wait);
}

namespace {

// Empty, or why the cluster launch was refused (cudaLaunchKernelEx reports that by its result).
template <Scheme S>
std::string launch_quant_wide(const quant::QuantArgs& a, uint32_t* qwords, uint16_t* scales,
                              const QuantDevice& d) {
  const auto groups = static_cast<unsigned>(a.n * (a.k / a.group));
  const int parts = a.group > kClusterFrom && d.cc >= 90 ? cluster_parts(a.group) : 0;
  if (parts > 0) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(groups * static_cast<unsigned>(parts));
    cfg.blockDim = dim3(static_cast<unsigned>(wide_threads(a.group / parts)));
    cudaLaunchAttribute cluster;
    cluster.id = cudaLaunchAttributeClusterDimension;
    cluster.val.clusterDim.x = static_cast<unsigned>(parts);
    cluster.val.clusterDim.y = 1;
    cluster.val.clusterDim.z = 1;
    cfg.attrs = &cluster;
    cfg.numAttrs = 1;
    const cudaError_t e = run_kernel_ex(cfg, quant_wide_kernel<S, 4, true>, a, qwords, scales, parts);
    if (e != cudaSuccess)
      return std::string("quantize (a cluster per group) failed on the GPU: ") + cudaGetErrorString(e);
  } else if (a.group <= kHoldAll) {
    run_kernel(quant_wide_kernel<S, 4, false>, groups, wide_threads(a.group), 0, a, qwords, scales, 1);
  } else {
    run_kernel(quant_wide_kernel<S, 0, false>, groups, twice_threads(a.group, d.sms, d.l2_bytes), 0, a,
               qwords, scales, 1);
  }
  return {};
}

}  // namespace

std::string fast_quant_plain(const quant::QuantArgs& a, uint32_t* qwords, uint16_t* scales,
                             const QuantDevice& d, bool wait) {
  // The segment kernel's groups are 2 to 16 threads of 16 values inside one warp: a power of two
  // from 32 to 256. Every other group (per channel over any K) takes the wide kernel.
  const bool wide = a.group > 256 || a.group < 32 || (a.group & (a.group - 1)) != 0;
  switch (a.scheme) {
#define DQL_QUANT(S)                                                                                         \
  case Scheme::S:                                                                                            \
    if (wide) {                                                                                              \
      if (std::string e = launch_quant_wide<Scheme::S>(a, qwords, scales, d); !e.empty()) return e;          \
    } else {                                                                                                 \
      run_kernel(quant_segment_kernel<Scheme::S>, blocks_for(a.n* a.k / kPerThread), kThreads, 0, a, qwords, \
                 scales);                                                                                    \
    }                                                                                                        \
    break;
    DQL_QUANT(Int8Sym)
    DQL_QUANT(Int4Sym)
    DQL_QUANT(Nf4)
#undef DQL_QUANT
    default: return "internal error: the fast quantizer handles int8-sym, int4-sym and nf4";
  }
  return status("quantize", wait);
}

std::string fast_permute(const PermuteArgs& a, bool forward, bool wait) {
  const unsigned g = blocks_for(a.n * (a.k / 64));
  FtForm form = ft_form(a.bits, a.n, a.k);
  // int4 forward, where warps would cross groups, stays a thread per tile: crossing measured
  // 0.98x there (0.975x at 8192x11008, 0.985x at 8192x7936 on the H200), while it took the
  // inverse 1.03-1.07x and int8 both ways 1.6x faster than a thread per tile (notes, v11).
  if (form == FtForm::Crossing && a.bits == 4 && forward) form = FtForm::Thread;
  const FtIndex ix = ft_index(a.n, a.k, a.bits);
  if (!ix.fits) return ft_too_long("permute", a.k);
  const auto launch = [&](auto bits, auto fwd) {
    with_ft_form(form, ix.narrow, [&](auto f, auto narrow) {
      run_kernel(permute_kernel<decltype(bits)::value, decltype(fwd)::value, decltype(f)::value,
                                decltype(narrow)::value>,
                 g, kThreads, 0, a, ix.chunks);
    });
  };
  using Int4 = std::integral_constant<int, 4>;
  using Int8 = std::integral_constant<int, 8>;
  if (a.bits == 4) {
    forward ? launch(Int4{}, std::true_type{}) : launch(Int4{}, std::false_type{});
  } else {
    forward ? launch(Int8{}, std::true_type{}) : launch(Int8{}, std::false_type{});
  }
  return status("permute", wait);
}

}  // namespace dql::cuda
