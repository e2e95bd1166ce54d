# The GUI's GLSL shaders (shaders/*.vert, *.frag) embedded into the program at build time, as the
# static library dql_shaders with dql::gui::shader_source(name) (declared in app/gui/panels/heatmap.hpp).
file(GLOB DQL_SHADER_FILES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/shaders/*.vert ${PROJECT_SOURCE_DIR}/shaders/*.frag)
set(DQL_SHADERS_CPP ${CMAKE_BINARY_DIR}/generated/shaders.cpp)
add_custom_command(
  OUTPUT ${DQL_SHADERS_CPP}
  COMMAND ${CMAKE_COMMAND} -DDIR=${PROJECT_SOURCE_DIR}/shaders -DOUT=${DQL_SHADERS_CPP} -P
          ${PROJECT_SOURCE_DIR}/cmake/EmbedShaders.cmake
  DEPENDS ${DQL_SHADER_FILES} ${PROJECT_SOURCE_DIR}/cmake/EmbedShaders.cmake
  COMMENT "Embedding the GLSL shaders"
  VERBATIM)
add_library(dql_shaders STATIC ${DQL_SHADERS_CPP})
target_link_libraries(dql_gui PUBLIC dql_shaders)
