// Managed and mapped memory in traces: cudaMemPrefetchAsync is a copy on its
// stream timed by the migrations it made, cudaStreamAttachMemAsync a marker
// in stream order, and what crossed the host link is counted by who moved it
// (copies, prefetches, the driver on demand, kernels on host memory).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "overlap/core/device_model.hpp"
#include "overlap/trace/audit.hpp"
#include "trace_builder.hpp"

namespace overlap {
namespace {

using test::TraceBuilder;

constexpr std::uint64_t managed_ptr = 0x7f0000000000;
constexpr std::uint64_t kib = 1024;
constexpr std::uint64_t mib = 1024 * kib;
constexpr std::uint64_t managed_bytes = 8 * mib;

nlohmann::json migration(double start_us, double end_us, std::uint64_t address, std::uint64_t bytes,
                         const std::string& kind, const std::string& cause) {
  return {{"t", "migration"},
          {"start", TraceBuilder::ns(start_us)},
          {"end", TraceBuilder::ns(end_us)},
          {"bytes", bytes},
          {"address", address},
          {"kind", kind},
          {"cause", cause},
          {"src", 0},
          {"dst", 1}};
}

// Managed memory prefetched to the GPU on stream 13 (two 4 MiB moves from 20
// to 60 us), a kernel on it, then prefetched back (one move, 200 to 230 us).
TraceBuilder prefetch_round_trip() {
  TraceBuilder t;
  t.stream(13, "non_blocking");
  t.call("cudaMallocManaged", "alloc", 0, 5,
         {{"ptr", managed_ptr}, {"bytes", managed_bytes}, {"memory", "managed"}});
  t.call("cudaMemPrefetchAsync", "prefetch", 10, 15,
         {{"ptr", managed_ptr}, {"bytes", managed_bytes}, {"to", "device"}, {"stream", 13}});
  t.line(migration(20, 40, managed_ptr, 4 * mib, "h2d", "explicit"));
  t.line(migration(40, 60, managed_ptr + 4 * mib, 4 * mib, "h2d", "explicit"));
  t.call("cudaLaunchKernel", "launch", 16, 18,
         {{"stream", 13}, {"kernel", "scale"}, {"ptrs", {managed_ptr}}});
  t.work("kernel", 60, 190, {{"stream", 13}, {"name", "scale"}});
  t.call("cudaMemPrefetchAsync", "prefetch", 19, 21,
         {{"ptr", managed_ptr}, {"bytes", managed_bytes}, {"to", "host"}, {"stream", 13}});
  t.line(migration(200, 230, managed_ptr, managed_bytes, "d2h", "explicit"));
  t.call("cudaStreamSynchronize", "stream_sync", 22, 235, {{"stream", 13}});
  return t;
}

std::vector<const Op*> prefetch_ops(const Program& p) {
  std::vector<const Op*> out;
  for (const Op& op : p.ops())
    if (op.label == "prefetch") out.push_back(&op);
  return out;
}

TEST(TraceManagedMemory, APrefetchIsACopyOnItsStreamTimedByItsMigrations) {
  const trace::Capture run = prefetch_round_trip().footer().capture();
  const auto ops = prefetch_ops(run.program);
  ASSERT_EQ(ops.size(), 2U);
  EXPECT_EQ(ops[0]->kind, op_kind::copy);
  EXPECT_EQ(ops[0]->direction, copy_direction::h2d);
  EXPECT_EQ(ops[0]->bytes, managed_bytes);
  ASSERT_TRUE(ops[0]->duration.has_value());
  EXPECT_NEAR(*ops[0]->duration, 0.040, 1e-9);  // 20..60 us
  EXPECT_TRUE(ops[0]->accesses.empty());        // a migration keeps what memory holds
  EXPECT_EQ(ops[1]->direction, copy_direction::d2h);
  EXPECT_NEAR(*ops[1]->duration, 0.030, 1e-9);
  EXPECT_EQ(run.program.streams()[*ops[0]->stream].name, "stream 13");
  EXPECT_EQ(run.unmatched_work, 0U);

  // Drawn where they ran: the spans are the migrations' hulls.
  std::vector<double> starts;
  for (const auto& span : run.timeline.spans) {
    if (span.op < run.program.ops().size() && run.program.ops()[span.op].label == "prefetch")
      starts.push_back(span.start);
  }
  ASSERT_EQ(starts.size(), 2U);
  EXPECT_NEAR(starts[0], 0.020, 1e-9);
  EXPECT_NEAR(starts[1], 0.200, 1e-9);
}

TEST(TraceManagedMemory, TheLinkCountsPrefetchesApartFromCopiesAndDemand) {
  TraceBuilder t = prefetch_round_trip();
  // A page fault's move, and a speculative one: the driver's, not a call's.
  t.line(migration(240, 250, managed_ptr, 64 * kib, "h2d", "fault"));
  t.line(migration(250, 251, managed_ptr + mib, 2 * mib, "h2d", "speculative"));
  // Five faults' moves merged by the tracer into one record: 3 us of its 8.
  nlohmann::json merged = migration(260, 268, managed_ptr + 4 * mib, 5 * 4 * kib, "h2d", "fault");
  merged["count"] = 5;
  merged["busy"] = 3000;
  t.line(merged);
  const trace::Capture run = t.footer().capture();
  EXPECT_EQ(run.link.prefetches.count, 3U);
  EXPECT_EQ(run.link.prefetches.h2d_bytes, managed_bytes);
  EXPECT_EQ(run.link.prefetches.d2h_bytes, managed_bytes);
  EXPECT_NEAR(run.link.prefetches.busy_ms, 0.070, 1e-9);
  EXPECT_EQ(run.link.on_demand.count, 7U);
  EXPECT_EQ(run.link.on_demand.h2d_bytes, 64 * kib + 2 * mib + 20 * kib);
  EXPECT_NEAR(run.link.on_demand.busy_ms, 0.010 + 0.001 + 0.003, 1e-9);
  EXPECT_EQ(run.link.copies.count, 0U);

  const trace::AuditReport r = trace::audit(run, DeviceModel::load("h100"));
  const std::string text = trace::format_text(r);
  EXPECT_NE(text.find("host link: copies"), std::string::npos) << text;
  EXPECT_NE(text.find("prefetches 8 MiB to the GPU, 8 MiB back (3 moves"), std::string::npos) << text;
  EXPECT_NE(text.find("moved on demand"), std::string::npos) << text;
  const auto json = nlohmann::json::parse(trace::format_json(r));
  EXPECT_EQ(json["link"]["prefetches"]["h2d_bytes"], managed_bytes);
  EXPECT_EQ(json["link"]["on_demand"]["count"], 7);
}

TEST(TraceManagedMemory, AMigrationGoesToTheLatestPrefetchOfItsBytesThatWentItsWay) {
  TraceBuilder t;
  t.stream(13, "non_blocking").stream(14, "non_blocking");
  t.call("cudaMallocManaged", "alloc", 0, 5,
         {{"ptr", managed_ptr}, {"bytes", managed_bytes}, {"memory", "managed"}});
  // Stream 13 prefetches the first half to the GPU, stream 14 the second
  // from a byte inside its first page (the driver moves the whole page).
  t.call("cudaMemPrefetchAsync", "prefetch", 10, 11,
         {{"ptr", managed_ptr}, {"bytes", 4 * mib}, {"to", "device"}, {"stream", 13}});
  t.call(
      "cudaMemPrefetchAsync", "prefetch", 12, 13,
      {{"ptr", managed_ptr + 4 * mib + 0x1c0}, {"bytes", 4 * mib - 0x1c0}, {"to", "device"}, {"stream", 14}});
  // Then stream 13 sends the first half back.
  t.call("cudaMemPrefetchAsync", "prefetch", 14, 15,
         {{"ptr", managed_ptr}, {"bytes", 4 * mib}, {"to", "host"}, {"stream", 13}});
  t.line(migration(20, 30, managed_ptr + 4 * mib, 4 * mib, "h2d", "explicit"));  // stream 14's
  t.line(migration(20, 28, managed_ptr, 4 * mib, "h2d", "explicit"));            // stream 13's first
  t.line(migration(30, 40, managed_ptr, 4 * mib, "d2h", "explicit"));            // stream 13's second
  t.call("cudaDeviceSynchronize", "device_sync", 16, 45);
  const trace::Capture run = t.footer().capture();
  std::vector<std::string> seen;
  for (const Op& op : run.program.ops()) {
    if (op.label != "prefetch") continue;
    seen.push_back(fmt::format("{} {} {}", run.program.streams()[*op.stream].name, to_string(op.direction),
                               op.bytes / mib));
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"stream 13 h2d 4", "stream 14 h2d 4", "stream 13 d2h 4"}));
}

TEST(TraceManagedMemory, APrefetchThatMovedNothingAndAnAttachAreMarkersInStreamOrder) {
  TraceBuilder t;
  t.stream(13, "non_blocking");
  t.call("cudaMallocManaged", "alloc", 0, 5,
         {{"ptr", managed_ptr}, {"bytes", managed_bytes}, {"memory", "managed"}});
  t.call("cudaStreamAttachMemAsync", "attach", 6, 7,
         {{"ptr", managed_ptr}, {"bytes", 0}, {"flags", 4}, {"stream", 13}});
  t.call("cudaMemPrefetchAsync", "prefetch", 8, 9,
         {{"ptr", managed_ptr}, {"bytes", managed_bytes}, {"to", "device"}, {"stream", 13}});
  t.call("cudaStreamSynchronize", "stream_sync", 10, 12, {{"stream", 13}});
  const trace::Capture run = t.footer().capture();
  std::vector<std::string> marks;
  for (const Op& op : run.program.ops()) {
    if (op.kind == op_kind::event_record && op.stream)
      marks.push_back(op.label + " on " + run.program.streams()[*op.stream].name);
  }
  EXPECT_EQ(marks, (std::vector<std::string>{"cudaStreamAttachMemAsync on stream 13",
                                             "cudaMemPrefetchAsync on stream 13"}));
  EXPECT_EQ(run.link.prefetches.count, 0U);
}

TEST(TraceManagedMemory, KernelsOnPinnedHostMemoryCountTheirBytesOnTheLink) {
  constexpr std::uint64_t host_ptr = 0x500000;
  constexpr std::uint64_t device_ptr = 0x7f0000000000;
  TraceBuilder t;
  t.stream(13, "non_blocking");
  t.call("cudaHostAlloc", "alloc", 0, 5, {{"ptr", host_ptr}, {"bytes", 2 * mib}, {"memory", "pinned"}});
  t.call("cudaMalloc", "alloc", 6, 7, {{"ptr", device_ptr}, {"bytes", 2 * mib}, {"memory", "device"}});
  // Reads the mapped host buffer, writes device memory: twice.
  for (int i = 0; i < 2; ++i) {
    const double at = 10 + 100 * i;
    t.call("cudaLaunchKernel", "launch", at, at + 2,
           {{"stream", 13}, {"kernel", "zero_copy_read"}, {"ptrs", {host_ptr, device_ptr}}});
    t.work("kernel", at + 5, at + 90, {{"stream", 13}, {"name", "zero_copy_read"}});
  }
  t.call("cudaStreamSynchronize", "stream_sync", 300, 310, {{"stream", 13}});
  const trace::Capture run = t.footer().capture();
  EXPECT_EQ(run.link.mapped.launches, 2U);
  EXPECT_EQ(run.link.mapped.inferred, 2U);
  // Inferred from the pointer: the whole host buffer each launch, never the
  // device buffer (inference cannot tell a read from a write, so it may
  // count the buffer written too).
  EXPECT_EQ(run.link.mapped.read_bytes, 4 * mib);
  EXPECT_LE(run.link.mapped.written_bytes, 4 * mib);
  const std::string text = trace::format_text(trace::audit(run, DeviceModel::load("h100")));
  EXPECT_NE(text.find("2 kernel launches on host memory read"), std::string::npos) << text;
}

TEST(TraceManagedMemory, ARunWithCopiesOnlyPrintsNoLinkLine) {
  TraceBuilder t;
  t.stream(13, "non_blocking");
  t.call("cudaMemcpyAsync", "copy", 0, 3,
         {{"stream", 13},
          {"dst", 0x7f0000000000},
          {"src", 0x500000},
          {"bytes", mib},
          {"kind", "h2d"},
          {"async", true}});
  t.work("memcpy", 5, 50,
         {{"stream", 13}, {"bytes", mib}, {"kind", "h2d"}, {"src", "pinned"}, {"dst", "device"}});
  t.call("cudaStreamSynchronize", "stream_sync", 4, 55, {{"stream", 13}});
  const trace::Capture run = t.footer().capture();
  EXPECT_EQ(run.link.copies.count, 1U);
  EXPECT_EQ(run.link.copies.h2d_bytes, mib);
  const std::string text = trace::format_text(trace::audit(run, DeviceModel::load("h100")));
  EXPECT_EQ(text.find("host link:"), std::string::npos) << text;
}

// Recorded on the H100 (tests/apps/managed_memory.cu): two streams each
// prefetch their halves of x and y (16 MiB + 4321 floats each) to the GPU
// and y back; without prefetches the kernels fault the pages in.
TEST(TraceManagedMemory, TheRecordedAppsPrefetchesAreCopiesOnItsStreams) {
  constexpr std::uint64_t array_bytes = 16 * mib + 4321 * sizeof(float);
  const trace::Capture run = trace::capture(test::recorded_trace("memory/managed_memory"));
  std::size_t prefetches = 0;
  for (const Op& op : run.program.ops()) {
    if (op.label != "prefetch") continue;
    ++prefetches;
    EXPECT_EQ(op.kind, op_kind::copy);
    ASSERT_TRUE(op.duration.has_value());
    EXPECT_GT(*op.duration, 0.0);
  }
  EXPECT_EQ(prefetches, 6U);  // x and y to the GPU, y back, on each of two streams
  EXPECT_GE(run.link.prefetches.h2d_bytes, 2 * array_bytes);
  EXPECT_GE(run.link.prefetches.d2h_bytes, array_bytes);
  EXPECT_EQ(run.link.mapped.launches, 1U);

  const trace::Capture demand = trace::capture(test::recorded_trace("memory/managed_memory.on-demand"));
  EXPECT_EQ(demand.link.prefetches.count, 0U);
  EXPECT_GE(demand.link.on_demand.h2d_bytes, array_bytes);
}

}  // namespace
}  // namespace overlap
