// Binary floating-point formats (fp16, bf16, fp32) as bit patterns: field encode/decode, and a
// correctly rounded (round-to-nearest-even) fused multiply-add on which every emulated
// arithmetic instruction is built. Subnormals, signed zeros, infinities and NaN are handled as
// the GPU handles them without .ftz: NaN results are the canonical NaN of the format.
#pragma once

#include <cmath>
#include <limits>

#include "hd.hpp"

namespace dql::bits {

struct FloatFormat {
  int ebits;  // exponent field width
  int mbits;  // stored mantissa width
};

inline constexpr FloatFormat kF16{5, 10};
inline constexpr FloatFormat kBF16{8, 7};
inline constexpr FloatFormat kF32{8, 23};

DQL_HD constexpr int fmt_bias(FloatFormat f) { return (1 << (f.ebits - 1)) - 1; }
DQL_HD constexpr int fmt_width(FloatFormat f) { return 1 + f.ebits + f.mbits; }
DQL_HD constexpr uint32_t fmt_sign_bit(FloatFormat f) { return 1u << (f.ebits + f.mbits); }
DQL_HD constexpr uint32_t fmt_exp_all_ones(FloatFormat f) { return (1u << f.ebits) - 1u; }
DQL_HD constexpr uint32_t fmt_inf(FloatFormat f) { return fmt_exp_all_ones(f) << f.mbits; }
// The NaN the GPU produces for an invalid or NaN-propagating operation: all ones but the sign.
DQL_HD constexpr uint32_t fmt_canonical_nan(FloatFormat f) { return fmt_sign_bit(f) - 1u; }

// The three fields of a pattern.
struct Fields {
  uint32_t sign;
  uint32_t exponent;  // biased
  uint32_t mantissa;  // stored bits only
};

DQL_HD constexpr Fields fields_of(uint32_t bits, FloatFormat f) {
  return Fields{(bits >> (f.ebits + f.mbits)) & 1u, (bits >> f.mbits) & fmt_exp_all_ones(f),
                bits & ((1u << f.mbits) - 1u)};
}

DQL_HD constexpr uint32_t bits_of(Fields x, FloatFormat f) {
  return ((x.sign & 1u) << (f.ebits + f.mbits)) | ((x.exponent & fmt_exp_all_ones(f)) << f.mbits) |
         (x.mantissa & ((1u << f.mbits) - 1u));
}

enum class FpClass : uint8_t { Zero, Subnormal, Normal, Inf, NaN };

// A finite value as an exact dyadic number: (-1)^neg * sig * 2^exp.
struct Unpacked {
  FpClass cls;
  bool neg;
  uint64_t sig;
  int exp;
};

DQL_HD constexpr Unpacked unpack(uint32_t bits, FloatFormat f) {
  const Fields x = fields_of(bits, f);
  const bool neg = x.sign != 0;
  if (x.exponent == fmt_exp_all_ones(f)) {
    return Unpacked{x.mantissa ? FpClass::NaN : FpClass::Inf, neg, 0, 0};
  }
  if (x.exponent == 0) {
    return Unpacked{x.mantissa ? FpClass::Subnormal : FpClass::Zero, neg, x.mantissa,
                    1 - fmt_bias(f) - f.mbits};
  }
  return Unpacked{FpClass::Normal, neg, x.mantissa | (1ull << f.mbits),
                  static_cast<int>(x.exponent) - fmt_bias(f) - f.mbits};
}

DQL_HD constexpr FpClass classify(uint32_t bits, FloatFormat f) { return unpack(bits, f).cls; }

// Rounds (-1)^neg * (mag + tiny) * 2^exp to the format, ties to even, where `sticky` says that
// the exact value has nonzero bits below mag's least significant bit (0 < tiny < 1). Overflow
// gives infinity. mag must be nonzero.
DQL_HD uint32_t round_pack(FloatFormat f, bool neg, uint64_t mag, int exp, bool sticky = false) {
  const uint32_t sign = neg ? fmt_sign_bit(f) : 0u;
  const int top = 63 - leading_zeros64(mag);
  const int lead = top + exp;  // exponent of the leading bit
  const int emin = 1 - fmt_bias(f);
  const int lsb = (lead < emin ? emin : lead) - f.mbits;  // exponent of the result's last bit
  const int drop = lsb - exp;
  uint64_t q;
  if (drop <= 0) {
    q = mag << (-drop);  // exact; anything sticky lies below half an ulp
  } else if (drop > 64) {
    q = 0;  // far below half of the smallest step
  } else {
    q = drop == 64 ? 0 : (mag >> drop);
    const uint64_t rem = drop == 64 ? mag : (mag & ((1ull << drop) - 1));
    const uint64_t half = 1ull << (drop - 1);
    if (rem > half || (rem == half && (sticky || (q & 1u)))) ++q;
  }
  // With B the biased exponent just below the result's binade, (B << mbits) + q encodes both
  // normal and subnormal results and lets a carry out of the mantissa bump the exponent.
  const int64_t b = static_cast<int64_t>(lsb) + f.mbits + fmt_bias(f) - 1;
  const uint64_t magnitude = (static_cast<uint64_t>(b) << f.mbits) + q;
  if (magnitude >= fmt_inf(f)) return sign | fmt_inf(f);
  return sign | static_cast<uint32_t>(magnitude);
}

// Exact sum of two nonzero dyadic terms (each sig < 2^50), rounded once.
DQL_HD uint32_t round_sum(FloatFormat f, bool na, uint64_t sa, int ea, bool nb, uint64_t sb, int eb) {
  const int ta = 63 - leading_zeros64(sa) + ea;
  const int tb = 63 - leading_zeros64(sb) + eb;
  if (tb > ta) {  // make `a` the term with the higher leading bit
    bool tn = na;
    na = nb;
    nb = tn;
    uint64_t ts = sa;
    sa = sb;
    sb = ts;
    int te = ea;
    ea = eb;
    eb = te;
  }
  const int up = 61 - (63 - leading_zeros64(sa));
  const uint64_t big = sa << up;
  const int exp = ea - up;
  uint64_t small;
  bool sticky = false;
  if (eb >= exp) {
    small = sb << (eb - exp);  // its leading bit is at most bit 61
  } else {
    const int k = exp - eb;
    if (k >= 64) {
      small = 0;
      sticky = true;
    } else {
      small = sb >> k;
      sticky = (sb & ((1ull << k) - 1)) != 0;
    }
  }
  // When bits were lost the small term sits at least 11 bits below the big one, so the sticky
  // bit is far below the rounding position.
  if (na == nb) return round_pack(f, na, big + small, exp, sticky);
  if (big == small && !sticky) return 0u;  // exact cancellation rounds to +0
  if (big >= small) {
    if (sticky) return round_pack(f, na, big - small - 1, exp, true);
    return round_pack(f, na, big - small, exp, false);
  }
  return round_pack(f, nb, small - big, exp, false);  // only possible without lost bits
}

// a * b + c with a single rounding. Every emulated add, sub and mul reduces to this.
DQL_HD uint32_t soft_fma(FloatFormat f, uint32_t a, uint32_t b, uint32_t c) {
  const Unpacked x = unpack(a, f), y = unpack(b, f), z = unpack(c, f);
  if (x.cls == FpClass::NaN || y.cls == FpClass::NaN || z.cls == FpClass::NaN) {
    return fmt_canonical_nan(f);
  }
  const bool pneg = x.neg != y.neg;
  const bool xzero = x.cls == FpClass::Zero, yzero = y.cls == FpClass::Zero;
  if (x.cls == FpClass::Inf || y.cls == FpClass::Inf) {
    if (xzero || yzero) return fmt_canonical_nan(f);                          // inf * 0
    if (z.cls == FpClass::Inf && z.neg != pneg) return fmt_canonical_nan(f);  // inf - inf
    return (pneg ? fmt_sign_bit(f) : 0u) | fmt_inf(f);
  }
  if (z.cls == FpClass::Inf) return c;
  const bool pzero = xzero || yzero;
  const bool zzero = z.cls == FpClass::Zero;
  if (pzero && zzero) return (pneg && z.neg) ? fmt_sign_bit(f) : 0u;
  if (pzero) return c;
  const uint64_t psig = x.sig * y.sig;
  const int pexp = x.exp + y.exp;
  if (zzero) return round_pack(f, pneg, psig, pexp);
  return round_sum(f, pneg, psig, pexp, z.neg, z.sig, z.exp);
}

DQL_HD uint32_t soft_add(FloatFormat f, uint32_t a, uint32_t b) {
  return soft_fma(f, a, bits_of(Fields{0, static_cast<uint32_t>(fmt_bias(f)), 0}, f), b);
}
DQL_HD uint32_t soft_sub(FloatFormat f, uint32_t a, uint32_t b) {
  return soft_add(f, a, b ^ fmt_sign_bit(f));
}
DQL_HD uint32_t soft_mul(FloatFormat f, uint32_t a, uint32_t b) {
  return soft_fma(f, a, b, fmt_sign_bit(f));  // a*b + (-0) keeps the sign of a zero product
}

// Conversion between formats (cvt.rn), e.g. fp32 -> fp16.
DQL_HD uint32_t soft_convert(FloatFormat to, FloatFormat from, uint32_t bits) {
  const Unpacked x = unpack(bits, from);
  const uint32_t sign = x.neg ? fmt_sign_bit(to) : 0u;
  switch (x.cls) {
    case FpClass::NaN: return fmt_canonical_nan(to);
    case FpClass::Inf: return sign | fmt_inf(to);
    case FpClass::Zero: return sign;
    default: return round_pack(to, x.neg, x.sig, x.exp);
  }
}

// cvt.rn.{f16,bf16,f32}.s32
DQL_HD uint32_t soft_from_int(FloatFormat to, int32_t v) {
  if (v == 0) return 0u;
  const bool neg = v < 0;
  const uint64_t mag = neg ? static_cast<uint64_t>(-static_cast<int64_t>(v)) : static_cast<uint64_t>(v);
  return round_pack(to, neg, mag, 0);
}

// The exact value as a double (every fp16, bf16 and fp32 value is a double). Host only.
inline double to_double(uint32_t bits, FloatFormat f) {
  const Unpacked x = unpack(bits, f);
  double v = 0.0;
  switch (x.cls) {
    case FpClass::NaN: return std::numeric_limits<double>::quiet_NaN();
    case FpClass::Inf: v = std::numeric_limits<double>::infinity(); break;
    case FpClass::Zero: break;
    default: v = std::ldexp(static_cast<double>(x.sig), x.exp);
  }
  return x.neg ? -v : v;
}

// Lanes of a packed pair: the low half is the element with the lower index.
DQL_HD constexpr uint32_t lo16(uint32_t x) { return x & 0xFFFFu; }
DQL_HD constexpr uint32_t hi16(uint32_t x) { return x >> 16; }
DQL_HD constexpr uint32_t pack16(uint32_t lo, uint32_t hi) { return (lo & 0xFFFFu) | (hi << 16); }

}  // namespace dql::bits
