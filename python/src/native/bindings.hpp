// overlap._native: the CUDA-free half of the Python package. One file per
// part of the API; module.cpp gathers them.
#pragma once

#include <nanobind/nanobind.h>

namespace overlap::python {

void bind_device_model(nanobind::module_& module);  // device_model.cpp
void bind_timeline(nanobind::module_& module);      // timeline.cpp
void bind_program(nanobind::module_& module);       // program.cpp: specs and simulate
void bind_check(nanobind::module_& module);         // check.cpp

}  // namespace overlap::python
