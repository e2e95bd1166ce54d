// The warpgroup products' plumbing on compute capability 9.0a, shared by the Hopper GEMM (hopper.cu) and
// the experiments that feed wgmma (notes/experiments/wg16_gemv.cu): the shared-memory descriptor of a
// K-major operand with the 128-byte swizzle, and the fence, commit and wait around asynchronous products.
#pragma once

#include <cstdint>

namespace dql::cuda::io {

// Start address, leading byte offset (unused with this swizzle: 1), stride byte offset 1024 (8 rows of
// 128 bytes).
__device__ __forceinline__ uint64_t swizzled_desc(uint32_t addr) {
  return static_cast<uint64_t>((addr & 0x3FFFFu) >> 4) | (uint64_t{1} << 16) | (uint64_t{1024 >> 4} << 32) |
         (uint64_t{1} << 62);
}

__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wg_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

}  // namespace dql::cuda::io
