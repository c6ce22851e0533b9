// The capture pass for CUDA graphs: what a graph launch ran, and which calls
// only built a graph.
//
// A trace shows a cudaGraphLaunch (or cuGraphLaunch) as one call without a
// stream, and the kernels, copies and memsets the graph ran as device
// records carrying that call's correlation id (directly or through an
// `alias`). Each record becomes an op of the Program on the stream it ran on,
// with its measured duration, issued by the launch call: the ops of one
// launch are ordered after the launch stream's earlier work (the graph's
// other streams wait for it) and before its later work (the launch stream
// waits for them), as CUDA orders a graph launch in its stream. The graph's
// edges are not in the trace, so ops on one stream keep the order they ran
// in and ops on different streams are left unordered; records carry no
// addresses, so graph ops have no accesses (no race is checked on them).
//
// Traces that carry the graphs' structure (`graph`, `graph_node` and
// `graph_clone` records, and a `node` on each device record) say more: each
// record is put in its node, through the clones instantiation made, and
// waits for the nearest recorded nodes its edges lead back from (through
// empty, event, host and child-graph nodes, which have no records); and a
// node made by a captured call, or added with its parameters, touches what
// that call's pointers say.
//
// Calls made while a stream was being captured (cudaStreamBeginCapture ..
// cudaStreamEndCapture) add nodes to a graph; they run nothing. A call of the
// capturing thread in that window that would issue or order stream work and
// has no device record of its own is captured: it is host time, not an op.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "overlap/trace/trace_file.hpp"

namespace overlap::trace::detail {

/// cudaGraphLaunch or cuGraphLaunch.
[[nodiscard]] bool is_graph_launch(const Call& call) noexcept;

/// How graph node `id` was made: its own `graph_node` record, else that of
/// the node it was cloned from (instantiation's clones have none of their
/// own); null if unknown or if the parameters of any of them changed
/// afterwards (what it touches is then not known).
[[nodiscard]] const GraphNodeRecord* made_node(const RawTrace& trace, std::uint64_t id);

/// A memory allocation or free node of a launched graph: no device record,
/// but an op in the graph's order all the same (capture.cpp makes it a
/// marker: the free writes the whole allocation, as cudaFreeAsync does).
struct GraphMemoryNode {
  bool free = false;        ///< a free node; else an allocation node
  std::uint64_t ptr = 0;    ///< the address allocated or freed
  std::uint64_t bytes = 0;  ///< allocation nodes: the size
  /// Positions in GraphLaunch::work of the nearest records it runs after.
  std::vector<std::size_t> after;
  /// Positions of the nearest records that run after it, ascending.
  std::vector<std::size_t> before;
};

/// One graph launch as the device records show it.
struct GraphLaunch {
  /// The graph's number, from 1, in the order graphs were first launched; a
  /// graph is known by the work it ran (kinds, kernel names, bytes), since the
  /// trace does not record graph handles.
  std::size_t graph = 0;
  /// The stream it was launched on (CUPTI id): of the streams its work ran
  /// on, the one the app's own calls or stream records name (the others are
  /// the driver's, for the graph's branches), else that of its first work;
  /// empty when the records name none.
  std::optional<std::uint32_t> stream;
  /// Its device records (indices into RawTrace::work): the launch stream's
  /// first, then each other stream's in stream id order, each in start order;
  /// with the graph's structure known, in start order (which edges respect).
  std::vector<std::size_t> work;
  /// With the graph's structure known: per record, the positions in `work`
  /// of the records it waits for by the graph's edges (the nearest ones),
  /// all before its own, ascending.
  std::optional<std::vector<std::vector<std::size_t>>> after;
  /// Per record: the node it ran as the app made it; null where unknown,
  /// and for every record where `after` is empty or the graph has nodes that
  /// order it with outside work (event record or wait, external semaphore,
  /// memory operation, conditional nodes).
  std::vector<const GraphNodeRecord*> nodes;
  /// With the graph's structure and its nodes known: its memory nodes whose
  /// address the trace gives, in the graph record's node order.
  std::vector<GraphMemoryNode> memory;
};

/// The graph launches and stream-captured calls of a whole trace.
class GraphLaunches {
 public:
  /// Reads `trace.calls[order]` (host order) and the device records of each
  /// call, `work_by_call` (call corr -> indices into trace.work, syncs left
  /// out); `call_by_corr` (corr -> index into trace.calls) finds the calls
  /// that made graph nodes.
  GraphLaunches(const RawTrace& trace, const std::vector<std::size_t>& order,
                const std::map<std::uint64_t, std::vector<std::size_t>>& work_by_call,
                const std::unordered_map<std::uint64_t, std::size_t>& call_by_corr);

  /// The launch made by call `index` (into trace.calls); null for a call that
  /// is not a graph launch or whose graph ran no recorded work.
  [[nodiscard]] const GraphLaunch* launch(std::size_t index) const;
  /// Call `index` was made during stream capture: it added a node to a graph
  /// and ran nothing.
  [[nodiscard]] bool captured(std::size_t index) const { return captured_.contains(index); }
  /// Stream `id` ran only graph work and no call names it: one of the
  /// driver's streams for a graph's branches.
  [[nodiscard]] bool internal_stream(std::uint32_t id) const { return internal_.contains(id); }

 private:
  std::map<std::size_t, GraphLaunch> launches_;
  std::set<std::size_t> captured_;
  std::set<std::uint32_t> internal_;
};

}  // namespace overlap::trace::detail
