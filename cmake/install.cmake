# Install rules: headers, libraries, the `overlap` command with its
# injection library, a relocatable CMake package and a pkg-config file.
#
#   cmake --install build/default --prefix /opt/overlap
#   find_package(overlap REQUIRED)                    # CPU parts
#   find_package(overlap REQUIRED COMPONENTS cuda)    # and the CUDA layer
#
# The CPU parts and the CUDA parts are two export sets, so a consumer of the
# CPU parts loads no CUDA target and needs no CUDA toolkit.
include(CMakePackageConfigHelpers)

set(OVERLAP_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/overlap")
set(overlap_cpu_parts core sim io check graph trace)
set(overlap_cuda_parts cuda probe bench)

# install_parts(EXPORT_SET part...): the libraries overlap_<part>, their
# headers include/overlap/<part>/, and one export file for the set.
function(install_parts export_set)
  set(targets)
  foreach(part IN LISTS ARGN)
    list(APPEND targets overlap_${part})
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/overlap/${part}
            DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/overlap COMPONENT development)
  endforeach()
  install(TARGETS ${targets}
    EXPORT ${export_set}
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime)
  install(EXPORT ${export_set} NAMESPACE overlap:: DESTINATION ${OVERLAP_CMAKE_DIR} COMPONENT development)
endfunction()

install_parts(overlapTargets ${overlap_cpu_parts})
if(OVERLAP_HAS_CUDA)
  install_parts(overlapCudaTargets ${overlap_cuda_parts})
endif()
install(FILES ${OVERLAP_GENERATED_INCLUDE_DIR}/overlap/version.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/overlap COMPONENT development)

if(OVERLAP_BUILD_CLI)
  install(TARGETS overlap RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
  if(OVERLAP_HAS_CUDA)
    # A private plugin folder: `overlap trace` looks for it in ../lib/overlap
    # beside the executable (tools/overlap/traced_app.cpp).
    install(TARGETS overlap_inject LIBRARY DESTINATION lib/overlap COMPONENT runtime)
    # Measured accesses, where the Compute Sanitizer API was found (tools/measure).
    if(TARGET overlap_measure)
      install(TARGETS overlap_measure LIBRARY DESTINATION lib/overlap COMPONENT runtime)
    endif()
    # The installed command finds the CUDA runtime it was built against.
    set_target_properties(overlap PROPERTIES INSTALL_RPATH "${CUDAToolkit_LIBRARY_DIR}")
  endif()
endif()

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/overlapConfig.cmake.in
  "${PROJECT_BINARY_DIR}/overlapConfig.cmake"
  INSTALL_DESTINATION ${OVERLAP_CMAKE_DIR})
# 0.x: any 0.y satisfies a request for 0.x with y >= x; 1.0 will not.
write_basic_package_version_file("${PROJECT_BINARY_DIR}/overlapConfigVersion.cmake"
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMajorVersion)
install(FILES "${PROJECT_BINARY_DIR}/overlapConfig.cmake" "${PROJECT_BINARY_DIR}/overlapConfigVersion.cmake"
        DESTINATION ${OVERLAP_CMAKE_DIR} COMPONENT development)

# pkg-config, for builds without CMake: the CPU parts, static, dependents
# first. Relocatable like the CMake package: the prefix is found from the
# .pc file's own folder.
file(RELATIVE_PATH OVERLAP_PC_TO_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
configure_file(${PROJECT_SOURCE_DIR}/cmake/overlap.pc.in "${PROJECT_BINARY_DIR}/overlap.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/overlap.pc" DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT development)
