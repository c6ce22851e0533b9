// Pipeline's stage calibration: what the user's stage costs by chunk size,
// measured on the device and fitted as a KernelCost. Private to src/cuda.
#pragma once

#include <optional>

#include "overlap/core/kernel_cost.hpp"
#include "overlap/cuda/pipeline.hpp"

namespace overlap::cuda::detail {

/// Times `stage` on prefixes of the run's input of 256 KiB, 1, 4 and 16 MiB
/// (those the input holds, in whole units of ratio.in elements; the whole
/// input when it is smaller than 16 MiB), a few launches each queued behind
/// a held stream and timed with events, and fits a KernelCost with wave
/// candidates for the device's SM count. Empty when the input offers fewer
/// than two sizes. The stage runs on its own device buffers, with chunk
/// index 0. Throws what the stage or a CUDA call throws.
[[nodiscard]] std::optional<KernelFit> calibrate_stage(const erased_run& run, const output_ratio& ratio,
                                                       const erased_stage& stage);

}  // namespace overlap::cuda::detail
