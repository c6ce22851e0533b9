// The verdict that answers "why are my streams not making it faster?": what
// bounds the measured run (an engine, the host issuing calls, or the device
// waiting on the host) and the floor that bound allows.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "audit_detail.hpp"
#include "overlap/io/exporters.hpp"

namespace overlap::trace::detail {

namespace {

std::string ms_text(double ms) {
  return io::format_number(ms) + " ms";
}

std::string engine_words(engine unit) {
  switch (unit) {
    case engine::h2d_copy: return "the host-to-device copy engine";
    case engine::d2h_copy: return "the device-to-host copy engine";
    case engine::copy: return "the copy engine";
    case engine::d2d_copy: return "device-to-device copies";
    case engine::compute: return "the SMs (kernels)";
    default: return "nothing";
  }
}

bool is_copy_engine(engine unit) {
  return unit == engine::h2d_copy || unit == engine::d2h_copy || unit == engine::copy;
}

}  // namespace

ActiveWindow active_window(const Timeline& t) {
  std::vector<std::pair<double, double>> busy;
  for (const Span& s : t.spans) {
    if (s.unit != engine::none && s.end > s.start) busy.emplace_back(s.start, s.end);
  }
  std::sort(busy.begin(), busy.end());
  ActiveWindow w;
  if (busy.empty()) return w;
  w.start = busy.front().first;
  double covered = w.start;
  for (const auto& [start, end] : busy) {
    w.end = std::max(w.end, end);
    const double from = std::max(start, covered);
    if (end > from) w.busy += end - from;
    covered = std::max(covered, end);
  }
  return w;
}

Verdict judge(const Capture& run, const AuditReport& report) {
  const Timeline& t = run.timeline;
  const Metrics& m = report.metrics;
  Verdict v;
  v.total = t.total();

  double issue = 0.0;  // host time spent issuing (not blocked) in calls
  for (const HostSpan& h : t.host_spans) {
    if (h.activity == host_activity::api_call) issue += h.end - h.start;
  }
  const ActiveWindow active = active_window(t);
  const double window = active.length();
  v.active = window;
  const double device_idle = std::max(0.0, window - active.busy);
  const double engine_bound = m.bound;

  double saving = 0.0;
  for (const AuditFinding& f : report.findings) saving += f.predicted_saving.value_or(0.0);

  if (window <= 0.0) {
    v.bound = "host issue";
    v.floor = issue;
    v.text = "No device work ran: nothing to overlap.";
    return v;
  }
  if (issue > engine_bound && issue >= device_idle) {
    v.bound = "host issue";
    v.floor = issue;
    v.text = fmt::format(
        "Bound by host issue: the host spent {} issuing calls, more than any engine worked "
        "(the busiest, {}, {}). Fewer, larger chunks or a CUDA graph cut the per-call cost.",
        ms_text(issue), engine_words(m.bound_engine), ms_text(engine_bound));
  } else if (device_idle >= 0.25 * window) {
    v.bound = "synchronization";
    v.floor = engine_bound;
    v.text = fmt::format(
        "Bound by synchronization: between the first and last device work ({}) the device sat "
        "idle {} ({}%), waiting for the host. With the waits repaired the run could approach "
        "{}, the work of its busiest engine ({}).",
        ms_text(window), ms_text(device_idle), io::format_number(std::round(100.0 * device_idle / window)),
        ms_text(engine_bound), engine_words(m.bound_engine));
  } else {
    v.bound = is_copy_engine(m.bound_engine) ? "copy engines" : "compute";
    v.floor = engine_bound;
    v.text = fmt::format(
        "Bound by {}: {} worked {} of the {} run ({}% of it); that is the floor for this "
        "program on this GPU{}.",
        v.bound, engine_words(m.bound_engine), ms_text(engine_bound), ms_text(v.total),
        io::format_number(std::round(100.0 * m.bound_attainment)),
        is_copy_engine(m.bound_engine) ? " (copies in opposite directions overlap; more streams "
                                         "do not add copy bandwidth)"
                                       : "");
  }
  if (saving > 0.0)
    v.text += fmt::format(" Repairing the findings above is predicted to save {} on the {} model.",
                          ms_text(saving), report.device_model);
  return v;
}

}  // namespace overlap::trace::detail
