// The NF4 code book on the GPU, shared by the dequant and GEMV kernels.
#pragma once

#include "kernels/recipes/recipes.hpp"

namespace dql::cuda {

// The NF4 code book held one entry per lane (lanes 16..31 repeat 0..15): an entry is a shuffle
// away, with no divergent lookups. Every lane of the warp must take part in each fetch.
struct WarpCodeBook {
  static constexpr bool kTrace = false;
  uint32_t lane_entry;
  __device__ uint32_t nf4_entry(uint32_t code) const {
    return __shfl_sync(0xFFFFFFFFu, lane_entry, static_cast<int>(code));
  }
};

// Entry (lane % 16) of the NF4 code book, picked by selects on the lane's bits rather than by a
// switch (which would diverge sixteen ways at the start of every thread).
__device__ inline uint32_t lane_code_book_entry() {
  const uint32_t l = threadIdx.x & 15u;
  uint32_t e8[8], e4[4], e2[2];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    e8[i] = (l & 8u) ? recipes::nf4_code_bits(static_cast<uint32_t>(i + 8))
                     : recipes::nf4_code_bits(static_cast<uint32_t>(i));
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) e4[i] = (l & 4u) ? e8[i + 4] : e8[i];
#pragma unroll
  for (int i = 0; i < 2; ++i) e2[i] = (l & 2u) ? e4[i + 2] : e4[i];
  return (l & 1u) ? e2[1] : e2[0];
}

}  // namespace dql::cuda
