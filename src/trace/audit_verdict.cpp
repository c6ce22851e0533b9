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

Timeline steady_timeline(const Timeline& timeline, const Phases& phases) {
  const double from = phases.steady_start;
  const double to = phases.steady_end;
  Timeline t;
  t.program_name = timeline.program_name;
  t.device = timeline.device;
  t.time_unit = timeline.time_unit;
  t.streams = timeline.streams;
  t.host_threads = timeline.host_threads;
  double sequential = 0.0;
  for (const Span& s : timeline.spans) {
    // Records and waits take no time: kept where they fall inside.
    if (s.end < from || s.start > to || (s.end == from && s.end > s.start)) continue;
    Span c = s;
    c.start = std::max(s.start, from) - from;
    c.end = std::min(s.end, to) - from;
    c.solo_duration = s.duration() > 0.0 ? s.solo_duration * c.duration() / s.duration() : 0.0;
    sequential += c.solo_duration;
    t.spans.push_back(std::move(c));
  }
  for (const HostSpan& h : timeline.host_spans) {
    if (h.end <= from || h.start >= to) continue;
    HostSpan c = h;
    c.start = std::max(h.start, from) - from;
    c.end = std::min(h.end, to) - from;
    if (c.activity == host_activity::work) sequential += c.end - c.start;
    t.host_spans.push_back(std::move(c));
  }
  t.sequential_time = sequential;
  return t;
}

std::vector<HostThreadUse> host_thread_use(const Capture& run, const Timeline& steady) {
  std::vector<HostThreadUse> threads;
  for (const std::string& name : steady.host_threads) threads.push_back({name});
  for (const HostSpan& h : steady.host_spans) {
    if (h.thread >= threads.size())
      threads.resize(h.thread + 1, {fmt::format("host thread {}", h.thread + 1)});
    HostThreadUse& u = threads[h.thread];
    const double time = h.end - h.start;
    switch (h.activity) {
      case host_activity::api_call: u.issuing += time; break;
      case host_activity::blocked:
        u.blocked += time;
        if (h.op < run.origin.size() && run.origin[h.op].polling) u.polling += time;
        break;
      case host_activity::work: u.work += time; break;
    }
  }
  return threads;
}

Verdict judge(const Timeline& t, const AuditReport& report) {
  const Metrics& m = report.metrics;
  Verdict v;
  v.total = report.phases.end;
  v.steady = t.total() > 0.0 ? report.phases.steady_length() : 0.0;

  // The host-issue bound is a thread's own: two threads issuing 6 ms each in
  // a 10 ms steady state are not a host that needs 12.
  const HostThreadUse* issuer = nullptr;
  for (const HostThreadUse& u : report.threads) {
    if (!issuer || u.issuing > issuer->issuing) issuer = &u;
  }
  const double issue = issuer ? issuer->issuing : 0.0;
  double polling = 0.0;
  for (const HostThreadUse& u : report.threads) polling += u.polling;
  const std::string who = report.threads.size() > 1 && issuer ? fmt::format(" ({})", issuer->name) : "";
  const ActiveWindow active = active_window(t);
  const double window = active.length();
  v.active = window;
  const double device_idle = std::max(0.0, window - active.busy);
  const double engine_bound = m.bound;

  double saving = 0.0;
  for (const AuditFinding& f : report.findings) {
    if (f.level >= check::severity::warning) saving += f.predicted_saving.value_or(0.0);
  }

  if (window <= 0.0) {
    v.bound = "host issue";
    v.floor = issue;
    v.text = "No device work ran in the steady state: nothing to overlap.";
    return v;
  }
  if (issue > engine_bound && issue >= device_idle) {
    v.bound = "host issue";
    v.floor = issue;
    v.text = fmt::format(
        "Bound by host issue: in the steady state the host{} spent {} issuing calls, more than any engine "
        "worked (the busiest, {}, {}). Fewer, larger chunks or a CUDA graph cut the per-call cost.",
        who, ms_text(issue), engine_words(m.bound_engine), ms_text(engine_bound));
  } else if (device_idle >= 0.25 * window) {
    v.bound = "synchronization";
    v.floor = engine_bound;
    v.text = fmt::format(
        "Bound by synchronization: between the steady state's first and last device work ({}) the device "
        "sat idle {} ({}%), waiting for the host. With the waits repaired the run could approach "
        "{}, the work of its busiest engine ({}).",
        ms_text(window), ms_text(device_idle), io::format_number(std::round(100.0 * device_idle / window)),
        ms_text(engine_bound), engine_words(m.bound_engine));
  } else {
    v.bound = is_copy_engine(m.bound_engine) ? "copy engines" : "compute";
    v.floor = engine_bound;
    v.text = fmt::format(
        "Bound by {}: {} worked {} of the {} steady state ({}% of it); that is the floor for this "
        "program on this GPU{}.",
        v.bound, engine_words(m.bound_engine), ms_text(engine_bound), ms_text(v.steady),
        io::format_number(std::round(100.0 * m.bound_attainment)),
        is_copy_engine(m.bound_engine) ? " (copies in opposite directions overlap; more streams "
                                         "do not add copy bandwidth)"
                                       : "");
  }
  // Polling is waiting: a host that spins on queries is not issuing.
  if (polling > 0.0 && v.bound != "host issue")
    v.text += fmt::format(
        " The host spent {} polling for work to finish (queries that returned not-ready): "
        "waiting, not issuing.",
        ms_text(polling));
  if (saving > 0.0)
    v.text += fmt::format(" Repairing the warnings above is predicted to save {} on the {} model.",
                          ms_text(saving), report.device_model);
  return v;
}

}  // namespace overlap::trace::detail
