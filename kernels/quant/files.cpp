#include "files.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "kernels/bits/float.hpp"

namespace dql {

namespace fs = std::filesystem;
using quant::Layout;
using quant::Scheme;

// The file that names a folder's format (files.hpp).
constexpr const char* kFormatFile = "format.json";

const char* scheme_name(Scheme s) {
  switch (s) {
    case Scheme::Int8Sym: return "int8-sym";
    case Scheme::Int4Sym: return "int4-sym";
    case Scheme::Int4Asym: return "int4-asym";
    case Scheme::Nf4: return "nf4";
  }
  return "?";
}

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::Plain: return "plain";
    case Layout::Awq: return "awq";
    case Layout::Ft: return "ft";
  }
  return "?";
}

std::optional<Scheme> scheme_of_name(std::string_view name) {
  for (Scheme s : {Scheme::Int8Sym, Scheme::Int4Sym, Scheme::Int4Asym, Scheme::Nf4})
    if (name == scheme_name(s)) return s;
  return std::nullopt;
}

std::optional<Layout> layout_of_name(std::string_view name) {
  for (Layout l : {Layout::Plain, Layout::Awq, Layout::Ft})
    if (name == layout_name(l)) return l;
  return std::nullopt;
}

std::optional<QuantSpec> read_format_file(const std::string& dir) {
  const fs::path path = fs::path(dir) / kFormatFile;
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  const auto refuse = [&](const std::string& why) {
    return Error(
        fmt::format("'{}' {}: it should hold what `dequant-lab quant` writes, e.g. {{\"scheme\": "
                    "\"int4-sym\", \"layout\": \"ft\", ...}}; remove it to have the format read "
                    "from the files' shapes",
                    path.string(), why));
  };
  std::ifstream in(path);
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception&) {
    throw refuse("is not JSON");
  }
  if (!j.is_object() || !j.contains("scheme") || !j.contains("layout") || !j["scheme"].is_string() ||
      !j["layout"].is_string())
    throw refuse("does not name a scheme and a layout");
  const auto scheme = scheme_of_name(j["scheme"].get<std::string>());
  const auto layout = layout_of_name(j["layout"].get<std::string>());
  if (!scheme) throw refuse(fmt::format("names no scheme '{}'", j["scheme"].get<std::string>()));
  if (!layout) throw refuse(fmt::format("names no layout '{}'", j["layout"].get<std::string>()));
  return QuantSpec{*scheme, *layout, 0};
}

namespace {

template <class T>
Tensor tensor_of(DType t, std::vector<int64_t> shape, const std::vector<T>& v) {
  Tensor x = make_tensor(t, std::move(shape));
  if (x.data.size() != v.size() * sizeof(T)) throw Error("internal error: a saved array has the wrong size");
  std::memcpy(x.data.data(), v.data(), x.data.size());
  return x;
}

template <class T>
std::vector<T> values_of(const Tensor& t) {
  std::vector<T> v(t.data.size() / sizeof(T));
  std::memcpy(v.data(), t.data.data(), v.size() * sizeof(T));
  return v;
}

void expect(const Tensor& t, DType dt, size_t dims, const std::string& path, const std::string& wanted) {
  if (t.dtype != dt || t.shape.size() != dims) {
    throw Error(fmt::format("'{}' is {} [{}], but this format stores {}", path, dtype_name(t.dtype),
                            t.shape_text(), wanted));
  }
}

// The first value of a [rows, cols] array of scales or absmax that the dequantization cannot use (NaN
// or infinite; for absmax also below 0), with where it is and what the file must hold.
// `value` reads element i of `v` as a double (fp16 bits, or a float as it stands).
template <class T, class Value>
void check_params(const std::vector<T>& v, Value value, const Tensor& t, const std::string& path,
                  bool absmax) {
  for (size_t i = 0; i < v.size(); ++i) {
    const double x = value(v[i]);
    if (std::isfinite(x) && !(absmax && x < 0.0)) continue;
    const int64_t cols = t.shape[1];
    const std::string what = std::isnan(x)   ? "NaN"
                             : std::isinf(x) ? (x < 0 ? "-inf" : "inf")
                                             : fmt::format("{}", x);
    throw Error(fmt::format(
        "'{}' holds {} at index {} (row {}, column {} of its {} values): {}", path, what, i,
        static_cast<int64_t>(i) / cols, static_cast<int64_t>(i) % cols, t.shape_text(),
        absmax ? "NF4 absmax values must be finite and 0 or more" : "scales must be finite fp16 values"));
  }
}

std::vector<uint32_t> words_of_bytes(const Tensor& t) {
  if (t.data.size() % 4 != 0) throw Error("a packed array's size is not a whole number of 32-bit words");
  return values_of<uint32_t>(t);
}

}  // namespace

Tensor plain_packed_tensor(int bits, int64_t n, int64_t k, const std::vector<uint32_t>& words) {
  return bits == 8 ? tensor_of(DType::I8, {n, k}, words) : tensor_of(DType::U8, {n, k / 2}, words);
}

Tensor ft_packed_tensor(int bits, int64_t n, int64_t k, const std::vector<uint32_t>& words) {
  const int64_t inter = bits == 4 ? 4 : 2;
  return tensor_of(DType::U8, {n / inter, k * inter * bits / 8}, words);
}

PackedFile read_plain_packed(const std::string& path, int bits) {
  const Tensor t = read_npy(path);
  PackedFile p;
  if (bits == 8) {
    expect(t, DType::I8, 2, path, "int8 [N, K] for plain int8");
    p.n = t.shape[0], p.k = t.shape[1];
  } else {
    expect(t, DType::U8, 2, path,
           "uint8 [N, K / 2] for plain int4 (two elements a byte, the first in the low nibble)");
    p.n = t.shape[0], p.k = 2 * t.shape[1];
  }
  if (p.k % 8 != 0) throw Error(fmt::format("'{}' has K = {}; K must be a multiple of 8", path, p.k));
  p.words = words_of_bytes(t);
  return p;
}

PackedFile read_ft_packed(const std::string& path, int bits) {
  const Tensor t = read_npy(path);
  const int64_t inter = bits == 4 ? 4 : 2;
  expect(t, DType::U8, 2, path,
         fmt::format("uint8 [N / {0}, K * {0} * {1} / 8] for the int{1} mixed-GEMM layout", inter, bits));
  PackedFile p;
  p.n = t.shape[0] * inter;
  p.k = t.shape[1] * 8 / (inter * bits);
  if (t.shape[1] * 8 % (inter * bits) != 0)
    throw Error(fmt::format("'{}' has a row length that no K gives", path));
  p.words = words_of_bytes(t);
  return p;
}

std::vector<std::string> save_quantized(const std::string& dir, const QuantizedMatrix& q) {
  const int bits = quant::scheme_bits(q.spec.scheme);
  const int64_t n = q.n, k = q.k, groups = k / q.spec.group;
  std::vector<std::pair<std::string, Tensor>> files;
  switch (q.spec.layout) {
    case Layout::Plain: files.emplace_back("qweight.npy", plain_packed_tensor(bits, n, k, q.qwords)); break;
    case Layout::Awq: files.emplace_back("qweight.npy", tensor_of(DType::I32, {k, n / 8}, q.qwords)); break;
    case Layout::Ft: files.emplace_back("qweight.npy", ft_packed_tensor(bits, n, k, q.qwords)); break;
  }
  if (q.spec.scheme == Scheme::Nf4) {
    files.emplace_back("absmax.npy", tensor_of(DType::F32, {n, groups}, q.absmax));
  } else if (q.spec.layout == Layout::Plain) {
    files.emplace_back("scales.npy", tensor_of(DType::F16, {n, groups}, q.scales));
  } else {
    files.emplace_back("scales.npy", tensor_of(DType::F16, {groups, n}, q.scales));
  }
  if (q.spec.layout == Layout::Awq)
    files.emplace_back("zeros.npy", tensor_of(DType::I32, {groups, n / 8}, q.qzeros));

  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(fmt::format("cannot create the folder '{}': {}", dir, ec.message()));
  std::vector<std::string> written;
  const nlohmann::json format = {{"scheme", scheme_name(q.spec.scheme)},
                                 {"layout", layout_name(q.spec.layout)},
                                 {q.spec.scheme == Scheme::Nf4 ? "blocksize" : "group", q.spec.group},
                                 {"n", n},
                                 {"k", k}};
  try {
    for (const auto& [name, t] : files) {
      const std::string tmp = (fs::path(dir) / ("." + name + ".partial")).string();
      write_npy(tmp, t);
      written.push_back(tmp);
    }
    const std::string tmp = (fs::path(dir) / (std::string(".") + kFormatFile + ".partial")).string();
    std::ofstream out(tmp);
    out << format.dump(1) << "\n";
    written.push_back(tmp);
    if (!out.flush()) throw Error(fmt::format("cannot write '{}'", tmp));
  } catch (...) {
    for (const auto& w : written) fs::remove(w, ec);
    throw;
  }
  std::vector<std::string> names;
  for (const auto& f : files) names.push_back(f.first);
  names.emplace_back(kFormatFile);
  for (const std::string& name : names) {
    fs::rename(fs::path(dir) / ("." + name + ".partial"), fs::path(dir) / name, ec);
    if (ec) throw Error(fmt::format("cannot write '{}': {}", (fs::path(dir) / name).string(), ec.message()));
  }
  // qweight.npy is every format's: an earlier format's other files would now describe these codes.
  std::vector<std::string> removed;
  for (const char* other : {"scales.npy", "zeros.npy", "absmax.npy"}) {
    const bool ours =
        std::any_of(files.begin(), files.end(), [&](const auto& f) { return f.first == other; });
    if (!ours && fs::remove(fs::path(dir) / other, ec)) removed.emplace_back(other);
  }
  return removed;
}

QuantizedMatrix load_quantized(const std::string& dir, QuantSpec spec) {
  const int bits = quant::scheme_bits(spec.scheme);
  const std::string qpath = (fs::path(dir) / "qweight.npy").string();
  QuantizedMatrix q;
  q.spec = spec;
  std::string params_path;
  Tensor params;
  if (spec.layout == Layout::Awq) {
    const Tensor t = read_npy(qpath);
    expect(t, DType::I32, 2, qpath, "int32 [K, N / 8] (AWQ qweight)");
    q.k = t.shape[0], q.n = t.shape[1] * 8;
    q.qwords = values_of<uint32_t>(t);
  } else {
    const PackedFile p =
        spec.layout == Layout::Ft ? read_ft_packed(qpath, bits) : read_plain_packed(qpath, bits);
    q.n = p.n, q.k = p.k, q.qwords = p.words;
  }
  // Files that disagree in size were most often written as another format than the one asked for.
  const std::string hint =
      fmt::format(" (were the files in '{}' written with another --scheme or --layout?)", dir);
  int64_t groups;
  if (spec.scheme == Scheme::Nf4) {
    params_path = (fs::path(dir) / "absmax.npy").string();
    params = read_npy(params_path);
    expect(params, DType::F32, 2, params_path, "float32 [N, K / blocksize] (NF4 absmax)");
    if (params.shape[0] != q.n)
      throw Error(
          fmt::format("'{}' has {} rows; qweight.npy has N = {}{}", params_path, params.shape[0], q.n, hint));
    groups = params.shape[1];
    q.absmax = values_of<float>(params);
    check_params(
        q.absmax, [](float a) { return static_cast<double>(a); }, params, params_path, true);
  } else {
    params_path = (fs::path(dir) / "scales.npy").string();
    params = read_npy(params_path);
    const bool by_row = spec.layout == Layout::Plain;
    expect(params, DType::F16, 2, params_path, by_row ? "float16 [N, K / G]" : "float16 [K / G, N]");
    const int64_t nn = by_row ? params.shape[0] : params.shape[1];
    groups = by_row ? params.shape[1] : params.shape[0];
    if (nn != q.n)
      throw Error(
          fmt::format("'{}' covers N = {} columns; qweight.npy has N = {}{}", params_path, nn, q.n, hint));
    q.scales = values_of<uint16_t>(params);
    check_params(
        q.scales, [](uint16_t h) { return bits::to_double(h, bits::kF16); }, params, params_path, false);
  }
  if (groups < 1 || q.k % groups != 0) {
    throw Error(fmt::format("'{}' has {} groups per row, which does not divide K = {}{}", params_path, groups,
                            q.k, hint));
  }
  const int group = static_cast<int>(q.k / groups);
  if (spec.group != 0 && spec.group != group) {
    throw Error(
        fmt::format("the files hold groups of {} along K, not {}: drop --group / --blocksize or give {}",
                    group, spec.group, group));
  }
  q.spec.group = group;
  try {
    check_quant_shape(q.spec, q.n, q.k);
  } catch (const Error& e) {
    throw Error(fmt::format("the files in '{}' describe a {}x{} matrix in groups of {}: {}{}", dir, q.n, q.k,
                            group, e.what(), hint));
  }
  if (spec.layout == Layout::Awq) {
    const std::string zpath = (fs::path(dir) / "zeros.npy").string();
    const Tensor z = read_npy(zpath);
    expect(z, DType::I32, 2, zpath, "int32 [K / G, N / 8] (AWQ qzeros)");
    if (z.shape[0] != groups || z.shape[1] * 8 != q.n) {
      throw Error(
          fmt::format("'{}' is [{}], but the weights need [{}, {}]", zpath, z.shape_text(), groups, q.n / 8));
    }
    q.qzeros = values_of<uint32_t>(z);
  }
  return q;
}

}  // namespace dql
