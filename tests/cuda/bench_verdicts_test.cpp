// `overlap bench`'s verdicts from made-up results (no GPU): a full run is
// judged against the chunked floor and the kernel-alone floor; a --quick run
// is not judged at all, and says so in one line instead of PASS/FAIL lines.
#include "bench_verdicts.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "bench_fixtures.hpp"

namespace overlap::cli {
namespace {

using bench_fixtures::compute_workload;
using bench_fixtures::result_of;
using bench_fixtures::transfer_workload;

const Verdict& named(const Judgement& j, const std::string& name) {
  const auto found = std::find_if(j.verdicts.begin(), j.verdicts.end(),
                                  [&name](const Verdict& v) { return v.name == name; });
  if (found == j.verdicts.end()) throw std::runtime_error("no verdict " + name);
  return *found;
}

TEST(BenchVerdicts, FullRunIsJudgedAgainstTheChunkedFloorAndTheKernelAlone) {
  const bench::workload_result transfer_run = transfer_workload();
  const double chunked_ms = transfer_run.link->chunked.ms;
  EXPECT_EQ(transfer_run.link->chunked.chunks, 12U);
  EXPECT_NEAR(chunked_ms, 1.7710715970, 1e-9);
  const Judgement j = judge(result_of(transfer_workload(), compute_workload()), false);
  ASSERT_TRUE(j.judged);
  // transfer: 2, compute: 1, default Pipeline: 3, default vs two-stream: 2, host cost: 1
  EXPECT_EQ(j.verdicts.size(), 9U);
  const Verdict& transfer = named(j, "transfer_best_vs_chunked_floor");
  EXPECT_NEAR(transfer.value, 1.6 / chunked_ms, 1e-12);
  EXPECT_EQ(transfer.text, "transfer-bound best Pipeline within 1.02x of the chunked floor");
  EXPECT_TRUE(transfer.pass);  // 0.903x
  const Verdict& compute = named(j, "compute_best_vs_floor");
  EXPECT_NEAR(compute.value, 2.03 / 2.0, 1e-12);
  EXPECT_TRUE(compute.pass);
  EXPECT_NEAR(named(j, "compute_host_cost_per_chunk").value, 8.0, 1e-12);
}

// The compute-bound fixture's graph replayed walked by the device too: 1.5 us
// of host time per chunk, its device time over the host-walked replay's,
// run by run, as given.
bench::workload_result with_device_walked_replay(std::vector<double> device_to_host) {
  bench::workload_result w = compute_workload();
  w.best_graph_device = *w.best_graph;
  w.best_graph_device->kind = bench::variant_kind::pipeline_graph_device;
  w.best_graph_device->host_issue_per_chunk_us = bench::summarize({1.4, 1.5, 1.7});
  w.graph_device_to_host = bench::summarize(std::move(device_to_host));
  return w;
}

TEST(BenchVerdicts, TheHostCostIsJudgedOnTheDeviceWalkedReplayWhenItCostsTheDeviceAtMostOnePercent) {
  const Judgement j =
      judge(result_of(transfer_workload(), with_device_walked_replay({1.001, 1.002, 1.02})), false);
  const Verdict& cost = named(j, "compute_host_cost_per_chunk");
  EXPECT_NEAR(cost.value, 1.5, 1e-12);
  EXPECT_TRUE(cost.pass);
  EXPECT_EQ(
      cost.text,
      "compute-bound host cost per chunk < 10 us (best configuration replayed as a CUDA graph, walked by "
      "the device, 1.002x the host-walked replay's device time)");
}

TEST(BenchVerdicts, TheHostWalkedReplayIsJudgedWhenTheDeviceWalksTheGraphSlower) {
  const Judgement j =
      judge(result_of(transfer_workload(), with_device_walked_replay({1.30, 1.35, 1.002})), false);
  const Verdict& cost = named(j, "compute_host_cost_per_chunk");
  EXPECT_NEAR(cost.value, 8.0, 1e-12);  // the host-walked replay's median
  EXPECT_EQ(
      cost.text,
      "compute-bound host cost per chunk < 10 us (best configuration replayed as a CUDA graph, walked by "
      "the host; walked by the device it took 1.300x the device time)");
  // Results without a device-walked replay (older runs, --json of earlier versions) judge the host-walked
  // one.
  const Judgement without = judge(result_of(transfer_workload(), compute_workload()), false);
  const Verdict& older = named(without, "compute_host_cost_per_chunk");
  EXPECT_NEAR(older.value, 8.0, 1e-12);
  EXPECT_EQ(
      older.text,
      "compute-bound host cost per chunk < 10 us (best configuration replayed as a CUDA graph, walked by "
      "the host)");
}

TEST(BenchVerdicts, TheDefaultPipelineIsJudgedAgainstTheChunkedFloorAndTheSweepsBest) {
  const double chunked_ms = transfer_workload().link->chunked.ms;
  const Judgement j = judge(result_of(transfer_workload(), compute_workload()), false);
  const Verdict& to_floor = named(j, "transfer_default_vs_chunked_floor");
  EXPECT_NEAR(to_floor.value, 1.9 / chunked_ms, 1e-12);
  EXPECT_EQ(to_floor.text, "transfer-bound default Pipeline within 1.02x of the chunked floor");
  EXPECT_FALSE(to_floor.pass);
  // The sweep's best row is 4 MiB x 2 streams at 1.6 ms, its runs 0.99x..1.02x
  // of that: the default may be up to 1.015x of it.
  const Verdict& to_swept = named(j, "transfer_default_vs_best_swept");
  EXPECT_NEAR(to_swept.value, 1.9 / 1.6, 1e-12);
  EXPECT_NEAR(to_swept.limit, 1.015, 1e-12);
  EXPECT_EQ(
      to_swept.text,
      "transfer-bound default Pipeline no slower than the sweep's best configuration (within its spread)");
  EXPECT_FALSE(to_swept.pass);
  const Verdict& compute = named(j, "compute_default_vs_floor");
  EXPECT_NEAR(compute.value, 2.1 / 2.0, 1e-12);
  EXPECT_EQ(compute.limit, 1.01);
  EXPECT_FALSE(compute.pass);

  // A default that beats the sweep and sits within the limits passes.
  auto transfer = transfer_workload();
  auto compute_fast = compute_workload();
  for (auto& v : transfer.variants) {
    if (v.kind == bench::variant_kind::pipeline_default) v.device_ms = bench::summarize({1.55, 1.55, 1.55});
  }
  for (auto& v : compute_fast.variants) {
    if (v.kind == bench::variant_kind::pipeline_default) v.device_ms = bench::summarize({2.01, 2.01, 2.01});
  }
  const Judgement fast = judge(result_of(transfer, compute_fast), false);
  EXPECT_TRUE(named(fast, "transfer_default_vs_chunked_floor").pass);
  EXPECT_TRUE(named(fast, "transfer_default_vs_best_swept").pass);
  EXPECT_TRUE(named(fast, "compute_default_vs_floor").pass);

  // Slower than the sweep's best but inside its spread passes; outside it fails.
  for (const auto& [ms, pass] : {std::pair{1.62, true}, std::pair{1.63, false}}) {
    auto near = transfer_workload();
    for (auto& v : near.variants) {
      if (v.kind == bench::variant_kind::pipeline_default) v.device_ms = bench::summarize({ms, ms, ms});
    }
    EXPECT_EQ(named(judge(result_of(near, compute_workload()), false), "transfer_default_vs_best_swept").pass,
              pass)
        << ms;
  }
}

TEST(BenchVerdicts, TheChunkedFloorTakesTheSweepsCopyTimesAndTheBestChunkCount) {
  // Sizes out of order; times of one copy at 1, 4 and 64 MiB.
  constexpr std::size_t MiB = bench_fixtures::MiB;
  const std::vector<bench::link_point> points = {
      {64 * MiB, 1.30, 1.40, 2.60}, {1 * MiB, 0.03, 0.04, 0.05}, {4 * MiB, 0.09, 0.10, 0.16}};
  const std::vector<bench::link_point> sorted = {points[1], points[2], points[0]};
  // Linear between the swept sizes, and beyond them along the end segments.
  EXPECT_NEAR(bench::copy_ms_at(sorted, &bench::link_point::both_ms, 2.0 * MiB), 0.05 + 0.11 / 3.0, 1e-12);
  EXPECT_NEAR(bench::copy_ms_at(sorted, &bench::link_point::h2d_ms, 34.0 * MiB), 0.09 + 1.21 / 2.0, 1e-12);
  // 64 MiB each way, a kernel of 0.4 ms: N = 1 (one 64 MiB chunk) to 64 (1 MiB chunks).
  const bench::chunked_floor f = bench::make_chunked_floor(points, 64 * MiB, 64 * MiB, 0.4);
  double best = 0.0;
  std::size_t best_n = 0;
  for (std::size_t n = 1; n <= 64; ++n) {
    const double c = 64.0 * MiB / static_cast<double>(n);
    const double k = 0.4 / static_cast<double>(n);
    const double pair = std::max(bench::copy_ms_at(sorted, &bench::link_point::both_ms, c), k);
    const double t = bench::copy_ms_at(sorted, &bench::link_point::h2d_ms, c) +
                     static_cast<double>(n - 1) * pair + k +
                     bench::copy_ms_at(sorted, &bench::link_point::d2h_ms, c);
    if (best_n == 0 || t < best) {
      best = t;
      best_n = n;
    }
  }
  EXPECT_EQ(f.chunks, best_n);
  EXPECT_NEAR(f.ms, best, 1e-12);
  EXPECT_EQ(f.chunks, 16U);  // 4 MiB chunks: 0.09 + 15 x 0.16 + 0.025 + 0.10 = 2.615 ms
  EXPECT_NEAR(f.ms, 2.615, 1e-12);
  EXPECT_EQ(f.chunk_bytes, 4 * MiB);
  EXPECT_NEAR(f.pair_ms, 0.16, 1e-12);

  // Bad sweeps and kernel times are refused, naming what is wrong.
  EXPECT_THROW((void)bench::make_chunked_floor({points[0]}, 1000, 1000, 0.0), invalid_input);
  EXPECT_THROW((void)bench::make_chunked_floor({points[0], points[0]}, 1000, 1000, 0.0), invalid_input);
  std::vector<bench::link_point> zero = points;
  zero[1].both_ms = 0.0;
  EXPECT_THROW((void)bench::make_chunked_floor(zero, 1000, 1000, 0.0), invalid_input);
  EXPECT_THROW((void)bench::make_chunked_floor(points, 1000, 1000, -1.0), invalid_input);
  EXPECT_THROW((void)bench::make_chunked_floor(points, 0, 0, 0.0), invalid_input);
}

TEST(BenchVerdicts, FullRunPrintsAPassOrFailLinePerVerdict) {
  const Judgement j = judge(result_of(transfer_workload(), compute_workload()), false);
  const std::string text = verdicts_text(j);
  EXPECT_NE(text.find("verdicts (reported; they do not change the exit code):\n"), std::string::npos);
  EXPECT_NE(text.find("  PASS  transfer-bound best Pipeline within 1.02x of the chunked floor: 0.903x\n"),
            std::string::npos);
  EXPECT_NE(text.find("  FAIL  transfer-bound default Pipeline within 1.02x of the chunked floor: 1.073x\n"),
            std::string::npos);
  EXPECT_NE(text.find("  PASS  compute-bound host cost per chunk < 10 us"), std::string::npos);
  EXPECT_EQ(verdict_lines(j).size(), j.verdicts.size());
}

TEST(BenchVerdicts, QuickRunPrintsOneLineAndNoPassOrFail) {
  const Judgement j = judge(result_of(transfer_workload(), compute_workload()), true);
  EXPECT_FALSE(j.judged);
  EXPECT_TRUE(j.verdicts.empty());
  const std::string text = verdicts_text(j);
  EXPECT_EQ(text, std::string("\n") + not_judged_line + "\n");
  EXPECT_NE(text.find("judged at full size only (`overlap bench`)"), std::string::npos);
  EXPECT_EQ(text.find("PASS"), std::string::npos);
  EXPECT_EQ(text.find("FAIL"), std::string::npos);
  EXPECT_EQ(verdict_lines(j), std::vector<std::string>{not_judged_line});
}

TEST(BenchVerdicts, JsonMarksAQuickRunNotJudged) {
  nlohmann::ordered_json quick;
  add_verdicts_json(quick, judge(result_of(transfer_workload(), compute_workload()), true));
  EXPECT_EQ(quick["verdicts_judged"], false);
  EXPECT_TRUE(quick["verdicts"].empty());
  EXPECT_FALSE(quick.contains("all_pass"));
  EXPECT_EQ(quick["verdicts_note"], not_judged_line);

  nlohmann::ordered_json full;
  add_verdicts_json(full, judge(result_of(transfer_workload(), compute_workload()), false));
  EXPECT_EQ(full["verdicts_judged"], true);
  EXPECT_EQ(full["verdicts"].size(), 9U);
  EXPECT_EQ(full["all_pass"], false);
  EXPECT_FALSE(full.contains("verdicts_note"));
  EXPECT_EQ(full["verdicts"][0]["name"], "transfer_best_vs_chunked_floor");
}

TEST(BenchVerdicts, TheComputeDefaultIsJudgedOnTheRowsMeasuredAlternating) {
  // Apart, the default is 2.1 / 2.0 = 1.05x the kernel alone; measured
  // alternating, run by run 1.004x, 1.008x and 1.02x: the median judges.
  auto compute = compute_workload();
  bench::paired_floor paired;
  paired.floor.device_ms = bench::summarize({2.5, 2.5, 2.5});
  paired.pipeline.device_ms = bench::summarize({2.51, 2.52, 2.55});
  paired.ratio = bench::summarize({1.004, 1.008, 1.02});
  compute.default_paired = paired;
  const Judgement j = judge(result_of(transfer_workload(), compute), false);
  const Verdict& v = named(j, "compute_default_vs_floor");
  EXPECT_NEAR(v.value, 1.008, 1e-12);
  EXPECT_EQ(v.limit, 1.01);
  EXPECT_TRUE(v.pass);
  EXPECT_EQ(v.text,
            "compute-bound default Pipeline within 1.01x of the kernel-alone floor (the two alternating run "
            "by run)");
  compute.default_paired->ratio = bench::summarize({1.004, 1.012, 1.02});
  EXPECT_FALSE(named(judge(result_of(transfer_workload(), compute), false), "compute_default_vs_floor").pass);
}

TEST(BenchVerdicts, TheTransferDefaultIsJudgedOnTheRowsAndLinkSweptAlternating) {
  // Apart, the default is 1.9 ms against a best swept row of 1.6 ms and a
  // chunked floor of 1.77 ms: it fails both. Measured alternating, with the
  // link swept after each pair, run by run it is 1.004x, 1.008x and 1.03x
  // the best (whose runs spread 1.98..2.02 ms: limit 1.01x) and 1.01x,
  // 1.015x and 1.03x its pair's chunked floor: the medians judge.
  auto transfer = transfer_workload();
  bench::paired_transfer paired;
  paired.pipeline.device_ms = bench::summarize({2.01, 2.02, 2.06});
  paired.best_swept.device_ms = bench::summarize({2.0, 1.98, 2.02});
  paired.chunked_floor_ms = bench::summarize({1.99, 1.99, 2.0});
  paired.to_best_swept = bench::summarize({1.004, 1.008, 1.03});
  paired.to_chunked_floor = bench::summarize({1.01, 1.015, 1.03});
  paired.best_to_chunked_floor = bench::summarize({1.005, 0.995, 1.01});
  transfer.transfer_paired = paired;
  const Judgement j = judge(result_of(transfer, compute_workload()), false);
  const Verdict& to_swept = named(j, "transfer_default_vs_best_swept");
  EXPECT_NEAR(to_swept.value, 1.008, 1e-12);
  EXPECT_NEAR(to_swept.limit, 1.01, 1e-12);
  EXPECT_TRUE(to_swept.pass);
  EXPECT_EQ(
      to_swept.text,
      "transfer-bound default Pipeline no slower than the sweep's best configuration (within its spread; "
      "the two alternating run by run)");
  const Verdict& to_floor = named(j, "transfer_default_vs_chunked_floor");
  EXPECT_NEAR(to_floor.value, 1.015, 1e-12);
  EXPECT_EQ(to_floor.limit, 1.02);
  EXPECT_TRUE(to_floor.pass);
  EXPECT_EQ(
      to_floor.text,
      "transfer-bound default Pipeline within 1.02x of the chunked floor (the link swept after each run)");
  // The best Pipeline is the faster of the two paired rows against its floor.
  const Verdict& best = named(j, "transfer_best_vs_chunked_floor");
  EXPECT_NEAR(best.value, 1.005, 1e-12);
  EXPECT_TRUE(best.pass);

  transfer.transfer_paired->to_best_swept = bench::summarize({1.004, 1.012, 1.03});
  transfer.transfer_paired->to_chunked_floor = bench::summarize({1.01, 1.021, 1.03});
  transfer.transfer_paired->best_to_chunked_floor = bench::summarize({1.03, 1.025, 1.04});
  const Judgement slow = judge(result_of(transfer, compute_workload()), false);
  EXPECT_FALSE(named(slow, "transfer_default_vs_best_swept").pass);
  EXPECT_FALSE(named(slow, "transfer_default_vs_chunked_floor").pass);
  EXPECT_NEAR(named(slow, "transfer_best_vs_chunked_floor").value, 1.021, 1e-12);
  EXPECT_FALSE(named(slow, "transfer_best_vs_chunked_floor").pass);
}

TEST(BenchVerdicts, AnUnsteadyLinkPutsACaveatOnEveryLinkBoundVerdict) {
  // The fixture's peaks spread 1-2%: no caveat.
  const Judgement steady = judge(result_of(transfer_workload(), compute_workload()), false);
  for (const Verdict& v : steady.verdicts) EXPECT_TRUE(v.caveat.empty()) << v.name;

  bench::workload_result w = transfer_workload();
  w.link =
      bench::make_link_floor({12.5, 4 * bench_fixtures::MiB, 0.01}, {12.0, 16 * bench_fixtures::MiB, 0.02},
                             {18.0, 64 * bench_fixtures::MiB, 0.104}, w.bytes, w.bytes);
  w.link->chunked = bench_fixtures::transfer_link_floor(w.bytes).chunked;
  const Judgement j = judge(result_of(std::move(w), compute_workload()), false);
  const std::string expected =
      "the link was unsteady in this run (peak spread both directions 10.4%, over 5%): re-run before "
      "trusting this verdict";
  for (const char* name :
       {"transfer_best_vs_chunked_floor", "transfer_best_vs_sequential", "transfer_default_vs_chunked_floor",
        "transfer_default_vs_best_swept", "transfer_default_vs_two_stream"}) {
    EXPECT_EQ(named(j, name).caveat, expected) << name;
  }
  // Host costs and the compute-bound ratios do not ride on the link.
  EXPECT_TRUE(named(j, "compute_host_cost_per_chunk").caveat.empty());
  EXPECT_TRUE(named(j, "compute_best_vs_floor").caveat.empty());
  EXPECT_TRUE(named(j, "compute_default_vs_floor").caveat.empty());

  const std::string text = verdicts_text(j);
  EXPECT_NE(text.find("chunked floor: 0.903x\n        (the link was unsteady in this run"), std::string::npos)
      << text;
  nlohmann::ordered_json out;
  add_verdicts_json(out, j);
  EXPECT_EQ(out["verdicts"][0]["caveat"], expected);
  EXPECT_FALSE(out["verdicts"][2].contains("caveat"));  // compute_best_vs_floor
}

TEST(BenchVerdicts, FramesAreJudgedAgainstTheCopyRateThePingPongAndTheProducer) {
  bench::bench_result r = result_of(transfer_workload(), compute_workload());
  r.feed = bench_fixtures::frames_result();
  const Judgement j = judge(r, false);
  EXPECT_EQ(j.verdicts.size(), 9U + 6U);
  const Verdict& share = named(j, "frames_feed_vs_copy_rate");
  EXPECT_NEAR(share.value, 1.0 / 1.04, 1e-12);
  EXPECT_TRUE(share.pass);
  EXPECT_EQ(share.text, "default Feed throughput at least 0.95x the copy rate at 4 MiB frames");
  const Verdict& hand = named(j, "frames_feed_vs_hand_tuned");
  EXPECT_NEAR(hand.value, 1.04 / 1.02, 1e-12);
  EXPECT_EQ(hand.limit, 1.01);
  EXPECT_FALSE(hand.pass);  // 1.0196x
  EXPECT_NEAR(named(j, "frames_feed_vs_ping_pong").value, 1.04 / 1.10, 1e-12);
  EXPECT_TRUE(named(j, "frames_feed_vs_ping_pong").pass);
  EXPECT_NEAR(named(j, "frames_paced_50us").value, 1.06 / 1.04, 1e-12);
  EXPECT_TRUE(named(j, "frames_paced_50us").pass);
  EXPECT_NEAR(named(j, "frames_paced_500us").value, 1.1, 1e-12);
  EXPECT_FALSE(named(j, "frames_paced_500us").pass);
  EXPECT_TRUE(named(j, "frames_paced_500us").caveat.empty());
  EXPECT_NEAR(named(j, "frames_paced_500us_dedicated").value, 1.04, 1e-12);
  EXPECT_TRUE(named(j, "frames_paced_500us_dedicated").pass);

  r.feed->variants[1].device_ms =
      bench::summarize({1.2, 1.2, 1.2});  // 0.833x the copy rate, slower than ping-pong
  const Judgement slow = judge(r, false);
  EXPECT_FALSE(named(slow, "frames_feed_vs_copy_rate").pass);
  EXPECT_FALSE(named(slow, "frames_feed_vs_ping_pong").pass);
}

TEST(BenchVerdicts, PageableIsJudgedAgainstTheStagingFloorNaiveAndPinned) {
  bench::bench_result r = result_of(transfer_workload(), compute_workload());
  r.pageable = bench_fixtures::pageable_result();
  const Judgement j = judge(r, false);
  EXPECT_EQ(j.verdicts.size(), 9U + 5U);
  // The staging floor: 1.5x the host copy floor's 20 ms (above the pinned Pipeline's 6 ms).
  EXPECT_NEAR(named(j, "pageable_stage_vs_staging_floor").value, 22.0 / 30.0, 1e-12);
  EXPECT_TRUE(named(j, "pageable_stage_vs_staging_floor").pass);
  EXPECT_NEAR(named(j, "pageable_stage_vs_naive").value, 90.0 / 22.0, 1e-12);
  EXPECT_TRUE(named(j, "pageable_stage_vs_naive").pass);
  EXPECT_NEAR(named(j, "pageable_kept_vs_pinned").value, 1.05, 1e-12);
  EXPECT_TRUE(named(j, "pageable_kept_vs_pinned").pass);
  EXPECT_TRUE(named(j, "pageable_automatic_one_shot").pass);
  EXPECT_NE(named(j, "pageable_automatic_one_shot").text.find("(staged: took staged)"), std::string::npos);
  EXPECT_TRUE(named(j, "pageable_automatic_kept").pass);

  // automatic registering when staging was faster fails; so does a stage slower than 1.15x the floor.
  r.pageable->automatic_one_shot = "registered";
  EXPECT_FALSE(named(judge(r, false), "pageable_automatic_one_shot").pass);
  r.pageable->automatic_one_shot = "staged";
  r.pageable->variants[2].device_ms = bench::summarize({36.0, 36.0, 36.0});
  const Judgement bad = judge(r, false);
  EXPECT_NEAR(named(bad, "pageable_stage_vs_staging_floor").value, 1.2, 1e-12);
  EXPECT_FALSE(named(bad, "pageable_stage_vs_staging_floor").pass);
}

// With the one-shot rows alternating and the host copy swept after each
// round, the stage is judged run by run: a staged median of 36 ms fails
// against the start's 20 ms copy floor (1.2x) but passes beside the floor
// the host kept while it ran.
TEST(BenchVerdicts, PageableStageIsJudgedRunByRunWhenTheRowsAlternate) {
  bench::bench_result r = result_of(transfer_workload(), compute_workload());
  r.pageable = bench_fixtures::pageable_result();
  r.pageable->variants[2].device_ms = bench::summarize({36.0, 36.0, 36.0});
  EXPECT_FALSE(named(judge(r, false), "pageable_stage_vs_staging_floor").pass);
  r.pageable->paired = bench_fixtures::pageable_paired();
  const Judgement j = judge(r, false);
  const auto& stage = named(j, "pageable_stage_vs_staging_floor");
  EXPECT_NEAR(stage.value, 0.9, 1e-12);
  EXPECT_TRUE(stage.pass);
  EXPECT_NE(stage.text.find("the host copy swept after each run"), std::string::npos) << stage.text;
  const auto& naive = named(j, "pageable_stage_vs_naive");
  EXPECT_NEAR(naive.value, 4.0, 1e-12);
  EXPECT_TRUE(naive.pass);
  EXPECT_NE(naive.text.find("(the two alternating run by run)"), std::string::npos) << naive.text;

  r.pageable->paired->stage_to_floor = bench::summarize({1.1, 1.2, 1.3});
  r.pageable->paired->naive_to_staged = bench::summarize({2.5, 2.9, 3.5});
  const Judgement slow = judge(r, false);
  EXPECT_NEAR(named(slow, "pageable_stage_vs_staging_floor").value, 1.2, 1e-12);
  EXPECT_FALSE(named(slow, "pageable_stage_vs_staging_floor").pass);
  EXPECT_FALSE(named(slow, "pageable_stage_vs_naive").pass);
}

TEST(BenchVerdicts, GraphIsJudgedOnItsBranchesTinyKernelsAndTheDag) {
  bench::bench_result r = result_of(transfer_workload(), compute_workload());
  r.graph = bench_fixtures::graph_result();
  const Judgement j = judge(r, false);
  EXPECT_EQ(j.verdicts.size(), 9U + 6U);
  const Verdict& alone = named(j, "graph_vs_longest_branch");
  EXPECT_NEAR(alone.value, 1.05, 1e-12);
  EXPECT_EQ(alone.limit, 1.2);
  EXPECT_TRUE(alone.pass);
  EXPECT_NEAR(named(j, "graph_vs_one_stream").value, 8.0 / 1.05, 1e-12);
  EXPECT_TRUE(named(j, "graph_vs_one_stream").pass);
  EXPECT_NEAR(named(j, "graph_vs_hand_streams").value, 1.05 / 1.08, 1e-12);
  EXPECT_NEAR(named(j, "graph_vs_hand_streams").limit, 1.015, 1e-12);  // the hand-written rows' spread
  EXPECT_TRUE(named(j, "graph_vs_hand_streams").pass);
  EXPECT_EQ(named(j, "graph_concurrent_branches").value, 8.0);
  EXPECT_TRUE(named(j, "graph_concurrent_branches").pass);
  EXPECT_NEAR(named(j, "graph_replay_host_cost").value, 0.02, 1e-12);
  EXPECT_TRUE(named(j, "graph_replay_host_cost").pass);
  EXPECT_EQ(named(j, "graph_dag_build_map").value, 147.0);
  EXPECT_EQ(named(j, "graph_dag_build_map").unit, "ms");
  EXPECT_TRUE(named(j, "graph_dag_build_map").pass);
  for (const Verdict& v : j.verdicts) {
    if (v.name.starts_with("graph_")) {
      EXPECT_TRUE(v.caveat.empty()) << v.name;
    }
  }

  const std::string text = verdicts_text(j);
  EXPECT_NE(
      text.find("  PASS  Graph of independent branches within 1.2x of the longest branch alone: 1.050x\n"),
      std::string::npos)
      << text;
  EXPECT_NE(
      text.find("  PASS  Graph runs all 8 branches at once (the most kernels running together, recorded): "
                "8 of 8 branches\n"),
      std::string::npos)
      << text;
  EXPECT_NE(
      text.find("  PASS  1000 tiny kernels: replay's host cost per node at most 0.5x direct issue: 0.020x\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("  PASS  random DAG of 100000 nodes declared and mapped in under 200 ms on one core: "
                      "147.000 ms\n"),
            std::string::npos)
      << text;
}

TEST(BenchVerdicts, GraphVerdictsFailWhenTheTargetsAreMissed) {
  bench::bench_result r;
  r.graph = bench_fixtures::graph_result();
  bench::graph_result& g = *r.graph;
  g.branch_rows[3].device_ms = bench::summarize({3.0, 3.0, 3.0});  // Graph::run: 3x alone, 2.67x one stream
  g.concurrent_branches = 5;
  g.tiny_rows[1].host_issue_per_chunk_us = bench::summarize({1.5, 1.5, 1.5});  // 0.6x direct
  g.dag->total_ms = bench::summarize({250.0, 250.0, 250.0});
  const Judgement j = judge(r, false);
  EXPECT_EQ(j.verdicts.size(), 6U);  // a Graph-only run (--only graph) is judged on its own
  for (const Verdict& v : j.verdicts) EXPECT_FALSE(v.pass) << v.name;
  EXPECT_NE(
      verdicts_text(j).find("FAIL  Graph runs all 8 branches at once (the most kernels running together, "
                            "recorded): 5 of 8 branches"),
      std::string::npos);

  // No DAG: no DAG verdict. No direct host cost: the replay cannot pass against it.
  g.dag.reset();
  g.tiny_rows[0].host_issue_per_chunk_us.reset();
  const Judgement k = judge(r, false);
  EXPECT_EQ(k.verdicts.size(), 5U);
  EXPECT_FALSE(named(k, "graph_replay_host_cost").pass);
  EXPECT_FALSE(judge(r, true).judged);
}

TEST(BenchVerdicts, TransferBoundResultsWithoutALinkFloorAreAnError) {
  bench::workload_result w = transfer_workload();
  w.link.reset();
  EXPECT_THROW((void)judge(result_of(std::move(w)), false), error);
}

}  // namespace
}  // namespace overlap::cli
