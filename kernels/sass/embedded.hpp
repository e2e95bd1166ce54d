// The SASS the build embedded in the program: cuobjdump's listing of dql_cuda, one compact text
// per architecture it was built for, compressed (cmake/Sass.cmake).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sass.hpp"

namespace dql::sass {

struct EmbeddedArch {
  std::string_view arch;    // "sm_90"
  std::string_view packed;  // compact cuobjdump -sass output for that architecture, one zlib stream
  size_t text_bytes = 0;    // its size unpacked
};

// One architecture's listing text, unpacked; empty where the stream does not unpack to text_bytes.
std::string embedded_text(const EmbeddedArch& e);

// Ascending by architecture; empty when the build had no cuobjdump (or it failed).
std::span<const EmbeddedArch> embedded();

// Why embedded() is empty, as a sentence; empty when it is not.
std::string_view unavailable_reason();

// One embedded architecture ("sm_90"), or nullptr where the build has none for it.
const EmbeddedArch* embedded_arch(std::string_view arch);

// The embedded architectures, "sm_75, sm_80, ..." for messages.
std::string embedded_arch_list();

// The parsed listing of one embedded architecture (parsed once, then shared), or nullptr.
const Listing* embedded_listing(std::string_view arch);

// The names of a kernel's template parameters as its source declares them, space-separated
// ({"ft_lane_kernel", "T NAIVE W SPREAD SLOTS UNMET STAGED"}), one entry a kernel template.
struct ParamNames {
  std::string_view kernel;
  std::string_view names;
};
std::span<const ParamNames> kernel_param_names();

// A short name's template arguments with the names of their parameters ({"T", "fp16"}, {"NAIVE",
// "false"}, ...), the list of them ("T = fp16, NAIVE = false, ...") and the name written with them
// ("ft_lane_kernel<T = fp16, NAIVE = false, ...>"); each empty where the sources declared no template
// of that name with as many parameters.
struct NamedArg {
  std::string name, value;
};
std::vector<NamedArg> named_args(std::string_view short_name);
std::string param_list(std::string_view short_name);
std::string with_param_names(std::string_view short_name);

// The architecture to show by default: `preferred` ("sm_90") when embedded, else the highest
// embedded one below it, else the lowest; empty when nothing is embedded.
std::string default_arch(std::string_view preferred = "sm_90");

}  // namespace dql::sass
