// GEMV / GEMM cases shared by the CPU suite and the GPU suite: a weight quantized into a format,
// X and a bias, and the float64 product with the same dequantized weight.
#pragma once

#include <vector>

#include "kernels/backend/backend.hpp"
#include "kernels/gemv/gemv_cpu.hpp"
#include "kernels/tensor/tensor.hpp"

namespace dql::test {

// The accuracy goal every GEMV path is held to: the relative L2 error against the float64 reference
// under 1e-3 for fp16 outputs, 1e-2 for bf16.
inline double accuracy_goal(recipes::OutType t) { return t == recipes::OutType::F16 ? 1e-3 : 1e-2; }

inline std::vector<uint16_t> random_act(uint64_t seed, int64_t m, int64_t k, recipes::OutType t) {
  const Tensor x = random_matrix(Distribution::Normal, seed, m, k);
  std::vector<uint16_t> v(static_cast<size_t>(m * k));
  for (size_t i = 0; i < v.size(); ++i) v[i] = gemv::f32_to_act(x.as<float>()[i], t);
  return v;
}

inline GemvRequest make_request(gemv::Path path, recipes::OutType t, int64_t m, int64_t n, int64_t k,
                                uint64_t seed, gemv::Epilogue epi = {}) {
  GemvRequest r;
  r.path = path;
  r.dtype = t;
  r.m = m;
  r.x = random_act(seed, m, k, t);
  r.bias = random_act(seed + 1, 1, n, t);
  for (auto& b : r.bias) b = gemv::f32_to_act(0.25f * gemv::act_to_f32(b, t), t);
  r.epi = epi;
  return r;
}

// The float64 product of X with the weight as the format's dequant kernel writes it, through the
// epilogue: the reference every path is held to.
inline std::vector<double> reference(Backend& b, const QuantizedMatrix& w, const GemvRequest& r) {
  const auto wd = b.dequantize(w, dequant_recipe_for(w.spec, r.dtype));
  std::vector<double> ref = gemv::product_f64(r.x.data(), r.m, wd.data(), w.n, w.k, r.dtype);
  for (int64_t i = 0; i < r.m; ++i) {
    for (int64_t j = 0; j < w.n; ++j) {
      const double bias = r.bias.empty() ? 0.0 : gemv::act_to_f32(r.bias[j], r.dtype);
      ref[i * w.n + j] = gemv::epilogue_f64(ref[i * w.n + j], bias, r.epi);
    }
  }
  return ref;
}

}  // namespace dql::test
