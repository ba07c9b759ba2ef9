include(GoogleTest)

# di_add_test(NAME name SOURCES a.cc b.cc LIBS lib1 lib2)
# Builds a GoogleTest executable (main: src/backend/test_main.cc) and registers its cases with ctest. Tests get
# DI_SHARED_DIR (models), DI_SOURCE_DIR and DI_BINARY_DIR (to find build/deepinfer).
function(di_add_test)
  cmake_parse_arguments(T "" "NAME" "SOURCES;LIBS" ${ARGN})
  if(NOT DEEPINFER_TESTS)
    return()
  endif()
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} di_test_main)
  target_compile_definitions(${T_NAME} PRIVATE
    DI_SHARED_DIR="${DEEPINFER_SHARED_DIR}"
    DI_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
    DI_BINARY_DIR="${CMAKE_BINARY_DIR}")
  # Under the sanitizers the suite is there to run the libraries under the checkers, and the libraries keep the
  # build's -O1; the test bodies themselves (gtest macros, fixtures) compile at -O0, which halves the compile time
  # of the heaviest test files and so cuts CI's sanitizer builds (scripts/test.sh).
  if(DEEPINFER_SANITIZE OR DEEPINFER_SANITIZE_THREAD)
    target_compile_options(${T_NAME} PRIVATE -O0)
  endif()
  gtest_discover_tests(${T_NAME} DISCOVERY_TIMEOUT 120 PROPERTIES TIMEOUT 600)
endfunction()
