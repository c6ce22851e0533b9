// A random DAG of declared work, for timing graph::TaskGraph and
// graph::schedule at scale: `overlap bench`'s (c) row and the Google
// Benchmark program bench/graph_schedule.cpp build the same one.
//
// The shape is drawn first (plan_random_dag), so that a timing of the
// declaration covers what a user pays (names, accesses, TaskGraph::add) and
// not the random number generator. Each node is a kernel touching 1 to 3
// random byte ranges of random buffers (a third of them writes), and about
// one node in a hundred has an explicit edge from one of the 1,000 nodes
// declared before it. Everything follows from the seed alone.
//
// CUDA-free and header-only: bench/graph_schedule.cpp links overlap_graph
// alone, without the CUDA library overlap_bench.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "overlap/core/program.hpp"
#include "overlap/graph/task_graph.hpp"

namespace overlap::bench {

/// How big a random DAG is.
struct random_dag_options {
  std::size_t nodes = 100'000;                               ///< kernel nodes
  std::uint32_t buffers = 1000;                              ///< buffers the accesses pick from
  std::uint64_t buffer_bytes = std::uint64_t{1} << 20;       ///< each buffer's size
  std::uint64_t max_access_bytes = std::uint64_t{64} << 10;  ///< an access covers 4 KiB .. this
  std::uint32_t explicit_edge_per_mille = 10;                ///< nodes (per 1,000) with an explicit edge
  std::uint64_t seed = 1;                                    ///< the whole shape follows from it
};

/// One drawn access: a range of a buffer, read or written.
struct random_access {
  std::uint32_t buffer = 0;  ///< index among the buffers
  std::uint64_t offset = 0;  ///< first byte
  std::uint64_t bytes = 0;   ///< length
  bool write = false;        ///< a write (or read-write) rather than a read
};

/// One drawn node: its estimated duration and its accesses.
struct random_node {
  double duration_ms = 0.0;             ///< for the critical path: 5 .. 100 us
  std::vector<random_access> accesses;  ///< 1 to 3
};

/// A drawn DAG, not yet declared.
struct random_dag_plan {
  random_dag_options options;                                  ///< what it was drawn from
  std::vector<random_node> nodes;                              ///< in declaration order
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;  ///< explicit (before, after), before < after
  std::size_t accesses = 0;                                    ///< over every node
};

namespace random_dag_detail {

/// splitmix64: a small, fast, well-mixed stream of 64-bit values.
class splitmix {
 public:
  /// Starts the stream at `seed`: the same seed gives the same values.
  explicit splitmix(std::uint64_t seed) noexcept : state_(seed) {}
  /// The next value.
  std::uint64_t next() noexcept {
    std::uint64_t x = state_ += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }
  /// Uniform in [0, n) for n > 0 (the modulo bias is immaterial here).
  std::uint64_t below(std::uint64_t n) noexcept { return next() % n; }

 private:
  std::uint64_t state_;
};

/// "b12", "n345": appended, not "b" + to_string (GCC 12 warns, wrongly, on that).
inline std::string numbered(char prefix, std::size_t i) {
  std::string name(1, prefix);
  name += std::to_string(i);
  return name;
}

}  // namespace random_dag_detail

/// Draws a DAG's shape from `options` (nodes >= 1, buffers >= 1, accesses
/// of 4 KiB .. max_access_bytes fitting in buffer_bytes).
[[nodiscard]] inline random_dag_plan plan_random_dag(const random_dag_options& options) {
  random_dag_detail::splitmix rng(options.seed);
  random_dag_plan plan;
  plan.options = options;
  plan.nodes.resize(options.nodes);
  constexpr std::uint64_t min_bytes = 4096;
  const std::uint64_t max_bytes =
      options.max_access_bytes < options.buffer_bytes ? options.max_access_bytes : options.buffer_bytes;
  const std::uint64_t span = max_bytes > min_bytes ? max_bytes - min_bytes + 1 : 1;
  for (std::size_t i = 0; i < options.nodes; ++i) {
    random_node& node = plan.nodes[i];
    node.duration_ms = 0.005 + 0.095 * static_cast<double>(rng.below(1000)) / 1000.0;
    const std::size_t count = 1 + rng.below(3);
    node.accesses.reserve(count);
    for (std::size_t a = 0; a < count; ++a) {
      random_access access;
      access.buffer = static_cast<std::uint32_t>(rng.below(options.buffers));
      access.bytes = max_bytes < min_bytes ? max_bytes : min_bytes + rng.below(span);
      access.offset = rng.below(options.buffer_bytes - access.bytes + 1);
      access.write = rng.below(3) == 0;
      node.accesses.push_back(access);
    }
    plan.accesses += count;
    if (i > 0 && rng.below(1000) < options.explicit_edge_per_mille) {
      const std::uint64_t back = 1 + rng.below(i < 1000 ? i : 1000);
      plan.edges.emplace_back(static_cast<std::uint32_t>(i - back), static_cast<std::uint32_t>(i));
    }
  }
  return plan;
}

/// Declares `plan` into a TaskGraph: buffers "b0", "b1", ..., kernel nodes
/// "n0", "n1", ... with their accesses, then the explicit edges.
[[nodiscard]] inline graph::TaskGraph declare_random_dag(const random_dag_plan& plan) {
  graph::TaskGraph g;
  std::vector<std::string> names;
  names.reserve(plan.options.buffers);
  for (std::uint32_t b = 0; b < plan.options.buffers; ++b) {
    names.push_back(random_dag_detail::numbered('b', b));
    g.add_buffer(names.back(), plan.options.buffer_bytes);
  }
  g.reserve(plan.nodes.size());
  for (std::size_t i = 0; i < plan.nodes.size(); ++i) {
    const random_node& node = plan.nodes[i];
    std::vector<Access> accesses;
    accesses.reserve(node.accesses.size());
    for (const random_access& a : node.accesses) {
      accesses.push_back(a.write ? graph::writes(names[a.buffer], a.offset, a.bytes)
                                 : graph::reads(names[a.buffer], a.offset, a.bytes));
    }
    (void)g.add(
        graph::kernel_node(random_dag_detail::numbered('n', i), node.duration_ms, std::move(accesses)));
  }
  for (const auto& [before, after] : plan.edges) g.precede(before, after);
  return g;
}

}  // namespace overlap::bench
