#include "heatmap.hpp"

#include <glad/gl.h>

#include <algorithm>
#include <cmath>

namespace dql::gui {

namespace {

struct Program {
  GLuint id = 0, vao = 0;
  bool tried = false;
  std::string error;
  GLint u_data = -1, u_cells = -1, u_range = -1, u_map = -1, u_pixels = -1, u_grid = -1;
};

Program& program() {
  static Program p;
  return p;
}

GLuint compile(GLenum kind, const char* name, std::string* error) {
  const char* text = shader_source(name);
  if (!text) {
    *error = std::string("the shader ") + name + " is not built into the program";
    return 0;
  }
  const GLuint s = glCreateShader(kind);
  glShaderSource(s, 1, &text, nullptr);
  glCompileShader(s);
  GLint ok = 0;
  glGetShaderiv(s, GL_COMPILE_STATUS, &ok);
  if (!ok) {
    char log[1024] = {};
    glGetShaderInfoLog(s, sizeof log, nullptr, log);
    *error = std::string(name) + " does not compile: " + log;
    glDeleteShader(s);
    return 0;
  }
  return s;
}

const Program& ready_program() {
  Program& p = program();
  if (p.tried) return p;
  p.tried = true;
  const GLuint vs = compile(GL_VERTEX_SHADER, "heatmap.vert", &p.error);
  const GLuint fs = vs ? compile(GL_FRAGMENT_SHADER, "heatmap.frag", &p.error) : 0;
  if (!vs || !fs) return p;
  const GLuint id = glCreateProgram();
  glAttachShader(id, vs);
  glAttachShader(id, fs);
  glLinkProgram(id);
  glDeleteShader(vs);
  glDeleteShader(fs);
  GLint ok = 0;
  glGetProgramiv(id, GL_LINK_STATUS, &ok);
  if (!ok) {
    char log[1024] = {};
    glGetProgramInfoLog(id, sizeof log, nullptr, log);
    p.error = std::string("the heatmap shaders do not link: ") + log;
    glDeleteProgram(id);
    return p;
  }
  p.id = id;
  p.u_data = glGetUniformLocation(id, "u_data");
  p.u_cells = glGetUniformLocation(id, "u_cells");
  p.u_range = glGetUniformLocation(id, "u_range");
  p.u_map = glGetUniformLocation(id, "u_map");
  p.u_pixels = glGetUniformLocation(id, "u_pixels");
  p.u_grid = glGetUniformLocation(id, "u_grid");
  glGenVertexArrays(1, &p.vao);
  return p;
}

// Everything render() changes, put back as ImGui's renderer and the rest of the frame expect.
struct SavedState {
  GLint fbo, program, vao, active_texture, texture, unpack_alignment, viewport[4];
  GLboolean blend, scissor, depth, cull;
  SavedState() {
    glGetIntegerv(GL_DRAW_FRAMEBUFFER_BINDING, &fbo);
    glGetIntegerv(GL_CURRENT_PROGRAM, &program);
    glGetIntegerv(GL_VERTEX_ARRAY_BINDING, &vao);
    glGetIntegerv(GL_ACTIVE_TEXTURE, &active_texture);
    glActiveTexture(GL_TEXTURE0);
    glGetIntegerv(GL_TEXTURE_BINDING_2D, &texture);
    glGetIntegerv(GL_UNPACK_ALIGNMENT, &unpack_alignment);
    glGetIntegerv(GL_VIEWPORT, viewport);
    blend = glIsEnabled(GL_BLEND);
    scissor = glIsEnabled(GL_SCISSOR_TEST);
    depth = glIsEnabled(GL_DEPTH_TEST);
    cull = glIsEnabled(GL_CULL_FACE);
  }
  ~SavedState() {
    glBindFramebuffer(GL_FRAMEBUFFER, static_cast<GLuint>(fbo));
    glUseProgram(static_cast<GLuint>(program));
    glBindVertexArray(static_cast<GLuint>(vao));
    glActiveTexture(GL_TEXTURE0);
    glBindTexture(GL_TEXTURE_2D, static_cast<GLuint>(texture));
    glActiveTexture(static_cast<GLenum>(active_texture));
    glPixelStorei(GL_UNPACK_ALIGNMENT, unpack_alignment);
    glViewport(viewport[0], viewport[1], viewport[2], viewport[3]);
    const auto set = [](GLenum cap, GLboolean on) { on ? glEnable(cap) : glDisable(cap); };
    set(GL_BLEND, blend);
    set(GL_SCISSOR_TEST, scissor);
    set(GL_DEPTH_TEST, depth);
    set(GL_CULL_FACE, cull);
  }
};

}  // namespace

const std::string& Heatmap::gl_error() { return program().error; }

Heatmap::~Heatmap() {
  // The GL context may already be gone when statics are destroyed at exit; the driver frees
  // the objects with it, so only delete while one is current.
  if (glad_glDeleteTextures == nullptr) return;
  if (data_tex_) glDeleteTextures(1, &data_tex_);
  if (image_tex_) glDeleteTextures(1, &image_tex_);
  if (fbo_) glDeleteFramebuffers(1, &fbo_);
}

void Heatmap::set(int cols, int rows, std::vector<float> values, float lo, float hi, ColorMap map,
                  bool grid) {
  cols_ = std::max(cols, 0);
  rows_ = std::max(rows, 0);
  values_ = std::move(values);
  values_.resize(static_cast<size_t>(cols_) * rows_, NAN);
  lo_ = lo, hi_ = hi, map_ = map, grid_ = grid;
  dirty_ = true;
}

void Heatmap::render(int w, int h) {
  const Program& p = ready_program();
  if (!p.id) return;
  SavedState saved;
  glActiveTexture(GL_TEXTURE0);
  if (!data_tex_) glGenTextures(1, &data_tex_);
  glBindTexture(GL_TEXTURE_2D, data_tex_);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
  glTexImage2D(GL_TEXTURE_2D, 0, GL_R32F, cols_, rows_, 0, GL_RED, GL_FLOAT, values_.data());

  if (!image_tex_ || w != image_w_ || h != image_h_) {
    if (!image_tex_) glGenTextures(1, &image_tex_);
    glBindTexture(GL_TEXTURE_2D, image_tex_);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, w, h, 0, GL_RGBA, GL_UNSIGNED_BYTE, nullptr);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
    if (!fbo_) glGenFramebuffers(1, &fbo_);
    glBindFramebuffer(GL_FRAMEBUFFER, fbo_);
    glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, image_tex_, 0);
    image_w_ = w, image_h_ = h;
  }
  glBindFramebuffer(GL_FRAMEBUFFER, fbo_);
  glViewport(0, 0, w, h);
  glDisable(GL_BLEND);
  glDisable(GL_SCISSOR_TEST);
  glDisable(GL_DEPTH_TEST);
  glDisable(GL_CULL_FACE);
  glUseProgram(p.id);
  glBindVertexArray(p.vao);
  glBindTexture(GL_TEXTURE_2D, data_tex_);
  glUniform1i(p.u_data, 0);
  glUniform2i(p.u_cells, cols_, rows_);
  glUniform2f(p.u_range, lo_, hi_);
  glUniform1i(p.u_map, static_cast<int>(map_));
  glUniform2f(p.u_pixels, static_cast<float>(w), static_cast<float>(h));
  glUniform1f(p.u_grid, grid_ ? 1.0f : 0.0f);
  glDrawArrays(GL_TRIANGLES, 0, 3);
  dirty_ = false;
}

Heatmap::Hover Heatmap::draw(const char* id, ImVec2 size) {
  Hover hv;
  const int w = std::max(1, static_cast<int>(std::lround(size.x)));
  const int h = std::max(1, static_cast<int>(std::lround(size.y)));
  size = ImVec2(static_cast<float>(w), static_cast<float>(h));
  origin_ = ImGui::GetCursorScreenPos();
  size_ = size;
  if (cols_ <= 0 || rows_ <= 0) {
    ImGui::Dummy(size);
    return hv;
  }
  if (dirty_) render(cols_, rows_);
  ImGui::PushID(id);
  if (image_tex_) {
    // One texel per cell, magnified without filtering: the picture stays small in memory, which
    // keeps drawing it cheap on software GL; the grid is drawn as lines on top.
    ImGui::Image(reinterpret_cast<ImTextureID>(static_cast<intptr_t>(image_tex_)), size);
    const float cw = size.x / static_cast<float>(cols_), ch = size.y / static_cast<float>(rows_);
    if (grid_ && cw >= 6 && ch >= 6) {
      ImDrawList* dl = ImGui::GetWindowDrawList();
      const ImU32 line = IM_COL32(0, 0, 0, 110);
      for (int c = 1; c < cols_; ++c) {
        const float x = std::floor(origin_.x + c * cw) + 0.5f;
        dl->AddLine(ImVec2(x, origin_.y), ImVec2(x, origin_.y + size.y), line);
      }
      for (int r = 1; r < rows_; ++r) {
        const float y = std::floor(origin_.y + r * ch) + 0.5f;
        dl->AddLine(ImVec2(origin_.x, y), ImVec2(origin_.x + size.x, y), line);
      }
    }
  } else {
    ImGui::Dummy(size);
    ImGui::GetWindowDrawList()->AddRectFilled(origin_, ImVec2(origin_.x + size.x, origin_.y + size.y),
                                              IM_COL32(60, 20, 20, 255));
  }
  ImGui::PopID();
  if (ImGui::IsItemHovered()) {
    const ImVec2 mp = ImGui::GetIO().MousePos;
    const int c = static_cast<int>((mp.x - origin_.x) / size.x * cols_);
    const int r = static_cast<int>((mp.y - origin_.y) / size.y * rows_);
    if (c >= 0 && c < cols_ && r >= 0 && r < rows_) hv.col = c, hv.row = r;
  }
  return hv;
}

ImVec2 Heatmap::cell_min(int col, int row) const {
  return ImVec2(origin_.x + size_.x * static_cast<float>(col) / static_cast<float>(std::max(cols_, 1)),
                origin_.y + size_.y * static_cast<float>(row) / static_cast<float>(std::max(rows_, 1)));
}
ImVec2 Heatmap::cell_max(int col, int row) const { return cell_min(col + 1, row + 1); }

void Heatmap::outline(int col, int row, ImU32 colour, float thickness) const {
  if (col < 0 || row < 0 || col >= cols_ || row >= rows_) return;
  ImGui::GetWindowDrawList()->AddRect(cell_min(col, row), cell_max(col, row), colour, 0.0f, 0, thickness);
}

}  // namespace dql::gui
