// What the multi-GPU benchmarks stream through their GPUs
// (bench/multi_gpu_pipeline.cu, bench/multi_gpu_feed.cu): uint32 elements
// through x -> a*x + b iterated k times (k = 1: transfer-bound; thousands:
// compute-bound), its closed form to check every element, and the host
// clock's medians.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "overlap/cuda/error.hpp"

namespace multi_gpu {

using clock_type = std::chrono::steady_clock;

constexpr std::uint32_t mul = 1664525U;
constexpr std::uint32_t add = 1013904223U;

__global__ void affine_iterate(const std::uint32_t* in, std::uint32_t* out, std::size_t n, int k) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    std::uint32_t x = in[i];
    for (int j = 0; j < k; ++j) {
      x = x * mul + add;
      // Opaque to the compiler: it may not fold several steps into one
      // (x * mul^2 + ...), so each step costs its multiply-add.
      asm volatile("" : "+r"(x));
    }
    out[i] = x;
  }
}

inline void launch(const std::uint32_t* in, std::uint32_t* out, std::size_t n, int k, cudaStream_t s) {
  if (n == 0) return;
  const auto blocks = static_cast<unsigned>(std::min<std::size_t>((n + 255) / 256, 132 * 16));
  affine_iterate<<<blocks, 256, 0, s>>>(in, out, n, k);
  overlap::cuda::check(cudaGetLastError(), "affine_iterate launch");
}

/// x -> A x + B, the closed form of k iterations.
struct affine {
  std::uint32_t a = 1;
  std::uint32_t b = 0;
};
inline affine iterated(int k) {
  affine f;
  for (int j = 0; j < k; ++j) f = {f.a * mul, f.b * mul + add};
  return f;
}

inline double ms_since(clock_type::time_point t) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t).count();
}

struct stats {
  double median = 0, min = 0, max = 0;
};
inline stats summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return {n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]), v.front(), v.back()};
}

}  // namespace multi_gpu
