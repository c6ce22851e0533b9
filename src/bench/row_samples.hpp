// The samples of one measured row, gathered run by run and summarized at
// the end. Private to src/bench.
#pragma once

#include <vector>

#include "overlap/bench/driver.hpp"
#include "run_clock.hpp"

namespace overlap::bench::detail {

/// One row's samples; `result` holds its kind and name from the start.
struct row_samples {
  variant_result result;                   ///< kind and name set by the caller; the rest by describe/finish
  std::vector<double> device_ms;           ///< CUDA events, per timed run
  std::vector<double> host_ms;             ///< host clock, per timed run
  std::vector<double> issue_ms;            ///< host issue time, per timed run that reported one
  std::vector<double> issue_per_chunk_us;  ///< the same divided by the run's chunks

  /// Adds one timed run.
  void add(const run_clock::sample& s);
  /// Takes the row's shape from a run (Pipeline decides its own chunking).
  void describe(const run_info& info);
  /// The row with its statistics.
  [[nodiscard]] variant_result finish() &&;
};

/// numerators[i] / denominators[i] for each run both have (a positive
/// denominator), summarized: two rows measured alternating, compared run by run.
[[nodiscard]] stats run_by_run(const std::vector<double>& numerators,
                               const std::vector<double>& denominators);

}  // namespace overlap::bench::detail
