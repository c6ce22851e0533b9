// The several-GPU section of `overlap bench` on the GPUs at hand (one is
// enough: it then measures one GPU count): every row of every count is
// measured and verified on odd sizes, and a bad GPU list fails before any
// measuring, naming the field.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "overlap/bench/driver.hpp"
#include "overlap/core/error.hpp"
#include "overlap/cuda/error.hpp"

namespace {

using overlap::bench::variant_kind;

overlap::bench::bench_config small_devices_config(std::vector<int> devices) {
  overlap::bench::bench_config config;
  config.feed.enabled = false;
  config.pageable.enabled = false;
  config.graph.enabled = false;
  config.warmup = 1;
  config.reps = 2;
  config.devices.enabled = true;
  config.devices.devices = std::move(devices);
  // 4 Mi + 3 elements: neither the GPUs' shares nor the chunks divide it.
  config.devices.bytes_each_way = ((std::size_t{4} << 20) + 3) * 4;
  config.devices.compute_rounds = 64;
  config.devices.hand_chunk_bytes = {std::size_t{1} << 20, (std::size_t{3} << 20) + 4};
  config.devices.hand_stream_counts = {2, 3};
  config.devices.sweep_reps = 1;
  return config;
}

TEST(BenchDevices, EveryRowOfEveryGpuCountIsMeasuredAndVerified) {
  const int visible = overlap::cuda::device_count();
  if (visible == 0) GTEST_SKIP() << "skipped: no CUDA device";
  std::vector<int> devices;
  for (int d = 0; d < std::min(visible, 2); ++d) devices.push_back(d);
  std::size_t steps_seen = 0;
  const auto config = small_devices_config(devices);
  const overlap::bench::bench_result r =
      overlap::bench::run_benchmark(config, [&](std::size_t step, std::size_t steps, const std::string&) {
        EXPECT_EQ(step, steps_seen + 1);
        EXPECT_EQ(steps, overlap::bench::count_steps(config));
        steps_seen = step;
      });
  EXPECT_EQ(steps_seen, overlap::bench::count_steps(config));
  ASSERT_TRUE(r.devices.has_value());
  ASSERT_EQ(r.devices->devices.size(), devices.size());
  ASSERT_EQ(r.devices->workloads.size(), 2U);
  const auto gpus = static_cast<unsigned>(devices.size());
  for (const overlap::bench::devices_workload_result& w : r.devices->workloads) {
    SCOPED_TRACE(std::string(overlap::bench::to_string(w.kind)));
    EXPECT_EQ(w.elements, (std::size_t{4} << 20) + 3);
    EXPECT_EQ(w.rounds, w.kind == overlap::bench::workload_kind::transfer_bound ? 1U : 64U);
    EXPECT_EQ(w.sweep.size(), 4U * gpus);
    ASSERT_EQ(w.rows.size(), 3U * gpus);
    for (const overlap::bench::devices_row& row : w.rows) {
      SCOPED_TRACE(row.row.name + " on " + std::to_string(row.gpus));
      EXPECT_TRUE(row.row.verified);
      EXPECT_EQ(row.row.device_ms.samples.size(), 2U);
      EXPECT_GT(row.row.device_ms.min, 0.0);
      EXPECT_GE(row.gpus, 1U);
      EXPECT_LE(row.gpus, gpus);
    }
    const auto kind_at = [&w](std::size_t i) { return w.rows[i].row.kind; };
    EXPECT_EQ(kind_at(0), w.kind == overlap::bench::workload_kind::transfer_bound
                              ? variant_kind::devices_copies
                              : variant_kind::devices_kernel);
    EXPECT_EQ(kind_at(1), variant_kind::devices_pipeline);
    EXPECT_EQ(kind_at(2), variant_kind::devices_hand_loop);
    // The hand loop's row is the sweep's best point on one GPU.
    const auto& hand = w.rows[2].row;
    EXPECT_TRUE(std::ranges::any_of(w.sweep, [&hand](const overlap::bench::hand_sweep_point& p) {
      return p.gpus == 1 && p.chunk_bytes == hand.chunk_bytes && p.streams == hand.streams;
    }));
  }
}

TEST(BenchDevices, AGpuThatIsNotThereFailsBeforeMeasuringAndNamesTheField) {
  const int visible = overlap::cuda::device_count();
  if (visible == 0) GTEST_SKIP() << "skipped: no CUDA device";
  try {
    (void)overlap::bench::run_benchmark(small_devices_config({0, visible}), {});
    FAIL() << "no error";
  } catch (const overlap::invalid_input& e) {
    EXPECT_NE(std::string(e.what()).find("devices[1]: " + std::to_string(visible) + " is not a GPU here"),
              std::string::npos)
        << e.what();
  }
  auto config = small_devices_config({0});
  config.devices.hand_stream_counts = {0};
  EXPECT_THROW((void)overlap::bench::run_benchmark(config, {}), overlap::invalid_input);
}

}  // namespace
