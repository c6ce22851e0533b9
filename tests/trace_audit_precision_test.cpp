// Every warning true on real programs: the rules that made false warnings on
// the corpus (bench/corpus), each checked on a synthetic trace built for its
// pattern and on the recorded corpus trace that showed it.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "overlap/core/device_model.hpp"
#include "overlap/trace/audit.hpp"
#include "overlap/trace/phases.hpp"
#include "trace_builder.hpp"

namespace overlap {
namespace {

using nlohmann::json;
using test::TraceBuilder;

constexpr std::uint64_t dev_a = 0x7000'0000'0000;
constexpr std::uint64_t dev_b = 0x7000'1000'0000;
constexpr std::uint64_t dev_c = 0x7000'2000'0000;
constexpr std::uint64_t host_a = 0x2000'0000;
constexpr std::uint64_t host_b = 0x3000'0000;
constexpr std::uint64_t n = 1 << 20;

trace::AuditReport audit_of(const trace::Capture& run) {
  return trace::audit(run, DeviceModel::preset("h100"));
}

trace::AuditReport corpus(const std::string& id) {
  return audit_of(trace::capture(test::recorded_trace("corpus/" + id)));
}

const trace::AuditFinding* find(const trace::AuditReport& r, const std::string& rule) {
  const auto it = std::find_if(r.findings.begin(), r.findings.end(),
                               [&](const trace::AuditFinding& f) { return f.rule == rule; });
  return it == r.findings.end() ? nullptr : &*it;
}

json copy_call(std::uint64_t dst, std::uint64_t src, std::uint64_t bytes, const char* kind, int stream,
               bool async) {
  return {{"dst", dst}, {"src", src}, {"bytes", bytes}, {"kind", kind}, {"stream", stream}, {"async", async}};
}

json copy_work(std::uint64_t bytes, const char* kind, int stream, const char* host = "pinned") {
  const bool up = std::string(kind) == "h2d";
  return {{"bytes", bytes},
          {"kind", kind},
          {"src", up ? host : "device"},
          {"dst", up ? "device" : host},
          {"stream", stream}};
}

// --- races: one kernel's launches sharing an argument -------------------------------------

// init<<<g, b, 0, s[i]>>>(a + i * n, factor) on 4 streams: each launch its
// own slice of a, all the same 4-byte factor. Launches of one kernel given
// the same pointer in the same parameter share it (an input): no race.
TEST(TraceAuditPrecision, OneKernelSharingAnArgumentAcrossStreamsIsNoRace) {
  TraceBuilder t;
  for (int i = 0; i < 4; ++i) t.stream(20 + i, "non_blocking");
  t.call("cudaMalloc", "alloc", 0, 10, {{"ptr", dev_a}, {"bytes", 4 * n}, {"memory", "device"}});
  t.call("cudaMalloc", "alloc", 10, 20, {{"ptr", dev_c}, {"bytes", 4}, {"memory", "device"}});
  for (int i = 0; i < 4; ++i) {
    t.call("cudaLaunchKernel", "launch", 30 + 4 * i, 33 + 4 * i,
           {{"stream", 20 + i}, {"kernel", "_Z4initPiS_i"}, {"ptrs", {dev_a + i * n, dev_c}}});
    t.work("kernel", 100 + i, 300 + i, {{"stream", 20 + i}});
  }
  t.call("cudaDeviceSynchronize", "device_sync", 60, 400);
  const trace::AuditReport r = audit_of(t.footer().capture());
  EXPECT_EQ(find(r, "race"), nullptr) << trace::format_text(r);
}

// Ping-pong: step(x, y) on one stream, step(y, x) on another, unordered. The
// same kernel gets the same pointers, but in different parameters: one
// launch's input is the other's output, a race (possible: inferred).
TEST(TraceAuditPrecision, OneKernelPassedABufferInTurnAsInputAndOutputStillRaces) {
  TraceBuilder t;
  t.stream(20, "non_blocking").stream(21, "non_blocking");
  t.call("cudaMalloc", "alloc", 0, 10, {{"ptr", dev_a}, {"bytes", n}, {"memory", "device"}});
  t.call("cudaMalloc", "alloc", 10, 20, {{"ptr", dev_b}, {"bytes", n}, {"memory", "device"}});
  t.call("cudaLaunchKernel", "launch", 30, 33,
         {{"stream", 20}, {"kernel", "_Z4stepPfS_"}, {"ptrs", {dev_a, dev_b}}});
  t.work("kernel", 100, 300, {{"stream", 20}});
  t.call("cudaLaunchKernel", "launch", 34, 37,
         {{"stream", 21}, {"kernel", "_Z4stepPfS_"}, {"ptrs", {dev_b, dev_a}}});
  t.work("kernel", 101, 301, {{"stream", 21}});
  t.call("cudaDeviceSynchronize", "device_sync", 40, 400);
  const trace::AuditReport r = audit_of(t.footer().capture());
  const trace::AuditFinding* race = find(r, "race");
  ASSERT_NE(race, nullptr) << trace::format_text(r);
  EXPECT_EQ(race->certainty, "possible");
}

// simpleStreams: init_array(d_a + i * n / 4, d_c, ...) on 4 streams; the
// shared 4-byte d_c made a possible race on every pair of streams.
TEST(TraceAuditPrecision, SimpleStreamsHasNoRace) {
  const trace::AuditReport r = corpus("simpleStreams.static");
  EXPECT_EQ(find(r, "race"), nullptr) << trace::format_text(r);
}

// --- phases: upload, compute, download once ------------------------------------------------

// Two synchronous 256 MiB uploads, four kernels on two non-blocking
// streams, the host waits, two synchronous downloads of the results: the
// steady state is the kernels'; the copies are set-up and teardown, so the
// synchronous-copy finding is a note.
TraceBuilder upload_compute_download(bool overlapped_upload) {
  TraceBuilder t;
  t.stream(7, "legacy_default").stream(13, "non_blocking").stream(14, "non_blocking");
  t.call("cudaMalloc", "alloc", 0, 10, {{"ptr", dev_a}, {"bytes", n}, {"memory", "device"}});
  t.call("cudaMalloc", "alloc", 10, 20, {{"ptr", dev_b}, {"bytes", n}, {"memory", "device"}});
  if (overlapped_upload) {
    // A pipeline: the upload is still running when the first kernel is issued.
    t.call("cudaMemcpyAsync", "copy", 100, 105, copy_call(dev_a, host_a, n, "h2d", 13, true));
    t.work("memcpy", 110, 100'200, copy_work(n, "h2d", 13));
    t.call("cudaMemcpyAsync", "copy", 106, 108, copy_call(dev_b, host_b, n, "h2d", 14, true));
    t.work("memcpy", 100'201, 100'300, copy_work(n, "h2d", 14));
    t.call("cudaLaunchKernel", "launch", 100'050, 100'055,
           {{"stream", 13}, {"kernel", "_Z4copyPfS_"}, {"ptrs", {dev_a}}});
    t.work("kernel", 100'201, 100'260, {{"stream", 13}});
    return t.footer();
  } else {
    t.call("cudaMemcpy", "copy", 100, 50'010, copy_call(dev_a, host_a, n, "h2d", 7, false));
    t.work("memcpy", 110, 50'000, copy_work(n, "h2d", 7, "pageable"));
  }
  t.call("cudaMemcpy", "copy", 50'020, 100'010, copy_call(dev_b, host_b, n, "h2d", 7, false));
  t.work("memcpy", 50'030, 100'000, copy_work(n, "h2d", 7, "pageable"));
  double at = 100'100;
  for (int k = 0; k < 4; ++k) {
    const int stream = 13 + k % 2;
    t.call("cudaLaunchKernel", "launch", at, at + 5,
           {{"stream", stream}, {"kernel", "_Z4copyPfS_"}, {"ptrs", {k % 2 == 0 ? dev_a : dev_b}}});
    t.work("kernel", at + 10, at + 110, {{"stream", stream}});
    at += 110;
  }
  t.call("cudaDeviceSynchronize", "device_sync", at, at + 20);
  t.call("cudaMemcpy", "copy", at + 30, at + 50'030, copy_call(host_a, dev_a, n, "d2h", 7, false));
  t.work("memcpy", at + 40, at + 50'020, copy_work(n, "d2h", 7, "pageable"));
  t.call("cudaMemcpy", "copy", at + 50'040, at + 100'040, copy_call(host_b, dev_b, n, "d2h", 7, false));
  t.work("memcpy", at + 50'050, at + 100'030, copy_work(n, "d2h", 7, "pageable"));
  return t.footer();
}

TEST(TraceAuditPrecision, UploadsBeforeTheFirstKernelAndResultsAfterTheLastAreNotTheSteadyState) {
  const trace::Capture run = upload_compute_download(false).capture();
  const trace::Phases phases = trace::find_phases(run);
  EXPECT_EQ(phases.source, "device work");
  EXPECT_NEAR(phases.steady_start, 100.1, 1e-6);              // the first kernel's launch, ms
  EXPECT_NEAR(phases.steady_end, 100.1 + 0.33 + 0.11, 1e-6);  // the last kernel's end
  const trace::AuditReport r = audit_of(run);
  for (const trace::AuditFinding& f : r.findings)
    EXPECT_LT(f.level, check::severity::warning) << trace::format_text(r);
}

// An upload still running when the first kernel is issued overlaps it: the
// steady state starts there.
TEST(TraceAuditPrecision, AnUploadOverlappingTheFirstKernelStaysInTheSteadyState) {
  const trace::Phases phases = trace::find_phases(upload_compute_download(true).capture());
  EXPECT_NEAR(phases.steady_start, 0.1, 1e-6);
}

// StreamPriorities: 2 x 256 MiB cudaMemcpy before the kernels and 2 after,
// only non-blocking streams: no warning, the kernels are the steady state.
TEST(TraceAuditPrecision, StreamPrioritiesSetUpAndResultCopiesAreNotWarnings) {
  const trace::AuditReport r = corpus("StreamPriorities.static");
  EXPECT_EQ(r.count(check::severity::warning), 0U) << trace::format_text(r);
  EXPECT_EQ(r.count(check::severity::error), 0U);
}

// --- severity: the pattern's every instance, not the few it lists ----------------------------

// 25 synchronous copies before the loop (startup) and 25 in a repeated NVTX
// range "step", each next to an unrelated kernel on a non-blocking stream.
// The finding lists its first 20 ops, all startup's; the steady state's
// instances make it a warning.
TEST(TraceAuditPrecision, AFindingWhoseListedOpsAreStartupButWhoseLaterOnesAreNotIsAWarning) {
  TraceBuilder t;
  t.stream(7, "legacy_default").stream(13, "non_blocking");
  t.call("cudaMalloc", "alloc", 0, 10, {{"ptr", dev_a}, {"bytes", n}, {"memory", "device"}});
  t.call("cudaMalloc", "alloc", 10, 20, {{"ptr", dev_b}, {"bytes", n}, {"memory", "device"}});
  t.call("cudaMallocHost", "alloc", 20, 30, {{"ptr", host_a}, {"bytes", n}, {"memory", "pinned"}});
  double at = 100;
  for (int i = 0; i < 50; ++i) {
    if (i >= 25) t.range("step", at - 1, at + 220);
    t.call("cudaLaunchKernel", "launch", at, at + 3,
           {{"stream", 13}, {"kernel", "_Z4workPf"}, {"ptrs", {dev_b}}});
    t.work("kernel", at + 5, at + 105, {{"stream", 13}});
    t.call("cudaMemcpy", "copy", at + 4, at + 210, copy_call(dev_a, host_a, n, "h2d", 7, false));
    t.work("memcpy", at + 106, at + 205, copy_work(n, "h2d", 7));
    at += 220;
  }
  t.call("cudaDeviceSynchronize", "device_sync", at, at + 10);
  const trace::Capture run = t.footer().capture();
  const trace::AuditReport r = audit_of(run);
  EXPECT_EQ(r.phases.source, "range") << trace::format_text(r);
  const trace::AuditFinding* f = find(r, "synchronous-copy");
  ASSERT_NE(f, nullptr) << trace::format_text(r);
  ASSERT_FALSE(f->ops.empty());
  EXPECT_FALSE(r.phases.in_steady(run.origin[f->ops.back().id].call_start))
      << "the listed ops should all be startup's for this test to mean something";
  ASSERT_TRUE(f->measured.has_value());
  EXPECT_EQ(f->measured->calls, 25U);
  EXPECT_EQ(f->level, check::severity::warning) << trace::format_text(r);
}

// --- the legacy default stream when its barrier orders nothing ---------------------------------

// Pageable cudaMemcpyAsync on the legacy stream, each waited for, before any
// blocking stream has work; then pinned copies on two blocking streams. The
// barrier orders nothing (no legacy-default-stream); the pageable copies
// still block the host (pageable-async-copy).
TEST(TraceAuditPrecision, LegacyCopiesBeforeAnyBlockingStreamWorksAreNoBarrier) {
  TraceBuilder t;
  t.stream(7, "legacy_default").stream(13, "blocking").stream(14, "blocking");
  t.call("cudaMalloc", "alloc", 0, 10, {{"ptr", dev_a}, {"bytes", n}, {"memory", "device"}});
  t.call("cudaMalloc", "alloc", 10, 20, {{"ptr", dev_b}, {"bytes", n}, {"memory", "device"}});
  t.call("cudaMemcpyAsync", "copy", 100, 400, copy_call(dev_a, 0x9000'0000, n, "h2d", 7, true));
  t.work("memcpy", 200, 390, copy_work(n, "h2d", 7, "pageable"));
  t.call("cudaStreamSynchronize", "stream_sync", 401, 402, {{"stream", 7}});
  t.call("cudaMemcpyAsync", "copy", 410, 800, copy_call(0x9100'0000, dev_b, n, "d2h", 7, true));
  t.work("memcpy", 500, 790, copy_work(n, "d2h", 7, "pageable"));
  t.call("cudaStreamSynchronize", "stream_sync", 801, 802, {{"stream", 7}});
  t.call("cudaMallocHost", "alloc", 810, 820, {{"ptr", host_a}, {"bytes", n}, {"memory", "pinned"}});
  t.call("cudaMallocHost", "alloc", 820, 830, {{"ptr", host_b}, {"bytes", n}, {"memory", "pinned"}});
  t.call("cudaMemcpyAsync", "copy", 840, 845, copy_call(dev_a, host_a, n, "h2d", 13, true));
  t.work("memcpy", 850, 950, copy_work(n, "h2d", 13));
  t.call("cudaMemcpyAsync", "copy", 846, 850, copy_call(host_b, dev_b, n, "d2h", 14, true));
  t.work("memcpy", 852, 952, copy_work(n, "d2h", 14));
  t.call("cudaDeviceSynchronize", "device_sync", 851, 960);
  const trace::AuditReport r = audit_of(t.footer().capture());
  EXPECT_EQ(find(r, "legacy-default-stream"), nullptr) << trace::format_text(r);
  const trace::AuditFinding* pageable = find(r, "pageable-async-copy");
  ASSERT_NE(pageable, nullptr) << trace::format_text(r);
  EXPECT_EQ(pageable->ops.size(), 2U);
}

// cupy_memcpy.py: the null stream's set()/get() from NumPy arrays, then
// pinned copies on two streams: the pageable copies are T1 of its truth, the
// barrier is not a finding.
TEST(TraceAuditPrecision, CupyMemcpyReportsPageableCopiesNotTheBarrier) {
  const trace::AuditReport r = corpus("cupy-memcpy.python");
  const trace::AuditFinding* legacy = find(r, "legacy-default-stream");
  EXPECT_TRUE(legacy == nullptr || legacy->level < check::severity::warning) << trace::format_text(r);
  const trace::AuditFinding* pageable = find(r, "pageable-async-copy");
  ASSERT_NE(pageable, nullptr) << trace::format_text(r);
  EXPECT_EQ(pageable->level, check::severity::warning) << trace::format_text(r);
}

}  // namespace
}  // namespace overlap
