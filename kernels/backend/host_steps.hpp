// Host-side checks and result shaping shared by both backends.
#pragma once

#include "backend.hpp"

namespace dql {

// Throws when a group's scale does not fit fp16 (a weight beyond +-65504 * qmax).
void check_scales(const QuantSpec& spec, const std::vector<uint16_t>& scales_nk, int64_t k);
// Throws unless `recipe` reads the format `spec` describes.
void check_recipe_reads(const QuantSpec& spec, recipes::RecipeId recipe);
// Sizes of the arrays a quantized matrix holds.
size_t qword_count(const QuantSpec& spec, int64_t n, int64_t k);
size_t group_count(const QuantSpec& spec, int64_t n, int64_t k);

}  // namespace dql
