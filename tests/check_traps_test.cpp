// One test per trap rule on a small program: the rule fires, names the ops,
// and its time lost equals simulate(program) - simulate(repaired program),
// the repaired program written out by hand here. Times are on the `unit`
// model, where every op takes exactly its given time.
#include <gtest/gtest.h>

#include <string>

#include "overlap/check/check.hpp"
#include "overlap/core/pipeline_shape.hpp"
#include "overlap/sim/simulator.hpp"

namespace {

using namespace overlap;

const DeviceModel unit_model = DeviceModel::preset("unit");

Access reads(std::string buffer) {
  return Access{std::move(buffer), 0, std::nullopt, access_mode::read};
}
Access writes(std::string buffer) {
  return Access{std::move(buffer), 0, std::nullopt, access_mode::write};
}

double total(const Program& p, const DeviceModel& model = unit_model) {
  return sim::simulate(p, model).total();
}

std::vector<check::Finding> traps(const Program& p, const DeviceModel& model = unit_model) {
  return check::find_traps(p, model);
}

/// The one finding of `rule`, failing the test if there is not exactly one.
check::Finding finding(const std::vector<check::Finding>& findings, std::string_view rule) {
  std::vector<check::Finding> matching;
  for (const check::Finding& f : findings) {
    if (f.rule == rule) matching.push_back(f);
  }
  EXPECT_EQ(matching.size(), 1u) << "rule " << rule;
  return matching.empty() ? check::Finding{} : matching.front();
}

void expect_lost(const check::Finding& f, double expected) {
  ASSERT_TRUE(f.time_lost.has_value());
  EXPECT_GT(expected, 0.0);
  EXPECT_NEAR(*f.time_lost, expected, 1e-9 * expected);
}

TEST(CheckTraps, MemsetOnTheLegacyStreamMovesToItsConsumer) {
  Program trap;
  const auto s1 = trap.add_stream("s1");
  const auto s2 = trap.add_stream("s2");
  const auto legacy = trap.legacy_default_stream();
  trap.copy(s1, copy_direction::h2d, 0, host_memory::pinned, 10.0);
  trap.last().accesses = {writes("a")};
  trap.memset(legacy, 0, 2.0);  // waits for s1's copy: the barrier
  trap.last().accesses = {writes("b")};
  trap.kernel(s2, 5.0);
  trap.last().accesses = {reads("b")};

  Program fixed;
  fixed.add_stream("s1");
  fixed.add_stream("s2");
  fixed.legacy_default_stream();
  fixed.copy(s1, copy_direction::h2d, 0, host_memory::pinned, 10.0);
  fixed.memset(s2, 0, 2.0);
  fixed.kernel(s2, 5.0);

  const check::Finding f = finding(traps(trap), "legacy-default-stream");
  expect_lost(f, total(trap) - total(fixed));
  EXPECT_DOUBLE_EQ(*f.time_lost, 7.0);  // 17 behind the barrier, 10 beside the copy
  EXPECT_EQ(f.fix, "Make ops[1] a cudaMemsetAsync on s2, the stream of its consumer ops[2].");
  EXPECT_EQ(f.streams, (std::vector<std::string>{"s1", "s2", "default"}));
}

// The sync copy also ordered a second reader on a non-blocking stream: the
// repair keeps that ordering with an event, and prices it in.
TEST(CheckTraps, LegacyCopyRepairKeepsTheOrderingsItGave) {
  Program trap;
  const auto s1 = trap.add_stream("s1");
  const auto s2 = trap.add_stream("s2", stream_kind::non_blocking);
  trap.kernel(s2, 10.0, 0.5);
  trap.last().accesses = {writes("w")};
  trap.copy_sync(copy_direction::h2d, 0, host_memory::pageable, 5.0);
  trap.last().accesses = {writes("x")};
  trap.host_work(5.0);
  trap.kernel(s1, 10.0, 0.5);
  trap.last().accesses = {reads("x")};
  trap.kernel(s2, 5.0, 0.5);
  trap.last().accesses = {reads("x")};

  Program fixed;
  fixed.add_stream("s1");
  fixed.add_stream("s2", stream_kind::non_blocking);
  fixed.legacy_default_stream();
  const auto e = fixed.add_event("x_ready");
  fixed.kernel(s2, 10.0, 0.5);
  fixed.copy(s1, copy_direction::h2d, 0, host_memory::pinned, 5.0);
  fixed.record(e, s1);
  fixed.host_work(5.0);
  fixed.kernel(s1, 10.0, 0.5);
  fixed.wait(s2, e);
  fixed.kernel(s2, 5.0, 0.5);

  const check::Finding f = finding(traps(trap), "legacy-default-stream");
  expect_lost(f, total(trap) - total(fixed));
  EXPECT_DOUBLE_EQ(*f.time_lost, 5.0);
  EXPECT_NE(f.fix.find("Keep the orderings it gave: add cudaEventRecord after ops[1] on s1 and "
                       "cudaStreamWaitEvent(s2) before ops[4]."),
            std::string::npos)
      << f.fix;
}

TEST(CheckTraps, LegacyCopyWithoutConsumerGoesToANewNonBlockingStream) {
  Program trap;
  const auto s1 = trap.add_stream("s1");
  trap.kernel(s1, 10.0);
  trap.copy_sync(copy_direction::d2h, 0, host_memory::pageable, 4.0);
  trap.kernel(s1, 10.0);

  Program fixed;
  fixed.add_stream("s1");
  fixed.legacy_default_stream();
  const auto fresh = fixed.add_stream("async_copies", stream_kind::non_blocking);
  fixed.kernel(s1, 10.0);
  fixed.copy(fresh, copy_direction::d2h, 0, host_memory::pinned, 4.0);
  fixed.kernel(s1, 10.0);

  const check::Finding f = finding(traps(trap), "legacy-default-stream");
  expect_lost(f, total(trap) - total(fixed));
  EXPECT_NE(f.fix.find("on a new non-blocking stream"), std::string::npos) << f.fix;
}

TEST(CheckTraps, PageableAsyncCopyRepairedWithPinnedMemory) {
  Program trap;
  const auto s1 = trap.add_stream("s1");
  const auto s2 = trap.add_stream("s2");
  trap.kernel(s1, 5.0, 0.5);
  trap.last().accesses = {writes("d")};
  trap.copy(s1, copy_direction::d2h, 0, host_memory::pageable, 5.0);
  trap.last().accesses = {reads("d"), writes("h")};
  trap.kernel(s2, 10.0, 0.5);
  trap.host_work(1.0);
  trap.last().accesses = {reads("h")};

  // Pinned, the copy no longer holds the host, so the host's read of h
  // needs an event synchronize.
  Program fixed;
  fixed.add_stream("s1");
  fixed.add_stream("s2");
  const auto e = fixed.add_event("h_ready");
  fixed.kernel(s1, 5.0, 0.5);
  fixed.copy(s1, copy_direction::d2h, 0, host_memory::pinned, 5.0);
  fixed.record(e, s1);
  fixed.kernel(s2, 10.0, 0.5);
  fixed.synchronize_event(e);
  fixed.host_work(1.0);

  const check::Finding f = finding(traps(trap), "pageable-async-copy");
  expect_lost(f, total(trap) - total(fixed));
  EXPECT_DOUBLE_EQ(*f.time_lost, 9.0);  // 20 -> 11
  EXPECT_EQ(f.ops.front().text, "ops[1] copy 'D2H' on s1");
  EXPECT_NE(f.fix.find("add cudaEventRecord after ops[1] on s1 and cudaEventSynchronize before ops[3]"),
            std::string::npos)
      << f.fix;
}

TEST(CheckTraps, AllocationInFlightMovesBeforeTheFirstOpAndFreeAfterTheLast) {
  Program trap;
  const auto s1 = trap.add_stream("s1");
  const auto s2 = trap.add_stream("s2");
  trap.kernel(s1, 10.0, 0.5);
  trap.implicit_sync(op_kind::device_allocate, 1.0);
  trap.kernel(s2, 10.0, 0.5);
  trap.implicit_sync(op_kind::device_free, 1.0);
  trap.kernel(s1, 3.0, 0.5);
  trap.synchronize_device();

  Program fixed;
  fixed.add_stream("s1");
  fixed.add_stream("s2");
  fixed.implicit_sync(op_kind::device_allocate, 1.0);
  fixed.kernel(s1, 10.0, 0.5);
  fixed.kernel(s2, 10.0, 0.5);
  fixed.kernel(s1, 3.0, 0.5);
  fixed.synchronize_device();
  fixed.implicit_sync(op_kind::device_free, 1.0);

  const check::Finding f = finding(traps(trap), "implicit-synchronization");
  expect_lost(f, total(trap) - total(fixed));
  ASSERT_EQ(f.ops.size(), 2u);
  EXPECT_EQ(f.ops[0].text, "ops[1] malloc");
  EXPECT_EQ(f.ops[1].text, "ops[3] free");
  EXPECT_EQ(f.streams, std::vector<std::string>{"s1"});
}

// s1 computes and downloads h1, s2 runs a longer kernel (printing or not);
// a device-wide sync, the host reads h1, a last device-wide sync.
Program device_sync_for_s1(bool s2_prints) {
  Program trap;
  const auto s1 = trap.add_stream("s1");
  const auto s2 = trap.add_stream("s2");
  trap.kernel(s1, 5.0, 0.5);
  trap.last().accesses = {writes("out1")};
  trap.copy(s1, copy_direction::d2h, 0, host_memory::pinned, 5.0);
  trap.last().accesses = {reads("out1"), writes("h1")};
  trap.kernel(s2, 20.0, 0.5);
  trap.last().accesses = {writes("out2")};
  trap.last().prints = s2_prints;
  trap.synchronize_device();
  trap.host_work(2.0);
  trap.last().accesses = {reads("h1")};
  trap.synchronize_device();
  return trap;
}

TEST(CheckTraps, DeviceSynchronizeWhereOneStreamSyncWouldDo) {
  const Program trap = device_sync_for_s1(false);
  Program fixed;
  const auto s1 = fixed.add_stream("s1");
  const auto s2 = fixed.add_stream("s2");
  fixed.kernel(s1, 5.0, 0.5);
  fixed.copy(s1, copy_direction::d2h, 0, host_memory::pinned, 5.0);
  fixed.kernel(s2, 20.0, 0.5);
  fixed.synchronize(s1);
  fixed.host_work(2.0);
  fixed.synchronize_device();

  const check::Finding f = finding(traps(trap), "device-synchronize");
  expect_lost(f, total(trap) - total(fixed));
  EXPECT_DOUBLE_EQ(*f.time_lost, 2.0);  // the host work hides under s2's kernel
  EXPECT_EQ(f.fix, "Replace ops[3] with cudaStreamSynchronize(s1).");
  EXPECT_EQ(f.ops.size(), 1u);  // the last device sync has nothing after it
}

// A sync that waits only for kernels that printf shows their output (printf's
// buffer is written out at synchronization): it is not "waiting for nothing".
TEST(CheckTraps, DeviceSynchronizeAfterPrintingKernelsShowsTheirOutput) {
  const auto program = [](bool prints) {
    Program p;
    const auto s1 = p.add_stream("s1");
    const auto s2 = p.add_stream("s2");
    for (int k = 0; k < 4; ++k) {
      p.kernel(s1, 5.0, 0.5);
      p.last().accesses = {writes("out1")};
      p.last().prints = prints;
      p.kernel(s2, 5.0, 0.5);
      p.last().accesses = {writes("out2")};
      p.last().prints = prints;
      p.synchronize_device();
      p.host_work(4.0);
    }
    return p;
  };
  // Without printf nothing the host does needs the kernels: each sync is useless.
  const check::Finding f = finding(traps(program(false)), "device-synchronize");
  EXPECT_NE(f.message.find("nothing the host does"), std::string::npos) << f.message;
  for (const check::Finding& g : traps(program(true))) EXPECT_NE(g.rule, "device-synchronize") << g.message;
}

// Where the host needs data from one stream, a printing kernel on another is
// no reason to wait for it there: its output shows at a later sync.
TEST(CheckTraps, DeviceSynchronizeForDataStillWaitsNeedlesslyForAPrintingStream) {
  const check::Finding f = finding(traps(device_sync_for_s1(true)), "device-synchronize");
  EXPECT_EQ(f.fix, "Replace ops[3] with cudaStreamSynchronize(s1).");
}

TEST(CheckTraps, DeviceSynchronizeWithoutDeclaredAccessesIsNotJudged) {
  Program p;
  const auto s1 = p.add_stream("s1");
  const auto s2 = p.add_stream("s2");
  p.kernel(s1, 5.0);
  p.kernel(s2, 20.0);
  p.synchronize_device();
  p.host_work(2.0);
  for (const check::Finding& f : traps(p)) EXPECT_NE(f.rule, "device-synchronize");
}

TEST(CheckTraps, BreadthFirstCopiesSerializeOnOneCopyEngine) {
  PipelineShape shape;
  shape.chunks = 4;
  shape.streams = 4;
  shape.order = issue_order::breadth_first;
  shape.h2d_time = 4.0;
  shape.kernel_time = 4.0;
  shape.d2h_time = 4.0;
  shape.h2d_bytes = shape.d2h_bytes = 4096;
  const Program p = make_pipeline_program(shape);
  const check::Finding f = finding(traps(p), "copy-engine-serialization");
  EXPECT_EQ(f.level, check::severity::info);
  EXPECT_FALSE(f.time_lost.has_value());
  // Independently: the copies whose span waited for the engine on another copy.
  const Timeline t = sim::simulate(p, unit_model);
  double queued = 0.0;
  for (const Span& s : t.spans) {
    if (s.kind == op_kind::copy && s.waited_because == wait_reason::engine_busy) queued += s.duration();
  }
  ASSERT_TRUE(f.serialized_time.has_value());
  EXPECT_DOUBLE_EQ(*f.serialized_time, queued);
  EXPECT_DOUBLE_EQ(queued, 3.0);  // chunks 1, 2, 3 each queued a 1 ms H2D behind the one before

  shape.order = issue_order::depth_first;  // copies issued next to kernels: nothing to say
  for (const check::Finding& g : traps(make_pipeline_program(shape)))
    EXPECT_NE(g.rule, "copy-engine-serialization");
}

TEST(CheckTraps, MoreStreamsThanHardwareQueuesGiveFalseDependencies) {
  DeviceModel model = unit_model;
  model.connections = 2;
  Program p;
  const auto s0 = p.add_stream("s0");
  const auto s1 = p.add_stream("s1");
  const auto s2 = p.add_stream("s2");  // shares queue 0 with s0
  p.copy(s0, copy_direction::h2d, 0, host_memory::pinned, 10.0);
  p.kernel(s0, 10.0, 0.5);
  const op_id held = p.kernel(s2, 15.0, 0.5);  // behind s0's kernel, which waits for its copy
  p.kernel(s1, 1.0, 0.5);

  DeviceModel enough = model;
  enough.connections = 3;
  const check::Finding f = finding(traps(p, model), "hardware-queue-sharing");
  expect_lost(f, total(p, model) - total(p, enough));
  EXPECT_DOUBLE_EQ(*f.time_lost, 5.0);
  ASSERT_FALSE(f.ops.empty());
  EXPECT_EQ(f.ops.front().id, held);
  EXPECT_NE(f.fix.find("CUDA_DEVICE_MAX_CONNECTIONS=3"), std::string::npos) << f.fix;
  EXPECT_TRUE(traps(p, enough).empty());
}

TEST(CheckTraps, WaitOnAnEventNotYetRecordedIsANoOp) {
  Program p;
  const auto s1 = p.add_stream("s1");
  const auto s2 = p.add_stream("s2");
  const auto e = p.add_event("ready");
  const auto never = p.add_event("never");
  p.kernel(s1, 1.0);
  p.last().accesses = {writes("a")};
  p.wait(s2, e);  // before the record: binds to nothing
  p.record(e, s1);
  p.kernel(s2, 1.0);
  p.last().accesses = {reads("a")};
  p.synchronize_event(never);

  const check::Report report = check::check_program(p, unit_model);
  // The no-op wait leaves the race it was meant to prevent.
  ASSERT_FALSE(report.findings.empty());
  EXPECT_EQ(report.findings[0].rule, "race");
  EXPECT_EQ(report.findings[0].race->first, 0u);
  EXPECT_EQ(report.findings[0].race->second, 3u);
  std::vector<check::Finding> waits;
  for (const check::Finding& f : report.findings) {
    if (f.rule == "unrecorded-event") waits.push_back(f);
  }
  ASSERT_EQ(waits.size(), 2u);
  EXPECT_EQ(waits[0].level, check::severity::warning);
  EXPECT_EQ(waits[0].time_lost, std::optional<double>(0.0));
  EXPECT_EQ(waits[0].ops[0].text, "ops[1] wait (event ready) on s2");
  EXPECT_NE(waits[0].message.find("no-op"), std::string::npos);
  EXPECT_EQ(waits[0].fix,
            "Its first cudaEventRecord is ops[2], issued after the wait: issue the wait after it.");
  EXPECT_EQ(waits[1].ops[0].text, "ops[4] event_synchronize (event never)");
}

TEST(CheckTraps, TrapsCostingUnderOnePercentAreNotReported) {
  Program p;
  const auto s1 = p.add_stream("s1");
  const auto s2 = p.add_stream("s2");
  p.copy(s1, copy_direction::h2d, 0, host_memory::pageable, 0.05);
  p.kernel(s2, 10.0);
  EXPECT_TRUE(traps(p).empty());  // 0.05 of 10.05: 0.5 %
  const auto all = check::find_traps(p, unit_model, check::TrapOptions{0.0});
  const check::Finding f = finding(all, "pageable-async-copy");
  expect_lost(f, 0.05);
}

TEST(CheckTraps, CorrectOverlappedPipelinesHaveNoWarnings) {
  PipelineShape shape;
  shape.chunks = 8;
  shape.streams = 3;
  shape.ring_depth = 4;
  shape.h2d_bytes = shape.d2h_bytes = 8 * 1024 * 1024;
  shape.kernel_time = 2.0;
  const Program p = make_pipeline_program(shape);
  for (const char* device : {"unit", "h100", "hyperq"}) {
    const check::Report report = check::check_program(p, DeviceModel::preset(device));
    EXPECT_FALSE(report.fails(check::severity::warning)) << device << "\n" << check::format_text(report);
  }
}

}  // namespace
