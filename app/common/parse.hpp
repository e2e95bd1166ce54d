// Reading what the user types: registers in hex, selectors, numbers. Every failure is a
// sentence that says what was wrong and what is accepted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "kernels/recipes/recipes.hpp"

namespace dql::front {

template <class T>
using Parsed = std::variant<T, std::string>;  // the value, or the sentence to show

template <class T>
bool ok(const Parsed<T>& p) {
  return std::holds_alternative<T>(p);
}

// `text` without the white space around it.
std::string_view trim_spaces(std::string_view text);

// Up to `max_digits` hex digits, with or without 0x; '_' and ' ' may group digits.
// `what` names the value in the message ("--input", "the selector").
Parsed<uint32_t> parse_hex(std::string_view text, std::string_view what, int max_digits = 8);

// A matrix shape "NxK" (also "N,K"), both positive.
Parsed<std::pair<int64_t, int64_t>> parse_shape(std::string_view text, std::string_view what);

// A comma-separated list of shapes "NxK,NxK"; the message names the first one that is not.
Parsed<std::vector<std::pair<int64_t, int64_t>>> parse_shape_list(std::string_view text,
                                                                  std::string_view what);

// The items of a comma-separated list, empty ones included.
std::vector<std::string> split_commas(std::string_view text);

// The GEMV's type of X and Y by name, "fp16" or "bf16"; nothing for any other text.
std::optional<recipes::OutType> out_type_named(std::string_view name);

// A comma-separated list of whole numbers, each from `lo` to `hi` (e.g. "1,4,16").
Parsed<std::vector<int64_t>> parse_int_list(std::string_view text, std::string_view what, int64_t lo,
                                            int64_t hi);

// One whole number from `lo` to `hi`; a number outside them (also one too long for 64 bits) is
// called out of range, text that is no whole number is called so.
Parsed<int64_t> parse_int(std::string_view text, std::string_view what, int64_t lo, int64_t hi);

// A decimal number above 0 and at most `hi` (e.g. seconds of sampling).
Parsed<double> parse_positive(std::string_view text, std::string_view what, double hi);

// A finite, non-negative decimal number (e.g. a block's absmax).
Parsed<float> parse_nonneg_float(std::string_view text, std::string_view what);

}  // namespace dql::front
