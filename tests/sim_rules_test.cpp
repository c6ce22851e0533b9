// One test per rule of the device model, each with a hand-computed timeline.
// The `unit` model makes every op take exactly its given time, so the
// expected numbers follow from the rule alone.
#include <gtest/gtest.h>

#include "overlap/core/device_model.hpp"
#include "overlap/core/program.hpp"
#include "overlap/sim/simulator.hpp"
#include "sim_test_support.hpp"

namespace {

using namespace overlap;
using overlap::testing::expect_span;
using overlap::testing::span_of;

const DeviceModel unit_model = DeviceModel::preset("unit");

TEST(SimRules, SameDirectionCopiesSerializeAcrossStreams) {
  Program p;
  const auto s1 = p.add_stream("s1");
  const auto s2 = p.add_stream("s2");
  const auto a = p.copy(s1, copy_direction::h2d, 0, host_memory::pinned, 2.0);
  const auto b = p.copy(s2, copy_direction::h2d, 0, host_memory::pinned, 3.0);
  const Timeline t = sim::simulate(p, unit_model);
  expect_span(t, a, 0.0, 2.0);
  expect_span(t, b, 2.0, 5.0);
  EXPECT_EQ(span_of(t, b).waited_because, wait_reason::engine_busy);
  EXPECT_EQ(span_of(t, b).waited_for, std::optional<op_id>(a));
}

TEST(SimRules, OppositeDirectionsOverlapAndSlowEachOther) {
  Program p;
  const auto s1 = p.add_stream("s1");
  const auto s2 = p.add_stream("s2");
  const auto up = p.copy(s1, copy_direction::h2d, 0, host_memory::pinned, 4.0);
  const auto down = p.copy(s2, copy_direction::d2h, 0, host_memory::pinned, 3.0);

  // Ideal engines: both run at full speed side by side.
  const Timeline ideal = sim::simulate(p, unit_model);
  expect_span(ideal, up, 0.0, 4.0);
  expect_span(ideal, down, 0.0, 3.0);

  // H2D at half speed and D2H at 1/1.5 while both run: D2H ends at 3 * 1.5 =
  // 4.5, when H2D has done 4.5 / 2 = 2.25 of 4; the rest runs alone: 6.25.
  DeviceModel slowed = unit_model;
  slowed.h2d_slowdown_when_bidirectional = 2.0;
  slowed.d2h_slowdown_when_bidirectional = 1.5;
  const Timeline t = sim::simulate(p, slowed);
  expect_span(t, down, 0.0, 4.5);
  expect_span(t, up, 0.0, 6.25);
}

TEST(SimRules, OneSharedCopyEngineSerializesBothDirections) {
  Program p;
  const auto s1 = p.add_stream("s1");
  const auto s2 = p.add_stream("s2");
  const auto up = p.copy(s1, copy_direction::h2d, 0, host_memory::pinned, 4.0);
  const auto down = p.copy(s2, copy_direction::d2h, 0, host_memory::pinned, 3.0);
  DeviceModel shared = unit_model;
  shared.copy_engine_per_direction = false;
  const Timeline t = sim::simulate(p, shared);
  expect_span(t, up, 0.0, 4.0);
  expect_span(t, down, 4.0, 7.0);
}

TEST(SimRules, LegacyDefaultStreamIsABarrierForBlockingStreams) {
  Program p;
  const auto s1 = p.add_stream("s1");
  const auto s2 = p.add_stream("s2");
  const auto legacy = p.legacy_default_stream();
  const auto k1 = p.kernel(s1, 2.0, 0.25);
  const auto k0 = p.kernel(legacy, 1.0, 0.25);  // waits for all prior blocking work
  const auto k2 = p.kernel(s2, 1.0, 0.25);      // waits for the legacy kernel
  const Timeline t = sim::simulate(p, unit_model);
  expect_span(t, k1, 0.0, 2.0);
  expect_span(t, k0, 2.0, 3.0);
  expect_span(t, k2, 3.0, 4.0);
  EXPECT_EQ(span_of(t, k0).waited_because, wait_reason::default_stream);
  EXPECT_EQ(span_of(t, k2).waited_because, wait_reason::default_stream);
}

TEST(SimRules, NonBlockingStreamsAreExemptFromTheBarrier) {
  Program p;
  const auto s1 = p.add_stream("s1", stream_kind::non_blocking);
  const auto s2 = p.add_stream("s2", stream_kind::non_blocking);
  const auto legacy = p.legacy_default_stream();
  const auto k1 = p.kernel(s1, 2.0, 0.25);
  const auto k0 = p.kernel(legacy, 1.0, 0.25);
  const auto k2 = p.kernel(s2, 1.0, 0.25);
  const Timeline t = sim::simulate(p, unit_model);
  expect_span(t, k1, 0.0, 2.0);
  expect_span(t, k0, 0.0, 1.0);
  expect_span(t, k2, 0.0, 1.0);
}

TEST(SimRules, PerThreadDefaultStreamIsAnOrdinaryBlockingStream) {
  Program p;
  const auto ptds = p.add_stream("per_thread", stream_kind::per_thread_default);
  const auto other = p.add_stream("s1");
  const auto legacy = p.legacy_default_stream();
  const auto a = p.kernel(ptds, 2.0, 0.25);
  const auto b = p.kernel(other, 1.0, 0.25);   // blocking streams overlap each other
  const auto c = p.kernel(legacy, 1.0, 0.25);  // but the legacy stream waits for both
  const Timeline t = sim::simulate(p, unit_model);
  expect_span(t, a, 0.0, 2.0);
  expect_span(t, b, 0.0, 1.0);
  expect_span(t, c, 2.0, 3.0);
}

TEST(SimRules, StreamWaitsOnTheMostRecentRecordAtTheTimeOfTheWait) {
  Program p;
  const auto s1 = p.add_stream("s1");
  const auto s2 = p.add_stream("s2");
  const auto e = p.add_event("e");
  p.kernel(s1, 2.0, 0.5);
  const auto first_record = p.record(e, s1);
  p.wait(s2, e);  // binds to the record at t=2 ...
  p.kernel(s1, 3.0, 0.5);
  p.record(e, s1);  // ... not to this later one at t=5
  const auto k = p.kernel(s2, 1.0, 0.5);
  const Timeline t = sim::simulate(p, unit_model);
  expect_span(t, k, 2.0, 3.0);
  expect_span(t, first_record, 2.0, 2.0);
}

TEST(SimRules, WaitingOnANeverRecordedEventDoesNotWait) {
  Program p;
  const auto s1 = p.add_stream("s1");
  const auto s2 = p.add_stream("s2");
  const auto e = p.add_event("e");
  p.wait(s2, e);  // no record issued yet: a no-op in CUDA
  p.kernel(s1, 2.0, 0.5);
  p.record(e, s1);
  const auto k = p.kernel(s2, 1.0, 0.5);
  const Timeline t = sim::simulate(p, unit_model);
  expect_span(t, k, 0.0, 1.0);
}

TEST(SimRules, StreamSynchronizeBlocksTheHost) {
  Program p;
  const auto s1 = p.add_stream("s1");
  const auto s2 = p.add_stream("s2");
  p.kernel(s1, 5.0, 0.5);
  const auto sync = p.synchronize(s1);
  const auto k = p.kernel(s2, 1.0, 0.5);  // issued only once the host returns
  const Timeline t = sim::simulate(p, unit_model);
  expect_span(t, k, 5.0, 6.0);
  ASSERT_EQ(t.host_spans.size(), 1u);
  EXPECT_EQ(t.host_spans[0].op, sync);
  EXPECT_EQ(t.host_spans[0].activity, host_activity::blocked);
  EXPECT_DOUBLE_EQ(t.host_spans[0].start, 0.0);
  EXPECT_DOUBLE_EQ(t.host_spans[0].end, 5.0);
}

TEST(SimRules, EventAndDeviceSynchronizeBlockTheHost) {
  Program p;
  const auto s1 = p.add_stream("s1");
  const auto s2 = p.add_stream("s2");
  const auto e = p.add_event("e");
  p.kernel(s1, 2.0, 0.5);
  p.record(e, s1);
  p.kernel(s1, 3.0, 0.5);
  p.synchronize_event(e);  // returns at 2, while s1 still runs
  const auto k = p.kernel(s2, 1.0, 0.5);
  p.synchronize_device();  // returns at 5
  const auto last = p.kernel(s2, 1.0, 0.5);
  const Timeline t = sim::simulate(p, unit_model);
  expect_span(t, k, 2.0, 3.0);
  expect_span(t, last, 5.0, 6.0);
}

TEST(SimRules, PageableCopyBlocksTheHost) {
  for (const host_memory memory : {host_memory::pinned, host_memory::pageable}) {
    Program p;
    const auto s1 = p.add_stream("s1");
    const auto s2 = p.add_stream("s2");
    p.copy(s1, copy_direction::h2d, 0, memory, 4.0);
    const auto k = p.kernel(s2, 1.0);
    const Timeline t = sim::simulate(p, unit_model);
    const double expected_start = memory == host_memory::pageable ? 4.0 : 0.0;
    expect_span(t, k, expected_start, expected_start + 1.0);
  }
}

TEST(SimRules, SynchronousMemcpyBlocksTheHostAndIsABarrier) {
  Program p;
  const auto s1 = p.add_stream("s1");
  const auto s2 = p.add_stream("s2");
  p.kernel(s1, 2.0, 0.5);
  const auto copy = p.copy_sync(copy_direction::h2d, 0, host_memory::pinned, 1.0);
  const auto k = p.kernel(s2, 1.0, 0.5);
  const Timeline t = sim::simulate(p, unit_model);
  expect_span(t, copy, 2.0, 3.0);
  expect_span(t, k, 3.0, 4.0);
}

TEST(SimRules, AllocationDrainsTheDevice) {
  Program p;
  const auto s1 = p.add_stream("s1");
  const auto s2 = p.add_stream("s2");
  p.kernel(s1, 3.0, 0.5);
  p.implicit_sync(op_kind::device_allocate, 0.5);  // waits for the kernel, then costs 0.5
  const auto k = p.kernel(s2, 1.0, 0.5);
  const Timeline t = sim::simulate(p, unit_model);
  expect_span(t, k, 3.5, 4.5);
}

TEST(SimRules, AKernelFillingTheGpuDelaysTheNextSmallerOnesShare) {
  Program full;
  auto a = full.add_stream("a");
  auto b = full.add_stream("b");
  full.kernel(a, 2.0, 1.0);
  const auto second = full.kernel(b, 1.0, 1.0);
  const Timeline t = sim::simulate(full, unit_model);
  expect_span(t, second, 2.0, 3.0);
  EXPECT_EQ(span_of(t, second).waited_because, wait_reason::gpu_full);

  Program halves;
  a = halves.add_stream("a");
  b = halves.add_stream("b");
  halves.kernel(a, 2.0, 0.5);
  const auto together = halves.kernel(b, 1.0, 0.5);
  expect_span(sim::simulate(halves, unit_model), together, 0.0, 1.0);
}

TEST(SimRules, WithoutSharingKernelsThatTogetherAskTooMuchRunOneAfterTheOther) {
  // Without kernels_share_sms a kernel runs at its solo speed, so two that
  // each ask 0.6 of the SMs (or 0.98, a fitted curve's large chunks) cannot
  // both run at that speed: the second starts when the first ends.
  for (const double share : {0.6, 0.98}) {
    Program p;
    const auto a = p.add_stream("a");
    const auto b = p.add_stream("b");
    p.kernel(a, 2.0, share);
    const auto second = p.kernel(b, 1.0, share);
    const Timeline t = sim::simulate(p, unit_model);
    expect_span(t, second, 2.0, 3.0);
    EXPECT_EQ(span_of(t, second).waited_because, wait_reason::gpu_full) << share;
  }
}

TEST(SimRules, AKernelStartsOnTheSmsARunningSmallOneLeavesFree) {
  // A long kernel on one SM of 100 does not hold back a full-size kernel:
  // the block scheduler runs its blocks on the other 99 (seen on the H100
  // with CuPy and PyTorch kernels beside a one-block spin).
  Program p;
  const auto a = p.add_stream("a");
  const auto b = p.add_stream("b");
  p.kernel(a, 10.0, 0.01);
  const auto big = p.kernel(b, 1.0, 1.0);
  const auto after = p.kernel(b, 1.0, 0.5);
  const Timeline t = sim::simulate(p, unit_model);
  expect_span(t, big, 0.0, 1.0);
  expect_span(t, after, 1.0, 2.0);
  // While the big one runs the GPU is full: a third stream's kernel waits for it.
  Program q;
  const auto x = q.add_stream("x");
  const auto y = q.add_stream("y");
  const auto z = q.add_stream("z");
  q.kernel(x, 10.0, 0.01);
  q.kernel(y, 1.0, 1.0);
  const auto waits = q.kernel(z, 1.0, 0.5);
  const Timeline u = sim::simulate(q, unit_model);
  expect_span(u, waits, 1.0, 2.0);
  EXPECT_EQ(span_of(u, waits).waited_because, wait_reason::gpu_full);
}

TEST(SimRules, MoreStreamsThanHardwareQueuesGainFalseDependencies) {
  Program p;
  const auto s0 = p.add_stream("s0");
  p.add_stream("s1");
  const auto s2 = p.add_stream("s2");  // shares queue 0 with s0 when there are 2 queues
  p.kernel(s0, 4.0, 0.5);
  p.copy(s0, copy_direction::d2h, 0, host_memory::pinned, 1.0);  // waits for the kernel
  const auto up = p.copy(s2, copy_direction::h2d, 0, host_memory::pinned, 1.0);

  const Timeline enough = sim::simulate(p, unit_model);
  expect_span(enough, up, 0.0, 1.0);

  DeviceModel two_queues = unit_model;
  two_queues.connections = 2;
  const Timeline t = sim::simulate(p, two_queues);
  expect_span(t, up, 4.0, 5.0);  // stuck behind s0's D2H at the head of queue 0
  EXPECT_EQ(span_of(t, up).waited_because, wait_reason::queue_head);
}

TEST(SimRules, HostFunctionsRunInStreamOrder) {
  Program p;
  const auto s1 = p.add_stream("s1");
  p.kernel(s1, 2.0);
  const auto fn = p.host_function(s1, 1.5);
  const auto after = p.kernel(s1, 1.0);
  const Timeline t = sim::simulate(p, unit_model);
  expect_span(t, fn, 2.0, 3.5);
  expect_span(t, after, 3.5, 4.5);
  EXPECT_EQ(span_of(t, fn).unit, engine::host_callback);
}

TEST(SimRules, HigherPriorityStreamsGetTheEngineFirst) {
  Program p;
  const auto low = p.add_stream("low", stream_kind::blocking, 0);
  const auto high = p.add_stream("high", stream_kind::blocking, 5);
  const auto e = p.add_event("go");
  const auto gate = p.add_stream("gate");
  p.kernel(gate, 1.0);
  p.record(e, gate);
  p.wait(low, e);
  p.wait(high, e);
  const auto k_low = p.kernel(low, 1.0);
  const auto k_high = p.kernel(high, 1.0);
  const Timeline t = sim::simulate(p, unit_model);
  expect_span(t, k_high, 1.0, 2.0);
  expect_span(t, k_low, 2.0, 3.0);
}

TEST(SimRules, HostApiCostDelaysIssue) {
  Program p;
  const auto s1 = p.add_stream("s1");
  const auto k1 = p.kernel(s1, 1.0, 0.5);
  const auto s2 = p.add_stream("s2");
  const auto k2 = p.kernel(s2, 1.0, 0.5);
  DeviceModel costly = unit_model;
  costly.api_call_cost = 0.25;
  const Timeline t = sim::simulate(p, costly);
  expect_span(t, k1, 0.25, 1.25);
  expect_span(t, k2, 0.5, 1.5);
  EXPECT_EQ(t.host_spans.size(), 2u);
}

TEST(SimRules, CopyTimeComesFromTheBandwidthCurve) {
  Program p;
  const auto s1 = p.add_stream("s1");
  const auto c = p.copy(s1, copy_direction::h2d, 2'000'000);
  DeviceModel m = unit_model;
  m.h2d_pinned = BandwidthCurve{{{1'000'000, 1.0}, {4'000'000, 4.0}}};
  m.copy_latency = 0.5;
  // 2 MB is halfway in log2 between 1 MB and 4 MB: 2.5 GB/s, 0.8 ms, + latency.
  const Timeline t = sim::simulate(p, m);
  expect_span(t, c, 0.0, 1.3);
}

}  // namespace

namespace {

TEST(SimRules, TheHostWakesUpALatencyAfterTheWorkItWaitedFor) {
  DeviceModel m = unit_model;
  m.host_wakeup_latency = 0.25;
  Program p;
  const auto s = p.add_stream("s");
  p.kernel(s, 2.0);
  p.synchronize(s);
  const auto next = p.kernel(s, 1.0);
  expect_span(sim::simulate(p, m), next, 2.25, 3.25);
  // A sync whose work is already done does not wait, and costs nothing more.
  Program q;
  const auto t = q.add_stream("t");
  q.kernel(t, 1.0);
  q.host_work(5.0);
  q.synchronize(t);
  const auto after = q.kernel(t, 1.0);
  expect_span(sim::simulate(q, m), after, 5.0, 6.0);
}

TEST(SimRules, CopiesStartALatencyAfterTheyCouldStart) {
  DeviceModel m = unit_model;
  m.copy_start_latency = 0.5;
  Program p;
  const auto s = p.add_stream("s");
  const auto first = p.copy(s, copy_direction::h2d, 0, host_memory::pinned, 1.0);
  const auto second = p.copy(s, copy_direction::h2d, 0, host_memory::pinned, 1.0);
  const Timeline t = sim::simulate(p, m);
  expect_span(t, first, 0.5, 1.5);
  expect_span(t, second, 2.0, 3.0);
}

}  // namespace
