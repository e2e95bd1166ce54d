#include "host_steps.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dql {

void check_scales(const QuantSpec& spec, const std::vector<uint16_t>& scales_nk, int64_t k) {
  const int64_t groups = k / spec.group;
  for (size_t i = 0; i < scales_nk.size(); ++i) {
    if ((scales_nk[i] & 0x7C00u) == 0x7C00u) {
      throw Error(
          fmt::format("row {}, group {} has weights too large for an fp16 scale (largest 65504): scale "
                      "the matrix down before quantizing",
                      static_cast<int64_t>(i) / groups, static_cast<int64_t>(i) % groups));
    }
  }
}

void check_recipe_reads(const QuantSpec& spec, recipes::RecipeId recipe) {
  const auto ok = recipes_for(spec);
  if (std::find(ok.begin(), ok.end(), recipe) != ok.end()) return;
  std::string names;
  for (auto r : ok) names += (names.empty() ? "" : ", ") + std::string(recipes::spec_of(r).name);
  throw Error(fmt::format("recipe {} does not read this format; the recipes that do are {}",
                          recipes::spec_of(recipe).name, names));
}

size_t qword_count(const QuantSpec& spec, int64_t n, int64_t k) {
  return static_cast<size_t>(n * k * quant::scheme_bits(spec.scheme) / 32);
}
size_t group_count(const QuantSpec& spec, int64_t n, int64_t k) {
  return static_cast<size_t>(n * (k / spec.group));
}

}  // namespace dql
