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

bool graph_exec::update(const cuda_graph& graph) {
  cudaGraphExecUpdateResultInfo info{};
  const cudaError_t status = cudaGraphExecUpdate(handle_, graph.get(), &info);
  if (status == cudaErrorGraphExecUpdateFailure) {
    (void)cudaGetLastError();  // a refused update is an answer, not an error to leave behind
    return false;
  }
  check(status, "cudaGraphExecUpdate");
  return true;
}

cuda_graph::~cuda_graph() {
  if (handle_ != nullptr) (void)cudaGraphDestroy(handle_);  // destructors do not throw
}

cuda_graph::cuda_graph(cuda_graph&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}

cuda_graph& cuda_graph::operator=(cuda_graph&& other) noexcept {
  std::swap(handle_, other.handle_);
  return *this;
}

graph_exec cuda_graph::instantiate(graph_scheduling scheduling) const {
  cudaGraphExec_t exec = nullptr;
  const unsigned long long flags = scheduling == graph_scheduling::device
                                       ? static_cast<unsigned long long>(cudaGraphInstantiateFlagDeviceLaunch)
                                       : 0ULL;
  check(cudaGraphInstantiateWithFlags(&exec, handle_, flags), "cudaGraphInstantiateWithFlags");
  return graph_exec(exec);
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
  // The instantiated graph does not need the captured one, destroyed on return.
  return end_graph().instantiate();
}

cuda_graph stream_capture::end_graph() {
  open_ = false;
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(origin_.get(), &graph);
  cuda_graph owned(graph);  // destroyed on a failure too
  check(ended, "cudaStreamEndCapture");
  return owned;
}

}  // namespace overlap::cuda
