#include "parse.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace dql::front {

std::string_view trim_spaces(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

Parsed<uint32_t> parse_hex(std::string_view text, std::string_view what, int max_digits) {
  std::string_view s = trim_spaces(text);
  if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  const std::string example = max_digits >= 8 ? "0x76543210" : max_digits >= 4 ? "0x5250" : "0x1";
  uint64_t v = 0;
  int digits = 0;
  for (char c : s) {
    if (c == '_' || c == ' ') continue;
    if (!std::isxdigit(static_cast<unsigned char>(c))) {
      return fmt::format("{} '{}' is not a hex number: '{}' is not a hex digit (use 0-9 and a-f, e.g. {})",
                         what, text, c, example);
    }
    ++digits;
    if (digits > max_digits) {
      return fmt::format("{} '{}' has more than {} hex digits: it must fit in {} bits (e.g. {})", what, text,
                         max_digits, 4 * max_digits, example);
    }
    v = (v << 4) | static_cast<uint64_t>(std::isdigit(static_cast<unsigned char>(c))
                                             ? c - '0'
                                             : std::tolower(static_cast<unsigned char>(c)) - 'a' + 10);
  }
  if (digits == 0) {
    return fmt::format("{} is empty: give up to {} hex digits, e.g. {}", what, max_digits, example);
  }
  return static_cast<uint32_t>(v);
}

Parsed<std::pair<int64_t, int64_t>> parse_shape(std::string_view text, std::string_view what) {
  const std::string s(text);
  const size_t x = s.find_first_of("xX,");
  try {
    if (x == std::string::npos) throw std::invalid_argument("");
    size_t used = 0;
    const long long n = std::stoll(s.substr(0, x), &used);
    if (used != x) throw std::invalid_argument("");
    const long long k = std::stoll(s.substr(x + 1), &used);
    if (used != s.size() - x - 1 || n < 1 || k < 1) throw std::invalid_argument("");
    // Every size taken from the shape (values, bytes of the widest type) then fits 64 bits.
    constexpr long long kMostValues = 1LL << 59;
    if (n > kMostValues / k) {
      return fmt::format("{} '{}' holds more values than any memory does: N x K must stay below 2^59", what,
                         text);
    }
    return std::pair<int64_t, int64_t>{n, k};
  } catch (const std::out_of_range&) {
    return fmt::format(
        "{} '{}' has a size too large for 64 bits: N and K are positive whole numbers with N x K below 2^59",
        what, text);
  } catch (const std::exception&) {
    return fmt::format("{} '{}' is not a shape: write NxK with positive integers, e.g. 4096x4096", what,
                       text);
  }
}

std::vector<std::string> split_commas(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    out.emplace_back(
        text.substr(start, comma == std::string_view::npos ? text.size() - start : comma - start));
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

std::optional<recipes::OutType> out_type_named(std::string_view name) {
  if (name == "fp16") return recipes::OutType::F16;
  if (name == "bf16") return recipes::OutType::BF16;
  return std::nullopt;
}

Parsed<std::vector<std::pair<int64_t, int64_t>>> parse_shape_list(std::string_view text,
                                                                  std::string_view what) {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const std::string& one : split_commas(text)) {
    auto p = parse_shape(one, what);
    if (!ok(p)) return std::get<1>(p);
    out.push_back(std::get<0>(p));
  }
  return out;
}

Parsed<std::vector<int64_t>> parse_int_list(std::string_view text, std::string_view what, int64_t lo,
                                            int64_t hi) {
  std::vector<int64_t> out;
  for (const std::string& one : split_commas(text)) {
    size_t used = 0;
    long long v = 0;
    bool too_long = false;
    try {
      v = std::stoll(one, &used);
    } catch (const std::out_of_range&) {
      too_long = true;
      used = one.size();
    } catch (const std::exception&) {
      used = 0;
    }
    if (too_long) {
      return fmt::format("{} '{}': {} is out of range; each number must be from {} to {}", what, text, one,
                         lo, hi);
    }
    if (one.empty() || used != one.size()) {
      return fmt::format(
          "{} '{}': '{}' is not a whole number; give numbers from {} to {} separated by commas, "
          "e.g. 1,4,16",
          what, text, one, lo, hi);
    }
    if (v < lo || v > hi) {
      return fmt::format("{} '{}': {} is out of range; each number must be from {} to {}", what, text, v, lo,
                         hi);
    }
    out.push_back(v);
  }
  return out;
}

Parsed<int64_t> parse_int(std::string_view text, std::string_view what, int64_t lo, int64_t hi) {
  const std::string s(text);
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(s, &used);
  } catch (const std::out_of_range&) {
    return fmt::format("{} '{}' is out of range: give a whole number from {} to {}", what, text, lo, hi);
  } catch (const std::exception&) {
    used = 0;
  }
  if (s.empty() || used != s.size()) {
    return fmt::format("{} '{}' is not a whole number: give one from {} to {}", what, text, lo, hi);
  }
  if (v < lo || v > hi) {
    return fmt::format("{} '{}' is out of range: give a whole number from {} to {}", what, text, lo, hi);
  }
  return static_cast<int64_t>(v);
}

Parsed<double> parse_positive(std::string_view text, std::string_view what, double hi) {
  const std::string s(text);
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || std::isnan(d)) {
    return fmt::format("{} '{}' is not a number: give a decimal above 0, such as 0.5 or 2", what, text);
  }
  if (!(d > 0.0) || d > hi) {
    return fmt::format("{} '{}' is out of range: it must be above 0 and at most {}", what, text, hi);
  }
  return d;
}

Parsed<float> parse_nonneg_float(std::string_view text, std::string_view what) {
  const std::string s(text);
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size()) {
    return fmt::format("{} '{}' is not a number: give a decimal such as 1.0 or 0.0375", what, text);
  }
  if (!std::isfinite(d) || d < 0.0 || d > 3.4028234663852886e38) {
    return fmt::format("{} '{}' is out of range: it must be a finite fp32 value >= 0", what, text);
  }
  return static_cast<float>(d);
}

}  // namespace dql::front
