// cuda::Pipeline over the workload: default options, planned and calibrated
// automatic chunking, then every chunk size x stream count of the sweep
// (chunks round-robin over the streams), then every chunk size with streams
// by stage (the default's first layout: three kernel streams) and by stage
// with one kernel stream (the layout a copy-bound default adapts to); the
// fastest of the default and the sweep by median is the best configuration
// (the one the bench replays recorded, as a graph and as a bare loop).
#include <limits>
#include <utility>

#include "workload_bench.hpp"

namespace overlap::bench::detail {

namespace {

std::string pipeline_name(std::size_t chunk_bytes, unsigned streams) {
  return "pipeline chunk " + format_bytes(chunk_bytes) + " x " + std::to_string(streams) + " streams";
}

std::string per_stage_name(std::size_t chunk_bytes) {
  return "pipeline chunk " + format_bytes(chunk_bytes) + ", streams by stage";
}

std::string one_kernel_stream_name(std::size_t chunk_bytes) {
  return per_stage_name(chunk_bytes) + ", 1 kernel stream";
}

}  // namespace

run_info workload_bench::info_of(const cuda::run_report& report) {
  run_info info;
  info.host_issue_ms = report.host_issue_ms;
  info.chunks = report.chunks;
  info.chunk_bytes = report.chunk_bytes;
  info.streams = report.streams;
  info.device_bytes = report.device_bytes;
  info.per_stage = report.assignment == cuda::stream_assignment::per_stage;
  return info;
}

cuda::pipeline_options workload_bench::options_of(const variant_result& row) {
  cuda::pipeline_options options;
  if (row.kind == variant_kind::pipeline) {
    options.chunk_bytes = row.chunk_bytes;
    options.streams = row.streams;
    if (row.per_stage) options.assignment = cuda::stream_assignment::per_stage;
  }
  return options;
}

runner workload_bench::pipeline_runner(pipeline& p) {
  return [this, &p](const cuda::event&) { return info_of(p.run(input(), out_.span(), stage_)); };
}

variant_result workload_bench::measure_pipeline(variant_kind kind, std::string name,
                                                const cuda::pipeline_options& options) {
  pipeline p(options);
  return measure_one(kind, std::move(name), pipeline_runner(p), true);
}

void workload_bench::measure_pipelines(workload_result& result) {
  result.variants.push_back(measure_pipeline(variant_kind::pipeline_default, "pipeline (default)", {}));
  cuda::pipeline_options planned;
  planned.chunking = cuda::automatic_chunking::planned;
  result.variants.push_back(measure_pipeline(variant_kind::pipeline_planned, "pipeline (planned)", planned));
  cuda::pipeline_options calibrated;
  calibrated.calibrate = cuda::stage_calibration::on;
  result.variants.push_back(
      measure_pipeline(variant_kind::pipeline_calibrated, "pipeline (calibrated)", calibrated));
  for (const std::size_t chunk : workload_.chunk_bytes) {
    for (const unsigned streams : workload_.stream_counts) {
      cuda::pipeline_options options;
      options.chunk_bytes = chunk;
      options.streams = streams;
      result.variants.push_back(
          measure_pipeline(variant_kind::pipeline, pipeline_name(chunk, streams), options));
    }
  }
  for (const std::size_t chunk : workload_.chunk_bytes) {
    cuda::pipeline_options options;
    options.chunk_bytes = chunk;
    options.assignment = cuda::stream_assignment::per_stage;
    result.variants.push_back(measure_pipeline(variant_kind::pipeline, per_stage_name(chunk), options));
  }
  for (const std::size_t chunk : workload_.chunk_bytes) {
    cuda::pipeline_options options;
    options.chunk_bytes = chunk;
    options.assignment = cuda::stream_assignment::per_stage;
    options.streams = 3;  // an upload, one kernel and a download stream
    result.variants.push_back(
        measure_pipeline(variant_kind::pipeline, one_kernel_stream_name(chunk), options));
  }
  double best = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < result.variants.size(); ++i) {
    const variant_result& v = result.variants[i];
    const bool is_pipeline = v.kind == variant_kind::pipeline_default || v.kind == variant_kind::pipeline;
    if (is_pipeline && v.device_ms.median < best) {
      best = v.device_ms.median;
      result.best_pipeline = i;
    }
  }
}

}  // namespace overlap::bench::detail
