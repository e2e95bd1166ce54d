// Division by a number that stays fixed for a whole launch, as a multiply-high, an add and a
// shift. The multiplier (the divisor's reciprocal, rounded up) is found once on the host; on the
// device a 64-bit division is a subroutine of some 70 instructions, and a 32-bit one about 20.
//
// With l = ceil(log2 d) and m = floor(2^32 (2^l - d) / d) + 1, the quotient of x is
// (umulhi(x, m) + x) >> l, exact for every x below 2^31 (the add then cannot overflow).
#pragma once

#include <cstdint>

#include "hd.hpp"

namespace dql::bits {

struct FixedDivisor {
  uint32_t d = 1, mul = 1, shift = 0;
};

// d from 1 to 2^31.
inline FixedDivisor fixed_divisor(uint32_t d) {
  FixedDivisor f;
  f.d = d;
  f.shift = 0;
  while ((uint64_t{1} << f.shift) < d) ++f.shift;
  f.mul = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << f.shift) - d)) / d + 1);
  return f;
}

// x / f.d for x below 2^31.
DQL_HD uint32_t divide(uint32_t x, FixedDivisor f) {
#if defined(__CUDA_ARCH__)
  const uint32_t hi = __umulhi(x, f.mul);
#else
  const uint32_t hi = static_cast<uint32_t>((uint64_t{x} * f.mul) >> 32);
#endif
  return (hi + x) >> f.shift;
}

}  // namespace dql::bits
