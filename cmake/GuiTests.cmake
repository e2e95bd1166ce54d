# The desktop app's tests: the model without a window, and the app itself under Xvfb.
find_package(doctest REQUIRED)
include(doctest)

add_executable(dql_gui_model_tests ${PROJECT_SOURCE_DIR}/tests/test_main.cpp
                                   ${PROJECT_SOURCE_DIR}/tests/test_gui_model.cpp)
target_link_libraries(dql_gui_model_tests PRIVATE dql_gui_core doctest::doctest)
doctest_discover_tests(dql_gui_model_tests TEST_PREFIX "gui model: ")
