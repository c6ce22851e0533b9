// lazy-module-load: a kernel's first launch that waited for its module to
// load while other work ran. With lazy loading (the default since CUDA
// 12.2) the module loads inside that launch call, and the load waits for the
// device's work in flight; a kernel meant to run beside that work starts
// only after it (measured on an H100: up to a whole kernel's time).
//
// The trace shows it without a module record: a first launch of a kernel
// whose call took far longer than the run's typical launch, made while
// other work ran, and whose kernel started later than its stream allowed.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "audit_detail.hpp"
#include "capture_timeline.hpp"
#include "overlap/io/exporters.hpp"

namespace overlap::trace::detail {

namespace {

bool eager(const TraceEnvironment& env) {
  if (!env.module_loading) return false;
  std::string value = *env.module_loading;
  std::transform(value.begin(), value.end(), value.begin(), [](unsigned char c) { return std::toupper(c); });
  return value == "EAGER";
}

/// When the device work in flight at `t` ends: the latest end of the spans
/// that started before `t`, from spans sorted by start with a running
/// maximum of their ends.
class WorkInFlight {
 public:
  explicit WorkInFlight(const Timeline& t) {
    for (const Span& s : t.spans)
      if (s.unit != engine::none && s.end > s.start) spans_.emplace_back(s.start, s.end);
    std::sort(spans_.begin(), spans_.end());
    double latest = 0.0;
    for (auto& [start, end] : spans_) {
      latest = std::max(latest, end);
      end = latest;
    }
  }
  /// The latest end of the work started before `t`; 0 when none did.
  [[nodiscard]] double until(double t) const {
    const auto it = std::lower_bound(spans_.begin(), spans_.end(), std::pair{t, -1e300});
    return it == spans_.begin() ? 0.0 : std::prev(it)->second;
  }

 private:
  std::vector<std::pair<double, double>> spans_;  // (start, running max of ends)
};

struct Stall {
  op_id op = 0;
  double call = 0.0;   // the launch call's length, ms
  double delay = 0.0;  // how much later the kernel started than its stream allowed, ms
};

}  // namespace

std::optional<AuditFinding> find_lazy_module_loads(const Capture& run, const AuditOptions& options,
                                                   const Phases& phases) {
  if (eager(run.env)) return std::nullopt;
  const Program& p = run.program;
  // Each op's span, and the end of the earlier work on its stream.
  std::vector<const Span*> span_of(p.ops().size(), nullptr);
  std::vector<double> stream_free_at(p.ops().size(), 0.0);
  std::map<stream_id, double> stream_end;
  for (const Span& s : run.timeline.spans) {
    if (s.op >= p.ops().size()) continue;
    span_of[s.op] = &s;
    double& end = stream_end[s.stream];
    stream_free_at[s.op] = end;
    if (s.unit != engine::none) end = std::max(end, s.end);
  }
  const auto is_launch = [&](op_id i) {
    const OpOrigin& from = run.origin[i];
    return p.ops()[i].kind == op_kind::kernel && !p.ops()[i].graph_node && from.call && !from.synthesized &&
           from.api.find("Launch") != std::string::npos && span_of[i] != nullptr;
  };
  // What a launch takes here once its kernel is loaded: the median of the
  // launches that were not a kernel's first.
  std::vector<op_id> first_launches;
  std::vector<double> lengths;
  std::set<std::string> launched;
  for (op_id i = 0; i < p.ops().size(); ++i) {
    if (!is_launch(i)) continue;
    if (launched.insert(p.ops()[i].label).second) {
      first_launches.push_back(i);
    } else {
      lengths.push_back(run.origin[i].call_end - run.origin[i].call_start);
    }
  }
  const std::optional<double> median_length = median(std::move(lengths));
  if (!median_length) return std::nullopt;
  const double typical = *median_length;

  const WorkInFlight in_flight(run.timeline);
  std::vector<Stall> stalls;
  for (const op_id i : first_launches) {
    const OpOrigin& from = run.origin[i];
    // Long enough to be a load, not the contention of other host threads
    // for the driver (in which every launch is slow): at least four typical
    // launches, and the audit's threshold longer than one.
    const double call = from.call_end - from.call_start;
    if (call - typical < options.idle_gap_threshold || call < 4.0 * typical) continue;
    // The load waits for the device's work in flight: the call returns only
    // after all the work that had started when it was made (or just after:
    // a launch returns before its kernel starts) has ended. A call that
    // returned with that work still running spent its time loading alone.
    const double in_flight_until = in_flight.until(from.call_start + typical);
    if (in_flight_until - from.call_start < options.idle_gap_threshold || from.call_end < in_flight_until)
      continue;
    // Another host thread inside a CUDA call meanwhile (an allocation that
    // drains the device, say) can hold the launch just as long: a wait
    // that contention explains as well is not claimed for loading.
    const bool contended = std::any_of(run.origin.begin(), run.origin.end(), [&](const OpOrigin& other) {
      return other.call && other.thread != from.thread && other.call_start < from.call_end &&
             other.call_end > from.call_start;
    });
    if (contended) continue;
    const double could_start = std::max(from.call_start + typical, stream_free_at[i]);
    const double delay = span_of[i]->start - could_start;
    if (delay < options.idle_gap_threshold) continue;  // its stream held it back anyway
    stalls.push_back({i, call, delay});
  }
  if (stalls.empty()) return std::nullopt;

  double steady_delay = 0.0;
  std::size_t steady_calls = 0;
  std::vector<op_id> ops;
  for (const Stall& s : stalls) {
    ops.push_back(s.op);
    if (phases.in_steady(run.origin[s.op].call_start)) {
      steady_delay += s.delay;
      ++steady_calls;
    }
  }
  const Stall& first = stalls.front();
  AuditFinding f;
  f.level = check::severity::warning;
  f.rule = std::string(rules::lazy_module_load);
  f.count = stalls.size();
  f.message = fmt::format(
      "The first launch of {}{} took {} ms (launches here typically take {} ms) while other work ran, and "
      "the "
      "kernel started {} ms later than its stream allowed: with lazy module loading (CUDA_MODULE_LOADING {}) "
      "a "
      "kernel's module loads inside its first launch, and the load waits for the work already running.",
      p.ops()[first.op].label,
      stalls.size() > 1 ? fmt::format(" (and of {} more kernels)", stalls.size() - 1) : std::string(),
      io::format_number(first.call), io::format_number(typical), io::format_number(first.delay),
      run.env.module_loading ? fmt::format("={}", *run.env.module_loading) : std::string("unset"));
  f.fix =
      "Set CUDA_MODULE_LOADING=EAGER (modules load with the context), or touch each kernel during set-up "
      "(cudaFuncGetAttributes on it) so that no first launch lands while other work runs.";
  f.ops = audit_ops(run, ops);
  f.streams = stream_names(run, ops);
  f.measured =
      MeasuredCost{steady_delay,
                   fmt::format("{} first launch{} in the steady state started {} ms late in all",
                               steady_calls, steady_calls == 1 ? "" : "es", io::format_number(steady_delay)),
                   steady_calls};
  // Loading the modules up front moves the wait out of the run.
  f.predicted_saving = steady_delay;
  return f;
}

}  // namespace overlap::trace::detail
