// The verdict that answers "why are my streams not making it faster?": what
// bounds the steady state (the copy engines, compute, host issue, host
// synchronization, false serialization or launch latency), the evidence,
// the floor that bound allows and what a finding's fix is predicted to give.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

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

namespace {

// A kernel's first launch in the run loads its module (lazy loading, CUDA
// 12's default) and may wait for the device to drain first: one-time cost,
// not the per-call cost the host-issue bound is about.
std::vector<bool> first_launches(const Capture& run) {
  std::vector<bool> first(run.program.ops().size(), false);
  std::set<std::string> seen;
  for (op_id i = 0; i < run.program.ops().size(); ++i) {
    const Op& op = run.program.ops()[i];
    if (op.kind == op_kind::kernel && i < run.origin.size() && run.origin[i].call &&
        seen.insert(op.label).second)
      first[i] = true;
  }
  return first;
}

}  // namespace

std::vector<HostThreadUse> host_thread_use(const Capture& run, const Timeline& steady) {
  const std::vector<bool> loading = first_launches(run);
  std::vector<HostThreadUse> threads;
  for (const std::string& name : steady.host_threads) threads.push_back({name});
  for (const HostSpan& h : steady.host_spans) {
    if (h.thread >= threads.size())
      threads.resize(h.thread + 1, {fmt::format("host thread {}", h.thread + 1)});
    HostThreadUse& u = threads[h.thread];
    const double time = h.end - h.start;
    switch (h.activity) {
      case host_activity::api_call:
        if (h.op < loading.size() && loading[h.op])
          u.work += time;  // module loading, not issuing
        else
          u.issuing += time;
        break;
      case host_activity::blocked:
        u.blocked += time;
        if (h.op < run.origin.size() && run.origin[h.op].polling) u.polling += time;
        break;
      case host_activity::work: u.work += time; break;
    }
  }
  return threads;
}

namespace {

/// What the host threads were doing while the whole device sat idle.
struct IdleCause {
  double launching = 0.0;  ///< some thread inside a kernel or graph launch call
  double host_busy = 0.0;  ///< else some thread issuing other calls, staging a pageable copy, or working
  double waiting = 0.0;  ///< else the threads blocked waiting for the device (syncs, polls, blocking copies)
  double total = 0.0;    ///< all idle time inside the active window
};

bool is_launch(const Capture& run, op_id op) {
  if (op >= run.program.ops().size()) return false;
  if (run.program.ops()[op].kind == op_kind::kernel) return true;
  const std::string& api = op < run.origin.size() ? run.origin[op].api : std::string();
  return api.find("GraphLaunch") != std::string::npos || api.find("LaunchKernel") != std::string::npos ||
         api.find("cuLaunch") != std::string::npos;
}

// Host state ranks: what a moment of idle device is charged to when threads
// differ (one thread launching explains the idle better than another's wait).
enum class host_state : int { none = 0, waiting = 1, busy = 2, launching = 3 };

host_state state_of(const Capture& run, const HostSpan& h, const std::vector<bool>& loading) {
  if (h.activity == host_activity::blocked) {
    // A pageable copy holds the host while it stages the data itself: work,
    // not a wait for the device. Polls and syncs are waits.
    if (h.op < run.program.ops().size() && !(h.op < run.origin.size() && run.origin[h.op].polling)) {
      const Op& op = run.program.ops()[h.op];
      if (op.kind == op_kind::copy && op.memory == host_memory::pageable) return host_state::busy;
    }
    return host_state::waiting;
  }
  if (h.activity == host_activity::api_call && !(h.op < loading.size() && loading[h.op]) &&
      is_launch(run, h.op))
    return host_state::launching;
  return host_state::busy;
}

IdleCause idle_cause(const Capture& run, const Timeline& t, const ActiveWindow& window) {
  IdleCause cause;
  if (window.length() <= 0.0) return cause;
  const std::vector<bool> loading = first_launches(run);
  // Sweep over the boundaries of device spans and host spans.
  struct Edge {
    double at;
    int device;  // +1/-1 device span, 0 host
    int state;   // host state rank, with sign for start/end
  };
  std::vector<Edge> edges;
  for (const Span& s : t.spans) {
    if (s.unit == engine::none || s.end <= s.start) continue;
    edges.push_back({s.start, 1, 0});
    edges.push_back({s.end, -1, 0});
  }
  for (const HostSpan& h : t.host_spans) {
    if (h.end <= h.start) continue;
    const int rank = static_cast<int>(state_of(run, h, loading));
    edges.push_back({h.start, 0, rank});
    edges.push_back({h.end, 0, -rank});
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) { return a.at < b.at; });
  int device = 0;
  int open[4] = {0, 0, 0, 0};
  double last = window.start;
  for (const Edge& e : edges) {
    const double from = std::max(last, window.start);
    const double to = std::min(e.at, window.end);
    if (device == 0 && to > from) {
      const double d = to - from;
      cause.total += d;
      if (open[3] > 0)
        cause.launching += d;
      else if (open[2] > 0)
        cause.host_busy += d;
      else if (open[1] > 0)
        cause.waiting += d;
    }
    last = std::max(last, e.at);
    if (e.device != 0)
      device += e.device;
    else if (e.state > 0)
      ++open[e.state];
    else if (e.state < 0)
      --open[-e.state];
  }
  return cause;
}

std::string percent(double part, double whole) {
  return io::format_number(whole > 0.0 ? std::round(100.0 * part / whole) : 0.0) + "%";
}

/// Median duration of the device ops in `t`, ms (0 when none ran); `mean`
/// gets their mean, so a few large ops among many tiny ones show.
double median_op(const Timeline& t, std::size_t& count, double& mean) {
  std::vector<double> d;
  double sum = 0.0;
  for (const Span& s : t.spans)
    if (s.unit != engine::none && s.end > s.start) {
      d.push_back(s.end - s.start);
      sum += s.end - s.start;
    }
  count = d.size();
  mean = d.empty() ? 0.0 : sum / static_cast<double>(d.size());
  if (d.empty()) return 0.0;
  std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(d.size() / 2), d.end());
  return d[d.size() / 2];
}

// The fix's first sentence, for "with <fix> the run could approach ...".
std::string first_sentence(const std::string& text) {
  const auto stop = text.find(". ");
  std::string s = stop == std::string::npos ? text : text.substr(0, stop);
  if (!s.empty() && s.back() == '.') s.pop_back();
  if (!s.empty()) s.front() = static_cast<char>(std::tolower(static_cast<unsigned char>(s.front())));
  return s;
}

}  // namespace

Verdict judge(const Capture& run, const Timeline& t, const AuditReport& report) {
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
  const std::string engines = fmt::format("{} worked {} of the {} steady state", engine_words(m.bound_engine),
                                          ms_text(engine_bound), ms_text(v.steady));

  if (window <= 0.0) {
    v.bound = "host issue";
    v.floor = issue;
    v.text = "No device work ran in the steady state: nothing to overlap.";
    return v;
  }

  // False serialization: the hardware made independent streams wait for
  // each other (streams sharing a hardware queue, the legacy default
  // stream's barrier), and repairing it is predicted to give back a real
  // share of the steady state. That, not the engines, is what holds it.
  const AuditFinding* serial = nullptr;
  double serial_saving = 0.0;
  for (const AuditFinding& f : report.findings) {
    if (f.level < check::severity::warning) continue;
    if (f.rule != "hardware-queue-sharing" && f.rule != "legacy-default-stream") continue;
    serial_saving += f.predicted_saving.value_or(0.0);
    if (!serial || f.predicted_saving.value_or(0.0) > serial->predicted_saving.value_or(0.0)) serial = &f;
  }
  const IdleCause idle = idle_cause(run, t, active);
  std::size_t ops = 0;
  double mean_op = 0.0;
  const double typical_op = median_op(t, ops, mean_op);
  // Launch latency needs many small ops: each shorter than the ~0.02 ms a
  // launch and its start take, typically and on average (one 64 MiB copy
  // among small kernels is work, not latency).
  const bool tiny = ops >= 50 && typical_op < 0.02 && mean_op < 0.02;
  double launch_issue = 0.0;  // the busiest issuing thread's time in launch calls
  if (issuer) {
    const std::size_t thread = static_cast<std::size_t>(issuer - report.threads.data());
    const std::vector<bool> loading = first_launches(run);
    for (const HostSpan& h : t.host_spans)
      if (h.thread == thread && state_of(run, h, loading) == host_state::launching)
        launch_issue += h.end - h.start;
  }

  if (serial && serial_saving >= 0.1 * v.steady) {
    v.bound = "false serialization";
    // The engines' busy time is no floor here: the serialization itself
    // stretched it. The floor is the run with the repair, as simulated.
    v.floor = std::max(0.0, v.steady - serial_saving);
    v.text = fmt::format(
        "Bound by false serialization: {} ({}), so independent work waited for work it does not depend "
        "on; {}. The fix ({}) is predicted to bring the {} steady state to about {} on the {} model ({} "
        "less).",
        serial->rule == "hardware-queue-sharing"
            ? "streams share hardware queues"
            : "the legacy default stream's barrier held other streams back",
        serial->rule, engines, first_sentence(serial->fix), ms_text(v.steady), ms_text(v.floor),
        report.device_model, ms_text(serial_saving));
  } else if (issue > engine_bound && issue >= device_idle && tiny && launch_issue >= 0.5 * issue) {
    // The host is the bound, and what it does is launch ops shorter than
    // their launch: the per-launch latency, not the work, sets the pace.
    v.bound = "launch latency";
    v.floor = issue;
    v.text = fmt::format(
        "Bound by launch latency: in the steady state the host{} spent {} issuing calls, {} of it in kernel "
        "or graph launches, more than any engine worked (the busiest, {}, {}); the {} device ops take {} "
        "each (median), less than launching them. Batch the work into fewer, larger launches (or more "
        "nodes per graph launch): the device's work is {}.",
        who, ms_text(issue), ms_text(launch_issue), engine_words(m.bound_engine), ms_text(engine_bound), ops,
        ms_text(typical_op), ms_text(engine_bound));
  } else if (issue > engine_bound && issue >= device_idle) {
    v.bound = "host issue";
    v.floor = issue;
    v.text = fmt::format(
        "Bound by host issue: in the steady state the host{} spent {} issuing calls, more than any engine "
        "worked (the busiest, {}, {}). Fewer, larger chunks or a CUDA graph cut the per-call cost.",
        who, ms_text(issue), engine_words(m.bound_engine), ms_text(engine_bound));
  } else if (device_idle >= 0.25 * window) {
    // The device idled: charge each idle moment to what the host threads
    // were doing then, and name the largest share.
    const std::string idle_words =
        fmt::format("between the steady state's first and last device work ({}) the device sat idle {} ({})",
                    ms_text(window), ms_text(device_idle), percent(device_idle, window));
    const std::string split = fmt::format(
        "the host was inside launch calls for {} of it, issuing other calls or working for {}, "
        "blocked waiting for the device for {}",
        ms_text(idle.launching), ms_text(idle.host_busy), ms_text(idle.waiting));
    v.floor = engine_bound;
    // Launch latency: many small ops, each shorter than it takes to launch
    // it, with the idle spent in the launch calls themselves.
    if (idle.launching >= idle.host_busy && idle.launching >= idle.waiting && tiny) {
      v.bound = "launch latency";
      v.text = fmt::format(
          "Bound by launch latency: {}; {}. The {} device ops take {} each (median), less than launching "
          "them: the start latency, not the work, fills the time. Batch the work into fewer, larger "
          "launches (or one graph of many nodes); the device's work is {}, the work of its busiest "
          "engine ({}).",
          idle_words, split, ops, ms_text(typical_op), ms_text(engine_bound), engine_words(m.bound_engine));
    } else if (idle.waiting > idle.host_busy + idle.launching) {
      v.bound = "host synchronization";
      v.text = fmt::format(
          "Bound by host synchronization: {}; {}{}. Each wait drains the device before the host issues "
          "more: keep work queued ahead of the wait (synchronize less often, on events, or later). With "
          "the waits repaired the run could approach {}, the work of its busiest engine ({}).",
          idle_words, split, polling > 0.0 ? fmt::format(" ({} of the waits polling)", ms_text(polling)) : "",
          ms_text(engine_bound), engine_words(m.bound_engine));
    } else {
      v.bound = "host issue";
      v.text = fmt::format(
          "Bound by host issue: {}; {}. The device waits for the host to issue its next work (busiest "
          "thread{}: {} issuing calls). Move the host's work off the issuing path, issue from several "
          "threads, or queue more work per call; the device's work is {}, the work of its busiest "
          "engine ({}).",
          idle_words, split, who, ms_text(issue), ms_text(engine_bound), engine_words(m.bound_engine));
    }
  } else {
    v.bound = is_copy_engine(m.bound_engine) ? "copy engines" : "compute";
    v.floor = engine_bound;
    v.text = fmt::format(
        "Bound by {}: {} ({}%); the device sat idle {} of its active window and the busiest host thread{} "
        "issued for {}. That is the floor for this program on this GPU{}.",
        v.bound, engines, io::format_number(std::round(100.0 * m.bound_attainment)),
        percent(device_idle, window), who, ms_text(issue),
        is_copy_engine(m.bound_engine) ? " (copies in opposite directions overlap; more streams "
                                         "do not add copy bandwidth)"
                                       : "");
  }
  // Polling is waiting: a host that spins on queries is not issuing.
  if (polling > 0.0 && v.bound != "host synchronization")
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
