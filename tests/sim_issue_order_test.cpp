// Issue order on old and new schedulers: the three published results of the
// classic "overlap data transfers" study (4 streams, 4 chunks, copy and
// kernel times alike). The simulator models the mechanisms; these pin them.
#include <gtest/gtest.h>

#include "overlap/core/device_model.hpp"
#include "overlap/core/pipeline_shape.hpp"
#include "overlap/sim/simulator.hpp"
#include "sim_test_support.hpp"

namespace {

using namespace overlap;

Program four_by_four(issue_order order) {
  PipelineShape shape;
  shape.chunks = 4;
  shape.streams = 4;
  shape.order = order;
  shape.h2d_time = 4.0;  // 1 ms per chunk and stage
  shape.kernel_time = 4.0;
  shape.d2h_time = 4.0;
  return make_pipeline_program(shape);
}

double total(issue_order order, const DeviceModel& model) {
  return sim::simulate(four_by_four(order), model).total();
}

// The preset without host and launch costs or copy contention, so the
// totals are hand-computable.
DeviceModel ideal(const char* preset) {
  DeviceModel m = DeviceModel::preset(preset);
  m.api_call_cost = 0.0;
  m.kernel_launch_latency = 0.0;
  m.h2d_slowdown_when_bidirectional = 1.0;
  m.d2h_slowdown_when_bidirectional = 1.0;
  return m;
}

TEST(SimIssueOrder, OneCopyEngineFavoursBreadthFirst) {
  const DeviceModel m = DeviceModel::preset("fermi-1ce");
  EXPECT_LT(total(issue_order::breadth_first, m), total(issue_order::depth_first, m));
  // Depth-first: each D2H sits in the one copy queue ahead of the next H2D
  // and waits for its kernel, so nothing overlaps: 12 stages of 1 ms.
  EXPECT_DOUBLE_EQ(total(issue_order::depth_first, ideal("fermi-1ce")), 12.0);
  // Breadth-first: 4 H2Ds overlap kernels 0-2; the kernels signal together
  // at 5 (Fermi's batched signal), then 4 D2Hs: 9.
  EXPECT_DOUBLE_EQ(total(issue_order::breadth_first, ideal("fermi-1ce")), 9.0);
}

TEST(SimIssueOrder, TwoCopyEnginesFavourDepthFirst) {
  const DeviceModel m = DeviceModel::preset("fermi-2ce");
  EXPECT_LT(total(issue_order::depth_first, m), total(issue_order::breadth_first, m));
  // Depth-first fills all three engine queues in pipeline order: 4 + 2 = 6.
  EXPECT_DOUBLE_EQ(total(issue_order::depth_first, ideal("fermi-2ce")), 6.0);
  // Breadth-first launches the 4 kernels back to back: their completion
  // signal waits for the last (t=5), so every D2H starts after it: 9.
  EXPECT_DOUBLE_EQ(total(issue_order::breadth_first, ideal("fermi-2ce")), 9.0);
}

TEST(SimIssueOrder, BreadthFirstOnFermiWaitsForTheBatchedCompletionSignal) {
  const Timeline t = sim::simulate(four_by_four(issue_order::breadth_first), ideal("fermi-2ce"));
  // Breadth-first op order: H2D 0-3 (ops 0-3), kernels (4-7), D2H (8-11).
  const Span& first_download = overlap::testing::span_of(t, 8);
  EXPECT_DOUBLE_EQ(first_download.start, 5.0);
  EXPECT_EQ(first_download.waited_because, wait_reason::completion_signal);
}

// Stage streams on four 1 ms stages of four chunks: uploads back to back
// (0-4), each kernel 1 ms after its upload on the 2 kernel streams, each
// download after its kernel: the last ends at 6, as depth-first does.
TEST(SimIssueOrder, StageStreamsPipelineLikeDepthFirstOnHyperQ) {
  EXPECT_DOUBLE_EQ(total(issue_order::stage_streams, ideal("hyperq")), 6.0);
}

TEST(SimIssueOrder, HyperQMakesIssueOrderIrrelevant) {
  const DeviceModel m = DeviceModel::preset("hyperq");
  const double depth = total(issue_order::depth_first, m);
  const double breadth = total(issue_order::breadth_first, m);
  EXPECT_NEAR(depth / breadth, 1.0, 0.01);
  EXPECT_DOUBLE_EQ(total(issue_order::depth_first, ideal("hyperq")), 6.0);
  EXPECT_DOUBLE_EQ(total(issue_order::breadth_first, ideal("hyperq")), 6.0);
}

}  // namespace
