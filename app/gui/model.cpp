#include "model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>

#include "app/common/bench_report.hpp"
#include "app/common/parse.hpp"
#include "kernels/bits/float.hpp"

namespace dql::gui {

namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t at = s.find(sep, start);
    parts.push_back(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) break;
    start = at + 1;
  }
  return parts;
}

constexpr const char* kTokenShape = "dql:RECIPE:0xHEX:step=N, optionally followed by :view=NAME";

}  // namespace

const char* view_name(ViewId v) {
  const int i = static_cast<int>(v);
  return (i >= 0 && i < static_cast<int>(ViewId::Count)) ? kViewNames[i] : "stepper";
}

bool view_from_name(std::string_view name, ViewId* out) {
  for (int i = 0; i < static_cast<int>(ViewId::Count); ++i) {
    if (name == kViewNames[i]) {
      *out = static_cast<ViewId>(i);
      return true;
    }
  }
  return false;
}

bool parse_script(std::string_view script, std::vector<ScriptItem>* items, std::string* problem) {
  using front::trim_spaces;
  items->clear();
  size_t start = 0;
  while (start <= script.size()) {
    size_t end = script.find(';', start);
    if (end == std::string_view::npos) end = script.size();
    // Spaces around an item, its key and its value are the script's layout ("a=1; b = 2"), not part of them.
    const std::string_view item = trim_spaces(script.substr(start, end - start));
    start = end + 1;
    if (item.empty()) continue;  // "a=1;" or "a=1;;b=2"
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      *problem = fmt::format(
          "'{}' is not key=value; items are separated by ';', e.g. timing.run=1;timing.tab=sweep", item);
      return false;
    }
    const std::string_view key = trim_spaces(item.substr(0, eq));
    if (std::find(std::begin(kScriptKeys), std::end(kScriptKeys), key) == std::end(kScriptKeys)) {
      std::string keys;
      for (const char* k : kScriptKeys) keys += (keys.empty() ? "" : ", ") + std::string(k);
      *problem = fmt::format("'{}' is not a script key; the keys are {}", key, keys);
      return false;
    }
    items->push_back({std::string(key), std::string(trim_spaces(item.substr(eq + 1)))});
  }
  return true;
}

std::string script_view_problem(std::string_view key, ViewId shown) {
  const std::string_view owner = key.substr(0, key.find('.'));
  ViewId v;
  if (!view_from_name(owner, &v) || v == shown) return {};
  return fmt::format("'{}' is a key of the {} view, and the app shows the {} view: open it with --view {}",
                     key, owner, view_name(shown), owner);
}

std::string view_names() {
  std::string s;
  for (int i = 0; i < static_cast<int>(ViewId::Count); ++i) s += (i ? ", " : "") + std::string(kViewNames[i]);
  return s;
}

void Model::retrace() {
  trace = recipes::trace_recipe(recipe, input);
  const recipes::RecipeSpec& spec = *recipes::info_of(recipe).spec;
  expected = recipes::reference_outputs(spec, input);
  if (step < 0) step = 0;
  if (step >= static_cast<int>(trace.steps.size())) step = static_cast<int>(trace.steps.size()) - 1;

  // Provenance: flip each input bit and see which destination bits of each step change.
  const size_t n = trace.steps.size();
  bit_source.assign(n, {});
  for (auto& row : bit_source) row.fill(kNoSource);
  for (int b = 0; b < 32; ++b) {
    recipes::Inputs flipped = input;
    flipped.reg ^= 1u << b;
    const int element = spec.order[b / spec.bits];
    const recipes::Trace t = recipes::trace_recipe(recipe, flipped);
    for (size_t s = 0; s < n && s < t.steps.size(); ++s) {
      const uint32_t changed = t.steps[s].value ^ trace.steps[s].value;
      for (int i = 0; i < 32; ++i) {
        if (!((changed >> i) & 1u)) continue;
        int8_t& src = bit_source[s][static_cast<size_t>(i)];
        if (src == kNoSource) {
          src = static_cast<int8_t>(element);
        } else if (src != element) {
          src = kManySources;
        }
      }
    }
  }

  gpu_values.clear();
  gpu_error.clear();
  gpu_mismatches = 0;
  if (active && active->info().backend == "cuda") {
    try {
      gpu_values = active->trace_values(recipe, input);
      if (gpu_values.size() != n) {
        gpu_error =
            fmt::format("the GPU returned {} step values for a trace of {} steps", gpu_values.size(), n);
        gpu_values.clear();
      }
    } catch (const std::exception& e) {
      gpu_error = e.what();
      gpu_values.clear();
    }
    for (size_t s = 0; s < gpu_values.size(); ++s) {
      if (gpu_values[s] != trace.steps[s].value) ++gpu_mismatches;
    }
  }
  ++revision;
}

std::string Model::token() const {
  const recipes::RecipeSpec& spec = *recipes::info_of(recipe).spec;
  std::string t = fmt::format("dql:{}:0x{:08x}:step={}", spec.name, input.reg, step);
  if (spec.has_absmax && input.absmax != 0x3F800000u) t += fmt::format(":absmax=0x{:08x}", input.absmax);
  if (view != ViewId::Stepper) t += fmt::format(":view={}", view_name(view));
  return t;
}

bool Model::restore(std::string_view text, std::string* why) {
  auto fail = [&](std::string sentence) {
    if (why) *why = std::move(sentence);
    return false;
  };
  // Surrounding blanks (a pasted line) are not part of the token.
  while (!text.empty() && (text.front() == ' ' || text.front() == '\n' || text.front() == '\t')) {
    text.remove_prefix(1);
  }
  while (!text.empty() &&
         (text.back() == ' ' || text.back() == '\n' || text.back() == '\r' || text.back() == '\t')) {
    text.remove_suffix(1);
  }
  const auto parts = split(text, ':');
  if (parts.size() < 4 || parts[0] != "dql") {
    return fail(fmt::format("'{}' is not a state token: expected {}", text, kTokenShape));
  }
  const recipes::RecipeInfo* info = recipes::find_recipe(parts[1]);
  if (!info) {
    return fail(fmt::format("the state token names no known recipe '{}': choose one of {}", parts[1],
                            recipes::recipe_names()));
  }
  const auto reg = front::parse_hex(parts[2], "the state token's input register");
  if (!front::ok(reg)) return fail(std::get<std::string>(reg));

  recipes::Inputs in;
  in.reg = std::get<uint32_t>(reg);
  int new_step = -1;
  ViewId new_view = ViewId::Stepper;
  for (size_t i = 3; i < parts.size(); ++i) {
    const std::string_view p = parts[i];
    const size_t eq = p.find('=');
    const std::string_view key = p.substr(0, eq),
                           value = eq == std::string_view::npos ? "" : p.substr(eq + 1);
    if (eq == std::string_view::npos || value.empty()) {
      return fail(fmt::format("'{}' in the state token is not KEY=VALUE: expected {}", p, kTokenShape));
    }
    if (key == "step") {
      const size_t last = recipes::trace_recipe(info->spec->id, in).steps.size() - 1;
      int v = -1;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      const bool digits = end == value.data() + value.size();
      if (digits && (ec == std::errc::result_out_of_range || (ec == std::errc() && v < 0))) {
        return fail(fmt::format("the state token's step '{}' is out of range: {} has steps 0 to {}", value,
                                info->spec->name, last));
      }
      if (ec != std::errc() || !digits) {
        return fail(fmt::format("the state token's step '{}' is not a whole number: {} has steps 0 to {}",
                                value, info->spec->name, last));
      }
      new_step = v;
    } else if (key == "view") {
      if (!view_from_name(value, &new_view)) {
        return fail(fmt::format("the state token names no view '{}': choose one of {}", value, view_names()));
      }
    } else if (key == "absmax") {
      if (!info->spec->has_absmax) {
        return fail(fmt::format("absmax applies to nf4-fp16 only, not to {}", info->spec->name));
      }
      const auto a = front::parse_hex(value, "the state token's absmax (fp32 bits)");
      if (!front::ok(a)) return fail(std::get<std::string>(a));
      if (!absmax_ok(std::get<uint32_t>(a))) return fail(absmax_refusal(std::get<uint32_t>(a), in.absmax));
      in.absmax = std::get<uint32_t>(a);
    } else {
      return fail(fmt::format(
          "the state token has an unknown part '{}': accepted are step=, view= and absmax=", key));
    }
  }
  if (new_step < 0) return fail(fmt::format("the state token lacks step=N: expected {}", kTokenShape));
  const size_t steps = recipes::trace_recipe(info->spec->id, in).steps.size();
  if (static_cast<size_t>(new_step) >= steps) {
    return fail(
        fmt::format("step {} is past the end: {} has steps 0 to {}", new_step, info->spec->name, steps - 1));
  }
  recipe = info->spec->id;
  input = in;
  step = new_step;
  view = new_view;
  retrace();
  // A token naming the LOP3 or PRMT view on a step of that kind opens the view on its operands.
  const recipes::OpKind kind = trace.steps[static_cast<size_t>(step)].kind;
  if ((view == ViewId::Lop3 && kind == recipes::OpKind::Lop3) ||
      (view == ViewId::Prmt && kind == recipes::OpKind::Prmt)) {
    open_step_in_view(step);
  }
  return true;
}

bool Model::open_saved_run(const std::string& path, std::string* why) {
  try {
    front::SavedRun run = front::load_bench_run(path);
    if (run.rows.empty())
      throw Error(fmt::format("'{}' holds no rows: save a run that timed at least one kernel", path));
    bench_rows = std::move(run.rows);
    bench_file = path;
    bench_device = std::move(run.device);
    bench_copy_gbps = run.copy_gbps;
    return true;
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return false;
  }
}

std::string Model::bench_source() const {
  return bench_file.empty() ? std::string()
                            : fmt::format("{} ({})", bench_file, front::device_summary(bench_device));
}

void Model::open_step_in_view(int step_index) {
  if (step_index < 0 || step_index >= static_cast<int>(trace.steps.size())) return;
  const recipes::TraceStep& s = trace.steps[static_cast<size_t>(step_index)];
  if (s.kind == recipes::OpKind::Lop3 && s.srcs.size() >= 3) {
    step = step_index;
    lop3_a = s.srcs[0].value;
    lop3_b = s.srcs[1].value;
    lop3_c = s.srcs[2].value;
    lop3_lut = static_cast<uint8_t>(s.imm);
    view = ViewId::Lop3;
  } else if (s.kind == recipes::OpKind::Prmt && s.srcs.size() >= 2) {
    step = step_index;
    prmt_a = s.srcs[0].value;
    prmt_b = s.srcs[1].value;
    prmt_sel = s.imm & 0xFFFFu;
    prmt_mode = bits::PrmtMode::Generic;
    view = ViewId::Prmt;
  }
}

bool absmax_ok(uint32_t bits) {
  const double v = bits::to_double(bits, bits::kF32);
  return std::isfinite(v) && !(v < 0.0);
}

std::string absmax_refusal(uint32_t bits, uint32_t kept) {
  return fmt::format("absmax 0x{:08x} is {}: it must be a finite fp32 value >= 0 (kept 0x{:08x})", bits,
                     std::isnan(bits::to_double(bits, bits::kF32))   ? "NaN"
                     : std::isinf(bits::to_double(bits, bits::kF32)) ? "infinite"
                                                                     : "negative",
                     kept);
}

}  // namespace dql::gui
