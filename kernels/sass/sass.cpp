#include "sass.hpp"

#include <cxxabi.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <map>

#include "kernels/bits/lop3_expr.hpp"
#include "kernels/quant/quant.hpp"
#include "kernels/recipes/recipes.hpp"

namespace dql::sass {

namespace {

constexpr const char* kNames[kClassCount] = {"LOP3", "PRMT", "HFMA2", "HADD2", "HMUL2",
                                             "I2F",  "F2F",  "IMAD",  "SHF",   "LDG",
                                             "STG",  "LDS",  "STS",   "SHFL",  "other"};
constexpr const char* kKeys[kClassCount] = {"lop3", "prmt", "hfma2", "hadd2", "hmul2", "i2f",  "f2f",  "imad",
                                            "shf",  "ldg",  "stg",   "lds",   "sts",   "shfl", "other"};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// "0x6a" or "0x4040" (no sign, no register) -> value.
std::optional<uint32_t> hex_immediate(std::string_view s) {
  if (s.size() < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return std::nullopt;
  uint64_t v = 0;
  const auto* first = s.data() + 2;
  const auto* last = s.data() + s.size();
  const auto r = std::from_chars(first, last, v, 16);
  if (r.ec != std::errc() || r.ptr != last || v > 0xFFFFFFFFull) return std::nullopt;
  return static_cast<uint32_t>(v);
}

std::optional<uint32_t> hex_number(std::string_view s) {
  uint64_t v = 0;
  if (s.empty()) return std::nullopt;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || v > 0xFFFFFFFFull) return std::nullopt;
  return static_cast<uint32_t>(v);
}

OpClass class_of_base(std::string_view b) {
  if (b == "LOP3") return OpClass::Lop3;
  if (b == "PRMT") return OpClass::Prmt;
  if (b == "HFMA2") return OpClass::Hfma2;
  if (b == "HADD2") return OpClass::Hadd2;
  if (b == "HMUL2") return OpClass::Hmul2;
  if (b == "I2F" || b == "I2FP") return OpClass::I2F;
  if (b == "F2F" || b == "F2FP") return OpClass::F2F;
  if (b == "IMAD") return OpClass::Imad;
  if (b == "SHF") return OpClass::Shf;
  if (b == "LDG") return OpClass::Ldg;
  if (b == "STG") return OpClass::Stg;
  if (b == "LDS" || b == "LDSM") return OpClass::Lds;
  if (b == "STS") return OpClass::Sts;
  if (b == "SHFL") return OpClass::Shfl;
  return OpClass::Other;
}

// The opcode's base and whether it is the uniform-datapath form (ULOP3.LUT, UPRMT, USHF, ...).
std::string_view opcode_base(std::string_view opcode) {
  const std::string_view b = opcode.substr(0, opcode.find('.'));
  if (b.size() > 1 && b[0] == 'U' && class_of_base(b.substr(1)) != OpClass::Other) return b.substr(1);
  return b;
}

// Operands separated by commas outside brackets.
std::vector<std::string> split_operands(std::string_view s) {
  std::vector<std::string> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || (s[i] == ',' && depth == 0)) {
      const auto op = trim(s.substr(start, i - start));
      if (!op.empty()) out.emplace_back(op);
      start = i + 1;
    } else if (s[i] == '[' || s[i] == '(' || s[i] == '{') {
      ++depth;
    } else if ((s[i] == ']' || s[i] == ')' || s[i] == '}') && depth > 0) {
      --depth;
    }
  }
  return out;
}

std::optional<bits::PrmtMode> prmt_mode_of(std::string_view opcode) {
  const auto dot = opcode.find('.');
  if (dot == std::string_view::npos) return bits::PrmtMode::Generic;
  const auto m = opcode.substr(dot + 1);
  if (m == "F4E") return bits::PrmtMode::F4E;
  if (m == "B4E") return bits::PrmtMode::B4E;
  if (m == "RC8") return bits::PrmtMode::RC8;
  if (m == "ECL") return bits::PrmtMode::ECL;
  if (m == "ECR") return bits::PrmtMode::ECR;
  if (m == "RC16") return bits::PrmtMode::RC16;
  return std::nullopt;
}

void decode(Instr& in) {
  const auto& ops = in.operands;
  if (in.cls == OpClass::Lop3 && ops.size() >= 5) {
    // ..., a, b, c, lut, predicate: the lut is the second-to-last operand.
    const size_t n = ops.size();
    if (const auto lut = hex_immediate(ops[n - 2]); lut && *lut <= 0xFF) {
      Lop3Decode d;
      d.lut = static_cast<uint8_t>(*lut);
      d.a = ops[n - 5], d.b = ops[n - 4], d.c = ops[n - 3];
      d.expr = bits::minimal_lop3_expr(d.lut);
      in.lop3 = std::move(d);
    }
  } else if (in.cls == OpClass::Prmt && ops.size() == 4) {
    const auto mode = prmt_mode_of(in.opcode);
    if (!mode) return;
    PrmtDecode d;
    d.mode = *mode;
    d.a = ops[1], d.b = ops[3];
    if (const auto sel = hex_immediate(ops[2])) {
      d.immediate = true;
      d.sel = *sel;
      for (uint32_t i = 0; i < 4; ++i) {
        if (d.mode == bits::PrmtMode::Generic) {
          const uint32_t nib = (d.sel >> (4 * i)) & 0xFu;
          d.source[i] = static_cast<uint8_t>(nib & 7u);
          d.sign[i] = (nib & 8u) != 0;
        } else {
          d.source[i] = static_cast<uint8_t>(bits::prmt_mode_source(d.mode, i, d.sel & 3u) & 7u);
        }
      }
    }
    in.prmt = std::move(d);
  }
}

std::string demangle(const std::string& mangled) {
  int status = 0;
  char* out = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) return mangled;
  std::string s(out);
  std::free(out);
  return s;
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
}

const char* scheme_name(int v) {
  switch (static_cast<quant::Scheme>(v)) {
    case quant::Scheme::Int8Sym: return "int8-sym";
    case quant::Scheme::Int4Sym: return "int4-sym";
    case quant::Scheme::Int4Asym: return "int4-asym";
    case quant::Scheme::Nf4: return "nf4";
  }
  return nullptr;
}

enum class EnumKind { Recipe, Scheme, OutType, FtForm };

// "(RecipeId)5" -> "cutlass-int4-fp16", "(Scheme)3" -> "nf4", "(OutType)1" -> "bf16", "(FtForm)2"
// -> "crossing" (how an FT-layout kernel moves a warp's chunks: fast.cu's FtForm).
void name_enums(std::string& s, std::string_view cast, EnumKind kind) {
  for (size_t p = s.find(cast); p != std::string::npos; p = s.find(cast, p + 1)) {
    size_t q = p + cast.size();
    int v = 0;
    const auto r = std::from_chars(s.data() + q, s.data() + s.size(), v);
    if (r.ec != std::errc()) continue;
    const char* name = nullptr;
    if (kind == EnumKind::Recipe) {
      if (v >= 0 && v < recipes::kRecipeCount)
        name = recipes::spec_of(static_cast<recipes::RecipeId>(v)).name;
    } else if (kind == EnumKind::Scheme) {
      name = scheme_name(v);
    } else if (kind == EnumKind::FtForm) {
      static constexpr const char* kForms[] = {"thread", "staged", "crossing"};
      if (v >= 0 && v < 3) name = kForms[v];
    } else if (v == static_cast<int>(recipes::OutType::F16) ||
               v == static_cast<int>(recipes::OutType::BF16)) {
      name = v == static_cast<int>(recipes::OutType::F16) ? "fp16" : "bf16";
    }
    if (name == nullptr) continue;
    s.replace(p, static_cast<size_t>(r.ptr - s.data()) - p, name);
  }
}

int arch_number(std::string_view arch) {
  int v = 0;
  const auto digits = arch.substr(arch.find('_') + 1);
  std::from_chars(digits.data(), digits.data() + digits.size(), v);
  return v;
}

}  // namespace

std::vector<std::string_view> template_args(std::string_view s, std::string_view* base) {
  const auto lt = s.find('<');
  *base = s.substr(0, lt);
  std::vector<std::string_view> args;
  if (lt == std::string_view::npos || s.back() != '>') return args;
  const auto inner = s.substr(lt + 1, s.size() - lt - 2);
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i <= inner.size(); ++i) {
    if (i == inner.size() || (inner[i] == ',' && depth == 0)) {
      args.push_back(trim(inner.substr(start, i - start)));
      start = i + 1;
    } else if (inner[i] == '<' || inner[i] == '(') {
      ++depth;
    } else if (inner[i] == '>' || inner[i] == ')') {
      --depth;
    }
  }
  return args;
}

std::string fit_name(std::string_view name, const std::function<bool(std::string_view)>& fits,
                     std::span<const size_t> keep) {
  if (fits(name)) return std::string(name);
  std::string_view base;
  const auto args = template_args(name, &base);
  if (args.empty()) return std::string(name);
  std::vector<std::string> compact;
  compact.reserve(args.size());
  for (const auto a : args) {
    std::string c = a == "true" ? "1" : a == "false" ? "0" : std::string(a);
    std::erase(c, ' ');  // nested arguments ("Foo<1, 2>") too
    compact.emplace_back(std::move(c));
  }
  // The form with the first `prefix` arguments and those in `keep`, ".." for each run left out.
  const auto form = [&](size_t prefix) {
    std::string s = std::string(base) + "<";
    bool first = true, gap = false;
    for (size_t i = 0; i < compact.size(); ++i) {
      const bool shown = i < prefix || std::find(keep.begin(), keep.end(), i) != keep.end();
      if (!shown && gap) continue;
      if (!first) s += ',';
      s += shown ? std::string_view(compact[i]) : std::string_view("..");
      first = false;
      gap = !shown;
    }
    return s + ">";
  };
  std::string s = form(compact.size());
  // Leaving out one argument of one character saves nothing over ",..".
  for (size_t prefix = compact.size() - 1; !fits(s) && prefix >= 1; --prefix) {
    const std::string shorter = form(prefix);
    if (shorter.size() < s.size()) s = shorter;
  }
  return s;
}

std::vector<std::string> fit_names(std::span<const std::string> names,
                                   const std::function<bool(std::string_view)>& fits) {
  std::vector<std::string> out;
  out.reserve(names.size());
  for (const auto& n : names) out.push_back(fit_name(n, fits));
  // Names that came out alike: each again, keeping the arguments where the group's names differ.
  std::map<std::string, std::vector<size_t>> alike;
  for (size_t i = 0; i < out.size(); ++i) alike[out[i]].push_back(i);
  for (const auto& [text, group] : alike) {
    if (group.size() < 2) continue;
    std::vector<std::vector<std::string_view>> args;
    std::string_view base;
    for (const size_t i : group) args.push_back(template_args(names[i], &base));
    std::vector<size_t> differ;
    for (size_t a = 0; a < args[0].size(); ++a) {
      for (const auto& other : args) {
        if (other.size() != args[0].size()) break;  // not forms of one template: left as they are
        if (other[a] != args[0][a]) {
          differ.push_back(a);
          break;
        }
      }
    }
    if (differ.empty()) continue;
    for (const size_t i : group) out[i] = fit_name(names[i], fits, differ);
  }
  return out;
}

const char* class_name(OpClass c) { return kNames[static_cast<int>(c)]; }
const char* class_key(OpClass c) { return kKeys[static_cast<int>(c)]; }

std::string_view Instr::base() const { return opcode_base(opcode); }

std::string Instr::text() const {
  std::string s;
  if (!guard.empty()) s += guard + " ";
  s += opcode;
  for (size_t i = 0; i < operands.size(); ++i) s += (i ? ", " : " ") + operands[i];
  return s;
}

std::optional<Instr> parse_instr(std::string_view line) {
  line = trim(line);
  if (!starts_with(line, "/*")) return std::nullopt;
  const auto close = line.find("*/");
  if (close == std::string_view::npos) return std::nullopt;
  const auto addr = hex_number(line.substr(2, close - 2));
  if (!addr) return std::nullopt;
  auto rest = line.substr(close + 2);
  const auto semi = rest.find(';');
  if (semi == std::string_view::npos) return std::nullopt;
  rest = trim(rest.substr(0, semi));
  if (rest.empty()) return std::nullopt;
  Instr in;
  in.address = *addr;
  if (rest.front() == '@') {
    const auto sp = rest.find(' ');
    if (sp == std::string_view::npos) return std::nullopt;
    in.guard = std::string(rest.substr(0, sp));
    rest = trim(rest.substr(sp));
  }
  const auto sp = rest.find(' ');
  in.opcode = std::string(rest.substr(0, sp));
  if (sp != std::string_view::npos) in.operands = split_operands(rest.substr(sp + 1));
  in.cls = class_of_base(opcode_base(in.opcode));
  // HFMA2 Rd, -RZ, RZ, x, y is how the compiler writes an immediate into a register: a move, not math.
  if (in.cls == OpClass::Hfma2 && in.operands.size() == 5 && in.operands[1] == "-RZ" &&
      in.operands[2] == "RZ") {
    in.cls = OpClass::Other;
    in.move = true;
  }
  decode(in);
  return in;
}

std::vector<Listing> parse(std::string_view text) {
  std::map<int, Listing> by_arch;
  Listing* cur = nullptr;
  Function* fn = nullptr;
  size_t pos = 0;
  while (pos < text.size()) {
    auto nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const auto line = trim(text.substr(pos, nl - pos));
    pos = nl + 1;
    if (line.empty()) continue;
    if (line[0] == '/') {
      if (fn == nullptr) continue;
      if (auto in = parse_instr(line)) fn->instrs.push_back(std::move(*in));
    } else if (starts_with(line, "code for sm_")) {
      const auto arch = line.substr(std::string_view("code for ").size());
      Listing& l = by_arch[arch_number(arch)];
      l.arch = std::string(arch);
      cur = &l;
      fn = nullptr;
    } else if (starts_with(line, "Function : ") && cur != nullptr) {
      Function f;
      f.mangled = std::string(trim(line.substr(std::string_view("Function : ").size())));
      f.demangled = demangle(f.mangled);
      f.name = short_name(f.demangled);
      f.bench = bench_name(f.name);
      cur->functions.push_back(std::move(f));
      fn = &cur->functions.back();
    }
  }
  std::vector<Listing> out;
  for (auto& [n, l] : by_arch) {
    std::stable_sort(l.functions.begin(), l.functions.end(),
                     [](const Function& a, const Function& b) { return a.name < b.name; });
    out.push_back(std::move(l));
  }
  return out;
}

std::string short_name(std::string_view demangled) {
  std::string s(trim(demangled));
  if (starts_with(s, "void ")) s.erase(0, 5);
  // Drop the parameter list: the parenthesis that closes the string and its match.
  if (!s.empty() && s.back() == ')') {
    int depth = 0;
    for (size_t i = s.size(); i-- > 0;) {
      if (s[i] == ')') ++depth;
      if (s[i] == '(' && --depth == 0) {
        s.erase(i);
        break;
      }
    }
  }
  replace_all(s, "(anonymous namespace)::", "");
  for (const char* ns : {"dql::cuda::", "dql::quant::", "dql::recipes::", "dql::"}) replace_all(s, ns, "");
  name_enums(s, "(RecipeId)", EnumKind::Recipe);
  name_enums(s, "(Scheme)", EnumKind::Scheme);
  name_enums(s, "(OutType)", EnumKind::OutType);
  name_enums(s, "(FtForm)", EnumKind::FtForm);
  return s;
}

std::string bench_name(std::string_view name) {
  std::string_view base;
  const auto args = template_args(name, &base);
  if ((base == "dequant_plain_kernel" || base == "dequant_ft_kernel") && !args.empty())
    return fmt::format("dequant/{}", args[0]);
  if (base == "dequant_awq_tiled_kernel" || base == "dequant_awq_kernel") return "dequant/awq-int4-fp16";
  if ((base == "quant_segment_kernel" || base == "quant_wide_kernel") && !args.empty())
    return fmt::format("quant/{}", args[0]);
  if (base == "permute_kernel" && args.size() >= 3)
    return fmt::format("permute/int{}-{}", args[0], args[1] == "true" ? "fwd" : "inv");
  return {};
}

int elements_per_pass(std::string_view name) {
  std::string_view base;
  const auto args = template_args(name, &base);
  if (base == "dequant_plain_kernel" && args.size() == 2) {
    int units = 0;
    std::from_chars(args[1].data(), args[1].data() + args[1].size(), units);
    return 8 * units;  // units of 8 consecutive elements
  }
  if (base == "dequant_ft_kernel") return 64;  // one column of a 64-row tile
  if (base == "dequant_awq_tiled_kernel" || base == "dequant_awq_kernel") return 128;  // 8 columns x 16 rows
  if (base == "quant_segment_kernel") return 16;
  if (base == "permute_kernel") return 64;
  return 0;
}

std::string decode_text(const Instr& in) {
  if (in.lop3) return fmt::format("0x{:02x}: {}", in.lop3->lut, in.lop3->expr);
  if (in.move)
    return fmt::format("a move: {} = ({}, {}) as fp16x2", in.operands[0], in.operands[3], in.operands[4]);
  if (in.prmt && in.prmt->immediate) {
    const auto& p = *in.prmt;
    std::string s = p.mode == bits::PrmtMode::Generic ? fmt::format("0x{:04x}: d =", p.sel & 0xFFFFu)
                                                      : fmt::format("{} 0x{:x}: d =", in.opcode, p.sel);
    for (int i = 3; i >= 0; --i)
      s += p.sign[i] ? fmt::format(" s(b{})", p.source[i]) : fmt::format(" b{}", p.source[i]);
    return s;
  }
  return {};
}

Counts count(std::span<const Instr> instrs) {
  Counts c;
  for (const auto& in : instrs) {
    if (in.base() == "NOP") continue;
    ++c.by_class[static_cast<int>(in.cls)];
    ++c.total;
  }
  return c;
}

std::optional<PerElement> per_element(const Function& f) {
  const int elements = elements_per_pass(f.name);
  if (elements == 0 || f.instrs.empty()) return std::nullopt;
  const auto& ins = f.instrs;
  const auto index_of = [&](uint32_t address) -> std::optional<size_t> {
    const auto it = std::lower_bound(ins.begin(), ins.end(), address,
                                     [](const Instr& i, uint32_t a) { return i.address < a; });
    if (it == ins.end() || it->address != address) return std::nullopt;
    return static_cast<size_t>(it - ins.begin());
  };
  PerElement pe;
  pe.elements = elements;
  for (size_t i = 0; i < ins.size(); ++i) {
    if (ins[i].base() != "BRA" || ins[i].operands.empty()) continue;
    const auto target = hex_immediate(ins[i].operands.back());
    if (!target || *target >= ins[i].address) continue;  // forward, or the closing self-branch
    const auto from = index_of(*target);
    if (!from) continue;
    const bool stores =
        std::any_of(ins.begin() + static_cast<long>(*from), ins.begin() + static_cast<long>(i) + 1,
                    [](const Instr& x) { return x.cls == OpClass::Stg; });
    if (stores && (!pe.loop || i + 1 - *from > pe.end - pe.begin)) {
      pe.loop = true;
      pe.begin = *from;
      pe.end = i + 1;
    }
  }
  if (!pe.loop) {
    pe.begin = 0;
    pe.end = ins.size();
    for (size_t i = ins.size(); i-- > 0;) {
      if (ins[i].base() == "EXIT") {
        pe.end = i + 1;
        break;
      }
    }
  }
  pe.counts = count(std::span<const Instr>(ins).subspan(pe.begin, pe.end - pe.begin));
  return pe;
}

bool glob_match(std::string_view p, std::string_view t) {
  size_t pi = 0, ti = 0, star = std::string_view::npos, mark = 0;
  while (ti < t.size()) {
    if (pi < p.size() && (p[pi] == '?' || p[pi] == t[ti])) {
      ++pi, ++ti;
    } else if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = ti;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      ti = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

}  // namespace dql::sass
