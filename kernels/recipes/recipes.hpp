// Every conversion, written once as an ordered list of instructions. The same function is the
// fast path a kernel inlines (Exec<NoTrace>), the CPU twin (the same code on the host, where
// each instruction is emulated bit for bit) and the trace the explainer shows (Exec<Tracer>).
//
// Each recipe declares what it consumes (spec below): how many elements one input register
// holds, their bit width and encoding, and the register order (which logical element sits in
// nibble or byte i). Every recipe produces its elements in natural order e0, e1, ...: output
// register r holds e(2r) in its low half and e(2r+1) in its high half.
#pragma once

#include "exec.hpp"

namespace dql::recipes {

enum class RecipeId : uint8_t {
  AwqInt4F16,
  FtInt4F16,
  FtUint8F16,
  FtUint8Bf16,
  FtInt4Bf16,
  CutlassInt4F16,
  CutlassInt8F16,
  Nf4F16,
  NaiveInt4F16,
  NaiveInt8F16,
};
inline constexpr int kRecipeCount = 10;

enum class Encoding : uint8_t {
  Unsigned,  // 0 .. 2^b - 1 as stored
  Biased,    // stored value minus 2^(b-1): the +8 / +128 bias
  TwosComp,  // two's complement
  Nf4Code,   // a code into the NF4 code book, scaled by absmax
};

enum class OutType : uint8_t { F16, BF16 };

struct RecipeSpec {
  RecipeId id;
  const char* name;
  int bits;   // 4 or 8
  int elems;  // elements in one input register
  Encoding encoding;
  OutType out;
  int out_regs;      // 32-bit result registers (two elements each)
  uint8_t order[8];  // order[i]: the logical element held by nibble / byte i
  bool has_absmax;   // a second input: the fp32 block scale
};

// clang-format off
inline constexpr RecipeSpec kSpecs[kRecipeCount] = {
    {RecipeId::AwqInt4F16, "awq-int4-fp16", 4, 8, Encoding::Unsigned, OutType::F16, 4, {0, 2, 4, 6, 1, 3, 5, 7}, false},
    {RecipeId::FtInt4F16, "ft-int4-fp16", 4, 8, Encoding::Biased, OutType::F16, 4, {0, 2, 4, 6, 1, 3, 5, 7}, false},
    {RecipeId::FtUint8F16, "ft-uint8-fp16", 8, 4, Encoding::Biased, OutType::F16, 2, {0, 2, 1, 3}, false},
    {RecipeId::FtUint8Bf16, "ft-uint8-bf16", 8, 4, Encoding::Biased, OutType::BF16, 2, {0, 2, 1, 3}, false},
    {RecipeId::FtInt4Bf16, "ft-int4-bf16", 4, 8, Encoding::Biased, OutType::BF16, 4, {0, 2, 4, 6, 1, 3, 5, 7}, false},
    {RecipeId::CutlassInt4F16, "cutlass-int4-fp16", 4, 8, Encoding::TwosComp, OutType::F16, 4, {0, 1, 2, 3, 4, 5, 6, 7}, false},
    {RecipeId::CutlassInt8F16, "cutlass-int8-fp16", 8, 4, Encoding::TwosComp, OutType::F16, 2, {0, 1, 2, 3}, false},
    {RecipeId::Nf4F16, "nf4-fp16", 4, 8, Encoding::Nf4Code, OutType::F16, 4, {1, 0, 3, 2, 5, 4, 7, 6}, true},
    {RecipeId::NaiveInt4F16, "naive-int4-fp16", 4, 8, Encoding::TwosComp, OutType::F16, 4, {0, 1, 2, 3, 4, 5, 6, 7}, false},
    {RecipeId::NaiveInt8F16, "naive-int8-fp16", 8, 4, Encoding::TwosComp, OutType::F16, 2, {0, 1, 2, 3}, false},
};
// clang-format on

// Compile-time use only on the device (e.g. sizing a kernel's result array).
constexpr const RecipeSpec& spec_of(RecipeId id) { return kSpecs[static_cast<int>(id)]; }

// The same facts as kSpecs, as functions device code can call with a run-time id (the tests
// check that both agree).
DQL_HD constexpr int recipe_elems(RecipeId id) {
  switch (id) {
    case RecipeId::FtUint8F16:
    case RecipeId::FtUint8Bf16:
    case RecipeId::CutlassInt8F16:
    case RecipeId::NaiveInt8F16: return 4;
    default: return 8;
  }
}
DQL_HD constexpr int recipe_bits(RecipeId id) { return recipe_elems(id) == 4 ? 8 : 4; }
DQL_HD constexpr OutType recipe_out(RecipeId id) {
  return (id == RecipeId::FtUint8Bf16 || id == RecipeId::FtInt4Bf16) ? OutType::BF16 : OutType::F16;
}
DQL_HD constexpr Encoding recipe_encoding(RecipeId id) {
  switch (id) {
    case RecipeId::AwqInt4F16: return Encoding::Unsigned;
    case RecipeId::FtInt4F16:
    case RecipeId::FtUint8F16:
    case RecipeId::FtUint8Bf16:
    case RecipeId::FtInt4Bf16: return Encoding::Biased;
    case RecipeId::Nf4F16: return Encoding::Nf4Code;
    default: return Encoding::TwosComp;
  }
}
// The nibble or byte that holds logical element e.
DQL_HD constexpr int recipe_slot_of(RecipeId id, int e) {
  switch (id) {
    case RecipeId::AwqInt4F16:
    case RecipeId::FtInt4F16:
    case RecipeId::FtInt4Bf16: return (e % 2 == 0) ? e / 2 : 4 + e / 2;  // order 0 2 4 6 1 3 5 7
    case RecipeId::FtUint8F16:
    case RecipeId::FtUint8Bf16: return (e == 1 || e == 2) ? 3 - e : e;  // order 0 2 1 3
    case RecipeId::Nf4F16: return e ^ 1;                                // order 1 0 3 2 5 4 7 6
    default: return e;                                                  // natural
  }
}

// The NF4 code book (bitsandbytes), as fp32 bit patterns; code 7 is exactly 0.
DQL_HD constexpr uint32_t nf4_code_bits(uint32_t code) {
  switch (code & 15u) {
    case 0: return 0xBF800000u;   // -1.0
    case 1: return 0xBF3239B1u;   // -0.6961928
    case 2: return 0xBF066B30u;   // -0.5250731
    case 3: return 0xBECA32A0u;   // -0.3949175
    case 4: return 0xBE91A24Du;   // -0.2844414
    case 5: return 0xBE3D353Fu;   // -0.1847734
    case 6: return 0xBDBA7871u;   // -0.0910500
    case 7: return 0x00000000u;   //  0.0
    case 8: return 0x3DA2FAFFu;   //  0.0795803
    case 9: return 0x3E24CAE3u;   //  0.1609302
    case 10: return 0x3E7C04DDu;  //  0.2461123
    case 11: return 0x3EAD033Au;  //  0.3379152
    case 12: return 0x3EE1A4B8u;  //  0.4407098
    case 13: return 0x3F1007ABu;  //  0.5626170
    case 14: return 0x3F3913B3u;  //  0.7229568
    default: return 0x3F800000u;  //  1.0
  }
}

// ---- the magic-number fp16 path for 8 nibbles (AWQ unsigned, FasterTransformer biased) -------

template <class X>
DQL_HD void int4_magic_fp16(X& x, uint32_t src_bits, uint32_t* out, uint32_t sub_magic, uint32_t fma_bias,
                            const char* sub_why, const char* fma_why) {
  const Reg src =
      x.input("src", src_bits, View::B32, "eight 4-bit elements; nibbles hold e0 e2 e4 e6 e1 e3 e5 e7");
  const Reg top = x.shr_u32("top", src, 8, View::B32,
                            "the one shift: nibbles 2, 3, 6, 7 move down into the places the masks read");
  Reg h0 = x.template lop3<0xEA>("h0", src, 0x000F000Fu, 0x64006400u, View::F16x2,
                                 "(src & 0x000f000f) | 0x64006400: nibbles 0 and 4 become the low "
                                 "mantissa bits of 1024.0, giving 1024 + q");
  Reg h1 = x.template lop3<0xEA>("h1", src, 0x00F000F0u, 0x64006400u, View::F16x2,
                                 "(src & 0x00f000f0) | 0x64006400: nibbles 1 and 5 sit in mantissa "
                                 "bits 4-7, giving 1024 + 16q");
  Reg h2 = x.template lop3<0xEA>("h2", top, 0x000F000Fu, 0x64006400u, View::F16x2,
                                 "the same mask on the shifted word: nibbles 2 and 6, 1024 + q");
  Reg h3 =
      x.template lop3<0xEA>("h3", top, 0x00F000F0u, 0x64006400u, View::F16x2, "nibbles 3 and 7, 1024 + 16q");
  h0 = x.sub_f16x2("h0", h0, sub_magic, sub_why);
  h1 = x.fma_f16x2("h1", h1, 0x2C002C00u, fma_bias, fma_why);
  h2 = x.sub_f16x2("h2", h2, sub_magic, sub_why);
  h3 = x.fma_f16x2("h3", h3, 0x2C002C00u, fma_bias, fma_why);
  out[0] = h0.v;
  out[1] = h1.v;
  out[2] = h2.v;
  out[3] = h3.v;
}

template <class X>
DQL_HD void awq_int4_fp16(X& x, const uint32_t* in, uint32_t* out) {
  int4_magic_fp16(x, in[0], out, 0x64006400u, 0xD400D400u,
                  "subtract 1024 (0x6400): leaves the unsigned value q exactly",
                  "(1024 + 16q) * 1/16 - 64 = q in one fused multiply-add");
}

template <class X>
DQL_HD void ft_int4_fp16(X& x, const uint32_t* in, uint32_t* out) {
  int4_magic_fp16(x, in[0], out, 0x64086408u, 0xD480D480u,
                  "subtract 1032 (0x6408 = 1024 + 8): removes the magic and the +8 bias at once",
                  "(1024 + 16q) * 1/16 - 72 = q - 8: magic and bias gone in one fma");
}

// ---- FasterTransformer int4 -> bf16: bf16 has 7 mantissa bits, so every pair needs a shift --

template <class X>
DQL_HD void ft_int4_bf16(X& x, const uint32_t* in, uint32_t* out) {
  const Reg src = x.input("src", in[0], View::B32,
                          "eight 4-bit elements stored +8; nibbles hold e0 e2 e4 e6 e1 e3 e5 e7");
  Reg h0 = x.template lop3<0xEA>("h0", src, 0x000F000Fu, 0x43004300u, View::BF16x2,
                                 "(src & 0x000f000f) | 0x43004300: nibbles 0 and 4 under 128.0 "
                                 "(bf16), giving 128 + q");
  const Reg s1 = x.shr_u32("s1", src, 4, View::B32, "next nibbles down: bf16 has no room for 16q");
  Reg h1 =
      x.template lop3<0xEA>("h1", s1, 0x000F000Fu, 0x43004300u, View::BF16x2, "nibbles 1 and 5, 128 + q");
  const Reg s2 = x.shr_u32("s2", s1, 4, View::B32, "shift again");
  Reg h2 =
      x.template lop3<0xEA>("h2", s2, 0x000F000Fu, 0x43004300u, View::BF16x2, "nibbles 2 and 6, 128 + q");
  const Reg s3 = x.shr_u32("s3", s2, 4, View::B32, "shift again");
  Reg h3 =
      x.template lop3<0xEA>("h3", s3, 0x000F000Fu, 0x43004300u, View::BF16x2, "nibbles 3 and 7, 128 + q");
  const char* why = "(128 + q) * 1.0 - 136 = q - 8: fma stands in for a bf16 subtract before sm_90";
  h0 = x.fma_bf16x2("h0", h0, 0x3F803F80u, 0xC308C308u, why);
  h1 = x.fma_bf16x2("h1", h1, 0x3F803F80u, 0xC308C308u, why);
  h2 = x.fma_bf16x2("h2", h2, 0x3F803F80u, 0xC308C308u, why);
  h3 = x.fma_bf16x2("h3", h3, 0x3F803F80u, 0xC308C308u, why);
  out[0] = h0.v;
  out[1] = h1.v;
  out[2] = h2.v;
  out[3] = h3.v;
}

// ---- FasterTransformer uint8 -> fp16: PRMT tops each byte with 0x64 ----------------------------

template <class X>
DQL_HD void ft_uint8_fp16(X& x, const uint32_t* in, uint32_t* out) {
  const Reg src = x.input("src", in[0], View::B32, "four 8-bit elements stored +128; bytes hold e0 e2 e1 e3");
  Reg h0 = x.prmt("h0", src, 0x64646464u, 0x5250u, View::F16x2,
                  "bytes 0 and 2 of src, each under byte 0x64 of b: 1024 + u in both halves");
  Reg h1 = x.prmt("h1", src, 0x64646464u, 0x5351u, View::F16x2, "bytes 1 and 3 the same way");
  const char* why = "subtract 1152 (0x6480 = 1024 + 128): magic and bias gone, u - 128 exactly";
  h0 = x.sub_f16x2("h0", h0, 0x64806480u, why);
  h1 = x.sub_f16x2("h1", h1, 0x64806480u, why);
  out[0] = h0.v;
  out[1] = h1.v;
}

// ---- FasterTransformer uint8 -> bf16: through fp32, whose ulp at 2^23 is 1 --------------------

template <class X>
DQL_HD void ft_uint8_bf16(X& x, const uint32_t* in, uint32_t* out) {
  const Reg src = x.input("src", in[0], View::B32, "four 8-bit elements stored +128; bytes hold e0 e2 e1 e3");
  const char* put = "byte under 0x4B0000: the fp32 2^23 + u (2^23 has an ulp of 1)";
  Reg f0 = x.prmt("f0", src, 0x4B000000u, 0x7650u, View::F32, put);
  Reg f1 = x.prmt("f1", src, 0x4B000000u, 0x7652u, View::F32, put);
  Reg f2 = x.prmt("f2", src, 0x4B000000u, 0x7651u, View::F32, put);
  Reg f3 = x.prmt("f3", src, 0x4B000000u, 0x7653u, View::F32, put);
  const char* why = "subtract 2^23 + 128 (0x4B000080): u - 128 exactly, as fp32";
  f0 = x.sub_f32("f0", f0, 0x4B000080u, why);
  f1 = x.sub_f32("f1", f1, 0x4B000080u, why);
  f2 = x.sub_f32("f2", f2, 0x4B000080u, why);
  f3 = x.sub_f32("f3", f3, 0x4B000080u, why);
  const char* pack = "upper halves of two fp32 are their bf16 values (exact: small integers)";
  const Reg h0 = x.prmt("h0", f0, f1, 0x7632u, View::BF16x2, pack);
  const Reg h1 = x.prmt("h1", f2, f3, 0x7632u, View::BF16x2, pack);
  out[0] = h0.v;
  out[1] = h1.v;
}

// ---- CUTLASS signed int4 -> fp16, natural order: XOR does the bias ----------------------------

template <class X>
DQL_HD void cutlass_int4_fp16(X& x, const uint32_t* in, uint32_t* out) {
  const Reg src =
      x.input("src", in[0], View::B32, "eight signed 4-bit elements in natural order (e0 in nibble 0)");
  const char* dup = "byte i of src into bytes 0 and 2, zero in bytes 1 and 3";
  Reg r0 = x.prmt("r0", src, 0u, 0x4040u, View::B32, dup);
  Reg r1 = x.prmt("r1", src, 0u, 0x4141u, View::B32, dup);
  Reg r2 = x.prmt("r2", src, 0u, 0x4242u, View::B32, dup);
  Reg r3 = x.prmt("r3", src, 0u, 0x4343u, View::B32, dup);
  const char* mix =
      "(r & 0xfff0ff0f) ^ 0x64806408: low half keeps the low nibble, high half the high nibble "
      "(x16); XOR writes the exponent and flips the sign bit, i.e. adds 8";
  r0 = x.template lop3<0x6A>("r0", r0, 0xFFF0FF0Fu, 0x64806408u, View::F16x2, mix);
  r1 = x.template lop3<0x6A>("r1", r1, 0xFFF0FF0Fu, 0x64806408u, View::F16x2, mix);
  r2 = x.template lop3<0x6A>("r2", r2, 0xFFF0FF0Fu, 0x64806408u, View::F16x2, mix);
  r3 = x.template lop3<0x6A>("r3", r3, 0xFFF0FF0Fu, 0x64806408u, View::F16x2, mix);
  const char* why = "lo: (1024 + x + 8) * 1 - 1032, hi: (1024 + 16(x + 8)) / 16 - 72: both give x";
  r0 = x.fma_f16x2("r0", r0, 0x2C003C00u, 0xD480E408u, why);
  r1 = x.fma_f16x2("r1", r1, 0x2C003C00u, 0xD480E408u, why);
  r2 = x.fma_f16x2("r2", r2, 0x2C003C00u, 0xD480E408u, why);
  r3 = x.fma_f16x2("r3", r3, 0x2C003C00u, 0xD480E408u, why);
  out[0] = r0.v;
  out[1] = r1.v;
  out[2] = r2.v;
  out[3] = r3.v;
}

// ---- CUTLASS signed int8 -> fp16: PRMT sign-extends, 1536 absorbs two's complement -----------

template <class X>
DQL_HD void cutlass_int8_fp16(X& x, const uint32_t* in, uint32_t* out) {
  const Reg src =
      x.input("src", in[0], View::B32, "four signed 8-bit elements in natural order (e0 in byte 0)");
  Reg r0 = x.prmt("r0", src, src, 0x9180u, View::B32,
                  "bytes 0 and 1 widened to 16 bits; selector nibbles 8 and 9 replicate their sign");
  Reg r1 = x.prmt("r1", src, src, 0xB3A2u, View::B32, "bytes 2 and 3 widened the same way");
  const char* mix =
      "(r & 0x03ff03ff) ^ 0x66006600: the 10-bit two's complement x under 1536.0 with bit 9 "
      "flipped, which is 1536 + x";
  r0 = x.template lop3<0x6A>("r0", r0, 0x03FF03FFu, 0x66006600u, View::F16x2, mix);
  r1 = x.template lop3<0x6A>("r1", r1, 0x03FF03FFu, 0x66006600u, View::F16x2, mix);
  const char* why = "subtract 1536 (0x6600): x exactly";
  r0 = x.sub_f16x2("r0", r0, 0x66006600u, why);
  r1 = x.sub_f16x2("r1", r1, 0x66006600u, why);
  out[0] = r0.v;
  out[1] = r1.v;
}

// ---- bitsandbytes NF4: code book lookup, times the block's absmax ----------------------------

template <class X>
DQL_HD void nf4_fp16(X& x, const uint32_t* in, uint32_t* out) {
  const Reg q = x.input("q", in[0], View::B32,
                        "eight NF4 codes; byte j holds e(2j) in its high nibble, e(2j+1) in its low");
  const Reg absmax = x.input("absmax", in[1], View::F32, "the block's fp32 absmax");
  constexpr const char* names_c[8] = {"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"};
  constexpr const char* names_v[8] = {"v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7"};
  Reg v[8] = {};
  for (int e = 0; e < 8; ++e) {
    const uint32_t pos = 8u * (e / 2) + ((e % 2) ? 0u : 4u);
    const Reg c = x.bfe_u32(names_c[e], q, pos, 4,
                            (e % 2) ? "low nibble of the byte: the odd element's code"
                                    : "high nibble of the byte: the even element's code");
    v[e] = x.lookup_f32(
        names_v[e], "nf4", c, [](uint32_t i) { return nf4_code_bits(i); }, "the code book value, in [-1, 1]");
    v[e] = x.mul_f32(names_v[e], v[e], absmax, "times the block's absmax, rounded to fp32");
  }
  constexpr const char* names_h[4] = {"h0", "h1", "h2", "h3"};
  for (int r = 0; r < 4; ++r) {
    out[r] =
        x.cvt_f16x2_f32(names_h[r], v[2 * r + 1], v[2 * r], "round both products to fp16 and pack them").v;
  }
}

// ---- the baselines: shift, sign-extend, convert ----------------------------------------------

template <class X>
DQL_HD void naive_signed_fp16(X& x, uint32_t src_bits, uint32_t* out, int bits) {
  const int n = 32 / bits;
  const Reg src = x.input("src", src_bits, View::B32,
                          bits == 4 ? "eight signed 4-bit elements in natural order"
                                    : "four signed 8-bit elements in natural order");
  constexpr const char* names_t[8] = {"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7"};
  constexpr const char* names_e[8] = {"e0", "e1", "e2", "e3", "e4", "e5", "e6", "e7"};
  constexpr const char* names_h[4] = {"h0", "h1", "h2", "h3"};
  Reg e[8] = {};
  for (int i = 0; i < n; ++i) {
    Reg t = src;
    const uint32_t up = static_cast<uint32_t>(32 - bits * (i + 1));
    if (up != 0) t = x.shl_b32(names_t[i], src, up, View::B32, "move element i to the top bits");
    t = x.shr_s32(names_t[i], t, static_cast<uint32_t>(32 - bits), View::U32,
                  "arithmetic shift back down: masks the element and extends its sign");
    e[i] = x.cvt_f16_s32(names_e[i], t, "plain integer to fp16 conversion");
  }
  for (int r = 0; r < n / 2; ++r) {
    out[r] = x.pack_b32(names_h[r], e[2 * r], e[2 * r + 1], View::F16x2, "pack two halves").v;
  }
}

template <class X>
DQL_HD void naive_int4_fp16(X& x, const uint32_t* in, uint32_t* out) {
  naive_signed_fp16(x, in[0], out, 4);
}

template <class X>
DQL_HD void naive_int8_fp16(X& x, const uint32_t* in, uint32_t* out) {
  naive_signed_fp16(x, in[0], out, 8);
}

// One entry point for every recipe (what kernels and the twin dispatch through).
template <class X>
DQL_HD void run_recipe(RecipeId id, X& x, const uint32_t* in, uint32_t* out) {
  switch (id) {
    case RecipeId::AwqInt4F16: awq_int4_fp16(x, in, out); break;
    case RecipeId::FtInt4F16: ft_int4_fp16(x, in, out); break;
    case RecipeId::FtUint8F16: ft_uint8_fp16(x, in, out); break;
    case RecipeId::FtUint8Bf16: ft_uint8_bf16(x, in, out); break;
    case RecipeId::FtInt4Bf16: ft_int4_bf16(x, in, out); break;
    case RecipeId::CutlassInt4F16: cutlass_int4_fp16(x, in, out); break;
    case RecipeId::CutlassInt8F16: cutlass_int8_fp16(x, in, out); break;
    case RecipeId::Nf4F16: nf4_fp16(x, in, out); break;
    case RecipeId::NaiveInt4F16: naive_int4_fp16(x, in, out); break;
    case RecipeId::NaiveInt8F16: naive_int8_fp16(x, in, out); break;
  }
}

// The fast path: no trace.
DQL_HD void run_plain(RecipeId id, const uint32_t* in, uint32_t* out) {
  Exec<NoTrace> x;
  run_recipe(id, x, in, out);
}

}  // namespace dql::recipes
