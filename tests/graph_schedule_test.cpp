// graph::TaskGraph and graph::schedule on small graphs whose answer is known:
// which accesses make edges, where nodes go, which waits are issued, and
// the errors bad declarations get.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "message_of.hpp"
#include "overlap/check/races.hpp"
#include "overlap/core/error.hpp"
#include "overlap/graph/schedule.hpp"

namespace {

using namespace overlap;
using graph::node_id;
using Preds = std::vector<node_id>;

/// "b3": built by appending (GCC 12 warns, wrongly, on "b" + std::to_string(3)).
std::string numbered(const char* prefix, std::size_t i) {
  std::string name(prefix);
  name += std::to_string(i);
  return name;
}

graph::Node kernel(const std::string& name, std::vector<Access> accesses, double ms = 1.0) {
  return graph::kernel_node(name, ms, std::move(accesses), 0.125);
}

using overlap::testing::message_of;

TEST(GraphDependencies, ReadAfterWriteWriteAfterReadAndWriteAfterWriteOnOverlappingBytes) {
  graph::TaskGraph g;
  g.add_buffer("x", 100);
  const node_id w1 = g.add(kernel("w1", {graph::writes("x", 0, 50)}));
  const node_id r1 = g.add(kernel("r1", {graph::reads("x", 40, 20)}));   // RAW on 40..50
  const node_id r2 = g.add(kernel("r2", {graph::reads("x", 50, 50)}));   // untouched bytes: none
  const node_id w2 = g.add(kernel("w2", {graph::writes("x", 45, 10)}));  // WAR on r1 and r2
  const node_id w3 = g.add(kernel("w3", {graph::writes("x", 0, 5)}));    // WAW on w1
  const auto d = graph::derive_dependencies(g);
  EXPECT_EQ(d.predecessors[w1], Preds{});
  EXPECT_EQ(d.predecessors[r1], Preds{w1});
  EXPECT_EQ(d.predecessors[r2], Preds{});
  EXPECT_EQ(d.predecessors[w2], (Preds{r1, r2}));  // the readers already follow w1
  EXPECT_EQ(d.predecessors[w3], Preds{w1});
  EXPECT_EQ(d.edges, 4U);
}

TEST(GraphDependencies, ReadsOfTheSameBytesAndDisjointWritesAreIndependent) {
  graph::TaskGraph g;
  g.add_buffer("x", 64);
  g.add(kernel("a", {graph::reads("x")}));
  g.add(kernel("b", {graph::reads("x", 8, 8)}));
  g.add(kernel("c", {graph::writes("x", 0, 0)}));  // no bytes: no conflict
  const auto d = graph::derive_dependencies(g);
  EXPECT_EQ(d.edges, 0U);
  graph::TaskGraph h;
  h.add_buffer("y", 64);
  h.add(kernel("lo", {graph::writes("y", 0, 32)}));
  h.add(kernel("hi", {graph::writes("y", 32, 32)}));
  EXPECT_EQ(graph::derive_dependencies(h).edges, 0U);
}

TEST(GraphDependencies, OnlyTheNearestWriterMakesAnEdge) {
  graph::TaskGraph g;
  g.add_buffer("x", 16);
  for (int i = 0; i < 5; ++i) g.add(kernel(numbered("w", i), {graph::writes("x")}));
  const auto d = graph::derive_dependencies(g);
  EXPECT_EQ(d.edges, 4U);  // a chain, not a clique
  for (node_id v = 1; v < 5; ++v) EXPECT_EQ(d.predecessors[v], Preds{v - 1});
}

TEST(GraphDependencies, AnExplicitEdgeBackwardsChangesTheIssueOrder) {
  graph::TaskGraph g;
  const node_id a = g.add(kernel("a", {}));
  const node_id b = g.add(kernel("b", {}));
  g.precede(b, a);
  const auto d = graph::derive_dependencies(g);
  EXPECT_EQ(d.order, (std::vector<node_id>{b, a}));
  EXPECT_EQ(d.predecessors[a], Preds{b});
}

TEST(GraphDependencies, ACycleThroughExplicitEdgesNamesANodeOnIt) {
  graph::TaskGraph g;
  g.add_buffer("x", 8);
  g.add(kernel("producer", {graph::writes("x")}));
  const node_id consumer = g.add(kernel("consumer", {graph::reads("x")}));
  g.add(kernel("bystander", {}));
  g.precede(consumer, 0);  // consumer -> producer, while the data says producer -> consumer
  const std::string m = message_of([&] { (void)graph::schedule(g); });
  EXPECT_NE(m.find("cycle"), std::string::npos) << m;
  EXPECT_NE(m.find("'producer'"), std::string::npos) << m;
  EXPECT_NE(m.find("'consumer'"), std::string::npos) << m;
  EXPECT_EQ(m.find("bystander"), std::string::npos) << m;
}

TEST(GraphDeclarations, BadInputNamesTheNodeAndLeavesTheGraphAsItWas) {
  graph::TaskGraph g;
  g.add_buffer("x", 100);
  g.add(kernel("ok", {graph::reads("x")}));
  EXPECT_NE(message_of([&] {
              g.add(kernel("past", {graph::reads("x", 90, 11)}));
            }).find("node 'past': access: bytes [90, 101) lie outside buffer 'x' of 100 bytes"),
            std::string::npos);
  EXPECT_NE(message_of([&] { g.add(kernel("far", {graph::reads("x", 101)})); }).find("node 'far'"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              g.add(kernel("lost", {graph::reads("y")}));
            }).find("node 'lost': access: buffer 'y' is not declared"),
            std::string::npos);
  EXPECT_NE(message_of([&] { g.add(kernel("ok", {})); }).find("node 'ok': declared twice"),
            std::string::npos);
  EXPECT_NE(message_of([&] { g.add(kernel("", {})); }).find("name must not be empty"), std::string::npos);
  graph::Node untimed = kernel("untimed", {});
  untimed.work.duration.reset();
  EXPECT_NE(message_of([&] { g.add(untimed); }).find("node 'untimed': duration: required"),
            std::string::npos);
  graph::Node sync = kernel("sync", {});
  sync.work.kind = op_kind::device_synchronize;
  EXPECT_NE(message_of([&] { g.add(sync); }).find("node 'sync': kind"), std::string::npos);
  EXPECT_NE(
      message_of([&] { g.add(graph::kernel_node("wide", 1.0, {}, 1.5)); }).find("node 'wide': gpu_share"),
      std::string::npos);
  EXPECT_NE(message_of([&] { g.precede(0, 7); }).find("not declared"), std::string::npos);
  EXPECT_NE(message_of([&] { g.precede(0, 0); }).find("'ok' cannot precede itself"), std::string::npos);
  EXPECT_NE(message_of([&] { g.add_buffer("x", 5); }).find("buffer 'x': declared twice"), std::string::npos);
  EXPECT_EQ(g.size(), 1U);
  EXPECT_TRUE(g.edges().empty());
  EXPECT_EQ(g.buffers().size(), 1U);
  // A refused name is free: nothing of the refused node was kept.
  EXPECT_EQ(g.add(kernel("past", {graph::reads("x", 90, 10)})), 1U);
  EXPECT_EQ(g.buffer_of(1, 0), 0U);
}

TEST(GraphDeclarations, NamesAreFoundAndKeptUniqueAcrossIndexGrowth) {
  graph::TaskGraph g;
  for (std::size_t i = 0; i < 1000; ++i) g.add(kernel(numbered("node", i), {}));
  for (std::size_t i = 0; i < 1000; i += 7) EXPECT_EQ(g.find_node(numbered("node", i)), i);
  EXPECT_FALSE(g.find_node("node1000"));
  EXPECT_FALSE(g.find_node(""));
  EXPECT_NE(message_of([&] { g.add(kernel("node999", {})); }).find("node 'node999': declared twice"),
            std::string::npos);
  g.reserve(5000);  // regrows the index: every name is still found
  for (std::size_t i = 0; i < 1000; i += 7) EXPECT_EQ(g.find_node(numbered("node", i)), i);
  EXPECT_EQ(g.size(), 1000U);
}

TEST(GraphDeclarations, AccessesToTheEndOfABufferAreMadeExplicit) {
  graph::TaskGraph g;
  g.add_buffer("x", 100);
  g.add(kernel("tail", {graph::reads("x", 30)}));
  ASSERT_EQ(g.nodes()[0].work.accesses.size(), 1U);
  EXPECT_EQ(g.nodes()[0].work.accesses[0].size, 70U);  // the checker knows no buffer sizes
}

TEST(GraphSchedule, AChainStaysOnOneStreamWithNoWaits) {
  graph::TaskGraph g;
  g.add_buffer("x", 8);
  for (int i = 0; i < 6; ++i) g.add(kernel(numbered("k", i), {graph::writes("x")}));
  const auto s = graph::schedule(g);
  EXPECT_EQ(s.streams(), 1U);
  EXPECT_TRUE(s.waits.empty());
  EXPECT_EQ(s.program.ops().size(), 6U);
  EXPECT_TRUE(s.program.events().empty());
}

// One input, `branches` kernels reading it into their own outputs, a join reading them all.
graph::TaskGraph fork_join(int branches, double longest_ms) {
  graph::TaskGraph g;
  g.add_buffer("in", 64);
  for (int b = 0; b < branches; ++b) g.add_buffer(numbered("out", b), 64);
  g.add(kernel("root", {graph::writes("in")}));
  std::vector<Access> join_reads;
  for (int b = 0; b < branches; ++b) {
    const std::string out = numbered("out", b);
    g.add(kernel(numbered("branch", b), {graph::reads("in"), graph::writes(out)},
                 b == branches - 1 ? longest_ms : 1.0));
    join_reads.push_back(graph::reads(out));
  }
  g.add(kernel("join", join_reads));
  return g;
}

TEST(GraphSchedule, BranchesRunOnTheirOwnStreamsWithOneWaitPerCrossing) {
  const graph::TaskGraph g = fork_join(4, 5.0);
  const auto s = graph::schedule(g);
  EXPECT_EQ(s.streams(), 4U);
  // root, the longest branch and the join are the critical path on stream 0.
  EXPECT_EQ(s.critical_path, (std::vector<node_id>{0, 4, 5}));
  EXPECT_EQ(s.stream_of[0], 0U);
  EXPECT_EQ(s.stream_of[4], 0U);
  EXPECT_EQ(s.stream_of[5], 0U);
  EXPECT_EQ(s.priorities[0], 1);
  for (std::size_t t = 1; t < s.streams(); ++t) EXPECT_EQ(s.priorities[t], 0);
  // Three branches wait for the root; the join waits for those three.
  EXPECT_EQ(s.waits.size(), 6U);
  EXPECT_EQ(s.cross_stream_edges, 6U);
  EXPECT_EQ(s.false_dependencies, 0U);
  EXPECT_TRUE(check::find_races(s.program).races.empty());
}

TEST(GraphSchedule, AFullPoolQueuesBehindUnrelatedWorkAndSaysSo) {
  const graph::TaskGraph g = fork_join(4, 5.0);
  graph::MappingOptions two;
  two.max_streams = 2;
  const auto s = graph::schedule(g, two);
  EXPECT_EQ(s.streams(), 2U);
  EXPECT_EQ(s.false_dependencies, 2U);  // branches 1 and 2 queue behind branch 0
  EXPECT_TRUE(check::find_races(s.program).races.empty());
  graph::MappingOptions one;
  one.max_streams = 1;
  const auto serial = graph::schedule(g, one);
  EXPECT_EQ(serial.streams(), 1U);
  EXPECT_TRUE(serial.waits.empty());
  EXPECT_EQ(serial.priorities, std::vector<int>{0});  // no second stream to prioritize over
}

TEST(GraphSchedule, WithoutCriticalPathPriorityEveryStreamIsEqual) {
  graph::MappingOptions options;
  options.critical = graph::critical_path::ignore;
  const auto s = graph::schedule(fork_join(3, 5.0), options);
  EXPECT_TRUE(s.critical_path.empty());
  for (const int p : s.priorities) EXPECT_EQ(p, 0);
  EXPECT_EQ(s.streams(), 3U);  // branch 0 continues the root's stream
  EXPECT_EQ(s.waits.size(), 4U);
}

TEST(GraphSchedule, AWaitAlreadyImpliedIsNotIssued) {
  // b follows side's stream and waits for a; c follows b and needs a too,
  // which b's wait already orders.
  graph::TaskGraph g;
  g.add_buffer("x", 8);
  g.add_buffer("y", 8);
  g.add_buffer("z", 8);
  g.add(kernel("a", {graph::writes("x")}, 5.0));
  g.add(kernel("side", {graph::writes("z")}, 10.0));
  g.add(kernel("b", {graph::reads("x"), graph::reads("z"), graph::writes("y")}, 1.0));
  g.add(kernel("c", {graph::reads("x"), graph::reads("y")}, 1.0));
  graph::MappingOptions options;
  options.critical = graph::critical_path::ignore;
  const auto s = graph::schedule(g, options);
  ASSERT_EQ(s.stream_of[1], s.stream_of[2]);  // b continues side's stream (the longer predecessor)
  ASSERT_EQ(s.stream_of[2], s.stream_of[3]);
  ASSERT_NE(s.stream_of[0], s.stream_of[2]);
  EXPECT_EQ(s.cross_stream_edges, 2U);                     // a -> b and a -> c
  EXPECT_EQ(s.waits, (std::vector<graph::Wait>{{0, 2}}));  // only b waits
}

TEST(GraphSchedule, TheProgramNamesItsOpsAfterTheNodes) {
  const auto s = graph::schedule(fork_join(2, 5.0));
  const auto& ops = s.program.ops();
  EXPECT_EQ(ops[s.op_of[0]].label, "root");
  EXPECT_EQ(ops[s.op_of[3]].label, "join");
  ASSERT_TRUE(s.event_of[0]);
  EXPECT_EQ(s.program.events()[*s.event_of[0]], "after root");
  EXPECT_EQ(s.program.streams()[0].name, "graph0");
  EXPECT_EQ(s.program.streams()[0].kind, stream_kind::non_blocking);
  EXPECT_EQ(s.stream_heads.size(), s.streams());
  EXPECT_EQ(s.stream_tails[0], 3U);
}

TEST(GraphSchedule, MaxStreamsOutOfRangeIsBadInput) {
  graph::MappingOptions options;
  options.max_streams = 0;
  EXPECT_NE(message_of([&] { (void)graph::schedule(fork_join(2, 1.0), options); }).find("max_streams: 0"),
            std::string::npos);
}

}  // namespace
