// Shared macros for code that compiles for both the host and the device.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define DQL_HD __host__ __device__ __forceinline__
#else
#define DQL_HD inline
#endif

// The architecture of the device pass being compiled, 0 on the host pass. Device code uses the
// real PTX instruction where the architecture has it and the bit-exact emulation otherwise.
#if defined(__CUDA_ARCH__)
#define DQL_ARCH __CUDA_ARCH__
#else
#define DQL_ARCH 0
#endif

namespace dql::bits {

DQL_HD int leading_zeros64(uint64_t x) {
#if defined(__CUDA_ARCH__)
  return __clzll(static_cast<long long>(x));
#else
  return x == 0 ? 64 : __builtin_clzll(x);
#endif
}

}  // namespace dql::bits
