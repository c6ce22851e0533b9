// overlap::sim::plan: the best way to pipeline a workload on a device model.
//
// Given bytes in and out, what the kernel costs, an optional device memory
// budget and a DeviceModel, it tries chunk schedules (uniform chunk sizes
// and ramps that start and end small) x stream counts x issue orders x ring
// depths, simulates each candidate, and returns them best first with the
// floor no configuration can beat and the engine that bounds each one. A
// closed-form lower bound per candidate (each engine's total work, the host's
// issue time, the fill and drain of the pipeline) skips simulating those
// that cannot beat the best two found so far.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "overlap/core/device_model.hpp"
#include "overlap/core/kernel_cost.hpp"
#include "overlap/core/pipeline_shape.hpp"

namespace overlap::sim {

/// What is to be pipelined.
struct Workload {
  std::uint64_t bytes_in = 0;   ///< copied to the device (> 0): the chunks are cut from it
  std::uint64_t bytes_out = 0;  ///< copied back, each chunk its share of it (may be 0)
  /// The kernel, at most one of: its total time over all the data, its
  /// throughput over the input bytes, or a per-chunk curve. None: no kernel.
  std::optional<double> kernel_total_ms;
  std::optional<double> kernel_gigabytes_per_second;  ///< 1 GB = 1e9 bytes of input
  /// The per-chunk curve: one kernel's time over a chunk's input bytes.
  std::optional<KernelCost> kernel_cost;
  /// Device memory the ring of chunk buffers may take; none = no limit.
  std::optional<std::uint64_t> device_budget;
  /// Host memory of the input and output: picks the model's pinned or pageable copy curves.
  host_memory memory = host_memory::pinned;

  /// The kernel as a curve: a total time or a rate is a per-MiB cost with no
  /// fixed part (the model's launch latency still applies). None if no kernel.
  [[nodiscard]] std::optional<KernelCost> kernel_curve() const;
};

/// The search space.
struct PlanOptions {
  /// Chunk sizes to try; empty: powers of two from min_chunk_bytes up to the
  /// whole input (and the whole input itself), at most max_chunks chunks.
  std::vector<std::uint64_t> chunk_sizes;
  /// The smallest chunk size generated when chunk_sizes is empty (> 0).
  std::uint64_t min_chunk_bytes = 256ULL << 10;
  /// The most chunks a generated size or a ramp may cut the input into (>= 1).
  std::uint32_t max_chunks = 1024;
  std::uint32_t max_streams = 8;  ///< streams 1..max_streams
  /// Issue orders to try. issue_order::stage_first may be added: its ring
  /// holds every chunk (ring_factors do not apply to it).
  std::vector<issue_order> orders = {issue_order::depth_first, issue_order::breadth_first};
  /// Ring depths as multiples of the stream count (1: one slot per stream).
  std::vector<std::uint32_t> ring_factors = {1, 2};
  /// Also try ramp schedules: for each chunk size `large`, ramps from
  /// min size, large / 16 and large / 4 up to large and back.
  bool schedules = true;
  /// Skip candidates whose lower bound exceeds the runner-up so far. Off:
  /// simulate everything (the answer is the same, only slower).
  bool prune = true;
  /// GPUs the chunks are spread over, chunk c on GPU c mod devices
  /// (PipelineShape::devices), each with its own streams and ring; the
  /// model's host links (DeviceModel::host), when it has them, share the
  /// host's rates among the GPUs copying at once. Schedules of fewer chunks
  /// than GPUs are not tried.
  std::uint32_t devices = 1;
};

/// Busy time of each engine in a candidate's simulated run (ms); on several
/// GPUs, the busiest GPU's engine of each kind.
struct EngineBusy {
  double h2d = 0.0;      ///< H2D copy engine (or the shared copy engine's H2D part)
  double d2h = 0.0;      ///< D2H copy engine
  double compute = 0.0;  ///< kernels
  double host = 0.0;     ///< the host thread issuing calls
};

/// One simulated configuration.
struct PlanCandidate {
  /// The configuration as a pipeline, ready for make_pipeline_program.
  PipelineShape shape;
  /// "uniform" or "ramp".
  std::string schedule_kind;
  /// Chunks the input is cut into.
  std::uint32_t chunks = 0;
  std::uint64_t first_chunk_bytes = 0;    ///< the ramp's smallest, or the uniform size
  std::uint64_t largest_chunk_bytes = 0;  ///< the uniform size, or the ramp's peak
  /// Streams the chunks are issued on, round-robin.
  std::uint32_t streams = 0;
  /// The order the chunks' copies and kernels are issued in.
  issue_order order = issue_order::depth_first;
  /// Chunk buffer slots in the ring: a PlanOptions::ring_factors multiple of
  /// streams, or every chunk with issue_order::stage_first.
  std::uint32_t ring_depth = 0;
  std::uint64_t ring_bytes = 0;  ///< device memory of the ring (ring_depth x largest chunk in + out)

  double predicted_ms = 0.0;    ///< simulated total time
  double lower_bound_ms = 0.0;  ///< the closed-form bound used for pruning (<= predicted_ms)
  /// Each engine's busy time in the simulated run.
  EngineBusy busy;
  /// The busiest engine: "H2D copy engine", "D2H copy engine", "copy
  /// engine" (one shared by both directions), "compute" or "host issue".
  std::string bound;
  /// Busy time of the `bound` engine.
  double bound_busy_ms = 0.0;
  /// Idle time of the bound engine before its first op.
  double bound_idle_before_ms = 0.0;
  /// Idle time of the bound engine after its last op, to the end of the run.
  double bound_idle_after_ms = 0.0;

  /// "16 chunks of 16 MiB" or "ramp 1 MiB -> 16 MiB (30 chunks)".
  [[nodiscard]] std::string describe_schedule() const;
};

/// The floor: no configuration of the workload runs faster on the model.
struct PlanFloor {
  double h2d_ms = 0.0;     ///< bytes_in at the H2D curve's peak rate
  double d2h_ms = 0.0;     ///< bytes_out at the D2H curve's peak rate
  double copies_ms = 0.0;  ///< both directions, overlapped under the bidirectional slowdown (or one engine)
  double kernel_ms = 0.0;  ///< the kernel's per-byte work over all the data (no launch's fixed part)
  double total_ms = 0.0;   ///< the largest of the above
  /// Which of them: "H2D copies", "D2H copies", "copies in both
  /// directions", "kernel"; on several GPUs "a GPU's link" (each GPU's copies
  /// at its own link's peak), "the host's shared rate" (every GPU copying at
  /// once, as the host model measured) or "kernel".
  std::string bound;
  std::uint32_t devices = 1;  ///< GPUs the work is spread over
  /// On several GPUs: the copies at each GPU's own link rate, the slowest
  /// GPU's share (0 on one GPU: copies_ms is that).
  double links_ms = 0.0;
  /// On several GPUs with a host model: every GPU's copies at the host's
  /// measured totals (0 otherwise).
  double host_ms = 0.0;
};

/// The planner's answer.
struct Plan {
  /// The fastest candidate; among ties, the simplest (as in `candidates`).
  PlanCandidate best;
  /// The best candidate with another schedule or stream count than `best`
  /// (its issue order and ring depth alone make a variant, not a rival:
  /// a deeper ring never runs faster); none if there is none.
  std::optional<PlanCandidate> runner_up;
  /// Other simulated candidates whose predicted time ties with the fastest
  /// (within 0.1%: the model is not that exact), e.g. the other issue order,
  /// a deeper ring or more streams; best is the simplest of them.
  std::size_t ties = 0;
  PlanFloor floor;              ///< as plan_floor gives it
  std::size_t considered = 0;   ///< configurations in the search space that fit the budget
  std::size_t simulated = 0;    ///< of those, simulated
  std::size_t pruned = 0;       ///< skipped: their lower bound exceeds the runner-up found so far
  std::size_t over_budget = 0;  ///< left out: their ring does not fit device_budget
  /// Every simulated candidate, best first: those within 0.1% of the
  /// fastest prediction, simplest first (fewer streams, fewer chunks,
  /// uniform before ramp, depth-first before breadth-first before
  /// stage-first, smaller ring), then the rest by time.
  std::vector<PlanCandidate> candidates;
};

/// Searches `options`' space for `workload` on `model`. Throws
/// overlap::invalid_input naming the field: bytes_in, bytes_out,
/// kernel_total_ms, kernel_gigabytes_per_second, kernel_cost (and more than
/// one kernel form), device_budget (too small for the smallest ring
/// searched), chunk_sizes, max_streams, max_chunks, orders, ring_factors.
[[nodiscard]] Plan plan(const Workload& workload, const DeviceModel& model, const PlanOptions& options = {});

/// Why `winner` ranks before `other`: "0.12 ms faster" or, for a tie (both
/// within 0.1% of the faster of the two), the tie-break that decides it
/// ("fewer streams", "fewer chunks", "a uniform schedule", "depth-first
/// issue", "a smaller ring", "larger chunks").
[[nodiscard]] std::string preference_reason(const PlanCandidate& winner, const PlanCandidate& other);

/// The floor alone (also in Plan::floor).
[[nodiscard]] PlanFloor plan_floor(const Workload& workload, const DeviceModel& model);

}  // namespace overlap::sim
