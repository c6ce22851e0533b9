// Trace format versions (docs/trace-format.md): version 1 traces (no `env`
// record) still audit, version 2's `env` record and device capabilities are
// read and put the run's connections into the audit's model, a trace cut
// short still audits with its note, and a garbled trace or one of an unknown
// version is refused by `overlap audit --from` and `overlap trace --from`
// with one line and exit 2.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "overlap/core/device_model.hpp"
#include "overlap/core/error.hpp"
#include "overlap/trace/audit.hpp"
#include "overlap/trace/capture.hpp"
#include "overlap/trace/trace_file.hpp"
#include "trace_builder.hpp"

namespace overlap {
namespace {

using test::TraceBuilder;

std::string fixture_path(const std::string& name) {
  return std::string(OVERLAP_SOURCE_DIR) + "/tests/fixtures/traces/" + name + ".jsonl";
}

trace::RawTrace fixture(const std::string& name) {
  return trace::load_trace(fixture_path(name));
}

bool has_rule(const trace::AuditReport& r, const std::string& rule) {
  for (const trace::AuditFinding& f : r.findings) {
    if (f.rule == rule) return true;
  }
  return false;
}

TEST(TraceVersions, AVersion1TraceStillAudits) {
  const trace::RawTrace raw = fixture("version1");
  EXPECT_EQ(raw.version, 1);
  EXPECT_FALSE(raw.env.recorded);
  EXPECT_FALSE(raw.env.connections().has_value());
  ASSERT_EQ(raw.devices.size(), 1U);
  EXPECT_FALSE(raw.devices[0].concurrent_kernels.has_value());
  const trace::AuditReport r = trace::audit(trace::capture(raw), DeviceModel::preset("h100"));
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.ops, 5U);
  // Nothing recorded, so the model's own connections stand and nothing is said.
  for (const std::string& note : r.notes) EXPECT_EQ(note.find("connections"), std::string::npos) << note;
  // The recorded H100 apps are version 1 too.
  EXPECT_EQ(fixture("clean_pipeline").version, 1);
}

TEST(TraceVersions, Version2ReadsTheEnvironmentAndTheDevicesCapabilities) {
  const trace::RawTrace raw = fixture("version2_env");
  EXPECT_EQ(raw.version, 2);
  ASSERT_TRUE(raw.env.recorded);
  EXPECT_EQ(raw.env.max_connections, std::optional<std::string>("32"));
  EXPECT_EQ(raw.env.module_loading, std::optional<std::string>("LAZY"));
  EXPECT_FALSE(raw.env.launch_blocking.has_value());  // unset
  EXPECT_EQ(raw.env.connections(), std::optional<std::uint32_t>(32));
  ASSERT_EQ(raw.devices.size(), 1U);
  EXPECT_EQ(raw.devices[0].concurrent_kernels, std::optional<bool>(true));
  EXPECT_EQ(raw.devices[0].compute_capability, "9.0");
  EXPECT_EQ(raw.unknown_records, 0U);

  const trace::Capture run = trace::capture(raw);
  EXPECT_EQ(run.env.connections(), std::optional<std::uint32_t>(32));
  const trace::AuditReport r = trace::audit(run, DeviceModel::preset("h100"));
  bool noted = false;
  for (const std::string& note : r.notes)
    noted = noted || note.find("had 32 connections") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(TraceVersions, ConnectionsInForceFollowCudasRules) {
  trace::TraceEnvironment env;
  env.recorded = true;
  EXPECT_EQ(env.connections(), std::optional<std::uint32_t>(8));  // unset: CUDA's default
  for (const auto& [text, expected] : std::vector<std::pair<std::string, std::uint32_t>>{
           {"1", 1}, {"16", 16}, {"32", 32}, {"64", 32}, {"0", 8}, {"-3", 8}, {"many", 8}, {"", 8}}) {
    env.max_connections = text;
    EXPECT_EQ(env.connections(), std::optional<std::uint32_t>(expected)) << text;
  }
  EXPECT_FALSE(env.launches_blocking());
  env.launch_blocking = "1";
  EXPECT_TRUE(env.launches_blocking());
  env.launch_blocking = "0";
  EXPECT_FALSE(env.launches_blocking());

  std::vector<std::string> notes;
  env.max_connections = "4";
  const DeviceModel m = trace::with_environment(DeviceModel::preset("h100"), env, &notes);
  EXPECT_EQ(m.connections, 4U);
  ASSERT_EQ(notes.size(), 1U);
  EXPECT_NE(notes[0].find("CUDA_DEVICE_MAX_CONNECTIONS=4"), std::string::npos) << notes[0];
  EXPECT_EQ(trace::with_environment(DeviceModel::preset("h100"), trace::TraceEnvironment{}).connections, 8U);
}

TEST(TraceVersions, ATraceCutShortStillAuditsWithItsNote) {
  const trace::RawTrace raw = fixture("version2_cut_short");
  EXPECT_FALSE(raw.complete);
  const trace::AuditReport r = trace::audit(trace::capture(raw), DeviceModel::preset("h100"));
  EXPECT_FALSE(r.complete);
  const test::CliResult cli = test::run_cli({"audit", "--from", fixture_path("version2_cut_short")});
  EXPECT_NE(cli.code, 2) << cli.err;
  EXPECT_NE(cli.out.find("no footer"), std::string::npos) << cli.out;
}

struct Refused {
  const char* fixture;
  const char* problem;  ///< what the one line names
};

class RefusedTrace : public testing::TestWithParam<Refused> {};

TEST_P(RefusedTrace, IsExitTwoWithOneLineNamingTheProblem) {
  const Refused e = GetParam();
  EXPECT_THROW((void)fixture(e.fixture), invalid_input);
  for (const char* command : {"audit", "trace"}) {
    SCOPED_TRACE(command);
    const test::CliResult r = test::run_cli({command, "--from", fixture_path(e.fixture)});
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    ASSERT_FALSE(r.err.empty());
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;  // one line
    EXPECT_NE(r.err.find(std::string(e.fixture) + ".jsonl:"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(e.problem), std::string::npos) << r.err;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, RefusedTrace,
    testing::Values(Refused{"garbled", "not a JSON object"},
                    Refused{"no_header", "the first record is not a header"},
                    Refused{"header_not_first", "the first record is not a header"},
                    Refused{"version99", "99 is not a trace format this overlap reads (versions 1 to 2)"}),
    [](const testing::TestParamInfo<Refused>& param) { return std::string(param.param.fixture); });

TEST(TraceVersions, OneLineOfGarbageOrASecondHeaderIsRefused) {
  std::istringstream one("not json at all");
  try {
    (void)trace::read_trace(one, "one.jsonl");
    ADD_FAILURE() << "read";
  } catch (const invalid_input& e) {
    EXPECT_NE(std::string(e.what()).find("one.jsonl:1: not a trace file"), std::string::npos) << e.what();
  }
  const std::string text = TraceBuilder().footer().text();
  std::istringstream twice(text + text);
  try {
    (void)trace::read_trace(twice, "twice.jsonl");
    ADD_FAILURE() << "read";
  } catch (const invalid_input& e) {
    EXPECT_NE(std::string(e.what()).find("a second header"), std::string::npos) << e.what();
  }
}

// 32 streams of a dependent kernel pair (A then B, 1 ms each, one block),
// issued stream by stream (as simpleHyperQ does), as a version 2 trace with
// `env` as given, and the device times an H100 gives with 8 connections:
// on each connection a stream's A starts when the B ahead of it does (that
// B held the connection's head until its own A ended), so the connection's
// four pairs take 5 ms instead of 2.
std::string pairs_trace(const nlohmann::json& env) {
  TraceBuilder t;
  for (std::uint32_t s = 0; s < 32; ++s) t.stream(100 + s, "non_blocking");
  double host = 10.0;
  for (std::uint32_t s = 0; s < 32; ++s) {
    const double a = 200.0 + 1000.0 * (s / 8) + s % 8;  // the pair's start on its connection (us)
    for (const bool second : {false, true}) {
      const char* kernel = second ? "_Z7kernelBPf" : "_Z7kernelAPf";
      const double start = second ? a + 1000.0 : a;
      t.call("cudaLaunchKernel", "launch", host, host + 3.0,
             {{"stream", 100 + s}, {"kernel", kernel}, {"grid", {1, 1, 1}}});
      t.work("kernel", start, start + 1000.0, {{"stream", 100 + s}, {"name", kernel}, {"grid", {1, 1, 1}}});
      host += 4.0;
    }
  }
  t.call("cudaDeviceSynchronize", "device_sync", host, 5300.0);
  std::string text = t.footer().text();
  // Version 2: the header says so and the env record follows it.
  nlohmann::json header = nlohmann::json::parse(text.substr(0, text.find('\n')));
  header["version"] = 2;
  nlohmann::json record = env;
  record["t"] = "env";
  return header.dump() + "\n" + record.dump() + "\n" + text.substr(text.find('\n') + 1);
}

trace::AuditReport audit_text(const std::string& text) {
  std::istringstream in(text);
  return trace::audit(trace::capture(trace::read_trace(in, "pairs.jsonl")), DeviceModel::preset("h100"));
}

TEST(TraceVersions, TheAuditReportsHardwareQueueSharingFromARunWithEightConnections) {
  const trace::AuditReport shared = audit_text(pairs_trace(nlohmann::json::object()));  // unset: 8
  const trace::AuditFinding* found = nullptr;
  for (const trace::AuditFinding& f : shared.findings) {
    if (f.rule == "hardware-queue-sharing") found = &f;
  }
  ASSERT_NE(found, nullptr) << trace::format_text(shared);
  ASSERT_TRUE(found->predicted_saving.has_value());
  EXPECT_GT(*found->predicted_saving, 2.5);  // of the run's ~5 ms, all but the ~2 ms of one pair
  EXPECT_NE(found->fix.find("CUDA_DEVICE_MAX_CONNECTIONS=32"), std::string::npos) << found->fix;

  // The same program run with 32 connections has nothing to say about queues.
  const trace::AuditReport own = audit_text(pairs_trace({{"CUDA_DEVICE_MAX_CONNECTIONS", "32"}}));
  EXPECT_FALSE(has_rule(own, "hardware-queue-sharing")) << trace::format_text(own);
}

}  // namespace
}  // namespace overlap
