// overlap::probe on a GPU: the quick probe gives a model that validates and
// whose figures are the right shape, and the link peaks are consistent.
// Sanity bounds only: the figures themselves are the device's, recorded in
// bench/RESULTS.md, and vary from call to call.
#include <gtest/gtest.h>

#include <algorithm>

#include "overlap/core/error.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/probe/link_peaks.hpp"
#include "overlap/probe/probe.hpp"

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;

TEST(Probe, QuickProbeGivesAModelThatValidatesAndRoundTrips) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  overlap::probe::probe_options options;
  options.quick = true;
  std::size_t last_step = 0;
  std::size_t steps = 0;
  options.progress = [&](std::size_t step, std::size_t total, const std::string& what) {
    EXPECT_EQ(step, last_step + 1) << what;
    last_step = step;
    steps = total;
  };
  const auto m = overlap::probe::run_probe(options);
  EXPECT_EQ(last_step, steps);
  EXPECT_FALSE(m.device.empty());
  EXPECT_TRUE(m.quick);

  // Every copy point was timed, and a larger copy never takes less time.
  for (const auto* sweep : {&m.h2d_pinned, &m.d2h_pinned, &m.h2d_pageable, &m.d2h_pageable}) {
    ASSERT_FALSE(sweep->points.empty());
    for (std::size_t i = 0; i < sweep->points.size(); ++i) {
      EXPECT_GT(sweep->points[i].train_ms.median, 0.0);
      EXPECT_LE(sweep->points[i].train_ms.min, sweep->points[i].train_ms.median);
      EXPECT_LE(sweep->points[i].train_ms.median, sweep->points[i].train_ms.max);
      if (i > 0) {
        EXPECT_GT(sweep->points[i].train_ms.median, 0.5 * sweep->points[i - 1].train_ms.median);
      }
    }
  }
  // The order runs saw every copy finish, in time order, after the release.
  ASSERT_FALSE(m.arbitration.empty());
  for (const auto& run : m.arbitration) {
    ASSERT_EQ(run.finish_order.size(), static_cast<std::size_t>(run.streams) * run.copies_per_stream);
    EXPECT_TRUE(std::is_sorted(run.finish_ms.begin(), run.finish_ms.end()));
    EXPECT_GT(run.finish_ms.front(), 0.0);
  }
  // The queued pipeline moves the trains' copies plus kernels and hand-overs:
  // never faster per chunk than the slower direction's copy in a train.
  EXPECT_EQ(m.pipeline.streams, 8U);
  EXPECT_GT(m.pipeline.train_copy_ms.median, 0.0);
  EXPECT_GT(m.pipeline.chunk_ms.median, 0.9 * m.pipeline.train_copy_ms.median);
  EXPECT_GT(m.calls.copy_ms.median, 0.0);
  EXPECT_GT(m.calls.launch_ms.median, 0.0);
  EXPECT_GE(m.concurrent_kernels, 1U);
  EXPECT_LE(m.concurrent_kernels, m.streams_tried);
  EXPECT_FALSE(m.staging.empty());

  const overlap::DeviceModel model = overlap::probe::model_from_probe(m);
  EXPECT_NO_THROW(model.validate());
  EXPECT_GE(model.queued_handover_latency, 0.0);
  EXPECT_LT(model.queued_handover_latency, m.pipeline.chunk_ms.median);
  ASSERT_TRUE(model.probe.has_value());
  EXPECT_EQ(model.probe->device, m.device);
  const overlap::DeviceModel back = overlap::DeviceModel::from_json(model.to_json());
  EXPECT_EQ(back.to_json(), model.to_json());
  for (const auto& point : model.bidirectional) {
    EXPECT_GE(point.h2d_slowdown, 1.0);
    EXPECT_GE(point.d2h_slowdown, 1.0);
  }
}

TEST(Probe, LinkPeaksArePositiveAndBothDirectionsAtMostTheirSum) {
  if (overlap::cuda::device_count() == 0) GTEST_SKIP() << "skipped: no CUDA device";
  overlap::probe::link_peak_options options;
  options.sizes = {MiB, 4 * MiB};
  options.train_bytes = 16 * MiB;
  options.reps = 3;
  const auto peaks = overlap::probe::measure_link_peaks(options);
  EXPECT_GT(peaks.h2d.gigabytes_per_second, 0.1);
  EXPECT_GT(peaks.d2h.gigabytes_per_second, 0.1);
  EXPECT_GT(peaks.both.gigabytes_per_second, 0.1);
  // Two directions at once move at most what each moves alone, with room for noise.
  EXPECT_LE(peaks.both.gigabytes_per_second,
            1.1 * (peaks.h2d.gigabytes_per_second + peaks.d2h.gigabytes_per_second));
  for (const auto* rate : {&peaks.h2d, &peaks.d2h, &peaks.both}) {
    EXPECT_TRUE(rate->at_bytes == MiB || rate->at_bytes == 4 * MiB);
  }
}

TEST(Probe, BadLinkPeakOptionsAreRejectedBeforeAnyCudaCall) {
  overlap::probe::link_peak_options zero_reps;
  zero_reps.reps = 0;
  EXPECT_THROW((void)overlap::probe::measure_link_peaks(zero_reps), overlap::invalid_input);
  overlap::probe::link_peak_options zero_size;
  zero_size.sizes = {MiB, 0};
  try {
    (void)overlap::probe::measure_link_peaks(zero_size);
    FAIL() << "a zero size was accepted";
  } catch (const overlap::invalid_input& e) {
    EXPECT_NE(std::string(e.what()).find("sizes[1]"), std::string::npos) << e.what();
  }
}

}  // namespace
