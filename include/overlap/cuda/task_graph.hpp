// overlap::cuda::Graph: declare work and the data it touches; get every
// independent branch running at once with exactly the synchronization needed.
//
// Nodes are copies, memsets, kernels (a callable that launches on the stream
// it is given) and host functions, each declaring the regions of named
// buffers it reads and writes. The Graph derives the dependencies, maps the
// nodes onto a pool of streams and issues them with an event wait only where
// an edge crosses streams and is not already implied (overlap/graph/
// schedule.hpp). program() is that Program before anything runs, so it can
// be simulated (overlap::sim), checked (overlap::check) and drawn; builds
// with program_check::on check it race-free before issuing.
//
//   cuda::Graph g;
//   auto x = g.buffer("x", d_x);                  // a device_buffer<float>
//   auto y = g.buffer("y", d_y);
//   auto h = g.buffer("h", h_x);                  // a pinned_buffer<float>
//   g.copy("upload", x.all(), h.all());
//   g.kernel("scale", [&](stream_view s) { scale<<<64, 256, 0, s.get()>>>(x_ptr, y_ptr, n); },
//            {reads(x.all()), writes(y.all())});
//   g.run(stream);                                // ordered after `stream`'s work, and it after all of it
//
//   auto replay = g.capture(stream);              // a CUDA graph of the same issue
//   for (...) { replay.launch(stream); }
//   g.rebind(x, other_pointer); replay.update();  // new pointers, same shape
//
// Nothing is issued while nodes are declared: bad input (a region outside its
// buffer, a node with no launch, a cycle through explicit edges) throws
// overlap::invalid_input naming the node before any CUDA call.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "overlap/core/program.hpp"
#include "overlap/core/timeline.hpp"
#include "overlap/cuda/graph.hpp"
#include "overlap/cuda/memory.hpp"
#include "overlap/cuda/pipeline.hpp"
#include "overlap/cuda/stream.hpp"
#include "overlap/graph/schedule.hpp"

namespace overlap::cuda {

/// Where a Graph buffer lives: decides each copy's direction and whether it can run asynchronously.
enum class memory_space : std::uint8_t { device, pinned_host, pageable_host };

/// Bytes of one buffer of a Graph: `bytes` from `offset`, or to the end when empty.
struct region {
  std::uint32_t buffer = 0;            ///< the buffer's index in its Graph
  std::uint64_t offset = 0;            ///< first byte
  std::optional<std::uint64_t> bytes;  ///< empty: to the end of the buffer
};

/// A buffer declared in a Graph; makes regions of it.
struct buffer_ref {
  std::uint32_t id = 0;     ///< the buffer's index in its Graph
  std::uint64_t size = 0;   ///< its bytes
  std::size_t element = 1;  ///< bytes per element, for elements()

  /// The whole buffer.
  [[nodiscard]] region all() const noexcept { return {id, 0, size}; }
  /// `bytes` bytes from byte `offset`.
  [[nodiscard]] region bytes(std::uint64_t offset, std::uint64_t count) const noexcept {
    return {id, offset, count};
  }
  /// `count` elements from element `first` (of the type the buffer was declared with).
  [[nodiscard]] region elements(std::uint64_t first, std::uint64_t count) const noexcept {
    return {id, first * element, count * element};
  }
};

/// How a node touches a region.
struct access {
  region where;                          ///< the bytes touched
  access_mode mode = access_mode::read;  ///< read, or write (which also covers read-and-write)
};
/// The node reads `r`.
[[nodiscard]] inline access reads(region r) noexcept {
  return {r, access_mode::read};
}
/// The node writes `r` (or reads and writes it: a write orders against everything).
[[nodiscard]] inline access writes(region r) noexcept {
  return {r, access_mode::write};
}

/// A node of a Graph, for explicit edges.
struct node_ref {
  graph::node_id id = 0;  ///< the node's index in its Graph
};

/// What the simulator should assume a kernel or host function costs (the
/// Graph never needs it to run; program() and overlap::sim use it).
struct work_estimate {
  double duration_ms = 0.01;  ///< time alone on an idle GPU
  double gpu_share = 1.0;     ///< fraction of the SMs it occupies, in (0, 1]
};

/// How a Graph maps and issues its nodes.
struct graph_options {
  /// Streams in the pool: 0 takes the device's hardware queue count
  /// (CUDA_DEVICE_MAX_CONNECTIONS, 8 unless set), so that no two pool streams
  /// share a queue.
  std::uint32_t max_streams = 0;
  /// Whether the longest path by estimated duration gets a stream of its own with a higher priority.
  graph::critical_path critical = graph::critical_path::prioritize;
  /// Check the Program race-free (overlap::check) before the first issue.
  program_check check = default_program_check;
};

/// What one Graph::run did.
struct graph_run_report {
  double host_issue_ms = 0.0;        ///< host time spent issuing (no waiting)
  std::optional<Timeline> timeline;  ///< measured with events, when recording::on
};

class Graph;

/// A Graph captured once into a CUDA graph, launched as often as needed.
///
/// It points into the Graph it came from (its host functions, and update()'s
/// new capture): the Graph must outlive it, and keep its nodes (a node
/// declared after the capture makes update() throw invalid_input).
class captured_graph {
 public:
  /// Takes over `other`'s CUDA graph; `other` is left empty (its launch() and update() throw overlap::error).
  captured_graph(captured_graph&& other) noexcept;
  /// Destroys this one's CUDA graph and takes over `other`'s; `other` is left empty.
  captured_graph& operator=(captured_graph&& other) noexcept;
  ~captured_graph();

  /// Runs the whole Graph with one launch on `stream`, ordered after its
  /// earlier work; later work on `stream` is ordered after all of it.
  void launch(stream_view stream) const;
  /// Captures the Graph's issue again (its launch callables read their
  /// arguments anew, buffers take their rebound pointers) and updates the
  /// executable graph in place (cudaGraphExecUpdate); re-instantiates only
  /// when the driver refuses the update. The Graph must still exist and
  /// have the same nodes.
  void update();

 private:
  friend class Graph;
  struct state;
  explicit captured_graph(std::unique_ptr<state> s);
  std::unique_ptr<state> state_;
};

/// Work declared with its data, issued on a pool of streams with exactly the
/// event waits needed. Not copyable (it owns streams and events); movable.
class Graph {
 public:
  /// An empty Graph; makes no CUDA call (streams and events come with the first run or capture).
  explicit Graph(graph_options options = {});
  ~Graph();
  /// Takes over `other`'s nodes, buffers, streams and events (graphs captured from `other` follow them);
  /// `other` may only be destroyed or assigned to.
  Graph(Graph&& other) noexcept;
  /// Frees this Graph's streams and events and takes over `other`'s; `other` may only be destroyed or
  /// assigned to.
  Graph& operator=(Graph&& other) noexcept;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  /// Declares `bytes` of memory at `data` in `space` under a unique `name`.
  buffer_ref buffer(std::string name, void* data, std::size_t bytes, memory_space space);
  /// Declares device buffer `b` (its bytes, memory_space::device); the buffer_ref's elements() count T.
  template <typename T>
  buffer_ref buffer(std::string name, device_buffer<T>& b) {
    return typed(buffer(std::move(name), b.data(), b.size() * sizeof(T), memory_space::device), sizeof(T));
  }
  /// Declares pinned buffer `b` (its bytes, memory_space::pinned_host); the buffer_ref's elements() count T.
  template <typename T>
  buffer_ref buffer(std::string name, pinned_buffer<T>& b) {
    return typed(buffer(std::move(name), b.data(), b.size() * sizeof(T), memory_space::pinned_host),
                 sizeof(T));
  }
  /// Points buffer `b` at `data` (same size and space) for later runs and
  /// for captured_graph::update.
  void rebind(buffer_ref b, void* data);
  /// Where buffer `b` points now.
  [[nodiscard]] void* data(buffer_ref b) const;

  /// Copies `from` into `to` (equal sizes); the direction follows the buffers' spaces.
  node_ref copy(std::string name, region to, region from);
  /// Sets every byte of `to` to `value`.
  node_ref memset(std::string name, region to, int value);
  /// Runs `launch(stream)` to issue a kernel on the node's stream. The
  /// callable must issue only on the stream it is given.
  node_ref kernel(std::string name, std::function<void(stream_view)> launch,
                  const std::vector<access>& accesses, work_estimate estimate = {});
  /// Runs `function` on the host in stream order (cudaLaunchHostFunc); it must not call CUDA.
  /// An exception it throws is kept and thrown (naming the node) by the
  /// Graph's next run() or capture() or a captured_graph's next launch(),
  /// or by this run() with recording::on.
  node_ref host(std::string name, std::function<void()> function, const std::vector<access>& accesses,
                work_estimate estimate = {});
  /// Orders `before` ahead of `after` whatever their data.
  void precede(node_ref before, node_ref after);

  /// The schedule (DAG, streams, waits), computed on first use after a change.
  [[nodiscard]] const graph::Schedule& schedule();
  /// The Program run() issues, before anything runs.
  [[nodiscard]] const Program& program() { return schedule().program; }
  /// The declared work, as the CUDA-free layer sees it.
  [[nodiscard]] const graph::TaskGraph& tasks() const noexcept;

  /// Issues every node on the pool, ordered after `stream`'s earlier work;
  /// `stream`'s later work is ordered after all of it. Returns once issued
  /// (with recording::on, once done, with the measured Timeline). Streams
  /// and events are made by the first run or capture (on the current device)
  /// and reused. When a node's issue throws (its launch callable, or a CUDA
  /// call), the streams are drained and overlap::error naming the node is
  /// thrown with the cause nested; the Graph stays usable.
  graph_run_report run(stream_view stream, recording record = recording::off);
  /// Captures one issue into a CUDA graph (stream capture from `stream`,
  /// which must not be the legacy default stream) and uploads it. Copies of
  /// pageable host buffers cannot be captured (invalid_input naming the node).
  [[nodiscard]] captured_graph capture(stream_view stream);

  /// The pool streams the last run or capture issued on, indexed by the
  /// Program's stream ids (empty before the first): e.g. to read their CUDA
  /// priorities. Valid until the next declaration's run, or the Graph's end.
  [[nodiscard]] std::vector<stream_view> streams() const;

 private:
  friend class captured_graph;
  static buffer_ref typed(buffer_ref b, std::size_t element) noexcept {
    b.element = element;
    return b;
  }
  struct state;
  std::unique_ptr<state> state_;
};

}  // namespace overlap::cuda
