// `overlap bench --report`'s page, built from made-up results (no GPU): the
// sweep chart holds every Pipeline configuration at its median with the
// floor (the link floor, for the transfer-bound workload) and sequential
// levels, the notes say which term of the link floor binds, and the best
// run's prediction times each kernel as the kernel-alone floor's share for
// its chunk.
#include "bench_report.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "bench_fixtures.hpp"
#include "bench_verdicts.hpp"
#include "overlap/core/device_model.hpp"
#include "overlap/core/error.hpp"

namespace overlap::cli {
namespace {

using bench::variant_kind;
using bench_fixtures::MiB;
using bench_fixtures::result_of;
using bench_fixtures::transfer_workload;

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(BenchReport, PredictionTimesEachKernelAsItsChunksShareOfTheKernelFloor) {
  const bench::workload_result w = transfer_workload();
  // Without shared SMs each kernel runs at its own speed, so its span is
  // exactly the time it was given (sharing stretches overlapping ones).
  DeviceModel h100 = DeviceModel::preset("h100");
  h100.kernels_share_sms = false;
  const Timeline predicted = predict_best_run(w, h100);
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
  EXPECT_NE(page.find(R"(data-level="link floor" data-y="1.515)"), std::string::npos);
  EXPECT_NE(page.find(R"x(data-level="sequential (one stream)" data-y="3.1")x"), std::string::npos);
  EXPECT_NE(page.find(">1 MiB</text>"), std::string::npos);
  EXPECT_NE(page.find(">4 MiB</text>"), std::string::npos);
  // Measured and predicted runs, with the total error between them.
  EXPECT_NE(page.find("Total error:"), std::string::npos);
  EXPECT_NE(page.find(R"("name":"measured")"), std::string::npos);
  EXPECT_NE(page.find(R"("name":"predicted")"), std::string::npos);
}

TEST(BenchReport, ThePredictionRunsOnTheModelGiven) {
  overlap::DeviceModel probed = overlap::DeviceModel::preset("h100");
  probed.name = "my probed GPU";
  const std::string page = bench_report_html(result_of(transfer_workload()), {}, "now", probed);
  EXPECT_NE(page.find("Program on the my probed GPU model (predicted)"), std::string::npos);
  EXPECT_NE(page.find("my probed GPU model"), std::string::npos);
  const std::string preset = bench_report_html(result_of(transfer_workload()), {}, "now");
  EXPECT_NE(preset.find("Program on the h100 model (predicted)"), std::string::npos);
}

TEST(BenchReport, PageShowsTheLinkFloorAndTheTermThatBindsIt) {
  const std::string page = bench_report_html(result_of(transfer_workload()), {}, "now");
  EXPECT_NE(
      page.find("transfer-bound: link floor 1.515 ms, bound by: both directions at 18.0 GB/s; peaks: H2D "
                "12.5 GB/s at 4 MiB (spread 1.0%), D2H 12.0 GB/s at 16 MiB (spread 2.0%), both directions "
                "18.0 GB/s at 64 MiB (spread 1.5%)"),
      std::string::npos);
  EXPECT_NE(page.find("copies of 1 MiB, 4 MiB, 16 MiB, 64 MiB in trains of 256 MiB, 5 reps each"),
            std::string::npos);
  // The best run's ratio is to the link floor, not to the whole-buffer copies (1.3 ms).
  EXPECT_NE(page.find("1.600 ms = 1.056x the link floor (1.515 ms)"), std::string::npos);
  EXPECT_EQ(page.find("both-directions floor"), std::string::npos);
}

TEST(BenchReport, QuickPageSaysTheVerdictsAreJudgedAtFullSizeOnly) {
  const bench::bench_result r = result_of(transfer_workload());
  const std::string page = bench_report_html(r, verdict_lines(judge(r, true)), "now");
  EXPECT_NE(page.find("verdicts: judged at full size only"), std::string::npos);
  EXPECT_EQ(page.find("PASS  "), std::string::npos);
  EXPECT_EQ(page.find("FAIL  "), std::string::npos);
}

TEST(BenchReport, ResultsWithoutARecordedRunAreAnError) {
  bench::workload_result w = transfer_workload();
  w.best_timeline.reset();
  EXPECT_THROW((void)bench_report_html(result_of(std::move(w)), {}, "now"), error);
}

TEST(BenchReport, TransferBoundResultsWithoutALinkFloorAreAnError) {
  bench::workload_result w = transfer_workload();
  w.link.reset();
  EXPECT_THROW((void)bench_report_html(result_of(std::move(w)), {}, "now"), error);
}

}  // namespace
}  // namespace overlap::cli
