// Quantized matrices as files: DIR/qweight.npy, DIR/scales.npy, DIR/zeros.npy (AWQ),
// DIR/absmax.npy (NF4), in the shapes and dtypes the real formats use (README: formats), and
// DIR/format.json naming the format (the shapes alone can fit two: plain int4 [N, K / 2] with scales
// [N, K / G] and the mixed-GEMM layout's [N / 4, 2 K] with [K / G, N] wherever N G = 4 K).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/backend/backend.hpp"

namespace dql {

// Writes every file of `q` into `dir` (created if missing), format.json among them. Each file is written
// under a temporary name first and all are renamed only once every one is complete. qweight.npy is every
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
// The scheme or layout of a name as scheme_name / layout_name give it; nothing for another name.
std::optional<quant::Scheme> scheme_of_name(std::string_view name);
std::optional<quant::Layout> layout_of_name(std::string_view name);

// The scheme and layout that DIR/format.json names (group 0: the files give it), nothing where the folder
// has no format.json (files from elsewhere); an Error with a sentence where it is not one save_quantized
// writes.
std::optional<QuantSpec> read_format_file(const std::string& dir);

}  // namespace dql
