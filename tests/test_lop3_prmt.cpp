// lop3 and prmt against their definitions in the PTX ISA, and the LOP3 expression language.
#include <doctest/doctest.h>

#include "kernels/bits/lop3.hpp"
#include "kernels/bits/lop3_expr.hpp"
#include "kernels/bits/prmt.hpp"
#include "support.hpp"

using namespace dql::bits;
using dql::test::random_u32;

namespace {

// Definition: each result bit is the immLut bit indexed by 4a + 2b + c of that bit position.
uint32_t lop3_definition(uint32_t a, uint32_t b, uint32_t c, uint32_t lut) {
  uint32_t d = 0;
  for (int i = 0; i < 32; ++i) {
    const uint32_t row = (((a >> i) & 1u) << 2) | (((b >> i) & 1u) << 1) | ((c >> i) & 1u);
    d |= ((lut >> row) & 1u) << i;
  }
  return d;
}

// The PTX ISA's tables for the special modes: for each c[1:0], the source byte of d.b3..d.b0.
const uint8_t kModeTable[6][4][4] = {
    {{3, 2, 1, 0}, {4, 3, 2, 1}, {5, 4, 3, 2}, {6, 5, 4, 3}},  // f4e
    {{5, 6, 7, 0}, {6, 7, 0, 1}, {7, 0, 1, 2}, {0, 1, 2, 3}},  // b4e
    {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}},  // rc8
    {{3, 2, 1, 0}, {3, 2, 1, 1}, {3, 2, 2, 2}, {3, 3, 3, 3}},  // ecl
    {{0, 0, 0, 0}, {1, 1, 1, 0}, {2, 2, 1, 0}, {3, 2, 1, 0}},  // ecr
    {{1, 0, 1, 0}, {3, 2, 3, 2}, {1, 0, 1, 0}, {3, 2, 3, 2}},  // rc16
};
const PrmtMode kModes[6] = {PrmtMode::F4E, PrmtMode::B4E, PrmtMode::RC8,
                            PrmtMode::ECL, PrmtMode::ECR, PrmtMode::RC16};

uint8_t byte_of(uint32_t a, uint32_t b, uint32_t i) {
  return static_cast<uint8_t>(i < 4 ? (a >> (8 * i)) : (b >> (8 * (i - 4))));
}

uint32_t prmt_definition(uint32_t a, uint32_t b, uint32_t c, int mode_index) {
  uint32_t d = 0;
  for (int i = 0; i < 4; ++i) {
    uint32_t v;
    if (mode_index < 0) {
      const uint32_t sel = (c >> (4 * i)) & 0xFu;
      v = byte_of(a, b, sel & 7u);
      if (sel & 8u) v = (v >> 7) ? 0xFFu : 0u;
    } else {
      v = byte_of(a, b, kModeTable[mode_index][c & 3u][3 - i]);
    }
    d |= v << (8 * i);
  }
  return d;
}

}  // namespace

TEST_CASE("lop3: all 256 tables on random operands match the definition") {
  for (uint32_t lut = 0; lut < 256; ++lut) {
    CHECK((lop3_any(kLop3A, kLop3B, kLop3C, lut) & 0xFFu) == lut);  // F(0xF0, 0xCC, 0xAA) is the table
    for (int i = 0; i < 4000; ++i) {
      const uint32_t a = random_u32(), b = random_u32(), c = random_u32();
      REQUIRE(lop3_any(a, b, c, lut) == lop3_definition(a, b, c, lut));
    }
  }
  const uint32_t x = 0x76543210u;
  CHECK(lop3<0xEA>(x, 0x000F000Fu, 0x64006400u) == 0x64046400u);
  CHECK(lop3<0x6A>(0x00100001u, 0xFFF0FF0Fu, 0x64806408u) == 0x64906409u);
}

TEST_CASE("prmt: generic mode over every selector, with sign replication") {
  const uint32_t pairs[][2] = {{0x03020100u, 0x07060504u}, {0x80FF7F01u, 0xC0DE8A55u}};
  for (const auto& p : pairs) {
    for (uint32_t sel = 0; sel < 0x10000u; ++sel) {
      REQUIRE(prmt(p[0], p[1], sel) == prmt_definition(p[0], p[1], sel, -1));
    }
  }
  for (int i = 0; i < 300000; ++i) {
    const uint32_t a = random_u32(), b = random_u32(), c = random_u32();
    REQUIRE(prmt(a, b, c) == prmt_definition(a, b, c, -1));  // upper selector bits are ignored
  }
  CHECK(prmt(0x03020100u, 0x07060504u, 0x7531u) == 0x07050301u);
  CHECK(prmt(0x03020100u, 0x07060504u, 0x3210u) == 0x03020100u);
  CHECK(prmt(0x000000F0u, 0u, 0x9180u) == 0x0000FFF0u);  // byte 0 sign-extended to 16 bits
  CHECK(prmt(0x00000201u, 0x64646464u, 0x5250u) == 0x64006401u);
}

TEST_CASE("prmt: the six special modes match the PTX tables") {
  for (int m = 0; m < 6; ++m) {
    for (int i = 0; i < 20000; ++i) {
      const uint32_t a = random_u32(), b = random_u32(), c = random_u32();
      REQUIRE(prmt(a, b, c, kModes[m]) == prmt_definition(a, b, c, m));
    }
  }
  CHECK(prmt(0x03020100u, 0x07060504u, 1u, PrmtMode::F4E) == 0x04030201u);
  CHECK(prmt(0x03020100u, 0x07060504u, 0u, PrmtMode::B4E) == 0x05060700u);
  CHECK(prmt(0x03020100u, 0x07060504u, 1u, PrmtMode::RC16) == 0x03020302u);
}

TEST_CASE("lop3 expressions: parse, and a minimal form for every table that parses back") {
  const auto lut = [](const char* e) {
    const auto r = parse_lop3_expr(e);
    REQUIRE(std::holds_alternative<uint8_t>(r));
    return static_cast<int>(std::get<uint8_t>(r));
  };
  CHECK(lut("(a & b) | c") == 0xEA);
  CHECK(lut("(a & b) ^ c") == 0x6A);
  CHECK(lut("a&b&c") == 0x80);  // the PTX ISA's own examples
  CHECK(lut("a|b|c") == 0xFE);
  CHECK(lut("a&b&~c") == 0x40);
  CHECK(lut("(a&b|c)^a") == 0x1A);
  CHECK(lut("A & !B") == 0x30);
  CHECK(lut("a | b & c") == 0xF8);  // & binds tighter than |
  CHECK(lut("a ^ b & c") == 0x78);  // & binds tighter than ^
  CHECK(lut("a | b ^ c") == 0xF6);  // ^ binds tighter than |
  CHECK(lut("1") == 0xFF);
  CHECK(lut("~~a") == 0xF0);
  for (int t = 0; t < 256; ++t) {
    const std::string& e = minimal_lop3_expr(static_cast<uint8_t>(t));
    INFO("lut ", t, " -> ", e);
    REQUIRE(!e.empty());
    REQUIRE(lut(e.c_str()) == t);
  }
  CHECK(minimal_lop3_expr(0xEA) == "(a & b) | c");
  CHECK(minimal_lop3_cost(0xF0) == 0);
  CHECK(minimal_lop3_cost(0x96) == 2);
  CHECK(minimal_lop3_cost(0x80) == 2);
  CHECK(minimal_lop3_cost(0x0F) == 1);
}

TEST_CASE("lop3 expressions: errors name the column and what is accepted") {
  const auto err = [](const char* e) {
    const auto r = parse_lop3_expr(e);
    REQUIRE(std::holds_alternative<ExprError>(r));
    return std::get<ExprError>(r);
  };
  CHECK(err("").message.find("empty") != std::string::npos);
  CHECK(err("a &").column == 4);
  CHECK(err("(a | b").message.find("not closed") != std::string::npos);
  CHECK(err("a | b)").message.find("no matching") != std::string::npos);
  const ExprError d = err("a & d");
  CHECK(d.column == 5);
  CHECK(d.message.find("use a, b, c, 0 or 1") != std::string::npos);
  CHECK(err("a b").column == 3);
  // Nesting: 256 levels of '(' or '~' parse; deeper is refused with a sentence, not a stack overflow.
  const auto nested = [](int levels, const char* open, const char* close) {
    std::string e;
    for (int i = 0; i < levels; ++i) e += open;
    e += "a";
    for (int i = 0; i < levels; ++i) e += close;
    return e;
  };
  CHECK(std::get<uint8_t>(parse_lop3_expr(nested(256, "(", ")"))) == kLop3A);
  CHECK(std::get<uint8_t>(parse_lop3_expr(nested(256, "~", ""))) == kLop3A);  // an even number of ~
  CHECK(err(nested(257, "(", ")").c_str()).message.find("256 deep") != std::string::npos);
  CHECK(err(nested(257, "~", "").c_str()).message.find("256 deep") != std::string::npos);
  CHECK(err(nested(100000, "(", ")").c_str()).message.find("256 deep") != std::string::npos);
}
