// One test per CUDA ordering rule the checker implements, each on a program
// small enough to read, plus the race detector's byte ranges and
// require_race_free. (check_property_test.cpp checks all of it at random
// against a brute-force reference.)
#include <gtest/gtest.h>

#include <string>

#include "overlap/check/happens_before.hpp"
#include "overlap/check/races.hpp"

namespace {

using namespace overlap;
using check::HappensBefore;

Access region(std::string buffer, access_mode mode, std::uint64_t offset = 0,
              std::optional<std::uint64_t> size = std::nullopt) {
  return Access{std::move(buffer), offset, size, mode};
}

TEST(CheckHappensBefore, StreamOrderOnlyWithinAStream) {
  Program p;
  const auto s1 = p.add_stream("s1", stream_kind::non_blocking);
  const auto s2 = p.add_stream("s2", stream_kind::non_blocking);
  const auto a = p.kernel(s1, 1.0);
  const auto b = p.kernel(s2, 1.0);
  const auto c = p.kernel(s1, 1.0);
  const HappensBefore hb(p);
  EXPECT_TRUE(hb.ordered(a, c));
  EXPECT_FALSE(hb.ordered(c, a));
  EXPECT_TRUE(hb.concurrent(a, b));
  EXPECT_TRUE(hb.concurrent(b, c));
  EXPECT_FALSE(hb.ordered(a, a));
}

TEST(CheckHappensBefore, AWaitBindsToTheMostRecentRecordIssuedBeforeIt) {
  Program p;
  const auto s1 = p.add_stream("s1");
  const auto s2 = p.add_stream("s2");
  const auto e = p.add_event("e");
  const auto first = p.kernel(s1, 1.0);
  p.record(e, s1);
  const auto second = p.kernel(s1, 1.0);
  p.record(e, s1);  // re-recorded: later waits bind here
  const auto third = p.kernel(s1, 1.0);
  p.wait(s2, e);
  const auto after_wait = p.kernel(s2, 1.0);
  p.record(e, s1);  // issued after the wait: does not concern it
  const HappensBefore hb(p);
  EXPECT_TRUE(hb.ordered(first, after_wait));
  EXPECT_TRUE(hb.ordered(second, after_wait));
  EXPECT_FALSE(hb.ordered(third, after_wait));
}

TEST(CheckHappensBefore, AWaitOnANeverRecordedEventOrdersNothing) {
  Program p;
  const auto s1 = p.add_stream("s1");
  const auto s2 = p.add_stream("s2");
  const auto e = p.add_event("e");
  const auto a = p.kernel(s1, 1.0);
  p.wait(s2, e);
  p.record(e, s1);
  const auto b = p.kernel(s2, 1.0);
  p.synchronize_event(p.add_event("never"));
  const auto c = p.kernel(s2, 1.0);
  const HappensBefore hb(p);
  EXPECT_FALSE(hb.ordered(a, b));
  EXPECT_FALSE(hb.ordered(a, c));
}

TEST(CheckHappensBefore, TheLegacyStreamIsABarrierForBlockingStreamsOnly) {
  Program p;
  const auto blocking = p.add_stream("blocking");
  const auto per_thread = p.add_stream("per_thread", stream_kind::per_thread_default);
  const auto exempt = p.add_stream("exempt", stream_kind::non_blocking);
  const auto legacy = p.legacy_default_stream();
  const auto b1 = p.kernel(blocking, 1.0);
  const auto n1 = p.kernel(exempt, 1.0);
  const auto l = p.kernel(legacy, 1.0);
  const auto b2 = p.kernel(per_thread, 1.0);
  const auto n2 = p.kernel(exempt, 1.0);
  const HappensBefore hb(p);
  EXPECT_TRUE(hb.ordered(b1, l));   // the legacy stream waits for blocking streams' work
  EXPECT_TRUE(hb.ordered(l, b2));   // and later blocking work (per-thread default too) waits for it
  EXPECT_TRUE(hb.ordered(b1, b2));  // so the barrier orders them through it
  EXPECT_FALSE(hb.ordered(n1, l));  // non-blocking streams are exempt both ways
  EXPECT_FALSE(hb.ordered(l, n2));
}

TEST(CheckHappensBefore, HostSynchronizationOrdersWhatItWaitedForBeforeLaterOps) {
  Program p;
  const auto s1 = p.add_stream("s1");
  const auto s2 = p.add_stream("s2");
  const auto a = p.kernel(s1, 1.0);
  const auto b = p.kernel(s2, 1.0);
  p.synchronize(s1);
  const auto c = p.kernel(s2, 1.0);
  const auto host = p.host_work(1.0);
  const HappensBefore hb(p);
  EXPECT_TRUE(hb.ordered(a, c));  // s1 was waited for
  EXPECT_TRUE(hb.ordered(b, c));  // stream order
  EXPECT_TRUE(hb.ordered(a, host));
  EXPECT_FALSE(hb.ordered(b, host));  // s2 was not
  EXPECT_FALSE(hb.ordered(c, host));
}

TEST(CheckHappensBefore, DrainsAndBlockingCopiesOrderEverythingBefore) {
  for (const op_kind drain : {op_kind::device_synchronize, op_kind::device_allocate, op_kind::device_free,
                              op_kind::host_allocate, op_kind::host_free}) {
    Program p;
    const auto s1 = p.add_stream("s1", stream_kind::non_blocking);
    const auto s2 = p.add_stream("s2", stream_kind::non_blocking);
    const auto a = p.kernel(s1, 1.0);
    if (drain == op_kind::device_synchronize) {
      p.synchronize_device();
    } else {
      p.implicit_sync(drain);
    }
    const auto b = p.kernel(s2, 1.0);
    EXPECT_TRUE(HappensBefore(p).ordered(a, b)) << to_string(drain);
  }
  Program p;
  const auto s1 = p.add_stream("s1", stream_kind::non_blocking);
  const auto s2 = p.add_stream("s2", stream_kind::non_blocking);
  const auto pageable = p.copy(s1, copy_direction::h2d, 0, host_memory::pageable, 1.0);
  const auto pinned = p.copy(s1, copy_direction::h2d, 0, host_memory::pinned, 1.0);
  const auto later = p.kernel(s2, 1.0);
  const HappensBefore hb(p);
  EXPECT_TRUE(hb.ordered(pageable, later));  // the host waited for it
  EXPECT_FALSE(hb.ordered(pinned, later));
}

TEST(CheckHappensBefore, HostFunctionsRunInStreamOrderOnly) {
  Program p;
  const auto s1 = p.add_stream("s1");
  const auto a = p.kernel(s1, 1.0);
  const auto callback = p.host_function(s1, 1.0);
  const auto host = p.host_work(1.0);
  const HappensBefore hb(p);
  EXPECT_TRUE(hb.ordered(a, callback));
  EXPECT_TRUE(hb.concurrent(callback, host));  // the callback runs on the driver's thread
}

TEST(CheckRaces, OnlyOverlappingBytesWithAWriteRace) {
  Program p;
  const auto s1 = p.add_stream("s1");
  const auto s2 = p.add_stream("s2");
  p.kernel(s1, 1.0);
  p.last().accesses = {region("buf", access_mode::write, 0, 16)};
  p.kernel(s2, 1.0);  // bytes 16..32: disjoint
  p.last().accesses = {region("buf", access_mode::write, 16, 16)};
  p.kernel(s2, 1.0);  // reads what the first wrote, from byte 8 to the end
  p.last().accesses = {region("buf", access_mode::read, 8)};
  p.kernel(s1, 1.0);  // reads only: no race with the read above
  p.last().accesses = {region("buf", access_mode::read, 20, 4)};
  p.kernel(s2, 1.0);  // zero bytes touch nothing
  p.last().accesses = {region("buf", access_mode::write, 0, 0)};
  const check::RaceReport report = check::find_races(p);
  ASSERT_EQ(report.races.size(), 2u);
  EXPECT_EQ(report.races[0].first, 0u);
  EXPECT_EQ(report.races[0].second, 2u);
  EXPECT_EQ(report.races[0].begin, 8u);
  EXPECT_EQ(report.races[0].end, std::optional<std::uint64_t>(16));
  EXPECT_EQ(report.races[1].first, 1u);  // s2's write of 16..32 and s1's read of 20..24
  EXPECT_EQ(report.races[1].second, 3u);
  EXPECT_EQ(report.races[1].begin, 20u);
  EXPECT_EQ(report.races[1].end, std::optional<std::uint64_t>(24));
}

TEST(CheckRaces, ManyRacesStopAtTheLimit) {
  Program p;
  const auto s1 = p.add_stream("s1");
  const auto s2 = p.add_stream("s2");
  for (int i = 0; i < 10; ++i) {
    p.kernel(i % 2 == 0 ? s1 : s2, 1.0);
    p.last().accesses = {region("buf", access_mode::write)};
  }
  EXPECT_EQ(check::find_races(p).races.size(), 25u);  // every s1 op with every s2 op
  const check::RaceReport limited = check::find_races(p, check::RaceOptions{4});
  EXPECT_EQ(limited.races.size(), 4u);
  EXPECT_TRUE(limited.truncated);
}

TEST(CheckRaces, RequireRaceFreeNamesTheRaceAndItsFix) {
  Program p;
  p.name = "numba";
  const auto s1 = p.add_stream("stream1");
  const auto s2 = p.add_stream("stream2");
  p.kernel(s1, 1.0);
  p.last().label = "kernel1";
  p.last().accesses = {region("y", access_mode::write)};
  p.kernel(s2, 1.0);
  p.last().label = "kernel2";
  p.last().accesses = {region("y", access_mode::read)};
  try {
    check::require_race_free(p);
    FAIL() << "no race_error";
  } catch (const check::race_error& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "numba is not race-free: 1 race: ops[0] kernel 'kernel1' on stream1 writes y and ops[1] kernel "
        "'kernel2' on stream2 reads y, and nothing orders them (fix: add cudaEventRecord after ops[0] on "
        "stream1 and cudaStreamWaitEvent(stream2) before ops[1])");
    ASSERT_EQ(e.races().size(), 1u);
    EXPECT_EQ(e.races()[0].second, 1u);
  }
  // overlap::error is the family a caller catches.
  EXPECT_THROW(check::require_race_free(p), overlap::error);

  const auto ready = p.add_event("y_ready");
  Program fixed;
  fixed.add_stream("stream1");
  fixed.add_stream("stream2");
  fixed.add_event("y_ready");
  fixed.append(p.ops()[0]);
  fixed.record(ready, s1);
  fixed.wait(s2, ready);
  fixed.append(p.ops()[1]);
  EXPECT_NO_THROW(check::require_race_free(fixed));
}

}  // namespace
