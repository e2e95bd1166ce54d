// lop3: the truth table behind an immLut, a smallest expression for it, and the function
// applied bit by bit to three operands.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "kernels/bits/lop3.hpp"
#include "kernels/bits/lop3_expr.hpp"
#include "render.hpp"

namespace dql::cli {

void add_lop3(CLI::App& app) {
  struct Opts {
    std::string expr, lut, a, b, c;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("lop3", "Truth table, immLut and expression of a lop3.b32");
  auto* e = cmd->add_option("--expr", o->expr,
                            "An expression over a, b, c: ~ & ^ | and parentheses, e.g. \"(a & b) | c\"");
  auto* l = cmd->add_option("--lut", o->lut, "The immLut in hex, e.g. 0xEA");
  e->excludes(l);
  cmd->add_option("--a", o->a, "Operand a in hex (default 0xF0, the PTX pattern)");
  cmd->add_option("--b", o->b, "Operand b in hex (default 0xCC)");
  cmd->add_option("--c", o->c, "Operand c in hex (default 0xAA)");
  cmd->add_flag("--json", o->json, "Print JSON: lut, expr, table, result");
  cmd->callback([o] {
    uint8_t lut = 0;
    if (!o->expr.empty()) {
      const auto parsed = bits::parse_lop3_expr(o->expr);
      if (const auto* err = std::get_if<bits::ExprError>(&parsed)) {
        throw UserError(fmt::format("the expression \"{}\" does not parse at column {}: {}", o->expr,
                                    err->column, err->message));
      }
      lut = std::get<uint8_t>(parsed);
    } else if (!o->lut.empty()) {
      lut = static_cast<uint8_t>(take(front::parse_hex(o->lut, "--lut", 2)));
    } else {
      throw UserError("give the function as --expr \"(a & b) | c\" or as --lut 0xEA");
    }
    const uint32_t a = o->a.empty() ? bits::kLop3A : take(front::parse_hex(o->a, "--a"));
    const uint32_t b = o->b.empty() ? bits::kLop3B : take(front::parse_hex(o->b, "--b"));
    const uint32_t c = o->c.empty() ? bits::kLop3C : take(front::parse_hex(o->c, "--c"));
    const uint32_t d = bits::lop3_any(a, b, c, lut);
    const std::string& minimal = bits::minimal_lop3_expr(lut);

    if (o->json) {
      nlohmann::json table = nlohmann::json::array();
      for (int row = 0; row < 8; ++row) table.push_back((lut >> row) & 1);
      nlohmann::json j = {{"lut", lut},      {"lut_hex", fmt::format("0x{:02x}", lut)},
                          {"expr", minimal}, {"table", table},
                          {"a", hex32(a)},   {"b", hex32(b)},
                          {"c", hex32(c)},   {"result", hex32(d)}};
      if (!o->expr.empty()) j["input_expr"] = o->expr;
      fmt::print("{}\n", j.dump(2));
      return;
    }
    const Style st = terminal_style();
    fmt::print("immLut {} = {}\n", st.bold(fmt::format("0x{:02x}", lut)), st.bold(minimal));
    fmt::print("{}\n\n", st.dim("immLut = F(0xF0, 0xCC, 0xAA): bit 4a + 2b + c of the immLut is F(a, b, c)"));
    fmt::print("  row  a b c  F\n");
    for (int row = 0; row < 8; ++row) {
      const int out = (lut >> row) & 1;
      fmt::print("  {:>3}  {} {} {}  {}\n", row, (row >> 2) & 1, (row >> 1) & 1, row & 1,
                 out ? st.good("1") : st.dim("0"));
    }
    fmt::print("\napplied bit by bit:\n");
    fmt::print("  a = {}  {}\n", nibble_bits(a, 32), hex32(a));
    fmt::print("  b = {}  {}\n", nibble_bits(b, 32), hex32(b));
    fmt::print("  c = {}  {}\n", nibble_bits(c, 32), hex32(c));
    fmt::print("  d = {}  {}\n", st.bold(nibble_bits(d, 32)), st.bold(hex32(d)));
    std::string rows;
    for (int i = 31; i >= 0; --i) {
      const int row = (((a >> i) & 1) << 2) | (((b >> i) & 1) << 1) | ((c >> i) & 1);
      rows += static_cast<char>('0' + row);
      if (i % 4 == 0 && i != 0) rows += ' ';
    }
    fmt::print("  row {}  {}\n", st.dim(rows), st.dim("(the truth-table row each bit used)"));
  });
}

}  // namespace dql::cli
