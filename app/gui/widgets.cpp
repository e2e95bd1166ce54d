#include "widgets.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <deque>
#include <unordered_map>
#include <utility>

#include "app/common/parse.hpp"

namespace dql::gui {

// ---- palette -------------------------------------------------------------------------------

ImU32 palette::element(int i) {
  static constexpr ImU32 hues[8] = {IM_COL32(230, 85, 85, 255),   IM_COL32(240, 150, 60, 255),
                                    IM_COL32(220, 200, 60, 255),  IM_COL32(110, 200, 80, 255),
                                    IM_COL32(60, 200, 200, 255),  IM_COL32(80, 140, 240, 255),
                                    IM_COL32(160, 100, 230, 255), IM_COL32(230, 100, 190, 255)};
  return hues[i & 7];
}

ImVec4 palette::to_vec4(ImU32 c) { return ImGui::ColorConvertU32ToFloat4(c); }

BitColors colors_by_source(const std::array<int8_t, 32>& source) {
  BitColors c;
  for (int i = 0; i < 32; ++i) {
    const int s = source[static_cast<size_t>(i)];
    c[static_cast<size_t>(i)] =
        s >= 0 ? palette::element(s) : (s == Model::kManySources ? palette::kMixed : palette::kConstant);
  }
  return c;
}

BitColors colors_by_float(bits::FloatFormat f, int lanes) {
  BitColors c = colors_uniform(palette::kConstant);
  const int w = bits::fmt_width(f);
  for (int lane = 0; lane < lanes; ++lane) {
    for (int i = 0; i < w && lane * w + i < 32; ++i) {
      const ImU32 col =
          i < f.mbits ? palette::kMantissa : (i < f.mbits + f.ebits ? palette::kExponent : palette::kSign);
      c[static_cast<size_t>(lane * w + i)] = col;
    }
  }
  return c;
}

BitColors colors_by_slot(int elem_bits, const uint8_t* order, int slots) {
  BitColors c = colors_uniform(palette::kConstant);
  for (int s = 0; s < slots; ++s) {
    for (int i = 0; i < elem_bits && s * elem_bits + i < 32; ++i) {
      c[static_cast<size_t>(s * elem_bits + i)] = palette::element(order[s]);
    }
  }
  return c;
}

BitColors colors_uniform(ImU32 col) {
  BitColors c;
  c.fill(col);
  return c;
}

namespace {

ImU32 scaled(ImU32 c, float k, int alpha = 255) {
  const ImVec4 v = ImGui::ColorConvertU32ToFloat4(c);
  return IM_COL32(static_cast<int>(v.x * k * 255), static_cast<int>(v.y * k * 255),
                  static_cast<int>(v.z * k * 255), alpha);
}

// ---- SVG state -------------------------------------------------------------------------------
struct Svg {
  bool on = false;
  ImVec2 origin, size;
  std::string body;
} g_svg;

std::string svg_color(ImU32 c) {
  return fmt::format("#{:02x}{:02x}{:02x}", c & 0xFF, (c >> 8) & 0xFF, (c >> 16) & 0xFF);
}

std::string svg_escape(const char* s) {
  std::string out;
  for (; *s; ++s) {
    switch (*s) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      default: out += *s;
    }
  }
  return out;
}

// ---- script state ----------------------------------------------------------------------------
std::deque<std::pair<std::string, std::string>> g_script;

// ---- hex fields ------------------------------------------------------------------------------
struct HexState {
  std::string text;
  uint32_t shown = 0;
  bool init = false;
  std::string error;
};
std::unordered_map<ImGuiID, HexState> g_hex;

}  // namespace

// ---- bit figures ---------------------------------------------------------------------------

float bit_row_scale(float natural, float room, float least) {
  return std::min(1.0f, std::max(std::min(least, 1.0f), room / natural));
}

double nice_step(double top, int ticks) {
  const double raw = top / std::max(ticks, 1);
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * p >= raw) return m * p;
  }
  return 10 * p;
}

AxisTicks fitting_ticks(double top, int most, float span, float gap, float overhang,
                        const std::function<float(double)>& label_width) {
  AxisTicks t;
  for (int ticks = std::max(most, 1); ticks >= 1; --ticks) {
    t.step = nice_step(top, ticks);
    t.steps = static_cast<int>(std::ceil(top / t.step - 1e-9));
    bool fits = true;
    float right = -1e30f;  // where the label before ends
    for (int i = 0; i <= t.steps && fits; ++i) {
      const float tw = label_width(i * t.step);
      const float x = span * static_cast<float>(i) / static_cast<float>(t.steps);
      const float left = tick_label_left(x, tw, span, overhang);
      fits = left >= right + gap;
      right = left + tw;
    }
    if (fits) break;
  }
  return t;
}

BitRow bit_row(const char* id, uint32_t value, const BitColors& colors, const Ui& ui,
               const BitRowOptions& opt) {
  BitRow r;
  ImGui::PushID(id);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float em = ui.em;
  const int groups = (opt.width - 1) / 4;
  if (ui.mono) ImGui::PushFont(ui.mono);
  const float least = ImGui::CalcTextSize("0").x + 0.1f * em;
  if (ui.mono) ImGui::PopFont();
  const float wanted = opt.cell_em * em, natural = opt.width * wanted + groups * 0.35f * em;
  const float s = bit_row_scale(natural, ImGui::GetContentRegionAvail().x - opt.reserve, least / wanted);
  const float cw = s * wanted, ch = 1.5f * em, gap = s * 0.35f * em;
  const float label_h = opt.numbers ? 1.0f * em : 0.0f;
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  const float total_w = opt.width * cw + groups * gap;
  ImGui::InvisibleButton("##bits", ImVec2(total_w, ch + label_h));
  const bool hovered_row = ImGui::IsItemHovered();
  const bool clicked_row = opt.clickable && ImGui::IsItemClicked(ImGuiMouseButton_Left);
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  if (ui.mono) ImGui::PushFont(ui.mono);
  for (int k = 0; k < opt.width; ++k) {
    const int bit = opt.width - 1 - k;
    const float x = p0.x + k * cw + (k / 4) * gap;
    const ImVec2 a(x, p0.y + label_h), b(x + cw - 2.0f, p0.y + label_h + ch);
    r.cell_min[bit] = a;
    r.cell_max[bit] = b;
    const bool one = opt.digits ? true : ((value >> bit) & 1u) != 0;
    const ImU32 base = colors[static_cast<size_t>(bit)];
    const ImU32 fill = one ? base : scaled(base, 0.35f);
    const bool over =
        hovered_row && mouse.x >= a.x && mouse.x < b.x + 2.0f && mouse.y >= a.y && mouse.y < b.y;
    if (over) r.hovered = bit;
    if (over && clicked_row) r.clicked = bit;
    ImU32 border = 0;
    float thick = 1.0f;
    if ((opt.marked >> bit) & 1u) border = palette::kBad, thick = 2.5f;
    if (bit == opt.highlight || (over && opt.clickable)) border = palette::kHighlight, thick = 2.0f;
    rect_fig(dl, a, b, fill, border, thick);
    const char digit[2] = {opt.digits ? static_cast<char>('0' + opt.digits[bit]) : (one ? '1' : '0'), 0};
    const ImVec2 ts = ImGui::CalcTextSize(digit);
    text_fig(dl, ImVec2(x + (cw - 2.0f - ts.x) * 0.5f, a.y + (ch - ts.y) * 0.5f),
             one ? IM_COL32(255, 255, 255, 255) : IM_COL32(200, 200, 200, 255), digit);
    if (opt.numbers && (bit % 4 == 3 || bit == opt.width - 1)) {
      char num[12];
      std::snprintf(num, sizeof num, "%d", bit);
      text_fig(dl, ImVec2(x, p0.y), palette::kDim, num, ImGui::GetFontSize() * 0.8f);
    }
  }
  if (ui.mono) ImGui::PopFont();
  ImGui::PopID();
  return r;
}

void float_split(uint32_t v, bits::FloatFormat f, const Ui& ui) {
  const bits::Fields x = bits::fields_of(v, f);
  auto bin = [](uint32_t val, int w) {
    std::string s;
    for (int i = w - 1; i >= 0; --i) s += ((val >> i) & 1u) ? '1' : '0';
    return s;
  };
  if (ui.mono) ImGui::PushFont(ui.mono);
  ImGui::TextColored(palette::to_vec4(palette::kSign), "%u", x.sign);
  ImGui::SameLine(0, 0.5f * ui.em);
  ImGui::TextColored(palette::to_vec4(palette::kExponent), "%s", bin(x.exponent, f.ebits).c_str());
  ImGui::SameLine(0, 0.5f * ui.em);
  ImGui::TextColored(palette::to_vec4(palette::kMantissa), "%s", bin(x.mantissa, f.mbits).c_str());
  ImGui::SameLine(0, 0.5f * ui.em);
  ImGui::Text("= %s", number_text(bits::to_double(v, f)).c_str());
  if (ui.mono) ImGui::PopFont();
}

float byte_box_width(const Ui& ui, int n) {
  if (ui.mono) ImGui::PushFont(ui.mono);
  const float text = ImGui::CalcTextSize("0x00").x + 0.6f * ui.em;
  if (ui.mono) ImGui::PopFont();
  const float room = (ImGui::GetContentRegionAvail().x - (n - 1) * byte_box_gap(ui)) / n;
  return std::max(text, std::min(3.6f * ui.em, room));
}

int byte_boxes(const char* id, const uint8_t* bytes, int n, int first, const ImU32* fills, const Ui& ui,
               ImVec2* rect_min, ImVec2* rect_max, int highlight, const char* prefix, float width) {
  ImGui::PushID(id);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float w = width > 0 ? width : 3.6f * ui.em, h = 2.6f * ui.em, gap = byte_box_gap(ui);
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  int clicked = -1;
  if (ui.mono) ImGui::PushFont(ui.mono);
  for (int k = 0; k < n; ++k) {
    const int i = n - 1 - k;  // most significant byte first
    const ImVec2 a(p0.x + k * (w + gap), p0.y), b(a.x + w, a.y + h);
    ImGui::SetCursorScreenPos(a);
    ImGui::PushID(i);
    if (ImGui::InvisibleButton("##byte", ImVec2(w, h))) clicked = first + i;
    const bool over = ImGui::IsItemHovered();
    ImGui::PopID();
    if (rect_min) rect_min[i] = a;
    if (rect_max) rect_max[i] = b;
    const ImU32 border = (over || first + i == highlight) ? palette::kHighlight : palette::kDim;
    rect_fig(dl, a, b, fills ? fills[i] : palette::kConstant, border, over ? 2.0f : 1.0f);
    char label[16], hex[8];
    std::snprintf(label, sizeof label, "%s%d", prefix, first + i);
    std::snprintf(hex, sizeof hex, "0x%02x", bytes[i]);
    text_fig(dl, ImVec2(a.x + 0.3f * ui.em, a.y + 0.15f * ui.em), palette::kText, label);
    text_fig(dl, ImVec2(a.x + 0.3f * ui.em, a.y + 1.25f * ui.em), IM_COL32(255, 255, 255, 255), hex);
  }
  if (ui.mono) ImGui::PopFont();
  ImGui::SetCursorScreenPos(ImVec2(p0.x, p0.y + h));
  ImGui::Dummy(ImVec2(n * (w + gap), 0.2f * ui.em));
  ImGui::PopID();
  return clicked;
}

namespace {
// ImGui asks for a larger buffer as the text grows: the string is resized and lends its storage.
int resize_string(ImGuiInputTextCallbackData* d) {
  if (d->EventFlag == ImGuiInputTextFlags_CallbackResize) {
    auto* s = static_cast<std::string*>(d->UserData);
    s->resize(static_cast<size_t>(d->BufTextLen));
    d->Buf = s->data();
  }
  return 0;
}
}  // namespace

bool text_input(const char* label, std::string* text, ImGuiInputTextFlags flags, const char* hint) {
  flags |= ImGuiInputTextFlags_CallbackResize;
  if (hint) {
    return ImGui::InputTextWithHint(label, hint, text->data(), text->capacity() + 1, flags, resize_string,
                                    text);
  }
  return ImGui::InputText(label, text->data(), text->capacity() + 1, flags, resize_string, text);
}

Edit hex_input(const char* label, uint32_t* value, int digits, std::string* error, const Ui& ui,
               const char* script_key, float width_em) {
  const ImGuiID id = ImGui::GetID(label);
  HexState& st = g_hex[id];
  const auto show = [&](uint32_t v) { return fmt::format("0x{:0{}x}", v, digits); };
  if (!st.init || (st.shown != *value && st.error.empty())) {
    st.text = show(*value);
    st.shown = *value;
    st.init = true;
  }
  ImGui::SetNextItemWidth(width_em * ui.em);
  if (ui.mono) ImGui::PushFont(ui.mono);
  const bool enter = text_input(label, &st.text, ImGuiInputTextFlags_EnterReturnsTrue);
  if (ui.mono) ImGui::PopFont();
  bool apply = enter || ImGui::IsItemDeactivatedAfterEdit();
  if (script_key) {
    if (auto s = scripted(script_key)) {
      st.text = *s;
      apply = true;
    }
  }
  Edit result = Edit::None;
  if (apply) {
    const std::string what = fmt::format("the {} field", label[0] == '#' ? "hex" : label);
    const auto parsed = front::parse_hex(st.text, what, digits);
    if (front::ok(parsed)) {
      *value = std::get<uint32_t>(parsed);
      st.shown = *value;
      st.text = show(*value);
      st.error.clear();
      result = Edit::Changed;
    } else {
      st.error = std::get<std::string>(parsed);
      if (error) *error = st.error;
      result = Edit::Rejected;
    }
  } else if (!ImGui::IsItemActive() && !st.error.empty() && st.shown != *value) {
    // The value changed elsewhere: the new value replaces the rejected text.
    st.error.clear();
    st.text = show(*value);
    st.shown = *value;
  }
  if (!st.error.empty()) {
    ImGui::SameLine();
    ImGui::TextColored(palette::to_vec4(palette::kBad), "kept %s", show(*value).c_str());
  }
  return result;
}

void mono_text(const Ui& ui, const char* fmt, ...) {
  if (ui.mono) ImGui::PushFont(ui.mono);
  va_list args;
  va_start(args, fmt);
  ImGui::TextV(fmt, args);
  va_end(args);
  if (ui.mono) ImGui::PopFont();
}

float mono_width(const Ui& ui, const char* text) {
  if (ui.mono) ImGui::PushFont(ui.mono);
  const float w = ImGui::CalcTextSize(text).x;
  if (ui.mono) ImGui::PopFont();
  return w;
}

float mono_room(const Ui& ui, const char* text) {
  return mono_width(ui, text) + ImGui::GetStyle().ItemSpacing.x;
}

float rest_height(float least, float margin) {
  return std::max(least, ImGui::GetContentRegionAvail().y - margin);
}

void same_line_if_fits(float width, float spacing) {
  // Measured before moving: SameLine followed by NewLine would count the spacing after the last
  // item as content, and a row that ends at the edge would then make the view scroll sideways.
  const float gap = spacing < 0 ? ImGui::GetStyle().ItemSpacing.x : spacing;
  const float edge = ImGui::GetCursorScreenPos().x + ImGui::GetContentRegionAvail().x;
  if (ImGui::GetItemRectMax().x + gap + width <= edge) ImGui::SameLine(0, spacing);
}

float check_width(const char* label) {
  return ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x +
         ImGui::CalcTextSize(label, nullptr, true).x;
}

float button_width(const char* label) {
  return ImGui::CalcTextSize(label, nullptr, true).x + 2 * ImGui::GetStyle().FramePadding.x;
}

float labelled_width(float field, const char* label) {
  const float text = ImGui::CalcTextSize(label, nullptr, true).x;
  return text > 0 ? field + ImGui::GetStyle().ItemInnerSpacing.x + text : field;
}

namespace {
void wrapped_v(const char* fmt, va_list args) {
  // Text placed beside an item that already reaches the edge would wrap at a width of a letter or
  // less: one letter a line, the rest of the view pushed out of sight. It starts a line instead.
  const float edge = ImGui::GetContentRegionMax().x + ImGui::GetScrollX();
  if (edge - ImGui::GetCursorPosX() < 4.0f * ImGui::GetFontSize()) ImGui::NewLine();
  ImGui::PushTextWrapPos(std::max(1.0f, edge));
  ImGui::TextV(fmt, args);
  ImGui::PopTextWrapPos();
}
}  // namespace

void wrapped_text(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  wrapped_v(fmt, args);
  va_end(args);
}

void dim_text(const char* fmt, ...) {
  ImGui::PushStyleColor(ImGuiCol_Text, palette::to_vec4(palette::kDim));
  va_list args;
  va_start(args, fmt);
  wrapped_v(fmt, args);
  va_end(args);
  ImGui::PopStyleColor();
}

void error_text(const std::string& sentence) {
  if (sentence.empty()) return;
  ImGui::PushStyleColor(ImGuiCol_Text, palette::to_vec4(palette::kBad));
  wrapped_text("%s", sentence.c_str());
  ImGui::PopStyleColor();
}

// ---- SVG ---------------------------------------------------------------------------------------

void svg_begin(ImVec2 origin, ImVec2 size) {
  g_svg.on = true;
  g_svg.origin = origin;
  g_svg.size = size;
  g_svg.body.clear();
}

bool svg_capturing() { return g_svg.on; }

std::string svg_end() {
  g_svg.on = false;
  std::string doc = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} "
      "{1:.0f}\" font-family=\"DejaVu Sans Mono, monospace\">\n<rect width=\"100%\" height=\"100%\" "
      "fill=\"#1b1b20\"/>\n",
      g_svg.size.x, g_svg.size.y);
  doc += g_svg.body;
  doc += "</svg>\n";
  g_svg.body.clear();
  return doc;
}

void rect_fig(ImDrawList* dl, ImVec2 a, ImVec2 b, ImU32 fill, ImU32 border, float thickness) {
  // Square corners: four vertices a cell (rounded corners cost llvmpipe many more).
  dl->AddRectFilled(a, b, fill);
  if (border) dl->AddRect(a, b, border, 0.0f, 0, thickness);
  if (g_svg.on) {
    g_svg.body +=
        fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"",
                    a.x - g_svg.origin.x, a.y - g_svg.origin.y, b.x - a.x, b.y - a.y, svg_color(fill));
    if (border)
      g_svg.body += fmt::format(" stroke=\"{}\" stroke-width=\"{:.1f}\"", svg_color(border), thickness);
    g_svg.body += "/>\n";
  }
}

void text_fig(ImDrawList* dl, ImVec2 pos, ImU32 col, const char* text, float size_px) {
  const float size = size_px > 0 ? size_px : ImGui::GetFontSize();
  dl->AddText(ImGui::GetFont(), size, pos, col, text);
  if (g_svg.on) {
    g_svg.body += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"{:.1f}\" fill=\"{}\">{}</text>\n",
                              pos.x - g_svg.origin.x, pos.y - g_svg.origin.y + size * 0.8f, size * 0.85f,
                              svg_color(col), svg_escape(text));
  }
}

void line_fig(ImDrawList* dl, ImVec2 a, ImVec2 b, ImU32 col, float thickness) {
  dl->AddLine(a, b, col, thickness);
  if (g_svg.on) {
    g_svg.body += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
        "stroke-width=\"{:.1f}\"/>\n",
        a.x - g_svg.origin.x, a.y - g_svg.origin.y, b.x - g_svg.origin.x, b.y - g_svg.origin.y,
        svg_color(col), thickness);
  }
}

// ---- script --------------------------------------------------------------------------------------

std::optional<std::string> scripted(std::string_view key) {
  // Entries are applied in order: only the first pending entry may be taken.
  if (g_script.empty() || g_script.front().first != key) return std::nullopt;
  std::string v = std::move(g_script.front().second);
  g_script.pop_front();
  return v;
}

void script_push(std::string key, std::string value) {
  g_script.emplace_back(std::move(key), std::move(value));
}

bool script_pending() { return !g_script.empty(); }

std::optional<int> script_choice(Model& m, std::string_view key, std::string_view value,
                                 std::span<const std::string_view> names) {
  int i = 0;
  std::string list;
  for (const std::string_view n : names) {
    if (n == value) return i;
    list += fmt::format("{}{}", i == 0 ? "" : i + 1 == static_cast<int>(names.size()) ? " or " : ", ", n);
    ++i;
  }
  m.set_error(
      fmt::format("{} '{}' is not a choice it offers: give {}; the setting is kept", key, value, list));
  return std::nullopt;
}

std::optional<std::string> script_front_key() {
  if (g_script.empty()) return std::nullopt;
  return g_script.front().first;
}

// ---- numbers -------------------------------------------------------------------------------------

std::string number_text(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  if (v == 0.0) return std::signbit(v) ? "-0" : "0";
  return fmt::format("{}", v);
}

std::string exact_decimal(uint32_t b, bits::FloatFormat f) {
  const bits::Unpacked u = bits::unpack(b, f);
  const char* sign = u.neg ? "-" : "";
  if (u.cls == bits::FpClass::NaN) return "nan";
  if (u.cls == bits::FpClass::Inf) return std::string(sign) + "inf";
  if (u.cls == bits::FpClass::Zero) return std::string(sign) + "0";
  // sig * 2^exp: as an integer times 5^k / 10^k when exp = -k < 0. Digits in base 10^9.
  std::vector<uint32_t> limbs{0};
  uint64_t sig = u.sig;
  limbs.clear();
  while (sig) {
    limbs.push_back(static_cast<uint32_t>(sig % 1000000000u));
    sig /= 1000000000u;
  }
  auto mul = [&](uint32_t k) {
    uint64_t carry = 0;
    for (auto& l : limbs) {
      const uint64_t x = static_cast<uint64_t>(l) * k + carry;
      l = static_cast<uint32_t>(x % 1000000000u);
      carry = x / 1000000000u;
    }
    while (carry) {
      limbs.push_back(static_cast<uint32_t>(carry % 1000000000u));
      carry /= 1000000000u;
    }
  };
  const int k = u.exp < 0 ? -u.exp : 0;
  for (int i = 0; i < u.exp; ++i) mul(2);
  for (int i = 0; i < k; ++i) mul(5);
  std::string digits = fmt::format("{}", limbs.back());
  for (size_t i = limbs.size() - 1; i-- > 0;) digits += fmt::format("{:09d}", limbs[i]);
  if (k == 0) return sign + digits;
  if (static_cast<int>(digits.size()) <= k) digits.insert(0, static_cast<size_t>(k) + 1 - digits.size(), '0');
  std::string out = digits.substr(0, digits.size() - static_cast<size_t>(k)) + "." +
                    digits.substr(digits.size() - static_cast<size_t>(k));
  while (out.back() == '0') out.pop_back();
  if (out.back() == '.') out.pop_back();
  return sign + out;
}

}  // namespace dql::gui
