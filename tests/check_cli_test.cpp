// `overlap check`, run in-process: findings in words and in JSON, exit codes
// against --fail-on, and bad input as exit 2 with one line naming the field.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.hpp"

namespace {

namespace fs = std::filesystem;

using Result = overlap::test::CliResult;

Result run(const std::vector<std::string>& args) {
  return overlap::test::run_cli(args);
}

std::string example(const std::string& name) {
  return std::string(OVERLAP_SOURCE_DIR) + "/examples/check/" + name;
}

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

class TempDir {
 public:
  TempDir()
      : path_(fs::temp_directory_path() / ("overlap-check-cli-" + std::to_string(::getpid()) + "-" +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name) << text;
    return (path_ / name).string();
  }
  fs::path path() const { return path_; }

 private:
  fs::path path_;
};

TEST(CheckCli, RaceIsPrintedWithItsOpsStreamsAndFix) {
  const Result r = run({"check", example("numba-dependency-racy.yaml")});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_TRUE(
      contains(r.out,
               "error race: ops[0] kernel 'kernel1' on stream1 writes y and ops[1] kernel 'kernel2' on "
               "stream2 reads y, and nothing orders them\n"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "ops[1] kernel 'kernel2' on stream2\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "streams:   stream1, stream2\n")) << r.out;
  EXPECT_TRUE(contains(r.out,
                       "fix:       add cudaEventRecord after ops[0] on stream1 and "
                       "cudaStreamWaitEvent(stream2) before ops[1]\n"))
      << r.out;
  EXPECT_TRUE(contains(r.out,
                       "numba-dependency-racy: 1 error, 0 warnings, 0 info in 3 ops checked on unit; FAIL at "
                       "fail-on warning\n"))
      << r.out;
}

TEST(CheckCli, CleanProgramExitsZero) {
  const Result r = run({"check", example("numba-dependency-fixed.yaml")});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            "numba-dependency-fixed: 0 errors, 0 warnings, 0 info in 5 ops checked on unit; pass at fail-on "
            "warning\n");
}

TEST(CheckCli, TrapShowsTimeLostInTheProgramsUnit) {
  const Result r = run({"check", example("cuda-default-stream-trap.yaml")});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(contains(r.out, "warning legacy-default-stream: ops[2] copy 'H2D' on default")) << r.out;
  EXPECT_TRUE(contains(r.out, "time lost: 20 ms (predicted on unit)\n")) << r.out;
}

TEST(CheckCli, FailOnSetsTheThreshold) {
  // A trap is a warning: it fails at warning and info, passes at error.
  EXPECT_EQ(run({"check", example("cuda-default-stream-trap.yaml"), "--fail-on", "error"}).code, 0);
  EXPECT_EQ(run({"check", example("cuda-default-stream-trap.yaml"), "--fail-on", "warning"}).code, 1);
  EXPECT_EQ(run({"check", example("cuda-default-stream-trap.yaml"), "--fail-on", "info"}).code, 1);
  EXPECT_EQ(run({"check", example("numba-dependency-racy.yaml"), "--fail-on", "error"}).code, 1);
}

TEST(CheckCli, DeviceFlagPricesTrapsOnAnotherModel) {
  const Result r = run({"check", example("cuda-default-stream-trap.yaml"), "--device", "h100", "--json"});
  ASSERT_EQ(r.code, 1) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report.at("device"), "h100");
  EXPECT_GT(report.at("findings").at(0).at("time_lost").get<double>(), 20.0);  // plus the H100's call costs
}

TEST(CheckCli, JsonCarriesEveryField) {
  const Result r = run({"check", example("pytorch-data-loading-racy.yaml"), "--json"});
  ASSERT_EQ(r.code, 1) << r.err;
  const auto report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report.at("program"), "pytorch-data-loading-racy");
  EXPECT_EQ(report.at("time_unit"), "ms");
  EXPECT_EQ(report.at("ops"), 7);
  EXPECT_EQ(report.at("fail_on"), "warning");
  EXPECT_EQ(report.at("failed"), true);
  // The two batches' races are one bug repeated by the loop: one finding counting both.
  EXPECT_EQ(report.at("summary").at("error"), 1);
  EXPECT_EQ(report.at("races"), 2);
  const auto& f = report.at("findings").at(0);
  EXPECT_EQ(f.at("severity"), "error");
  EXPECT_EQ(f.at("certainty"), "certain");
  EXPECT_EQ(f.at("rule"), "race");
  EXPECT_EQ(f.at("count"), 2);
  ASSERT_EQ(f.at("instances").size(), 2u);
  EXPECT_EQ(f.at("instances").at(1).at("race").at("buffer"), "d_batch1");
  EXPECT_EQ(f.at("instances").at(1).at("ops").at(0).at("id"), 4);
  EXPECT_EQ(f.at("ops").at(0).at("id"), 1);
  EXPECT_EQ(f.at("ops").at(0).at("stream"), "data_load_stream");
  EXPECT_EQ(f.at("ops").at(1).at("label"), "forward");
  EXPECT_EQ(f.at("race").at("buffer"), "d_batch0");
  EXPECT_EQ(f.at("race").at("first_access"), "write");
  EXPECT_TRUE(f.at("race").at("end").is_null());
  EXPECT_TRUE(f.at("time_lost").is_null());
  EXPECT_EQ(
      f.at("fix"),
      "Order each kernel 'forward' after the copy 'data.to(device)' it races with, as for the first: add "
      "cudaEventRecord after ops[1] on data_load_stream and cudaStreamWaitEvent(default) before ops[2].");
}

TEST(CheckCli, OutputFileGetsTheReport) {
  const TempDir dir;
  const std::string target = (dir.path() / "findings.json").string();
  const Result r = run({"check", example("pytorch-branches-racy.yaml"), "--json", "-o", target});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(r.out.empty());
  std::ifstream in(target);
  EXPECT_EQ(nlohmann::json::parse(in).at("findings").size(), 1u);
}

void expect_bad_input(const Result& r, const std::string& needle) {
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(r.err.starts_with("overlap: error: ")) << r.err;
  EXPECT_TRUE(contains(r.err, needle)) << r.err;
}

TEST(CheckCli, BadInputExitsTwoNamingTheField) {
  const TempDir dir;
  const std::string racy = example("numba-dependency-racy.yaml");
  expect_bad_input(run({"check", racy, "--fail-on", "sometimes"}),
                   "--fail-on: 'sometimes' is not a severity");
  expect_bad_input(run({"check", racy, "--device", "nosuchgpu"}), "nosuchgpu");
  expect_bad_input(run({"check"}), "spec");
  expect_bad_input(run({"check", "/no/such/spec.yaml"}), "spec");
  expect_bad_input(run({"check", racy, "--frobnicate"}), "--frobnicate");
  expect_bad_input(run({"check", racy, "-o", "/no/such/dir/out.txt"}), "--output");
  // Spec errors name the file, line and field.
  expect_bad_input(run({"check", dir.write("bad-access.yaml",
                                           "streams: [s1]\nops:\n  - {op: kernel, stream: s1, time: 1, "
                                           "writes: ['y[8:4]']}\n")}),
                   "ops[0].writes[0]");
  expect_bad_input(
      run({"check", dir.write("undeclared.yaml",
                              "streams: [s1]\nbuffers: {x: 16}\nops:\n  - {op: kernel, stream: s1, "
                              "time: 1, reads: [y]}\n")}),
      "'y' is not a declared buffer");
  expect_bad_input(
      run({"check", dir.write("no-time.yaml", "streams: [s1]\nops:\n  - {op: kernel, stream: s1}\n")}),
      "time");
}

TEST(CheckCli, HelpTeachesWithExamples) {
  const Result r = run({"check", "--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_TRUE(contains(r.out, "Examples:"));
  EXPECT_TRUE(contains(r.out, "overlap check examples/check/numba-dependency-racy.yaml"));
  EXPECT_TRUE(contains(r.out, "--fail-on"));
  EXPECT_TRUE(contains(r.out, "legacy-default-stream"));
}

}  // namespace
