// The planner's search space: which chunk schedules, stream counts, issue
// orders and ring depths it tries for a workload.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "overlap/core/pipeline_shape.hpp"
#include "overlap/sim/plan.hpp"

namespace overlap::sim::detail {

/// One way to cut the input into chunks.
struct Schedule {
  std::string kind;  ///< "uniform" or "ramp"
  std::vector<std::uint64_t> chunks;
  std::uint64_t largest_out = 0;  ///< largest chunk of output bytes
};

/// One configuration: a schedule run on `streams` streams.
struct Config {
  std::size_t schedule = 0;  ///< index into the schedules
  std::uint32_t streams = 1;
  issue_order order = issue_order::depth_first;
  std::uint32_t ring_depth = 1;
  std::uint64_t ring_bytes = 0;
  /// Configurations differing only in issue order and ring depth share a
  /// family: the runner-up must come from another family.
  std::size_t family = 0;
};

/// The search space, enumerated in a fixed order.
struct Space {
  std::vector<Schedule> schedules;
  std::vector<Config> configs;      ///< those within the budget
  std::size_t over_budget = 0;      ///< configurations left out by the budget
  std::uint64_t smallest_ring = 0;  ///< the smallest ring of any configuration
};

/// Throws overlap::invalid_input naming the bad workload or option field.
void validate(const Workload& workload, const PlanOptions& options);

/// Enumerates the space (workload and options already validated). Throws
/// invalid_input naming device_budget when no configuration fits it.
[[nodiscard]] Space enumerate(const Workload& workload, const PlanOptions& options);

}  // namespace overlap::sim::detail
