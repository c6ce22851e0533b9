// The kernels of first_launch.cu's "other module" case: this file is a
// module of its own when compiled without -rdc.
#include <cstddef>
#include <cstdint>
template <int I>
__global__ void side_kernel(const std::uint32_t* x, std::uint32_t* y, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    y[i] = x[i] * static_cast<std::uint32_t>(I + 2) + 1U;
}
void launch_side(int i, const std::uint32_t* x, std::uint32_t* y, std::size_t n, cudaStream_t s) {
  switch (i) {
    case 0: side_kernel<0><<<16, 256, 0, s>>>(x, y, n); break;
    case 1: side_kernel<1><<<16, 256, 0, s>>>(x, y, n); break;
    case 2: side_kernel<2><<<16, 256, 0, s>>>(x, y, n); break;
    case 3: side_kernel<3><<<16, 256, 0, s>>>(x, y, n); break;
    default: side_kernel<4><<<16, 256, 0, s>>>(x, y, n); break;
  }
}
