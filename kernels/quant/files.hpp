// Quantized matrices as files: DIR/qweight.npy, DIR/scales.npy, DIR/zeros.npy (AWQ),
// DIR/absmax.npy (NF4), in the shapes and dtypes the real formats use (README: formats).
#pragma once

#include <string>
#include <vector>

#include "kernels/backend/backend.hpp"

namespace dql {

// Writes every file of `q` into `dir` (created if missing). Each file is written under a
// temporary name first and all are renamed only once every one is complete. qweight.npy is every
// format's, so the files an earlier format left there (scales, zeros or absmax that `q` lacks) are
// removed: a folder holds one matrix. Returns the names removed.
std::vector<std::string> save_quantized(const std::string& dir, const QuantizedMatrix& q);

// Reads a matrix saved by save_quantized. `spec` gives scheme and layout; its group is taken
// from the files (and must equal spec.group when that is nonzero).
QuantizedMatrix load_quantized(const std::string& dir, QuantSpec spec);

// The plain packed words of a signed int4 / int8 [N, K] array as stored in .npy (int8 [N, K]
// or uint8 [N, K / 2]), and the mixed-GEMM layout as uint8 [N / I, K * I * bits / 8].
struct PackedFile {
  int64_t n = 0, k = 0;
  std::vector<uint32_t> words;
};
PackedFile read_plain_packed(const std::string& path, int bits);
PackedFile read_ft_packed(const std::string& path, int bits);
Tensor plain_packed_tensor(int bits, int64_t n, int64_t k, const std::vector<uint32_t>& words);
Tensor ft_packed_tensor(int bits, int64_t n, int64_t k, const std::vector<uint32_t>& words);

const char* scheme_name(quant::Scheme s);
const char* layout_name(quant::Layout l);

}  // namespace dql
