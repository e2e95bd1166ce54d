#include "tensor.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "kernels/bits/float.hpp"

namespace dql {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "float32";
    case DType::F16: return "float16";
    case DType::BF16: return "bfloat16";
    case DType::F64: return "float64";
    case DType::I32: return "int32";
    case DType::U32: return "uint32";
    case DType::I8: return "int8";
    case DType::U8: return "uint8";
  }
  return "?";
}

size_t dtype_size(DType t) {
  switch (t) {
    case DType::F64: return 8;
    case DType::F32:
    case DType::I32:
    case DType::U32: return 4;
    case DType::F16:
    case DType::BF16: return 2;
    case DType::I8:
    case DType::U8: return 1;
  }
  return 1;
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t checked_bytes(const std::vector<int64_t>& shape, size_t elem, const std::string& what) {
  // Bytes a process could hold: past 2^62 the count no longer fits the product's checks.
  constexpr int64_t kMost = int64_t{1} << 62;
  int64_t n = static_cast<int64_t>(elem);
  for (int64_t d : shape) {
    if (d < 0)
      throw Error(fmt::format("{} has a negative dimension ({}); dimensions are 0 or more", what, d));
    if (d != 0 && n > kMost / d) {
      std::string text;
      for (size_t i = 0; i < shape.size(); ++i) text += fmt::format("{}{}", i ? "x" : "", shape[i]);
      throw Error(fmt::format("{} has shape {}: more bytes than any memory holds", what, text));
    }
    n *= d;
  }
  return n;
}

std::string Tensor::shape_text() const {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(shape[i]);
  }
  return s.empty() ? "scalar" : s;
}

Tensor make_tensor(DType t, std::vector<int64_t> shape) {
  Tensor x;
  x.dtype = t;
  x.data.resize(static_cast<size_t>(checked_bytes(shape, dtype_size(t), "a matrix")));
  x.shape = std::move(shape);
  return x;
}

namespace {

std::vector<uint8_t> read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw Error(fmt::format("'{}' is a folder; a file is read here (give the file's path)", path));
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(fmt::format("cannot open '{}': check the path and that it is readable", path));
  std::vector<uint8_t> bytes;
  try {
    bytes.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  } catch (const std::ios_base::failure&) {
    throw Error(fmt::format("cannot read '{}': check that it is a regular, readable file", path));
  }
  if (f.bad()) throw Error(fmt::format("cannot read '{}': check that it is a regular, readable file", path));
  return bytes;
}

struct NpyType {
  const char* descr;
  DType dtype;
};
// '|V2' is how numpy saves 2-byte values it has no type for (ml_dtypes' bfloat16).
constexpr NpyType kNpyTypes[] = {{"<f4", DType::F32},  {"<f2", DType::F16}, {"<V2", DType::BF16},
                                 {"|V2", DType::BF16}, {"<f8", DType::F64}, {"<i4", DType::I32},
                                 {"<u4", DType::U32},  {"|i1", DType::I8},  {"|u1", DType::U8}};

const char* npy_descr(DType t) {
  switch (t) {
    case DType::BF16: return "|V2";
    default:
      for (const auto& n : kNpyTypes) {
        if (n.dtype == t) return n.descr;
      }
  }
  return "|u1";
}

// The value of 'key': ... in numpy's header dictionary (a Python literal).
std::string header_field(const std::string& h, const std::string& key, const std::string& path) {
  const size_t at = h.find("'" + key + "'");
  if (at == std::string::npos) {
    throw Error(fmt::format("'{}' is not a valid .npy file: its header has no '{}'", path, key));
  }
  size_t p = h.find(':', at);
  if (p == std::string::npos) throw Error(fmt::format("'{}' has a malformed .npy header", path));
  ++p;
  while (p < h.size() && h[p] == ' ') ++p;
  if (p < h.size() && (h[p] == '\'' || h[p] == '"')) {
    const size_t e = h.find(h[p], p + 1);
    return h.substr(p + 1, e - p - 1);
  }
  if (p < h.size() && h[p] == '(') return h.substr(p, h.find(')', p) - p + 1);
  size_t e = p;
  while (e < h.size() && h[e] != ',' && h[e] != '}') ++e;
  return h.substr(p, e - p);
}

}  // namespace

Tensor read_npy(const std::string& path) {
  const std::vector<uint8_t> bytes = read_file(path);
  static const char magic[] = "\x93NUMPY";
  if (bytes.size() < 10 || std::memcmp(bytes.data(), magic, 6) != 0) {
    throw Error(fmt::format("'{}' is not a .npy file (it does not start with the NumPy magic bytes)", path));
  }
  const int major = bytes[6];
  size_t header_len, offset;
  if (major == 1) {
    header_len = bytes[8] | (bytes[9] << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw Error(fmt::format("'{}' is a truncated .npy file", path));
    header_len = bytes[8] | (bytes[9] << 8) | (bytes[10] << 16) | (static_cast<size_t>(bytes[11]) << 24);
    offset = 12;
  } else {
    throw Error(fmt::format("'{}' is .npy format version {}; versions 1 to 3 are read", path, major));
  }
  if (offset + header_len > bytes.size()) throw Error(fmt::format("'{}' is a truncated .npy file", path));
  const std::string h(reinterpret_cast<const char*>(bytes.data() + offset), header_len);
  const std::string descr = header_field(h, "descr", path);
  const std::string order = header_field(h, "fortran_order", path);
  const std::string shape = header_field(h, "shape", path);
  Tensor t;
  bool known = false;
  for (const auto& n : kNpyTypes) {
    if (descr == n.descr) t.dtype = n.dtype, known = true;
  }
  if (!known) {
    throw Error(
        fmt::format("'{}' holds dtype '{}'; readable are float32, float16, bfloat16 (|V2), float64, "
                    "int32, uint32, int8 and uint8, little-endian",
                    path, descr));
  }
  if (order.find("True") != std::string::npos) {
    throw Error(fmt::format("'{}' is in Fortran order; save it in C order (np.ascontiguousarray)", path));
  }
  for (size_t p = 1; p < shape.size();) {
    while (p < shape.size() && (shape[p] == ' ' || shape[p] == ',')) ++p;
    if (p >= shape.size() || shape[p] == ')') break;
    size_t e = p;
    while (e < shape.size() && std::isdigit(static_cast<unsigned char>(shape[e]))) ++e;
    if (e == p) throw Error(fmt::format("'{}' has a malformed shape {} in its header", path, shape));
    int64_t d = 0;
    if (std::from_chars(shape.data() + p, shape.data() + e, d).ec != std::errc()) {
      throw Error(fmt::format("'{}' has a dimension past 2^63 in its shape {}", path, shape));
    }
    t.shape.push_back(d);
    p = e;
  }
  const size_t data_at = offset + header_len;
  const size_t need = static_cast<size_t>(checked_bytes(t.shape, dtype_size(t.dtype), "'" + path + "'"));
  if (bytes.size() - data_at != need) {
    throw Error(fmt::format("'{}' should hold {} bytes of data for shape {} {} but holds {}", path, need,
                            t.shape_text(), dtype_name(t.dtype), bytes.size() - data_at));
  }
  t.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(data_at), bytes.end());
  return t;
}

void write_npy(const std::string& path, const Tensor& t) {
  std::string shape = "(";
  for (size_t i = 0; i < t.shape.size(); ++i) shape += std::to_string(t.shape[i]) + ",";
  if (t.shape.size() > 1) shape.pop_back();
  shape += ")";
  std::string h =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", npy_descr(t.dtype), shape);
  const size_t total = 10 + h.size() + 1;
  h.append((64 - total % 64) % 64, ' ');
  h += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f) throw Error(fmt::format("cannot write '{}': check that its folder exists and is writable", path));
  const char head[10] = {'\x93',
                         'N',
                         'U',
                         'M',
                         'P',
                         'Y',
                         1,
                         0,
                         static_cast<char>(h.size() & 0xFF),
                         static_cast<char>(h.size() >> 8)};
  f.write(head, 10);
  f.write(h.data(), static_cast<std::streamsize>(h.size()));
  f.write(reinterpret_cast<const char*>(t.data.data()), static_cast<std::streamsize>(t.data.size()));
  if (!f) throw Error(fmt::format("writing '{}' failed (disk full?)", path));
}

void write_npy_atomic(const std::string& path, const Tensor& t) {
  const std::string tmp = path + ".partial";
  std::error_code ec;
  try {
    write_npy(tmp, t);
  } catch (...) {
    std::filesystem::remove(tmp, ec);
    throw;
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    const std::string why = ec.message();  // before the clean-up's own result replaces it
    std::filesystem::remove(tmp, ec);
    throw Error(fmt::format("cannot write '{}': {}", path, why));
  }
}

namespace {

struct SafeHeader {
  nlohmann::json json;
  size_t data_at;
  std::vector<uint8_t> bytes;
};

SafeHeader read_safe_header(const std::string& path) {
  SafeHeader s;
  s.bytes = read_file(path);
  if (s.bytes.size() < 8) throw Error(fmt::format("'{}' is too short to be a .safetensors file", path));
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | s.bytes[static_cast<size_t>(i)];
  if (n > s.bytes.size() - 8) {
    throw Error(
        fmt::format("'{}' is not a .safetensors file: its header length {} runs past the end", path, n));
  }
  try {
    s.json = nlohmann::json::parse(s.bytes.begin() + 8, s.bytes.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  } catch (const nlohmann::json::exception&) {
    throw Error(fmt::format("'{}' is not a .safetensors file: its header is not JSON", path));
  }
  if (!s.json.is_object())
    throw Error(fmt::format("'{}' has a .safetensors header that is not an object", path));
  s.data_at = 8 + n;
  return s;
}

}  // namespace

std::vector<std::string> safetensors_names(const std::string& path) {
  const SafeHeader s = read_safe_header(path);
  std::vector<std::string> names;
  for (auto it = s.json.begin(); it != s.json.end(); ++it) {
    if (it.key() != "__metadata__") names.push_back(it.key());
  }
  return names;
}

Tensor read_safetensors(const std::string& path, const std::string& name) {
  SafeHeader s = read_safe_header(path);
  if (!s.json.contains(name) || name == "__metadata__") {
    std::string some;
    int shown = 0;
    for (auto it = s.json.begin(); it != s.json.end() && shown < 5; ++it) {
      if (it.key() == "__metadata__") continue;
      some += (shown++ ? ", " : "") + it.key();
    }
    throw Error(fmt::format("'{}' has no tensor named '{}'; it has {}{}", path, name,
                            some.empty() ? "none" : some, s.json.size() > 6 ? ", ..." : ""));
  }
  const auto& e = s.json[name];
  if (!e.is_object() || !e.contains("dtype") || !e["dtype"].is_string()) {
    throw Error(fmt::format(
        "tensor '{}' in '{}' has a broken entry: an entry is an object with a dtype (a string), a shape and "
        "data offsets",
        name, path));
  }
  Tensor t;
  const std::string dt = e["dtype"].get<std::string>();
  if (dt == "F32")
    t.dtype = DType::F32;
  else if (dt == "F16")
    t.dtype = DType::F16;
  else if (dt == "BF16")
    t.dtype = DType::BF16;
  else if (dt == "I32")
    t.dtype = DType::I32;
  else if (dt == "I8")
    t.dtype = DType::I8;
  else if (dt == "U8")
    t.dtype = DType::U8;
  else
    throw Error(fmt::format("tensor '{}' in '{}' has dtype {}; readable are F32, F16, BF16, I32, I8 and U8",
                            name, path, dt));
  try {
    t.shape = e.at("shape").get<std::vector<int64_t>>();
    const auto off = e.at("data_offsets").get<std::vector<uint64_t>>();
    if (off.size() != 2 || off[1] < off[0] || off[1] > s.bytes.size() - s.data_at) throw Error("");
    const size_t need = static_cast<size_t>(checked_bytes(t.shape, dtype_size(t.dtype), "a tensor"));
    if (off[1] - off[0] != need) throw Error("");
    t.data.assign(s.bytes.begin() + static_cast<std::ptrdiff_t>(s.data_at + off[0]),
                  s.bytes.begin() + static_cast<std::ptrdiff_t>(s.data_at + off[1]));
  } catch (const std::exception&) {
    throw Error(
        fmt::format("tensor '{}' in '{}' has a broken entry: its shape, dtype and data offsets disagree "
                    "or run past the end of the file",
                    name, path));
  }
  return t;
}

Tensor to_f32_matrix(const Tensor& t, const std::string& what) {
  if (t.shape.size() != 2) {
    throw Error(fmt::format("{} has shape {}; a weight matrix must be 2-D [N, K] (output x input features)",
                            what, t.shape_text()));
  }
  if (t.shape[0] < 1 || t.shape[1] < 1) throw Error(fmt::format("{} is empty ({})", what, t.shape_text()));
  Tensor out = make_tensor(DType::F32, t.shape);
  float* o = out.as<float>();
  const int64_t n = t.numel();
  switch (t.dtype) {
    case DType::F32: std::memcpy(o, t.data.data(), t.data.size()); break;
    case DType::F16:
      for (int64_t i = 0; i < n; ++i)
        o[i] = static_cast<float>(bits::to_double(t.as<uint16_t>()[i], bits::kF16));
      break;
    case DType::BF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint32_t u = static_cast<uint32_t>(t.as<uint16_t>()[i]) << 16;
        std::memcpy(&o[i], &u, 4);
      }
      break;
    default:
      throw Error(fmt::format("{} holds {}; weights to quantize must be float32, float16 or bfloat16", what,
                              dtype_name(t.dtype)));
  }
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(o[i])) {
      throw Error(
          fmt::format("{} holds a non-finite value at element {} (row {}, column {}); weights must be finite",
                      what, i, i / t.shape[1], i % t.shape[1]));
    }
  }
  return out;
}

Tensor random_matrix(Distribution d, uint64_t seed, int64_t n, int64_t k) {
  Tensor t = make_tensor(DType::F32, {n, k});
  float* w = t.as<float>();
  // One generator per row keeps the matrix the same however many threads fill it.
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned th = 0; th < threads; ++th) {
    pool.emplace_back([=] {
      for (int64_t r = th; r < n; r += threads) {
        std::mt19937_64 g(seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(r));
        std::normal_distribution<float> normal(0.0f, 0.02f);
        std::uniform_real_distribution<float> uniform(-0.05f, 0.05f);
        std::uniform_real_distribution<float> coin(0.0f, 1.0f);
        for (int64_t c = 0; c < k; ++c) {
          float v = d == Distribution::Uniform ? uniform(g) : normal(g);
          if (d == Distribution::Outliers && coin(g) < 0.001f) v *= 20.0f;
          w[r * k + c] = v;
        }
      }
    });
  }
  for (auto& th : pool) th.join();
  return t;
}

}  // namespace dql
