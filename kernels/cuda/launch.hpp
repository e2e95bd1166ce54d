// Thin launchers over the per-item CUDA kernels (the fast kernels are in fast.hpp). Arguments hold device
// pointers; each launcher checks the launch and, when `wait` is set, waits for the kernel, returning an empty
// string or what went wrong. Without `wait` the work is queued on the default stream (the benchmarks).
#pragma once

#include <string>

#include "kernels/quant/quant.hpp"
#include "kernels/recipes/recipes.hpp"

namespace dql::cuda {

std::string launch_quant(const quant::QuantArgs& a, bool wait = true);
std::string launch_pack(const quant::PackArgs& a, bool wait = true);
std::string launch_pack_params(const quant::PackArgs& a, int64_t groups, bool wait = true);
// Every destination register of the recipe's steps into values[0 .. *count).
std::string launch_trace(recipes::RecipeId id, uint32_t reg, uint32_t absmax, uint32_t* values, int* count);
// All 2^32 input registers against the integer reference (absmax 1.0 for NF4):
// counts[0] = mismatching registers, counts[1] = the smallest of them.
std::string launch_verify(recipes::RecipeId id, unsigned long long* counts);
// Empties the L2 of other data by reading `chunks` 16-byte chunks of a zeroed buffer: the
// lines left behind are clean, so no write-back of earlier results lands in the next timing.
// Queued, not waited for.
std::string launch_l2_flush(const void* buffer, size_t chunks, uint32_t* sink);
// Fills n words with (random bits & and_mask) | or_mask, the same for the same seed.
std::string launch_fill(uint32_t* p, size_t n, uint64_t seed, uint32_t and_mask, uint32_t or_mask);

}  // namespace dql::cuda
