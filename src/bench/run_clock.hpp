// The timing bracket: every run, of every variant and floor, is timed the
// same way, so Pipeline (whose streams are its own) is timed like the rest.
// Private to src/bench.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>

#include "overlap/cuda/event.hpp"
#include "overlap/cuda/stream.hpp"

namespace overlap::bench::detail {

using host_clock = std::chrono::steady_clock;

/// Host milliseconds from `start` to now.
[[nodiscard]] double milliseconds_since(host_clock::time_point start);

/// What a runner reports about one run.
struct run_info {
  std::optional<double> host_issue_ms;  ///< host time spent issuing (Pipeline's run_report.host_issue_ms)
  std::size_t chunks = 1;               ///< pieces the data went in
  std::size_t chunk_bytes = 0;          ///< input bytes per piece
  unsigned streams = 1;                 ///< streams the run used
  std::size_t device_bytes = 0;         ///< Pipeline only: its ring's device memory
  bool per_stage = false;               ///< streams by stage (upload, kernels, download), not by chunk
};

/// Issues one complete run, with `start` already recorded, and returns once
/// all its work has completed (the host has synchronized with it).
using runner = std::function<run_info(const cuda::event& start)>;

/// A timing stream and two events. The start event is recorded before the
/// host issues anything, the end event after the host has seen the run
/// complete: what a caller of a synchronous run waits, on the GPU's clock.
class run_clock {
 public:
  /// One timed run.
  struct sample {
    double device_ms = 0.0;  ///< between the two events
    double host_ms = 0.0;    ///< the same bracket on the host's steady clock
    run_info info;           ///< what the runner said about the run
  };

  /// Times one run of `run`.
  [[nodiscard]] sample time(const runner& run);

 private:
  cuda::stream stream_{cuda::stream::options{cuda::stream_sync::non_blocking, 0}};
  cuda::event start_{cuda::event_timing::enabled};
  cuda::event end_{cuda::event_timing::enabled};
};

}  // namespace overlap::bench::detail
