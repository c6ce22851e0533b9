# ctest docs.doxygen: runs Doxygen on the public headers and fails, listing
# them, on any warning (its WARN_LOGFILE must stay empty).
#   cmake -DDOXYGEN=... -DDOXYFILE=... -DOUTPUT=... -P run_doxygen.cmake
file(MAKE_DIRECTORY "${OUTPUT}")
file(REMOVE "${OUTPUT}/warnings.log")
execute_process(COMMAND "${DOXYGEN}" "${DOXYFILE}" RESULT_VARIABLE status ERROR_VARIABLE errors OUTPUT_QUIET)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "doxygen failed (${status}): ${errors}")
endif()
file(READ "${OUTPUT}/warnings.log" warnings)
string(STRIP "${warnings}" warnings)
if(NOT warnings STREQUAL "")
  message(FATAL_ERROR "Doxygen warnings for the public headers:\n${warnings}")
endif()
message(STATUS "Doxygen: no warnings; ${OUTPUT}/html/index.html")
