// The SASS of the app's own kernels: the listing cuobjdump prints, split into kernels and
// instructions, each instruction classified, LOP3.LUT tables and PRMT selectors decoded, and
// instruction counts per kernel, over the whole kernel and per output element.
//
// Operand order as cuobjdump prints it (checked against the kernels' own listings):
//   LOP3.LUT Rd, Ra, Rb, Rc, lut, !PT    the lut follows the PTX convention (a = 0xF0, b = 0xCC,
//                                        c = 0xAA); the last operand is a predicate input
//   PRMT     Rd, Ra, sel, Rb             PTX prmt.b32 d, a, b, sel: bytes b0..b3 are Ra's, b4..b7 Rb's
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/bits/prmt.hpp"

namespace dql::sass {

enum class OpClass : uint8_t {
  Lop3,
  Prmt,
  Hfma2,
  Hadd2,
  Hmul2,
  I2F,
  F2F,
  Imad,
  Shf,
  Ldg,
  Stg,
  Lds,
  Sts,
  Shfl,
  Other
};
inline constexpr int kClassCount = 15;
// "LOP3", "PRMT", "HFMA2", "HADD2", "HMUL2", "I2F", "F2F", "IMAD", "SHF", "LDG", "STG", "LDS",
// "STS", "SHFL", "other".
const char* class_name(OpClass c);
// The JSON key: "lop3", "prmt", ... "other".
const char* class_key(OpClass c);

struct Lop3Decode {
  uint8_t lut = 0;
  std::string a, b, c;  // the three source operands as printed
  std::string expr;     // a smallest expression for the table (bits::minimal_lop3_expr)
};

struct PrmtDecode {
  bool immediate = false;  // false when the selector is a register (nothing to decode)
  uint32_t sel = 0;
  bits::PrmtMode mode = bits::PrmtMode::Generic;
  std::string a, b;                 // Ra (bytes b0..b3) and Rb (bytes b4..b7) as printed
  std::array<uint8_t, 4> source{};  // destination byte i takes byte source[i] of {b, a}
  std::array<bool, 4> sign{};       // ... or replicates its sign bit
};

struct Instr {
  uint32_t address = 0;
  std::string guard;                  // "@!P0", or empty
  std::string opcode;                 // "LOP3.LUT", "HFMA2.MMA", ...
  std::vector<std::string> operands;  // as printed, ".reuse" and all
  OpClass cls = OpClass::Other;
  std::optional<Lop3Decode> lop3;
  std::optional<PrmtDecode> prmt;
  bool move = false;  // HFMA2 Rd, -RZ, RZ, x, y: the compiler's way to load an immediate (class Other)

  std::string text() const;  // "@!P2 STG.E.EF.128 desc[UR8][R28.64], R12"
  // The opcode before its first '.', without the uniform-datapath 'U' of ULOP3, UPRMT, ...
  std::string_view base() const;
};

struct Function {
  std::string mangled;    // as cuobjdump prints it
  std::string demangled;  // the C++ signature
  std::string name;       // short: "dequant_plain_kernel<cutlass-int4-fp16, 8>"
  std::string bench;      // the bench command's kernel name ("dequant/cutlass-int4-fp16"), or empty
  std::vector<Instr> instrs;
};

struct Listing {
  std::string arch;  // "sm_90"
  std::vector<Function> functions;
};

// Parses cuobjdump -sass output, as cuobjdump prints it or in the compact form the build embeds
// (one instruction a line, no encodings). Functions are grouped by the "code for sm_XX" line they
// follow, architectures in ascending order; lines that are neither are skipped.
std::vector<Listing> parse(std::string_view text);

// One instruction line ("/*08f0*/ LOP3.LUT R12, R13, 0xfff0ff0f, R18, 0x6a, !PT ;"), or nullopt.
std::optional<Instr> parse_instr(std::string_view line);

// The short name of a demangled kernel signature, and the bench kernel it implements.
std::string short_name(std::string_view demangled);
std::string bench_name(std::string_view short_name);
// The template arguments of a short name "name<x, y>" ({"x", "y"}, nested ones whole) and, in *base, the
// name before them; none where it has no template arguments. Views into `s`.
std::vector<std::string_view> template_args(std::string_view s, std::string_view* base);
// A short name as a column of `fits` width can show it: the name itself where it fits; else its template
// arguments written compactly ("ft_lane<fp16,0,16,0,1,1,0>": no spaces, true and false as 1 and 0); else
// that with its last arguments left out, as few as must be, and ".." in their place ("ft_lane<fp16,0,16,..>":
// the first arguments say most of which form a kernel is), except those in `keep` (".." for each run
// left out: "ft_bulk<8,4,fp16,0,2,..,1>"). Where none of these fits, the shortest of them.
std::string fit_name(std::string_view name, const std::function<bool(std::string_view)>& fits,
                     std::span<const size_t> keep = {});
// fit_name for the names of a list, so that different names stay different where the column allows:
// names that came out alike are fitted again keeping the arguments in which they differ.
std::vector<std::string> fit_names(std::span<const std::string> names,
                                   const std::function<bool(std::string_view)>& fits);

// One line saying what an instruction's immediate does: "0x6a: (a & b) ^ c" for LOP3.LUT,
// "0x5410: d = b5 b4 b1 b0" for PRMT (destination bytes high to low, s(bN) where the sign of
// byte N is replicated); empty for other instructions.
std::string decode_text(const Instr& in);

struct Counts {
  std::array<int, kClassCount> by_class{};
  int total = 0;  // every instruction but NOP
  int operator[](OpClass c) const { return by_class[static_cast<int>(c)]; }
};
Counts count(std::span<const Instr> instrs);

// Per output element: the instructions a thread runs for the elements it produces in one pass,
// divided by that many elements. The pass is the kernel's loop that holds its global stores
// (the widest one) when it has one, otherwise the kernel from its first instruction to its last
// EXIT (the 64-bit division subroutines placed after it are slow paths, left out). A static
// count: both sides of a branch inside the pass are counted. Kernels whose elements per pass
// are not known (not a dequant, quant or permute kernel) have none.
struct PerElement {
  size_t begin = 0, end = 0;  // instruction indices [begin, end)
  bool loop = false;
  int elements = 0;  // per thread and pass
  Counts counts;
  double per(OpClass c) const { return elements ? static_cast<double>(counts[c]) / elements : 0.0; }
  double total() const { return elements ? static_cast<double>(counts.total) / elements : 0.0; }
};
std::optional<PerElement> per_element(const Function& f);

// Elements a thread of the kernel produces per pass (0 when unknown).
int elements_per_pass(std::string_view short_name);

// Shell-style match: '*' any run, '?' one character.
bool glob_match(std::string_view pattern, std::string_view text);

}  // namespace dql::sass
