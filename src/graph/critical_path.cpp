// Estimated node times and the longest path through the DAG: the chain that
// bounds the graph's run, which the mapping gives a stream of its own.
#include <algorithm>

#include "stream_mapping.hpp"

namespace overlap::graph::detail {

namespace {

// Rough rates for nodes without a duration: only their ratio to kernel
// estimates matters, to pick the longer branch (ms per byte).
constexpr double copy_ms_per_byte = 1.0 / 25e6;   // ~25 GB/s over PCIe
constexpr double memset_ms_per_byte = 1.0 / 1e9;  // ~1 TB/s in device memory

}  // namespace

std::vector<double> estimated_times(const TaskGraph& graph) {
  std::vector<double> times;
  times.reserve(graph.size());
  for (const Node& node : graph.nodes()) {
    const Op& op = node.work;
    if (op.duration) {
      times.push_back(*op.duration);
    } else if (op.kind == op_kind::memset) {
      times.push_back(static_cast<double>(op.bytes) * memset_ms_per_byte);
    } else {
      times.push_back(static_cast<double>(op.bytes) * copy_ms_per_byte);
    }
  }
  return times;
}

LongestPath longest_path(const Dependencies& dependencies, const std::vector<double>& times) {
  const std::size_t n = dependencies.predecessors.size();
  LongestPath result;
  result.finish.assign(n, 0.0);
  if (n == 0) return result;
  constexpr node_id none = ~node_id{0};
  std::vector<node_id> via(n, none);  // the predecessor the longest path to each node comes through
  node_id last = dependencies.order.front();
  for (const node_id v : dependencies.order) {
    // Selects rather than branches: which predecessor finishes last is a
    // coin toss the branch predictor lost half the time.
    double start = 0.0;
    node_id from = none;
    for (const node_id u : dependencies.predecessors[v]) {
      const double f = result.finish[u];
      const bool later = from == none || f > start;
      start = later ? f : start;
      from = later ? u : from;
    }
    via[v] = from;
    result.finish[v] = start + times[v];
    if (result.finish[v] > result.finish[last]) last = v;
  }
  for (node_id v = last; v != none; v = via[v]) result.path.push_back(v);
  std::reverse(result.path.begin(), result.path.end());
  return result;
}

}  // namespace overlap::graph::detail
