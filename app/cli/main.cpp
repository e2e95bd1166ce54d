// dequant-lab: the terminal front end.
#include <fmt/format.h>

#include <cstdio>

#include "commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Dequant Lab: the bit tricks of weight-only quantized inference, one instruction at a time",
               "dequant-lab"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "dequant-lab 0.1.0");
  dql::cli::add_recipes(app);
  dql::cli::add_explain(app);
  dql::cli::add_tour(app);
  dql::cli::add_lop3(app);
  dql::cli::add_prmt(app);
  dql::cli::add_quant(app);
  dql::cli::add_dequant(app);
  dql::cli::add_permute(app);
  dql::cli::add_verify(app);
  dql::cli::add_device(app);
  dql::cli::add_bench(app);
  dql::cli::add_sass(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  } catch (const dql::cli::UserError& e) {
    std::fflush(stdout);
    fmt::print(stderr, "dequant-lab: {}\n", e.what());
    return 2;
  }
  return 0;
}
