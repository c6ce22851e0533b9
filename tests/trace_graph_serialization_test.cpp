// graph-serialized-nodes: an edge of a launched graph that orders two nodes
// touching no common bytes, which could have run at once. A pipeline of two
// chunks (upload, kernel, download each) captured from one stream is a
// chain: the second chunk's upload waits for the first chunk's download,
// though they touch different bytes and use the two copy directions.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "overlap/core/device_model.hpp"
#include "overlap/trace/audit.hpp"
#include "trace_builder.hpp"

namespace overlap {
namespace {

using test::TraceBuilder;

constexpr std::uint64_t device = 0x7000'0000'0000;
constexpr std::uint64_t host = 0x2000'0000;
constexpr std::uint64_t chunk = 1 << 20;

struct Node {
  const char* api;
  const char* cls;
  nlohmann::json fields;
  const char* record;  // the device record's type
  nlohmann::json work;
  double duration;  // us
};

// A graph captured from stream 20 of `nodes` in a chain, launched `launches`
// times; `grid` blocks per kernel on a 100-SM device.
TraceBuilder captured_chain(const std::vector<Node>& nodes, int launches) {
  TraceBuilder t;
  t.stream(20, "blocking");
  t.call("cudaMalloc", "alloc", 0, 5, {{"ptr", device}, {"bytes", 4 * chunk}, {"memory", "device"}});
  t.call("cudaHostAlloc", "alloc", 5, 10, {{"ptr", host}, {"bytes", 4 * chunk}, {"memory", "pinned"}});
  t.call("cudaStreamBeginCapture", "other", 10, 11, {{"stream", 20}});
  nlohmann::json ids = nlohmann::json::array();
  nlohmann::json types = nlohmann::json::array();
  nlohmann::json parents = nlohmann::json::array();
  nlohmann::json edges = nlohmann::json::array();
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    nlohmann::json fields = nodes[i].fields;
    fields["stream"] = 20;
    t.call(nodes[i].api, nodes[i].cls, 12 + static_cast<double>(i), 12.5 + static_cast<double>(i), fields);
    t.line({{"t", "graph_node"}, {"node", i + 1}, {"corr", t.last_corr()}});
    ids.push_back(i + 1);
    types.push_back(std::string(nodes[i].record) == "kernel"   ? 0
                    : std::string(nodes[i].record) == "memcpy" ? 1
                                                               : 2);
    parents.push_back(0);
    if (i > 0) edges.insert(edges.end(), {i, i + 1});
  }
  t.call("cudaStreamEndCapture", "other", 50, 51, {{"stream", 20}});
  t.call("cudaGraphInstantiate", "other", 52, 60);
  t.line({{"t", "graph"},
          {"exec", 2},
          {"graph", 1},
          {"nodes", ids},
          {"types", types},
          {"parents", parents},
          {"edges", edges}});
  double at = 100.0;
  for (int l = 0; l < launches; ++l) {
    t.call("cudaGraphLaunch", "other", at, at + 5, {{"stream", 20}});
    double device_at = at + 10;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      nlohmann::json work = nodes[i].work;
      work["stream"] = 20;
      work["node"] = i + 1;
      t.work(nodes[i].record, device_at, device_at + nodes[i].duration, work);
      device_at += nodes[i].duration + 1;
    }
    t.call("cudaStreamSynchronize", "stream_sync", at + 6, device_at + 2, {{"stream", 20}});
    at = device_at + 10;
  }
  return t.footer();
}

nlohmann::json copy_fields(std::uint64_t dst, std::uint64_t src, const char* kind) {
  return {{"dst", dst}, {"src", src}, {"bytes", chunk}, {"kind", kind}, {"async", true}};
}

nlohmann::json copy_work(const char* kind) {
  const bool up = std::string(kind) == "h2d";
  return {
      {"bytes", chunk}, {"kind", kind}, {"src", up ? "pinned" : "device"}, {"dst", up ? "device" : "pinned"}};
}

std::vector<Node> two_chunk_pipeline() {
  std::vector<Node> nodes;
  for (std::uint64_t c = 0; c < 2; ++c) {
    const std::uint64_t in = device + c * chunk;
    const std::uint64_t out = device + (2 + c) * chunk;
    nodes.push_back({"cudaMemcpyAsync", "copy", copy_fields(in, host + c * chunk, "h2d"), "memcpy",
                     copy_work("h2d"), 100});
    nodes.push_back({"cudaLaunchKernel",
                     "launch",
                     {{"kernel", "_Z5scalePKfPf"}, {"ptrs", {in, out}}},
                     "kernel",
                     {{"name", "_Z5scalePKfPf"}, {"grid", {40, 1, 1}}},
                     80});
    nodes.push_back({"cudaMemcpyAsync", "copy", copy_fields(host + (2 + c) * chunk, out, "d2h"), "memcpy",
                     copy_work("d2h"), 100});
  }
  return nodes;
}

const trace::AuditFinding* serialized(const trace::AuditReport& report) {
  const auto it =
      std::find_if(report.findings.begin(), report.findings.end(),
                   [](const trace::AuditFinding& f) { return f.rule == "graph-serialized-nodes"; });
  return it == report.findings.end() ? nullptr : &*it;
}

TEST(TraceGraphSerialization, ACapturedChainSerializesTheNextUploadBehindADownload) {
  const trace::AuditReport report =
      trace::audit(captured_chain(two_chunk_pipeline(), 20).capture(), DeviceModel::preset("h100"));
  const trace::AuditFinding* f = serialized(report);
  ASSERT_NE(f, nullptr);
  // The first chunk's download, then the second chunk's upload: the only
  // independent neighbours (each kernel reads its upload, each download its kernel's output).
  ASSERT_EQ(f->ops.size(), 2U);
  EXPECT_EQ(f->ops[0].label, "graph 1: D2H");
  EXPECT_EQ(f->ops[1].label, "graph 1: H2D");
  EXPECT_EQ(f->count, 20U);            // once per launch
  EXPECT_EQ(f->certainty, "certain");  // copies: their bytes are known
  ASSERT_TRUE(f->predicted_saving.has_value());
  EXPECT_GT(*f->predicted_saving, 0.0);
}

// Two kernels, each on its own chunk, with `grid` blocks each on the 100-SM device.
trace::AuditReport two_kernels(int grid) {
  std::vector<Node> nodes;
  for (std::uint64_t c = 0; c < 2; ++c) {
    const std::uint64_t in = device + c * chunk;
    nodes.push_back({"cudaLaunchKernel",
                     "launch",
                     {{"kernel", "_Z4fillPf"}, {"ptrs", {in}}},
                     "kernel",
                     {{"name", "_Z4fillPf"}, {"grid", {grid, 1, 1}}},
                     80});
  }
  return trace::audit(captured_chain(nodes, 20).capture(), DeviceModel::preset("h100"));
}

// Two kernels that each fill the GPU gain nothing from running together.
TEST(TraceGraphSerialization, KernelsThatFillTheGpuAreNotReported) {
  EXPECT_EQ(serialized(two_kernels(400)), nullptr);
}

// Two small kernels on different buffers are; possibly (their accesses come from their pointers).
TEST(TraceGraphSerialization, SmallKernelsOnDifferentBuffersArePossiblySerialized) {
  const trace::AuditReport report = two_kernels(20);
  const trace::AuditFinding* f = serialized(report);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->certainty, "possible");
}

}  // namespace
}  // namespace overlap
