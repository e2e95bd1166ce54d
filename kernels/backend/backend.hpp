// One interface over the two ways of running the kernels: CudaBackend (the real kernels on a
// GPU) and CpuBackend (the bit-exact twins on every core). Both take and return host data;
// failures are dql::Error with a sentence the user can act on.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/bench/bench.hpp"
#include "kernels/gemv/gemv.hpp"
#include "kernels/quant/quant.hpp"
#include "kernels/recipes/catalog.hpp"
#include "kernels/tensor/tensor.hpp"

namespace dql {

struct DeviceInfo {
  std::string backend;  // "cuda" or "cpu"
  std::string name;     // GPU or CPU model
  int cc_major = 0, cc_minor = 0;
  int cc() const { return 10 * cc_major + cc_minor; }  // compute capability as one number: 90 for 9.0
  int sms = 0;              // streaming multiprocessors (GPU) or hardware threads (CPU)
  size_t memory_bytes = 0;  // total device memory
  size_t free_bytes = 0;    // free when asked
  size_t l2_bytes = 0;
  size_t block_shared_bytes = 0;            // shared memory a block may opt in to (GPU)
  int sm_clock_mhz = 0, mem_clock_mhz = 0;  // current clocks where the driver reports them
  int driver_version = 0, runtime_version = 0;
  std::string summary() const;  // one line for status bars and report headers
};

struct QuantSpec {
  quant::Scheme scheme = quant::Scheme::Int4Sym;
  quant::Layout layout = quant::Layout::Plain;
  int group = 128;  // G for int8 / int4 (K for per channel), the blocksize for NF4
};

// A quantized [N, K] matrix in one of the real formats (see README: formats).
struct QuantizedMatrix {
  QuantSpec spec;
  int64_t n = 0, k = 0;
  std::vector<uint32_t> qwords;  // packed weights, 32-bit words
  std::vector<uint16_t> scales;  // fp16; plain: [N, K / G], awq and ft: [K / G, N]
  std::vector<uint32_t> qzeros;  // awq: [K / G, N / 8]
  std::vector<float> absmax;     // nf4: [N, K / B]
};

// Y = X W^T with W the dequantized [N, K] weight of a QuantizedMatrix (see gemv/gemv.hpp).
struct GemvRequest {
  gemv::Path path = gemv::Path::Fast;
  recipes::OutType dtype = recipes::OutType::F16;  // of X, the bias and Y
  int64_t m = 1;                                   // rows of X (tokens); up to 256
  std::vector<uint16_t> x;                         // [M, K] fp16 / bf16 bits
  std::vector<uint16_t> bias;                      // [N] bits, or empty for none
  gemv::Epilogue epi;
};

struct VerifyResult {
  uint64_t checked = 0;
  uint64_t mismatches = 0;
  uint64_t first_mismatch = 0;  // the input register, when mismatches > 0
  bool exhaustive = false;      // every 2^32 register, or a sample
  double seconds = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const DeviceInfo& info() const = 0;

  virtual QuantizedMatrix quantize(const Tensor& w_f32, const QuantSpec& spec) = 0;
  // [N, K] fp16 or bf16 bits (the recipe's output type).
  virtual std::vector<uint16_t> dequantize(const QuantizedMatrix& q, recipes::RecipeId recipe) = 0;
  // Plain packed signed int4 / int8 words <-> the mixed-GEMM layout.
  virtual std::vector<uint32_t> permute(int bits, int64_t n, int64_t k, const std::vector<uint32_t>& words,
                                        bool forward) = 0;
  // The value of every step's destination register, in trace order.
  virtual std::vector<uint32_t> trace_values(recipes::RecipeId id, const recipes::Inputs& in) = 0;
  virtual VerifyResult verify(recipes::RecipeId id) = 0;
  // [M, N] fp16 / bf16 bits.
  virtual std::vector<uint16_t> gemv(const QuantizedMatrix& w, const GemvRequest& r) = 0;
  // A case ready to time: buffers allocated and filled with random data, `copies` sets of them for
  // cold back-to-back runs (BenchTarget::copies; the CPU twin makes one).
  virtual std::unique_ptr<BenchTarget> bench_target(const BenchCase& c, int copies) = 0;
};

std::unique_ptr<Backend> make_cpu_backend();
// Null when no GPU can be used; `why` then says what is missing.
std::unique_ptr<Backend> make_cuda_backend(std::string* why);

// "auto" picks the GPU when there is one and otherwise the CPU twin, with `notice` saying so;
// "cuda" fails with a sentence when no GPU can be used; "cpu" always works.
std::unique_ptr<Backend> make_backend(const std::string& choice, std::string* notice);

// Checks shared by both backends; throw dql::Error naming the problem and what is accepted.
void check_quant_shape(const QuantSpec& spec, int64_t n, int64_t k);
void check_permute_shape(int bits, int64_t n, int64_t k);
// Which weight formats each path reads, M from 1 to 256, X and bias sizes; the sentence says
// what would be accepted.
void check_gemv(const QuantizedMatrix& w, const GemvRequest& r);
// The recipe that dequantizes `w` to `dtype` for the cuBLAS baseline and the float64 check.
recipes::RecipeId dequant_recipe_for(const QuantSpec& spec, recipes::OutType dtype);

// The recipes that read a format, the first being the default.
std::vector<recipes::RecipeId> recipes_for(const QuantSpec& spec);

}  // namespace dql
