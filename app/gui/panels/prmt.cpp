// PRMT: the eight bytes of {b, a}, the selector, and arrows from each source byte to the
// destination byte it fills; sign replication and the six special modes. The result comes from
// the engine's prmt.
#include "kernels/bits/prmt.hpp"

#include <fmt/format.h>
#include <imgui.h>

#include <string>

#include "app/gui/model.hpp"
#include "app/gui/widgets.hpp"
#include "kernels/recipes/catalog.hpp"

namespace dql::gui {

namespace {

constexpr const char* kModes[] = {"generic", "f4e", "b4e", "rc8", "ecl", "ecr", "rc16"};
constexpr const char* kModeHelp[] = {
    "each selector nibble picks a byte b0..b7 of {b, a}; its top bit replicates that byte's sign",
    "forward 4 extract: d[i] = b[s + i]",
    "backward 4 extract: d[i] = b[(s - i) mod 8]",
    "replicate byte s into all four",
    "edge clamp left: d[i] = b[max(i, s)]",
    "edge clamp right: d[i] = b[min(i, s)]",
    "replicate the 16-bit half s & 1"};

struct PrmtState {
  std::string error;
} g;

void arrow(ImDrawList* dl, ImVec2 from, ImVec2 to, ImU32 col, float em) {
  line_fig(dl, from, to, col, 0.15f * em);
  // Arrowhead.
  const float dx = to.x - from.x, dy = to.y - from.y;
  const float len = std::sqrt(dx * dx + dy * dy);
  if (len < 1.0f) return;
  const float ux = dx / len, uy = dy / len, s = 0.5f * em;
  const ImVec2 p1(to.x - ux * s - uy * s * 0.5f, to.y - uy * s + ux * s * 0.5f);
  const ImVec2 p2(to.x - ux * s + uy * s * 0.5f, to.y - uy * s - ux * s * 0.5f);
  dl->AddTriangleFilled(to, p1, p2, col);
  line_fig(dl, to, p1, col, 0.15f * em);
  line_fig(dl, to, p2, col, 0.15f * em);
}

}  // namespace

void draw_prmt(Model& m, const Ui& ui) {
  const bool generic = m.prmt_mode == bits::PrmtMode::Generic;
  // The step this came from.
  if (!m.trace.steps.empty() && m.step >= 0 && m.step < static_cast<int>(m.trace.steps.size())) {
    const auto& s = m.trace.steps[static_cast<size_t>(m.step)];
    if (s.kind == recipes::OpKind::Prmt && s.srcs.size() >= 2 && s.srcs[0].value == m.prmt_a &&
        s.srcs[1].value == m.prmt_b && (s.imm & 0xFFFFu) == m.prmt_sel && generic) {
      ImGui::TextColored(palette::to_vec4(palette::kHighlight), "step %d of %s:", m.step,
                         recipes::info_of(m.recipe).spec->name);
      ImGui::SameLine();
      mono_text(ui, "%s", s.ptx.c_str());
    }
  }

  std::string err;
  const auto report = [&](Edit e) {
    if (e == Edit::Rejected) {
      g.error = err;
      m.set_error(err);
    } else if (e == Edit::Changed) {
      g.error.clear();
    }
  };
  report(hex_input("a", &m.prmt_a, 8, &err, ui, "prmt.a"));
  same_line_if_fits(labelled_width(8.0f * ui.em, "b"));
  report(hex_input("b", &m.prmt_b, 8, &err, ui, "prmt.b"));
  same_line_if_fits(labelled_width(6.0f * ui.em, "selector"));
  report(hex_input("selector", &m.prmt_sel, 4, &err, ui, "prmt.sel", 6.0f));
  same_line_if_fits(labelled_width(7.0f * ui.em, "mode"));
  int mode = static_cast<int>(m.prmt_mode);
  ImGui::SetNextItemWidth(7.0f * ui.em);
  if (ImGui::Combo("mode", &mode, kModes, IM_ARRAYSIZE(kModes)))
    m.prmt_mode = static_cast<bits::PrmtMode>(mode);
  if (auto s = scripted("prmt.mode")) {
    if (auto i = script_choice(m, "prmt.mode", *s, kModes, [](const char* name) { return name; }))
      m.prmt_mode = static_cast<bits::PrmtMode>(*i);
  }
  same_line_if_fits(button_width("identity example"));
  if (ImGui::Button("identity example")) {
    m.prmt_a = 0x03020100u;
    m.prmt_b = 0x07060504u;
  }
  error_text(g.error);
  dim_text("%s", kModeHelp[static_cast<int>(m.prmt_mode)]);

  const uint32_t d = bits::soft_prmt(m.prmt_a, m.prmt_b, m.prmt_sel, m.prmt_mode);
  mono_text(ui, "prmt.b32%s d, a, b, 0x%04x   ->   d = 0x%08x",
            generic ? "" : (std::string(".") + kModes[mode]).c_str(), m.prmt_sel, d);
  ImGui::Spacing();

  // Sources: b7 .. b0 across {b, a}.
  uint8_t src[8];
  ImU32 src_fill[8];
  for (int i = 0; i < 8; ++i) {
    src[i] = static_cast<uint8_t>(((i < 4 ? m.prmt_a : m.prmt_b) >> (8 * (i & 3))) & 0xFFu);
    src_fill[i] = (palette::element(i) & 0x00FFFFFFu) | 0xA0000000u;
  }
  ImGui::TextUnformatted("source {b, a}:  b = b7 b6 b5 b4,  a = b3 b2 b1 b0");
  ImVec2 smin[8], smax[8];
  const float box = byte_box_width(ui, 8);
  byte_boxes("src", src, 8, 0, src_fill, ui, smin, smax, -1, "b", box);
  ImGui::Dummy(ImVec2(0, 3.0f * ui.em));

  // Destination bytes: where each comes from.
  int from[4];
  bool sign[4];
  uint8_t dst[4];
  ImU32 dst_fill[4];
  for (int i = 0; i < 4; ++i) {
    const uint32_t nib = (m.prmt_sel >> (4 * i)) & 0xFu;
    from[i] = generic ? static_cast<int>(nib & 7u)
                      : static_cast<int>(
                            bits::prmt_mode_source(m.prmt_mode, static_cast<uint32_t>(i), m.prmt_sel & 3u));
    sign[i] = generic && (nib & 8u);
    dst[i] = static_cast<uint8_t>((d >> (8 * i)) & 0xFFu);
    dst_fill[i] = sign[i] ? IM_COL32(90, 90, 90, 255) : src_fill[from[i]];
  }
  // Centre the four destination boxes under the eight sources.
  ImGui::SetCursorPosX(ImGui::GetCursorPosX() + 2.0f * (box + byte_box_gap(ui)));
  ImVec2 dmin[4], dmax[4];
  const int clicked = byte_boxes("dst", dst, 4, 0, dst_fill, ui, dmin, dmax, -1, "d", box);
  if (clicked >= 0 && generic) {
    const uint32_t nib = ((m.prmt_sel >> (4 * clicked)) + 1u) & 0xFu;
    m.prmt_sel = (m.prmt_sel & ~(0xFu << (4 * clicked))) | (nib << (4 * clicked));
  }
  ImDrawList* dl = ImGui::GetWindowDrawList();
  for (int i = 0; i < 4; ++i) {
    const ImVec2 a((smin[from[i]].x + smax[from[i]].x) * 0.5f, smax[from[i]].y + 0.1f * ui.em);
    const ImVec2 b((dmin[i].x + dmax[i].x) * 0.5f, dmin[i].y - 0.1f * ui.em);
    arrow(dl, a, b, sign[i] ? palette::kSign : palette::element(from[i]), ui.em);
  }
  ImGui::TextUnformatted("destination d = d3 d2 d1 d0");
  if (generic)
    dim_text(
        "Click a destination byte to step its selector nibble to the next source (0-7, then 8-15 with "
        "sign).");

  // Selector nibbles, most significant first.
  ImGui::Spacing();
  if (ImGui::BeginTable("selector", 5, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit)) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted("dest");
    for (int i = 3; i >= 0; --i) {
      ImGui::TableNextColumn();
      ImGui::Text("d%d", i);
    }
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(generic ? "nibble" : "c[1:0]");
    for (int i = 3; i >= 0; --i) {
      ImGui::TableNextColumn();
      if (generic) {
        mono_text(ui, "0x%x", (m.prmt_sel >> (4 * i)) & 0xFu);
      } else {
        mono_text(ui, "%u", m.prmt_sel & 3u);
      }
    }
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted("takes");
    for (int i = 3; i >= 0; --i) {
      ImGui::TableNextColumn();
      if (sign[i]) {
        ImGui::TextColored(palette::to_vec4(palette::kSign), "sign of b%d", from[i]);
        dim_text("bit 7 = %d -> 0x%02x", (src[from[i]] >> 7) & 1, dst[i]);
      } else {
        ImGui::TextColored(palette::to_vec4(palette::element(from[i])), "b%d", from[i]);
      }
    }
    ImGui::EndTable();
  }
}

}  // namespace dql::gui
