// Graph::capture and captured_graph: the Graph's issue recorded once by
// stream capture into a CUDA graph, launched with one call, and re-captured
// and updated in place (cudaGraphExecUpdate) when pointers or launch
// arguments change.
#include <fmt/format.h>

#include <exception>
#include <memory>
#include <utility>

#include "overlap/core/error.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/graph.hpp"
#include "task_graph_state.hpp"

namespace overlap::cuda {

namespace graph_detail {

/// What a captured_graph holds: the Graph's state it re-captures from and
/// the executable graph (none for a Graph with no nodes).
struct captured_state {
  graph_state* owner = nullptr;
  std::uint64_t declarations = 0;  ///< the owner's declarations count when captured
  graph_exec exec;
};

namespace {

// Before any CUDA call: a graph cannot replay a copy of pageable memory.
void require_capturable(const graph_state& g) {
  for (graph::node_id n = 0; n < g.tasks.size(); ++n) {
    const graph::Node& node = g.tasks.nodes()[n];
    if (node.work.kind != op_kind::copy) continue;
    const node_payload& p = g.payloads[n];
    for (const byte_range& side : {p.to, p.from}) {
      if (g.buffers[side.buffer].space != memory_space::pageable_host) continue;
      throw invalid_input(fmt::format(
          "node '{}': copy of pageable host buffer '{}' cannot be captured into a CUDA graph (pin it with "
          "cuda::pinned_buffer or cuda::host_registration and declare it memory_space::pinned_host)",
          node.name, g.tasks.buffers()[side.buffer].name));
    }
  }
}

stream_view capture_origin(graph_state& g) {
  if (!g.resources.capture_origin) g.resources.capture_origin.emplace(stream::options{});
  return g.resources.capture_origin->view();
}

// One issue of the Graph recorded from `origin`. Streams and events are made
// before the capture begins: nothing but capturable calls happen inside it.
cuda_graph capture_issue(graph_state& g, stream_view origin) {
  const graph::Schedule& s = prepare_issue(g, op_timing::off);
  stream_capture capture(origin);
  try {
    issue(g, s, origin, op_timing::off);
  } catch (const std::exception& e) {
    // stream_capture's destructor ends the capture and discards the graph.
    std::throw_with_nested(error(fmt::format(
        "capturing the graph failed: {}; nothing ran on the device (a capture only records), and a launch "
        "callable may only issue capturable work on the stream it is given",
        e.what())));
  }
  return capture.end_graph();
}

}  // namespace
}  // namespace graph_detail

struct captured_graph::state : graph_detail::captured_state {};

captured_graph::captured_graph(std::unique_ptr<state> s) : state_(std::move(s)) {}
captured_graph::captured_graph(captured_graph&&) noexcept = default;
captured_graph& captured_graph::operator=(captured_graph&&) noexcept = default;
captured_graph::~captured_graph() = default;

void captured_graph::launch(stream_view stream) const {
  if (!state_) throw error("captured_graph: launch() of a moved-from graph");
  state_->owner->failures.rethrow_pending();
  if (state_->exec.get() == nullptr) return;  // a Graph with no nodes
  state_->exec.launch(stream);
}

void captured_graph::update() {
  if (!state_) throw error("captured_graph: update() of a moved-from graph");
  graph_detail::graph_state& g = *state_->owner;
  if (g.declarations != state_->declarations) {
    throw invalid_input(
        "captured_graph::update: the Graph's nodes or edges changed since it was captured (an update keeps "
        "the graph's shape); capture it again with Graph::capture");
  }
  if (state_->exec.get() == nullptr) return;
  g.failures.rethrow_pending();
  const stream_view origin = graph_detail::capture_origin(g);
  const cuda_graph recaptured = graph_detail::capture_issue(g, origin);
  if (state_->exec.update(recaptured)) return;
  // Refused (e.g. a copy's memory changed kind): a new executable graph, uploaded as capture() does.
  state_->exec = recaptured.instantiate();
  state_->exec.upload(origin);
  origin.synchronize();
}

captured_graph Graph::capture(stream_view stream) {
  if (stream.get() == cudaStreamLegacy || stream.get() == nullptr) {
    throw invalid_input(
        "capture: the legacy default stream cannot be captured from (cudaStreamBeginCapture refuses it); "
        "pass a stream you created, or stream_view::per_thread_default()");
  }
  graph_detail::graph_state& g = *state_;
  graph_detail::require_capturable(g);
  g.failures.rethrow_pending();
  auto captured = std::make_unique<captured_graph::state>();
  captured->owner = &g;
  captured->declarations = g.declarations;
  if (g.tasks.size() == 0) return captured_graph(std::move(captured));  // launches nothing
  const cuda_graph recorded = graph_detail::capture_issue(g, stream);
  captured->exec = recorded.instantiate();
  // Moves the work to the device now, so the first launch costs what every later one does.
  const stream_view origin = graph_detail::capture_origin(g);
  captured->exec.upload(origin);
  origin.synchronize();
  return captured_graph(std::move(captured));
}

}  // namespace overlap::cuda
