# Run as `cmake -DDIR=<shaders> -DOUT=<file.cpp> -P EmbedShaders.cmake`: writes a C++ file whose
# dql::gui::shader_source(name) returns the text of DIR/name (*.vert, *.frag), so the app carries
# its shaders and does not depend on the working directory.
file(GLOB sources RELATIVE ${DIR} ${DIR}/*.vert ${DIR}/*.frag)
list(SORT sources)
set(body "")
foreach(name IN LISTS sources)
  file(READ ${DIR}/${name} text)
  string(APPEND body "  if (name == \"${name}\") return R\"dql_glsl(${text})dql_glsl\";\n")
endforeach()
set(cpp "// Generated from shaders/ by cmake/EmbedShaders.cmake; edit the shaders, not this file.
#include <string_view>

namespace dql::gui {

const char* shader_source(std::string_view name) {
${body}  return nullptr;
}

}  // namespace dql::gui
")
# Rewrite only when the text changed, so an unchanged shader set rebuilds nothing.
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT "${old}" STREQUAL "${cpp}")
  file(WRITE ${OUT} "${cpp}")
endif()
