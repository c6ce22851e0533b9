// FeedShape: the Program of a feed, timed on a hand-computed timeline (unit
// model: every op takes its given time, copies 1 ms per 1e6 bytes), proved
// race-free with its backpressure waits and racy without them.
#include "overlap/core/feed_shape.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "overlap/check/races.hpp"
#include "overlap/core/error.hpp"
#include "overlap/sim/simulator.hpp"

namespace {

using namespace overlap;

const Span& span_named(const Timeline& t, const std::string& label, std::size_t item) {
  for (const Span& s : t.spans) {
    if (s.label == label && s.item == std::to_string(item)) return s;
  }
  ADD_FAILURE() << "no span " << label << " of item " << item;
  static const Span none{};
  return none;
}

// The host span of the producer of `item` (host spans carry the op, not its item).
const HostSpan& produce_span(const Timeline& t, const Program& p, std::size_t item) {
  for (const HostSpan& s : t.host_spans) {
    const Op& op = p.ops()[s.op];
    if (op.kind == op_kind::host_work && op.label == "Produce" && op.item == std::to_string(item)) return s;
  }
  ADD_FAILURE() << "no host span for the producer of item " << item;
  static const HostSpan none{};
  return none;
}

template <typename S>
void expect_at(const S& s, double start, double end, const std::string& what) {
  EXPECT_NEAR(s.start, start, 1e-9) << what;
  EXPECT_NEAR(s.end, end, 1e-9) << what;
}

// Ping-pong, 3 items, every stage 1 ms.
FeedShape ping_pong(feed_streams streams = feed_streams::by_slot) {
  FeedShape shape;
  shape.streams = streams;
  shape.slots = 2;
  shape.items = {{1'000'000, 1'000'000}, {1'000'000, 1'000'000}, {1'000'000, 1'000'000}};
  shape.producer_time = 1.0;
  shape.consumer_time = 1.0;
  shape.kernel_time = 1.0;
  return shape;
}

TEST(FeedShape, PingPongBySlotOnAHandComputedTimeline) {
  const Program p = make_feed_program(ping_pong());
  EXPECT_EQ(p.streams().size(), 3U);  // two slots and the consumer
  const Timeline t = sim::simulate(p, DeviceModel::preset("unit"));
  // Item 0 starts when it is produced; item 1 is produced meanwhile.
  expect_at(produce_span(t, p, 0), 0.0, 1.0, "produce 0");
  expect_at(span_named(t, "H2D", 0), 1.0, 2.0, "H2D 0");
  expect_at(span_named(t, "Kernel", 0), 2.0, 3.0, "kernel 0");
  expect_at(span_named(t, "D2H", 0), 3.0, 4.0, "D2H 0");
  expect_at(span_named(t, "Consume", 0), 4.0, 5.0, "consume 0");
  expect_at(produce_span(t, p, 1), 1.0, 2.0, "produce 1");
  expect_at(span_named(t, "H2D", 1), 2.0, 3.0, "H2D 1");
  expect_at(span_named(t, "Kernel", 1), 3.0, 4.0, "kernel 1");
  expect_at(span_named(t, "D2H", 1), 4.0, 5.0, "D2H 1");
  expect_at(span_named(t, "Consume", 1), 5.0, 6.0, "consume 1");
  // Item 2 reuses slot 0: produced once item 0's upload is done (at 2), and
  // uploaded once the slot's stream has run item 0's download (at 4); its
  // download would also wait for the consumer to finish item 0 (at 5).
  expect_at(produce_span(t, p, 2), 2.0, 3.0, "produce 2");
  expect_at(span_named(t, "H2D", 2), 4.0, 5.0, "H2D 2");
  expect_at(span_named(t, "Kernel", 2), 5.0, 6.0, "kernel 2");
  expect_at(span_named(t, "D2H", 2), 6.0, 7.0, "D2H 2");
  expect_at(span_named(t, "Consume", 2), 7.0, 8.0, "consume 2");
  EXPECT_NEAR(t.total(), 8.0, 1e-9);

  // A consumer slower than the slot's stream holds the next download back.
  FeedShape slow = ping_pong();
  slow.consumer_time = 3.0;
  const Program q = make_feed_program(slow);
  const Timeline u = sim::simulate(q, DeviceModel::preset("unit"));
  expect_at(span_named(u, "Consume", 0), 4.0, 7.0, "slow consume 0");
  expect_at(span_named(u, "Kernel", 2), 5.0, 6.0, "kernel 2 before the slow consumer is done");
  expect_at(span_named(u, "D2H", 2), 7.0, 8.0, "D2H 2 after the slow consumer of item 0");
}

TEST(FeedShape, PingPongByStageOnAHandComputedTimeline) {
  const Program p = make_feed_program(ping_pong(feed_streams::by_stage));
  EXPECT_EQ(p.streams().size(), 4U);                       // upload, compute, download and the consumer
  EXPECT_EQ(FeedShape{}.streams, feed_streams::by_stage);  // the default, as the Feed's
  const Timeline t = sim::simulate(p, DeviceModel::preset("unit"));
  // Items 0 and 1 as by slot, their stages on three streams.
  expect_at(span_named(t, "H2D", 0), 1.0, 2.0, "H2D 0");
  expect_at(span_named(t, "Kernel", 0), 2.0, 3.0, "kernel 0");
  expect_at(span_named(t, "D2H", 0), 3.0, 4.0, "D2H 0");
  expect_at(span_named(t, "H2D", 1), 2.0, 3.0, "H2D 1");
  expect_at(span_named(t, "Kernel", 1), 3.0, 4.0, "kernel 1");
  expect_at(span_named(t, "D2H", 1), 4.0, 5.0, "D2H 1");
  expect_at(span_named(t, "Consume", 1), 5.0, 6.0, "consume 1");
  // Item 2 reuses slot 0: uploaded once item 0's kernel is done with the
  // slot's device input (at 3), not once its download is (at 4); its kernel
  // waits for item 0's download (at 4), its download for the consumer of
  // item 0 (at 5): one stage earlier than by slot.
  expect_at(produce_span(t, p, 2), 2.0, 3.0, "produce 2");
  expect_at(span_named(t, "H2D", 2), 3.0, 4.0, "H2D 2");
  expect_at(span_named(t, "Kernel", 2), 4.0, 5.0, "kernel 2");
  expect_at(span_named(t, "D2H", 2), 5.0, 6.0, "D2H 2");
  expect_at(span_named(t, "Consume", 2), 6.0, 7.0, "consume 2");
  EXPECT_NEAR(t.total(), 7.0, 1e-9);
}

TEST(FeedShape, AProducerSlowerThanTheGpuSetsThePace) {
  FeedShape shape = ping_pong();
  shape.items.assign(10, FeedItem{1'000'000, 1'000'000});
  shape.producer_time = 5.0;
  shape.slots = 3;
  const Timeline t = sim::simulate(make_feed_program(shape), DeviceModel::preset("unit"));
  // 10 productions back to back, then the last item's H2D, kernel, D2H and consumer.
  EXPECT_NEAR(t.total(), 10 * 5.0 + 4.0, 1e-9);
}

class FeedLayout : public testing::TestWithParam<feed_streams> {};

TEST_P(FeedLayout, TheProgramIsRaceFreeAndRacyWithoutItsBackpressureWaits) {
  FeedShape shape = ping_pong(GetParam());
  shape.items.assign(6, FeedItem{4096, 2048});
  const Program p = make_feed_program(shape);
  EXPECT_TRUE(check::find_races(p).races.empty());
  EXPECT_NO_THROW(check::require_race_free(p));

  // Without the host's waits, item k + 2 overwrites slot inputs and outputs
  // that item k may still be using.
  Program unguarded = p.without_ops();
  for (const Op& op : p.ops()) {
    if (op.kind != op_kind::event_synchronize) unguarded.append(op);
  }
  const check::RaceReport races = check::find_races(unguarded);
  ASSERT_FALSE(races.races.empty());
  bool input_race = false;
  bool output_race = false;
  for (const check::Race& r : races.races) {
    input_race = input_race || r.buffer.starts_with("in_");
    output_race = output_race || r.buffer.starts_with("out_");
  }
  EXPECT_TRUE(input_race);
  EXPECT_TRUE(output_race);
}

// By stage, the device buffers are guarded by waits between the streams:
// without them, item k + 2's upload and kernel race with item k's kernel
// and download.
TEST(FeedShape, ByStageTheDeviceBuffersNeedTheWaitsBetweenStreams) {
  FeedShape shape = ping_pong(feed_streams::by_stage);
  shape.items.assign(6, FeedItem{4096, 2048});
  const Program p = make_feed_program(shape);
  Program unguarded = p.without_ops();
  for (const Op& op : p.ops()) {
    const std::string event = op.event ? p.events()[*op.event] : std::string();
    const bool guard = op.kind == op_kind::stream_wait_event &&
                       (event.starts_with("computed_") || event.starts_with("ready_"));
    if (!guard || op.stream == p.streams().size() - 1) unguarded.append(op);  // the consumer's waits stay
  }
  bool d_in_race = false;
  bool d_out_race = false;
  for (const check::Race& r : check::find_races(unguarded).races) {
    d_in_race = d_in_race || r.buffer.starts_with("d_in_");
    d_out_race = d_out_race || r.buffer.starts_with("d_out_");
  }
  EXPECT_TRUE(d_in_race);
  EXPECT_TRUE(d_out_race);
}

INSTANTIATE_TEST_SUITE_P(FeedShape, FeedLayout,
                         testing::Values(feed_streams::by_stage, feed_streams::by_slot),
                         [](const testing::TestParamInfo<feed_streams>& layout) {
                           return layout.param == feed_streams::by_stage ? std::string("ByStage")
                                                                         : std::string("BySlot");
                         });

TEST(FeedShape, ItemsWithoutOutputHaveNoDownload) {
  FeedShape shape = ping_pong();
  shape.items = {{1000, 0}, {2000, 0}};
  const Program p = make_feed_program(shape);
  for (const Op& op : p.ops()) {
    EXPECT_FALSE(op.kind == op_kind::copy && op.direction == copy_direction::d2h);
  }
}

TEST(FeedShape, AKernelCostPricesEachItemBySize) {
  FeedShape shape = ping_pong();
  shape.items = {{1 << 20, 1 << 20}, {2 << 20, 2 << 20}};
  shape.kernel_cost = KernelCost{0.5, 1.0, 0};
  const Program p = make_feed_program(shape);
  std::vector<double> kernels;
  for (const Op& op : p.ops()) {
    if (op.kind == op_kind::kernel) kernels.push_back(*op.duration);
  }
  ASSERT_EQ(kernels.size(), 2U);
  EXPECT_NEAR(kernels[0], 1.5, 1e-12);
  EXPECT_NEAR(kernels[1], 2.5, 1e-12);
}

TEST(FeedShape, BadFieldsAreNamed) {
  const auto message = [](const FeedShape& shape) {
    try {
      (void)make_feed_program(shape);
    } catch (const invalid_input& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  FeedShape s = ping_pong();
  s.slots = 0;
  EXPECT_TRUE(message(s).starts_with("slots: 0 is out of range")) << message(s);
  s = ping_pong();
  s.items.clear();
  EXPECT_TRUE(message(s).starts_with("items:")) << message(s);
  s = ping_pong();
  s.items[1].bytes_in = 0;
  EXPECT_TRUE(message(s).starts_with("items[1].bytes_in: 0")) << message(s);
  s = ping_pong();
  s.producer_time = -1.0;
  EXPECT_TRUE(message(s).starts_with("producer_time:")) << message(s);
  s = ping_pong();
  s.consumer_time = std::nan("");
  EXPECT_TRUE(message(s).starts_with("consumer_time:")) << message(s);
  s = ping_pong();
  s.kernel_time = -0.5;
  EXPECT_TRUE(message(s).starts_with("kernel_time:")) << message(s);
  s = ping_pong();
  s.kernel_cost = KernelCost{-1.0, 1.0, 0};
  EXPECT_TRUE(message(s).starts_with("kernel_cost")) << message(s);
}

TEST(FeedShape, DefaultSlotsKeepTheCopyEnginesBusy) {
  EXPECT_EQ(default_feed_slots(DeviceModel::preset("h100")), 3U);
  EXPECT_EQ(default_feed_slots(DeviceModel::preset("fermi-2ce")), 3U);
  EXPECT_EQ(default_feed_slots(DeviceModel::preset("fermi-1ce")), 2U);
}

}  // namespace
