// The host side of a trace that the Program does not model op by op: call
// order, threads, polls and profiler marks (see capture_threads.hpp).
#include "capture_threads.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace overlap::trace::detail {

namespace {

double ms_from(std::uint64_t ns, std::uint64_t t0) {
  return static_cast<double>(ns - std::min(ns, t0)) * 1e-6;
}

}  // namespace

bool is_query(const Call& call) noexcept {
  return call.api == "cudaEventQuery" || call.api == "cudaStreamQuery" || call.api == "cuEventQuery" ||
         call.api == "cuStreamQuery";
}

bool is_not_ready_poll(const Call& call) noexcept {
  return call.status == status_not_ready && is_query(call);
}

std::vector<std::size_t> host_order(const RawTrace& trace) {
  std::vector<std::size_t> order;
  order.reserve(trace.calls.size());
  for (std::size_t i = 0; i < trace.calls.size(); ++i) {
    // A poll that found work running is the host waiting, which the
    // timeline shows; any other failed call did nothing.
    if (trace.calls[i].status == 0 || is_not_ready_poll(trace.calls[i])) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return trace.calls[a].start < trace.calls[b].start; });
  return order;
}

std::size_t failed_calls(const RawTrace& trace) {
  return static_cast<std::size_t>(std::count_if(trace.calls.begin(), trace.calls.end(), [](const Call& c) {
    return c.status != 0 && !is_not_ready_poll(c);
  }));
}

HostThreads::HostThreads(const RawTrace& trace, const std::vector<std::size_t>& order) {
  for (const std::size_t i : order) {
    const std::uint64_t tid = trace.calls[i].tid;
    if (index_.try_emplace(tid, tids_.size()).second) tids_.push_back(tid);
  }
}

std::size_t HostThreads::index(std::uint64_t tid) const {
  const auto it = index_.find(tid);
  return it == index_.end() ? 0 : it->second;
}

std::vector<std::string> HostThreads::names() const {
  if (tids_.size() <= 1) return {"host"};
  std::vector<std::string> names;
  names.reserve(tids_.size());
  for (std::size_t i = 0; i < tids_.size(); ++i)
    names.push_back(fmt::format("host thread {} (tid {})", i + 1, tids_[i]));
  return names;
}

std::vector<CapturedRange> profiler_ranges(const RawTrace& trace, const std::vector<std::size_t>& order,
                                           std::uint64_t t0) {
  std::vector<CapturedRange> ranges;
  bool on = false;  // a plain flag: GCC 12 warns on an optional<double> here
  double started = 0.0;
  double last_end = 0.0;
  for (const std::size_t i : order) {
    const Call& c = trace.calls[i];
    last_end = std::max(last_end, ms_from(c.end, t0));
    if (c.api == "cudaProfilerStart" || c.api == "cuProfilerStart") {
      // Profiling is on from when the call returned; a second Start changes nothing.
      if (!on) started = ms_from(c.end, t0);
      on = true;
    } else if ((c.api == "cudaProfilerStop" || c.api == "cuProfilerStop") && on) {
      ranges.push_back({"cudaProfilerStart", started, ms_from(c.start, t0)});
      on = false;
    }
  }
  if (on) ranges.push_back({"cudaProfilerStart", started, last_end});
  return ranges;
}

}  // namespace overlap::trace::detail
