#include "host_steps.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "parallel.hpp"

namespace dql {

void check_scales(const QuantSpec& spec, const std::vector<uint16_t>& scales_nk, int64_t k) {
  const int64_t groups = k / spec.group;
  for (size_t i = 0; i < scales_nk.size(); ++i) {
    if ((scales_nk[i] & 0x7C00u) == 0x7C00u) {
      throw Error(
          fmt::format("row {}, group {} has weights too large for an fp16 scale (largest 65504): scale "
                      "the matrix down before quantizing",
                      static_cast<int64_t>(i) / groups, static_cast<int64_t>(i) % groups));
    }
  }
}

void check_recipe_reads(const QuantSpec& spec, recipes::RecipeId recipe) {
  const auto ok = recipes_for(spec);
  if (std::find(ok.begin(), ok.end(), recipe) != ok.end()) return;
  std::string names;
  for (auto r : ok) names += (names.empty() ? "" : ", ") + std::string(recipes::spec_of(r).name);
  throw Error(fmt::format("recipe {} does not read this format; the recipes that do are {}",
                          recipes::spec_of(recipe).name, names));
}

std::vector<uint32_t> random_words(size_t n, uint64_t seed, uint32_t and_mask, uint32_t or_mask) {
  std::vector<uint32_t> v(n);
  parallel_items(static_cast<int64_t>(n), [&](int64_t i) {
    uint64_t x = seed + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(i + 1);
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    v[static_cast<size_t>(i)] = (static_cast<uint32_t>(x) & and_mask) | or_mask;
  });
  return v;
}

QuantizedMatrix random_quantized(const QuantSpec& spec, int64_t n, int64_t k, uint64_t seed) {
  QuantizedMatrix q{spec, n, k, {}, {}, {}, {}};
  const size_t groups = group_count(spec, n, k);
  q.qwords = random_words(qword_count(spec, n, k), seed, ~0u, 0u);
  if (spec.scheme == quant::Scheme::Nf4) {
    const auto a = random_words(groups, seed + 1, 0x007FFFFFu, 0x3F800000u);  // [1, 2)
    q.absmax.resize(groups);
    std::memcpy(q.absmax.data(), a.data(), groups * 4);
  } else {
    const auto s = random_words((groups + 1) / 2, seed + 2, 0x07FF07FFu, 0x1C001C00u);  // 0.0039 .. 0.031
    q.scales.resize(groups);
    std::memcpy(q.scales.data(), s.data(), groups * 2);
  }
  if (spec.layout == quant::Layout::Awq) q.qzeros = random_words(groups / 8, seed + 3, ~0u, 0u);
  return q;
}

GemvRequest random_gemv_request(const BenchCase& c, uint64_t seed) {
  GemvRequest r;
  r.path = c.path;
  r.dtype = c.dtype;
  r.m = c.m;
  const bool f16 = c.dtype == recipes::OutType::F16;
  // fp16: sign, exponent 14 .. 15 -> magnitudes in [2^-1, 1) and [1, 2) halved by the mask; bf16 alike.
  const auto xs = random_words(static_cast<size_t>((c.m * c.k + 1) / 2), seed,
                               f16 ? 0x83FF83FFu : 0x807F807Fu, f16 ? 0x38003800u : 0x3F003F00u);
  r.x.resize(static_cast<size_t>(c.m * c.k));
  std::memcpy(r.x.data(), xs.data(), r.x.size() * 2);
  const auto bs = random_words(static_cast<size_t>((c.n + 1) / 2), seed + 1, f16 ? 0x83FF83FFu : 0x807F807Fu,
                               f16 ? 0x30003000u : 0x3E003E00u);
  r.bias.resize(static_cast<size_t>(c.n));
  std::memcpy(r.bias.data(), bs.data(), r.bias.size() * 2);
  return r;
}

gemv::Weights weights_of(const QuantizedMatrix& w) {
  return gemv::Weights{
      w.spec.scheme,   w.spec.layout,  w.n, w.k, w.spec.group, w.qwords.data(), w.scales.data(),
      w.qzeros.data(), w.absmax.data()};
}

size_t qword_count(const QuantSpec& spec, int64_t n, int64_t k) {
  return static_cast<size_t>(n * k * quant::scheme_bits(spec.scheme) / 32);
}
size_t group_count(const QuantSpec& spec, int64_t n, int64_t k) {
  return static_cast<size_t>(n * (k / spec.group));
}

}  // namespace dql
