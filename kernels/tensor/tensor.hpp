// Host tensors and the files they come from: .npy (read and write) and .safetensors (read).
// Bad files are reported with a sentence naming the file and what was expected.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace dql {

// An error the user can act on: the message is the whole sentence.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class DType : uint8_t { F32, F16, BF16, F64, I32, U32, I8, U8 };

const char* dtype_name(DType t);
size_t dtype_size(DType t);

struct Tensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;  // little-endian, C order

  int64_t numel() const;
  template <class T>
  T* as() {
    return reinterpret_cast<T*>(data.data());
  }
  template <class T>
  const T* as() const {
    return reinterpret_cast<const T*>(data.data());
  }
  std::string shape_text() const;  // "4096x4096"
};

// The bytes of a tensor of `shape` with elements of `elem` bytes; Error (naming `what`) for a negative
// dimension or a count past 2^62.
int64_t checked_bytes(const std::vector<int64_t>& shape, size_t elem, const std::string& what);

// Error where the shape is refused by checked_bytes; std::bad_alloc where memory runs out.
Tensor make_tensor(DType t, std::vector<int64_t> shape);

Tensor read_npy(const std::string& path);
void write_npy(const std::string& path, const Tensor& t);
// Writes under a temporary name and renames it into place: a failure leaves nothing behind.
void write_npy_atomic(const std::string& path, const Tensor& t);

Tensor read_safetensors(const std::string& path, const std::string& name);
std::vector<std::string> safetensors_names(const std::string& path);

// A weight matrix as fp32 [N, K] from fp32 / fp16 / bf16 data (exact conversions).
Tensor to_f32_matrix(const Tensor& t, const std::string& what);

enum class Distribution : uint8_t { Normal, Uniform, Outliers };
// N x K fp32 values: normal(0, 0.02) like freshly initialised linear weights, uniform in
// [-0.05, 0.05), or normal with 0.1% of values twenty times larger. Same seed, same matrix.
Tensor random_matrix(Distribution d, uint64_t seed, int64_t n, int64_t k);

}  // namespace dql
