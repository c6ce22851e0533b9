// overlap::trace::audit on hand-written traces: the findings, their
// measured costs (hand-computed from the trace) and predicted savings.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "overlap/core/device_model.hpp"
#include "overlap/sim/simulator.hpp"
#include "overlap/trace/audit.hpp"
#include "trace_builder.hpp"

namespace overlap {
namespace {

using nlohmann::json;
using test::TraceBuilder;

constexpr std::uint64_t dev_y = 0x7000'0000'0000;
constexpr std::uint64_t dev_x = 0x7000'1000'0000;
constexpr std::uint64_t host_pinned = 0x2000'0000;
constexpr std::uint64_t host_pageable = 0x5555'0000;

trace::AuditReport audit_of(const TraceBuilder& t) {
  return trace::audit(t.capture(), DeviceModel::preset("h100"));
}

std::vector<std::string> rules_of(const trace::AuditReport& r) {
  std::vector<std::string> rules;
  for (const trace::AuditFinding& f : r.findings) rules.push_back(f.rule);
  return rules;
}

// Seed 003 (Numba): kernel1 on s1 writes y, kernel2 on s2 reads it.
TraceBuilder two_kernels(bool with_event) {
  TraceBuilder t;
  t.stream(13, "non_blocking").stream(14, "non_blocking");
  t.call("cudaMalloc", "alloc", 0, 10, {{"ptr", dev_y}, {"bytes", 4096}, {"memory", "device"}});
  t.call("cudaLaunchKernel", "launch", 20, 25,
         {{"stream", 13}, {"kernel", "_Z7kernel1Pf"}, {"ptrs", {dev_y}}});
  t.work("kernel", 30, 530, {{"stream", 13}});
  if (with_event) {
    t.call("cudaEventRecord", "record", 26, 27, {{"event", 0xe1}, {"stream", 13}});
    t.call("cudaStreamWaitEvent", "wait", 28, 29, {{"event", 0xe1}, {"stream", 14}});
  }
  t.call("cudaLaunchKernel", "launch", 30, 35,
         {{"stream", 14}, {"kernel", "_Z7kernel2Pf"}, {"ptrs", {dev_y}}});
  if (with_event) {
    t.work("kernel", 535, 1035, {{"stream", 14}});
  } else {
    t.work("kernel", 40, 540, {{"stream", 14}});
  }
  t.call("cudaDeviceSynchronize", "device_sync", 40, 1040);
  return t.footer();
}

// Both kernels get the same pointer, so their inferred parts overlap; what
// they really touch the trace cannot show, so the race is possible: a
// warning, not an error (errors are proven races only).
TEST(TraceAudit, KernelsOnTwoStreamsWithoutAnEventRace) {
  const trace::AuditReport r = audit_of(two_kernels(false));
  ASSERT_EQ(rules_of(r), std::vector<std::string>{"race"});
  const trace::AuditFinding& f = r.findings.front();
  EXPECT_EQ(f.level, check::severity::warning);
  EXPECT_EQ(f.certainty, "possible");
  EXPECT_EQ(f.count, 1U);
  ASSERT_EQ(f.ops.size(), 2U);
  EXPECT_EQ(f.ops[0].label, "kernel1");
  EXPECT_EQ(f.ops[1].label, "kernel2");
  EXPECT_EQ(f.ops[0].api, "cudaLaunchKernel");
  EXPECT_FALSE(f.predicted_saving.has_value());
  EXPECT_TRUE(r.fails(check::severity::warning));
  EXPECT_FALSE(r.fails(check::severity::error));
}

TEST(TraceAudit, TheEventMakesItClean) {
  const trace::AuditReport r = audit_of(two_kernels(true));
  EXPECT_TRUE(r.findings.empty()) << trace::format_text(r);
  EXPECT_FALSE(r.fails(check::severity::info));
}

// Seed 002 (PyTorch data loading): the next batch copied on a side stream, used on the main one.
TEST(TraceAudit, ACopyOnASideStreamUsedWithoutAWaitIsACertainRaceWithTheKernel) {
  TraceBuilder t;
  t.stream(13, "non_blocking").stream(14, "non_blocking");
  t.call("cudaMalloc", "alloc", 0, 10, {{"ptr", dev_x}, {"bytes", 1 << 20}, {"memory", "device"}});
  t.call("cudaMallocHost", "alloc", 10, 20, {{"ptr", host_pinned}, {"bytes", 1 << 20}, {"memory", "pinned"}});
  t.call("cudaMemcpyAsync", "copy", 30, 35,
         {{"dst", dev_x},
          {"src", host_pinned},
          {"bytes", 1 << 20},
          {"kind", "h2d"},
          {"stream", 14},
          {"async", true}});
  t.work("memcpy", 40, 80,
         {{"bytes", 1 << 20}, {"kind", "h2d"}, {"src", "pinned"}, {"dst", "device"}, {"stream", 14}});
  t.call("cudaLaunchKernel", "launch", 36, 40, {{"stream", 13}, {"kernel", "_Z5trainPf"}, {"ptrs", {dev_x}}});
  t.work("kernel", 45, 145, {{"stream", 13}});
  t.call("cudaDeviceSynchronize", "device_sync", 41, 150);
  const trace::AuditReport r = audit_of(t.footer());
  ASSERT_EQ(rules_of(r), std::vector<std::string>{"race"}) << trace::format_text(r);
  const trace::AuditFinding& f = r.findings.front();
  ASSERT_EQ(f.ops.size(), 2U);
  EXPECT_EQ(f.ops[0].kind, "copy");
  EXPECT_EQ(f.ops[0].api, "cudaMemcpyAsync");
  EXPECT_EQ(f.ops[1].label, "train");
  EXPECT_EQ(f.ops[1].stream, "stream 13");
}

// A pipeline whose copies come from pageable memory: each call holds the host.
TraceBuilder pageable_pipeline(const std::string& kind) {
  TraceBuilder t;
  t.stream(13, "non_blocking").stream(14, "non_blocking");
  t.call("cudaMalloc", "alloc", 0, 10, {{"ptr", dev_x}, {"bytes", 64 << 20}, {"memory", "device"}});
  if (kind == "pinned")
    t.call("cudaMallocHost", "alloc", 10, 20,
           {{"ptr", host_pageable}, {"bytes", 64 << 20}, {"memory", "pinned"}});
  double now = 100;
  for (int c = 0; c < 4; ++c) {
    const std::uint32_t stream = 13 + static_cast<std::uint32_t>(c % 2);
    const std::uint64_t off = static_cast<std::uint64_t>(c) * (16 << 20);
    const double copy_us = kind == "pageable" ? 1300 : 300;
    const double call_end = kind == "pageable" ? now + copy_us + 20 : now + 5;
    t.call("cudaMemcpyAsync", "copy", now, call_end,
           {{"dst", dev_x + off},
            {"src", host_pageable + off},
            {"bytes", 16 << 20},
            {"kind", "h2d"},
            {"stream", stream},
            {"async", true}});
    t.work("memcpy", now + 10, now + 10 + copy_us,
           {{"bytes", 16 << 20}, {"kind", "h2d"}, {"src", kind}, {"dst", "device"}, {"stream", stream}});
    t.call("cudaLaunchKernel", "launch", call_end + 1, call_end + 4,
           {{"stream", stream}, {"kernel", "_Z5scalePfm"}, {"ptrs", {dev_x + off}}});
    t.work("kernel", now + 10 + copy_us, now + 10 + copy_us + 400, {{"stream", stream}});
    now = call_end + 5;
  }
  t.call("cudaDeviceSynchronize", "device_sync", now, now + 2000);
  return t.footer();
}

TEST(TraceAudit, PageableCopiesAreMeasuredAsHostBlockedTime) {
  const trace::AuditReport r = audit_of(pageable_pipeline("pageable"));
  ASSERT_EQ(rules_of(r), std::vector<std::string>{"pageable-async-copy"}) << trace::format_text(r);
  const trace::AuditFinding& f = r.findings.front();
  ASSERT_TRUE(f.measured.has_value());
  EXPECT_NEAR(f.measured->time, 4 * 1.32, 1e-9);  // each call lasted 1320 us
  ASSERT_TRUE(f.predicted_saving.has_value());
  EXPECT_GT(*f.predicted_saving, 0.0);
  ASSERT_EQ(f.ops.size(), 4U);
  EXPECT_EQ(f.ops[0].api, "cudaMemcpyAsync");
  const trace::AuditReport pinned = audit_of(pageable_pipeline("pinned"));
  EXPECT_TRUE(pinned.findings.empty()) << trace::format_text(pinned);
}

// A data loader: the host prepares each batch (2 ms of its own work), then
// uploads it with cudaMemcpy. With only non-blocking streams there is no
// barrier, but the host cannot prepare the next batch while it waits for the
// copy, which an async copy would have let it do.
TEST(TraceAudit, ASynchronousCopyWithoutABarrierIsItsOwnRule) {
  TraceBuilder t;
  t.stream(7, "legacy_default").stream(13, "non_blocking");
  t.call("cudaMalloc", "alloc", 0, 10, {{"ptr", dev_x}, {"bytes", 128 << 20}, {"memory", "device"}});
  t.call("cudaMallocHost", "alloc", 10, 20,
         {{"ptr", host_pinned}, {"bytes", 128 << 20}, {"memory", "pinned"}});
  for (int c = 0; c < 2; ++c) {
    const double b = 100 + 3300.0 * c;  // the host prepares the batch from b to b + 2000
    const std::uint64_t off = static_cast<std::uint64_t>(c) * (64 << 20);
    t.call("cudaMemcpy", "copy", b + 2000, b + 3210,
           {{"dst", dev_x + off},
            {"src", host_pinned + off},
            {"bytes", 64 << 20},
            {"kind", "h2d"},
            {"stream", 7},
            {"async", false}});
    t.work("memcpy", b + 2005, b + 3205,
           {{"bytes", 64 << 20}, {"kind", "h2d"}, {"src", "pinned"}, {"dst", "device"}, {"stream", 7}});
    t.call("cudaLaunchKernel", "launch", b + 3211, b + 3215,
           {{"stream", 13}, {"kernel", "_Z5scalePf"}, {"ptrs", {dev_x + off}}});
    t.work("kernel", b + 3220, b + 3520, {{"stream", 13}});
  }
  t.call("cudaDeviceSynchronize", "device_sync", 6820, 6830);
  const trace::AuditReport r = audit_of(t.footer());
  ASSERT_EQ(rules_of(r), std::vector<std::string>{"synchronous-copy"}) << trace::format_text(r);
  const trace::AuditFinding& f = r.findings.front();
  EXPECT_NEAR(f.measured->time, 2 * 1.21, 1e-9);  // each cudaMemcpy held the host 1210 us
  EXPECT_EQ(f.ops.front().api, "cudaMemcpy");
  ASSERT_TRUE(f.predicted_saving.has_value());
  EXPECT_GT(*f.predicted_saving, 0.8);  // the second batch is prepared while the first uploads
}

// Three 1 ms uploads 3 ms apart, each waited for; between them a
// cudaMallocHost from t0 + 1020 to `host_alloc_end` (t0 relative) and a
// cudaFreeHost after it until `host_free_end`, with nothing in flight: the
// device idles from t0 + 1010 to the next upload, t0 + 3010.
TraceBuilder uploads_with_allocations_between(double host_alloc_end, double host_free_end) {
  TraceBuilder t;
  t.stream(13, "non_blocking");
  t.call("cudaMalloc", "alloc", 0, 10, {{"ptr", dev_x}, {"bytes", 64 << 20}, {"memory", "device"}});
  t.call("cudaMallocHost", "alloc", 10, 20,
         {{"ptr", host_pinned}, {"bytes", 64 << 20}, {"memory", "pinned"}});
  for (int i = 0; i < 3; ++i) {
    const double t0 = 100 + 3000.0 * i;
    t.call("cudaMemcpyAsync", "copy", t0, t0 + 3,
           {{"dst", dev_x},
            {"src", host_pinned},
            {"bytes", 64 << 20},
            {"kind", "h2d"},
            {"stream", 13},
            {"async", true}});
    t.work("memcpy", t0 + 10, t0 + 1010,
           {{"bytes", 64 << 20}, {"kind", "h2d"}, {"src", "pinned"}, {"dst", "device"}, {"stream", 13}});
    t.call("cudaStreamSynchronize", "stream_sync", t0 + 6, t0 + 1012, {{"stream", 13}});
    if (i < 2) {
      t.call("cudaMallocHost", "alloc", t0 + 1020, t0 + host_alloc_end,
             {{"ptr", host_pinned + (64 << 20)}, {"bytes", 64 << 20}, {"memory", "pinned"}});
      t.call("cudaFreeHost", "free", t0 + host_alloc_end, t0 + host_free_end,
             {{"ptr", host_pinned + (64 << 20)}, {"memory", "pinned"}});
    }
  }
  return t;
}

TEST(TraceAudit, AllocationsBetweenWorkLeaveTheDeviceIdle) {
  // 1.95 ms inside cudaMallocHost + cudaFreeHost per gap.
  TraceBuilder t = uploads_with_allocations_between(2970, 3020);
  const trace::AuditReport r = audit_of(t.footer());
  ASSERT_EQ(rules_of(r), std::vector<std::string>{"idle-gap"}) << trace::format_text(r);
  const trace::AuditFinding& f = r.findings.front();
  // Each time the device idled from t0 + 1010 to t0 + 3010 (the next copy);
  // the calls ran from t0 + 1020 into it: 1.99 ms of it.
  EXPECT_NEAR(f.measured->time, 2 * 1.99, 1e-9);
  EXPECT_EQ(f.level, check::severity::warning);  // the calls fill nearly all of each gap
  ASSERT_EQ(f.ops.size(), 4U);
  EXPECT_EQ(f.ops[0].api, "cudaMallocHost");
  EXPECT_EQ(f.ops[1].api, "cudaFreeHost");
  ASSERT_TRUE(f.predicted_saving.has_value());
  EXPECT_NEAR(*f.predicted_saving, 4.0, 0.1);
}

// The same loop, but the host spends most of each gap on its own work: the
// calls fill a quarter of the gaps, so they are noted, not warned about
// (hecbench-prefetch's loops over managed memory around each cudaFree).
TEST(TraceAudit, CallsThatFillLittleOfTheirGapsAreInfo) {
  // 0.5 ms inside cudaMallocHost + cudaFreeHost, 1.5 ms of the host's own work after.
  TraceBuilder t = uploads_with_allocations_between(1470, 1520);
  const trace::AuditReport r = audit_of(t.footer());
  ASSERT_EQ(rules_of(r), std::vector<std::string>{"idle-gap"}) << trace::format_text(r);
  const trace::AuditFinding& f = r.findings.front();
  EXPECT_EQ(f.level, check::severity::info);
  EXPECT_NEAR(f.measured->time, 2 * 0.5, 1e-9);
  // Each gap ran from t0 + 1010 to t0 + 3010: the calls filled 0.5 ms of 2.
  EXPECT_NE(f.message.find("They fill 25% of those gaps (4 ms)"), std::string::npos) << f.message;
}

TEST(TraceAudit, IdleGapsUnderOnePercentOfTheActiveWindowAreNotAFinding) {
  TraceBuilder t;
  t.stream(13, "non_blocking");
  t.call("cudaMalloc", "alloc", 0, 10, {{"ptr", dev_x}, {"bytes", 64 << 20}, {"memory", "device"}});
  for (int i = 0; i < 3; ++i) {  // 30 ms kernels; 0.3 ms idle in cudaMalloc between them, twice
    const double t0 = 100 + 30400.0 * i;
    t.call("cudaLaunchKernel", "launch", t0, t0 + 5,
           {{"stream", 13}, {"kernel", "_Z4stepPf"}, {"ptrs", {dev_x}}});
    t.work("kernel", t0 + 10, t0 + 30010, {{"stream", 13}});
    t.call("cudaStreamSynchronize", "stream_sync", t0 + 6, t0 + 30012, {{"stream", 13}});
    if (i < 2) {
      t.call(
          "cudaMalloc", "alloc", t0 + 30015, t0 + 30315,
          {{"ptr", dev_y + (static_cast<std::uint64_t>(i) << 20)}, {"bytes", 1 << 20}, {"memory", "device"}});
    }
  }
  const trace::AuditReport r = audit_of(t.footer());
  EXPECT_TRUE(r.findings.empty()) << trace::format_text(r);  // 0.6 ms of 91 ms
}

TEST(TraceAudit, ACallThatLeftTheDeviceIdleOnceIsSetUpNotAFinding) {
  TraceBuilder t;
  t.stream(13, "non_blocking");
  t.call("cudaMalloc", "alloc", 0, 10, {{"ptr", dev_x}, {"bytes", 64 << 20}, {"memory", "device"}});
  t.call("cudaMemcpyAsync", "copy", 100, 103,
         {{"dst", dev_x},
          {"src", host_pinned},
          {"bytes", 1 << 20},
          {"kind", "h2d"},
          {"stream", 13},
          {"async", true}});
  t.work("memcpy", 110, 130,
         {{"bytes", 1 << 20}, {"kind", "h2d"}, {"src", "pinned"}, {"dst", "device"}, {"stream", 13}});
  t.call("cublasCreate_v2", "other", 140, 5140);  // a library's first use
  t.call("cudaMemcpyAsync", "copy", 5150, 5153,
         {{"dst", dev_x},
          {"src", host_pinned},
          {"bytes", 1 << 20},
          {"kind", "h2d"},
          {"stream", 13},
          {"async", true}});
  t.work("memcpy", 5160, 5180,
         {{"bytes", 1 << 20}, {"kind", "h2d"}, {"src", "pinned"}, {"dst", "device"}, {"stream", 13}});
  t.call("cudaDeviceSynchronize", "device_sync", 5154, 5190);
  const trace::AuditReport r = audit_of(t.footer());
  EXPECT_TRUE(r.findings.empty()) << trace::format_text(r);
}

TEST(TraceAudit, AnAllocationThatReturnedWithWorkRunningDidNotSynchronize) {
  TraceBuilder t;
  t.stream(13, "non_blocking");
  t.call("cudaLaunchKernel", "launch", 0, 5, {{"stream", 13}, {"kernel", "_Z4busyv"}});
  t.work("kernel", 10, 10010, {{"stream", 13}});
  t.call("cudaMalloc", "alloc", 20, 120, {{"ptr", dev_x}, {"bytes", 64 << 20}, {"memory", "device"}});
  t.call("cudaFree", "free", 130, 10020, {{"ptr", dev_x}, {"memory", "device"}});
  const trace::Capture run = t.footer().capture();
  // cudaMalloc came back at 120 us with the kernel running until 10010: host work, not a drain.
  const auto& ops = run.program.ops();
  EXPECT_EQ(
      std::count_if(ops.begin(), ops.end(), [](const Op& op) { return op.kind == op_kind::device_allocate; }),
      0);
  EXPECT_EQ(
      std::count_if(ops.begin(), ops.end(),
                    [](const Op& op) { return op.kind == op_kind::host_work && op.label == "cudaMalloc"; }),
      1);
  // cudaFree did wait for the kernel (it returned 10 us after it): a drain.
  EXPECT_EQ(ops.back().kind, op_kind::device_free);
}

// alloc_in_loop in small: 4 chunks on 2 streams, each uploads (300 us),
// runs a kernel (10 us) into a scratch buffer and downloads it (300 us).
// With allocations, each chunk's cudaMalloc (250 us) returns while its
// upload runs (no drain) and its cudaFree waits for the download (a drain).
// The twin allocates nothing in the loop and issues back to back.
TraceBuilder chunks_with_scratch(bool allocate_in_loop) {
  TraceBuilder t;
  t.stream(13, "non_blocking").stream(14, "non_blocking");
  t.call("cudaMalloc", "alloc", 0, 10, {{"ptr", dev_x}, {"bytes", 4 << 20}, {"memory", "device"}});
  t.call("cudaMallocHost", "alloc", 10, 20, {{"ptr", host_pinned}, {"bytes", 8 << 20}, {"memory", "pinned"}});
  double host = 100;
  double h2d_free = 0;  // when the upload engine is free again, and the download engine
  double d2h_free = 0;
  std::map<int, double> stream_free;
  for (int i = 0; i < 4; ++i) {
    const int stream = 13 + i % 2;
    const std::uint64_t in = dev_x + (static_cast<std::uint64_t>(i) << 20);
    const std::uint64_t scratch = allocate_in_loop ? dev_y + (static_cast<std::uint64_t>(i) << 20) : dev_y;
    const std::uint64_t host_in = host_pinned + (static_cast<std::uint64_t>(i) << 20);
    t.call("cudaMemcpyAsync", "copy", host, host + 3,
           {{"dst", in},
            {"src", host_in},
            {"bytes", 1 << 20},
            {"kind", "h2d"},
            {"stream", stream},
            {"async", true}});
    const double up = std::max({host + 10, h2d_free, stream_free[stream]});
    t.work("memcpy", up, up + 300,
           {{"bytes", 1 << 20}, {"kind", "h2d"}, {"src", "pinned"}, {"dst", "device"}, {"stream", stream}});
    h2d_free = up + 300;
    host += 5;
    if (allocate_in_loop) {
      t.call("cudaMalloc", "alloc", host, host + 250,
             {{"ptr", scratch}, {"bytes", 1 << 20}, {"memory", "device"}});
      host += 251;
    }
    t.call("cudaLaunchKernel", "launch", host, host + 4,
           {{"stream", stream}, {"kernel", "_Z5scalePKfPf"}, {"ptrs", {in, scratch}}});
    t.work("kernel", up + 300, up + 310, {{"stream", stream}});
    host += 5;
    t.call("cudaMemcpyAsync", "copy", host, host + 3,
           {{"dst", host_in + (8 << 20) / 2},
            {"src", scratch},
            {"bytes", 1 << 20},
            {"kind", "d2h"},
            {"stream", stream},
            {"async", true}});
    const double down = std::max(up + 310, d2h_free);
    t.work("memcpy", down, down + 300,
           {{"bytes", 1 << 20}, {"kind", "d2h"}, {"src", "device"}, {"dst", "pinned"}, {"stream", stream}});
    d2h_free = stream_free[stream] = down + 300;
    host += 5;
    if (allocate_in_loop) {  // waits for every chunk in flight
      const double drained = std::max(h2d_free, d2h_free);
      t.call("cudaFree", "free", host, drained + 5, {{"ptr", scratch}, {"memory", "device"}});
      host = drained + 6;
    }
  }
  t.call("cudaDeviceSynchronize", "device_sync", host, std::max({host, h2d_free, d2h_free}) + 5);
  return t.footer();
}

TEST(TraceAudit, AllocationsInTheLoopArePricedAsTheTwinThatMakesNone) {
  const trace::Capture app = chunks_with_scratch(true).capture();
  const trace::AuditReport r = trace::audit(app, DeviceModel::preset("h100"));
  const auto f = std::find_if(r.findings.begin(), r.findings.end(), [](const trace::AuditFinding& x) {
    return x.rule == "implicit-synchronization";
  });
  ASSERT_NE(f, r.findings.end()) << trace::format_text(r);
  // Measured: all 8 calls, not only the listed ones; 4 x 250 us of cudaMalloc
  // plus the 4 frees, each from its call to the end of the drain + 5 us.
  ASSERT_TRUE(f->measured.has_value());
  double frees = 0;
  for (op_id i = 0; i < app.program.ops().size(); ++i) {
    if (app.program.ops()[i].kind == op_kind::device_free)
      frees += app.origin[i].call_end - app.origin[i].call_start;
  }
  EXPECT_NEAR(f->measured->time, 4 * 0.25 + frees, 1e-9);
  EXPECT_NE(f->measured->text.find("8 allocation or free calls"), std::string::npos) << f->measured->text;
  EXPECT_NE(f->measured->text.find("4 of them waiting"), std::string::npos) << f->measured->text;
  // Predicted: the run without any of them, which is what the twin does.
  const trace::Capture twin = chunks_with_scratch(false).capture();
  const DeviceModel model = DeviceModel::preset("h100");
  const double twin_saving =
      sim::simulate(app.program, model).total() - sim::simulate(twin.program, model).total();
  ASSERT_TRUE(f->predicted_saving.has_value());
  EXPECT_GT(twin_saving, 0.5);
  EXPECT_NEAR(*f->predicted_saving, twin_saving, 0.1 * twin_saving);
}

TEST(TraceAudit, JsonHasEveryDocumentedField) {
  trace::AuditReport r = audit_of(two_kernels(false));
  r.command = {"./app", "--x"};
  r.exit_code = 3;
  const json j = json::parse(trace::format_json(r));
  EXPECT_EQ(j.at("command"), json::array({"./app", "--x"}));
  EXPECT_EQ(j.at("exit_code"), 3);
  EXPECT_EQ(j.at("trace").at("complete"), true);
  EXPECT_EQ(j.at("findings").size(), 1U);
  const json& f = j.at("findings").at(0);
  for (const char* field : {"rule", "severity", "certainty", "count", "message", "fix", "ops", "instances",
                            "streams", "measured", "predicted_saving_ms"})
    EXPECT_TRUE(f.contains(field)) << field;
  EXPECT_EQ(f.at("ops").at(0).at("api"), "cudaLaunchKernel");
  EXPECT_EQ(f.at("count"), 1);
  EXPECT_EQ(f.at("instances").at(0).at("ops").size(), 2U);
  // The kernels' race is possible (inferred accesses): a warning, not an error.
  EXPECT_EQ(j.at("summary").at("errors"), 0);
  EXPECT_EQ(j.at("summary").at("warnings"), 1);
  EXPECT_TRUE(j.at("verdict").contains("bound"));
  EXPECT_GT(j.at("verdict").at("total_ms").get<double>(), 1.0);
}

}  // namespace
}  // namespace overlap
