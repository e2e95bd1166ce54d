// Layouts: the index maps of the mixed-GEMM (FasterTransformer) weight layout drawn as heatmaps
// by the GLSL shaders in shaders/, each in both directions with its closed form beside it, and
// the composed tile map checked against what the active backend's permute kernel really does.
#include <fmt/format.h>
#include <imgui.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "app/common/parse.hpp"
#include "app/gui/model.hpp"
#include "app/gui/panels/heatmap.hpp"
#include "app/gui/widgets.hpp"
#include "kernels/layouts/maps.hpp"

namespace dql::gui {

namespace {

using layouts::FtGeometry;
using layouts::kTileRows;

enum Tab { kRegister, kRows, kColumns, kTile };
enum ColorBy { kByIndex = 0, kByN = 1, kByK = 2, kBySlot = 3 };

struct ProbeResult {
  layouts::MapCheck check;
  std::vector<int64_t> probe;
  int64_t n = 0, k = 0;
  std::string error;
};

struct State {
  int bits = 4;
  int color_by = kByK;
  bool qualitative = false;
  bool kernel_picture = false;  // draw the inverse tile map from the permute kernel's output
  int64_t tile_col = 0, tile_row = 0;
  int pinned = -1;    // the tile element (n * 64 + k) chosen by a click, shown when nothing is hovered
  int open_tab = -1;  // a tab to bring to the front (scripts)
  Heatmap order_fwd, order_inv, recipe_order;
  Heatmap rows_fwd, rows_inv;
  Heatmap cols_fwd, cols_inv;
  Heatmap tile_fwd, tile_inv;
  std::string built;  // what the heatmaps were last filled for
  std::map<std::pair<const Backend*, int>, ProbeResult> probes;
  std::string shape_error;  // the model's N x K does not fit the layout
  std::string shape_checked;
};

State& state() {
  static State s;
  return s;
}

ColorMap cmap(bool qualitative) { return qualitative ? ColorMap::Qualitative : ColorMap::Viridis; }

// White text with a dark shadow, centred in a cell, when the cell is wide enough to hold it.
void cell_text(const Heatmap& hm, int col, int row, const std::string& text, const Ui& ui) {
  const ImVec2 a = hm.cell_min(col, row), b = hm.cell_max(col, row);
  ImGui::PushFont(ui.mono);
  const ImVec2 ts = ImGui::CalcTextSize(text.c_str());
  ImGui::PopFont();
  if (ts.x > b.x - a.x - 2 || ts.y > b.y - a.y) return;
  const ImVec2 p((a.x + b.x - ts.x) * 0.5f, (a.y + b.y - ts.y) * 0.5f);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddText(ui.mono, ui.mono ? ui.mono->FontSize : ImGui::GetFontSize(), ImVec2(p.x + 1, p.y + 1),
              IM_COL32(0, 0, 0, 220), text.c_str());
  dl->AddText(ui.mono, ui.mono ? ui.mono->FontSize : ImGui::GetFontSize(), p, IM_COL32(255, 255, 255, 255),
              text.c_str());
}

std::vector<float> as_floats(const std::vector<int>& v) { return std::vector<float>(v.begin(), v.end()); }

// The heatmaps' values for the current element width and colouring.
void build(State& s, const Model& m, const std::vector<int64_t>* kernel_probe, int64_t probe_k) {
  const FtGeometry g{s.bits};
  const int e = g.per_word(), i = g.interleave(), v = g.words_per_tile(), rg = g.row_group();
  const ColorMap cm = cmap(s.qualitative);

  // Register order, MSB left: column c is slot E - 1 - c.
  const auto order = layouts::register_order(g);
  std::vector<float> fwd(e), inv(e);
  for (int c = 0; c < e; ++c) fwd[c] = static_cast<float>(order[e - 1 - c]);
  for (int d = 0; d < e; ++d) inv[order[d]] = static_cast<float>(d);
  s.order_fwd.set(e, 1, fwd, 0, static_cast<float>(e - 1), cm);
  s.order_inv.set(e, 1, inv, 0, static_cast<float>(e - 1), cm);
  const recipes::RecipeSpec& rs = recipes::spec_of(m.recipe);
  std::vector<float> ro(rs.elems);
  for (int c = 0; c < rs.elems; ++c) ro[c] = rs.order[rs.elems - 1 - c];
  s.recipe_order.set(rs.elems, 1, ro, 0, static_cast<float>(rs.elems - 1), cm);

  // Row permutation over one group of rows.
  const auto rows = layouts::row_permutation(g);
  std::vector<float> rinv(rg);
  for (int p = 0; p < rg; ++p) rinv[rows[p]] = static_cast<float>(p);
  s.rows_fwd.set(rg, 1, as_floats(rows), 0, static_cast<float>(rg - 1), cm);
  s.rows_inv.set(rg, 1, rinv, 0, static_cast<float>(rg - 1), cm);

  // Column interleave over one tile: I rows (columns n) x V words; inverse: the tile's words.
  const auto cols = layouts::column_interleave(g);
  std::vector<float> cinv(i * v);
  for (int n = 0; n < i; ++n) {
    for (int r = 0; r < v; ++r) cinv[cols[n * v + r]] = static_cast<float>(n);
  }
  s.cols_fwd.set(v, i, as_floats(cols), 0, static_cast<float>(i * v - 1), cm);
  s.cols_inv.set(i * v, 1, cinv, 0, static_cast<float>(i - 1), ColorMap::Qualitative);

  // The composed tile map. Forward: I rows (n) x 64 columns (k), coloured by where each lands.
  const auto tf = layouts::tile_forward(g);
  std::vector<float> tfv(tf.size());
  float fhi = 0;
  for (size_t x = 0; x < tf.size(); ++x) {
    const int n = static_cast<int>(x) / kTileRows, k = static_cast<int>(x) % kTileRows;
    switch (s.color_by) {
      case kByN: tfv[x] = static_cast<float>(n), fhi = static_cast<float>(i - 1); break;
      case kByK: tfv[x] = static_cast<float>(tf[x].word), fhi = 31; break;  // by word: k's neighbours
      case kBySlot: tfv[x] = static_cast<float>(tf[x].slot), fhi = static_cast<float>(e - 1); break;
      default: tfv[x] = static_cast<float>(tf[x].index(g)), fhi = static_cast<float>(tf.size() - 1); break;
    }
    (void)k;
  }
  s.tile_fwd.set(kTileRows, i, tfv, 0, fhi,
                 s.color_by == kByN || s.color_by == kBySlot ? ColorMap::Qualitative : cm);

  // Inverse: E rows (slots, slot 0 on top) x 32 words, coloured by the logical element held.
  std::vector<int> ti = layouts::tile_inverse(g);
  if (kernel_probe) {  // tile (0, 0) as the permute kernel wrote it
    for (int x = 0; x < layouts::tile_elements(g); ++x) {
      const int64_t logical = (*kernel_probe)[x];
      ti[x] = static_cast<int>((logical / probe_k) * kTileRows + logical % probe_k);
    }
  }
  std::vector<float> tiv(ti.size());
  float ihi = 0;
  for (int w = 0; w < 32; ++w) {
    for (int d = 0; d < e; ++d) {
      const int logical = ti[w * e + d], n = logical / kTileRows, k = logical % kTileRows;
      float val;
      switch (s.color_by) {
        case kByN: val = static_cast<float>(n), ihi = static_cast<float>(i - 1); break;
        case kByK: val = static_cast<float>(k), ihi = kTileRows - 1; break;
        case kBySlot: val = static_cast<float>(d), ihi = static_cast<float>(e - 1); break;
        default: val = static_cast<float>(logical), ihi = static_cast<float>(ti.size() - 1); break;
      }
      tiv[d * 32 + w] = val;
    }
  }
  s.tile_inv.set(32, e, tiv, 0, ihi,
                 s.color_by == kByN || s.color_by == kBySlot ? ColorMap::Qualitative : cm);
}

// The permute kernel's map on a small matrix (2 tile columns x 2 tiles of K), once per backend
// and element width: cheap on either backend.
const ProbeResult& probe(State& s, Backend& b, int bits) {
  auto key = std::make_pair(static_cast<const Backend*>(&b), bits);
  auto it = s.probes.find(key);
  if (it != s.probes.end()) return it->second;
  ProbeResult r;
  const FtGeometry g{bits};
  r.n = 2 * g.interleave();
  r.k = 2 * kTileRows;
  try {
    r.probe = layouts::probe_permute(
        bits, r.n, r.k, [&](const std::vector<uint32_t>& w) { return b.permute(bits, r.n, r.k, w, true); });
    r.check = layouts::check_probe(bits, r.n, r.k, r.probe);
  } catch (const std::exception& e) {
    r.error = std::string("the permute kernel could not be run: ") + e.what();
  }
  return s.probes.emplace(key, std::move(r)).first->second;
}

void formula(const Ui& ui, const char* text) {
  ImGui::PushFont(ui.mono);
  wrapped_text("%s", text);
  ImGui::PopFont();
}

}  // namespace

void draw_layouts(Model& m, const Ui& ui) {
  State& s = state();
  const float em = ui.em;
  const FtGeometry g{s.bits};
  const int e = g.per_word(), il = g.interleave(), v = g.words_per_tile(), rg = g.row_group();

  // Test and figure scripts: "layouts.bits=8", "layouts.tab=tile|register|rows|columns",
  // "layouts.element=N,K" (pins element (n, k) of the tile).
  if (auto v = scripted("layouts.bits")) {
    if (auto i = script_choice(m, "layouts.bits", *v, {"4", "8"})) s.bits = *i == 0 ? 4 : 8;
  }
  if (auto v = scripted("layouts.tab")) {
    // In the order of enum Tab.
    if (auto i = script_choice(m, "layouts.tab", *v, {"register", "rows", "columns", "tile"}))
      s.open_tab = static_cast<Tab>(*i);
  }
  if (auto v = scripted("layouts.element")) {
    const size_t comma = v->find(',');
    const int il_now = FtGeometry{s.bits}.interleave();
    if (comma == std::string::npos) {
      m.set_error(
          fmt::format("layouts.element '{}' is not N,K: give a row from 0 to {} and a column from 0 to {}, "
                      "e.g. 1,5; the setting is kept",
                      *v, il_now - 1, kTileRows - 1));
    } else if (auto n = script_value(
                   m, front::parse_int(v->substr(0, comma), "layouts.element's row N", 0, il_now - 1))) {
      if (auto k = script_value(
              m, front::parse_int(v->substr(comma + 1), "layouts.element's column K", 0, kTileRows - 1)))
        s.pinned = static_cast<int>(*n) * kTileRows + static_cast<int>(*k);
    }
  }

  // ---- controls ----
  wrapped_text("The mixed-GEMM (FasterTransformer) weight layout, as index maps");
  same_line_if_fits(check_width("int4"), 2 * em);
  if (ImGui::RadioButton("int4", &s.bits, 4)) s.pinned = -1;
  same_line_if_fits(check_width("int8"));
  if (ImGui::RadioButton("int8", &s.bits, 8)) s.pinned = -1;
  same_line_if_fits(labelled_width(9 * em, "colour by"), 2 * em);
  ImGui::SetNextItemWidth(9 * em);
  const char* by_names[] = {"tile index", "column n", "word / row k", "slot"};
  ImGui::Combo("colour by", &s.color_by, by_names, 4);
  same_line_if_fits(check_width("qualitative colours"), 2 * em);
  ImGui::Checkbox("qualitative colours", &s.qualitative);

  // ---- the permute kernel's verdict ----
  const ProbeResult* pr = nullptr;
  if (m.active) pr = &probe(s, *m.active, s.bits);
  if (pr) {
    const std::string who = m.active->info().backend == "cuda" ? m.active->info().name : "CPU twin";
    if (!pr->error.empty()) {
      error_text(pr->error);
    } else {
      ImGui::PushStyleColor(ImGuiCol_Text, pr->check.match ? palette::kGood : palette::kBad);
      wrapped_text("Picture %s [%s]", pr->check.sentence().c_str(), who.c_str());
      ImGui::PopStyleColor();
      dim_text(
          "checked on a %lldx%lld matrix (%lld tiles) whose elements spell their own index, one %d-bit "
          "digit per run",
          static_cast<long long>(pr->n), static_cast<long long>(pr->k),
          static_cast<long long>(pr->n * pr->k / layouts::tile_elements(g)), s.bits);
    }
  }

  // The model's matrix: where the hovered tile sits in it.
  const int64_t N = m.rows, K = m.cols;
  const std::string shape_key = std::to_string(N) + "x" + std::to_string(K) + "/" + std::to_string(s.bits);
  if (shape_key != s.shape_checked) {
    s.shape_checked = shape_key;
    s.shape_error.clear();
    try {
      check_permute_shape(s.bits, N, K);
    } catch (const std::exception& ex) {
      s.shape_error = std::string("The matrix ") + std::to_string(N) + "x" + std::to_string(K) +
                      " (from the quantize view) does not fit this layout: " + ex.what();
      m.set_error(s.shape_error);
    }
  }
  const bool shape_ok = s.shape_error.empty();
  const int64_t tiles_n = shape_ok ? N / il : 1, tiles_k = shape_ok ? K / kTileRows : 1;
  if (s.tile_col >= tiles_n) s.tile_col = tiles_n - 1;
  if (s.tile_row >= tiles_k) s.tile_row = tiles_k - 1;

  const bool use_kernel = s.kernel_picture && pr && pr->error.empty();
  const std::string key = std::to_string(s.bits) + "/" + std::to_string(s.color_by) + "/" +
                          std::to_string(s.qualitative) + "/" + std::to_string(use_kernel) + "/" +
                          std::to_string(static_cast<int>(m.recipe));
  if (key != s.built) {
    build(s, m, use_kernel ? &pr->probe : nullptr, pr ? pr->k : kTileRows);
    s.built = key;
  }
  if (!Heatmap::gl_error().empty()) error_text(Heatmap::gl_error());

  // The pictures on the left and their closed forms (26 em) on the right; where the pictures would get
  // less than 20 em that way (large text), the closed form goes under its picture.
  const float text_w = 26 * em, avail = ImGui::GetContentRegionAvail().x;
  const bool beside = avail - text_w - 2 * em >= 20 * em;
  const float pic_w = beside ? avail - text_w - 2 * em : std::max(20 * em, avail - em);
  if (!ImGui::BeginTabBar("layout maps")) return;
  const auto tab_flags = [&](int t) { return s.open_tab == t ? ImGuiTabItemFlags_SetSelected : 0; };

  // One row of two cells, or one column whose second cell (TableNextColumn) starts a row of its own.
  const auto two_columns = [&](const char* id) {
    if (!ImGui::BeginTable(id, beside ? 2 : 1, ImGuiTableFlags_SizingFixedFit)) return false;
    ImGui::TableSetupColumn("picture", ImGuiTableColumnFlags_WidthFixed, pic_w);
    if (beside) ImGui::TableSetupColumn("formula", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    return true;
  };

  // ---- the composed tile map ----
  if (ImGui::BeginTabItem("Tile map", nullptr, tab_flags(kTile))) {
    if (!shape_ok) error_text(s.shape_error);
    if (two_columns("tile")) {
      ImGui::Checkbox("physical side from the permute kernel", &s.kernel_picture);
      if (ImGui::IsItemHovered())
        ImGui::SetTooltip("Draw the physical side from the permute kernel's output instead of the formula");
      if (shape_ok) {
        ImGui::SetNextItemWidth(10 * em);
        int tc = static_cast<int>(s.tile_col), tr = static_cast<int>(s.tile_row);
        ImGui::SliderInt("tile column (n / I)", &tc, 0, static_cast<int>(tiles_n - 1));
        same_line_if_fits(labelled_width(10 * em, "tile row (k / 64)"));
        ImGui::SetNextItemWidth(10 * em);
        ImGui::SliderInt("tile row (k / 64)", &tr, 0, static_cast<int>(tiles_k - 1));
        s.tile_col = tc, s.tile_row = tr;
      }
      const float cw = pic_w / 64.0f;
      wrapped_text("logical -> physical: %d columns n (rows here) x 64 rows k; colour = %s", il,
                   s.color_by == kByN      ? "column n"
                   : s.color_by == kByK    ? "word"
                   : s.color_by == kBySlot ? "slot"
                                           : "element slot in the tile");
      const auto hf = s.tile_fwd.draw("tfwd", ImVec2(cw * 64, std::max(1.6f * em, cw * 1.5f) * il));
      wrapped_text("physical -> logical: %d slots (rows, slot 0 on top) x 32 words; colour = %s", e,
                   s.color_by == kByN      ? "column n"
                   : s.color_by == kByK    ? "row k"
                   : s.color_by == kBySlot ? "slot"
                                           : "logical index");
      const float pw = pic_w / 32.0f;
      const auto hi =
          s.tile_inv.draw("tinv", ImVec2(pw * 32, std::max(1.6f * em, std::min(pw, 1.6f * em)) * e));
      const auto tf = layouts::tile_forward(g);
      const auto ti = layouts::tile_inverse(g);
      int logical = -1;
      if (hf.hovered()) logical = hf.row * kTileRows + hf.col;
      if (hi.hovered()) logical = ti[hi.col * e + hi.row];
      if (logical >= 0 && ImGui::IsMouseClicked(0)) s.pinned = logical;  // a click keeps it
      if (logical < 0) logical = s.pinned;
      if (s.qualitative || s.color_by == kByN || s.color_by == kBySlot) {
        for (int w = 0; w < 32; ++w)
          for (int d = 0; d < e; ++d) {
            const int l = ti[w * e + d];
            cell_text(s.tile_inv, w, d, std::to_string(l % kTileRows), ui);
          }
      }
      if (logical >= 0) {
        const layouts::TilePlace p = tf[logical];
        s.tile_fwd.outline(logical % kTileRows, logical / kTileRows, palette::kHighlight, 3);
        s.tile_inv.outline(p.word, p.slot, palette::kHighlight, 3);
      }

      ImGui::TableNextColumn();
      ImGui::TextUnformatted("Closed form: element (n, k) of [N, K]");
      formula(ui, s.bits == 4 ? "E = 8 per word, I = 4, V = 8, groups of 32 rows\n"
                                "k'   = 32*(k/32) + place(k mod 32)\n"
                                "r    = k' / E,  j = k' mod E\n"
                                "word = (n/I)*(K*I/E) + I*(r - r mod V)\n"
                                "       + V*(n mod I) + r mod V\n"
                                "slot = j/2 (j even), 4 + j/2 (j odd)\n"
                                "byte = 4*word + slot/2, nibble = slot mod 2\n"
                                "stored = q + 8"
                              : "E = 4 per word, I = 2, V = 16, groups of 16 rows\n"
                                "k'   = 16*(k/16) + place(k mod 16)\n"
                                "r    = k' / E,  j = k' mod E\n"
                                "word = (n/I)*(K*I/E) + I*(r - r mod V)\n"
                                "       + V*(n mod I) + r mod V\n"
                                "slot = j/2 (j even), 2 + j/2 (j odd)\n"
                                "byte = 4*word + slot\n"
                                "stored = q + 128");
      dim_text("physical array: N/I rows of K*I/E words");
      if (logical >= 0) {
        const layouts::TilePlace p = tf[logical];
        const int n = logical / kTileRows, k = logical % kTileRows;
        const int64_t gn = s.tile_col * il + n, gk = s.tile_row * kTileRows + k;
        const int64_t word_in_row = s.tile_row * layouts::tile_words(g) + p.word;
        ImGui::Separator();
        ImGui::Text("In the tile: element (n %d, k %d)", n, k);
        ImGui::Text("  -> word %d, slot %d, byte %d%s", p.word, p.slot, p.byte(g),
                    s.bits == 4 ? (p.nibble(g) ? ", high nibble" : ", low nibble") : "");
        if (shape_ok) {
          ImGui::Text("In the %lldx%lld matrix: (n %lld, k %lld)", static_cast<long long>(N),
                      static_cast<long long>(K), static_cast<long long>(gn), static_cast<long long>(gk));
          ImGui::Text("  -> physical row %lld, word %lld, %s %d", static_cast<long long>(s.tile_col),
                      static_cast<long long>(word_in_row), s.bits == 4 ? "nibble" : "byte", p.slot);
          const layouts::FtPlace check = layouts::ft_place(g, gn, gk, K);
          dim_text("flat word %lld (ft_place: %lld, slot %d)",
                   static_cast<long long>(layouts::tile_origin(g, s.tile_col, s.tile_row, K) + p.word),
                   static_cast<long long>(check.word), check.slot);
        }
      } else {
        dim_text("hover either picture (click to keep it): the same element is outlined in both");
      }
      ImGui::EndTable();
    }
    ImGui::EndTabItem();
  }
  // ---- register element order ----
  if (ImGui::BeginTabItem("Register order", nullptr, tab_flags(kRegister))) {
    if (two_columns("reg")) {
      const float cw = std::min(4.0f * em, pic_w / static_cast<float>(e));
      ImGui::TextUnformatted("slot -> element (slot 7 .. 0, MSB left)");
      const auto h1 = s.order_fwd.draw("ofwd", ImVec2(cw * e, 2.2f * em));
      for (int c = 0; c < e; ++c)
        cell_text(s.order_fwd, c, 0, fmt::format("e{}", static_cast<int>(s.order_fwd.value(c, 0))), ui);
      ImGui::TextUnformatted("element -> slot (e0 .. e7)");
      const auto h2 = s.order_inv.draw("oinv", ImVec2(cw * e, 2.2f * em));
      for (int c = 0; c < e; ++c)
        cell_text(s.order_inv, c, 0, std::to_string(static_cast<int>(s.order_inv.value(c, 0))), ui);
      // Link the two: the same element outlined in both.
      int elem = -1;
      if (h1.hovered()) elem = static_cast<int>(s.order_fwd.value(h1.col, 0));
      if (h2.hovered()) elem = h2.col;
      if (elem >= 0) {
        const int slot = static_cast<int>(s.order_inv.value(elem, 0));
        s.order_fwd.outline(e - 1 - slot, 0, palette::kHighlight);
        s.order_inv.outline(elem, 0, palette::kHighlight);
      }
      ImGui::Spacing();
      const recipes::RecipeSpec& rs = recipes::spec_of(m.recipe);
      wrapped_text("The stepper's recipe, %s: slot -> element", rs.name);
      s.recipe_order.draw("rorder", ImVec2(std::min(4.0f * em, pic_w / rs.elems) * rs.elems, 2.2f * em));
      for (int c = 0; c < rs.elems; ++c)
        cell_text(s.recipe_order, c, 0, fmt::format("e{}", rs.order[rs.elems - 1 - c]), ui);

      ImGui::TableNextColumn();
      ImGui::TextUnformatted("Closed form");
      formula(ui, s.bits == 4 ? "slot d holds e(2d) for d < 4, e(2(d-4)+1) for d >= 4\n"
                                "  nibbles 0..7: e0 e2 e4 e6 e1 e3 e5 e7\n"
                                "element j sits in slot j/2 (j even), 4 + j/2 (j odd)"
                              : "slot d holds e(2d) for d < 2, e(2(d-2)+1) for d >= 2\n"
                                "  bytes 0..3: e0 e2 e1 e3\n"
                                "element j sits in slot j/2 (j even), 2 + j/2 (j odd)");
      wrapped_text(
          "Why: one shift by 8 (int4) or a byte permute (int8) then brings an even and an odd element into "
          "the two 16-bit halves the magic-number conversion fills, so they come out in order.");
      if (elem >= 0) {
        ImGui::Separator();
        ImGui::Text("element e%d  <->  slot %d (bits %d..%d)", elem,
                    static_cast<int>(s.order_inv.value(elem, 0)),
                    s.bits * static_cast<int>(s.order_inv.value(elem, 0)) + s.bits - 1,
                    s.bits * static_cast<int>(s.order_inv.value(elem, 0)));
      }
      ImGui::EndTable();
    }
    ImGui::EndTabItem();
  }

  // ---- row permutation ----
  if (ImGui::BeginTabItem("Row permutation", nullptr, tab_flags(kRows))) {
    if (two_columns("rows")) {
      const float cw = std::min(3.0f * em, pic_w / static_cast<float>(rg));
      wrapped_text("permuted position p -> source row (a group of %d rows of K)", rg);
      const auto h1 = s.rows_fwd.draw("rfwd", ImVec2(cw * rg, 2.2f * em));
      for (int c = 0; c < rg; ++c)
        cell_text(s.rows_fwd, c, 0, std::to_string(static_cast<int>(s.rows_fwd.value(c, 0))), ui);
      ImGui::TextUnformatted("source row r -> permuted position");
      const auto h2 = s.rows_inv.draw("rinv", ImVec2(cw * rg, 2.2f * em));
      for (int c = 0; c < rg; ++c)
        cell_text(s.rows_inv, c, 0, std::to_string(static_cast<int>(s.rows_inv.value(c, 0))), ui);
      int row = -1;
      if (h1.hovered()) row = static_cast<int>(s.rows_fwd.value(h1.col, 0));
      if (h2.hovered()) row = h2.col;
      int pos = -1;
      if (row >= 0) {
        pos = static_cast<int>(s.rows_inv.value(row, 0));
        s.rows_fwd.outline(pos, 0, palette::kHighlight);
        s.rows_inv.outline(row, 0, palette::kHighlight);
      }
      ImGui::TableNextColumn();
      ImGui::TextUnformatted("Closed form (E elements per word)");
      formula(ui, s.bits == 4 ? "src(p) = 8*((p mod 8)/2) + p mod 2 + 2*(p/8)\nE = 8, groups of 32 rows"
                              : "src(p) = 8*((p mod 4)/2) + p mod 2 + 2*(p/4)\nE = 4, groups of 16 rows");
      wrapped_text(
          "Rows are taken in pairs (p mod 2), so each word holds rows 8 apart in both halves: after the "
          "register interleave a thread's fragment sees consecutive k.");
      if (row >= 0) {
        ImGui::Separator();
        ImGui::Text("position %d  <-  source row %d", pos, row);
      }
      ImGui::EndTable();
    }
    ImGui::EndTabItem();
  }

  // ---- column interleave ----
  if (ImGui::BeginTabItem("Column interleave", nullptr, tab_flags(kColumns))) {
    if (two_columns("cols")) {
      const float cw = std::min(3.0f * em, pic_w / static_cast<float>(il * v));
      wrapped_text("word r of column n (%d columns x %d words = 64 rows of K) -> word of the tile", il, v);
      const auto h1 = s.cols_fwd.draw("cfwd", ImVec2(cw * v, 2.0f * em * il));
      for (int n = 0; n < il; ++n)
        for (int r = 0; r < v; ++r)
          cell_text(s.cols_fwd, r, n, std::to_string(static_cast<int>(s.cols_fwd.value(r, n))), ui);
      ImGui::TextUnformatted("word of the tile -> word r (the number) of column n (the colour)");
      const auto h2 = s.cols_inv.draw("cinv", ImVec2(cw * il * v, 2.2f * em));
      const auto cols = layouts::column_interleave(g);
      std::vector<int> src(il * v);
      for (int x = 0; x < il * v; ++x) src[cols[x]] = x;
      for (int w = 0; w < il * v; ++w) cell_text(s.cols_inv, w, 0, std::to_string(src[w] % v), ui);
      int from = -1;
      if (h1.hovered()) from = h1.row * v + h1.col;
      if (h2.hovered()) from = src[h2.col];
      if (from >= 0) {
        s.cols_fwd.outline(from % v, from / v, palette::kHighlight);
        s.cols_inv.outline(cols[from], 0, palette::kHighlight);
      }
      ImGui::TableNextColumn();
      ImGui::TextUnformatted("Closed form");
      formula(
          ui,
          s.bits == 4
              ? "I = 4 columns, V = 8 words (64 rows)\nword(n, r) = I*(r - r mod V) + V*(n mod I) + r mod V\n"
                "tile column = n / I"
              : "I = 2 columns, V = 16 words (64 rows)\nword(n, r) = I*(r - r mod V) + V*(n mod I) + r mod "
                "V\n"
                "tile column = n / I");
      wrapped_text(
          "Each 64-row slice of I neighbouring columns becomes one contiguous 128-byte tile, so a warp reads "
          "whole tiles with wide loads.");
      if (from >= 0) {
        ImGui::Separator();
        ImGui::Text("column n %d, word r %d  ->  tile word %d", from / v, from % v, cols[from]);
      }
      ImGui::EndTable();
    }
    ImGui::EndTabItem();
  }

  ImGui::EndTabBar();
  s.open_tab = -1;
}

}  // namespace dql::gui
