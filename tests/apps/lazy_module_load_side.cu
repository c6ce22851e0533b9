// The side kernel of app_lazy_module_load, in a translation unit of its own:
// compiled without relocatable device code, it is a module of its own, which
// lazy loading loads at its kernel's first launch (a function of a module
// already loaded is ready at once: measured on an H100, 0.06 ms against
// 1.9 ms for another module's, with a kernel running).
// It cannot include app_support.hpp, whose kernels would then be defined in
// two translation units: its calls return their status to the caller.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace {

/// y = 3x + 1.
__global__ void side_kernel(const std::uint32_t* x, std::uint32_t* y, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    y[i] = x[i] * 3U + 1U;
}

}  // namespace

cudaError_t launch_side(const std::uint32_t* x, std::uint32_t* y, std::size_t n, cudaStream_t stream) {
  side_kernel<<<16, 256, 0, stream>>>(x, y, n);
  return cudaGetLastError();
}

cudaError_t load_side() {
  cudaFuncAttributes attributes{};
  return cudaFuncGetAttributes(&attributes, side_kernel);
}
