// `overlap check` and `overlap simulate` with --connections: the
// CUDA_DEVICE_MAX_CONNECTIONS of the run they model, over the model's own.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli_run.hpp"

namespace {

using Result = overlap::test::CliResult;

Result run(const std::vector<std::string>& args) {
  return overlap::test::run_cli(args);
}

std::string trap() {
  return std::string(OVERLAP_SOURCE_DIR) + "/examples/check/cuda-hardware-queue-sharing-trap.yaml";
}

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

TEST(ConnectionsCli, CheckReportsHardwareQueueSharingOnTheH100) {
  const Result r = run({"check", trap(), "--device", "h100"});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(contains(r.out, "warning hardware-queue-sharing: 32 streams share 8 hardware queues")) << r.out;
  EXPECT_TRUE(contains(r.out, "Set CUDA_DEVICE_MAX_CONNECTIONS=32")) << r.out;
  EXPECT_TRUE(contains(r.out, "time lost")) << r.out;

  const Result enough = run({"check", trap(), "--device", "h100", "--connections", "32"});
  EXPECT_EQ(enough.code, 0) << enough.out << enough.err;
  EXPECT_FALSE(contains(enough.out, "warning hardware-queue-sharing")) << enough.out;
}

TEST(ConnectionsCli, SimulateTakesTheRunsConnections) {
  const Result shared = run({"simulate", trap(), "--json"});
  const Result own = run({"simulate", trap(), "--json", "--connections", "32"});
  ASSERT_EQ(shared.code, 0) << shared.err;
  ASSERT_EQ(own.code, 0) << own.err;
  EXPECT_NE(shared.out, own.out);
  const Result bad = run({"simulate", trap(), "--connections", "33"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_TRUE(contains(bad.err, "--connections")) << bad.err;
  EXPECT_EQ(bad.err.find('\n'), bad.err.size() - 1) << bad.err;
}

}  // namespace
