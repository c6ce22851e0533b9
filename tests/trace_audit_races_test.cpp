// Races in real programs: proven only where both accesses are known by their
// bytes, never between disjoint slices of one buffer on several streams, and
// grouped so that a racy loop cannot bury the other findings.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "overlap/core/device_model.hpp"
#include "overlap/trace/audit.hpp"
#include "trace_builder.hpp"

namespace overlap {
namespace {

using nlohmann::json;
using test::TraceBuilder;

constexpr std::uint64_t dev_d = 0x7000'0000'0000;
constexpr std::uint64_t dev_x = 0x7000'1000'0000;
constexpr std::uint64_t host_in = 0x2000'0000;
constexpr std::uint64_t host_out = 0x3000'0000;
constexpr int streams = 8;
constexpr std::uint64_t n = 1 << 20;  // bytes per slice

trace::AuditReport audit_of(const TraceBuilder& t) {
  return trace::audit(t.capture(), DeviceModel::preset("h100"));
}

std::vector<const trace::AuditFinding*> races_of(const trace::AuditReport& r) {
  std::vector<const trace::AuditFinding*> races;
  for (const trace::AuditFinding& f : r.findings) {
    if (f.rule == "race") races.push_back(&f);
  }
  return races;
}

json copy_call(std::uint64_t dst, std::uint64_t src, std::uint64_t bytes, const char* kind, int stream) {
  return {{"dst", dst}, {"src", src}, {"bytes", bytes}, {"kind", kind}, {"stream", stream}, {"async", true}};
}

json copy_work(std::uint64_t bytes, const char* kind, int stream) {
  const bool up = std::string(kind) == "h2d";
  return {{"bytes", bytes},
          {"kind", kind},
          {"src", up ? "pinned" : "device"},
          {"dst", up ? "device" : "pinned"},
          {"stream", stream}};
}

// `kernel<<<g, b, 0, s[i]>>>(d + i * n)` on 8 non-blocking streams, each
// downloading n + `extra` bytes from its slice. Uploads: each stream its own
// slice, or (whole_upload) one copy of the whole buffer on the first stream
// that the others wait for through an event.
TraceBuilder slices(std::uint64_t extra, bool whole_upload) {
  TraceBuilder t;
  for (int i = 0; i < streams; ++i) t.stream(20 + i, "non_blocking");
  const std::uint64_t size = streams * n + extra;
  t.call("cudaMalloc", "alloc", 0, 10, {{"ptr", dev_d}, {"bytes", size}, {"memory", "device"}});
  t.call("cudaMallocHost", "alloc", 10, 20, {{"ptr", host_in}, {"bytes", size}, {"memory", "pinned"}});
  t.call("cudaMallocHost", "alloc", 20, 30,
         {{"ptr", host_out}, {"bytes", streams * (n + extra)}, {"memory", "pinned"}});
  double at = 100;
  if (whole_upload) {
    t.call("cudaMemcpyAsync", "copy", at, at + 5, copy_call(dev_d, host_in, size, "h2d", 20));
    t.work("memcpy", at + 10, at + 340, copy_work(size, "h2d", 20));
    t.call("cudaEventRecord", "record", at + 6, at + 7, {{"event", 0xe1}, {"stream", 20}});
    at = 110;
  }
  for (int i = 0; i < streams; ++i) {
    const std::uint64_t off = static_cast<std::uint64_t>(i) * n;
    const double device = 400 + 10.0 * i;  // the streams' work overlaps on the device
    if (whole_upload && i > 0) {
      t.call("cudaStreamWaitEvent", "wait", at, at + 1, {{"event", 0xe1}, {"stream", 20 + i}});
      at += 2;
    }
    if (!whole_upload) {
      t.call("cudaMemcpyAsync", "copy", at, at + 3, copy_call(dev_d + off, host_in + off, n, "h2d", 20 + i));
      t.work("memcpy", device - 300, device - 260, copy_work(n, "h2d", 20 + i));
      at += 4;
    }
    t.call("cudaLaunchKernel", "launch", at, at + 3,
           {{"stream", 20 + i}, {"kernel", "_Z4stepPf"}, {"ptrs", {dev_d + off}}});
    t.work("kernel", device, device + 200, {{"stream", 20 + i}});
    at += 4;
    t.call("cudaMemcpyAsync", "copy", at, at + 3,
           copy_call(host_out + i * (n + extra), dev_d + off, n + extra, "d2h", 20 + i));
    t.work("memcpy", device + 210, device + 250, copy_work(n + extra, "d2h", 20 + i));
    at += 4;
  }
  t.call("cudaDeviceSynchronize", "device_sync", at, 800);
  return t.footer();
}

TEST(TraceAuditRaces, DisjointSlicesOnEightStreamsNeverRace) {
  for (const bool whole_upload : {false, true}) {
    const trace::Capture run = slices(0, whole_upload).capture();
    // Each kernel works from its pointer to the next slice's start.
    int kernels = 0;
    for (const Op& op : run.program.ops()) {
      if (op.kind != op_kind::kernel) continue;
      ASSERT_EQ(op.accesses.size(), 2U);
      EXPECT_EQ(op.accesses[0].offset, static_cast<std::uint64_t>(kernels) * n);
      EXPECT_EQ(op.accesses[0].size, n);
      EXPECT_EQ(op.accesses[0].source, access_source::inferred);
      ++kernels;
    }
    EXPECT_EQ(kernels, streams);
    const trace::AuditReport r = trace::audit(run, DeviceModel::preset("h100"));
    EXPECT_TRUE(races_of(r).empty()) << trace::format_text(r);
  }
}

// Without copies the kernels' own pointers mark where each slice ends.
TEST(TraceAuditRaces, KernelPointersAloneSplitTheAllocation) {
  TraceBuilder t;
  for (int i = 0; i < streams; ++i) t.stream(20 + i, "non_blocking");
  t.call("cudaMalloc", "alloc", 0, 10, {{"ptr", dev_d}, {"bytes", streams * n}, {"memory", "device"}});
  for (int i = 0; i < streams; ++i) {
    t.call("cudaLaunchKernel", "launch", 20 + 4 * i, 23 + 4 * i,
           {{"stream", 20 + i}, {"kernel", "_Z4stepPf"}, {"ptrs", {dev_d + i * n}}});
    t.work("kernel", 100 + i, 300 + i, {{"stream", 20 + i}});
  }
  t.call("cudaDeviceSynchronize", "device_sync", 60, 400);
  const trace::AuditReport r = audit_of(t.footer());
  EXPECT_TRUE(races_of(r).empty()) << trace::format_text(r);
}

// Each download reads 16 bytes into the next slice, which the next stream's
// kernel may be writing: possible (the kernel's extent is inferred), seven
// times, one finding.
TEST(TraceAuditRaces, OverlappingSlicesAreOnePossibleRaceWithItsCount) {
  const trace::AuditReport r = audit_of(slices(16, true));
  const auto races = races_of(r);
  ASSERT_EQ(races.size(), 1U) << trace::format_text(r);
  const trace::AuditFinding& f = *races.front();
  EXPECT_EQ(f.level, check::severity::warning);
  EXPECT_EQ(f.certainty, "possible");
  EXPECT_EQ(f.count, static_cast<std::size_t>(streams - 1));
  EXPECT_EQ(f.instances.size(), check::max_listed_instances);
  ASSERT_EQ(f.ops.size(), 2U);
  EXPECT_EQ(f.ops[0].label, "D2H");
  EXPECT_EQ(f.ops[1].label, "step");
  EXPECT_EQ(f.streams.size(), static_cast<std::size_t>(streams));
  EXPECT_EQ(r.count(check::severity::error), 0U);
  EXPECT_NE(trace::format_text(r).find("warning race (×7): copy 'D2H' and kernel 'step' race 7 times"),
            std::string::npos)
      << trace::format_text(r);
  const json j = json::parse(trace::format_json(r));
  const auto finding = std::find_if(j.at("findings").begin(), j.at("findings").end(),
                                    [](const json& x) { return x.at("rule") == "race"; });
  ASSERT_NE(finding, j.at("findings").end());
  EXPECT_EQ(finding->at("count"), streams - 1);
  EXPECT_EQ(finding->at("instances").size(), check::max_listed_instances);
  EXPECT_EQ(finding->at("instances").at(1).at("ops").size(), 2U);
  EXPECT_EQ(finding->at("severity"), "warning");
}

// Both accesses are copies, known by their bytes: proven.
TEST(TraceAuditRaces, TwoCopiesRacingAreAnError) {
  TraceBuilder t;
  t.stream(13, "non_blocking").stream(14, "non_blocking");
  t.call("cudaMalloc", "alloc", 0, 10, {{"ptr", dev_x}, {"bytes", n}, {"memory", "device"}});
  t.call("cudaMallocHost", "alloc", 10, 20, {{"ptr", host_in}, {"bytes", n}, {"memory", "pinned"}});
  t.call("cudaMallocHost", "alloc", 20, 30, {{"ptr", host_out}, {"bytes", n}, {"memory", "pinned"}});
  t.call("cudaMemcpyAsync", "copy", 40, 43, copy_call(dev_x, host_in, n, "h2d", 13));
  t.work("memcpy", 50, 90, copy_work(n, "h2d", 13));
  t.call("cudaMemcpyAsync", "copy", 44, 47, copy_call(host_out, dev_x, n, "d2h", 14));
  t.work("memcpy", 55, 95, copy_work(n, "d2h", 14));
  t.call("cudaDeviceSynchronize", "device_sync", 48, 100);
  const trace::AuditReport r = audit_of(t.footer());
  const auto races = races_of(r);
  ASSERT_EQ(races.size(), 1U) << trace::format_text(r);
  EXPECT_EQ(races.front()->level, check::severity::error);
  EXPECT_EQ(races.front()->certainty, "certain");
  EXPECT_EQ(races.front()->count, 1U);
  EXPECT_TRUE(r.fails(check::severity::error));
}

// Two blocking streams race 2,500 times per round on one buffer (kernels
// whose accesses are inferred), and a cudaMemcpy on the legacy default stream
// is a barrier between rounds: the trap is reported, the races are counted,
// the report fits a screen.
TEST(TraceAuditRaces, FiveThousandRacesHideNoTrap) {
  constexpr int rounds = 2;
  constexpr int per_stream = 50;
  TraceBuilder t;
  t.stream(7, "legacy_default").stream(13, "blocking").stream(14, "blocking");
  t.call("cudaMalloc", "alloc", 0, 10, {{"ptr", dev_d}, {"bytes", 4096}, {"memory", "device"}});
  t.call("cudaMalloc", "alloc", 10, 20, {{"ptr", dev_x}, {"bytes", 64 << 20}, {"memory", "device"}});
  t.call("cudaMallocHost", "alloc", 20, 30, {{"ptr", host_in}, {"bytes", 64 << 20}, {"memory", "pinned"}});
  double host = 100;
  double device = 110;
  for (int round = 0; round < rounds; ++round) {
    for (int k = 0; k < 2 * per_stream; ++k) {
      const int stream = k % 2 == 0 ? 13 : 14;
      t.call(
          "cudaLaunchKernel", "launch", host, host + 2,
          {{"stream", stream}, {"kernel", k % 2 == 0 ? "_Z7producePf" : "_Z7consumePf"}, {"ptrs", {dev_d}}});
      t.work("kernel", device, device + 10, {{"stream", stream}});
      host += 3;
      device += 10;
    }
    // The barrier: the copy starts once both streams drained, the host waits for it.
    t.call("cudaMemcpy", "copy", host, device + 1010,
           {{"dst", dev_x},
            {"src", host_in},
            {"bytes", 64 << 20},
            {"kind", "h2d"},
            {"stream", 7},
            {"async", false}});
    t.work("memcpy", device + 5, device + 1005, copy_work(64 << 20, "h2d", 7));
    device += 1020;
    host = device;
  }
  t.call("cudaDeviceSynchronize", "device_sync", host, host + 10);
  const trace::AuditReport r = audit_of(t.footer());
  std::size_t races = 0;
  for (const trace::AuditFinding* f : races_of(r)) {
    EXPECT_EQ(f->level, check::severity::warning);
    EXPECT_EQ(f->certainty, "possible");
    races += f->count;
  }
  EXPECT_EQ(races, static_cast<std::size_t>(rounds * per_stream * per_stream));
  EXPECT_LE(r.findings.size(), 20U) << trace::format_text(r);
  const bool trap = std::any_of(r.findings.begin(), r.findings.end(), [](const trace::AuditFinding& f) {
    return f.rule == "legacy-default-stream";
  });
  EXPECT_TRUE(trap) << trace::format_text(r);
  EXPECT_EQ(r.count(check::severity::error), 0U);
}

}  // namespace
}  // namespace overlap
