// The capture pass for CUDA graphs (see capture_graphs.hpp).
#include "capture_graphs.hpp"

#include <algorithm>
#include <string>
#include <tuple>

namespace overlap::trace::detail {

namespace {

bool begins_capture(const std::string& api) {
  return api.starts_with("cudaStreamBeginCapture") || api.starts_with("cuStreamBeginCapture");
}

bool ends_capture(const std::string& api) {
  return api == "cudaStreamEndCapture" || api == "cuStreamEndCapture";
}

// Calls that, on a capturing stream, become graph nodes instead of work.
bool capturable(const Call& c) {
  switch (c.cls) {
    case call_class::copy:
    case call_class::memset: return c.async;
    case call_class::launch:
    case call_class::record:
    case call_class::wait: return true;
    case call_class::alloc:
    case call_class::free: return c.memory == "async";
    default: return false;
  }
}

// What identifies a graph across its launches: the work it ran, whatever
// the driver's streams for its branches were called this time.
using WorkKey = std::tuple<int, std::string, std::uint64_t, std::string>;

std::vector<WorkKey> signature(const RawTrace& trace, const std::vector<std::size_t>& work) {
  std::vector<WorkKey> keys;
  keys.reserve(work.size());
  for (const std::size_t w : work) {
    const DeviceWork& d = trace.work[w];
    keys.emplace_back(static_cast<int>(d.kind), d.name, d.bytes, d.copy_kind);
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

}  // namespace

bool is_graph_launch(const Call& call) noexcept {
  return call.api == "cudaGraphLaunch" || call.api == "cuGraphLaunch";
}

GraphLaunches::GraphLaunches(const RawTrace& trace, const std::vector<std::size_t>& order,
                             const std::map<std::uint64_t, std::vector<std::size_t>>& work_by_call) {
  // Streams the app itself names: those the tracer described, and those its
  // calls were made on. The rest of a graph's streams are the driver's.
  std::set<std::uint32_t> named;
  for (const StreamRecord& s : trace.streams) named.insert(s.id);
  for (const Call& c : trace.calls) {
    if (c.stream) named.insert(*c.stream);
  }
  std::map<std::uint64_t, bool> capturing;  // per thread
  std::map<std::vector<WorkKey>, std::size_t> graphs;
  for (const std::size_t i : order) {
    const Call& c = trace.calls[i];
    const auto work = work_by_call.find(c.corr);
    const bool has_work = work != work_by_call.end() && !work->second.empty();
    if (begins_capture(c.api)) {
      capturing[c.tid] = true;
      continue;
    }
    if (ends_capture(c.api)) {
      capturing[c.tid] = false;
      continue;
    }
    // Work on a stream not being captured still runs (and has records).
    if (capturing[c.tid] && capturable(c) && !has_work) {
      captured_.insert(i);
      continue;
    }
    if (!is_graph_launch(c) || !has_work) continue;

    GraphLaunch launch;
    std::vector<std::size_t> records = work->second;
    std::stable_sort(records.begin(), records.end(),
                     [&](std::size_t a, std::size_t b) { return trace.work[a].start < trace.work[b].start; });
    for (const std::size_t w : records) {
      const auto& s = trace.work[w].stream;
      if (s && named.contains(*s)) {
        launch.stream = s;
        break;
      }
    }
    if (!launch.stream) launch.stream = trace.work[records.front()].stream;
    // The launch stream's work first, then each branch stream's.
    std::stable_sort(records.begin(), records.end(), [&](std::size_t a, std::size_t b) {
      const auto& sa = trace.work[a].stream;
      const auto& sb = trace.work[b].stream;
      const bool la = sa == launch.stream;
      const bool lb = sb == launch.stream;
      if (la != lb) return la;
      return sa < sb;
    });
    for (const std::size_t w : records) {
      const auto& s = trace.work[w].stream;
      if (s && s != launch.stream && !named.contains(*s)) internal_.insert(*s);
    }
    launch.graph = graphs.try_emplace(signature(trace, records), graphs.size() + 1).first->second;
    launch.work = std::move(records);
    launches_.emplace(i, std::move(launch));
  }
}

const GraphLaunch* GraphLaunches::launch(std::size_t index) const {
  const auto it = launches_.find(index);
  return it == launches_.end() ? nullptr : &it->second;
}

}  // namespace overlap::trace::detail
