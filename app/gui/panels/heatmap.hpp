// A grid of values drawn as a heatmap by the GLSL shaders in shaders/ (heatmap.vert / .frag): the
// values go to a data texture (R32F), the shader colours each cell and renders the picture into a
// texture of its own (one texel per cell), shown with ImGui::Image. The picture is re-rendered only when the
// data or the colour map change. GL state is saved and restored around the render.
#pragma once

#include <imgui.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dql::gui {

// The embedded text of shaders/<name> (generated at build time), or null.
const char* shader_source(std::string_view name);

enum class ColorMap : int { Viridis = 0, Qualitative = 1, Magnitude = 2 };

class Heatmap {
 public:
  Heatmap() = default;
  Heatmap(const Heatmap&) = delete;
  Heatmap& operator=(const Heatmap&) = delete;
  ~Heatmap();

  // cols x rows values, row-major, row 0 drawn at the top. NaN cells are drawn grey.
  void set(int cols, int rows, std::vector<float> values, float lo, float hi, ColorMap map, bool grid = true);
  int cols() const { return cols_; }
  int rows() const { return rows_; }
  float value(int col, int row) const { return values_[static_cast<size_t>(row) * cols_ + col]; }

  struct Hover {
    int col = -1, row = -1;  // -1 when the mouse is elsewhere
    bool hovered() const { return col >= 0; }
  };
  // Draws the picture at the cursor, `size` pixels. Returns the cell under the mouse.
  Hover draw(const char* id, ImVec2 size);
  // The screen rectangle of a cell in the picture drawn last.
  ImVec2 cell_min(int col, int row) const;
  ImVec2 cell_max(int col, int row) const;
  // Outlines a cell of the picture drawn last.
  void outline(int col, int row, ImU32 colour, float thickness = 2.0f) const;

  // Why the shader could not be used (compile or link log), empty when it can.
  static const std::string& gl_error();

 private:
  void render(int w, int h);

  int cols_ = 0, rows_ = 0;
  std::vector<float> values_;
  float lo_ = 0, hi_ = 1;
  ColorMap map_ = ColorMap::Viridis;
  bool grid_ = true;
  bool dirty_ = true;
  unsigned data_tex_ = 0, image_tex_ = 0, fbo_ = 0;
  int image_w_ = 0, image_h_ = 0;
  ImVec2 origin_{0, 0}, size_{0, 0};
};

}  // namespace dql::gui
