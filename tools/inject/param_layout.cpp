// Parameter sizes from the driver: see param_layout.hpp.
#include "param_layout.hpp"

#include <cstddef>

namespace overlap::inject {

namespace {

/// Far more parameters than a kernel can take (4 KiB of arguments at most).
constexpr std::size_t max_params = 4096;

}  // namespace

std::vector<std::uint32_t> read_param_layout(CUfunction function, CUresult& failure) {
  failure = CUDA_SUCCESS;
  std::vector<std::uint32_t> layout;
  std::size_t offset = 0;
  std::size_t size = 0;
  CUresult first = cuFuncGetParamInfo(function, 0, &offset, &size);
  bool as_kernel = false;
  if (first != CUDA_SUCCESS) {
    // Either a kernel without parameters or a CUkernel handle.
    auto* const kernel = reinterpret_cast<CUkernel>(function);
    if (cuKernelGetParamInfo(kernel, 0, &offset, &size) == CUDA_SUCCESS) {
      as_kernel = true;
      first = CUDA_SUCCESS;
    }
  }
  if (first != CUDA_SUCCESS) {
    if (first != CUDA_ERROR_INVALID_VALUE) failure = first;
    return layout;
  }
  layout.push_back(static_cast<std::uint32_t>(size));
  for (std::size_t i = 1; i < max_params; ++i) {
    const CUresult result =
        as_kernel ? cuKernelGetParamInfo(reinterpret_cast<CUkernel>(function), i, &offset, &size)
                  : cuFuncGetParamInfo(function, i, &offset, &size);
    if (result != CUDA_SUCCESS) break;
    layout.push_back(static_cast<std::uint32_t>(size));
  }
  return layout;
}

}  // namespace overlap::inject
