#include "render.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>

namespace dql::cli {

using recipes::View;

namespace {
std::string wrap(bool on, const char* code, const std::string& s) {
  return on ? fmt::format("\x1b[{}m{}\x1b[0m", code, s) : s;
}
}  // namespace

std::string Style::sign(const std::string& s) const { return wrap(color, "31", s); }
std::string Style::exponent(const std::string& s) const { return wrap(color, "32", s); }
std::string Style::mantissa(const std::string& s) const { return wrap(color, "34", s); }
std::string Style::dim(const std::string& s) const { return wrap(color, "2", s); }
std::string Style::bold(const std::string& s) const { return wrap(color, "1", s); }
std::string Style::good(const std::string& s) const { return wrap(color, "32;1", s); }
std::string Style::bad(const std::string& s) const { return wrap(color, "31;1", s); }
std::string Style::nibble(int i, const std::string& s) const {
  static const char* hues[8] = {"38;5;196", "38;5;208", "38;5;220", "38;5;40",
                                "38;5;45",  "38;5;33",  "38;5;129", "38;5;201"};
  return wrap(color, hues[i & 7], s);
}

Style terminal_style() {
  Style st;
  st.color = ::isatty(STDOUT_FILENO) != 0 && std::getenv("NO_COLOR") == nullptr;
  return st;
}

std::string binary(uint32_t v, int width) {
  std::string s;
  for (int i = width - 1; i >= 0; --i) s += ((v >> i) & 1u) ? '1' : '0';
  return s;
}

std::string nibble_bits(uint32_t v, int width) {
  std::string s;
  for (int i = width - 1; i >= 0; --i) {
    s += ((v >> i) & 1u) ? '1' : '0';
    if (i % 4 == 0 && i != 0) s += ' ';
  }
  return s;
}

std::string hex32(uint32_t v) { return fmt::format("0x{:08x}", v); }

std::string number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  if (v == 0.0) return std::signbit(v) ? "-0" : "0";
  return fmt::format("{}", v);
}

std::string float_fields(uint32_t b, bits::FloatFormat f, const Style& st) {
  const bits::Fields x = bits::fields_of(b, f);
  return st.sign(binary(x.sign, 1)) + " " + st.exponent(binary(x.exponent, f.ebits)) + " " +
         st.mantissa(binary(x.mantissa, f.mbits));
}

std::string float_value(uint32_t b, bits::FloatFormat f) { return number(bits::to_double(b, f)); }

bits::FloatFormat lane_format(View v) {
  switch (v) {
    case View::BF16x2: return bits::kBF16;
    case View::F32: return bits::kF32;
    default: return bits::kF16;
  }
}

std::string register_reading(uint32_t v, View view, const Style& st) {
  switch (view) {
    case View::F16x2:
    case View::BF16x2: {
      const bits::FloatFormat f = lane_format(view);
      return fmt::format("hi {} = {:<9} lo {} = {}", float_fields(bits::hi16(v), f, st),
                         float_value(bits::hi16(v), f), float_fields(bits::lo16(v), f, st),
                         float_value(bits::lo16(v), f));
    }
    case View::F16:
      return fmt::format("{} = {}", float_fields(bits::lo16(v), bits::kF16, st),
                         float_value(bits::lo16(v), bits::kF16));
    case View::F32:
      return fmt::format("{} = {}", float_fields(v, bits::kF32, st), float_value(v, bits::kF32));
    case View::U32: return fmt::format("{} (signed {})", v, static_cast<int32_t>(v));
    case View::B32: break;
  }
  return hex32(v);
}

std::string constant_meaning(uint32_t v, View view) {
  switch (view) {
    case View::F16x2:
    case View::BF16x2: {
      const bits::FloatFormat f = lane_format(view);
      const std::string hi = float_value(bits::hi16(v), f), lo = float_value(bits::lo16(v), f);
      return fmt::format("{} = {} ({})", hex32(v), hi == lo ? hi + " in both lanes" : hi + " | " + lo,
                         view == View::F16x2 ? "fp16x2" : "bf16x2");
    }
    case View::F32: return fmt::format("{} = {} (fp32)", hex32(v), float_value(v, bits::kF32));
    default: return {};
  }
}

}  // namespace dql::cli
