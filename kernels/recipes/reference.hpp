// The integer reference in a form device code can run: what element e of a recipe's output
// must be, from plain integer arithmetic on the input register (verify runs it beside the
// recipe for all 2^32 registers). The host catalogue's reference_outputs is a second,
// separately written reference, and the tests hold the two to each other.
#pragma once

#include "recipes.hpp"

namespace dql::recipes {

DQL_HD uint32_t reference_bits(RecipeId id, uint32_t reg, uint32_t absmax, int e) {
  const int b = recipe_bits(id);
  const int32_t field = static_cast<int32_t>((reg >> (b * recipe_slot_of(id, e))) & ((1u << b) - 1u));
  const int32_t half = 1 << (b - 1);
  int32_t v = field;
  switch (recipe_encoding(id)) {
    case Encoding::Biased: v = field - half; break;
    case Encoding::TwosComp: v = field >= half ? field - 2 * half : field; break;
    case Encoding::Nf4Code:
      return bits::soft_convert(
          bits::kF16, bits::kF32,
          bits::soft_mul(bits::kF32, nf4_code_bits(static_cast<uint32_t>(field)), absmax));
    case Encoding::Unsigned: break;
  }
  if (recipe_out(id) == OutType::F16) return bits::soft_from_int(bits::kF16, v);
  return bits::soft_from_int(bits::kBF16, v);
}

}  // namespace dql::recipes
