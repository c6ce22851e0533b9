// A kernel's parameter sizes, asked of the driver: cuFuncGetParamInfo, or
// cuKernelGetParamInfo when the handle is a CUkernel (which cuLaunchKernel
// also accepts). A parameter index past the last makes the query fail:
// that is how the number of parameters is found. Compiled into both the
// tracer and the measuring library, each of which guards its own callbacks
// from the driver calls this makes.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <vector>

namespace overlap::inject {

/// The size in bytes of each parameter of `function`; empty for a kernel
/// without parameters or when the driver cannot say, and then `failure`
/// holds the driver's error unless it was only "no such parameter".
[[nodiscard]] std::vector<std::uint32_t> read_param_layout(CUfunction function, CUresult& failure);

}  // namespace overlap::inject
