// fp16 / bf16 / fp32 fields and arithmetic against MPFR, an independent correctly rounded
// reference (precision and exponent range set to each format, subnormals emulated).
#include <doctest/doctest.h>
#include <mpfr.h>

#include <cmath>
#include <vector>

#include "kernels/bits/arith.hpp"
#include "support.hpp"

using namespace dql::bits;
using dql::test::random_u32;

namespace {

// MPFR set up as one of our formats: precision mbits + 1, exponents as IEEE has them
// (MPFR writes x = m * 2^e with m in [1/2, 1)).
class MpfrFormat {
 public:
  explicit MpfrFormat(FloatFormat f) : f_(f) {
    saved_emin_ = mpfr_get_emin();
    saved_emax_ = mpfr_get_emax();
    const int bias = fmt_bias(f);
    mpfr_set_emin(2 - bias - f.mbits);  // smallest subnormal 2^(1 - bias - mbits)
    mpfr_set_emax(bias + 1);
    for (auto* v : {&a_, &b_, &c_, &r_}) mpfr_init2(*v, f.mbits + 1);
  }
  ~MpfrFormat() {
    for (auto* v : {&a_, &b_, &c_, &r_}) mpfr_clear(*v);
    mpfr_set_emin(saved_emin_);
    mpfr_set_emax(saved_emax_);
  }
  MpfrFormat(const MpfrFormat&) = delete;
  MpfrFormat& operator=(const MpfrFormat&) = delete;

  uint32_t fma(uint32_t a, uint32_t b, uint32_t c) {
    load(a_, a), load(b_, b), load(c_, c);
    return finish(mpfr_fma(r_, a_, b_, c_, MPFR_RNDN));
  }
  uint32_t add(uint32_t a, uint32_t b) {
    load(a_, a), load(b_, b);
    return finish(mpfr_add(r_, a_, b_, MPFR_RNDN));
  }
  uint32_t sub(uint32_t a, uint32_t b) {
    load(a_, a), load(b_, b);
    return finish(mpfr_sub(r_, a_, b_, MPFR_RNDN));
  }
  uint32_t mul(uint32_t a, uint32_t b) {
    load(a_, a), load(b_, b);
    return finish(mpfr_mul(r_, a_, b_, MPFR_RNDN));
  }
  // Round a double (exactly held) into the format.
  uint32_t round(double d) {
    mpfr_t t;
    mpfr_init2(t, 64);
    mpfr_set_d(t, d, MPFR_RNDN);
    const int i = mpfr_set(r_, t, MPFR_RNDN);
    mpfr_clear(t);
    return finish(i);
  }

 private:
  FloatFormat f_;
  mpfr_exp_t saved_emin_, saved_emax_;
  mpfr_t a_, b_, c_, r_;

  void load(mpfr_t v, uint32_t bits) {
    const double d = to_double(bits, f_);
    REQUIRE(mpfr_set_d(v, d, MPFR_RNDN) == 0);  // every value of the format is exact
  }
  uint32_t finish(int ternary) {
    ternary = mpfr_check_range(r_, ternary, MPFR_RNDN);
    mpfr_subnormalize(r_, ternary, MPFR_RNDN);
    return encode(mpfr_get_d(r_, MPFR_RNDN));
  }
  // The result is representable: write its pattern with the host's own types.
  uint32_t encode(double d) const {
    if (std::isnan(d)) return fmt_canonical_nan(f_);
    if (f_.mbits == kF16.mbits && f_.ebits == kF16.ebits)
      return dql::test::bits_of_half(static_cast<_Float16>(d));
    const uint32_t f32 = dql::test::bits_of_float(static_cast<float>(d));
    if (f_.mbits == kF32.mbits) return f32;
    REQUIRE((f32 & 0xFFFFu) == 0u);
    return f32 >> 16;
  }
};

// Operands that exercise rounding: half the time uniform bit patterns, otherwise values with
// exponents in a narrow window (close magnitudes: cancellation, ties, carries) and mantissas
// that often end in zeros (exact halfway cases).
uint32_t operand(FloatFormat f, int center, int spread) {
  const uint32_t r = random_u32();
  const int width = fmt_width(f);
  const uint32_t mask = width == 32 ? 0xFFFFFFFFu : ((1u << width) - 1u);
  if (r & 1u) return random_u32() & mask;
  const int emax = static_cast<int>(fmt_exp_all_ones(f)) - 1;
  int e = center + static_cast<int>(random_u32() % static_cast<uint32_t>(2 * spread + 1)) - spread;
  e = e < 0 ? 0 : (e > emax ? emax : e);
  uint32_t m = random_u32() & ((1u << f.mbits) - 1u);
  if (r & 2u) m &= ~((1u << (random_u32() % static_cast<uint32_t>(f.mbits + 1))) - 1u);
  return bits_of(Fields{(r >> 2) & 1u, static_cast<uint32_t>(e), m}, f);
}

std::vector<uint32_t> specials(FloatFormat f) {
  const uint32_t s = fmt_sign_bit(f);
  const uint32_t maxn = fmt_inf(f) - 1u, minn = 1u << f.mbits, maxsub = minn - 1u;
  const uint32_t one = static_cast<uint32_t>(fmt_bias(f)) << f.mbits;
  std::vector<uint32_t> v = {
      0u, 1u, maxsub, minn, one, maxn, fmt_inf(f), fmt_canonical_nan(f), fmt_inf(f) | 1u};
  const size_t n = v.size();
  for (size_t i = 0; i < n; ++i) v.push_back(v[i] | s);
  return v;
}

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%x", v);
  return buf;
}

}  // namespace

TEST_CASE("fields: every fp16 and bf16 pattern decodes to the value the host's types give") {
  for (uint32_t u = 0; u < 0x10000u; ++u) {
    const Fields x = fields_of(u, kF16);
    REQUIRE(bits_of(x, kF16) == u);
    const double host = static_cast<double>(dql::test::half_of_bits(u));
    const double ours = to_double(u, kF16);
    if (std::isnan(host)) {
      REQUIRE(classify(u, kF16) == FpClass::NaN);
    } else {
      REQUIRE(ours == host);
      REQUIRE(std::signbit(ours) == std::signbit(host));
    }
    const double bf_host = static_cast<double>(dql::test::float_of_bits(u << 16));
    if (std::isnan(bf_host)) {
      REQUIRE(classify(u, kBF16) == FpClass::NaN);
    } else {
      REQUIRE(to_double(u, kBF16) == bf_host);
    }
  }
  CHECK(fields_of(0x6400u, kF16).exponent == 25u);
  CHECK(to_double(0x6400u, kF16) == 1024.0);
  CHECK(to_double(0x4300u, kBF16) == 128.0);
  CHECK(to_double(0x4B000000u, kF32) == 8388608.0);
  CHECK(classify(0x0001u, kF16) == FpClass::Subnormal);
  CHECK(classify(0x7C00u, kF16) == FpClass::Inf);
  CHECK(classify(0x7E00u, kF16) == FpClass::NaN);
}

TEST_CASE("fp16: one operand over all 2^16 patterns, against MPFR") {
  MpfrFormat m(kF16);
  const uint32_t k1024 = 0x6400u, sixteenth = 0x2C00u, m64 = 0xD400u, m72 = 0xD480u, one = 0x3C00u;
  for (uint32_t x = 0; x < 0x10000u; ++x) {
    INFO("x = ", hex(x));
    REQUIRE(soft_sub(kF16, x, k1024) == m.sub(x, k1024));
    REQUIRE(soft_fma(kF16, x, sixteenth, m64) == m.fma(x, sixteenth, m64));
    REQUIRE(soft_fma(kF16, x, sixteenth, m72) == m.fma(x, sixteenth, m72));
    REQUIRE(soft_add(kF16, x, x) == m.add(x, x));
    REQUIRE(soft_mul(kF16, x, x) == m.mul(x, x));
    REQUIRE(soft_sub(kF16, x, x) == m.sub(x, x));
    REQUIRE(soft_fma(kF16, x, x, one) == m.fma(x, x, one));
    REQUIRE(soft_fma(kF16, x, one, x ^ 0x8000u) == m.fma(x, one, x ^ 0x8000u));
  }
}

TEST_CASE("bf16: one operand over all 2^16 patterns, against MPFR") {
  MpfrFormat m(kBF16);
  const uint32_t one = 0x3F80u, m136 = 0xC308u;
  for (uint32_t x = 0; x < 0x10000u; ++x) {
    INFO("x = ", hex(x));
    REQUIRE(soft_fma(kBF16, x, one, m136) == m.fma(x, one, m136));
    REQUIRE(soft_fma(kBF16, x, x, x) == m.fma(x, x, x));
    REQUIRE(soft_mul(kBF16, x, x) == m.mul(x, x));
    REQUIRE(soft_add(kBF16, x, one) == m.add(x, one));
  }
}

TEST_CASE("fp16: millions of random pairs and triples, against MPFR") {
  MpfrFormat m(kF16);
  for (int i = 0; i < 1500000; ++i) {
    const int center = static_cast<int>(random_u32() % 31u);
    const uint32_t a = operand(kF16, center, 3), b = operand(kF16, center, 3);
    INFO("a = ", hex(a), ", b = ", hex(b));
    REQUIRE(soft_add(kF16, a, b) == m.add(a, b));
    REQUIRE(soft_sub(kF16, a, b) == m.sub(a, b));
    REQUIRE(soft_mul(kF16, a, b) == m.mul(a, b));
  }
  for (int i = 0; i < 2000000; ++i) {
    const int ea = static_cast<int>(random_u32() % 31u), eb = static_cast<int>(random_u32() % 31u);
    const uint32_t a = operand(kF16, ea, 2), b = operand(kF16, eb, 2);
    const uint32_t c = operand(kF16, ea + eb - 15, 4);  // near the product: cancellation
    INFO("a = ", hex(a), ", b = ", hex(b), ", c = ", hex(c));
    REQUIRE(soft_fma(kF16, a, b, c) == m.fma(a, b, c));
  }
}

TEST_CASE("bf16 fma and fp32 sub / mul: random operands, against MPFR") {
  {
    MpfrFormat m(kBF16);
    for (int i = 0; i < 1500000; ++i) {
      const int ea = static_cast<int>(random_u32() % 255u), eb = static_cast<int>(random_u32() % 255u);
      const uint32_t a = operand(kBF16, ea, 2), b = operand(kBF16, eb, 2);
      const uint32_t c = operand(kBF16, ea + eb - 127, 6);
      INFO("a = ", hex(a), ", b = ", hex(b), ", c = ", hex(c));
      REQUIRE(soft_fma(kBF16, a, b, c) == m.fma(a, b, c));
    }
  }
  MpfrFormat m(kF32);
  for (int i = 0; i < 1000000; ++i) {
    const int center = static_cast<int>(random_u32() % 255u);
    const uint32_t a = operand(kF32, center, 30), b = operand(kF32, center, 30);
    INFO("a = ", hex(a), ", b = ", hex(b));
    REQUIRE(soft_sub(kF32, a, b) == m.sub(a, b));
    REQUIRE(soft_mul(kF32, a, b) == m.mul(a, b));
  }
}

TEST_CASE("special values: every combination of zeros, subnormals, extremes, inf and NaN") {
  for (FloatFormat f : {kF16, kBF16, kF32}) {
    MpfrFormat m(f);
    const std::vector<uint32_t> v = specials(f);
    for (uint32_t a : v) {
      for (uint32_t b : v) {
        INFO("a = ", hex(a), ", b = ", hex(b));
        REQUIRE(soft_add(f, a, b) == m.add(a, b));
        REQUIRE(soft_sub(f, a, b) == m.sub(a, b));
        REQUIRE(soft_mul(f, a, b) == m.mul(a, b));
        for (uint32_t c : v) REQUIRE(soft_fma(f, a, b, c) == m.fma(a, b, c));
      }
    }
  }
  // The signed-zero rules the recipes rely on.
  CHECK(soft_sub(kF16, 0x6400u, 0x6400u) == 0x0000u);                           // x - x = +0
  CHECK(soft_add(kF16, 0x8000u, 0x8000u) == 0x8000u);                           // -0 + -0 = -0
  CHECK(soft_mul(kF16, 0x8000u, 0x3C00u) == 0x8000u);                           // -0 * 1 = -0
  CHECK(soft_fma(kF16, 0x7C00u, 0x0000u, 0x3C00u) == fmt_canonical_nan(kF16));  // inf * 0
}

TEST_CASE("conversions: fp32 -> fp16 and int -> fp16 round to nearest even") {
  MpfrFormat m(kF16);
  for (int i = 0; i < 1000000; ++i) {
    const uint32_t x = (i & 1) ? random_u32() : operand(kF32, 103 + static_cast<int>(random_u32() % 40u), 2);
    INFO("x = ", hex(x));
    const double d = to_double(x, kF32);
    REQUIRE(soft_cvt_f16_f32(x) == (std::isnan(d) ? fmt_canonical_nan(kF16) : m.round(d)));
  }
  for (int32_t v = -140000; v <= 140000; ++v) {
    INFO("v = ", v);
    REQUIRE(soft_cvt_f16_s32(v) == m.round(static_cast<double>(v)));
  }
  for (int i = 0; i < 100000; ++i) {
    const int32_t v = static_cast<int32_t>(random_u32());
    REQUIRE(soft_cvt_f16_s32(v) == m.round(static_cast<double>(v)));
  }
  CHECK(soft_cvt_f16x2_f32(0x3F800000u, 0xC0000000u) == 0x3C00C000u);  // {hi 1.0, lo -2.0}
}

TEST_CASE("packed lanes: lane 0 in bits 0-15, each lane rounded on its own") {
  CHECK(soft_sub_f16x2(0x64046400u, 0x64006400u) == 0x44000000u);                // {hi 1028, lo 1024} - 1024
  CHECK(soft_fma_f16x2(0x64506410u, 0x2C002C00u, 0xD400D400u) == 0x45003C00u);   // {5, 1}
  CHECK(soft_fma_bf16x2(0x43084300u, 0x3F803F80u, 0xC308C308u) == 0x0000C100u);  // {0, -8}
  CHECK(soft_add_f16x2(0x7C000001u, 0x00000001u) == 0x7C000002u);                // {inf, 2 subnormal steps}
  CHECK(soft_mul_f16x2(0x3C003C00u, 0x80000000u) == 0x80000000u);                // {-0, +0}
}
