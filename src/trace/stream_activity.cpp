// Stream activity over a whole trace (stream_activity.hpp): one pass over
// the device records by stream, and the calls that issued them.
#include "overlap/trace/stream_activity.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "intervals.hpp"

namespace overlap::trace {

namespace {

constexpr double ms_per_ns = 1e-6;

bool is_op(const DeviceWork& w) {
  return w.kind != work_kind::sync && w.stream.has_value();
}

// Calls whose ops enter a stream's queue, as HTA counts them: kernel
// launches and asynchronous copies and memsets (not graph launches).
bool enqueues(const Call& c) {
  return c.api == "cudaLaunchKernel" || c.api == "cudaLaunchKernelExC" || c.api == "cuLaunchKernel" ||
         c.api == "cudaMemcpyAsync" || c.api == "cudaMemsetAsync";
}

bool is_communication(const DeviceWork& w) {
  if (w.kind != work_kind::kernel) return false;
  std::string name = w.name;
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  return name.find("nccl") != std::string::npos;
}

using Intervals = detail::Intervals<std::uint64_t>;
using detail::intersection;
using detail::length;
using detail::merged;

}  // namespace

StreamActivity stream_activity(const RawTrace& trace, double kernel_gap_ms) {
  StreamActivity out;
  out.kernel_gap_ms = kernel_gap_ms;
  std::map<std::uint64_t, const Call*> call_of;
  for (const Call& c : trace.calls) call_of.emplace(c.corr, &c);
  const auto launching_call = [&](const DeviceWork& w) -> const Call* {
    std::uint64_t corr = w.corr;
    if (const auto a = trace.aliases.find(corr); a != trace.aliases.end()) corr = a->second;
    const auto it = call_of.find(corr);
    return it == call_of.end() ? nullptr : it->second;
  };

  std::map<std::uint32_t, std::vector<const DeviceWork*>> by_stream;
  for (const DeviceWork& w : trace.work)
    if (is_op(w)) by_stream[*w.stream].push_back(&w);

  for (auto& [stream, ops] : by_stream) {
    std::stable_sort(ops.begin(), ops.end(),
                     [](const DeviceWork* a, const DeviceWork* b) { return a->start < b->start; });
    StreamIdleTime idle;
    idle.stream = stream;
    for (std::size_t i = 1; i < ops.size(); ++i) {
      const std::uint64_t previous_end = ops[i - 1]->end;
      const double gap = (static_cast<double>(ops[i]->start) - static_cast<double>(previous_end)) * ms_per_ns;
      const Call* call = launching_call(*ops[i]);
      if (call != nullptr && call->start > previous_end) {
        idle.host_wait_ms += gap;
        ++idle.host_wait_gaps;
      } else if (gap < kernel_gap_ms) {
        idle.kernel_wait_ms += gap;
        ++idle.kernel_wait_gaps;
      } else {
        idle.other_ms += gap;
        ++idle.other_gaps;
      }
    }
    out.idle.push_back(idle);

    // The queue: +1 at each issuing call's entry, -1 at its op's start.
    std::vector<std::pair<std::uint64_t, int>> steps;
    for (const DeviceWork* w : ops) {
      const Call* call = launching_call(*w);
      if (call == nullptr || !enqueues(*call)) continue;
      steps.emplace_back(call->start, +1);
      steps.emplace_back(w->start, -1);
    }
    if (steps.empty()) continue;
    std::stable_sort(steps.begin(), steps.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    StreamQueueLength queue;
    queue.stream = stream;
    long long length_now = 0;
    double sum = 0.0;
    for (const auto& [at, change] : steps) {
      length_now += change;
      sum += static_cast<double>(length_now);
      queue.max = std::max(queue.max, static_cast<std::size_t>(std::max(0LL, length_now)));
    }
    queue.changes = steps.size();
    queue.mean = sum / static_cast<double>(steps.size());
    out.queues.push_back(queue);
  }

  Intervals communication;
  Intervals computation;
  for (const DeviceWork& w : trace.work) {
    if (!is_op(w) || w.kind != work_kind::kernel) continue;
    (is_communication(w) ? communication : computation).emplace_back(w.start, w.end);
  }
  if (!communication.empty()) {
    const Intervals comm = merged(std::move(communication));
    const std::uint64_t total = length(comm);
    if (total > 0)
      out.communication_overlap = static_cast<double>(intersection(comm, merged(std::move(computation)))) /
                                  static_cast<double>(total);
  }
  return out;
}

}  // namespace overlap::trace
