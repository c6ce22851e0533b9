// The transfer-bound workload of docs/hardware.md: y = 2x + 1 over random floats
// in [-1000, 1000). One read and one write per element, so the copies bound
// it; its floor is the link's (link_floor.hpp). The check is exact: 2x is
// exact, so the device's fused multiply-add rounds once, as the host's add does.
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

__global__ void affine_kernel(const float* __restrict__ in, float* __restrict__ out, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(blockDim.x) * gridDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = 2.0F * in[i] + 1.0F;
  }
}

void fill_input(std::span<float> input, std::uint64_t seed) {
  detail::fill_random(input, seed, -1000.0F, 1000.0F);
}

float reference(float input) {
  return affine_reference(input);
}

}  // namespace

void launch_affine(const float* in, float* out, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  affine_kernel<<<detail::blocks_for(n), threads_per_block, 0, stream>>>(in, out, n);
  cuda::check(cudaGetLastError(), "affine_kernel<<<>>>");
}

const detail::workload_definition& detail::transfer_bound_workload() noexcept {
  static const workload_definition definition{workload_kind::transfer_bound, fill_input, reference,
                                              launch_affine, tolerance{}};
  return definition;
}

}  // namespace overlap::bench
