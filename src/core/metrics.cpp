#include "overlap/core/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <utility>

namespace overlap {

namespace {

constexpr std::size_t engine_count = static_cast<std::size_t>(engine::none) + 1;

struct Interval {
  double start = 0.0;
  double end = 0.0;
};

// Spans that occupy hardware: ordering-only records/waits and zero-length
// spans would add nothing to busy time and would fake stalls.
bool occupies_engine(const Span& span) noexcept {
  return span.unit != engine::none && span.end > span.start;
}

// Indices of each engine's spans, sorted by start: the one O(n log n) step
// that busy time, stalls and the overlap sweep all build on. Each GPU has
// its own engines: slot device * engine_count + engine.
std::vector<std::vector<std::size_t>> spans_by_engine(const Timeline& timeline) {
  std::vector<std::vector<std::size_t>> groups(std::size_t{timeline.device_count()} * engine_count);
  for (std::size_t i = 0; i < timeline.spans.size(); ++i) {
    const Span& span = timeline.spans[i];
    if (occupies_engine(span))
      groups[timeline.device_of(span) * engine_count + static_cast<std::size_t>(span.unit)].push_back(i);
  }
  for (auto& group : groups) {
    std::sort(group.begin(), group.end(), [&](std::size_t a, std::size_t b) {
      const Span& x = timeline.spans[a];
      const Span& y = timeline.spans[b];
      return x.start != y.start ? x.start < y.start : x.op < y.op;
    });
  }
  return groups;
}

// Merges one engine's sorted spans into disjoint intervals and records every
// gap that a later span had to wait across.
std::vector<Interval> merge_and_find_stalls(const Timeline& timeline, const std::vector<std::size_t>& sorted,
                                            engine unit, device_id device, double tolerance,
                                            std::vector<Stall>& stalls) {
  std::vector<Interval> merged;
  for (std::size_t index : sorted) {
    const Span& span = timeline.spans[index];
    if (merged.empty()) {
      merged.push_back({span.start, span.end});
      continue;
    }
    Interval& last = merged.back();
    if (span.start - last.end > tolerance) {
      stalls.push_back({unit, device, last.end, span.start, span.op, span.waited_because, span.waited_for});
      merged.push_back({span.start, span.end});
    } else {
      last.end = std::max(last.end, span.end);
    }
  }
  return merged;
}

double union_length(const std::vector<Interval>& merged) noexcept {
  double busy = 0.0;
  for (const Interval& interval : merged) busy += interval.end - interval.start;
  return busy;
}

// Each engine's intervals are disjoint, so the number of open intervals at a
// point is the number of distinct busy engines there.
double time_with_two_or_more_busy(const std::vector<std::vector<Interval>>& merged) {
  std::vector<std::pair<double, int>> events;
  for (const auto& intervals : merged) {
    for (const Interval& interval : intervals) {
      events.emplace_back(interval.start, +1);
      events.emplace_back(interval.end, -1);
    }
  }
  // Ends sort before starts at the same instant: touching spans do not overlap.
  std::sort(events.begin(), events.end());
  double overlapped = 0.0;
  int open = 0;
  double previous = 0.0;
  for (const auto& [time, delta] : events) {
    if (open >= 2) overlapped += time - previous;
    open += delta;
    previous = time;
  }
  return overlapped;
}

std::vector<EngineUsage> usage_busiest_first(const std::vector<std::vector<Interval>>& merged, double total) {
  std::vector<EngineUsage> usage;
  for (std::size_t slot = 0; slot < merged.size(); ++slot) {
    if (merged[slot].empty()) continue;
    const double busy = union_length(merged[slot]);
    usage.push_back({static_cast<engine>(slot % engine_count), static_cast<device_id>(slot / engine_count),
                     busy, total > 0.0 ? busy / total : 0.0});
  }
  // Stable: equally busy engines keep device and enum order, so output is deterministic.
  std::stable_sort(usage.begin(), usage.end(),
                   [](const EngineUsage& a, const EngineUsage& b) { return a.busy > b.busy; });
  return usage;
}

void sort_longest_first(std::vector<Stall>& stalls) {
  std::sort(stalls.begin(), stalls.end(), [](const Stall& a, const Stall& b) {
    if (a.idle() != b.idle()) return a.idle() > b.idle();
    if (a.idle_from != b.idle_from) return a.idle_from < b.idle_from;
    if (a.device != b.device) return a.device < b.device;
    if (a.unit != b.unit) return a.unit < b.unit;
    return a.op < b.op;
  });
}

}  // namespace

double effective_sequential_time(const Timeline& timeline) {
  if (timeline.sequential_time > 0.0) return timeline.sequential_time;
  double solo = 0.0;
  double measured = 0.0;
  for (const Span& span : timeline.spans) {
    if (span.unit == engine::none) continue;
    solo += span.solo_duration;
    measured += span.duration();
  }
  return solo > 0.0 ? solo : measured;
}

Metrics compute_metrics(const Timeline& timeline) {
  Metrics metrics;
  metrics.total = timeline.total();
  metrics.sequential = effective_sequential_time(timeline);
  metrics.speedup = metrics.total > 0.0 ? metrics.sequential / metrics.total : 0.0;

  // Gaps are judged relative to the run so rounding noise in measured
  // timelines (microsecond events over seconds) is not reported as a stall.
  const double tolerance = 1e-9 * std::max(1.0, std::abs(metrics.total));
  const auto groups = spans_by_engine(timeline);
  std::vector<std::vector<Interval>> merged(groups.size());
  for (std::size_t slot = 0; slot < groups.size(); ++slot) {
    merged[slot] =
        merge_and_find_stalls(timeline, groups[slot], static_cast<engine>(slot % engine_count),
                              static_cast<device_id>(slot / engine_count), tolerance, metrics.stalls);
  }

  metrics.engines = usage_busiest_first(merged, metrics.total);
  if (metrics.total > 0.0) {
    metrics.multi_engine_busy_fraction = time_with_two_or_more_busy(merged) / metrics.total;
  }
  if (!metrics.engines.empty()) {
    metrics.bound_engine = metrics.engines.front().unit;
    metrics.bound_device = metrics.engines.front().device;
    metrics.bound = metrics.engines.front().busy;
    metrics.bound_attainment = metrics.total > 0.0 ? metrics.bound / metrics.total : 0.0;
  }
  sort_longest_first(metrics.stalls);
  return metrics;
}

}  // namespace overlap
