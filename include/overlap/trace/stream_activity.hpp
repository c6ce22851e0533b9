// overlap::trace stream activity: per CUDA stream, why it sat idle between
// its ops and how many ops waited in its queue, and how much of the GPU's
// communication (NCCL) time overlapped computation, over a whole trace.
//
// These are the figures Meta's Holistic Trace Analysis gives for a PyTorch
// profiler trace (its idle time breakdown, queue length summary and
// communication/computation overlap), defined the same way so that the two
// tools can be checked against each other on one trace
// (tests/check_against_hta.py), and computed from our own traces too.
// docs/audit.md states each definition.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "overlap/trace/trace_file.hpp"

namespace overlap::trace {

/// Why one stream sat idle between consecutive ops (kernels, copies,
/// memsets), summed over the gaps, in milliseconds.
struct StreamIdleTime {
  std::uint32_t stream = 0;  ///< CUPTI stream id
  /// Gaps where the op's launching call started only after the previous op
  /// had finished: the host did not issue fast enough.
  double host_wait_ms = 0.0;
  /// Other gaps shorter than the kernel gap threshold: launch latency
  /// between ops already queued.
  double kernel_wait_ms = 0.0;
  double other_ms = 0.0;             ///< the remaining gaps (waits on other streams, events, syncs)
  std::size_t host_wait_gaps = 0;    ///< gaps counted in host_wait_ms
  std::size_t kernel_wait_gaps = 0;  ///< gaps counted in kernel_wait_ms
  std::size_t other_gaps = 0;        ///< gaps counted in other_ms

  /// All the stream's idle time between its first op and its last, ms.
  [[nodiscard]] double total_ms() const noexcept { return host_wait_ms + kernel_wait_ms + other_ms; }
};

/// Ops issued to one stream and not yet started: +1 when a launch, async
/// copy or async memset call is entered, -1 when its op starts on the device.
struct StreamQueueLength {
  std::uint32_t stream = 0;  ///< CUPTI stream id
  std::size_t changes = 0;   ///< points of the step function (two per op)
  double mean = 0.0;         ///< mean of the values at those points (not weighted by time, as HTA's summary)
  std::size_t max = 0;       ///< the longest queue
};

/// The whole trace's stream activity.
struct StreamActivity {
  std::vector<StreamIdleTime> idle;       ///< per stream with ops, by stream id
  std::vector<StreamQueueLength> queues;  ///< per stream with issued ops, by stream id
  /// The share of communication kernels' time (names containing "nccl", their
  /// intervals merged) during which computation kernels (every other kernel)
  /// ran too; empty when no communication kernel ran.
  std::optional<double> communication_overlap;
  double kernel_gap_ms = 0.03;  ///< the threshold that splits kernel waits from other gaps
};

/// Computes the stream activity of `trace`; gaps shorter than `kernel_gap_ms`
/// (HTA's consecutive_kernel_delay, 30 us by default) are kernel waits.
[[nodiscard]] StreamActivity stream_activity(const RawTrace& trace, double kernel_gap_ms = 0.03);

}  // namespace overlap::trace
