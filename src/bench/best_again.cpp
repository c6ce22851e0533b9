// The best configuration again, five ways alternating run by run: issued
// directly, with recording on (its overhead, and a measured Timeline of the
// best run), captured once into a CUDA graph and replayed (the host cost of
// a run becomes one launch), the same graph walked by the device (a launch
// costs the host one kernel launch's time; the device may run it slower),
// and as a bare loop of the same runtime calls.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "overlap/core/pipeline_shape.hpp"
#include "workload_bench.hpp"

namespace overlap::bench::detail {

// The best configuration's chunks issued by a bare loop on `streams`, each
// chunk in its own part of the whole-size device buffers: the runtime's
// own host cost for these calls, with no Pipeline around them. Per stage,
// uploads go on the first stream, kernels over the middle ones and
// downloads on the last, each handed on with one of the two events.
run_info workload_bench::chunk_loop(std::vector<cuda::stream>& streams,
                                    const std::vector<std::uint64_t>& chunk_bytes, bool per_stage,
                                    hand_over_events& hand_over) {
  const auto started = host_clock::now();
  std::size_t offset = 0;
  for (std::size_t c = 0; c < chunk_bytes.size() && offset < elements_; ++c) {
    const std::size_t count =
        std::min(static_cast<std::size_t>(chunk_bytes[c] / sizeof(float)), elements_ - offset);
    const cuda::stream_view own = streams[c % streams.size()];
    const chunk_streams on = per_stage
                                 ? chunk_streams{streams.front(), streams[1 + c % (streams.size() - 2)],
                                                 streams.back(), &hand_over.uploaded, &hand_over.computed}
                                 : chunk_streams{own, own, own};
    issue_chunk(offset, count, on, {"bare loop H2D", "bare loop D2H"});
    offset += count;
  }
  run_info info;
  info.host_issue_ms = milliseconds_since(started);
  for (cuda::stream& s : streams) s.synchronize();
  info.chunks = chunk_bytes.size();
  info.chunk_bytes = *std::max_element(chunk_bytes.begin(), chunk_bytes.end());
  info.streams = static_cast<unsigned>(streams.size());
  info.per_stage = per_stage;
  return info;
}

void workload_bench::measure_best_again(workload_result& result) {
  const variant_result& best = result.variants[result.best_pipeline];
  const cuda::pipeline_options options = options_of(best);
  // The graph and the bare loop replay the layout the best runs from its
  // second run on: the default adapts its layout after its first
  // (layout_adaptation), which a capture, made before any run, would not.
  cuda::pipeline_options replayed_layout = options;
  std::vector<std::uint64_t> loop_chunks = uniform_schedule(bytes_, best.chunk_bytes);
  if (best.kind == variant_kind::pipeline_default) {
    pipeline learner(options);
    (void)learner.run(input(), out_.span(), stage_);
    const cuda::run_report learned = learner.run(input(), out_.span(), stage_);
    replayed_layout.streams = learned.streams;
    replayed_layout.assignment = learned.assignment;
    if (learned.chunk_schedule.empty()) {
      replayed_layout.chunk_bytes = learned.chunk_bytes;
    } else {
      replayed_layout.chunk_schedule = learned.chunk_schedule;
      loop_chunks.assign(learned.chunk_schedule.begin(), learned.chunk_schedule.end());
    }
  }
  announce_("best pipeline (" + best.name + "): direct, recorded, graph replays, bare loop");
  pipeline off(options);
  cuda::pipeline_options recording = options;
  recording.record = cuda::recording::on;
  pipeline on(recording);
  std::optional<Timeline> last;
  std::optional<Program> last_program;
  const runner recorded = [this, &on, &last, &last_program](const cuda::event&) {
    cuda::run_report report = on.run(input(), out_.span(), stage_);
    const run_info info = info_of(report);
    last = std::move(report.timeline);
    last_program = std::move(report.program);
    return info;
  };
  const auto capture_started = host_clock::now();
  cuda::pipeline_graph graph = pipeline(replayed_layout).capture(input(), out_.span(), stage_);
  result.graph_setup_ms = milliseconds_since(capture_started);
  const auto device_capture_started = host_clock::now();
  cuda::pipeline_graph device_graph =
      pipeline(replayed_layout)
          .capture(input(), out_.span(), stage_, {.scheduling = cuda::graph_scheduling::device});
  result.graph_device_setup_ms = milliseconds_since(device_capture_started);
  const auto replay_of = [](cuda::pipeline_graph& g) {
    return runner([&g](const cuda::event&) {
      const cuda::replay_report replay = g.replay();
      run_info info = info_of(g.captured());
      info.host_issue_ms = replay.host_launch_ms;
      return info;
    });
  };
  std::vector<cuda::stream> loop_streams;
  for (unsigned i = 0; i < best.streams; ++i) {
    loop_streams.emplace_back(cuda::stream::options{cuda::stream_sync::non_blocking, 0});
  }
  hand_over_events hand_over;
  const runner loop = [this, &loop_streams, &loop_chunks, &best, &hand_over](const cuda::event&) {
    return chunk_loop(loop_streams, loop_chunks, best.per_stage, hand_over);
  };

  std::vector<row_samples> rows(5);
  rows[0].result.kind = best.kind;
  rows[0].result.name = best.name + ", again";
  rows[1].result.kind = variant_kind::pipeline_recorded;
  rows[1].result.name = best.name + ", recording on";
  rows[2].result.kind = variant_kind::pipeline_graph;
  rows[2].result.name = best.name + ", graph replay";
  rows[3].result.kind = variant_kind::pipeline_graph_device;
  rows[3].result.name = best.name + ", graph replay, device-scheduled";
  rows[4].result.kind = variant_kind::chunk_loop;
  rows[4].result.name = "bare loop, same chunks";
  std::vector<variant_result> measured =
      measure(std::move(rows),
              {pipeline_runner(off), recorded, replay_of(graph), replay_of(device_graph), loop}, true);
  result.best_again = std::move(measured[0]);
  result.best_recorded = std::move(measured[1]);
  result.best_graph = std::move(measured[2]);
  result.best_graph_device = std::move(measured[3]);
  result.best_loop = std::move(measured[4]);
  result.graph_device_to_host =
      run_by_run(result.best_graph_device->device_ms.samples, result.best_graph->device_ms.samples);
  if (last) {
    last->program_name = std::string(to_string(workload_.kind)) + ": " + best.name + " (recorded)";
    result.best_timeline = std::move(last);
    result.best_program = std::move(last_program);
  }
}

}  // namespace overlap::bench::detail
