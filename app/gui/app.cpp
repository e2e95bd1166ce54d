// The window shell: GLFW + OpenGL 3.3 core + Dear ImGui, the main menu, the list of views, the
// active view, the status bar, keyboard shortcuts, settings, PNG / SVG export and the headless
// modes (--screenshot, --frame-report).
#include "app.hpp"

// clang-format off
#include <glad/gl.h>
#include <GLFW/glfw3.h>
// clang-format on
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <fmt/format.h>
#include <imgui.h>
#include <stb_image_write.h>
#include <sys/resource.h>

#include <algorithm>
#include <cfloat>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include "model.hpp"
#include "settings.hpp"
#include "widgets.hpp"

namespace dql::gui {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// SIGTERM / SIGINT close the window the ordinary way (settings are saved).
volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

using DrawFn = void (*)(Model&, const Ui&);
constexpr DrawFn kDraw[] = {draw_stepper, draw_float, draw_lop3,   draw_prmt,
                            draw_layouts, draw_quant, draw_timing, draw_sass};
constexpr const char* kTitles[] = {"Stepper", "Float",    "LOP3",   "PRMT",
                                   "Layouts", "Quantize", "Timing", "SASS"};

struct Shell {
  GLFWwindow* window = nullptr;
  Model m;
  Ui ui;
  std::unique_ptr<Backend> parked;  // the backend not in use, when the user switched
  std::string notice;               // the last thing done (saved a file, copied a token)
  ImVec2 view_pos, view_size;       // the active view's rectangle, for PNG / SVG export
  bool want_png_window = false, want_png_view = false, want_svg = false;
  std::string svg_path, png_path;  // names chosen by the test script for the next exports
  bool fullscreen = false;
  int windowed[4] = {0, 0, 0, 0};
  double play_clock = 0;
  int export_count = 0;
  std::string settings_dir;  // empty: write no settings (tests, headless)
  bool quit = false;
  float content_scale = 1.0f;  // the monitor's (HiDPI)
  float font_scale = 1.0f;     // the user's (View menu, Ctrl+= / Ctrl+-), saved in the settings
  bool rebuild_fonts = false;
};

std::string no_display_line() {
  return "dequant-lab: no display to open the desktop app on (DISPLAY and WAYLAND_DISPLAY are unset); "
         "run `xvfb-run dequant-lab --screenshot out.png --view stepper` for a picture, or use the terminal "
         "commands (`dequant-lab --help`, e.g. `dequant-lab explain --recipe awq-int4-fp16 --input "
         "0x76543210`)";
}

bool write_png(const std::string& path, int x, int y, int w, int h, std::string* why) {
  std::vector<unsigned char> px(static_cast<size_t>(w) * static_cast<size_t>(h) * 4u);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(x, y, w, h, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
  for (size_t i = 3; i < px.size(); i += 4) px[i] = 255;
  stbi_flip_vertically_on_write(1);
  if (!stbi_write_png(path.c_str(), w, h, 4, px.data(), w * 4)) {
    *why = fmt::format("could not write the PNG file {}", path);
    return false;
  }
  return true;
}

std::string next_export_name(Shell& s, const char* what, const char* ext) {
  return fmt::format("dequant-lab-{}-{}.{}", what, ++s.export_count, ext);
}

void load_fonts(Shell& s, float scale) {
  ImGuiIO& io = ImGui::GetIO();
  const float px = std::round(16.0f * scale);
  auto exists = [](const char* p) {
    std::error_code ec;
    return fs::exists(p, ec);
  };
  const char* ui_candidates[] = {"/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"};
  const char* mono_candidates[] = {"/usr/share/fonts/truetype/jetbrains-mono/JetBrainsMono-Regular.ttf",
                                   "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"};
  for (const char* p : ui_candidates) {
    if (!s.ui.ui && exists(p)) s.ui.ui = io.Fonts->AddFontFromFileTTF(p, px);
  }
  for (const char* p : mono_candidates) {
    if (!s.ui.mono && exists(p)) s.ui.mono = io.Fonts->AddFontFromFileTTF(p, px);
  }
  s.ui.em = px;  // the atlas is built on the first frame; the size is known now
  if (!s.ui.ui || !s.ui.mono) {
    ImFontConfig cfg;
    cfg.SizePixels = std::round(13.0f * scale);
    ImFont* builtin = io.Fonts->AddFontDefault(&cfg);
    if (!s.ui.ui) s.ui.ui = builtin;
    if (!s.ui.mono) s.ui.mono = builtin;
    if (s.ui.ui == builtin) s.ui.em = cfg.SizePixels;
  }
  io.FontDefault = s.ui.ui;
}

// The user's text size, kept within what the View menu offers; the fonts are rebuilt between frames.
constexpr float kTextStep = 1.25f;
void set_text_scale(Shell& s, float scale) {
  s.font_scale = std::clamp(scale, static_cast<float>(kTextScaleLeast), static_cast<float>(kTextScaleMost));
  s.rebuild_fonts = true;
}

// Style and fonts for a scale (content scale x the user's font scale); also between frames when
// the user changes the text size (the atlas is rebuilt: 1.86 bakes fonts at fixed sizes).
void apply_scale(Shell& s, bool rebuild_texture) {
  const float scale = s.content_scale * s.font_scale;
  ImGuiStyle& style = ImGui::GetStyle();
  style = ImGuiStyle();
  ImGui::StyleColorsDark();
  style.WindowRounding = 0.0f;
  style.FrameRounding = 3.0f;
  style.ScaleAllSizes(scale);
  ImGui::GetIO().Fonts->Clear();
  s.ui = Ui{};
  load_fonts(s, scale);
  if (rebuild_texture) {
    ImGui_ImplOpenGL3_DestroyFontsTexture();
    ImGui_ImplOpenGL3_CreateFontsTexture();
  }
}

void toggle_fullscreen(Shell& s) {
  if (!s.fullscreen) {
    glfwGetWindowPos(s.window, &s.windowed[0], &s.windowed[1]);
    glfwGetWindowSize(s.window, &s.windowed[2], &s.windowed[3]);
    GLFWmonitor* mon = glfwGetPrimaryMonitor();
    if (!mon) return;
    const GLFWvidmode* mode = glfwGetVideoMode(mon);
    glfwSetWindowMonitor(s.window, mon, 0, 0, mode->width, mode->height, mode->refreshRate);
  } else {
    glfwSetWindowMonitor(s.window, nullptr, s.windowed[0], s.windowed[1], s.windowed[2], s.windowed[3], 0);
  }
  s.fullscreen = !s.fullscreen;
}

void step_to(Model& m, int step) {
  const int last = static_cast<int>(m.trace.steps.size()) - 1;
  m.step = std::clamp(step, 0, std::max(last, 0));
}

void handle_keys(Shell& s) {
  ImGuiIO& io = ImGui::GetIO();
  if (io.WantTextInput) return;
  Model& m = s.m;
  const int last = static_cast<int>(m.trace.steps.size()) - 1;
  if (ImGui::IsKeyPressed(GLFW_KEY_RIGHT)) step_to(m, m.step + 1);
  if (ImGui::IsKeyPressed(GLFW_KEY_LEFT)) step_to(m, m.step - 1);
  if (ImGui::IsKeyPressed(GLFW_KEY_HOME, false)) step_to(m, 0);
  if (ImGui::IsKeyPressed(GLFW_KEY_END, false)) step_to(m, last);
  if (ImGui::IsKeyPressed(GLFW_KEY_SPACE, false)) {
    if (!m.playing && m.step >= last) m.step = 0;
    m.playing = !m.playing;
  }
  if (ImGui::IsKeyPressed(GLFW_KEY_F11, false)) toggle_fullscreen(s);
  if (ImGui::IsKeyPressed(GLFW_KEY_F12, false)) s.want_png_window = true;
  if (io.KeyCtrl &&
      (ImGui::IsKeyPressed(GLFW_KEY_EQUAL, false) || ImGui::IsKeyPressed(GLFW_KEY_KP_ADD, false))) {
    set_text_scale(s, s.font_scale * kTextStep);
  }
  if (io.KeyCtrl &&
      (ImGui::IsKeyPressed(GLFW_KEY_MINUS, false) || ImGui::IsKeyPressed(GLFW_KEY_KP_SUBTRACT, false))) {
    set_text_scale(s, s.font_scale / kTextStep);
  }
  if (io.KeyCtrl && ImGui::IsKeyPressed(GLFW_KEY_C, false)) {
    const std::string t = m.token();
    glfwSetClipboardString(s.window, t.c_str());
    s.notice = "copied " + t;
  }
  if (io.KeyCtrl && ImGui::IsKeyPressed(GLFW_KEY_V, false)) {
    const char* clip = glfwGetClipboardString(s.window);
    std::string why;
    if (!clip || !m.restore(clip, &why)) {
      m.set_error(clip ? why : "the clipboard holds no text to restore a state token from");
    } else {
      s.notice = fmt::format("restored {}", m.token());
    }
  }
}

void advance_play(Shell& s) {
  Model& m = s.m;
  if (!m.playing) return;
  const double now = glfwGetTime();
  const double period = 1.0 / std::max(0.1f, m.steps_per_second);
  if (now - s.play_clock < period) return;
  s.play_clock = now;
  const int last = static_cast<int>(m.trace.steps.size()) - 1;
  if (m.step < last) {
    ++m.step;
  } else {
    m.playing = false;
  }
}

void switch_backend(Shell& s, bool to_gpu) {
  Model& m = s.m;
  const bool on_gpu = m.active && m.active->info().backend == "cuda";
  if (on_gpu == to_gpu || !s.parked) return;
  std::swap(m.active, s.parked);
  const DeviceInfo& d = m.active->info();
  m.backend_line = d.backend == "cuda" ? "GPU: " + d.summary() : "CPU twin (chosen; a GPU is present)";
  m.retrace();
}

void draw_menu(Shell& s) {
  Model& m = s.m;
  if (!ImGui::BeginMainMenuBar()) return;
  if (ImGui::BeginMenu("File")) {
    if (ImGui::MenuItem("Save PNG of the window", "F12")) s.want_png_window = true;
    if (ImGui::MenuItem("Save PNG of the active view")) s.want_png_view = true;
    if (ImGui::MenuItem("Export SVG of the active view's figures")) s.want_svg = true;
    ImGui::Separator();
    if (ImGui::MenuItem("Copy state token", "Ctrl+C")) {
      const std::string t = m.token();
      glfwSetClipboardString(s.window, t.c_str());
      s.notice = "copied " + t;
    }
    ImGui::Separator();
    if (ImGui::MenuItem("Quit")) s.quit = true;
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("View")) {
    for (int i = 0; i < static_cast<int>(ViewId::Count); ++i) {
      if (ImGui::MenuItem(kTitles[i], nullptr, m.view == static_cast<ViewId>(i)))
        m.view = static_cast<ViewId>(i);
    }
    ImGui::Separator();
    if (ImGui::MenuItem("Fullscreen", "F11", s.fullscreen)) toggle_fullscreen(s);
    if (ImGui::MenuItem("Larger text", "Ctrl+=", false, s.font_scale < kTextScaleMost))
      set_text_scale(s, s.font_scale * kTextStep);
    if (ImGui::MenuItem("Smaller text", "Ctrl+-", false, s.font_scale > kTextScaleLeast))
      set_text_scale(s, s.font_scale / kTextStep);
    if (ImGui::MenuItem("Normal text size", nullptr, false, s.font_scale != 1.0f)) set_text_scale(s, 1.0f);
    ImGui::EndMenu();
  }
  const bool has_gpu =
      (m.active && m.active->info().backend == "cuda") || (s.parked && s.parked->info().backend == "cuda");
  if (ImGui::BeginMenu("Backend")) {
    const bool on_gpu = m.active && m.active->info().backend == "cuda";
    if (ImGui::MenuItem("GPU", nullptr, on_gpu, has_gpu)) switch_backend(s, true);
    if (ImGui::MenuItem("CPU twin", nullptr, !on_gpu)) switch_backend(s, false);
    if (!has_gpu) ImGui::TextDisabled("No GPU found: the CPU twin runs everything.");
    ImGui::EndMenu();
  }
  ImGui::EndMainMenuBar();
}

// The status bar's message (an error, else a notice) and the width it wraps in: right of the backend line
// (and of the error's dismiss button), so that a long sentence takes more lines instead of running off
// the window's edge.
struct StatusText {
  const std::string* text = nullptr;
  bool error = false;
  float wrap = 0.0f;
};

StatusText status_text(const Shell& s, float width) {
  const Model& m = s.m;
  StatusText t;
  if (!m.last_error.empty()) {
    t.text = &m.last_error;
    t.error = true;
  } else if (!s.notice.empty()) {
    t.text = &s.notice;
  } else {
    return t;
  }
  const ImGuiStyle& style = ImGui::GetStyle();
  float left = 0.5f * s.ui.em + ImGui::CalcTextSize(m.backend_line.c_str()).x + 2.0f * s.ui.em;
  if (t.error) left += ImGui::CalcTextSize("x").x + 2.0f * style.FramePadding.x + style.ItemSpacing.x;
  t.wrap = std::max(10.0f * s.ui.em, width - left - 0.5f * s.ui.em);
  return t;
}

// The status bar's height: one frame line, or the message's wrapped lines.
float status_height(const Shell& s, float width) {
  const StatusText t = status_text(s, width);
  float h = ImGui::GetFrameHeight();
  if (t.text) h = std::max(h, ImGui::CalcTextSize(t.text->c_str(), nullptr, false, t.wrap).y);
  return h + 0.5f * s.ui.em;
}

void draw_status(Shell& s, ImVec2 pos, ImVec2 size) {
  Model& m = s.m;
  const StatusText t = status_text(s, size.x);
  ImGui::SetNextWindowPos(pos);
  ImGui::SetNextWindowSize(size);
  ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(0.5f * s.ui.em, 0.25f * s.ui.em));
  ImGui::Begin("##status", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoSavedSettings |
                   ImGuiWindowFlags_NoBringToFrontOnFocus);
  ImGui::TextUnformatted(m.backend_line.c_str());
  if (t.text) {
    ImGui::SameLine(0, 2.0f * s.ui.em);
    bool dismissed = false;
    if (t.error) {
      dismissed = ImGui::SmallButton("x##dismiss");
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("Dismiss the error");
      ImGui::SameLine();
    }
    ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + t.wrap);
    ImGui::PushStyleColor(ImGuiCol_Text, palette::to_vec4(t.error ? palette::kBad : palette::kDim));
    ImGui::TextUnformatted(t.text->c_str());
    ImGui::PopStyleColor();
    ImGui::PopTextWrapPos();
    if (dismissed) m.last_error.clear();
  }
  ImGui::End();
  ImGui::PopStyleVar();
}

void draw_frame(Shell& s) {
  Model& m = s.m;
  draw_menu(s);
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  const float status_h = status_height(s, vp->WorkSize.x);
  const ImVec2 pos = vp->WorkPos;
  const ImVec2 size(vp->WorkSize.x, vp->WorkSize.y - status_h);
  ImGui::SetNextWindowPos(pos);
  ImGui::SetNextWindowSize(size);
  // No window background: the clear colour is the background, which spares llvmpipe a blended
  // full-window quad each frame.
  ImGui::Begin("##root", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoSavedSettings |
                   ImGuiWindowFlags_NoBringToFrontOnFocus | ImGuiWindowFlags_NoBackground);
  // The list of views as wide as its longest title and a scroll bar (which it takes at large text in a
  // short window), so that at 2-3x text the view beside it keeps the room.
  float titles_w = 0.0f;
  for (const char* t : kTitles) titles_w = std::max(titles_w, ImGui::CalcTextSize(t).x);
  const ImGuiStyle& style = ImGui::GetStyle();
  ImGui::BeginChild("##views",
                    ImVec2(titles_w + 2.0f * style.WindowPadding.x + style.ScrollbarSize + 1.0f * s.ui.em, 0),
                    true);
  for (int i = 0; i < static_cast<int>(ViewId::Count); ++i) {
    if (ImGui::Selectable(kTitles[i], m.view == static_cast<ViewId>(i), 0, ImVec2(0, 1.6f * s.ui.em))) {
      m.view = static_cast<ViewId>(i);
    }
  }
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("##view", ImVec2(0, 0), true, ImGuiWindowFlags_HorizontalScrollbar);
  s.view_pos = ImGui::GetWindowPos();
  s.view_size = ImGui::GetWindowSize();
  // Test script: "app.svg=FILE" exports the active view's figures, "app.view-png=FILE" its pixels.
  if (auto p = scripted("app.svg")) {
    s.want_svg = true;
    s.svg_path = *p;
  }
  if (auto p = scripted("app.view-png")) {
    s.want_png_view = true;
    s.png_path = *p;
  }
  if (s.want_svg) svg_begin(s.view_pos, s.view_size);
  const int v = static_cast<int>(m.view);
  if (v >= 0 && v < static_cast<int>(ViewId::Count)) kDraw[v](m, s.ui);
  if (s.want_svg) {
    s.want_svg = false;
    const std::string path =
        s.svg_path.empty() ? next_export_name(s, view_name(m.view), "svg") : std::exchange(s.svg_path, "");
    std::ofstream out(path);
    out << svg_end();
    if (out.flush()) {
      s.notice = "saved " + path;
    } else {
      m.set_error("could not write the SVG file " + path);
    }
  }
  ImGui::EndChild();
  ImGui::End();
  draw_status(s, ImVec2(pos.x, pos.y + size.y), ImVec2(size.x, status_h));
}

double process_cpu_ms() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

bool parse_size(const std::string& text, int* w, int* h) {
  // Digits only on both sides (sscanf's %d would wrap 4294969216 to 1920).
  const size_t x = text.find_first_of("xX");
  if (x == std::string::npos) return false;
  int a = 0, b = 0;
  const char* end = text.data() + text.size();
  const auto left = std::from_chars(text.data(), text.data() + x, a);
  const auto right = std::from_chars(text.data() + x + 1, end, b);
  if (x == 0 || left.ec != std::errc() || left.ptr != text.data() + x || right.ec != std::errc() ||
      right.ptr != end)
    return false;
  if (a < 320 || b < 240 || a > 8192 || b > 8192) return false;
  *w = a;
  *h = b;
  return true;
}

}  // namespace

int run_gui(const GuiOptions& opt) {
  const int frames = opt.frame_report.value_or(0);
  const bool headless = !opt.screenshot.empty() || frames > 0;
  Shell s;
  Model& m = s.m;

  // Options first: a bad option is reported before any window opens.
  int width = 0, height = 0;
  if (!opt.size.empty() && !parse_size(opt.size, &width, &height)) {
    std::fprintf(
        stderr,
        "dequant-lab: --size '%s' is not WIDTHxHEIGHT between 320x240 and 8192x8192, e.g. 1920x1080\n",
        opt.size.c_str());
    return 2;
  }
  ViewId view = ViewId::Stepper;
  if (!opt.view.empty() && !view_from_name(opt.view, &view)) {
    std::fprintf(stderr, "dequant-lab: there is no view '%s': choose one of %s\n", opt.view.c_str(),
                 view_names().c_str());
    return 2;
  }
  std::vector<ScriptItem> script;
  if (std::string why; !parse_script(opt.script, &script, &why)) {
    std::fprintf(stderr, "dequant-lab: --script: %s\n", why.c_str());
    return 2;
  }
  if (opt.text_scale && !(*opt.text_scale >= kTextScaleLeast && *opt.text_scale <= kTextScaleMost)) {
    std::fprintf(stderr,
                 "dequant-lab: --text-scale %g is out of range: give a factor from %g to %g, e.g. 1.5\n",
                 *opt.text_scale, kTextScaleLeast, kTextScaleMost);
    return 2;
  }
  if (opt.frame_report && *opt.frame_report < 1) {
    std::fprintf(stderr, "dequant-lab: --frame-report %d: give the number of frames to time, 1 or more\n",
                 *opt.frame_report);
    return 2;
  }

  Settings settings;
  std::string settings_problem;
  if (!headless) {
    s.settings_dir = settings_dir();
    settings = load_settings(s.settings_dir, &settings_problem);
  }

  if (!std::getenv("DISPLAY") && !std::getenv("WAYLAND_DISPLAY")) {
    std::fprintf(stderr, "%s\n", no_display_line().c_str());
    return 1;
  }
  if (!glfwInit()) {
    std::fprintf(stderr, "%s\n", no_display_line().c_str());
    return 1;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  glfwWindowHint(GLFW_SCALE_TO_MONITOR, GLFW_TRUE);
  if (width == 0) {
    width = headless ? 1600 : settings.width;
    height = headless ? 960 : settings.height;
  }
  s.window = glfwCreateWindow(width, height, "Dequant Lab", nullptr, nullptr);
  if (!s.window) {
    const char* desc = nullptr;
    glfwGetError(&desc);
    std::fprintf(stderr,
                 "dequant-lab: could not open a window with OpenGL 3.3 core (%s); the terminal "
                 "commands work without one (`dequant-lab --help`)\n",
                 desc ? desc : "no reason given");
    glfwTerminate();
    return 1;
  }
  if (!headless && settings.x >= 0 && settings.y >= 0) glfwSetWindowPos(s.window, settings.x, settings.y);
  glfwMakeContextCurrent(s.window);
  if (!gladLoadGL(glfwGetProcAddress)) {
    std::fprintf(stderr, "dequant-lab: the OpenGL 3.3 functions could not be loaded\n");
    glfwDestroyWindow(s.window);
    glfwTerminate();
    return 1;
  }
  glfwSwapInterval(headless ? 0 : 1);

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  static std::string ini_path;
  if (s.settings_dir.empty()) {
    io.IniFilename = nullptr;
  } else {
    ini_path = (fs::path(s.settings_dir) / "imgui.ini").string();
    io.IniFilename = ini_path.c_str();
  }
  float xscale = 1.0f, yscale = 1.0f;
  glfwGetWindowContentScale(s.window, &xscale, &yscale);
  s.content_scale = std::clamp(xscale, 1.0f, 4.0f);
  s.font_scale = opt.text_scale ? static_cast<float>(*opt.text_scale) : headless ? 1.0f : settings.font_scale;
  apply_scale(s, false);
  ImGui_ImplGlfw_InitForOpenGL(s.window, true);
  ImGui_ImplOpenGL3_Init("#version 330");

  // The model: backends, then the state (settings, then --state, then --view).
  std::string notice;
  m.active = make_backend("auto", &notice);
  m.cpu = make_cpu_backend();
  if (m.active->info().backend == "cuda") {
    m.backend_line = "GPU: " + m.active->info().summary();
    s.parked = make_cpu_backend();
  } else {
    m.backend_line = "CPU twin: no GPU found";
  }
  m.retrace();
  if (!settings_problem.empty()) m.set_error(settings_problem);
  if (!headless) {
    ViewId v;
    if (view_from_name(settings.view, &v)) m.view = v;
    std::string why;
    if (!settings.state.empty() && !m.restore(settings.state, &why)) {
      m.set_error("the saved state was not restored: " + why);
    }
  }
  // A bad --state or --saved-run ends the start with its sentence (status 2), as a bad option does.
  const auto refuse = [&](const char* option, const std::string& why) {
    std::fprintf(stderr, "dequant-lab: %s: %s\n", option, why.c_str());
    ImGui_ImplOpenGL3_Shutdown();
    ImGui_ImplGlfw_Shutdown();
    ImGui::DestroyContext();
    glfwDestroyWindow(s.window);
    glfwTerminate();
    return 2;
  };
  if (std::string why; !opt.state.empty() && !m.restore(opt.state, &why)) return refuse("--state", why);
  if (std::string why; !opt.saved_run.empty() && !m.open_saved_run(opt.saved_run, &why))
    return refuse("--saved-run", why);
  if (!opt.view.empty()) m.view = view;

  for (ScriptItem& it : script) script_push(std::move(it.key), std::move(it.value));

  std::vector<double> frame_ms;
  double cpu_at_5 = 0;
  int frame = 0, settle = 0;
  int status = 0;
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);
  while (!glfwWindowShouldClose(s.window) && !s.quit && !g_stop) {
    const auto t0 = Clock::now();
    if (headless || m.playing) {
      glfwPollEvents();
    } else {
      glfwWaitEventsTimeout(0.25);
    }
    if (s.rebuild_fonts) {
      s.rebuild_fonts = false;
      apply_scale(s, true);
    }
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    // A rendered picture does not depend on where the server's pointer happens to be (the middle of
    // Xvfb's screen hovered a cell and drew its tooltip into screenshots).
    if (headless) ImGui::GetIO().MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
    ImGui::NewFrame();
    handle_keys(s);
    advance_play(s);
    draw_frame(s);
    ImGui::Render();
    int fbw = 0, fbh = 0;
    glfwGetFramebufferSize(s.window, &fbw, &fbh);
    glViewport(0, 0, fbw, fbh);
    glClearColor(0.08f, 0.08f, 0.1f, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());

    // Captures: after the draw, before the swap.
    const bool last_screenshot_frame =
        !opt.screenshot.empty() && !script_pending() && !sass_view_busy() && ++settle >= 4;
    if (s.want_png_window || s.want_png_view || last_screenshot_frame) {
      std::string path = last_screenshot_frame ? opt.screenshot
                         : !s.png_path.empty()
                             ? std::exchange(s.png_path, "")
                             : next_export_name(s, s.want_png_view ? view_name(m.view) : "window", "png");
      std::string why;
      bool ok;
      if (s.want_png_view && !last_screenshot_frame) {
        const float sx = io.DisplayFramebufferScale.x, sy = io.DisplayFramebufferScale.y;
        const int x = static_cast<int>(s.view_pos.x * sx), w = static_cast<int>(s.view_size.x * sx);
        const int h = static_cast<int>(s.view_size.y * sy);
        const int y = fbh - static_cast<int>((s.view_pos.y + s.view_size.y) * sy);
        ok = write_png(path, std::max(x, 0), std::max(y, 0), std::min(w, fbw), std::min(h, fbh), &why);
      } else {
        ok = write_png(path, 0, 0, fbw, fbh, &why);
      }
      s.want_png_window = s.want_png_view = false;
      if (ok) {
        s.notice = "saved " + path;
      } else {
        m.set_error(why);
      }
      if (last_screenshot_frame) {
        if (!ok) {
          std::fprintf(stderr, "dequant-lab: %s\n", why.c_str());
          status = 1;
        }
        if (!m.last_error.empty()) {
          std::fprintf(stderr, "dequant-lab: the app shows: %s\n", m.last_error.c_str());
        }
        // A scripted run (tests) also says where the model ended up.
        if (!opt.script.empty()) {
          std::fprintf(stderr, "dequant-lab: state %s\n", m.token().c_str());
          if (const std::string k = sass_view_selection(); m.view == ViewId::Sass && !k.empty())
            std::fprintf(stderr, "dequant-lab: SASS listing of %s\n", k.c_str());
        }
        break;
      }
    }
    glfwSwapBuffers(s.window);
    ++frame;
    // A script key of another view than the one shown would be waited for forever.
    if (const auto key = script_front_key()) {
      if (const std::string why = script_view_problem(*key, m.view); !why.empty()) {
        std::fprintf(stderr, "dequant-lab: --script: %s\n", why.c_str());
        status = 2;
        break;
      }
    }
    if (frames > 0) {
      frame_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      if (frame == 5) cpu_at_5 = process_cpu_ms();
      if (frame >= frames + 5) break;  // the first frames build the font atlas: not counted
    }
  }

  if (frames > 0) {
    std::vector<double> t(frame_ms.begin() + std::min<size_t>(5, frame_ms.size()), frame_ms.end());
    std::sort(t.begin(), t.end());
    const auto q = [&](double p) {
      return t.empty() ? 0.0 : t[std::min(t.size() - 1, static_cast<size_t>(p * t.size()))];
    };
    // CPU time of this process (all its threads, llvmpipe's included) per counted frame: what a
    // frame costs when the machine is shared with other work.
    const double cpu = t.empty() ? 0.0 : (process_cpu_ms() - cpu_at_5) / static_cast<double>(t.size());
    std::printf(
        "{\"frames\": %zu, \"median_ms\": %.3f, \"p95_ms\": %.3f, \"cpu_ms_per_frame\": %.3f, \"view\": "
        "\"%s\"}\n",
        t.size(), q(0.5), q(0.95), cpu, view_name(m.view));
  }

  if (!s.settings_dir.empty()) {
    Settings out;
    if (!s.fullscreen) {
      glfwGetWindowSize(s.window, &out.width, &out.height);
      glfwGetWindowPos(s.window, &out.x, &out.y);
    } else {
      out.x = s.windowed[0], out.y = s.windowed[1], out.width = s.windowed[2], out.height = s.windowed[3];
    }
    out.font_scale = s.font_scale;
    out.view = view_name(m.view);
    out.state = m.token();
    std::string why;
    if (!save_settings(s.settings_dir, out, &why)) std::fprintf(stderr, "dequant-lab: %s\n", why.c_str());
  }
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(s.window);
  glfwTerminate();
  return status;
}

}  // namespace dql::gui
