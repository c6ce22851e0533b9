// The planner pins its choices on fixed models: hand-computed answers on a
// model without overheads, the H100 preset's answers, and its guarantees
// (floor and lower bounds never above a simulated time, pruning changes
// nothing but the work).
#include <gtest/gtest.h>

#include <string>

#include "overlap/core/error.hpp"
#include "overlap/sim/plan.hpp"
#include "overlap/sim/simulator.hpp"

namespace {

using namespace overlap;

constexpr std::uint64_t MiB = 1ULL << 20;

/// No overheads; 1 MiB takes 1 ms each way; copies both ways slow each other by `slowdown`.
DeviceModel mib_per_ms(double slowdown = 1.0) {
  DeviceModel m = DeviceModel::preset("unit");
  m.name = "mib-per-ms";
  m.h2d_pinned = m.d2h_pinned = BandwidthCurve{{{1, 1.048576}}};
  m.h2d_slowdown_when_bidirectional = m.d2h_slowdown_when_bidirectional = slowdown;
  return m;
}

double simulated(const sim::PlanCandidate& c, const DeviceModel& model) {
  return sim::simulate(make_pipeline_program(c.shape), model).total();
}

std::string message_of(const sim::Workload& w, const DeviceModel& model, const sim::PlanOptions& o = {}) {
  try {
    (void)sim::plan(w, model, o);
  } catch (const invalid_input& e) {
    return e.what();
  }
  return "(no error)";
}

void expect_sound(const sim::Plan& plan) {
  for (const sim::PlanCandidate& c : plan.candidates) {
    EXPECT_GE(c.predicted_ms, c.lower_bound_ms - 1e-9) << c.shape.name;
    EXPECT_GE(c.predicted_ms, plan.floor.total_ms - 1e-9) << c.shape.name;
    EXPECT_EQ(c.ring_bytes, ring_bytes(c.shape)) << c.shape.name;
  }
}

TEST(PlanFloor, CopiesOverlapUnderTheSlowdownOrTheKernelBounds) {
  sim::Workload w;
  w.bytes_in = w.bytes_out = 8 * MiB;
  w.kernel_total_ms = 4.0;
  // 8 ms each way; 1.25x slower when both run: 10 ms of overlap do all of
  // both (8 + 8 - 10 x (0.8 + 0.8 - 1) = 10).
  sim::PlanFloor f = sim::plan_floor(w, mib_per_ms(1.25));
  EXPECT_DOUBLE_EQ(f.h2d_ms, 8.0);
  EXPECT_DOUBLE_EQ(f.d2h_ms, 8.0);
  EXPECT_NEAR(f.copies_ms, 10.0, 1e-12);
  EXPECT_DOUBLE_EQ(f.kernel_ms, 4.0);
  EXPECT_NEAR(f.total_ms, 10.0, 1e-12);
  EXPECT_EQ(f.bound, "copies in both directions");
  // Half the output: 4 ms of D2H at 1.25x overlap 5 ms of H2D's 8: 5 + 3 + ... = 8 + 4 - 5 x 0.6 = 9.
  w.bytes_out = 4 * MiB;
  EXPECT_NEAR(sim::plan_floor(w, mib_per_ms(1.25)).copies_ms, 9.0, 1e-12);
  // One copy engine for both directions: 8 + 4.
  DeviceModel one_engine = mib_per_ms();
  one_engine.copy_engine_per_direction = false;
  EXPECT_NEAR(sim::plan_floor(w, one_engine).copies_ms, 12.0, 1e-12);
  w.kernel_total_ms = 20.0;
  f = sim::plan_floor(w, mib_per_ms());
  EXPECT_DOUBLE_EQ(f.total_ms, 20.0);
  EXPECT_EQ(f.bound, "kernel");
  w.kernel_total_ms.reset();
  w.bytes_out = 0;
  EXPECT_EQ(sim::plan_floor(w, mib_per_ms()).bound, "H2D copies");
}

TEST(Plan, WithoutOverheadsTheSmallestChunksOnTwoStreamsWin) {
  // 4 MiB each way, no kernel, chunks from 1 MiB: 4 chunks keep the H2D
  // engine busy 0-4 ms and leave one 1 ms download after it: 5 ms. One
  // stream runs everything in turn (8 ms); 2 MiB chunks leave 2 ms (6 ms);
  // the ramp 1, 2, 1 MiB waits for its 2 MiB download (6 ms).
  sim::Workload w;
  w.bytes_in = w.bytes_out = 4 * MiB;
  sim::PlanOptions options;
  options.min_chunk_bytes = MiB;
  const DeviceModel model = mib_per_ms();
  const sim::Plan plan = sim::plan(w, model, options);
  EXPECT_EQ(plan.best.describe_schedule(), "4 chunks of 1 MiB");
  EXPECT_EQ(plan.best.shape.chunk_schedule, (std::vector<std::uint64_t>{MiB, MiB, MiB, MiB}));
  EXPECT_EQ(plan.best.streams, 2u);
  EXPECT_EQ(plan.best.order, issue_order::depth_first);
  EXPECT_EQ(plan.best.ring_depth, 2u);
  EXPECT_EQ(plan.best.ring_bytes, 4 * MiB);
  EXPECT_NEAR(plan.best.predicted_ms, 5.0, 1e-9);
  EXPECT_DOUBLE_EQ(plan.best.predicted_ms, simulated(plan.best, model));
  EXPECT_EQ(plan.best.bound, "H2D copy engine");  // busy 4 ms, as D2H: the first named wins
  EXPECT_NEAR(plan.best.bound_busy_ms, 4.0, 1e-9);
  EXPECT_NEAR(plan.best.bound_idle_after_ms, 1.0, 1e-9);
  EXPECT_NEAR(plan.floor.total_ms, 4.0, 1e-9);
  // Three streams tie; the best wins on fewer.
  ASSERT_TRUE(plan.runner_up.has_value());
  EXPECT_EQ(plan.runner_up->streams, 3u);
  EXPECT_NEAR(plan.runner_up->predicted_ms, 5.0, 1e-9);
  EXPECT_EQ(sim::preference_reason(plan.best, *plan.runner_up), "fewer streams");
  // Schedules: 1, 2, 4 MiB uniform and the ramp 1, 2, 1 MiB.
  for (const sim::PlanCandidate& c : plan.candidates) {
    if (c.streams == 2 && c.schedule_kind == "ramp") {
      EXPECT_NEAR(c.predicted_ms, 6.0, 1e-9);
    }
    if (c.streams == 1) {
      EXPECT_NEAR(c.predicted_ms, 8.0, 1e-9) << c.shape.name;
    }
  }
  expect_sound(plan);
}

TEST(Plan, PruningChangesOnlyTheWork) {
  sim::Workload w;
  w.bytes_in = w.bytes_out = 256 * MiB;
  w.kernel_total_ms = 2.0;
  const DeviceModel h100 = DeviceModel::preset("h100");
  sim::PlanOptions all;
  all.prune = false;
  const sim::Plan full = sim::plan(w, h100, all);
  const sim::Plan pruned = sim::plan(w, h100);
  EXPECT_EQ(full.simulated, full.considered);
  EXPECT_EQ(pruned.simulated + pruned.pruned, pruned.considered);
  EXPECT_GT(pruned.pruned, pruned.considered / 3);
  EXPECT_EQ(pruned.best.shape.name, full.best.shape.name);
  EXPECT_EQ(pruned.best.ring_depth, full.best.ring_depth);
  EXPECT_DOUBLE_EQ(pruned.best.predicted_ms, full.best.predicted_ms);
  ASSERT_TRUE(pruned.runner_up && full.runner_up);
  EXPECT_EQ(pruned.runner_up->shape.name, full.runner_up->shape.name);
  expect_sound(full);
}

TEST(PlanH100, TransferBoundPicksEightMiBChunksOnThreeStreams) {
  sim::Workload w;
  w.bytes_in = w.bytes_out = 256 * MiB;
  w.kernel_total_ms = 2.0;
  const DeviceModel h100 = DeviceModel::preset("h100");
  const sim::Plan plan = sim::plan(w, h100);
  // 4 to 8 streams predict up to 0.07% faster: a tie, which the fewest streams win.
  EXPECT_EQ(plan.best.describe_schedule(), "32 chunks of 8 MiB");
  EXPECT_EQ(plan.best.streams, 3u);
  EXPECT_EQ(plan.best.order, issue_order::depth_first);
  EXPECT_EQ(plan.best.ring_depth, 3u);
  EXPECT_DOUBLE_EQ(plan.best.predicted_ms, simulated(plan.best, h100));
  EXPECT_NEAR(plan.best.predicted_ms, 5.7192, 1e-4);
  EXPECT_EQ(plan.best.bound, "D2H copy engine");
  ASSERT_TRUE(plan.runner_up.has_value());
  EXPECT_LT(plan.runner_up->predicted_ms, plan.best.predicted_ms);
  EXPECT_LE(plan.best.predicted_ms, plan.runner_up->predicted_ms * 1.001);
  // 256 MiB each way at the 55.2 / 55.1 GB/s peaks, overlapped at the least
  // slowdowns of the by-size curve (1.07 H2D, 1.08 D2H): a + b - min(a s_h,
  // b s_d) (1/s_h + 1/s_d - 1).
  const double a = 256.0 * MiB / 55.2e6;
  const double b = 256.0 * MiB / 55.1e6;
  EXPECT_NEAR(plan.floor.total_ms, a + b - std::min(a * 1.07, b * 1.08) * (1 / 1.07 + 1 / 1.08 - 1), 1e-9);
  EXPECT_EQ(plan.floor.bound, "copies in both directions");
  EXPECT_EQ(plan.considered, 856u);
}

TEST(PlanH100, ComputeBoundPicksARampOnTwoStreams) {
  sim::Workload w;
  w.bytes_in = w.bytes_out = 256 * MiB;
  w.kernel_total_ms = 20.0;
  const DeviceModel h100 = DeviceModel::preset("h100");
  const sim::Plan plan = sim::plan(w, h100);
  EXPECT_EQ(plan.best.describe_schedule(), "ramp 256 KiB -> 64 MiB (19 chunks)");
  EXPECT_EQ(plan.best.streams, 2u);
  EXPECT_EQ(plan.best.bound, "compute");
  EXPECT_DOUBLE_EQ(plan.best.predicted_ms, simulated(plan.best, h100));
  EXPECT_NEAR(plan.best.predicted_ms, 20.0703, 1e-4);
  EXPECT_DOUBLE_EQ(plan.floor.total_ms, 20.0);
  EXPECT_EQ(plan.floor.bound, "kernel");
}

TEST(PlanH100, AFittedCurveIsNeverPredictedUnderTheKernelAlone) {
  // A compute-bound stage of 0.0675 ms + 0.428 ms/MiB per chunk (measured on
  // an H100): its chunks ask nearly all the SMs, so no schedule overlaps two
  // of them at full speed, on the preset (SMs not shared) or with sharing.
  sim::Workload w;
  w.bytes_in = 256 * MiB;
  w.bytes_out = MiB;
  w.kernel_cost = KernelCost{0.0675, 0.428, 0};
  for (const bool share : {false, true}) {
    DeviceModel h100 = DeviceModel::preset("h100");
    h100.kernels_share_sms = share;
    const sim::Plan plan = sim::plan(w, h100);
    expect_sound(plan);
    EXPECT_GE(plan.best.predicted_ms, 0.428 * 256) << share;
  }
}

TEST(PlanH100, BudgetLimitsTheRing) {
  sim::Workload w;
  w.bytes_in = w.bytes_out = 1024 * MiB;
  w.kernel_gigabytes_per_second = 100.0;
  w.device_budget = 64 * MiB;
  const sim::Plan plan = sim::plan(w, DeviceModel::preset("h100"));
  EXPECT_GT(plan.over_budget, 0u);
  for (const sim::PlanCandidate& c : plan.candidates) EXPECT_LE(c.ring_bytes, 64 * MiB) << c.shape.name;
  EXPECT_EQ(plan.best.ring_bytes, ring_bytes(plan.best.shape));
  EXPECT_EQ(plan.best.describe_schedule(), "128 chunks of 8 MiB");
  EXPECT_EQ(plan.best.streams, 3u);
  w.device_budget = 1 * MiB;  // the smallest ring: one slot of 1 MiB in + 1 MiB out
  EXPECT_EQ(message_of(w, DeviceModel::preset("h100")).rfind("device_budget: 1 MiB cannot hold", 0), 0u)
      << message_of(w, DeviceModel::preset("h100"));
}

TEST(PlanH100, TheBoundSkipsPartOfTheSearch) {
  // The search's speed is a benchmark (bench/sim_throughput: plan_search);
  // here, that the closed-form bound does skip configurations, and that
  // every configuration is either simulated or skipped.
  const DeviceModel h100 = DeviceModel::preset("h100");
  for (const double kernel : {0.0, 2.0, 20.0}) {
    sim::Workload w;
    w.bytes_in = w.bytes_out = 256 * MiB;
    w.kernel_total_ms = kernel;
    const sim::Plan plan = sim::plan(w, h100);
    EXPECT_GT(plan.pruned, 0U) << "kernel " << kernel << " ms";
    EXPECT_EQ(plan.simulated + plan.pruned, plan.considered) << "kernel " << kernel << " ms";
  }
}

TEST(Plan, StageFirstKeepsASlotPerChunk) {
  sim::Workload w;
  w.bytes_in = w.bytes_out = 4 * MiB;
  w.kernel_total_ms = 1.0;
  sim::PlanOptions options;
  options.min_chunk_bytes = MiB;
  options.orders = {issue_order::depth_first, issue_order::stage_first};
  const DeviceModel model = mib_per_ms();
  const sim::Plan plan = sim::plan(w, model, options);
  bool seen = false;
  for (const sim::PlanCandidate& c : plan.candidates) {
    if (c.order != issue_order::stage_first) continue;
    seen = true;
    EXPECT_EQ(c.ring_depth, c.chunks) << c.shape.name;
    EXPECT_DOUBLE_EQ(c.predicted_ms, simulated(c, model)) << c.shape.name;
  }
  EXPECT_TRUE(seen);
  expect_sound(plan);
}

TEST(Plan, KernelFormsAreOneCurve) {
  sim::Workload w;
  w.bytes_in = 256 * MiB;
  w.kernel_total_ms = 2.56;
  EXPECT_NEAR(w.kernel_curve()->ms_per_mib, 0.01, 1e-15);
  w.kernel_total_ms.reset();
  w.kernel_gigabytes_per_second = 1.048576;  // 1 MiB per ms
  EXPECT_NEAR(w.kernel_curve()->ms_per_mib, 1.0, 1e-15);
  w.kernel_gigabytes_per_second.reset();
  EXPECT_FALSE(w.kernel_curve().has_value());
  w.kernel_total_ms = 0.0;  // copies alone
  EXPECT_FALSE(w.kernel_curve().has_value());
}

TEST(Plan, BadInputNamesTheField) {
  const DeviceModel model = mib_per_ms();
  sim::Workload w;
  EXPECT_EQ(message_of(w, model).rfind("bytes_in: 0", 0), 0u);
  w.bytes_in = MiB;
  w.kernel_total_ms = 1.0;
  w.kernel_gigabytes_per_second = 1.0;
  EXPECT_EQ(message_of(w, model).rfind("kernel: more than one", 0), 0u);
  w.kernel_total_ms.reset();
  w.kernel_gigabytes_per_second = 0.0;
  EXPECT_EQ(message_of(w, model).rfind("kernel_gigabytes_per_second: 0", 0), 0u);
  w.kernel_gigabytes_per_second.reset();
  w.kernel_total_ms = -1.0;
  EXPECT_EQ(message_of(w, model).rfind("kernel_total_ms: -1", 0), 0u);
  w.kernel_total_ms.reset();
  w.kernel_cost = KernelCost{-1.0, 1.0, 0};
  EXPECT_EQ(message_of(w, model).rfind("kernel_cost.fixed_ms:", 0), 0u);
  w.kernel_cost.reset();
  sim::PlanOptions o;
  o.max_streams = 0;
  EXPECT_EQ(message_of(w, model, o).rfind("max_streams: 0", 0), 0u);
  o = {};
  o.chunk_sizes = {MiB, 0};
  EXPECT_EQ(message_of(w, model, o).rfind("chunk_sizes[1]: 0", 0), 0u);
}

}  // namespace

namespace {

/// mib_per_ms on a host of two GPUs (each 1 MiB/ms alone each way, 2 both
/// ways) whose totals with both copying are `h2d`, `d2h` and `both` MiB/ms.
DeviceModel two_gpu_host(double h2d, double d2h, double both) {
  DeviceModel m = mib_per_ms();
  const double r = 1.048576;  // 1 MiB/ms in GB/s
  HostLinks host;
  host.gpus = {{"gpu0", r, r, 2 * r}, {"gpu1", r, r, 2 * r}};
  host.h2d_gigabytes_per_second = h2d * r;
  host.d2h_gigabytes_per_second = d2h * r;
  host.both_gigabytes_per_second = both * r;
  m.host = host;
  return m;
}

sim::Workload copies_only(std::uint64_t bytes) {
  sim::Workload w;
  w.bytes_in = bytes;
  w.bytes_out = bytes;
  return w;
}

}  // namespace

TEST(PlanDevices, TwoIndependentGpusHalveTheFloorAndTheTime) {
  const DeviceModel model = mib_per_ms();
  sim::PlanOptions two;
  two.devices = 2;
  const sim::Plan one_gpu = sim::plan(copies_only(64 * MiB), model);
  const sim::Plan two_gpus = sim::plan(copies_only(64 * MiB), model, two);
  EXPECT_NEAR(one_gpu.floor.total_ms, 64.0, 1e-9);
  EXPECT_NEAR(two_gpus.floor.total_ms, 32.0, 1e-9);  // each GPU 32 MiB each way at 1 MiB/ms
  EXPECT_EQ(two_gpus.floor.bound, "a GPU's link");
  EXPECT_EQ(two_gpus.floor.devices, 2U);
  EXPECT_EQ(two_gpus.floor.host_ms, 0.0);  // no host model
  EXPECT_EQ(two_gpus.best.shape.devices, 2U);
  EXPECT_GE(two_gpus.best.predicted_ms, two_gpus.floor.total_ms - 1e-9);
  EXPECT_NEAR(two_gpus.best.predicted_ms, simulated(two_gpus.best, model), 1e-9);
  EXPECT_LT(two_gpus.best.predicted_ms, 0.55 * one_gpu.best.predicted_ms);
  // Each candidate's lower bound stays under its simulated time.
  for (const sim::PlanCandidate& c : two_gpus.candidates) EXPECT_LE(c.lower_bound_ms, c.predicted_ms + 1e-9);
}

TEST(PlanDevices, TheHostsSharedRateBoundsWhenItIsLowerThanTheLinks) {
  // Both GPUs copying at once move 1.5 MiB/ms one way, 2 both ways: 128 MiB take 64 ms.
  const DeviceModel model = two_gpu_host(1.5, 1.5, 2.0);
  sim::PlanOptions two;
  two.devices = 2;
  const sim::Plan p = sim::plan(copies_only(64 * MiB), model, two);
  EXPECT_NEAR(p.floor.links_ms, 32.0, 1e-9);
  EXPECT_NEAR(p.floor.host_ms, 64.0, 1e-9);
  EXPECT_NEAR(p.floor.total_ms, 64.0, 1e-9);
  EXPECT_EQ(p.floor.bound, "the host's shared rate");
  EXPECT_GE(p.best.predicted_ms, 64.0 - 1e-9);
  EXPECT_NEAR(p.best.predicted_ms, simulated(p.best, model), 1e-9);
}

TEST(PlanDevices, BadDeviceCountsAreRefusedByName) {
  sim::PlanOptions o;
  o.devices = 0;
  EXPECT_EQ(message_of(copies_only(64 * MiB), mib_per_ms(), o),
            "devices: 0 is out of range (expected 1 to 64)");
  o.devices = 3;
  EXPECT_EQ(message_of(copies_only(64 * MiB), two_gpu_host(2, 2, 4), o),
            "devices: 3 GPUs, but the device model's host lists 2 (probe them all with overlap probe "
            "--all-devices)");
  o.devices = 2;
  sim::Workload tiny = copies_only(100 * 1024);  // one chunk is all the schedules cut it into
  EXPECT_EQ(message_of(tiny, mib_per_ms(), o),
            "devices: 2 GPUs need at least 2 chunks, and no schedule searched cuts 100 KiB into that many "
            "(lower min_chunk_bytes or use fewer GPUs)");
}
