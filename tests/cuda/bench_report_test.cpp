// `overlap bench --report`'s page, built from made-up results (no GPU): the
// sweep chart holds every Pipeline configuration at its median with the
// floor and sequential levels, and the best run's prediction times each
// kernel as the kernel-alone floor's share for its chunk.
#include "bench_report.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "overlap/core/device_model.hpp"
#include "overlap/core/error.hpp"
#include "overlap/core/pipeline_shape.hpp"
#include "overlap/sim/simulator.hpp"

namespace overlap::cli {
namespace {

using bench::variant_kind;
using bench::variant_result;

constexpr std::size_t MiB = std::size_t{1} << 20;

variant_result row(variant_kind kind, double median_ms, std::size_t chunk_bytes = 0, unsigned streams = 1) {
  variant_result v;
  v.kind = kind;
  v.name = std::string(bench::to_string(kind));
  v.chunk_bytes = chunk_bytes;
  v.streams = streams;
  v.device_ms = bench::summarize({median_ms * 0.99, median_ms, median_ms * 1.02});
  v.verified = true;
  return v;
}

// 13 MiB + a remainder in 4 MiB chunks: four chunks, the last one smaller.
bench::workload_result transfer_workload() {
  bench::workload_result w;
  w.kind = bench::workload_kind::transfer_bound;
  w.bytes = 13 * MiB + 4096;
  w.elements = w.bytes / sizeof(float);
  w.floors = {row(variant_kind::floor_h2d, 1.1), row(variant_kind::floor_d2h, 1.2),
              row(variant_kind::floor_both_directions, 1.3), row(variant_kind::floor_kernel, 0.8)};
  w.variants = {row(variant_kind::sequential, 3.1), row(variant_kind::two_stream, 2.2),
                row(variant_kind::pipeline_default, 1.9, 4 * MiB, 4)};
  for (const unsigned streams : {2U, 4U}) {
    for (const std::size_t chunk : {1 * MiB, 4 * MiB}) {
      const double median_ms = streams == 2 ? (chunk == MiB ? 1.65 : 1.6) : (chunk == MiB ? 1.85 : 1.8);
      w.variants.push_back(row(variant_kind::pipeline, median_ms, chunk, streams));
      w.variants.back().name = "pipeline " + std::to_string(chunk) + " x " + std::to_string(streams);
      w.variants.back().chunks = (w.bytes + chunk - 1) / chunk;
    }
  }
  w.best_pipeline = 4;  // 4 MiB x 2 streams: 1.6 ms

  PipelineShape shape;
  shape.chunks = 4;
  shape.streams = 2;
  shape.h2d_bytes = shape.d2h_bytes = w.bytes;
  shape.h2d_chunk_bytes = shape.d2h_chunk_bytes = 4 * MiB;
  shape.kernel_time = 0.0;  // as Pipeline describes its runs: the stage's cost is not known
  shape.name = "transfer-bound";
  w.best_program = make_pipeline_program(shape);
  shape.kernel_time = 1.0;
  w.best_timeline = sim::simulate(make_pipeline_program(shape), DeviceModel::preset("h100"));
  w.best_timeline->program_name = "transfer-bound: best (recorded)";
  w.best_timeline->device = "Test GPU";
  return w;
}

bench::bench_result result_of(bench::workload_result w) {
  bench::bench_result r;
  r.device.name = "Test GPU";
  r.device.sm_count = 7;
  r.warmup = 2;
  r.reps = 3;
  r.workloads.push_back(std::move(w));
  return r;
}

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(BenchReport, PredictionTimesEachKernelAsItsChunksShareOfTheKernelFloor) {
  const bench::workload_result w = transfer_workload();
  const Timeline predicted = predict_best_run(w, DeviceModel::preset("h100"));
  EXPECT_EQ(predicted.device, "h100 model");
  EXPECT_EQ(predicted.program_name, w.best_timeline->program_name);
  ASSERT_EQ(predicted.spans.size(), w.best_timeline->spans.size());
  const double floor_ms = w.floor(variant_kind::floor_kernel).device_ms.median;
  std::size_t kernels = 0;
  for (const Span& s : predicted.spans) {
    if (s.kind != op_kind::kernel) continue;
    const double bytes = s.chunk < 3 ? 4.0 * MiB : static_cast<double>(w.bytes - 12 * MiB);
    EXPECT_NEAR(s.duration(), floor_ms * bytes / static_cast<double>(w.bytes), 1e-9) << "chunk " << s.chunk;
    ++kernels;
  }
  EXPECT_EQ(kernels, 4U);
}

TEST(BenchReport, PageHasTheSweepChartAndBothRunsOfTheBestConfiguration) {
  const std::string page =
      bench_report_html(result_of(transfer_workload()), {"PASS  a verdict: 1.000x"}, "2026-11-23 12:00 UTC");
  EXPECT_NE(page.find("<h1>overlap bench on Test GPU</h1>"), std::string::npos);
  EXPECT_NE(page.find("2026-11-23 12:00 UTC"), std::string::npos);
  EXPECT_NE(page.find("<li>PASS  a verdict: 1.000x</li>"), std::string::npos);
  EXPECT_NE(page.find("transfer-bound: best Pipeline: pipeline 4194304 x 2 (4 chunks), 1.600 ms"),
            std::string::npos);
  // The chart: the four swept configurations, a line per stream count, two levels.
  EXPECT_EQ(count(page, "<circle class=\"point\""), 4U);
  EXPECT_EQ(count(page, "<polyline class=\"series\""), 2U);
  EXPECT_NE(page.find(R"(data-series="2 streams" data-x="4194304" data-y="1.6")"), std::string::npos);
  EXPECT_NE(page.find(R"(data-series="4 streams" data-x="1048576" data-y="1.85")"), std::string::npos);
  EXPECT_NE(page.find(R"(data-level="both-directions floor" data-y="1.3")"), std::string::npos);
  EXPECT_NE(page.find(R"x(data-level="sequential (one stream)" data-y="3.1")x"), std::string::npos);
  EXPECT_NE(page.find(">1 MiB</text>"), std::string::npos);
  EXPECT_NE(page.find(">4 MiB</text>"), std::string::npos);
  // Measured and predicted runs, with the total error between them.
  EXPECT_NE(page.find("Total error:"), std::string::npos);
  EXPECT_NE(page.find(R"("name":"measured")"), std::string::npos);
  EXPECT_NE(page.find(R"("name":"predicted")"), std::string::npos);
}

TEST(BenchReport, ResultsWithoutARecordedRunAreAnError) {
  bench::workload_result w = transfer_workload();
  w.best_timeline.reset();
  EXPECT_THROW((void)bench_report_html(result_of(std::move(w)), {}, "now"), error);
}

}  // namespace
}  // namespace overlap::cli
