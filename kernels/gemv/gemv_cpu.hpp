// The CPU twin of the GEMV / GEMM kernels: the same word conversions, activation quantization
// and epilogue as the CUDA kernels (gemv.hpp), with the fp32 sums taken group by group in K
// order. Also the float64 product the accuracy checks compare both against.
#pragma once

#include <cstdint>
#include <vector>

#include "gemv.hpp"

namespace dql::gemv {

// A quantized [N, K] weight as the kernels read it (pointers into a QuantizedMatrix).
struct Weights {
  quant::Scheme scheme;
  quant::Layout layout;
  int64_t n, k;
  int group;
  const uint32_t* q;
  const uint16_t* scales;  // fp16; plain: [N, K / G], awq and ft: [K / G, N]
  const uint32_t* qzeros;  // awq
  const float* absmax;     // nf4
};

struct Problem {
  Path path = Path::Fast;
  recipes::OutType dtype = recipes::OutType::F16;
  int64_t m = 1;
  const uint16_t* x = nullptr;     // [M, K]
  const uint16_t* bias = nullptr;  // [N] or null
  Epilogue epi;
};

// The values a row block of the weight holds before its group scale: q for ft and plain int8,
// q - zero for AWQ, and for NF4 the finished weight (the recipe applies absmax). rows x K floats.
// `naive` decodes ft words through the per-element conversion instead of the recipe (the same values).
void decode_rows(const Weights& w, int64_t n0, int64_t rows, bool naive, recipes::OutType t, float* out);
// The scale of (row n, group g) as fp32 (1 for NF4).
float group_scale(const Weights& w, int64_t n, int64_t g);

// Y [M, N] bits. Path::Cublas takes `dequantized` ([N, K] bits in p.dtype, from the dequant
// kernel of the format) as the weight; the other paths read `w`.
std::vector<uint16_t> gemv_cpu(const Weights& w, const Problem& p, const std::vector<uint16_t>* dequantized);

// The float64 product of X and a dequantized weight ([N, K] bits in `t`), before the epilogue.
std::vector<double> product_f64(const uint16_t* x, int64_t m, const uint16_t* w_nk, int64_t n, int64_t k,
                                recipes::OutType t);

// ||y - ref|| / ||ref|| over all outputs (ref: the float64 product passed through the same
// epilogue in float64 terms), and the largest absolute difference: NaN both where any output or
// reference is NaN or Inf. Those outputs counted, and the ones among them where y is not what the
// reference is (a NaN for a NaN, the same infinity).
struct Accuracy {
  double rel_l2 = 0, max_abs = 0;
  int64_t nonfinite = 0, nonfinite_apart = 0;
};
Accuracy compare(const std::vector<uint16_t>& y, const std::vector<double>& ref, recipes::OutType t);
// The epilogue in float64 (for the reference).
double epilogue_f64(double acc, double bias, const Epilogue& e);

}  // namespace dql::gemv
