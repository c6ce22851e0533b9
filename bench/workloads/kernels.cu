// The workload kernels and their launchers.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "overlap/cuda/error.hpp"
#include "workloads/kernels.hpp"

namespace overlap::bench {

namespace {

__global__ void affine_kernel(const float* __restrict__ in, float* __restrict__ out, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(blockDim.x) * gridDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = 2.0F * in[i] + 1.0F;
  }
}

__global__ void sincos_kernel(const float* __restrict__ in, float* __restrict__ out, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(blockDim.x) * gridDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    float value = in[i];
    for (int k = 0; k < sincos_iterations; ++k) value = sinf(value) * cosf(value) + value;
    out[i] = value;
  }
}

// One thread per element up to a grid of 2^20 blocks; the loop covers the rest.
unsigned blocks_for(std::size_t n) {
  const std::size_t wanted = (n + threads_per_block - 1) / threads_per_block;
  return static_cast<unsigned>(std::clamp<std::size_t>(wanted, 1, std::size_t{1} << 20));
}

}  // namespace

void launch_affine(const float* in, float* out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  affine_kernel<<<blocks_for(n), threads_per_block, 0, stream>>>(in, out, n);
  cuda::check(cudaGetLastError(), "affine_kernel<<<>>>");
}

void launch_sincos(const float* in, float* out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  sincos_kernel<<<blocks_for(n), threads_per_block, 0, stream>>>(in, out, n);
  cuda::check(cudaGetLastError(), "sincos_kernel<<<>>>");
}

float sincos_reference(float x) noexcept {
  float value = x;
  for (int k = 0; k < sincos_iterations; ++k) value = std::sin(value) * std::cos(value) + value;
  return value;
}

}  // namespace overlap::bench
