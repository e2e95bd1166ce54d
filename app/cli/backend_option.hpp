// The --backend option every command that runs kernels takes.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "kernels/backend/backend.hpp"

namespace dql::cli {

inline void add_backend_option(CLI::App* cmd, std::string& choice) {
  cmd->add_option("--backend", choice, "auto (the GPU when there is one), cuda or cpu (the bit-exact twin)")
      ->capture_default_str();
}

// Opens the backend; a fallback to the CPU twin is announced in one line on stderr.
std::unique_ptr<Backend> open_backend(const std::string& choice);

}  // namespace dql::cli
