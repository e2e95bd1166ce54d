// Division by a launch-wide divisor (bits::divide), which the FT-layout and AWQ kernels use for
// their index arithmetic: the same function runs on the host here, and the quotient must equal
// x / d for every dividend below 2^31.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>

#include "kernels/bits/divide.hpp"

using dql::bits::divide;
using dql::bits::fixed_divisor;

namespace {

constexpr uint32_t kTop = 0x7FFFFFFFu;  // the largest dividend the kernels pass

// Dividends near every multiple of d up to `upto` (where the rounding of the multiplier would
// show first), the ends of the range, and random ones.
int64_t wrong_quotients(uint32_t d, uint32_t upto, std::mt19937& rng) {
  const auto f = fixed_divisor(d);
  int64_t wrong = 0;
  const auto check = [&](uint32_t x) { wrong += divide(x, f) != x / d; };
  for (uint64_t m = 0; m <= upto; m += d) {
    for (int64_t e = -1; e <= 1; ++e) {
      const int64_t x = static_cast<int64_t>(m) + e;
      if (x >= 0 && x <= kTop) check(static_cast<uint32_t>(x));
    }
  }
  for (uint32_t x : {0u, 1u, kTop, kTop - 1, kTop - d + 1, kTop / d * d, kTop / d * d - 1}) check(x);
  for (int i = 0; i < 4096; ++i) check(rng() & kTop);
  return wrong;
}

}  // namespace

TEST_CASE("divide: the multiply-high form equals x / d") {
  std::mt19937 rng(7);
  SUBCASE("every divisor up to 4096, near each multiple up to 2^20") {
    int64_t wrong = 0;
    for (uint32_t d = 1; d <= 4096; ++d) wrong += wrong_quotients(d, 1u << 20, rng);
    CHECK(wrong == 0);
  }
  SUBCASE("the divisors the kernels meet, near each multiple over the whole range") {
    // A column group's chunks (K / 64 x 4 or 2), AWQ sets of K tiles, group sizes, and large
    // and odd ones.
    for (uint32_t d : {448u * 4u, 128u * 4u, 96u * 2u, 2u * 224u, 64u, 128u, 1000003u, 1u << 30, 0x80000000u,
                       0x7FFFFFFFu, 0x40000001u}) {
      CAPTURE(d);
      CHECK(wrong_quotients(d, kTop, rng) == 0);
    }
  }
  SUBCASE("the multiplier and shift of a few divisors") {
    CHECK(fixed_divisor(1).shift == 0);
    CHECK(fixed_divisor(1).mul == 1);  // (0 + x) >> 0
    CHECK(fixed_divisor(64).shift == 6);
    CHECK(fixed_divisor(64).mul == 1);  // powers of two: x >> l
    CHECK(fixed_divisor(3).shift == 2);
    CHECK(fixed_divisor(3).mul == 0x55555556u);  // floor(2^32 * 1 / 3) + 1
  }
}
