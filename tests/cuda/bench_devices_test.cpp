// `overlap bench --devices` from made-up results (no GPU): the GPU set it
// parses, its table and JSON, and the verdicts over two GPUs.
#include "bench_devices.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "bench_fixtures.hpp"
#include "bench_verdicts.hpp"
#include "overlap/core/error.hpp"

namespace overlap::cli {
namespace {

using bench::variant_kind;
using bench_fixtures::MiB;
using bench_fixtures::row;

// Two GPUs, 64 MiB each way. Transfer-bound: copies 20 ms on one GPU and
// 11 on two; the Pipeline 21 and 12 (1.0909x the copies on two); the hand
// loop 22 and 12.5. Compute-bound: the kernel alone 40 and 20.2; the
// Pipeline 41 and 21 (1.952x one GPU's throughput); the hand loop 42 and 22.
bench::devices_result two_gpus() {
  bench::devices_result d;
  d.devices = {{0, "GPU A"}, {1, "GPU B"}};
  const auto job = [](bench::workload_kind kind, unsigned rounds, variant_kind floor, double floor1,
                      double floor2, double pipe1, double pipe2, double hand1, double hand2) {
    bench::devices_workload_result w;
    w.kind = kind;
    w.rounds = rounds;
    w.bytes = 64 * MiB;
    w.elements = w.bytes / 4;
    w.rows = {{1, row(floor, floor1, 64 * MiB, 2)},
              {1, row(variant_kind::devices_pipeline, pipe1, 8 * MiB, 5)},
              {1, row(variant_kind::devices_hand_loop, hand1, 4 * MiB, 3)},
              {2, row(floor, floor2, 64 * MiB, 2)},
              {2, row(variant_kind::devices_pipeline, pipe2, 8 * MiB, 5)},
              {2, row(variant_kind::devices_hand_loop, hand2, 4 * MiB, 3)}};
    w.sweep = {{1, 4 * MiB, 3, hand1}, {2, 4 * MiB, 3, hand2}};
    return w;
  };
  d.workloads = {
      job(bench::workload_kind::transfer_bound, 1, variant_kind::devices_copies, 20, 11, 21, 12, 22, 12.5),
      job(bench::workload_kind::compute_bound, 4096, variant_kind::devices_kernel, 40, 20.2, 41, 21, 42, 22)};
  return d;
}

const Verdict& named(const Judgement& j, const std::string& name) {
  const auto found = std::ranges::find_if(j.verdicts, [&name](const Verdict& v) { return v.name == name; });
  if (found == j.verdicts.end()) throw std::runtime_error("no verdict " + name);
  return *found;
}

TEST(BenchDevices, ParsesAllACountOrOrdinalsAndNamesTheFlagOnBadInput) {
  EXPECT_EQ(parse_device_set("all", 4), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(parse_device_set("2", 4), (std::vector<int>{0, 1}));
  EXPECT_EQ(parse_device_set("3,1", 4), (std::vector<int>{3, 1}));
  const auto message = [](const std::string& text, int visible) {
    try {
      (void)parse_device_set(text, visible);
    } catch (const invalid_input& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("5", 2), "--devices: 5 GPUs asked, 2 (2 visible: 0 to 1)");
  EXPECT_EQ(message("0", 2), "--devices: 0 GPUs asked, 2 (2 visible: 0 to 1)");
  EXPECT_EQ(message("0,2", 2), "--devices: 2 is not a GPU here (2 visible: 0 to 1)");
  EXPECT_EQ(message("1,1", 2), "--devices: GPU 1 is listed twice");
  EXPECT_EQ(message("two", 2),
            "--devices: 'two' is not a GPU count (expected all, a count, or GPU ordinals like 0,1)");
  EXPECT_EQ(message("0,", 2),
            "--devices: '' is not a GPU ordinal (expected all, a count, or GPU ordinals like 0,1)");
  EXPECT_EQ(message("all", 0), "--devices: no CUDA device");
}

TEST(BenchDevices, TextHasARowPerGpuCountWithItsRatiosAndASummaryLine) {
  const std::string text = devices_text(two_gpus());
  EXPECT_NE(text.find("several GPUs: [0] GPU A [1] GPU B"), std::string::npos) << text;
  EXPECT_NE(text.find("transfer-bound over 1 to 2 GPUs: 64 MiB in (16777216 uint32), x -> a*x + b once per "
                      "element, 64 MiB out"),
            std::string::npos)
      << text;
  // Two GPUs' Pipeline: 12 ms, 2 x 64 MiB / 12 ms = 11.2 GB/s, 12 / 11 = 1.091x the copies, 21 / 12 = 1.75x.
  EXPECT_NE(text.find("     2  devices_pipeline                            8 MiB       5      1     12.000   "
                      "11.880..12.240       11.2   1.091   1.750"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("on 2 GPUs: default Pipeline 1.091x the copies floor, 0.960x the best hand-written loop's "
                "time; 1.75x the throughput of one GPU's Pipeline"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("compute-bound over 1 to 2 GPUs: 64 MiB in (16777216 uint32), x -> a*x + b 4096 times"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("on 2 GPUs: default Pipeline 1.040x the kernel-alone floor"), std::string::npos)
      << text;
}

TEST(BenchDevices, JsonHasEveryRowWithItsGpusRatiosAndTheSweep) {
  const nlohmann::ordered_json j = devices_json(two_gpus());
  ASSERT_EQ(j["gpus"].size(), 2U);
  EXPECT_EQ(j["gpus"][1]["name"], "GPU B");
  const auto& transfer = j["workloads"][0];
  EXPECT_EQ(transfer["name"], "transfer-bound");
  EXPECT_EQ(transfer["floor"], "devices_copies");
  ASSERT_EQ(transfer["rows"].size(), 6U);
  const auto& pipeline2 = transfer["rows"][4];
  EXPECT_EQ(pipeline2["gpus"], 2);
  EXPECT_EQ(pipeline2["kind"], "devices_pipeline");
  EXPECT_DOUBLE_EQ(pipeline2["median_ms"].get<double>(), 12.0);
  EXPECT_DOUBLE_EQ(pipeline2["ratio_to_floor"].get<double>(), 12.0 / 11.0);
  EXPECT_DOUBLE_EQ(pipeline2["throughput_vs_one_gpu"].get<double>(), 21.0 / 12.0);
  EXPECT_TRUE(pipeline2["verified"].get<bool>());
  EXPECT_EQ(transfer["hand_sweep"].size(), 2U);
  EXPECT_EQ(j["workloads"][1]["rounds"], 4096);
}

TEST(BenchDevices, TwoGpusAreJudgedAgainstTheirCopiesTheHandLoopAndOneGpusThroughput) {
  bench::bench_result r;
  r.devices = two_gpus();
  const Judgement j = judge(r, false);
  ASSERT_EQ(j.verdicts.size(), 3U);
  const Verdict& copies = named(j, "devices_transfer_2gpu_vs_copies");
  EXPECT_DOUBLE_EQ(copies.value, 12.0 / 11.0);
  EXPECT_TRUE(copies.pass);  // 1.091x <= 1.10
  const Verdict& hand = named(j, "devices_transfer_2gpu_vs_hand_loop");
  EXPECT_DOUBLE_EQ(hand.value, 12.0 / 12.5);
  EXPECT_DOUBLE_EQ(hand.limit, 1.0 + (0.03 * 12.5 / 12.5) / 2.0);  // the hand row spread 0.99x..1.02x
  EXPECT_TRUE(hand.pass);
  const Verdict& gain = named(j, "devices_compute_2gpu_throughput");
  EXPECT_DOUBLE_EQ(gain.value, 41.0 / 21.0);
  EXPECT_DOUBLE_EQ(gain.limit, 1.9);
  EXPECT_TRUE(gain.pass);  // 1.952x
  EXPECT_EQ(gain.text, "compute-bound default Pipeline on 2 GPUs at least 1.90x one GPU's throughput");
}

TEST(BenchDevices, APipelinePlannedOnTheModelIsShownAndJudgedBesideTheDefault) {
  bench::devices_result d = two_gpus();
  auto& rows = d.workloads[0].rows;
  rows.insert(rows.begin() + 5, {2, row(variant_kind::devices_pipeline_planned, 12.25, 16 * MiB, 2)});
  rows.insert(rows.begin() + 2, {1, row(variant_kind::devices_pipeline_planned, 21.5, 16 * MiB, 2)});
  EXPECT_NE(
      devices_text(d).find("1.75x the throughput of one GPU's Pipeline; planned on the model 0.980x the "
                           "hand-written loop's time"),
      std::string::npos)
      << devices_text(d);
  bench::bench_result r;
  r.devices = d;
  const Judgement j = judge(r, false);
  ASSERT_EQ(j.verdicts.size(), 4U);
  const Verdict& planned = named(j, "devices_transfer_2gpu_planned_vs_hand_loop");
  EXPECT_DOUBLE_EQ(planned.value, 12.25 / 12.5);
  EXPECT_TRUE(planned.pass);
  EXPECT_EQ(devices_json(d)["workloads"][0]["rows"][2]["kind"], "devices_pipeline_planned");
}

TEST(BenchDevices, OneGpuIsMeasuredButNotJudged) {
  bench::devices_result d = two_gpus();
  for (auto& w : d.workloads) std::erase_if(w.rows, [](const bench::devices_row& r) { return r.gpus > 1; });
  bench::bench_result r;
  r.devices = d;
  EXPECT_TRUE(judge(r, false).verdicts.empty());
  EXPECT_EQ(devices_text(d).find("on 2 GPUs"), std::string::npos);
}

}  // namespace
}  // namespace overlap::cli
