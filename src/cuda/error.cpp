#include "overlap/cuda/error.hpp"

#include <fmt/format.h>

namespace overlap {

namespace {

std::string describe(cudaError_t status, std::string_view call, std::string_view context) {
  std::string text =
      fmt::format("{} failed: {} ({})", call, cudaGetErrorString(status), cudaGetErrorName(status));
  if (!context.empty()) text += fmt::format(" [{}]", context);
  return text;
}

}  // namespace

cuda_error::cuda_error(cudaError_t status, std::string_view call, std::string_view context)
    : error(describe(status, call, context)), status_(status), call_(call), context_(context) {}

namespace cuda {

int device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the "no device" status so later calls start clean
    return 0;
  }
  return count;
}

}  // namespace cuda
}  // namespace overlap
