// The executor a recipe is written against. A recipe is one function template over an executor;
// every instruction it issues goes through a method here, which computes the value with the
// bits/ primitive (the PTX instruction on the device, the exact emulation on the host) and,
// when the recorder traces, writes the step down: PTX text, destination, value, meaning.
//
//   Exec<NoTrace>  - the fast path: names vanish, kernels inline it.
//   Exec<Tracer>   - host only (trace.hpp): every intermediate register, for explain and the GUI.
#pragma once

#include <concepts>

#include "../bits/arith.hpp"
#include "../bits/lop3.hpp"
#include "../bits/prmt.hpp"

namespace dql::recipes {

// How a register's 32 bits are read when shown.
enum class View : uint8_t {
  B32,     // raw bits
  U32,     // unsigned integer
  F16x2,   // two fp16 lanes
  BF16x2,  // two bf16 lanes
  F32,     // one fp32
  F16,     // one fp16 in the low 16 bits (a .b16 register)
};

// The PTX type name of a view, as the front ends print it.
constexpr const char* view_name(View v) {
  switch (v) {
    case View::B32: return "b32";
    case View::U32: return "u32";
    case View::F16x2: return "f16x2";
    case View::BF16x2: return "bf16x2";
    case View::F32: return "f32";
    case View::F16: return "f16";
  }
  return "b32";
}

enum class OpKind : uint8_t {
  Input,
  Shift,
  Bfe,
  Lop3,
  Prmt,
  FloatSub,
  FloatMul,
  FloatFma,
  Convert,
  Pack,
  Lookup
};

struct Reg {
  uint32_t v;
  const char* name;
  View view;
};

// An instruction operand: a register, or an immediate shown in hex or in decimal.
struct Opd {
  uint32_t v;
  const char* name;  // null for an immediate
  View view;
  bool decimal;
  DQL_HD Opd(Reg r) : v(r.v), name(r.name), view(r.view), decimal(false) {}
  DQL_HD Opd(uint32_t imm, View w = View::B32, bool dec = false)
      : v(imm), name(nullptr), view(w), decimal(dec) {}
};

DQL_HD Opd dec(uint32_t imm) { return Opd(imm, View::U32, true); }

struct NoTrace {
  static constexpr bool kTrace = false;
};

// A recorder may also say how a code-book entry is fetched (a fast kernel keeps the code book
// in the lanes of a warp); otherwise the entry comes from nf4_code_bits.
template <class R>
concept FetchesCodeBook = requires(R r, uint32_t c) {
  { r.nf4_entry(c) } -> std::convertible_to<uint32_t>;
};

template <class Rec>
struct Exec {
  Rec rec{};

#define DQL_RECORD(...)                                 \
  do {                                                  \
    if constexpr (Rec::kTrace) rec.record(__VA_ARGS__); \
  } while (0)

  DQL_HD Reg input(const char* name, uint32_t v, View w, const char* why) {
    Reg r{v, name, w};
    DQL_RECORD(OpKind::Input, "input", r, {}, 0u, why);
    return r;
  }

  // shr.u32 d, a, n
  DQL_HD Reg shr_u32(const char* d, Opd a, uint32_t n, View w, const char* why) {
    Reg r{a.v >> n, d, w};
    DQL_RECORD(OpKind::Shift, "shr.u32", r, {a, dec(n)}, 0u, why);
    return r;
  }
  // shl.b32 d, a, n
  DQL_HD Reg shl_b32(const char* d, Opd a, uint32_t n, View w, const char* why) {
    Reg r{a.v << n, d, w};
    DQL_RECORD(OpKind::Shift, "shl.b32", r, {a, dec(n)}, 0u, why);
    return r;
  }
  // shr.s32 d, a, n (arithmetic: copies the sign bit in from the left)
  DQL_HD Reg shr_s32(const char* d, Opd a, uint32_t n, View w, const char* why) {
    Reg r{static_cast<uint32_t>(static_cast<int32_t>(a.v) >> n), d, w};
    DQL_RECORD(OpKind::Shift, "shr.s32", r, {a, dec(n)}, 0u, why);
    return r;
  }
  // bfe.u32 d, a, pos, len
  DQL_HD Reg bfe_u32(const char* d, Opd a, uint32_t pos, uint32_t len, const char* why) {
    Reg r{(a.v >> pos) & ((1u << len) - 1u), d, View::U32};
    DQL_RECORD(OpKind::Bfe, "bfe.u32", r, {a, dec(pos), dec(len)}, 0u, why);
    return r;
  }
  // lop3.b32 d, a, b, c, Lut
  template <uint8_t Lut>
  DQL_HD Reg lop3(const char* d, Opd a, Opd b, Opd c, View w, const char* why) {
    Reg r{bits::lop3<Lut>(a.v, b.v, c.v), d, w};
    DQL_RECORD(OpKind::Lop3, "lop3.b32", r, {a, b, c, Opd(Lut)}, Lut, why);
    return r;
  }
  // prmt.b32 d, a, b, sel
  DQL_HD Reg prmt(const char* d, Opd a, Opd b, uint32_t sel, View w, const char* why) {
    Reg r{bits::prmt(a.v, b.v, sel), d, w};
    DQL_RECORD(OpKind::Prmt, "prmt.b32", r, {a, b, Opd(sel)}, sel, why);
    return r;
  }
  // sub.rn.f16x2 d, a, b
  DQL_HD Reg sub_f16x2(const char* d, Opd a, Opd b, const char* why) {
    Reg r{bits::sub_f16x2(a.v, b.v), d, View::F16x2};
    DQL_RECORD(OpKind::FloatSub, "sub.rn.f16x2", r, {a, as(b, View::F16x2)}, 0u, why);
    return r;
  }
  // fma.rn.f16x2 d, a, b, c
  DQL_HD Reg fma_f16x2(const char* d, Opd a, Opd b, Opd c, const char* why) {
    Reg r{bits::fma_f16x2(a.v, b.v, c.v), d, View::F16x2};
    DQL_RECORD(OpKind::FloatFma, "fma.rn.f16x2", r, {a, as(b, View::F16x2), as(c, View::F16x2)}, 0u, why);
    return r;
  }
  // fma.rn.bf16x2 d, a, b, c
  DQL_HD Reg fma_bf16x2(const char* d, Opd a, Opd b, Opd c, const char* why) {
    Reg r{bits::fma_bf16x2(a.v, b.v, c.v), d, View::BF16x2};
    DQL_RECORD(OpKind::FloatFma, "fma.rn.bf16x2", r, {a, as(b, View::BF16x2), as(c, View::BF16x2)}, 0u, why);
    return r;
  }
  // sub.rn.f32 d, a, b
  DQL_HD Reg sub_f32(const char* d, Opd a, Opd b, const char* why) {
    Reg r{bits::sub_f32(a.v, b.v), d, View::F32};
    DQL_RECORD(OpKind::FloatSub, "sub.rn.f32", r, {a, as(b, View::F32)}, 0u, why);
    return r;
  }
  // mul.rn.f32 d, a, b
  DQL_HD Reg mul_f32(const char* d, Opd a, Opd b, const char* why) {
    Reg r{bits::mul_f32(a.v, b.v), d, View::F32};
    DQL_RECORD(OpKind::FloatMul, "mul.rn.f32", r, {a, as(b, View::F32)}, 0u, why);
    return r;
  }
  // cvt.rn.f16.s32 d, a
  DQL_HD Reg cvt_f16_s32(const char* d, Opd a, const char* why) {
    Reg r{bits::cvt_f16_s32(static_cast<int32_t>(a.v)), d, View::F16};
    DQL_RECORD(OpKind::Convert, "cvt.rn.f16.s32", r, {a}, 0u, why);
    return r;
  }
  // cvt.rn.f16x2.f32 d, hi, lo
  DQL_HD Reg cvt_f16x2_f32(const char* d, Opd hi, Opd lo, const char* why) {
    Reg r{bits::cvt_f16x2_f32(hi.v, lo.v), d, View::F16x2};
    DQL_RECORD(OpKind::Convert, "cvt.rn.f16x2.f32", r, {hi, lo}, 0u, why);
    return r;
  }
  // mov.b32 d, {lo, hi}: two 16-bit registers into one 32-bit register
  DQL_HD Reg pack_b32(const char* d, Opd lo, Opd hi, View w, const char* why) {
    Reg r{bits::pack16(lo.v, hi.v), d, w};
    DQL_RECORD(OpKind::Pack, "mov.b32", r, {lo, hi}, 0u, why);
    return r;
  }
  // ld.const.f32 d, table[idx]: an entry of a 16-entry code book, whose values `entry(i)` gives.
  template <class Book>
  DQL_HD Reg lookup_f32(const char* d, const char* table, Opd idx, Book entry, const char* why) {
    uint32_t value;
    if constexpr (FetchesCodeBook<Rec>) {
      value = rec.nf4_entry(idx.v);
    } else {
      value = entry(idx.v);
    }
    Reg r{value, d, View::F32};
    DQL_RECORD(OpKind::Lookup, "ld.const.f32", r, {idx}, 0u, why, table);
    return r;
  }

#undef DQL_RECORD

 private:
  DQL_HD static Opd as(Opd o, View w) {
    if (!o.name) o.view = w;  // an immediate is read the way the instruction reads it
    return o;
  }
};

}  // namespace dql::recipes
