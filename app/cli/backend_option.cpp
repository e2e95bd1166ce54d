#include "backend_option.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstdint>

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

namespace dql::cli {

CLI::Validator whole_number_check(uint64_t most) {
  return CLI::Validator(
      [most](std::string& text) -> std::string {
        uint64_t v = 0;
        const char* end = text.data() + text.size();
        const auto r = std::from_chars(text.data(), end, v);
        if (text.empty() || r.ec != std::errc() || r.ptr != end || v > most) {
          return fmt::format("'{}' is not a whole number from 0 to {}", text, most);
        }
        return {};
      },
      "0 OR MORE");
}

}  // namespace dql::cli
