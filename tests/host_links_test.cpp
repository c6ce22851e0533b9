// A host's shared links (issue 37, part 2): each GPU copies at its own link's
// rate, copies on several GPUs at once are held to the host's totals, and a
// measured peer pair gives its copies their time. Every case is small enough
// to compute by hand on the `unit` model (1 GB/s: 1e6 bytes take 1 ms).
#include <gtest/gtest.h>

#include <string>

#include "message_of.hpp"
#include "overlap/core/device_model.hpp"
#include "overlap/core/program.hpp"
#include "overlap/sim/simulator.hpp"
#include "sim_test_support.hpp"

namespace {

using namespace overlap;
using overlap::testing::expect_span;
using overlap::testing::message_of;

constexpr std::uint64_t MB = 1000000;  // 1 ms at the unit model's 1 GB/s

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

/// The unit model on a host of two GPUs, each 1 GB/s alone, with totals as given.
DeviceModel two_gpu_host(double h2d_total, double d2h_total, double both_total) {
  DeviceModel m = DeviceModel::preset("unit");
  HostLinks host;
  host.gpus = {{"gpu0", 1.0, 1.0, 2.0}, {"gpu1", 1.0, 1.0, 2.0}};
  host.h2d_gigabytes_per_second = h2d_total;
  host.d2h_gigabytes_per_second = d2h_total;
  host.both_gigabytes_per_second = both_total;
  m.host = host;
  return m;
}

struct TwoStreams {
  Program p;
  stream_id s0 = 0;
  stream_id s1 = 0;
};
TwoStreams on_two_gpus() {
  TwoStreams t;
  t.s0 = t.p.add_stream("s0", stream_kind::non_blocking, 0, 0);
  t.s1 = t.p.add_stream("s1", stream_kind::non_blocking, 0, 1);
  return t;
}

TEST(HostLinks, CopiesOnTwoGpusShareTheHostsTotal) {
  auto [p, s0, s1] = on_two_gpus();
  const auto a = p.copy(s0, copy_direction::h2d, MB);
  const auto b = p.copy(s1, copy_direction::h2d, MB);
  // Each asks 1 GB/s; the host gives 1.5 in all: 0.75 each, 1e6 bytes in 4/3 ms.
  const Timeline t = sim::simulate(p, two_gpu_host(1.5, 10.0, 10.0));
  expect_span(t, a, 0.0, 4.0 / 3.0);
  expect_span(t, b, 0.0, 4.0 / 3.0);
  // A host that gives both GPUs their full rate holds neither back.
  const Timeline free = sim::simulate(p, two_gpu_host(2.0, 2.0, 4.0));
  expect_span(free, a, 0.0, 1.0);
  expect_span(free, b, 0.0, 1.0);
}

TEST(HostLinks, ACopyRunsFasterOnceTheOtherGpuStops) {
  auto [p, s0, s1] = on_two_gpus();
  const auto a = p.copy(s0, copy_direction::d2h, MB);
  const auto b = p.copy(s1, copy_direction::d2h, 2 * MB);
  // 0.5 GB/s each while both run: a ends at 2 ms; b has moved 1e6 bytes and
  // moves the rest alone at 1 GB/s, ending at 3 ms.
  const Timeline t = sim::simulate(p, two_gpu_host(10.0, 1.0, 10.0));
  expect_span(t, a, 0.0, 2.0);
  expect_span(t, b, 0.0, 3.0);
}

TEST(HostLinks, BothDirectionsTogetherAreHeldToTheBothWaysTotal) {
  auto [p, s0, s1] = on_two_gpus();
  const auto up = p.copy(s0, copy_direction::h2d, MB);
  const auto down = p.copy(s1, copy_direction::d2h, MB);
  // Each direction is within its own total (10), both together ask 2 of a 1 GB/s total: 0.5 each.
  const Timeline t = sim::simulate(p, two_gpu_host(10.0, 10.0, 1.0));
  expect_span(t, up, 0.0, 2.0);
  expect_span(t, down, 0.0, 2.0);
}

TEST(HostLinks, OneGpuCopyingAloneKeepsItsOwnRate) {
  // Totals below one GPU's rate describe GPUs copying together, not one alone.
  auto [p, s0, s1] = on_two_gpus();
  const auto a = p.copy(s0, copy_direction::h2d, MB);
  const auto k = p.kernel(s1, 5.0);
  const Timeline t = sim::simulate(p, two_gpu_host(0.5, 0.5, 0.5));
  expect_span(t, a, 0.0, 1.0);
  expect_span(t, k, 0.0, 5.0);
  Program one;
  const auto s = one.add_stream("s", stream_kind::non_blocking);
  const auto c = one.copy(s, copy_direction::h2d, MB);
  expect_span(sim::simulate(one, two_gpu_host(0.5, 0.5, 0.5)), c, 0.0, 1.0);
}

TEST(HostLinks, EachGpuCopiesAtItsOwnLinksRate) {
  DeviceModel m = two_gpu_host(10.0, 10.0, 10.0);
  m.host->gpus[1].h2d_gigabytes_per_second = 0.5;  // GPU 1's link moves H2D at half GPU 0's rate
  auto [p, s0, s1] = on_two_gpus();
  const auto a = p.copy(s0, copy_direction::h2d, MB);
  const auto b = p.copy(s1, copy_direction::h2d, MB);
  const auto c = p.copy(s1, copy_direction::d2h, MB);  // its D2H rate is GPU 0's
  const auto timed = p.copy(s0, copy_direction::h2d, MB, host_memory::pinned, 0.25);  // a given time stays
  const Timeline t = sim::simulate(p, m);
  expect_span(t, a, 0.0, 1.0);
  expect_span(t, b, 0.0, 2.0);
  expect_span(t, c, 2.0, 3.0);
  expect_span(t, timed, 1.0, 1.25);
}

TEST(HostLinks, AMeasuredPeerPairTimesItsCopies) {
  DeviceModel m = two_gpu_host(10.0, 10.0, 10.0);
  PeerLink link;
  link.from = 0;
  link.to = 1;
  link.rate.points = {{MB, 2.0}, {64 * MB, 4.0}};
  link.direct = true;
  m.host->peers.push_back(link);
  auto [p, s0, s1] = on_two_gpus();
  const auto there = p.copy_peer(s0, {0, 1}, MB);     // 2 GB/s: 0.5 ms
  const auto back = p.copy_peer(s1, {1, 0}, MB);      // unmeasured: the model's peer curve, 1 GB/s
  const auto big = p.copy_peer(s0, {0, 1}, 64 * MB);  // 4 GB/s: 16 ms
  const Timeline t = sim::simulate(p, m);
  expect_span(t, there, 0.0, 0.5);
  expect_span(t, back, 0.0, 1.0);
  expect_span(t, big, 0.5, 16.5);
}

TEST(HostLinks, AProgramOnMoreGpusThanTheHostHasIsRefused) {
  Program p;
  const auto s = p.add_stream("s", stream_kind::non_blocking, 0, 2);
  p.kernel(s, 1.0);
  EXPECT_TRUE(contains(message_of([&] { (void)sim::simulate(p, two_gpu_host(1.0, 1.0, 1.0)); }),
                       "describes a host of 2 GPU(s); the program uses 3"));
}

TEST(HostLinks, RoundTripsThroughJson) {
  DeviceModel m = two_gpu_host(40.5, 41.25, 70.0);
  m.host->gpus[1].name = "NVIDIA H100 80GB HBM3";
  PeerLink link;
  link.from = 1;
  link.to = 0;
  link.rate.points = {{MB, 100.0}, {64 * MB, 300.0}};
  link.direct = true;
  m.host->peers.push_back(link);
  const DeviceModel back = DeviceModel::from_json(m.to_json());
  ASSERT_TRUE(back.host.has_value());
  ASSERT_EQ(back.host->gpus.size(), 2u);
  EXPECT_EQ(back.host->gpus[1].name, "NVIDIA H100 80GB HBM3");
  EXPECT_DOUBLE_EQ(back.host->gpus[1].both_gigabytes_per_second, 2.0);
  EXPECT_DOUBLE_EQ(back.host->h2d_gigabytes_per_second, 40.5);
  EXPECT_DOUBLE_EQ(back.host->d2h_gigabytes_per_second, 41.25);
  EXPECT_DOUBLE_EQ(back.host->both_gigabytes_per_second, 70.0);
  ASSERT_EQ(back.host->peers.size(), 1u);
  EXPECT_EQ(back.host->peers[0].from, 1u);
  EXPECT_TRUE(back.host->peers[0].direct);
  EXPECT_DOUBLE_EQ(back.host->peers[0].rate.at(64 * MB), 300.0);
  EXPECT_EQ(back.to_json(), m.to_json());
  // A model without host links writes none.
  EXPECT_FALSE(contains(DeviceModel::preset("h100").to_json(), "\"host\""));
}

TEST(HostLinks, BadHostLinksAreRefusedNamingTheField) {
  const std::string base = R"({"base": "unit", "host": )";
  const auto error_of = [&](const std::string& host) {
    return message_of([&] { (void)DeviceModel::from_json(base + host + "}"); });
  };
  const std::string gpu = R"({"h2d_gbps": 50, "d2h_gbps": 50, "both_gbps": 90})";
  const std::string totals = R"("h2d_gbps": 90, "d2h_gbps": 90, "both_gbps": 150)";
  EXPECT_TRUE(contains(error_of(R"({"gpus": [], )" + totals + "}"), "host.gpus: needs at least one GPU"));
  EXPECT_TRUE(contains(error_of(R"({"gpus": [{"h2d_gbps": 50, "d2h_gbps": 50}], )" + totals + "}"),
                       "host.gpus[0].both_gbps: missing"));
  EXPECT_TRUE(
      contains(error_of(R"({"gpus": [{"h2d_gbps": 0, "d2h_gbps": 50, "both_gbps": 1}], )" + totals + "}"),
               "host.gpus[0].h2d_gbps: 0 is out of range"));
  EXPECT_TRUE(contains(error_of(R"({"gpus": [)" + gpu + R"(], "h2d_gbps": 90, "d2h_gbps": 90})"),
                       "host.both_gbps: missing"));
  EXPECT_TRUE(contains(error_of(R"({"gpus": [)" + gpu + "], " + totals + R"(, "lanes": 4})"),
                       "host: unknown field 'lanes'"));
  const std::string two = R"({"gpus": [)" + gpu + "," + gpu + "], " + totals;
  EXPECT_TRUE(
      contains(error_of(two + R"(, "peers": [{"from": 0, "to": 0, "curve": [{"bytes": 1, "gbps": 1}]}]})"),
               "host.peers[0]: from and to are both GPU 0"));
  EXPECT_TRUE(
      contains(error_of(two + R"(, "peers": [{"from": 0, "to": 2, "curve": [{"bytes": 1, "gbps": 1}]}]})"),
               "host.peers[0]: GPU 0 to 2, but the host lists 2 GPUs"));
  EXPECT_TRUE(
      contains(error_of(two + R"(, "peers": [{"from": 0, "to": 1}]})"), "host.peers[0].curve: missing"));
  EXPECT_TRUE(contains(error_of(two + R"(, "peers": [{"from": -1, "to": 1, "curve": []}]})"),
                       "host.peers[0].from: expected a device number"));
}

}  // namespace
