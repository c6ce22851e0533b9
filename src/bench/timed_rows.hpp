// Timing a row outside workload_bench: warm-up and timed runs through the
// run_clock, with a hook before each run and a check after it. Private to
// src/bench.
#pragma once

#include <functional>
#include <string>

#include "overlap/bench/driver.hpp"
#include "run_clock.hpp"

namespace overlap::bench::detail {

/// What runs around each run of a row (either may be empty).
struct row_hooks {
  std::function<void()> before;             ///< untimed, before each run (e.g. poison the output)
  std::function<void(unsigned run)> check;  ///< untimed, after each run; throws wrong_output
};

/// `warmup` untimed and `reps` timed runs of `run`, every one checked.
[[nodiscard]] variant_result time_row(run_clock& clock, unsigned warmup, unsigned reps, variant_kind kind,
                                      std::string name, const runner& run, const row_hooks& hooks = {});

/// Called with a row's name before it is measured (progress).
using announce_row = std::function<void(const std::string&)>;

/// The frames workload (frames_bench.cpp): Feeds, the tutorial's ping-pong, the copy rate.
[[nodiscard]] feed_result measure_frames(const bench_config& config, run_clock& clock,
                                         const announce_row& announce);

/// The pageable workload (pageable_bench.cpp): naive, registered, staged, pinned, the host copy floor.
[[nodiscard]] pageable_result measure_pageable(const bench_config& config, run_clock& clock,
                                               const announce_row& announce);

}  // namespace overlap::bench::detail
