// graph::schedule: the DAG, its mapping onto streams, and the Program that
// issues it (see schedule.hpp for the rules).
#include "overlap/graph/schedule.hpp"

#include <fmt/format.h>

#include <utility>

#include "overlap/core/error.hpp"
#include "stream_mapping.hpp"

namespace overlap::graph {

namespace {

// Clocks take max_streams words per node: 128 keeps a million-node graph
// under half a gigabyte, and CUDA has at most 32 hardware queues.
constexpr std::uint32_t most_streams = 128;

// A copy of `work` on stream `s`, built in place of append's argument: set
// on a local and then moved, the stream's bytes were read back (in wider
// pieces) before their write had reached the cache, a stall per node.
Op on_stream(const Op& work, stream_id s) {
  Op op = work;
  op.stream = s;
  return op;
}

Program build_program(const TaskGraph& graph, const detail::Mapping& m, const MappingOptions& options,
                      const Dependencies& d, Schedule& out) {
  const auto& nodes = graph.nodes();
  Program p;
  p.name = "graph";
  p.reserve(m.priorities.size(), nodes.size() + 2 * m.waits.size());
  for (std::size_t s = 0; s < m.priorities.size(); ++s)
    p.add_stream(fmt::format("graph{}", s), options.kind, m.priorities[s]);

  std::vector<bool> waited_on(nodes.size(), false);
  for (const Wait& w : m.waits) waited_on[w.before] = true;
  out.op_of.assign(nodes.size(), 0);
  out.event_of.assign(nodes.size(), std::nullopt);
  std::size_t next_wait = 0;  // m.waits is in issue order of `after`
  for (const node_id v : d.order) {
    const stream_id s = m.stream_of[v];
    for (; next_wait < m.waits.size() && m.waits[next_wait].after == v; ++next_wait) {
      p.wait(s, *out.event_of[m.waits[next_wait].before]);
    }
    out.op_of[v] = p.append(on_stream(nodes[v].work, s));
    if (waited_on[v]) {
      out.event_of[v] = p.add_event(fmt::format("after {}", nodes[v].name));
      p.record(*out.event_of[v], s);
    }
  }
  return p;
}

}  // namespace

Schedule schedule(const TaskGraph& graph, const MappingOptions& options) {
  if (options.max_streams < 1 || options.max_streams > most_streams) {
    throw invalid_input(
        fmt::format("max_streams: {} is out of range (expected 1 to {})", options.max_streams, most_streams));
  }
  Schedule out;
  out.dependencies = derive_dependencies(graph);
  const Dependencies& d = out.dependencies;
  const auto times = detail::estimated_times(graph);
  detail::LongestPath longest = detail::longest_path(d, times);
  std::vector<bool> critical(graph.size(), false);
  if (options.critical == critical_path::prioritize) {
    for (const node_id v : longest.path) critical[v] = true;
    out.critical_path = std::move(longest.path);
  }
  detail::Mapping m = detail::map_streams(d, critical, longest.finish, options);
  out.program = build_program(graph, m, options, d, out);
  out.stream_of = std::move(m.stream_of);
  out.priorities = std::move(m.priorities);
  out.waits = std::move(m.waits);
  out.cross_stream_edges = m.cross_stream_edges;
  out.false_dependencies = m.false_dependencies;
  out.stream_heads = std::move(m.heads);
  out.stream_tails = std::move(m.tails);
  return out;
}

}  // namespace overlap::graph
