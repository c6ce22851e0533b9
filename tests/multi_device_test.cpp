// Programs on several GPUs (issue 37, part 1): streams belong to a device,
// each device has its own engines, SMs, queues and legacy default stream,
// peer copies join two devices, and events order work across them. Each
// simulated case is small enough to compute by hand on the `unit` model.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "message_of.hpp"
#include "overlap/check/check.hpp"
#include "overlap/check/happens_before.hpp"
#include "overlap/core/metrics.hpp"
#include "overlap/core/pipeline_shape.hpp"
#include "overlap/core/program.hpp"
#include "overlap/io/exporters.hpp"
#include "overlap/io/spec.hpp"
#include "overlap/io/spec_writer.hpp"
#include "overlap/sim/simulator.hpp"
#include "sim_test_support.hpp"

namespace {

using namespace overlap;
using overlap::testing::expect_span;
using overlap::testing::message_of;
using overlap::testing::span_of;

const DeviceModel unit_model = DeviceModel::preset("unit");

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

/// Stream "s0" (id 0) on GPU 0 and "s1" (id 1) on GPU 1, both of `kind`.
Program on_two_gpus(stream_kind kind) {
  Program p;
  p.add_stream("s0", kind, 0, 0);
  p.add_stream("s1", kind, 0, 1);
  return p;
}
constexpr stream_id s0 = 0;
constexpr stream_id s1 = 1;

TEST(MultiDevice, StreamsCarryTheirDeviceAndOpsTakeIt) {
  Program p;
  EXPECT_EQ(p.device_count(), 1u);
  const auto a = p.add_stream("a", stream_kind::blocking, 0, 0);
  const auto b = p.add_stream("b", stream_kind::non_blocking, 0, 2);
  EXPECT_EQ(p.device_count(), 3u);
  EXPECT_EQ(p.streams()[b].device, 2u);
  Op op;
  op.kind = op_kind::kernel;
  op.stream = b;
  op.duration = 1.0;
  op.device = 0;  // a stream op runs on its stream's device, whatever it says
  const op_id k = p.append(op);
  EXPECT_EQ(p.ops()[k].device, 2u);
  EXPECT_EQ(p.ops()[p.kernel(a, 1.0)].device, 0u);
  p.use_devices(4);
  EXPECT_EQ(p.device_count(), 4u);
  p.use_devices(2);  // never lowers
  EXPECT_EQ(p.device_count(), 4u);
  EXPECT_TRUE(contains(message_of([&] { p.use_devices(65); }), "devices: 65 is out of range"));
  EXPECT_TRUE(contains(message_of([&] { p.add_stream("far", stream_kind::blocking, 0, 64); }), "device: 64"));
}

TEST(MultiDevice, EachDeviceHasItsOwnLegacyDefaultStream) {
  Program p;
  const auto d0 = p.legacy_default_stream();
  const auto d1 = p.legacy_default_stream(1);
  EXPECT_NE(d0, d1);
  EXPECT_EQ(p.streams()[d0].name, "default");
  EXPECT_EQ(p.streams()[d1].name, "default@gpu1");
  EXPECT_EQ(p.streams()[d1].device, 1u);
  EXPECT_EQ(p.legacy_default_stream(1), d1);
  EXPECT_EQ(p.find_legacy_default_stream(1), std::optional<stream_id>(d1));
  EXPECT_FALSE(p.find_legacy_default_stream(5).has_value());
  EXPECT_TRUE(contains(message_of([&] { p.add_stream("again", stream_kind::legacy_default, 0, 1); }),
                       "the legacy default stream of device 1 is already 'default@gpu1'"));
  // The copy keeps them.
  const Program copy = p.without_ops();
  EXPECT_EQ(copy.find_legacy_default_stream(1), std::optional<stream_id>(d1));
  EXPECT_EQ(copy.device_count(), 2u);
}

TEST(MultiDevice, APeerCopyIsCheckedAtOnce) {
  Program p = on_two_gpus(stream_kind::blocking);
  const auto s2 = p.add_stream("s2", stream_kind::blocking, 0, 2);
  const op_id c = p.copy_peer(s0, {0, 1}, 1024, 1.0);
  EXPECT_EQ(p.ops()[c].direction, copy_direction::d2d);
  EXPECT_EQ(p.ops()[c].label, "P2P");
  EXPECT_EQ(p.device_count(), 3u);
  EXPECT_TRUE(contains(message_of([&] {
                         p.copy_peer(s2, {0, 1}, 1024, 1.0);
                       }),
                       "'s2' is on device 2, neither end of the peer copy from device 0 to device 1"));
  EXPECT_TRUE(contains(message_of([&] {
                         p.copy_peer(s0, {0, 0}, 1024, 1.0);
                       }),
                       "from and to are both device 0"));
  Op h2d;
  h2d.kind = op_kind::copy;
  h2d.stream = s0;
  h2d.direction = copy_direction::h2d;
  h2d.duration = 1.0;
  h2d.peer = PeerEnds{0, 1};
  EXPECT_TRUE(contains(message_of([&] { p.append(h2d); }), "only a d2d copy runs between two devices"));
}

TEST(MultiDevice, EachDeviceHasItsOwnCopyEnginesAndSMs) {
  // Same-direction copies serialize on one GPU's engine; on two GPUs they run together.
  Program p;
  const auto a0 = p.add_stream("a0", stream_kind::blocking, 0, 0);
  const auto b0 = p.add_stream("b0", stream_kind::blocking, 0, 0);
  const auto a1 = p.add_stream("a1", stream_kind::blocking, 0, 1);
  const auto up_a0 = p.copy(a0, copy_direction::h2d, 0, host_memory::pinned, 2.0);
  const auto up_b0 = p.copy(b0, copy_direction::h2d, 0, host_memory::pinned, 3.0);
  const auto up_a1 = p.copy(a1, copy_direction::h2d, 0, host_memory::pinned, 4.0);
  // Full-GPU kernels: two on GPU0 take turns, the one on GPU1 runs beside them.
  const auto k_a0 = p.kernel(a0, 5.0);
  const auto k_b0 = p.kernel(b0, 5.0);
  const auto k_a1 = p.kernel(a1, 5.0);
  const Timeline t = sim::simulate(p, unit_model);
  expect_span(t, up_a0, 0.0, 2.0);
  expect_span(t, up_b0, 2.0, 5.0);
  expect_span(t, up_a1, 0.0, 4.0);
  expect_span(t, k_a0, 2.0, 7.0);
  expect_span(t, k_b0, 7.0, 12.0);
  EXPECT_EQ(span_of(t, k_b0).waited_because, wait_reason::gpu_full);
  expect_span(t, k_a1, 4.0, 9.0);
  // The metrics keep the devices' engines apart.
  const Metrics m = compute_metrics(t);
  double gpu1_h2d = 0.0;
  for (const EngineUsage& e : m.engines) {
    if (e.device == 1 && e.unit == engine::h2d_copy) gpu1_h2d = e.busy;
  }
  EXPECT_DOUBLE_EQ(gpu1_h2d, 4.0);
  EXPECT_TRUE(contains(io::to_summary(t), "GPU1 H2D engine")) << io::to_summary(t);
}

TEST(MultiDevice, ALegacyDefaultStreamBarriersItsOwnDeviceOnly) {
  Program p = on_two_gpus(stream_kind::blocking);
  const auto legacy1 = p.legacy_default_stream(1);
  const auto long0 = p.kernel(s0, 10.0, 0.5);
  const auto long1 = p.kernel(s1, 10.0, 0.5);
  const auto barrier = p.kernel(legacy1, 1.0, 0.5);  // waits for s1's kernel, not s0's
  const Timeline t = sim::simulate(p, unit_model);
  expect_span(t, long0, 0.0, 10.0);
  expect_span(t, long1, 0.0, 10.0);
  expect_span(t, barrier, 10.0, 11.0);
  EXPECT_EQ(span_of(t, barrier).waited_for, std::optional<op_id>(long1));
  // The same in the checker: s0's kernel is not ordered before the legacy kernel of GPU1.
  const check::HappensBefore hb(p);
  EXPECT_TRUE(hb.ordered(long1, barrier));
  EXPECT_TRUE(hb.concurrent(long0, barrier));
}

TEST(MultiDevice, DeviceSynchronizeWaitsForItsDeviceAlone) {
  Program p = on_two_gpus(stream_kind::non_blocking);
  p.kernel(s0, 10.0);
  p.kernel(s1, 3.0);
  p.synchronize_device(1);
  const auto after = p.kernel(s1, 1.0);  // issued when GPU1 drained, GPU0 still busy
  const Timeline t = sim::simulate(p, unit_model);
  expect_span(t, after, 3.0, 4.0);
  EXPECT_DOUBLE_EQ(t.total(), 10.0);
}

TEST(MultiDevice, EventsOrderWorkAcrossDevicesAndRacesAreFoundAcrossThem) {
  const auto build = [](bool ordered) {
    Program p = on_two_gpus(stream_kind::non_blocking);
    const auto e = p.add_event("y0 written");
    p.kernel(s0, 4.0);
    p.last().accesses.push_back(Access{"y0", 0, std::nullopt, access_mode::write});
    p.record(e, s0);
    if (ordered) p.wait(s1, e);
    p.copy_peer(s1, {0, 1}, 0, 2.0);
    p.last().accesses.push_back(Access{"y0", 0, std::nullopt, access_mode::read});
    p.last().accesses.push_back(Access{"z1", 0, std::nullopt, access_mode::write});
    return p;
  };
  const Program ordered = build(true);
  const Timeline t = sim::simulate(ordered, unit_model);
  const Span& copy = t.spans.back();
  EXPECT_DOUBLE_EQ(copy.start, 4.0);
  EXPECT_DOUBLE_EQ(copy.end, 6.0);
  EXPECT_EQ(copy.unit, engine::d2d_copy);
  EXPECT_EQ(check::check_program(ordered, unit_model).count(check::severity::error), 0u);
  const check::Report racy = check::check_program(build(false), unit_model);
  EXPECT_EQ(racy.count(check::severity::error), 1u);
  EXPECT_EQ(racy.findings.at(0).rule, check::rules::race);
}

TEST(MultiDevice, APeerCopyIsTimedByThePeerCurveOrRefusedWithoutOne) {
  Program p = on_two_gpus(stream_kind::blocking);
  p.copy_peer(s0, {0, 1}, 2'000'000);  // 2 MB at the unit model's 1 GB/s: 2 ms
  const Timeline t = sim::simulate(p, unit_model);
  EXPECT_DOUBLE_EQ(t.spans.at(0).end, 2.0);
  const std::string refused = message_of([&] { (void)sim::simulate(p, DeviceModel::preset("h100")); });
  EXPECT_TRUE(contains(refused, "peer copy from device 0 to device 1 has no time")) << refused;
  EXPECT_TRUE(contains(refused, "'h100' has no peer rate")) << refused;
  // A model file may give the curve, and it is written back.
  DeviceModel with_peer = DeviceModel::preset("h100");
  with_peer.peer.points = {{1'000'000, 100.0}};
  const DeviceModel read = DeviceModel::from_json(with_peer.to_json());
  ASSERT_EQ(read.peer.points.size(), 1u);
  EXPECT_DOUBLE_EQ(read.peer.points[0].gigabytes_per_second, 100.0);
  EXPECT_NO_THROW((void)sim::simulate(p, read));
}

TEST(MultiDevice, ExportersKeepTheDevicesApart) {
  Program p = on_two_gpus(stream_kind::blocking);
  p.kernel(s0, 2.0);
  p.kernel(s1, 2.0);
  const Timeline t = sim::simulate(p, unit_model);
  // Perfetto: one lane per GPU's engine, so the two kernels do not pile up on one.
  const nlohmann::json trace = nlohmann::json::parse(io::to_chrome_trace(t));
  std::set<int> compute_lanes;
  std::set<std::string> lane_names;
  for (const auto& event : trace.at("traceEvents")) {
    if (event.at("ph") == "M" && event.at("name") == "thread_name")
      lane_names.insert(event.at("args").at("name").get<std::string>());
    if (event.value("cat", "") == "engine") compute_lanes.insert(event.at("tid").get<int>());
  }
  EXPECT_EQ(compute_lanes.size(), 2u);
  EXPECT_TRUE(lane_names.contains("GPU0 compute"));
  EXPECT_TRUE(lane_names.contains("GPU1 compute"));
  // The timeline's JSON keeps each stream's device.
  const Timeline back = io::timeline_from_json(io::to_json(t));
  ASSERT_EQ(back.streams.size(), 2u);
  EXPECT_EQ(back.streams[1].device, 1u);
  EXPECT_EQ(back.streams[0].device, 0u);
}

// The pipeline shorthand's `devices`: chunk c on GPU c mod devices, each GPU
// with its own streams, ring and events. Two GPUs run 4 chunks in the time
// one takes for 2, for every issue order, and nothing races.
TEST(MultiDevice, APipelineSpreadsItsChunksOverTheDevices) {
  for (const issue_order order : {issue_order::depth_first, issue_order::breadth_first,
                                  issue_order::stage_first, issue_order::stage_streams}) {
    PipelineShape shape;
    shape.order = order;
    shape.streams = order == issue_order::stage_streams ? 3 : 2;
    shape.h2d_time = shape.kernel_time = shape.d2h_time = 4.0;  // totals: 1 per chunk
    shape.chunks = 4;
    shape.devices = 2;
    const Program two = make_pipeline_program(shape);
    EXPECT_EQ(two.device_count(), 2u);
    EXPECT_EQ(two.streams().size(), 2u * shape.streams);
    EXPECT_EQ(two.streams().back().name, fmt::format("gpu1.Stream{}", shape.streams));
    for (const Op& op : two.ops()) {
      if (op.chunk >= 0) {
        EXPECT_EQ(op.device, static_cast<device_id>(op.chunk % 2)) << to_string(order);
      }
    }
    PipelineShape one = shape;
    one.devices = 1;
    one.chunks = 2;
    one.h2d_time = one.kernel_time = one.d2h_time = 2.0;
    EXPECT_DOUBLE_EQ(sim::simulate(two, unit_model).total(),
                     sim::simulate(make_pipeline_program(one), unit_model).total())
        << to_string(order);
    const check::Report report = check::check_program(two, unit_model);
    EXPECT_EQ(report.count(check::severity::error), 0u) << to_string(order);
  }
  // A ring smaller than a device's chunks hands slots on, per device.
  PipelineShape ring;
  ring.chunks = 12;
  ring.streams = 2;
  ring.ring_depth = 3;
  ring.devices = 3;
  ring.h2d_time = ring.kernel_time = ring.d2h_time = 12.0;
  const Program ringed = make_pipeline_program(ring);
  EXPECT_EQ(check::check_program(ringed, unit_model).count(check::severity::error), 0u);
  const io::Spec spec = io::parse_spec(
      "pipeline: {chunks: 6, streams: 2, devices: 3, stage_time: {h2d: 1, kernel: 1, d2h: 1}}\n", "p.yaml");
  EXPECT_EQ(spec.program.device_count(), 3u);
  EXPECT_TRUE(contains(message_of([] {
                         (void)io::parse_spec("pipeline: {chunks: 2, devices: 0, stage_time: {kernel: 1}}\n",
                                              "p.yaml");
                       }),
                       "devices"));
}

const char* const two_gpu_spec = R"(
name: two GPUs
devices: 2
streams:
  - {name: a0, device: 0}
  - {name: a1, device: 1}
events: [e0]
ops:
  - {op: h2d, stream: a0, time: 10, writes: [x0]}
  - {op: kernel, stream: a0, time: 20, reads: [x0], writes: [y0]}
  - {op: record, stream: a0, event: e0}
  - {op: wait, stream: a1, event: e0}
  - {op: peer, stream: a1, from: 0, to: 1, time: 5, reads: [y0], writes: [z1]}
  - {op: kernel, stream: default@gpu1, time: 1}
  - {op: device_sync, device: 1}
  - {op: free, device: 1}
)";

TEST(MultiDevice, SpecsDeclareDevicesAndRoundTrip) {
  const io::Spec spec = io::parse_spec(two_gpu_spec, "two.yaml");
  const Program& p = spec.program;
  EXPECT_EQ(p.device_count(), 2u);
  EXPECT_EQ(p.streams()[*p.find_stream("a1")].device, 1u);
  const Op& peer = p.ops()[4];
  ASSERT_TRUE(peer.peer.has_value());
  EXPECT_EQ(peer.peer->from, 0u);
  EXPECT_EQ(peer.peer->to, 1u);
  EXPECT_EQ(p.streams()[*p.ops()[5].stream].name, "default@gpu1");
  EXPECT_EQ(p.ops()[6].device, 1u);
  EXPECT_EQ(p.ops()[7].device, 1u);
  const std::string text = io::to_spec(p);
  EXPECT_TRUE(contains(text, "devices: 2")) << text;
  EXPECT_TRUE(contains(text, "op: peer")) << text;
  const Program again = io::parse_spec(text, "again.yaml").program;
  EXPECT_EQ(io::to_spec(again), text);
}

TEST(MultiDevice, SpecErrorsNameTheField) {
  const auto error_in = [](const std::string& text) {
    return message_of([&] { (void)io::parse_spec(text, "bad.yaml"); });
  };
  const std::string outside =
      error_in("devices: 2\nstreams: [{name: s, device: 2}]\nops: [{op: kernel, stream: s, time: 1}]\n");
  EXPECT_TRUE(contains(outside, "bad.yaml:2")) << outside;
  EXPECT_TRUE(contains(outside, "device 2 is not one of the 2 declared")) << outside;
  const std::string no_end =
      error_in("streams: [{name: s, device: 2}]\nops: [{op: peer, stream: s, from: 0, to: 1, time: 1}]\n");
  EXPECT_TRUE(contains(no_end, "neither end of the peer copy")) << no_end;
  const std::string missing = error_in("streams: [s]\nops: [{op: peer, stream: s, to: 1, time: 1}]\n");
  EXPECT_TRUE(contains(missing, "from")) << missing;
  const std::string beside_pipeline =
      error_in("devices: 2\npipeline: {chunks: 2, stage_time: {kernel: 1}}\n");
  EXPECT_TRUE(contains(beside_pipeline, "not allowed beside pipeline:")) << beside_pipeline;
}

}  // namespace
