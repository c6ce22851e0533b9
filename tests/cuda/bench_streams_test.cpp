// The frames and pageable workloads of `overlap bench` printed from made-up
// results (no GPU): the tables, the summary lines and the JSON.
#include "bench_streams.hpp"

#include <gtest/gtest.h>

#include <string>

#include "bench_fixtures.hpp"
#include "overlap/bench/driver.hpp"
#include "overlap/core/error.hpp"

namespace overlap::cli {
namespace {

TEST(BenchStreams, FramesTableAndSummary) {
  const std::string text = frames_text(bench_fixtures::frames_result());
  EXPECT_NE(text.find("frames: 10 frames of 4 MiB through y = 2x + 1, in and out\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("x ping"), std::string::npos);
  // 2 x 10 x 4 MiB in 1.0 ms = 83.9 GB/s; the default Feed at 1.04 ms moves 80.7 GB/s.
  EXPECT_NE(text.find("copy rate at 4 MiB: 83.9 GB/s in + out; the default Feed (4 slots) moves 80.7 GB/s = "
                      "0.962x of it, 9615 frames/s; the hand-written ping-pong 0.909x"),
            std::string::npos)
      << text;
  // 1.0 / 1.02 = 0.980x of the copy rate; 1.04 / 1.02 = 1.020x.
  EXPECT_NE(
      text.find("the hand-tuned loop (streams by stage, one thread) 0.980x of the copy rate; the default "
                "Feed takes 1.020x its time"),
      std::string::npos)
      << text;
  EXPECT_NE(
      text.find("host time issuing a frame: 12.0 us with runtime calls, 4.5 us replaying a graph per slot"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("producer 500 us per frame, issuing thread automatic: 5.500 ms against max(5.000 ms of "
                      "producing, the GPU-bound 1.040 ms) = 1.100x"),
            std::string::npos)
      << text;
}

TEST(BenchStreams, AHandTunedLoopOfStreamsPerSlotSaysHowMany) {
  bench::feed_result f = bench_fixtures::frames_result();
  for (bench::variant_result& v : f.variants) {
    if (v.kind == bench::variant_kind::hand_tuned_slots) v.per_stage = false;
  }
  const std::string text = frames_text(f);
  EXPECT_NE(text.find("the hand-tuned loop (3 streams, one thread) 0.980x of the copy rate"),
            std::string::npos)
      << text;
}

TEST(BenchStreams, PageableTableAndSummary) {
  const std::string text = pageable_text(bench_fixtures::pageable_result());
  EXPECT_NE(text.find("pageable: 256 MiB in (67108864 floats) from std::vector"), std::string::npos) << text;
  EXPECT_NE(text.find("floor: host copy pageable -> pinned (computed)"), std::string::npos);
  EXPECT_NE(
      text.find("host copy pageable -> pinned: memcpy 15.0 GB/s with 4 threads, 26.8 GB/s with 8 threads, "
                "24.0 GB/s with 16 threads\n"),
      std::string::npos)
      << text;
  EXPECT_NE(
      text.find("host copy pageable -> pinned: streaming stores 18.0 GB/s with 4 threads, 25.0 GB/s with "
                "8 threads\n"),
      std::string::npos)
      << text;
  EXPECT_NE(
      // memcpy alone: 2 x 256 MiB at 26.8 GB/s = 20.03 ms, 22.0 / 20.03 = 1.098x.
      text.find(
          "stage: 1.100x the host copy floor (1.098x the floor with memcpy alone), 4.09x faster than the "
          "naive pipeline; vectors registered once: 1.050x the pinned Pipeline"),
      std::string::npos)
      << text;
  EXPECT_NE(
      text.find("automatic took the staged path one-shot and the pinned path on vectors registered once"),
      std::string::npos);
  EXPECT_EQ(text.find("alternating"), std::string::npos);  // measured before the rows alternated

  bench::pageable_result alternating = bench_fixtures::pageable_result();
  alternating.paired = bench_fixtures::pageable_paired();
  const std::string paired = pageable_text(alternating);
  EXPECT_NE(paired.find("alternating, the host copy swept after each run: copy floor 26.000 ms "
                        "(25.000..30.000); stage 0.900x max(1.5x that floor, the pinned Pipeline) "
                        "(0.850..0.950), 4.00x faster than naive (3.60..4.20), medians run by run\n"),
            std::string::npos)
      << paired;
}

TEST(BenchStreams, Json) {
  const auto frames = frames_json(bench_fixtures::frames_result());
  EXPECT_EQ(frames["frames"], 10);
  EXPECT_DOUBLE_EQ(frames["floor_ms"].get<double>(), 1.0);
  EXPECT_EQ(frames["variants"].size(), 5U);
  EXPECT_EQ(frames["variants"][4]["kind"], "hand_tuned_slots");
  EXPECT_EQ(frames["variants"][4]["streams_or_slots"], 3);
  EXPECT_EQ(frames["variants"][3]["kind"], "feed_graphs");
  EXPECT_EQ(frames["variants"][3]["host_issue_per_item_us_median"], 4.5);
  EXPECT_EQ(frames["variants"][1]["kind"], "feed_default");
  EXPECT_EQ(frames["paced"][1]["producer_us"], 500.0);
  EXPECT_EQ(frames["paced"][1]["issuing_thread"], "automatic");
  EXPECT_EQ(frames["paced"][2]["issuing_thread"], "dedicated");
  const auto pageable = pageable_json(bench_fixtures::pageable_result());
  EXPECT_DOUBLE_EQ(pageable["floor_ms"].get<double>(), 20.0);
  EXPECT_EQ(pageable["host_copy"].size(), 5U);
  EXPECT_EQ(pageable["host_copy"][2]["stores"], "memcpy");
  EXPECT_EQ(pageable["host_copy"][3]["stores"], "streaming");
  EXPECT_EQ(pageable["host_copy"][3]["threads"], 4);
  EXPECT_DOUBLE_EQ(pageable["host_copy"][4]["gigabytes_per_second"].get<double>(), 25.0);
  EXPECT_EQ(pageable["automatic_path"]["one_shot"], "staged");
  EXPECT_NEAR(pageable["variants"][2]["ratio_to_floor"].get<double>(), 1.1, 1e-12);
  EXPECT_FALSE(pageable.contains("paired"));  // measured before the rows alternated

  bench::pageable_result alternating = bench_fixtures::pageable_result();
  alternating.paired = bench_fixtures::pageable_paired();
  const auto paired = pageable_json(alternating)["paired"];
  EXPECT_DOUBLE_EQ(paired["copy_floor_ms"]["median"].get<double>(), 26.0);
  EXPECT_EQ(paired["copy_floor_ms"]["samples"].size(), 3U);
  EXPECT_DOUBLE_EQ(paired["stage_to_staging_floor"]["max"].get<double>(), 0.95);
  EXPECT_DOUBLE_EQ(paired["naive_to_staged"]["min"].get<double>(), 3.6);
}

// The progress total is the rows each workload announces, counted by hand:
// transfer-bound: the link sweep, 4 floors, sequential, two streams, the
// default, planned and calibrated Pipelines, 2 x 2 swept, 2 by stage and 2
// by stage on one kernel stream, the best again, and the default against
// the sweep's best and the chunked floor, alternating (20); compute-bound: the
// same without the link sweep, 1 x 3 swept, 1 by stage and 1 on one kernel
// stream, and the default against the kernel alone, alternating (16);
// frames: the copy rate, the ping-pong, the hand-tuned loop, the default
// Feed, 3 slot counts, graphs, a dedicated issuer, 2 producers x 2 issuing
// threads (13); pageable: the host copy floor, the 4 one-shot rows together
// and 3 rows alone (5); graph: 5
// branch rows and the recorded run, 2 tiny rows, the DAG (9).
TEST(BenchStreams, ProgressCountsEveryRow) {
  bench::bench_config config;
  config.workloads = {{bench::workload_kind::transfer_bound, 1 << 20, {1 << 20, 2 << 20}, {2, 4}},
                      {bench::workload_kind::compute_bound, 1 << 20, {1 << 20}, {2, 3, 4}}};
  EXPECT_EQ(bench::count_steps(config), 20U + 16U + 13U + 5U + 9U);
  config.graph.dag_nodes = 0;  // no DAG row
  EXPECT_EQ(bench::count_steps(config), 20U + 16U + 13U + 5U + 8U);
  config.feed.enabled = false;
  config.pageable.enabled = false;
  config.graph.enabled = false;
  EXPECT_EQ(bench::count_steps(config), 20U + 16U);
}

TEST(BenchStreams, AMissingRowIsNamed) {
  bench::feed_result f = bench_fixtures::frames_result();
  f.variants.erase(f.variants.begin());  // no ping-pong
  try {
    (void)frames_text(f);
    ADD_FAILURE() << "no error";
  } catch (const error& e) {
    EXPECT_EQ(std::string(e.what()), "bench: no ping_pong row was measured");
  }
}

}  // namespace
}  // namespace overlap::cli
