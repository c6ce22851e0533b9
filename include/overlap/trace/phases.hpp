// overlap::trace phases: a traced run split into startup, steady state and teardown.
//
// A real program spends its first milliseconds (often most of a short run)
// creating its context, loading modules, allocating and uploading, and its
// last ones freeing; what its streams do is the part in between, usually a
// loop. The audit judges that part: its idle gaps, its traps' measured
// costs and its verdict are about the steady state, and startup is one line.
//
// The steady state comes, in this order, from
//   1. the NVTX range the caller names (PhaseOptions::range): from its first
//      instance's start to its last one's end;
//   2. cudaProfilerStart/cudaProfilerStop: from the first start to the last stop;
//   3. the NVTX ranges: the repeated range (one name, opened at least twice:
//      a loop's iteration) under which the device worked most, else the single
//      range under which it worked most;
//   4. the repeating sequence of calls (see find_phases);
//   5. from the first device work issued after the last allocation made before
//      the first kernel, to the end of the last device work.
//
//   const Phases phases = find_phases(capture(load_trace("trace.jsonl")));
//   // phases.steady_start, phases.steady_end, phases.startup.modules ...
#pragma once

#include <cstddef>
#include <string>

#include "overlap/trace/capture.hpp"

namespace overlap::trace {

/// How to find the steady state.
struct PhaseOptions {
  /// The NVTX range whose instances bound the steady state (the audit's
  /// --range); empty: chosen as described in phases.hpp.
  std::string range;
};

/// Where startup's time went, ms. The parts add up to the startup's length.
struct StartupBreakdown {
  /// From the trace start until the first CUDA call returned: the driver
  /// creates the context (and loads the tracer) inside that call.
  double context = 0.0;
  /// Host time in kernel launches and module-loading calls: with lazy
  /// loading (CUDA 12's default) a kernel's first launch loads its module.
  double modules = 0.0;
  /// Host time in allocations, frees and host-memory registrations.
  double allocations = 0.0;
  /// The rest: copies, synchronizations, other calls, the host's own work.
  double other = 0.0;
};

/// A run split in three. Times are ms from the trace start (the Timeline's 0).
struct Phases {
  /// Startup is [0, steady_start).
  double steady_start = 0.0;
  /// The steady state is [steady_start, steady_end); teardown [steady_end, end).
  double steady_end = 0.0;
  double end = 0.0;  ///< the end of the run (Timeline::total())
  /// How the steady state was found: "range" (an NVTX range), "profiler"
  /// (cudaProfilerStart/Stop), "repetition" (repeating calls), "device work"
  /// (the fallback) or "whole run" (no device work at all).
  std::string source = "whole run";
  /// The NVTX range's name, for source "range".
  std::string range;
  /// Repeating calls: ops per repetition, and how many repetitions the steady state holds.
  std::size_t period = 0;
  std::size_t repetitions = 0;  ///< also the number of range instances, for source "range"
  /// How it was found, in words: "the NVTX range 'step' (20 instances)".
  std::string text;
  StartupBreakdown startup;  ///< where startup's time went

  /// steady_start: startup's length, ms.
  [[nodiscard]] double startup_length() const noexcept { return steady_start; }
  /// The steady state's length, ms.
  [[nodiscard]] double steady_length() const noexcept { return steady_end - steady_start; }
  /// Teardown's length, ms.
  [[nodiscard]] double teardown_length() const noexcept { return end > steady_end ? end - steady_end : 0.0; }
  /// True when time `t` (ms) falls in the steady state.
  [[nodiscard]] bool in_steady(double t) const noexcept { return t >= steady_start && t <= steady_end; }
};

/// Splits `run`. The repeating sequence of calls (step 4 in phases.hpp) is
/// found on signatures of the calls that issue, order or wait for device work
/// and of allocations (api, stream, kernel name): the period with the most
/// positions i where call i matches call i + period, over runs of matches
/// that stretches shorter than one period may interrupt (an extra call now
/// and then shifts one repetition, not the loop), tried on the distances
/// that most often separate two calls with one signature. It counts when it
/// repeats at least twice and holds at least half of the device work; a
/// first repetition more than twice as long as the median one is warm-up
/// (lazy module loading, first-touch allocation) and goes to startup.
/// Throws overlap::invalid_input when options.range names no range of the trace.
[[nodiscard]] Phases find_phases(const Capture& run, const PhaseOptions& options = {});

}  // namespace overlap::trace
