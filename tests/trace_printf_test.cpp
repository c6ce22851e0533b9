// Kernels that call printf (`printf` records: the tracer reads them from each
// module's call graph): a cudaDeviceSynchronize that waits only for them
// shows their output, so the audit does not call it useless; one the host
// needs for data still waits needlessly for a printing stream.
#include <gtest/gtest.h>

#include <string>

#include "overlap/core/device_model.hpp"
#include "overlap/trace/audit.hpp"
#include "trace_builder.hpp"

namespace overlap {
namespace {

using test::TraceBuilder;

constexpr std::uint64_t dev_a = 0x7000'0000'0000;
constexpr std::uint64_t dev_b = 0x7000'1000'0000;
constexpr std::uint64_t host_pinned = 0x2000'0000;
constexpr std::uint64_t bytes = 1 << 20;
const std::string hello = "_Z5helloPi";
const std::string scale = "_Z5scalePf";

bool reports(const trace::AuditReport& r, const std::string& rule) {
  for (const trace::AuditFinding& f : r.findings) {
    if (f.rule == rule) return true;
  }
  return false;
}

// Eight rounds on stream 13: `hello` (writes dev_a, which nothing reads),
// cudaDeviceSynchronize, 30 us of host work.
TraceBuilder hello_rounds(bool printf_record) {
  TraceBuilder t;
  t.stream(13, "non_blocking");
  if (printf_record) t.line({{"t", "printf"}, {"kernel", hello}});
  t.call("cudaMalloc", "alloc", 0, 10, {{"ptr", dev_a}, {"bytes", bytes}, {"memory", "device"}});
  for (int k = 0; k < 8; ++k) {
    const double t0 = 100.0 + 100.0 * k;
    t.call(
        "cudaLaunchKernel", "launch", t0, t0 + 5,
        {{"stream", 13}, {"kernel", hello}, {"grid", {1, 1, 1}}, {"block", {32, 1, 1}}, {"ptrs", {dev_a}}});
    t.work("kernel", t0 + 10, t0 + 60, {{"stream", 13}, {"name", hello}});
    t.call("cudaDeviceSynchronize", "device_sync", t0 + 6, t0 + 62);
  }
  return t.footer();
}

TEST(TracePrintf, TheRecordMarksTheKernelsLaunchesAsPrinting) {
  const trace::Capture run = hello_rounds(true).capture();
  std::size_t printing = 0;
  for (const Op& op : run.program.ops()) printing += op.kind == op_kind::kernel && op.prints ? 1 : 0;
  EXPECT_EQ(printing, 8U);
  EXPECT_EQ(hello_rounds(true).raw().printing_kernels, (std::set<std::string>{hello}));
}

TEST(TracePrintf, ASyncThatShowsPrintedOutputIsNotUseless) {
  const DeviceModel h100 = DeviceModel::load("h100");
  // The same run without the record: nothing the host does needs the kernels.
  EXPECT_TRUE(reports(trace::audit(hello_rounds(false).capture(), h100), "device-synchronize"));
  EXPECT_FALSE(reports(trace::audit(hello_rounds(true).capture(), h100), "device-synchronize"));
}

// Stream 13 runs `hello` for 500 us; stream 14 scales dev_b and downloads
// it, and the host reads the download after each cudaDeviceSynchronize:
// the sync is for stream 14's data and waits for the printing kernel too.
TEST(TracePrintf, ASyncForDataStillWaitsNeedlesslyForAPrintingStream) {
  TraceBuilder t;
  t.stream(13, "non_blocking").stream(14, "non_blocking");
  t.line({{"t", "printf"}, {"kernel", hello}});
  t.call("cudaMalloc", "alloc", 0, 5, {{"ptr", dev_a}, {"bytes", bytes}, {"memory", "device"}});
  t.call("cudaMalloc", "alloc", 5, 10, {{"ptr", dev_b}, {"bytes", bytes}, {"memory", "device"}});
  t.call("cudaMallocHost", "alloc", 10, 20, {{"ptr", host_pinned}, {"bytes", bytes}, {"memory", "pinned"}});
  for (int k = 0; k < 6; ++k) {
    const double t0 = 100.0 + 1000.0 * k;
    t.call(
        "cudaLaunchKernel", "launch", t0, t0 + 5,
        {{"stream", 13}, {"kernel", hello}, {"grid", {1, 1, 1}}, {"block", {32, 1, 1}}, {"ptrs", {dev_a}}});
    t.work("kernel", t0 + 10, t0 + 510, {{"stream", 13}, {"name", hello}});
    t.call(
        "cudaLaunchKernel", "launch", t0 + 6, t0 + 11,
        {{"stream", 14}, {"kernel", scale}, {"grid", {64, 1, 1}}, {"block", {256, 1, 1}}, {"ptrs", {dev_b}}});
    t.work("kernel", t0 + 15, t0 + 65, {{"stream", 14}, {"name", scale}});
    t.call("cudaMemcpyAsync", "copy", t0 + 12, t0 + 17,
           {{"dst", host_pinned},
            {"src", dev_b},
            {"bytes", bytes},
            {"kind", "d2h"},
            {"stream", 14},
            {"async", true}});
    t.work("memcpy", t0 + 65, t0 + 115,
           {{"bytes", bytes}, {"kind", "d2h"}, {"src", "device"}, {"dst", "pinned"}, {"stream", 14}});
    t.call("cudaDeviceSynchronize", "device_sync", t0 + 18, t0 + 515);
  }
  const trace::AuditReport r = trace::audit(t.footer().capture(), DeviceModel::load("h100"));
  bool found = false;
  for (const trace::AuditFinding& f : r.findings) {
    if (f.rule != "device-synchronize") continue;
    found = true;
    EXPECT_NE(f.fix.find("cudaStreamSynchronize"), std::string::npos) << f.fix;
  }
  EXPECT_TRUE(found) << trace::format_text(r);
}

}  // namespace
}  // namespace overlap
