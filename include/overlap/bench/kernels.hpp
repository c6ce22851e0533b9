// The two kernels of docs/hardware.md's workloads, launchable from host C++, and
// the host computations their outputs are checked against.
//
//   affine: y = 2x + 1 (transfer-bound: one read, one write per element)
//   sincos: v = sinf(v) * cosf(v) + v, 100 times (compute-bound)
//
// Both are grid-stride loops of 256-thread blocks, launched on the given
// stream; a launch error throws overlap::cuda_error. Each is defined with its
// workload: src/bench/transfer_bound.cu and src/bench/compute_bound.cu.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace overlap::bench {

/// Threads per block of every workload kernel.
inline constexpr unsigned threads_per_block = 256;
/// Iterations of the sin/cos kernel.
inline constexpr int sincos_iterations = 100;

/// out[i] = 2 * in[i] + 1 for i < n, on `stream`.
void launch_affine(const float* in, float* out, std::size_t n, cudaStream_t stream);
/// out[i] = in[i] after sincos_iterations of v = sinf(v) * cosf(v) + v, on `stream`.
void launch_sincos(const float* in, float* out, std::size_t n, cudaStream_t stream);

/// The host's y = 2x + 1: bit-identical to the device's (2x is exact, so
/// the device's fused multiply-add rounds once, as the host's add does).
[[nodiscard]] inline float affine_reference(float x) noexcept {
  return 2.0F * x + 1.0F;
}
/// The host's sin/cos iteration in float; the device's sinf/cosf differ by
/// a few ulp, so compare with a tolerance.
[[nodiscard]] float sincos_reference(float x) noexcept;

}  // namespace overlap::bench
