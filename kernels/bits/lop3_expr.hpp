// Boolean expressions over a, b, c and the immLut they stand for (PTX: a = 0xF0, b = 0xCC,
// c = 0xAA). Used by the LOP3 explorer and the lop3 command.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

namespace dql::bits {

struct ExprError {
  size_t column;  // 1-based position of the problem in the text
  std::string message;
};

// Grammar: '|' binds loosest, then '^', then '&'; '~' or '!' negate; parentheses group;
// operands a, b, c (either case), 0 and 1.
std::variant<uint8_t, ExprError> parse_lop3_expr(std::string_view text);

// A smallest expression (fewest operators; ties by length, then alphabetically) for the table,
// written so that it parses back to the same immLut. Mixed operators are parenthesised.
const std::string& minimal_lop3_expr(uint8_t lut);

// The number of operators in minimal_lop3_expr(lut).
int minimal_lop3_cost(uint8_t lut);

}  // namespace dql::bits
