// Float explorer: one pattern in fp16, bf16, fp32 or fp8 e5m2, its fields, value and exact
// decimal expansion; clickable bits, three ways to type it, +-1 step of the pattern, special
// values; and the fp16 magic-number construction (0x6400 | i = 1024 + i, minus 1024 = i).
#include "kernels/bits/float.hpp"

#include <fmt/format.h>
#include <imgui.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <string>
#include <utility>

#include "app/common/parse.hpp"
#include "app/gui/model.hpp"
#include "app/gui/widgets.hpp"
#include "kernels/bits/arith.hpp"
#include "kernels/bits/lop3.hpp"

namespace dql::gui {

namespace {

struct Format {
  const char* name;
  bits::FloatFormat f;
};
constexpr Format kFormats[] = {
    {"fp16", bits::kF16}, {"bf16", bits::kBF16}, {"fp32", bits::kF32}, {"fp8 e5m2", bits::FloatFormat{5, 2}}};

struct FloatState {
  int format = 0;
  uint32_t value[4] = {0x6400u, 0x4480u, 0x44800000u, 0x64u};  // 1024 in each
  std::string decimal;
  std::string binary;
  std::string error;
  int magic_i = 5;
  uint32_t shown = ~0u;
  int shown_format = -1;
} g;

const char* class_name(bits::FpClass c) {
  switch (c) {
    case bits::FpClass::Zero: return "zero";
    case bits::FpClass::Subnormal: return "subnormal";
    case bits::FpClass::Normal: return "normal";
    case bits::FpClass::Inf: return "infinity";
    case bits::FpClass::NaN: return "NaN";
  }
  return "";
}

// The decimal text rounded to the format (nearest, ties to even), through the engine's rounding.
bool from_decimal(const std::string& text, bits::FloatFormat f, uint32_t* out, std::string* why) {
  std::string t(text);
  while (!t.empty() && t.back() == ' ') t.pop_back();
  while (!t.empty() && t.front() == ' ') t.erase(0, 1);
  const bool neg = !t.empty() && t[0] == '-';
  std::string body = (neg || (!t.empty() && t[0] == '+')) ? t.substr(1) : t;
  // Infinities and NaN are patterns of every format here, spelt in any case (inf, Inf, NaN, NAN).
  for (char& c : body) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (body == "inf" || body == "infinity") {
    *out = (neg ? bits::fmt_sign_bit(f) : 0u) | bits::fmt_inf(f);
    return true;
  }
  if (body == "nan") {  // the format's canonical quiet NaN; -nan sets its sign bit
    *out = (neg ? bits::fmt_sign_bit(f) : 0u) | bits::fmt_canonical_nan(f);
    return true;
  }
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (t.empty() || end != t.c_str() + t.size() || std::isnan(v)) {
    *why = fmt::format("'{}' is not a decimal number: type e.g. 1024, -0.5, 6.1e-5, inf or nan", t);
    return false;
  }
  if (std::isinf(v)) {
    *out = (v < 0 ? bits::fmt_sign_bit(f) : 0u) | bits::fmt_inf(f);
    return true;
  }
  if (v == 0.0) {
    *out = std::signbit(v) ? bits::fmt_sign_bit(f) : 0u;
    return true;
  }
  int e = 0;
  const double m = std::frexp(std::fabs(v), &e);  // v = m * 2^e, 0.5 <= m < 1
  const uint64_t mag = static_cast<uint64_t>(std::ldexp(m, 53));
  *out = bits::round_pack(f, v < 0, mag, e - 53);
  return true;
}

bool from_binary(const std::string& text, int width, uint32_t* out, std::string* why) {
  uint32_t v = 0;
  int n = 0;
  for (const char c : text) {
    if (c == ' ' || c == '_') continue;
    if (c != '0' && c != '1') {
      *why = fmt::format("'{}' holds '{}': binary entry takes only 0, 1, spaces and _", text, c);
      return false;
    }
    if (n < 32) v = (v << 1) | static_cast<uint32_t>(c - '0');
    ++n;
  }
  if (n != width) {
    *why = fmt::format("'{}' has {} binary digits: this format takes exactly {}", text, n, width);
    return false;
  }
  *out = v;
  return true;
}

void special_buttons(uint32_t* v, bits::FloatFormat f) {
  const uint32_t s = bits::fmt_sign_bit(f);
  const uint32_t one = static_cast<uint32_t>(bits::fmt_bias(f)) << f.mbits;
  const uint32_t min_normal = 1u << f.mbits;
  const struct {
    const char* label;
    uint32_t bits;
  } specials[] = {{"+0", 0u},
                  {"-0", s},
                  {"smallest subnormal", 1u},
                  {"largest subnormal", min_normal - 1u},
                  {"smallest normal", min_normal},
                  {"1", one},
                  {"largest finite", bits::fmt_inf(f) - 1u},
                  {"+inf", bits::fmt_inf(f)},
                  {"-inf", s | bits::fmt_inf(f)},
                  {"NaN", bits::fmt_canonical_nan(f)}};
  for (size_t i = 0; i < std::size(specials); ++i) {
    if (i) same_line_if_fits(button_width(specials[i].label));
    if (ImGui::SmallButton(specials[i].label)) *v = specials[i].bits;
  }
}

void magic_demo(Model& m, const Ui& ui) {
  wrapped_text("The magic number: OR an integer into 0x6400 (fp16 1024.0), then subtract 1024");
  dim_text(
      "In [1024, 2048) fp16 values are 1 apart, so the 10 mantissa bits of 0x6400 hold an integer "
      "directly: 0x6400 | i reads as 1024 + i. One subtraction of 0x6400 leaves i as an fp16.");
  ImGui::SetNextItemWidth(8.0f * ui.em);
  int i = g.magic_i;
  if (ImGui::InputInt("integer i (0 .. 1023)", &i)) {
    if (i < 0 || i > 1023) {
      g.error = fmt::format("i = {} does not fit the 10 mantissa bits: enter 0 to 1023", i);
    } else {
      g.magic_i = i;
      g.error.clear();
    }
  }
  if (auto s = scripted("float.magic")) {
    if (auto v = script_value(m, front::parse_int(*s, "the integer i", 0, 1023)))
      g.magic_i = static_cast<int>(*v);
  }
  const uint32_t ii = static_cast<uint32_t>(g.magic_i);
  const uint32_t ored = bits::soft_lop3(0x6400u, ii, 0u, bits::kLop3A | bits::kLop3B) & 0xFFFFu;  // a | b
  const uint32_t sub = bits::soft_sub(bits::kF16, ored, 0x6400u);
  const BitColors fields = colors_by_float(bits::kF16, 1);
  BitColors ic = colors_uniform(palette::kConstant);
  for (int b = 0; b < 10; ++b) ic[static_cast<size_t>(b)] = palette::element(3);
  BitRowOptions o;
  o.width = 16;
  o.numbers = false;
  const auto row = [&](const char* label, uint32_t v, const BitColors& c, const std::string& value) {
    mono_text(ui, "%-12s", label);
    ImGui::SameLine(8.0f * ui.em);
    bit_row(label, v, c, ui, o);
    const std::string reading = fmt::format("0x{:04x}  {}", v, value);
    same_line_if_fits(mono_width(ui, reading.c_str()));
    mono_text(ui, "%s", reading.c_str());
  };
  row("0x6400", 0x6400u, fields, "= 1024.0 (fp16)");
  row("i", ii, ic, fmt::format("= {} (integer)", g.magic_i));
  row("0x6400 | i", ored, fields, "= " + number_text(bits::to_double(ored, bits::kF16)) + " = 1024 + i");
  row("  - 0x6400", sub, fields, "= " + number_text(bits::to_double(sub, bits::kF16)) + " = i");
}

}  // namespace

void draw_float(Model& m, const Ui& ui) {
  for (int i = 0; i < static_cast<int>(std::size(kFormats)); ++i) {
    if (i) same_line_if_fits(check_width(kFormats[i].name));
    ImGui::RadioButton(kFormats[i].name, &g.format, i);
  }
  if (auto s = scripted("float.format")) {
    if (auto i = script_choice(m, "float.format", *s, kFormats, [](const Format& e) { return e.name; }))
      g.format = *i;
  }
  const bits::FloatFormat f = kFormats[g.format].f;
  const int width = bits::fmt_width(f);
  uint32_t& v = g.value[g.format];
  ImGui::SameLine(0, 2.0f * ui.em);
  dim_text("%d bits: 1 sign, %d exponent (bias %d), %d mantissa", width, f.ebits, bits::fmt_bias(f), f.mbits);

  // Bits, clickable.
  BitRowOptions o;
  o.width = width;
  o.clickable = true;
  o.cell_em = width > 16 ? 1.15f : 1.6f;
  const BitRow row = bit_row("float bits", v, colors_by_float(f, 1), ui, o);
  if (row.clicked >= 0) v ^= 1u << row.clicked;
  if (row.hovered >= 0) {
    const char* field =
        row.hovered < f.mbits ? "mantissa" : (row.hovered < f.mbits + f.ebits ? "exponent" : "sign");
    ImGui::SetTooltip("bit %d (%s): click to flip", row.hovered, field);
  }

  // Entries.
  std::string err;
  const Edit e = hex_input("hex", &v, width / 4, &err, ui, "float.hex");
  if (e == Edit::Changed) g.error.clear();
  if (e == Edit::Rejected) {
    g.error = err;
    m.set_error(err);
  }
  ImGui::SameLine();
  if (ImGui::Button("-1")) v = (v - 1u) & ((width == 32) ? 0xFFFFFFFFu : ((1u << width) - 1u));
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("the previous bit pattern (one ulp down for a positive value)");
  ImGui::SameLine();
  if (ImGui::Button("+1")) v = (v + 1u) & ((width == 32) ? 0xFFFFFFFFu : ((1u << width) - 1u));
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("the next bit pattern (one ulp up for a positive value)");
  same_line_if_fits(labelled_width(12.0f * ui.em, "decimal"), 2.0f * ui.em);
  // The decimal and binary fields follow the value while they are not being edited.
  if (g.shown != v || g.shown_format != g.format) {
    if (!ImGui::IsAnyItemActive()) {
      g.decimal = number_text(bits::to_double(v, f));
      std::string b;
      for (int i = width - 1; i >= 0; --i)
        b += ((v >> i) & 1u) ? ((i % 4 == 0 && i) ? "1 " : "1") : ((i % 4 == 0 && i) ? "0 " : "0");
      g.binary = b;
      g.shown = v;
      g.shown_format = g.format;
    }
  }
  ImGui::SetNextItemWidth(12.0f * ui.em);
  bool apply_dec = text_input("decimal", &g.decimal, ImGuiInputTextFlags_EnterReturnsTrue);
  if (auto s = scripted("float.decimal")) {
    g.decimal = *s;
    apply_dec = true;
  }
  if (apply_dec) {
    uint32_t out = 0;
    if (from_decimal(g.decimal, f, &out, &err)) {
      v = out;
      g.error.clear();
    } else {
      g.error = err;
      m.set_error(err);
    }
  }
  ImGui::SetNextItemWidth(24.0f * ui.em);
  if (text_input("binary", &g.binary, ImGuiInputTextFlags_EnterReturnsTrue)) {
    uint32_t out = 0;
    if (from_binary(g.binary, width, &out, &err)) {
      v = out;
      g.error.clear();
    } else {
      g.error = err;
      m.set_error(err);
    }
  }
  error_text(g.error);
  special_buttons(&v, f);
  ImGui::Separator();

  // Reading.
  const bits::Fields x = bits::fields_of(v, f);
  const bits::FpClass cls = bits::classify(v, f);
  float_split(v, f, ui);
  const int unbiased = cls == bits::FpClass::Subnormal || cls == bits::FpClass::Zero
                           ? 1 - bits::fmt_bias(f)
                           : static_cast<int>(x.exponent) - bits::fmt_bias(f);
  const std::pair<ImU32, std::string> parts[] = {
      {palette::kSign, fmt::format("sign {}", x.sign)},
      {palette::kExponent, fmt::format("exponent {} - {} = {}", x.exponent, bits::fmt_bias(f), unbiased)},
      {palette::kMantissa, fmt::format("mantissa 0x{:x}", x.mantissa)},
      {palette::kText, fmt::format("class: {}", class_name(cls))}};
  for (size_t i = 0; i < std::size(parts); ++i) {
    if (i) same_line_if_fits(ImGui::CalcTextSize(parts[i].second.c_str()).x, 1.5f * ui.em);
    ImGui::TextColored(palette::to_vec4(parts[i].first), "%s", parts[i].second.c_str());
  }
  if (cls == bits::FpClass::Normal || cls == bits::FpClass::Subnormal) {
    mono_text(ui, "value = (-1)^%u x %s.%0*x (hex) x 2^%d", x.sign, cls == bits::FpClass::Normal ? "1" : "0",
              (f.mbits + 3) / 4, x.mantissa << ((4 - f.mbits % 4) % 4), unbiased);
  }
  mono_text(ui, "shortest: %s", number_text(bits::to_double(v, f)).c_str());
  ImGui::PushTextWrapPos(0.0f);
  mono_text(ui, "exact:    %s", exact_decimal(v, f).c_str());
  ImGui::PopTextWrapPos();
  if (cls == bits::FpClass::Normal || cls == bits::FpClass::Subnormal) {
    const uint32_t next = v + 1u;
    if (bits::classify(next, f) != bits::FpClass::NaN) {
      mono_text(ui, "gap to the next pattern: %s",
                number_text(std::fabs(bits::to_double(next, f) - bits::to_double(v, f))).c_str());
    }
  }
  ImGui::Separator();
  magic_demo(m, ui);
}

}  // namespace dql::gui
