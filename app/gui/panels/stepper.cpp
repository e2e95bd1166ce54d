// Stepper: one register through a recipe, one instruction at a time. The trace, the bits'
// provenance, the GPU's bits and the reference outputs all come from the model (Model::retrace).
#include <fmt/format.h>
#include <imgui.h>

#include <algorithm>
#include <string>
#include <vector>

#include "app/common/parse.hpp"
#include "app/gui/model.hpp"
#include "app/gui/widgets.hpp"
#include "kernels/bits/float.hpp"
#include "kernels/recipes/catalog.hpp"

namespace dql::gui {

namespace {

using recipes::OpKind;
using recipes::View;

bits::FloatFormat lane_format(View v) {
  switch (v) {
    case View::BF16x2: return bits::kBF16;
    case View::F32: return bits::kF32;
    default: return bits::kF16;
  }
}

bool is_float_view(View v) {
  return v == View::F16x2 || v == View::BF16x2 || v == View::F32 || v == View::F16;
}

// How a constant reads: "0x64006400 = 1024 in both lanes (fp16x2)". A lop3 building floats ORs
// in the magic, so its constants are read the way its result is read when both lanes are normal.
std::string constant_label(const recipes::TraceStep& s, const recipes::TraceOperand& o) {
  View v = o.view;
  if (s.kind == OpKind::Lop3 && (s.view == View::F16x2 || s.view == View::BF16x2)) {
    const auto f = lane_format(s.view);
    if (bits::classify(bits::lo16(o.value), f) == bits::FpClass::Normal &&
        bits::classify(bits::hi16(o.value), f) == bits::FpClass::Normal) {
      v = s.view;
    }
  }
  if (v == View::F16x2 || v == View::BF16x2) {
    const auto f = lane_format(v);
    const std::string hi = number_text(bits::to_double(bits::hi16(o.value), f));
    const std::string lo = number_text(bits::to_double(bits::lo16(o.value), f));
    return fmt::format("0x{:08x} = {} ({})", o.value, hi == lo ? hi + " in both lanes" : hi + " | " + lo,
                       recipes::view_name(v));
  }
  if (v == View::F32)
    return fmt::format("0x{:08x} = {} (fp32)", o.value, number_text(bits::to_double(o.value, bits::kF32)));
  return {};
}

// The register's reading under its view: lanes split into fields, high lane first.
void register_reading(uint32_t v, View view, const Ui& ui) {
  switch (view) {
    case View::F16x2:
    case View::BF16x2: {
      const auto f = lane_format(view);
      ImGui::TextUnformatted("hi");
      ImGui::SameLine();
      float_split(bits::hi16(v), f, ui);
      ImGui::SameLine(0, 2.0f * ui.em);
      ImGui::TextUnformatted("lo");
      ImGui::SameLine();
      float_split(bits::lo16(v), f, ui);
      break;
    }
    case View::F16: float_split(bits::lo16(v), bits::kF16, ui); break;
    case View::F32: float_split(v, bits::kF32, ui); break;
    case View::U32: mono_text(ui, "%u (signed %d)", v, static_cast<int32_t>(v)); break;
    case View::B32: break;
  }
}

// The step that last wrote register `name` before step `before`, or -1.
int defining_step(const Model& m, const std::string& name, int before) {
  for (int s = before - 1; s >= 0; --s) {
    if (m.trace.steps[static_cast<size_t>(s)].dst == name) return s;
  }
  return -1;
}

std::string element_of_code(const recipes::RecipeSpec& spec, uint32_t code) {
  switch (spec.encoding) {
    case recipes::Encoding::Unsigned: return fmt::format("{}", code);
    case recipes::Encoding::Biased:
      return fmt::format("{} - {} = {}", code, 1 << (spec.bits - 1),
                         static_cast<int>(code) - (1 << (spec.bits - 1)));
    case recipes::Encoding::TwosComp: {
      const int v = (code & (1u << (spec.bits - 1))) ? static_cast<int>(code) - (1 << spec.bits)
                                                     : static_cast<int>(code);
      return fmt::format("{}", v);
    }
    case recipes::Encoding::Nf4Code:  // the code book's entry (before the absmax scale)
      return fmt::format("{:.4g}", bits::to_double(recipes::nf4_code_bits(code), bits::kF32));
  }
  return {};
}

struct StepperState {
  std::string input_error;
  int edit_elem[8] = {0};
  uint64_t elems_rev = ~0ull;
  int listed_step = -1;  // the step the list last scrolled to
} g;

void draw_inputs(Model& m, const Ui& ui, const recipes::RecipeSpec& spec) {
  // Recipe picker.
  ImGui::SetNextItemWidth(14.0f * ui.em);
  if (ImGui::BeginCombo("recipe", spec.name)) {
    for (const auto& r : recipes::all_recipes()) {
      if (ImGui::Selectable(r.spec->name, r.spec->id == m.recipe)) {
        m.recipe = r.spec->id;
        m.retrace();
      }
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", r.summary);
    }
    ImGui::EndCombo();
  }
  if (auto s = scripted("stepper.recipe")) {
    if (const auto* r = recipes::find_recipe(*s)) {
      m.recipe = r->spec->id;
      m.retrace();
    } else {
      m.set_error(
          fmt::format("there is no recipe called '{}': choose one of {}", *s, recipes::recipe_names()));
    }
  }
  const auto& info = recipes::info_of(m.recipe);
  ImGui::SameLine();
  dim_text("%s", info.summary);

  // Input register as hex.
  std::string err;
  const Edit e = hex_input("input", &m.input.reg, 8, &err, ui, "stepper.hex");
  if (e == Edit::Changed) {
    g.input_error.clear();
    m.retrace();
  } else if (e == Edit::Rejected) {
    g.input_error = err;
    m.set_error(err);
  }
  if (!spec.has_absmax && scripted("stepper.absmax")) {  // no field to type it into: say so
    g.input_error = fmt::format("absmax applies to nf4-fp16 only, not to {}", spec.name);
    m.set_error(g.input_error);
  }
  if (spec.has_absmax) {
    ImGui::SameLine(0, 2.0f * ui.em);
    const uint32_t kept = m.input.absmax;
    Edit a = hex_input("absmax (fp32 bits)", &m.input.absmax, 8, &err, ui, "stepper.absmax");
    if (a == Edit::Changed && !absmax_ok(m.input.absmax)) {
      err = absmax_refusal(m.input.absmax, kept);
      m.input.absmax = kept;
      a = Edit::Rejected;
    }
    if (a == Edit::Changed) m.retrace();
    if (a == Edit::Rejected) {
      g.input_error = err;
      m.set_error(err);
    }
    ImGui::SameLine();
    ImGui::Text("= %s", number_text(bits::to_double(m.input.absmax, bits::kF32)).c_str());
  }
  error_text(g.input_error);

  // Input register as 32 clickable bits, coloured by the element each nibble / byte holds.
  BitRowOptions o;
  o.clickable = true;
  const BitRow row =
      bit_row("input bits", m.input.reg, colors_by_slot(spec.bits, spec.order, spec.elems), ui, o);
  if (row.clicked >= 0) {
    m.input.reg ^= 1u << row.clicked;
    g.input_error.clear();
    m.retrace();
  }
  if (row.hovered >= 0) {
    ImGui::SetTooltip("bit %d: %s %d holds element e%d", row.hovered, spec.bits == 4 ? "nibble" : "byte",
                      row.hovered / spec.bits, spec.order[row.hovered / spec.bits]);
  }

  // The elements, in packing order (slot 0 on the right, as the bits run). The code fields are as
  // wide as the largest code and a margin, so that the table fits the view at large text sizes.
  const float code_width = button_width(spec.bits == 4 ? "15" : "255") + 0.6f * ui.em;
  if (ImGui::BeginTable("elements", spec.elems + 1,
                        ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit)) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(spec.bits == 4 ? "nibble" : "byte");
    for (int slot = spec.elems - 1; slot >= 0; --slot) {
      ImGui::TableNextColumn();
      ImGui::Text("%d", slot);
    }
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted("element");
    for (int slot = spec.elems - 1; slot >= 0; --slot) {
      ImGui::TableNextColumn();
      ImGui::TextColored(palette::to_vec4(palette::element(spec.order[slot])), "e%d", spec.order[slot]);
    }
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(spec.encoding == recipes::Encoding::Nf4Code ? "code" : "stored");
    for (int slot = spec.elems - 1; slot >= 0; --slot) {
      ImGui::TableNextColumn();
      const int elem = spec.order[slot];
      int code = static_cast<int>(recipes::stored_field(spec, m.input.reg, elem));
      ImGui::PushID(slot);
      ImGui::SetNextItemWidth(code_width);
      if (ImGui::InputInt("##code", &code, 0, 0)) {
        const int max = (1 << spec.bits) - 1;
        if (code < 0 || code > max) {
          m.set_error(fmt::format("element e{} is stored in {} bits: enter a code from 0 to {}", elem,
                                  spec.bits, max));
        } else {
          const uint32_t mask = ((1u << spec.bits) - 1u) << (slot * spec.bits);
          m.input.reg = (m.input.reg & ~mask) | (static_cast<uint32_t>(code) << (slot * spec.bits));
          m.retrace();
        }
      }
      ImGui::PopID();
    }
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted("means");
    for (int slot = spec.elems - 1; slot >= 0; --slot) {
      ImGui::TableNextColumn();
      const int elem = spec.order[slot];
      ImGui::TextUnformatted(element_of_code(spec, recipes::stored_field(spec, m.input.reg, elem)).c_str());
    }
    ImGui::EndTable();
  }
  dim_text("%s", info.input);
}

void draw_transport(Model& m, const Ui& ui) {
  const int last = static_cast<int>(m.trace.steps.size()) - 1;
  if (ImGui::Button("|<")) m.step = 0;
  ImGui::SameLine();
  if (ImGui::Button("<") && m.step > 0) --m.step;
  ImGui::SameLine();
  if (ImGui::Button(m.playing ? "pause" : "play", ImVec2(4.0f * ui.em, 0))) {
    if (!m.playing && m.step >= last) m.step = 0;
    m.playing = !m.playing;
  }
  ImGui::SameLine();
  if (ImGui::Button(">") && m.step < last) ++m.step;
  ImGui::SameLine();
  if (ImGui::Button(">|")) m.step = last;
  same_line_if_fits(labelled_width(12.0f * ui.em, "step"));
  ImGui::SetNextItemWidth(12.0f * ui.em);
  ImGui::SliderInt("step", &m.step, 0, last);
  same_line_if_fits(labelled_width(8.0f * ui.em, "steps/s"));
  ImGui::SetNextItemWidth(8.0f * ui.em);
  ImGui::SliderFloat("steps/s", &m.steps_per_second, 0.5f, 10.0f, "%.1f");
  if (auto s = scripted("stepper.step")) {
    if (auto v = script_value(m, front::parse_int(*s, "step", 0, last))) m.step = static_cast<int>(*v);
  }
}

void draw_step(Model& m, const Ui& ui) {
  const auto& s = m.trace.steps[static_cast<size_t>(m.step)];
  const auto& src = m.bit_source[static_cast<size_t>(m.step)];
  if (ui.mono) ImGui::PushFont(ui.mono);
  ImGui::TextColored(palette::to_vec4(palette::kHighlight), "%s", s.ptx.c_str());
  if (ui.mono) ImGui::PopFont();
  wrapped_text("%s", s.meaning.c_str());
  if (s.kind == OpKind::Lop3) {
    ImGui::SameLine();
    if (ImGui::SmallButton("open in LOP3 view")) m.open_step_in_view(m.step);
  } else if (s.kind == OpKind::Prmt) {
    ImGui::SameLine();
    if (ImGui::SmallButton("open in PRMT view")) m.open_step_in_view(m.step);
  }
  ImGui::Spacing();

  // Operands.
  for (const auto& o : s.srcs) {
    if (o.is_reg) {
      const int def = defining_step(m, o.text, m.step);
      const BitColors c = def >= 0 ? colors_by_source(m.bit_source[static_cast<size_t>(def)])
                                   : colors_uniform(palette::kConstant);
      mono_text(ui, "%-6s", o.text.c_str());
      ImGui::SameLine(5.0f * ui.em);
      BitRowOptions opt;
      opt.numbers = false;
      opt.cell_em = 0.8f;
      opt.reserve = mono_room(ui, "0x00000000");
      bit_row(o.text.c_str(), o.value, c, ui, opt);
      same_line_if_fits(mono_width(ui, "0x00000000"));
      mono_text(ui, "0x%08x", o.value);
    } else {
      const std::string label = constant_label(s, o);
      mono_text(ui, "%-6s", "imm");
      ImGui::SameLine(5.0f * ui.em);
      mono_text(ui, "%s", label.empty() ? o.text.c_str() : label.c_str());
    }
  }
  ImGui::Separator();

  // The destination register, coloured by the element each bit comes from.
  const bool gpu = !m.gpu_values.empty();
  const uint32_t gv = gpu ? m.gpu_values[static_cast<size_t>(m.step)] : s.value;
  mono_text(ui, "%s =", s.dst.c_str());
  ImGui::SameLine(5.0f * ui.em);
  // The destination's rows (bits, fields, GPU) keep room for the hex and view name at their right.
  const std::string dst_text = fmt::format("0x{:08x}  {}", s.value, recipes::view_name(s.view));
  const float reserve = mono_room(ui, dst_text.c_str());
  BitRowOptions opt;
  opt.marked = gpu ? (gv ^ s.value) : 0u;
  opt.reserve = reserve;
  bit_row("dst", s.value, colors_by_source(src), ui, opt);
  same_line_if_fits(mono_width(ui, dst_text.c_str()));
  mono_text(ui, "%s", dst_text.c_str());
  if (is_float_view(s.view) || s.view == View::U32) {
    ImGui::Dummy(ImVec2(5.0f * ui.em - ImGui::GetStyle().ItemSpacing.x, 0));
    ImGui::SameLine();
    register_reading(s.value, s.view, ui);
  }
  if (is_float_view(s.view)) {
    ImGui::Dummy(ImVec2(5.0f * ui.em - ImGui::GetStyle().ItemSpacing.x, 0));
    ImGui::SameLine();
    bit_row("fields", s.value,
            colors_by_float(lane_format(s.view), s.view == View::F32 ? 1 : (s.view == View::F16 ? 1 : 2)), ui,
            BitRowOptions{.numbers = false, .reserve = reserve});
    same_line_if_fits(12.0f * ui.em);
    dim_text("fields: sign, exponent, mantissa");
  }
  if (gpu) {
    mono_text(ui, "GPU");
    ImGui::SameLine(5.0f * ui.em);
    BitRowOptions g_opt;
    g_opt.numbers = false;
    g_opt.marked = gv ^ s.value;
    g_opt.reserve = reserve;
    bit_row("gpu", gv, colors_by_source(src), ui, g_opt);
    same_line_if_fits(12.0f * ui.em);
    if (gv == s.value) {
      ImGui::TextColored(palette::to_vec4(palette::kGood), "GPU bits = CPU twin bits");
    } else {
      ImGui::TextColored(palette::to_vec4(palette::kBad),
                         "GPU 0x%08x differs from the CPU twin (marked bits)", gv);
    }
  } else if (!m.gpu_error.empty()) {
    error_text("GPU: " + m.gpu_error);
  } else {
    dim_text("CPU twin: these bits come from the bit-exact host emulation (no GPU in use).");
  }
  // Legend.
  ImGui::Spacing();
  const auto& spec = *recipes::info_of(m.recipe).spec;
  ImGui::TextUnformatted("colours:");
  for (int e = 0; e < spec.elems; ++e) {
    ImGui::SameLine();
    ImGui::TextColored(palette::to_vec4(palette::element(e)), "e%d", e);
  }
  ImGui::SameLine();
  ImGui::TextColored(palette::to_vec4(palette::kConstant), "constant");
  ImGui::SameLine();
  ImGui::TextColored(palette::to_vec4(palette::kMixed), "several elements");
}

void draw_outputs(Model& m, const Ui& ui) {
  const auto& spec = *recipes::info_of(m.recipe).spec;
  const bool f16 = spec.out == recipes::OutType::F16;
  ImGui::Text("Outputs (%s), in register order: h0 low, h0 high, h1 low, ...", f16 ? "fp16" : "bf16");
  if (!ImGui::BeginTable("outputs", spec.elems + 1, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit))
    return;
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  for (int e = 0; e < spec.elems; ++e) {
    ImGui::TableNextColumn();
    ImGui::TextColored(palette::to_vec4(palette::element(e)), "e%d", e);
  }
  bool all = true;
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  ImGui::TextUnformatted("output");
  for (int e = 0; e < spec.elems; ++e) {
    ImGui::TableNextColumn();
    const uint32_t b = recipes::output_bits(m.trace.outputs, e);
    const bool ok = b == m.expected[static_cast<size_t>(e)].bits;
    all = all && ok;
    if (ui.mono) ImGui::PushFont(ui.mono);
    ImGui::TextColored(palette::to_vec4(ok ? palette::kText : palette::kBad), "%s",
                       number_text(recipes::output_value(spec, m.trace.outputs, e)).c_str());
    ImGui::TextColored(palette::to_vec4(palette::kDim), "0x%04x", b);
    if (ui.mono) ImGui::PopFont();
  }
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  ImGui::TextUnformatted("reference");
  for (int e = 0; e < spec.elems; ++e) {
    ImGui::TableNextColumn();
    mono_text(ui, "%s", number_text(m.expected[static_cast<size_t>(e)].value).c_str());
  }
  ImGui::EndTable();
  if (all) {
    ImGui::TextColored(palette::to_vec4(palette::kGood),
                       "all %d outputs equal the integer reference, bit for bit", spec.elems);
  } else {
    ImGui::TextColored(palette::to_vec4(palette::kBad), "outputs differ from the integer reference (in red)");
  }
}

}  // namespace

void draw_stepper(Model& m, const Ui& ui) {
  if (m.trace.steps.empty()) m.retrace();
  const auto& spec = *recipes::info_of(m.recipe).spec;
  draw_inputs(m, ui, spec);
  ImGui::Separator();
  draw_transport(m, ui);

  // The steps on the left, as wide as their longest line where that leaves the current step (on
  // the right) at least half the width; longer lines scroll sideways. Where the current step would
  // have less than a 32-bit row's room beside the list (large text), the list goes above it, at
  // most 8 lines high, and the step below takes the whole width.
  std::vector<std::string> labels(m.trace.steps.size());
  if (ui.mono) ImGui::PushFont(ui.mono);
  float widest = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    labels[i] = fmt::format("{:2} {}", i, m.trace.steps[i].ptx);
    widest = std::max(widest, ImGui::CalcTextSize(labels[i].c_str()).x);
  }
  if (ui.mono) ImGui::PopFont();
  const ImGuiStyle& style = ImGui::GetStyle();
  const float fit_w = widest + 2 * style.WindowPadding.x + style.ScrollbarSize + ui.em;
  const float list_w =
      std::clamp(fit_w, 26.0f * ui.em, std::max(26.0f * ui.em, 0.5f * ImGui::GetContentRegionAvail().x));
  const float detail_h = 20.0f * ui.em;
  const bool stacked = ImGui::GetContentRegionAvail().x - list_w < 36.0f * ui.em;
  float list_h = detail_h;
  if (stacked) {
    if (ui.mono) ImGui::PushFont(ui.mono);
    const float lines = static_cast<float>(std::min<size_t>(labels.size(), 8));
    list_h = lines * ImGui::GetTextLineHeightWithSpacing() + 2 * style.WindowPadding.y + style.ScrollbarSize;
    if (ui.mono) ImGui::PopFont();
  }
  ImGui::BeginChild("steps", ImVec2(stacked ? 0.0f : list_w, list_h), true,
                    ImGuiWindowFlags_HorizontalScrollbar);
  if (ui.mono) ImGui::PushFont(ui.mono);
  for (size_t i = 0; i < m.trace.steps.size(); ++i) {
    const auto& s = m.trace.steps[i];
    const bool differs = !m.gpu_values.empty() && m.gpu_values[i] != s.value;
    if (differs) ImGui::PushStyleColor(ImGuiCol_Text, palette::to_vec4(palette::kBad));
    if (ImGui::Selectable(labels[i].c_str(), static_cast<int>(i) == m.step)) m.step = static_cast<int>(i);
    if (differs) ImGui::PopStyleColor();
    // Keep the current step in sight when it moves (transport, script, playing), not while the
    // user scrolls the list.
    if (static_cast<int>(i) == m.step && (m.playing || g.listed_step != m.step)) {
      if (!ImGui::IsItemVisible()) ImGui::SetScrollHereY();
      g.listed_step = m.step;
    }
  }
  if (ui.mono) ImGui::PopFont();
  ImGui::EndChild();
  if (!stacked) ImGui::SameLine();
  ImGui::BeginChild("step", ImVec2(0, detail_h), true, ImGuiWindowFlags_HorizontalScrollbar);
  draw_step(m, ui);
  ImGui::EndChild();
  draw_outputs(m, ui);
}

}  // namespace dql::gui
