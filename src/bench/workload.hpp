// What the shared measuring machinery needs from one workload: how to make
// its input, its kernel, and how its output is checked. Each workload's file
// (transfer_bound.cu, compute_bound.cu) defines one. Private to src/bench.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "overlap/bench/driver.hpp"

namespace overlap::bench::detail {

/// How far a device result may be from the host's reference and still pass:
/// |got - want| <= relative * |want| + absolute. Zero for both is exact
/// equality; NaN never passes.
struct tolerance {
  float relative = 0.0F;  ///< of the reference's magnitude
  float absolute = 0.0F;  ///< added to it
};

/// One workload, as the driver runs it.
struct workload_definition {
  workload_kind kind = workload_kind::transfer_bound;  ///< which workload this is
  /// Fills `input` with the workload's random data for `seed`.
  void (*fill_input)(std::span<float> input, std::uint64_t seed) = nullptr;
  /// The host's result for one input element.
  float (*reference)(float input) = nullptr;
  /// Launches the kernel over `n` elements on `stream`; throws cuda_error.
  void (*launch)(const float* in, float* out, std::size_t n, cudaStream_t stream) = nullptr;
  tolerance allowed;  ///< how the output is compared with the reference
};

/// y = 2x + 1 over random floats (transfer_bound.cu).
[[nodiscard]] const workload_definition& transfer_bound_workload() noexcept;
/// sin/cos iterated over random floats in the seed's range (compute_bound.cu).
[[nodiscard]] const workload_definition& compute_bound_workload() noexcept;

/// The definition of `kind`.
[[nodiscard]] inline const workload_definition& definition_of(workload_kind kind) noexcept {
  return kind == workload_kind::transfer_bound ? transfer_bound_workload() : compute_bound_workload();
}

/// Whether `got` passes for `want` under `allowed`.
[[nodiscard]] inline bool within(float got, float want, tolerance allowed) noexcept {
  const float difference = got > want ? got - want : want - got;  // NaN on either side: false below
  return difference <= allowed.relative * (want < 0.0F ? -want : want) + allowed.absolute;
}

}  // namespace overlap::bench::detail
