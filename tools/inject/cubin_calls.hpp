// Which kernels of a loaded module call a given device function, read from
// the module's cubin (the ELF that CUPTI's module-load callback hands over).
//
// The tracer asks it for `vprintf`, the function device-side printf calls:
// a kernel that prints writes into a buffer the host writes out only at its
// next synchronization, so a cudaDeviceSynchronize after it is how the
// program shows that output, not a sync that serves nothing (audit.md).
//
// ptxas writes each cubin's static call graph into `.nv.callgraph`: pairs
// of symbol indices (caller, callee), device functions that were not inlined
// included; a kernel calls the function when a path of edges leads there.
// Pure C++ (<elf.h>); every offset is checked against the cubin's size, so a
// truncated or unexpected image gives an empty answer, never a crash.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace overlap::inject {

/// The entry functions (kernels) of the 64-bit cubin `image` that reach
/// `callee` through its call graph, by their symbol names (mangled), in
/// symbol-table order. Where the cubin has no call graph but names `callee`,
/// every kernel of it (the module as a whole calls it). Empty when `image`
/// is not a cubin or nothing calls `callee`.
[[nodiscard]] std::vector<std::string> kernels_calling(std::span<const unsigned char> image,
                                                       std::string_view callee);

}  // namespace overlap::inject
