// The serialized-communication rule: collective kernels (NCCL's) issued on a
// stream that also runs compute kernels. A data-parallel step hides its
// gradient all-reduces under backward only when they run on a stream of
// their own; on the compute stream each collective waits for the kernels
// before it and holds back those after it, so none of its time is hidden.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "audit_detail.hpp"
#include "overlap/io/exporters.hpp"

namespace overlap::trace::detail {

std::optional<AuditFinding> find_serialized_communication(const Capture& run, const CommunicationUse& use,
                                                          const Phases& phases) {
  if (use.shared_streams.empty()) return std::nullopt;
  const std::set<std::string> shared(use.shared_streams.begin(), use.shared_streams.end());
  std::vector<op_id> ops;  // the collectives on those streams in the steady state
  for (const Span& s : run.timeline.spans) {
    if (role_of(s) != work_role::communication || s.op >= run.origin.size() ||
        s.stream >= run.timeline.streams.size() || !shared.contains(run.timeline.streams[s.stream].name) ||
        !phases.in_steady(run.origin[s.op].call_start))
      continue;
    ops.push_back(s.op);
  }
  if (ops.empty()) return std::nullopt;
  std::sort(ops.begin(), ops.end());
  // Moved to a stream of its own, a collective can hide under the compute
  // that ran meanwhile: at most the shorter of the two.
  const double hideable = std::min(use.communication_on_shared, use.compute);
  AuditFinding f;
  f.level = check::severity::warning;
  f.rule = std::string(rules::serialized_communication);
  f.count = ops.size();
  f.message = fmt::format(
      "{} collective kernel{} ({}, {} ms in the steady state) ran on the stream{} '{}', which also ran {} "
      "compute "
      "kernels: on one stream communication and compute take turns, so none of the communication hid under "
      "compute ({}% of all communication overlapped compute).",
      ops.size(), ops.size() == 1 ? "" : "s", run.program.ops()[ops.front()].label,
      io::format_number(use.communication_on_shared), use.shared_streams.size() == 1 ? "" : "s",
      fmt::join(use.shared_streams, "', '"), use.compute_kernels,
      fmt::format("{:.1f}", 100.0 * use.overlap_fraction().value_or(0.0)));
  f.fix =
      "Issue the collectives on a stream of their own, ordered after the gradients they read by an event "
      "(PyTorch: an asynchronous collective, async_op=True, or DDP's default all-reduce instead of a "
      "communication hook that all-reduces synchronously; NCCL: its own cudaStream_t with "
      "cudaStreamWaitEvent).";
  f.ops = audit_ops(run, ops);
  for (const AuditOp& op : f.ops) f.instances.push_back({{op}, op.text});
  f.streams = use.shared_streams;
  f.measured = MeasuredCost{use.communication_on_shared,
                            fmt::format("{} ms of collectives in the steady state ran on a compute stream",
                                        io::format_number(use.communication_on_shared)),
                            ops.size()};
  f.predicted_saving = hideable;
  return f;
}

}  // namespace overlap::trace::detail
