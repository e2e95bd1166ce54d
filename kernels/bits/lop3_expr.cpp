#include "lop3_expr.hpp"

#include <array>
#include <cctype>
#include <optional>
#include <tuple>

#include "lop3.hpp"

namespace dql::bits {

namespace {

class Parser {
 public:
  explicit Parser(std::string_view t) : text_(t) {}

  std::variant<uint8_t, ExprError> run() {
    skip();
    if (pos_ >= text_.size()) return fail("the expression is empty");
    uint8_t v = 0;
    if (!parse_or(v)) return *error_;
    skip();
    if (pos_ < text_.size()) {
      if (text_[pos_] == ')') return fail("')' has no matching '('");
      return fail(std::string("'") + text_[pos_] + "' cannot follow a complete expression here");
    }
    return v;
  }

 private:
  // Each '(' and '~' is a level of recursion: past this many the parser stops with a sentence
  // rather than run the stack out (three inputs make 256 functions; none needs a tenth of this).
  static constexpr int kDeepest = 256;
  std::string_view text_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::optional<ExprError> error_;

  bool deeper() {
    if (++depth_ <= kDeepest) return true;
    fail("the expression nests '(' and '~' more than 256 deep: write it with fewer levels");
    return false;
  }

  ExprError fail(std::string msg) {
    error_ = ExprError{pos_ + 1, std::move(msg)};
    return *error_;
  }
  void skip() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool accept(char c) {
    skip();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool parse_or(uint8_t& v) {
    if (!parse_xor(v)) return false;
    while (accept('|')) {
      uint8_t r;
      if (!parse_xor(r)) return false;
      v |= r;
    }
    return true;
  }
  bool parse_xor(uint8_t& v) {
    if (!parse_and(v)) return false;
    while (accept('^')) {
      uint8_t r;
      if (!parse_and(r)) return false;
      v ^= r;
    }
    return true;
  }
  bool parse_and(uint8_t& v) {
    if (!parse_unary(v)) return false;
    while (accept('&')) {
      uint8_t r;
      if (!parse_unary(r)) return false;
      v &= r;
    }
    return true;
  }
  bool parse_unary(uint8_t& v) {
    if (accept('~') || accept('!')) {
      if (!deeper() || !parse_unary(v)) return false;
      --depth_;
      v = static_cast<uint8_t>(~v);
      return true;
    }
    return parse_primary(v);
  }
  bool parse_primary(uint8_t& v) {
    skip();
    if (pos_ >= text_.size()) {
      fail("the expression ends where an operand (a, b, c, 0, 1) or '(' should come");
      return false;
    }
    const char c = text_[pos_];
    if (c == '(') {
      ++pos_;
      if (!deeper() || !parse_or(v)) return false;
      --depth_;
      if (!accept(')')) {
        fail("'(' is not closed: add ')'");
        return false;
      }
      return true;
    }
    switch (std::tolower(static_cast<unsigned char>(c))) {
      case 'a': v = kLop3A; break;
      case 'b': v = kLop3B; break;
      case 'c': v = kLop3C; break;
      case '0': v = 0x00; break;
      case '1': v = 0xFF; break;
      default: fail(std::string("'") + c + "' is not an operand: use a, b, c, 0 or 1"); return false;
    }
    ++pos_;
    return true;
  }
};

enum class Top : uint8_t { Leaf, Not, And, Xor, Or };

struct Best {
  int cost = 1 << 20;
  std::string text;
  Top top = Top::Leaf;
};

bool better(int cost, const std::string& text, const Best& b) {
  return std::make_tuple(cost, text.size(), std::string_view(text)) <
         std::make_tuple(b.cost, b.text.size(), std::string_view(b.text));
}

std::string operand(const Best& b, Top parent) {
  if (parent == Top::Not) {
    return (b.top == Top::Leaf || b.top == Top::Not) ? b.text : "(" + b.text + ")";
  }
  if (b.top == Top::Leaf || b.top == Top::Not || b.top == parent) return b.text;
  return "(" + b.text + ")";
}

// Relaxes costs until nothing improves: a small fixed point over the 256 functions.
std::array<Best, 256> build_minimal() {
  std::array<Best, 256> best;
  auto offer = [&](uint8_t f, int cost, std::string text, Top top) {
    if (better(cost, text, best[f])) best[f] = Best{cost, std::move(text), top};
  };
  offer(kLop3A, 0, "a", Top::Leaf);
  offer(kLop3B, 0, "b", Top::Leaf);
  offer(kLop3C, 0, "c", Top::Leaf);
  offer(0x00, 0, "0", Top::Leaf);
  offer(0xFF, 0, "1", Top::Leaf);
  bool changed = true;
  while (changed) {
    changed = false;
    const std::array<Best, 256> prev = best;
    for (int g = 0; g < 256; ++g) {
      if (prev[g].text.empty()) continue;
      if (prev[g].cost + 1 <= best[static_cast<uint8_t>(~g)].cost) {
        offer(static_cast<uint8_t>(~g), prev[g].cost + 1,
              std::string(1, '~').append(operand(prev[g], Top::Not)), Top::Not);
      }
      for (int h = g; h < 256; ++h) {
        if (prev[h].text.empty()) continue;
        const int cost = prev[g].cost + prev[h].cost + 1;
        // Order the operands the same way every time, so the output is canonical.
        const bool swap = prev[h].text < prev[g].text;
        const Best& l = swap ? prev[h] : prev[g];
        const Best& r = swap ? prev[g] : prev[h];
        const auto combine = [&](int f, const char* op, Top top) {
          if (cost > best[f].cost) return;  // cannot win: skip building the text
          offer(static_cast<uint8_t>(f), cost, operand(l, top) + op + operand(r, top), top);
        };
        combine(g & h, " & ", Top::And);
        combine(g ^ h, " ^ ", Top::Xor);
        combine(g | h, " | ", Top::Or);
      }
    }
    for (int f = 0; f < 256; ++f) {
      if (best[f].text != prev[f].text) changed = true;
    }
  }
  return best;
}

const std::array<Best, 256>& minimal_table() {
  static const std::array<Best, 256> table = build_minimal();
  return table;
}

}  // namespace

std::variant<uint8_t, ExprError> parse_lop3_expr(std::string_view text) { return Parser(text).run(); }

const std::string& minimal_lop3_expr(uint8_t lut) { return minimal_table()[lut].text; }

int minimal_lop3_cost(uint8_t lut) { return minimal_table()[lut].cost; }

}  // namespace dql::bits
