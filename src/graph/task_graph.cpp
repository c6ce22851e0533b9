// TaskGraph's builders: every node and edge is validated before it is
// stored, with messages that name the node, so a bad declaration leaves the
// graph as it was.
#include "overlap/graph/task_graph.hpp"

#include <fmt/format.h>

#include <utility>

#include "overlap/core/error.hpp"
#include "overlap/core/limits.hpp"

namespace overlap::graph {

namespace {

Access access_of(std::string buffer, std::uint64_t offset, std::optional<std::uint64_t> size,
                 access_mode mode) {
  Access a;
  a.buffer = std::move(buffer);
  a.offset = offset;
  a.size = size;
  a.mode = mode;
  return a;
}

Node node_of(std::string name, op_kind kind, std::vector<Access> accesses) {
  Node n;
  n.name = std::move(name);
  n.work.kind = kind;
  n.work.accesses = std::move(accesses);
  return n;
}

bool is_node_kind(op_kind kind) noexcept {
  return kind == op_kind::copy || kind == op_kind::memset || kind == op_kind::kernel ||
         kind == op_kind::host_function;
}

// The cost fields Program::append would refuse, checked here so the message
// names the node rather than an op of a Program that does not exist yet.
void validate_cost(const Node& node) {
  const Op& op = node.work;
  const bool needs_duration = op.kind == op_kind::kernel || op.kind == op_kind::host_function;
  if (needs_duration && !op.duration) {
    throw invalid_input(fmt::format("node '{}': duration: required for a {} (an estimate for the simulator)",
                                    node.name, to_string(op.kind)));
  }
  if (op.duration && !limits::is_time(*op.duration)) {
    throw invalid_input(fmt::format("node '{}': duration: {} is out of range (expected {})", node.name,
                                    *op.duration, limits::time_expected));
  }
  if (op.kind == op_kind::kernel && !(op.gpu_share > 0.0 && op.gpu_share <= 1.0)) {
    throw invalid_input(fmt::format("node '{}': gpu_share: {} is out of range (expected 0 < share <= 1)",
                                    node.name, op.gpu_share));
  }
  if (op.bytes > limits::max_bytes) {
    throw invalid_input(fmt::format("node '{}': bytes: {} is over the limit of {} bytes", node.name, op.bytes,
                                    limits::max_bytes));
  }
}

}  // namespace

Access reads(std::string buffer, std::uint64_t offset, std::optional<std::uint64_t> size) {
  return access_of(std::move(buffer), offset, size, access_mode::read);
}

Access writes(std::string buffer, std::uint64_t offset, std::optional<std::uint64_t> size) {
  return access_of(std::move(buffer), offset, size, access_mode::write);
}

Node kernel_node(std::string name, double duration, std::vector<Access> accesses, double gpu_share) {
  Node n = node_of(std::move(name), op_kind::kernel, std::move(accesses));
  n.work.duration = duration;
  n.work.gpu_share = gpu_share;
  return n;
}

Node copy_node(std::string name, copy_direction direction, std::uint64_t bytes, std::vector<Access> accesses,
               host_memory memory, std::optional<double> duration) {
  Node n = node_of(std::move(name), op_kind::copy, std::move(accesses));
  n.work.direction = direction;
  n.work.bytes = bytes;
  n.work.memory = memory;
  n.work.duration = duration;
  return n;
}

Node memset_node(std::string name, std::uint64_t bytes, std::vector<Access> accesses) {
  Node n = node_of(std::move(name), op_kind::memset, std::move(accesses));
  n.work.bytes = bytes;
  return n;
}

Node host_node(std::string name, double duration, std::vector<Access> accesses) {
  Node n = node_of(std::move(name), op_kind::host_function, std::move(accesses));
  n.work.duration = duration;
  return n;
}

std::uint32_t TaskGraph::add_buffer(std::string name, std::uint64_t bytes) {
  if (name.empty()) throw invalid_input("buffer: name must not be empty");
  if (buffer_index_.contains(name)) throw invalid_input(fmt::format("buffer '{}': declared twice", name));
  if (bytes > limits::max_bytes) {
    throw invalid_input(
        fmt::format("buffer '{}': bytes: {} is over the limit of {} bytes", name, bytes, limits::max_bytes));
  }
  limits::require_at_most(buffers_.size() + 1, limits::max_events, "buffers", "buffers",
                          "each is a segment map while dependencies are derived");
  const auto id = static_cast<std::uint32_t>(buffers_.size());
  buffers_.push_back({name, bytes});
  buffer_index_.emplace(std::move(name), id);
  return id;
}

node_id TaskGraph::add(Node node) {
  if (node.name.empty()) throw invalid_input(fmt::format("node {}: name must not be empty", nodes_.size()));
  const auto id = static_cast<node_id>(nodes_.size());
  // One hash of the name for the check and the index: it is entered first
  // and taken out again if the node is refused, as is any access resolved.
  grow_node_slots(nodes_.size() + 1);
  const std::size_t hash = std::hash<std::string_view>{}(node.name);
  const std::size_t slot = node_slot(node.name, hash);
  if (node_slots_[slot].id_plus_one != 0)
    throw invalid_input(fmt::format("node '{}': declared twice", node.name));
  const std::size_t first_access = access_buffers_.size();
  try {
    validate(node);
  } catch (...) {
    access_buffers_.resize(first_access);
    throw;
  }
  node_slots_[slot] = {id + 1, static_cast<std::uint32_t>(hash >> 32U)};
  node.work.label = node.name;
  node.work.stream.reset();
  node.work.event.reset();
  first_access_.push_back(first_access);
  nodes_.push_back(std::move(node));
  return id;
}

void TaskGraph::validate(Node& node) {
  if (!is_node_kind(node.work.kind)) {
    throw invalid_input(
        fmt::format("node '{}': kind: {} is not work (expected copy, memset, kernel or "
                    "host_function)",
                    node.name, to_string(node.work.kind)));
  }
  validate_cost(node);
  for (Access& a : node.work.accesses) {
    const auto buffer = find_buffer(a.buffer);
    if (!buffer) {
      throw invalid_input(fmt::format("node '{}': access: buffer '{}' is not declared", node.name, a.buffer));
    }
    const std::uint64_t size = buffers_[*buffer].bytes;
    const std::uint64_t length = a.size.value_or(a.offset <= size ? size - a.offset : 0);
    if (a.offset > size || length > size - a.offset) {
      throw invalid_input(fmt::format("node '{}': access: bytes [{}, {}) lie outside buffer '{}' of {} bytes",
                                      node.name, a.offset, a.offset + length, a.buffer, size));
    }
    // Explicit, because the checker knows no buffer sizes: "to the end" would be unbounded there.
    a.size = length;
    access_buffers_.push_back(*buffer);
  }
  limits::require_at_most(nodes_.size() + 1, limits::max_ops, "nodes", "nodes",
                          "each becomes an op of the graph's Program");
}

void TaskGraph::precede(node_id before, node_id after) {
  if (before >= nodes_.size() || after >= nodes_.size()) {
    throw invalid_input(fmt::format("edge {} -> {}: node {} is not declared ({} nodes)", before, after,
                                    before >= nodes_.size() ? before : after, nodes_.size()));
  }
  if (before == after) {
    throw invalid_input(fmt::format("edge: node '{}' cannot precede itself (a cycle)", nodes_[before].name));
  }
  edges_.emplace_back(before, after);
}

void TaskGraph::reserve(std::size_t nodes) {
  nodes_.reserve(nodes);
  grow_node_slots(nodes);
  first_access_.reserve(nodes);
}

std::optional<std::uint32_t> TaskGraph::find_buffer(std::string_view name) const noexcept {
  const auto it = buffer_index_.find(name);
  return it == buffer_index_.end() ? std::nullopt : std::optional<std::uint32_t>(it->second);
}

std::optional<node_id> TaskGraph::find_node(std::string_view name) const noexcept {
  if (node_slots_.empty()) return std::nullopt;
  const NameSlot& s = node_slots_[node_slot(name, std::hash<std::string_view>{}(name))];
  return s.id_plus_one == 0 ? std::nullopt : std::optional<node_id>(s.id_plus_one - 1);
}

std::size_t TaskGraph::node_slot(std::string_view name, std::size_t hash) const noexcept {
  const std::size_t mask = node_slots_.size() - 1;  // a power of two
  const auto tag = static_cast<std::uint32_t>(hash >> 32U);
  for (std::size_t i = hash & mask;; i = (i + 1) & mask) {
    const NameSlot& s = node_slots_[i];
    if (s.id_plus_one == 0 || (s.tag == tag && nodes_[s.id_plus_one - 1].name == name)) return i;
  }
}

void TaskGraph::grow_node_slots(std::size_t nodes) {
  // At most half full, so probes stay short and an empty slot always exists.
  if (nodes * 2 <= node_slots_.size()) return;
  std::size_t size = 64;
  while (size < nodes * 2) size *= 2;
  std::vector<NameSlot> old = std::exchange(node_slots_, std::vector<NameSlot>(size));
  for (const NameSlot& s : old) {
    if (s.id_plus_one == 0) continue;
    const std::string& name = nodes_[s.id_plus_one - 1].name;
    node_slots_[node_slot(name, std::hash<std::string_view>{}(name))] = s;
  }
}

}  // namespace overlap::graph
