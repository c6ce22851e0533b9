// overlap::Metrics: how well a Timeline used the hardware, and why not better.
//
// Computed from any Timeline, predicted or measured: total and sequential
// time, speedup, per-engine busy fraction, the fraction of time two or more
// engines were busy at once, the bound (the busiest engine's total work) and
// how close the run came to it, and the stalls that kept engines idle.
#pragma once

#include <optional>
#include <vector>

#include "overlap/core/timeline.hpp"

namespace overlap {

/// Busy time of one engine over the run.
struct EngineUsage {
  engine unit = engine::none;  ///< the engine
  device_id device = 0;        ///< the GPU it belongs to (each GPU has its own engines)
  double busy = 0.0;           ///< length of the union of its spans
  double busy_fraction = 0.0;  ///< busy / total
};

/// An engine sat idle while work for it was pending: who waited, and on what.
struct Stall {
  engine unit = engine::none;              ///< the engine that sat idle
  device_id device = 0;                    ///< its GPU
  double idle_from = 0.0;                  ///< the engine's previous span ended here
  double idle_to = 0.0;                    ///< the waiting op started here
  op_id op = 0;                            ///< the op that started at idle_to
  wait_reason reason = wait_reason::none;  ///< why the op started late (its span's waited_because)
  std::optional<op_id> waited_for;         ///< the op it waited for, when there is one

  /// Length of the gap: idle_to - idle_from.
  [[nodiscard]] double idle() const noexcept { return idle_to - idle_from; }
};

/// Utilisation and overlap figures of a Timeline.
struct Metrics {
  double total = 0.0;                ///< the run's length, Timeline::total()
  double sequential = 0.0;           ///< no-overlap time, effective_sequential_time()
  double speedup = 0.0;              ///< sequential / total (0 when total is 0)
  std::vector<EngineUsage> engines;  ///< engines with work, busiest first
  /// Fraction of the run during which at least two engines were busy.
  double multi_engine_busy_fraction = 0.0;
  /// The busiest engine and its busy time: no schedule beats it.
  engine bound_engine = engine::none;
  device_id bound_device = 0;     ///< bound_engine's GPU
  double bound = 0.0;             ///< bound_engine's busy time
  double bound_attainment = 0.0;  ///< bound / total, 1 = at the bound
  /// Idle gaps inside each engine's active window, longest first.
  std::vector<Stall> stalls;
};

/// The no-overlap reference time: timeline.sequential_time, or when that is
/// 0 (a measured run that never ran sequentially) the sum of the work spans'
/// solo durations, or failing those their durations.
[[nodiscard]] double effective_sequential_time(const Timeline& timeline);

/// Computes the metrics of `timeline`.
[[nodiscard]] Metrics compute_metrics(const Timeline& timeline);

}  // namespace overlap
