// Pipeline::capture: the run's ops issued once into a CUDA graph on the
// graph's own streams (forked from and joined back to stream 0, so one
// capture records them all), then replayed with one cudaGraphLaunch.
#include <fmt/format.h>

#include <chrono>
#include <exception>
#include <optional>
#include <utility>
#include <vector>

#include "overlap/core/error.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/graph.hpp"
#include "overlap/cuda/pipeline.hpp"
#include "pipeline_issue.hpp"

namespace overlap::cuda {

namespace detail {

// Members are destroyed in reverse order: the graph before the ring it
// addresses, the ring before the streams it is freed on, the host
// registrations last.
struct graph_state {
  std::vector<host_registration> registrations;
  pipeline_resources resources;
  std::optional<event> fork;  // made when capturing, so an empty run needs no CUDA call
  std::vector<event> joins;
  graph_exec exec;
  run_report captured;
  double instantiate_ms = 0.0;
  graph_scheduling scheduling = graph_scheduling::host;
};

namespace {

// Streams 1.. wait for stream 0's point in the capture, so what they are
// given next is captured too.
void fork_streams(graph_state& g) {
  const std::vector<stream>& streams = g.resources.streams;
  if (!g.fork) g.fork.emplace(event_timing::disabled);
  g.fork->record(streams[0]);
  for (std::size_t i = 1; i < streams.size(); ++i) g.fork->wait_on(streams[i]);
}

// Stream 0 waits for every other stream: a capture ends only once all its
// streams have joined the one it began on.
void join_streams(graph_state& g) {
  const std::vector<stream>& streams = g.resources.streams;
  while (g.joins.size() + 1 < streams.size()) g.joins.emplace_back(event_timing::disabled);
  for (std::size_t i = 1; i < streams.size(); ++i) {
    g.joins[i - 1].record(streams[i]);
    g.joins[i - 1].wait_on(streams[0]);
  }
}

}  // namespace

pipeline_graph capture_pipeline(const erased_run& r, const pipeline_options& options,
                                const erased_stage& stage, const capture_options& how) {
  if (options.record == recording::on) {
    throw invalid_input(
        "record: recording::on cannot be captured into a graph (its timing events would not be "
        "recorded); use Pipeline::run to record a Timeline");
  }
  if (!options.devices.empty()) {
    throw invalid_input(
        "devices: capture() runs on the current GPU alone; leave devices empty and make the GPU current "
        "(cudaSetDevice), or use Pipeline::run to spread a run over several GPUs");
  }
  auto g = std::make_unique<graph_state>();
  g->scheduling = how.scheduling;
  host_path path = host_path::pinned;
  settled_run settled = settle_run(r, options, stage, g->registrations, g->resources.calibration, path);
  if (path == host_path::staged) {
    throw invalid_input(
        "pageable: a staged run copies through pinned slots on host threads, which a CUDA graph cannot "
        "replay; pin the buffers (cuda::pinned_buffer) or set pipeline_options::pageable = "
        "pageable_memory::register_in_place to capture it");
  }
  settled.report.host = path;
  const plan& p = settled.p;
  g->captured = std::move(settled.report);
  run_report& report = g->captured;
  if (r.input_elements == 0) return pipeline_graph(std::move(g));  // replays nothing
  g->resources.prepare(p, report.program, p.chunk_input_elements * r.input_element_bytes,
                       p.chunk_output_elements * r.output_element_bytes);
  report.device_bytes = g->resources.ring_bytes();

  issuer issue(r, settled, stage, op_timing::off);
  const auto started = std::chrono::steady_clock::now();
  cuda_graph recorded;
  {
    stream_capture capture(g->resources.streams[0]);
    try {
      fork_streams(*g);
      issue.issue(report.program, g->resources);
      join_streams(*g);
      report.host_issue_ms = ms_since(started);
      recorded = capture.end_graph();
    } catch (const std::exception& e) {
      // Join what can be joined so the capture ends cleanly; a capture that
      // a bad call invalidated ends anyway, and stream_capture discards it.
      try {
        join_streams(*g);
        // NOLINTNEXTLINE(bugprone-empty-catch): the first failure is the one reported
      } catch (const std::exception&) {
      }
      const std::size_t k = issue.current_chunk();
      std::throw_with_nested(pipeline_error(
          fmt::format("capturing chunk {} of {} into a graph failed: {}; nothing ran on the device "
                      "(a capture only records), and the stage may only launch capturable work on the "
                      "stream it is given",
                      k, p.chunks, e.what()),
          k, false));
    }
  }
  const auto ending = std::chrono::steady_clock::now();
  try {
    g->exec = recorded.instantiate(how.scheduling);
  } catch (const std::exception& e) {
    // Nothing ran: a failed instantiation leaves only the recorded graph, freed on return.
    std::throw_with_nested(pipeline_error(
        how.scheduling == graph_scheduling::host
            ? fmt::format(
                  "instantiating the captured pipeline ({} chunks) failed: {}; nothing ran on the device",
                  p.chunks, e.what())
            : fmt::format(
                  "scheduling: the captured pipeline ({} chunks) cannot be scheduled by the device: {}; "
                  "graph_scheduling::device needs host buffers that are pinned and device-mapped and a "
                  "stage that launches only kernels (no dynamic parallelism), memsets or device "
                  "copies; nothing ran on the device: capture with graph_scheduling::host instead",
                  p.chunks, e.what()),
        0, false));
  }
  g->instantiate_ms = ms_since(ending);
  // Moves the work to the device now, so the first replay costs what every replay does.
  g->exec.upload(g->resources.streams[0]);
  g->resources.streams[0].synchronize();
  return pipeline_graph(std::move(g));
}

}  // namespace detail

pipeline_graph::pipeline_graph(std::unique_ptr<detail::graph_state> state) noexcept
    : state_(std::move(state)) {}
pipeline_graph::~pipeline_graph() = default;
pipeline_graph::pipeline_graph(pipeline_graph&&) noexcept = default;
pipeline_graph& pipeline_graph::operator=(pipeline_graph&&) noexcept = default;

replay_report pipeline_graph::replay() {
  if (!state_) throw error("pipeline_graph: replay() of a moved-from graph");
  replay_report report;
  report.chunks = state_->captured.chunks;
  if (state_->exec.get() == nullptr) return report;
  const cudaStream_t origin = state_->resources.streams[0].get();
  const auto started = std::chrono::steady_clock::now();
  check(cudaGraphLaunch(state_->exec.get(), origin), "cudaGraphLaunch",
        fmt::format("replaying the captured pipeline ({} chunks)", report.chunks));
  report.host_launch_ms = detail::ms_since(started);
  check(cudaStreamSynchronize(origin), "cudaStreamSynchronize",
        "waiting for the replayed pipeline: the device failed while running it; outputs may be incomplete");
  return report;
}

const run_report& pipeline_graph::captured() const noexcept {
  return state_->captured;
}

double pipeline_graph::instantiate_ms() const noexcept {
  return state_->instantiate_ms;
}

graph_scheduling pipeline_graph::scheduling() const noexcept {
  return state_->scheduling;
}

}  // namespace overlap::cuda
