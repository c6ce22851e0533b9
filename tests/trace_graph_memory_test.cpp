// Graph memory nodes in traces: a graph's allocation and free nodes have no
// device record, but they are ops in the graph's order all the same. The
// allocation makes the memory a buffer the graph's kernels are known to
// touch; the free writes all of it, so a node or later work that nothing
// orders with the free races with it.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "overlap/core/device_model.hpp"
#include "overlap/trace/audit.hpp"
#include "trace_builder.hpp"

namespace overlap {
namespace {

using test::TraceBuilder;

constexpr std::uint64_t graph_ptr = 0x7f00'0000'0000;
constexpr std::uint64_t device_ptr = 0x7e00'0000'0000;
constexpr std::uint64_t copy_ptr = 0x7d00'0000'0000;
constexpr std::uint64_t bytes = 1 << 20;

struct Shape {
  bool free_after_reader = true;     ///< the edge k2 -> free
  bool use_after_launch = false;     ///< stream 21 copies from the graph's memory after the launch, unordered
  bool free_node = true;             ///< the graph frees its memory itself
  std::uint32_t reader_stream = 30;  ///< where k2 ran: the driver's stream, or the launch stream 20
};

// An explicit graph: alloc (node 1) -> k1 writes the memory (node 2, stream
// 20) -> k2 reads it into device memory (node 3, the driver's stream 30);
// k1 -> free (node 4), and k2 -> free when `free_after_reader`. Launched
// twice on stream 20.
TraceBuilder graph_with_memory_nodes(const Shape& shape) {
  TraceBuilder t;
  t.stream(20, "blocking").stream(21, "non_blocking");
  t.call("cudaMalloc", "alloc", 0, 5, {{"ptr", device_ptr}, {"bytes", bytes}, {"memory", "device"}});
  t.call("cudaMalloc", "alloc", 5, 6, {{"ptr", copy_ptr}, {"bytes", bytes}, {"memory", "device"}});
  t.call("cudaGraphCreate", "other", 6, 7);
  const auto node = [&](const char* api, std::uint64_t id, nlohmann::json params, double at) {
    t.call(api, "other", at, at + 1);
    params["t"] = "graph_node";
    params["node"] = id;
    params["corr"] = t.last_corr();
    t.line(params);
  };
  node("cudaGraphAddMemAllocNode", 1, {{"kind", "mem_alloc"}, {"dst", graph_ptr}, {"bytes", bytes}}, 8);
  node("cudaGraphAddKernelNode", 2, {{"kind", "kernel"}, {"kernel", "_Z2k1Pf"}, {"ptrs", {graph_ptr}}}, 10);
  node("cudaGraphAddKernelNode", 3,
       {{"kind", "kernel"}, {"kernel", "_Z2k2PKfPf"}, {"ptrs", {graph_ptr, device_ptr}}}, 12);
  nlohmann::json nodes = {1, 2, 3};
  nlohmann::json types = {10, 0, 0};
  nlohmann::json edges = {1, 2, 2, 3};
  if (shape.free_node) {
    node("cudaGraphAddMemFreeNode", 4, {{"kind", "mem_free"}, {"dst", graph_ptr}}, 14);
    nodes.push_back(4);
    types.push_back(11);
    edges.insert(edges.end(), {2, 4});
    if (shape.free_after_reader) edges.insert(edges.end(), {3, 4});
  }
  t.call("cudaGraphInstantiate", "other", 16, 30);
  t.line({{"t", "graph"},
          {"exec", 9},
          {"graph", 8},
          {"nodes", nodes},
          {"types", types},
          {"parents", nlohmann::json(std::vector<int>(nodes.size(), 0))},
          {"edges", edges}});
  for (const auto& n : nodes) t.line({{"t", "graph_clone"}, {"node", 100 + n.get<int>()}, {"of", n}});
  for (int i = 0; i < 2; ++i) {
    const double at = 100.0 + i * 1000.0;
    t.call("cudaGraphLaunch", "other", at, at + 10, {{"stream", 20}});
    t.work("kernel", at + 20, at + 120, {{"stream", 20}, {"name", "_Z2k1Pf"}, {"node", 102}});
    t.work("kernel", at + 125, at + 300,
           {{"stream", shape.reader_stream}, {"name", "_Z2k2PKfPf"}, {"node", 103}});
    if (shape.use_after_launch) {
      t.call("cudaMemcpyAsync", "copy", at + 11, at + 12,
             {{"stream", 21},
              {"dst", copy_ptr},
              {"src", graph_ptr},
              {"bytes", bytes},
              {"kind", "d2d"},
              {"async", true}});
      t.work("memcpy", at + 130, at + 140,
             {{"stream", 21}, {"bytes", bytes}, {"kind", "d2d"}, {"src", "device"}, {"dst", "device"}});
    }
    t.call("cudaDeviceSynchronize", "device_sync", at + 13, at + 310);
  }
  return t.footer();
}

trace::AuditReport audit_of(const TraceBuilder& t) {
  return trace::audit(t.capture(), DeviceModel::preset("h100"));
}

const trace::AuditFinding* race_of(const trace::AuditReport& r) {
  const auto it = std::find_if(r.findings.begin(), r.findings.end(),
                               [](const trace::AuditFinding& f) { return f.rule == "race"; });
  return it == r.findings.end() ? nullptr : &*it;
}

TEST(TraceGraphMemory, AllocationAndFreeNodesAreOpsInTheGraphsOrder) {
  const trace::Capture run = graph_with_memory_nodes({}).capture();
  EXPECT_EQ(run.unmatched_work, 0U);
  const Program& p = run.program;
  std::vector<std::string> seen;
  for (const Op& op : p.ops()) {
    if (op.kind == op_kind::kernel || op.label.ends_with(": alloc") || op.label.ends_with(": free"))
      seen.push_back(op.label + " on " + p.streams()[*op.stream].name);
  }
  // On a stream of their own, ordered by the edges alone: the allocation
  // before k1, the free after k2.
  const std::vector<std::string> launch = {"graph 1: alloc on graph 1 memory", "graph 1: k1 on stream 20",
                                           "graph 1: k2 on stream 30", "graph 1: free on graph 1 memory"};
  std::vector<std::string> twice = launch;
  twice.insert(twice.end(), launch.begin(), launch.end());
  EXPECT_EQ(seen, twice);
  // Each launch's allocation is a buffer of its own, which k1 writes and the free writes whole.
  std::vector<std::string> buffers;
  for (const Op& op : p.ops()) {
    if (op.label == "graph 1: free") {
      ASSERT_EQ(op.accesses.size(), 1U);
      EXPECT_EQ(op.accesses[0].size, bytes);
      EXPECT_EQ(op.accesses[0].mode, access_mode::write);
      buffers.push_back(op.accesses[0].buffer);
    }
    if (op.label == "graph 1: k1") {
      ASSERT_FALSE(op.accesses.empty());
      EXPECT_EQ(op.accesses[0].buffer.substr(0, 6), "graph#");
    }
  }
  EXPECT_EQ(buffers, (std::vector<std::string>{"graph#1", "graph#2"}));
  EXPECT_EQ(race_of(trace::audit(run, DeviceModel::preset("h100"))), nullptr);
}

TEST(TraceGraphMemory, ANodeNotOrderedBeforeTheFreeRacesWithIt) {
  Shape shape;
  shape.free_after_reader = false;
  const trace::AuditReport r = audit_of(graph_with_memory_nodes(shape));
  const trace::AuditFinding* race = race_of(r);
  ASSERT_NE(race, nullptr) << trace::format_text(r);
  EXPECT_NE(race->message.find("k2"), std::string::npos) << race->message;
  EXPECT_NE(race->message.find("free"), std::string::npos) << race->message;
}

// The free node has no record: were it put on the stream k2 ran on, that
// stream's order would hide the race.
TEST(TraceGraphMemory, ARaceWithTheFreeIsFoundWhenTheReaderRanOnTheLaunchStream) {
  Shape shape;
  shape.free_after_reader = false;
  shape.reader_stream = 20;
  const trace::AuditReport r = audit_of(graph_with_memory_nodes(shape));
  const trace::AuditFinding* race = race_of(r);
  ASSERT_NE(race, nullptr) << trace::format_text(r);
  EXPECT_NE(race->message.find("k2"), std::string::npos) << race->message;
}

TEST(TraceGraphMemory, WorkAfterTheLaunchOnAnUnorderedStreamRacesWithTheFree) {
  Shape shape;
  shape.use_after_launch = true;
  const trace::AuditReport r = audit_of(graph_with_memory_nodes(shape));
  const trace::AuditFinding* race = race_of(r);
  ASSERT_NE(race, nullptr) << trace::format_text(r);
  EXPECT_NE(race->message.find("free"), std::string::npos) << race->message;
  EXPECT_NE(race->message.find("D2D"), std::string::npos) << race->message;
}

TEST(TraceGraphMemory, MemoryTheGraphKeepsIsNoRaceWhenUsedInOrder) {
  Shape shape;
  shape.free_node = false;
  const trace::Capture run = graph_with_memory_nodes(shape).capture();
  EXPECT_EQ(std::count_if(run.program.ops().begin(), run.program.ops().end(),
                          [](const Op& op) { return op.label == "graph 1: alloc"; }),
            2);
  EXPECT_EQ(race_of(trace::audit(run, DeviceModel::preset("h100"))), nullptr);
}

// Recorded on the H100 (tests/apps/graph_memory_race.cu): the free node
// not ordered after `keep` races with it in each of the 4 launches; the
// repaired graph's edge removes it.
TEST(TraceGraphMemory, TheRecordedRaceIsFoundAndItsRepairIsClean) {
  const trace::AuditReport racy = trace::audit(
      trace::capture(test::recorded_trace("memory/graph_memory_race")), DeviceModel::preset("h100"));
  const trace::AuditFinding* race = race_of(racy);
  ASSERT_NE(race, nullptr) << trace::format_text(racy);
  EXPECT_EQ(race->count, 4U) << race->message;
  EXPECT_NE(race->message.find("keep"), std::string::npos) << race->message;
  EXPECT_NE(race->message.find("free"), std::string::npos) << race->message;
  const trace::AuditReport repaired = trace::audit(
      trace::capture(test::recorded_trace("memory/graph_memory_race.repaired")), DeviceModel::preset("h100"));
  EXPECT_TRUE(repaired.findings.empty()) << trace::format_text(repaired);
}

}  // namespace
}  // namespace overlap
