// A device allocation that frees itself, for the GPU backend and the GPU test suite.
#pragma once

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <cstddef>
#include <vector>

#include "backend.hpp"

namespace dql {

inline void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(fmt::format("{} failed on the GPU: {}", what, cudaGetErrorString(e)));
}

template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n) : n_(n) {
    if (n) check_cuda(cudaMalloc(reinterpret_cast<void**>(&p_), n * sizeof(T)), "cudaMalloc");
  }
  DeviceArray(const std::vector<T>& host) : DeviceArray(host.data(), host.size()) {}
  DeviceArray(const T* host, size_t n) : DeviceArray(n) {
    if (n_) check_cuda(cudaMemcpy(p_, host, n_ * sizeof(T), cudaMemcpyHostToDevice), "copy to the GPU");
  }
  ~DeviceArray() {
    if (p_) cudaFree(p_);
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return p_; }
  std::vector<T> to_host() const {
    std::vector<T> h(n_);
    if (n_) check_cuda(cudaMemcpy(h.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost), "copy from the GPU");
    return h;
  }

 private:
  T* p_ = nullptr;
  size_t n_;
};

}  // namespace dql
