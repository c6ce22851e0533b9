// The hardening limits: every size an input can give is bounded before
// anything is allocated for it, refusals are one printable line, and the
// large inputs that can be handled are handled.
#include "overlap/core/limits.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "error_line.hpp"
#include "message_of.hpp"
#include "overlap/core/device_model.hpp"
#include "overlap/core/error.hpp"
#include "overlap/core/pipeline_shape.hpp"
#include "overlap/core/program.hpp"
#include "overlap/io/exporters.hpp"
#include "overlap/io/spec.hpp"
#include "overlap/sim/simulator.hpp"

namespace overlap {
namespace {

namespace fs = std::filesystem;

using overlap::testing::message_of;

fs::path temp_file(const std::string& name, const std::string& text) {
  fs::path path = fs::temp_directory_path() / ("overlap-limits-" + std::to_string(::getpid()) + "-" + name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(Limits, ReadFileTakesAFileUpToTheLimitAndRefusesOneByteMore) {
  const fs::path path = temp_file("sized", std::string(1000, 'x'));
  EXPECT_EQ(limits::read_file(path.string(), 1000, "test file", "why").size(), 1000u);
  EXPECT_EQ(message_of([&] { (void)limits::read_file(path.string(), 999, "test file", "the reason"); }),
            path.string() + ": larger than the 999 B a test file may be (the reason)");
  fs::remove(path);
}

TEST(Limits, ReadFileStopsOnAnEndlessDeviceFile) {
  // /dev/zero has no size and no end: it must be refused after the limit, not read forever.
  EXPECT_NE(message_of([] {
              (void)limits::read_file("/dev/zero", 1 << 20, "spec file", "why");
            }).find("larger than the 1 MiB a spec file may be"),
            std::string::npos);
}

TEST(Limits, ReadFileNamesAMissingFileAndADirectory) {
  EXPECT_EQ(message_of([] {
              (void)limits::read_file("/nonexistent/x.yaml", 10, "spec file", "why");
            }).rfind("cannot read /nonexistent/x.yaml: ", 0),
            0u);
  EXPECT_NE(
      message_of([] { (void)limits::read_file("/tmp", 10, "spec file", "why"); }).find("is a directory"),
      std::string::npos);
}

TEST(Limits, DurationsPastTheLimitOrNotFiniteAreRefusedByProgram) {
  Program p;
  const stream_id s = p.add_stream("s");
  EXPECT_NO_THROW(p.kernel(s, limits::max_time));
  EXPECT_EQ(message_of([&] { p.kernel(s, 1e308); }),
            "kernel: time: 1e+308 is not a time (expected a number from 0 to 1e12)");
  EXPECT_NE(message_of([&] { p.kernel(s, std::numeric_limits<double>::infinity()); }), "(no error)");
  EXPECT_NE(message_of([&] { p.kernel(s, std::numeric_limits<double>::quiet_NaN()); }), "(no error)");
  EXPECT_EQ(p.ops().size(), 1u);  // nothing half-appended
}

TEST(Limits, ByteCountsPastOneTebibyteAreRefusedByProgram) {
  Program p;
  const stream_id s = p.add_stream("s");
  EXPECT_NO_THROW(p.copy(s, copy_direction::h2d, limits::max_bytes));
  EXPECT_NE(message_of([&] {
              p.copy(s, copy_direction::h2d, limits::max_bytes + 1);
            }).find("over the limit of 1 TiB"),
            std::string::npos);
  Op op;
  op.kind = op_kind::kernel;
  op.stream = s;
  op.duration = 1.0;
  op.accesses.push_back({"buffer", ~std::uint64_t{0}, 1, access_mode::read});
  EXPECT_NE(message_of([&] { p.append(op); }).find("access offset"), std::string::npos);
}

TEST(Limits, APipelineOfTooManyChunksIsRefusedBeforeItIsBuilt) {
  PipelineShape shape;
  shape.chunks = 100'000'000;
  shape.streams = 4;
  shape.h2d_time = shape.kernel_time = shape.d2h_time = 1.0;
  EXPECT_EQ(
      message_of([&] { (void)make_pipeline_program(shape); }),
      "chunks: 100000000 chunks make at least 300000000 ops (a timeline of about 180 GB), over the limit of "
      "2000000 ops in a program (use "
      "fewer, larger chunks: past a few thousand the timeline looks the same)");
  shape.chunks = 4;
  shape.streams = 1'000'001;
  EXPECT_NE(message_of([&] {
              (void)make_pipeline_program(shape);
            }).find("streams: 1000001 streams is over the limit"),
            std::string::npos);
}

TEST(Limits, AMillionStreamsOfWhichFourHaveWorkSimulateAsFourDo) {
  PipelineShape shape;
  shape.chunks = 4;
  shape.streams = 1'000'000;
  shape.h2d_time = shape.kernel_time = shape.d2h_time = 4.0;
  const Timeline many = sim::simulate(make_pipeline_program(shape), DeviceModel::preset("unit"));
  shape.streams = 4;
  const Timeline four = sim::simulate(make_pipeline_program(shape), DeviceModel::preset("unit"));
  EXPECT_EQ(many.streams.size(), 1'000'000u);
  EXPECT_DOUBLE_EQ(many.total(), four.total());
  EXPECT_DOUBLE_EQ(many.total(), 6.0);  // 4 chunks of 1+1+1 on 4 streams, unit device
}

TEST(Limits, StreamAndEventNamesStayUniqueWithTheirIndex) {
  Program p;
  p.add_stream("a");
  EXPECT_NE(message_of([&] { p.add_stream("a"); }).find("declared twice"), std::string::npos);
  p.add_event("e");
  EXPECT_NE(message_of([&] { p.add_event("e"); }).find("declared twice"), std::string::npos);
  EXPECT_EQ(p.find_stream("a"), stream_id{0});
  EXPECT_EQ(p.legacy_default_stream(), stream_id{1});
  EXPECT_EQ(p.legacy_default_stream(), stream_id{1});
  EXPECT_NE(message_of([&] { p.add_stream("other", stream_kind::legacy_default); }).find("already 'default'"),
            std::string::npos);
  const Program copy = p.without_ops();
  EXPECT_EQ(copy.find_event("e"), event_id{0});
  EXPECT_EQ(copy.find_stream("default"), stream_id{1});
}

TEST(Limits, SpecListsOverTheirLimitAreRefusedByCount) {
  // A flow list of a million and one names: refused by its length, before any is read.
  std::string events = "[";
  for (std::uint64_t i = 0; i <= limits::max_events; ++i) events += i == 0 ? "e" : ",e";
  const std::string text = "name: x\nevents: " + events + "]\nops:\n  - {op: device_sync}\n";
  EXPECT_NE(
      message_of([&] { (void)io::parse_spec(text, "many.yaml"); }).find("1000001 events is over the limit"),
      std::string::npos);
}

TEST(Limits, ASpecNestedTooDeepIsRefusedByName) {
  const std::string text = std::string(1000, '[') + std::string(1000, ']');
  EXPECT_NE(message_of([&] { (void)io::parse_spec(text, "deep.yaml"); }).find("nested too deep"),
            std::string::npos);
}

TEST(Limits, DeviceModelFiguresAreBoundedOnBothSides) {
  nlohmann::json model = nlohmann::json::parse(DeviceModel::preset("h100").to_json());
  model["copy_latency_ms"] = 1e300;
  EXPECT_NE(message_of([&] { (void)DeviceModel::from_json(model.dump()); }).find("copy_latency_ms"),
            std::string::npos);
}

TEST(Limits, HugeNumbersPrintInScientificNotation) {
  EXPECT_EQ(io::format_number(1.5e18), "1.5e+18");
  EXPECT_EQ(io::format_number(999999999999.5), "999999999999.5");
  EXPECT_EQ(io::format_number(1e308).size(), 6u);  // "1e+308"
}

TEST(Limits, TimelineJsonCarriesTheTotalTime) {
  PipelineShape shape;
  shape.chunks = 4;
  shape.streams = 2;
  shape.h2d_time = shape.kernel_time = shape.d2h_time = 4.0;
  const Timeline t = sim::simulate(make_pipeline_program(shape), DeviceModel::preset("unit"));
  const nlohmann::json j = nlohmann::json::parse(io::to_json(t));
  EXPECT_DOUBLE_EQ(j.at("total_time").get<double>(), t.total());
  EXPECT_DOUBLE_EQ(io::timeline_from_json(io::to_json(t)).total(), t.total());
}

TEST(ErrorLine, EscapesControlBytesAndInvalidUtf8AndKeepsValidUtf8) {
  EXPECT_EQ(cli::error_line("field 'a\nb\tc\x01'"), "field 'a\\nb\\tc\\x01'");
  EXPECT_EQ(cli::error_line("caf\xc3\xa9 \xe2\x86\x92 ok"), "caf\xc3\xa9 \xe2\x86\x92 ok");
  EXPECT_EQ(cli::error_line("bad \xff\xc3 end"), "bad \\xff\\xc3 end");
  EXPECT_EQ(cli::error_line("overlong \xc0\xaf"), "overlong \\xc0\\xaf");
  EXPECT_EQ(cli::error_line("escape \x1b[31m"), "escape \\x1b[31m");
  EXPECT_EQ(cli::error_line("trailing\n"), "trailing");
}

TEST(ErrorLine, AnUnknownCommandWithHelpIsAnError) {
  const test::CliResult r = test::run_cli({"frobnicate", "--help"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(r.err.rfind("overlap: error: unknown command 'frobnicate'", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
  EXPECT_EQ(test::run_cli({"--help"}).code, 0);
  EXPECT_EQ(test::run_cli({"simulate", "--help"}).code, 0);
}

TEST(ErrorLine, ANumberPastADoubleInAKernelCostIsBadInput) {
  // Found by the fuzzers' sibling: nlohmann throws out_of_range, not parse_error, for 1e400.
  const test::CliResult r = test::run_cli({"plan", "--bytes-in", "1GiB", "--bytes-out", "1GiB",
                                           "--kernel-cost", R"({"fixed_ms": 1e400, "ms_per_mib": 1})"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("--kernel-cost: not valid JSON"), std::string::npos) << r.err;
}

TEST(ErrorLine, AnEchoedNewlineInAFieldNameStaysOnOneLine) {
  const fs::path spec = temp_file("ctl.yaml", "name: x\nops:\n  - {op: kernel, \"bad\\nfield\\x07\": 1}\n");
  const test::CliResult r = test::run_cli({"check", spec.string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("'bad\\nfield\\x07'"), std::string::npos) << r.err;
  fs::remove(spec);
}

}  // namespace
}  // namespace overlap
