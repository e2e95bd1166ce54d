// lop3.b32: an arbitrary bitwise function of three 32-bit operands, chosen by an 8-bit truth
// table (immLut). PTX convention: immLut = F(0xF0, 0xCC, 0xAA), so bit (4a + 2b + c) of immLut
// is the output for input bits a, b, c.
#pragma once

#include <cstddef>
#include <utility>

#include "hd.hpp"

namespace dql::bits {

// The operand patterns whose image under F is the immLut.
inline constexpr uint8_t kLop3A = 0xF0;
inline constexpr uint8_t kLop3B = 0xCC;
inline constexpr uint8_t kLop3C = 0xAA;

// Host emulation, also usable on the device: OR of the minterms the table selects.
DQL_HD uint32_t soft_lop3(uint32_t a, uint32_t b, uint32_t c, uint32_t lut) {
  uint32_t d = 0;
  for (int row = 0; row < 8; ++row) {
    if ((lut >> row) & 1u) {
      d |= ((row & 4) ? a : ~a) & ((row & 2) ? b : ~b) & ((row & 1) ? c : ~c);
    }
  }
  return d;
}

// The instruction itself on the device (immLut is an immediate, hence the template), the
// emulation on the host.
template <uint8_t Lut>
DQL_HD uint32_t lop3(uint32_t a, uint32_t b, uint32_t c) {
#if DQL_ARCH >= 500
  uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, %4;" : "=r"(d) : "r"(a), "r"(b), "r"(c), "n"(Lut));
  return d;
#else
  return soft_lop3(a, b, c, Lut);
#endif
}

namespace detail {
template <std::size_t... I>
DQL_HD uint32_t lop3_dispatch(uint32_t a, uint32_t b, uint32_t c, uint32_t lut, std::index_sequence<I...>) {
  uint32_t d = 0;
  (void)((lut == I ? (d = lop3<static_cast<uint8_t>(I)>(a, b, c), true) : false) || ...);
  return d;
}
}  // namespace detail

// A table chosen at run time (the explorer and the tests): on the device this reaches the real
// instruction through a dispatch over all 256 immediates.
DQL_HD uint32_t lop3_any(uint32_t a, uint32_t b, uint32_t c, uint32_t lut) {
#if DQL_ARCH >= 500
  return detail::lop3_dispatch(a, b, c, lut & 0xFFu, std::make_index_sequence<256>{});
#else
  return soft_lop3(a, b, c, lut & 0xFFu);
#endif
}

}  // namespace dql::bits
