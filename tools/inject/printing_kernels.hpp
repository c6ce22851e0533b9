// `printf` records: the kernels of each loaded module that call device-side
// printf (docs/trace-format.md), read from the module's cubin as CUPTI
// hands it to the module-load callback.
#pragma once

#include <cupti.h>

namespace overlap::inject {

/// Writes a `printf` record for each kernel of the module just loaded that
/// reaches vprintf, once per kernel name over the run.
void note_module_loaded(const CUpti_ModuleResourceData& module);

}  // namespace overlap::inject
