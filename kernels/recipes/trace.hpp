// Recording a recipe's steps on the host: every instruction with its operands, the destination
// register and its value after the step, and what the step means.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "exec.hpp"

namespace dql::recipes {

struct TraceOperand {
  std::string text;  // register name, or the immediate as written in the PTX
  uint32_t value;
  View view;
  bool is_reg;
};

struct TraceStep {
  OpKind kind;
  std::string mnemonic;  // e.g. "lop3.b32"
  std::string ptx;       // the whole instruction, e.g. "lop3.b32 h0, src, 0x000f000f, 0x64006400, 0xea"
  std::string dst;
  View view;
  uint32_t value;
  std::vector<TraceOperand> srcs;
  uint32_t imm;  // the immLut of a lop3, the selector of a prmt
  std::string meaning;
};

struct Tracer {
  static constexpr bool kTrace = true;
  std::vector<TraceStep> steps;

  void record(OpKind kind, const char* mnemonic, Reg dst, std::initializer_list<Opd> srcs, uint32_t imm,
              const char* why, const char* table = nullptr);
};

// How an immediate operand is written in PTX text: 0x-prefixed, 8 hex digits, except decimals
// (shift counts, bit positions) and the 8-bit immLut.
std::string format_immediate(const Opd& o, OpKind kind, bool is_lut);

}  // namespace dql::recipes
