// `overlap bench`'s compute-bound default Pipeline against the kernel alone,
// the two measured alternating run by run (what its verdict judges): both
// rows measured and verified on an odd size, and the ratio taken run by run.
// Likewise the transfer-bound default against the sweep's best and the
// chunked floor of a link sweep taken after each pair of runs.
#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "overlap/bench/driver.hpp"
#include "overlap/cuda/error.hpp"

namespace {

using overlap::bench::variant_kind;
using overlap::bench::workload_kind;

// One workload alone, 1 warm-up and 3 timed runs a row (4 for the paired
// rows), on 256 Ki + 5 floats (no chunk size divides it); checks that every
// step was announced and that the last was `last_step`.
overlap::bench::bench_result run_alone(overlap::bench::bench_config config, workload_kind kind,
                                       const std::vector<std::size_t>& chunk_bytes,
                                       const std::string& last_step) {
  config.feed.enabled = config.pageable.enabled = config.graph.enabled = false;
  config.warmup = 1;
  config.reps = 3;
  config.paired_reps = 4;
  config.workloads = {{kind, (std::size_t{1} << 18) + 5, chunk_bytes, {2}}};
  std::size_t steps_seen = 0;
  std::string last_row;
  overlap::bench::bench_result r =
      overlap::bench::run_benchmark(config, [&](std::size_t step, std::size_t, const std::string& row) {
        steps_seen = step;
        last_row = row;
      });
  EXPECT_EQ(steps_seen, overlap::bench::count_steps(config));
  EXPECT_EQ(last_row, last_step);
  return r;
}

TEST(BenchPairedFloor, TheDefaultAndTheKernelAloneAlternateAndAreBothChecked) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  const overlap::bench::bench_result r =
      run_alone({}, workload_kind::compute_bound, {64 << 10},
                "compute-bound default pipeline against the kernel alone, alternating");
  ASSERT_EQ(r.workloads.size(), 1U);
  ASSERT_TRUE(r.workloads[0].default_paired.has_value());
  const overlap::bench::paired_floor& p = *r.workloads[0].default_paired;
  EXPECT_EQ(p.floor.kind, variant_kind::floor_kernel);
  EXPECT_EQ(p.pipeline.kind, variant_kind::pipeline_default);
  // Every element of every run of both rows, warm-up too, was checked.
  EXPECT_TRUE(p.floor.verified);
  EXPECT_TRUE(p.pipeline.verified);
  // paired_reps rounds, where the other rows have reps.
  EXPECT_EQ(r.paired_reps, 4U);
  EXPECT_EQ(r.workloads[0].variants.front().device_ms.samples.size(), 3U);
  ASSERT_EQ(p.floor.device_ms.samples.size(), 4U);
  ASSERT_EQ(p.pipeline.device_ms.samples.size(), 4U);
  ASSERT_EQ(p.ratio.samples.size(), 4U);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_GT(p.floor.device_ms.samples[i], 0.0);
    EXPECT_DOUBLE_EQ(p.ratio.samples[i], p.pipeline.device_ms.samples[i] / p.floor.device_ms.samples[i]);
  }
  EXPECT_LE(p.ratio.min, p.ratio.median);
  EXPECT_LE(p.ratio.median, p.ratio.max);
}

TEST(BenchPairedFloor, TheTransferDefaultTheSweepsBestAndTheLinkAlternate) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  overlap::bench::bench_config config;
  // A small link sweep: two sizes (the chunked floor needs two), short trains.
  config.link.sizes = {std::size_t{64} << 10, std::size_t{256} << 10};
  config.link.train_bytes = std::size_t{4} << 20;
  config.link.reps = 2;
  const overlap::bench::bench_result r = run_alone(
      config, workload_kind::transfer_bound, {64 << 10, 256 << 10},
      "transfer-bound default pipeline against the sweep's best and the chunked floor, alternating");
  ASSERT_EQ(r.workloads.size(), 1U);
  const overlap::bench::workload_result& w = r.workloads[0];
  ASSERT_TRUE(w.transfer_paired.has_value());
  const overlap::bench::paired_transfer& p = *w.transfer_paired;
  const overlap::bench::variant_result* swept = w.best_swept();
  ASSERT_NE(swept, nullptr);
  EXPECT_EQ(p.pipeline.kind, variant_kind::pipeline_default);
  EXPECT_EQ(p.best_swept.kind, variant_kind::pipeline);
  EXPECT_EQ(p.best_swept.name, swept->name + ", paired");
  EXPECT_EQ(p.best_swept.chunk_bytes, swept->chunk_bytes);
  // Every element of every run of both rows, warm-up too, was checked.
  EXPECT_TRUE(p.pipeline.verified);
  EXPECT_TRUE(p.best_swept.verified);
  // A chunked floor per timed pair, the warm-up's sweep left out, and the ratios run by run.
  ASSERT_EQ(p.pipeline.device_ms.samples.size(), 4U);
  ASSERT_EQ(p.best_swept.device_ms.samples.size(), 4U);
  ASSERT_EQ(p.chunked_floor_ms.samples.size(), 4U);
  ASSERT_EQ(p.to_best_swept.samples.size(), 4U);
  ASSERT_EQ(p.to_chunked_floor.samples.size(), 4U);
  ASSERT_EQ(p.best_to_chunked_floor.samples.size(), 4U);
  EXPECT_EQ(swept->device_ms.samples.size(), 3U);
  for (std::size_t i = 0; i < 4; ++i) {
    const double floor = p.chunked_floor_ms.samples[i];
    EXPECT_GT(floor, 0.0);
    EXPECT_DOUBLE_EQ(p.to_best_swept.samples[i],
                     p.pipeline.device_ms.samples[i] / p.best_swept.device_ms.samples[i]);
    EXPECT_DOUBLE_EQ(p.to_chunked_floor.samples[i], p.pipeline.device_ms.samples[i] / floor);
    EXPECT_DOUBLE_EQ(p.best_to_chunked_floor.samples[i], p.best_swept.device_ms.samples[i] / floor);
  }
}

// The configuration is checked before anything touches a GPU, so this
// runs (and must pass) on a machine without one.
TEST(BenchPairedFloor, NoPairedRoundsIsRefusedBeforeMeasuringAndNamesTheField) {
  overlap::bench::bench_config config;
  config.paired_reps = 0;
  try {
    (void)overlap::bench::run_benchmark(config, {});
    FAIL() << "no error";
  } catch (const overlap::invalid_input& e) {
    EXPECT_EQ(std::string(e.what()), "paired_reps: 0 is out of range (expected >= 1)");
  }
}

}  // namespace
