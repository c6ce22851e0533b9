// Issues a Pipeline's Program on real streams, op by op: copies, the user's
// stage, slot hand-over events, and (when recording) timing events around
// each op, then drains the streams.
#include <fmt/format.h>

#include <chrono>
#include <cstddef>
#include <exception>
#include <vector>

#include "measured_timeline.hpp"
#include "overlap/core/metrics.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/cuda/pipeline.hpp"
#include "parked_thread.hpp"
#include "pipeline_issue.hpp"

namespace overlap::cuda {

std::string_view to_string(host_path path) noexcept {
  switch (path) {
    case host_path::pinned: return "pinned";
    case host_path::registered: return "registered";
    case host_path::staged: return "staged";
  }
  return "pinned";
}

}  // namespace overlap::cuda

namespace overlap::cuda::detail {

pipeline_engine::pipeline_engine() = default;
pipeline_engine::~pipeline_engine() = default;
pipeline_engine::pipeline_engine(pipeline_engine&&) noexcept = default;
pipeline_engine& pipeline_engine::operator=(pipeline_engine&&) noexcept = default;

namespace {

// The stage's busy time against each copy direction's, on the run's GPU.
run_bound measured_bound(const Timeline& timeline) {
  double stage = 0.0;
  double h2d = 0.0;
  double d2h = 0.0;
  for (const EngineUsage& e : compute_metrics(timeline).engines) {
    if (e.unit == engine::compute) stage = e.busy;
    if (e.unit == engine::h2d_copy || e.unit == engine::copy) h2d = e.busy;
    if (e.unit == engine::d2h_copy || e.unit == engine::copy) d2h = e.busy;
  }
  return bound_of(stage, h2d, d2h);
}

}  // namespace

run_report pipeline_engine::run(const erased_run& r, const pipeline_options& options,
                                const erased_stage& stage) {
  if (!options.devices.empty()) return run_on_devices(r, options, stage);
  return run_here(r, options, stage);
}

std::size_t pipeline_engine::settled_chunks(const erased_run& r, const pipeline_options& options,
                                            const erased_stage& stage) {
  if (!resources_) resources_ = std::make_unique<pipeline_resources>();
  std::vector<host_registration> registrations;  // none for pinned or staged parts
  host_path path = host_path::pinned;
  return resources_->settle(r, options, stage, registrations, path).p.chunks;
}

run_report pipeline_engine::run_here(const erased_run& r, const pipeline_options& options,
                                     const erased_stage& stage) {
  if (!resources_) resources_ = std::make_unique<pipeline_resources>();
  pipeline_resources& res = *resources_;
  std::vector<host_registration> registrations;
  host_path path = host_path::pinned;
  const settled_run& settled = res.settle(r, options, stage, registrations, path);
  const plan& p = settled.p;
  if (r.input_elements == 0) return settled.report;
  if (path == host_path::staged) return run_staged(r, settled, options, stage, res);

  res.prepare(p, settled.report.program, p.chunk_input_elements * r.input_element_bytes,
              p.chunk_output_elements * r.output_element_bytes);
  // A run that learns its bound is timed like a recorded one (once per size).
  const bool learns = settled.learns_bound;
  const bool record = options.record == recording::on || learns;
  // t0, then a start and an end event for each of a chunk's 3 ops.
  if (record) res.reserve_timing(1 + std::size_t{6} * p.chunks);

  issuer issue(r, settled, stage, record ? op_timing::on : op_timing::off);
  const auto started = std::chrono::steady_clock::now();
  try {
    issue.issue(settled.report.program, res);
  } catch (const std::exception& e) {
    const std::size_t k = issue.current_chunk();
    const bool complete = drain(res.streams);
    const std::string state =
        k == 0     ? "no chunk had completed"
        : complete ? fmt::format("outputs of chunks 0..{} are complete", k - 1)
                   : "earlier outputs may be incomplete: the device reported an error while draining";
    std::throw_with_nested(pipeline_error(
        fmt::format("chunk {} of {} failed: {}; {}", k, p.chunks, e.what(), state), k, complete));
  }
  const double issue_ms = ms_since(started);
  // Copied while the device works: the Program is a few hundred ops.
  run_report report = settled.report;
  report.host = path;
  report.host_issue_ms = issue_ms;
  report.device_bytes = res.ring_bytes();
  if (!drain(res.streams)) {
    // Surface the asynchronous error with its name; the stream that failed first reports it.
    for (auto& s : res.streams)
      check(cudaStreamSynchronize(s.get()), "cudaStreamSynchronize", "draining the pipeline");
    check(cudaGetLastError(), "cudaGetLastError", "draining the pipeline");
  }
  if (record) report.timeline = measured_timeline(report.program, res.timing);
  if (learns) {
    report.bound = measured_bound(*report.timeline);
    if (options.record != recording::on) report.timeline.reset();
    res.adapt(r, options, stage, *report.bound);  // `settled` is replaced: not used below
  }
  return report;
}

}  // namespace overlap::cuda::detail
