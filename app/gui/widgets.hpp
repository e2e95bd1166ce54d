// Widgets every view shares: bit rows, float field splits, byte boxes, a hex entry, the colour
// palette, figure recording for SVG export and the test script hook. They draw what they are
// given; the values come from the model and the engine.
//
// Sizes are multiples of ui.em. Colours: one palette for all views (sign / exponent / mantissa,
// the 8 hues of a packed register's nibbles), so a field looks the same everywhere.
#pragma once

#include <imgui.h>

#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "app/gui/model.hpp"
#include "kernels/bits/float.hpp"

namespace dql::gui {

// ---- palette -------------------------------------------------------------------------------
namespace palette {
inline constexpr ImU32 kSign = IM_COL32(222, 76, 76, 255);
inline constexpr ImU32 kExponent = IM_COL32(72, 178, 96, 255);
inline constexpr ImU32 kMantissa = IM_COL32(72, 128, 222, 255);
inline constexpr ImU32 kConstant = IM_COL32(96, 96, 108, 255);  // bits no input element reaches
inline constexpr ImU32 kMixed = IM_COL32(170, 170, 170, 255);   // bits several elements reach
inline constexpr ImU32 kGood = IM_COL32(90, 200, 110, 255);
inline constexpr ImU32 kBad = IM_COL32(240, 70, 70, 255);
inline constexpr ImU32 kHighlight = IM_COL32(255, 220, 80, 255);  // hover / selection outline
inline constexpr ImU32 kText = IM_COL32(235, 235, 235, 255);
inline constexpr ImU32 kDim = IM_COL32(150, 150, 160, 255);
// Element i of a packed register (logical index, so element 3 has one hue in every view).
ImU32 element(int i);
ImVec4 to_vec4(ImU32 c);
}  // namespace palette

// Per-bit colours (index = bit number, bit 0 = least significant).
using BitColors = std::array<ImU32, 32>;
// By the model's provenance (Model::bit_source rows).
BitColors colors_by_source(const std::array<int8_t, 32>& source);
// By float field: `lanes` lanes of format f side by side from bit 0 (2 for f16x2, 1 for fp32).
BitColors colors_by_float(bits::FloatFormat f, int lanes);
// By packed element: slot i (width `elem_bits`) holds logical element order[i].
BitColors colors_by_slot(int elem_bits, const uint8_t* order, int slots);
BitColors colors_uniform(ImU32 c);

// ---- bit figures ---------------------------------------------------------------------------
struct BitRowOptions {
  int width = 32;                  // number of bits drawn, MSB left
  uint32_t marked = 0;             // bits outlined in palette::kBad (differences)
  int highlight = -1;              // one bit outlined in palette::kHighlight
  bool clickable = false;          // cells are buttons; BitRow::clicked says which
  bool numbers = true;             // bit numbers above each nibble
  float cell_em = 1.15f;           // cell width in em where the row fits
  const int8_t* digits = nullptr;  // per bit: a digit 0-9 drawn (bright) instead of the bit value
  float reserve = 0.0f;            // pixels kept free right of the row (for what follows it) when narrowing
};
struct BitRow {
  int clicked = -1;                   // bit number clicked this frame
  int hovered = -1;                   // bit number under the mouse
  ImVec2 cell_min[32], cell_max[32];  // screen rectangles, for arrows and links
};
// One row of bits, 1s bright and 0s dim in their colour, a gap every 4 bits. Where the row at
// cell_em would run past the view's visible edge, its cells narrow to fit, down to a digit's width
// (rows that start at the same place narrow alike, so their bits stay in columns).
BitRow bit_row(const char* id, uint32_t value, const BitColors& colors, const Ui& ui,
               const BitRowOptions& opt = {});

// The factor a bit row's cells and gaps are drawn at: 1 where its natural width fits the room,
// less where it does not, but not below `least` (a cell a digit wide; 1 when that is above 1).
float bit_row_scale(float natural, float room, float least);

// The 1-2-5 step (1, 2, 5, 10, 20, ...) of a linear axis from 0 that takes about `ticks` steps to reach
// `top`.
double nice_step(double top, int ticks);
// The ticks of a linear axis from 0: 0, step, .., steps x step, the last the first at or past `top`.
struct AxisTicks {
  double step = 0.0;
  int steps = 0;
};
// The finest 1-2-5 step, from about `most` steps down to one, whose tick labels stand at least `gap`
// apart on an axis `span` wide: each label (label_width of its tick's value) centred on its tick, but
// pushed left so that it ends no more than `overhang` past the axis's end (tick_label_left). The
// coarsest step where none fits.
AxisTicks fitting_ticks(double top, int most, float span, float gap, float overhang,
                        const std::function<float(double)>& label_width);
// Where a label `width` wide starts for a tick at `x` on an axis ending at `end`, as fitting_ticks places it.
inline float tick_label_left(float x, float width, float end, float overhang) {
  return x - width / 2 < end + overhang - width ? x - width / 2 : end + overhang - width;
}

// One float split into sign | exponent | mantissa boxes followed by "= value" (exact, shortest).
void float_split(uint32_t bits, bits::FloatFormat f, const Ui& ui);

// Byte boxes b[first + n - 1] .. b[first] left to right (MSB left), each labelled "b<i>" and
// "0x..", `width` pixels wide (0: 3.6 em). Returns the index clicked or -1; rectangles come back through
// `rects` (n entries).
int byte_boxes(const char* id, const uint8_t* bytes, int n, int first, const ImU32* fills, const Ui& ui,
               ImVec2* rect_min = nullptr, ImVec2* rect_max = nullptr, int highlight = -1,
               const char* prefix = "b", float width = 0.0f);
// The width of a byte box where `n` of them share what is left of the line: 3.6 em, narrower where the
// line is short, never narrower than the box's text.
float byte_box_width(const Ui& ui, int n);
// The space between byte boxes.
inline float byte_box_gap(const Ui& ui) { return 0.4f * ui.em; }

// A hex entry bound to *value. The text is applied on Enter or when the field loses focus;
// a string parse_hex refuses leaves *value unchanged, writes the sentence to *error and returns
// Rejected (the view also calls m.set_error). `script_key`: a test script entry that types into
// the field (see scripted()).
enum class Edit { None, Changed, Rejected };

// A text field bound to a std::string: it holds whatever length is typed or pasted (the string
// grows with the text), so nothing is cut off. Returns what ImGui::InputText returns for `flags`
// (with ImGuiInputTextFlags_EnterReturnsTrue: true on Enter). `hint`: grey text while empty.
bool text_input(const char* label, std::string* text, ImGuiInputTextFlags flags = 0,
                const char* hint = nullptr);
Edit hex_input(const char* label, uint32_t* value, int digits, std::string* error, const Ui& ui,
               const char* script_key = nullptr, float width_em = 8.0f);

// Text in the monospace font.
void mono_text(const Ui& ui, const char* fmt, ...) IM_FMTARGS(2);
// A labelled value line in the dim colour.
void dim_text(const char* fmt, ...) IM_FMTARGS(1);
// Text wrapped at the right edge of the window's visible width (or of the table column it is in).
// ImGui's TextWrapped wraps at the content's width where a window scrolls sideways, so a line wrapped
// once at a wider width kept the content that wide, and the text ran under the edge for good.
void wrapped_text(const char* fmt, ...) IM_FMTARGS(1);
// ImGui::SameLine() where an item `width` wide fits in what is left of the line; else the next item
// starts a new line (at a large text size a row of controls wraps instead of running off the edge).
// `spacing` as ImGui::SameLine takes it (-1: the style's), before the item where it stays on the line.
void same_line_if_fits(float width, float spacing = -1.0f);
// Widths for same_line_if_fits: a checkbox or radio button, a button (small or not), a field `field`
// wide with its label beside it. Label text after "##" is not shown and not counted.
float check_width(const char* label);
float mono_width(const Ui& ui, const char* text);  // text in the monospaced font
// The room monospaced `text` takes after an item on the same line (its width and the spacing before it).
float mono_room(const Ui& ui, const char* text);
// The height left below the cursor less `margin`, but `least` at least: a figure or list that fills the
// rest of the view and, where little is left (large text), keeps its size and lets the view scroll.
float rest_height(float least, float margin = 0.0f);
float button_width(const char* label);
float labelled_width(float field, const char* label);
// An error sentence in red, wrapped.
void error_text(const std::string& sentence);

// ---- SVG figures ---------------------------------------------------------------------------
// While a capture is on, rect_fig / text_fig (and every widget above) also record SVG elements
// relative to `origin`. The shell starts a capture for one frame and writes the result.
void svg_begin(ImVec2 origin, ImVec2 size);
bool svg_capturing();
std::string svg_end();  // the finished document
void rect_fig(ImDrawList* dl, ImVec2 a, ImVec2 b, ImU32 fill, ImU32 border = 0, float thickness = 1.0f);
void text_fig(ImDrawList* dl, ImVec2 pos, ImU32 col, const char* text, float size_px = 0.0f);
void line_fig(ImDrawList* dl, ImVec2 a, ImVec2 b, ImU32 col, float thickness = 1.0f);

// ---- test script ---------------------------------------------------------------------------
// `--script "key=value;key=value"` (for tests) feeds input to the views as if typed. A view asks
// for its keys each frame; a value is handed out once. Keys are "<view>.<field>", e.g.
// "lop3.expr", "stepper.hex", "float.hex".
std::optional<std::string> scripted(std::string_view key);
void script_push(std::string key, std::string value);
bool script_pending();
// The key of the first pending entry, if any.
std::optional<std::string> script_front_key();
// The index of `value` among `names` (what a script key takes, as the view's control offers it), or
// nothing: then the model's error says that `key` does not take `value` and lists `names`, and the
// caller keeps its setting.
std::optional<int> script_choice(Model& m, std::string_view key, std::string_view value,
                                 std::span<const std::string_view> names);
inline std::optional<int> script_choice(Model& m, std::string_view key, std::string_view value,
                                        std::initializer_list<std::string_view> names) {
  return script_choice(m, key, value, std::span<const std::string_view>(names.begin(), names.size()));
}
// The same over the entries a control lists (a combo's or radio buttons' array), `name` giving each
// entry's text, so that an entry added to the control is offered to scripts too.
template <class Entries, class Name>
std::optional<int> script_choice(Model& m, std::string_view key, std::string_view value,
                                 const Entries& entries, Name name) {
  std::vector<std::string_view> names;
  for (const auto& e : entries) names.emplace_back(name(e));
  return script_choice(m, key, value, std::span<const std::string_view>(names));
}
// A script value parsed by `parse` (the app/common/parse.hpp functions): the value, or nothing with
// the parser's sentence as the model's error (the caller keeps its setting).
template <class T>
std::optional<T> script_value(Model& m, std::variant<T, std::string> parsed) {
  if (auto* v = std::get_if<T>(&parsed)) return *v;
  m.set_error(std::get<std::string>(parsed) + "; the setting is kept");
  return std::nullopt;
}

// Shortest decimal that reads back exactly ("-0", "inf", "nan" included).
std::string number_text(double v);
// The exact decimal expansion of a float pattern (every binary float is a finite decimal).
std::string exact_decimal(uint32_t bits, bits::FloatFormat f);

}  // namespace dql::gui
