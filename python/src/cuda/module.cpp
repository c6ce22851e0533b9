// overlap._cuda: the run face for Python. The Pipeline over host arrays
// (pipeline.cpp), pinned host arrays (pinned.cpp); a C++ stage the Python
// benchmark compares against (reference_kernel.cu). The package imports it
// lazily: a machine without the CUDA runtime still simulates and checks.
#include <nanobind/nanobind.h>

#include "bindings.hpp"
#include "overlap/cuda/error.hpp"
#include "translate_errors.hpp"

NB_MODULE(_cuda, module) {
  module.doc() = "overlap's CUDA layer (run); use the `overlap` package, not this module.";
  overlap::python::register_error_translators();
  module.def("device_count", &overlap::cuda::device_count,
             "CUDA devices visible to this process (0 without one).");
  overlap::python::bind_pinned(module);
  overlap::python::bind_pipeline(module);
  overlap::python::bind_dlpack(module);
}
