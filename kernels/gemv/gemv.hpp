// Mixed-precision matrix-vector and matrix-matrix products, Y = X W^T (X: [M, K] fp16 or bf16
// activations, W: the dequantized [N, K] weight), written as per-item __host__ __device__
// pieces. The CUDA kernels and the CPU twin share every piece that decides a value: how a
// packed word becomes numbers (the magic-number recipes, or the naive per-element conversion),
// how activations are quantized on the online int8 path, and the epilogue. They differ only in
// the order of the fp32 sums (tensor cores add in an order of their own), so the two are
// compared against a float64 product within a tolerance, not bit for bit.
#pragma once

#include <cstdint>

#include "kernels/bits/arith.hpp"
#include "kernels/quant/quant.hpp"
#include "kernels/recipes/recipes.hpp"

#if !defined(__CUDA_ARCH__)
#include <cmath>
#endif

namespace dql::gemv {

// How the kernel turns weights into numbers.
//   Fast:   the magic-number recipe of the format (LOP3 / PRMT / HFMA2), no int-to-float unit.
//   Naive:  the same kernel, each element shifted out, masked and converted on its own (I2F).
//   Online: activations quantized per K block to int8, int8 x int8 -> int32 on tensor cores.
//   Cublas: the weight dequantized once to fp16 / bf16 and multiplied by cuBLAS (the baseline).
enum class Path : uint8_t { Fast, Naive, Online, Cublas };
enum class Act : uint8_t { None, Relu, Silu, Gelu };

struct Epilogue {
  Act act = Act::None;
  bool clamp = false;
  float lo = 0.0f, hi = 0.0f;  // with clamp: outputs limited to [lo, hi] after the activation
};

const char* path_name(Path p);
const char* act_name(Act a);

// ---- activations -------------------------------------------------------------------------

DQL_HD float act_to_f32(uint16_t bits, recipes::OutType t) {
  return t == recipes::OutType::F16 ? quant::half_to_f32(bits) : quant::f32_of(uint32_t{bits} << 16);
}
DQL_HD uint16_t f32_to_act(float v, recipes::OutType t) {
  if (t == recipes::OutType::F16) return quant::f32_to_half(v);
  const uint32_t b = bits::cvt_bf16x2_f32(0u, quant::bits_of_f32(v));
  return static_cast<uint16_t>(b & 0xFFFFu);
}

DQL_HD float exp_f(float x) {
#if defined(__CUDA_ARCH__)
  return expf(x);
#else
  return std::exp(x);
#endif
}
DQL_HD float tanh_f(float x) {
#if defined(__CUDA_ARCH__)
  return tanhf(x);
#else
  return std::tanh(x);
#endif
}

// The epilogue on one fp32 sum: + bias, the activation, the clamp, one rounding to the output.
DQL_HD uint16_t epilogue(float acc, float bias, const Epilogue& e, recipes::OutType t) {
  float v = acc + bias;
  switch (e.act) {
    case Act::None: break;
    case Act::Relu: v = v > 0.0f ? v : 0.0f; break;
    case Act::Silu: v = v / (1.0f + exp_f(-v)); break;
    case Act::Gelu:  // the tanh form used by GPT-style MLPs
      v = 0.5f * v * (1.0f + tanh_f(0.7978845608f * (v + 0.044715f * v * v * v)));
      break;
  }
  if (e.clamp) v = v < e.lo ? e.lo : (v > e.hi ? e.hi : v);
  return f32_to_act(v, t);
}

// ---- weights in the mixed-GEMM (FasterTransformer) layout --------------------------------

// The magic-number recipe for ft-layout words of `bits` into `t`.
DQL_HD constexpr recipes::RecipeId ft_recipe(int bits, recipes::OutType t) {
  using recipes::RecipeId;
  if (bits == 4) return t == recipes::OutType::F16 ? RecipeId::FtInt4F16 : RecipeId::FtInt4Bf16;
  return t == recipes::OutType::F16 ? RecipeId::FtUint8F16 : RecipeId::FtUint8Bf16;
}

// One ft-layout word to its signed values q (unscaled, exact in fp16 / bf16), as pairs in element
// order: pairs[r] = (e_2r low, e_2r+1 high); 4 pairs for int4, 2 for int8.
template <bool Naive>
DQL_HD void ft_word_pairs(int bits, recipes::OutType t, uint32_t word, uint32_t* pairs) {
  if constexpr (!Naive) {
    const uint32_t in[2] = {word, 0x3F800000u};
    recipes::run_plain(ft_recipe(bits, t), in, pairs);
  } else {
    const layouts::FtGeometry g{bits};
    const int e = g.per_word();
    const uint32_t mask = (1u << bits) - 1u, bias = 1u << (bits - 1);
    for (int r = 0; r < e / 2; ++r) {
      uint16_t h[2];
      for (int i = 0; i < 2; ++i) {
        const int slot = layouts::ft_element_slot(g, 2 * r + i);
        const int32_t q = static_cast<int32_t>((word >> (bits * slot)) & mask) - static_cast<int32_t>(bias);
        if (t == recipes::OutType::F16) {
          h[i] = static_cast<uint16_t>(bits::cvt_f16_s32(q));  // cvt.rn.f16.s32: one I2F per element
        } else {
          h[i] = f32_to_act(static_cast<float>(q), t);  // int -> fp32 -> bf16
        }
      }
      pairs[r] = bits::pack16(h[0], h[1]);
    }
  }
}

// ---- the online int8 path: activations quantized per K block ------------------------------

// The weights the online path reads: plain int8 in groups of 64 or 128 (its activation blocks are the
// weight's groups).
constexpr bool online_reads(quant::Layout layout, quant::Scheme scheme, int64_t group) {
  return layout == quant::Layout::Plain && scheme == quant::Scheme::Int8Sym && (group == 64 || group == 128);
}

// ---- which kernel reads a request --------------------------------------------------------

// Why no GEMV / GEMM kernel reads a request on a device that has the products it asks for, or None
// where one does. The one rule behind the backend's check (check_gemv, in the command's words) and
// the launcher's (cuda::gemv_refusal, in the kernels' words, with the device's own limits first).
enum class Refusal : uint8_t {
  None,
  NotAKernel,    // Path::Cublas: the weight is dequantized and cuBLAS multiplies
  Rows,          // M outside 1..256
  OnlineFormat,  // the online path reads plain int8 in groups of 64 or 128
  OnlineRows,    // the online path takes 1 to 16 rows
  FtGroup,       // the mixed-GEMM layout's kernels read groups of 64, 128 or one a channel
  FtShape,       // ... and N a multiple of 16, K a multiple of 128
  W8Rows,        // the W8A16 kernel takes 1 to 16 rows (the GEMM is W4A16)
  NaiveLayout,   // the naive-conversion variant reads the mixed-GEMM layout only
  NoKernel,      // no kernel reads this format
  Bf16X,         // the AWQ and NF4 kernels take fp16 X only
  AwqNf4Rows,    // the AWQ and NF4 kernels take 1 to 16 rows
  AwqShape,      // the AWQ format: N a multiple of 8, K a multiple of the group
};

constexpr Refusal refusal(quant::Layout layout, quant::Scheme scheme, int64_t group, int64_t n, int64_t k,
                          Path path, recipes::OutType dtype, int64_t m) {
  using quant::Layout;
  using quant::Scheme;
  if (path == Path::Cublas) return Refusal::NotAKernel;
  if (m < 1 || m > 256) return Refusal::Rows;
  if (path == Path::Online) {
    if (!online_reads(layout, scheme, group)) return Refusal::OnlineFormat;
    return m > 16 ? Refusal::OnlineRows : Refusal::None;
  }
  if (layout == Layout::Ft && (scheme == Scheme::Int4Sym || scheme == Scheme::Int8Sym)) {
    if (group != 64 && group != 128 && group != k) return Refusal::FtGroup;
    if (n % 16 != 0 || k % 128 != 0) return Refusal::FtShape;
    return m > 16 && scheme == Scheme::Int8Sym ? Refusal::W8Rows : Refusal::None;
  }
  if (path == Path::Naive) return Refusal::NaiveLayout;
  const bool awq = layout == Layout::Awq && scheme == Scheme::Int4Asym;
  const bool nf4 = layout == Layout::Plain && scheme == Scheme::Nf4;
  if (!awq && !nf4) return Refusal::NoKernel;
  if (dtype != recipes::OutType::F16) return Refusal::Bf16X;
  if (m > 16) return Refusal::AwqNf4Rows;
  if (awq && (group < 1 || n % 8 != 0 || k % group != 0)) return Refusal::AwqShape;
  return Refusal::None;
}

// Asymmetric int8 with an offset: a ~= scale * q + offset, q in [-128, 127]. A constant block
// gets scale 0 and q = 0.
struct ActBlock {
  float scale, offset;
};
DQL_HD ActBlock act_block_params(float lo, float hi) {
  const float scale = quant::div_rn(quant::sub_rn(hi, lo), 255.0f);
  const float offset = lo + 128.0f * scale;
  return ActBlock{scale, offset};
}
DQL_HD int act_code(float a, ActBlock b) {
  if (b.scale == 0.0f) return 0;
  float q = quant::rint_even(quant::div_rn(quant::sub_rn(a, b.offset), b.scale));
  q = q < -128.0f ? -128.0f : (q > 127.0f ? 127.0f : q);
  return static_cast<int>(q);
}

}  // namespace dql::gemv
