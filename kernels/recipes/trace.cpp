#include "trace.hpp"

#include <fmt/format.h>

namespace dql::recipes {

std::string format_immediate(const Opd& o, OpKind kind, bool is_lut) {
  if (o.decimal) return fmt::format("{}", o.v);
  if (is_lut) return fmt::format("0x{:02x}", o.v);
  if (kind == OpKind::Prmt && o.v <= 0xFFFFu && o.v != 0u) return fmt::format("0x{:04x}", o.v);
  return fmt::format("0x{:08x}", o.v);
}

void Tracer::record(OpKind kind, const char* mnemonic, Reg dst, std::initializer_list<Opd> srcs, uint32_t imm,
                    const char* why, const char* table) {
  TraceStep s{kind, mnemonic, {}, dst.name, dst.view, dst.v, {}, imm, why};
  std::string args;
  const size_t n = srcs.size();
  size_t i = 0;
  for (const Opd& o : srcs) {
    const bool is_lut = kind == OpKind::Lop3 && i + 1 == n;
    std::string text = o.name ? std::string(o.name) : format_immediate(o, kind, is_lut);
    if (!is_lut) s.srcs.push_back(TraceOperand{text, o.v, o.view, o.name != nullptr});
    if (kind == OpKind::Lookup) text = fmt::format("{}[{}]", table ? table : "table", text);
    if (kind == OpKind::Pack) text = (i == 0 ? "{" : "") + text + (i + 1 == n ? "}" : "");
    args += (i == 0 ? " " : ", ") + text;
    ++i;
  }
  if (kind == OpKind::Input) {
    s.ptx = fmt::format("// {} = 0x{:08x}", dst.name, dst.v);
  } else {
    s.ptx = fmt::format("{} {},{}", mnemonic, dst.name, args);
  }
  steps.push_back(std::move(s));
}

}  // namespace dql::recipes
