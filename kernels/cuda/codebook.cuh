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

// One NF4 word through the code book: the recipe's value (recipes::nf4_fp16, convert_word), code
// book entry times absmax in fp32, each pair rounded once to fp16, v[r] holding elements 2r and
// 2r + 1. The one difference is how a code reaches the shuffle: shfl reads only the low 5 bits of
// its lane index and lanes 16..31 repeat the book, so the word shifted to a code's nibble is the
// index as it stands, without the recipe's mask (7 instructions a word fewer).
__device__ inline void nf4_word(const WarpCodeBook& book, uint32_t word, uint32_t absmax_bits,
                                uint32_t (&v)[4]) {
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    // Byte r: element 2r in its high nibble, 2r + 1 in its low one.
    const uint32_t even = __shfl_sync(0xFFFFFFFFu, book.lane_entry, static_cast<int>(word >> (8 * r + 4)));
    const uint32_t odd = __shfl_sync(0xFFFFFFFFu, book.lane_entry, static_cast<int>(word >> (8 * r)));
    v[r] = bits::cvt_f16x2_f32(bits::mul_f32(odd, absmax_bits), bits::mul_f32(even, absmax_bits));
  }
}

}  // namespace dql::cuda
