// The simulator on the seeds' pipelines, with hand-computed answers.
#include <gtest/gtest.h>

#include "overlap/core/device_model.hpp"
#include "overlap/core/pipeline_shape.hpp"
#include "overlap/sim/simulator.hpp"
#include "sim_test_support.hpp"

namespace {

using namespace overlap;
using overlap::testing::expect_span;

Timeline seed001(std::uint32_t chunks, std::uint32_t streams) {
  PipelineShape shape;
  shape.chunks = chunks;
  shape.streams = streams;
  shape.h2d_time = 30.0;
  shape.kernel_time = 20.0;
  shape.d2h_time = 30.0;
  return sim::simulate(make_pipeline_program(shape), DeviceModel::preset("unit"));
}

TEST(SimPipeline, Seed001OneStreamIsSequential) {
  const Timeline t = seed001(1, 1);
  EXPECT_DOUBLE_EQ(t.total(), 80.0);
  EXPECT_DOUBLE_EQ(t.sequential_time, 80.0);
}

TEST(SimPipeline, Seed001FourChunksFourStreamsMatchesTheArticle) {
  const Timeline t = seed001(4, 4);
  EXPECT_DOUBLE_EQ(t.total(), 42.5);
  EXPECT_NEAR(t.sequential_time / t.total(), 1.88, 0.005);
}

TEST(SimPipeline, Seed001TwoStreamsWaitBehindTheirOwnDownloads) {
  const Timeline t = seed001(4, 2);
  EXPECT_DOUBLE_EQ(t.total(), 47.5);
  // Depth-first ops: chunk c's H2D, kernel, D2H are ops 3c, 3c+1, 3c+2.
  expect_span(t, 0, 0.0, 7.5);    // H2D 0
  expect_span(t, 3, 7.5, 15.0);   // H2D 1
  expect_span(t, 2, 12.5, 20.0);  // D2H 0
  expect_span(t, 6, 20.0, 27.5);  // H2D 2 waits for D2H 0 in Stream1
  const Span& upload2 = overlap::testing::span_of(t, 6);
  EXPECT_EQ(upload2.waited_because, wait_reason::stream_order);
  ASSERT_TRUE(upload2.waited_for.has_value());
  EXPECT_EQ(*upload2.waited_for, 2u);
}

TEST(SimPipeline, Seed004TwoItemsTwoStreams) {
  PipelineShape shape;
  shape.chunks = 2;
  shape.item_names = {"A", "B"};
  shape.streams = 2;
  shape.h2d_time = 2.0;
  shape.kernel_time = 2.0;
  shape.d2h_time = 2.0;
  const Timeline t = sim::simulate(make_pipeline_program(shape), DeviceModel::preset("unit"));
  EXPECT_DOUBLE_EQ(t.total(), 4.0);
  EXPECT_DOUBLE_EQ(t.sequential_time, 6.0);
  expect_span(t, 3, 1.0, 2.0);  // H2D B overlaps kernel A
  expect_span(t, 4, 2.0, 3.0);
  expect_span(t, 5, 3.0, 4.0);
}

}  // namespace
