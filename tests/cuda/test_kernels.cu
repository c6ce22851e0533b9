#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "gpu_test_support.hpp"
#include "test_kernels.hpp"

namespace overlap_test {

namespace {

__device__ std::uint64_t global_ns() {
  std::uint64_t t = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ std::size_t first_index() {
  return blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
}

__device__ std::size_t grid_stride() {
  return std::size_t{gridDim.x} * blockDim.x;
}

__global__ void slow_axpb_kernel(const float* in, float* out, std::size_t n, long long us) {
  const std::uint64_t until = global_ns() + static_cast<std::uint64_t>(us) * 1000U;
  while (global_ns() < until) {
  }
  for (std::size_t i = first_index(); i < n; i += grid_stride()) out[i] = 2.0F * in[i] + 1.0F;
}

__global__ void wait_for_gate_then_write_kernel(const volatile int* gate, int* out, int value) {
  const long long give_up = clock64() + 20'000'000'000LL;
  while (*gate == 0) {
    if (clock64() > give_up) {
      *out = -1;
      return;
    }
  }
  *out = value;
}

__global__ void fill_kernel(int* out, std::size_t n, int value) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) out[i] = value;
}

__global__ void sum_of_four_doubles_kernel(const double* in, double* out, std::size_t outputs) {
  for (std::size_t i = first_index(); i < outputs; i += grid_stride())
    out[i] = ((in[4 * i] + in[4 * i + 1]) + in[4 * i + 2]) + in[4 * i + 3];
}

__global__ void affine_u32_kernel(const std::uint32_t* in, std::uint32_t* out, std::size_t n, std::uint32_t a,
                                  std::uint32_t b) {
  for (std::size_t i = first_index(); i < n; i += grid_stride()) out[i] = in[i] * a + b;
}

__global__ void combine_kernel(const std::uint32_t* x, const std::uint32_t* y, std::uint32_t* out,
                               std::size_t n, bool multiply) {
  for (std::size_t i = first_index(); i < n; i += grid_stride())
    out[i] = multiply ? x[i] * y[i] : x[i] + y[i];
}

constexpr unsigned reduce_threads = 256;

__global__ void reduce_kernel(const std::uint32_t* x, const std::uint32_t* y, std::uint32_t* out,
                              std::size_t n) {
  __shared__ std::uint32_t partial[reduce_threads];
  std::uint32_t sum = 0;
  for (std::size_t i = threadIdx.x; i < n; i += blockDim.x) sum += x[i] ^ (y[i] * 3U);
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = partial[0];
}

__global__ void rows_kernel(const std::uint32_t* in, std::uint32_t* out, std::size_t cols, std::size_t first,
                            std::size_t last, bool boundary) {
  const std::size_t n = (last - first) * cols;
  for (std::size_t k = first_index(); k < n; k += grid_stride()) {
    const std::size_t i = first * cols + k;
    std::uint32_t v = in[i] * 2U + 1U;
    if (boundary) v += out[(first - 1) * cols + k % cols];
    out[i] = v;
  }
}

__global__ void spin_kernel(std::uint32_t* out, unsigned long long ns, std::uint32_t value) {
  const std::uint64_t start = global_ns();
  while (global_ns() - start < ns) {
  }
  if (threadIdx.x == 0) out[0] = value;
}

}  // namespace

void launch_slow_axpb(const float* in, float* out, std::size_t n, long long us, unsigned blocks,
                      unsigned threads, overlap::cuda::stream_view stream) {
  slow_axpb_kernel<<<blocks, threads, 0, stream.get()>>>(in, out, n, us);
}

void launch_wait_for_gate_then_write(const volatile int* gate, int* out, int value,
                                     overlap::cuda::stream_view stream) {
  wait_for_gate_then_write_kernel<<<1, 1, 0, stream.get()>>>(gate, out, value);
}

void launch_fill(int* out, std::size_t n, int value, overlap::cuda::stream_view stream) {
  fill_kernel<<<blocks_for(n), threads_per_block, 0, stream.get()>>>(out, n, value);
}

void launch_sum_of_four_doubles(const double* in, double* out, std::size_t outputs,
                                overlap::cuda::stream_view stream) {
  sum_of_four_doubles_kernel<<<blocks_for(outputs), threads_per_block, 0, stream.get()>>>(in, out, outputs);
}

void launch_affine_u32(const std::uint32_t* in, std::uint32_t* out, std::size_t n, std::uint32_t a,
                       std::uint32_t b, unsigned blocks, overlap::cuda::stream_view stream) {
  affine_u32_kernel<<<blocks, threads_per_block, 0, stream.get()>>>(in, out, n, a, b);
}

void launch_combine(const std::uint32_t* x, const std::uint32_t* y, std::uint32_t* out, std::size_t n,
                    combine_op op, overlap::cuda::stream_view stream) {
  combine_kernel<<<blocks_for(n), threads_per_block, 0, stream.get()>>>(x, y, out, n,
                                                                        op == combine_op::multiply);
}

void launch_reduce(const std::uint32_t* x, const std::uint32_t* y, std::uint32_t* out, std::size_t n,
                   overlap::cuda::stream_view stream) {
  reduce_kernel<<<1, reduce_threads, 0, stream.get()>>>(x, y, out, n);
}

void launch_rows(const std::uint32_t* in, std::uint32_t* out, std::size_t cols, std::size_t first,
                 std::size_t last, row_boundary boundary, overlap::cuda::stream_view stream) {
  rows_kernel<<<blocks_for((last - first) * cols), threads_per_block, 0, stream.get()>>>(
      in, out, cols, first, last, boundary == row_boundary::add_row_above);
}

void launch_spin(std::uint32_t* out, unsigned long long ns, std::uint32_t value,
                 overlap::cuda::stream_view stream) {
  spin_kernel<<<1, 32, 0, stream.get()>>>(out, ns, value);
}

}  // namespace overlap_test
