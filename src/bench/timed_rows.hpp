// Timing a row outside workload_bench: warm-up and timed runs through the
// run_clock, with a hook before each run and a check after it. Private to
// src/bench.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "overlap/bench/driver.hpp"
#include "run_clock.hpp"

namespace overlap::bench::detail {

/// What runs around each run of a row (either may be empty).
struct row_hooks {
  std::function<void()> before;             ///< untimed, before each run (e.g. poison the output)
  std::function<void(unsigned run)> check;  ///< untimed, after each run; throws wrong_output
};

/// One row to time: what it is, how to run it once, and its hooks.
struct row_spec {
  variant_kind kind = variant_kind::feed;
  std::string name;
  runner run;
  row_hooks hooks;
};

/// `warmup` untimed and `reps` timed runs of every row, alternating row by
/// row within each round, so that drift on a shared machine (the lent
/// GPUs' links swing by 10% within a minute) hits every row alike.
/// `after_round`, when set, runs untimed after each round (0 .. warmup +
/// reps - 1): a floor measured beside the rows.
[[nodiscard]] std::vector<variant_result> time_rows(
    run_clock& clock, unsigned warmup, unsigned reps, const std::vector<row_spec>& rows,
    const std::function<void(unsigned round)>& after_round = {});

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

/// Several GPUs (devices_bench.cpp): the two jobs over 1..N of config.devices.devices.
[[nodiscard]] devices_result measure_devices(const bench_config& config, run_clock& clock,
                                             const announce_row& announce);

/// cuda::Graph (graph_bench.cpp): branches, tiny kernels, the CPU-only DAG;
/// `sm_count` sizes the branches' kernels.
[[nodiscard]] graph_result measure_graph(const bench_config& config, run_clock& clock,
                                         const announce_row& announce, int sm_count);

}  // namespace overlap::bench::detail
