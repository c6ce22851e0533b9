// overlap::trace communication: collective kernels (NCCL's) against compute
// on one process's GPU.
//
// A data-parallel training step all-reduces gradients while backward still
// computes: the communication hides under compute only when the two run at
// once, on different streams. Per process (per rank) this measures what
// Holistic Trace Analysis calls the computation/communication overlap and
// the temporal breakdown, the same way, so the two can be compared on one job:
//
//   - kernels whose name starts with "nccl" (or holds "ncclKernel") are
//     communication; copies and memsets are memory; every other kernel is compute;
//   - overlap = the time communication and compute kernels ran at once, over
//     the time communication kernels ran (each kind's intervals merged first);
//   - idle = from the first GPU work's start to the last one's end, less the
//     time any of it ran.
//
// Only work issued inside a window counts (the audit's steady state: a
// training loop's steps), as HTA keeps the kernels launched inside the
// profiler's steps.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "overlap/core/timeline.hpp"
#include "overlap/trace/capture.hpp"

namespace overlap::trace {

/// What a span of GPU work is, for the communication figures.
enum class work_role : std::uint8_t {
  compute,        ///< a kernel that is not a collective
  communication,  ///< a collective's kernel (NCCL)
  memory,         ///< a copy or memset
  other,          ///< event records and waits, host functions: no GPU time
};

/// A collective library's kernel: the name starts with "nccl" or holds
/// "ncclKernel" (NCCL's kernels, and RCCL's under the same names).
[[nodiscard]] bool is_communication_kernel(std::string_view name) noexcept;

/// The role of `span` (its label is the kernel's name).
[[nodiscard]] work_role role_of(const Span& span) noexcept;

/// Communication and compute of one process's GPU work in a window, ms.
struct CommunicationUse {
  double window_start = 0.0;  ///< work counts when its call was made in [window_start, window_end]
  double window_end = 0.0;    ///< the window's end, ms of the run's timeline
  std::size_t communication_kernels = 0;  ///< collective kernels counted
  std::size_t compute_kernels = 0;        ///< compute kernels counted
  double communication = 0.0;             ///< collective kernels' time, their intervals merged
  double compute = 0.0;                   ///< compute kernels' time, merged
  double overlapped = 0.0;                ///< time both ran at once
  double span = 0.0;                      ///< the first counted GPU work's start to the last one's end
  double busy = 0.0;                      ///< time some counted GPU work ran (kernels, copies, memsets)
  /// Streams (by name) that ran both collective and compute kernels: on
  /// those the two never overlap, each waits for the other.
  std::vector<std::string> shared_streams;
  /// Collective kernels' time on shared_streams, merged.
  double communication_on_shared = 0.0;

  /// `span` less `busy`: the GPU ran nothing.
  [[nodiscard]] double idle() const noexcept { return span - busy; }
  /// overlapped / communication; empty without communication.
  [[nodiscard]] std::optional<double> overlap_fraction() const noexcept;
  /// idle() / span; 0 for an empty span.
  [[nodiscard]] double idle_fraction() const noexcept;
};

/// The figures for `run`'s work issued in [window_start, window_end] (ms of
/// its timeline): an op counts when the call that issued it began in the
/// window (OpOrigin::call_start).
[[nodiscard]] CommunicationUse communication_use(const Capture& run, double window_start, double window_end);

}  // namespace overlap::trace
