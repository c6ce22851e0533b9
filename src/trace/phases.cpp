// Startup, steady state and teardown of a traced run (see phases.hpp for
// the order in which the steady state's sources are tried).
#include "overlap/trace/phases.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "audit_detail.hpp"
#include "overlap/core/error.hpp"

namespace overlap::trace {

namespace {

struct Window {
  double start = 0.0;
  double end = 0.0;
};

/// Device time (summed over spans, clipped) inside [from, to].
double device_work_in(const Timeline& t, double from, double to) {
  double busy = 0.0;
  for (const Span& s : t.spans) {
    if (s.unit == engine::none) continue;
    const double overlap = std::min(s.end, to) - std::max(s.start, from);
    if (overlap > 0.0) busy += overlap;
  }
  return busy;
}

/// Per NVTX range name: its instances' extent and count.
struct RangeGroup {
  Window extent{std::numeric_limits<double>::max(), 0.0};
  std::size_t count = 0;
  std::vector<Window> instances;  // in the order they ended
};

std::map<std::string, RangeGroup> group_ranges(const std::vector<CapturedRange>& ranges) {
  std::map<std::string, RangeGroup> groups;
  for (const CapturedRange& r : ranges) {
    RangeGroup& g = groups[r.name];
    g.extent.start = std::min(g.extent.start, r.start);
    g.extent.end = std::max(g.extent.end, r.end);
    ++g.count;
    g.instances.push_back({r.start, r.end});
  }
  return groups;
}

// The repeated range under which the device worked most (ties: the tighter
// one, so a loop's "step" wins over a "main" around it), else the single one.
std::optional<std::pair<std::string, RangeGroup>> default_range(const Capture& run) {
  const auto groups = group_ranges(run.ranges);
  std::optional<std::pair<std::string, RangeGroup>> best;
  double best_busy = 0.0;
  for (const bool repeated : {true, false}) {
    for (const auto& [name, g] : groups) {
      if ((g.count >= 2) != repeated) continue;
      const double busy = device_work_in(run.timeline, g.extent.start, g.extent.end);
      if (busy <= 0.0) continue;
      const double length = g.extent.end - g.extent.start;
      const bool better =
          !best || busy > best_busy * (1.0 + 1e-9) ||
          (busy >= best_busy * (1.0 - 1e-9) && length < best->second.extent.end - best->second.extent.start);
      if (better) {
        best = std::pair{name, g};
        best_busy = busy;
      }
    }
    if (best) return best;
  }
  return std::nullopt;
}

// Calls that issue, order or wait for device work, and allocations: what a
// loop's body repeats. Other calls (queries, attribute reads) vary from one
// iteration to the next and would hide the repetition.
bool in_signature(const Op& op, const OpOrigin& from) {
  if (!from.call || from.synthesized || from.polling) return false;
  return op.kind != op_kind::host_work || from.allocation;
}

struct Repetition {
  std::size_t first = 0;   // index into the signature sequence
  std::size_t length = 0;  // positions: the last repetition's last call is first + length - 1
  std::size_t period = 0;
  std::size_t matched = 0;
};

// Best region for period p: runs of seq[i] == seq[i + p], merged across
// mismatches no longer than two periods (one extra call shifts the
// comparison for p + 1 positions), with the most matches. Runs shorter
// than min(p, 4) at a region's edges are chance matches (a set-up call that
// happens to equal one p later), not the loop, and are left out.
std::optional<Repetition> repeat_with_period(const std::vector<int>& seq, std::size_t p) {
  struct Run {
    std::size_t start = 0;
    std::size_t length = 0;
  };
  std::vector<Run> runs;
  for (std::size_t i = 0; i + p < seq.size(); ++i) {
    if (seq[i] != seq[i + p]) continue;
    if (!runs.empty() && runs.back().start + runs.back().length == i) {
      ++runs.back().length;
    } else {
      runs.push_back({i, 1});
    }
  }
  const std::size_t solid = std::min<std::size_t>(p, 4);
  std::optional<Repetition> best;
  for (std::size_t a = 0; a < runs.size();) {
    std::size_t b = a;  // the group is runs[a..b]
    while (b + 1 < runs.size() && runs[b + 1].start - (runs[b].start + runs[b].length) <= 2 * p) ++b;
    const std::size_t next = b + 1;
    std::size_t first = a;
    std::size_t last = b;
    while (first < last && runs[first].length < solid) ++first;
    while (last > first && runs[last].length < solid) --last;
    std::size_t matched = 0;
    for (std::size_t k = first; k <= last; ++k) matched += runs[k].length;
    // Positions with a partner p later: at least a whole period, so two repetitions.
    const std::size_t span = runs[last].start + runs[last].length - runs[first].start;
    if (span >= p && (!best || matched > best->matched))
      best = Repetition{runs[first].start, span + p, p, matched};
    a = next;
  }
  return best;
}

// The distances that most often separate two calls of one signature.
std::vector<std::size_t> candidate_periods(const std::vector<int>& seq) {
  std::map<int, std::size_t> last;
  std::map<std::size_t, std::size_t> gaps;
  for (std::size_t i = 0; i < seq.size(); ++i) {
    if (const auto it = last.find(seq[i]); it != last.end()) ++gaps[i - it->second];
    last[seq[i]] = i;
  }
  std::vector<std::pair<std::size_t, std::size_t>> ranked(gaps.begin(), gaps.end());  // (gap, count)
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  std::vector<std::size_t> periods;
  constexpr std::size_t tried = 12;
  for (std::size_t k = 0; k < ranked.size() && periods.size() < tried; ++k) {
    if (ranked[k].first <= seq.size() / 2) periods.push_back(ranked[k].first);
  }
  return periods;
}

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0.0 : values[values.size() / 2];
}

/// When each op's device work ended, or -1 without any.
std::vector<double> work_end_by_op(const Capture& run) {
  std::vector<double> end(run.program.ops().size(), -1.0);
  for (const Span& s : run.timeline.spans) {
    if (s.op < end.size() && s.unit != engine::none) end[s.op] = std::max(end[s.op], s.end);
  }
  return end;
}

bool repetition(const Capture& run, Phases& phases) {
  const auto& ops = run.program.ops();
  std::vector<op_id> ids;
  std::vector<int> seq;
  std::map<std::string, int> signatures;
  for (op_id i = 0; i < ops.size(); ++i) {
    if (!in_signature(ops[i], run.origin[i])) continue;
    const std::string stream = ops[i].stream ? run.program.streams()[*ops[i].stream].name : std::string();
    const std::string key = fmt::format("{}|{}|{}", run.origin[i].api, stream, ops[i].label);
    seq.push_back(signatures.try_emplace(key, static_cast<int>(signatures.size())).first->second);
    ids.push_back(i);
  }
  std::optional<Repetition> best;
  for (const std::size_t p : candidate_periods(seq)) {
    const auto r = repeat_with_period(seq, p);
    if (r && (!best || r->matched > best->matched || (r->matched == best->matched && p < best->period)))
      best = r;
  }
  if (!best) return false;
  // It must hold at least half of the device work, counted in ops.
  const std::vector<double> work_end = work_end_by_op(run);
  std::size_t work = 0;
  std::size_t inside = 0;
  for (std::size_t k = 0; k < ids.size(); ++k) {
    if (work_end[ids[k]] < 0.0) continue;
    ++work;
    if (k >= best->first && k < best->first + best->length) ++inside;
  }
  if (work == 0 || 2 * inside < work) return false;

  std::size_t first = best->first;
  std::size_t length = best->length;
  const std::size_t p = best->period;
  std::size_t reps = length / p;
  const auto at = [&](std::size_t k) { return run.origin[ids[k]].call_start; };
  std::string warm_up;
  if (reps >= 3) {
    std::vector<double> lengths;
    for (std::size_t r = 1; r + 1 < reps; ++r) lengths.push_back(at(first + (r + 1) * p) - at(first + r * p));
    const double first_length = at(first + p) - at(first);
    const double typical = median_of(lengths);
    if (typical > 0.0 && first_length > 2.0 * typical) {
      warm_up =
          fmt::format("; the first ({:.3g} ms, against {:.3g} ms typically) is warm-up, counted as startup",
                      first_length, typical);
      first += p;
      length -= p;
      --reps;
    }
  }
  const std::size_t last = first + length;  // one past
  phases.steady_start = at(first);
  phases.steady_end = phases.steady_start;
  for (std::size_t k = first; k < last; ++k) {
    phases.steady_end = std::max({phases.steady_end, run.origin[ids[k]].call_end, work_end[ids[k]]});
  }
  phases.source = "repetition";
  phases.period = p;
  phases.repetitions = reps;
  phases.text =
      fmt::format("calls repeating every {} call{}, {} times{}", p, p == 1 ? "" : "s", reps, warm_up);
  return true;
}

// A kernel query or a launch normally returns in microseconds; a first use
// that takes longer than this loaded the kernel's module.
constexpr double loading_call_ms = 1.0;

/// Per op: the call loaded modules. The first launch of each kernel that took
/// milliseconds (lazy loading: the launch call loads its module before it
/// queues the kernel), a kernel query that took milliseconds, and the
/// explicit module and library loads.
std::vector<bool> loading_calls(const Capture& run) {
  const auto& ops = run.program.ops();
  std::vector<bool> loading(ops.size(), false);
  std::set<std::string> launched;
  for (op_id i = 0; i < ops.size(); ++i) {
    const OpOrigin& from = run.origin[i];
    if (!from.call || from.synthesized) continue;
    if (ops[i].kind == op_kind::kernel) {
      loading[i] = launched.insert(ops[i].label).second && from.call_end - from.call_start > loading_call_ms;
    } else if (detail::is_kernel_query(from.api)) {
      loading[i] = from.call_end - from.call_start > loading_call_ms;
    } else {
      loading[i] = from.api.starts_with("cuLibraryLoad") || from.api.starts_with("cuModuleLoad");
    }
  }
  return loading;
}

bool is_allocation_not_free(const Op& op, const OpOrigin& from) {
  if (op.kind == op_kind::device_allocate || op.kind == op_kind::host_allocate) return true;
  return from.allocation && op.kind == op_kind::host_work && from.api.find("Free") == std::string::npos &&
         from.api.find("free") == std::string::npos;
}

// From the first device work issued after the last allocation made before
// the first kernel (set-up allocates, then the work begins) to the end of
// the last device work, less the uploads that ran before the first kernel
// and the result downloads issued after the last one.
void from_device_work(const Capture& run, Phases& phases) {
  const auto& ops = run.program.ops();
  const std::vector<double> work_end = work_end_by_op(run);
  std::optional<op_id> first_kernel;
  std::optional<op_id> first_work;
  double last_end = -1.0;
  for (op_id i = 0; i < ops.size(); ++i) {
    if (work_end[i] < 0.0) continue;
    if (!first_work) first_work = i;
    if (!first_kernel && ops[i].kind == op_kind::kernel) first_kernel = i;
    last_end = std::max(last_end, work_end[i]);
  }
  if (!first_work) {
    phases.steady_start = 0.0;
    phases.steady_end = phases.end;
    phases.source = "whole run";
    phases.text = "the whole run (no device work)";
    return;
  }
  const op_id until = first_kernel.value_or(*first_work);
  std::optional<op_id> last_allocation;
  for (op_id i = 0; i < until; ++i) {
    if (is_allocation_not_free(ops[i], run.origin[i])) last_allocation = i;
  }
  op_id start = *first_work;
  if (last_allocation) {
    for (op_id i = *last_allocation + 1; i < ops.size(); ++i) {
      if (work_end[i] >= 0.0) {
        start = i;
        break;
      }
    }
  }
  // A program that uploads its inputs, computes and downloads its results
  // once: the uploads done before its first kernel was issued ran alone
  // (nothing was there to overlap them) and are set-up; the device-to-host
  // copies that end the run, issued once every kernel had finished, are
  // teardown (the host reading results). A pipeline's copies overlap its
  // kernels and stay, and so does a copy that other work follows.
  std::string trimmed;
  if (first_kernel) {
    const double kernel_issued = run.origin[*first_kernel].call_start;
    op_id first_overlapping = *first_kernel;
    for (op_id i = start; i < *first_kernel; ++i) {
      if (work_end[i] >= 0.0 && work_end[i] > kernel_issued) {
        first_overlapping = i;
        break;
      }
    }
    if (first_overlapping != start) {
      start = first_overlapping;
      trimmed = "; the uploads done before the first kernel are startup";
    }
    double kernels_end = -1.0;
    for (op_id i = 0; i < ops.size(); ++i) {
      if (ops[i].kind == op_kind::kernel) kernels_end = std::max(kernels_end, work_end[i]);
    }
    // The results: the device-to-host copies that end the run, issued once
    // the kernels were done.
    auto results = static_cast<op_id>(ops.size());
    for (op_id i = results; i-- > start;) {
      if (work_end[i] < 0.0) continue;
      const bool result = ops[i].kind == op_kind::copy && ops[i].direction == copy_direction::d2h &&
                          run.origin[i].call_start >= kernels_end;
      if (!result) break;
      results = i;
    }
    double end = -1.0;
    for (op_id i = start; i < results; ++i) end = std::max(end, work_end[i]);
    if (end >= 0.0 && end < last_end) {
      last_end = end;
      trimmed += "; the result copies after the last kernel are teardown";
    }
  }
  // Warm-up: a library's first use (several threads each calling it for the
  // first time, say) loads modules in the first launches and kernel queries,
  // holding the runtime for milliseconds while the first kernels wait. While
  // loading calls are in flight at the start, the start moves to the first
  // device work issued after the last of them ends (a loading call begun
  // before that end extends it). The work issued later must remain the
  // larger part, else the loading is the run and stays.
  const std::vector<bool> loading = loading_calls(run);
  const double unloaded = run.origin[start].call_start;
  double loaded = unloaded;
  for (bool moved = true; moved;) {
    moved = false;
    for (op_id i = 0; i < ops.size(); ++i) {
      const OpOrigin& from = run.origin[i];
      if (loading[i] && from.call_start <= loaded && from.call_end > loaded) {
        loaded = from.call_end;
        moved = true;
      }
    }
  }
  if (loaded > unloaded) {
    std::optional<op_id> after;
    double work_before = 0.0;
    double work_after = 0.0;
    for (op_id i = 0; i < ops.size(); ++i) {
      if (work_end[i] < 0.0) continue;
      if (run.origin[i].call_start >= loaded) {
        if (!after || run.origin[i].call_start < run.origin[*after].call_start) after = i;
        work_after += 1.0;
      } else if (i >= start) {
        work_before += 1.0;
      }
    }
    if (after && work_after > work_before && run.origin[*after].call_start < last_end) {
      start = *after;
      trimmed +=
          fmt::format("; the first {:.3g} ms, modules loading on first use, are startup", loaded - unloaded);
    }
  }
  phases.steady_start = run.origin[start].call_start;
  phases.steady_end = last_end;
  phases.source = "device work";
  phases.text = last_allocation ? "from the first device work after the set-up allocations to the last"
                                : "from the first device work to the last";
  phases.text += trimmed;
}

StartupBreakdown breakdown(const Capture& run, double until) {
  StartupBreakdown b;
  b.context = std::clamp(run.first_call_end, 0.0, until);
  const auto& ops = run.program.ops();
  for (op_id i = 0; i < ops.size(); ++i) {
    const OpOrigin& from = run.origin[i];
    if (!from.call || from.synthesized) continue;
    // The first call's time is the context's.
    const double time = std::min(from.call_end, until) - std::max(from.call_start, b.context);
    if (time <= 0.0) continue;
    // Kernel queries included: their time in startup is the modules they load.
    if (ops[i].kind == op_kind::kernel || detail::is_module_loading(from.api)) {
      b.modules += time;
    } else if (from.allocation || from.api.find("HostRegister") != std::string::npos ||
               from.api.find("HostUnregister") != std::string::npos) {
      b.allocations += time;
    }
  }
  b.other = std::max(0.0, until - b.context - b.modules - b.allocations);
  return b;
}

// A chosen range's first instance at least twice as long as the typical
// one (of three or more) is warm-up, as for repeating calls: a training
// step that creates the cuBLAS handle and fills the caching allocator.
// Moves the steady state's start to the second instance and returns the
// text's note; empty (nothing moved) otherwise. Not for --range, which is
// taken as given.
std::string range_warm_up(const RangeGroup& g, Phases& phases) {
  if (g.instances.size() < 3) return {};
  std::vector<Window> by_start = g.instances;
  std::sort(by_start.begin(), by_start.end(),
            [](const Window& a, const Window& b) { return a.start < b.start; });
  std::vector<double> lengths;
  for (std::size_t i = 1; i < by_start.size(); ++i) lengths.push_back(by_start[i].end - by_start[i].start);
  const double typical = median_of(lengths);
  const double first_length = by_start[0].end - by_start[0].start;
  if (!(typical > 0.0 && first_length > 2.0 * typical)) return {};
  phases.steady_start = by_start[1].start;
  --phases.repetitions;
  return fmt::format("; the first ({:.3g} ms, against {:.3g} ms typically) is warm-up, counted as startup",
                     first_length, typical);
}

}  // namespace

Phases find_phases(const Capture& run, const PhaseOptions& options) {
  Phases phases;
  std::string warm_up;
  phases.end = run.timeline.total();
  if (!options.range.empty()) {
    const auto groups = group_ranges(run.ranges);
    const auto it = groups.find(options.range);
    if (it == groups.end()) {
      std::vector<std::string> names;
      names.reserve(groups.size());
      for (const auto& [name, g] : groups) names.push_back(fmt::format("'{}'", name));
      throw invalid_input(fmt::format("--range: the trace has no NVTX range named '{}' ({})", options.range,
                                      names.empty() ? std::string("it has no NVTX ranges")
                                                    : fmt::format("it has {}", fmt::join(names, ", "))));
    }
    phases.steady_start = it->second.extent.start;
    phases.steady_end = it->second.extent.end;
    phases.source = "range";
    phases.range = it->first;
    phases.repetitions = it->second.count;
  } else if (!run.profiled.empty()) {
    phases.steady_start = run.profiled.front().start;
    phases.steady_end = run.profiled.back().end;
    phases.source = "profiler";
    phases.text = fmt::format("cudaProfilerStart to cudaProfilerStop, {} time{}", run.profiled.size(),
                              run.profiled.size() == 1 ? "" : "s");
  } else if (const auto chosen = default_range(run)) {
    phases.steady_start = chosen->second.extent.start;
    phases.steady_end = chosen->second.extent.end;
    phases.source = "range";
    phases.range = chosen->first;
    phases.repetitions = chosen->second.count;
    warm_up = range_warm_up(chosen->second, phases);
  } else if (!repetition(run, phases)) {
    from_device_work(run, phases);
  }
  if (phases.source == "range")
    phases.text =
        fmt::format("the NVTX range '{}', {} instance{}{}{}", phases.range, phases.repetitions,
                    phases.repetitions == 1 ? "" : "s", options.range.empty() ? "" : " (--range)", warm_up);
  phases.steady_start = std::clamp(phases.steady_start, 0.0, std::max(0.0, phases.end));
  phases.steady_end =
      std::clamp(phases.steady_end, phases.steady_start, std::max(phases.steady_start, phases.end));
  phases.startup = breakdown(run, phases.steady_start);
  return phases;
}

namespace detail {

bool is_kernel_query(const std::string& api) {
  return api.starts_with("cudaOccupancy") || api.starts_with("cuOccupancy") ||
         api.starts_with("cudaFuncGet") || api.starts_with("cuFuncGet");
}

bool is_module_loading(const std::string& api) {
  return api.starts_with("cuLibrary") || api.starts_with("cuModule") || api.starts_with("cuKernel") ||
         api.starts_with("cudaGetFuncBySymbol") || is_kernel_query(api);
}

}  // namespace detail

}  // namespace overlap::trace
