// The desktop app's one model: every view reads the same recipe, input register, step, matrix
// and scheme, so the stepper, the LOP3 and PRMT views and the SASS listing can point at the same
// instruction. Views keep only their own view state (hover, zoom, scroll) in their panel file.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/backend/backend.hpp"
#include "kernels/bits/prmt.hpp"
#include "kernels/recipes/catalog.hpp"

struct ImFont;

namespace dql::gui {

enum class ViewId : int { Stepper, Float, Lop3, Prmt, Layouts, Quant, Timing, Sass, Count };
// The names used by --view, the state token and the settings file.
inline constexpr const char* kViewNames[] = {"stepper", "float", "lop3",   "prmt",
                                             "layouts", "quant", "timing", "sass"};

const char* view_name(ViewId v);
// False when `name` is none of kViewNames.
bool view_from_name(std::string_view name, ViewId* out);
std::string view_names();  // "stepper, float, ..." for messages

// The test script (--script "key=value;key=value"): its items in order. A key names its view
// ("timing.run"), or the app ("app.svg"). False, with a sentence in `problem`, for the first item
// that is not key=value or whose key no view takes (kScriptKeys), so that a typo is an error rather
// than a script that never finishes.
struct ScriptItem {
  std::string key, value;
};
inline constexpr const char* kScriptKeys[] = {
    "app.svg",       "app.view-png",    "float.decimal",    "float.format",
    "float.hex",     "float.magic",     "layouts.bits",     "layouts.element",
    "layouts.tab",   "lop3.a",          "lop3.b",           "lop3.c",
    "lop3.expr",     "lop3.lut",        "prmt.a",           "prmt.b",
    "prmt.mode",     "prmt.sel",        "quant.blocksize",  "quant.group",
    "quant.npy",     "quant.scheme",    "quant.shape",      "sass.filter",
    "sass.kernel",   "sass.list-width", "sass.timed",       "stepper.absmax",
    "stepper.hex",   "stepper.recipe",  "stepper.step",     "timing.back-to-back",
    "timing.batch",  "timing.compare",  "timing.gemm-rows", "timing.kernels",
    "timing.open",   "timing.ring",     "timing.run",       "timing.save-json",
    "timing.select", "timing.shapes",   "timing.tab",       "timing.timeout",
    "timing.warm"};
bool parse_script(std::string_view script, std::vector<ScriptItem>* items, std::string* problem);
// A sentence when `key` belongs to a view other than `shown` (the script would wait for it
// forever), else empty.
std::string script_view_problem(std::string_view key, ViewId shown);

// NF4's absmax as fp32 bits: a finite value >= 0 (as `explain --absmax` takes it); the sentence for
// one that is not, saying which value is kept.
bool absmax_ok(uint32_t bits);
std::string absmax_refusal(uint32_t bits, uint32_t kept);

struct Model {
  // Backends: `active` runs matrix work and timings (the GPU when there is one); `cpu` is the
  // bit-exact twin, always present.
  std::unique_ptr<Backend> active;
  std::unique_ptr<Backend> cpu;
  std::string backend_line;  // for the status bar: GPU name, cc, driver, or "CPU twin: no GPU found"

  ViewId view = ViewId::Stepper;

  // The recipe being stepped through.
  recipes::RecipeId recipe = recipes::RecipeId::AwqInt4F16;
  recipes::Inputs input{0x76543210u};
  int step = 0;                             // index into trace.steps
  recipes::Trace trace;                     // CPU twin's trace of (recipe, input)
  std::vector<uint32_t> gpu_values;         // the GPU's value of every step; empty without a GPU
  std::string gpu_error;                    // why gpu_values is empty, when a GPU exists
  int gpu_mismatches = 0;                   // steps whose GPU bits differ from the CPU twin's
  std::vector<recipes::Expected> expected;  // the integer reference of every output element
  // Which logical element each bit of each step's destination depends on (bit i of step s:
  // bit_source[s][i]); kNoSource for bits no input bit reaches (constants), kManySources for bits
  // several elements reach. Found by running the recipe once per flipped input bit.
  static constexpr int8_t kNoSource = -1, kManySources = -2;
  std::vector<std::array<int8_t, 32>> bit_source;
  uint64_t revision = 0;  // bumped by every retrace, so views can cache what they derive

  // The LOP3 and PRMT views' operands (set by the stepper or the SASS view when opened from them).
  uint8_t lop3_lut = 0xEA;
  uint32_t lop3_a = 0x76543210u, lop3_b = 0x000F000Fu, lop3_c = 0x64006400u;
  uint32_t prmt_a = 0x03020100u, prmt_b = 0x07060504u;
  uint32_t prmt_sel = 0x3210u;
  bits::PrmtMode prmt_mode = bits::PrmtMode::Generic;

  // The matrix and scheme of the quantize and layouts views.
  QuantSpec spec;
  int64_t rows = 256, cols = 1024;

  // The latest benchmark results (the timing view fills them; the SASS view shows each kernel's
  // time beside its instruction counts), and where they come from: bench_file, the saved run's file as it
  // was opened, empty for a run of this session.
  std::vector<BenchRow> bench_rows;
  std::string bench_file;
  nlohmann::json bench_device;  // the header of the device they ran on (front::bench_device_json)
  double bench_copy_gbps = 0;   // the copy bandwidth measured with them (0: not known)

  // Playing through the steps (Space, or the stepper's play button).
  bool playing = false;
  float steps_per_second = 2.0f;

  std::string last_error;  // shown in the status bar until the next error or a dismiss

  // Recomputes trace and gpu_values after recipe or input changed; keeps step in range.
  void retrace();
  void set_error(std::string sentence) { last_error = std::move(sentence); }
  // Shows a saved run (bench --json, the timing view's Save JSON) as the benchmark results, until the next
  // run: its rows, device and copy bandwidth. False, with the sentence in `why` and the results as they
  // were, where the file cannot be shown.
  bool open_saved_run(const std::string& path, std::string* why);
  // A saved run's file and device ("bench.json (NVIDIA H200, compute capability 9.0, ...)"); empty for a run
  // of this session.
  std::string bench_source() const;

  // "dql:awq-int4-fp16:0x76543210:step=5[:view=lop3]" and back. restore() leaves the model
  // untouched and explains in `why` when the token is malformed.
  std::string token() const;
  bool restore(std::string_view token, std::string* why);

  // Jump to the LOP3 / PRMT view on the operands of a trace step (no-op for other kinds).
  void open_step_in_view(int step_index);
};

// Fonts and sizes the panels draw with. Sizes are multiples of `em` (the font size in pixels).
struct Ui {
  ImFont* ui = nullptr;
  ImFont* mono = nullptr;  // bits, hex, PTX, SASS
  float em = 16.0f;
};

// One function per view, each in app/gui/panels/<name>.cpp.
void draw_stepper(Model& m, const Ui& ui);
void draw_float(Model& m, const Ui& ui);
void draw_lop3(Model& m, const Ui& ui);
void draw_prmt(Model& m, const Ui& ui);
void draw_layouts(Model& m, const Ui& ui);
void draw_quant(Model& m, const Ui& ui);
void draw_timing(Model& m, const Ui& ui);
void draw_sass(Model& m, const Ui& ui);
// True while the SASS view is reading an architecture's listing (screenshots wait for it).
bool sass_view_busy();
// The SASS view's listed kernel ("sm_90 NAME"); empty before the view has read a listing.
std::string sass_view_selection();

}  // namespace dql::gui
