// graph::schedule against brute force on thousands of random task graphs:
// random buffers, random region accesses, random explicit edges (some
// making cycles). For every graph the reference computes, pair by pair,
// which nodes conflict (overlapping bytes, one writing), and checks that
//  - a cycle is reported exactly when the conflicts and edges have one;
//  - every conflicting pair and explicit edge is ordered in the Program
//    (overlap::check::HappensBefore) and the Program has no race;
//  - the waits are exactly the cross-stream edges of the transitive
//    reduction of (DAG + stream order): none redundant, none missing;
//  - removing any one wait leaves some dependency unordered.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "overlap/check/happens_before.hpp"
#include "overlap/check/races.hpp"
#include "overlap/core/error.hpp"
#include "overlap/graph/schedule.hpp"

namespace {

using namespace overlap;
using graph::node_id;

/// "b3": built by appending (GCC 12 warns, wrongly, on "b" + std::to_string(3)).
std::string numbered(const char* prefix, std::size_t i) {
  std::string name(prefix);
  name += std::to_string(i);
  return name;
}

struct Generated {
  graph::TaskGraph graph;
  std::vector<std::pair<node_id, node_id>> explicit_edges;
};

Generated random_graph(std::mt19937_64& rng, std::size_t max_nodes) {
  Generated g;
  const auto pick = [&](std::uint64_t lo, std::uint64_t hi) {  // inclusive
    return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
  };
  const std::size_t buffers = pick(1, 5);
  std::vector<std::uint64_t> sizes;
  for (std::size_t b = 0; b < buffers; ++b) {
    sizes.push_back(pick(1, 257));
    g.graph.add_buffer(numbered("b", b), sizes.back());
  }
  const std::size_t nodes = pick(1, max_nodes);
  for (std::size_t i = 0; i < nodes; ++i) {
    std::vector<Access> accesses;
    const std::size_t count = pick(0, 3);
    for (std::size_t a = 0; a < count; ++a) {
      const std::size_t b = pick(0, buffers - 1);
      const std::uint64_t offset = pick(0, sizes[b]);
      std::optional<std::uint64_t> size;
      if (pick(0, 4) != 0) size = pick(0, sizes[b] - offset);
      const std::string name = numbered("b", b);
      accesses.push_back(pick(0, 2) == 0 ? graph::writes(name, offset, size)
                                         : graph::reads(name, offset, size));
    }
    const std::string name = numbered("n", i);
    switch (pick(0, 5)) {
      case 0: g.graph.add(graph::copy_node(name, copy_direction::h2d, pick(1, 1 << 20), accesses)); break;
      case 1: g.graph.add(graph::memset_node(name, pick(1, 4096), accesses)); break;
      case 2: g.graph.add(graph::host_node(name, 0.01 * static_cast<double>(pick(1, 9)), accesses)); break;
      default:
        g.graph.add(graph::kernel_node(name, 0.01 * static_cast<double>(pick(1, 50)), accesses, 0.25));
        break;
    }
  }
  const std::size_t edges = nodes > 1 ? pick(0, 3) : 0;
  for (std::size_t e = 0; e < edges; ++e) {
    const auto a = static_cast<node_id>(pick(0, nodes - 1));
    const auto b = static_cast<node_id>(pick(0, nodes - 1));
    if (a == b) continue;
    g.graph.precede(a, b);  // backwards ones may close a cycle with the data
    g.explicit_edges.emplace_back(a, b);
  }
  return g;
}

bool conflict(const graph::TaskGraph& g, node_id x, node_id y) {
  for (const Access& a : g.nodes()[x].work.accesses) {
    for (const Access& b : g.nodes()[y].work.accesses) {
      if (a.buffer != b.buffer) continue;
      if (a.mode == access_mode::read && b.mode == access_mode::read) continue;
      const std::uint64_t size = g.buffers()[*g.find_buffer(a.buffer)].bytes;
      const std::uint64_t a_end = a.size ? a.offset + *a.size : size;
      const std::uint64_t b_end = b.size ? b.offset + *b.size : size;
      if (std::max(a.offset, b.offset) < std::min(a_end, b_end)) return true;
    }
  }
  return false;
}

/// reach[i][j]: a path from i to j over `edges` (with i != j).
std::vector<std::vector<char>> closure(std::size_t n, const std::vector<std::pair<node_id, node_id>>& edges) {
  std::vector<std::vector<char>> reach(n, std::vector<char>(n, 0));
  for (const auto& [a, b] : edges) reach[a][b] = 1;
  for (std::size_t k = 0; k < n; ++k)
    for (std::size_t i = 0; i < n; ++i)
      if (reach[i][k])
        for (std::size_t j = 0; j < n; ++j) reach[i][j] = static_cast<char>(reach[i][j] | reach[k][j]);
  return reach;
}

struct Seen {
  std::size_t cycles = 0;
  std::size_t waits = 0;
  std::size_t false_dependencies = 0;
};

void check_schedule(const Generated& gen, const graph::MappingOptions& options, Seen& seen) {
  const graph::TaskGraph& g = gen.graph;
  const std::size_t n = g.size();
  // The reference DAG: every conflicting pair in declaration order, and the explicit edges.
  std::vector<std::pair<node_id, node_id>> required = gen.explicit_edges;
  for (node_id i = 0; i < n; ++i)
    for (node_id j = i + 1; j < n; ++j)
      if (conflict(g, i, j)) required.emplace_back(i, j);
  const auto reach = closure(n, required);
  bool cyclic = false;
  for (std::size_t i = 0; i < n; ++i) cyclic = cyclic || reach[i][i];
  if (cyclic) {
    ++seen.cycles;
    EXPECT_THROW((void)graph::schedule(g, options), invalid_input);
    try {
      (void)graph::schedule(g, options);
    } catch (const invalid_input& e) {
      EXPECT_NE(std::string(e.what()).find("cycle"), std::string::npos) << e.what();
    }
    return;
  }
  const graph::Schedule s = graph::schedule(g, options);
  ASSERT_EQ(s.stream_of.size(), n);
  ASSERT_LE(s.streams(), options.max_streams);
  seen.waits += s.waits.size();
  seen.false_dependencies += s.false_dependencies;

  // Every requirement is ordered in the issued Program, and nothing races.
  const check::HappensBefore hb(s.program);
  for (const auto& [a, b] : required) {
    EXPECT_TRUE(hb.ordered(s.op_of[a], s.op_of[b])) << g.nodes()[a].name << " -> " << g.nodes()[b].name;
  }
  EXPECT_TRUE(check::find_races(s.program).races.empty());
  // The DAG's edges are requirements or implied by them (nearest conflicts only).
  for (node_id v = 0; v < n; ++v)
    for (const node_id u : s.dependencies.predecessors[v]) EXPECT_TRUE(reach[u][v]);

  // The minimum: cross-stream edges of the transitive reduction of DAG + stream order.
  std::vector<std::pair<node_id, node_id>> with_order = required;
  std::vector<std::optional<node_id>> last(s.streams());
  for (const node_id v : s.dependencies.order) {
    if (last[s.stream_of[v]]) with_order.emplace_back(*last[s.stream_of[v]], v);
    last[s.stream_of[v]] = v;
  }
  const auto full = closure(n, with_order);
  std::size_t minimum = 0;
  for (node_id u = 0; u < n; ++u) {
    for (node_id v = 0; v < n; ++v) {
      if (!full[u][v] || s.stream_of[u] == s.stream_of[v]) continue;
      bool through_another = false;
      for (node_id w = 0; w < n && !through_another; ++w) through_another = full[u][w] && full[w][v];
      if (!through_another) ++minimum;
    }
  }
  EXPECT_EQ(s.waits.size(), minimum);

  // Each wait is needed: without it some requirement is unordered.
  const auto& ops = s.program.ops();
  for (op_id w = 0; w < ops.size(); ++w) {
    if (ops[w].kind != op_kind::stream_wait_event) continue;
    Program without = s.program.without_ops();
    std::vector<op_id> moved(ops.size());
    for (op_id i = 0; i < ops.size(); ++i) {
      if (i == w) continue;
      moved[i] = without.append(ops[i]);
    }
    const check::HappensBefore weaker(without);
    bool some_unordered = false;
    for (const auto& [a, b] : required) {
      some_unordered = some_unordered || !weaker.ordered(moved[s.op_of[a]], moved[s.op_of[b]]);
    }
    EXPECT_TRUE(some_unordered) << "wait op " << w << " is redundant";
  }
}

TEST(GraphProperty, RandomGraphsAreOrderedRaceFreeWithTheFewestWaits) {
  std::mt19937_64 rng(20261125);
  Seen seen;
  std::size_t graphs = 0;
  for (int round = 0; round < 3000; ++round) {
    const Generated gen = random_graph(rng, 32);
    graph::MappingOptions options;
    options.max_streams = static_cast<std::uint32_t>(1 + round % 6);
    options.critical = round % 2 == 0 ? graph::critical_path::prioritize : graph::critical_path::ignore;
    check_schedule(gen, options, seen);
    ++graphs;
    if (HasFailure()) {
      ADD_FAILURE() << "first failing graph: round " << round;
      return;
    }
  }
  // Cycles, waits and a full pool were all exercised.
  EXPECT_GT(seen.cycles, 50U);
  EXPECT_LT(seen.cycles, graphs / 2);
  EXPECT_GT(seen.waits, 1000U);
  EXPECT_GT(seen.false_dependencies, 100U);
}

}  // namespace
