// Terminal rendering of registers: bits MSB-left grouped by nibble, fp16 / bf16 / fp32 fields
// in their colours (only on a terminal), values written the shortest way that reads back exactly.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/bits/float.hpp"
#include "kernels/recipes/exec.hpp"

namespace dql::cli {

struct Style {
  bool color = false;
  std::string sign(const std::string& s) const;
  std::string exponent(const std::string& s) const;
  std::string mantissa(const std::string& s) const;
  std::string dim(const std::string& s) const;
  std::string bold(const std::string& s) const;
  std::string good(const std::string& s) const;
  std::string bad(const std::string& s) const;
  std::string nibble(int i, const std::string& s) const;  // the 8 hues of a packed int4 register
};

// A style that colours only when stdout is a terminal (and NO_COLOR is unset).
Style terminal_style();

std::string binary(uint32_t v, int width);       // MSB left, no grouping
std::string nibble_bits(uint32_t v, int width);  // "0111 0110 ..." MSB left
std::string hex32(uint32_t v);                   // "0x76543210"
std::string number(double v);                    // shortest exact decimal, "-0", "inf", "nan"

// "0 11001 0000000100" with the three fields styled.
std::string float_fields(uint32_t bits, bits::FloatFormat f, const Style& st);
// The value as a number, or "inf", "-inf", "nan".
std::string float_value(uint32_t bits, bits::FloatFormat f);

bits::FloatFormat lane_format(recipes::View v);  // fp16 for F16x2 / F16, bf16 for BF16x2, fp32 for F32
using recipes::view_name;

// One register as its view reads it, on one line: fields and value of each lane (high lane
// first, as the bits run), or the integer.
std::string register_reading(uint32_t v, recipes::View view, const Style& st);

// "1024 | 1024 (fp16x2)" for a constant whose view is a float; empty otherwise.
std::string constant_meaning(uint32_t v, recipes::View view);

}  // namespace dql::cli
