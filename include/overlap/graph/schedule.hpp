// overlap::graph scheduling: from declared work to streams, events and a Program.
//
// Three steps, each usable alone:
//
// 1. derive_dependencies: every node's predecessors. Node b depends on an
//    earlier-declared node a when their accesses overlap in some byte and at
//    least one writes (read after write, write after read, write after
//    write), or when an explicit edge says so. Only the *nearest* conflicting
//    accesses make edges (a read depends on the last writer of its bytes, not
//    on every earlier one), so the DAG stays linear in the accesses. One pass
//    with a per-buffer interval map: O(accesses x log segments + edges).
// 2. map_streams (inside schedule): nodes onto a pool of at most
//    `max_streams` streams, in issue order (a topological order: declaration
//    order where explicit edges allow). A node continues the stream of a
//    predecessor that is that stream's last node (a chain stays on one
//    stream); otherwise it takes a stream whose queued work all happens
//    before it, or a fresh one; only when the pool is full does it queue
//    behind unrelated work (counted in Schedule::false_dependencies). With
//    critical_path::prioritize the longest path by estimated duration runs
//    on a stream of its own with a higher priority.
// 3. Event waits: an edge between nodes on different streams needs a
//    cudaStreamWaitEvent unless the ordering is already implied by stream
//    order and the waits issued so far. Vector clocks over the pool's streams
//    find, for each node, the maximal predecessors not yet covered; those
//    (and only those) are waited on. That is the minimum number of waits for
//    the chosen mapping: a predecessor is covered by a set of waits exactly
//    when one of them covers it, so no smaller set orders every edge.
//
// The Program is built from those decisions: per node, its waits, its op
// (label = node name, accesses as declared), then a record of its event if a
// later node waits on it. overlap::check finds no race in it when the
// dependencies came from the same accesses (tests/graph_property_test.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "overlap/core/program.hpp"
#include "overlap/graph/task_graph.hpp"

namespace overlap::graph {

/// The DAG: each node's direct predecessors and an issue order.
struct Dependencies {
  /// Per node, the nodes it must follow: ascending, no duplicates, derived
  /// from data and explicit edges (not transitively reduced).
  std::vector<std::vector<node_id>> predecessors;
  /// Every node once, each after all of its predecessors: declaration order
  /// whenever explicit edges allow it, else the earliest-declared ready node first.
  std::vector<node_id> order;
  /// Edges in the DAG (the sum of predecessors' sizes).
  std::size_t edges = 0;
};

/// Derives the DAG of `graph`. Throws overlap::invalid_input naming a node on
/// a cycle (explicit edges can make one) and the cycle itself.
[[nodiscard]] Dependencies derive_dependencies(const TaskGraph& graph);

/// Whether the critical path gets a stream of its own with a higher priority.
enum class critical_path : std::uint8_t {
  prioritize,  ///< the longest path by estimated time runs on a high-priority stream
  ignore,      ///< every stream has the default priority
};

/// How nodes are mapped onto streams.
struct MappingOptions {
  /// The most streams the pool may hold, >= 1. More streams than the device
  /// has hardware queues share queues, which brings back false dependencies
  /// in hardware (DeviceModel::connections, CUDA_DEVICE_MAX_CONNECTIONS,
  /// 8 by default): cuda::Graph takes this from the device.
  std::uint32_t max_streams = 8;
  /// Whether the critical path gets a high-priority stream of its own (only with max_streams >= 2).
  critical_path critical = critical_path::prioritize;
  /// The kind of the Program's streams: non_blocking, so that other work on
  /// the legacy default stream neither waits for nor blocks the graph.
  stream_kind kind = stream_kind::non_blocking;
};

/// A cross-stream edge that needs a wait: `after`'s stream waits for the
/// event recorded right after `before`.
struct Wait {
  node_id before = 0;  ///< the node whose event is waited for
  node_id after = 0;   ///< the node whose stream waits, just before it
  /// Equal when both nodes are.
  bool operator==(const Wait&) const = default;
};

/// The nodes mapped onto streams, and the Program that issues them.
struct Schedule {
  Dependencies dependencies;  ///< the DAG it was built from
  /// Per node, its stream: an index into the pool, which is also the
  /// Program's stream id.
  std::vector<std::uint32_t> stream_of;
  /// Per pool stream, its priority (the Program's convention: larger is more urgent).
  std::vector<int> priorities;
  /// The waits issued, ordered by `after`'s issue position (then `before`'s).
  std::vector<Wait> waits;
  /// DAG edges between nodes on different streams, before the reduction.
  std::size_t cross_stream_edges = 0;
  /// Nodes placed behind work they do not depend on because the pool was full.
  std::size_t false_dependencies = 0;
  /// The longest path by estimated time, first node first (empty with critical_path::ignore).
  std::vector<node_id> critical_path;
  /// Per pool stream, its first node: what a caller's fork must precede.
  std::vector<node_id> stream_heads;
  /// Per pool stream, its last node: what a caller's join must follow.
  std::vector<node_id> stream_tails;
  /// Streams "graph0", "graph1", ...; per node its waits, its work op
  /// (labelled with the node's name) and, when waited on, a record of the
  /// event "after <node>".
  Program program;
  /// Per node, its work op in `program`.
  std::vector<op_id> op_of;
  /// Per node, the event recorded right after it, when some node waits on it.
  std::vector<std::optional<event_id>> event_of;

  /// Pool streams used.
  [[nodiscard]] std::size_t streams() const noexcept { return priorities.size(); }
};

/// Derives the DAG of `graph`, maps it onto streams and builds its Program.
/// Throws overlap::invalid_input for a cycle or a bad option (naming it).
[[nodiscard]] Schedule schedule(const TaskGraph& graph, const MappingOptions& options = {});

}  // namespace overlap::graph
