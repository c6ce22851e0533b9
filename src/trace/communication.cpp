// Communication against compute on one process's GPU (communication.hpp).
#include "overlap/trace/communication.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "intervals.hpp"

namespace overlap::trace {

namespace {

using Interval = std::pair<double, double>;
using detail::intersection;
using detail::length;
using detail::merged;

}  // namespace

bool is_communication_kernel(std::string_view name) noexcept {
  return name.starts_with("nccl") || name.find("ncclKernel") != std::string_view::npos;
}

work_role role_of(const Span& span) noexcept {
  switch (span.kind) {
    case op_kind::kernel:
      return is_communication_kernel(span.label) ? work_role::communication : work_role::compute;
    case op_kind::copy:
    case op_kind::memset: return work_role::memory;
    default: return work_role::other;
  }
}

std::optional<double> CommunicationUse::overlap_fraction() const noexcept {
  if (communication <= 0.0) return std::nullopt;
  return overlapped / communication;
}

double CommunicationUse::idle_fraction() const noexcept {
  return span > 0.0 ? idle() / span : 0.0;
}

CommunicationUse communication_use(const Capture& run, double window_start, double window_end) {
  CommunicationUse use;
  use.window_start = window_start;
  use.window_end = window_end;
  std::vector<Interval> communication;
  std::vector<Interval> compute;
  std::vector<Interval> all;
  std::map<stream_id, std::pair<bool, bool>> stream_roles;  // ran communication, ran compute
  std::map<stream_id, std::vector<Interval>> communication_by_stream;
  for (const Span& s : run.timeline.spans) {
    const work_role role = role_of(s);
    if (role == work_role::other || s.op >= run.origin.size()) continue;
    const double issued = run.origin[s.op].call_start;
    if (issued < window_start || issued > window_end) continue;
    all.emplace_back(s.start, s.end);
    if (role == work_role::communication) {
      ++use.communication_kernels;
      communication.emplace_back(s.start, s.end);
      communication_by_stream[s.stream].emplace_back(s.start, s.end);
      stream_roles[s.stream].first = true;
    } else if (role == work_role::compute) {
      ++use.compute_kernels;
      compute.emplace_back(s.start, s.end);
      stream_roles[s.stream].second = true;
    }
  }
  const std::vector<Interval> communication_merged = merged(std::move(communication));
  const std::vector<Interval> compute_merged = merged(std::move(compute));
  const std::vector<Interval> all_merged = merged(std::move(all));
  use.communication = length(communication_merged);
  use.compute = length(compute_merged);
  use.overlapped = intersection(communication_merged, compute_merged);
  use.busy = length(all_merged);
  if (!all_merged.empty()) use.span = all_merged.back().second - all_merged.front().first;
  std::vector<Interval> on_shared;
  for (const auto& [stream, roles] : stream_roles) {
    if (!roles.first || !roles.second) continue;
    use.shared_streams.push_back(stream < run.timeline.streams.size() ? run.timeline.streams[stream].name
                                                                      : "stream " + std::to_string(stream));
    const auto& intervals = communication_by_stream[stream];
    on_shared.insert(on_shared.end(), intervals.begin(), intervals.end());
  }
  use.communication_on_shared = length(merged(std::move(on_shared)));
  return use;
}

}  // namespace overlap::trace
