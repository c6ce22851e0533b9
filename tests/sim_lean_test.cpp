// The simulator's lean forms, which the checker prices repairs with:
// simulated_total must equal simulate(...).total() exactly, and a timeline
// without labels must have the same spans, times and causes as a labelled
// one, on every example spec and on pipelines, on each preset model.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "overlap/core/device_model.hpp"
#include "overlap/core/pipeline_shape.hpp"
#include "overlap/io/spec.hpp"
#include "overlap/sim/simulator.hpp"

namespace {

using namespace overlap;

std::vector<Program> programs() {
  std::vector<Program> all;
  const std::filesystem::path folder = std::filesystem::path(OVERLAP_SOURCE_DIR) / "examples" / "check";
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    if (entry.path().extension() == ".yaml") all.push_back(io::load_spec(entry.path()).program);
  }
  for (const std::uint32_t streams : {1U, 3U, 8U}) {
    PipelineShape shape;
    shape.chunks = 17;  // not a multiple of the streams
    shape.streams = streams;
    shape.h2d_time = 3.0;
    shape.kernel_time = 2.0;
    shape.d2h_time = 3.5;
    all.push_back(make_pipeline_program(shape));
  }
  return all;
}

TEST(SimLean, TheTotalAloneAndAnUnlabelledTimelineMatchTheFullSimulation) {
  const std::vector<Program> all = programs();
  ASSERT_GT(all.size(), 10U);
  for (const char* preset : {"unit", "h100"}) {
    const DeviceModel model = DeviceModel::preset(preset);
    for (const Program& p : all) {
      const Timeline full = sim::simulate(p, model);
      EXPECT_EQ(sim::simulated_total(p, model), full.total()) << p.name << " on " << preset;
      const Timeline bare = sim::simulate(p, model, sim::span_labels::left_empty);
      ASSERT_EQ(bare.spans.size(), full.spans.size()) << p.name;
      ASSERT_EQ(bare.host_spans.size(), full.host_spans.size()) << p.name;
      for (std::size_t i = 0; i < full.spans.size(); ++i) {
        EXPECT_EQ(bare.spans[i].op, full.spans[i].op);
        EXPECT_EQ(bare.spans[i].start, full.spans[i].start);
        EXPECT_EQ(bare.spans[i].end, full.spans[i].end);
        EXPECT_EQ(bare.spans[i].waited_because, full.spans[i].waited_because);
        EXPECT_TRUE(bare.spans[i].label.empty());
      }
      for (std::size_t i = 0; i < full.host_spans.size(); ++i) {
        EXPECT_EQ(bare.host_spans[i].end, full.host_spans[i].end);
        EXPECT_TRUE(bare.host_spans[i].label.empty());
        EXPECT_FALSE(full.host_spans[i].label.empty());
      }
    }
  }
}

}  // namespace
