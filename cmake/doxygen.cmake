# The API reference (Doxygen, Debian's `doxygen`): a `docs` target, and with
# the tests the ctest docs.doxygen, which fails on any Doxygen warning for
# the public headers (an undocumented public name, a malformed command).
find_package(Doxygen QUIET)
if(NOT DOXYGEN_FOUND)
  message(STATUS "overlap: doxygen not found; no `docs` target or docs.doxygen test")
  return()
endif()
set(OVERLAP_DOCS_OUTPUT "${PROJECT_BINARY_DIR}/docs")
configure_file("${PROJECT_SOURCE_DIR}/docs/Doxyfile.in" "${PROJECT_BINARY_DIR}/Doxyfile" @ONLY)
add_custom_target(docs
  COMMAND ${CMAKE_COMMAND} -E make_directory "${OVERLAP_DOCS_OUTPUT}"
  COMMAND Doxygen::doxygen "${PROJECT_BINARY_DIR}/Doxyfile"
  WORKING_DIRECTORY "${PROJECT_BINARY_DIR}"
  COMMENT "API reference: ${OVERLAP_DOCS_OUTPUT}/html/index.html"
  VERBATIM)
if(OVERLAP_BUILD_TESTS)
  add_test(NAME docs.doxygen
           COMMAND ${CMAKE_COMMAND} -DDOXYGEN=$<TARGET_FILE:Doxygen::doxygen> -DDOXYFILE=${PROJECT_BINARY_DIR}/Doxyfile
                   -DOUTPUT=${OVERLAP_DOCS_OUTPUT} -P ${PROJECT_SOURCE_DIR}/cmake/run_doxygen.cmake)
  set_tests_properties(docs.doxygen PROPERTIES LABELS cpu TIMEOUT 300)
endif()
