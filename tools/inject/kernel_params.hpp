// A launched kernel's name and the values of its parameters that may be
// addresses (the `kernel`, `ptrs` and `sptrs` of a launch record), read
// through the driver.
//
// The converter matches them against allocations to see which buffers a
// kernel touches: `ptrs` are the 8-byte parameters; `sptrs` the words of
// larger ones (structs passed by value) in the range user-space addresses
// take, which is what keeps floats, sizes and strides out. Parameter sizes come from cuFuncGetParamInfo (or
// cuKernelGetParamInfo when the handle is a CUkernel, which cuLaunchKernel
// also accepts) and are cached per handle, so a launch costs one lookup
// rather than a driver call per parameter; the cache is dropped when a
// module is unloaded, since its handles can then be reused. A runtime launch
// normally reaches the driver's launch, where CUPTI shows the CUfunction; if
// it does not, the shared runtime is asked for it.
#pragma once

#include <cuda.h>

#include <string>

#include "pointer_args.hpp"

namespace overlap::inject {

/// Appends to `out` the values of a launch of `function` with the argument
/// array `kernel_params` (one pointer per parameter) that may be addresses.
void append_pointer_params(CUfunction function, void** kernel_params, PointerArgs& out);

/// For a runtime launch whose driver launch CUPTI did not report: finds the
/// kernel of the host stub `host_function` through the process's shared CUDA
/// runtime (cudaGetFuncBySymbol) and appends its 8-byte arguments from the
/// runtime's `args`. False when there is no shared runtime or it does not
/// know the stub (a statically linked runtime). The runtime's last-error
/// state is left as the app had it.
bool append_runtime_pointer_params(const void* host_function, void** args, PointerArgs& out);

/// Replaces `out` with the kernel's (usually mangled) name, or clears it;
/// cached per handle like the layouts.
void read_kernel_name(CUfunction function, std::string& out);

/// Forgets the cached parameter layouts and names (a module is being unloaded).
void forget_kernel_layouts();

}  // namespace overlap::inject
