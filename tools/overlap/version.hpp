// `overlap --version`: what was built, from which revision, against which
// CUDA runtime, and the driver and device it finds now.
#pragma once

#include <string>

namespace overlap::cli {

/// Lines for `overlap --version`: "overlap 0.1.0 (git abc123)", the CUDA
/// runtime it was built against (or that it was built without one), and,
/// when a GPU is present, the driver version and device 0's name.
[[nodiscard]] std::string version_text();

}  // namespace overlap::cli
