// y = 2x + 1: the transfer-bound workload's kernel, as `overlap bench` runs it.
#include <cstddef>

#include "overlap/cuda/error.hpp"
#include "reference_kernel.hpp"

namespace overlap::python {
namespace {

__global__ void affine(const float* __restrict__ in, float* __restrict__ out, std::size_t count) {
  const std::size_t stride = static_cast<std::size_t>(blockDim.x) * gridDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    out[i] = 2.0F * in[i] + 1.0F;
  }
}

}  // namespace

void launch_reference_affine(const float* in, float* out, std::size_t count, cudaStream_t stream) {
  if (count == 0) return;
  constexpr unsigned threads = 256;
  const std::size_t wanted = (count + threads - 1) / threads;
  const unsigned blocks = static_cast<unsigned>(wanted < 4096 ? wanted : 4096);
  affine<<<blocks, threads, 0, stream>>>(in, out, count);
  cuda::check(cudaGetLastError(), "affine<<<>>>", "the reference stage");
}

}  // namespace overlap::python
