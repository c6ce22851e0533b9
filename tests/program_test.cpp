#include "overlap/core/program.hpp"

#include <gtest/gtest.h>

#include "overlap/core/error.hpp"

namespace {

using namespace overlap;

TEST(Program, BuildersAppendInIssueOrderWithDefaultLabels) {
  Program p;
  const stream_id s = p.add_stream("s1");
  p.copy(s, copy_direction::h2d, 1024);
  p.kernel(s, 2.0, 0.5);
  p.copy(s, copy_direction::d2h, 1024);
  ASSERT_EQ(p.ops().size(), 3u);
  EXPECT_EQ(p.ops()[0].label, "H2D");
  EXPECT_EQ(p.ops()[1].label, "Kernel");
  EXPECT_DOUBLE_EQ(p.ops()[1].gpu_share, 0.5);
  EXPECT_EQ(p.ops()[2].label, "D2H");
}

TEST(Program, LegacyDefaultStreamIsCreatedOnceOnFirstUse) {
  Program p;
  const stream_id a = p.legacy_default_stream();
  const stream_id b = p.legacy_default_stream();
  EXPECT_EQ(a, b);
  EXPECT_EQ(p.streams()[a].kind, stream_kind::legacy_default);
  EXPECT_EQ(p.streams()[a].name, "default");
}

TEST(Program, WithoutOpsKeepsStreamsEventsNameAndUnitSoOpsCanBeAppendedAgain) {
  Program p;
  p.name = "edited";
  p.time_unit = "us";
  const stream_id legacy = p.legacy_default_stream();
  const stream_id s = p.add_stream("s1", stream_kind::non_blocking, -1);
  const event_id e = p.add_event("done");
  p.kernel(s, 2.0);
  p.record(e, s);
  p.wait(legacy, e);

  Program q = p.without_ops();
  EXPECT_TRUE(q.ops().empty());
  EXPECT_EQ(q.name, "edited");
  EXPECT_EQ(q.time_unit, "us");
  ASSERT_EQ(q.streams().size(), 2u);
  EXPECT_EQ(q.streams()[legacy].kind, stream_kind::legacy_default);
  EXPECT_EQ(q.streams()[s].kind, stream_kind::non_blocking);
  EXPECT_EQ(q.streams()[s].priority, -1);
  EXPECT_EQ(q.events(), p.events());
  for (const Op& op : p.ops()) q.append(op);  // every id still resolves
  EXPECT_EQ(q.ops().size(), 3u);
  EXPECT_EQ(p.ops().size(), 3u);  // the original keeps its ops
}

TEST(Program, CopiesShareOpsUntilOneChangesAndNeitherSeesTheOthersChanges) {
  Program p;
  const stream_id s = p.add_stream("s1");
  const event_id e = p.add_event("e");
  p.copy(s, copy_direction::h2d, 64);
  p.record(e, s);

  const Program shared = p;
  EXPECT_EQ(&shared.ops(), &p.ops());  // a copy costs a reference count, not the ops
  Program changed = p;
  changed.kernel(changed.add_stream("s2", stream_kind::non_blocking, 0, 1), 1.0);
  changed.last().label = "relabelled";
  changed.add_event("e2");

  // The original and its other copy keep what they had...
  ASSERT_EQ(p.ops().size(), 2u);
  EXPECT_EQ(p.streams().size(), 1u);
  EXPECT_EQ(p.events().size(), 1u);
  EXPECT_EQ(p.device_count(), 1u);
  EXPECT_FALSE(p.find_stream("s2"));
  EXPECT_FALSE(p.find_event("e2"));
  EXPECT_EQ(&shared.ops(), &p.ops());
  // ... and the changed copy has its own.
  ASSERT_EQ(changed.ops().size(), 3u);
  EXPECT_EQ(changed.ops()[2].label, "relabelled");
  EXPECT_EQ(changed.device_count(), 2u);
  EXPECT_TRUE(changed.find_stream("s2"));
  EXPECT_TRUE(changed.find_event("e2"));

  // Changing the original after copying leaves the copy as it was.
  p.last().label = "mine";
  EXPECT_EQ(p.ops()[1].label, "mine");
  EXPECT_NE(shared.ops()[1].label, "mine");
}

TEST(Program, RejectsBadArgumentsNamingThem) {
  Program p;
  const stream_id s = p.add_stream("s1");
  EXPECT_THROW(p.add_stream("s1"), invalid_input);
  EXPECT_THROW(p.kernel(s, -1.0), invalid_input);
  EXPECT_THROW(p.kernel(s, 1.0, 0.0), invalid_input);
  EXPECT_THROW(p.kernel(s, 1.0, 1.5), invalid_input);
  EXPECT_THROW(p.kernel(7, 1.0), invalid_input);
  EXPECT_THROW(p.wait(s, 3), invalid_input);
  try {
    p.kernel(s, -2.0);
    FAIL() << "expected invalid_input";
  } catch (const invalid_input& e) {
    EXPECT_NE(std::string(e.what()).find("kernel: time"), std::string::npos) << e.what();
  }
  EXPECT_EQ(p.ops().size(), 0u);
}

}  // namespace
