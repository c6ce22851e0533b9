# The Debian package (CPack's DEB generator): `make package`, or
#   cmake --build build/default --target package    -> build/default/overlap_0.1.0_amd64.deb
# The command, the libraries, the headers and the CMake and pkg-config files,
# under /usr. Its Depends come from the libraries the binaries link
# (dpkg-shlibdeps). The CUDA toolkit's libraries (cudart, CUPTI) and the
# driver's come from NVIDIA's installers, not Debian, so they add no Depends:
# a package built with the CUDA layer needs a CUDA toolkit of the version it
# was built against (it says which in the description and `overlap --version`).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME overlap)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "overlap maintainers <overlap@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Folders of libraries linked from outside the system's packages (a machine
# without our Debian build dependencies: scripts/device-package.sh). The scan
# finds them there; belonging to no package, they add no Depends.
set(OVERLAP_PACKAGE_LIBRARY_DIRS "" CACHE STRING "extra folders dpkg-shlibdeps searches for linked libraries")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${OVERLAP_PACKAGE_LIBRARY_DIRS})
# What building against the installed headers and CMake package needs.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libfmt-dev, nlohmann-json3-dev, libyaml-cpp-dev")
set(overlap_package_description
    "overlap predicts (a discrete-event simulator and a planner), runs (CUDA pipelines, feeds and task graphs), "
    "shows (timelines as ASCII, Mermaid, Perfetto traces and HTML) and checks (races and concurrency traps, "
    "in specs and in unmodified applications) GPU programs that overlap host-device copies with kernels.")
if(OVERLAP_HAS_CUDA)
  string(APPEND overlap_package_description
         " Built with its CUDA layer against CUDA ${CUDAToolkit_VERSION}: the toolkit's libraries are expected in "
         "${CUDAToolkit_LIBRARY_DIR}.")
  # The CUDA libraries are found there, and belong to no package. The
  # driver's libcuda.so.1 (which the injection library links) is not on a
  # machine without a GPU: the toolkit's stub stands in for it in the scan.
  list(APPEND CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "${CUDAToolkit_LIBRARY_DIR}")
  if(EXISTS "${CUDAToolkit_LIBRARY_DIR}/stubs/libcuda.so")
    file(MAKE_DIRECTORY "${PROJECT_BINARY_DIR}/package-stubs")
    file(CREATE_LINK "${CUDAToolkit_LIBRARY_DIR}/stubs/libcuda.so" "${PROJECT_BINARY_DIR}/package-stubs/libcuda.so.1"
         SYMBOLIC)
    list(APPEND CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "${PROJECT_BINARY_DIR}/package-stubs")
  endif()
  # libovl_measure.so links the Compute Sanitizer API from where it was found.
  if(TARGET overlap_measure)
    get_filename_component(overlap_sanitizer_dir "${OVERLAP_SANITIZER_LIBRARY}" DIRECTORY)
    list(APPEND CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "${overlap_sanitizer_dir}")
  endif()
else()
  string(APPEND overlap_package_description " Built without its CUDA layer.")
endif()
string(JOIN "" CPACK_PACKAGE_DESCRIPTION ${overlap_package_description})
include(CPack)
