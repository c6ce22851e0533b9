// Stream-ordered memory in traces: cudaMallocAsync and cudaFreeAsync are ops
// in their stream's order, and a use of the memory on another stream that
// nothing orders with its free is a race.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "overlap/core/device_model.hpp"
#include "overlap/trace/audit.hpp"
#include "trace_builder.hpp"

namespace overlap {
namespace {

using test::TraceBuilder;

constexpr std::uint64_t pool_ptr = 0x7f0000000000;
constexpr std::uint64_t host_ptr = 0x500000;
constexpr std::uint64_t bytes = 1 << 20;

// Stream 14 copies the pinned buffer into the pool's memory: the call at
// `at` us, the copy from 40 to 80 us.
void copy_into_pool(TraceBuilder& t, double at) {
  t.call("cudaMemcpyAsync", "copy", at, at + 3,
         {{"stream", 14},
          {"dst", pool_ptr},
          {"src", host_ptr},
          {"bytes", bytes},
          {"kind", "h2d"},
          {"async", true}});
  t.work("memcpy", 40, 80,
         {{"stream", 14}, {"bytes", bytes}, {"kind", "h2d"}, {"src", "pinned"}, {"dst", "device"}});
}

// cudaMallocAsync on stream 13; stream 14 copies into the memory; the
// memory is freed on stream 13, ordered after the copy by an event only
// when `ordered`.
TraceBuilder free_after_use(bool ordered) {
  TraceBuilder t;
  t.stream(13, "non_blocking").stream(14, "non_blocking");
  t.call("cudaHostAlloc", "alloc", 0, 10, {{"ptr", host_ptr}, {"bytes", bytes}, {"memory", "pinned"}});
  t.call("cudaMallocAsync", "alloc", 20, 22,
         {{"ptr", pool_ptr}, {"bytes", bytes}, {"memory", "async"}, {"stream", 13}});
  t.call("cudaStreamSynchronize", "stream_sync", 23, 30, {{"stream", 13}});
  copy_into_pool(t, 31);
  if (ordered) {
    t.call("cudaEventRecord", "record", 35, 36, {{"event", 0xe1}, {"stream", 14}});
    t.call("cudaStreamWaitEvent", "wait", 37, 38, {{"event", 0xe1}, {"stream", 13}});
  }
  t.call("cudaFreeAsync", "free", 39, 41, {{"ptr", pool_ptr}, {"memory", "async"}, {"stream", 13}});
  t.call("cudaDeviceSynchronize", "device_sync", 42, 90);
  return t.footer();
}

trace::AuditReport audit_of(const TraceBuilder& t) {
  return trace::audit(t.capture(), DeviceModel::load("h100"));
}

const trace::AuditFinding* find(const trace::AuditReport& r, std::string_view rule) {
  for (const trace::AuditFinding& f : r.findings)
    if (f.rule == rule) return &f;
  return nullptr;
}

TEST(TraceStreamOrdered, AllocationAndFreeAreOpsOnTheirStream) {
  const trace::Capture run = free_after_use(/*ordered=*/true).capture();
  const Program& p = run.program;
  std::vector<std::string> marks;
  for (const Op& op : p.ops()) {
    if (op.kind != op_kind::event_record || !op.stream) continue;
    if (op.label.starts_with("cudaMallocAsync") || op.label.starts_with("cudaFreeAsync"))
      marks.push_back(op.label + " on " + p.streams()[*op.stream].name);
  }
  EXPECT_EQ(marks, (std::vector<std::string>{"cudaMallocAsync on stream 13", "cudaFreeAsync on stream 13"}));
  // The free writes the whole allocation.
  const auto free =
      std::find_if(p.ops().begin(), p.ops().end(), [](const Op& op) { return op.label == "cudaFreeAsync"; });
  ASSERT_NE(free, p.ops().end());
  ASSERT_EQ(free->accesses.size(), 1U);
  EXPECT_EQ(free->accesses[0].buffer, "async#1");
  EXPECT_EQ(free->accesses[0].size, bytes);
  EXPECT_EQ(free->accesses[0].mode, access_mode::write);
}

TEST(TraceStreamOrdered, AUseOnAnotherStreamUnorderedWithTheFreeIsARace) {
  const trace::AuditReport r = audit_of(free_after_use(/*ordered=*/false));
  const trace::AuditFinding* race = find(r, "race");
  ASSERT_NE(race, nullptr) << trace::format_text(r);
  // Both sides are known byte for byte: the copy's range and the whole allocation freed.
  EXPECT_EQ(race->level, check::severity::error) << trace::format_text(r);
  EXPECT_NE(race->message.find("'cudaFreeAsync'"), std::string::npos) << race->message;
  EXPECT_NE(race->message.find("async#1"), std::string::npos) << race->message;
}

TEST(TraceStreamOrdered, AnEventBetweenUseAndFreeOrdersThem) {
  const trace::AuditReport r = audit_of(free_after_use(/*ordered=*/true));
  EXPECT_EQ(find(r, "race"), nullptr) << trace::format_text(r);
}

TEST(TraceStreamOrdered, MemoryReusedAtTheSameAddressIsAnotherBuffer) {
  // Allocated and freed on stream 13, allocated again at the same address on
  // stream 14 and written there: the pool gave the bytes to a new
  // allocation, which is no race with the old one's free.
  TraceBuilder t;
  t.stream(13, "non_blocking").stream(14, "non_blocking");
  t.call("cudaHostAlloc", "alloc", 0, 10, {{"ptr", host_ptr}, {"bytes", bytes}, {"memory", "pinned"}});
  t.call("cudaMallocAsync", "alloc", 20, 22,
         {{"ptr", pool_ptr}, {"bytes", bytes}, {"memory", "async"}, {"stream", 13}});
  t.call("cudaFreeAsync", "free", 23, 24, {{"ptr", pool_ptr}, {"memory", "async"}, {"stream", 13}});
  t.call("cudaMallocAsync", "alloc", 25, 26,
         {{"ptr", pool_ptr}, {"bytes", bytes}, {"memory", "async"}, {"stream", 14}});
  copy_into_pool(t, 27);
  t.call("cudaDeviceSynchronize", "device_sync", 31, 90);
  const trace::AuditReport r = audit_of(t.footer());
  EXPECT_EQ(find(r, "race"), nullptr) << trace::format_text(r);
}

}  // namespace
}  // namespace overlap
