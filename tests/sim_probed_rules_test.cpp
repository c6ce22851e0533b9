// The mechanisms `overlap probe` found on an H100, one test each on a
// hand-computed timeline (unit model: every op takes exactly its given time).
#include <gtest/gtest.h>

#include "overlap/core/device_model.hpp"
#include "overlap/core/pipeline_shape.hpp"
#include "overlap/core/program.hpp"
#include "overlap/sim/simulator.hpp"
#include "sim_test_support.hpp"

namespace {

using namespace overlap;
using overlap::testing::expect_span;

DeviceModel unit() {
  return DeviceModel::preset("unit");
}

// Two streams with two 1 ms copies each, all ready at once: stream by
// stream under stream_round_robin, interleaved by readiness otherwise.
TEST(SimProbedRules, RoundRobinArbitrationRunsCopiesStreamByStream) {
  Program p;
  const auto s1 = p.add_stream("s1");
  const auto s2 = p.add_stream("s2");
  const auto a0 = p.copy(s1, copy_direction::h2d, 0, host_memory::pinned, 1.0);
  const auto b0 = p.copy(s2, copy_direction::h2d, 0, host_memory::pinned, 1.0);
  const auto a1 = p.copy(s1, copy_direction::h2d, 0, host_memory::pinned, 1.0);
  const auto b1 = p.copy(s2, copy_direction::h2d, 0, host_memory::pinned, 1.0);

  // earliest_ready: a1 becomes ready at 1 (when a0 ends), b0 has waited since 0.
  const Timeline interleaved = sim::simulate(p, unit());
  expect_span(interleaved, a0, 0.0, 1.0);
  expect_span(interleaved, b0, 1.0, 2.0);
  expect_span(interleaved, a1, 2.0, 3.0);
  expect_span(interleaved, b1, 3.0, 4.0);

  // stream_round_robin: the engine stays on s1 while it has a copy ready.
  DeviceModel m = unit();
  m.arbitration = copy_arbitration::stream_round_robin;
  const Timeline grouped = sim::simulate(p, m);
  expect_span(grouped, a0, 0.0, 1.0);
  expect_span(grouped, a1, 1.0, 2.0);
  expect_span(grouped, b0, 2.0, 3.0);
  expect_span(grouped, b1, 3.0, 4.0);
}

// Round robin moves on to the next stream after the one served last, in
// creation order, not back to the first.
TEST(SimProbedRules, RoundRobinMovesToTheNextStreamInCreationOrder) {
  Program p;
  const auto s1 = p.add_stream("s1");
  const auto s2 = p.add_stream("s2");
  const auto s3 = p.add_stream("s3");
  const auto c2 = p.copy(s2, copy_direction::h2d, 0, host_memory::pinned, 1.0);  // issued first: starts at 0
  const auto c1 = p.copy(s1, copy_direction::h2d, 0, host_memory::pinned, 1.0);
  const auto c3 = p.copy(s3, copy_direction::h2d, 0, host_memory::pinned, 1.0);
  DeviceModel m = unit();
  m.arbitration = copy_arbitration::stream_round_robin;
  const Timeline t = sim::simulate(p, m);
  expect_span(t, c2, 0.0, 1.0);
  expect_span(t, c3, 1.0, 2.0);  // after s2 comes s3 ...
  expect_span(t, c1, 2.0, 3.0);  // ... then around to s1
}

// With start latencies hidden when queued, a copy queued behind a copy on
// its engine starts as the one before ends; one that arrives at an idle
// engine (after a kernel on its stream) pays copy_start_latency.
TEST(SimProbedRules, StartLatencyIsPaidOnlyByAnOpArrivingAtAnIdleEngine) {
  DeviceModel m = unit();
  m.copy_start_latency = 0.5;
  m.kernel_launch_latency = 0.25;
  m.start_latency_hidden_when_queued = true;
  Program p;
  const auto s = p.add_stream("s");
  const auto first = p.copy(s, copy_direction::h2d, 0, host_memory::pinned, 1.0);
  const auto second = p.copy(s, copy_direction::h2d, 0, host_memory::pinned, 1.0);
  const auto k = p.kernel(s, 1.0);
  const auto down = p.copy(s, copy_direction::d2h, 0, host_memory::pinned, 1.0);
  const Timeline t = sim::simulate(p, m);
  expect_span(t, first, 0.5, 1.5);   // the engine was idle
  expect_span(t, second, 1.5, 2.5);  // queued behind `first`: no latency
  expect_span(t, k, 2.75, 3.75);     // arrives at an idle compute engine
  expect_span(t, down, 4.25, 5.25);  // arrives at an idle D2H engine
}

// A queued op whose stream last ran on another engine still pays
// queued_handover_latency when its engine reaches it; one behind an op of
// its own engine on its stream pays nothing.
TEST(SimProbedRules, AQueuedOpAfterAnotherEnginePaysTheHandOver) {
  DeviceModel m = unit();
  m.copy_start_latency = 0.5;
  m.start_latency_hidden_when_queued = true;
  m.queued_handover_latency = 0.25;
  Program p;
  const auto s1 = p.add_stream("s1");
  const auto s2 = p.add_stream("s2");
  const auto busy = p.copy(s1, copy_direction::d2h, 0, host_memory::pinned, 3.0);
  const auto k = p.kernel(s2, 1.0);
  const auto after = p.copy(s2, copy_direction::d2h, 0, host_memory::pinned, 1.0);
  const auto tail = p.copy(s1, copy_direction::d2h, 0, host_memory::pinned, 1.0);
  const Timeline t = sim::simulate(p, m);
  expect_span(t, busy, 0.5, 3.5);  // arrives at an idle engine: the start latency
  expect_span(t, k, 0.0, 1.0);
  expect_span(t, after, 3.75, 4.75);  // ready at 1, queued: only the hand-over from the kernel
  expect_span(t, tail, 4.75, 5.75);   // behind a D2H on its own stream: nothing

  m.queued_handover_latency = 0.0;  // the older rule: everything queued starts at once
  const Timeline hidden = sim::simulate(p, m);
  expect_span(hidden, after, 3.5, 4.5);
  expect_span(hidden, tail, 4.5, 5.5);
}

// Each kind of call costs the host its own measured time.
TEST(SimProbedRules, EachKindOfCallCostsTheHostItsOwnTime) {
  DeviceModel m = unit();
  m.api_call_cost = 1.0;
  m.host_calls.copy = 0.25;
  m.host_calls.launch = 0.5;
  Program p;
  const auto s = p.add_stream("s");
  const auto up = p.copy(s, copy_direction::h2d, 0, host_memory::pinned, 1.0);
  const auto k = p.kernel(s, 1.0);
  const auto rec_event = p.add_event("e");
  const auto rec = p.record(rec_event, s);
  const auto down = p.copy(s, copy_direction::d2h, 0, host_memory::pinned, 1.0);
  const Timeline t = sim::simulate(p, m);
  expect_span(t, up, 0.25, 1.25);    // issued after 0.25
  expect_span(t, k, 1.25, 2.25);     // issued at 0.75, runs after the copy
  expect_span(t, rec, 2.25, 2.25);   // record: the default cost (1.0), issued at 1.75
  expect_span(t, down, 2.25, 3.25);  // issued at 2.0
}

// The bidirectional slowdown follows the copy size when a curve is given.
TEST(SimProbedRules, BidirectionalSlowdownFollowsTheCopySize) {
  DeviceModel m = unit();
  m.bidirectional = {{1000, 2.0, 2.0}, {4000, 1.0, 1.0}};
  Program p;
  const auto s1 = p.add_stream("s1");
  const auto s2 = p.add_stream("s2");
  // 1000-byte copies: both at half speed for as long as both run.
  const auto up = p.copy(s1, copy_direction::h2d, 1000, host_memory::pinned, 1.0);
  const auto down = p.copy(s2, copy_direction::d2h, 1000, host_memory::pinned, 1.0);
  const Timeline t = sim::simulate(p, m);
  expect_span(t, up, 0.0, 2.0);
  expect_span(t, down, 0.0, 2.0);
  // 4000 bytes and up: no slowdown; 2000 bytes: halfway in log2 -> 1.5.
  EXPECT_DOUBLE_EQ(m.bidirectional_slowdown(copy_direction::h2d, 8000), 1.0);
  EXPECT_DOUBLE_EQ(m.bidirectional_slowdown(copy_direction::d2h, 2000), 1.5);
}

// Kernels sharing the SMs: two kernels asking 0.75 of the GPU each get half
// (speed 2/3): 1.5 ms of solo time takes 2.25 ms together.
TEST(SimProbedRules, KernelsShareTheSmsWhenTheirAsksExceedTheGpu) {
  DeviceModel m = unit();
  m.kernels_share_sms = true;
  Program p;
  const auto s1 = p.add_stream("s1");
  const auto s2 = p.add_stream("s2");
  const auto a = p.kernel(s1, 1.5, 0.75);
  const auto b = p.kernel(s2, 1.5, 0.75);
  const Timeline t = sim::simulate(p, m);
  expect_span(t, a, 0.0, 2.25);
  expect_span(t, b, 0.0, 2.25);

  // Asks that fit run at full speed side by side.
  Program q;
  const auto q1 = q.add_stream("s1");
  const auto q2 = q.add_stream("s2");
  const auto c = q.kernel(q1, 1.0, 0.5);
  const auto d = q.kernel(q2, 2.0, 0.5);
  const Timeline u = sim::simulate(q, m);
  expect_span(u, c, 0.0, 1.0);
  expect_span(u, d, 0.0, 2.0);
}

// When one kernel ends, the other speeds up for the rest of its work.
TEST(SimProbedRules, AKernelSpeedsUpWhenItsNeighbourEnds) {
  DeviceModel m = unit();
  m.kernels_share_sms = true;
  Program p;
  const auto s1 = p.add_stream("s1");
  const auto s2 = p.add_stream("s2");
  // Both ask the whole GPU: half speed each. `a` (1 ms solo) ends at 2; by
  // then `b` has done 1 of its 3 ms and runs the other 2 alone: ends at 4.
  const auto a = p.kernel(s1, 1.0, 1.0);
  const auto b = p.kernel(s2, 3.0, 1.0);
  const Timeline t = sim::simulate(p, m);
  expect_span(t, a, 0.0, 2.0);
  expect_span(t, b, 0.0, 4.0);
}

// A pipeline with a kernel cost curve asks, per chunk, the curve's per-byte
// work over its whole time: the fixed part leaves SMs for other streams.
TEST(SimProbedRules, ACostCurvesFixedPartLeavesSmsForOtherKernels) {
  PipelineShape shape;
  shape.chunks = 2;
  shape.streams = 2;
  shape.h2d_bytes = 2 << 20;
  shape.kernel_cost = KernelCost{1.0, 1.0, 0};  // 1 MiB chunk: 1 fixed + 1 per MiB = 2 ms, asks 0.5
  const Program program = make_pipeline_program(shape);
  DeviceModel m = unit();
  m.kernels_share_sms = true;
  const Timeline t = sim::simulate(program, m);
  std::vector<const Span*> kernels;
  for (const Span& s : t.spans) {
    if (s.kind == op_kind::kernel) kernels.push_back(&s);
  }
  ASSERT_EQ(kernels.size(), 2U);
  EXPECT_NEAR(kernels[0]->end - kernels[0]->start, 2.0, 1e-9);
  EXPECT_NEAR(kernels[1]->end - kernels[1]->start, 2.0, 1e-9);
  // The second starts while the first runs, and the two asks (0.5 + 0.5) fit: neither slows.
  EXPECT_LT(kernels[1]->start, kernels[0]->end);
}

}  // namespace
