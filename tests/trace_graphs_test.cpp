// CUDA graphs in traces: a graph launch's device records become ops of the
// Program on the streams they ran on; calls made during stream capture run
// nothing; graph set-up is not an idle-gap culprit.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "overlap/core/device_model.hpp"
#include "overlap/trace/audit.hpp"
#include "trace_builder.hpp"

namespace overlap {
namespace {

using test::TraceBuilder;

// A graph launched twice on stream 13: an upload and a kernel on 13, a memset
// on the driver's stream 15 (no stream record, no call names it).
TraceBuilder two_graph_launches() {
  TraceBuilder t;
  t.stream(13, "blocking");
  t.call("cudaGraphInstantiate", "other", 0, 50);
  for (int i = 0; i < 2; ++i) {
    const double at = 100.0 + i * 1000.0;
    t.call("cudaGraphLaunch", "other", at, at + 10);
    t.work("memcpy", at + 20, at + 420,
           {{"stream", 13}, {"bytes", 1 << 20}, {"kind", "h2d"}, {"src", "pinned"}, {"dst", "device"}});
    t.work("memset", at + 15, at + 18, {{"stream", 15}, {"bytes", 4096}});
    t.work("kernel", at + 430, at + 530, {{"stream", 13}, {"name", "_Z6reducePfPdmm"}});
    t.call("cudaStreamSynchronize", "stream_sync", at + 11, at + 540, {{"stream", 13}});
  }
  return t;
}

TEST(TraceGraphs, LaunchWorkBecomesOpsOnTheStreamsItRanOn) {
  const trace::Capture run = two_graph_launches().capture();
  EXPECT_EQ(run.unmatched_work, 0U);  // no "device activities matched no traced call"
  const Program& p = run.program;
  std::size_t kernels = 0;
  std::size_t copies = 0;
  std::size_t memsets = 0;
  for (op_id i = 0; i < p.ops().size(); ++i) {
    const Op& op = p.ops()[i];
    if (op.kind == op_kind::kernel) {
      ++kernels;
      EXPECT_EQ(op.label, "graph 1: reduce");  // the same work: the same graph
      EXPECT_NEAR(*op.duration, 0.1, 1e-9);    // measured
      EXPECT_EQ(p.streams()[*op.stream].name, "stream 13");
      EXPECT_EQ(run.origin[i].api, "cudaGraphLaunch");
    } else if (op.kind == op_kind::copy) {
      ++copies;
      EXPECT_EQ(op.label, "graph 1: H2D");
      EXPECT_NEAR(*op.duration, 0.4, 1e-9);
    } else if (op.kind == op_kind::memset) {
      ++memsets;
      // The driver's branch stream: ordered by the launch, not the legacy stream.
      EXPECT_EQ(p.streams()[*op.stream].name, "stream 15");
      EXPECT_EQ(p.streams()[*op.stream].kind, stream_kind::non_blocking);
    }
  }
  EXPECT_EQ(kernels, 2U);
  EXPECT_EQ(copies, 2U);
  EXPECT_EQ(memsets, 2U);
  // The branch waits for the launch stream and the launch stream for it.
  EXPECT_EQ(std::count_if(p.ops().begin(), p.ops().end(),
                          [](const Op& op) { return op.kind == op_kind::stream_wait_event; }),
            4);
  // The measured timeline shows the work, and one host span per launch.
  std::size_t device_spans = 0;
  for (const Span& s : run.timeline.spans) device_spans += s.unit != engine::none ? 1 : 0;
  EXPECT_EQ(device_spans, 6U);
  EXPECT_EQ(std::count_if(run.timeline.host_spans.begin(), run.timeline.host_spans.end(),
                          [](const HostSpan& s) { return s.label == "cudaGraphLaunch"; }),
            2);
}

// A graph's kernel fills the share of the SMs its grid can (the record's
// grid over the device's 100 SMs), as a launched kernel does.
TEST(TraceGraphs, AGraphKernelsGridGivesItsShareOfTheGpu) {
  TraceBuilder t;
  t.stream(13, "blocking");
  t.call("cudaGraphLaunch", "other", 100, 110, {{"stream", 13}});
  t.work("kernel", 120, 220, {{"stream", 13}, {"name", "_Z1kv"}, {"grid", {25, 2, 1}}});
  const trace::Capture run = t.footer().capture();
  const auto kernel = std::find_if(run.program.ops().begin(), run.program.ops().end(),
                                   [](const Op& op) { return op.kind == op_kind::kernel; });
  ASSERT_NE(kernel, run.program.ops().end());
  EXPECT_DOUBLE_EQ(kernel->gpu_share, 0.5);
}

// A graph whose memcpy node writes pageable memory: the driver stages it
// inside cudaGraphLaunch, which returns only once the graph's copy is done
// (simpleCudaGraphs' 8-byte result). That time is the host blocked, not
// issuing; and the part of the launch beyond the model's call cost, which
// the Program keeps as host work, is not drawn over the launch a second time.
TEST(TraceGraphs, ALaunchStagingAPageableCopyHoldsTheHost) {
  TraceBuilder t;
  t.stream(13, "blocking");
  for (int i = 0; i < 3; ++i) {
    const double at = 100.0 + i * 2000.0;
    t.call("cudaGraphLaunch", "other", at, at + 1500, {{"stream", 13}});
    t.work("kernel", at + 20, at + 1400, {{"stream", 13}, {"name", "_Z6reducePfPdmm"}});
    t.work("memcpy", at + 1410, at + 1420,
           {{"stream", 13}, {"bytes", 8}, {"kind", "d2h"}, {"src", "device"}, {"dst", "pageable"}});
  }
  const trace::Capture run = t.capture();
  std::size_t launches = 0;
  for (const HostSpan& h : run.timeline.host_spans) {
    if (h.label == "cudaGraphLaunch") {
      ++launches;
      EXPECT_EQ(h.activity, host_activity::blocked);
    }
    // No host span lies inside a launch: the launch is the host's whole time there.
    for (const HostSpan& other : run.timeline.host_spans) {
      if (other.label != "cudaGraphLaunch" || &other == &h) continue;
      EXPECT_FALSE(h.start >= other.start && h.end <= other.end && h.end > h.start + 1e-9)
          << h.label << " [" << h.start << ", " << h.end << "] inside a launch";
    }
  }
  EXPECT_EQ(launches, 3U);
}

// A graph launched in a loop whose memcpy nodes upload from and download to
// pageable host memory, with some host work between launches: each launch
// holds the host until the driver has staged its copies. That is the
// pageable-async-copy trap, run by cudaGraphLaunch rather than a
// cudaMemcpyAsync, and pinning the buffers frees the host.
TraceBuilder graph_with_pageable_copies(std::uint64_t bytes, double h2d_us, double d2h_us) {
  TraceBuilder t;
  t.stream(13, "blocking");
  double at = 100.0;
  for (int i = 0; i < 20; ++i) {
    const double kernel_start = at + 20 + h2d_us;
    const double d2h_start = kernel_start + 300;
    const double end = d2h_start + d2h_us;
    t.call("cudaGraphLaunch", "other", at, end + 10, {{"stream", 13}});
    if (h2d_us > 0.0)
      t.work("memcpy", at + 20, at + 20 + h2d_us,
             {{"stream", 13}, {"bytes", bytes}, {"kind", "h2d"}, {"src", "pageable"}, {"dst", "device"}});
    t.work("kernel", kernel_start, d2h_start, {{"stream", 13}, {"name", "_Z6negatePf"}});
    t.work("memcpy", d2h_start, end,
           {{"stream", 13}, {"bytes", bytes}, {"kind", "d2h"}, {"src", "device"}, {"dst", "pageable"}});
    t.call("cudaStreamSynchronize", "stream_sync", end + 11, end + 20, {{"stream", 13}});
    at = end + 200;  // the host's own work
  }
  return t.footer();
}

TEST(TraceGraphs, PageableMemcpyNodesAreTheTrapRunByTheLaunch) {
  // 4 MiB each way at about 6 GB/s: what a pageable copy costs on the H100.
  const trace::Capture run = graph_with_pageable_copies(4 << 20, 700, 650).capture();
  const trace::AuditReport r = trace::audit(run, DeviceModel::preset("h100"));
  const auto f = std::find_if(r.findings.begin(), r.findings.end(),
                              [](const trace::AuditFinding& x) { return x.rule == "pageable-async-copy"; });
  ASSERT_NE(f, r.findings.end()) << trace::format_text(r);
  EXPECT_EQ(f->level, check::severity::warning);
  EXPECT_NE(f->message.find("memcpy nodes of a CUDA graph"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("cudaGraphLaunch holds the host"), std::string::npos) << f->message;
  EXPECT_EQ(f->message.find("cudaMemcpyAsync from pageable"), std::string::npos) << f->message;
  EXPECT_NE(f->fix.find("pinned host memory"), std::string::npos) << f->fix;
  ASSERT_FALSE(f->ops.empty());
  EXPECT_EQ(f->ops.front().api, "cudaGraphLaunch");
  // Measured: each launch once, not once per node.
  ASSERT_TRUE(f->measured.has_value());
  EXPECT_NE(f->measured->text.find("cudaGraphLaunch calls"), std::string::npos) << f->measured->text;
  EXPECT_LE(f->measured->calls, 20U);
  // Priced: pinning frees the host in each launch, and the launch's held time
  // is not also kept as host work the repair cannot remove.
  ASSERT_TRUE(f->predicted_saving.has_value());
  EXPECT_GT(*f->predicted_saving, 0.2 * f->measured->time) << trace::format_text(r);
}

// An 8-byte result read back by a pageable memcpy node, then a synchronize:
// the host would wait in the synchronize anyway, so pinning saves nothing
// worth a warning (simpleCudaGraphs, jacobiCudaGraphs).
TEST(TraceGraphs, ASmallPageableNodeBeforeASynchronizeIsNoWarning) {
  const trace::Capture run = graph_with_pageable_copies(8, 0, 5).capture();
  const trace::AuditReport r = trace::audit(run, DeviceModel::preset("h100"));
  for (const trace::AuditFinding& f : r.findings) {
    if (f.rule == "pageable-async-copy") {
      EXPECT_EQ(f.level, check::severity::info) << trace::format_text(r);
    }
  }
}

TEST(TraceGraphs, DistinctGraphsGetTheirOwnNumbers) {
  TraceBuilder t;
  t.stream(13, "blocking");
  t.call("cudaGraphLaunch", "other", 0, 10);
  t.work("kernel", 20, 30, {{"stream", 13}, {"name", "_Z1av"}});
  t.call("cudaGraphLaunch", "other", 40, 50);
  t.work("kernel", 60, 70, {{"stream", 13}, {"name", "_Z1bv"}});
  const trace::Capture run = t.capture();
  std::vector<std::string> labels;
  for (const Op& op : run.program.ops()) {
    if (op.kind == op_kind::kernel) labels.push_back(op.label);
  }
  EXPECT_EQ(labels, (std::vector<std::string>{"graph 1: a", "graph 2: b"}));
}

TEST(TraceGraphs, CallsMadeDuringStreamCaptureRunNothing) {
  constexpr std::uint64_t dev = 0x7000'0000'0000;
  constexpr std::uint64_t stack = 0x7ffd'0000'0000;  // pageable
  TraceBuilder t;
  t.stream(20, "blocking");
  t.call("cudaMalloc", "alloc", 0, 5, {{"ptr", dev}, {"bytes", 1 << 20}, {"memory", "device"}});
  t.call("cudaStreamBeginCapture", "other", 10, 11);
  t.call("cudaLaunchKernel", "launch", 12, 13, {{"stream", 20}, {"kernel", "_Z1kPf"}, {"ptrs", {dev}}});
  t.call(
      "cudaMemcpyAsync", "copy", 14, 15,
      {{"dst", stack}, {"src", dev}, {"bytes", 1 << 20}, {"kind", "d2h"}, {"stream", 20}, {"async", true}});
  t.call("cudaStreamEndCapture", "other", 16, 17);
  const trace::Capture run = t.capture();
  for (const Op& op : run.program.ops()) {
    EXPECT_NE(op.kind, op_kind::kernel) << op.label;
    EXPECT_NE(op.kind, op_kind::copy) << op.label;
  }
  const trace::AuditReport report = trace::audit(run, DeviceModel::preset("h100"));
  for (const trace::AuditFinding& f : report.findings) EXPECT_NE(f.rule, "pageable-async-copy");
}

// A launch on a stream not being captured still runs: it has device records.
TEST(TraceGraphs, WorkOnAStreamNotCapturedStillRuns) {
  TraceBuilder t;
  t.stream(20, "blocking").stream(21, "blocking");
  t.call("cudaStreamBeginCapture", "other", 10, 11);
  t.call("cudaLaunchKernel", "launch", 12, 13, {{"stream", 21}, {"kernel", "_Z1kv"}});
  t.work("kernel", 14, 20, {{"stream", 21}});
  t.call("cudaStreamEndCapture", "other", 21, 22);
  const trace::Capture run = t.capture();
  EXPECT_EQ(std::count_if(run.program.ops().begin(), run.program.ops().end(),
                          [](const Op& op) { return op.kind == op_kind::kernel; }),
            1);
}

// Two graphs instantiated between two phases of launches: one gap, set-up,
// not calls made again and again.
TEST(TraceGraphs, GraphSetUpBetweenPhasesIsNoIdleGap) {
  TraceBuilder t;
  t.stream(13, "blocking");
  double at = 0.0;
  for (int phase = 0; phase < 2; ++phase) {
    for (int i = 0; i < 6; ++i, at += 1000.0) {
      t.call("cudaGraphLaunch", "other", at, at + 10);
      t.work("kernel", at + 20, at + 990, {{"stream", 13}, {"name", "_Z1kv"}});
    }
    if (phase == 0) {
      t.call("cudaGraphInstantiate", "other", at, at + 2000);
      t.call("cudaGraphInstantiate", "other", at + 2000, at + 4000);
      t.call("cudaMallocHost", "alloc", at + 4000, at + 6000,
             {{"ptr", 0x1000}, {"bytes", 64}, {"memory", "pinned"}});
      t.call("cudaMallocHost", "alloc", at + 6000, at + 8000,
             {{"ptr", 0x2000}, {"bytes", 64}, {"memory", "pinned"}});
      at += 8000.0;
    }
  }
  const trace::AuditReport report = trace::audit(t.capture(), DeviceModel::preset("h100"));
  for (const trace::AuditFinding& f : report.findings) EXPECT_NE(f.rule, "idle-gap") << f.message;
}

// A graph captured from two streams: k1 on the capture stream forks to k2
// on a second stream and k3 on the first, which join into k4. With the
// structure recorded (nodes made by the captured calls, the instantiated
// graph's edges, the exec's clones, each record's node), k2 and k4 run on
// the driver's stream 30 and the launch stream and wait by the edges.
TraceBuilder captured_fork_join(bool join_edge, bool stray_record = false) {
  constexpr std::uint64_t a = 0x7000'0000'0000;
  constexpr std::uint64_t b = 0x7000'1000'0000;
  TraceBuilder t;
  t.stream(20, "blocking").stream(21, "non_blocking");
  t.call("cudaMalloc", "alloc", 0, 5, {{"ptr", a}, {"bytes", 1 << 20}, {"memory", "device"}});
  t.call("cudaMalloc", "alloc", 5, 10, {{"ptr", b}, {"bytes", 1 << 20}, {"memory", "device"}});
  t.call("cudaStreamBeginCapture", "other", 10, 11, {{"stream", 20}});
  const auto captured = [&](std::uint32_t stream, const char* kernel, nlohmann::json ptrs, std::uint64_t node,
                            double at) {
    t.call("cudaLaunchKernel", "launch", at, at + 1,
           {{"stream", stream}, {"kernel", kernel}, {"ptrs", ptrs}});
    t.line({{"t", "graph_node"}, {"node", node}, {"corr", t.last_corr()}});
  };
  captured(20, "_Z2k1PfS_", {a, b}, 1, 12);
  captured(21, "_Z2k2Pf", {b}, 2, 14);
  captured(20, "_Z2k3Pf", {a}, 3, 16);
  captured(20, "_Z2k4PfS_", {a, b}, 4, 18);
  t.call("cudaStreamEndCapture", "other", 20, 21, {{"stream", 20}});
  t.call("cudaGraphInstantiate", "other", 22, 30);
  nlohmann::json edges = {1, 2, 1, 3, 3, 4};
  if (join_edge) edges.insert(edges.end(), {2, 4});
  t.line({{"t", "graph"},
          {"exec", 9},
          {"graph", 8},
          {"nodes", {1, 2, 3, 4}},
          {"types", {0, 0, 0, 0}},
          {"parents", {0, 0, 0, 0}},
          {"edges", edges}});
  for (int n = 1; n <= 4; ++n) t.line({{"t", "graph_clone"}, {"node", 100 + n}, {"of", n}});
  for (int i = 0; i < 2; ++i) {
    const double at = 100.0 + i * 1000.0;
    t.call("cudaGraphLaunch", "other", at, at + 10, {{"stream", 20}});
    t.work("kernel", at + 20, at + 120, {{"stream", 20}, {"name", "_Z2k1PfS_"}, {"node", 101}});
    t.work("kernel", at + 125, at + 300, {{"stream", 30}, {"name", "_Z2k2Pf"}, {"node", 102}});
    t.work("kernel", at + 125, at + 200, {{"stream", 20}, {"name", "_Z2k3Pf"}, {"node", 103}});
    t.work("kernel", at + 305, at + 400, {{"stream", 20}, {"name", "_Z2k4PfS_"}, {"node", 104}});
    t.call("cudaStreamSynchronize", "stream_sync", at + 11, at + 410, {{"stream", 20}});
  }
  if (stray_record) {  // a third launch ran a kernel of a node in no graph record
    t.call("cudaGraphLaunch", "other", 3000, 3010, {{"stream", 20}});
    t.work("kernel", 3020, 3120, {{"stream", 20}, {"name", "_Z2k1PfS_"}, {"node", 101}});
    t.work("kernel", 3125, 3300, {{"stream", 30}, {"name", "_Z2k2Pf"}, {"node", 102}});
    t.work("kernel", 3305, 3400, {{"stream", 20}, {"name", "_Z2k4PfS_"}, {"node", 104}});
    t.work("kernel", 3401, 3402, {{"stream", 20}, {"name", "_Z4bodyv"}, {"node", 777}});
    t.call("cudaStreamSynchronize", "stream_sync", 3011, 3410, {{"stream", 20}});
  }
  return t.footer();
}

TEST(TraceGraphs, RecordedEdgesOrderTheNodesOfALaunch) {
  const trace::Capture run = captured_fork_join(/*join_edge=*/true).capture();
  EXPECT_EQ(run.unmatched_work, 0U);
  const Program& p = run.program;
  // Each launch: in start order (k3 and k2 start together, k3 ends first),
  // k2 on the driver's stream.
  std::vector<std::string> labels;
  for (const Op& op : p.ops()) {
    if (op.kind == op_kind::kernel) labels.push_back(op.label);
  }
  EXPECT_EQ(labels, (std::vector<std::string>{"graph 1: k1", "graph 1: k3", "graph 1: k2", "graph 1: k4",
                                              "graph 1: k1", "graph 1: k3", "graph 1: k2", "graph 1: k4"}));
  // The captured calls' pointers: k1 touches both buffers, k2 one.
  const auto k2 =
      std::find_if(p.ops().begin(), p.ops().end(), [](const Op& op) { return op.label == "graph 1: k2"; });
  ASSERT_NE(k2, p.ops().end());
  EXPECT_FALSE(k2->accesses.empty());
  EXPECT_EQ(p.streams()[*k2->stream].name, "stream 30");
  // k2 waits for k1 by its edge, k4 for k2; plus the launch's fork and join.
  EXPECT_EQ(std::count_if(p.ops().begin(), p.ops().end(),
                          [](const Op& op) { return op.kind == op_kind::stream_wait_event; }),
            2 * 4);
  const trace::AuditReport report = trace::audit(run, DeviceModel::preset("h100"));
  for (const trace::AuditFinding& f : report.findings) EXPECT_NE(f.rule, "race") << f.message;
}

// Without the edge k2 -> k4, k4 reads what k2 may still be writing: a race
// inside the graph, found because the nodes' accesses and edges are known.
TEST(TraceGraphs, AMissingEdgeInsideAGraphIsARace) {
  const trace::AuditReport report =
      trace::audit(captured_fork_join(/*join_edge=*/false).capture(), DeviceModel::preset("h100"));
  const auto race = std::find_if(report.findings.begin(), report.findings.end(),
                                 [](const trace::AuditFinding& f) { return f.rule == "race"; });
  ASSERT_NE(race, report.findings.end());
  EXPECT_NE(race->message.find("k2"), std::string::npos) << race->message;
  EXPECT_NE(race->message.find("k4"), std::string::npos) << race->message;
}

// A record whose node is in no recorded graph (a conditional node's body,
// say) leaves the launch's order unknown: then no node of it has accesses,
// or the nodes the edges ordered on different streams would race.
TEST(TraceGraphs, NoAccessesWhereTheEdgesAreNotKnown) {
  const trace::AuditReport report = trace::audit(
      captured_fork_join(/*join_edge=*/true, /*stray_record=*/true).capture(), DeviceModel::preset("h100"));
  for (const trace::AuditFinding& f : report.findings) EXPECT_NE(f.rule, "race") << f.message;
}

// A graph with an event wait node (ordered after work outside it, which the
// Program does not show) gives its nodes no accesses either.
TEST(TraceGraphs, NoAccessesInAGraphOrderedWithOutsideWork) {
  TraceBuilder t = captured_fork_join(/*join_edge=*/false);
  // The same graph's record again, with an event wait node 5 before k4.
  t.line({{"t", "graph"},
          {"exec", 9},
          {"graph", 8},
          {"nodes", {1, 2, 3, 4, 5}},
          {"types", {0, 0, 0, 0, 6}},
          {"parents", {0, 0, 0, 0, 0}},
          {"edges", {1, 2, 1, 3, 3, 4, 5, 4}}});
  const trace::AuditReport report = trace::audit(t.capture(), DeviceModel::preset("h100"));
  for (const trace::AuditFinding& f : report.findings) EXPECT_NE(f.rule, "race") << f.message;
}

// A node whose parameters changed after it was made touches what the trace
// no longer knows: no accesses, so no race is claimed on stale pointers.
TEST(TraceGraphs, ANodeWhoseParametersChangedHasNoAccesses) {
  TraceBuilder t = captured_fork_join(/*join_edge=*/false);
  t.line({{"t", "graph_node_set"}, {"node", 4}});
  const trace::AuditReport report = trace::audit(t.capture(), DeviceModel::preset("h100"));
  for (const trace::AuditFinding& f : report.findings) EXPECT_NE(f.rule, "race") << f.message;
}

// Nodes of a child graph wait for what the child-graph node waits for, and
// what follows the child-graph node waits for the child graph's last nodes.
TEST(TraceGraphs, ChildGraphNodesTakeTheirParentsEdges) {
  TraceBuilder t;
  t.stream(20, "blocking");
  t.call("cudaGraphInstantiate", "other", 0, 10);
  // 1 -> child(2: {21 -> 22}) -> 3, 21 and 22 on the driver's stream 30.
  t.line({{"t", "graph"},
          {"exec", 9},
          {"graph", 8},
          {"nodes", {1, 2, 3, 21, 22}},
          {"types", {0, 4, 0, 0, 0}},
          {"parents", {0, 0, 0, 2, 2}},
          {"edges", {1, 2, 2, 3, 21, 22}}});
  t.call("cudaGraphLaunch", "other", 100, 110, {{"stream", 20}});
  t.work("kernel", 120, 130, {{"stream", 20}, {"name", "_Z1av"}, {"node", 1}});
  t.work("kernel", 131, 140, {{"stream", 30}, {"name", "_Z1bv"}, {"node", 21}});
  t.work("kernel", 141, 150, {{"stream", 30}, {"name", "_Z1cv"}, {"node", 22}});
  t.work("kernel", 151, 160, {{"stream", 20}, {"name", "_Z1dv"}, {"node", 3}});
  const trace::Capture run = t.footer().capture();
  const Program& p = run.program;
  // b waits for a (fork and edge), d for c (edge and join): the wait before
  // b names a's event, the one before d names c's.
  std::vector<std::string> waited;
  for (const Op& op : p.ops()) {
    if (op.kind == op_kind::stream_wait_event) waited.push_back(p.events()[*op.event]);
  }
  EXPECT_NE(std::find(waited.begin(), waited.end(), "graph 1 node 0 done"), waited.end());
  EXPECT_NE(std::find(waited.begin(), waited.end(), "graph 1 node 2 done"), waited.end());
}

// Recorded on the H100 (tests/apps/graph_race.cu): two graphs, one captured
// from two streams and one built by hand, in which nothing orders `halve`
// after `fill`; the repaired twin has the edge.
trace::AuditReport recorded(const std::string& name) {
  return trace::audit(trace::capture(test::recorded_trace("graphs/" + name)), DeviceModel::preset("h100"));
}

TEST(TraceGraphs, TheRecordedGraphRaceIsFoundAndItsRepairIsClean) {
  const trace::AuditReport racy = recorded("app_graph_race");
  std::size_t races = 0;
  for (const trace::AuditFinding& f : racy.findings) {
    if (f.rule != "race") continue;
    ++races;
    EXPECT_EQ(f.level, check::severity::warning) << f.message;  // inferred from pointers: possible
    EXPECT_NE(f.message.find("fill"), std::string::npos) << f.message;
    EXPECT_NE(f.message.find("halve"), std::string::npos) << f.message;
    EXPECT_EQ(f.message.find("seed"), std::string::npos) << f.message;  // ordered by the edges from seed
  }
  EXPECT_GE(races, 1U);
  for (const trace::AuditFinding& f : recorded("app_graph_race_repaired").findings)
    EXPECT_NE(f.rule, "race") << f.message;
}

// A conditional node's body runs with no correlation id: its records go to
// the latest graph launch begun before them, named as the body they are.
TEST(TraceGraphs, AConditionalBodysRecordsBelongToTheLaunchBeforeThem) {
  TraceBuilder t;
  t.stream(13, "blocking");
  t.call("cudaGraphInstantiate", "other", 0, 50);
  t.line({{"t", "graph"},
          {"exec", 3},
          {"graph", 1},
          {"nodes", {11, 12}},
          {"types", {0, 13}},
          {"parents", {0, 0}},
          {"edges", {11, 12}}});
  for (int i = 0; i < 2; ++i) {
    const double at = 100.0 + i * 1000.0;
    t.call("cudaGraphLaunch", "other", at, at + 10);
    t.work("kernel", at + 20, at + 40, {{"stream", 13}, {"name", "_Z6decidePc"}, {"node", 11}});
    for (int k = 0; k < 3; ++k) {  // the body ran three times, on the driver's stream 15
      const double start = at + 50 + 30 * k;
      t.line({{"t", "kernel"},
              {"corr", 0},
              {"start", TraceBuilder::ns(start)},
              {"end", TraceBuilder::ns(start + 20)},
              {"stream", 15},
              {"name", "_Z4bodyPc"},
              {"node", 9000 + k}});
    }
    t.call("cudaStreamSynchronize", "stream_sync", at + 11, at + 200, {{"stream", 13}});
  }
  const trace::Capture run = t.footer().capture();
  EXPECT_EQ(run.unmatched_work, 0U);
  std::vector<std::string> bodies;
  for (const Op& op : run.program.ops()) {
    if (op.kind == op_kind::kernel && op.label.find("body") != std::string::npos) bodies.push_back(op.label);
  }
  ASSERT_EQ(bodies.size(), 6U);
  EXPECT_EQ(bodies.front(), "graph 1 (conditional body): body");
}

}  // namespace
}  // namespace overlap
