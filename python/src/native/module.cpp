// overlap._native: specs, device models, the simulator, the checker and the
// exporters, for python/overlap/__init__.py to wrap. No CUDA here.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <string>

#include "bindings.hpp"
#include "overlap/version.hpp"
#include "translate_errors.hpp"

NB_MODULE(_native, module) {
  module.doc() = "overlap's C++ core (predict and check); use the `overlap` package, not this module.";
  overlap::python::register_error_translators();
  module.attr("__version__") = std::string(overlap::version_string);
  overlap::python::bind_device_model(module);
  overlap::python::bind_timeline(module);
  overlap::python::bind_program(module);
  overlap::python::bind_check(module);
}
