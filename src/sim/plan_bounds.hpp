// Closed-form bounds for the planner: the floor of a workload, and a lower
// bound on one configuration's simulated time, cheap enough to compute for
// every configuration so that most need no simulation.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "overlap/core/device_model.hpp"
#include "overlap/core/kernel_cost.hpp"
#include "overlap/sim/plan.hpp"

namespace overlap::sim::detail {

/// Per-chunk solo times of one schedule, as the simulator prices them alone.
struct ChunkCosts {
  std::vector<double> h2d;
  std::vector<double> kernel;  ///< empty entries (0) when there is no kernel
  /// Each kernel's SM work: its time x the share of the SMs it keeps busy
  /// (a curve's fixed part and partial wave leave SMs to other streams).
  std::vector<double> kernel_sm;
  std::vector<double> d2h;     ///< 0 when there is no output
  double issue_ms = 0.0;       ///< host time to issue every call, the final synchronize included
  double last_issue_ms = 0.0;  ///< host time until the last stream op is issued
  /// The least slowdown any of these copies takes while the other direction
  /// runs (the model's by-size curve at the chunks' sizes).
  double h2d_slowdown = 1.0;
  double d2h_slowdown = 1.0;
};

/// Prices `chunks` (input bytes per chunk) of `workload` on `model`.
[[nodiscard]] ChunkCosts chunk_costs(const std::vector<std::uint64_t>& chunks, const Workload& workload,
                                     const std::optional<KernelCost>& kernel, const DeviceModel& model);

/// A time the simulated run on `streams` streams cannot beat: the largest of
/// each engine's total work, the busiest stream's serial work, the host's
/// issue time plus the last op, and the pipeline's fill and drain (the last
/// upload's kernel and download, the first chunk's upload and kernel before
/// any download). Start latencies and the bidirectional slowdown only add
/// time, so they are left out.
[[nodiscard]] double lower_bound(const ChunkCosts& costs, std::uint32_t streams, const DeviceModel& model);

/// The workload's floor on `model` (see PlanFloor).
[[nodiscard]] PlanFloor floor_of(const Workload& workload, const std::optional<KernelCost>& kernel,
                                 const DeviceModel& model);

/// The floor on `devices` GPUs of `model` (see PlanFloor); floor_of above for one.
[[nodiscard]] PlanFloor floor_of(const Workload& workload, const std::optional<KernelCost>& kernel,
                                 const DeviceModel& model, std::uint32_t devices);

}  // namespace overlap::sim::detail
