// The GPU suite: the primitives and every recipe compiled for the device must give the host's
// bits, on 2^26 inputs each. Without a GPU it says so and reports itself skipped (exit 77).
#define DOCTEST_CONFIG_IMPLEMENT
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "../gemv_cases.hpp"
#include "gpu_kernels.hpp"
#include "kernels/backend/backend.hpp"
#include "kernels/backend/device_array.hpp"
#include "kernels/backend/host_steps.hpp"
#include "kernels/bench/engine.hpp"
#include "kernels/bits/arith.hpp"
#include "kernels/bits/lop3.hpp"
#include "kernels/bits/prmt.hpp"
#include "kernels/cuda/gemv.hpp"
#include "kernels/cuda/launch.hpp"
#include "kernels/cuda/launch_log.hpp"
#include "kernels/gemv/split.hpp"
#include "kernels/recipes/catalog.hpp"
#include "kernels/sass/sass.hpp"

using namespace dql;
using gpu_test::Prim;

namespace {

// Inputs per primitive and per recipe: 2^26, or 2^DQL_GPU_TEST_LOG2 (a shorter run under
// compute-sanitizer).
size_t kInputs = size_t{1} << 26;
constexpr size_t kChunk = size_t{1} << 24;

uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Runs f(begin, end) over [0, n) on every core.
void parallel_for(size_t n, const std::function<void(size_t, size_t)>& f) {
  const size_t threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  const size_t step = (n + threads - 1) / threads;
  for (size_t t = 0; t < threads; ++t) {
    const size_t b = t * step, e = std::min(n, b + step);
    if (b < e) pool.emplace_back(f, b, e);
  }
  for (auto& th : pool) th.join();
}

// Random registers; for float operands half of them share the exponent of `a` (close
// magnitudes: cancellation, ties) and some are specials.
struct Operands {
  std::vector<uint32_t> a, b, c;
};
Operands make_operands(uint64_t stream, size_t base, size_t n) {
  Operands o{std::vector<uint32_t>(n), std::vector<uint32_t>(n), std::vector<uint32_t>(n)};
  parallel_for(n, [&](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) {
      const uint64_t r = splitmix((stream << 40) ^ (base + i));
      const uint64_t s = splitmix(r);
      uint32_t a = static_cast<uint32_t>(r), b = static_cast<uint32_t>(r >> 32), c = static_cast<uint32_t>(s);
      if (s & (1ull << 40)) b = (a & 0xFC00FC00u) ^ (b & 0x83FF83FFu);              // fp16 lanes near a's
      if (s & (1ull << 41)) c = (a & 0xFF80FF80u) ^ (c & 0x807F807Fu);              // bf16 lanes near a's
      if ((s >> 42) % 64 == 0) a = (s & (1ull << 48)) ? 0x7C00FC00u : 0x7FFF0000u;  // inf, NaN, zero
      o.a[i] = a, o.b[i] = b, o.c[i] = c;
    }
  });
  return o;
}

uint32_t host_primitive(Prim p, uint32_t param, uint32_t a, uint32_t b, uint32_t c) {
  switch (p) {
    case Prim::Lop3: return bits::soft_lop3(a, b, c, param);
    case Prim::Prmt: return bits::soft_prmt(a, b, c, static_cast<bits::PrmtMode>(param));
    case Prim::AddF16x2: return bits::soft_add_f16x2(a, b);
    case Prim::SubF16x2: return bits::soft_sub_f16x2(a, b);
    case Prim::MulF16x2: return bits::soft_mul_f16x2(a, b);
    case Prim::FmaF16x2: return bits::soft_fma_f16x2(a, b, c);
    case Prim::FmaBF16x2: return bits::soft_fma_bf16x2(a, b, c);
    case Prim::SubF32: return bits::soft_sub_f32(a, b);
    case Prim::MulF32: return bits::soft_mul_f32(a, b);
    case Prim::CvtF16F32: return bits::soft_cvt_f16_f32(a);
    case Prim::CvtF16x2F32: return bits::soft_cvt_f16x2_f32(a, b);
    case Prim::CvtF16S32: return bits::soft_cvt_f16_s32(static_cast<int32_t>(a));
  }
  return 0;
}

struct Mismatches {
  std::atomic<size_t> count{0};
  std::atomic<size_t> first{SIZE_MAX};
  void note(size_t i) {
    ++count;
    size_t f = first.load();
    while (i < f && !first.compare_exchange_weak(f, i)) {
    }
  }
};

// Compares `n` device results per parameter against the host, chunk by chunk.
size_t check_primitive(const char* name, Prim p, uint32_t param, size_t n, uint64_t stream) {
  size_t bad = 0;
  for (size_t base = 0; base < n; base += kChunk) {
    const size_t m = std::min(kChunk, n - base);
    const Operands o = make_operands(stream, base, m);
    std::vector<uint32_t> got(m);
    const std::string err =
        gpu_test::run_primitive(p, param, o.a.data(), o.b.data(), o.c.data(), m, got.data());
    REQUIRE_MESSAGE(err.empty(), err);
    Mismatches mm;
    parallel_for(m, [&](size_t lo, size_t hi) {
      for (size_t i = lo; i < hi; ++i) {
        if (got[i] != host_primitive(p, param, o.a[i], o.b[i], o.c[i])) mm.note(i);
      }
    });
    if (mm.count) {
      const size_t i = mm.first;
      std::printf("  %s (param 0x%x): a=0x%08x b=0x%08x c=0x%08x device 0x%08x host 0x%08x\n", name, param,
                  o.a[i], o.b[i], o.c[i], got[i], host_primitive(p, param, o.a[i], o.b[i], o.c[i]));
    }
    bad += mm.count;
  }
  return bad;
}

// The CUDA backend, or the test stops with the reason it could not open.
std::unique_ptr<Backend> open_gpu() {
  std::string why;
  auto gpu = make_cuda_backend(&why);
  REQUIRE_MESSAGE(gpu != nullptr, why);
  return gpu;
}

// The template arguments of the kernel `base` in a launch's signature (sass::template_args of its short
// name); none where the signature names another kernel.
std::vector<std::string> template_args(const std::string& signature, std::string_view base) {
  const std::string name = sass::short_name(signature);
  std::string_view named;
  const std::vector<std::string_view> args = sass::template_args(name, &named);
  return named == base ? std::vector<std::string>(args.begin(), args.end()) : std::vector<std::string>{};
}

// The properties of the device the backend opens (DeviceGemv launches for it).
cudaDeviceProp device_prop() {
  cudaDeviceProp prop{};
  REQUIRE(cudaGetDeviceProperties(&prop, 0) == cudaSuccess);
  return prop;
}

// An n x k matrix of normal values, quantized int4 symmetric in groups of 128 in the mixed-GEMM
// layout: the weights most GEMV / GEMM cases launch on.
QuantizedMatrix int4_g128(Backend& cpu, uint64_t seed, int64_t n, int64_t k) {
  return cpu.quantize(random_matrix(Distribution::Normal, seed, n, k),
                      {quant::Scheme::Int4Sym, quant::Layout::Ft, 128});
}

// A quantized matrix's words and scales on the device, and the weights that name them (the
// mixed-GEMM layout's; the other formats' arrays stay on the host).
struct DeviceWeights {
  DeviceArray<uint32_t> q;
  DeviceArray<uint16_t> scales;
  DeviceArray<uint32_t> qzeros;  // AWQ's
  DeviceArray<float> absmax;     // NF4's
  gemv::Weights w;

  explicit DeviceWeights(const QuantizedMatrix& m)
      : q(m.qwords), scales(m.scales), qzeros(m.qzeros), absmax(m.absmax), w(weights_of(m)) {
    w.q = q.get();
    w.scales = scales.get();
    w.qzeros = m.qzeros.empty() ? nullptr : qzeros.get();
    w.absmax = m.absmax.empty() ? nullptr : absmax.get();
  }
};

// One GEMV request on the device: X, the bias, Y and a zeroed workspace, and the launch that uses
// them on the device `prop` names.
struct DeviceGemv {
  DeviceArray<uint16_t> dx, db, y;
  size_t zeroed;  // the workspace's bytes the kernels leave zero (gemv_workspace_zeroed_bytes)
  DeviceArray<uint8_t> ws;
  cuda::GemvLaunch launch{};

  DeviceGemv(const gemv::Weights& dw, const GemvRequest& r, const cudaDeviceProp& prop)
      : dx(r.x),
        db(r.bias),
        y(static_cast<size_t>(r.m * dw.n)),
        zeroed(cuda::gemv_workspace_zeroed_bytes(dw, r.m)),
        ws(std::vector<uint8_t>(cuda::gemv_workspace_bytes(dw, r.m), 0)) {
    launch.w = dw;
    launch.p = gemv::Problem{r.path, r.dtype, r.m, dx.get(), r.bias.empty() ? nullptr : db.get(), r.epi};
    launch.y = y.get();
    launch.workspace = ws.get();
    launch.sms = prop.multiProcessorCount;
    launch.cc = 10 * prop.major + prop.minor;
    launch.block_shared_most = static_cast<int64_t>(prop.sharedMemPerBlockOptin);
  }
  bool workspace_zero() const {
    const std::vector<uint8_t> left = ws.to_host();
    return std::count(left.begin(), left.begin() + static_cast<std::ptrdiff_t>(zeroed), uint8_t{0}) ==
           static_cast<std::ptrdiff_t>(zeroed);
  }
};

// Runs d's launch of request r on q's weights: no error, the outputs within the accuracy goal of their
// type against the float64 reference, and the workspace's sums left zero.
void check_launch(DeviceGemv& d, Backend& cpu, const QuantizedMatrix& q, const GemvRequest& r) {
  const std::string error = cuda::gemv_run(d.launch);
  CHECK(error.empty());
  if (!error.empty()) MESSAGE(error);
  CHECK(gemv::compare(d.y.to_host(), test::reference(cpu, q, r), r.dtype).rel_l2 <
        test::accuracy_goal(r.dtype));
  CHECK(d.workspace_zero());
}

}  // namespace

TEST_CASE("device primitives equal the host emulation bit for bit") {
  struct Row {
    const char* name;
    Prim p;
  };
  const Row rows[] = {{"add.rn.f16x2", Prim::AddF16x2},
                      {"sub.rn.f16x2", Prim::SubF16x2},
                      {"mul.rn.f16x2", Prim::MulF16x2},
                      {"fma.rn.f16x2", Prim::FmaF16x2},
                      {"fma.rn.bf16x2", Prim::FmaBF16x2},
                      {"sub.rn.f32", Prim::SubF32},
                      {"mul.rn.f32", Prim::MulF32},
                      {"cvt.rn.f16.f32", Prim::CvtF16F32},
                      {"cvt.rn.f16x2.f32", Prim::CvtF16x2F32},
                      {"cvt.rn.f16.s32", Prim::CvtF16S32}};
  uint64_t stream = 1;
  for (const Row& r : rows) {
    const size_t bad = check_primitive(r.name, r.p, 0, kInputs, stream++);
    std::printf("%-18s %zu inputs, %zu mismatches\n", r.name, kInputs, bad);
    CHECK_MESSAGE(bad == 0, r.name);
  }
  size_t bad = 0;
  for (uint32_t lut = 0; lut < 256; ++lut)
    bad += check_primitive("lop3.b32", Prim::Lop3, lut, kInputs / 256, stream);
  std::printf("%-18s %zu inputs (all 256 immLut), %zu mismatches\n", "lop3.b32", kInputs, bad);
  CHECK(bad == 0);
  ++stream;
  bad = 0;
  for (uint32_t mode = 0; mode < 7; ++mode)
    bad += check_primitive("prmt.b32", Prim::Prmt, mode, kInputs / 8, stream);
  std::printf("%-18s %zu inputs (generic and 6 modes), %zu mismatches\n", "prmt.b32", kInputs / 8 * 7, bad);
  CHECK(bad == 0);
}

TEST_CASE("every recipe on the device equals the host, 2^26 registers each") {
  for (const recipes::RecipeInfo& info : recipes::all_recipes()) {
    const recipes::RecipeSpec& spec = *info.spec;
    const size_t regs_out = static_cast<size_t>(spec.out_regs);
    size_t bad = 0, ref_bad = 0;
    for (size_t base = 0; base < kInputs; base += kChunk) {
      const size_t m = std::min(kChunk, kInputs - base);
      std::vector<uint32_t> in(m), absmax(m), got(m * regs_out);
      parallel_for(m, [&](size_t lo, size_t hi) {
        for (size_t i = lo; i < hi; ++i) {
          const uint64_t r =
              splitmix(0xABCDull ^ ((base + i) * 0x100000001B3ull) ^ static_cast<uint64_t>(spec.id) << 56);
          in[i] = static_cast<uint32_t>(r);
          // Positive fp32 scales from 2^-24 to 2^16: subnormal to overflowing fp16 results.
          absmax[i] = ((103u + static_cast<uint32_t>((r >> 32) % 41u)) << 23) |
                      static_cast<uint32_t>((r >> 40) & 0x7FFFFFu);
        }
      });
      const std::string err =
          gpu_test::run_recipe(spec.id, in.data(), spec.has_absmax ? absmax.data() : nullptr, m, got.data());
      REQUIRE_MESSAGE(err.empty(), err);
      Mismatches mm, mref;
      parallel_for(m, [&](size_t lo, size_t hi) {
        uint32_t host[4];
        for (size_t i = lo; i < hi; ++i) {
          const uint32_t regs[2] = {in[i], spec.has_absmax ? absmax[i] : 0x3F800000u};
          recipes::run_plain(spec.id, regs, host);
          if (!std::equal(host, host + regs_out, got.data() + i * regs_out)) mm.note(i);
          if (i % 64 == 0) {  // and a sample against the integer reference directly
            const auto want = recipes::reference_outputs(spec, recipes::Inputs{regs[0], regs[1]});
            const std::vector<uint32_t> dev(got.data() + i * regs_out, got.data() + (i + 1) * regs_out);
            for (int e = 0; e < spec.elems; ++e) {
              if (recipes::output_bits(dev, e) != want[static_cast<size_t>(e)].bits) mref.note(i);
            }
          }
        }
      });
      if (mm.count) std::printf("  %s: first mismatch at input 0x%08x\n", spec.name, in[mm.first]);
      bad += mm.count;
      ref_bad += mref.count;
    }
    std::printf("%-18s %zu registers, %zu differ from the host, %zu sampled differ from the reference\n",
                spec.name, kInputs, bad, ref_bad);
    CHECK_MESSAGE(bad == 0, spec.name);
    CHECK_MESSAGE(ref_bad == 0, spec.name);
  }
}

TEST_CASE(
    "whole matrices: the CUDA backend equals the CPU twin for quant, every dequant recipe and permute") {
  auto gpu = open_gpu();
  auto cpu = make_cpu_backend();
  using quant::Layout;
  using quant::Scheme;
  std::vector<std::pair<int64_t, int64_t>> shapes = {{64, 512}, {256, 1024}, {32, 16384}};
  if (kInputs >= (size_t{1} << 26)) shapes.push_back({4096, 4096});
  for (const auto& [n, k] : shapes) {
    const Tensor w = random_matrix(Distribution::Outliers, static_cast<uint64_t>(n + k), n, k);
    const QuantSpec specs[] = {{Scheme::Int8Sym, Layout::Plain, static_cast<int>(k)},
                               {Scheme::Int8Sym, Layout::Plain, 128},
                               {Scheme::Int8Sym, Layout::Ft, 64},
                               {Scheme::Int4Sym, Layout::Plain, 32},
                               {Scheme::Int4Sym, Layout::Ft, 128},
                               {Scheme::Int4Sym, Layout::Ft, static_cast<int>(k)},
                               {Scheme::Int4Asym, Layout::Awq, 64},
                               {Scheme::Int4Asym, Layout::Awq, 128},
                               {Scheme::Nf4, Layout::Plain, 64},
                               {Scheme::Nf4, Layout::Plain, 512}};
    for (const QuantSpec& s : specs) {
      const QuantizedMatrix a = gpu->quantize(w, s), b = cpu->quantize(w, s);
      const bool same =
          a.qwords == b.qwords && a.scales == b.scales && a.qzeros == b.qzeros && a.absmax == b.absmax;
      std::printf("%5lldx%-5lld scheme %d layout %d group %4d: quant %s", static_cast<long long>(n),
                  static_cast<long long>(k), static_cast<int>(s.scheme), static_cast<int>(s.layout), s.group,
                  same ? "same" : "DIFFERENT");
      CHECK(same);
      for (auto r : recipes_for(s)) {
        const bool eq = gpu->dequantize(a, r) == cpu->dequantize(a, r);
        std::printf(", %s %s", recipes::spec_of(r).name, eq ? "same" : "DIFFERENT");
        CHECK_MESSAGE(eq, recipes::spec_of(r).name);
      }
      std::printf("\n");
    }
    for (int bits : {4, 8}) {
      std::vector<uint32_t> words(static_cast<size_t>(n * k * bits / 32));
      for (size_t i = 0; i < words.size(); ++i) words[i] = static_cast<uint32_t>(splitmix(i + 77));
      const auto f = gpu->permute(bits, n, k, words, true);
      CHECK(f == cpu->permute(bits, n, k, words, true));
      CHECK(gpu->permute(bits, n, k, f, false) == words);
    }
  }
}

TEST_CASE("whole matrices: plain dequant with one scale a channel on short rows, and FT with groups of 32") {
  // Rows shorter than a warp's units (K = 8, 24, 200: most lanes past the row's end) and a row of
  // 4104 (a block's last units past it); the FT layout's groups of 32, whose two halves of a 64-row tile
  // take their own scales.
  auto gpu = open_gpu();
  auto cpu = make_cpu_backend();
  using quant::Layout;
  using quant::Scheme;
  const std::pair<int64_t, int64_t> plain[] = {{8, 8}, {16, 24}, {8, 200}, {3, 4104}};
  for (const auto& [n, k] : plain) {
    const Tensor w = random_matrix(Distribution::Outliers, static_cast<uint64_t>(7 * n + k), n, k);
    for (Scheme scheme : {Scheme::Int8Sym, Scheme::Int4Sym}) {
      const QuantSpec s{scheme, Layout::Plain, static_cast<int>(k)};
      const QuantizedMatrix a = cpu->quantize(w, s);
      for (auto r : recipes_for(s)) {
        CHECK_MESSAGE(gpu->dequantize(a, r) == cpu->dequantize(a, r), recipes::spec_of(r).name, " ", n, "x",
                      k);
      }
    }
  }
  const std::pair<int64_t, int64_t> ft[] = {{8, 1536}, {32, 576}, {12, 1600}};
  for (const auto& [n, k] : ft) {
    const Tensor w = random_matrix(Distribution::Outliers, static_cast<uint64_t>(11 * n + k), n, k);
    for (Scheme scheme : {Scheme::Int4Sym, Scheme::Int8Sym}) {
      const QuantSpec s{scheme, Layout::Ft, 32};
      const QuantizedMatrix a = cpu->quantize(w, s), b = gpu->quantize(w, s);
      CHECK_MESSAGE((a.qwords == b.qwords && a.scales == b.scales), "quant ", n, "x", k, " group 32");
      for (auto r : recipes_for(s)) {
        CHECK_MESSAGE(gpu->dequantize(a, r) == cpu->dequantize(a, r), recipes::spec_of(r).name, " ", n, "x",
                      k, " group 32");
      }
    }
  }
}

TEST_CASE("whole matrices: permute both ways through every kernel form, as the CPU twin does") {
  // K / 64 = 5: a thread per tile, for both widths; 16 and 128: both staged, every warp inside
  // one column group; 24: int4 the same, int8 (48 chunks a group) with warps running into the
  // next group; 8: int4 staged, int8 not (16 chunks a group); 172 (K = 11008): both staged with
  // warps running into the next group; 9: int4 so, int8 not; 25 with 12 rows: a thread per tile
  // (300 chunks do not fill whole warps).
  auto gpu = open_gpu();
  auto cpu = make_cpu_backend();
  const std::pair<int64_t, int64_t> shapes[] = {{64, 320}, {8, 1536},  {12, 1024}, {36, 8192},
                                                {20, 512}, {8, 11008}, {32, 576},  {12, 1600}};
  for (const auto& [n, k] : shapes) {
    for (int bits : {4, 8}) {
      std::vector<uint32_t> words(static_cast<size_t>(n * k * bits / 32));
      for (size_t i = 0; i < words.size(); ++i) words[i] = static_cast<uint32_t>(splitmix(i + 131 * n + k));
      const auto f = gpu->permute(bits, n, k, words, true);
      CHECK_MESSAGE(f == cpu->permute(bits, n, k, words, true), "int", bits, " ", n, "x", k);
      CHECK_MESSAGE(gpu->permute(bits, n, k, f, false) == words, "int", bits, " ", n, "x", k);
      CHECK_MESSAGE(f != words, "int", bits, " ", n, "x", k);  // the layout moves values
    }
  }
}

TEST_CASE(
    "whole matrices: FT dequant where a warp's chunks run into the next column group, as the CPU twin does") {
  // K / 64 = 172 (K = 11008) and 18: both widths staged with warps that cross a column group's
  // end; 9: int4 so, int8 a thread per tile; 25 with 12 rows: a thread per tile (not whole warps).
  auto gpu = open_gpu();
  auto cpu = make_cpu_backend();
  const std::pair<int64_t, int64_t> shapes[] = {{8, 11008}, {16, 1152}, {32, 576}, {12, 1600}};
  for (const auto& [n, k] : shapes) {
    const Tensor w = random_matrix(Distribution::Outliers, static_cast<uint64_t>(5 * n + k), n, k);
    for (quant::Scheme scheme : {quant::Scheme::Int4Sym, quant::Scheme::Int8Sym}) {
      const QuantSpec s{scheme, quant::Layout::Ft, 64};
      const QuantizedMatrix a = cpu->quantize(w, s);
      for (auto r : recipes_for(s)) {
        CHECK_MESSAGE(gpu->dequantize(a, r) == cpu->dequantize(a, r), recipes::spec_of(r).name, " ", n, "x",
                      k);
      }
    }
  }
}

TEST_CASE("whole matrices: AWQ dequant through the tiled and the per-thread kernels, as the CPU twin does") {
  // N a multiple of 256 and K of 128: the tiled kernel (one block a 128-row tile, odd and even
  // tile counts along K); N = 64 and 8: the per-thread kernel. One scale a channel (group K) lets K be
  // any multiple of 8: K = 8, 24 and 200 leave the per-thread kernel a last unit of 8 rows.
  auto gpu = open_gpu();
  auto cpu = make_cpu_backend();
  const std::pair<int64_t, int64_t> shapes[] = {{256, 384},  {512, 1152}, {256, 256}, {768, 768}, {256, 512},
                                                {512, 1536}, {64, 384},   {8, 8},     {8, 24},    {64, 200}};
  for (const auto& [n, k] : shapes) {
    const Tensor w = random_matrix(Distribution::Outliers, static_cast<uint64_t>(3 * n + k), n, k);
    for (int group : {64, 128, static_cast<int>(k)}) {
      if (k % group != 0) continue;
      const QuantSpec s{quant::Scheme::Int4Asym, quant::Layout::Awq, group};
      const QuantizedMatrix a = cpu->quantize(w, s);
      for (auto r : recipes_for(s)) {
        CHECK_MESSAGE(gpu->dequantize(a, r) == cpu->dequantize(a, r), recipes::spec_of(r).name, " ", n, "x",
                      k, " group ", group);
      }
    }
  }
}

TEST_CASE("whole matrices: one scale per channel over any K, and NF4 blocks, quantize as the CPU twin does") {
  // Per-channel groups take the wide kernels: short rows that are not a power of two, rows held
  // in one block, rows read twice in batches of runs (a last batch cut short: K = 8200, 8248,
  // 28672; more rows than multiprocessors: 300 x 16384), and rows over 32768 split over a
  // cluster of 5 or 7 blocks (compute capability 9.0; read twice elsewhere, and where no split
  // divides evenly: K = 32792, 4099 runs of 8).
  auto gpu = open_gpu();
  auto cpu = make_cpu_backend();
  using quant::Layout;
  using quant::Scheme;
  const std::pair<int64_t, int64_t> shapes[] = {{16, 8},    {16, 24},     {16, 96},   {8, 200},   {8, 8192},
                                                {8, 8248},  {8, 16384},   {6, 28672}, {4, 40960}, {2, 57344},
                                                {2, 32792}, {300, 16384}, {150, 8200}};
  for (const auto& [n, k] : shapes) {
    const Tensor w = random_matrix(Distribution::Outliers, static_cast<uint64_t>(7 * n + k), n, k);
    std::vector<QuantSpec> specs = {{Scheme::Int8Sym, Layout::Plain, static_cast<int>(k)},
                                    {Scheme::Int4Sym, Layout::Plain, static_cast<int>(k)}};
    if (k % 32 == 0) specs.push_back({Scheme::Nf4, Layout::Plain, 32});
    if (k % 4096 == 0) specs.push_back({Scheme::Nf4, Layout::Plain, 4096});
    for (const QuantSpec& s : specs) {
      CAPTURE(n);
      CAPTURE(k);
      CAPTURE(static_cast<int>(s.scheme));
      CAPTURE(s.group);
      const QuantizedMatrix a = gpu->quantize(w, s), b = cpu->quantize(w, s);
      CHECK(a.qwords == b.qwords);
      CHECK(a.scales == b.scales);
      CHECK(a.absmax == b.absmax);
    }
  }
}

TEST_CASE("quantize: values on and beside the half-way points between codes, as the CPU twin does") {
  // The kernels estimate each quotient by a multiply and take the division only near a
  // half-way point (quant::SymCoder). Here every group's largest value is qmax times an fp16
  // scale, so the scale is exact and the other values sit on a half-way point between two codes
  // (ties, to even) or a few ulps beside it: the division path on every group, in each kernel
  // form (groups of 128 by segments, rows held, rows read twice, rows over a cluster).
  auto gpu = open_gpu();
  auto cpu = make_cpu_backend();
  using quant::Layout;
  using quant::Scheme;
  const std::pair<int64_t, int64_t> shapes[] = {{64, 1024}, {8, 8192}, {6, 28672}, {4, 40960}};
  for (const auto& [n, k] : shapes) {
    for (Scheme scheme : {Scheme::Int8Sym, Scheme::Int4Sym}) {
      for (int group : {128, static_cast<int>(k)}) {
        const int qmax = scheme == Scheme::Int8Sym ? 127 : 7;
        Tensor w = make_tensor(DType::F32, {n, k});
        float* x = w.as<float>();
        for (int64_t r = 0; r < n; ++r) {
          for (int64_t c = 0; c < k; ++c) {
            const uint64_t h = splitmix(static_cast<uint64_t>((r * k + c) / group) * 131 + 7);
            const float scale = std::ldexp(1.0f + static_cast<float>(h % 1024) / 1024.0f,
                                           static_cast<int>((h >> 10) % 16) - 12);  // an fp16 value
            const uint64_t v = splitmix(static_cast<uint64_t>(r * k + c));
            if (c % group == 0) {
              x[r * k + c] = (v & 1 ? -1.0f : 1.0f) * static_cast<float>(qmax) * scale;
              continue;
            }
            // m + 0.5 from -qmax + 0.5 to qmax - 0.5: below the group's largest magnitude
            const int m = static_cast<int>(v % static_cast<uint64_t>(2 * qmax)) - qmax;
            float f = (static_cast<float>(m) + 0.5f) * scale;  // exact
            for (int u = static_cast<int>((v >> 16) % 5) - 2; u != 0; u += u > 0 ? -1 : 1)
              f = std::nextafter(f, u > 0 ? 1e30f : -1e30f);
            x[r * k + c] = f;
          }
        }
        CAPTURE(n);
        CAPTURE(k);
        CAPTURE(static_cast<int>(scheme));
        CAPTURE(group);
        const QuantSpec spec{scheme, Layout::Plain, group};
        const QuantizedMatrix a = gpu->quantize(w, spec), b = cpu->quantize(w, spec);
        CHECK(a.qwords == b.qwords);
        CHECK(a.scales == b.scales);
      }
    }
  }
}

TEST_CASE("trace: every step's register on the GPU equals the CPU's") {
  auto gpu = open_gpu();
  auto cpu = make_cpu_backend();
  for (const recipes::RecipeInfo& info : recipes::all_recipes()) {
    size_t bad = 0;
    for (int i = 0; i < 200; ++i) {
      const uint64_t r = splitmix(static_cast<uint64_t>(i) * 31 + static_cast<uint64_t>(info.spec->id));
      const recipes::Inputs in{static_cast<uint32_t>(r), (static_cast<uint32_t>(110 + (r >> 32) % 30) << 23)};
      const auto g = gpu->trace_values(info.spec->id, in), c = cpu->trace_values(info.spec->id, in);
      if (g != c || g.empty()) ++bad;
    }
    std::printf("trace %-18s 200 registers, %zu differ\n", info.spec->name, bad);
    CHECK(bad == 0);
  }
}

TEST_CASE("verify: every recipe on all 2^32 registers") {
  auto gpu = open_gpu();
  for (const recipes::RecipeInfo& info : recipes::all_recipes()) {
    const VerifyResult r = gpu->verify(info.spec->id);
    std::printf("verify %-18s %llu registers, %llu mismatches, %.3f s\n", info.spec->name,
                static_cast<unsigned long long>(r.checked), static_cast<unsigned long long>(r.mismatches),
                r.seconds);
    CHECK(r.exhaustive);
    CHECK(r.mismatches == 0);
  }
}

TEST_CASE("gemv: the rows of X may shrink and grow again from call to call") {
  // A stage of the copy-engine forms holds M rows of X (up to 8 with one token tile, 16 with two),
  // so a kernel's shared memory depends on M, and the launcher raises the kernel's limit for it. A
  // user who steps M down and back up (8, 1, 8 in the GUI) reaches a size the launcher has seen
  // before with the limit lowered since: every call must still launch and be right. This case
  // comes before the other GEMV cases in this file, so on compute capability 9.0 its calls are the
  // first of these kernels in the process (with the other cases first, it still checks the
  // outputs). On the whole device 4096 x 4096 takes the grids of split tiles; told it has 8
  // multiprocessors, the launcher gives the same shape the persistent grid (its runs cross tiles).
  // On compute capability 9.0 int4 from 3 rows takes the walk there (its shared memory the same at
  // every M up to 16, another kernel with larger stages at 17 and 32), and fp16's one row the lane form
  // (ft_lane_kernel), so both types come again with the walk left out (GemvLaunch::no_walk): the ring at
  // every M but fp16's one row.
  auto gpu = open_gpu();
  auto cpu = make_cpu_backend();
  using recipes::OutType;
  const cudaDeviceProp prop = device_prop();
  const int64_t n = 4096, k = 4096;
  const QuantizedMatrix q = int4_g128(*cpu, 11, n, k);
  const DeviceWeights dev(q);
  const gemv::Weights& dw = dev.w;
  for (const OutType t : {OutType::F16, OutType::BF16}) {
    for (const bool no_walk : {false, true}) {
      for (const int sms : {prop.multiProcessorCount, 8}) {
        for (const int64_t m : {8, 1, 8, 16, 9, 32, 17, 16, 2, 8}) {
          CAPTURE(t == OutType::BF16);
          CAPTURE(no_walk);
          CAPTURE(sms);
          CAPTURE(m);
          const GemvRequest r = test::make_request(gemv::Path::Fast, t, m, n, k, 70 + m, {});
          DeviceGemv d(dw, r, prop);
          d.launch.sms = sms;
          d.launch.no_walk = no_walk;
          check_launch(d, *cpu, q, r);
        }
      }
    }
  }
}

TEST_CASE("gemv: the ring's refills with 6 to 8 rows of X, every format it reads, on few multiprocessors") {
  // With one token tile (up to 8 rows of X) the copy-engine ring holds two stages; told it has 8
  // multiprocessors, the launcher gives each block many units, so most stages are refills (elsewhere
  // only "the rows of X may shrink" reaches them, with fp16 int4 in groups of 128). int4 in groups of
  // 64 and 128 and int8 per channel, fp16 and bf16.
  auto gpu = open_gpu();
  auto cpu = make_cpu_backend();
  using recipes::OutType;
  const cudaDeviceProp prop = device_prop();
  const int64_t n = 1024, k = 4096;
  const QuantSpec specs[] = {{quant::Scheme::Int4Sym, quant::Layout::Ft, 128},
                             {quant::Scheme::Int4Sym, quant::Layout::Ft, 64},
                             {quant::Scheme::Int8Sym, quant::Layout::Ft, static_cast<int>(k)}};
  for (const QuantSpec& spec : specs) {
    const QuantizedMatrix q = cpu->quantize(random_matrix(Distribution::Normal, 17, n, k), spec);
    const DeviceWeights dev(q);
    for (const OutType t : {OutType::F16, OutType::BF16}) {
      for (const int64_t m : {6, 7, 8}) {
        CAPTURE(static_cast<int>(spec.scheme));
        CAPTURE(spec.group);
        CAPTURE(t == OutType::BF16);
        CAPTURE(m);
        gemv::Epilogue epi;
        epi.act = m % 2 ? gemv::Act::Silu : gemv::Act::None;
        const GemvRequest r = test::make_request(gemv::Path::Fast, t, m, n, k, 60 + m, epi);
        DeviceGemv d(dev.w, r, prop);
        d.launch.sms = 8;
        check_launch(d, *cpu, q, r);
      }
    }
  }
}

TEST_CASE("gemv: one workspace serves call after call (the kernels leave its sums zero)") {
  // The benchmark runs a product hundreds of times on one workspace: every call must find the
  // sums and counters zero and leave them so, or the second product would carry the first one's
  // partial sums (the scratch behind them, X re-laid for the stages, may hold anything). On
  // compute capability 9.0 with 132 multiprocessors (H100, H200), where blocks have few units each
  // the tiles are split evenly among blocks, which meet in slots of the workspace (4096 x 4096 at 1
  // and 9 rows, 5120 x 5120 at 1) or where the last block of each tile to arrive settles it
  // (4096 x 4096 at 12 and 16 rows, 5120 x 5120 at 16 in runs of 2 and 3 units), or each block
  // takes a whole tile and writes its outputs itself (16384 x 2048 at 1 and 4 rows); with more, the
  // runs of a persistent grid cross tiles and their parts of a tile meet in slots (8192 x 8192 at 1
  // and 9 to 16 rows, 8192 x 11008 at 1, 28672 x 2048 at 1 and 4, 16384 x 4096 at 8 and 32) or a
  // second kernel settles them all (8192 x 8192 from 24 rows). 8192 x 8192 from 12 rows and both
  // square shapes from 17 re-lay X first. At one token tile (up to 8 rows) a persistent run's
  // settler meets two to seven others (8192 x 8192 at 1 and 8 rows, three, fp16 and bf16 outputs;
  // 16384 x 4096 at 8, two; 4096 x 28672 at 1 and 8 rows, seven). On compute capability 9.0 from 2^24
  // weights the rows from 2 to 16 of int4 take the walk instead (8192 x 8192 at 4 and 9 to 16 rows), so
  // the ring's cases at 4 and 8 rows are asked with bf16 outputs and the walk left out
  // (GemvLaunch::no_walk, every bf16 run here). From 33 rows on large matrices (gemv::hopper_takes) the
  // Hopper GEMM's runs meet in the workspace: 8192 x 8192 at 48 rows and 8192 x 2048 at 33 and 64 (64 tiles
  // of 48 and 64 rows, K in four runs), 4096 x 8192 at 40 (bf16, groups of 64: 32 tiles, eight runs); 4096 x
  // 4096 at 48 stays on the ring of eight token tiles. From 65 rows on
  // compute capability 9.0 the Hopper GEMM cuts K into four runs that meet in the workspace at 4096 x 4096
  // with 72 rows (64 tiles of 48 rows), fp16 and bf16, and into two at 200 rows (128 tiles of 64); 17024 x
  // 6144 at 72 rows takes 80-row blocks (133 tiles, the whole K each), and 17152 x 6144 (134 tiles) blocks of
  // 80 rows at 72 and of 96 at 90, single, and in clusters of two that share X blocks of 128 at 128 rows, of
  // 112 at 112 (bf16). Blocks over 128 rows, alone on their multiprocessor, each k16 chunk two wgmma: 17024 x
  // 1024 at 144 (133 single blocks); with the rows set, as the launcher takes them on larger matrices: 17152
  // x 6144 at 200 in blocks of 208 (clusters, the whole K), 8192 x 1024 at 160 (64 tiles in clusters, two
  // runs that meet), fp16 and bf16, 4096 x 4096 at 144 (32 tiles, four runs), 17152 x 1024 at 256 (two wgmma
  // of 128). The same shapes told compute capability 8.9 take the mma.sync GEMM of older devices: two runs at
  // 72 rows, the whole K at 200.
  auto gpu = open_gpu();  // the device the backend opens, as in the other cases
  auto cpu = make_cpu_backend();
  using recipes::OutType;
  const cudaDeviceProp prop = device_prop();
  struct Run {
    int64_t n, k;
    QuantSpec spec;
    std::vector<int64_t> ms;
    OutType out = OutType::F16;
    int cc = 0;    // the compute capability the launcher is told; 0: the device's
    int rows = 0;  // the Hopper GEMM's rows of X a block; 0: the launcher's choice
  };
  // int8 per channel too: its two token tiles re-lay X the same way at 8192 x 8192. K = 11008 (a
  // multiple of 256, not of 512): units of 256 rows of K at every M, settled by the second kernel.
  const Run runs[] = {
      {4096, 4096, {quant::Scheme::Int4Sym, quant::Layout::Ft, 128}, {1, 9, 12, 16, 24, 48}},
      {8192, 8192, {quant::Scheme::Int4Sym, quant::Layout::Ft, 128}, {1, 4, 9, 12, 16, 24, 48}},
      {8192, 8192, {quant::Scheme::Int8Sym, quant::Layout::Ft, 8192}, {12, 16}},
      {8192, 11008, {quant::Scheme::Int4Sym, quant::Layout::Ft, 128}, {1, 9, 12, 16, 24, 32}},
      {5120, 5120, {quant::Scheme::Int4Sym, quant::Layout::Ft, 128}, {1, 16}},
      {28672, 2048, {quant::Scheme::Int4Sym, quant::Layout::Ft, 128}, {1}},
      {28672, 2048, {quant::Scheme::Int4Sym, quant::Layout::Ft, 128}, {4}, OutType::BF16},
      {16384, 2048, {quant::Scheme::Int4Sym, quant::Layout::Ft, 128}, {1}},
      {16384, 2048, {quant::Scheme::Int4Sym, quant::Layout::Ft, 128}, {4}, OutType::BF16},
      {16384, 4096, {quant::Scheme::Int4Sym, quant::Layout::Ft, 128}, {32}},
      {16384, 4096, {quant::Scheme::Int4Sym, quant::Layout::Ft, 128}, {8}, OutType::BF16},
      {8192, 8192, {quant::Scheme::Int4Sym, quant::Layout::Ft, 128}, {1, 8}, OutType::BF16},
      {4096, 28672, {quant::Scheme::Int4Sym, quant::Layout::Ft, 128}, {1}},
      {4096, 28672, {quant::Scheme::Int4Sym, quant::Layout::Ft, 128}, {8}, OutType::BF16},
      {8192, 2048, {quant::Scheme::Int4Sym, quant::Layout::Ft, 128}, {33, 64}},
      {4096, 8192, {quant::Scheme::Int4Sym, quant::Layout::Ft, 64}, {40}, OutType::BF16},
      {4096, 4096, {quant::Scheme::Int4Sym, quant::Layout::Ft, 128}, {72, 200}},
      {4096, 4096, {quant::Scheme::Int4Sym, quant::Layout::Ft, 128}, {72}, OutType::BF16},
      {17024, 6144, {quant::Scheme::Int4Sym, quant::Layout::Ft, 128}, {72}},
      {17152, 6144, {quant::Scheme::Int4Sym, quant::Layout::Ft, 128}, {72, 90, 128}},
      {17152, 6144, {quant::Scheme::Int4Sym, quant::Layout::Ft, 128}, {200}, OutType::F16, 0, 208},
      {17152, 6144, {quant::Scheme::Int4Sym, quant::Layout::Ft, 128}, {112}, OutType::BF16},
      {8192, 1024, {quant::Scheme::Int4Sym, quant::Layout::Ft, 128}, {160}, OutType::F16, 0, 160},
      {8192, 1024, {quant::Scheme::Int4Sym, quant::Layout::Ft, 128}, {160}, OutType::BF16, 0, 160},
      {4096, 4096, {quant::Scheme::Int4Sym, quant::Layout::Ft, 128}, {144}, OutType::F16, 0, 144},
      {17024, 1024, {quant::Scheme::Int4Sym, quant::Layout::Ft, 128}, {144}},
      {17152, 1024, {quant::Scheme::Int4Sym, quant::Layout::Ft, 128}, {256}, OutType::F16, 0, 256},
      {4096, 4096, {quant::Scheme::Int4Sym, quant::Layout::Ft, 128}, {72, 200}, OutType::F16, 89},
      {4096, 4096, {quant::Scheme::Int4Sym, quant::Layout::Ft, 128}, {72}, OutType::BF16, 89}};
  for (const Run& run : runs) {
    const int64_t n = run.n, k = run.k;
    const Tensor w = random_matrix(Distribution::Normal, 5, n, k);
    const QuantizedMatrix q = cpu->quantize(w, run.spec);
    const DeviceWeights dev(q);
    const gemv::Weights& dw = dev.w;
    for (int64_t m : run.ms) {
      CAPTURE(n);
      CAPTURE(k);
      CAPTURE(static_cast<int>(run.spec.scheme));
      CAPTURE(m);
      gemv::Epilogue epi;
      epi.act = m % 2 ? gemv::Act::Silu : gemv::Act::None;
      CAPTURE(run.out == OutType::BF16);
      CAPTURE(run.cc);
      CAPTURE(run.rows);
      const GemvRequest r = test::make_request(gemv::Path::Fast, run.out, m, n, k, 40 + m, epi);
      DeviceGemv d(dw, r, prop);
      if (run.cc) d.launch.cc = run.cc;
      d.launch.rows = run.rows;
      d.launch.no_walk = run.out == OutType::BF16;
      REQUIRE(d.zeroed < cuda::gemv_workspace_bytes(dw, m));
      const auto ref = test::reference(*cpu, q, r);
      for (int call = 0; call < 3; ++call) {
        CAPTURE(call);
        REQUIRE(cuda::gemv_run(d.launch).empty());
        CHECK(gemv::compare(d.y.to_host(), ref, run.out).rel_l2 < test::accuracy_goal(run.out));
        CHECK(d.workspace_zero());
      }
    }
  }
}

TEST_CASE("gemm: rows of X a block set outside what the Hopper GEMM takes are refused with a sentence") {
  // GemvLaunch::rows sets the Hopper GEMM's block size (the tests reach every size with it); one it
  // has no kernel for is refused before anything is launched, and the same launch then runs with the
  // launcher's own choice.
  auto gpu = open_gpu();
  auto cpu = make_cpu_backend();
  using recipes::OutType;
  const cudaDeviceProp prop = device_prop();
  if (10 * prop.major + prop.minor != 90) {
    MESSAGE("skipped: the Hopper GEMM runs on compute capability 9.0 only");
    return;
  }
  const int64_t n = 256, k = 2048, m = 72;
  const QuantizedMatrix q = int4_g128(*cpu, 12, n, k);
  const DeviceWeights dev(q);
  const GemvRequest r = test::make_request(gemv::Path::Fast, OutType::F16, m, n, k, 91, {});
  DeviceGemv d(dev.w, r, prop);
  for (const int rows : {100, 32, 272, -16}) {
    CAPTURE(rows);
    d.launch.rows = rows;
    const std::string error = cuda::gemv_run(d.launch);
    CHECK(error.find("set to " + std::to_string(rows) + "; they must be a multiple of 16 from 48 to 256") !=
          std::string::npos);
  }
  d.launch.rows = 0;
  REQUIRE(cuda::gemv_run(d.launch).empty());
  CHECK(gemv::compare(d.y.to_host(), test::reference(*cpu, q, r), OutType::F16).rel_l2 < 1e-3);
  CHECK(d.workspace_zero());
}

TEST_CASE("gemv / gemm: an operand not 16-byte aligned is refused with a sentence, before any launch") {
  // The kernels copy 16 bytes at a time; a pointer off that grid would fault on the device (and
  // leave the context unusable), so gemv_run names it instead. X two bytes in, at 8 rows (the GEMV)
  // and at 72 (the GEMM); the same launch then runs from the aligned X.
  auto gpu = open_gpu();
  auto cpu = make_cpu_backend();
  using recipes::OutType;
  const cudaDeviceProp prop = device_prop();
  const int64_t n = 256, k = 2048;
  const QuantizedMatrix q = int4_g128(*cpu, 13, n, k);
  const DeviceWeights dev(q);
  for (const int64_t m : {8, 72}) {
    CAPTURE(m);
    const GemvRequest r = test::make_request(gemv::Path::Fast, OutType::F16, m, n, k, 93, {});
    DeviceGemv d(dev.w, r, prop);
    const uint16_t* x = d.launch.p.x;
    d.launch.p.x = x + 1;
    CHECK(cuda::gemv_run(d.launch) ==
          "the GEMV / GEMM kernels were given X at an address that is not a multiple of 16 bytes; every "
          "device pointer of a launch must be 16-byte aligned (as cudaMalloc's are)");
    d.launch.p.x = x;
    REQUIRE(cuda::gemv_run(d.launch).empty());
    CHECK(gemv::compare(d.y.to_host(), test::reference(*cpu, q, r), OutType::F16).rel_l2 < 1e-3);
    CHECK(d.workspace_zero());
  }
}

TEST_CASE("gemv: a NaN in X reaches its row through split tiles, and the workspace is left zero") {
  // Where the blocks of a split tile meet in slots of the workspace, a zero there means "not stored
  // yet" (stored values are encoded), so a partial sum that is NaN must reach the outputs and must
  // neither hold the tile's last block waiting nor stay behind. On 132 multiprocessors 5120 x 5120
  // at 4 rows meets in slots, 4 blocks a tile; the NaN sits in the first block's run. On compute
  // capability 9.0 int4 at 4 rows takes the walk instead (its ranges meet by reductions in the
  // workspace, which its settling kernel reads and zeroes), fp16 and bf16, so 4 rows of bf16 are asked
  // with the walk left out too (GemvLaunch::no_walk). One row takes the lane form, fp16 and bf16
  // (whose warps scale X by a power of two that the NaN must not set, nor lose itself in).
  auto gpu = open_gpu();
  auto cpu = make_cpu_backend();
  using recipes::OutType;
  const cudaDeviceProp prop = device_prop();
  const int64_t n = 5120, k = 5120;
  const QuantizedMatrix q = int4_g128(*cpu, 8, n, k);
  const DeviceWeights dev(q);
  const gemv::Weights& dw = dev.w;
  struct Run {
    int64_t m;
    OutType t;
    bool no_walk;
  };
  for (const Run& run :
       {Run{1, OutType::F16, false}, Run{1, OutType::BF16, false}, Run{4, OutType::F16, false},
        Run{4, OutType::BF16, false}, Run{4, OutType::BF16, true}}) {
    const int64_t m = run.m;
    const OutType t = run.t;
    CAPTURE(m);
    CAPTURE(t == OutType::BF16);
    CAPTURE(run.no_walk);
    GemvRequest r = test::make_request(gemv::Path::Fast, t, m, n, k, 70 + m);
    r.x[100] = t == OutType::F16 ? 0x7E00 : 0x7FC0;  // a NaN in row 0
    DeviceGemv d(dw, r, prop);
    d.launch.no_walk = run.no_walk;
    const auto ref = test::reference(*cpu, q, r);
    for (int call = 0; call < 2; ++call) {
      CAPTURE(call);
      REQUIRE(cuda::gemv_run(d.launch).empty());
      const std::vector<uint16_t> out = d.y.to_host();
      CHECK(std::count_if(out.begin(), out.begin() + n,
                          [t](uint16_t h) { return std::isnan(gemv::act_to_f32(h, t)); }) == n);
      if (m > 1) {
        const std::vector<uint16_t> rest(out.begin() + n, out.end());
        const std::vector<double> rest_ref(ref.begin() + n, ref.end());
        CHECK(gemv::compare(rest, rest_ref, t).rel_l2 < test::accuracy_goal(t));
      }
      CHECK(d.workspace_zero());
    }
  }
}

namespace {

// Outputs of two GEMV runs (equal lengths) more than two roundings of the output type apart: the fast
// and the naive conversion compute the same values, and only where K is split across blocks may the
// fp32 partial sums meet in another order.
size_t outputs_apart(const std::vector<uint16_t>& y, const std::vector<uint16_t>& z, recipes::OutType t) {
  const double ulp = t == recipes::OutType::F16 ? 0x1p-10 : 0x1p-7;
  size_t apart = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double a = gemv::act_to_f32(y[i], t), b = gemv::act_to_f32(z[i], t);
    if (std::abs(a - b) > 2 * ulp * std::max(std::abs(a), std::abs(b)) + 1e-6) ++apart;
  }
  return apart;
}

// Where X holds an infinity or a NaN: the outputs unlike the float64 product's (every output must be
// what the product is, an infinity of its sign or NaN), and how many of the product's are NaN.
struct NonFinite {
  size_t unlike = 0, nans = 0;
};
NonFinite outputs_unlike(const std::vector<uint16_t>& y, const std::vector<double>& ref, recipes::OutType t) {
  NonFinite r;
  for (size_t i = 0; i < y.size() && i < ref.size(); ++i) {
    const double v = gemv::act_to_f32(y[i], t);
    r.nans += std::isnan(ref[i]);
    r.unlike += std::isnan(ref[i]) ? !std::isnan(v) : v != ref[i];
  }
  r.unlike += y.size() != ref.size() ? std::max(y.size(), ref.size()) - std::min(y.size(), ref.size()) : 0;
  return r;
}

}  // namespace

TEST_CASE("gemv / gemm: every path on the GPU within the accuracy goal, beside the CPU twin") {
  auto gpu = open_gpu();
  auto cpu = make_cpu_backend();
  using quant::Layout;
  using quant::Scheme;
  using recipes::OutType;
  struct Case {
    QuantSpec spec;
    gemv::Path path;
  };
  // K = 1280 (a multiple of 256, not of 512): int4 in units of 256 rows of K at every M.
  std::vector<std::pair<int64_t, int64_t>> shapes = {{128, 512}, {256, 2048}, {128, 1280}};
  if (kInputs >= (size_t{1} << 26)) shapes.push_back({4096, 4096});
  for (const auto& [n, k] : shapes) {
    const Tensor w = random_matrix(Distribution::Normal, static_cast<uint64_t>(n + 3 * k), n, k);
    const Case cases[] = {{{Scheme::Int4Sym, Layout::Ft, 128}, gemv::Path::Fast},
                          {{Scheme::Int4Sym, Layout::Ft, 64}, gemv::Path::Fast},
                          {{Scheme::Int4Sym, Layout::Ft, static_cast<int>(k)}, gemv::Path::Fast},
                          {{Scheme::Int8Sym, Layout::Ft, static_cast<int>(k)}, gemv::Path::Fast},
                          {{Scheme::Int8Sym, Layout::Ft, 128}, gemv::Path::Fast},
                          {{Scheme::Int4Asym, Layout::Awq, 128}, gemv::Path::Fast},
                          {{Scheme::Nf4, Layout::Plain, 64}, gemv::Path::Fast},
                          {{Scheme::Int8Sym, Layout::Plain, 64}, gemv::Path::Online},
                          {{Scheme::Int8Sym, Layout::Plain, 128}, gemv::Path::Online},
                          {{Scheme::Int4Sym, Layout::Ft, 128}, gemv::Path::Cublas}};
    for (const Case& c : cases) {
      if (c.path == gemv::Path::Cublas && std::getenv("DQL_GPU_TEST_SKIP_CUBLAS")) {
        std::printf("cuBLAS baseline left out (DQL_GPU_TEST_SKIP_CUBLAS is set)\n");
        continue;
      }
      const QuantizedMatrix q = cpu->quantize(w, c.spec);
      const bool ft = c.spec.layout == Layout::Ft;
      const bool gemm = ft && c.spec.scheme == Scheme::Int4Sym && c.path == gemv::Path::Fast;
      std::vector<int64_t> ms = {1, 3, 8, 9, 16};
      // 17-64 rows: the copy-engine form's 4 or 8 token tiles (these matrices are too small for the
      // Hopper GEMM below 65 rows; "one workspace" runs it at 33-64); 72 and 256: the GEMM (on compute
      // capability 9.0 the Hopper GEMM, two blocks of 48 rows at 72 and four of 64 at 256, K in four
      // runs that meet in the workspace at 256 x 2048; the mma.sync GEMM elsewhere).
      if (gemm) ms.insert(ms.end(), {17, 32, 40, 64, 72, 256});
      for (OutType t : {OutType::F16, OutType::BF16}) {
        if (t == OutType::BF16 && !ft) continue;  // bf16 reads the mixed-GEMM layout
        for (int64_t m : ms) {
          gemv::Epilogue epi;
          epi.act = m % 2 ? gemv::Act::Silu : gemv::Act::None;
          const GemvRequest r = test::make_request(c.path, t, m, n, k, static_cast<uint64_t>(7 * m + n), epi);
          const auto yg = gpu->gemv(q, r);
          const auto yc = cpu->gemv(q, r);
          const auto ref = test::reference(*cpu, q, r);
          const auto eg = gemv::compare(yg, ref, t), ec = gemv::compare(yc, ref, t);
          const double goal = test::accuracy_goal(t);
          const bool exact = yg == yc;
          std::printf("%5lldx%-5lld %-6s scheme %d layout %d g%-5d %s M=%-3lld rel err GPU %.2e CPU %.2e%s\n",
                      static_cast<long long>(n), static_cast<long long>(k), gemv::path_name(c.path),
                      static_cast<int>(c.spec.scheme), static_cast<int>(c.spec.layout), c.spec.group,
                      t == OutType::F16 ? "fp16" : "bf16", static_cast<long long>(m), eg.rel_l2, ec.rel_l2,
                      exact ? ", equal bits" : "");
          CHECK(eg.rel_l2 < (c.path == gemv::Path::Online ? 2e-2 : goal));
          // The online path adds its block sums in the twin's order: the same bits (before an
          // activation: the device's expf and the host's exp may differ in the last place).
          if (c.path == gemv::Path::Online && epi.act == gemv::Act::None) CHECK(exact);
          if (ft && c.path == gemv::Path::Fast) {
            // The same kernel with the per-element conversion computes the same values; only where K
            // is split across blocks may the fp32 partial sums meet in another order, which moves an
            // output by at most a rounding or two of the output type.
            GemvRequest rn = r;
            rn.path = gemv::Path::Naive;
            const auto yn = gpu->gemv(q, rn);
            REQUIRE(yn.size() == yg.size());
            CHECK(outputs_apart(yg, yn, t) == 0);
          }
        }
      }
    }
  }
}

TEST_CASE("gemv: the online path's slices of K add in the twin's order, bit for bit") {
  // K is cut into slices of whole blocks by the shape alone (gemv::online_slices): 1024x256 g128 one
  // slice (two blocks); 64x1408 g64 five uneven slices (22 blocks: 4, 4, 4, 5, 5); 2048x11008 g128
  // sixteen (86 blocks: 5 or 6 each); 70x1408 g64 five, N not a multiple of 16 (nor of 8: the last
  // warp's lanes past N read channel 0 and write nothing). At 1, 8, 9 and 16 rows (one and two token tiles),
  // fp16 and bf16 X, with a bias and a clamp: the GPU's outputs equal the twin's bit for bit, and fp16's are
  // within 2% of the float64 product (the reference dequantizes by the format's fp16 recipe; plain int8 has
  // no bf16 one). With SiLU (the device's exp may differ from the host's in the last place) every output
  // within two units of the last place of the twin's.
  auto gpu = open_gpu();
  auto cpu = make_cpu_backend();
  struct Shape {
    int64_t n, k;
    int group;
    int64_t slices;
  };
  for (const Shape& sh : {Shape{1024, 256, 128, 1}, Shape{64, 1408, 64, 5}, Shape{2048, 11008, 128, 16},
                          Shape{70, 1408, 64, 5}}) {
    REQUIRE(gemv::online_slices(sh.n, sh.k, sh.group) == sh.slices);
    const Tensor w = random_matrix(Distribution::Normal, static_cast<uint64_t>(sh.n + sh.k), sh.n, sh.k);
    const QuantizedMatrix q = cpu->quantize(w, {quant::Scheme::Int8Sym, quant::Layout::Plain, sh.group});
    for (const recipes::OutType t : {recipes::OutType::F16, recipes::OutType::BF16}) {
      const bool f16 = t == recipes::OutType::F16;
      for (const int64_t m : {1, 8, 9, 16}) {
        gemv::Epilogue epi;
        epi.clamp = true, epi.lo = -20.0f, epi.hi = 20.0f;
        GemvRequest r =
            test::make_request(gemv::Path::Online, t, m, sh.n, sh.k, static_cast<uint64_t>(5 * m), epi);
        const auto yg = gpu->gemv(q, r), yc = cpu->gemv(q, r);
        const double err = f16 ? gemv::compare(yg, test::reference(*cpu, q, r), t).rel_l2 : 0.0;
        char what[32] = "held to the twin";
        if (f16) std::snprintf(what, sizeof what, "rel err %.2e", err);
        std::printf("online %lldx%lld g%d (%lld slices) %s M=%lld: %s%s\n", static_cast<long long>(sh.n),
                    static_cast<long long>(sh.k), sh.group, static_cast<long long>(sh.slices),
                    f16 ? "fp16" : "bf16", static_cast<long long>(m), what, yg == yc ? ", equal bits" : "");
        CHECK(yg == yc);
        if (f16) CHECK(err < 2e-2);
        r.epi.act = gemv::Act::Silu;
        CHECK(outputs_apart(gpu->gemv(q, r), cpu->gemv(q, r), t) == 0);
      }
    }
  }
}

namespace {

// The relative L2 errors of the GPU's and the CPU twin's fp16 outputs against the float64
// reference.
std::pair<double, double> errors_against_reference(Backend& gpu, Backend& cpu, const QuantizedMatrix& q,
                                                   const GemvRequest& r) {
  const auto ref = test::reference(cpu, q, r);
  return {gemv::compare(gpu.gemv(q, r), ref, recipes::OutType::F16).rel_l2,
          gemv::compare(cpu.gemv(q, r), ref, recipes::OutType::F16).rel_l2};
}

}  // namespace

TEST_CASE("gemv: AWQ and NF4 where K ends inside a batch of loads") {
  // AWQ per channel over K = 520: 32 batches of 16 rows and 8 rows one at a time. NF4 over
  // K = 320: the last step of 128 along K holds 64, so lanes past K still take part in the
  // code book's shuffles (their words read as zero), and at 5 and 16 rows the block's copies of X
  // into shared memory stop at K; with N = 100 the last block's warps also hold channels past N,
  // which decode zeros and write nothing. AWQ with N = 200 (not a multiple of 32) takes the
  // tensor-core form that keeps its words in registers rather than in a ring, its last block's
  // warps partly past N.
  auto gpu = open_gpu();
  auto cpu = make_cpu_backend();
  using quant::Layout;
  using quant::Scheme;
  const struct {
    QuantSpec spec;
    int64_t n, k;
  } cases[] = {{{Scheme::Int4Asym, Layout::Awq, 520}, 128, 520},
               {{Scheme::Int4Asym, Layout::Awq, 128}, 200, 512},
               {{Scheme::Nf4, Layout::Plain, 64}, 128, 320},
               {{Scheme::Nf4, Layout::Plain, 32}, 100, 320}};
  for (const auto& c : cases) {
    const int64_t n = c.n;
    const Tensor w = random_matrix(Distribution::Normal, static_cast<uint64_t>(c.k + 11), n, c.k);
    const QuantizedMatrix q = cpu->quantize(w, c.spec);
    for (int64_t m : {1, 5, 16}) {
      const GemvRequest r = test::make_request(gemv::Path::Fast, recipes::OutType::F16, m, n, c.k,
                                               static_cast<uint64_t>(3 * m + c.k), gemv::Epilogue{});
      const auto [eg, ec] = errors_against_reference(*gpu, *cpu, q, r);
      std::printf("%lldx%lld scheme %d M=%lld rel err GPU %.2e CPU %.2e\n", static_cast<long long>(n),
                  static_cast<long long>(c.k), static_cast<int>(c.spec.scheme), static_cast<long long>(m), eg,
                  ec);
      CHECK_MESSAGE(eg < 1e-3, "scheme ", static_cast<int>(c.spec.scheme), " M=", m);
    }
  }
}

TEST_CASE("gemv: AWQ, NF4 and int8 at the edges of the shapes the checks let through") {
  // AWQ in groups of 32 (the CUDA-core form, many groups a slice) and with one scale a channel over K a
  // multiple of 64 (the tensor-core forms with one group); AWQ with N = 8, 16 and 24 (whole warps past
  // N); NF4 blocks of 128 and 1024 with several rows, 4 rows (where X is staged), and 10-15 rows with N
  // not a multiple of 16; int8 in groups of 64 (a step a group) and the mixed-GEMM layout with N not a
  // multiple of 64 and K not of 256; int4 with N = 1040 (not a multiple of 64) and 4160 (of 64, not
  // 128) from 2 to 129 rows (past 16: the ring of 4 or 8 token tiles, passes of 64 rows, the last of
  // one). Every third M clamps. Run under compute-sanitizer too: a write past Y shows there.
  auto gpu = open_gpu();
  auto cpu = make_cpu_backend();
  using quant::Layout;
  using quant::Scheme;
  using recipes::OutType;
  const struct {
    QuantSpec spec;
    int64_t n, k;
    std::vector<int64_t> ms;
  } cases[] = {{{Scheme::Int4Asym, Layout::Awq, 32}, 256, 1024, {1, 3, 9, 16}},
               {{Scheme::Int4Asym, Layout::Awq, 512}, 256, 512, {1, 4, 9, 16}},
               {{Scheme::Int4Asym, Layout::Awq, 64}, 8, 256, {1, 5, 16}},
               {{Scheme::Int4Asym, Layout::Awq, 128}, 16, 256, {1, 5, 16}},
               {{Scheme::Int4Asym, Layout::Awq, 128}, 24, 384, {1, 5, 16}},
               {{Scheme::Nf4, Layout::Plain, 128}, 256, 1024, {2, 4, 9, 16}},
               {{Scheme::Nf4, Layout::Plain, 1024}, 128, 2048, {2, 4, 9, 16}},
               {{Scheme::Nf4, Layout::Plain, 64}, 100, 512, {4, 10, 13, 15}},
               {{Scheme::Int8Sym, Layout::Ft, 64}, 256, 1024, {1, 3, 8, 16}},
               {{Scheme::Int8Sym, Layout::Ft, 128}, 48, 384, {1, 3, 9, 16}},
               {{Scheme::Int8Sym, Layout::Ft, 640}, 80, 640, {1, 3, 9, 16}},
               {{Scheme::Int4Sym, Layout::Ft, 64}, 48, 640, {1, 3, 9, 16}},
               {{Scheme::Int4Sym, Layout::Ft, 128}, 1040, 1152, {2, 9, 17, 65, 129}},
               {{Scheme::Int4Sym, Layout::Ft, 128}, 4160, 1152, {2, 9, 17, 65, 129}},
               {{Scheme::Int8Sym, Layout::Ft, 128}, 1040, 1152, {2, 9, 16}}};
  for (const auto& c : cases) {
    const Tensor w = random_matrix(Distribution::Normal, static_cast<uint64_t>(c.n + 5 * c.k), c.n, c.k);
    const QuantizedMatrix q = cpu->quantize(w, c.spec);
    const bool ft = c.spec.layout == Layout::Ft;
    for (OutType t : {OutType::F16, OutType::BF16}) {
      if (t == OutType::BF16 && !ft) continue;  // bf16 reads the mixed-GEMM layout
      for (int64_t m : c.ms) {
        gemv::Epilogue epi;
        epi.act = m % 2 ? gemv::Act::Silu : gemv::Act::None;
        if (m % 3 == 0) epi.clamp = true, epi.lo = -2.0f, epi.hi = 2.0f;
        const GemvRequest r =
            test::make_request(gemv::Path::Fast, t, m, c.n, c.k, static_cast<uint64_t>(13 * m + c.n), epi);
        const auto ref = test::reference(*cpu, q, r);
        const auto eg = gemv::compare(gpu->gemv(q, r), ref, t), ec = gemv::compare(cpu->gemv(q, r), ref, t);
        std::printf("%4lldx%-5lld scheme %d layout %d g%-5d %s M=%-3lld rel err GPU %.2e CPU %.2e\n",
                    static_cast<long long>(c.n), static_cast<long long>(c.k), static_cast<int>(c.spec.scheme),
                    static_cast<int>(c.spec.layout), c.spec.group, t == OutType::F16 ? "fp16" : "bf16",
                    static_cast<long long>(m), eg.rel_l2, ec.rel_l2);
        CHECK_MESSAGE(eg.rel_l2 < test::accuracy_goal(t), "scheme ", static_cast<int>(c.spec.scheme), " ",
                      c.n, "x", c.k, " g", c.spec.group, " M=", m);
      }
    }
  }
}

TEST_CASE("gemv: NF4 where long slices of K are cut into short ones") {
  // 29696x2176: 464 column blocks of 64 channels, K 17 steps of 128. On a device of 132
  // multiprocessors (the lent H100 and H200: 924 blocks fit where 1 and 3 rows load X per warp, 792
  // where 8 rows stage it in shared memory) fewer than two blocks fit a column block, so the one-wave
  // grid is one slice of all 17 steps, over 16, and up to 8 rows the launcher cuts it into slices of 6,
  // 6 and 5 steps (gemv::nf4_slice_steps): three slices meet per channel, and the last ends inside a
  // batch of two steps. The CPU case "gemv split: NF4 cuts long slices into short ones" checks the
  // rule's grid for this shape on those devices; others may take another grid, whose outputs are
  // checked all the same.
  auto gpu = open_gpu();
  auto cpu = make_cpu_backend();
  const int64_t n = 29696, k = 2176;
  const Tensor w = random_matrix(Distribution::Normal, 41, n, k);
  const QuantizedMatrix q = cpu->quantize(w, {quant::Scheme::Nf4, quant::Layout::Plain, 64});
  for (int64_t m : {1, 3, 8}) {
    const GemvRequest r = test::make_request(gemv::Path::Fast, recipes::OutType::F16, m, n, k,
                                             static_cast<uint64_t>(7 * m), gemv::Epilogue{});
    const auto [eg, ec] = errors_against_reference(*gpu, *cpu, q, r);
    std::printf("NF4 %lldx%lld M=%lld: rel err GPU %.2e CPU %.2e\n", static_cast<long long>(n),
                static_cast<long long>(k), static_cast<long long>(m), eg, ec);
    CHECK_MESSAGE(eg < 1e-3, "M=", m);
  }
}

TEST_CASE(
    "gemv: one row of int4 on the lane form, where K ends inside a slab and the columns inside a range") {
  // One row of X with fp16 int4 weights takes the lane form (ft_lane_kernel): warps own 256 rows of K (a
  // slab), blocks as many warps as K has slabs (8, 16 or 32) and a range of column groups (4 channels each),
  // as many groups a block as fill one wave.
  // Where the warps do not divide the slabs, the slabs spread evenly over the rows of blocks
  // (gemv::LaneGrid::per_row) and each block's warps past them stay idle:
  // - 48x8320: K is 32.5 slabs, two rows of 17 and 16, the second ending with a warp whose last two
  //   tiles lie past K (those lanes multiply zeros); the two rows of blocks meet in the workspace.
  // - 64x28672: 112 slabs, four rows of blocks of 28 busy warps meeting in the workspace.
  // - 32x65792: 257 slabs, nine rows of blocks, eight of 29 busy warps and the last of 25.
  // - 64x2176: blocks of 16 warps, the ninth half past K, the others idle.
  // - 16x384: one block of 8 warps, its second half past K.
  // - 4240x1024: 1060 column groups; on a device of 132 multiprocessors with 4 blocks each, ranges of 3
  //   groups, the last holding one.
  // - 1024x8192: blocks of 32 warps, the whole K in each.
  // - 4240x8192: blocks of 32 warps again, with walks long enough for whole rounds of loads: on 132
  //   multiprocessors ranges of 9 column groups, the last of 7 (fp16 X there takes the form whose sums
  //   leave a step late, so its steady loop and its last, separate emit are both checked).
  // - 2048x11008 and 6144x8320: beyond K = 8192 the block is chosen by its grid (gemv::lane_warps); on a
  //   device of 132 multiprocessors (4, 2, 1 blocks of 8, 16, 32 warps each) 3 rows of 16 warps with
  //   15, 15 and 13 busy, and 5 rows of 8 warps with 7, 7, 7, 7 and 5 (the last slab half past K),
  //   meeting in the workspace.
  // - 16x131072: 512 slabs, sixteen rows of 32-warp blocks; the last row waits for fifteen slots, read in
  //   two rounds (lane_meet_in_slots).
  // - 17408x4224: one row of 32-warp blocks, 17 busy (the last slab half past K), on 132 multiprocessors
  //   ranges of 33 column groups: fp16 X takes the unmet sums (gemv::lane_unmet) and bf16 X with groups of
  //   128 the staged scales (gemv::lane_stages_scales), the second scale row of the last slab staged as
  //   zeros (every instance of both is checked bit for bit in the next case).
  // Wherever the grid fits on the device at once (all of these on a device of 16 multiprocessors or
  // more) the rows of blocks meet in slots of the workspace in a fixed order, so a second call gives the
  // same outputs bit for bit.
  // Every group size the kernel reads (64, 128, one a channel), fp16 and bf16 X, bias, activation and
  // clamp in the epilogue, and the naive conversion beside the recipe's (the same products: equal up to
  // the order in which the rows of blocks meet).
  auto gpu = open_gpu();
  auto cpu = make_cpu_backend();
  const std::pair<int64_t, int64_t> shapes[] = {{48, 8320},    {64, 28672},  {32, 65792},  {64, 2176},
                                                {16, 384},     {4240, 1024}, {1024, 8192}, {4240, 8192},
                                                {2048, 11008}, {6144, 8320}, {16, 131072}, {17408, 4224}};
  for (const auto& [n, k] : shapes) {
    const Tensor w = random_matrix(Distribution::Normal, static_cast<uint64_t>(n + k), n, k);
    for (const int group : {64, 128, static_cast<int>(k)}) {
      const QuantizedMatrix q = cpu->quantize(w, {quant::Scheme::Int4Sym, quant::Layout::Ft, group});
      gemv::Epilogue silu, clamp;
      silu.act = gemv::Act::Silu;
      clamp.act = gemv::Act::Relu;
      clamp.clamp = true;
      clamp.lo = -1.0f, clamp.hi = 0.5f;
      for (const recipes::OutType t : {recipes::OutType::F16, recipes::OutType::BF16}) {
        for (const gemv::Epilogue& e : {gemv::Epilogue{}, silu, clamp}) {
          const GemvRequest r =
              test::make_request(gemv::Path::Fast, t, 1, n, k, static_cast<uint64_t>(n + group), e);
          const auto yg = gpu->gemv(q, r);
          const auto ref = test::reference(*cpu, q, r);
          const double eg = gemv::compare(yg, ref, t).rel_l2;
          const double ec = gemv::compare(cpu->gemv(q, r), ref, t).rel_l2;
          GemvRequest rn = r;
          rn.path = gemv::Path::Naive;
          const auto yn = gpu->gemv(q, rn);
          REQUIRE(yn.size() == yg.size());
          const size_t apart = outputs_apart(yg, yn, t);
          std::printf(
              "int4 %lldx%lld g%d M=1 %s act %d clamp %d: rel err GPU %.2e CPU %.2e, naive apart %zu\n",
              static_cast<long long>(n), static_cast<long long>(k), group,
              t == recipes::OutType::F16 ? "fp16" : "bf16", static_cast<int>(e.act),
              static_cast<int>(e.clamp), eg, ec, apart);
          CHECK(eg < test::accuracy_goal(t));
          // The tensor cores keep every product exact, as the twin does, so the two errors differ only
          // by the order of the fp32 sums (products rounded to fp16, as the lane form once had them,
          // doubled fp16's: 4e-4 against 2e-4).
          CHECK(eg <= 1.1 * ec);
          CHECK(apart == 0);
          if (k > 8192) CHECK(gpu->gemv(q, r) == yg);
        }
      }
    }
  }
}

TEST_CASE("gemv: one row on the lane form's other forms (fp16's sums unmet, bf16's scales staged)") {
  // Where a block walks ranges of 32 column groups and more, fp16 X's sums leave each step unmet and the
  // block's meeting adds them in the order the shuffles would have (gemv::lane_unmet), and with groups of
  // 128 bf16 X's warps copy their scales to shared memory at the start (gemv::lane_stages_scales): the
  // outputs must equal bit for bit the plain form's (the same launch with no shared memory to opt in to,
  // GemvLaunch::block_shared_most 0) and the naive conversion's (which keeps the plain form). Told the device
  // has 4 multiprocessors (16, 8 and 4 blocks of 8, 16 and 32 warps at once), small shapes reach every
  // instance (fp16's with its sums a step late): one row of blocks of 8, 16 and 32 warps (17 of 32 busy,
  // the last slab half past K, its second scale row staged as zeros); several rows meeting in slots, with
  // the slabs spread over the rows and not; and rows settled by the last block to arrive (more blocks than
  // fit at once), where the order of arrival may change the last bits, so that there they need only lie
  // within two units in the last place. Each line says which form the launcher took
  // (cuda::gemv_lane_other_form), and that choice is checked too.
  auto gpu = open_gpu();
  auto cpu = make_cpu_backend();
  using recipes::OutType;
  const cudaDeviceProp prop = device_prop();
  constexpr int kSms = 4;
  const auto resident = [](int w) { return int64_t{kSms} * 32 / w; };
  const int cc = 10 * prop.major + prop.minor;
  const std::pair<int64_t, int64_t> shapes[] = {{2048, 512},  {1024, 2176}, {512, 4224},  {384, 8320},
                                                {384, 9088},  {320, 16512}, {320, 19328}, {256, 16000},
                                                {128, 16512}, {512, 16512}, {1024, 16000}};
  for (const auto& [n, k] : shapes) {
    const int w = gemv::lane_warps(n, k, resident);
    const gemv::LaneGrid g = gemv::lane_grid(n, k, w, resident(w));
    const bool slots = gemv::lane_meets_in_slots(g, n, k, resident(w));
    const bool fixed = g.rows == 1 || slots;  // the rows of blocks meet in one order
    std::printf(
        "int4 %lldx%lld on %d multiprocessors: %d warps, %lld rows of %lld busy%s, ranges of %lld groups, "
        "%s\n",
        static_cast<long long>(n), static_cast<long long>(k), kSms, w, static_cast<long long>(g.rows),
        static_cast<long long>(g.per_row), g.spread ? " (spread)" : "", static_cast<long long>(g.per),
        g.rows == 1 ? "one row" : (slots ? "slots" : "settled by the last block"));
    // The shapes stay where the rules take the other forms.
    CHECK(g.per >= gemv::kLaneUnmetGroups);
    CHECK(g.per >= gemv::kLaneStagedGroups);
    const Tensor wt = random_matrix(Distribution::Normal, static_cast<uint64_t>(3 * n + k), n, k);
    for (const int group : {64, 128}) {
      const QuantizedMatrix q = cpu->quantize(wt, {quant::Scheme::Int4Sym, quant::Layout::Ft, group});
      const DeviceWeights dev(q);
      gemv::Epilogue silu;
      silu.act = gemv::Act::Silu;
      for (const OutType t : {OutType::F16, OutType::BF16}) {
        for (const gemv::Epilogue& e : {gemv::Epilogue{}, silu}) {
          CAPTURE(n);
          CAPTURE(k);
          CAPTURE(group);
          CAPTURE(static_cast<int>(t));
          CAPTURE(static_cast<int>(e.act));
          // The other form, again, the plain form (no shared memory to opt in to), the naive conversion.
          const struct {
            gemv::Path path;
            bool room;
          } calls[] = {{gemv::Path::Fast, true},
                       {gemv::Path::Fast, true},
                       {gemv::Path::Fast, false},
                       {gemv::Path::Naive, true}};
          std::vector<uint16_t> y[4];
          bool other[4];  // the launcher's choice (cuda::gemv_lane_other_form)
          for (int at = 0; at < 4; ++at) {
            const GemvRequest r =
                test::make_request(calls[at].path, t, 1, n, k, static_cast<uint64_t>(n + group), e);
            DeviceGemv d(dev.w, r, prop);
            d.launch.sms = kSms;
            if (!calls[at].room) d.launch.block_shared_most = 0;
            other[at] = cuda::gemv_lane_other_form(d.launch);
            const cuda::LaunchLog log;
            check_launch(d, *cpu, q, r);
            // The query tells what the launch did: the one lane kernel, the other form's flag (the unmet
            // sums for fp16, the staged scales for bf16) as the query says.
            REQUIRE(log.launches().size() == 1);
            const std::vector<std::string> args = template_args(log.launches()[0].name, "ft_lane_kernel");
            REQUIRE(args.size() == 7);
            CHECK(args[1] == (calls[at].path == gemv::Path::Naive ? "true" : "false"));
            CHECK(args[t == OutType::F16 ? 5 : 6] == (other[at] ? "true" : "false"));
            CHECK(args[t == OutType::F16 ? 6 : 5] == "false");
            y[at] = d.y.to_host();
          }
          // bf16 X stages its scales for groups of 128 only; with no room, and on the naive conversion, the
          // plain form. Compute capability 9.0 (227 KB a block may opt in to, 228 KB a multiprocessor) holds
          // every grid here in the other form, so that there the comparisons below are of two forms.
          const bool form = t == OutType::F16 || (group == 128 && cc >= 80);
          CHECK(other[0] == other[1]);
          CHECK_FALSE(other[2]);
          CHECK_FALSE(other[3]);
          if (!form) CHECK_FALSE(other[0]);
          if (form && cc == 90) CHECK(other[0]);
          const auto unlike = [](const std::vector<uint16_t>& a, const std::vector<uint16_t>& b) {
            size_t c = 0;
            for (size_t i = 0; i < a.size(); ++i) c += a[i] != b[i];
            return c;
          };
          REQUIRE(y[3].size() == y[0].size());
          const size_t naive = unlike(y[0], y[3]), plain = unlike(y[0], y[2]), again = unlike(y[0], y[1]);
          std::printf(
              "  g%d %s act %d, %s: outputs unlike the naive conversion's %zu, "
              "unlike the plain form's %zu, unlike a second call's %zu\n",
              group, t == OutType::F16 ? "fp16" : "bf16", static_cast<int>(e.act),
              other[0] ? (t == OutType::F16 ? "sums unmet" : "scales staged") : "the plain form", naive,
              plain, again);
          if (fixed) {
            CHECK(naive == 0);
            CHECK(plain == 0);
            CHECK(again == 0);
          } else {  // within two units in the last place
            CHECK(outputs_apart(y[0], y[3], t) == 0);
            CHECK(outputs_apart(y[0], y[2], t) == 0);
          }
        }
      }
    }
  }
}

TEST_CASE("gemv: layers launched back to back, each reading the output of the layer before") {
  // On compute capability 9.0 three kernels are programmatic dependents of the launch before them: the
  // one-row kernel (ft_lane_kernel), the AWQ lane kernel (1 to 16 rows), and the walk's X kernel
  // (walk_x_kernel, the first of the walk of 2 to 32 rows). Their blocks may start on the multiprocessors
  // that launch has left and read W, and they wait for it (griddepcontrol.wait) before they read X or touch
  // the workspace. A chain of layers, each X the output of the layer before, queued with no wait between
  // them, must give what the same chain gives with the device waited for after each layer: bit for bit where
  // the blocks' sums meet in one order (the one-row kernel's single row of blocks or slots), and every layer
  // within the accuracy goal of the float64 product of its X. The outputs are set to NaN before each chain,
  // so that a layer that read its X before the layer before had written it would show. Shapes: one row of
  // blocks (4096x4096), rows of blocks beyond K = 8192 (8448x8448), and more blocks than fit at once
  // (4096x4096 told the device has 4 multiprocessors), whose rows are settled by the last block to arrive;
  // more than two rows at 4096x4096 only.
  auto gpu = open_gpu();
  auto cpu = make_cpu_backend();
  using recipes::OutType;
  const cudaDeviceProp prop = device_prop();
  const int cc = 10 * prop.major + prop.minor;
  constexpr int kLayers = 4;
  struct Form {
    const char* name;
    QuantSpec spec;
    int64_t m;
  };
  const Form forms[] = {{"int4 g128, one row", {quant::Scheme::Int4Sym, quant::Layout::Ft, 128}, 1},
                        {"AWQ int4 g128, one row", {quant::Scheme::Int4Asym, quant::Layout::Awq, 128}, 1},
                        {"AWQ int4 g128, two rows", {quant::Scheme::Int4Asym, quant::Layout::Awq, 128}, 2},
                        {"AWQ int4 g128, 8 rows", {quant::Scheme::Int4Asym, quant::Layout::Awq, 128}, 8},
                        {"AWQ int4 g128, 16 rows", {quant::Scheme::Int4Asym, quant::Layout::Awq, 128}, 16},
                        {"int4 g128, 16 rows", {quant::Scheme::Int4Sym, quant::Layout::Ft, 128}, 16}};
  struct Case {
    int64_t n;
    int sms;  // 0: the device's
  };
  for (const Case c : {Case{4096, 0}, Case{8448, 0}, Case{4096, 4}}) {
    const int64_t n = c.n;
    Tensor wt = random_matrix(Distribution::Normal, static_cast<uint64_t>(5 * n + c.sms), n, n);
    // Rows of length 1 on average, so that each layer's Y is about as large as its X (unscaled, the chain's
    // fp16 outputs would shrink into the subnormals within three layers).
    float* f = wt.as<float>();
    double squares = 0;
    for (int64_t i = 0; i < n * n; ++i) squares += static_cast<double>(f[i]) * f[i];
    const auto to_unit = static_cast<float>(1.0 / std::sqrt(squares / static_cast<double>(n)));
    for (int64_t i = 0; i < n * n; ++i) f[i] *= to_unit;
    for (const Form& form : forms) {
      if (form.m > 2 && n > 4096) continue;  // their float64 references at 8448x8448 take long
      const QuantizedMatrix q = cpu->quantize(wt, form.spec);
      const DeviceWeights dev(q);
      const int64_t m = form.m;
      const bool lane = form.spec.layout == quant::Layout::Ft && m == 1;
      for (const OutType t : {OutType::F16, OutType::BF16}) {
        if (t == OutType::BF16 && form.spec.layout == quant::Layout::Awq)
          continue;  // AWQ's products are fp16
        CAPTURE(form.name);
        CAPTURE(n);
        CAPTURE(c.sms);
        CAPTURE(static_cast<int>(t));
        GemvRequest r = test::make_request(gemv::Path::Fast, t, m, n, n, static_cast<uint64_t>(n + 11));
        r.bias.clear();
        DeviceGemv d(dev.w, r, prop);
        if (c.sms > 0) d.launch.sms = c.sms;
        const int sms = d.launch.sms;
        const auto resident = [sms](int w) { return int64_t{sms} * 32 / w; };
        bool fixed = false;
        if (lane) {
          const int w = gemv::lane_warps(n, n, resident);
          const gemv::LaneGrid g = gemv::lane_grid(n, n, w, resident(w));
          fixed = g.rows == 1 || gemv::lane_meets_in_slots(g, n, n, resident(w));
        }
        // The kernel that starts each layer, where the device is one these forms are built for (from nine
        // rows the AWQ lane kernel takes only N whose columns the device holds at once:
        // gemv::awq_lane_takes).
        const char* first = lane ? "ft_lane_kernel<"
                            : form.spec.layout == quant::Layout::Awq
                                ? (cc >= 80 && m <= 8 ? "awq_lane_kernel<" : nullptr)
                                : (gemv::walk16_takes(cc, m, n, n, 128) ? "walk_x_kernel<" : nullptr);
        std::deque<DeviceArray<uint16_t>> ys;
        for (int i = 0; i < kLayers; ++i) ys.emplace_back(static_cast<size_t>(m * n));
        const auto chain = [&](bool wait) {
          for (DeviceArray<uint16_t>& y : ys)
            REQUIRE(cudaMemset(y.get(), 0xFF, static_cast<size_t>(m * n) * 2) == cudaSuccess);  // NaN
          cuda::GemvLaunch L = d.launch;
          const cuda::LaunchLog log;
          for (int i = 0; i < kLayers; ++i) {
            L.p.x = i == 0 ? d.dx.get() : ys[static_cast<size_t>(i - 1)].get();
            L.y = ys[static_cast<size_t>(i)].get();
            const std::string error = cuda::gemv_run(L, wait);
            REQUIRE_MESSAGE(error.empty(), error);
          }
          REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
          if (first) {
            REQUIRE_FALSE(log.launches().empty());
            CHECK(sass::short_name(log.launches()[0].name).rfind(first, 0) == 0);
          }
          std::vector<std::vector<uint16_t>> out;
          for (const DeviceArray<uint16_t>& y : ys) out.push_back(y.to_host());
          return out;
        };
        const std::vector<std::vector<uint16_t>> waited = chain(true), queued = chain(false);
        size_t unlike = 0;
        for (int i = 0; i < kLayers; ++i) {
          CAPTURE(i);
          const std::vector<uint16_t>& y = queued[static_cast<size_t>(i)];
          for (size_t j = 0; j < y.size(); ++j) unlike += y[j] != waited[static_cast<size_t>(i)][j];
          GemvRequest ri = r;
          if (i > 0) ri.x = queued[static_cast<size_t>(i - 1)];
          CHECK(gemv::compare(y, test::reference(*cpu, q, ri), t).rel_l2 < test::accuracy_goal(t));
        }
        std::printf(
            "%s %lldx%lld %s on %d multiprocessors (%s): %d layers queued, %zu outputs unlike the waited "
            "chain's\n",
            form.name, static_cast<long long>(n), static_cast<long long>(n),
            t == OutType::F16 ? "fp16" : "bf16", sms, fixed ? "one order of sums" : "sums meet in any order",
            kLayers, unlike);
        if (fixed) CHECK(unlike == 0);
        CHECK(d.workspace_zero());
      }
    }
  }
}

TEST_CASE("gemv: one row of bf16 X on the lane form, however large or small X is") {
  // bf16 X is scaled into fp16, each warp's slab of 256 rows of K by its own power of two
  // (lane_x_bf16). So X times 2^p must give Y times 2^p bit for bit (no bias, no activation; K up to
  // 8192, where one block holds the whole K and the sums meet in one order), for slabs far apart in
  // size too; a value 2^30 above the rest of its slab must not push them out of fp16; and an infinity
  // must reach every output as the float64 product has it (Inf where its weight is not zero, NaN
  // where it is).
  auto gpu = open_gpu();
  auto cpu = make_cpu_backend();
  using recipes::OutType;
  const auto bf16 = [](double v) { return gemv::f32_to_act(static_cast<float>(v), OutType::BF16); };
  const auto value = [](uint16_t h) { return static_cast<double>(gemv::act_to_f32(h, OutType::BF16)); };
  for (const auto& [n, k] : {std::pair<int64_t, int64_t>{256, 2048}, {512, 8192}}) {
    const Tensor w = random_matrix(Distribution::Normal, static_cast<uint64_t>(5 * n + k), n, k);
    const QuantizedMatrix q = cpu->quantize(w, {quant::Scheme::Int4Sym, quant::Layout::Ft, 128});
    GemvRequest base = test::make_request(gemv::Path::Fast, OutType::BF16, 1, n, k, static_cast<uint64_t>(n));
    base.bias.clear();
    // Slabs alternately 2^40 and 2^-40 times the base X (scaled below by 2^-40 and 2^40 only: bf16 holds
    // 2^-133 to 2^128).
    GemvRequest apart = base;
    for (int64_t i = 0; i < k; ++i) apart.x[i] = bf16(std::ldexp(value(base.x[i]), (i / 256) % 2 ? -40 : 40));
    for (const GemvRequest* from : {&base, &apart}) {
      const std::vector<uint16_t> y0 = gpu->gemv(q, *from);
      for (const int p : from == &apart ? std::vector<int>{-40, 40} : std::vector<int>{-100, -40, 40, 100}) {
        CAPTURE(n);
        CAPTURE(p);
        CAPTURE(from == &apart);
        GemvRequest r = *from;
        for (auto& h : r.x) h = bf16(std::ldexp(value(h), p));
        const std::vector<uint16_t> y = gpu->gemv(q, r);
        size_t unlike = 0;
        for (size_t i = 0; i < y.size(); ++i) unlike += y[i] != bf16(std::ldexp(value(y0[i]), p));
        const double err = gemv::compare(y, test::reference(*cpu, q, r), OutType::BF16).rel_l2;
        std::printf("bf16 %lldx%lld M=1, X times 2^%d%s: %zu outputs not Y times 2^%d, rel err %.2e\n",
                    static_cast<long long>(n), static_cast<long long>(k), p,
                    from == &apart ? " (slabs 2^80 apart)" : "", unlike, p, err);
        CHECK(unlike == 0);
        CHECK(err < test::accuracy_goal(OutType::BF16));
      }
    }
    // One value of each slab 2^30 above the rest: the slab's scale follows the largest, and nothing
    // overflows fp16.
    GemvRequest peak = base;
    for (int64_t s = 0; s < k / 256; ++s) peak.x[s * 256 + 37] = bf16(std::ldexp(1.0, 30));
    const double peak_err =
        gemv::compare(gpu->gemv(q, peak), test::reference(*cpu, q, peak), OutType::BF16).rel_l2;
    std::printf("bf16 %lldx%lld M=1, a value 2^30 in each slab: rel err %.2e\n", static_cast<long long>(n),
                static_cast<long long>(k), peak_err);
    CHECK(peak_err < test::accuracy_goal(OutType::BF16));
    // An infinity in the third slab: the float64 product's Inf or NaN in every output.
    GemvRequest inf = base;
    inf.x[2 * 256 + 5] = 0x7F80;  // +Inf
    inf.x[2 * 256 + 6] = bf16(1e30);
    const std::vector<double> inf_ref = test::reference(*cpu, q, inf);
    const NonFinite nf = outputs_unlike(gpu->gemv(q, inf), inf_ref, OutType::BF16);
    std::printf("bf16 %lldx%lld M=1, an infinity in X: %zu outputs unlike the float64 product's (%zu NaN)\n",
                static_cast<long long>(n), static_cast<long long>(k), nf.unlike, nf.nans);
    CHECK(nf.unlike == 0);
    CHECK(!std::isfinite(inf_ref[0]));
  }
}

TEST_CASE("gemv: 2 to 32 rows of int4 on the walk fed by the copy engine, its runs crossing ranges") {
  // From 2 to 32 rows of X and 2^24 weights (2 rows from 2^25), int4 weights take the walk (compute
  // capability 9.0), fp16 and bf16 X, with X laid out in tiles of 16 tokens whatever M (two from 17 rows):
  // blocks of 128 channels (ranges) and steps of 128 rows of K, a unit one step (bf16 X from 2^25
  // weights: two where K has an even number of steps), the units shared stream-K fashion, so a block's
  // run may start or end inside a range and cross into the next; its sums meet the others' in the
  // workspace, and the settling kernel writes the outputs.
  // - 2048x8320: 16 ranges of 65 steps, 1040 units on up to 396 blocks (the H200: three a
  //   multiprocessor): runs of two and three units, many crossing.
  // - 256x131072: two ranges of 1024 steps; bf16 in 1024 units of two steps on up to 264 blocks (two a
  //   multiprocessor), fp16 in 2048 units; runs of 3-6 units, one crossing.
  // - 4096x4096: 32 ranges of 32 steps.
  // - 6144x11008: 48 ranges of 86 steps; bf16 2064 units of two steps, runs of 7-8; fp16 4128, 10-11.
  // Groups of 64 (each 64-row tile its own scale), 128 and one a channel; 2 (from 2^25 weights: 256x131072
  // and 6144x11008), 3, 5, 8, 9, 12 and 16 rows, and 17, 24 and 32 in two token tiles (the tokens past M
  // read zeros and only those below M meet; at 17 and 24 rows the shapes of 2^25 weights or more,
  // 256x131072 and 6144x11008, take the half tile, gemv::walk_half_tile; there bf16 X at 2-8 rows puts its
  // tokens on the mma's n8 side too, gemv::walk_eight_n8);
  // an activation in the epilogue; the naive conversion beside the recipe's (the same operands: equal up to
  // the order in which the runs meet).
  auto gpu = open_gpu();
  auto cpu = make_cpu_backend();
  // At fewer inputs (the compute-sanitizer runs) the first two shapes only.
  std::vector<std::pair<int64_t, int64_t>> shapes = {{2048, 8320}, {256, 131072}};
  if (kInputs >= (size_t{1} << 26)) shapes.insert(shapes.end(), {{4096, 4096}, {6144, 11008}});
  for (const auto& [n, k] : shapes) {
    const Tensor w = random_matrix(Distribution::Normal, static_cast<uint64_t>(n + 5 * k), n, k);
    for (const int group : {64, 128, static_cast<int>(k)}) {
      const QuantizedMatrix q = cpu->quantize(w, {quant::Scheme::Int4Sym, quant::Layout::Ft, group});
      for (const recipes::OutType t : {recipes::OutType::F16, recipes::OutType::BF16}) {
        for (const int64_t m : {2, 3, 5, 8, 9, 12, 16, 17, 24, 32}) {
          if (!gemv::walk16_takes(90, m, n, k, group)) continue;  // 2 rows of 2^24 weights: the ring
          gemv::Epilogue e;
          e.act = m == 9 ? gemv::Act::Silu : gemv::Act::None;
          const GemvRequest r =
              test::make_request(gemv::Path::Fast, t, m, n, k, static_cast<uint64_t>(n + group + m), e);
          const auto yg = gpu->gemv(q, r);
          const auto ref = test::reference(*cpu, q, r);
          const double eg = gemv::compare(yg, ref, t).rel_l2;
          GemvRequest rn = r;
          rn.path = gemv::Path::Naive;
          const auto yn = gpu->gemv(q, rn);
          REQUIRE(yn.size() == yg.size());
          const size_t apart = outputs_apart(yg, yn, t);
          std::printf("int4 %lldx%lld g%d %s M=%lld: rel err GPU %.2e, naive apart %zu\n",
                      static_cast<long long>(n), static_cast<long long>(k), group,
                      t == recipes::OutType::F16 ? "fp16" : "bf16", static_cast<long long>(m), eg, apart);
          CHECK(eg < test::accuracy_goal(t));
          CHECK(apart == 0);
        }
      }
    }
  }
}

TEST_CASE("gemv: AWQ with one row of X on a grid of many blocks, on CUDA cores and on tensor cores") {
  // 8192x8192. Groups of 32 take the CUDA-core kernels (the tensor-core forms need groups of a
  // multiple of 64): 8 x 86 blocks, over two a multiprocessor on the lent devices, so one row of X
  // takes the one-token kernel. Groups of 128 take the one-row lane form (gemv::awq_lane_takes): 32
  // columns of 256 channels by rows of blocks, as many as fill the device.
  auto gpu = open_gpu();
  auto cpu = make_cpu_backend();
  const int64_t n = 8192, k = 8192;
  const Tensor w = random_matrix(Distribution::Normal, 97, n, k);
  for (const int group : {32, 128}) {
    const QuantizedMatrix q = cpu->quantize(w, {quant::Scheme::Int4Asym, quant::Layout::Awq, group});
    gemv::Epilogue epi;
    epi.act = gemv::Act::Silu;
    for (const gemv::Epilogue& e : {gemv::Epilogue{}, epi}) {
      const GemvRequest r = test::make_request(gemv::Path::Fast, recipes::OutType::F16, 1, n, k, 5, e);
      const auto [eg, ec] = errors_against_reference(*gpu, *cpu, q, r);
      std::printf("AWQ 8192x8192 g%d M=1 act %d: rel err GPU %.2e CPU %.2e\n", group, static_cast<int>(e.act),
                  eg, ec);
      CHECK(eg < 1e-3);
    }
  }
}

TEST_CASE("gemv: AWQ with 1-16 rows of X on the lane form, where warps start and end inside groups") {
  // The lane form's warps take runs of steps of 16 rows of K spread evenly (gemv::awq_lane_grid), so a
  // run may start and end inside a group: its zero points and scales must be the group's own. On 132
  // multiprocessors (264 blocks at once) at one row 2048x11008 has 8 columns of 256 channels by 29 rows of
  // blocks, runs of 3 steps (groups of 128 are 8 steps, of 64 four), the last run one step and two warps
  // idle; 768x4160 (65 groups of 64) 3 columns by 33 rows of one-step runs; 2560x5120 10 columns by 20
  // rows of two-step runs. One row puts X in one column of the product's 8; two rows in two
  // (awq_lane_kernel<2, 4, 1>); three to eight in all eight, warps of 128 channels, the columns past M
  // zeros (<8, 2, 1>); nine to sixteen in two token tiles of eight, warps of 64 channels (<8, 1, 2>). On
  // any device, every row's outputs as the float64 product's within the goal.
  // Then an infinity and a NaN in X's last row: every output of that row as the float64 product has it
  // (Inf of its sign, or NaN where the infinity meets a weight q - z = 0; NaN everywhere), and the other
  // rows, which share the products' columns with it, still the float64 product's within the goal.
  auto gpu = open_gpu();
  auto cpu = make_cpu_backend();
  const std::pair<int64_t, int64_t> shapes[] = {{2048, 11008}, {768, 4160}, {2560, 5120}};
  for (const auto& [n, k] : shapes) {
    const Tensor w = random_matrix(Distribution::Normal, static_cast<uint64_t>(n + k), n, k);
    for (const int group : {64, 128}) {
      if (k % group != 0) continue;
      const QuantizedMatrix q = cpu->quantize(w, {quant::Scheme::Int4Asym, quant::Layout::Awq, group});
      for (const int64_t m : {1, 2, 3, 4, 5, 8, 9, 12, 16}) {
        const GemvRequest r = test::make_request(gemv::Path::Fast, recipes::OutType::F16, m, n, k, 11, {});
        const auto [eg, ec] = errors_against_reference(*gpu, *cpu, q, r);
        std::printf("AWQ %lldx%lld g%d M=%lld (lane form): rel err GPU %.2e CPU %.2e\n",
                    static_cast<long long>(n), static_cast<long long>(k), group, static_cast<long long>(m),
                    eg, ec);
        CHECK(eg < 1e-3);
        if (group == 128 && n == 2048) {
          const auto last = static_cast<std::ptrdiff_t>((m - 1) * n);
          for (const uint16_t special : {uint16_t{0x7C00}, uint16_t{0xFC00}, uint16_t{0x7E00}}) {
            GemvRequest odd = r;
            // In the last row, inside a run, not at a group's start.
            odd.x[static_cast<size_t>((m - 1) * k + k / 2 + 3)] = special;
            const std::vector<double> ref = test::reference(*cpu, q, odd);
            const std::vector<uint16_t> y = gpu->gemv(q, odd);
            REQUIRE(y.size() == static_cast<size_t>(m * n));
            const NonFinite nf = outputs_unlike({y.begin() + last, y.end()}, {ref.begin() + last, ref.end()},
                                                recipes::OutType::F16);
            // (The rows of blocks meet by atomic adds, so the other rows match the float64 product, not
            // bit for bit the run without the infinity.)
            const double others =
                m > 1 ? gemv::compare({y.begin(), y.begin() + last}, {ref.begin(), ref.begin() + last},
                                      recipes::OutType::F16)
                            .rel_l2
                      : 0.0;
            std::printf(
                "AWQ %lldx%lld M=%lld, x = 0x%04X in row %lld: %zu outputs unlike the float64 product's "
                "(%zu NaN), the other rows' rel err %.2e\n",
                static_cast<long long>(n), static_cast<long long>(k), static_cast<long long>(m), special,
                static_cast<long long>(m - 1), nf.unlike, nf.nans, others);
            CHECK(nf.unlike == 0);
            CHECK(!std::isfinite(ref[static_cast<size_t>(last)]));
            CHECK(others < 1e-3);
          }
        }
      }
    }
  }
}

TEST_CASE("gemv: AWQ with 9-16 rows of X past one wave of the lane form's blocks, on the ring") {
  // From nine rows the lane form takes N only where one wave of its blocks holds N's columns of 64
  // channels (gemv::awq_lane_takes): 38400 channels are 600 columns, more than any lent device holds at
  // once (264 on the H200), so these run on the tensor-core ring; 1024 channels (16 columns) on the lane
  // form. Both with a K that ends inside a warp's run. On any device, every row's outputs as the float64
  // product's within the goal.
  auto gpu = open_gpu();
  auto cpu = make_cpu_backend();
  for (const int64_t n : {38400, 1024}) {
    const int64_t k = 320;
    const Tensor w = random_matrix(Distribution::Normal, static_cast<uint64_t>(n + 7), n, k);
    const int group = 64;
    const QuantizedMatrix q = cpu->quantize(w, {quant::Scheme::Int4Asym, quant::Layout::Awq, group});
    for (const int64_t m : {9, 16}) {
      const GemvRequest r = test::make_request(gemv::Path::Fast, recipes::OutType::F16, m, n, k, 17, {});
      const auto [eg, ec] = errors_against_reference(*gpu, *cpu, q, r);
      std::printf("AWQ %lldx%lld g%d M=%lld (past one wave: %s): rel err GPU %.2e CPU %.2e\n",
                  static_cast<long long>(n), static_cast<long long>(k), group, static_cast<long long>(m),
                  n == 38400 ? "the ring" : "the lane form", eg, ec);
      CHECK(eg < 1e-3);
    }
  }
}

TEST_CASE("gemv: NF4 with one row of X where K ends inside a step and N inside a block") {
  // One row of NF4 runs on nf4_mma_kernel: a warp 16 channels, steps of 128 along K, blocks of 4 warps
  // (64 channels) taking slices of whole steps that meet in the workspace where K is split.
  // - 2048x11008, blocks of 64: 86 steps, split into slices on any device of many multiprocessors;
  // - 768x4160, blocks of 32: 32.5 steps, the last step's second half past K (read as zeros);
  // - 1040x4096, blocks of 4096 (one absmax a channel): 16.25 blocks of 64 channels, the last block's
  //   three warps past N;
  // - 29696x2176, blocks of 128: 17 steps over 464 blocks.
  // Bias always, SiLU on one shape; on any device the outputs as the float64 product's within the goal.
  // Then an infinity and a NaN in X: every output as the float64 product has it.
  auto gpu = open_gpu();
  auto cpu = make_cpu_backend();
  const struct {
    int64_t n, k;
    int block;
    gemv::Act act;
    bool non_finite;  // also an infinity and a NaN in X
  } shapes[] = {{2048, 11008, 64, gemv::Act::None, true},
                {768, 4160, 32, gemv::Act::Silu, false},
                {1040, 4096, 4096, gemv::Act::None, false},
                {29696, 2176, 128, gemv::Act::None, false}};
  for (const auto& c : shapes) {
    const Tensor w = random_matrix(Distribution::Normal, static_cast<uint64_t>(c.n + 3 * c.k), c.n, c.k);
    const QuantizedMatrix q = cpu->quantize(w, {quant::Scheme::Nf4, quant::Layout::Plain, c.block});
    gemv::Epilogue e;
    e.act = c.act;
    const GemvRequest r = test::make_request(gemv::Path::Fast, recipes::OutType::F16, 1, c.n, c.k, 13, e);
    const auto [eg, ec] = errors_against_reference(*gpu, *cpu, q, r);
    std::printf("NF4 %lldx%lld blocks of %d M=1: rel err GPU %.2e CPU %.2e\n", static_cast<long long>(c.n),
                static_cast<long long>(c.k), c.block, eg, ec);
    CHECK(eg < 1e-3);
    if (!c.non_finite) continue;
    for (const uint16_t special : {uint16_t{0x7C00}, uint16_t{0xFC00}, uint16_t{0x7E00}}) {
      GemvRequest odd = r;
      odd.x[static_cast<size_t>(c.k / 2 + 37)] = special;  // inside a slice and a step, not at their start
      const std::vector<double> ref = test::reference(*cpu, q, odd);
      const NonFinite nf = outputs_unlike(gpu->gemv(q, odd), ref, recipes::OutType::F16);
      std::printf("NF4 %lldx%lld M=1, x = 0x%04X in X: %zu outputs unlike the float64 product's (%zu NaN)\n",
                  static_cast<long long>(c.n), static_cast<long long>(c.k), special, nf.unlike, nf.nans);
      CHECK(nf.unlike == 0);
      CHECK(!std::isfinite(ref[0]));
    }
  }
}

TEST_CASE("launches: each bench case's run names the kernels it launched, as the SASS view names them") {
  // A bench target notes the launches of its first run (cuda::LaunchLog at every launch site). Each
  // dequant, quant and permute kernel launched must be one the SASS view files under the case's own bench
  // name (sass::bench_name of its short name); the GEMV cases launch the kernels their launchers are known
  // to pick, cuBLAS and the copy are library calls.
  auto gpu = open_gpu();
  const cudaDeviceProp prop = device_prop();
  const int cc = 10 * prop.major + prop.minor;
  const auto names = [](const std::vector<cuda::KernelLaunch>& ls) {
    std::string s;
    for (const auto& l : ls) s += (s.empty() ? "" : " + ") + (l.library ? l.name : sass::short_name(l.name));
    return s;
  };
  const auto launched = [&](const BenchCase& c) {
    const std::vector<cuda::KernelLaunch> ls = gpu->bench_target(c, 1)->launches();
    std::printf("%s %s: %s\n", c.kernel_name().c_str(), c.shape_name().c_str(), names(ls).c_str());
    for (const auto& l : ls) {
      if (l.library) continue;
      // A demangled kernel signature, not kernel_signature's fallback for a kernel the runtime cannot name.
      CHECK(l.name.rfind("a kernel at ", 0) != 0);
      CHECK(l.name.find("_kernel") != std::string::npos);
      CHECK(l.name.back() == ')');
      CHECK(int64_t{l.grid[0]} * l.grid[1] * l.grid[2] > 0);
      CHECK(int64_t{l.block[0]} * l.block[1] * l.block[2] > 0);
    }
    return ls;
  };
  size_t dequants = 0, quants = 0, permutes = 0;
  for (const BenchCase& c : bench_cases_for({{1024, 2048}}, 128, {1})) {
    if (c.kind == BenchKind::Gemv) continue;
    CAPTURE(c.kernel_name());
    const auto ls = launched(c);
    REQUIRE_FALSE(ls.empty());
    for (const auto& l : ls) {
      CHECK_FALSE(l.library);
      CHECK(sass::bench_name(sass::short_name(l.name)) == c.kernel_name());
    }
    dequants += c.kind == BenchKind::Dequant;
    quants += c.kind == BenchKind::Quant;
    permutes += c.kind == BenchKind::Permute;
  }
  // Every recipe's dequant; int8 per channel, int4 per group and NF4; int4 and int8 both ways.
  CHECK(dequants == recipes::all_recipes().size());
  CHECK(quants == 3);
  CHECK(permutes == 4);

  BenchCase copy;
  copy.kind = BenchKind::Copy;
  copy.copy_bytes = int64_t{1} << 20;
  const auto cl = launched(copy);
  REQUIRE(cl.size() == 1);
  CHECK(cl[0].library);
  CHECK(cl[0].name == "cudaMemcpyAsync (device to device)");

  for (const BenchCase& c : gemv_bench_cases({{4096, 4096}}, {1, 16}, 128, {recipes::OutType::F16})) {
    CAPTURE(c.kernel_name());
    CAPTURE(c.shape_name());
    const auto ls = launched(c);
    REQUIRE_FALSE(ls.empty());
    const bool int4_ft = c.layout == quant::Layout::Ft && c.scheme == quant::Scheme::Int4Sym;
    if (c.path == gemv::Path::Cublas) {
      REQUIRE(ls.size() == 1);
      CHECK(ls[0].library);
      CHECK(ls[0].name == "cublasGemmEx");
    } else if (int4_ft && c.m == 1) {  // the one-row lane kernel, the naive conversion as its flag says
      REQUIRE(ls.size() == 1);
      const auto args = template_args(ls[0].name, "ft_lane_kernel");
      REQUIRE(args.size() == 7);
      CHECK(args[1] == (c.path == gemv::Path::Naive ? "true" : "false"));
      CHECK(ls[0].dependent == (cc >= 90));              // the programmatic dependent of the launch before it
    } else if (int4_ft && cc == 90 && c.takes_ring()) {  // the walk: X laid out, the walk, its settling
      REQUIRE(ls.size() == 3);
      CHECK(sass::short_name(ls[0].name).rfind("walk_x_kernel<", 0) == 0);
      CHECK(sass::short_name(ls[1].name).rfind("ft_walk16_kernel<", 0) == 0);
      CHECK(sass::short_name(ls[2].name).rfind("walk_settle_kernel<", 0) == 0);
      for (const auto& l : ls) CHECK(l.dependent);  // each the programmatic dependent of the launch before
    } else {
      for (const auto& l : ls) CHECK_FALSE(l.library);
    }
  }
}

TEST_CASE("bench: cold back-to-back copies that would not fit the GPU are refused with a sentence") {
  // Each copy of a 65536x65536 dequant's buffers is 10 GiB: 64 of them fit no GPU. The case is refused
  // before any copy is made, and the backend times the next case as before.
  auto gpu = open_gpu();
  BenchCase big;
  big.kind = BenchKind::Dequant;
  big.n = big.k = 65536;
  std::string why;
  try {
    gpu->bench_target(big, 64);
  } catch (const Error& e) {
    why = e.what();
  }
  INFO(why);
  CHECK(
      why.rfind(
          "dequant/awq-int4-fp16 65536x65536 g128: cold back-to-back runs on 64 copies of its buffers need ",
          0) == 0);
  CHECK(why.find("time it back to back warm (one copy), or a run at a time") != std::string::npos);
  BenchCase small = big;
  small.n = 256;
  small.k = 512;
  auto target = gpu->bench_target(small, 4);
  CHECK(target->copies() == 4);
  CHECK(target->time_back_to_back(8) > 0);
}

TEST_CASE("bench: a held stream keeps the host's launching out of the timed span") {
  // The bench engine queues its events and launches behind cuda::StreamHold. Here the host sleeps
  // 20 ms between the start event and a short kernel: unheld, the GPU waits for it inside the
  // span; held, the span holds only the kernel. Both are compared with the kernel's own span (no
  // sleep), which compute-sanitizer stretches to milliseconds. A hold nobody releases expires and
  // says so.
  auto gpu = open_gpu();
  const DeviceArray<uint8_t> buffer(std::vector<uint8_t>(size_t{1} << 20, 0));
  DeviceArray<uint32_t> sink(1);
  cudaEvent_t start = nullptr, stop = nullptr;
  REQUIRE(cudaEventCreate(&start) == cudaSuccess);
  REQUIRE(cudaEventCreate(&stop) == cudaSuccess);
  cuda::StreamHold hold;
  const auto span_ms = [&](bool held, int sleep_ms) {
    if (held) REQUIRE(hold.hold(2.0).empty());
    REQUIRE(cudaEventRecord(start) == cudaSuccess);
    std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
    REQUIRE(cuda::launch_l2_flush(buffer.get(), (size_t{1} << 20) / 16, sink.get()).empty());
    REQUIRE(cudaEventRecord(stop) == cudaSuccess);
    if (held) hold.release();
    REQUIRE(cudaEventSynchronize(stop) == cudaSuccess);
    float ms = 0;
    REQUIRE(cudaEventElapsedTime(&ms, start, stop) == cudaSuccess);
    return ms;
  };
  span_ms(false, 0);  // the kernel's first launch (module loading, a sanitizer's instrumenting)
  const float alone = span_ms(false, 0);
  CHECK(span_ms(false, 20) >= alone + 15.0f);
  CHECK(span_ms(true, 20) < alone + 5.0f);
  CHECK_FALSE(hold.timed_out());
  REQUIRE(hold.hold(0.01).empty());
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(hold.timed_out());
  hold.release();
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

int main(int argc, char** argv) {
  const std::string problem = gpu_test::device_problem();
  if (!problem.empty()) {
    std::printf("GPU suite skipped: %s. The CPU suites cover the same cases on the host.\n", problem.c_str());
    return 77;
  }
  if (const char* e = std::getenv("DQL_GPU_TEST_LOG2")) {
    const int log2 = std::atoi(e);
    if (log2 < 10 || log2 > 32) {
      std::printf("DQL_GPU_TEST_LOG2=%s is out of range: use 10 to 32\n", e);
      return 2;
    }
    kInputs = size_t{1} << log2;
  }
  std::printf("GPU suite on %s, %zu inputs per case\n", gpu_test::device_description().c_str(), kInputs);
  doctest::Context ctx(argc, argv);
  return ctx.run();
}
