#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "kernels/recipes/catalog.hpp"

namespace dql::cli {

void add_recipes(CLI::App& app) {
  auto* cmd = app.add_subcommand("recipes", "List the conversion recipes, one line each");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print a JSON array instead of the list");
  cmd->callback([json] {
    if (*json) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& r : recipes::all_recipes()) {
        out.push_back({{"name", r.spec->name},
                       {"summary", r.summary},
                       {"origin", r.origin},
                       {"input", r.input},
                       {"bits", r.spec->bits},
                       {"elements", r.spec->elems},
                       {"output", r.spec->out == recipes::OutType::F16 ? "fp16" : "bf16"}});
      }
      fmt::print("{}\n", out.dump(2));
      return;
    }
    for (const auto& r : recipes::all_recipes()) fmt::print("{:<18} {}\n", r.spec->name, r.summary);
  });
}

}  // namespace dql::cli
