// Which engine an op occupies and how long it takes alone, under a model.
#pragma once

#include "overlap/core/device_model.hpp"
#include "overlap/core/program.hpp"
#include "overlap/core/timeline.hpp"

namespace overlap::sim {

/// The engine `op` runs on under `model` (engine::none for records and waits).
[[nodiscard]] engine engine_for(const Op& op, const DeviceModel& model) noexcept;

/// Time `op` takes on an idle device: its explicit duration, or for copies
/// and memsets latency + bytes / bandwidth from the model's curves.
[[nodiscard]] double solo_duration(const Op& op, const DeviceModel& model);

}  // namespace overlap::sim
