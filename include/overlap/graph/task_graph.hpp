// overlap::graph::TaskGraph: work declared with the data it touches.
//
// A node is one unit of stream work (a copy, a memset, a kernel or a host
// function) described by the same Op the rest of the toolkit uses, plus the
// buffer regions it reads and writes (Op::accesses). Nodes are declared in
// program order: like CUDASTF's tasks, a node that touches bytes an earlier
// node touched depends on it (read after write, write after read, write after
// write); explicit edges add orderings the data does not show. schedule.hpp
// turns a TaskGraph into streams, events and a Program.
//
// CUDA-free: cuda::Graph (overlap/cuda/task_graph.hpp) keeps one of these
// beside the launch callables, and tests and benchmarks build them directly.
//
//   graph::TaskGraph g;
//   g.add_buffer("x", 4096);
//   g.add_buffer("y", 4096);
//   const auto up = g.add(graph::copy_node("upload", copy_direction::h2d, 4096, {graph::writes("x")}));
//   const auto k = g.add(graph::kernel_node("scale", 0.05, {graph::reads("x"), graph::writes("y")}));
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "overlap/core/program.hpp"

namespace overlap::graph {

struct Dependencies;  // schedule.hpp

/// Index of a node in TaskGraph::nodes(), which is also its declaration order.
using node_id = std::uint32_t;

/// A buffer the nodes touch: a name and its size in bytes.
struct Buffer {
  std::string name;         ///< unique, as accesses name it
  std::uint64_t bytes = 0;  ///< every access lies within [0, bytes)
};

/// One unit of work and the data it touches.
struct Node {
  /// Unique, non-empty: messages, the op's label and the event after it use it.
  std::string name;
  /// What the node does: kind is copy, memset, kernel or host_function, and
  /// the cost fields (duration, bytes, direction, memory, gpu_share) price it
  /// for the simulator; accesses are the regions it reads and writes. The
  /// stream, event and label are ignored: scheduling decides them.
  Op work;
};

/// A region of a buffer read by a node: `size` bytes from `offset`, or to the
/// end of the buffer when `size` is empty.
[[nodiscard]] Access reads(std::string buffer, std::uint64_t offset = 0,
                           std::optional<std::uint64_t> size = std::nullopt);
/// A region of a buffer written (or read and written) by a node.
[[nodiscard]] Access writes(std::string buffer, std::uint64_t offset = 0,
                            std::optional<std::uint64_t> size = std::nullopt);

/// A kernel node of `duration` (the program's time unit) occupying `gpu_share` of the GPU.
[[nodiscard]] Node kernel_node(std::string name, double duration, std::vector<Access> accesses,
                               double gpu_share = 1.0);
/// A copy node of `bytes` in `direction` (priced by the device model's curve
/// unless `duration` is given).
[[nodiscard]] Node copy_node(std::string name, copy_direction direction, std::uint64_t bytes,
                             std::vector<Access> accesses, host_memory memory = host_memory::pinned,
                             std::optional<double> duration = std::nullopt);
/// A memset node of `bytes`.
[[nodiscard]] Node memset_node(std::string name, std::uint64_t bytes, std::vector<Access> accesses);
/// A host function node of `duration`, run in stream order.
[[nodiscard]] Node host_node(std::string name, double duration, std::vector<Access> accesses);

/// Nodes in declaration order, the buffers they touch, and explicit edges.
///
/// Every builder validates at once and throws overlap::invalid_input naming
/// the node (or buffer) and the bad field, leaving the graph as it was: a
/// duplicate or empty name, a kind that is not work, an access to an
/// undeclared buffer or outside its buffer, an edge to an unknown node.
/// Cycles (possible only through explicit edges) are found by
/// derive_dependencies and schedule, which name a node on the cycle.
class TaskGraph {
 public:
  /// Declares a buffer of `bytes` bytes and returns its index.
  std::uint32_t add_buffer(std::string name, std::uint64_t bytes);
  /// Appends a node after validating it and returns its id.
  node_id add(Node node);
  /// Orders `before` ahead of `after` whatever their data (an explicit edge).
  void precede(node_id before, node_id after);
  /// Room for `nodes` nodes, for builders that know their size.
  void reserve(std::size_t nodes);

  /// Every node, in declaration order (indexed by node_id).
  [[nodiscard]] const std::vector<Node>& nodes() const noexcept { return nodes_; }
  /// Every buffer, in declaration order (indexed as add_buffer returned).
  [[nodiscard]] const std::vector<Buffer>& buffers() const noexcept { return buffers_; }
  /// Explicit edges as (before, after), in the order they were added.
  [[nodiscard]] const std::vector<std::pair<node_id, node_id>>& edges() const noexcept { return edges_; }
  /// The buffer named `name`, if declared.
  [[nodiscard]] std::optional<std::uint32_t> find_buffer(std::string_view name) const noexcept;
  /// The node named `name`, if declared.
  [[nodiscard]] std::optional<node_id> find_node(std::string_view name) const noexcept;
  /// The number of nodes.
  [[nodiscard]] std::size_t size() const noexcept { return nodes_.size(); }
  /// The buffer index of access `access` of node `node` (resolved once, when the node was added).
  [[nodiscard]] std::uint32_t buffer_of(node_id node, std::size_t access) const noexcept {
    return resolved_[first_access_[node] + access].buffer;
  }

 private:
  // schedule.hpp's: it walks resolved_ rather than the nodes.
  friend Dependencies derive_dependencies(const TaskGraph& graph);

  // Checks `node` (making its access sizes explicit) and appends its
  // accesses to resolved_; throws invalid_input naming it.
  void validate(Node& node);

  // An access as derive_dependencies needs it, resolved when its node was
  // added: 24 bytes, where walking the nodes' Access values (and the nodes
  // around them, ~200 bytes each) took a sixth of the time to derive the
  // dependencies of 100,000 nodes.
  struct ResolvedAccess {
    std::uint64_t begin = 0;  // first byte
    std::uint64_t end = 0;    // one past the last byte
    std::uint32_t buffer = 0;
    access_mode mode = access_mode::read;
  };

  // Names: open addressing over indices into nodes_ or buffers_ (a slot
  // holds index + 1, 0 when empty), names compared there. A node-based map
  // allocated a node and a copy of every name: a third of the time to
  // declare 100,000 nodes.
  struct NameSlot {
    std::uint32_t id_plus_one = 0;
    std::uint32_t tag = 0;  // high bits of the name's hash: most mismatches never touch the names
  };
  // The slot of `slots` holding `name` (among `named`'s names), or the empty
  // slot where it would go.
  template <class Named>
  [[nodiscard]] static std::size_t slot_of(const std::vector<NameSlot>& slots,
                                           const std::vector<Named>& named, std::string_view name,
                                           std::size_t hash) noexcept;
  // Makes room in `slots` for `count` names of `named`, rehashing them.
  template <class Named>
  static void grow_slots(std::vector<NameSlot>& slots, const std::vector<Named>& named, std::size_t count);

  std::vector<Node> nodes_;
  std::vector<Buffer> buffers_;
  std::vector<std::pair<node_id, node_id>> edges_;
  std::vector<ResolvedAccess> resolved_;   // every node's accesses, in order
  std::vector<std::size_t> first_access_;  // per node, its first entry there
  std::vector<NameSlot> node_slots_;
  std::vector<NameSlot> buffer_slots_;
};

}  // namespace overlap::graph
