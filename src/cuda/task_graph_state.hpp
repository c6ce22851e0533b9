// What a cuda::Graph holds: the CUDA-free TaskGraph, each node's payload
// (what issuing it calls), each buffer's pointer, the cached Schedule, and
// the streams and events made at the first run or capture. Shared by the
// declaration (task_graph.cpp), the issue (task_graph_issue.cpp) and the
// capture (task_graph_capture.cpp). Private to src/cuda.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "overlap/cuda/event.hpp"
#include "overlap/cuda/stream.hpp"
#include "overlap/cuda/task_graph.hpp"
#include "overlap/graph/schedule.hpp"
#include "overlap/graph/task_graph.hpp"

namespace overlap::cuda::graph_detail {

/// A buffer's memory: where it points now (rebind changes it), its size and space.
struct graph_buffer {
  void* data = nullptr;
  std::uint64_t bytes = 0;
  memory_space space = memory_space::device;
};

/// A region with its size resolved: `bytes` bytes from `offset` of buffer `buffer`.
struct byte_range {
  std::uint32_t buffer = 0;
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
};

/// The first exception a host node threw on the driver's thread, kept until
/// the Graph's next call can throw it (a host function cannot throw into CUDA).
class host_failures {
 public:
  /// Keeps `failure` of node `node` unless an earlier one is kept. Never throws.
  void record(const std::string& node, std::exception_ptr failure) noexcept;
  /// Throws overlap::error naming the node, with the exception nested, and
  /// forgets it; does nothing when none is kept.
  void rethrow_pending();

 private:
  std::mutex mutex_;
  std::exception_ptr first_;
  std::string node_;
};

/// What a host node's trampoline is given: at a fixed address for as long as
/// the Graph lives, since issued runs and captured graphs hold it.
struct host_call {
  std::function<void()> function;
  std::string node;
  host_failures* failures = nullptr;
};

/// What issuing one node calls, by its kind (TaskGraph::nodes()[i].work.kind).
struct node_payload {
  std::function<void(stream_view)> launch;  ///< kernel
  std::unique_ptr<host_call> host;          ///< host function
  byte_range to;                            ///< copy destination, memset target
  byte_range from;                          ///< copy source
  cudaMemcpyKind copy_kind = cudaMemcpyDefault;
  int value = 0;  ///< memset byte
};

/// Streams and events, made at the first run or capture and reused.
struct graph_resources {
  /// The pool, indexed by the Program's stream ids, and the CUDA priority each was made with.
  std::vector<stream> pool;
  std::vector<int> pool_priority;
  /// The device's most urgent stream priority, once asked.
  std::optional<int> greatest_priority;
  /// Indexed by the Program's event ids ("after <node>").
  std::vector<event> node_events;
  std::optional<event> fork;
  std::vector<event> joins;  ///< one per pool stream
  /// t0, then a start and an end per work op (recording::on).
  std::vector<event> timing;
  /// captured_graph::update captures from this stream, which nothing else uses.
  std::optional<stream> capture_origin;
  /// Pool streams the last run or capture used.
  std::size_t issued_streams = 0;
};

/// Marks ops of the Program that are no node's work op.
inline constexpr graph::node_id no_node = std::numeric_limits<graph::node_id>::max();

/// Everything behind a cuda::Graph (Graph::state adds nothing: this type
/// is nameable by the free functions below, a private nested one is not).
struct graph_state {
  graph_options options;
  graph::TaskGraph tasks;
  std::vector<graph_buffer> buffers;
  std::vector<node_payload> payloads;  ///< per node
  std::optional<graph::Schedule> schedule;
  std::vector<graph::node_id> node_of_op;  ///< per op of schedule->program: its node, or no_node
  bool race_checked = false;               ///< for the current schedule
  /// Nodes and edges declared so far: a captured graph updates only while it is unchanged.
  std::uint64_t declarations = 0;
  host_failures failures;
  graph_resources resources;
};

/// The schedule of `g`, computed when a declaration changed it.
[[nodiscard]] const graph::Schedule& current_schedule(graph_state& g);

/// Pool streams: 0 reads CUDA_DEVICE_MAX_CONNECTIONS (8 unless set, clamped to 1..32).
[[nodiscard]] std::uint32_t pool_size(std::uint32_t max_streams);

/// Whether the issue brackets each work op with timing events.
enum class op_timing : std::uint8_t { off, on };

/// Everything before the first CUDA call of an issue: the schedule and,
/// when the options say so, its race check (once per schedule). Then makes
/// or adapts the pool's streams and events to it.
const graph::Schedule& prepare_issue(graph_state& g, op_timing timing);

/// Issues the Program on the pool between a fork from `origin` and a join
/// back to it (when it throws, after joining what it could, with the failing
/// node named: overlap::error with the cause nested). The caller drains or
/// ends the capture.
void issue(graph_state& g, const graph::Schedule& s, stream_view origin, op_timing timing);

/// Waits for every pool stream; false if any failed. Never throws.
bool drain(graph_resources& r) noexcept;

}  // namespace overlap::cuda::graph_detail

namespace overlap::cuda {

struct Graph::state : graph_detail::graph_state {};

}  // namespace overlap::cuda
