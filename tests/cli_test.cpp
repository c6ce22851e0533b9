// The `overlap` command line, run in-process: exact output for the seeds,
// exit code 2 and one line for bad input, and whole-or-nothing output files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "overlap/version.hpp"

namespace {

namespace fs = std::filesystem;

using Result = overlap::test::CliResult;

Result run(const std::vector<std::string>& args) {
  return overlap::test::run_cli(args);
}

std::string example(const char* name) {
  return std::string(OVERLAP_SOURCE_DIR) + "/examples/" + name;
}

bool has_line(const std::string& text, const std::string& line) {
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (l == line) return true;
  }
  return false;
}

// A spec file in a fresh temporary directory, removed with it.
class TempDir {
 public:
  TempDir()
      : path_(fs::temp_directory_path() / ("overlap-cli-" + std::to_string(::getpid()) + "-" +
                                           ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name) << text;
    return (path_ / name).string();
  }
  fs::path path() const { return path_; }

 private:
  fs::path path_;
};

TEST(Cli, Seed004AsciiPrintsTheExercisesLines) {
  for (const char* file : {"seed004.yaml", "seed004.json"}) {
    const Result r = run({"simulate", example(file), "--format", "ascii"});
    ASSERT_EQ(r.code, 0) << r.err;
    for (const char* line :
         {"[H2D: A] -> [Kernel A] -> [D2H: A] -> [H2D: B] -> [Kernel B] -> [D2H: B]", "Total time: 6 units",
          "t=0: Stream1: H2D:A", "t=1: Stream1: Kernel:A | Stream2: H2D:B",
          "t=2: Stream1: D2H:A | Stream2: Kernel:B", "t=3: Stream2: D2H:B", "Total time: 4 units",
          "Speedup: 1.50x"}) {
      EXPECT_TRUE(has_line(r.out, line)) << file << " lacks: " << line << "\n" << r.out;
    }
  }
}

Result seed001(const char* chunks, const char* streams) {
  return run({"simulate", "--device", "unit", "--h2d", "30", "--kernel", "20", "--d2h", "30", "--chunks",
              chunks, "--streams", streams});
}

TEST(Cli, Seed001OverlapCalculation) {
  const Result one = seed001("1", "1");
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_TRUE(has_line(one.out, "Total time:        80 ms")) << one.out;

  const Result four = seed001("4", "4");
  EXPECT_TRUE(has_line(four.out, "Total time:        42.5 ms")) << four.out;
  EXPECT_TRUE(has_line(four.out, "Speedup:           1.88x")) << four.out;

  const Result two = seed001("4", "2");
  EXPECT_TRUE(has_line(two.out, "Total time:        47.5 ms")) << two.out;
  EXPECT_TRUE(has_line(two.out, "Speedup:           1.68x")) << two.out;
  // Why not the article's 42.5: chunk 2's upload waits behind chunk 0's
  // download in the same in-order stream.
  EXPECT_NE(two.out.find("H2D:2 on Stream1 waited for D2H:0, the op before it in the same stream"),
            std::string::npos)
      << two.out;
}

TEST(Cli, ChromeTraceHasEveryOpOnce) {
  const Result r = run({"simulate", "--h2d", "3", "--kernel", "2", "--d2h", "3", "--chunks", "3", "--streams",
                        "2", "--format", "chrome"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto trace = nlohmann::json::parse(r.out);
  int stream_events = 0;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "X" && e.value("cat", "") == "stream") ++stream_events;
  }
  EXPECT_EQ(stream_events, 9);  // 3 chunks x 3 ops
}

TEST(Cli, OutputFileIsWrittenWhole) {
  const TempDir dir;
  const auto target = (dir.path() / "t.json").string();
  const Result r = run({"simulate", example("seed004.yaml"), "--json", "-o", target});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.out.empty());
  std::ifstream in(target);
  const auto timeline = nlohmann::json::parse(in);
  EXPECT_EQ(timeline.at("spans").size(), 6u);
  EXPECT_FALSE(fs::exists(target + ".partial"));
}

TEST(Cli, HtmlReportIsOneFileWithTheSummary) {
  const TempDir dir;
  const auto target = (dir.path() / "r.html").string();
  const Result r = run({"simulate", example("seed004.yaml"), "--format", "html", "-o", target});
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream in(target);
  const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(page.starts_with("<!DOCTYPE html>"));
  EXPECT_NE(page.find("<tr><th>Speedup</th><td>1.50x</td></tr>"), std::string::npos);
  EXPECT_TRUE(page.ends_with("</html>\n"));
}

TEST(Cli, CheckHtmlListsTheRaceAndOutlinesItsOps) {
  const TempDir dir;
  const auto target = (dir.path() / "check.html").string();
  const Result r =
      run({"check", example("check/numba-dependency-racy.yaml"), "--format", "html", "-o", target});
  EXPECT_EQ(r.code, 1) << r.err;  // a race: findings at or above warning
  std::ifstream in(target);
  const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(page.find(R"(<span class="level-error">error race</span>)"), std::string::npos);
  const auto data_at = page.find(R"("highlight":[[)");
  EXPECT_NE(data_at, std::string::npos);
}

void expect_bad_input(const Result& r, const std::string& needle) {
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}

TEST(Cli, HtmlReportsOfBadInputExitTwoWithOneLineAndNoFile) {
  const TempDir dir;
  const auto target = (dir.path() / "r.html").string();
  expect_bad_input(
      run({"simulate", dir.write("empty.yaml", "streams: []\nops: []\n"), "--format", "html", "-o", target}),
      "ops: an empty list");
  EXPECT_FALSE(fs::exists(target));
  const auto unwritable = (dir.path() / "missing" / "r.html").string();
  expect_bad_input(run({"simulate", example("seed004.yaml"), "--format", "html", "-o", unwritable}),
                   "--output: cannot write");
  EXPECT_FALSE(fs::exists(unwritable + ".partial"));

  // `overlap bench --report` refuses a path it could not write before it measures anything.
  const Result missing_dir = run({"bench", "--report", unwritable});
  const Result a_directory = run({"bench", "--report", dir.path().string()});
  if (missing_dir.err.find("built without CUDA") != std::string::npos) {
    expect_bad_input(missing_dir, "built without CUDA");
  } else {
    expect_bad_input(missing_dir,
                     "--report: directory '" + (dir.path() / "missing").string() + "' does not exist");
    expect_bad_input(a_directory, "is a directory, not a file");
  }
}

TEST(Cli, BenchFramesOutOfRangeIsRefusedBeforeMeasuring) {
  // A run of fewer than two frames has no overlap to measure; the option is
  // checked while parsing, with or without CUDA.
  expect_bad_input(run({"bench", "--only", "frames", "--frames", "1"}), "--frames");
  expect_bad_input(run({"bench", "--frames", "100001"}), "--frames");
}

TEST(Cli, BadSpecsExitWithCodeTwoAndOneLine) {
  const TempDir dir;
  const std::string pipeline =
      "pipeline:\n  chunks: 2\n  streams: 2\n  stage_time: {h2d: 1, kernel: 1, d2h: 1}\n";
  expect_bad_input(run({"simulate", dir.write("unknown.yaml", pipeline + "  strems: 3\n")}), "strems");
  expect_bad_input(
      run({"simulate",
           dir.write("zero-streams.yaml", "pipeline:\n  chunks: 2\n  streams: 0\n  stage_time: {h2d: 1}\n")}),
      "streams");
  expect_bad_input(
      run({"simulate",
           dir.write("zero-chunks.yaml", "pipeline:\n  chunks: 0\n  streams: 1\n  stage_time: {h2d: 1}\n")}),
      "chunks");
  expect_bad_input(
      run({"simulate",
           dir.write("negative.yaml",
                     "streams:\n  - {name: s1}\nops:\n  - {op: kernel, stream: s1, time: -3}\n")}),
      "time");
  expect_bad_input(
      run({"simulate", dir.write("no-stream.yaml",
                                 "streams:\n  - {name: s1}\nops:\n  - {op: kernel, stream: s9, time: 3}\n")}),
      "s9");
}

TEST(Cli, BadFlagsExitWithCodeTwoAndOneLine) {
  expect_bad_input(run({"simulate", "--h2d", "1", "--chunks", "0"}), "--chunks");
  expect_bad_input(run({"simulate", "--h2d", "1", "--streams", "0"}), "--streams");
  expect_bad_input(run({"simulate", "--h2d", "-5"}), "--h2d");
  expect_bad_input(run({"simulate", "--h2d", "1", "--device", "nosuchgpu"}), "nosuchgpu");
  expect_bad_input(run({"simulate", "--h2d", "1", "--format", "png"}), "png");
  expect_bad_input(run({"simulate"}), "spec file");
  expect_bad_input(run({"simulate", example("seed004.yaml"), "--chunks", "3"}), "--chunks");
  expect_bad_input(run({"simulate", "/no/such/spec.yaml"}), "spec");
  expect_bad_input(run({"frobnicate"}), "frobnicate");
  expect_bad_input(run({"check", example("seed004.yaml"), "--format", "pdf"}), "--format");
}

TEST(Cli, UnwritableOutputLeavesNothingBehind) {
  const Result r = run({"simulate", example("seed004.yaml"), "-o", "/no/such/dir/out.txt"});
  expect_bad_input(r, "--output");
  EXPECT_FALSE(fs::exists("/no/such/dir/out.txt.partial"));
}

TEST(Cli, HelpTeachesWithExamples) {
  const Result r = run({"simulate", "--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("Examples:"), std::string::npos);
  EXPECT_NE(r.out.find("--streams"), std::string::npos);
}

TEST(Cli, VersionNamesTheReleaseAndTheCudaItWasBuiltWith) {
  const Result r = run({"--version"});
  EXPECT_EQ(r.code, 0);
  EXPECT_TRUE(r.err.empty()) << r.err;
  // "overlap 0.1.0" or "overlap 0.1.0 (git <describe>)", from overlap/version.hpp.
  const std::string first = r.out.substr(0, r.out.find('\n'));
  const std::string expected = std::string("overlap ") + overlap::version_string;
  EXPECT_EQ(first.substr(0, expected.size()), expected) << r.out;
  if (*overlap::git_revision != '\0') {
    EXPECT_EQ(first, expected + " (git " + overlap::git_revision + ")");
  }
  // Then what CUDA it was built with (or without), and the GPU it finds or not.
  EXPECT_NE(r.out.find("CUDA"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.back(), '\n');
}

TEST(Cli, DeviceModelRoundTripsThroughAFile) {
  const TempDir dir;
  const auto file = (dir.path() / "fermi.json").string();
  ASSERT_EQ(run({"device", "fermi-2ce", "-o", file}).code, 0);
  const Result from_file = run({"simulate", "--h2d", "4", "--kernel", "4", "--d2h", "4", "--chunks", "4",
                                "--streams", "4", "--issue", "breadth", "--device", file});
  const Result from_preset = run({"simulate", "--h2d", "4", "--kernel", "4", "--d2h", "4", "--chunks", "4",
                                  "--streams", "4", "--issue", "breadth", "--device", "fermi-2ce"});
  ASSERT_EQ(from_file.code, 0) << from_file.err;
  EXPECT_EQ(from_file.out, from_preset.out);
}

}  // namespace
