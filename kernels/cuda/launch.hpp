// Thin launchers over the CUDA kernels. Arguments hold device pointers; each launcher checks
// the launch and waits for the kernel, returning an empty string or what went wrong.
#pragma once

#include <string>

#include "kernels/quant/quant.hpp"
#include "kernels/recipes/recipes.hpp"

namespace dql::cuda {

std::string launch_quant(const quant::QuantArgs& a);
std::string launch_pack(const quant::PackArgs& a);
std::string launch_pack_params(const quant::PackArgs& a, int64_t groups);
std::string launch_permute(const quant::PermuteArgs& a, bool forward);
std::string launch_dequant(const quant::DequantArgs& a);
// Every destination register of the recipe's steps into values[0 .. *count).
std::string launch_trace(recipes::RecipeId id, uint32_t reg, uint32_t absmax, uint32_t* values, int* count);
// All 2^32 input registers against the integer reference (absmax 1.0 for NF4):
// counts[0] = mismatching registers, counts[1] = the smallest of them.
std::string launch_verify(recipes::RecipeId id, unsigned long long* counts);

}  // namespace dql::cuda
