// How overlap's C++ exceptions reach Python, for both extensions.
//
// overlap::invalid_input (a bad spec field, model figure or argument, its
// message naming the field) becomes ValueError, as the CLI's exit 2 does;
// any other overlap::error (a CUDA failure, a file that cannot be written)
// becomes RuntimeError. Each extension registers these once at import.
#pragma once

#include <nanobind/nanobind.h>

#include <exception>

#include "overlap/core/error.hpp"

namespace overlap::python {

inline void register_error_translators() {
  // Registered last runs first: the more specific type goes second.
  nanobind::register_exception_translator([](const std::exception_ptr& failure, void*) {
    try {
      std::rethrow_exception(failure);
    } catch (const overlap::error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
  nanobind::register_exception_translator([](const std::exception_ptr& failure, void*) {
    try {
      std::rethrow_exception(failure);
    } catch (const overlap::invalid_input& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
}

}  // namespace overlap::python
