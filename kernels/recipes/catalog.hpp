// The recipes as the front ends see them: names, one-line descriptions, input documentation,
// traced and plain runs, and the independent reference each recipe is tested against.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "recipes.hpp"
#include "trace.hpp"

namespace dql::recipes {

struct RecipeInfo {
  const RecipeSpec* spec;
  const char* summary;  // one line for `recipes`
  const char* origin;   // where the trick comes from
  const char* input;    // what the input register holds
};

const std::vector<RecipeInfo>& all_recipes();
const RecipeInfo* find_recipe(std::string_view name);
const RecipeInfo& info_of(RecipeId id);
// The names, comma separated, for messages that list what is accepted.
std::string recipe_names();

struct Inputs {
  uint32_t reg = 0;
  uint32_t absmax = 0x3F800000u;  // fp32 1.0; used by recipes with has_absmax
};

struct Trace {
  std::vector<TraceStep> steps;
  std::vector<uint32_t> outputs;  // spec.out_regs registers
};

Trace trace_recipe(RecipeId id, const Inputs& in);
std::vector<uint32_t> run_recipe_plain(RecipeId id, const Inputs& in);

// The stored field of logical element e (0 .. elems-1), read through the register order.
uint32_t stored_field(const RecipeSpec& spec, uint32_t reg, int e);

// The integer reference: what element e must come out as, written independently of the
// instruction sequences (plain integer arithmetic; NF4 through the host's own float types).
struct Expected {
  double value;
  uint32_t bits;  // its encoding in the recipe's output type
};
std::vector<Expected> reference_outputs(const RecipeSpec& spec, const Inputs& in);

// The output elements in result-register order (h0 low, h0 high, h1 low, ...), as 16-bit
// patterns and as numbers.
uint32_t output_bits(const std::vector<uint32_t>& regs, int e);
double output_value(const RecipeSpec& spec, const std::vector<uint32_t>& regs, int e);

}  // namespace dql::recipes
