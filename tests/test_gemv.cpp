// The GEMV / GEMM CPU twin: every path against the float64 product with the same dequantized
// weight, the naive conversion against the recipes, the online path's integer algebra, and the
// refusals.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "gemv_cases.hpp"
#include "kernels/backend/host_steps.hpp"
#include "kernels/cuda/gemv.hpp"
#include "kernels/gemv/gemv.hpp"
#include "kernels/gemv/split.hpp"
#include "kernels/layouts/ft.hpp"
#include "kernels/quant/files.hpp"
#include "kernels/quant/quant.hpp"

using namespace dql;
using quant::Layout;
using quant::Scheme;
using recipes::OutType;

namespace {

struct Case {
  QuantSpec spec;
  gemv::Path path;
  OutType t;
};

}  // namespace

TEST_CASE("gemv twin: every path within the accuracy goal of the float64 product") {
  auto cpu = make_cpu_backend();
  const int64_t n = 96, k = 512;
  const Tensor w = random_matrix(Distribution::Normal, 5, n, k);
  const Case cases[] = {
      {{Scheme::Int4Sym, Layout::Ft, 128}, gemv::Path::Fast, OutType::F16},
      {{Scheme::Int4Sym, Layout::Ft, 64}, gemv::Path::Naive, OutType::F16},
      {{Scheme::Int4Sym, Layout::Ft, 512}, gemv::Path::Fast, OutType::BF16},
      {{Scheme::Int8Sym, Layout::Ft, 512}, gemv::Path::Fast, OutType::F16},
      {{Scheme::Int8Sym, Layout::Ft, 128}, gemv::Path::Naive, OutType::BF16},
      {{Scheme::Int4Asym, Layout::Awq, 128}, gemv::Path::Fast, OutType::F16},
      {{Scheme::Nf4, Layout::Plain, 64}, gemv::Path::Fast, OutType::F16},
      {{Scheme::Int8Sym, Layout::Plain, 64}, gemv::Path::Cublas, OutType::F16},
  };
  for (const Case& c : cases) {
    const QuantizedMatrix q = cpu->quantize(w, c.spec);
    for (int64_t m : {1, 5, 16}) {
      const GemvRequest r = test::make_request(c.path, c.t, m, n, k, 40 + m);
      const auto y = cpu->gemv(q, r);
      REQUIRE(y.size() == static_cast<size_t>(m * n));
      const auto acc = gemv::compare(y, test::reference(*cpu, q, r), c.t);
      const double goal = test::accuracy_goal(c.t);
      CAPTURE(static_cast<int>(c.spec.scheme));
      CAPTURE(static_cast<int>(c.spec.layout));
      CAPTURE(c.spec.group);
      CAPTURE(m);
      CHECK(acc.rel_l2 < goal);
      CHECK(acc.rel_l2 > 0.0);  // the fp16 output rounding alone makes it nonzero
    }
  }
}

TEST_CASE("gemv twin: the online int8 path adds the error of int8 activations, and stays within 2%") {
  auto cpu = make_cpu_backend();
  const int64_t n = 64, k = 1024;
  const Tensor w = random_matrix(Distribution::Normal, 9, n, k);
  for (int g : {64, 128}) {
    const QuantizedMatrix q = cpu->quantize(w, {Scheme::Int8Sym, Layout::Plain, g});
    const GemvRequest r = test::make_request(gemv::Path::Online, OutType::F16, 4, n, k, 3);
    GemvRequest exact = r;
    exact.path = gemv::Path::Cublas;
    const auto ref = test::reference(*cpu, q, r);
    const double online = gemv::compare(cpu->gemv(q, r), ref, OutType::F16).rel_l2;
    const double plain = gemv::compare(cpu->gemv(q, exact), ref, OutType::F16).rel_l2;
    CAPTURE(g);
    CHECK(online < 2e-2);
    CHECK(online > 2 * plain);  // int8 activations cost accuracy: the comparison must see it
  }
}

TEST_CASE("gemv twin: the online path's block algebra equals the integer sum it replaces") {
  // One block: sum_k a_k w_k with a_k = sA qa_k + oA exactly representable.
  const float s = 0.5f, o = 3.0f;
  const gemv::ActBlock b = gemv::act_block_params(o - 128 * s, o + 127 * s);
  CHECK(b.scale == s);
  CHECK(b.offset == o);
  for (int q = -128; q <= 127; ++q) CHECK(gemv::act_code(s * static_cast<float>(q) + o, b) == q);
  const gemv::ActBlock flat = gemv::act_block_params(2.0f, 2.0f);
  CHECK(flat.scale == 0.0f);
  CHECK(gemv::act_code(2.0f, flat) == 0);
  CHECK(flat.offset == 2.0f);
}

TEST_CASE("gemv twin: decoded rows times their group scale, rounded once, are the dequant kernel's weights") {
  // decode_rows walks each layout by its own index arithmetic; the dequant twin walks it by
  // another. Row ranges that start and end inside an AWQ word's eight channels are included.
  auto cpu = make_cpu_backend();
  const int64_t n = 48, k = 512;
  const Tensor w = random_matrix(Distribution::Normal, 17, n, k);
  const QuantSpec specs[] = {{Scheme::Int4Sym, Layout::Ft, 128},
                             {Scheme::Int4Sym, Layout::Ft, 64},
                             {Scheme::Int8Sym, Layout::Ft, 512},
                             {Scheme::Int4Asym, Layout::Awq, 128},
                             {Scheme::Nf4, Layout::Plain, 64}};
  const std::pair<int64_t, int64_t> ranges[] = {{0, 48}, {8, 8}, {3, 1}, {13, 22}};
  for (const QuantSpec& spec : specs) {
    CAPTURE(scheme_name(spec.scheme));
    const QuantizedMatrix q = cpu->quantize(w, spec);
    const gemv::Weights hw = weights_of(q);
    const std::vector<uint16_t> deq = cpu->dequantize(q, recipes_for(spec).front());
    for (const auto& [n0, rows] : ranges) {
      CAPTURE(n0);
      CAPTURE(rows);
      std::vector<float> dec(static_cast<size_t>(rows * k));
      gemv::decode_rows(hw, n0, rows, false, OutType::F16, dec.data());
      int64_t same = 0;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t kk = 0; kk < k; ++kk) {
          const float s = gemv::group_scale(hw, n0 + r, kk / spec.group);
          const uint16_t mine = quant::f32_to_half(quant::mul_rn(dec[static_cast<size_t>(r * k + kk)], s));
          same += mine == deq[static_cast<size_t>((n0 + r) * k + kk)];
        }
      }
      CHECK(same == rows * k);
    }
  }
}

TEST_CASE("gemv: naive conversion gives the recipes' values for every byte pattern") {
  for (int bits : {4, 8}) {
    for (OutType t : {OutType::F16, OutType::BF16}) {
      for (uint64_t i = 0; i < (1u << 16); ++i) {
        const uint32_t word = static_cast<uint32_t>(i * 0x9E3779B1u) ^ static_cast<uint32_t>(i << 16);
        uint32_t fast[4] = {}, naive[4] = {};
        gemv::ft_word_pairs<false>(bits, t, word, fast);
        gemv::ft_word_pairs<true>(bits, t, word, naive);
        for (int r = 0; r < 16 / bits; ++r) REQUIRE(fast[r] == naive[r]);
      }
    }
  }
}

TEST_CASE("gemv: epilogue applies bias, activation and clamp, then rounds once") {
  gemv::Epilogue e;
  CHECK(gemv::epilogue(1.5f, 0.25f, e, OutType::F16) == gemv::f32_to_act(1.75f, OutType::F16));
  e.act = gemv::Act::Relu;
  CHECK(gemv::epilogue(-1.0f, 0.5f, e, OutType::F16) == 0);
  e.act = gemv::Act::Silu;
  CHECK(gemv::act_to_f32(gemv::epilogue(2.0f, 0.0f, e, OutType::F16), OutType::F16) ==
        doctest::Approx(2.0 / (1.0 + std::exp(-2.0))).epsilon(1e-3));
  e.act = gemv::Act::Gelu;
  CHECK(gemv::act_to_f32(gemv::epilogue(1.0f, 0.0f, e, OutType::BF16), OutType::BF16) ==
        doctest::Approx(gemv::epilogue_f64(1.0, 0.0, e)).epsilon(1e-2));
  e.act = gemv::Act::None;
  e.clamp = true;
  e.lo = -1.0f, e.hi = 2.0f;
  CHECK(gemv::epilogue(5.0f, 0.0f, e, OutType::F16) == gemv::f32_to_act(2.0f, OutType::F16));
  CHECK(gemv::epilogue(-5.0f, 0.0f, e, OutType::F16) == gemv::f32_to_act(-1.0f, OutType::F16));
}

TEST_CASE("gemv: refusals say what is accepted") {
  auto cpu = make_cpu_backend();
  const Tensor w = random_matrix(Distribution::Normal, 1, 64, 256);
  const QuantizedMatrix ft = cpu->quantize(w, {Scheme::Int4Sym, Layout::Ft, 128});
  const QuantizedMatrix plain4 = cpu->quantize(w, {Scheme::Int4Sym, Layout::Plain, 128});
  const QuantizedMatrix awq = cpu->quantize(w, {Scheme::Int4Asym, Layout::Awq, 128});
  const auto message = [&](const QuantizedMatrix& q, GemvRequest r) {
    try {
      cpu->gemv(q, r);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  GemvRequest r = test::make_request(gemv::Path::Fast, OutType::F16, 1, 64, 256, 2);
  GemvRequest big = r;
  big.m = 300;
  CHECK(message(ft, big).find("1 to 16 rows") != std::string::npos);
  GemvRequest short_x = r;
  short_x.x.pop_back();
  CHECK(message(ft, short_x).find("X must be [M, 256]") != std::string::npos);
  GemvRequest bad_bias = r;
  bad_bias.bias.resize(3);
  CHECK(message(ft, bad_bias).find("one per output channel") != std::string::npos);
  CHECK(message(plain4, r).find("no GEMV kernel") != std::string::npos);
  // The format is named first, whatever else the request asks for.
  GemvRequest plain_bf = r;
  plain_bf.dtype = OutType::BF16;
  CHECK(message(plain4, plain_bf).find("no GEMV kernel") != std::string::npos);
  GemvRequest rows17 = r;
  rows17.m = 17;
  rows17.x.resize(static_cast<size_t>(17 * 256), rows17.x[0]);
  CHECK(message(plain4, rows17).find("no GEMV kernel") != std::string::npos);
  CHECK(message(awq, rows17).find("beyond 16 rows") != std::string::npos);
  GemvRequest naive = r;
  naive.path = gemv::Path::Naive;
  CHECK(message(awq, naive).find("--layout ft") != std::string::npos);
  GemvRequest online = r;
  online.path = gemv::Path::Online;
  CHECK(message(ft, online).find("plain int8") != std::string::npos);
  GemvRequest bf = r;
  bf.dtype = OutType::BF16;
  CHECK(message(awq, bf).find("fp16") != std::string::npos);
  GemvRequest clamp = r;
  clamp.epi.clamp = true;
  clamp.epi.lo = 2.0f, clamp.epi.hi = 1.0f;
  CHECK(message(ft, clamp).find("empty") != std::string::npos);
  CHECK(message(ft, r).empty());
}

TEST_CASE("gemv launch: every device pointer must be 16-byte aligned, and the first that is not is named") {
  // Addresses only: nothing is read through them. Pointer i sits at 64 * i + off[i] bytes.
  alignas(16) static unsigned char buf[1024];
  const auto launch = [](const std::array<int, 8>& off) {
    const auto at = [&](int i) { return buf + 64 * i + off[static_cast<size_t>(i)]; };
    cuda::GemvLaunch L{};
    L.w.q = reinterpret_cast<const uint32_t*>(at(0));
    L.w.scales = reinterpret_cast<const uint16_t*>(at(1));
    L.w.qzeros = reinterpret_cast<const uint32_t*>(at(2));
    L.w.absmax = reinterpret_cast<const float*>(at(3));
    L.p.x = reinterpret_cast<const uint16_t*>(at(4));
    L.p.bias = reinterpret_cast<const uint16_t*>(at(5));
    L.y = reinterpret_cast<uint16_t*>(at(6));
    L.workspace = at(7);
    return L;
  };
  CHECK(cuda::gemv_misaligned(launch({})) == nullptr);
  CHECK(cuda::gemv_misaligned(launch({16, 32, 48, 16, 32, 48, 16, 32})) == nullptr);
  cuda::GemvLaunch formats_lack = launch({});
  formats_lack.w.qzeros = nullptr, formats_lack.w.absmax = nullptr, formats_lack.p.bias = nullptr;
  CHECK(cuda::gemv_misaligned(formats_lack) == nullptr);  // null: taken as aligned
  const char* const names[8] = {"the weight words", "the scales", "the zero points", "the NF4 absmax", "X",
                                "the bias",         "Y",          "the workspace"};
  for (int i = 0; i < 8; ++i) {
    for (const int bytes : {2, 4, 8}) {
      CAPTURE(i);
      CAPTURE(bytes);
      std::array<int, 8> off{};
      off[static_cast<size_t>(i)] = bytes;
      const char* name = cuda::gemv_misaligned(launch(off));
      REQUIRE(name != nullptr);
      CHECK(std::string(name) == names[i]);
    }
  }
  // With two misaligned, the first in that order is named.
  CHECK(std::string(cuda::gemv_misaligned(launch({0, 0, 0, 0, 2, 0, 0, 4}))) == "X");
}

// The rule of which kernel reads a request, one reason at a time.
TEST_CASE("gemv rule: each request no kernel reads is refused with its own reason") {
  using gemv::Refusal;
  const auto rule = [](Layout layout, Scheme scheme, int64_t group, int64_t n, int64_t k, gemv::Path path,
                       OutType dtype,
                       int64_t m) { return gemv::refusal(layout, scheme, group, n, k, path, dtype, m); };
  const auto F = gemv::Path::Fast, N = gemv::Path::Naive, O = gemv::Path::Online;
  const auto h = OutType::F16, b = OutType::BF16;
  // Taken: the mixed-GEMM layout (W4A16 up to 256 rows, bf16 too, per-channel groups), AWQ, NF4, online.
  CHECK(rule(Layout::Ft, Scheme::Int4Sym, 128, 4096, 4096, F, b, 256) == Refusal::None);
  CHECK(rule(Layout::Ft, Scheme::Int8Sym, 4096, 4096, 4096, N, h, 16) == Refusal::None);
  CHECK(rule(Layout::Awq, Scheme::Int4Asym, 128, 4096, 4096, F, h, 16) == Refusal::None);
  CHECK(rule(Layout::Plain, Scheme::Nf4, 64, 4096, 4096, F, h, 1) == Refusal::None);
  CHECK(rule(Layout::Plain, Scheme::Int8Sym, 64, 4096, 4096, O, b, 16) == Refusal::None);
  // Refused, each for its reason.
  CHECK(rule(Layout::Ft, Scheme::Int4Sym, 128, 4096, 4096, gemv::Path::Cublas, h, 1) == Refusal::NotAKernel);
  CHECK(rule(Layout::Ft, Scheme::Int4Sym, 128, 4096, 4096, F, h, 0) == Refusal::Rows);
  CHECK(rule(Layout::Ft, Scheme::Int4Sym, 128, 4096, 4096, F, h, 257) == Refusal::Rows);
  CHECK(rule(Layout::Plain, Scheme::Int8Sym, 32, 4096, 4096, O, h, 1) == Refusal::OnlineFormat);
  CHECK(rule(Layout::Ft, Scheme::Int8Sym, 64, 4096, 4096, O, h, 1) == Refusal::OnlineFormat);
  CHECK(rule(Layout::Plain, Scheme::Int8Sym, 128, 4096, 4096, O, h, 17) == Refusal::OnlineRows);
  CHECK(rule(Layout::Ft, Scheme::Int4Sym, 32, 4096, 4096, F, h, 1) == Refusal::FtGroup);
  CHECK(rule(Layout::Ft, Scheme::Int4Sym, 128, 4104, 4096, F, h, 1) == Refusal::FtShape);
  CHECK(rule(Layout::Ft, Scheme::Int4Sym, 64, 4096, 4160, F, h, 1) == Refusal::FtShape);
  CHECK(rule(Layout::Ft, Scheme::Int8Sym, 128, 4096, 4096, F, h, 17) == Refusal::W8Rows);
  CHECK(rule(Layout::Awq, Scheme::Int4Asym, 128, 4096, 4096, N, h, 1) == Refusal::NaiveLayout);
  CHECK(rule(Layout::Plain, Scheme::Int4Sym, 128, 4096, 4096, F, h, 1) == Refusal::NoKernel);
  CHECK(rule(Layout::Plain, Scheme::Int8Sym, 128, 4096, 4096, F, h, 1) == Refusal::NoKernel);
  CHECK(rule(Layout::Plain, Scheme::Nf4, 64, 4096, 4096, F, b, 1) == Refusal::Bf16X);
  CHECK(rule(Layout::Awq, Scheme::Int4Asym, 128, 4096, 4096, F, h, 17) == Refusal::AwqNf4Rows);
  CHECK(rule(Layout::Awq, Scheme::Int4Asym, 128, 4100, 4096, F, h, 1) == Refusal::AwqShape);
  CHECK(rule(Layout::Awq, Scheme::Int4Asym, 96, 4096, 4096, F, h, 1) == Refusal::AwqShape);
  CHECK(rule(Layout::Awq, Scheme::Int4Asym, 0, 4096, 4096, F, h, 1) == Refusal::AwqShape);
  // The backend's sentence for a rule the launcher words its own way.
  QuantizedMatrix q;
  q.spec = QuantSpec{Scheme::Int8Sym, Layout::Ft, 128};
  q.n = 256, q.k = 1024;
  GemvRequest r;
  r.m = 17;
  r.x.resize(17 * 1024);
  CHECK_THROWS_WITH_AS(check_gemv(q, r), "the W8A16 kernel takes 1 to 16 rows of X", Error);
}

// The launcher (gemv_refusal) against the backend (check_gemv): both apply gemv::refusal, the launcher
// after its own device checks; on a device of compute capability 9.0 the launcher takes exactly the
// requests the backend takes, over every format, path, activation type and row count below, so a launch
// made without the backend (the benchmarks, the tests) cannot run a kernel on a format it does not read.
TEST_CASE("gemv launch: the launcher takes exactly the requests the backend takes, and says why not") {
  int taken = 0, refused = 0;
  for (const Scheme scheme : {Scheme::Int4Sym, Scheme::Int4Asym, Scheme::Int8Sym, Scheme::Nf4}) {
    for (const Layout layout : {Layout::Plain, Layout::Awq, Layout::Ft}) {
      for (const auto& [n, k] : {std::pair<int64_t, int64_t>{256, 1024}, {264, 1024}, {256, 1088}}) {
        for (const int group : {32, 64, 128, static_cast<int>(k)}) {
          QuantizedMatrix q;
          q.spec = QuantSpec{scheme, layout, group};
          q.n = n, q.k = k;
          try {
            check_quant_shape(q.spec, n, k);
          } catch (const Error&) {
            continue;  // no such weight can be made
          }
          for (const gemv::Path path : {gemv::Path::Fast, gemv::Path::Naive, gemv::Path::Online}) {
            for (const OutType dtype : {OutType::F16, OutType::BF16}) {
              for (const int64_t m : {1, 16, 17, 256, 257}) {
                GemvRequest r;
                r.path = path, r.dtype = dtype, r.m = m;
                r.x.resize(static_cast<size_t>(m * k));
                bool backend_takes = true;
                try {
                  check_gemv(q, r);
                } catch (const Error&) {
                  backend_takes = false;
                }
                cuda::GemvLaunch L{};
                L.w = gemv::Weights{scheme, layout, n, k, group, nullptr, nullptr, nullptr, nullptr};
                L.p.path = path, L.p.dtype = dtype, L.p.m = m;
                L.cc = 90, L.sms = 132;
                const std::string why = cuda::gemv_refusal(L);
                CAPTURE(static_cast<int>(scheme));
                CAPTURE(static_cast<int>(layout));
                CAPTURE(n);
                CAPTURE(k);
                CAPTURE(group);
                CAPTURE(static_cast<int>(path));
                CAPTURE(static_cast<int>(dtype));
                CAPTURE(m);
                CAPTURE(why);
                CHECK(why.empty() == backend_takes);
                (backend_takes ? taken : refused) += 1;
              }
            }
          }
        }
      }
    }
  }
  CHECK(taken > 50);
  CHECK(refused > 200);

  // The sentences name the rule a refused launch broke.
  cuda::GemvLaunch awq{};
  awq.w = gemv::Weights{Scheme::Int4Asym, Layout::Awq, 256, 1024, 128, nullptr, nullptr, nullptr, nullptr};
  awq.cc = 90;
  CHECK(cuda::gemv_refusal(awq).empty());
  awq.p.dtype = OutType::BF16;
  CHECK(cuda::gemv_refusal(awq) ==
        "the AWQ and NF4 kernels take fp16 X only: bf16 X is read by the mixed-GEMM layout's kernels");
  awq.p.dtype = OutType::F16, awq.p.m = 17;
  CHECK(cuda::gemv_refusal(awq) == "17 rows of X: the AWQ and NF4 kernels take 1 to 16");
  awq.p.m = 1, awq.p.path = gemv::Path::Naive;
  CHECK(cuda::gemv_refusal(awq).find("the naive-conversion variant reads the mixed-GEMM layout") == 0);
  awq.p.path = gemv::Path::Cublas;
  CHECK(cuda::gemv_refusal(awq) == "the cuBLAS product is run by the backend, not by the GEMV launcher");
  cuda::GemvLaunch ft{};
  ft.w = gemv::Weights{Scheme::Int4Sym, Layout::Ft, 256, 1024, 128, nullptr, nullptr, nullptr, nullptr};
  ft.p.dtype = OutType::BF16, ft.cc = 90;
  CHECK(cuda::gemv_refusal(ft).empty());
  ft.cc = 75;  // Turing: fp16 tensor-core products only
  CHECK(cuda::gemv_refusal(ft).find("bf16 and int8 tensor-core products need compute capability 8.0") == 0);
  ft.p.dtype = OutType::F16;
  CHECK(cuda::gemv_refusal(ft).empty());
  ft.cc = 70;
  CHECK(cuda::gemv_refusal(ft) == "the GEMV kernels need tensor cores (compute capability 7.5 or newer)");
  ft.cc = 90, ft.w.layout = Layout::Plain;
  CHECK(cuda::gemv_refusal(ft).find("no GEMV kernel reads this format") == 0);
}

// The launcher's rule for the fenced copy-engine form (gemv::split_tile_blocks): every block's run
// of units lies inside one tile, the runs of a tile differ by one unit at most, no more blocks
// than four a multiprocessor or than fit, and no smaller split of a tile gives runs as short.
TEST_CASE("gemv split: the fenced form's runs stay inside their tiles, even and short") {
  const int64_t sms = 132;
  int64_t split = 0, persistent = 0;
  for (int64_t fit : {132, 396, 792}) {
    for (int64_t tiles : {1, 2, 3, 7, 64, 80, 128, 172, 256, 448, 529, 600, 1000}) {
      for (int64_t per_tile : {1, 2, 3, 5, 8, 10, 16, 43, 56}) {
        CAPTURE(fit);
        CAPTURE(tiles);
        CAPTURE(per_tile);
        const int64_t units = tiles * per_tile;
        const int64_t blocks = gemv::split_tile_blocks(tiles, per_tile, fit, sms);
        const int64_t room = std::min(fit, 4 * sms);
        if (tiles > room) {
          ++persistent;
          CHECK(blocks == std::min(units, fit));
          continue;
        }
        ++split;
        REQUIRE(blocks % tiles == 0);
        const int64_t s = blocks / tiles;
        CHECK(s >= 1);
        CHECK(s <= per_tile);
        CHECK(blocks <= room);
        int64_t shortest = units, longest = 0;
        for (int64_t b = 0; b < blocks; ++b) {
          const int64_t begin = units * b / blocks, end = units * (b + 1) / blocks;
          REQUIRE(end > begin);
          CHECK(begin / per_tile == (end - 1) / per_tile);
          shortest = std::min(shortest, end - begin);
          longest = std::max(longest, end - begin);
        }
        CHECK(longest - shortest <= 1);
        for (int64_t t = 1; t <= std::min(per_tile, room / tiles); ++t) {
          const int64_t their_longest = (per_tile + t - 1) / t;
          CHECK(their_longest >= longest);
          if (t < s) CHECK(their_longest > longest);
        }
      }
    }
  }
  CHECK(split > 0);
  CHECK(persistent > 0);
  // The measured cases of the rule (notes/performance.md, g28): 132 multiprocessors, 6 blocks of
  // one token tile or 3 of two a multiprocessor.
  CHECK(gemv::split_tile_blocks(128, 16, 792, sms) == 512);  // 8192x8192, M = 1: s = 4
  CHECK(gemv::split_tile_blocks(80, 10, 792, sms) == 400);   // 5120x5120, M = 1: s = 5
  CHECK(gemv::split_tile_blocks(80, 10, 396, sms) == 320);   // 5120x5120, M = 16: s = 4
  CHECK(gemv::split_tile_blocks(64, 8, 396, sms) == 256);    // 4096x4096, M = 16: s = 4
  CHECK(gemv::split_tile_blocks(256, 8, 792, sms) == 512);   // 16384x4096, M = 1: s = 2
  CHECK(gemv::split_tile_blocks(64, 8, 792, sms) == 512);    // 4096x4096, M = 1: a unit a block
  CHECK(gemv::split_tile_blocks(600, 2, 792, sms) == 792);   // more tiles than room: persistent
}

// Where the wide GEMM takes over (gemv::wide_takes) and how it cuts K (gemv::wide_runs): from 129
// rows always, from 65 where two blocks a multiprocessor hold every tile in one wave, never up to
// 64; K in runs only where the tiles leave multiprocessors idle, each run at least 8 tiles of K.
TEST_CASE("gemv split: the wide GEMM's rows and runs of K") {
  const int64_t sms = 132;
  for (int64_t n : {128, 4096, 8192, 28672}) {
    for (int64_t m : {1, 16, 64, 65, 72, 128, 129, 200, 256}) {
      CAPTURE(n);
      CAPTURE(m);
      // Whole blocks of rows by every 128-channel tile: enough rows for M, none of them empty.
      const int64_t tiles = gemv::wide_tiles(m, n), per_row_block = n / gemv::kWideChannels;
      REQUIRE(tiles % per_row_block == 0);
      CHECK(tiles / per_row_block * gemv::kWideRows >= m);
      CHECK((tiles / per_row_block - 1) * gemv::kWideRows < m);
      const bool takes = gemv::wide_takes(m, n, sms);
      if (m <= 64) CHECK_FALSE(takes);
      if (m > 128) CHECK(takes);
      if (m > 64 && m <= 128) CHECK(takes == (tiles <= 2 * sms));
      for (int64_t ktiles : {8, 20, 32, 64, 128, 448}) {
        CAPTURE(ktiles);
        const int64_t runs = gemv::wide_runs(tiles, ktiles, sms);
        CHECK(runs >= 1);
        if (tiles >= sms) CHECK(runs == 1);
        if (runs > 1) {
          CHECK(tiles * runs <= sms);
          CHECK(ktiles / runs >= 8);
          // One more run would leave a run under 8 tiles of K or more blocks than multiprocessors.
          CHECK((tiles * (runs + 1) > sms || ktiles / (runs + 1) < 8));
        }
      }
    }
  }
  // The measured cases (notes/performance.md, w1).
  CHECK(gemv::wide_takes(128, 8192, sms));         // 128 tiles: one wave
  CHECK_FALSE(gemv::wide_takes(128, 28672, sms));  // 448 tiles: 1.7 waves, the passes of 64 rows stay
  CHECK(gemv::wide_takes(129, 28672, sms));
  CHECK_FALSE(gemv::wide_takes(64, 4096, sms));
  CHECK(gemv::wide_runs(gemv::wide_tiles(72, 4096), 64, sms) == 2);   // 4096x4096, 72 rows: 64 tiles
  CHECK(gemv::wide_runs(gemv::wide_tiles(200, 4096), 64, sms) == 1);  // 128 tiles
  CHECK(gemv::wide_runs(gemv::wide_tiles(256, 256), 32, sms) == 4);   // 256x2048: 8 tiles, K in 4 runs
}

TEST_CASE("gemv split: the Hopper GEMM's rows and runs of K") {
  const int64_t sms = 132;
  for (int64_t n : {128, 4096, 8192, 17024, 28672}) {
    for (int64_t m : {65, 72, 128, 129, 160, 192, 200, 208, 209, 256, 300, 600}) {
      for (int64_t ktiles : {2, 8, 16, 64, 96, 128, 448}) {
        CAPTURE(n);
        CAPTURE(m);
        CAPTURE(ktiles);
        const int64_t rows = gemv::hopper_rows(m, n, ktiles, sms);
        REQUIRE(rows >= gemv::kHopperLeastRows);
        REQUIRE(rows <= gemv::kHopperLoneRows);
        REQUIRE(rows % gemv::kHopperRowStep == 0);
        // Whole blocks of rows by every 128-channel tile: enough rows for M, none of them empty.
        const int64_t tiles = gemv::hopper_tiles(m, rows, n), per_row_block = n / gemv::kHopperChannels;
        REQUIRE(tiles % per_row_block == 0);
        CHECK(tiles / per_row_block * rows >= m);
        CHECK((tiles / per_row_block - 1) * rows < m);
        // As many blocks as blocks of the most rows of their kind would take (alone, a pair, or at most
        // kWideRows), each padded by under one step of rows.
        const int64_t most = rows > gemv::kHopperPairRows ? gemv::kHopperLoneRows
                             : rows > gemv::kWideRows     ? gemv::kHopperPairRows
                                                          : gemv::kWideRows;
        const int64_t blocks = tiles / per_row_block;
        CHECK(blocks == (m + most - 1) / most);
        CHECK(blocks * rows - m < gemv::kHopperRowStep * blocks);
        const int64_t per_sm = gemv::hopper_blocks_per_sm(rows);
        const int64_t runs = gemv::hopper_runs(tiles, ktiles, sms, rows);
        CHECK(runs >= 1);
        if (tiles >= per_sm * sms) CHECK(runs == 1);
        if (runs > 1) {
          CHECK(tiles * runs <= per_sm * sms);
          CHECK(ktiles / runs >= 8);
          // Every block's sums have their slot in the workspace (else K would stay whole).
          CHECK(gemv::hopper_slots_fit(tiles * runs, rows, n, m));
          // One more run would leave a run under 8 tiles of K or more blocks than fit at once.
          CHECK((tiles * (runs + 1) > per_sm * sms || ktiles / (runs + 1) < 8));
        }
        // Blocks alone on their multiprocessor for more rows of X than a pair takes only, and where K
        // stays whole or its runs stay long: those of over kHopperDeepRows rows (four stages) longer.
        const auto lone_ok = [&](int64_t lone_rows, int64_t lone_runs) {
          const int64_t run = ktiles / lone_runs;
          return (lone_runs == 1 || run >= gemv::kHopperLoneLeastRun) &&
                 (lone_rows <= gemv::kHopperDeepRows || run >= gemv::kHopperShallowLeastRun);
        };
        if (rows > gemv::kHopperPairRows) {
          CHECK(m > gemv::kHopperPairRows);
          CHECK(per_sm == 1);
          CHECK(lone_ok(rows, runs));
        } else {
          CHECK(per_sm == 2);
          if (m > gemv::kHopperPairRows) {
            // Blocks alone were refused: the runs their rows would take are too short.
            const int64_t lone_rows = gemv::hopper_fit(m, gemv::kHopperLoneRows);
            CHECK_FALSE(lone_ok(
                lone_rows, gemv::hopper_runs(gemv::hopper_tiles(m, lone_rows, n), ktiles, sms, lone_rows)));
          }
        }
        // Blocks of a pair over kWideRows rows where the runs of 128-row blocks stay long, else at most
        // kWideRows rows.
        const int64_t pair_runs = gemv::hopper_runs(gemv::hopper_tiles(m, gemv::kHopperPairRows, n), ktiles,
                                                    sms, gemv::kHopperPairRows);
        if (rows > gemv::kWideRows && rows <= gemv::kHopperPairRows)
          CHECK(ktiles / pair_runs >= gemv::kHopperPairLeastRun);
        if (rows <= gemv::kWideRows) CHECK(ktiles / pair_runs < gemv::kHopperPairLeastRun);
      }
    }
  }
  // The slots: 8192x8192 at 65 rows, 64 tiles of 80 rows in four runs, take 256 x 80 x 128 = 2.6M floats
  // of the workspace's 65 x 65536; 400 blocks of 128 rows (a device of 200 multiprocessors) would not fit.
  CHECK(gemv::hopper_rows(65, 8192, 128, sms) == 80);
  CHECK(gemv::hopper_runs(gemv::hopper_tiles(65, 80, 8192), 128, sms, 80) == 4);
  CHECK(gemv::hopper_slots_fit(256, 80, 8192, 65));
  CHECK_FALSE(gemv::hopper_slots_fit(400, 128, 4096, 65));
  // The measured cases (notes/performance.md, h1, h5 and q1): N, then K / 64.
  // From 65 rows always; from 33 where N is at least 8192, or 4096 with K at least 8192 (the runs of K
  // stay long: 4096x4096 and 2048x8192 measured faster on the GEMV forms); up to 32 never.
  for (const auto& [n, k] :
       {std::pair<int64_t, int64_t>{128, 512}, {2048, 8192}, {4096, 4096}, {8192, 2048}}) {
    CAPTURE(n);
    CAPTURE(k);
    CHECK(gemv::hopper_takes(65, n, k));
    CHECK(gemv::hopper_takes(256, n, k));
    CHECK_FALSE(gemv::hopper_takes(1, n, k));
    CHECK_FALSE(gemv::hopper_takes(32, n, k));
  }
  for (int64_t m : {33, 48, 64}) {
    CAPTURE(m);
    CHECK(gemv::hopper_takes(m, 28672, 8192));
    CHECK(gemv::hopper_takes(m, 8192, 28672));
    CHECK(gemv::hopper_takes(m, 8192, 2048));
    CHECK(gemv::hopper_takes(m, 4096, 8192));
    CHECK(gemv::hopper_takes(m, 4096, 11008));
    CHECK_FALSE(gemv::hopper_takes(m, 4096, 4096));
    CHECK_FALSE(gemv::hopper_takes(m, 2048, 8192));
    CHECK_FALSE(gemv::hopper_takes(m, 128, 512));
  }
  // The block sizes a launch may set (GemvLaunch::rows, bench --gemm-rows), and the shapes both GEMMs take.
  for (int64_t rows : {48, 64, 144, 176, 256}) CHECK(gemv::hopper_rows_exist(rows));
  for (int64_t rows : {-16, 0, 32, 100, 257, 272}) CHECK_FALSE(gemv::hopper_rows_exist(rows));
  CHECK(gemv::wide_shape_fits(8192, 8192, 128));
  CHECK(gemv::wide_shape_fits(256, 2048, 64));
  CHECK_FALSE(gemv::wide_shape_fits(64, 512, 128));     // part of a 128-channel tile
  CHECK_FALSE(gemv::wide_shape_fits(256, 2080, 32));    // K and the group not whole 64-row tiles
  CHECK(gemv::hopper_rows(72, 28672, 128, sms) == 80);  // 224 tiles, the whole K each
  CHECK(gemv::hopper_rows(65, 28672, 128, sms) == 80);
  CHECK(gemv::hopper_rows(90, 28672, 128, sms) == 96);
  CHECK(gemv::hopper_rows(100, 28672, 128, sms) == 112);
  CHECK(gemv::hopper_rows(128, 28672, 128, sms) == 128);
  CHECK(gemv::hopper_rows(129, 28672, 128, sms) == 144);  // one block alone a multiprocessor
  CHECK(gemv::hopper_rows(192, 28672, 128, sms) == 192);  // four stages, the whole K of 128 tiles
  CHECK(gemv::hopper_rows(200, 28672, 128, sms) == 208);
  CHECK(gemv::hopper_rows(256, 28672, 128, sms) == 256);
  CHECK(gemv::hopper_rows(300, 28672, 128, sms) == 160);  // two blocks of 150 rows
  CHECK(gemv::hopper_rows(72, 8192, 448, sms) == 80);     // 8192x28672: 64 tiles, four runs of 112
  CHECK(gemv::hopper_rows(129, 8192, 448, sms) == 144);   // two runs of 224
  CHECK(gemv::hopper_rows(200, 8192, 448, sms) == 208);
  CHECK(gemv::hopper_rows(256, 8192, 448, sms) == 256);
  CHECK(gemv::hopper_rows(72, 8192, 128, sms) == 80);  // 8192x8192: four runs of 32
  CHECK(gemv::hopper_rows(96, 8192, 128, sms) == 96);
  CHECK(gemv::hopper_rows(97, 8192, 128, sms) == 112);
  CHECK(gemv::hopper_rows(129, 8192, 128, sms) == 144);  // two runs of 64
  CHECK(gemv::hopper_rows(176, 8192, 128, sms) == 176);
  CHECK(gemv::hopper_rows(192, 8192, 128, sms) == 96);  // 192 rows: four stages in runs of 64
  CHECK(gemv::hopper_rows(200, 8192, 128, sms) == 112);
  CHECK(gemv::hopper_rows(256, 8192, 128, sms) == 128);
  CHECK(gemv::hopper_rows(192, 14336, 64, sms) == 96);   // 14336x4096: 112 tiles, the whole K of 64
  CHECK(gemv::hopper_rows(256, 8192, 256, sms) == 256);  // 8192x16384: two runs of 128
  CHECK(gemv::hopper_rows(129, 4096, 224, sms) == 144);  // 4096x14336: four runs of 56
  CHECK(gemv::hopper_rows(65, 4096, 224, sms) == 48);    // 128-row runs would be 28 long
  CHECK(gemv::hopper_rows(128, 4096, 64, sms) == 64);
  CHECK(gemv::hopper_rows(72, 4096, 64, sms) == 48);
  CHECK(gemv::hopper_rows(129, 4096, 64, sms) == 48);  // 144 rows would take four runs of 16
  CHECK(gemv::hopper_rows(200, 4096, 64, sms) == 64);
  // The GPU tests' cases: 4096x4096 at 72 and 200 rows, 256x2048 at 72, 17024x6144 at 72, 17152x6144
  // at 72 to 128, 17024x1024 at 144; and with the rows set: 17152x6144 at 200 in blocks of 208,
  // 8192x1024 at 160, 4096x4096 at 144, 17152x1024 at 256. Runs of K as the launcher counts them, from
  // the rows it launches.
  const auto runs_at = [&](int64_t m, int64_t n, int64_t ktiles, int64_t rows) {
    return gemv::hopper_runs(gemv::hopper_tiles(m, rows, n), ktiles, sms, rows);
  };
  const auto runs_of = [&](int64_t m, int64_t n, int64_t ktiles) {
    return runs_at(m, n, ktiles, gemv::hopper_rows(m, n, ktiles, sms));
  };
  CHECK(runs_of(72, 4096, 64) == 4);
  CHECK(runs_of(200, 4096, 64) == 2);
  CHECK(runs_of(72, 256, 32) == 4);
  CHECK(gemv::hopper_rows(72, 17024, 96, sms) == 80);
  CHECK(runs_of(72, 17024, 96) == 1);
  for (const auto& [m, rows] : {std::pair<int64_t, int64_t>{72, 80}, {90, 96}, {112, 112}, {128, 128}}) {
    CAPTURE(m);
    CHECK(gemv::hopper_rows(m, 17152, 96, sms) == rows);
    CHECK(runs_of(m, 17152, 96) == 1);
  }
  CHECK(gemv::hopper_rows(144, 17024, 16, sms) == 144);  // 133 tiles, single blocks
  CHECK(runs_of(144, 17024, 16) == 1);
  CHECK(runs_at(200, 17152, 96, 208) == 1);  // 134 tiles in pairs
  CHECK(runs_at(160, 8192, 16, 160) == 2);   // 64 tiles in pairs, two runs that meet
  CHECK(runs_at(144, 4096, 64, 144) == 4);   // 32 tiles in pairs, four runs
  CHECK(runs_at(256, 17152, 16, 256) == 1);  // 134 tiles in pairs, two wgmma of 128
  for (const auto& [m, n, ktiles, rows] : {std::array<int64_t, 4>{200, 17152, 96, 208},
                                           {160, 8192, 16, 160},
                                           {144, 4096, 64, 144},
                                           {256, 17152, 16, 256}}) {
    CAPTURE(m);
    CHECK(gemv::hopper_slots_fit(gemv::hopper_tiles(m, rows, n) * runs_at(m, n, ktiles, rows), rows, n, m));
  }
}

// Where the fenced form's split tiles meet (gemv::slot_split): in slots for grids of tiles x s with
// 2 <= s <= 5 whose last block reads at most kSlotLoads values a thread, with room in the
// workspace; by the last block to arrive otherwise.
TEST_CASE("gemv split: slots for tiles of 2-5 blocks that the last block reads in one go") {
  const int64_t sms = 132;
  int64_t slots = 0, counter = 0;
  for (int64_t fit : {132, 396, 660, 792}) {
    for (int64_t tiles : {1, 2, 3, 7, 64, 80, 128, 172, 256, 448, 600}) {
      for (int64_t per_tile : {1, 2, 3, 5, 8, 10, 16, 43}) {
        for (int64_t m : {1, 2, 4, 8, 9, 12, 16, 32, 64}) {
          CAPTURE(fit);
          CAPTURE(tiles);
          CAPTURE(per_tile);
          CAPTURE(m);
          const int64_t blocks = gemv::split_tile_blocks(tiles, per_tile, fit, sms);
          const int64_t s = gemv::slot_split(tiles, per_tile, blocks, m);
          if (s == 0) {
            ++counter;
            continue;
          }
          ++slots;
          CHECK(blocks == tiles * s);  // every run inside its tile
          CHECK(s >= 2);
          CHECK(s <= gemv::kSlotMostBlocks);
          CHECK(s <= per_tile);
          const int64_t outs = (gemv::kTileChannels * m + gemv::kBlockThreads - 1) / gemv::kBlockThreads;
          CHECK(outs * (s - 1) <= gemv::kSlotLoads);
          CHECK((s - 1) * tiles * gemv::kTileChannels * m <=
                gemv::sum_floats(tiles * gemv::kTileChannels, m));
        }
      }
    }
  }
  CHECK(slots > 0);
  CHECK(counter > 0);
  // The cases the GPU tests and the measurements name (132 multiprocessors; 6 blocks of one token
  // tile or 3 of two fit a multiprocessor).
  CHECK(gemv::slot_split(128, 16, gemv::split_tile_blocks(128, 16, 792, sms), 1) == 4);  // 8192x8192
  CHECK(gemv::slot_split(80, 10, gemv::split_tile_blocks(80, 10, 792, sms), 1) == 5);    // 5120x5120
  CHECK(gemv::slot_split(80, 10, 400, 4) == 5);                                          // 5120x5120, M = 4
  CHECK(gemv::slot_split(80, 10, gemv::split_tile_blocks(80, 10, 396, sms), 16) == 0);   // 24 reads
  CHECK(gemv::slot_split(64, 8, gemv::split_tile_blocks(64, 8, 792, sms), 1) == 0);      // 8 blocks
  CHECK(gemv::slot_split(64, 8, gemv::split_tile_blocks(64, 8, 396, sms), 9) == 4);      // 15 reads
  CHECK(gemv::slot_split(64, 8, gemv::split_tile_blocks(64, 8, 396, sms), 12) == 0);     // 18 reads
  CHECK(gemv::slot_split(448, 4, gemv::split_tile_blocks(448, 4, 792, sms), 1) == 0);    // a tile a block
  CHECK(gemv::slot_split(600, 2, gemv::split_tile_blocks(600, 2, 792, sms), 1) == 0);    // persistent
  CHECK(gemv::slot_split(224, 4, gemv::split_tile_blocks(224, 4, 792, sms), 8) == 2);    // 14336x2048
}

// The tensor-core AWQ and NF4 GEMVs' slices of K: whole units covering K, one wave of the blocks that
// fit, near `most` blocks, and M / 8 units a slice where K has them; the grids measured on the H200.
TEST_CASE("gemv split: the AWQ and NF4 slices of K keep one wave and M / 8 units a slice") {
  const auto slices = [](int64_t units, int64_t per) { return (units + per - 1) / per; };
  // AWQ, 16 rows of 28672x8192 (64 groups, 112 column blocks, 4 blocks of 528 fit a multiprocessor):
  // 4 slices of 16, not the 5 (560 blocks) the grid once had.
  CHECK(gemv::k_slice_units(64, 112, 528, 528, 16) == 16);
  // AWQ, 16 rows of 4096x4096: 16 slices of 2 groups (one wave would allow all 32); 12 rows: 1 group.
  CHECK(gemv::k_slice_units(32, 16, 528, 528, 16) == 2);
  CHECK(gemv::k_slice_units(32, 16, 528, 528, 12) == 1);
  // AWQ, one row of 8192x28672: 16 slices of 14 (near 528 blocks), though 660 fit.
  CHECK(gemv::k_slice_units(224, 32, 660, 528, 1) == 14);
  // NF4, 16 rows of 28672x8192: 448 column blocks where 660 fit, so K stays whole.
  CHECK(gemv::k_slice_units(64, 448, 660, 660, 16) == 64);
  for (int64_t units : {1, 3, 32, 40, 64, 86, 224}) {
    for (int64_t bx : {1, 16, 20, 112, 448, 1000}) {
      for (int64_t fit : {132, 528, 660, 924}) {
        for (int64_t most : {int64_t{528}, fit}) {
          for (int64_t m = 1; m <= 16; ++m) {
            CAPTURE(units);
            CAPTURE(bx);
            CAPTURE(fit);
            CAPTURE(most);
            CAPTURE(m);
            const int64_t per = gemv::k_slice_units(units, bx, fit, most, m);
            const int64_t s = slices(units, per);
            REQUIRE(per >= 1);
            CHECK(per <= units);
            CHECK((s - 1) * per < units);  // every slice holds a unit
            CHECK(per >= std::min(units, m / 8));
            if (s > 1) {
              CHECK(bx * s <= fit);              // one wave
              CHECK(s <= (most + bx - 1) / bx);  // near `most`
            }
          }
        }
      }
    }
  }
}

// NF4's slices: the one-wave grid, except that up to 8 rows a slice of more than 16 steps becomes
// slices of 6 (several waves); the grids measured on the H200.
TEST_CASE("gemv split: NF4 cuts long slices into short ones up to 8 rows") {
  // One row of 28672x8192 (64 steps, 448 column blocks, 924 fit): 11 slices of 6, not 2 of 32.
  CHECK(gemv::k_slice_units(64, 448, 924, 924, 1) == 32);
  CHECK(gemv::nf4_slice_steps(64, 448, 924, 1) == 6);
  // 4 and 8 rows (792 fit): 1 slice of 64 before.
  CHECK(gemv::nf4_slice_steps(64, 448, 792, 4) == 6);
  CHECK(gemv::nf4_slice_steps(64, 448, 792, 8) == 6);
  // 12 and 16 rows keep K whole.
  CHECK(gemv::nf4_slice_steps(64, 448, 660, 12) == 64);
  CHECK(gemv::nf4_slice_steps(64, 448, 660, 16) == 64);
  // One row of 8192x28672 (224 steps, 128 column blocks): 38 slices of 6, not 7 of 32.
  CHECK(gemv::nf4_slice_steps(224, 128, 924, 1) == 6);
  // One-wave slices of 16 steps or fewer stay: 8192x8192 (10), 14336x4096 (8), 4096x11008 (7).
  CHECK(gemv::nf4_slice_steps(64, 128, 924, 1) == 10);
  CHECK(gemv::nf4_slice_steps(32, 224, 924, 1) == 8);
  CHECK(gemv::nf4_slice_steps(86, 64, 924, 1) == 7);
  // The GPU case's 29696x2176 (17 steps, 464 column blocks: fewer than two blocks fit one at 924 or
  // 792): one slice of 17 before, slices of 6 now, at 1 to 8 rows.
  CHECK(gemv::k_slice_units(17, 464, 924, 924, 1) == 17);
  CHECK(gemv::nf4_slice_steps(17, 464, 924, 1) == 6);
  CHECK(gemv::nf4_slice_steps(17, 464, 924, 3) == 6);
  CHECK(gemv::nf4_slice_steps(17, 464, 792, 8) == 6);
  for (int64_t steps : {1, 3, 16, 17, 32, 64, 86, 224, 896}) {
    for (int64_t bx : {1, 16, 64, 128, 448, 1000}) {
      for (int64_t fit : {132, 660, 792, 924}) {
        for (int64_t m = 1; m <= 16; ++m) {
          CAPTURE(steps);
          CAPTURE(bx);
          CAPTURE(fit);
          CAPTURE(m);
          const int64_t wave = gemv::k_slice_units(steps, bx, fit, fit, m);
          const int64_t per = gemv::nf4_slice_steps(steps, bx, fit, m);
          REQUIRE(per >= 1);
          CHECK(per <= steps);
          CHECK(per <= wave);                           // never longer than the one wave's
          CHECK(per >= std::min(steps, m / 8));         // the M / 8 floor holds
          if (m <= 8) CHECK(per <= 16);                 // no long slices up to 8 rows
          if (m > 8 || wave <= 16) CHECK(per == wave);  // elsewhere the one-wave grid
        }
      }
    }
  }
}

TEST_CASE("gemv split: the lane form's tensor-core roles give each channel its own tile's products") {
  // One slab (256 rows of K) of one column group (4 channels) packed by the mixed-GEMM layout, and one
  // step of ft_lane_kernel played on the host: each lane's piece and X by gemv::lane_piece_index and
  // gemv::lane_x_row, its words' pairs by the recipe (gemv::ft_word_pairs) placed in A by
  // gemv::lane_a_pair, four m16n8k16 products by the PTX fragment layout (A: registers 0-3 at (row g,
  // k 2q), (g + 8, 2q), (g, 8 + 2q), (g + 8, 8 + 2q), two k each; B: registers 0 and 1 at (k 2q, n g)
  // and (k 8 + 2q, n g); D: c0, c1 at (g, 2q + {0, 1}), c2, c3 at (g + 8, 2q + {0, 1})), then the
  // kernel's two shuffles (xor 2, down 5). Lane 8c must hold channel c's exact sum over the slab.
  const layouts::FtGeometry g4{4};
  constexpr int64_t kN = 4, kK = 256;
  std::array<uint32_t, kN * kK / 8> words{};
  std::array<std::array<int, kK>, kN> code{};
  std::array<double, kK> x{};
  for (int64_t n = 0; n < kN; ++n) {
    for (int64_t k = 0; k < kK; ++k) {
      code[n][k] = static_cast<int>((n * 7 + k * 13 + (k * k) % 11) % 16) - 8;
      const layouts::FtPlace at = layouts::ft_place(g4, n, k, kK);
      words[at.word] |= static_cast<uint32_t>(code[n][k] + 8) << (4 * at.slot);
    }
  }
  for (int64_t k = 0; k < kK; ++k) x[k] = static_cast<double>((k * 5 + 3) % 9) - 4.0;  // exact in fp16
  // Each piece is loaded by one lane, and each row of X held by one lane.
  std::array<int, 32> piece_loads{};
  std::array<int, kK> x_holds{};
  for (int lane = 0; lane < 32; ++lane) {
    ++piece_loads[gemv::lane_piece_index(lane)];
    if (gemv::lane_holds_x(lane)) {
      for (int r = 0; r < 16; ++r) ++x_holds[gemv::lane_x_row(lane) + r];
    }
  }
  CHECK(std::all_of(piece_loads.begin(), piece_loads.end(), [](int c) { return c == 1; }));
  CHECK(std::all_of(x_holds.begin(), x_holds.end(), [](int c) { return c == 1; }));
  // One step: D accumulates over the four words (one product a word).
  double d[16][8] = {};
  for (int i = 0; i < 4; ++i) {
    double a[16][16] = {}, b[16][8] = {};
    for (int lane = 0; lane < 32; ++lane) {
      const int gr = lane / 4, q = lane % 4;
      uint32_t pr[4];
      gemv::ft_word_pairs<false>(4, OutType::F16, words[4 * gemv::lane_piece_index(lane) + i], pr);
      const auto half = [](uint32_t v, int e) {
        return static_cast<double>(quant::half_to_f32(e ? bits::hi16(v) : bits::lo16(v)));
      };
      const int arow[4] = {gr, gr + 8, gr, gr + 8}, acol[4] = {2 * q, 2 * q, 8 + 2 * q, 8 + 2 * q};
      for (int r = 0; r < 4; ++r) {
        for (int e = 0; e < 2; ++e) a[arow[r]][acol[r] + e] = half(pr[gemv::lane_a_pair(r)], e);
      }
      if (gemv::lane_holds_x(lane)) {
        const int x0 = gemv::lane_x_row(lane);
        for (int e = 0; e < 2; ++e) {
          b[2 * q + e][gr] = x[x0 + 2 * i + e];
          b[8 + 2 * q + e][gr] = x[x0 + 8 + 2 * i + e];
        }
      }
    }
    for (int r = 0; r < 16; ++r) {
      for (int c = 0; c < 8; ++c) {
        for (int k = 0; k < 16; ++k) d[r][c] += a[r][k] * b[k][c];
      }
    }
  }
  std::array<double, 32> lane_sum{}, met{};
  for (int lane = 0; lane < 32; ++lane) {
    const int gr = lane / 4, q = lane % 4;
    lane_sum[lane] = d[gr][2 * q] + d[gr + 8][2 * q + 1];
  }
  // The lanes that hold their own tile: channel and tile by gemv::lane_piece.
  for (int lane = 0; lane < 32; ++lane) {
    if (!gemv::lane_holds_tile(lane)) continue;
    const gemv::LanePiece p = gemv::lane_piece(lane);
    double want = 0.0;
    for (int k = 64 * p.tile; k < 64 * p.tile + 64; ++k) want += code[p.channel][k] * x[k];
    CAPTURE(lane);
    CHECK(lane_sum[lane] == want);
    CHECK(lane == 8 * p.channel + std::array<int, 4>{0, 2, 5, 7}[p.tile]);
  }
  for (int lane = 0; lane < 32; ++lane) met[lane] = lane_sum[lane] + lane_sum[lane ^ 2];
  for (int c = 0; c < 4; ++c) {
    double want = 0.0;
    for (int k = 0; k < kK; ++k) want += code[c][k] * x[k];
    CAPTURE(c);
    CHECK(met[8 * c] + met[8 * c + 5] == want);
  }
}

TEST_CASE("gemv split: one row of int4 on the lane form, warps a block and ranges of column groups") {
  // Warps a block: as many as K has slabs of 256 rows, 8 at least, 32 at most.
  CHECK(gemv::lane_warps(128) == 8);
  CHECK(gemv::lane_warps(2048) == 8);
  CHECK(gemv::lane_warps(2176) == 16);
  CHECK(gemv::lane_warps(4096) == 16);
  CHECK(gemv::lane_warps(4352) == 32);
  CHECK(gemv::lane_warps(8192) == 32);
  CHECK(gemv::lane_warps(28672) == 32);
  // The grids the H200 ran (132 multiprocessors; 4, 2 and 1 blocks of 8, 16 and 32 warps fit one).
  const gemv::LaneGrid a = gemv::lane_grid(28672, 8192, 32, 132);
  CHECK(a.rows == 1);
  CHECK(a.per == 55);
  CHECK(a.columns == 131);
  CHECK(a.shared_bytes == 32 * 55 * 16);
  CHECK(a.per_row == 32);
  const gemv::LaneGrid b = gemv::lane_grid(8192, 28672, 32, 132);
  CHECK(b.rows == 4);  // the four rows of blocks meet in the workspace
  CHECK(b.per == 63);
  CHECK(b.columns == 33);
  CHECK(b.per_row == 28);  // 112 slabs spread over the four rows, not 32 + 32 + 32 + 16
  const gemv::LaneGrid c = gemv::lane_grid(4096, 4096, 16, 264);
  CHECK(c.rows == 1);
  CHECK(c.per == 4);
  CHECK(c.columns == 256);
  CHECK(c.per_row == 16);
  // An output layer of 128256 channels: ranges of 64 groups at most (32 KB of partial sums), so more
  // than one wave.
  const gemv::LaneGrid d = gemv::lane_grid(128256, 8192, 32, 132);
  CHECK(d.per == 64);
  CHECK(d.columns == 501);
  CHECK(d.shared_bytes == gemv::kLanePartBytes);
  // Beyond K = 8192 the block is chosen by its grid (the H200: 528, 264 and 132 blocks of 8, 16 and 32
  // warps at once); up to 8192 by K alone, whatever the grids.
  const auto h200 = [](int w) { return int64_t{528} * 8 / w; };
  CHECK(gemv::lane_cost(b, 132) == 63 + 4);
  CHECK(gemv::lane_warps(8192, 28672, h200) == 16);  // 7 full rows of 56 groups against 4 rows of 63
  CHECK(gemv::lane_cost(gemv::lane_grid(8192, 28672, 16, 264), 264) == 56 + 7);
  CHECK(gemv::lane_warps(4096, 11008, h200) == 16);  // 43 slabs: 3 rows of 12 groups against 2 of 16
  CHECK(gemv::lane_warps(4096, 14336, h200) == 32);  // 2 rows of 16 against 7 rows of 14 (8 warps)
  CHECK(gemv::lane_warps(5120, 13824, h200) == 32);
  CHECK(gemv::lane_warps(28672, 8192, h200) == 32);
  CHECK(gemv::lane_warps(4096, 4096, h200) == 16);
  CHECK(gemv::lane_warps(8192, 8320, h200) == 8);  // 33 slabs: 32 warps would leave a row of one slab
  CHECK(gemv::lane_warps(6144, 8320, h200) == 8);  // the GPU suite's shapes for 8 and 16 warps
  CHECK(gemv::lane_warps(2048, 11008, h200) == 16);
  CHECK(gemv::lane_warps(48, 8320, h200) == 32);  // few groups: the fewest rows
  // The slabs spread over the rows of blocks: the GPU suite's shapes of the lane form and the Llama
  // shapes whose K the warps do not divide.
  CHECK(gemv::lane_warps(64, 28672, h200) == 32);
  CHECK(gemv::lane_warps(32, 65792, h200) == 32);
  const auto spread = [](int64_t n, int64_t k, int w, int64_t resident) {
    const gemv::LaneGrid g = gemv::lane_grid(n, k, w, resident);
    return std::pair<int64_t, int64_t>{g.rows, g.per_row};
  };
  CHECK(spread(48, 8320, 32, 132) == std::pair<int64_t, int64_t>{2, 17});     // 33 slabs: 17 + 16
  CHECK(spread(64, 28672, 32, 132) == std::pair<int64_t, int64_t>{4, 28});    // 112: 4 x 28
  CHECK(spread(32, 65792, 32, 132) == std::pair<int64_t, int64_t>{9, 29});    // 257: 8 x 29 + 25
  CHECK(spread(2048, 11008, 16, 264) == std::pair<int64_t, int64_t>{3, 15});  // 43: 15 + 15 + 13
  CHECK(spread(6144, 8320, 8, 528) == std::pair<int64_t, int64_t>{5, 7});     // 33: 4 x 7 + 5
  CHECK(spread(4096, 14336, 32, 132) == std::pair<int64_t, int64_t>{2, 28});  // 56: 28 + 28
  CHECK(spread(5120, 13824, 32, 132) == std::pair<int64_t, int64_t>{2, 27});  // 54: 27 + 27
  CHECK(spread(8192, 28672, 16, 264) == std::pair<int64_t, int64_t>{7, 16});  // 112: 7 full rows
  CHECK(spread(64, 2176, 16, 264) == std::pair<int64_t, int64_t>{1, 9});      // one row: 9 of 16 busy
  // The spread instance: where a row of blocks takes fewer slabs than its warps, and only with
  // several rows.
  CHECK(gemv::lane_grid(48, 8320, 32, 132).spread);
  CHECK(gemv::lane_grid(2048, 11008, 16, 264).spread);
  CHECK(gemv::lane_grid(6144, 8320, 8, 528).spread);
  CHECK_FALSE(gemv::lane_grid(8192, 28672, 16, 264).spread);  // 7 full rows
  CHECK_FALSE(gemv::lane_grid(64, 2176, 16, 264).spread);     // one row
  CHECK_FALSE(gemv::lane_grid(28672, 8192, 32, 132).spread);
  // fp16 X's unmet sums: ranges of 32 column groups and more whose quadrupled sums a block may have
  // (on 132 multiprocessors; 227 KB a block on compute capability 9.0, 99 KB on 8.6).
  constexpr int64_t kHopper = 227 * 1024, kAmpere = 99 * 1024;
  CHECK(gemv::lane_unmet(a, kHopper));                                           // 55 groups, 112640 bytes
  CHECK_FALSE(gemv::lane_unmet(a, kAmpere));                                     // the same sums past 99 KB
  CHECK(gemv::lane_unmet(gemv::lane_grid(17408, 4224, 32, 132), kAmpere));       // 33 groups, 67584 bytes
  CHECK_FALSE(gemv::lane_unmet(gemv::lane_grid(8192, 8192, 32, 132), kHopper));  // 16 groups
  CHECK(gemv::lane_unmet(gemv::lane_grid(8192, 28672, 16, 264), kHopper));       // 56 groups, 7 rows
  CHECK(gemv::lane_unmet(d, kHopper));  // 64 groups, the most: 128 KB
  CHECK_FALSE(gemv::lane_unmet(d, 4 * d.shared_bytes - 1));
  // bf16 X's staged scales: groups of 128, compute capability 8.0 and later, ranges of 32 groups and more
  // whose doubled sums a block may have.
  CHECK(gemv::lane_stages_scales(a, 128, 90, kHopper));  // 55 groups, 56320 bytes
  CHECK(gemv::lane_stages_scales(a, 128, 86, kAmpere));
  CHECK(gemv::lane_stages_scales(d, 128, 80, kAmpere));  // 64 groups: 64 KB
  CHECK_FALSE(gemv::lane_stages_scales(d, 128, 80, 2 * d.shared_bytes - 1));
  CHECK_FALSE(gemv::lane_stages_scales(a, 128, 75, kHopper));  // no cp.async
  CHECK_FALSE(gemv::lane_stages_scales(a, 64, 90, kHopper));   // four scale rows a slab
  CHECK_FALSE(gemv::lane_stages_scales(a, 8192, 90, kHopper));
  CHECK_FALSE(gemv::lane_stages_scales(gemv::lane_grid(8192, 8192, 32, 132), 128, 90, kHopper));  // 16 groups
  CHECK(gemv::lane_stages_scales(gemv::lane_grid(8192, 28672, 16, 264), 128, 90, kHopper));
  // Where two blocks cost the same, the smaller: 7168x18432 (31 + 9 against 35 + 5), 1024x11008 (3 + 3
  // against 4 + 2), 1536x8960 (5 + 3 against 6 + 2).
  CHECK(gemv::lane_cost(gemv::lane_grid(7168, 18432, 8, 528), 528) == 31 + 9);
  CHECK(gemv::lane_cost(gemv::lane_grid(7168, 18432, 16, 264), 264) == 35 + 5);
  CHECK(gemv::lane_warps(7168, 18432, h200) == 8);
  CHECK(gemv::lane_warps(1024, 11008, h200) == 16);
  CHECK(gemv::lane_warps(1536, 8960, h200) == 16);
  CHECK(gemv::lane_warps(16384, 53248, h200) == 8);  // one wave of 8-warp blocks against 4 of 32
  CHECK(gemv::lane_warps(14336, 28672, h200) == 16);
  // A device that holds one block at a time: the fewest rows of blocks.
  CHECK(gemv::lane_warps(8192, 28672, [](int) { return int64_t{1}; }) == 32);
  // Every grid covers the column groups and K, and keeps its partial sums within the bound, for
  // shapes from one column group to wide output layers and for every device size.
  for (int64_t n = 16; n <= 262144; n = n * 3 + 16) {
    for (int64_t k = 128; k <= 65536; k = k * 2 + 128) {
      for (const int64_t blocks_per_sm : {1, 2, 4}) {
        for (const int64_t sms : {1, 46, 132, 144}) {
          const int warps = gemv::lane_warps(n, k, [&](int w) { return blocks_per_sm * sms * 32 / w; });
          REQUIRE((warps == 8 || warps == 16 || warps == 32));
          if (k <= 8192) REQUIRE(warps == gemv::lane_warps(k));
          const gemv::LaneGrid g = gemv::lane_grid(n, k, warps, blocks_per_sm * sms * 32 / warps);
          const int64_t groups = n / 4;
          REQUIRE(g.per >= 1);
          REQUIRE(g.columns * g.per >= groups);
          REQUIRE((g.columns - 1) * g.per < groups);
          REQUIRE(g.rows * warps * gemv::kLaneSlab >= k);
          REQUIRE((g.rows - 1) * warps * gemv::kLaneSlab < k);
          REQUIRE(g.shared_bytes <= gemv::kLanePartBytes);
          REQUIRE(g.shared_bytes == warps * g.per * 16);
          REQUIRE((g.rows - 1) * n <= gemv::workspace_sum_floats(n, k, 1));  // room for the slots
        }
      }
    }
  }
}

TEST_CASE("gemv split: the lane form's rows of blocks meet in slots where the whole grid fits at once") {
  // 8192x28672 on the H200: 7 rows of 37 ranges of 16-warp blocks, 259 of the 264 it holds at once.
  const gemv::LaneGrid b = gemv::lane_grid(8192, 28672, 16, 264);
  CHECK(b.rows * b.columns == 259);
  CHECK(gemv::lane_meets_in_slots(b, 8192, 28672, 264));
  // The same grid on a device that holds fewer blocks than it has: the last row could wait for a block
  // that has no place to start, so the last block to arrive settles each range instead.
  CHECK_FALSE(gemv::lane_meets_in_slots(b, 8192, 28672, 258));
  // One row of blocks: nothing to meet.
  CHECK_FALSE(gemv::lane_meets_in_slots(gemv::lane_grid(28672, 8192, 32, 132), 28672, 8192, 132));
  // Ranges capped at 128 groups (kLanePartBytes): 1024 blocks, four waves.
  const gemv::LaneGrid wide = gemv::lane_grid(131072, 16384, 16, 264);
  CHECK(wide.per == 128);
  CHECK(wide.rows * wide.columns == 1024);
  CHECK_FALSE(gemv::lane_meets_in_slots(wide, 131072, 16384, 264));
  // The workspace has room for the slots of every block size's rows (for every grid: the test above),
  // and only a row of X needs it.
  CHECK(gemv::lane_slot_floats(8192, 28672) == 13 * 8192);  // 112 slabs: 14 rows of 8 warps
  CHECK(gemv::lane_slot_floats(8192, 8192) == 0);           // one block holds the whole K
  CHECK(gemv::workspace_sum_floats(8192, 28672, 1) == 13 * 8192);
  CHECK(gemv::workspace_sum_floats(8192, 28672, 2) == gemv::sum_floats(8192, 2));
  CHECK(gemv::workspace_sum_floats(4096, 8192, 1) == gemv::sum_floats(4096, 1));
}

TEST_CASE("gemv split: the online path's slices of K, by the shape alone") {
  // As many slices as give 4096 warps of 16 channels, at most 16, none of fewer than 4 blocks.
  CHECK(gemv::online_slices(8192, 28672, 128) == 8);   // 512 warps, 224 blocks
  CHECK(gemv::online_slices(28672, 8192, 128) == 3);   // 1792 warps: 2 slices would be 3584
  CHECK(gemv::online_slices(8192, 8192, 128) == 8);    // 64 blocks
  CHECK(gemv::online_slices(4096, 4096, 128) == 8);    // 256 warps want 16; 32 blocks allow 8
  CHECK(gemv::online_slices(4096, 4096, 64) == 16);    // 64 blocks
  CHECK(gemv::online_slices(2048, 11008, 128) == 16);  // 128 warps want 32: at most 16
  CHECK(gemv::online_slices(65536, 4096, 128) == 1);   // 4096 warps already
  CHECK(gemv::online_slices(1024, 256, 128) == 1);     // two blocks
  CHECK(gemv::online_slices(64, 1408, 64) == 5);       // 22 blocks: 4, 4, 4, 5, 5
  CHECK(gemv::online_slice_first(3, 5, 22) == 13);
  for (int64_t n = 16; n <= 131072; n *= 2) {
    for (const int64_t k : {64, 128, 256, 448, 1024, 1408, 4096, 11008, 28672}) {
      for (const int64_t group : {64, 128}) {
        if (k % group != 0) continue;
        const int64_t s = gemv::online_slices(n, k, group), blocks = k / group, warps = n / 16;
        CAPTURE(n);
        CAPTURE(k);
        CAPTURE(group);
        REQUIRE(s >= 1);
        CHECK(s <= gemv::kOnlineMostSlices);
        CHECK(gemv::online_slice_first(0, s, blocks) == 0);
        CHECK(gemv::online_slice_first(s, s, blocks) == blocks);
        for (int64_t i = 0; i < s; ++i) {
          const int64_t len =
              gemv::online_slice_first(i + 1, s, blocks) - gemv::online_slice_first(i, s, blocks);
          CHECK(len >= (s > 1 ? gemv::kOnlineLeastBlocks : 1));
        }
        // No more slices than the warps ask for, and fewer only where a slice would be too short or
        // the cap is reached.
        CHECK((s == 1 || (s - 1) * warps < gemv::kOnlineWarps));
        CHECK((s * warps >= gemv::kOnlineWarps || s == gemv::kOnlineMostSlices ||
               (s + 1) * gemv::kOnlineLeastBlocks > blocks));
      }
    }
  }
}

TEST_CASE("gemv split: AWQ at 1-16 rows on the lane form, columns of channels by rows of runs of steps") {
  // A warp's channels: 256 at one and two rows, 128 at three to eight, 64 at nine to sixteen. Taken where
  // they divide N, for groups of a multiple of 64, from compute capability 8.0; from nine rows only where
  // N's columns fit one wave of the sixteen-row form's blocks (the last argument).
  CHECK(gemv::awq_lane_channels(1) == 256);
  CHECK(gemv::awq_lane_channels(2) == 256);
  CHECK(gemv::awq_lane_channels(3) == 128);
  CHECK(gemv::awq_lane_channels(4) == 128);
  CHECK(gemv::awq_lane_channels(5) == 128);
  CHECK(gemv::awq_lane_channels(8) == 128);
  CHECK(gemv::awq_lane_channels(9) == 64);
  CHECK(gemv::awq_lane_channels(16) == 64);
  // (264: the H200's blocks at once of the sixteen-row form, two a multiprocessor.)
  CHECK(gemv::awq_lane_takes(1, 28672, 128, 90, 264));
  CHECK(gemv::awq_lane_takes(1, 2048, 64, 80, 264));
  CHECK(gemv::awq_lane_takes(2, 28672, 128, 90, 264));
  CHECK(gemv::awq_lane_takes(3, 4096, 64, 80, 264));
  CHECK(gemv::awq_lane_takes(4, 8192, 128, 90, 264));
  CHECK(gemv::awq_lane_takes(5, 28672, 128, 90, 264));
  CHECK(gemv::awq_lane_takes(8, 28672, 128, 90, 0));         // up to eight rows whatever the device holds
  CHECK(gemv::awq_lane_takes(8, 1280 + 128, 128, 90, 264));  // 128 divides it
  CHECK(gemv::awq_lane_takes(9, 1280 + 64, 64, 80, 264));    // 64 divides it
  CHECK(gemv::awq_lane_takes(16, 8192, 128, 90, 264));       // 128 columns of 64 channels
  CHECK(gemv::awq_lane_takes(16, 16896, 128, 90, 264));      // 264 columns: one wave
  CHECK_FALSE(gemv::awq_lane_takes(16, 16896 + 64, 128, 90, 264));  // 265 columns: the ring
  CHECK_FALSE(gemv::awq_lane_takes(9, 28672, 128, 90, 264));        // 448 columns
  CHECK(gemv::awq_lane_takes(9, 28672, 128, 90, 448));              // a device that holds them
  CHECK_FALSE(gemv::awq_lane_takes(17, 4096, 128, 90, 264));        // more rows: the ring
  CHECK_FALSE(gemv::awq_lane_takes(0, 28672, 128, 90, 264));
  CHECK_FALSE(gemv::awq_lane_takes(2, 1280 + 128, 128, 90, 264));
  CHECK(gemv::awq_lane_takes(4, 1280 + 128, 128, 90, 264));  // 128 divides it from three rows
  CHECK_FALSE(gemv::awq_lane_takes(1, 200, 128, 90, 264));
  CHECK_FALSE(gemv::awq_lane_takes(1, 1280 + 128, 128, 90, 264));
  CHECK_FALSE(gemv::awq_lane_takes(5, 1280 + 64, 128, 90, 264));
  CHECK_FALSE(gemv::awq_lane_takes(16, 1280 + 32, 128, 90, 264));
  CHECK_FALSE(gemv::awq_lane_takes(1, 4096, 32, 90, 264));  // the CUDA-core kernels
  CHECK_FALSE(gemv::awq_lane_takes(16, 4096, 32, 90, 264));
  CHECK_FALSE(gemv::awq_lane_takes(1, 4096, 128, 75, 264));
  CHECK_FALSE(gemv::awq_lane_takes(12, 4096, 128, 75, 264));
  // The H200's grids (two blocks of 8 warps a multiprocessor: 264 at once).
  const auto grid = [](int64_t n, int64_t k, int64_t m, int64_t resident) {
    const gemv::AwqLaneGrid g = gemv::awq_lane_grid(n, k, gemv::awq_lane_channels(m), resident);
    return std::array<int64_t, 3>{g.columns, g.rows, g.steps_per_warp};
  };
  CHECK(grid(28672, 8192, 1, 264) == std::array<int64_t, 3>{112, 2, 32});
  CHECK(grid(8192, 28672, 1, 264) == std::array<int64_t, 3>{32, 8, 28});
  CHECK(grid(8192, 8192, 1, 264) == std::array<int64_t, 3>{32, 8, 8});
  CHECK(grid(4096, 4096, 1, 264) == std::array<int64_t, 3>{16, 16, 2});
  CHECK(grid(2048, 11008, 1, 264) == std::array<int64_t, 3>{8, 29, 3});  // 230 runs: the last row 6 warps
  CHECK(grid(768, 4160, 1, 264) == std::array<int64_t, 3>{3, 33, 1});
  CHECK(grid(2560, 5120, 1, 264) == std::array<int64_t, 3>{10, 20, 2});
  // More columns than the device holds at once: 512 columns over 264 blocks, two waves of whole-K blocks
  // (64 + 2 steps each, 68) beat four of half-K ones (4 x 18 = 72).
  CHECK(grid(131072, 4096, 1, 264) == std::array<int64_t, 3>{512, 1, 32});
  // Sixteen rows at 28672x8192: 448 columns of 64 channels. One row of blocks is two waves of 64 steps
  // and more (2 x 66 = 132); four rows are 1792 blocks, 7 waves of 16 steps (7 x 18 = 126).
  CHECK(grid(28672, 8192, 16, 264) == std::array<int64_t, 3>{448, 4, 16});
  CHECK(grid(28672, 8192, 8, 264) == std::array<int64_t, 3>{224, 1, 64});  // 224 columns: one wave
  CHECK(grid(4096, 4096, 16, 264) == std::array<int64_t, 3>{64, 4, 8});
  // Every grid covers K's steps once with no empty row, and finishes no later, in waves of steps, than
  // one row of blocks or the rows that fill one wave.
  const auto cost = [](const gemv::AwqLaneGrid& g, int64_t resident) {
    return (g.columns * g.rows + resident - 1) / resident * (g.steps_per_warp + gemv::kAwqLaneBlockSteps);
  };
  for (const int64_t m : {1, 5, 16}) {
    const int64_t ch = gemv::awq_lane_channels(m);
    for (int64_t n = ch; n <= 262144; n = n * 3 + ch) {
      for (int64_t k = 64; k <= 65536; k = k * 2 + 64) {
        for (const int64_t resident : {2, 92, 264, 288, 1056}) {
          const gemv::AwqLaneGrid g = gemv::awq_lane_grid(n, k, ch, resident);
          const int64_t steps = k / 16, runs = (steps + g.steps_per_warp - 1) / g.steps_per_warp;
          CAPTURE(m);
          CAPTURE(n);
          CAPTURE(k);
          CAPTURE(resident);
          CHECK(g.columns * ch == n);
          CHECK(g.steps_per_warp >= 1);
          CHECK(g.rows * gemv::kAwqLaneWarps * g.steps_per_warp >= steps);  // K covered
          CHECK((g.rows - 1) * gemv::kAwqLaneWarps < runs);                 // the last row has work
          for (const int64_t rows : {int64_t{1}, std::max<int64_t>(1, resident / g.columns)}) {
            gemv::AwqLaneGrid other = g;
            other.rows = std::min(rows, (steps + gemv::kAwqLaneWarps - 1) / gemv::kAwqLaneWarps);
            other.steps_per_warp =
                (steps + other.rows * gemv::kAwqLaneWarps - 1) / (other.rows * gemv::kAwqLaneWarps);
            CHECK(cost(g, resident) <= cost(other, resident));
          }
        }
      }
    }
  }
}

TEST_CASE("gemv split: where the walk fed by the copy engine takes 2 to 32 rows") {
  // The goal shapes and those of the GPU case, from 3 to 32 rows (one token tile to 16, two from 17),
  // groups of 64, 128 and whole K, on compute capability 9.0.
  for (const int64_t m : {3, 5, 8, 9, 12, 16, 17, 24, 32}) {
    CHECK(gemv::walk_token_tiles(m) == (m <= 16 ? 1 : 2));
    CHECK(gemv::walk16_takes(90, m, 28672, 8192, 128));
    CHECK(gemv::walk16_takes(90, m, 8192, 28672, 64));
    CHECK(gemv::walk16_takes(90, m, 4096, 4096, 4096));  // 2^24 weights: the least it takes
    CHECK(gemv::walk16_takes(90, m, 128, 131072, 128));  // one range, 1024 steps
    CHECK(gemv::walk16_takes(90, m, 4096, 11008, 64));   // 86 steps
  }
  // 2 rows from 2^25 weights only (4096x4096 ran 0.97-1.00x the ring there, 8192x8192 0.99-1.02x).
  CHECK(gemv::walk16_takes(90, 2, 28672, 8192, 128));
  CHECK(gemv::walk16_takes(90, 2, 4096, 8192, 128));  // 2^25
  CHECK(gemv::walk16_takes(90, 2, 6144, 11008, 64));
  CHECK_FALSE(gemv::walk16_takes(90, 2, 4096, 4096, 128));
  CHECK_FALSE(gemv::walk16_takes(90, 2, 4096, 8192 - 128, 128));
  // One row (the lane form), more than 32, before Hopper, on smaller matrices (2048x2048 ran
  // 0.97-1.00x the ring at 9-16 rows), and where its blocks or steps would not fit the matrix.
  CHECK_FALSE(gemv::walk16_takes(90, 1, 28672, 8192, 128));
  CHECK_FALSE(gemv::walk16_takes(90, 33, 28672, 8192, 128));
  CHECK_FALSE(gemv::walk16_takes(90, 32, 2048, 2048, 128));
  CHECK_FALSE(gemv::walk16_takes(89, 16, 28672, 8192, 128));
  CHECK_FALSE(gemv::walk16_takes(90, 16, 2048, 2048, 128));
  CHECK_FALSE(gemv::walk16_takes(90, 16, 4096, 4096 - 128, 128));
  CHECK_FALSE(gemv::walk16_takes(90, 16, 28672 + 64, 8192, 128));  // channels not a multiple of 128
  CHECK_FALSE(gemv::walk16_takes(90, 16, 4096, 8192 + 64, 64));    // K not a multiple of 128
  CHECK_FALSE(gemv::walk16_takes(90, 16, 4096, 8192, 192));        // a group neither 64 nor whole steps
  CHECK_FALSE(gemv::walk16_takes(90, 16, 4096, 8192, 32));
}

TEST_CASE("gemv split: the walk's half tile takes 17 to 24 rows from 2^25 weights") {
  for (const int64_t m : {17, 20, 24}) {
    CHECK(gemv::walk_half_tile(m, 28672, 8192));
    CHECK(gemv::walk_half_tile(m, 8192, 28672));
    CHECK(gemv::walk_half_tile(m, 256, 131072));  // 2^25: the GPU case's half-tile shape
    CHECK(gemv::walk_half_tile(m, 6144, 11008));
    CHECK_FALSE(gemv::walk_half_tile(m, 4096, 4096));  // 2^24 (0.93-0.99x the whole second tile)
    CHECK_FALSE(gemv::walk_half_tile(m, 2048, 8320));
  }
  // One tile up to 16 rows; the whole second tile from 25.
  for (const int64_t m : {1, 2, 16, 25, 32}) CHECK_FALSE(gemv::walk_half_tile(m, 28672, 8192));
}

TEST_CASE("gemv split: 2 to 8 rows go on the mma's n8 side where the walk's stage has two steps") {
  const auto n8 = [](bool bf16, int64_t m, int64_t n, int64_t k) {
    return gemv::walk_eight_n8(m, gemv::walk16_stage_steps(bf16, n, k));
  };
  for (const int64_t m : {2, 3, 5, 8}) {
    // bf16 X from 2^25 weights, K an even number of steps: the shapes the GPU case and the bench run.
    CHECK(n8(true, m, 28672, 8192));
    CHECK(n8(true, m, 8192, 28672));
    CHECK(n8(true, m, 8192, 8192));
    CHECK(n8(true, m, 14336, 4096));
    CHECK(n8(true, m, 256, 131072));
    CHECK(n8(true, m, 6144, 11008));  // 86 steps
    // One step a stage: fp16 X, bf16 below 2^25 weights or with an odd number of steps.
    CHECK_FALSE(n8(false, m, 28672, 8192));
    CHECK_FALSE(n8(false, m, 256, 131072));
    CHECK_FALSE(n8(true, m, 4096, 4096));
    CHECK_FALSE(n8(true, m, 2048, 8320));        // 2^24 weights and a little more
    CHECK_FALSE(n8(true, m, 4096, 8192 + 128));  // 65 steps
  }
  // From 9 rows the tile of 16 (and from 17 two token tiles).
  for (const int64_t m : {9, 12, 16, 17, 24}) CHECK_FALSE(n8(true, m, 28672, 8192));
}

TEST_CASE("gemv split: the walk takes two steps of K a stage for bf16 X from 2^25 weights, K even in steps") {
  CHECK(gemv::walk16_stage_steps(true, 28672, 8192) == 2);
  CHECK(gemv::walk16_stage_steps(true, 8192, 28672) == 2);
  CHECK(gemv::walk16_stage_steps(true, 256, 131072) == 2);  // 2^25: the GPU case's two-step shape
  CHECK(gemv::walk16_stage_steps(true, 6144, 11008) == 2);  // 86 steps
  CHECK(gemv::walk16_stage_steps(true, 4096, 4096) == 1);   // 2^24 (lost 1-2.5% in two steps)
  CHECK(gemv::walk16_stage_steps(true, 2048, 8320) == 1);   // 65 steps: the GPU case's odd shape
  CHECK(gemv::walk16_stage_steps(true, 4096, 8192 + 128) == 1);
  CHECK(gemv::walk16_stage_steps(false, 28672, 8192) == 1);  // fp16 keeps one step
  CHECK(gemv::walk16_stage_steps(false, 256, 131072) == 1);
}

// Where the persistent grid's runs meet in slots (ft_bulk_kernel with RUNS), walked as the kernel
// walks them: every tile is written by exactly one block (the one with the whole tile, or the settler:
// the run holding its first unit, whose part ends its run); every other part stores into its own
// slot, below the settler's count and the rule's bound, from a run launched before the settler's
// (a higher run index: the blocks take the runs in reverse).
TEST_CASE("gemv split: the persistent runs' parts of a tile meet in distinct slots, settled by one block") {
  int64_t walked = 0, refused = 0;
  for (int64_t per_tile : {2, 3, 4, 8, 16, 22, 56}) {
    for (int64_t tiles : {1, 3, 64, 128, 448}) {
      for (int64_t blocks : {1, 7, 264, 396, 528, 792}) {
        const int64_t units = tiles * per_tile;
        if (blocks > units) continue;
        for (int64_t m : {1, 8, 16, 32}) {
          CAPTURE(per_tile);
          CAPTURE(tiles);
          CAPTURE(blocks);
          CAPTURE(m);
          const int64_t n = tiles * gemv::kTileChannels;
          const int64_t bound = gemv::run_slot_others(units, blocks, per_tile, n, m);
          if (bound == 0) {
            ++refused;
            continue;
          }
          ++walked;
          const int64_t reads = (gemv::kTileChannels * m + gemv::kBlockThreads - 1) / gemv::kBlockThreads;
          CHECK(reads * bound <= 2 * gemv::kSlotLoads);
          CHECK(bound * n * m <= gemv::sum_floats(n, m));
          std::vector<int> writers(static_cast<size_t>(tiles), 0);
          std::vector<int64_t> others(static_cast<size_t>(tiles), -1);
          std::vector<std::vector<int64_t>> stored(static_cast<size_t>(tiles));
          for (int64_t v = 0; v < blocks; ++v) {
            const int64_t lo = gemv::run_first(v, blocks, units), hi = gemv::run_first(v + 1, blocks, units);
            for (int64_t u = lo; u < hi; ++u) CHECK(gemv::run_holder(u, blocks, units) == v);
            for (int64_t t = lo / per_tile; t * per_tile < hi; ++t) {
              const int64_t t_lo = t * per_tile, t_hi = t_lo + per_tile;
              const int64_t begin = std::max(lo, t_lo), end = std::min(hi, t_hi);
              const auto i = static_cast<size_t>(t);
              if (begin == t_lo && end == t_hi) {
                ++writers[i];
              } else if (begin == t_lo) {
                ++writers[i];
                CHECK(end == hi);  // the settler's part ends its run
                others[i] = gemv::run_holder(t_hi - 1, blocks, units) - v;
                CHECK(others[i] >= 1);
                CHECK(others[i] <= bound);
              } else {
                const int64_t settler = gemv::run_holder(t_lo, blocks, units);
                CHECK(settler < v);
                CHECK(begin == lo);  // a stored part starts its run
                stored[i].push_back(v - settler - 1);
              }
            }
          }
          for (int64_t t = 0; t < tiles; ++t) {
            const auto i = static_cast<size_t>(t);
            CHECK(writers[i] == 1);
            std::vector<int64_t> slots = stored[i];
            std::sort(slots.begin(), slots.end());
            std::vector<int64_t> expect;
            for (int64_t j = 0; j < std::max<int64_t>(others[i], 0); ++j) expect.push_back(j);
            CHECK(slots == expect);  // slots 0 .. others - 1, each stored once
          }
        }
      }
    }
  }
  CHECK(walked > 0);
  CHECK(refused > 0);
  // The shapes measured (132 multiprocessors). One token tile: 3 blocks a multiprocessor, as the
  // launcher holds it now (kOneTileBlocksPerSm), and 4, as it ran before.
  CHECK(gemv::run_slot_others(7168, 396, 16, 28672, 1) == 1);   // 28672x8192, M = 1
  CHECK(gemv::run_slot_others(7168, 396, 56, 8192, 1) == 4);    // 8192x28672, M = 1
  CHECK(gemv::run_slot_others(2048, 396, 16, 8192, 1) == 3);    // 8192x8192, M = 1
  CHECK(gemv::run_slot_others(7168, 528, 16, 28672, 1) == 2);   // 28672x8192, M = 1, 4 blocks
  CHECK(gemv::run_slot_others(7168, 528, 56, 8192, 1) == 5);    // 8192x28672, M = 1, 4 blocks
  CHECK(gemv::run_slot_others(3584, 264, 16, 28672, 32) == 2);  // 28672x8192, M = 32: 32 reads
  CHECK(gemv::run_slot_others(2048, 264, 16, 8192, 32) == 0);   // 8192x8192, M = 32: 48 reads
  CHECK(gemv::run_slot_others(7168, 528, 16, 28672, 64) == 0);  // 64 reads
  CHECK(gemv::run_slot_others(448, 448, 1, 28672, 1) == 0);     // a unit a tile: nothing to meet
  // The GPU workspace test's shapes at one token tile: settlers waiting for two, three and seven others.
  CHECK(gemv::run_slot_others(2048, 396, 8, 16384, 8) == 2);  // 16384x4096, M = 8
  CHECK(gemv::run_slot_others(3584, 396, 56, 4096, 1) == 7);  // 4096x28672, M = 1
  CHECK(gemv::run_slot_others(3584, 396, 56, 4096, 8) == 7);  // 4096x28672, M = 8: 28 reads
  CHECK(gemv::run_slot_others(2048, 396, 16, 8192, 8) == 3);  // 8192x8192, M = 8
}
