#include "capture_timeline.hpp"

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <map>
#include <optional>

#include "overlap/core/op_span.hpp"

namespace overlap::trace::detail {

namespace {

// Calls that hold the host until device work is done.
bool blocks_host(const Op& op) {
  switch (op.kind) {
    case op_kind::stream_synchronize:
    case op_kind::event_synchronize:
    case op_kind::device_synchronize: return true;
    case op_kind::copy: return op.mode == call_mode::synchronous || op.memory == host_memory::pageable;
    default: return is_implicitly_synchronizing(op.kind);
  }
}

}  // namespace

Timeline measured_timeline(const Program& program, const RawTrace& trace,
                           const std::vector<std::vector<std::size_t>>& work,
                           const std::vector<OpOrigin>& origin, std::uint64_t t0) {
  const auto ms = [t0](std::uint64_t ns) { return static_cast<double>(ns - t0) * 1e-6; };
  Timeline t;
  t.program_name = program.name;
  t.device = trace.devices.empty() ? std::string("GPU") : trace.devices.front().name;
  t.time_unit = program.time_unit;
  t.streams = program.streams();
  t.spans.reserve(program.ops().size());
  t.host_spans.reserve(program.ops().size());
  std::map<stream_id, double> stream_end;  // where ordering-only ops are drawn
  // Per host thread: where its last drawn call ended. Host work carries the
  // part of a call's time beyond what the model charges for it (a first
  // launch loading its module, a launch staging a pageable copy), for the
  // simulation; drawn, that part would lie over the call itself and count
  // the same time twice, as the call and as the host's own work.
  std::map<std::size_t, double> call_end;
  double sequential = 0.0;
  for (op_id i = 0; i < program.ops().size(); ++i) {
    const Op& op = program.ops()[i];
    const OpOrigin& from = origin[i];
    if (op.kind == op_kind::host_work) {
      // Polling is the host waiting for the device, as a synchronize is.
      const host_activity activity = from.polling ? host_activity::blocked : host_activity::work;
      const double start =
          from.synthesized ? std::max(from.call_start, call_end[from.thread]) : from.call_start;
      if (op.duration.value_or(0.0) > 0.0 && start < from.call_end)
        t.host_spans.push_back({i, activity, op.label, start, from.call_end, from.thread});
      if (!from.synthesized) call_end[from.thread] = std::max(call_end[from.thread], from.call_end);
      sequential += op.duration.value_or(0.0);
      continue;
    }
    // A graph launch is one call issuing several ops: one host span.
    const bool same_call = i > 0 && from.call && origin[i - 1].call == from.call;
    if (from.call && !same_call) {
      const bool blocked = blocks_host(op) || from.holds_host;
      t.host_spans.push_back({i, blocked ? host_activity::blocked : host_activity::api_call, from.api,
                              from.call_start, from.call_end, from.thread});
      call_end[from.thread] = std::max(call_end[from.thread], from.call_end);
    }
    if (!is_stream_op(op.kind)) continue;
    Span s = span_of(op, i);
    if (work[i].empty()) {
      // Records and waits leave no activity: draw them where their stream is.
      s.start = s.end = std::max(from.call_end, stream_end[s.stream]);
    } else {
      s.start = ms(trace.work[work[i].front()].start);
      s.end = s.start;
      for (const std::size_t w : work[i]) {
        s.start = std::min(s.start, ms(trace.work[w].start));
        s.end = std::max(s.end, ms(trace.work[w].end));
      }
    }
    s.solo_duration = s.end - s.start;
    sequential += s.solo_duration;
    stream_end[s.stream] = std::max(stream_end[s.stream], s.end);
    t.spans.push_back(std::move(s));
  }
  t.sequential_time = sequential;
  return t;
}

std::optional<double> median(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

void measure_start_latencies(const Timeline& t, const std::vector<OpOrigin>& origin,
                             Calibration& calibration) {
  std::map<engine, std::vector<double>> ends;  // per engine, sorted
  for (const Span& s : t.spans) {
    if (s.unit != engine::none) ends[s.unit].push_back(s.end);
  }
  for (auto& [unit, list] : ends) std::sort(list.begin(), list.end());
  std::map<stream_id, double> stream_end;
  std::vector<double> kernels;
  std::vector<double> copies;
  for (const Span& s : t.spans) {
    const double previous = stream_end[s.stream];
    stream_end[s.stream] = std::max(previous, s.end);
    if (s.unit == engine::none || s.unit == engine::host_callback || !origin[s.op].call) continue;
    double ready = std::max(origin[s.op].call_end, previous);
    const std::vector<double>& engine_ends = ends[s.unit];
    const auto after = std::upper_bound(engine_ends.begin(), engine_ends.end(), s.start);
    if (after != engine_ends.begin()) ready = std::max(ready, *std::prev(after));
    if (s.start < ready) continue;
    (s.unit == engine::compute && s.kind == op_kind::kernel ? kernels : copies).push_back(s.start - ready);
  }
  calibration.start_samples = kernels.size() + copies.size();
  calibration.kernel_start_latency = median(kernels);
  calibration.copy_start_latency = median(copies);
}

}  // namespace overlap::trace::detail
