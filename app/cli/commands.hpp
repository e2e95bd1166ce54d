// The terminal commands. Each adds itself to the application; bad input throws UserError,
// which main turns into one sentence on stderr and exit status 2.
#pragma once

#include <CLI/CLI.hpp>
#include <stdexcept>
#include <string>

#include "app/common/parse.hpp"
#include "kernels/quant/quant.hpp"

namespace dql::cli {

struct UserError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A CLI11 check that an option's text is a whole number from 0 to `most`, digits only: without it the
// conversion would wrap "-1" and hold a number past the type's end at its largest value.
CLI::Validator whole_number_check(uint64_t most);

template <class T>
T take(front::Parsed<T> p) {
  if (auto* msg = std::get_if<std::string>(&p)) throw UserError(*msg);
  return std::get<T>(p);
}

// --scheme and --layout as quant, dequant and gemv take them (an empty layout: AWQ's for int4-asym, else
// plain); UserError with the names accepted for another.
quant::Scheme parse_scheme(const std::string& s);
quant::Layout parse_layout(const std::string& s, quant::Scheme scheme);

void add_recipes(CLI::App& app);
void add_explain(CLI::App& app);
void add_tour(CLI::App& app);
void add_lop3(CLI::App& app);
void add_prmt(CLI::App& app);
void add_quant(CLI::App& app);
void add_dequant(CLI::App& app);
void add_permute(CLI::App& app);
void add_verify(CLI::App& app);
void add_device(CLI::App& app);
void add_bench(CLI::App& app);
void add_sass(CLI::App& app);
void add_gemv(CLI::App& app);

}  // namespace dql::cli
