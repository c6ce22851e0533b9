// The compute-bound workload of docs/hardware.md: v = sinf(v) * cosf(v) + v,
// sincos_iterations times per element, over random floats in the seed's
// range [0, elements). Its floor is the kernel alone. The device's sinf/cosf
// differ from the host's by a few ulp, so the check has a tolerance.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>

#include "launch_grid.hpp"
#include "overlap/bench/kernels.hpp"
#include "overlap/cuda/error.hpp"
#include "random_fill.hpp"
#include "workload.hpp"

namespace overlap::bench {

namespace {

__global__ void sincos_kernel(const float* __restrict__ in, float* __restrict__ out, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(blockDim.x) * gridDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    float value = in[i];
    for (int k = 0; k < sincos_iterations; ++k) value = sinf(value) * cosf(value) + value;
    out[i] = value;
  }
}

// The seed's range (its input is 0, 1, ..., N-1), drawn at random. Most
// values are past 105615, where sinf takes its slow argument reduction: that
// is what makes this kernel compute-bound (docs/hardware.md's 6 ms); small inputs
// would make it 9x faster and copy-bound. The seed is varied so the two
// workloads' inputs differ.
void fill_input(std::span<float> input, std::uint64_t seed) {
  detail::fill_random(input, seed ^ 0x5eedULL, 0.0F, static_cast<float>(input.size()));
}

}  // namespace

void launch_sincos(const float* in, float* out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  sincos_kernel<<<detail::blocks_for(n), threads_per_block, 0, stream>>>(in, out, n);
  cuda::check(cudaGetLastError(), "sincos_kernel<<<>>>");
}

float sincos_reference(float x) noexcept {
  float value = x;
  for (int k = 0; k < sincos_iterations; ++k) value = std::sin(value) * std::cos(value) + value;
  return value;
}

const detail::workload_definition& detail::compute_bound_workload() noexcept {
  // The results agree far inside this (the iteration converges); NaN fails.
  static const workload_definition definition{workload_kind::compute_bound, fill_input, sincos_reference,
                                              launch_sincos, tolerance{1e-4F, 1e-5F}};
  return definition;
}

}  // namespace overlap::bench
