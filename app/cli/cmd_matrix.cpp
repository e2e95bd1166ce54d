// quant, dequant and permute: whole matrices through the kernels of the chosen backend.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "backend_option.hpp"
#include "commands.hpp"
#include "kernels/backend/host_steps.hpp"
#include "kernels/quant/files.hpp"
#include "render.hpp"

namespace dql::cli {

quant::Scheme parse_scheme(const std::string& s) {
  if (const auto scheme = scheme_of_name(s)) return *scheme;
  throw UserError(fmt::format("'{}' is not a scheme: use int8-sym, int4-sym, int4-asym or nf4", s));
}

quant::Layout parse_layout(const std::string& s, quant::Scheme scheme) {
  if (s.empty()) return scheme == quant::Scheme::Int4Asym ? quant::Layout::Awq : quant::Layout::Plain;
  if (const auto layout = layout_of_name(s)) return *layout;
  throw UserError(fmt::format("'{}' is not a layout: use plain, awq or ft", s));
}

namespace {

using quant::Layout;
using quant::Scheme;

struct SpecOptions {
  std::string scheme, layout;
  int group = -1, blocksize = -1;  // -1: not given
  CLI::Option *group_opt = nullptr, *blocksize_opt = nullptr;
  // --group 0 given: one scale per output channel asked for.
  bool per_channel() const { return group_opt && group_opt->count() > 0 && group == 0; }
};

void add_spec_options(CLI::App* cmd, SpecOptions& o) {
  cmd->add_option("--scheme", o.scheme, "int8-sym, int4-sym, int4-asym or nf4")->required();
  o.group_opt = cmd->add_option("--group", o.group,
                                "Group size along K: 32, 64 or 128; 0 for one scale per output channel");
  o.blocksize_opt =
      cmd->add_option("--blocksize", o.blocksize, "NF4 block size along K: a power of two from 32 to 4096");
  cmd->add_option("--layout", o.layout,
                  "plain, awq (int4-asym) or ft (the mixed-GEMM layout, int8-sym / int4-sym)");
}

// The spec, with the group left at 0 where the files or the matrix decide it.
QuantSpec spec_from(const SpecOptions& o, int64_t k_or_zero) {
  if (o.group_opt->count() > 0 && o.group < 0) {
    throw UserError(fmt::format(
        "--group {} is not a group size: use 32, 64, 128, or 0 for one scale per output channel", o.group));
  }
  if (o.blocksize_opt->count() > 0 && o.blocksize < 1) {
    throw UserError(fmt::format("--blocksize {} is not an NF4 block size: use a power of two from 32 to 4096",
                                o.blocksize));
  }
  QuantSpec s;
  s.scheme = parse_scheme(o.scheme);
  s.layout = parse_layout(o.layout, s.scheme);
  if (s.scheme == Scheme::Nf4) {
    if (o.group >= 0) throw UserError("nf4 is grouped by --blocksize, not --group");
    s.group = o.blocksize >= 0 ? o.blocksize : (k_or_zero ? 64 : 0);
  } else {
    if (o.blocksize >= 0) throw UserError("--blocksize belongs to nf4; the integer schemes take --group");
    if (o.group < 0) {
      s.group = k_or_zero == 0 ? 0 : (s.scheme == Scheme::Int8Sym ? static_cast<int>(k_or_zero) : 128);
    } else {
      s.group = o.group == 0 ? static_cast<int>(k_or_zero) : o.group;
    }
  }
  return s;
}

std::string mode_name(const QuantSpec& s, int64_t k) {
  if (s.scheme == Scheme::Nf4) return fmt::format("blocksize {}", s.group);
  return s.group == k ? std::string("per channel") : fmt::format("group {}", s.group);
}

recipes::RecipeId pick_recipe(const QuantSpec& spec, const std::string& name) {
  const auto ok = recipes_for(spec);
  if (name.empty()) return ok.front();
  const recipes::RecipeInfo* r = recipes::find_recipe(name);
  if (!r)
    throw UserError(
        fmt::format("there is no recipe called '{}': choose one of {}", name, recipes::recipe_names()));
  try {
    check_recipe_reads(spec, r->spec->id);
  } catch (const Error& e) {
    throw UserError(e.what());
  }
  return r->spec->id;
}

struct Stats {
  double max_abs = 0, mse = 0, snr_db = 0;
};

Stats error_stats(const Tensor& w, const std::vector<uint16_t>& out, recipes::OutType t) {
  const float* x = w.as<float>();
  const auto f = t == recipes::OutType::F16 ? bits::kF16 : bits::kBF16;
  double sig = 0, err = 0, mx = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const double d = bits::to_double(out[i], f) - static_cast<double>(x[i]);
    sig += static_cast<double>(x[i]) * x[i];
    err += d * d;
    mx = std::max(mx, std::fabs(d));
  }
  Stats s;
  s.max_abs = mx;
  s.mse = err / static_cast<double>(out.size());
  s.snr_db = err > 0 ? 10.0 * std::log10(sig / err) : INFINITY;
  return s;
}

// Groups of the symmetric schemes whose weights are not all zero but whose scale rounded to fp16's zero
// (largest |w| below about 3.8e-6 for int8, 2.1e-7 for int4): their codes and values are all 0.
int64_t zeroed_groups(const Tensor& w, const QuantizedMatrix& q) {
  if (q.spec.scheme != Scheme::Int8Sym && q.spec.scheme != Scheme::Int4Sym) return 0;
  const int64_t groups = q.k / q.spec.group;
  const float* x = w.as<float>();
  int64_t zeroed = 0;
  for (int64_t r = 0; r < q.n; ++r) {
    for (int64_t g = 0; g < groups; ++g) {
      const size_t at = static_cast<size_t>(q.spec.layout == Layout::Plain ? r * groups + g : g * q.n + r);
      if ((q.scales[at] & 0x7FFFu) != 0) continue;
      const float* v = x + r * q.k + g * q.spec.group;
      if (std::any_of(v, v + q.spec.group, [](float f) { return f != 0.0f; })) ++zeroed;
    }
  }
  return zeroed;
}

Tensor load_weights(const std::string& in, const std::string& tensor, const std::string& random,
                    uint64_t seed, const std::string& shape, bool seed_given) {
  try {
    if (random.empty() && (!shape.empty() || seed_given)) {
      throw UserError(
          "--shape and --seed go with --random; weights read with --in take their shape from the file");
    }
    if (!random.empty()) {
      if (!in.empty()) throw UserError("give either --in or --random, not both");
      Distribution d;
      if (random == "normal")
        d = Distribution::Normal;
      else if (random == "uniform")
        d = Distribution::Uniform;
      else if (random == "outliers")
        d = Distribution::Outliers;
      else
        throw UserError(
            fmt::format("--random '{}' is not a distribution: use normal, uniform or outliers", random));
      if (shape.empty()) throw UserError("--random needs --shape NxK, e.g. --shape 4096x4096");
      const auto [n, k] = take(front::parse_shape(shape, "--shape"));
      return random_matrix(d, seed, n, k);
    }
    if (in.empty())
      throw UserError("give the weights: --in W.npy, --in M.safetensors --tensor NAME, or --random ...");
    const bool safe = in.size() > 12 && in.substr(in.size() - 12) == ".safetensors";
    if (safe) {
      if (tensor.empty()) {
        std::string names;
        const auto all = safetensors_names(in);
        for (size_t i = 0; i < all.size() && i < 5; ++i) names += (i ? ", " : "") + all[i];
        if (all.empty()) throw UserError(fmt::format("'{}' holds no tensors", in));
        throw UserError(fmt::format("name the tensor to quantize with --tensor; '{}' holds {}{}", in, names,
                                    all.size() > 5 ? ", ..." : ""));
      }
      return to_f32_matrix(read_safetensors(in, tensor), fmt::format("tensor '{}' in '{}'", tensor, in));
    }
    if (!tensor.empty()) throw UserError("--tensor applies to .safetensors files only");
    return to_f32_matrix(read_npy(in), fmt::format("'{}'", in));
  } catch (const Error& e) {
    throw UserError(e.what());
  }
}

}  // namespace

void add_quant(CLI::App& app) {
  struct Opts {
    SpecOptions spec;
    std::string in, tensor, random, shape, out_dir, backend = "auto";
    uint64_t seed = 0;
    bool json = false;
    CLI::Option* seed_opt = nullptr;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd =
      app.add_subcommand("quant", "Quantize a weight matrix into a real format and measure the round trip");
  add_spec_options(cmd, o->spec);
  cmd->add_option("--in", o->in, "Weights [N, K]: a .npy file, or a .safetensors file with --tensor");
  cmd->add_option("--tensor", o->tensor, "The tensor's name inside the .safetensors file");
  cmd->add_option("--random", o->random, "Generate the weights instead: normal, uniform or outliers");
  o->seed_opt = cmd->add_option("--seed", o->seed, "Seed for --random: a whole number from 0 to 2^64 - 1")
                    ->capture_default_str()
                    ->check(whole_number_check(UINT64_MAX));
  cmd->add_option("--shape", o->shape, "NxK for --random, e.g. 4096x4096");
  cmd->add_option("--out-dir", o->out_dir, "Folder for qweight.npy, scales.npy (zeros.npy, absmax.npy)")
      ->required();
  add_backend_option(cmd, o->backend);
  cmd->add_flag("--json", o->json, "Print the result as JSON");
  cmd->callback([o] {
    const Tensor w = load_weights(o->in, o->tensor, o->random, o->seed, o->shape, o->seed_opt->count() > 0);
    const int64_t n = w.shape[0], k = w.shape[1];
    const QuantSpec spec = spec_from(o->spec, k);
    try {
      check_quant_shape(spec, n, k);
    } catch (const Error& e) {
      throw UserError(e.what());
    }
    auto backend = open_backend(o->backend);
    const recipes::RecipeId recipe = recipes_for(spec).front();
    QuantizedMatrix q;
    std::vector<uint16_t> back;
    std::vector<std::string> removed;
    try {
      q = backend->quantize(w, spec);
      back = backend->dequantize(q, recipe);
      removed = save_quantized(o->out_dir, q);
    } catch (const Error& e) {
      throw UserError(e.what());
    }
    const Stats s = error_stats(w, back, recipes::recipe_out(recipe));
    const int64_t zeroed = zeroed_groups(w, q);
    if (o->json) {
      nlohmann::json j = {{"scheme", scheme_name(spec.scheme)},
                          {"layout", layout_name(spec.layout)},
                          {"group", spec.group},
                          {"n", n},
                          {"k", k},
                          {"backend", backend->info().backend},
                          {"recipe", recipes::spec_of(recipe).name},
                          {"max_abs_error", s.max_abs},
                          {"mse", s.mse},
                          {"snr_db", s.snr_db},
                          {"out_dir", o->out_dir},
                          {"removed", removed},
                          {"zeroed_groups", zeroed}};
      fmt::print("{}\n", j.dump(2));
      return;
    }
    fmt::print("quantized {}x{} as {} ({}), {} layout, on {}\n", n, k, scheme_name(spec.scheme),
               mode_name(spec, k), layout_name(spec.layout), backend->info().summary());
    fmt::print("round trip through {}: max abs error {:.6g}, MSE {:.6g}, SNR {:.2f} dB\n",
               recipes::spec_of(recipe).name, s.max_abs, s.mse, s.snr_db);
    if (zeroed > 0) {
      fmt::print(
          "note: {} group{} of nonzero weights too small for an fp16 scale (largest |w| below about {}) "
          "dequantize to 0; scale the matrix up before quantizing to keep them\n",
          zeroed, zeroed == 1 ? "" : "s", spec.scheme == Scheme::Int8Sym ? "3.8e-6" : "2.1e-7");
    }
    fmt::print("wrote {}\n", o->out_dir);
    if (!removed.empty()) {
      fmt::print("removed {} of an earlier format there (the new qweight.npy replaced its codes)\n",
                 fmt::join(removed, ", "));
    }
  });
}

void add_dequant(CLI::App& app) {
  struct Opts {
    SpecOptions spec;
    std::string dir, out, recipe, backend = "auto";
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("dequant", "Dequantize a saved matrix with a recipe, to fp16 or bf16 .npy");
  add_spec_options(cmd, o->spec);
  cmd->add_option("--dir", o->dir, "Folder written by quant")->required();
  cmd->add_option("--out", o->out, "Output .npy, [N, K] float16 (or bfloat16 as |V2)")->required();
  cmd->add_option("--recipe", o->recipe, "Recipe (default: the format's fast path)");
  add_backend_option(cmd, o->backend);
  cmd->callback([o] {
    QuantSpec spec = spec_from(o->spec, 0);
    try {
      QuantizedMatrix q = load_quantized(o->dir, spec);
      if (o->spec.per_channel() && q.spec.group != q.k) {
        throw UserError(
            fmt::format("--group 0 asks for one scale per output channel, but '{}' holds groups of {}",
                        o->dir, q.spec.group));
      }
      const recipes::RecipeId recipe = pick_recipe(q.spec, o->recipe);
      auto backend = open_backend(o->backend);
      const std::vector<uint16_t> out = backend->dequantize(q, recipe);
      const bool f16 = recipes::recipe_out(recipe) == recipes::OutType::F16;
      Tensor t = make_tensor(f16 ? DType::F16 : DType::BF16, {q.n, q.k});
      std::memcpy(t.data.data(), out.data(), t.data.size());
      write_npy_atomic(o->out, t);
      fmt::print("dequantized {}x{} with {} on {} -> {} ({})\n", q.n, q.k, recipes::spec_of(recipe).name,
                 backend->info().summary(), o->out, f16 ? "float16" : "bfloat16");
    } catch (const Error& e) {
      throw UserError(e.what());
    }
  });
}

void add_permute(CLI::App& app) {
  struct Opts {
    int bits = 0;
    bool forward = false, inverse = false;
    std::string in, out, backend = "auto";
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("permute", "Plain packed signed int4 / int8 <-> the mixed-GEMM layout");
  cmd->add_option("--bits", o->bits, "4 or 8")->required();
  auto* f = cmd->add_flag("--forward", o->forward, "plain -> mixed-GEMM layout");
  auto* i = cmd->add_flag("--inverse", o->inverse, "mixed-GEMM layout -> plain");
  f->excludes(i);
  cmd->add_option("--in", o->in, "Input .npy")->required();
  cmd->add_option("--out", o->out, "Output .npy")->required();
  add_backend_option(cmd, o->backend);
  cmd->callback([o] {
    if (o->bits != 4 && o->bits != 8)
      throw UserError(fmt::format("--bits {} is not supported: use 4 or 8", o->bits));
    if (!o->forward && !o->inverse)
      throw UserError("say which way: --forward (plain -> mixed-GEMM) or --inverse");
    try {
      const PackedFile p = o->forward ? read_plain_packed(o->in, o->bits) : read_ft_packed(o->in, o->bits);
      check_permute_shape(o->bits, p.n, p.k);
      auto backend = open_backend(o->backend);
      const std::vector<uint32_t> words = backend->permute(o->bits, p.n, p.k, p.words, o->forward);
      const Tensor t = o->forward ? ft_packed_tensor(o->bits, p.n, p.k, words)
                                  : plain_packed_tensor(o->bits, p.n, p.k, words);
      write_npy_atomic(o->out, t);
      fmt::print("permuted int{} {}x{} {} on {} -> {}\n", o->bits, p.n, p.k,
                 o->forward ? "into the mixed-GEMM layout" : "back to plain", backend->info().summary(),
                 o->out);
    } catch (const Error& e) {
      throw UserError(e.what());
    }
  });
}

}  // namespace dql::cli
