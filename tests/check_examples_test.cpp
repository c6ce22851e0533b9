// The seeds' scenarios in examples/check: each racy program is reported with
// its exact pair of ops and the missing ordering, each fixed one is clean,
// and each trap reports its rule with a time lost equal to
// simulate(trap) - simulate(repaired), the repaired program built here
// independently (the example's fixed version, or the trap edited by hand).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "overlap/check/check.hpp"
#include "overlap/io/spec.hpp"
#include "overlap/sim/simulator.hpp"

namespace {

using namespace overlap;

io::Spec load(const std::string& name) {
  return io::load_spec(std::string(OVERLAP_SOURCE_DIR) + "/examples/check/" + name);
}

DeviceModel device_of(const io::Spec& spec) {
  return DeviceModel::load(spec.device.value_or("h100"));
}

struct ExpectedRace {
  op_id first;
  op_id second;
  std::string buffer;
  std::string fix;
};

void expect_races(const std::string& file, const std::vector<ExpectedRace>& expected) {
  SCOPED_TRACE(file);
  const io::Spec spec = load(file);
  const check::Report report = check::check_program(spec.program, device_of(spec));
  ASSERT_EQ(report.findings.size(), expected.size()) << check::format_text(report);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const check::Finding& f = report.findings[i];
    EXPECT_EQ(f.level, check::severity::error);
    EXPECT_EQ(f.rule, "race");
    ASSERT_TRUE(f.race.has_value());
    EXPECT_EQ(f.race->first, expected[i].first);
    EXPECT_EQ(f.race->second, expected[i].second);
    EXPECT_EQ(f.race->buffer, expected[i].buffer);
    EXPECT_EQ(f.fix, expected[i].fix);
    ASSERT_EQ(f.ops.size(), 2u);
    EXPECT_EQ(f.ops[0].id, expected[i].first);
    EXPECT_EQ(f.ops[1].id, expected[i].second);
  }
}

void expect_clean(const std::string& file) {
  SCOPED_TRACE(file);
  const io::Spec spec = load(file);
  // Clean on the spec's own device and on the H100 model alike.
  for (const DeviceModel& model : {device_of(spec), DeviceModel::preset("h100")}) {
    const check::Report report = check::check_program(spec.program, model);
    EXPECT_TRUE(report.findings.empty()) << model.name << ":\n" << check::format_text(report);
  }
}

TEST(CheckExamples, NumbaDependencyIsARaceNotAWait) {
  expect_races(
      "numba-dependency-racy.yaml",
      {{0, 1, "y",
        "add cudaEventRecord after ops[0] on stream1 and cudaStreamWaitEvent(stream2) before ops[1]"}});
  const io::Spec spec = load("numba-dependency-racy.yaml");
  const check::Report report = check::check_program(spec.program, device_of(spec));
  EXPECT_EQ(report.findings[0].ops[0].text, "ops[0] kernel 'kernel1' on stream1");
  EXPECT_EQ(report.findings[0].ops[1].text, "ops[1] kernel 'kernel2' on stream2");
  EXPECT_EQ(report.findings[0].race->first_mode, access_mode::write);
  EXPECT_EQ(report.findings[0].race->second_mode, access_mode::read);
  expect_clean("numba-dependency-fixed.yaml");
}

// Each batch's upload races with its forward pass: one bug, repeated by the
// loop, so one finding (the first batch's pair) counting both instances.
TEST(CheckExamples, PytorchDataLoadingRacesEachBatch) {
  expect_races("pytorch-data-loading-racy.yaml",
               {{1, 2, "d_batch0",
                 "Order each kernel 'forward' after the copy 'data.to(device)' it races with, as for the "
                 "first: add cudaEventRecord after ops[1] on data_load_stream and "
                 "cudaStreamWaitEvent(default) before ops[2]."}});
  const io::Spec spec = load("pytorch-data-loading-racy.yaml");
  const check::Report report = check::check_program(spec.program, device_of(spec));
  const check::Finding& f = report.findings.front();
  EXPECT_EQ(f.count, 2u);
  ASSERT_EQ(f.instances.size(), 2u);
  EXPECT_EQ(f.instances[1].race->first, 4u);
  EXPECT_EQ(f.instances[1].race->second, 5u);
  EXPECT_EQ(f.instances[1].race->buffer, "d_batch1");
  expect_clean("pytorch-data-loading-fixed.yaml");
}

TEST(CheckExamples, PytorchBranchesAreCleanUntilAJoinIsMissing) {
  expect_clean("pytorch-branches.yaml");
  expect_races("pytorch-branches-racy.yaml", {{2, 5, "output2",
                                               "add cudaEventRecord after ops[2] on branch2_stream and "
                                               "cudaStreamWaitEvent(default) before ops[5]"}});
}

TEST(CheckExamples, PingPongRefillRacesWithTheCopyInFlight) {
  expect_races("cuda-ping-pong-racy.yaml",
               {{1, 8, "h_in0",
                 "add cudaEventRecord after ops[1] on s0 and cudaEventSynchronize before ops[8] "
                 "(or cudaStreamSynchronize(s0) before it)"},
                {5, 12, "h_in1",
                 "add cudaEventRecord after ops[5] on s1 and cudaEventSynchronize before ops[12] "
                 "(or cudaStreamSynchronize(s1) before it)"}});
  expect_clean("cuda-ping-pong-fixed.yaml");
}

double total(const Program& program, const DeviceModel& model) {
  return sim::simulate(program, model).total();
}

/// The trap's single finding: its rule, warning, and time lost.
check::Finding only_trap(const check::Report& report, std::string_view rule) {
  EXPECT_EQ(report.findings.size(), 1u) << check::format_text(report);
  if (report.findings.empty()) return check::Finding{};
  check::Finding f = report.findings.front();
  EXPECT_EQ(f.rule, rule);
  EXPECT_EQ(f.level, check::severity::warning);
  EXPECT_TRUE(f.time_lost.has_value());
  if (!f.time_lost) f.time_lost = 0.0;
  if (f.ops.empty()) f.ops.emplace_back();
  return f;
}

void expect_time_lost(double reported, double expected) {
  EXPECT_GT(expected, 0.0);
  EXPECT_NEAR(reported, expected, 1e-9 * std::abs(expected));
}

TEST(CheckExamples, DefaultStreamTrapCostsWhatTheFixSaves) {
  const io::Spec trap = load("cuda-default-stream-trap.yaml");
  const io::Spec fixed = load("cuda-default-stream-trap-fixed.yaml");
  for (const DeviceModel& model : {device_of(trap), DeviceModel::preset("h100")}) {
    SCOPED_TRACE(model.name);
    const check::Finding f = only_trap(check::check_program(trap.program, model), "legacy-default-stream");
    expect_time_lost(*f.time_lost, total(trap.program, model) - total(fixed.program, model));
    EXPECT_EQ(f.ops.front().text, "ops[2] copy 'H2D' on default");
    EXPECT_NE(f.fix.find("ops[2] a cudaMemcpyAsync from pinned memory on s2"), std::string::npos) << f.fix;
  }
  // The same repair made by hand on the trap's own program.
  Program by_hand = trap.program;
  Op copy = by_hand.ops()[2];
  copy.stream = *by_hand.find_stream("s2");
  copy.mode = call_mode::asynchronous;
  copy.memory = host_memory::pinned;
  Program edited;
  for (const Stream& s : by_hand.streams()) edited.add_stream(s.name, s.kind, s.priority);
  for (op_id i = 0; i < by_hand.ops().size(); ++i) edited.append(i == 2 ? copy : by_hand.ops()[i]);
  const DeviceModel unit = DeviceModel::preset("unit");
  const check::Finding f = only_trap(check::check_program(trap.program, unit), "legacy-default-stream");
  expect_time_lost(*f.time_lost, total(trap.program, unit) - total(edited, unit));
  EXPECT_DOUBLE_EQ(*f.time_lost, 20.0);  // 60 ms flat, 40 ms overlapped
}

TEST(CheckExamples, HiddenSyncCopyCostsTheOverlapWithKernelA) {
  const io::Spec trap = load("cuda-hidden-sync-copy-trap.yaml");
  const io::Spec fixed = load("cuda-hidden-sync-copy-fixed.yaml");
  for (const DeviceModel& model : {device_of(trap), DeviceModel::preset("h100")}) {
    SCOPED_TRACE(model.name);
    const check::Finding f = only_trap(check::check_program(trap.program, model), "legacy-default-stream");
    expect_time_lost(*f.time_lost, total(trap.program, model) - total(fixed.program, model));
    EXPECT_EQ(f.ops.front().text, "ops[0] copy 'prepareData' on default");
  }
  EXPECT_DOUBLE_EQ(*check::check_program(trap.program, device_of(trap)).findings.front().time_lost, 10.0);
  expect_clean("cuda-hidden-sync-copy-fixed.yaml");
  expect_clean("cuda-default-stream-trap-fixed.yaml");
}

TEST(CheckExamples, PingPongDeviceSyncCostsWhatStreamSyncsSave) {
  const io::Spec trap = load("cuda-ping-pong-trap.yaml");
  const io::Spec fixed = load("cuda-ping-pong-fixed.yaml");
  const DeviceModel model = device_of(trap);
  const check::Finding f = only_trap(check::check_program(trap.program, model), "device-synchronize");
  expect_time_lost(*f.time_lost, total(trap.program, model) - total(fixed.program, model));
  EXPECT_EQ(f.fix,
            "Drop ops[5]; replace ops[10] with cudaStreamSynchronize(s0); replace ops[15] with "
            "cudaStreamSynchronize(s1).");
  ASSERT_EQ(f.ops.size(), 3u);  // the final device sync is needed: the host reads both streams' output
  EXPECT_EQ(f.ops[2].id, 15u);
}

TEST(CheckExamples, DependentPairsOn32StreamsShareTheH100sEightConnections) {
  const io::Spec trap = load("cuda-hardware-queue-sharing-trap.yaml");
  const DeviceModel h100 = DeviceModel::preset("h100");
  ASSERT_EQ(h100.connections, 8u);
  const check::Finding f = only_trap(check::check_program(trap.program, h100), "hardware-queue-sharing");
  DeviceModel repaired = h100;
  repaired.connections = 32;  // CUDA_DEVICE_MAX_CONNECTIONS=32
  const double with_8 = total(trap.program, h100);
  const double with_32 = total(trap.program, repaired);
  expect_time_lost(*f.time_lost, with_8 - with_32);
  EXPECT_GT(with_8 / with_32, 2.2);  // measured: 2.49x on an H100 (ProbeFalseDependency)
  EXPECT_NE(f.fix.find("CUDA_DEVICE_MAX_CONNECTIONS=32"), std::string::npos) << f.fix;
  EXPECT_NE(f.message.find("32 streams share 8 hardware queues"), std::string::npos) << f.message;
  // An A of s8 or later, held on its connection behind another stream's B.
  EXPECT_GE(f.ops.front().id, 16u);
  EXPECT_EQ(f.ops.front().label.rfind("kernelA", 0), 0u) << f.ops.front().label;
  EXPECT_TRUE(check::check_program(trap.program, repaired).findings.empty());
}

}  // namespace
