// The two kernels of docs/hardware.md's workloads, launchable from host C++, and
// the host computations their outputs are checked against.
//
//   affine: y = 2x + 1 (transfer-bound: one read, one write per element)
//   sincos: v = sinf(v) * cosf(v) + v, 100 times (compute-bound)
//   affine rounds: uint32 x -> a * x + b iterated k times (the several-GPU
//   jobs of `overlap bench --devices`: k = 1 transfer-bound, thousands
//   compute-bound; exact, checked against the closed form)
//
// Both are grid-stride loops of 256-thread blocks, launched on the given
// stream; a launch error throws overlap::cuda_error. Each is defined with its
// workload: src/bench/transfer_bound.cu, src/bench/compute_bound.cu and
// src/bench/affine_rounds.cu.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

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

/// The affine rounds' multiplier and increment (Knuth's LCG: every round changes every bit).
inline constexpr std::uint32_t affine_mul = 1664525U;
inline constexpr std::uint32_t affine_add = 1013904223U;

/// x -> a * x + b (mod 2^32).
struct affine_map {
  std::uint32_t a = 1;  ///< multiplier
  std::uint32_t b = 0;  ///< increment
  /// The map applied to x.
  [[nodiscard]] constexpr std::uint32_t operator()(std::uint32_t x) const noexcept { return a * x + b; }
};

/// The closed form of `rounds` steps of x -> affine_mul * x + affine_add.
[[nodiscard]] constexpr affine_map affine_rounds(unsigned rounds) noexcept {
  affine_map f;
  for (unsigned r = 0; r < rounds; ++r) f = {f.a * affine_mul, f.b * affine_mul + affine_add};
  return f;
}

/// out[i] = `rounds` steps of in[i] for i < n, on `stream` (nothing for n =
/// 0), in one full wave of blocks of the current GPU with a grid-stride loop.
void launch_affine_rounds(const std::uint32_t* in, std::uint32_t* out, std::size_t n, unsigned rounds,
                          cudaStream_t stream);

}  // namespace overlap::bench
