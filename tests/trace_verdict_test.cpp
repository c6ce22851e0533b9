// The audit's verdict names what bounds the steady state (issue 35, item 7):
// one hand-written trace per bound, and recorded corpus traces where a
// bound needs a finding the simulator prices (false serialization).
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "overlap/core/device_model.hpp"
#include "overlap/trace/audit.hpp"
#include "trace_builder.hpp"

namespace overlap {
namespace {

using test::TraceBuilder;

constexpr std::uint64_t dev_a = 0x7000'0000'0000;
constexpr std::uint64_t host_pinned = 0x2000'0000;
constexpr std::uint64_t mib = 1 << 20;

trace::AuditReport audit_of(const TraceBuilder& t) {
  return trace::audit(t.capture(), DeviceModel::preset("h100"));
}

// A non-blocking stream 13 and the set-up before the loop: an allocation.
TraceBuilder with_setup() {
  TraceBuilder t;
  t.stream(13, "non_blocking");
  t.call("cudaMalloc", "alloc", 0, 100, {{"ptr", dev_a}, {"bytes", 64 * mib}, {"memory", "device"}});
  return t;
}

void launch(TraceBuilder& t, double at, double call_us, double start, double end) {
  t.call("cudaLaunchKernel", "launch", at, at + call_us,
         {{"stream", 13}, {"kernel", "_Z4stepPf"}, {"ptrs", {dev_a}}});
  t.work("kernel", start, end, {{"stream", 13}});
}

TEST(TraceVerdict, CopyEnginesWhenBackToBackUploadsFillTheSteadyState) {
  TraceBuilder t = with_setup();
  double dev = 200;
  for (int i = 0; i < 20; ++i) {
    const double at = 200 + 4 * i;
    t.call("cudaMemcpyAsync", "copy", at, at + 3,
           {{"dst", dev_a},
            {"src", host_pinned},
            {"bytes", 8 * mib},
            {"kind", "h2d"},
            {"stream", 13},
            {"async", true}});
    t.work("memcpy", dev, dev + 1000,
           {{"bytes", 8 * mib}, {"kind", "h2d"}, {"src", "pinned"}, {"dst", "device"}, {"stream", 13}});
    dev += 1000;
  }
  t.call("cudaStreamSynchronize", "stream_sync", 290, dev + 5, {{"stream", 13}});
  const trace::AuditReport r = audit_of(t.footer());
  EXPECT_EQ(r.verdict.bound, "copy engines") << r.verdict.text;
  EXPECT_NEAR(r.verdict.floor, 20.0, 0.01);
}

TEST(TraceVerdict, ComputeWhenKernelsFillTheSteadyState) {
  TraceBuilder t = with_setup();
  double dev = 200;
  for (int i = 0; i < 20; ++i, dev += 1000) launch(t, 200 + 4 * i, 3, dev, dev + 1000);
  t.call("cudaStreamSynchronize", "stream_sync", 290, dev + 5, {{"stream", 13}});
  const trace::AuditReport r = audit_of(t.footer());
  EXPECT_EQ(r.verdict.bound, "compute") << r.verdict.text;
}

// The first launch of a kernel loads its module and may wait for the device
// (lazy loading): one-time cost, not issue cost. Here it takes as long as
// the upload it waits for; without that rule the host "issued" for longer
// than the copy engine worked.
TEST(TraceVerdict, AFirstLaunchLoadingItsModuleIsNotIssueCost) {
  TraceBuilder t = with_setup();
  t.call("cudaMemcpyAsync", "copy", 200, 203,
         {{"dst", dev_a},
          {"src", host_pinned},
          {"bytes", 8 * mib},
          {"kind", "h2d"},
          {"stream", 13},
          {"async", true}});
  t.work("memcpy", 205, 1205,
         {{"bytes", 8 * mib}, {"kind", "h2d"}, {"src", "pinned"}, {"dst", "device"}, {"stream", 13}});
  launch(t, 204, 1010, 1215, 1230);
  t.call("cudaMemcpyAsync", "copy", 1216, 1219,
         {{"dst", host_pinned},
          {"src", dev_a},
          {"bytes", 8 * mib},
          {"kind", "d2h"},
          {"stream", 13},
          {"async", true}});
  t.work("memcpy", 1231, 2231,
         {{"bytes", 8 * mib}, {"kind", "d2h"}, {"src", "device"}, {"dst", "pinned"}, {"stream", 13}});
  t.call("cudaStreamSynchronize", "stream_sync", 1220, 2235, {{"stream", 13}});
  const trace::AuditReport r = audit_of(t.footer());
  EXPECT_EQ(r.verdict.bound, "copy engines") << r.verdict.text;
  ASSERT_FALSE(r.threads.empty());
  EXPECT_LT(r.threads.front().issuing, 0.1);
}

// The host computes 1 ms between 0.1 ms kernels: the device idles while the
// host works, not while it waits.
TEST(TraceVerdict, HostIssueWhenTheDeviceIdlesWhileTheHostWorks) {
  TraceBuilder t = with_setup();
  double at = 200;
  for (int i = 0; i < 20; ++i) {
    launch(t, at, 3, at + 5, at + 105);
    at += 1100;  // 1 ms of the host's own work after the launch
  }
  t.call("cudaStreamSynchronize", "stream_sync", at, at + 2, {{"stream", 13}});
  const trace::AuditReport r = audit_of(t.footer());
  EXPECT_EQ(r.verdict.bound, "host issue") << r.verdict.text;
}

// Each 10 us kernel is followed by a synchronize that returns 40 us after
// it ended: the device idles while the host waits (and wakes up).
TEST(TraceVerdict, HostSynchronizationWhenTheDeviceIdlesWhileTheHostWaits) {
  TraceBuilder t = with_setup();
  double at = 200;
  for (int i = 0; i < 60; ++i) {
    launch(t, at, 3, at + 4, at + 14);
    t.call("cudaStreamSynchronize", "stream_sync", at + 4, at + 54, {{"stream", 13}});
    at += 55;
  }
  const trace::AuditReport r = audit_of(t.footer());
  EXPECT_EQ(r.verdict.bound, "host synchronization") << r.verdict.text;
  EXPECT_NE(r.verdict.text.find("blocked waiting"), std::string::npos) << r.verdict.text;
}

// 100 launches of 20 us each for 2 us kernels: the launches, not the work,
// fill the time.
TEST(TraceVerdict, LaunchLatencyWhenTinyKernelsTakeLongerToLaunchThanToRun) {
  TraceBuilder t = with_setup();
  double at = 200;
  for (int i = 0; i < 100; ++i, at += 21) launch(t, at, 20, at + 21, at + 23);
  t.call("cudaStreamSynchronize", "stream_sync", at, at + 5, {{"stream", 13}});
  const trace::AuditReport r = audit_of(t.footer());
  EXPECT_EQ(r.verdict.bound, "launch latency") << r.verdict.text;
  EXPECT_NE(r.verdict.text.find("median"), std::string::npos) << r.verdict.text;
}

// 32 streams of dependent kernel pairs with the default 8 connections,
// recorded on an H100 (simpleHyperQ): the hardware-queue-sharing finding's
// repair is most of the steady state, so the verdict is false
// serialization, with what CUDA_DEVICE_MAX_CONNECTIONS is predicted to give.
TEST(TraceVerdict, FalseSerializationWhenStreamsShareHardwareQueues) {
  std::ifstream in(std::string(OVERLAP_SOURCE_DIR) +
                   "/tests/fixtures/traces/corpus/simpleHyperQ.static.jsonl");
  ASSERT_TRUE(in.good());
  const trace::Capture run = trace::capture(trace::read_trace(in, "simpleHyperQ.static.jsonl"));
  const trace::AuditReport r = trace::audit(run, DeviceModel::preset("h100"));
  EXPECT_EQ(r.verdict.bound, "false serialization") << r.verdict.text;
  EXPECT_NE(r.verdict.text.find("CUDA_DEVICE_MAX_CONNECTIONS="), std::string::npos) << r.verdict.text;
  EXPECT_LT(r.verdict.floor, 0.75 * r.verdict.steady) << r.verdict.text;
}

}  // namespace
}  // namespace overlap
