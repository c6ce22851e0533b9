// `overlap trace` and `overlap audit`, run in-process: reading recorded
// traces back (--from), and starting apps that make no CUDA call, exit with
// a code, or do not exist (no GPU needed for any of these).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "overlap/io/spec.hpp"
#include "trace_builder.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using overlap::test::TraceBuilder;

using Result = overlap::test::CliResult;

Result run(const std::vector<std::string>& args) {
  return overlap::test::run_cli(args);
}

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

class TraceCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("overlap-trace-cli-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // Two kernels on two streams touching one allocation, with no event.
  std::string racy_trace() const {
    TraceBuilder t;
    t.stream(13, "non_blocking").stream(14, "non_blocking");
    t.call("cudaMalloc", "alloc", 0, 10, {{"ptr", 4096}, {"bytes", 4096}, {"memory", "device"}});
    t.call("cudaLaunchKernel", "launch", 20, 25,
           {{"stream", 13}, {"kernel", "_Z7kernel1Pf"}, {"ptrs", {4096}}});
    t.work("kernel", 30, 530, {{"stream", 13}});
    t.call("cudaLaunchKernel", "launch", 30, 35,
           {{"stream", 14}, {"kernel", "_Z7kernel2Pf"}, {"ptrs", {4096}}});
    t.work("kernel", 40, 540, {{"stream", 14}});
    t.call("cudaDeviceSynchronize", "device_sync", 40, 600);
    std::string file = path("racy.jsonl");
    std::ofstream(file) << t.footer().text();
    return file;
  }

  fs::path dir_;
};

// The kernels' accesses are inferred from their pointers: a possible race,
// a warning (errors are for races proven on both accesses' bytes).
TEST_F(TraceCli, AuditFromARecordedTraceFindsTheRace) {
  const Result r = run({"audit", "--from", racy_trace()});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(contains(r.out, "warning race: ops[2] kernel 'kernel1' on stream 13")) << r.out;
  EXPECT_TRUE(contains(r.out, "[possible]")) << r.out;
  EXPECT_TRUE(contains(r.out, "verdict: ")) << r.out;
  EXPECT_EQ(run({"audit", "--from", racy_trace(), "--fail-on", "error"}).code, 0);
  const Result j = run({"audit", "--from", racy_trace(), "--json"});
  EXPECT_EQ(j.code, 1);
  const json report = json::parse(j.out);
  EXPECT_EQ(report.at("findings").at(0).at("rule"), "race");
  EXPECT_EQ(report.at("findings").at(0).at("ops").at(1).at("label"), "kernel2");
}

// A raw trace kept by `--accesses measured` holds each launch's measured
// bytes (`accesses` records): read back, the race is certain, an error, and
// the report says how the accesses were known.
TEST_F(TraceCli, AuditFromAMeasuredTraceProvesTheRace) {
  const std::string file = racy_trace();
  std::ofstream(file, std::ios::app) << R"({"t":"accesses","corr":2,"reads":[],"writes":[4096,1024]})"
                                     << "\n"
                                     << R"({"t":"accesses","corr":3,"reads":[4608,512],"writes":[]})"
                                     << "\n";
  const Result r = run({"audit", "--from", file});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(contains(r.out, "error race: ops[2] kernel 'kernel1' on stream 13 writes device#1[512:1024]"))
      << r.out;
  EXPECT_FALSE(contains(r.out, "[possible]")) << r.out;
  EXPECT_TRUE(contains(r.out, "kernel accesses: measured for 2 of 2 launches")) << r.out;
  const json report = json::parse(run({"audit", "--from", file, "--json"}).out);
  EXPECT_EQ(report.at("kernel_accesses").at("mode"), "measured");
  EXPECT_EQ(report.at("kernel_accesses").at("measured"), 2);
  EXPECT_TRUE(report.at("kernel_accesses").at("measuring_run_s").is_null());
  // Measuring needs the app: a trace read back cannot be measured again.
  const Result refused = run({"audit", "--from", file, "--accesses", "measured"});
  EXPECT_EQ(refused.code, 2);
  EXPECT_TRUE(contains(refused.err, "--accesses measured runs the app")) << refused.err;
  EXPECT_EQ(run({"trace", "--from", file, "--accesses", "measured"}).code, 2);
}

TEST_F(TraceCli, TraceFromARecordedTraceWritesEveryFormatAndTheProgram) {
  const std::string trace = racy_trace();
  const Result r =
      run({"trace", "--from", trace, "--format", "json", "-o", path("t.json"), "--program", path("p.yaml")});
  ASSERT_EQ(r.code, 0) << r.err;
  const json timeline = json::parse(std::ifstream(path("t.json")));
  EXPECT_EQ(timeline.at("spans").size(), 2U);
  EXPECT_EQ(timeline.at("device"), "Test GPU");
  // The captured program reads back as a spec, with its accesses: check finds the race there too.
  const overlap::io::Spec spec = overlap::io::load_spec(path("p.yaml"));
  // cudaMalloc (host work of its own), host work, two kernels, host work, the sync.
  EXPECT_EQ(spec.program.ops().size(), 6U);
  const Result check = run({"check", path("p.yaml")});
  EXPECT_EQ(check.code, 1);
  EXPECT_TRUE(contains(check.out, "race")) << check.out;
  for (const char* format : {"summary", "ascii", "mermaid", "chrome"}) {
    const Result f = run({"trace", "--from", trace, "--format", format});
    EXPECT_EQ(f.code, 0) << format << ": " << f.err;
    EXPECT_FALSE(f.out.empty()) << format;
  }
}

TEST_F(TraceCli, BadInputIsExitTwoWithOneLine) {
  const Result no_app = run({"trace"});
  EXPECT_EQ(no_app.code, 2);
  EXPECT_TRUE(contains(no_app.err, "no app given")) << no_app.err;
  const Result format = run({"trace", "--format", "pdf", "--", "true"});
  EXPECT_EQ(format.code, 2);
  EXPECT_TRUE(contains(format.err, "--format: unknown format 'pdf'")) << format.err;
  const Result fail_on = run({"audit", "--fail-on", "never", "--", "true"});
  EXPECT_EQ(fail_on.code, 2);
  const Result device = run({"audit", "--device", "no-such-gpu", "--", "true"});
  EXPECT_EQ(device.code, 2);
  std::ofstream(path("garbage.jsonl")) << "this is not a trace\n{}\n";
  const Result garbage = run({"audit", "--from", path("garbage.jsonl")});
  EXPECT_EQ(garbage.code, 2);
  EXPECT_TRUE(contains(garbage.err, "garbage.jsonl:1:")) << garbage.err;
  EXPECT_EQ(garbage.err.find('\n'), garbage.err.size() - 1) << garbage.err;
}

#ifdef OVERLAP_INJECT_LIBRARY
std::string read_file(const std::string& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class TraceCliApps : public TraceCli {
 protected:
  void SetUp() override {
    TraceCli::SetUp();
    ::setenv("OVERLAP_INJECT_LIB", OVERLAP_INJECT_LIBRARY, 1);
  }
  void TearDown() override {
    ::unsetenv("OVERLAP_INJECT_LIB");
    TraceCli::TearDown();
  }
};

TEST_F(TraceCliApps, AnAppThatDoesNotExistIsExitTwo) {
  for (const char* command : {"trace", "audit"}) {
    const Result r = run({command, "--", "/no/such/app", "--flag"});
    EXPECT_EQ(r.code, 2) << command;
    EXPECT_TRUE(contains(r.err, "cannot run '/no/such/app'")) << r.err;
  }
}

TEST_F(TraceCliApps, AnAppWithoutCudaHasNoCudaActivityAndKeepsItsExitCode) {
  const Result t = run({"trace", "--", "sh", "-c", "exit 7"});
  EXPECT_EQ(t.code, 7);
  EXPECT_TRUE(contains(t.err, "no CUDA activity")) << t.err;
  const Result ok = run({"trace", "--", "true"});
  EXPECT_EQ(ok.code, 0);
  const Result a = run({"audit", "--", "true"});
  EXPECT_EQ(a.code, 0);
  EXPECT_TRUE(contains(a.err, "no CUDA activity")) << a.err;
}

TEST_F(TraceCliApps, ATraceWrittenInPiecesWhileTheAppRunsIsReadWhole) {
  // The "app" writes a recorded trace where the tracer would, in three
  // pieces cut mid-line with pauses between them, as a real run's file
  // grows: the audit read while it ran must equal the audit of the file.
  const std::string fixture =
      std::string(OVERLAP_SOURCE_DIR) + "/tests/fixtures/traces/corpus/simpleHyperQ.static.jsonl";
  const std::string script = "f=\"$OVERLAP_TRACE_DIR/trace.$$.jsonl\"; head -c 1000 '" + fixture +
                             "' > \"$f\"; sleep 0.1; " + "tail -c +1001 '" + fixture +
                             "' | head -c 20000 >> \"$f\"; sleep 0.1; tail -c +21001 '" + fixture +
                             "' >> \"$f\"";
  const Result live = run({"audit", "--json", "--", "sh", "-c", script});
  const Result from = run({"audit", "--json", "--from", fixture});
  ASSERT_EQ(live.code, from.code) << live.err;
  json a = json::parse(live.out);
  json b = json::parse(from.out);
  for (json* r : {&a, &b}) r->erase("command");
  EXPECT_EQ(a.dump(), b.dump());
  EXPECT_GT(a["trace"]["calls"].get<int>(), 100);
}

TEST_F(TraceCliApps, AnAppThatGoesOnAfterItsTraceIsWholeIsWaitedFor) {
  // The footer comes in the app's exit handlers; the process may take a
  // while longer to end (CUDA's teardown). The audit starts on the whole
  // trace at once, and its report still has the app's exit code.
  const std::string fixture =
      std::string(OVERLAP_SOURCE_DIR) + "/tests/fixtures/traces/corpus/simpleHyperQ.static.jsonl";
  const std::string script = "cp '" + fixture + "' \"$OVERLAP_TRACE_DIR/trace.$$.jsonl\"; sleep 0.3; exit 3";
  const Result r =
      run({"audit", "--json", "--timings", "--raw", path("kept.jsonl"), "--", "sh", "-c", script});
  ASSERT_FALSE(r.out.empty()) << r.err;
  const json report = json::parse(r.out);
  EXPECT_EQ(report["exit_code"], 3);
  EXPECT_TRUE(contains(r.err, "until its trace was whole")) << r.err;
  EXPECT_EQ(fs::file_size(path("kept.jsonl")), fs::file_size(fixture));
}

// `--migrations off` reaches the tracer in the app's environment; by
// default the app's environment decides (the tracer's default is on).
TEST_F(TraceCliApps, MigrationsOffIsPassedToTheTracedApp) {
  const std::string seen = path("migrations.txt");
  const std::string script = "printf '%s' \"${OVERLAP_TRACE_MIGRATIONS-unset}\" > '" + seen + "'";
  for (const std::string verb : {"audit", "trace"}) {
    EXPECT_EQ(run({verb, "--migrations", "off", "--", "sh", "-c", script}).code, 0);
    EXPECT_EQ(read_file(seen), "0") << verb;
    EXPECT_EQ(run({verb, "--", "sh", "-c", script}).code, 0);
    EXPECT_EQ(read_file(seen), "unset") << verb;
  }
  const Result bad = run({"audit", "--migrations", "sometimes", "--", "true"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_TRUE(contains(bad.err, "--migrations")) << bad.err;
  // A trace read back keeps what was recorded: turning migrations off there is refused.
  const std::string fixture =
      std::string(OVERLAP_SOURCE_DIR) + "/tests/fixtures/traces/corpus/simpleHyperQ.static.jsonl";
  const Result refused = run({"trace", "--migrations", "off", "--from", fixture});
  EXPECT_EQ(refused.code, 2);
  EXPECT_TRUE(contains(refused.err, "--migrations off applies to a run of the app")) << refused.err;
}

TEST_F(TraceCliApps, AnAppEndedByASignalIsReportedAs128PlusIt) {
  const Result t = run({"trace", "--", "sh", "-c", "kill -TERM $$"});
  EXPECT_EQ(t.code, 128 + 15);
  EXPECT_TRUE(contains(t.err, "no CUDA activity")) << t.err;
}
#endif

}  // namespace
