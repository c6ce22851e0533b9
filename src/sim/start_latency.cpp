#include "start_latency.hpp"

namespace overlap::sim {

double start_latency(const Op& op, const DeviceModel& model, start_context context) noexcept {
  double latency = 0.0;
  if (op.kind == op_kind::kernel) {
    latency = model.kernel_launch_latency;
  } else if (op.kind == op_kind::copy || op.kind == op_kind::memset) {
    latency = model.copy_start_latency;
  }
  if (model.start_latency_hidden_when_queued && (context.waited || context.released_by_same_engine))
    return context.after_other_engine ? model.queued_handover_latency : 0.0;
  return latency;
}

}  // namespace overlap::sim
