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
  gtest_discover_tests(${T_NAME} DISCOVERY_TIMEOUT 120 PROPERTIES TIMEOUT 600)
endfunction()
