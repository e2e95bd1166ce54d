// Whole matrices on the CPU twin: the FT index maps, permute round trips, quantization against
// references written here from the documented conventions, the AWQ format against its
// definition, NF4 at its thresholds, and the error paths.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "kernels/backend/backend.hpp"
#include "kernels/cuda/fast.hpp"
#include "kernels/layouts/ft.hpp"
#include "kernels/quant/files.hpp"
#include "kernels/recipes/reference.hpp"
#include "npy_file.hpp"
#include "support.hpp"

using namespace dql;
using dql::test::random_u32;
using quant::Layout;
using quant::Scheme;

namespace {

std::string temp_dir(const std::string& name) {
  const auto p = std::filesystem::temp_directory_path() / ("dql-test-" + name);
  std::filesystem::remove_all(p);
  return p.string();
}

double half_value(uint16_t h) { return static_cast<double>(dql::test::half_of_bits(h)); }
uint16_t half_bits_of(double v) {
  return static_cast<uint16_t>(dql::test::bits_of_half(static_cast<_Float16>(v)));
}

// Element (n, k) of the plain packed codes, signed.
int plain_code(const QuantizedMatrix& q, int64_t n, int64_t k) {
  return quant::plain_element(q.qwords.data(), quant::scheme_bits(q.spec.scheme), q.k, n, k);
}

}  // namespace

TEST_CASE("FT layout: the maps are inverse bijections and match the published orders") {
  for (int bits : {4, 8}) {
    const layouts::FtGeometry g{bits};
    const int64_t n = 8, k = 256;
    std::set<std::pair<int64_t, int>> seen;
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t c = 0; c < k; ++c) {
        const layouts::FtPlace p = layouts::ft_place(g, r, c, k);
        REQUIRE(p.word >= 0);
        REQUIRE(p.word < n * k / g.per_word());
        REQUIRE(seen.insert({p.word, p.slot}).second);
        const int j = layouts::ft_slot_element(g, p.slot);
        const layouts::FtSource s = layouts::ft_source(g, p.word, j, k);
        REQUIRE(s.n == r);
        REQUIRE(s.k == c);
      }
    }
    CHECK(seen.size() == static_cast<size_t>(n * k));
  }
  // int4: word w of a 32-row group holds k = 0 8 16 24 1 9 17 25 (+2w) in nibbles 0..7.
  const layouts::FtGeometry g4{4};
  const int expect4[4][8] = {{0, 8, 16, 24, 1, 9, 17, 25},
                             {2, 10, 18, 26, 3, 11, 19, 27},
                             {4, 12, 20, 28, 5, 13, 21, 29},
                             {6, 14, 22, 30, 7, 15, 23, 31}};
  for (int w = 0; w < 4; ++w) {
    for (int d = 0; d < 8; ++d) {
      const auto s = layouts::ft_source(g4, w, layouts::ft_slot_element(g4, d), 128);
      CHECK(s.n == 0);
      CHECK(s.k == expect4[w][d]);
    }
  }
  // int8: word w of a 16-row group holds k = 0 8 1 9 (+2w) in bytes 0..3.
  const layouts::FtGeometry g8{8};
  const int expect8[4][4] = {{0, 8, 1, 9}, {2, 10, 3, 11}, {4, 12, 5, 13}, {6, 14, 7, 15}};
  for (int w = 0; w < 4; ++w) {
    for (int d = 0; d < 4; ++d)
      CHECK(layouts::ft_source(g8, w, layouts::ft_slot_element(g8, d), 128).k == expect8[w][d]);
  }
  // Column interleave: int4 words 8..15 are column 1's first 64 rows; int8 words 16..31 column 1's.
  CHECK(layouts::ft_source(g4, 8, 0, 128).n == 1);
  CHECK(layouts::ft_source(g4, 32, 0, 128).n == 0);  // after 4 columns x 8 words: column 0, rows 64..
  CHECK(layouts::ft_source(g4, 32, 0, 128).k == 64);
  CHECK(layouts::ft_source(g8, 16, 0, 128).n == 1);
}

TEST_CASE("permute: forward then inverse is the identity, and the bias is +8 / +128") {
  auto cpu = make_cpu_backend();
  for (int bits : {4, 8}) {
    const int64_t n = 12, k = 192;
    std::vector<uint32_t> words(static_cast<size_t>(n * k * bits / 32));
    for (auto& w : words) w = random_u32();
    const auto ft = cpu->permute(bits, n, k, words, true);
    CHECK(ft != words);
    CHECK(cpu->permute(bits, n, k, ft, false) == words);
    // Element (0, 0) sits in slot 0 of word 0, biased.
    const int32_t e00 = quant::plain_element(words.data(), bits, k, 0, 0);
    CHECK(static_cast<int32_t>(ft[0] & ((1u << bits) - 1u)) == e00 + (1 << (bits - 1)));
  }
  CHECK_THROWS_WITH_AS(cpu->permute(4, 6, 128, std::vector<uint32_t>(96), true),
                       doctest::Contains("multiple of 4"), Error);
  CHECK_THROWS_WITH_AS(cpu->permute(8, 2, 96, std::vector<uint32_t>(48), true),
                       doctest::Contains("multiple of 64"), Error);
}

TEST_CASE("symmetric int8 / int4: codes, scales and dequantized values follow the documented convention") {
  auto cpu = make_cpu_backend();
  const Tensor w = random_matrix(Distribution::Outliers, 7, 16, 256);
  const float* x = w.as<float>();
  for (Scheme scheme : {Scheme::Int8Sym, Scheme::Int4Sym}) {
    for (int group : {32, 64, 128, 256}) {
      CAPTURE(scheme_name(scheme));
      CAPTURE(group);
      const QuantizedMatrix q = cpu->quantize(w, QuantSpec{scheme, Layout::Plain, group});
      const double qmax = scheme == Scheme::Int8Sym ? 127 : 7;
      const auto out = cpu->dequantize(q, recipes_for(q.spec).front());
      const auto naive = cpu->dequantize(q, recipes_for(q.spec).back());
      CHECK(out == naive);  // the fast path and the baseline agree bit for bit
      for (int64_t n = 0; n < 16; ++n) {
        for (int64_t g = 0; g < 256 / group; ++g) {
          float amax = 0;
          for (int i = 0; i < group; ++i) amax = std::max(amax, std::fabs(x[n * 256 + g * group + i]));
          const uint16_t sbits = half_bits_of(static_cast<double>(amax / static_cast<float>(qmax)));
          REQUIRE(q.scales[static_cast<size_t>(n * (256 / group) + g)] == sbits);
          const double s = half_value(sbits);
          for (int i = 0; i < group; ++i) {
            const int64_t k = g * group + i;
            const double code = std::nearbyint(static_cast<double>(x[n * 256 + k] / static_cast<float>(s)));
            REQUIRE(plain_code(q, n, k) == static_cast<int>(std::clamp(code, -qmax - 1, qmax)));
            // fp16 result = the exact product q * s rounded once
            REQUIRE(out[static_cast<size_t>(n * 256 + k)] == half_bits_of(plain_code(q, n, k) * s));
          }
        }
      }
    }
  }
}

TEST_CASE("symmetric codes without a division per value agree with sym_code at every scale") {
  // quant::SymCoder (the kernels' way) against quant::sym_code (the definition): every positive
  // fp16 scale, values within a few ulps of each half-integer boundary times the scale (where the
  // estimate may round the other way: it must say it is unsure), values at the edge of the unsure
  // band (where it must already be right), and random values up to the scale's range.
  int64_t sure = 0, checked = 0;
  for (float qmax : {127.0f, 7.0f}) {
    for (uint32_t h = 1; h < 0x7C00; ++h) {
      const float s = quant::half_to_f32(h);
      const quant::SymCoder coder(s, qmax);
      REQUIRE(coder.live);
      const auto check = [&](float w) {
        bool unsure = false;
        const int quick = coder.quick(w, unsure);
        ++checked;
        if (!unsure) {
          ++sure;
          if (quick != quant::sym_code(w, s, qmax)) {
            CAPTURE(h);
            CAPTURE(w);
            CAPTURE(qmax);
            REQUIRE(quick == quant::sym_code(w, s, qmax));
          }
        }
      };
      const int top = static_cast<int>(qmax) + 2;
      for (int m = -top; m <= top; ++m) {
        for (double off : {0.0, 1.0 / 4096, -1.0 / 4096}) {
          const float w0 = static_cast<float>((m + 0.5 + off) * static_cast<double>(s));
          float up = w0, down = w0;
          check(w0);
          for (int u = 0; u < 3; ++u) {
            up = std::nextafter(up, 1e30f);
            down = std::nextafter(down, -1e30f);
            check(up);
            check(down);
          }
        }
      }
      for (int r = 0; r < 8; ++r) {
        const double unit = static_cast<double>(random_u32()) / 4294967296.0 * 2.0 - 1.0;  // [-1, 1)
        check(static_cast<float>(unit * (qmax + 1.0) * static_cast<double>(s)));
      }
    }
  }
  // The values near the boundaries are unsure by design; the random ones and about half of those
  // at the band's edge are sure, so the quick path answered a good share of these checks.
  CHECK(sure > checked / 5);
  // A batch with an unsure value takes every code from sym_code; a scale of 0 codes nothing.
  const float s = quant::half_to_f32(0x2E66);
  const float batch[4] = {static_cast<float>(2.5 * static_cast<double>(s)), 0.3f, -1.0f, 0.05f};
  int codes[4];
  quant::sym_codes(quant::SymCoder(s, 127.0f), batch, codes);
  for (int i = 0; i < 4; ++i) CHECK(codes[i] == quant::sym_code(batch[i], s, 127.0f));
  quant::sym_codes(quant::SymCoder(0.0f, 127.0f), batch, codes);
  for (int i = 0; i < 4; ++i) CHECK(codes[i] == 0);
}

TEST_CASE("quant -> permute -> dequant equals quant -> dequant in the plain layout") {
  auto cpu = make_cpu_backend();
  const Tensor w = random_matrix(Distribution::Normal, 3, 32, 512);
  for (Scheme scheme : {Scheme::Int8Sym, Scheme::Int4Sym}) {
    for (int group : {64, 128, 512}) {
      const QuantizedMatrix plain = cpu->quantize(w, QuantSpec{scheme, Layout::Plain, group});
      const QuantizedMatrix ft = cpu->quantize(w, QuantSpec{scheme, Layout::Ft, group});
      CHECK(cpu->permute(quant::scheme_bits(scheme), 32, 512, plain.qwords, true) == ft.qwords);
      const auto a = cpu->dequantize(plain, recipes_for(plain.spec).front());
      const auto b = cpu->dequantize(ft, recipes_for(ft.spec).front());
      CHECK(a == b);
      // The bf16 path: the same codes and scales, rounded once to bf16.
      const auto c = cpu->dequantize(ft, recipes_for(ft.spec).back());
      for (int64_t n = 0; n < 32; ++n) {
        for (int64_t k = 0; k < 512; k += 5) {
          const double s = half_value(plain.scales[static_cast<size_t>(n * (512 / group) + k / group)]);
          const float prod = static_cast<float>(plain_code(plain, n, k) * s);  // exact: <= 19 bits
          uint32_t u;
          std::memcpy(&u, &prod, 4);
          const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;  // round to nearest even
          REQUIRE(c[static_cast<size_t>(n * 512 + k)] == rounded);
        }
      }
    }
  }
}

TEST_CASE("int4-asym in the AWQ format: the packing, zeros and scales as AWQ defines them") {
  auto cpu = make_cpu_backend();
  const Tensor w = random_matrix(Distribution::Uniform, 11, 16, 256);
  const float* x = w.as<float>();
  const int group = 64;
  const QuantizedMatrix q = cpu->quantize(w, QuantSpec{Scheme::Int4Asym, Layout::Awq, group});
  REQUIRE(q.qwords.size() == 256 * 2);
  REQUIRE(q.scales.size() == 4 * 16);
  REQUIRE(q.qzeros.size() == 4 * 2);
  const int order[8] = {0, 2, 4, 6, 1, 3, 5, 7};  // nibble p holds column 8c + order[p]
  const auto out = cpu->dequantize(q, recipes::RecipeId::AwqInt4F16);
  for (int64_t n = 0; n < 16; ++n) {
    for (int64_t g = 0; g < 4; ++g) {
      float mx = -1e30f, mn = 1e30f;
      for (int i = 0; i < group; ++i) {
        mx = std::max(mx, x[n * 256 + g * group + i]);
        mn = std::min(mn, x[n * 256 + g * group + i]);
      }
      const uint16_t sbits = half_bits_of(static_cast<double>(std::max(mx - mn, 1e-5f) / 15.0f));
      REQUIRE(q.scales[static_cast<size_t>(g * 16 + n)] == sbits);  // scales are [K / G, N]
      const float s = static_cast<float>(half_value(sbits));
      const int z = static_cast<int>(std::clamp(-std::nearbyint(mn / s), 0.0f, 15.0f));
      const int c = static_cast<int>(n / 8);
      int p = 0;
      while (order[p] != n % 8) ++p;
      REQUIRE(static_cast<int>((q.qzeros[static_cast<size_t>(g * 2 + c)] >> (4 * p)) & 0xF) == z);
      for (int i = 0; i < group; ++i) {
        const int64_t k = g * group + i;
        const int code = static_cast<int>(std::clamp(std::nearbyint(x[n * 256 + k] / s) + z, 0.0f, 15.0f));
        REQUIRE(static_cast<int>((q.qwords[static_cast<size_t>(k * 2 + c)] >> (4 * p)) & 0xF) == code);
        REQUIRE(out[static_cast<size_t>(n * 256 + k)] == half_bits_of((code - z) * static_cast<double>(s)));
      }
    }
  }
}

TEST_CASE("AWQ: the zero point folded into the magic numbers gives the recipe's q - z, bit for bit") {
  const int order[8] = {0, 2, 4, 6, 1, 3, 5, 7};  // nibble p holds channel order[p]
  // The recipe's values, then 4 subtractions of the zero points: what the folded form replaces.
  const auto two_step = [](uint32_t word, uint32_t zero_word, uint32_t* out) {
    const uint32_t in[2] = {word, 0u}, zin[2] = {zero_word, 0u};
    uint32_t q[4], z[4];
    recipes::run_plain(recipes::RecipeId::AwqInt4F16, in, q);
    recipes::run_plain(recipes::RecipeId::AwqInt4F16, zin, z);
    for (int j = 0; j < 4; ++j) out[j] = bits::sub_f16x2(q[j], z[j]);
  };
  // Every (q, z) pair in every nibble: nibble p of the word holds q, of the zero word z, and the
  // other nibbles differ, so that a constant taken from the wrong nibble would show.
  for (int p = 0; p < 8; ++p) {
    for (uint32_t q = 0; q < 16; ++q) {
      for (uint32_t z = 0; z < 16; ++z) {
        const uint32_t word = (0x9E3779B9u & ~(0xFu << (4 * p))) | (q << (4 * p));
        const uint32_t zero_word = (0x7F4A7C15u & ~(0xFu << (4 * p))) | (z << (4 * p));
        uint32_t got[4], want[4];
        quant::awq_word_less_zero(word, quant::awq_zero_fold(zero_word), got);
        two_step(word, zero_word, want);
        const int ch = order[p];
        const uint32_t half = (ch % 2) ? bits::hi16(got[ch / 2]) : bits::lo16(got[ch / 2]);
        INFO("nibble ", p, " q ", q, " z ", z);
        REQUIRE(half == half_bits_of(static_cast<double>(static_cast<int>(q) - static_cast<int>(z))));
        for (int j = 0; j < 4; ++j) REQUIRE(got[j] == want[j]);
      }
    }
  }
  // q == z gives +0 (0x0000), never -0 (0x8000), in both forms.
  uint32_t zeros[4], zeros_two_step[4];
  quant::awq_word_less_zero(0x12345678u, quant::awq_zero_fold(0x12345678u), zeros);
  two_step(0x12345678u, 0x12345678u, zeros_two_step);
  for (int j = 0; j < 4; ++j) {
    CHECK(zeros[j] == 0u);
    CHECK(zeros_two_step[j] == 0u);
  }
  // Random words and zero words.
  for (int i = 0; i < 200000; ++i) {
    const uint32_t word = random_u32(), zero_word = random_u32();
    uint32_t got[4], want[4];
    quant::awq_word_less_zero(word, quant::awq_zero_fold(zero_word), got);
    two_step(word, zero_word, want);
    for (int j = 0; j < 4; ++j) REQUIRE(got[j] == want[j]);
  }
}

TEST_CASE("NF4: codes by strict thresholds, first element in the high nibble, value = code * absmax") {
  auto cpu = make_cpu_backend();
  // One block per row of 32; each row's largest value is 1.0, so x = w exactly.
  Tensor w = make_tensor(DType::F32, {2, 32});
  float* x = w.as<float>();
  x[0] = 1.0f;
  for (int c = 0; c < 15; ++c) {
    x[1 + c] = quant::nf4_threshold(c);                         // equal: the lower code, c
    x[16 + c] = std::nextafter(quant::nf4_threshold(c), 2.0f);  // just above: c + 1
  }
  x[31] = -1.0f;
  for (int i = 32; i < 64; ++i) x[i] = 0.0f;  // an all-zero block: code 7 (exact zero), absmax 0
  const QuantizedMatrix q = cpu->quantize(w, QuantSpec{Scheme::Nf4, Layout::Plain, 32});
  const auto code = [&](int64_t n, int64_t k) {
    const uint32_t byte =
        (q.qwords[static_cast<size_t>((n * 32 + k) / 8)] >> (8 * (((n * 32 + k) % 8) / 2))) & 0xFFu;
    return static_cast<int>(k % 2 == 0 ? byte >> 4 : byte & 0xF);
  };
  CHECK(code(0, 0) == 15);
  CHECK(code(0, 31) == 0);
  for (int c = 0; c < 15; ++c) {
    CAPTURE(c);
    CHECK(code(0, 1 + c) == c);
    CHECK(code(0, 16 + c) == c + 1);
  }
  for (int k = 0; k < 32; ++k) CHECK(code(1, k) == 7);
  // The search finds what counting the boundaries below x finds, for every value near each boundary.
  const auto counted = [](float v) {
    int c = 0;
    for (int t = 0; t < 15; ++t) c += v > quant::nf4_threshold(t) ? 1 : 0;
    return c;
  };
  for (int t = 0; t < 15; ++t) {
    float v = quant::nf4_threshold(t);
    for (int i = 0; i < 4; ++i) v = std::nextafter(v, -2.0f);
    for (int i = 0; i < 9; ++i, v = std::nextafter(v, 2.0f)) REQUIRE(quant::nf4_code(v) == counted(v));
  }
  for (int i = 0; i < 200000; ++i) {
    const float v = static_cast<float>(static_cast<int32_t>(random_u32())) / 1.5e9f;
    REQUIRE(quant::nf4_code(v) == counted(v));
  }
  CHECK(quant::nf4_code(NAN) == 0);
  // The GPU's one-lookup form gives the search's code for every float in [-2, 2] from 2^-10 up
  // (where all boundaries and bin edges lie), for a sample of every other bit pattern, and for
  // the special values.
  quant::Nf4Bin bins[quant::kNf4Bins];
  for (int b = 0; b < quant::kNf4Bins; ++b) bins[b] = quant::nf4_bin(b);
  int64_t mismatches = 0;
  const auto binned = [&](float v) { return quant::nf4_code_binned(v, bins[quant::nf4_bin_of(v)]); };
  for (uint32_t u = 0x3A800000u; u <= 0x40000000u; ++u) {
    const float v = quant::f32_of(u);
    mismatches += binned(v) != quant::nf4_code(v);
    mismatches += binned(-v) != quant::nf4_code(-v);
  }
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 4099) {
    const float v = quant::f32_of(static_cast<uint32_t>(u));
    mismatches += binned(v) != quant::nf4_code(v);
  }
  CHECK(mismatches == 0);
  for (const float v : {0.0f, -0.0f, 1e-45f, -1e-45f, 1.0f, -1.0f, 3e38f, -3e38f, INFINITY, -INFINITY, NAN}) {
    CAPTURE(v);
    CHECK(binned(v) == quant::nf4_code(v));
  }
  // Every boundary is the one inside some bin, and the counts below rise with the bins, by at
  // most the one boundary a widened bin holds.
  for (int c = 0; c < 15; ++c) {
    CAPTURE(c);
    int found = 0;
    for (const auto& b : bins) found += b.boundary == quant::nf4_threshold(c) ? 1 : 0;
    CHECK(found >= 1);
  }
  for (int b = 1; b < quant::kNf4Bins; ++b) {
    CAPTURE(b);
    CHECK(bins[b].below >= bins[b - 1].below);
    CHECK(bins[b].below <= bins[b - 1].below + 1);
  }
  CHECK(bins[0].below == 0);
  CHECK(bins[quant::kNf4Bins - 1].below == 15);
  CHECK(q.absmax == std::vector<float>{1.0f, 0.0f});
  // Larger matrices: the value is fp16(fp32(code value * absmax)).
  const Tensor big = random_matrix(Distribution::Normal, 5, 8, 1024);
  for (int b : {32, 64, 256, 1024}) {
    const QuantizedMatrix qb = cpu->quantize(big, QuantSpec{Scheme::Nf4, Layout::Plain, b});
    const auto out = cpu->dequantize(qb, recipes::RecipeId::Nf4F16);
    for (int64_t i = 0; i < 8 * 1024; i += 3) {
      const uint32_t byte = (qb.qwords[static_cast<size_t>(i / 8)] >> (8 * ((i % 8) / 2))) & 0xFFu;
      const uint32_t c = i % 2 == 0 ? byte >> 4 : byte & 0xF;
      const float am = qb.absmax[static_cast<size_t>(i / b)];
      const float v = static_cast<float>(static_cast<double>(quant::f32_of(recipes::nf4_code_bits(c))) * am);
      REQUIRE(out[static_cast<size_t>(i)] == dql::test::bits_of_half(static_cast<_Float16>(v)));
    }
  }
}

TEST_CASE("files: save and load give back the same matrix in every format") {
  auto cpu = make_cpu_backend();
  const Tensor w = random_matrix(Distribution::Normal, 1, 16, 256);
  const QuantSpec specs[] = {{Scheme::Int8Sym, Layout::Plain, 256}, {Scheme::Int8Sym, Layout::Ft, 64},
                             {Scheme::Int4Sym, Layout::Plain, 32},  {Scheme::Int4Sym, Layout::Ft, 128},
                             {Scheme::Int4Asym, Layout::Awq, 128},  {Scheme::Nf4, Layout::Plain, 64}};
  for (const QuantSpec& s : specs) {
    CAPTURE(scheme_name(s.scheme));
    CAPTURE(layout_name(s.layout));
    const QuantizedMatrix q = cpu->quantize(w, s);
    const std::string dir = temp_dir("files");
    save_quantized(dir, q);
    QuantSpec partial = s;
    partial.group = 0;
    const QuantizedMatrix back = load_quantized(dir, partial);
    CHECK(back.n == 16);
    CHECK(back.k == 256);
    CHECK(back.spec.group == s.group);
    CHECK(back.qwords == q.qwords);
    CHECK(back.scales == q.scales);
    CHECK(back.qzeros == q.qzeros);
    CHECK(back.absmax == q.absmax);
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      CHECK(e.path().filename().string().find("partial") == std::string::npos);
    }
  }
}

TEST_CASE("npy and safetensors: round trips and clear refusals") {
  const std::string dir = temp_dir("npy");
  std::filesystem::create_directories(dir);
  Tensor t = make_tensor(DType::F16, {3, 5});
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = static_cast<uint8_t>(i * 7);
  write_npy(dir + "/a.npy", t);
  const Tensor r = read_npy(dir + "/a.npy");
  CHECK(r.dtype == DType::F16);
  CHECK(r.shape == std::vector<int64_t>{3, 5});
  CHECK(r.data == t.data);
  {
    std::ofstream f(dir + "/bad.npy", std::ios::binary);
    f << "hello";
  }
  CHECK_THROWS_WITH_AS(read_npy(dir + "/bad.npy"), doctest::Contains("not a .npy file"), Error);
  CHECK_THROWS_WITH_AS(read_npy(dir + "/missing.npy"), doctest::Contains("cannot open"), Error);
  {
    std::ifstream in(dir + "/a.npy", std::ios::binary);
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream f(dir + "/short.npy", std::ios::binary);
    f << all.substr(0, all.size() - 4);
  }
  CHECK_THROWS_WITH_AS(read_npy(dir + "/short.npy"), doctest::Contains("should hold 30 bytes"), Error);
  // A folder where a file is asked for, and shapes past what any memory holds (their byte counts would
  // wrap 64 bits, and a wrapped count could match the data there is).
  std::filesystem::create_directories(dir + "/sub.npy");
  CHECK_THROWS_WITH_AS(read_npy(dir + "/sub.npy"), doctest::Contains("is a folder"), Error);
  const auto npy_with_shape = [&](const std::string& name, const std::string& shape) {
    dql::test::write_npy_text(dir + "/" + name, "<f4", shape, nullptr, 0);
    return dir + "/" + name;
  };
  CHECK_THROWS_WITH_AS(read_npy(npy_with_shape("d.npy", "(99999999999999999999, 8)")),
                       doctest::Contains("past 2^63"), Error);
  // 2^32 x 2^30 float32: 2^64 bytes, which wraps to 0, the data this file holds.
  CHECK_THROWS_WITH_AS(read_npy(npy_with_shape("w.npy", "(4294967296, 1073741824)")),
                       doctest::Contains("more bytes than any memory holds"), Error);
  CHECK_THROWS_WITH_AS(make_tensor(DType::F32, {int64_t{1} << 32, int64_t{1} << 32}),
                       doctest::Contains("more bytes than any memory holds"), Error);
  CHECK_THROWS_WITH_AS(make_tensor(DType::F32, {4, -2}), doctest::Contains("negative dimension"), Error);
  CHECK(checked_bytes({3, 5}, 2, "t") == 30);
  CHECK(checked_bytes({0, int64_t{1} << 62}, 8, "t") == 0);
  // Writing onto a folder names the reason (not the clean-up's "Success").
  try {
    write_npy_atomic(dir + "/sub.npy", t);
    FAIL("write_npy_atomic wrote onto a folder");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("Success") == std::string::npos);
    CHECK(std::string(e.what()).find("cannot write") != std::string::npos);
  }

  // A small safetensors file: header length, JSON header, data.
  const std::string header =
      R"({"w":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,8]},"__metadata__":{"a":"b"}})";
  {
    std::ofstream f(dir + "/m.safetensors", std::ios::binary);
    uint64_t len = header.size();
    f.write(reinterpret_cast<const char*>(&len), 8);
    f << header;
    const uint16_t vals[4] = {0x3F80, 0xC000, 0x0000, 0x4040};  // 1, -2, 0, 3
    f.write(reinterpret_cast<const char*>(vals), 8);
  }
  const Tensor s = read_safetensors(dir + "/m.safetensors", "w");
  const Tensor m = to_f32_matrix(s, "w");
  CHECK(m.as<float>()[0] == 1.0f);
  CHECK(m.as<float>()[1] == -2.0f);
  CHECK(m.as<float>()[3] == 3.0f);
  CHECK(safetensors_names(dir + "/m.safetensors") == std::vector<std::string>{"w"});
  CHECK_THROWS_WITH_AS(read_safetensors(dir + "/m.safetensors", "v"),
                       doctest::Contains("no tensor named 'v'; it has w"), Error);
  CHECK_THROWS_WITH_AS(read_safetensors(dir + "/a.npy", "w"), doctest::Contains("not a .safetensors file"),
                       Error);
  // Entries of the wrong JSON types, and a shape whose byte count wraps, are broken entries.
  const auto safetensors_with = [&](const std::string& name, const std::string& json) {
    std::ofstream f(dir + "/" + name, std::ios::binary);
    const uint64_t len = json.size();
    f.write(reinterpret_cast<const char*>(&len), 8);
    f << json;
    return dir + "/" + name;
  };
  for (const char* json : {R"({"w":5})", R"({"w":{"dtype":5,"shape":[2,2],"data_offsets":[0,8]}})",
                           R"({"w":{"dtype":"F32","shape":[4294967296,1073741824],"data_offsets":[0,0]}})",
                           R"({"w":{"dtype":"F32","shape":"2x2","data_offsets":[0,16]}})"}) {
    CAPTURE(json);
    CHECK_THROWS_WITH_AS(read_safetensors(safetensors_with("b.safetensors", json), "w"),
                         doctest::Contains("has a broken entry"), Error);
  }
  Tensor v = make_tensor(DType::F32, {4});
  CHECK_THROWS_WITH_AS(to_f32_matrix(v, "v"), doctest::Contains("must be 2-D"), Error);
  Tensor nan = make_tensor(DType::F32, {1, 2});
  nan.as<float>()[1] = NAN;
  CHECK_THROWS_WITH_AS(to_f32_matrix(nan, "w"), doctest::Contains("non-finite value at element 1"), Error);
}

TEST_CASE("shapes and formats that cannot work are refused with what is accepted") {
  const auto refuse = [](QuantSpec s, int64_t n, int64_t k) {
    try {
      check_quant_shape(s, n, k);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(refuse({Scheme::Int4Sym, Layout::Plain, 128}, 8, 200).find("does not divide by the group size 128") !=
        std::string::npos);
  CHECK(refuse({Scheme::Int4Sym, Layout::Plain, 48}, 8, 96).find("use 32, 64, 128") != std::string::npos);
  CHECK(refuse({Scheme::Nf4, Layout::Plain, 48}, 8, 96).find("power of two from 32 to 4096") !=
        std::string::npos);
  CHECK(refuse({Scheme::Nf4, Layout::Plain, 64}, 8, 96).find("multiple of it") != std::string::npos);
  CHECK(refuse({Scheme::Int4Sym, Layout::Awq, 128}, 8, 256).find("int4-asym") != std::string::npos);
  CHECK(refuse({Scheme::Int4Asym, Layout::Awq, 128}, 12, 256).find("multiple of 8") != std::string::npos);
  CHECK(refuse({Scheme::Int4Asym, Layout::Plain, 128}, 8, 256).find("--layout awq") != std::string::npos);
  CHECK(refuse({Scheme::Int8Sym, Layout::Ft, 32}, 8, 96).find("multiple of 64") != std::string::npos);
  CHECK(refuse({Scheme::Int4Sym, Layout::Plain, 128}, 8, 256) == "accepted");

  auto cpu = make_cpu_backend();
  Tensor huge = make_tensor(DType::F32, {1, 32});
  huge.as<float>()[3] = 1e8f;
  CHECK_THROWS_WITH_AS(cpu->quantize(huge, QuantSpec{Scheme::Int8Sym, Layout::Plain, 32}),
                       doctest::Contains("too large for an fp16 scale"), Error);
  const QuantizedMatrix q =
      cpu->quantize(random_matrix(Distribution::Normal, 2, 8, 64), {Scheme::Int8Sym, Layout::Plain, 64});
  CHECK_THROWS_WITH_AS(cpu->dequantize(q, recipes::RecipeId::AwqInt4F16),
                       doctest::Contains("the recipes that do are cutlass-int8-fp16, naive-int8-fp16"),
                       Error);
  const std::string dir = temp_dir("mismatch");
  save_quantized(dir, q);
  CHECK_THROWS_WITH_AS(load_quantized(dir, QuantSpec{Scheme::Int4Sym, Layout::Plain, 0}),
                       doctest::Contains("but this format stores uint8 [N, K / 2]"), Error);
  CHECK_THROWS_WITH_AS(load_quantized(dir, QuantSpec{Scheme::Int8Sym, Layout::Plain, 32}),
                       doctest::Contains("hold groups of 64"), Error);
}

TEST_CASE("the device-side reference and the spec accessors agree with the catalogue") {
  for (const auto& info : recipes::all_recipes()) {
    const recipes::RecipeSpec& s = *info.spec;
    CAPTURE(s.name);
    CHECK(recipes::recipe_elems(s.id) == s.elems);
    CHECK(recipes::recipe_bits(s.id) == s.bits);
    CHECK(recipes::recipe_out(s.id) == s.out);
    CHECK(recipes::recipe_encoding(s.id) == s.encoding);
    for (int e = 0; e < s.elems; ++e) CHECK(s.order[recipes::recipe_slot_of(s.id, e)] == e);
    for (int i = 0; i < 20000; ++i) {
      recipes::Inputs in;
      in.reg = random_u32();
      in.absmax = 0x3F800000u;
      const auto want = recipes::reference_outputs(s, in);
      for (int e = 0; e < s.elems; ++e) {
        REQUIRE(recipes::reference_bits(s.id, in.reg, in.absmax, e) == want[static_cast<size_t>(e)].bits);
      }
    }
  }
}

TEST_CASE(
    "CPU backend: verify samples every recipe, traces match the catalogue, auto falls back with a notice") {
  auto cpu = make_cpu_backend();
  CHECK(cpu->info().backend == "cpu");
  for (const auto& info : recipes::all_recipes()) {
    const VerifyResult r = cpu->verify(info.spec->id);
    CHECK(r.mismatches == 0);
    CHECK(r.checked == (1u << 24));
    CHECK_FALSE(r.exhaustive);
  }
  const auto v = cpu->trace_values(recipes::RecipeId::AwqInt4F16, recipes::Inputs{0x76543210u});
  REQUIRE(v.size() == 10);
  CHECK(v[2] == 0x64046400u);
  std::string why;
  if (!make_cuda_backend(&why)) {
    std::string notice;
    auto b = make_backend("auto", &notice);
    CHECK(b->info().backend == "cpu");
    CHECK(notice.find("running on the CPU twin") != std::string::npos);
    CHECK_THROWS_WITH_AS(make_backend("cuda", nullptr), doctest::Contains("--backend cpu"), Error);
  }
  CHECK_THROWS_WITH_AS(make_backend("tpu", nullptr), doctest::Contains("use auto, cuda or cpu"), Error);
}

TEST_CASE("dequant launch: the plain-layout GPU kernels refuse a row past 2^32 values with a sentence") {
  // Addresses only: the launcher answers before it launches anything (the kernel counts a row's
  // values in 32 bits, so such a row would wrap onto its own start).
  alignas(256) static unsigned char buf[1024];
  quant::DequantArgs a{};
  a.scheme = Scheme::Int4Sym, a.layout = Layout::Plain, a.recipe = recipes::RecipeId::CutlassInt4F16;
  a.n = 1, a.k = (int64_t{1} << 32) + 8, a.group = 128;
  a.qwords = reinterpret_cast<const uint32_t*>(buf);
  a.scales = reinterpret_cast<const uint16_t*>(buf + 256);
  a.out = reinterpret_cast<uint16_t*>(buf + 512);
  const std::string e = cuda::fast_dequant(a);
  CHECK(e.find("K = 4294967304") != std::string::npos);
  CHECK(e.find("2^32") != std::string::npos);
  CHECK(e.find("--backend cpu") != std::string::npos);
}
