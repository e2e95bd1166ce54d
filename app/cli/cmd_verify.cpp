// verify: a recipe against its integer reference on every input register (GPU) or a sample
// (CPU). device: what the backend runs on.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "backend_option.hpp"
#include "commands.hpp"
#include "render.hpp"

namespace dql::cli {

void add_verify(CLI::App& app) {
  struct Opts {
    std::string recipe, backend = "auto";
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd =
      app.add_subcommand("verify", "Check a recipe against its integer reference on all 2^32 registers");
  cmd->add_option("--recipe", o->recipe, "A recipe name, or all")->required();
  add_backend_option(cmd, o->backend);
  cmd->add_flag("--json", o->json, "Print JSON rows");
  cmd->callback([o] {
    std::vector<recipes::RecipeId> ids;
    if (o->recipe == "all") {
      for (const auto& r : recipes::all_recipes()) ids.push_back(r.spec->id);
    } else if (const recipes::RecipeInfo* r = recipes::find_recipe(o->recipe)) {
      ids.push_back(r->spec->id);
    } else {
      throw UserError(fmt::format("there is no recipe called '{}': choose one of {}, or all", o->recipe,
                                  recipes::recipe_names()));
    }
    auto backend = open_backend(o->backend);
    nlohmann::json rows = nlohmann::json::array();
    uint64_t total_bad = 0;
    bool exhaustive = true;
    if (!o->json) {
      fmt::print("{}\n", backend->info().summary());
      fmt::print("{:<18} {:>14} {:>11} {:>12} {:>10}\n", "recipe", "registers", "mismatches", "first",
                 "seconds");
    }
    for (auto id : ids) {
      VerifyResult r;
      try {
        r = backend->verify(id);
      } catch (const Error& e) {
        throw UserError(e.what());
      }
      total_bad += r.mismatches;
      exhaustive = exhaustive && r.exhaustive;
      const char* name = recipes::spec_of(id).name;
      if (o->json) {
        rows.push_back(
            {{"recipe", name},
             {"registers", r.checked},
             {"exhaustive", r.exhaustive},
             {"mismatches", r.mismatches},
             {"first_mismatch", r.mismatches ? hex32(static_cast<uint32_t>(r.first_mismatch)) : ""},
             {"seconds", r.seconds},
             {"backend", backend->info().backend}});
      } else {
        fmt::print("{:<18} {:>14} {:>11} {:>12} {:>10.3f}\n", name, r.checked, r.mismatches,
                   r.mismatches ? hex32(static_cast<uint32_t>(r.first_mismatch)) : "-", r.seconds);
      }
    }
    if (o->json) {
      fmt::print("{}\n", rows.dump(2));
    } else if (!exhaustive) {
      fmt::print(
          "the CPU twin checks a sample of 2^24 registers per recipe; on a GPU every one of the 2^32 is "
          "checked\n");
    }
    if (total_bad)
      throw UserError(fmt::format("{} registers disagree with the integer reference", total_bad));
  });
}

void add_device(CLI::App& app) {
  struct Opts {
    std::string backend = "auto";
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("device", "Show what the kernels run on");
  add_backend_option(cmd, o->backend);
  cmd->add_flag("--json", o->json, "Print JSON");
  cmd->callback([o] {
    auto backend = open_backend(o->backend);
    const DeviceInfo& d = backend->info();
    if (o->json) {
      const nlohmann::json j = {{"backend", d.backend},
                                {"name", d.name},
                                {"compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor)},
                                {"sms", d.sms},
                                {"memory_bytes", d.memory_bytes},
                                {"free_bytes", d.free_bytes},
                                {"l2_bytes", d.l2_bytes},
                                {"block_shared_bytes", d.block_shared_bytes},
                                {"sm_clock_mhz", d.sm_clock_mhz},
                                {"memory_clock_mhz", d.mem_clock_mhz},
                                {"driver_version", d.driver_version},
                                {"runtime_version", d.runtime_version}};
      fmt::print("{}\n", j.dump(2));
      return;
    }
    fmt::print("{}\n", d.summary());
    if (d.backend == "cuda") {
      fmt::print(
          "  memory {:.1f} GiB ({:.1f} GiB free), L2 {:.0f} MiB, clocks SM {} MHz / memory {} MHz (max)\n",
          d.memory_bytes / 1073741824.0, d.free_bytes / 1073741824.0, d.l2_bytes / 1048576.0, d.sm_clock_mhz,
          d.mem_clock_mhz);
      fmt::print("  driver {}.{}, runtime {}.{}\n", d.driver_version / 1000, (d.driver_version % 1000) / 10,
                 d.runtime_version / 1000, (d.runtime_version % 1000) / 10);
    }
  });
}

}  // namespace dql::cli
