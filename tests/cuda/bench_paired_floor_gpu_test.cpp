// `overlap bench`'s compute-bound default Pipeline against the kernel alone,
// the two measured alternating run by run (what its verdict judges): both
// rows measured and verified on an odd size, and the ratio taken run by run.
#include <gtest/gtest.h>

#include <cstddef>
#include <string>

#include "overlap/bench/driver.hpp"
#include "overlap/cuda/error.hpp"

namespace {

using overlap::bench::variant_kind;
using overlap::bench::workload_kind;

TEST(BenchPairedFloor, TheDefaultAndTheKernelAloneAlternateAndAreBothChecked) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  overlap::bench::bench_config config;
  config.feed.enabled = config.pageable.enabled = config.graph.enabled =
      false;  // the compute-bound job alone
  config.warmup = 1;
  config.reps = 3;
  // 256 Ki + 5 floats: no chunk size divides it.
  config.workloads = {{workload_kind::compute_bound, (std::size_t{1} << 18) + 5, {64 << 10}, {2}}};
  std::size_t steps_seen = 0;
  std::string last_row;
  const overlap::bench::bench_result r =
      overlap::bench::run_benchmark(config, [&](std::size_t step, std::size_t, const std::string& row) {
        steps_seen = step;
        last_row = row;
      });
  EXPECT_EQ(steps_seen, overlap::bench::count_steps(config));
  EXPECT_EQ(last_row, "compute-bound default pipeline against the kernel alone, alternating");
  ASSERT_EQ(r.workloads.size(), 1U);
  ASSERT_TRUE(r.workloads[0].default_paired.has_value());
  const overlap::bench::paired_floor& p = *r.workloads[0].default_paired;
  EXPECT_EQ(p.floor.kind, variant_kind::floor_kernel);
  EXPECT_EQ(p.pipeline.kind, variant_kind::pipeline_default);
  // Every element of every run of both rows, warm-up too, was checked.
  EXPECT_TRUE(p.floor.verified);
  EXPECT_TRUE(p.pipeline.verified);
  ASSERT_EQ(p.floor.device_ms.samples.size(), 3U);
  ASSERT_EQ(p.pipeline.device_ms.samples.size(), 3U);
  ASSERT_EQ(p.ratio.samples.size(), 3U);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_GT(p.floor.device_ms.samples[i], 0.0);
    EXPECT_DOUBLE_EQ(p.ratio.samples[i], p.pipeline.device_ms.samples[i] / p.floor.device_ms.samples[i]);
  }
  EXPECT_LE(p.ratio.min, p.ratio.median);
  EXPECT_LE(p.ratio.median, p.ratio.max);
}

}  // namespace
