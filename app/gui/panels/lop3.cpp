// LOP3: the 8-row truth table of an immLut, the expression it stands for (parsed by the
// engine's parser), its minimal form, and the function applied bit by bit to three operands,
// each result bit linked to the table row that produced it.
#include "kernels/bits/lop3.hpp"

#include <fmt/format.h>
#include <imgui.h>

#include <algorithm>
#include <string>

#include "app/gui/model.hpp"
#include "app/gui/widgets.hpp"
#include "kernels/bits/lop3_expr.hpp"
#include "kernels/recipes/catalog.hpp"

namespace dql::gui {

namespace {

struct Lop3State {
  std::string expr;
  std::string expr_error;
  std::string operand_error;
  int hover_row = -1;  // the table row under the mouse (previous frame)
  int hover_bit = -1;  // the result bit under the mouse (previous frame)
  int shown_lut = -1;  // the immLut the expression box was last filled from
} g;

int row_of_bit(uint32_t a, uint32_t b, uint32_t c, int bit) {
  return static_cast<int>((((a >> bit) & 1u) << 2) | (((b >> bit) & 1u) << 1) | ((c >> bit) & 1u));
}

// The table as a sum of its rows (canonical DNF), e.g. "(a & ~b & c) | ...".
std::string dnf(uint8_t lut) {
  if (lut == 0) return "0";
  if (lut == 0xFF) return "1";
  std::string s;
  for (int r = 0; r < 8; ++r) {
    if (!((lut >> r) & 1)) continue;
    if (!s.empty()) s += " | ";
    s += fmt::format("({}a & {}b & {}c)", (r & 4) ? "" : "~", (r & 2) ? "" : "~", (r & 1) ? "" : "~");
  }
  return s;
}

void draw_table(Model& m, const Ui& ui, uint32_t result_rows_used) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float cw = 2.2f * ui.em, ch = 1.6f * ui.em;
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  const char* heads[] = {"row", "a", "b", "c", "out"};
  const ImU32 head_col[] = {palette::kDim, palette::kText, palette::kText, palette::kText,
                            palette::kHighlight};
  for (int k = 0; k < 5; ++k) text_fig(dl, ImVec2(p0.x + k * cw + 0.4f * ui.em, p0.y), head_col[k], heads[k]);
  ImGui::Dummy(ImVec2(5 * cw, ch));
  int hovered = -1;
  for (int r = 0; r < 8; ++r) {
    const ImVec2 rp = ImGui::GetCursorScreenPos();
    const bool out = (m.lop3_lut >> r) & 1u;
    const bool linked = r == g.hover_row || ((result_rows_used >> r) & 1u && g.hover_bit >= 0 &&
                                             row_of_bit(m.lop3_a, m.lop3_b, m.lop3_c, g.hover_bit) == r);
    char t[8];
    std::snprintf(t, sizeof t, "%d", r);
    rect_fig(dl, rp, ImVec2(rp.x + cw - 2, rp.y + ch - 2), palette::element(r) & 0x90FFFFFFu,
             linked ? palette::kHighlight : 0u, 2.0f);
    text_fig(dl, ImVec2(rp.x + 0.7f * ui.em, rp.y + 0.2f * ui.em), palette::kText, t);
    for (int k = 0; k < 3; ++k) {
      const int bit = (r >> (2 - k)) & 1;
      const ImVec2 a(rp.x + (k + 1) * cw, rp.y);
      rect_fig(dl, a, ImVec2(a.x + cw - 2, a.y + ch - 2),
               bit ? IM_COL32(70, 70, 90, 255) : IM_COL32(40, 40, 50, 255));
      text_fig(dl, ImVec2(a.x + 0.7f * ui.em, a.y + 0.2f * ui.em), palette::kText, bit ? "1" : "0");
    }
    const ImVec2 a(rp.x + 4 * cw, rp.y);
    ImGui::SetCursorScreenPos(a);
    ImGui::PushID(r);
    if (ImGui::InvisibleButton("##out", ImVec2(cw - 2, ch - 2))) {
      m.lop3_lut = static_cast<uint8_t>(m.lop3_lut ^ (1u << r));
    }
    const bool over = ImGui::IsItemHovered();
    ImGui::PopID();
    if (over) {
      hovered = r;
      ImGui::SetTooltip("row %d: a=%d b=%d c=%d gives %d; click to toggle (immLut bit %d)", r, (r >> 2) & 1,
                        (r >> 1) & 1, r & 1, out ? 1 : 0, r);
    }
    rect_fig(dl, a, ImVec2(a.x + cw - 2, a.y + ch - 2), out ? palette::kGood : IM_COL32(60, 40, 40, 255),
             over || linked ? palette::kHighlight : 0u, 2.0f);
    text_fig(dl, ImVec2(a.x + 0.7f * ui.em, a.y + 0.2f * ui.em), IM_COL32(255, 255, 255, 255),
             out ? "1" : "0");
    ImGui::SetCursorScreenPos(ImVec2(rp.x, rp.y + ch));
  }
  ImGui::Dummy(ImVec2(5 * cw, 0.2f * ui.em));
  g.hover_row = hovered;
}

}  // namespace

void draw_lop3(Model& m, const Ui& ui) {
  // The step this came from, when the stepper's current step is this lop3.
  if (!m.trace.steps.empty() && m.step >= 0 && m.step < static_cast<int>(m.trace.steps.size())) {
    const auto& s = m.trace.steps[static_cast<size_t>(m.step)];
    if (s.kind == recipes::OpKind::Lop3 && s.imm == m.lop3_lut && s.srcs.size() >= 3 &&
        s.srcs[0].value == m.lop3_a && s.srcs[1].value == m.lop3_b && s.srcs[2].value == m.lop3_c) {
      ImGui::TextColored(palette::to_vec4(palette::kHighlight), "step %d of %s:", m.step,
                         recipes::info_of(m.recipe).spec->name);
      ImGui::SameLine();
      mono_text(ui, "%s", s.ptx.c_str());
    }
  }

  // immLut and expression.
  uint32_t lut = m.lop3_lut;
  std::string err;
  const Edit e = hex_input("immLut", &lut, 2, &err, ui, "lop3.lut", 5.0f);
  if (e == Edit::Changed) m.lop3_lut = static_cast<uint8_t>(lut);
  if (e == Edit::Rejected) m.set_error(err);
  same_line_if_fits(12.0f * ui.em, 2.0f * ui.em);
  dim_text("PTX convention: immLut = F(a = 0xF0, b = 0xCC, c = 0xAA)");

  if (g.shown_lut != m.lop3_lut && g.expr_error.empty()) {
    g.expr = bits::minimal_lop3_expr(m.lop3_lut);
    g.shown_lut = m.lop3_lut;
  }
  if (ui.mono) ImGui::PushFont(ui.mono);  // the label too: its width in the monospace font
  ImGui::SetNextItemWidth(std::clamp(ImGui::GetContentRegionAvail().x - labelled_width(0, "expression"),
                                     10.0f * ui.em, 24.0f * ui.em));
  bool apply = text_input("expression", &g.expr, ImGuiInputTextFlags_EnterReturnsTrue);
  if (ui.mono) ImGui::PopFont();
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip("a, b, c, 0, 1 with & ^ | and ~ or ! and parentheses; | binds loosest, & tightest");
  }
  if (auto s = scripted("lop3.expr")) {
    g.expr = *s;
    apply = true;
  }
  if (apply) {
    const auto r = bits::parse_lop3_expr(g.expr);
    if (const auto* lutp = std::get_if<uint8_t>(&r)) {
      m.lop3_lut = *lutp;
      g.shown_lut = m.lop3_lut;
      g.expr_error.clear();
    } else {
      const auto& pe = std::get<bits::ExprError>(r);
      g.expr_error = fmt::format(
          "The expression '{}' is not valid at column {}: {}. Accepted: a, b, c, 0, 1, "
          "& ^ |, ~ or !, parentheses.",
          g.expr, pe.column, pe.message);
      m.set_error(g.expr_error);
    }
  }
  error_text(g.expr_error);
  if (!g.expr_error.empty()) {
    ImGui::SameLine();
    if (ImGui::SmallButton("keep the table")) {
      g.expr_error.clear();
      g.shown_lut = -1;
    }
  }

  ImGui::BeginGroup();
  draw_table(m, ui, 0xFFu);
  ImGui::EndGroup();
  ImGui::SameLine(0, 2.0f * ui.em);
  ImGui::BeginGroup();
  mono_text(ui, "immLut = 0x%02x", m.lop3_lut);
  mono_text(ui, "minimal: %s", bits::minimal_lop3_expr(m.lop3_lut).c_str());
  dim_text("(%d operator%s)", bits::minimal_lop3_cost(m.lop3_lut),
           bits::minimal_lop3_cost(m.lop3_lut) == 1 ? "" : "s");
  ImGui::PushTextWrapPos(
      std::min(ImGui::GetCursorPosX() + 40.0f * ui.em, ImGui::GetContentRegionMax().x + ImGui::GetScrollX()));
  mono_text(ui, "rows (DNF): %s", dnf(m.lop3_lut).c_str());
  ImGui::PopTextWrapPos();
  ImGui::Spacing();

  // Operands.
  const char* names[3] = {"a", "b", "c"};
  uint32_t* ops[3] = {&m.lop3_a, &m.lop3_b, &m.lop3_c};
  const char* keys[3] = {"lop3.a", "lop3.b", "lop3.c"};
  for (int k = 0; k < 3; ++k) {
    const Edit oe = hex_input(names[k], ops[k], 8, &err, ui, keys[k]);
    if (oe == Edit::Rejected) {
      g.operand_error = err;
      m.set_error(err);
    } else if (oe == Edit::Changed) {
      g.operand_error.clear();
    }
    if (k < 2) same_line_if_fits(labelled_width(8.0f * ui.em, names[k + 1]));
  }
  error_text(g.operand_error);
  ImGui::EndGroup();
  ImGui::Separator();

  // The function applied bit by bit: each result bit coloured by the table row it used.
  const uint32_t d = bits::soft_lop3(m.lop3_a, m.lop3_b, m.lop3_c, m.lop3_lut);
  BitColors by_row;
  int8_t rows[32];
  uint32_t row_mask = 0;  // result bits that used the hovered table row
  for (int b = 0; b < 32; ++b) {
    const int r = row_of_bit(m.lop3_a, m.lop3_b, m.lop3_c, b);
    rows[b] = static_cast<int8_t>(r);
    by_row[static_cast<size_t>(b)] = palette::element(r);
    if (r == g.hover_row) row_mask |= 1u << b;
  }
  BitRowOptions o;
  o.highlight = g.hover_bit;
  // Every row keeps room for a register's hex at its right, so that the rows stay in columns.
  o.reserve = mono_room(ui, "0x00000000");
  const BitColors plain = colors_uniform(IM_COL32(110, 110, 130, 255));
  int hovered_bit = -1;
  for (int k = 0; k < 3; ++k) {
    mono_text(ui, "%s", names[k]);
    ImGui::SameLine(3.0f * ui.em);
    o.numbers = k == 0;
    const BitRow r = bit_row(names[k], *ops[k], plain, ui, o);
    if (r.hovered >= 0) hovered_bit = r.hovered;
    same_line_if_fits(mono_width(ui, "0x00000000"));
    mono_text(ui, "0x%08x", *ops[k]);
  }
  mono_text(ui, "row");
  ImGui::SameLine(3.0f * ui.em);
  {
    BitRowOptions ro = o;
    ro.numbers = false;
    ro.marked = row_mask;
    ro.digits = rows;  // each cell names the table row its bit used
    const BitRow r = bit_row("rows", d, by_row, ui, ro);
    if (r.hovered >= 0) hovered_bit = r.hovered;
  }
  same_line_if_fits(12.0f * ui.em);
  dim_text("the table row each result bit used (hover a bit or a row)");
  mono_text(ui, "d");
  ImGui::SameLine(3.0f * ui.em);
  {
    BitRowOptions ro = o;
    ro.numbers = false;
    ro.marked = row_mask;
    const BitRow r = bit_row("d", d, colors_uniform(palette::kGood), ui, ro);
    if (r.hovered >= 0) hovered_bit = r.hovered;
  }
  same_line_if_fits(mono_width(ui, "0x00000000"));
  mono_text(ui, "0x%08x", d);
  g.hover_bit = hovered_bit;
  if (hovered_bit >= 0) {
    const int r = row_of_bit(m.lop3_a, m.lop3_b, m.lop3_c, hovered_bit);
    ImGui::SetTooltip("bit %d: a=%d b=%d c=%d is row %d of the table, which gives %d", hovered_bit,
                      (r >> 2) & 1, (r >> 1) & 1, r & 1, r, (m.lop3_lut >> r) & 1);
  }
}

}  // namespace dql::gui
