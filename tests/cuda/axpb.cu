#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "axpb.hpp"
#include "gpu_test_support.hpp"
#include "overlap/cuda/error.hpp"

namespace overlap_test {

namespace {

__global__ void axpb_kernel(const float* in, float* out, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x)
    out[i] = in[i] * 2.0F + 1.0F;
}

__global__ void sum_of_four_kernel(const std::uint32_t* in, std::uint32_t* out, std::size_t n_out) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n_out;
       i += std::size_t{gridDim.x} * blockDim.x)
    out[i] = in[4 * i] + in[4 * i + 1] + in[4 * i + 2] + in[4 * i + 3];
}

}  // namespace

void launch_sum_of_four(std::span<const std::uint32_t> in, std::span<std::uint32_t> out,
                        overlap::cuda::stream_view stream) {
  sum_of_four_kernel<<<blocks_for(out.size()), threads_per_block, 0, stream.get()>>>(in.data(), out.data(),
                                                                                     out.size());
  overlap::cuda::check(cudaGetLastError(), "sum_of_four_kernel launch");
}

void launch_axpb(std::span<const float> in, std::span<float> out, overlap::cuda::stream_view stream) {
  launch_axpb_unchecked(in, out, stream, blocks_for(in.size()), threads_per_block);
  overlap::cuda::check(cudaGetLastError(), "axpb_kernel launch");
}

void launch_axpb_unchecked(std::span<const float> in, std::span<float> out, overlap::cuda::stream_view stream,
                           unsigned blocks, unsigned threads) {
  axpb_kernel<<<blocks, threads, 0, stream.get()>>>(in.data(), out.data(), in.size());
}

std::vector<float> axpb_reference(std::span<const float> input) {
  std::vector<float> expected(input.size());
  for (std::size_t i = 0; i < input.size(); ++i) expected[i] = input[i] * 2.0F + 1.0F;
  return expected;
}

}  // namespace overlap_test
