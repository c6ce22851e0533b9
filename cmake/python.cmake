# Whether to build the Python package's extensions (python/), decided before
# the libraries are defined, since they must then be position-independent.
#   OVERLAP_PYTHON=ON    required: no nanobind for the interpreter is an error
#                        (pip install . sets it)
#   OVERLAP_PYTHON=AUTO  the default: built when nanobind is found for the
#                        python3 on PATH and overlap is the top-level project
#   OVERLAP_PYTHON=OFF   never
# Sets OVERLAP_BUILD_PYTHON, Python_EXECUTABLE and nanobind_DIR.
set(OVERLAP_BUILD_PYTHON OFF)
string(TOUPPER "${OVERLAP_PYTHON}" python_choice)
if(python_choice STREQUAL "AUTO" AND NOT PROJECT_IS_TOP_LEVEL)
  return()
endif()
if(NOT python_choice MATCHES "^(ON|AUTO|TRUE|YES|1)$")
  return()
endif()
set(python_required OFF)
if(NOT python_choice STREQUAL "AUTO")
  set(python_required ON)
endif()

if(NOT DEFINED Python_EXECUTABLE)
  # The interpreter on PATH, the one `python3 -m pip` and pytest use.
  find_program(Python_EXECUTABLE NAMES python3 python)
endif()
if(Python_EXECUTABLE AND NOT nanobind_DIR)
  execute_process(COMMAND "${Python_EXECUTABLE}" -m nanobind --cmake_dir
                  OUTPUT_VARIABLE found_nanobind_dir OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE nanobind_missing ERROR_QUIET)
  if(NOT nanobind_missing)
    set(nanobind_DIR "${found_nanobind_dir}" CACHE PATH "nanobind's CMake package, from `python3 -m nanobind --cmake_dir`")
  endif()
endif()
if(NOT nanobind_DIR)
  string(CONCAT why "the Python package needs nanobind for ${Python_EXECUTABLE} "
                "(`${Python_EXECUTABLE} -m pip install nanobind`, or scripts/install-deps.sh)")
  if(python_required)
    message(FATAL_ERROR "overlap: ${why}, or configure with -DOVERLAP_PYTHON=OFF")
  endif()
  message(STATUS "overlap: not building the Python package: ${why}")
  return()
endif()
set(OVERLAP_BUILD_PYTHON ON)
message(STATUS "overlap: Python package on (${Python_EXECUTABLE}, nanobind in ${nanobind_DIR})")
