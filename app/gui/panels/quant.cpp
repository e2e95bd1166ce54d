// Quantize: a matrix (generated, .npy, or a tensor of a .safetensors file) through quant and
// dequant on the active backend, off the UI thread; the weights' histogram with the levels of a
// chosen group (NF4: its 16 levels on the normal density), error statistics and an error heatmap.
#include <fmt/format.h>
#include <imgui.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <memory>
#include <new>
#include <numbers>
#include <string>
#include <vector>

#include "app/common/parse.hpp"
#include "app/gui/model.hpp"
#include "app/gui/panels/heatmap.hpp"
#include "app/gui/widgets.hpp"
#include "kernels/bits/float.hpp"

namespace dql::gui {

namespace {

using quant::Layout;
using quant::Scheme;

constexpr int kBins = 96;
constexpr int kMapCols = 512, kMapRows = 256;  // the error heatmap's cells at most

// What the worker is asked to do.
struct Request {
  int source = 0;  // 0 generated, 1 .npy, 2 .safetensors
  Distribution dist = Distribution::Normal;
  uint64_t seed = 1;
  int64_t n = 0, k = 0;
  std::string path, tensor;
  QuantSpec spec;
  recipes::RecipeId recipe = recipes::RecipeId::NaiveInt4F16;
};

struct Result {
  std::string error;  // the sentence, when it failed
  Request req;
  Tensor w;           // fp32 [N, K]
  QuantizedMatrix q;  // without its packed words (kept: scales, zeros, absmax)
  int64_t n = 0, k = 0;
  double max_abs = 0, mse = 0, snr_db = 0, seconds = 0;
  float lo = 0, hi = 0;          // weight range
  std::vector<float> hist;       // kBins counts over [lo, hi]
  std::vector<float> norm_hist;  // NF4: kBins counts of w / absmax over [-1, 1]
  double norm_sigma = 0;         // NF4: the spread of w / absmax
  int map_cols = 0, map_rows = 0;
  int64_t pool_n = 1, pool_k = 1;  // elements per heatmap cell
  std::vector<float> err_map;      // max |error| per cell
};

struct State {
  bool init = false;
  int source = 0;
  int dist = 0;
  int seed = 1;
  std::string shape;
  std::string npy_path;
  std::string st_path;
  std::vector<std::string> st_names;
  std::string st_listed;
  int st_index = 0;
  int scheme = 1, group_choice = 3, blocksize_log2 = 6, layout_choice = 0, recipe_choice = 0;
  int group_row = 0, group_index = 0;  // the group whose levels are drawn
  bool dirty = true;                   // inputs changed: run again
  std::string input_error;             // a sentence about the inputs (shape text, file path)
  std::shared_ptr<Backend> backend;    // the worker's own instance of the active backend's kind
  std::future<Result> job;
  std::chrono::steady_clock::time_point job_start;
  std::unique_ptr<Result> result;
  Heatmap err_map;
  ~State() {
    if (job.valid()) job.wait();
  }
};

State& state() {
  static State s;
  return s;
}

const Scheme kSchemes[] = {Scheme::Int8Sym, Scheme::Int4Sym, Scheme::Int4Asym, Scheme::Nf4};
const char* kSchemeNames[] = {"int8 sym", "int4 sym", "int4 asym", "NF4"};

std::vector<Layout> layouts_for(Scheme s) {
  if (s == Scheme::Int4Asym) return {Layout::Awq};
  if (s == Scheme::Nf4) return {Layout::Plain};
  return {Layout::Plain, Layout::Ft};
}
const char* layout_name(Layout l) {
  return l == Layout::Plain ? "plain" : l == Layout::Awq ? "AWQ" : "mixed-GEMM (FT)";
}

double out_value(uint16_t bits16, recipes::OutType t) {
  return bits::to_double(bits16, t == recipes::OutType::F16 ? bits::kF16 : bits::kBF16);
}

// About 12 bytes an element are held at once (fp32 weights, codes, the fp16 result, the packed
// words); refuse a matrix that cannot fit in the memory free now rather than fail halfway.
void check_fits(int64_t n, int64_t k) {
  const double need = static_cast<double>(n) * static_cast<double>(k) * 12.0;
  const double free_b =
      static_cast<double>(sysconf(_SC_AVPHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  if (free_b > 0 && need > free_b) {
    throw Error(
        fmt::format("a {}x{} matrix needs about {:.1f} GiB to quantize and dequantize; {:.1f} GiB of memory "
                    "is free: choose a smaller shape",
                    n, k, need / 1073741824.0, free_b / 1073741824.0));
  }
}

Result run(Request req, std::shared_ptr<Backend> b) {
  Result r;
  r.req = req;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    if (req.source == 0) {
      check_fits(req.n, req.k);
      r.w = random_matrix(req.dist, req.seed, req.n, req.k);
    } else if (req.source == 1) {
      r.w = to_f32_matrix(read_npy(req.path), "'" + req.path + "'");
    } else {
      r.w = to_f32_matrix(read_safetensors(req.path, req.tensor),
                          "tensor '" + req.tensor + "' in '" + req.path + "'");
    }
    r.n = r.w.shape.at(0), r.k = r.w.shape.at(1);
    check_fits(r.n, r.k);
    QuantSpec spec = req.spec;
    if (spec.group == 0) spec.group = static_cast<int>(r.k);  // per channel
    check_quant_shape(spec, r.n, r.k);
    r.q = b->quantize(r.w, spec);
    const std::vector<uint16_t> out = b->dequantize(r.q, req.recipe);
    r.q.qwords.clear();
    r.q.qwords.shrink_to_fit();
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    const float* x = r.w.as<float>();
    const int64_t count = r.n * r.k;
    const recipes::OutType ot = recipes::recipe_out(req.recipe);
    r.lo = *std::min_element(x, x + count);
    r.hi = *std::max_element(x, x + count);
    if (!(r.hi > r.lo)) r.hi = r.lo + 1e-6f;
    r.hist.assign(kBins, 0);
    r.map_cols = static_cast<int>(std::min<int64_t>(r.k, kMapCols));
    r.map_rows = static_cast<int>(std::min<int64_t>(r.n, kMapRows));
    r.pool_k = (r.k + r.map_cols - 1) / r.map_cols;
    r.pool_n = (r.n + r.map_rows - 1) / r.map_rows;
    r.map_cols = static_cast<int>((r.k + r.pool_k - 1) / r.pool_k);
    r.map_rows = static_cast<int>((r.n + r.pool_n - 1) / r.pool_n);
    r.err_map.assign(static_cast<size_t>(r.map_cols) * r.map_rows, 0.0f);
    double sig = 0, err = 0, mx = 0;
    for (int64_t i = 0; i < count; ++i) {
      const double d = out_value(out[i], ot) - static_cast<double>(x[i]);
      sig += static_cast<double>(x[i]) * x[i];
      err += d * d;
      mx = std::max(mx, std::fabs(d));
      const int bin = std::clamp(static_cast<int>((x[i] - r.lo) / (r.hi - r.lo) * kBins), 0, kBins - 1);
      r.hist[bin] += 1;
      float& cell = r.err_map[static_cast<size_t>((i / r.k) / r.pool_n) * r.map_cols + (i % r.k) / r.pool_k];
      cell = std::max(cell, static_cast<float>(std::fabs(d)));
    }
    r.max_abs = mx;
    r.mse = err / static_cast<double>(count);
    r.snr_db = err > 0 ? 10.0 * std::log10(sig / err) : INFINITY;
    if (spec.scheme == Scheme::Nf4) {
      r.norm_hist.assign(kBins, 0);
      const int64_t blocks = r.k / spec.group;
      double ss = 0;
      for (int64_t i = 0; i < count; ++i) {
        const float a = r.q.absmax[(i / r.k) * blocks + (i % r.k) / spec.group];
        const double v = a > 0 ? x[i] / a : 0.0;
        ss += v * v;
        const int bin = std::clamp(static_cast<int>((v + 1.0) / 2.0 * kBins), 0, kBins - 1);
        r.norm_hist[bin] += 1;
      }
      r.norm_sigma = std::sqrt(ss / static_cast<double>(count));
    }
  } catch (const std::bad_alloc&) {
    r.error = "the matrix does not fit in memory: choose a smaller shape";
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

// The values one group's codes stand for, in the order of the codes.
std::vector<double> group_levels(const Result& r, int64_t row, int64_t g) {
  const QuantSpec& s = r.q.spec;
  const int64_t groups = r.k / s.group;
  std::vector<double> lv;
  if (s.scheme == Scheme::Nf4) {
    const double a = r.q.absmax[row * groups + g];
    for (uint32_t c = 0; c < 16; ++c) lv.push_back(a * quant::f32_of(recipes::nf4_code_bits(c)));
    return lv;
  }
  const size_t at =
      s.layout == Layout::Plain ? static_cast<size_t>(row * groups + g) : static_cast<size_t>(g * r.n + row);
  const double scale = quant::half_to_f32(r.q.scales[at]);
  if (s.scheme == Scheme::Int4Asym) {
    const uint32_t word = r.q.qzeros[g * (r.n / 8) + row / 8];
    int zero = 0;
    for (int p = 0; p < 8; ++p) {
      if (quant::awq_column_of_nibble(p) == row % 8) zero = static_cast<int>((word >> (4 * p)) & 0xF);
    }
    for (int q = 0; q < 16; ++q) lv.push_back(scale * (q - zero));
    return lv;
  }
  const int qmax = s.scheme == Scheme::Int8Sym ? 127 : 7;
  for (int q = -qmax - 1; q <= qmax; ++q) lv.push_back(scale * q);
  return lv;
}

struct PlotArea {
  ImVec2 a, b;
  float x0, x1;  // data range along x
  float px(float x) const { return a.x + (x - x0) / (x1 - x0) * (b.x - a.x); }
};

// A histogram with vertical level lines; returns the bin under the mouse or -1.
int histogram(const char* id, const std::vector<float>& counts, float x0, float x1,
              const std::vector<double>& levels, const std::vector<float>* density, ImVec2 size, const Ui& ui,
              float* hover_x) {
  ImGui::InvisibleButton(id, size);
  const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddRect(a, b,
              IM_COL32(70, 70, 80, 255));  // an outline only: filled areas cost fill rate on software GL
  const float pad = 0.4f * ui.em;
  const ImVec2 pa(a.x + pad, a.y + pad), pb(b.x - pad, b.y - 1.4f * ui.em);
  PlotArea pl{pa, pb, x0, x1};
  float top = 1;
  for (float c : counts) top = std::max(top, c);
  const int nb = static_cast<int>(counts.size());
  const float bw = (pb.x - pa.x) / static_cast<float>(nb);
  for (int i = 0; i < nb; ++i) {
    const float h = counts[i] / top * (pb.y - pa.y);
    dl->AddRect(ImVec2(pa.x + i * bw, pb.y - h), ImVec2(pa.x + (i + 1) * bw - 1, pb.y),
                IM_COL32(90, 140, 200, 255));
  }
  if (density && !density->empty()) {  // drawn at the same scale as the bars
    std::vector<ImVec2> pts;
    for (size_t i = 0; i < density->size(); ++i) {
      const float x =
          pa.x + (static_cast<float>(i) + 0.5f) * (pb.x - pa.x) / static_cast<float>(density->size());
      pts.push_back(ImVec2(x, pb.y - (*density)[i] / top * (pb.y - pa.y)));
    }
    dl->AddPolyline(pts.data(), static_cast<int>(pts.size()), IM_COL32(240, 240, 240, 230), 0, 2.0f);
  }
  for (double l : levels) {
    if (l < x0 || l > x1) continue;
    const float x = pl.px(static_cast<float>(l));
    dl->AddLine(ImVec2(x, pa.y), ImVec2(x, pb.y), IM_COL32(255, 200, 60, levels.size() > 32 ? 110 : 220),
                levels.size() > 32 ? 1.0f : 1.5f);
  }
  // The x axis: ends and zero.
  char t[64];
  snprintf(t, sizeof t, "%.4g", x0);
  dl->AddText(ImVec2(pa.x, pb.y + 0.2f * ui.em), palette::kDim, t);
  snprintf(t, sizeof t, "%.4g", x1);
  dl->AddText(ImVec2(pb.x - ImGui::CalcTextSize(t).x, pb.y + 0.2f * ui.em), palette::kDim, t);
  if (x0 < 0 && x1 > 0) {
    const float z = pl.px(0);
    dl->AddLine(ImVec2(z, pb.y), ImVec2(z, pb.y + 0.3f * ui.em), palette::kDim);
    dl->AddText(ImVec2(z - 0.3f * ui.em, pb.y + 0.2f * ui.em), palette::kDim, "0");
  }
  int hovered = -1;
  if (ImGui::IsItemHovered()) {
    const float mx = ImGui::GetIO().MousePos.x;
    hovered = std::clamp(static_cast<int>((mx - pa.x) / bw), 0, nb - 1);
    if (hover_x) *hover_x = x0 + (mx - pa.x) / (pb.x - pa.x) * (x1 - x0);
    dl->AddRect(ImVec2(pa.x + hovered * bw, pa.y), ImVec2(pa.x + (hovered + 1) * bw, pb.y),
                palette::kHighlight);
  }
  return hovered;
}

}  // namespace

void draw_quant(Model& m, const Ui& ui) {
  State& s = state();
  const float em = ui.em;
  if (!s.init) {
    s.init = true;
    s.shape = fmt::format("{}x{}", m.rows, m.cols);
    for (int i = 0; i < 4; ++i)
      if (kSchemes[i] == m.spec.scheme) s.scheme = i;
    const auto ls = layouts_for(kSchemes[s.scheme]);
    for (size_t i = 0; i < ls.size(); ++i)
      if (ls[i] == m.spec.layout) s.layout_choice = static_cast<int>(i);
    if (m.spec.scheme == Scheme::Nf4) {
      for (int l = 5; l <= 12; ++l)
        if ((1 << l) == m.spec.group) s.blocksize_log2 = l;
    } else {
      s.group_choice = m.spec.group == 32 ? 0 : m.spec.group == 64 ? 1 : m.spec.group == 128 ? 2 : 3;
      if (m.spec.group == 128) s.group_choice = 2;
    }
  }
  if (!s.backend && m.active) {
    std::string why;
    try {
      s.backend = m.active->info().backend == "cuda" ? std::shared_ptr<Backend>(make_cuda_backend(&why))
                                                     : std::shared_ptr<Backend>(make_cpu_backend());
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (!s.backend) s.backend = std::shared_ptr<Backend>(make_cpu_backend());
  }

  // Test and figure scripts: "quant.scheme=int8-sym|int4-sym|int4-asym|nf4", "quant.group=32|64|128|per
  // channel", "quant.blocksize=64", "quant.shape=NxK", "quant.npy=PATH".
  if (auto v = scripted("quant.scheme")) {
    if (auto i = script_choice(m, "quant.scheme", *v, {"int8-sym", "int4-sym", "int4-asym", "nf4"}))
      s.scheme = *i, s.layout_choice = 0, s.recipe_choice = 0, s.dirty = true;
  }
  if (auto v = scripted("quant.group")) {  // the group combo's entries, in its order
    if (auto i = script_choice(m, "quant.group", *v, {"32", "64", "128", "per channel"})) {
      s.group_choice = *i;
      s.dirty = true;
    }
  }
  if (auto v = scripted("quant.blocksize")) {  // the blocksize combo's entries: 32 to 4096
    if (auto i = script_choice(m, "quant.blocksize", *v,
                               {"32", "64", "128", "256", "512", "1024", "2048", "4096"})) {
      s.blocksize_log2 = *i + 5;
      s.dirty = true;
    }
  }
  if (auto v = scripted("quant.shape")) {
    s.shape = *v;
    s.source = 0, s.dirty = true;
  }
  if (auto v = scripted("quant.npy")) {
    s.npy_path = *v;
    s.source = 1, s.dirty = true;
  }

  // ---- inputs: a table of two columns, the matrix and the scheme; one above the other where the two
  // do not fit side by side (a large text size): each column then starts a row ----
  bool changed = false;
  const int input_columns = ImGui::GetContentRegionAvail().x >= 50 * em ? 2 : 1;
  if (ImGui::BeginTable("quant inputs", input_columns, ImGuiTableFlags_BordersInnerV)) {
    ImGui::TableNextColumn();
    ImGui::TextUnformatted("Matrix [N, K]");
    // A path field: 24 em, or what the column leaves beside `beside` (a button or a label), at least 10 em.
    const auto path_width = [em](const char* beside) {
      const float room =
          ImGui::GetContentRegionAvail().x - button_width(beside) - ImGui::GetStyle().ItemSpacing.x;
      return std::clamp(room, 10 * em, 24 * em);
    };
    changed |= ImGui::RadioButton("generated", &s.source, 0);
    same_line_if_fits(check_width(".npy file"));
    changed |= ImGui::RadioButton(".npy file", &s.source, 1);
    same_line_if_fits(check_width(".safetensors tensor"));
    changed |= ImGui::RadioButton(".safetensors tensor", &s.source, 2);
    if (s.source == 0) {
      const char* dists[] = {"normal (0, 0.02)", "uniform [-0.05, 0.05)", "normal with outliers"};
      ImGui::SetNextItemWidth(12 * em);
      changed |= ImGui::Combo("distribution", &s.dist, dists, 3);
      ImGui::SetNextItemWidth(6 * em);
      changed |= ImGui::InputInt("seed", &s.seed);
      same_line_if_fits(labelled_width(8 * em, "shape NxK"));
      ImGui::SetNextItemWidth(8 * em);
      if (text_input("shape NxK", &s.shape, ImGuiInputTextFlags_EnterReturnsTrue)) changed = true;
      if (ImGui::IsItemDeactivatedAfterEdit()) changed = true;
    } else if (s.source == 1) {
      ImGui::SetNextItemWidth(path_width("Load .npy"));
      text_input("##npy", &s.npy_path);
      same_line_if_fits(button_width("Load .npy"));
      changed |= ImGui::Button("Load .npy");
    } else {
      ImGui::SetNextItemWidth(path_width("List tensors"));
      text_input("##st", &s.st_path);
      same_line_if_fits(button_width("List tensors"));
      if (ImGui::Button("List tensors")) {
        s.st_names.clear();
        s.input_error.clear();
        try {
          s.st_names = safetensors_names(s.st_path);
          s.st_listed = s.st_path;
          s.st_index = 0;
        } catch (const std::exception& e) {
          s.input_error = e.what();
          m.set_error(s.input_error);
        }
      }
      if (!s.st_names.empty()) {
        ImGui::SetNextItemWidth(path_width("tensor"));
        if (ImGui::BeginCombo("tensor", s.st_names[s.st_index].c_str())) {
          for (int i = 0; i < static_cast<int>(s.st_names.size()); ++i) {
            if (ImGui::Selectable(s.st_names[i].c_str(), i == s.st_index)) {
              s.st_index = i;
              changed = true;
            }
          }
          ImGui::EndCombo();
        }
        same_line_if_fits(button_width("Load tensor"));
        changed |= ImGui::Button("Load tensor");
      }
    }

    ImGui::TableNextColumn();
    ImGui::TextUnformatted("Scheme");
    ImGui::SetNextItemWidth(8 * em);
    if (ImGui::Combo("scheme", &s.scheme, kSchemeNames, 4)) {
      s.layout_choice = 0;
      s.recipe_choice = 0;
      changed = true;
    }
    const Scheme sc = kSchemes[s.scheme];
    if (sc == Scheme::Nf4)
      same_line_if_fits(labelled_width(6 * em, "blocksize"));
    else
      same_line_if_fits(labelled_width(8 * em, "group"));
    if (sc == Scheme::Nf4) {
      const char* bs[] = {"32", "64", "128", "256", "512", "1024", "2048", "4096"};
      int i = s.blocksize_log2 - 5;
      ImGui::SetNextItemWidth(6 * em);
      if (ImGui::Combo("blocksize", &i, bs, 8)) {
        s.blocksize_log2 = i + 5;
        changed = true;
      }
    } else {
      const char* gs[] = {"32", "64", "128", "per channel"};
      ImGui::SetNextItemWidth(8 * em);
      changed |= ImGui::Combo("group", &s.group_choice, gs, 4);
    }
    const auto ls = layouts_for(sc);
    s.layout_choice = std::min<int>(s.layout_choice, static_cast<int>(ls.size()) - 1);
    ImGui::SetNextItemWidth(10 * em);
    if (ImGui::BeginCombo("layout", layout_name(ls[s.layout_choice]))) {
      for (int i = 0; i < static_cast<int>(ls.size()); ++i) {
        if (ImGui::Selectable(layout_name(ls[i]), i == s.layout_choice)) {
          s.layout_choice = i;
          s.recipe_choice = 0;
          changed = true;
        }
      }
      ImGui::EndCombo();
    }
    QuantSpec spec{sc, ls[s.layout_choice], 0};
    spec.group = sc == Scheme::Nf4 ? (1 << s.blocksize_log2)
                                   : (s.group_choice == 0   ? 32
                                      : s.group_choice == 1 ? 64
                                      : s.group_choice == 2 ? 128
                                                            : 0);
    QuantSpec for_recipes = spec;
    if (for_recipes.group == 0) for_recipes.group = 128;
    const auto rs = recipes_for(for_recipes);
    s.recipe_choice = std::min<int>(s.recipe_choice, static_cast<int>(rs.size()) - 1);
    same_line_if_fits(labelled_width(12 * em, "dequant recipe"));
    ImGui::SetNextItemWidth(12 * em);
    if (ImGui::BeginCombo("dequant recipe", recipes::spec_of(rs[s.recipe_choice]).name)) {
      for (int i = 0; i < static_cast<int>(rs.size()); ++i) {
        if (ImGui::Selectable(recipes::spec_of(rs[i]).name, i == s.recipe_choice)) {
          s.recipe_choice = i;
          changed = true;
        }
      }
      ImGui::EndCombo();
    }
    const bool running = s.job.valid();
    if (running) ImGui::BeginDisabled();
    if (ImGui::Button("Run again")) changed = true;
    if (running) ImGui::EndDisabled();
    same_line_if_fits(8 * em);
    dim_text("on %s",
             m.active ? (m.active->info().backend == "cuda" ? m.active->info().name.c_str() : "the CPU twin")
                      : "no backend");
    ImGui::EndTable();

    // ---- start a run when asked ----
    if ((changed || s.dirty) && !running) {
      s.dirty = false;
      s.input_error.clear();
      Request req;
      req.source = s.source;
      req.dist = static_cast<Distribution>(s.dist);
      req.seed = static_cast<uint64_t>(s.seed);
      req.spec = spec;
      req.recipe = rs[s.recipe_choice];
      bool ok = true;
      if (s.source == 0) {
        const auto shp = front::parse_shape(s.shape, "the shape");
        if (front::ok(shp)) {
          std::tie(req.n, req.k) = std::get<0>(shp);
        } else {
          s.input_error = std::get<1>(shp);
          ok = false;
        }
      } else if (s.source == 1) {
        req.path = s.npy_path;
        if (req.path.empty()) {
          s.input_error = "type the path of a .npy file holding a 2-D float matrix, then Load";
          ok = false;
        }
      } else {
        req.path = s.st_path;
        if (s.st_names.empty() || s.st_listed != s.st_path) {
          s.input_error = "type the path of a .safetensors file and press List tensors, then pick one";
          ok = false;
        } else {
          req.tensor = s.st_names[s.st_index];
        }
      }
      if (!ok) {
        if (s.source == 0) m.set_error(s.input_error);
      } else if (s.backend) {
        s.job_start = std::chrono::steady_clock::now();
        s.job = std::async(std::launch::async, run, req, s.backend);
      }
    } else if (changed && running) {
      s.dirty = true;  // run with the new inputs once this run ends
    }
  }

  // ---- collect a finished run ----
  if (s.job.valid() && s.job.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
    Result r = s.job.get();
    if (!r.error.empty()) {
      s.input_error = r.error;
      m.set_error(r.error);  // the previous result stays on screen
    } else {
      m.spec = r.q.spec;
      m.rows = r.n, m.cols = r.k;
      s.result = std::make_unique<Result>(std::move(r));
      const Result& res = *s.result;
      s.err_map.set(res.map_cols, res.map_rows, res.err_map, 0, static_cast<float>(res.max_abs),
                    ColorMap::Viridis, false);
      s.group_row = std::min<int>(s.group_row, static_cast<int>(res.n - 1));
      s.group_index = std::min<int>(s.group_index, static_cast<int>(res.k / res.q.spec.group - 1));
    }
  }
  // A screenshot waits for the run under way (the shell waits while script keys are pending).
  scripted("quant.running");
  if (s.job.valid() || s.dirty) script_push("quant.running", "1");
  if (!s.input_error.empty()) error_text(s.input_error);
  if (s.job.valid()) {
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - s.job_start).count();
    const char spin[] = "|/-\\";
    ImGui::Text("%c quantizing and dequantizing ... %.1f s", spin[static_cast<int>(t * 8) % 4], t);
  }
  if (!s.result) return;
  const Result& r = *s.result;
  const QuantSpec& spec = r.q.spec;

  // ---- statistics ----
  ImGui::Separator();
  const std::string mode = spec.scheme == Scheme::Nf4 ? "blocksize " + std::to_string(spec.group)
                           : spec.group == r.k        ? std::string("per channel")
                                                      : "group " + std::to_string(spec.group);
  wrapped_text("%lldx%lld, %s, %s, %s layout, dequantized by %s", static_cast<long long>(r.n),
               static_cast<long long>(r.k), kSchemeNames[static_cast<int>(spec.scheme)], mode.c_str(),
               layout_name(spec.layout), recipes::spec_of(r.req.recipe).name);
  ImGui::PushFont(ui.mono);
  wrapped_text("max |error| %.4g   MSE %.4g   SNR %.2f dB   (%.2f s)", r.max_abs, r.mse, r.snr_db, r.seconds);
  ImGui::PopFont();

  // ---- the group whose levels are drawn ----
  const int64_t groups = r.k / spec.group;
  ImGui::SetNextItemWidth(10 * em);
  ImGui::SliderInt("row n", &s.group_row, 0, static_cast<int>(r.n - 1));
  const char* group_label = spec.scheme == Scheme::Nf4 ? "block" : "group";
  same_line_if_fits(labelled_width(10 * em, group_label));
  ImGui::SetNextItemWidth(10 * em);
  ImGui::SliderInt(group_label, &s.group_index, 0, static_cast<int>(groups - 1));
  const std::vector<double> levels = group_levels(r, s.group_row, s.group_index);

  // The histogram and the error map side by side, each half the width; where half is less than 20 em
  // (large text), one above the other at the full width (a table of one column: the map's cell starts
  // a row of its own).
  const float avail = ImGui::GetContentRegionAvail().x;
  const bool beside = avail * 0.5f - em >= 20 * em;
  const float plot_w = beside ? avail * 0.5f - em : std::max(20 * em, avail - em);
  const float room_h = ImGui::GetContentRegionAvail().y - 4 * em;
  const float plot_h = std::max(10 * em, beside ? room_h : room_h * 0.5f - 2 * em);
  if (ImGui::BeginTable("quant plots", beside ? 2 : 1, ImGuiTableFlags_SizingFixedFit)) {
    ImGui::TableSetupColumn("hist", ImGuiTableColumnFlags_WidthFixed, plot_w);
    if (beside) ImGui::TableSetupColumn("map", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    float hx = 0;
    int hb = -1;
    if (spec.scheme == Scheme::Nf4) {
      wrapped_text("w / absmax of its block, the 16 NF4 levels, and N(0, %.3f) (white)", r.norm_sigma);
      std::vector<double> codes;
      for (uint32_t c = 0; c < 16; ++c) codes.push_back(quant::f32_of(recipes::nf4_code_bits(c)));
      // The normal density with the histogram's area, at each bin centre.
      std::vector<float> dens(kBins);
      double total = 0;
      for (float c : r.norm_hist) total += c;
      const double bw = 2.0 / kBins, sg = std::max(r.norm_sigma, 1e-6);
      for (int i = 0; i < kBins; ++i) {
        const double x = -1.0 + (i + 0.5) * bw;
        dens[i] = static_cast<float>(total * bw * std::exp(-0.5 * x * x / (sg * sg)) /
                                     (sg * std::sqrt(2 * std::numbers::pi)));
      }
      hb = histogram("nf4 hist", r.norm_hist, -1, 1, codes, &dens, ImVec2(plot_w, plot_h), ui, &hx);
      if (hb >= 0) {
        ImGui::BeginTooltip();
        ImGui::Text("w / absmax in [%.4f, %.4f): %.0f weights", -1.0 + hb * 2.0 / kBins,
                    -1.0 + (hb + 1) * 2.0 / kBins, r.norm_hist[hb]);
        int best = 0;
        for (int c = 1; c < 16; ++c)
          if (std::fabs(codes[c] - hx) < std::fabs(codes[best] - hx)) best = c;
        ImGui::Text("nearest level: code %d = %.7f", best, codes[best]);
        ImGui::EndTooltip();
      }
      dim_text("block %d of row %d: absmax %.5g", s.group_index, s.group_row,
               static_cast<double>(r.q.absmax[static_cast<size_t>(s.group_row) * groups + s.group_index]));
    } else {
      wrapped_text("weights, and the %zu levels of %s %d of row %d (yellow)", levels.size(),
                   spec.group == r.k ? "channel" : "group", s.group_index, s.group_row);
      hb = histogram("w hist", r.hist, r.lo, r.hi, levels, nullptr, ImVec2(plot_w, plot_h), ui, &hx);
      if (hb >= 0) {
        ImGui::BeginTooltip();
        const double bw = (r.hi - r.lo) / kBins;
        ImGui::Text("w in [%.5g, %.5g): %.0f weights", r.lo + hb * bw, r.lo + (hb + 1) * bw, r.hist[hb]);
        int best = 0;
        for (size_t c = 1; c < levels.size(); ++c)
          if (std::fabs(levels[c] - hx) < std::fabs(levels[best] - hx)) best = static_cast<int>(c);
        ImGui::Text("nearest level of the group: %.6g (step %.4g)", levels[best],
                    levels.size() > 1 ? levels[1] - levels[0] : 0.0);
        ImGui::EndTooltip();
      }
      dim_text("level step (the group's scale) %.5g", levels.size() > 1 ? levels[1] - levels[0] : 0.0);
    }

    ImGui::TableNextColumn();
    wrapped_text("|error| per element (max over %lldx%lld elements a cell), 0 .. %.3g",
                 static_cast<long long>(r.pool_n), static_cast<long long>(r.pool_k), r.max_abs);
    const float map_w = ImGui::GetContentRegionAvail().x;
    const float aspect = static_cast<float>(r.map_rows) / static_cast<float>(r.map_cols);
    const float map_h = std::min(plot_h, std::max(4 * em, map_w * aspect));
    const auto hv = s.err_map.draw("err map", ImVec2(map_w, map_h));
    if (hv.hovered()) {
      const int64_t n0 = hv.row * r.pool_n, k0 = hv.col * r.pool_k;
      ImGui::BeginTooltip();
      if (r.pool_n * r.pool_k == 1) {
        const float w = r.w.as<float>()[n0 * r.k + k0];
        ImGui::Text("(n %lld, k %lld): w %.6g, |error| %.4g", static_cast<long long>(n0),
                    static_cast<long long>(k0), w, s.err_map.value(hv.col, hv.row));
      } else {
        ImGui::Text("rows %lld..%lld, columns %lld..%lld: max |error| %.4g", static_cast<long long>(n0),
                    static_cast<long long>(std::min(r.n, n0 + r.pool_n) - 1), static_cast<long long>(k0),
                    static_cast<long long>(std::min(r.k, k0 + r.pool_k) - 1),
                    s.err_map.value(hv.col, hv.row));
      }
      ImGui::Text("%s %lld of row %lld", spec.scheme == Scheme::Nf4 ? "block" : "group",
                  static_cast<long long>(k0 / spec.group), static_cast<long long>(n0));
      ImGui::EndTooltip();
      if (ImGui::IsMouseClicked(0)) {  // click: draw that group's levels
        s.group_row = static_cast<int>(n0);
        s.group_index = static_cast<int>(k0 / spec.group);
      }
    }
    dim_text("click a cell to draw its group's levels");
    ImGui::EndTable();
  }
}

}  // namespace dql::gui
