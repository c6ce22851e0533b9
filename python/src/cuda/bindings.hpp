// overlap._cuda: one file per part; module.cpp gathers them.
#pragma once

#include <nanobind/nanobind.h>

namespace overlap::python {

void bind_pinned(nanobind::module_& module);    // pinned.cpp
void bind_pipeline(nanobind::module_& module);  // pipeline.cpp
void bind_dlpack(nanobind::module_& module);    // dlpack.cpp

}  // namespace overlap::python
