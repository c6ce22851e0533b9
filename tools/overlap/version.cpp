// `overlap --version`. The GPU lines ask the runtime for the device count
// first: on a machine without a GPU or driver that is an error code, which
// is reported as such, not thrown.
#include "version.hpp"

#include <fmt/format.h>

#include <string_view>

#include "overlap/version.hpp"

#if OVERLAP_HAS_CUDA
#include <cuda_runtime_api.h>

#include "overlap/bench/driver.hpp"
#include "overlap/cuda/error.hpp"
#endif

namespace overlap::cli {

namespace {

// CUDA spells versions as 1000 * major + 10 * minor.
[[maybe_unused]] std::string cuda_version(int v) {
  return fmt::format("{}.{}", v / 1000, v % 1000 / 10);
}

std::string gpu_lines() {
#if OVERLAP_HAS_CUDA
  std::string text = fmt::format("built with the CUDA runtime {}\n", cuda_version(CUDART_VERSION));
  int devices = 0;
  const cudaError_t counted = cudaGetDeviceCount(&devices);
  if (counted != cudaSuccess || devices == 0) {
    (void)cudaGetLastError();  // not sticky, but the last error until cleared: clear it
    return text + fmt::format("GPU: none found (cudaGetDeviceCount: {})\n",
                              counted == cudaSuccess ? "0 devices" : cudaGetErrorString(counted));
  }
  try {
    const bench::device_info d = bench::query_device();
    return text + fmt::format("driver for CUDA {} ({}); device {} of {}: {}\n",
                              cuda_version(d.driver_version), d.driver_version, d.ordinal, devices, d.name);
  } catch (const cuda_error& e) {
    return text + fmt::format("GPU: present, but its driver did not answer ({})\n", e.what());
  }
#else
  return "built without the CUDA layer (no CUDA toolkit when it was configured)\n";
#endif
}

}  // namespace

std::string version_text() {
  const std::string_view revision = git_revision;
  std::string text = revision.empty() ? fmt::format("overlap {}\n", version_string)
                                      : fmt::format("overlap {} (git {})\n", version_string, revision);
  text += gpu_lines();
  text.pop_back();  // CLI11 prints the last newline
  return text;
}

}  // namespace overlap::cli
