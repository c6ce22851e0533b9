#include "overlap/check/traps.hpp"

#include <algorithm>

#include "trap_context.hpp"

namespace overlap::check {

std::vector<Finding> find_traps(const Program& program, const DeviceModel& model,
                                const TrapOptions& options) {
  model.validate();  // a bad model is bad input even when no rule needs to simulate
  detail::TrapContext context(program, model, options);
  std::vector<Finding> findings;
  detail::find_legacy_default_stream(context, findings);
  detail::find_pageable_async_copies(context, findings);
  detail::find_implicit_synchronization(context, findings);
  detail::find_device_synchronize(context, findings);
  detail::find_copy_engine_serialization(context, findings);
  detail::find_hardware_queue_sharing(context, findings);
  detail::find_unrecorded_events(context, findings);
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    if (a.level != b.level) return a.level > b.level;
    const op_id first_a = a.ops.empty() ? 0 : a.ops.front().id;
    const op_id first_b = b.ops.empty() ? 0 : b.ops.front().id;
    return first_a < first_b;
  });
  return findings;
}

}  // namespace overlap::check
