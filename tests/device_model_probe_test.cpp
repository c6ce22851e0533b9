// A model `overlap probe` wrote: it round-trips, and a hand edit that drops
// a figure or makes one zero or negative is rejected with the field named.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_run.hpp"
#include "overlap/core/device_model.hpp"
#include "overlap/core/error.hpp"

namespace {

using namespace overlap;
using json = nlohmann::json;

DeviceModel probed() {
  DeviceModel m = DeviceModel::preset("h100");
  m.name = "NVIDIA H100 80GB HBM3";
  m.host_calls = {0.0024, 0.0047, 0.0015, 0.0004, 0.0061};
  m.kernel_launch_latency = 0.0015;
  m.copy_start_latency = 0.0027;
  m.queued_handover_latency = 0.0015;
  m.start_latency_hidden_when_queued = true;
  m.kernels_share_sms = true;
  m.connections = 8;
  m.bidirectional = {{262144, 1.27, 1.36}, {16777216, 1.10, 1.10}};
  m.host_staging = {{1, 8.9}, {8, 27.4}};
  m.host_register_ms_per_gib = 52.3;
  m.host_unregister_ms_per_gib = 21.7;
  ProbeRecord record;
  record.device = m.name;
  record.driver = "13.0";
  record.runtime = "13.0";
  record.date = "2026-11-23 19:38 UTC";
  record.seconds = 8.2;
  record.spread["h2d_pinned@4MiB"] = 0.01;
  record.raw = R"({"device":"NVIDIA H100 80GB HBM3"})";
  m.probe = record;
  return m;
}

std::string error_of(const std::string& text) {
  try {
    (void)DeviceModel::from_json(text);
  } catch (const invalid_input& e) {
    return e.what();
  }
  return "";
}

TEST(DeviceModelProbe, AProbedModelRoundTrips) {
  const DeviceModel m = probed();
  const DeviceModel back = DeviceModel::from_json(m.to_json());
  EXPECT_EQ(back.to_json(), m.to_json());
  ASSERT_TRUE(back.probe.has_value());
  EXPECT_EQ(back.probe->device, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(back.arbitration, copy_arbitration::stream_round_robin);
  EXPECT_EQ(back.host_calls.graph_launch, std::optional<double>(0.0061));
  EXPECT_TRUE(back.kernels_share_sms);
  EXPECT_DOUBLE_EQ(back.queued_handover_latency, 0.0015);
  EXPECT_DOUBLE_EQ(back.bidirectional_slowdown(copy_direction::d2h, 262144), 1.36);
}

TEST(DeviceModelProbe, AMissingFigureIsNamed) {
  for (const char* field : {"copy_start_latency_ms", "h2d_pinned", "host_call_ms", "bidirectional",
                            "copy_arbitration", "host_register_ms_per_gib", "connections"}) {
    json j = json::parse(probed().to_json());
    j.erase(field);
    const std::string message = error_of(j.dump());
    EXPECT_NE(message.find(std::string(field) + ": missing"), std::string::npos) << field << ": " << message;
  }
  json j = json::parse(probed().to_json());
  j["host_call_ms"].erase("wait");
  EXPECT_NE(error_of(j.dump()).find("host_call_ms.wait: missing"), std::string::npos);
}

TEST(DeviceModelProbe, AZeroOrNegativeFigureIsNamed) {
  const std::pair<const char*, double> cases[] = {{"copy_start_latency_ms", 0.0},
                                                  {"kernel_launch_latency_ms", -0.001},
                                                  {"api_call_cost_ms", 0.0},
                                                  {"host_register_ms_per_gib", 0.0},
                                                  {"queued_handover_latency_ms", -0.001}};
  for (const auto& [field, value] : cases) {
    json j = json::parse(probed().to_json());
    j[field] = value;
    const std::string message = error_of(j.dump());
    EXPECT_NE(message.find(field), std::string::npos) << field << ": " << message;
    EXPECT_NE(message.find("out of range"), std::string::npos) << message;
  }
  json calls = json::parse(probed().to_json());
  calls["host_call_ms"]["launch"] = 0.0;
  EXPECT_NE(error_of(calls.dump()).find("host_call_ms.launch: 0 is out of range"), std::string::npos);
  json curve = json::parse(probed().to_json());
  curve["h2d_pinned"][1]["gbps"] = -3.0;
  EXPECT_NE(error_of(curve.dump()).find("h2d_pinned[1].gbps"), std::string::npos);
  json slow = json::parse(probed().to_json());
  slow["bidirectional"][0]["h2d_slowdown"] = 0.5;
  EXPECT_NE(error_of(slow.dump()).find("bidirectional[0].h2d_slowdown"), std::string::npos);
  json staging = json::parse(probed().to_json());
  staging["host_staging"][0]["gbps"] = 0.0;
  EXPECT_NE(error_of(staging.dump()).find("host_staging[0].gbps"), std::string::npos);
}

TEST(DeviceModelProbe, APresetBasedEditMayLeaveFiguresOut) {
  // Only a file that says it was probed must give every figure.
  const DeviceModel m = DeviceModel::from_json(R"({"base": "h100", "copy_arbitration": "earliest_ready"})");
  EXPECT_EQ(m.arbitration, copy_arbitration::earliest_ready);
  EXPECT_NE(error_of(R"({"base": "h100", "copy_arbitration": "fifo"})").find("copy_arbitration: 'fifo'"),
            std::string::npos);
}

// A probed model file works wherever a command takes --device, and a
// hand-edited one with a zero figure is refused naming the field.
TEST(DeviceModelProbe, EveryCommandLoadsAProbedModelFile) {
  const auto dir = std::filesystem::temp_directory_path() / "overlap-probed-model-test";
  std::filesystem::create_directories(dir);
  const std::string good = (dir / "model.json").string();
  std::ofstream(good) << probed().to_json();
  const std::string examples = std::string(OVERLAP_SOURCE_DIR) + "/examples/";
  const std::vector<std::vector<std::string>> commands = {
      {"simulate", "--h2d", "1", "--kernel", "1", "--d2h", "1", "--chunks", "4", "--streams", "2", "--device",
       good},
      {"simulate", examples + "seed004.yaml", "--device", good},
      {"check", examples + "check/cuda-default-stream-trap.yaml", "--device", good},
      {"plan", "--bytes-in", "64MiB", "--bytes-out", "64MiB", "--kernel", "0.1", "--device", good},
      {"device", good},
  };
  for (const auto& args : commands) {
    const auto r = overlap::test::run_cli(args);
    EXPECT_NE(r.code, 2) << args.front() << ": " << r.err;
    EXPECT_EQ(r.err.find("error"), std::string::npos) << args.front() << ": " << r.err;
  }
  json edited = json::parse(probed().to_json());
  edited["copy_start_latency_ms"] = 0;
  const std::string bad = (dir / "edited.json").string();
  std::ofstream(bad) << edited.dump();
  const auto r = overlap::test::run_cli({"simulate", examples + "seed004.yaml", "--device", bad});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("copy_start_latency_ms: 0 is out of range"), std::string::npos) << r.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
