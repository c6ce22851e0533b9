#include "overlap/cuda/graph.hpp"

#include <utility>

#include "overlap/cuda/error.hpp"

namespace overlap::cuda {

graph_exec::~graph_exec() {
  if (handle_ != nullptr) (void)cudaGraphExecDestroy(handle_);  // destructors do not throw
}

graph_exec::graph_exec(graph_exec&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}

graph_exec& graph_exec::operator=(graph_exec&& other) noexcept {
  std::swap(handle_, other.handle_);
  return *this;
}

void graph_exec::launch(stream_view stream) const {
  check(cudaGraphLaunch(handle_, stream.get()), "cudaGraphLaunch");
}

void graph_exec::upload(stream_view stream) const {
  check(cudaGraphUpload(handle_, stream.get()), "cudaGraphUpload");
}

stream_capture::stream_capture(stream_view origin) : origin_(origin) {
  check(cudaStreamBeginCapture(origin.get(), cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
}

stream_capture::~stream_capture() {
  if (!open_) return;
  // Ending an invalidated capture still ends it; what it returns is discarded.
  cudaGraph_t graph = nullptr;
  (void)cudaStreamEndCapture(origin_.get(), &graph);
  if (graph != nullptr) (void)cudaGraphDestroy(graph);
  (void)cudaGetLastError();  // the capture's failure was reported by whoever abandoned it
}

graph_exec stream_capture::end() {
  open_ = false;
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(origin_.get(), &graph);
  if (ended != cudaSuccess) {
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    check(ended, "cudaStreamEndCapture");
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t instantiated = cudaGraphInstantiateWithFlags(&exec, graph, 0);
  (void)cudaGraphDestroy(graph);  // the instantiated graph does not need it
  check(instantiated, "cudaGraphInstantiateWithFlags");
  return graph_exec(exec);
}

}  // namespace overlap::cuda
