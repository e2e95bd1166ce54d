// Quantization schemes, packing into the real formats, and dequantization over whole matrices,
// written as per-item __host__ __device__ functions. The CUDA kernels run one item per thread;
// the CPU twin runs the very same functions over all items on every core. fp32 arithmetic is
// spelled with explicit round-to-nearest operations so both sides round identically.
//
// Weights are [N, K] row-major (output x input features); groups and blocks run along K.
#pragma once

#include <cstdint>

#include "kernels/bits/arith.hpp"
#include "kernels/bits/lop3.hpp"
#include "kernels/layouts/ft.hpp"
#include "kernels/recipes/recipes.hpp"

#if !defined(__CUDA_ARCH__)
#include <cmath>
#include <cstring>
#endif

namespace dql::quant {

enum class Scheme : uint8_t { Int8Sym, Int4Sym, Int4Asym, Nf4 };
enum class Layout : uint8_t { Plain, Awq, Ft };

DQL_HD constexpr int scheme_bits(Scheme s) { return s == Scheme::Int8Sym ? 8 : 4; }

// ---- fp32 with explicit rounding -------------------------------------------------------------

DQL_HD float f32_of(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}
DQL_HD uint32_t bits_of_f32(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}
DQL_HD float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
DQL_HD float sub_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
DQL_HD float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
// Round to the nearest integer, ties to even.
DQL_HD float rint_even(float x) {
#if defined(__CUDA_ARCH__)
  return rintf(x);
#else
  return std::nearbyint(x);
#endif
}
DQL_HD float abs_f(float x) { return x < 0.0f ? -x : x; }
DQL_HD float half_to_f32(uint32_t h) { return f32_of(bits::cvt_f32_f16(h)); }
DQL_HD uint16_t f32_to_half(float f) { return static_cast<uint16_t>(bits::cvt_f16_f32(bits_of_f32(f))); }

// ---- NF4 -------------------------------------------------------------------------------------

// Boundary between codes c and c + 1 (the midpoints of the code book, as bitsandbytes has them).
DQL_HD constexpr float nf4_threshold(int c) {
  switch (c) {
    case 0: return -0.8480964004993439f;
    case 1: return -0.6106329262256622f;
    case 2: return -0.4599952697753906f;
    case 3: return -0.33967943489551544f;
    case 4: return -0.23460740596055984f;
    case 5: return -0.13791173323988914f;
    case 6: return -0.045525018125772476f;
    case 7: return 0.03979014977812767f;
    case 8: return 0.1202552504837513f;
    case 9: return 0.2035212516784668f;
    case 10: return 0.2920137718319893f;
    case 11: return 0.3893125355243683f;
    case 12: return 0.5016634166240692f;
    case 13: return 0.6427869200706482f;
    default: return 0.8614784181118011f;
  }
}
// The code of a value already divided by absmax: the number of boundaries it is strictly
// above, so a value equal to a boundary takes the lower code (what the decision tree does).
// Found by binary search over the sorted boundaries, with each level's boundary picked by
// selects rather than a table (no divergent lookups on a GPU).
DQL_HD int nf4_code(float x) {
  int c = x > nf4_threshold(7) ? 8 : 0;
  c += x > (c ? nf4_threshold(11) : nf4_threshold(3)) ? 4 : 0;
  const float t2 = (c & 8) ? ((c & 4) ? nf4_threshold(13) : nf4_threshold(9))
                           : ((c & 4) ? nf4_threshold(5) : nf4_threshold(1));
  c += x > t2 ? 2 : 0;
  const float t1 = (c & 8) ? ((c & 4) ? ((c & 2) ? nf4_threshold(14) : nf4_threshold(12))
                                      : ((c & 2) ? nf4_threshold(10) : nf4_threshold(8)))
                           : ((c & 4) ? ((c & 2) ? nf4_threshold(6) : nf4_threshold(4))
                                      : ((c & 2) ? nf4_threshold(2) : nf4_threshold(0)));
  return c + (x > t1 ? 1 : 0);
}

// The same code with one table lookup instead of a four-level search (the CUDA quantizer's
// form; tests/test_formats.cpp holds it to nf4_code over every float in [-2, 2] and beyond).
// [-1, 1] is cut into 32 bins of 1/16. Widened by kNf4BinSlack on each side, a bin still holds
// at most one boundary (neighbouring boundaries are at least 0.079 apart), so a value's code is
// the number of boundaries below its widened bin plus one comparison with the boundary inside it
// (+inf when there is none). The slack absorbs the rounding of the bin index (under 2^-19 of a
// bin); values outside [-1, 1] land in the end bins, which hold no boundary, and NaN lands in
// bin 0 (code 0), as with the search.
struct Nf4Bin {
  float boundary;  // the boundary inside the widened bin, or +inf
  int below;       // boundaries below the widened bin
};
constexpr int kNf4Bins = 32;
constexpr float kNf4BinSlack = 1.0f / 1024.0f;
DQL_HD constexpr Nf4Bin nf4_bin(int b) {
  const float lo = b == 0 ? -3.0e38f : -1.0f + static_cast<float>(b) / 16.0f - kNf4BinSlack;
  const float hi = b == kNf4Bins - 1 ? 3.0e38f : -1.0f + static_cast<float>(b + 1) / 16.0f + kNf4BinSlack;
  Nf4Bin r{__builtin_huge_valf(), 0};
  for (int c = 0; c < 15; ++c) {
    const float t = nf4_threshold(c);
    if (t < lo) ++r.below;
    if (t >= lo && t <= hi) r.boundary = t;
  }
  return r;
}
// The bin of a value already divided by absmax: floor(16 x + 16) within [0, 31].
DQL_HD int nf4_bin_of(float x) {
#if defined(__CUDA_ARCH__)
  const float y = fminf(fmaxf(fmaf(x, 16.0f, 16.0f), 0.0f), 31.0f);
  return static_cast<int>(__float_as_uint(__fadd_rd(y, 8388608.0f)) & 31u);  // floor by the 2^23 magic
#else
  const float y = std::fmin(std::fmax(std::fma(x, 16.0f, 16.0f), 0.0f), 31.0f);
  return static_cast<int>(y);
#endif
}
DQL_HD int nf4_code_binned(float x, const Nf4Bin& bin) { return bin.below + (x > bin.boundary ? 1 : 0); }

// ---- quantize ----------------------------------------------------------------------------------

// The pieces every quantizer shares (the CPU twin's per-group loop and the CUDA kernels).
DQL_HD float sym_qmax(Scheme s) { return s == Scheme::Int8Sym ? 127.0f : 7.0f; }
// The larger magnitude, never turning +0 into -0 (so an all-zero group keeps a +0 scale).
DQL_HD float max_abs(float m, float x) { return abs_f(x) > m ? abs_f(x) : m; }
DQL_HD uint16_t sym_scale(float amax, float qmax) { return f32_to_half(div_rn(amax, qmax)); }
DQL_HD int sym_code(float w, float s, float qmax) {
  float v = (s > 0.0f && s < 65536.0f) ? rint_even(div_rn(w, s)) : 0.0f;
  v = v < -qmax - 1.0f ? -qmax - 1.0f : (v > qmax ? qmax : v);
  return static_cast<int>(v);
}
// sym_code for many values of one scale without a division per value. The quotient is estimated
// as w times the reciprocal of s (rounded once): with |w / s| below 256 the estimate lies within
// 2^-14 of the correctly rounded quotient, so wherever it is at least 2^-12 from every
// half-integer both round to the same integer. `quick` gives that integer and raises `unsure`
// for the estimates nearer a half-integer than that (about one value in 2000 of random data),
// whose codes the caller takes from sym_code. Larger quotients clamp the same either way;
// tests/test_formats.cpp holds the pair to sym_code at every half-integer boundary of every fp16
// scale.
struct SymCoder {
  float s, inv, qmax;
  bool live;  // a scale that codes values at all (sym_code gives 0 for every value otherwise)
  DQL_HD SymCoder(float scale, float q)
      : s(scale), inv(0.0f), qmax(q), live(scale > 0.0f && scale < 65536.0f) {
    if (live) inv = div_rn(1.0f, scale);
  }
  DQL_HD int quick(float w, bool& unsure) const {
    constexpr float kEdge = 0.5f - 1.0f / 4096.0f;
    const float e = mul_rn(w, inv);
    const float v = rint_even(e);
    const float d = sub_rn(e, v);  // exact
    unsure = unsure || d > kEdge || d < -kEdge;
    // Clamped as an integer (min and max, no branches); |e| stays far below 2^31 for finite w,
    // whose magnitude the scale bounds.
    const int hi = static_cast<int>(qmax);
    int k = static_cast<int>(v);
    k = k > hi ? hi : k;
    k = k < -hi - 1 ? -hi - 1 : k;
    return live ? k : 0;
  }
  DQL_HD int exact(float w) const { return sym_code(w, s, qmax); }
};
// The codes of N values of one scale: the quick ones, or all N from sym_code where any is unsure
// (one branch for N values).
template <int N>
DQL_HD void sym_codes(const SymCoder& c, const float (&w)[N], int (&code)[N]) {
  bool unsure = false;
  for (int i = 0; i < N; ++i) code[i] = c.quick(w[i], unsure);
  if (unsure) {
    for (int i = 0; i < N; ++i) code[i] = c.exact(w[i]);
  }
}
// NF4: `inv` = 1 / absmax, rounded to fp32 once per block.
DQL_HD float nf4_inverse(float amax) { return amax > 0.0f ? div_rn(1.0f, amax) : 0.0f; }
DQL_HD int nf4_code_of(float w, float amax, float inv) { return amax > 0.0f ? nf4_code(mul_rn(w, inv)) : 7; }

// ---- quantize: one group (or NF4 block) per item ---------------------------------------------

struct QuantArgs {
  Scheme scheme;
  int64_t n, k;
  int group;         // G (sym / asym) or the NF4 blocksize
  const float* w;    // [N, K]
  int8_t* codes;     // [N, K]: signed values (sym), 0..15 (asym, NF4)
  uint16_t* scales;  // [N, K / G] fp16 (sym, asym)
  uint8_t* zeros;    // [N, K / G] (asym)
  float* absmax;     // [N, K / B] (NF4)
};

DQL_HD int64_t quant_items(const QuantArgs& a) { return a.n * (a.k / a.group); }

DQL_HD void quant_group(const QuantArgs& a, int64_t item) {
  const int64_t groups = a.k / a.group;
  const int64_t row = item / groups, first = row * a.k + (item % groups) * a.group;
  const float* w = a.w + first;
  int8_t* q = a.codes + first;
  const int g = a.group;
  if (a.scheme == Scheme::Nf4) {
    float amax = 0.0f;
    for (int i = 0; i < g; ++i) amax = max_abs(amax, w[i]);
    a.absmax[item] = amax;
    const float inv = nf4_inverse(amax);
    for (int i = 0; i < g; ++i) q[i] = static_cast<int8_t>(nf4_code_of(w[i], amax, inv));
    return;
  }
  if (a.scheme == Scheme::Int4Asym) {
    float mx = w[0], mn = w[0];
    for (int i = 1; i < g; ++i) {
      mx = w[i] > mx ? w[i] : mx;
      mn = w[i] < mn ? w[i] : mn;
    }
    float range = sub_rn(mx, mn);
    range = range > 1e-5f ? range : 1e-5f;
    const uint16_t sh = f32_to_half(div_rn(range, 15.0f));
    a.scales[item] = sh;
    const float s = half_to_f32(sh);
    float z = s > 0.0f ? -rint_even(div_rn(mn, s)) : 0.0f;
    z = z < 0.0f ? 0.0f : (z > 15.0f ? 15.0f : z);
    a.zeros[item] = static_cast<uint8_t>(z);
    for (int i = 0; i < g; ++i) {
      float v = s > 0.0f ? rint_even(div_rn(w[i], s)) + z : z;
      v = v < 0.0f ? 0.0f : (v > 15.0f ? 15.0f : v);
      q[i] = static_cast<int8_t>(v);
    }
    return;
  }
  const float qmax = sym_qmax(a.scheme);
  float amax = 0.0f;
  for (int i = 0; i < g; ++i) amax = max_abs(amax, w[i]);
  const uint16_t sh = sym_scale(amax, qmax);
  a.scales[item] = sh;
  const float s = half_to_f32(sh);
  for (int i = 0; i < g; ++i) q[i] = static_cast<int8_t>(sym_code(w[i], s, qmax));
}

// ---- pack codes into 32-bit words -------------------------------------------------------------

// AWQ GEMM format: qweight int32 [K, N / 8]; nibble p of word (k, c) holds column
// 8c + (0 2 4 6 1 3 5 7)[p], so that the AWQ conversion yields columns 8c .. 8c + 7 in order.
DQL_HD constexpr int awq_column_of_nibble(int p) { return p < 4 ? 2 * p : 2 * (p - 4) + 1; }

struct PackArgs {
  Scheme scheme;
  Layout layout;  // Plain or Awq (Ft is plain packing followed by the FT permutation)
  int64_t n, k;
  int group;
  const int8_t* codes;     // [N, K]
  const uint16_t* scales;  // [N, K / G]
  const uint8_t* zeros;    // [N, K / G]
  uint32_t* qwords;
  uint16_t* scales_out;  // plain: [N, K / G]; awq / ft: [K / G, N]
  uint32_t* qzeros;      // awq: int32 [K / G, N / 8]
};

DQL_HD int64_t pack_items(const PackArgs& a) { return a.n * a.k * scheme_bits(a.scheme) / 32; }

DQL_HD void pack_word(const PackArgs& a, int64_t w) {
  uint32_t word = 0;
  if (a.layout == Layout::Awq) {
    const int64_t cols = a.n / 8, row_k = w / cols, c = w % cols;
    for (int p = 0; p < 8; ++p) {
      const int64_t col = 8 * c + awq_column_of_nibble(p);
      word |= (static_cast<uint32_t>(a.codes[col * a.k + row_k]) & 0xFu) << (4 * p);
    }
  } else if (scheme_bits(a.scheme) == 8) {
    for (int i = 0; i < 4; ++i) word |= (static_cast<uint32_t>(a.codes[4 * w + i]) & 0xFFu) << (8 * i);
  } else if (a.scheme == Scheme::Nf4) {
    for (int j = 0; j < 4; ++j) {  // byte j: element 2j in the high nibble
      const uint32_t hi = static_cast<uint32_t>(a.codes[8 * w + 2 * j]) & 0xFu;
      const uint32_t lo = static_cast<uint32_t>(a.codes[8 * w + 2 * j + 1]) & 0xFu;
      word |= ((hi << 4) | lo) << (8 * j);
    }
  } else {
    for (int i = 0; i < 8; ++i) word |= (static_cast<uint32_t>(a.codes[8 * w + i]) & 0xFu) << (4 * i);
  }
  a.qwords[w] = word;
}

// Scales (and AWQ's zeros) into the format's order; one item per group of the [N, K / G] grid.
DQL_HD void pack_params(const PackArgs& a, int64_t item) {
  const int64_t groups = a.k / a.group, row = item / groups, g = item % groups;
  if (a.layout == Layout::Plain) {
    a.scales_out[item] = a.scales[item];
    return;
  }
  a.scales_out[g * a.n + row] = a.scales[item];
  if (a.layout == Layout::Awq && row % 8 == 0) {
    uint32_t word = 0;
    for (int p = 0; p < 8; ++p) {
      word |= (static_cast<uint32_t>(a.zeros[(row + awq_column_of_nibble(p)) * groups + g]) & 0xFu)
              << (4 * p);
    }
    a.qzeros[g * (a.n / 8) + row / 8] = word;
  }
}

// ---- the mixed-GEMM permutation, one output word per item -------------------------------------

struct PermuteArgs {
  int bits;
  int64_t n, k;
  const uint32_t* in;
  uint32_t* out;
};

DQL_HD int64_t permute_items(const PermuteArgs& a) { return a.n * a.k * a.bits / 32; }

// Signed element (n, k) of a plain packed matrix (low nibble / byte first).
DQL_HD int32_t plain_element(const uint32_t* words, int bits, int64_t k_total, int64_t n, int64_t k) {
  const int64_t idx = n * k_total + k;
  const int e = 32 / bits;
  const uint32_t field = (words[idx / e] >> (bits * (idx % e))) & ((1u << bits) - 1u);
  const int32_t half = 1 << (bits - 1);
  return static_cast<int32_t>(field) - (static_cast<int32_t>(field) >= half ? 2 * half : 0);
}

// Forward: output word w of the FT layout gathers its elements from the plain matrix.
DQL_HD void ft_forward_word(const PermuteArgs& a, int64_t w) {
  const layouts::FtGeometry g{a.bits};
  const int e = g.per_word();
  const int32_t bias = 1 << (a.bits - 1);
  uint32_t word = 0;
  for (int d = 0; d < e; ++d) {
    const layouts::FtSource s = layouts::ft_source(g, w, layouts::ft_slot_element(g, d), a.k);
    const uint32_t v = static_cast<uint32_t>(plain_element(a.in, a.bits, a.k, s.n, s.k) + bias);
    word |= (v & ((1u << a.bits) - 1u)) << (a.bits * d);
  }
  a.out[w] = word;
}

// Inverse: output word w of the plain matrix gathers from the FT layout.
DQL_HD void ft_inverse_word(const PermuteArgs& a, int64_t w) {
  const layouts::FtGeometry g{a.bits};
  const int e = g.per_word();
  const int64_t idx = w * e, n = idx / a.k, k0 = idx % a.k;
  const int32_t bias = 1 << (a.bits - 1);
  uint32_t word = 0;
  for (int i = 0; i < e; ++i) {
    const layouts::FtPlace p = layouts::ft_place(g, n, k0 + i, a.k);
    const int32_t stored = static_cast<int32_t>((a.in[p.word] >> (a.bits * p.slot)) & ((1u << a.bits) - 1u));
    word |= (static_cast<uint32_t>(stored - bias) & ((1u << a.bits) - 1u)) << (a.bits * i);
  }
  a.out[w] = word;
}

// ---- dequantize: one packed word per item -----------------------------------------------------

struct DequantArgs {
  Scheme scheme;
  Layout layout;
  recipes::RecipeId recipe;
  int64_t n, k;
  int group;
  const uint32_t* qwords;
  const uint16_t* scales;  // fp16, in the format's order
  const uint32_t* qzeros;  // awq
  const float* absmax;     // nf4, [N, K / B]
  uint16_t* out;           // [N, K], fp16 or bf16 bits
};

DQL_HD int64_t dequant_items(const DequantArgs& a) { return a.n * a.k * scheme_bits(a.scheme) / 32; }

// AWQ's q - z with the zero point folded into the recipe's magic numbers: 4 instructions a word
// fewer than the recipe followed by 4 subtractions of z, and the same bits. The recipe makes
// 1024 + q (nibbles 0, 4, 2, 6) and 1024 + 16q (nibbles 1, 5, 3, 7), then takes 1024 away, or 64
// after the fma by 1/16; here it takes 1024 + z away, or 64 + z, instead. Both are exact (every
// value is an integer below 2048, and the fma rounds once a value fp16 holds), and a zero result
// is +0 either way, so the output is bit for bit the recipe's q less z. The dequant kernels take
// it (through convert_word); the tensor-core GEMV kept the two steps, which measured faster there
// at 16 rows (notes/performance.md, z1).
struct AwqZeroFold {
  uint32_t sub[2];   // 1024 + z, for pairs 0 and 2 (fp16 pairs)
  uint32_t bias[2];  // -(64 + z), for pairs 1 and 3
};

// From a group's zero word: z of its 8 channels through the recipe, then the two constants.
DQL_HD AwqZeroFold awq_zero_fold(uint32_t zero_word) {
  const uint32_t zin[2] = {zero_word, 0u};
  uint32_t z[4];
  recipes::run_plain(recipes::RecipeId::AwqInt4F16, zin, z);
  return {{bits::add_f16x2(z[0], 0x64006400u), bits::add_f16x2(z[2], 0x64006400u)},
          {bits::sub_f16x2(0xD400D400u, z[1]), bits::sub_f16x2(0xD400D400u, z[3])}};
}

// One word: out[j] holds channels 2j, 2j + 1 less their zero points (fp16 pairs). The steps are
// recipes::int4_magic_fp16's with a constant per pair; written out here because passing the
// constants through it changed the SASS of kernels that use the recipe (the AWQ GEMV's rings, four
// Hopper GEMMs), which were measured and tested as they are.
DQL_HD void awq_word_less_zero(uint32_t word, const AwqZeroFold& f, uint32_t* out) {
  const uint32_t top = word >> 8;
  out[0] = bits::sub_f16x2(bits::lop3<0xEA>(word, 0x000F000Fu, 0x64006400u), f.sub[0]);
  out[1] = bits::fma_f16x2(bits::lop3<0xEA>(word, 0x00F000F0u, 0x64006400u), 0x2C002C00u, f.bias[0]);
  out[2] = bits::sub_f16x2(bits::lop3<0xEA>(top, 0x000F000Fu, 0x64006400u), f.sub[1]);
  out[3] = bits::fma_f16x2(bits::lop3<0xEA>(top, 0x00F000F0u, 0x64006400u), 0x2C002C00u, f.bias[1]);
}

// One packed word through the recipe, times the scales s16[i] of its elements, rounded once to
// the output type; for the AWQ layout (whose one recipe is awq-int4-fp16) the recipe less the
// zero points, folded into its magic numbers (awq_word_less_zero). v[r] holds elements 2r and
// 2r + 1. The one definition of the value every dequant kernel writes.
// `Rec` lets a kernel fetch NF4 code-book entries its own way (the same values).
template <class Rec = recipes::NoTrace>
DQL_HD void convert_word(recipes::RecipeId recipe, bool awq, uint32_t word, uint32_t zero_word,
                         uint32_t absmax_bits, const uint32_t* s16, uint32_t* v, Rec rec = {}) {
  uint32_t q[4];
  if (awq) {
    awq_word_less_zero(word, awq_zero_fold(zero_word), q);  // the AWQ recipe's bits less z
  } else {
    const uint32_t in[2] = {word, absmax_bits};
    recipes::Exec<Rec> x{rec};
    recipes::run_recipe(recipe, x, in, q);
  }
  const int e = recipes::recipe_elems(recipe);
  for (int r = 0; r < e / 2; ++r) {
    if (recipe == recipes::RecipeId::Nf4F16) {
      v[r] = q[r];  // the recipe already scaled by absmax
    } else if (recipes::recipe_out(recipe) == recipes::OutType::F16) {
      v[r] = bits::mul_f16x2(q[r], bits::pack16(s16[2 * r], s16[2 * r + 1]));
    } else {  // bf16: the exact product in fp32, rounded once to bf16
      const uint32_t lo = bits::mul_f32(bits::lo16(q[r]) << 16, bits::cvt_f32_f16(s16[2 * r]));
      const uint32_t hi = bits::mul_f32(bits::hi16(q[r]) << 16, bits::cvt_f32_f16(s16[2 * r + 1]));
      v[r] = bits::cvt_bf16x2_f32(hi, lo);
    }
  }
}

DQL_HD void dequant_word(const DequantArgs& a, int64_t w) {
  const int e = recipes::recipe_elems(a.recipe);
  const int64_t groups = a.k / a.group;
  uint32_t absmax = 0x3F800000u, zero = 0u;
  int64_t row[8], col[8];  // where output element i goes
  uint32_t s16[8] = {};    // its scale (fp16 bits)
  if (a.layout == Layout::Awq) {
    const int64_t cols = a.n / 8, kk = w / cols, c = w % cols;
    for (int i = 0; i < 8; ++i) {
      row[i] = 8 * c + i, col[i] = kk;
      s16[i] = a.scales[(kk / a.group) * a.n + row[i]];
    }
    zero = a.qzeros[(kk / a.group) * cols + c];
  } else if (a.layout == Layout::Ft) {
    const layouts::FtGeometry g{scheme_bits(a.scheme)};
    for (int i = 0; i < e; ++i) {
      const layouts::FtSource s = layouts::ft_source(g, w, i, a.k);
      row[i] = s.n, col[i] = s.k;
      s16[i] = a.scales[(s.k / a.group) * a.n + s.n];
    }
  } else {
    const int64_t idx = w * e, n = idx / a.k, k0 = idx % a.k;
    for (int i = 0; i < e; ++i) {
      row[i] = n, col[i] = k0 + i;
      if (a.scheme != Scheme::Nf4) s16[i] = a.scales[n * groups + k0 / a.group];
    }
    if (a.scheme == Scheme::Nf4) absmax = bits_of_f32(a.absmax[n * groups + k0 / a.group]);
  }
  uint32_t v[4];
  convert_word(a.recipe, a.layout == Layout::Awq, a.qwords[w], zero, absmax, s16, v);
  for (int i = 0; i < e; ++i) {
    a.out[row[i] * a.k + col[i]] =
        static_cast<uint16_t>((i % 2) ? bits::hi16(v[i / 2]) : bits::lo16(v[i / 2]));
  }
}

}  // namespace dql::quant
