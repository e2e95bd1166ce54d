// Timing: the bench engine on a thread of its own (progress, cancel; frames keep coming), results
// as a table and as plots drawn with ImDrawList (medians with IQR whiskers, size sweeps on log axes
// against the copy bandwidth), CSV / JSON export and A/B comparison with a saved run.
#include <fmt/format.h>
#include <fnmatch.h>
#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <map>
#include <memory>
#include <new>
#include <set>
#include <string>
#include <vector>

#include "app/common/bench_report.hpp"
#include "app/common/parse.hpp"
#include "app/gui/model.hpp"
#include "app/gui/widgets.hpp"
#include "kernels/bench/clocks.hpp"
#include "kernels/bench/engine.hpp"
#include "kernels/gemv/split.hpp"

namespace dql::gui {

namespace {

struct State {
  bool init = false;
  std::unique_ptr<Backend> backend;  // the runs' own instance of the active backend's kind
  BenchControl control;
  std::future<std::vector<BenchRow>> job;
  std::chrono::steady_clock::time_point start;
  std::vector<std::string> kernels;  // every kernel name the engine offers
  std::set<std::string> chosen;
  std::string glob;  // picks kernels by name, as bench --kernel does
  std::string shapes;
  std::string batch = "1,16";  // rows of X of the GEMV / GEMM cases
  int gemm_rows = 0;    // the Hopper GEMM's rows of X a block (BenchCase::gemm_rows); 0: the launcher's
  bool hopper = false;  // the backend runs the Hopper GEMM (CUDA, compute capability 9.0)
  bool ring = false;    // the walk's cases a second time on the copy-engine ring (BenchCase::ring)
  // A run finished: scroll its results into sight (large text puts them below the window), for this
  // many frames: the first frames' scroll limit still comes from the view's size without the results.
  int show_results = 0;
  int group_choice = 2;
  int cold = 1;
  bool back_to_back = false;  // BenchSettings::back_to_back
  float max_noise_pct = 2.0f, timeout_s = 2.0f;
  std::string error;
  std::string device_line;
  std::string csv_path = "bench.csv";
  std::string json_path = "bench.json";
  std::string compare_path;
  std::string open_path;  // a saved run to show in place of results
  std::string saved;      // what export wrote
  std::unique_ptr<front::Comparison> comparison;
  std::string open_tab;  // a results tab to bring to the front (scripts)
  ~State() {
    if (job.valid()) {
      control.cancel = true;
      job.wait();
    }
  }
};

State& state() {
  static State s;
  return s;
}

int group_of(int choice) { return choice == 0 ? 32 : choice == 1 ? 64 : 128; }

// The GEMV / GEMM cases' X and Y types the panel offers: a kernel's name ends with its type.
const std::vector<recipes::OutType> kBothTypes = {recipes::OutType::F16, recipes::OutType::BF16};

std::string si_bytes(double b) {
  const char* u[] = {"B", "KB", "MB", "GB", "TB"};
  int i = 0;
  while (b >= 1000 && i < 4) b /= 1000, ++i;
  char t[32];
  snprintf(t, sizeof t, "%g %s", b, u[i]);
  return t;
}

void row_tooltip(const BenchRow& r) {
  ImGui::BeginTooltip();
  ImGui::Text("%s  %s  (%s, %s)", r.kernel.c_str(), r.shape.c_str(), timing_name(r).c_str(),
              r.backend.c_str());
  if (r.runs_per_sample > 0 && r.cold)
    ImGui::Text("%d runs a sample, each on the next of %d copies of the buffers", r.runs_per_sample,
                r.copies);
  else if (r.runs_per_sample > 0)
    ImGui::Text("%d runs a sample on the same buffers", r.runs_per_sample);
  ImGui::Text("median %s, IQR %s .. %s (noise %.2f%%)",
              front::format_duration(r.stats.median_s * 1e6).c_str(),
              front::format_duration(r.stats.q1_s * 1e6).c_str(),
              front::format_duration(r.stats.q3_s * 1e6).c_str(), 100 * r.stats.noise);
  ImGui::Text("min %s, max %s, %d samples%s", front::format_duration(r.stats.min_s * 1e6).c_str(),
              front::format_duration(r.stats.max_s * 1e6).c_str(), r.stats.samples,
              r.timed_out ? " (timed out)" : "");
  ImGui::Text("%.2f GB/s = %.1f%% of the copy bandwidth; %s moved", r.gbps, r.pct_of_copy,
              si_bytes(r.bytes).c_str());
  if (r.speedup) ImGui::Text("%.2fx the speed of %s", *r.speedup, r.baseline.c_str());
  if (!r.launches.empty()) {
    ImGui::Separator();
    ImGui::TextDisabled("launched (the kernels as the SASS view names them):");
    // A template's name can be wider than the window.
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 60.0f);
    for (const cuda::KernelLaunch& l : r.launches) ImGui::TextWrapped("%s", front::launch_text(l).c_str());
    ImGui::PopTextWrapPos();
  }
  ImGui::EndTooltip();
}

// Horizontal bars: the median of each row, whiskers from Q1 to Q3, min and max as ticks.
void bars(const std::vector<BenchRow>& rows, const Ui& ui) {
  const float em = ui.em;
  const float label_w = 22 * em, bar_h = 1.3f * em;
  const float w = ImGui::GetContentRegionAvail().x;
  double top = 0;
  for (const BenchRow& r : rows) top = std::max(top, r.stats.q3_s);
  if (!(top > 0)) return;
  // As many ticks as their labels leave room for (up to 5; at large text and in narrow windows fewer).
  const float span = w - label_w - em, overhang = em;
  const AxisTicks ticks = fitting_ticks(top * 1e6, 5, span, em, overhang, [](double us) {
    return ImGui::CalcTextSize(front::format_tick(us).c_str()).x;
  });
  top = ticks.steps * ticks.step;  // in us
  const float h = bar_h * static_cast<float>(rows.size()) + 2 * em;
  ImGui::InvisibleButton("bars", ImVec2(w, h));
  const ImVec2 a = ImGui::GetItemRectMin();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float x0 = a.x + label_w, x1 = x0 + span;
  const auto px = [&](double us) { return x0 + static_cast<float>(us / top) * (x1 - x0); };
  for (int i = 0; i <= ticks.steps; ++i) {
    const double t = i * ticks.step;
    const float x = px(t);
    dl->AddLine(ImVec2(x, a.y), ImVec2(x, a.y + h - 1.5f * em), IM_COL32(255, 255, 255, 30));
    const std::string lbl = front::format_tick(t);
    const float tw = ImGui::CalcTextSize(lbl.c_str()).x;
    dl->AddText(ImVec2(tick_label_left(x, tw, x1, overhang), a.y + h - 1.3f * em), palette::kDim,
                lbl.c_str());
  }
  std::map<std::string, int> hue;
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  for (size_t i = 0; i < rows.size(); ++i) {
    const BenchRow& r = rows[i];
    const float y = a.y + bar_h * static_cast<float>(i);
    const int hi = hue.emplace(r.kernel, static_cast<int>(hue.size())).first->second;
    const std::string lbl = r.kernel + "  " + r.shape;
    dl->PushClipRect(ImVec2(a.x, y), ImVec2(x0 - 0.5f * em, y + bar_h), true);
    dl->AddText(ImVec2(a.x, y + 0.1f * em), palette::kText, lbl.c_str());
    dl->PopClipRect();
    const float yc = y + bar_h * 0.5f;
    dl->AddRectFilled(ImVec2(x0, y + 0.2f * em), ImVec2(px(r.stats.median_s * 1e6), y + bar_h - 0.2f * em),
                      palette::element(hi));
    const float q1 = px(r.stats.q1_s * 1e6), q3 = px(r.stats.q3_s * 1e6);
    dl->AddLine(ImVec2(q1, yc), ImVec2(q3, yc), palette::kText, 2.0f);
    dl->AddLine(ImVec2(q1, y + 0.25f * em), ImVec2(q1, y + bar_h - 0.25f * em), palette::kText, 2.0f);
    dl->AddLine(ImVec2(q3, y + 0.25f * em), ImVec2(q3, y + bar_h - 0.25f * em), palette::kText, 2.0f);
    const float mn = px(r.stats.min_s * 1e6), mxp = px(std::min(r.stats.max_s * 1e6, top));
    dl->AddCircleFilled(ImVec2(mn, yc), 0.15f * em, palette::kDim);
    dl->AddCircleFilled(ImVec2(mxp, yc), 0.15f * em, palette::kDim);
    if (ImGui::IsItemHovered() && mouse.y >= y && mouse.y < y + bar_h) {
      dl->AddRect(ImVec2(a.x, y), ImVec2(x1, y + bar_h), palette::kHighlight);
      row_tooltip(r);
    }
  }
}

// GB/s against bytes moved, both on log axes, one line per kernel, and the copy bandwidth.
void sweep(const std::vector<BenchRow>& rows, double copy_gbps, const Ui& ui) {
  const float em = ui.em;
  const ImVec2 size(ImGui::GetContentRegionAvail().x, rest_height(14 * em, em));
  ImGui::InvisibleButton("sweep", size);
  const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddRect(a, b,
              IM_COL32(70, 70, 80, 255));  // an outline only: filled areas cost fill rate on software GL
  double bx0 = 1e300, bx1 = 0, gy0 = 1e300, gy1 = 0;
  for (const BenchRow& r : rows) {
    if (!(r.gbps > 0)) continue;
    bx0 = std::min(bx0, r.bytes), bx1 = std::max(bx1, r.bytes);
    gy0 = std::min(gy0, r.gbps), gy1 = std::max(gy1, r.gbps);
  }
  if (copy_gbps > 0) gy0 = std::min(gy0, copy_gbps), gy1 = std::max(gy1, copy_gbps);
  if (bx1 <= 0) return;
  const double lx0 = std::floor(std::log10(bx0)), lx1 = std::max(lx0 + 1, std::ceil(std::log10(bx1)));
  const double ly0 = std::floor(std::log10(gy0)), ly1 = std::max(ly0 + 1, std::ceil(std::log10(gy1 * 1.05)));
  const ImVec2 pa(a.x + 5 * em, a.y + em), pb(b.x - 14 * em, b.y - 2 * em);
  const auto px = [&](double bytes) {
    return pa.x + static_cast<float>((std::log10(bytes) - lx0) / (lx1 - lx0)) * (pb.x - pa.x);
  };
  const auto py = [&](double g) {
    return pb.y - static_cast<float>((std::log10(g) - ly0) / (ly1 - ly0)) * (pb.y - pa.y);
  };
  for (double d = lx0; d <= lx1; ++d) {  // decades, with 2 and 5 between
    for (double m : {1.0, 2.0, 5.0}) {
      const double v = m * std::pow(10.0, d);
      if (std::log10(v) > lx1 + 1e-9) break;
      const float x = px(v);
      dl->AddLine(ImVec2(x, pa.y), ImVec2(x, pb.y), IM_COL32(255, 255, 255, m == 1 ? 40 : 15));
      if (m == 1) dl->AddText(ImVec2(x - em, pb.y + 0.3f * em), palette::kDim, si_bytes(v).c_str());
    }
  }
  for (double d = ly0; d <= ly1; ++d) {
    for (double m : {1.0, 2.0, 5.0}) {
      const double v = m * std::pow(10.0, d);
      if (std::log10(v) > ly1 + 1e-9) break;
      const float y = py(v);
      dl->AddLine(ImVec2(pa.x, y), ImVec2(pb.x, y), IM_COL32(255, 255, 255, m == 1 ? 40 : 15));
      char t[32];
      snprintf(t, sizeof t, "%g", v);
      if (m == 1 || (ly1 - ly0) <= 2) dl->AddText(ImVec2(a.x + 0.5f * em, y - 0.5f * em), palette::kDim, t);
    }
  }
  dl->AddText(ImVec2(a.x + 2.5f * em, a.y + 0.1f * em), palette::kDim, "GB/s");
  if (copy_gbps > 0) {
    const float y = py(copy_gbps);
    dl->AddLine(ImVec2(pa.x, y), ImVec2(pb.x, y), palette::kGood, 2.0f);
    char t[64];
    snprintf(t, sizeof t, "copy %.1f GB/s", copy_gbps);
    dl->AddText(ImVec2(pa.x + 0.5f * em, y - 1.3f * em), palette::kGood, t);
  }
  // One series per kernel, points in order of size.
  std::map<std::string, std::vector<const BenchRow*>> series;
  for (const BenchRow& r : rows)
    if (r.gbps > 0) series[r.kernel].push_back(&r);
  int hue = 0;
  const ImVec2 mouse = ImGui::GetIO().MousePos;
  const BenchRow* nearest = nullptr;
  float best = 1.0f * em * em;
  float ly = pa.y;
  for (auto& [name, pts] : series) {
    std::sort(pts.begin(), pts.end(),
              [](const BenchRow* x, const BenchRow* y) { return x->bytes < y->bytes; });
    const ImU32 col = palette::element(hue++);
    std::vector<ImVec2> line;
    for (const BenchRow* r : pts) line.push_back(ImVec2(px(r->bytes), py(r->gbps)));
    if (line.size() > 1) dl->AddPolyline(line.data(), static_cast<int>(line.size()), col, 0, 2.0f);
    for (size_t i = 0; i < line.size(); ++i) {
      dl->AddCircleFilled(line[i], 0.25f * em, col);
      const float dx = line[i].x - mouse.x, dy = line[i].y - mouse.y;
      if (dx * dx + dy * dy < best) best = dx * dx + dy * dy, nearest = pts[i];
    }
    dl->AddRectFilled(ImVec2(pb.x + 0.5f * em, ly + 1.4f * em), ImVec2(pb.x + 1.2f * em, ly + 2.1f * em),
                      col);
    dl->PushClipRect(ImVec2(pb.x, a.y), b, true);
    dl->AddText(ImVec2(pb.x + 1.5f * em, ly + 1.2f * em), palette::kText, name.c_str());
    dl->PopClipRect();
    ly += 1.2f * em;
  }
  dl->AddText(ImVec2((pa.x + pb.x) * 0.5f - 4 * em, b.y - 1.1f * em), palette::kDim, "bytes read + written");
  if (nearest && ImGui::IsItemHovered()) {
    dl->AddCircle(ImVec2(px(nearest->bytes), py(nearest->gbps)), 0.5f * em, palette::kHighlight, 0, 2.0f);
    row_tooltip(*nearest);
  }
}

// Ticks every kernel whose name matches the glob (bench --kernel's patterns) and unticks the rest.
void select_matching(State& s, Model& m) {
  std::set<std::string> picked;
  for (const std::string& k : s.kernels) {
    if (fnmatch(s.glob.c_str(), k.c_str(), 0) == 0) picked.insert(k);
  }
  if (picked.empty()) {
    s.error = fmt::format(
        "'{}' matches no kernel: names look like dequant/ft-int4-fp16, quant/int4-sym, permute/int4-fwd, "
        "gemv/w4a16-ft-fp16 and gemm/w4a16-ft-fp16, and * or ? stand for any text or character",
        s.glob);
    m.set_error(s.error);
    return;
  }
  s.error.clear();
  s.chosen = std::move(picked);
}

// The shapes field and the rows-of-X field as the run reads them (the script keys are checked the same way).
auto read_shapes(std::string_view text) {
  auto shapes = front::parse_shape_list(text, "each shape");
  if (!front::ok(shapes))
    std::get<1>(shapes) += " (shapes are separated by commas, e.g. 1024x4096,4096x4096)";
  return shapes;
}
auto read_batch(std::string_view text) { return front::parse_int_list(text, "rows of X", 1, 256); }

void start(State& s, Model& m) {
  s.error.clear();
  const auto shapes = read_shapes(s.shapes);
  if (!front::ok(shapes)) {
    s.error = std::get<1>(shapes);
    m.set_error(s.error);
    return;
  }
  const auto ms = read_batch(s.batch);
  if (!front::ok(ms)) {
    s.error = std::get<1>(ms);
    m.set_error(s.error);
    return;
  }
  std::vector<BenchCase> cases;
  for (const BenchCase& c :
       bench_cases_for(std::get<0>(shapes), group_of(s.group_choice), std::get<0>(ms), kBothTypes))
    if (s.chosen.count(c.kernel_name())) cases.push_back(c);
  if (cases.empty()) {
    s.error = "choose at least one kernel to time";
    m.set_error(s.error);
    return;
  }
  // What each kernel takes (shape, group, rows of X), as the bench command checks it.
  for (const BenchCase& c : cases) {
    try {
      check_bench_case(c);
    } catch (const Error& e) {
      s.error = e.what();
      m.set_error(s.error);
      return;
    }
  }
  // The rows a block and the ring beside the walk, each refused with a sentence where it cannot apply.
  if (s.gemm_rows != 0) {
    bool any = false;
    for (BenchCase& c : cases) {
      if (c.takes_gemm_rows()) c.gemm_rows = s.gemm_rows, any = true;
    }
    if (!gemv::hopper_rows_exist(s.gemm_rows)) {
      s.error = fmt::format(
          "GEMM rows a block {} is not supported: use a multiple of {} from {} to {}, or 0 for "
          "the launcher's choice",
          s.gemm_rows, gemv::kHopperRowStep, gemv::kHopperLeastRows, gemv::kHopperLoneRows);
    } else if (!any) {
      s.error = fmt::format(
          "GEMM rows a block applies to the gemm/w4a16-ft kernels (int4, N a multiple of 128, group 64 "
          "or 128) {}, and none is chosen: tick gemm/w4a16-ft-fp16, add such rows of X and such a shape, "
          "or set it to 0",
          gemm_rows_where());
    } else if (!s.hopper) {
      s.error = fmt::format(
          "GEMM rows a block sets the blocks of the Hopper GEMM, which runs on compute capability 9.0 GPUs, "
          "and this view times on {}; set it to 0",
          s.device_line);
    }
  }
  if (s.ring && s.error.empty()) {
    const size_t chosen = cases.size();
    cases = with_ring_twins(cases);
    if (cases.size() == chosen) {
      s.error =
          "the ring beside the walk applies to the w4a16-ft kernels the walk runs (int4, 2 to 32 rows of "
          "X, N and K multiples of 128, at least 2^24 weights), and none is chosen: tick "
          "gemv/w4a16-ft-fp16 (or gemm/ from 17 rows), add rows of X from 2 to 32 and such a shape, or "
          "untick the ring";
    } else if (!s.hopper) {
      s.error = fmt::format(
          "the ring beside the walk times two forms that run on compute capability 9.0 GPUs, and this view "
          "times on {}; untick the ring",
          s.device_line);
    }
  }
  BenchSettings set;
  set.cold = s.cold != 0;
  set.back_to_back = s.back_to_back;
  set.max_noise = s.max_noise_pct / 100.0;
  set.timeout_seconds = s.timeout_s;
  if (s.error.empty() && cold_back_to_back_on_cpu(set, s.backend->info().backend)) {
    s.error =
        "cold back-to-back runs take each their own copy of the buffers on a GPU, and this view times on the "
        "CPU twin: choose warm (its runs one after another) or untick back to back; nothing was started";
  }
  if (!s.error.empty()) {
    m.set_error(s.error);
    return;
  }
  s.control.cancel = false;
  s.control.done = 0;
  s.control.total = static_cast<int>(cases.size()) + 1;
  s.start = std::chrono::steady_clock::now();
  s.job = run_bench_async(*s.backend, std::move(cases), set, &s.control);
}

// Shows a saved run in place of the results (Model::open_saved_run); a file that cannot be shown leaves them.
void open_saved(State& s, Model& m, const std::string& path) {
  std::string why;
  if (!m.open_saved_run(path, &why)) {
    s.error = why;
    m.set_error(s.error);
    return;
  }
  s.comparison.reset();
  s.show_results = 3;
  s.open_path = path;  // a scripted open shows its file in the field too
  s.error.clear();
}

// A/B: the saved run at s.compare_path (A) against the results shown (B).
void compare_with(State& s, Model& m) {
  try {
    s.comparison = std::make_unique<front::Comparison>(front::compare_bench(
        front::load_bench_json(s.compare_path), front::bench_report_json(m.bench_device, m.bench_rows)));
    s.error.clear();  // an earlier file's refusal no longer applies
  } catch (const std::exception& e) {
    s.comparison.reset();
    s.error = e.what();
    m.set_error(s.error);
  }
}

}  // namespace

void draw_timing(Model& m, const Ui& ui) {
  State& s = state();
  const float em = ui.em;
  if (!s.init) {
    s.init = true;
    std::string why;
    const bool gpu = m.active && m.active->info().backend == "cuda";
    if (gpu) s.backend = make_cuda_backend(&why);
    if (!s.backend) s.backend = make_cpu_backend();
    std::set<std::string> seen;
    // M = 64 names the GEMM rows (gemm/...) beside the GEMV ones; fp16 and bf16 X (-fp16, -bf16).
    for (const BenchCase& c : bench_cases_for({{256, 1024}}, 128, {1, 64}, kBothTypes)) {
      if (seen.insert(c.kernel_name()).second) s.kernels.push_back(c.kernel_name());
    }
    if (gpu) {
      s.shapes = "4096x4096,8192x8192,8192x28672";
      for (const auto& k : s.kernels)
        if (k.rfind("dequant/", 0) == 0) s.chosen.insert(k);
    } else {  // the CPU twin is slow: small shapes and the int4 -> fp16 family
      s.shapes = "256x1024,512x2048,1024x4096";
      for (const char* k : {"dequant/awq-int4-fp16", "dequant/ft-int4-fp16", "dequant/naive-int4-fp16"})
        s.chosen.insert(k);
    }
    s.device_line = s.backend->info().summary();
    s.hopper = s.backend->info().backend == "cuda" && s.backend->info().cc() == 90;
    if (!m.bench_file.empty()) {  // a saved run opened at the start (--saved-run): its path in the field
      s.show_results = 3;
      s.open_path = m.bench_file;
    }
  }
  // Test and figure scripts: "timing.kernels=a,b" (exact names), "timing.select=GLOB" (the names it matches),
  // "timing.shapes=NxK,NxK",
  // "timing.batch=M,M" (rows of X of the GEMV / GEMM cases), "timing.gemm-rows=R" (the Hopper GEMM's rows a
  // block), "timing.ring=1" (the walk's cases a second time on the ring),
  // "timing.warm=1", "timing.back-to-back=1", "timing.timeout=SECONDS", "timing.run=1",
  // "timing.tab=table|medians|sweep|compare", "timing.save-json=PATH" (below), "timing.open=PATH" (a saved
  // run in place of the results), "timing.compare=PATH" (below: a saved run as A against the results).
  if (auto v = scripted("timing.kernels")) {
    std::set<std::string> picked;
    std::string unknown;
    for (const std::string& k : front::split_commas(*v)) {
      if (std::find(s.kernels.begin(), s.kernels.end(), k) == s.kernels.end()) {
        if (unknown.empty()) unknown = k;
      } else {
        picked.insert(k);
      }
    }
    if (!unknown.empty()) {
      s.error = fmt::format(
          "timing.kernels: '{}' is not a kernel this view times: names look like dequant/ft-int4-fp16, "
          "quant/int4-sym, permute/int4-fwd, gemv/w4a16-ft-fp16 and gemm/w4a16-ft-fp16; the choice is kept",
          unknown);
      m.set_error(s.error);
    } else {
      s.chosen = std::move(picked);
    }
  }
  if (auto v = scripted("timing.select")) {
    s.glob = *v;
    select_matching(s, m);
  }
  // Values these keys do not take are refused with a sentence and the setting kept. GEMM rows a block
  // are checked further (a multiple of 16 from 48) when the run starts, as the field's are.
  if (auto v = scripted("timing.shapes")) {
    if (script_value(m, read_shapes(*v))) s.shapes = *v;
  }
  if (auto v = scripted("timing.batch")) {
    if (script_value(m, read_batch(*v))) s.batch = *v;
  }
  if (auto v = scripted("timing.gemm-rows")) {
    if (auto r = script_value(m, front::parse_int(*v, "timing.gemm-rows", 0, 256)))
      s.gemm_rows = static_cast<int>(*r);
  }
  if (auto v = scripted("timing.ring")) {
    if (auto i = script_choice(m, "timing.ring", *v, {"0", "1"})) s.ring = *i == 1;
  }
  if (auto v = scripted("timing.warm")) {
    if (auto i = script_choice(m, "timing.warm", *v, {"0", "1"})) s.cold = *i == 1 ? 0 : 1;
  }
  if (auto v = scripted("timing.back-to-back")) {
    if (auto i = script_choice(m, "timing.back-to-back", *v, {"0", "1"})) s.back_to_back = *i == 1;
  }
  if (auto v = scripted("timing.timeout")) {
    if (auto t = script_value(m, front::parse_positive(*v, "timing.timeout (seconds a case)", 3600)))
      s.timeout_s = static_cast<float>(*t);
  }
  if (auto v = scripted("timing.tab")) {
    if (script_choice(m, "timing.tab", *v, {"table", "medians", "sweep", "compare"})) s.open_tab = *v;
  }
  if (auto v = scripted("timing.run")) {
    if (*v != "1")
      m.set_error(fmt::format(
          "timing.run '{}' is not a value it takes: give 1 to start a run; nothing was started", *v));
    else if (!s.job.valid())
      start(s, m);
  }
  if (auto v = scripted("timing.open")) {
    if (s.job.valid()) {
      m.set_error("timing.open: a run is under way; open the saved run once it ends (nothing was opened)");
    } else {
      s.open_path = *v;
      open_saved(s, m, *v);
    }
  }
  // A screenshot waits for the run under way (the shell waits while script keys are pending).
  scripted("timing.running");
  if (s.job.valid()) script_push("timing.running", "1");

  // ---- collect a finished run ----
  if (s.job.valid() && s.job.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
    try {
      std::vector<BenchRow> rows = s.job.get();
      if (!rows.empty()) {
        m.bench_rows = std::move(rows);
        m.bench_file.clear();
        m.bench_copy_gbps = copy_bandwidth(*s.backend);  // measured by the run, cached
        const GpuClocks clocks = s.backend->info().backend == "cuda" ? read_gpu_clocks() : GpuClocks{};
        m.bench_device = front::bench_device_json(s.backend->info(), m.bench_copy_gbps, clocks);
        s.comparison.reset();
        s.show_results = 3;
      }
    } catch (const std::bad_alloc&) {
      s.error = "this machine's memory cannot hold the matrices of these shapes: time smaller shapes";
      m.set_error(s.error);
    } catch (const std::exception& e) {
      s.error = e.what();
      m.set_error(s.error);
    }
  }

  // ---- what to time ----
  ImGui::Text("%s", s.device_line.c_str());
  const auto draw_kernels = [&] {
    ImGui::TextUnformatted("Kernels");
    same_line_if_fits(12 * em);
    ImGui::SetNextItemWidth(12 * em);
    const bool entered =
        text_input("##glob", &s.glob, ImGuiInputTextFlags_EnterReturnsTrue, "a pattern, e.g. gemm/*");
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip(
          "A pattern over the names, as bench --kernel takes: gemm/*, dequant/*-int4-*, *-bf16");
    same_line_if_fits(button_width("select matching"));
    if (ImGui::SmallButton("select matching") || entered) select_matching(s, m);
    same_line_if_fits(button_width("clear"));
    if (ImGui::SmallButton("clear")) s.chosen.clear();
    const std::string count = fmt::format("{} of {} chosen", s.chosen.size(), s.kernels.size());
    same_line_if_fits(ImGui::CalcTextSize(count.c_str()).x);
    dim_text("%s", count.c_str());
    // As many columns as the widest name allows (three at the normal text size from about 1100 px);
    // every kernel in view where 30% of the window's height allows, else four rows and a scroll bar.
    float widest = 0;
    for (const std::string& k : s.kernels) widest = std::max(widest, check_width(k.c_str()));
    const float cell = widest + 2 * ImGui::GetStyle().CellPadding.x + ImGui::GetStyle().ScrollbarSize / 3;
    const int columns = std::clamp(static_cast<int>((ImGui::GetContentRegionAvail().x - em) / cell), 1, 3);
    const float row_h = ImGui::GetFrameHeightWithSpacing();
    const float rows_all = std::ceil(static_cast<float>(s.kernels.size()) / static_cast<float>(columns));
    const float rows_fit = std::max(4.0f, std::floor(0.3f * ImGui::GetMainViewport()->Size.y / row_h));
    ImGui::BeginChild("kernel list", ImVec2(0, std::min(rows_all, rows_fit) * row_h + em), true);
    if (ImGui::BeginTable("kernel grid", columns)) {
      for (const std::string& k : s.kernels) {
        ImGui::TableNextColumn();
        bool on = s.chosen.count(k) > 0;
        if (ImGui::Checkbox(k.c_str(), &on)) {
          if (on)
            s.chosen.insert(k);
          else
            s.chosen.erase(k);
        }
      }
      ImGui::EndTable();
    }
    ImGui::EndChild();
  };
  // The settings' widest row: the group, cold and warm.
  const float spacing = ImGui::GetStyle().ItemSpacing.x, inner = ImGui::GetStyle().ItemInnerSpacing.x;
  const float settings_w = std::max(5 * em + inner + ImGui::CalcTextSize("group").x + 2 * spacing +
                                        check_width("cold (L2 flushed)") + check_width("warm"),
                                    10 * em + inner + ImGui::CalcTextSize("rows of X (gemv / gemm)").x) +
                           2 * ImGui::GetStyle().CellPadding.x;
  const auto draw_settings = [&] {
    // A field 16 em wide where the column leaves its label room beside it, at least 6 em.
    const auto field_width = [em, inner](const char* label) {
      const float room = ImGui::GetContentRegionAvail().x - ImGui::CalcTextSize(label).x - inner;
      return std::clamp(room, 6 * em, 16 * em);
    };
    ImGui::SetNextItemWidth(field_width("shapes NxK"));
    text_input("shapes NxK", &s.shapes);
    ImGui::SetNextItemWidth(field_width("rows of X (gemv / gemm)"));
    text_input("rows of X (gemv / gemm)", &s.batch);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("M values, 1 to 256, separated by commas: e.g. 1,4,16");
    ImGui::BeginDisabled(!s.hopper && s.gemm_rows == 0);
    ImGui::SetNextItemWidth(8 * em);
    constexpr int kStep = static_cast<int>(gemv::kHopperRowStep);
    ImGui::InputInt("GEMM rows a block", &s.gemm_rows, kStep, 4 * kStep);
    ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) {
      static const std::string where = gemm_rows_where();
      ImGui::SetTooltip(
          "The rows of X a block of the Hopper GEMM takes (gemm/w4a16-ft, %s): a multiple of "
          "%d from %d to %d, or 0 for the launcher's choice.%s",
          where.c_str(), kStep, static_cast<int>(gemv::kHopperLeastRows),
          static_cast<int>(gemv::kHopperLoneRows),
          s.hopper ? "" : "\nCompute capability 9.0 GPUs only: this backend has no Hopper GEMM.");
    }
    ImGui::BeginDisabled(!s.hopper && !s.ring);
    ImGui::Checkbox("ring beside the walk", &s.ring);
    ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) {
      ImGui::SetTooltip(
          "Times each w4a16-ft case of 2 to 32 rows of X (gemv/, gemm/ from 17) a second time on the\n"
          "copy-engine ring that the walk replaced, its shape marked 'ring'.%s",
          s.hopper ? "" : "\nCompute capability 9.0 GPUs only: this backend runs neither.");
    }
    const char* groups[] = {"32", "64", "128"};
    ImGui::SetNextItemWidth(5 * em);
    ImGui::Combo("group", &s.group_choice, groups, 3);
    same_line_if_fits(check_width("cold (L2 flushed)"));
    ImGui::RadioButton("cold (L2 flushed)", &s.cold, 1);
    same_line_if_fits(check_width("warm"));
    ImGui::RadioButton("warm", &s.cold, 0);
    same_line_if_fits(check_width("back to back"));
    ImGui::Checkbox("back to back", &s.back_to_back);
    if (ImGui::IsItemHovered()) {
      ImGui::SetTooltip(
          "Each sample times runs queued one after another, as one span over its runs (nvbench's batch\n"
          "time): what a kernel takes among others in a stream, without one launch's own latency.\n"
          "Cold: each run on its own copy of the buffers, the L2 holding none of it (GPU only).\n"
          "Warm: the same buffers every run.");
    }
    ImGui::SetNextItemWidth(8 * em);
    ImGui::SliderFloat("max noise %", &s.max_noise_pct, 0.5f, 10.0f, "%.1f");
    ImGui::SetNextItemWidth(8 * em);
    ImGui::SliderFloat("timeout s / case", &s.timeout_s, 0.2f, 15.0f, "%.1f");
    if (s.job.valid()) {
      ImGui::BeginDisabled(s.control.cancel.load());
      if (ImGui::Button("Cancel")) s.control.cancel = true;
      ImGui::EndDisabled();
    } else if (ImGui::Button("Run")) {
      start(s, m);
    }
  };
  // Side by side where the kernels keep 30 em beside the settings, else the settings below the kernels.
  if (ImGui::GetContentRegionAvail().x - settings_w >= 30 * em) {
    if (ImGui::BeginTable("bench setup", 2, ImGuiTableFlags_BordersInnerV)) {
      ImGui::TableSetupColumn("kernels", ImGuiTableColumnFlags_WidthStretch);
      ImGui::TableSetupColumn("settings", ImGuiTableColumnFlags_WidthFixed, settings_w);
      ImGui::TableNextColumn();
      draw_kernels();
      ImGui::TableNextColumn();
      draw_settings();
      ImGui::EndTable();
    }
  } else {
    draw_kernels();
    draw_settings();
  }
  if (s.job.valid()) {
    const int done = s.control.done.load(), total = std::max(1, s.control.total.load());
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - s.start).count();
    char over[96];
    snprintf(over, sizeof over, "%s %d / %d  (%.1f s)", done == 0 ? "copy bandwidth," : "case", done,
             total - 1, t);
    ImGui::ProgressBar(static_cast<float>(done) / static_cast<float>(total), ImVec2(-1, 0), over);
  }
  {  // a saved run in place of the results
    const float button_w = button_width("Open saved run");
    ImGui::SetNextItemWidth(
        std::clamp(ImGui::GetContentRegionAvail().x - button_w - spacing, 6 * em, 24 * em));
    const bool entered = text_input("##open", &s.open_path, ImGuiInputTextFlags_EnterReturnsTrue,
                                    "a saved run, e.g. bench.json");
    same_line_if_fits(button_w);
    ImGui::BeginDisabled(s.job.valid());
    if ((ImGui::Button("Open saved run") || entered) && !s.job.valid()) open_saved(s, m, s.open_path);
    ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
      ImGui::SetTooltip(
          "Shows a run saved by bench --json or Save JSON, on this machine or another, until the next Run:\n"
          "its table, medians, size sweep and launches, and the SASS view's times.");
  }
  if (!s.error.empty()) error_text(s.error);

  const std::vector<BenchRow>& rows = m.bench_rows;
  // "timing.save-json=PATH" (scripts): writes the results once there are some (or gives up when a
  // run failed), so a scripted screenshot ends with the report on disk.
  if (!rows.empty() && !s.job.valid()) {
    if (auto v = scripted("timing.save-json")) {
      try {
        front::write_report_file(*v, front::bench_report_json(m.bench_device, rows).dump(2) + "\n");
      } catch (const std::exception& e) {
        s.error = e.what();
        m.set_error(s.error);
      }
    }
  } else if (!s.job.valid() && !s.error.empty()) {
    scripted("timing.save-json");
  } else if (!s.job.valid() && scripted("timing.save-json")) {  // nothing run: nothing to wait for
    s.error = "there are no results to save: Run first, then save";
    m.set_error(s.error);
  }
  // "timing.compare=PATH" (scripts): the Compare button on that file, once there are results (B).
  if (!rows.empty() && !s.job.valid()) {
    if (auto v = scripted("timing.compare")) {
      s.compare_path = *v;
      compare_with(s, m);
      s.open_tab = "compare";
    }
  } else if (!s.job.valid() && scripted("timing.compare")) {
    s.error = "there are no results to compare with a saved run: Run first, or open a saved run";
    m.set_error(s.error);
  }
  if (rows.empty()) {
    dim_text("no results yet: choose kernels and shapes, then Run (or open a saved run)");
    return;
  }
  ImGui::Separator();
  if (s.show_results > 0) {
    ImGui::SetScrollHereY(0.0f);
    --s.show_results;
  }
  if (!m.bench_file.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, palette::kHighlight);
    wrapped_text("A saved run: %s", m.bench_source().c_str());
    ImGui::PopStyleColor();
  }
  if (m.bench_copy_gbps > 0)
    dim_text(
        "%zu results; median of the samples, %s; GB/s counts each byte read and written once; copy %.1f "
        "GB/s",
        rows.size(),
        rows.front().runs_per_sample > 0
            ? (rows.front().cold ? "runs back to back, each on its own copy of the buffers (L2 cold)"
                                 : "runs back to back on the same buffers (L2 warm)")
        : rows.front().cold ? "L2 flushed"
                            : "L2 warm",
        m.bench_copy_gbps);

  if (!ImGui::BeginTabBar("timing results")) return;
  const auto tab = [&](const char* name, const char* key) {
    return ImGui::BeginTabItem(name, nullptr, s.open_tab == key ? ImGuiTabItemFlags_SetSelected : 0);
  };
  if (tab("Table", "table")) {
    // Columns keep the width of their text; where they do not all fit, the table scrolls sideways with the
    // kernel's name held in place.
    const ImGuiTableFlags f = ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders | ImGuiTableFlags_ScrollY |
                              ImGuiTableFlags_ScrollX | ImGuiTableFlags_SizingFixedFit |
                              ImGuiTableFlags_NoSavedSettings;
    // The rest of the view, but room for 12 rows at least (where the setup leaves less, the view scrolls).
    const float least = static_cast<float>(std::min<size_t>(rows.size() + 1, 13)) * ImGui::GetFrameHeight() +
                        ImGui::GetStyle().ScrollbarSize;
    if (ImGui::BeginTable("results", 8, f, ImVec2(0, rest_height(least, 0.5f * em)))) {
      ImGui::TableSetupScrollFreeze(1, 1);
      for (const char* h : {"kernel", "shape", "samples", "median", "noise", "GB/s", "% of copy", "speed-up"})
        ImGui::TableSetupColumn(h);
      ImGui::TableHeadersRow();
      ImGui::PushFont(ui.mono);
      for (const BenchRow& r : rows) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(r.kernel.c_str());
        if (ImGui::IsItemHovered()) row_tooltip(r);
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(r.shape.c_str());
        ImGui::TableNextColumn();
        ImGui::Text("%d%s", r.stats.samples, r.timed_out ? " (timed out)" : "");
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(front::format_duration(r.stats.median_s * 1e6).c_str());
        ImGui::TableNextColumn();
        ImGui::Text("%.2f%%", 100 * r.stats.noise);
        ImGui::TableNextColumn();
        ImGui::Text("%.1f", r.gbps);
        ImGui::TableNextColumn();
        ImGui::Text("%.1f%%", r.pct_of_copy);
        ImGui::TableNextColumn();
        if (r.speedup) ImGui::Text("%.2fx", *r.speedup);
      }
      ImGui::PopFont();
      ImGui::EndTable();
    }
    ImGui::EndTabItem();
  }
  if (tab("Medians", "medians")) {
    dim_text("bar: median; whisker: Q1 .. Q3 (the noise); dots: min and max");
    // The rest of the view, but room for 12 bars at least (the view scrolls where the setup leaves less).
    const float bars_h = 1.3f * em * static_cast<float>(std::min<size_t>(rows.size(), 12)) + 3 * em;
    ImGui::BeginChild("bars child", ImVec2(0, rest_height(bars_h)), false);
    bars(rows, ui);
    ImGui::EndChild();
    ImGui::EndTabItem();
  }
  if (tab("Size sweep", "sweep")) {
    sweep(rows, m.bench_copy_gbps, ui);
    ImGui::EndTabItem();
  }
  if (tab("Export and compare", "compare")) {
    ImGui::SetNextItemWidth(24 * em);
    text_input("##csv", &s.csv_path);
    ImGui::SameLine();
    const auto save = [&](const std::string& path, const std::string& text) {
      try {
        front::write_report_file(path, text);
        s.saved = "wrote " + path;
      } catch (const std::exception& e) {
        s.saved.clear();
        s.error = e.what();
        m.set_error(s.error);
      }
    };
    if (ImGui::Button("Save CSV")) save(s.csv_path, front::bench_csv(rows));
    ImGui::SetNextItemWidth(24 * em);
    text_input("##json", &s.json_path);
    ImGui::SameLine();
    if (ImGui::Button("Save JSON"))
      save(s.json_path, front::bench_report_json(m.bench_device, rows).dump(2) + "\n");
    if (!s.saved.empty()) dim_text("%s", s.saved.c_str());
    ImGui::Separator();
    ImGui::TextUnformatted(
        "A/B: a saved run (A, a JSON file from the app or bench --json) against these results (B)");
    ImGui::SetNextItemWidth(24 * em);
    text_input("##cmp", &s.compare_path);
    ImGui::SameLine();
    if (ImGui::Button("Compare")) compare_with(s, m);
    if (s.comparison) {
      ImGui::Text("A: %s    B: %s", s.comparison->a_device.c_str(), s.comparison->b_device.c_str());
      if (ImGui::BeginTable(
              "compare", 7,
              ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit)) {
        for (const char* h : {"kernel", "shape", "A median", "B median", "A/B", "noise", "verdict"})
          ImGui::TableSetupColumn(h);
        ImGui::TableHeadersRow();
        for (const front::CompareRow& r : s.comparison->rows) {
          ImGui::TableNextRow();
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(r.kernel.c_str());
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(r.shape.c_str());
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(front::format_duration(r.a_us).c_str());
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(front::format_duration(r.b_us).c_str());
          ImGui::TableNextColumn();
          ImGui::Text("%.3fx", r.ratio);
          ImGui::TableNextColumn();
          ImGui::Text("%.1f%%", 100 * r.noise);
          ImGui::TableNextColumn();
          const ImU32 c = r.verdict == "SAME"     ? palette::kDim
                          : r.verdict == "FASTER" ? palette::kGood
                                                  : palette::kBad;
          ImGui::PushStyleColor(ImGuiCol_Text, c);
          ImGui::TextUnformatted(r.verdict.c_str());
          ImGui::PopStyleColor();
          if (r.other_kernels) {
            ImGui::SameLine();
            ImGui::TextUnformatted("*");
          }
          if (r.other_kernels && ImGui::IsItemHovered())
            ImGui::SetTooltip(
                "A and B launched other kernels for this row: their files' \"launches\" say which");
          if (r.other_timing) {
            ImGui::SameLine();
            ImGui::TextUnformatted("+");
            if (ImGui::IsItemHovered())
              ImGui::SetTooltip("A and B timed this row otherwise: A %s, B %s", r.timing_a.c_str(),
                                r.timing_b.c_str());
          }
        }
        ImGui::EndTable();
      }
      if (std::any_of(s.comparison->rows.begin(), s.comparison->rows.end(),
                      [](const front::CompareRow& r) { return r.other_kernels; })) {
        dim_text(
            "*: A and B launched other kernels for the row (another build, or the launcher chose "
            "otherwise on the other device)");
      }
      if (std::any_of(s.comparison->rows.begin(), s.comparison->rows.end(),
                      [](const front::CompareRow& r) { return r.other_timing; })) {
        dim_text("+: A and B timed the row otherwise (cold or warm, back to back or a run at a time)");
      }
      dim_text(
          "A/B > 1: B is faster; noise: the two runs' relative IQRs added, the band within which a row is "
          "SAME");
      if (const std::string copy = front::copy_line(*s.comparison); !copy.empty())
        dim_text("%s", copy.c_str());
    }
    ImGui::EndTabItem();
  }
  ImGui::EndTabBar();
  s.open_tab.clear();
}

}  // namespace dql::gui
