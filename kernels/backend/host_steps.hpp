// Host-side checks and result shaping shared by both backends.
#pragma once

#include "backend.hpp"
#include "kernels/gemv/gemv_cpu.hpp"

namespace dql {

// Throws when a group's scale does not fit fp16 (a weight beyond +-65504 * qmax).
void check_scales(const QuantSpec& spec, const std::vector<uint16_t>& scales_nk, int64_t k);
// Throws unless `recipe` reads the format `spec` describes.
void check_recipe_reads(const QuantSpec& spec, recipes::RecipeId recipe);
// Sizes of the arrays a quantized matrix holds.
size_t qword_count(const QuantSpec& spec, int64_t n, int64_t k);
size_t group_count(const QuantSpec& spec, int64_t n, int64_t k);

// Random data in a format, for benchmark cases: every packed word, scales of a realistic size
// (fp16 0.004 .. 0.03), zero points, absmax 1 .. 2.
QuantizedMatrix random_quantized(const QuantSpec& spec, int64_t n, int64_t k, uint64_t seed);
// The request of a GEMV / GEMM bench case: X random in [-1, 1], a bias, no activation.
GemvRequest random_gemv_request(const BenchCase& c, uint64_t seed);
// The kernels' view of a quantized matrix.
gemv::Weights weights_of(const QuantizedMatrix& w);
std::vector<uint32_t> random_words(size_t n, uint64_t seed, uint32_t and_mask, uint32_t or_mask);

}  // namespace dql
