// explain: one register through a recipe, step by step. tour: the guided version of the same
// for a first-time reader, paced on a terminal.
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

#include "backend_option.hpp"
#include "commands.hpp"
#include "kernels/recipes/catalog.hpp"
#include "render.hpp"

namespace dql::cli {

namespace {

using recipes::OpKind;
using recipes::TraceStep;
using recipes::View;

const recipes::RecipeInfo& recipe_named(const std::string& name) {
  const recipes::RecipeInfo* r = recipes::find_recipe(name);
  if (!r) {
    throw UserError(
        fmt::format("there is no recipe called '{}': choose one of {}", name, recipes::recipe_names()));
  }
  return *r;
}

// The constants a step reads, each with its meaning where it is a number.
std::string constants_line(const TraceStep& s) {
  std::string out;
  for (const auto& o : s.srcs) {
    if (o.is_reg) continue;
    View v = o.view;
    // A lop3 that builds floats ORs in the magic: read it the way the result is read.
    if (s.kind == OpKind::Lop3 && (s.view == View::F16x2 || s.view == View::BF16x2)) {
      const auto f = lane_format(s.view);
      const auto lo = bits::classify(bits::lo16(o.value), f), hi = bits::classify(bits::hi16(o.value), f);
      if (lo == bits::FpClass::Normal && hi == bits::FpClass::Normal) v = s.view;
    }
    const std::string m = constant_meaning(o.value, v);
    if (!m.empty()) out += (out.empty() ? "" : "; ") + m;
  }
  return out;
}

// `gpu`: the same register computed by the GPU, when a GPU ran the recipe too.
void print_step(const TraceStep& s, size_t index, const Style& st, const uint32_t* gpu = nullptr) {
  fmt::print("{:>4}  {}\n", index, st.bold(s.ptx));
  const int width = s.view == View::F16 ? 16 : 32;
  const auto hex = [width](uint32_t v) {
    return width == 16 ? fmt::format("0x{:04x}", v & 0xFFFFu) : hex32(v);
  };
  fmt::print("      {:<6} {}   {}\n", s.dst + " =", nibble_bits(s.value, width), hex(s.value));
  if (gpu) {
    const bool same = *gpu == s.value;
    const std::string line = fmt::format("      {:<6} {}   {}  {}", "gpu", nibble_bits(*gpu, width),
                                         hex(*gpu), same ? "same bits" : "DIFFERENT");
    fmt::print("{}\n", same ? st.good(line) : st.bad(line));
  }
  if (s.view != View::B32) fmt::print("             {}\n", register_reading(s.value, s.view, st));
  fmt::print("      {}\n", st.dim(s.meaning));
  const std::string consts = constants_line(s);
  if (!consts.empty()) fmt::print("      {}\n", st.dim("constants: " + consts));
}

struct Outcome {
  std::vector<double> outputs;
  std::vector<uint32_t> output_bits;
  std::vector<recipes::Expected> expected;
  bool all_match = true;
};

Outcome compare(const recipes::RecipeSpec& spec, const recipes::Trace& t, const recipes::Inputs& in) {
  Outcome o;
  o.expected = recipes::reference_outputs(spec, in);
  for (int e = 0; e < spec.elems; ++e) {
    o.outputs.push_back(recipes::output_value(spec, t.outputs, e));
    o.output_bits.push_back(recipes::output_bits(t.outputs, e));
    if (o.output_bits.back() != o.expected[static_cast<size_t>(e)].bits) o.all_match = false;
  }
  return o;
}

void print_outcome(const recipes::RecipeSpec& spec, const Outcome& o, const Style& st) {
  std::string head = "        ", got = "output  ", want = "expected";
  const bool f16 = spec.out == recipes::OutType::F16;
  for (int e = 0; e < spec.elems; ++e) {
    const size_t i = static_cast<size_t>(e);
    const std::string g = number(o.outputs[i]);
    const std::string w = number(o.expected[i].value);
    const size_t width = std::max<size_t>({g.size(), w.size(), 3}) + 2;
    head += fmt::format("{:>{}}", fmt::format("e{}", e), width);
    const std::string cell = fmt::format("{:>{}}", g, width);
    got += o.output_bits[i] == o.expected[i].bits ? cell : st.bad(cell);
    want += fmt::format("{:>{}}", w, width);
  }
  fmt::print("\nresult, in register order (h0 low half, h0 high half, h1 low half, ...), as {}:\n",
             f16 ? "fp16" : "bf16");
  fmt::print("{}\n{}\n{}\n", st.dim(head), got, want);
  if (o.all_match) {
    fmt::print("{}\n",
               st.good(fmt::format("all {} outputs equal the integer reference, bit for bit", spec.elems)));
  } else {
    fmt::print("{}\n", st.bad("outputs differ from the integer reference (marked)"));
  }
}

recipes::Inputs read_inputs(const recipes::RecipeSpec& spec, const std::string& input,
                            const std::string& absmax) {
  recipes::Inputs in;
  in.reg = take(front::parse_hex(input, "--input"));
  if (!absmax.empty()) {
    if (!spec.has_absmax) {
      throw UserError(fmt::format("--absmax applies to nf4-fp16 only; {} takes just --input", spec.name));
    }
    const float f = take(front::parse_nonneg_float(absmax, "--absmax"));
    std::memcpy(&in.absmax, &f, 4);
  }
  return in;
}

}  // namespace

void add_explain(CLI::App& app) {
  struct Opts {
    std::string recipe, input, absmax, backend = "cpu";
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("explain", "Run one register through a recipe and show every step");
  cmd->add_option("--recipe", o->recipe, "Recipe name (see `dequant-lab recipes`)")->required();
  cmd->add_option("--input", o->input, "The input register in hex, e.g. 0x76543210")->required();
  cmd->add_option("--absmax", o->absmax, "nf4-fp16 only: the block's absmax (default 1.0)");
  cmd->add_flag("--json", o->json, "Print JSON: recipe, input, steps, outputs, expected");
  cmd->add_option("--backend", o->backend,
                  "cpu (the trace alone), or cuda / auto to run the recipe on the GPU too and show its bits")
      ->capture_default_str();
  cmd->callback([o] {
    const recipes::RecipeInfo& info = recipe_named(o->recipe);
    const recipes::RecipeSpec& spec = *info.spec;
    const recipes::Inputs in = read_inputs(spec, o->input, o->absmax);
    const recipes::Trace t = recipes::trace_recipe(spec.id, in);
    const Outcome out = compare(spec, t, in);
    std::vector<uint32_t> gpu;
    std::string device;
    if (o->backend != "cpu") {
      auto backend = open_backend(o->backend);
      if (backend->info().backend == "cuda") {
        try {
          gpu = backend->trace_values(spec.id, in);
        } catch (const Error& e) {
          throw UserError(e.what());
        }
        device = backend->info().summary();
        if (gpu.size() != t.steps.size()) throw UserError("the GPU trace has a different number of steps");
      }
    }
    if (o->json) {
      nlohmann::json steps = nlohmann::json::array();
      for (const auto& s : t.steps) {
        steps.push_back({{"op", s.ptx},
                         {"dst", s.dst},
                         {"value", hex32(s.value)},
                         {"view", view_name(s.view)},
                         {"meaning", s.meaning}});
        if (!gpu.empty()) steps.back()["gpu_value"] = hex32(gpu[steps.size() - 1]);
      }
      nlohmann::json j = {{"recipe", spec.name},
                          {"input", hex32(in.reg)},
                          {"steps", steps},
                          {"outputs", out.outputs},
                          {"expected", nlohmann::json::array()},
                          {"output_bits", nlohmann::json::array()},
                          {"match", out.all_match}};
      if (spec.has_absmax) j["absmax"] = bits::to_double(in.absmax, bits::kF32);
      if (!gpu.empty()) j["gpu"] = device;
      for (const auto& e : out.expected) j["expected"].push_back(e.value);
      for (uint32_t b : out.output_bits) j["output_bits"].push_back(fmt::format("0x{:04x}", b));
      fmt::print("{}\n", j.dump(2));
    } else {
      const Style st = terminal_style();
      fmt::print("{}  {}\n", st.bold(spec.name), info.summary);
      fmt::print("{}\n", st.dim(fmt::format("from {}; input: {}", info.origin, info.input)));
      if (!gpu.empty()) fmt::print("{}\n", st.dim("each step also ran on " + device));
      fmt::print("\n");
      for (size_t i = 0; i < t.steps.size(); ++i)
        print_step(t.steps[i], i, st, gpu.empty() ? nullptr : &gpu[i]);
      print_outcome(spec, out, st);
    }
    if (!out.all_match) throw UserError("the recipe's outputs differ from its integer reference");
    for (size_t i = 0; i < gpu.size(); ++i) {
      if (gpu[i] != t.steps[i].value)
        throw UserError(fmt::format("the GPU's step {} differs from the CPU twin's", i));
    }
  });
}

void add_tour(CLI::App& app) {
  struct Opts {
    std::string recipe = "awq-int4-fp16";
    std::string input = "0x76543210";
    int delay_ms = -1;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("tour", "A guided walk through the fp16 magic-number conversion");
  cmd->add_option("--recipe", o->recipe, "Recipe to walk through")->capture_default_str();
  cmd->add_option("--input", o->input, "Input register in hex")->capture_default_str();
  auto* delay_opt = cmd->add_option("--delay-ms", o->delay_ms,
                                    "Pause between steps (default 900 on a terminal, 0 otherwise)");
  cmd->callback([o, delay_opt] {
    const recipes::RecipeInfo& info = recipe_named(o->recipe);
    const recipes::RecipeSpec& spec = *info.spec;
    const recipes::Inputs in = read_inputs(spec, o->input, "");
    const Style st = terminal_style();
    if (delay_opt->count() > 0 && o->delay_ms < 0) {
      throw UserError(fmt::format("--delay-ms {} is not a pause: give 0 or more milliseconds", o->delay_ms));
    }
    const int delay = o->delay_ms >= 0 ? o->delay_ms : (st.color ? 900 : 0);
    const auto pause = [delay] {
      std::fflush(stdout);
      if (delay > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    };

    fmt::print("{}\n\n",
               st.bold("Dequant Lab tour: turning 4-bit integers into fp16 without converting them"));
    fmt::print("An fp16 number is 1 sign bit, 5 exponent bits and 10 mantissa bits.\n");
    const uint32_t magic = 0x6400;
    fmt::print("  0x6400 = {}  =  2^(25-15) x 1.0 = {}\n", float_fields(magic, bits::kF16, st),
               float_value(magic, bits::kF16));
    fmt::print(
        "At 1024 one step of the mantissa is exactly 1, so OR-ing a small integer n into the\n"
        "low mantissa bits makes the fp16 number 1024 + n, with no conversion instruction:\n");
    for (uint32_t n : {0u, 5u, 15u}) {
      const uint32_t h = magic | n;
      fmt::print("  0x6400 | {:>2} = 0x{:04x} = {}  =  {}\n", n, h, float_fields(h, bits::kF16, st),
                 float_value(h, bits::kF16));
    }
    fmt::print(
        "Subtracting 1024 then leaves n exactly. A nibble in bits 4-7 gives 1024 + 16n instead,\n"
        "and one fused multiply-add by 1/16 minus 64 turns that into n, which saves a shift.\n\n");
    pause();
    fmt::print("{}  {}\n", st.bold(spec.name), info.summary);
    fmt::print("{}\n\n",
               st.dim(fmt::format("from {}; input {}: {}", info.origin, hex32(in.reg), info.input)));
    pause();
    const recipes::Trace t = recipes::trace_recipe(spec.id, in);
    for (size_t i = 0; i < t.steps.size(); ++i) {
      print_step(t.steps[i], i, st);
      pause();
    }
    print_outcome(spec, compare(spec, t, in), st);
    fmt::print(
        "\nTry another register or recipe:\n  dequant-lab explain --recipe ft-int4-fp16 --input 0x76543210\n"
        "  dequant-lab recipes\n");
  });
}

}  // namespace dql::cli
