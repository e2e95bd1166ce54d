# The desktop app's tests: the model without a window, and the app itself under Xvfb.
find_package(doctest REQUIRED)
include(doctest)

add_executable(dql_gui_model_tests ${PROJECT_SOURCE_DIR}/tests/test_main.cpp
                                   ${PROJECT_SOURCE_DIR}/tests/test_gui_model.cpp)
target_link_libraries(dql_gui_model_tests PRIVATE dql_gui_core doctest::doctest)
# The views' sources, where the test finds every script key the views read.
target_compile_definitions(dql_gui_model_tests PRIVATE DQL_GUI_SOURCES="${PROJECT_SOURCE_DIR}/app/gui")
doctest_discover_tests(dql_gui_model_tests TEST_PREFIX "gui model: ")

# The app under Xvfb + Mesa (llvmpipe). Exit status 77 = skipped, with a message, where Xvfb
# is missing; CI installs it (scripts/setup.sh).
add_executable(dql_gui_app_tests ${PROJECT_SOURCE_DIR}/tests/test_gui_app.cpp
                                 ${PROJECT_SOURCE_DIR}/tests/test_gui_views.cpp)
target_link_libraries(dql_gui_app_tests PRIVATE doctest::doctest PkgConfig::STB nlohmann_json::nlohmann_json)
target_compile_definitions(dql_gui_app_tests PRIVATE
  DQL_PROGRAM="$<TARGET_FILE:dequant-lab>"
  DQL_DOCS_RUNS="${PROJECT_SOURCE_DIR}/docs/runs"
  DQL_TEST_TMPDIR="${CMAKE_CURRENT_BINARY_DIR}")
add_dependencies(dql_gui_app_tests dequant-lab)
add_test(NAME "gui: the app under Xvfb" COMMAND dql_gui_app_tests)
set_tests_properties("gui: the app under Xvfb" PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 900)
