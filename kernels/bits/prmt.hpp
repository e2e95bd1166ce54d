// prmt.b32{.mode} d, a, b, c: picks bytes out of the 64-bit pair {b, a} (byte 0 = a's least
// significant byte, byte 7 = b's most significant byte).
//
// Generic mode: selector nibble i (c bits 4i+3..4i) chooses destination byte i; its low three
// bits name the source byte b0..b7 and its msb asks for the sign of that byte (bit 7) to be
// replicated over all eight bits. The six special modes use only c[1:0], the same for every
// destination byte.
#pragma once

#include "hd.hpp"

namespace dql::bits {

enum class PrmtMode : uint8_t { Generic, F4E, B4E, RC8, ECL, ECR, RC16 };

// Source byte (0..7) feeding destination byte i in a special mode, for selector s = c[1:0].
DQL_HD uint32_t prmt_mode_source(PrmtMode mode, uint32_t i, uint32_t s) {
  switch (mode) {
    case PrmtMode::F4E: return i + s;                      // forward 4 extract
    case PrmtMode::B4E: return (s - i) & 7u;               // backward 4 extract
    case PrmtMode::RC8: return s;                          // replicate byte s
    case PrmtMode::ECL: return i > s ? i : s;              // edge clamp left
    case PrmtMode::ECR: return i < s ? i : s;              // edge clamp right
    case PrmtMode::RC16: return 2u * (s & 1u) + (i & 1u);  // replicate 16-bit half s&1
    case PrmtMode::Generic: break;
  }
  return i;
}

DQL_HD uint32_t soft_prmt(uint32_t a, uint32_t b, uint32_t c, PrmtMode mode = PrmtMode::Generic) {
  const uint64_t pool = (static_cast<uint64_t>(b) << 32) | a;
  uint32_t d = 0;
  for (uint32_t i = 0; i < 4; ++i) {
    uint32_t byte;
    if (mode == PrmtMode::Generic) {
      const uint32_t sel = (c >> (4 * i)) & 0xFu;
      byte = static_cast<uint32_t>(pool >> (8 * (sel & 7u))) & 0xFFu;
      if (sel & 8u) byte = (byte & 0x80u) ? 0xFFu : 0x00u;
    } else {
      byte = static_cast<uint32_t>(pool >> (8 * prmt_mode_source(mode, i, c & 3u))) & 0xFFu;
    }
    d |= byte << (8 * i);
  }
  return d;
}

DQL_HD uint32_t prmt(uint32_t a, uint32_t b, uint32_t c, PrmtMode mode = PrmtMode::Generic) {
#if DQL_ARCH >= 200
  uint32_t d;
  switch (mode) {
    case PrmtMode::Generic: asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c)); break;
    case PrmtMode::F4E: asm("prmt.b32.f4e %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c)); break;
    case PrmtMode::B4E: asm("prmt.b32.b4e %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c)); break;
    case PrmtMode::RC8: asm("prmt.b32.rc8 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c)); break;
    case PrmtMode::ECL: asm("prmt.b32.ecl %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c)); break;
    case PrmtMode::ECR: asm("prmt.b32.ecr %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c)); break;
    case PrmtMode::RC16: asm("prmt.b32.rc16 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c)); break;
    default: d = 0; break;
  }
  return d;
#else
  return soft_prmt(a, b, c, mode);
#endif
}

}  // namespace dql::bits
