// Joining per-GPU parts of one job (a Pipeline over several GPUs) into one
// Program and Timeline: names prefixed by GPU, streams and ops moved to their
// GPU, ids renumbered.
#include "overlap/core/program_join.hpp"

#include <gtest/gtest.h>

#include <string>

#include "message_of.hpp"
#include "overlap/sim/simulator.hpp"

namespace {

using namespace overlap;
using overlap::testing::message_of;

/// A part as a Pipeline's: one stream, an event, a copy, a kernel with an access, a device sync.
Program part_program() {
  Program p;
  const auto s = p.add_stream("Stream1", stream_kind::non_blocking);
  const auto e = p.add_event("slot0_free");
  p.copy(s, copy_direction::h2d, 1000000);
  p.kernel(s, 2.0);
  p.last().accesses.push_back({"ring0", 0, 64, access_mode::write});
  p.record(e, s);
  p.synchronize_device(0);
  return p;
}

TEST(ProgramJoin, PartsLandOnTheirGpusRenamedAndRenumbered) {
  Program joined;
  const Program part = part_program();
  const JoinedIds first = append_on_device(joined, part, 0);
  const JoinedIds second = append_on_device(joined, part, 1);
  EXPECT_EQ(first.first_op, 0u);
  EXPECT_EQ(second.first_op, part.ops().size());
  ASSERT_EQ(joined.streams().size(), 2u);
  EXPECT_EQ(joined.streams()[second.streams[0]].name, "gpu1.Stream1");
  EXPECT_EQ(joined.streams()[second.streams[0]].device, 1u);
  EXPECT_EQ(joined.events()[1], "gpu1.slot0_free");
  EXPECT_EQ(joined.device_count(), 2u);
  const Op& kernel = joined.ops()[second.first_op + 1];
  EXPECT_EQ(kernel.stream, std::optional<stream_id>(second.streams[0]));
  EXPECT_EQ(kernel.accesses.at(0).buffer, "gpu1.ring0");
  const Op& record = joined.ops()[second.first_op + 2];
  EXPECT_EQ(record.event, std::optional<event_id>(1));
  EXPECT_EQ(joined.ops()[second.first_op + 3].device, 1u);  // the part's device sync waits for GPU 1
  // The same part twice on one GPU clashes by name, and says so.
  EXPECT_NE(message_of([&] { (void)append_on_device(joined, part, 1); }).find("gpu1.Stream1"),
            std::string::npos);
}

TEST(ProgramJoin, TimelinesJoinWithTheirIdsAndOffsets) {
  const Program part = part_program();
  const DeviceModel unit = DeviceModel::preset("unit");
  const Timeline alone = sim::simulate(part, unit);
  Program joined;
  Timeline t;
  const JoinedIds a = append_on_device(joined, part, 0);
  append_on_device(t, alone, a);
  const JoinedIds b = append_on_device(joined, part, 1);
  append_on_device(t, alone, b, 0.5);
  ASSERT_EQ(t.spans.size(), 2 * alone.spans.size());
  const Span& copy_on_1 = t.spans[alone.spans.size()];
  EXPECT_EQ(copy_on_1.op, b.first_op);
  EXPECT_EQ(copy_on_1.stream, b.streams[0]);
  EXPECT_DOUBLE_EQ(copy_on_1.start, alone.spans[0].start + 0.5);
  EXPECT_DOUBLE_EQ(copy_on_1.end, alone.spans[0].end + 0.5);
  EXPECT_EQ(t.host_spans.size(), 2 * alone.host_spans.size());
  EXPECT_EQ(t.host_spans[alone.host_spans.size()].op, alone.host_spans[0].op + b.first_op);
}

}  // namespace
