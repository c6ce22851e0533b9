// Kernels that take their buffers' addresses inside structs passed by value
// (PyTorch's elementwise kernels, cuBLAS's GEMMs): the launch record's
// `sptrs` give the words of those structs that look like addresses, and
// the audit infers accesses from them as from pointer parameters.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "overlap/core/device_model.hpp"
#include "overlap/trace/audit.hpp"
#include "trace_builder.hpp"

namespace overlap {
namespace {

using test::TraceBuilder;

constexpr std::uint64_t segment = 0x7f00'0000'0000;  // one allocation holding two tensors
constexpr std::uint64_t batch = segment;             // written by the side stream's copy
constexpr std::uint64_t weight = segment + (8 << 20);
constexpr std::uint64_t out = 0x7f10'0000'0000;
constexpr std::uint64_t pinned = 0x2000'0000;

// The side stream (21) uploads 8 MiB from pinned memory into the batch: the
// call at `call` us, the copy on the device from `start` to `end` us.
void upload_batch(TraceBuilder& t, double call, double start, double end) {
  t.call("cudaMemcpyAsync", "copy", call, call + 2,
         {{"dst", batch},
          {"src", pinned},
          {"bytes", 8 << 20},
          {"kind", "h2d"},
          {"stream", 21},
          {"async", true}});
  t.work("memcpy", start, end,
         {{"stream", 21}, {"bytes", 8 << 20}, {"kind", "h2d"}, {"src", "pinned"}, {"dst", "device"}});
}

// The side stream (21) uploads the next batch while the main stream (20)
// multiplies the current one; `waits`: the main stream waits for the
// upload first (wait_stream), else nothing orders the GEMM after it.
TraceBuilder side_stream_upload(bool waits) {
  TraceBuilder t;
  t.stream(20, "blocking").stream(21, "blocking");
  t.call("cudaMalloc", "alloc", 0, 5, {{"ptr", segment}, {"bytes", 20 << 20}, {"memory", "device"}});
  t.call("cudaMalloc", "alloc", 5, 10, {{"ptr", out}, {"bytes", 8 << 20}, {"memory", "device"}});
  t.call("cudaHostAlloc", "alloc", 10, 15, {{"ptr", pinned}, {"bytes", 8 << 20}, {"memory", "pinned"}});
  upload_batch(t, 20, 25, 400);
  if (waits) {
    t.call("cudaEventRecord", "record", 23, 24, {{"event", 5}, {"stream", 21}});
    t.call("cudaStreamWaitEvent", "wait", 24, 25, {{"event", 5}, {"stream", 20}});
  }
  // The GEMM's only 8-byte parameter is a count; its operands come in a struct.
  t.call("cudaLaunchKernel", "launch", 26, 28,
         {{"stream", 20}, {"kernel", "_Z4gemm6Params"}, {"ptrs", {4096}}, {"sptrs", {batch, weight, out}}});
  t.work("kernel", waits ? 401 : 30, waits ? 700 : 330, {{"stream", 20}, {"name", "_Z4gemm6Params"}});
  t.call("cudaDeviceSynchronize", "device_sync", 29, 720);
  return t.footer();
}

TEST(TraceStructPointers, AStructsAddressesAreTheKernelsAccesses) {
  const trace::Capture run = side_stream_upload(/*waits=*/false).capture();
  const auto gemm = std::find_if(run.program.ops().begin(), run.program.ops().end(),
                                 [](const Op& op) { return op.kind == op_kind::kernel; });
  ASSERT_NE(gemm, run.program.ops().end());
  // Three distinct parts: the batch, the weight (its own start), the output.
  EXPECT_EQ(gemm->accesses.size(), 6U);
}

TEST(TraceStructPointers, AnUnorderedUploadIntoAStructOperandIsAPossibleRace) {
  const trace::AuditReport report =
      trace::audit(side_stream_upload(/*waits=*/false).capture(), DeviceModel::preset("h100"));
  const auto race = std::find_if(report.findings.begin(), report.findings.end(),
                                 [](const trace::AuditFinding& f) { return f.rule == "race"; });
  ASSERT_NE(race, report.findings.end());
  EXPECT_EQ(race->level, check::severity::warning) << race->message;  // the GEMM's side is inferred
  EXPECT_NE(race->message.find("gemm"), std::string::npos) << race->message;
  EXPECT_NE(race->message.find("H2D"), std::string::npos) << race->message;
}

TEST(TraceStructPointers, AnOrderedUploadIsNoRace) {
  const trace::AuditReport report =
      trace::audit(side_stream_upload(/*waits=*/true).capture(), DeviceModel::preset("h100"));
  for (const trace::AuditFinding& f : report.findings) EXPECT_NE(f.rule, "race") << f.message;
}

// PyTorch's caching allocator hands a block to another stream once a query
// of the event it recorded after the block's last use says "ready" (CuPy's
// `stream.done` and PyTorch's `Stream.query()` ask the stream itself): the
// GEMM on the main stream read the batch; the side stream's next upload
// into the same block comes after a ready query, so after the GEMM. A query
// that answered "not ready" orders nothing.
enum class Query { event, stream };

TraceBuilder reuse_after(Query query, int query_status) {
  TraceBuilder t;
  t.stream(20, "blocking").stream(21, "blocking");
  t.call("cudaMalloc", "alloc", 0, 5, {{"ptr", segment}, {"bytes", 20 << 20}, {"memory", "device"}});
  t.call("cudaHostAlloc", "alloc", 10, 15, {{"ptr", pinned}, {"bytes", 8 << 20}, {"memory", "pinned"}});
  t.call("cudaLaunchKernel", "launch", 20, 22,
         {{"stream", 20}, {"kernel", "_Z4gemm6Params"}, {"ptrs", {4096}}, {"sptrs", {batch, weight}}});
  t.work("kernel", 25, 300, {{"stream", 20}, {"name", "_Z4gemm6Params"}});
  if (query == Query::event) {
    t.call("cudaEventRecord", "record", 23, 24, {{"event", 9}, {"stream", 20}});
    t.call("cudaEventQuery", "other", 310, 311, {{"event", 9}, {"status", query_status}});
  } else {
    t.call("cudaStreamQuery", "other", 310, 311, {{"stream", 20}, {"status", query_status}});
  }
  upload_batch(t, 312, 315, 700);
  t.call("cudaDeviceSynchronize", "device_sync", 315, 720);
  return t.footer();
}

bool has_race(const TraceBuilder& t) {
  const trace::AuditReport report = trace::audit(t.capture(), DeviceModel::preset("h100"));
  return std::any_of(report.findings.begin(), report.findings.end(),
                     [](const trace::AuditFinding& f) { return f.rule == "race"; });
}

TEST(TraceStructPointers, AReadyQueryOrdersWhatTheHostIssuesNext) {
  for (const Query query : {Query::event, Query::stream}) {
    const char* what = query == Query::event ? "cudaEventQuery" : "cudaStreamQuery";
    EXPECT_FALSE(has_race(reuse_after(query, 0))) << what << " ready";
    EXPECT_TRUE(has_race(reuse_after(query, 600))) << what << " not ready";
  }
}

// Recorded on the H100 (tests/torch/side_stream_race.py under `overlap
// audit`): the side stream uploads the next batch while the main stream's
// cuBLAS GEMM, whose operands come in a struct, reads the current one; the
// racy loop forgets wait_stream and record_stream, the fixed one does not.
trace::AuditReport recorded(const std::string& name) {
  return trace::audit(trace::capture(test::recorded_trace("torch/" + name)), DeviceModel::preset("h100"));
}

TEST(TraceStructPointers, PyTorchsSideStreamRaceIsFoundAndItsFixIsClean) {
  const trace::AuditReport racy = recorded("side_stream_race");
  std::size_t races = 0;
  for (const trace::AuditFinding& f : racy.findings) {
    if (f.rule != "race") continue;
    ++races;
    EXPECT_EQ(f.level, check::severity::warning) << f.message;  // the GEMM's side is inferred
    EXPECT_NE(f.message.find("gemm"), std::string::npos) << f.message;
    EXPECT_NE(f.message.find("H2D"), std::string::npos) << f.message;
  }
  EXPECT_GE(races, 1U);
  // wait_stream orders the GEMM after the upload; record_stream makes the
  // allocator reuse a block only after a ready query of the main stream's event.
  for (const trace::AuditFinding& f : recorded("side_stream_fixed").findings)
    EXPECT_NE(f.rule, "race") << f.message;
}

}  // namespace
}  // namespace overlap
