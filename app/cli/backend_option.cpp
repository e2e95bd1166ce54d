#include "backend_option.hpp"

#include <fmt/format.h>

#include "commands.hpp"

namespace dql::cli {

std::unique_ptr<Backend> open_backend(const std::string& choice) {
  std::string notice;
  try {
    auto b = make_backend(choice, &notice);
    if (!notice.empty()) fmt::print(stderr, "dequant-lab: {}\n", notice);
    return b;
  } catch (const Error& e) {
    throw UserError(e.what());
  }
}

}  // namespace dql::cli
