// What the multi-GPU benchmarks stream through their GPUs
// (bench/multi_gpu_pipeline.cpp, bench/multi_gpu_feed.cpp): uint32 elements
// through x -> a*x + b iterated k times (k = 1: transfer-bound; thousands:
// compute-bound), its closed form to check every element, and the host
// clock's medians.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "overlap/bench/kernels.hpp"
#include "overlap/cuda/error.hpp"

namespace multi_gpu {

using clock_type = std::chrono::steady_clock;

/// x -> a * x + b, the closed form of k iterations (overlap::bench's, as `overlap bench --devices` runs it).
using affine = overlap::bench::affine_map;
inline affine iterated(int k) {
  return overlap::bench::affine_rounds(static_cast<unsigned>(k));
}

/// Launches out[i] = k iterations on in[i] for i < n on `s` (the kernel of
/// `overlap bench --devices`), and checks the launch.
inline void launch(const std::uint32_t* in, std::uint32_t* out, std::size_t n, int k, cudaStream_t s) {
  overlap::bench::launch_affine_rounds(in, out, n, static_cast<unsigned>(k), s);
  overlap::cuda::check(cudaGetLastError(), "affine rounds launch");
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
