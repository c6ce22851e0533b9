// CUDA graphs: stream capture into a graph, and the instantiated graph that
// replays it with one launch.
#pragma once

#include <cuda_runtime_api.h>

#include "overlap/cuda/stream.hpp"

namespace overlap::cuda {

class cuda_graph;

/// Who walks an instantiated graph's nodes when it runs.
enum class graph_scheduling {
  /// The host driver issues every node at each launch (a plain
  /// cudaGraphInstantiate): a launch costs the host one to three
  /// microseconds per copy node (next to nothing per kernel node), and the
  /// graph's branches run as concurrently as streams would.
  host,
  /// Instantiated for device launch (cudaGraphInstantiateFlagDeviceLaunch):
  /// the GPU walks the graph, so a launch from the host costs about one
  /// kernel launch whatever the node count. The device may run the graph
  /// slower: on the lent H200s a compute-bound Pipeline's replay took
  /// 0.999-1.001x the device time of the host-walked one with one kernel and
  /// 1.005-1.032x with `overlap bench`'s, more with fewer, larger chunks
  /// (0.4-1.7 us of host time a chunk instead of 4.5-10), a transfer-bound
  /// one 1.8x (bench/RESULTS.md): measure both on your work. The graph may hold only kernels (no dynamic
  /// parallelism), memsets and copies between device memory and pinned,
  /// device-mapped host memory.
  device,
};

/// An instantiated CUDA graph (cudaGraphExec_t), destroyed with the object.
class graph_exec {
 public:
  graph_exec() = default;
  /// Takes ownership of `handle`.
  explicit graph_exec(cudaGraphExec_t handle) noexcept : handle_(handle) {}
  ~graph_exec();
  graph_exec(const graph_exec&) = delete;
  graph_exec& operator=(const graph_exec&) = delete;
  /// Takes ownership of `other`'s graph; `other` is left empty.
  graph_exec(graph_exec&& other) noexcept;
  /// Swaps graphs with `other`, which destroys this one's former graph when it goes.
  graph_exec& operator=(graph_exec&& other) noexcept;

  /// Issues the whole graph on `stream` (cudaGraphLaunch); throws cuda_error.
  void launch(stream_view stream) const;
  /// Moves the graph's work descriptors to the device ahead of the first
  /// launch (cudaGraphUpload), so that launch costs what every later one does.
  void upload(stream_view stream) const;
  /// Updates the executable graph in place to `graph` (cudaGraphExecUpdate):
  /// new kernel arguments, copy and memset pointers, same topology. Returns
  /// false, leaving this graph as it was, when the driver refuses the update
  /// (the caller then instantiates `graph` anew); throws cuda_error otherwise.
  [[nodiscard]] bool update(const cuda_graph& graph);

  /// The raw handle (null when empty); still owned by this object.
  [[nodiscard]] cudaGraphExec_t get() const noexcept { return handle_; }

 private:
  cudaGraphExec_t handle_ = nullptr;
};

/// A CUDA graph as captured (cudaGraph_t), not yet instantiated; destroyed with the object.
class cuda_graph {
 public:
  cuda_graph() = default;
  /// Takes ownership of `handle`.
  explicit cuda_graph(cudaGraph_t handle) noexcept : handle_(handle) {}
  ~cuda_graph();
  cuda_graph(const cuda_graph&) = delete;
  cuda_graph& operator=(const cuda_graph&) = delete;
  /// Takes ownership of `other`'s graph; `other` is left empty.
  cuda_graph(cuda_graph&& other) noexcept;
  /// Swaps graphs with `other`, which destroys this one's former graph when it goes.
  cuda_graph& operator=(cuda_graph&& other) noexcept;

  /// An executable graph of it (cudaGraphInstantiateWithFlags) for `scheduling`; throws cuda_error.
  [[nodiscard]] graph_exec instantiate(graph_scheduling scheduling = graph_scheduling::host) const;

  /// The raw handle (null when empty); still owned by this object.
  [[nodiscard]] cudaGraph_t get() const noexcept { return handle_; }

 private:
  cudaGraph_t handle_ = nullptr;
};

/// Records everything issued to `origin` (and to streams that join it through
/// events) into a graph instead of running it. The capture is begun by the
/// constructor and must be ended with end(); if it is not (an exception left
/// the scope), the destructor ends it and discards the graph, leaving the
/// stream usable.
class stream_capture {
 public:
  /// cudaStreamBeginCapture in thread-local mode: other threads may go on
  /// making calls that are unsafe during capture.
  explicit stream_capture(stream_view origin);
  ~stream_capture();
  stream_capture(const stream_capture&) = delete;
  stream_capture& operator=(const stream_capture&) = delete;
  stream_capture(stream_capture&&) = delete;
  stream_capture& operator=(stream_capture&&) = delete;

  /// Ends the capture and instantiates what it recorded; throws cuda_error
  /// (e.g. when a call during capture was not capturable, or a stream that
  /// joined never joined back).
  [[nodiscard]] graph_exec end();
  /// Ends the capture and returns what it recorded, not instantiated (to
  /// update an executable graph with it, graph_exec::update); throws cuda_error.
  [[nodiscard]] cuda_graph end_graph();

 private:
  stream_view origin_;
  bool open_ = true;
};

}  // namespace overlap::cuda
