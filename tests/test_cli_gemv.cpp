// The gemv command run as a user runs it, on the CPU twin: every format with the paths that read
// it, the float64 check, the output file, the epilogue, and bad input refused with nothing written.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "npy_file.hpp"
#include "program.hpp"

namespace {

namespace fs = std::filesystem;

using dql::test::Run;

Run run(const std::string& args) { return dql::test::run_program(DQL_PROGRAM, args, DQL_TEST_TMPDIR); }

nlohmann::json run_json(const std::string& args) {
  const Run r = run(args);
  INFO("dequant-lab ", args, "\nstderr: ", r.err);
  REQUIRE(r.status == 0);
  return nlohmann::json::parse(r.out);
}

// Bad input: status 2, nothing on stdout, one sentence on stderr.
std::string refused(const std::string& args) {
  const Run r = run(args);
  INFO("dequant-lab ", args, "\nstderr: ", r.err);
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK(!r.err.empty());
  CHECK(r.err.find('\n') == r.err.size() - 1);
  return r.err;
}

std::string tmp(const std::string& name) {
  const std::string d = std::string(DQL_TEST_TMPDIR) + "/gemv_" + name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

bool exists(const std::string& p) { return fs::exists(p); }

std::string bytes_of(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// ---- .npy in and out (version 1 headers, little-endian, as the program writes them) ----------

void write_npy(const std::string& path, const char* descr, const std::vector<int64_t>& shape,
               const void* data, size_t bytes) {
  dql::test::write_npy_text(path, descr, dql::test::npy_shape_text(shape), data, bytes);
}

void write_f32(const std::string& path, const std::vector<int64_t>& shape, const std::vector<float>& v) {
  write_npy(path, "<f4", shape, v.data(), v.size() * 4);
}

double half_value(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  const double v = e == 0    ? std::ldexp(m, -24)
                   : e == 31 ? (m ? NAN : INFINITY)
                             : std::ldexp(1024 + m, e - 25);
  return (h & 0x8000) ? -v : v;
}

uint16_t half_bits(float f) {  // exact for the values the tests give (small integers and halves)
  for (uint32_t b = 0; b < 0x10000; ++b) {
    if (half_value(static_cast<uint16_t>(b)) == static_cast<double>(f)) return static_cast<uint16_t>(b);
  }
  FAIL("not an fp16 value");
  return 0;
}

struct Array {
  std::string descr;
  std::vector<int64_t> shape;
  std::vector<double> values;
};

// A float16 or float32 .npy as doubles.
Array read_npy(const std::string& path) {
  const std::string b = bytes_of(path);
  REQUIRE(b.size() > 10);
  REQUIRE(b.compare(0, 6, "\x93NUMPY") == 0);
  const size_t len = static_cast<unsigned char>(b[8]) | (static_cast<unsigned char>(b[9]) << 8);
  const std::string h = b.substr(10, len);
  Array a;
  const size_t d = h.find('\'', h.find(':', h.find("'descr'"))) + 1;
  a.descr = h.substr(d, h.find('\'', d) - d);
  const size_t open = h.find('(', h.find("'shape'")), close = h.find(')', open);
  const std::string dims = h.substr(open + 1, close - open - 1);
  for (size_t p = 0; p < dims.size();) {
    if (dims[p] == ' ' || dims[p] == ',') {
      ++p;
      continue;
    }
    size_t e = p;
    while (e < dims.size() && dims[e] >= '0' && dims[e] <= '9') ++e;
    a.shape.push_back(std::stoll(dims.substr(p, e - p)));
    p = e;
  }
  const char* data = b.data() + 10 + len;
  const size_t bytes = b.size() - 10 - len;
  if (a.descr == "<f2") {
    for (size_t i = 0; i < bytes / 2; ++i) {
      uint16_t v;
      std::memcpy(&v, data + 2 * i, 2);
      a.values.push_back(half_value(v));
    }
  } else {
    REQUIRE(a.descr == "<f4");
    for (size_t i = 0; i < bytes / 4; ++i) {
      float v;
      std::memcpy(&v, data + 4 * i, 4);
      a.values.push_back(v);
    }
  }
  return a;
}

// Deterministic normal(0, sigma) values (splitmix64 and Box-Muller).
std::vector<float> normal(size_t n, uint64_t seed, double sigma) {
  std::vector<float> v(n);
  uint64_t s = seed;
  const auto next = [&] {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (static_cast<double>((z ^ (z >> 31)) >> 11) + 0.5) / 9007199254740992.0;
  };
  for (size_t i = 0; i < n; ++i) {
    const double u = next(), w = next();
    v[i] = static_cast<float>(sigma * std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * w));
  }
  return v;
}

constexpr int64_t N = 64, K = 256, M = 3;

// W [N, K] and X [M, K] as .npy in `dir`, and X W^T in float64 from the float32 values.
struct Inputs {
  std::vector<float> w, x;
  std::vector<double> y;
};

Inputs write_inputs(const std::string& dir) {
  Inputs in{normal(N * K, 1, 0.02), normal(M * K, 2, 1.0), {}};
  write_f32(dir + "/w.npy", {N, K}, in.w);
  write_f32(dir + "/x.npy", {M, K}, in.x);
  in.y.assign(M * N, 0.0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k)
        in.y[m * N + n] += static_cast<double>(in.x[m * K + k]) * in.w[n * K + k];
  return in;
}

double rel_l2(const std::vector<double>& a, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) num += (a[i] - ref[i]) * (a[i] - ref[i]), den += ref[i] * ref[i];
  return std::sqrt(num / den);
}

std::string gemv_args(const std::string& q, const std::string& x, const std::string& out,
                      const std::string& more) {
  return "gemv --dir " + q + " --x " + x + " --out " + out + " --backend cpu " + more;
}

}  // namespace

TEST_CASE("gemv on the CPU twin: each format through the paths that read it, checked in float64") {
  const std::string d = tmp("formats");
  const Inputs in = write_inputs(d);
  struct Format {
    const char* name;
    const char* quant;  // quant options
    std::vector<const char*> paths;
    bool bf16;               // the format's kernels take bf16 activations
    double against_float_w;  // rel L2 against X W^T with the unquantized weights: the quantization error
  };
  const std::vector<Format> formats = {
      {"ft4", "--scheme int4-sym --group 128 --layout ft", {"fast", "naive", "cublas"}, true, 0.2},
      {"ft8", "--scheme int8-sym --layout ft", {"fast", "naive", "cublas"}, true, 0.02},
      {"awq", "--scheme int4-asym --group 128", {"fast", "cublas"}, false, 0.2},
      {"nf4", "--scheme nf4 --blocksize 64", {"fast", "cublas"}, false, 0.2},
      {"int8", "--scheme int8-sym --group 64", {"online", "cublas"}, false, 0.03},
  };
  for (const Format& f : formats) {
    const std::string q = d + "/" + f.name;
    REQUIRE(run("quant " + std::string(f.quant) + " --in " + d + "/w.npy --out-dir " + q + " --backend cpu")
                .status == 0);
    for (const char* dtype : {"fp16", "bf16"}) {
      const bool f16 = std::string(dtype) == "fp16";
      if (!f16 && !f.bf16 && std::string(f.name) != "int8") continue;
      for (const char* path : f.paths) {
        if (!f16 && std::string(path) == "cublas" && !f.bf16) continue;  // the dequant recipe is fp16 only
        const std::string out = q + "/y_" + path + "_" + dtype + ".npy";
        CAPTURE(f.name);
        CAPTURE(path);
        CAPTURE(dtype);
        const auto j = run_json(gemv_args(
            q, d + "/x.npy", out, std::string("--check --json --path ") + path + " --dtype " + dtype));
        CHECK(j["m"] == M);
        CHECK(j["n"] == N);
        CHECK(j["k"] == K);
        CHECK(j["path"] == path);
        CHECK(j["dtype"] == dtype);
        CHECK(j["backend"] == "cpu");
        CHECK(j["out"] == out);
        const double err = j["rel_l2"].get<double>();
        CHECK(j["max_abs"].get<double>() >= 0.0);
        if (std::string(path) == "online") {
          // int8 activations per block of 64 add their own error (about 255 steps over each block's range).
          CHECK(err > 1e-3);
          CHECK(err < 2e-2);
        } else {
          CHECK(err < (f16 ? 1e-3 : 1e-2));
        }
        const Array y = read_npy(out);
        CHECK(y.descr == (f16 ? "<f2" : "<f4"));
        CHECK(y.shape == std::vector<int64_t>{M, N});
        REQUIRE(y.values.size() == static_cast<size_t>(M * N));
        // Independent of the program's own check: near the product with the unquantized weights.
        CHECK(rel_l2(y.values, in.y) < f.against_float_w);
      }
      // fast and naive compute the same values the same way: the same file.
      if (std::string(f.name).rfind("ft", 0) == 0) {
        const std::string a = bytes_of(q + "/y_fast_" + dtype + ".npy"),
                          b = bytes_of(q + "/y_naive_" + dtype + ".npy");
        CHECK(!a.empty());
        CHECK(a == b);
      }
    }
  }
}

TEST_CASE("gemv: X as [K], float16 or float64, and the human table") {
  const std::string d = tmp("inputs");
  const Inputs in = write_inputs(d);
  const std::string q = d + "/q";
  REQUIRE(run("quant --scheme int4-sym --layout ft --in " + d + "/w.npy --out-dir " + q + " --backend cpu")
              .status == 0);
  // One row as [K] in three dtypes holding the same fp16 values: the same output.
  std::vector<float> x(in.x.begin(), in.x.begin() + K);
  for (float& v : x) v = std::round(v * 8.0f) / 8.0f;  // exact in fp16
  std::vector<uint16_t> h(K);
  std::vector<double> f64(K);
  for (int64_t i = 0; i < K; ++i) h[i] = half_bits(x[i]), f64[i] = x[i];
  write_f32(d + "/x32.npy", {K}, x);
  write_npy(d + "/x16.npy", "<f2", {K}, h.data(), h.size() * 2);
  write_npy(d + "/x64.npy", "<f8", {1, K}, f64.data(), f64.size() * 8);
  for (const char* name : {"x32", "x16", "x64"}) {
    const auto j = run_json(gemv_args(q, d + "/" + name + ".npy", d + "/y_" + name + ".npy", "--json"));
    CHECK(j["m"] == 1);
    CHECK(!j.contains("rel_l2"));
    CHECK(j["launches"] == nlohmann::json::array());  // the CPU twin: no kernels
  }
  CHECK(read_npy(d + "/y_x32.npy").shape == std::vector<int64_t>{1, N});
  CHECK(bytes_of(d + "/y_x32.npy") == bytes_of(d + "/y_x16.npy"));
  CHECK(bytes_of(d + "/y_x32.npy") == bytes_of(d + "/y_x64.npy"));

  const Run r = run(gemv_args(q, d + "/x.npy", d + "/y.npy", "--check"));
  REQUIRE(r.status == 0);
  CHECK(r.out.find("CPU twin") != std::string::npos);
  CHECK(r.out.find("int4-sym group 128, ft layout") != std::string::npos);
  CHECK(r.out.find("relative L2 error") != std::string::npos);
  CHECK(r.out.find("launched") == std::string::npos);  // a GPU's call lists its kernels; the twin has none
  CHECK(r.out.find("wrote " + d + "/y.npy ([3, 64] float16)") != std::string::npos);
}

TEST_CASE("gemv epilogue: bias, relu and clamp") {
  const std::string d = tmp("epilogue");
  write_inputs(d);
  const std::string q = d + "/q";
  REQUIRE(run("quant --scheme int4-sym --layout ft --in " + d + "/w.npy --out-dir " + q + " --backend cpu")
              .status == 0);
  std::vector<float> bias(N);
  for (int64_t n = 0; n < N; ++n) bias[n] = static_cast<float>(n % 8) * 0.125f - 0.5f;
  write_f32(d + "/b.npy", {N}, bias);

  const Array plain = [&] {
    run_json(gemv_args(q, d + "/x.npy", d + "/y.npy", "--json"));
    return read_npy(d + "/y.npy");
  }();
  const auto j =
      run_json(gemv_args(q, d + "/x.npy", d + "/yr.npy", "--bias " + d + "/b.npy --act relu --check --json"));
  CHECK(j["rel_l2"].get<double>() < 1e-3);
  const Array relu = read_npy(d + "/yr.npy");
  REQUIRE(relu.values.size() == plain.values.size());
  size_t zeros = 0, positive = 0;
  for (size_t i = 0; i < relu.values.size(); ++i) {
    CHECK(relu.values[i] >= 0.0);
    const double want = std::max(0.0, plain.values[i] + bias[i % N]);
    CHECK(std::fabs(relu.values[i] - want) <= 2e-3 * (1.0 + std::fabs(want)));
    zeros += relu.values[i] == 0.0;
    positive += relu.values[i] > 0.0;
  }
  CHECK(zeros > 10);  // both sides of the relu are exercised
  CHECK(positive > 10);

  const auto c =
      run_json(gemv_args(q, d + "/x.npy", d + "/yc.npy", "--clamp=-0.25,0.5 --dtype bf16 --check --json"));
  CHECK(c["rel_l2"].get<double>() < 1e-2);
  const Array clamped = read_npy(d + "/yc.npy");
  size_t lo = 0, hi = 0;
  for (double v : clamped.values) {
    CHECK(v >= -0.25);
    CHECK(v <= 0.5);
    lo += v == -0.25;
    hi += v == 0.5;
  }
  CHECK(lo > 0);
  CHECK(hi > 0);
  CHECK(run(gemv_args(q, d + "/x.npy", d + "/yc2.npy", "--clamp -1,1 --act silu")).status == 0);
}

TEST_CASE("gemv: the format comes from the files, and a second quant into the folder replaces the first") {
  const std::string d = tmp("mixed");
  write_inputs(d);
  const std::string q = d + "/q";
  REQUIRE(run("quant --scheme nf4 --in " + d + "/w.npy --out-dir " + q + " --backend cpu").status == 0);
  CHECK(run_json(gemv_args(q, d + "/x.npy", d + "/y.npy", "--json"))["format"] ==
        "nf4 blocksize 64, plain layout");
  // int4-sym plain into the same folder: its qweight.npy replaces NF4's codes, so NF4's absmax.npy goes
  // (left, it would describe int4 codes as NF4 ones).
  const Run r = run("quant --scheme int4-sym --in " + d + "/w.npy --out-dir " + q + " --backend cpu --json");
  REQUIRE(r.status == 0);
  CHECK(nlohmann::json::parse(r.out)["removed"] == nlohmann::json::array({"absmax.npy"}));
  CHECK(!exists(q + "/absmax.npy"));
  const auto j = run_json(gemv_args(q, d + "/x.npy", d + "/y2.npy", "--path cublas --check --json"));
  CHECK(j["format"] == "int4-sym group 128, plain layout");
  CHECK(j["rel_l2"].get<double>() < 1e-3);
  CHECK(refused(gemv_args(q, d + "/x.npy", d + "/y3.npy", "--scheme nf4")).find("absmax.npy") !=
        std::string::npos);
  CHECK(!exists(d + "/y3.npy"));
  // And back: NF4 again removes int4's scales.
  const Run b = run("quant --scheme nf4 --in " + d + "/w.npy --out-dir " + q + " --backend cpu");
  REQUIRE(b.status == 0);
  CHECK(b.out.find("removed scales.npy") != std::string::npos);
  CHECK(run_json(gemv_args(q, d + "/x.npy", d + "/y4.npy", "--json"))["format"] ==
        "nf4 blocksize 64, plain layout");
}

TEST_CASE("gemv: the format named in format.json where the files' shapes fit two") {
  const std::string d = tmp("named");
  const std::string q = d + "/q";
  // int4 in the mixed-GEMM layout at N G = 4 K (64 x 1024, group 64): qweight [16, 2048] and scales
  // [16, 64] also read as plain int4 [16, 4096] in groups of 64.
  REQUIRE(run("quant --scheme int4-sym --layout ft --group 64 --random normal --shape 64x1024 --out-dir " +
              q + " --backend cpu")
              .status == 0);
  write_f32(d + "/x.npy", {M, 1024}, normal(M * 1024, 3, 1.0));
  std::ifstream named(q + "/format.json");
  const nlohmann::json f = nlohmann::json::parse(named);
  CHECK(f == nlohmann::json{{"scheme", "int4-sym"}, {"layout", "ft"}, {"group", 64}, {"n", 64}, {"k", 1024}});
  CHECK(run_json(gemv_args(q, d + "/x.npy", d + "/y.npy", "--json"))["format"] ==
        "int4-sym group 64, ft layout");
  // Without it the shapes fit both: a sentence, and nothing written.
  fs::remove(q + "/format.json");
  CHECK(refused(gemv_args(q, d + "/x.npy", d + "/y2.npy", ""))
            .find("fit int4-sym (plain) and int4-sym (ft) by their shapes, and the folder has no format.json "
                  "to say which: name the format with --scheme and --layout") != std::string::npos);
  CHECK(!exists(d + "/y2.npy"));
  CHECK(
      run_json(gemv_args(q, d + "/x.npy", d + "/y2.npy", "--scheme int4-sym --layout ft --json"))["format"] ==
      "int4-sym group 64, ft layout");
  // A format.json that is not one quant writes is named, not guessed around.
  std::ofstream(q + "/format.json") << R"({"scheme": "int5", "layout": "ft"})";
  CHECK(refused(gemv_args(q, d + "/x.npy", d + "/y3.npy", "")).find("format.json' names no scheme 'int5'") !=
        std::string::npos);
  std::ofstream(q + "/format.json") << "int4-sym ft";
  CHECK(refused(gemv_args(q, d + "/x.npy", d + "/y3.npy", "")).find("format.json' is not JSON") !=
        std::string::npos);
  CHECK(!exists(d + "/y3.npy"));
}

TEST_CASE("gemv: bad input is refused with one sentence and nothing is written") {
  const std::string d = tmp("bad");
  write_inputs(d);
  const std::string ft = d + "/ft", awq = d + "/awq", i8 = d + "/i8";
  REQUIRE(run("quant --scheme int4-sym --layout ft --in " + d + "/w.npy --out-dir " + ft + " --backend cpu")
              .status == 0);
  REQUIRE(run("quant --scheme int4-asym --in " + d + "/w.npy --out-dir " + awq + " --backend cpu").status ==
          0);
  REQUIRE(run("quant --scheme int8-sym --group 64 --in " + d + "/w.npy --out-dir " + i8 + " --backend cpu")
              .status == 0);
  write_f32(d + "/x_k.npy", {2, 128}, normal(256, 3, 1.0));
  write_f32(d + "/x_m.npy", {300, K}, normal(300 * K, 4, 1.0));
  write_f32(d + "/b_n.npy", {N + 1}, normal(N + 1, 5, 1.0));
  std::vector<int32_t> ints(K, 1);
  write_npy(d + "/x_int.npy", "<i4", {K}, ints.data(), ints.size() * 4);
  const std::string y = d + "/y.npy", x = d + "/x.npy";

  CHECK(refused(gemv_args(d + "/nowhere", x, y, "")).find("not a folder") != std::string::npos);
  CHECK(refused(gemv_args(d, x, y, "")).find("qweight.npy") != std::string::npos);  // a folder without one
  CHECK(refused(gemv_args(ft, d + "/missing.npy", y, "")).find("cannot open") != std::string::npos);
  CHECK(refused(gemv_args(ft, d + "/x_k.npy", y, "")).find("X must be [M, 256]") != std::string::npos);
  CHECK(refused(gemv_args(ft, d + "/x_m.npy", y, "")).find("M = 300") != std::string::npos);
  CHECK(refused(gemv_args(ft, d + "/x_int.npy", y, "")).find("float16, float32") != std::string::npos);
  CHECK(refused(gemv_args(ft, x, y, "--bias " + d + "/b_n.npy")).find("one value per output channel") !=
        std::string::npos);
  CHECK(refused(gemv_args(ft, x, y, "--clamp 1")).find("LO,HI") != std::string::npos);
  CHECK(refused(gemv_args(ft, x, y, "--clamp a,b")).find("LO,HI") != std::string::npos);
  CHECK(refused(gemv_args(ft, x, y, "--clamp=1,-1")).find("empty") != std::string::npos);
  CHECK(refused(gemv_args(ft, x, y, "--act tanh")).find("none, relu, silu or gelu") != std::string::npos);
  CHECK(refused(gemv_args(ft, x, y, "--path turbo")).find("fast, naive, online or cublas") !=
        std::string::npos);
  CHECK(refused(gemv_args(ft, x, y, "--dtype fp8")).find("fp16 or bf16") != std::string::npos);
  CHECK(refused(gemv_args(ft, x, y, "--scheme int4-sym")).find("scales.npy") != std::string::npos);
  // The engine's sentences on what each path reads.
  CHECK(refused(gemv_args(ft, x, y, "--path online")).find("plain int8") != std::string::npos);
  CHECK(refused(gemv_args(awq, x, y, "--path naive")).find("mixed-GEMM layout") != std::string::npos);
  CHECK(refused(gemv_args(awq, x, y, "--dtype bf16")).find("fp16 activations") != std::string::npos);
  CHECK(refused(gemv_args(i8, x, y, "")).find("--path online") != std::string::npos);
  CHECK(refused(gemv_args(ft, x, d + "/no/such/dir/y.npy", "")).find("cannot write") != std::string::npos);
  // Scales that are not finite are refused before anything is computed (the mixed-GEMM layout's scales.npy
  // is float16 [K / G, N]).
  std::vector<uint16_t> scales(2 * N, 0x2C00);
  scales[N + 2] = 0x7C00;  // inf in group 1 of column 2
  write_npy(ft + "/scales.npy", "<f2", {2, N}, scales.data(), scales.size() * 2);
  CHECK(refused(gemv_args(ft, x, y, "")).find("scales.npy' holds inf at index 66 (row 1, column 2") !=
        std::string::npos);
  CHECK(!exists(y));
  CHECK(!exists(y + ".partial"));
}
