// What `overlap plan` prints: the planner's answer as text for a person or
// as JSON for a script.
#pragma once

#include <cstddef>
#include <string>

#include "overlap/core/device_model.hpp"
#include "overlap/sim/plan.hpp"

namespace overlap::cli {

/// Best configuration, predicted time, floor and ratio, the bound engine and
/// why, the runner-up and why it lost, the `top` best, and the search's counts.
[[nodiscard]] std::string plan_text(const sim::Plan& plan, const sim::Workload& workload,
                                    const DeviceModel& model, std::size_t top);

/// The same as a JSON object (indented, one trailing newline).
[[nodiscard]] std::string plan_json(const sim::Plan& plan, const sim::Workload& workload,
                                    const DeviceModel& model, std::size_t top);

}  // namespace overlap::cli
