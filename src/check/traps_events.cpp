// Rule (g): a wait on an event that was never recorded before it. CUDA
// treats cudaStreamWaitEvent and cudaEventSynchronize on such an event as
// no-ops, so the ordering the program asks for does not exist.
#include <fmt/format.h>

#include <optional>

#include "trap_context.hpp"

namespace overlap::check::detail {

void find_unrecorded_events(TrapContext& context, std::vector<Finding>& findings) {
  const Program& p = context.program();
  std::vector<std::optional<op_id>> first_record(p.events().size());
  for (op_id i = 0; i < p.ops().size(); ++i) {
    const Op& op = p.ops()[i];
    if (op.kind == op_kind::event_record && !first_record[*op.event]) first_record[*op.event] = i;
  }
  for (op_id i = 0; i < p.ops().size(); ++i) {
    const Op& op = p.ops()[i];
    if (op.kind != op_kind::stream_wait_event && op.kind != op_kind::event_synchronize) continue;
    const std::optional<op_id> record = first_record[*op.event];
    if (record && *record < i) continue;
    const std::string& event = p.events()[*op.event];
    Finding f;
    f.level = severity::warning;
    f.rule = std::string(rules::unrecorded_event);
    f.message = fmt::format(
        "{} waits on event {}, which has not been recorded before it: CUDA treats the {} as "
        "a no-op, so it orders nothing.",
        describe_op(p, i), event,
        op.kind == op_kind::stream_wait_event ? "cudaStreamWaitEvent" : "cudaEventSynchronize");
    f.ops.push_back(op_ref(p, i));
    if (record) {
      f.fix = fmt::format(
          "Its first cudaEventRecord is ops[{}], issued after the wait: issue the wait after it.", *record);
      f.ops.push_back(op_ref(p, *record));
    } else {
      f.fix = fmt::format(
          "Record {} (cudaEventRecord) on the stream whose work must come first, before the wait; "
          "or remove the wait.",
          event);
    }
    for (const OpRef& ref : f.ops) {
      if (ref.stream) f.streams.push_back(*ref.stream);
    }
    f.time_lost = 0.0;  // a no-op costs nothing; what it fails to order is the danger
    findings.push_back(std::move(f));
  }
}

}  // namespace overlap::check::detail
