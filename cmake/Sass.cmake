# The SASS of the program's own kernels, carried in the program (the SASS view and the `sass`
# command). After dql_cuda is built, dql_sass_pack runs cuobjdump -sass on it (every architecture
# it was built for), keeps one line per instruction, compresses each architecture's text and writes
# a source that embeds it with the assembler's .incbin, so nothing large is compiled. Without
# cuobjdump, or when it fails, the build goes on and the program says that SASS is not available.
#
# cuobjdump and nvdisasm are looked for next to nvcc, then where scripts/setup.sh installs
# NVIDIA's packages of them (<build>/cuda-tools); -DDQL_CUOBJDUMP=PATH overrides.
file(GLOB _dql_tool_dirs LIST_DIRECTORIES true "${CMAKE_BINARY_DIR}/cuda-tools/nvidia/*/bin")
find_program(DQL_CUOBJDUMP cuobjdump HINTS ${CUDAToolkit_BIN_DIR} ${_dql_tool_dirs}
             DOC "cuobjdump of the CUDA toolkit, for the embedded SASS")
set(_dql_nvdisasm_hints ${CUDAToolkit_BIN_DIR} ${_dql_tool_dirs})
if(DQL_CUOBJDUMP)
  get_filename_component(_dql_cuobjdump_dir "${DQL_CUOBJDUMP}" DIRECTORY)
  list(PREPEND _dql_nvdisasm_hints "${_dql_cuobjdump_dir}")
endif()
find_program(DQL_NVDISASM nvdisasm HINTS ${_dql_nvdisasm_hints} DOC "nvdisasm, which cuobjdump -sass runs")
if(DQL_CUOBJDUMP)
  message(STATUS "SASS view: ${DQL_CUOBJDUMP}")
else()
  message(STATUS "SASS view: no cuobjdump found; the program will say SASS is not available")
endif()

# The listings are embedded compressed (zlib: about a sixth of their size).
find_package(ZLIB REQUIRED)

add_executable(dql_sass_pack ${PROJECT_SOURCE_DIR}/kernels/sass/pack.cpp)
target_include_directories(dql_sass_pack PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(dql_sass_pack PRIVATE ZLIB::ZLIB)

# The kernel sources, read for the names of the kernels' template parameters.
file(GLOB _dql_kernel_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/kernels/cuda/*.cu
     ${PROJECT_SOURCE_DIR}/kernels/cuda/*.cuh)
set(_dql_source_args)
foreach(_src IN LISTS _dql_kernel_sources)
  list(APPEND _dql_source_args --source ${_src})
endforeach()

set(DQL_SASS_DIR ${CMAKE_BINARY_DIR}/sass)
file(MAKE_DIRECTORY ${DQL_SASS_DIR})
add_custom_command(
  OUTPUT ${DQL_SASS_DIR}/sass_data.cpp
  COMMAND dql_sass_pack --out-dir ${DQL_SASS_DIR} --library $<TARGET_FILE:dql_cuda>
          --cuobjdump "${DQL_CUOBJDUMP}" --nvdisasm "${DQL_NVDISASM}" ${_dql_source_args}
  DEPENDS dql_cuda dql_sass_pack ${_dql_kernel_sources}
  COMMENT "Disassembling the kernels (cuobjdump -sass) for the SASS view"
  VERBATIM)
# Its own target, so that the disassembly waits only for dql_cuda, not for the engine.
add_custom_target(dql_sass_dump DEPENDS ${DQL_SASS_DIR}/sass_data.cpp)

# Parsing, classifying and decoding SASS; counts per kernel and per element.
add_library(dql_sass STATIC ${PROJECT_SOURCE_DIR}/kernels/sass/sass.cpp)
target_link_libraries(dql_sass PUBLIC dql_engine fmt::fmt)

# The embedded listings.
add_library(dql_sass_data STATIC ${DQL_SASS_DIR}/sass_data.cpp ${PROJECT_SOURCE_DIR}/kernels/sass/embedded.cpp)
target_link_libraries(dql_sass_data PUBLIC dql_sass PRIVATE ZLIB::ZLIB)
add_dependencies(dql_sass_data dql_sass_dump)
