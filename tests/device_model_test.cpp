#include "overlap/core/device_model.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "overlap/core/error.hpp"

namespace {

using namespace overlap;

TEST(DeviceModel, EveryPresetRoundTripsThroughJson) {
  for (const auto& name : DeviceModel::preset_names()) {
    const DeviceModel m = DeviceModel::preset(name);
    const DeviceModel back = DeviceModel::from_json(m.to_json());
    EXPECT_EQ(back.to_json(), m.to_json()) << name;
    EXPECT_EQ(back.name, name);
  }
}

TEST(DeviceModel, PresetsDescribeTheirSchedulers) {
  EXPECT_EQ(DeviceModel::preset("fermi-1ce").mapping, queue_mapping::per_engine);
  EXPECT_FALSE(DeviceModel::preset("fermi-1ce").copy_engine_per_direction);
  EXPECT_TRUE(DeviceModel::preset("fermi-2ce").copy_engine_per_direction);
  EXPECT_TRUE(DeviceModel::preset("fermi-2ce").kernel_signal_waits_for_batch);
  EXPECT_EQ(DeviceModel::preset("h100").connections, 8u);  // CUDA's default
  EXPECT_EQ(DeviceModel::preset("hyperq").connections, 8u);
  EXPECT_EQ(DeviceModel::preset("unit").connections, 32u);  // ideal
  EXPECT_TRUE(DeviceModel::preset("h100").kernels_share_sms);
  EXPECT_DOUBLE_EQ(DeviceModel::preset("h100").h2d_pinned.at(256ull << 20), 55.2);  // held past 64 MiB
}

TEST(DeviceModel, BaseAndOverrides) {
  const DeviceModel m = DeviceModel::from_json(R"({"base": "h100", "connections": 16, "name": "mine"})");
  EXPECT_EQ(m.connections, 16u);
  EXPECT_EQ(m.name, "mine");
  EXPECT_DOUBLE_EQ(m.d2h_pinned.at(4096), 2.2);
}

TEST(DeviceModel, OldModelsHardwareQueuesStillReads) {
  // Hand-written before connections had their name: hardware_queues meant them.
  EXPECT_EQ(DeviceModel::from_json(R"({"base": "hyperq", "hardware_queues": 16})").connections, 16u);
  EXPECT_EQ(DeviceModel::from_json(R"({"base": "hyperq", "hardware_queues": 64})").connections,
            32u);  // CUDA's cap
  // An explicit connections wins, whichever comes first.
  EXPECT_EQ(
      DeviceModel::from_json(R"({"base": "hyperq", "hardware_queues": 16, "connections": 4})").connections,
      4u);
  EXPECT_EQ(
      DeviceModel::from_json(R"({"connections": 4, "base": "hyperq", "hardware_queues": 16})").connections,
      4u);
  // A probed model wrote there how many single-kernel streams ran at once:
  // no queue count, so the connections stay at CUDA's default it ran with.
  DeviceModel probed = DeviceModel::preset("h100");
  probed.probe =
      ProbeRecord{"NVIDIA H100 80GB HBM3", "13.0", "13.0", "2026-11-23 23:57", false, 60.0, {}, "{}"};
  auto old = nlohmann::json::parse(probed.to_json());
  old.erase("connections");
  old["hardware_queues"] = 32;
  const DeviceModel read = DeviceModel::from_json(old.dump());
  EXPECT_EQ(read.connections, 8u);
  EXPECT_EQ(read.max_concurrent_kernels, 128u);
}

TEST(DeviceModel, ConnectionsRoundTripAndReplaceHardwareQueues) {
  DeviceModel m = DeviceModel::preset("hyperq");
  m.connections = 12;
  const std::string text = m.to_json();
  EXPECT_NE(text.find("\"connections\": 12"), std::string::npos) << text;
  EXPECT_EQ(text.find("hardware_queues"), std::string::npos) << text;
  EXPECT_EQ(DeviceModel::from_json(text).connections, 12u);
}

TEST(DeviceModel, CurveInterpolatesInLogSizeAndClampsAtTheEnds) {
  const BandwidthCurve c{{{1024, 1.0}, {4096, 3.0}}};
  EXPECT_DOUBLE_EQ(c.at(1), 1.0);
  EXPECT_DOUBLE_EQ(c.at(2048), 2.0);
  EXPECT_DOUBLE_EQ(c.at(1 << 20), 3.0);
}

void expect_rejected(const char* text, const char* needle) {
  try {
    (void)DeviceModel::from_json(text);
    ADD_FAILURE() << "accepted: " << text;
  } catch (const invalid_input& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(DeviceModel, BadModelsNameTheField) {
  expect_rejected(R"({"base": "h100", "hardware_queus": 3})", "hardware_queus");
  expect_rejected(R"({"base": "h100", "hardware_queues": 0})", "hardware_queues");
  expect_rejected(R"({"base": "h100", "connections": 0})", "connections");
  expect_rejected(R"({"base": "h100", "connections": 33})",
                  "connections: 33 is out of range (expected 1 to 32)");
  expect_rejected(R"({"base": "h100", "api_call_cost_ms": -1})", "api_call_cost_ms");
  expect_rejected(R"({"base": "h100", "h2d_slowdown_when_bidirectional": 0.5})", "h2d_slowdown");
  expect_rejected(R"({"base": "h100", "d2d": [{"bytes": 10, "gbps": 0}]})", "d2d[0].gbps");
  expect_rejected(R"({"base": "h100", "d2d": [{"bytes": 10, "gbps": 1}, {"bytes": 5, "gbps": 1}]})",
                  "d2d[1].bytes");
  expect_rejected(R"({"base": "nope"})", "nope");
  expect_rejected(R"({"name": "bare"})", "h2d_pinned");
  expect_rejected(R"([1, 2])", "object");
  expect_rejected(R"({"base": )", "JSON");
  EXPECT_THROW((void)DeviceModel::load("no-such-preset-or-file"), invalid_input);
}

}  // namespace
