// overlap::Timeline: what ran where and when.
//
// One type for predicted runs (the simulator) and measured runs (CUDA
// events): a span per stream op on its stream and engine, host spans for API
// calls, blocked waits and host work, and for each span the constraint that
// decided its start time, so a report can say *why* a run was not faster.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "overlap/core/program.hpp"

namespace overlap {

/// The hardware unit a span occupied.
enum class engine : std::uint8_t {
  h2d_copy,       ///< the host-to-device copy engine
  d2h_copy,       ///< the device-to-host copy engine
  copy,           ///< one copy engine shared by both directions (older GPUs)
  d2d_copy,       ///< device-to-device copies
  compute,        ///< the SMs: kernels and memsets
  host_callback,  ///< the driver thread running host functions
  none,           ///< event records and waits: ordering only, no work
};

/// Why a span started when it did rather than earlier: the binding constraint.
enum class wait_reason : std::uint8_t {
  none,               ///< started as soon as it was issued
  host_issue,         ///< the host issued it late (blocked or busy before)
  stream_order,       ///< waited for the previous op in its own stream
  event_wait,         ///< waited for an event recorded on another stream
  default_stream,     ///< the legacy default stream barrier
  engine_busy,        ///< its engine was running another op
  gpu_full,           ///< kernels filling the GPU had to drain first
  queue_head,         ///< a hardware queue shared with another stream (false dependency)
  completion_signal,  ///< a kernel completion signal held back until a batch finished
};

[[nodiscard]] std::string_view to_string(engine e) noexcept;
[[nodiscard]] std::string_view to_string(wait_reason reason) noexcept;

/// The run of one stream op.
struct Span {
  op_id op = 0;                             ///< index into the Program's ops
  op_kind kind = op_kind::kernel;           ///< its op's kind
  std::optional<copy_direction> direction;  ///< set for copies
  std::string label;                        ///< stage name ("H2D", "Kernel", "D2H", ...)
  std::string item;                         ///< chunk or item name, may be empty
  std::int64_t chunk = -1;                  ///< chunk index for pipelines, -1 if none
  stream_id stream = 0;                     ///< the stream it ran on
  engine unit = engine::none;               ///< the engine it occupied; none for records and waits
  double start = 0.0;                       ///< when it started, in time_unit from the run's start
  double end = 0.0;                         ///< when it finished (>= start)
  std::uint64_t bytes = 0;                  ///< bytes copied or set; 0 for other kinds
  /// Time the op would take alone on an idle device (no contention).
  double solo_duration = 0.0;
  wait_reason waited_because = wait_reason::none;  ///< the constraint that set its start
  std::optional<op_id> waited_for;                 ///< the op it waited for, when there is one

  /// end - start, in time_unit.
  [[nodiscard]] double duration() const noexcept { return end - start; }
};

/// What the issuing host thread was doing.
enum class host_activity : std::uint8_t {
  api_call,  ///< issuing a call (its per-call cost)
  blocked,   ///< waiting inside a synchronous call
  work,      ///< host computation (host_work ops, allocation cost)
};

[[nodiscard]] std::string_view to_string(host_activity activity) noexcept;

/// A stretch of host-thread time.
struct HostSpan {
  op_id op = 0;                                      ///< the op whose call, block or work this is
  host_activity activity = host_activity::api_call;  ///< what the host thread was doing
  std::string label;                                 ///< e.g. "cudaStreamSynchronize(Stream1)"
  double start = 0.0;                                ///< in time_unit from the run's start
  double end = 0.0;                                  ///< when it ended (>= start)
  /// The host thread it ran on: an index into Timeline::host_threads. A
  /// simulated run has one host thread; a traced one, one per OS thread
  /// that called CUDA, so each gets its own lane.
  std::size_t thread = 0;
};

/// A predicted or measured run of a Program.
struct Timeline {
  std::string program_name;          ///< the Program's name, may be empty
  std::string device;                ///< device model or GPU name
  std::string time_unit = "ms";      ///< unit of every time below
  std::vector<Stream> streams;       ///< copied from the Program, indexed by stream_id
  std::vector<Span> spans;           ///< one per stream op, in issue order
  std::vector<HostSpan> host_spans;  ///< the host threads' calls, blocked waits and work
  /// Names of the host threads HostSpan::thread indexes, one lane each. One,
  /// "host", unless a trace saw calls from several OS threads.
  std::vector<std::string> host_threads = {"host"};
  /// What the same work takes run one op at a time with no overlap: the sum
  /// of every op's solo duration and of host work. Speedup is this over total().
  double sequential_time = 0.0;

  /// End of the last span, device or host (the run starts at 0).
  [[nodiscard]] double total() const noexcept;
  /// GPUs the run's streams are on: one more than the highest Stream::device, at least 1.
  [[nodiscard]] std::uint32_t device_count() const noexcept;
  /// The GPU `span` ran on (its stream's), 0 for a stream the timeline does not list.
  [[nodiscard]] device_id device_of(const Span& span) const noexcept;
};

}  // namespace overlap
