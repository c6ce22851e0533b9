// `overlap bench`'s pageable workload on a small, odd size: the four
// one-shot rows measured alternating with the host copy swept after each
// round (what the staging verdicts judge), the pinned and registered-once
// rows after them, every run of every row checked, and the ratios taken
// run by run against the floor of the same round.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "overlap/bench/driver.hpp"
#include "overlap/cuda/error.hpp"

namespace {

using overlap::bench::variant_kind;

TEST(BenchPageable, TheOneShotRowsAlternateWithTheHostCopySweptAfterEachRound) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  overlap::bench::bench_config config;
  config.workloads.clear();
  config.feed.enabled = config.graph.enabled = false;
  config.warmup = 1;
  config.reps = 3;
  config.pageable.elements = (std::size_t{1} << 20) + 5;  // no chunk divides it
  config.pageable.chunk_bytes = std::size_t{256} << 10;
  config.pageable.copy_threads = {2, 4};
  std::size_t steps_seen = 0;
  std::string last_row;
  const overlap::bench::bench_result r =
      overlap::bench::run_benchmark(config, [&](std::size_t step, std::size_t, const std::string& row) {
        steps_seen = step;
        last_row = row;
      });
  EXPECT_EQ(steps_seen, overlap::bench::count_steps(config));
  EXPECT_EQ(last_row, "pageable Pipeline, automatic, vectors registered once");
  ASSERT_TRUE(r.pageable.has_value());
  const overlap::bench::pageable_result& p = *r.pageable;

  const std::vector<variant_kind> kinds = {
      variant_kind::pageable_naive,         variant_kind::pageable_registered, variant_kind::pageable_staged,
      variant_kind::pageable_automatic,     variant_kind::pageable_pinned,     variant_kind::pageable_kept,
      variant_kind::pageable_kept_automatic};
  ASSERT_EQ(p.variants.size(), kinds.size());
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    SCOPED_TRACE(p.variants[i].name);
    EXPECT_EQ(p.variants[i].kind, kinds[i]);
    EXPECT_TRUE(p.variants[i].verified);  // every element of every run, warm-up too
    ASSERT_EQ(p.variants[i].device_ms.samples.size(), 3U);
  }
  EXPECT_EQ(p.copy_gbps.size(), 2U);
  EXPECT_EQ(p.streaming_copy_gbps.size(), 2U);
  EXPECT_GT(p.copy_floor_ms, 0.0);
  EXPECT_EQ(p.automatic_kept, "pinned");  // vectors the caller registered are page-locked

  // A host copy floor per timed round, the warm-up's left out, and the ratios run by run.
  ASSERT_TRUE(p.paired.has_value());
  const overlap::bench::pageable_result::paired_rounds& q = *p.paired;
  ASSERT_EQ(q.copy_floor_ms.samples.size(), 3U);
  ASSERT_EQ(q.stage_to_floor.samples.size(), 3U);
  ASSERT_EQ(q.naive_to_staged.samples.size(), 3U);
  const std::vector<double>& naive = p.variants[0].device_ms.samples;
  const std::vector<double>& staged = p.variants[2].device_ms.samples;
  const double pinned = p.variants[4].device_ms.median;
  for (std::size_t i = 0; i < 3; ++i) {
    const double floor = q.copy_floor_ms.samples[i];
    EXPECT_GT(floor, 0.0);
    EXPECT_DOUBLE_EQ(q.stage_to_floor.samples[i], staged[i] / std::max(1.5 * floor, pinned));
    EXPECT_DOUBLE_EQ(q.naive_to_staged.samples[i], naive[i] / staged[i]);
  }
}

}  // namespace
