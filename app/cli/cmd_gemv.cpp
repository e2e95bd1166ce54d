// gemv: Y = X W^T with W a saved quantized matrix, through the GEMV / GEMM kernels of the
// chosen backend, optionally checked against a float64 product with the same dequantized weights.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "app/common/bench_report.hpp"
#include "backend_option.hpp"
#include "commands.hpp"
#include "kernels/bits/float.hpp"
#include "kernels/gemv/gemv_cpu.hpp"
#include "kernels/quant/files.hpp"

namespace dql::cli {

namespace {

namespace fs = std::filesystem;
using quant::Layout;
using quant::Scheme;

// ---- which format a folder holds ------------------------------------------------------------

// The dtype and shape of a .npy file from its header alone (ok = false when it cannot be read;
// read_npy then says why).
struct NpyHead {
  bool ok = false;
  std::string descr;
  std::vector<int64_t> shape;
  bool is(const char* d, size_t dims) const { return ok && descr == d && shape.size() == dims; }
};

NpyHead peek_npy(const fs::path& path) {
  NpyHead h;
  std::ifstream f(path, std::ios::binary);
  if (!f) return h;
  unsigned char pre[12] = {};
  f.read(reinterpret_cast<char*>(pre), 10);
  if (f.gcount() != 10 || std::memcmp(pre, "\x93NUMPY", 6) != 0) return h;
  size_t len = pre[8] | (pre[9] << 8);
  if (pre[6] >= 2) {
    f.read(reinterpret_cast<char*>(pre + 10), 2);
    len |= (static_cast<size_t>(pre[10]) << 16) | (static_cast<size_t>(pre[11]) << 24);
  }
  if (len > (1u << 20)) return h;
  std::string text(len, '\0');
  f.read(text.data(), static_cast<std::streamsize>(len));
  if (static_cast<size_t>(f.gcount()) != len) return h;
  const size_t d = text.find("'descr'");
  const size_t s = text.find("'shape'");
  if (d == std::string::npos || s == std::string::npos) return h;
  const size_t q0 = text.find_first_of("'\"", text.find(':', d));
  if (q0 == std::string::npos) return h;
  h.descr = text.substr(q0 + 1, text.find(text[q0], q0 + 1) - q0 - 1);
  const size_t open = text.find('(', s), close = text.find(')', s);
  if (open == std::string::npos || close == std::string::npos) return h;
  const std::string dims = text.substr(open + 1, close - open - 1);
  for (const char* p = dims.c_str(); *p;) {
    if (*p == ' ' || *p == ',') {
      ++p;
      continue;
    }
    char* end = nullptr;
    const long long v = std::strtoll(p, &end, 10);
    if (end == p) return h;
    h.shape.push_back(v);
    p = end;
  }
  h.ok = true;
  return h;
}

struct Candidate {
  QuantSpec spec;
  std::string name;
};

std::string format_label(Scheme s, Layout l) {
  return fmt::format("{} ({})", scheme_name(s), layout_name(l));
}

// Every format whose files in `dir` fit together by dtype and shape, for a folder without format.json
// (files from elsewhere). Plain int4 and the mixed-GEMM layout's int4 both fit where N G = 4 K.
std::vector<Candidate> formats_in(const fs::path& dir) {
  const NpyHead q = peek_npy(dir / "qweight.npy");
  const NpyHead sc = peek_npy(dir / "scales.npy");
  const NpyHead am = peek_npy(dir / "absmax.npy");
  const NpyHead z = peek_npy(dir / "zeros.npy");
  std::vector<Candidate> c;
  const auto add = [&](Scheme s, Layout l) { c.push_back({QuantSpec{s, l, 0}, format_label(s, l)}); };
  const bool u8 = q.is("|u1", 2), i8 = q.is("|i1", 2), i32 = q.is("<i4", 2);
  const bool scales = sc.is("<f2", 2);
  if (u8 && am.is("<f4", 2) && am.shape[0] == q.shape[0] && am.shape[1] > 0 &&
      2 * q.shape[1] % am.shape[1] == 0)
    add(Scheme::Nf4, Layout::Plain);
  if (i32 && scales && z.is("<i4", 2) && sc.shape[1] == 8 * q.shape[1] && z.shape[0] == sc.shape[0])
    add(Scheme::Int4Asym, Layout::Awq);
  if (i8 && scales && sc.shape[0] == q.shape[0]) add(Scheme::Int8Sym, Layout::Plain);
  if (u8 && scales && sc.shape[0] == q.shape[0] && sc.shape[1] > 0 && 2 * q.shape[1] % sc.shape[1] == 0)
    add(Scheme::Int4Sym, Layout::Plain);
  const bool ft_k =
      u8 && scales && q.shape[1] % 2 == 0 && sc.shape[0] > 0 && q.shape[1] / 2 % sc.shape[0] == 0;
  if (ft_k && sc.shape[1] == 2 * q.shape[0]) add(Scheme::Int8Sym, Layout::Ft);
  if (ft_k && sc.shape[1] == 4 * q.shape[0]) add(Scheme::Int4Sym, Layout::Ft);
  return c;
}

// The one format whose files fit `dir` by their shapes (a folder without format.json), or a sentence.
QuantSpec format_of_shapes(const fs::path& d) {
  const std::string dir = d.string();
  const std::vector<Candidate> c = formats_in(d);
  if (c.empty()) {
    // Let the reader name the missing or unreadable file, else say what was looked for.
    try {
      (void)read_npy((d / "qweight.npy").string());
      (void)read_npy((d / "scales.npy").string());
    } catch (const Error& e) {
      throw UserError(e.what());
    }
    throw UserError(
        fmt::format("the files in '{}' fit no format that `dequant-lab quant` writes: name it with "
                    "--scheme (and --layout)",
                    dir));
  }
  if (c.size() > 1) {
    std::string names;
    for (size_t i = 0; i < c.size(); ++i)
      names += (i ? (i + 1 == c.size() ? " and " : ", ") : "") + c[i].name;
    throw UserError(
        fmt::format("the files in '{}' fit {} by their shapes, and the folder has no format.json to say "
                    "which: name the format with --scheme and --layout",
                    dir, names));
  }
  return c.front().spec;
}

QuantizedMatrix load_weight(const std::string& dir, const std::string& scheme, const std::string& layout) {
  QuantSpec spec;
  spec.group = 0;  // from the files
  if (!scheme.empty()) {
    spec.scheme = parse_scheme(scheme);
    spec.layout = parse_layout(layout, spec.scheme);
  } else {
    if (!layout.empty())
      throw UserError("--layout goes with --scheme: give both, or neither to read them from the files");
    const fs::path d(dir);
    if (!fs::is_directory(d))
      throw UserError(fmt::format(
          "'{}' is not a folder: --dir takes the folder `dequant-lab quant --out-dir` wrote", dir));
    std::optional<QuantSpec> named;
    try {
      named = read_format_file(dir);
    } catch (const Error& e) {
      throw UserError(e.what());
    }
    spec = named ? *named : format_of_shapes(d);
  }
  try {
    return load_quantized(dir, spec);
  } catch (const Error& e) {
    throw UserError(e.what());
  }
}

std::string format_text(const QuantizedMatrix& q) {
  const QuantSpec& s = q.spec;
  const std::string mode = s.scheme == Scheme::Nf4 ? fmt::format("blocksize {}", s.group)
                           : s.group == q.k        ? std::string("per channel")
                                                   : fmt::format("group {}", s.group);
  return fmt::format("{} {}, {} layout", scheme_name(s.scheme), mode, layout_name(s.layout));
}

// ---- activations -----------------------------------------------------------------------------

// A double to fp16 / bf16 with one rounding (ties to even).
uint16_t from_f64(bits::FloatFormat to, double v) {
  if (std::isnan(v)) return static_cast<uint16_t>(bits::fmt_canonical_nan(to));
  const bool neg = std::signbit(v);
  const uint32_t sign = neg ? bits::fmt_sign_bit(to) : 0u;
  const double a = std::fabs(v);
  if (std::isinf(a)) return static_cast<uint16_t>(sign | bits::fmt_inf(to));
  if (a == 0.0) return static_cast<uint16_t>(sign);
  int e = 0;
  const double m = std::frexp(a, &e);  // a = m 2^e, m in [0.5, 1)
  return static_cast<uint16_t>(bits::round_pack(to, neg, static_cast<uint64_t>(std::ldexp(m, 53)), e - 53));
}

// The values of a float .npy as fp16 / bf16 bits, each rounded once (exact when already in `t`).
std::vector<uint16_t> act_bits(const Tensor& x, recipes::OutType t, const std::string& what) {
  const bits::FloatFormat to = t == recipes::OutType::F16 ? bits::kF16 : bits::kBF16;
  const size_t n = static_cast<size_t>(x.numel());
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n; ++i) {
    switch (x.dtype) {
      case DType::F16:
      case DType::BF16: {
        const uint16_t b = x.as<uint16_t>()[i];
        const bool same = (x.dtype == DType::F16) == (t == recipes::OutType::F16);
        v[i] = same ? b
                    : static_cast<uint16_t>(
                          bits::soft_convert(to, x.dtype == DType::F16 ? bits::kF16 : bits::kBF16, b));
        break;
      }
      case DType::F32:
        v[i] = static_cast<uint16_t>(bits::soft_convert(to, bits::kF32, x.as<uint32_t>()[i]));
        break;
      case DType::F64: v[i] = from_f64(to, x.as<double>()[i]); break;
      default:
        throw UserError(fmt::format("{} holds {}: give float16, float32, bfloat16 or float64 values", what,
                                    dtype_name(x.dtype)));
    }
  }
  return v;
}

Tensor read_tensor(const std::string& path) {
  try {
    return read_npy(path);
  } catch (const Error& e) {
    throw UserError(e.what());
  }
}

gemv::Epilogue parse_epilogue(const std::string& act, const std::string& clamp) {
  gemv::Epilogue e;
  if (act == "none")
    e.act = gemv::Act::None;
  else if (act == "relu")
    e.act = gemv::Act::Relu;
  else if (act == "silu")
    e.act = gemv::Act::Silu;
  else if (act == "gelu")
    e.act = gemv::Act::Gelu;
  else
    throw UserError(fmt::format("--act '{}' is not an activation: use none, relu, silu or gelu", act));
  if (!clamp.empty()) {
    const size_t comma = clamp.find(',');
    const auto number = [&](const std::string& s, float& out) {
      char* end = nullptr;
      const double v = std::strtod(s.c_str(), &end);
      if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v) || std::fabs(v) > 3.0e38)
        return false;
      out = static_cast<float>(v);
      return true;
    };
    if (comma == std::string::npos || !number(clamp.substr(0, comma), e.lo) ||
        !number(clamp.substr(comma + 1), e.hi))
      throw UserError(fmt::format(
          "--clamp '{}' is not a range: give two numbers LO,HI, each within +-3e38, e.g. --clamp=-1,1",
          clamp));
    e.clamp = true;
  }
  return e;
}

}  // namespace

void add_gemv(CLI::App& app) {
  struct Opts {
    std::string dir, x, out, bias, clamp, scheme, layout;
    std::string path = "fast", dtype = "fp16", act = "none", backend = "auto";
    bool check = false, json = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd =
      app.add_subcommand("gemv", "Y = X W^T through the GEMV / GEMM kernels, W a matrix saved by quant");
  cmd->add_option("--dir", o->dir,
                  "Folder written by `quant --out-dir`: the format, group and layout come from its files")
      ->required();
  cmd->add_option("--x", o->x,
                  "Activations X: .npy [M, K] or [K] (M = 1), float16, float32, bfloat16 (|V2) or float64; "
                  "rounded once to --dtype")
      ->required();
  cmd->add_option(
         "--out", o->out,
         "Output .npy, Y [M, N]: float16 for --dtype fp16; float32 holding the exact bf16 values for "
         "--dtype bf16")
      ->required();
  cmd->add_option("--path", o->path,
                  "fast (magic-number conversion), naive (per-element conversion, ft layout), online (int8 "
                  "activations, plain int8 g64 / g128) or cublas (dequantize, then the fp16 / bf16 product)")
      ->capture_default_str();
  cmd->add_option("--dtype", o->dtype, "fp16 or bf16: of X, the bias and Y")->capture_default_str();
  cmd->add_option("--bias", o->bias, "Bias .npy [N], added before the activation (rounded once to --dtype)");
  cmd->add_option("--act", o->act, "none, relu, silu or gelu (tanh form)")->capture_default_str();
  cmd->add_option("--clamp", o->clamp,
                  "LO,HI: outputs limited to [LO, HI] after the activation, e.g. --clamp=-1,1");
  cmd->add_option(
      "--scheme", o->scheme,
      "int8-sym, int4-sym, int4-asym or nf4, only where the folder holds files of several formats");
  cmd->add_option("--layout", o->layout, "plain, awq or ft, with --scheme");
  add_backend_option(cmd, o->backend);
  cmd->add_flag(
      "--check", o->check,
      "Also compute the float64 product with the same dequantized weights and print the relative L2 "
      "and the largest absolute error");
  cmd->add_flag("--json", o->json, "Print the result as JSON");
  cmd->callback([o] {
    GemvRequest r;
    if (o->path == "fast")
      r.path = gemv::Path::Fast;
    else if (o->path == "naive")
      r.path = gemv::Path::Naive;
    else if (o->path == "online")
      r.path = gemv::Path::Online;
    else if (o->path == "cublas")
      r.path = gemv::Path::Cublas;
    else
      throw UserError(fmt::format("--path '{}' is not a path: use fast, naive, online or cublas", o->path));
    const std::optional<recipes::OutType> dtype = front::out_type_named(o->dtype);
    if (!dtype) throw UserError(fmt::format("--dtype '{}' is not supported: use fp16 or bf16", o->dtype));
    r.dtype = *dtype;
    r.epi = parse_epilogue(o->act, o->clamp);

    const QuantizedMatrix w = load_weight(o->dir, o->scheme, o->layout);
    const Tensor x = read_tensor(o->x);
    if (x.shape.size() == 1 && x.shape[0] == w.k) {
      r.m = 1;
    } else if (x.shape.size() == 2 && x.shape[1] == w.k) {
      r.m = x.shape[0];
    } else {
      throw UserError(
          fmt::format("'{}' is [{}], but the weight in '{}' is [{}, {}]: X must be [M, {}] or [{}]", o->x,
                      x.shape_text(), o->dir, w.n, w.k, w.k, w.k));
    }
    r.x = act_bits(x, r.dtype, fmt::format("'{}'", o->x));
    if (!o->bias.empty()) {
      const Tensor b = read_tensor(o->bias);
      if (b.shape.size() != 1 || b.shape[0] != w.n) {
        throw UserError(fmt::format("'{}' is [{}]: the bias must be [{}], one value per output channel",
                                    o->bias, b.shape_text(), w.n));
      }
      r.bias = act_bits(b, r.dtype, fmt::format("'{}'", o->bias));
    }
    try {
      check_gemv(w, r);
    } catch (const Error& e) {
      throw UserError(e.what());
    }
    auto backend = open_backend(o->backend);

    std::vector<uint16_t> y;
    std::vector<cuda::KernelLaunch> launches;  // what the product launched (the GPU's kernels)
    double seconds = 0;
    gemv::Accuracy acc;
    try {
      const auto t0 = std::chrono::steady_clock::now();
      {
        const cuda::LaunchLog log;
        y = backend->gemv(w, r);
        launches = log.launches();
      }
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (o->check) {
        // The same dequantized weights in float64. Plain int8 dequantizes to fp16 only, so the online
        // path with bf16 activations is checked against its fp16 weights.
        recipes::OutType wt = r.dtype;
        recipes::RecipeId recipe;
        try {
          recipe = dequant_recipe_for(w.spec, r.dtype);
        } catch (const Error&) {
          wt = recipes::OutType::F16;
          recipe = dequant_recipe_for(w.spec, wt);
        }
        const std::vector<uint16_t> deq = backend->dequantize(w, recipe);
        std::vector<double> ref;
        if (wt == r.dtype) {
          ref = gemv::product_f64(r.x.data(), r.m, deq.data(), w.n, w.k, r.dtype);
        } else {
          ref.assign(static_cast<size_t>(r.m * w.n), 0.0);
          for (int64_t i = 0; i < r.m; ++i) {
            for (int64_t j = 0; j < w.n; ++j) {
              double s = 0;
              for (int64_t kk = 0; kk < w.k; ++kk) {
                s += static_cast<double>(gemv::act_to_f32(r.x[i * w.k + kk], r.dtype)) *
                     gemv::act_to_f32(deq[j * w.k + kk], wt);
              }
              ref[i * w.n + j] = s;
            }
          }
        }
        for (int64_t i = 0; i < r.m; ++i) {
          for (int64_t j = 0; j < w.n; ++j) {
            const double b = r.bias.empty() ? 0.0 : gemv::act_to_f32(r.bias[j], r.dtype);
            ref[i * w.n + j] = gemv::epilogue_f64(ref[i * w.n + j], b, r.epi);
          }
        }
        acc = gemv::compare(y, ref, r.dtype);
      }
      const bool f16 = r.dtype == recipes::OutType::F16;
      Tensor t = make_tensor(f16 ? DType::F16 : DType::F32, {r.m, w.n});
      if (f16) {
        std::memcpy(t.data.data(), y.data(), t.data.size());
      } else {
        for (size_t i = 0; i < y.size(); ++i) t.as<uint32_t>()[i] = static_cast<uint32_t>(y[i]) << 16;
      }
      write_npy_atomic(o->out, t);
    } catch (const Error& e) {
      throw UserError(e.what());
    }

    if (o->json) {
      nlohmann::json j = {{"m", r.m},
                          {"n", w.n},
                          {"k", w.k},
                          {"path", gemv::path_name(r.path)},
                          {"dtype", o->dtype},
                          {"format", format_text(w)},
                          {"backend", backend->info().backend},
                          {"out", o->out},
                          {"launches", nlohmann::json::array()}};
      for (const cuda::KernelLaunch& l : launches) j["launches"].push_back(front::launch_json(l));
      if (o->check) {
        j["rel_l2"] = acc.rel_l2;  // null where an output is NaN or Inf
        j["max_abs"] = acc.max_abs;
        j["nonfinite"] = acc.nonfinite;
        j["nonfinite_apart"] = acc.nonfinite_apart;
      }
      fmt::print("{}\n", j.dump(2));
      return;
    }
    fmt::print("gemv on {}\n", backend->info().summary());
    fmt::print("{:>5} {:>7} {:>7}  {:<7} {:<5} {:<34} {:>10}\n", "M", "N", "K", "path", "dtype", "format",
               "time");
    fmt::print("{:>5} {:>7} {:>7}  {:<7} {:<5} {:<34} {:>7.3f} ms\n", r.m, w.n, w.k, gemv::path_name(r.path),
               o->dtype, format_text(w), seconds * 1e3);
    fmt::print("(time: the whole call, copies included; `dequant-lab bench` times the kernels alone)\n");
    if (!launches.empty()) fmt::print("launched (the kernels as the SASS view names them):\n");
    for (const cuda::KernelLaunch& l : launches) fmt::print("  {}\n", front::launch_text(l));
    if (o->check && acc.nonfinite == 0) {
      fmt::print(
          "against the float64 product with the same dequantized weights: relative L2 error {:.3g}, max "
          "abs error {:.3g}\n",
          acc.rel_l2, acc.max_abs);
    } else if (o->check) {
      fmt::print(
          "against the float64 product with the same dequantized weights: {} of the {} outputs are NaN or "
          "Inf, so no error is measured; the float64 product has the same value at {} of them (a NaN or "
          "Inf in X or the bias reaches its row's outputs)\n",
          acc.nonfinite, r.m * w.n, acc.nonfinite - acc.nonfinite_apart);
    }
    fmt::print("wrote {} ([{}, {}] {})\n", o->out, r.m, w.n,
               r.dtype == recipes::OutType::F16 ? "float16" : "float32 holding bf16 values");
  });
}

}  // namespace dql::cli
