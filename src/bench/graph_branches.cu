// The device code of `overlap bench`'s Graph rows (issue 13): the branch
// kernel (an LCG step and an xorshift per round, many rounds per element:
// latency-bound integer work, so a kernel of few blocks takes its time on
// few SMs and leaves the rest to other branches) and the tiny node (one
// thread, a handful of loads: nothing but its launch). Each formula is one
// __host__ __device__ function, so the host's reference is the same code.
#include <cstddef>
#include <cstdint>

#include "graph_kernels.hpp"
#include "overlap/cuda/error.hpp"

namespace overlap::bench::detail {

namespace {

__host__ __device__ inline std::uint32_t branch_round(std::uint32_t x, std::uint32_t salt) {
  x = x * 1664525U + (1013904223U ^ salt);
  return x ^ (x >> 13);
}

__host__ __device__ inline std::uint32_t branch_rounds(std::uint32_t x, unsigned iterations,
                                                       std::uint32_t salt) {
  for (unsigned k = 0; k < iterations; ++k) x = branch_round(x, salt);
  return x;
}

// murmur3's finalizer: every bit of the sum reaches every bit of the result.
__host__ __device__ inline std::uint32_t tiny_mix(std::uint32_t sum, std::uint32_t salt) {
  std::uint32_t h = sum ^ salt;
  h ^= h >> 16;
  h *= 0x85ebca6bU;
  h ^= h >> 13;
  h *= 0xc2b2ae35U;
  return h ^ (h >> 16);
}

__global__ void branch_step_kernel(std::uint32_t* __restrict__ data, std::size_t n, unsigned iterations,
                                   std::uint32_t salt) {
  const std::size_t stride = static_cast<std::size_t>(blockDim.x) * gridDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    data[i] = branch_rounds(data[i], iterations, salt);
  }
}

__global__ void tiny_node_kernel(const std::uint32_t* __restrict__ in, std::uint32_t count,
                                 std::uint32_t* __restrict__ out, std::uint32_t salt) {
  std::uint32_t sum = 0;
  for (std::uint32_t i = 0; i < count; ++i) sum += in[i];
  *out = tiny_mix(sum, salt);
}

}  // namespace

void launch_branch_step(std::uint32_t* data, std::size_t n, unsigned iterations, std::uint32_t salt,
                        unsigned blocks, cudaStream_t stream) {
  if (n == 0) return;
  branch_step_kernel<<<blocks, branch_threads, 0, stream>>>(data, n, iterations, salt);
  cuda::check(cudaGetLastError(), "branch_step_kernel<<<>>>");
}

std::uint32_t branch_step_reference(std::uint32_t value, unsigned iterations, std::uint32_t salt) noexcept {
  return branch_rounds(value, iterations, salt);
}

void launch_tiny_node(const std::uint32_t* in, std::uint32_t count, std::uint32_t* out, std::uint32_t salt,
                      cudaStream_t stream) {
  tiny_node_kernel<<<1, 1, 0, stream>>>(in, count, out, salt);
  cuda::check(cudaGetLastError(), "tiny_node_kernel<<<>>>");
}

std::uint32_t tiny_node_reference(const std::uint32_t* in, std::uint32_t count, std::uint32_t salt) noexcept {
  std::uint32_t sum = 0;
  for (std::uint32_t i = 0; i < count; ++i) sum += in[i];
  return tiny_mix(sum, salt);
}

}  // namespace overlap::bench::detail
