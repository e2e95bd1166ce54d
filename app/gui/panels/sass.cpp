// SASS: the real machine code of the app's own kernels (cuobjdump at build time, embedded), with
// the recipe instructions highlighted and their immediates decoded. Left: the kernels with their
// instruction counts per class and, when the timing view has measured them, their times. Right:
// the selected kernel's listing; a click on a LOP3.LUT or PRMT line opens it in its view.
#include <fmt/format.h>
#include <imgui.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include "app/common/bench_report.hpp"
#include "app/gui/model.hpp"
#include "app/gui/widgets.hpp"
#include "kernels/recipes/catalog.hpp"
#include "kernels/sass/embedded.hpp"

namespace dql::gui {

namespace {

using sass::OpClass;

// The classes the list counts and the listing colours: what the recipes are made of.
constexpr OpClass kShown[] = {OpClass::Lop3, OpClass::Prmt, OpClass::Hfma2, OpClass::Hadd2, OpClass::I2F};

ImU32 class_color(OpClass c) {
  switch (c) {
    case OpClass::Lop3: return palette::element(1);
    case OpClass::Prmt: return palette::element(4);
    case OpClass::Hfma2:
    case OpClass::Hadd2:
    case OpClass::Hmul2: return palette::element(5);
    case OpClass::I2F:
    case OpClass::F2F: return palette::element(0);
    default: return palette::kText;
  }
}

bool highlighted(OpClass c) {
  return c == OpClass::Lop3 || c == OpClass::Prmt || c == OpClass::Hfma2 || c == OpClass::Hadd2 ||
         c == OpClass::Hmul2 || c == OpClass::I2F || c == OpClass::F2F;
}

struct KernelRow {
  const sass::Function* f;
  std::string label;  // the short name without "_kernel", which every kernel has
  sass::Counts counts;
  std::optional<sass::PerElement> pe;
  std::string params;  // "T = fp16, NAIVE = false, ..." (sass::param_list), or empty
  std::string shown;   // `label` as the name column shows it (sass::fit_names)
};

struct Line {
  std::string addr, text, decoded;
};

struct SassState {
  std::string arch;       // shown architecture; empty until chosen
  std::string rows_arch;  // the architecture `rows` were made for
  std::vector<KernelRow> rows;
  float widest_label = 0.0f;     // the widest label of `rows`, in pixels of the font size below
  float widest_for_font = 0.0f;  // 0 until measured
  // The name column's width and the rows listed that the rows' `shown` names were made for.
  float fitted_room = -1.0f;
  std::vector<size_t> fitted_rows;
  int selected = -1;   // index into rows
  int lines_for = -1;  // the row `lines` were made for
  std::vector<Line> lines;
  int scroll_to = -1;              // a line to bring into view on the next frame
  size_t text_cols = 0;            // the longest instruction text of `lines`, in characters
  std::string filter = "dequant";  // the kernels the recipes are in; cleared for every kernel
  std::string gpu_note;            // why the GPU's architecture is not the one shown
  std::string unmatched;           // the last filter found to match no kernel (said once, not every frame)
  bool chose_arch = false;
  float list_em = 0.0f;     // the list's width set by its bar (em); 0 for the automatic width
  bool timed_only = false;  // only the kernels the benchmark results launched (shown where there are results)
  // `timed_only` as the list was last drawn with it: ticking it moves the selection (draw_kernel_list).
  bool listed_timed_only = false;
  // An architecture's listing is unpacked and parsed once, off the frame's thread (a second or
  // more for the largest): `loading` is in flight for `loading_arch`.
  std::future<const sass::Listing*> loading;
  std::string loading_arch;
} g;

std::string gpu_arch(const Model& m) {
  if (!m.active) return {};
  const auto& info = m.active->info();
  if (info.backend != "cuda" || info.cc_major == 0) return {};
  return fmt::format("sm_{}{}", info.cc_major, info.cc_minor);
}

void choose_arch(const Model& m) {
  if (g.chose_arch) return;
  g.chose_arch = true;
  const std::string gpu = gpu_arch(m);
  if (!gpu.empty() && sass::embedded_arch(gpu) != nullptr) {
    g.arch = gpu;
    return;
  }
  g.arch = sass::default_arch("sm_90");
  if (!gpu.empty()) g.gpu_note = fmt::format("this build has no SASS for the GPU's {}", gpu);
}

// The kernel rows of the chosen architecture; false while its listing is still being read.
bool build_rows(const Model& m) {
  if (g.rows_arch == g.arch) return true;
  const auto ready = [] { return g.loading.wait_for(std::chrono::seconds(0)) == std::future_status::ready; };
  // Another architecture chosen while one was read: that one stays in the listing cache, and the
  // chosen one's read starts now (so that the view stays busy, for screenshots, until it is in).
  if (g.loading.valid() && g.loading_arch != g.arch && ready()) g.loading.get();
  if (!g.loading.valid()) {
    g.loading_arch = g.arch;
    g.loading = std::async(std::launch::async, [a = g.arch] { return sass::embedded_listing(a); });
  }
  if (g.loading_arch != g.arch || !ready()) return false;
  const sass::Listing* l = g.loading.get();
  g.rows_arch = g.arch;
  g.rows.clear();
  g.lines.clear();
  g.lines_for = -1;
  g.widest_for_font = 0.0f;
  g.fitted_room = -1.0f;
  if (l == nullptr) return true;
  for (const auto& f : l->functions) {
    std::string label = f.name;
    if (const auto k = label.find("_kernel"); k != std::string::npos) label.erase(k, 7);
    g.rows.push_back({&f, label, sass::count(f.instrs), sass::per_element(f), sass::param_list(f.name), {}});
  }
  // Open on the kernel of the recipe being stepped through.
  const std::string want = fmt::format("dequant/{}", recipes::info_of(m.recipe).spec->name);
  g.selected = 0;
  for (size_t i = 0; i < g.rows.size(); ++i) {
    if (g.rows[i].f->bench == want) {
      g.selected = static_cast<int>(i);
      break;
    }
  }
  return true;
}

// What the filter is matched against, for the sentence shown when it matches nothing.
std::string no_match_sentence(const std::string& filter) {
  return fmt::format(
      "no kernel matches the filter '{}': it matches kernel names (e.g. {}) and bench names (e.g. "
      "dequant/awq-int4-fp16); * and ? stand for any text or one character, and text without them may "
      "appear anywhere in the name. Clear the filter to list all {} kernels of {}.",
      filter, g.rows.empty() ? std::string("dequant_plain_kernel<awq-int4-fp16, 8>") : g.rows.front().f->name,
      g.rows.size(), g.arch);
}

// The filter matched kernels, none of them timed by the results shown.
std::string no_timed_sentence(const std::string& filter) {
  return fmt::format(
      "no kernel the benchmark results timed matches the filter '{}': clear the filter, or untick \"only the "
      "kernels timed\" to list every kernel it matches",
      filter);
}

bool filter_match(const std::string& name, const std::string& bench) {
  std::string p = g.filter;
  if (p.empty()) return true;
  if (p.find('*') == std::string::npos && p.find('?') == std::string::npos) p = "*" + p + "*";
  return sass::glob_match(p, name) || (!bench.empty() && sass::glob_match(p, bench));
}

// The timing view's rows for a kernel: "12.3 us" (first shape), all shapes in the tooltip.
std::vector<const BenchRow*> bench_rows_of(const Model& m, const sass::Function& f) {
  return front::rows_timing(m.bench_rows, f);
}

// The width of the list's columns beside a name column that shows every kernel's name whole.
// The /elem column is left out where no kernel listed has a count per element (the GEMV kernels).
int number_columns(bool per_elem) { return 1 + static_cast<int>(std::size(kShown)) + (per_elem ? 1 : 0); }

float list_columns_w(const Ui& ui, bool timed, bool per_elem) {
  return static_cast<float>(number_columns(per_elem)) * 3.4f * ui.em + (timed ? 4.6f * ui.em : 0.0f);
}

float list_width_for_names(const Model& m, const Ui& ui) {
  const float font = ImGui::GetFontSize();
  if (g.widest_for_font != font) {
    g.widest_label = 0.0f;
    for (const auto& r : g.rows)
      g.widest_label = std::max(g.widest_label, ImGui::CalcTextSize(r.label.c_str()).x);
    g.widest_for_font = font;
  }
  // The name column's clip margin, the child window's padding and border, and the rows' scroll bar.
  const ImGuiStyle& st = ImGui::GetStyle();
  return g.widest_label + 0.3f * ui.em + list_columns_w(ui, !m.bench_rows.empty(), true) +
         2.0f * st.WindowPadding.x + 2.0f * st.ChildBorderSize + st.ScrollbarSize;
}

// Drawn as text at column offsets over one clipped list of rows (an ImGui table of this size
// costs several milliseconds a frame on a software renderer).
void draw_kernel_list(Model& m, const Ui& ui) {
  const bool timed = !m.bench_rows.empty();
  std::vector<size_t> shown;
  shown.reserve(g.rows.size());
  bool matched = false;  // by the filter, timed or not
  const bool only_timed = timed && g.timed_only;
  for (size_t i = 0; i < g.rows.size(); ++i) {
    if (!filter_match(g.rows[i].f->name, g.rows[i].f->bench)) continue;
    matched = true;
    if (only_timed && bench_rows_of(m, *g.rows[i].f).empty()) continue;
    shown.push_back(i);
  }
  const bool per_elem =
      std::any_of(shown.begin(), shown.end(), [](size_t i) { return g.rows[i].pe.has_value(); });
  const float em = ui.em, num_w = 3.4f * em, time_w = 4.6f * em;
  const int nums = number_columns(per_elem);
  const float right = list_columns_w(ui, timed, per_elem);
  // The rows' scroll bar takes its width off every row.
  const float avail = ImGui::GetContentRegionAvail().x - ImGui::GetStyle().ScrollbarSize;
  const float name_w = std::max(8.0f * em, avail - right);
  const float name_room = name_w - 0.3f * em;
  const auto fits = [&](std::string_view s) {
    return ImGui::CalcTextSize(s.data(), s.data() + s.size()).x <= name_room;
  };
  // Column x offsets: name, then the numbers right-aligned in their cells.
  const auto num_x = [&](int col) { return name_w + static_cast<float>(col + 1) * num_w; };
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const auto right_text = [&](ImVec2 p, float x_end, ImU32 col, const char* text) {
    const float w = ImGui::CalcTextSize(text).x;
    dl->AddText(ImVec2(p.x + x_end - w - 0.4f * em, p.y), col, text);
  };
  {  // header
    const ImVec2 p = ImGui::GetCursorScreenPos();
    dl->AddText(p, palette::kDim, "kernel");
    right_text(p, num_x(0), palette::kDim, "instrs");
    for (size_t c = 0; c < std::size(kShown); ++c)
      right_text(p, num_x(static_cast<int>(c) + 1), class_color(kShown[c]), sass::class_name(kShown[c]));
    if (per_elem) right_text(p, num_x(nums - 1), palette::kDim, "/elem");
    if (timed) right_text(p, num_x(nums - 1) + time_w, palette::kDim, "time");
    ImGui::Dummy(ImVec2(avail, ImGui::GetTextLineHeight()));
    ImGui::Separator();
  }
  // Ticking "only the kernels timed" leaves the listing on a kernel of the list: the one selected if the
  // results launched it, else the list's first.
  const bool ticked = only_timed && !g.listed_timed_only;
  g.listed_timed_only = only_timed;
  if (ticked && !shown.empty() &&
      std::find(shown.begin(), shown.end(), static_cast<size_t>(g.selected)) == shown.end())
    g.selected = static_cast<int>(shown.front());
  if (shown.empty() && !g.rows.empty()) {
    const std::string sentence = matched ? no_timed_sentence(g.filter) : no_match_sentence(g.filter);
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextColored(palette::to_vec4(palette::kBad), "%s", sentence.c_str());
    ImGui::PopTextWrapPos();
    if (g.unmatched != g.filter) {  // the status bar too, once for each filter that matches nothing
      g.unmatched = g.filter;
      m.set_error(sentence);
    }
    return;
  }
  g.unmatched.clear();
  // Names that do not fit are written compactly, and kept different from each other (the tooltip and the
  // listing's header give them whole); made again when the column's width or the rows listed change.
  if (name_room != g.fitted_room || shown != g.fitted_rows) {
    std::vector<std::string> labels;
    labels.reserve(shown.size());
    for (const size_t i : shown) labels.push_back(g.rows[i].label);
    const auto fitted = sass::fit_names(labels, fits);
    for (size_t k = 0; k < shown.size(); ++k) g.rows[shown[k]].shown = fitted[k];
    g.fitted_room = name_room;
    g.fitted_rows = shown;
  }
  ImGui::BeginChild("rows", ImVec2(0, 0), false);
  dl = ImGui::GetWindowDrawList();
  ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, ImVec2(ImGui::GetStyle().ItemSpacing.x, 0.0f));
  const float line_h = ImGui::GetTextLineHeight() + 0.4f * em;
  const float pad = 0.2f * em;
  char buf[64];
  ImGuiListClipper clip;
  clip.Begin(static_cast<int>(shown.size()), line_h);
  while (clip.Step()) {
    for (int row_i = clip.DisplayStart; row_i < clip.DisplayEnd; ++row_i) {
      const size_t i = shown[static_cast<size_t>(row_i)];
      auto& r = g.rows[i];
      ImGui::PushID(static_cast<int>(i));
      const ImVec2 p0 = ImGui::GetCursorScreenPos();
      if (ImGui::InvisibleButton("##k", ImVec2(std::max(avail, 1.0f), line_h)))
        g.selected = static_cast<int>(i);
      const bool hovered = ImGui::IsItemHovered();
      ImGui::PopID();
      const ImVec2 p(p0.x, p0.y + pad);
      if (g.selected == static_cast<int>(i)) {
        dl->AddRectFilled(p0, ImVec2(p0.x + avail, p0.y + line_h), ImGui::GetColorU32(ImGuiCol_Header));
      } else if (hovered) {
        dl->AddRectFilled(p0, ImVec2(p0.x + avail, p0.y + line_h),
                          ImGui::GetColorU32(ImGuiCol_HeaderHovered));
      }
      // Clipped on the CPU: a clip rectangle per row would cost a draw call per row.
      const ImVec4 clip_name(p0.x, p0.y, p0.x + name_room, p0.y + line_h);
      dl->AddText(nullptr, 0.0f, p, palette::kText, r.shown.c_str(), nullptr, 0.0f, &clip_name);
      std::snprintf(buf, sizeof buf, "%d", r.counts.total);
      right_text(p, num_x(0), palette::kText, buf);
      for (size_t c = 0; c < std::size(kShown); ++c) {
        const int n = r.counts[kShown[c]];
        std::snprintf(buf, sizeof buf, "%d", n);
        right_text(p, num_x(static_cast<int>(c) + 1), n ? class_color(kShown[c]) : palette::kDim, buf);
      }
      if (r.pe) {
        std::snprintf(buf, sizeof buf, "%.2f", r.pe->total());
        right_text(p, num_x(nums - 1), palette::kText, buf);
      }
      const auto times = timed ? bench_rows_of(m, *r.f) : std::vector<const BenchRow*>{};
      if (!times.empty()) {
        std::snprintf(buf, sizeof buf, "%.1f us", times.front()->stats.median_s * 1e6);
        right_text(p, num_x(nums - 1) + time_w, palette::kText, buf);
      }
      if (hovered) {
        ImGui::BeginTooltip();
        // A template's name can be wider than the window.
        ImGui::PushTextWrapPos(ImGui::GetFontSize() * 48.0f);
        ImGui::TextUnformatted(r.f->demangled.c_str());
        if (const std::string named = sass::with_param_names(r.f->name); !named.empty())
          ImGui::TextDisabled("%s", named.c_str());
        if (!r.f->bench.empty()) ImGui::Text("bench kernel: %s", r.f->bench.c_str());
        bool by_name = false;
        for (const auto* t : times) {
          ImGui::TextUnformatted(front::timed_row_text(*t).c_str());
          by_name = by_name || t->launches.empty();
        }
        if (by_name) {
          ImGui::TextDisabled(
              "timed on the CPU twin: the launcher picks this variant or its sibling by shape");
        } else if (!times.empty()) {
          ImGui::TextDisabled("rows whose run launched this kernel (the whole run's time)");
        }
        ImGui::PopTextWrapPos();
        ImGui::EndTooltip();
      }
    }
  }
  ImGui::PopStyleVar();
  ImGui::EndChild();
}

void build_lines() {
  if (g.lines_for == g.selected) return;
  g.lines_for = g.selected;
  g.lines.clear();
  if (g.selected < 0 || g.selected >= static_cast<int>(g.rows.size())) return;
  const auto& row = g.rows[static_cast<size_t>(g.selected)];
  g.text_cols = 0;
  for (const auto& in : row.f->instrs) {
    // The immediate is on the line already: the decode column says only what it means.
    std::string decoded = sass::decode_text(in);
    if (const auto colon = decoded.find(": "); (in.lop3 || in.prmt) && colon != std::string::npos)
      decoded = (in.lop3 ? "= " : "") + decoded.substr(colon + 2);
    g.lines.push_back({fmt::format("{:04x}", in.address), in.text(), decoded});
    g.text_cols = std::max(g.text_cols, g.lines.back().text.size());
  }
  // Open where the recipe instructions are densest: the window of 24 lines holding the most.
  const auto& ins = row.f->instrs;
  constexpr size_t kWindow = 24;
  size_t best = 0, best_n = 0, n = 0;
  for (size_t i = 0; i < ins.size(); ++i) {
    n += highlighted(ins[i].cls);
    if (i >= kWindow) n -= highlighted(ins[i - kWindow].cls);
    if (n > best_n) best_n = n, best = i + 1 > kWindow ? i + 1 - kWindow : 0;
  }
  while (best < ins.size() && !highlighted(ins[best].cls)) ++best;
  g.scroll_to = best_n ? static_cast<int>(best) : 0;
}

// The operand's value when it is one: an immediate or the zero register; otherwise none.
std::optional<uint32_t> operand_value(const std::string& op) {
  if (op == "RZ" || op == "URZ") return 0u;
  if (op.size() > 2 && op[0] == '0' && op[1] == 'x') {
    try {
      return static_cast<uint32_t>(std::stoul(op.substr(2), nullptr, 16));
    } catch (...) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

void open_in_view(Model& m, const sass::Instr& in) {
  if (in.lop3) {
    m.lop3_lut = in.lop3->lut;
    if (auto v = operand_value(in.lop3->a)) m.lop3_a = *v;
    if (auto v = operand_value(in.lop3->b)) m.lop3_b = *v;
    if (auto v = operand_value(in.lop3->c)) m.lop3_c = *v;
    m.view = ViewId::Lop3;
  } else if (in.prmt && in.prmt->immediate) {
    m.prmt_sel = in.prmt->mode == bits::PrmtMode::Generic ? (in.prmt->sel & 0xFFFFu) : (in.prmt->sel & 3u);
    m.prmt_mode = in.prmt->mode;
    if (auto v = operand_value(in.prmt->a)) m.prmt_a = *v;
    if (auto v = operand_value(in.prmt->b)) m.prmt_b = *v;
    m.view = ViewId::Prmt;
  }
}

void draw_listing(Model& m, const Ui& ui) {
  if (g.selected < 0 || g.selected >= static_cast<int>(g.rows.size())) {
    ImGui::TextDisabled("Pick a kernel on the left.");
    return;
  }
  const auto& row = g.rows[static_cast<size_t>(g.selected)];
  const auto& f = *row.f;
  build_lines();
  ImGui::TextUnformatted(f.name.c_str());
  ImGui::SameLine();
  ImGui::TextDisabled("%s, %d instructions", g.arch.c_str(), row.counts.total);
  // What each template argument is, by the name the kernel's source gives it.
  if (!row.params.empty()) dim_text("%s", row.params.c_str());
  std::string counts;
  for (int i = 0; i < sass::kClassCount; ++i) {
    const int n = row.counts.by_class[i];
    if (n)
      counts +=
          fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, sass::class_name(static_cast<OpClass>(i)));
  }
  wrapped_text("%s", counts.c_str());
  if (row.pe) {
    dim_text("per element: %.2f instructions (%d in the %s marked on the left, %d elements a thread)",
             row.pe->total(), row.pe->counts.total, row.pe->loop ? "loop" : "kernel", row.pe->elements);
  }
  const auto times = bench_rows_of(m, f);
  if (!times.empty() && !m.bench_file.empty()) dim_text("timed in a saved run: %s", m.bench_source().c_str());
  for (const auto* t : times) dim_text("timed: %s", front::timed_row_text(*t).c_str());

  // The step the stepper is on, when it is a lop3 or prmt: the same immediates light up here.
  int step_kind = 0;  // 1 lop3, 2 prmt
  uint32_t step_imm = 0;
  if (m.step >= 0 && m.step < static_cast<int>(m.trace.steps.size())) {
    const auto& s = m.trace.steps[static_cast<size_t>(m.step)];
    if (s.kind == recipes::OpKind::Lop3) step_kind = 1, step_imm = s.imm & 0xFFu;
    if (s.kind == recipes::OpKind::Prmt) step_kind = 2, step_imm = s.imm & 0xFFFFu;
  }

  // The rest of the view, but 16 lines at least (under the kernel list at large text, the view scrolls).
  const float least_h = 16.0f * (ImGui::GetTextLineHeight() + 0.15f * ui.em);
  ImGui::BeginChild("listing", ImVec2(0, rest_height(least_h)), true, ImGuiWindowFlags_HorizontalScrollbar);
  if (ui.mono) ImGui::PushFont(ui.mono);
  ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, ImVec2(ImGui::GetStyle().ItemSpacing.x, 0.0f));
  const float ch = ImGui::CalcTextSize("0").x;
  const float line_h = ImGui::GetTextLineHeight() + 0.15f * ui.em;
  const float text_x = 7.0f * ch,
              decode_x = text_x + static_cast<float>(std::min<size_t>(g.text_cols, 60) + 2) * ch;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  if (g.scroll_to >= 0) {
    ImGui::SetScrollY(std::max(0.0f, (static_cast<float>(g.scroll_to) - 3.0f) * line_h));
    g.scroll_to = -1;
  }
  ImGuiListClipper clip;
  clip.Begin(static_cast<int>(f.instrs.size()), line_h);
  while (clip.Step()) {
    for (int i = clip.DisplayStart; i < clip.DisplayEnd; ++i) {
      const auto& in = f.instrs[static_cast<size_t>(i)];
      const auto& ln = g.lines[static_cast<size_t>(i)];
      ImGui::PushID(i);
      const bool clickable = in.lop3.has_value() || (in.prmt && in.prmt->immediate);
      const ImVec2 p = ImGui::GetCursorScreenPos();
      ImGui::InvisibleButton(
          "##line", ImVec2(std::max(ImGui::GetContentRegionAvail().x, decode_x + 40.0f * ch), line_h));
      const bool hovered = ImGui::IsItemHovered();
      if (clickable && ImGui::IsItemClicked()) open_in_view(m, in);
      if (hovered) {
        dl->AddRectFilled(p, ImVec2(p.x + ImGui::GetItemRectSize().x, p.y + line_h),
                          IM_COL32(255, 255, 255, 18));
        if (clickable) {
          ImGui::BeginTooltip();
          ImGui::Text("%s", sass::decode_text(in).c_str());
          ImGui::TextDisabled(in.lop3 ? "click: open in the LOP3 view" : "click: open in the PRMT view");
          ImGui::EndTooltip();
        }
      }
      ImGui::PopID();
      const bool in_pass =
          row.pe && static_cast<size_t>(i) >= row.pe->begin && static_cast<size_t>(i) < row.pe->end;
      if (in_pass) dl->AddRectFilled(p, ImVec2(p.x + 0.3f * ch, p.y + line_h), palette::kDim);
      dl->AddText(ImVec2(p.x + ch, p.y), palette::kDim, ln.addr.c_str());
      const ImU32 col =
          highlighted(in.cls) ? class_color(in.cls) : (in.move ? palette::kDim : palette::kText);
      dl->AddText(ImVec2(p.x + text_x, p.y), col, ln.text.c_str());
      if (!ln.decoded.empty()) dl->AddText(ImVec2(p.x + decode_x, p.y), palette::kDim, ln.decoded.c_str());
      const bool same_as_step =
          (step_kind == 1 && in.lop3 && in.lop3->lut == step_imm) ||
          (step_kind == 2 && in.prmt && in.prmt->immediate && (in.prmt->sel & 0xFFFFu) == step_imm);
      if (same_as_step) {
        dl->AddRect(ImVec2(p.x + text_x - 0.5f * ch, p.y), ImVec2(p.x + decode_x - ch, p.y + line_h),
                    palette::kHighlight);
      }
    }
  }
  ImGui::PopStyleVar();
  if (ui.mono) ImGui::PopFont();
  ImGui::EndChild();
}

}  // namespace

bool sass_view_busy() { return g.loading.valid(); }

std::string sass_view_selection() {
  if (g.selected < 0 || g.selected >= static_cast<int>(g.rows.size())) return {};
  return fmt::format("{} {}", g.rows_arch, g.rows[static_cast<size_t>(g.selected)].f->name);
}

// The bar between the list and the listing: dragged, it moves `*w` within [lo, hi] and says so; a
// double click gives the list its automatic width back.
bool drag_bar(const Ui& ui, float* w, float lo, float hi) {
  const float bar_w = ImGui::GetStyle().ItemSpacing.x;
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const float h = std::max(ImGui::GetContentRegionAvail().y, 1.0f);
  ImGui::InvisibleButton("##list bar", ImVec2(bar_w, h));
  const bool hovered = ImGui::IsItemHovered(), active = ImGui::IsItemActive();
  if (hovered || active) {
    ImGui::SetMouseCursor(ImGuiMouseCursor_ResizeEW);
    ImGui::GetWindowDrawList()->AddLine(
        ImVec2(p.x + 0.5f * bar_w, p.y), ImVec2(p.x + 0.5f * bar_w, p.y + h),
        ImGui::GetColorU32(active ? ImGuiCol_SeparatorActive : ImGuiCol_SeparatorHovered), 2.0f);
  }
  if (hovered && !active)
    ImGui::SetTooltip(
        "Drag to widen or narrow the kernel list (%.0f em now); double-click for its automatic width",
        *w / ui.em);
  if (hovered && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) {
    g.list_em = 0.0f;
    return false;
  }
  if (!active || ImGui::GetIO().MouseDelta.x == 0.0f) return false;
  *w = std::clamp(*w + ImGui::GetIO().MouseDelta.x, lo, hi);
  return true;
}

// sass.list-width=EM|auto: the list's width as the bar sets it, within what the window leaves.
void script_list_width(Model& m, const std::string& v, bool beside, float lo_em, float hi_em) {
  if (v == "auto") {
    g.list_em = 0.0f;
    return;
  }
  if (!beside) {
    m.set_error(
        fmt::format("sass.list-width '{}' has no effect at this window size: the list is above the "
                    "listing at the full width; the setting is kept",
                    v));
    return;
  }
  float em = 0.0f;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), em);
  if (ec != std::errc() || end != v.data() + v.size() || !(em >= lo_em && em <= hi_em)) {
    m.set_error(
        fmt::format("sass.list-width '{}' is not a width this window allows: give the list's width in em, "
                    "{:.0f} to {:.0f} beside the listing at this size, or auto; the setting is kept",
                    v, std::ceil(lo_em), std::floor(hi_em)));
    return;
  }
  g.list_em = em;
}

void draw_sass(Model& m, const Ui& ui) {
  if (sass::embedded().empty()) {
    wrapped_text("%s", std::string(sass::unavailable_reason()).c_str());
    ImGui::TextDisabled("The other views do not need it.");
    // A script's keys for the listing are answered with the reason rather than waited for.
    for (const char* key : {"sass.filter", "sass.kernel", "sass.timed", "sass.list-width"}) {
      if (scripted(key))
        m.set_error(fmt::format("{} has no listing to act on: {}", key, sass::unavailable_reason()));
    }
    return;
  }
  choose_arch(m);
  // Architecture, filter, legend.
  ImGui::SetNextItemWidth(6.0f * ui.em);
  if (ImGui::BeginCombo("architecture", g.arch.c_str())) {
    for (const auto& e : sass::embedded()) {
      const std::string a(e.arch);
      if (ImGui::Selectable(a.c_str(), a == g.arch)) g.arch = a;
    }
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  if (!g.gpu_note.empty()) {
    ImGui::TextDisabled("(%s)", g.gpu_note.c_str());
    ImGui::SameLine();
  }
  ImGui::SetNextItemWidth(12.0f * ui.em);
  text_input("##filter", &g.filter, 0, "filter: dequant*, nf4 ...");
  if (auto s = scripted("sass.filter")) g.filter = *s;
  if (auto v = scripted("sass.timed")) {
    if (auto i = script_choice(m, "sass.timed", *v, {"0", "1"})) g.timed_only = *i == 1;
  }
  if (!m.bench_rows.empty()) {  // the results' kernels alone: the SASS of what a run launched
    same_line_if_fits(ImGui::CalcTextSize("only the kernels timed").x + 2.0f * ui.em);
    ImGui::Checkbox("only the kernels timed", &g.timed_only);
    if (ImGui::IsItemHovered()) {
      ImGui::SetTooltip(
          "The kernels the benchmark results launched (%s), each with its time; on the CPU twin, the kernels "
          "of the bench kernels it timed",
          m.bench_file.empty() ? "this session's run" : m.bench_source().c_str());
    }
  }
  for (auto c : {OpClass::Lop3, OpClass::Prmt, OpClass::Hfma2, OpClass::I2F}) {
    const char* label =
        c == OpClass::Hfma2 ? "HFMA2 HADD2 HMUL2" : (c == OpClass::I2F ? "I2F F2F" : sass::class_name(c));
    same_line_if_fits(ImGui::CalcTextSize(label).x);
    ImGui::TextColored(palette::to_vec4(class_color(c)), "%s", label);
  }
  same_line_if_fits(16.0f * ui.em, 1.5f * ui.em);
  dim_text("cuobjdump -sass of this build; click a LOP3 or PRMT line to open it");
  if (!build_rows(m)) {
    const sass::EmbeddedArch* e = sass::embedded_arch(g.loading_arch);
    const size_t bytes = e != nullptr ? e->text_bytes : 0;
    dim_text("Unpacking and reading the SASS of %s (%.0f MB of text) ...", g.loading_arch.c_str(),
             bytes / 1e6);
    return;
  }
  if (g.rows.empty()) {
    wrapped_text("No kernels for %s in this build.", g.arch.c_str());
    return;
  }
  if (auto s = scripted("sass.kernel")) {
    bool found = false;
    for (size_t i = 0; i < g.rows.size() && !found; ++i) {
      if (sass::glob_match(*s, g.rows[i].f->name) || sass::glob_match(*s, g.rows[i].f->bench)) {
        g.selected = static_cast<int>(i);
        found = true;
      }
    }
    if (!found) {
      m.set_error(
          fmt::format("no kernel of {} is called '{}': give a kernel name (e.g. {}) or a bench name (e.g. "
                      "dequant/awq-int4-fp16), * and ? as wildcards; the selection is kept",
                      g.arch, *s, g.rows.front().f->name));
    }
  }

  // The kernel list beside the listing; where the list's columns (about 32 em) and a listing of 30 em
  // do not both fit (large text), the list goes above the listing at the full width, 10 rows high.
  const float avail = ImGui::GetContentRegionAvail().x;
  const bool beside = avail >= 62.0f * ui.em;
  // Beside, the list takes 46 em (or 55% of a narrower width) and grows toward its widest name where the
  // window leaves the listing 48 em. The bar between them sets it by hand: from 32 em to what leaves the
  // listing 16 em.
  const float base_w = std::min(46.0f * ui.em, 0.55f * avail);
  const float auto_w =
      std::clamp(list_width_for_names(m, ui), base_w, std::max(base_w, avail - 48.0f * ui.em));
  const float min_w = 32.0f * ui.em, max_w = std::max(min_w, avail - 16.0f * ui.em);
  if (auto v = scripted("sass.list-width")) script_list_width(m, *v, beside, min_w / ui.em, max_w / ui.em);
  float list_w = !beside ? 0.0f : g.list_em > 0.0f ? std::clamp(g.list_em * ui.em, min_w, max_w) : auto_w;
  const float list_h = beside ? 0.0f : 12.0f * (ImGui::GetTextLineHeight() + 0.4f * ui.em);
  ImGui::BeginChild("kernel list", ImVec2(list_w, list_h), true);
  draw_kernel_list(m, ui);
  ImGui::EndChild();
  if (beside) {
    ImGui::SameLine(0.0f, 0.0f);
    if (drag_bar(ui, &list_w, min_w, max_w)) g.list_em = list_w / ui.em;
    ImGui::SameLine(0.0f, 0.0f);
  }
  ImGui::BeginGroup();
  draw_listing(m, ui);
  ImGui::EndGroup();
}

}  // namespace dql::gui
