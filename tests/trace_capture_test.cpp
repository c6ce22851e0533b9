// overlap::trace: trace files read back, and converted into a Program and
// its measured Timeline, checked against hand-written traces.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "overlap/core/device_model.hpp"
#include "overlap/core/error.hpp"
#include "overlap/sim/simulator.hpp"
#include "overlap/trace/capture.hpp"
#include "trace_builder.hpp"

namespace overlap {
namespace {

using nlohmann::json;
using test::TraceBuilder;

constexpr std::uint64_t dev_a = 0x7000'0000'0000;
constexpr std::uint64_t host_pinned = 0x2000'0000;
constexpr std::uint64_t host_pageable = 0x5555'0000;

// One stream: cudaMalloc, cudaMallocHost, H2D (pageable) / kernel / D2H (pinned) over two chunks.
TraceBuilder two_chunks() {
  TraceBuilder t;
  t.stream(13, "non_blocking");
  t.call("cudaMalloc", "alloc", 0, 100, {{"ptr", dev_a}, {"bytes", 2048}, {"memory", "device"}});
  t.call("cudaMallocHost", "alloc", 100, 300, {{"ptr", host_pinned}, {"bytes", 2048}, {"memory", "pinned"}});
  for (int c = 0; c < 2; ++c) {
    const double t0 = 1000.0 + 1000.0 * c;
    const std::uint64_t off = 1024ULL * static_cast<std::uint64_t>(c);
    t.call("cudaMemcpyAsync", "copy", t0, t0 + 50,
           {{"dst", dev_a + off},
            {"src", host_pageable + off},
            {"bytes", 1024},
            {"kind", "h2d"},
            {"stream", 13},
            {"async", true}});
    t.work("memcpy", t0 + 10, t0 + 40,
           {{"bytes", 1024}, {"kind", "h2d"}, {"src", "pageable"}, {"dst", "device"}, {"stream", 13}});
    t.call("cudaLaunchKernel", "launch", t0 + 52, t0 + 57,
           {{"stream", 13},
            {"kernel", "_Z12scale_kernelPfm"},
            {"grid", {4, 1, 1}},
            {"block", {256, 1, 1}},
            {"ptrs", {dev_a + off}}});
    t.work("kernel", t0 + 70, t0 + 170, {{"stream", 13}, {"name", "_Z12scale_kernelPfm"}});
    t.call("cudaMemcpyAsync", "copy", t0 + 58, t0 + 63,
           {{"dst", host_pinned + off},
            {"src", dev_a + off},
            {"bytes", 1024},
            {"kind", "d2h"},
            {"stream", 13},
            {"async", true}});
    t.work("memcpy", t0 + 170, t0 + 200,
           {{"bytes", 1024}, {"kind", "d2h"}, {"src", "device"}, {"dst", "pinned"}, {"stream", 13}});
  }
  t.call("cudaDeviceSynchronize", "device_sync", 3000, 3100);
  return t.footer();
}

TEST(TraceFile, ReadsEveryRecordType) {
  TraceBuilder t = two_chunks();
  t.line({{"t", "range"},
          {"name", "step"},
          {"start", TraceBuilder::ns(900)},
          {"end", TraceBuilder::ns(2500)},
          {"tid", 7}});
  t.line({{"t", "alias"}, {"corr", 99}, {"of", 3}});
  t.line({{"t", "error"}, {"message", "MARKER activity could not be enabled"}});
  t.line({{"t", "a_future_record"}});
  const trace::RawTrace raw = t.raw();
  EXPECT_EQ(raw.version, 1);
  EXPECT_EQ(raw.pid, 42U);
  EXPECT_EQ(raw.exe, "/apps/app_test");
  ASSERT_EQ(raw.devices.size(), 1U);
  EXPECT_EQ(raw.devices[0].sms, 100);
  EXPECT_EQ(raw.calls.size(), 9U);
  EXPECT_EQ(raw.work.size(), 6U);
  EXPECT_EQ(raw.ranges.size(), 1U);
  EXPECT_EQ(raw.aliases.at(99), 3U);
  EXPECT_EQ(raw.errors.size(), 1U);
  EXPECT_EQ(raw.unknown_records, 1U);
  EXPECT_TRUE(raw.complete);
  EXPECT_EQ(raw.end_reason, "exit");
  EXPECT_EQ(raw.calls[2].cls, trace::call_class::copy);
  EXPECT_EQ(raw.calls[3].blocks, 4U);
  EXPECT_EQ(raw.calls[3].ptrs, std::vector<std::uint64_t>{dev_a});
}

TEST(TraceFile, ACutLastLineMeansIncompleteNotAnError) {
  std::string text = two_chunks().text();
  text.resize(text.size() - 20);  // the footer, cut mid-line
  std::istringstream in(text);
  const trace::RawTrace raw = trace::read_trace(in, "cut.jsonl");
  EXPECT_FALSE(raw.complete);
  EXPECT_EQ(raw.calls.size(), 9U);
}

TEST(TraceFile, MalformedInputNamesTheLine) {
  std::istringstream garbage_inside(TraceBuilder().text() + "{not json\n" + R"({"t":"footer"})" + "\n");
  EXPECT_THROW(
      {
        try {
          (void)trace::read_trace(garbage_inside, "bad.jsonl");
        } catch (const invalid_input& e) {
          EXPECT_NE(std::string(e.what()).find("bad.jsonl:3:"), std::string::npos) << e.what();
          throw;
        }
      },
      invalid_input);
  std::istringstream no_header(R"({"t":"call","api":"x","start":1,"end":2})"
                               "\n");
  EXPECT_THROW((void)trace::read_trace(no_header, "x.jsonl"), invalid_input);
  std::istringstream empty("");
  EXPECT_THROW((void)trace::read_trace(empty, "x.jsonl"), invalid_input);
  std::istringstream backwards(TraceBuilder().text() + R"({"t":"call","api":"x","start":5,"end":2})"
                                                       "\n{}\n");
  EXPECT_THROW((void)trace::read_trace(backwards, "x.jsonl"), invalid_input);
  std::istringstream wrong_type(TraceBuilder().text() + R"({"t":"call","api":"x","start":"soon","end":2})"
                                                        "\n{}\n");
  EXPECT_THROW((void)trace::read_trace(wrong_type, "x.jsonl"), invalid_input);
}

TEST(TraceCapture, NoCudaActivityIsAnError) {
  EXPECT_THROW((void)TraceBuilder().footer().capture(), invalid_input);
}

TEST(TraceCapture, CallsBecomeOpsInHostOrder) {
  const trace::Capture run = two_chunks().capture();
  const Program& p = run.program;
  EXPECT_EQ(p.name, "app_test");
  ASSERT_EQ(p.streams().size(), 1U);
  EXPECT_EQ(p.streams()[0].name, "stream 13");
  EXPECT_EQ(p.streams()[0].kind, stream_kind::non_blocking);
  // The two allocations (host work: nothing was running for them to wait
  // for), host work (700 us of host time), H2D, K, D2H, host work, H2D, K,
  // D2H, host work, sync, host reads. The 3 us between a chunk's calls are
  // carried into the next gap (below min_host_work).
  std::vector<op_kind> kinds;
  for (const Op& op : p.ops()) kinds.push_back(op.kind);
  const std::vector<op_kind> expected{
      op_kind::host_work, op_kind::host_work,          op_kind::host_work, op_kind::copy,   op_kind::kernel,
      op_kind::copy,      op_kind::host_work,          op_kind::copy,      op_kind::kernel, op_kind::copy,
      op_kind::host_work, op_kind::device_synchronize, op_kind::host_work};
  ASSERT_EQ(kinds, expected);
  EXPECT_DOUBLE_EQ(*p.ops()[2].duration, 0.7);  // 300 us -> 1000 us
  // 1063 -> 2000, plus the 3 us between the chunk's calls, plus what the launch
  // and the pinned D2H took beyond the model's 3 us per call (2 us each).
  EXPECT_NEAR(*p.ops()[6].duration, 0.944, 1e-9);
  EXPECT_DOUBLE_EQ(*p.ops()[0].duration, 0.1);  // the whole call is host time
  EXPECT_EQ(p.ops()[0].label, "cudaMalloc");
  EXPECT_EQ(p.ops()[1].label, "cudaMallocHost");
  const Op& h2d = p.ops()[3];
  EXPECT_EQ(h2d.direction, copy_direction::h2d);
  EXPECT_EQ(h2d.bytes, 1024U);
  EXPECT_EQ(h2d.memory, host_memory::pageable);  // CUPTI said so
  EXPECT_FALSE(h2d.duration.has_value());        // timed by the device model
  const Op& d2h = p.ops()[5];
  EXPECT_EQ(d2h.memory, host_memory::pinned);
  const Op& kernel = p.ops()[4];
  EXPECT_EQ(kernel.label, "scale_kernel");
  EXPECT_DOUBLE_EQ(*kernel.duration, 0.1);
  EXPECT_DOUBLE_EQ(kernel.gpu_share, 0.04);  // 4 blocks on 100 SMs
  // The host reads the results it waited for.
  const Op& reads = p.ops()[12];
  EXPECT_EQ(reads.label, "host reads results");
  ASSERT_EQ(reads.accesses.size(), 2U);
  EXPECT_EQ(reads.accesses[0].buffer, "pinned#1");
  EXPECT_EQ(reads.accesses[1].offset, 1024U);
  EXPECT_EQ(run.origin[3].api, "cudaMemcpyAsync");
  EXPECT_TRUE(run.origin[12].synthesized);
}

TEST(TraceCapture, EveryAllocationCallIsAnOpOfItsOwn) {
  TraceBuilder t;
  t.stream(13, "non_blocking");
  t.call("cudaLaunchKernel", "launch", 0, 5, {{"stream", 13}, {"kernel", "_Z4busyv"}});
  t.work("kernel", 10, 1010, {{"stream", 13}});
  // 4 us, far below min_call_op, and returned with the kernel running.
  t.call("cudaMalloc", "alloc", 20, 24, {{"ptr", dev_a}, {"bytes", 4096}, {"memory", "device"}});
  t.call("cudaMallocAsync", "alloc", 30, 33,
         {{"ptr", dev_a + 8192}, {"bytes", 4096}, {"memory", "async"}, {"stream", 13}});
  t.call("cudaDeviceSynchronize", "device_sync", 40, 1020);
  const trace::Capture run = t.footer().capture();
  const auto& ops = run.program.ops();
  const auto labelled = [&](const std::string& label) {
    for (op_id i = 0; i < ops.size(); ++i) {
      if (ops[i].label == label) return i;
    }
    return static_cast<op_id>(ops.size());
  };
  const op_id malloc = labelled("cudaMalloc");
  ASSERT_LT(malloc, ops.size());
  EXPECT_EQ(ops[malloc].kind, op_kind::host_work);
  EXPECT_DOUBLE_EQ(*ops[malloc].duration, 0.004);
  EXPECT_TRUE(run.origin[malloc].allocation);
  // A stream-ordered allocation is its own op too, in its stream's order,
  // but not one to hoist out of a loop.
  const op_id async = labelled("cudaMallocAsync");
  ASSERT_LT(async, ops.size());
  EXPECT_EQ(ops[async].kind, op_kind::event_record);
  EXPECT_EQ(run.program.streams()[*ops[async].stream].name, "stream 13");
  EXPECT_FALSE(run.origin[async].allocation);
  EXPECT_FALSE(run.origin[0].allocation);  // the launch
}

TEST(TraceCapture, ACallsTimeAfterItsWorkStartedIsHostWorkAfterTheOp) {
  TraceBuilder t;
  t.stream(13, "non_blocking");
  t.call("cudaMalloc", "alloc", 0, 10, {{"ptr", dev_a}, {"bytes", 1 << 20}, {"memory", "device"}});
  t.call("cudaMallocHost", "alloc", 10, 20, {{"ptr", host_pinned}, {"bytes", 1 << 20}, {"memory", "pinned"}});
  // The copy ran 100-200 us; the call that issued it returned at 5100 us
  // (the first cudaMemcpyAsync of a process did so on the H100).
  t.call("cudaMemcpyAsync", "copy", 100, 5100,
         {{"dst", dev_a},
          {"src", host_pinned},
          {"bytes", 1 << 20},
          {"kind", "h2d"},
          {"stream", 13},
          {"async", true}});
  t.work("memcpy", 100, 200,
         {{"bytes", 1 << 20}, {"kind", "h2d"}, {"src", "pinned"}, {"dst", "device"}, {"stream", 13}});
  t.call("cudaLaunchKernel", "launch", 5100, 5105,
         {{"stream", 13}, {"kernel", "_Z4workPf"}, {"ptrs", {dev_a}}});
  t.work("kernel", 5110, 5210, {{"stream", 13}});
  t.call("cudaDeviceSynchronize", "device_sync", 5106, 5220);
  const trace::Capture run = t.footer().capture();
  const auto& ops = run.program.ops();
  const auto copy =
      std::find_if(ops.begin(), ops.end(), [](const Op& op) { return op.kind == op_kind::copy; });
  ASSERT_NE(copy, ops.end());
  ASSERT_NE(copy + 1, ops.end());
  // Everything after the copy started, less the model's 3 us for the call,
  // holds back the kernel: host work between the copy and the launch (with
  // the launch's own 2 us beyond the model's 3, spent before its kernel ran).
  EXPECT_EQ((copy + 1)->kind, op_kind::host_work);
  EXPECT_NEAR(*(copy + 1)->duration, 4.997 + 0.002, 1e-9);
  // Simulated, the kernel starts about when it did, not 4.9 ms early.
  const Timeline predicted = sim::simulate(run.program, DeviceModel::preset("h100"));
  const auto kernel = std::find_if(predicted.spans.begin(), predicted.spans.end(),
                                   [](const Span& s) { return s.kind == op_kind::kernel; });
  ASSERT_NE(kernel, predicted.spans.end());
  EXPECT_GT(kernel->start, 5.0);
}

TEST(TraceCapture, AccessesComeFromPointers) {
  const trace::Capture run = two_chunks().capture();
  const Program& p = run.program;
  const Op& h2d = p.ops()[7];
  ASSERT_EQ(h2d.accesses.size(), 2U);
  EXPECT_EQ(h2d.accesses[0].mode, access_mode::read);
  EXPECT_EQ(h2d.accesses[0].buffer, "host@0x55550400");  // pageable memory, named by address
  EXPECT_EQ(h2d.accesses[1].buffer, "device#1");
  EXPECT_EQ(h2d.accesses[1].offset, 1024U);
  EXPECT_EQ(h2d.accesses[1].size, 1024U);
  // The kernel got dev_a + 1024, where the H2D started: its chunk, read and written.
  const Op& kernel = p.ops()[8];
  ASSERT_EQ(kernel.accesses.size(), 2U);
  EXPECT_EQ(kernel.accesses[0].buffer, "device#1");
  EXPECT_EQ(kernel.accesses[0].offset, 1024U);
  EXPECT_EQ(kernel.accesses[0].size, 1024U);
  EXPECT_EQ(kernel.accesses[0].mode, access_mode::read);
  EXPECT_EQ(kernel.accesses[1].mode, access_mode::write);
  EXPECT_TRUE(run.origin[8].accesses_from_pointers);
}

// The part a pointer parameter starts runs from that pointer (not the
// allocation's start: `d + i * n` is slice i) to the allocation's end when
// nothing else in the trace starts within it.
TEST(TraceCapture, AKernelPointerNoCopyStartsAtRunsToTheAllocationsEnd) {
  TraceBuilder t;
  t.stream(13, "blocking");
  t.call("cudaMalloc", "alloc", 0, 10, {{"ptr", dev_a}, {"bytes", 4096}, {"memory", "device"}});
  t.call("cudaLaunchKernel", "launch", 20, 25,
         {{"stream", 13}, {"kernel", "k"}, {"ptrs", {dev_a + 100, 12345}}});
  t.work("kernel", 30, 40, {{"stream", 13}});
  const trace::Capture run = t.footer().capture();
  const Op& kernel = run.program.ops().back();
  ASSERT_EQ(kernel.accesses.size(), 2U);
  EXPECT_EQ(kernel.accesses[0].offset, 100U);
  EXPECT_EQ(kernel.accesses[0].size, 4096U - 100U);
  EXPECT_EQ(kernel.accesses[0].source, access_source::inferred);
  EXPECT_EQ(kernel.accesses[1].source, access_source::inferred);
}

// A pointer another kernel, copy or memset starts at ends the part before
// it; a copy starting at the very pointer bounds it too; an address reused
// after a free starts afresh.
TEST(TraceCapture, KernelPartsEndWhereTheTraceShowsTheNextStart) {
  TraceBuilder t;
  t.stream(13, "non_blocking").stream(14, "non_blocking");
  t.call("cudaMalloc", "alloc", 0, 10, {{"ptr", dev_a}, {"bytes", 4096}, {"memory", "device"}});
  t.call("cudaMallocHost", "alloc", 10, 20, {{"ptr", host_pinned}, {"bytes", 4096}, {"memory", "pinned"}});
  // The whole buffer uploaded at dev_a: it does not widen the first kernel's part.
  t.call("cudaMemcpyAsync", "copy", 30, 33,
         {{"dst", dev_a},
          {"src", host_pinned},
          {"bytes", 4096},
          {"kind", "h2d"},
          {"stream", 13},
          {"async", true}});
  t.call("cudaLaunchKernel", "launch", 40, 43, {{"stream", 13}, {"kernel", "k"}, {"ptrs", {dev_a}}});
  t.call("cudaLaunchKernel", "launch", 44, 47, {{"stream", 14}, {"kernel", "k"}, {"ptrs", {dev_a + 1024}}});
  // A memset of 512 bytes at dev_a + 3072: ends the second kernel's part, bounds none.
  t.call("cudaMemsetAsync", "memset", 48, 50,
         {{"dst", dev_a + 3072}, {"bytes", 512}, {"stream", 14}, {"async", true}});
  t.call("cudaLaunchKernel", "launch", 51, 54, {{"stream", 14}, {"kernel", "k"}, {"ptrs", {dev_a + 3072}}});
  t.call("cudaFree", "free", 60, 70, {{"ptr", dev_a}, {"memory", "device"}});
  // The address again, a new allocation: the old starts do not cut it.
  t.call("cudaMalloc", "alloc", 80, 90, {{"ptr", dev_a}, {"bytes", 4096}, {"memory", "device"}});
  t.call("cudaLaunchKernel", "launch", 91, 94, {{"stream", 13}, {"kernel", "k"}, {"ptrs", {dev_a}}});
  const trace::Capture run = t.footer().capture();
  std::vector<Access> parts;
  for (const Op& op : run.program.ops()) {
    if (op.kind == op_kind::kernel && !op.accesses.empty()) parts.push_back(op.accesses.front());
  }
  ASSERT_EQ(parts.size(), 4U);
  EXPECT_EQ(parts[0].offset, 0U);
  EXPECT_EQ(parts[0].size, 1024U);  // the second kernel's pointer ends it
  EXPECT_EQ(parts[1].offset, 1024U);
  EXPECT_EQ(parts[1].size, 2048U);  // the memset's start ends it
  EXPECT_EQ(parts[2].offset, 3072U);
  EXPECT_EQ(parts[2].size, 512U);  // the memset at its pointer bounds it
  EXPECT_NE(parts[3].buffer, parts[0].buffer);
  EXPECT_EQ(parts[3].offset, 0U);
  EXPECT_EQ(parts[3].size, 4096U);
}

TEST(TraceCapture, SyncCopiesRunOnTheLegacyStream) {
  TraceBuilder t;
  t.stream(7, "legacy_default");
  t.stream(13, "non_blocking");
  t.call("cudaMemcpy", "copy", 0, 500,
         {{"dst", dev_a},
          {"src", host_pinned},
          {"bytes", 1 << 20},
          {"kind", "h2d"},
          {"stream", 7},
          {"async", false}});
  t.work("memcpy", 10, 490,
         {{"bytes", 1 << 20}, {"kind", "h2d"}, {"src", "pinned"}, {"dst", "device"}, {"stream", 7}});
  const trace::Capture run = t.footer().capture();
  const Op& copy = run.program.ops().front();
  EXPECT_EQ(copy.mode, call_mode::synchronous);
  EXPECT_EQ(run.program.streams()[*copy.stream].kind, stream_kind::legacy_default);
  EXPECT_EQ(run.program.streams()[*copy.stream].name, "default");
}

TEST(TraceCapture, TheMeasuredTimelineHasTheActivityTimes) {
  const trace::Capture run = two_chunks().capture();
  const Timeline& t = run.timeline;
  EXPECT_EQ(t.device, "Test GPU");
  ASSERT_EQ(t.spans.size(), 6U);
  EXPECT_EQ(t.spans[0].op, 3U);
  EXPECT_EQ(t.spans[0].unit, engine::h2d_copy);
  EXPECT_NEAR(t.spans[0].start, 1.010, 1e-9);
  EXPECT_NEAR(t.spans[0].end, 1.040, 1e-9);
  EXPECT_EQ(t.spans[1].unit, engine::compute);
  EXPECT_NEAR(t.spans[1].duration(), 0.1, 1e-9);
  EXPECT_EQ(t.spans[2].unit, engine::d2h_copy);
  EXPECT_NEAR(t.total(), 3.1, 1e-9);  // the device sync returned at 3100 us
  // The pageable copy's call and the sync are blocked host time; the launch is a call.
  int blocked = 0;
  for (const HostSpan& h : t.host_spans) blocked += h.activity == host_activity::blocked ? 1 : 0;
  EXPECT_EQ(blocked, 2 + 1);  // two pageable copies, the sync
}

TEST(TraceCapture, RecordsAndWaitsKeepTheirEvents) {
  TraceBuilder t;
  t.stream(13, "non_blocking").stream(14, "non_blocking");
  t.call("cudaEventRecord", "record", 0, 5, {{"event", 0xe1}, {"stream", 13}});
  t.call("cudaStreamWaitEvent", "wait", 6, 8, {{"event", 0xe1}, {"stream", 14}});
  t.call("cudaEventSynchronize", "event_sync", 9, 12, {{"event", 0xe1}});
  const trace::Capture run = t.footer().capture();
  const Program& p = run.program;
  ASSERT_EQ(p.events().size(), 1U);
  ASSERT_EQ(p.ops().size(), 3U);
  EXPECT_EQ(p.ops()[0].kind, op_kind::event_record);
  EXPECT_EQ(p.ops()[1].kind, op_kind::stream_wait_event);
  EXPECT_EQ(*p.ops()[1].stream, 1U);
  EXPECT_EQ(p.ops()[2].kind, op_kind::event_synchronize);
}

TEST(TraceCapture, FailedCallsAndUnmatchedWorkAreNoted) {
  TraceBuilder t;
  t.stream(13, "blocking");
  t.line({{"t", "call"},
          {"corr", 50},
          {"api", "cudaMalloc"},
          {"cls", "alloc"},
          {"start", TraceBuilder::ns(0)},
          {"end", TraceBuilder::ns(5)},
          {"status", 2}});
  t.line({{"t", "kernel"},
          {"corr", 77},
          {"start", TraceBuilder::ns(10)},
          {"end", TraceBuilder::ns(20)},
          {"stream", 13}});
  const trace::Capture run = t.capture();  // no footer either
  EXPECT_EQ(run.failed_calls, 1U);
  EXPECT_EQ(run.unmatched_work, 1U);
  EXPECT_FALSE(run.complete);
  EXPECT_EQ(run.notes.size(), 3U);
}

TEST(TraceCapture, ShortKernelNames) {
  EXPECT_EQ(trace::short_kernel_name("_Z12scale_kernelPfm"), "scale_kernel");
  EXPECT_EQ(trace::short_kernel_name("_ZN2ns4axpbEPKfPfm"), "ns::axpb");
  EXPECT_EQ(trace::short_kernel_name("_Z4fillIfEvPT_m"), "fill<float>");
  EXPECT_EQ(trace::short_kernel_name("plain_c_kernel"), "plain_c_kernel");
  EXPECT_EQ(trace::short_kernel_name("void at::native::elementwise_kernel<128, 4>(int, float)"),
            "at::native::elementwise_kernel<128, 4>");
  // Anonymous namespaces and lambdas are part of the name (PyTorch's kernels, tests/apps).
  EXPECT_EQ(trace::short_kernel_name("_ZN12_GLOBAL__N_111side_kernelEPKjPjm"),
            "(anonymous namespace)::side_kernel");
  EXPECT_EQ(trace::short_kernel_name("void at::native::(anonymous namespace)::distribution_kernel<float, "
                                     "at::native::{lambda(float)#1}>(at::TensorIteratorBase&, float)"),
            "at::native::(anonymous namespace)::distribution_kernel<float, at::native::{lambda(float)#1}>");
}

}  // namespace
}  // namespace overlap

namespace overlap {
namespace {

TEST(TraceCalibration, LatenciesAreReadOffTheTrace) {
  const trace::Capture run = two_chunks().capture();
  const trace::Calibration& c = run.calibration;
  // Each kernel was launched by 57 us past its chunk's start, after its upload
  // ended at 40 us, and started at 70 us: 13 us. Each download started as its
  // kernel ended: 0. The pageable uploads started inside their calls: no sample.
  ASSERT_TRUE(c.kernel_start_latency.has_value());
  EXPECT_NEAR(*c.kernel_start_latency, 0.013, 1e-9);
  ASSERT_TRUE(c.copy_start_latency.has_value());
  EXPECT_NEAR(*c.copy_start_latency, 0.0, 1e-9);
  EXPECT_EQ(c.start_samples, 4U);
  EXPECT_FALSE(c.h2d_pageable_gbps.has_value());  // 1 KiB copies are below the 64 KiB the rate is read from

  // Too few samples change nothing; enough do, and say so.
  const DeviceModel h100 = DeviceModel::preset("h100");
  std::vector<std::string> said;
  EXPECT_EQ(trace::calibrate(h100, run, &said).kernel_launch_latency, h100.kernel_launch_latency);
  EXPECT_TRUE(said.empty());
  trace::Capture more = run;
  more.calibration.start_samples = 10;
  more.calibration.host_wakeup_latency = 0.004;
  more.calibration.wakeup_samples = 3;
  more.calibration.h2d_pageable_gbps = 9.5;
  const DeviceModel calibrated = trace::calibrate(h100, more, &said);
  EXPECT_NEAR(calibrated.kernel_launch_latency, 0.013, 1e-12);
  EXPECT_NEAR(calibrated.copy_start_latency, 0.0, 1e-12);
  EXPECT_NEAR(calibrated.host_wakeup_latency, 0.004, 1e-12);
  EXPECT_NEAR(calibrated.h2d_pageable.at(1 << 20), 9.5, 1e-12);
  EXPECT_EQ(said.size(), 3U);
}

TEST(TraceCalibration, PageableRatesAreTheHostsTimeInTheCall) {
  TraceBuilder t;
  t.stream(13, "non_blocking");
  t.call("cudaMalloc", "alloc", 0, 10, {{"ptr", dev_a}, {"bytes", 2 << 20}, {"memory", "device"}});
  // 1 MiB each; the host stages for 140 us before the DMA runs (420 us), and
  // the call returns with the last piece still moving: 550 us in the call.
  for (int i = 0; i < 2; ++i) {
    const double t0 = 100.0 + 1000.0 * i;
    t.call("cudaMemcpyAsync", "copy", t0, t0 + 550,
           {{"dst", dev_a + (static_cast<std::uint64_t>(i) << 20)},
            {"src", host_pageable},
            {"bytes", 1 << 20},
            {"kind", "h2d"},
            {"stream", 13},
            {"async", true}});
    t.work("memcpy", t0 + 140, t0 + 560,
           {{"bytes", 1 << 20}, {"kind", "h2d"}, {"src", "pageable"}, {"dst", "device"}, {"stream", 13}});
  }
  t.call("cudaStreamSynchronize", "stream_sync", 1700, 1710, {{"stream", 13}});
  const trace::Capture run = t.footer().capture();
  ASSERT_TRUE(run.calibration.h2d_pageable_gbps.has_value());
  EXPECT_NEAR(*run.calibration.h2d_pageable_gbps, (1 << 20) / 550e-6 / 1e9, 1e-9);
}

}  // namespace
}  // namespace overlap
