// overlap probe --all-devices on a host of two or more GPUs: every GPU
// measured alone and together, every ordered pair's peer copies, and a model
// that validates, round-trips and simulates a program on every GPU. Sanity
// bounds only: the figures are the host's, recorded in bench/RESULTS.md
// beside an independent measurement (bench/multi_gpu_copies.cpp).
#include <gtest/gtest.h>

#include <set>

#include "overlap/core/program.hpp"
#include "overlap/cuda/device_models.hpp"
#include "overlap/cuda/error.hpp"
#include "overlap/probe/host_probe.hpp"
#include "overlap/sim/simulator.hpp"

namespace {

constexpr std::uint64_t MiB = std::uint64_t{1} << 20;

TEST(HostProbe, EveryGpuAloneTogetherAndEachPeerPair) {
  const int devices = overlap::cuda::device_count();
  if (devices == 0) GTEST_SKIP() << "skipped: no CUDA device";
  if (devices < 2) GTEST_SKIP() << "skipped: needs 2 GPUs";
  overlap::probe::probe_options options;
  options.quick = true;
  std::size_t last_step = 0;
  std::size_t steps = 0;
  options.progress = [&](std::size_t step, std::size_t total, const std::string& what) {
    EXPECT_GE(step, last_step) << what;
    EXPECT_LE(step, total) << what;
    last_step = step;
    steps = total;
  };
  const auto m = overlap::probe::run_host_probe(options);
  EXPECT_EQ(last_step, steps);
  ASSERT_EQ(m.gpus.size(), static_cast<std::size_t>(devices));
  std::set<std::string> uuids;
  double alone_h2d = 0.0;
  for (int d = 0; d < devices; ++d) {
    const auto& g = m.gpus[static_cast<std::size_t>(d)];
    EXPECT_EQ(g.device, d);
    EXPECT_EQ(g.uuid, overlap::cuda::device_uuid(d));
    uuids.insert(g.uuid);
    EXPECT_GT(g.peaks.h2d.gigabytes_per_second, 1.0);
    EXPECT_GT(g.peaks.d2h.gigabytes_per_second, 1.0);
    // Both ways at once move more than one way alone on a link with a copy engine per direction.
    EXPECT_GT(g.peaks.both.gigabytes_per_second, g.peaks.h2d.gigabytes_per_second);
    alone_h2d += g.peaks.h2d.gigabytes_per_second;
  }
  EXPECT_EQ(uuids.size(), static_cast<std::size_t>(devices)) << "every GPU measured, none twice";

  // Together: positive, ordered median within its extremes, never more than
  // the GPUs reach alone (beyond the spread of repeated trains).
  const auto& t = m.together;
  for (const auto* total : {&t.h2d_gbps, &t.d2h_gbps, &t.both_gbps}) {
    EXPECT_GT(total->median, 1.0);
    EXPECT_LE(total->min, total->median);
    EXPECT_LE(total->median, total->max);
  }
  EXPECT_LE(t.h2d_gbps.median, alone_h2d * 1.10);
  ASSERT_EQ(t.per_gpu.size(), static_cast<std::size_t>(devices));
  for (const auto& each : t.per_gpu) ASSERT_EQ(each.size(), 3u);

  ASSERT_EQ(m.peers.size(), static_cast<std::size_t>(devices * (devices - 1)));
  for (const auto& p : m.peers) {
    EXPECT_NE(p.from, p.to);
    ASSERT_EQ(p.sizes.size(), p.gbps.size());
    for (const auto& rate : p.gbps) EXPECT_GT(rate.median, 0.1);
  }

  const overlap::DeviceModel model = overlap::probe::model_from_host_probe(m);
  ASSERT_TRUE(model.host.has_value());
  EXPECT_EQ(model.host->gpus.size(), static_cast<std::size_t>(devices));
  EXPECT_EQ(model.host->peers.size(), m.peers.size());
  const overlap::DeviceModel back = overlap::DeviceModel::from_json(model.to_json());
  EXPECT_EQ(back.to_json(), model.to_json());

  // A program copying on every GPU at once simulates on it, held to the host's total.
  overlap::Program p;
  for (int d = 0; d < devices; ++d) {
    const auto s = p.add_stream("s" + std::to_string(d), overlap::stream_kind::non_blocking, 0,
                                static_cast<overlap::device_id>(d));
    p.copy(s, overlap::copy_direction::h2d, 256 * MiB);
  }
  const double total_ms = overlap::sim::simulate(p, model).total();
  const double bytes = 256.0 * MiB * devices;
  EXPECT_LE(bytes / (total_ms * 1e6), model.host->h2d_gigabytes_per_second * 1.001);
  EXPECT_GT(bytes / (total_ms * 1e6), 1.0);
}

}  // namespace
