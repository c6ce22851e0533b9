// The mapping step of graph::schedule: nodes onto pool streams, and the
// event waits that order the edges crossing streams. Private to src/graph.
#pragma once

#include <cstdint>
#include <vector>

#include "overlap/graph/schedule.hpp"

namespace overlap::graph::detail {

/// Estimated time of each node alone (its duration, or its bytes at a
/// typical rate), for the critical path and for choosing between streams.
[[nodiscard]] std::vector<double> estimated_times(const TaskGraph& graph);

/// The longest path through the DAG by `times`, first node first, and each
/// node's estimated finish (its time plus the latest of its predecessors').
struct LongestPath {
  std::vector<node_id> path;
  std::vector<double> finish;
};
[[nodiscard]] LongestPath longest_path(const Dependencies& dependencies, const std::vector<double>& times);

/// What map_streams decided; schedule() builds the Program from it.
struct Mapping {
  std::vector<std::uint32_t> stream_of;  ///< per node
  std::vector<int> priorities;           ///< per pool stream used
  std::vector<Wait> waits;               ///< in issue order of `after`
  std::size_t cross_stream_edges = 0;
  std::size_t false_dependencies = 0;
  std::vector<node_id> heads;  ///< per stream
  std::vector<node_id> tails;  ///< per stream
};

/// Maps the nodes in `dependencies.order` onto at most `options.max_streams`
/// streams (see schedule.hpp for the rules). `critical` marks the nodes of
/// the critical path (all false with critical_path::ignore); `finish` is
/// each node's estimated finish.
[[nodiscard]] Mapping map_streams(const Dependencies& dependencies, const std::vector<bool>& critical,
                                  const std::vector<double>& finish, const MappingOptions& options);

}  // namespace overlap::graph::detail
