// `overlap plan` run in-process: the text a person reads, the JSON a script
// reads, and exit code 2 with the flag named for bad input.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.hpp"

namespace {

using Result = overlap::test::CliResult;

Result run(const std::vector<std::string>& args) {
  return overlap::test::run_cli(args);
}

bool has_line(const std::string& text, const std::string& line) {
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (l == line) return true;
  }
  return false;
}

void expect_bad(const std::vector<std::string>& args, const std::string& start) {
  const Result r = run(args);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(r.err.rfind("overlap: error: " + start, 0), 0u) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
}

const std::vector<std::string> kH100TransferBound = {"plan",    "--bytes-in", "256MiB", "--bytes-out",
                                                     "256 MiB", "--kernel",   "2"};

TEST(PlanCli, TextNamesTheBestTheFloorTheBoundAndTheRunnerUp) {
  const Result r = run(kH100TransferBound);
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* line : {
           "Workload:   256 MiB in, 256 MiB out, kernel 2.000 ms over all the data, pinned host memory",
           "Device:     h100",
           "Best:       32 chunks of 8 MiB on 3 streams, depth-first issue, a ring of 3 slots (48 MiB)",
           "Predicted:  5.719 ms",
           "Floor:      5.257 ms (copies in both directions): the best is 1.09x the floor",
           "Bound:      D2H copy engine",
           "Runner-up:  32 chunks of 8 MiB on 4 streams, depth-first issue, a ring of 4 slots (64 MiB)",
           "            5.716 ms, a tie: the best wins on fewer streams; bound: D2H copy engine",
       }) {
    EXPECT_TRUE(has_line(r.out, line)) << "lacks: " << line << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("Why:        downloads bound the run: the D2H copy engine is busy"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Searched 856 configurations: "), std::string::npos) << r.out;
}

TEST(PlanCli, JsonCarriesTheSameAnswer) {
  std::vector<std::string> args = kH100TransferBound;
  args.emplace_back("--json");
  const Result r = run(args);
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["device"], "h100");
  EXPECT_EQ(j["workload"]["bytes_in"], 256u << 20);
  EXPECT_EQ(j["best"]["chunks"], 32);
  EXPECT_EQ(j["best"]["streams"], 3);
  EXPECT_EQ(j["best"]["issue"], "depth_first");
  EXPECT_EQ(j["best"]["chunk_schedule"].size(), 32u);
  EXPECT_EQ(j["best"]["bound"], "D2H copy engine");
  EXPECT_NEAR(j["best"]["predicted_ms"].get<double>(), 5.7192, 1e-4);
  EXPECT_NEAR(j["floor"]["total_ms"].get<double>(), 5.2572, 1e-4);
  EXPECT_EQ(j["runner_up"]["streams"], 4);
  EXPECT_EQ(j["search"]["considered"], 856);
  EXPECT_EQ(j["candidates"].size(), 5u);
}

TEST(PlanCli, KernelRateCurveBudgetAndDevice) {
  Result r =
      run({"plan", "--bytes-in", "1GiB", "--bytes-out", "1GiB", "--kernel-rate", "100", "--budget", "64MiB"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has_line(r.out,
                       "Best:       128 chunks of 8 MiB on 3 streams, depth-first issue, a ring of 3 slots "
                       "(48 MiB)"))
      << r.out;
  EXPECT_NE(r.out.find("more left out by the budget"), std::string::npos) << r.out;
  r = run({"plan", "--bytes-in", "256MiB", "--bytes-out", "64MiB", "--kernel-cost",
           R"({"fixed_ms": 0.004, "ms_per_mib": 0.0009, "wave_bytes": 4194304})", "--device", "hyperq",
           "--uniform-only", "--max-streams", "4"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has_line(r.out, "Device:     hyperq")) << r.out;
  EXPECT_NE(r.out.find("kernel 0.004 ms + 0.0009 ms/MiB per chunk, in waves of 4 MiB"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("ramp"), std::string::npos) << r.out;
}

TEST(PlanCli, BadInputNamesTheFlag) {
  expect_bad({"plan", "--bytes-in", "lots", "--bytes-out", "1MiB", "--kernel", "1"},
             "--bytes-in: 'lots' is not a byte count");
  expect_bad({"plan", "--bytes-in", "0", "--bytes-out", "1MiB", "--kernel", "1"},
             "--bytes-in: 0 is out of range");
  expect_bad({"plan", "--bytes-in", "1MiB", "--bytes-out", "1MiB"}, "--kernel: required");
  expect_bad({"plan", "--bytes-in", "1MiB", "--bytes-out", "1MiB", "--kernel", "1", "--kernel-rate", "5"},
             "--kernel-rate: cannot be combined with --kernel");
  expect_bad({"plan", "--bytes-in", "1MiB", "--bytes-out", "1MiB", "--kernel", "soon"},
             "--kernel: 'soon' is not a time");
  expect_bad({"plan", "--bytes-in", "1MiB", "--bytes-out", "1MiB", "--kernel-rate", "0"},
             "--kernel-rate: '0' is not a rate");
  expect_bad({"plan", "--bytes-in", "1MiB", "--bytes-out", "1MiB", "--kernel-cost",
              R"({"fixed_ms": -1, "ms_per_mib": 1})"},
             "--kernel-cost.fixed_ms:");
  expect_bad({"plan", "--bytes-in", "1MiB", "--bytes-out", "1MiB", "--kernel-cost", "/nonexistent/k.json"},
             "--kernel-cost: cannot read");
  expect_bad({"plan", "--bytes-in", "1GiB", "--bytes-out", "1GiB", "--kernel", "1", "--budget", "1MiB"},
             "--budget: 1 MiB cannot hold");
  expect_bad({"plan", "--bytes-in", "1MiB", "--bytes-out", "1MiB", "--kernel", "1", "--device", "nope"}, "");
  expect_bad({"plan", "--bytes-out", "1MiB", "--kernel", "1"}, "--bytes-in is required");
}

TEST(PlanCli, HelpTeachesWithExamples) {
  const Result r = run({"plan", "--help"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Examples:"), std::string::npos);
  EXPECT_NE(r.out.find("overlap plan --bytes-in 256MiB --bytes-out 256MiB --kernel 2"), std::string::npos);
  EXPECT_NE(r.out.find("--kernel-rate"), std::string::npos);
}

}  // namespace

TEST(PlanCli, DevicesSpreadTheChunksAndSayWhatBoundsTheFloor) {
  const Result text =
      run({"plan", "--bytes-in", "1GiB", "--bytes-out", "1GiB", "--kernel", "0", "--devices", "2"});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("over 2 GPUs (chunk c on GPU c mod 2)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("(a GPU's link)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("the host's shared rate unknown (no host model: probe --all-devices)"),
            std::string::npos)
      << text.out;
  const Result j =
      run({"plan", "--bytes-in", "1GiB", "--bytes-out", "1GiB", "--kernel", "0", "--devices", "2", "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  const nlohmann::json plan = nlohmann::json::parse(j.out);
  EXPECT_EQ(plan["devices"], 2);
  EXPECT_EQ(plan["floor"]["devices"], 2);
  EXPECT_GT(plan["floor"]["links_ms"].get<double>(), 0.0);
  const Result bad = run({"plan", "--bytes-in", "1GiB", "--kernel", "0", "--devices", "0"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--devices"), std::string::npos) << bad.err;
}
